"""Constraints: the sets a distribution's parameters and values must lie in (PyTorch's
``torch.distributions.constraints``, the subset tgrad's distributions use).

``constraint.check(value)`` returns a bool tensor: of value's shape for an elementwise
constraint (``event_dim == 0``), with the last ``event_dim`` dims reduced away otherwise
(``simplex`` and ``real_vector`` have ``event_dim == 1``). The reprs are PyTorch's, since
they appear in the validation errors (``GreaterThan(lower_bound=0.0)``).
"""

from __future__ import annotations

from typing import Any

from tgrad import dtypes
from tgrad.tensor import Tensor

__all__ = ["Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
           "greater_than", "greater_than_eq", "half_open_interval", "independent",
           "integer_interval", "interval", "is_dependent", "less_than", "lower_cholesky",
           "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
           "nonnegative_integer", "one_hot", "positive_definite", "positive",
           "positive_integer", "positive_semidefinite", "real", "real_vector", "simplex",
           "square", "stack", "symmetric", "unit_interval"]


class Constraint:
    """A region over which a variable is valid. ``is_discrete``: whether the region is a
    countable set; ``event_dim``: how many rightmost dims form one event."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor: whether each event of ``value`` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder for a constraint that depends on other parameters (Uniform's low and
    high): it cannot be checked on its own."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, *, is_discrete: bool = False, event_dim: int = 0) -> _Dependent:
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """True for ``dependent`` constraints (those validation skips)."""
    return isinstance(constraint, _Dependent)


class dependent_property(property, _Dependent):  # noqa: N801  (PyTorch's name)
    """A property whose value is a constraint built from the instance's parameters (e.g.
    Uniform's ``support``); on the class it is a ``dependent`` constraint."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        property.__init__(self, fn)
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, fn):
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)

    def __repr__(self) -> str:
        return "DependentProperty()"  # (PyTorch's class is _DependentProperty)


class _Real(Constraint):
    """The extended real line: anything but NaN."""

    def check(self, value: Tensor) -> Tensor:
        return value == value


class _Boolean(Constraint):
    """{0, 1}."""

    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    """(lower_bound, inf]."""

    def __init__(self, lower_bound: float) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    """[lower_bound, inf]."""

    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class _LessThan(Constraint):
    """[-inf, upper_bound)."""

    def __init__(self, upper_bound: float) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"{self.__class__.__name__[1:]}(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """[lower_bound, upper_bound] (bounds may be tensors, broadcast against the value)."""

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}(lower_bound={self.lower_bound}, "
                f"upper_bound={self.upper_bound})")


class _HalfOpenInterval(_Interval):
    """[lower_bound, upper_bound)."""

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    """The integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerGreaterThan(Constraint):
    """The integers >= lower_bound (PyTorch's IntegerGreaterThan, whose name reads "greater
    than lower_bound - 1")."""

    is_discrete = True

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Tensor) -> Tensor:
        return (value % 1 == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Multinomial(Constraint):
    """Count vectors (the last dim): non-negative entries summing to at most
    ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & (value.sum(-1) <= self.upper_bound)


class _OneHot(Constraint):
    """One-hot vectors (the last dim): entries 0 or 1, summing to 1."""

    is_discrete = True
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _Simplex(Constraint):
    """Vectors (the last dim) of non-negative entries summing to 1 (within 1e-6)."""

    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _IndependentConstraint(Constraint):
    """``base_constraint`` on every element of the last ``reinterpreted_batch_ndims`` dims
    at once: the check is reduced over those dims with all()."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        self.is_discrete = base_constraint.is_discrete
        self.event_dim = base_constraint.event_dim + reinterpreted_batch_ndims

    def check(self, value: Tensor) -> Tensor:
        result = self.base_constraint.check(value)
        n = self.reinterpreted_batch_ndims
        if result.dim() < n:
            raise ValueError(f"Expected value.dim() >= {n} but got {result.dim()}")
        result = result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,))
        return result.all(-1)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__[1:]}({self.base_constraint!r}, "
                f"{self.reinterpreted_batch_ndims})")


class _LowerTriangular(Constraint):
    """Lower-triangular square matrices (the last two dims)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower-triangular square matrices with a positive diagonal."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return lower & (value.diagonal(0, -2, -1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower-triangular with a positive
    diagonal and rows of unit Euclidean norm (within 10 n eps for n columns, PyTorch's
    tolerance)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        from tgrad.distributions.utils import _finfo
        tol = float(_finfo(value.dtype).eps) * value.shape[-1] * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_rows = ((row_norm - 1.0).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit_rows


class _Cat(Constraint):
    """``cseq[i]`` on the i-th block of ``dim`` (block lengths ``lengths``, default 1 each),
    as ``tgrad.cat`` joins them."""

    def __init__(self, cseq: list, dim: int = 0, lengths: list | None = None) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("cat: every element of cseq must be a Constraint")
        self.cseq = list(cseq)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"cat: {len(self.lengths)} lengths for {len(self.cseq)} "
                             f"constraints; pass one length per constraint")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        from tgrad.ops.shape import cat as cat_tensors
        if not -value.dim() <= self.dim < value.dim():
            raise ValueError(f"cat: dim {self.dim} out of range for a value of shape "
                             f"{tuple(value.shape)}")
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return cat_tensors(checks, self.dim)


class _Stack(Constraint):
    """``cseq[i]`` on the i-th slice of ``dim``, as ``tgrad.stack`` joins them."""

    def __init__(self, cseq: list, dim: int = 0) -> None:
        if not all(isinstance(c, Constraint) for c in cseq):
            raise TypeError("stack: every element of cseq must be a Constraint")
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self) -> bool:
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value: Tensor) -> Tensor:
        from tgrad.ops.shape import stack as stack_tensors
        if not -value.dim() <= self.dim < value.dim():
            raise ValueError(f"stack: dim {self.dim} out of range for a value of shape "
                             f"{tuple(value.shape)}")
        vs = [value.select(self.dim, i) for i in range(value.shape[self.dim])]
        return stack_tensors([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


class _PositiveDefinite(Constraint):
    """Symmetric positive-definite square matrices: symmetric within atol 1e-6, and a
    Cholesky factorisation that completes (``linalg.cholesky_ex``'s info == 0)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        from tgrad.linalg import cholesky_ex
        from tgrad.ops.composite import isclose
        if value.shape[-1] != value.shape[-2]:  # not square: no matrix qualifies
            return value.new_zeros(tuple(value.shape[:-2])).bool()
        sym = isclose(value, value.mT, atol=1e-6).reshape(tuple(value.shape[:-2]) + (-1,))
        sym = sym.all(-1)
        if not bool(sym.all()):
            return sym
        return cholesky_ex(value.detach()).info == 0


class _Square(Constraint):
    """Square matrices: one bool per matrix of the batch."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        from tgrad.ops.creation import full
        return full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                    dtype=dtypes.bool_, device=value.device)


class _Symmetric(_Square):
    """Symmetric square matrices (within atol 1e-6 of the transpose)."""

    def check(self, value: Tensor) -> Tensor:
        from tgrad.ops.composite import isclose
        square = super().check(value)
        if not bool(square.all()):
            return square
        return isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    """Symmetric positive-semidefinite matrices: symmetric, all eigenvalues >= 0."""

    def check(self, value: Tensor) -> Tensor:
        from tgrad.linalg import eigvalsh
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return (eigvalsh(value.detach()) >= 0).all(-1)


class MixtureSameFamilyConstraint(Constraint):
    """The support of a MixtureSameFamily: ``base_constraint`` (the component's) checked
    with the mixture dimension added back, all components agreeing."""

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise AssertionError("base_constraint must be a Constraint, got "
                                 f"{type(base_constraint).__name__}")
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Tensor) -> Tensor:
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        result = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        keep = value.dim() - self.event_dim
        return result.reshape(tuple(result.shape[:keep]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


dependent = _Dependent()
independent = _IndependentConstraint
boolean = _Boolean()
real = _Real()
real_vector = _IndependentConstraint(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
simplex = _Simplex()
nonnegative_integer = _IntegerGreaterThan(0)
one_hot = _OneHot()
multinomial = _Multinomial
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
positive_integer = _IntegerGreaterThan(1)
positive_semidefinite = _PositiveSemidefinite()
square = _Square()
symmetric = _Symmetric()
corr_cholesky = _CorrCholesky()
cat = _Cat
stack = _Stack
