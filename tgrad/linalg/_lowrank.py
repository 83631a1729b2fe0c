# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, M, Q, U, S, V)
"""PyTorch's ``torch.svd_lowrank`` and ``torch.pca_lowrank``: randomized low-rank SVD
(Halko, Martinsson and Tropp 2009, algorithm 5.1 with ``niter`` power iterations), as
PyTorch's torch/_lowrank.py, composed of differentiable tgrad ops (matmul, linalg.qr,
linalg.svd). The random test matrix comes from tgrad's default generator (tgrad.manual_seed
makes the result reproducible; PyTorch's random stream differs, so its values do).

Shapes: A (*, m, n) -> U (*, m, q), S (*, q), V (*, n, q) with A ~= U diag(S) V^H.
"""

from __future__ import annotations

from tgrad.linalg._spectral import _matrix_checks
from tgrad.tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Q (*, m, q) with orthonormal columns whose span approximates A - M's range: Q of
    (A - M) R for a Gaussian R, refined by ``niter`` power iterations."""
    from tgrad.linalg import qr
    from tgrad.ops.creation import randn
    R = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)

    def times(B: Tensor, X: Tensor, BM: Tensor | None) -> Tensor:
        return B @ X if BM is None else B @ X - BM @ X

    Q = qr(times(A, R, M)).Q
    for _ in range(niter):
        Q = qr(times(A.mH, Q, None if M is None else M.mH)).Q
        Q = qr(times(A, Q, M)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None) -> tuple:
    from tgrad.linalg import svd
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:  # work on the tall one
        A = A.mH
        M = None if M is None else M.mH
    Q = _approximate_basis(A, q, niter, M)
    B = Q.mH @ A
    if M is not None:
        B = B - Q.mH @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = Vh.mH
    U = Q @ U
    if m < n:
        U, V = V, U
    return U, S, V


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,
                M: Tensor | None = None) -> tuple:
    """(U, S, V), an approximate rank-``q`` SVD of A - M (M broadcast to A; default none):
    A - M ~= U diag(S) V^H, exact (to rounding) when A - M has rank <= q. ``q`` defaults to
    6 and must not exceed min(m, n) (linalg.qr / svd would give fewer columns); ``niter``
    (default 2) power iterations sharpen the basis. Randomized: see the module docstring."""
    _matrix_checks("svd_lowrank", A)
    q = 6 if q is None else q
    niter = 2 if niter is None else niter
    return _svd_lowrank(A, q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> tuple:
    """(U, S, V) of svd_lowrank of A centered over its rows (A - A.mean(-2), when
    ``center``): the principal directions are V's columns, the variances S^2 / (m - 1).
    ``q`` defaults to min(6, m, n)."""
    _matrix_checks("pca_lowrank", A)
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter, None)
