# ruff: noqa: N806  (matrix notation: A, B, L, X)
"""The CPU fast paths through np.linalg (tgrad/linalg/_host_lapack.py) of solve, inv, det,
slogdet and cholesky: values against NumPy float64 (float32 det / slogdet to within one
float32 rounding of it), with the fast paths on and off (the vectorised loops cuda runs);
odd sizes, an empty batch, 0 x 0 matrices, non-contiguous inputs; a batch holding a
singular / non-positive-definite matrix (the loop's info and errors); det's gradient in
float32 (double-precision cofactors) and at singular matrices; gradcheck and
gradgradcheck in float64."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.linalg import _host_lapack

RNG = np.random.default_rng(11)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# float32 / complex64 solves: the error bound of LU (n eps cond) at these well-conditioned
# matrices, relative to the largest entry
TOL = {np.float32: 1e-5, np.complex64: 1e-5, np.float64: 1e-12, np.complex128: 1e-12}


@pytest.fixture(params=["lapack", "loops"])
def lapack(request, monkeypatch):
    monkeypatch.setattr(_host_lapack, "LAPACK_ON_CPU", request.param == "lapack")
    return request.param == "lapack"


def _rand(shape, dt):
    a = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a


def _spd(batch, n, dt):
    a = _rand(batch + (n, n), dt)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dt)


def _close(x, ref, dt):
    scale = max(float(np.abs(ref).max()) if ref.size else 0.0, 1.0)
    np.testing.assert_allclose(x, ref, rtol=0, atol=TOL[dt] * scale)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("batch,n", [((), 1), ((3,), 17), ((2, 0), 4), ((2,), 0), ((), 8)])
def test_values_against_float64(lapack, dt, batch, n):
    a = _spd(batch, n, dt) + _rand(batch + (n, n), dt).astype(dt)  # not symmetric
    b = _rand(batch + (n, 3), dt).astype(dt)
    hi = np.complex128 if np.dtype(dt).kind == "c" else np.float64  # the reference's dtype
    a128, b128 = a.astype(hi), b.astype(hi)
    A, B = tgrad.tensor(a), tgrad.tensor(b)
    _close(LA.solve(A, B).numpy(), np.linalg.solve(a128, b128) if a.size else b, dt)
    _close(LA.inv(A).numpy(), np.linalg.inv(a128) if a.size else a, dt)
    d = LA.det(A).numpy()
    ref_d = np.linalg.det(a128) if a.size or n == 0 else np.ones(batch)
    np.testing.assert_allclose(d, ref_d.astype(d.dtype), rtol=TOL[dt] * 10 if not lapack
                               or dt in (np.float64, np.complex128) else 2e-7)
    sign, logabs = LA.slogdet(A)
    assert d.shape == sign.shape == logabs.shape == batch  # (unbatched: 0-d, not (1,))
    rs, rl = np.linalg.slogdet(a128) if a.size or n == 0 else (np.ones(batch), np.zeros(batch))
    np.testing.assert_allclose(sign.numpy(), rs.astype(sign.numpy().dtype), atol=TOL[dt])
    np.testing.assert_allclose(logabs.numpy(), rl, rtol=TOL[dt], atol=TOL[dt])
    s = _spd(batch, n, dt)
    ref_l = np.linalg.cholesky(s.astype(hi)) if s.size else s
    _close(LA.cholesky(tgrad.tensor(s)).numpy(), ref_l, dt)
    _close(LA.cholesky(tgrad.tensor(s), upper=True).numpy(),
           np.conj(np.swapaxes(ref_l, -1, -2)), dt)


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
def test_float32_det_and_slogdet_are_float64_rounded_once(dt):
    """det / slogdet of float32 matrices: the float64 result rounded (<= 1 float32 ulp from
    the float64 reference; the float32 loop was off by up to about 100 ulps at n = 32)."""
    a = _spd((6,), 32, dt) / 8 + _rand((6, 32, 32), dt).astype(dt)
    ref = np.linalg.det(a.astype(np.complex128))
    d = LA.det(tgrad.tensor(a)).numpy()
    for part in (np.real, np.imag):
        err = np.abs(part(d) - part(ref)) / np.spacing(np.abs(part(ref)).astype(np.float32))
        assert err.max() <= 1.0
    logabs = LA.slogdet(tgrad.tensor(a)).logabsdet.numpy()
    ref_l = np.log(np.abs(ref))
    assert (np.abs(logabs - ref_l) / np.spacing(np.abs(ref_l).astype(np.float32))).max() <= 1


def test_non_contiguous_inputs(lapack):
    a = _spd((4,), 9, np.float64)
    b = _rand((4, 5, 9), np.float64)
    At = tgrad.tensor(np.swapaxes(a, -1, -2).copy()).mT  # a transposed view: a
    Bt = tgrad.tensor(b).mT  # (4, 9, 5), non-contiguous
    assert not At.is_contiguous() and not Bt.is_contiguous()
    _close(LA.solve(At, Bt).numpy(), np.linalg.solve(a, np.swapaxes(b, -1, -2)), np.float64)
    _close(LA.inv(At[::2]).numpy(), np.linalg.inv(a[::2]), np.float64)
    _close(LA.det(At).numpy(), np.linalg.det(a), np.float64)
    _close(LA.cholesky(At).numpy(), np.linalg.cholesky(a), np.float64)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_batch_with_a_singular_matrix_keeps_info_and_errors(lapack, dt):
    """One singular (non-PD) matrix among regular ones: the loop's per-matrix info, inf/NaN
    only there, PyTorch's error texts."""
    a = _spd((3,), 5, dt)
    a[1, :, 2] = 0  # singular: U[2, 2] = 0 (the loop's info 3)
    b = _rand((3, 5, 2), dt).astype(dt)
    X, info = LA.solve_ex(tgrad.tensor(a), tgrad.tensor(b))
    assert info.tolist() == [0, 3, 0]
    _close(X.numpy()[[0, 2]], np.linalg.solve(a[[0, 2]].astype(np.float64), b[[0, 2]]), dt)
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The solver failed because "
                                           r"the input matrix is singular"):
        LA.solve(tgrad.tensor(a), tgrad.tensor(b))
    with pytest.raises(RuntimeError, match="The diagonal element 3 is zero"):
        LA.inv(tgrad.tensor(a))
    assert LA.inv_ex(tgrad.tensor(a)).info.tolist() == [0, 3, 0]
    assert LA.det(tgrad.tensor(a)).numpy()[1] == 0
    sign, logabs = LA.slogdet(tgrad.tensor(a))
    assert sign.numpy()[1] == 0 and logabs.numpy()[1] == -np.inf
    s = _spd((3,), 9, dt)
    s[2, 4, 4] = -100  # the leading minor of order 5 is not positive-definite
    L, info = LA.cholesky_ex(tgrad.tensor(s))
    assert info.tolist() == [0, 0, 5]
    assert np.isnan(L.numpy()[2, 4:, 4]).all() and np.isfinite(L.numpy()[:2]).all()
    with pytest.raises(RuntimeError, match=r"\(Batch element 2\): The factorization could "
                       r"not be completed because the input is not positive-definite \(the "
                       r"leading minor of order 5 is not positive-definite\)"):
        LA.cholesky(tgrad.tensor(s))


@pytest.mark.parametrize("dt", [np.float32, np.complex64])
def test_float32_det_gradient_is_the_cofactors(lapack, dt):
    """d det / dA = conj(det A) A^{-H} (float32: computed in float64 and rounded), and the
    SVD's finite cofactors at a singular matrix of the batch."""
    a = _rand((3, 6, 6), dt).astype(dt)
    a[2, 3] = a[2, 1]  # singular
    A = tgrad.tensor(a, requires_grad=True)
    LA.det(A).real.sum().backward() if dt == np.complex64 else LA.det(A).sum().backward()
    w = a.astype(np.complex128)
    ref = np.conj(np.linalg.det(w[:2]))[:, None, None] * np.conj(
        np.swapaxes(np.linalg.inv(w[:2]), -1, -2))
    np.testing.assert_allclose(A.grad.numpy()[:2], ref, rtol=1e-4, atol=1e-4)
    # the singular matrix's cofactors (rank n - 1: the adjugate is nonzero)
    eps, fd = 1e-6, np.zeros((6, 6))
    for i in range(6):
        for j in range(6):
            e = np.zeros((6, 6))
            e[i, j] = eps
            fd[i, j] = (np.linalg.det(w[2] + e) - np.linalg.det(w[2] - e)).real / (2 * eps)
    np.testing.assert_allclose(A.grad.numpy()[2].real, fd, rtol=1e-3, atol=1e-3)


def test_float32_det_gradient_beyond_float32_range_is_inf_not_nan():
    """det of 32 x 32 matrices with a diagonal ~ 64 overflows float32; the cofactors that
    fit float32 are finite (the float64 ones rounded), the others inf, none NaN."""
    a = _spd((2,), 32, np.float64)
    A = tgrad.tensor(a.astype(np.float32), requires_grad=True)
    d = LA.det(A)
    assert np.isinf(d.detach().numpy()).all()
    d.sum().backward()
    g = A.grad.numpy()
    assert not np.isnan(g).any()
    w = a.astype(np.float32).astype(np.float64)
    ref = np.linalg.det(w)[:, None, None] * np.swapaxes(np.linalg.inv(w), -1, -2)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(g, ref.astype(np.float32))


@pytest.mark.parametrize("n", [1, 4])
def test_gradcheck_and_gradgradcheck_float64(lapack, n):
    a = _spd((2,), n, np.float64) + _rand((2, n, n), np.float64) * 0.3
    s = _spd((2,), n, np.float64)
    A = tgrad.tensor(a, requires_grad=True)
    S = tgrad.tensor(s, requires_grad=True)
    B = tgrad.tensor(_rand((2, n, 3), np.float64), requires_grad=True)
    for fn, args in [(LA.solve, (A, B)), (LA.inv, (A,)), (LA.det, (A,)),
                     (lambda x: LA.slogdet(x).logabsdet, (A,)),
                     (lambda x: LA.cholesky((x + x.mT) / 2), (S,))]:
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


def test_float32_gradients_match_float64():
    """Plain (no create_graph) float32 backwards of the fast paths against float64."""
    a = _spd((3,), 17, np.float64) + _rand((3, 17, 17), np.float64)
    b = _rand((3, 17, 2), np.float64)
    for fn in (lambda x, y: LA.solve(x, y), lambda x, y: LA.inv(x) @ y,
               lambda x, y: LA.slogdet(x).logabsdet.unsqueeze(-1).unsqueeze(-1) * y,
               lambda x, y: LA.cholesky(x @ x.mT) @ y):
        grads = []
        for dt in (np.float32, np.float64):
            A = tgrad.tensor(a.astype(dt), requires_grad=True)
            B = tgrad.tensor(b.astype(dt), requires_grad=True)
            fn(A, B).sum().backward()
            grads.append((A.grad.numpy(), B.grad.numpy()))
        for g32, g64 in zip(*grads):
            _close(g32, g64, np.float32)
