"""Categorical(probs=None, logits=None): one draw from {0, ..., K-1}."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tgrad import dtypes
from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.utils import (
    _finfo,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from tgrad.ops.creation import arange, full, zeros
from tgrad.ops.sampling import multinomial
from tgrad.tensor import Tensor

__all__ = ["Categorical"]


class Categorical(Distribution):
    """The categorical distribution over K classes given by ``probs`` (non-negative
    weights, normalised to sum to 1 along the last dim) or ``logits`` (unnormalised log
    probabilities, normalised by subtracting their logsumexp), exactly one, at least 1-d:
    shape ``batch_shape + (K,)``. Samples are int64 of shape ``sample_shape +
    batch_shape``; ``event_shape`` is ``()``.

    log p(k) = logits[..., k]; H = -sum_k p_k log p_k (logits clamped to the dtype's
    finite minimum, so p_k = 0 contributes 0); mean and variance are NaN (PyTorch);
    mode argmax p; no rsample.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    def _expand_extra(self, new: Distribution) -> None:
        new._param = new.__dict__["probs" if "probs" in self.__dict__ else "logits"]
        new._num_events = self._num_events

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """The integers 0 .. K-1."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """The normalised log probabilities, shape batch_shape + (K,)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """The normalised probabilities, shape batch_shape + (K,)."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of the parameter given (probs or logits)."""
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                    device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(dim=-1)

    @property
    def variance(self) -> Tensor:
        return full(self._extended_shape(), math.nan, dtype=self.probs.dtype,
                    device=self.probs.device)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        n = int(np.prod(tuple(sample_shape), dtype=np.int64))
        if n == 0 or self.probs.numel() == 0:  # nothing to draw
            return zeros(self._extended_shape(sample_shape), dtype=dtypes.int64,
                         device=self._param.device)
        probs_2d = self.probs.detach().reshape(-1, self._num_events)
        samples_2d = multinomial(probs_2d, n, True).T
        return samples_2d.reshape(*self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = value.to(dtypes.int64).unsqueeze(-1)
        logits = self.logits
        shape = np.broadcast_shapes(tuple(value.shape), tuple(logits.shape))
        value = value.expand(*shape[:-1], 1)
        log_pmf = logits.expand(tuple(shape)) if tuple(logits.shape) != shape else logits
        return log_pmf.gather(-1, value).squeeze(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0 .. K-1 (int64), shape (K,) + batch_shape (or size-1 dims)."""
        values = arange(self._num_events, device=self._param.device).reshape(
            (-1,) + (1,) * len(self.batch_shape))
        return values.expand(-1, *self.batch_shape) if expand else values

    def entropy(self) -> Tensor:
        min_real = float(_finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)
