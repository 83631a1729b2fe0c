"""CPU primitives of F.pad's index padding (tgrad/nn/_pad.py ``IndexPad``: reflect /
replicate, and circular outside a graph) and of the pixel shuffles (tgrad/nn/_shuffle.py):
NumPy copies on the arrays, no tgrad op per step; bit-identical to the composites, which
run under create_graph and on other devices.

Index padding, forward: ``steps`` is a (dim, input size n, source index idx (out,)) per
padded dim, last dim first; y = x index-selected along each step's dim in turn (the
composite's index_selects). A pure copy, so any order of copying gives the same bits:
with two or more steps on a C-contiguous x the padded trailing dims are gathered at once,
one np.take of the flat plane positions (the steps' indices combined row-major), else
one np.take per step.

Index padding, backward (``steps`` in reverse, outermost padded dim first, as the
composite's add_at per step): per step, dx (..., n, ...) = zeros with g's slice at output
position o added at idx[o]. The composite's index add (np.add.at) visits g in C order, so
each input position i sums its copies in ascending o: ((+0 + g[o_0]) + g[o_1]) + ...
(o_0 < o_1 < ... the positions with idx[o] = i). Here rank r of a position o is the
number of earlier positions with the same idx: rank 0 is one gather of each i's first
copy, + 0 (0 + v = v + 0 bitwise: only one operand can be NaN), zeros where i is never
copied (a crop); then rank 1, 2, ... added at their (distinct) targets in turn: the same
additions in the same order (reflect and circular have at most 3 ranks; replicate one
more than its widest pad).

Pixel shuffle by r: (*, C r^2, H, W) -> (*, C, H r, W r), out[..., c, h r + i, w r + j] =
in[..., c r^2 + i r + j, h, w]; NumPy's copy of the transposed (.., C, H, r, W, r) view
runs an inner loop of r elements, so for r^2 <= 64 the copy is r^2 strided slice copies
(inner loops of W), one per (i, j); unshuffle (the inverse) and channel_shuffle are one
copy of the transposed view. Pure copies (bit-exact, any dtype).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tgrad.backends._numpy_dtypes import FLOAT32_64

__all__ = ["FAST_DTYPES", "index_pad_fwd", "index_pad_bwd", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle"]

# dtypes of the backward's fast sums (float16/bfloat16 sum in float32 in the composite)
FAST_DTYPES = FLOAT32_64

_FLAT_LIMIT = 1 << 17  # the most flat plane positions indexed at once (8 bytes each, cached)


def index_pad_fwd(x: np.ndarray, steps: tuple) -> np.ndarray:
    """x index-selected along each step's dim (steps: (dim, n, idx (out,)), at least one),
    a new C-contiguous array."""
    if len(steps) > 1 and x.flags.c_contiguous:
        first = min(d for d, _, _ in steps)
        sizes = x.shape[first:]
        out_sizes = list(sizes)
        for d, _, idx in steps:
            out_sizes[d - first] = idx.size
        if math.prod(out_sizes) <= _FLAT_LIMIT:
            picks = tuple((d - first, _key(idx)) for d, _, idx in steps)
            flat = _flat_plane_index(sizes, picks)
            plane = x.reshape(x.shape[:first] + (math.prod(sizes),))
            return np.take(plane, flat, axis=first).reshape(x.shape[:first] + tuple(out_sizes))
    y = x
    for d, _, idx in steps:
        y = np.take(y, idx, axis=d)
    return y


@functools.lru_cache(maxsize=8)  # (<= 1 MB each: a model pads a few shapes)
def _flat_plane_index(sizes: tuple, picks: tuple) -> np.ndarray:
    """The row-major flat positions in a plane of ``sizes`` of the output positions of
    ``picks`` ((dim in the plane, the int64 index's bytes) per indexed dim; the others
    kept whole), read-only."""
    per_dim = [np.arange(s, dtype=np.int64) for s in sizes]
    for j, raw in picks:
        per_dim[j] = np.frombuffer(raw, dtype=np.int64)
    flat = np.zeros((), np.int64)
    for s, idx in zip(sizes, per_dim):
        flat = (flat * s)[..., None] + idx  # row-major: the outer dims first
    flat = np.ascontiguousarray(flat.reshape(-1))
    flat.flags.writeable = False
    return flat


def index_pad_bwd(g: np.ndarray, steps: tuple) -> np.ndarray:
    """The adjoint of ``index_pad_fwd``: per step in reverse, zeros of the input size with
    g added back at the step's idx in ascending output order (see the module docstring)."""
    with np.errstate(all="ignore"):  # inf + -inf: NaN without a warning, as PyTorch
        for d, n, idx in reversed(steps):
            g = _add_back(g, d, n, idx)
    return g


def _add_back(g: np.ndarray, d: int, n: int, idx: np.ndarray) -> np.ndarray:
    """(..., n, ...) along dim d: position i = ((+0 + g[o_0]) + g[o_1]) + ... over the
    o with idx[o] = i in ascending order."""
    firsts, covered, later = _ranks(n, _key(idx))
    shape = list(g.shape)
    shape[d] = n
    dx = np.empty(shape, g.dtype) if covered else np.zeros(shape, g.dtype)
    lead = (slice(None),) * d
    for i, o in firsts:  # rank 0: each position's first copy (runs of them as slices)
        np.copyto(dx[lead + (i,)], g[lead + (o,)])
    np.add(dx, dx.dtype.type(0), out=dx)  # +0 + v (v + 0: the same bits), 0 elsewhere
    for i, o in later:  # one position at a time (few): a strided add, no fancy index
        column = dx[lead + (i,)]
        np.add(column, g[lead + (o,)], out=column)
    return dx


@functools.lru_cache(maxsize=256)
def _ranks(n: int, raw: bytes) -> tuple:
    """For the int64 index ``raw`` (out,) into n positions: (rank 0: pairs (positions,
    sources) of slices or ints, each covered position with the o of its first copy;
    whether all n positions are covered; the pairs (i, o) of the later copies, rank 1's,
    then rank 2's, ...: each position's copies in ascending o)."""
    idx = np.frombuffer(raw, dtype=np.int64)
    order = np.argsort(idx, kind="stable")  # by position, then ascending o
    pos = idx[order]
    counts = np.bincount(idx, minlength=n)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.arange(idx.size) - starts[pos]
    firsts = _runs(pos[rank == 0].tolist(), order[rank == 0].tolist())
    later = np.argsort(rank, kind="stable")[int((rank == 0).sum()):]  # by rank, then i
    return firsts, bool((counts > 0).all()), tuple(zip(pos[later].tolist(),
                                                       order[later].tolist()))


def _runs(dst: list, src: list) -> tuple:
    """The copy dst[k] <- src[k] (distinct dst) as pairs (dst, src) of slices over the
    maximal runs where both step by 1 (src by +1 or -1) and of ints elsewhere."""
    out, k = [], 0
    while k < len(dst):
        step, j = (src[k + 1] - src[k]) if k + 1 < len(dst) else 0, k + 1
        while step in (1, -1) and j < len(dst) and dst[j] == dst[j - 1] + 1 \
                and src[j] == src[j - 1] + step:
            j += 1
        if j - k < 3:  # a short run: its positions one by one (a strided copy each)
            out.extend((dst[q], src[q]) for q in range(k, j))
        else:
            stop = src[j - 1] + step
            out.append((slice(dst[k], dst[j - 1] + 1),
                        slice(src[k], stop if stop >= 0 else None, step)))
        k = j
    return tuple(out)


def _key(idx: np.ndarray) -> bytes:
    """An index's int64 bytes (the caches' key)."""
    return np.ascontiguousarray(idx, dtype=np.int64).tobytes()


def pixel_shuffle(x: np.ndarray, r: int) -> np.ndarray:
    """(*, C r^2, H, W) -> (*, C, H r, W r), a new C-contiguous array."""
    *lead, c, h, w = x.shape
    src = x.reshape(*lead, c // (r * r), r, r, h, w)
    out = np.empty((*lead, c // (r * r), h, r, w, r), x.dtype)
    if r * r <= 64:
        for i in range(r):
            for j in range(r):
                out[..., :, i, :, j] = src[..., i, j, :, :]
    else:
        k = len(lead)
        np.copyto(out, src.transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return out.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(x: np.ndarray, r: int) -> np.ndarray:
    """(*, C, H r, W r) -> (*, C r^2, H, W), a new C-contiguous array (one copy of the
    transposed view: its inner loop runs along W)."""
    *lead, c, hr, wr = x.shape
    h, w = hr // r, wr // r
    k = len(lead)
    out = np.empty((*lead, c, r, r, h, w), x.dtype)
    np.copyto(out, x.reshape(*lead, c, h, r, w, r).transpose(
        *range(k), k, k + 2, k + 4, k + 1, k + 3))
    return out.reshape(*lead, c * r * r, h, w)


def channel_shuffle(x: np.ndarray, groups: int) -> np.ndarray:
    """(N, C, *) -> (N, C, *): the channels seen as (groups, C / groups) transposed,
    out[:, j groups + g] = in[:, g (C / groups) + j]; a new C-contiguous array."""
    n, c, *rest = x.shape
    out = np.empty(x.shape, x.dtype)
    np.copyto(out.reshape(n, c // groups, groups, *rest),
              x.reshape(n, groups, c // groups, *rest).swapaxes(1, 2))
    return out
