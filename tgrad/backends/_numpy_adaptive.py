"""CPU primitives of adaptive pooling (tgrad/nn/_conv.py ``AdaptiveAvgPool`` and
``AdaptiveMaxPool``): one pass per spatial dim over NumPy arrays, no window tensor of all
the dims and no tgrad op per step; bit-identical to the composites, which run under
create_graph and on other devices and dtypes.

Windows (PyTorch's, per dim): window i of a dim of size S to O outputs is [lo_i, hi_i),
lo_i = floor(i S / O), hi_i = ceil((i + 1) S / O); L = the longest. "Tap" j of every
window is position lo_i + j (one np.take of O positions along the dim: (..., O, rest)).

Average, forward (dims in order, as the composite): the composite sums each window as a
row of L values (the window, then zeros) with np.add.reduce along a C-contiguous last
axis, which is +0 + NumPy's pairwise sum of the row (the +0: a sum of -0.0s is +0.0):
n < 8 terms added one after another; up to 128 terms 8 running sums of every 8th term
combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), the rest added one after
another; longer rows split in two (the first half a multiple of 8 terms) and the halves'
sums added. ``_pairwise`` does the same additions on whole taps (arrays (..., O, rest)),
then + 0, so every sum is the same float (bit-identical); then / the window's length.

Average, backward (dims in reverse): g / length spread over each window's positions; the
composite's index add (np.add.at) sums into +0 in window order. Position p lies in the
windows first(p) .. last(p) (consecutive); rank r of p is window first(p) + r: dx =
((+0 + rank 0) + rank 1) + ..., rank 0 an np.repeat of the (..., O, rest) quotients
(first(p) does not decrease), the higher ranks added only at the positions in that many
windows: the same additions in the same order.

Max, forward (dims from the last to the first): per tap a running maximum (np.maximum,
NaN-propagating) and the winning tap arg (a tap takes over where v > max or isnan(v): the
first maximum, or the last NaN); taps past a window's end read its last element again
(never strictly greater; a NaN there is the window's last NaN: the position is clipped
back to hi - 1). Innermost dim first, then outwards, each pass choosing among the
previous pass's winners: the first maximum in row-major order over the window (the
earliest row holding the maximum, its first maximum), or its last NaN: the composite's
choice (first maximum of the row-major candidates, _last_nan_wins). The passes keep only
the winning taps (int8); the positions are resolved afterwards on output-sized arrays,
outermost dim first (``_positions``), and the value is read at the chosen flat position
(bit-exact, -0.0 and NaN payloads included).

Max, backward: zeros with g added at each index by np.add.at on the flat (lead, plane)
positions in C order: the composite's scatter_add, same order, bit-identical.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tgrad.backends._numpy_dtypes import FLOAT32_64

__all__ = ["FAST_DTYPES", "avg_fwd", "avg_bwd", "max_fwd", "max_bwd"]

FAST_DTYPES = FLOAT32_64


@functools.lru_cache(maxsize=256)
def _plan(size: int, out: int) -> tuple:
    """(lo (O,), hi (O,), L the longest window, lengths (O,) float64) of PyTorch's windows
    along a dim of ``size`` to ``out`` (out >= 1), read-only."""
    lo = np.arange(out, dtype=np.int64) * size // out
    hi = -(-(np.arange(1, out + 1, dtype=np.int64) * size) // out)
    lengths = (hi - lo).astype(np.float64)
    for a in (lo, hi, lengths):
        a.flags.writeable = False
    return lo, hi, int((hi - lo).max()), lengths


@functools.lru_cache(maxsize=256)
def _block(size: int, out: int, j0: int, j1: int) -> tuple:
    """(index (O, j1 - j0) of taps j0 .. j1 - 1, clipped into each window, (rows, cols)
    of the taps past a window's end or None)."""
    lo, hi, _, _ = _plan(size, out)
    idx = lo[:, None] + np.arange(j0, j1)
    past = idx >= hi[:, None]
    idx = np.minimum(idx, hi[:, None] - 1)
    idx.flags.writeable = False
    return idx, (np.nonzero(past) if past.any() else None)


@functools.lru_cache(maxsize=256)
def _ranks(size: int, out: int) -> tuple:
    """(counts (O,): the positions whose first window is i, in order (first(p) does not
    decrease: rank 0 is np.repeat of the windows by counts), then per rank r >= 1 the
    positions p inside window first(p) + r and that window): the windows holding each p, in
    the index add's order."""
    lo, hi, _, _ = _plan(size, out)
    p = np.arange(size)
    first = np.searchsorted(hi, p, side="right")  # the first window with hi > p
    last = np.searchsorted(lo, p, side="right") - 1  # the last window with lo <= p
    counts = np.bincount(first, minlength=out)
    more = []
    for r in range(1, int((last - first).max()) + 1):
        at = np.flatnonzero(first + r <= last)
        more.append((at, first[at] + r))
    for a in [counts] + [a for pair in more for a in pair]:
        a.flags.writeable = False
    return counts, tuple(more)


def _along(a: np.ndarray, axis: int, n: int) -> tuple:
    """The shape that broadcasts an (n,) vector along ``axis`` of ``a``."""
    return (n,) + (1,) * (a.ndim - axis - 1)


def _pairwise(taps, start: int, n: int, axis: int) -> np.ndarray:
    """NumPy's pairwise sum of taps start .. start + n - 1 (see the module docstring), a
    fresh array; ``taps(j0, j1)`` gives taps j0 .. j1 - 1 stacked at ``axis + 1`` (fresh)."""
    def tap(block, j):
        return block[(slice(None),) * (axis + 1) + (j,)]

    if n < 8:
        block = taps(start, start + n)
        s = np.array(tap(block, 0))
        for j in range(1, n):
            np.add(s, tap(block, j), out=s)
        return s
    if n <= 128:
        r = taps(start, start + 8)  # the 8 running sums
        i = 8
        while i < n - n % 8:
            np.add(r, taps(start + i, start + i + 8), out=r)
            i += 8
        r0, r1, r2, r3 = (tap(r, j) for j in range(4))
        r4, r5, r6, r7 = (tap(r, j) for j in range(4, 8))
        s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        if i < n:
            rest = taps(start + i, start + n)
            for j in range(n - i):
                np.add(s, tap(rest, j), out=s)
        return s
    n2 = n // 2
    n2 -= n2 % 8
    s = _pairwise(taps, start, n2, axis)
    return np.add(s, _pairwise(taps, start + n2, n - n2, axis), out=s)


def _avg_pass(x: np.ndarray, axis: int, out: int) -> np.ndarray:
    """x (..., S, rest) -> (..., out, rest): each window's sum (the composite's pairwise
    sum over the window padded with zeros to L) / its length."""
    size = x.shape[axis]
    if size == out:  # windows of one element: (+0 + x) / 1
        return np.add(x, x.dtype.type(0))
    _, _, longest, lengths = _plan(size, out)

    def taps(j0, j1):
        idx, past = _block(size, out, j0, j1)
        t = np.take(x, idx, axis=axis)  # (..., out, j1 - j0, rest)
        if past is not None:
            t[(slice(None),) * axis + past] = 0
        return t

    s = _pairwise(taps, 0, longest, axis)
    np.add(s, x.dtype.type(0), out=s)  # (the reduction's +0 start: -0.0 sums to +0.0)
    return np.true_divide(s, lengths.astype(x.dtype).reshape(_along(s, axis, out)), out=s)


def avg_fwd(x: np.ndarray, outs: tuple) -> np.ndarray:
    """adaptive_avg_pool of x (..., *sizes) (any strides, float32/float64) to (..., *outs),
    a fresh C-contiguous array (see the module docstring)."""
    spatial = len(outs)
    shape = x.shape[:x.ndim - spatial] + tuple(outs)
    if 0 in shape:
        return np.zeros(shape, x.dtype)
    y = x
    lead = x.ndim - spatial
    last = max((i for i, o in enumerate(outs) if x.shape[lead + i] != o), default=-1)
    with np.errstate(all="ignore"):  # inf - inf: NaN without a warning, as PyTorch
        for i, o in enumerate(outs):
            if x.shape[lead + i] != o or i > last:  # (see below)
                y = _avg_pass(y, lead + i, o)
    # A pass of one-element windows (+0 + x) only turns -0.0 into +0.0: before another
    # pass it changes no bit of the result (that pass's sums differ at most in a zero's
    # sign, and its +0 start clears that), so only the ones after the last other run.
    return np.array(y, order="C") if y is x or not y.flags.c_contiguous else y


def _avg_pass_bwd(g: np.ndarray, axis: int, size: int) -> np.ndarray:
    """The adjoint of _avg_pass: g (..., O, rest) -> (..., size, rest): each position's
    quotients g / length summed into +0 in window order (the module docstring)."""
    out = g.shape[axis]
    if size == out:  # one window a position: +0 + g / 1
        return np.add(g, g.dtype.type(0))
    lengths = _plan(size, out)[3]
    quot = np.true_divide(g, lengths.astype(g.dtype).reshape(_along(g, axis, out)))
    counts, more = _ranks(size, out)
    dx = np.repeat(quot, counts, axis=axis)  # rank 0: each position's first window
    np.add(dx, g.dtype.type(0), out=dx)  # +0 + the first term
    lead = (slice(None),) * axis
    for at, window in more:  # (positions unique within a rank)
        dx[lead + (at,)] += np.take(quot, window, axis=axis)
    return dx


def avg_bwd(g: np.ndarray, sizes: tuple) -> np.ndarray:
    """dx (..., *sizes) of avg_fwd for g (..., *outs) (float32/float64), fresh."""
    spatial = len(sizes)
    lead = g.ndim - spatial
    shape = g.shape[:lead] + tuple(sizes)
    if g.size == 0:
        return np.zeros(shape, g.dtype)
    with np.errstate(all="ignore"):
        for i in reversed(range(spatial)):
            g = _avg_pass_bwd(g, lead + i, sizes[i])
    return g if g.flags.c_contiguous else np.array(g, order="C")


def _max_pass(val: np.ndarray, axis: int, out: int, nan: bool) -> tuple:
    """One dim of max_fwd: val (..., S, rest) the running maxima of the inner dims'
    windows -> (maxima (..., out, rest) over this dim's windows too, the winning tap of
    each (int8, int64 past 127 taps; None: windows of one element, tap 0))."""
    size = val.shape[axis]
    if size == out:  # windows of one element: the values themselves
        return val, None
    _, _, longest, _ = _plan(size, out)
    idx = _block(size, out, 0, longest)[0]  # (out, L), clipped to hi - 1
    best = np.take(val, idx[:, 0], axis=axis)
    small = np.int8 if longest <= 127 else np.int64  # (int8: 2x faster a tap)
    arg = np.zeros(best.shape, small)
    if longest > 1:
        take = np.empty(best.shape, bool)
        isnan = np.empty(best.shape, bool) if nan else None
        tt = np.empty(best.shape, small)
        for j in range(1, longest):
            v = np.take(val, idx[:, j], axis=axis)
            np.greater(v, best, out=take)
            if nan:
                np.logical_or(take, np.isnan(v, out=isnan), out=take)
            np.multiply(take, j, out=tt, dtype=small)
            np.maximum(arg, tt, out=arg)
            np.maximum(best, v, out=best)
    return best, arg


def _positions(args: list, lead: tuple, sizes: tuple, outs: tuple, nan: bool) -> np.ndarray:
    """(lead, *outs) int64 flat positions in x (lead..., *sizes) of the chosen elements:
    args[d] (lead, *sizes[:d], *outs[d:]) the winning taps of dim d's pass. Outermost dim
    first: r_d = lo_d + args[d] at (the rows r_0 .. r_(d-1) chosen so far, i_d ..), the
    flat position base = (l S_0 + r_0) S_1 + r_1 ... (all on output-sized arrays)."""
    spatial = len(outs)
    n = math.prod(lead)
    shape = (n,) + tuple(outs)
    base = np.arange(n, dtype=np.int64).reshape((n,) + (1,) * spatial)
    for d in range(spatial):
        lo, hi, _, _ = _plan(sizes[d], outs[d])
        along = (1,) * (d + 1) + (outs[d],) + (1,) * (spatial - d - 1)
        inner = math.prod(outs[d + 1:])
        if args[d] is None:  # (one-element windows: r_d = i_d)
            r = np.broadcast_to(np.arange(outs[d], dtype=np.int64).reshape(along), shape)
        else:  # args[d] flat at ((base S_d) ... ): (base * out_d + i_d) * inner + the rest
            at = base * (outs[d] * inner) + (
                np.arange(outs[d] * inner, dtype=np.int64).reshape(along[:d + 1]
                                                                   + tuple(outs[d:])))
            r = np.take(args[d].reshape(-1), at).astype(np.int64)
            r += lo.reshape(along)
            if nan:  # (a tap past the end wins only as a NaN: the window's last NaN)
                np.minimum(r, (hi - 1).reshape(along), out=r)
        base = base * sizes[d] + r
    return base


def max_fwd(x: np.ndarray, outs: tuple) -> tuple:
    """(y (..., *outs) x's dtype, indices (..., *outs) int64 flat positions in the
    (*sizes) plane) of adaptive_max_pool over x (..., *sizes), float32/float64, any strides
    (see the module docstring)."""
    spatial = len(outs)
    lead = x.shape[:x.ndim - spatial]
    sizes = x.shape[x.ndim - spatial:]
    shape = lead + tuple(outs)
    if 0 in shape:
        return np.zeros(shape, x.dtype), np.zeros(shape, np.int64)
    nan = bool(np.isnan(np.max(x)))
    val = x
    args = [None] * spatial
    for i in reversed(range(spatial)):
        val, args[i] = _max_pass(val, len(lead) + i, outs[i], nan)
    at = _positions(args, lead, sizes, outs, nan)  # (n, *outs): positions in x's elements
    y = np.take(x.reshape(-1), at).reshape(shape)  # the elements themselves: -0.0, NaNs
    plane = math.prod(sizes)
    at -= (np.arange(at.shape[0], dtype=np.int64) * plane).reshape(
        (-1,) + (1,) * spatial)
    return y, at.reshape(shape)


def max_bwd(g: np.ndarray, indices: np.ndarray, sizes: tuple) -> np.ndarray:
    """dx (..., *sizes): zeros with g (..., *outs) added at indices (flat positions in the
    (*sizes) plane), np.add.at in C order (the composite's scatter_add)."""
    spatial = len(sizes)
    lead = g.shape[:g.ndim - spatial]
    plane = math.prod(sizes)
    dx = np.zeros(lead + (plane,), g.dtype)
    if g.size:
        n = math.prod(lead)
        flat = indices.reshape(n, -1) + (np.arange(n, dtype=np.int64) * plane)[:, None]
        with np.errstate(all="ignore"):
            np.add.at(dx.reshape(-1), flat.reshape(-1), g.reshape(-1))
    return dx.reshape(lead + tuple(sizes))
