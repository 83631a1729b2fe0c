# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Advanced indexing on the GPU: gather, deterministic scatter-add, and put.

Keys (integer arrays, boolean masks, mixed with ints / slices / None) live on the host
(tgrad.ops.index normalises them to NumPy), so the wrapper turns a key into int64 element
offsets OFF (the key applied to the view's stride grid: strides and slicing steps are read
in place) and the kernels move data:
  gather:       out[i] = X[OFF[i]]                          bytes = N (2 itemsize + 8)
  scatter-add:  out[t_s] = sum_{j < len_s} V[PERM[start_s + j]]   (out zero elsewhere)
  put:          DST[OFF[i]] = V[VIDX[i]]
Determinism of scatter-add (repeated indices add up): no atomics. The host sorts the target
offsets (stable argsort: the index arrays are already host arrays), giving segments of equal
targets; one lane sums one segment in index order (a segmented reduction), so the result is
bit-identical run to run. ``put`` keeps the last write of repeated indices (NumPy's rule)
by deduplicating on the host.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def gather_kernel(OUT, X, OFF, N, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < N
    off = tl.load(OFF + i, mask=mask, other=0)
    tl.store(OUT + i, tl.load(X + off, mask=mask), mask=mask)


@triton.jit
def scatter_add_kernel(OUT, V, PERM, START, LEN, TARGET, NSEG, MAXLEN,
                       ACC64: tl.constexpr, BLOCK: tl.constexpr):
    s = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    smask = s < NSEG
    start = tl.load(START + s, mask=smask, other=0)
    n = tl.load(LEN + s, mask=smask, other=0)
    if ACC64:
        acc = tl.zeros([BLOCK], tl.float64)
    else:
        acc = tl.zeros([BLOCK], tl.float32)
    for j in range(0, MAXLEN):
        m = smask & (j < n)
        p = tl.load(PERM + start + j, mask=m, other=0)
        v = tl.load(V + p, mask=m, other=0.0)
        if ACC64:
            acc += v.to(tl.float64)
        else:
            acc += v.to(tl.float32)
    t = tl.load(TARGET + s, mask=smask, other=0)
    tl.store(OUT + t, acc.to(OUT.dtype.element_ty), mask=smask)


@triton.jit
def put_kernel(DST, V, OFF, VIDX, N, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = i < N
    off = tl.load(OFF + i, mask=mask, other=0)
    vi = tl.load(VIDX + i, mask=mask, other=0)
    v = tl.load(V + vi, mask=mask)
    tl.store(DST + off, v.to(DST.dtype.element_ty), mask=mask)


__all__ = ["gather_kernel", "scatter_add_kernel", "put_kernel", "triton"]
