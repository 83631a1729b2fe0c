# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Random numbers and dropout from Philox (``tl.rand`` / ``tl.randn``, counter based).

Element i of a launch draws counter ``offset + i`` under key ``seed`` (tgrad.manual_seed
sets the seed and resets the offset; every launch advances the offset by its numel), so a
draw is a pure function of (seed, offset, i): dropout's backward regenerates its mask from
the same (seed, offset) instead of storing it.
  dropout forward:  y = x * m_i,  m_i = 1 / (1 - p) if u_i >= p else 0    bytes = in + out
  dropout backward: dx = g * m_i  (the same m_i, regenerated)
The mask is multiplied in, not selected (as PyTorch and the NumPy backend): a dropped NaN or
inf becomes NaN (inf * 0), and p == 1 (scale 0) gives x * 0.
Uniforms are float32 (24 random bits) widened to the output dtype.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _uniform53(hi, lo):
    """A float64 uniform in [0, 1) on the 2^-53 grid from two uint32 Philox words (27 bits
    of hi, 26 of lo)."""
    bits = (hi >> 5).to(tl.int64) * 67108864 + (lo >> 6).to(tl.int64)
    return bits.to(tl.float64) * 1.1102230246251565e-16  # 2^-53


@triton.jit
def rand_kernel(O, N, seed, offset, NORMAL: tl.constexpr, F64: tl.constexpr,
                BLOCK: tl.constexpr):
    """O[i] = uniform [0, 1) or standard normal draw i of Philox(seed, offset + i). float64:
    53 random bits per uniform (tl.rand's float32 would leave the draws on a 2^-24 grid),
    the normal by Box-Muller on two of them, r = sqrt(-2 log(1 - u1)) cos(2 pi u2)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < N
    if F64:
        c0, c1, c2, c3 = tl.randint4x(seed, offset + offs)
        u = _uniform53(c0, c1)
        if NORMAL:
            r = tl.sqrt(-2.0 * tl.log(1.0 - u)) * tl.cos(6.283185307179586 * _uniform53(c2, c3))
        else:
            r = u
    elif NORMAL:
        r = tl.randn(seed, offset + offs)
    else:
        r = tl.rand(seed, offset + offs)
    tl.store(O + offs, r.to(O.dtype.element_ty), mask=mask)


@triton.jit
def dropout_kernel(O, X, N, p: tl.float64, scale: tl.float64, seed, offset,
                   UPCAST: tl.constexpr, BLOCK: tl.constexpr):
    """O = X * (scale where rand >= p else 0) (forward with X = x, backward with X = g);
    multiplicative, so dropped NaN/inf give NaN."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    u = tl.rand(seed, offset + offs)
    # kept: x * scale; dropped: x * 0 (NaN for NaN/inf, as the product x * mask). Not
    # x * where(keep, scale, 0): that would round scale to the fp32 block's dtype.
    # scale is a float64 argument: x * scale rounds once, to O's dtype (as x / (1 - p))
    y = tl.where(u >= p, x * scale, x * 0.0)
    tl.store(O + offs, y.to(O.dtype.element_ty), mask=mask)


__all__ = ["rand_kernel", "dropout_kernel", "triton"]
