# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, U, S, V, L)
"""Symmetric eigendecomposition and SVD by parallel Jacobi rotations, as compositions of
tgrad ops batched over leading dims: ``linalg.eigh`` / ``eigvalsh`` (two-sided Jacobi) and
``linalg.svd`` / ``svdvals`` (one-sided Jacobi, Hestenes).

Each sweep visits every index pair (p, q) once in n - 1 rounds of n/2 disjoint pairs (the
round-robin "circle" order; an odd n gets a zero padding index, which no rotation
touches). A round rotates all its pairs at once with vector ops over whole rows/columns:

    t = sign(tau) / (|tau| + sqrt(1 + tau^2)),  tau = (a_qq - a_pp) / (2 a_pq),
    c = 1 / sqrt(1 + t^2),  s = t c;   x_p' = c x_p - s x_q,  x_q' = s x_p + c x_q
    eigh: A' = J^T A J (rows, then columns), V' = V J     (zeroes a_pq)
    svd:  U' = U J (columns), V' = V J, with a_pp, a_qq, a_pq = |u_p|^2, |u_q|^2, u_p.u_q
          (zeroes u_p.u_q; U ends with orthogonal columns of norms S)

Sweeps run until the off-diagonal part is below n eps (relative: ||off(A)||_F <= n eps
||A||_F for eigh; |u_p.u_q| <= n eps |u_p| |u_q| for svd): one synchronizing host read per
sweep, at most 40 sweeps (convergence is quadratic: about 6-10 in float64). Jacobi is
accurate to the last bits; it costs O(n) launches per round on a GPU, so it is for the
small and moderate n of research code. A matrix holding NaN or inf gets NaN results.

Backwards (PyTorch's linalg_eig_backward and svd_backward, real case):
    eigh:  gA = V (skew(V^H gV) / 2 / E + diag(gL)) V^H,  E_ij = L_j - L_i
    svd:   gA = U (skew(U^H gU) S / E + S skew(V^H gV) / E + diag(gS)) V^H
                + (I - U U^H) gU S^{-1} V^H   (m > n)
                + U S^{-1} gV^H (I - V V^H)   (m < n),  E_ij = S_j^2 - S_i^2, skew(X) = X - X^H
``full_matrices=True`` differentiates through the first k = min(m, n) columns of U and rows
of Vh (the others are not unique), as PyTorch does. Gradients are finite only for distinct
eigenvalues / singular values (and nonzero ones where m != n), as in PyTorch. The eigh
gradient is the symmetric one (PyTorch's), not projected on the triangle UPLO reads.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.linalg._norms import vector_norm
from tgrad.linalg._qr import check_linalg_dtype, from_lapack, householder_qr, lapack_path
from tgrad.linalg._triangular import LinAlgError, _check_square
from tgrad.ops import elementwise as ew
from tgrad.ops._common import fresh, require_tensor
from tgrad.ops.composite import tril, triu
from tgrad.ops.creation import eye, tensor, zeros
from tgrad.ops.layout import diag_embed
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["eigh", "eigvalsh", "svd", "svdvals"]

MAX_SWEEPS = 40


EighResult = return_types.linalg_eigh  # PyTorch's torch.return_types.linalg_eigh


SVDResult = return_types.linalg_svd  # PyTorch's torch.return_types.linalg_svd


# ------------------------------------------------------------------------------ rotations
@lru_cache(maxsize=64)
def _round_robin(n: int) -> tuple:
    """For n even: per round, ``order`` = [p_0..p_{h-1}, q_0..q_{h-1}] (n), ``partner``
    (n: the other index of each index's pair), ``slot`` (n: the position of each index in
    ``order``) and the flat indices p*n + q (h): NumPy arrays of shape (n - 1, ...)."""
    players = list(range(n))
    h = n // 2
    order, partner, slot, flat = [], [], [], []
    for _ in range(n - 1):
        p, q = players[:h], players[::-1][:h]
        o = np.array(p + q)
        pi = np.empty(n, np.int64)
        pi[p], pi[q] = q, p
        order.append(o)
        partner.append(pi)
        slot.append(np.argsort(o))
        flat.append(np.array(p) * n + np.array(q))
        players = [players[0], players[-1]] + players[1:-1]
    return tuple(np.stack(x).astype(np.int64) for x in (order, partner, slot, flat))


def _plan(n: int, device) -> list:
    """The round-robin tables as index tensors on ``device``, one tuple per round."""
    tabs = [tensor(t, device=device) for t in _round_robin(n)]
    return [tuple(t[r] for t in tabs) for r in range(n - 1)]


def _rotation(a_pp: Tensor, a_qq: Tensor, a_pq: Tensor) -> tuple:
    """(c, s) of the rotations zeroing a_pq (each (..., h)); c = 1, s = 0 where a_pq = 0."""
    nz = a_pq != 0
    tau = (a_qq - a_pp) / (2 * ew.where(nz, a_pq, 1.0))
    t = ew.where(tau >= 0, 1.0, -1.0) / (tau.abs() + ew.sqrt(1 + tau * tau))
    t = ew.where(nz, t, 0.0)
    c = ew.rsqrt(1 + t * t)
    return c, t * c


def _coefficients(c: Tensor, s: Tensor, slot: Tensor) -> tuple:
    """Per index i: x_i' = cc_i x_i + ss_i x_partner(i) (p: c, -s; q: c, +s)."""
    return cat([c, c], -1).index_select(-1, slot), cat([-s, s], -1).index_select(-1, slot)


def _rotate_cols(X: Tensor, cc: Tensor, ss: Tensor, partner: Tensor) -> Tensor:
    return X * cc.unsqueeze(-2) + X.index_select(-1, partner) * ss.unsqueeze(-2)


def _rotate_rows(X: Tensor, cc: Tensor, ss: Tensor, partner: Tensor) -> Tensor:
    return X * cc.unsqueeze(-1) + X.index_select(-2, partner) * ss.unsqueeze(-1)


def _pad_even(X: Tensor, rows: bool) -> Tensor:
    """One zero column (and row when ``rows``) when the last dim is odd."""
    n = X.shape[-1]
    if n % 2 == 0:
        return X
    X = cat([X, zeros(X.shape[:-1] + (1,), dtype=X.dtype, device=X.device)], -1)
    if rows:
        X = cat([X, zeros(X.shape[:-2] + (1, n + 1), dtype=X.dtype, device=X.device)], -2)
    return X


def _identity(n: int, like: Tensor) -> Tensor:
    batch = tuple(like.shape[:-2])
    # (with no batch the expand is a view of eye's result: a new tensor all the same)
    return fresh(eye(n, dtype=like.dtype, device=like.device).expand(*batch, n, n).contiguous())


def _jacobi_eigh(A: Tensor) -> tuple:
    """(L, V) unsorted, A = V diag(L) V^T for symmetric A (..., n, n); no graph."""
    n = A.shape[-1]
    if n == 0:
        return A.detach().sum(-1), A.detach().clone()
    A = _pad_even(A.detach(), rows=True).contiguous()
    N = A.shape[-1]
    V = _identity(N, A)
    tol2 = (N * dtypes.finfo(A.dtype).eps) ** 2
    total = (A * A).sum((-2, -1))
    finite = ew.isfinite(total)
    plan = _plan(N, A.device)
    h = N // 2
    for _ in range(MAX_SWEEPS):
        d = A.diagonal(dim1=-2, dim2=-1)
        off = (A - diag_embed(d)).square().sum((-2, -1))
        if bool(((off <= tol2 * total) | ~finite).all()):
            break
        for order, partner, slot, flat in plan:
            dpq = A.diagonal(dim1=-2, dim2=-1).index_select(-1, order)
            apq = A.reshape(A.shape[:-2] + (N * N,)).index_select(-1, flat)
            c, s = _rotation(dpq[..., :h], dpq[..., h:], apq)
            cc, ss = _coefficients(c, s, slot)
            A = _rotate_cols(_rotate_rows(A, cc, ss, partner), cc, ss, partner)
            V = _rotate_cols(V, cc, ss, partner)
    L = A.diagonal(dim1=-2, dim2=-1)[..., :n]
    V = V[..., :n, :n]
    L = ew.where(finite.unsqueeze(-1), L, float("nan"))
    return L, ew.where(finite.unsqueeze(-1).unsqueeze(-1), V, float("nan"))


def _jacobi_svd(A: Tensor) -> tuple:
    """(U, V) for A (..., m, n), m >= n: A V = U with U's columns orthogonal (their norms
    are the singular values, unsorted) and V orthogonal; no graph."""
    n = A.shape[-1]
    U = _pad_even(A.detach(), rows=False).contiguous()
    N = U.shape[-1]
    V = _identity(N, U)
    tol = N * dtypes.finfo(A.dtype).eps
    finite = ew.isfinite(U.square().sum((-2, -1)))
    plan = _plan(N, A.device)
    h = N // 2
    not_diag = 1 - eye(N, dtype=A.dtype, device=A.device)
    for _ in range(MAX_SWEEPS):
        G = U.mT @ U
        norms = ew.sqrt(G.diagonal(dim1=-2, dim2=-1))
        den = norms.unsqueeze(-1) * norms.unsqueeze(-2)
        ratio = ew.where(den > 0, G.abs() / ew.where(den > 0, den, 1.0), 0.0) * not_diag
        if bool(((ratio.amax((-2, -1)) <= tol) | ~finite).all()):
            break
        for order, partner, slot, _ in plan:
            cols = U.index_select(-1, order)
            up, uq = cols[..., :h], cols[..., h:]
            c, s = _rotation((up * up).sum(-2), (uq * uq).sum(-2), (up * uq).sum(-2))
            cc, ss = _coefficients(c, s, slot)
            U = _rotate_cols(U, cc, ss, partner)
            V = _rotate_cols(V, cc, ss, partner)
    nan = float("nan")
    U = ew.where(finite.unsqueeze(-1).unsqueeze(-1), U[..., :n], nan)
    return U, ew.where(finite.unsqueeze(-1).unsqueeze(-1), V[..., :n, :n], nan)


def _sort_columns(vals: Tensor, vecs: list, descending: bool) -> tuple:
    order = vals.argsort(-1, descending=descending)
    vals = vals.gather(-1, order)
    out = []
    for X in vecs:
        idx = order.unsqueeze(-2).expand(*X.shape[:-1], X.shape[-1])
        out.append(X.gather(-1, idx))
    return vals, out


def _completed(U: Tensor, S: Tensor, cols: int) -> Tensor:
    """U (..., m, k) with orthonormal columns where S > 0 (zero columns elsewhere) made
    into ``cols`` orthonormal columns: the columns of a Householder Q of U fill the zero
    ones and the extra ones (their signs matching U's)."""
    k = U.shape[-1]
    Q, R = householder_qr(U, complete=True)
    d = R.diagonal(dim1=-2, dim2=-1)[..., :k]
    sign = ew.where(d < 0, -1.0, 1.0)
    Qk = Q[..., :k] * sign.unsqueeze(-2)
    out = ew.where((S > 0).unsqueeze(-2), U, Qk)
    if cols > k:
        out = cat([out, Q[..., k:cols]], -1)
    return out


def _svd_tall(A: Tensor, full: bool) -> tuple:
    """(U (m, k or m), S (k), V (n, n)) of A (..., m, n) with m >= n, S descending."""
    m, n = A.shape[-2], A.shape[-1]
    U, V = _jacobi_svd(A)
    S = vector_norm(U, dim=-2)
    S, (U, V) = _sort_columns(S, [U, V], descending=True)
    U = U / ew.where(S > 0, S, 1.0).unsqueeze(-2)
    if (full and m > n) or bool((S == 0).any()):
        U = _completed(U, S, m if full else n)
    return U, S, V


def _lapack(fn, A: Tensor) -> tuple:
    """``fn`` (np.linalg.eigh or svd) of A's matrices on the host; a matrix holding NaN or
    inf gets NaN results (LAPACK would not converge)."""
    a = A.detach().numpy()
    finite = np.isfinite(a).all((-2, -1))
    out = fn(np.where(finite[..., None, None], a, 0))
    for x in out:
        x[~finite] = np.nan
    return from_lapack(out, A)


def _svd(A: Tensor, full: bool) -> tuple:
    """(U, S, Vh) of A (..., m, n); no graph."""
    m, n = A.shape[-2], A.shape[-1]
    if lapack_path(A) and A.numel():
        return _lapack(lambda a: np.linalg.svd(a, full_matrices=full), A)
    k = min(m, n)
    if k == 0 or A.numel() == 0:  # nothing to factor; S real (also for complex A)
        batch = tuple(A.shape[:-2])
        U = _identity(m, A) if full else zeros(batch + (m, k), dtype=A.dtype, device=A.device)
        Vh = _identity(n, A) if full else zeros(batch + (k, n), dtype=A.dtype, device=A.device)
        return U, zeros(batch + (k,), dtype=dtypes.to_real(A.dtype), device=A.device), Vh
    if m >= n:
        U, S, V = _svd_tall(A, full)
        return U, S, V.mH
    Ut, S, Vt = _svd_tall(A.mH, full)  # A^H = Ut S Vt^H, so A = Vt S Ut^H
    return Vt, S, Ut.mH


# --------------------------------------------------------------------------------- eigh
def _symmetric(A: Tensor, upper: bool) -> Tensor:
    """The Hermitian matrix of one triangle of A (the diagonal's Im part is not read)."""
    if upper:
        return triu(A) + triu(A, 1).mH
    return tril(A) + tril(A, -1).mH


def check_phase(op: str, im_diag: Tensor) -> None:
    """PyTorch's check that a loss does not depend on the phases e^{i phi} of complex
    eigen/singular vectors: Im of the diagonal of V^H gV (svd: of U^H gU + V^H gV) ~ 0
    (allclose(.., 0, atol=1e-2)); one host read. PyTorch's error texts."""
    if im_diag.numel() and not bool((im_diag.abs() <= 1e-2).all()):
        if op == "svd_backward":
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified "
                               "loss function depends on this phase term, making it "
                               "ill-defined.")
        raise RuntimeError(f"{op}: The eigenvectors in the complex case are specified up to "
                           f"multiplication by e^{{i phi}}. The specified loss function "
                           f"depends on this quantity, so it is ill-defined.")


class LinalgEigh(Function):
    node_name = "LinalgEighBackward0"

    @staticmethod
    def forward(ctx, A, upper):
        ctx.set_materialize_grads(False)  # eigvalsh: no gV, so no 1/(L_j - L_i) terms
        if A.numel() == 0:  # nothing to factor; L real (also for complex A)
            L = zeros(A.shape[:-1], dtype=dtypes.to_real(A.dtype), device=A.device)
            V = A.detach().clone()
        elif lapack_path(A):
            L, V = _lapack(np.linalg.eigh, _symmetric(A, upper))
        else:
            L, V = _jacobi_eigh(_symmetric(A, upper))
            L, (V,) = _sort_columns(L, [V], descending=False)
        ctx.save_for_backward(L, V)
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        if gV is None:  # (gL None too: no gradient, as PyTorch's)
            return (None if gL is None else (V * gL.unsqueeze(-2)) @ V.mH), None
        VhgV = V.mH @ gV
        n = L.shape[-1]
        if VhgV.dtype.is_complex:
            check_phase("linalg_eigh_backward", VhgV.diagonal(dim1=-2, dim2=-1).imag)
        VhgV = 0.5 * (VhgV - VhgV.mH)
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye(n, dtype=L.dtype, device=L.device)
        inner = VhgV / E  # its diagonal: i Im diag(V^H gV) (~0), kept when gL is None
        if gL is not None:  # else replaced by gL, as PyTorch's
            inner = ew.where(eye(n, dtype=dtypes.bool_, device=L.device), diag_embed(gL),
                             inner)
        return V @ inner @ V.mH, None


@autocast_policy(None, cpu="fp32")
def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A, batched; reads
    A's lower triangle (UPLO='U': the upper one). Parallel Jacobi (module docstring)."""
    op = "linalg.eigh"
    require_tensor(op, A, "A")
    _check_square(op, A)
    check_linalg_dtype(op, A.dtype)
    if not isinstance(UPLO, str):  # PyTorch's TypeError
        raise TypeError(f"{op}(): argument 'UPLO' (position 2) must be str, not "
                        f"{type(UPLO).__name__}")
    if UPLO not in ("L", "U", "l", "u"):  # (either case, as PyTorch's)
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    L, V = LinalgEigh.apply(A, UPLO in ("U", "u"))
    return EighResult(L, V)


@autocast_policy(None, cpu="fp32")
def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues (ascending) of symmetric A, batched (see eigh)."""
    return eigh(A, UPLO).eigenvalues


# ---------------------------------------------------------------------------------- svd
class LinalgSvd(Function):
    node_name = "LinalgSvdBackward0"

    @staticmethod
    def forward(ctx, A, full):
        ctx.set_materialize_grads(False)  # svdvals: no gU / gVh, so no 1/S or 1/E terms
        U, S, Vh = _svd(A, full)
        ctx.save_for_backward(U, S, Vh)  # the outputs themselves: double backward sees them
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        k = S.shape[-1]
        if U.shape[-1] != k or Vh.shape[-2] != k:  # full_matrices: the first k vectors
            U, Vh = U[..., :k], Vh[..., :k, :]
        gU = gU[..., :k] if gU is not None else None
        gVh = gVh[..., :k, :] if gVh is not None else None
        return svd_backward(gU, gS, gVh, U, S, Vh), None


def svd_backward(gU, gS, gVh, U: Tensor, S: Tensor, Vh: Tensor) -> Tensor:
    """gA of A = U diag(S) Vh (reduced factors) from the gradients of U, S, Vh (None where
    there is none); PyTorch's svd_backward for real matrices (module docstring)."""
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:  # (all three None: no gradient, as PyTorch's)
        return None if gS is None else (U * gS.unsqueeze(-2)) @ Vh
    k = S.shape[-1]
    V = Vh.mH
    gV = gVh.mH if gVh is not None else None
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye(k, dtype=S.dtype, device=S.device)
    col, row = S.unsqueeze(-2), S.unsqueeze(-1)

    def skew(X):
        return X - X.mH
    UhgU = skew(U.mH @ gU) if gU is not None else None
    VhgV = skew(Vh @ gV) if gV is not None else None
    if U.dtype.is_complex:  # the phases: Im diag(U^H gU) = -Im diag(V^H gV) (PyTorch's check)
        im = 0.5 * (UhgU.diagonal(dim1=-2, dim2=-1).imag if UhgU is not None else 0.0)
        im = im + 0.5 * (VhgV.diagonal(dim1=-2, dim2=-1).imag if VhgV is not None else 0.0)
        check_phase("svd_backward", im)
    if gU is not None and gV is not None:
        inner = (UhgU * col + row * VhgV) / E
    elif gU is not None:
        inner = UhgU / E * col
    else:
        inner = row * (VhgV / E)
    if gS is not None:
        inner = inner + diag_embed(gS)
    if U.dtype.is_complex and gU is not None:  # PyTorch's complex term
        inner = inner + diag_embed(UhgU.diagonal(dim1=-2, dim2=-1) / (2.0 * S))
    if m > n and gU is not None:
        gUSinv = gU / col
        gA = U @ inner + gUSinv - U @ (U.mH @ gUSinv)
        return gA @ Vh
    if m < n and gV is not None:
        SinvgVh = gV.mH / row
        gA = inner @ Vh + SinvgVh - (SinvgVh @ V) @ Vh
        return U @ gA
    return U @ (inner @ Vh) if m >= n else (U @ inner) @ Vh




def _svd_checks(op: str, A: Tensor, driver) -> None:
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    check_linalg_dtype(op, A.dtype)
    if driver is not None:
        raise RuntimeError(f"{op}: keyword argument `driver=` is only supported on CUDA "
                           f"inputs with cuSOLVER backend.")
    if A.numel() and bool(ew.isnan(A).any()):  # one host read; inf gives NaN, as LAPACK's
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                          "matrix contained non-finite values.")


@autocast_policy(None, cpu="fp32")
def svd(A: Tensor, full_matrices: bool = True, *, driver=None) -> SVDResult:
    """(U, S, Vh) with A = U diag(S) Vh, S descending, batched: U (m, m) and Vh (n, n) when
    ``full_matrices`` (PyTorch's default), else (m, k) and (k, n); one-sided Jacobi."""
    _svd_checks("linalg.svd", A, driver)
    U, S, Vh = LinalgSvd.apply(A, bool(full_matrices))
    return SVDResult(U, S, Vh)


@autocast_policy(None, cpu="fp32")
def svdvals(A: Tensor, *, driver=None) -> Tensor:
    """The singular values of A, descending, batched (see svd)."""
    _svd_checks("linalg.svdvals", A, driver)
    return LinalgSvd.apply(A, False)[1]
