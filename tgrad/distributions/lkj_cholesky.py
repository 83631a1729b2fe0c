"""``LKJCholesky(dim, concentration)`` (PyTorch's): the lower Cholesky factor L of a
dim x dim correlation matrix R = L L^T drawn from the LKJ distribution, p(R) ∝
det(R)^(eta - 1), eta = ``concentration`` > 0 (eta = 1: uniform over correlation matrices).

    log p(L) = sum_{i=2..d} (2 (eta - 1) + d - i) log L_ii - log Z,
    log Z = (d - 1) log(pi) / 2 + mvlgamma(eta + (d - 2) / 2, d - 1)
            - (d - 1) lgamma(eta + (d - 1) / 2)
    (a density of the strictly lower entries of L; Lewandowski, Kurowicka and Joe 2009)

Sampling is the onion method (Lewandowski, Kurowicka and Joe 2009, section 3.2): row i
is sqrt(y_i) u_i (u_i uniform on the unit sphere in its first i coordinates, y_i ~
Beta(i / 2, eta + (d - 2) / 2 - (i - 1) / 2)), with the diagonal entry sqrt(1 - |row|^2).
There is no rsample, mean or entropy (as PyTorch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.autograd.grad_mode import no_grad
from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.gamma import Beta
from tgrad.distributions.utils import _finfo, broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import arange, randn
from tgrad.ops.shape import cat
from tgrad.ops.special import lgamma, mvlgamma
from tgrad.tensor import Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution of Cholesky factors of dim x dim correlation matrices, with
    ``concentration`` eta > 0 (batch shape: its shape; event shape (dim, dim))."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | float = 1.0,
                 validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the onion method's y_i ~ Beta(i / 2, eta + (d - 2) / 2 - (i - 1) / 2) for rows
        # i = 1..d-1 (row 0 gets a dummy Beta(1/2, .), unused). PyTorch 2.13 takes
        # i - 1/2 for the first concentration, which only agrees at i = 1: its draws of
        # rows 2, 3, ... do not follow its own log_prob (e.g. Var r_ij = 0.186 instead of
        # 1 / (2 eta + d - 1) = 1/7 at d = 4, eta = 2)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = arange(self.dim - 1, dtype=self.concentration.dtype,
                        device=self.concentration.device)
        offset = cat([offset.new_zeros((1,)), offset])  # 0, 0, 1, ..., d - 2
        rows = cat([offset.new_ones((1,)), offset[1:] + 1])  # 1, 1, 2, ..., d - 1
        self._beta = Beta(0.5 * rows, marginal_conc.unsqueeze(-1) - 0.5 * offset,
                          validate_args=False)
        super().__init__(tuple(self.concentration.shape), (dim, dim),
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> LKJCholesky:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = randn(self._extended_shape(sample_shape), dtype=y.dtype,
                             device=y.device).tril(-1)
            norm = u_normal.pow(2).sum(-1, keepdim=True).sqrt()
            # row 0 is all zeros (tril(-1)): it stays zero instead of 0 / 0
            u_hypersphere = u_normal / ew.where(norm > 0, norm, 1.0)
            w = y.sqrt() * u_hypersphere
            tiny = float(_finfo(w.dtype).tiny)
            diag = (1 - w.pow(2).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(0, -1, -2)[..., 1:]
        order = arange(2, self.dim + 1, dtype=self.concentration.dtype,
                       device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * ew.log(diag_elems)).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) \
            - lgamma(alpha) * dm1
        return unnormalized - normalize
