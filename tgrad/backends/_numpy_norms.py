"""CPU paths of the norm family's plain backwards (tgrad/ops/reduce.py Norm, rms_norm of
tgrad/nn/_norm.py): the same NumPy steps as the tgrad compositions they replace, run on the
arrays at once, without one tgrad op (Python, a Function, a wrapped tensor) per step. Not
a backend primitive: on cuda, under create_graph and inside forward AD the ops keep their
compositions; the callers take these for CPU float32/float64 arrays only (``fast_dtype``).

Bit-identity with the compositions: every arithmetic step is the composition's own NumPy
ufunc on the same operands in the same order (a reduced operand broadcast against the full
one, as the composition's stride-0 expand), results written in place into a fresh
temporary of the full shape; a ``where`` that selects a constant is a ``copyto`` of that
constant under the mask (the same bits), skipped when the mask is all false.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad.backends import numpy as be
from tgrad.backends._numpy_dtypes import fast_dtype  # noqa: F401 - the callers' dtype test


def norm_grad(g: np.ndarray, x: np.ndarray, y: np.ndarray, p: float, kept: tuple) -> np.ndarray:
    """dx of y = ||x||_p (p = 1 or 2) over some axes: g and y the reduced gradient and norm
    (any shape of ``kept``'s size: ``kept`` is x's shape with 1 on the reduced axes), x
    C-contiguous, non-empty, at least 1-d; all of one float32/float64 dtype.

    p=2: g * where(y == 0, 0, x / y)    (reduce._norm_grad's order: the ratio first)
    p=1: g * sign(x)
    """
    gb, yb = g.reshape(kept), y.reshape(kept)
    token = be._quiet_enter()
    try:
        if p == 2:
            r = np.true_divide(x, yb)
            zero = np.equal(yb, 0.0)
            if zero.any():  # where(y == 0, 0.0, r): +0.0 under the (broadcast) mask
                np.copyto(r, r.dtype.type(0.0), where=zero)
        else:
            r = np.sign(x)
        return np.multiply(gb, r, out=r)
    finally:
        be._quiet_exit(token)


# ------------------------------------------------------------------ rms_norm
# x (..., *normalized) float32/float64, C-contiguous, non-empty; the statistics over its
# last k dims (``dims``); w None or the normalized shape, of x's dtype. The composition
# (tgrad/nn/_norm.py rms_norm) and its nodes:
#   q = x * x;  m = mean(q, dims, keepdim);  s = m + eps;  r = rsqrt(s);  t = x * r;
#   y = t * w (y = t without w)
# backward, node by node in the engine's order (Mul(t, w), Mul(x, r), Rsqrt, Add, Mean,
# Mul(x, x)), each product broadcast as the composition's:
#   gt = g * w,  dw = sum over the batch dims of (g * t)
#   gx1 = gt * r,  gr = sum over dims of (gt * x)
#   gs = gr * (r * r * r) * -0.5   (the rsqrt rule, the backend's grad_formula)
#   gq = gs / n (n = the count over dims), broadcast;  gx2 = gq * x (twice: x * x's rules)
#   dx = (gx1 + gx2) + gx2   (x's gradients summed in the order the engine adds them)
def rms_norm_fwd(x: np.ndarray, w, k: int, eps: float) -> tuple:
    """(y, r, t): y the output, r = rsqrt(mean(x^2) + eps) (kept dims) and t = x * r (t is
    y without a weight) for the backward."""
    dims = tuple(range(x.ndim - k, x.ndim))
    dt = x.dtype.type
    token = be._quiet_enter()
    try:
        q = np.multiply(x, x)
        m = be.mean(q, dims, True)
        del q
        r = np.true_divide(1.0, np.sqrt(np.add(m, dt(eps))))  # the backend's rsqrt
        t = np.multiply(x, r)
        y = t if w is None else np.multiply(t, w)
    finally:
        be._quiet_exit(token)
    return y, r, t


def _sum_over(a: np.ndarray, axes: tuple, shape: tuple) -> np.ndarray:
    """sum_to(a, shape): a summed over ``axes`` (the backend's sum_, kept dims) and
    reshaped to ``shape``; a itself when there is nothing to sum (a is a fresh product)."""
    if not axes:
        return a.reshape(shape)
    return be.sum_(a, axes, True).reshape(shape)


def rms_norm_bwd(g: np.ndarray, x: np.ndarray, w, r: np.ndarray, t: np.ndarray, k: int,
                 need_x: bool, need_w: bool) -> tuple:
    """(dx, dw) of rms_norm_fwd's y (None where not needed); g of x's shape and dtype."""
    dims = tuple(range(x.ndim - k, x.ndim))
    lead = x.ndim - k
    dt = x.dtype.type
    dx = dw = None
    token = be._quiet_enter()
    try:
        if need_w and w is not None:
            dw = _sum_over(np.multiply(g, t), tuple(range(lead)), w.shape)
        if need_x:
            gt = g if w is None else np.multiply(g, w)
            gx1 = np.multiply(gt, r)
            gr = _sum_over(np.multiply(gt, x), tuple(d for d in dims if x.shape[d] != 1),
                           r.shape)
            gs = be.grad_formula("rsqrt", gr, r)
            gq = np.true_divide(gs, dt(math.prod(x.shape[lead:])))
            gx2 = np.multiply(gq, x)
            np.add(gx1, gx2, out=gx1)
            dx = np.add(gx1, gx2, out=gx1)
    finally:
        be._quiet_exit(token)
    return dx, dw


# ------------------------------------------------------------------ normalize
# F.normalize's composition (tgrad/nn/_composite.py) over one axis ``ax`` of x, p = 1 or 2:
#   n = norm(x, p, ax, keepdim);  d = clamp(n, min=eps);  y = x / d
# backward, node by node in the engine's order (Div, Clamp, Norm):
#   q = g / d (x's share);  gd = sum over ax of (-(q * x) / d)   (div's rules)
#   gn = gd where n > eps, else 0   (clamp's rule)
#   dx = q + norm_grad(gn, x, n, p)   (x's two gradients in the order the engine adds them)
def normalize_fwd(x: np.ndarray, p: float, ax: int, eps: float) -> tuple:
    """(y, n, d): y = x / max(||x||_p over ax, eps), n the norm and d the clamped norm
    (kept dims)."""
    n = be.norm(x, p, (ax,), True)
    d = be._clamp(n, x.dtype.type(eps), None)
    token = be._quiet_enter()
    try:
        return np.true_divide(x, d), n, d
    finally:
        be._quiet_exit(token)


def normalize_bwd(g: np.ndarray, x: np.ndarray, n: np.ndarray, d: np.ndarray, p: float,
                  ax: int, eps: float) -> np.ndarray:
    """dx of normalize_fwd's y; g of x's shape and dtype."""
    token = be._quiet_enter()
    try:
        q = np.true_divide(g, d)
        t = be.grad_formula("div_b", q, x, d)
        gd = be.sum_(t, (ax,), True) if x.shape[ax] != 1 else t
        del t
        gn = be.grad_formula("gt_mask", gd, n, float(x.dtype.type(eps)))
    finally:
        be._quiet_exit(token)
    dx = norm_grad(gn, x, n, p, n.shape)
    return np.add(q, dx, out=dx)
