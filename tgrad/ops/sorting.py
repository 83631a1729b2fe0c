"""Sorting along one dim: ``sort``, ``argsort``, ``msort``, ``topk``, ``kthvalue``,
``median``, ``nanmedian``, ``mode``.

One primitive, ``Argsort``: the stable order of a tensor along one dim (int64 positions of
its shape, not differentiable): np.argsort(kind="stable") on the CPU, a bitonic tile sort
plus pairwise merges on the GPU (tgrad/kernels/sort.py). Everything else is composition:
values = the input at those positions along the dim (one node of the op's PyTorch name,
``_Selected``: SortBackward0, TopkBackward0, ...; d values / d x scatter-adds the gradient
to the positions the values came from: at ties to the returned index, as PyTorch; double
backward is a gather again); ``topk`` narrows the order to its first k,
``kthvalue``/``median`` pick one position per line.

Order: ascending or descending, ties always in their original order (tgrad's sort is always
stable, which satisfies ``stable=False`` too, deterministically); NaN sorts after +inf (last
ascending, first descending); -0.0 and +0.0 are equal. ``median``/``kthvalue``/``topk``
indices at ties are therefore the first tied position in that order, where PyTorch's CPU
selection may return another of the tied positions.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad.autograd.function import Function
from tgrad.backends import numpy as np_backend
from tgrad.ops._common import backend_of, fresh, register_op, require_tensor, tensor_method, wrap
from tgrad.ops.complex_ops import no_complex as _no_complex
from tgrad.ops.creation import full
from tgrad.ops.elementwise import node_variant, where
from tgrad.ops.gathering import _along_key
from tgrad.ops.index import IndexAdd, getitem, normalize_key
from tgrad.ops.matmul import _as_shape
from tgrad.return_types import values_indices
from tgrad.tensor import Tensor, _wrap_dim
from tgrad.tensor import _int_arg as _tensor_int_arg

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode"]


class Argsort(Function):
    """The stable order of x along ``dim`` (int64, x's shape; ``descending`` reverses the
    order of the values, not of ties). Not differentiable."""

    name = "argsort"
    node_name = "ArgsortBackward0"

    @staticmethod
    def forward(ctx, x, dim, descending):
        return wrap(backend_of(x).argsort(x._data, dim, descending), x.device)


register_op(Argsort)


def _int_arg(op: str, name: str, pos: int, v) -> int:
    """``v`` as an int (NumPy integers and one-element integer tensors too, as every
    argument of tgrad's), a bool refused: PyTorch's TypeError naming op and argument."""
    if type(v) is int:
        return v
    return _tensor_int_arg(op, name, v, pos, allow_bool=False)


def _bool_arg(op: str, name: str, v, allow_none: bool = False) -> bool:
    if not (isinstance(v, (bool, np.bool_)) or (allow_none and v is None)):
        raise TypeError(f"{op}(): argument '{name}' must be bool, not {type(v).__name__}")
    return bool(v)


def _line_input(op: str, input: Tensor, dim, dim_pos: int = 2) -> tuple:  # noqa: A002
    """(input as >= 1-d, dim wrapped): a 0-d input is one line of one element (dim 0 or -1).
    ``dim_pos``: dim's position in the op's signature (for the error message)."""
    require_tensor(op, input)
    d = _wrap_dim(_int_arg(op, "dim", dim_pos, dim), input.ndim, op)
    return (input.reshape(1) if input.ndim == 0 else input), d


def _complex_unordered(op: str, input) -> None:  # noqa: A002
    """PyTorch's RuntimeError for sort/argsort/topk of a complex tensor (its CPU kernels
    check the dtype: 'Sort does not support complex dtypes on CPU')."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        what = "topk" if op == "topk" else "Sort"
        raise RuntimeError(f"{op}(): {what} does not support complex dtypes on CPU (complex "
                           f"numbers have no order; apply it to .abs(), .real or .imag)")


def _no_bool(op: str, input: Tensor, kernel: str | None = None) -> None:  # noqa: A002
    """Refuse a bool input: PyTorch's NotImplementedError naming its CPU ``kernel``, or
    (topk, no kernel) its RuntimeError 'topk does not support bool dtypes on CPU'."""
    if input.dtype is not dtypes.bool_:
        return
    if kernel is None:
        raise RuntimeError(f"{op}(): {op} does not support bool dtypes on CPU (as in "
                           f"PyTorch); convert the tensor first, e.g. input.int()")
    raise NotImplementedError(f"{op}(): \"{kernel}\" not implemented for 'Bool' (as in "
                              f"PyTorch); convert the tensor first, e.g. input.int()")


def _nonempty_dim(op: str, input: Tensor, d: int) -> None:  # noqa: A002
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _fold(x: Tensor, idx: Tensor, d: int) -> tuple:
    """(x's (O, K, INNER) view shape, idx's (O, k, INNER) one, which of O / INNER are kept):
    size-1 outer/inner dims dropped, so at most 3 index arrays reach the gather kernel."""
    o, n = math.prod(x.shape[:d]), math.prod(x.shape[d + 1:])
    keep = (o != 1, True, n != 1)
    return (tuple(s for s, kp in zip((o, x.shape[d], n), keep) if kp),
            tuple(s for s, kp in zip((o, idx.shape[d], n), keep) if kp), keep)


def _take(x: Tensor, idx: Tensor, d: int) -> Tensor:
    """x's values at positions ``idx`` along ``d``: idx (int64) has x's shape except along
    ``d``, every value in [0, x.shape[d]) by construction. take_along_dim without its range
    check (two synchronizing reads of min and max on a GPU), through an (O, K, INNER) view
    of x whose size-1 outer/inner dims are dropped, so at most 3 index arrays reach the
    gather kernel. The gradient scatter-adds g into x's shape at those positions."""
    vshape, ishape, keep = _fold(x, idx, d)
    return fresh(getitem(x.reshape(vshape), _along_key(idx.reshape(ishape), int(keep[0]),
                                                       x.device)).reshape(idx.shape))


# ---- CPU selection: the first k positions of the stable order without sorting each line
# (np.partition finds the boundary value, O(n) per line, where np.argsort is O(n log n)).
# The first k of the stable ascending order of a line are exactly: every entry ordered
# strictly before the k-th value v (a < v; NaN is the largest and equal to NaN), then the
# earliest-positioned entries equal to v (ties keep their order) up to k. Descending:
# a > v, ties again earliest first (argsort's descending order: ties in ascending
# position, NaN first). Identical to narrowing the full stable order, ties and NaN included.
def _cpu_lines(x: Tensor, d: int) -> np.ndarray:
    """x's CPU array with ``d`` moved last (a view; halves as float32, exactly: the order
    is the same)."""
    return np_backend._up(np.moveaxis(x._data, d, -1))


def _first_k(a: np.ndarray, k: int, largest: bool) -> tuple:
    """(before, tied, need) for lines ``a`` (..., n) and 1 <= k <= n: masks (..., n) of the
    entries ordered before the k-th value (largest: descending order) and equal to it, and
    need (..., 1) = k - #before, how many of the tied entries (the earliest) complete the
    first k."""
    n = a.shape[-1]
    at = n - k if largest else k - 1
    v = np.partition(a, at, axis=-1)[..., at:at + 1]  # the k-th value (NaNs partition last)
    before = a > v if largest else a < v
    tied = a == v
    if a.dtype.kind == "f":
        an, vn = np.isnan(a), np.isnan(v)
        if vn.any() or (largest and an.any()):  # NaN: above every number, equal to NaN
            before |= (an & ~vn) if largest else (~an & vn)
            tied |= an & vn
    return before, tied, k - before.sum(-1, keepdims=True)


def _topk_cpu(a: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The first k positions (int64, (..., k)) of the stable order of lines ``a`` (..., n)
    (descending when ``largest``): the set by _first_k, its positions ascending (row-major
    nonzero), then a stable argsort of those k values alone."""
    before, tied, need = _first_k(a, k, largest)
    if (tied.sum(-1, keepdims=True) > need).any():  # ties across the boundary: earliest
        tied &= np.cumsum(tied, axis=-1) <= need
    pos = np.nonzero(before | tied)[-1].reshape(a.shape[:-1] + (k,))
    order = np_backend.argsort(np.take_along_axis(a, pos, -1), -1, largest)
    return np.take_along_axis(pos, order, -1)


def _kth_cpu(a: np.ndarray, k: int) -> np.ndarray:
    """The position (int64, (..., 1)) of the k-th (1-based) entry of the stable ascending
    order of lines ``a`` (..., n): the need-th earliest entry equal to the k-th value."""
    before, tied, need = _first_k(a, k, False)
    if (tied.sum(-1, keepdims=True) > 1).any():
        tied &= np.cumsum(tied, axis=-1) == need
    return np.nonzero(tied)[-1].reshape(a.shape[:-1] + (1,))


def _cpu_positions(x: Tensor, d: int, pos: np.ndarray) -> Tensor:
    """Positions (..., m) along the last dim, as a C-contiguous int64 tensor with ``d``
    back in place."""
    return wrap(np.ascontiguousarray(np.moveaxis(pos, -1, d), dtype=np.int64), x.device)


class _Selected(Function):
    """values = x's entries at sorted positions along a dim (sort's and topk's orders, the
    one position per line of kthvalue / median / nanmedian / mode), as one node of the
    op's PyTorch name (node_variant below; edge: x). x is read as its (O, K, INNER) view
    ``vshape`` (size-1 outer/inner dims dropped, so at most 3 index arrays reach the gather
    kernel), ``key`` the advanced key of the positions in that view (ishape), the result
    given ``out_shape`` (the op's: keepdim's squeeze, a 0-d input's 0-d value).
        dx = zeros(vshape); dx[key] += g.reshape(ishape); dx.reshape(x.shape)
    (each value's gradient to the position it came from; double backward gathers again).
    Saves the key (int64 arrays), as the indexing it replaces did."""

    name = "sort"
    node_name = "SortBackward0"
    keeps_indices = True
    hidden_edges = (7,)  # the indices tensor returned beside the values: no edge
    saved_attributes = {"_saved_dim": "dim", "_saved_indices": "indices",
                        "_saved_self_sym_sizes": "x_shape"}

    @staticmethod
    def forward(ctx, x, key, vshape, ishape, out_shape, dim, keepdim, indices, values=None):
        be = backend_of(x)
        # (values: the gather's result computed by the caller, an array of x's shape)
        v = be.gather(_as_shape(be, x._data, vshape), key) if values is None else values
        ctx.key, ctx.vshape, ctx.ishape, ctx.x_shape = key, vshape, ishape, x.shape
        ctx.dim, ctx.keepdim, ctx.indices = dim, keepdim, indices
        return wrap(_as_shape(be, v, out_shape), x.device)

    @staticmethod
    def backward(ctx, g):
        dx = IndexAdd.apply(g.reshape(ctx.ishape), ctx.key, ctx.vshape).reshape(ctx.x_shape)
        return (dx,) + (None,) * 8


_SAVED = _Selected.saved_attributes  # (a subclass states its table: the class's own only)
_KEEPDIM_SAVED = {**_SAVED, "_saved_keepdim": "keepdim"}
_SORT1 = node_variant(_Selected, "SortBackward1", saved_attributes=_SAVED)  # (stable=True)
_TOPK = node_variant(_Selected, "TopkBackward0", name="topk", saved_attributes=_SAVED)
_KTHVALUE = node_variant(_Selected, "KthvalueBackward0", name="kthvalue",
                         saved_attributes=_KEEPDIM_SAVED)
_MEDIAN = node_variant(_Selected, "MedianBackward1", name="median",
                       saved_attributes=_KEEPDIM_SAVED)
_NANMEDIAN = node_variant(_Selected, "NanmedianBackward1", name="nanmedian",
                          saved_attributes=_KEEPDIM_SAVED)
_MODE = node_variant(_Selected, "ModeBackward0", name="mode", saved_attributes=_KEEPDIM_SAVED)
CUM_EXTREME = {op: node_variant(_Selected, f"{op.capitalize()}Backward0", name=op,
                                saved_attributes=_SAVED)
               for op in ("cummax", "cummin")}  # (ops/logmath.py)


def _select(cls: type, input: Tensor, x: Tensor, idx: Tensor, d: int,  # noqa: A002
            out_shape: tuple, keepdim: bool, indices: Tensor, values=None) -> Tensor:
    """The values of ``x`` (``input`` as >= 1-d) at positions ``idx`` (int64, x's shape but
    along ``d``) along ``d``, shaped ``out_shape``: one ``cls`` node (see _Selected) whose
    edge is ``input``; ``indices`` is the index tensor the op returns (saved, no edge);
    ``values``: those values already known (a backend array of x's shape; no gather)."""
    vshape, ishape, keep = _fold(x, idx, d)
    key = normalize_key(_along_key(idx.reshape(ishape), int(keep[0]), x.device),
                        x.device)[0]
    return cls.apply(input, key, vshape, ishape, tuple(out_shape), d, keepdim, indices, values)


@tensor_method("sort")
def sort(input: Tensor, dim: int = -1, descending: bool = False, *,  # noqa: A002
         stable: bool | None = False) -> values_indices:
    """(values, indices) of ``input`` sorted along ``dim``; always stable (ties keep their
    order, ``stable`` is accepted as in PyTorch); NaN sorts as larger than +inf."""
    _complex_unordered("sort", input)
    x, d = _line_input("sort", input, dim)
    desc = _bool_arg("sort", "descending", descending)
    _bool_arg("sort", "stable", stable, allow_none=True)
    idx = Argsort.apply(x, d, desc)
    out = idx if input.ndim else fresh(idx.reshape(()))
    return return_types.sort(_select(_SORT1 if stable else _Selected, input, x, idx, d,
                                     input.shape, False, out), out)


@tensor_method("argsort")
def argsort(input: Tensor, dim: int = -1, descending: bool = False, *,  # noqa: A002
            stable: bool | None = None) -> Tensor:
    """The indices that sort ``input`` along ``dim`` (int64; always stable; ``stable=None``
    is False: PyTorch's out= overload needs it given, see tgrad/_out.py)."""
    _complex_unordered("argsort", input)
    x, d = _line_input("argsort", input, dim)
    if stable is not None:
        _bool_arg("argsort", "stable", stable)
    idx = Argsort.apply(x, d, _bool_arg("argsort", "descending", descending))
    return fresh(idx.reshape(())) if input.ndim == 0 else idx


@tensor_method("msort")
def msort(input: Tensor) -> Tensor:  # noqa: A002
    """``sort(input, dim=0).values``."""
    return sort(input, 0).values


@tensor_method("topk")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,  # noqa: A002
         sorted: bool = True) -> values_indices:  # noqa: A002
    """The ``k`` largest (``largest=False``: smallest) entries along ``dim`` and their
    indices, always in sorted order (ties: the earlier position first; NaN is the
    largest)."""
    x, d = _line_input("topk", input, dim, 3)
    k = _int_arg("topk", "k", 2, k)
    _no_bool("topk", input)
    _complex_unordered("topk", input)
    if not 0 <= k <= x.shape[d]:
        raise RuntimeError(f"selected index k out of range (topk(): k = {k} for dimension {d} "
                           f"of size {x.shape[d]}; use 0 <= k <= size)")
    if input.ndim == 0:  # PyTorch returns the element itself for k = 0 and k = 1
        k = 1
    else:  # (a float8 0-d input too)
        dtypes.refuse_float8("topk_cpu", input.dtype)
    largest = _bool_arg("topk", "largest", largest)
    if x.device.type == "cpu" and 0 < 4 * k <= x.shape[d] and x.numel():
        # the first k of the stable order by selection (identical, O(n) per line)
        idx = _cpu_positions(x, d, _topk_cpu(_cpu_lines(x, d), k, largest))
    else:
        idx = fresh(Argsort.apply(x, d, largest).narrow(d, 0, k)
                    .contiguous())  # a C-contiguous result (values too), as PyTorch's
    out = idx if input.ndim else fresh(idx.reshape(()))
    return return_types.topk(_select(_TOPK, input, x, idx, d, out.shape, False, out), out)


def _pick(x: Tensor, d: int, pos, keepdim: bool, ndim: int,
          result: type = values_indices, cls: type | None = None,
          input: Tensor | None = None,  # noqa: A002
          order: Tensor | None = None) -> values_indices:
    """(values, indices) at sorted position ``pos`` (an int, or an int64 tensor of x's shape
    with size 1 along ``d``) of each line of x along ``d``, as the named tuple ``result``
    (the op's tgrad.return_types type). ``cls``: the values as that one node (_Selected's
    variant) of ``input`` (x is input as >= 1-d); None: by indexing (MedianAll's forward).
    ``order``: x's stable ascending order along ``d`` where the caller has it (mode)."""
    if isinstance(pos, int) and x.device.type == "cpu" and x.numel():
        # the (pos+1)-th of the stable order by selection (identical, O(n) per line)
        idx = _cpu_positions(x, d, _kth_cpu(_cpu_lines(x, d), pos + 1))
    else:
        order = Argsort.apply(x, d, False) if order is None else order
        idx = order.narrow(d, pos, 1) if isinstance(pos, int) else _take(order, pos, d)
    # contiguous as PyTorch's indices (kthvalue's narrow of the order is strided)
    out = fresh((idx.reshape(()) if ndim == 0 else idx if keepdim else idx.squeeze(d))
                .contiguous())
    if cls is not None:
        return result(_select(cls, input, x, idx, d, out.shape, keepdim, out), out)
    vals = _take(x, idx, d)
    if ndim == 0:
        return result(fresh(vals.reshape(())), out)
    if not keepdim:
        vals = vals.squeeze(d)
    return result(fresh(vals), out)  # (views of temporaries: new tensors)


def _median_pos(x: Tensor, d: int, ignore_nan: bool):
    """The sorted position of each line's lower median along ``d`` (NaNs sort last): without
    NaN (n-1)//2; with NaN, median: the first NaN (position c, the count of non-NaN values,
    as PyTorch returns the first NaN's index); nanmedian: (c-1)//2 of the non-NaN values,
    or 0 (a NaN) when there are none."""
    n = x.shape[d]
    if not x.dtype.is_floating_point or (
            x.device.type == "cpu" and not np_backend.isnan_any(x._data)):
        return (n - 1) // 2  # (c = n in every line below)
    c = (~x.isnan()).sum(d, keepdim=True)
    if ignore_nan:
        return where(c > 0, (c - 1) // 2, 0)
    return where(c < n, c, (n - 1) // 2)


class MedianAll(Function):
    """y = the lower median of all elements (``ignore_nan``: of the non-NaN ones);
    dx = g shared evenly by the elements equal to y, or by the NaNs when y is NaN
    (PyTorch's evenly_distribute_backward)."""

    name = "median"
    node_name = "MedianBackward0"

    @staticmethod
    def forward(ctx, x, ignore_nan):
        op = "nanmedian" if ignore_nan else "median"
        if x.numel() == 0:
            if not x.dtype.is_floating_point:
                raise RuntimeError(f"{op}(): an empty {x.dtype.name} tensor has no median "
                                   f"(PyTorch returns an unspecified value); give a "
                                   f"floating point tensor to get NaN")
            y = full((), float("nan"), dtype=x.dtype, device=x.device)
        else:
            flat = x.reshape(-1)
            y = _pick(flat, 0, _median_pos(flat, 0, ignore_nan), False, 0).values.clone()
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        hit = (x == y) | (x.isnan() & y.isnan())
        share = g / hit.sum().to(g.dtype)
        return where(hit, share.expand(x.shape), 0.0), None


class NanmedianAll(MedianAll):
    """MedianAll ignoring NaNs, under PyTorch's name for it."""

    node_name = "NanmedianBackward0"


register_op(MedianAll)


def _median(op: str, input: Tensor, dim, keepdim: bool,  # noqa: A002
            ignore_nan: bool) -> Tensor | values_indices:
    if isinstance(input, Tensor) and input.dtype.is_complex:
        kernel = "median_cpu" if dim is None else "median_out"
        _no_complex(op, input, f"{op}: \"{kernel}\" not implemented for "
                               f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (complex numbers have "
                               f"no order; take the median of .real, .imag or .abs())")
    if dim is None:
        require_tensor(op, input)
        _no_bool(op, input, "median_cpu")
        if input.numel():  # PyTorch's float8 errors (median and nanmedian share kernels)
            dtypes.refuse_float8("median_cpu", input.dtype)
        return (NanmedianAll if ignore_nan else MedianAll).apply(input, ignore_nan)
    x, d = _line_input(op, input, dim)
    _no_bool(op, input, "median_out")
    _nonempty_dim(op, input, d)
    dtypes.refuse_float8("median_out", input.dtype)
    return _pick(x, d, _median_pos(x, d, ignore_nan), keepdim, input.ndim,
                 getattr(return_types, op), _NANMEDIAN if ignore_nan else _MEDIAN, input)


@tensor_method("median")
def median(input: Tensor, dim: int | None = None,  # noqa: A002
           keepdim: bool = False) -> Tensor | values_indices:
    """``median(x)``: the lower median of all elements (NaN if any is NaN); ``median(x,
    dim)``: (values, indices) of each line's lower median (NaN and the first NaN's index
    where the line has one)."""
    return _median("median", input, dim, keepdim, False)


@tensor_method("nanmedian")
def nanmedian(input: Tensor, dim: int | None = None,  # noqa: A002
              keepdim: bool = False) -> Tensor | values_indices:
    """``median`` ignoring NaNs (NaN only where every value is NaN)."""
    return _median("nanmedian", input, dim, keepdim, True)


@tensor_method("kthvalue")
def kthvalue(input: Tensor, k: int, dim: int = -1,  # noqa: A002
             keepdim: bool = False) -> values_indices:
    """(values, indices) of the k-th smallest entry (1-based) of each line along ``dim``."""
    x, d = _line_input("kthvalue", input, dim, 3)
    k = _int_arg("kthvalue", "k", 2, k)
    _no_bool("kthvalue", input, "kthvalue_cpu")
    _no_complex("kthvalue", input, f"kthvalue(): \"kthvalue_cpu\" not implemented for "
                                   f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (complex numbers "
                                   f"have no order; apply it to .abs(), .real or .imag)")
    _nonempty_dim("kthvalue", input, d)
    if not 1 <= k <= x.shape[d]:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d} "
                           f"(k = {k}, size {x.shape[d]}; use 1 <= k <= size)")
    if input.ndim:  # PyTorch's float8 error (a 0-d tensor needs no kernel)
        dtypes.refuse_float8("kthvalue_cpu", input.dtype)
    return _pick(x, d, k - 1, keepdim, input.ndim, return_types.kthvalue, _KTHVALUE, input)


def _mode_pos(x: Tensor, d: int, order: Tensor) -> Tensor:
    """The sorted position (int64, size 1 along ``d``) of the last element of each line's
    most frequent value, the smallest such value at ties: equal neighbours in the sorted
    line (``order``: x's stable ascending order along ``d``) form runs, run_id =
    cumsum(run starts) - 1, counts = scatter_add of ones by run_id, best = the first run
    with the largest count, pos = #(run_id <= best) - 1. (Each NaN is a run of its own.)"""
    from tgrad.ops.gathering import scatter_add
    from tgrad.ops.shape import cat
    n = x.shape[d]
    s = _take(x, order, d)
    starts = cat([full(s.narrow(d, 0, 1).shape, True, dtype=dtypes.bool_, device=x.device),
                  s.narrow(d, 1, n - 1) != s.narrow(d, 0, n - 1)], d)
    run_id = starts.long().cumsum(d) - 1
    ones = full(run_id.shape, 1.0, dtype=dtypes.float64, device=x.device)
    counts = scatter_add(ones * 0.0, d, run_id, ones)
    best = counts.argmax(d, keepdim=True)
    return (run_id <= best).long().sum(d, keepdim=True) - 1


@tensor_method("mode")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> values_indices:  # noqa: A002
    """(values, indices) of each line's most frequent value along ``dim`` (the smallest at
    ties) and the index of its last occurrence, as PyTorch; the gradient goes to that
    element."""
    x, d = _line_input("mode", input, dim)
    if input.dtype.is_complex:  # complex numbers have no order
        raise NotImplementedError(f"\"mode_cpu\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    _nonempty_dim("mode", input, d)
    if input.ndim and x.numel():  # PyTorch's float8 error (0-d, empty: no kernel runs)
        dtypes.refuse_float8("mode_cpu", input.dtype)
    if x.numel() == 0:
        return _pick(x, d, 0, keepdim, input.ndim, return_types.mode, _MODE, input)
    order = Argsort.apply(x.detach(), d, False)  # (one sort: _pick reads it too)
    return _pick(x, d, _mode_pos(x.detach(), d, order), keepdim, input.ndim,
                 return_types.mode, _MODE, input, order)

