"""PyTorch's log-space, sign and NaN-aware maths and their scans, composed of existing
tgrad ops (no kernel of their own: they run and differentiate wherever their parts do).

Maths (float16/bfloat16 computed in float32, rounded once):

- ``logaddexp(a, b)`` = max(a, b) + log1p(exp(-|a - b|)), with a - b taken as 0 where
  a == b (so equal infinities give +-inf, not NaN);  da = sigmoid(a - b) (1/2 on ties,
  also at equal infinities), one node whose backward differentiates again (1/4 on ties:
  sigmoid(x) sigmoid(-x)).  ``logaddexp2`` = max + log1p(2^-|a - b|) / ln 2, da =
  1 / (1 + 2^(b - a)).
  Complex (PyTorch's CPU helper): (mn, mx) = the operands ordered by real part (a tie puts
  ``other`` first), log1p(exp(mn - mx)) + mx; NaN + NaN j where either has a NaN part;
  equal infinite real parts give mn for -inf and log(exp(mn) + exp(mx)) for +inf;
  da = g / conj(1 + exp(b - a)) (PyTorch's derivatives.yaml), through the composition.
- ``hypot(a, b)`` = m sqrt(1 + (n / m)^2), m = max(|a|, |b|), n = min(|a|, |b|): no
  overflow for large values; inf where either is infinite (even with a NaN, as C's hypot);
  da = a / hypot (0 at a = b = 0 and at infinities, where PyTorch's a / hypot is NaN).
- ``copysign(a, b)`` = |a| with the sign of b (-0.0 counts as negative); da = sign of the
  result times sign(a) (0 at a = 0, as PyTorch); no gradient to b.
- ``signbit(x)``: the sign bit, read as x.view(the signed integer of x's width) < 0: true
  for x < 0, -0.0 and a NaN with the bit set, as PyTorch's.
- ``fmax``/``fmin``: where(a >= b or b is NaN, a, b) (<= for fmin): NaN only where both
  are; the gradient goes to the chosen operand (to a on ties, as PyTorch).
- ``float_power(a, b)`` = pow in float64.
- ``logcumsumexp(x, dim)``: a Hillis-Steele scan of logaddexp (log2(n) steps of
  y[k:] = logaddexp(y[k:], y[:-k])), stable without a global shift; O(n log n) work. Real
  float32/float64 on the CPU: the same steps as NumPy calls (tgrad.backends._numpy_scan,
  the same bits), one node whose backward runs the steps' chain rule in reverse.
  Complex: the same scan of the complex rule, its first element combined with PyTorch's
  initial value -inf + 0j (a leading run of -inf real parts gives -inf + 0j, as PyTorch's
  sequential loop; other non-finite runs may differ from that loop's order in the sign of
  a NaN or infinite imaginary part). The scan's order also picks the log's branch: an
  imaginary part can differ from PyTorch's by a multiple of 2 pi (the same exp(out), the
  same gradient).
- ``cummax``/``cummin(x, dim)``: the indices by the same scan over (value, index) pairs
  (the later pair wins when its value is >= (<=) or NaN, unless the earlier is NaN: the last
  index of the running extreme, NaN sticking, as PyTorch); values = x at the indices, so
  d x scatter-adds g to them (PyTorch's rule).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad.autograd.function import Function, differentiable_formula, fw_level
from tgrad.autograd.grad_mode import is_grad_enabled, no_grad
from tgrad.backends import _numpy_binary as _np_bin
from tgrad.backends import numpy as np_backend
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    check_operands,
    fresh,
    require_tensor,
    require_tensor_or_number,
    rounded_to,
    route_sparse,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, full_like, zeros
from tgrad.ops.reduce import sum_to
from tgrad.ops.shape import cat, narrow
from tgrad.ops.sorting import CUM_EXTREME, _select
from tgrad.return_types import values_indices
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["logaddexp", "logaddexp2", "hypot", "copysign", "signbit", "fmax", "fmin",
           "float_power", "logcumsumexp", "cummax", "cummin"]

# ------------------------------------------------------------------------------ maths
def _tensor_pair(op: str, input, other) -> None:  # noqa: A002
    require_tensor(op, input)
    require_tensor(op, other, "other", 2)
    check_operands(op, input, other)


def _float_pair(op: str, input, other, complex_ok: bool = False) -> tuple:  # noqa: A002
    """input and other in their promoted dtype, which must be floating (or complex where
    ``complex_ok``: PyTorch has no integer kernel for these ops)."""
    _tensor_pair(op, input, other)
    dt = dtypes.result_type(input, other)
    if not (dt.is_floating_point or (complex_ok and dt.is_complex)):
        raise NotImplementedError(f"\"{op}\" not implemented for {dt.name} tensors (as in "
                                  f"PyTorch); it takes floating point tensors")
    return input.to(dt), other.to(dt)


class _Sigmoid(Function):
    """y = sigmoid(x) (base 2: 1 / (1 + 2^-x));  dx = g sigmoid(x) sigmoid(-x) (times ln 2),
    each factor from its own exp: sigmoid's own y (1 - y) cancels where y -> 1 (1e-3
    relative error at x = 30 in float64). logaddexp's derivative."""

    node_name = "SigmoidBackward0"

    @staticmethod
    def forward(ctx, x, base2):
        ctx.save_for_backward(x)
        ctx.base2 = base2
        return _sigmoid(x, base2)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        base2 = ctx.base2
        dx = g * _Sigmoid.apply(x, base2) * _Sigmoid.apply(-x, base2)
        return (dx * math.log(2.0) if base2 else dx), None


def _sigmoid(x: Tensor, base2: bool) -> Tensor:
    return 1.0 / (1.0 + ew.exp2(-x)) if base2 else ew.sigmoid(x)


class _SigmoidPair(Function):
    """(sigmoid(d), sigmoid(-d)), d = a - b (base 2: 1 / (1 + 2^-d), 1 / (1 + 2^d)), from
    the forward's e = e^-|d| (2^-|d|, d read as 0 where a == b): p = 1 / (1 + e), q = e p,
    (p, q) where a >= b else (q, p), so logaddexp's first-order backward needs no exp of its
    own. dd = (g1 - g2) sigmoid(d) sigmoid(-d) (times ln 2), each factor from its own exp
    (``_Sigmoid``), so it differentiates again; da = dd, db = -dd, 0 where a == b = +-inf
    (d = inf - inf)."""

    node_name = "LogaddexpBackwardBackward0"

    @staticmethod
    def forward(ctx, a, b, e, base2):
        p = 1.0 / (1.0 + e)
        q = e * p
        pos = ew.ge(a, b)
        ctx.save_for_backward(a, b)
        ctx.base2 = base2
        return ew.where(pos, p, q), ew.where(pos, q, p)

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        base2 = ctx.base2
        d = ew.where(ew.logical_and(ew.eq(a, b), ew.isinf(a)), 0.0, a - b)
        dd = (g1 - g2) * _Sigmoid.apply(d, base2) * _Sigmoid.apply(-d, base2)
        dd = dd * math.log(2.0) if base2 else dd
        return dd, -dd, None, None


class _LogAddExp(Function):
    """y = max(a, b) + log(1 + e^-|a - b|) (base 2: + log2(1 + 2^-|a - b|)), a - b read as
    0 where a == b: equal infinities stay infinite. da = g sigmoid(a - b), db = g
    sigmoid(b - a) (base 2: 1 / (1 + 2^(b - a))), from the forward's e^-|a - b|
    (``_SigmoidPair``: 1/2 each at equal infinities, not NaN), and differentiable again
    smoothly through a tie: the second derivative there is 1/4 (ln 2 / 4 in base 2). (The
    composite of max and |a - b| gave the tie's 1/2 from maximum's share, but a second
    derivative of 0: both kinks.)"""

    node_name = "LogaddexpBackward0"

    @staticmethod
    def forward(ctx, a, b, base2):
        y, e = _logaddexp_value(a, b, base2)
        ctx.save_for_backward(a, b)
        ctx.e, ctx.base2 = e, base2
        return y

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad[:2]
        sa, sb = _SigmoidPair.apply(a, b, ctx.e, ctx.base2)
        if need_a and need_b and differentiable_formula():
            # under create_graph each gradient gets a node of its own, as PyTorch's, so
            # differentiating one without retain_graph leaves the other's graph whole
            sb = _SigmoidPair.apply(a, b, ctx.e, ctx.base2)[1]
        return (g * sa if need_a else None), (g * sb if need_b else None), None


class _LogAddExp2(_LogAddExp):
    node_name = "Logaddexp2Backward0"


def _logaddexp_value(a: Tensor, b: Tensor, base2: bool) -> tuple:
    """(max(a, b) + log1p(e), e) with e = e^-|a - b| (2^-|a - b|; a - b read as 0 where
    a == b, so equal infinities stay infinite)."""
    d = ew.where(ew.eq(a, b), 0.0, a - b)
    t = -ew.abs(d)
    e = ew.exp2(t) if base2 else ew.exp(t)
    tail = ew.log1p(e) * (1.0 / math.log(2.0)) if base2 else ew.log1p(e)
    return ew.maximum(a, b) + tail, e


def _logaddexp(a: Tensor, b: Tensor, base2: bool = False) -> Tensor:
    """log(e^a + e^b) (base 2: log2(2^a + 2^b)), one node (see ``_LogAddExp``) when a
    gradient is wanted, else the value alone."""
    if is_grad_enabled() and (a.requires_grad or b.requires_grad):
        return (_LogAddExp2 if base2 else _LogAddExp).apply(a, b, base2)
    return _logaddexp_value(a, b, base2)[0]


def _logaddexp_complex(x: Tensor, y: Tensor) -> Tensor:
    """PyTorch's complex _log_add_exp_helper(x, y): (mn, mx) = (x, y) if x.real < y.real
    else (y, x); NaN + NaN j if either has a NaN part; where x.real == y.real = +-inf: mn
    (-inf) or log(exp(mn) + exp(mx)) (+inf); else log1p(exp(mn - mx)) + mx.  The branches
    not taken see finite stand-ins, so their backward adds no NaN."""
    xr, yr = x.detach().real, y.detach().real
    lo = ew.lt(xr, yr)
    mn, mx = ew.where(lo, x, y), ew.where(lo, y, x)
    nan = ew.logical_or(ew.isnan(x), ew.isnan(y))
    tie = ew.logical_and(ew.eq(xr, yr), ew.isinf(xr))  # equal infinite real parts
    safe = ew.logical_or(nan, tie)
    d = ew.where(safe, 0.0, mn - mx)
    out = ew.log1p(ew.exp(d)) + ew.where(safe, 0.0, mx)
    up = ew.logical_and(tie, ew.gt(xr, 0.0))
    lo_i, hi_i = ew.where(up, mn, 0.0), ew.where(up, mx, 0.0)
    out = ew.where(up, ew.log(ew.exp(lo_i) + ew.exp(hi_i)), out)
    out = ew.where(ew.logical_and(tie, ew.lt(xr, 0.0)), mn, out)
    # NaN + NaN j where either has a NaN part, with a NaN gradient to both there, as
    # PyTorch's (a constant NaN left the gradient 0); the NaN factor is 0 elsewhere, so the
    # branch not taken adds nothing (0 * NaN would leak)
    nan_factor = ew.where(nan, full_like(out, complex(math.nan, math.nan)), 0.0)  # (out's
    return ew.where(nan, (x + y) * nan_factor, out)  # dtype: complex64 stays complex64)


@tensor_method("logaddexp")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log(e^a + e^b), stable;  da = sigmoid(a - b), db = sigmoid(b - a) (complex:
    da = g / conj(1 + e^(b - a)))."""
    a, b = _float_pair("logaddexp", input, other, complex_ok=True)
    if a.dtype.is_complex:
        return _logaddexp_complex(a, b)
    (a, b), half = widen_halves(a, b)
    return rounded_to(_logaddexp(a, b), half)


@tensor_method("logaddexp2")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log2(2^a + 2^b), stable;  da = 2^a / (2^a + 2^b)."""
    (a, b), half = widen_halves(*_float_pair("logaddexp2", input, other))
    return rounded_to(_logaddexp(a, b, base2=True), half)


def _hypot_value(a: Tensor, b: Tensor) -> Tensor:
    """sqrt(a^2 + b^2) without overflow or underflow: m sqrt(1 + (n/m)^2) with
    m = max(|a|, |b|), n = min(|a|, |b|); inf where either is infinite."""
    inf = ew.logical_or(ew.isinf(a), ew.isinf(b))
    x = ew.abs(ew.where(inf, 0.0, a))  # infinities replaced: the branch not taken stays finite
    y = ew.abs(ew.where(inf, 0.0, b))
    m, n = ew.maximum(x, y), ew.minimum(x, y)
    r = n / ew.where(ew.eq(m, 0.0), 1.0, m)
    return ew.where(inf, math.inf, m * ew.sqrt(r * r + 1.0))


def _np_pair(a: Tensor, b: Tensor) -> bool:
    """Whether a and b are C-contiguous CPU tensors of one float32/float64 dtype, whose op
    may run _numpy_binary's steps on their arrays (C-contiguous: its results are, as the
    composition's are, so later reductions sum in the same order; other layouts keep the
    composition)."""
    return a._device.type == "cpu" and b._device.type == "cpu" and a.dtype is b.dtype \
        and _np_bin.fast_dtype(a.dtype.np) and _np_bin.c_order(a._data, b._data)


class _Hypot(Function):
    """y = hypot(a, b) (``_hypot_value``);  da = g a / y, db = g b / y, 0 where y is 0 or
    infinite (deliberate: PyTorch's is NaN there; docs/design.md), differentiable again, so
    the second derivatives are b^2 / y^3, -ab / y^3 and a^2 / y^3 at ties and on the axes
    too (the composite's max / min / abs kinks gave 0 there). On the CPU (float32/float64)
    the forward, and the backward when no graph is recorded (``differentiable_formula``),
    run _numpy_binary's steps (the same bits)."""

    node_name = "HypotBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.np = _np_pair(a, b)
        y = wrap(_np_bin.hypot(a._data, b._data), a.device) if ctx.np else _hypot_value(a, b)
        need_a, need_b = ctx.needs_input_grad
        # each input saved only for its own gradient (PyTorch's: no version error for an
        # input that needs none, changed in place after)
        ctx.save_for_backward(a if need_a else None, b if need_b else None, y)
        return y

    @staticmethod
    def backward(ctx, g):
        a, b, y = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        if ctx.np and not differentiable_formula() and g.dtype is y.dtype and _np_pair(g, y):
            dev = g.device  # (g has y's shape: the broadcast one)
            return (wrap(_np_bin.hypot_grad(g._data, a._data, y._data), dev) if need_a
                    else None,
                    wrap(_np_bin.hypot_grad(g._data, b._data, y._data), dev) if need_b
                    else None)
        off = ew.logical_or(ew.eq(y, 0.0), ew.isinf(y))  # the gradient's 0 (stand-ins: no
        y = ew.where(off, 1.0, y)  # NaN from 0/0 or inf/inf, in this backward or the next)
        return (g * ew.where(off, 0.0, a) / y if need_a else None,
                g * ew.where(off, 0.0, b) / y if need_b else None)


@tensor_method("hypot")
def hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """sqrt(a^2 + b^2) without overflow or underflow (``_hypot_value``);  da = g a / hypot,
    db = g b / hypot (``_Hypot``)."""
    (a, b), half = widen_halves(*_float_pair("hypot", input, other))
    if is_grad_enabled() and (a.requires_grad or b.requires_grad):
        return rounded_to(_Hypot.apply(a, b), half)
    if _np_pair(a, b) and fw_level() is None:  # (forward AD: the composite's tangents)
        return rounded_to(wrap(_np_bin.hypot(a._data, b._data), a.device), half)
    return rounded_to(_hypot_value(a, b), half)


@tensor_method("signbit")
def signbit(input: Tensor) -> Tensor:  # noqa: A002
    """True where the sign bit is set (bool): -0.0, -inf and a NaN with its sign bit
    included, as PyTorch's (float8: PyTorch's NotImplementedError)."""
    require_tensor("signbit", input)
    try:
        with no_grad():
            x = input.detach()
            if x.dtype is dtypes.bool_:
                return ew.ne(x, x)
            if x.dtype.is_complex:  # (PyTorch's text)
                raise NotImplementedError("signbit is not implemented for complex tensors.")
            if not x.dtype.is_floating_point:
                return ew.lt(x, 0)
            dtypes.refuse_float8("signbit_cpu", x.dtype)
            # the float's bytes read as the signed integer of its width (a view, no copy)
            # are negative exactly where the sign bit is set
            return ew.lt(x.view(_SIGNED_OF_WIDTH[x.dtype.itemsize]), 0)
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("signbit", e, input)


# float element size -> the signed integer dtype of that width (signbit's view)
_SIGNED_OF_WIDTH = {2: dtypes.int16, 4: dtypes.int32, 8: dtypes.int64}


class _CopysignTensor(Function):
    """y = where(signbit(other), -m, m) for m = |input| >= 0;  dm = g (-1 where other's sign
    bit is set, else 1); d other = 0 (the sign is piecewise constant)."""

    node_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, mag, other):
        flip = signbit(other)
        ctx.save_for_backward(flip)
        ctx.other_shape = other.shape
        return ew.where(flip, -mag, mag)

    @staticmethod
    def backward(ctx, g):
        (flip,) = ctx.saved_tensors
        zero = zeros(ctx.other_shape, dtype=g.dtype, device=g.device)
        return ew.where(flip, -g, g), zero


class _CopysignFast(Function):
    """CPU float32/float64 copysign of two tensors of one dtype (_numpy_binary: the sign
    bit of input replaced by other's, the bits of the composite |input| then
    ``_CopysignTensor``), one node:  d input = where(signbit(other), -g, g) sign(input)
    (``_CopysignTensor``'s then abs's backward; PyTorch's g result / input, 0 at input =
    0), d other = 0 (a zero tensor, as PyTorch's). The backward runs _numpy_binary's steps
    unless a graph is recorded (``differentiable_formula``: then tgrad ops)."""

    node_name = "CopysignBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a)
        # the sign bits of b, kept (not b: an in-place change of b after is no error)
        ctx.sign = _np_bin.sign_bits(b._data)
        ctx.other_shape = b.shape
        return wrap(_np_bin.copysign(a._data, b._data), a.device)

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        zero = zeros(ctx.other_shape, dtype=g.dtype, device=g.device) if need_b else None
        if not need_a:
            return None, zero
        if not differentiable_formula() and g.dtype is a.dtype and g._device.type == "cpu" \
                and _np_bin.c_order(g._data):
            # summed to input's shape before the sign, as the composition's nodes do
            flipped = wrap(_np_bin.flip_signs(g._data, ctx.sign), g.device)
            if flipped.shape != a.shape:
                flipped = sum_to(flipped, a.shape)
            return wrap(_np_bin.times_sign(flipped._data, a._data), g.device), zero
        flip = ew.lt(wrap(ctx.sign, a.device), 0)
        return sum_to(ew.where(flip, -g, g), a.shape) * ew.sign(a), zero


@tensor_method("copysign")
def copysign(input: Tensor, other) -> Tensor:  # noqa: A002
    """|input| with the sign of ``other`` (a tensor or a number; -0.0 is negative), in the
    promoted floating dtype;  d input = g sign(out) sign(input) (0 at input = 0)."""
    require_tensor("copysign", input)
    require_tensor_or_number("copysign", other, "other", 2)
    dt = dtypes.result_type(input, other)
    if dt.is_complex:
        raise dtypes.kernel_not_implemented("copysign_cpu", dt, ": complex numbers have no "
                                            "sign; apply it to .real or .imag instead")
    if not dt.is_floating_point:
        dt = dtypes.get_default_dtype()
    if isinstance(other, Tensor) and input.dtype is dt and _np_pair(input, other):
        check_operands("copysign", input, other)
        if fw_level() is None:  # (forward AD: the composite's tangents)
            return _CopysignFast.apply(input, other)
    mag = ew.abs(input.to(dt))
    if isinstance(other, Tensor):
        check_operands("copysign", input, other)
        if other.requires_grad:  # other gets a zero gradient (PyTorch's), not None
            return _CopysignTensor.apply(mag, other)
        return ew.where(signbit(other), -mag, mag)
    return -mag if math.copysign(1.0, float(other)) < 0 else mag


@tensor_method("fmax")
def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """maximum ignoring NaN (NaN only where both are);  the gradient goes to the chosen
    operand, to input on ties."""
    _tensor_pair("fmax", input, other)
    if input.dtype.is_complex or other.dtype.is_complex:  # (PyTorch's text)
        raise RuntimeError("fmax not implemented for complex tensors.")
    return ew.where(ew.logical_or(ew.ge(input, other), ew.isnan(other)), input, other)


@tensor_method("fmin")
def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """minimum ignoring NaN (NaN only where both are);  the gradient goes to the chosen
    operand, to input on ties."""
    _tensor_pair("fmin", input, other)
    if input.dtype.is_complex or other.dtype.is_complex:  # (PyTorch's text)
        raise RuntimeError("fmin not implemented for complex tensors.")
    return ew.where(ew.logical_or(ew.le(input, other), ew.isnan(other)), input, other)


@tensor_method("float_power")
def float_power(input, exponent) -> Tensor:  # noqa: A002
    """input ** exponent computed in float64, or in complex128 when either is complex (either
    may be a number)."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected input or exponent to be a Tensor")
    pair = (input, exponent)
    for pos, (name, v) in enumerate((("input", input), ("exponent", exponent)), 1):
        require_tensor_or_number("float_power", v, name, pos)
    if any(v.dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)
           for v in pair):
        dt, num = dtypes.complex128, complex
    else:
        dt, num = dtypes.float64, float
    base, exp = (v.to(dt) if isinstance(v, Tensor) else num(v) for v in pair)
    return ew.pow(base, exp)


# ------------------------------------------------------------------------------ scans
def _scan_input(op: str, input: Tensor, dim) -> tuple:  # noqa: A002
    """(input as >= 1-D, the wrapped dim)."""
    require_tensor(op, input)
    d = _wrap_dim(dim, input.ndim, op)  # (its int check refuses a bool)
    return (input.reshape(1) if input.ndim == 0 else input), d


@tensor_method("logcumsumexp")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """out_k = log sum_{j <= k} exp(x_j) along ``dim``, stable (no global shift:
    [-1000, 0] gives [-1000, log(1 + e^-1000)]);  dx_j = sum_{k >= j} g_k e^(x_j - out_k)."""
    x, d = _scan_input("logcumsumexp", input, dim)
    cplx = x.dtype.is_complex
    if not (x.dtype.is_floating_point or cplx):
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for {x.dtype.name} "
                                  f"tensors (as in PyTorch); it takes floating point or "
                                  f"complex tensors")
    n = x.shape[d]
    if n == 1 and input.ndim and not cplx and input.requires_grad and is_grad_enabled():
        # one element of a >= 1-d x: y = x, written x * w with w = where(True, 1, x), so
        # that dx = g w (+ 0 from the where) is a node of x's graph as PyTorch's rule's
        # (second derivative 0); NaN where x is +-inf or NaN (e^(x - out) = e^(inf - inf),
        # as PyTorch's; a 0-d x: g itself, a constant, as PyTorch's)
        w = ew.where(full_like(input, True, dtype=dtypes.bool_), 1.0, input)
        return _NanGradAt.apply(input, ew.logical_not(ew.isfinite(input))) * w
    if n == 0 or (n == 1 and not cplx):
        return input.clone()
    (y,), half = widen_halves(x)
    if not cplx and y.device.type == "cpu" and y.dtype in _NUMPY_SCAN_DTYPES:
        y = _LogCumSumExp.apply(y, d)
    else:
        y = _logcumsumexp_scan(y, d)
    if input.ndim == 0:
        y = y.reshape(())
    return rounded_to(y, half)


def _logcumsumexp_scan(y: Tensor, d: int) -> Tensor:
    """logcumsumexp of y (n = y.shape[d] >= 2, not a half) along d in tgrad ops: the
    Hillis-Steele scan of logaddexp, one node per step (the GPU's; the CPU's backward under
    create_graph replays it). A real y that requires grad first passes ``_NanGradAt`` at
    ``_infinite_ties(y, d)``: the scan's ties of infinities share the gradient (1/2 each),
    where PyTorch's dx_j = sum_k g_k e^(x_j - out_k) is NaN."""
    n, k = y.shape[d], 1
    cplx = y.dtype.is_complex
    if not cplx and y.requires_grad and is_grad_enabled():
        y = _NanGradAt.apply(y, _infinite_ties(y, d))
    if cplx:  # PyTorch's loop starts from -inf + 0j: x_0 = -inf + bj gives -inf + 0j
        head = narrow(y, d, 0, 1)
        y = cat([_logaddexp_complex(head, full_like(head, complex(-math.inf, 0.0))),
                 narrow(y, d, 1, n - 1)], d)
    step = _logaddexp_complex if cplx else _logaddexp
    while k < n:  # after the step with span k, y_j covers (j - 2k, j]
        head = narrow(y, d, 0, k)
        y = cat([head, step(narrow(y, d, k, n - k), narrow(y, d, 0, n - k))], d)
        k *= 2
    return y


_NUMPY_SCAN_DTYPES = (dtypes.float32, dtypes.float64)


def _infinite_ties(x: Tensor, d: int) -> Tensor:
    """Bool, x's shape: where logcumsumexp's dx_j = sum_{k >= j} g_k e^(x_j - out_k) has an
    e^(inf - inf) term (NaN whatever g, as PyTorch's): x_j = +inf (then out_k = +inf for
    k >= j), or x_j = -inf with x_i = -inf for all i <= j (out_j = -inf); NaN x_j too.
    (tgrad.backends._numpy_scan.infinite_ties: the same on a NumPy array.)"""
    all_neg_inf = ew.eq(ew.ne(x, -math.inf).cumsum(d), 0)
    return ew.logical_or(ew.logical_or(ew.eq(x, math.inf), ew.isnan(x)), all_neg_inf)


class _NanGradAt(Function):
    """y = x (a view);  dx = g * where(mask, NaN, 1): NaN at ``mask`` whatever g (0 too),
    g itself (the same bits) elsewhere; a product, so a second derivative through it is NaN
    there too."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.mask = mask
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g * ew.where(ctx.mask, math.nan, 1.0).to(g.dtype), None


class _LogCumSumExp(Function):
    """y = logcumsumexp(x) along d (n >= 2, float32 / float64, CPU): ``_logcumsumexp_scan``'s
    steps run on the NumPy arrays (tgrad.backends._numpy_scan: the same operations, so the
    same bits), keeping each step's e = exp(-|a - b|) and a >= b for the backward instead
    of a graph of log2(n) logaddexp, narrow and cat nodes.
    dx: the composite's chain rule through the steps in reverse (G'_j sigmoid(+-(a - b)) to
    each operand, the same bits). Under create_graph (or forward-mode AD through the
    backward) the composite is replayed on x and differentiated with create_graph, so the
    gradient is a graph of x and g, as before."""

    name = "logcumsumexp"
    node_name = "LogcumsumexpBackward0"
    released_attributes = ("steps", "ties")

    @staticmethod
    def forward(ctx, x, d):
        from tgrad.backends import _numpy_scan
        keep = ctx.needs_input_grad[0]
        y, steps, ties = _numpy_scan.logcumsumexp(x._data, d, keep)
        ctx.d, ctx.steps, ctx.ties = d, steps, ties
        if keep:  # (for the create_graph replay; also the composite's check that x was
            ctx.save_for_backward(x)  # not changed in place before the backward)
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if differentiable_formula():
            from tgrad.autograd import enable_grad, grad
            with enable_grad():
                y = _logcumsumexp_scan(x, ctx.d)
            return grad(y, x, g, create_graph=True)[0], None
        from tgrad.backends import _numpy_scan
        dx = _numpy_scan.logcumsumexp_backward(g._data, ctx.steps, ctx.d)
        if ctx.ties is not None:  # x holds infinities: NaN at their ties (_NanGradAt's)
            np.copyto(dx, np.nan, where=ctx.ties)
        return wrap(dx, g.device), None


_SCAN_MIN_SIZE = 4096  # smaller: np.ufunc.accumulate (its ~3 ns per element is no cost)


def _segmented_scan(a: np.ndarray, d: int, fn) -> np.ndarray:
    """The inclusive scan of ``fn`` (np.maximum / np.minimum: associative, NaN-propagating)
    along ``d``, C-contiguous: log2(n) whole-array steps (Hillis-Steele) where
    fn.accumulate makes one scalar step per element (~3 ns). a is read as (O, n * I) rows
    of its C-order memory (I = the size of the dims after d); step k combines each element
    with the one k * I before it in the same row, the first k * I of each row are kept."""
    z = np.ascontiguousarray(a).reshape(-1)
    n = a.shape[d]
    inner = math.prod(a.shape[d + 1:])
    rows = z.size // (n * inner)
    bufs = [np.empty_like(z), np.empty_like(z)]
    k = 1
    while k < n:
        s = k * inner
        out = bufs[0] if z is not bufs[0] else bufs[1]
        fn(z[s:], z[:-s], out=out[s:])
        out.reshape(rows, n * inner)[:, :s] = z.reshape(rows, n * inner)[:, :s]
        z = out
        k *= 2
    return z.reshape(a.shape)


def _cum_extreme_cpu(a: np.ndarray, d: int, larger: bool) -> tuple:
    """The GPU scan's indices (int64, a's shape) on a CPU array: the scan takes the later
    element where it is >= (<=) the running extreme so far or NaN, and keeps an earlier
    NaN, so index_j = the last p <= j that took over: a_p == M_p (M = the running extreme
    by np.maximum/minimum, NaN from the first NaN on; 0.0 == -0.0 as in the scan) or a_p
    NaN; that last p is a running max of where(took, p, 0). Both scans by
    _segmented_scan from _SCAN_MIN_SIZE elements (the same values: only a's own
    comparisons with M count, not M's zero signs or NaN payloads). Returns (indices,
    values a at the indices or None for halves: _numpy_scan.cum_extreme_values from M)."""
    from tgrad.backends import _numpy_scan
    wide = np_backend._up(a)  # (halves as float32: exact, the same comparisons)
    keep = wide is a
    a = wide
    fn = np.maximum if larger else np.minimum
    n = a.shape[d]
    scan = a.size >= _SCAN_MIN_SIZE and n > 1
    m = _segmented_scan(a, d, fn) if scan else fn.accumulate(a, axis=d)
    took = a == m
    if a.dtype.kind == "f":
        took |= np.isnan(a)
    shape = [1] * a.ndim
    shape[d] = n
    if not scan:
        pos = np.where(took, np.arange(n, dtype=np.int64).reshape(shape), 0)
        idx = np.maximum.accumulate(pos, axis=d)
    else:
        it = np.int16 if n <= np.iinfo(np.int16).max else np.int64  # (narrow: faster steps)
        pos = np.multiply(took, np.arange(n, dtype=it).reshape(shape), dtype=it)
        idx = _segmented_scan(pos, d, np.maximum).astype(np.int64)
    return idx, (_numpy_scan.cum_extreme_values(a, m, idx, d) if keep else None)


def _cum_extreme(op: str, input: Tensor, dim, larger: bool) -> values_indices:  # noqa: A002
    x, d = _scan_input(op, input, dim)
    if x.dtype.is_complex:  # complex numbers have no order (PyTorch's kernels lack it)
        raise NotImplementedError(f"{op}(): \"{op}_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[x.dtype]}'")
    n = x.shape[d]
    if x.numel() == 0:
        return getattr(return_types, op)(input.clone(), zeros(input.shape, dtype=dtypes.int64,
                                                  device=input.device))
    if x.device.type == "cpu":  # the scan's indices in O(n), without 2 log2(n) copies
        idx, vals = _cum_extreme_cpu(x._data, d, larger)
        i = wrap(idx, x.device)
        indices = fresh(i.reshape(input.shape))
        values = _select(CUM_EXTREME[op], input, x, i, d, input.shape, False, indices, vals)
        return getattr(return_types, op)(values, indices)
    with no_grad():
        v = x.detach()
        shape = [1] * x.ndim
        shape[d] = n
        i = arange(n, device=x.device).reshape(shape).expand(x.shape)
        floating = v.dtype.is_floating_point
        k = 1
        while k < n:  # Hillis-Steele: combine (earlier, later) summaries k apart
            lv, rv = narrow(v, d, 0, n - k), narrow(v, d, k, n - k)
            later = ew.ge(rv, lv) if larger else ew.le(rv, lv)
            if floating:  # a later NaN wins; an earlier NaN sticks
                later = ew.logical_or(ew.isnan(rv),
                                      ew.logical_and(ew.logical_not(ew.isnan(lv)), later))
            v = cat([narrow(v, d, 0, k), ew.where(later, rv, lv)], d)
            i = cat([narrow(i, d, 0, k), ew.where(later, narrow(i, d, k, n - k),
                                                  narrow(i, d, 0, n - k))], d)
            k *= 2
        i = i.clone() if n == 1 else i  # (else the scan's cat made it)
    # one CummaxBackward0 / CumminBackward0 node: d x = g scatter-added to the indices
    # (PyTorch's rule)
    indices = fresh(i.reshape(input.shape))
    values = _select(CUM_EXTREME[op], input, x, i, d, input.shape, False, indices)
    return getattr(return_types, op)(values, indices)


@tensor_method("cummax")
def cummax(input: Tensor, dim: int) -> values_indices:  # noqa: A002
    """(values, indices) of the running maximum along ``dim``: the last index of the
    maximum so far; from a NaN on, NaN and the latest NaN's index."""
    return _cum_extreme("cummax", input, dim, True)


@tensor_method("cummin")
def cummin(input: Tensor, dim: int) -> values_indices:  # noqa: A002
    """(values, indices) of the running minimum along ``dim`` (cummax's rules)."""
    return _cum_extreme("cummin", input, dim, False)
