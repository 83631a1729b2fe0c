# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, L, X)
"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril): the Gaussian
N(loc, Sigma) over vectors (event_shape (n,)), parameterised through the lower Cholesky
factor L of Sigma = L L^T (``tgrad.linalg.cholesky`` of the covariance; of the precision
P through PyTorch's flip trick: P's reversed Cholesky factor inverted by a triangular
solve)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution, _LocScale
from tgrad.distributions.utils import lazy_property
from tgrad.linalg import cholesky, solve_triangular
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import eye, randn
from tgrad.ops.matmul import matmul
from tgrad.tensor import Tensor

__all__ = ["MultivariateNormal"]


def _batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """|L^{-1} x|^2 over the last dim, batch dims of L (..., n, n) and x (..., n)
    broadcast: one triangular solve."""
    y = solve_triangular(L, x.unsqueeze(-1), upper=False).squeeze(-1)
    return y.pow(2).sum(-1)


def _half_log_det(L: Tensor) -> Tensor:
    return ew.log(L.diagonal(0, -2, -1)).sum(-1)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """L with L L^T = P^{-1}: Lf = cholesky(flip(P)), L^{-1} = flip(Lf)^T (lower), then
    L = solve_triangular(L^{-1}, I) (PyTorch's construction)."""
    Lf = cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    Id = eye(P.shape[-1], dtype=P.dtype, device=P.device)
    return solve_triangular(L_inv, Id, upper=False)


def scale_tril_of(scale_tril, covariance_matrix, precision_matrix) -> Tensor:
    """The lower Cholesky factor L (L L^T = covariance) from whichever one matrix is given
    (unbroadcast), as PyTorch's MultivariateNormal and Wishart build it."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return cholesky(covariance_matrix)
    return _precision_to_scale_tril(precision_matrix)


class MultivariateNormal(Distribution):
    """The multivariate normal with mean ``loc`` (..., n) and exactly one of
    ``covariance_matrix``, ``precision_matrix`` (positive-definite) or ``scale_tril``
    (lower triangular with a positive diagonal), each (..., n, n); batch_shape is the
    broadcast of loc's and the matrix's leading dims, event_shape (n,).

    log p(x) = -(n log(2 pi) + |L^{-1}(x - loc)|^2) / 2 - sum log diag(L);
    H = n (1 + log(2 pi)) / 2 + sum log diag(L);  rsample = loc + L z, z ~ N(0, I).
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        if scale_tril is not None:
            if scale_tril.dim() < 2:
                raise ValueError("scale_tril matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = scale_tril, "scale_tril"
        elif covariance_matrix is not None:
            if covariance_matrix.dim() < 2:
                raise ValueError("covariance_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = covariance_matrix, "covariance_matrix"
        else:
            if precision_matrix.dim() < 2:
                raise ValueError("precision_matrix must be at least two-dimensional, with "
                                 "optional leading batch dimensions")
            matrix, name = precision_matrix, "precision_matrix"
        batch_shape = tuple(np.broadcast_shapes(tuple(matrix.shape[:-2]),
                                                tuple(loc.shape[:-1])))
        self.__dict__[name] = matrix.expand(*batch_shape, -1, -1)
        self.loc = loc.expand(*batch_shape, -1)
        event_shape = tuple(self.loc.shape[-1:])
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_of(scale_tril, covariance_matrix,
                                                       precision_matrix)

    def _expand_extra(self, new: Distribution) -> None:
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(
            *self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return matmul(L, L.mT).expand(*self._batch_shape, *self._event_shape,
                                      *self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        Id = eye(L.shape[-1], dtype=L.dtype, device=L.device)
        L_inv = solve_triangular(L, Id, upper=False)
        return matmul(L_inv.mT, L_inv).expand(*self._batch_shape, *self._event_shape,
                                              *self._event_shape)

    mean = _LocScale.mean  # self.loc, as for Normal and Laplace
    mode = _LocScale.mode

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            *self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + matmul(self._unbroadcasted_scale_tril,
                                 eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self) -> Tensor:
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H.expand(tuple(self._batch_shape)) if self._batch_shape else H
