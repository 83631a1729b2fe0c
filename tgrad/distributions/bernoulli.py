"""Bernoulli(probs=None, logits=None): one coin flip, 1 with probability p."""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad import dtypes
from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.utils import (
    binary_logits,
    binary_probs,
    broadcast_all,
    set_probs_or_logits,
)
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import arange
from tgrad.ops.extras import logit
from tgrad.ops.sampling import bernoulli
from tgrad.tensor import Tensor

__all__ = ["Bernoulli"]


class Bernoulli(ExponentialFamily):
    """The Bernoulli distribution given by ``probs`` p in [0, 1] or ``logits``
    l = log(p / (1 - p)) (exactly one; a tensor or a float, whose shape is
    ``batch_shape``). The other parameterisation is computed on first access (p =
    sigmoid(l); l from p clamped to [eps, 1 - eps]).

    log p(x) = x l - softplus(l) = -BCEWithLogits(l, x), x in {0, 1};
    H = BCEWithLogits(l, p) = -p log p - (1 - p) log(1 - p); mean p; variance p (1 - p).
    Samples are 0./1. in the parameter's dtype; there is no rsample.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        self._param = set_probs_or_logits(self, probs, logits)
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def _expand_extra(self, new: Distribution) -> None:
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]

    logits = binary_logits
    probs = binary_probs

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of the parameter given (probs or logits)."""
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where p > 1/2, 0 where p < 1/2, NaN at p = 1/2."""
        p = self.probs.detach()
        return ew.where(p == 0.5, math.nan, (p >= 0.5).to(p.dtype))

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = self.probs.detach()
        return bernoulli(p.expand(tuple(shape)) if tuple(p.shape) != shape else p)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # a floating value promotes with the logits (float32 probs, float64 value: float64,
        # as PyTorch); an integer or bool one is read in the logits' dtype
        dt = dtypes.result_type(logits, value) if value.dtype.is_floating_point \
            else logits.dtype
        return -F.binary_cross_entropy_with_logits(logits.to(dt), value.to(dt),
                                                   reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0. and 1. (the parameter's dtype), shape (2,) + batch_shape (or size-1 dims)."""
        p = self._param
        values = arange(2, dtype=p.dtype, device=p.device).reshape(
            (-1,) + (1,) * len(self.batch_shape))
        return values.expand(-1, *self.batch_shape) if expand else values

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """F(theta) = log(1 + e^theta)."""
        return ew.log1p(ew.exp(x))
