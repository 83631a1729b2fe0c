"""Laplace(loc, scale): the double-exponential distribution."""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.distributions.distribution import _LocScale
from tgrad.distributions.utils import _finfo
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import empty
from tgrad.tensor import Tensor

__all__ = ["Laplace"]


class Laplace(_LocScale):
    """The Laplace distribution with location ``loc`` and ``scale`` b > 0 (tensors or
    floats, broadcast together).

    log p(x) = -log(2 b) - |x - loc| / b; H = 1 + log(2 b); mean loc; variance 2 b^2;
    cdf(x) = 1/2 - sign(x - loc) expm1(-|x - loc| / b) / 2;
    icdf(u) = loc - b sign(u - 1/2) log(1 - 2 |u - 1/2|);
    rsample = loc - b sign(u) log(1 - |u|) with u ~ U[eps - 1, 1).
    """

    mean = _LocScale.mean
    mode = _LocScale.mode

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return (2 ** 0.5) * self.scale

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = float(_finfo(self.loc.dtype).eps)
        u = empty(shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * ew.sign(u) * ew.log1p(-ew.abs(u))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -ew.log(2 * self.scale) - ew.abs(value - self.loc) / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * ew.sign(d) * ew.expm1(-ew.abs(d) / self.scale)

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * ew.sign(term) * ew.log1p(-2 * ew.abs(term))

    def entropy(self) -> Tensor:
        return 1 + ew.log(2 * self.scale)
