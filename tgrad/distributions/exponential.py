"""Exponential(rate): the exponential distribution with density rate e^(-rate x), x >= 0."""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.utils import broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import empty, zeros_like
from tgrad.tensor import Tensor

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution with ``rate`` > 0 (= 1 / scale; a tensor or a float,
    whose shape is ``batch_shape``).

    log p(x) = log(rate) - rate x; H = 1 - log(rate); mean 1 / rate; variance 1 / rate^2;
    cdf(x) = 1 - e^(-rate x); icdf(u) = -log(1 - u) / rate;
    rsample = e / rate with e ~ Exp(1) (``Tensor.exponential_``).
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        e = empty(shape, dtype=self.rate.dtype, device=self.rate.device).exponential_()
        return e / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ew.log(self.rate) - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 1 - ew.exp(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -ew.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - ew.log(self.rate)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """F(theta) = -log(-theta)."""
        return -ew.log(-x)
