"""GPU advanced indexing: gather (the forward of ``x[key]``), index_add (its backward, the
deterministic scatter-add) and index_put_ (``x[key] = v``): launch wrappers over
tgrad/kernels/indexing.py, re-exported by tgrad/backends/_triton_nn.py.

A key is a tuple of ints, slices, None, Ellipsis, NumPy integer arrays / boolean masks and
device integer arrays (integer index tensors on the GPU stay there, see
tgrad.ops.index.normalize_key). ``gather`` plans the common keys on the host from shapes
alone (``_plan``: slices become a strided view, every index array one operand of the
gather_nd kernel, which computes the offsets on the device and checks device index arrays
itself: tgrad/cuda/index_errors.py raises a bad one at the next synchronization). The
writers split the result into index tuples and slice positions (``_split``); one target
per index tuple is computed, sorted stably and resolved on the device (index_add: sums in
index order; index_put_: the last write wins), so device indices are never read back.
The rest (0-d boolean keys, more than 4 index arrays, 8 result dims, or 2 sliced dims for
the writers) take int64 element offsets computed on the host (``_key_offsets``), which the
same writer kernels sort and resolve.
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np

from tgrad.cuda import index_errors, is_interpreted
from tgrad.cuda.array import DeviceArray, contiguous_strides
from tgrad.cuda.streams import current_stream_handle
from tgrad.kernels import configs
from tgrad.kernels.launch import collapse, launch

__all__ = ["gather", "index_add", "index_reduce", "index_put_", "check_index_range"]

MAX_INDEX_ARRAYS = 4  # gather_nd_kernel's N0..N3 / K0..K3
MAX_RESULT_DIMS = 8  # gather_nd_kernel's S0..S7


def _tb():
    """tgrad.backends.triton (imported lazily: it imports this module's importer at its end)."""
    return sys.modules["tgrad.backends.triton"]


def _host_key(key) -> tuple:
    """The key with device index arrays copied to the host (for the host-offset paths)."""
    return tuple(k.to_host() if isinstance(k, DeviceArray) else k for k in key)


# ---------------------------------------------------------------- host offsets
def _key_offsets(shape: tuple, estrides: tuple, key) -> np.ndarray:
    """int64 element offsets of ``view[key]`` (NumPy advanced-indexing rules, the same
    IndexError for bad keys): the key applied to each dim's broadcast stride grid."""
    key = _host_key(key)
    total = np.asarray(np.broadcast_to(np.int64(0), shape)[key], dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, estrides)):
        ar = [1] * len(shape)
        ar[d] = n
        grid = np.broadcast_to((np.arange(n, dtype=np.int64) * st).reshape(ar), shape)
        total = total + np.asarray(grid[key], dtype=np.int64)
    return total


def _dev_i64(a: np.ndarray) -> DeviceArray:
    return _tb().from_host(np.ascontiguousarray(a, dtype=np.int64))


# ---------------------------------------------------------------- gather_nd plan
class _Plan(NamedTuple):
    """How gather_nd_kernel reads ``x[key]``. Result dims outermost first."""

    view: DeviceArray  # x with the key's slices and Nones applied (indexed dims kept whole)
    shape: tuple  # result shape
    x_strides: tuple  # per result dim: element stride in ``view`` (0 on index dims)
    arrays: list  # index arrays (host int64 or device int), each broadcastable to ``bshape``
    bshape: tuple  # broadcast shape B of the index arrays
    dims: list  # per index array: (size, element stride) of the view dim it selects
    b_first: int  # position of B's first dim in the result
    index_dims: tuple  # per index array: the dim of x it selects (for error messages)


def _items(x: DeviceArray, key) -> list | None:
    """The key as items None, a slice, or ("index", array): one per source dim (plus the
    Nones), Ellipsis expanded, masks turned into their nonzero() arrays and ints into 0-d
    index arrays (NumPy treats an int next to an array as an advanced index). None when the
    key needs the host path (also for keys NumPy rejects: the host path raises its error)."""
    items: list = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            items.append(k)
        elif isinstance(k, DeviceArray):
            if k.dtype.kind not in "iu":
                return None
            items.append(("index", k))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            items.append(("index", np.asarray(k, np.int64)))
        elif isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim:
            items.append(("mask", k))
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            items.append(("index", k.astype(np.int64, copy=False)))
        else:
            return None
    used = sum(_dims_used(k) for k in items)
    if items.count(Ellipsis) > 1 or used > x.ndim:
        return None
    fill = [slice(None)] * (x.ndim - used)
    if Ellipsis in items:
        i = items.index(Ellipsis)
        items[i:i + 1] = fill
    else:
        items += fill
    out, d = [], 0
    for k in items:
        if type(k) is tuple and k[0] == "mask":
            m = k[1]
            if m.shape != x.shape[d:d + m.ndim]:
                return None
            out += [("index", a) for a in np.nonzero(m)]
            d += m.ndim
        else:
            out.append(k)
            d += k is not None
    return out


def _dims_used(item) -> int:
    """Source dims an item of ``_items`` consumes (a mask: its ndim; None, ...: none)."""
    if type(item) is tuple:
        return item[1].ndim if item[0] == "mask" else 1
    return int(isinstance(item, slice))


def _plan(x: DeviceArray, key) -> _Plan | None:
    items = _items(x, key)
    if items is None:
        return None
    adv = [i for i, k in enumerate(items) if type(k) is tuple]
    if not adv or len(adv) > MAX_INDEX_ARRAYS:
        return None
    try:
        bshape = np.broadcast_shapes(*[items[i][1].shape for i in adv])
    except ValueError:
        return None
    # One view dim per item: the slices applied, None a size-1 dim, indexed dims kept whole.
    view = _tb().basic_index(x, tuple(slice(None) if type(k) is tuple else k for k in items))
    # Result dims: B's dims where the first index array stands when the arrays are adjacent
    # in the key, else first (NumPy's rule); slices and None keep their place otherwise.
    adjacent = adv == list(range(adv[0], adv[-1] + 1))
    b_first = sum(1 for k in items[:adv[0]] if type(k) is not tuple) if adjacent else 0
    shape, x_strides, arrays, dims, index_dims, x_dim = [], [], [], [], [], 0
    for k, n, st in zip(items, view.shape, view.estrides):
        if type(k) is tuple:
            arrays.append(k[1])
            dims.append((n, st))
            index_dims.append(x_dim)
        else:
            shape.append(n)
            x_strides.append(st)
        x_dim += k is not None
    shape[b_first:b_first] = bshape
    x_strides[b_first:b_first] = [0] * len(bshape)
    return _Plan(view, tuple(shape), tuple(x_strides), arrays, tuple(bshape), dims, b_first,
                 tuple(index_dims))


def _host_bounds_ok(arrays: list, dims: list) -> bool:
    """Host index arrays are checked here (their bad values need no kernel to find)."""
    return all(isinstance(a, DeviceArray) or a.size == 0 or
               (int(a.min()) >= -n and int(a.max()) < n) for a, (n, _) in zip(arrays, dims))


def _index_buffer(p: _Plan) -> DeviceArray:
    """The index arrays as gather_nd's IDX: one contiguous integer device array of shape B
    read as it is, or every array cast to int64 and broadcast into a [K, *B] stack."""
    tb = _tb()
    if len(p.arrays) == 1:
        a = p.arrays[0]
        if isinstance(a, DeviceArray) and a.shape == p.bshape and a.is_contiguous():
            return a
    if not any(isinstance(a, DeviceArray) for a in p.arrays):
        return tb.from_host(np.stack([np.broadcast_to(a, p.bshape) for a in p.arrays]))
    stack = tb.empty((len(p.arrays),) + p.bshape, np.dtype(np.int64))
    for k, a in enumerate(p.arrays):
        if not isinstance(a, DeviceArray):
            a = tb.from_host(a)
        tb.copy_(tb.basic_index(stack, (k,)), tb.expand(a, p.bshape))
    return stack


def _index_dims(p: _Plan) -> list:
    """The kernels' N0..N3 and K0..K3: each index array's dim size and element stride."""
    pad = MAX_INDEX_ARRAYS - len(p.dims)
    return [n for n, _ in p.dims] + [1] * pad + [st for _, st in p.dims] + [0] * pad


def _record(device: int, x_shape: tuple, p: _Plan, op: str) -> DeviceArray:
    """The error record a launch checking plan ``p``'s device index arrays writes to."""
    return index_errors.record_for(device, current_stream_handle(device), x_shape,
                                   p.index_dims, tuple(n for n, _ in p.dims), op)


def _gather_nd(p: _Plan, x_shape: tuple, wrap_negative: bool = True,
               op: str = "index:") -> DeviceArray | None:
    """Launch gather_nd_kernel for plan ``p`` of an ``x_shape`` source; None when the
    result has too many dims. ``op``: a bad device index's error's first words."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg, triton_cdiv
    tb = _tb()
    nb = math.prod(p.bshape)
    b_strides = contiguous_strides(p.bshape)
    idx_strides = [0] * p.b_first + list(b_strides) + \
        [0] * (len(p.shape) - p.b_first - len(p.bshape))
    shape, (xs, is_) = collapse(p.shape, [p.x_strides, tuple(idx_strides)])
    if len(shape) > MAX_RESULT_DIMS:
        return None
    out = tb.empty(p.shape, p.view.dtype)
    n = out.size
    if n == 0:
        return out
    check = any(isinstance(a, DeviceArray) for a in p.arrays)
    # device index arrays are checked by the kernel; a bad one raises at the next sync
    err = _record(out.device, x_shape, p, op) if check else out
    idx = _index_buffer(p)
    pad = MAX_RESULT_DIMS - len(shape)
    sizes = list(reversed(shape)) + [1] * pad  # S0 innermost
    xs = list(reversed(xs)) + [0] * pad
    is_ = list(reversed(is_)) + [0] * pad
    blk = configs.gather_nd_block(is_interpreted())
    launch(kix.gather_nd_kernel, (triton_cdiv(n, blk),), karg(out), karg(p.view), karg(idx),
           karg(err), n, nb, *sizes, *xs, *is_, *_index_dims(p), NDIM=len(shape),
           NIDX=len(p.arrays), CHECK=check, WRAP=wrap_negative, BLOCK=blk,
           num_warps=configs.FLAT_WARPS)
    return out


# ---------------------------------------------------------------- primitives
def gather(x: DeviceArray, key, wrap_negative: bool = True, op: str = "index:") -> DeviceArray:
    """Advanced indexing (integer arrays / boolean masks mixed with basic indices). With
    ``wrap_negative=False`` (embedding's lookup, gather, index_select) a negative entry of a
    device index array is out of range too; that takes the keys gather_nd plans. ``op``:
    the first words of a bad device index's error (raised at the next synchronization)."""
    p = _plan(x, key)
    if p is not None and _host_bounds_ok(p.arrays, p.dims):
        out = _gather_nd(p, x.shape, wrap_negative, op)
        if out is not None:
            return out
    if not wrap_negative:
        raise ValueError(f"gather(wrap_negative=False): a key of {len(key)} items on a tensor "
                         f"of shape {list(x.shape)} needs the host path, which wraps negative "
                         "indices; index with device index arrays and slices only")
    return _gather_offsets(x, key)


def check_index_range(index: DeviceArray, size: int, dim: int, shape: tuple, op: str,
                      negatives: bool = False) -> None:
    """Check on the device that ``index`` (integers, any layout) lies in [0, size) (with
    ``negatives``: [-size, size)) along ``dim`` of a ``shape`` tensor, without waiting for
    it: a bad value raises at the next synchronization, the error beginning with ``op``
    (tgrad/cuda/index_errors.py)."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg, triton_cdiv
    n = index.size
    if n == 0:
        return
    idx = _tb().contiguous(index)
    err = index_errors.record_for(idx.device, current_stream_handle(idx.device), tuple(shape),
                                  (dim,), (size,), op)
    blk = configs.flat_block(is_interpreted())
    launch(kix.range_check_kernel, (triton_cdiv(n, blk),), karg(idx), karg(err), n, size,
           NEGATIVES=negatives, BLOCK=blk, num_warps=configs.FLAT_WARPS)


def _gather_offsets(x: DeviceArray, key) -> DeviceArray:
    """gather by host offsets: every key NumPy takes, and NumPy's IndexError otherwise."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg, triton_cdiv
    offs = _key_offsets(x.shape, x.estrides, key)
    out = _tb().empty(offs.shape, x.dtype)
    n = out.size
    if n:
        blk = configs.flat_block(is_interpreted())
        launch(kix.gather_kernel, (triton_cdiv(n, blk),), karg(out), karg(x),
               karg(_dev_i64(offs)), n, BLOCK=blk, num_warps=configs.FLAT_WARPS)
    return out


class _Split(NamedTuple):
    """``x[key]`` split into its index part (NB tuples) and its slice part (NS positions;
    the target's sliced dims collapse to two: NS0 inner positions of stride ST0, outer
    stride ST1), as the writer kernels take it."""

    plan: _Plan
    ns: int
    slice_dims: tuple  # (NS0, ST1, ST0)


def _split(x: DeviceArray, key) -> _Split | None:
    """None when the key needs the host offsets (as ``_plan``, or more than two sliced
    dims after merging, or a host index out of range: the host path raises NumPy's error)."""
    p = _plan(x, key)
    if p is None or not _host_bounds_ok(p.arrays, p.dims):
        return None
    b_end = p.b_first + len(p.bshape)
    s_shape = p.shape[:p.b_first] + p.shape[b_end:]
    dims, (st,) = collapse(s_shape, [p.x_strides[:p.b_first] + p.x_strides[b_end:]])
    if len(dims) > 2:
        return None
    slice_dims = (dims[0], 0, st[0]) if len(dims) == 1 else (dims[1], st[0], st[1])
    return _Split(p, math.prod(s_shape), slice_dims)


def _targets(sp: _Split, x_shape: tuple, op: str) -> np.ndarray | DeviceArray:
    """Each index tuple's element offset in ``sp.plan.view``, flat (NB,): computed on the
    host from host index arrays; with a device index array, on the device as int64 (-1 for
    an out-of-range entry, which the kernel reports at the next synchronization as the
    gather does, the error beginning with ``op``)."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg, triton_cdiv
    p = sp.plan
    if not any(isinstance(a, DeviceArray) for a in p.arrays):
        targets = np.zeros(p.bshape, np.int64)
        for a, (n, stride) in zip(p.arrays, p.dims):
            targets = targets + np.where(a < 0, a + n, a).astype(np.int64) * stride
        return targets.reshape(-1)
    nb = math.prod(p.bshape)
    out = _tb().empty((nb,), np.dtype(np.int64))
    err = _record(out.device, x_shape, p, op)
    blk = configs.flat_block(is_interpreted())
    launch(kix.index_targets_kernel, (triton_cdiv(nb, blk),), karg(out), karg(_index_buffer(p)),
           karg(err), nb, *_index_dims(p), NIDX=len(p.arrays), BLOCK=blk,
           num_warps=configs.FLAT_WARPS)
    return out


def _sort_targets(targets) -> tuple[DeviceArray, DeviceArray]:
    """(PERM, T): NB targets (offsets into the destination: host int64, sorted on the host,
    or device int64, sorted on the device; stable either way) and their order, on the
    device."""
    from tgrad.kernels.sort import argsort
    if isinstance(targets, np.ndarray):
        return _dev_i64(np.argsort(targets, kind="stable")), _dev_i64(targets)
    return argsort(targets, 0, False), targets


def _launch_writer(kernel, items: int, *args, **constexprs) -> None:
    from tgrad.kernels.launch import triton_cdiv
    blk = configs.flat_block(is_interpreted())
    with np.errstate(all="ignore"):  # the interpreter's float sums of inf and nan
        launch(kernel, (triton_cdiv(items, blk),), *args, BLOCK=blk,
               num_warps=configs.FLAT_WARPS, **constexprs)


def _scatter_sorted(dst: DeviceArray, vals: DeviceArray, targets, ns: int, slice_dims: tuple,
                    reduce: str, dtype: np.dtype) -> None:
    """Fold the values ``vals`` ([NB, NS] contiguous) into ``dst`` at ``targets`` (see
    _sort_targets): chunk partials of the runs longer than a chunk first (one more launch
    where NB spans several chunks), then each run's fold."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg, triton_cdiv
    perm, targets = _sort_targets(targets)
    nb = targets.size
    chunk = configs.scatter_chunk(nb)
    n_chunks = triton_cdiv(nb, chunk)
    acc = _acc_kind(dtype)
    acc_dtype = np.dtype(np.float32) if acc == 0 else np.dtype(np.float64) if acc == 1 else dtype
    parts = _tb().empty((n_chunks, ns), acc_dtype)
    cx = dict(REDUCE=_REDUCE[reduce], ACC=acc, INIT=_identity(reduce, dtype))
    if n_chunks > 1:
        _launch_writer(kix.scatter_parts_kernel, n_chunks * ns, karg(parts), karg(vals),
                       karg(perm), karg(targets), nb, ns, chunk, **cx)
    _launch_writer(kix.scatter_sorted_kernel, nb * ns, karg(dst), karg(vals), karg(perm),
                   karg(targets), karg(parts), nb, ns, *slice_dims, chunk, **cx)


_FLAT = (1, 0, 0)  # slice_dims of the host-offset paths: NS = 1, off(0) = 0


def _index_major(p: _Plan, values: DeviceArray) -> DeviceArray:
    """``values`` broadcast to the result shape, as a contiguous [NB, NS] array (B's dims
    moved first; no copy when they are first already and ``values`` is contiguous)."""
    tb = _tb()
    v = tb.expand(values, p.shape)
    b_dims = list(range(p.b_first, p.b_first + len(p.bshape)))
    rest = [d for d in range(len(p.shape)) if d not in b_dims]
    if b_dims and b_dims[0] != 0:
        v = tb.permute(v, tuple(b_dims + rest))
    return tb.contiguous(v)


def _check_values(values: DeviceArray, shape: tuple) -> None:
    try:
        np.broadcast_shapes(values.shape, shape)
    except ValueError:
        raise ValueError(f"shape mismatch: value array of shape {values.shape} could not be "
                         f"broadcast to indexing result of shape {shape}") from None


def index_add(shape: tuple, dtype: np.dtype, key, values: DeviceArray) -> DeviceArray:
    """zeros(shape) with ``values`` scatter-added at ``key`` (repeated indices add up;
    deterministic sums in a fixed order, see tgrad/kernels/indexing.py)."""
    return _scatter_reduce(shape, np.dtype(dtype), key, values, "sum")


def index_reduce(shape: tuple, dtype: np.dtype, key, values: DeviceArray,
                 reduce: str) -> DeviceArray:
    """The reduction's identity (prod 1, amax -inf, amin +inf; an integer dtype's lowest
    and highest) in ``shape``, with ``values`` folded in at ``key`` (deterministic, in index
    order; amax/amin propagate NaN)."""
    return _scatter_reduce(shape, np.dtype(dtype), key, values, reduce)


_REDUCE = {"sum": 0, "prod": 1, "amax": 2, "amin": 3}


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "prod"):
        return 0 if reduce == "sum" else 1
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min if reduce == "amax" else info.max)
    return float("-inf") if reduce == "amax" else float("inf")


def _acc_kind(dtype: np.dtype) -> int:
    """The kernels' ACC: 1 float64; 2 the dtype itself (integers: exact, wrapping); 0
    float32 (float32, halves, and bools, whose sums are stored as "any": NumPy's add.at)."""
    return 1 if dtype == np.float64 else (2 if dtype.kind in "iu" else 0)


def _scatter_reduce(shape: tuple, dtype: np.dtype, key, values: DeviceArray,
                    reduce: str) -> DeviceArray:
    tb = _tb()
    out = tb.empty(tuple(shape), dtype)
    tb.fill_(out, _identity(reduce, dtype))
    sp = _split(out, key)
    if sp is None:  # host offsets into ``out`` (contiguous), one value each
        offs = _key_offsets(out.shape, out.estrides, key)
        if offs.size == 0:
            return out
        vals = tb.contiguous(tb.expand(values, offs.shape))
        dst, targets, ns, slice_dims = out, offs.reshape(-1), 1, _FLAT
    else:
        if 0 in sp.plan.bshape or sp.ns == 0:
            return out
        vals = _index_major(sp.plan, values)
        dst, targets, ns, slice_dims = sp.plan.view, _targets(sp, out.shape, "index:"), \
            sp.ns, sp.slice_dims
    _scatter_sorted(dst, vals, targets, ns, slice_dims, reduce, dtype)
    return out


def index_put_(dst: DeviceArray, key, values) -> None:
    """dst[key] = values (broadcast); repeated indices: the last write wins (NumPy)."""
    from tgrad.kernels import indexing as kix
    from tgrad.kernels.launch import karg
    tb = _tb()
    if not isinstance(values, DeviceArray):
        values = tb.from_host(np.asarray(values).astype(dst.dtype))
    # a contiguous dst: distinct index tuples name distinct elements
    sp = _split(dst, key) if dst.is_contiguous() else None
    if sp is None:  # host offsets into ``dst`` (read in place: any strides), one value each
        offs = _key_offsets(dst.shape, dst.estrides, key)
        if offs.size == 0:
            return None
        _check_values(values, offs.shape)
        vals = tb.contiguous(tb.cast(tb.expand(values, offs.shape), dst.dtype))
        view, targets, ns, slice_dims = dst, offs.reshape(-1), 1, _FLAT
    else:
        if 0 in sp.plan.bshape or sp.ns == 0:
            return None
        _check_values(values, sp.plan.shape)
        vals = _index_major(sp.plan, tb.cast(values, dst.dtype))
        view, targets, ns, slice_dims = sp.plan.view, _targets(sp, dst.shape, "index_put_:"), \
            sp.ns, sp.slice_dims
    perm, targets = _sort_targets(targets)
    _launch_writer(kix.put_sorted_kernel, targets.size * ns, karg(view), karg(vals),
                   karg(perm), karg(targets), targets.size, ns, *slice_dims)
    return None
