# ruff: noqa: N803, N806  (Triton convention: pointers and constexprs in capitals)
"""Activation formulas (gelu in both forms, silu) for the strided elementwise template of
tgrad/kernels/elementwise.py (forward and paired backward side by side), and a flat kernel
for softplus (which takes runtime scalars beta and threshold).

Bytes per element: forward in + out, backward 2 in + out (memory bound); FLOPs ~ 10-20.
  gelu:      y = x Phi(x)                  dx = g (Phi(x) + x phi(x))
  gelu tanh: y = x (1 + tanh(u)) / 2,  u = sqrt(2/pi) (x + 0.044715 x^3)
             dx = g ((1 + t) / 2 + x (1 - t^2) u' / 2),  t = tanh(u),
             u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
  silu:      y = x s,  s = sigmoid(x)      dx = g s (1 + x (1 - s))
  softplus:  y = log(1 + e^(beta x)) / beta (x where beta x > threshold)
             dx = g sigmoid(beta x)          (g where beta x > threshold)
"""

from __future__ import annotations

import triton
import triton.language as tl

from tgrad.kernels.elementwise import _log1p, f_sigmoid, f_tanh

# constants are literals in the formulas: sqrt(1/2), 1/sqrt(2 pi), sqrt(2/pi), 0.044715


@triton.jit
def f_gelu(x):
    return x * 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))


@triton.jit
def f_gelu_backward(g, x):
    cdf = 0.5 * (1.0 + tl.erf(x * 0.7071067811865476))
    pdf = tl.exp(-0.5 * x * x) * 0.3989422804014327
    return g * (cdf + x * pdf)


@triton.jit
def f_gelu_tanh(x):
    return 0.5 * x * (1.0 + f_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@triton.jit
def f_gelu_tanh_backward(g, x):
    t = f_tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))
    du = 0.7978845608028654 * (1.0 + 3.0 * 0.044715 * x * x)
    return g * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du)


@triton.jit
def f_silu(x):
    return x * f_sigmoid(x)


@triton.jit
def f_silu_backward(g, x):
    s = f_sigmoid(x)
    return g * s * (1.0 + x * (1.0 - s))


@triton.jit
def softplus_kernel(O, G, X, N, SO, SG, SX, beta: tl.float64, threshold: tl.float64,
                    BWD: tl.constexpr, UPCAST: tl.constexpr, BLOCK: tl.constexpr):
    """O = softplus(X) (BWD=False) or O = softplus'(X) * G, over one collapsed dim of N
    elements with element strides SO, SG, SX."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < N
    x = tl.load(X + offs * SX, mask=mask, other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    if X.dtype.element_ty != tl.float64:  # beta, threshold: float64 arguments
        beta = tl.cast(beta, tl.float32)
        threshold = tl.cast(threshold, tl.float32)
    bx = x * beta
    if BWD:
        g = tl.load(G + offs * SG, mask=mask, other=0.0)
        if UPCAST:
            g = g.to(tl.float32)
        y = tl.where(bx > threshold, g, g * f_sigmoid(bx))
    else:
        # log(1 + e^bx) = max(bx, 0) + log1p(e^-|bx|)  (no overflow)
        sp = tl.maximum(bx, 0.0) + _log1p(tl.exp(-tl.abs(bx)))
        y = tl.where(bx > threshold, x, sp / beta)
    tl.store(O + offs * SO, y.to(O.dtype.element_ty), mask=mask)


FORWARD = {"none": f_gelu, "tanh": f_gelu_tanh}
BACKWARD = {"none": f_gelu_backward, "tanh": f_gelu_tanh_backward}
__all__ = ["f_gelu", "f_gelu_backward", "f_gelu_tanh", "f_gelu_tanh_backward", "f_silu",
           "f_silu_backward", "softplus_kernel", "triton"]
