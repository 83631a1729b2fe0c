"""``VonMises(loc, concentration)``: the circular normal distribution on [-pi, pi).

    log p(x) = k cos(x - loc) - log(2 pi) - log I0(k),  log I0(k) = log i0e(k) + k;
    mean = mode = loc;  circular variance 1 - I1(k) / I0(k) = 1 - i1e(k) / i0e(k);
    H = log(2 pi) + log I0(k) - k I1(k) / I0(k)  (PyTorch has no entropy here).

Sampling (no graph, float64): Best and Fisher's (1979) rejection from a wrapped Cauchy
envelope, vectorised over tgrad ops: r = (1 + rho^2) / (2 rho), rho = (tau - sqrt(2 tau))
/ (2k), tau = 1 + sqrt(1 + 4 k^2) (r = 1/k + k below k = 1e-5); z = cos(pi u1),
f = (1 + r z) / (r + z), c = k (r - f), accept when c (2 - c) > u2 or log(c / u2) + 1 >= c;
x = sign(u3 - 1/2) acos(f), shifted by loc and wrapped into [-pi, pi).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.counts import _in_float64, _until_done
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.utils import broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.bessel import i0e, i1e
from tgrad.ops.creation import rand
from tgrad.tensor import Tensor

__all__ = ["VonMises"]


def _log_i0(k: Tensor) -> Tensor:
    return ew.log(i0e(k)) + k


class VonMises(Distribution):
    """The von Mises distribution with mean direction ``loc`` and ``concentration`` k > 0
    (module docstring)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1.0 - i1e(k) / i0e(k)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * ew.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    def entropy(self) -> Tensor:
        k = self.concentration
        return math.log(2 * math.pi) + _log_i0(k) - k * i1e(k) / i0e(k)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _in_float64(_best_fisher_draw, self.loc.expand(tuple(shape)),
                           self.concentration.expand(tuple(shape)))


def _best_fisher_draw(loc: Tensor, k: Tensor) -> Tensor:
    """VonMises(loc, k) draws of loc's shape (module docstring; no graph)."""
    tau = 1.0 + ew.sqrt(1.0 + 4.0 * k * k)
    rho = (tau - ew.sqrt(2.0 * tau)) / (2.0 * k)
    r = ew.where(k < 1e-5, 1.0 / k + k, (1.0 + rho * rho) / (2.0 * rho))

    def round_(todo: Tensor) -> tuple[Tensor, Tensor]:
        u1, u2, u3 = (rand(k.shape, dtype=k.dtype, device=k.device) for _ in range(3))
        z = ew.cos(math.pi * u1)
        f = (1.0 + r * z) / (r + z)
        c = k * (r - f)
        accept = (c * (2.0 - c) - u2 > 0) | (ew.log(c / u2) + 1.0 - c >= 0)
        return ew.sign(u3 - 0.5) * ew.acos(f.clamp(-1.0, 1.0)), accept

    x = _until_done(round_, k, "von Mises")
    return ew.remainder(x + math.pi + loc, 2 * math.pi) - math.pi
