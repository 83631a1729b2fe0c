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
