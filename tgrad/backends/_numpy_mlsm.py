"""CPU forward/backward of multilabel_soft_margin_loss's per-row loss in one node
(``tgrad.nn._losses_extra._MultilabelSoftMargin``). Not backend primitives: the op calls
them only for CPU float32/float64 arrays.

Shapes: x (..., C); y x's dtype, broadcastable to x; w None or (C,)-broadcastable, x's dtype.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_sum import float_sum


def mlsm_rows_fwd(x: np.ndarray, y: np.ndarray, w) -> np.ndarray:
    """rows = sum_c w_c l_c / C over the last dim, l = -(y logsigmoid(x) + (1 - y)
    logsigmoid(-x)): the composite's NumPy steps (bit for bit), with log1p(exp(-|x|)),
    which both logsigmoids share, computed once: logsigmoid(+-x) = 0 - softplus(-+x),
    softplus(z) = max(z, 0) + log1p(exp(-|z|)) in float64, rounded once to x's dtype."""
    dt = x.dtype
    with np.errstate(all="ignore"):
        x64 = x.astype(np.float64)  # (a copy also for float64: worked in place below)
        lg = np.abs(x64)
        np.negative(lg, out=lg)
        np.exp(lg, out=lg)
        np.log1p(lg, out=lg)
        sp_pos = np.maximum(x64, 0.0)  # softplus(x): logsigmoid(-x) = 0 - it
        np.add(sp_pos, lg, out=sp_pos)
        np.negative(x64, out=x64)  # softplus(-x): logsigmoid(x) = 0 - it
        np.maximum(x64, 0.0, out=x64)
        np.add(x64, lg, out=x64)
        del lg
        ls_x = np.subtract(dt.type(0), x64.astype(dt, copy=False))
        ls_nx = np.subtract(dt.type(0), sp_pos.astype(dt, copy=False))
        term = np.add(np.multiply(y, ls_x), np.multiply(np.subtract(dt.type(1), y), ls_nx))
        loss = np.negative(term, out=term) if term.shape == x.shape else np.negative(term)
        if w is not None:
            loss = np.multiply(loss, w)
        rows = float_sum(loss, loss.ndim - 1)
        return np.asarray(np.divide(rows, dt.type(x.shape[-1])), dt)


def mlsm_rows_bwd(g: np.ndarray, x: np.ndarray, y: np.ndarray, w) -> np.ndarray:
    """dx = g_row / C w_c ((1 - y) sigmoid(x) - y sigmoid(-x)) (d l / dx, = sigmoid(x) - y
    but kept as the two terms: no cancellation where sigmoid(x) rounds to y), over one
    denominator: sigmoid(+-x) = max(e, +-sign x) / (1 + e), e = exp(-|x|) (the backend's
    branch-free sigmoid: a masked select is ~10x slower); float64 for a float32 x, rounded
    once at the end."""
    dt = x.dtype
    with np.errstate(all="ignore"):
        e = np.abs(x, dtype=np.float64)
        sg = np.sign(x, dtype=np.float64)
        np.negative(e, out=e)
        np.exp(e, out=e)
        num_p = np.maximum(e, sg)  # (1 + e) sigmoid(x)
        np.negative(sg, out=sg)
        num_n = np.maximum(e, sg, out=sg)  # (1 + e) sigmoid(-x)
        np.add(e, 1.0, out=e)
        np.multiply(num_p, np.subtract(1.0, y, dtype=np.float64), out=num_p)
        np.multiply(num_n, y, out=num_n)
        np.subtract(num_p, num_n, out=num_p)
        np.divide(num_p, e, out=num_p)
        c = np.expand_dims(np.asarray(g, np.float64) / x.shape[-1], -1)
        np.multiply(num_p, c, out=num_p)
        if w is not None:
            np.multiply(num_p, w, out=num_p)
        return num_p.astype(dt, copy=False)


def mlsm_rows_bwd_target(g: np.ndarray, x: np.ndarray, w) -> np.ndarray:
    """dy = -g_row / C w_c x: d l / dy = -(logsigmoid(x) - logsigmoid(-x)) = -x."""
    with np.errstate(all="ignore"):
        c = np.expand_dims(np.negative(g) / x.dtype.type(x.shape[-1]), -1)
        if w is not None:
            c = c * w
        return np.multiply(c, x).astype(x.dtype, copy=False)
