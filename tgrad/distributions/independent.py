"""``Independent`` (batch dims read as event dims) and ``OneHotCategorical``, as
torch.distributions has them.

    Independent(base, n): batch_shape = base's without its last n dims, event_shape = those
        n dims + base's event_shape; log_prob and entropy sum base's over the n dims;
        samples, moments and rsample are base's; KL(Independent, Independent) with the same
        n sums base's KL.
    OneHotCategorical(probs | logits): Categorical's samples as one-hot vectors (event_shape
        (K,)); log_prob(x) = Categorical's log_prob(argmax x); mean p, variance p (1 - p).
"""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.kl import kl_divergence, register_kl
from tgrad.distributions.transforms import _sum_rightmost
from tgrad.nn import functional as F
from tgrad.ops.creation import eye
from tgrad.tensor import Tensor

__all__ = ["Independent", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class Independent(Distribution):
    """``base_distribution`` with its last ``reinterpreted_batch_ndims`` batch dims made
    event dims (e.g. a diagonal Normal as one multivariate density)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        batch = tuple(base_distribution.batch_shape)
        n = int(reinterpreted_batch_ndims)
        if n > len(batch):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {n} vs {len(batch)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        split = len(batch) - n
        super().__init__(batch[:split], batch[split:] + tuple(base_distribution.event_shape),
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Independent:
        batch_shape = tuple(batch_shape)
        n = self.reinterpreted_batch_ndims
        tail = tuple(self.event_shape[:n])
        return Independent(self.base_dist.expand(batch_shape + tail), n,
                           validate_args=False)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:
        """The base's when no dims are reinterpreted; False otherwise (PyTorch's: no
        cartesian products)."""
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The base's support values (reinterpreted_batch_ndims = 0 only)."""
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    @property
    def support(self):
        # the base's own constraint when no dims are reinterpreted (PyTorch's)
        if not self.reinterpreted_batch_ndims:
            return self.base_dist.support
        return constraints.independent(self.base_dist.support, self.reinterpreted_batch_ndims)

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return (f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})")


@register_kl(Independent, Independent)
def _kl_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist),
                          p.reinterpreted_batch_ndims)


class OneHotCategorical(Distribution):
    """Categorical over K classes, its samples one-hot vectors of length K."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        super().__init__(tuple(self._categorical.batch_shape),
                         tuple(self._categorical.param_shape[-1:]),
                         validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance=None) -> OneHotCategorical:
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, tuple(batch_shape), self.event_shape, validate_args=False)
        return new

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> tuple:
        return self._categorical.param_shape

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        k = self.probs.shape[-1]
        return F.one_hot(self.probs.argmax(-1), k).to(self.probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        k = self.probs.shape[-1]
        return F.one_hot(self._categorical.sample(sample_shape), k).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K one-hot vectors, shape (K,) + batch_shape + (K,) (or size-1 dims)."""
        k = self.event_shape[0]
        p = self.probs
        values = eye(k, dtype=p.dtype, device=p.device).reshape(
            (k,) + (1,) * len(self.batch_shape) + (k,))
        return values.expand(k, *self.batch_shape, k) if expand else values

    def entropy(self) -> Tensor:
        return self._categorical.entropy()


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through: the one-hot
    sample + (p - p.detach()) (its value is the sample, its gradient that of p)."""

    has_rsample = True

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        samples = self.sample(sample_shape)
        p = self._categorical.probs
        return samples + (p - p.detach())


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_one_hot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return kl_divergence(p._categorical, q._categorical)
