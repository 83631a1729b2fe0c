# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""layer_norm forward (saves mean and rstd) and backward (dx in one kernel, dw/db by a
deterministic two-stage reduction: no atomics).

Row layout as in tgrad/kernels/softmax.py: M rows of N normalised elements read in place;
W, B (the affine parameters) are contiguous [N]; MEAN, RSTD are contiguous [M].

Forward, per row:  mean = sum(x)/N,  var = sum((x - mean)^2)/N  (two-pass, not E[x^2]-mean^2),
    rstd = 1/sqrt(var + eps),  y = (x - mean) rstd w + b
  bytes = M N (in + out itemsize) + 8 M (one pass); long rows re-read x twice more.
Backward:  xhat = (x - mean) rstd,  gw = g w,
    dx = rstd (gw - mean(gw) - xhat mean(gw xhat))                        (stage 0, per row)
    dw = sum_rows(g xhat),  db = sum_rows(g): stage 1: program p of P sums the row blocks
    p, p + P, ... into partial row p of DWP/DBP [P, N] (fixed order); stage 2
    (ln_dwdb_kernel, one launch for both) sums the P partial rows in order and stores dw, db
    in the parameters' dtype.
  bytes = M N (2 in + out itemsize) + 4 P N 4-byte partials (written, then read).
  STAGES (one-pass rows): Triton's software pipelining of the loop over row blocks (2: the
  next block's g and x are fetched by cp.async into shared memory while this block
  computes; 1: none, the same code as a plain range).
"""

from __future__ import annotations

import triton
import triton.language as tl

from tgrad.kernels.softmax import acc_full, load_acc, row_offsets, to_acc


@triton.jit
def ln_fwd_kernel(X, W, B, Y, MEAN, RSTD, M, N, M0, SX1, SX0, SXN, SY1, SY0, SYN,
                  eps: tl.float64,
                  HAS_W: tl.constexpr, HAS_B: tl.constexpr, ACC64: tl.constexpr,
                  ONE_PASS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    if not ACC64:  # eps: a float64 argument
        eps = tl.cast(eps, tl.float32)
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    xo = row_offsets(rows, M0, SX1, SX0)[:, None]
    yo = row_offsets(rows, M0, SY1, SY0)[:, None]
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    if ONE_PASS:
        cmask = cols0 < N
        mask = rmask[:, None] & cmask[None, :]
        x = load_acc(X + xo + cols0[None, :] * SXN, mask, 0.0, ACC64)
        mean = tl.sum(x, 1) / N
        d = tl.where(mask, x - mean[:, None], 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, 1) / N + eps)
        y = d * rstd[:, None]
        if HAS_W:
            y = y * load_acc(W + cols0, cmask, 0.0, ACC64)[None, :]
        if HAS_B:
            y = y + load_acc(B + cols0, cmask, 0.0, ACC64)[None, :]
        tl.store(Y + yo + cols0[None, :] * SYN, y.to(Y.dtype.element_ty), mask=mask)
    else:
        acc = acc_full(BLOCK_M, 0.0, ACC64)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            mask = rmask[:, None] & (cols < N)[None, :]
            acc += tl.sum(load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64), 1)
        mean = acc / N
        acc = acc_full(BLOCK_M, 0.0, ACC64)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            mask = rmask[:, None] & (cols < N)[None, :]
            x = load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64)
            d = tl.where(mask, x - mean[:, None], 0.0)
            acc += tl.sum(d * d, 1)
        rstd = 1.0 / tl.sqrt(acc / N + eps)
        for start in range(0, N, BLOCK_N):
            cols = start + cols0
            cmask = cols < N
            mask = rmask[:, None] & cmask[None, :]
            x = load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64)
            y = (x - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * load_acc(W + cols, cmask, 0.0, ACC64)[None, :]
            if HAS_B:
                y = y + load_acc(B + cols, cmask, 0.0, ACC64)[None, :]
            tl.store(Y + yo + cols[None, :] * SYN, y.to(Y.dtype.element_ty), mask=mask)
    tl.store(MEAN + rows, mean.to(MEAN.dtype.element_ty), mask=rmask)
    tl.store(RSTD + rows, rstd.to(RSTD.dtype.element_ty), mask=rmask)


@triton.jit
def ln_bwd_kernel(G, X, W, MEAN, RSTD, DX, DWP, DBP, M, N, M0, SG1, SG0, SGN, SX1, SX0, SXN,
                  SD1, SD0, SDN, n_blocks, n_progs,
                  HAS_W: tl.constexpr, NEED_W: tl.constexpr, NEED_B: tl.constexpr,
                  ACC64: tl.constexpr, ONE_PASS: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, STAGES: tl.constexpr = 1,
                  EVEN: tl.constexpr = False):
    # EVEN (one-pass only): N == BLOCK_N and BLOCK_M divides M, so no lane is masked
    pid = tl.program_id(0)
    cols0 = tl.arange(0, BLOCK_N).to(tl.int64)
    part = pid.to(tl.int64) * N  # this program's partial row of DWP / DBP
    if ONE_PASS:
        cmask = cols0 < N
        if HAS_W:
            w = load_acc(W + cols0, cmask, 0.0, ACC64)
        dw = acc_full(BLOCK_N, 0.0, ACC64)  # this program's partial sums over its rows
        db = acc_full(BLOCK_N, 0.0, ACC64)
        for rb in tl.range(pid, n_blocks, n_progs, num_stages=STAGES):
            rows = rb * BLOCK_M + tl.arange(0, BLOCK_M)
            rmask = rows < M
            mask = rmask[:, None] & cmask[None, :]
            go = row_offsets(rows, M0, SG1, SG0)[:, None]
            xo = row_offsets(rows, M0, SX1, SX0)[:, None]
            do = row_offsets(rows, M0, SD1, SD0)[:, None]
            if EVEN:  # every row block full, N == BLOCK_N: no masks, no selects
                g = to_acc(tl.load(G + go + cols0[None, :] * SGN), ACC64)
                x = to_acc(tl.load(X + xo + cols0[None, :] * SXN), ACC64)
                mean = tl.load(MEAN + rows)
                rstd = tl.load(RSTD + rows)
                xhat = (x - mean[:, None]) * rstd[:, None]
            else:
                g = load_acc(G + go + cols0[None, :] * SGN, mask, 0.0, ACC64)
                x = load_acc(X + xo + cols0[None, :] * SXN, mask, 0.0, ACC64)
                mean = load_acc(MEAN + rows, rmask, 0.0, ACC64)
                rstd = load_acc(RSTD + rows, rmask, 0.0, ACC64)
                xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
            if HAS_W:
                gw = g * w[None, :]
            else:
                gw = g
            c1 = tl.sum(gw * xhat, 1) / N
            c2 = tl.sum(gw, 1) / N
            dx = rstd[:, None] * (gw - c2[:, None] - xhat * c1[:, None])
            if EVEN:
                tl.store(DX + do + cols0[None, :] * SDN, dx.to(DX.dtype.element_ty))
            else:
                tl.store(DX + do + cols0[None, :] * SDN, dx.to(DX.dtype.element_ty), mask=mask)
            if NEED_W:
                dw += tl.sum(g * xhat, 0)
            if NEED_B:
                db += tl.sum(g, 0)
        if NEED_W:
            tl.store(DWP + part + cols0, dw, mask=cmask)
        if NEED_B:
            tl.store(DBP + part + cols0, db, mask=cmask)
    else:
        # DWP / DBP rows start zeroed (the wrapper fills them); each program owns its row.
        for rb in range(pid, n_blocks, n_progs):
            rows = rb * BLOCK_M + tl.arange(0, BLOCK_M)
            rmask = rows < M
            go = row_offsets(rows, M0, SG1, SG0)[:, None]
            xo = row_offsets(rows, M0, SX1, SX0)[:, None]
            do = row_offsets(rows, M0, SD1, SD0)[:, None]
            mean = load_acc(MEAN + rows, rmask, 0.0, ACC64)
            rstd = load_acc(RSTD + rows, rmask, 0.0, ACC64)
            c1 = acc_full(BLOCK_M, 0.0, ACC64)
            c2 = acc_full(BLOCK_M, 0.0, ACC64)
            for start in range(0, N, BLOCK_N):
                cols = start + cols0
                cmask = cols < N
                mask = rmask[:, None] & cmask[None, :]
                g = load_acc(G + go + cols[None, :] * SGN, mask, 0.0, ACC64)
                x = load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64)
                xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
                if HAS_W:
                    g = g * load_acc(W + cols, cmask, 0.0, ACC64)[None, :]
                c1 += tl.sum(g * xhat, 1)
                c2 += tl.sum(g, 1)
            c1 = c1 / N
            c2 = c2 / N
            for start in range(0, N, BLOCK_N):
                cols = start + cols0
                cmask = cols < N
                mask = rmask[:, None] & cmask[None, :]
                g = load_acc(G + go + cols[None, :] * SGN, mask, 0.0, ACC64)
                x = load_acc(X + xo + cols[None, :] * SXN, mask, 0.0, ACC64)
                xhat = tl.where(mask, (x - mean[:, None]) * rstd[:, None], 0.0)
                if HAS_W:
                    gw = g * load_acc(W + cols, cmask, 0.0, ACC64)[None, :]
                else:
                    gw = g
                dx = rstd[:, None] * (gw - c2[:, None] - xhat * c1[:, None])
                tl.store(DX + do + cols[None, :] * SDN, dx.to(DX.dtype.element_ty), mask=mask)
                if NEED_W:
                    p = tl.load(DWP + part + cols, mask=cmask, other=0.0)
                    tl.store(DWP + part + cols, p + tl.sum(g * xhat, 0), mask=cmask)
                if NEED_B:
                    p = tl.load(DBP + part + cols, mask=cmask, other=0.0)
                    tl.store(DBP + part + cols, p + tl.sum(g, 0), mask=cmask)


@triton.jit
def ln_dwdb_kernel(DWP, DBP, DW, DB, P, N, NEED_W: tl.constexpr, NEED_B: tl.constexpr,
                   ACC64: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr):
    """Stage 2: DW[j] = sum_p DWP[p, j], DB[j] = sum_p DBP[p, j] (partials [P, N]
    contiguous, in the compute dtype; p in a fixed order), stored in DW's / DB's dtype.
    One program per BLOCK_N columns."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    parts0 = tl.arange(0, BLOCK_P)
    dw = acc_full(BLOCK_N, 0.0, ACC64)
    db = acc_full(BLOCK_N, 0.0, ACC64)
    for p0 in range(0, P, BLOCK_P):
        parts = p0 + parts0
        mask = (parts < P)[:, None] & cmask[None, :]
        offs = parts.to(tl.int64)[:, None] * N + cols[None, :]
        if NEED_W:
            dw += tl.sum(tl.load(DWP + offs, mask=mask, other=0.0), 0)
        if NEED_B:
            db += tl.sum(tl.load(DBP + offs, mask=mask, other=0.0), 0)
    if NEED_W:
        tl.store(DW + cols, dw.to(DW.dtype.element_ty), mask=cmask)
    if NEED_B:
        tl.store(DB + cols, db.to(DB.dtype.element_ty), mask=cmask)


__all__ = ["ln_fwd_kernel", "ln_bwd_kernel", "ln_dwdb_kernel", "triton"]
