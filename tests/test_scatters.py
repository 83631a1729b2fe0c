"""slice_scatter / select_scatter / diagonal_scatter / masked_scatter beyond the op table
(tests/op_db.py checks values, gradients and the interpreted cuda device): PyTorch's
documented examples, the in-place masked_scatter_ and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck


def test_pytorch_documented_examples():
    a = tgrad.zeros(8, 8)
    b = tgrad.ones(2, 8)
    out = a.slice_scatter(b, start=6)
    assert out[6:].tolist() == [[1.0] * 8] * 2 and not out[:6].any().item()
    out = a.slice_scatter(tgrad.ones(8, 2), dim=1, start=2, end=6, step=2)
    assert out[0].tolist() == [0, 0, 1, 0, 1, 0, 0, 0]
    assert tgrad.select_scatter(tgrad.zeros(2, 2), tgrad.ones(2), 0, 0).tolist() == \
        [[1.0, 1.0], [0.0, 0.0]]
    assert tgrad.diagonal_scatter(tgrad.zeros(3, 3), tgrad.ones(2), 1).tolist() == \
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]
    x = tgrad.tensor([[0, 0, 0, 0, 0], [0, 0, 0, 0, 0]])
    mask = tgrad.tensor([[False, False, True, False, True], [True, True, False, True, True]])
    source = tgrad.tensor([[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]])
    assert x.masked_scatter(mask, source).tolist() == [[0, 0, 0, 0, 1], [2, 3, 0, 4, 5]]


def test_masked_scatter_inplace_gradients():
    x = tgrad.zeros(2, 3, requires_grad=True)
    src = tgrad.tensor(np.arange(1.0, 7.0, dtype=np.float32), requires_grad=True)
    y = x * 1
    y.masked_scatter_(tgrad.tensor([True, False, True]), src)
    assert y.tolist() == [[1.0, 0.0, 2.0], [3.0, 0.0, 4.0]]
    y.backward(tgrad.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
    assert x.grad.tolist() == [[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]]
    assert src.grad.tolist() == [0.0, 2.0, 3.0, 5.0, 0.0, 0.0]  # the unused tail gets 0


def test_errors():
    x = tgrad.zeros(4, 3)
    with pytest.raises(RuntimeError, match=r"slice_scatter\(\): expected src to have a size "
                                           r"equal to the slice of self\. src size = \[2, 3\], "
                                           r"slice size = \[4, 2\]"):
        x.slice_scatter(tgrad.ones(2, 3), dim=1, start=1)
    with pytest.raises(IndexError, match=r"select_scatter\(\): index 4 out of range"):
        x.select_scatter(tgrad.ones(3), 0, 4)
    with pytest.raises(RuntimeError, match=r"diagonal_scatter\(\): expected src to have a "
                                           r"size equal to the slice of self"):
        x.diagonal_scatter(tgrad.ones(4))
    with pytest.raises(RuntimeError, match="masked_scatter only supports boolean masks"):
        x.masked_scatter(tgrad.ones(3), tgrad.ones(12))
    with pytest.raises(RuntimeError, match="expected source to have at least 3 elements"):
        tgrad.zeros(3).masked_scatter(tgrad.tensor([True] * 3), tgrad.ones(2))


# ------------------------------------------------- differential-test fixes (PyTorch 2.13)
def test_put_on_a_non_contiguous_tensor_indexes_row_major_order():
    x = tgrad.zeros(2, 3)
    x.t().put_(tgrad.tensor([1]), tgrad.tensor([5.0]))  # x.t()[0, 1] is x[1, 0]
    assert x.tolist() == [[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]]
    ref = np.zeros((4, 3))
    view = ref[::2]  # NumPy's put on the flattened (row-major) view, written back
    flat = view.ravel()
    np.add.at(flat, [4, 0, -1, 4], [5.0, 2.0, 3.0, 1.0])
    view[...] = flat.reshape(view.shape)
    y = tgrad.zeros(4, 3, dtype=tgrad.float64)
    y[::2].put_(tgrad.tensor([[4, 0], [-1, 4]]),
                tgrad.tensor([[5.0, 2.0], [3.0, 1.0]], dtype=tgrad.float64), accumulate=True)
    np.testing.assert_array_equal(y.numpy(), ref)
    # the gradient: d base = g where nothing was written, d source = g at its positions
    a = tgrad.tensor(np.ones((2, 3)), requires_grad=True)
    s = tgrad.tensor([2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    w = np.arange(6.0).reshape(3, 2)
    out = (a * 1).t().put_(tgrad.tensor([1, 4]), s)
    (out * tgrad.tensor(w)).sum().backward()
    gv = w.copy()  # the gradient of the transposed view: zero at the written positions
    gv.ravel()[[1, 4]] = 0.0
    np.testing.assert_array_equal(a.grad.numpy(), gv.T)
    np.testing.assert_array_equal(s.grad.numpy(), [w.ravel()[1], w.ravel()[4]])


def test_put_requires_source_of_the_same_dtype():
    x = tgrad.zeros(2, 3)
    for src in (tgrad.tensor([5.0], dtype=tgrad.float64), tgrad.tensor([5])):
        with pytest.raises(RuntimeError, match="put_\\(\\): self and source expected to have "
                                               "the same dtype, but got self.dtype = Float"):
            x.put_(tgrad.tensor([1]), src)
        with pytest.raises(RuntimeError, match="same dtype"):
            x.put(tgrad.tensor([1]), src)
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Int"):
        x.put_(tgrad.tensor([1], dtype=tgrad.int32), tgrad.tensor([5.0]))
    assert not x.any().item()


def test_take_along_dim_negative_indices_with_a_dim():
    a = np.arange(12.0).reshape(3, 4)
    idx = np.array([[-1], [0], [-4]])
    got = tgrad.take_along_dim(tgrad.tensor(a), tgrad.tensor(idx), 1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx, 1))
    idx0 = np.array([[-1, 2, -3, 0]])
    got = tgrad.tensor(a).take_along_dim(tgrad.tensor(idx0), 0)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(a, idx0, 0))
    x = tgrad.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: tgrad.take_along_dim(t, tgrad.tensor(idx), 1), (x,))
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        tgrad.take_along_dim(tgrad.tensor(a), tgrad.tensor([[-5], [0], [0]]), 1)
    # without a dim (the flattened input) PyTorch takes no negative index (gather's
    # RuntimeError)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with "
                                           "size 12"):
        tgrad.take_along_dim(tgrad.tensor(a), tgrad.tensor([-1]))
    with pytest.raises(RuntimeError, match="dtype of indices should be Long but got Int"):
        tgrad.take_along_dim(tgrad.tensor(a), tgrad.tensor([[0]], dtype=tgrad.int32), 1)


def test_scatter_dims_error_names_the_tensor_that_differs():
    x, idx = tgrad.zeros(2, 3), tgrad.tensor([[0, 1]])
    with pytest.raises(RuntimeError, match=r"scatter\(\): Index tensor must have the same "
                                           r"number of dimensions as src tensor"):
        tgrad.scatter(x, 1, idx, tgrad.tensor(1.0))  # a 0-d tensor is no value= (PyTorch's)
    with pytest.raises(RuntimeError, match=r"scatter_add\(\): Index tensor must have the "
                                           r"same number of dimensions as self tensor"):
        tgrad.scatter_add(x, 1, tgrad.tensor([0]), tgrad.ones(1))


def test_take_along_dim_errors_0d_input_and_unbroadcastable_indices():
    # a 0-d input has no dim to take along (PyTorch's IndexError); dim=None indexes it
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dim"):
        tgrad.take_along_dim(tgrad.tensor(3.0), tgrad.tensor(0), 0)
    assert tgrad.take_along_dim(tgrad.tensor(3.0), tgrad.tensor([0, 0])).tolist() == [3.0, 3.0]
    # dims other than dim broadcast (size 1 against n); sizes 3 and 2 do not
    a = np.arange(12.0).reshape(3, 4)
    got = tgrad.take_along_dim(tgrad.tensor(a[:1]), tgrad.tensor(np.zeros((3, 2), np.int64)), 1)
    np.testing.assert_array_equal(got.numpy(), np.zeros((3, 2)))
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(2\) at non-singleton dimension 0"):
        tgrad.take_along_dim(tgrad.tensor(a), tgrad.tensor(np.zeros((2, 4), np.int64)), 1)


def test_gather_on_0d_input_with_a_vector_index():
    x = tgrad.tensor(3.0, dtype=tgrad.float64, requires_grad=True)
    out = x.gather(0, tgrad.tensor([0, 0, 0]))
    assert out.tolist() == [3.0, 3.0, 3.0]
    out.backward(tgrad.tensor([1.0, 2.0, 4.0], dtype=tgrad.float64))
    assert x.grad.item() == 7.0  # the copies' gradients add up
    assert gradcheck(lambda t: t.gather(0, tgrad.tensor([0, 0])), (x,))
    assert x.gather(0, tgrad.tensor(0)).shape == ()
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        x.gather(0, tgrad.tensor([[0, 0]]))
    # PyTorch's keyword (the gradient is dense either way)
    y = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert y.gather(1, tgrad.tensor([[1], [0]]), sparse_grad=False).tolist() == [[2.0], [3.0]]
    assert tgrad.gather(y, dim=0, index=tgrad.tensor([[1, 0]])).tolist() == [[3.0, 2.0]]


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_extremum_gradient_with_a_nan_contributor(reduce, include_self):
    """A NaN result (NaN propagates, as amax) gives each of its contributors a NaN gradient,
    as tgrad's amax over the same values; other targets keep the usual rule."""
    nan = float("nan")
    x = tgrad.tensor([2.0, 7.0, 1.0], dtype=tgrad.float64, requires_grad=True)
    s = tgrad.tensor([nan, 3.0, 5.0, 4.0], dtype=tgrad.float64, requires_grad=True)
    out = x.scatter_reduce(0, tgrad.tensor([0, 0, 2, 2]), s, reduce, include_self=include_self)
    assert np.isnan(out[0].item())
    out.sum().backward()
    # target 0: NaN, shared by x[0] (when it takes part) and s[0], s[1]
    assert np.isnan(s.grad[0].item()) and np.isnan(s.grad[1].item())
    assert np.isnan(x.grad[0].item()) if include_self else x.grad[0].item() == 0.0
    assert x.grad[1].item() == 1.0  # nothing scattered: kept
    # target 2: the ordinary extremum of {x[2]} (include_self) + {5, 4}
    vals = ([1.0] if include_self else []) + [5.0, 4.0]
    pick = max(vals) if reduce == "amax" else min(vals)
    want = [v == pick for v in vals]
    got = ([x.grad[2].item()] if include_self else []) + s.grad[2:].tolist()
    assert got == [float(w) for w in want]
    # the reference: amax / amin of target 0's contributors gives each a NaN gradient too
    members = ([x[0]] if include_self else []) + [s[0], s[1]]
    v = tgrad.stack([m.detach() for m in members]).requires_grad_()
    getattr(v, reduce)().backward()
    assert np.isnan(v.grad.numpy()).all()
    # a NaN input that nothing is scattered to: the extremum of itself alone, NaN as well
    x = tgrad.tensor([nan, 1.0], dtype=tgrad.float64, requires_grad=True)
    s = tgrad.tensor([2.0], dtype=tgrad.float64, requires_grad=True)
    x.scatter_reduce(0, tgrad.tensor([1]), s, reduce, include_self=include_self).sum().backward()
    assert np.isnan(x.grad[0].item())


def test_scatter_reduce_on_bool_tensors():
    """sum / amax: logical or, prod / amin: logical and (PyTorch's results on bool)."""
    b = np.array([True, False, False])
    src = np.array([True, True, False, False])
    index = np.array([0, 1, 2, 2])
    for reduce, fold in (("sum", np.logical_or), ("amax", np.logical_or),
                         ("prod", np.logical_and), ("amin", np.logical_and)):
        for include_self in (True, False):
            want = b.copy()
            seen = set()
            for j, t in enumerate(index):
                if not include_self and t not in seen:
                    want[t] = src[j]
                else:
                    want[t] = fold(want[t], src[j])
                seen.add(t)
            got = tgrad.tensor(b).scatter_reduce(0, tgrad.tensor(index), tgrad.tensor(src),
                                                 reduce, include_self=include_self)
            assert got.dtype is tgrad.bool and got.tolist() == want.tolist(), (reduce, include_self)
    with pytest.raises(NotImplementedError, match="mean"):
        tgrad.tensor(b).scatter_reduce(0, tgrad.tensor(index), tgrad.tensor(src), "mean")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        tgrad.tensor(b).scatter_reduce(0, tgrad.tensor([0]), tgrad.tensor([1.0]), "sum")
    assert tgrad.tensor(True).scatter_reduce(0, tgrad.tensor([0, 0]),
                                             tgrad.tensor([False, True]), "amin").item() is False


def test_src_of_another_dtype_is_cast():
    # PyTorch's *_scatter copy src into input's dtype (copy_), src's gradient in src's dtype
    src = tgrad.tensor([1.75, -2.5], dtype=tgrad.float32, requires_grad=True)
    out = tgrad.select_scatter(tgrad.zeros(2, 2, dtype=tgrad.float64), src, 0, 0)
    assert out.dtype is tgrad.float64 and out.tolist() == [[1.75, -2.5], [0.0, 0.0]]
    out.backward(tgrad.tensor([[3.0, 4.0], [5.0, 6.0]], dtype=tgrad.float64))
    assert src.grad.dtype is tgrad.float32 and src.grad.tolist() == [3.0, 4.0]
    ints = tgrad.zeros(2, 3, dtype=tgrad.int64)
    got = tgrad.slice_scatter(ints, tgrad.tensor([[1.7, -2.5, 3.2]]), 0, 1, 2)
    assert got.dtype is tgrad.int64 and got.tolist() == [[0, 0, 0], [1, -2, 3]]  # truncated
    got = tgrad.diagonal_scatter(ints, tgrad.tensor([True, True]))
    assert got.tolist() == [[1, 0, 0], [0, 1, 0]]


def test_masked_scatter_broadcasts_input_to_the_mask():
    # out of place, input and mask broadcast together (PyTorch's): (4,) with a (2, 4) mask
    x = tgrad.zeros(4, dtype=tgrad.float64, requires_grad=True)
    mask = tgrad.tensor([[True, False, True, False], [True, True, True, True]])
    out = tgrad.masked_scatter(x, mask, tgrad.arange(10.0, dtype=tgrad.float64))
    assert out.tolist() == [[0.0, 0.0, 1.0, 0.0], [2.0, 3.0, 4.0, 5.0]]
    out.backward(tgrad.ones(2, 4, dtype=tgrad.float64))
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 1.0]  # the unmasked places of both rows
    # PyTorch's texts: expand's in place (self cannot grow), broadcasting's out of place
    with pytest.raises(RuntimeError, match=r"masked_scatter_: expand: the number of sizes "
                                           r"provided \(1\) must be greater or equal"):
        tgrad.zeros(4).masked_scatter_(mask, tgrad.ones(8))
    with pytest.raises(RuntimeError, match=r"masked_scatter_: The expanded size of the tensor "
                                           r"\(4\) must match the existing size \(3\)"):
        tgrad.zeros(4).masked_scatter_(tgrad.ones(3, dtype=tgrad.bool), tgrad.ones(8))
    with pytest.raises(RuntimeError, match=r"masked_scatter: The size of tensor a \(4\) must "
                                           r"match the size of tensor b \(3\) at "
                                           r"non-singleton dimension 1"):
        tgrad.zeros(3).masked_scatter(mask, tgrad.ones(8))


def test_masked_ops_shape_mismatch_errors_as_pytorch():
    # "The size of tensor a (mask) must match the size of tensor b (input) ..." (masked_fill_:
    # a is self), PyTorch's broadcasting text naming the op (masked_fill said where's)
    m = tgrad.tensor([True, False, True])
    x = tgrad.zeros(4)
    txt = r"The size of tensor a \({}\) must match the size of tensor b \({}\) at " \
          r"non-singleton dimension 0"
    with pytest.raises(RuntimeError, match="masked_fill: " + txt.format(3, 4)):
        x.masked_fill(m, 1.0)
    with pytest.raises(RuntimeError, match="masked_fill_: " + txt.format(4, 3)):
        x.masked_fill_(m, 1.0)
    with pytest.raises(RuntimeError, match="masked_select: " + txt.format(3, 4)):
        x.masked_select(m)
    # broadcasting ones still work: a (2, 4) mask fills a (4,) input out of place
    assert x.masked_fill(tgrad.ones(2, 4, dtype=tgrad.bool), 1.0).tolist() == [[1.0] * 4] * 2
