# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Cumulative sums along one dim: X viewed as (O, K, INNER) with any element strides is read
as L = O * INNER independent lines of K elements; Y is written contiguous (O, K, INNER).

Each program owns BLOCK_L lines and walks K in BLOCK_K steps: one ``tl.cumsum`` over the
tile plus the running sum carried from the previous steps, in float32 (float64 for float64,
int64 for integers and bools). REVERSE scans from the end (the backward of cumsum), by
reading the positions K-1-k. Bytes moved: every element read once and written once (plus
one copy first when the input's dims cannot be viewed as (O, K, INNER)).
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl

from tgrad.cuda import is_interpreted
from tgrad.cuda.array import DeviceArray
from tgrad.kernels import configs
from tgrad.kernels.launch import _I32, karg, launch, triton_cdiv


@triton.jit
def cumsum_kernel(X, Y, L, K, INNER, SXO, SXK, SXI, REVERSE: tl.constexpr,
                  ACC: tl.constexpr, IDX64: tl.constexpr, BLOCK_L: tl.constexpr,
                  BLOCK_K: tl.constexpr):
    # Shape contract: line l = (o, i) = divmod(l, INNER); Y[o, k, i] = sum_{j <= k} X[o, j, i]
    # (REVERSE: sum_{j >= k}); X at o*SXO + k*SXK + i*SXI, Y at (o*K + k)*INNER + i.
    pid = tl.program_id(0)
    if IDX64:
        lines = pid.to(tl.int64) * BLOCK_L + tl.arange(0, BLOCK_L).to(tl.int64)
    else:
        lines = pid * BLOCK_L + tl.arange(0, BLOCK_L)
    lmask = lines < L
    o = lines // INNER
    i = lines % INNER
    xbase = o * SXO + i * SXI
    ybase = o * K * INNER + i
    carry = tl.zeros([BLOCK_L], dtype=ACC)
    lanes = tl.arange(0, BLOCK_K)
    for k0 in range(0, K, BLOCK_K):
        pos = k0 + lanes
        if IDX64:
            pos = pos.to(tl.int64)  # pos * SXK and pos * INNER may pass 2^31
        m = lmask[:, None] & (pos < K)[None, :]
        if REVERSE:
            pos = K - 1 - pos
        x = tl.load(X + xbase[:, None] + pos[None, :] * SXK, mask=m, other=0).to(ACC)
        s = tl.cumsum(x, axis=1) + carry[:, None]
        tl.store(Y + ybase[:, None] + pos[None, :] * INNER, s.to(Y.dtype.element_ty), mask=m)
        # the next carry is the tile's last running sum (masked lanes add 0); taken from s
        # rather than as carry + tl.sum(x): Triton 3.6's thread-locality pass fails on that
        carry = tl.sum(tl.where(lanes == BLOCK_K - 1, s, 0), axis=1)


def cumsum(x: DeviceArray, axis: int, reverse: bool) -> DeviceArray:
    """Cumulative sum of ``x`` (ndim >= 1) along ``axis``; integers and bools give int64."""
    from tgrad.backends import triton as be
    out_dt = np.dtype(np.int64) if x.dtype.kind in "iub" else x.dtype
    out = DeviceArray.empty(x.shape, out_dt, x.device)
    if out.size == 0:
        return out
    v, (outer, k, inner) = be.line_view(x, axis)
    sxo, sxk, sxi = v.estrides
    acc = tl.int64 if x.dtype.kind in "iub" else tl.float64 if x.dtype == np.float64 \
        else tl.float32
    n_lines = outer * inner
    cfg = configs.scan_config(k, inner > 1, is_interpreted())
    span = (outer - 1) * abs(sxo) + (k - 1) * abs(sxk) + (inner - 1) * abs(sxi)
    idx64 = max(span, out.size) > _I32
    with np.errstate(all="ignore"):  # the interpreter evaluates masked-off lanes too
        launch(cumsum_kernel, (triton_cdiv(n_lines, cfg.block_m),), karg(v), karg(out),
               n_lines, k, inner, sxo, sxk, sxi, REVERSE=bool(reverse), ACC=acc, IDX64=idx64,
               BLOCK_L=cfg.block_m, BLOCK_K=cfg.block_k, num_warps=cfg.num_warps)
    return out
