# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, L, U, P, LU)
"""PyTorch's older top-level linear algebra names, over tgrad.linalg: ``tgrad.qr``,
``svd`` (V, not Vh), ``pinverse``, ``matrix_exp``, ``cholesky``, ``cholesky_inverse``,
``lu`` (the packed factors), ``lu_solve`` (B first), ``lu_unpack``, ``triangular_solve``
(A X = B with ``transpose``, returning (solution, a copy of A)), ``geqrf``, ``orgqr``
(householder_product) and ``ormqr``; also Tensor methods."""

from __future__ import annotations

from tgrad import return_types
from tgrad._autocast import autocast_policy
from tgrad.linalg._jacobi import svd as _svd
from tgrad.linalg._jacobi import svdvals
from tgrad.linalg._lu import slogdet as _slogdet
from tgrad.linalg._lu_factor import _perm_from_pivots, _perm_matrix, _unpack, lu_factor_ex
from tgrad.linalg._lu_factor import lu_solve as _lu_solve
from tgrad.linalg._qr import geqrf, ormqr
from tgrad.linalg._qr import householder_product as orgqr
from tgrad.linalg._qr import qr as _qr
from tgrad.linalg._spectral import matrix_exp, pinv
from tgrad.linalg._triangular import check_same_dtype, cholesky_solve, solve_triangular
from tgrad.linalg._triangular import cholesky as _cholesky
from tgrad.ops._common import require_tensor
from tgrad.ops.creation import eye, zeros
from tgrad.tensor import Tensor

__all__ = ["qr", "svd", "slogdet", "pinverse", "matrix_exp", "cholesky", "cholesky_inverse",
           "lu", "lu_solve", "lu_unpack", "triangular_solve", "geqrf", "orgqr", "ormqr"]


SVDResult = return_types.svd  # PyTorch's torch.return_types.svd: V, not Vh


TriangularSolveResult = return_types.triangular_solve  # PyTorch's torch.return_types's


def qr(input: Tensor, some: bool = True) -> return_types.qr:  # noqa: A002
    """``torch.qr``: linalg.qr with mode 'reduced' (some=True) or 'complete'."""
    return return_types.qr(*_qr(input, "reduced" if some else "complete"))


def slogdet(input: Tensor) -> return_types.slogdet:  # noqa: A002
    """``torch.slogdet``: linalg.slogdet (as PyTorch's return_types.slogdet)."""
    return return_types.slogdet(*_slogdet(input))


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDResult:  # noqa: A002
    """``torch.svd``: (U, S, V) with A = U diag(S) V^H (V, not Vh); ``some=False`` gives the
    full U and V; ``compute_uv=False`` gives zero-filled U (m, m) and V (n, n)."""
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        batch = tuple(input.shape[:-2])
        return SVDResult(zeros(batch + (m, m), dtype=input.dtype, device=input.device), S,
                         zeros(batch + (n, n), dtype=input.dtype, device=input.device))
    U, S, Vh = _svd(input, full_matrices=not some)
    return SVDResult(U, S, Vh.mH)


@autocast_policy(None, cpu="fp32")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:  # noqa: A002
    """``torch.pinverse``: linalg.pinv with rtol=rcond."""
    return pinv(input, rtol=rcond)


def cholesky(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """``torch.cholesky`` (PyTorch deprecates it for linalg.cholesky). An empty input of
    any shape or dtype returns an empty copy unchecked, as PyTorch's (it returns before its
    checks): cholesky(zeros(0)) is tensor([])."""
    if isinstance(input, Tensor) and input.numel() == 0:
        return input.clone()
    return _cholesky(input, upper=upper)


@autocast_policy(None, cpu="fp32")
def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """A^{-1} of A = L L^H (upper: U^H U) from its Cholesky factor (two triangular solves
    against the identity; differentiable in L)."""
    require_tensor("cholesky_inverse", L)
    if L.ndim < 2:  # PyTorch's text
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 "
                           "dimensions.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but "
                           f"they are {L.shape[-2]} by {L.shape[-1]} matrices")
    n = L.shape[-1]
    identity = eye(n, dtype=L.dtype, device=L.device).expand(*L.shape[:-2], n, n)
    return cholesky_solve(identity, L, upper)


@autocast_policy(None, cpu="fp32")
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple:
    """``torch.lu``: (LU, pivots) of linalg.lu_factor_ex, with ``info`` when get_infos."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


@autocast_policy(None, cpu="fp32")
def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """``torch.lu_solve`` (B first): linalg.lu_solve(LU, pivots, B)."""
    return _lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> return_types.lu_unpack:
    """(P, L, U) with A = P L U from packed factors; the parts not unpacked are empty."""
    require_tensor("lu_unpack", LU_data, "LU_data")
    require_tensor("lu_unpack", LU_pivots, "LU_pivots", 2)
    if LU_data.ndim < 2:  # PyTorch's text
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(LU_data.shape)} instead")
    empty = zeros((0,), dtype=LU_data.dtype, device=LU_data.device)
    L, U = _unpack(LU_data) if unpack_data else (empty, empty)
    P = _perm_matrix(_perm_from_pivots(LU_pivots, LU_data.shape[-2]), LU_data.dtype) \
        if unpack_pivots else empty
    return return_types.lu_unpack(P, L, U)


@autocast_policy(None, cpu="fp32")
def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """``torch.triangular_solve``: X with A X = b (transpose: A^T X = b), A triangular;
    returns (X, a copy of A) (PyTorch deprecates it for linalg.solve_triangular)."""
    require_tensor("triangular_solve", b)
    require_tensor("triangular_solve", A, "A", 2)
    check_same_dtype("triangular_solve", "b", b, "A", A, ".")  # PyTorch's: no promotion
    M = A.mT if transpose else A
    X = solve_triangular(M, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(X, A.clone())
