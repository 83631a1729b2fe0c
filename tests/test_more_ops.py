"""tgrad/ops/layout.py, logmath.py and searching.py
against NumPy float64 references (written here or NumPy's own
functions), with odd sizes, empty tensors, broadcasting, non-contiguous inputs, NaN/inf,
PyTorch's errors, and gradcheck/gradgradcheck in float64 for the differentiable ops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from float64_checks import checks as _checks
from float64_checks import leaf as _leaf
from float64_checks import same as _same
from float64_checks import t as _t
from float64_checks import to_numpy as _np

import tgrad
from tgrad.autograd import gradcheck

NAN, INF = math.nan, math.inf
RNG = np.random.default_rng(1234)


def _randn(*shape) -> np.ndarray:
    return RNG.standard_normal(shape)


# ------------------------------------------------------------------------------ diagonal
X345 = np.arange(60.0).reshape(3, 4, 5)
LAYOUTS = {  # name -> (tgrad view of X345's data, the same view in NumPy)
    "contiguous": (lambda t: t, lambda a: a),
    "transposed": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "step": (lambda t: t[:, ::2], lambda a: a[:, ::2]),
    "narrowed": (lambda t: t[:, :, 1:4], lambda a: a[:, :, 1:4]),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("offset", [-4, -1, 0, 2, 7])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, -2), (0, 2), (2, 1)])
def test_diagonal_values(layout, offset, dims):
    tview, nview = LAYOUTS[layout]
    got = tgrad.diagonal(tview(_t(X345)), offset, *dims)
    _same(got, np.diagonal(nview(X345), offset, *dims))


# every layout and pair of dims: diagonal is always a view (as_strided), as in PyTorch
VIEWS = [("contiguous", (0, 1)), ("contiguous", (2, 1)), ("contiguous", (-1, -2)),
         ("transposed", (0, 2)), ("transposed", (1, 2)), ("step", (0, 1)),
         ("narrowed", (0, 1)), ("contiguous", (0, 2)), ("transposed", (0, 1)),
         ("step", (1, 2)), ("narrowed", (1, 2))]


@pytest.mark.parametrize("layout, dims", VIEWS)
def test_diagonal_is_a_view(layout, dims):
    base = _t(X345)
    x = LAYOUTS[layout][0](base)
    d = x.diagonal(1, *dims)
    d.fill_(-1.0)  # writes into the base
    # the flat positions of the diagonal's elements in X345 (whose values are 0..59)
    idx = np.diagonal(LAYOUTS[layout][1](X345), 1, *dims).astype(np.int64)
    ref = X345.copy()
    ref.reshape(-1)[idx.reshape(-1)] = -1.0
    assert d._base is base
    _same(base, ref)
    assert (_np(d) == -1.0).all()


def test_diagonal_gradients_and_in_place_through_the_view():
    x = _t(np.random.default_rng(3).standard_normal((3, 4, 5)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: t.diagonal(1, 0, 2), (x,))
    assert tgrad.autograd.gradgradcheck(lambda t: t.diagonal(-1, 2, 1) ** 2, (x,))
    y = x.clone()
    y.diagonal(0, 0, 2).mul_(3.0)  # in place through the view: the base's gradient follows
    y.sum().backward()
    ref = np.ones((3, 4, 5))
    for i in range(3):
        ref[i, :, i] = 3.0
    np.testing.assert_array_equal(x.grad.numpy(), ref)


def test_diagonal_view_of_one_element_and_of_empty_planes():
    base = _t(X345)
    d = base[:, :, 1:4].diagonal(-2, 0, 2)  # one element: always a view
    assert d.shape == (4, 1) and d._base is base
    assert base.diagonal(9).shape == (5, 0)
    assert tgrad.zeros(0, 3).diagonal(1).shape == (0,)


def test_diagonal_writes_through_the_view_in_autograd():
    w = _leaf(_randn(2, 3, 3))
    y = w * 1.0
    y.diagonal(0, 1, 2).mul_(3.0)
    (y * y.detach()).sum().backward()
    want = np.where(np.eye(3, dtype=bool), 9.0, 1.0) * _np(w)
    _same(w.grad, want * np.ones((2, 1, 1)), rtol=1e-12)


def test_diagonal_gradients():
    a = _leaf(_randn(3, 4, 5))
    _checks(lambda t: t.diagonal(1, 0, 2), a)  # a copy
    _checks(lambda t: t.diagonal(-1, 2, 1), a)  # a view
    _checks(lambda t: t.transpose(0, 1).diagonal(), a)


@pytest.mark.parametrize("offset", [-2, 0, 1])
@pytest.mark.parametrize("dims", [(-2, -1), (0, 2), (2, 0), (1, 0)])
def test_diag_embed(offset, dims):
    v = _randn(2, 3)
    got = tgrad.diag_embed(_t(v), offset, *dims)
    n, m = 3, 3 + abs(offset)
    ref = np.zeros((2, m, m))
    i = np.arange(n)
    ref[:, i + max(-offset, 0), i + max(offset, 0)] = v
    _same(got, np.moveaxis(ref, [-2, -1], list(dims)))
    # diag_embed then diagonal is the identity
    _same(tgrad.diagonal(got, offset, *dims), v)


def test_diag_embed_edges_and_gradients():
    assert tgrad.diag_embed(tgrad.ones(4, 0), 2).shape == (4, 2, 2)
    assert tgrad.diag_embed(tgrad.ones(0, 3)).shape == (0, 3, 3)
    _same(tgrad.ones(2, dtype=tgrad.int64).diag_embed(), np.eye(2, dtype=np.int64))
    _checks(lambda t: tgrad.diag_embed(t, 1, 0, 2), _leaf(_randn(2, 3)))


# ------------------------------------------------------------------------------ splits, stacks
def _same_pieces(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("ios", [1, 3, 7, 9, [2, 5], [-2, 5], [5, 2, 9], [], [0]])
def test_tensor_split_matches_array_split(ios):
    a = _randn(7, 3)
    _same_pieces(tgrad.tensor_split(_t(a), ios), np.array_split(a, ios))
    _same_pieces(_t(a.T).tensor_split(ios, dim=-1), np.array_split(a.T, ios, axis=-1))


def test_tensor_split_tensor_arguments_and_views():
    a = _t(np.arange(7.0))
    _same_pieces(tgrad.tensor_split(a, tgrad.tensor(3)), np.array_split(np.arange(7.0), 3))
    _same_pieces(tgrad.tensor_split(a, tgrad.tensor([1, 4])),
                 np.array_split(np.arange(7.0), [1, 4]))
    assert all(p._base is a for p in tgrad.tensor_split(a, 3))
    _same_pieces(tgrad.tensor_split(tgrad.ones(0, 2), 2), [np.ones((0, 2))] * 2)
    _checks(lambda t: tgrad.tensor_split(t, [1, 3], dim=1), _leaf(_randn(2, 5)))


def test_hsplit_vsplit_dsplit():
    x = _randn(4, 6, 2)
    _same_pieces(tgrad.hsplit(_t(x), 3), np.hsplit(x, 3))
    _same_pieces(tgrad.hsplit(_t(x[0, :, 0]), [1, 4]), np.hsplit(x[0, :, 0], [1, 4]))
    _same_pieces(_t(x).vsplit([3]), np.vsplit(x, [3]))
    _same_pieces(_t(x).dsplit(2), np.dsplit(x, 2))
    # PyTorch's keyword forms: sections= (an int) or indices= (a sequence of ints)
    _same_pieces(tgrad.hsplit(_t(x), sections=3), np.hsplit(x, 3))
    _same_pieces(tgrad.vsplit(_t(x), indices=[1, 3]), np.vsplit(x, [1, 3]))
    _same_pieces(_t(x).dsplit(indices=(1,)), np.dsplit(x, [1]))
    with pytest.raises(TypeError, match="hsplit\\(\\) takes exactly one of sections"):
        tgrad.hsplit(_t(x), 3, sections=3)
    with pytest.raises(TypeError, match="argument 'indices' must be tuple of ints, not int"):
        tgrad.vsplit(_t(x), indices=2)


@pytest.mark.parametrize("call, err, msg", [
    (lambda: tgrad.tensor_split(tgrad.tensor(1.0), 2), RuntimeError,
     "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"),
    (lambda: tgrad.tensor_split(tgrad.ones(3), 0), RuntimeError,
     "number of sections must be larger than 0, got 0"),
    (lambda: tgrad.tensor_split(tgrad.ones(3), tgrad.tensor(2.0)), RuntimeError,
     "to have dtype of long, but got float32"),
    (lambda: tgrad.tensor_split(tgrad.ones(3), tgrad.tensor([[1]])), RuntimeError,
     "zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims"),
    (lambda: tgrad.hsplit(tgrad.ones(2, 7), 3), RuntimeError,
     "torch.hsplit attempted to split along dimension 1, but the size of the dimension 7 "
     "is not divisible by the split_size 3!"),
    (lambda: tgrad.hsplit(tgrad.tensor(1.0), 1), RuntimeError,
     "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0"),
    (lambda: tgrad.vsplit(tgrad.ones(4), 2), RuntimeError,
     "torch.vsplit requires a tensor with at least 2 dimension"),
    (lambda: tgrad.dsplit(tgrad.ones(2, 4), 2), RuntimeError,
     "torch.dsplit requires a tensor with at least 3 dimension"),
])
def test_split_errors(call, err, msg):
    with pytest.raises(err, match=msg.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        call()


def test_stacks():
    a, b, m = _randn(5), _randn(5), _randn(5, 2)
    _same(tgrad.dstack([_t(a), _t(b)]), np.dstack([a, b]))
    _same(tgrad.dstack([_t(m), _t(2 * m).t().t()]), np.dstack([m, 2 * m]))
    _same(tgrad.column_stack([_t(a), _t(m), _t(b)]), np.column_stack([a, m, b]))
    _same(tgrad.column_stack([_t(np.float64(2.0)), _t(np.ones((1, 2)))]),
          np.column_stack([np.float64(2.0), np.ones((1, 2))]))
    _same(tgrad.row_stack([_t(a), _t(m.T)]), np.vstack([a, m.T]))
    for x in (np.float64(3.0), a, m, _randn(2, 3, 4), _randn(2, 1, 3, 1)):
        _same(tgrad.atleast_3d(_t(x)), np.atleast_3d(x))
    p, q = tgrad.atleast_3d([_t(a), _t(np.float64(1.0))])
    assert p.shape == (1, 5, 1) and q.shape == (1, 1, 1)
    for fn in (tgrad.dstack, tgrad.column_stack):
        with pytest.raises(RuntimeError, match="expects a non-empty TensorList"):
            fn([])
    _checks(lambda s, t: tgrad.column_stack([s, t]), _leaf(a), _leaf(m))
    _checks(lambda s, t: tgrad.dstack([s, t]), _leaf(m), _leaf(m))


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_rot90(k, dims):
    x = _randn(2, 3, 5)
    xt = _t(x)
    got = tgrad.rot90(xt, k, dims)
    _same(got, np.rot90(x, k, dims))
    assert got._storage is not xt._storage  # a copy, as PyTorch's (k = 0 included)


def test_rot90_non_contiguous_gradients_and_errors():
    x = _randn(4, 6)
    _same(_t(x)[:, ::2].rot90(1, [1, 0]), np.rot90(x[:, ::2], 1, (1, 0)))
    _checks(lambda t: tgrad.rot90(t, 3, (1, 2)), _leaf(_randn(2, 3, 4)))
    for dims, err, msg in [((0,), RuntimeError, "expected total rotation dims == 2, but got "
                                                 "dims = 1"),
                           ((0, -2), RuntimeError, "expected rotation dims to be different, "
                                                   "but got dim0 = 0 and dim1 = -2"),
                           ((0, 3), IndexError, "Dimension out of range")]:
        with pytest.raises(err, match=msg):
            tgrad.rot90(tgrad.ones(2, 3), 1, dims)
    with pytest.raises(RuntimeError, match="expected total dims >= 2, but got total dims = 1"):
        tgrad.rot90(tgrad.ones(3))


@pytest.mark.parametrize("row, col, offset", [(3, 4, 0), (4, 3, -1), (3, 3, 2), (0, 3, 0),
                                              (3, 0, 0), (5, 2, -7), (2, 5, 9), (1, 1, 0)])
def test_tril_triu_indices(row, col, offset):
    got = tgrad.tril_indices(row, col, offset)
    assert got.dtype is tgrad.int64
    _same(got, np.stack(np.tril_indices(row, offset, col)).reshape(2, -1))
    _same(tgrad.triu_indices(row, col, offset, dtype=tgrad.int32),
          np.stack(np.triu_indices(row, offset, col)).reshape(2, -1).astype(np.int32))


def test_tril_indices_errors():
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        tgrad.tril_indices(-1, 3)
    with pytest.raises(RuntimeError, match="col must be non-negative, got-2"):
        tgrad.triu_indices(3, -2)
    with pytest.raises(NotImplementedError, match="not implemented for 'float32'"):
        tgrad.tril_indices(3, 3, dtype=tgrad.float32)


# ------------------------------------------------------------------------------ products
@pytest.mark.parametrize("sa, sb", [((2, 3), (4, 1)), ((3,), (2, 2)), ((), (3,)), ((), ()),
                                    ((2, 1, 3), (3, 2)), ((0, 2), (3, 1))])
def test_kron(sa, sb):
    a, b = _randn(*sa), _randn(*sb)
    _same(tgrad.kron(_t(a), _t(b)), np.kron(a, b))


def test_kron_dtypes_non_contiguous_and_gradients():
    a = np.arange(6).reshape(2, 3)
    _same(_t(a).kron(_t(a.T)), np.kron(a, a.T))  # int64 stays int64
    assert tgrad.kron(_t(a), tgrad.ones(2)).dtype is tgrad.float32
    m = _randn(4, 6)
    _same(tgrad.kron(_t(m)[::2, 1::2], _t(m).t()), np.kron(m[::2, 1::2], m.T))
    _checks(tgrad.kron, _leaf(_randn(2, 3)), _leaf(_randn(3, 1)))


def _tensordot_ref(a, b, da, db):
    """np.tensordot, with PyTorch's broadcasting of a size-1 contracted dim."""
    for i, j in zip(da, db):
        if a.shape[i] == 1 and b.shape[j] != 1:
            b = b.sum(j, keepdims=True)
        elif b.shape[j] == 1 and a.shape[i] != 1:
            a = a.sum(i, keepdims=True)
    return np.tensordot(a, b, (list(da), list(db)))


@pytest.mark.parametrize("sa, sb, dims", [
    ((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 2), 1), ((2, 3), (3, 4), 0), ((2, 3), (2, 3), 2),
    ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((3, 1, 5), (4, 2), ([1], [0])),
    ((3, 4), (1, 2), ([1], [0])), ((0, 3), (3, 2), 1), ((2, 0), (0, 3), 1),
])
def test_tensordot(sa, sb, dims):
    a, b = _randn(*sa), _randn(*sb)
    if isinstance(dims, int):
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
    _same(tgrad.tensordot(_t(a), _t(b), dims), _tensordot_ref(a, b, da, db), rtol=1e-10)


def test_tensordot_tensor_dims_non_contiguous_gradients_and_errors():
    a, b = _randn(4, 3), _randn(3, 4)
    _same(tgrad.tensordot(_t(a), _t(b), tgrad.tensor([[0, 1], [1, 0]])),
          np.tensordot(a, b, ([0, 1], [1, 0])))
    _same(tgrad.tensordot(_t(a).t(), _t(b).t()[:, ::2], tgrad.tensor(1)),
          np.tensordot(a.T, b.T[:, ::2], 1))
    _checks(lambda s, t: tgrad.tensordot(s, t, ([0, 2], [2, 0])), _leaf(_randn(2, 3, 4)),
            _leaf(_randn(4, 1, 2)))
    for call, msg in [
        (lambda: tgrad.tensordot(tgrad.ones(2, 3), tgrad.ones(3, 4), -1),
         "tensordot expects dims >= 0, but got dims=-1"),
        (lambda: tgrad.tensordot(tgrad.ones(2, 3), tgrad.ones(3, 4), 3),
         "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
        (lambda: tgrad.tensordot(tgrad.ones(2, 3), tgrad.ones(4, 4), 1),
         "contracted dimensions need to match, but first has size 3 in dim -1 and second has "
         "size 4 in dim 0"),
        (lambda: tgrad.tensordot(tgrad.ones(2, 3), tgrad.ones(3, 4), ([1], [0, 1])),
         "both dimension lists should have same length"),
        (lambda: tgrad.tensordot(tgrad.ones(2, 3), tgrad.ones(3, 2), ([0, 0], [1, 1])),
         "dim 0 appears multiple times in the list of dims"),
        (lambda: tgrad.tensordot(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64), 1),
         "both inputs should have same dtype"),
    ]:
        with pytest.raises(RuntimeError, match=msg):
            call()


@pytest.mark.parametrize("shape, dim", [((3, 5), None), ((3, 5), 1), ((3, 5), -2),
                                        ((1, 7, 1), 1), ((), None), ((), 0), ((4, 0), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_aminmax(shape, dim, keepdim):
    x = _randn(*shape)
    r = tgrad.aminmax(_t(x), dim=dim, keepdim=keepdim)
    axis = None if dim is None else dim
    _same(r.min, np.min(x, axis=axis, keepdims=keepdim))
    _same(r.max, np.max(x, axis=axis, keepdims=keepdim))
    assert type(r).__name__ == "aminmax" and r[0] is r.min and r[1] is r.max


def test_aminmax_nan_ints_gradients_and_errors():
    r = _t([[1.0, NAN, 3.0], [2.0, -1.0, 0.5]]).aminmax(dim=1)
    _same(r.min, [NAN, -1.0])
    _same(r.max, [NAN, 2.0])
    r = tgrad.aminmax(_t(np.array([[3, 1], [0, 9]])))
    _same(r.min, np.int64(0))
    _same(r.max, np.int64(9))
    _checks(lambda t: tgrad.aminmax(t, dim=0), _leaf(_randn(3, 4)))
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        tgrad.aminmax(tgrad.ones(0))
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        tgrad.aminmax(tgrad.ones(3, 0), dim=1)


# ------------------------------------------------------------------------------ maths
EDGE_A = np.array([-INF, INF, -INF, NAN, 1.0, 3.0, -2.0, 1e300, -1e300, 0.0, 1e-300, -0.0])
EDGE_B = np.array([-INF, INF, INF, 1.0, NAN, 3.0, 5.0, 1e300, 4.0, -0.0, 3e-300, 0.0])
BINARY = {
    "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "hypot": np.hypot,
    "copysign": np.copysign, "fmax": np.fmax, "fmin": np.fmin, "float_power": np.float_power,
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_maths_edges(name):
    fn, ref = getattr(tgrad, name), BINARY[name]
    with np.errstate(all="ignore"):
        _same(fn(_t(EDGE_A), _t(EDGE_B)), ref(EDGE_A, EDGE_B), rtol=1e-14)
        _same(fn(_t(EDGE_B), _t(EDGE_A)), ref(EDGE_B, EDGE_A), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_maths_broadcast_and_non_contiguous(name):
    fn, ref = getattr(tgrad, name), BINARY[name]
    a, b = _randn(3, 1, 5) * 4, _randn(4, 1) * 4
    if name == "float_power":
        a = np.abs(a)
    _same(fn(_t(a), _t(b)), ref(a, b), rtol=1e-13)
    m = _randn(6, 6) * 3
    with np.errstate(invalid="ignore"):  # float_power of negative bases: NaN in both
        want = ref(m[::2], m.T[1:4])
    _same(getattr(_t(m)[::2], name)(_t(m).t()[1:4]), want, rtol=1e-13)
    e = np.zeros((0, 6))
    _same(fn(_t(e), _t(m[:1])), ref(e, m[:1]))


def test_binary_maths_dtypes():
    f32 = tgrad.ones(2)
    for name in ("logaddexp", "logaddexp2", "hypot"):
        fn = getattr(tgrad, name)
        assert fn(f32, f32.double()).dtype is tgrad.float64
        assert fn(f32, tgrad.ones(2, dtype=tgrad.int64)).dtype is tgrad.float32
        h = fn(f32.half(), f32.half())
        assert h.dtype is tgrad.float16
        _same(h.float(), ref_f32 := BINARY[name](np.ones(2), np.ones(2)), rtol=1e-3)
        assert ref_f32 is not None
        with pytest.raises(NotImplementedError, match=f"\"{name}\" not implemented for int64"):
            fn(tgrad.ones(2, dtype=tgrad.int64), tgrad.ones(2, dtype=tgrad.int64))
        with pytest.raises(TypeError, match=rf"{name}\(\): argument 'other' \(position 2\) "
                                            r"must be Tensor, not float"):
            fn(f32, 2.0)
    ints = tgrad.tensor([1, -2, 3])
    _same(tgrad.copysign(ints, tgrad.tensor([-1, 2, -0])), np.copysign([1, -2, 3], [-1, 2, 0]))
    assert tgrad.copysign(ints, ints).dtype is tgrad.float32
    _same(tgrad.copysign(_t([1.0, -2.0]), -0.0), [-1.0, -2.0])
    _same(tgrad.copysign(_t([1.0, -2.0]), 3), [1.0, 2.0])
    _same(tgrad.fmax(ints, _t([2.0, NAN, 0.0])), np.fmax([1, -2, 3], [2.0, NAN, 0.0]))
    _same(tgrad.fmin(ints, tgrad.tensor([0, 0, 4])), np.fmin([1, -2, 3], [0, 0, 4]))
    assert tgrad.float_power(ints, 2).dtype is tgrad.float64
    _same(tgrad.float_power(2, ints), np.float_power(2, [1, -2, 3]))
    _same(f32.float_power(0.5), np.ones(2))


def test_signbit():
    x = np.array([-0.0, 0.0, -1.0, 1.0, INF, -INF, NAN, -1e-310, 1e-310])
    _same(tgrad.signbit(_t(x)), np.signbit(x))
    _same(_t(x).float().signbit(), np.signbit(x.astype(np.float32)))
    _same(tgrad.signbit(tgrad.tensor([-3, 0, 2])), np.array([True, False, False]))
    _same(tgrad.signbit(tgrad.tensor([True, False])), np.array([False, False]))


def test_signbit_and_copysign_read_a_nans_sign_bit():
    # PyTorch's signbit reads the sign bit, a NaN's too: NumPy's np.signbit is the reference
    neg_nan = np.copysign(NAN, -1.0)
    x = np.array([NAN, neg_nan, -0.0, 0.0, -INF, INF, -2.5, 2.5])
    for np_dt, dt in ((np.float64, tgrad.float64), (np.float32, tgrad.float32),
                      (np.float16, tgrad.float16)):
        v = x.astype(np_dt)
        assert np.signbit(v).tolist() == [False, True, True, False, True, False, True, False]
        _same(tgrad.signbit(tgrad.tensor(v)), np.signbit(v))
        # a strided (transposed) view reads the same bits
        m = np.stack([v, v[::-1]])
        _same(tgrad.signbit(tgrad.tensor(m.T.copy()).t()), np.signbit(m))
        # copysign takes the NaN's sign: -|2| where other is a NaN with the sign bit
        got = tgrad.copysign(tgrad.full((8,), 2.0, dtype=dt), tgrad.tensor(v))
        _same(got, np.copysign(np.full(8, 2.0, np_dt), v))
    # bfloat16: the sign bit is the top bit of its 16 (ml_dtypes' bits, read as uint16)
    b = tgrad.tensor(x).to(tgrad.bfloat16)
    bits = b.numpy().view(np.uint16)
    _same(tgrad.signbit(b), (bits >> 15).astype(bool))
    with pytest.raises(NotImplementedError, match='"signbit_cpu" not implemented for '
                                                  "'Float8_e4m3fn'"):
        tgrad.signbit(tgrad.tensor([-1.0]).to(tgrad.float8_e4m3fn))
    with pytest.raises(NotImplementedError, match="signbit is not implemented for complex "
                                                  "tensors"):
        tgrad.signbit(tgrad.tensor([1 + 1j]))


def test_logaddexp_is_stable_and_its_gradient_is_the_sigmoid():
    a, b = _t([1000.0, -1000.0, 0.0]), _t([999.0, -1001.0, -800.0])
    _same(tgrad.logaddexp(a, b), np.logaddexp(_np(a), _np(b)), rtol=1e-15)
    _same(tgrad.logaddexp2(a, b), np.logaddexp2(_np(a), _np(b)), rtol=1e-15)
    x, y = _leaf([-3.0, 0.5, 2.0, 7.0, 1.0]), _leaf([1.0, 0.5, -4.0, 7.0, 30.0])
    tgrad.logaddexp(x, y).sum().backward()
    d = _np(x) - _np(y)
    _same(x.grad, 1 / (1 + np.exp(-d)), rtol=1e-12)  # ties (0.5 and 7.0) give 1/2
    _same(y.grad, 1 / (1 + np.exp(d)), rtol=1e-12)
    z = _leaf([-INF, INF, 2.0])
    tgrad.logaddexp(z, _t([-INF, INF, INF])).sum().backward()
    assert not np.isnan(_np(z.grad)).any()


def test_logaddexp_second_derivative_on_ties():
    """d2/da2 logaddexp = sigmoid(d) sigmoid(-d) (d = a - b), 1/4 on a tie (the composite
    of max and |a - b| gave 0 there: both kinks); ln 2 sigmoid2(d) sigmoid2(-d) for
    logaddexp2 (sigmoid2(d) = 1 / (1 + 2^-d)); closed forms in NumPy float64. A tie of
    logcumsumexp's scan, and gradgradcheck through ties (smooth there)."""
    av = np.array([0.0, 7.0, 1e300, 30.0, -3.0, -800.0])
    bv = np.array([0.0, 7.0, 1e300, 0.0, 1.0, 800.0])
    d = av - bv
    for fn, s, k in ((tgrad.logaddexp, lambda v: 1 / (1 + np.exp(-v)), 1.0),
                     (tgrad.logaddexp2, lambda v: 1 / (1 + np.exp2(-v)), np.log(2.0))):
        a, b = _leaf(av), _leaf(bv)
        ga, gb = tgrad.autograd.grad(fn(a, b).sum(), (a, b), create_graph=True)
        _same(ga, s(d), rtol=1e-15)
        haa, hab = tgrad.autograd.grad(ga.sum(), (a, b))
        _same(haa, k * s(d) * s(-d), rtol=1e-14)
        _same(hab, -k * s(d) * s(-d), rtol=1e-14)
    x = _leaf([0.0, 0.0])  # logcumsumexp: y1 = x0, y2 = logaddexp(x0, x1)
    g, = tgrad.autograd.grad(tgrad.logcumsumexp(x, 0)[1], x, create_graph=True)
    h = [_np(tgrad.autograd.grad(g[i], x, retain_graph=True)[0]) for i in range(2)]
    _same(_t(np.stack(h)), np.array([[0.25, -0.25], [-0.25, 0.25]]), rtol=1e-15)
    p, q = _leaf([0.5, -2.0, 3.0]), _leaf([0.5, -2.0, 1.0])
    assert tgrad.autograd.gradgradcheck(tgrad.logaddexp, (p, q))
    assert tgrad.autograd.gradgradcheck(tgrad.logaddexp2, (p, q))


def _same_complex(got, want, rtol=1e-13, mod_2pi=False):
    """Real and imaginary parts compared apart (NaN == NaN, equal infinities equal); with
    ``mod_2pi`` the imaginary parts only up to a multiple of 2 pi (a log's branch)."""
    want = np.asarray(want, dtype=np.complex128)
    _same(got.real, want.real, rtol=rtol)
    if mod_2pi:
        d = _np(got.imag) - want.imag
        _same(_t((d + np.pi) % (2 * np.pi) - np.pi), np.zeros(want.shape), atol=1e-12)
    else:
        _same(got.imag, want.imag, rtol=rtol)


def test_logaddexp_complex_values_infinities_and_gradients():
    a = _randn(3, 4) * 3 + 1j * _randn(3, 4) * 3
    b = _randn(4) * 3 + 1j * _randn(4) * 3
    _same_complex(tgrad.logaddexp(_t(a), _t(b)), np.log(np.exp(a) + np.exp(b)),
                  mod_2pi=True)
    _same_complex(tgrad.logaddexp(_t([1 + 2j]), _t([0.5 - 1j])),
                  [np.log(np.exp(1 + 2j) + np.exp(0.5 - 1j))])
    # stable where exp overflows: 1000 + log(1 + e^(-1 + 1j)) + 2j
    _same_complex(tgrad.logaddexp(_t([1000 + 2j]), _t([999 + 3j])),
                  [1000 + 2j + np.log1p(np.exp(-1 + 1j))])
    assert tgrad.logaddexp(_t([1 + 1j]).to(tgrad.complex64), tgrad.ones(1)).dtype is \
        tgrad.complex64
    inf, nan = INF, NAN
    x = _t([complex(-inf, 1), complex(-inf, 2), complex(inf, 0), complex(nan, 0),
            complex(0, nan), complex(-inf, 0), 3 + 1j])
    y = _t([complex(-inf, 3), complex(5, 2), complex(inf, 0), 1 + 0j, 0j, 2 - 1j,
            3 + 1j])
    # by hand (PyTorch's rule): -inf ties give `other`; -inf + finite gives the finite
    # one; inf + inf (imag 0): log(inf) = inf; any NaN part: NaN + NaN j; equal: + log 2
    _same_complex(tgrad.logaddexp(x, y),
                  [complex(-inf, 3), 5 + 2j, complex(inf, 0), complex(nan, nan),
                   complex(nan, nan), 2 - 1j, 3 + math.log(2) + 1j])
    p = tgrad.tensor(a, requires_grad=True)
    q = tgrad.tensor(b, requires_grad=True)
    _checks(tgrad.logaddexp, p, q)
    tgrad.logaddexp(p, q).backward(tgrad.ones(3, 4, dtype=tgrad.complex128))
    _same_complex(p.grad, np.conj(1 / (1 + np.exp(b - a))))  # derivatives.yaml's rule


def test_logcumsumexp_complex():
    x = _randn(3, 6) * 3 + 1j * _randn(3, 6) * 3
    want = np.log(np.cumsum(np.exp(x), axis=1))
    _same_complex(tgrad.logcumsumexp(_t(x), 1), want, rtol=1e-12, mod_2pi=True)
    _same_complex(_t(x).t().logcumsumexp(0), want.T, rtol=1e-12, mod_2pi=True)
    _same_complex(tgrad.logcumsumexp(_t(x)[:, ::2], -1),
                  np.log(np.cumsum(np.exp(x[:, ::2]), axis=1)), rtol=1e-12, mod_2pi=True)
    # PyTorch's loop starts from -inf + 0j: a leading -inf real part gives -inf + 0j
    _same_complex(tgrad.logcumsumexp(_t([complex(-INF, 1), complex(-INF, 2), 1 + 1j,
                                         complex(INF, 1), 2j]), 0),
                  [complex(-INF, 0), complex(-INF, 0), 1 + 1j, complex(INF, 1),
                   complex(INF, 1)])
    _same_complex(tgrad.logcumsumexp(_t(complex(-INF, 1)), 0), complex(-INF, 0))
    _same_complex(tgrad.logcumsumexp(_t([1 + 1j, complex(NAN, 0), 2 + 0j]), 0),
                  [1 + 1j, complex(NAN, NAN), complex(NAN, NAN)])
    assert tgrad.logcumsumexp(tgrad.ones(3, dtype=tgrad.complex64), 0).dtype is \
        tgrad.complex64
    assert tgrad.logcumsumexp(tgrad.ones(0, dtype=tgrad.complex128), 0).shape == (0,)
    _checks(lambda t: tgrad.logcumsumexp(t, 1), tgrad.tensor(x[:2, :5], requires_grad=True))
    # a NaN part reaches the gradient (PyTorch's): the output from it on is NaN, and every
    # input feeding a NaN output gets a NaN gradient (a constant NaN left it 0, hiding it)
    for v in ([complex(NAN, 0), 1 + 1j], [1 + 1j, complex(0, NAN)]):
        z = tgrad.tensor(v, requires_grad=True)
        tgrad.logcumsumexp(z, 0).real.sum().backward()
        assert np.isnan(z.grad.numpy()).all()
    c128 = tgrad.complex128
    a = tgrad.tensor([complex(NAN, 0), 1 + 1j, 2 + 0j], dtype=c128, requires_grad=True)
    b = tgrad.tensor([1 + 1j, complex(0, NAN), 1 + 0j], dtype=c128, requires_grad=True)
    tgrad.logaddexp(a, b).real.sum().backward()
    for g in (a.grad.numpy(), b.grad.numpy()):
        assert np.isnan(g[:2]).all() and np.isfinite(g[2])  # (the NaN stays where it was)
    np.testing.assert_allclose(a.grad.numpy()[2], 1 / (1 + np.exp(-1)), rtol=1e-15)
    prev = tgrad.get_default_dtype()  # complex64 stays complex64 under a float64 default
    tgrad.set_default_dtype(tgrad.float64)
    try:
        c64 = tgrad.tensor([1 + 1j, complex(NAN, 0)], dtype=tgrad.complex64)
        assert tgrad.logaddexp(c64, c64).dtype is tgrad.complex64
        assert tgrad.logcumsumexp(c64, 0).dtype is tgrad.complex64
    finally:
        tgrad.set_default_dtype(prev)


def test_hypot_does_not_overflow_or_underflow():
    a, b = np.array([3e300, 3e-300, 1e308, 0.0]), np.array([4e300, 4e-300, 1e308, 0.0])
    _same(tgrad.hypot(_t(a), _t(b)), np.hypot(a, b), rtol=1e-15)
    x = _leaf([0.0, 3.0])
    tgrad.hypot(x, _t([0.0, -4.0])).sum().backward()
    _same(x.grad, [0.0, 0.6], rtol=1e-15)  # 0 at the origin (PyTorch: NaN)


def test_hypot_second_derivatives_at_ties_and_on_the_axes():
    # d2/da2 = b^2 / h^3, d2/dadb = -ab / h^3, d2/db2 = a^2 / h^3 everywhere h is finite and
    # nonzero (the old composite's max / min / abs kinks gave 0 at |a| = |b| and at a = 0)
    pts = [(3.0, 3.0), (-3.0, 3.0), (0.0, 2.0), (2.0, 0.0), (-3.0, 4.0), (1e-200, 1e-200),
           (1e300, 1e300)]
    a, b = _leaf([p[0] for p in pts]), _leaf([p[1] for p in pts])
    ga, gb = tgrad.autograd.grad(tgrad.hypot(a, b).sum(), [a, b], create_graph=True)
    haa, hab = tgrad.autograd.grad(ga.sum(), [a, b], retain_graph=True)
    hba, hbb = tgrad.autograd.grad(gb.sum(), [a, b])
    an, bn = np.array(pts).T
    h = np.hypot(an, bn)
    _same(haa, bn / h * (bn / h) / h, rtol=1e-15)  # (in this order: no overflow)
    _same(hbb, an / h * (an / h) / h, rtol=1e-15)
    _same(hab, -(an / h) * (bn / h) / h, rtol=1e-15)
    _same(hba, -(an / h) * (bn / h) / h, rtol=1e-15)
    _same(ga, an / h, rtol=1e-15)
    _checks(tgrad.hypot, _leaf([3.0, 0.5, -2.0]), _leaf([3.0, 0.0, 2.0]))
    # an input that needs no gradient is not saved: changing it after is no error (PyTorch)
    x, c = _leaf([3.0, 1.0]), _t([4.0, 2.0])
    y = tgrad.hypot(x, c)
    c.mul_(2)
    y.sum().backward()
    _same(x.grad, [0.6, 1 / np.sqrt(5)], rtol=1e-15)


@pytest.mark.parametrize("name", ["div", "addcdiv", "ldexp", "logaddexp", "logaddexp2",
                                  "mse_loss", "huber_loss", "smooth_l1_loss"])
def test_each_gradient_differentiates_without_the_others_graph(name):
    # PyTorch's derivative formulas give each input's gradient nodes of its own, so the
    # rows of a Hessian can be taken one grad() call at a time without retain_graph (tgrad
    # shared a node between the two gradients, and the first call freed it). (hypot's
    # gradients read its forward node's output: both raise there, PyTorch too.)
    fnn = tgrad.nn.functional
    fn = {"div": lambda a, b: a / b, "addcdiv": lambda a, b: tgrad.addcdiv(a, a, b, value=2),
          "ldexp": tgrad.ldexp, "logaddexp": tgrad.logaddexp, "logaddexp2": tgrad.logaddexp2,
          "mse_loss": fnn.mse_loss, "huber_loss": fnn.huber_loss,
          "smooth_l1_loss": fnn.smooth_l1_loss}[name]
    an, bn = np.array([1.0, 2.0, -0.7]), np.array([0.5, 1.5, 0.2])

    def hessian_rows(retain: bool) -> list:
        a, b = _leaf(an), _leaf(bn)
        ga, gb = tgrad.autograd.grad(fn(a, b).sum(), [a, b], create_graph=True)
        rows = tgrad.autograd.grad(ga.sum(), [a, b], retain_graph=retain, allow_unused=True)
        rows += tgrad.autograd.grad(gb.sum(), [a, b], allow_unused=True)
        return [np.zeros(3) if r is None else r.numpy() for r in rows]

    # the same values as one graph kept alive, and as central differences of the gradients
    for got, kept in zip(hessian_rows(False), hessian_rows(True)):
        np.testing.assert_array_equal(got, kept)
    got = hessian_rows(False)
    for wrt in (0, 1):
        eps = 1e-6
        def grads_at(da, db):
            a, b = _leaf(an + da), _leaf(bn + db)
            return [g.numpy() for g in tgrad.autograd.grad(fn(a, b).sum(), [a, b])]
        step = [np.zeros(3), np.zeros(3)]
        step[wrt] = np.full(3, eps)  # d/d(input wrt) of each element's gradient (elementwise)
        hi, lo = grads_at(*step), grads_at(*[-s for s in step])
        for j in range(2):  # row j (d grad_j), column wrt
            fd = (hi[j] - lo[j]) / (2 * eps)
            np.testing.assert_allclose(got[2 * j + wrt], fd, rtol=1e-6, atol=1e-8)


def test_fmax_fmin_gradient_goes_to_the_chosen_operand():
    a, b = _leaf([1.0, NAN, 2.0, 5.0, NAN]), _leaf([3.0, 1.0, NAN, 5.0, NAN])
    (tgrad.fmax(a, b) * 1.0).sum().backward()
    _same(a.grad, [0.0, 0.0, 1.0, 1.0, 1.0])  # ties (and NaN, NaN) to input, as PyTorch
    _same(b.grad, [1.0, 1.0, 0.0, 0.0, 0.0])
    a.grad = b.grad = None
    tgrad.fmin(a, b).sum().backward()
    _same(a.grad, [1.0, 0.0, 1.0, 1.0, 1.0])
    _same(b.grad, [0.0, 1.0, 0.0, 0.0, 0.0])


def test_binary_maths_gradients():
    a, b = _leaf(_randn(3, 4)), _leaf(_randn(4))
    for fn in (tgrad.logaddexp, tgrad.logaddexp2, tgrad.hypot, tgrad.fmax, tgrad.fmin):
        _checks(fn, a, b)
    _checks(lambda t: tgrad.copysign(t, _t([1.0, -1.0, -0.0, 0.0])), a)
    _checks(lambda s, t: tgrad.float_power(s.abs() + 0.5, t), a, b)
    _checks(lambda s: tgrad.float_power(s, 3), a)
    g = tgrad.ones(4, dtype=tgrad.float64)
    x = _leaf([2.0, -3.0, 0.0, 1.5])
    tgrad.copysign(x, _t([-1.0, -1.0, -1.0, 1.0])).backward(g)
    _same(x.grad, [-1.0, 1.0, 0.0, 1.0])  # 0 at input 0, as PyTorch


# ------------------------------------------------------------------------------ scans
def _logcumsumexp_ref(x, axis):
    with np.errstate(invalid="ignore"):  # NaN inputs
        return np.logaddexp.accumulate(x, axis=axis)


def _cum_extreme_ref(x, axis, larger):
    """PyTorch's loop: take x_k when x_k is NaN, or (the running value is not NaN and)
    x_k >= (<=) the running value."""
    x = np.moveaxis(np.asarray(x), axis, -1)
    vals, idx = np.empty_like(x), np.zeros(x.shape, dtype=np.int64)
    for pos in np.ndindex(*x.shape[:-1]):
        line, best, at = x[pos], None, 0
        for k, v in enumerate(line):
            if best is None or np.isnan(v) or (not np.isnan(best) and
                                               (v >= best if larger else v <= best)):
                best, at = v, k
            vals[pos + (k,)], idx[pos + (k,)] = best, at
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


@pytest.mark.parametrize("shape, dim", [((7,), 0), ((3, 9), 1), ((3, 9), 0), ((2, 5, 1), 2),
                                        ((1,), 0), ((), 0), ((0, 3), 1), ((4, 0), 1)])
def test_logcumsumexp(shape, dim):
    x = _randn(*shape) * 50
    _same(tgrad.logcumsumexp(_t(x), dim), _logcumsumexp_ref(x, dim) if x.ndim else x,
          rtol=1e-13)


def test_logcumsumexp_edges_non_contiguous_and_gradients():
    x = np.array([-1000.0, 0.0, -INF, 1000.0, INF, 3.0, NAN, 1.0])
    _same(tgrad.logcumsumexp(_t(x), 0), _logcumsumexp_ref(x, 0), rtol=1e-15)
    _same(tgrad.logcumsumexp(_t([-INF, -INF, 2.0]), 0), [-INF, -INF, 2.0])
    m = _randn(5, 8)
    _same(_t(m).t()[::2].logcumsumexp(-1), _logcumsumexp_ref(m.T[::2], -1), rtol=1e-13)
    assert tgrad.logcumsumexp(tgrad.ones(3).half(), 0).dtype is tgrad.float16
    _checks(lambda t: tgrad.logcumsumexp(t, 1), _leaf(_randn(2, 7)))
    with pytest.raises(NotImplementedError, match="\"logcumsumexp\" not implemented"):
        tgrad.logcumsumexp(tgrad.tensor([1, 2]), 0)


CUM_CASES = [np.array([1.0, 1.0, NAN, 2.0, NAN, 3.0]), np.array([3.0, 1.0, 0.0, 2.0, 0.0]),
             np.array([-INF, -INF, 2.0, INF, INF]), RNG.integers(0, 3, (4, 11)).astype(float),
             np.array([2.0])]


@pytest.mark.parametrize("case", range(len(CUM_CASES)))
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name, case):
    x = CUM_CASES[case]
    for d in range(x.ndim):
        r = getattr(tgrad, name)(_t(x), d)
        v, i = _cum_extreme_ref(x, d, name == "cummax")
        _same(r.values, v)
        _same(r.indices, i)


def test_cummax_ints_bools_odd_shapes_and_gradients():
    x = RNG.integers(-5, 5, (3, 13))
    for name, larger in (("cummax", True), ("cummin", False)):
        v, i = getattr(_t(x), name)(1)
        rv, ri = _cum_extreme_ref(x, 1, larger)
        _same(v, rv)
        _same(i, ri)
        v, i = getattr(tgrad, name)(_t(x > 0), 1)
        rv, ri = _cum_extreme_ref((x > 0).astype(np.int64), 1, larger)
        _same(v, rv.astype(bool))
        _same(i, ri)
    v, i = tgrad.cummax(_t(np.float64(3.0)), 0)
    assert v.shape == i.shape == () and v.item() == 3.0 and i.item() == 0
    v, i = tgrad.cummin(tgrad.ones(0, 4), 1)
    assert v.shape == i.shape == (0, 4) and i.dtype is tgrad.int64
    m = _randn(6, 5)
    v, i = tgrad.cummax(_t(m).t()[:, ::2], 1)
    rv, ri = _cum_extreme_ref(m.T[:, ::2], 1, True)
    _same(v, rv)
    _same(i, ri)
    # the gradient goes to the index of the running extreme (PyTorch's scatter-add)
    x = _leaf([1.0, 3.0, 2.0, 3.0, 0.0])
    tgrad.cummax(x, 0).values.sum().backward()
    _same(x.grad, [1.0, 2.0, 0.0, 2.0, 0.0])
    _checks(lambda t: tgrad.cummax(t, 1).values, _leaf(_randn(3, 6)))
    _checks(lambda t: tgrad.cummin(t, 0).values, _leaf(_randn(5, 2)))


def test_scans_are_not_quadratic():
    x = tgrad.randn(2, 4097, dtype=tgrad.float64)  # log2 steps of O(n) each
    ref = np.maximum.accumulate(_np(x), axis=1)
    _same(tgrad.cummax(x, 1).values, ref)
    _same(tgrad.logcumsumexp(x, 1), _logcumsumexp_ref(_np(x), 1), rtol=1e-12)


# ------------------------------------------------------------------------------ searching
def _searchsorted_ref(seq, values, right):
    side = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        vals = values.reshape(len(rows), values.shape[-1])
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(rows, vals)])
        out = out.reshape(values.shape)
    return np.asarray(out, dtype=np.int64)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("seq_shape, val_shape", [((7,), (3, 4)), ((3, 7), (3, 5)),
                                                  ((2, 1, 5), (2, 1, 3)), ((1,), (9,)),
                                                  ((0,), (4,)), ((5,), (0, 2)), ((5,), ()),
                                                  ((2, 4), (2, 0))])
def test_searchsorted(seq_shape, val_shape, right):
    seq = np.sort(RNG.integers(0, 6, seq_shape).astype(float), axis=-1)
    vals = RNG.integers(-1, 8, val_shape).astype(float)
    got = tgrad.searchsorted(_t(seq), _t(vals), right=right)
    _same(got, _searchsorted_ref(seq, vals, right))
    side = "right" if right else "left"
    _same(tgrad.searchsorted(_t(seq), _t(vals), side=side, out_int32=True),
          _searchsorted_ref(seq, vals, right).astype(np.int32))


def test_searchsorted_nan_inf_mixed_dtypes_sorter_and_scalars():
    seq = np.array([-INF, 1.0, 2.0, 2.0, INF])
    vals = np.array([NAN, -INF, INF, 2.0, 0.5])
    for right in (False, True):
        _same(tgrad.searchsorted(_t(seq), _t(vals), right=right),
              _searchsorted_ref(seq, vals, right))  # NaN: len(seq), as NumPy and PyTorch
    ints = np.array([1, 3, 3, 8])
    _same(tgrad.searchsorted(_t(ints), _t([2.5, 3.0])), np.searchsorted(ints, [2.5, 3.0]))
    _same(tgrad.searchsorted(_t(seq), _t(np.array([2, 9]))), np.searchsorted(seq, [2, 9]))
    unsorted = np.array([3.0, 1.0, 2.0, 0.0])
    order = np.argsort(unsorted)
    _same(tgrad.searchsorted(_t(unsorted), _t([1.5, 3.0]), sorter=tgrad.tensor(order)),
          np.searchsorted(unsorted, [1.5, 3.0], sorter=order))
    got = tgrad.searchsorted(_t(seq), 2.0, right=True)
    assert got.shape == () and got.item() == 4
    # the values' keyword is PyTorch's ``input``
    _same(tgrad.searchsorted(sorted_sequence=_t(seq), input=_t(vals[1:])),
          np.searchsorted(seq, vals[1:]))
    m = np.sort(_randn(4, 6), axis=0)
    v = _randn(3, 6)
    _same(tgrad.searchsorted(_t(m).t(), _t(v).t()), _searchsorted_ref(m.T, v.T, False))


@pytest.mark.parametrize("call, msg", [
    (lambda: tgrad.searchsorted(tgrad.ones(2, 3), tgrad.ones(3, 3)),
     r"first N-1 dimensions of boundaries tensor and input value tensor must match, but we "
     r"got boundaries tensor \[2, 3\] and input value tensor \[3, 3\]"),
    (lambda: tgrad.searchsorted(tgrad.tensor(1.0), tgrad.ones(2)),
     "boundaries tensor should have positive dimension, but got 0 dimension"),
    (lambda: tgrad.searchsorted(tgrad.ones(3), tgrad.ones(2), side="left", right=True),
     "side and right can't be set to opposites, got side of left while right was True"),
    (lambda: tgrad.searchsorted(tgrad.ones(3), tgrad.ones(2), side="middle"),
     "side can only be 'left' or 'right' but got middle"),
    (lambda: tgrad.bucketize(tgrad.ones(2), tgrad.ones(2, 2)),
     r"boundaries tensor must be 1 dimension, but got dim\(2\)"),
    (lambda: tgrad.searchsorted(tgrad.ones(3), tgrad.ones(2), sorter=tgrad.tensor([0, 1, 3])),
     r"searchsorted\(\): sorter index out of range"),
    (lambda: tgrad.searchsorted(tgrad.ones(3), tgrad.ones(2), sorter=tgrad.tensor([0, -1, 2])),
     r"searchsorted\(\): sorter index out of range"),
])
def test_searchsorted_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


@pytest.mark.parametrize("right", [False, True])
def test_bucketize(right):
    bounds = np.array([0.0, 1.0, 1.0, 2.5, 4.0])
    x = np.array([[-1.0, 0.0, 1.0, 1.5], [2.5, 3.0, 4.0, 9.0]])
    got = tgrad.bucketize(_t(x), _t(bounds), right=right)
    # NumPy's digitize: right=False there is PyTorch's right=True and vice versa
    _same(got, np.digitize(x, bounds, right=not right).astype(np.int64))
    assert tgrad.bucketize(1.0, _t(bounds), out_int32=True).dtype is tgrad.int32


def test_bincount():
    x = RNG.integers(0, 9, 31)
    _same(tgrad.bincount(_t(x)), np.bincount(x))
    _same(tgrad.bincount(_t(x), minlength=15), np.bincount(x, minlength=15))
    _same(_t(x.astype(np.int32))[::2].bincount(), np.bincount(x[::2]))
    w = _randn(31)
    _same(tgrad.bincount(_t(x), _t(w)), np.bincount(x, w), rtol=1e-13)
    w32 = tgrad.tensor(w.astype(np.float32))
    assert tgrad.bincount(_t(x), w32).dtype is tgrad.float32
    assert tgrad.bincount(_t(x), tgrad.tensor(np.ones(31, dtype=np.int64))).dtype is \
        tgrad.float64
    _same(tgrad.bincount(tgrad.tensor(np.zeros(0, dtype=np.int64))), np.zeros(0, np.int64))
    _same(tgrad.bincount(tgrad.tensor(np.zeros(0, dtype=np.int64)), minlength=3),
          np.zeros(3, np.int64))
    ww = _leaf(w)  # the weights' gradient flows through index_add
    assert gradcheck(lambda t: tgrad.bincount(_t(x), t), (ww,))


@pytest.mark.parametrize("call, err, msg", [
    (lambda: tgrad.bincount(tgrad.tensor([0, -3])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    (lambda: tgrad.bincount(tgrad.tensor([[0, 3]])), RuntimeError,
     "bincount only supports 1-d non-negative integral inputs."),
    (lambda: tgrad.bincount(tgrad.tensor([0.0, 3.0])), NotImplementedError,
     "\"bincount\" not implemented for float32"),
    (lambda: tgrad.bincount(tgrad.tensor([0, 3]), minlength=-1), RuntimeError,
     "minlength should be >= 0"),
    (lambda: tgrad.bincount(tgrad.tensor([0, 3]), tgrad.ones(3)), RuntimeError,
     "weights should be 1-d and have the same length as input"),
])
def test_bincount_errors(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def _check_unique(x, got, flags):
    vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True, equal_nan=False)
    want = [vals] + ([inv.reshape(x.shape)] if flags[0] else []) + \
        ([counts] if flags[1] else [])
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("case", ["float", "nan", "int", "bool", "empty", "scalar"])
def test_unique(case, flags):
    x = {"float": RNG.integers(0, 5, (3, 7)).astype(float) - 0.5,
         "nan": np.array([3.0, 1.0, NAN, 1.0, NAN, -INF, 2.0, INF, -0.0, 0.0]),
         "int": RNG.integers(-3, 3, (2, 3, 5)),
         "bool": np.array([True, False, True]),
         "empty": np.zeros((0, 3)),
         "scalar": np.float64(2.5)}[case]
    got = tgrad.unique(_t(x), return_inverse=flags[0], return_counts=flags[1])
    _check_unique(x, got, flags)
    _check_unique(x, _t(x).unique(False, *flags), flags)  # sorted=False: sorted too


def test_unique_non_contiguous_not_differentiable():
    m = RNG.integers(0, 4, (5, 6)).astype(float)
    _check_unique(m.T[::2], tgrad.unique(_t(m).t()[::2], return_inverse=True), (True, False))
    y = tgrad.unique(_leaf(m))
    assert not y.requires_grad


def _unique_consecutive_ref(x):
    flat = np.asarray(x).reshape(-1)
    first = np.ones(flat.size, dtype=bool)
    first[1:] = flat[1:] != flat[:-1]
    run = np.cumsum(first) - 1
    return flat[first], run.reshape(np.shape(x)), np.bincount(run, minlength=first.sum())


@pytest.mark.parametrize("x", [np.array([1, 1, 2, 2, 3, 1, 1, 2]),
                               np.array([[1.0, 1.0], [NAN, NAN]]),
                               np.array([0.0, -0.0, INF, INF, 2.0]), np.zeros(0), np.float64(1),
                               RNG.integers(0, 2, (3, 5))])
def test_unique_consecutive(x):
    vals, inv, counts = _unique_consecutive_ref(x)
    got = tgrad.unique_consecutive(_t(x), return_inverse=True, return_counts=True)
    _same(got[0], vals)
    _same(got[1], inv)
    _same(got[2], counts)
    _same(_t(x).unique_consecutive(), vals)
    _same(tgrad.unique_consecutive(_t(x), return_counts=True)[1], counts)


def test_copysign_gives_a_tensor_sign_source_a_zero_gradient():
    from tgrad.autograd import gradcheck, gradgradcheck
    x = tgrad.tensor([[1.0, -2.0, 0.5]], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor([[-1.0], [1.0], [-0.0]], dtype=tgrad.float64, requires_grad=True)
    tgrad.copysign(x, y).sum().backward()
    # d/dx copysign(x, y) = sign(x) * (+-1 by y's sign bit), summed over y's 3 rows
    np.testing.assert_array_equal(x.grad.numpy(), [[-1.0, 1.0, -1.0]])
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros((3, 1)))
    pair = (tgrad.tensor([1.5, -2.0], dtype=tgrad.float64, requires_grad=True),
            tgrad.tensor([-1.0, 3.0], dtype=tgrad.float64, requires_grad=True))
    assert gradcheck(tgrad.copysign, pair) and gradgradcheck(tgrad.copysign, pair)


def test_ldexp_promotes_both_operands():
    cases = [(tgrad.float32, tgrad.float64, [3.0, 1.0], tgrad.float64),
             (tgrad.float16, tgrad.float32, [3.0, 1.0], tgrad.float32),
             (tgrad.bfloat16, tgrad.float16, [3.0, 1.0], tgrad.float32),
             (tgrad.int32, tgrad.float64, 3.0, tgrad.float64),  # a 0-d float of a higher kind
             (tgrad.float32, tgrad.float64, 3.0, tgrad.float32),  # a 0-d float: no promotion
             (tgrad.int64, tgrad.int64, [3, 1], tgrad.float32)]
    for da, db, b, want in cases:
        out = tgrad.ldexp(tgrad.tensor([1, 2], dtype=da), tgrad.tensor(b, dtype=db))
        assert out.dtype is want
        np.testing.assert_array_equal(out.float().numpy(), np.ldexp([1.0, 2.0], np.int64(b)))


# ------------------------------------------------- creation and isclose (PyTorch parity)
def test_isclose_integers_compare_without_wrapping():
    # |2**62 - (-2**62)| = 2**63 wraps to -2**63 in int64; the true difference is huge
    assert tgrad.isclose(tgrad.tensor([2 ** 62]), tgrad.tensor([-2 ** 62])).tolist() == [False]
    i32 = tgrad.int32
    assert not tgrad.allclose(tgrad.tensor([2 ** 31 - 1], dtype=i32),
                              tgrad.tensor([-2 ** 31], dtype=i32))
    a = np.array([5, 5, 5, 2 ** 62, -7, 0])
    b = np.array([6, 6, 100, 2 ** 62, -7, 1])
    for rtol, atol in ((0.2, 0.0), (0.0, 1.0), (0.1, 0.5), (0.0, 0.0), (1e-5, 1e-8)):
        ref = [x == y or abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a.tolist(),
                                                                           b.tolist())]
        got = tgrad.isclose(tgrad.tensor(a), tgrad.tensor(b), rtol=rtol, atol=atol).tolist()
        assert got == ref, (rtol, atol)


def test_arange_int64_count_is_exact():
    got = tgrad.arange(0, 10 ** 18 + 1, 10 ** 17)
    assert got.dtype is tgrad.int64 and got.tolist() == [k * 10 ** 17 for k in range(11)]
    assert tgrad.arange(0, 2 ** 53 + 1, 2 ** 52).tolist() == [0, 2 ** 52, 2 ** 53]
    assert tgrad.arange(10 ** 18 + 1, 0, -10 ** 17).tolist() == list(range(10 ** 18 + 1, 0,
                                                                          -10 ** 17))
    assert tgrad.arange(0, 2 ** 62, 2 ** 61 + 1).tolist() == [0, 2 ** 61 + 1]
    for args in ((-5, 5, 3), (5, -5, -3), (0, 7, 7), (3, 3, 1)):
        assert tgrad.arange(*args).tolist() == list(range(*args))


def _spaced_reference(start, end, steps, base=None):
    """PyTorch's integer linspace/logspace: bounds truncated first, then the two-sided
    float64 formula, truncated toward zero."""
    lo, hi = math.trunc(start), math.trunc(end)
    step = (hi - lo) / (steps - 1)
    out = []
    for i in range(steps):
        x = lo + step * i if i < steps // 2 else hi - step * (steps - 1 - i)
        out.append(math.trunc(x if base is None else base ** x))
    return out


@pytest.mark.parametrize("start,end,steps", [(0.5, 2.5, 5), (0.9, 3.9, 3), (0, 10, 4),
                                             (10, 0, 4), (0, 10, 7), (-3.7, 10.2, 6),
                                             (3, 1, 5), (-7, 100, 13)])
def test_linspace_integer_dtype_truncates_bounds_first(start, end, steps):
    ref = _spaced_reference(start, end, steps)
    for dt in (tgrad.int64, tgrad.int32):
        got = tgrad.linspace(start, end, steps, dtype=dt)
        assert got.dtype is dt and got.tolist() == ref
    # the documented cases: torch gives [0, 0, 1, 1, 2] and [0, 1, 3]
    assert tgrad.linspace(0.5, 2.5, 5, dtype=tgrad.int64).tolist() == [0, 0, 1, 1, 2]
    assert tgrad.linspace(0.9, 3.9, 3, dtype=tgrad.int64).tolist() == [0, 1, 3]


@pytest.mark.parametrize("start,end,steps,base", [(0.9, 3.9, 3, 2.0), (0.1, 0.9, 3, 10.0),
                                                  (0, 3, 5, 10.0), (0, 2, 5, 2.5),
                                                  (3, 0, 4, 10.0), (-1, 2, 4, 10.0)])
def test_logspace_integer_dtype_truncates_bounds_first(start, end, steps, base):
    got = tgrad.logspace(start, end, steps, base=base, dtype=tgrad.int64)
    assert got.tolist() == _spaced_reference(start, end, steps, base)
    assert tgrad.logspace(0.9, 3.9, 3, base=2, dtype=tgrad.int64).tolist() == [1, 2, 8]
    assert tgrad.logspace(0.1, 0.9, 3, dtype=tgrad.int64).tolist() == [1, 1, 1]


def test_linspace_float_uses_pytorchs_two_halves_formula():
    # PyTorch's kernel: step = (end - start) / (steps - 1); element i < steps // 2 is
    # start + step * i, the others end - step * (steps - 1 - i) (computed here in float64)
    step = (1.0 - 0.0) / 6
    expected = [0.0 + step * i for i in range(3)] + [1.0 - step * (6 - i) for i in range(3, 7)]
    got = tgrad.linspace(0, 1, 7, dtype=tgrad.float64).tolist()
    assert got == expected  # bit for bit (np.linspace rounds elements 3 and 4 differently)
    # float16: the same formula in float16 arithmetic
    h = np.float16
    step16 = (h(7.7) - h(-3.3)) / h(12)
    exp16 = [h(-3.3) + step16 * h(i) if i < 6 else h(7.7) - step16 * h(12 - i)
             for i in range(13)]
    got16 = tgrad.linspace(-3.3, 7.7, 13, dtype=tgrad.float16).numpy()
    np.testing.assert_array_equal(got16, np.array(exp16, dtype=np.float16))


@pytest.mark.parametrize("start,end", [(float("nan"), 1.0), (0.0, float("inf")),
                                       (float("-inf"), float("inf")), (1.0, float("nan"))])
def test_linspace_nonfinite_bound_is_nan_throughout(start, end):
    # step is NaN or inf, so every element is NaN: start + inf * 0 and inf - inf (as
    # PyTorch; np.linspace would keep the finite end points)
    for dt in (tgrad.float32, tgrad.float64):
        assert np.isnan(tgrad.linspace(start, end, 3, dtype=dt).numpy()).all()
    assert tgrad.linspace(float("nan"), 1.0, 1).numpy()[0] != 1.0  # one step: start


def test_linspace_logspace_integer_edge_cases():
    i64 = tgrad.int64
    assert tgrad.linspace(0.9, 3, 1, dtype=i64).tolist() == [0]  # start itself
    assert tgrad.logspace(1.9, 3, 1, base=2, dtype=i64).tolist() == [math.trunc(2 ** 1.9)]
    assert tgrad.linspace(0, 10, 0, dtype=i64).tolist() == []
    # float dtypes keep the float formula
    np.testing.assert_allclose(tgrad.linspace(0.5, 2.5, 5, dtype=tgrad.float64).numpy(),
                               np.linspace(0.5, 2.5, 5), rtol=0, atol=0)
    for op in ("linspace", "logspace"):
        with pytest.raises(NotImplementedError, match=f"{op}_cpu\" not implemented for 'Bool'"):
            getattr(tgrad, op)(0, 1, 3, dtype=tgrad.bool)
    for bounds in ((0, 1e12), (math.nan, 1), (0, math.inf), (2 ** 31 - 0.5, 0)):
        with pytest.raises(RuntimeError, match="cannot be converted to type int32 without "
                                               "overflow"):
            tgrad.linspace(*bounds, 3, dtype=tgrad.int32)


def test_linspace_logspace_complex():
    # PyTorch: a complex bound gives the default complex dtype (tgrad kept float32, dropping
    # the imaginary part); a complex dtype is taken (it crashed in the integer path)
    got = tgrad.linspace(0, 1 + 1j, 3)
    assert got.dtype is tgrad.complex64
    np.testing.assert_allclose(got.numpy(), np.linspace(0, 1 + 1j, 3), rtol=1e-6)
    got = tgrad.linspace(1j, 2, 4, dtype=tgrad.complex128)
    np.testing.assert_allclose(got.numpy(), np.linspace(1j, 2, 4), rtol=1e-15)
    got = tgrad.linspace(0, 1, 3, dtype=tgrad.complex64)
    np.testing.assert_array_equal(got.numpy(), [0, 0.5, 1])
    assert got.dtype is tgrad.complex64
    assert tgrad.linspace(tgrad.tensor(0j), 2, 2).tolist() == [0j, 2 + 0j]
    got = tgrad.logspace(0, 1j, 3, base=2)
    assert got.dtype is tgrad.complex64
    np.testing.assert_allclose(got.numpy(), 2.0 ** np.linspace(0, 1j, 3), rtol=1e-6)
    np.testing.assert_allclose(tgrad.logspace(0, 2, 3, dtype=tgrad.complex128).numpy(),
                               [1, 10, 100], rtol=1e-15)
    tgrad.set_default_dtype(tgrad.float64)
    try:
        assert tgrad.linspace(0, 1j, 2).dtype is tgrad.complex128
    finally:
        tgrad.set_default_dtype(tgrad.float32)
    for op in ("linspace", "logspace"):
        with pytest.raises(RuntimeError, match=f"torch.{op}\\(\\): inferred dtype complex64 "
                                               f"can't be safely cast to passed dtype float32"):
            getattr(tgrad, op)(0, 1j, 3, dtype=tgrad.float32)


def test_randperm_dtype_limits():
    with pytest.raises(RuntimeError, match="n cannot be greater than 2049 for Half type."):
        tgrad.randperm(2050, dtype=tgrad.float16)
    with pytest.raises(RuntimeError, match="n cannot be greater than 257 for BFloat16 type."):
        tgrad.randperm(258, dtype=tgrad.bfloat16)
    with pytest.raises(NotImplementedError, match="\"randperm\" not implemented for 'Bool'"):
        tgrad.randperm(3, dtype=tgrad.bool)
    for n, dt in ((2049, tgrad.float16), (257, tgrad.bfloat16)):  # every value exact
        got = tgrad.randperm(n, dtype=dt).to(tgrad.float64).numpy()
        np.testing.assert_array_equal(np.sort(got), np.arange(n))


def test_randint_randperm_take_only_ints():
    with pytest.raises(TypeError, match="argument 'low' .*must be int, not float"):
        tgrad.randint(1.5, 4.7, (3,))
    with pytest.raises(TypeError, match="argument 'high' .*must be int, not float"):
        tgrad.randint(2.5, (3,))
    with pytest.raises(TypeError, match="argument 'high' .*must be int, not float"):
        tgrad.randint(1, 4.0, (3,))
    with pytest.raises(TypeError, match="argument 'n' .*must be int, not float"):
        tgrad.randperm(3.0)
    with pytest.raises(TypeError, match="must be int, not bool"):
        tgrad.randperm(True)
    for out in (tgrad.randint(np.int64(4), (50,)), tgrad.randint(tgrad.tensor(4), (50,)),
                tgrad.randint(4, size=(50,)), tgrad.randint(low=2, high=4, size=(50,))):
        v = out.numpy()
        assert out.dtype is tgrad.int64 and v.min() >= 0 and v.max() < 4
    assert sorted(tgrad.randperm(np.int64(5)).tolist()) == [0, 1, 2, 3, 4]
    assert sorted(tgrad.randperm(tgrad.tensor(4)).tolist()) == [0, 1, 2, 3]


def test_normal_dtype_is_means():
    f32, f64 = tgrad.float32, tgrad.float64
    assert tgrad.normal(tgrad.zeros(3), tgrad.ones(3, dtype=f64)).dtype is f32
    assert tgrad.normal(tgrad.zeros(3, dtype=f64), tgrad.ones(3)).dtype is f64
    assert tgrad.normal(0.0, tgrad.ones(3, dtype=f64)).dtype is f64
    assert tgrad.normal(tgrad.zeros(3, dtype=tgrad.bfloat16),
                        tgrad.ones(3, dtype=tgrad.float16)).dtype is tgrad.bfloat16
    # std = 0 gives mean exactly
    m = np.array([1.5, -2.25, 3.0])
    got = tgrad.normal(tgrad.tensor(m, dtype=f32), tgrad.zeros(3, dtype=f64))
    np.testing.assert_array_equal(got.numpy(), m.astype(np.float32))


def test_creation_size_keyword():
    for make in (tgrad.zeros, tgrad.ones, tgrad.empty, tgrad.rand, tgrad.randn):
        assert make(size=(2, 3)).shape == (2, 3) and make(size=[4]).shape == (4,)
        assert make(size=()).shape == ()
        with pytest.raises(TypeError, match="multiple values for argument 'size'"):
            make(2, size=(2, 3))
        with pytest.raises(TypeError, match="argument 'size' must be tuple of ints, not int"):
            make(size=2)
    np.testing.assert_array_equal(tgrad.zeros(size=(2, 3)).numpy(), np.zeros((2, 3)))
    f = tgrad.full(size=(2,), fill_value=1)
    assert f.dtype is tgrad.int64 and f.tolist() == [1, 1]
    assert tgrad.full((2,), fill_value=1.5).tolist() == [1.5, 1.5]
    for like in (tgrad.rand_like, tgrad.randn_like):
        out = like(tgrad.ones(2, 3), requires_grad=True)
        assert out.requires_grad and out.is_leaf and out.shape == (2, 3)


def test_full_fill_values_numpy_half_and_bool():
    i32 = tgrad.int32
    for v in (np.float16(1.5), np.float32(1.5), np.float64(-1.5)):
        assert tgrad.full((2,), v, dtype=i32).tolist() == [math.trunc(float(v))] * 2
        assert tgrad.full_like(tgrad.ones(2), v, dtype=i32).tolist() == [math.trunc(float(v))] * 2
        assert tgrad.ones(2).new_full((2,), v, dtype=i32).tolist() == [math.trunc(float(v))] * 2
        assert tgrad.ones(2, dtype=i32).fill_(v).tolist() == [math.trunc(float(v))] * 2
    assert tgrad.full((2,), 2 ** 63, dtype=tgrad.bool).tolist() == [True, True]
    assert tgrad.full((2,), 0.0, dtype=tgrad.bool).tolist() == [False, False]
    assert tgrad.ones(2, dtype=tgrad.bool).fill_(2 ** 63).tolist() == [True, True]
    assert tgrad.tensor([2 ** 64], dtype=tgrad.bool).tolist() == [True]
    assert tgrad.tensor([0, 2 ** 64], dtype=tgrad.bool).tolist() == [False, True]
    assert tgrad.tensor([1.0, 2 ** 70, 0.0, math.nan], dtype=tgrad.bool).tolist() == \
        [True, True, False, True]


def test_tensor_rejects_bad_elements():
    with pytest.raises(TypeError, match="must be real number, not NoneType"):
        tgrad.tensor([1.0, None], dtype=tgrad.float32)
    with pytest.raises(RuntimeError, match="Could not infer dtype of NoneType"):
        tgrad.tensor([None])  # (PyTorch: without a dtype a RuntimeError, with one a TypeError)
    with pytest.raises(RuntimeError, match="Could not infer dtype of set"):
        tgrad.tensor({1, 2})
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        tgrad.tensor(["1.5"], dtype=tgrad.float32)
    with pytest.raises(TypeError, match="invalid data type 'bytes'"):
        tgrad.tensor([b"1"])
    with pytest.raises(ValueError, match="only one element tensors can be converted to "
                                         "Python scalars"):
        tgrad.tensor([tgrad.tensor([1.0, 2.0]), tgrad.tensor([3.0, 4.0])])
    with pytest.raises(ValueError, match="only one element tensors"):
        tgrad.tensor([tgrad.tensor([]), tgrad.tensor([])])
    # one-element tensors (any shape) become numbers, nested too; NumPy arrays stack
    assert tgrad.tensor([tgrad.tensor([1.0]), tgrad.tensor(3.0)]).tolist() == [1.0, 3.0]
    assert tgrad.tensor([[tgrad.tensor(1.0)], [tgrad.tensor([[3.0]])]]).tolist() == [[1.0],
                                                                                   [3.0]]
    got = tgrad.tensor([np.array([1.0, 2.0]), np.array([3.0, 4.0])])
    assert got.dtype is tgrad.float64 and got.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_meshgrid_needs_tensors_of_one_dtype():
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        tgrad.meshgrid(indexing="ij")
    with pytest.raises(RuntimeError, match="meshgrid expects a non-empty TensorList"):
        tgrad.meshgrid([], indexing="ij")
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same "
                                           "dtype"):
        tgrad.meshgrid(tgrad.ones(2), tgrad.ones(3, dtype=tgrad.float64), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        tgrad.meshgrid(tgrad.ones(2), tgrad.ones(3, dtype=tgrad.int64), indexing="xy")
    gx, gy = tgrad.meshgrid(tgrad.tensor([1, 2]), tgrad.tensor([3, 4, 5]), indexing="ij")
    rx, ry = np.meshgrid([1, 2], [3, 4, 5], indexing="ij")
    np.testing.assert_array_equal(gx.numpy(), rx)
    np.testing.assert_array_equal(gy.numpy(), ry)


# ---------------------------------------------------------------- einsum sublist form
@pytest.mark.parametrize("case", ["matmul", "implicit", "ellipsis", "ellipsis_out", "trace",
                                  "high_labels", "three"])
def test_einsum_sublist_form_matches_numpy(case):
    a, b, c = _randn(2, 3), _randn(3, 4), _randn(5, 2, 3)
    e = Ellipsis
    args = {"matmul": (a, [0, 1], b, [1, 2], [0, 2]),
            "implicit": (a, [0, 1], b, [1, 2]),
            "ellipsis": (c, [e, 0, 1], b, [1, 2]),
            "ellipsis_out": (c, [e, 0, 1], b, [1, 51], [51, e]),
            "trace": (_randn(3, 3), [7, 7]),
            "high_labels": (a, (26, 0)),  # 26 -> 'a' sorts after 0 -> 'A': output (3, 2)
            "three": (a, [0, 1], b, [1, 2], _randn(4), [2], [0])}[case]
    want = np.einsum(*args)
    targs = tuple(_t(x) if isinstance(x, np.ndarray) else x for x in args)
    _same(tgrad.einsum(*targs), want, rtol=1e-12, atol=1e-12)
    leaves = [i for i, x in enumerate(args) if isinstance(x, np.ndarray)]

    def f(*ts):
        full = list(args)
        for i, t in zip(leaves, ts):
            full[i] = t
        return tgrad.einsum(*full)
    assert gradcheck(f, tuple(_leaf(args[i]) for i in leaves))


def test_einsum_sublist_errors():
    a, b = _t(_randn(2, 3)), _t(_randn(3, 4))
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        tgrad.einsum(a, [0, 52])
    with pytest.raises(ValueError, match=r"not within the valid range \[0, 52\)"):
        tgrad.einsum(a, [0, -1])
    with pytest.raises(ValueError, match="at least one operand and its subscripts list"):
        tgrad.einsum(a)
    with pytest.raises(TypeError, match="operand 1 has no subscripts list"):
        tgrad.einsum(a, [0, 1], b)  # odd count: the last operand lacks its sublist
    with pytest.raises(TypeError, match="operand 1 of the sublist form must be a Tensor"):
        tgrad.einsum(a, [0, 1], [1, 2], b)
    with pytest.raises(TypeError, match="must be ints in \\[0, 52\\) or Ellipsis, got float"):
        tgrad.einsum(a, [0, 1.0])
    with pytest.raises(TypeError, match="subscripts of operand 0 must be a list"):
        tgrad.einsum(a, 0)
    with pytest.raises(RuntimeError, match="number of subscripts"):
        tgrad.einsum(a, [0])
    with pytest.raises(TypeError, match="first argument must be the equation string"):
        tgrad.einsum(3, a)


# ------------------------------------------------------------------- unique with dim
def _check_unique_dim(x, d, got, flags):
    """Against np.unique(axis=d): the rows lexicographically sorted, NaN rows distinct."""
    vals, inv, counts = np.unique(x, axis=d, return_inverse=True, return_counts=True)
    want = [vals] + ([inv.reshape(-1)] if flags[0] else []) + ([counts] if flags[1] else [])
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("case", ["int", "float", "bool", "nan", "1d"])
def test_unique_dim_matches_numpy(case, flags):
    x = {"int": RNG.integers(-1, 2, (4, 3, 5)),
         "float": RNG.integers(0, 2, (6, 2, 2)).astype(float) - 0.5,
         "bool": RNG.integers(0, 2, (5, 2)).astype(bool),
         "nan": np.array([[1, NAN], [1, 2], [NAN, 0], [0, NAN], [1, 2], [NAN, 0],
                          [-0.0, NAN], [0.0, 1.0], [-INF, 3], [0.0, 1.0]]),
         "1d": RNG.integers(0, 3, 7)}[case]
    for d in range(-x.ndim, x.ndim):
        _check_unique_dim(x, d, tgrad.unique(_t(x), dim=d, return_inverse=flags[0],
                                             return_counts=flags[1]), flags)
        _check_unique_dim(x, d, _t(x).unique(False, *flags, dim=d), flags)  # sorted too


def test_unique_dim_hand_values_and_non_contiguous():
    x = tgrad.tensor([[3, 1, 2], [1, 0, 0], [3, 1, 2], [1, 0, -1]])
    vals, inv, counts = tgrad.unique(x, dim=0, return_inverse=True, return_counts=True)
    assert vals.tolist() == [[1, 0, -1], [1, 0, 0], [3, 1, 2]]
    assert inv.tolist() == [2, 1, 2, 0] and counts.tolist() == [1, 1, 2]
    vals, inv = tgrad.unique(x, dim=1, return_inverse=True)  # columns as the slices
    assert vals.tolist() == [[1, 2, 3], [0, 0, 1], [1, 2, 3], [0, -1, 1]]
    assert inv.tolist() == [2, 0, 1]
    m = RNG.integers(0, 2, (6, 8))
    _check_unique_dim(m.T[::2], 1, tgrad.unique(_t(m).t()[::2], dim=1, return_inverse=True,
                                                 return_counts=True), (True, True))


def _unique_consecutive_dim_ref(x, d):
    rows = np.moveaxis(x, d, 0).reshape(x.shape[d], -1)
    first = np.ones(len(rows), dtype=bool)
    first[1:] = (rows[1:] != rows[:-1]).any(1)
    run = np.cumsum(first) - 1
    return np.compress(first, x, axis=d), run, np.bincount(run)


@pytest.mark.parametrize("case", ["int", "nan"])
def test_unique_consecutive_dim(case):
    x = {"int": np.repeat(RNG.integers(0, 2, (4, 2, 3)), [2, 1, 3, 1], axis=0),
         "nan": np.array([[1.0, NAN], [1.0, NAN], [0.0, 1.0], [0.0, 1.0], [-0.0, 1.0]])}[case]
    for d in range(x.ndim):
        vals, inv, counts = _unique_consecutive_dim_ref(x, d)
        got = tgrad.unique_consecutive(_t(x), dim=d, return_inverse=True, return_counts=True)
        for g, w in zip(got, (vals, inv, counts)):
            _same(g, w)
        _same(tgrad.unique_consecutive(_t(x), dim=d), vals)


def test_unique_dim_empty_errors_and_no_grad():
    for f in (tgrad.unique, tgrad.unique_consecutive):
        vals, inv, counts = f(tgrad.zeros(0, 3), dim=0, return_inverse=True,
                              return_counts=True)
        assert vals.shape == (0, 3) and inv.shape == (0,) and counts.shape == (0,)
        assert inv.dtype is tgrad.int64 and counts.dtype is tgrad.int64
        assert f(tgrad.zeros(2, 0), dim=1).shape == (2, 0)
        with pytest.raises(RuntimeError, match="There are 0 sized dimensions, and they "
                           "aren't selected, so unique cannot be applied"):
            f(tgrad.zeros(2, 0), dim=0)
        with pytest.raises(RuntimeError, match="Number of zero sized dimensions is more "
                           "than one, so unique cannot be applied"):
            f(tgrad.zeros(0, 0), dim=0)
        with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no "
                           "dimensions"):
            f(tgrad.tensor(5.0), dim=0)
        with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in "
                           r"range of \[-2, 1\], but got 2\)"):
            f(tgrad.zeros(2, 3), dim=2)
        assert not f(_leaf(_randn(3, 2)), dim=0).requires_grad


def test_float_power_with_a_complex_operand_is_complex128():
    # PyTorch: float_power computes in complex128 when either operand is complex (it kept
    # only the real part: float64)
    x = _t([1.0, -4.0])
    _same(tgrad.float_power(x, 0.5 + 0j), np.power(np.array([1.0, -4.0], complex), 0.5))
    z = tgrad.tensor([1 + 1j, -4.0 + 0j])
    got = tgrad.float_power(z, 2)
    assert got.dtype is tgrad.complex128
    _same(got, np.array([1 + 1j, -4.0]) ** 2)
    _same(tgrad.float_power(2, tgrad.tensor([1j])), 2.0 ** np.array([1j]))
    assert tgrad.float_power(x, z).dtype is tgrad.complex128
    w = tgrad.tensor([1 + 1j], dtype=tgrad.complex128)
    _same(w.float_power_(2), np.array([2j]))
    with pytest.raises(RuntimeError, match="has dtype ComplexFloat but the operation's result "
                                           "requires dtype ComplexDouble"):
        tgrad.tensor([1 + 1j]).float_power_(2)
    with pytest.raises(RuntimeError, match="has dtype Double but the operation's result "
                                           "requires dtype ComplexDouble"):
        tgrad.tensor([1.0], dtype=tgrad.float64).float_power_(2j)
    assert gradcheck(lambda a: tgrad.float_power(a, 1.5 + 0.5j),
                     (_leaf(np.array([0.5, 2.0])),))


def test_copysign_refuses_complex_operands():
    # PyTorch: NotImplementedError "copysign_cpu" not implemented for 'ComplexFloat' (tgrad
    # returned |real part| with other's sign, dropping the imaginary part)
    z, x = tgrad.tensor([1 + 1j]), tgrad.tensor([1.0])
    for a, b in ((z, x), (x, z), (x, 1j), (z, 1.0)):
        with pytest.raises(NotImplementedError, match="\"copysign_cpu\" not implemented for "
                                                      "'ComplexFloat'"):
            tgrad.copysign(a, b)
