# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, L, U, P, LU)
"""The LU factors as a public API: ``lu_factor`` / ``lu_factor_ex`` (LAPACK's packed LU
and 1-based pivots), ``lu`` (P, L, U with A = P L U) and ``lu_solve``, for m x n matrices
batched over leading dims, from tgrad/linalg/_lu.py's getrf.

    lu_factor backward (PyTorch's linalg_lu_backward), A (m x n) = P L U, k = min(m, n),
    L m x k unit lower, U k x n upper, gL = tril(gLU, -1), gU = triu(gLU):
      square (m = n):  gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}
      wide (m < n):    U = [U1 | U2] (U1 m x m), gU = [gU1 | gU2]. A2 = L U2 gives
                       dU2 = L^{-1} (dA2 - dL U2), so gA2 = L^{-H} gU2 and gL takes
                       -L^{-H} gU2 U2^H; the square rule on (A1 = L U1) with that gL:
                       gA = P L^{-H} [(tril(L^H gL - gU2 U2^H, -1) + triu(gU1 U1^H)) U1^{-H}
                                      | gU2]
      tall (m > n):    L = [L1; L2] (L1 n x n), gL = [gL1; gL2]; symmetrically (A2 = L2 U:
                       dL2 = (dA2 - L2 dU) U^{-1}, gA2 = gL2 U^{-H}, gU takes
                       -L2^H gL2 U^{-H}):
                       gA = P [L1^{-H} (tril(L1^H gL1, -1) + triu(gU U^H - L2^H gL2))
                               ; gL2] U^{-H}
    written with solve_triangular, so it is differentiable again (forward mode, with no
    jvp rule of its own, is the vjp of this vjp). Complex A (CPU): the same rule; the
    pivots are LAPACK's (the largest |Re| + |Im|).
    ``lu`` (unpacking with tril/triu) and ``lu_solve`` (the permutation as a gather, two
    triangular solves reading one triangle of LU each) are compositions, differentiable
    through ``lu_factor``.
"""

from __future__ import annotations

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.linalg._lu import (
    _check_dtype,
    _lu,
    _raise_singular,
    check_same_dtype,
    lu_substitute,
    swap_order,
)
from tgrad.linalg._triangular import solve_triangular
from tgrad.ops._common import require_tensor
from tgrad.ops.composite import tril, triu
from tgrad.ops.creation import arange, eye
from tgrad.ops.gathering import take_along_dim
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve"]


LUFactor = return_types.linalg_lu_factor  # PyTorch's torch.return_types.linalg_lu_factor


LUFactorEx = return_types.linalg_lu_factor_ex  # PyTorch's torch.return_types.linalg_lu_factor_ex


PLU = return_types.linalg_lu  # PyTorch's torch.return_types.linalg_lu


def _unpack(LU: Tensor) -> tuple:
    """(L (m x k) with its unit diagonal, U (k x n)) of a packed LU, k = min(m, n)."""
    m, n = LU.shape[-2:]
    k = min(m, n)
    L = tril(LU[..., :, :k], -1) + eye(m, k, dtype=LU.dtype, device=LU.device)
    return L, triu(LU[..., :k, :])


def _perm_from_pivots(pivots: Tensor, m: int) -> Tensor:
    """The row order (int64, (..., m)) that LAPACK's sequential swaps make of 0..m-1:
    row i of P^T A is row perm[i] of A."""
    rows = arange(m, device=pivots.device)
    perm = rows.expand(*pivots.shape[:-1], m)
    piv = pivots.to(dtypes.int64) - 1
    for k in range(pivots.shape[-1]):
        perm = take_along_dim(perm, swap_order(rows, k, piv[..., k:k + 1]), -1)
    return perm


def _perm_matrix(perm: Tensor, dtype) -> Tensor:
    """P with P[perm[i], i] = 1, so that A = P (P^T A) = P L U."""
    m = perm.shape[-1]
    # [i, j]: i == perm[j]; built in place of a transpose so that P is a new row-major
    # tensor (PyTorch's), not a view
    onehot = arange(m, device=perm.device).unsqueeze(-1) == perm.unsqueeze(-2)
    return onehot.to(dtype)


class LinalgLUFactor(Function):
    node_name = "LinalgLuFactorExBackward0"

    @staticmethod
    def forward(ctx, A):
        f = _lu(A)
        ctx.mark_non_differentiable(f.pivots, f.info)
        ctx.perm = f.perm
        ctx.save_for_backward(f.LU)
        return f.LU, f.pivots, f.info

    @staticmethod
    def backward(ctx, gLU, _gpivots, _ginfo):
        # gLU (..., m, n) -> gA (..., m, n); the rule for each shape in the module docstring
        (LU,) = ctx.saved_tensors
        m, n = LU.shape[-2:]
        L, U = _unpack(LU)  # (..., m, k), (..., k, n)
        if m < n:  # wide: L square, U = [U1 | U2]
            U1, gU2 = U[..., :m], gLU[..., m:]
            phi = tril(L.mH @ gLU[..., :m] - gU2 @ U[..., m:].mH, -1) + \
                triu(gLU[..., :m] @ U1.mH)
            gA = cat([solve_triangular(U1.mH, phi, upper=False, left=False), gU2], -1)
            gA = solve_triangular(L.mH, gA, upper=True, unitriangular=True)
        elif m > n:  # tall: L = [L1; L2], U square
            L1, gL2 = L[..., :n, :], gLU[..., n:, :]
            phi = tril(L1.mH @ gLU[..., :n, :], -1) + \
                triu(gLU[..., :n, :] @ U.mH - L[..., n:, :].mH @ gL2)
            gA = cat([solve_triangular(L1.mH, phi, upper=True, unitriangular=True), gL2], -2)
            gA = solve_triangular(U.mH, gA, upper=False, left=False)
        else:  # square
            phi = tril(L.mH @ gLU, -1) + triu(gLU @ U.mH)  # (tril / triu read gL / gU only)
            gA = solve_triangular(U.mH, phi, upper=False, left=False)
            gA = solve_triangular(L.mH, gA, upper=True, unitriangular=True)
        return take_along_dim(gA, ctx.perm.argsort(-1).unsqueeze(-1).expand(gA.shape), -2)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorEx:
    """(LU, pivots, info): LAPACK's getrf of m x n matrices (batched) with partial
    pivoting: L (unit lower, diagonal not stored) and U packed in LU, pivots (int32, 1-based)
    the row swapped with row k at step k, info 0 or the first zero pivot (1-based)."""
    op = "linalg.lu_factor_ex" if not check_errors else "linalg.lu_factor"
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(A.shape)} instead")
    _check_dtype(op, A.dtype)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented in tgrad; use "
                           f"pivot=True")
    LU, pivots, info = LinalgLUFactor.apply(A)
    if check_errors:
        _raise_singular("torch.linalg.lu_factor", info, "U[{k},{k}] is zero and using it on "
                        "lu_solve would result in a division by zero. If you still want to "
                        "perform the factorization, consider calling linalg.lu(A, pivot) or "
                        "linalg.lu_factor_ex(A, pivot)", RuntimeError)
    return LUFactorEx(LU, pivots, info)


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactor:
    """(LU, pivots) of ``lu_factor_ex``; raises for a singular square A (one host read)."""
    # (checked as lu_factor: a non-tensor or fewer than 2 dims raise under its name)
    square = not isinstance(A, Tensor) or A.ndim < 2 or A.shape[-1] == A.shape[-2]
    res = lu_factor_ex(A, pivot=pivot, check_errors=square)
    return LUFactor(res.LU, res.pivots)


def lu(A: Tensor, *, pivot: bool = True) -> PLU:
    """(P, L, U) with A = P L U: P an m x m permutation matrix (A's dtype), L m x k unit
    lower triangular, U k x n upper triangular, k = min(m, n)."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    L, U = _unpack(LU)
    P = _perm_matrix(_perm_from_pivots(pivots, A.shape[-2]), A.dtype)
    return PLU(P, L, U)


@autocast_policy(None, cpu="native")
def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True,
             adjoint: bool = False) -> Tensor:
    """X with A X = B (left=False: X A = B; adjoint: A^H in place of A) from A's
    ``lu_factor``; batch dims broadcast. Differentiable in LU and B."""
    op = "linalg.lu_solve"
    require_tensor(op, LU, "LU")
    require_tensor(op, pivots, "pivots", 2)
    require_tensor(op, B, "B", 3)
    n = LU.shape[-1]
    if LU.ndim < 2 or LU.shape[-2] != n:
        raise RuntimeError(f"{op}: Expected LU to be square. Got {list(LU.shape)}")
    if pivots.dtype is not dtypes.int32:
        raise RuntimeError(f"{op}: Expected pivots to be int32. Got {pivots.dtype.name}")
    if B.ndim < 2 or (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{'x'.join(map(str, B.shape[-2:]))})")
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH
    _check_dtype("torch." + op, LU.dtype)
    check_same_dtype(op, "LU", LU, "B", B)
    return lu_substitute(LU, _perm_from_pivots(pivots, n), B, adjoint)
