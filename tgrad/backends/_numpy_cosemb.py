"""CPU forward/backward of cosine_embedding_loss in one node
(``tgrad.nn._losses_extra._CosineEmbedding``). Not backend primitives: the op calls them
only for CPU float32/float64 arrays.

Shapes: x1, x2 (N, D) (or (D,)), one shape and dtype; y (N,) (or ()), any real dtype
(only compared with +-1). The row statistics (N,) (or ()) are kept for the backward.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_nn import _EINSUM_ROW
from tgrad.backends._numpy_sum import float_sum
from tgrad.backends._quiet import quiet

_F32 = np.dtype(np.float32)
COS_EPS = 1e-12  # PyTorch's EPSILON added to both squared norms


def _row_sum(a: np.ndarray) -> np.ndarray:
    """a's sums over the last dim (an array, also 0-d). float32 rows of <= 128 (C-contiguous):
    np.einsum, as _numpy_nn._row_sum (a few SIMD accumulators: as accurate as
    np.add.reduce's pairwise sum at these lengths, 3x faster; not its bits); others
    float_sum, the composite's ``.sum(-1)`` (its bits)."""
    if a.dtype == _F32 and a.shape[-1] <= _EINSUM_ROW and a.flags.c_contiguous:
        return np.asarray(np.einsum("...i->...", a))
    return np.asarray(float_sum(a, a.ndim - 1))


def cos_emb_fwd(x1: np.ndarray, x2: np.ndarray, y: np.ndarray, margin: float,
                reduction: str) -> tuple:
    """(loss, (cos, q1, q2, den)): the composite's NumPy steps (bit for bit but for
    _row_sum's float32 sums):
    q_i = sum(x_i^2) + 1e-12, den = sqrt(q1 q2), cos = sum(x1 x2) / den (all in x's dtype),
    l = 1 - cos where y == 1, max(cos - margin, 0) where y == -1, else 0; reduced
    ('mean': float_sum / count in float64, as the backend's mean; empty: NaN)."""
    dt = x1.dtype
    one, zero = dt.type(1), dt.type(0)
    with quiet():
        t = np.multiply(x1, x2)
        p = _row_sum(t)
        q1 = _row_sum(np.multiply(x1, x1, out=t)) + dt.type(COS_EPS)
        q2 = _row_sum(np.multiply(x2, x2, out=t)) + dt.type(COS_EPS)
        den = np.sqrt(q1 * q2)
        cos = np.asarray(p / den)
        loss = np.where(y == 1, one - cos, zero)
        loss += np.where(y == -1, np.maximum(cos - dt.type(margin), zero), zero)
        if reduction == "sum":
            loss = np.asarray(float_sum(loss, None), dt)
        elif reduction == "mean":
            n = loss.size
            loss = np.asarray(dt.type(float(float_sum(loss, None)) / n) if n else
                              dt.type(np.nan))
    return loss, (cos, q1, q2, den)


def cos_emb_grad_cos(g: np.ndarray, y: np.ndarray, cos: np.ndarray, margin: float,
                     reduction: str) -> np.ndarray:
    """dl/dcos times the incoming gradient, per row (float64): G = g ('none', 'sum') or
    g / N ('mean'); -G where y == 1, G where y == -1 and cos - margin > 0 (tgrad's clamp:
    0 at the bound and for NaN), else 0."""
    g64 = np.asarray(g, np.float64)
    if reduction == "mean":
        g64 = g64 / max(cos.size, 1)
    dt = cos.dtype
    with quiet():
        pos = np.asarray(y == 1)
        neg = np.asarray((y == -1) & (cos - dt.type(margin) > 0))
        return np.where(pos, -g64, np.where(neg, g64, 0.0))


def cos_emb_bwd(gc: np.ndarray, x1: np.ndarray, x2: np.ndarray, stats: tuple,
                need1: bool, need2: bool) -> tuple:
    """(dx1, dx2) (None where not needed) from gc = dl/dcos (N,) (float64):
    d cos / d x1 = x2 / den - cos x1 / q1, d cos / d x2 = x1 / den - cos x2 / q2
    (cos = p / sqrt(q1 q2), d q_i / d x_i = 2 x_i). The per-row coefficients in float64,
    rounded to x's dtype; then two products and a sum per element in x's dtype (the
    composite's roundings, in another order)."""
    cos, q1, q2, den = stats
    dt = x1.dtype
    with quiet():
        c_other = np.expand_dims((gc / den).astype(dt), -1)  # (N, 1): gc / den
        gcc = gc * cos
        dx1 = dx2 = None
        tmp = None
        if need1:
            dx1 = np.multiply(x1, np.expand_dims((-gcc / q1).astype(dt), -1))
            tmp = np.multiply(x2, c_other)
            dx1 += tmp
        if need2:
            dx2 = np.multiply(x2, np.expand_dims((-gcc / q2).astype(dt), -1))
            tmp = np.multiply(x1, c_other, out=tmp)
            dx2 += tmp
    return dx1, dx2
