"""Normal(loc, scale): the Gaussian N(loc, scale^2)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions.distribution import _LocScale
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import randn
from tgrad.ops.erfs import erfinv
from tgrad.tensor import Tensor

__all__ = ["Normal"]


class Normal(_LocScale, ExponentialFamily):
    """The normal distribution with mean ``loc`` and standard deviation ``scale`` > 0
    (tensors or floats, broadcast together; their shape is ``batch_shape``).

    log p(x) = -(x - loc)^2 / (2 scale^2) - log(scale) - log(sqrt(2 pi));
    H = 1/2 + log(2 pi) / 2 + log(scale); cdf(x) = (1 + erf((x - loc) / (scale sqrt 2))) / 2;
    icdf(u) = loc + scale sqrt(2) erfinv(2 u - 1);
    rsample = loc + scale z with z ~ N(0, 1) drawn by ``tgrad.randn``.
    """

    mean = _LocScale.mean
    mode = _LocScale.mode

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - ew.log(self.scale)
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ew.erf((value - self.loc) * self.scale.reciprocal()
                                 / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + ew.log(self.scale)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        """F(theta1, theta2) = -theta1^2 / (4 theta2) + log(-pi / theta2) / 2."""
        return -0.25 * x.pow(2) / y + 0.5 * ew.log(-math.pi / y)
