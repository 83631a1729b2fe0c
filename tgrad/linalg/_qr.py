# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, Q, R)
"""QR by Householder reflections (LAPACK's geqrf + orgqr as compositions of tgrad ops),
batched over leading dims: ``linalg.qr`` (modes 'reduced', 'complete', 'r').

    A = Q R,  k = min(m, n) reflections H_j = I - 2 w w^T / (w^T w), w = x - beta e1, x the
    column j of R at and below the diagonal, beta = -sign(x_0) ||x|| (LAPACK's dlarfg, so
    R's diagonal has LAPACK's signs); a column already zero below the diagonal is left as it
    is (H_j = I, as dlarfg's tau = 0). Q = H_0 ... H_{k-1} applied to I (m x k or m x m).

Backward (PyTorch's linalg_qr_backward, A of full rank):
    m >= n ('reduced'):  M = R gR^H - gQ^H Q,  gA = (gQ + Q copyltu(M)) R^{-H},
                         copyltu(M) = tril(M) + tril(M, -1)^H
    m < n:  A = [X | Y], R = [U | V] (U m x m):  gY = Q gV and X = Q U takes the square rule
            with gQ + Y gV^H.
Complex A (CPU, LAPACK's R with a real diagonal): copyltu takes Re of M's diagonal
(PyTorch's syminvadj). Written with solve_triangular and matmul, so it is differentiable
again. 'complete' with
m > n and 'r' have no derivative (PyTorch's errors, raised by the backward).

On the CPU backend the forwards of qr, eigh and svd call NumPy's LAPACK instead
(``LAPACK_ON_CPU``; the backwards are the same), hundreds of times faster there than loops
of NumPy calls; the tgrad-op algorithms are what cuda runs, and the tests run them on the
CPU too (``LAPACK_ON_CPU = False``).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.linalg._lu import _check_dtype as check_linalg_dtype
from tgrad.linalg._lu import graph_constant
from tgrad.linalg._norms import vector_norm
from tgrad.linalg._triangular import solve_triangular
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor
from tgrad.ops.composite import tril, triu
from tgrad.ops.creation import eye, ones, tensor, zeros
from tgrad.ops.layout import diag_embed
from tgrad.ops.logmath import copysign, hypot
from tgrad.ops.shape import cat, stack
from tgrad.tensor import Tensor

__all__ = ["qr", "householder_qr"]

#: CPU forwards of qr / eigh / svd through np.linalg (module docstring)
LAPACK_ON_CPU = True


def lapack_path(A: Tensor) -> bool:
    """np.linalg on the CPU (always for complex A: complex tensors are CPU-only and the
    tgrad-op algorithms are real)."""
    return A.dtype.is_complex or (LAPACK_ON_CPU and A.device.type == "cpu")


def from_lapack(arrays, like: Tensor) -> tuple:
    """np.linalg's results as tgrad tensors of ``like``'s dtype and device (real results of
    a complex ``like``, eigenvalues and singular values, in its real dtype)."""
    def dt(a):
        return (like.dtype if np.iscomplexobj(a) else dtypes.to_real(like.dtype)).np
    return tuple(tensor(np.ascontiguousarray(a, dtype=dt(a)), device=like.device)
                 for a in arrays)


QRResult = return_types.linalg_qr  # PyTorch's torch.return_types.linalg_qr


def _reflections(A: Tensor) -> tuple:
    """Householder's steps on A (..., m, n) without recording a graph: (R (..., m, n), A's R
    on and above the diagonal, other values below it; per column j < min(m, n) the
    reflector (w (..., m - j), scale (...,) = 2 / w^T w, or 0 where no reflection))."""
    m, n = A.shape[-2], A.shape[-1]
    R = A.detach().contiguous().clone()
    reflectors = []
    for j in range(min(m, n)):
        x = R[..., j:, j]
        alpha = x[..., 0]
        below = vector_norm(x[..., 1:], dim=-1)  # 0 for the last row
        beta = -copysign(hypot(alpha, below), alpha)
        w = x.clone()
        w[..., 0] = alpha - beta
        reflect = below > 0
        scale = ew.where(reflect, 2.0 / ew.where(reflect, (w * w).sum(-1), 1.0), 0.0)
        if n > j + 1:  # the trailing columns: sub -= (2 w / w^T w) (w^T sub)
            sub = R[..., j:, j + 1:]
            R[..., j:, j + 1:] = sub - (w * scale.unsqueeze(-1)).unsqueeze(-1) * (
                w.unsqueeze(-2) @ sub)
        R[..., j, j] = ew.where(reflect, beta, alpha)
        reflectors.append((w, scale))
    return R, reflectors


def householder_qr(A: Tensor, complete: bool) -> tuple:
    """(Q, R) of A (..., m, n) without recording a graph: Q (..., m, m if complete else k),
    R (..., m if complete else k, n) upper triangular."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    R, reflectors = _reflections(A)
    rows = cols = m if complete else k
    R = triu(R[..., :rows, :])
    batch = tuple(A.shape[:-2])
    Q = eye(m, cols, dtype=A.dtype, device=A.device).expand(*batch, m, cols).contiguous()
    for j in range(k - 1, -1, -1):  # Q = H_j Q; H_{j+1..} left columns < j as e_i
        w, scale = reflectors[j]
        sub = Q[..., j:, j:]
        Q[..., j:, j:] = sub - (w * scale.unsqueeze(-1)).unsqueeze(-1) * (w.unsqueeze(-2) @ sub)
    return Q, R


def geqrf_packed(A: Tensor) -> tuple:
    """LAPACK's geqrf of A (..., m, n) without a graph: (a, tau) with R on and above a's
    diagonal, below it the reflectors v_j (v_j[0] = 1 implied), H_j = I - tau_j v_j v_j^T."""
    R, reflectors = _reflections(A)
    taus = []
    for j, (w, scale) in enumerate(reflectors):
        w0 = w[..., 0]
        taus.append(scale * w0 * w0)  # 2 w w^T / w^T w = tau v v^T with v = w / w0
        if w.shape[-1] > 1:
            reflect = (scale > 0).unsqueeze(-1)
            R[..., j + 1:, j] = ew.where(reflect, w[..., 1:] / ew.where(
                reflect, w0.unsqueeze(-1), 1.0), 0.0)
    batch = tuple(A.shape[:-2])
    tau = stack(taus, -1) if taus else zeros(batch + (0,), dtype=A.dtype, device=A.device)
    return R, tau


def _copyltu(M: Tensor) -> Tensor:
    """tril(M) + tril(M, -1)^H; complex M: with Re diag(M) on the diagonal (R's diagonal is
    real, LAPACK's: PyTorch's syminvadj)."""
    out = tril(M) + tril(M, -1).mH
    if M.dtype.is_complex:
        d = M.diagonal(dim1=-2, dim2=-1)
        out = out - diag_embed(d - d.real)
    return out


def _square_backward(gQ: Tensor, gR: Tensor, Q: Tensor, R: Tensor) -> Tensor:
    """gA for A = Q R with m >= n, R (n, n) invertible."""
    M = R @ gR.mH - gQ.mH @ Q
    return solve_triangular(R.mH, gQ + Q @ _copyltu(M), upper=False, left=False)


class LinalgQR(Function):
    node_name = "LinalgQrBackward0"

    @staticmethod
    def forward(ctx, A, mode):
        if lapack_path(A):
            Q, R = from_lapack(np.linalg.qr(A.detach().numpy(), "complete" if mode == "complete"
                                            else "reduced"), A)
        else:
            Q, R = householder_qr(A, complete=mode == "complete")
        ctx.mode = mode
        ctx.m, ctx.n = A.shape[-2], A.shape[-1]
        ctx.save_for_backward(Q, R)  # not A (PyTorch's saves Q and R only: changing A in
        # place before backward is fine)
        if mode == "r":
            Q = zeros((0,), dtype=A.dtype, device=A.device)
            ctx.mark_non_differentiable(Q)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        m, n = ctx.m, ctx.n
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        if m >= n:
            return _square_backward(gQ, gR, Q, R), None
        # m < n: A = [X | Y] with X = Q U, Y = Q V (U = R[..., :m], V = R[..., m:])
        gU, gV = gR[..., :m], gR[..., m:]
        gX = _square_backward(gQ + Q @ (R[..., m:] @ gV.mH), gU, Q, R[..., :m])
        return cat([gX, Q @ gV], -1), None


@autocast_policy(None, cpu="fp32")
def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """(Q, R) with A = Q R, batched over leading dims: 'reduced' Q (m, k), R (k, n);
    'complete' Q (m, m), R (m, n); 'r' R only (Q empty, no derivative). k = min(m, n).
    n Householder steps of vector ops (O(n) launches on a GPU)."""
    op = "linalg.qr"
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not isinstance(mode, str):  # PyTorch's TypeError
        raise TypeError(f"{op}(): argument 'mode' (position 2) must be str, not "
                        f"{type(mode).__name__}")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    check_linalg_dtype(op, A.dtype)
    Q, R = LinalgQR.apply(A, mode)
    return QRResult(Q, R)


# ------------------------------------------------------- reflectors: geqrf and their product
class Geqrf(Function):
    node_name = "GeqrfBackward0"

    @staticmethod
    def forward(ctx, A):
        if A.dtype.is_complex:  # LAPACK's zgeqrf through NumPy (h is a transposed)
            h, tau = np.linalg.qr(A.detach().numpy(), mode="raw")
            return from_lapack((np.swapaxes(h, -1, -2), tau), A)
        return geqrf_packed(A)

    @staticmethod
    def backward(ctx, ga, gtau):
        raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


@autocast_policy(None, cpu="fp32")
def geqrf(input: Tensor) -> return_types.geqrf:  # noqa: A002
    """``torch.geqrf``: LAPACK's packed QR (a, tau) (see geqrf_packed); complex input
    (CPU): LAPACK's zgeqrf (H_j = I - tau_j v_j v_j^H, R's diagonal real). No derivative,
    as in PyTorch (whose complex geqrf refuses an input that requires grad)."""
    require_tensor("geqrf", input)
    if input.ndim < 2:
        raise RuntimeError(f"geqrf: input must have at least 2 dimensions. Got "
                           f"{input.ndim}")
    check_linalg_dtype("geqrf", input.dtype)
    if input.dtype.is_complex and input.requires_grad and is_grad_enabled():
        raise RuntimeError("geqrf does not support automatic differentiation for outputs "
                           "with complex dtype.")
    return return_types.geqrf(*Geqrf.apply(input))


@autocast_policy(None, cpu="fp32")
def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^H, v_i the
    i-th column of A (..., m, n) below the diagonal with a 1 on it (LAPACK's orgqr; k =
    tau's last dim; complex: LAPACK's ungqr, v^H). A composition of tgrad ops:
    differentiable in A and tau."""
    op = "torch.linalg.householder_product"
    require_tensor(op, A, "input")
    require_tensor(op, tau, "tau", 2)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if not tau.ndim:  # (PyTorch's tau.size(-1))
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if A.ndim - tau.ndim != 1:
        raise RuntimeError(f"{op}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{op}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype is not A.dtype:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(f"{op}: tau dtype {names[tau.dtype]} does not match input dtype "
                           f"{names[A.dtype]}")
    check_linalg_dtype(op, A.dtype)
    batch = tuple(A.shape[:-2])
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(*batch, m, n)
    if k == 0:  # no reflectors: the identity's columns, in A's and tau's graph with an
        # undefined gradient (PyTorch's: their .grad stays None)
        return graph_constant(Q.clone(), A, tau, zero=False)
    one = ones(batch + (1,), dtype=A.dtype, device=A.device)
    for i in range(k - 1, -1, -1):
        v = cat([one, A[..., i + 1:, i]], -1).unsqueeze(-1)  # (..., m - i, 1)
        sub = Q[..., i:, :]
        sub = sub - tau[..., i:i + 1].unsqueeze(-1) * v * (v.mH @ sub)
        Q = cat([Q[..., :i, :], sub], -2) if i else sub
    return Q


def _check_ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:  # noqa: A002
    """PyTorch's ormqr input checks, in its order: input (..., m, n), tau (..., k) with
    k = min(other's m-side, n), other (..., m, p) (left) or (..., p, m), the same batch
    dims and dtype."""
    op = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{op}: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{op}: other.shape[{side}] must be equal to input.shape[-2]")
    if not tau.ndim:  # (PyTorch's tau.size(-1))
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"{op}: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           f"input.shape[-1])")
    for name, t, d in (("tau", tau, 1), ("other", other, 0)):
        if input.ndim - t.ndim != d:
            what = "one dimension less than" if d else "the same number of dimensions as"
            raise RuntimeError(f"{op}: Expected {name} to have {what} input, but got "
                               f"{name}.ndim equal to {t.ndim} and input.ndim is equal to "
                               f"{input.ndim}")
    batch = tuple(input.shape[:-2])
    for name, t, d in (("tau", tau, 1), ("other", other, 2)):
        if tuple(t.shape[:-d]) != batch:
            raise RuntimeError(f"{op}: Expected batch dimensions of {name} to be equal to "
                               f"input.shape[:-2], but got {list(t.shape[:-d])}")
    names = dtypes.SCALAR_TYPE_NAMES
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"{op}: Expected input and {name} to have the same dtype, but "
                               f"input has dtype{names[input.dtype]} and {name} has dtype "
                               f"{names[t.dtype]}")


@autocast_policy(None, cpu="fp32")
def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True,  # noqa: A002
          transpose: bool = False) -> Tensor:
    """``torch.ormqr``: Q C (left) or C Q, with Q^H for ``transpose``, Q the m x m product
    of geqrf's reflectors (input (..., m, n), tau (..., k))."""
    require_tensor("ormqr", input, "input")
    require_tensor("ormqr", tau, "input2", 2)
    require_tensor("ormqr", other, "input3", 3)
    _check_ormqr(input, tau, other, left)
    m, n = input.shape[-2], input.shape[-1]
    if m > n:  # reflectors beyond n are identities: pad to a square product
        batch = tuple(input.shape[:-2])
        input = cat([input, zeros(batch + (m, m - n), dtype=input.dtype,  # noqa: A001
                                  device=input.device)], -1)
    Q = householder_product(input, tau)
    if transpose:  # (the conjugate transpose for complex, as PyTorch's)
        Q = Q.mH
    return Q @ other if left else other @ Q
