"""linalg.cholesky's CPU backward (_cholesky_backward_host: the solves as products with
L^{-1}, float64 for float32) and cholesky_ex's info from NumPy, against the tgrad-op path
(LAPACK_ON_CPU = False) and float64 references."""

import numpy as np
import pytest

import tgrad
import tgrad.linalg._host_lapack as HL
from tgrad.autograd import gradcheck, gradgradcheck


def _spd(rng, b, n, dt):
    a = rng.standard_normal((b, n, n))
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal((b, n, n))
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


def _grad(a, gl, upper):
    x = tgrad.tensor(a, requires_grad=True)
    tgrad.linalg.cholesky(x, upper=upper).backward(tgrad.tensor(gl))
    return x.grad.numpy()


@pytest.mark.parametrize("n", [1, 5, 8, 13, 32])
@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("upper", [False, True])
def test_matches_the_op_path(n, dt, upper, monkeypatch):
    rng = np.random.default_rng(n)
    a = _spd(rng, 4, n, dt)
    gl = rng.standard_normal((4, n, n)).astype(dt)
    got = _grad(a, gl, upper)
    wide = np.complex128 if np.dtype(dt).kind == "c" else np.float64
    monkeypatch.setattr(HL, "LAPACK_ON_CPU", False)
    want = _grad(a.astype(wide), gl.astype(wide), upper)  # the ops' formula, float64
    tol = 8 * np.finfo(dt).eps
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


def test_not_positive_definite_keeps_the_ops_nan():
    a = np.array([[[4.0, 1.0], [1.0, -3.0]]])
    x = tgrad.tensor(a, requires_grad=True)
    low, info = tgrad.linalg.cholesky_ex(x)
    assert info.tolist() == [2]
    low.backward(tgrad.ones_like(low))
    assert np.isnan(x.grad.numpy()).any()


def test_info_values():
    a = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0]), np.diag([0.0, 1.0, 1.0])])
    _, info = tgrad.linalg.cholesky_ex(tgrad.tensor(a))
    assert info.dtype is tgrad.int32 and info.tolist() == [0, 2, 1]
    _, info = tgrad.linalg.cholesky_ex(tgrad.tensor(np.zeros((2, 0, 0))))
    assert info.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match="order 2 is not positive-definite"):
        tgrad.linalg.cholesky(tgrad.tensor(a[1]))


@pytest.mark.parametrize("upper", [False, True])
def test_gradcheck_gradgradcheck(upper):
    rng = np.random.default_rng(3)
    x = tgrad.tensor(_spd(rng, 2, 9, np.float64), requires_grad=True)

    def f(x):
        return tgrad.linalg.cholesky((x + x.mT) / 2, upper=upper)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
