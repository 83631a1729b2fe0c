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

``t.inv`` is the inverse transform (``t.inv.inv is t``); ``cache_size=1`` remembers the last
(x, y) pair so that ``t.inv(t(x))`` returns x itself (no round-off).
"""

from __future__ import annotations

import math
import numbers

from tgrad.distributions import constraints
from tgrad.distributions.utils import _finfo, broadcast_all
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import full_like
from tgrad.tensor import Tensor

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform",
           "TanhTransform", "PowerTransform", "AbsTransform", "ComposeTransform",
           "identity_transform"]


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

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: tuple) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: tuple) -> tuple:
        return self._inv.forward_shape(shape)


class ExpTransform(Transform):
    domain, codomain, bijective = constraints.real, constraints.positive, True
    sign = 1

    def _call(self, x):
        return ew.exp(x)

    def _inverse(self, y):
        return ew.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
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


class TanhTransform(Transform):
    domain, codomain, bijective = constraints.real, constraints.interval(-1.0, 1.0), True
    sign = 1

    def _call(self, x):
        return ew.tanh(x)

    def _inverse(self, y):
        return 0.5 * (ew.log1p(y) - ew.log1p(-y))  # atanh

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), stable for large |x|
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
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

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (y * self.exponent / x).abs().log()


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
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else (-1 if float(self.scale) < 0 else 0)
        return self.scale.sign()

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
        return result.expand(*shape)

    def forward_shape(self, shape):
        return tuple(_broadcast_shape(shape, getattr(self.loc, "shape", ()),
                                      getattr(self.scale, "shape", ())))

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


def _broadcast_shape(*shapes) -> tuple:
    import numpy as np
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


class ComposeTransform(Transform):
    """t_n(... t_1(x)): ``parts`` applied in order."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.parts = list(parts)

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
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return 0.0 * x
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

    def __repr__(self) -> str:
        return "ComposeTransform(" + ", ".join(repr(p) for p in self.parts) + ")"


identity_transform = ComposeTransform([])
