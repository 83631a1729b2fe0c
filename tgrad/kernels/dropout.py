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
def rand_kernel(O, N, seed, offset, NORMAL: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < N
    if NORMAL:
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
