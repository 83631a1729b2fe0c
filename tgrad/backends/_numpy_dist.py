"""CPU (NumPy) paths of cosine_similarity and of the Euclidean cdist / pdist (not backend
primitives: tgrad/nn/_composite.py and tgrad/ops/distances.py call them for CPU tensors of
float32 / float64; other devices run the tgrad-op composites).

cosine_similarity (``cosine_fwd`` / ``cosine_bwd``): the steps of _composite.py's
``_unit_or_scaled`` on the arrays, row by row along the last axis (the caller moves ``dim``
there): s = max |x| (1 where 0 or not finite), u = x / s, nu = sqrt(sum u^2) (the norm's
sum; u * u is |u| * |u| bit for bit), small = s nu < eps, y = u / nu, or where small
x / (nx + (eps - nx)) with nx = s nu; cos = sum(y1 y2). The same operations on the same
values: bit-identical to the composite for C-contiguous rows. Backward (closed form of the
composite's chain, the clamp not differentiated), per row, g broadcast over the last axis:
    dx1 = g / nu1 / s1 (y2 - cos y1)                     (large rows)
    dx1 = g / (nx1 + (eps - nx1)) (y2 - cos x1/|x1|)     (small rows; x1/|x1| = 0 at 0)
and the same with 1 and 2 swapped (a few ulp from the composite's rounding order).

Euclidean distances of float32 rows (``euclid_f32``): d^2 = |a|^2 + |b|^2 - 2 a.b in
float64 (one GEMM), accepted per pair only where a rigorous bound shows it is within a
relative 2^-30 of the exact d^2; the other pairs (near-duplicates, zero distances, huge
norms against small distances, non-finite values) are recomputed from their float64
differences. See ``_accept`` for the bound. The result is faithfully rounded (error
< 0.51 ulp of the exact distance of the float32 inputs), where the float32 differences'
norm (the former path, still the float64 one) was off by a few ulp and overflowed or
underflowed in the squares (|d| > 1.8e19 or < 1e-19 in float32).
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_sum import float_sum

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


# ------------------------------------------------------------------ cosine_similarity
def _unit(x: np.ndarray, eps: float):
    """x (..., D), D > 0, float32/float64, C-contiguous: (y, s, nu, small, den) along the
    last axis (module docstring): s, nu (..., 1); small (..., 1) bool or None when no row is
    small; den the small rows' divisor nx + (eps - nx) (None with small)."""
    one = x.dtype.type(1)
    # max |x| by np.fmax.reduce (1.6x np.max's time on rows of 128): it skips NaN, where
    # the composite's amax gives NaN and then s = 1; the row's y is NaN either way (u has
    # the NaN, so nu and u / nu are NaN, and s nu < eps is False), so the values agree
    s = np.fmax.reduce(np.abs(x), axis=-1, keepdims=True)
    s = np.where((s > 0) & (s < np.inf), s, one)
    u = np.true_divide(x, s)
    nu = np.sqrt(float_sum(np.multiply(u, u), -1, True))
    small = np.less(np.multiply(s, nu), eps)  # (eps: a weak Python float, x's dtype)
    if not small.any():
        return np.true_divide(u, nu, out=u), s, nu, None, None
    nx = np.multiply(s, np.where(small, nu, x.dtype.type(0)))
    den = np.add(nx, np.where(small, np.subtract(eps, nx), np.subtract(1.0, nx)))
    y = np.where(small, np.true_divide(x, den), np.true_divide(u, np.where(small, one, nu)))
    return y, s, nu, small, den


def cosine_fwd(x1: np.ndarray, x2: np.ndarray, eps: float, save: bool):
    """cos = sum(y1 y2) over the last axis of x1, x2 (..., D) (broadcast over the leading
    axes; D equal, > 0). Returns (cos, saved): saved is what cosine_bwd needs (None unless
    ``save``)."""
    with np.errstate(all="ignore"):
        p1, p2 = _unit(x1, eps), _unit(x2, eps)
        prod = np.multiply(p1[0], p2[0])
        cos = float_sum(prod, -1, False, prod.dtype)
    return cos, ((x1, p1), (x2, p2), cos) if save else None


def _hat(x: np.ndarray, part) -> np.ndarray:
    """x / |x| per row: y itself in the large rows, u / nu in the small ones (0 at nu = 0,
    where the norm's gradient is 0)."""
    y, s, nu, small, _ = part
    if small is None:
        return y
    zero = nu == 0
    u = np.true_divide(x, s)
    return np.where(small, np.where(zero, x.dtype.type(0), u / np.where(zero, 1, nu)), y)


def _rows_factor(g: np.ndarray, part) -> np.ndarray:
    """g / nu / s (large rows), g / den (small rows): g (..., 1) broadcast with the rows."""
    _, s, nu, small, den = part
    big = np.true_divide(np.true_divide(g, nu), s)
    return big if small is None else np.where(small, np.true_divide(g, den), big)


def cosine_bwd(g: np.ndarray, saved, need1: bool, need2: bool):
    """(dx1, dx2) of cosine_fwd, each of the broadcast (..., D) shape (None where not
    needed): dx1 = g / D1 (y2 - cos x1/|x1|) (module docstring)."""
    (x1, p1), (x2, p2), cos = saved
    gk, ck = g[..., None], cos[..., None]
    out = []
    with np.errstate(all="ignore"):
        for need, x, p, q in ((need1, x1, p1, p2), (need2, x2, p2, p1)):
            if not need:
                out.append(None)
                continue
            # (ck carries the broadcast leading axes: t has the full broadcast shape)
            t = np.multiply(ck, _hat(x, p))
            np.subtract(q[0], t, out=t)
            out.append(np.multiply(_rows_factor(gk, p), t, out=t))
    return out[0], out[1]
