"""CPU primitives of a convolution (tgrad/nn/_conv.py ``Convolution``) on NumPy arrays: the
forward ``conv_fwd`` and the plain (first-order) backward ``conv_bwd``, for real float32 /
float64 inputs. The same steps as the composite of tgrad ops (the padded input's columns
by one strided copy, the per-sample matmuls, col2im one strided add per kernel tap), with
the same NumPy calls on the same shapes, so outputs and gradients are bit-identical, minus
the composite's per-op Python work and its large temporaries:

* the padded input, the columns and the columns' gradient live in ``WORKSPACE``, scratch
  arrays reused from call to call (fresh ones otherwise fault their pages in again on
  every step: glibc trims the freed top of its heap);
* col2im adds each tap into a workspace padded plane, whose crop is copied out.

Shapes (spatial dims d = 2 or 3: a 1-d convolution comes as a 2-d one with H = 1): x
(N, C, *sizes), w (O, C / G, *kernel), b (O,) or None, g (N, O, *out); k = prod kernel,
L = prod out, CKg = C / G k. cols (N, G, CKg, L) = the padded input's windows (im2col):
y[n, g] = w[g] @ cols[n, g] (+ b); dw[g] = sum_n g[n, g] cols[n, g]^T; dcols[n, g] =
w[g]^T g[n, g], dx = col2im(dcols) (each window's gradient summed back where it was read).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from tgrad.backends import numpy as _nb
from tgrad.backends._numpy_dtypes import FLOAT32_64
from tgrad.backends._workspace import WORKSPACE, Workspace

__all__ = ["FAST_DTYPES", "WORKSPACE", "Workspace", "conv_bwd", "conv_fwd", "wide_col2im",
           "wide_col2im_applies", "wide_col2im_blocks"]

FAST_DTYPES = FLOAT32_64
_FULL = slice(None)
_RUN = 64  # elements: whole 64-byte vectors of any dtype

# A batch whose columns (or their gradient) take more than BATCH_BYTES goes through in
# chunks of samples of about CHUNK_BYTES of columns: they stay in cache between the im2col
# copy, the matmul and col2im's adds, instead of a pass over all N samples' columns (37.7
# MB for x (32, 32, 32, 32) float32, a 3x3 kernel) per step; the backward then rebuilds
# each chunk's columns for dw (cheaper than keeping them all). A smaller batch is one chunk
# and the forward keeps its columns for dw (rebuilding them cost more than chunking saved:
# (32, 16, 16, 16) -> 32, 4.7 MB of columns, fwd+bwd 3.3-3.5 -> 3.7-4.0 ms; at 9.4 MB a
# wash). Each sample's matmul and col2im adds are the same NumPy calls on the same values
# either way (per-sample work), so the chunks change no result.
BATCH_BYTES = 8 << 20
CHUNK_BYTES = 4 << 20
WIDE_BYTES = 4 << 20  # a 3-d col2im's wide array per call (``_wide_block``)


def _chunks(n: int, per_sample: int) -> list:
    """[(n0, n1)] covering range(n) (at least one run): one run when the n samples'
    per_sample bytes stay within BATCH_BYTES, else runs of max(1, CHUNK_BYTES //
    per_sample) samples."""
    if n * per_sample <= BATCH_BYTES:
        return [(0, n)]  # (an empty batch too: its dw a sum of no products, zeros)
    step = max(1, CHUNK_BYTES // per_sample)
    return [(n0, min(n, n0 + step)) for n0 in range(0, n, step)]


def _padded(x: np.ndarray, pads: tuple) -> tuple:
    """(x zero-padded by pads ((lo, hi) per spatial dim), its workspace tag or None): the
    interior of a kept "pad" array written, its zero border left as it is."""
    if not any(p for lo_hi in pads for p in lo_hi):
        return x, None
    shape = x.shape[:2] + tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    tag = ("pad", pads)
    xp = WORKSPACE.take(tag, shape, x.dtype, zeros=True)
    xp[(_FULL, _FULL) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(x.shape[2:], pads))] = x
    return xp, tag


def _columns(x: np.ndarray, kernel: tuple, stride: tuple, dilation: tuple, pads: tuple,
             out: tuple) -> np.ndarray:
    """The columns (N, C, *kernel, *out) of x padded by pads, a "cols" workspace array:
    entry [n, c, k, o] = padded x[n, c] at (o_i s_i + k_i d_i)_i (numpy.im2col's values).
    (Called on a chunk x[n0:n1] of the batch.) Unit strides and rows kept whole
    (``shifted_rows_apply``): ``_shifted_columns``, the same values."""
    if shifted_rows_apply(x, kernel, stride, pads, out):
        return _shifted_columns(x, kernel, dilation, pads, out)
    xp, tag = _padded(x, pads)
    n, c = xp.shape[:2]
    st = xp.strides[2:]
    windows = np.lib.stride_tricks.as_strided(
        xp, (n, c) + kernel + out, xp.strides[:2] + tuple(s * d for s, d in zip(st, dilation))
        + tuple(s * b for s, b in zip(st, stride)), writeable=False)
    cols = WORKSPACE.take("cols", windows.shape, x.dtype)
    np.copyto(cols, windows)
    if tag is not None:
        del windows
        WORKSPACE.give(tag, xp)
    return cols


def shifted_rows_apply(x: np.ndarray, kernel: tuple, stride: tuple, pads: tuple,
                       out: tuple) -> bool:
    """Whether ``_columns`` takes ``_shifted_columns``: x (N, C, *sizes) C-contiguous, a 2-d
    or 3-d kernel more than one tap wide, unit strides, and out rows as wide as x's
    (W_out = W: the row padding pl + pr = dw (kw - 1), "same" padding along the rows)."""
    return (len(kernel) in (2, 3) and kernel[-1] > 1 and set(stride) == {1}
            and out[-1] == x.shape[-1] and x.flags.c_contiguous)


def _shifted_columns(x: np.ndarray, kernel: tuple, dilation: tuple, pads: tuple,
                     out: tuple) -> np.ndarray:
    """``_columns`` for ``shifted_rows_apply``'s case, by copies of long runs (the plain
    strided copy runs NumPy's inner loop once per output row of W elements: its overhead
    dominates; 1.6x faster on (3, 32, 32, 32) 3x3 float32, 2-d; 3-d: 1.3x on (2, 16, 8, 16,
    16) 3x3x3). Spatial dims (*outer, H, W) (outer: the depth D in 3-d, none in 2-d), each
    padded but W to (*P, Hp, W). Column tap kj of the padded input reads
    x[n, c, *(r - lo), i - pt, j + sh], sh = kj dw - pl, so the padded plane S_kj
    (N, C, *P, Hp, W) is x's (H W)-runs (one per (n, c, *outer)) copied at the flat offset
    pt W - sh of its (Hp W)-slabs, then the columns the shift wrapped (j + sh out of
    [0, W)) zeroed; the slabs and rows outside x are never written (a "shift" workspace
    array that keeps its zeros, as "pad"'s border). Tap (*k, ki, kj)'s columns are then
    S_kj's slabs k_i d_i .. k_i d_i + out_i, rows ki dh .. ki dh + H_out of them: one
    contiguous run of H_out W per (n, c, *outer out). Copies only: the values of the
    strided copy, bit for bit."""
    n, c = x.shape[:2]
    *outer, h, w = x.shape[2:]
    *opads, (pt, pb), (pl, _) = pads
    *kouter, kh, kw = kernel
    *douter, dh, dw = dilation
    # (2-d: no outer dims, and none of their tuples built: ~5 us of Python a call)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(outer, opads)) if outer else ()
    hp, area = pt + h + pb, h * w
    tag = ("shift", pads, dilation, kw)
    rows = WORKSPACE.take(tag, (kw, n, c) + padded + (hp, w), x.dtype, zeros=True)
    flat = rows.reshape((kw, n, c) + padded + (hp * w,))
    src = x.reshape((n, c) + tuple(outer) + (area,))
    inner = tuple(slice(lo, lo + s) for s, (lo, _) in zip(outer, opads)) if outer else ()
    for kj in range(kw):
        sh = kj * dw - pl
        at = pt * w - sh  # where x's flat plane starts in S_kj's flat (Hp W)-slab
        lo, hi = max(at, 0), min(at + area, hp * w)
        if lo < hi:
            flat[(kj, _FULL, _FULL) + inner + (slice(lo, hi),)] = src[..., lo - at:hi - at]
        plane = rows[kj].reshape(-1, w)
        if sh > 0:  # (the columns whose j + sh is past the row's end, and S's first
            plane[:, max(w - sh, 0):] = 0  # and last rows' wrapped entries among them)
        elif sh < 0:
            plane[:, :min(-sh, w)] = 0
    cols = WORKSPACE.take("cols", (n, c) + tuple(kernel) + tuple(out), x.dtype)
    span = out[-2] * w
    runs = cols.reshape((n, c) + tuple(kernel) + tuple(out[:-2]) + (span,))  # (a view)
    stacked = flat.transpose((1, 2, 0) + tuple(range(3, flat.ndim)))  # (N, C, kw, *P, Hp W)
    taps = [((), ())]  # per outer tap: (*k, its slabs' slices of S), row-major
    for ko, do, oo in zip(kouter, douter, out):
        taps = [(ks + (ki,), sl + (slice(ki * do, ki * do + oo),)) for ks, sl in taps
                for ki in range(ko)]
    for ks, sl in taps:
        for ki in range(kh):
            row0 = ki * dh * w
            np.copyto(runs[(_FULL, _FULL) + ks + (ki,)],
                      stacked[(_FULL,) * 3 + sl + (slice(row0, row0 + span),)])
    WORKSPACE.give(tag, rows)
    return cols


def conv_fwd(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, kernel: tuple,
             stride: tuple, dilation: tuple, pads: tuple, groups: int, out: tuple,
             keep_cols: bool) -> tuple:
    """(y (N, O, *out) fresh, the columns (a "cols" workspace array, for conv_bwd's dw) when
    ``keep_cols`` and the batch is one chunk, else None): y[n, g] = w[g] @ cols[n, g]
    (+ b), the composite's batched matmul of w (G, O/G, CKg) with cols (N, G, CKg, L),
    chunk by chunk of samples (the chunk's columns, then the same np.matmul on them, into
    y's rows of the chunk). Columns of several chunks are not kept: conv_bwd rebuilds them
    chunk by chunk, cheaper than a pass over all of them (a batch of one chunk: its
    columns would be as large, and rebuilding them would cost an im2col more)."""
    n, o = x.shape[0], w.shape[0]
    length, ckg = math.prod(out), math.prod(w.shape[1:])
    wm = w.reshape(groups, o // groups, ckg)
    y = np.empty((n, o) + out, x.dtype)
    chunks = _chunks(n, x.shape[1] * math.prod(kernel) * length * x.itemsize)
    keep = keep_cols and len(chunks) == 1
    cols = None
    with _nb.quiet():  # NaN and inf propagate without a warning, as PyTorch
        for n0, n1 in chunks:
            cols = _columns(x[n0:n1], kernel, stride, dilation, pads, out)
            np.matmul(wm, cols.reshape(n1 - n0, groups, ckg, length),
                      out=y[n0:n1].reshape(n1 - n0, groups, o // groups, length))
            if not keep:
                WORKSPACE.give("cols", cols)
                cols = None
            if b is not None:
                y[n0:n1] += b.reshape((o,) + (1,) * len(out))
    return y, cols


def _col2im(dcols: np.ndarray, sizes: tuple, kernel: tuple, stride: tuple,
            dilation: tuple, pads: tuple, dx: np.ndarray) -> None:
    """dx (N, C, *sizes) = col2im(dcols (N, C, *kernel, *out)) over the padded plane (a
    "dxp" workspace array, zeroed), the padding cropped off (copied into dx; called on a
    chunk of samples). numpy.col2im's adds, tap by tap in row-major order, on views of
    the same shapes and strides: adding each tap straight into the unpadded dx (its
    window clipped) leaves NumPy other loops to pick (dims merged), 0.3 ms faster on
    (32, 16, 16, 16) but whose NaN + NaN can return the other operand's sign. Unit
    strides and a 2-d kernel: the same adds on flat runs (``wide_col2im``)."""
    n, c = dcols.shape[:2]
    out = dcols.shape[2 + len(kernel):]
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(sizes, pads))
    dxp = WORKSPACE.take("dxp", (n, c) + padded, dcols.dtype)
    dxp.fill(0)
    if wide_col2im_applies(kernel, stride):
        wide_col2im_blocks(dcols, dxp, kernel, dilation)
    else:
        for k in np.ndindex(*kernel):
            at = tuple(slice(ki * di, ki * di + (b - 1) * si + 1, si)
                       for ki, di, b, si in zip(k, dilation, out, stride))
            view = dxp[(_FULL, _FULL) + at]
            np.add(view, dcols[(_FULL, _FULL) + k], out=view)
    dx[...] = dxp[(_FULL, _FULL) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(sizes, pads))]
    WORKSPACE.give("dxp", dxp)


def wide_col2im_applies(kernel: tuple, stride: tuple) -> bool:
    """Whether col2im takes ``wide_col2im``: unit strides and a 2-d or 3-d kernel of more
    than one tap (measured: 1-d and 1 x 1 kernels gain nothing or lose, as the copy into
    the wide array costs what the runs save; 3-d only in blocks of planes, ``_wide_block``)."""
    return len(kernel) in (2, 3) and math.prod(kernel) > 1 and set(stride) == {1}


def wide_col2im_blocks(src: np.ndarray, plane: np.ndarray, kernel: tuple,
                       dilation: tuple) -> None:
    """``wide_col2im`` (same arguments) over blocks of ``_wide_block`` planes (n, c)."""
    n, c = plane.shape[:2]
    size = plane.shape[2:]
    step = _wide_block(len(kernel), math.prod(kernel) * math.prod(size) * plane.itemsize)
    if step >= n * c:
        wide_col2im(src, plane, kernel, dilation)
        return
    flat_src = src.reshape((n * c, 1) + src.shape[2:])
    flat_plane = plane.reshape((n * c, 1) + size)
    for r0 in range(0, n * c, step):
        wide_col2im(flat_src[r0:r0 + step], flat_plane[r0:r0 + step], kernel, dilation)


def _wide_block(nd: int, per_plane: int) -> int:
    """Planes (n, c) per ``wide_col2im`` call: all of them for a 2-d kernel; for a 3-d one
    as many as keep the wide array (per_plane bytes a plane) within WIDE_BYTES (at least
    one): one call over all the planes of (4, 8, 16, 32, 32) 3x3x3 float32 streams a 72 MB
    wide array twice, 1.4x slower than the per-tap adds; in blocks it stays in cache.
    Blocks of planes change no value: each plane's sums are its own (the runs that spill
    past a plane carry only the wide array's +0.0 gaps, an identity on the accumulator)."""
    return (1 << 62) if nd == 2 else max(1, WIDE_BYTES // per_plane)


def wide_col2im(src: np.ndarray, plane: np.ndarray, kernel: tuple, dilation: tuple) -> None:
    """plane (N, C, *size), C-contiguous, += col2im of src (N, C, *kernel, *out) for unit
    strides: entry [n, c, k, o] added at (o_i + k_i d_i)_i, tap by tap in row-major order.

    The plain per-tap add of a (N, C, *out) view runs NumPy's inner loop once per output
    row (out[-1] elements each: the overhead dominates). Here each tap's terms are first
    copied into a "wide" workspace array (k, N C prod size): tap t's term for output o of
    plane r at r prod(size) + sum_i o_i pst_i (pst: the plane's row-major strides), every
    other entry left zero. Tap t lands on the flat planes at offset sum_i t_i d_i pst_i
    plus that, so its add is one contiguous 1-d run over all planes, into a zeroed flat
    accumulator, copied (added to the zero plane) at the end. Each position still sums
    its taps' terms in tap order; the extra terms are +0.0, an exact identity on the
    accumulator (it starts at +0.0 and a sum is -0.0 only when both terms are, so it is
    never -0.0; x + 0.0 = x otherwise): the per-tap views' values, except that which NaN
    NaN + NaN returns (NumPy's SIMD add keeps the first operand's in whole vectors, the
    second's in its masked tail): the runs are whole 64-byte vectors, so it is the first
    (the accumulated one) everywhere, whatever the chunk of samples; the per-tap views
    returned the second in their rows' tails. numpy.col2im (the composite's) runs this
    too for unit strides. 1.8x faster on (8, 32, 16, 16) 3x3 float32."""
    n, c = plane.shape[:2]
    size = tuple(plane.shape[2:])
    nd = len(size)
    out = tuple(src.shape[2 + nd:])
    k, area, nc = math.prod(kernel), math.prod(size), n * c
    pst = [math.prod(size[i + 1:]) for i in range(nd)]
    # one 1-d run per tap over all (N C) planes, padded to whole SIMD vectors (64 bytes:
    # NumPy's masked tail returns the other operand's NaN, its full vectors the first's)
    span = -(-nc * area // _RUN) * _RUN
    key = ("wide", size, out, nc)  # (the zero gaps sit where these put them)
    wide = WORKSPACE.take(key, (k, span), src.dtype, zeros=True)
    interior = wide[:, :nc * area].reshape((k, n, c) + size)[
        (_FULL,) * 3 + tuple(slice(0, o) for o in out)]
    np.copyto(interior, np.moveaxis(src.reshape((n, c, k) + out), 2, 0))
    acc = WORKSPACE.take("acc", (span + area,), plane.dtype)  # every tap's run in range
    acc.fill(0)
    for t, tap in enumerate(np.ndindex(*kernel)):
        off = sum(ki * di * p for ki, di, p in zip(tap, dilation, pst))
        view = acc[off:off + span]
        np.add(view, wide[t], out=view)
    np.add(plane.reshape(-1), acc[:nc * area], out=plane.reshape(-1))  # (0 + x: x)
    WORKSPACE.give("acc", acc)
    WORKSPACE.give(key, wide)


def conv_bwd(g: np.ndarray, x: np.ndarray, w: np.ndarray, cols: np.ndarray | None,
             kernel: tuple, stride: tuple, dilation: tuple, pads: tuple, groups: int,
             need_x: bool, need_w: bool) -> tuple:
    """(dx, dw), each fresh or None, chunk by chunk of samples: dw = sum_n g[n, g]
    cols[n, g]^T (the batched matmul of each chunk's columns into its rows of the products
    (N, G, O/G, CKg), then tgrad's sum over N of them all), dx = col2im(w[g]^T g[n, g])
    (each chunk's dcols, then their col2im into its rows of dx). ``cols``: conv_fwd's
    (the whole batch's, one chunk) or None (rebuilt from x per chunk); it goes back to
    the workspace here."""
    n, o = g.shape[0], w.shape[0]
    out = tuple(g.shape[2:])
    length, ckg = math.prod(out), math.prod(w.shape[1:])
    gm = g.reshape(n, groups, o // groups, length)  # (a view of a contiguous g)
    wt = w.reshape(groups, o // groups, ckg).transpose(0, 2, 1)  # (G, CKg, O/G)
    prod = WORKSPACE.take("dw", (n, groups, o // groups, ckg), g.dtype) if need_w else None
    chunks = [(0, n)] if cols is not None else _chunks(
        n, x.shape[1] * math.prod(kernel) * length * g.itemsize)
    dx = dw = None
    fused = need_x and depthwise_col2im_applies(kernel, stride, o, groups, w)
    rows = need_x and not fused and rows_col2im_applies(x.shape[2:], kernel, stride, pads,
                                                         out, g, w)
    with _nb.quiet():
        for n0, n1 in chunks:
            if need_w:
                if cols is None:
                    cols = _columns(x[n0:n1], kernel, stride, dilation, pads, out)
                np.matmul(gm[n0:n1], cols.reshape(n1 - n0, groups, ckg, length)
                          .transpose(0, 1, 3, 2), out=prod[n0:n1])
                if n1 == n:  # all products made
                    dw = _nb.sum_(prod, (0,), False).reshape(w.shape)
                    WORKSPACE.give("dw", prod)
            if cols is not None:
                WORKSPACE.give("cols", cols)
                cols = None
            if need_x:
                if dx is None:
                    dx = np.empty(x.shape, g.dtype)
                if fused:
                    _depthwise_col2im(g[n0:n1], wt, x.shape[2:], kernel, dilation, pads,
                                      dx[n0:n1])
                    continue
                dcols = WORKSPACE.take("cols", (n1 - n0, x.shape[1]) + kernel + out, g.dtype)
                dc = dcols.reshape(n1 - n0, groups, ckg, length)
                if o == groups:  # one output channel a group (depthwise): products of one
                    np.multiply(wt, gm[n0:n1], out=dc)  # term (the matmul's slow loop)
                else:
                    np.matmul(wt, gm[n0:n1], out=dc)
                if rows:
                    _rows_col2im(dcols, x.shape[2:], kernel, dilation, pads, dx[n0:n1])
                else:
                    _col2im(dcols, x.shape[2:], kernel, stride, dilation, pads, dx[n0:n1])
                WORKSPACE.give("cols", dcols)
    return dx, dw


def rows_col2im_applies(sizes: tuple, kernel: tuple, stride: tuple, pads: tuple, out: tuple,
                        g: np.ndarray, w: np.ndarray) -> bool:
    """Whether conv_bwd's dx takes ``_rows_col2im``: a 2-d or 3-d kernel of more than one
    tap, unit strides, out rows as wide as x's (W_out = W, as ``shifted_rows_apply``), and
    a finite g and w: then every NaN col2im can meet is the one default NaN (inf - inf),
    so which operand's NaN a NaN + NaN keeps (NumPy's vector loop or its tail: the runs
    here are not ``wide_col2im``'s) cannot show."""
    return (len(kernel) in (2, 3) and math.prod(kernel) > 1 and set(stride) == {1}
            and out[-1] == sizes[-1] and bool(np.isfinite(w).all())
            and bool(np.isfinite(g).all()))


def _rows_col2im(dcols: np.ndarray, sizes: tuple, kernel: tuple, dilation: tuple,
                 pads: tuple, dx: np.ndarray) -> None:
    """dx (N, C, *sizes) = col2im(dcols (N, C, *kernel, *out)) for ``rows_col2im_applies``'s
    case, by adds of long runs; dcols (a workspace array) is overwritten. Spatial dims
    (*outer, H, W) (outer: D in 3-d), out = (*o, oh, W). The accumulator keeps x's rows
    unpadded: acc (N, C, *P, M + Hp W + M) (P, Hp: the padded sizes; M = the largest
    |sh|), where tap (*k, ki, kj) adds its term for output (*i, r, j) at slab
    k_i d_i + i_i, flat M + (ki dh + r) W + j + sh, sh = kj dw - pl: each (n, c, *i) slab's
    oh W terms are one contiguous run of dcols, added at one offset. A term whose column
    j + sh falls outside [0, W) belongs to the row padding (cropped off): it is zeroed in
    dcols first, so the run adds +0.0 where it wraps into the next or the previous row
    (the accumulator starts at +0.0 and is never -0.0, so + 0.0 is an identity). Each
    position sums its terms in tap order, as the per-tap adds: the same values (NaN:
    ``rows_col2im_applies``). 2.5x faster than ``wide_col2im`` on (2, 16, 8, 16, 16)
    3x3x3 float32 (no copy into the wide array, runs of oh W instead of rows of W)."""
    n, c = dcols.shape[:2]
    nd = len(kernel)
    *outer, h, w = sizes
    *opads, (pt, pb), (pl, _) = pads
    *douter, dh, dw = dilation
    out = dcols.shape[2 + nd:]
    *oouter, oh, _ = out
    kw = kernel[-1]
    shifts = [kj * dw - pl for kj in range(kw)]
    for kj, sh in enumerate(shifts):  # the wrapped terms zeroed (one strided fill each)
        if sh:
            cut = slice(max(w - sh, 0), None) if sh > 0 else slice(0, min(-sh, w))
            dcols[(_FULL,) * (1 + nd) + (kj,) + (_FULL,) * (nd - 1) + (cut,)] = 0
    margin = max(abs(sh) for sh in shifts)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(outer, opads))
    hp = pt + h + pb
    acc = WORKSPACE.take("racc", (n, c) + padded + (2 * margin + hp * w,), dx.dtype)
    acc.fill(0)
    span = oh * w
    runs = dcols.reshape((n, c) + tuple(kernel) + tuple(oouter) + (span,))
    for tap in itertools.product(*map(range, kernel)):
        *kout, ki, kj = tap
        at = margin + ki * dh * w + shifts[kj]
        view = acc[(_FULL, _FULL) + tuple(slice(k * d, k * d + o) for k, d, o in
                                          zip(kout, douter, oouter)) + (slice(at, at + span),)]
        np.add(view, runs[(_FULL, _FULL) + tap], out=view)
    crop = tuple(slice(lo, lo + s) for s, (lo, _) in zip(outer, opads))
    np.copyto(dx.reshape(acc.shape[:2] + tuple(outer) + (h * w,)),  # (dx: contiguous)
              acc[(_FULL, _FULL) + crop + (slice(margin + pt * w, margin + (pt + h) * w),)])
    WORKSPACE.give("racc", acc)


def depthwise_col2im_applies(kernel: tuple, stride: tuple, o: int, groups: int,
                             w: np.ndarray) -> bool:
    """Whether conv_bwd's dx takes ``_depthwise_col2im``: one output channel a group (its
    dcols are products w g, no matmul), ``wide_col2im``'s case in 2-d, and a finite w (its
    products with the wide g's zero gaps must be zeros)."""
    return (o == groups and len(kernel) == 2 and wide_col2im_applies(kernel, stride)
            and bool(np.isfinite(w).all()))


def _depthwise_col2im(g: np.ndarray, wt: np.ndarray, sizes: tuple, kernel: tuple,
                      dilation: tuple, pads: tuple, dx: np.ndarray) -> None:
    """dx (N, C, *sizes) = col2im(dcols) for dcols[n, gr, (ci, t), l] = wt[gr, (ci, t), 0]
    g[n, gr, l] (conv_bwd's depthwise products; g (N, O = G, *out), wt (G, C/G k, 1)),
    without dcols: ``wide_col2im``'s runs, each tap's run made on the fly. g is copied
    once into a "wide" plane layout (N, G, 1, padded area), its gaps +0.0 (a kept
    workspace array); tap t's run is then np.multiply(wt[:, ci t], wide g) (the products
    of the dcols path, operands in its order, bit for bit) with the gaps w 0 = +-0.0 (w
    finite: ``depthwise_col2im_applies``), added at the tap's offset into the flat
    accumulator as ``wide_col2im`` adds its tap's run: the same sums in the same order (a
    -0.0 term is an identity too: the accumulator is never -0.0), the same whole 64-element
    runs. 2.3x faster than the products plus col2im on (8, 32, 16, 16) 3x3 float32."""
    n, groups = g.shape[:2]
    out = g.shape[2:]
    c = dx.shape[1]
    per = c // groups
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(sizes, pads))
    k, area, nc = math.prod(kernel), math.prod(padded), n * c
    pst = [math.prod(padded[i + 1:]) for i in range(len(padded))]
    span = -(-nc * area // _RUN) * _RUN
    key = ("gwide", padded, out, n, groups)
    gw = WORKSPACE.take(key, (n, groups) + padded, g.dtype, zeros=True)
    gw[(_FULL, _FULL) + tuple(slice(0, o) for o in out)] = g
    term = WORKSPACE.take("term", (span,), g.dtype, zeros=True)  # (its tail stays +0.0)
    terms = term[:nc * area].reshape(n, groups, per, area)
    gwv = gw.reshape(n, groups, 1, area)
    wk = wt.reshape(groups, per, k, 1)
    acc = WORKSPACE.take("acc", (span + area,), dx.dtype)
    acc.fill(0)
    for t, tap in enumerate(np.ndindex(*kernel)):
        np.multiply(wk[:, :, t], gwv, out=terms)
        off = sum(ki * di * p for ki, di, p in zip(tap, dilation, pst))
        view = acc[off:off + span]
        np.add(view, term, out=view)
    plane = acc[:nc * area].reshape((n, c) + padded)
    dx[...] = plane[(_FULL, _FULL) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(sizes, pads))]
    WORKSPACE.give("acc", acc)
    WORKSPACE.give("term", term)
    WORKSPACE.give(key, gw)
