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
    # PyTorch raises torch.linalg.LinAlgError (a RuntimeError) for these, not a bare one
    for f in (lambda: LA.cholesky(_t(bad)), lambda: LA.cholesky_ex(_t(bad), check_errors=True),
              lambda: LA.inv(_t([[1.0, 2.0], [2.0, 4.0]])), lambda: LA.inv_ex(
                  _t([[1.0, 2.0], [2.0, 4.0]]), check_errors=True),
              lambda: LA.solve(_t([[1.0, 2.0], [2.0, 4.0]]), _t([1.0, 1.0])),
              lambda: tgrad.inverse(_t(np.zeros((2, 2))))):
        with pytest.raises(LA.LinAlgError):
            f()
    assert issubclass(LA.LinAlgError, RuntimeError)
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
    assert tgrad.cholesky_solve.__wrapped__ is LA.cholesky_solve  # (torch-level: out=)
    tri = (lambda m: m.triu()) if upper else (lambda m: m.tril())

    def f(y, fac):
        return tgrad.cholesky_solve(y, tri(fac), upper=upper)

    args = (_t(b[0, :3, :2], requires_grad=True),
            _t(factor.numpy()[0, :3, :3], requires_grad=True))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


@pytest.mark.parametrize("n", [1, 5, 8, 33])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_cpu_inverse_path(n, upper):
    """The CPU node (CholeskySolve: L^{-1} by blocked recursion, in float64 for float32)
    against NumPy float64 and the substitution loops (LAPACK_ON_CPU off), with broadcast
    batches, garbage in the unread triangle and the loops' inf/NaN for a zero pivot."""
    from tgrad.linalg import _host_lapack
    a = _spd(n, (3,))
    low = np.linalg.cholesky(a)
    fac = low.swapaxes(-1, -2) if upper else low
    junk = fac + (np.tril(RNG.standard_normal((n, n)), -1) if upper else
                  np.triu(RNG.standard_normal((n, n)), 1))
    b = RNG.standard_normal((2, 1, n, 3))
    ref = np.linalg.solve(a, b)
    out = tgrad.cholesky_solve(_t(b), _t(junk), upper=upper)
    assert out.shape == (2, 3, n, 3)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-12)
    out32 = tgrad.cholesky_solve(_t(b).float(), _t(junk).float(), upper=upper)
    ref32 = np.linalg.solve(np.float32(fac).astype(np.float64).swapaxes(-1, -2) @
                            np.float32(fac).astype(np.float64) if upper else
                            np.float32(low).astype(np.float64) @
                            np.float32(low).astype(np.float64).swapaxes(-1, -2),
                            np.float32(b).astype(np.float64))
    np.testing.assert_allclose(out32.numpy(), ref32, rtol=1e-5, atol=1e-6)
    _host_lapack.LAPACK_ON_CPU = False
    try:
        loops = tgrad.cholesky_solve(_t(b), _t(junk), upper=upper)
    finally:
        _host_lapack.LAPACK_ON_CPU = True
    np.testing.assert_allclose(out.numpy(), loops.numpy(), rtol=1e-10, atol=1e-12)
    assert out.requires_grad is False
    y = _t(b[0, 0], requires_grad=True)
    assert tgrad.cholesky_solve(y, _t(junk), upper=upper).grad_fn.name() == \
        "CholeskySolveBackward0"
    bad = fac.copy()
    bad[..., 0, 0] = 0  # a zero pivot: the loops' inf / NaN
    got = tgrad.cholesky_solve(_t(b), _t(bad), upper=upper).numpy()
    _host_lapack.LAPACK_ON_CPU = False
    try:
        want = tgrad.cholesky_solve(_t(b), _t(bad), upper=upper).numpy()
    finally:
        _host_lapack.LAPACK_ON_CPU = True
    np.testing.assert_array_equal(got, want)
    empty = tgrad.zeros(3, n, 0, dtype=tgrad.float64)
    assert tgrad.cholesky_solve(empty, _t(fac)).shape == (3, n, 0)


def test_cholesky_solve_cpu_inverse_path_grads():
    """gradcheck / gradgradcheck of the CPU node with broadcasting, complex, and its
    backward with and without create_graph against the two-solve composition's."""
    from tgrad.linalg import _host_lapack
    for upper in (False, True):
        low = np.linalg.cholesky(_spd(3, (2,)))
        fac = low.swapaxes(-1, -2) if upper else low
        tri = (lambda m: m.triu()) if upper else (lambda m: m.tril())

        def f(y, fc, upper=upper, tri=tri):
            return tgrad.cholesky_solve(y, tri(fc), upper=upper)

        args = (_t(RNG.standard_normal((3, 2)), requires_grad=True),
                _t(fac, requires_grad=True))
        assert gradcheck(f, args)
        assert gradgradcheck(f, args)
        grads = []
        for flag in (True, False):
            _host_lapack.LAPACK_ON_CPU = flag
            try:
                y, fc = (_t(a.detach().numpy(), requires_grad=True) for a in args)
                tgrad.cholesky_solve(y, fc, upper=upper).pow(2).sum().backward()
                grads.append((y.grad.numpy(), fc.grad.numpy()))
            finally:
                _host_lapack.LAPACK_ON_CPU = True
        for g_new, g_old in zip(*grads):
            np.testing.assert_allclose(g_new, g_old, rtol=1e-10, atol=1e-12)
    c = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
    lc = np.linalg.cholesky(c @ c.conj().T + 3 * np.eye(3))
    args = (_t(RNG.standard_normal((3, 2)) + 1j * RNG.standard_normal((3, 2)),
               requires_grad=True), _t(lc, requires_grad=True))
    assert gradcheck(lambda y, fc: tgrad.cholesky_solve(y, fc.tril()), args)


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
    with pytest.raises(RuntimeError, match=r"Got Long$"):  # dtype= does not convert it first
        LA.vector_norm(tgrad.ones(2, dtype=tgrad.int64), dtype=F64)
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


# --------------------------------- results that do not depend on the input: still in the graph
def test_zero_norm_is_a_graph_node_with_an_undefined_gradient():
    v = np.array([1.0, 0.0, -2.0, 0.0])
    for shape, fn in (((4,), lambda x: LA.vector_norm(x, 0)),
                      ((4,), lambda x: LA.norm(x, 0)),
                      ((2, 2), lambda x: LA.vector_norm(x, 0, dim=1))):
        x = _t(v.reshape(shape), requires_grad=True)
        y = fn(x)
        assert y.grad_fn is not None and y.requires_grad
        np.testing.assert_array_equal(y.detach().numpy(), np.count_nonzero(x.detach().numpy(),
                                                                           len(shape) - 1))
        y.sum().backward()  # no "does not require grad" error; PyTorch's .grad stays None
        assert x.grad is None
        (g,) = tgrad.autograd.grad(fn(x).sum(), x, allow_unused=True)
        assert g is None
        # with another term the gradient is that term's alone
        (g,) = tgrad.autograd.grad((fn(x).sum() + x * x).sum(), x)
        np.testing.assert_array_equal(g.numpy(), 2 * v.reshape(shape))
    assert LA.vector_norm(_t(v), 0).grad_fn is None  # no grad needed: a plain tensor
    with tgrad.no_grad():
        assert LA.vector_norm(_t(v, requires_grad=True), 0).grad_fn is None


def test_matrix_power_zero_has_a_zero_gradient():
    a = RNG.standard_normal((2, 3, 3))
    m = _t(a, requires_grad=True)
    pw = LA.matrix_power(m, 0)
    assert pw.grad_fn is not None
    np.testing.assert_array_equal(pw.detach().numpy(), np.broadcast_to(np.eye(3), (2, 3, 3)))
    pw.sum().backward()
    np.testing.assert_array_equal(m.grad.numpy(), np.zeros((2, 3, 3)))
    # a NaN in the matrix reaches neither the identity nor the gradient
    mb = _t([[math.nan, 1.0], [2.0, 3.0]], requires_grad=True)
    (g,) = tgrad.autograd.grad(LA.matrix_power(mb, 0).sum(), mb)
    np.testing.assert_array_equal(g.numpy(), np.zeros((2, 2)))
    assert gradcheck(lambda x: LA.matrix_power(x, 0), (_t(a[0], requires_grad=True),))


def test_matrix_power_one_is_a_copy():
    # PyTorch returns A.clone(): the result was A itself, so a write to it changed A
    a = RNG.standard_normal((2, 3, 3))
    m = _t(a, requires_grad=True)
    for x in (m, m.detach(), m.detach().mT):
        p = LA.matrix_power(x, 1)
        assert p is not x and not p._is_view()
        assert p.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    np.testing.assert_array_equal(LA.matrix_power(m.detach(), 1).fill_(0.0).numpy(), 0.0)
    np.testing.assert_array_equal(m.detach().numpy(), a)
    assert gradcheck(lambda x: LA.matrix_power(x * 1.0, 1).mul_(2.0), (m,))
    np.testing.assert_allclose(LA.matrix_power(m, -1).detach().numpy(), np.linalg.inv(a))


def test_lu_permutation_and_empty_svd_factors_are_new_tensors():
    # P was the transpose of a one-hot (a view, column-major); the identities of an empty
    # svd were a view of eye's result: PyTorch's are new row-major tensors
    a = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 9.0]])
    p, lo, up = LA.lu(_t(a))
    assert not p._is_view() and p.is_contiguous()
    # by hand, partial pivoting: rows 0 and 2 swap (pivot 6), then rows 1 and 2 (|1| >
    # |0.5|), so P^T A = A[[2, 0, 1]], P[perm[i], i] = 1
    np.testing.assert_array_equal(p.numpy(), [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose((p @ lo @ up).numpy(), a, atol=1e-12)
    for shape in ((0, 3), (3, 0), (0, 0)):
        u, s, vh = LA.svd(tgrad.zeros(shape, dtype=F64))
        assert not u._is_view() and not vh._is_view()
        np.testing.assert_array_equal(u.numpy(), np.eye(shape[0]))
        np.testing.assert_array_equal(vh.numpy(), np.eye(shape[1]))
        assert s.shape == (0,)


def test_householder_product_of_no_reflectors_is_in_the_graph():
    m = _t(RNG.standard_normal((2, 4, 3)), requires_grad=True)
    tau = tgrad.zeros(2, 0, dtype=F64, requires_grad=True)
    h = LA.householder_product(m, tau)
    assert h.grad_fn is not None and h.is_contiguous()
    np.testing.assert_array_equal(h.detach().numpy(), np.broadcast_to(np.eye(4, 3), (2, 4, 3)))
    h.sum().backward()  # PyTorch: an undefined gradient, .grad stays None
    assert m.grad is None and tau.grad is None


# ------------------------------------------------------ vector_norm over empty dims, dtypes
@pytest.mark.parametrize("p", [math.inf, -math.inf, -1, -0.5])
def test_vector_norm_without_identity_raises_only_over_an_empty_dim(p):
    e = tgrad.zeros(0, 3, dtype=F64)
    got = LA.vector_norm(e, p, dim=1)  # every reduced dim has 3 elements
    assert got.shape == (0,)
    assert LA.vector_norm(e, p, dim=1, keepdim=True).shape == (0, 1)
    assert tgrad.norm(e, p, dim=1).shape == (0,)
    name = f"{p:g}"
    with pytest.raises(RuntimeError, match=rf"^linalg.vector_norm cannot compute the {name} "
                       rf"norm on the dimension 0 because this dimension is empty and the "
                       rf"operation does not have an identity$"):
        LA.vector_norm(e, p, dim=0)
    with pytest.raises(RuntimeError, match=r"on the dimension -2 because"):
        LA.norm(e, p, dim=-2)
    with pytest.raises(RuntimeError, match=rf"^linalg.vector_norm cannot compute the {name} "
                       rf"norm on an empty tensor because the operation does not have an "
                       rf"identity$"):
        LA.vector_norm(e, p)
    with pytest.raises(RuntimeError, match=r"on an empty tensor because"):
        tgrad.norm(e, p)  # torch.norm too
    with pytest.raises(RuntimeError, match=r"on the dimension 2 because"):
        LA.vector_norm(tgrad.zeros(2, 3, 0), p, dim=(0, 2))


@pytest.mark.parametrize("p", [0, 0.5, 1, 2])
def test_vector_norm_with_identity_of_empty_dims_is_zero(p):
    e = tgrad.zeros(0, 3, dtype=F64)
    np.testing.assert_array_equal(LA.vector_norm(e, p, dim=0).numpy(), np.zeros(3))
    assert LA.vector_norm(e, p).item() == 0.0
    assert tgrad.norm(e, p).item() == 0.0


def test_vector_norm_dtype_argument_checks():
    with pytest.raises(RuntimeError, match=r"^linalg.vector_norm: Expected a floating point or "
                       r"complex tensor as input. Got Long$"):
        LA.vector_norm(tgrad.tensor([1, 2]), dtype=F64)
    with pytest.raises(RuntimeError, match=r"^linalg.matrix_norm: Expected a floating point or "
                       r"complex tensor as input. Got Int$"):
        LA.matrix_norm(tgrad.ones(2, 2, dtype=tgrad.int32), dtype=F64)
    with pytest.raises(RuntimeError, match=r"^linalg.vector_norm: the dtype of the input "
                       r"\(Double\) should be convertible without narrowing to the specified "
                       r"dtype \(Float\)$"):
        LA.vector_norm(_t([1.0, 2.0]), dtype=tgrad.float32)
    got = LA.vector_norm(tgrad.tensor([3.0, 4.0]), dtype=F64)
    assert got.dtype is F64 and got.item() == 5.0


def test_vector_norm_takes_a_0d_tensor_ord():
    # PyTorch reads a 0-d tensor ord (not requiring grad) as the number (True as 1)
    x = _t([3.0, -4.0])
    assert LA.vector_norm(x, tgrad.tensor(2.0)).item() == 5.0
    assert LA.vector_norm(x, tgrad.tensor(1)).item() == 7.0
    assert LA.vector_norm(x, tgrad.tensor(True)).item() == 7.0
    assert LA.vector_norm(x, tgrad.tensor(math.inf)).item() == 4.0
    assert LA.norm(x, tgrad.tensor(1.0)).item() == 7.0
    for bad in (tgrad.tensor([2.0]), tgrad.tensor(2.0, requires_grad=True)):
        with pytest.raises(TypeError, match="'ord' must be Number, not Tensor"):
            LA.vector_norm(x, bad)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a non-complex scalar"):
        LA.vector_norm(x, tgrad.tensor(1 + 0j))
    # Tensor.norm / tgrad.norm take it too: sqrt[3](27 + 64) and 3 + 4
    assert x.norm(p=tgrad.tensor(3.0)).item() == pytest.approx(91.0 ** (1 / 3), rel=1e-15)
    assert tgrad.norm(x, tgrad.tensor(1)).item() == 7.0


# --------------------------------------------------------------------- det at a NaN input
def test_det_backward_of_a_non_finite_matrix_is_nan():
    g = _t([[1.0, math.nan], [0.0, 1.0]], requires_grad=True)
    LA.det(g).backward()  # no SVD of the NaN matrix (it raised LinAlgError)
    assert np.isnan(g.grad.numpy()).all()
    a = np.array([[[1.0, math.inf], [1.0, 1.0]], [[2.0, 1.0], [1.0, 1.0]],
                  [[1.0, 2.0], [2.0, 4.0]]])
    m = _t(a, requires_grad=True)
    LA.det(m).sum().backward()
    assert np.isnan(m.grad.numpy()[0]).all()
    # the others: the cofactor matrix [[d, -c], [-b, a]] (the singular one too)
    for i in (1, 2):
        (p, q), (r, s) = a[i]
        np.testing.assert_allclose(m.grad.numpy()[i], [[s, -r], [-q, p]], atol=1e-12)


# -------------------------------------------------- addmm & co: integers and float scalars
@pytest.mark.parametrize("op", ["addmm", "addmv", "baddbmm", "addbmm"])
def test_integer_products_refuse_float_scalars(op):
    m, v, b = (tgrad.ones(2, 2, dtype=tgrad.int64), tgrad.ones(2, dtype=tgrad.int64),
               tgrad.ones(2, 2, 2, dtype=tgrad.int64))
    args = {"addmm": (m, m, m), "addmv": (v, m, v), "baddbmm": (b, b, b),
            "addbmm": (m, b, b)}[op]
    fn = getattr(tgrad, op)
    for name in ("beta", "alpha"):
        for value in (0.5, 1.0):
            with pytest.raises(RuntimeError, match=rf"^{op}: For integral input tensors, "
                               rf"argument {name} must not be a floating point number\."):
                fn(*args, **{name: value})
    # int scalars keep the integer dtype; float tensors take float scalars
    want = {"addmm": 2 * 1 + 3 * 2, "addmv": 2 + 3 * 2, "baddbmm": 2 + 3 * 2,
            "addbmm": 2 + 3 * 4}[op]
    got = fn(*args, beta=2, alpha=3)
    assert got.dtype is tgrad.int64 and (got.numpy() == want).all()
    got = fn(*(a.double() for a in args), beta=0.5, alpha=1.5)
    want_f = {"addmm": 0.5 + 1.5 * 2, "addmv": 0.5 + 1.5 * 2, "baddbmm": 0.5 + 1.5 * 2,
              "addbmm": 0.5 + 1.5 * 4}[op]
    np.testing.assert_allclose(got.numpy(), want_f, rtol=1e-15)


# --------------------------------------------------------------- lstsq: residuals by driver
def test_lstsq_residuals_follow_the_driver():
    a, b = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    x, res, _, _ = np.linalg.lstsq(a, b, rcond=None)
    for driver in (None, "gelsy"):  # (None: gelsy on the CPU) no residuals, as PyTorch
        out = LA.lstsq(_t(a), _t(b), driver=driver)
        np.testing.assert_allclose(out.solution.numpy(), x, rtol=1e-10)
        assert out.residuals.shape == (0,)
        assert out.rank.item() == 3
    for driver in ("gels", "gelsd", "gelss"):
        out = LA.lstsq(_t(a), _t(b), driver=driver)
        np.testing.assert_allclose(out.residuals.numpy(), res, rtol=1e-10)


# ------------------------------------------------------------ torch.norm's matrix forms
def test_norm_nuclear_routes_to_matrix_norm():
    x = RNG.standard_normal((3, 4, 5))
    m = x[0]
    np.testing.assert_allclose(tgrad.norm(_t(m), p="nuc").numpy(), np.linalg.norm(m, "nuc"),
                               rtol=1e-12)  # dim=None: every dim, so a 2-D input
    for dim in ((0, 2), (2, 0), [1, 2], (-1, -3)):
        ref = np.linalg.norm(x, "nuc", axis=tuple(dim))
        np.testing.assert_allclose(tgrad.norm(_t(x), p="nuc", dim=dim).numpy(), ref,
                                   rtol=1e-12)
        out = _t(x).norm("nuc", dim, True)
        ref_keep = np.linalg.norm(x, "nuc", axis=tuple(dim), keepdims=True)
        assert out.shape == ref_keep.shape
        np.testing.assert_allclose(out.numpy(), ref_keep, rtol=1e-12)
    assert gradcheck(lambda t: tgrad.norm(t, p="nuc", dim=(0, 2)),
                     (_t(x, requires_grad=True),))
    assert gradcheck(lambda t: tgrad.norm(t, p="nuc"), (_t(m, requires_grad=True),))
    # 'fro' over two dims is the 2-norm of those entries (np's 'fro' over the same axes)
    for dim in ((0, 1), (1, 2), (-1, 0)):
        np.testing.assert_allclose(tgrad.norm(_t(x), p="fro", dim=dim).numpy(),
                                   np.linalg.norm(x, "fro", axis=dim), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: dim must be a 2-tuple"):
        tgrad.norm(_t(x), p="nuc")  # torch.norm: dim=None means all three dims
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: dim must be a 2-tuple"):
        tgrad.norm(_t(x), p="fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: dim must be a 2-tuple"):
        tgrad.norm(_t(x), p="nuc", dim=0)
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: The input tensor A must "
                       r"have at least 2 dimensions\.$"):
        tgrad.norm(_t([1.0, 2.0]), p="nuc")
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: Order abc not supported"):
        tgrad.norm(_t(x), p="abc", dim=(0, 1))


def test_matrix_rank_deprecated_tol():
    # singular values 10, 3, 0.5, 1e-20: tol is an absolute threshold alone (S > tol)
    a = _t(np.diag([10.0, 3.0, 0.5, 1e-20]))
    assert LA.matrix_rank(a, tol=0.5).item() == 2
    assert LA.matrix_rank(a, tol=0.49).item() == 3
    assert LA.matrix_rank(a, 3.0).item() == 1  # positional, as PyTorch's overload
    assert LA.matrix_rank(a, tol=0.0).item() == 4  # rtol is 0, not the eps default
    assert LA.matrix_rank(a).item() == 3  # (the default threshold drops 1e-20)
    assert LA.matrix_rank(a, 0.4, True).item() == 3  # hermitian, positional
    batch = _t(np.stack([np.diag([10.0, 3.0, 0.5, 1e-20]), np.diag([1.0, 0.3, 0.05, 0.0])]))
    assert LA.matrix_rank(batch, tol=0.5).tolist() == [2, 1]
    assert LA.matrix_rank(a, tol=tgrad.tensor(0.49, dtype=F64)).item() == 3
    with pytest.raises(TypeError, match=r"linalg\.matrix_rank\(\) received an invalid "
                       r"combination of arguments"):
        LA.matrix_rank(a, tol=0.5, atol=0.1)
    with pytest.raises(TypeError, match="invalid combination"):
        LA.matrix_rank(a, 0.5, rtol=0.1)


def test_norm_with_a_string_ord_is_a_matrix_norm_and_dim_lengths_are_checked():
    """PyTorch: linalg.norm with ord 'fro' / 'nuc' is always matrix_norm (its errors for 1-D
    input or an int dim); a dim of length 3 is refused; a numeric ord on 2-D is a matrix norm."""
    x = RNG.standard_normal((2, 3, 4))
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: The input tensor A must "
                       r"have at least 2 dimensions\.$"):
        LA.norm(_t([1.0, 2.0]), "fro")
    with pytest.raises(RuntimeError, match=r"^linalg\.matrix_norm: dim must be a 2-tuple\. "
                       r"Got 1$"):
        LA.norm(_t(x), "nuc", dim=1)
    with pytest.raises(RuntimeError, match=r"^linalg\.norm: If dim is not specified but ord "
                       r"is, the input must be 1D or 2D\. Got 3D\.$"):
        LA.norm(_t(x), "fro")
    with pytest.raises(RuntimeError, match=r"^linalg\.norm: If dim is specified, it must be "
                       r"of length 1 or 2\. Got \[0, 1, 2\]$"):
        LA.norm(_t(x), 2, dim=(0, 1, 2))
    np.testing.assert_allclose(LA.norm(_t(x), "fro", dim=(0, 2)).numpy(),
                               np.sqrt((x ** 2).sum((0, 2))), rtol=1e-12)
    np.testing.assert_allclose(LA.norm(_t(x[0]), 1).numpy(), np.abs(x[0]).sum(0).max(),
                               rtol=1e-12)


def _inv_second_grad(a_np, w_np, hook):
    a = tgrad.tensor(a_np, dtype=tgrad.float64, requires_grad=True)
    x_inv = tgrad.linalg.inv(a)
    if hook:
        x_inv.register_hook(lambda g: g * 3)
    (g,) = tgrad.autograd.grad((x_inv * tgrad.tensor(w_np)).sum(), a, create_graph=True)
    (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), a)
    return g.detach().numpy(), g2.numpy()


def test_inv_backward_reads_only_its_output_as_pytorch():
    # PyTorch's linalg_inv_ex rule dA = -X^H g X^H uses the saved output X alone, so a hook
    # on X (g -> 3 g) triples the first-order gradient and every second-order path: with
    # the hook and weights w, the results are 3x those without it at weights 3 w
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    w_np = rng.standard_normal((3, 3))
    g, g2 = _inv_second_grad(a_np, w_np, hook=True)
    rg, rg2 = _inv_second_grad(a_np, 3 * w_np, hook=False)
    np.testing.assert_allclose(g, rg, rtol=1e-12)
    np.testing.assert_allclose(g2, 3 * rg2, rtol=1e-10)
    ai = np.linalg.inv(a_np)  # the first order by hand: -A^-T (3 w) A^-T
    np.testing.assert_allclose(g, -ai.T @ (3 * w_np) @ ai.T, rtol=1e-12)
    a = tgrad.tensor(a_np, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.linalg.inv(a).grad_fn.name() == "LinalgInvExBackward0"
    assert tgrad.autograd.gradgradcheck(tgrad.linalg.inv, (a,))


def test_inv_backward_does_not_save_its_input():
    # the rule reads X = A^-1 only (PyTorch saves no A): changing A in place after inv, before
    # backward, neither raises nor changes the gradient -A^-T w A^-T (A's value at the call)
    rng = np.random.default_rng(3)
    a_np = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    w_np = rng.standard_normal((3, 3))
    x = tgrad.tensor(a_np, dtype=F64, requires_grad=True)
    a = x * 1
    a_inv = tgrad.linalg.inv(a)
    a.mul_(2.0)
    (a_inv * tgrad.tensor(w_np)).sum().backward()
    ai = np.linalg.inv(a_np)
    np.testing.assert_allclose(x.grad.numpy(), -ai.T @ w_np @ ai.T, rtol=1e-12)


def test_pytorch_argument_checks_of_norms_lstsq_and_eigh():
    # PyTorch: a norm's dtype must be real for a real input and complex for a complex one
    x = tgrad.tensor(np.arange(1.0, 10.0).reshape(3, 3))
    for f in (lambda: tgrad.linalg.vector_norm(x, dtype=tgrad.complex128),
              lambda: tgrad.linalg.norm(x, dtype=tgrad.complex128),
              lambda: tgrad.linalg.matrix_norm(x, ord=2, dtype=tgrad.complex128)):
        with pytest.raises(RuntimeError, match="dtype should be real for real inputs, but got "
                           "ComplexDouble"):
            f()
    with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
        tgrad.linalg.vector_norm(x.to(tgrad.complex128), dtype=tgrad.float64)
    # lstsq: B may have one dim less than A (a batch of vectors) but not more dims
    with pytest.raises(RuntimeError, match=r"input.dim\(\) must be greater or equal to "
                       r"other.dim\(\)"):
        tgrad.linalg.lstsq(x, tgrad.ones(2, 3, 2, dtype=tgrad.float64))
    # eigh's UPLO in either case: 'u' reads the upper triangle
    a = tgrad.tensor([[2.0, 1.0], [0.0, 3.0]], dtype=tgrad.float64)
    want = np.linalg.eigvalsh(np.array([[2.0, 1.0], [1.0, 3.0]]))
    np.testing.assert_allclose(tgrad.linalg.eigvalsh(a, UPLO="u").numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(tgrad.linalg.eigvalsh(a, UPLO="l").numpy(), [2.0, 3.0],
                               rtol=1e-12)


def test_torch_norm_with_dtype_checks_as_vector_norm():
    # torch.norm's dtype= goes through linalg.vector_norm's checks (no narrowing, real for
    # real, a floating input); tgrad cast silently
    x = tgrad.tensor([3.0, 4.0])
    with pytest.raises(RuntimeError, match="without narrowing"):
        tgrad.norm(x, 2, dtype=tgrad.float16)
    with pytest.raises(RuntimeError, match="dtype should be real for real inputs"):
        tgrad.norm(x, dtype=tgrad.complex64)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        tgrad.norm(tgrad.tensor([3, 4]), dtype=tgrad.float32)
    y = tgrad.norm(x, dtype=tgrad.float64)
    assert y.dtype is tgrad.float64 and y.item() == 5.0


def test_var_std_warn_when_the_degrees_of_freedom_are_not_positive():
    # PyTorch's UserWarning (the values stay: inf or NaN)
    x = tgrad.tensor([[1.0, 2.0]], dtype=tgrad.float64)
    for call, op in ((lambda: x.var(0), "var"), (lambda: x.std(correction=3), "std"),
                     (lambda: tgrad.var_mean(x[0, :1]), "var_mean"),
                     (lambda: tgrad.std_mean(x, 0), "std_mean")):
        with pytest.warns(UserWarning, match=f"^{op}\\(\\): degrees of freedom is <= 0"):
            call()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.var(1).item() == 0.5  # (enough degrees of freedom: no warning)
