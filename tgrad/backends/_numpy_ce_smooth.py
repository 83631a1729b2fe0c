"""CPU forward/backward of cross_entropy with label smoothing over class indices (one node;
``tgrad.nn.functional._CrossEntropySmooth``). Not backend primitives: the op calls them only
for CPU float32/float64 arrays.

Shapes: x [C] or [N, C, d1...] with classes on ``axis``; t int64 of x's shape without the
class axis; w the class weights [C] or None; rw = w[t] (t's shape) or None.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_nn import cross_entropy_fwd, log_softmax_fwd
from tgrad.backends._numpy_sum import float_sum


def _along(a: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    """A [C] vector shaped to broadcast along ``axis`` of an ``ndim``-d array."""
    return a.reshape(tuple(-1 if i == axis else 1 for i in range(ndim)))


def ce_smooth_fwd(x: np.ndarray, t: np.ndarray, w, rw, axis: int, ignore_index: int,
                  reduction: str, eps: float) -> tuple:
    """(loss, lse, denom): loss = (1 - eps) nll + eps / C smooth, with nll cross_entropy_fwd's
    and smooth_i = -sum_c w_c log_softmax(x)_ic (0 on ignored rows), reduced as nll ("mean"
    divides by denom = sum of the kept rows' weights). The same NumPy steps, in the same
    order, as the composite of tgrad ops it replaces (bit for bit)."""
    dt = x.dtype
    nll, lse = cross_entropy_fwd(x, t, rw, axis, ignore_index, reduction)
    logp = log_softmax_fwd(x, axis)
    if w is not None:
        logp = np.multiply(logp, _along(w, axis, x.ndim))
    kept = t != ignore_index
    with np.errstate(all="ignore"):
        smooth = np.where(kept, np.negative(float_sum(logp, axis)), dt.type(0))
        denom = None
        if reduction == "mean":
            keep = kept.astype(dt)
            denom = float_sum(np.multiply(rw, keep) if rw is not None else keep, None)
            smooth = np.divide(float_sum(smooth, None), denom)
        elif reduction == "sum":
            smooth = float_sum(smooth, None)
        loss = np.add(np.multiply(nll, dt.type(1.0 - eps)),
                      np.multiply(smooth, dt.type(eps / x.shape[axis])))
    return np.asarray(loss, dt), lse, denom


def ce_smooth_bwd(g: np.ndarray, x: np.ndarray, t: np.ndarray, w, rw, lse: np.ndarray,
                  denom, axis: int, ignore_index: int, reduction: str,
                  eps: float) -> np.ndarray:
    """dx = a_i (p - onehot(t_i)) + b_i (W p - w) = (a_i + b_i W) p - a_i onehot - b_i w
    with p = softmax(x) (exp((x - m) - log_s) from the saved lse = (m, log_s)), w the class
    weights (ones without), W = sum(w), a_i = (1 - eps) g rw_i, b_i = eps / C g (each
    / denom for "mean"), both 0 on ignored rows."""
    dt = x.dtype
    nd = x.ndim
    n_cls = x.shape[axis]
    kept = t != ignore_index
    with np.errstate(all="ignore"):
        gf = np.asarray(g, dt)
        ga = np.multiply(gf, dt.type(1.0 - eps))
        gb = np.multiply(gf, dt.type(eps / n_cls))
        if denom is not None:
            ga, gb = np.divide(ga, denom), np.divide(gb, denom)
        a = np.where(kept, ga * rw if rw is not None else ga, dt.type(0))
        b = np.where(kept, gb, dt.type(0))
        ww = w if w is not None else np.ones(n_cls, dt)
        big_w = float_sum(ww, None)
        a_k, b_k = np.expand_dims(a, axis), np.expand_dims(b, axis)
        p = np.subtract(x, np.expand_dims(lse[0], axis))
        p -= np.expand_dims(lse[1], axis)
        np.exp(p, out=p)
        p *= a_k + b_k * big_w
        p -= b_k * _along(ww, axis, nd)
        idx = np.expand_dims(np.where(kept, t, 0), axis)
        picked = np.take_along_axis(p, idx, axis=axis)
        np.put_along_axis(p, idx, picked - a_k, axis=axis)
    return p
