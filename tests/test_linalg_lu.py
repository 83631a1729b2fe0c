# ruff: noqa: N806  (matrix notation: LU, P, L, U)
"""tgrad.linalg's LU-based ops: solve / solve_ex, inv / inv_ex, det, slogdet, and
tgrad.inverse / det / logdet / slogdet with the Tensor methods. Values against NumPy
float64 (np.linalg.solve, inv, det, slogdet) to 1e-12, float32 within PyTorch's default
tolerances; gradcheck and gradgradcheck in float64 (every argument, vector and left=False
forms, batches); matrices that need row pivoting, singular ones (info, PyTorch's errors),
n = 0, 1, 17, broadcast batch dims, non-contiguous inputs."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64
RNG = np.random.default_rng(11)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _mat(n, batch=()):
    """Random matrices, conditioned well enough for 1e-12 comparisons."""
    return RNG.standard_normal(batch + (n, n)) + 2 * np.sqrt(n) * np.eye(n) * \
        RNG.choice([-1, 1], batch + (1, 1))


# A zero leading pivot and a tiny one: wrong without row exchanges
PIVOTING = [np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]]),
            np.array([[1e-20, 1.0], [1.0, 1.0]])]


# ---- solve -------------------------------------------------------------------------------
@pytest.mark.parametrize("n,batch", [(1, ()), (4, ()), (3, (2, 2)), (17, ())])
def test_solve_matches_numpy(n, batch):
    a, b = _mat(n, batch), RNG.standard_normal(batch + (n, 3))
    np.testing.assert_allclose(LA.solve(_t(a), _t(b)).numpy(), np.linalg.solve(a, b),
                               rtol=1e-12, atol=1e-12)
    x = LA.solve(_t(a), _t(b), left=False if n == 3 else True) if n == 3 else None
    if x is not None:  # X A = B with B (.., 3, n): X = B A^{-1}
        bt = RNG.standard_normal(batch + (5, n))
        np.testing.assert_allclose(LA.solve(_t(a), _t(bt), left=False).numpy(),
                                   bt @ np.linalg.inv(a), rtol=1e-12, atol=1e-12)
    res = LA.solve_ex(_t(a), _t(b))
    assert res.info.dtype is tgrad.int32 and res.info.shape == batch
    assert not res.info.numpy().any()


def test_solve_pivots_vectors_broadcasts_and_views():
    for a in PIVOTING:
        b = RNG.standard_normal(a.shape[0])
        np.testing.assert_allclose(LA.solve(_t(a), _t(b)).numpy(), np.linalg.solve(a, b),
                                   rtol=1e-12, atol=1e-12)
    a = _mat(4, (2, 1))
    b = RNG.standard_normal((3, 4, 2))
    out = LA.solve(_t(a), _t(b))  # batch dims broadcast: (2, 1) with (3,)
    assert out.shape == (2, 3, 4, 2)
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
    a2 = _mat(4, (3,))
    v = RNG.standard_normal((3, 4))  # A's shape minus the last dim: a batch of vectors
    out = LA.solve(_t(a2), _t(v))
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a2, v[..., None])[..., 0],
                               rtol=1e-12, atol=1e-12)
    at, bt = _t(_mat(5)).mT, _t(RNG.standard_normal((2, 5))).mT
    assert not at.is_contiguous() and not bt.is_contiguous()
    np.testing.assert_allclose(LA.solve(at, bt).numpy(),
                               np.linalg.solve(at.numpy(), bt.numpy()), rtol=1e-12, atol=1e-12)
    empty = LA.solve(_t(np.zeros((0, 0))), _t(np.zeros((0, 2))))
    assert empty.shape == (0, 2)
    assert LA.solve(_t(np.zeros((0, 3, 3))), _t(np.zeros((0, 3, 1)))).shape == (0, 3, 1)


def test_solve_float32_within_pytorch_tolerance():
    a, b = _mat(6, (2,)), RNG.standard_normal((2, 6, 3))
    out = LA.solve(tgrad.tensor(a.astype(np.float32)), tgrad.tensor(b.astype(np.float32)))
    assert out.dtype is tgrad.float32
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a.astype(np.float32).astype(
        np.float64), b.astype(np.float32).astype(np.float64)), rtol=1.3e-6, atol=1e-5)
    with pytest.raises(RuntimeError, match="linalg.solve: Expected A and B to have the same "
                                           "dtype, but found A of type Float and B of type "
                                           "Double instead"):  # no promotion, as PyTorch
        LA.solve(tgrad.tensor(a.astype(np.float32)), _t(b))


def test_solve_gradcheck_and_gradgradcheck():
    a = _t(_mat(3, (2,)), requires_grad=True)
    b = _t(RNG.standard_normal((2, 3, 2)), requires_grad=True)
    v = _t(RNG.standard_normal(3), requires_grad=True)
    bl = _t(RNG.standard_normal((4, 3)), requires_grad=True)
    for fn, args in ((LA.solve, (a, b)), (LA.solve, (a, v)),
                     (lambda x, y: LA.solve(x, y, left=False), (a[0], bl)),
                     (LA.solve, (_t(PIVOTING[0], requires_grad=True), b[0]))):
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)
    assert gradcheck(LA.solve, (_t(_mat(17), requires_grad=True),
                                _t(RNG.standard_normal(17), requires_grad=True)))


def test_solve_singular_and_errors():
    s = [[1.0, 2.0], [2.0, 4.0]]
    with pytest.raises(RuntimeError, match=r"^torch\.linalg\.solve: The solver failed because "
                                           r"the input matrix is singular\.$"):
        LA.solve(_t(s), _t([1.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"^torch\.linalg\.solve: \(Batch element 1\): The "
                                           r"solver failed because the input matrix is "
                                           r"singular\.$"):
        LA.solve(_t([np.eye(2), s]), _t(np.ones((2, 2, 1))))
    assert LA.solve_ex(_t([np.eye(2), s, np.zeros((2, 2))]),
                       _t(np.ones((3, 2)))).info.tolist() == [0, 2, 1]
    with pytest.raises(RuntimeError, match=r"^linalg\.solve: Incompatible shapes of A and B "
                                           r"for the equation AX = B \(3x3 and 4x2\)$"):
        LA.solve(_t(np.eye(3)), _t(np.ones((4, 2))))
    with pytest.raises(RuntimeError, match=r"^linalg\.solve: A must be batches of square "
                                           r"matrices, but they are 2 by 3 matrices$"):
        LA.solve(_t(np.ones((2, 3))), _t(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match=r"^linalg\.solve: Expected a floating point or "
                                           r"complex tensor as input\. Got Long$"):
        LA.solve(tgrad.ones(2, 2, dtype=tgrad.int64), tgrad.ones(2, 1, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"^linalg\.solve: Low precision dtypes not "
                                           r"supported\. Got Half"):
        LA.solve(tgrad.eye(2, dtype=tgrad.float16), tgrad.ones(2, 1, dtype=tgrad.float16))
    with pytest.raises(RuntimeError, match=r"Vector broadcasting of the left hand side is not "
                                           r"supported for left=False"):
        LA.solve(_t(np.eye(2)), _t([1.0, 2.0]), left=False)
    with pytest.raises(TypeError, match=r"linalg\.solve\(\): argument 'B' \(position 2\) must "
                                        r"be Tensor, not list"):
        LA.solve(_t(np.eye(2)), [1.0, 2.0])


# ---- inv ---------------------------------------------------------------------------------
@pytest.mark.parametrize("n,batch", [(0, ()), (1, ()), (4, (3,)), (17, ())])
def test_inv_matches_numpy(n, batch):
    a = _mat(n, batch)
    want = np.linalg.inv(a) if n else np.zeros(batch + (0, 0))
    for out in (LA.inv(_t(a)), tgrad.inverse(_t(a)), _t(a).inverse(), LA.inv_ex(_t(a))[0]):
        assert out.shape == a.shape
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    for a in PIVOTING:
        np.testing.assert_allclose(LA.inv(_t(a)).numpy(), np.linalg.inv(a), rtol=1e-12,
                                   atol=1e-12)


def test_inv_gradcheck_gradgradcheck_and_errors():
    a = _t(_mat(3, (2,)), requires_grad=True)
    assert gradcheck(LA.inv, (a,)) and gradgradcheck(LA.inv, (a,))
    assert gradcheck(LA.inv, (_t(_mat(1), requires_grad=True),))
    x = _t(_mat(4), requires_grad=True)
    g = RNG.standard_normal((4, 4))
    LA.inv(x).backward(_t(g))
    ai = np.linalg.inv(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), -ai.T @ g @ ai.T, rtol=1e-12, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"^linalg\.inv: \(Batch element 0\): The diagonal "
                                           r"element 2 is zero, the inversion could not be "
                                           r"completed because the input matrix is "
                                           r"singular\.$"):
        LA.inv(_t([[[1.0, 2.0], [2.0, 4.0]]]))
    assert LA.inv_ex(_t([[0.0, 0.0], [0.0, 1.0]])).info.item() == 1
    with pytest.raises(RuntimeError, match=r"^linalg\.inv: The input tensor A must have at "
                                           r"least 2 dimensions\.$"):
        LA.inv(_t([1.0, 2.0]))


# ---- det, slogdet, logdet ----------------------------------------------------------------
def _det_cases():
    yield _mat(1)
    yield _mat(4, (3,))
    yield _mat(17)
    yield from PIVOTING
    yield np.array([[1.0, 2.0], [2.0, 4.0]])  # singular
    yield np.zeros((3, 3))
    yield np.zeros((2, 0, 0))  # det of a 0 x 0 matrix is 1


def test_det_slogdet_logdet_match_numpy():
    for a in _det_cases():
        want = np.linalg.det(a) if a.shape[-1] else np.ones(a.shape[:-2])
        for out in (LA.det(_t(a)), tgrad.det(_t(a)), _t(a).det()):
            assert out.shape == a.shape[:-2]
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
        sign, logabs = np.linalg.slogdet(a) if a.shape[-1] else (want, 0 * want)
        for res in (LA.slogdet(_t(a)), tgrad.slogdet(_t(a)), _t(a).slogdet()):
            np.testing.assert_array_equal(res.sign.numpy(), sign)
            np.testing.assert_allclose(res.logabsdet.numpy(), logabs, rtol=1e-12, atol=1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            want_log = np.log(want)  # NaN for det < 0, -inf for det == 0
        for out in (tgrad.logdet(_t(a)), _t(a).logdet()):
            np.testing.assert_allclose(out.numpy(), want_log, rtol=1e-12, atol=1e-12)
    a32 = _mat(5, (2,)).astype(np.float32)
    np.testing.assert_allclose(LA.det(tgrad.tensor(a32)).numpy(),
                               np.linalg.det(a32.astype(np.float64)), rtol=1.3e-6, atol=1e-5)


def test_det_slogdet_logdet_gradients():
    a = _t(_mat(3, (2,)), requires_grad=True)
    m = _mat(3)
    spd = m @ m.T + np.eye(3)  # symmetric positive definite: logdet finite
    for fn, x in ((LA.det, a), (lambda m: LA.slogdet(m).logabsdet, a),
                  (tgrad.logdet, _t(spd, requires_grad=True)),
                  (LA.det, _t(PIVOTING[0], requires_grad=True))):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))
    x = _t(_mat(4), requires_grad=True)
    LA.det(x).backward()
    xn = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.linalg.det(xn) * np.linalg.inv(xn).T,
                               rtol=1e-12, atol=1e-12)
    # a real sign is in the graph (PyTorch's: requires_grad, a grad_fn) with no gradient:
    # a loss of the sign alone leaves x.grad None; with logabs only logabs contributes
    sign, logabs = LA.slogdet(x)
    assert sign.requires_grad and logabs.requires_grad
    x.grad = None
    sign.sum().backward()
    assert x.grad is None
    sign, logabs = LA.slogdet(x)
    (sign * logabs).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.sign(np.linalg.det(xn)) * np.linalg.inv(xn).T,
                               rtol=1e-12, atol=1e-12)


def _cofactors(a: np.ndarray) -> np.ndarray:
    """C_ij = (-1)^(i+j) det(a without row i and column j) (NumPy float64)."""
    n = a.shape[-1]
    out = np.empty_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            out[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix():
    rng = np.random.default_rng(3)
    low_rank = rng.standard_normal((2, 5, 3)) @ rng.standard_normal((2, 3, 5))  # rank 3
    cases = [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 1.0, 1.0]]),  # rank 2
             np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [3.0, 6.0, 9.0]]),  # rank 1
             np.zeros((2, 2)), low_rank,
             np.stack([_mat(3), np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])])]  # mixed
    for a in cases:
        x = _t(a, requires_grad=True)
        LA.det(x).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), _cofactors(a), rtol=1e-10, atol=1e-12)
        assert gradcheck(LA.det, (_t(a, requires_grad=True),))



def test_det_gradient_of_complex_singular_matrices():
    # the singular branch built diag(1..n) with arange in the complex dtype, which raised
    # ("arange_cpu" not implemented for 'ComplexDouble'); d det / dA = C (the cofactors),
    # so A.grad = conj(C) for a grad_output of 1 (PyTorch's convention)
    for a in (np.array([[1.0, 2.0], [2.0, 4.0]]) * (1 + 0.5j),
              np.stack([np.eye(3), np.arange(1.0, 10.0).reshape(3, 3)]) * (1 - 1j)):
        x = tgrad.tensor(a, dtype=tgrad.complex128, requires_grad=True)
        LA.det(x).sum().backward(tgrad.ones((), dtype=tgrad.complex128))
        np.testing.assert_allclose(x.grad.numpy(), np.conj(_cofactors(a)), atol=1e-12)


@pytest.mark.parametrize("eps", [1e-8, 1e-12, 1e-14])
def test_det_gradient_near_a_singular_matrix_keeps_full_precision(eps):
    # The cofactors are read from the forward's LU factors, as PyTorch's: det's small pivot
    # cancels the same pivot of A^{-H} (a second factorisation of A^H lost 1e-4 relative at
    # eps 1e-12). The reference: cofactors from 2x2 minors (well conditioned), NumPy float64.
    a = np.arange(1.0, 10.0).reshape(3, 3) + eps * np.diag([1.0, 2.0, 3.0])
    x = _t(a, requires_grad=True)
    LA.det(x).backward()
    want = _cofactors(a)
    assert np.abs(x.grad.numpy() - want).max() <= 1e-14 * np.abs(want).max()

def test_det_hessian_at_singular_matrices():
    """The create_graph backward of det at a singular A (the SVD branch) was NaN: where's
    zero gradient to the inverse branch met the solve of the singular A (0 * inf). The
    reference: the gradient of sum(W * cof(A)), cof's entries quadratic in A, so central
    differences with step 1 are exact (NumPy float64); PyTorch is finite there too. (No
    gradgradcheck here: finite differences of det's gradient at the nearly singular
    neighbours lose ~1e-4.)"""
    rng = np.random.default_rng(3)
    mixed = np.stack([_mat(3), np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]])])
    for a in (np.array([[1.0, 2, 3], [2, 4, 6], [3, 6, 9]]),  # rank 1
              np.array([[1.0, 2, 3], [2, 4, 6], [1, 0, 1]]),  # rank 2
              np.diag([1.0, 0.0, 2.0]), mixed):  # mixed: the regular one keeps A^-1's
        w = rng.uniform(0.5, 1.5, a.shape)
        want = np.zeros(a.shape)
        for i in range(3):
            for j in range(3):
                e = np.zeros(a.shape)
                e[..., i, j] = 1.0
                want[..., i, j] = (w * (_cofactors(a + e) - _cofactors(a - e))).sum((-2, -1)) / 2
        x = _t(a, requires_grad=True)
        g, = tgrad.autograd.grad(LA.det(x).sum(), x, create_graph=True)
        h, = tgrad.autograd.grad((g * _t(w)).sum(), x)
        np.testing.assert_allclose(h.numpy(), want, rtol=1e-12, atol=1e-13)


def test_det_errors():
    with pytest.raises(RuntimeError, match=r"^linalg\.det: A must be batches of square "
                                           r"matrices, but they are 2 by 3 matrices$"):
        LA.det(_t(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match=r"^linalg\.slogdet: Expected a floating point or "
                                           r"complex tensor as input\. Got Long$"):
        LA.slogdet(tgrad.ones(2, 2, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"^logdet: Low precision dtypes not supported\. "
                                           r"Got BFloat16"):
        tgrad.logdet(tgrad.eye(2, dtype=tgrad.bfloat16))


# ---- matrix_power ------------------------------------------------------------------------
def test_matrix_power_matches_numpy_and_gradients():
    a = _mat(3, (2,)) / 3
    for n in (0, 1, 2, 5, 8, -1, -3):
        want = np.linalg.matrix_power(a, n)
        for out in (LA.matrix_power(_t(a), n), tgrad.matrix_power(_t(a), n),
                    _t(a).matrix_power(n)):
            assert out.shape == a.shape
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    ints = np.array([[1, 2], [3, 4]])
    out = LA.matrix_power(tgrad.tensor(ints), 3)
    assert out.dtype is tgrad.int64 and out.tolist() == np.linalg.matrix_power(ints, 3).tolist()
    x = _t(a, requires_grad=True)
    for n in (0, 3, -2):
        assert gradcheck(lambda m, n=n: LA.matrix_power(m, n), (x,))
        assert gradgradcheck(lambda m, n=n: LA.matrix_power(m, n), (x,))
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_power: Expected a floating point "
                                           r"or complex tensor as input\. Got Long$"):
        LA.matrix_power(tgrad.tensor(ints), -1)
    with pytest.raises(TypeError, match=r"argument 'n' must be int, not float"):
        LA.matrix_power(_t(a), 1.5)
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_power: A must be batches of "
                                           r"square matrices, but they are 2 by 3 matrices$"):
        LA.matrix_power(_t(np.ones((2, 3))), 2)


# ---- lu_factor / lu / lu_solve -----------------------------------------------------------
def _np_getrf(a):
    """LAPACK's getrf in plain NumPy loops (one matrix): packed LU, 1-based pivots."""
    lu = a.astype(np.float64).copy()
    m, n = lu.shape
    piv = []
    for k in range(min(m, n)):
        p = k + int(np.argmax(np.abs(lu[k:, k])))
        piv.append(p + 1)
        lu[[k, p]] = lu[[p, k]]
        if lu[k, k] != 0:
            lu[k + 1:, k] /= lu[k, k]
            lu[k + 1:, k + 1:] -= np.outer(lu[k + 1:, k], lu[k, k + 1:])
    return lu, np.array(piv, dtype=np.int32)


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 5), (6, 3), (3, 6), (1, 1), (17, 17)])
def test_lu_factor_and_lu_match_getrf(shape):
    a = RNG.standard_normal(shape)
    LU, piv = LA.lu_factor(_t(a)) if shape[-1] == shape[-2] else LA.lu_factor_ex(_t(a))[:2]
    flat = a.reshape(-1, *shape[-2:])
    for i, m in enumerate(flat):
        want_lu, want_piv = _np_getrf(m)
        np.testing.assert_allclose(LU.numpy().reshape(flat.shape[0], *LU.shape[-2:])[i],
                                   want_lu, rtol=1e-12, atol=1e-12)
        assert piv.numpy().reshape(flat.shape[0], -1)[i].tolist() == want_piv.tolist()
    assert piv.dtype is tgrad.int32
    P, L, U = LA.lu(_t(a))
    k = min(shape[-2:])
    assert P.shape == shape[:-2] + (shape[-2], shape[-2]) and L.shape[-1] == U.shape[-2] == k
    np.testing.assert_allclose((P @ L @ U).numpy(), a, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.triu(L.numpy()[..., :k, :], 1), 0)
    np.testing.assert_array_equal(np.diagonal(L.numpy(), axis1=-2, axis2=-1), 1)
    np.testing.assert_array_equal(np.tril(U.numpy(), -1), 0)
    p = P.numpy()
    assert set(np.unique(p)) <= {0.0, 1.0} and (p.sum(-1) == 1).all() and (p.sum(-2) == 1).all()


def test_lu_solve_forms_and_gradients():
    a, b = _mat(4, (2,)), RNG.standard_normal((2, 4, 3))
    LU, piv = LA.lu_factor(_t(a))
    for kw, want in (({}, np.linalg.solve(a, b)),
                     ({"adjoint": True}, np.linalg.solve(np.swapaxes(a, -1, -2), b))):
        np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(b), **kw).numpy(), want,
                                   rtol=1e-12, atol=1e-12)
    bt = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(LA.lu_solve(LU, piv, _t(bt), left=False).numpy(),
                               bt @ np.linalg.inv(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(  # batch dims broadcast: one factorisation, 3 right sides
        LA.lu_solve(LU[0], piv[0], _t(RNG.standard_normal((3, 4, 2)))).shape, (3, 4, 2))
    x = _t(a[0], requires_grad=True)
    y = _t(b[0], requires_grad=True)
    for fn, args in ((lambda m: LA.lu_factor(m).LU, (x,)), (lambda m: LA.lu(m).L, (x,)),
                     (lambda m: LA.lu(m).U, (x,)),
                     (lambda m, r: LA.lu_solve(*LA.lu_factor(m), r), (x, y)),
                     (lambda m, r: LA.lu_solve(*LA.lu_factor(m), r, adjoint=True,
                                               left=False), (x, y.mT))):
        assert gradcheck(fn, args)
        assert gradgradcheck(fn, args)


def test_lu_errors():
    # PyTorch's text, a plain RuntimeError (not LinAlgError) as PyTorch's
    with pytest.raises(RuntimeError, match=r"^torch\.linalg\.lu_factor: U\[2,2\] is zero and "
                       r"using it on lu_solve would result in a division by zero\. If you "
                       r"still want to perform the factorization, consider calling "
                       r"linalg\.lu\(A, pivot\) or linalg\.lu_factor_ex\(A, pivot\)$") as e:
        LA.lu_factor(_t([[1.0, 2.0], [2.0, 4.0]]))
    assert not isinstance(e.value, LA.LinAlgError)
    assert LA.lu_factor_ex(_t([[1.0, 2.0], [2.0, 4.0]])).info.item() == 2
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented"):
        LA.lu_factor(_t(np.eye(2)), pivot=False)
    with pytest.raises(RuntimeError, match=r"Expected tensor with 2 or more dimensions"):
        LA.lu(_t([1.0, 2.0]))
    LU, piv = LA.lu_factor(_t(np.eye(3)))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation "
                                           r"AX = B \(3x3 and 2x1\)"):
        LA.lu_solve(LU, piv, _t(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match="Expected pivots to be int32"):
        LA.lu_solve(LU, piv.long(), _t(np.ones((3, 1))))


# Wide (m < n), tall (m > n) and square factorisations, batched, real and complex: one
# backward for every shape (PyTorch's linalg_lu_backward); gradients against central
# differences, forward mode (jvp) too. pivot=False raises on CPU, as PyTorch's CPU.
@pytest.mark.parametrize("shape", [(2, 4), (4, 2), (2, 2, 3), (2, 3, 2), (1, 3), (3, 1),
                                   (3, 3), (2, 2, 2)])
@pytest.mark.parametrize("complex_", [False, True])
def test_lu_gradients_of_every_shape(shape, complex_):
    a = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if complex_ else 0)
    A = tgrad.tensor(a, requires_grad=True)
    assert A.dtype is (tgrad.complex128 if complex_ else F64)
    for fn in (lambda m: LA.lu_factor_ex(m).LU, lambda m: LA.lu(m)[1:]):
        assert gradcheck(fn, (A,), check_forward_ad=True)
    assert gradgradcheck(lambda m: LA.lu(m)[1:], (A,))


def test_lu_gradient_of_a_wide_and_a_tall_matrix_by_hand():
    """A = P L U, 2 x 3 and 3 x 2, with no row exchange (the first column's largest entry
    on top). Wide A = [[a, b, c], [d, e, f]]: L = [[1, 0], [d/a, 1]], U = [[a, b, c],
    [0, e - bd/a, f - cd/a]]; so d U[1, 2] / d(a, b, c, d, e, f) =
    (cd/a^2, 0, -d/a, -c/a, 0, 1) and d L[1, 0] = (-d/a^2, 0, 0, 1/a, 0, 0). Tall
    A = [[a, d], [b, e], [c, f]]: L[2, 1] = (f - cd/a) / (e - bd/a)."""
    a, b, c, d, e, f = 4.0, 1.0, 2.0, 1.0, 3.0, 1.0
    A = _t([[a, b, c], [d, e, f]], requires_grad=True)
    P, L, U = LA.lu(A)
    np.testing.assert_array_equal(P.numpy(), np.eye(2))
    (g,) = tgrad.autograd.grad(U[1, 2], A, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [[c * d / a**2, 0, -d / a], [-c / a, 0, 1]],
                               rtol=1e-14, atol=1e-15)
    (g,) = tgrad.autograd.grad(L[1, 0], A)
    np.testing.assert_allclose(g.numpy(), [[-d / a**2, 0, 0], [1 / a, 0, 0]],
                               rtol=1e-14, atol=1e-15)
    T = _t([[a, d], [b, e], [c, f]], requires_grad=True)
    P, L, U = LA.lu(T)
    np.testing.assert_array_equal(P.numpy(), np.eye(3))
    s = e - b * d / a  # U[1, 1]
    r = f - c * d / a  # L[2, 1] = r / s
    (g,) = tgrad.autograd.grad(L[2, 1], T)
    # d(r/s) = dr / s - r ds / s^2;  dr = (cd/a^2, -d/a, ..), ds = (bd/a^2, -b/a, ..)
    want = np.zeros((3, 2))
    want[0, 0] = (c * d / a**2) / s - r * (b * d / a**2) / s**2  # a
    want[1, 0] = r * (d / a) / s**2  # b
    want[2, 0] = -(d / a) / s  # c
    want[0, 1] = -(c / a) / s + r * (b / a) / s**2  # d
    want[1, 1] = -r / s**2  # e
    want[2, 1] = 1 / s  # f
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-14, atol=1e-15)


def test_lu_gradient_with_row_exchanges_and_empty_factors():
    """Wide and tall matrices whose factorisation swaps rows (a zero leading entry): the
    gradient goes back through P; empty A (k = 0) gives an empty, zero gradient."""
    for a in (np.array([[0.0, 2.0, 1.0, 3.0], [1.0, 1.0, 0.0, 2.0], [3.0, 0.0, 1.0, 1.0]]),
              np.array([[0.0, 2.0], [1.0, 1.0], [3.0, 0.0], [1.0, 4.0]])):
        A = _t(a, requires_grad=True)
        assert not np.array_equal(LA.lu(A).P.numpy(), np.eye(a.shape[0]))
        assert gradcheck(lambda m: LA.lu(m)[1:], (A,))
        assert gradcheck(lambda m: tgrad.lu(m)[0], (A,))  # torch.lu: the same factors
        assert gradgradcheck(lambda m: LA.lu_factor_ex(m).LU, (A,))
    for shape in ((0, 3), (3, 0), (2, 0, 2)):
        A = _t(np.zeros(shape), requires_grad=True)
        LA.lu_factor_ex(A).LU.sum().backward()
        assert A.grad.shape == shape and not A.grad.numpy().any()


def test_solve_ex_info_has_the_batch_shape_of_a_not_of_the_broadcast():
    """PyTorch factors A once: info is A's batch shape even when B broadcasts A's batch
    (A (3, 3) with B (2, 3, 2) gives info of shape (), not (2,))."""
    a = _mat(3) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2))
    res = LA.solve_ex(_t(a), _t(b))
    assert res.info.shape == () and res.info.dtype == tgrad.int32 and res.info.item() == 0
    np.testing.assert_allclose(res.result.numpy(), np.linalg.solve(a, b), rtol=1e-10)
    a2 = np.stack([a, np.zeros((3, 3))])[:, None]  # (2, 1, 3, 3), the second singular
    res = LA.solve_ex(_t(a2), _t(RNG.standard_normal((5, 3, 2))))
    assert res.result.shape == (2, 5, 3, 2) and res.info.shape == (2, 1)
    assert res.info.tolist() == [[0], [1]]
    assert LA.solve_ex(_t(a[None]), _t(b)).info.shape == (1,)
    assert LA.solve_ex(_t(np.stack([a, a])), _t(b[0])).info.shape == (2,)


def test_det_hessian_nan_of_one_singular_matrix_stays_in_it():
    """A batch holding the zero matrix (whose SVD-branch Hessian is NaN, as PyTorch's) and
    the identity: the identity's Hessian of sum(det) contracted with ones is the finite
    difference of sum(cofactors) there, not NaN leaking through the batched SVD."""
    a = _t(np.stack([np.zeros((3, 3)), np.eye(3)]), requires_grad=True)
    (g,) = tgrad.autograd.grad(LA.det(a).sum(), a, create_graph=True)
    (h,) = tgrad.autograd.grad(g.sum(), a)

    def cofactor_sum(m):
        return (np.linalg.det(m) * np.linalg.inv(m).T).sum()

    eps, fd = 1e-6, np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = eps
            fd[i, j] = (cofactor_sum(np.eye(3) + e) - cofactor_sum(np.eye(3) - e)) / (2 * eps)
    np.testing.assert_allclose(h[1].numpy(), fd, atol=1e-7)


def _both_paths(monkeypatch, fn):
    """fn() with the CPU loops on NumPy arrays (host_loop) and with the tgrad-op loops
    (the GPU's), as NumPy arrays; LAPACK's CPU fast paths off (they are tested against
    float64 references in test_linalg_lapack_cpu.py)."""
    from tgrad.linalg import _host_lapack, _lu, _triangular
    monkeypatch.setattr(_host_lapack, "LAPACK_ON_CPU", False)
    host = [x.numpy() for x in fn()]
    for mod in (_lu, _triangular):
        monkeypatch.setattr(mod, "host_loop", lambda *ts: False)
    return host, [x.numpy() for x in fn()]


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_cpu_host_loops_give_the_tgrad_op_loops_bits(monkeypatch, dt):
    """LU (packed factors, perm, sign, info, pivots: ties, a zero column, NaN, inf),
    triangular solves (every flag, broadcast batch) and cholesky_ex (a non-PD matrix)
    bitwise as the tgrad-op loops."""
    rng = np.random.default_rng(5)

    def r(*shape):
        a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape)
                                          if np.dtype(dt).kind == "c" else 0)
        return a.astype(dt)
    a = r(5, 6, 6)
    a[1] = np.round(a[1].real)  # ties in the pivot search
    a[2, :, 3] = 0  # singular: info 4
    a[3, 2, 1], a[4, 0, 0] = np.nan, np.inf
    s = r(3, 6, 6)
    s = s @ s.conj().swapaxes(-1, -2) + np.eye(6, dtype=dt)
    s[1, 3, 3] = -1  # not positive-definite
    b = r(2, 1, 6, 3)

    def run():
        from tgrad.linalg._lu import _lu
        A, B, S = tgrad.tensor(a), tgrad.tensor(b), tgrad.tensor(s)
        out = list(_lu(A)) + list(LA.cholesky_ex(S)) + list(LA.cholesky_ex(S, upper=True))
        out += list(_lu(A[..., :4]))  # a wide matrix
        for upper in (True, False):
            for unit in (True, False):
                out.append(LA.solve_triangular(A[:2], B, upper=upper, unitriangular=unit))
                out.append(LA.solve_triangular(A[:2], B.mT, upper=upper, left=False,
                                               unitriangular=unit))
        return out
    host, ops = _both_paths(monkeypatch, run)
    for h, o in zip(host, ops):
        assert h.dtype == o.dtype and h.shape == o.shape
        np.testing.assert_array_equal(h, o)
