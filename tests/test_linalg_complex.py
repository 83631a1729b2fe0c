# ruff: noqa: N806  (matrix notation: A, B, X)
"""tgrad.linalg with complex inputs (CPU): values against NumPy complex128 and gradients by
gradcheck / gradgradcheck in complex128 (PyTorch's convention: the gradient of a real loss
is dL/dRe + i dL/dIm), plus hand-computed gradients of holomorphic functions."""

from __future__ import annotations

import re

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
    # a real matrix with a complex right-hand side, converted by the caller (solve does
    # not promote, as PyTorch's): A's gradient is real
    R = _t(A_NP.real, True)
    assert gradcheck(lambda r, b: LA.solve(r.to(b.dtype), b), (R, B))


def test_solvers_refuse_mixed_dtypes():
    """PyTorch's solve / solve_ex / tensorsolve / lu_solve do not promote: a real A with a
    complex B (or float32 with float64) is an error."""
    R, B = _t(A_NP.real[0]), _t(B_NP[0])
    msg = ("linalg.solve: Expected A and B to have the same dtype, but found A of type "
           "Double and B of type ComplexDouble instead")
    for f in (lambda: LA.solve(R, B), lambda: LA.solve_ex(R, B),
              lambda: LA.tensorsolve(R, B[:, 0])):
        with pytest.raises(RuntimeError, match=msg):
            f()
    with pytest.raises(RuntimeError, match="found A of type ComplexDouble and B of type "
                                           "Double"):
        LA.solve(B[:, :1].expand(3, 3).contiguous(), R)
    with pytest.raises(RuntimeError, match="found A of type Float and B of type Double"):
        LA.solve(R.float(), R)
    LU, piv = LA.lu_factor(R)
    with pytest.raises(RuntimeError, match="linalg.lu_solve: Expected LU and B to have the "
                                           "same dtype, but found LU of type Double and B of "
                                           "type ComplexDouble instead"):
        LA.lu_solve(LU, piv, B)


def test_legacy_and_factor_solvers_refuse_mixed_dtypes():
    """PyTorch's cholesky_solve, triangular_solve and linalg.ldl_solve raise "Expected b and
    A to have the same dtype, but found b of type Float and A of type Double instead." (A
    the factor); linalg.lstsq its own text."""
    spd = A_NP.real[0] @ A_NP.real[0].T + np.eye(3)
    L = tgrad.linalg.cholesky(_t(spd))
    b = _t(B_NP.real[0])
    cases = [(lambda x, a: tgrad.cholesky_solve(x, a), "cholesky_solve"),
             (lambda x, a: tgrad.triangular_solve(x, a.mT), "triangular_solve"),
             (lambda x, a: LA.ldl_solve(*LA.ldl_factor(a @ a.mT), x), "linalg.ldl_solve")]
    for f, op in cases:
        for x, a, names in ((b.float(), L, ("Float", "Double")),
                            (b, L.float(), ("Double", "Float")),
                            (_t(B_NP[0]), L, ("ComplexDouble", "Double"))):
            msg = (f"{op}: Expected b and A to have the same dtype, but found b of type "
                   f"{names[0]} and A of type {names[1]} instead.")
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                f(x, a)
    # same dtypes still solve (float32 against NumPy)
    X = tgrad.cholesky_solve(b.float(), L.float())
    assert X.dtype is tgrad.float32
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(spd, B_NP.real[0]), rtol=1e-4,
                               atol=1e-5)
    with pytest.raises(RuntimeError, match=re.escape(
            "linalg.lstsq: Expected input and other to have the same dtype, but got input's "
            "dtype Double and other's dtype Float")):
        LA.lstsq(_t(spd), b.float())


def test_vecdot_conjugates_x():
    """PyTorch's linalg.vecdot: sum(conj(x) * y) along dim, as np.vdot per vector."""
    x, y = _cx(2, 3), _cx(2, 3)
    got = LA.vecdot(_t(x), _t(y)).numpy()
    np.testing.assert_allclose(got, [np.vdot(x[i], y[i]) for i in range(2)], **TOL)
    got = LA.vecdot(_t(x), _t(y), dim=0).numpy()
    np.testing.assert_allclose(got, [np.vdot(x[:, j], y[:, j]) for j in range(3)], **TOL)
    r = RNG.standard_normal(3)  # a real x in y's dtype: no conjugation, y broadcast
    np.testing.assert_allclose(LA.vecdot(_t(r + 0j), _t(y)).numpy(), y @ r, **TOL)
    with pytest.raises(RuntimeError, match="^linalg.vecdot: Expected x and y to have the "
                                           "same dtype, but found x of type Double and y "
                                           "of type ComplexDouble instead"):
        LA.vecdot(_t(r), _t(y))  # PyTorch does not promote
    assert gradcheck(LA.vecdot, (_t(x, True), _t(y, True)))


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


def test_cholesky_ignores_imaginary_diagonal():
    """As LAPACK's potrf (PyTorch's, NumPy's): A's diagonal is taken as real (a Hermitian
    matrix's is), so L's diagonal is real and positive; it was pivot / sqrt(Re pivot)."""
    noisy = PD_NP + np.diag([0.5j, -0.25j, 0.125j])
    ref = np.linalg.cholesky(PD_NP)
    for upper in (False, True):
        L = LA.cholesky_ex(_t(noisy), upper=upper).L.numpy()
        np.testing.assert_allclose(L, np.conj(np.swapaxes(ref, -1, -2)) if upper else ref,
                                   **TOL)


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


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 5, 2), (1, 1)])
def test_geqrf_values(shape):
    """LAPACK's zgeqrf: R on and above a's diagonal (real diagonal), the reflectors below
    it; Q = householder_product(a, tau) (H_j = I - tau_j v_j v_j^H) is unitary and Q R = A
    (NumPy complex128), and ormqr / orgqr apply the same Q."""
    a = _cx(*shape)
    A, T = tgrad.geqrf(_t(a))
    m, n = shape[-2:]
    k = min(m, n)
    assert A.dtype is C128 and T.dtype is C128
    assert A.shape == shape and T.shape == shape[:-2] + (k,)
    R = np.triu(A.numpy())[..., :k, :]
    assert not np.diagonal(R, axis1=-2, axis2=-1).imag.any()
    Q = LA.householder_product(A[..., :, :k], T).numpy()  # m x k
    np.testing.assert_allclose(Q @ R, a, **TOL)
    np.testing.assert_allclose(np.conj(np.swapaxes(Q, -1, -2)) @ Q,
                               np.broadcast_to(np.eye(k), Q.shape[:-2] + (k, k)), atol=1e-12)
    np.testing.assert_allclose(A[..., :, :k].orgqr(T).numpy(), Q, **TOL)
    c = _cx(*shape[:-2], m, 2)
    if m >= n:
        np.testing.assert_allclose(tgrad.ormqr(A, T, _t(c), transpose=True).numpy()[..., :k, :],
                                   np.conj(np.swapaxes(Q, -1, -2)) @ c, **TOL)
    # complex64: cgeqrf, to single precision
    A, T = tgrad.geqrf(_t(a.astype(np.complex64)))
    assert A.dtype is tgrad.complex64 and T.dtype is tgrad.complex64
    Q = LA.householder_product(A[..., :, :k], T).numpy()
    np.testing.assert_allclose(Q @ np.triu(A.numpy())[..., :k, :], a, atol=1e-5)


def test_geqrf_has_no_complex_derivative_as_pytorch():
    """PyTorch's complex geqrf refuses an input that requires grad, at the call."""
    z = _t(_cx(3, 2), grad=True)
    with pytest.raises(RuntimeError, match="geqrf does not support automatic differentiation "
                                           "for outputs with complex dtype"):
        tgrad.geqrf(z)
    with tgrad.no_grad():
        A, _ = tgrad.geqrf(z)
    assert not A.requires_grad
    A, _ = tgrad.geqrf(z.detach())
    assert not A.requires_grad


# ------------------------------------------------------------------------------- QR
@pytest.mark.parametrize("shape, mode", [((4, 3), "reduced"), ((4, 3), "complete"),
                                         ((3, 3), "reduced"), ((2, 4), "reduced"),
                                         ((2, 4), "complete"), ((2, 4, 3), "r")])
def test_qr_values(shape, mode):
    """Q R = A, Q^H Q = I, R upper triangular with a real diagonal (LAPACK's), and R as
    NumPy's complex128 QR up to nothing (both are geqrf)."""
    a = _cx(*shape)
    Q, R = LA.qr(_t(a), mode=mode)
    assert R.dtype is C128
    q, r = np.linalg.qr(a, "complete" if mode == "complete" else "reduced")
    np.testing.assert_allclose(R.numpy(), r, **TOL)
    assert np.all(np.tril(R.numpy(), -1) == 0)
    np.testing.assert_allclose(np.diagonal(R.numpy(), 0, -2, -1).imag, 0, atol=1e-14)
    if mode == "r":
        assert Q.shape == (0,)
        return
    assert Q.dtype is C128
    q_np = Q.numpy()
    np.testing.assert_allclose(q_np @ R.numpy(), a, **TOL)
    k = q_np.shape[-1]
    np.testing.assert_allclose(np.conj(np.swapaxes(q_np, -1, -2)) @ q_np, np.eye(k), **TOL)


def test_qr_gradients():
    """PyTorch's complex rule takes Re diag of the copyltu term (R's diagonal is real);
    gradcheck / gradgradcheck against finite differences in complex128."""
    for shape in ((4, 3), (3, 3), (2, 4)):
        A = _t(_cx(*shape), grad=True)
        assert gradcheck(lambda x: LA.qr(x), (A,))
        assert gradgradcheck(lambda x: LA.qr(x), (A,))
    A = _t(_cx(2, 3), grad=True)
    assert gradcheck(lambda x: LA.qr(x, mode="complete"), (A,))
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed"):
        LA.qr(_t(_cx(3, 3), grad=True), mode="r").R.abs().sum().backward()


# --------------------------------------------------------------------- lstsq, cond, expm
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_values_and_gradients(driver):
    """PyTorch's CPU takes every driver for complex; residuals and singular values are
    real. Against NumPy's complex128 lstsq (and A^H (A X - B) = 0)."""
    a, b = _cx(4, 3), _cx(4, 2)
    r = LA.lstsq(_t(a), _t(b), driver=driver)
    x, res, rank, sv = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(r.solution.numpy(), x, **TOL)
    np.testing.assert_allclose(np.conj(a.T) @ (a @ r.solution.numpy() - b), 0, atol=1e-12)
    if driver == "gelsy":
        assert r.residuals.shape == (0,) and r.residuals.dtype is tgrad.float64
    else:
        assert r.residuals.dtype is tgrad.float64
        np.testing.assert_allclose(r.residuals.numpy(), res, **TOL)
    if driver in ("gelsd", "gelss"):
        assert r.singular_values.dtype is tgrad.float64
        np.testing.assert_allclose(r.singular_values.numpy(), sv, **TOL)
    if driver != "gels":
        assert r.rank.item() == rank
    wide_a, wide_b = _cx(2, 4), _cx(2, 1)  # the minimum-norm solution
    np.testing.assert_allclose(LA.lstsq(_t(wide_a), _t(wide_b), driver=driver).solution.numpy(),
                               np.linalg.lstsq(wide_a, wide_b, rcond=None)[0], **TOL)
    A, B = _t(a, grad=True), _t(b, grad=True)
    assert gradcheck(lambda p, q: LA.lstsq(p, q, driver=driver).solution, (A, B))
    W, V = _t(_cx(2, 4), grad=True), _t(_cx(2, 2), grad=True)
    assert gradcheck(lambda p, q: LA.lstsq(p, q, driver=driver).solution, (W, V))
    if driver == "gels":
        assert gradcheck(lambda p, q: LA.lstsq(p, q, driver=driver).residuals, (A, B))
        assert gradgradcheck(lambda p, q: LA.lstsq(p, q, driver=driver).solution, (A, B))


def test_cond_values_and_gradients():
    a = _cx(2, 3, 3)
    A = _t(a)
    s = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(LA.cond(A).numpy(), s[..., 0] / s[..., -1], **TOL)
    np.testing.assert_allclose(LA.cond(A, -2).numpy(), s[..., -1] / s[..., 0], **TOL)
    for p in ("fro", "nuc", 1, -1, np.inf, -np.inf):
        got = LA.cond(A, p)
        assert got.dtype is tgrad.float64
        want = [np.linalg.norm(m, p) * np.linalg.norm(np.linalg.inv(m), p) for m in a]
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-11)
    assert LA.cond(tgrad.zeros(2, 2, dtype=tgrad.complex64), 1).item() == np.inf
    assert LA.cond(tgrad.zeros(0, 0, dtype=tgrad.complex64)).dtype is tgrad.float32
    G = _t(a[0], grad=True)
    for p in (None, "fro", "nuc", 1):
        assert gradcheck(lambda x, p=p: LA.cond(x, p), (G,))
    assert gradgradcheck(lambda x: LA.cond(x, "fro"), (G,))


def _expm_reference(a):
    """exp(a) by scaling and squaring of a Taylor series in complex128 (30 terms)."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300) / 0.25))))
    m = a / 2 ** s
    out, term = np.eye(len(a), dtype=complex), np.eye(len(a), dtype=complex)
    for k in range(1, 30):
        term = term @ m / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def test_matrix_exp_values_and_gradients():
    a = _cx(2, 3, 3)
    a[1] *= 4  # some squarings
    got = LA.matrix_exp(_t(a))
    assert got.dtype is C128
    np.testing.assert_allclose(got.numpy(), [_expm_reference(m) for m in a], rtol=1e-12,
                               atol=1e-12 * np.abs(got.numpy()).max())
    # a diagonalisable identity: exp(V D V^-1) = V exp(D) V^-1
    L, V = np.linalg.eig(a[0])
    np.testing.assert_allclose(got.numpy()[0], V @ np.diag(np.exp(L)) @ np.linalg.inv(V),
                               rtol=1e-11, atol=1e-12)
    # d/dt tr exp(t A)|_{t=1} = tr(A exp(A)) (holomorphic: the gradient of Re tr exp(A) is
    # conj(exp(A))^T = exp(A)^H)
    A = _t(a[0], grad=True)
    LA.matrix_exp(A).diagonal().sum().real.backward()
    np.testing.assert_allclose(A.grad.numpy(), np.conj(_expm_reference(a[0])).T, **TOL)
    A = _t(_cx(3, 3) * 0.5, grad=True)
    assert gradcheck(LA.matrix_exp, (A,))
    assert gradgradcheck(LA.matrix_exp, (A,))


def test_householder_product_values_and_gradients():
    """LAPACK's ungqr: H_i = I - tau_i v_i v_i^H; the product of NumPy's geqrf reflectors
    (np.linalg.qr 'raw') is its Q; ormqr with transpose applies Q^H."""
    a = _cx(4, 3)
    h, tau = np.linalg.qr(a, "raw")
    packed = np.ascontiguousarray(h.T)
    Q = LA.householder_product(_t(packed), _t(tau))
    assert Q.dtype is C128
    np.testing.assert_allclose(Q.numpy(), np.linalg.qr(a)[0], **TOL)
    # by hand for one reflector: I - tau v v^H
    v = np.concatenate([[1.0], packed[1:, 0]])
    want = (np.eye(4) - tau[0] * np.outer(v, np.conj(v)))[:, :3]
    np.testing.assert_allclose(LA.householder_product(_t(packed), _t(tau[:1])).numpy(), want,
                               **TOL)
    c = _cx(3, 2)
    full = np.eye(3) - tau[0] * np.outer(v[:3], np.conj(v[:3]))
    # (one reflector: a one-column input, as PyTorch's ormqr wants tau of min(m, n))
    got = tgrad.ormqr(_t(packed[:3, :1].copy()), _t(tau[:1]), _t(c), transpose=True)
    np.testing.assert_allclose(got.numpy(), np.conj(full).T @ c, **TOL)
    A, T = _t(_cx(4, 3), grad=True), _t(_cx(2) * 0.5, grad=True)
    assert gradcheck(LA.householder_product, (A, T))
    assert gradgradcheck(LA.householder_product, (A, T))


def test_lu_factor_lu_lu_solve():
    """P L U = A with LAPACK's pivots (zgetrf's izamax: the largest |Re| + |Im| at or below
    the diagonal, checked by hand on a matrix where that differs from the largest |.|);
    lu_solve against NumPy's solve; gradients by gradcheck / gradgradcheck."""
    a = _cx(2, 4, 4)
    LU, piv = LA.lu_factor(_t(a))
    assert LU.dtype is C128 and piv.dtype is tgrad.int32
    P, L, U = LA.lu(_t(a))
    np.testing.assert_allclose((P @ L @ U).numpy(), a, **TOL)
    assert np.all(np.abs(np.tril(L.numpy(), -1)) <= 1 + 1e-12)
    # column 0: |3+3j| = 4.24 < 4.5 but |Re| + |Im| is 6 > 4.5: row 1 is the pivot
    m = np.array([[4.5, 1.0], [3 + 3j, 2.0]])
    assert LA.lu_factor(_t(m)).pivots.tolist() == [2, 2]
    rect = _cx(3, 5)
    P, L, U = LA.lu(_t(rect))
    np.testing.assert_allclose((P @ L @ U).numpy(), rect, **TOL)
    b = _cx(2, 4, 2)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(b)).numpy(), np.linalg.solve(a, b),
                               **TOL)
    ah = np.conj(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(b), adjoint=True).numpy(),
                               np.linalg.solve(ah, b), **TOL)
    bt = np.swapaxes(b, -1, -2)
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(bt), left=False).numpy(),
                               bt @ np.linalg.inv(a), **TOL)
    A = _t(_cx(3, 3) + 2 * np.eye(3), grad=True)
    assert gradcheck(lambda x: LA.lu_factor(x).LU, (A,))
    assert gradgradcheck(lambda x: LA.lu_factor(x).LU, (A,))
    assert gradcheck(lambda x: LA.lu(x)[1:], (A,))
    B = _t(_cx(3, 2), grad=True)
    assert gradcheck(lambda x, y: LA.lu_solve(*LA.lu_factor(x), y, adjoint=True), (A, B))


def test_eigh_vectors_only_gradient_keeps_the_phase_diagonal():
    """With no eigenvalue gradient, PyTorch's eigh backward keeps i Im diag(V^H gV) on the
    inner matrix's diagonal. For the loss sum_j c_j Im(V0_j^H V_j) (gV = i V0 diag(c) at
    V = V0, Im diag(V^H gV) = c, below the 1e-2 phase check) the inner matrix is exactly
    i diag(c): gA = i V diag(c) V^H, independent of the eigenvectors' phases, by hand from
    NumPy's eigh; with an eigenvalue gradient the diagonal is gL's alone."""
    h = H_NP[0]
    _, v = np.linalg.eigh(h)
    c = np.array([4e-3, -3e-3, 5e-3])
    want = 1j * (v * c) @ v.conj().T
    A = _t(h, True)
    L, V = LA.eigh(A)
    V0 = tgrad.tensor(V.detach().numpy().conj())
    ((V * V0).sum(0).imag * tgrad.tensor(c)).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), want, atol=1e-12)
    A = _t(h, True)
    L, V = LA.eigh(A)
    (((V * V0).sum(0).imag * tgrad.tensor(c)).sum() + L.sum()).backward()
    np.testing.assert_allclose(A.grad.numpy(), np.eye(3), atol=1e-12)  # d tr(A) = I


def test_empty_complex_matrices_give_real_spectra():
    # singular values and Hermitian eigenvalues are real, also with no matrix entries: for
    # (0, 0) and (2, 0, 0) svdvals came out complex128, and a (0, 3, 3) batch (or
    # matrix_rank / pinv / eigh / lstsq of any of them) raised "complex numbers have no order"
    for shape in ((0, 0), (2, 0, 0), (0, 3, 3), (0, 2, 3)):
        a = tgrad.zeros(shape, dtype=tgrad.complex128)
        k = min(shape[-2:])
        s = LA.svdvals(a)
        assert s.dtype is tgrad.float64 and tuple(s.shape) == shape[:-2] + (k,)
        U, S, Vh = LA.svd(a, full_matrices=False)
        assert S.dtype is tgrad.float64 and U.dtype is tgrad.complex128
        assert tuple(U.shape) == shape[:-1] + (k,) and tuple(Vh.shape) == shape[:-2] + (
            k, shape[-1])
        rank = LA.matrix_rank(a)
        assert rank.dtype is tgrad.int64 and tuple(rank.shape) == shape[:-2]
        assert (rank == 0).all().item()
        p = LA.pinv(a)
        assert p.dtype is tgrad.complex128 and tuple(p.shape) == shape[:-2] + shape[-2:][::-1]
        assert LA.matrix_norm(a, "nuc").dtype is tgrad.float64
        if shape[-1] == shape[-2]:
            L, V = LA.eigh(a)
            assert L.dtype is tgrad.float64 and tuple(L.shape) == shape[:-1]
            assert V.dtype is tgrad.complex128 and tuple(V.shape) == shape
            assert LA.eigvalsh(a).dtype is tgrad.float64
