"""GPU primitives over DeviceArrays (tgrad/cuda/array.py): the same names and signatures as
tgrad/backends/numpy.py, implemented as thin launches of the Triton kernels in
tgrad/kernels/. Views are metadata only (no kernel).

TEMPORARY HOST PATH: ``_host_path`` (copy to host -> NumPy backend -> copy back) serves
any primitive of the NumPy backend not defined here (through the module ``__getattr__``
below; there are none today: ``ops_without_native_kernel()``, printed by
``python -m tgrad info``, is empty) and the corners the kernels do not cover (cross_entropy
over zero classes, and dtypes the ops never pass, such as an integer ``mean``).
``host_path_used()`` lists the host paths actually hit in this process.
"""

from __future__ import annotations

import functools
import math
import sys

import numpy as np

from tgrad import dtypes
from tgrad._strides import (
    ellipsis_dims,
    expand_strides,
    new_dim_stride,
    squeeze_geometry,
    view_strides,
)
from tgrad.backends import numpy as _np_backend
from tgrad.cuda import array as _array_module
from tgrad.cuda import runtime
from tgrad.cuda.array import DeviceArray, contiguous_strides
from tgrad.kernels import elementwise as ew
from tgrad.kernels import reduction as red
from tgrad.kernels.launch import is_half, launch_ew

name = "triton"
HALF_TYPES = _np_backend.HALF_TYPES
compute_dtype = _np_backend.compute_dtype


def _dev() -> int:
    return runtime().current_device()


# ---------------------------------------------------------------- creation and movement
def empty(shape: tuple, dtype: np.dtype) -> DeviceArray:
    return DeviceArray.empty(tuple(shape), dtype, _dev())


_c_strides = functools.lru_cache(maxsize=512)(contiguous_strides)  # (per launch: cached)


def empty_like_layout(shape: tuple, dtype: np.dtype, inputs) -> DeviceArray:
    """A new array for an elementwise result over ``inputs`` (arrays of ``shape``, broadcast
    dims at stride 0, or numbers), in the inputs' memory order as the NumPy backend's
    (NumPy's order='K', npyiter_find_best_axis_ordering): the axes sorted by the inputs'
    |strides|, where an input whose stride is 0 in either of two axes (broadcast or size 1)
    has no say, and two axes leave C order only when every input with a say swaps them. So
    ``x.mT + 1`` keeps ``x.mT``'s strides, as on the CPU and in PyTorch."""
    shape = tuple(shape)
    if len(shape) < 2:
        return empty(shape, dtype)
    cs = _c_strides(shape)
    arrs = []
    for a in inputs:
        if type(a) is DeviceArray and a.shape == shape:
            if a.estrides == cs:  # the common case: a C-contiguous input, a C-order result
                return empty(shape, dtype)
            arrs.append(a)
    if not arrs or math.prod(shape) == 0 or any(a.is_contiguous() for a in arrs):
        return empty(shape, dtype)
    sts = [[0 if n == 1 else abs(s) for n, s in zip(shape, a.estrides)] for a in arrs]
    order = list(range(len(shape) - 1, -1, -1))  # fastest axis first
    for i0 in range(1, len(order)):
        ax0, pos = order[i0], i0
        for i1 in range(i0 - 1, -1, -1):
            ax1 = order[i1]
            ambiguous, swap = True, False
            for st in sts:
                if st[ax0] and st[ax1]:
                    if st[ax1] <= st[ax0]:
                        swap = False
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if ambiguous:
                continue
            if not swap:
                break
            pos = i1
        if pos != i0:
            order.insert(pos, order.pop(i0))
    slowest = order[::-1]
    if slowest == sorted(slowest):
        return empty(shape, dtype)
    base = empty(tuple(shape[a] for a in slowest), dtype)
    estrides = [0] * len(shape)
    for a, st in zip(slowest, base.estrides):
        estrides[a] = st
    return base.view(shape, tuple(estrides))


def full(shape: tuple, value, dtype: np.dtype) -> DeviceArray:
    out = empty(shape, dtype)
    fill_(out, value)
    return out


def from_host(arr: np.ndarray) -> DeviceArray:
    return DeviceArray.from_host(np.asarray(arr), _dev())


def to_host(x: DeviceArray) -> np.ndarray:
    return x.to_host()


def _scalar(value, dtype: np.dtype) -> DeviceArray:
    """A 0-d device array holding ``value`` cast to ``dtype``."""
    return _as_device(value, dtype)


def _as_device(x, dtype: np.dtype) -> DeviceArray:
    if isinstance(x, DeviceArray):
        return x
    if dtype in _F8:  # PyTorch's float8 rounding (dtypes.to_float8), not ml_dtypes'
        return from_host(_np_backend.cast(np.asarray(x), dtype))
    return from_host(np.asarray(x).astype(dtype))


# float8 on cuda: float8_e4m3fn (Triton's fp8e4nv) and float8_e5m2 (fp8e5); the other float8
# dtypes are CPU-only (dtypes.check_float8_device)
_F8 = dtypes.FLOAT8_NP
_TO_F8 = {np.dtype(dtypes.float8_e4m3fn.np): ew.f_to_float8e4nv,
          np.dtype(dtypes.float8_e5m2.np): ew.f_to_float8e5}
_U8 = np.dtype(np.uint8)
_F32 = np.dtype(np.float32)


def _bits(a: DeviceArray) -> DeviceArray:
    """The same bytes of a 1-byte array read as uint8 (float8 bits move as integers)."""
    return DeviceArray(a.buffer, a.shape, a.estrides, a.offset, _U8)


def _float8_copy(dst: DeviceArray, src: DeviceArray) -> None:
    """copy_ where src or dst is float8 (one kernel; two through float32 for an integer or
    bool destination). Same dtype: the bits. Into float8: f_to_float8* (PyTorch's rounding,
    see kernels/elementwise.py), writing the bits into dst. Out of float8: its exact float32
    value, stored in a float dst; an integer/bool dst takes that float32's cast (PyTorch's:
    float8 converts to float first; 128.0 into int8 wraps to -128)."""
    if src.dtype == dst.dtype:
        launch_ew(ew.f_identity, _bits(dst), [expand(_bits(src), dst.shape)], upcast=False)
    elif dst.dtype in _F8:
        launch_ew(_TO_F8[dst.dtype], _bits(dst), [expand(src, dst.shape)], upcast=False)
    elif _float(dst.dtype):
        launch_ew(ew.f_from_float8, dst, [expand(src, dst.shape)], upcast=False)
    else:
        copy_(dst, cast(src, _F32))


def copy_(dst: DeviceArray, src) -> None:
    """Write ``src`` (broadcast to dst's shape, cast to dst's dtype) into the view dst."""
    src = _as_device(src, dst.dtype)
    if dst.dtype in _F8 or src.dtype in _F8:
        return _float8_copy(dst, src)
    if dtypes.is_small_int_cast(src.dtype, dst.dtype):  # PyTorch's CPU cast: truncate, then
        src = dtypes.float_to_small_int_source(_this, src, dst.dtype)  # wrap (300.0 -> 44)
    launch_ew(ew.f_identity, dst, [expand(src, dst.shape)], upcast=False)


_this = sys.modules[__name__]  # this backend, for the rules in dtypes written once for all


def fill_(dst: DeviceArray, value) -> None:
    copy_(dst, _scalar(value, dst.dtype))


def clone(x: DeviceArray) -> DeviceArray:
    out = empty(x.shape, x.dtype)
    copy_(out, x)
    return out


def contiguous(x: DeviceArray) -> DeviceArray:
    return x if x.is_contiguous() else clone(x)


def cast(x: DeviceArray, dtype: np.dtype) -> DeviceArray:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    out = empty_like_layout(x.shape, dtype, [x])
    copy_(out, x)
    return out


def cat(xs: list, axis: int) -> DeviceArray:
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    dt = np.result_type(*[x.dtype for x in xs])
    out = empty(tuple(shape), dt)
    start = 0
    for x in xs:
        n = x.shape[axis]
        key = (slice(None),) * axis + (slice(start, start + n),)
        copy_(basic_index(out, key), x)
        start += n
    return out


# ---------------------------------------------------------------- views (no copies)
def reshape_view(x: DeviceArray, shape: tuple):
    """A view of ``x`` with ``shape``, or None when the strides do not allow one."""
    shape = tuple(shape)
    if x.is_contiguous() and 1 not in x.shape:  # (size-1 dims: view_strides, PyTorch's)
        return x.view(shape, contiguous_strides(shape))
    st = view_strides(x.shape, x.estrides, shape)
    return None if st is None else x.view(shape, st)


def reshape_view_or_copy(x: DeviceArray, shape: tuple) -> DeviceArray:
    """A view of ``x`` with ``shape``, or of a contiguous copy when strides forbid a view."""
    v = reshape_view(x, shape)
    return v if v is not None else reshape_view(clone(x), shape)


def line_view(x: DeviceArray, axis: int) -> tuple:
    """(x as (outer, k, inner), (outer, k, inner)): the lines along ``axis`` that scan and
    sort kernels walk, one per (outer, inner) pair (a view, or of a contiguous copy)."""
    k = x.shape[axis]
    outer, inner = math.prod(x.shape[:axis]), math.prod(x.shape[axis + 1:])
    return reshape_view_or_copy(x, (outer, k, inner)), (outer, k, inner)


def reshape_copy(x: DeviceArray, shape: tuple) -> DeviceArray:
    c = clone(x)
    return c.view(tuple(shape), contiguous_strides(tuple(shape)))


def permute(x: DeviceArray, dims: tuple) -> DeviceArray:
    return x.view(tuple(x.shape[d] for d in dims), tuple(x.estrides[d] for d in dims))


def expand(x: DeviceArray, shape: tuple) -> DeviceArray:
    """Broadcast view with PyTorch's strides (tgrad._strides.expand_strides: expanded dims
    0, kept dims x's, a new leading size-1 dim the next dim's size * stride)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    st = expand_strides(x.shape, x.estrides, shape)
    if st is None:
        raise ValueError(f"expand: cannot broadcast shape {x.shape} to {shape}")
    return x.view(shape, st)


def basic_index(x: DeviceArray, key: tuple) -> DeviceArray:
    """A view for a key of ints, slices, None and at most one Ellipsis (a None's dim: an
    unsqueeze's stride there, tgrad._strides.new_dim_stride, as PyTorch)."""
    key = tuple(key)
    fill = (slice(None),) * ellipsis_dims(x.ndim, key)  # the Ellipsis, or the trailing dims
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + fill + key[i + 1:]
    else:
        key = key + fill
    shape, st, off, d = [], [], x.offset, 0
    for k in key:
        if k is None:
            shape.append(1)
            st.append(new_dim_stride(x.shape, x.estrides, d, 1))
            continue
        n, s = x.shape[d], x.estrides[d]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            m = len(range(start, stop, step))
            shape.append(m)
            st.append(s * step)
            if m:
                off += start * s
        else:
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {n}")
            off += (i % n) * s
        d += 1
    return x.view(tuple(shape), tuple(st), off)


def unsqueeze(x: DeviceArray, dim: int) -> DeviceArray:
    """``x`` with a size-1 dim at ``dim`` of PyTorch's stride (tgrad._strides.new_dim_stride);
    the other dims keep theirs."""
    st = new_dim_stride(x.shape, x.estrides, dim, 1)
    return x.view(x.shape[:dim] + (1,) + x.shape[dim:],
                  x.estrides[:dim] + (st,) + x.estrides[dim:])


def squeeze(x: DeviceArray, dims: tuple) -> DeviceArray:
    """``x`` without its size-1 dims ``dims``; the other dims keep their strides (size-1
    ones included), as PyTorch's squeeze."""
    return x.view(*squeeze_geometry(x.shape, x.estrides, dims))


def as_strided(x: DeviceArray, shape: tuple, strides: tuple, offset: int = 0) -> DeviceArray:
    """The view of ``shape`` and element ``strides`` from ``offset`` elements past x's first."""
    return x.view(tuple(shape), tuple(strides), x.offset + offset)


# ---------------------------------------------------------------- elementwise
_PROBE = {}


def _numpy_result_dtype(kind: str, op: str, *dts) -> np.dtype:
    """The dtype the NumPy backend (the oracle) gives, found on 1-element arrays."""
    key = (kind, op) + dts
    dt = _PROBE.get(key)
    if dt is None:
        arrs = [np.ones(1, d) for d in dts]
        fn = getattr(_np_backend, kind)
        dt = np.asarray(fn(op, *arrs) if kind in ("unary", "binary") else fn(*arrs)).dtype
        _PROBE[key] = dt
    return dt


def broadcast_shape(*shapes: tuple) -> tuple:
    """NumPy's broadcast shape; equal shapes (the common case) skip NumPy's ~1 µs."""
    first = shapes[0]
    for s in shapes[1:]:
        if s != first:
            return np.broadcast_shapes(*shapes)
    return first


def _float(dt: np.dtype) -> bool:
    return dt.kind == "f" or dt in HALF_TYPES


def unary(op: str, x: DeviceArray) -> DeviceArray:
    fn = ew.UNARY.get(op)
    if fn is None or (op in ew.FLOAT_ONLY and not _float(x.dtype)) or x.dtype.kind == "b" \
            and op not in ("logical_not", "bitwise_not", "abs", "sign"):
        return _host_path("unary", op, x)
    out = empty_like_layout(x.shape, _numpy_result_dtype("unary", op, x.dtype), [x])
    return launch_ew(fn, out, [x], upcast=is_half(x.dtype))


def binary(op: str, a: DeviceArray, b) -> DeviceArray:
    if (type(b) is DeviceArray and type(a) is DeviceArray and a.dtype is b.dtype
            and a.shape == b.shape and a.dtype.kind == "f" and a.dtype.itemsize >= 4):
        # the common case (two float32/float64 arrays of one shape): no cast, no broadcast
        fn = ew.BINARY.get(op)
        if fn is not None:
            out = empty_like_layout(a.shape, _numpy_result_dtype("binary", op, a.dtype, a.dtype),
                                    [a, b])
            return launch_ew(fn, out, [a, b], upcast=False)
    number = not isinstance(b, DeviceArray)
    bd = b.dtype if not number else np.asarray(b).dtype
    if not isinstance(a, DeviceArray):  # reflected scalar op (c - x)
        a = _as_device(a, np.asarray(a).dtype)
    fn = ew.BINARY.get(op)
    if fn is None or (op in ew.FLOAT_ONLY and not _float(a.dtype)):
        return _host_path("binary", op, a, b)
    b = _as_device(b, bd)
    out_dt = _numpy_result_dtype("binary", op, a.dtype, b.dtype)
    if op not in ("logical_and", "logical_or"):
        # arithmetic in its result dtype (NumPy: bool ** bool is int8), comparisons in the
        # operands' common dtype; the formulas treat bools as logic (+ is or, max is or)
        work = out_dt if out_dt.kind != "b" else np.result_type(a.dtype, b.dtype)
        a = cast(a, work)
        if not (number and bd == np.float32 and is_half(work)):
            b = cast(b, work)  # (a float32 number of a half mul/div stays float32: the
            # kernel computes in float32 anyway, PyTorch's rounding)
    shape = broadcast_shape(a.shape, b.shape)
    ins = [expand(a, shape), expand(b, shape)]
    return launch_ew(fn, empty_like_layout(shape, out_dt, ins), ins, upcast=is_half(a.dtype))


def where(cond: DeviceArray, a, b) -> DeviceArray:
    ad = a.dtype if isinstance(a, DeviceArray) else np.asarray(a).dtype
    bd = b.dtype if isinstance(b, DeviceArray) else np.asarray(b).dtype
    dt = np.result_type(ad, bd)
    a, b = cast(_as_device(a, ad), dt), cast(_as_device(b, bd), dt)
    shape = broadcast_shape(cond.shape, a.shape, b.shape)
    ins = [expand(cond, shape), expand(a, shape), expand(b, shape)]
    return launch_ew(ew.f_where, empty_like_layout(shape, dt, ins), ins, upcast=False)


def tanh_backward(g: DeviceArray, y: DeviceArray) -> DeviceArray:
    """dx = g (1 - y^2), one kernel."""
    return _paired("tanh_backward", g, y)


def sigmoid_backward(g: DeviceArray, y: DeviceArray) -> DeviceArray:
    """dx = g y (1 - y), one kernel."""
    return _paired("sigmoid_backward", g, y)


def relu_backward(g: DeviceArray, y: DeviceArray) -> DeviceArray:
    """dx = g [y > 0], one kernel."""
    return _paired("relu_backward", g, y)


def _paired(op: str, g: DeviceArray, y: DeviceArray) -> DeviceArray:
    return _fused_launch(ew.BINARY[op], g, [y])


def grad_formula(name: str, g: DeviceArray, *saved) -> DeviceArray:
    """The fused gradient formula ``name`` (kernels/elementwise.py GRAD_FORMULAS): one
    kernel over g and the saved arrays or numbers, in g's dtype and the broadcast shape."""
    return _fused_launch(ew.GRAD_FORMULAS[name], g, saved)


def _fused_launch(fn, g: DeviceArray, saved) -> DeviceArray:
    """out = fn(g, *saved) in one launch; saved arrays/numbers are cast to g's dtype."""
    ins = [g] + [cast(_as_device(s, g.dtype), g.dtype) for s in saved]
    shape = broadcast_shape(*[a.shape for a in ins])
    ins = [expand(a, shape) for a in ins]
    return launch_ew(fn, empty_like_layout(shape, g.dtype, ins), ins, upcast=is_half(g.dtype))


# ---------------------------------------------------------------- reductions
def sum_(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("sum", x, axes, keepdim)  # ints and bools: exact, to int64


def mean(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    if not _float(x.dtype):
        return _host_path("mean", None, x, axes, keepdim)
    return red.reduce("mean", x, axes, keepdim)


def prod(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("prod", x, axes, keepdim)  # ints and bools: exact, to int64


def amax(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("amax", x, axes, keepdim)


def amin(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("amin", x, axes, keepdim)


def argmax(x: DeviceArray, axis, keepdim: bool) -> DeviceArray:
    return red.reduce("argmax", x, axis, keepdim)


def argmin(x: DeviceArray, axis, keepdim: bool) -> DeviceArray:
    return red.reduce("argmin", x, axis, keepdim)


def var(x: DeviceArray, axes, correction: float, keepdim: bool,
        sqrt: bool = False) -> DeviceArray:
    """Variance in the kernel's accumulator (float32; float64 for float64), as PyTorch's CUDA
    var. With ``sqrt`` (std): a half input's variance stays float32 until after the square
    root, so a std that fits the half is not lost to a variance that does not."""
    if not _float(x.dtype):
        return _host_path("var", None, x, axes, correction, keepdim, sqrt)
    if not sqrt:
        return red.reduce("var", x, axes, keepdim, correction=correction)
    wide = cast(x, np.float32) if is_half(x.dtype) else x
    out = unary("sqrt", red.reduce("var", wide, axes, keepdim, correction=correction))
    return cast(out, x.dtype)


def logsumexp(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    if not _float(x.dtype):
        return _host_path("logsumexp", None, x, axes, keepdim)
    return red.reduce("logsumexp", x, axes, keepdim)


def all_(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("all", x, axes, keepdim)


def any_(x: DeviceArray, axes, keepdim: bool) -> DeviceArray:
    return red.reduce("any", x, axes, keepdim)


def norm(x: DeviceArray, p: float, axes, keepdim: bool) -> DeviceArray:
    """Vector p-norm, composed of elementwise and reduction kernels in the compute dtype:
    p=2 sqrt(sum a^2), p=1 sum a, p=+-inf amax/amin a, p=0 count(a != 0), else
    (sum a^p)^(1/p), with a = |x|."""
    if not _float(x.dtype):
        return _host_path("norm", None, x, p, axes, keepdim)
    dt = x.dtype
    if x.size == 0:  # the norm of nothing: 0, or inf for p < 0 (NumPy's, PyTorch's)
        out = sum_(x, axes, keepdim)
        if p < 0:
            fill_(out, math.inf)
        return out
    a = unary("abs", cast(x, compute_dtype(dt)))
    cd = a.dtype
    if p == 2:
        out = unary("sqrt", sum_(binary("mul", a, a), axes, keepdim))
    elif p == 1:
        out = sum_(a, axes, keepdim)
    elif p == math.inf:
        out = amax(a, axes, keepdim)
    elif p == -math.inf:
        out = amin(a, axes, keepdim)
    elif p == 0:
        out = sum_(cast(binary("ne", a, np.zeros((), cd)), cd), axes, keepdim)
    else:
        s = sum_(binary("pow", a, np.asarray(p, cd)), axes, keepdim)
        out = binary("pow", s, np.asarray(1.0 / p, cd))
    return cast(out, dt)


def isnan_any(x: DeviceArray) -> bool:
    """True when any element is NaN (x != x), one comparison and one reduction kernel."""
    if not _float(x.dtype) or x.size == 0:
        return False
    return bool(any_(binary("ne", x, x), None, False).to_host())


def sum_to(x: DeviceArray, shape: tuple) -> DeviceArray:
    """Un-broadcast: sum ``x`` down to ``shape`` (the gradient of a broadcast)."""
    shape = tuple(shape)
    lead = x.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and x.shape[lead + i] != 1)
    if not axes:
        return x
    r = sum_(x, axes, True)
    return r.view(shape, contiguous_strides(shape)) if lead else r


def cumsum(x: DeviceArray, axis: int, reverse: bool) -> DeviceArray:
    from tgrad.kernels import scan
    return scan.cumsum(x, axis, reverse)


def argsort(x: DeviceArray, axis: int, descending: bool) -> DeviceArray:
    from tgrad.kernels import sort
    return sort.argsort(x, axis, descending)


# ---------------------------------------------------------------- the temporary host path
def _native_names() -> set:
    """Primitives this module (and the nn primitives star-imported at its end) define."""
    return {n for n, v in list(globals().items()) if callable(v) and not n.startswith("_")
            and hasattr(_np_backend, n)}


_USED: set = set()
_INPLACE = {"copy_", "fill_", "index_put_"}


def _host_tree(x):
    if isinstance(x, DeviceArray):
        return x.to_host()
    if isinstance(x, (list, tuple)):
        return type(x)(_host_tree(v) for v in x)
    return x


def _device_tree(x):
    if isinstance(x, np.ndarray):
        return from_host(x)
    if isinstance(x, tuple):
        return tuple(_device_tree(v) for v in x)
    if isinstance(x, list):
        return [_device_tree(v) for v in x]
    return x


def _host_path(prim: str, op, *args, **kwargs):
    """TEMPORARY: run primitive ``prim`` (with sub-op ``op`` for unary/binary) on the host."""
    _USED.add(prim if op is None else f"{prim}:{op}")
    fn = getattr(_np_backend, prim)
    hargs = [_host_tree(a) for a in args]
    hkw = {k: _host_tree(v) for k, v in kwargs.items()}
    res = fn(op, *hargs, **hkw) if op is not None else fn(*hargs, **hkw)
    if prim in _INPLACE and isinstance(args[0], DeviceArray):
        copy_(args[0], hargs[0])
        return res
    return _device_tree(res)


def __getattr__(attr: str):
    fn = getattr(_np_backend, attr)  # AttributeError for names NumPy lacks too
    if attr.startswith("_") or not callable(fn) or isinstance(fn, type):
        return fn

    def host_path(*args, **kwargs):
        return _host_path(attr, None, *args, **kwargs)
    host_path.__name__ = attr
    host_path.__doc__ = f"TEMPORARY host path for {attr} (no Triton kernel yet)."
    return host_path


# ---------------------------------------------------------------- float8: the host path
# float8 tensors are storage types (PyTorch's op set: see docs/design.md). On cuda the
# primitives above that only create, move, view or cast memory take them natively; every
# other primitive given a float8 array (or asked for a float8 dtype) runs the NumPy
# backend's through the host path, so it computes what the CPU computes (abs, mul, matmul,
# eq, where, indexing... rounded once, as PyTorch's) and refuses what the CPU refuses, with
# the same errors.
_FLOAT8_NATIVE = {"empty", "full", "from_host", "to_host", "copy_", "fill_", "clone",
                  "contiguous", "cast", "cat", "reshape_view", "reshape_view_or_copy",
                  "line_view", "reshape_copy", "permute", "expand", "basic_index", "unsqueeze",
                  "squeeze", "as_strided", "compute_dtype", "manual_seed", "get_rng_state",
                  "set_rng_state"}


_F8_DTYPES = frozenset(np.dtype(d) for d in _F8)  # (np.dtype members: a cheap lookup)


def _float8_guard(prim: str, fn):
    """``fn``, or the host path when an argument is a float8 array or dtype (an attribute
    test per argument otherwise)."""
    def guarded(*args, **kwargs):
        for a in args:
            if a.__class__ is DeviceArray:
                if a.dtype.itemsize == 1 and a.dtype in _F8_DTYPES:
                    return _host_path(prim, None, *args, **kwargs)
            elif isinstance(a, np.dtype) and a in _F8_DTYPES:
                return _host_path(prim, None, *args, **kwargs)
        return fn(*args, **kwargs)
    guarded.__name__, guarded.__doc__ = fn.__name__, fn.__doc__
    return guarded


def ops_without_native_kernel() -> list[str]:
    """Primitives (and unary/binary sub-ops) that run through the temporary host path."""
    prims = {n for n, v in vars(_np_backend).items() if callable(v) and not n.startswith("_")
             and not isinstance(v, type) and getattr(v, "__module__", "").startswith(
                 "tgrad.backends")}
    # host helpers, not ops: NumPy memory views (strided_memory) and settings
    out = sorted(prims - _native_names() - {"compute_dtype", "manual_seed", "strided_memory"})
    out += [f"unary:{op}" for op in sorted(_np_backend.UNARY) if op not in ew.UNARY]
    out += [f"binary:{op}" for op in sorted(_np_backend.BINARY) if op not in ew.BINARY]
    return out


def host_path_used() -> list[str]:
    """Primitives that actually took the host path in this process."""
    return sorted(_USED)
from tgrad.backends._triton_nn import *  # noqa



def _install_float8_guards() -> None:
    """Wrap the compute primitives in _float8_guard: run once, when the first float8
    DeviceArray is made (cuda/array.py's float8_hooks), so that programs without float8
    tensors launch through unwrapped primitives."""
    g = globals()
    for name in sorted(_native_names() - _FLOAT8_NATIVE):
        if getattr(g[name], "__module__", "").startswith("tgrad.backends"):
            g[name] = _float8_guard(name, g[name])


if _array_module._float8_seen:  # (a float8 array made before this module was imported)
    _install_float8_guards()
else:
    _array_module.float8_hooks.append(_install_float8_guards)
