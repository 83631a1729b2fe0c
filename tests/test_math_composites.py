"""tgrad/ops/distances.py, mathcomposites.py and statistics.py against NumPy float64
references written here (or NumPy's own functions), with odd sizes, broadcasting,
non-contiguous inputs, empty tensors, PyTorch's errors, and gradcheck/gradgradcheck in
float64 for the differentiable ops."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest
from float64_checks import checks as _checks
from float64_checks import leaf as _leaf
from float64_checks import same
from float64_checks import t as _t
from float64_checks import to_numpy as _np

import tgrad

RNG = np.random.default_rng(2024)
INF = math.inf


_same = functools.partial(same, atol=1e-12)  # this file's default atol


def _randn(*shape) -> np.ndarray:
    return RNG.standard_normal(shape)


# ------------------------------------------------------------------------------ references
def _pnorm(d: np.ndarray, p: float) -> np.ndarray:
    a = np.abs(d)
    if p == 0:
        return (a != 0).sum(-1).astype(d.dtype)
    if p == INF:
        return a.max(-1, initial=0.0)
    return (a ** p).sum(-1) ** (1.0 / p)


def _cdist_ref(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    return _pnorm(a[..., :, None, :] - b[..., None, :, :], p)


# ------------------------------------------------------------------------------ cdist
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, INF])
@pytest.mark.parametrize("sizes", [(1, 1, 1), (17, 5, 3), (4, 33, 17)])
def test_cdist_values(p, sizes):
    n, m, k = sizes
    a, b = _randn(n, k), _randn(m, k)
    _same(tgrad.cdist(_t(a), _t(b), p), _cdist_ref(a, b, p))


def test_cdist_batched_broadcast_and_non_contiguous():
    a, b = _randn(2, 1, 5, 3), _randn(4, 7, 3)
    _same(tgrad.cdist(_t(a), _t(b)), _cdist_ref(a, b, 2.0))
    # transposed views: (3, 5) -> (5, 3)
    at, bt = _randn(3, 5), _randn(3, 6)
    _same(tgrad.cdist(_t(at).t(), _t(bt).t(), 1.0), _cdist_ref(at.T, bt.T, 1.0))
    assert tgrad.cdist(_t(a).float(), _t(b).float()).dtype is tgrad.float32


def test_cdist_empty():
    assert tgrad.cdist(tgrad.zeros(0, 3), tgrad.zeros(4, 3)).shape == (0, 4)
    assert tgrad.cdist(tgrad.zeros(2, 0, 3), tgrad.zeros(2, 4, 3)).shape == (2, 0, 4)
    _same(tgrad.cdist(_t(np.zeros((2, 0))), _t(np.zeros((3, 0)))), np.zeros((2, 3)))
    for p in (0.0, 1.0, 3.0, INF):  # M = 0: every distance is 0, the inf norm included
        _same(tgrad.cdist(_t(np.zeros((2, 0))), _t(np.zeros((3, 0))), p), np.zeros((2, 3)))


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, 0.5, INF])
def test_cdist_gradients(p):
    a, b = _leaf(_randn(2, 3, 4)), _leaf(_randn(1, 5, 4))
    _checks(lambda x, y: tgrad.cdist(x, y, p), a, b)


def test_cdist_zero_distance_gradient_is_zero():
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    tgrad.cdist(x, x.detach()).sum().backward()
    d = _np(x)[:, None] - _np(x)[None]
    r = np.sqrt((d ** 2).sum(-1, keepdims=True))
    want = np.where(r > 0, d / np.where(r > 0, r, 1.0), 0.0).sum(1)
    _same(x.grad, want)


def test_cdist_errors():
    with pytest.raises(RuntimeError, match="cdist only supports at least 2D tensors, X1 got: 1D"):
        tgrad.cdist(tgrad.zeros(3), tgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns. "
                                           "X1: 3 X2: 4"):
        tgrad.cdist(tgrad.zeros(2, 3), tgrad.zeros(2, 4))
    with pytest.raises(RuntimeError, match="cdist only supports floating-point dtypes, X2 "
                                           "got: int64"):
        tgrad.cdist(tgrad.zeros(2, 3), tgrad.zeros(2, 3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        tgrad.cdist(tgrad.zeros(2, 3), tgrad.zeros(2, 3), -1.0)
    with pytest.raises(RuntimeError, match="cdist: expected scalar type float32 but found float64"):
        tgrad.cdist(tgrad.zeros(2, 3), tgrad.zeros(2, 3, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match=r"cdist: The size of tensor a \(2\) must match the "
                                           r"size of tensor b \(3\) at non-singleton dimension 0"):
        tgrad.cdist(tgrad.zeros(2, 4, 3), tgrad.zeros(3, 4, 3))
    with pytest.raises(ValueError, match="bad is not a valid value for compute_mode"):
        tgrad.cdist(tgrad.zeros(2, 3), tgrad.zeros(2, 3), compute_mode="bad")


# ------------------------------------------------------------------------------ pairwise / pdist
@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, INF, 0.0])
@pytest.mark.parametrize("n", [1, 17, 33])
def test_pairwise_distance_values_broadcast(p, n):
    a, b = _randn(n, 5), _randn(5)
    want = _pnorm(a - b + 1e-6, p)
    _same(tgrad.nn.functional.pairwise_distance(_t(a), _t(b), p), want)
    _same(tgrad.pairwise_distance(_t(a), _t(b), p, keepdim=True), want[:, None])


def test_pairwise_distance_non_contiguous_empty_0d_and_gradients():
    a, b = _randn(4, 3), _randn(3, 4)
    _same(tgrad.pairwise_distance(_t(a).t(), _t(b), eps=0.0), _pnorm(a.T - b, 2.0))
    assert tgrad.pairwise_distance(tgrad.zeros(0, 3), tgrad.zeros(0, 3)).shape == (0,)
    _same(tgrad.pairwise_distance(_t(3.0), _t(1.0)), np.float64(2.0 + 1e-6))
    _checks(lambda x, y: tgrad.pairwise_distance(x, y, 3.0), _leaf(_randn(3, 5)),
            _leaf(_randn(5)))
    with pytest.raises(RuntimeError, match=r"pairwise_distance: The size of tensor a \(3\) "
                                           r"must match the size of tensor b \(4\)"):
        tgrad.pairwise_distance(tgrad.zeros(2, 3), tgrad.zeros(2, 4))


def _pdist_ref(x: np.ndarray, p: float) -> np.ndarray:
    n = x.shape[0]
    rows = [_pnorm(x[i] - x[j], p) for i in range(n) for j in range(i + 1, n)]
    return np.array(rows, dtype=np.float64).reshape(-1)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, INF])
@pytest.mark.parametrize("n", [1, 17, 33])
def test_pdist_values(p, n):
    x = _randn(n, 3)
    _same(tgrad.pdist(_t(x), p), _pdist_ref(x, p))
    _same(tgrad.nn.functional.pdist(_t(x.T.copy()).t(), p), _pdist_ref(x, p))


def test_pdist_empty_gradients_and_errors():
    assert tgrad.pdist(tgrad.zeros(0, 3)).shape == (0,)
    _same(tgrad.pdist(_t(np.zeros((3, 0)))), np.zeros(3))
    _same(tgrad.pdist(_t(np.zeros((3, 0))), INF), np.zeros(3))  # M = 0, the inf norm too
    _checks(lambda x: tgrad.pdist(x, 2.0), _leaf(_randn(5, 3)))
    _checks(lambda x: tgrad.pdist(x, 1.5), _leaf(_randn(4, 2)))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        tgrad.pdist(tgrad.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        tgrad.pdist(tgrad.zeros(2, 2), -2.0)
    with pytest.raises(RuntimeError, match="pdist only supports floating-point dtypes"):
        tgrad.pdist(tgrad.zeros(2, 2, dtype=tgrad.int64))


def test_cosine_similarity_top_level_name():
    a, b = _randn(17, 3), _randn(1, 3)
    want = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    _same(tgrad.cosine_similarity(_t(a), _t(b)), want)
    assert tgrad.cosine_similarity is tgrad.nn.functional.cosine_similarity


# ------------------------------------------------------------------------------ cross
@pytest.mark.parametrize("n", [1, 17, 33])
def test_cross_values_broadcast_and_dims(n):
    a, b = _randn(n, 3), _randn(1, 3)
    _same(tgrad.cross(_t(a), _t(b), dim=1), np.cross(a, b, axis=1))
    c, d = _randn(3, n, 2), _randn(3, n, 2)
    _same(tgrad.cross(_t(c), _t(d), dim=0), np.cross(c, d, axis=0))
    _same(_t(c).cross(_t(d), -3), np.cross(c, d, axis=0))


def test_cross_default_dim_non_contiguous_ints_empty_and_gradients():
    a, b = _randn(3, 4), _randn(3, 4)
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        got = tgrad.cross(_t(a).t(), _t(b).t())  # (4, 3): the first dim of size 3 is 1
    _same(got, np.cross(a.T, b.T, axis=1))
    ia, ib = RNG.integers(-5, 5, (2, 3)), RNG.integers(-5, 5, (2, 3))
    _same(tgrad.cross(_t(ia), _t(ib), dim=1), np.cross(ia, ib, axis=1))
    assert tgrad.cross(tgrad.zeros(0, 3), tgrad.zeros(0, 3), dim=1).shape == (0, 3)
    _checks(lambda x, y: tgrad.cross(x, y, dim=-1), _leaf(_randn(2, 3)), _leaf(_randn(1, 3)))


def test_cross_errors():
    with pytest.raises(RuntimeError, match="inputs dimension 1 must have length 3. Got 4 and 4"):
        tgrad.cross(tgrad.zeros(2, 4), tgrad.zeros(2, 4), dim=1)
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        tgrad.cross(tgrad.zeros(2, 3), tgrad.zeros(3), dim=-1)
    with pytest.raises(RuntimeError, match="no dimension of size 3 in input"), \
            pytest.warns(UserWarning):
        tgrad.cross(tgrad.zeros(2, 4), tgrad.zeros(2, 4))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(2\) must match"):
        tgrad.cross(tgrad.zeros(2, 3), tgrad.zeros(4, 3), dim=1)
    with pytest.raises(RuntimeError, match="cross: expected scalar type int64 but found "
                                           "float32"):
        tgrad.cross(tgrad.tensor([[1, 2, 3]]), tgrad.zeros(1, 3), dim=1)
    with pytest.raises(NotImplementedError, match="\"cross\" not implemented for 'Bool'"):
        tgrad.cross(tgrad.zeros(1, 3, dtype=tgrad.bool), tgrad.zeros(1, 3, dtype=tgrad.bool),
                    dim=1)


# ------------------------------------------------------------------------------ block_diag
def _block_diag_ref(*blocks) -> np.ndarray:
    bs = [np.asarray(b).reshape(1, -1) if np.ndim(b) < 2 else np.asarray(b) for b in blocks]
    out = np.zeros((sum(b.shape[0] for b in bs), sum(b.shape[1] for b in bs)),
                   dtype=np.result_type(*bs))
    r = c = 0
    for b in bs:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def test_block_diag_values_dtypes_and_empty():
    a, b, c = _randn(17, 1), _randn(3), np.float64(2.5)
    _same(tgrad.block_diag(_t(a), _t(b), _t(c)), _block_diag_ref(a, b, c))
    d = _randn(5, 33)
    _same(tgrad.block_diag(_t(d).t(), _t(a)), _block_diag_ref(d.T, a))  # non-contiguous
    ints = RNG.integers(0, 9, (2, 2))
    got = tgrad.block_diag(_t(ints), _t(b))
    assert got.dtype is tgrad.float64
    _same(got, _block_diag_ref(ints, b))
    _same(tgrad.block_diag(_t(ints)), ints)
    _same(tgrad.block_diag(_t(np.zeros(0)), _t(a)), _block_diag_ref(np.zeros((1, 0)), a))
    assert tgrad.block_diag().shape == (1, 0)
    _checks(lambda x, y, z: tgrad.block_diag(x, y, z), _leaf(_randn(2, 3)), _leaf(_randn(2)),
            _leaf(1.5))
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or "
                                           "fewer dimensions. Input 1 has 3 dimensions"):
        tgrad.block_diag(tgrad.zeros(2), tgrad.zeros(1, 2, 3))


def test_block_diag_is_pytorchs_one_node_on_the_cpu():
    # one BlockDiagBackward0 on the leaves; d block = g's window (reshaped to the block)
    a, b, c, e = _leaf(_randn(2, 3)), _leaf(_randn(4)), _leaf(1.5), _leaf(np.zeros((0, 2)))
    y = tgrad.block_diag(a, b, c, e)
    assert y.grad_fn.name() == "BlockDiagBackward0" and y.shape == (4, 10)
    assert [n.name() for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad"] * 4
    g = _randn(4, 10)
    ga, gb, gc, ge = tgrad.autograd.grad(y, (a, b, c, e), _t(g))
    np.testing.assert_array_equal(ga.numpy(), g[:2, :3])
    np.testing.assert_array_equal(gb.numpy(), g[2, 3:7])
    assert gc.shape == () and gc.item() == g[3, 7] and ge.shape == (0, 2)
    for dt in (tgrad.bool, tgrad.float16, tgrad.bfloat16, tgrad.int32):
        blocks = [_t(_randn(3, 2)).to(dt), _t(_randn(5)).to(dt)]
        want = _block_diag_ref(*[b.float().numpy() for b in blocks])
        got = tgrad.block_diag(*blocks)
        assert got.dtype is dt
        np.testing.assert_array_equal(got.float().numpy(), want)


# ------------------------------------------------------------------------------ cartesian_prod
def test_cartesian_prod_values_empty_and_gradients():
    a, b, c = _randn(17), _randn(1), _randn(3)
    want = np.array(list(itertools.product(a, b, c)))
    _same(tgrad.cartesian_prod(_t(a), _t(b), _t(c)), want)
    m = _randn(4, 3)
    _same(tgrad.cartesian_prod(_t(m)[:, 1], _t(a)), np.array(list(itertools.product(m[:, 1], a))))
    single = _t(a)
    assert tgrad.cartesian_prod(single) is single  # PyTorch returns the tensor itself
    assert tgrad.cartesian_prod(_t(a), tgrad.zeros(0, dtype=tgrad.float64)).shape == (0, 2)
    ints = tgrad.cartesian_prod(tgrad.tensor([1, 2]), tgrad.tensor([3]))
    assert ints.dtype is tgrad.int64 and ints.tolist() == [[1, 3], [2, 3]]
    _checks(lambda x, y: tgrad.cartesian_prod(x, y) ** 2, _leaf(_randn(3)), _leaf(_randn(2)))
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 3\]"):
        tgrad.cartesian_prod(tgrad.zeros(2), tgrad.zeros(2, 3))
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same "
                                           "dtype"):
        tgrad.cartesian_prod(tgrad.tensor([1, 2]), tgrad.zeros(2))


# ------------------------------------------------------------------------------ combinations
@pytest.mark.parametrize("n, r", [(1, 2), (17, 2), (7, 3), (33, 1), (4, 4), (3, 5)])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations_values(n, r, with_replacement):
    x = _randn(n)
    make = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    want = np.array(list(make(x, r)), dtype=np.float64).reshape(-1, r)
    _same(tgrad.combinations(_t(x), r, with_replacement), want)


def test_combinations_edge_cases_gradients_and_errors():
    x = _randn(6)
    _same(tgrad.combinations(_t(x)[::2]), np.array(list(itertools.combinations(x[::2], 2))))
    got = tgrad.combinations(_t(x), 0)
    assert got.shape == (0,) and got.dtype is tgrad.float64
    assert tgrad.combinations(tgrad.zeros(0)).shape == (0, 2)
    assert tgrad.combinations(tgrad.tensor([1, 2, 3])).tolist() == [[1, 2], [1, 3], [2, 3]]
    _checks(lambda t: tgrad.combinations(t, 2, True) ** 2, _leaf(_randn(4)))
    with pytest.raises(RuntimeError, match=r"Expect a 1D vector, but got shape \[2, 2\]"):
        tgrad.combinations(tgrad.zeros(2, 2))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        tgrad.combinations(tgrad.zeros(2), -1)


# ------------------------------------------------------------------------------ addr
@pytest.mark.parametrize("n, m", [(1, 1), (17, 5), (3, 33)])
def test_addr_values_broadcast(n, m):
    inp, u, v = _randn(n, m), _randn(n), _randn(m)
    _same(tgrad.addr(_t(inp), _t(u), _t(v)), inp + np.outer(u, v))
    _same(_t(inp).addr(_t(u), _t(v), beta=0.5, alpha=-2.0), 0.5 * inp - 2.0 * np.outer(u, v))
    row = _randn(m)
    _same(tgrad.addr(_t(row), _t(u), _t(v), alpha=3), row + 3 * np.outer(u, v))


def test_addr_beta_zero_non_contiguous_ints_gradients_and_errors():
    inp = np.full((2, 3), np.nan)
    u, v = _randn(2), _randn(3)
    _same(tgrad.addr(_t(inp), _t(u), _t(v), beta=0), np.outer(u, v))
    m = _randn(3, 2)
    _same(tgrad.addr(_t(m).t(), _t(m)[:2, 0], _t(v)), m.T + np.outer(m[:2, 0], v))
    iu, iv = RNG.integers(-4, 4, 3), RNG.integers(-4, 4, 2)
    got = tgrad.addr(tgrad.zeros(3, 2, dtype=tgrad.int64), _t(iu), _t(iv), alpha=2)
    assert got.dtype is tgrad.int64
    _same(got, 2 * np.outer(iu, iv))
    assert tgrad.addr(tgrad.zeros(0, 3), tgrad.zeros(0), tgrad.zeros(3)).shape == (0, 3)
    _checks(lambda a, b, c: tgrad.addr(a, b, c, beta=0.7, alpha=1.3), _leaf(_randn(3)),
            _leaf(_randn(2)), _leaf(_randn(3)))
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        tgrad.addr(tgrad.zeros(2, 2), tgrad.zeros(2, 1), tgrad.zeros(2))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument beta must "
                                           "not be a floating point number."):
        tgrad.addr(tgrad.zeros(2, 2, dtype=tgrad.int64), tgrad.tensor([1, 2]),
                   tgrad.tensor([1, 2]), beta=0.5)
    with pytest.raises(RuntimeError, match=r"addr: the input of shape \[3, 3\] can't be "
                                           r"expanded"):
        tgrad.addr(tgrad.zeros(3, 3), tgrad.zeros(2), tgrad.zeros(3))



def test_addr_bool_and_complex_scalars():
    """PyTorch: bool addr is (beta and input) or (alpha and vec1 vec2^T); a bool vector with
    an int input promotes; complex tensors take float (and complex) beta / alpha."""
    inp = np.array([[True, False], [False, True]])
    u, v = np.array([True, False]), np.array([False, True])
    outer = np.outer(u, v)
    got = tgrad.addr(tgrad.tensor(inp), tgrad.tensor(u), tgrad.tensor(v))
    assert got.dtype is tgrad.bool and got.tolist() == (inp | outer).tolist()
    got = tgrad.addr(tgrad.tensor(inp), tgrad.tensor(u), tgrad.tensor(v), beta=0)
    assert got.tolist() == outer.tolist()
    got = tgrad.addr(tgrad.tensor(inp), tgrad.tensor(u), tgrad.tensor(v), alpha=False)
    assert got.tolist() == inp.tolist()
    got = tgrad.addr(tgrad.tensor(inp.astype(np.int32)), tgrad.tensor(u), tgrad.tensor(v))
    assert got.dtype is tgrad.int32 and got.tolist() == (inp + outer).astype(int).tolist()
    c = _randn(2, 3) + 1j * _randn(2, 3)
    a, b = _randn(2) + 1j * _randn(2), _randn(3) + 1j * _randn(3)
    want = 0.5 * c + (2 - 1j) * np.outer(a, b)
    _same(tgrad.addr(_t(c), _t(a), _t(b), beta=0.5, alpha=2 - 1j), want)
    m1, m2 = _randn(2, 4) + 1j * _randn(2, 4), _randn(4, 3)
    want = 1.5 * c + 0.25 * (m1 @ m2)
    _same(tgrad.addmm(_t(c), _t(m1), _t(m2).to(tgrad.complex128), beta=1.5, alpha=0.25), want)
    _same(tgrad.addmv(_t(c[:, 0]), _t(m1), _t(m2[:, 0]).to(tgrad.complex128), beta=0.5,
                      alpha=2.0), 0.5 * c[:, 0] + 2.0 * (m1 @ m2[:, 0]))
    _same(tgrad.baddbmm(_t(c), _t(m1[None]), _t(m2[None]).to(tgrad.complex128), beta=0.5),
          0.5 * c + (m1 @ m2)[None])
    _checks(lambda x, y, z: tgrad.addmm(x, y, z, beta=0.7, alpha=1.3), _leaf(c),
            _leaf(m1), _leaf(m2 + 0j))

# ------------------------------------------------------------------------------ chain_matmul
def test_chain_matmul_values_order_gradients_and_errors():
    ms = [_randn(17, 1), _randn(1, 33), _randn(33, 5), _randn(5, 3)]
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        got = tgrad.chain_matmul(*[_t(m) for m in ms])
    _same(got, np.linalg.multi_dot(ms), rtol=1e-10)
    with pytest.warns(UserWarning):
        one = tgrad.chain_matmul(_t(ms[0]))
        _same(one, ms[0])
        a = _randn(4, 3)
        _same(tgrad.chain_matmul(_t(a).t(), _t(a)), a.T @ a, rtol=1e-10)  # non-contiguous
        _same(tgrad.chain_matmul(tgrad.zeros(2, 0), tgrad.zeros(0, 3)), np.zeros((2, 3)))
        _checks(lambda x, y, z: tgrad.chain_matmul(x, y, z), _leaf(_randn(2, 3)),
                _leaf(_randn(3, 1)), _leaf(_randn(1, 2)))
        with pytest.raises(RuntimeError, match=r"tensors 0 and 1 with shapes \[2, 3\] and "
                                               r"\[4, 5\] cannot be multiplied"):
            tgrad.chain_matmul(tgrad.zeros(2, 3), tgrad.zeros(4, 5))
        with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor, but got "
                                               "3-dimensional tensor for argument #2"):
            tgrad.chain_matmul(tgrad.zeros(2, 3), tgrad.zeros(3, 4, 5))
        with pytest.raises(RuntimeError, match="Expected one or more matrices"):
            tgrad.chain_matmul()


def test_chain_matmul_picks_the_cheapest_bracketing():
    from tgrad.ops.mathcomposites import _chain_order
    # (10x30)(30x5)(5x60): (AB)C costs 4500, A(BC) 27000
    assert _chain_order([10, 30, 5, 60])[0][2] == 1
    assert _chain_order([40, 5, 30, 2])[0][2] == 0  # A(BC)


# ------------------------------------------------------------------------------ trapezoid
@pytest.mark.parametrize("n", [1, 2, 17, 33])
def test_trapezoid_values(n):
    y = _randn(3, n)
    _same(tgrad.trapezoid(_t(y)), np.trapezoid(y, axis=-1))
    _same(tgrad.trapz(_t(y), dx=0.25), np.trapezoid(y, dx=0.25, axis=-1))
    x = np.cumsum(RNG.random(n))
    _same(tgrad.trapezoid(_t(y), _t(x)), np.trapezoid(y, x, axis=-1))
    _same(tgrad.trapezoid(_t(y.T.copy()).t(), _t(x), dim=1), np.trapezoid(y, x, axis=1))
    _same(tgrad.trapezoid(_t(y), dim=0), np.trapezoid(y, axis=0))


def test_trapezoid_x_broadcast_empty_ints_gradients_and_errors():
    y, x = _randn(4, 5), _randn(4, 5)
    _same(tgrad.trapezoid(_t(y), _t(x), dim=0), np.trapezoid(y, x, axis=0))
    x2 = _randn(5)  # 1-D x along dim 1
    _same(tgrad.trapezoid(_t(y), _t(x2[None, :])), np.trapezoid(y, x2[None, :], axis=-1))
    _same(tgrad.trapezoid(_t(np.zeros((3, 0)))), np.zeros(3))
    iy = RNG.integers(-5, 5, (2, 6))
    _same(tgrad.trapezoid(_t(iy), dx=2), np.trapezoid(iy.astype(np.float64), dx=2, axis=-1),
          rtol=1e-6)
    _checks(lambda a, b: tgrad.trapezoid(a, b), _leaf(_randn(2, 5)), _leaf(_randn(5)))
    _checks(lambda a: tgrad.trapezoid(a, dx=0.5, dim=0), _leaf(_randn(3, 2)))
    with pytest.raises(RuntimeError, match="trapezoid: There must be one `x` value for each "
                                           "sample point"):
        tgrad.trapezoid(tgrad.zeros(2, 5), tgrad.zeros(4))
    with pytest.raises(RuntimeError, match="received a bool input for `y`"):
        tgrad.trapezoid(tgrad.zeros(3, dtype=tgrad.bool))
    with pytest.raises(RuntimeError, match="we only support dx as a real number"):
        tgrad.trapezoid(tgrad.zeros(3), dx=True)
    with pytest.raises(TypeError, match="either x or dx"):
        tgrad.trapezoid(tgrad.zeros(3), tgrad.zeros(3), dx=1.0)


def _cumtrapz_ref(y: np.ndarray, x=None, dx: float = 1.0) -> np.ndarray:
    h = np.diff(x, axis=-1) if x is not None else dx
    return np.cumsum(h * (y[..., 1:] + y[..., :-1]) / 2.0, axis=-1)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 33])
def test_cumulative_trapezoid(n):
    y, x = _randn(2, n), np.cumsum(RNG.random(n))
    _same(tgrad.cumulative_trapezoid(_t(y)), _cumtrapz_ref(y))
    _same(tgrad.cumulative_trapezoid(_t(y), dx=0.3), _cumtrapz_ref(y, dx=0.3))
    # a 0-d tensor dx is a number (PyTorch's binding)
    _same(tgrad.cumulative_trapezoid(_t(y), dx=_t(0.3)), _cumtrapz_ref(y, dx=0.3))
    _same(tgrad.trapezoid(_t(y), dx=tgrad.tensor(2)), np.trapezoid(y, dx=2.0, axis=-1))
    _same(tgrad.cumulative_trapezoid(_t(y), _t(x)), _cumtrapz_ref(y, x))
    _same(tgrad.cumulative_trapezoid(_t(y.T.copy()).t(), _t(x), dim=-1), _cumtrapz_ref(y, x))


def test_cumulative_trapezoid_gradients_and_errors():
    _checks(lambda a, b: tgrad.cumulative_trapezoid(a, b), _leaf(_randn(2, 4)),
            _leaf(_randn(4)))
    _checks(lambda a: tgrad.cumulative_trapezoid(a, dx=2.0, dim=0), _leaf(_randn(3, 2)))
    with pytest.raises(RuntimeError, match="cumulative_trapezoid: There must be one `x` value"):
        tgrad.cumulative_trapezoid(tgrad.zeros(2, 5), tgrad.zeros(4))


@pytest.mark.parametrize("op", ["trapezoid", "trapz", "cumulative_trapezoid"])
def test_trapezoid_of_a_0d_tensor_raises_pytorchs_index_error(op):
    # a 0-d y has no dim to integrate along (PyTorch: IndexError; it was a bare tuple index)
    name = "trapezoid" if op == "trapz" else op  # (trapz is trapezoid, errors included)
    for kw in ({}, {"dx": 2.0}, {"dim": 0}):
        with pytest.raises(IndexError, match=rf"^{name}: Dimension specified as "
                                             rf"{kw.get('dim', -1)} but tensor has no dim"):
            getattr(tgrad, op)(tgrad.tensor(1), **kw)


# ------------------------------------------------------------------------------ cov / corrcoef
@pytest.mark.parametrize("shape", [(1, 17), (3, 33), (17,), (5, 2)])
def test_cov_values(shape):
    x = _randn(*shape)
    _same(tgrad.cov(_t(x)), np.cov(x), rtol=1e-10)
    _same(tgrad.cov(_t(x), correction=0), np.cov(x, ddof=0), rtol=1e-10)
    n = shape[-1]
    fw, aw = RNG.integers(1, 4, n), RNG.random(n) + 0.1
    _same(tgrad.cov(_t(x), fweights=_t(fw)), np.cov(x, fweights=fw), rtol=1e-10)
    _same(tgrad.cov(_t(x), aweights=_t(aw)), np.cov(x, aweights=aw), rtol=1e-10)
    _same(_t(x).cov(correction=2, fweights=_t(fw), aweights=_t(aw)),
          np.cov(x, ddof=2, fweights=fw, aweights=aw), rtol=1e-10)


def test_cov_non_contiguous_ints_degenerate_gradients_and_errors():
    x = _randn(6, 3)
    _same(tgrad.cov(_t(x).t()), np.cov(x.T), rtol=1e-10)
    ix = RNG.integers(-5, 5, (2, 7))
    got = tgrad.cov(_t(ix))
    assert got.dtype is tgrad.float32
    _same(got, np.cov(ix), rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        one = tgrad.cov(_t([2.0]))
    assert math.isnan(one.item())  # 0 / 0, as PyTorch
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        none = tgrad.cov(tgrad.zeros(2, 0, dtype=tgrad.float64))
    _same(none, np.full((2, 2), np.nan))  # no observations: NaN, as PyTorch
    _checks(lambda t: tgrad.cov(t), _leaf(_randn(2, 5)))
    _checks(lambda t, w: tgrad.cov(t, aweights=w), _leaf(_randn(2, 4)), _leaf(RNG.random(4)))
    with pytest.raises(RuntimeError, match="expected input to have two or fewer dimensions"):
        tgrad.cov(tgrad.zeros(2, 2, 2))
    with pytest.raises(RuntimeError, match="cov\\(\\): bool dtype is not supported"):
        tgrad.cov(tgrad.zeros(2, dtype=tgrad.bool))
    with pytest.raises(RuntimeError, match="expected fweights to have integral dtype but got "
                                           "fweights with float64 dtype"):
        tgrad.cov(_t(x), fweights=_t(np.ones(6)))
    with pytest.raises(RuntimeError, match="expected aweights to have the same numel as there "
                                           "are observations in the input but got 2 != 3"):
        tgrad.cov(_t(x), aweights=_t(np.ones(2)))
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        tgrad.cov(_t(x), fweights=tgrad.tensor([1, -1, 1]))
    with pytest.raises(RuntimeError, match="weights sum to zero"):
        tgrad.cov(_t(x), fweights=tgrad.tensor([0, 0, 0]))


@pytest.mark.parametrize("shape", [(1, 17), (3, 33), (17,), (4, 5)])
def test_corrcoef_values(shape):
    x = _randn(*shape)
    _same(tgrad.corrcoef(_t(x)), np.corrcoef(x), rtol=1e-10)


def test_corrcoef_constant_row_non_contiguous_gradients_and_errors():
    x = _randn(3, 4)
    _same(_t(x).t().corrcoef(), np.corrcoef(x.T), rtol=1e-10)
    c = tgrad.corrcoef(_t([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]))
    assert math.isnan(c[0, 0].item()) and math.isnan(c[0, 1].item())
    assert abs(c[1, 1].item() - 1.0) < 1e-15
    _checks(lambda t: tgrad.corrcoef(t), _leaf(_randn(3, 5)))
    with pytest.raises(RuntimeError, match="corrcoef\\(\\): expected input to have two or "
                                           "fewer dimensions but got an input with 3"):
        tgrad.corrcoef(tgrad.zeros(2, 2, 2))


# ------------------------------------------------------------------------------ isin
@pytest.mark.parametrize("n", [1, 17, 33])
def test_isin_values(n):
    e = RNG.integers(0, 10, (n, 3))
    t = RNG.integers(0, 10, 5)
    got = tgrad.isin(_t(e), _t(t))
    assert got.dtype is tgrad.bool
    _same(got, np.isin(e, t))
    _same(tgrad.isin(_t(e), _t(t), invert=True), np.isin(e, t, invert=True))
    _same(tgrad.isin(_t(e).t(), _t(t)[::2]), np.isin(e.T, t[::2]))


def test_isin_floats_nan_scalars_promotion_and_empty():
    e = np.array([1.0, -0.0, np.nan, INF, 2.5])
    t = np.array([np.nan, 0.0, INF, 3.0])
    _same(tgrad.isin(_t(e), _t(t)), np.isin(e, t))
    _same(tgrad.isin(_t(e), 2.5), np.isin(e, 2.5))
    assert tgrad.isin(3, tgrad.tensor([1, 3])).tolist() is True
    _same(tgrad.isin(tgrad.tensor([1, 2, 3]), _t([2.0, 2.5])), np.array([False, True, False]))
    _same(tgrad.isin(_t(e), tgrad.zeros(0, dtype=tgrad.float64)), np.zeros(5, dtype=bool))
    _same(tgrad.isin(_t(e), tgrad.zeros(0, dtype=tgrad.float64), invert=True),
          np.ones(5, dtype=bool))
    assert tgrad.isin(tgrad.zeros(0, 2), _t(t)).shape == (0, 2)
    x = _leaf([1.0, 2.0])
    assert not tgrad.isin(x, _t([1.0])).requires_grad
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin"):
        tgrad.isin(tgrad.zeros(2, dtype=tgrad.bool), tgrad.zeros(2))


# ------------------------------------------------------------------------------ histc
def _histc_ref(x: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    x = x.reshape(-1)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    out = np.zeros(bins)
    for v in x:
        if lo <= v <= hi:
            out[min(int((v - lo) / (hi - lo) * bins), bins - 1)] += 1
    return out


@pytest.mark.parametrize("n", [1, 17, 33])
@pytest.mark.parametrize("bins", [1, 7, 100])
def test_histc_values(n, bins):
    x = _randn(n, 3)
    _same(tgrad.histc(_t(x), bins), _histc_ref(x, bins, 0, 0))
    _same(_t(x).t().histc(bins, -1.0, 0.5), _histc_ref(x.T, bins, -1.0, 0.5))
    hist, _ = np.histogram(x, bins=bins, range=(-1.0, 0.5))
    _same(tgrad.histc(_t(x), bins, -1.0, 0.5), hist.astype(np.float64))


def test_histc_edges_nan_constant_empty_float32_and_errors():
    x = np.array([0.0, 1.0, 2.0, 5.0, 10.0, 10.0, -1.0, 11.0, np.nan])
    _same(tgrad.histc(_t(x), 10, 0, 10), np.array([1, 1, 1, 0, 0, 1, 0, 0, 0, 2.0]))
    _same(tgrad.histc(_t([3.0, 3.0]), 4), np.array([0, 0, 2, 0.0]))  # range [2, 4]
    _same(tgrad.histc(tgrad.zeros(0, dtype=tgrad.float64), 3), np.zeros(3))
    f = tgrad.histc(tgrad.tensor([0.1, 0.2, 0.9]), 2, 0, 1)
    assert f.dtype is tgrad.float32 and f.tolist() == [2.0, 1.0]
    assert not tgrad.histc(_leaf([1.0, 2.0]), 2).requires_grad
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0"):
        tgrad.histc(tgrad.zeros(3), 0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        tgrad.histc(tgrad.zeros(3), 5, 2, 1)
    with pytest.raises(RuntimeError, match="is not finite"):
        tgrad.histc(tgrad.zeros(3), 5, 0, INF)
    with pytest.raises(NotImplementedError, match="not implemented for 'int64'"):
        tgrad.histc(tgrad.tensor([1, 2]))


def test_histc_bins_in_the_input_dtype():
    # PyTorch's kernel: bin = trunc((x - lo) * bins / (hi - lo)), every step rounded to the
    # input dtype. x = 179/256 (exact in bfloat16/float16): x * 100 = 69.921875, which
    # bfloat16 (8 significant bits, spacing 0.5 in [64, 128)) rounds to 70.0 -> bin 70;
    # float16 (spacing 1/16) rounds to 69.9375 -> bin 69, as float32/float64
    x = np.array([0.0, 179 / 256, 1.0])
    for dt, mid in ((tgrad.bfloat16, 70), (tgrad.float16, 69), (tgrad.float32, 69),
                    (tgrad.float64, 69)):
        h = tgrad.histc(_t(x).to(dt), 100)
        assert h.dtype is dt
        want = np.zeros(100)
        want[[0, mid, 99]] = 1.0
        _same(h.double(), want)


# ------------------------------------------------------------------------------ cumprod
@pytest.mark.parametrize("n", [0, 1, 2, 17, 33])
def test_cumprod_values(n):
    x = RNG.uniform(0.5, 1.5, (3, n)) * RNG.choice([-1.0, 1.0], (3, n))
    _same(tgrad.cumprod(_t(x), 1), np.cumprod(x, 1), rtol=1e-13)
    _same(_t(x).t().cumprod(0), np.cumprod(x.T, 0), rtol=1e-13)
    _same(tgrad.cumprod(_t(x), -2), np.cumprod(x, 0), rtol=1e-13)


def test_cumprod_float32_accumulates_in_float64_on_the_cpu():
    # PyTorch's CPU cumprod multiplies float32 in double: over 1e5 factors near 1 the float32
    # scan drifted by 1e-4 relative; now each value is the float64 product rounded once
    rng = np.random.default_rng(3)
    x = (1 + rng.uniform(-1e-3, 1e-3, 100_000)).astype(np.float32)
    got = tgrad.tensor(x).cumprod(0).numpy()
    want = np.cumprod(x.astype(np.float64))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2 ** -23)  # (within rounding to float32)
    z = (x[:1000] * np.exp(1j * rng.uniform(-1e-3, 1e-3, 1000))).astype(np.complex64)
    np.testing.assert_allclose(tgrad.tensor(z).cumprod(0).numpy(),
                               np.cumprod(z.astype(np.complex128)), rtol=2 ** -22)


def test_cumprod_dtypes_0d_and_inplace():
    i = RNG.integers(-3, 4, (2, 7))
    got = tgrad.cumprod(tgrad.tensor(i, dtype=tgrad.int32), 1)
    assert got.dtype is tgrad.int64
    _same(got, np.cumprod(i, 1))
    assert tgrad.cumprod(tgrad.tensor([True, True, False]), 0).tolist() == [1, 1, 0]
    got = tgrad.cumprod(tgrad.tensor(i), 1, dtype=tgrad.float64)
    assert got.dtype is tgrad.float64
    _same(got, np.cumprod(i, 1).astype(np.float64))
    assert tgrad.cumprod(_t(2.5), 0).item() == 2.5
    h = tgrad.tensor([1.5, 2.0, 3.0], dtype=tgrad.float16).cumprod(0)
    assert h.dtype is tgrad.float16 and h.tolist() == [1.5, 3.0, 9.0]
    y = _t([1.0, 2.0, 3.0])
    assert y.cumprod_(0) is y and y.tolist() == [1.0, 2.0, 6.0]
    with pytest.raises(IndexError):
        tgrad.cumprod(tgrad.zeros(2, 3), 2)


def test_cumsum_cumprod_inplace_dtype_must_be_self_dtype():
    # PyTorch: "Bad in-place call: input tensor dtype float and output tensor dtype double
    # should match"; the dtype was silently computed in and cast back before
    for op in ("cumsum_", "cumprod_"):
        x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float32)
        with pytest.raises(RuntimeError, match=rf"{op}: Bad in-place call: input tensor dtype "
                                               r"float32 and output tensor dtype float64"):
            getattr(x, op)(0, dtype=tgrad.float64)
        assert x.tolist() == [1.0, 2.0, 3.0] and x._version == 0
        assert getattr(x, op)(0, dtype=tgrad.float32) is x
        assert x.tolist() == ([1.0, 3.0, 6.0] if op == "cumsum_" else [1.0, 2.0, 6.0])


def _cumprod_grad_ref(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """dx_j = sum_{k >= j} g_k prod_{i <= k, i != j} x_i, by brute force (1-D)."""
    n = x.shape[0]
    out = np.zeros(n)
    for j in range(n):
        for k in range(j, n):
            out[j] += g[k] * np.prod([x[i] for i in range(k + 1) if i != j])
    return out


@pytest.mark.parametrize("x", [[2.0, 0.0, 3.0, 4.0, 0.5], [0.0, 0.0, 3.0, 1.5, -2.0],
                               [1.5, -2.0, 0.7, 3.0, 0.0], [0.0], [1.2, 0.8, -1.1, 2.0, 0.9]])
def test_cumprod_gradient_is_exact_with_zeros(x):
    x = np.asarray(x)
    g = RNG.standard_normal(x.shape)
    leaf = _leaf(x)
    tgrad.cumprod(leaf, 0).backward(_t(g))
    _same(leaf.grad, _cumprod_grad_ref(x, g), rtol=1e-12, atol=1e-14)
    _checks(lambda t: tgrad.cumprod(t, 0), _leaf(x))


def test_cumprod_gradients_2d_with_zeros_non_contiguous():
    x = _randn(4, 6)
    x[1, 2] = x[2, 0] = x[2, 4] = 0.0
    _checks(lambda t: tgrad.cumprod(t.t(), 0), _leaf(x))
    _checks(lambda t: tgrad.cumprod(t, 1), _leaf(x))


def _cumprod_grad_ref_dropping_zero_terms(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """PyTorch's cumprod_backward (without create_graph): the exact sum, leaving out each term
    g_k prod_{i <= k, i != j} x_i that has a factor x_i == 0 (so 0 * inf never makes NaN)."""
    n = x.shape[0]
    out = np.zeros(n)
    for j in range(n):
        for k in range(j, n):
            factors = [x[i] for i in range(k + 1) if i != j]
            if 0.0 not in factors:
                out[j] += g[k] * np.prod(factors)
    return out


@pytest.mark.parametrize("x, g", [
    ([1.0, 0.0, 3.0], [INF, INF, INF]),  # PyTorch: [inf, inf, 0]
    ([2.0, 0.0, 3.0, 0.0, 5.0], [INF] * 5),
    ([2.0, 0.0, 3.0, 0.0, 5.0], [1.0, 1.0, 1.0, 1.0, INF]),
    ([0.0, 2.0, 3.0], [INF, INF, INF]),
    ([1.0, 2.0, 0.0], [INF, INF, INF]),
    ([1.0, 0.0, INF], [1.0, 1.0, 1.0]),  # PyTorch: [1, inf, 0]
    ([1.0, 2.0, 3.0], [INF, 0.0, 0.0]),
    ([1e200, 1e200, 1e-200], [0.0, 0.0, 1.0]),  # y overflows; exact: [1, 1, inf]
])
def test_cumprod_gradient_zeros_and_infinities_as_pytorch(x, g):
    x, g = np.asarray(x), np.asarray(g)
    leaf = _leaf(x)
    tgrad.cumprod(leaf, 0).backward(_t(g))
    _same(leaf.grad, _cumprod_grad_ref_dropping_zero_terms(x, g), rtol=1e-12)
    # 2-D, along dim 1 of a transposed view
    leaf2 = _leaf(np.stack([x, x]).T.copy())
    tgrad.cumprod(leaf2.t(), 1).backward(_t(np.stack([g, g])))
    _same(leaf2.grad.t(), np.stack([_cumprod_grad_ref_dropping_zero_terms(x, g)] * 2),
          rtol=1e-12)


def test_cumprod_gradient_hand_values_and_create_graph():
    leaf = _leaf([1.0, 0.0, 3.0])
    tgrad.cumprod(leaf, 0).backward(_t([INF, INF, INF]))
    assert leaf.grad.tolist() == [INF, INF, 0.0]
    # under create_graph the exact (differentiable) products, as PyTorch: 0 * inf = NaN
    leaf = _leaf([1.0, 0.0, 3.0])
    (gx,) = tgrad.autograd.grad(tgrad.cumprod(leaf, 0), leaf, _t([INF, INF, INF]),
                                create_graph=True)
    got = gx.tolist()
    assert math.isnan(got[0]) and got[1] == INF and math.isnan(got[2])
    assert tgrad.cumprod(leaf, 0).grad_fn.name() == "CumprodBackward0"


def test_cumprod_complex_gradient_with_zero():
    x = np.array([1 + 2j, 0.0, -0.5 + 1j, 2 - 1j])
    g = np.array([0.5 - 1j, 2 + 1j, 1j, -1.0])
    leaf = tgrad.tensor(x, requires_grad=True)
    tgrad.cumprod(leaf, 0).backward(tgrad.tensor(g))
    # PyTorch's convention: dx = conj(dy/dx) g
    ref = np.zeros(4, complex)
    for j in range(4):
        for k in range(j, 4):
            ref[j] += g[k] * np.conj(np.prod([x[i] for i in range(k + 1) if i != j]))
    _same(leaf.grad, ref, rtol=1e-12)
    _checks(lambda t: tgrad.cumprod(t, 0), tgrad.tensor(x, requires_grad=True))


def test_cov_corrcoef_gradient_of_complex():
    # PyTorch (and NumPy): cov of complex variables is x (x w)^H (Hermitian; tgrad did not
    # conjugate), corrcoef scales by the real diagonal and clips real and imaginary parts
    # apart (tgrad raised from clamp), gradient keeps complex values (tgrad dropped the
    # imaginary part) with real coordinates
    z = np.array([[1 + 2j, -0.5 + 0.25j, 3, 0.5j], [0.3 - 1j, 2, 1j, -1], [1, 1, 1j, 2 - 2j]])
    fw, aw = np.array([1, 2, 1, 3]), np.array([0.5, 1.0, 2.0, 0.25])
    zt = tgrad.tensor(z)
    np.testing.assert_allclose(tgrad.cov(zt).numpy(), np.cov(z), rtol=1e-12)
    np.testing.assert_allclose(tgrad.cov(zt, fweights=tgrad.tensor(fw),
                                         aweights=tgrad.tensor(aw)).numpy(),
                               np.cov(z, fweights=fw, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(tgrad.corrcoef(zt).numpy(), np.corrcoef(z), rtol=1e-12)
    for got, want in zip(tgrad.gradient(zt), np.gradient(z)):
        assert got.dtype is tgrad.complex128
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    coords = np.array([0.0, 1.0, 3.0, 4.5])
    (got,) = tgrad.gradient(zt, spacing=[tgrad.tensor(coords)], dim=1, edge_order=2)
    np.testing.assert_allclose(got.numpy(), np.gradient(z, coords, axis=1, edge_order=2),
                               rtol=1e-12)
    x = tgrad.tensor(z, requires_grad=True)
    assert tgrad.autograd.gradcheck(tgrad.cov, (x,))
