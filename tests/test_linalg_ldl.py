# ruff: noqa: N803, N806  (matrix notation: LD, L, D, P)
"""tgrad.linalg.ldl_factor / ldl_factor_ex / ldl_solve (LAPACK's sytrf / sytrs format,
uplo='L', Bunch-Kaufman pivoting). A is rebuilt from LD and pivots by an independent NumPy
reading of LAPACK's documented format (L = P(1) L(1) P(2) L(2) ..., D block diagonal) and
compared with A in float64; pivot decisions and LD checked against hand computations of
dsytf2's rules; ldl_solve against np.linalg.solve; info for singular D; the errors; no
derivatives (as PyTorch 2.13); the cuda device raises."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import linalg as LA

RNG = np.random.default_rng(7)
ALPHA = (1 + np.sqrt(17)) / 8


def _t(a, dtype=tgrad.float64):
    return tgrad.tensor(np.asarray(a, dtype=dtype.np), dtype=dtype)


def _sym(n, batch=(), zero_diag=False):
    a = RNG.standard_normal(batch + (n, n))
    a = a + np.swapaxes(a, -1, -2)
    if zero_diag:  # every leading column needs an interchange or a 2x2 block
        a[..., np.arange(n), np.arange(n)] = 0
    return a


def _rebuild(ld, piv, hermitian=False):
    """A from LAPACK's (uplo='L') LD and 1-based pivots: L D L^T (dsytrf, zsytrf) or L D L^H
    (zhetrf: a 2x2 block [[d0, conj(e)], [e, d1]], d0, d1 real). L = P(1) L(1) P(2) L(2) ...
    with s = 1 or 2 per D's block, P(k) swapping k + s - 1 with |piv[k]| - 1, L(k) the
    identity with LD's columns k..k+s-1 below the block."""
    n = len(piv)
    L, D = np.eye(n, dtype=ld.dtype), np.zeros((n, n), ld.dtype)
    k = 0
    while k < n:
        s = 1 if piv[k] > 0 else 2
        if s == 2:
            assert piv[k + 1] == piv[k], "a 2x2 block's two pivots must be equal"
        P = np.eye(n)
        P[[k + s - 1, abs(piv[k]) - 1]] = P[[abs(piv[k]) - 1, k + s - 1]]
        Lk = np.eye(n, dtype=ld.dtype)
        Lk[k + s:, k:k + s] = ld[k + s:, k:k + s]
        L = L @ P @ Lk
        D[k:k + s, k:k + s] = ld[k:k + s, k:k + s]
        e = D[k + s - 1, k]  # the 2x2 block's off-diagonal entry, mirrored
        D[k, k + s - 1] = np.conj(e) if hermitian else e
        k += s
    return L @ D @ (np.conj(L).T if hermitian else L.T)


def _check_factors(a, LD, pivots):
    ld, piv = LD.numpy(), pivots.numpy()
    assert pivots.dtype is tgrad.int32 and LD.dtype is tgrad.float64
    assert LD.shape == a.shape and pivots.shape == a.shape[:-1]
    for idx in np.ndindex(a.shape[:-2]):
        assert not np.triu(ld[idx], 1).any()  # LD's strict upper triangle is zero
        np.testing.assert_allclose(_rebuild(ld[idx], piv[idx]), a[idx], rtol=1e-12,
                                   atol=1e-12 * np.abs(a[idx]).max())


# ---- factorisation ------------------------------------------------------------------------
@pytest.mark.parametrize("n,batch,zero_diag", [(1, (), False), (2, (), True), (5, (), False),
                                               (6, (3,), True), (17, (), False),
                                               (8, (2, 2), False), (9, (), True)])
def test_ldl_factor_rebuilds_a(n, batch, zero_diag):
    a = _sym(n, batch, zero_diag)
    LD, pivots = LA.ldl_factor(_t(a))
    _check_factors(a, LD, pivots)
    res = LA.ldl_factor_ex(_t(a), hermitian=True)  # the same for real matrices
    np.testing.assert_array_equal(res.LD.numpy(), LD.numpy())
    np.testing.assert_array_equal(res.pivots.numpy(), pivots.numpy())
    assert res.info.dtype is tgrad.int32 and res.info.shape == batch
    assert not res.info.numpy().any()
    if zero_diag and n > 1:  # a11 = 0 < alpha colmax: never the 1x1 pivot without a swap
        assert (pivots.numpy()[..., 0] != 1).all()


def test_ldl_factor_pivot_rules_by_hand():
    # dominant diagonal: 1x1 blocks without interchanges, L D L^T as plain elimination
    a = np.array([[4.0, 1.0, 2.0], [1.0, 5.0, 1.0], [2.0, 1.0, 6.0]])
    LD, pivots = LA.ldl_factor(_t(a))
    np.testing.assert_array_equal(pivots.numpy(), [1, 2, 3])
    d1 = 5 - 1 / 4  # Schur complement after the first column
    l32 = (1 - 2 * 1 / 4) / d1
    d2 = 6 - 4 / 4 - l32 ** 2 * d1
    np.testing.assert_allclose(LD.numpy(), [[4, 0, 0], [1 / 4, d1, 0], [2 / 4, l32, d2]],
                               rtol=1e-15)
    # [[0, 1, 2], [1, 0, 3], [2, 3, 0]]: |a11| = 0 < alpha colmax (2, row 3), row 3's
    # rowmax 3 and |a33| = 0 < alpha 3: the 2x2 block (1, 3), rows/cols 2 and 3 swapped:
    # D1 = [[0, 2], [2, 0]], then with [x0 x1] = [1 3] (row 3 after the swap):
    # W = [x0 x1] D1^{-1} = [3/2, 1/2] and D2 = 0 - (1 * 3/2 + 3 * 1/2) = -3
    LD, pivots = LA.ldl_factor(_t([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]]))
    np.testing.assert_array_equal(pivots.numpy(), [-3, -3, 3])
    np.testing.assert_allclose(LD.numpy(), [[0, 0, 0], [2, 0, 0], [1.5, 0.5, -3]], rtol=1e-15)
    # [[1, 3], [3, 4]]: |a11| = 1 < alpha 3, rowmax = 3, |a22| = 4 >= alpha 3: a 1x1 pivot
    # with row 2 (pivots [2, 2]): D = diag(4, 1 - 9/4), L21 = 3/4
    LD, pivots = LA.ldl_factor(_t([[1.0, 3], [3, 4]]))
    np.testing.assert_array_equal(pivots.numpy(), [2, 2])
    np.testing.assert_allclose(LD.numpy(), [[4, 0], [0.75, 1 - 9 / 4]], rtol=1e-15)
    # |a11| = 2.2 >= alpha 3 (alpha ~ 0.64): no interchange
    assert 2.2 >= ALPHA * 3
    LD, pivots = LA.ldl_factor(_t([[2.2, 3], [3, 1]]))
    np.testing.assert_array_equal(pivots.numpy(), [1, 2])
    np.testing.assert_allclose(LD.numpy(), [[2.2, 0], [3 / 2.2, 1 - 9 / 2.2]], rtol=1e-15)


def test_ldl_factor_reads_the_lower_triangle_and_views():
    a = _sym(5)
    upper = a + np.triu(RNG.standard_normal((5, 5)), 1)  # garbage above the diagonal
    LD, pivots = LA.ldl_factor(_t(upper))
    _check_factors(a, LD, pivots)
    at = _t(_sym(4, (2,))).mT  # a non-contiguous view
    assert not at.is_contiguous()
    _check_factors(at.numpy(), *LA.ldl_factor(at))
    for shape in [(0, 0), (2, 0, 0)]:
        res = LA.ldl_factor_ex(_t(np.zeros(shape)))
        assert res.LD.shape == shape and res.pivots.shape == shape[:-1]
        assert res.info.shape == shape[:-2]


def test_ldl_factor_float32():
    a = _sym(7, (2,), zero_diag=True)
    LD, pivots = LA.ldl_factor(_t(a, tgrad.float32))
    assert LD.dtype is tgrad.float32 and pivots.dtype is tgrad.int32
    for i in range(2):
        np.testing.assert_allclose(_rebuild(LD.numpy()[i].astype(np.float64),
                                            pivots.numpy()[i]), a[i].astype(np.float32),
                                   atol=1e-5 * np.abs(a[i]).max())


def test_ldl_factor_ex_info_for_singular_d():
    # the zero matrix: every column zero, nothing interchanged, info = 1 (the first)
    res = LA.ldl_factor_ex(_t(np.zeros((3, 3))))
    np.testing.assert_array_equal(res.pivots.numpy(), [1, 2, 3])
    assert int(res.info.numpy()) == 1 and not res.LD.numpy().any()
    # [[1, 2], [2, 4]] (rank 1): a 1x1 pivot with row 2 (|a22| = 4 >= alpha 2), then
    # D[2, 2] = 1 - 2 * 2 / 4 = 0 exactly: info = 2, LD = [[4, 0], [1/2, 0]]
    res = LA.ldl_factor_ex(_t([[1.0, 2], [2, 4]]))
    np.testing.assert_array_equal(res.pivots.numpy(), [2, 2])
    np.testing.assert_array_equal(res.LD.numpy(), [[4, 0], [0.5, 0]])
    assert int(res.info.numpy()) == 2
    eyes = np.stack([np.eye(3)] * 3)
    eyes[1, 2, 2] = 0
    res = LA.ldl_factor_ex(_t(eyes))
    np.testing.assert_array_equal(res.info.numpy(), [0, 3, 0])
    np.testing.assert_array_equal(res.LD.numpy(), eyes)
    with pytest.raises(RuntimeError, match=r"ldl_factor: \(Batch element 1\): .*D is exactly "
                                           r"singular.*element 3 is zero"):
        LA.ldl_factor(_t(eyes))
    with pytest.raises(RuntimeError, match=r"torch.linalg.ldl_factor_ex: The factorization "
                                           r"has been completed.*element 2"):
        LA.ldl_factor_ex(_t([[1.0, 2], [2, 4]]), check_errors=True)


# ---- solve --------------------------------------------------------------------------------
@pytest.mark.parametrize("n,batch,zero_diag", [(1, (), False), (4, (), True), (6, (2,), False),
                                               (9, (2, 3), True), (17, (), True)])
def test_ldl_solve_matches_numpy(n, batch, zero_diag):
    a = _sym(n, batch, zero_diag)
    b = RNG.standard_normal(batch + (n, 3))
    LD, pivots = LA.ldl_factor(_t(a))
    want = np.linalg.solve(a, b)
    scale = max(1.0, np.abs(want).max())
    for herm in (False, True):
        X = LA.ldl_solve(LD, pivots, _t(b), hermitian=herm)
        assert X.shape == batch + (n, 3) and X.dtype is tgrad.float64
        np.testing.assert_allclose(X.numpy(), want, rtol=1e-10, atol=1e-10 * scale)


def test_ldl_solve_broadcasts_and_float32():
    a = _sym(5, (2,), zero_diag=True)
    LD, pivots = LA.ldl_factor(_t(a))
    b = RNG.standard_normal((5, 2))  # one B for the batch of two
    np.testing.assert_allclose(LA.ldl_solve(LD, pivots, _t(b)).numpy(), np.linalg.solve(a, b),
                               rtol=1e-10, atol=1e-10)
    b = RNG.standard_normal((3, 1, 5, 2))  # batch (3, 1) with (2,)
    X = LA.ldl_solve(LD, pivots, _t(b))
    assert X.shape == (3, 2, 5, 2)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)
    X = LA.ldl_solve(LD[0], pivots[0].to(tgrad.int64), _t(b))  # int64 pivots too
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(a[0], b), rtol=1e-10, atol=1e-10)
    f = tgrad.float32
    LD32, piv32 = LA.ldl_factor(_t(a, f))
    X = LA.ldl_solve(LD32, piv32, _t(b[0, 0], f))
    assert X.dtype is f
    want = np.linalg.solve(a, b[0, 0])
    np.testing.assert_allclose(X.numpy(), want, rtol=1e-3, atol=1e-4 * np.abs(want).max())
    assert LA.ldl_solve(_t(np.zeros((0, 0))), tgrad.zeros(0, dtype=tgrad.int32),
                        _t(np.zeros((0, 2)))).shape == (0, 2)


# ---- complex: zsytf2 (symmetric, A = A^T) and zhetf2 (hermitian=True, A = A^H) ----------
def _cx_sym(n, batch=(), hermitian=False, zero_diag=False):
    a = RNG.standard_normal(batch + (n, n)) + 1j * RNG.standard_normal(batch + (n, n))
    a = a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2))
    if zero_diag:
        a[..., np.arange(n), np.arange(n)] = 0
    return a


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("n,batch,zero_diag", [(1, (), False), (2, (), True), (5, (), False),
                                               (6, (2,), True), (11, (), True)])
def test_ldl_factor_complex_rebuilds_a(n, batch, zero_diag, hermitian):
    a = _cx_sym(n, batch, hermitian, zero_diag)
    LD, pivots = LA.ldl_factor(_t(a, tgrad.complex128), hermitian=hermitian)
    assert LD.dtype is tgrad.complex128 and pivots.dtype is tgrad.int32
    assert LD.shape == a.shape and pivots.shape == a.shape[:-1]
    ld, piv = LD.numpy(), pivots.numpy()
    for idx in np.ndindex(batch):
        assert not np.triu(ld[idx], 1).any()
        if hermitian:  # zhetrf's D has a real diagonal
            assert not np.diagonal(ld[idx]).imag.any()
        np.testing.assert_allclose(_rebuild(ld[idx], piv[idx], hermitian), a[idx],
                                   rtol=1e-12, atol=1e-12 * np.abs(a[idx]).max())
    if zero_diag and n > 1:
        assert (piv[..., 0] != 1).all()


def test_ldl_complex_pivots_by_hand():
    # zsytf2 sizes entries by CABS1 = |Re| + |Im|: |1+1j|_1 = 2 >= alpha 2.5 ~ 1.60 keeps
    # the 1x1 pivot without interchange (|1+1j| = 1.41 < 1.60 would have swapped)
    a = np.array([[1 + 1j, 2.5], [2.5, 0.1]])
    LD, pivots = LA.ldl_factor(_t(a, tgrad.complex128))
    np.testing.assert_array_equal(pivots.numpy(), [1, 2])
    l21 = 2.5 / (1 + 1j)
    np.testing.assert_allclose(LD.numpy(), [[1 + 1j, 0], [l21, 0.1 - 2.5 * l21]], rtol=1e-15)
    # zhetf2: |Re a11| = 1 < alpha |1-1j|_1 = 1.28, rowmax 2, |a22| = 3 >= alpha 2: a 1x1
    # pivot with row 2; the swapped P A P = [[3, 1-1j], [1+1j, 1]] has L21 = (1+1j) / 3
    # and D2 = 1 - |1+1j|^2 / 3
    a = np.array([[1, 1 + 1j], [1 - 1j, 3]])
    LD, pivots = LA.ldl_factor(_t(a, tgrad.complex128), hermitian=True)
    np.testing.assert_array_equal(pivots.numpy(), [2, 2])
    np.testing.assert_allclose(LD.numpy(), [[3, 0], [(1 + 1j) / 3, 1 - 2 / 3]], rtol=1e-15)
    # the same matrix read as symmetric (its lower triangle mirrored: [[1, 1-1j], [1-1j, 3]])
    # with |a11|_1 = 1 < 1.28, |a22|_1 = 3 >= 1.28: the same swap, no conjugation
    LD, pivots = LA.ldl_factor(_t(a, tgrad.complex128))
    np.testing.assert_array_equal(pivots.numpy(), [2, 2])
    np.testing.assert_allclose(LD.numpy(), [[3, 0], [(1 - 1j) / 3, 1 - (1 - 1j) ** 2 / 3]],
                               rtol=1e-15)
    # hermitian: only Re of A's diagonal is read (zhetrf), and the upper triangle never
    h = _cx_sym(5, hermitian=True, zero_diag=True)
    junk = np.tril(h) + np.triu(_cx_sym(5), 1) + 1j * np.diag(RNG.standard_normal(5))
    LD, pivots = LA.ldl_factor(_t(junk, tgrad.complex128), hermitian=True)
    np.testing.assert_allclose(_rebuild(LD.numpy(), pivots.numpy(), True), h, rtol=1e-12,
                               atol=1e-12 * np.abs(h).max())


@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_solve_complex_matches_numpy(hermitian):
    a = _cx_sym(7, (2,), hermitian, zero_diag=True)
    b = RNG.standard_normal((2, 7, 3)) + 1j * RNG.standard_normal((2, 7, 3))
    LD, pivots = LA.ldl_factor(_t(a, tgrad.complex128), hermitian=hermitian)
    X = LA.ldl_solve(LD, pivots, _t(b, tgrad.complex128), hermitian=hermitian)
    want = np.linalg.solve(a, b)
    assert X.dtype is tgrad.complex128 and X.shape == (2, 7, 3)
    np.testing.assert_allclose(X.numpy(), want, rtol=1e-10, atol=1e-10 * np.abs(want).max())
    c64 = tgrad.complex64  # complex64: csytrf / chetrf, to single precision
    LD, pivots = LA.ldl_factor(_t(a, c64), hermitian=hermitian)
    assert LD.dtype is c64
    X = LA.ldl_solve(LD, pivots, _t(b, c64), hermitian=hermitian)
    assert X.dtype is c64
    np.testing.assert_allclose(X.numpy(), want, atol=1e-3 * np.abs(want).max())


def test_ldl_complex_errors_and_no_derivatives():
    z = _t(_cx_sym(3), tgrad.complex128)
    LD, pivots = LA.ldl_factor(z)
    with pytest.raises(RuntimeError, match="found b of type Double and A of type ComplexDouble"):
        LA.ldl_solve(LD, pivots, _t(np.zeros((3, 1))))
    with pytest.raises(RuntimeError, match="found b of type ComplexDouble and A of type Double"):
        LA.ldl_solve(LD.real, pivots, _t(np.zeros((3, 1)), tgrad.complex128))
    z.requires_grad_(True)
    LD, pivots = LA.ldl_factor(z, hermitian=True)
    assert LD.requires_grad
    with pytest.raises(NotImplementedError,
                       match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        LD.abs().sum().backward()
    B = _t(np.ones((3, 2)), tgrad.complex128).requires_grad_(True)
    with pytest.raises(NotImplementedError,
                       match="derivative for aten::linalg_ldl_solve is not implemented"):
        LA.ldl_solve(LD.detach(), pivots, B).abs().sum().backward()


# ---- errors, no derivatives, cuda ---------------------------------------------------------
def test_ldl_errors():
    with pytest.raises(RuntimeError, match="ldl_factor_ex: A must be batches of square "
                                           "matrices, but they are 3 by 4 matrices"):
        LA.ldl_factor(_t(np.zeros((3, 4))))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        LA.ldl_factor(_t(np.zeros(3)))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as "
                                           "input. Got Long"):
        LA.ldl_factor(tgrad.ones(3, 3, dtype=tgrad.int64))
    with pytest.raises(NotImplementedError, match="\"ldl_factor_kernel_cpu\" not implemented "
                                                  "for 'Half'"):
        LA.ldl_factor(tgrad.ones(3, 3, dtype=tgrad.float16))
    with pytest.raises(TypeError, match="must be Tensor"):
        LA.ldl_factor(np.eye(3))
    LD, pivots = LA.ldl_factor(_t(_sym(3, (2,))))
    b = _t(np.zeros((2, 3, 2)))
    with pytest.raises(RuntimeError, match="each A matrix is 3 by 3 but each b matrix is 4 by 2"):
        LA.ldl_solve(LD, pivots, _t(np.zeros((2, 4, 2))))
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        LA.ldl_solve(LD, pivots, _t(np.zeros(3)))
    with pytest.raises(RuntimeError, match="pivots with shape \\[2, 2\\]"):
        LA.ldl_solve(LD, pivots[:, :2], b)
    with pytest.raises(RuntimeError, match="pivots with shape \\[3\\]"):
        LA.ldl_solve(LD, pivots[0], b)
    with pytest.raises(RuntimeError, match="but they are 3 by 2 matrices"):
        LA.ldl_solve(LD[..., :2], pivots, b)
    with pytest.raises(RuntimeError, match="found b of type Float and A of type Double"):
        LA.ldl_solve(LD, pivots, b.float())
    with pytest.raises(RuntimeError, match="Expected pivots to be integers"):
        LA.ldl_solve(LD, pivots.double(), b)
    with pytest.raises(RuntimeError, match="pivots must be ldl_factor's"):
        LA.ldl_solve(LD, pivots * 0, b)
    with pytest.raises(RuntimeError, match="negative pivot -3 at 2 is not one of an equal pair"):
        LA.ldl_solve(LD[0], _t([1, 2, -3], tgrad.int32), b[0])


def test_ldl_has_no_derivatives_as_pytorch():
    A = _t(_sym(3))
    A.requires_grad_(True)
    LD, pivots = LA.ldl_factor(A)
    assert LD.requires_grad and not pivots.requires_grad
    with pytest.raises(NotImplementedError,
                       match="derivative for aten::linalg_ldl_factor_ex is not implemented"):
        LD.sum().backward()
    B = _t(RNG.standard_normal((3, 2)))
    B.requires_grad_(True)
    X = LA.ldl_solve(LD.detach(), pivots, B)
    assert X.requires_grad
    with pytest.raises(NotImplementedError,
                       match="derivative for aten::linalg_ldl_solve is not implemented"):
        X.sum().backward()


def test_ldl_on_cuda_raises_a_clear_error():
    from interpreted import run_json

    out = run_json("""
import json, tgrad
from tgrad import linalg as LA
A = tgrad.eye(3, device="cuda")
msgs = []
for f in (lambda: LA.ldl_factor(A), lambda: LA.ldl_solve(A, tgrad.ones(3, dtype=tgrad.int32),
                                                          tgrad.ones(3, 1))):
    try:
        f()
        msgs.append("")
    except NotImplementedError as e:
        msgs.append(str(e))
print(json.dumps(msgs))
""")
    assert "ldl_factor_ex: not implemented on the cuda device" in out[0]
    assert "ldl_solve: not implemented on the cuda device" in out[1]
