# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Reductions over an (M, K) strided view: every output row m reduces K elements
X[m * SM + k * SK]. Kept dims are permuted to the front and reduced dims to the back above
this kernel (a copy only when the reduced or the kept dims cannot be merged into one
stride each).

Each program owns BLOCK_M rows and walks its chunk of K (all of K, or KC elements when the
reduction is split) in BLOCK_K steps (software-pipelined STAGES deep when STAGES > 1),
accumulating a [BLOCK_M, BLOCK_K] tile in float32 (float64 for float64 inputs) and
reducing the tile once at the end (var and logsumexp merge per tile): a fixed order, so
results are deterministic (no atomics). Y[m * NS + chunk] receives the result (NS chunks
per row). Split reductions (few rows, long K: a full reduction) run twice: the partial
results of every chunk, in the accumulator dtype, then the same kernel over them
(sum -> sum, mean -> sum / D, prod, amax, amin, all, any). Bytes moved: M*K input elements
read once (var and logsumexp too: merged per tile), M outputs written.
NaN handling follows NumPy: sum/prod/mean/var/logsumexp propagate through arithmetic;
float amax/amin use max.NaN/min.NaN (tl.PropagateNan.ALL; the plain hardware max ignores
NaN); argmax/argmin make NaN win explicitly.
Masked lanes (past K, past M) load the reduction's identity (0 for sums, 1 for prod,
-inf/+inf for float amax/amin and logsumexp, the shift for var), so the loop selects
nothing per element (perf/results/sass_counts/).
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
from tgrad.kernels.softmax import LN2, LOG2E, exp2_ftz

OPS = {"sum": 0, "mean": 1, "prod": 2, "amax": 3, "amin": 4, "argmax": 5, "argmin": 6,
       "var": 7, "logsumexp": 8, "all": 9, "any": 10}


@triton.jit
def red_kernel(X, Y, M, K, SM, SK, correction, KC, NS, D,
               OP: tl.constexpr, ACC: tl.constexpr, IDX64: tl.constexpr,
               BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, STAGES: tl.constexpr = 1):
    # Shape contract: X is (M, K) with element strides (SM, SK); this program reduces rows
    # [pid * BLOCK_M, +BLOCK_M) over k in [chunk * KC, min(K, (chunk + 1) * KC)) and writes
    # Y[row * NS + chunk]. D is mean's divisor (the whole K when the partials are reduced).
    pid = tl.program_id(0)
    chunk = tl.program_id(1)
    if IDX64:
        rows = pid.to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M).to(tl.int64)
    else:
        rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    rmask = rows < M
    if ACC == tl.int64:  # integer and bool inputs: exact int64 accumulation, int sentinels
        LOWEST = -9223372036854775807 - 1
        HIGHEST = 9223372036854775807
    else:
        LOWEST = -float("inf")
        HIGHEST = float("inf")
    if IDX64:
        k_lo = chunk.to(tl.int64) * KC  # the last chunks of a > 2^31 reduction start past it
    else:
        k_lo = chunk * KC
    K = tl.minimum(K, k_lo + KC)  # this chunk's end
    base = rows[:, None] * SM
    zero = tl.zeros([BLOCK_M, BLOCK_K], dtype=ACC)
    lanes = tl.arange(0, BLOCK_K)
    if OP == 0 or OP == 1:
        # sum / mean
        acc = zero
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            acc += tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
        res = tl.sum(acc, axis=1)
        if OP == 1:
            res = res / D
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 7:
        # var in one read (Chan et al.'s pairwise update): each tile's mean and sum of
        # squared deviations M2 come from the tile in registers (two passes over registers),
        # then merge into the running (n, mean, M2):
        #   delta = mean_t - mean;  mean += delta n_t / (n + n_t)
        #   M2 += M2_t + delta^2 n n_t / (n + n_t)
        # var = M2 / (K - correction). The first tile is taken as is (n = 0: no delta term,
        # which would be inf * 0 for a huge delta). The data are shifted by the row's first
        # element (var is shift-invariant): means then stay near zero, where their rounding
        # is small against the spread (rows of 1e4 + N(0, 1) in float32 were 2e-5 off
        # unshifted; an inf or NaN shift makes the row NaN, as it should).
        shift = tl.load(X + base + k_lo * SK, mask=rmask[:, None], other=0).to(ACC)
        n = tl.zeros([BLOCK_M], dtype=ACC)
        mean = tl.zeros([BLOCK_M], dtype=ACC)
        m2 = tl.zeros([BLOCK_M], dtype=ACC)
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            # masked lanes load the shift itself: x = 0 there, nothing to add
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=shift).to(ACC) - shift
            nt = tl.minimum(K - k0, BLOCK_K).to(ACC)  # this tile's valid columns
            mean_t = tl.sum(x, axis=1) / nt
            d = tl.where(m, x - mean_t[:, None], 0.0)
            m2_t = tl.sum(d * d, axis=1)
            total = n + nt
            delta = mean_t - mean
            first = n == 0
            mean = tl.where(first, mean_t, mean + delta * (nt / total))
            m2 = tl.where(first, m2_t, m2 + m2_t + delta * delta * (n * nt / total))
            n = total
        res = m2 / (K - correction)
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 2:
        acc = zero + 1
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            acc *= tl.load(X + base + cols[None, :] * SK, mask=m, other=1).to(ACC)
        res = tl.reduce(acc, 1, _mul_combine)
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif (OP == 3 or OP == 4) and ACC != tl.int64:
        # float amax / amin: NaN wins, as max.NaN / min.NaN do (one instruction an element;
        # masked lanes load -inf / +inf, which never win)
        acc = zero + (LOWEST if OP == 3 else HIGHEST)
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m,
                        other=LOWEST if OP == 3 else HIGHEST).to(ACC)
            if OP == 3:
                acc = tl.maximum(acc, x, propagate_nan=tl.PropagateNan.ALL)
            else:
                acc = tl.minimum(acc, x, propagate_nan=tl.PropagateNan.ALL)
        if OP == 3:
            res = tl.reduce(acc, 1, _max_nan_combine)
        else:
            res = tl.reduce(acc, 1, _min_nan_combine)
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 3 or OP == 4:
        # integer / bool amax / amin (int64 accumulators: the identity may not fit the
        # input's dtype, so masked lanes are excluded by a select)
        acc = zero + (LOWEST if OP == 3 else HIGHEST)
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=0).to(ACC)
            if OP == 3:
                acc = tl.where(m & (x > acc), x, acc)
            else:
                acc = tl.where(m & (x < acc), x, acc)
        if OP == 3:
            res = tl.max(acc, axis=1)
        else:
            res = tl.min(acc, axis=1)
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 5 or OP == 6:
        # argmax / argmin: first index of the extreme value; NaN counts as the extreme.
        best = zero + (LOWEST if OP == 5 else HIGHEST)
        bidx = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int64) + K
        bnan = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32)
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
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
            ext = tl.max(tl.where(bidx < K, best, LOWEST), axis=1)
        else:
            ext = tl.min(tl.where(bidx < K, best, HIGHEST), axis=1)
        hit = tl.where(row_nan[:, None] > 0, bnan > 0, (best == ext[:, None]) & (bidx < K))
        res = tl.min(tl.where(hit, bidx, K), axis=1)
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    elif OP == 8:
        # logsumexp in one read (the online form): a running shift c (the max so far, 0
        # while it is infinite) and s = sum exp(x - c); a tile whose max raises c rescales
        # s by exp(c_old - c) first. Result log(s) + c. NaN propagates through s.
        # float32 works in base 2 as row_max_logsum (tgrad/kernels/softmax.py) does: with
        # cs = fl(c log2 e), s = sum 2^fma(x, log2 e, -cs) (one FMA and one ex2.ftz an
        # element), rescaled by 2^(cs_old - cs) when c moves; with d = c log2 e - cs
        # (exact), the result is c + (log2(s) - d) ln 2.
        c = tl.zeros([BLOCK_M], dtype=ACC)
        cs = tl.zeros([BLOCK_M], dtype=ACC)
        s = tl.zeros([BLOCK_M], dtype=ACC)
        mx = tl.zeros([BLOCK_M], dtype=ACC) - float("inf")
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
            cols = k0 + lanes
            m = rmask[:, None] & (cols < K)[None, :]
            # masked lanes load -inf: never the max, e^(-inf - c) = 0 (c is finite)
            x = tl.load(X + base + cols[None, :] * SK, mask=m, other=-float("inf")).to(ACC)
            mx = tl.maximum(mx, tl.max(x, axis=1))
            c_new = tl.where((mx == float("inf")) | (mx == -float("inf")), 0.0, mx)
            if ACC == tl.float64:
                s = tl.where(s > 0, s * tl.exp(c - c_new), s)
                s += tl.sum(tl.exp(x - c_new[:, None]), axis=1)
            else:
                cs_new = c_new * LOG2E
                s = tl.where(s > 0, s * tl.math.exp2(cs - cs_new), s)
                s += tl.sum(exp2_ftz(tl.fma(x, LOG2E, -cs_new[:, None])), axis=1)
                cs = cs_new
            c = c_new
        if ACC == tl.float64:
            res = tl.log(s) + c
        else:
            res = c + (tl.log2(s) - tl.fma(c, LOG2E, -cs)) * LN2
        tl.store(Y + rows * NS + chunk, res.to(Y.dtype.element_ty), mask=rmask)
    else:
        # all / any over x != 0
        acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.int32) + (1 if OP == 9 else 0)
        for k0 in tl.range(k_lo, K, BLOCK_K, num_stages=STAGES):
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
        tl.store(Y + rows * NS + chunk, (res != 0).to(Y.dtype.element_ty), mask=rmask)


@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


def _out_dtype(kind: str, dt: np.dtype) -> np.dtype:
    if kind in ("argmax", "argmin"):
        return np.dtype(np.int64)
    if kind in ("sum", "prod") and dt.kind in "iub":  # integers and bools sum to int64
        return np.dtype(np.int64)
    if kind in ("all", "any"):
        return np.dtype(np.bool_)
    return dt


def reduce(kind: str, x: DeviceArray, axes, keepdim: bool, correction: float = 0.0):
    """Reduce ``x`` over ``axes`` (None: all; an int for arg-reductions) with ``kind``."""
    from tgrad.backends import triton as be
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, int):
        axes = (axes % max(x.ndim, 1),)
    axes = tuple(sorted(a % max(x.ndim, 1) for a in axes)) if x.ndim else ()
    kept = tuple(d for d in range(x.ndim) if d not in axes)
    out_shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)) if keepdim \
        else tuple(x.shape[d] for d in kept)
    out_dt = _out_dtype(kind, x.dtype)
    m = math.prod(x.shape[d] for d in kept)
    k = math.prod(x.shape[d] for d in axes)
    if k == 0 or m == 0:  # nothing to reduce: the reduction's identity (NumPy's results)
        if m and kind not in _EMPTY:
            raise RuntimeError(f"{kind}(): cannot reduce over a dimension of size 0 (no "
                               f"identity); input shape {list(x.shape)}, dims {list(axes)}")
        return be.full(out_shape, _EMPTY.get(kind, 0), out_dt)
    # var divides by max(K - correction, 0), PyTorch's (inf, or NaN for 0 / 0, past the
    # count): a correction above K acts as K (the kernel divides by K - correction)
    correction = min(float(correction), k)
    v = be.permute(x, kept + axes)
    v2 = be.reshape_view_or_copy(v, (m, k))
    sm, sk = v2.estrides
    integer = x.dtype.kind in "iub"
    acc = tl.int64 if integer else tl.float64 if x.dtype == np.float64 else tl.float32
    interp = is_interpreted()
    cfg = configs.red_config(k, sm == 1 and sk != 1 and m > 1, interp, kind, m)
    count = k  # mean's divisor
    kc = configs.red_split(triton_cdiv(m, cfg.block_m), k, cfg.block_m, cfg.block_k,
                           interp) \
        if kind in SPLITTABLE else k
    if kc < k:  # two stages: partials per (row, chunk) in the accumulator dtype, then rows
        ns = triton_cdiv(k, kc)
        part_dt = out_dt if kind in ("all", "any") else np.dtype(
            np.int64 if integer else np.float64 if acc == tl.float64 else np.float32)
        parts = DeviceArray.empty((m, ns), part_dt, x.device)
        _launch("sum" if kind == "mean" else kind, v2, parts, m, k, sm, sk, kc, ns, count,
                correction, acc, cfg)
        v2, k, sm, sk = parts, ns, ns, 1
        cfg = configs.red_config(k, False, interp, kind, m)
    out = DeviceArray.empty((m,), out_dt, x.device)
    _launch(kind, v2, out, m, k, sm, sk, k, 1, count, correction, acc, cfg)
    return out.view(out_shape, contiguous_strides(out_shape))


# The result of reducing nothing (the ops reject empty amax/amin/argmax/argmin themselves).
_EMPTY = {"sum": 0, "prod": 1, "mean": float("nan"), "var": float("nan"),
          "logsumexp": -float("inf"), "all": True, "any": False}

# Reductions whose partial results over chunks combine with the same reduction.
SPLITTABLE = frozenset(("sum", "mean", "prod", "amax", "amin", "all", "any"))


def _launch(kind: str, x: DeviceArray, y: DeviceArray, m: int, k: int, sm: int, sk: int,
            kc: int, ns: int, count: int, correction: float, acc, cfg) -> None:
    """One red_kernel launch: rows of x (m, k) strided (sm, sk), chunks of kc, into y."""
    idx64 = (m - 1) * abs(sm) + (k - 1) * abs(sk) > _I32 or m * k > _I32 or m * ns > _I32
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        launch(red_kernel, (triton_cdiv(m, cfg.block_m), ns),
               karg(x), karg(y), m, k, sm, sk, float(correction), kc, ns, count,
               OP=OPS[kind], ACC=acc, IDX64=idx64,
               BLOCK_M=cfg.block_m, BLOCK_K=cfg.block_k, STAGES=cfg.stages,
               num_warps=cfg.num_warps)
