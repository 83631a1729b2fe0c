"""The Concrete / Gumbel-softmax relaxations, as torch.distributions has them:
``LogitRelaxedBernoulli``, ``RelaxedBernoulli`` (its sigmoid), ``ExpRelaxedCategorical``
and ``RelaxedOneHotCategorical`` (its exp), each at a ``temperature`` T > 0.

    LogitRelaxedBernoulli:  x = (logit(u) + logits) / T,  u ~ U(0, 1);
                            log p(x) = log T + d - 2 log1p(exp(d)), d = logits - T x
    ExpRelaxedCategorical:  x = log_softmax((logits + g) / T),  g ~ Gumbel(0, 1) per class;
                            log p(x) = lgamma(K) + (K - 1) log T
                                       + sum_k log_softmax(logits - T x)_k
    RelaxedBernoulli = TransformedDistribution(LogitRelaxedBernoulli, SigmoidTransform),
    RelaxedOneHotCategorical = TransformedDistribution(ExpRelaxedCategorical, ExpTransform);
    all reparameterised (rsample differentiable in logits and T).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.bernoulli import Bernoulli
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.transformed_distribution import TransformedDistribution
from tgrad.distributions.transforms import ExpTransform, SigmoidTransform
from tgrad.distributions.utils import broadcast_all, clamp_probs
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import rand
from tgrad.tensor import Tensor

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed Bernoulli sample (module docstring)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        self._bernoulli = Bernoulli(probs, logits, validate_args=validate_args)
        shape = tuple(self._bernoulli.batch_shape)
        (self.temperature,) = broadcast_all(temperature)
        super().__init__(shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> LogitRelaxedBernoulli:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        new._bernoulli = self._bernoulli.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def logits(self) -> Tensor:
        return self._bernoulli.logits

    @property
    def probs(self) -> Tensor:
        return self._bernoulli.probs

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(rand(shape, dtype=logits.dtype, device=logits.device))
        return (ew.log(u) - ew.log1p(-u) + logits) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return ew.log(self.temperature) + diff - 2 * ew.log1p(ew.exp(diff))


class _Relaxed(TransformedDistribution):
    """A relaxed distribution: ``_base_cls``'s draws through ``_transform``, with the base's
    temperature, logits and probs."""

    has_rsample = True
    _base_cls: type
    _transform: type

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        base = self._base_cls(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, self._transform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> _Relaxed:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self) -> Tensor:
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        return self.base_dist.probs


class RelaxedBernoulli(_Relaxed):
    """sigmoid of LogitRelaxedBernoulli: values in (0, 1)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _base_cls = LogitRelaxedBernoulli
    _transform = SigmoidTransform


class ExpRelaxedCategorical(Distribution):
    """The log of a relaxed one-hot categorical sample (module docstring)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        (self.temperature,) = broadcast_all(temperature)
        super().__init__(tuple(self._categorical.batch_shape),
                         tuple(self._categorical.param_shape[-1:]),
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> ExpRelaxedCategorical:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        logits = self.logits
        u = clamp_probs(rand(shape, dtype=logits.dtype, device=logits.device))
        gumbels = -ew.log(-ew.log(u))
        scores = (logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.event_shape[-1]
        log_scale = math.lgamma(k) + (k - 1) * ew.log(self.temperature)
        score = self.logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_Relaxed):
    """exp of ExpRelaxedCategorical: points of the simplex."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    _base_cls = ExpRelaxedCategorical
    _transform = ExpTransform
