"""PyTorch's searching and counting ops, composed of existing tgrad ops (no kernel of
their own: they run wherever their parts do).

Searching and counting (not differentiable; ``bincount`` with weights is, through
index_add):

- ``searchsorted(seq, values)``/``bucketize(values, boundaries)``: one stable argsort of
  values and sequence concatenated per row (values first for side='left', after for
  'right', so ties land on the right side), a cumsum of "is a sequence element" flags, read
  back at each value's position (a second argsort inverts the order). A NaN value gives
  len(seq), as PyTorch; NaNs in the sequence sort last (PyTorch's binary search gives
  undefined positions there).
- ``bincount``: index_add of the weights (or ones) into zeros(max(input) + 1, minlength).
- ``unique`` (always sorted, which ``sorted=False`` allows) and ``unique_consecutive``:
  sort, flag the first element of each run of equal values (NaNs are all distinct, as
  PyTorch), cumsum of the flags = the inverse, index_add = counts. With ``dim`` the same
  on rows (each slice along dim flattened), sorted lexicographically by one stable
  argsort per column, last column first.

One-argument ``where(condition)`` is not here: ``where`` lives in elementwise.py.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.backends import numpy as np_backend
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    fresh,
    require_tensor,
    require_tensor_or_number,
    same_device,
    tensor_method,
    wrap,
)
from tgrad.ops.creation import arange, ones, tensor, zeros
from tgrad.ops.gathering import index_add, take_along_dim
from tgrad.ops.index import getitem
from tgrad.ops.scan import cumsum
from tgrad.ops.shape import cat, narrow
from tgrad.ops.sorting import _take, argsort, sort
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["searchsorted", "bucketize", "bincount", "unique", "unique_consecutive"]

# ------------------------------------------------------------------------------ searching
def _side(op: str, right: bool, side) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.{op}(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError(f"torch.{op}(): side and right can't be set to opposites, got side "
                           f"of left while right was True")
    return side == "right"


def _search_cpu(rows: np.ndarray, vals: np.ndarray, right: bool) -> np.ndarray | None:
    """The merged-argsort count below, by binary search on CPU arrays: rows (R, n), n >= 1,
    and vals (R, m) of one dtype -> (R, m) int64, the number of row elements < value
    (``right``: <=) in the order where NaN is the largest. None where a row is not sorted
    in that order (the count is then not a binary search's answer: the caller counts).
    Every value's search at once, branch-free: base = 0, len = n; while len > 1: half =
    len // 2, base += half where row[base + half] < value, len -= half; then base += 1
    where row[base] < value (a NaN element compares False: NaN last). The rows are read
    flat, value j of row i at offset i n (2x np.searchsorted's time, which mispredicts
    on unsorted keys). NaN values are the caller's (n)."""
    rows, vals = np_backend._up(rows), np_backend._up(vals)  # (halves as float32: exact)
    lo_s, hi_s = rows[:, :-1], rows[:, 1:]
    if np.any(hi_s < lo_s) or (rows.dtype.kind == "f"
                               and np.any(np.isnan(lo_s) & ~np.isnan(hi_s))):
        return None
    r, n = rows.shape
    flat = np.ascontiguousarray(rows).reshape(-1)
    before = np.less_equal if right else np.less
    base = np.zeros(vals.shape, np.int64)
    if r > 1:
        base += np.arange(0, r * n, n, dtype=np.int64)[:, None]  # each row's offset
    size = n
    while size > 1:  # [base, base + size) holds the last element before the value
        half = size >> 1
        base += before(flat[base + half], vals) * half
        size -= half
    base += before(flat[base], vals)
    if r > 1:
        base -= np.arange(0, r * n, n, dtype=np.int64)[:, None]
    return base


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,  # noqa: A002
                 right: bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """For each value of ``input`` (a tensor or a number; PyTorch's keyword name), the index
    where inserting it keeps the last dim of ``sorted_sequence`` sorted: the count of
    elements < value (side='left') or <= value ('right'). A 1-D sequence serves values of
    any shape; else its leading dims must equal the values' leading dims. ``sorter``: the
    argsort of an unsorted sequence. int64 (int32 with out_int32); not differentiable."""
    values = input
    require_tensor("searchsorted", sorted_sequence)
    seq = sorted_sequence
    for t in (seq, values):  # PyTorch's kernel has no complex order (nor has tgrad's sort)
        if isinstance(t, Tensor) and t.dtype.is_complex:
            raise NotImplementedError(f"searchsorted(): \"searchsorted_out_cpu\" not "
                                      f"implemented for '{dtypes.SCALAR_TYPE_NAMES[t.dtype]}'")
    right = _side("searchsorted", right, side)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if not isinstance(values, Tensor):
        values = tensor(values, device=seq.device)
    same_device("searchsorted", seq, values)
    if seq.ndim > 1 and seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    with no_grad():
        seq, v = seq.detach(), values.detach()
        if sorter is not None:
            if sorter.shape != seq.shape or sorter.dtype is not dtypes.int64:
                raise RuntimeError(f"torch.searchsorted(): sorter must be an int64 tensor of "
                                   f"the boundaries' shape {list(seq.shape)}, got "
                                   f"{sorter.dtype.name} {list(sorter.shape)}")
            size = seq.shape[-1]
            if sorter.numel() and (int(sorter.min()) < 0 or int(sorter.max()) >= size):
                raise RuntimeError(f"torch.searchsorted(): sorter index out of range (sorter "
                                   f"values must lie in [0, {size}), the boundaries' last "
                                   f"dim)")
            seq = take_along_dim(seq, sorter, -1)
        dt = dtypes.result_type(seq, v)
        if dt is dtypes.bool_:  # (PyTorch's type and kernel text; a bool with a number is fine)
            raise NotImplementedError("torch.searchsorted(): not implemented for bool "
                                      "boundaries and values; convert them with .int() first "
                                      "(\"searchsorted_out_cpu\" not implemented for 'Bool')")
        n = seq.shape[-1]
        rows = seq.reshape(1, n) if seq.ndim == 1 else seq
        vals = v.reshape(1, -1) if seq.ndim == 1 else v
        rows, vals = rows.to(dt), vals.to(dt)
        m = vals.shape[-1]
        found = None
        if seq.device.type == "cpu" and n and rows.numel():  # lines (R, n) and (R, m)
            lines = rows.numel() // n
            va = np.asarray(vals._data).reshape(lines, m)
            found = _search_cpu(np.asarray(rows._data).reshape(lines, n), va, right)
        if found is not None:  # sorted rows: a binary search gives the same count
            if dt.is_floating_point:  # PyTorch's binary search puts NaN values past the end
                found[np.isnan(va)] = n
            out = wrap(found.reshape(v.shape), seq.device)
            return out.to(dtypes.int32) if out_int32 else out
        # stable order of values and sequence together: values first (side='left') put a
        # value before the elements equal to it, after ('right') behind them
        merged = cat([rows, vals], -1) if right else cat([vals, rows], -1)
        order = argsort(merged, -1)
        is_seq = ew.lt(order, n) if right else ew.ge(order, m)
        before = cumsum(is_seq, -1)  # int64; at a value's position: the elements before it
        where_now = argsort(order, -1)  # the position each merged entry was sorted to
        at = narrow(where_now, -1, n, m) if right else narrow(where_now, -1, 0, m)
        out = _take(before, at, before.ndim - 1) if m else at
        if dt.is_floating_point:  # PyTorch's binary search puts NaN values past the end
            out = ew.where(ew.isnan(vals), n, out)
        out = fresh(out.reshape(v.shape))  # (a view of a temporary: a new tensor)
        return out.to(dtypes.int32) if out_int32 else out


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """The bucket of each input value among the 1-D ``boundaries``: right=False:
    boundaries[i-1] < x <= boundaries[i]; right=True: boundaries[i-1] <= x < boundaries[i]
    (searchsorted(boundaries, input, right=right))."""
    require_tensor_or_number("bucketize", input, "input", 1)
    require_tensor("bucketize", boundaries, "boundaries", 2)
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@tensor_method("bincount")
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """out[k] = the number of times k occurs in the 1-D non-negative integer ``input`` (the
    sum of ``weights`` there), of length max(max(input) + 1, minlength). Counts are int64;
    float32 weights give float32, other weights float64 (as PyTorch)."""
    require_tensor("bincount", input)
    if input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise NotImplementedError(f"\"bincount\" not implemented for {input.dtype.name} "
                                  f"tensors; it counts non-negative integers")
    minlength = _int_arg("bincount", "minlength", minlength)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim != 1 or (input.numel() and int(input.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape != input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    size = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        src = ones(input.shape, dtype=dtypes.int64, device=input.device)
    else:
        src = weights.to(dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64)
    if input.dtype not in (dtypes.int32, dtypes.int64):  # index_add's index: int64 (uint8...)
        input = input.to(dtypes.int64)  # noqa: A001
    return index_add(zeros(size, dtype=src.dtype, device=input.device), 0, input, src)


def _runs(flat: Tensor, return_inverse: bool, return_counts: bool, order, shape):
    """unique's tail: ``flat`` is 1-D values, or 2-D rows (the slices along unique's dim,
    each flattened), with equal entries adjacent; ``order`` maps its positions back to the
    input's (None: the identity). Returns unique's result (values or rows)."""
    n = flat.shape[0] if flat.ndim else 0
    if n == 0:
        vals, inv = flat.clone(), zeros(shape, dtype=dtypes.int64, device=flat.device)
        counts = zeros(0, dtype=dtypes.int64, device=flat.device)
    else:
        change = ew.ne(narrow(flat, 0, 1, n - 1), narrow(flat, 0, 0, n - 1))
        if flat.ndim == 2:  # rows: a new run where any entry differs (NaN != NaN)
            change = change.any(1)
        first = cat([ones(1, dtype=dtypes.bool_, device=flat.device), change])
        run = cumsum(first, 0) - 1  # the run (unique value) each position belongs to
        vals = getitem(flat, first)
        if order is None:
            inv = run
        else:
            inv = zeros(n, dtype=dtypes.int64, device=flat.device)
            inv[order] = run
        inv = fresh(inv.reshape(shape))
        counts = index_add(zeros(vals.shape[0], dtype=dtypes.int64, device=flat.device), 0,
                           run, ones(n, dtype=dtypes.int64, device=flat.device))
    out = (vals,) + ((inv,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def _unique_dim(op: str, input: Tensor, dim, sort_rows: bool, return_inverse: bool,  # noqa: A002
                return_counts: bool):
    """unique / unique_consecutive over the slices along ``dim``: each slice flattened to a
    row; sort_rows: rows ordered lexicographically by stable argsorts of the columns from
    the last to the first (NaN after every number, as ``sort``; PyTorch's comparator has no
    defined order for NaN rows). The inverse and counts are 1-D over dim's length."""
    if input.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim, op)
    x = input.detach()
    n = x.shape[d]
    if x.numel() == 0:  # PyTorch's rules: only dim itself may be empty
        if sum(s == 0 for s in x.shape) > 1:
            raise RuntimeError(f"{op}: Number of zero sized dimensions is more than one, so "
                               f"unique cannot be applied (shape {list(x.shape)})")
        if n != 0:
            raise RuntimeError(f"{op}: There are 0 sized dimensions, and they aren't "
                               f"selected, so unique cannot be applied (shape "
                               f"{list(x.shape)}, dim={dim})")
        empty = zeros(0, dtype=dtypes.int64, device=x.device)
        out = (x,) + ((empty,) if return_inverse else ()) + ((empty,) if return_counts else ())
        return out[0] if len(out) == 1 else out
    moved = x.movedim(d, 0)
    rows = moved.reshape(n, -1)
    order = None
    if sort_rows:
        order = arange(n, device=x.device)
        for j in reversed(range(rows.shape[1])):  # least significant column first
            order = getitem(order, argsort(getitem(rows, (order, j))))
        rows = getitem(rows, order)
    res = _runs(rows, return_inverse, return_counts, order, (n,))
    vals = res[0] if isinstance(res, tuple) else res
    vals = fresh(vals.reshape((vals.shape[0],) + moved.shape[1:]).movedim(0, d))
    return (vals,) + res[1:] if isinstance(res, tuple) else vals


@tensor_method("unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values of the flattened input, sorted (also for sorted=False); with
    return_inverse, each element's position among them (input's shape); with
    return_counts, how often each occurs. NaNs are all distinct (NaN != NaN), as
    PyTorch. With ``dim``: the distinct slices along dim, sorted lexicographically (the
    inverse and counts 1-D over dim). Not differentiable."""
    require_tensor("unique", input)
    if input.dtype.is_complex:  # (PyTorch's unique kernels; tgrad's sort has no order)
        raise NotImplementedError(f"unique(): \"unique\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    dtypes.refuse_float8("unique" if dim is None else "unique_dim", input.dtype)
    with no_grad():
        if dim is not None:
            return _unique_dim("unique", input, dim, True, return_inverse, return_counts)
        flat = input.detach().reshape(-1)
        vals, order = sort(flat) if flat.numel() else (flat, None)
        return _runs(vals, return_inverse, return_counts, order, input.shape)


@tensor_method("unique_consecutive")
def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None):
    """The first element of every run of equal consecutive values of the flattened input
    (with the run index of each element, and the run lengths); with ``dim``, of every run
    of equal consecutive slices along dim. Not differentiable."""
    require_tensor("unique_consecutive", input)
    if isinstance(input, Tensor) and input.dtype.is_complex:  # (PyTorch's unique kernels)
        raise NotImplementedError(f"\"unique\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}'")
    if isinstance(input, Tensor):  # float8 has no unique kernels in PyTorch
        dtypes.refuse_float8("unique" if dim is None else "unique_dim", input.dtype)
    with no_grad():
        if dim is not None:
            return _unique_dim("unique_consecutive", input, dim, False, return_inverse,
                               return_counts)
        return _runs(input.detach().reshape(-1), return_inverse, return_counts, None,
                     input.shape)
