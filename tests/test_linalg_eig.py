# ruff: noqa: N806  (matrix notation: A, L, V)
"""tgrad.linalg.eig / eigvals (general square matrices, complex results, CPU): values
against NumPy's LAPACK geev (eigenvalues as a sorted multiset, eigenvectors through the
residual A V = V diag(L), unit norms, and geev's own normalisation, which PyTorch shares),
gradients by gradcheck / gradgradcheck in float64 (gauge-invariant functions of the
eigenvectors, as PyTorch's OpInfo), a hand-computed gradient, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(11)
C64, C128, F32, F64 = tgrad.complex64, tgrad.complex128, tgrad.float32, tgrad.float64


def _cx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _sorted(x):
    return np.sort_complex(np.asarray(x).ravel())


@pytest.mark.parametrize("a", [RNG.standard_normal((4, 4)), _cx(4, 4),
                               RNG.standard_normal((2, 3, 3, 3)), _cx(2, 3, 3),
                               np.array([[0.0, -1.0], [1.0, 0.0]]), np.diag([3.0, 1.0, 2.0])],
                         ids=["real", "complex", "real-batch", "complex-batch", "rotation",
                              "diagonal"])
def test_eig_forward_vs_numpy(a):
    L, V = LA.eig(tgrad.tensor(a))
    assert L.dtype is C128 and V.dtype is C128
    assert tuple(L.shape) == a.shape[:-1] and tuple(V.shape) == a.shape
    l_np, v_np = np.linalg.eig(a)
    L, V = L.numpy(), V.numpy()
    for idx in np.ndindex(a.shape[:-2]):
        np.testing.assert_allclose(_sorted(L[idx]), _sorted(l_np[idx]), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(a @ V, V * L[..., None, :], atol=1e-12)  # A V = V diag(L)
    np.testing.assert_allclose(np.linalg.norm(V, axis=-2), 1.0, rtol=1e-12)
    # LAPACK geev's normalisation, as PyTorch's (both call geev): each vector has norm 1
    # (above) and its largest-modulus component real
    big = np.take_along_axis(V, np.abs(V).argmax(-2)[..., None, :], -2)
    np.testing.assert_allclose(big.imag, 0.0, atol=1e-12)
    np.testing.assert_allclose(L, l_np, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(V, v_np, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(LA.eigvals(tgrad.tensor(a)).numpy(), l_np, rtol=1e-12,
                               atol=1e-12)


def test_eig_dtypes_and_empty():
    a = RNG.standard_normal((3, 3))
    assert LA.eig(tgrad.tensor(a, dtype=F32)).eigenvalues.dtype is C64
    assert LA.eigvals(tgrad.tensor(a, dtype=F32)).dtype is C64
    assert LA.eig(tgrad.tensor(a + 0j, dtype=C64)).eigenvectors.dtype is C64
    np.testing.assert_allclose(LA.eigvals(tgrad.tensor(a, dtype=F32)).numpy(),
                               np.linalg.eigvals(a), rtol=1e-4)
    L, V = LA.eig(tgrad.zeros(2, 0, 0))
    assert tuple(L.shape) == (2, 0) and tuple(V.shape) == (2, 0, 0) and L.dtype is C64
    assert tuple(LA.eigvals(tgrad.zeros(0, 2, 2, dtype=F64)).shape) == (0, 2)


def test_eig_errors():
    with pytest.raises(RuntimeError, match="linalg.eig: A must be batches of square matrices, "
                                           "but they are 2 by 3 matrices"):
        LA.eig(tgrad.ones(2, 3))
    with pytest.raises(RuntimeError, match="linalg.eigvals: The input tensor A must have at least "
                                           "2 dimensions."):
        LA.eigvals(tgrad.ones(3))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        LA.eig(tgrad.ones(3, 3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="torch.linalg.eig: input tensor should not contain "
                                           "infs or NaNs."):
        LA.eig(tgrad.tensor([[1.0, float("nan")], [0.0, 1.0]]))
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        LA.eigvals(tgrad.tensor([[1.0, float("inf")], [0.0, 1.0]], requires_grad=True))


def test_eigvals_of_nan_or_inf_without_grad_is_lapacks_result():
    """PyTorch's eigvals raises for NaN / inf only when A requires grad; else geev's result:
    a NaN above the diagonal of a triangular A leaves its eigenvalues (the diagonal) alone,
    a NaN on it gives NaN there; eig itself always raises."""
    a = np.array([[1.0, np.nan], [0.0, 2.0]])
    got = LA.eigvals(tgrad.tensor(a, dtype=tgrad.float32))
    assert got.dtype is tgrad.complex64
    np.testing.assert_array_equal(np.sort_complex(got.numpy()), [1.0, 2.0])
    b = np.array([[np.nan, 1.0], [0.0, 2.0]])
    got = LA.eigvals(tgrad.tensor(b, dtype=tgrad.float64)).numpy()
    assert np.isnan(got).sum() == 1 and 2.0 in got
    c = np.array([[1 + 1j, np.nan], [0.0, 2.0]])
    np.testing.assert_array_equal(np.sort_complex(LA.eigvals(tgrad.tensor(c)).numpy()),
                                  [1 + 1j, 2.0])
    batch = np.stack([np.array([[1.0, 2.0], [3.0, 4.0]]), a])
    got = LA.eigvals(tgrad.tensor(batch, dtype=tgrad.float64)).numpy()
    np.testing.assert_allclose(np.sort_complex(got[0]), np.linalg.eigvals(batch[0]),
                               rtol=1e-12)
    np.testing.assert_array_equal(np.sort_complex(got[1]), [1.0, 2.0])
    assert np.isnan(LA.eigvals(tgrad.tensor([[1.0, np.inf], [0.0, 2.0]])).numpy()).all()
    t = tgrad.tensor(a, requires_grad=True)
    with tgrad.no_grad():
        np.testing.assert_array_equal(np.sort_complex(LA.eigvals(t).numpy()), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="torch.linalg.eig: input tensor should not contain "
                                           "infs or NaNs."):
        LA.eig(tgrad.tensor(a))


def test_eigvals_gradient_by_hand():
    # sum(L) = tr(A): dA = I;  for triangular A, L = diag(A) and sum(Re L^2) = tr(A^2)
    # gives dA = 2 A^T (the real case), both at any A with distinct eigenvalues
    a = RNG.standard_normal((3, 3))
    A = tgrad.tensor(a, requires_grad=True)
    LA.eigvals(A).real.sum().backward()
    assert A.grad.dtype is F64
    np.testing.assert_allclose(A.grad.numpy(), np.eye(3), atol=1e-12)
    z = _cx(3, 3)
    Z = tgrad.tensor(z, requires_grad=True)
    (LA.eigvals(Z) ** 2).real.sum().backward()
    # Re tr(Z^2) = Re sum_ij z_ij z_ji; its gradient (dL/dx + i dL/dy) is 2 conj(Z^T)
    np.testing.assert_allclose(Z.grad.numpy(), 2 * z.T.conj(), atol=1e-12)


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_gradcheck(complex_input):
    a = _cx(2, 3, 3) if complex_input else RNG.standard_normal((2, 3, 3))
    A = tgrad.tensor(a, requires_grad=True)
    assert gradcheck(LA.eigvals, (A,))
    assert gradcheck(lambda x: LA.eig(x).eigenvalues, (A,))
    # gauge-invariant functions of the eigenvectors (each is fixed up to a phase e^{i phi})
    assert gradcheck(lambda x: (LA.eig(x).eigenvalues, LA.eig(x).eigenvectors.abs()), (A,))

    def outer(x):  # V[k, i] conj(V[l, i]): the projector on each eigenvector's line
        V = LA.eig(x).eigenvectors
        return V.unsqueeze(-2) * V.conj().unsqueeze(-3)
    assert gradcheck(outer, (A,))


@pytest.mark.parametrize("complex_input", [False, True])
def test_eigvals_gradgradcheck(complex_input):
    a = _cx(3, 3) if complex_input else RNG.standard_normal((3, 3))
    A = tgrad.tensor(a, requires_grad=True)
    assert gradgradcheck(LA.eigvals, (A,))


def test_eig_phase_dependent_loss_raises():
    A = tgrad.tensor(_cx(3, 3), requires_grad=True)
    V = LA.eig(A).eigenvectors
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the "
                                           "complex case are specified up to multiplication "
                                           "by e\\^{i phi}. The specified loss function "
                                           "depends on this quantity, so it is ill-defined."):
        V.real.sum().backward()


def test_eigvals_of_nan_without_numpys_private_gufunc_gives_nan(monkeypatch):
    """Where NumPy lacks its private _umath_linalg.eig (or changed its call), eigvals of a
    NaN / inf matrix without grad gives NaN results of the right shape and dtype."""
    from numpy.linalg import _umath_linalg

    def broken(*args, **kwargs):
        raise TypeError("changed signature")
    a = np.array([[[1.0, np.nan], [0.0, 2.0]]] * 2)
    for patch in (lambda: monkeypatch.delattr(_umath_linalg, "eig"),
                  lambda: monkeypatch.setattr(_umath_linalg, "eig", broken)):
        patch()
        got = LA.eigvals(tgrad.tensor(a, dtype=F32))
        assert got.dtype is C64 and tuple(got.shape) == (2, 2)
        assert np.isnan(got.numpy().real).all() and np.isnan(got.numpy().imag).all()
        monkeypatch.undo()


def test_eig_vectors_only_gradient_keeps_the_phase_diagonal():
    """A loss of V alone that depends slightly on the eigenvector phases (Im diag(V^H gV) =
    c, below PyTorch's 1e-2 check) gets PyTorch's gradient, which keeps i Im diag(V^H gV)
    on the inner matrix's diagonal when there is no gL: that is the derivative in the gauge
    where (V0^{-1} V)_jj stays real (the formula's off-diagonal part) and each eigenvector's
    phase turns by Im(L_j - L0_j) (its diagonal). Checked by central finite differences of
    the loss of NumPy's eig, explicitly put in that gauge."""
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    L0, V0 = np.linalg.eig(a0)
    V0inv = np.linalg.inv(V0)
    W, c = rng.random((3, 3)), np.array([4e-3, -3e-3, 5e-3])

    def loss_np(v):  # phase-invariant part + sum_j c_j Im(V0_j^H v_j)
        return (np.abs(v) * W).sum() + (c * np.imag((V0.conj() * v).sum(0))).sum()

    def gauged(a):
        w, v = np.linalg.eig(a)
        order = [int(np.argmin(abs(w - lam))) for lam in L0]
        w, v = w[order], v[:, order]
        p = np.diagonal(V0inv @ v)
        return v * (p.conj() / abs(p)) * np.exp(1j * np.imag(w - L0))

    h, fd = 1e-6, np.zeros((3, 3), complex)
    for i, j in np.ndindex(3, 3):
        for unit in (1, 1j):  # the gradient of a real loss: d/dRe + i d/dIm
            e = np.zeros((3, 3), complex)
            e[i, j] = unit * h
            fd[i, j] += unit * (loss_np(gauged(a0 + e)) - loss_np(gauged(a0 - e))) / (2 * h)
    A = tgrad.tensor(a0, requires_grad=True)
    V = LA.eig(A).eigenvectors
    loss = ((V.abs() * tgrad.tensor(W)).sum()
            + ((V * tgrad.tensor(V0.conj())).sum(0).imag * tgrad.tensor(c)).sum())
    loss.backward()
    np.testing.assert_allclose(A.grad.numpy(), fd, atol=1e-7)
