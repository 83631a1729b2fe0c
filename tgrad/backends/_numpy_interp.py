"""CPU primitives of F.interpolate's resampling (tgrad/nn/_interpolate.py ``Resample``):
the composite's steps run on the NumPy arrays, no tgrad op per step; the same arithmetic
on the same operands in the same order, so bit-identical to the composite (which runs
under create_graph / forward AD and on other devices).

``steps``: one (kind, axis, input size n, plan...) per resized spatial dim, applied in
order (see Resample's docstring); x (N, C, *spatial) float32 or float64. Gathers are
np.take(mode="wrap"): the indices are in range, and it skips "raise"'s slow per-element
bounds check (127 -> 74 us for 1 MB gathered along the last axis).

Forward, per step along ``axis`` (out positions o):
  select:  y = take(x, index, axis)                         (a copy: any order, same bits)
  linear:  y = take(x, i0) * w0[o] + take(x, i1) * w1[o]    (two products, one sum: the
           composite's mul, mul, add, each rounded once, the i0 term first)
  taps:    y = sum_k take(x, index[:, k]) * w[:, k]. The composite sums the (.., o, K, ..)
           products with the backend's sum (np.add.reduce), which for K < 8 adds them one
           after another onto its identity +0, ((((+0 + p_0) + p_1) + p_2) + ...), along
           a middle axis and (its pairwise loop's short case) the last one alike; checked
           once per process (``_reduce_is_sequential``), else (or K >= 8) the backend's
           sum on the composite's array. Starting from +0 only turns an all -0.0 sum into
           +0.0 (a -0 partial sum meets a nonzero term exactly as a +0 one; a sum that
           starts at +0 is never -0), so here y = ((p_0 + p_1) + ...) + 0: one pass fewer.

Backward (steps in reverse; the adjoint), ``scatter(v, index)`` = zeros with v added back
at ``index`` along axis (the composite's IndexAdd, np.add.at's order: each target i sums
its terms in ascending source position j, ((+0 + v_j0) + v_j1) + ...):
  select:  dx = scatter(g, index)
  linear:  dx = scatter(g w0, i0) + scatter(g w1, i1)
  taps:    dx = scatter((g[.., o, None, ..] w[o, k]) reshaped (.., o K, ..), index flat)
(the products g w formed rank by rank from g, the same products).
The scatter goes by rank (``_rank_plan``): rank r's sources (the r-th term of each target)
have distinct targets, so rank 0 is one gather assigned to its targets (zeros elsewhere)
and each later rank one gather added to its targets, in rank order: the same additions in
the same order, the leading +0 moved to one final + 0 as above (for linear, after the sum
of the two scatters: (a + 0) + (b + 0) == (a + b) + 0 bitwise, a sum is -0 only when both
terms are).
"""

from __future__ import annotations

import functools

import numpy as np

from tgrad.backends import numpy as _be
from tgrad.backends._numpy_dtypes import FLOAT32_64

__all__ = ["FAST_DTYPES", "resample_fwd", "resample_bwd"]

FAST_DTYPES = FLOAT32_64

_FULL = slice(None)


def _col(w: np.ndarray, dt: np.dtype, ndim: int, axis: int) -> np.ndarray:
    """w (o,) or (o, K) in dtype dt, shaped to broadcast along ``axis`` of an ndim-D
    array (trailing 1s for the later dims)."""
    return w.astype(dt, copy=False).reshape(w.shape + (1,) * (ndim - 1 - axis))


def _take(y: np.ndarray, index: np.ndarray, axis: int) -> np.ndarray:
    """np.take(y, index, axis) for in-range indices (C-contiguous, new)."""
    return np.take(y, index, axis, mode="wrap")


@functools.cache
def _reduce_is_sequential() -> bool:
    """Whether np.add.reduce over an axis of K < 8 terms is ((+0 + p_0) + p_1) + ... along
    a middle axis and the last one (see the module docstring), for float32 and float64."""
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        for k in range(2, 8):
            p = (rng.standard_normal((16, k, 5)) * 10.0 ** rng.integers(-9, 9, (16, k, 5)))
            p = p.astype(dt)
            p[rng.random(p.shape) < 0.2] = -0.0
            p[:2] = -0.0
            for q, ax in ((p, 1), (np.ascontiguousarray(np.swapaxes(p, 1, 2)), 2)):
                acc = np.zeros(q.shape[:ax] + q.shape[ax + 1:], dt)
                for j in range(k):
                    acc = acc + np.take(q, j, ax)
                if np.add.reduce(q, axis=ax).tobytes() != acc.tobytes():
                    return False
    return True


def _linear_fwd(y: np.ndarray, axis: int, i0, i1, w0, w1) -> np.ndarray:
    a = _take(y, i0, axis)
    np.multiply(a, _col(w0, y.dtype, y.ndim, axis), out=a)
    b = _take(y, i1, axis)
    np.multiply(b, _col(w1, y.dtype, y.ndim, axis), out=b)
    return np.add(a, b, out=a)


def _taps_fwd(y: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    o, k = index.shape
    if k < 8 and _reduce_is_sequential():
        acc = None
        for j in range(k):
            p = _take(y, np.ascontiguousarray(index[:, j]), axis)
            np.multiply(p, _col(weight[:, j], y.dtype, y.ndim, axis), out=p)
            acc = p if acc is None else np.add(acc, p, out=acc)
        return np.add(acc, acc.dtype.type(0), out=acc)
    g = _take(y, index.reshape(-1), axis)
    g = g.reshape(y.shape[:axis] + (o, k) + y.shape[axis + 1:])
    np.multiply(g, _col(weight, y.dtype, y.ndim, axis), out=g)
    return _be.sum_(g, (axis + 1,), False)


def resample_fwd(x: np.ndarray, steps: tuple) -> np.ndarray:
    """x (N, C, *spatial) resampled by each step in turn (at least one step); a new
    C-contiguous array."""
    y = x
    with np.errstate(all="ignore"):  # inf * 0, inf - inf: NaN silently, as PyTorch
        for kind, axis, _, *plan in steps:
            if kind == "select":
                y = _take(y, plan[0], axis)
            elif kind == "linear":
                y = _linear_fwd(y, axis, *plan)
            else:
                y = _taps_fwd(y, axis, *plan)
    return y


def _as_slice(tgt: np.ndarray):
    """tgt (distinct, ascending) as a slice when it is an arithmetic progression (a slice
    writes 3-10x faster than a fancy index along the last axis), else tgt itself."""
    if tgt.size == 1:
        return slice(int(tgt[0]), int(tgt[0]) + 1)
    step = int(tgt[1] - tgt[0])
    if step > 0 and np.array_equal(np.diff(tgt), np.full(tgt.size - 1, step)):
        return slice(int(tgt[0]), int(tgt[-1]) + 1, step)
    return tgt


@functools.lru_cache(maxsize=256)
def _rank_plan(raw: bytes, size: int) -> tuple:
    """(whole, ranks) for the int64 index ``raw`` (m,) into ``size`` positions: ranks =
    (targets (a slice where they form one), sources) per rank (the module docstring);
    whole = whether rank 0's targets are exactly 0 .. size - 1 (its gather is then the
    whole result)."""
    idx = np.frombuffer(raw, dtype=np.int64)
    order = np.argsort(idx, kind="stable")
    ordered = idx[order]
    rank = np.arange(idx.size) - np.searchsorted(ordered, ordered, side="left")
    ranks = []
    for r in range(int(rank.max()) + 1 if idx.size else 0):
        src = order[rank == r]  # ascending targets (a stable sort of idx)
        ranks.append((_as_slice(idx[src]), src))
    whole = bool(ranks) and type(ranks[0][0]) is slice and \
        ranks[0][0] == slice(0, size, 1 if size > 1 else None)
    return whole, tuple(ranks)


def _scatter(g: np.ndarray, axis: int, size: int, index: np.ndarray,
             weight: np.ndarray | None = None) -> np.ndarray:
    """zeros (.., size, ..) with v added at ``index`` (m,) along axis, each target's terms
    in ascending position, without the leading +0 (the caller adds + 0); v (.., m, ..) =
    g (.., o, ..) repeated K = m / o times in place (v[.., p, ..] = g[.., p // K, ..]),
    times weight[p] (m,) when given: the composite's spread, never materialized (each
    rank gathers its terms from g and multiplies them by their weights)."""
    whole, ranks = _rank_plan(index.tobytes(), size)
    k = index.size // g.shape[axis] if g.shape[axis] else 1
    lead = (_FULL,) * axis

    def terms(src: np.ndarray) -> np.ndarray:
        v = _take(g, src // k if k > 1 else src, axis)
        if weight is not None:
            np.multiply(v, _col(weight[src], g.dtype, g.ndim, axis), out=v)
        return v

    if whole:
        out = terms(ranks[0][1])
    else:
        out = np.zeros(g.shape[:axis] + (size,) + g.shape[axis + 1:], g.dtype)
        if ranks:
            out[lead + (ranks[0][0],)] = terms(ranks[0][1])
    for tgt, src in ranks[1:]:
        key = lead + (tgt,)
        if type(tgt) is slice:
            view = out[key]
            np.add(view, terms(src), out=view)
        else:
            out[key] = np.add(out[key], terms(src))
    return out


def _plus_zero(a: np.ndarray) -> np.ndarray:
    return np.add(a, a.dtype.type(0), out=a)


def _scatter_step(g: np.ndarray, kind: str, axis: int, size: int, plan: list) -> np.ndarray:
    """One step's adjoint (see the module docstring), without the final + 0."""
    if kind == "select":
        return _scatter(g, axis, size, plan[0])
    if kind == "linear":
        i0, i1, w0, w1 = plan
        a = _scatter(g, axis, size, i0, w0)
        return np.add(a, _scatter(g, axis, size, i1, w1), out=a)
    index, weight = plan
    return _scatter(g, axis, size, index.reshape(-1), weight.reshape(-1))


# the most outputs along the last axis for which a weighted step's adjoint runs transposed
_MAX_ROWS = 64


def resample_bwd(g: np.ndarray, steps: tuple) -> np.ndarray:
    """dx of resample_fwd for the output gradient g (the adjoint, steps in reverse). A
    weighted step along a short last axis (o <= _MAX_ROWS) runs on g transposed to
    (o, rest) (one copy each way): its gathers, products and adds then move contiguous
    rows instead of single elements (bilinear x2 of (8, 32, 16, 16): 570 -> 330 us for
    that step); the selects' plain copies and long rows (linear of 128 -> 256: 1.3x
    slower) are faster in place."""
    with np.errstate(all="ignore"):
        for kind, axis, size, *plan in reversed(steps):
            if axis == g.ndim - 1 and kind != "select" and g.shape[-1] <= _MAX_ROWS and g.size:
                rows = np.ascontiguousarray(g.reshape(-1, g.shape[-1]).T)  # (o, rest)
                dx = _scatter_step(rows, kind, 0, size, plan)  # (size, rest)
                g = np.ascontiguousarray(dx.T).reshape(g.shape[:-1] + (size,))
            else:
                g = _scatter_step(g, kind, axis, size, plan)
            g = _plus_zero(g)
    return g
