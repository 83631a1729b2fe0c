# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, B, X, LU)
"""LU factorisation with partial pivoting and what is built on it: ``solve``, ``inv``,
``det``, ``slogdet`` (with ``_ex`` forms returning LAPACK's ``info``), and the
``torch.inverse`` / ``det`` / ``logdet`` / ``slogdet`` aliases. Compositions of tgrad ops,
batched over leading dims; the factorisation is n steps of vector ops (O(n) launches on a
GPU), like cholesky's; on the CPU the same steps run on the NumPy array (``_getrf_host``),
and solve / inv / slogdet / float32 det go to np.linalg's LAPACK where it applies
(``_host_lapack``: not for a singular matrix in the batch, NaN/inf, empty tensors).

    A = P L U          L unit lower, U upper, packed in one matrix LU as LAPACK's getrf;
                       row k swapped with the row of the largest |entry| at or below it in
                       column k. A zero pivot (a singular matrix) skips that column's
                       elimination, as getrf does: U gets the zero, info says where.
    solve  X = A^{-1} B:  gB = A^{-H} gX,  gA = -gB X^H
    inv    X = A^{-1}  :  solve(A, I) (so gA = -A^{-H} gX A^{-H})
    det    d = sign(P) prod diag(U):   gA = g d A^{-H}
    slogdet (s, l = log|d|):           gA = g_l A^{-H}   (s is not differentiable)

The backward rules call ``solve`` itself, so they are differentiable again (double
backward works). Without create_graph, solve's backward reuses the forward's LU instead
(after the CPU's LAPACK forward, tgrad/linalg/_host_lapack.py: gesv of A^H).
At a singular A, det's gradient (the cofactor matrix) comes from the SVD instead (finite,
as PyTorch's); slogdet's is inf/NaN there (log|det| has no finite derivative).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import is_grad_enabled, no_grad
from tgrad.linalg import _host_lapack as lapack
from tgrad.linalg._triangular import (
    LinAlgError,
    _check_square,
    _torch_dtype_name,
    check_same_dtype,
    host_loop,
    not_floating_error,
    solve_triangular,
)
from tgrad.ops import elementwise as ew
from tgrad.ops._common import broadcast_or_raise, fresh, require_tensor, wrap
from tgrad.ops.complex_ops import complex_sgn
from tgrad.ops.creation import arange, eye, ones, zeros
from tgrad.ops.gathering import take_along_dim
from tgrad.ops.reduce import prod
from tgrad.ops.shape import cat, stack
from tgrad.tensor import Tensor

__all__ = ["solve", "solve_ex", "inv", "inv_ex", "det", "slogdet", "inverse", "logdet",
           "matrix_power"]


class _Factors(NamedTuple):
    LU: Tensor  # (..., m, n): L below the diagonal (unit diagonal implied), U on and above
    perm: Tensor  # (..., m) int64: row i of P^T A = L U is row perm[i] of A (A = P L U)
    sign: Tensor  # (...,) of A's dtype: sign(P), +-1
    info: Tensor  # (...,) int32: 0, or the 1-based index of the first zero pivot
    pivots: Tensor  # (..., min(m, n)) int32: LAPACK's, row k was swapped with pivots[k] - 1


def _check_dtype(op: str, dt) -> None:
    """A float32/float64 or complex dtype (complex: CPU only, as every complex tensor of
    tgrad), else PyTorch's error."""
    if not (dt.is_floating_point or dt.is_complex):
        raise not_floating_error(op, dt)
    if dt.itemsize < 4:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                           f"{_torch_dtype_name(dt)}; convert with "
                           f".float() or .double()")


def _lu(A: Tensor) -> _Factors:
    """getrf on a batch of m x n matrices (no graph is recorded). On the CPU the loop runs
    on the NumPy array (``_getrf_host``: the same steps, so the same bits and pivots)."""
    if host_loop(A):
        return _lu_host(A)
    m, n = A.shape[-2], A.shape[-1]
    batch = tuple(A.shape[:-2])
    dev = A.device
    with no_grad():
        LU = A.detach().contiguous().clone()
        rows = arange(m, device=dev)
        perm = rows.expand(*batch, m)
        sign = ones(batch, dtype=A.dtype, device=dev)
        pivots = []
        for k in range(min(m, n)):
            # pivot: the largest |entry| of column k at or below the diagonal (complex:
            # |Re| + |Im|, LAPACK's izamax, so that the pivots are getrf's)
            col = LU[..., k:, k]
            size = col.real.abs() + col.imag.abs() if col.dtype.is_complex else col.abs()
            p = size.argmax(-1) + k  # (...,)
            pivots.append(p)
            if k < m - 1:  # swap rows k and p (a gather of whole rows, per matrix)
                r = swap_order(rows, k, p.unsqueeze(-1))  # (..., m)
                LU = take_along_dim(LU, r.unsqueeze(-1).expand(*batch, m, n), -2)
                perm = take_along_dim(perm, r, -1)
                sign = ew.where(p != k, -sign, sign)
                piv = LU[..., k, k]
                nonzero = piv != 0
                col = LU[..., k + 1:, k]
                # l = column / pivot (left as it is, all zeros, when the pivot is 0)
                lcol = ew.where(nonzero.unsqueeze(-1),
                                col / ew.where(nonzero, piv, 1).unsqueeze(-1), col)
                LU[..., k + 1:, k] = lcol
                LU[..., k + 1:, k + 1:] -= lcol.unsqueeze(-1) * LU[..., k:k + 1, k + 1:]
        lapack = (stack(pivots, -1) + 1).to(dtypes.int32) if pivots else \
            zeros(batch + (0,), dtype=dtypes.int32, device=dev)
        if not pivots:
            info = zeros(batch, dtype=dtypes.int32, device=dev)
        else:
            zero = LU.diagonal(dim1=-2, dim2=-1) == 0
            first = zero.to(dtypes.int32).argmax(-1).to(dtypes.int32) + 1
            info = ew.where(zero.any(-1), first, 0).to(dtypes.int32)
    return _Factors(LU, perm, sign, info, lapack)


def _lu_host(A: Tensor) -> _Factors:
    """``_lu`` of a CPU tensor: ``_getrf_host`` on a copy of its array, batch flattened."""
    batch, (m, n) = tuple(A.shape[:-2]), tuple(A.shape[-2:])
    a = np.array(A.detach().numpy(), order="C", copy=True).reshape(math.prod(batch), m, n)
    perm, sign, piv = _getrf_host(a)
    d = a[:, np.arange(min(m, n)), np.arange(min(m, n))]  # (b, min(m, n)): U's diagonal
    zero = d == 0
    first = zero.argmax(-1) + 1 if d.shape[-1] else 0
    info = np.where(zero.any(-1), first, 0).astype(np.int32)

    def out(x: np.ndarray, shape: tuple) -> Tensor:
        return wrap(x.reshape(batch + shape), A.device)
    return _Factors(out(a, (m, n)), out(perm, (m,)), out(sign, ()), out(info, ()),
                    out((piv + 1).astype(np.int32), (min(m, n),)))


def _getrf_host(a: np.ndarray) -> tuple:
    """``_lu``'s loop in place on a (b, m, n) NumPy array, one vectorised step per column
    over the batch: a becomes the packed LU. Returns perm (b, m) int64, sign (b,) of a's
    dtype and the 0-based pivots (b, min(m, n)) int64. The pivot rule is ``_lu``'s (the
    first largest |entry|, |Re| + |Im| for complex) and so are the elementwise steps."""
    b, m, n = a.shape
    at = np.arange(b)
    perm = np.tile(np.arange(m), (b, 1))
    sign = np.ones(b, a.dtype)
    pivots = np.zeros((b, min(m, n)), np.int64)
    with np.errstate(all="ignore"):  # (a singular or non-finite A: inf/NaN, no warnings)
        for k in range(min(m, n)):
            col = a[:, k:, k]
            size = np.abs(col.real) + np.abs(col.imag) if a.dtype.kind == "c" else np.abs(col)
            p = size.argmax(-1) + k  # (b,)
            pivots[:, k] = p
            if k == m - 1:
                continue
            for x in (a, perm):  # swap rows k and p of each matrix
                row_k = x[:, k].copy()
                x[:, k] = x[at, p]
                x[at, p] = row_k
            sign = np.where(p != k, -sign, sign)
            piv = a[:, k, k]
            nonzero = piv != 0
            col = a[:, k + 1:, k]  # l = column / pivot (left as it is when the pivot is 0)
            lcol = np.where(nonzero[:, None], col / np.where(nonzero, piv, 1)[:, None], col)
            a[:, k + 1:, k] = lcol
            a[:, k + 1:, k + 1:] -= lcol[:, :, None] * a[:, k:k + 1, k + 1:]
    return perm, sign, pivots


def swap_order(rows: Tensor, k: int, pk: Tensor) -> Tensor:
    """The row order 0..m-1 (``rows``) with rows k and pk (..., 1) exchanged, per matrix."""
    return ew.where(rows == k, pk, ew.where(rows == pk, k, rows))


def lu_substitute(LU: Tensor, perm: Tensor, B: Tensor, adjoint: bool = False) -> Tensor:
    """A X = B (adjoint: A^H X = B) from A's packed factors P^T A = L U (row i of P^T A is
    row perm[i] of A) by two triangular solves reading one triangle of LU each; batch dims
    broadcast. Differentiable in LU and B when grad mode is on."""
    if not adjoint:  # L U X = P^T B
        Y = solve_triangular(LU, _rows(B, perm), upper=False, unitriangular=True)
        return solve_triangular(LU, Y, upper=True)
    # A^H = U^H L^H P^T:  U^H W = B,  L^H V = W,  X = P V
    W = solve_triangular(LU.mH, B, upper=False)
    V = solve_triangular(LU.mH, W, upper=True, unitriangular=True)
    return _rows(V, perm.argsort(-1))


def _rows(X: Tensor, order: Tensor) -> Tensor:
    """Row i of the result is row order[i] of X (batch dims broadcast)."""
    idx = order.unsqueeze(-1)
    while idx.ndim < X.ndim:
        idx = idx.unsqueeze(0)
    while X.ndim < idx.ndim:
        X = X.unsqueeze(0)
    return take_along_dim(X, idx, -2)


# ------------------------------------------------------------------------------------ solve
class LinalgSolve(Function):
    """X = A^{-1} B for A (..., n, n) and B (..., n, k) of one batch shape."""

    node_name = "LinalgSolveExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        fast = _host_solve(A, B, lambda a, b: lapack.solve(a, b))
        if fast is not None:  # CPU: LAPACK's gesv (no factors kept: see backward)
            ctx.factors = None
            ctx.save_for_backward(A, fast[0])
            return fast
        f = _lu(A)
        X = lu_substitute(f.LU, f.perm, B)
        ctx.factors = f
        ctx.save_for_backward(A, X)
        return X, f.info

    @staticmethod
    def backward(ctx, gX, _ginfo):
        A, X = ctx.saved_tensors
        if differentiable_formula() or ctx.factors is None:  # create_graph or forward
            # over reverse: a differentiable solve (double backward, tangents); a plain
            # backward after the CPU's gesv: gesv of A^H (this node's forward again)
            gB = _solve(A.mH, gX)
        else:
            gB = lu_substitute(ctx.factors.LU, ctx.factors.perm, gX, adjoint=True)
        need_a, need_b = ctx.needs_input_grad
        gA = -(gB @ X.mH) if need_a else None
        return gA, (gB if need_b else None)


class LinalgInv(LinalgSolve):
    """X = A^{-1} (B the identity, as solve's); dA = -X^H g X^H, from the saved output X
    alone (PyTorch's linalg_inv_ex rule), so a hook on X acts on the double backward as in
    PyTorch (solve's rule reads A too)."""

    node_name = "LinalgInvExBackward0"

    @staticmethod
    def forward(ctx, A, B):
        fast = _host_solve(A, B, lambda a, b: lapack.inv(a))  # CPU: LAPACK's gesv
        X, info = fast if fast is not None else _lu_solve(A, B)
        ctx.save_for_backward(X)  # not A: changing A in place before backward is fine
        return X, info

    @staticmethod
    def backward(ctx, gX, _ginfo):
        (X,) = ctx.saved_tensors
        Xh = X.mH
        return -(Xh @ gX @ Xh), None


def _lu_solve(A: Tensor, B: Tensor) -> tuple:
    """(X, info) of A X = B by ``_lu`` and two triangular solves."""
    f = _lu(A)
    return lu_substitute(f.LU, f.perm, B), f.info


def _host_solve(A: Tensor, B: Tensor, fn) -> tuple | None:
    """(X, info = 0) from ``fn`` (a _host_lapack solver of A's and B's NumPy arrays, same
    batch shape) on the CPU, or None where it does not apply (the caller's LU loop then
    gives inf/NaN and info for a singular matrix)."""
    if not host_loop(A, B):
        return None
    x = fn(A.detach().numpy(), B.detach().numpy())
    if x is None:
        return None
    info = zeros(tuple(A.shape[:-2]), dtype=dtypes.int32, device=A.device)
    return wrap(np.ascontiguousarray(x), A.device), info


def _solve(A: Tensor, B: Tensor) -> Tensor:
    X, info = LinalgSolve.apply(A, B)
    return X


SolveEx = return_types.linalg_solve_ex  # PyTorch's torch.return_types.linalg_solve_ex


def _solve_operands(op: str, A: Tensor, B: Tensor, left: bool) -> tuple:
    """Checked, promoted and broadcast (A, B as matrices, vector_case)."""
    require_tensor(op, A, "A")
    require_tensor(op, B, "B", 2)
    _check_square(op, A)
    _check_dtype(op, A.dtype)
    check_same_dtype("linalg.solve", "A", A, "B", B)  # PyTorch's text (solve_ex's too)
    if A.device is not B.device:
        raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found "
                           f"at least two devices, {A.device} and {B.device}!")
    if B.ndim == 0:  # PyTorch's text (a 1-D B is a vector)
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    # PyTorch: B is a batch of vectors when it is 1-D or has A's shape without the last dim
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B = B.unsqueeze(-1)
        if not left:
            raise RuntimeError(f"{op}: Vector broadcasting of the left hand side is not "
                               f"supported for left=False. In this case linalg.solve is "
                               f"equivalent to B / A.squeeze(-1)")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation {eq} "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        A, B = A.mT, B.mT
    batch = broadcast_or_raise(op, A.shape[:-2], B.shape[:-2])  # (NumPy's ValueError leaked)
    if tuple(A.shape[:-2]) != batch:
        A = A.expand(*batch, n, n)
    if tuple(B.shape[:-2]) != batch:
        B = B.expand(*batch, *B.shape[-2:])
    return A, B, vector


@autocast_policy(None, cpu="native")
def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveEx:
    """(X, info): X with A X = B (left=False: X A = B) and, per matrix, 0 or the 1-based
    index of the first zero pivot of A's LU factorisation (int32, A's own batch shape). A singular
    A gives inf/NaN in X instead of an error, unless ``check_errors``."""
    op = "linalg.solve_ex" if not check_errors else "linalg.solve"
    a_batch = tuple(A.shape[:-2]) if isinstance(A, Tensor) else ()
    A, B, vector = _solve_operands(op, A, B, left)
    X, info = LinalgSolve.apply(A, B)
    if tuple(info.shape) != a_batch:  # B broadcast A's batch: info has A's own batch shape
        lead = info.ndim - len(a_batch)  # as PyTorch (the copies of a matrix share one info)
        info = info[(0,) * lead + tuple(slice(0, 1) if a == 1 else slice(None)
                                        for a in a_batch)]
    if check_errors:
        _raise_singular("torch.linalg.solve", info, "The solver failed because the input "
                        "matrix is singular.")
    if not left:
        X = X.mT
    return SolveEx(fresh(X.squeeze(-1)) if vector else X, info)  # (a new tensor, not a view)


@autocast_policy(None, cpu="fp32")
def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (left=False: X A = B) for square A, batch dims broadcast; B is a
    vector (batch) when it is 1-D or has A's shape minus the last dim. LU with partial
    pivoting, n steps of vector ops; raises PyTorch's error for a singular A (one
    synchronizing host read of the per-matrix status; ``solve_ex`` returns it instead)."""
    return solve_ex(A, B, left=left, check_errors=True).result


def _raise_singular(op: str, info: Tensor, what: str, error: type = LinAlgError) -> None:
    """One host read of ``info``: PyTorch's error for the first singular matrix
    (torch.linalg.LinAlgError, a RuntimeError, unless ``error`` says otherwise)."""
    for b, k in enumerate(info.reshape(-1).tolist()):
        if k:
            where = f": (Batch element {b})" if info.ndim > 0 else ""
            raise error(f"{op}{where}: {what.format(k=k)}")


# -------------------------------------------------------------------------------------- inv
InvEx = return_types.linalg_inv_ex  # PyTorch's torch.return_types.linalg_inv_ex


@autocast_policy(None, cpu="fp32")
def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvEx:
    """(A^{-1}, info) as ``solve_ex(A, I)``: a singular A gives inf/NaN, not an error,
    unless ``check_errors``."""
    op = "linalg.inv_ex" if not check_errors else "linalg.inv"
    require_tensor(op, A, "A")
    _check_square(op, A)
    _check_dtype(op, A.dtype)
    n = A.shape[-1]
    eye_b = eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    X, info = LinalgInv.apply(A, eye_b)
    if check_errors:
        _raise_singular("linalg.inv", info, "The diagonal element {k} is zero, the inversion "
                        "could not be completed because the input matrix is singular.")
    return InvEx(X, info)


def inv(A: Tensor) -> Tensor:
    """The inverse of square matrices (batched); raises PyTorch's error for a singular one
    (one synchronizing host read; ``inv_ex`` returns the status instead)."""
    return inv_ex(A, check_errors=True).inverse


def inverse(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.inverse``: ``linalg.inv``."""
    return inv(input)


# ---------------------------------------------------------------- results with no gradient
class _GraphConstant(Function):
    """y = c, a value that does not depend on the inputs ``xs`` (matrix_power(A, 0), the
    0-norm, an empty product of reflectors) but is a node of their graph, as PyTorch's
    result is: dxs = zeros (``zero``: PyTorch's zero gradient) or None (its undefined one:
    a leaf's .grad stays None)."""

    name = "graph_constant"
    node_name = "GraphConstantBackward0"

    @staticmethod
    def forward(ctx, c, zero, *xs):
        ctx.zero = zero
        ctx.metas = [(tuple(x.shape), x.dtype, x.device) for x in xs]
        return c

    @staticmethod
    def backward(ctx, g):
        if not ctx.zero:
            return (None, None) + (None,) * len(ctx.metas)
        return (None, None) + tuple(
            zeros(shape, dtype=dtype, device=device) if need else None
            for (shape, dtype, device), need in zip(ctx.metas, ctx.needs_input_grad[2:]))


def graph_constant(c: Tensor, *xs: Tensor, zero: bool) -> Tensor:
    """``c`` as a node of the graph of ``xs`` when one of them requires grad (with grad
    mode on), else ``c`` itself; see _GraphConstant."""
    if is_grad_enabled() and any(x.requires_grad for x in xs):
        return _GraphConstant.apply(c.detach(), zero, *xs)
    return c


# ------------------------------------------------------------------------------ det, slogdet
def _square_float(op: str, A: Tensor) -> None:
    require_tensor(op, A, "A")
    _check_square(op, A)
    _check_dtype(op, A.dtype)


def _unit(x: Tensor) -> Tensor:
    """sign(x) of a real tensor, sgn(x) = x / |x| (0 at 0) of a complex one."""
    return complex_sgn(x) if x.dtype.is_complex else ew.sign(x)


def _inv_h(A: Tensor) -> Tensor:
    """A^{-H}, differentiable (for the backward rules below)."""
    n = A.shape[-1]
    return _solve(A.mH, eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n))


def _cofactors_by_svd(A: Tensor) -> Tensor:
    """The conjugate cofactor matrix adj(A)^H of square A, singular or not, by the SVD
    A = U S V^H: adj(A)^H = conj(det(U) det(V^H)) U diag(prod_{j != i} s_j) V^H (the
    products without division: exclusive cumulative products from both ends)."""
    from tgrad.linalg._jacobi import svd
    from tgrad.ops.scan import cumprod
    U, S, Vh = svd(A)
    ones_col = ones(S.shape[:-1] + (1,), dtype=S.dtype, device=S.device)
    before = cumprod(cat([ones_col, S[..., :-1]], -1), -1)
    after = cumprod(cat([ones_col, S.flip(-1)[..., :-1]], -1), -1).flip(-1)
    sign = (_det_sign(U) * _det_sign(Vh)).conj()
    return sign.unsqueeze(-1).unsqueeze(-1) * (U * (before * after).unsqueeze(-2)) @ Vh


def _det_sign(Q: Tensor) -> Tensor:
    """det(Q) of orthogonal Q (+-1) or unitary Q (modulus 1), from its LU factorisation (no
    graph)."""
    with no_grad():
        f = _lu(Q.detach())
        return f.sign * prod(_unit(f.LU.diagonal(dim1=-2, dim2=-1)), -1)


class LinalgDet(Function):
    """y = det(A);  dA = g conj(det(A)) A^{-H} (the conjugate cofactor matrix, the conj
    for complex A) where A is invertible;
    where det(A) = 0 or that product is not finite, the cofactors by the SVD (PyTorch's
    singular branch), finite at every finite A; NaN where A holds a NaN or inf (PyTorch's,
    and no SVD of a non-finite matrix)."""

    node_name = "LinalgDetBackward0"

    @staticmethod
    def forward(ctx, A):
        d = lapack.det(A.detach().numpy()) if host_loop(A) else None
        if d is not None:  # CPU float32 / complex64: LAPACK in double precision
            d = wrap(d, A.device)
            ctx.save_for_backward(A, d, None, None)
            return d
        f = _lu(A)
        d = f.sign * prod(f.LU.diagonal(dim1=-2, dim2=-1), -1)
        ctx.save_for_backward(A, d, f.LU, f.perm)
        return d

    @staticmethod
    def backward(ctx, g):
        A, d, LU, perm = ctx.saved_tensors
        if not is_grad_enabled() and host_loop(A):
            # CPU float32 / complex64: conj(d) A^{-H} in double precision (d and A^{-H}
            # both accurate there, no cancellation to rely on); None at a singular A
            cof = lapack.det_cofactors(A.detach().numpy())
            if cof is not None:
                return g.unsqueeze(-1).unsqueeze(-1) * wrap(cof, A.device)
        if LU is None and not is_grad_enabled():  # (the forward took LAPACK's det)
            f = _lu(A.detach())
            LU, perm = f.LU, f.perm
        if is_grad_enabled():  # create_graph: A^{-H} differentiable in A
            inv_h = _inv_h(A)
        else:  # from the forward's factors, as PyTorch: d's small pivots cancel those of
            # A^{-H} (a new factorisation of A^H pivots differently: 1e-8 relative error
            # in the cofactors at a det of 1e-8, 1e-4 at 1e-12)
            n = A.shape[-1]
            inv_h = lu_substitute(LU, perm, eye(n, dtype=A.dtype, device=A.device)
                                  .expand(*A.shape[:-2], n, n), adjoint=True)
        cof = d.conj().unsqueeze(-1).unsqueeze(-1) * inv_h
        finite = ew.isfinite(A).all((-2, -1))
        bad = ew.logical_or(ew.eq(d, 0.0), ew.logical_not(ew.isfinite(cof).all((-2, -1))))
        bad = ew.logical_and(bad, finite)
        if A.numel() and bool(bad.any()):  # one host read: the SVD only when needed
            # (of the bad matrices only: the others are replaced by diag(1, ..., n) first,
            # whose singular values are distinct, so the SVD's 1 / (s_i^2 - s_j^2) in a
            # create_graph backward stays finite there and no NaN reaches another matrix
            # of the batch through where's zero gradient)
            n = A.shape[-1]
            eye_n = eye(n, dtype=A.dtype, device=A.device)
            bad_m = bad.unsqueeze(-1).unsqueeze(-1)
            distinct = eye_n * arange(1, n + 1, device=A.device).to(A.dtype)
            safe = ew.where(bad_m, A, distinct)
            # the inverse branch again with the bad matrices replaced by identities (and
            # their det by 1): where's zero gradient to the branch not taken then meets
            # finite values, so a create_graph backward (the Hessian of det at a singular
            # A) is not 0 * inf = NaN through the solve of a singular matrix
            d_ok = ew.where(bad, 1.0, d)
            cof = (d_ok.conj().unsqueeze(-1).unsqueeze(-1)
                   * _inv_h(ew.where(bad_m, eye_n, A)))
            cof = ew.where(bad_m, _cofactors_by_svd(safe), cof)
        cof = ew.where(finite.unsqueeze(-1).unsqueeze(-1), cof, math.nan)
        return g.unsqueeze(-1).unsqueeze(-1) * cof


def det(A: Tensor) -> Tensor:
    """Determinants of square matrices (batched), from the LU factorisation. The gradient
    is the cofactor matrix times g: g det(A) A^{-H}, and at singular (or numerically
    singular) matrices the cofactors by the SVD, finite as PyTorch's."""
    _square_float("linalg.det", A)
    return LinalgDet.apply(A)


class LinalgSlogdet(Function):
    """(sign, log|det A|): sign +-1 (real A, not differentiable) or det / |det| (complex A,
    of modulus 1). PyTorch's slogdet_backward: d log|det| = Re tr(A^{-1} dA) and d sign =
    i sign Im tr(A^{-1} dA), so gA = (g_logabs - i Im(conj(g_sign) sign)) A^{-H}."""

    node_name = "LinalgSlogdetBackward0"

    @staticmethod
    def forward(ctx, A):
        fast = lapack.slogdet(A.detach().numpy()) if host_loop(A) else None
        if fast is not None:  # CPU: LAPACK (float32 / complex64 in double precision)
            # (np.asarray, order C: np.ascontiguousarray makes a 0-d result 1-d)
            sign, logabs = (wrap(np.asarray(x, order="C"), A.device) for x in fast)
        else:
            f = _lu(A)
            diag = f.LU.diagonal(dim1=-2, dim2=-1)
            sign = f.sign * prod(_unit(diag), -1)
            logabs = diag.abs().log().sum(-1)
        # a real sign stays in the graph (requires_grad, as PyTorch's) with no gradient:
        # a loss of the sign alone leaves A.grad None
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(A, sign if A.dtype.is_complex else None)
        return sign, logabs

    @staticmethod
    def backward(ctx, gsign, glogabs):
        A, sign = ctx.saved_tensors
        g = glogabs
        if sign is not None and gsign is not None:  # complex A
            term = -1j * (gsign.conj() * sign).imag
            g = term if g is None else g + term
        if g is None:
            return None
        return g.unsqueeze(-1).unsqueeze(-1) * _inv_h(A)


Slogdet = return_types.linalg_slogdet  # PyTorch's torch.return_types.linalg_slogdet


def slogdet(A: Tensor) -> Slogdet:
    """(sign, log|det|) of square matrices (batched): sign 0 and -inf for a singular one.
    For real A only ``logabsdet`` has a gradient (g A^{-H}; the sign requires grad with
    none, as PyTorch's); for complex A the
    sign is det / |det| (complex) and differentiable too, and logabsdet is real."""
    _square_float("linalg.slogdet", A)
    sign, logabs = LinalgSlogdet.apply(A)
    return Slogdet(sign, logabs)


def logdet(input: Tensor) -> Tensor:  # noqa: A002
    """log det(A): NaN where det < 0, -inf where det = 0 (PyTorch's ``torch.logdet``); for
    complex A the principal log(sign) + log|det| (complex)."""
    _square_float("logdet", input)
    sign, logabs = LinalgSlogdet.apply(input)
    if input.dtype.is_complex:
        return sign.log() + logabs
    return ew.where(sign < 0, float("nan"), logabs)


# ----------------------------------------------------------------------------- matrix_power
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A^n for square matrices (batched) by repeated squaring (about 2 log2 |n| matmuls);
    n = 0 gives identities, n < 0 powers of ``inv(A)`` (floating A only)."""
    op = "linalg.matrix_power"
    require_tensor(op, A, "A")
    _check_square(op, A)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'n' must be int, not {type(n).__name__}")
    m = A.shape[-1]
    if n == 0:  # identities, in A's graph with a zero gradient (PyTorch's)
        eye_m = eye(m, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], m, m).clone()
        return graph_constant(eye_m, A, zero=True)
    if n == 1:  # a copy of A, not A itself (PyTorch's clone: writes must not reach A)
        return A.clone()
    if n < 0:  # inv(A) refuses half dtypes itself, after CPU autocast's fp32 policy
        dt = A.dtype  # (PyTorch: float32 for n = -1, n < -1's matmuls lowered again)
        if not (dt.is_floating_point or dt.is_complex):
            raise not_floating_error(op, dt)
        A, n = inv(A), -n
    result = None
    while True:  # binary powering: result = A^(bits of n seen so far)
        if n & 1:
            result = A if result is None else result @ A
        n >>= 1
        if not n:
            return result
        A = A @ A
