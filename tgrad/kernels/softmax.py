# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""softmax / log_softmax forward and their fused backward kernels, plus the row helpers the
other row kernels (cross_entropy, layer_norm) share.

Shape contract of every row kernel: the reduced axis has N elements at element stride SxN;
the M rows are indexed r -> (r // M0) * Sx1 + (r % M0) * Sx0 (the leading dims of a view
collapsed to at most two), so any permuted / sliced layout is read in place.
float16/bfloat16 are computed in float32, float64 in float64 (ACC64).

ONE_PASS: a row fits in one [BLOCK_M, BLOCK_N] register tile: read x once, write y once.
  bytes = M N (in + out itemsize)  (the minimum), FLOPs ~ 4 M N.
Online (rows longer than the tile): pass 1 streams the row keeping a running max m and a
running sum s (s <- s e^(m_old - m_new) + sum e^(x - m_new)); pass 2 re-reads x and writes y.
  bytes = M N (2 in + out itemsize).

Backward (one kernel each):
  softmax:      dx = y (g - sum(g y))          log_softmax:  dx = g - e^y sum(g)
  bytes (one pass) = M N (2 in + out), online adds one more read of g and y.
"""

from __future__ import annotations

import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))
LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)
# Compiled kernels take 2^x from one ex2.approx.ftz instruction (exp2_ftz); the interpreter
# has no inline PTX, and decides at decoration time, as this does.
EXP2_FTZ = tl.constexpr(not triton.knobs.runtime.interpret)


@triton.jit
def row_offsets(rows, M0, S1, S0):
    """Element offsets (int64) of the first element of each row."""
    r = rows.to(tl.int64)
    return (r // M0) * S1 + (r % M0) * S0


@triton.jit
def to_acc(v, ACC64: tl.constexpr):
    """``v`` widened to the compute dtype (float64 for float64, else float32)."""
    if ACC64:
        r = v.to(tl.float64)
    else:
        r = v.to(tl.float32)
    return r


@triton.jit
def load_acc(ptr, mask, other, ACC64: tl.constexpr):
    """Load and widen to the compute dtype (float64 for float64, else float32)."""
    return to_acc(tl.load(ptr, mask=mask, other=other), ACC64)


@triton.jit
def exp2_ftz(x):
    """2^x of float32 x, a result below 2^-126 flushed to +0: one MUFU.EX2. Triton's exp and
    exp2 keep subnormal results (a compare and two multiplies more per element); for a sum
    of exponentials whose largest term is 1 the flushed terms are below its rounding."""
    if EXP2_FTZ:
        y = tl.inline_asm_elementwise("ex2.approx.ftz.f32 $0, $1;", "=f,f", [x],
                                      dtype=tl.float32, is_pure=True, pack=1)
    else:
        y = tl.math.exp2(x)
    return y


@triton.jit
def row_max_logsum(x, ACC64: tl.constexpr):
    """(m, log_s) per row of a [BLOCK_M, BLOCK_N] tile in the compute dtype with -inf in
    masked lanes: m = max(x), log_s = log(sum(exp(x - m))), so logsumexp = m + log_s (a row
    of -inf: m = log_s = -inf; a +inf or NaN: NaN).
    float32, one FMA and one ex2 per element: with ms = fl(m log2 e) (m = 0 for a row of
    -inf) and d = m log2 e - ms (exact, by an FMA), every exponent x log2 e - ms is
    (x - m) log2 e + d, so
        log_s = (log2(sum 2^fma(x, log2 e, -ms)) - d) ln 2
    loses nothing to ms's rounding (logits near 1e4 keep float32's accuracy of x - m).
    float64: the direct formula."""
    m = tl.max(x, 1)
    if ACC64:
        log_s = tl.log(tl.sum(tl.where(x == NEG_INF, 0.0, tl.exp(x - m[:, None])), 1))
    else:
        m0 = tl.where(m == NEG_INF, 0.0, m)
        ms = m0 * LOG2E
        d = tl.fma(m0, LOG2E, -ms)
        log_s = (tl.log2(tl.sum(exp2_ftz(tl.fma(x, LOG2E, -ms[:, None])), 1)) - d) * LN2
    return m, log_s


@triton.jit
def acc_full(BLOCK_M: tl.constexpr, value, ACC64: tl.constexpr):
    """A [BLOCK_M] vector of ``value`` in the compute dtype."""
    if ACC64:
        r = tl.full([BLOCK_M], value, tl.float64)
    else:
        r = tl.full([BLOCK_M], value, tl.float32)
    return r


@triton.jit
def online_max_sum(X, xo, rmask, N, SXN, ACC64: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    """(m, s) per row: m = max(x), s = sum(exp(x - m)), streaming BLOCK_N columns a step."""
    m = acc_full(BLOCK_M, NEG_INF, ACC64)
    s = acc_full(BLOCK_M, 0.0, ACC64)
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = rmask[:, None] & (cols < N)[None, :]
        x = load_acc(X + xo + cols[None, :] * SXN, mask, NEG_INF, ACC64)
        mn = tl.maximum(m, tl.max(x, 1))
        # m == mn covers -inf == -inf (no NaN from -inf - -inf while a row is all -inf)
        alpha = tl.where(m == mn, 1.0, tl.exp(m - mn))
        p = tl.where(x == NEG_INF, 0.0, tl.exp(x - mn[:, None]))
        s = s * alpha + tl.sum(p, 1)
        m = mn
    return m, s


@triton.jit
def softmax_fwd_kernel(X, Y, M, N, M0, SX1, SX0, SXN, SY1, SY0, SYN,
                       LOG: tl.constexpr, ACC64: tl.constexpr, ONE_PASS: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    xo = row_offsets(rows, M0, SX1, SX0)[:, None]
    yo = row_offsets(rows, M0, SY1, SY0)[:, None]
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    if ONE_PASS:
        mask = rmask[:, None] & (cols0 < N)[None, :]
        x = load_acc(X + xo + cols0[None, :] * SXN, mask, NEG_INF, ACC64)
        if LOG:  # only the sum of exponentials: row_max_logsum's one FMA + ex2 each
            m, log_s = row_max_logsum(x, ACC64)
            y = (x - m[:, None]) - log_s[:, None]
        elif ACC64:
            m = tl.max(x, 1)
            e = tl.where(x == NEG_INF, 0.0, tl.exp(x - m[:, None]))
            y = e / tl.sum(e, 1)[:, None]
        else:  # e = 2^((x - m) log2 e + d) (row_max_logsum): the common 2^d cancels in e / s
            m = tl.max(x, 1)
            ms = tl.where(m == NEG_INF, 0.0, m) * LOG2E
            e = tl.math.exp2(tl.fma(x, LOG2E, -ms[:, None]))  # keeps subnormal results
            y = e * (1.0 / tl.sum(e, 1))[:, None]
        tl.store(Y + yo + cols0[None, :] * SYN, y.to(Y.dtype.element_ty), mask=mask)
    else:
        m, s = online_max_sum(X, xo, rmask, N, SXN, ACC64, BLOCK_M, BLOCK_N)
        logs = tl.log(s)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            mask = rmask[:, None] & (cols < N)[None, :]
            x = load_acc(X + xo + cols[None, :] * SXN, mask, NEG_INF, ACC64)
            z = x - m[:, None]
            if LOG:
                y = z - logs[:, None]
            else:
                y = tl.where(x == NEG_INF, 0.0, tl.exp(z)) / s[:, None]
            tl.store(Y + yo + cols[None, :] * SYN, y.to(Y.dtype.element_ty), mask=mask)


@triton.jit
def softmax_bwd_kernel(G, Y, DX, M, N, M0, SG1, SG0, SGN, SY1, SY0, SYN, SD1, SD0, SDN,
                       LOG: tl.constexpr, ACC64: tl.constexpr, ONE_PASS: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # softmax:     dx = y (g - c),  c = sum_j g_j y_j
    # log_softmax: dx = g - e^y c,  c = sum_j g_j
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    go = row_offsets(rows, M0, SG1, SG0)[:, None]
    yo = row_offsets(rows, M0, SY1, SY0)[:, None]
    do = row_offsets(rows, M0, SD1, SD0)[:, None]
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    if ONE_PASS:
        mask = rmask[:, None] & (cols0 < N)[None, :]
        g = load_acc(G + go + cols0[None, :] * SGN, mask, 0.0, ACC64)
        if LOG:
            y = load_acc(Y + yo + cols0[None, :] * SYN, mask, NEG_INF, ACC64)
            c = tl.sum(g, 1)
            dx = g - tl.exp(y) * c[:, None]
        else:
            y = load_acc(Y + yo + cols0[None, :] * SYN, mask, 0.0, ACC64)
            c = tl.sum(g * y, 1)
            dx = y * (g - c[:, None])
        tl.store(DX + do + cols0[None, :] * SDN, dx.to(DX.dtype.element_ty), mask=mask)
    else:
        c = acc_full(BLOCK_M, 0.0, ACC64)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            mask = rmask[:, None] & (cols < N)[None, :]
            g = load_acc(G + go + cols[None, :] * SGN, mask, 0.0, ACC64)
            if LOG:
                c += tl.sum(g, 1)
            else:
                y = load_acc(Y + yo + cols[None, :] * SYN, mask, 0.0, ACC64)
                c += tl.sum(g * y, 1)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            mask = rmask[:, None] & (cols < N)[None, :]
            g = load_acc(G + go + cols[None, :] * SGN, mask, 0.0, ACC64)
            if LOG:
                y = load_acc(Y + yo + cols[None, :] * SYN, mask, NEG_INF, ACC64)
                dx = g - tl.exp(y) * c[:, None]
            else:
                y = load_acc(Y + yo + cols[None, :] * SYN, mask, 0.0, ACC64)
                dx = y * (g - c[:, None])
            tl.store(DX + do + cols[None, :] * SDN, dx.to(DX.dtype.element_ty), mask=mask)


def launch_fwd(x, y, rows, cfg, log: bool, acc64: bool) -> None:
    """rows: (M, N, M0, [(S1, S0, SN) for x, y]) from tgrad.backends._triton_nn._rows."""
    from tgrad.kernels.launch import karg, launch, triton_cdiv
    m, n, m0, (sx, sy) = rows
    launch(softmax_fwd_kernel, (triton_cdiv(m, cfg.block_m),),
           karg(x), karg(y), m, n, m0, *sx, *sy, LOG=log, ACC64=acc64, ONE_PASS=cfg.one_pass,
           BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, num_warps=cfg.num_warps)


def launch_bwd(g, y, dx, rows, cfg, log: bool, acc64: bool) -> None:
    from tgrad.kernels.launch import karg, launch, triton_cdiv
    m, n, m0, (sg, sy, sd) = rows
    launch(softmax_bwd_kernel, (triton_cdiv(m, cfg.block_m),),
           karg(g), karg(y), karg(dx), m, n, m0, *sg, *sy, *sd, LOG=log, ACC64=acc64,
           ONE_PASS=cfg.one_pass, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
           num_warps=cfg.num_warps)


__all__ = ["softmax_fwd_kernel", "softmax_bwd_kernel", "row_offsets", "load_acc",
           "online_max_sum", "acc_full", "launch_fwd", "launch_bwd", "triton"]
