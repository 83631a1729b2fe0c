"""Modified Bessel functions of the first kind: i0, i1 and their exponentially scaled forms
i0e = e^-|x| i0, i1e = e^-|x| i1 (torch.i0 and torch.special's names), composites of
tgrad's elementwise ops (every backend), float16/bfloat16 computed in float32.

Maths, for a = |x| (i0 is even, i1 odd):
- a < 20: the power series I_nu(a) = (a/2)^nu sum_k t^k / (k! (k + nu)!), t = a^2 / 4
  (48 terms by Horner; positive terms, so no cancellation);
- a >= 20: the asymptotic series e^-a I_nu(a) = (2 pi a)^-1/2 sum_k c_k a^-k,
  c_k = prod_{j<=k} ((2j - 1)^2 - 4 nu^2) / (8 j) (25 terms; the terms shrink until
  k ~ 2a, and the dropped e^-2a part is below 1e-17).
Relative error ~1e-15 in float64 everywhere (checked against mpmath in the tests).
i0 and i1 are e^(a/2) (e^(a/2) e^-a I) above 20, so they overflow only where the function does
(a ~ 713.98). At +-inf i0 and i1 give NaN, as NumPy's i0 and PyTorch's do (0 inf inf).

Derivatives (the backwards, in these same ops, so higher orders work):
    i0' = i1;  i1' = i0 - i1 / x (1/2 at 0);  i0e' = i1e - sign(x) i0e;
    i1e' = i0e - i1e (sign(x) + 1 / x) (1/2 at 0).
i0e' is computed as sign(x) e^-a (I1(a) - I0(a)), for a >= 20 by the asymptotic series of
the difference (coefficients c1_k - c0_k), as i1e - i0e cancels there; i1e' uses it too.
"""

from __future__ import annotations

import math
from fractions import Fraction

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import apply_float_unary, tensor_method, wrap
from tgrad.ops.inplace import inplace_method
from tgrad.ops.special import _horner
from tgrad.tensor import Tensor

__all__ = ["i0"]

_SWITCH = 20.0
_SERIES = {nu: [float(Fraction(1, math.factorial(k) * math.factorial(k + nu)))
                for k in range(48)] for nu in (0, 1)}


def _asymptotic_coefs(nu: int, terms: int = 25, exact: bool = False) -> list:
    out, c = [], Fraction(1)
    for j in range(1, terms + 1):
        out.append(c if exact else float(c))
        c = c * ((2 * j - 1) ** 2 - 4 * nu * nu) / (8 * j)
    return out


_ASYMPTOTIC = {nu: _asymptotic_coefs(nu) for nu in (0, 1)}
# e^-a (I1(a) - I0(a)) = (2 pi a)^-1/2 sum_k (c1_k - c0_k) a^-k: the difference of the
# coefficients (exact in Fractions; the first is 0), so the difference has no cancellation
_ASYMPTOTIC_DIFF = [float(c1 - c0) for c1, c0 in
                    zip(_asymptotic_coefs(1, exact=True), _asymptotic_coefs(0, exact=True))]


def _parts(nu: int, x: Tensor) -> tuple:
    """(a, big, series, scaled): a = |x|; where a < 20 ``series`` = I_nu(a), where a >= 20
    ``scaled`` = e^-a I_nu(a) (each branch's other elements are finite garbage)."""
    a = ew.abs(x)
    big = ew.ge(a, _SWITCH)
    ab = ew.where(big, a, _SWITCH)
    # (2 pi a)^-1/2 as a^-1/2 (2 pi)^-1/2: the product 2 pi a would overflow past ~2.9e307
    # (float32: 5.4e37) and its rsqrt give 0 there
    scaled = _horner(_ASYMPTOTIC[nu], 1.0 / ab) * (ew.rsqrt(ab) * (1.0 / math.sqrt(2 * math.pi)))
    small = ew.where(big, 0.0, a)
    series = _horner(_SERIES[nu], small * small * 0.25)
    if nu == 1:
        series = series * small * 0.5
    return a, big, series, scaled


def _on_cpu(x: Tensor) -> bool:
    """Whether the NumPy forms (tgrad.backends._numpy_bessel_i: the same operations per
    element, each branch on its own elements; the same bits) compute x's values."""
    return x.device.type == "cpu" and x.dtype in (dtypes.float32, dtypes.float64)


def _unscaled(nu: int, x: Tensor) -> Tensor:
    if _on_cpu(x):
        from tgrad.backends import _numpy_bessel_i
        return wrap(_numpy_bessel_i.unscaled(nu, x._data), x.device)
    a, big, series, scaled = _parts(nu, x)
    half = ew.exp(ew.where(big, a, 0.0) * 0.5)
    out = ew.where(big, scaled * half * half, series)
    return out * ew.sign(x) if nu == 1 else out


def _scaled(nu: int, x: Tensor) -> Tensor:
    if _on_cpu(x):
        from tgrad.backends import _numpy_bessel_i
        return wrap(_numpy_bessel_i.scaled(nu, x._data), x.device)
    a, big, series, scaled = _parts(nu, x)
    out = ew.where(big, scaled, series * ew.exp(-ew.where(big, 0.0, a)))
    return out * ew.sign(x) if nu == 1 else out


def _scaled_parts(x: Tensor, with_i1e: bool) -> tuple:
    """(i0e'(x), i1e(x) or None) from shared series, with i0e'(x) = i1e(x) - sign(x) i0e(x)
    = sign(x) e^-a (I1(a) - I0(a)), a = |x|: for a >= 20 by the asymptotic series of the
    difference (``_ASYMPTOTIC_DIFF``), ~ -(2 pi a)^-1/2 / (2a), where i1e - i0e cancelled
    (relative error ~2a eps: 4e-6 at 1e10 in float64); below 20 the two power series'
    difference (cancellation <= 40 eps)."""
    if _on_cpu(x):
        from tgrad.backends import _numpy_bessel_i
        d0, y = _numpy_bessel_i.scaled_parts(x._data, with_i1e)
        return wrap(d0, x.device), None if y is None else wrap(y, x.device)
    a = ew.abs(x)
    big = ew.ge(a, _SWITCH)
    ab = ew.where(big, a, _SWITCH)
    rs = ew.rsqrt(ab) * (1.0 / math.sqrt(2 * math.pi))
    small = ew.where(big, 0.0, a)
    t = small * small * 0.25
    s1 = _horner(_SERIES[1], t) * small * 0.5
    scale = ew.exp(-small)
    sign = ew.sign(x)
    d0 = ew.where(big, _horner(_ASYMPTOTIC_DIFF, 1.0 / ab) * rs,
                  (s1 - _horner(_SERIES[0], t)) * scale) * sign
    if not with_i1e:
        return d0, None
    return d0, ew.where(big, _horner(_ASYMPTOTIC[1], 1.0 / ab) * rs, s1 * scale) * sign


class _I0ePrime(Function):
    """y = i0e'(x) (``_scaled_parts``), i0e's derivative;  dx = g (i1e'(x) - sign(x)
    i0e'(x)) (sign's derivative 0; 1/2 at 0, from i1e'(0))."""

    node_name = "SpecialI0EBackwardBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _scaled_parts(x, False)[0]

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (_I1ePrime.apply(x) - ew.sign(x) * _I0ePrime.apply(x))


class _I1ePrime(Function):
    """y = i1e'(x) = i0e - i1e (sign(x) + 1 / x) = -sign(x) i0e'(x) - i1e(x) / x (1/2 at
    0): i0e - sign(x) i1e as -sign(x) i0e'(x), without its cancellation for large |x| (what
    is left loses one bit: ~ -i1e / (2x)); one pass of shared series (``_scaled_parts``).
    dx = g (-sign(x) i0e''(x) - (i1e'(x) - i1e(x) / x) / x), 0 at x = 0 (the old rule's
    constant there), i0e'' = i1e' - sign(x) i0e'."""

    node_name = "SpecialI1EBackwardBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        d0, y = _scaled_parts(x, True)
        zero, ratio = _over_x_at_zero(y, x)
        return ew.where(zero, 0.5, -ew.sign(x) * d0 - ratio)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        sign = ew.sign(x)
        d1 = _I1ePrime.apply(x)
        zero, ratio = _over_x_at_zero(I1e.apply(x), x)
        _, inner = _over_x_at_zero(d1 - ratio, x)
        dd = -sign * (d1 - sign * _I0ePrime.apply(x)) - inner
        return g * ew.where(zero, 0.0, dd)


def _over_x_at_zero(num: Tensor, x: Tensor) -> tuple:
    """(x == 0, num / x with x == 0 replaced by 1)."""
    zero = ew.eq(x, 0.0)
    return zero, num / ew.where(zero, 1.0, x)


def _forward(nu: int, scaled: bool):
    """The forward of the Function for I_nu (``scaled``: e^-|x| I_nu); it saves x."""
    value = _scaled if scaled else _unscaled

    def forward(ctx, x):
        ctx.save_for_backward(x)
        return value(nu, x)
    return staticmethod(forward)


class I0(Function):
    """y = I0(x);  dx = g I1(x)."""

    node_name = "I0Backward0"

    forward = _forward(0, False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * I1.apply(x)


class I1(Function):
    """y = I1(x);  dx = g (I0(x) - I1(x) / x), g / 2 at 0."""

    node_name = "SpecialI1Backward0"

    forward = _forward(1, False)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        zero, ratio = _over_x_at_zero(I1.apply(x), x)
        return g * ew.where(zero, 0.5, I0.apply(x) - ratio)


class I0e(Function):
    """y = e^-|x| I0(x);  dx = g (I1e(x) - sign(x) I0e(x)), the difference computed as one
    (``_I0ePrime``: no cancellation for large |x|)."""

    node_name = "SpecialI0EBackward0"

    forward = _forward(0, True)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _I0ePrime.apply(x)


class I1e(Function):
    """y = e^-|x| I1(x);  dx = g (I0e(x) - I1e(x) (sign(x) + 1 / x)), g / 2 at 0, with
    I0e - sign(x) I1e as -sign(x) i0e'(x) (see ``_I1ePrime``)."""

    node_name = "SpecialI1EBackward0"

    forward = _forward(1, True)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _I1ePrime.apply(x)


@tensor_method("i0")
def i0(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 0, elementwise (any shape);
    NaN at +-inf (NumPy's and PyTorch's value). dx = i1(x)."""
    return apply_float_unary(I0, "i0", input)


def i1(input: Tensor) -> Tensor:  # noqa: A002
    """The modified Bessel function of the first kind of order 1 (odd), elementwise; NaN at
    +-inf (as PyTorch). dx = i0(x) - i1(x) / x."""
    return apply_float_unary(I1, "i1", input)


def i0e(input: Tensor) -> Tensor:  # noqa: A002
    """e^-|x| i0(x), elementwise (0 at +-inf)."""
    return apply_float_unary(I0e, "i0e", input)


def i1e(input: Tensor) -> Tensor:  # noqa: A002
    """e^-|x| i1(x), elementwise (+-0 at +-inf)."""
    return apply_float_unary(I1e, "i1e", input)


inplace_method("i0_", i0)
