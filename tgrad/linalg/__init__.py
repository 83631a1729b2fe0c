"""Linear algebra with PyTorch's ``torch.linalg`` names: ``cholesky`` / ``cholesky_ex``,
``solve_triangular``, ``cholesky_solve`` (also ``tgrad.cholesky_solve``), the norms
(``vector_norm``, ``matrix_norm``, ``norm``) and ``cross``, ``multi_dot``, ``diagonal``,
``matmul``, ``vecdot``. Everything is a composition of tgrad ops, batched over leading
dims and differentiable to any order; the factorisations and the solves are loops of n
vector steps (O(n) launches on a GPU). LU with partial pivoting gives ``lu_factor`` /
``lu_factor_ex``, ``lu``, ``lu_solve``, ``solve`` / ``solve_ex``, ``inv`` / ``inv_ex``,
``det``, ``slogdet`` and ``matrix_power`` (also ``tgrad.inverse``, ``tgrad.det``,
``tgrad.logdet``, ``tgrad.slogdet``, ``tgrad.matrix_power`` and the Tensor methods).
Householder QR gives ``qr``; parallel Jacobi rotations give ``eigh`` / ``eigvalsh`` and
``svd`` / ``svdvals``, and on those ``pinv``, ``matrix_rank``, ``cond``, ``lstsq``, the
'nuc' / 2 / -2 matrix norms; also ``matrix_exp``, ``tensorinv``, ``tensorsolve``,
``vander``, ``householder_product``. ``ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve``
(Bunch-Kaufman LDL^T of symmetric matrices, LDL^H of Hermitian ones with
``hermitian=True``, LAPACK's sytrf / hetrf / sytrs / hetrs format) run on the
host, CPU tensors only, without derivatives (as PyTorch's). ``eig`` / ``eigvals`` (general
square matrices, complex results) run LAPACK's geev on the host, CPU only. Complex inputs (CPU):
``eig`` / ``eigvals``, ``solve``, ``solve_triangular``, ``inv``, ``det``, ``slogdet``,
``matrix_power``, ``cholesky``, ``eigh`` / ``eigvalsh``, ``svd`` / ``svdvals``, ``pinv``,
``matrix_rank``, the norms, ``qr``, ``lstsq``, ``cond``, ``matrix_exp``,
``householder_product``, ``lu_factor`` / ``lu`` / ``lu_solve``, ``ldl_factor`` /
``ldl_factor_ex`` / ``ldl_solve`` (complex symmetric, or Hermitian with ``hermitian=True``)
and ``tgrad.geqrf``."""

from tgrad.linalg._eig import eig, eigvals
from tgrad.linalg._jacobi import LinAlgError, eigh, eigvalsh, svd, svdvals
from tgrad.linalg._ldl import ldl_factor, ldl_factor_ex, ldl_solve
from tgrad.linalg._lu import det, inv, inv_ex, matrix_power, slogdet, solve, solve_ex
from tgrad.linalg._lu_factor import lu, lu_factor, lu_factor_ex, lu_solve
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
from tgrad.linalg._qr import householder_product, qr
from tgrad.linalg._spectral import (
    cond,
    lstsq,
    matrix_exp,
    matrix_rank,
    pinv,
    tensorinv,
    tensorsolve,
    vander,
)
from tgrad.linalg._triangular import cholesky, cholesky_ex, cholesky_solve, solve_triangular

__all__ = ["cholesky", "cholesky_ex", "cholesky_solve", "cond", "cross", "det", "diagonal",
           "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "inv", "inv_ex",
           "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor",
           "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot",
           "vector_norm", "LinAlgError"]

from tgrad import _out  # noqa: E402

_out.install(globals(), "linalg")  # PyTorch's out= (tgrad/_out.py's NAMESPACE_FUNCTIONS)
