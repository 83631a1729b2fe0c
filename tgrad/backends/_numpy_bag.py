"""CPU primitive of embedding_bag's 'sum' / 'mean' (tgrad/nn/_embedding_bag.py
``_BagSum``): per segment of entries, the sum of one table row per entry, in entry order,
into +0 -- the forward (segments: the bags; rows of the weight) and the weight's gradient
(segments: the entries of one weight row; rows of the bags' gradient) -- without the
(n, D) rows tensor and np.add.at over its n D flat positions.

The composite (weight[idx], * per_sample_weights, where(keep, ., 0), index_add) sums each
output element into +0 in entry order (np.add.at's order over the flat positions), and
its backward does the same into the weight's rows. ``segment_sums`` adds the same terms
in the same order: position k of every segment at once (segments sorted by length, the
ones longer than k a prefix: one np.take of their k-th entries' rows and one add per k),
so the sums are bit-identical. Where the longest segment is long against the work (an
index repeated thousands of times), a loop over k would cost more than np.add.at: there
the terms go through np.add.at on the flat positions in entry order (also bit-identical).
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_dtypes import FLOAT32_64

__all__ = ["FAST_DTYPES", "segment_first_max", "segment_sums"]

FAST_DTYPES = FLOAT32_64

_STEP_COST = 4000  # a loop step's overhead in element-adds (~4 us at ~1 ns an element)
_FREE_STEPS = 64  # segment_first_max's loops up to this length: cheaper than the composite


def _terms(table: np.ndarray, rows: np.ndarray, scale, keep, scale_first: bool):
    """table[rows] (m, D), times scale (m,) and zero where not keep (m,), in the
    composite's order: scale then mask (forward) or mask then scale (its backward)."""
    t = np.take(table, rows, axis=0)
    if scale is not None and scale_first:
        np.multiply(t, scale[:, None], out=t)
    if keep is not None:
        t[~keep] = 0
    if scale is not None and not scale_first:
        np.multiply(t, scale[:, None], out=t)
    return t


def segment_sums(table: np.ndarray, rows: np.ndarray, order, lengths: np.ndarray,
                 out_rows: int, target, scale=None, keep=None,
                 scale_first: bool = True) -> np.ndarray:
    """(out_rows, D): row target[s] = +0 + the terms of segment s in order, zeros elsewhere.

    Entry e (0 .. n - 1, the n = sum(lengths) entries; segment s holds entries
    order[start_s .. start_s + lengths[s] - 1], start_s = the lengths before it; order None:
    the identity) has term table[rows[e]] (D,) times scale[e], zero where keep[e] is False
    (``_terms``). target (segments,) distinct rows of the result, or None: segment s is
    row s. table (R, D) float32/float64; rows (n,) int64; scale (n,) or None; keep (n,)
    bool or None."""
    dim = table.shape[1]
    out = np.zeros((out_rows, dim), table.dtype)
    segs = lengths.shape[0]
    n = rows.shape[0]
    if n == 0 or segs == 0:
        return out
    starts = np.cumsum(lengths) - lengths
    longest = int(lengths.max())
    with np.errstate(all="ignore"):  # inf - inf: NaN without a warning, as PyTorch
        if longest * _STEP_COST > n * max(dim, 1):  # few long segments: np.add.at
            seg = np.repeat(np.arange(segs), lengths)  # the segment of each position
            dest = seg if target is None else np.asarray(target)[seg]
            if order is not None:  # the destination of each entry, in entry order
                dest = np.empty_like(dest)
                dest[order] = seg if target is None else np.asarray(target)[seg]
            terms = _terms(table, rows, scale, keep, scale_first)
            flat = (dest[:, None] * dim + np.arange(dim)).reshape(-1)
            np.add.at(out.reshape(-1), flat, terms.reshape(-1))
            return out
        if order is None and int(lengths.min()) == longest:  # equal segments (2-d input)
            return _equal_segment_sums(out, table, rows.reshape(segs, longest), target,
                                       scale, keep, scale_first)
        if order is not None:  # the entries in segment order, once
            rows = rows[order]
            scale = None if scale is None else scale[order]
            keep = None if keep is None else keep[order]
        by_len = np.argsort(-lengths, kind="stable")  # longest first: a prefix per k
        first = starts[by_len]
        # segments longer than k, for each k (lengths descending)
        active = np.searchsorted(-lengths[by_len], -np.arange(longest), side="left")
        acc = np.zeros((segs, dim), table.dtype)
        for k in range(longest):
            pos = first[:active[k]] + k
            t = _terms(table, rows[pos], None if scale is None else scale[pos],
                       None if keep is None else keep[pos], scale_first)
            view = acc[:active[k]]
            np.add(view, t, out=view)
        dest = by_len if target is None else np.asarray(target)[by_len]
        out[dest] = acc
    return out


def _equal_segment_sums(out: np.ndarray, table: np.ndarray, rows: np.ndarray, target,
                        scale, keep, scale_first: bool) -> np.ndarray:
    """segment_sums of segments of one length L, in entry order (rows (segments, L)): per
    k, the k-th entries of all segments, columns of the (segments, L) layout."""
    segs, longest = rows.shape
    scale = None if scale is None else scale.reshape(segs, longest)
    keep = None if keep is None else keep.reshape(segs, longest)
    acc = np.zeros(out.shape if target is None else (segs, out.shape[1]), table.dtype)
    for k in range(longest):
        t = _terms(table, rows[:, k], None if scale is None else scale[:, k],
                   None if keep is None else keep[:, k], scale_first)
        np.add(acc, t, out=acc)
    if target is None:
        return acc
    out[np.asarray(target)] = acc
    return out


def segment_first_max(table: np.ndarray, rows: np.ndarray, lengths: np.ndarray,
                      keep) -> np.ndarray | None:
    """(segments, D) int64: per segment s (the lengths[s] entries after those of the
    segments before it) and column d, the position e (0 .. n - 1) of the segment's first
    entry with table[rows[e], d] maximal among its kept entries (keep (n,) bool or None:
    all), the first NaN if any; n where the segment has no kept entry. None where the
    longest segment is long (over _FREE_STEPS entries) against the work (a loop over
    positions would cost more than the composite). table (R, D) float; rows (n,) int64, n >= 1.

    Maximum m (a running np.maximum over the positions k: exact, NaN propagates), hits
    h[e] = (v[e] == m) | isnan(v[e]) (a NaN in the column makes m NaN) among kept entries,
    first = n - max over the segment of h[e] * (n - e) (0 where no hit)."""
    n, dim = rows.shape[0], table.shape[1]
    segs = lengths.shape[0]
    longest = int(lengths.max()) if segs else 0
    if longest > _FREE_STEPS and longest * _STEP_COST > n * max(dim, 1):
        return None
    vals = np.take(table, rows, axis=0)  # (n, D)
    if keep is not None:
        vals[~keep] = -np.inf
    if int(lengths.min()) == longest:  # equal segments (2-d input): (segs, L, D) views
        return _equal_first_max(vals.reshape(segs, longest, dim), keep)
    starts = np.cumsum(lengths) - lengths
    by_len = np.argsort(-lengths, kind="stable")  # longest first: a prefix per k
    first = starts[by_len]
    active = np.searchsorted(-lengths[by_len], -np.arange(longest), side="left")
    best = vals[first[:active[0]]]  # (non-empty segments, D), by length
    for k in range(1, longest):
        view = best[:active[k]]
        np.maximum(view, vals[first[:active[k]] + k], out=view)
    rank = np.empty(segs, np.int64)  # the row of best of each segment
    rank[by_len] = np.arange(segs)
    hit = _hits(vals, best, keep, rank[np.repeat(np.arange(segs), lengths)])
    wt = np.int32 if n < 1 << 31 else np.int64
    score = np.multiply(hit, (n - np.arange(n, dtype=wt))[:, None], dtype=wt)
    top = score[first[:active[0]]]
    for k in range(1, longest):
        view = top[:active[k]]
        np.maximum(view, score[first[:active[k]] + k], out=view)
    out = np.full((segs, dim), n, np.int64)
    out[by_len[:active[0]]] = n - top.astype(np.int64)
    return out


def _hits(vals: np.ndarray, best: np.ndarray, keep, seg) -> np.ndarray:
    """vals (.., D) equal to their segment's maximum best (seg None: best broadcasts), or
    NaN, and kept."""
    b = best if seg is None else best[seg]
    hit = vals == b
    if np.isnan(best).any():  # NaN in a column: its first NaN (NaN != NaN)
        hit |= np.isnan(vals)
    if keep is not None:
        hit &= keep.reshape(hit.shape[:-1])[..., None]
    return hit


def _equal_first_max(vals: np.ndarray, keep) -> np.ndarray:
    """segment_first_max of segments of one length L >= 1 (vals (segs, L, D))."""
    segs, length, dim = vals.shape
    best = vals[:, 0].copy()
    for k in range(1, length):
        np.maximum(best, vals[:, k], out=best)
    hit = _hits(vals, best[:, None], keep, None)
    wt = np.uint8 if length < 1 << 8 else np.int32 if length < 1 << 31 else np.int64
    score = np.multiply(hit, (length - np.arange(length, dtype=wt))[:, None], dtype=wt)
    local = length - np.maximum.reduce(score, axis=1).astype(np.int64)  # L: no hit
    first = local + (np.arange(segs, dtype=np.int64) * length)[:, None]
    first[local == length] = segs * length
    return first
