"""Inverse hyperbolic functions, composed of elementwise primitives (no kernel of their own;
they run wherever log1p/sqrt/where do), each a Function with its own backward:

- ``asinh(x)`` = sign(x) log1p(a + a^2 / (1 + sqrt(1 + a^2))), a = |x| (exact for tiny x);
  log(a) + log 2 once a > 2^28 (where a^2 would lose the 1, and overflow later);
  d/dx = 1 / sqrt(x^2 + 1);
- ``acosh(x)`` = log1p(t + sqrt(t (x + 1))), t = x - 1 (exact near 1); log(x) + log 2 once
  x > 2^28; NaN below 1;  d/dx = 1 / sqrt(x^2 - 1) (inf at 1);
- ``atanh(x)`` = sign(x) log1p(2a / (1 - a)) / 2, a = |x|; +-inf at +-1, NaN beyond;
  d/dx = 1 / (1 - x^2).

The sign is applied with copysign, so -0.0 maps to -0.0 as in NumPy. Integer inputs are
computed in the default float dtype; float16/bfloat16 in float32, rounded once. Complex
inputs go through the complex asin/acos/atan (see ``_complex_asinh``). PyTorch's
``arcsinh``/``arccosh``/``arctanh`` name the same functions.
"""

from __future__ import annotations

import math

from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import apply_float_unary, route_sparse, tensor_method
from tgrad.ops.complex_ops import complex as complex_
from tgrad.ops.complex_ops import conj_of
from tgrad.ops.inplace import inplace_method
from tgrad.ops.logmath import copysign, signbit
from tgrad.tensor import Tensor

__all__ = ["asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh"]

_LARGE = 2.0 ** 28  # beyond it x^2 + 1 == x^2 in float64: use log(2x)
_LOG2 = math.log(2.0)


def _large_log(a: Tensor, large: Tensor) -> Tensor:
    """log(a) + log 2 where ``large``; a finite placeholder elsewhere."""
    return ew.log(ew.where(large, a, 1.0)) + _LOG2


class Asinh(Function):
    node_name = "AsinhBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = ew.abs(x)
        large = ew.gt(a, _LARGE)
        small = ew.where(large, 0.0, a)  # keeps a^2 finite in the branch not taken
        near = ew.log1p(small + small * small / (1.0 + ew.sqrt(1.0 + small * small)))
        return copysign(ew.where(large, _large_log(a, large), near), x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ew.rsqrt(x * x + 1.0)


class Acosh(Function):
    node_name = "AcoshBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        large = ew.gt(x, _LARGE)
        small = ew.where(large, 1.0, x)
        t = small - 1.0
        near = ew.log1p(t + ew.sqrt(t * (small + 1.0)))
        near = ew.where(ew.lt(small, 1.0), math.nan, near)  # (below -1 t (x + 1) is positive)
        return ew.where(large, _large_log(x, large), near)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ew.rsqrt(x * x - 1.0)


class Atanh(Function):
    node_name = "AtanhBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = ew.abs(x)
        return copysign(ew.log1p(2.0 * a / (1.0 - a)) * 0.5, x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g / (1.0 - x * x)


# complex z (principal branches, as PyTorch's std:: functions), through the complex asin,
# acos and atan (differentiable, so the gradients are theirs: conj(f'(z)) g):
#   asinh(z) = -i asin(i z),  atanh(z) = -i atan(i z),
#   acosh(z) = i w where Im w has its sign bit set (Im z >= +0) or is NaN, else -i w,
#   w = acos(z) (the branch with Re >= 0 and Im of Im z's sign, signed zeros included;
#   acosh(+-0 + NaN i) = NaN + i pi/2, C99's and NumPy's, from acos's pi/2 + NaN i); its own node
#   with PyTorch's rule g conj(rsqrt(z + 1) rsqrt(z - 1)), where z - 1 gets a +0 imaginary
#   part for real z of either zero sign, as PyTorch's arithmetic gives it: on the cut
#   (-inf, 1) the gradient is the one from above for 0.0 and -0.0 alike (PyTorch's).
# i z is formed from the parts (-Im z + i Re z), so infinities give no inf * 0 NaNs.
def _times_i(z: Tensor, sign: float) -> Tensor:
    """(sign i) z from z's parts."""
    return complex_(z.imag * -sign, z.real * sign)


def _complex_asinh(z: Tensor) -> Tensor:
    return _times_i(ew.asin(_times_i(z, 1.0)), -1.0)


def _complex_atanh(z: Tensor) -> Tensor:
    return _times_i(ew.atan(_times_i(z, 1.0)), -1.0)


class _ComplexAcosh(Function):
    node_name = "AcoshBackward0"

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        w = ew.acos(z)
        wi = w.imag
        return ew.where(signbit(wi) | ew.isnan(wi), _times_i(w, 1.0), _times_i(w, -1.0))

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        # + (-1.0), not - 1.0: -0.0 + 0.0 is +0.0, so a real z's z - 1 has Im +0 (PyTorch's)
        return g * conj_of(ew.rsqrt(z + 1.0) * ew.rsqrt(z + (-1.0)))


def _complex_acosh(z: Tensor) -> Tensor:
    return _ComplexAcosh.apply(z)


@tensor_method("asinh", "arcsinh")
def asinh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic sine, elementwise;  d/dx = 1 / sqrt(x^2 + 1)."""
    try:
        if isinstance(input, Tensor) and input.dtype.is_complex:
            return _complex_asinh(input)
        return apply_float_unary(Asinh, "asinh", input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("asinh", e, input)


@tensor_method("acosh", "arccosh")
def acosh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic cosine, elementwise (NaN below 1);  d/dx = 1 / sqrt(x^2 - 1)."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return _complex_acosh(input)
    return apply_float_unary(Acosh, "acosh", input)


@tensor_method("atanh", "arctanh")
def atanh(input: Tensor) -> Tensor:  # noqa: A002
    """Inverse hyperbolic tangent, elementwise (+-inf at +-1, NaN beyond);
    d/dx = 1 / (1 - x^2)."""
    try:
        if isinstance(input, Tensor) and input.dtype.is_complex:
            return _complex_atanh(input)
        return apply_float_unary(Atanh, "atanh", input)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("atanh", e, input)


arcsinh, arccosh, arctanh = asinh, acosh, atanh
for _name, _fn in (("asinh", asinh), ("acosh", acosh), ("atanh", atanh)):
    inplace_method(_name + "_", _fn)
    inplace_method("arc" + _name[1:] + "_", _fn)
