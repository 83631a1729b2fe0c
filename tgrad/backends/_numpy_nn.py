"""CPU primitives of the nn ops (softmax family, cross_entropy, layer_norm, activations;
grid_sample's pair lives in _numpy_grid_sample.py).

Re-exported by ``tgrad.backends.numpy`` so the backend's primitive table stays one module.
Each forward primitive has a paired backward primitive (one kernel each on the GPU). No
autograd here: the ops in ``tgrad.nn.functional`` call these and own the derivative rules.
float16/bfloat16 inputs are computed in float32 and rounded once at the end; statistics
saved for backward (log-sum-exp, mean, rstd) stay in the compute dtype.
"""

from __future__ import annotations

import math
import sys

import ml_dtypes
import numpy as np

from tgrad.backends._numpy_grid_sample import grid_sample_bwd, grid_sample_fwd
from tgrad.backends._numpy_sum import _MAX_RUNNING, flat_blocks, float_sum
from tgrad.backends._quiet import quiet
from tgrad.backends._workspace import WORKSPACE as _WORKSPACE

__all__ = ["softmax_fwd", "softmax_bwd", "log_softmax_fwd", "log_softmax_bwd",
           "cross_entropy_fwd", "cross_entropy_bwd",
           "layer_norm_fwd", "layer_norm_bwd",
           "gelu_fwd", "gelu_bwd", "silu_fwd", "silu_bwd", "softplus_fwd", "softplus_bwd",
           "dropout_fwd", "dropout_bwd", "grid_sample_fwd", "grid_sample_bwd"]

_HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))
_F32 = np.dtype(np.float32)
_BN_DTYPES = (_F32, np.dtype(np.float64))
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_GELU_K = 0.044715


def _up(x: np.ndarray) -> np.ndarray:
    return x.astype(_F32) if x.dtype in _HALF else x


def _down(y, dt: np.dtype) -> np.ndarray:
    y = np.asarray(y)
    return y if y.dtype == dt else y.astype(dt)


def _max_keep(x: np.ndarray, axis: int) -> np.ndarray:
    """Row maxima (keepdims) for max-subtraction; empty rows give 0. Rows holding +inf or
    only -inf become NaN (inf - inf), exactly as PyTorch's kernels behave."""
    if x.shape[axis] == 0:
        shape = list(x.shape)
        shape[axis] = 1
        return np.zeros(shape, x.dtype)
    return np.max(x, axis=axis, keepdims=True)


# ------------------------------------------------------------------ softmax family
# Shapes: x, y, g all [..., n, ...] with the softmax taken over ``axis``.
# Row path (_sm_rows): the last axis of C-contiguous float32/float64 arrays, as (R, n)
# views: the row max by _row_max, the row sums by _row_sum (float64: np.add.reduce, the
# general path's bits), the same elementwise steps.
_COLS_MAX_N, _COLS_MIN_R = 32, 256  # _row_max's column loop: rows of <= 32, >= 256 of them


def _row_max(a: np.ndarray) -> np.ndarray:
    """(R, 1) maxima of the rows of a (R, n) C-contiguous (NaN where a row holds one).
    Short rows, many of them: one np.maximum per column into the running maxima (2048 x 32
    float32: 35 us against np.maximum.reduce's 100-130, which costs ~50 ns a row); the
    maximum is the same value (only which zero of a row holding both -0.0 and 0.0 may
    differ, which no softmax result sees: x - m is the same for every other x, and such a
    row's sum is >= 2), a NaN the same NaN up to its payload."""
    r, n = a.shape
    if n > _COLS_MAX_N or r < _COLS_MIN_R:
        return np.maximum.reduce(a, axis=1, keepdims=True)
    m = a[:, 0].copy()
    for j in range(1, n):
        np.maximum(m, a[:, j], out=m)
    return m.reshape(-1, 1)


def _sm_rows(axis: int, *arrays) -> bool:
    """Whether the softmax primitives take the row path: ``axis`` the last one, arrays
    C-contiguous float32/float64 of one shape and dtype, not empty."""
    x = arrays[0]
    return (type(x) is np.ndarray and x.ndim > 0 and axis % x.ndim == x.ndim - 1
            and x.size > 0 and x.dtype in _BN_DTYPES
            and all(type(a) is np.ndarray and a.flags.c_contiguous and a.dtype == x.dtype
                    and a.shape == x.shape for a in arrays))


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1])


def softmax_fwd(x: np.ndarray, axis: int) -> np.ndarray:
    """y = exp(x - m) / sum(exp(x - m)), m the row max (stable)."""
    dt = x.dtype
    xf = _up(x)
    with quiet():
        if _sm_rows(axis, xf):  # the same steps in one new buffer
            x2 = _rows(xf)
            e = np.subtract(x2, _row_max(x2))
            np.exp(e, out=e)
            return _down(np.divide(e, _row_sum(e), out=e).reshape(x.shape), dt)
        # one C-contiguous buffer (PyTorch's result, whatever x's layout): exp and the
        # division in it
        e = np.subtract(xf, _max_keep(xf, axis), order="C")
        if type(e) is not np.ndarray:
            return _down(np.exp(e) / np.sum(np.exp(e), axis=axis, keepdims=True), dt)
        np.exp(e, out=e)
        return _down(np.divide(e, float_sum(e, axis, True), out=e), dt)


def softmax_bwd(g: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    """dx = y * (g - sum(g * y))."""
    dt = g.dtype
    g, y = _up(g), _up(y)
    with quiet():
        if _sm_rows(axis, g, y):  # in g * y's buffer
            g2, y2 = _rows(g), _rows(y)
            t = np.multiply(g2, y2)
            s = _row_sum(t)
            np.subtract(g2, s, out=t)
            return _down(np.multiply(y2, t, out=t).reshape(g.shape), dt)
        return _down(y * (g - float_sum(g * y, axis, True)), dt)


def log_softmax_fwd(x: np.ndarray, axis: int) -> np.ndarray:
    """y = x - logsumexp(x) = (x - m) - log(sum(exp(x - m)))."""
    dt = x.dtype
    xf = _up(x)
    with quiet():
        if _sm_rows(axis, xf):  # in x - m's buffer
            x2 = _rows(xf)
            s = np.subtract(x2, _row_max(x2))
            lse = np.log(_row_sum(np.exp(s)))
            return _down(np.subtract(s, lse, out=s).reshape(x.shape), dt)
        s = np.subtract(xf, _max_keep(xf, axis), order="C")  # C-contiguous, as PyTorch's
        return _down(s - np.log(float_sum(np.exp(s), axis, True)), dt)


def log_softmax_bwd(g: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    """dx = g - exp(y) * sum(g)."""
    dt = g.dtype
    g, y = _up(g), _up(y)
    with quiet():
        e = np.exp(y)  # exp(y) * sum(g), then g - that, in this one buffer (y's layout)
        if not (_same_layout(e, g) and e.dtype == g.dtype):
            return _down(g - e * float_sum(g, axis, True), dt)
        sg = (_row_sum(_rows(g)).reshape(g.shape[:-1] + (1,)) if _sm_rows(axis, g)
              else float_sum(g, axis, True))
        np.multiply(e, sg, out=e)
        return _down(np.subtract(g, e, out=e), dt)


# ------------------------------------------------------------------ cross entropy
# x: logits [C] or [N, C, d1...] with classes on ``axis`` (0 or 1); t: int64 targets of x's
# shape without the class axis; rw: optional per-row weights of t's shape (the class weight
# of each row's target; None = 1). Rows whose target is ``ignore_index`` contribute nothing.
def _row_weights(t: np.ndarray, rw, ignore_index: int, dt: np.dtype) -> np.ndarray:
    keep = t != ignore_index
    if rw is None:
        return keep.astype(dt)
    return np.where(keep, _up(rw), 0).astype(dt)


def cross_entropy_fwd(x: np.ndarray, t: np.ndarray, rw, axis: int, ignore_index: int,
                      reduction: str) -> tuple:
    """(loss, lse): loss_i = rw_i (lse_i - x[i, t_i]) (0 where ignored; computed as
    (m_i - x[i, t_i]) + log(sum(exp(x_i - m_i))) with the row max m_i), reduced by
    ``reduction`` ("mean" divides by sum(rw) over kept rows: 0/0 = nan when all are
    ignored, as PyTorch); lse: (2,) + t.shape in the compute dtype, saved for backward:
    lse[0] the row max m, lse[1] log_s = log(sum(exp(x - m))), kept apart (as the GPU
    backend's): m + log_s rounds log_s away where |m| is large (1e30 + log 3 == 1e30)."""
    dt = x.dtype
    xf = _up(x)
    keep = t != ignore_index
    w = _row_weights(t, rw, ignore_index, xf.dtype)
    with quiet():
        m = _max_keep(xf, axis)
        e = np.subtract(xf, m)
        log_s = np.squeeze(np.log(float_sum(np.exp(e, out=e), axis, True)), axis)
        del e
        m = np.squeeze(m, axis)
        lse = np.stack([m, log_s]).astype(xf.dtype, copy=False)
        safe = np.where(keep, t, 0)
        key = _class_key(xf.ndim, safe, axis)  # (the same elements, gathered faster)
        picked = (xf[key] if key is not None else
                  np.squeeze(np.take_along_axis(xf, np.expand_dims(safe, axis), axis), axis))
        # (m - picked) + log_s, not lse - picked: exact when the target's logit is the max
        loss = np.where(keep, w * ((m - picked) + log_s), 0).astype(xf.dtype)
        if reduction == "sum":
            loss = np.sum(loss, dtype=xf.dtype)
        elif reduction == "mean":
            loss = np.sum(loss, dtype=xf.dtype) / np.sum(w, dtype=xf.dtype)
    return _down(loss, dt), np.asarray(lse)


def cross_entropy_bwd(g: np.ndarray, x: np.ndarray, t: np.ndarray, rw, lse: np.ndarray,
                      axis: int, ignore_index: int, reduction: str) -> np.ndarray:
    """dx = c_i (softmax(x)_i - onehot(t_i)) with c_i = g_i rw_i ("none"), g rw_i ("sum") or
    g rw_i / sum(rw) ("mean"; a sum of 0 divides too, as PyTorch's nll_loss: NaN or inf on
    kept rows of zero total weight), c_i = 0 on ignored rows. softmax is
    exp((x - m) - log_s) from the saved pair lse = (m, log_s) (cross_entropy_fwd): x - m is
    exact where p matters (x near the max), so p keeps the dtype's relative precision for
    logits of any magnitude (a summed lse lost log_s at 1e30, and all of float32's digits
    of exp(x - lse) at 1000)."""
    dt = x.dtype
    xf = _up(x)
    gf = _up(g)
    w = _row_weights(t, rw, ignore_index, xf.dtype)
    if reduction == "mean":
        with quiet():
            w = w / np.sum(w, dtype=xf.dtype)
    with quiet():
        c = np.expand_dims((gf * w).astype(xf.dtype, copy=False), axis)
    keep = t != ignore_index
    if not keep.all():  # exactly 0 on ignored rows, even for a NaN or inf g (PyTorch's)
        c = np.where(np.expand_dims(keep, axis), c, 0).astype(xf.dtype, copy=False)
    with quiet():
        p = xf - np.expand_dims(lse[0], axis)
        p -= np.expand_dims(lse[1], axis)
        np.exp(p, out=p)
        if type(p) is not np.ndarray or not p.flags.c_contiguous:
            classes = np.arange(x.shape[axis]).reshape(
                [-1 if i == axis else 1 for i in range(x.ndim)])
            return _down(c * (p - (classes == np.expand_dims(t, axis))), dt)
        # in p (a C-contiguous buffer of its own, the layout c * (p - onehot) gets)
        _subtract_onehot(p, t, axis)
        return _down(np.multiply(c, p, out=p), dt)


def _subtract_onehot(p: np.ndarray, t: np.ndarray, axis: int) -> None:
    """p -= onehot(t) along ``axis``, in place: 1 subtracted at each row's target where
    0 <= t < C (exactly the one-hot's ones: an out-of-range target, such as ignore_index
    -100, has none), by a gather and a scatter of one value per row instead of a full
    one-hot mask and a full subtraction (the same bits: p - True and p - False are p - 1.0
    and p - 0.0)."""
    hit = (t >= 0) & (t < p.shape[axis])
    safe = np.where(hit, t, 0)
    key = _class_key(p.ndim, safe, axis)
    if key is not None:  # (N, C): basic fancy indexing, the same elements
        p[key] = np.subtract(p[key], hit)
        return
    hit, idx = np.expand_dims(hit, axis), np.expand_dims(safe, axis)
    vals = np.take_along_axis(p, idx, axis)
    np.subtract(vals, hit, out=vals)
    np.put_along_axis(p, idx, vals, axis)


# ------------------------------------------------------------------ nll loss
# x: log-probabilities [C] or [N, C, d1...] with classes on ``axis`` (0 or 1); safe: int64
# targets of x's shape without the class axis (ignored rows at 0); w: per-row weights of
# safe's shape in x's dtype (weight[t_i], 0 on ignored rows); keep: bool, safe's shape.
# The same steps as the op composition NllLoss runs elsewhere (gather, neg, mul, where,
# sum, div; each rounded to x's dtype, halves computed in float32), so the same bits.
# CPU only (not in __all__): NllLoss composes tgrad ops on other devices.
def _mul(a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    return _down(np.multiply(_up(a), _up(b)), dt)


def _div(a: np.ndarray, b: np.ndarray, dt: np.dtype) -> np.ndarray:
    return _down(np.true_divide(_up(a), _up(b)), dt)


def _total(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """sum(a) over every axis as the sum op: accumulated in float32 for halves."""
    return _down(float_sum(a, None, False, _F32 if dt in _HALF else dt), dt)


def _class_key(x_ndim: int, safe: np.ndarray, axis: int):
    """The index of (i, safe_i) along ``axis``: (arange(N), safe) for a (N, C) x (basic
    fancy indexing, ~10 us cheaper than take/put_along_axis for small N), else None."""
    if x_ndim == 2 and axis == 1:
        return np.arange(safe.shape[0]), safe
    return None


def nll_loss_fwd(x: np.ndarray, safe: np.ndarray, w: np.ndarray, keep: np.ndarray,
                 axis: int, reduction: str) -> np.ndarray:
    """loss_i = -x[i, safe_i] w_i (exactly 0 where not keep: a -inf there stays out),
    "sum": sum_i loss_i, "mean": sum_i loss_i / sum_i w_i (0/0 = NaN when every row is
    ignored, as PyTorch)."""
    dt = x.dtype
    with quiet():
        key = _class_key(x.ndim, safe, axis)
        picked = (x[key] if key is not None else
                  np.squeeze(np.take_along_axis(x, np.expand_dims(safe, axis), axis), axis))
        loss = np.where(keep, _mul(np.negative(picked), w, dt), dt.type(0))
        if reduction == "none":
            return loss
        total = _total(np.ascontiguousarray(loss), dt)
        if reduction == "sum":
            return total
        return _div(total, _total(w, dt), dt)


def nll_loss_bwd(g: np.ndarray, safe: np.ndarray, w: np.ndarray, keep: np.ndarray,
                 axis: int, reduction: str, shape: tuple) -> np.ndarray:
    """dx (``shape``, g's dtype): zeros with c_i added at (i, safe_i) along ``axis``,
    c_i = -g_i w_i ("none"), -g w_i ("sum"), -g (w_i / sum(w)) ("mean"), 0 where not keep
    (even for a NaN or inf g); 0 + c, so a -0.0 becomes 0.0 (the scatter-add's bits)."""
    dt = g.dtype
    with quiet():
        if reduction == "mean":
            w = _div(w, _total(w, dt), dt)
        c = np.where(keep, np.negative(_mul(g, w, dt)), dt.type(0))
        np.add(c, dt.type(0), out=c)  # one position per row: the scatter-add's 0 + c
        dx = np.zeros(shape, dt)
        key = _class_key(len(shape), safe, axis)
        if key is not None:
            dx[key] = c
        else:
            np.put_along_axis(dx, np.expand_dims(safe, axis), np.expand_dims(c, axis), axis)
        return dx


# ------------------------------------------------------------------ layer norm
# x: [..., *normalized] with the statistics over the last ``k`` dims; w, b: normalized shape.
# Row path (_ln_rows): a C-contiguous float32/float64 x as its (R, N) view, N = the
# normalized numel, w and b (N,) of x's dtype: the same elementwise steps in place in one
# output buffer (the backward: in xhat's and dx's), and the row sums by _row_sum (float64:
# np.add.reduce, the bits of np.mean's; float32: np.einsum, see _row_sum). Other inputs
# (strided, halves' parameters) take the general expressions, the same steps.
_EINSUM_ROW = 128  # longest float32 row _row_sum sums with np.einsum


def _row_sum(a: np.ndarray) -> np.ndarray:
    """(R, 1) sums of the rows of a (R, N) C-contiguous. float32 rows of <= 128: np.einsum
    (a few SIMD float32 accumulators, each adding a tree of four vectors a step: as
    accurate as np.add.reduce's pairwise sum, which is eight accumulators at this length;
    measured on 2.5M rows of 32-128 against float64: mean error 0.39-0.41 ulp, max
    2.0-2.3, np.add.reduce 0.39-0.42 and 2.1-2.4), 3-4x faster: np.add.reduce costs
    ~20 ns a row, which was half of layer_norm's and softmax's time on the transformer's
    rows of 32 and 128. Longer rows (einsum's error then grows like N / lanes: 1.1 ulp mean
    at 4096 against 0.39), float64 (its bits: np.mean's sum) and other dtypes:
    np.add.reduce. Products are summed from an array of them: einsum's two-operand sum
    chains its fused multiply-adds, less accurate (0.53 ulp mean at 128)."""
    if a.dtype == _F32 and a.shape[1] <= _EINSUM_ROW:
        return np.einsum("ij->i", a).reshape(-1, 1)
    return np.add.reduce(a, axis=1, keepdims=True)


def _ln_rows(x: np.ndarray, k: int, *params) -> bool:
    """Whether layer_norm_fwd / _bwd take the row path: x (and g) float32/float64,
    C-contiguous, non-empty, and each given w / b of x's dtype."""
    return (x.dtype in _BN_DTYPES and x.size > 0 and x.flags.c_contiguous
            and all(p is None or p.dtype == x.dtype for p in params))


def layer_norm_fwd(x: np.ndarray, k: int, w, b, eps: float) -> tuple:
    """(y, mean, rstd): xhat = (x - mean) * rstd, rstd = 1/sqrt(var + eps) (biased var),
    y = xhat * w + b; mean and rstd keep dims ([..., 1, ..., 1]). The mean is refined once
    by the mean of x - mean (so a constant row's mean is that constant, its xhat 0, as
    PyTorch's: sum / n of [1e30] * 3 is off by an ulp, and xhat read -1)."""
    dt = x.dtype
    xf = _up(x)
    if _ln_rows(xf, k, w, b):
        return _ln_fwd_rows(xf, k, w, b, eps, dt)
    axes = tuple(range(x.ndim - k, x.ndim))
    with quiet():
        if x.size == 0:
            shape = x.shape[:x.ndim - k] + (1,) * k
            mean = np.zeros(shape, xf.dtype)
            rstd = np.zeros(shape, xf.dtype)
            centered = xf - mean
        else:
            mean = np.mean(xf, axis=axes, keepdims=True)
            centered = xf - mean
            shift = np.mean(centered, axis=axes, keepdims=True)
            centered -= shift
            mean = mean + shift
            var = np.mean(np.square(centered), axis=axes, keepdims=True)
            rstd = 1.0 / np.sqrt(var + eps)
        y = np.multiply(centered, rstd, order="C")  # C-contiguous, as PyTorch's result
        if w is not None:
            y = y * _up(w)
        if b is not None:
            y = y + _up(b)
    return _down(y, dt), np.asarray(mean), np.asarray(rstd, dtype=xf.dtype)


def _ln_fwd_rows(x: np.ndarray, k: int, w, b, eps: float, dt: np.dtype) -> tuple:
    """layer_norm_fwd on the row path: x (R, N); mean, centering, its refinement, var,
    rstd as the general path (sums / N: np.mean's division), y built in x - mean's buffer
    (y * rstd, * w, + b in place: the general path's products in its order)."""
    n = math.prod(x.shape[x.ndim - k:])
    x2 = x.reshape(-1, n)
    with quiet():
        mean = _row_sum(x2) / n
        y = np.subtract(x2, mean)
        shift = _row_sum(y) / n
        np.subtract(y, shift, out=y)
        mean = mean + shift
        var = _row_sum(np.square(y)) / n
        rstd = 1.0 / np.sqrt(var + eps)
        np.multiply(y, rstd, out=y)
        if w is not None:
            np.multiply(y, w.reshape(n), out=y)
        if b is not None:
            np.add(y, b.reshape(n), out=y)
    stat = x.shape[:x.ndim - k] + (1,) * k
    return _down(y.reshape(x.shape), dt), mean.reshape(stat), rstd.reshape(stat)


def layer_norm_bwd(g: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, w,
                   k: int, need_w: bool, need_b: bool) -> tuple:
    """(dx, dw, db):  gw = g * w (w = 1 when None),
    dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)),
    dw = sum_batch(g * xhat) (None unless need_w),  db = sum_batch(g) (None unless need_b)."""
    dt = x.dtype
    gf, xf = _up(g), _up(x)
    axes = tuple(range(x.ndim - k, x.ndim))
    batch = tuple(range(x.ndim - k))
    pdt = w.dtype if w is not None else gf.dtype  # no weight: db in the compute dtype (a half
    # bias then rounds it once; a float32 bias keeps it)
    if _ln_rows(xf, k, w) and gf.dtype == xf.dtype and gf.flags.c_contiguous \
            and gf.shape == xf.shape:
        return _ln_bwd_rows(gf, xf, mean, rstd, w, k, need_w, need_b, dt, pdt)
    with quiet():
        xhat = (xf - mean) * rstd
        gw = gf * _up(w) if w is not None else gf
        dw = None
        if x.size == 0:
            dx = np.zeros(x.shape, xf.dtype)
        elif not (_same_layout(xhat, gw) and _same_layout(xhat, gf) and xhat.flags.c_contiguous
                  and gw.dtype == xhat.dtype):
            dx = rstd * (gw - np.mean(gw, axis=axes, keepdims=True)
                         - xhat * np.mean(gw * xhat, axis=axes, keepdims=True))
        else:  # the same steps in two buffers: xhat, then xhat * mean(gw xhat), and dx
            t = gw * xhat
            m2 = np.mean(t, axis=axes, keepdims=True)
            if need_w:  # sum_batch(g * xhat): t itself when w is None
                dw = _down(float_sum(t if w is None else np.multiply(gf, xhat, out=t),
                                     batch), pdt)
            del t
            np.multiply(xhat, m2, out=xhat)
            dx = np.subtract(gw, np.mean(gw, axis=axes, keepdims=True),
                             out=None if gw is gf else gw)
            np.subtract(dx, xhat, out=dx)
            np.multiply(rstd, dx, out=dx)
            xhat = None
        if need_w and dw is None:
            dw = _down(float_sum(gf * xhat, batch), pdt)
        db = _down(float_sum(gf, batch), pdt) if need_b else None
    return _down(dx, dt), dw, db


def _ln_bwd_rows(g: np.ndarray, x: np.ndarray, mean: np.ndarray, rstd: np.ndarray, w,
                 k: int, need_w: bool, need_b: bool, dt: np.dtype, pdt: np.dtype) -> tuple:
    """layer_norm_bwd on the row path, g and x (R, N) C-contiguous of one dtype: xhat in
    its own buffer, dx in gw's (a new one when w is None); the sums over the rows by
    _row_sum, dw and db by float_sum over x's batch dims (the general path's)."""
    n = math.prod(x.shape[x.ndim - k:])
    batch = tuple(range(x.ndim - k))
    x2, g2 = x.reshape(-1, n), g.reshape(-1, n)
    mean, rstd = mean.reshape(-1, 1), rstd.reshape(-1, 1)
    with quiet():
        xhat = np.subtract(x2, mean)
        np.multiply(xhat, rstd, out=xhat)
        gw = g2 * w.reshape(n) if w is not None else g2
        t = gw * xhat
        m2 = _row_sum(t) / n
        dw = None
        if need_w:  # sum_batch(g * xhat) (t itself when w is None), in x's shape: float_sum's
            # order over the batch dims
            dw = _down(float_sum((t if w is None else np.multiply(g2, xhat, out=t))
                                 .reshape(x.shape), batch), pdt)
        del t
        np.multiply(xhat, m2, out=xhat)
        dx = np.subtract(gw, _row_sum(gw) / n, out=None if gw is g2 else gw)
        np.subtract(dx, xhat, out=dx)
        np.multiply(rstd, dx, out=dx)
        db = _down(float_sum(g, batch), pdt) if need_b else None
    return _down(dx.reshape(x.shape), dt), dw, db


# ------------------------------------------------------------------ batch norm
# x: (N, C, *) with per-channel statistics over the other dims; w, b, mean, invstd: (C,).
# CPU only (not in __all__): tgrad.nn._norm.BatchNorm composes tgrad ops on other devices.
def _bn_axes(x: np.ndarray) -> tuple:
    """(the reduced axes, the (C, 1, ...) broadcast shape, values per channel)."""
    c = x.shape[1]
    return ((0,) + tuple(range(2, x.ndim)), (c,) + (1,) * (x.ndim - 2),
            x.size // c if c else 0)


def _bn_sum(a: np.ndarray, axes: tuple) -> np.ndarray:
    """float_sum of a (N, C, *) over ``axes`` (all but C): a C-contiguous a of 4+ dims as
    its (N, C, S) view, reduced over (0, 2) in one NumPy pass (a pairwise sum over each
    plane's S values, a running or blocked one over N), where the per-axis cascade over
    (0, 2, 3, ...) made one pass per axis over the whole array (1.5-3x slower on a
    (32, 16, 32, 32) batch; as accurate: its error bound ~log2 S + N ulps where that was
    log2 W + H + N)."""
    if a.ndim > 3 and a.flags.c_contiguous:
        return float_sum(a.reshape(a.shape[0], a.shape[1], math.prod(a.shape[2:])), (0, 2))
    return float_sum(a, axes)


# Blocked path (``_bn_blocked``: a C-contiguous float32/float64 x of 3+ dims, as its
# (N, C, S) view; float32 with N <= _MAX_RUNNING, where _bn_sum is one np.add.reduce over
# (0, 2)). The full-size temporaries (the forward's squares; the backward's g (x - mean))
# are made one block of samples at a time in a small scratch array, so each call
# allocates only its output. Each per-channel sum is the (n, c) plane sums (np.add.reduce
# over S: the pairwise sum the one-pass reduction runs on each plane) then their sum over
# n (running, in n order: the one-pass reduction's outer loop): the same additions in the
# same order. A per-channel operand v (C,) is its "plane" np.repeat(v, S) as (C, S): x
# (nb, C, S) against it is one inner loop of C S elements per sample (NumPy merges C and
# S), where v (C, 1) made one of S per (n, c), 1.6x slower on the CNN's planes (S = 256,
# 1024); planes over _BN_BLOCK / 2 elements keep v (C, 1). The elementwise operations and
# their operand order are the unblocked ones, so the results are bit-identical
# (tests/test_nn_batch_norm_cpu_fast.py), but for which NaN's sign and payload an
# operation on two NaNs returns (NumPy's loops choose differently by row length).
_BN_BLOCK = 1 << 17  # elements per block of samples (at least one sample)


def _bn_blocked(*arrays: np.ndarray) -> bool:
    """Whether batch_norm_fwd / _bwd take the blocked path on these (N, C, *) arrays."""
    x = arrays[0]
    if x.ndim < 3 or x.size == 0 or x.shape[1] < 2 or x.dtype not in _BN_DTYPES:
        return False  # (C = 1: NumPy reduces (N, 1, S) as one run of N S)
    if x.dtype == _F32 and x.shape[0] > _MAX_RUNNING:  # (float_sum cascades over N there)
        return False
    return all(a.flags.c_contiguous and a.dtype == x.dtype and a.shape == x.shape
               for a in arrays)


def _bn_spans(x: np.ndarray) -> tuple:
    """(spans [(n0, n1), ...] covering the N samples of x (N, C, *), a scratch array
    (block, C, S) of x's dtype for the largest span, taken from the CPU workspace: give it
    back with _bn_give)."""
    n, c = x.shape[:2]
    per = x.size // n
    block = min(n, max(1, _BN_BLOCK // per))
    return ([(i, min(i + block, n)) for i in range(0, n, block)],
            _WORKSPACE.take(_BN_TAG, (block, c, per // c), x.dtype))


def _bn_give(scratch: np.ndarray) -> None:
    """Hand _bn_spans's scratch back to the workspace (its caller drops it). Kept, it is
    not freed and allocated again every call: the CNN step's page faults were the same
    or fewer in every heap layout measured (docs/performance.md, cnn2 session)."""
    _WORKSPACE.give(_BN_TAG, scratch)


_BN_TAG = "batch_norm"


def _planes(x: np.ndarray, *vs: np.ndarray) -> tuple:
    """Each per-channel (C,) v as an operand against blocks (nb, C, S) of x (N, C, *): its
    plane np.repeat(v, S) as (C, S) (NumPy then runs one inner loop of C S a sample)
    while a plane is at most _BN_BLOCK / 2 elements; else v as (C, 1) (rows of S, long
    enough: no plane as large as a sample)."""
    c = x.shape[1]
    s = x.size // (x.shape[0] * c)
    if c * s > _BN_BLOCK // 2:
        return tuple(v[:, None] for v in vs)
    return tuple(np.repeat(v, s).reshape(c, s) for v in vs)


def _plane_sums(t: np.ndarray, out: np.ndarray) -> None:
    """out (nb, C) = the plane sums of t (nb, C, S) (pairwise over each plane's S)."""
    np.add.reduce(t, axis=2, out=out)


def batch_norm_fwd(x: np.ndarray, w, b, mean, var, eps: float) -> tuple:
    """(y, mean, var, invstd): y = (x - mean) * invstd * w + b, invstd = 1/sqrt(var + eps);
    mean / var None: the batch's (biased var, two passes reduced over the axes in place:
    no channel-major copy). One output buffer and one temporary (the squares; one block
    of them on the blocked path)."""
    dt = x.dtype
    xf = _up(x)
    axes, shape, m = _bn_axes(x)
    with quiet():
        if mean is None:
            mean = _bn_sum(xf, axes) / xf.dtype.type(m)
            if _bn_blocked(xf):
                return _bn_fwd_blocked(xf, w, b, mean, m, eps, dt)
            y = np.subtract(xf, mean.reshape(shape), order="C")  # (PyTorch's layout)
            sq = np.square(y)
            var = _bn_sum(sq, axes) / xf.dtype.type(m)
            del sq
        else:
            mean, var = mean.astype(xf.dtype), var.astype(xf.dtype)
            y = np.subtract(xf, mean.reshape(shape), order="C")
        invstd = 1.0 / np.sqrt(var + xf.dtype.type(eps))
        scale = invstd if w is None else invstd * _up(w).astype(xf.dtype)
        np.multiply(y, scale.reshape(shape), out=y)
        if b is not None:
            np.add(y, _up(b).astype(xf.dtype).reshape(shape), out=y)
    return _down(y, dt), mean, var, invstd


def _bn_fwd_blocked(x: np.ndarray, w, b, mean: np.ndarray, m: int, eps: float,
                    dt: np.dtype) -> tuple:
    """batch_norm_fwd's training path, blocked (x float32/64 C-contiguous, mean its
    batch mean): y = x - mean with the squares' plane sums one block at a time (the
    squares in the scratch), var = their sum / M; then y = y scale (+ b) in place."""
    n, c = x.shape[:2]
    x2 = x.reshape(n, c, -1)
    y = np.empty(x.shape, x.dtype)
    y2 = y.reshape(x2.shape)
    spans, sq = _bn_spans(x)
    parts = np.empty((n, c), x.dtype)  # (N, C) plane sums
    (mp,) = _planes(x, mean)
    for n0, n1 in spans:
        yb, sqb = y2[n0:n1], sq[:n1 - n0]
        np.subtract(x2[n0:n1], mp, out=yb)
        np.square(yb, out=sqb)
        _plane_sums(sqb, parts[n0:n1])
    _bn_give(sq)  # (its views here are not used after)
    var = np.add.reduce(parts, axis=0) / x.dtype.type(m)
    invstd = 1.0 / np.sqrt(var + x.dtype.type(eps))
    scale = invstd if w is None else invstd * _up(w).astype(x.dtype)
    np.multiply(y2, _planes(x, scale)[0], out=y2)
    if b is not None:
        np.add(y2, _planes(x, _up(b).astype(x.dtype))[0], out=y2)
    return _down(y, dt), mean, var, invstd


def batch_norm_bwd(g: np.ndarray, x: np.ndarray, w, mean, invstd, training: bool,
                   need_x: bool, need_w: bool, need_b: bool) -> tuple:
    """(dx, dw, db) with xc = x - mean, M values per channel, scale = invstd * w:
    training dx = scale (g - sum(g)/M) - xc scale invstd^2 sum(g xc)/M; eval dx = g scale;
    dw = invstd sum(g xc); db = sum(g) (sums over the non-channel axes). Two full-size
    buffers (xc, and dx, which first holds g xc); on the blocked path only dx (xc and g xc
    one block at a time in a scratch array, xc recomputed for dx)."""
    dt = x.dtype
    gf, xf = _up(g), _up(x)
    axes, shape, m = _bn_axes(x)
    pdt = w.dtype if w is not None else gf.dtype  # (as layer_norm_bwd)
    training = training and need_x
    if _bn_blocked(xf, gf):
        dx, dw, db = _bn_bwd_blocked(gf, xf, w, mean, invstd, training, need_x, need_w,
                                     need_b, pdt)
        return None if dx is None else _down(dx, dt), dw, db
    with quiet():
        scale = invstd if w is None else invstd * _up(w).astype(xf.dtype)
        sum_g = _bn_sum(gf, axes) if need_b or training else None
        dx = sum_gxc = None
        if need_w or training:
            xc = np.subtract(xf, mean.reshape(shape))
            t = np.multiply(gf, xc)
            sum_gxc = _bn_sum(t, axes)
            if training:  # t becomes dx
                k = scale * invstd * invstd * sum_gxc / xf.dtype.type(m)
                np.subtract(gf, (sum_g / xf.dtype.type(m)).reshape(shape), out=t)
                np.multiply(t, scale.reshape(shape), out=t)
                np.multiply(xc, k.reshape(shape), out=xc)
                dx = np.subtract(t, xc, out=t)
            del xc, t
        if need_x and dx is None:
            dx = np.multiply(gf, scale.reshape(shape))
    dw = _down(sum_gxc * invstd, pdt) if need_w and w is not None else None
    db = _down(sum_g, pdt) if need_b else None
    return None if dx is None else _down(dx, dt), dw, db


def _bn_bwd_blocked(g: np.ndarray, x: np.ndarray, w, mean, invstd, training: bool,
                    need_x: bool, need_w: bool, need_b: bool, pdt) -> tuple:
    """batch_norm_bwd on the blocked path (g, x: one shape, C-contiguous, float32/64): the
    same elementwise operations, in the same operand order, block by block of samples.
    Pass 1 per block: the plane sums of g, xc = x - mean (into dx, the output, when
    training; else the scratch), g xc in the scratch and its plane sums. Pass 2 (training)
    per block, in place in dx: dx = (g - sum(g)/M) scale - xc k, k = scale invstd^2
    sum(g xc) / M, (g - sum(g)/M) scale in the scratch."""
    n, c = x.shape[:2]
    g2, x2 = g.reshape(n, c, -1), x.reshape(n, c, -1)
    spans, tmp = _bn_spans(x)
    m = x.dtype.type(x.size // c)
    want_g, want_gxc = need_b or training, need_w or training
    dx = np.empty(x.shape, x.dtype) if training else None
    xc2 = dx.reshape(x2.shape) if training else None
    with quiet():
        scale = invstd if w is None else invstd * _up(w).astype(x.dtype)
        parts_g = np.empty((n, c), x.dtype) if want_g else None
        parts_gxc = np.empty((n, c), x.dtype) if want_gxc else None
        (mp,) = _planes(x, mean) if want_gxc else (None,)
        for n0, n1 in spans:
            if want_g:
                _plane_sums(g2[n0:n1], parts_g[n0:n1])
            if want_gxc:
                t = tmp[:n1 - n0]
                xc = xc2[n0:n1] if training else t
                np.subtract(x2[n0:n1], mp, out=xc)
                np.multiply(g2[n0:n1], xc, out=t)
                _plane_sums(t, parts_gxc[n0:n1])
        sum_g = np.add.reduce(parts_g, axis=0) if want_g else None
        sum_gxc = np.add.reduce(parts_gxc, axis=0) if want_gxc else None
        if training:
            kp, sgp, scp = _planes(x, scale * invstd * invstd * sum_gxc / m, sum_g / m, scale)
            for n0, n1 in spans:
                t, xc = tmp[:n1 - n0], xc2[n0:n1]
                np.subtract(g2[n0:n1], sgp, out=t)
                np.multiply(t, scp, out=t)
                np.multiply(xc, kp, out=xc)
                np.subtract(t, xc, out=xc)
        elif need_x:
            dx = np.empty(x.shape, x.dtype)
            np.multiply(g2, _planes(x, scale)[0], out=dx.reshape(x2.shape))
    _bn_give(tmp)  # (its views here are not used after)
    dw = _down(sum_gxc * invstd, pdt) if need_w and w is not None else None
    db = _down(sum_g, pdt) if need_b else None
    return dx, dw, db


# ------------------------------------------------------------------ activations
_SQRT_HALF = math.sqrt(0.5)


def _cdf(x):
    """Phi(x) = 0.5 (1 + erf(x / sqrt 2)), standard normal CDF, in the array erf returns
    (x's layout; owned, so the callers may write into it). Below x = -2, where 1 + erf
    cancels (all of Phi(-10) = 7.6e-24 was lost: gelu gave 0), ``_lower_tail_cdf``."""
    c = sys.modules["tgrad.backends.numpy"]._erf(np.divide(x, math.sqrt(2.0)))
    if type(c) is not np.ndarray:  # (0-d)
        return _lower_tail_cdf(np.float64(x)).astype(c.dtype) if x < -2.0 else 0.5 * (1.0 + c)
    np.add(c, 1.0, out=c)
    np.multiply(c, 0.5, out=c)
    tail = np.flatnonzero(x < -2.0)  # (C-order positions, as put writes them)
    if tail.size:
        c.put(tail, _lower_tail_cdf(x.take(tail).astype(np.float64)))
    return c


def _lower_tail_cdf(x: np.ndarray) -> np.ndarray:
    """Phi(x) for x < -2 to a few ulps in float64: exp(-x^2 / 2) erfcx(z) / 2, z = -x / sqrt 2
    >= sqrt 2, with erfcx(z) = 1 / (sqrt(pi) (z + 1/2 / (z + 1 / (z + 3/2 / (z + ...)))))
    (the continued fraction, 100 terms from the tail: ~2 eps from z = sqrt 2 up) and x^2 as
    the exact sum p + e of two floats (exp(-p/2) (1 - e/2): no x^2 eps error in the exponent)."""
    x = np.maximum(x, -1e4)  # (Phi underflows to 0 long before; keeps -inf out of x^2)
    z = x * -_SQRT_HALF
    t = np.zeros_like(z)
    for k in range(100, 0, -1):
        t = (0.5 * k) / (z + t)
    p, e = sys.modules["tgrad.backends.numpy"]._two_square(x)
    return np.exp(-0.5 * p) * (1.0 - 0.5 * e) / (2.0 * math.sqrt(math.pi) * (z + t))


def _pdf(x):
    """phi(x) = exp(-0.5 x x) / sqrt(2 pi), standard normal density, in one new array."""
    p = np.multiply(x, -0.5)
    if type(p) is not np.ndarray:  # (0-d)
        return np.exp(p * x) / math.sqrt(2 * math.pi)
    np.multiply(p, x, out=p)
    np.exp(p, out=p)
    return np.divide(p, math.sqrt(2 * math.pi), out=p)


def _same_layout(a, b) -> bool:
    """a and b are arrays of one shape and strides: a product can go into either (out=)
    and has the layout NumPy would give it."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.shape == b.shape
            and a.strides == b.strides)


def _gelu_tanh_t(xf):
    """tanh(sqrt(2/pi) (x + 0.044715 x^3)) in one new array of x's layout (x not 0-d)."""
    u = np.multiply(xf, xf)  # x^3 as x x x: NumPy's float pow runs a slow generic path
    np.multiply(u, xf, out=u)
    np.multiply(_GELU_K, u, out=u)
    np.add(xf, u, out=u)
    np.multiply(_SQRT_2_PI, u, out=u)
    return np.tanh(u, out=u)


# float32 gelu ('none'; halves arrive as float32), in float64 without erf. With h = -x/2,
# b = |h| = |x|/2, e = exp(-x^2/2) = exp(h x), R(a) = Phi(-a) exp(a^2/2) and
# H(a) = (R(a) - a/sqrt(2 pi)) / (a - a0), a0 = 0.75179... (gelu' = Phi + x phi is 0 at -a0):
#   gelu(x)  = relu(x) - |x| e R(|x|)              = e b P_f(b)/Q_f(b) - (h - b)
#   gelu'(x) = (relu(x) - |x| (|x| - a0) e H(|x|)) / x
#            = ((b - h) + e b (b - b0) P_b(b)/Q_b(b)) / x,   b0 = a0/2
# relu(x) = b - h; relu(x)/x and |x| e R/x are Phi's two sides, so no branch is needed.
# b - b0 is exact near the root, where Phi + x phi cancels: gelu' keeps its relative
# precision there. P/Q: rational fits of F = 2 R(2b) (degrees 4/5, relative error 5.9e-9)
# and G = 4 H(2b) (4/4, 8.0e-9) on b in [0, 7.25], |x| <= 14.5 (past it both results are
# below half the least float32 subnormal; the fits stay finite, without poles, for b >= 0),
# made by docs/gen_gelu_coefs.py (P_f is -F's numerator, P_b -G's). Measured on every 97th
# float32 of |x| < 16 (22.7M points): each result within 1 ulp of the float64 path's,
# rounded (1.7% fwd, 1.8% bwd one ulp off); the float32 formula x cdf(x) was 12 ulps off
# near -2, and cdf + x pdf ~1e9 ulps (sign flips) at the root. -0.0 gives -0.0 (e b P_f/Q_f
# is -0.0 and h - b +0.0 there); gelu(+inf) and gelu'(+-0) (0/0) are set afterwards.
_GELU32_FWD = ((-3.0286976643733086, -5.3098665157445355, -4.4397282118877985,
                -1.9690612618069943, -0.3989469091285284),  # P_f (-F's numerator), b^0 ..
               (3.0286976465126783, 10.142971242232468, 14.568115244396099,
                11.37512191035153, 4.936016996896158))  # Q_f, b^0 .. b^4 (monic)
_GELU32_BWD = ((6.376427205245895, 14.440503257771933, 14.474688394270679,
                7.321463585632253, 1.5957785946777312),  # P_b (-G's numerator)
               (2.3968719844531523, 6.701402966335659, 7.594562663657973,
                4.212292286100505))  # Q_b, b^0 .. b^3 (monic)
_GELU32_B0 = 0.7517915246935644574579049 / 2
_GELU32_BLOCK = 1 << 15  # elements per block (6 float64 scratch rows of 256 KiB: ~L2)


def _gelu32_ratio(b: np.ndarray, coefs: tuple, num: np.ndarray, den: np.ndarray) -> None:
    """num = b P(b) / Q(b) (Horner; Q monic one degree above the list), den clobbered."""
    p, q = coefs
    np.multiply(b, p[-1], out=num)
    for c in p[-2::-1]:
        num += c
        num *= b
    np.add(b, q[-1], out=den)
    for c in q[-2::-1]:
        den *= b
        den += c
    np.divide(num, den, out=num)


def _gelu32(x: np.ndarray, g, backward: bool) -> np.ndarray:
    """gelu(x), or g * gelu'(x), of float32 x (g: float32, x's shape, or None), in a new
    array of x's layout, block by block in float64 (the formulas above)."""
    if not x.flags.forc:
        x = x.copy(order="K")
    out = np.empty_like(x)
    if g is not None and (g.shape != x.shape or g.strides != x.strides):
        gk = np.empty_like(x)
        gk[...] = g
        g = gk
    n = x.size
    blk = max(1, min(n, _GELU32_BLOCK))
    scratch = _WORKSPACE.take(_GELU32_TAG, (6, blk), np.dtype(np.float64))
    xf, of = x.ravel(order="K"), out.ravel(order="K")
    gf = None if g is None else g.ravel(order="K")
    for i in range(0, n, blk):
        k = min(blk, n - i)
        xd, h, b, e, t, u = (r[:k] for r in scratch)
        np.copyto(xd, xf[i:i + k])
        np.multiply(xd, -0.5, out=h)
        np.abs(h, out=b)
        np.multiply(h, xd, out=e)  # -x^2/2
        np.exp(e, out=e)
        if not backward:  # e b P_f / Q_f - (h - b)
            _gelu32_ratio(b, _GELU32_FWD, t, u)
            t *= e
            np.subtract(h, b, out=u)
            t -= u
        else:  # g ((b - h) + e b (b - b0) P_b / Q_b) / x
            _gelu32_ratio(b, _GELU32_BWD, t, u)
            t *= e
            np.subtract(b, _GELU32_B0, out=u)
            t *= u
            np.subtract(b, h, out=u)
            t += u
            t /= xd
            t += 0.0  # (-0.0 -> +0.0: gelu' is +0 where it underflows, x < -38.6)
            np.copyto(xd, gf[i:i + k])
            t *= xd
        np.copyto(of[i:i + k], t, casting="same_kind")
    _WORKSPACE.give(_GELU32_TAG, scratch)
    _gelu32_specials(x, g, out, backward)
    return out


def _gelu32_specials(x: np.ndarray, g, out: np.ndarray, backward: bool) -> None:
    """The float64 path's values where the formulas give NaN: gelu(+inf) = +inf;
    gelu'(+-0) = 1/2 (0/0 there). (NaN, gelu(-inf) and gelu'(+-inf) are NaN in both.)"""
    with np.errstate(invalid="ignore"):
        bad = (x == 0) if backward else (x == np.inf)
    if bad.any():
        out[bad] = g[bad] * np.float32(0.5) if backward else np.inf


_GELU32_TAG = "gelu32"


def gelu_fwd(x: np.ndarray, approximate: str) -> np.ndarray:
    """'none': x * Phi(x);  'tanh': 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    dt = x.dtype
    xf = _up(x)
    with quiet():
        if approximate == "tanh" and xf.ndim == 0:
            y = 0.5 * xf * (1.0 + np.tanh(_SQRT_2_PI * (xf + _GELU_K * (xf * xf * xf))))
        elif approximate == "tanh":  # the same steps in two buffers (were five temporaries)
            t = _gelu_tanh_t(xf)
            np.add(t, 1.0, out=t)
            y = np.multiply(np.multiply(0.5, xf), t, out=t)
        elif xf.dtype == _F32:
            y = _gelu32(xf, None, False)
        else:
            c = _cdf(xf)
            y = np.multiply(xf, c, out=c) if _same_layout(c, xf) else xf * c
    return _down(y, dt)


def gelu_bwd(g: np.ndarray, x: np.ndarray, approximate: str) -> np.ndarray:
    """'none': g (Phi + x phi);  'tanh': g (0.5 (1 + t) + 0.5 x (1 - t^2) u'),
    t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3), u' = sqrt(2/pi) (1 + 3 * 0.044715 x^2)."""
    dt = g.dtype
    gf, xf = _up(g), _up(x)
    with quiet():
        if approximate == "tanh" and xf.ndim == 0:
            t = np.tanh(_SQRT_2_PI * (xf + _GELU_K * (xf * xf * xf)))
            du = _SQRT_2_PI * (1.0 + 3.0 * _GELU_K * xf * xf)
            d = 0.5 * (1.0 + t) + 0.5 * xf * (1.0 - t * t) * du
        elif approximate == "tanh":  # the same steps in at most three buffers (were ~six)
            t = _gelu_tanh_t(xf)
            v = np.multiply(t, t)
            np.subtract(1.0, v, out=v)
            r = np.multiply(0.5, xf)
            np.multiply(r, v, out=v)  # 0.5 x (1 - t^2)
            np.multiply(3.0 * _GELU_K, xf, out=r)  # du = sqrt(2/pi) (1 + 3 k x x), in r
            np.multiply(r, xf, out=r)
            np.add(r, 1.0, out=r)
            np.multiply(_SQRT_2_PI, r, out=r)
            np.multiply(v, r, out=v)
            del r
            np.add(t, 1.0, out=t)
            np.multiply(0.5, t, out=t)
            d = np.add(t, v, out=t)  # 0.5 (1 + t) + 0.5 x (1 - t^2) du
            del v
            if _same_layout(d, gf):
                return _down(np.multiply(gf, d, out=d), dt)
        elif xf.dtype == _F32 and gf.dtype == _F32:
            return _down(_gelu32(xf, gf, True), dt)
        else:
            # d = cdf + x pdf, in cdf's and pdf's arrays (the functions' own)
            d, p = _cdf(xf), _pdf(xf)
            if _same_layout(d, p):
                np.multiply(xf, p, out=p)
                d = np.add(d, p, out=d)
            else:
                d = d + xf * p
            del p
            if _same_layout(d, gf):
                return _down(np.multiply(gf, d, out=d), dt)
        return _down(gf * d, dt)  # inf g where d is 0 (x = -inf): NaN, silently


def _sigmoid(x, consume: bool = False):
    """The numpy backend's (stable; a new array of x's layout; ``consume``: x, a float
    ndarray of the caller's own, is overwritten)."""
    return sys.modules["tgrad.backends.numpy"]._sigmoid(x, consume)


def silu_fwd(x: np.ndarray) -> np.ndarray:
    """y = x * sigmoid(x)."""
    dt = x.dtype
    xf = _up(x)
    with quiet():
        s = _sigmoid(xf)
        return _down(np.multiply(xf, s, out=s) if _same_layout(s, xf) else xf * s, dt)


def silu_bwd(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx = g * s (1 + x (1 - s)), s = sigmoid(x)."""
    dt = g.dtype
    gf, xf = _up(g), _up(x)
    with quiet():
        s = _sigmoid(xf)
        if not _same_layout(s, gf):
            return _down(gf * s * (1.0 + xf * (1.0 - s)), dt)
        b = np.subtract(1.0, s, out=np.empty_like(s))  # (1 + x (1 - s)), then (g s) b
        np.multiply(xf, b, out=b)
        np.add(b, 1.0, out=b)
        np.multiply(gf, s, out=s)
        return _down(np.multiply(s, b, out=s), dt)


def softplus_fwd(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    """y = log1p(exp(beta x)) / beta, or x where beta x > threshold (as PyTorch)."""
    dt = x.dtype
    xf = _up(x)
    with quiet():
        bx = xf * beta
        if not _same_layout(bx, xf) or bx.dtype.kind != "f":
            return _down(np.where(bx > threshold, xf, np.logaddexp(0, bx) / beta), dt)
        big = bx > threshold  # then y in bx's buffer, x copied in where beta x > threshold
        if bx.size > _SOFTPLUS_BLOCK and bx.flags.forc:
            for zb, _ in flat_blocks(bx, bx, _SOFTPLUS_BLOCK):
                _softplus_into(zb)
        else:
            _softplus_into(bx)
        y = np.divide(bx, beta, out=bx)
        np.copyto(y, xf, where=big)
    return _down(y, dt)


# softplus's float64 temporaries go block by block: two of this many elements at a time
# (whole-array ones made the forward's peak 5.25x its output; tests/test_bench.py bounds it)
_SOFTPLUS_BLOCK = 1 << 13


def _softplus_into(z: np.ndarray) -> None:
    """z <- log(1 + e^z) = max(z, 0) + log1p(exp(-|z|)) in place (NumPy's logaddexp(0, z)
    has a ~4x slower loop); a float32 z is worked in float64 and rounded once (0.5 ulp;
    float32 arithmetic gave 1.4)."""
    w = z.astype(np.float64) if z.dtype.itemsize <= 4 else z
    t = np.abs(w)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    np.maximum(w, 0.0, out=w)
    np.add(w, t, out=w)
    if w is not z:
        np.copyto(z, w, casting="same_kind")


def softplus_bwd(g: np.ndarray, x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    """dx = g * sigmoid(beta x), or g where beta x > threshold."""
    dt = g.dtype
    gf, xf = _up(g), _up(x)
    with quiet():
        bx = xf * beta
        if not (_same_layout(bx, gf) and bx.dtype == np.result_type(gf, bx)
                and bx.dtype.kind == "f"):
            return _down(np.where(bx > threshold, gf, gf * _sigmoid(bx)), dt)
        big = bx > threshold  # g s in sigmoid's buffer, g copied in where beta x > threshold
        s = _sigmoid(bx, consume=True)  # (bx is overwritten)
        del bx
        np.multiply(gf, s, out=s)
        np.copyto(s, gf, where=big)
        return _down(s, dt)


# ------------------------------------------------------------------ dropout
# The mask is regenerated in backward, never stored (as on the GPU, where state is the
# Philox (seed, offset)). On the CPU the state is one 64-bit key drawn from tgrad's CPU
# generator (tgrad.backends.numpy._rng, seeded by tgrad.manual_seed); the mask is
#   b = SFC64(key).random_raw(ceil(n / 2)) read as n uint32 words (row-major logical order)
#   keep_i = b_i >= ceil(p 2^32), i.e. u_i >= p for the uniform u_i = b_i / 2^32
# (none kept for p = 1). Forward and backward rebuild the same words from the key, so the
# backward reads no saved mask and costs one draw of 4 bytes per element (temporary memory
# while it runs; nothing kept between forward and backward). SFC64's raw words are ~3.5x
# cheaper than Philox's float64 uniforms (0.11 against 0.40 ms for 131k elements).
_TWO_32 = 1 << 32


def _keep(shape: tuple, p: float, key: int) -> np.ndarray:
    n = math.prod(shape)
    threshold = math.ceil(p * _TWO_32)
    if threshold >= _TWO_32:
        return np.zeros(shape, bool)
    words = np.random.SFC64(key).random_raw((n + 1) // 2).view(np.uint32)[:n]
    return np.greater_equal(words, np.uint32(threshold)).reshape(shape)


def _dropout_apply(x: np.ndarray, p: float, key: int) -> np.ndarray:
    """x * (m / (1 - p)): multiplicative like PyTorch, so NaN/inf stay NaN where dropped
    (p == 1 gives x * 0)."""
    dt = x.dtype
    xf = _up(x)
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    with np.errstate(invalid="ignore"):
        return _down(xf * (_keep(x.shape, p, key) * np.asarray(scale, xf.dtype)), dt)


def dropout_fwd(x: np.ndarray, p: float) -> tuple:
    """(y, state): y = x / (1 - p) where u >= p else 0; state = the key of u (see above).
    Every call draws a fresh key from tgrad's generator, so successive calls differ and a
    tgrad.manual_seed replays them."""
    key = int(sys.modules["tgrad.backends.numpy"]._rng.integers(0, 2**63))
    return _dropout_apply(x, p, key), key


def dropout_bwd(g: np.ndarray, p: float, state: int) -> np.ndarray:
    """dx = g / (1 - p) where u >= p else 0, with the forward's u regenerated from state."""
    return _dropout_apply(g, p, state)
