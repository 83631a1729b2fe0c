"""CPU forward/backward of gaussian_nll_loss in one node
(``tgrad.nn._losses_extra._GaussianNLL``). Not backend primitives: the op calls them only
for CPU float32/float64 arrays.

Shapes: x (input), t (target), v (var) one shape S and one dtype; the loss is S ('none') or
() ('mean', 'sum'). Saved for the backward: d = x - t, vc = max(v, eps), d2 = d^2 (each S).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad.backends._numpy_sum import float_sum
from tgrad.backends._quiet import quiet

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)  # full=True's constant


def gnll_fwd(x: np.ndarray, t: np.ndarray, v: np.ndarray, eps: float, full: bool,
             reduction: str) -> tuple:
    """(loss, (d, vc, d2)): the composite's NumPy steps, bit for bit:
    vc = max(v, eps) (NaN stays NaN, as the composite's where), d = x - t, d2 = d * d,
    l = (log(vc) + d2 / vc) * 0.5 (+ 0.5 log(2 pi) with ``full``), all in x's dtype;
    reduced ('mean': float_sum / count in float64, as the backend's mean; empty: NaN)."""
    dt = x.dtype
    with quiet():
        vc = np.asarray(np.maximum(v, dt.type(eps)))  # (0-d: arrays, not scalars)
        d = np.asarray(np.subtract(x, t))
        d2 = np.asarray(np.multiply(d, d))
        loss = np.asarray(np.log(vc))
        loss += np.divide(d2, vc)
        loss *= dt.type(0.5)
        if full:
            loss += dt.type(_HALF_LOG_2PI)
        if reduction == "sum":
            loss = np.asarray(float_sum(loss, None), dt)
        elif reduction == "mean":
            n = loss.size
            loss = np.asarray(dt.type(float(float_sum(loss, None)) / n) if n else
                              dt.type(np.nan))
    return loss, (d, vc, d2)


def gnll_bwd(g: np.ndarray, saved: tuple, reduction: str, need_x: bool, need_t: bool,
             need_v: bool) -> tuple:
    """(dx, dt, dv) (None where not needed) from g (S for 'none', () otherwise), in x's
    dtype with the composite's roundings (bit for bit): G = g ('none', 'sum'; broadcast)
    or g / N ('mean'), h = G * 0.5, r = h / vc;
    dx = r * (2 d), dt = -dx, dv = r - (r * d2) / vc (d/dvc of log(vc) and of d2 / vc;
    the clamp passes the gradient unmasked, as the composite's where with the identity's
    gradient)."""
    d, vc, d2 = saved
    dt = d.dtype
    with quiet():
        g = np.asarray(g, dt)
        if reduction == "mean":
            g = g / dt.type(max(d.size, 1))
        r = np.asarray(np.divide(g * dt.type(0.5), vc))
        dx = dtn = dv = None
        if need_x or need_t:
            dx = np.asarray(np.multiply(d, dt.type(2)))
            dx *= r
            if need_t:
                dtn = np.asarray(np.negative(dx))
            if not need_x:
                dx = None
        if need_v:
            dv = np.asarray(np.multiply(r, d2))
            dv /= vc
            np.subtract(r, dv, out=dv)
    return dx, dtn, dv
