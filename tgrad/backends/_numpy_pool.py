"""CPU primitives of max pooling (tgrad/nn/_conv.py ``MaxPool``): the forward
``max_pool_fwd`` and the plain backward ``max_pool_bwd``, with no window columns: each of
the k = prod(kernel) taps of a window is one strided view of the padded input, (N, C, *out),
and the loops run over the taps only.

Shapes: x (N, C, *sizes) (2 or 3 spatial dims, any strides), padded = sizes + 2 pad + the
ceil-mode extra on the right (implicit padding with ``low``: -inf, or an integer dtype's
minimum), out the output sizes; tap t (row-major over kernel, t = 0..k-1) of window o reads
padded[o_i s_i + t_i d_i] per dim i.

Forward (PyTorch's CPU max-pool kernels): y = the running maximum over the taps in order,
a tap taking over where val > max or isnan(val), so the first maximum wins and, in a
window holding NaNs, the last NaN; arg = the winning tap. A window whose input values all
tie with ``low`` has no winner after tap 0; there arg = its first tap inside the input
(whose value is ``low`` as well). These are exactly MaxPool's composite (columns, first
maximum, _last_nan_wins, the padding fallback), so y and arg are bit-identical.

Backward: dxp = zeros (N, C, *padded); for each tap t in order, dxp[tap t view] += (g where
arg == t, else +0); dx = dxp cropped to the input. These are the composite's IndexAdd +
Col2Im (numpy.col2im adds each tap's column slice into zeros in the same tap order) with
the same additions (its columns hold 0 + g, mine g: the sums agree, since a sum that starts
at +0 never holds -0), so overlapping windows sum in the same order: bit-identical. Where
the windows tile the input (stride = kernel, no padding or dilation: ``_tiled``), each
position gets one term, +0 + (g or +0): written straight into an uninitialised dx as
(g + 0) selected by the mask, +0 past the last window (the same bits, no zero fill and
no read-modify-write of strided views: 1.6x faster on 2 x 2 windows).

The forward copies each tap's strided view once into a contiguous scratch row, so the
comparison and the maximum run on contiguous operands (1.3x faster), and keeps ``arg``
as int8 (int32 past 127 taps): MaxPool widens it to int64 only for the indices and the
create_graph backward.
"""

from __future__ import annotations

import numpy as np

__all__ = ["max_pool_bwd", "max_pool_fwd", "FAST_DTYPES"]

# dtypes the fast forward takes (the backward: the floating ones); others run the composite
FAST_DTYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16,
                                              np.int32, np.int64, np.uint8))


def _tap_views(a: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple,
               out: tuple) -> list:
    """The k strided views a[:, :, tap t] (N, C, *out) of a (N, C, *padded), tap order."""
    full = (slice(None), slice(None))
    return [a[full + tuple(slice(ki * di, ki * di + (o - 1) * si + 1, si)
                           for ki, di, o, si in zip(t, dilation, out, stride))]
            for t in np.ndindex(*kernel)]


def _first_inside(kernel: tuple, stride: tuple, dilation: tuple, out: tuple,
                  pad: tuple) -> np.ndarray:
    """(*out) int64: each window's first tap (row-major) inside the unpadded input. Per dim
    the first k_i with o_i s_i + k_i d_i >= p_i (a window starts inside the input or its
    left padding, so that tap is inside); row-major, the combined tap is their ravel."""
    firsts = []
    for i, (k, s, d, o, p) in enumerate(zip(kernel, stride, dilation, out, pad)):
        ki = np.clip(-((np.arange(o) * s - p) // d), 0, k - 1)  # ceil((p - o s) / d)
        shape = [1] * len(out)
        shape[i] = o
        firsts.append(ki.reshape(shape))
    return np.ravel_multi_index(tuple(firsts), kernel).astype(np.int64)


def padded_input(x: np.ndarray, pad: tuple, extra: tuple, low) -> np.ndarray:
    """x (N, C, *sizes) padded by ``pad`` on both sides and ``extra`` more on the right of
    each spatial dim with ``low``; x itself when nothing is added."""
    if not any(pad) and not any(extra):
        return x
    shape = x.shape[:2] + tuple(s + 2 * p + e for s, p, e in zip(x.shape[2:], pad, extra))
    xp = np.full(shape, low, x.dtype)
    inner = tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:]))
    xp[(slice(None), slice(None)) + inner] = x
    return xp


def max_pool_fwd(x: np.ndarray, kernel: tuple, stride: tuple, pad: tuple, dilation: tuple,
                 out: tuple, extra: tuple, low) -> tuple:
    """(y (N, C, *out) of x's dtype, arg (N, C, *out) the winning tap, int8 for k <= 127
    taps, else int32 (the caller widens it where an int64 index is wanted: kept compact,
    it is 1/8 of the memory saved for backward): see the module docstring. x (N, C,
    *sizes) any strides; ``extra`` the ceil-mode right padding.

    No masked copies (a random mask costs a branch miss an element, 30x a plain pass):
    per tap, take = v > y [| isnan(v)] against the running maximum, arg = max(arg, t take)
    (t exceeds every earlier tap) and y = maximum(y, v), which is the rule's value but
    for a +-0 tie's sign and a NaN's payload (np.maximum promises neither): for an input
    holding -0.0 or NaN, y = v where take by a bitwise select instead (y ^= (v ^ y) & -take
    on the bits: exact)."""
    xp = padded_input(x, pad, extra, low)
    taps = _tap_views(xp, kernel, stride, dilation, out)
    y = np.array(taps[0], order="C")
    k = len(taps)
    arg = np.zeros(y.shape, np.int8 if k <= 127 else np.int32)
    if y.size == 0:
        return y, arg
    floating = x.dtype.kind == "f"
    # The NaN rule costs two passes a tap: only when the input holds a NaN (np.max
    # propagates it; one pass). Without NaN and -0.0 (bits: the integer minimum) np.maximum
    # is exact: the bitwise select only where they occur.
    nan = floating and bool(np.isnan(np.max(x)))
    select = nan or (floating and _has_minus_zero(x))
    take = np.empty(y.shape, bool)
    isnan = np.empty(y.shape, bool) if nan else None
    tt = np.empty(y.shape, arg.dtype)
    if select:
        bits = np.dtype(f"i{x.dtype.itemsize}")
        yb, sel, diff = y.view(bits), np.empty(y.shape, bits), np.empty(y.shape, bits)
    vc = np.empty(y.shape, x.dtype)  # each tap copied once: then contiguous operands
    flags = take.view(np.int8) if arg.dtype == np.int8 else take  # (bool: 0/1 bytes)
    for t, v in enumerate(taps[1:], start=1):
        np.copyto(vc, v)
        v = vc
        np.greater(v, y, out=take)
        if nan:
            np.logical_or(take, np.isnan(v, out=isnan), out=take)
        np.multiply(flags, t, out=tt, dtype=arg.dtype)
        np.maximum(arg, tt, out=arg)
        if select:
            np.negative(take, out=sel, dtype=bits)  # 0 or -1 (all ones)
            np.bitwise_xor(v.view(bits), yb, out=diff)
            np.bitwise_and(diff, sel, out=diff)
            np.bitwise_xor(yb, diff, out=yb)
        else:
            np.maximum(y, v, out=y)
    if any(pad) or any(extra):  # all tie with the padding: the first tap inside the input
        low_hit = y == low
        if low_hit.any():
            first = np.broadcast_to(_first_inside(kernel, stride, dilation, out, pad), y.shape)
            arg[low_hit] = first[low_hit]
    return y, arg


def _has_minus_zero(x: np.ndarray) -> bool:
    """Whether a float array holds -0.0 (its bits are the signed integer minimum)."""
    bits = np.dtype(f"i{x.dtype.itemsize}")
    return x.size > 0 and int(np.min(x.view(bits))) == np.iinfo(bits).min  # (the least)


def max_pool_bwd(g: np.ndarray, arg: np.ndarray, padded: tuple, sizes: tuple,
                 kernel: tuple, stride: tuple, dilation: tuple, pad: tuple) -> np.ndarray:
    """dx (N, C, *sizes): g (N, C, *out) added at each window's winning tap arg (N, C, *out)
    into zeros (N, C, *padded), tap by tap in order, then cropped (see the module
    docstring). Tap t adds g where arg == t and +0 elsewhere, the selection a bitwise
    and of g's bits with an all-ones / all-zeros mask (exact for every value, no masked
    ufunc: those cost a branch miss an element)."""
    out = tuple(g.shape[2:])
    dt = g.dtype
    if _tiled(padded, sizes, kernel, stride, dilation, pad):
        return _max_pool_bwd_tiled(g, arg, sizes, kernel, stride, dilation)
    dxp = np.zeros(g.shape[:2] + tuple(padded), dt)
    if dxp.size and g.size:
        bits = np.dtype(f"i{dt.itemsize}")
        gb = g.view(bits) if g.flags.c_contiguous else np.ascontiguousarray(g).view(bits)
        hit = np.empty(g.shape, bool)
        mask = np.empty(g.shape, bits)
        for t, view in enumerate(_tap_views(dxp, kernel, stride, dilation, out)):
            np.equal(arg, t, out=hit)
            np.negative(hit, out=mask, dtype=bits)  # 0 or -1 (all ones)
            np.bitwise_and(mask, gb, out=mask)
            np.add(view, mask.view(dt), out=view)
    if tuple(padded) == tuple(sizes):
        return dxp
    inner = tuple(slice(p, p + s) for p, s in zip(pad, sizes))
    return dxp[(slice(None), slice(None)) + inner]


def _tiled(padded: tuple, sizes: tuple, kernel: tuple, stride: tuple, dilation: tuple,
           pad: tuple) -> bool:
    """Whether the windows tile the input without overlap: stride = kernel, no dilation
    (kernel 1 aside), no padding: each input position is in at most one window."""
    return (tuple(padded) == tuple(sizes) and not any(pad)
            and all(s == k and (d == 1 or k == 1)
                    for k, s, d in zip(kernel, stride, dilation)))


def _max_pool_bwd_tiled(g: np.ndarray, arg: np.ndarray, sizes: tuple, kernel: tuple,
                        stride: tuple, dilation: tuple) -> np.ndarray:
    """max_pool_bwd where the windows tile the input (``_tiled``): each position is one
    tap of at most one window, so the composite's sum into zeros there is +0 + (g or +0)
    = (g + 0 where arg == t, else +0), written straight into an uninitialised dx tap by
    tap (the selection on the bits as in max_pool_bwd; g + 0 turns -0 into +0 as the sum
    did); the positions past the last window (out s < size) are set to +0."""
    dt = g.dtype
    out = tuple(g.shape[2:])
    dx = np.empty(g.shape[:2] + tuple(sizes), dt)
    if dx.size == 0:
        return dx
    bits = np.dtype(f"i{dt.itemsize}")
    with np.errstate(all="ignore"):
        gb = np.add(g, dt.type(0)).view(bits)  # (a fresh C-contiguous array)
    hit = np.empty(g.shape, bool)
    mask = np.empty(g.shape, bits)
    for t, view in enumerate(_tap_views(dx, kernel, stride, dilation, out)):
        np.equal(arg, t, out=hit)
        np.negative(hit, out=mask, dtype=bits)  # 0 or -1 (all ones)
        np.bitwise_and(mask, gb, out=view.view(bits))
    for d, (o, s, size) in enumerate(zip(out, stride, sizes), start=2):
        if o * s < size:  # (floor mode: a remainder no window reaches)
            dx[(slice(None),) * d + (slice(o * s, None),)] = 0
    return dx
