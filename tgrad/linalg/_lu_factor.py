# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, L, U, P, LU)
"""The LU factors as a public API: ``lu_factor`` / ``lu_factor_ex`` (LAPACK's packed LU
and 1-based pivots), ``lu`` (P, L, U with A = P L U) and ``lu_solve``, for m x n matrices
batched over leading dims, from tgrad/linalg/_lu.py's getrf.

    lu_factor backward (square A = P L U, PyTorch's linalg_lu_backward):
        gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}
    with gL = tril(gLU, -1), gU = triu(gLU); written with solve_triangular, so it is
    differentiable again. Complex A (CPU): the same rule; the pivots are LAPACK's (the
    largest |Re| + |Im|). Rectangular factors have no backward here (a clear error).
    ``lu`` (unpacking with tril/triu) and ``lu_solve`` (the permutation as a gather, two
    triangular solves reading one triangle of LU each) are compositions, differentiable
    through ``lu_factor``.
"""

from __future__ import annotations

from typing import NamedTuple

from tgrad import dtypes
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
from tgrad.tensor import Tensor

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve"]


class LUFactor(NamedTuple):
    LU: Tensor
    pivots: Tensor


class LUFactorEx(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


class PLU(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


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
    onehot = perm.unsqueeze(-1) == arange(m, device=perm.device)  # [i, j]: perm[i] == j
    return onehot.to(dtype).mT


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
        (LU,) = ctx.saved_tensors
        m, n = LU.shape[-2:]
        if m != n:
            raise NotImplementedError(f"linalg.lu_factor: the backward of a {m} x {n} "
                                      f"(non-square) factorisation is not implemented in "
                                      f"tgrad; factor square matrices")
        L, U = _unpack(LU)
        phi = tril(L.mH @ gLU, -1) + triu(gLU @ U.mH)  # gL = tril(gLU, -1), gU = triu(gLU)
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
    res = lu_factor_ex(A, pivot=pivot, check_errors=A.shape[-1] == A.shape[-2])
    return LUFactor(res.LU, res.pivots)


def lu(A: Tensor, *, pivot: bool = True) -> PLU:
    """(P, L, U) with A = P L U: P an m x m permutation matrix (A's dtype), L m x k unit
    lower triangular, U k x n upper triangular, k = min(m, n)."""
    LU, pivots, _ = lu_factor_ex(A, pivot=pivot)
    L, U = _unpack(LU)
    P = _perm_matrix(_perm_from_pivots(pivots, A.shape[-2]), A.dtype)
    return PLU(P, L, U)


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
