# ruff: noqa: N806  (matrix notation: A, B, X)
"""tgrad.linalg with complex inputs (CPU): values against NumPy complex128 and gradients by
gradcheck / gradgradcheck in complex128 (PyTorch's convention: the gradient of a real loss
is dL/dRe + i dL/dIm), plus hand-computed gradients of holomorphic functions."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(23)
C128 = tgrad.complex128
TOL = {"rtol": 1e-12, "atol": 1e-12}


def _cx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


A_NP = _cx(2, 3, 3) + 2 * np.eye(3)
B_NP = _cx(2, 3, 2)


def _t(a, grad=False):
    return tgrad.tensor(a, requires_grad=grad)


# ------------------------------------------------------------------------- LU family
def test_lu_family_values():
    A, B = _t(A_NP), _t(B_NP)
    X = LA.solve(A, B)
    assert X.dtype is C128
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(A_NP, B_NP), **TOL)
    np.testing.assert_allclose(LA.solve(A, B[..., 0]).numpy(),
                               np.linalg.solve(A_NP, B_NP[..., :1])[..., 0], **TOL)
    np.testing.assert_allclose(LA.solve(A, B.mT, left=False).numpy(),
                               np.linalg.solve(A_NP.transpose(0, 2, 1),
                                               B_NP).transpose(0, 2, 1), **TOL)
    np.testing.assert_allclose(LA.inv(A).numpy(), np.linalg.inv(A_NP), **TOL)
    np.testing.assert_allclose(LA.det(A).numpy(), np.linalg.det(A_NP), **TOL)
    sign, logabs = LA.slogdet(A)
    s_np, l_np = np.linalg.slogdet(A_NP)
    assert sign.dtype is C128 and logabs.dtype is tgrad.float64
    np.testing.assert_allclose(sign.numpy(), s_np, **TOL)
    np.testing.assert_allclose(logabs.numpy(), l_np, **TOL)
    np.testing.assert_allclose(tgrad.logdet(A).numpy(), np.log(np.linalg.det(A_NP)), **TOL)
    np.testing.assert_allclose(LA.matrix_power(A, -3).numpy(),
                               np.linalg.matrix_power(A_NP, -3), **TOL)
    np.testing.assert_allclose(LA.solve_triangular(A, B, upper=True).numpy(),
                               np.linalg.solve(np.triu(A_NP), B_NP), **TOL)
    # a singular complex matrix: det 0, slogdet (0, -inf), solve's error
    S = _t(np.array([[1 + 1j, 2 - 1j], [2 + 2j, 4 - 2j]]))
    assert LA.det(S).item() == 0 and LA.slogdet(S).sign.item() == 0
    with pytest.raises(RuntimeError, match="input matrix is singular"):
        LA.solve(S, _t(np.ones((2, 1)) + 0j))


def test_lu_family_gradients():
    A, B = _t(A_NP, True), _t(B_NP, True)
    assert gradcheck(LA.solve, (A, B))
    assert gradgradcheck(LA.solve, (A, B))
    assert gradcheck(LA.inv, (A,))
    assert gradcheck(LA.det, (A,))
    assert gradcheck(lambda a: LA.slogdet(a), (A,))  # the complex sign is differentiable
    assert gradcheck(tgrad.logdet, (A,))
    assert gradcheck(lambda a: LA.matrix_power(a, -2), (A,))
    assert gradcheck(lambda a, b: LA.solve_triangular(a, b, upper=False), (A, B))
    # a real matrix with a complex right-hand side: A's gradient is real
    R = _t(A_NP.real, True)
    assert gradcheck(LA.solve, (R, B))


def test_det_gradient_by_hand():
    # Re(w det A) has the gradient conj(w det A') = conj(w) conj(det A) A^{-H}
    a, w = A_NP[0], 0.5 - 2j
    A = _t(a, True)
    (LA.det(A) * w).real.backward()
    want = np.conj(w * np.linalg.det(a)) * np.linalg.inv(a).conj().T
    np.testing.assert_allclose(A.grad.numpy(), want, **TOL)


# ------------------------------------------------------- norms, cholesky, eigh, svd, pinv
M_NP = _cx(2, 4, 3)
H_NP = _cx(2, 3, 3)
H_NP = H_NP + np.conj(np.swapaxes(H_NP, -1, -2))  # Hermitian
PD_NP = H_NP @ H_NP + np.eye(3)  # Hermitian positive-definite


def _herm(x):
    return x + x.mH


def test_norms_values_and_gradients():
    M = _t(M_NP, True)
    assert LA.vector_norm(M).dtype is tgrad.float64
    np.testing.assert_allclose(LA.vector_norm(M).item(), np.linalg.norm(M_NP.ravel()), **TOL)
    np.testing.assert_allclose(LA.vector_norm(M, 3, dim=-1).detach().numpy(),
                               (np.abs(M_NP) ** 3).sum(-1) ** (1 / 3), **TOL)
    np.testing.assert_allclose(LA.norm(M, dim=-2).detach().numpy(),
                               np.linalg.norm(M_NP, axis=-2), **TOL)
    for ord_ in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        np.testing.assert_allclose(LA.matrix_norm(M, ord_).detach().numpy(),
                                   np.linalg.norm(M_NP, ord_, axis=(-2, -1)), **TOL)
    for ord_ in (2, 1, np.inf, "fro", "nuc"):
        assert gradcheck(lambda x, o=ord_: LA.norm(x, o, dim=(-2, -1)), (M,))
    assert gradcheck(lambda x: LA.vector_norm(x, 3, dim=-1), (M,))


def test_cholesky():
    A = _t(PD_NP, True)
    L = LA.cholesky(A)
    np.testing.assert_allclose(L.detach().numpy(), np.linalg.cholesky(PD_NP), **TOL)
    np.testing.assert_allclose(LA.cholesky(A, upper=True).detach().numpy(),
                               np.conj(np.swapaxes(np.linalg.cholesky(PD_NP), -1, -2)), **TOL)
    assert gradcheck(lambda x: LA.cholesky(_herm(x)), (A,))
    assert gradcheck(lambda x: LA.cholesky(_herm(x), upper=True), (A,))
    assert gradgradcheck(lambda x: LA.cholesky(_herm(x)), (A,))
    assert LA.cholesky_ex(_t(-PD_NP)).info.tolist() == [1, 1]


def test_eigh_svd_values():
    H, M = _t(H_NP), _t(M_NP)
    L, V = LA.eigh(H)
    l_np = np.linalg.eigvalsh(H_NP)
    assert L.dtype is tgrad.float64 and V.dtype is C128
    np.testing.assert_allclose(L.numpy(), l_np, **TOL)
    np.testing.assert_allclose(H_NP @ V.numpy(), V.numpy() * l_np[..., None, :], atol=1e-12)
    np.testing.assert_allclose(LA.eigvalsh(H, UPLO="U").numpy(), l_np, **TOL)
    U, S, Vh = LA.svd(M, full_matrices=False)
    assert S.dtype is tgrad.float64 and U.dtype is C128
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(M_NP, compute_uv=False), **TOL)
    np.testing.assert_allclose((U.numpy() * S.numpy()[..., None, :]) @ Vh.numpy(), M_NP,
                               atol=1e-12)
    U, S, Vh = LA.svd(M)
    assert tuple(U.shape) == (2, 4, 4) and tuple(Vh.shape) == (2, 3, 3)
    np.testing.assert_allclose(LA.svdvals(M).numpy(), np.linalg.svd(M_NP, compute_uv=False),
                               **TOL)
    np.testing.assert_allclose(LA.pinv(M).numpy(), np.linalg.pinv(M_NP), **TOL)
    np.testing.assert_allclose(LA.pinv(H, hermitian=True).numpy(),
                               np.linalg.pinv(H_NP, hermitian=True), **TOL)
    low_rank = M_NP[..., :2] @ _cx(2, 3)
    assert LA.matrix_rank(_t(low_rank)).tolist() == [2, 2]
    assert LA.matrix_rank(H, hermitian=True).tolist() == [3, 3]


def test_eigh_svd_gradients():
    H, M = _t(H_NP, True), _t(M_NP, True)
    assert gradcheck(lambda x: LA.eigvalsh(_herm(x)), (H,))
    assert gradgradcheck(lambda x: LA.eigvalsh(_herm(x)), (H,))
    # gauge-invariant functions of the vectors (each is fixed up to a phase)
    assert gradcheck(lambda x: LA.eigh(_herm(x)).eigenvectors.abs(), (H,))
    assert gradcheck(LA.svdvals, (M,))
    assert gradgradcheck(LA.svdvals, (M,))

    def svd_invariant(x):
        U, S, Vh = LA.svd(x, full_matrices=False)
        return U.abs(), S, Vh.abs(), U @ Vh  # U Vh: the phases cancel
    assert gradcheck(svd_invariant, (M,))
    assert gradcheck(LA.pinv, (M,))
    assert gradcheck(lambda x: LA.pinv(_herm(x), hermitian=True), (H,))


def test_phase_dependent_losses_raise():
    H, M = _t(H_NP, True), _t(M_NP, True)
    with pytest.raises(RuntimeError, match="linalg_eigh_backward: The eigenvectors in the "
                                           "complex case are specified up to multiplication"):
        LA.eigh(H).eigenvectors.real.sum().backward()
    with pytest.raises(RuntimeError, match="svd_backward: The singular vectors in the complex "
                                           "case are specified up to multiplication by "
                                           "e\\^{i phi}. The specified loss function depends "
                                           "on this phase term, making it ill-defined."):
        LA.svd(M, full_matrices=False).U.imag.sum().backward()


def test_still_missing_complex_support_is_named():
    z = _t(_cx(3, 3))
    for call in (lambda: LA.qr(z), lambda: LA.matrix_exp(z), lambda: LA.cond(z),
                 lambda: LA.lstsq(z, z)):
        with pytest.raises(NotImplementedError, match="complex inputs \\(complex128\\) are "
                                                      "not supported by tgrad.linalg yet"):
            call()
