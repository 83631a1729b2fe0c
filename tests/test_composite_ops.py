"""The composite ops of tgrad/ops/composite.py beyond the op table (tests/op_db.py checks
their values and gradients): dtypes, in-place forms, PyTorch's errors and other names.
Expected values are NumPy's or PyTorch's documented ones, written out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad


def _t(values, **kw):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), **kw)


# ------------------------------------------------------------------------------ masked_fill
def test_masked_fill_keeps_int_and_bool_dtypes_casting_the_value():
    mask = tgrad.tensor([True, False, True])
    ints = tgrad.zeros(3, dtype=tgrad.int64).masked_fill(mask, 1.7)
    assert ints.dtype is tgrad.int64 and ints.tolist() == [1, 0, 1]
    flags = tgrad.zeros(3, dtype=tgrad.bool).masked_fill(mask, 2)
    assert flags.dtype is tgrad.bool and flags.tolist() == [True, False, True]
    halves = tgrad.zeros(3, dtype=tgrad.float16).masked_fill(mask, -math.inf)
    assert halves.dtype is tgrad.float16 and halves.tolist() == [-math.inf, 0.0, -math.inf]
    # a number past the dtype's range raises (PyTorch's checked conversion: the well-known
    # masked_fill(mask, -1e9) error of float16 attention code)
    with pytest.raises(RuntimeError, match="masked_fill: value -1000000000.0 cannot be "
                                           "converted to type float16 without overflow"):
        tgrad.zeros(3, dtype=tgrad.float16).masked_fill(mask, -1e9)
    # a 0-d tensor value of another dtype is read as a number and checked the same way, by
    # masked_fill and index_fill (they wrapped 300 to 44, made NaN INT_MIN, 1e6 inf)
    for dt, v in ((tgrad.int8, tgrad.tensor(300)), (tgrad.int64, tgrad.tensor(math.nan)),
                  (tgrad.float16, tgrad.tensor(-1e9)), (tgrad.uint8, tgrad.tensor(-300))):
        for fill in (lambda x, v=v: x.masked_fill(mask, v), lambda x, v=v: x.masked_fill_(mask, v),
                     lambda x, v=v: x.index_fill(0, tgrad.tensor([0, 2]), v)):
            with pytest.raises(RuntimeError, match=f"cannot be converted to type {dt.name} "
                                                   f"without overflow"):
                fill(tgrad.zeros(3, dtype=dt))
    assert tgrad.zeros(3, dtype=tgrad.uint8).masked_fill(mask, tgrad.tensor(-1)).tolist() == \
        [255, 0, 255]  # -255..-1 wrap, as PyTorch
    assert tgrad.zeros(3, dtype=tgrad.int32).index_fill(0, tgrad.tensor([1]),
                                                       tgrad.tensor(2.7)).tolist() == [0, 2, 0]


def test_a_numpy_integer_scalar_is_checked_like_the_python_int():
    # PyTorch reads NumPy scalars as Python numbers: np.uint8(200) into int8 overflows
    # (it wrapped to -56), while one in range works as the int does
    x = tgrad.tensor([1, -5], dtype=tgrad.int8)
    with pytest.raises(RuntimeError, match="where: value 200 cannot be converted to type "
                                           "int8 without overflow"):
        tgrad.where(x > 0, x, np.uint8(200))
    with pytest.raises(RuntimeError, match="cannot be converted to type int8"):
        x + np.int64(1000)
    assert tgrad.where(x > 0, x, np.int16(7)).tolist() == [1, 7]
    assert (x * np.uint8(2)).tolist() == [2, -10]


def test_masked_fill_value_tensor_gets_the_masked_gradient_sum():
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    v = _t(5.0, requires_grad=True)
    y = x.to(tgrad.float32).masked_fill(tgrad.tensor([True, False, True]), v)
    assert y.dtype is tgrad.float32  # the value is cast to the input's dtype
    (y * _t([1.0, 10.0, 100.0]).float()).sum().backward()
    assert v.grad.dtype is tgrad.float64 and v.grad.item() == 101.0
    assert x.grad.tolist() == [0.0, 10.0, 0.0]


def test_masked_fill_gradient_is_exactly_zero_under_the_mask():
    x = _t([-1.0, 4.0], requires_grad=True)
    # sqrt of the filled -1 has an infinite/NaN slope; it must not leak into x.grad
    x.masked_fill(tgrad.tensor([True, False]), 0.0).sqrt().sum().backward()
    assert x.grad.tolist() == [0.0, 0.25]


def test_masked_fill_inplace_records_and_checks_shapes():
    a = _t([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    out = b.masked_fill_(tgrad.tensor([False, True, False]), -1.0)
    assert out is b and b.tolist() == [1.0, -1.0, 3.0]
    b.sum().backward()
    assert a.grad.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match=r"masked_fill_: output with shape \[3\] doesn't "
                                           r"match the broadcast shape \[2, 3\]"):
        tgrad.zeros(3).masked_fill_(tgrad.ones(2, 3, dtype=tgrad.bool), 1.0)


def test_masked_fill_errors():
    x = tgrad.zeros(3)
    with pytest.raises(RuntimeError, match="masked_fill only supports boolean masks, but got "
                                           "mask with dtype int64"):
        x.masked_fill(tgrad.tensor([1, 0, 1]), 1.0)
    with pytest.raises(RuntimeError, match=r"only supports a 0-dimensional value tensor, but "
                                           r"got tensor with 1 dimension\(s\)"):
        x.masked_fill(tgrad.tensor([True, False, True]), tgrad.ones(2))


# ------------------------------------------------------------------------------ tril/triu
def test_tril_triu_inplace_and_dtypes():
    x = tgrad.tensor(np.arange(1, 10).reshape(3, 3))
    assert x.tril(-1).tolist() == [[0, 0, 0], [4, 0, 0], [7, 8, 0]]
    assert x.triu(1).dtype is tgrad.int64
    b = tgrad.ones(2, 2, dtype=tgrad.bool).tril()
    assert b.dtype is tgrad.bool and b.tolist() == [[True, False], [True, True]]
    y = tgrad.ones(2, 3)
    assert y.triu_() is y and y.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert tgrad.ones(2, 2).tril_(-5).tolist() == [[0, 0], [0, 0]]


def test_tril_needs_two_dims():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        tgrad.tril(tgrad.ones(3))


def test_tril_gradient_ignores_nan_above_the_diagonal():
    x = _t([[1.0, np.nan], [2.0, 3.0]], requires_grad=True)
    y = x.tril()
    assert np.array_equal(y.detach().numpy(), [[1.0, 0.0], [2.0, 3.0]])
    (y * _t([[1.0, np.inf], [1.0, 1.0]])).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 1.0]]


# ------------------------------------------------------------------------------ gathering
def test_gather_backward_adds_repeated_indices():
    x = _t(np.arange(6.0).reshape(2, 3), requires_grad=True)
    idx = tgrad.tensor([[0, 0, 2], [1, 1, 1]])
    y = tgrad.gather(x, 1, idx)
    assert y.tolist() == [[0.0, 0.0, 2.0], [4.0, 4.0, 4.0]]
    y.backward(_t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
    assert x.grad.tolist() == [[3.0, 0.0, 3.0], [0.0, 15.0, 0.0]]
    assert tgrad.gather(x, 1, idx.to(tgrad.int32)).tolist() == y.tolist()


def test_index_select_backward_adds_repeated_indices():
    x = _t(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x.index_select(1, tgrad.tensor([2, 0, 2]))
    assert y.tolist() == [[2.0, 0.0, 2.0], [5.0, 3.0, 5.0]]
    y.sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]]


@pytest.mark.parametrize("call, err, msg", [
    (lambda x: tgrad.gather(x, 1, tgrad.tensor([[0.0]])), RuntimeError,
     r"gather\(\): Expected dtype int32/int64 for index, got float32"),
    (lambda x: tgrad.gather(x, 1, tgrad.tensor([0, 1])), RuntimeError,
     r"gather\(\): Index tensor must have the same number of dimensions as input tensor"),
    (lambda x: tgrad.gather(x, 1, tgrad.tensor([[4]])), RuntimeError,
     r"gather\(\): index 4 is out of bounds for dimension 1 with size 4"),
    (lambda x: tgrad.gather(x, 1, tgrad.tensor([[-1]])), RuntimeError,
     r"gather\(\): index -1 is out of bounds for dimension 1 with size 4"),
    (lambda x: tgrad.gather(x, 2, tgrad.tensor([[0]])), IndexError,
     r"gather: Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    (lambda x: tgrad.gather(x, 1, tgrad.zeros(4, 1, dtype=tgrad.int64)), RuntimeError,
     r"Size does not match at dimension 0 expected index \[4, 1\] to be no larger than self "
     r"\[3, 4\] apart from dimension 1"),
    (lambda x: x.index_select(1, tgrad.tensor([[0, 1]])), IndexError,
     r"index_select\(\): Index is supposed to be a vector"),
    (lambda x: x.index_select(1, tgrad.tensor([0.0])), RuntimeError,
     r"index_select\(\): Expected dtype int32/int64 for index"),
    (lambda x: x.index_select(1, tgrad.tensor([-1])), IndexError,  # (PyTorch's type)
     r"index_select\(\): index -1 is out of bounds for dimension 1 with size 4"),
    (lambda x: tgrad.index_select(tgrad.tensor(5.0), 0, tgrad.tensor([0, 0])), RuntimeError,
     r"index_select\(\): Index to scalar can have only 1 value, got 2 value\(s\)"),
    (lambda x: x.select(1, 4), IndexError,
     r"select\(\): index 4 out of range for tensor of size \[3, 4\] at dimension 1"),
    (lambda x: x.sum_to_size(3, 3), RuntimeError,
     r"size \{\[3, 3\]\} is not expandable to size \{\[3, 4\]\}"),
])
def test_gathering_errors_match_pytorch(call, err, msg):
    with pytest.raises(err, match=msg):
        call(tgrad.zeros(3, 4))


def test_select_sum_to_size_type_as():
    x = tgrad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    assert x.select(1, -1).tolist() == [3.0, 7.0, 11.0]
    assert tgrad.select(x, 0, 1)._base is x  # a view, as x[1]
    s = x.sum_to_size(1, 4)
    assert s.shape == (1, 4) and s.tolist() == [[12.0, 15.0, 18.0, 21.0]]
    assert x.sum_to_size((4,)).tolist() == [12.0, 15.0, 18.0, 21.0]
    s.sum().backward()
    assert x.grad.tolist() == np.ones((3, 4)).tolist()
    assert x.type_as(tgrad.zeros(1, dtype=tgrad.float64)).dtype is tgrad.float64
    assert tgrad.numel(x) == 12


# ------------------------------------------------------------------------------ comparisons
def test_isclose_allclose_equal():
    a = _t([1.0, 2.0, np.nan, np.inf])
    b = _t([1.0 + 1e-9, 2.1, np.nan, np.inf])
    assert tgrad.isclose(a, b).tolist() == [True, False, False, True]
    assert a.isclose(b, equal_nan=True).tolist() == [True, False, True, True]
    assert tgrad.isclose(tgrad.tensor([True, False]), tgrad.tensor([True, True])).tolist() == \
        [True, False]
    ints = tgrad.isclose(tgrad.tensor([1, 2, 100]), tgrad.tensor([1, 3, 101]), rtol=0.01, atol=0)
    assert ints.tolist() == [True, False, True]
    assert tgrad.allclose(a[:2], _t([1.0, 2.0])) and not tgrad.allclose(a, b)
    assert tgrad.allclose(a, b, atol=0.2, equal_nan=True)
    assert tgrad.equal(_t([1.0, 2.0]), _t([1.0, 2.0]))
    assert not tgrad.equal(_t([1.0, np.nan]), _t([1.0, np.nan]))
    assert not tgrad.equal(tgrad.ones(2, 1), tgrad.ones(2))  # shapes differ: no broadcasting
    with pytest.raises(RuntimeError, match=r"isclose\(\): float64 did not match int64"):
        tgrad.isclose(_t([1.0]), tgrad.tensor([1]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but "
                                           "got -1"):
        tgrad.isclose(a, b, rtol=-1)
    for kw in ({"rtol": float("nan")}, {"atol": float("nan")}):  # (NaN compared false: it
        with pytest.raises(RuntimeError, match="must be greater than or equal to zero, but "
                                               "got nan"):  # passed, isclose gave True)
            tgrad.isclose(a, b, **kw)
        with pytest.raises(RuntimeError, match="got nan"):
            tgrad.allclose(a, b, **kw)
    # PyTorch's TypeError for a number (an AttributeError on .dtype before)
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must "
                                        r"be Tensor, not float"):
        tgrad.isclose(a, 1.0)


def test_logical_xor_truth_values():
    out = tgrad.logical_xor(_t([0.0, np.nan, 2.0]), tgrad.tensor([1, 0, 3]))
    assert out.dtype is tgrad.bool and out.tolist() == [True, True, False]


def test_logical_ops_read_both_operands_in_their_common_dtype():
    # PyTorch casts both operands to their promoted dtype first: a 0-d int64 256 joins a
    # uint8 tensor as uint8 256 % 256 = 0 (false), a 0-d float64 1e-50 a float32 tensor as 0.0
    u8 = tgrad.tensor([1, 0, 2], dtype=tgrad.uint8)
    wide = tgrad.tensor(256)
    assert tgrad.logical_and(wide, u8).tolist() == [False, False, False]
    assert tgrad.logical_or(u8, wide).tolist() == [True, False, True]
    assert tgrad.logical_xor(wide, u8).tolist() == [True, False, True]
    tiny = tgrad.tensor(1e-50, dtype=tgrad.float64)
    assert tgrad.logical_or(tgrad.tensor([0.0, 1.0]), tiny).tolist() == [False, True]
    # a dimensioned int64 operand promotes the uint8 one instead: 256 stays true
    assert tgrad.logical_and(tgrad.tensor([256]), u8).tolist() == [True, False, True]
    r = tgrad.tensor([True, True, False])
    assert r.logical_and_(wide).tolist() == [True, True, False]  # bool result: True & 256


# ------------------------------------------------------------------------------ other names
def test_pytorch_alias_names():
    x = _t([[-1.0, 2.0], [3.0, -4.0]])
    y = _t([[0.0, 2.0], [5.0, -5.0]])
    assert tgrad.absolute(x).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert x.absolute().tolist() == tgrad.abs(x).tolist()
    for name, ref in (("greater", np.greater), ("greater_equal", np.greater_equal),
                      ("less", np.less), ("less_equal", np.less_equal),
                      ("not_equal", np.not_equal)):
        want = ref(x.numpy(), y.numpy()).tolist()
        assert getattr(tgrad, name)(x, y).tolist() == want
        assert getattr(x, name)(y).tolist() == want
    assert tgrad.swapdims(x, 0, 1).tolist() == x.numpy().T.tolist()
    assert x.swapdims(0, 1)._base is x


def test_top_level_softmax_log_softmax_dropout():
    x = _t([[1.0, 2.0, 3.0]])
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tgrad.softmax(x, 1).numpy(), [e / e.sum()], rtol=1e-12)
    np.testing.assert_allclose(tgrad.log_softmax(x, -1, tgrad.float32).numpy(),
                               [np.log(e / e.sum())], rtol=1e-6)
    assert tgrad.log_softmax(x, -1, tgrad.float32).dtype is tgrad.float32
    assert tgrad.dropout(x, 0.5, False) is x  # not training: the identity, as PyTorch
    tgrad.manual_seed(0)
    kept = tgrad.dropout(tgrad.ones(1000), 0.25, True).numpy()
    assert set(np.unique(kept).tolist()) <= {0.0, float(np.float32(1.0 / 0.75))}
    assert 0 < (kept == 0).sum() < 1000


# ------------------------------------------------------------------------------ copies, einsum
def test_repeat_tile_flip():
    x = tgrad.tensor([[1, 2], [3, 4]])
    assert x.repeat(1, 2).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]]
    assert x.repeat((2, 1, 1)).shape == (2, 2, 2)
    assert tgrad.tile(x, (2,)).tolist() == [[1, 2, 1, 2], [3, 4, 3, 4]]  # dims padded with 1s
    assert x.tile(2, 1).tolist() == [[1, 2], [3, 4], [1, 2], [3, 4]]
    assert x.flip(0, 1).tolist() == [[4, 3], [2, 1]] == tgrad.flip(x, (0, 1)).tolist()
    assert x.flip(-1).tolist() == [[2, 1], [4, 3]]
    with pytest.raises(RuntimeError, match=r"repeat: Number of dimensions of repeat dims \(1\) "
                                           r"can not be smaller than number of dimensions of "
                                           r"tensor \(2\)"):
        x.repeat(2)
    with pytest.raises(RuntimeError, match=r"flip: dims \[0, -2\] has a dim appearing more than "
                                           r"once"):
        x.flip(0, -2)


def test_repeat_and_flip_gradients_sum_the_copies():
    x = _t([1.0, 2.0, 3.0], requires_grad=True)
    y = x.repeat(2, 2)  # (2, 6): four copies of x
    y.backward(_t(np.arange(12.0).reshape(2, 6)))
    # copy k of x[i] sits at columns i and i + 3 of both rows
    assert x.grad.tolist() == [0 + 3 + 6 + 9, 1 + 4 + 7 + 10, 2 + 5 + 8 + 11]
    z = _t([1.0, 2.0, 3.0], requires_grad=True)
    z.flip(0).backward(_t([10.0, 20.0, 30.0]))
    assert z.grad.tolist() == [30.0, 20.0, 10.0]


def test_einsum_size_one_labels_broadcast():
    a = _t(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = _t([[10.0, 20.0, 30.0]], requires_grad=True)  # label i has size 1 here: broadcast
    y = tgrad.einsum("ij,ij->ij", a, b)
    assert y.tolist() == [[0.0, 20.0, 60.0], [30.0, 80.0, 150.0]]
    y.sum().backward()
    assert b.grad.tolist() == [[3.0, 5.0, 7.0]]  # summed over the broadcast rows
    assert tgrad.einsum("i,i->", [_t([1.0, 2.0]), _t([3.0, 4.0])]).item() == 11.0  # a list



def test_einsum_result_of_several_operands_is_contiguous_so_view_works():
    # PyTorch's layout for these is contiguous, so .view(-1) works there: values against
    # numpy.einsum, the view as a flattening of the same values
    rng = np.random.default_rng(0)
    for eq, shapes in [("...,...->...", [(2, 1, 2), (2, 1)]), ("ij,jk->ki", [(2, 3), (3, 4)]),
                       ("i,j->ji", [(2,), (3,)]), ("ijk,k->ji", [(2, 3, 4), (4,)]),
                       ("ij,kj->ikj", [(2, 3), (4, 3)]), ("bij,bjk->kib", [(2, 2, 3), (2, 3, 4)])]:
        ops = [rng.standard_normal(s) for s in shapes]
        y = tgrad.einsum(eq, *[_t(o) for o in ops])
        want = np.einsum(eq, *ops)
        assert y.is_contiguous()
        np.testing.assert_allclose(y.view(-1).numpy(), want.reshape(-1), rtol=1e-12)
    a = _t(np.arange(6.0).reshape(2, 3))
    t = tgrad.einsum("ij->ji", a)  # one operand, nothing computed: a view of it (PyTorch's)
    assert t.stride() == (1, 3) and t._base is a


@pytest.mark.parametrize("eq, shape, stride", [
    ("ii->i", (3, 3), (4,)), ("iik->ik", (3, 3, 2), (8, 1)), ("iji->ij", (3, 2, 3), (7, 3)),
    ("iii->i", (3, 3, 3), (13,)), ("jii->ij", (2, 3, 3), (4, 9))])
def test_einsum_diagonal_of_one_operand_is_a_view(eq, shape, stride):
    # PyTorch takes a repeated label's diagonal as a view (its strides): a write through it
    # reaches the operand, and the gradient of a loss after such a write flows as PyTorch's
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    x = _t(a)
    d = tgrad.einsum(eq, x)
    np.testing.assert_array_equal(d.numpy(), np.einsum(eq, a))
    assert d._base is x and d.stride() == stride
    d.zero_()
    np.testing.assert_array_equal(np.einsum(eq, x.numpy()), np.zeros(d.shape))
    w = _t(np.ones((3, 3)), requires_grad=True)
    y = w * 1.0
    tgrad.einsum("ii->i", y).mul_(10.0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.eye(3) * 9 + 1)  # 10 on the diagonal


def test_einsum_of_one_summed_operand_is_fresh_and_contiguous():
    # PyTorch sums the operand permuted to (output labels, summed labels): a new contiguous
    # tensor in the output's order, so .view works; nothing summed: the permuted view
    rng = np.random.default_rng(2)
    for eq, shape in (("ijk->ki", (3, 5, 3)), ("i->", (4,)), ("ii->", (3, 3)),
                      ("ijk->j", (2, 3, 4))):
        a = rng.standard_normal(shape)
        y = tgrad.einsum(eq, _t(a))
        assert y._base is None and y.is_contiguous()
        np.testing.assert_allclose(y.view(-1).numpy(), np.einsum(eq, a).reshape(-1),
                                   rtol=1e-12)


def test_einsum_mixed_dtypes_promote_when_nothing_is_summed():
    # PyTorch: products without a summed label promote (real x complex is complex, int x
    # float the float); a contraction of mixed dtypes raises naming both scalar types
    z = tgrad.tensor(np.array([1 + 2j, 3 - 1j]), requires_grad=True)
    x = _t([2.0, -1.0], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.einsum("...,...->...", z, x)
    assert y.dtype == tgrad.complex128 and y.tolist() == [2 + 4j, -3 + 1j]
    assert tgrad.einsum("i,j->ij", x, z).dtype == tgrad.complex128
    assert tgrad.einsum("i,i->i", tgrad.tensor([1, 2]), _t([0.5, 1.5])).tolist() == [0.5, 3.0]
    # d/dx sum(Re(z x)) = Re z; d/dz = x (conjugate convention: dL/dRe + i dL/dIm)
    y.real.sum().backward()
    assert x.grad.tolist() == [1.0, 3.0] and z.grad.tolist() == [2 + 0j, -1 + 0j]
    with pytest.raises(RuntimeError, match="einsum\\(\\): expected scalar type Double but found "
                                           "ComplexDouble"):
        tgrad.einsum("i,i->", x, z)
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
        tgrad.einsum("ij,jk->ik", tgrad.ones(2, 2, dtype=tgrad.int64), tgrad.ones(2, 2))

@pytest.mark.parametrize("eq, shapes, err, msg", [
    ("ij,jk->ik", [(2, 3)], RuntimeError, r"einsum\(\): fewer operands were provided"),
    ("ij->ij", [(2, 3), (3,)], RuntimeError, r"einsum\(\): more operands were provided"),
    ("ij->i", [(2, 3, 4)], RuntimeError, r"the number of subscripts in the equation \(2\) "
                                         r"does not match the number of dimensions \(3\) for "
                                         r"operand 0 and no ellipsis was given"),
    ("i1->i", [(2, 3)], RuntimeError, r"invalid subscript given at index 1"),
    ("ij->k", [(2, 3)], RuntimeError, r"output subscript k does not appear in the equation"),
    ("ij->ii", [(2, 3)], RuntimeError, r"output subscript i appears more than once"),
    ("ij,jk->ik", [(2, 3), (4, 5)], RuntimeError, r"subscript j has size 4 for operand 1 which "
                                                  r"does not broadcast with previously seen "
                                                  r"size 3"),
    ("ii->i", [(2, 3)], RuntimeError, r"subscript i is repeated for an operand but the sizes "
                                      r"don't match, 3 != 2"),
])
def test_einsum_errors(eq, shapes, err, msg):
    with pytest.raises(err, match=msg):
        tgrad.einsum(eq, *[tgrad.zeros(s) for s in shapes])


# ------------------------------------------------------------------------------ products
def test_product_shape_errors():
    with pytest.raises(RuntimeError, match="dot: expected 1D and 1D tensors, but got 2D and 1D"):
        tgrad.dot(tgrad.ones(2, 2), tgrad.ones(2))
    with pytest.raises(RuntimeError, match=r"dot: inconsistent tensor size, expected tensor "
                                           r"\[2\] and src \[3\]"):
        tgrad.dot(tgrad.ones(2), tgrad.ones(3))
    with pytest.raises(RuntimeError, match="mv: expected 2D and 1D tensors, but got 1D and 1D"):
        tgrad.mv(tgrad.ones(2), tgrad.ones(2))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        tgrad.trace(tgrad.ones(3))


def test_addmm_with_beta_zero_ignores_nan_in_input():
    inp = _t([[np.nan, np.inf], [1.0, 2.0]])
    a = _t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    out = tgrad.addmm(inp, a, _t(np.eye(2)), beta=0, alpha=2.0)
    assert out.tolist() == [[2.0, 4.0], [6.0, 8.0]]  # PyTorch: input ignored when beta == 0
    y = tgrad.addmm(_t([1.0, 1.0]), a, _t(np.eye(2)), beta=0.5)
    assert y.tolist() == [[1.5, 2.5], [3.5, 4.5]]


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_addmm_addmv_addbmm_with_alpha_zero_ignore_the_products_nan_and_inf(dtype):
    # BLAS semantics, PyTorch's: alpha == 0 never reads the product, so an inf in a matrix
    # gives beta * input, not NaN (baddbmm, whose PyTorch kernel multiplies by 0, excepted);
    # the gradients stay the formulas': d input = beta g, d mat1 = alpha g mat2^T
    dt = getattr(tgrad, dtype)
    m = np.arange(12.0).reshape(3, 4) / 7
    m[0, 0] = np.inf
    b = np.arange(20.0).reshape(4, 5) / 9
    inp = tgrad.ones(3, 5, dtype=dt)
    mt, bt = tgrad.tensor(m, dtype=dt), tgrad.tensor(b, dtype=dt)
    np.testing.assert_array_equal(tgrad.addmm(inp, mt, bt, alpha=0, beta=2).float().numpy(),
                                  np.full((3, 5), 2.0))
    np.testing.assert_array_equal(tgrad.addmv(inp[:, 0], mt, bt[:, 0], alpha=0).float().numpy(),
                                  np.ones(3))
    np.testing.assert_array_equal(
        tgrad.addbmm(inp, mt.unsqueeze(0), bt.unsqueeze(0), alpha=0).float().numpy(),
        np.ones((3, 5)))
    assert np.isnan(tgrad.baddbmm(inp.unsqueeze(0), mt.unsqueeze(0), bt.unsqueeze(0),
                                  alpha=0)[0, 0].float().numpy()).all()
    if dtype == "float64":
        a = tgrad.tensor(m, requires_grad=True)
        i = tgrad.ones(3, 5, dtype=dt, requires_grad=True)
        tgrad.addmm(i, a, bt, alpha=0, beta=3).sum().backward()
        np.testing.assert_array_equal(i.grad.numpy(), np.full((3, 5), 3.0))
        np.testing.assert_array_equal(a.grad.numpy(), np.zeros((3, 4)))  # 0 * (g b^T)


def test_diag_both_ways_and_trace():
    v = _t([1.0, 2.0], requires_grad=True)
    m = tgrad.diag(v, 1)
    assert m.tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]
    m.sum().backward()
    assert v.grad.tolist() == [1.0, 1.0]
    x = _t(np.arange(12.0).reshape(3, 4))
    assert tgrad.diag(x).tolist() == [0.0, 5.0, 10.0]
    assert tgrad.diag(x, -1).tolist() == [4.0, 9.0]
    assert tgrad.diag(x, 5).tolist() == []
    assert tgrad.trace(x).item() == 15.0


# ------------------------------------------------------------------------------ scatter, select
def test_scatter_writes_and_routes_gradients():
    x = _t(np.zeros((2, 3)), requires_grad=True)
    src = _t([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    idx = tgrad.tensor([[2, 0], [1, 2]])
    y = tgrad.scatter(x, 1, idx, src)
    assert y.tolist() == [[2.0, 0.0, 1.0], [0.0, 3.0, 4.0]]
    y.backward(_t([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]))
    assert x.grad.tolist() == [[0.0, 20.0, 0.0], [40.0, 0.0, 0.0]]  # written-over: no grad
    assert src.grad.tolist() == [[30.0, 10.0], [50.0, 60.0]]
    assert x.scatter(1, idx, value=7.0).tolist() == [[7.0, 0.0, 7.0], [0.0, 7.0, 7.0]]
    z = tgrad.scatter_add(_t(np.ones(3)), 0, tgrad.tensor([0, 0, 2]), _t([1.0, 2.0, 3.0]))
    assert z.tolist() == [4.0, 1.0, 4.0]
    w = tgrad.index_add(_t(np.zeros((3, 2))), 0, tgrad.tensor([2, 2]), _t(np.ones((2, 2))),
                        alpha=0.5)
    assert w.tolist() == [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]


def test_nonzero_masked_select_count_nonzero():
    x = tgrad.tensor([[0, 3], [5, 0]])
    assert tgrad.nonzero(x).tolist() == [[0, 1], [1, 0]]
    assert [t.tolist() for t in x.nonzero(as_tuple=True)] == [[0, 1], [1, 0]]
    assert tgrad.argwhere(x).dtype is tgrad.int64
    assert tgrad.masked_select(x, tgrad.tensor([True, False])).tolist() == [0, 5]  # broadcast
    assert tgrad.count_nonzero(x).item() == 2
    assert x.count_nonzero(0).tolist() == [1, 1]


def test_roll_lerp_addc_stack_meshgrid():
    x = tgrad.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.roll(1, 1).tolist() == [[3, 1, 2], [6, 4, 5]]
    assert tgrad.roll(x, -1).tolist() == [[2, 3, 4], [5, 6, 1]]  # flattened, shape kept
    assert tgrad.lerp(_t([0.0, 10.0]), _t([10.0, 20.0]), 1.0).tolist() == [10.0, 20.0]
    assert tgrad.addcmul(_t([1.0]), _t([2.0]), _t([3.0]), value=0.5).tolist() == [4.0]
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                                           "supported"):
        tgrad.addcdiv(_t([1.0]), tgrad.tensor([2]), tgrad.tensor([3]))
    assert tgrad.hstack([tgrad.tensor([1, 2]), tgrad.tensor([3])]).tolist() == [1, 2, 3]
    assert tgrad.vstack([tgrad.tensor([1, 2]), tgrad.tensor([3, 4])]).shape == (2, 2)
    gx, gy = tgrad.meshgrid(tgrad.tensor([1, 2, 3]), tgrad.tensor([7, 8]), indexing="xy")
    assert gx.tolist() == [[1, 2, 3], [1, 2, 3]] and gy.tolist() == [[7, 7, 7], [8, 8, 8]]
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        ii, _ = tgrad.meshgrid(tgrad.tensor([1, 2]), tgrad.tensor([3]))
    assert ii.tolist() == [[1], [2]]
    assert tgrad.clamp_min(_t([-1.0, 2.0]), 0.5).tolist() == [0.5, 2.0]


ROLL_CASES = [((5, 7), 3, 1), ((5, 7), -9, 0), ((5, 7), (2, -3), (0, 1)), ((5, 7), (2, 4), (1, 1)),
              ((4, 6, 3), (1, 2, 5), (-1, 0, 1)), ((5, 7), 3, None), ((5, 7), 35, 1),
              ((0, 4), 1, 1), ((3, 0), 2, 0), ((7,), -2, 0), ((), 1, None)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16",
                                   "complex64"])
def test_roll_cpu_path_is_the_composition_and_np_roll(dtype):
    """roll's CPU copies (_numpy_layout.roll): np.roll's values and the composition's
    (composite._rolled, the cuda path) for each dtype, shape, repeated dim, shift past n,
    empty and 0-d tensors, a transposed (non-contiguous) input; a new C-contiguous tensor
    that shares no memory with the input."""
    from tgrad.ops.composite import _rolled
    rng = np.random.default_rng(0)
    for shape, shifts, dims in ROLL_CASES:
        for transposed in (False, True):
            a = (rng.standard_normal(shape[::-1] if transposed else shape) * 5)
            a = a.T if transposed else a
            x = tgrad.tensor(a).to(getattr(tgrad, dtype))
            y = tgrad.roll(x, shifts, dims)
            want = np.roll(x.numpy(), shifts, dims)
            assert y.dtype is x.dtype and (y.is_contiguous() or y.numel() == 0)
            np.testing.assert_array_equal(y.numpy(), want)
            if dims is not None:
                sh, dd = (shifts, dims) if isinstance(dims, tuple) else ((shifts,), (dims,))
                ref = _rolled(x, sh, tuple(d % x.ndim for d in dd))
                np.testing.assert_array_equal(y.numpy(), ref.numpy())
            assert not np.shares_memory(y.numpy(), x.numpy())


def test_roll_cpu_path_gradients():
    x = tgrad.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    for shifts, dims in ((1, 0), ((2, -1), (0, 1)), (5, None)):
        def f(t, shifts=shifts, dims=dims):
            return tgrad.roll(t, shifts, dims)
        assert tgrad.autograd.gradcheck(f, (x,)) and tgrad.autograd.gradgradcheck(f, (x,))


def test_randint_randperm_follow_manual_seed():
    tgrad.manual_seed(3)
    a = tgrad.randint(2, 5, (2000,))
    assert a.dtype is tgrad.int64 and set(np.unique(a.numpy()).tolist()) == {2, 3, 4}
    tgrad.manual_seed(3)
    assert tgrad.randint(2, 5, (2000,)).tolist() == a.tolist()
    p = tgrad.randperm(50)
    assert sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    assert tgrad.randint(4, (3,)).shape == (3,)  # randint(high, size)
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        tgrad.randint(5, 5, (1,))


# ------------------------------------------------------------------------------ review fixes
def test_addmm_broadcasts_input_to_the_product_only():
    assert tgrad.addmm(tgrad.ones(1, 4), tgrad.ones(0, 3), tgrad.ones(3, 4), beta=0).shape == \
        (0, 4)
    with pytest.raises(RuntimeError, match=r"addmm: the input of shape \[2, 3, 4\] can't be "
                                           r"expanded to the product's shape \[3, 4\]"):
        tgrad.addmm(tgrad.ones(2, 3, 4), tgrad.ones(3, 5), tgrad.ones(5, 4))
    inp = _t([[np.nan, 1.0]], requires_grad=True)
    tgrad.addmm(inp, _t(np.ones((2, 2))), _t(np.ones((2, 2))), beta=0).sum().backward()
    assert inp.grad.tolist() == [[0.0, 0.0]]  # in the graph with a zero gradient (PyTorch)


@pytest.mark.parametrize("call, msg", [
    (lambda: tgrad.zeros(2, 3).scatter(1, tgrad.tensor([[0, 1, 2], [0, 1, 2]]),
                                       tgrad.ones(1, 3)),
     r"scatter\(\): Expected index \[2, 3\] to be no larger than src \[1, 3\] at dimension 0"),
    (lambda: tgrad.zeros(2, 3).scatter_add(1, tgrad.tensor([[0, 1], [1, 2]]), tgrad.ones(2, 1)),
     r"scatter_add\(\): Expected index \[2, 2\] to be no larger than src \[2, 1\]"),
    (lambda: tgrad.zeros(3, 2).index_add(0, tgrad.tensor([0, 2]), tgrad.ones(2, 1)),
     r"index_add\(\): source of shape \[2, 1\] and dtype float32 must have shape \[2, 2\]"),
    (lambda: tgrad.zeros(2, 3).scatter(1, tgrad.tensor([[0], [1]]),
                                       tgrad.ones(2, 1, dtype=tgrad.float64)),
     r"scatter\(\): Expected self.dtype to be equal to src.dtype"),
    (lambda: tgrad.zeros(2, 3).scatter(1, tgrad.tensor([[0], [1], [0]]), tgrad.ones(3, 1)),
     r"Size does not match at dimension 0 expected index \[3, 1\] to be no larger than self"),
    (lambda: tgrad.lerp(tgrad.ones(2), tgrad.ones(2, dtype=tgrad.float64), 0.5),
     r"lerp: expected dtype float32 for `end` but got dtype float64"),
])
def test_scatter_family_and_lerp_check_their_arguments(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_nonzero_of_0d_randint_size_keyword_addcmul_int_value():
    assert tgrad.nonzero(tgrad.tensor(5.0)).shape == (1, 0)
    assert tgrad.nonzero(tgrad.tensor(0.0)).shape == (0, 0)
    assert [t.tolist() for t in tgrad.nonzero(tgrad.tensor(5.0), as_tuple=True)] == [[0]]
    assert tgrad.randint(10, size=(3,)).shape == (3,)
    out = tgrad.addcmul(tgrad.tensor([1, 2]), tgrad.tensor([1, 2]), tgrad.tensor([1, 2]),
                        value=0.5)
    assert out.dtype is tgrad.int64 and out.tolist() == [1, 2]  # value truncated to int 0


def test_addcmul_addcdiv_value_is_checked_against_the_result_dtype():
    # PyTorch converts ``value`` to the result dtype with its checked conversion (float32,
    # the opmath type, for halves) and has no bool kernel
    i8 = tgrad.tensor([1, 2], dtype=tgrad.int8)
    assert tgrad.addcmul(i8, i8, i8, value=-1.9).tolist() == [1 - 1, 2 - 4]  # truncated: -1
    assert tgrad.addcmul(i8, i8, i8, value=2 + 0j).tolist() == [1 + 2, 2 + 8]
    u8 = tgrad.tensor([1, 2], dtype=tgrad.uint8)
    assert tgrad.addcmul(u8, u8, u8, value=-1).tolist() == [0, (2 - 4) % 256]  # wraps
    for bad in (-1.5, 255.5, math.nan, math.inf, 2 + 1j):
        with pytest.raises(RuntimeError, match="addcmul: value (.* )?cannot be converted to "
                                               "type uint8 without overflow"):
            tgrad.addcmul(u8, u8, u8, value=bad)
    x = _t([1.0, 2.0]).float()
    for op in (tgrad.addcmul, tgrad.addcdiv):
        with pytest.raises(RuntimeError, match=f"{op.__name__}: value (.* )?cannot be converted "
                                               "to type float32"):
            op(x, x, x, value=2 + 1j)
        h = x.half()
        out = op(h, h, h, value=2 + 0j)  # a zero imaginary part converts; the dtype stays
        assert out.dtype is tgrad.float16
        assert out.tolist() == ([3.0, 10.0] if op is tgrad.addcmul else [3.0, 4.0])
        assert op(h, h, h, value=1e5).tolist() == [math.inf, math.inf]  # fits float32
    b = tgrad.tensor([True, False])
    with pytest.raises(NotImplementedError, match="\"addcmul_cpu_out\" not implemented for "
                                                  "'Bool'"):
        tgrad.addcmul(b, b, b)
    assert tgrad.addcmul(b, i8, i8).tolist() == [2, 4]  # an int8 result is fine


def test_clamp_number_bounds_keep_the_input_on_signed_zero_ties():
    # PyTorch's clamp is min(max(x, lo), hi) keeping x where it equals a bound (std::max /
    # std::min keep their first operand on ties): clamp(-0.0, min=0.0) is -0.0; an x past
    # the bound gives the bound with its own sign
    def signs(t):
        return np.signbit(t.float().numpy()).tolist()
    for dt in (tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16):
        for n in (1, 40):
            for x in (-0.0, 0.0):
                t = tgrad.full((n,), x, dtype=dt)
                for kw in ({"min": -x}, {"max": -x}, {"min": -x, "max": -x},
                           {"min": -x, "max": 1.0}, {"min": -1.0, "max": -x}):
                    assert signs(tgrad.clamp(t, **kw)) == [x < 0 or str(x) == "-0.0"] * n, kw
        v = tgrad.tensor([-1.0, 2.0], dtype=dt)
        assert signs(tgrad.clamp(v, min=-0.0)) == [True, False]
        assert signs(tgrad.clamp(v, min=0.0, max=1.0)) == [False, False]
        assert signs(tgrad.clamp(-v, max=-0.0)) == [True, True]  # 1 -> -0.0, -2 stays
        assert tgrad.clamp(tgrad.tensor([math.nan, 3.0], dtype=dt), min=-0.0, max=0.0
                           ).float().numpy()[0] != 0  # NaN stays NaN


def test_lerp_saves_only_what_its_gradients_read():
    # PyTorch's: with only input needing a gradient (weight's is read), changing input in
    # place after lerp is no error
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    c = tgrad.tensor([3.0, 4.0], dtype=tgrad.float64)
    w = tgrad.tensor([0.3, 0.7], dtype=tgrad.float64)
    x2 = x * 1.0
    y = tgrad.lerp(x2, c, w)
    x2.mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.7, 0.3], rtol=1e-15)
    wq = w.clone().requires_grad_()
    x3 = x.detach() * 1.0
    y = tgrad.lerp(x3, c, wq)  # weight's gradient reads input and end: still checked
    x3.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_lerp_of_integer_ends_with_a_0d_floating_weight_promotes():
    # PyTorch promotes the three first (result_type's rule: a 0-d operand of a higher
    # category decides the dtype); a number weight on integer ends stays an error
    for wdt in (tgrad.float64, tgrad.float16, tgrad.complex64):
        y = tgrad.lerp(tgrad.tensor([1, 2]), tgrad.tensor([3, 6]), tgrad.tensor(0.25, dtype=wdt))
        assert y.dtype is wdt
        np.testing.assert_array_equal(y.numpy(), np.array([1.5, 3.0], wdt.np))
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):
        tgrad.lerp(tgrad.tensor([1, 2]), tgrad.tensor([3, 6]), 0.5)


@pytest.mark.parametrize("op, npop", [("addcmul", np.multiply), ("addcdiv", np.divide)])
def test_addcmul_addcdiv_scale_tensor1_first_as_pytorch(op, npop):
    # input + (value * tensor1) op tensor2, rounded in that order (PyTorch's kernel): the
    # bits of the NumPy float32 sequence, and value * tensor1 may overflow first
    rng = np.random.default_rng(3)
    a, t1, t2 = (rng.standard_normal(1023).astype(np.float32) for _ in range(3))
    got = getattr(tgrad, op)(tgrad.tensor(a), tgrad.tensor(t1), tgrad.tensor(t2), value=0.7)
    ref = a + npop(t1 * np.float32(0.7), t2)
    assert np.array_equal(got.numpy().view(np.uint32), ref.view(np.uint32))
    f64 = tgrad.float64
    big = getattr(tgrad, op)(tgrad.tensor([0.0], dtype=f64), tgrad.tensor([1e308], dtype=f64),
                             tgrad.tensor([1e-10 if op == "addcmul" else 1e10], dtype=f64),
                             value=10)  # (t1 op t2 first would give 1e299)
    assert big.tolist() == [float("inf")]


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_graph_is_pytorchs_view_then_expand(indexing):
    # each grid: ExpandBackward0 over one ViewBackward0 of the input (0-d too), no view to
    # 1-D first; d input = the sum of g over the expanded dims
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = tgrad.tensor(5.0, requires_grad=True)
    c = tgrad.tensor([4.0, 6.0], requires_grad=True)
    grids = tgrad.meshgrid(a, b, c, indexing=indexing)
    want = (1, 3, 2) if indexing == "xy" else (3, 1, 2)
    for grid, leaf in zip(grids, (a, b, c)):
        assert tuple(grid.shape) == want
        names, node = [], grid.grad_fn
        while node is not None:
            names.append(node.name())
            node = node.next_functions[0][0] if node.next_functions else None
        assert names == ["ExpandBackward0", "ViewBackward0", "AccumulateGrad"]
        (g,) = tgrad.autograd.grad(grid.sum(), leaf)
        assert g.shape == leaf.shape and np.all(g.numpy() == 6 // leaf.numel())
