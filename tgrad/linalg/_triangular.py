# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, L, X)
"""Cholesky factorisation and triangular solves as compositions of tgrad ops.

Forwards are loops of vector ops (one column or one row per step): O(n) steps of a few
launches each on a GPU, fine for the small and moderate n of research code (covariances,
kernels of a few hundred points), not for large dense factorisations. On the CPU
(float32/64, complex64/128) the same loops run on the NumPy arrays (``host_loop``), one
vectorised step per column or row over the whole batch with no autograd dispatch per op:
the same arithmetic, so the same bits. (cholesky of n >= 8 on the CPU calls LAPACK's potrf
instead, the loop being kept for a non-positive-definite batch: ``_host_lapack``.)
Backwards are
PyTorch's formulas written with ``solve_triangular``, ``matmul`` and ``tril``, so they are
differentiable again (double backward works). (A plain CPU backward of cholesky, without
create_graph, runs the same formula in NumPy with the solves as products with L^{-1}:
``_cholesky_backward_host``.)

    cholesky:          gA = L^{-H} Phi(L^H gL) L^{-1}   (Murray 2016; Phi: tril with the
                       diagonal halved, taken as PyTorch does, 0.5 (X + tril(X, -1)^H))
    solve_triangular:  X = A^{-1} B (left) or B A^{-1} (right);
                       gB = A^{-H} gX (left) or gX A^{-H} (right),
                       gA = -gB X^H (left) or -X^H gB (right), projected on A's triangle
                       (strict triangle when unitriangular).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.linalg import _host_lapack
from tgrad.ops import elementwise as ew
from tgrad.ops._common import broadcast_or_raise, fresh, require_tensor, wrap
from tgrad.ops.composite import tril, triu
from tgrad.ops.creation import zeros
from tgrad.ops.matmul import matmul
from tgrad.tensor import Tensor

__all__ = ["cholesky", "cholesky_ex", "solve_triangular", "cholesky_solve"]

# dtypes whose CPU factorisations and substitutions run as loops of NumPy steps on the raw
# arrays (the same elementwise steps and products as the tgrad-op loops, without one
# autograd dispatch per op); half dtypes keep the tgrad-op loops (their float32 compute)
_HOST_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64),
                          np.dtype(np.complex128)))


def host_loop(*ts: Tensor) -> bool:
    """Whether the loops run on the tensors' NumPy arrays: CPU tensors of a float32/64 or
    complex64/128 dtype."""
    return all(t.device.type == "cpu" and t.dtype.np in _HOST_DTYPES for t in ts)


def _check_square(op: str, A: Tensor, name: str = "A") -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _check_float(op: str, A: Tensor) -> None:
    if not (A.dtype.is_floating_point or A.dtype.is_complex):
        raise not_floating_error(op, A.dtype)


def not_floating_error(op: str, dt) -> Exception:
    """PyTorch's error for a linalg op's input that is neither floating nor complex."""
    return RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                        f"{_torch_dtype_name(dt)}")


def _torch_dtype_name(dt) -> str:
    return dtypes.SCALAR_TYPE_NAMES.get(dt, dt.name)


def check_same_dtype(op: str, a_name: str, A: Tensor, b_name: str, B: Tensor,
                     end: str = "") -> None:
    """PyTorch's error for solver operands of two dtypes (its solvers do not promote: a
    real A with a complex B raises too); convert one with .to(the other's dtype). ``end``:
    the text's last character where PyTorch's has one (cholesky_solve's ".")."""
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected {a_name} and {b_name} to have the same dtype, but "
                           f"found {a_name} of type {_torch_dtype_name(A.dtype)} and {b_name} "
                           f"of type {_torch_dtype_name(B.dtype)} instead{end}")


# --------------------------------------------------------------------------------- cholesky
class Cholesky(Function):
    """L (lower) with A = L L^H, reading A's lower triangle (Cholesky-Crout, column by
    column: L[j:, j] = (A[j:, j] - L[j:, :j] L[j, :j]^H) / sqrt(Re of that at j), L[j, j] =
    that square root: A's diagonal is taken as real, as LAPACK's potrf). A column whose
    pivot is not > 0 gets NaN (cholesky_ex reports it in ``info``)."""

    node_name = "LinalgCholeskyExBackward0"

    @staticmethod
    def forward(ctx, A, upper):
        if upper:  # the upper triangle read as A^H's lower one (gA below as PyTorch's)
            A = A.mH
        if host_loop(A):  # CPU: LAPACK's potrf, else (not PD, NaN/inf, empty) the loop
            a = A.detach().numpy()
            L = _host_lapack.cholesky(a)
            L = wrap(L if L is not None else _cholesky_host(a), A.device)
            ctx.save_for_backward(L)
            return L
        n = A.shape[-1]
        L = zeros(A.shape, dtype=A.dtype, device=A.device)
        for j in range(n):
            col = A[..., j:, j]
            if j > 0:
                row = L[..., j, :j]
                row = row.conj() if row.dtype.is_complex else row
                col = col - matmul(L[..., j:, :j], row.unsqueeze(-1)).squeeze(-1)
            d = col[..., 0]
            if d.dtype.is_complex:  # Hermitian A: the pivot is real (its Im part dropped)
                d = d.real
            piv = ew.sqrt(ew.where(d > 0, d, math.nan))  # NaN, not a warning, when not PD
            L[..., j:, j] = col / piv.unsqueeze(-1)
            if col.dtype.is_complex:  # L[j, j] = Re(pivot) / sqrt(Re pivot), real (LAPACK's)
                L[..., j, j] = piv.to(col.dtype)
        ctx.save_for_backward(L)
        return L

    @staticmethod
    def backward(ctx, gL):
        (L,) = ctx.saved_tensors
        if (not differentiable_formula() and host_loop(L, gL) and gL.dtype is L.dtype
                and _host_lapack.LAPACK_ON_CPU):
            ga = _cholesky_backward_host(L.detach().numpy(), gL.detach().numpy())
            if ga is not None:
                return wrap(ga, L.device), None
        gA = tril(matmul(L.mH, gL))
        gA = 0.5 * (gA + tril(gA, -1).mH)
        gA = solve_triangular(L.mH, gA, upper=True, left=True)
        return solve_triangular(L, gA, upper=False, left=False), None


def _cholesky_backward_host(low: np.ndarray, g: np.ndarray) -> np.ndarray | None:
    """Cholesky's backward on the CPU (no create_graph): gA = L^{-H} S L^{-1},
    S = (P + tril(P, -1)^H) / 2 with P = tril(L^H gL) (the same formula as the tgrad ops',
    whose two solves become products with Linv = L^{-1} from _tril_inv_host), in float64 /
    complex128 for the single-precision dtypes, rounded once. low, g: (..., n, n) of one
    dtype; None where _tril_inv_host does not apply (the caller's ops then run)."""
    linv = _tril_inv_host(low)
    if linv is None:
        return None
    wide = linv.dtype
    p = np.tril(np.matmul(np.swapaxes(low, -1, -2).conj().astype(wide),
                          g.astype(wide, copy=False)))
    s = p + np.swapaxes(np.tril(p, -1), -1, -2).conj()
    s *= 0.5
    return np.matmul(np.swapaxes(linv, -1, -2).conj(), np.matmul(s, linv)).astype(g.dtype)


def _cholesky_host(a: np.ndarray) -> np.ndarray:
    """``Cholesky.forward``'s loop on a NumPy array a (..., n, n), one column per step over
    the whole batch: L[j:, j] = (a[j:, j] - L[j:, :j] conj(L[j, :j])) / sqrt(pivot), NaN
    from a pivot that is not > 0 on; returns L (..., n, n), a new array."""
    n = a.shape[-1]
    L = np.zeros(a.shape, a.dtype)
    cplx = a.dtype.kind == "c"
    with np.errstate(all="ignore"):
        for j in range(n):
            col = a[..., j:, j]
            if j > 0:
                row = L[..., j, :j]
                row = row.conj() if cplx else row
                col = col - np.matmul(L[..., j:, :j], row[..., None])[..., 0]
            d = col[..., 0].real if cplx else col[..., 0]
            piv = np.sqrt(np.where(d > 0, d, np.nan))  # (...,) real
            L[..., j:, j] = col / piv[..., None].astype(a.dtype)
            if cplx:  # L[j, j] = sqrt(Re pivot), real (LAPACK's)
                L[..., j, j] = piv
    return L


CholeskyEx = return_types.linalg_cholesky_ex  # PyTorch's torch.return_types.linalg_cholesky_ex


@autocast_policy(None, cpu="fp32")
def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyEx:
    """(L, info): the Cholesky factor and, per matrix, 0 or the order k of the first
    leading minor that is not positive-definite (int32, batch shape); never raises for a
    non-positive-definite input unless ``check_errors`` (then as ``cholesky``)."""
    op = "linalg.cholesky_ex" if not check_errors else "linalg.cholesky"
    require_tensor(op, A, "A")
    _check_square(op, A)
    _check_float(op, A)
    L = Cholesky.apply(A, bool(upper))
    if host_loop(L):  # (the same info from L's NumPy array, without ~8 op dispatches)
        info = wrap(_cholesky_info_host(L._data), L.device)
        if check_errors:
            _raise_not_pd("linalg.cholesky", info)
        return CholeskyEx(fresh(L.mH) if upper else L, info)
    d = L.detach().diagonal(dim1=-2, dim2=-1)
    if d.dtype.is_complex:
        d = d.real
    bad = ew.logical_not(d > 0)
    if A.shape[-1] == 0:
        info = zeros(A.shape[:-2], dtype=dtypes.int32, device=A.device)
    else:
        first = bad.to(dtypes.int32).argmax(-1).to(dtypes.int32) + 1
        info = ew.where(bad.any(-1), first, 0).to(dtypes.int32)
    if check_errors:
        _raise_not_pd("linalg.cholesky", info)
    return CholeskyEx(fresh(L.mH) if upper else L, info)  # (U: a new tensor, not a view)


def _cholesky_info_host(low: np.ndarray) -> np.ndarray:
    """cholesky_ex's info from L (..., n, n): per matrix 0, or 1 + the index of the first
    diagonal entry that is not > 0 (NaN included); int32 of the batch shape."""
    d = np.diagonal(low, axis1=-2, axis2=-1)
    if d.dtype.kind == "c":
        d = d.real
    with np.errstate(invalid="ignore"):
        bad = ~(d > 0)
    if low.shape[-1] == 0:
        return np.zeros(low.shape[:-2], np.int32)
    return np.where(bad.any(-1), bad.argmax(-1) + 1, 0).astype(np.int32)


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not compute its result (``torch.linalg.LinAlgError``;
    a RuntimeError)."""


def _raise_not_pd(op: str, info: Tensor) -> None:
    """One host read of ``info``: PyTorch's error for the first failing matrix."""
    flat = info.reshape(-1).tolist()
    for b, k in enumerate(flat):
        if k:
            where = f"(Batch element {b}): " if info.ndim > 0 else ""
            raise LinAlgError(f"{op}: {where}The factorization could not be completed "
                               f"because the input is not positive-definite (the leading "
                               f"minor of order {k} is not positive-definite).")


@autocast_policy(None, cpu="fp32")
def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L (lower; upper=True: U = L^H) of Hermitian positive-definite
    matrices A = L L^H, batched over leading dims; reads A's lower triangle (upper: its
    upper one). Raises PyTorch's error for a non-positive-definite input, which costs one
    synchronizing host read of the per-matrix status (``cholesky_ex`` returns it instead).
    The forward is n steps of vector ops (O(n) launches)."""
    return cholesky_ex(A, upper=upper, check_errors=True).L


# ------------------------------------------------------------------------- solve_triangular
class SolveTriangular(Function):
    """X with A X = B (left) or X A = B (right), A triangular (the other triangle is not
    read); A and B already have the same batch shape. Forward: substitution, one row
    (left) or column (right) of X per step."""

    node_name = "LinalgSolveTriangularBackward0"

    @staticmethod
    def forward(ctx, A, B, upper, left, unitriangular):
        if not left:  # X A = B  <=>  A^T X^T = B^T
            X = _substitute(A.mT, B.mT, not upper, unitriangular).mT
        else:
            X = _substitute(A, B, upper, unitriangular)
        ctx.flags = (upper, left, unitriangular)
        need_a, need_b = ctx.needs_input_grad[:2]
        ctx.save_for_backward(A, X if need_a else None)
        return X

    @staticmethod
    def backward(ctx, gX):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.flags
        need_a, need_b = ctx.needs_input_grad[:2]
        gB = solve_triangular(A.mH, gX, upper=not upper, left=left, unitriangular=unit)
        gA = None
        if need_a:
            gA = -matmul(gB, X.mH) if left else -matmul(X.mH, gB)
            k = 1 if unit else 0
            gA = triu(gA, k) if upper else tril(gA, -k)
        return gA, (gB if need_b else None), None, None, None


def _substitute(A: Tensor, B: Tensor, upper: bool, unit: bool) -> Tensor:
    """A X = B by forward (lower) or back (upper) substitution, one row of X per step (on
    the CPU on the NumPy arrays, ``_substitute_host``: the same steps)."""
    if host_loop(A, B):
        return wrap(_substitute_host(A.detach().numpy(), B.detach().numpy(), upper, unit),
                    B.device)
    n = A.shape[-1]
    X = zeros(B.shape, dtype=B.dtype, device=B.device)
    for i in (range(n - 1, -1, -1) if upper else range(n)):
        r = B[..., i, :]
        if upper and i < n - 1:
            r = r - matmul(A[..., i:i + 1, i + 1:], X[..., i + 1:, :]).squeeze(-2)
        elif not upper and i > 0:
            r = r - matmul(A[..., i:i + 1, :i], X[..., :i, :]).squeeze(-2)
        if not unit:
            r = r / A[..., i, i].unsqueeze(-1)
        X[..., i, :] = r
    return X


def _substitute_host(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool) -> np.ndarray:
    """``_substitute`` on NumPy arrays, a (..., n, n) and b (..., n, k) of one batch shape:
    x[i] = (b[i] - a[i, i+1:] x[i+1:]) / a[i, i] (upper; lower: a[i, :i] x[:i]), each
    step one product over the whole batch; returns x (..., n, k), a new array."""
    n = a.shape[-1]
    x = np.zeros(b.shape, b.dtype)
    with np.errstate(all="ignore"):  # (a zero diagonal: inf/NaN, as the tgrad ops give)
        for i in (range(n - 1, -1, -1) if upper else range(n)):
            r = b[..., i, :]
            if upper and i < n - 1:
                r = r - np.matmul(a[..., i:i + 1, i + 1:], x[..., i + 1:, :])[..., 0, :]
            elif not upper and i > 0:
                r = r - np.matmul(a[..., i:i + 1, :i], x[..., :i, :])[..., 0, :]
            if not unit:
                r = r / a[..., i, i][..., None]
            x[..., i, :] = r
    return x


@autocast_policy(None, cpu="native")
def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """X with A X = B (left=True) or X A = B (left=False) for triangular A (upper or lower
    triangle; unitriangular: the diagonal is taken as ones and not read), batch dims
    broadcast. n substitution steps of vector ops (O(n) launches)."""
    op = "linalg.solve_triangular"
    require_tensor(op, A, "A")
    require_tensor(op, B, "B", 2)
    _check_square(op, A)
    if B.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    # PyTorch 2.13's result has A's dtype: B is cast to it (a complex B to a real A with
    # PyTorch's warning that the imaginary part is discarded)
    dt = A.dtype
    if not (dt.is_floating_point or dt.is_complex):  # PyTorch's (its kernel's) error
        raise dtypes.kernel_not_implemented("triangular_solve_cpu", dt,
                                            f" ({op} takes floating point or complex tensors)")
    B = B.to(dt)
    batch = broadcast_or_raise(op, A.shape[:-2], B.shape[:-2])  # (NumPy's ValueError leaked)
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, n, n)
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    return SolveTriangular.apply(A, B, bool(upper), bool(left), bool(unitriangular))


@autocast_policy(None, cpu="fp32")
def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """X with A X = B for A = L L^H (upper: A = U^H U) given the Cholesky factor: two
    triangular solves (differentiable in B and L)."""
    require_tensor("cholesky_solve", B)
    require_tensor("cholesky_solve", L, "input2", 2)
    if B.ndim < 2 or L.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {B.ndim} "
                           f"dimensions instead" if B.ndim < 2 else
                           f"u should have at least 2 dimensions, but has {L.ndim} "
                           f"dimensions instead")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"A must be batches of square matrices, but they are "
                           f"{L.shape[-2]} by {L.shape[-1]} matrices")
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{L.shape[-2]} by {L.shape[-1]} but each b matrix is "
                           f"{B.shape[-2]} by {B.shape[-1]}")
    check_same_dtype("cholesky_solve", "b", B, "A", L, ".")  # PyTorch's text: no promotion
    if host_loop(B, L) and _host_lapack.LAPACK_ON_CPU:
        batch = broadcast_or_raise("cholesky_solve", B.shape[:-2], L.shape[:-2])
        if tuple(L.shape[:-2]) != batch:
            L = L.expand(*batch, *L.shape[-2:])
        if tuple(B.shape[:-2]) != batch:
            B = B.expand(*batch, *B.shape[-2:])
        return CholeskySolve.apply(B, L, bool(upper))
    if upper:
        Y = solve_triangular(L.mH, B, upper=False)
        return solve_triangular(L, Y, upper=True)
    Y = solve_triangular(L, B, upper=False)
    return solve_triangular(L.mH, Y, upper=True)


# --------------------------------------------------------------- cholesky_solve on the CPU
class CholeskySolve(Function):
    """X = A^{-1} B, A = L L^H (upper: U^H U, L = U^H), B (..., n, k) and the factor
    (..., n, n) of one batch shape, CPU float32/64 / complex64/128 (``cholesky_solve``;
    elsewhere it is two SolveTriangular nodes). Reads only the factor's triangle.

    Forward: Linv = L^{-1} by blocked recursion (``_tril_inv``, log2 n batched products in
    place of n substitution steps), X = Linv^H (Linv B), in float64 / complex128 for the
    single-precision dtypes (rounded once). Backward (PyTorch's formula, projected on the
    factor's triangle as the two solves' backwards are):
        gB = A^{-1} gX,  S = gB X^H + X gB^H,  gL = tril(-S L)  (upper: gU = triu(-U S))
    with NumPy and the saved Linv, or under create_graph in tgrad ops (differentiable)."""

    node_name = "CholeskySolveBackward0"

    @staticmethod
    def forward(ctx, B, L, upper):
        b, f = B.detach().numpy(), L.detach().numpy()
        low = np.swapaxes(f, -1, -2).conj() if upper else f
        linv = _tril_inv_host(low)
        if linv is None:  # not finite / a zero pivot / empty: the substitution loops
            y = _substitute_host(low, b, False, False)
            x = _substitute_host(np.swapaxes(low, -1, -2).conj(), y, True, False)
        else:
            x = _chol_apply(linv, b).astype(b.dtype)
        X = wrap(x, B.device)
        ctx.upper, ctx.linv = upper, linv
        ctx.save_for_backward(L, X)
        return X

    @staticmethod
    def backward(ctx, gX):
        L, X = ctx.saved_tensors
        upper = ctx.upper
        need_b, need_l = ctx.needs_input_grad[:2]
        if differentiable_formula() or ctx.linv is None:  # create_graph / forward AD: tgrad ops
            gB = cholesky_solve(gX, L, upper)
            gL = None
            if need_l:
                S = matmul(gB, X.mH)
                S = S + S.mH
                gL = triu(-matmul(L, S)) if upper else tril(-matmul(S, L))
            return (gB if need_b else None), gL, None
        g = gX.detach().numpy()
        x = X.detach().numpy()
        gb = _chol_apply(ctx.linv, g).astype(g.dtype)
        gl = None
        if need_l:
            s = np.matmul(gb, np.swapaxes(x, -1, -2).conj())
            s = s + np.swapaxes(s, -1, -2).conj()
            f = L.detach().numpy()
            gl = wrap(np.triu(-np.matmul(np.triu(f), s)) if upper
                      else np.tril(-np.matmul(s, np.tril(f))), L.device)
        return (wrap(gb, gX.device) if need_b else None), gl, None


def _chol_apply(linv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Linv^H (Linv b) in linv's (wide) dtype: A^{-1} b for A = L L^H."""
    y = np.matmul(linv, b.astype(linv.dtype))
    return np.matmul(np.swapaxes(linv, -1, -2).conj(), y)


def _diag_blocks(a: np.ndarray, t: int) -> np.ndarray:
    """The (b, m / t, t, t) view of the t x t diagonal blocks of a (b, m, m), contiguous."""
    b, m, _ = a.shape
    st = a.strides[-1]
    return np.lib.stride_tricks.as_strided(a, (b, m // t, t, t),
                                           (a.strides[0], (m + 1) * t * st, m * st, st))


def _tril_inv_host(low: np.ndarray) -> np.ndarray | None:
    """L^{-1} (..., n, n) of the lower triangle of low (the other one is not read), in
    float64 / complex128 for the single-precision dtypes; None where it does not apply:
    empty, or a non-finite result (a non-finite entry in the triangle, a zero diagonal
    entry: the caller's substitution loops give their inf/NaN). Blocked recursion on the
    size padded to a power of 2 m (identity padding): with the inverses of the t/2-blocks
    on the diagonal known, each t-block's lower-left one is
        inv[s:, :s] = -inv[s:, s:] (L[s:, :s] inv[:s, :s])     (s = t / 2)
    one batched product pair over every block per level (log2 m levels)."""
    n = low.shape[-1]
    if low.size == 0:
        return None
    batch = low.shape[:-2]
    m = 1 << (n - 1).bit_length()
    wide = _host_lapack._WIDE.get(low.dtype, low.dtype)
    p = np.empty((int(np.prod(batch)), m, m), wide)
    p[:, :n, :n] = low.reshape(-1, n, n)
    if m > n:  # identity padding (its upper blocks are not read)
        p[:, n:, :] = 0
        p.reshape(-1, m * m)[:, (m + 1) * n::m + 1] = 1
    inv = np.zeros_like(p)
    with np.errstate(all="ignore"):
        inv.reshape(-1, m * m)[:, ::m + 1] = 1 / p.reshape(-1, m * m)[:, ::m + 1]
        s = 1
        while s < m:
            t = 2 * s
            blk, iv = _diag_blocks(p, t), _diag_blocks(inv, t)
            iv[..., s:, :s] = np.matmul(iv[..., s:, s:],
                                        np.matmul(blk[..., s:, :s], iv[..., :s, :s]))
            np.negative(iv[..., s:, :s], out=iv[..., s:, :s])
            s = t
        if not np.isfinite(inv).all():
            return None
    return inv[:, :n, :n].reshape(*batch, n, n)
