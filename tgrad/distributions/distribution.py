"""The Distribution base class (PyTorch's ``torch.distributions.Distribution``).

Shapes: a distribution holds a batch of independent distributions (``batch_shape``, the
broadcast shape of its parameters) over events of ``event_shape`` (``()`` for the scalar
families here). ``sample(sample_shape)`` returns ``sample_shape + batch_shape +
event_shape``; ``log_prob(value)`` takes a value broadcastable to ``batch_shape +
event_shape`` and returns the broadcast shape less ``event_shape``; ``entropy()``,
``mean``, ``variance`` and ``stddev`` have ``batch_shape`` (+ ``event_shape`` for the
moments).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from tgrad.autograd.grad_mode import no_grad
from tgrad.distributions import constraints
from tgrad.distributions.utils import broadcast_all, lazy_property
from tgrad.ops import elementwise as ew
from tgrad.tensor import Tensor

__all__ = ["Distribution"]


class Distribution:
    """Abstract base class of probability distributions. ``validate_args`` (default: on,
    as in PyTorch; off under ``python -O``) checks the parameters against
    ``arg_constraints`` at construction and values against ``support`` in ``log_prob``,
    ``cdf`` and ``icdf``, raising ValueError with PyTorch's messages."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: constraints.Constraint | None = None

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn argument validation on or off for distributions built without an explicit
        ``validate_args``."""
        if value not in [True, False]:
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape: Sequence[int] = (), event_shape: Sequence[int] = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = tuple(batch_shape)
        self._event_shape = tuple(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # cannot be checked on its own
                if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                             lazy_property):
                    continue  # the other parameterisation, not built yet
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}")

    # -- shapes ----------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple[int, ...]:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Sequence[int] = ()) -> tuple[int, ...]:
        """sample_shape + batch_shape + event_shape."""
        return tuple(sample_shape) + self._batch_shape + self._event_shape

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Distribution:
        """A new distribution whose parameters are expanded (views, no copies) to
        ``batch_shape``; the arguments are not checked again."""
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        for name in self.arg_constraints:
            if name in self.__dict__:
                t = self.__dict__[name]
                event = tuple(t.shape[len(self._batch_shape):])
                new.__dict__[name] = t.expand(tuple(batch_shape + event))
        self._expand_extra(new)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _expand_extra(self, new: Distribution) -> None:
        """Copy non-parameter state to an expanded instance (subclasses)."""

    # -- moments and densities (subclasses) ---------------------------------------------------
    @property
    def mean(self) -> Tensor:
        """The mean, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode, of shape batch_shape + event_shape."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance, of shape batch_shape + event_shape."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation: sqrt(variance)."""
        return self.variance.sqrt()

    def sample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, not recorded by
        autograd."""
        with no_grad():
            return self.rsample(sample_shape)

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``, deprecated as in PyTorch (a FutureWarning)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample((n,))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        """A reparameterised sample (a differentiable function of the parameters and of
        parameter-free noise) of shape sample_shape + batch_shape + event_shape."""
        raise NotImplementedError

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density (or mass) at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value`` in [0, 1]."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete support, along a new first dim (of the batch shape
        with ``expand``, else with size-1 batch dims)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The (differential) entropy, of shape batch_shape."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """exp(entropy()), of shape batch_shape."""
        return ew.exp(self.entropy())

    # -- validation ------------------------------------------------------------------------
    def _validate_sample(self, value: Tensor,
                         support: constraints.Constraint | None = None) -> None:
        """Check that ``value`` is a tensor broadcastable to batch_shape + event_shape that
        lies in the support (PyTorch's errors); ``support`` replaces ``self.support`` (cdf
        of an open support checks its closure: cdf(0) = 0 for LogNormal, as PyTorch)."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape = tuple(value.shape)
        event_dim_start = len(shape) - len(self._event_shape)
        if shape[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{shape} vs {self._event_shape}.")
        expected = self._batch_shape + self._event_shape
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{shape} vs {expected}.")
        if support is None:
            support = self.support
        if support is None:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {shape}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}")

    def __repr__(self) -> str:
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return f"{self.__class__.__name__}({args})"


class _LocScale(Distribution):
    """The shared part of the location-scale families (Normal, Laplace, Cauchy, Gumbel,
    LogNormal): ``loc`` and ``scale`` > 0 (tensors or floats, broadcast together; their
    shape is ``batch_shape``), support the reals (LogNormal: positive), reparameterised
    sampling; mean and mode are ``loc`` unless overridden. A subclass
    names ``mean = _LocScale.mean`` and ``mode = _LocScale.mode`` in its own body so that
    docs/api.md (which lists each class's own members) still shows them."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(tuple(self.loc.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc
