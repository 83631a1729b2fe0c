"""CPU whole-slice accumulation for the NumPy backend's ``index_add`` / ``index_reduce``:
``ufunc.at(out, key, v)`` for a key that indexes one dim d with a 1-D integer array idx (m,)
and takes every other dim whole (index_add along d, index_select's and x[idx]'s backward,
index_put with one index tensor), i.e. out[..., idx[j], ...] <op>= v[..., j, ...].

Order (why the bits are ufunc.at's): ufunc.at visits v in C order, so each target slice
position i folds its contributions in ascending j: out_i = op(op(op(init, v[j_0]), v[j_1]),
...) with j_0 < j_1 < ... the positions where idx[j] = i, element by element, the
ufunc's own operand order (the accumulator first). Here the rank of a position j is the
number of earlier positions with the same idx (a stable argsort of idx); rank r's
positions have distinct targets, so one fancy-indexed step per rank applies
out[.., i, ..] = op(out[.., i, ..], v[.., j, ..]) for all of them at once, ranks in
ascending order: the same operations on the same operands in the same order for every
element (any dtype, inf / -0.0 included; each step is an elementwise ufunc call, so no
reassociation can occur). One caveat, NumPy's own: where two NaNs meet, which payload the
NaN result keeps depends on NumPy's loop (ufunc.at's, the vector loop or its remainder);
the result is a NaN either way (tests/test_scatter_rows_cpu_fast.py).

When it is used: the Python cost is ~15 µs plus a few µs per rank, ufunc.at's ~1 ns per
element, so only where v has many elements for its ranks (``_MIN_FIXED``,
``_MIN_PER_RANK``) and contiguous runs of at least ``_MIN_SLICE`` elements; otherwise the
caller runs ufunc.at. 1.4-2x faster than ufunc.at on the flat positions (e.g. 512 rows of
256 float32 into 256: 145 -> 70 µs).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["rows_at", "scatter_sum_fwd", "scatter_sum_bwd"]

_FULL = slice(None)
_MIN_SLICE = 8  # elements per contiguous run (fewer: strided takes, slower than ufunc.at)
# ufunc.at costs ~1 ns per element (with its flat positions), this path ~15 µs to rank the
# index plus ~6 µs of calls per rank: it runs where v has more elements than these buy
_MIN_FIXED = 16384
_MIN_PER_RANK = 6144


def rows_at(ufunc: np.ufunc, out: np.ndarray, key, v: np.ndarray, init) -> bool:
    """``ufunc.at(out, key, v)`` for a whole-slice key (see the module docstring) when that
    is worth it: True when done, False (nothing written) where the caller must run
    ufunc.at. out: C-contiguous, every element ``init`` (a scalar of out's dtype), written
    in place; v: exactly a[key]'s shape (no broadcasting), any layout."""
    spec = _whole_slice_key(out.shape, key)
    if spec is None:
        return False
    d, idx, ishape = spec
    m = idx.size
    n = out.shape[d]
    lead = math.prod(out.shape[:d])
    if m == 0 or v.shape != out.shape[:d] + ishape + out.shape[d + 1:] or \
            v.size < lead * m * _MIN_SLICE:  # (slices of contiguous runs of >= _MIN_SLICE)
        return False
    counts = np.bincount(idx, minlength=n)
    ranks = int(counts.max())
    if _MIN_FIXED + ranks * _MIN_PER_RANK > v.size:
        return False
    # (lead, n, inner) views (out is C-contiguous); lead 1: 2-D, axis 0 (a faster take)
    out3 = out.reshape(n, -1) if lead == 1 else out.reshape(lead, n, -1)
    v3 = v.reshape(m, -1) if lead == 1 else v.reshape(lead, m, -1)
    ax = 0 if lead == 1 else 1
    for r, (pos, src) in enumerate(_by_rank(idx, counts, ranks)):
        vals = np.take(v3, src, axis=ax)  # (lead, k, inner): rank r's sources
        if r == 0:  # the targets still hold init: op(init, v), the accumulator first
            if pos.size == n:  # every target: pos is arange(n), out written whole
                ufunc(init, vals, out=out3)
                continue
            ufunc(init, vals, out=vals)
        else:
            ufunc(np.take(out3, pos, axis=ax), vals, out=vals)
        if ax == 0:
            out3[pos] = vals
        else:
            out3[:, pos] = vals
    return True


def _whole_slice_key(shape: tuple, key) -> tuple | None:
    """(d, idx int64 (m,) in [0, n_d), the index array's shape) for a key of d full slices,
    one integer array of any rank >= 1 and full slices (or nothing) after it; None otherwise
    or for an index out of range (the caller's ufunc.at then raises NumPy's error). An n-d
    index (embedding's (B, T) input) comes flattened in C order: its dims replace dim d in
    a[key] (the only advanced index), so v's (lead, m, inner) view lists the positions in
    the order ufunc.at visits them."""
    key = key if type(key) is tuple else (key,)
    d = next((i for i, k in enumerate(key) if type(k) is not slice or k != _FULL), None)
    if d is None or d >= len(shape) or any(type(k) is not slice or k != _FULL
                                           for k in key[d + 1:]):
        return None
    idx = key[d]
    if type(idx) is not np.ndarray or idx.ndim == 0 or not (
            idx.dtype.kind == "i" or (idx.dtype.kind == "u" and idx.dtype.itemsize < 8)):
        return None
    ishape = idx.shape
    idx = idx.astype(np.int64, copy=False).reshape(-1)
    n = shape[d]
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < -n or hi >= n:
            return None
        if lo < 0:
            idx = np.where(idx < 0, idx + n, idx)
    return d, idx, ishape


def _by_rank(idx: np.ndarray, counts: np.ndarray, ranks: int) -> list:
    """[(targets, sources) per rank 0, 1, ...]: rank r holds, for every target i with more
    than r copies, i and the position j of its copy number r (the r-th smallest j with
    idx[j] = i), targets ascending."""
    n = counts.size
    # stable: by target, then ascending j (16-bit keys sort by radix, several times faster)
    order = np.argsort(idx.astype(np.uint16) if n <= 1 << 16 else idx, kind="stable")
    pos = idx[order]
    if ranks == 1:
        return [(pos, order)]
    starts = np.cumsum(counts) - counts
    rank = np.arange(idx.size) - starts[pos]
    # stable again: by rank, then by target (ranks <= m / _MIN_PER_RANK fit 16 bits)
    by_rank = np.argsort(rank.astype(np.uint16), kind="stable")
    pos, order = pos[by_rank], order[by_rank]
    ends = np.cumsum(np.bincount(rank, minlength=ranks)).tolist()
    return [(pos[a:b], order[a:b]) for a, b in zip([0] + ends[:-1], ends)]


# ---------------------------------------------------------------- scatter_reduce sum / mean
# tgrad/ops/scatter_reduce.py's ScatterReduce for reduce 'sum' / 'mean' of float32/float64
# arrays on the CPU: the composite's steps (count = IndexAdd(ones), total = IndexAdd(src),
# x + total, the mean's division, where(count > 0, ., x)) on the arrays, without their graph
# nodes; the key's flat positions built for the count only (no count for a sum with
# include_self) and once for the backward's gather. total and x + total are the composite's
# very calls (the backend's index_add and binary add), so even a NaN meeting a NaN keeps the
# same payload: the same bits throughout.


def scatter_sum_fwd(x: np.ndarray, src: np.ndarray, key, mean: bool,
                    include_self: bool) -> tuple:
    """(y, count) for x (any shape) with src (key's shape: src[j] goes to x[key][j]) folded
    in by sum or mean: count[t] = #{j : key sends j to t} (x's dtype; None for a sum with
    include_self, whose backward needs none). y[t] = x[t] where count[t] = 0, else
    (include_self: x[t] + ) sum_j src[j] (index_add's order), divided for mean by the number
    of contributors (count + include_self)."""
    from tgrad.backends import numpy as be  # (be imports this module)
    # (IndexAdd's own empty case: zeros)
    total = be.index_add(x.shape, x.dtype, key, src) if src.size else np.zeros(x.shape, x.dtype)
    if include_self:
        total = be.binary("add", x, total)
        if not mean:
            return _keep_unscattered(total, x, key), None
    count = np.zeros(x.shape, x.dtype)  # (ones added: IndexAdd(ones)'s sums, exactly)
    if src.size:
        flat = be._flat_index(x.shape, key)
        if flat is None:
            np.add.at(count, key, x.dtype.type(1))
        else:
            np.add.at(count.reshape(-1), flat.reshape(-1), x.dtype.type(1))
    if mean:  # the contributors, 0 -> 1 (an exact max for counts)
        total = be.binary("div", total, np.maximum(count + 1 if include_self else count, 1))
    return be.where(count > 0, total, np.ascontiguousarray(x)), count


def _keep_unscattered(y: np.ndarray, x: np.ndarray, key) -> np.ndarray:
    """where(hit, y, x) for y = x + total (total +0.0 where nothing is scattered, hit the
    positions key names) without a pass over the targets: x + 0.0 has x's bits except for
    x = -0.0 (+0.0) and a NaN (NumPy's loop may return the NaN operand quieted), so only
    those positions, where not hit, get x back. y written in place."""
    xf = np.ascontiguousarray(x).reshape(-1)
    special = np.flatnonzero(np.signbit(xf) & (xf == 0) | np.isnan(xf))
    if special.size:
        hit = np.zeros(x.shape, np.bool_)
        hit[key] = True
        keep = special[~hit.reshape(-1)[special]]
        y.reshape(-1)[keep] = xf[keep]
    return y


def scatter_sum_bwd(g: np.ndarray, key, count: np.ndarray, mean: bool,
                    include_self: bool, src_shape: tuple) -> tuple:
    """(d x, d src) of scatter_sum_fwd for d y = g (x's shape): with s = g (sum) or
    g / max(count + include_self, 1) (mean), d src[j] = s at key's j-th position and d x =
    s, zeroed where something was scattered without include_self (x's value was replaced);
    count is used only for those two (None for a sum with include_self)."""
    from tgrad.backends import numpy as be
    g = np.ascontiguousarray(g)
    if mean:
        n = count + 1 if include_self else count
        with np.errstate(all="ignore"):
            g = np.divide(g, np.maximum(n, 1))
    flat = be._flat_index(g.shape, key) if math.prod(src_shape) else None
    if flat is not None:
        gsrc = np.take(g.reshape(-1), flat.reshape(-1)).reshape(src_shape)
    else:  # (empty, or a key with no flat form: NumPy's indexing)
        gsrc = np.array(g[key], dtype=g.dtype).reshape(src_shape)
    gx = g if include_self else be.where(count > 0, np.zeros((), g.dtype), g)
    return gx, gsrc
