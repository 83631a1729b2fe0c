"""``torch.distributions.transforms``: invertible maps y = f(x) with log|det df/dx|, for
``TransformedDistribution``.

    ExpTransform            exp;                   ladj = x
    AffineTransform(l, s)   l + s x;               ladj = log|s| (summed over event_dim)
    SigmoidTransform        sigmoid (clamped);     ladj = -softplus(-x) - softplus(x)
    TanhTransform           tanh;                  ladj = 2 (log 2 - x - softplus(-2 x))
    PowerTransform(e)       x^e on x > 0;          ladj = log|e y / x|
    AbsTransform            |x| (not bijective: no sign, so no cdf / icdf through it)
    ComposeTransform(ts)    t_n(...t_1(x)); ladj the sum of the parts' (event dims summed)
    identity_transform      ComposeTransform([])
    SoftplusTransform       log(1 + e^x);          ladj = -softplus(-x)
    IndependentTransform(t, n)  t, its ladj summed over n more rightmost dims
    ReshapeTransform(a, b)  event shape a -> b;    ladj = 0
    SoftmaxTransform        softmax (last dim; not bijective, no ladj)
    StickBreakingTransform  R^K -> simplex of K + 1 (y_i = z_i prod_{j<i} (1 - z_j),
                            z_i = sigmoid(x_i - log(K - i))); ladj = sum(-x' + logsigmoid(x')
                            + log y_i) over i < K, x' = x_i - log(K - i)
    LowerCholeskyTransform  tril(x, -1) + diag(exp(diag x)) (no ladj, as PyTorch)
    PositiveDefiniteTransform  L L^T of the above (no ladj, as PyTorch)
    CorrCholeskyTransform   R^(D(D-1)/2) -> Cholesky factors of correlation matrices (signed
                            stick-breaking of tanh(x) row by row); ladj of x and the strictly
                            lower part of y (the Stan manual's)
    CatTransform(ts, dim, lengths), StackTransform(ts, dim)  ts[i] on the i-th block / slice
    CumulativeDistributionTransform(d)  d.cdf;     ladj = d.log_prob(x)

``biject_to`` / ``transform_to`` (tgrad.distributions.constraint_registry) pick one of these
for a constraint.

``t.inv`` is the inverse transform (``t.inv.inv is t``); ``cache_size=1`` remembers the last
(x, y) pair so that ``t.inv(t(x))`` returns x itself (no round-off).
"""

from __future__ import annotations

import math
import numbers

from tgrad.distributions import constraints
from tgrad.distributions.utils import (
    _finfo,
    broadcast_all,
    tril_matrix_to_vec,
    vec_to_tril_matrix,
)
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import eye, full_like
from tgrad.ops.pointwise_extras import broadcast_shapes
from tgrad.ops.shape import cat, stack
from tgrad.tensor import Tensor

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
           "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
           "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
           "Transform", "identity_transform"]


def _sum_rightmost(value, n: int):
    if n <= 0 or not isinstance(value, Tensor):
        return value
    return value.sum(tuple(range(-n, 0)))


class Transform:
    """An invertible map with its log|det Jacobian| (subclasses define ``_call``,
    ``_inverse``, ``log_abs_det_jacobian``, ``domain``, ``codomain``)."""

    bijective = False
    domain: constraints.Constraint = constraints.real
    codomain: constraints.Constraint = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached = (None, None)
        self._inv = None

    @property
    def event_dim(self) -> int:
        return max(self.domain.event_dim, self.codomain.event_dim)

    @property
    def inv(self) -> Transform:
        inv = self._inv
        if inv is None:
            inv = self._inv = _InverseTransform(self)
        return inv

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached = (x, y)
        return x

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size`` (itself when it already has it)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    @property
    def sign(self):
        """The sign of the Jacobian's determinant (+1, -1, or a tensor of them), defined only
        for bijective transforms: a subclass that is monotone overrides it (PyTorch's
        Transform.sign raises too)."""
        raise NotImplementedError(f"{type(self).__name__} does not define sign (only a "
                                  f"monotone bijection has one; a TransformedDistribution's "
                                  f"cdf / icdf need it)")

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def forward_shape(self, shape: tuple) -> tuple:
        return tuple(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return tuple(shape)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        super().__init__(transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self) -> bool:
        return self._inv.bijective

    @property
    def sign(self) -> int:
        return self._inv.sign

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = Transform.__hash__

    def __repr__(self) -> str:  # PyTorch's
        return f"{type(self).__name__}({self._inv!r})"

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._inv.forward_shape(shape)


def _params_equal(a, b) -> bool:
    """PyTorch's parameter test in PowerTransform / AffineTransform ``__eq__``: two numbers
    compare as numbers, otherwise every element of ``a == b`` (broadcast) must hold."""
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        return a == b
    return bool((a == b).all().item())


class _Stateless(Transform):
    """A transform without parameters: equal to any other of its class (PyTorch's __eq__)."""

    def __eq__(self, other) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class ExpTransform(_Stateless):
    domain, codomain, bijective = constraints.real, constraints.positive, True
    sign = 1

    def _call(self, x):
        return ew.exp(x)

    def _inverse(self, y):
        return ew.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(_Stateless):
    domain, codomain, bijective = constraints.real, constraints.unit_interval, True
    sign = 1

    def _call(self, x):
        info = _finfo(x.dtype)
        return ew.sigmoid(x).clamp(min=float(info.tiny), max=1.0 - float(info.eps))

    def _inverse(self, y):
        info = _finfo(y.dtype)
        y = y.clamp(min=float(info.tiny), max=1.0 - float(info.eps))
        return ew.log(y) - ew.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(_Stateless):
    domain, codomain, bijective = constraints.real, constraints.interval(-1.0, 1.0), True
    sign = 1

    def _call(self, x):
        return ew.tanh(x)

    def _inverse(self, y):
        return 0.5 * (ew.log1p(y) - ew.log1p(-y))  # atanh

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), stable for large |x|
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(_Stateless):
    domain, codomain = constraints.real, constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class PowerTransform(Transform):
    domain, codomain, bijective = constraints.positive, constraints.positive, True

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        # a Python number stays one (1 / exponent exact in float64)
        self.exponent = float(exponent) if isinstance(exponent, numbers.Real) \
            else broadcast_all(exponent)[0]

    @property
    def sign(self):
        if isinstance(self.exponent, float):
            return 1 if self.exponent > 0 else (-1 if self.exponent < 0 else 0)
        return self.exponent.sign()

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            PowerTransform(self.exponent, cache_size=cache_size)

    def __eq__(self, other) -> bool:  # equal exponents (PyTorch's; tensors elementwise)
        return isinstance(other, PowerTransform) and _params_equal(self.exponent,
                                                                   other.exponent)

    __hash__ = Transform.__hash__

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (y * self.exponent / x).abs().log()

    def forward_shape(self, shape):
        # a tensor exponent broadcasts against x (PyTorch's torch.broadcast_shapes)
        return broadcast_shapes(shape, getattr(self.exponent, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class AffineTransform(Transform):
    """y = loc + scale x; ``event_dim`` rightmost dims form one event (their log|scale|
    summed)."""

    bijective = True

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else constraints.independent(
            constraints.real, self._event_dim)

    codomain = domain

    @property
    def event_dim(self) -> int:
        return self._event_dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else (-1 if float(self.scale) < 0 else 0)
        return self.scale.sign()

    def __eq__(self, other) -> bool:
        # equal loc and scale (PyTorch's __eq__, which does not compare event_dim either;
        # a TransformedDistribution's event shape tells the two apart)
        return (isinstance(other, AffineTransform) and _params_equal(self.loc, other.loc)
                and _params_equal(self.scale, other.scale))

    __hash__ = Transform.__hash__

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        if isinstance(self.scale, numbers.Real):
            result = full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        shape = tuple(x.shape)
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.ndim - self._event_dim])
                                    + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(tuple(shape))

    def forward_shape(self, shape):
        # PyTorch's torch.broadcast_shapes, its RuntimeError included
        return broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                getattr(self.scale, "shape", ()))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class ComposeTransform(Transform):
    """t_n(... t_1(x)): ``parts`` applied in order."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size)
        self.parts = list(parts)

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = Transform.__hash__

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            ComposeTransform(self.parts, cache_size=cache_size)

    @property
    def bijective(self) -> bool:
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        dom = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for p in reversed(self.parts):
            event_dim += p.domain.event_dim - p.codomain.event_dim
            event_dim = max(event_dim, p.domain.event_dim)
        if event_dim > dom.event_dim:
            dom = constraints.independent(dom, event_dim - dom.event_dim)
        return dom

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        cod = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for p in self.parts:
            event_dim += p.codomain.event_dim - p.domain.event_dim
            event_dim = max(event_dim, p.codomain.event_dim)
        if event_dim > cod.event_dim:
            cod = constraints.independent(cod, event_dim - cod.event_dim)
        return cod

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inv_call(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    @property
    def inv(self) -> Transform:
        inv = self._inv
        if inv is None:
            inv = self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            inv._inv = self
        return inv

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:  # zeros (not 0 * x: NaN at an infinite x)
            return x.new_zeros(tuple(x.shape))
        event_dim = self.domain.event_dim
        result = 0.0
        for p in self.parts:
            y_part = p(x)
            result = result + _sum_rightmost(p.log_abs_det_jacobian(x, y_part),
                                             event_dim - p.domain.event_dim)
            x = y_part
            event_dim += p.codomain.event_dim - p.domain.event_dim
        return result

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return tuple(shape)

    def __repr__(self) -> str:  # PyTorch's: one part a line
        return (type(self).__name__ + "(\n    " + ",\n    ".join(repr(p) for p in self.parts)
                + "\n)")


identity_transform = ComposeTransform([])


class SoftplusTransform(_Stateless):
    """y = softplus(x) = log(1 + e^x) (linear above x = 20, as F.softplus);
    x = y + log(-expm1(-y)); ladj = log sigmoid(x) = -softplus(-x)."""

    domain, codomain, bijective = constraints.real, constraints.positive, True
    sign = 1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return ew.log(-ew.expm1(-y)) + y

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dims in each
    event: the map is the base's, its ladj is summed over those dims."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    def __eq__(self, other) -> bool:
        return (isinstance(other, IndependentTransform)
                and self.base_transform == other.base_transform
                and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims)

    __hash__ = Transform.__hash__

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """The rightmost dims of shape ``in_shape`` reshaped to ``out_shape`` (the same number
    of elements); unit Jacobian (ladj 0, of the batch shape)."""

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    @staticmethod
    def _swap(shape, old: tuple, new: tuple) -> tuple:
        shape = tuple(shape)
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != old:
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {old}")
        return shape[:cut] + new

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape)


def _clipped_sigmoid(x: Tensor) -> Tensor:
    info = _finfo(x.dtype)
    return ew.sigmoid(x).clamp(min=float(info.tiny), max=1.0 - float(info.eps))


class SoftmaxTransform(_Stateless):
    """Reals (last dim) to the simplex: exp then normalise; inverse log (a pseudo-inverse:
    not bijective, so no ladj, as PyTorch)."""

    domain, codomain = constraints.real_vector, constraints.simplex

    def _call(self, x):
        probs = ew.exp(x - x.max(-1, True)[0])
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return ew.log(y)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape)

    inverse_shape = forward_shape


def _stick_offset(x: Tensor, k: int) -> Tensor:
    """log(k - i) for i = 0..k-1 (the shift that maps x = 0 to the simplex's centre)."""
    return ew.log(float(k + 1) - x.new_ones(k).cumsum(-1))


class StickBreakingTransform(_Stateless):
    """Reals (..., K) to the simplex (..., K + 1) by stick breaking: z_i = sigmoid(x_i -
    log(K - i)), y_i = z_i prod_{j<i} (1 - z_j), y_K = prod_j (1 - z_j). Bijective; ladj of
    the first K coordinates of y: sum_i (-x'_i + logsigmoid(x'_i) + log y_i)."""

    domain, codomain, bijective = constraints.real_vector, constraints.simplex, True

    def _call(self, x):
        z = _clipped_sigmoid(x - _stick_offset(x, x.shape[-1]))
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1.0) * F.pad(z_cumprod, [1, 0], value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        k = y_crop.shape[-1]
        offset = ew.log(float(k + 1) - y.new_ones(k).cumsum(-1))
        sf = (1 - y_crop.cumsum(-1)).clamp(min=float(_finfo(y.dtype).tiny))
        return ew.log(y_crop) - ew.log(sf) + offset

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x, x.shape[-1])
        return (-x + F.logsigmoid(x) + ew.log(y[..., :-1])).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(_Stateless):
    """Square matrices to lower-triangular ones with a positive diagonal: tril(x, -1) +
    diag(exp(diag x)). Not declared bijective and no ladj (PyTorch's)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + ew.exp(x.diagonal(0, -2, -1)).diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + ew.log(y.diagonal(0, -2, -1)).diag_embed()


class PositiveDefiniteTransform(_Stateless):
    """Square matrices to positive-definite ones: L L^T of LowerCholeskyTransform's L;
    inverse through ``linalg.cholesky``. No ladj (PyTorch's)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        lower = LowerCholeskyTransform()(x)
        return lower @ lower.mT

    def _inverse(self, y):
        from tgrad.linalg import cholesky
        return LowerCholeskyTransform().inv(cholesky(y))


class CorrCholeskyTransform(_Stateless):
    """Reals (..., D(D-1)/2) to Cholesky factors (..., D, D) of correlation matrices: r =
    tanh(x) fills the strictly lower triangle row by row, and each row is a signed stick
    breaking, y_ij = r_ij sqrt(prod_{k<j} (1 - r_ik^2)), y_ii = sqrt(prod_{k<i} (1 -
    r_ik^2)), so rows have unit norm. The ladj is of x and the strictly lower part of y:
    1/2 sum log(1 - sum_{k<j} y_ik^2) + sum log(1 - tanh(x)^2) (the Stan manual's)."""

    domain, codomain, bijective = constraints.real_vector, constraints.corr_cholesky, True

    def _call(self, x):
        x = ew.tanh(x)
        eps = float(_finfo(x.dtype).eps)
        r = vec_to_tril_matrix(x.clamp(min=-1 + eps, max=1 - eps), diag=-1)
        z1m_cumprod_sqrt = (1 - r * r).sqrt().cumprod(-1)
        r = r + eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * F.pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1.0)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(-1)
        y_cumsum_shifted = F.pad(y_cumsum[..., :-1], [1, 0], value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(y_cumsum_shifted,
                                                                 diag=-1).sqrt()
        return 0.5 * (ew.log1p(t) - ew.log1p(-t))  # atanh

    def log_abs_det_jacobian(self, x, y):
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick_breaking = 0.5 * ew.log(tril_matrix_to_vec(y1m_cumsum, diag=-2)).sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick_breaking + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d - 1) // 2,)


def _check_dim(name: str, what: str, value: Tensor, dim: int, size: int, need: str) -> None:
    if not -value.dim() <= dim < value.dim():
        raise ValueError(f"{name}: dim {dim} out of range for {what} with {value.dim()} "
                         f"dimensions")
    if value.shape[dim] != size:
        raise ValueError(f"{name}: {what}.size({dim}) = {value.shape[dim]} must equal "
                         f"{need} {size}")


class CatTransform(Transform):
    """``tseq[i]`` on the i-th block (of length ``lengths[i]``, default 1) along ``dim``,
    the results joined as by ``tgrad.cat``; ladj likewise joined (summed when ``dim`` is an
    event dim)."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("CatTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: {len(self.lengths)} lengths for "
                             f"{len(self.transforms)} transforms; pass one per transform")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, v: Tensor, inverse: bool) -> Tensor:
        _check_dim("CatTransform", "the input", v, self.dim, self.length, "the total length")
        out, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            piece = v.narrow(self.dim, start, length)
            out.append(t.inv(piece) if inverse else t(piece))
            start += length
        return cat(out, self.dim)

    def _call(self, x):
        return self._map(x, False)

    def _inverse(self, y):
        return self._map(y, True)

    def log_abs_det_jacobian(self, x, y):
        _check_dim("CatTransform", "x", x, self.dim, self.length, "the total length")
        _check_dim("CatTransform", "y", y, self.dim, self.length, "the total length")
        terms, start = [], 0
        for t, length in zip(self.transforms, self.lengths):
            term = t.log_abs_det_jacobian(x.narrow(self.dim, start, length),
                                          y.narrow(self.dim, start, length))
            if t.event_dim < self.event_dim:
                term = _sum_rightmost(term, self.event_dim - t.event_dim)
            terms.append(term)
            start += length
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + self.event_dim
        return cat(terms, dim) if dim < 0 else sum(terms)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """``tseq[i]`` on the i-th slice along ``dim``, the results joined as by
    ``tgrad.stack``; ladj likewise stacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError("StackTransform: every element of tseq must be a Transform")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            StackTransform(self.transforms, self.dim, cache_size)

    def _slices(self, v: Tensor, what: str) -> list:
        _check_dim("StackTransform", what, v, self.dim, len(self.transforms),
                   "len(transforms)")
        return [v.select(self.dim, i) for i in range(v.shape[self.dim])]

    def _call(self, x):
        return stack([t(s) for s, t in zip(self._slices(x, "the input"), self.transforms)],
                     self.dim)

    def _inverse(self, y):
        return stack([t.inv(s) for s, t in zip(self._slices(y, "the input"),
                                                self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        return stack([t.log_abs_det_jacobian(xs, ys) for xs, ys, t in
                      zip(self._slices(x, "x"), self._slices(y, "y"), self.transforms)],
                     self.dim)

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x) (to the unit interval), x = distribution.icdf(y); ladj =
    distribution.log_prob(x) (the cdf's derivative is the density)."""

    bijective = True
    codomain = constraints.unit_interval
    sign = 1

    def __init__(self, distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
