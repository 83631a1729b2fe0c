"""Linear algebra with PyTorch's ``torch.linalg`` names: ``cholesky`` / ``cholesky_ex``,
``solve_triangular``, ``cholesky_solve`` (also ``tgrad.cholesky_solve``), the norms
(``vector_norm``, ``matrix_norm``, ``norm``) and ``cross``, ``multi_dot``, ``diagonal``,
``matmul``, ``vecdot``. Everything is a composition of tgrad ops, batched over leading
dims and differentiable to any order; the factorisation and the solves are loops of n
vector steps (O(n) launches on a GPU). Missing: everything built on LU, QR, SVD or eigen
decompositions (solve, inv, det, slogdet, lstsq, qr, svd, eigh, pinv, matrix_rank,
matrix_exp, the 'nuc' / 2 / -2 matrix norms, cond)."""

from tgrad.linalg._norms import (
    cross,
    diagonal,
    matmul,
    matrix_norm,
    multi_dot,
    norm,
    vecdot,
    vector_norm,
)
from tgrad.linalg._triangular import cholesky, cholesky_ex, cholesky_solve, solve_triangular

__all__ = ["cholesky", "cholesky_ex", "cholesky_solve", "cross", "diagonal", "matmul",
           "matrix_norm", "multi_dot", "norm", "solve_triangular", "vecdot", "vector_norm"]
