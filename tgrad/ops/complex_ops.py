"""Complex-number ops (CPU only): real/imag and view_as_real/view_as_complex (views sharing
storage, as PyTorch's), conj (materialised: tgrad has no lazy conjugate bit), angle, sgn,
complex(real, imag), polar(abs, angle).

Gradients follow PyTorch's convention for complex numbers: the gradient of a real loss L
with respect to z = x + iy is dL/dx + i dL/dy (twice the conjugate Wirtinger derivative
dL/d(conj z)), the direction of steepest ascent; a holomorphic f(z) passes g * conj(f'(z))
back. A real input of an op computed in complex gets the real part of its gradient (the
engine takes it).
"""

from __future__ import annotations

import builtins

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.ops._common import (
    backend_of,
    broadcast_or_raise,
    make_view,
    register_op,
    require_tensor,
    same_device,
    tensor_method,
    view_apply,
    wrap,
)
from tgrad.tensor import Tensor

__all__ = ["view_as_real", "view_as_complex", "complex", "polar"]


def require_complex(op: str, x: Tensor) -> None:
    if not x.dtype.is_complex:
        raise RuntimeError(f"{op} is only supported for complex tensors (got {x.dtype}); "
                           f"make one with tgrad.complex(real, imag) or .to(tgrad.complex64)")


def no_complex(op: str, x, what: str | None = None) -> None:
    """PyTorch's NotImplementedError for an op without complex support (orderings,
    rounding, clamping...)."""
    if isinstance(x, Tensor) and x.dtype.is_complex:
        raise NotImplementedError(what or f"\"{op}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[x.dtype]}': complex numbers have "
                                  f"no order; apply it to .abs(), .real or .imag instead")


def conj_of(v):
    """conj(v) for a complex tensor or number; anything else unchanged (the conjugate of
    a real number is itself). Differentiable."""
    if isinstance(v, Tensor):
        return Conj.apply(v) if v.dtype.is_complex else v
    if isinstance(v, (builtins.complex, np.complexfloating)):
        return v.conjugate()
    return v


# ------------------------------------------------------------------------- views
def _part(x: Tensor, arr, shape: tuple = (), last: tuple = ()):
    """``arr`` (x's real or imaginary parts, maybe with a trailing ``shape`` of size-``last``
    strides) with PyTorch's strides when empty: x's own, doubled, where NumPy zeroes them
    (an empty array's .real)."""
    if arr.size == 0 and isinstance(arr, np.ndarray):
        strides = tuple(2 * s * arr.itemsize for s in x.stride()) + last
        arr = np.lib.stride_tricks.as_strided(arr, arr.shape[:x.ndim] + shape, strides)
    return arr


class Real(Function):
    """y = Re z (a view of the real parts);  dz = g + 0i."""

    name = "real"
    node_name = "RealBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.dtype = x.dtype
        return make_view(x, _part(x, x._data.real))

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.dtype)


class Imag(Function):
    """y = Im z (a view of the imaginary parts);  dz = 0 + i g."""

    name = "imag"
    node_name = "ImagBackward0"

    @staticmethod
    def forward(ctx, x):
        return make_view(x, _part(x, x._data.imag))

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros_like
        return Complex.apply(zeros_like(g), g)


class ViewAsReal(Function):
    """(..., ) complex -> (..., 2) real [Re, Im] (a view);  dz = g[..., 0] + i g[..., 1]."""

    name = "view_as_real"
    node_name = "ViewAsRealBackward0"

    @staticmethod
    def forward(ctx, x):
        re = x._data.real
        half = re.itemsize
        arr = np.lib.stride_tricks.as_strided(re, re.shape + (2,), re.strides + (half,))
        return make_view(x, _part(x, arr, (2,), (half,)))

    @staticmethod
    def backward(ctx, g):
        return Complex.apply(g[..., 0], g[..., 1])


class ViewAsComplex(Function):
    """(..., 2) real -> (...) complex (a view);  dx = view_as_real(g)."""

    name = "view_as_complex"
    node_name = "ViewAsComplexBackward0"

    @staticmethod
    def forward(ctx, x):
        data = x._data
        cdt = dtypes.to_complex(x.dtype).np
        # the complex elements start at x's first float, strides (in bytes) unchanged
        arr = backend_of(x).strided_memory(data, x._storage.root, 0, data.shape[:-1], cdt,
                                           data.strides[:-1])
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


for _c in (Real, Imag, ViewAsReal, ViewAsComplex):
    register_op(_c)


def real(input: Tensor) -> Tensor:  # noqa: A002
    """The real part: a view of a complex tensor (writes go through), ``input`` itself for
    a real one."""
    require_tensor("real", input)
    if not input.dtype.is_complex:
        return input
    return view_apply(Real, input)


def imag(input: Tensor) -> Tensor:  # noqa: A002
    """The imaginary part of a complex tensor (a view); real tensors raise PyTorch's
    error."""
    require_tensor("imag", input)
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return view_apply(Imag, input)


@tensor_method("view_as_real")
def view_as_real(input: Tensor) -> Tensor:  # noqa: A002
    """A complex tensor of shape S as a real one of shape S + (2,) (real, imaginary), in
    the same storage (strides doubled, last stride 1)."""
    require_tensor("view_as_real", input)
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return view_apply(ViewAsReal, input)


@tensor_method("view_as_complex")
@autocast_policy(None, cpu="fp32")
def view_as_complex(input: Tensor) -> Tensor:  # noqa: A002
    """A float32/float64 tensor of shape S + (2,) as a complex64/complex128 one of shape S
    in the same storage; the last dim must have size 2 and stride 1, the other strides and
    the storage offset must be even (PyTorch's errors)."""
    require_tensor("view_as_complex", input)
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: "
                           f"{dtypes.SCALAR_TYPE_NAMES[input.dtype]}")
    dtypes.check_complex_device("view_as_complex", dtypes.to_complex(input.dtype), input.device)
    if input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    st = input.stride()
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s, n in zip(st[:-1], input.shape[:-1]) if n != 1):  # (PyTorch skips
        # a size-1 dim: its stride is never stepped)
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return view_apply(ViewAsComplex, input)


# ------------------------------------------------------------------------- conj, angle
class Conj(Function):
    """y = conj(z) (a new tensor: tgrad has no lazy conjugate bit);  dz = conj(g)."""

    name = "conj"
    node_name = "ConjBackward0"

    @staticmethod
    def forward(ctx, x):
        return wrap(np.asarray(np.conjugate(x._data)), x.device)  # (0-d: an array)

    @staticmethod
    def backward(ctx, g):
        return Conj.apply(g)


class ComplexAngle(Function):
    """y = arg z in (-pi, pi] (real);  dz = g i z / |z|^2, 0 at z = 0 (PyTorch's)."""

    name = "angle"
    node_name = "AngleBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return wrap(np.asarray(np.angle(x._data)), x.device)  # (0-d: not a NumPy scalar)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops import elementwise as ew
        (x,) = ctx.saved_tensors
        r2 = ew.square(ew.abs(x))
        safe = ew.where(ew.eq(r2, 0.0), 1.0, r2)
        return ew.where(ew.eq(r2, 0.0), 0.0, g * x * 1j / safe)


class Complex(Function):
    """z = re + i im (complex of the parts' float width);  dre = Re g, dim = Im g."""

    name = "complex"
    node_name = "ComplexBackward0"

    @staticmethod
    def forward(ctx, re, im):
        dt = dtypes.to_complex(re.dtype)
        out = np.empty(np.broadcast_shapes(re.shape, im.shape), dt.np)
        out.real, out.imag = re._data, im._data
        return wrap(out, re.device)

    @staticmethod
    def backward(ctx, g):
        return real(g), imag(g)


for _c in (Conj, ComplexAngle, Complex):
    register_op(_c)


def complex_conj(input: Tensor) -> Tensor:  # noqa: A002
    """The complex conjugate (a new tensor; real tensors are returned as they are)."""
    require_tensor("conj", input)
    return Conj.apply(input) if input.dtype.is_complex else input


def complex_angle(input: Tensor) -> Tensor:  # noqa: A002
    return ComplexAngle.apply(input)


def complex_sgn(input: Tensor) -> Tensor:  # noqa: A002
    """z / |z|, 0 at 0 (differentiable: composed of tgrad ops, the division guarded)."""
    from tgrad.ops import elementwise as ew
    r = ew.abs(input)
    zero = ew.eq(r, 0.0)
    return ew.where(zero, 0.0, input / ew.where(zero, 1.0, r))


def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """``real + i imag``: two float32 (complex64) or float64 (complex128) tensors of one
    dtype, broadcast (PyTorch's errors for other dtypes)."""
    require_tensor("complex", real, "real", 1)
    require_tensor("complex", imag, "imag", 2)
    for t in (real, imag):
        if t.dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
            raise RuntimeError(f"complex: Expected both inputs to be Half, Float or Double "
                               f"tensors but got {dtypes.SCALAR_TYPE_NAMES[real.dtype]} and "
                               f"{dtypes.SCALAR_TYPE_NAMES[imag.dtype]}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"complex: Expected object of scalar type "
                           f"{dtypes.SCALAR_TYPE_NAMES[real.dtype]} but got scalar type "
                           f"{dtypes.SCALAR_TYPE_NAMES[imag.dtype]} for second argument")
    if real.dtype is dtypes.float16:
        raise RuntimeError("complex: float16 parts would make complex32, which tgrad does not "
                           "have; convert them with .float() first")
    dev = same_device("complex", real, imag)
    dtypes.check_complex_device("complex", dtypes.to_complex(real.dtype), dev)
    broadcast_or_raise("complex", real.shape, imag.shape)  # (NumPy's ValueError leaked)
    return Complex.apply(real, imag)


@autocast_policy(None, cpu="fp32")
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    """``abs * (cos(angle) + i sin(angle))`` (complex(abs cos angle, abs sin angle):
    differentiable through those ops)."""
    from tgrad.ops import elementwise as ew
    require_tensor("polar", abs, "abs", 1)
    require_tensor("polar", angle, "angle", 2)
    if abs.dtype is angle.dtype is dtypes.float16:  # (PyTorch's ComplexHalf; tgrad has none)
        raise NotImplementedError("polar: float16 parts would make complex32, which tgrad does "
                                  "not have; convert them with .float() first (\"polar_cpu\" "
                                  "not implemented for 'Half')")
    if abs.dtype is not angle.dtype or abs.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"polar: Expected both inputs to be Float or Double tensors but "
                           f"got {dtypes.SCALAR_TYPE_NAMES[abs.dtype]} and "
                           f"{dtypes.SCALAR_TYPE_NAMES[angle.dtype]}")
    return complex(abs * ew.cos(angle), abs * ew.sin(angle))

