"""Scalar families built on uniform and normal draws, as torch.distributions has them:
``Cauchy``, ``HalfCauchy``, ``HalfNormal``, ``LogNormal``, ``Gumbel``, ``Pareto``,
``Weibull`` (reparameterised through their inverse cdfs or a transformed normal) and
``Geometric`` (discrete).

    Cauchy(loc, scale):  log p = -log(pi scale) - log1p(z^2), z = (x - loc) / scale;
                         cdf = atan(z) / pi + 1/2; icdf(u) = loc + scale tan(pi (u - 1/2));
                         H = log(4 pi scale); mean NaN, variance inf, mode loc
    HalfCauchy(scale):   |Cauchy(0, scale)|: log p = Cauchy's + log 2 on x >= 0 (-inf
                         below); cdf = 2 F - 1; H = Cauchy's - log 2; mean, variance inf
    HalfNormal(scale):   |Normal(0, scale)|: likewise; mean scale sqrt(2 / pi), variance
                         scale^2 (1 - 2 / pi)
    LogNormal(loc, scale): exp(Normal(loc, scale)): log p = Normal's(log x) - log x;
                         mean exp(loc + scale^2 / 2), mode exp(loc - scale^2),
                         variance (exp(scale^2) - 1) exp(2 loc + scale^2), H = Normal's + loc
    Gumbel(loc, scale):  log p = -(z + exp(-z)) - log scale; cdf = exp(-exp(-z));
                         mean loc + scale gamma_e, variance (pi scale)^2 / 6,
                         H = log scale + 1 + gamma_e
    Geometric(probs | logits): failures before the first success, k = 0, 1, ...:
                         log p = k log1p(-p) + log p; mean 1/p - 1, variance (1/p - 1)/p;
                         H = BCEWithLogits(logits, p) / p; sample floor(log u / log1p(-p))
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution, _LocScale
from tgrad.distributions.normal import Normal
from tgrad.distributions.utils import (
    _finfo,
    binary_logits,
    binary_probs,
    broadcast_all,
    set_probs_or_logits,
)
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import as_tensor, empty, full
from tgrad.ops.special import lgamma
from tgrad.tensor import Tensor

__all__ = ["Cauchy", "HalfCauchy", "HalfNormal", "LogNormal", "Gumbel", "Geometric", "Pareto",
           "Weibull"]

EULER_GAMMA = 0.57721566490153286060


def _uniform(shape: tuple, like: Tensor, low: float, high: float) -> Tensor:
    return empty(shape, dtype=like.dtype, device=like.device).uniform_(low, high)


def _open_unit(shape: tuple, like: Tensor) -> Tensor:
    """Uniform draws in (tiny, 1 - eps/2], away from 0 and 1 (finite logs)."""
    info = _finfo(like.dtype)
    return _uniform(shape, like, float(info.tiny), 1.0 - float(info.eps) / 2)


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution: median ``loc``, half width ``scale`` > 0."""

    mode = _LocScale.mode

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.loc.dtype,
                    device=self.loc.device)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.loc.dtype,
                    device=self.loc.device)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = _open_unit(self._extended_shape(sample_shape), self.loc)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - ew.log(self.scale) - ew.log1p(z * z)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ew.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return ew.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + ew.log(self.scale)


class _Half(Distribution):
    """|base| for a base symmetric about 0 with parameter ``scale`` (HalfCauchy,
    HalfNormal): the density doubles on x >= 0."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base_cls: type

    def __init__(self, scale: Tensor | float, validate_args: bool | None = None) -> None:
        (self.scale,) = broadcast_all(scale)
        super().__init__(tuple(self.scale.shape), validate_args=validate_args)

    @property
    def base_dist(self):
        return self._base_cls(0.0 * self.scale, self.scale, validate_args=False)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ew.where(value >= 0, lp, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - math.log(2)

    @property
    def mode(self) -> Tensor:
        return 0.0 * self.scale


class HalfCauchy(_Half):
    """|Cauchy(0, scale)|."""

    _base_cls = Cauchy

    def log_prob(self, value: Tensor) -> Tensor:
        # PyTorch's HalfCauchy (not HalfNormal) casts the value to scale's dtype.
        if self._validate_args:
            self._validate_sample(value)
        value = as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return ew.where(value >= 0, lp, -math.inf)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                    device=self.scale.device)

    @property
    def variance(self) -> Tensor:
        return self.mean


class HalfNormal(_Half):
    """|Normal(0, scale)|."""

    _base_cls = Normal

    @property
    def mean(self) -> Tensor:
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2) * (1 - 2 / math.pi)


class LogNormal(_LocScale):
    """exp(X) for X ~ Normal(loc, scale)."""

    support = constraints.positive

    @property
    def base_dist(self) -> Normal:
        return Normal(self.loc, self.scale, validate_args=False)

    @property
    def mean(self) -> Tensor:
        return ew.exp(self.loc + self.scale.pow(2) / 2)

    @property
    def mode(self) -> Tensor:
        return ew.exp(self.loc - self.scale.pow(2))

    @property
    def variance(self) -> Tensor:
        s2 = self.scale.pow(2)
        return ew.expm1(s2) * ew.exp(2 * self.loc + s2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return ew.exp(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        log_x = ew.log(value)
        return self.base_dist.log_prob(log_x) - log_x

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:  # x >= 0: cdf(0) = 0 (PyTorch's: Normal's cdf at log 0)
            self._validate_sample(value, constraints.nonnegative)
        return self.base_dist.cdf(ew.log(value))

    def icdf(self, value: Tensor) -> Tensor:
        return ew.exp(self.base_dist.icdf(value))

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class Gumbel(_LocScale):
    """The Gumbel (type-I extreme value) distribution: location ``loc``, ``scale`` > 0."""

    mode = _LocScale.mode

    @property
    def mean(self) -> Tensor:
        return self.loc + self.scale * EULER_GAMMA

    @property
    def stddev(self) -> Tensor:
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.icdf(_open_unit(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -(z + ew.exp(-z)) - ew.log(self.scale)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ew.exp(-ew.exp(-(value - self.loc) / self.scale))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc - self.scale * ew.log(-ew.log(value))

    def entropy(self) -> Tensor:
        return ew.log(self.scale) + (1 + EULER_GAMMA)


class Geometric(Distribution):
    """The number of failures before the first success of Bernoulli(``probs``) trials
    (``probs`` in (0, 1] or ``logits``, exactly one)."""

    arg_constraints = {"probs": constraints.interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        param = set_probs_or_logits(self, probs, logits)
        super().__init__(tuple(param.shape), validate_args=validate_args)
        if self._validate_args and probs is not None:
            valid = self.probs > 0
            if not bool(valid.all()):  # PyTorch's text, listing the invalid values only
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of "
                                 f"shape {tuple(self.probs.shape)}) of distribution "
                                 f"{self!r} to be positive but found invalid values:\n"
                                 f"{self.probs.detach()[~valid]}")

    logits = binary_logits
    probs = binary_probs

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return 0.0 * self.probs

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = self.probs.detach()
        u = _uniform(shape, p, float(_finfo(p.dtype).tiny), 1.0)
        return ew.floor(ew.log(u) / ew.log1p(-p))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # k log1p(-p) with 0 log 0 = 0 (p = 1, k = 0): p replaced by 0 there inside log1p
        # (PyTorch's), so neither the value nor the gradient (0 * inf) is NaN
        probs = ew.where((probs == 1) & (value == 0), 0.0, probs)
        return value * ew.log1p(-probs) + ew.log(self.probs)

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


class Pareto(Distribution):
    """The Pareto (type I) distribution: minimum ``scale`` > 0, tail index ``alpha`` > 0.

    log p = log alpha + alpha log scale - (alpha + 1) log x on x >= scale;
    cdf = 1 - (scale / x)^alpha; rsample = scale u^(-1/alpha);
    mean alpha scale / (alpha - 1) (inf for alpha <= 1), variance
    scale^2 alpha / ((alpha - 1)^2 (alpha - 2)) (inf for alpha <= 2);
    H = log(scale / alpha) + 1 + 1 / alpha."""

    arg_constraints = {"scale": constraints.positive, "alpha": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(tuple(self.scale.shape), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        a = self.alpha.clamp(min=1)
        return ew.where(self.alpha > 1, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        a = self.alpha.clamp(min=2)
        return ew.where(self.alpha > 2, self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2)),
                        math.inf)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = _open_unit(self._extended_shape(sample_shape), self.scale)
        return self.scale * ew.exp(-ew.log(u) / self.alpha)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return (ew.log(self.alpha) + self.alpha * ew.log(self.scale)
                - (self.alpha + 1) * ew.log(value))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ew.exp(self.alpha * (ew.log(self.scale) - ew.log(value)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.scale * ew.exp(-ew.log1p(-value) / self.alpha)

    def entropy(self) -> Tensor:
        return ew.log(self.scale / self.alpha) + 1 + 1 / self.alpha


class Weibull(Distribution):
    """The Weibull distribution: ``scale`` lambda > 0, ``concentration`` k > 0.

    log p = log(k / lambda) + (k - 1) log(x / lambda) - (x / lambda)^k on x >= 0;
    cdf = 1 - exp(-(x / lambda)^k); rsample = lambda (-log u)^(1/k);
    mean lambda Gamma(1 + 1/k); variance lambda^2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)^2);
    mode lambda ((k - 1) / k)^(1/k) for k > 1, else 0;
    H = gamma_e (1 - 1/k) + log(lambda / k) + 1."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        super().__init__(tuple(self.scale.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.scale * ew.exp(lgamma(1 + 1 / self.concentration))

    @property
    def mode(self) -> Tensor:
        k = self.concentration
        return self.scale * ew.relu((k - 1) / k).pow(1 / k)

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return self.scale.pow(2) * (ew.exp(lgamma(1 + 2 / k))
                                    - ew.exp(2 * lgamma(1 + 1 / k)))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = _open_unit(self._extended_shape(sample_shape), self.scale)
        return self.scale * (-ew.log(u)).pow(1 / self.concentration)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k, lam = self.concentration, self.scale
        z = value / lam
        return ew.log(k / lam) + (k - 1) * ew.log(z) - z.pow(k)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:  # x >= 0: cdf(0) = 0 (PyTorch's: Exponential's cdf at 0)
            self._validate_sample(value, constraints.nonnegative)
        return -ew.expm1(-(value / self.scale).pow(self.concentration))

    def icdf(self, value: Tensor) -> Tensor:
        return self.scale * (-ew.log1p(-value)).pow(1 / self.concentration)

    def entropy(self) -> Tensor:
        k = self.concentration
        return EULER_GAMMA * (1 - 1 / k) + ew.log(self.scale / k) + 1
