"""Families that torch.distributions writes as ``TransformedDistribution`` compositions
(and so does tgrad, to share their sampling, log_prob and cdf):

    InverseGamma(a, b):   1 / Gamma(a, b) (PowerTransform(-1)); log p = a log b - lgamma(a)
                          - (a + 1) log x - b / x; mean b / (a - 1) (inf for a <= 1), mode
                          b / (a + 1), variance b^2 / ((a - 1)^2 (a - 2)) (inf for a <= 2);
                          H = a + log b + lgamma(a) - (1 + a) digamma(a)
    Kumaraswamy(a, b):    (1 - u^(1/b))^(1/a), u ~ Uniform(0, 1); log p = log(a b)
                          + (a - 1) log x + (b - 1) log(1 - x^a) on [0, 1]; cdf 1 - (1 -
                          x^a)^b; E[x^n] = b B(1 + n / a, b); mode ((a - 1) / (a b - 1))^(1/a)
                          (NaN for a < 1 or b < 1); H = (1 - 1/b) + (1 - 1/a) (digamma(b +
                          1) + gamma_e) - log(a b)
    LogisticNormal(loc, scale):  StickBreakingTransform of Normal(loc, scale) draws (K
                          of them, event (K,)) onto the simplex (event (K + 1,)); no closed
                          moments or entropy (as PyTorch)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.gamma import Gamma
from tgrad.distributions.normal import Normal
from tgrad.distributions.transformed_distribution import TransformedDistribution
from tgrad.distributions.transforms import (
    AffineTransform,
    PowerTransform,
    StickBreakingTransform,
)
from tgrad.distributions.uniform import Uniform
from tgrad.distributions.utils import broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import full_like
from tgrad.ops.special import digamma, lgamma
from tgrad.tensor import Tensor

__all__ = ["InverseGamma", "Kumaraswamy", "LogisticNormal"]

_EULER_GAMMA = 0.57721566490153286061


def _new_instance(dist, _instance):
    return type(dist).__new__(type(dist)) if _instance is None else _instance


class InverseGamma(TransformedDistribution):
    """The inverse gamma distribution: 1 / X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Tensor | float, rate: Tensor | float,
                 validate_args: bool | None = None) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base_dist, PowerTransform(-1.0), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> InverseGamma:
        return super().expand(batch_shape, _instance=_new_instance(self, _instance))

    @property
    def concentration(self) -> Tensor:
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        a = self.concentration
        return ew.where(a > 1, self.rate / (a - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        return ew.where(a > 2, self.rate.pow(2) / ((a - 1).pow(2) * (a - 2)), math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + ew.log(self.rate) + lgamma(a) - (1 + a) * digamma(a)


def _kumaraswamy_moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[x^n] = b B(1 + n / a, b), from lgamma."""
    arg = 1 + n / a
    return b * ew.exp(lgamma(arg) + lgamma(b) - lgamma(arg + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1]: ``concentration1`` a > 0,
    ``concentration0`` b > 0 (a Beta-like law with a closed-form cdf)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Tensor | float, concentration0: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        base_dist = Uniform(full_like(self.concentration0, 0.0),
                            full_like(self.concentration0, 1.0), validate_args=validate_args)
        transforms = [PowerTransform(self.concentration0.reciprocal()),
                      AffineTransform(1.0, -1.0),
                      PowerTransform(self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Kumaraswamy:
        new = _new_instance(self, _instance)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self) -> Tensor:
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        # log mode = (log(a - 1) - log(a b - 1)) / a; NaN where a < 1 or b < 1 (no interior
        # mode). PyTorch's formula gives NaN everywhere (it takes log1p(-b)).
        a, b = self.concentration1, self.concentration0
        valid = (a >= 1) & (b >= 1)
        a_safe, b_safe = ew.where(valid, a, 2.0), ew.where(valid, b, 2.0)
        log_mode = (ew.log(a_safe - 1) - ew.log(a_safe * b_safe - 1)) / a_safe
        return ew.where(valid, ew.exp(log_mode), math.nan)

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return _kumaraswamy_moment(a, b, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        t1, t0 = 1 - a.reciprocal(), 1 - b.reciprocal()
        h0 = digamma(b + 1) + _EULER_GAMMA
        return t0 + t1 * h0 - ew.log(a) - ew.log(b)


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: ``StickBreakingTransform`` of
    Normal(loc, scale) vectors (the last dim of the batch shape, K, becomes the event; the
    event shape is (K + 1,)); a scalar loc and scale give K = 1."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> LogisticNormal:
        return super().expand(batch_shape, _instance=_new_instance(self, _instance))

    @property
    def loc(self) -> Tensor:
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        return self.base_dist.base_dist.scale
