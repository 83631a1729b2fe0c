"""Uniform(low, high): the continuous uniform distribution on [low, high)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.utils import broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import rand
from tgrad.tensor import Tensor

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on the half-open interval [low, high) (tensors or floats, broadcast together;
    low < high is checked when validating).

    log p(x) = -log(high - low) on [low, high), -inf elsewhere; H = log(high - low);
    mean (low + high) / 2; variance (high - low)^2 / 12;
    cdf(x) = clamp((x - low) / (high - low), 0, 1); icdf(u) = low + u (high - low);
    rsample = low + u (high - low) with u ~ U[0, 1) drawn by ``tgrad.rand``.
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """low < high, as PyTorch: {"low": less_than(high), "high": greater_than(low)}
        (an instance property; validation names ``low`` first)."""
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low: Tensor | float, high: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(tuple(self.low.shape), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """[low, high] (the validation of values)."""
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        u = rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return ew.log(lb * ub) - ew.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        result = (value - self.low) / (self.high - self.low)
        return result.clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return ew.log(self.high - self.low)
