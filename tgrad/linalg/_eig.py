# ruff: noqa: N803, N806  (PyTorch's argument names and matrix notation: A, L, V)
"""The eigendecomposition of general (non-symmetric, real or complex) square matrices:
``linalg.eig`` / ``eigvals``. CPU only (its results are complex, and complex tensors are
CPU-only in tgrad): the forward is NumPy's LAPACK geev, batched, so the eigenvalues come in
geev's order and each eigenvector has norm 1 with its largest component real, as PyTorch's
(both call geev). A real A gives complex64 (float32) or complex128 (float64) results.

    A V = V diag(L)
Backward (PyTorch's linalg_eig_backward; gauge: each column of V is fixed up to a phase
e^{i phi}, so a loss must not depend on it: Im diag(V^H gV) must be ~0, else the error):
    eigvals only:  gA = V^{-H} diag(gL) V^H
    with gV:       M = V^H gV - V^H V Re(diag(V^H gV))   (the norm-1 constraint)
                   gA = V^{-H} (M / E + diag(gL)) V^H,  E_ij = conj(L_j) - conj(L_i)
                   (M / E off the diagonal; on it gL, or with gL None M's own diagonal
                   i Im diag(V^H gV), below the check but kept, as PyTorch's)
Written with ``linalg.solve`` and matmuls on the saved outputs, so it is differentiable again
(double backward; finite for distinct eigenvalues only, as in PyTorch). A real A gets the
real part of gA (the engine takes it).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.linalg._jacobi import check_phase
from tgrad.linalg._lu import _check_dtype as check_linalg_dtype
from tgrad.linalg._lu import solve
from tgrad.linalg._triangular import _check_square
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor
from tgrad.ops.creation import eye, tensor
from tgrad.ops.layout import diag_embed
from tgrad.tensor import Tensor

__all__ = ["eig", "eigvals"]


EigResult = return_types.linalg_eig  # PyTorch's torch.return_types.linalg_eig


def _geev(a: np.ndarray) -> tuple:
    """LAPACK's geev of a (..., n, n): np.linalg.eig, or for an input with NaN / inf (which
    np.linalg refuses; only eigvals without a gradient gets here, as PyTorch's) the same
    LAPACK gufunc that np.linalg.eig calls, without its finiteness check: LAPACK's result.
    That gufunc is NumPy's private numpy.linalg._umath_linalg.eig: where a NumPy lacks it
    or changed its call, the result is all NaN instead (w (..., n), v (..., n, n) complex128)."""
    if np.isfinite(a).all():
        return np.linalg.eig(a)
    sig = "D->DD" if np.iscomplexobj(a) else "d->DD"
    try:
        from numpy.linalg import _umath_linalg
        with np.errstate(all="ignore"):
            return _umath_linalg.eig(a.astype(np.complex128 if sig[0] == "D" else np.float64),
                                     signature=sig)
    except (ImportError, AttributeError, TypeError):
        nan = complex(np.nan, np.nan)
        return np.full(a.shape[:-1], nan), np.full(a.shape, nan)


class LinalgEig(Function):
    """(L (..., n), V (..., n, n)) complex, from geev on the host (module docstring)."""

    node_name = "LinalgEigBackward0"

    @staticmethod
    def forward(ctx, A):
        ctx.set_materialize_grads(False)  # eigvals: no gV, so no 1/(L_j - L_i) terms
        cdt = dtypes.to_complex(A.dtype)
        a = A.detach().numpy()
        if a.size:
            w, v = _geev(a)
        else:
            w, v = np.zeros(a.shape[:-1]), np.zeros(a.shape)
        L = tensor(np.ascontiguousarray(w, dtype=cdt.np), device=A.device)
        V = tensor(np.ascontiguousarray(v, dtype=cdt.np), device=A.device)
        ctx.save_for_backward(L, V)  # the outputs themselves: double backward sees them
        return L, V

    @staticmethod
    def backward(ctx, gL, gV):
        L, V = ctx.saved_tensors
        return eig_backward(gL, gV, L, V)


def eig_backward(gL, gV, L: Tensor, V: Tensor) -> Tensor | None:
    """gA (complex, (..., n, n)) of A V = V diag(L) from gL (..., n) and gV (..., n, n),
    either one None; PyTorch's linalg_eig_backward (module docstring)."""
    if gL is None and gV is None:
        return None
    Vh = V.mH
    if gV is None:
        return solve(Vh, gL.unsqueeze(-1) * Vh)
    VhgV = Vh @ gV
    diag = VhgV.diagonal(dim1=-2, dim2=-1)
    check_phase("linalg_eig_backward", diag.imag)
    VhgV = VhgV - Vh @ (V * diag.real.unsqueeze(-2))
    n = L.shape[-1]
    eye_n = eye(n, dtype=dtypes.bool_, device=L.device)
    Lc = L.conj()
    E = ew.where(eye_n, 1.0, Lc.unsqueeze(-2) - Lc.unsqueeze(-1))
    inner = VhgV / E  # its diagonal: i Im diag(V^H gV) (~0), kept when gL is None
    if gL is not None:
        inner = ew.where(eye_n, diag_embed(gL), inner)
    return solve(Vh, inner @ Vh)


def _eig_checks(op: str, A: Tensor, finite: bool = True) -> None:
    """Shape, dtype and device checks; with ``finite``, PyTorch's error for a NaN or inf in
    A (eig always, eigvals only when A requires grad: else LAPACK's result)."""
    require_tensor(op, A, "A")
    _check_square(op, A)
    check_linalg_dtype(op, A.dtype)
    if A.device.type != "cpu":
        raise RuntimeError(f"{op}: tgrad computes it on the CPU only (its results are "
                           f"complex, and complex dtypes are CPU-only in tgrad); call it on "
                           f"A.cpu() (got A on {A.device})")
    if finite and A.numel() and not bool(ew.isfinite(A).all()):  # one host read
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")


@autocast_policy(None, cpu="fp32")
def eig(A: Tensor) -> EigResult:
    """(eigenvalues (..., n), eigenvectors (..., n, n) as columns) of square A, batched;
    complex results (complex64 for float32 / complex64 input, else complex128), geev's
    order and normalisation (unit columns, largest component real). CPU only. The
    eigenvectors are unique up to a phase each: a differentiated loss must not depend on
    it (PyTorch's error otherwise)."""
    _eig_checks("linalg.eig", A)
    L, V = LinalgEig.apply(A)
    return EigResult(L, V)


@autocast_policy(None, cpu="fp32")
def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues (..., n) of square A, batched, complex (see eig); the gradient needs
    no eigenvector gradient: V^{-H} diag(gL) V^H. A NaN or inf raises eig's error when A
    requires grad (grad mode on), as PyTorch's; else the eigenvalues are LAPACK's result
    for it (NaN where geev gives NaN)."""
    require_tensor("linalg.eigvals", A)
    _eig_checks("linalg.eigvals", A, finite=A.requires_grad and is_grad_enabled())
    return LinalgEig.apply(A)[0]
