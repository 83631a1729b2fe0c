"""Count distributions, as torch.distributions has them: ``Poisson(rate)``,
``Binomial(total_count, probs | logits)``, ``NegativeBinomial(total_count, probs | logits)``
and ``Multinomial(total_count, probs | logits)``. Samples are float counts (PyTorch's
convention), drawn without a graph.

    Poisson:   log p(k) = k log r - r - lgamma(k + 1) (xlogy: 0 log 0 = 0);
               mean = variance = r; mode floor(r)
    Binomial:  log p(k) = k l - n max(l, 0) - n log1p(e^-|l|) + lgamma(n + 1)
                          - lgamma(k + 1) - lgamma(n - k + 1),  l = logit(p);
               mean n p; variance n p (1 - p); mode floor((n + 1) p) clamped to n
    NegativeBinomial (successes before the n-th failure, success probability p):
               log p(k) = n logsigmoid(-l) + k logsigmoid(l) + lgamma(n + k)
                          - lgamma(k + 1) - lgamma(n)  (0 when n + k = 0);
               mean n e^l; variance mean / (1 - p); mode floor((n - 1) e^l) clamped at 0
    Multinomial: log p(x) = lgamma(sum x + 1) - sum lgamma(x + 1) + sum x log p_i
               (0 log 0 = 0); mean n p; variance n p (1 - p)

Samplers, vectorised over tgrad ops (any device) in float64:
- Poisson: sequential-search inversion for r < 10 (expected r + 1 rounds); Hoermann's
  transformed rejection with squeeze (PTRS, 1993) for r >= 10, as NumPy uses.
- Binomial: the waiting-time method (sum of geometric gaps) when n min(p, 1 - p) < 10;
  Hoermann's BTRS otherwise, with the exact log-pmf ratio as the acceptance test; p > 1/2
  draws n - Binomial(n, 1 - p).
- NegativeBinomial: Poisson(Gamma(n, p / (1 - p))), the gamma-Poisson mixture.
- Multinomial: n categorical draws, counted per class.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from tgrad.distributions import constraints
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.gamma import _standard_gamma_draw
from tgrad.distributions.utils import (
    binary_logits,
    binary_probs,
    broadcast_all,
    set_probs_or_logits,
)
from tgrad.distributions.utils import (
    in_float64 as _in_float64,
)
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import arange, rand, zeros
from tgrad.ops.extras import xlogy
from tgrad.ops.special import lgamma
from tgrad.tensor import Tensor

__all__ = ["Poisson", "Binomial", "NegativeBinomial", "Multinomial"]

_MAX_ROUNDS = 1000  # rejection rounds (each accepts > 60% of what is left)


def _until_done(draw: Callable[[Tensor], tuple[Tensor, Tensor]], like: Tensor,
                what: str) -> Tensor:
    """Run ``draw(todo) -> (value, accepted)`` rounds until every element has accepted a
    value; each element keeps its first accepted value."""
    out = zeros(like.shape, dtype=like.dtype, device=like.device)
    todo = like == like  # NaN parameters are rejected before sampling (validate_args)
    for _ in range(_MAX_ROUNDS):
        value, ok = draw(todo)
        take = todo & ok
        out = ew.where(take, value, out)
        todo = todo & ~ok
        if not bool(todo.any()):
            return out
    raise RuntimeError(f"{what} sampling did not finish in {_MAX_ROUNDS} rounds")


def _poisson_draw(rate: Tensor) -> Tensor:
    """Poisson(rate) draws of rate's shape (float64, no graph); rate >= 0 finite."""
    small = rate < 10
    lam_s = ew.where(small, rate, 0.0)
    # sequential search: the smallest k with u <= P(K <= k)
    u = rand(rate.shape, dtype=rate.dtype, device=rate.device)
    k = zeros(rate.shape, dtype=rate.dtype, device=rate.device)
    p = ew.exp(-lam_s)
    cdf = p
    for i in range(1, 200):  # P(K > 60 | r < 10) < 1e-25: the loop stops long before
        more = (u > cdf) & (p > 0)
        if not bool(more.any()):
            break
        k = k + more
        p = p * lam_s / i
        cdf = cdf + p
    lam = ew.where(small, 10.0, rate)  # PTRS constants (Hoermann 1993, as NumPy's)
    slam, loglam = ew.sqrt(lam), ew.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2)

    def ptrs(todo: Tensor) -> tuple[Tensor, Tensor]:
        uu = rand(lam.shape, dtype=lam.dtype, device=lam.device) - 0.5
        v = rand(lam.shape, dtype=lam.dtype, device=lam.device)
        us = 0.5 - uu.abs()
        kk = ew.floor((2 * a / us + b) * uu + lam + 0.43)
        quick = (us >= 0.07) & (v <= vr)
        valid = (kk >= 0) & ~((us < 0.013) & (v > us))
        kk_safe = ew.where(kk >= 0, kk, 0.0)
        log_accept = (ew.log(v) + ew.log(invalpha) - ew.log(a / (us * us) + b)
                      <= -lam + kk_safe * loglam - lgamma(kk_safe + 1))
        return kk, quick | (valid & log_accept)

    big = _until_done(ptrs, ew.where(small, math.nan, lam), "poisson")
    return ew.where(small, k, big)


def _binomial_draw(n: Tensor, p: Tensor) -> Tensor:
    """Binomial(n, p) draws (float64, no graph); n >= 0 integral, p in [0, 1]."""
    flip = p > 0.5
    q = ew.where(flip, 1.0 - p, p)  # q <= 1/2; the draw is n - k where flipped
    small = n * q < 10
    # waiting time: count geometric gaps (>= 1) while their running sum stays <= n
    log1mq = ew.log1p(-ew.where(small & (q > 0), q, 0.5))
    count = zeros(n.shape, dtype=n.dtype, device=n.device)
    total = zeros(n.shape, dtype=n.dtype, device=n.device)
    alive = small & (q > 0) & (n > 0)
    while bool(alive.any()):
        u = rand(n.shape, dtype=n.dtype, device=n.device)
        total = total + ew.where(alive, ew.ceil(ew.log(u) / log1mq).clamp(min=1.0), 0.0)
        alive = alive & (total <= n)
        count = count + alive
    # BTRS (Hoermann 1993) where n q >= 10
    nb = ew.where(small, 100.0, n)
    qb = ew.where(small, 0.5, q)
    spq = ew.sqrt(nb * qb * (1 - qb))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * qb
    c = nb * qb + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    log_r = ew.log(qb / (1 - qb))
    m = ew.floor((nb + 1) * qb)
    log_fm = -lgamma(m + 1) - lgamma(nb - m + 1) + m * log_r  # log pmf(m) + const

    def btrs(todo: Tensor) -> tuple[Tensor, Tensor]:
        u = rand(nb.shape, dtype=nb.dtype, device=nb.device) - 0.5
        v = rand(nb.shape, dtype=nb.dtype, device=nb.device)
        us = 0.5 - u.abs()
        k = ew.floor((2 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= nb)
        quick = inside & (us >= 0.07) & (v <= vr)
        ks = ew.where(inside, k, 0.0)
        log_fk = -lgamma(ks + 1) - lgamma(nb - ks + 1) + ks * log_r
        exact = inside & (ew.log(v * alpha / (a / (us * us) + b)) <= log_fk - log_fm)
        return k, quick | exact

    big = _until_done(btrs, ew.where(small, math.nan, nb), "binomial")
    k = ew.where(small, count, big)
    return ew.where(flip, n - k, k)


def _clamp_by_zero(x: Tensor) -> Tensor:
    """max(x, 0), with gradient 1/2 at 0 (PyTorch's binomial helper)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Poisson(ExponentialFamily):
    """The Poisson distribution with ``rate`` >= 0 (module docstring)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | float, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(tuple(self.rate.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return ew.floor(self.rate)

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        if not self.rate.dtype.is_floating_point:  # PyTorch's torch.poisson error
            from tgrad import dtypes
            raise NotImplementedError(
                f"Poisson.sample: \"poisson_cpu\" not implemented for "
                f"'{dtypes.SCALAR_TYPE_NAMES[self.rate.dtype]}': rate must be a floating "
                f"tensor (got {self.rate.dtype}); convert it with .float()")
        rate = self.rate.expand(tuple(self._extended_shape(sample_shape)))
        return _in_float64(_poisson_draw, rate)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (ew.log(self.rate),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """F(theta) = e^theta."""
        return ew.exp(x)


class _ProbsOrLogits(Distribution):
    """``total_count`` and exactly one of ``probs`` / ``logits``, broadcast together."""

    def __init__(self, total_count, probs, logits, validate_args: bool | None) -> None:
        param = set_probs_or_logits(self, probs, logits)
        self.total_count, param = broadcast_all(total_count, param)
        self.total_count = self.total_count.to(param.dtype)
        setattr(self, "probs" if probs is not None else "logits", param)
        super().__init__(tuple(param.shape), validate_args=validate_args)

    logits = binary_logits
    probs = binary_probs

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple((self.probs if "probs" in self.__dict__ else self.logits).shape)


class Binomial(_ProbsOrLogits):
    """The number of successes in ``total_count`` Bernoulli(``probs``) trials
    (module docstring). ``total_count`` may be a tensor (non-negative integers)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Tensor | float = 1, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ew.minimum(ew.floor((self.total_count + 1) * self.probs), self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _in_float64(_binomial_draw, self.total_count.expand(tuple(shape)),
                           self.probs.expand(tuple(shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, k, logits = self.total_count, value, self.logits
        normalize = (n * _clamp_by_zero(logits) + n * ew.log1p(ew.exp(-logits.abs()))
                     - lgamma(n + 1))
        return k * logits - lgamma(k + 1) - lgamma(n - k + 1) - normalize

    def entropy(self) -> Tensor:
        log_p = self.log_prob(self._support(self._single_count("entropy"), False))
        return -(ew.exp(log_p) * log_p).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """0 .. n as floats, shape (n + 1,) + batch_shape (or size-1 dims); one
        ``total_count`` for the whole batch."""
        return self._support(self._single_count("enumerate_support"), expand)

    def _single_count(self, what: str) -> int:
        """The batch's one total_count (PyTorch's error when they differ)."""
        n = self.total_count
        top = int(float(n.max())) if n.numel() else 0
        if n.numel() and float(n.min()) != top:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return top

    def _support(self, top: int, expand: bool) -> Tensor:
        n = self.total_count
        values = arange(1 + top, dtype=n.dtype, device=n.device).reshape(
            (-1,) + (1,) * len(self.batch_shape))
        return values.expand(-1, *self.batch_shape) if expand else values


class NegativeBinomial(_ProbsOrLogits):
    """The number of successes (probability ``probs`` each) before ``total_count``
    failures (module docstring); ``total_count`` > 0 may be fractional."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Tensor | float, probs: Tensor | float | None = None,
                 logits: Tensor | float | None = None,
                 validate_args: bool | None = None) -> None:
        super().__init__(total_count, probs, logits, validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * ew.exp(self.logits)

    @property
    def mode(self) -> Tensor:
        return ew.floor((self.total_count - 1) * ew.exp(self.logits)).clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / ew.sigmoid(-self.logits)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)

        def draw(n: Tensor, logits: Tensor) -> Tensor:
            rate = _standard_gamma_draw(n) * ew.exp(logits)  # Gamma(n, scale p / (1 - p))
            return _poisson_draw(rate)

        return _in_float64(draw, self.total_count.expand(tuple(shape)),
                           self.logits.expand(tuple(shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        unnormalized = n * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
        normalization = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        normalization = ew.where(n + value == 0, 0.0, normalization)  # P(0 | n = 0) = 1
        return unnormalized - normalization


class Multinomial(Distribution):
    """Counts of ``total_count`` (an int) independent Categorical(``probs`` | ``logits``)
    draws over the last dim's K classes: event shape (K,)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Tensor | None = None,
                 logits: Tensor | None = None, validate_args: bool | None = None) -> None:
        if not isinstance(total_count, (int, np.integer)):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = int(total_count)
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=self.total_count, probs=self.probs)
        param = self._categorical._param
        super().__init__(tuple(param.shape[:-1]), tuple(param.shape[-1:]),
                         validate_args=validate_args)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple[int, ...]:
        return tuple(self._categorical._param.shape)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Multinomial:
        batch_shape = tuple(batch_shape)
        shape = batch_shape + self._event_shape
        key = "probs" if "probs" in self._categorical.__dict__ else "logits"
        new = Multinomial(self.total_count, validate_args=False,
                          **{key: getattr(self, key).expand(tuple(shape))})
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        sample_shape = tuple(sample_shape)
        k = self._event_shape[0]
        # (total_count,) + sample_shape + batch_shape class indices, counted per class
        idx = self._categorical.sample((self.total_count,) + sample_shape).movedim(0, -1)
        counts = zeros(idx.shape[:-1] + (k,), dtype=self.probs.dtype, device=idx.device)
        return counts.scatter_add(-1, idx, counts.new_ones(idx.shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = lgamma(value.sum(-1) + 1)
        log_factorial_xs = lgamma(value + 1).sum(-1)
        # 0 log 0 = 0 for classes of probability 0 that were never drawn
        logits = ew.where((value == 0) & (logits == -math.inf), 0.0, logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self) -> Tensor:
        """n H(categorical) - lgamma(n + 1) + sum_i E[lgamma(x_i + 1)], the expectation
        over each class's Binomial(n, p_i) count."""
        n = self.total_count
        support = self._binomial.enumerate_support()[1:]  # 1 .. n: lgamma(1) = 0
        binomial_probs = ew.exp(self._binomial.log_prob(support))
        weights = lgamma(support + 1)
        return (n * self._categorical.entropy() - math.lgamma(n + 1)
                + (binomial_probs * weights).sum((0, -1)))
