"""``MixtureSameFamily(mixture_distribution, component_distribution)``: a mixture of K
components of one family, the component index drawn from a Categorical (the component's
rightmost batch dim is the K).

    log p(x) = logsumexp_k (log pi_k + log p_k(x));  cdf = sum_k pi_k F_k(x)
    mean = sum_k pi_k mu_k;  variance = sum_k pi_k var_k + sum_k pi_k (mu_k - mean)^2
    sample: k ~ Categorical(pi), then component k's draw (no rsample, as PyTorch)
"""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.autograd.grad_mode import no_grad
from tgrad.distributions import constraints
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.distribution import Distribution
from tgrad.nn import functional as F
from tgrad.tensor import Tensor

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A K-component mixture: ``mixture_distribution`` a Categorical over K (batch shape
    B), ``component_distribution`` of batch shape B + (K,)."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical,
                 component_distribution: Distribution,
                 validate_args: bool | None = None) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for a, b in zip(reversed(mdbs), reversed(cdbs)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, tuple(component_distribution.event_shape),
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> MixtureSameFamily:
        """Both parts expanded: the mixture to ``batch_shape``, the components to
        ``batch_shape + (K,)``."""
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mixture_distribution(self) -> Categorical:
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        return self._component_distribution

    @property
    def support(self):
        # PyTorch's: a value is in the support when every component's support holds it
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    def _pad(self, x: Tensor) -> Tensor:
        """x with a size-1 component dim before its event dims."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _pad_mixture(self, p: Tensor) -> Tensor:
        """Mixture weights (B, K) shaped (B, K) + (1,) * event dims."""
        return p.reshape(tuple(p.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        probs = self._pad_mixture(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        probs = self._pad_mixture(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        within = (probs * self._component_distribution.variance).sum(dim)
        spread = (probs * (self._component_distribution.mean
                           - self._pad(self.mean)).pow(2)).sum(dim)
        return within + spread

    def cdf(self, x: Tensor) -> Tensor:
        cdf_x = self._component_distribution.cdf(self._pad(x))
        return (cdf_x * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        lp = self._component_distribution.log_prob(self._pad(x))  # (S, B, K)
        log_pi = F.log_softmax(self._mixture_distribution.logits, dim=-1)
        return (lp + log_pi).logsumexp(-1)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            gather_dim = len(tuple(sample_shape)) + len(self.batch_shape)
            es = tuple(self.event_shape)
            k = self._mixture_distribution.sample(sample_shape)  # (S, B)
            comp = self._component_distribution.sample(sample_shape)  # (S, B, K, E)
            idx = k.reshape(tuple(k.shape) + (1,) * (len(es) + 1))
            idx = idx.expand(*k.shape, 1, *es)
            return comp.gather(gather_dim, idx).squeeze(gather_dim)
