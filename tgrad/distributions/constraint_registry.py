"""PyTorch's constraint registry: ``biject_to(constraint)`` and ``transform_to(constraint)``
return a Transform from unconstrained reals onto the constraint's set.

``biject_to`` gives bijections (for HMC-style samplers: ``t.inv`` is exact and
``log_abs_det_jacobian`` defined); ``transform_to`` may give a non-bijective map that is
better for optimisation (the simplex: SoftmaxTransform instead of stick breaking).

    constraint                       biject_to                    transform_to
    real                             identity_transform           identity_transform
    independent(c, n)                IndependentTransform(biject_to(c), n)   (transform_to)
    positive, nonnegative,           exp then + lower_bound       (the same)
      greater_than(_eq)(lb)
    less_than(ub)                    exp then ub - y              (the same)
    interval / half_open_interval    sigmoid (then lb + (ub - lb) y unless [0, 1])  (same)
    simplex                          StickBreakingTransform       SoftmaxTransform
    lower_cholesky                   -                            LowerCholeskyTransform
    positive_(semi)definite          -                            PositiveDefiniteTransform
    corr_cholesky                    CorrCholeskyTransform        (the same)
    cat(cs, dim, lengths), stack     CatTransform / StackTransform of the parts' transforms

A constraint with no registered factory raises NotImplementedError ("Cannot transform
_Boolean constraints"), as PyTorch. ``register(constraint_class_or_instance, factory)`` adds
one (usable as a decorator).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from tgrad.distributions import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from Constraint subclasses to factories ``constraint -> Transform``."""

    def __init__(self) -> None:
        self._registry: dict[type, Callable] = {}

    def register(self, constraint, factory: Callable | None = None):
        """Register ``factory`` for ``constraint`` (a Constraint subclass, or an instance,
        which stands for its class); without ``factory``, a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                               constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: constraints.Constraint) -> transforms.Transform:
        """The transform from unconstrained space onto ``constraint``'s set."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


# positive and nonnegative are instances of greater_than(_eq): PyTorch's registry gives them
# the same exp-then-shift composition (its later registration replaces the plain exp)
@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint):
    lower_is_0 = isinstance(constraint.lower_bound, numbers.Number) and \
        constraint.lower_bound == 0
    upper_is_1 = isinstance(constraint.upper_bound, numbers.Number) and \
        constraint.upper_bound == 1
    if lower_is_0 and upper_is_1:
        return transforms.SigmoidTransform()
    loc = constraint.lower_bound
    scale = constraint.upper_bound - constraint.lower_bound
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(loc, scale)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


@biject_to.register(constraints.cat)
def _biject_to_cat(constraint):
    return transforms.CatTransform([biject_to(c) for c in constraint.cseq], constraint.dim,
                                   constraint.lengths)


@transform_to.register(constraints.cat)
def _transform_to_cat(constraint):
    return transforms.CatTransform([transform_to(c) for c in constraint.cseq],
                                   constraint.dim, constraint.lengths)


@biject_to.register(constraints.stack)
def _biject_to_stack(constraint):
    return transforms.StackTransform([biject_to(c) for c in constraint.cseq], constraint.dim)


@transform_to.register(constraints.stack)
def _transform_to_stack(constraint):
    return transforms.StackTransform([transform_to(c) for c in constraint.cseq],
                                     constraint.dim)
