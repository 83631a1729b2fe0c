# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""grid_sample's fused forward and backward kernels (the maths: tgrad/nn/_grid_sample.py's
docstring; the NumPy twin: tgrad/backends/_numpy_grid_sample.py).

Shape contract: X (N, C, D, H, W) read through its element strides (2-D: D = 1, SXD = 0),
GRID contiguous (N, P, K) (K = 2: x, y; K = 3: x, y, z = dims W, H, D), P the output
points per image; O (N, C, P) contiguous. One program takes BLOCK_P points (flat over N P)
and walks the channels in BLOCK_C tiles; the coordinates are worked out once per program,
each tap's pixel and weight again per channel tile (a few flops against C loads).
MODE 0 bilinear (2^K taps), 1 nearest (1 tap), 2 bicubic (16 taps, K = 2 only);
PAD 0 zeros, 1 border, 2 reflection; float32 compute for float32, float64 for float64.

Forward:  out[n, c, p] = sum_t where(inside_t, x[n, c, tap_t], 0) * w_t  (nearest: no w).
Backward (grid_sample_bwd_kernel, one pass over the points):
  d grid[n, p, j] = chain_d sum_t (d w_t / d c_d) sum_c g[n, c, p] x_t[c]   (d = K - 1 - j,
      chain_d = d c_d / d grid: the unnormalize scale times the padding's derivative, a
      selected 0 where a clip is active; nearest: 0)
  TGT[n, p, t] = n S + (the tap's row-major pixel), or N S for a tap outside the image;
  VAL[n, p, t, c] = g[n, c, p] w_t: the caller's deterministic index_add sums VAL into
      rows TGT of an (N S + 1, C) buffer (its row N S dropped), i.e. d x.
Bytes: forward ~ (T C reads + C writes) per point, backward ~ (T C x reads + C g reads +
T C value writes) per point.
"""

from __future__ import annotations

import triton
import triton.language as tl

from tgrad.kernels.elementwise import _fmod, f_round
from tgrad.kernels.softmax import load_acc, to_acc

CUBIC_A = tl.constexpr(-0.75)  # Keys' coefficient (PyTorch's)


@triton.jit
def _unnormalize(v, size, ALIGN: tl.constexpr):
    """(pixel coordinate, d / d v) of normalized v along a dim of ``size`` pixels."""
    if ALIGN:
        scale = (size - 1) * 0.5
        c = (v + 1) * scale
    else:
        scale = size * 0.5
        c = ((v + 1) * size - 1) * 0.5
    return c, scale


@triton.jit
def _clip(c, size):
    """clamp(c, 0, size - 1) (NaN: 0, PyTorch's clip_coordinates) and its derivative: 1
    strictly inside."""
    # (clamp ignores a NaN operand by default: fmax / fmin, on the GPU as in the
    # interpreter)
    r = tl.clamp(c, 0.0, size - 1.0)
    der = tl.where((r > 0) & (r < size - 1), 1.0, 0.0)  # (from r: c is dead after the clamp)
    return r, der


@triton.jit
def _reflect(c, size, ALIGN: tl.constexpr):
    """PyTorch's reflect_coordinates into [low, low + span] (align: [0, size - 1], else
    [-0.5, size - 0.5]) and its derivative (the sign of c - low, flipped on odd folds); a
    span of 0 (align, size 1): c * 0, derivative 0."""
    if ALIGN:
        low = 0.0
        span = size - 1
    else:
        low = -0.5
        span = size
    rel = c - low
    d = tl.abs(rel)
    spans = tl.zeros_like(d) + span
    extra = _fmod(d, spans)
    flips = tl.floor(d / spans)
    even = flips * 0.5 == tl.floor(flips * 0.5)
    r = tl.where(even, extra + low, span - extra + low)
    # sign(rel), NaN for a NaN rel (abs's derivative in the composition: NaN * 0 = NaN)
    sgn = tl.where(rel > 0, 1.0, tl.where(rel < 0, -1.0, rel * 0.0))
    der = tl.where(even, sgn, -sgn)
    r = tl.where(span == 0, c * 0.0, r)
    der = tl.where(span == 0, 0.0, der)
    return r, der


@triton.jit
def _pad(c, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """PyTorch's compute_coordinates (zeros: c; border: clipped; reflection: reflected,
    then clipped) and its derivative."""
    if PAD == 0:
        r = c
        der = tl.zeros_like(c) + 1.0
    elif PAD == 1:
        r, der = _clip(c, size)
    else:
        f, dr = _reflect(c, size, ALIGN)
        r, dc = _clip(f, size)
        der = dr * dc
    return r, der


@triton.jit
def _prep(v, size, MODE: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """One dim of a point: (base, frac, chain). bilinear: floor and fraction of the padded
    coordinate; nearest: the padded coordinate rounded half to even; bicubic: floor and
    fraction of the unpadded one (its taps are padded one by one). chain = d coord / d v."""
    c, scale = _unnormalize(v, size, ALIGN)
    if MODE == 2:
        base = tl.floor(c)
        frac = c - base
        chain = tl.zeros_like(c) + scale
    else:
        c, der = _pad(c, size, PAD, ALIGN)
        chain = der * scale
        if MODE == 1:
            base = f_round(c)
            frac = tl.zeros_like(c)
        else:
            base = tl.floor(c)
            frac = c - base
    return base, frac, chain


@triton.jit
def _cubic(t, J: tl.constexpr):
    """Keys' weight of tap J (floor - 1 + J) at fraction t, and its t-derivative:
    c1(x) = ((A + 2) x - (A + 3)) x^2 + 1, c2(x) = ((A x - 5A) x + 8A) x - 4A;
    w = c2(t + 1), c1(t), c1(1 - t), c2(2 - t) for J = 0..3."""
    a = CUBIC_A
    if J == 0:
        x = t + 1
        w = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        dw = (3 * a * x - 10 * a) * x + 8 * a
    elif J == 1:
        w = ((a + 2) * t - (a + 3)) * t * t + 1
        dw = (3 * (a + 2) * t - 2 * (a + 3)) * t
    elif J == 2:
        x = 1 - t
        w = ((a + 2) * x - (a + 3)) * x * x + 1
        dw = -((3 * (a + 2) * x - 2 * (a + 3)) * x)
    else:
        x = 2 - t
        w = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        dw = -((3 * a * x - 10 * a) * x + 8 * a)
    return w, dw


@triton.jit
def _tap(base, frac, size, J: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr,
         ALIGN: tl.constexpr):
    """Tap J of one dim: (pixel as a float, weight, d weight / d coord)."""
    if MODE == 0:
        if J == 0:
            idx = base
            w = 1 - frac
            dw = tl.zeros_like(frac) - 1.0
        else:
            idx = base + 1
            w = frac
            dw = tl.zeros_like(frac) + 1.0
    elif MODE == 1:
        idx = base
        w = tl.zeros_like(frac) + 1.0
        dw = tl.zeros_like(frac)
    else:
        idx, _ = _pad(base + (J - 1), size, PAD, ALIGN)
        w, dw = _cubic(frac, J)
    return idx, w, dw


@triton.jit
def _tap_at(bz, fz, by, fy, bx, fx, Df, Hf, Wf, TZ: tl.constexpr, TY: tl.constexpr,
            TX: tl.constexpr, K: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr,
            ALIGN: tl.constexpr):
    """Tap (TZ, TY, TX) of the points: (inside, z, y, x pixels as int64 (0 outside),
    weight, d w / d cz, d w / d cy, d w / d cx)."""
    iy, wy, dwy = _tap(by, fy, Hf, TY, MODE, PAD, ALIGN)
    ix, wx, dwx = _tap(bx, fx, Wf, TX, MODE, PAD, ALIGN)
    inside = (iy >= 0) & (iy <= Hf - 1) & (ix >= 0) & (ix <= Wf - 1)
    if K == 3:
        iz, wz, dwz = _tap(bz, fz, Df, TZ, MODE, PAD, ALIGN)
        inside = inside & (iz >= 0) & (iz <= Df - 1)
        w = wz * wy * wx
        gz = dwz * wy * wx
        gy = wz * dwy * wx
        gx = wz * wy * dwx
        pz = tl.where(inside, iz, 0.0).to(tl.int64)
    else:
        w = wy * wx
        gz = tl.zeros_like(wx)
        gy = dwy * wx
        gx = wy * dwx
        pz = tl.zeros_like(bx).to(tl.int64)
    py = tl.where(inside, iy, 0.0).to(tl.int64)
    px = tl.where(inside, ix, 0.0).to(tl.int64)
    return inside, pz, py, px, w, gz, gy, gx


@triton.jit
def _points(GRID, pid, NP, P, K: tl.constexpr, D, H, W, MODE: tl.constexpr,
            PAD: tl.constexpr, ALIGN: tl.constexpr, ACC64: tl.constexpr,
            BLOCK_P: tl.constexpr):
    """The program's points: (mask, n, q, per dim (base, frac, chain) for z, y, x)."""
    pts = pid.to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    pmask = pts < NP
    n = pts // P
    q = pts % P
    gofs = pts * K
    Wf = to_acc(W, ACC64)
    Hf = to_acc(H, ACC64)
    Df = to_acc(D, ACC64)
    bx, fx, cx = _prep(load_acc(GRID + gofs, pmask, 0.0, ACC64), Wf, MODE, PAD, ALIGN)
    by, fy, cy = _prep(load_acc(GRID + gofs + 1, pmask, 0.0, ACC64), Hf, MODE, PAD, ALIGN)
    if K == 3:
        bz, fz, cz = _prep(load_acc(GRID + gofs + 2, pmask, 0.0, ACC64), Df, MODE, PAD,
                           ALIGN)
    else:
        bz = tl.zeros_like(bx)
        fz = tl.zeros_like(bx)
        cz = tl.zeros_like(bx)
    return pmask, n, q, bz, fz, cz, by, fy, cy, bx, fx, cx, Df, Hf, Wf


# Int arguments Triton does not specialize (on == 1 or divisibility by 16): the gathers
# gain nothing from it, and D, H, W must stay tensors (a constexpr 1 has no .to()); P is
# (the output stores run along the points).
_SIZES = ["NP", "C", "D", "H", "W", "SXN", "SXC", "SXD", "SXH", "SXW"]


@triton.jit(do_not_specialize=_SIZES)
def grid_sample_fwd_kernel(X, GRID, O, NP, P, C, D, H, W, SXN, SXC, SXD, SXH, SXW,
                           K: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr,
                           ALIGN: tl.constexpr, ACC64: tl.constexpr, NT: tl.constexpr,
                           NTZ: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """O[n, c, q] = sum_t where(inside_t, X[n, c, tap_t], 0) * w_t (module docstring);
    NT taps per dim (NTZ along z: 1 for 2-D)."""
    pmask, n, q, bz, fz, cz, by, fy, cy, bx, fx, cx, Df, Hf, Wf = _points(
        GRID, tl.program_id(0), NP, P, K, D, H, W, MODE, PAD, ALIGN, ACC64, BLOCK_P)
    xbase = n * SXN
    obase = n * C * P + q
    cols0 = tl.arange(0, BLOCK_C).to(tl.int64)
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + cols0
        cmask = pmask[:, None] & (cols < C)[None, :]
        if ACC64:
            acc = tl.zeros((BLOCK_P, BLOCK_C), tl.float64)
        else:
            acc = tl.zeros((BLOCK_P, BLOCK_C), tl.float32)
        for tz in tl.static_range(NTZ):
            for ty in tl.static_range(NT):
                for tx in tl.static_range(NT):
                    inside, pz, py, px, w, _, _, _ = _tap_at(
                        bz, fz, by, fy, bx, fx, Df, Hf, Wf, tz, ty, tx, K, MODE, PAD, ALIGN)
                    off = xbase + pz * SXD + py * SXH + px * SXW
                    v = load_acc(X + off[:, None] + cols[None, :] * SXC,
                                 cmask & inside[:, None], 0.0, ACC64)
                    if MODE == 1:
                        acc += v
                    else:
                        acc += v * w[:, None]
        tl.store(O + obase[:, None] + cols[None, :] * P, acc.to(O.dtype.element_ty),
                 mask=cmask)


@triton.jit(do_not_specialize=_SIZES)
def grid_sample_bwd_kernel(GO, X, GRID, DGRID, TGT, VAL, NP, P, C, D, H, W, SXN, SXC, SXD,
                           SXH, SXW, K: tl.constexpr, MODE: tl.constexpr, PAD: tl.constexpr,
                           ALIGN: tl.constexpr, ACC64: tl.constexpr, NT: tl.constexpr,
                           NTZ: tl.constexpr, T: tl.constexpr, BLOCK_P: tl.constexpr,
                           BLOCK_C: tl.constexpr):
    """GO (N, C, P) contiguous; writes DGRID (N, P, K), TGT (N, P, T) and VAL (N, P, T, C)
    (module docstring), T = NTZ NT NT."""
    pmask, n, q, bz, fz, cz, by, fy, cy, bx, fx, cx, Df, Hf, Wf = _points(
        GRID, tl.program_id(0), NP, P, K, D, H, W, MODE, PAD, ALIGN, ACC64, BLOCK_P)
    xbase = n * SXN
    gbase = n * C * P + q
    pts = n * P + q
    S = D.to(tl.int64) * H * W  # pixels per image
    dummy = NP // P * S  # N S: the dropped row of the taps outside the image
    cols0 = tl.arange(0, BLOCK_C).to(tl.int64)
    dcz = tl.zeros_like(cz)
    dcy = tl.zeros_like(cy)
    dcx = tl.zeros_like(cx)
    # taps outside, channel tiles inside: one tap's pixel and weights live at a time (the
    # other order kept all T of them in registers and spilled); g is re-read per tap, from
    # cache
    for tz in tl.static_range(NTZ):
        for ty in tl.static_range(NT):
            for tx in tl.static_range(NT):
                t = (tz * NT + ty) * NT + tx
                inside, pz, py, px, w, gwz, gwy, gwx = _tap_at(
                    bz, fz, by, fy, bx, fx, Df, Hf, Wf, tz, ty, tx, K, MODE, PAD, ALIGN)
                flat = n * S + (pz * H + py) * W + px
                tl.store(TGT + pts * T + t, tl.where(inside, flat, dummy), mask=pmask)
                off = xbase + pz * SXD + py * SXH + px * SXW
                gx = tl.zeros_like(cx)
                for c0 in range(0, C, BLOCK_C):
                    cols = c0 + cols0
                    cmask = pmask[:, None] & (cols < C)[None, :]
                    g = load_acc(GO + gbase[:, None] + cols[None, :] * P, cmask, 0.0, ACC64)
                    if MODE == 1:
                        val = g
                    else:
                        val = g * w[:, None]
                        v = load_acc(X + off[:, None] + cols[None, :] * SXC,
                                     cmask & inside[:, None], 0.0, ACC64)
                        gx += tl.sum(g * v, 1)
                    tl.store(VAL + (pts * T + t)[:, None] * C + cols[None, :],
                             val.to(VAL.dtype.element_ty), mask=cmask)
                if MODE != 1:
                    dcz += gx * gwz
                    dcy += gx * gwy
                    dcx += gx * gwx
    # a chain of 0 (an active clip) selects 0, as the composition's clamp backward does
    dgx = tl.where(cx == 0, 0.0, dcx * cx)
    dgy = tl.where(cy == 0, 0.0, dcy * cy)
    dgz = tl.where(cz == 0, 0.0, dcz * cz)
    if MODE == 1:  # nearest: zeros (rounding has no gradient)
        dgx = tl.zeros_like(dgx)
        dgy = tl.zeros_like(dgy)
        dgz = tl.zeros_like(dgz)
    dty = DGRID.dtype.element_ty
    tl.store(DGRID + pts * K, dgx.to(dty), mask=pmask)
    tl.store(DGRID + pts * K + 1, dgy.to(dty), mask=pmask)
    if K == 3:
        tl.store(DGRID + pts * K + 2, dgz.to(dty), mask=pmask)


def _taps(mode: int, k: int) -> tuple:
    """(NT taps per dim, NTZ taps along z)."""
    nt = (2, 1, 4)[mode]
    return nt, (nt if k == 3 else 1)


def launch_fwd(x, grid, out, geom: tuple, mode: int, pad: int, align: bool, acc64: bool,
               cfg: tuple) -> None:
    """geom = (N P, P, C, D, H, W, (SXN, SXC, SXD, SXH, SXW)); cfg = (BLOCK_P, BLOCK_C,
    num_warps) from configs.grid_sample_config."""
    from tgrad.kernels.launch import karg, launch, triton_cdiv
    np_, p, c, d, h, w, sx = geom
    k = grid.shape[-1]
    nt, ntz = _taps(mode, k)
    launch(grid_sample_fwd_kernel, (triton_cdiv(np_, cfg[0]),), karg(x), karg(grid),
           karg(out), np_, p, c, d, h, w, *sx, K=k, MODE=mode, PAD=pad, ALIGN=align,
           ACC64=acc64, NT=nt, NTZ=ntz, BLOCK_P=cfg[0], BLOCK_C=cfg[1], num_warps=cfg[2])


def launch_bwd(g, x, grid, dgrid, tgt, val, geom: tuple, mode: int, pad: int, align: bool,
               acc64: bool, cfg: tuple) -> None:
    from tgrad.kernels.launch import karg, launch, triton_cdiv
    np_, p, c, d, h, w, sx = geom
    k = grid.shape[-1]
    nt, ntz = _taps(mode, k)
    launch(grid_sample_bwd_kernel, (triton_cdiv(np_, cfg[0]),), karg(g), karg(x),
           karg(grid), karg(dgrid), karg(tgt), karg(val), np_, p, c, d, h, w, *sx, K=k,
           MODE=mode, PAD=pad, ALIGN=align, ACC64=acc64, NT=nt, NTZ=ntz, T=ntz * nt * nt,
           BLOCK_P=cfg[0], BLOCK_C=cfg[1], num_warps=cfg[2])


def tap_count(mode: int, k: int) -> int:
    nt, ntz = _taps(mode, k)
    return ntz * nt * nt


__all__ = ["grid_sample_fwd_kernel", "grid_sample_bwd_kernel", "launch_fwd", "launch_bwd",
           "tap_count", "triton"]
