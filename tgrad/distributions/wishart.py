"""``Wishart(df, covariance_matrix | precision_matrix | scale_tril)`` (PyTorch's): the law
of X = sum_{k<=nu} z_k z_k^T, z_k ~ N(0, Sigma), over p x p positive-definite matrices, for
real df nu > p - 1 (Sigma = L L^T; L from the Cholesky factorisation as for
MultivariateNormal).

    log p(X) = (nu - p - 1) / 2 log det X - tr(Sigma^{-1} X) / 2 - nu p log(2) / 2
               - nu sum log diag(L) - mvlgamma(nu / 2, p)
    mean nu Sigma; mode (nu - p - 1) Sigma (NaN for nu <= p + 1); variance
    nu (Sigma_ij^2 + Sigma_ii Sigma_jj)
    H = (p + 1) (p log(2) / 2 + sum log diag(L)) + mvlgamma(nu / 2, p)
        - (nu - p - 1) / 2 mvdigamma(nu / 2, p) + nu p / 2
    rsample: Bartlett's decomposition, (L A)(L A)^T with A lower triangular, A_ii =
    sqrt(Chi2(nu - i)) (reparameterised gamma draws), A_ij ~ N(0, 1) below the diagonal;
    a sample that is not numerically positive-definite is redrawn (up to
    ``max_try_correction`` times, as PyTorch)
    natural parameters (-Sigma^{-1} / 2, (nu - p - 1) / 2) (an ExponentialFamily)
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence

import numpy as np

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.gamma import Chi2
from tgrad.distributions.multivariate_normal import scale_tril_of
from tgrad.distributions.utils import _finfo, lazy_property
from tgrad.linalg import cholesky_solve, slogdet
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import arange, eye, randn, tensor
from tgrad.ops.matmul import matmul
from tgrad.ops.special import digamma, mvlgamma
from tgrad.tensor import Tensor

__all__ = ["Wishart"]

_LOG_2 = math.log(2.0)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma sum_{i<p} digamma(x - i / 2) (the derivative of mvlgamma)."""
    shifts = arange(p, dtype=x.dtype, device=x.device) / 2
    return digamma(x.unsqueeze(-1) - shifts).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution with ``df`` nu > p - 1 (a float or a tensor, broadcast with
    the matrix's batch dims) and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (..., p, p); event shape (p, p)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> dict:
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Tensor | float, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (covariance_matrix is not None) + (scale_tril is not None) + (
                precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = tensor(float(df), dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(np.broadcast_shapes(tuple(param.shape[:-2]),
                                                    tuple(df.shape)))
            self.df = df.expand(tuple(batch_shape))
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{p - 1}.")
        name = "scale_tril" if scale_tril is not None else (
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        self.__dict__[name] = param.expand(*batch_shape, -1, -1)
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._unbroadcasted_scale_tril = scale_tril_of(scale_tril, covariance_matrix,
                                                       precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(self.df, batch_shape)

    def _bartlett_chi2(self, df: Tensor, batch_shape: tuple) -> Chi2:
        """Chi2(nu - i) for the diagonal of Bartlett's factor, i = 0..p-1."""
        L = self._unbroadcasted_scale_tril  # noqa: N806
        shifts = arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(df.unsqueeze(-1) - shifts.expand(*batch_shape, -1), validate_args=False)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Wishart:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        cov_shape = batch_shape + self._event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(tuple(cov_shape))
        new.df = self.df.expand(tuple(batch_shape))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(tuple(cov_shape))
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2(new.df, batch_shape)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return matmul(L, L.mT).expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        identity = eye(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return cholesky_solve(identity, L).expand(*self._batch_shape, *self._event_shape)

    def _df_matrix(self, df: Tensor) -> Tensor:
        return df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self._event_shape[-1] - 1
        factor = ew.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        V = self.covariance_matrix  # noqa: N806
        diag = V.diagonal(0, -2, -1)
        return self._df_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: tuple) -> Tensor:
        p = self._event_shape[-1]
        tiny = float(_finfo(self.df.dtype).eps)
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=tiny)
        off = randn(tuple(sample_shape) + tuple(self._batch_shape) + (p, p),
                    dtype=diag.dtype, device=diag.device).tril(-1)
        chol = matmul(self._unbroadcasted_scale_tril, diag.diag_embed() + off)
        return matmul(chol, chol.mT)

    def rsample(self, sample_shape: Sequence[int] = (),
                max_try_correction: int | None = None) -> Tensor:
        """Bartlett draws; where one is not numerically positive-definite it is redrawn
        (``max_try_correction`` times at most, default 10), with a warning."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = ~self.support.check(sample.detach())
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = self._bartlett_sampling(sample_shape)
                sample = ew.where(singular.unsqueeze(-1).unsqueeze(-1), redraw, sample)
                singular = ~self.support.check(sample.detach())
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return (-nu * (p * _LOG_2 / 2 + ew.log(L.diagonal(0, -2, -1)).sum(-1))
                - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * slogdet(value).logabsdet
                - cholesky_solve(value, L).diagonal(0, -2, -1).sum(-1) / 2)

    def entropy(self) -> Tensor:
        nu, p = self.df, self._event_shape[-1]
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return ((p + 1) * (p * _LOG_2 / 2 + ew.log(L.diagonal(0, -2, -1)).sum(-1))
                + mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-slogdet(-2 * x).logabsdet + _LOG_2 * p) \
            + mvlgamma(y + (p + 1) / 2, p)
