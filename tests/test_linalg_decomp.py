# ruff: noqa: N806  (matrix notation: Q, R, U, S, V, L, A, X)
"""tgrad.linalg's QR (Householder), eigh / eigvalsh and svd / svdvals (parallel Jacobi) and
what is built on them: pinv, matrix_rank, cond, lstsq, the 'nuc' / 2 / -2 matrix norms,
matrix_exp, tensorinv, tensorsolve, vander; and the top-level torch names (tgrad.qr, svd,
pinverse, matrix_exp, cholesky, cholesky_inverse, lu, lu_solve, lu_unpack,
triangular_solve) with their Tensor methods. Values against NumPy float64 (LAPACK) to
1e-12; eigenvectors and singular vectors (unique up to sign) compared after fixing the sign
of each vector's largest entry; gradcheck and gradgradcheck in float64 (symmetrized inputs
for eigh, sign-fixed vectors for svd). Each test runs with the CPU forwards through LAPACK
(the default) and through the tgrad-op algorithms cuda runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.linalg import _qr

RNG = np.random.default_rng(5)
TOL = {"rtol": 1e-12, "atol": 1e-12}


@pytest.fixture(autouse=True, params=["lapack", "tgrad-ops"])
def cpu_algorithm(request, monkeypatch):
    """Every test twice: the CPU forwards through np.linalg, and through the tgrad-op
    algorithms (Householder, Jacobi) that cuda runs."""
    monkeypatch.setattr(_qr, "LAPACK_ON_CPU", request.param == "lapack")


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


def _leaf(shape):
    return _t(RNG.standard_normal(shape), requires_grad=True)


def _fix_signs(vecs: np.ndarray) -> np.ndarray:
    """Each column times the sign of its largest-magnitude entry (a gauge-free form)."""
    if vecs.size == 0:
        return vecs
    idx = np.abs(vecs).argmax(-2)[..., None, :]
    return vecs * np.sign(np.take_along_axis(vecs, idx, -2))


def _sym(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a + np.swapaxes(a, -1, -2)


# ------------------------------------------------------------------------------------ qr
@pytest.mark.parametrize("shape", [(1, 1), (4, 3), (3, 5), (17, 17), (5, 1), (1, 4),
                                   (2, 6, 4), (0, 3), (3, 0), (2, 0, 0)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_lapack(shape, mode):
    a = RNG.standard_normal(shape)
    Q, R = LA.qr(_t(a), mode=mode)
    want = np.linalg.qr(a, mode=mode)  # Householder with dlarfg's signs: identical factors
    if mode == "r":
        assert Q.shape == (0,)
        np.testing.assert_allclose(R.numpy(), want, **TOL)
    else:
        np.testing.assert_allclose(Q.numpy(), want[0], **TOL)
        np.testing.assert_allclose(R.numpy(), want[1], **TOL)


def test_qr_views_float32_and_rank_deficiency():
    a = RNG.standard_normal((5, 4))
    at = _t(a.T.copy()).mT  # a non-contiguous view
    assert not at.is_contiguous()
    np.testing.assert_allclose(LA.qr(at).R.numpy(), np.linalg.qr(a)[1], **TOL)
    Q, R = LA.qr(tgrad.tensor(a.astype(np.float32)))
    np.testing.assert_allclose(Q.numpy(), np.linalg.qr(a)[0], rtol=1.3e-6, atol=1e-5)
    low = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))  # rank 2
    low[:, 3] = 0.0  # a zero column: no reflection (LAPACK's tau = 0)
    Q, R = LA.qr(_t(low), mode="complete")
    np.testing.assert_allclose((Q @ R).numpy(), low, **TOL)
    np.testing.assert_allclose((Q.mT @ Q).numpy(), np.eye(5), **TOL)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2), (1, 1)])
def test_qr_gradcheck(shape):
    x = _leaf(shape)
    assert gradcheck(lambda a: LA.qr(a), (x,))
    assert gradgradcheck(lambda a: LA.qr(a), (x,))
    if shape[-2] <= shape[-1]:
        assert gradcheck(lambda a: LA.qr(a, mode="complete"), (x,))



@pytest.mark.parametrize("shape", [(3, 2), (2, 3)])
def test_qr_backward_does_not_save_its_input(shape):
    # PyTorch's QR backward uses Q and R only: A changed in place after qr (before backward)
    # neither raises nor changes the gradient; reference: central differences of NumPy's qr
    a0 = np.random.default_rng(11).standard_normal(shape)
    wq, wr = np.random.default_rng(12).standard_normal((2, 3, 3))
    k = min(shape)

    def loss_np(a):
        q, r = np.linalg.qr(a)
        return (q * wq[:shape[0], :k]).sum() + (r * wr[:k, :shape[1]]).sum()

    x = _t(a0, requires_grad=True)
    A = x * 1
    Q, R = LA.qr(A)
    A.mul_(3.0)  # A's version moves on; the QR node must not need it
    loss = (Q * _t(wq[:shape[0], :k])).sum() + (R * _t(wr[:k, :shape[1]])).sum()
    loss.backward()
    h, fd = 1e-6, np.zeros(shape)
    for i in np.ndindex(*shape):
        e = np.zeros(shape)
        e[i] = h
        fd[i] = (loss_np(a0 + e) - loss_np(a0 - e)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-7)

def test_qr_errors():
    x = _leaf((4, 2))
    with pytest.raises(RuntimeError, match="mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete'"):
        LA.qr(x, mode="complete").Q.sum().backward()
    with pytest.raises(RuntimeError, match="unrecognized mode 'full'"):
        LA.qr(x, mode="full")
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.qr(_t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="floating point or complex.*Long"):
        LA.qr(tgrad.ones(2, 2, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        LA.qr(tgrad.ones(2, 2, dtype=tgrad.float16))


# ---------------------------------------------------------------------------------- eigh
@pytest.mark.parametrize("n,batch", [(1, ()), (2, ()), (5, ()), (17, ()), (4, (2, 3)),
                                     (0, ()), (3, (0,))])
def test_eigh_matches_lapack(n, batch):
    a = _sym(n, batch)
    L, V = LA.eigh(_t(a))
    wl, wv = np.linalg.eigh(a)
    np.testing.assert_allclose(L.numpy(), wl, **TOL)
    np.testing.assert_allclose(_fix_signs(V.numpy()), _fix_signs(wv), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(LA.eigvalsh(_t(a)).numpy(), wl, **TOL)


def test_eigh_uplo_repeated_views_float32_and_nan():
    a = _sym(4)
    lower_only = np.tril(a) + np.triu(RNG.standard_normal((4, 4)), 1)  # garbage above
    np.testing.assert_allclose(LA.eigvalsh(_t(lower_only)).numpy(), np.linalg.eigvalsh(a),
                               **TOL)
    upper_only = np.triu(a) + np.tril(RNG.standard_normal((4, 4)), -1)
    np.testing.assert_allclose(LA.eigvalsh(_t(upper_only), UPLO="U").numpy(),
                               np.linalg.eigvalsh(a), **TOL)
    # a repeated eigenvalue: any orthonormal basis of its space is right
    q = np.linalg.qr(RNG.standard_normal((4, 4)))[0]
    rep = q @ np.diag([1.0, 1.0, 1.0, 3.0]) @ q.T
    L, V = LA.eigh(_t(rep))
    np.testing.assert_allclose(L.numpy(), [1, 1, 1, 3], **TOL)
    v = V.numpy()
    np.testing.assert_allclose(v.T @ v, np.eye(4), **TOL)
    np.testing.assert_allclose(v @ np.diag(L.numpy()) @ v.T, rep, **TOL)
    view = _t(_sym(5, (2,))).mT[..., ::1, :]
    np.testing.assert_allclose(LA.eigvalsh(view).numpy(), np.linalg.eigvalsh(view.numpy()),
                               **TOL)
    L32 = LA.eigvalsh(tgrad.tensor(a.astype(np.float32)))
    np.testing.assert_allclose(L32.numpy(), np.linalg.eigvalsh(a), rtol=1.3e-6, atol=1e-5)
    bad = np.stack([_sym(3), _sym(3)])
    bad[1, 0, 0] = np.nan  # NaN in one matrix of the batch: NaN results there only
    L, V = LA.eigh(_t(bad))
    assert np.isnan(L.numpy()[1]).all() and np.isnan(V.numpy()[1]).all()
    np.testing.assert_allclose(L.numpy()[0], np.linalg.eigvalsh(bad[0]), **TOL)


def _eigh_fixed(x):
    L, V = LA.eigh(x + x.mT)  # symmetric input, so every entry of x matters
    return L, V * tgrad.sign(V[..., :1, :])


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 2, 2)])
def test_eigh_gradcheck(shape):
    x = _leaf(shape)
    assert gradcheck(_eigh_fixed, (x,))
    assert gradgradcheck(_eigh_fixed, (x,))
    assert gradgradcheck(lambda a: LA.eigvalsh(a + a.mT), (x,))


def test_eigh_gradient_is_the_symmetric_one_and_errors():
    a = _sym(3)
    x = _t(a, requires_grad=True)
    LA.eigvalsh(x).sum().backward()  # d(trace)/dA = I for the symmetric matrix
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3), **TOL)
    with pytest.raises(RuntimeError, match="must be batches of square matrices"):
        LA.eigh(_t(np.zeros((2, 3))))
    with pytest.raises(RuntimeError, match="UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(_t(a), UPLO="X")


# ----------------------------------------------------------------------------------- svd
@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (2, 3), (17, 6), (6, 17), (5, 5),
                                   (2, 3, 4), (0, 3), (3, 0)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_matches_lapack(shape, full):
    a = RNG.standard_normal(shape)
    U, S, Vh = LA.svd(_t(a), full_matrices=full)
    wu, ws, wvh = np.linalg.svd(a, full_matrices=full)
    assert U.shape == wu.shape and S.shape == ws.shape and Vh.shape == wvh.shape
    np.testing.assert_allclose(S.numpy(), ws, **TOL)
    np.testing.assert_allclose(LA.svdvals(_t(a)).numpy(), ws, **TOL)
    k = ws.shape[-1]
    u, vh = U.numpy(), Vh.numpy()
    np.testing.assert_allclose((u[..., :k] * S.numpy()[..., None, :]) @ vh[..., :k, :], a,
                               **TOL)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(
        np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), **TOL)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), np.broadcast_to(
        np.eye(vh.shape[-2]), vh.shape[:-2] + (vh.shape[-2],) * 2), **TOL)
    if k == 0:
        return
    # the singular vectors of distinct singular values are LAPACK's up to one sign each
    sign = np.sign(np.take_along_axis(u[..., :k], np.abs(wu[..., :k]).argmax(-2)[..., None, :],
                                      -2) * np.take_along_axis(
        wu[..., :k], np.abs(wu[..., :k]).argmax(-2)[..., None, :], -2))
    np.testing.assert_allclose(u[..., :k] * sign, wu[..., :k], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(vh[..., :k, :] * np.swapaxes(sign, -1, -2), wvh[..., :k, :],
                               rtol=1e-10, atol=1e-10)


def test_svd_rank_deficient_zero_views_float32_nan():
    low = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 4))
    U, S, Vh = LA.svd(_t(low))
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(low, compute_uv=False), **TOL)
    np.testing.assert_allclose((U.mT @ U).numpy(), np.eye(6), **TOL)  # completed to 6 x 6
    np.testing.assert_allclose((Vh @ Vh.mT).numpy(), np.eye(4), **TOL)
    np.testing.assert_allclose((U[:, :4] * S) @ Vh, low, **TOL)
    U, S, Vh = LA.svd(tgrad.zeros(3, 2, dtype=tgrad.float64))
    assert (S.numpy() == 0).all()
    np.testing.assert_allclose((U.mT @ U).numpy(), np.eye(3), **TOL)
    a = RNG.standard_normal((4, 3))
    view = _t(a.T.copy()).mT
    np.testing.assert_allclose(LA.svdvals(view).numpy(), np.linalg.svd(a, compute_uv=False),
                               **TOL)
    s32 = LA.svdvals(tgrad.tensor(a.astype(np.float32)))
    np.testing.assert_allclose(s32.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1.3e-6,
                               atol=1e-5)
    a[1, 1] = np.inf
    assert np.isnan(LA.svdvals(_t(a)).numpy()).all()  # inf: NaN results (LAPACK's too)
    a[1, 1] = np.nan  # NaN: PyTorch's LinAlgError, also through what the SVD serves
    for fn in (LA.svdvals, LA.svd, LA.pinv, LA.matrix_rank, LA.cond,
               lambda m: LA.matrix_norm(m, 2), lambda m: LA.matrix_norm(m, "nuc")):
        with pytest.raises(LA.LinAlgError, match="input matrix contained non-finite values"):
            fn(_t(a))


def _svd_fixed(full):
    def f(x):
        U, S, Vh = LA.svd(x, full_matrices=full)
        k = S.shape[-1]
        sign = tgrad.sign(U[..., :1, :k])
        return U[..., :k] * sign, S, Vh[..., :k, :] * sign.mT
    return f


@pytest.mark.parametrize("shape", [(1, 1), (3, 2), (2, 3), (3, 3), (2, 2, 3)])
def test_svd_gradcheck(shape):
    x = _leaf(shape)
    for full in (False, True):
        assert gradcheck(_svd_fixed(full), (x,))
    assert gradgradcheck(_svd_fixed(False), (x,))
    assert gradgradcheck(LA.svdvals, (x,))


def test_svd_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.svd(_t([1.0]))
    with pytest.raises(RuntimeError, match="driver="):
        LA.svd(_t(np.eye(2)), driver="gesvd")
    with pytest.raises(RuntimeError, match="Low precision"):
        LA.svdvals(tgrad.ones(2, 2, dtype=tgrad.bfloat16))


# ------------------------------------------------------------------- norms, pinv, rank, cond
@pytest.mark.parametrize("order", ["nuc", 2, -2])
def test_matrix_norms_of_singular_values(order):
    a = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(LA.matrix_norm(_t(a), order).numpy(),
                               np.linalg.norm(a, order, axis=(-2, -1)), **TOL)
    np.testing.assert_allclose(LA.matrix_norm(_t(a), order, dim=(0, 2), keepdim=True).numpy(),
                               np.linalg.norm(a, order, axis=(0, 2), keepdims=True), **TOL)
    np.testing.assert_allclose(LA.norm(_t(a[0]), order).numpy(), np.linalg.norm(a[0], order),
                               **TOL)
    x = _leaf((3, 2))
    assert gradcheck(lambda m: LA.matrix_norm(m, order), (x,))
    assert gradgradcheck(lambda m: LA.matrix_norm(m, order), (x,))


def test_pinv_and_matrix_rank():
    for a in (RNG.standard_normal((4, 3)), RNG.standard_normal((2, 5)),
              RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 4))):
        np.testing.assert_allclose(LA.pinv(_t(a)).numpy(), np.linalg.pinv(a), rtol=1e-10,
                                   atol=1e-10)
        assert LA.matrix_rank(_t(a)).item() == np.linalg.matrix_rank(a)
    s = _sym(4)
    s = s @ s  # symmetric positive semi-definite
    np.testing.assert_allclose(LA.pinv(_t(s), hermitian=True).numpy(),
                               np.linalg.pinv(s, hermitian=True), rtol=1e-10, atol=1e-10)
    assert LA.matrix_rank(_t(s), hermitian=True).item() == 4
    d = _t(np.diag([3.0, 1.0, 1e-3]))
    assert LA.matrix_rank(d, atol=0.01).item() == 2  # a positive atol alone: rtol = 0
    assert LA.matrix_rank(d, rtol=0.5).item() == 1
    assert LA.matrix_rank(d, atol=0.01, rtol=0.5).item() == 1  # max(atol, rtol * 3)
    np.testing.assert_allclose(LA.pinv(d, atol=0.01).numpy(), np.diag([1 / 3, 1.0, 0.0]),
                               **TOL)
    per_matrix = LA.matrix_rank(_t(np.stack([np.diag([3.0, 1e-3]), np.diag([3.0, 1e-3])])),
                                atol=_t([0.01, 0.0]))  # atol 0: the default rtol there
    assert per_matrix.tolist() == [1, 2]
    batch = _t(np.stack([np.eye(3), np.diag([1.0, 0.0, 0.0])]))
    assert LA.matrix_rank(batch).tolist() == [3, 1]
    assert LA.matrix_rank(batch).dtype is tgrad.int64
    x = _leaf((3, 2))
    assert gradcheck(LA.pinv, (x,))
    assert gradgradcheck(LA.pinv, (x,))


def test_pinv_deprecated_positional_rcond():
    # PyTorch's deprecated overload pinv(A, rcond, hermitian=False): rtol=rcond, atol=0
    d = _t(np.diag([3.0, 1.0, 1e-3]))
    want = np.diag([1 / 3, 1.0, 0.0])
    for got in (LA.pinv(d, 1e-2), LA.pinv(d, rcond=1e-2), LA.pinv(d, 1e-2, True),
                LA.pinv(d, tgrad.tensor(1e-2, dtype=tgrad.float64))):
        np.testing.assert_allclose(got.numpy(), want, **TOL)
    np.testing.assert_allclose(LA.pinv(d, 0.5).numpy(), np.diag([1 / 3, 0.0, 0.0]), **TOL)
    with pytest.raises(TypeError, match="rcond"):
        LA.pinv(d, 1e-2, rtol=0.1)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p):
    a = RNG.standard_normal((2, 4, 4))
    np.testing.assert_allclose(LA.cond(_t(a), p).numpy(), np.linalg.cond(a, p), rtol=1e-10)
    if p in (None, 2, -2):
        r = RNG.standard_normal((3, 5))
        np.testing.assert_allclose(LA.cond(_t(r), p).numpy(), np.linalg.cond(r, p),
                                   rtol=1e-10)
    else:
        with pytest.raises(RuntimeError, match="square matrices"):
            LA.cond(_t(np.ones((3, 5))), p)
        assert LA.cond(_t(np.ones((3, 3))), p).item() == math.inf  # singular


# ----------------------------------------------------------------------------------- lstsq
def test_lstsq_drivers_match_numpy():
    a, b = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    x, res, rank, sv = np.linalg.lstsq(a, b, rcond=None)
    out = LA.lstsq(_t(a), _t(b), driver="gelsd")
    np.testing.assert_allclose(out.solution.numpy(), x, **TOL)
    np.testing.assert_allclose(out.residuals.numpy(), res, **TOL)
    assert out.rank.item() == rank
    np.testing.assert_allclose(out.singular_values.numpy(), sv, **TOL)
    gels = LA.lstsq(_t(a), _t(b), driver="gels")
    np.testing.assert_allclose(gels.solution.numpy(), x, **TOL)
    np.testing.assert_allclose(gels.residuals.numpy(), res, **TOL)
    assert gels.rank.shape == (0,) and gels.singular_values.shape == (0,)
    default = LA.lstsq(_t(a), _t(b))  # gelsy on the CPU: rank, no singular values
    assert default.rank.item() == 3 and default.singular_values.shape == (0,)
    wide = RNG.standard_normal((2, 5))  # the minimum-norm solution
    bw = RNG.standard_normal(2)  # a vector right-hand side
    for drv in ("gels", "gelss"):
        got = LA.lstsq(_t(wide), _t(bw), driver=drv)
        np.testing.assert_allclose(got.solution.numpy(), np.linalg.pinv(wide) @ bw, **TOL)
        assert got.residuals.shape == (0,)
    low = RNG.standard_normal((5, 2)) @ RNG.standard_normal((2, 3))
    got = LA.lstsq(_t(low), _t(b[:5]), driver="gelsy")
    np.testing.assert_allclose(got.solution.numpy(), np.linalg.pinv(low) @ b[:5], rtol=1e-10,
                               atol=1e-10)
    assert got.rank.item() == 2 and got.residuals.shape == (0,)  # not full rank: no residuals
    batched = LA.lstsq(_t(RNG.standard_normal((2, 1, 4, 3))), _t(RNG.standard_normal((3, 4, 1))))
    assert batched.solution.shape == (2, 3, 3, 1)


@pytest.mark.parametrize("shape", [(6, 6), (3, 7, 4), (3, 4, 7)])
@pytest.mark.parametrize("dt", ["float32", "float64", "complex128"])
def test_lstsq_gelsy_full_rank_without_svd(shape, dt):
    """The CPU's default driver proves a full rank from inv / QR (no SVD: _host_lapack.
    full_rank_pinv); the matrices it cannot (rank-deficient, ill-conditioned, here one per
    batch) take the SVD path, bit for bit. Values against float64 / complex128 pinv,
    ranks against the SVD's, on square, tall and wide, non-contiguous inputs."""
    from tgrad.linalg import _host_lapack
    dtype = getattr(tgrad, dt)
    a = RNG.standard_normal(shape)
    if dtype.is_complex:
        a = a + 1j * RNG.standard_normal(shape)
    if a.ndim == 3:  # matrix 1 of rank 2
        a[1] = a[1][:, :2] @ RNG.standard_normal((2, shape[-1]))
    b = RNG.standard_normal(shape[:-1] + (2,))
    ta = tgrad.tensor(np.ascontiguousarray(a.swapaxes(-1, -2))).to(dtype).mT  # strided
    tb = tgrad.tensor(b).to(dtype)
    proven = _host_lapack.full_rank_pinv(ta.numpy(), max(shape[-2:]) * float(
        tgrad.finfo(dtype).eps))
    assert proven is not None
    np.testing.assert_array_equal(proven[1], [True, False, True] if a.ndim == 3 else True)
    out = LA.lstsq(ta, tb)
    assert out.residuals.shape == (0,) and out.singular_values.shape == (0,)
    want = np.linalg.pinv(ta.numpy().astype(np.complex128), rcond=max(shape[-2:]) * float(
        tgrad.finfo(dtype).eps)) @ tb.numpy()
    tol = 2e-4 if dt == "float32" else 1e-10
    np.testing.assert_allclose(out.solution.numpy(), want, rtol=tol, atol=tol)
    want_rank = np.linalg.matrix_rank(a, rtol=max(shape[-2:]) * float(tgrad.finfo(dtype).eps))
    np.testing.assert_array_equal(out.rank.numpy(), want_rank)
    if a.ndim == 3:
        svd_path = LA.lstsq(ta[1:2], tb[1:2], driver="gelss").solution  # (gelss: the SVD)
        assert svd_path.numpy().tobytes() == out.solution[1:2].numpy().tobytes()
    old = _host_lapack.LAPACK_ON_CPU
    try:
        _host_lapack.LAPACK_ON_CPU = False  # (the SVD path for every matrix)
        ref = LA.lstsq(ta, tb)
    finally:
        _host_lapack.LAPACK_ON_CPU = old
    np.testing.assert_array_equal(ref.rank.numpy(), out.rank.numpy())
    np.testing.assert_allclose(out.solution.numpy(), ref.solution.numpy(), rtol=tol, atol=tol)
    if dt != "float32":
        x = tgrad.tensor(a[:1] if a.ndim == 3 else a).to(dtype).requires_grad_(True)
        y = tgrad.tensor(b[:1] if b.ndim == 3 else b).to(dtype).requires_grad_(True)
        assert gradcheck(lambda p, q: LA.lstsq(p, q).solution, (x, y))
        assert gradgradcheck(lambda p, q: LA.lstsq(p, q).solution, (x, y))


def test_lstsq_gradcheck_and_errors():
    a, b = _leaf((4, 2)), _leaf((4, 2))
    for drv in ("gels", "gelsd"):
        assert gradcheck(lambda x, y, d=drv: LA.lstsq(x, y, driver=d).solution, (a, b))
    assert gradgradcheck(lambda x, y: LA.lstsq(x, y, driver="gels").solution, (a, b))
    with pytest.raises(RuntimeError, match="driver` should be one of"):
        LA.lstsq(a, b, driver="gelsx")
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.lstsq(a, b.float())
    with pytest.raises(RuntimeError, match=r"input.size\(-2\) should match other.size\(-2\)"):
        LA.lstsq(a, _leaf((3, 2)))


# ------------------------------------------------------------------------------ matrix_exp
def _expm_reference(a: np.ndarray) -> np.ndarray:
    """exp(a) by its Taylor series on a / 2^s (float64, 60 terms), then squaring."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300) / 0.25))))
    m = a / 2.0**s
    term, out = np.eye(len(a)), np.eye(len(a))
    for k in range(1, 60):
        term = term @ m / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def test_matrix_exp_matches_references():
    t = 0.7
    rot = LA.matrix_exp(_t([[0.0, -t], [t, 0.0]])).numpy()
    np.testing.assert_allclose(rot, [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], **TOL)
    nil = np.triu(RNG.standard_normal((3, 3)), 1)  # nilpotent: the series ends
    np.testing.assert_allclose(LA.matrix_exp(_t(nil)).numpy(),
                               np.eye(3) + nil + nil @ nil / 2, **TOL)
    s = _sym(4) * 5  # a large norm: several squarings
    w, v = np.linalg.eigh(s)
    want = (v * np.exp(w)) @ v.T
    np.testing.assert_allclose(LA.matrix_exp(_t(s)).numpy(), want, rtol=1e-11)
    batch = RNG.standard_normal((2, 3, 3)) * np.array([0.1, 4.0])[:, None, None]
    got = LA.matrix_exp(_t(batch)).numpy()  # one squaring count per matrix
    for g, a in zip(got, batch):
        np.testing.assert_allclose(g, _expm_reference(a), rtol=1e-12, atol=1e-12)
    assert LA.matrix_exp(_t(np.zeros((0, 0)))).shape == (0, 0)
    np.testing.assert_allclose(tgrad.matrix_exp(_t(np.zeros((2, 2)))).numpy(), np.eye(2))
    x = _leaf((3, 3))
    assert gradcheck(LA.matrix_exp, (x,))
    assert gradgradcheck(LA.matrix_exp, (x,))
    with pytest.raises(RuntimeError, match=r"shape \(\*, n, n\)"):
        LA.matrix_exp(_t(np.ones((2, 3))))


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128"])
def test_matrix_exp_host_steps_are_the_tgrad_ops_bits(dt, monkeypatch):
    """The CPU's Horner steps and squarings on the NumPy arrays (``_taylor_host``) give the
    tgrad-op loop's (cuda's) bits: values (squarings per matrix: 0 to several, NaN / inf
    matrices, odd sizes, a non-contiguous input) and the backward's (2n, 2n) exp."""
    from tgrad.linalg import _spectral
    dtype = getattr(tgrad, dt)
    scale = np.array([0.01, 0.4, 3.0, 40.0])[:, None, None]
    a = RNG.standard_normal((4, 5, 5)) * scale
    if dtype.is_complex:
        a = a + 1j * RNG.standard_normal((4, 5, 5)) * scale
    bad = a.copy()
    bad[1, 2, 3], bad[2, 0, 0] = np.nan, np.inf
    g = RNG.standard_normal((4, 5, 5))

    def run():
        out = []
        for arr in (a, bad, a.transpose(0, 2, 1)):  # (the last one non-contiguous)
            x = tgrad.tensor(np.ascontiguousarray(arr)).to(dtype)
            x = x.mT.contiguous().mT if arr is a else x
            out.append(LA.matrix_exp(x).numpy())
        x = tgrad.tensor(a).to(dtype).requires_grad_(True)
        (gx,) = tgrad.autograd.grad(LA.matrix_exp(x), x, tgrad.tensor(g).to(dtype))
        return out + [gx.numpy()]
    host = run()
    monkeypatch.setattr(_spectral, "host_loop", lambda *ts: False)
    for h, o in zip(host, run()):
        assert h.dtype == o.dtype and h.tobytes() == o.tobytes()
    assert np.isnan(host[1][1]).all() and np.isfinite(host[1][0]).all()


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_matrix_exp_of_halves_computes_in_float32(dt):
    """PyTorch computes matrix_exp for float16 / bfloat16 (tgrad raised): in float32, the
    result rounded once to the input's dtype; the gradient reaches the half input."""
    dtype = getattr(tgrad, dt)
    a = RNG.standard_normal((2, 3, 3)) * np.array([0.2, 2.0])[:, None, None]
    x = _t(a).to(dtype)
    exact = np.stack([_expm_reference(m) for m in x.double().numpy()])
    got = LA.matrix_exp(x)
    assert got.dtype is dtype
    want = _t(exact).float().to(dtype).double().numpy()  # the float32 result rounded once
    np.testing.assert_allclose(got.double().numpy(), want, rtol=1e-2 if dt == "bfloat16"
                               else 2e-3, atol=1e-3)
    leaf = x.detach().requires_grad_(True)
    tgrad.matrix_exp(leaf).diagonal(dim1=-2, dim2=-1).sum().backward()
    assert leaf.grad.dtype is dtype  # d tr exp(A) / dA = exp(A)^T
    np.testing.assert_allclose(leaf.grad.double().numpy(), np.swapaxes(exact, -1, -2),
                               rtol=2e-2, atol=2e-2)


# ------------------------------------------------------------- tensorinv, tensorsolve, vander
def test_tensorinv_tensorsolve():
    a = RNG.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(LA.tensorinv(_t(a), ind=2).numpy(),
                               np.linalg.tensorinv(a, ind=2), rtol=1e-10, atol=1e-10)
    a = RNG.standard_normal((2, 3, 6))
    b = RNG.standard_normal((2, 3))
    np.testing.assert_allclose(LA.tensorsolve(_t(a), _t(b)).numpy(),
                               np.linalg.tensorsolve(a, b), **TOL)
    a2 = RNG.standard_normal((6, 2, 3))
    np.testing.assert_allclose(LA.tensorsolve(_t(a2), _t(b), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(a2, b, axes=(0,)), **TOL)
    # PyTorch checks sizes only: A's leading dims (3, 2) need not be B's shape (2, 3); the
    # system is A reshaped to 6 x 6 (NumPy float64 on that reshape as the reference)
    a3 = RNG.standard_normal((3, 2, 6)) + 3 * np.eye(6).reshape(3, 2, 6)
    np.testing.assert_allclose(LA.tensorsolve(_t(a3), _t(b)).numpy(),
                               np.linalg.solve(a3.reshape(6, 6), b.reshape(6)), **TOL)
    with pytest.raises(RuntimeError, match="prod"):
        LA.tensorsolve(_t(np.ones((2, 3, 5))), _t(b))
    with pytest.raises(RuntimeError, match="prod"):
        LA.tensorinv(_t(np.ones((2, 3))), ind=1)
    x = _leaf((2, 2, 4))
    assert gradcheck(lambda m: LA.tensorinv(m, ind=2), (x,))


def test_linalg_vander():
    x = RNG.standard_normal((2, 4))
    x[0, 1] = 0.0
    got = LA.vander(_t(x), N=5).numpy()
    for g, row in zip(got, x):
        np.testing.assert_allclose(g, np.vander(row, 5, increasing=True), **TOL)
    assert LA.vander(tgrad.tensor([2, 3])).tolist() == [[1, 2], [1, 3]]
    xl = _t([0.0, 1.5, -2.0], requires_grad=True)
    assert gradcheck(lambda v: LA.vander(v, N=4), (xl,))
    assert gradgradcheck(lambda v: LA.vander(v, N=4), (xl,))
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        LA.vander(_t([1.0]), N=1)
    with pytest.raises(RuntimeError, match="got Bool"):
        LA.vander(tgrad.tensor([True]))


# ---------------------------------------------------------------- top-level torch names
def test_top_level_names_and_methods():
    a = RNG.standard_normal((4, 3))
    Q, R = tgrad.qr(_t(a))
    np.testing.assert_allclose(R.numpy(), np.linalg.qr(a)[1], **TOL)
    assert tgrad.qr(_t(a), some=False).Q.shape == (4, 4)
    assert _t(a).qr().R.shape == (3, 3)
    U, S, V = tgrad.svd(_t(a))
    assert U.shape == (4, 3) and V.shape == (3, 3)
    np.testing.assert_allclose((U * S) @ V.mT, a, **TOL)
    U, S, V = _t(a).svd(some=False)
    assert U.shape == (4, 4)
    U, S, V = tgrad.svd(_t(a), compute_uv=False)
    assert not U.numpy().any() and U.shape == (4, 4) and V.shape == (3, 3)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False), **TOL)
    np.testing.assert_allclose(tgrad.pinverse(_t(a)).numpy(), np.linalg.pinv(a), rtol=1e-10,
                               atol=1e-10)
    np.testing.assert_allclose(_t(a).pinverse().numpy(), np.linalg.pinv(a), rtol=1e-10,
                               atol=1e-10)
    spd = a.T @ a + np.eye(3)
    L = tgrad.cholesky(_t(spd))
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(spd), **TOL)
    np.testing.assert_allclose(tgrad.cholesky_inverse(L).numpy(), np.linalg.inv(spd), **TOL)
    np.testing.assert_allclose(L.mT.cholesky_inverse(upper=True).numpy(), np.linalg.inv(spd),
                               **TOL)
    np.testing.assert_allclose(_t(spd).cholesky(upper=True).numpy(),
                               np.linalg.cholesky(spd).T, **TOL)
    b = RNG.standard_normal((3, 2))
    np.testing.assert_allclose(_t(b).cholesky_solve(L).numpy(), np.linalg.solve(spd, b),
                               **TOL)
    sq = RNG.standard_normal((3, 3))
    LU, piv = tgrad.lu(_t(sq))
    LU2, piv2, info = _t(sq).lu(get_infos=True)
    assert info.item() == 0 and (piv2.numpy() == piv.numpy()).all()
    P, Lf, Uf = tgrad.lu_unpack(LU, piv)
    np.testing.assert_allclose((P @ Lf @ Uf).numpy(), sq, **TOL)
    np.testing.assert_allclose(tgrad.lu_solve(_t(b), LU, piv).numpy(), np.linalg.solve(sq, b),
                               **TOL)
    P2, L2, U2 = tgrad.lu_unpack(LU, piv, unpack_data=False)
    assert L2.shape == (0,) and U2.shape == (0,) and P2.shape == (3, 3)
    up = np.triu(sq) + 3 * np.eye(3)
    X, A_copy = tgrad.triangular_solve(_t(b), _t(up))
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(up, b), **TOL)
    np.testing.assert_allclose(A_copy.numpy(), up)
    Xt, _ = _t(b).triangular_solve(_t(up), transpose=True)
    np.testing.assert_allclose(Xt.numpy(), np.linalg.solve(up.T, b), **TOL)
    Xl, _ = tgrad.triangular_solve(_t(b), _t(up.T), upper=False, unitriangular=True)
    unit = np.tril(up.T, -1) + np.eye(3)
    np.testing.assert_allclose(Xl.numpy(), np.linalg.solve(unit, b), **TOL)


# ------------------------------------------------------- geqrf, householder_product, ormqr
@pytest.mark.parametrize("shape", [(5, 3), (3, 3), (3, 5), (1, 1), (6, 1)])
def test_geqrf_householder_product_ormqr_match_lapack(shape):
    a = RNG.standard_normal(shape)
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf (h transposed)
    A, T = tgrad.geqrf(_t(a))
    np.testing.assert_allclose(A.numpy(), h.T, **TOL)
    np.testing.assert_allclose(T.numpy(), tau, **TOL)
    if shape[0] >= shape[1]:
        np.testing.assert_allclose(LA.householder_product(A, T).numpy(), np.linalg.qr(a)[0],
                                   **TOL)
        np.testing.assert_allclose(A.orgqr(T).numpy(), np.linalg.qr(a)[0], **TOL)
        q = np.linalg.qr(a, mode="complete")[0]
        c = RNG.standard_normal((shape[0], 2))
        np.testing.assert_allclose(tgrad.ormqr(A, T, _t(c)).numpy(), q @ c, **TOL)
        np.testing.assert_allclose(tgrad.ormqr(A, T, _t(c), transpose=True).numpy(), q.T @ c,
                                   **TOL)
        np.testing.assert_allclose(tgrad.ormqr(A, T, _t(c.T), left=False).numpy(), c.T @ q,
                                   **TOL)


def test_householder_product_gradcheck_and_errors():
    a, tau = _leaf((4, 3)), _leaf((2,))
    assert gradcheck(LA.householder_product, (a, tau))
    assert gradgradcheck(LA.householder_product, (a, tau))
    A, T = tgrad.geqrf(_leaf((3, 3)))
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf' is not implemented"):
        A.sum().backward()
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal"):
        LA.householder_product(_t(np.ones((2, 3))), _t(np.ones(2)))
    with pytest.raises(RuntimeError, match=r"input.shape\[-1\] must be greater than or equal "
                                           r"to tau.shape\[-1\]"):
        LA.householder_product(_t(np.ones((3, 2))), _t(np.ones(3)))


def test_value_only_gradients_are_finite_at_repeated_and_zero_values():
    """eigvalsh / svdvals backwards use only dL and dS (PyTorch's): no 1/(L_j - L_i) or 1/S
    terms, so repeated eigenvalues and zero singular values give finite gradients."""
    x = tgrad.eye(3, dtype=tgrad.float64, requires_grad=True)
    LA.eigvalsh(x).sum().backward()  # d trace / dA = I
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3), **TOL)
    a = np.diag([2.0, 2.0, 0.0])[:, :2] @ np.eye(2)  # singular values 2, 2 (repeated)
    y = _t(np.vstack([a, np.zeros((1, 2))]), requires_grad=True)
    LA.svdvals(y).sum().backward()  # d nuclear norm: U V^T, here [[1, 0], [0, 1], 0, 0]
    np.testing.assert_allclose(y.grad.numpy(), np.vstack([np.eye(2), np.zeros((2, 2))]),
                               **TOL)
    z = _t(np.array([[1.0, 0.0], [0.0, 0.0]]), requires_grad=True)  # a zero singular value
    LA.svdvals(z)[0].backward()
    np.testing.assert_allclose(z.grad.numpy(), [[1.0, 0.0], [0.0, 0.0]], **TOL)


def test_pinv_gradient_at_repeated_singular_values():
    """pinv's own backward (PyTorch's pinv_backward) stays finite where the SVD's does not:
    d sum(A^+) / dA = -A^-T 1 1^T A^-T at the identity is all -1."""
    x = tgrad.eye(3, dtype=tgrad.float64, requires_grad=True)
    LA.pinv(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.ones((3, 3)), **TOL)
    h = tgrad.eye(3, dtype=tgrad.float64, requires_grad=True)
    LA.pinv(h, hermitian=True).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), -np.ones((3, 3)), **TOL)
    wide = _leaf((2, 4))
    assert gradcheck(lambda a: LA.pinv(a, hermitian=False), (wide,))


def test_norms_and_cond_of_empty_matrices():
    # PyTorch: the max-type norms of an empty matrix are 0, the min-type ones raise amin's
    # error (nothing to take a minimum over); cond of an empty matrix is 0
    x = tgrad.zeros(2, 0, 0, dtype=tgrad.float64)
    for o in (1, 2, math.inf, "fro", "nuc"):
        np.testing.assert_array_equal(LA.matrix_norm(x, o).numpy(), [0.0, 0.0])
    for o in (-1, -2, -math.inf):
        with pytest.raises(IndexError, match="amin"):  # PyTorch's type
            LA.matrix_norm(x, o)
    np.testing.assert_array_equal(LA.matrix_norm(tgrad.zeros(2, 3, 0), -math.inf).numpy(),
                                  [0.0, 0.0])
    for p in (None, 1, -1, 2, -2, math.inf, -math.inf, "fro", "nuc"):
        assert LA.cond(tgrad.zeros(0, 0)).item() == 0.0
        np.testing.assert_array_equal(LA.cond(tgrad.zeros(3, 0, 0), p).numpy(), [0.0] * 3)


def test_legacy_linalg_on_1d_and_empty_inputs():
    # torch.cholesky returns an empty input as an empty copy before any check (any shape)
    for x in (tgrad.zeros(0), tgrad.zeros(2, 0, 3), tgrad.zeros(0, dtype=tgrad.int64)):
        r = tgrad.cholesky(x)
        assert r.shape == x.shape and r.dtype is x.dtype
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        tgrad.cholesky(tgrad.ones(3))
    # 1-D inputs: PyTorch's errors (lu_factor read shape[-2]: IndexError; lu_unpack a
    # ValueError from its unpacking)
    with pytest.raises(RuntimeError, match=r"lu_factor: Expected tensor with 2 or more "
                                           r"dimensions. Got size: \[0\] instead"):
        LA.lu_factor(tgrad.zeros(0))
    with pytest.raises(RuntimeError, match=r"lu_unpack: Expected tensor with 2 or more "
                                           r"dimensions. Got size: \[0\] instead"):
        tgrad.lu_unpack(tgrad.zeros(0), tgrad.zeros(0, dtype=tgrad.int32))
    with pytest.raises(RuntimeError, match="cholesky_inverse: The input tensor A must have "
                                           "at least 2 dimensions."):
        tgrad.cholesky_inverse(tgrad.zeros(0))
    with pytest.raises(RuntimeError, match="they are 0 by 3 matrices"):
        tgrad.cholesky_inverse(tgrad.zeros(0, 3))
