"""``TransformedDistribution(base, transforms)``: the law of y = t_n(...t_1(x)), x ~ base.

    log p(y) = log p_base(x) - sum_i log|det dt_i/dx_i|   (x = the inverses applied to y)
    sample / rsample: the transforms applied to base's draws (rsample differentiable when
    base's is); cdf / icdf through monotone transforms (an increasing or decreasing
    chain; a tensor sign, e.g. AffineTransform's with a tensor scale, acts elementwise; a
    transform without a sign, e.g. AbsTransform, raises NotImplementedError, as PyTorch).

Shapes follow PyTorch: transforms that act on event dims (e.g. AffineTransform with
event_dim=1) turn the base's rightmost batch dims into event dims (an Independent base).
E.g. ``TransformedDistribution(Normal(mu, s), [TanhTransform()])`` is the squashed
Gaussian of soft actor-critic policies.
"""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.autograd.grad_mode import no_grad
from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.independent import Independent
from tgrad.distributions.kl import kl_divergence, register_kl
from tgrad.distributions.transforms import ComposeTransform, Transform, _sum_rightmost
from tgrad.tensor import Tensor

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """``base_distribution`` pushed through ``transforms`` (a Transform or a list)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, transforms,
                 validate_args: bool | None = None) -> None:
        if isinstance(transforms, Transform):
            self.transforms = [transforms]
        elif isinstance(transforms, (list, tuple)):
            if not all(isinstance(t, Transform) for t in transforms):
                raise ValueError("transforms must be a Transform or a list of Transforms")
            self.transforms = list(transforms)
        else:
            raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded = transform.inverse_shape(forward_shape)
        if base_shape != expanded:
            base_distribution = base_distribution.expand(
                expanded[:len(expanded) - base_event_dim])
        extra = transform.domain.event_dim - base_event_dim
        if extra > 0:
            base_distribution = Independent(base_distribution, extra)
        self.base_dist = base_distribution
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    @property
    def has_rsample(self) -> bool:
        return self.base_dist.has_rsample

    @property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support,
                                              len(self.event_shape) - support.event_dim)
        return support

    def expand(self, batch_shape: Sequence[int], _instance=None) -> TransformedDistribution:
        """The base expanded to the batch shape the transforms map to ``batch_shape``;
        ``_instance`` (a subclass's new object) receives the state, as in PyTorch."""
        if _instance is None and type(self).__init__ is not TransformedDistribution.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of TransformedDistribution that defines a "
                f"custom __init__ method must also define a custom .expand() method.")
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        shape = batch_shape + tuple(self.event_shape)
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        with no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                 event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """value through the product of the transforms' signs (PyTorch's rule): unchanged
        for +1, else sign (value - 1/2) + 1/2 (1 - value for -1; a tensor sign acts
        elementwise). A transform without a sign (not monotone, e.g. AbsTransform) raises
        NotImplementedError."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        return self._monotonize_cdf(value)

    def icdf(self, value: Tensor) -> Tensor:
        value = self._monotonize_cdf(value)
        value = self.base_dist.icdf(value)
        for t in self.transforms:
            value = t(value)
        return value


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution,
                                q: TransformedDistribution) -> Tensor:
    # KL(f(X) || f(Y)) = KL(X || Y) for the same bijection f
    if p.transforms != q.transforms:
        raise NotImplementedError(
            f"kl_divergence({type(p).__name__}, {type(q).__name__}): the transforms differ "
            f"({p.transforms} and {q.transforms}); the TransformedDistribution rule needs "
            f"equal ones (register_kl a rule for this pair)")
    if p.event_shape != q.event_shape:
        raise NotImplementedError(
            f"kl_divergence({type(p).__name__}, {type(q).__name__}): the event shapes "
            f"differ: {tuple(p.event_shape)} and {tuple(q.event_shape)}")
    return kl_divergence(p.base_dist, q.base_dist)
