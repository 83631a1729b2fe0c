"""CPU (NumPy) paths of cosine_similarity and of the Euclidean cdist / pdist (not backend
primitives: tgrad/nn/_composite.py and tgrad/ops/distances.py call them for CPU tensors of
float32 / float64; other devices run the tgrad-op composites).

cosine_similarity (``cosine_fwd`` / ``cosine_bwd``): the steps of _composite.py's
``_unit_or_scaled`` on the arrays, row by row along ``dim`` (axis): s = max |x| (1 where
0 or not finite), u = x / s, nu = sqrt(sum u^2) (the norm's sum; u * u is |u| * |u| bit
for bit), small = s nu < eps, y = u / nu, or where small x / (nx + (eps - nx)) with
nx = s nu; cos = sum(y1 y2). The same operations on the same values: bit-identical to the
composite where its arrays are C-contiguous too (NumPy's sums depend on the layout).
Backward (closed form of the composite's chain, the clamp not differentiated), per row, g
broadcast along dim:
    dx1 = g / nu1 / s1 (y2 - cos y1)                     (large rows)
    dx1 = g / (nx1 + (eps - nx1)) (y2 - cos x1/|x1|)     (small rows; x1/|x1| = 0 at 0)
and the same with 1 and 2 swapped (a few ulp from the composite's rounding order).

Euclidean distances of float32 rows (``euclid_f32``): d^2 = |a|^2 + |b|^2 - 2 a.b in
float64 (one GEMM), accepted per pair only where a rigorous bound shows it is within a
relative 2^-30 of the exact d^2; the other pairs (near-duplicates, zero distances, huge
norms against small distances, non-finite values) are recomputed from their float64
differences. See ``euclid_f32`` for the bound. The result is faithfully rounded (error
< 0.51 ulp of the exact distance of the float32 inputs), where the float32 differences'
norm (the former path, still the float64 one) was off by a few ulp and overflowed or
underflowed in the squares (|d| > 1.8e19 or < 1e-19 in float32).
"""

from __future__ import annotations

import functools

import numpy as np

from tgrad.backends._numpy_sum import float_sum

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


# ------------------------------------------------------------------ cosine_similarity
def _unit(x: np.ndarray, eps: float, axis: int):
    """x float32/float64, C-contiguous, non-empty: (y, s, nu, small, den) along ``axis``
    (module docstring): s, nu of x's shape with 1 at axis; small (the same) bool or None
    when no row is small; den the small rows' divisor nx + (eps - nx) (None with small)."""
    one = x.dtype.type(1)
    # max |x| by np.fmax.reduce (1.6x np.max's time on rows of 128): it skips NaN, where
    # the composite's amax gives NaN and then s = 1; the row's y is NaN either way (u has
    # the NaN, so nu and u / nu are NaN, and s nu < eps is False), so the values agree
    s = np.fmax.reduce(np.abs(x), axis=axis, keepdims=True)
    s = np.where((s > 0) & (s < np.inf), s, one)
    u = np.true_divide(x, s)
    nu = np.sqrt(float_sum(np.multiply(u, u), axis, True))
    small = np.less(np.multiply(s, nu), eps)  # (eps: a weak Python float, x's dtype)
    if not small.any():
        return np.true_divide(u, nu, out=u), s, nu, None, None
    nx = np.multiply(s, np.where(small, nu, x.dtype.type(0)))
    den = np.add(nx, np.where(small, np.subtract(eps, nx), np.subtract(1.0, nx)))
    y = np.where(small, np.true_divide(x, den), np.true_divide(u, np.where(small, one, nu)))
    return y, s, nu, small, den


def cosine_fwd(x1: np.ndarray, x2: np.ndarray, eps: float, axis: int, save: bool):
    """cos = sum(y1 y2) over ``axis`` of x1, x2 (one number of dims, equal and > 0 along
    axis, the others broadcast; C-contiguous, non-empty). Returns (cos, saved): saved is
    what cosine_bwd needs (None unless ``save``)."""
    with np.errstate(all="ignore"):
        p1, p2 = _unit(x1, eps, axis), _unit(x2, eps, axis)
        prod = np.multiply(p1[0], p2[0])
        cos = float_sum(prod, axis, False, prod.dtype)
    return cos, ((x1, p1), (x2, p2), cos, axis) if save else None


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
    (x1, p1), (x2, p2), cos, axis = saved
    gk, ck = np.expand_dims(g, axis), np.expand_dims(cos, axis)
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


@functools.lru_cache(maxsize=16)
def upper_positions(n: int) -> np.ndarray:
    """The flat positions i n + j (int64, (n (n - 1) / 2,), row-major: i < j) of the strict
    upper triangle of an (n, n) array: pdist's pairs. Cached by n (np.triu_indices builds
    an (n, n) mask each call); read-only."""
    i, j = np.triu_indices(n, 1)
    out = i * n + j
    out.flags.writeable = False
    return out


# ------------------------------------------------------------------ Euclidean distances
_U64 = 2.0 ** -53  # float64's unit roundoff
_REL = 2.0 ** -30  # accepted relative error of a GEMM d^2
_EXACT_PAIRS = 1 << 15  # pairs per block of the exact recomputation


def euclid_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """||a[..., i, :] - b[..., j, :]||_2 for float32 a (..., P, M), b (..., R, M) (batch dims
    broadcast; P, R, M > 0) -> float32 (..., P, R), faithfully rounded; ``b is a`` (pdist):
    the diagonal is set to 0 (a finite row's distance to itself; pdist reads only i < j, and
    a 0 there keeps a non-finite row's NaN self-distance out of the backward's g / y).

    Error bound of the GEMM form. a, b are float32, so in float64 every product a_k b_k
    and square is exact (24 + 24 bits <= 53; no overflow or underflow: float32's range
    squared is [1e-90, 1.2e77]). With u = 2^-53, g = M u / (1 - M u) (any summation order,
    FMA or not: |fl(sum p_k) - sum p_k| <= g sum |p_k|), A = sum a^2, B = sum b^2,
    C = sum a b, D = A + B - 2C (the exact d^2), the computed na, nb, c satisfy
    |na - A| <= g A, |nb - B| <= g B, 2 |c - C| <= 2 g sum|a b| <= g (A + B). Here
    t = fl(fl(na - 2c) + nb) (2c exact), so with |d1|, |d2| <= u:
        t - D = (na - A) + (nb - B) - 2 (c - C) + d1 (na - 2c) + d2 (fl(na - 2c) + nb),
    |na - 2c| <= 2 (1 + g) (A + B), |fl(na - 2c) + nb| <= 3.01 (A + B), hence
        |t - D| <= (2 g + 5.02 u) (A + B) <= (2.001 M + 8) u (na + nb) =: E
    (A + B <= (na + nb) / (1 - g); the slack covers g's 1 / (1 - M u) for M < 1e12 and
    the rounding of E itself). A pair is accepted where t >= 2^30 E: then
    |t - D| <= 2^-30 t gives |t - D| / D < 2^-29.99, sqrt halves it (plus u), and the
    float32 rounding of sqrt(t) is within 0.5 ulp + 2^-30.5 * 2^24 ulp < 0.52 ulp of the
    exact distance. The test is first made per row against max_j nb_j (one broadcast
    comparison), then per pair on the rows' failures. Rejected pairs (t < 2^30 E: zero or
    small distances against the norms; NaN / inf, whose k na is made NaN) are recomputed
    from their float64 differences (relative error <= (M + 3) u / 2: also faithful)."""
    a64, b64 = a.astype(_F64), b.astype(_F64)
    k = (2.001 * a.shape[-1] + 8.0) * _U64 / _REL
    with np.errstate(all="ignore"):
        na = np.einsum("...m,...m->...", a64, a64)  # (..., P)
        nb = np.einsum("...m,...m->...", b64, b64)  # (..., R)
        t = np.matmul(a64, np.swapaxes(b64, -1, -2))  # (..., P, R): c
        t *= -2.0
        t += na[..., :, None]
        t += nb[..., None, :]
        ka, kb = _k_norms(na, k), _k_norms(nb, k)
        ok = t >= (ka + np.max(kb, -1, keepdims=True))[..., None]
        if b is a:  # the distances of the rows with themselves: the diagonal is exactly 0
            diag = np.einsum("...ii->...i", t)
            diag[...] = 0.0
            np.einsum("...ii->...i", ok)[...] = True
        bad = () if ok.all() else np.nonzero(~ok)
        if bad:
            kab = np.broadcast_to(ka[..., :, None], t.shape)[bad]
            kab += np.broadcast_to(kb[..., None, :], t.shape)[bad]
            still = ~(t[bad] >= kab)
            bad = tuple(ix[still] for ix in bad)
        np.sqrt(t, out=t)
        if bad and bad[0].size:
            t[bad] = _exact_pairs(a64, b64, t.shape, bad)
    return t.astype(_F32)


def _k_norms(n: np.ndarray, k: float) -> np.ndarray:
    """k n, NaN where n is not finite (a NaN threshold rejects the pair)."""
    kn = n * k
    kn[~np.isfinite(n)] = np.nan
    return kn


def _exact_pairs(a64: np.ndarray, b64: np.ndarray, shape: tuple, idx: tuple) -> np.ndarray:
    """sqrt(sum((a_i - b_j)^2)) in float64 for the pairs at ``idx`` (np.nonzero of a
    (..., P, R) array of ``shape``), in blocks of _EXACT_PAIRS pairs."""
    lead = shape[:-2]
    a_b = np.broadcast_to(a64, lead + a64.shape[-2:])
    b_b = np.broadcast_to(b64, lead + b64.shape[-2:])
    n = idx[0].size
    out = np.empty(n, _F64)
    for s in range(0, n, _EXACT_PAIRS):
        part = tuple(ix[s:s + _EXACT_PAIRS] for ix in idx)
        d = a_b[part[:-1]] - b_b[part[:-2] + (part[-1],)]  # (k, M)
        d *= d
        out[s:s + _EXACT_PAIRS] = np.sqrt(np.add.reduce(d, axis=-1))
    return out
