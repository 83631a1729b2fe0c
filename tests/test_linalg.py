"""tgrad.linalg: cholesky / cholesky_ex, solve_triangular, cholesky_solve, the norms and
the aliases, against NumPy float64 (np.linalg.cholesky, np.linalg.solve on the triangle,
np.linalg.norm) to 1e-12; gradcheck and gradgradcheck of the factorisation (through a
symmetrizing wrapper, as PyTorch's tests) and of the solves (both arguments, every flag);
batch dims, n = 1 and n = 17, non-contiguous inputs, float32; PyTorch's error texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64
RNG = np.random.default_rng(7)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _spd(n, batch=()):
    m = RNG.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _tri(n, batch=(), upper=False):
    a = np.tril(RNG.standard_normal(batch + (n, n))) + 3 * np.eye(n)
    return np.swapaxes(a, -1, -2) if upper else a


def _sym(f):
    """f of the symmetric part: the gradient of a function that reads one triangle is
    compared on symmetric perturbations, as PyTorch's tests do."""
    return lambda a, *rest: f((a + a.mT) / 2, *rest)


# ---- cholesky --------------------------------------------------------------------------------

@pytest.mark.parametrize("n,batch", [(1, ()), (4, ()), (3, (2, 2)), (17, ())])
def test_cholesky_matches_numpy(n, batch):
    a = _spd(n, batch)
    ref = np.linalg.cholesky(a)
    np.testing.assert_allclose(LA.cholesky(_t(a)).numpy(), ref, rtol=0, atol=1e-12)
    u = LA.cholesky(_t(a), upper=True).numpy()
    np.testing.assert_allclose(u, np.swapaxes(ref, -1, -2), rtol=0, atol=1e-12)
    res = LA.cholesky_ex(_t(a))
    np.testing.assert_allclose(res.L.numpy(), ref, rtol=0, atol=1e-12)
    assert res.info.dtype == tgrad.int32 and res.info.shape == batch
    assert not res.info.numpy().any()


def test_cholesky_reads_one_triangle_and_non_contiguous_input():
    a = _spd(5)
    junk = np.tril(a) + np.triu(RNG.standard_normal((5, 5)), 1)  # upper triangle ignored
    np.testing.assert_allclose(LA.cholesky(_t(junk)).numpy(), np.linalg.cholesky(a),
                               atol=1e-12)
    np.testing.assert_allclose(LA.cholesky(_t(junk.T), upper=True).numpy(),
                               np.linalg.cholesky(a).T, atol=1e-12)
    big = _t(np.stack([_spd(4), _spd(4)], -1))  # (4, 4, 2): a strided batch via movedim
    view = big.movedim(-1, 0)
    assert not view.is_contiguous()
    np.testing.assert_allclose(LA.cholesky(view).numpy(),
                               np.linalg.cholesky(np.moveaxis(big.numpy(), -1, 0)),
                               atol=1e-12)


def test_cholesky_float32_within_pytorch_tolerance():
    a = _spd(6, (3,))
    out = LA.cholesky(tgrad.tensor(a.astype(np.float32)))
    assert out.dtype == tgrad.float32
    np.testing.assert_allclose(out.numpy(), np.linalg.cholesky(a), rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_gradcheck_and_gradgradcheck(upper):
    a = _t(_spd(3, (2,)), requires_grad=True)
    f = _sym(lambda x: LA.cholesky(x, upper=upper))
    assert gradcheck(f, (a,))
    assert gradgradcheck(f, (a,))
    assert gradcheck(_sym(LA.cholesky), (_t(_spd(1), requires_grad=True),))


def test_cholesky_gradcheck_n17():
    assert gradcheck(_sym(LA.cholesky), (_t(_spd(17), requires_grad=True),))


def test_cholesky_gradient_is_symmetric_and_reconstructs():
    a = _t(_spd(4), requires_grad=True)
    fac = LA.cholesky(a)
    np.testing.assert_allclose((fac @ fac.mT).detach().numpy(), a.detach().numpy(),
                               atol=1e-12)
    (fac * _t(RNG.standard_normal((4, 4)))).sum().backward()
    g = a.grad.numpy()
    np.testing.assert_allclose(g, g.T, atol=1e-12)


def test_cholesky_errors():
    bad = [[1.0, 2.0], [2.0, 1.0]]
    with pytest.raises(RuntimeError, match=r"^linalg\.cholesky: The factorization could not "
                       r"be completed because the input is not positive-definite \(the "
                       r"leading minor of order 2 is not positive-definite\)\.$"):
        LA.cholesky(_t(bad))
    with pytest.raises(RuntimeError, match=r"^linalg\.cholesky: \(Batch element 1\): The "
                       r"factorization could not be completed because the input is not "
                       r"positive-definite \(the leading minor of order 2 is not "
                       r"positive-definite\)\.$"):
        LA.cholesky(_t([np.eye(2), bad]))
    info = LA.cholesky_ex(_t([np.eye(3), [[-1.0, 0, 0], [0, 1, 0], [0, 0, 1]],
                              [[1.0, 0, 0], [0, 1, 0], [0, 0, 0]]])).info
    assert info.tolist() == [0, 1, 3]
    with pytest.raises(RuntimeError, match=r"^linalg\.cholesky: A must be batches of square "
                       r"matrices, but they are 2 by 3 matrices$"):
        LA.cholesky(tgrad.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"^linalg\.cholesky: The input tensor A must have "
                       r"at least 2 dimensions\.$"):
        LA.cholesky(tgrad.ones(3))
    with pytest.raises(RuntimeError, match=r"^linalg\.cholesky: Expected a floating point or "
                       r"complex tensor as input\. Got Long$"):
        LA.cholesky(tgrad.ones(2, 2, dtype=tgrad.int64))


# ---- solve_triangular / cholesky_solve -------------------------------------------------------

FLAGS = [(u, le, un) for u in (False, True) for le in (False, True) for un in (False, True)]


def _np_solve_tri(a, b, upper, left, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = t * (1 - np.eye(t.shape[-1])) + np.eye(t.shape[-1])
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


@pytest.mark.parametrize("upper,left,unit", FLAGS)
def test_solve_triangular_matches_numpy(upper, left, unit):
    for n, batch in [(1, ()), (4, (2,)), (17, ())]:
        a = RNG.standard_normal(batch + (n, n)) + 4 * np.eye(n)  # other triangle: junk
        b = RNG.standard_normal(batch + ((n, 3) if left else (3, n)))
        out = LA.solve_triangular(_t(a), _t(b), upper=upper, left=left, unitriangular=unit)
        np.testing.assert_allclose(out.numpy(), _np_solve_tri(a, b, upper, left, unit),
                                   rtol=1e-12, atol=1e-12)


def test_solve_triangular_broadcasts_batches_and_non_contiguous():
    a = _tri(3, (2, 1))
    b = RNG.standard_normal((4, 3, 2))
    out = LA.solve_triangular(_t(a), _t(b), upper=False)
    assert out.shape == (2, 4, 3, 2)
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, b), atol=1e-12)
    at = _t(_tri(4)).mT  # an upper-triangular transposed view
    bt = _t(RNG.standard_normal((5, 4))).mT
    assert not at.is_contiguous() and not bt.is_contiguous()
    np.testing.assert_allclose(LA.solve_triangular(at, bt, upper=True).numpy(),
                               np.linalg.solve(at.numpy(), bt.numpy()), atol=1e-12)
    a32 = tgrad.tensor(_tri(5).astype(np.float32))
    b32 = tgrad.tensor(RNG.standard_normal((5, 2)).astype(np.float32))
    out32 = LA.solve_triangular(a32, b32, upper=False)
    assert out32.dtype == tgrad.float32
    np.testing.assert_allclose(out32.numpy(), np.linalg.solve(a32.numpy().astype(np.float64),
                                                              b32.numpy()),
                               rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("upper,left,unit", FLAGS)
def test_solve_triangular_gradcheck_and_gradgradcheck(upper, left, unit):
    a = _t(_tri(3, (2,), upper), requires_grad=True)
    b = _t(RNG.standard_normal((2, 3, 2) if left else (2, 2, 3)), requires_grad=True)

    def f(x, y):
        return LA.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit)

    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_solve_triangular_errors():
    op = r"^linalg\.solve_triangular: "
    with pytest.raises(RuntimeError, match=op + r"Incompatible shapes of A and B for the "
                       r"equation AX = B \(2x2 and 3x1\)$"):
        LA.solve_triangular(tgrad.eye(2), tgrad.ones(3, 1), upper=False)
    with pytest.raises(RuntimeError, match=op + r"Incompatible shapes of A and B for the "
                       r"equation XA = B \(2x2 and 1x3\)$"):
        LA.solve_triangular(tgrad.eye(2), tgrad.ones(1, 3), upper=False, left=False)
    with pytest.raises(RuntimeError, match=op + r"A must be batches of square matrices, but "
                       r"they are 2 by 3 matrices$"):
        LA.solve_triangular(tgrad.ones(2, 3), tgrad.ones(2, 1), upper=False)
    with pytest.raises(RuntimeError, match=op + r"The input tensor A must have at least 2 "
                       r"dimensions\.$"):
        LA.solve_triangular(tgrad.ones(2), tgrad.ones(2, 1), upper=False)
    with pytest.raises(RuntimeError, match=op + r"The input tensor B must have at least 2 "
                       r"dimensions\.$"):
        LA.solve_triangular(tgrad.eye(2), tgrad.ones(2), upper=False)
    with pytest.raises(TypeError):
        LA.solve_triangular(tgrad.eye(2), tgrad.ones(2, 1))  # upper is required


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve(upper):
    a = _spd(4, (2,))
    b = RNG.standard_normal((2, 4, 3))
    factor = LA.cholesky(_t(a), upper=upper)
    out = tgrad.cholesky_solve(_t(b), factor, upper=upper)
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, b), atol=1e-12)
    assert LA.cholesky_solve is tgrad.cholesky_solve
    tri = (lambda m: m.triu()) if upper else (lambda m: m.tril())

    def f(y, fac):
        return tgrad.cholesky_solve(y, tri(fac), upper=upper)

    args = (_t(b[0, :3, :2], requires_grad=True),
            _t(factor.numpy()[0, :3, :3], requires_grad=True))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_cholesky_solve_errors():
    with pytest.raises(RuntimeError, match=r"^Incompatible matrix sizes for cholesky_solve: "
                       r"each A matrix is 2 by 2 but each b matrix is 3 by 1$"):
        tgrad.cholesky_solve(tgrad.ones(3, 1), tgrad.eye(2))
    with pytest.raises(RuntimeError, match=r"^b should have at least 2 dimensions, but has 1 "
                       r"dimensions instead$"):
        tgrad.cholesky_solve(tgrad.ones(3), tgrad.eye(3))
    with pytest.raises(RuntimeError, match=r"^u should have at least 2 dimensions, but has 1 "
                       r"dimensions instead$"):
        tgrad.cholesky_solve(tgrad.ones(3, 1), tgrad.ones(3))


# ---- norms and aliases ---------------------------------------------------------------------

VECTOR_ORDS = [2, 1, 0, 3.5, -1, math.inf, -math.inf]


@pytest.mark.parametrize("order", VECTOR_ORDS)
def test_vector_norm_matches_numpy(order):
    x = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(LA.vector_norm(_t(x), order).numpy(),
                               np.linalg.norm(x.ravel(), order), rtol=1e-12)
    out = LA.vector_norm(_t(x), order, dim=1, keepdim=True)
    assert out.shape == (3, 1)
    np.testing.assert_allclose(out.numpy()[:, 0], np.linalg.norm(x, order, axis=1),
                               rtol=1e-12)
    np.testing.assert_allclose(LA.vector_norm(_t(x).mT, order, dim=(0, 1)).numpy(),
                               np.linalg.norm(x.ravel(), order), rtol=1e-12)
    if order != 0:
        assert gradcheck(lambda t: LA.vector_norm(t, order, dim=-1), (_t(x, requires_grad=True),))


@pytest.mark.parametrize("order", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm_and_norm_match_numpy(order):
    a = RNG.standard_normal((2, 3, 4))
    ref = np.stack([np.linalg.norm(m, order) for m in a])
    np.testing.assert_allclose(LA.matrix_norm(_t(a), order).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(LA.norm(_t(a[0]), order).numpy(), ref[0], rtol=1e-12)
    np.testing.assert_allclose(LA.norm(_t(a), order, dim=(-2, -1)).numpy(), ref, rtol=1e-12)
    out = LA.matrix_norm(_t(a).mT, order, dim=(-1, -2), keepdim=True)
    assert out.shape == (2, 1, 1)
    np.testing.assert_allclose(out.numpy().ravel(), ref, rtol=1e-12)
    assert gradcheck(lambda t: LA.matrix_norm(t, order), (_t(a, requires_grad=True),))


def test_norm_dispatch_and_errors():
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_allclose(LA.norm(_t(x)).numpy(), np.linalg.norm(x.ravel()), rtol=1e-12)
    np.testing.assert_allclose(LA.norm(_t(x), 3, dim=1).numpy(),
                               np.linalg.norm(x, 3, axis=1), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^linalg\.norm: If dim is not specified but ord "
                       r"is, the input must be 1D or 2D\. Got 3D\.$"):
        LA.norm(_t(x), 2)
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: Order 3 not supported\.$"):
        LA.matrix_norm(_t(x), 3)
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: Order abc not supported\.$"):
        LA.matrix_norm(_t(x), "abc")
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: The input tensor A must "
                       r"have at least 2 dimensions\.$"):
        LA.matrix_norm(_t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: dims must be different\. "
                       r"Got \(0, 0\)$"):
        LA.matrix_norm(_t(x), dim=(0, 0))
    for o in ("nuc", 2, -2):  # from the singular values (tests/test_linalg_decomp.py)
        np.testing.assert_allclose(LA.matrix_norm(_t(x), o).numpy(),
                                   np.linalg.norm(x, o, axis=(-2, -1)), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^linalg\.vector_norm: Expected a floating point "
                       r"or complex tensor as input\. Got Long$"):
        LA.vector_norm(tgrad.ones(2, dtype=tgrad.int64))
    assert LA.vector_norm(tgrad.ones(2, dtype=tgrad.int64), dtype=F64).item() == \
        pytest.approx(math.sqrt(2))
    with pytest.raises(TypeError, match=r"^linalg_vector_norm\(\): argument 'ord' must be "
                       r"Number, not str$"):
        LA.vector_norm(_t(x), "fro")
    with pytest.raises(RuntimeError, match=r"^linalg\.vector_norm cannot compute the inf norm "
                       r"on an empty tensor because the operation does not have an "
                       r"identity$"):
        LA.vector_norm(tgrad.ones(0), math.inf)


def test_aliases():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(LA.cross(_t(a), _t(b)).numpy(), np.cross(a, b), atol=1e-12)
    np.testing.assert_allclose(LA.vecdot(_t(a), _t(b)).numpy(), (a * b).sum(-1), atol=1e-12)
    np.testing.assert_allclose(LA.matmul(_t(a), _t(b).mT).numpy(), a @ b.T, atol=1e-12)
    np.testing.assert_allclose(LA.diagonal(_t(a[None])).numpy(), np.diagonal(a)[None])
    v, m1, m2 = RNG.standard_normal(4), RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3))
    np.testing.assert_allclose(LA.multi_dot([_t(v), _t(m1), _t(m2), _t(b[0])]).numpy(),
                               v @ m1 @ m2 @ b[0], rtol=1e-12)
    np.testing.assert_allclose(LA.multi_dot([_t(m1), _t(m2)]).numpy(), m1 @ m2, rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): expected at least 2 tensors but "
                       r"got 1$"):
        LA.multi_dot([_t(m1)])
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): the last tensor must be 1D or 2D "
                       r"but got 3D$"):
        LA.multi_dot([_t(v), tgrad.ones(2, 2, 2)])
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): tensor 1 must be 2D but got 1D$"):
        LA.multi_dot([tgrad.ones(2, 2), tgrad.ones(2), tgrad.ones(2)])
    with pytest.raises(RuntimeError, match=r"^multi_dot\(\): tensors 0 and 1 with shapes "
                       r"\[2, 2\] and \[3, 2\] cannot be multiplied$"):
        LA.multi_dot([tgrad.ones(2, 2), tgrad.ones(3, 2)])


def test_reachable_as_attribute_of_tgrad():
    assert tgrad.linalg is LA
    assert "cholesky" in LA.__all__ and "solve_triangular" in LA.__all__
