# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: W, D, C, K)
"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): N(loc, Sigma) over vectors (event
(n,)) with Sigma = W W^T + diag(D), W = ``cov_factor`` (..., n, m), D = ``cov_diag``
(..., n) > 0. Only the m x m capacitance matrix C = I + W^T D^{-1} W is factorised
(C = L_C L_C^T), so the costs are O(n m^2):

    log det Sigma = 2 sum log diag(L_C) + sum log D        (matrix determinant lemma)
    x^T Sigma^{-1} x = sum x^2 / D - |L_C^{-1} W^T D^{-1} x|^2   (Woodbury)
    log p(x) = -(n log(2 pi) + log det Sigma + (x - loc)^T Sigma^{-1} (x - loc)) / 2
    H = (n (1 + log(2 pi)) + log det Sigma) / 2;  rsample = loc + W z_m + sqrt(D) z_n
    precision = diag(1 / D) - A^T A, A = L_C^{-1} W^T D^{-1};  scale_tril = sqrt(D)
    cholesky(I + D^{-1/2} W W^T D^{-1/2}) (n x n, on first use)

KL pairs with itself and MultivariateNormal (PyTorch's, in kl.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution, _LocScale
from tgrad.distributions.multivariate_normal import _batch_mahalanobis
from tgrad.distributions.utils import lazy_property
from tgrad.linalg import cholesky, solve_triangular
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import eye, randn
from tgrad.ops.matmul import matmul
from tgrad.ops.pointwise_extras import broadcast_tensors
from tgrad.tensor import Tensor

__all__ = ["LowRankMultivariateNormal"]


def _batch_mv(M: Tensor, v: Tensor) -> Tensor:
    return matmul(M, v.unsqueeze(-1)).squeeze(-1)


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The Cholesky factor of C = I + W^T D^{-1} W (..., m, m)."""
    m = W.shape[-1]
    K = matmul(W.mT / D.unsqueeze(-2), W)
    return cholesky(K + eye(m, dtype=W.dtype, device=W.device))


def _batch_lowrank_logdet(W: Tensor, D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """log det(W W^T + diag D) = log det C + sum log D."""
    return 2 * ew.log(capacitance_tril.diagonal(0, -2, -1)).sum(-1) + ew.log(D).sum(-1)


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor,
                               capacitance_tril: Tensor) -> Tensor:
    """x^T (W W^T + diag D)^{-1} x by Woodbury: sum x^2 / D - |L_C^{-1} W^T D^{-1} x|^2."""
    Wt_Dinv_x = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal with covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``: ``loc`` (..., n), ``cov_factor`` (..., n, m), ``cov_diag`` (..., n)
    positive; batch_shape is their broadcast leading dims, event_shape (n,)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag "
                             f"{tuple(cov_diag.shape)}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        # validated before the capacitance's Cholesky (a bad cov_diag gets the
        # constraint's error, not a factorisation failure)
        super().__init__(tuple(self.loc.shape[:-1]), event_shape, validate_args=validate_args)
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def _expand_extra(self, new: Distribution) -> None:
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril

    mean = _LocScale.mean  # self.loc
    mode = _LocScale.mode

    @lazy_property
    def variance(self) -> Tensor:
        """diag(Sigma) = sum_j W_ij^2 + D_i."""
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of Sigma: sqrt(D) cholesky(I + D^{-1/2} W W^T D^{-1/2})."""
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / d_sqrt
        K = matmul(Dinvsqrt_W, Dinvsqrt_W.mT) + eye(n, dtype=d_sqrt.dtype,
                                                    device=d_sqrt.device)
        return (d_sqrt * cholesky(K)).expand(*self._batch_shape, n, n)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """W W^T + diag(D)."""
        W = self._unbroadcasted_cov_factor
        n = self._event_shape[0]
        return (matmul(W, W.mT) + self._unbroadcasted_cov_diag.diag_embed()).expand(
            *self._batch_shape, n, n)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """diag(1 / D) - A^T A, A = L_C^{-1} W^T D^{-1} (Woodbury)."""
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        n = self._event_shape[0]
        return (self._unbroadcasted_cov_diag.reciprocal().diag_embed()
                - matmul(A.mT, A)).expand(*self._batch_shape, n, n)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        w_shape = shape[:-1] + tuple(self.cov_factor.shape[-1:])
        eps_w = randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_w)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def _log_det(self) -> Tensor:
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                     self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, value - self.loc,
                                       self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self) -> Tensor:
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(tuple(self._batch_shape)) if self._batch_shape else H
