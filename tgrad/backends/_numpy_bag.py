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

__all__ = ["FAST_DTYPES", "segment_sums"]

FAST_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))

_STEP_COST = 4000  # a loop step's overhead in element-adds (~4 us at ~1 ns an element)


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
