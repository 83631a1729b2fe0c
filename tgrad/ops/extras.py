"""More composite ops PyTorch code reaches for (no primitive or kernel of their own):
NaN-aware sums, nan_to_num, xlogy, logit, diff, repeat_interleave, take, inner, unflatten,
fliplr/flipud, index_fill/index_copy/index_put, and the in-place forms of composites.

Branches a ``where`` does not take are kept finite (their zero gradient times an inf would
be NaN), as in composite.py.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula, fw_level
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.backends import _numpy_nan as _np_nan
from tgrad.cuda.index_errors import DeviceIndexError
from tgrad.ops import composite as cp
from tgrad.ops import elementwise as ew
from tgrad.ops import gathering as ga
from tgrad.ops import scatter_reduce as sr
from tgrad.ops._common import (
    backend_of,
    check_operands,
    fresh,
    int_tuple,
    require_tensor,
    require_tensor_or_number,
    rounded_to,
    route_sparse,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, tensor
from tgrad.ops.creation import zeros as tgrad_zeros
from tgrad.ops.index import (
    AdvancedIndex,
    IndexAdd,
    byte_mask_fill_error,
    fills_by_masked_fill,
    getitem,
    normalize_key,
)
from tgrad.ops.inplace import alias_closure, apply_inplace, inplace_method, overlapping
from tgrad.ops.reduce import _dim_or_axis, _keepdim_or_keepdims
from tgrad.ops.shape import cat, narrow
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["nansum", "nanmean", "nan_to_num", "xlogy", "logit", "diff", "repeat_interleave",
           "take", "inner", "unflatten", "fliplr", "flipud", "index_fill", "index_copy",
           "index_put"]


# ------------------------------------------------------------------------------ NaN-aware
class NanToZero(Function):
    """y = 0 where x is NaN, else x;  dx = g * (x is not NaN): a product, as PyTorch's
    nansum backward, so an infinite g (nanmean of an all-NaN slice divides by 0) gives NaN
    at the NaN positions, where a ``where`` would give 0."""

    node_name = "NansumBackward0"

    @staticmethod
    def forward(ctx, x):
        if x._device.type == "cpu" and _np_nan.fast_dtype(x._data.dtype):
            # CPU float32/float64: a copy with +0.0 written at the NaNs (the where's bits)
            y, nan = _np_nan.nan_to_zero(x._data)
            # no NaN: kept would be all ones, saved as None (dx = g * 1 = g)
            ctx.save_for_backward(None if nan is None else wrap(~nan, x.device))
            return wrap(y, x.device)
        kept = ew.logical_not(ew.isnan(x))
        ctx.save_for_backward(kept)
        return ew.where(kept, x, 0.0)

    @staticmethod
    def backward(ctx, g):
        (kept,) = ctx.saved_tensors
        if kept is None:  # g * 1.0 is g, bit for bit (NaN, inf and -0.0 included)
            return g
        return g * kept.to(g.dtype)


@tensor_method("nansum")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None,  # noqa: A002
           axis=None, keepdims=None) -> Tensor:
    """sum treating NaN as 0;  dx = g * (x is not NaN)."""
    require_tensor("nansum", input)
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("nansum", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("nansum", keepdim, keepdims)
    if not input.dtype.is_floating_point:
        if input.dtype.is_complex:
            raise RuntimeError(f"nansum on CPU does not support complex inputs (got "
                               f"{input.dtype}); use .sum() or nansum .real and .imag apart")
        return input.sum(dim, keepdim, dtype=dtype)
    return NanToZero.apply(input).sum(dim, keepdim, dtype=dtype)


@tensor_method("nanmean")
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None,  # noqa: A002
            axis=None, keepdims=None) -> Tensor:
    """mean over the non-NaN elements (NaN where there are none, and a NaN gradient there,
    as PyTorch)."""
    require_tensor("nanmean", input)
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("nanmean", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("nanmean", keepdim, keepdims)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.name}")
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
        if not dt.is_floating_point:
            raise RuntimeError(f"nanmean(): could not infer output dtype. Optional dtype must "
                               f"be either a floating point or complex dtype. Got: {dt.name}")
        input = input.to(dt)  # noqa: A001
    kept = ew.logical_not(ew.isnan(input))
    # (the int64 count divides as it is: PyTorch does not round it to a half dtype)
    return nansum(input, dim, keepdim) / kept.sum(dim, keepdim)


@tensor_method("nan_to_num")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest finite value),
    -inf -> ``neginf`` (its lowest);  dx = g where x is finite, else 0."""
    require_tensor("nan_to_num", input)
    try:
        if input.dtype.is_complex:  # PyTorch: the real and imaginary parts each replaced
            from tgrad.ops.complex_ops import complex as make_complex
            from tgrad.ops.complex_ops import imag, real
            return make_complex(nan_to_num(real(input), nan, posinf, neginf),
                                nan_to_num(imag(input), nan, posinf, neginf))
        if not input.dtype.is_floating_point:
            return input.clone()
        info = ml_dtypes.finfo(input.dtype.np)  # bfloat16 too (np.finfo may not know it)
        hi = float(info.max) if posinf is None else posinf
        lo = float(info.min) if neginf is None else neginf
        if input.device.type == "cpu" and all(type(v) in (int, float) for v in (nan, hi, lo)):
            # one copy, masked only where x is not finite (the wheres below: 6 passes)
            from tgrad.backends import numpy as np_backend
            out = wrap(np_backend._nan_to_num(input._data, nan, hi, lo), input.device)
            if (input.requires_grad and is_grad_enabled()) or fw_level() is not None:
                return _NanToNum.apply(input, out)  # (a graph or forward-AD tangents)
            return out
        x = ew.where(ew.isnan(input), nan, input)
        return ew.where(ew.eq(x, np.inf), hi, ew.where(ew.eq(x, -np.inf), lo, x))
    except RuntimeError as e:  # (free when nothing raises) a sparse COO input
        return route_sparse("nan_to_num", e, input, nan=nan, posinf=posinf, neginf=neginf)


inplace_method("nan_to_num_", nan_to_num)


_NATIVE_FLOATS = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))


class _NanToNum(Function):
    """y = nan_to_num(x) (computed before, ``out``: same shape and dtype as x; CPU only);
    dx = g where x is finite, else 0: a where of tgrad ops (differentiable again) under
    ``differentiable_formula``, else the backend's bool-mask product (the same bits: g's,
    or +0.0). The mask of NumPy's float16/32/64 is np.isfinite's (the same as ew.isfinite's
    x == x and |x| != inf, in one pass)."""

    node_name = "NanToNumBackward0"

    @staticmethod
    def forward(ctx, x, out):
        # (the mask, not x: nan_to_num_ overwrites x)
        ctx.finite = wrap(np.asarray(np.isfinite(x._data)), x.device) \
            if x._data.dtype in _NATIVE_FLOATS else ew.isfinite(x)
        return out

    @staticmethod
    def backward(ctx, g):
        if not differentiable_formula() and g._device.type == "cpu" \
                and g._data.dtype in _NATIVE_FLOATS:
            from tgrad.backends import numpy as np_backend
            return wrap(np_backend._masked_product(g._data, ctx.finite._data), g.device), None
        return ew.where(ctx.finite, g, 0.0), None


class Xlogy(Function):
    """y = x log(y), 0 where x == 0 unless y is NaN (PyTorch's rule); PyTorch's backward:
    dx = xlogy(g, y), 0 where x == 0 and y <= 0;  dy = g x / y (NaN at x = y = 0, as
    PyTorch). xlogy(g, y) is 0 where g == 0, so a zero upstream gradient stays 0 at y = 0
    (x log y would give 0 * -inf). Both are tgrad ops, so the backward differentiates again."""

    node_name = "XlogyBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        # x == 0 (y not NaN) gives +0.0, as PyTorch's `if (x == 0) return 0`: x log y would
        # be -0.0 for 0 < y < 1 or x = -0.0, and NaN for y <= 0 or y = inf; log's argument
        # there is replaced by 1 (the branch not taken stays finite)
        zero = ew.logical_and(ew.eq(x, 0), ew.eq(y, y))
        return ew.where(zero, 0.0, x * ew.log(ew.where(zero, 1.0, y)))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad
        gx = ew.where(ew.logical_and(ew.eq(x, 0), ew.le(y, 0)), 0.0, Xlogy.apply(g, y)) \
            if need_x else None
        gy = g * x / y if need_y else None
        return gx, gy


def number_operand_nodes(cls: type) -> dict:
    """PyTorch's nodes of binary op ``cls`` (node_name ``...Backward0``) with a number
    operand, by (input is a tensor, other is a tensor): ``...Backward1`` for (number,
    tensor), ``...Backward2`` for (tensor, number), without the number's edge (it is made a
    0-d tensor here); ``cls`` itself for two tensors."""
    base = cls.node_name[:-1]
    return {(False, True): ew.node_variant(cls, base + "1", hidden_edges=(0,)),
            (True, False): ew.node_variant(cls, base + "2", hidden_edges=(1,))}


_XLOGY_NODES = number_operand_nodes(Xlogy)


@tensor_method("xlogy")
def xlogy(input, other) -> Tensor:  # noqa: A002
    """x log(y), 0 where x == 0 unless y is NaN (PyTorch's rule), in the promoted dtype;
    dx = xlogy(g, y) (0 where x == 0 and y <= 0), dy = g x / y (see ``Xlogy``)."""
    cls = _XLOGY_NODES.get((isinstance(input, Tensor), isinstance(other, Tensor)), Xlogy)
    x, y = _tensors_in_result_dtype(input, other)
    return cls.apply(x, y)


def _tensors_in_result_dtype(a, b, op: str = "xlogy") -> tuple:
    """a and b as tensors of their promoted floating dtype (numbers become 0-d tensors);
    anything but a tensor or a number is PyTorch's TypeError naming ``op``."""
    for pos, (name, v) in enumerate((("input", a), ("other", b)), 1):
        require_tensor_or_number(op, v, name, pos)
    check_operands(op, a, b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):  # (PyTorch's TypeError)
        raise TypeError(f"{op}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}), but expected one of: "
                        f"(Tensor input, Tensor other), (Number self, Tensor other), "
                        f"(Tensor self, Number other)")
    t = a if isinstance(a, Tensor) else b
    dt = dtypes.result_type(a, b)
    if not dt.is_floating_point:
        if dt.is_complex:
            raise NotImplementedError(f"xlogy: \"xlogy_cpu\" not implemented for "
                                      f"'{dtypes.SCALAR_TYPE_NAMES[dt]}' (floating point "
                                      f"inputs only); use x * log(y) for complex values")
        dt = dtypes.get_default_dtype()
    return tuple(v.to(dt) if isinstance(v, Tensor) else tensor(float(v), dtype=dt,
                                                                device=t.device)
                 for v in (a, b))


class Logit(Function):
    """y = log(x / (1 - x)) (log x - log1p(-x) below 1/4, log1p((2x - 1) / (1 - x)) above), x
    first clamped to ``bounds`` (lo, hi) = (eps, 1 - eps) when eps is given, as PyTorch's
    x < lo ? lo : (x > hi ? hi : x) (eps > 1/2: lo > hi).  dx = g / |x (1 - x)| (g * inf
    at 0 and 1, -0.0 included: the product is >= 0 inside the domain, abs only turns -0.0
    into +0.0), PyTorch's rule outside the domain: 0 outside [lo, hi] (the bounds
    included in the domain), NaN outside [0, 1] without eps."""

    node_name = "LogitBackward0"

    @staticmethod
    def forward(ctx, x, bounds):
        ctx.save_for_backward(x)
        ctx.bounds = bounds
        xc = x if bounds is None else ew.where(ew.lt(x, bounds[0]), bounds[0], ew.where(
            ew.gt(x, bounds[1]), bounds[1], x))
        # one primitive (one kernel on cuda): the backends' "logit" formula, which avoids
        # log x - log1p(-x)'s cancellation near 1/2
        return wrap(backend_of(xc).unary("logit", xc._data), xc.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return Logit.derivative_times(g, x, ctx.bounds), None

    @staticmethod
    def derivative_times(t: Tensor, x: Tensor, bounds) -> Tensor:
        """logit'(x) t (the backward's g, or forward mode's tangent: a diagonal Jacobian),
        with the constant NaN / 0 outside the domain (not a multiple of t: the vjp of the
        vjp would give 0 there, PyTorch's tangent is NaN)."""
        lo, hi, outside = (0.0, 1.0, math.nan) if bounds is None else (*bounds, 0.0)
        out = ew.logical_or(ew.lt(x, lo), ew.gt(x, hi))
        safe = ew.where(out, 0.5, x)  # keeps the branch not taken finite
        return ew.where(out, outside, t / ew.abs(safe * (1.0 - safe)))


@tensor_method("logit")
def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when ``eps`` is given;
    dx = 1 / (x (1 - x)) (see ``Logit``). ``eps`` and 1 - eps are rounded to the input's
    dtype first, as PyTorch does (0.1 is 0.0999755859375 in float16, and 1 - 1e-6 is 1).
    Bool and integer tensors give the default float dtype (logit(True) = inf). A negative
    ``eps`` is no eps (PyTorch: no clamp, and a NaN gradient outside [0, 1])."""
    require_tensor("logit", input)
    if eps is not None and eps < 0:
        eps = None
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        # bool and integers in the default float dtype first: a bool has no neg, and uint8
        # would negate modulo 256 inside log1p(-x) (logit(uint8 1) = -log 256, not inf)
        input = input.to(dtypes.get_default_dtype())  # noqa: A001
    elif input.dtype.is_complex:
        raise NotImplementedError(f"logit: \"logit_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (floating point "
                                  f"inputs only); use log(x / (1 - x)) for complex values")
    bounds = None
    if eps is not None:
        lo = np.asarray(eps).astype(input.dtype.np)
        bounds = (float(lo), float((np.asarray(1, input.dtype.np) - lo).astype(input.dtype.np)))
    (x,), half = widen_halves(input)
    return rounded_to(Logit.apply(x, bounds), half)


# ------------------------------------------------------------------------------ shapes, copies
@tensor_method("diff")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,  # noqa: A002
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``dim`` (after concatenating prepend / append);
    n=0 gives a copy of input, without prepend / append (as PyTorch)."""
    require_tensor("diff", input)
    n = _int_arg("diff", "n", n, 2)
    d = _wrap_dim(dim, input.ndim, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for name, t in (("prepend", prepend), ("append", append)):
        if t is not None:
            require_tensor("diff", t, name, None)
        if t is not None and t.ndim != input.ndim:
            raise RuntimeError(f"diff expects prepend or append to be the same dimension as "
                               f"input (got {name} of shape {list(t.shape)} for input of "
                               f"shape {list(input.shape)})")
        if t is not None:
            for i in range(input.ndim):
                if i != d and t.shape[i] != input.shape[i]:
                    raise RuntimeError(
                        f"diff expects the shape of tensor to prepend or append to match that "
                        f"of input except along the differencing dimension; input.size({i}) = "
                        f"{input.shape[i]}, but got tensor.size({i}) = {t.shape[i]}")
    if n == 0:  # PyTorch (and NumPy): the input itself (a copy), prepend / append unused
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    (x,), half = widen_halves(x)  # halves: n subtractions in float32, one rounding
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        x = narrow(x, d, 1, m - 1) - narrow(x, d, 0, m - 1) if x.dtype is not dtypes.bool_ \
            else ew.ne(narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1))
    return rounded_to(x, half)


@tensor_method("repeat_interleave")
def repeat_interleave(input: Tensor, repeats=None, dim: int | None = None, *,  # noqa: A002
                      output_size: int | None = None) -> Tensor:
    """Each element (slice along ``dim``; flattened when dim is None) repeated ``repeats``
    times (an int, or a tensor of one count per element); the gradient sums the copies.
    With one tensor argument: arange(len) (in its dtype, int32 or int64) with element i
    repeated input[i] times."""
    require_tensor("repeat_interleave", input)
    if repeats is None:
        if input.ndim != 1:  # (PyTorch's text: a 0-d count is refused too)
            raise RuntimeError(f"repeat_interleave only accept 1D vector as repeat (got a "
                               f"tensor of shape {list(input.shape)})")
        dt = input.dtype if input.dtype in (dtypes.int32, dtypes.int64) else dtypes.int64
        return repeat_interleave(arange(input.numel(), dtype=dt, device=input.device), input,
                                 0, output_size=output_size)
    if isinstance(repeats, Tensor) and repeats.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if dim is not None and input.ndim == 0:
        raise IndexError(f"repeat_interleave: Dimension specified as {dim} but tensor has no "
                         f"dimensions")
    x = input.reshape(-1) if dim is None or input.ndim == 0 else input
    d = 0 if dim is None else _wrap_dim(dim, x.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor):
        if repeats.dtype not in (dtypes.int32, dtypes.int64):  # PyTorch's type and text
            raise NotImplementedError(
                f"repeat_interleave(): repeats must be an int32 or int64 tensor, got "
                f"{repeats.dtype.name}; convert it with .long() (\"repeat_interleave_cpu\" "
                f"not implemented for '{dtypes.SCALAR_TYPE_NAMES[repeats.dtype]}')")
        counts = np.asarray(repeats.numpy(force=True)).reshape(-1)
        if counts.size == 1:
            repeats = int(counts[0])
        else:
            _check_output_size(output_size, int(counts.sum()))
            if counts.size != x.shape[d]:
                raise RuntimeError(f"repeats must have the same size as input along dim, but "
                                   f"got repeats.size(0) = {counts.size} and input.size({d}) "
                                   f"= {x.shape[d]}")
            if (counts < 0).any():
                raise RuntimeError("repeats can not be negative")
            idx = np.repeat(np.arange(counts.size), counts)
            return ga.index_select(x, d, tensor(idx, device=x.device))
    if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, bool):
        raise TypeError(f"repeat_interleave(): argument 'repeats' must be an int or an integer "
                        f"Tensor, not {type(repeats).__name__}")
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    _check_output_size(output_size, x.shape[d] * repeats)
    shape = list(x.shape)
    wide = shape[:d + 1] + [repeats] + shape[d + 1:]
    out = x.unsqueeze(d + 1).expand(wide)
    return cp.own_copy(out.reshape(shape[:d] + [shape[d] * repeats] + shape[d + 1:]), input)


def _check_output_size(output_size: int | None, total: int) -> None:
    """repeat_interleave's ``output_size`` (the repeated length along dim, a hint in
    PyTorch) must be the length the repeats give: PyTorch's error otherwise."""
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got "
                           f"{output_size}")


@tensor_method("take")
def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """input.flatten()[index] (shape of index; negative indices count from the end)."""
    require_tensor("take", input)
    require_tensor("take", index, "index", 2)
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{index.dtype.name}")
    n = input.numel()
    if index.numel() and not ga.checked_on_device("take():", index, n, 0, (n,),
                                                  negatives=True):
        lo, hi = int(index.min()), int(index.max())
        if lo < -n or hi >= n:
            raise IndexError(f"take(): index {lo if lo < -n else hi} out of range for tensor "
                             f"of size {list(input.shape)}")
    return Take.apply(input, (index,))


class Take(Function):
    """y = x.flatten()[index] (index's shape; negative indices count from the end): one
    node, PyTorch's TakeBackward0 (edge: x).
        dx = zeros(numel); dx[index] += g; reshaped to x's shape
    (repeats add up; double backward gathers again). Saves the key (index's array), as the
    indexing it replaces did."""

    name = "take"
    node_name = "TakeBackward0"
    keeps_indices = True
    saved_attributes = {"_saved_index": "index", "_saved_self_sym_sizes": "x_shape"}

    @staticmethod
    def forward(ctx, x, spec):
        # spec: (index,), no tensor argument (the node's only edge is x's, PyTorch's)
        (index,) = spec
        flat = x.reshape(-1)
        # (a 0-d index would be basic indexing, a view of x: taken as one of (1,))
        key = normalize_key(index if index.ndim else index.reshape(1), x.device, 1)[0]
        ctx.key, ctx.index, ctx.x_shape, ctx.n = key, index, x.shape, flat.shape
        y = AdvancedIndex.apply(flat, key)
        return y if index.ndim else fresh(y.reshape(()))

    @staticmethod
    def backward(ctx, g):
        gi = g if ctx.index.ndim else g.reshape(1)
        return IndexAdd.apply(gi, ctx.key, ctx.n).reshape(ctx.x_shape), None


@tensor_method("inner")
def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Sum over the last dims: out[a..., b...] = sum_k input[a..., k] other[b..., k]
    (a product when either is 0-d)."""
    require_tensor("inner", input)
    require_tensor("inner", other, "other", 2)
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    rows_a, rows_b = math.prod(input.shape[:-1]), math.prod(other.shape[:-1])
    out = input.reshape(rows_a, k) @ other.reshape(rows_b, k).T
    return out.reshape(input.shape[:-1] + other.shape[:-1])


@tensor_method("unflatten")
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:  # noqa: A002
    """Split dim ``dim`` into ``sizes`` (one entry may be -1). The -1 is inferred from the
    size of dim ``dim`` alone (PyTorch's infer_size over that dim), so it is defined even when
    another dim is 0: zeros(0, 1, 1, 2).unflatten(-1, (2, -1)) has shape (0, 1, 1, 2, 1)."""
    require_tensor("unflatten", input)
    d = _wrap_dim(dim, input.ndim, "unflatten")
    sizes = int_tuple("unflatten", "sizes", sizes, 3)  # (int() truncated a float size)
    known = math.prod(v for v in sizes if v != -1)
    n = input.shape[d] if input.ndim else 0
    if -1 in sizes and known == 0 and n == 0 and sizes.count(-1) == 1:
        raise RuntimeError(f"unflatten: cannot reshape tensor of 0 elements into shape "
                           f"{list(sizes)} because the unspecified dimension size -1 can be "
                           f"any value and is ambiguous")
    if input.ndim == 0 or not sizes or sizes.count(-1) > 1 or (
            -1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({n}) in the input tensor")
    sizes = tuple(n // known if v == -1 else v for v in sizes)
    return input.reshape(input.shape[:d] + sizes + input.shape[d + 1:])


@tensor_method("fliplr")
def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """flip along dim 1 (input at least 2-D)."""
    require_tensor("fliplr", input)
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return cp.flip(input, (1,))


@tensor_method("flipud")
def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """flip along dim 0 (input at least 1-D)."""
    require_tensor("flipud", input)
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return cp.flip(input, (0,))


# ------------------------------------------------------------------------------ indexed writes
def _dim_key(input: Tensor, dim: int, index: Tensor, op: str,  # noqa: A002
             negatives: bool = False, on_device: bool = True) -> tuple:
    """The key writing the slices at ``index`` along ``dim`` (of input viewed at least 1-D);
    int64 indices in range ([-n, n) where ``negatives``). On cuda (``on_device``) the index
    as it is, range-checked on the device (no synchronization: a KV-cache update
    ``index_copy_`` can be captured; the writers wrap negatives, keep the last of repeats);
    otherwise read on the host, wrapped (index_fill's value gradient removes repeats)."""
    d = _wrap_dim(dim, input.ndim, op)
    require_tensor(op, index, "index", 3)  # (PyTorch's TypeError for a non-tensor index)
    if index.dtype is not dtypes.int64:
        # PyTorch's: index_fill's is an IndexError, index_copy's a RuntimeError
        raise (IndexError if op == "index_fill" else RuntimeError)(
            f"{op}_(): Expected a long (int64) tensor for index, but got {index.dtype.name}")
    if index.ndim > 1:
        if op == "index_fill":  # PyTorch's text and type
            raise RuntimeError(f"Index has to be a vector/scalar (index_fill got an index of "
                               f"shape {list(index.shape)})")
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    n = input.shape[d] if input.ndim else 1
    if on_device and input.device == index.device and \
            ga.checked_on_device(f"{op}():", index, n, d, input.shape, negatives):
        return (slice(None),) * d + (index.reshape(-1),)
    idx = np.asarray(index.numpy(force=True)).reshape(-1)
    if idx.size and (idx.min() < (-n if negatives else 0) or idx.max() >= n):
        bad = idx[(idx < (-n if negatives else 0)) | (idx >= n)][0]
        raise IndexError(f"{op}(): index {int(bad)} is out of bounds for dimension {d} with "
                         f"size {n}")
    return (slice(None),) * d + (tensor(idx % n if n else idx, device=input.device),)


@tensor_method("index_fill")
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """A copy with the slices at ``index`` along ``dim`` set to ``value`` (a number or a
    0-d tensor, whose gradient sums the filled positions once each)."""
    require_tensor("index_fill", input)
    if isinstance(value, Tensor) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    if not input.dtype.is_complex and (
            value.dtype.is_complex if isinstance(value, Tensor)
            else isinstance(value, (complex, np.complexfloating))):  # PyTorch's error, even
        raise RuntimeError("index_fill_(): Converting complex Scalar to non-complex type is "
                           "not supported")  # for 1+0j and a bool input
    if not isinstance(value, Tensor):
        dtypes.check_value_fits("index_fill", value, input.dtype)
    elif value.dtype is not input.dtype:  # PyTorch casts a 0-d tensor value (checked)
        dtypes.check_tensor_value_fits("index_fill", value, input.dtype)
        value = value.to(input.dtype)
    x = input.reshape(1) if input.ndim == 0 else input
    # a value tensor's gradient sums the filled positions once each: repeats removed on
    # the host; a number's fill needs no such thing (on cuda: no host read)
    key = _dim_key(x, dim, index, "index_fill", negatives=True,
                   on_device=not isinstance(value, Tensor))
    along = (len(key) - 1, index)
    if isinstance(value, Tensor):  # (one IndexFillBackward1 node: edges input, value)
        unique = tensor(np.unique(key[-1].numpy(force=True)), device=x.device)
        nkey = normalize_key(key[:-1] + (unique,), x.device)[0]
        out = ga.INDEX_FILL_TENSOR.apply(x, value, nkey, (), along)
    else:  # (one IndexFillBackward0 node: edge input)
        out = ga.INDEX_FILL.apply(x, value, normalize_key(key, x.device)[0], along)
    return fresh(out.reshape(())) if input.ndim == 0 else out


@tensor_method("index_fill_")
def index_fill_(self: Tensor, dim: int, index: Tensor, value) -> Tensor:
    """``index_fill`` in place. Into an expanded (overlapping) tensor without grad, as
    PyTorch's: every element sharing memory with a filled one holds the value too."""
    if isinstance(index, Tensor) and overlapping(self):  # rare
        sel = index_fill(tgrad_zeros(self.shape, dtype=dtypes.bool_, device=self.device),
                         dim, index, True)
        # the value as index_fill checks and casts it: a 1-element fill (keeps its graph)
        one = tgrad_zeros(1, dtype=self.dtype, device=self.device)
        value = index_fill(one, 0, tensor([0], device=self.device), value).reshape(())
        mask = alias_closure(self, sel)
        return apply_inplace(self, "index_fill_", lambda x, v: ew.where(mask, v, x), value,
                             overlap_ok=True)
    return apply_inplace(self, "index_fill_", index_fill, dim, index, value)


@tensor_method("index_copy")
@autocast_policy(None, cpu="promote")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """A copy with source's slices written at ``index`` along ``dim``."""
    require_tensor("index_copy", input)
    require_tensor("index_copy", source, "source", 4)
    x = input.reshape(1) if input.ndim == 0 else input
    src = source.reshape(1) if source.ndim == 0 else source
    key = _dim_key(x, dim, index, "index_copy")
    d = len(key) - 1
    want = x.shape[:d] + (index.numel(),) + x.shape[d + 1:]
    if src.ndim == x.ndim and src.shape[d] != index.numel():  # PyTorch's IndexError
        raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal "
                         f"to source.size(dim) ({src.shape[d]})")
    if src.shape != want or src.dtype is not x.dtype:
        raise RuntimeError(f"index_copy(): source of shape {list(source.shape)} and dtype "
                           f"{source.dtype.name} must have shape {list(want)} and dtype "
                           f"{input.dtype.name}")
    nkey = normalize_key(key, x.device)[0]
    part_key = tuple(slice(0, n) for n in src.shape)  # (all of source is written)
    out = ga.INDEX_COPY.apply(x, src, nkey, part_key, (d, index))  # (IndexCopyBackward0)
    return fresh(out.reshape(())) if input.ndim == 0 else out


@tensor_method("index_put")
def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy with values written (``accumulate``: added) at the advanced index ``indices``
    (a tuple of index tensors)."""
    require_tensor("index_put", input)
    require_tensor("index_put", values, "values", 2)  # (PyTorch: no number)
    out = index_put_(input.clone(), indices, values, accumulate)
    out._storage.version = 0  # a new tensor, written before anyone saw it (PyTorch's 0)
    return out


def _mask_fill_index(key: tuple, values: Tensor) -> bool:
    """PyTorch's masked_fill_ dispatch of index_put_ (no accumulate): one bool mask as the
    only index tensor and a one-element CPU value, which is then cast (item())."""
    return (values.numel() == 1 and values.device.type == "cpu"
            and len([k for k in key if k is not None]) == 1
            and next(k for k in key if k is not None).dtype in (dtypes.bool_, dtypes.uint8))


@tensor_method("index_put_")
def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """self[indices] = values (or += with ``accumulate``, repeated indices adding up)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, k in enumerate(indices):  # PyTorch takes no None, int, slice or list here
        if not isinstance(k, Tensor):
            raise TypeError(f"index_put_(): expected Tensor as element {i} in argument 0 "
                            f"(indices), but got {type(k).__name__}")
        if k.dtype in (dtypes.int8, dtypes.int16):  # a 0-d one too (unlike t[k])
            raise IndexError(f"tensors used as indices must be long, int, byte or bool "
                             f"tensors (index_put_ got {k.dtype})")
    require_tensor("index_put_", values, "values", 2)  # (PyTorch: no number)
    key = tuple(indices)
    if isinstance(values, Tensor) and values.dtype is not self.dtype and (
            accumulate or not _mask_fill_index(key, values)):
        from tgrad.ops.inplace import index_put_dtype_error
        raise index_put_dtype_error(self, values)
    if (not accumulate and len(key) == 1 and key[0].dtype is dtypes.uint8
            and fills_by_masked_fill(values)):  # (a 0-d mask too)
        raise byte_mask_fill_error("index_put_")
    if accumulate:
        nkey, _ = normalize_key(key, self.device)
        vals = values if isinstance(values, Tensor) else tensor(values, dtype=self.dtype,
                                                                device=self.device)
        if vals.ndim == 0 and vals.device.type == "cpu":  # a number, as PyTorch reads it
            vals = vals.to(self.device)
        try:
            shape = getitem(self.detach(), key).shape
        except IndexError as e:  # an out-of-range index: the text names this op
            msg = str(e)
            if msg.startswith("index: ") and not isinstance(e, DeviceIndexError):
                raise IndexError(f"index_put_: {msg[len('index: '):]}") from None
            raise
        add = IndexAdd.apply(vals.to(self.dtype).expand(shape), nkey, self.shape)
        return apply_inplace(self, "index_put_", lambda x, a: x + a, add)
    self[key] = values
    return self


# ------------------------------------------------------------------------------ in-place forms
for _name, _fn in (("index_add_", ga.index_add), ("scatter_", ga.scatter),
                   ("scatter_add_", ga.scatter_add), ("lerp_", cp.lerp),
                   ("addcmul_", cp.addcmul), ("addcdiv_", cp.addcdiv),
                   ("clamp_min_", cp.clamp_min), ("clamp_max_", cp.clamp_max),
                   ("index_copy_", index_copy),
                   ("xlogy_", xlogy), ("logit_", logit),
                   ("scatter_reduce_", sr.scatter_reduce), ("index_reduce_", sr.index_reduce)):
    inplace_method(_name, _fn)
