# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Batched, broadcasting matmul C[b] = A[b] @ B[b] on ``tl.dot`` (tensor cores for fp16 /
bf16, and for fp32 when TF32 is allowed), forward and backward from one kernel.

Shape contract: A [batch.., M, K], B [batch.., K, N], C [batch.., M, N]; every operand has
its own element strides (stride 0 on broadcast batch dims), and the batch dims of the three
collapse to at most two (b1, b0), so transposed / sliced operands are read in place.
The backward of C = A @ B is two launches of this kernel on strided views (no copies):
    dA = dC @ B^T   (B^T: B's view with its last two strides swapped)
    dB = A^T @ dC   (then summed over broadcast batch dims by sum_to)
FLOPs = 2 M N K per batch; bytes >= (M K + K N) itemsize + M N out itemsize.
Accumulation in float32 (float64 for float64 inputs, where ``tl.dot`` runs without tensor
cores in IEEE fp64). Tiles are grouped GROUP_M rows of tiles at a time for L2 reuse.
"""

from __future__ import annotations

from dataclasses import dataclass

import triton
import triton.language as tl


@dataclass
class MatmulFlags:
    """``allow_tf32``: let float32 matmuls round their inputs to TF32 on tensor cores (off
    by default, as torch.backends.cuda.matmul.allow_tf32). Read at each launch; the public
    spelling is meant to be ``tgrad.backends.cuda.matmul.allow_tf32`` (that module
    re-exporting this object as ``matmul``)."""
    allow_tf32: bool = False


FLAGS = MatmulFlags()


@triton.jit
def matmul_kernel(A, B, C, M, N, K, NB0,
                  SA1, SA0, SAM, SAK, SB1, SB0, SBK, SBN, SC1, SC0, SCM, SCN,
                  PRECISION: tl.constexpr, ACC64: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    n_m = tl.cdiv(M, BLOCK_M)
    n_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * n_n
    group = pid // width
    first_m = group * GROUP_M
    gsize = tl.minimum(n_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % gsize
    pid_n = (pid % width) // gsize
    b1 = bid // NB0
    b0 = bid % NB0
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    rk = tl.arange(0, BLOCK_K).to(tl.int64)
    a_ptr = A + b1 * SA1 + b0 * SA0 + rm[:, None] * SAM + rk[None, :] * SAK
    b_ptr = B + b1 * SB1 + b0 * SB0 + rk[:, None] * SBK + rn[None, :] * SBN
    # tl.dot's out_dtype must match the accumulator's (Triton 3.6 asserts it; 3.9 infers it)
    if ACC64:
        ACC_DT: tl.constexpr = tl.float64
    else:
        ACC_DT: tl.constexpr = tl.float32
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC_DT)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0.0)
        b = tl.load(b_ptr, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=ACC_DT)
        a_ptr += BLOCK_K * SAK
        b_ptr += BLOCK_K * SBK
    c_ptr = C + b1 * SC1 + b0 * SC0 + rm[:, None] * SCM + rn[None, :] * SCN
    tl.store(c_ptr, acc.to(C.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def int_matmul_kernel(A, B, C, M, N, K, NB0,
                      SA1, SA0, SAM, SAK, SB1, SB0, SBK, SBN, SC1, SC0, SCM, SCN,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """matmul_kernel's layout contract for integers (A and B int64, read as such): each
    step adds sum_k A[m, k] B[k, n] over a (BLOCK_M, BLOCK_K, BLOCK_N) product in int64,
    so the sums are exact and wrap modulo 2^64; C (int64) is cast to the result dtype by
    the caller (its truncation wraps int32 / int8 sums as PyTorch's CPU kernels do)."""
    pid = tl.program_id(0)
    bid = tl.program_id(1).to(tl.int64)
    n_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // n_n
    pid_n = pid % n_n
    b1 = bid // NB0
    b0 = bid % NB0
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    rk = tl.arange(0, BLOCK_K).to(tl.int64)
    a_ptr = A + b1 * SA1 + b0 * SA0 + rm[:, None] * SAM + rk[None, :] * SAK
    b_ptr = B + b1 * SB1 + b0 * SB0 + rk[:, None] * SBK + rn[None, :] * SBN
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int64)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0)
        b = tl.load(b_ptr, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0)
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
        a_ptr += BLOCK_K * SAK
        b_ptr += BLOCK_K * SBK
    c_ptr = C + b1 * SC1 + b0 * SC0 + rm[:, None] * SCM + rn[None, :] * SCN
    tl.store(c_ptr, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


_TUNED: dict = {}


def tuned_kernel(cfgs: tuple):
    """``matmul_kernel`` autotuned over ``cfgs`` (configs.MATMUL_CONFIGS_*), keyed on the
    problem size and dtype; compiled mode only (the interpreter uses MATMUL_INTERP)."""
    k = _TUNED.get(cfgs)
    if k is None:
        k = triton.autotune(
            configs=[triton.Config({"BLOCK_M": c.block_m, "BLOCK_N": c.block_n,
                                    "BLOCK_K": c.block_k, "GROUP_M": c.group_m},
                                   num_warps=c.num_warps, num_stages=c.num_stages)
                     for c in cfgs],
            key=["M", "N", "K", "PRECISION", "ACC64"])(matmul_kernel)
        _TUNED[cfgs] = k
    return k


__all__ = ["matmul_kernel", "int_matmul_kernel", "tuned_kernel", "FLAGS", "MatmulFlags",
           "triton"]
