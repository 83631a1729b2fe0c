"""``GeneralizedPareto(loc, scale, concentration)`` (PyTorch's, after TensorFlow
Probability's): z = (x - loc) / scale, shape xi = concentration.

    log p = -log scale - (1 / xi + 1) log1p(xi z)      (xi != 0; -log scale - z at xi = 0)
    log S = -log1p(xi z) / xi  (-z at xi = 0); cdf = 1 - S
    icdf(u) = loc + scale expm1(-xi log1p(-u)) / xi   (loc - scale log1p(-u) at xi = 0)
    support [loc, loc - scale / xi] for xi < 0, [loc, inf) otherwise
    mean loc + scale / (1 - xi) (NaN for xi >= 1); variance scale^2 / ((1 - xi)^2 (1 - 2 xi))
    (NaN for xi >= 1/2); mode loc; H = log scale + xi + 1
    rsample = icdf(u), u ~ Uniform(0, 1) (differentiable in all three parameters)

xi = 0 is detected as PyTorch does (isclose(xi, 0): |xi| <= 1e-8); the xi != 0 branches
are evaluated at a safe xi = 1 there, so gradients stay finite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.utils import broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import rand
from tgrad.tensor import Tensor

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution: ``loc`` real, ``scale`` > 0, ``concentration``
    real (Exponential at loc = 0, concentration = 0; Pareto at concentration > 0, loc =
    scale / concentration; Uniform at concentration = -1)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 concentration: Tensor | float, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    def _safe_concentration(self) -> tuple[Tensor, Tensor]:
        """(xi == 0 within 1e-8, xi with those entries replaced by 1)."""
        eq_zero = self.concentration.abs() <= 1e-8
        return eq_zero, ew.where(eq_zero, 1.0, self.concentration)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = ew.where(self.concentration < 0,
                         self.loc - self.scale / self.concentration, math.inf)
        return constraints.interval(self.loc, upper)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype,
                 device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._safe_concentration()
        y = 1 / xi + 1
        # y log1p(xi z), with 0 where y == 0 (xi = -1: the uniform law, log1p(-1) = -inf)
        nonzero = ew.where(y == 0, y, y * ew.log1p(xi * z))
        return -ew.log(self.scale) - ew.where(eq_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log(1 - cdf(value))."""
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, xi = self._safe_concentration()
        return ew.where(eq_zero, -z, -ew.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """log cdf(value) = log1p(-S)."""
        return ew.log1p(-ew.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return ew.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        eq_zero, xi = self._safe_concentration()
        logu = ew.log1p(-value)
        nonzero = self.loc + self.scale / xi * ew.expm1(-xi * logu)
        return ew.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        xi = ew.where(valid, self.concentration, 0.5)
        return ew.where(valid, self.loc + self.scale / (1 - xi), math.nan)

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        xi = ew.where(valid, self.concentration, 0.25)
        return ew.where(valid, self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi)),
                        math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    def entropy(self) -> Tensor:
        return (ew.log(self.scale) + self.concentration + 1).expand(tuple(self._batch_shape))

