"""CPU fast paths of the LU / Cholesky family through NumPy's LAPACK (``np.linalg``: getrf
+ getrs in ``solve`` / ``inv``, getrf in ``det`` / ``slogdet``, potrf in ``cholesky``),
batched gufuncs instead of n vectorised Python steps. Each helper takes and returns NumPy
arrays (batch dims leading, matrices last) and returns None where it does not apply; the
caller then runs its loop (``_getrf_host``, ``_cholesky_host``), which
keeps the semantics LAPACK does not give: per-matrix ``info`` for a singular or
non-positive-definite matrix (NumPy raises for the whole batch), NaN/inf inputs, empty
arrays. Values differ from the loops by rounding only (LAPACK's blocked order of
operations; PyTorch calls the same routines on the CPU):

    solve / inv           native precision (sgesv for float32, as PyTorch)
    det / slogdet         in float64 / complex128 for float32 / complex64 inputs, rounded
                          once: NumPy's det is sign * exp(sum log|u_ii|), whose rounding
                          error grows with |log det| (about 200 float64 ulps at n = 32);
                          in double precision that is far below a float32 ulp. (float64
                          det stays on the LU loop, the product of U's diagonal.)
    cholesky              potrf (float32 in float32, as PyTorch), for n >= 8: below that
                          the loop's few steps over a wide batch are faster than
                          np.linalg's per-matrix calls (4096 4 x 4 matrices: 0.5 vs 1.1 ms)
    lstsq 'gelsy'         (the CPU default, rcond left at its default) the pseudo-inverse
                          of full-rank matrices as inv(A) (square: getrf + getri) or
                          R^{-1} Q^H (tall; wide: Q R^{-H} of A^H = Q R; geqrf + getri of
                          R), where ||A||_F ||A^{-1}||_F (an upper bound of S_max / S_min)
                          proves every singular value above twice lstsq's threshold, so
                          the rank is min(m, n) without an SVD; otherwise the SVD path.
                          Float32 results agree with the SVD path's to a few ulps times
                          the condition number (both are backward stable).
The triangular solves stay on their loop (``_substitute_host``): np.linalg has no trsm, and
getrs of the triangle through np.linalg.solve was no faster at n = 32 and slower for wide
batches and right-hand sides. (cholesky_solve on the CPU instead inverts the factor by blocked
recursion, in float64 for float32: ``_triangular.CholeskySolve``.)

``LAPACK_ON_CPU = False`` turns these off (the tests run both ways).
"""

from __future__ import annotations

import numpy as np

#: CPU forwards of solve / inv / det / slogdet / cholesky through
#: np.linalg (module docstring); False: the vectorised loops (cuda's steps) on the CPU too
LAPACK_ON_CPU = True

_CHOLESKY_MIN_N = 8  # (module docstring)

_WIDE = {np.dtype(np.float32): np.dtype(np.float64),
         np.dtype(np.complex64): np.dtype(np.complex128)}


def _usable(*arrays: np.ndarray) -> bool:
    """LAPACK applies: the flag is on, nothing is empty, every entry is finite."""
    return (LAPACK_ON_CPU and all(a.size for a in arrays)
            and all(bool(np.isfinite(a).all()) for a in arrays))


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """X with a X = b, a (..., n, n), b (..., n, k) of one batch shape; None where a
    matrix is singular (an exact zero pivot of getrf) or an entry is not finite."""
    if not _usable(a, b):
        return None
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        return None


def inv(a: np.ndarray) -> np.ndarray | None:
    """a^{-1} of (..., n, n); None as ``solve``."""
    if not _usable(a):
        return None
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        return None


def cholesky(a: np.ndarray) -> np.ndarray | None:
    """L with a = L L^H from a's lower triangle (potrf: the diagonal's Re part), (..., n,
    n); None where a matrix is not positive-definite or an entry is not finite, or n < 8
    (module docstring)."""
    if a.shape[-1] < _CHOLESKY_MIN_N or not _usable(a):
        return None
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        return None


def _wide(a: np.ndarray) -> np.ndarray:
    return a.astype(_WIDE.get(a.dtype, a.dtype))


def det(a: np.ndarray) -> np.ndarray | None:
    """det of (..., n, n) float32 / complex64 matrices, computed in double precision and
    rounded once (a singular matrix: 0); None for other dtypes (their det stays the
    product of the LU loop's diagonal) or where ``_usable`` says no."""
    if a.dtype not in _WIDE or not _usable(a):
        return None
    with np.errstate(over="ignore"):  # (a det beyond float32's range: inf, as PyTorch)
        return np.asarray(np.linalg.det(_wide(a))).astype(a.dtype)


def slogdet(a: np.ndarray) -> tuple | None:
    """(sign, log|det|) of (..., n, n): sign in a's dtype (0 for a singular matrix,
    det / |det| for complex a), log|det| real (-inf for a singular matrix); float32 /
    complex64 in double precision, rounded once. None where ``_usable`` says no."""
    if not _usable(a):
        return None
    sign, logabs = np.linalg.slogdet(_wide(a))
    return np.asarray(sign).astype(a.dtype), np.asarray(logabs).astype(a.real.dtype)


def det_cofactors(a: np.ndarray) -> np.ndarray | None:
    """The conjugate cofactor matrices conj(det a) a^{-H} of float32 / complex64 (..., n,
    n), in double precision (an entry beyond a's range becomes inf), for det's backward;
    None where a matrix is singular in double precision (det 0: the caller's SVD branch),
    a product overflows even there, or as ``det``."""
    if a.dtype not in _WIDE or not _usable(a):
        return None
    w = _wide(a)
    d = np.asarray(np.linalg.det(w))
    if not bool(np.isfinite(d).all()) or bool((d == 0).any()):
        return None
    try:
        inv_h = np.linalg.inv(w).conj().swapaxes(-1, -2)
    except np.linalg.LinAlgError:
        return None
    cof = d.conj()[..., None, None] * inv_h
    if not bool(np.isfinite(cof).all()):
        return None
    with np.errstate(over="ignore"):  # (a cofactor beyond float32's range: inf)
        return cof.astype(a.dtype)


def full_rank_pinv(a: np.ndarray, rtol: float) -> tuple | None:
    """(P, ok): P (..., n, m) the pseudo-inverses of a (..., m, n) from inv / QR (module
    docstring) where ``ok`` (a's batch shape) says that the matrix provably has full rank at
    the relative threshold ``rtol``: S_min > 2 rtol S_max, by ||F||_F ||F^{-1}||_F <= 1 /
    (2 rtol) with F = a, or the R of its QR (a's singular values). P's other matrices are
    to be replaced (rank deficiency or a condition number near 1 / rtol: the SVD's). None
    where no matrix is proven, inv / QR fail (a singular matrix), or ``_usable`` says no.
    rtol > 0."""
    m, n = a.shape[-2], a.shape[-1]
    if not rtol > 0 or not _usable(a):
        return None
    try:
        if m == n:
            f = a
            p = f_inv = np.linalg.inv(a)
        else:  # tall: a = Q R, pinv = R^{-1} Q^H; wide: a^H = Q R, pinv = Q R^{-H}
            q, f = np.linalg.qr(a if m > n else a.conj().swapaxes(-1, -2))
            f_inv = np.linalg.inv(f)  # (R upper triangular: getrf does not pivot)
            p = (f_inv @ q.conj().swapaxes(-1, -2) if m > n
                 else q @ f_inv.conj().swapaxes(-1, -2))
    except np.linalg.LinAlgError:
        return None
    # ||F||_F ||F^{-1}||_F >= S_max / S_min, in double precision (no overflow)
    cond = (np.linalg.norm(_wide(f), axis=(-2, -1))
            * np.linalg.norm(_wide(f_inv), axis=(-2, -1)))
    ok = (cond * (2 * rtol) <= 1) & np.isfinite(p).all((-2, -1))
    return (p, ok) if bool(ok.any()) else None
