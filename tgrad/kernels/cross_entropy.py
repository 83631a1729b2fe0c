# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""cross_entropy with class indices: a fused log-softmax + NLL forward and its fused
backward. Row layout as in tgrad/kernels/softmax.py (x rows of N classes read in place);
the per-row arrays (targets T, row weights RW, LOSS, LSE, W) are contiguous over the M rows;
LSE holds two of them: [0, M) the row max m_i, [M, 2M) log(sum_c e^(x_ic - m_i)).

Forward, per row i (never materialises the probabilities):
    lse_i = m_i + log(sum_c e^(x_ic - m_i))              (one pass, or online over tiles)
    loss_i = w_i ((m_i - x_i[t_i]) + log(sum_c e^(x_ic - m_i))),  w_i = rw_i (1 without
      class weights), 0 if ignored (PyTorch's log_softmax + nll order: m_i - x_i[t_i] is
      exact when they are close, so logits near 1e4 lose no digits to lse's rounding)
  bytes = M N itemsize (+ 8 M targets + 3 M 4-byte outputs); FLOPs ~ 3 M N.
  "sum"/"mean" then reduce loss (and w) with the deterministic reduction kernel.
  lse_i is kept as its head m_i and tail log_s_i (not rounded to one float: a float32 lse of
  logits ~1000 has ulp 6e-5, which e^(x - lse) turns into a relative error of that size).
Backward: dx_ic = c_i (e^((x_ic - m_i) - log_s_i) - [c == t_i]) (x - m exact where p matters),
    c_i = g_i w_i ("none"), g w_i ("sum"), g w_i / sum_j w_j ("mean"; / 1 when that is 0)
  bytes = M N (in + out itemsize); no reduction, so one streaming pass over column tiles.
"""

from __future__ import annotations

import triton
import triton.language as tl

from tgrad.kernels.softmax import (
    NEG_INF,
    load_acc,
    online_max_sum,
    row_max_logsum,
    row_offsets,
)


@triton.jit
def _row_weight(T, RW, rows, rmask, N, ignore_index, HAS_W: tl.constexpr, ACC64: tl.constexpr):
    t = tl.load(T + rows, mask=rmask, other=ignore_index)
    keep = rmask & (t != ignore_index) & (t >= 0) & (t < N)
    if HAS_W:
        w = load_acc(RW + rows, keep, 0.0, ACC64)
    else:
        w = load_acc(RW + rows, rmask & False, 0.0, ACC64) + 1.0
        w = tl.where(keep, w, 0.0)
    return t, keep, w


@triton.jit
def ce_fwd_kernel(X, T, RW, LOSS, LSE, WOUT, M, N, M0, SX1, SX0, SXN, ignore_index,
                  HAS_W: tl.constexpr, ACC64: tl.constexpr, ONE_PASS: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr = 1):
    # STAGES 1: program p does row block p (grid = row blocks). STAGES > 1: persistent
    # programs walk the row blocks p, p + P, ... (P = grid size) in a loop Triton
    # software-pipelines STAGES deep (the next block's loads by cp.async while this one
    # reduces: a one-row block is latency-bound otherwise).
    pid = tl.program_id(0)
    if STAGES == 1:
        _ce_fwd_rows(pid, X, T, RW, LOSS, LSE, WOUT, M, N, M0, SX1, SX0, SXN, ignore_index,
                     HAS_W, ACC64, ONE_PASS, BLOCK_M, BLOCK_N)
    else:
        for rb in tl.range(pid, tl.cdiv(M, BLOCK_M), tl.num_programs(0), num_stages=STAGES):
            _ce_fwd_rows(rb, X, T, RW, LOSS, LSE, WOUT, M, N, M0, SX1, SX0, SXN,
                         ignore_index, HAS_W, ACC64, ONE_PASS, BLOCK_M, BLOCK_N)


@triton.jit
def _ce_fwd_rows(rb, X, T, RW, LOSS, LSE, WOUT, M, N, M0, SX1, SX0, SXN, ignore_index,
                 HAS_W: tl.constexpr, ACC64: tl.constexpr, ONE_PASS: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row block rb: lse, loss and w of rows [rb * BLOCK_M, +BLOCK_M)."""
    rows = rb * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    xo1 = row_offsets(rows, M0, SX1, SX0)
    xo = xo1[:, None]
    # the target's logit first: its two dependent loads (t, then x[t]) then overlap the
    # row's load instead of following the row's reductions
    t, keep, w = _row_weight(T, RW, rows, rmask, N, ignore_index, HAS_W, ACC64)
    picked = load_acc(X + xo1 + tl.where(keep, t, 0).to(tl.int64) * SXN, keep, 0.0, ACC64)
    if ONE_PASS:
        cols = tl.arange(0, BLOCK_N).to(tl.int64)
        mask = rmask[:, None] & (cols < N)[None, :]
        m, log_s = row_max_logsum(
            load_acc(X + xo + cols[None, :] * SXN, mask, NEG_INF, ACC64), ACC64)
    else:
        m, s = online_max_sum(X, xo, rmask, N, SXN, ACC64, BLOCK_M, BLOCK_N)
        log_s = tl.log(s)
    loss = tl.where(keep, w * ((m - picked) + log_s), 0.0)  # m - x[t]: exact when close
    tl.store(LOSS + rows, loss.to(LOSS.dtype.element_ty), mask=rmask)
    tl.store(LSE + rows, m.to(LSE.dtype.element_ty), mask=rmask)  # lse = m + log_s
    tl.store(LSE + M + rows, log_s.to(LSE.dtype.element_ty), mask=rmask)
    tl.store(WOUT + rows, w.to(WOUT.dtype.element_ty), mask=rmask)


@triton.jit
def ce_weights_kernel(T, RW, WOUT, M, N, ignore_index, HAS_W: tl.constexpr,
                      ACC64: tl.constexpr, BLOCK: tl.constexpr):
    """w_i per row (for the "mean" normaliser of the backward)."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    rmask = rows < M
    t, keep, w = _row_weight(T, RW, rows, rmask, N, ignore_index, HAS_W, ACC64)
    tl.store(WOUT + rows, w.to(WOUT.dtype.element_ty), mask=rmask)


@triton.jit
def ce_bwd_kernel(G, X, T, RW, LSE, TOTAL, DX, M, N, M0, SX1, SX0, SXN, SD1, SD0, SDN,
                  ignore_index, G_PER_ROW: tl.constexpr, MEAN: tl.constexpr,
                  HAS_W: tl.constexpr, ACC64: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    xo = row_offsets(rows, M0, SX1, SX0)[:, None]
    do = row_offsets(rows, M0, SD1, SD0)[:, None]
    t, keep, w = _row_weight(T, RW, rows, rmask, N, ignore_index, HAS_W, ACC64)
    if G_PER_ROW:
        g = load_acc(G + rows, rmask, 0.0, ACC64)
    else:
        g = load_acc(G + rows * 0, rmask, 0.0, ACC64)
    c = g * w
    if MEAN:
        total = load_acc(TOTAL + rows * 0, rmask, 1.0, ACC64)
        c = c / total  # (a total of 0 divides too, as PyTorch's: ignored rows zeroed below)
    hi = load_acc(LSE + rows, rmask, 0.0, ACC64)  # lse = hi + lo: the row max, log(sum)
    lo = load_acc(LSE + M + rows, rmask, 0.0, ACC64)
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    for start in range(0, N, BLOCK_N):
        cols = start + cols0
        mask = rmask[:, None] & (cols < N)[None, :]
        x = load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64)
        p = tl.exp((x - hi[:, None]) - lo[:, None])
        onehot = cols[None, :] == t.to(tl.int64)[:, None]
        dx = c[:, None] * (p - tl.where(onehot, 1.0, 0.0))
        dx = tl.where(keep[:, None], dx, 0.0)
        tl.store(DX + do + cols[None, :] * SDN, dx.to(DX.dtype.element_ty), mask=mask)


__all__ = ["ce_fwd_kernel", "ce_bwd_kernel", "ce_weights_kernel", "triton"]
