"""``ContinuousBernoulli(probs | logits)`` (Loaiza-Ganem and Cunningham, 2019; PyTorch's):
on [0, 1], p(x; lam) = C(lam) lam^x (1 - lam)^(1 - x), lam = probs in (0, 1), logits =
logit(lam) (not log-odds of an outcome: the names follow Bernoulli).

    log C(lam) = log(|log1p(-lam) - log lam| / |1 - 2 lam|), near lam = 1/2 (within
                 ``lims``, default (0.499, 0.501)) its Taylor series log 2 + (4/3 + 104/45
                 d) d, d = (lam - 1/2)^2
    mean       = lam / (2 lam - 1) + 1 / (log1p(-lam) - log lam)   (Taylor: 1/2 + (1/3 +
                 16/45 e^2) e, e = lam - 1/2)
    variance   = lam (lam - 1) / (1 - 2 lam)^2 + 1 / (log1p(-lam) - log lam)^2 (Taylor:
                 1/12 - (1/15 - 128/945 d) d)
    cdf        = (lam^x (1 - lam)^(1 - x) + lam - 1) / (2 lam - 1)   (x near lam = 1/2)
    icdf(u)    = (log1p(-lam + u (2 lam - 1)) - log1p(-lam)) / (log lam - log1p(-lam))
    H          = mean (log1p(-lam) - log lam) - log C - log1p(-lam)
    rsample    = icdf(u), u ~ Uniform(0, 1)
    natural parameter theta = logits, F(theta) = log(expm1(theta) / theta) (Taylor near 0)

probs are clamped to [eps, 1 - eps] (PyTorch's), after validation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.utils import (
    broadcast_all,
    clamp_probs,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import rand
from tgrad.tensor import Tensor

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1]: exactly one of ``probs`` (in
    [0, 1], clamped to (0, 1)) or ``logits`` (real); ``lims`` is the interval of probs
    around 1/2 where Taylor series replace the closed forms (their 0 / 0)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 lims: tuple[float, float] = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            # checked before the clamp below (which would hide values outside [0, 1])
            check = self._validate_args if validate_args is None else validate_args
            if check and not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
            self._param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(tuple(self._param.shape), validate_args=validate_args)

    def _expand_extra(self, new) -> None:
        new._lims = self._lims
        given = "probs" if self._param is self.__dict__.get("probs") else "logits"
        new._param = new.__dict__[given]

    @lazy_property
    def logits(self) -> Tensor:
        """logit(probs)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits), clamped to [eps, 1 - eps]."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._param.shape)

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        """probs, with lims[0] inside the unstable region (the closed forms' safe input)."""
        return ew.where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self) -> Tensor:
        """log C(probs)."""
        cut = self._cut_probs()
        below = ew.where(cut <= 0.5, cut, 0.0)
        above = ew.where(cut >= 0.5, cut, 1.0)
        log_norm = ew.log((ew.log1p(-cut) - ew.log(cut)).abs()) - ew.where(
            cut <= 0.5, ew.log1p(-2.0 * below), ew.log(2.0 * above - 1.0))
        d = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d) * d
        return ew.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (ew.log1p(-cut) - ew.log(cut))
        e = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * e.pow(2)) * e
        return ew.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        var = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + 1.0 / (
            ew.log1p(-cut) - ew.log(cut)).pow(2)
        d = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d) * d
        return ew.where(self._outside_unstable_region(), var, taylor)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        u = rand(self._extended_shape(sample_shape), dtype=self.probs.dtype,
                 device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return (-F.binary_cross_entropy_with_logits(logits, value, reduction="none")
                + self._cont_bern_log_norm())

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = ew.where(self._outside_unstable_region(), cdfs, value)
        return ew.where(value <= 0.0, 0.0, ew.where(value >= 1.0, 1.0, unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        closed = (ew.log1p(-cut + value * (2.0 * cut - 1.0)) - ew.log1p(-cut)) / (
            ew.log(cut) - ew.log1p(-cut))
        return ew.where(self._outside_unstable_region(), closed, value)

    def entropy(self) -> Tensor:
        log_probs0, log_probs1 = ew.log1p(-self.probs), ew.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """F(theta) = log(expm1(theta) / theta), its Taylor series 0.5 theta + theta^2 / 24
        - theta^4 / 2880 near 0 (theta within lims - 1/2)."""
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = ew.where(outside, x, self._lims[0] - 0.5)
        log_norm = ew.log(ew.expm1(cut).abs()) - ew.log(cut.abs())
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ew.where(outside, log_norm, taylor)

