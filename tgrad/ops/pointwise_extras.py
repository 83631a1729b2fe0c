"""Small pointwise composites and broadcasting helpers PyTorch code reaches for:

- ``deg2rad`` / ``rad2deg``: x * (pi / 180) and x * (180 / pi) (integers computed in the
  default float dtype);
- ``ldexp(input, other)`` = input * 2^other, differentiable in both (d/d other =
  input 2^other log 2);
- ``heaviside(input, values)``: 0 where x < 0, ``values`` where x == 0, 1 where x > 0, and
  NaN where x is NaN (NumPy's rule; PyTorch gives 0 there); not differentiable;
- ``isposinf`` / ``isneginf``: bool masks;
- ``broadcast_shapes(*shapes)`` and ``broadcast_tensors(*tensors)`` (expanded views);
- ``diagflat(input, offset)``: the flattened input on a diagonal of a square matrix;
- ``nextafter(input, other)``: the next float after input towards other (host NumPy; not
  differentiable), ``Tensor.nextafter_``;
- ``frexp(input)``: (mantissa, exponent) with input = mantissa 2^exponent, |mantissa| in
  [0.5, 1), exponent int32 (host NumPy); d mantissa / d input = 2^-exponent.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    broadcast_or_raise,
    check_operands,
    float_input,
    promoted_float_dtype,
    require_tensor,
    route_sparse,
    tensor_method,
    wrap,
)
from tgrad.ops.inplace import inplace_method
from tgrad.ops.products import diag
from tgrad.tensor import Tensor, _int_arg

__all__ = ["deg2rad", "rad2deg", "ldexp", "heaviside", "isposinf", "isneginf",
           "broadcast_shapes", "broadcast_tensors", "diagflat", "nextafter", "frexp"]


def _as_float(op: str, input: Tensor) -> Tensor:  # noqa: A002
    """input, an integer one in the default float dtype (halves stay: one multiply)."""
    require_tensor(op, input)
    if input.dtype.is_complex:  # PyTorch's error
        raise RuntimeError(f"{op} is not supported for complex tensors.")
    return input if input.dtype.is_floating_point else float_input(op, input)[0]


@tensor_method("deg2rad")
def deg2rad(input: Tensor) -> Tensor:  # noqa: A002
    """Degrees to radians: x * (pi / 180)."""
    # a sparse COO tensor: its own op (coalesced). Tested up front, not in the shared except
    # form (_common.route_sparse): the body runs on the sparse operators without raising
    # (s * c, uncoalesced). One attribute read.
    if getattr(input, "_sparse", False):
        return input.deg2rad()
    return _as_float("deg2rad", input) * (math.pi / 180.0)


@tensor_method("rad2deg")
def rad2deg(input: Tensor) -> Tensor:  # noqa: A002
    """Radians to degrees: x * (180 / pi)."""
    if getattr(input, "_sparse", False):  # (up front, as deg2rad's)
        return input.rad2deg()
    return _as_float("rad2deg", input) * (180.0 / math.pi)


@tensor_method("ldexp")
def ldexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """input * 2^other (broadcast), in input's and other's promoted dtype (the default
    float dtype when both are integers; complex when either is)."""
    require_tensor("ldexp", input)
    require_tensor("ldexp", other, "other", 2)
    check_operands("ldexp", input, other)
    from tgrad import dtypes
    if (isinstance(other, Tensor) and other.dtype is dtypes.bool_
            and input.dtype.is_floating_point):  # PyTorch's: bool/int/complex input is fine
        raise NotImplementedError("ldexp: \"ldexp_cpu_exp\" not implemented for 'Bool' (a "
                                  "bool exponent tensor with a floating point input, as in "
                                  "PyTorch); convert it with .int() first")
    dt = dtypes.result_type(input, other)
    if not dt.is_floating_point and not dt.is_complex:  # (complex stays complex: PyTorch's)
        dt = dtypes.get_default_dtype()
    if (isinstance(other, Tensor) and not dt.is_complex and not other.dtype.is_floating_point
            and not other.dtype.is_complex):
        x = input.to(dt)
        if (x.device.type == "cpu" and other.device.type == "cpu"
                and dt in (dtypes.float32, dtypes.float64)
                and other.dtype is not dtypes.bool_):
            return _LdexpIntCpu.apply(x, other)
        return _ldexp_int(x, other)
    x, e = input.to(dt), other.to(dt)
    if dt.is_complex or not (x.requires_grad or e.requires_grad):
        return x * ew.pow(2.0, e)
    return _Ldexp.apply(x, e)


class _Ldexp(Function):
    """y = x 2^e (real x, e of one floating dtype);  dx = g 2^e, de = g x 2^e ln 2, each
    with a 2^e of its own (PyTorch's formula), so under create_graph the two gradients share
    no node: differentiating one without retain_graph leaves the other's graph whole (the
    composite x * pow(2, e) shared pow's forward node)."""

    node_name = "LdexpBackward0"

    @staticmethod
    def forward(ctx, x, e):
        ctx.save_for_backward(x, e)
        return x * ew.pow(2.0, e)

    @staticmethod
    def backward(ctx, g):
        x, e = ctx.saved_tensors
        need_x, need_e = ctx.needs_input_grad
        return (g * ew.pow(2.0, e) if need_x else None,
                g * x * ew.pow(2.0, e) * math.log(2.0) if need_e else None)


class _LdexpIntCpu(Function):
    """y = x 2^e on the CPU for a float32 / float64 x and an integer exponent tensor e, as
    NumPy's ldexp (C's ldexpf / ldexp: exact, one rounding where the result is subnormal)
    on the arrays: bit-identical to ``_ldexp_int``'s three exact float64 products rounded
    once (float32; float64 but a subnormal float64 result, where ldexp is the correctly
    rounded one). e is clamped to +-2200 and taken as int32 (past it every nonzero finite
    float over- or underflows either way). Broadcasts x (any shape) with e (any shape).
    dx = g 2^e = ldexp(g, e) (sum-reduced to x's shape), itself an ldexp, so the backward
    is differentiable in g (create_graph, forward-mode AD by the vjp of the vjp)."""

    node_name = "LdexpBackward0"

    @staticmethod
    def forward(ctx, x, e):
        ctx.save_for_backward(e)
        ctx.x_shape = x.shape
        ee = np.clip(e._data, -2200, 2200).astype(np.int32, copy=False)
        with np.errstate(all="ignore"):
            return wrap(np.asarray(np.ldexp(x._data, ee)), x.device)  # (0-d: a scalar)

    @staticmethod
    def backward(ctx, g):
        (e,) = ctx.saved_tensors
        if not ctx.needs_input_grad[0]:
            return None, None
        gx = ldexp(g, e)
        if tuple(gx.shape) != tuple(ctx.x_shape):  # (x broadcast against e)
            from tgrad.ops.reduce import sum_to
            gx = sum_to(gx, tuple(ctx.x_shape))
        return gx, None


def _ldexp_int(x: Tensor, e: Tensor) -> Tensor:
    """x 2^e for an integer (or bool) exponent tensor ``e``, exactly as C's ldexp (PyTorch's
    ldexp_cpu_exp kernel), not x * 2^e: 2^e alone over- or underflows where the product
    does not (ldexp(2^-10, 130) is 2^120 in float32, ldexp(0, 2000) is 0, not 0 * inf = NaN;
    ldexp(inf, -2000) is inf). Computed in float64 and rounded once to x's dtype: e is
    clamped to +-2200 (past it every nonzero finite float64 over- or underflows) and split
    in three parts of at most 734, so each 2^part is a finite, nonzero float64 power of two;
    the products are exact for float32/float16/bfloat16 x (their range sits far inside
    float64's), for float64 x but a float64 subnormal result (one ulp there, rarely).
    d x = g 2^e, through the products (the exponent has no gradient)."""
    e = e.to(dtypes.int64).clamp(-2200, 2200)
    e1 = ew.div(e, 3, rounding_mode="trunc")
    e2 = ew.div(e - e1, 2, rounding_mode="trunc")
    e3 = e - e1 - e2
    y = x.to(dtypes.float64)
    for part in (e1, e2, e3):  # (all three of e's sign)
        y = y * ew.pow(2.0, part.to(dtypes.float64))
    return y.to(x.dtype)


@tensor_method("heaviside")
def heaviside(input: Tensor, values: Tensor) -> Tensor:  # noqa: A002
    """The Heaviside step: 0 for x < 0, ``values`` for x == 0, 1 for x > 0, NaN for NaN
    (broadcast; input and values of one dtype, as PyTorch requires)."""
    require_tensor("heaviside", input)
    require_tensor("heaviside", values, "values", 2)
    check_operands("heaviside", input, values)
    if input.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    x = input.detach()

    def value() -> Tensor:
        step = ew.where(ew.eq(x, 0), values.detach(), ew.gt(x, 0).to(x.dtype))
        return ew.where(ew.ne(x, x), x, step) if x.dtype.is_floating_point else step

    if (input.requires_grad or values.requires_grad) and is_grad_enabled():
        return _NoDerivative.apply("heaviside", value, input, values)
    return value()


class _NoDerivative(Function):
    """y = value() of inputs PyTorch defines no derivative for (heaviside): y requires grad,
    as PyTorch's node "NotImplemented", and its backward raises PyTorch's "derivative for
    aten::<op> is not implemented" (a silent zero gradient would hide the missing one)."""

    node_name = "NotImplemented"

    @staticmethod
    def forward(ctx, op, value, *inputs):
        ctx.op = op
        return value()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError(f"derivative for aten::{ctx.op} is not implemented")


@tensor_method("isposinf")
def isposinf(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is +inf."""
    try:
        require_tensor("isposinf", input)
        if input.dtype.is_complex:
            raise RuntimeError("isposinf does not support complex inputs.")
        return ew.eq(input.detach(), math.inf)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("isposinf", e, input)


@tensor_method("isneginf")
def isneginf(input: Tensor) -> Tensor:  # noqa: A002
    """True where x is -inf."""
    try:
        require_tensor("isneginf", input)
        if input.dtype.is_complex:
            raise RuntimeError("isneginf does not support complex inputs.")
        return ew.eq(input.detach(), -math.inf)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("isneginf", e, input)


for _name, _fn in (("deg2rad_", deg2rad), ("rad2deg_", rad2deg), ("ldexp_", ldexp),
                   ("heaviside_", heaviside)):
    inplace_method(_name, _fn)


def broadcast_shapes(*shapes) -> tuple:
    """The shape the given shapes (tuples or ints) broadcast to, by PyTorch's rules."""
    dims = [(s,) if isinstance(s, (int, np.integer)) else tuple(s) for s in shapes]
    for shape in dims:  # PyTorch's TypeError (a float size was taken as it is)
        for i, d in enumerate(shape):
            if not isinstance(d, (int, np.integer)):
                raise TypeError(f"broadcast_shapes: torch.Size() takes an iterable of 'int' "
                                f"(item {i} is '{type(d).__name__}')")
    if any(d < 0 for shape in dims for d in shape):
        raise ValueError("Attempting to broadcast a dimension with negative length!")
    out: list = []
    for index, shape in enumerate(dims):
        for i in range(1, len(shape) + 1):
            size = shape[-i]
            if i > len(out):
                out.insert(0, size)
            elif out[-i] == 1:
                out[-i] = size
            elif size not in (1, out[-i]):
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {size} at {-i}! "
                    f"Mismatching argument at index {index} had {shape}; but expected shape "
                    f"should be broadcastable to {out}")
    return tuple(out)


def broadcast_tensors(*tensors: Tensor) -> tuple:
    """The tensors expanded (as views) to their common broadcast shape; one that already
    has that shape is returned itself (PyTorch's expand_outplace: not a view)."""
    for i, t in enumerate(tensors):
        require_tensor("broadcast_tensors", t, "tensors", i + 1)
    shape = broadcast_or_raise(None, *(t.shape for t in tensors))
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


@tensor_method("diagflat")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:  # noqa: A002
    """A square matrix with the flattened input on diagonal ``offset`` (zeros elsewhere)."""
    require_tensor("diagflat", input)
    return diag(input.reshape(-1), _int_arg("diagflat", "offset", offset, 2))


def _host(fn, device, *xs: Tensor) -> Tensor:
    """``fn`` of the tensors' values on the host, as a tensor on ``device``."""
    from tgrad.ops.creation import tensor
    return tensor(fn(*[np.asarray(x.numpy(force=True)) for x in xs]), device=device)


@tensor_method("nextafter")
def nextafter(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """The next representable float after ``input`` towards ``other`` (broadcast), in the
    dtype the two promote to (PyTorch's rules: nextafter(float64, float32) is float64, an
    integer tensor takes the float one's dtype; two integer tensors raise). PyTorch's
    gradient: g to input (a step of one ulp), 0 to other."""
    dt = promoted_float_dtype("nextafter", input, other)
    broadcast_or_raise("nextafter", input.shape, other.shape)  # (NumPy's ValueError leaked)
    a, b = input.detach().to(dt), other.detach().to(dt)
    if a.device.type == "cpu" and b.device.type == "cpu":  # integer steps of the bits
        from tgrad.backends import numpy as np_backend
        out = wrap(np.ascontiguousarray(np_backend._nextafter(a._data, b._data)), a.device)
    else:
        out = _host(np.nextafter, input.device, a, b).to(dt)
    if (input.requires_grad or other.requires_grad) and is_grad_enabled():
        return _Nextafter.apply(input.to(dt), other.to(dt), out)
    return out


class _Nextafter(Function):
    """y = nextafter(x, o) (computed before, ``out``);  dx = g, do = 0 (PyTorch's
    NextafterBackward0)."""

    node_name = "NextafterBackward0"

    @staticmethod
    def forward(ctx, x, other, out):
        ctx.other_shape = other.shape
        return out

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.creation import zeros as _zeros
        need_other = ctx.needs_input_grad[1]
        return g, (_zeros(ctx.other_shape, dtype=g.dtype, device=g.device) if need_other
                   else None), None


inplace_method("nextafter_", nextafter)

frexp_result = return_types.frexp


class Frexp(Function):
    """(mantissa, exponent) of x;  dx = g_mantissa 2^-exponent (the exponent is constant)."""

    name = "frexp"
    node_name = "FrexpBackward0"

    @staticmethod
    def forward(ctx, x):
        m, e = np.frexp(np.asarray(x.numpy(force=True)))
        from tgrad.ops.creation import tensor
        with np.errstate(over="ignore"):  # subnormals: 2^-e overflows (as PyTorch's)
            ctx.scale = tensor(np.ldexp(np.ones_like(m), -e), device=x.device)
        exp = tensor(e.astype(np.int32), device=x.device)
        ctx.mark_non_differentiable(exp)
        return tensor(m, device=x.device), exp

    @staticmethod
    def backward(ctx, gm, ge):
        return gm * ctx.scale


@tensor_method("frexp")
def frexp(input: Tensor) -> tuple:  # noqa: A002
    """Decompose ``input`` into (mantissa, exponent): input = mantissa 2^exponent with
    |mantissa| in [0.5, 1) (0, inf and NaN give themselves and exponent 0)."""
    require_tensor("frexp", input)
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    if input.dtype in (dtypes.float16, dtypes.bfloat16):
        m, e = Frexp.apply(input.float())
        return frexp_result(m.to(input.dtype), e)
    return frexp_result(*Frexp.apply(input))
