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
Written with solve_triangular and matmul, so it is differentiable again. 'complete' with
m > n and 'r' have no derivative (PyTorch's errors, raised by the backward).

On the CPU backend the forwards of qr, eigh and svd call NumPy's LAPACK instead
(``LAPACK_ON_CPU``; the backwards are the same), hundreds of times faster there than loops
of NumPy calls; the tgrad-op algorithms are what cuda runs, and the tests run them on the
CPU too (``LAPACK_ON_CPU = False``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tgrad.autograd.function import Function
from tgrad.linalg._norms import vector_norm
from tgrad.linalg._triangular import _torch_dtype_name, solve_triangular
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor
from tgrad.ops.composite import tril, triu
from tgrad.ops.creation import eye, tensor, zeros
from tgrad.ops.logmath import copysign, hypot
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["qr", "householder_qr"]

#: CPU forwards of qr / eigh / svd through np.linalg (module docstring)
LAPACK_ON_CPU = True


def lapack_path(A: Tensor) -> bool:
    return LAPACK_ON_CPU and A.device.type == "cpu"


def from_lapack(arrays, like: Tensor) -> tuple:
    """np.linalg's results as tgrad tensors of ``like``'s dtype and device."""
    return tuple(tensor(np.ascontiguousarray(a, dtype=like.dtype.np), device=like.device)
                 for a in arrays)


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


def check_linalg_dtype(op: str, dt) -> None:
    """float32/float64 only (PyTorch's linalg has no half kernels)."""
    if not dt.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_dtype_name(dt)}")
    if dt.itemsize < 4:
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got "
                           f"{_torch_dtype_name(dt)}; convert with .float() or .double()")


def householder_qr(A: Tensor, complete: bool, want_q: bool = True) -> tuple:
    """(Q, R) of A (..., m, n) without recording a graph: Q (..., m, m if complete else k),
    R (..., m if complete else k, n) upper triangular. ``want_q=False`` gives Q None."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    R = A.detach().contiguous().clone()
    reflectors = []  # (w (..., m-j), 2 / w^T w or 0 (..., 1)) per column j
    for j in range(k):
        x = R[..., j:, j]
        alpha = x[..., 0]
        below = vector_norm(x[..., 1:], dim=-1)  # 0 for the last row
        beta = -copysign(hypot(alpha, below), alpha)
        w = x.clone()
        w[..., 0] = alpha - beta
        reflect = below > 0
        scale = ew.where(reflect, 2.0 / ew.where(reflect, (w * w).sum(-1), 1.0), 0.0)
        w_scaled = (w * scale.unsqueeze(-1)).unsqueeze(-1)  # (..., m-j, 1)
        sub = R[..., j:, j + 1:]
        if n > j + 1:  # the trailing columns: sub -= (2 w / w^T w) (w^T sub)
            R[..., j:, j + 1:] = sub - w_scaled * (w.unsqueeze(-2) @ sub)
        R[..., j, j] = ew.where(reflect, beta, alpha)  # (below it: zeros, left to triu)
        reflectors.append((w, w_scaled))
    rows = m if complete else k
    R = triu(R[..., :rows, :])
    if not want_q:
        return None, R
    cols = m if complete else k
    batch = tuple(A.shape[:-2])
    Q = eye(m, cols, dtype=A.dtype, device=A.device).expand(*batch, m, cols).contiguous()
    for j in range(k - 1, -1, -1):  # Q = H_j Q; H_{j+1..} left columns < j as e_i
        w, w_scaled = reflectors[j]
        sub = Q[..., j:, j:]
        Q[..., j:, j:] = sub - w_scaled * (w.unsqueeze(-2) @ sub)
    return Q, R


def _copyltu(M: Tensor) -> Tensor:
    return tril(M) + tril(M, -1).mH


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
        ctx.save_for_backward(A, Q, R)
        if mode == "r":
            Q = zeros((0,), dtype=A.dtype, device=A.device)
            ctx.mark_non_differentiable(Q)
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        A, Q, R = ctx.saved_tensors
        m, n = A.shape[-2], A.shape[-1]
        if ctx.mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("The QR decomposition is not differentiable when "
                               "mode='complete' and nrows > ncols.")
        if m >= n:
            return _square_backward(gQ, gR, Q, R), None
        gU, gV = gR[..., :m], gR[..., m:]
        gX = _square_backward(gQ + A[..., m:] @ gV.mH, gU, Q, R[..., :m])
        return cat([gX, Q @ gV], -1), None


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """(Q, R) with A = Q R, batched over leading dims: 'reduced' Q (m, k), R (k, n);
    'complete' Q (m, m), R (m, n); 'r' R only (Q empty, no derivative). k = min(m, n).
    n Householder steps of vector ops (O(n) launches on a GPU)."""
    op = "linalg.qr"
    require_tensor(op, A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    check_linalg_dtype(op, A.dtype)
    Q, R = LinalgQR.apply(A, mode)
    return QRResult(Q, R)
