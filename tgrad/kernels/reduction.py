# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Reductions over an (M, K) strided view: every output row m reduces K elements
X[m * SM + k * SK]. Kept dims are permuted to the front and reduced dims to the back above
this kernel (a copy only when the reduced or the kept dims cannot be merged into one
stride each).

Each program owns BLOCK_M rows and walks K in BLOCK_K steps, accumulating a
[BLOCK_M, BLOCK_K] tile in float32 (float64 for float64 inputs) and reducing the tile once
at the end: a fixed order, so results are deterministic (no atomics). Bytes moved: M*K
input elements read once (twice for var and logsumexp), M outputs written.
NaN handling follows NumPy: sum/prod/mean/var/logsumexp propagate through arithmetic;
amax/amin/argmax/argmin make NaN win explicitly (the hardware max ignores NaN).
"""

from __future__ import annotations

import math

import numpy as np
import triton
import triton.language as tl

from tgrad.cuda import is_interpreted
from tgrad.cuda.array import DeviceArray, contiguous_strides
from tgrad.kernels import configs
from tgrad.kernels.launch import _I32, karg, launch, triton_cdiv

OPS = {"sum": 0, "mean": 1, "prod": 2, "amax": 3, "amin": 4, "argmax": 5, "argmin": 6,
       "var": 7, "logsumexp": 8, "all": 9, "any": 10}


@triton.jit
def red_kernel(X, Y, M, K, SM, SK, correction,
               OP: tl.constexpr, ACC: tl.constexpr, IDX64: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    if IDX64:
        rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    else:
        rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    base = rows[:, None] * SM
    zero = tl.zeros([BLOCK_M, BLOCK_K], dtype=ACC)
    lanes = tl.arange(0, BLOCK_K)
    if OP == 0 or OP == 1 or OP == 7:
        # sum / mean / var (first pass: the mean)
        acc = zero
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            acc += tl.where(m, x, 0.0)
        res = tl.sum(acc, axis=1)
        if OP == 1 or OP == 7:
            res = res / K
        if OP == 7:
            # var = sum (x - mean)^2 / (K - correction), a second pass (exact, two-pass)
            mu = res[:, None]
            acc = zero
            for k0 in range(0, K, BLOCK_K):
                cols = k0 + lanes
                m = rmask[:, None] & (cols < K)[None, :]
                x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
                d = tl.where(m, x - mu, 0.0)
                acc += d * d
            res = tl.sum(acc, axis=1) / (K - correction)
        tl.store(Y + rows, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 2:
        acc = zero + 1.0
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=1).to(ACC)
            acc *= tl.where(m, x, 1.0)
        res = tl.reduce(acc, 1, _mul_combine)
        tl.store(Y + rows, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 3 or OP == 4:
        # amax / amin: NaN wins; track NaNs apart from the hardware max/min.
        acc = zero + (-float("inf") if OP == 3 else float("inf"))
        nan = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            isnan = m & (x != x)
            nan = nan | isnan.to(tl.int32)
            if OP == 3:
                acc = tl.where(m & (x > acc), x, acc)
            else:
                acc = tl.where(m & (x < acc), x, acc)
        if OP == 3:
            res = tl.max(acc, axis=1)
        else:
            res = tl.min(acc, axis=1)
        res = tl.where(tl.max(nan, axis=1) > 0, float("nan"), res)
        tl.store(Y + rows, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 5 or OP == 6:
        # argmax / argmin: first index of the extreme value; NaN counts as the extreme.
        best = zero + (-float("inf") if OP == 5 else float("inf"))
        bidx = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int64) + K
        bnan = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            xnan = m & (x != x)
            if OP == 5:
                better = m & (x > best)
            else:
                better = m & (x < best)
            # first valid element always counts (covers rows of all +-inf)
            first = m & (bidx == K)
            take = (bnan == 0) & (xnan | better | first)
            best = tl.where(take, x, best)
            bidx = tl.where(take, cols[None, :].to(tl.int64) + bidx * 0, bidx)
            bnan = bnan | (take & xnan).to(tl.int32)
        row_nan = tl.max(bnan, axis=1)
        if OP == 5:
            ext = tl.max(tl.where(bidx < K, best, -float("inf")), axis=1)
        else:
            ext = tl.min(tl.where(bidx < K, best, float("inf")), axis=1)
        hit = tl.where(row_nan[:, None] > 0, bnan > 0, (best == ext[:, None]) & (bidx < K))
        res = tl.min(tl.where(hit, bidx, K), axis=1)
        tl.store(Y + rows, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 8:
        # logsumexp: m = max (0 when infinite), then log(sum exp(x - m)) + m
        acc = zero - float("inf")
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            acc = tl.where(m & (x > acc), x, acc)
        mx = tl.max(acc, axis=1)
        mx = tl.where((mx == float("inf")) | (mx == -float("inf")), 0.0, mx)
        acc = zero
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            acc += tl.where(m, tl.exp(x - mx[:, None]), 0.0)
        res = tl.log(tl.sum(acc, axis=1)) + mx
        tl.store(Y + rows, res.to(Y.dtype.element_ty), mask=rmask)
    else:
        # all / any over x != 0
        acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32) + (1 if OP == 9 else 0)
        for k0 in range(0, K, BLOCK_K):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0)
            nz = (x != 0).to(tl.int32)
            if OP == 9:
                acc = tl.where(m, acc & nz, acc)
            else:
                acc = tl.where(m, acc | nz, acc)
        if OP == 9:
            res = tl.min(acc, axis=1)
        else:
            res = tl.max(acc, axis=1)
        tl.store(Y + rows, (res != 0).to(Y.dtype.element_ty), mask=rmask)


@triton.jit
def _mul_combine(a, b):
    return a * b


def _out_dtype(kind: str, dt: np.dtype) -> np.dtype:
    if kind in ("argmax", "argmin"):
        return np.dtype(np.int64)
    if kind in ("all", "any"):
        return np.dtype(np.bool_)
    return dt


def reduce(kind: str, x: DeviceArray, axes, keepdim: bool, correction: float = 0.0):
    """Reduce ``x`` over ``axes`` (None: all; an int for arg-reductions) with ``kind``."""
    from tgrad.backends import triton as be
    if x.size == 0 or x.dtype.kind == "c":
        prim = {"sum": "sum_", "all": "all_", "any": "any_"}.get(kind, kind)
        extra = (correction, keepdim) if kind == "var" else (keepdim,)
        return be._host_path(prim, None, x, axes, *extra)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes % max(x.ndim, 1),)
    axes = tuple(sorted(a % max(x.ndim, 1) for a in axes)) if x.ndim else ()
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    out_shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)) if keepdim \
        else tuple(x.shape[d] for d in kept)
    m = math.prod(x.shape[d] for d in kept)
    k = math.prod(x.shape[d] for d in axes)
    v = be.permute(x, kept + axes)
    v2 = be.reshape_view(v, (m, k))
    if v2 is None:
        v2 = be.reshape_view(be.clone(v), (m, k))
    sm, sk = v2.estrides
    out = DeviceArray.empty((m,), _out_dtype(kind, x.dtype), x.device)
    m_contig = sm == 1 and sk != 1 and m > 1
    cfg = configs.red_config(k, m_contig, is_interpreted())
    idx64 = (m - 1) * abs(sm) + (k - 1) * abs(sk) > _I32 or m * k > _I32
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        launch(red_kernel, (triton_cdiv(m, cfg.block_m),),
               karg(v2), karg(out), m, k, sm, sk, float(correction),
               OP=OPS[kind], ACC=tl.float64 if x.dtype == np.float64 else tl.float32,
               IDX64=idx64,
               BLOCK_M=cfg.block_m, BLOCK_K=cfg.block_k, num_warps=cfg.num_warps)
    return out.view(out_shape, contiguous_strides(out_shape))
