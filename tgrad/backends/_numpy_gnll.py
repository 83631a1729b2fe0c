"""CPU forward/backward of gaussian_nll_loss and poisson_nll_loss (without ``full``) in one
node each (``tgrad.nn._losses_extra._GaussianNLL``, ``_PoissonNLL``). Not backend
primitives: the ops call them only for CPU float32/float64 arrays.

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
        return _reduce(loss, reduction), (d, vc, d2)


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


def _reduce(loss: np.ndarray, reduction: str) -> np.ndarray:
    """The composite's reduction of an elementwise loss: 'sum' float_sum, 'mean' float_sum
    / count in float64 (the backend's mean; empty: NaN), 'none' as it is."""
    dt = loss.dtype
    if reduction == "sum":
        return np.asarray(float_sum(loss, None), dt)
    if reduction == "mean":
        n = loss.size
        return np.asarray(dt.type(float(float_sum(loss, None)) / n) if n else dt.type(np.nan))
    return loss


def poisson_fwd(x: np.ndarray, t: np.ndarray, log_input: bool, eps: float,
                reduction: str) -> tuple:
    """(loss, saved): poisson_nll_loss without ``full``, the composite's NumPy steps bit for
    bit, in x's dtype: l = exp(x) - t x (saved: exp(x)) or x - t log(x + eps) (saved:
    log(x + eps), x + eps); reduced as ``_reduce``. x, t one shape and dtype."""
    dt = x.dtype
    with quiet():
        if log_input:
            y = np.asarray(np.exp(x))
            loss = np.asarray(np.multiply(t, x))
            np.subtract(y, loss, out=loss)
            saved = (y,)
        else:
            xe = np.asarray(np.add(x, dt.type(eps)))
            lg = np.asarray(np.log(xe))
            loss = np.asarray(np.multiply(t, lg))
            np.subtract(x, loss, out=loss)
            saved = (lg, xe)
        return _reduce(loss, reduction), saved


def poisson_bwd(g: np.ndarray, x: np.ndarray, t: np.ndarray, saved: tuple, log_input: bool,
                reduction: str, need_x: bool, need_t: bool) -> tuple:
    """(dx, dt) (None where not needed) with the composite's roundings (bit for bit):
    G = g ('none', 'sum'; broadcast) or g / N ('mean'), m = -G;
    log_input: dx = G exp(x) + m t, dt = m x;
    else: dx = G + (m t) / (x + eps), dt = m log(x + eps)."""
    dt = x.dtype
    with quiet():
        g = np.asarray(g, dt)
        if reduction == "mean":
            g = g / dt.type(max(x.size, 1))
        m = np.negative(g)
        dx = dtn = None
        if need_x:
            dx = np.asarray(np.multiply(m, t))
            if log_input:
                dx += np.multiply(g, saved[0])
            else:
                dx /= saved[1]
                dx += g
        if need_t:
            dtn = np.asarray(np.multiply(m, x if log_input else saved[0]))
    return dx, dtn
