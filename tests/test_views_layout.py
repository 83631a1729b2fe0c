"""View and layout semantics that follow PyTorch: in-place on outputs of functions returning
several views (split, chunk, unbind), the gradient layout contract of AccumulateGrad,
strides and contiguity of empty and size-1 tensors, and Tensor.T's deprecation warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tgrad

_MULTI = ("is a view and is being modified inplace. This view is the output of a function "
          "that returns multiple views. Such functions do not allow the output views to be "
          "modified inplace. You should replace the inplace operation by an out-of-place one.")
_INDIRECT = ("is a view and its base or another view of its base has been modified inplace. "
             "This view is the output of a function that returns multiple views.")


def _y(shape=(4, 3)):
    x = tgrad.tensor(np.arange(float(np.prod(shape))).reshape(shape), dtype=tgrad.float64,
                     requires_grad=True)
    return x, x * 1.0


# ------------------------------------------------------------------ multi-output views
@pytest.mark.parametrize("make, head", [
    (lambda y: y.split(2)[0], "Output 0 of Split "),
    (lambda y: y.chunk(2)[1], "Output 1 of Split "),
    (lambda y: y.split([1, 3])[1], "Output 1 of SplitWithSizes "),
    (lambda y: tgrad.split(y, [1, 3])[0], "Output 0 of SplitWithSizes "),
    (lambda y: y.unbind()[2], "Output 2 of Unbind "),
    (lambda y: y.unbind(1)[0], "Output 0 of Unbind "),
    (lambda y: y.split(4)[0], "Output 0 of Split "),  # one piece only: still refused
    (lambda y: y.split(2)[0][0], "Output 0 of Select "),  # a view of a piece
    (lambda y: y.split(2)[0].view(-1), "Output 0 of View "),
    (lambda y: y[1:].split(1)[0], "Output 0 of Split "),  # a split of a view
])
@pytest.mark.parametrize("op", [lambda v: v.add_(1.0), lambda v: v.mul_(2.0),
                                lambda v: v.zero_(), lambda v: v.copy_(tgrad.ones(v.shape)),
                                lambda v: v.fill_(5.0),
                                lambda v: v.unsqueeze_(0)])
def test_inplace_on_output_of_multi_view_function_raises(make, head, op):
    x, y = _y()
    v = make(y)
    with pytest.raises(RuntimeError) as e:
        op(v)
    assert str(e.value) == head + _MULTI
    assert x.grad is None and y._version == 0  # nothing was written


def test_setitem_on_a_piece_names_the_select():
    _, y = _y()
    with pytest.raises(RuntimeError, match="^Output 0 of Select " + _MULTI[:40]):
        y.split(2)[0][0] = 5.0  # as PyTorch: the write goes through piece[0]


def test_leaf_split_raises_the_multi_output_error_first():
    x = tgrad.zeros(4, 3, dtype=tgrad.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Output 0 of Split " + _MULTI[:40]):
        x.split(2)[0].add_(1.0)


def test_a_stale_split_output_still_works_in_non_differentiable_ops():
    # PyTorch raises only where the stale piece enters the graph: comparisons, argmax and a
    # where condition read no grad_fn (tgrad's raised the multi-output error for them too)
    x = tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64, requires_grad=True)
    y = x * 2
    a, _ = y.split(2)
    y.mul_(2)
    assert (a < 5.0).tolist() == [True, False]
    assert a.argmax().item() == 1
    assert tgrad.where(a > 5.0, 1.0, 0.0).tolist() == [0.0, 1.0]
    assert a.requires_grad and a.tolist() == [4.0, 8.0]
    for differentiable in (lambda: a.sum(), lambda: a.clone(), lambda: a.grad_fn):
        with pytest.raises(RuntimeError, match="^Output 0 of Split is a view and its base or "
                                               "another view of its base has been modified "
                                               "inplace"):
            differentiable()


def test_multi_output_view_of_a_base_not_requiring_grad():
    w = tgrad.zeros(4, 3, dtype=tgrad.float64)
    w.split(2)[0].add_(1.0)  # nothing recorded: allowed, as PyTorch
    np.testing.assert_array_equal(w.numpy(), np.r_[np.ones((2, 3)), np.zeros((2, 3))])
    other = tgrad.ones(2, 3, dtype=tgrad.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        w.split(2)[1].add_(other)
    assert str(e.value).startswith("A view was created in no_grad mode and is being modified "
                                   "inplace with grad mode enabled. This view is the output "
                                   "of a function that returns multiple views.")


def test_views_split_by_slicing_may_be_modified_in_place():
    # tensor_split / hsplit / vsplit / dsplit return slices in PyTorch: in place is fine
    x, y = _y((4, 6))
    tgrad.tensor_split(y, 2)[1].mul_(3.0)
    tgrad.hsplit(y, 3)[0].add_(1.0)
    tgrad.vsplit(y, [1])[0].mul_(2.0)
    tgrad.dsplit(y.reshape(2, 2, 6), 2)[1].mul_(5.0)
    (y * y).sum().backward()
    c = np.ones((4, 6))  # y = c x elementwise (+ 1 on two columns): dy/dx = c
    c[2:] *= 3.0
    c[:1] *= 2.0
    c.reshape(2, 2, 6)[:, :, 3:] *= 5.0
    a = x.detach().numpy()
    ref = a.copy()
    ref[2:] *= 3.0
    ref[:, :2] += 1.0
    ref[:1] *= 2.0
    ref.reshape(2, 2, 6)[:, :, 3:] *= 5.0
    np.testing.assert_allclose(y.detach().numpy(), ref)
    np.testing.assert_allclose(x.grad.numpy(), 2 * ref * c)


def test_no_grad_inplace_then_use_in_grad_mode_raises():
    x, y = _y()
    with tgrad.no_grad():
        y.split(2)[0].add_(1.0)  # allowed inside no_grad, as PyTorch
        p = y.chunk(2)[1]
        p.add_(1.0)  # made in no_grad: a plain view there
    a, b = y.split(2)
    with tgrad.no_grad():
        y.mul_(2.0)
    for use in (lambda: a.grad_fn, lambda: a.is_leaf, lambda: a * 2.0):
        with pytest.raises(RuntimeError, match="^Output 0 of Split " + _INDIRECT):
            use()
    assert a.requires_grad  # PyTorch: requires_grad itself does not raise
    with pytest.raises(RuntimeError, match="^Output 1 of Split " + _INDIRECT):
        b.grad_fn  # noqa: B018


@pytest.mark.parametrize("modify", [lambda y: y.add_(1.0), lambda y: y[3].mul_(2.0),
                                    lambda y: y.unsqueeze_(0)])
def test_base_modified_in_place_invalidates_its_multi_output_views(modify):
    x, y = _y()
    rows = y.unbind()
    first = y.split(2)[0][0]  # a view of a piece
    modify(y)
    with pytest.raises(RuntimeError, match="^Output 0 of Unbind " + _INDIRECT):
        rows[0] * 1.0
    with pytest.raises(RuntimeError, match="^Output 0 of Select " + _INDIRECT):
        first.grad_fn  # noqa: B018


def test_leaf_base_stepped_in_no_grad_invalidates_its_chunks():
    w = tgrad.tensor(np.ones((4, 2)), requires_grad=True)
    a, b = w.chunk(2)
    with tgrad.no_grad():
        w -= 0.1  # an optimizer step
    with pytest.raises(RuntimeError, match=_INDIRECT):
        (a * b).sum().backward()
    a, b = w.chunk(2)  # chunks taken after the step are fine
    (a * b).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((4, 2), 0.9))


def test_detached_or_no_grad_pieces_may_be_modified_and_gradients_stay_right():
    x, y = _y()
    d = y.split(2)[0].detach()
    d.add_(10.0)  # shares memory, outside the graph, as PyTorch
    with tgrad.no_grad():
        q = y.split(2)[1]
    with pytest.raises(RuntimeError, match="no_grad mode"):
        q.add_(1.0)  # a no_grad view modified in grad mode: the no_grad error
    a, b = y.split(2)
    (a * 2.0 + b * 3.0).sum().backward()  # out-of-place use is unaffected
    np.testing.assert_array_equal(x.grad.numpy(), np.r_[np.full((2, 3), 2.0),
                                                        np.full((2, 3), 3.0)])


def test_split_node_names():
    _, y = _y((5, 3))
    assert y.split(2)[0].grad_fn.name() == "SplitBackward0"
    assert y.chunk(3)[0].grad_fn.name() == "SplitBackward0"
    assert y.split([2, 3])[0].grad_fn.name() == "SplitWithSizesBackward0"
    assert y.split_with_sizes([2, 3])[1].grad_fn.name() == "SplitWithSizesBackward0"
    assert y.unbind()[0].grad_fn.name() == "UnbindBackward0"
    assert tgrad.tensor_split(y, 2)[0].grad_fn.name() == "SliceBackward0"


# ------------------------------------------------------------------ gradient layout contract
def _leaf(arr_fn, shape):
    """A leaf with the layout ``arr_fn`` gives (a view of a fresh buffer, detached)."""
    rng = np.random.default_rng(3)
    base = tgrad.tensor(rng.standard_normal(shape))
    return arr_fn(base).detach().requires_grad_()


@pytest.mark.parametrize("make, shape, want", [
    (lambda b: b.t(), (3, 4), (1, 4)),  # transposed: dense, so its strides
    (lambda b: b.permute(2, 0, 1), (2, 3, 4), (1, 12, 4)),
    (lambda b: b, (4, 3), (3, 1)),
    (lambda b: b[:, ::2], (4, 6), (3, 1)),  # not dense: contiguous
    (lambda b: b.expand(4, 3), (3,), (3, 1)),  # overlapping: contiguous
])
@pytest.mark.parametrize("loss, grad", [
    (lambda x: x.sum(), lambda a: np.ones_like(a)),
    (lambda x: (x * x).sum(), lambda a: 2 * a),
    (lambda x: (x.movedim(0, -1) * 3.0).sum(), lambda a: np.full_like(a, 3.0))])
def test_new_grad_follows_the_leaf_layout(make, shape, want, loss, grad):
    x = _leaf(make, shape)
    loss(x).backward()
    assert x.grad.stride() == want
    assert x.grad._base is None
    np.testing.assert_allclose(x.grad.numpy(), grad(x.detach().numpy()), rtol=1e-15)


def test_transposed_leaf_grad_values_and_autograd_grad_is_plain():
    a = np.arange(12.0).reshape(3, 4)
    x = tgrad.tensor(a).t().detach().requires_grad_()  # (4, 3), strides (1, 4)
    w = tgrad.tensor(np.arange(12.0).reshape(4, 3) / 7.0)
    (x * w).sum().backward()
    assert x.grad.stride() == (1, 4) and not x.grad.is_contiguous()
    np.testing.assert_array_equal(x.grad.numpy(), w.numpy())
    (g,) = tgrad.autograd.grad((x * w).sum(), [x])  # no layout contract there (PyTorch)
    np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_size_one_dims_do_not_break_the_contract():
    x = tgrad.zeros(7).as_strided((3, 1), (1, 7)).detach().requires_grad_()
    (x * 2.0).sum().backward()
    assert x.grad.stride()[0] == 1
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 1), 2.0))


def test_accumulation_keeps_the_existing_grad_and_its_layout():
    x = tgrad.tensor(np.ones((3, 4))).t().detach().requires_grad_()
    (x * 2.0).sum().backward()
    g0 = x.grad
    (x * 3.0).sum().backward()
    assert x.grad is g0 and x.grad.stride() == (1, 4)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 5.0))
    # an assigned .grad that breaks the contract is kept (and warned about, as PyTorch)
    y = tgrad.ones(4, 3, dtype=tgrad.float64, requires_grad=True)
    g = tgrad.zeros(3, 4, dtype=tgrad.float64).t()
    y.grad = g
    with pytest.warns(UserWarning, match="grad and param do not obey the gradient layout "
                                         "contract"):
        (y * 2.0).sum().backward()
    assert y.grad is g and y.grad.stride() == (1, 4)
    np.testing.assert_array_equal(y.grad.numpy(), np.full((4, 3), 2.0))


def test_create_graph_grad_follows_the_layout_and_is_differentiable():
    x = tgrad.tensor(np.arange(1.0, 13.0).reshape(3, 4)).t().detach().requires_grad_()
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.stride() == (1, 4) and x.grad.grad_fn.name() == "CopyBackwards"
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.detach().numpy(), 3 * xv ** 2)
    (gg,) = tgrad.autograd.grad(x.grad.sum(), [x])
    np.testing.assert_allclose(gg.numpy(), 6 * xv)


# ------------------------------------------------------------------ strides of empty / size-1
def _torch_contiguous_strides(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 3), (1, 0), (0, 1), (1,),
                                   (1, 3), (3, 1), (2, 1, 3), (1, 3, 1), ()])
@pytest.mark.parametrize("make", [
    lambda s: tgrad.empty(s), lambda s: tgrad.zeros(s), lambda s: tgrad.ones(s),
    lambda s: tgrad.full(s, 2.0), lambda s: tgrad.rand(s), lambda s: tgrad.zeros(s).clone(),
    lambda s: tgrad.zeros(s).contiguous(), lambda s: tgrad.zeros(s).reshape(s),
    lambda s: tgrad.zeros((int(np.prod(s)),)).view(s),
    lambda s: tgrad.tensor(np.zeros(s)) if 0 not in s else tgrad.empty(s)])
def test_contiguous_strides_of_empty_and_size_one_shapes(shape, make):
    t = make(shape)
    assert t.shape == shape
    assert t.stride() == _torch_contiguous_strides(shape)  # PyTorch's, e.g. (0, 3): (3, 1)
    assert t.is_contiguous()


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 3), (0,)])
def test_views_of_empty_tensors_are_contiguous(shape):
    t = tgrad.zeros(shape)
    for v in (t.unsqueeze(0), t.unsqueeze(-1), t.squeeze(), t.permute(*range(t.ndim)[::-1]),
              t.expand((2,) + shape), t[:0], t.reshape(-1)):
        assert v.numel() == 0 and v.is_contiguous()
        assert len(v.stride()) == v.ndim and all(s >= 0 for s in v.stride())


@pytest.mark.parametrize("size, stride, contiguous", [
    ((3, 1), (1, 5), True),  # a size-1 dim's stride does not matter
    ((1, 3), (7, 1), True),
    ((2, 1, 3), (3, 9, 1), True),
    ((1, 1), (4, 9), True),
    ((1, 3), (1, 2), False),
    ((3, 3), (1, 3), False),
    ((0, 3), (1, 5), True),  # numel 0: contiguous whatever the strides
    ((3, 0), (9, 9), True),
    ((2, 2), (2, 0), False),
])
def test_is_contiguous_ignores_size_one_dims_and_empty_tensors(size, stride, contiguous):
    v = tgrad.zeros(20).as_strided(size, stride)
    assert v.is_contiguous() is contiguous
    assert v.stride() == stride  # as PyTorch, empty or not


@pytest.mark.parametrize("make, stride", [
    # a view of a non-empty tensor keeps its strides when its result is empty (PyTorch's:
    # slicing and permuting only change the size / stride metadata)
    (lambda: tgrad.zeros(4, 3)[:, :0], (3, 1)),
    (lambda: tgrad.zeros(4, 3)[:0], (3, 1)),
    (lambda: tgrad.zeros(4, 3, 2)[:, :0], (6, 2, 1)),
    (lambda: tgrad.zeros(4, 3, 2)[:, :, :0], (6, 2, 1)),
    (lambda: tgrad.zeros(4, 3)[::2, :0], (6, 1)),
    (lambda: tgrad.zeros(4, 3).t()[:0], (1, 3)),
    (lambda: tgrad.zeros(4, 3)[:, :0].t(), (1, 3)),
    (lambda: tgrad.zeros(3, 4)[:, 1:3][:0], (4, 1)),
    (lambda: tgrad.zeros(4, 3, 2)[:0, :, ::2], (6, 2, 2)),
    (lambda: tgrad.zeros(1, 3).expand(4, 3)[:0], (0, 1)),
    (lambda: tgrad.zeros(4, 3)[:, :0].expand(2, 4, 0), (0, 3, 1)),
    (lambda: tgrad.zeros(2, 3, 4).permute(2, 0, 1)[:, :0], (1, 12, 4)),
    (lambda: tgrad.zeros(4, 3)[:, 1][:0], (3,)),
    (lambda: tgrad.zeros(5, 6)[1:3:2, 4:2], (12, 1)),
    # made empty (a creation function, an op's result, a reshape): contiguous, a size-0
    # dim counted as 1
    (lambda: tgrad.zeros(4, 3)[:, :0] + 1, (1, 1)),
    (lambda: tgrad.zeros(4, 3)[:, :0].reshape(2, 0), (1, 1)),
    (lambda: tgrad.zeros(4, 3)[:, :0].flatten(), (1,)),
    (lambda: tgrad.cat([tgrad.zeros(2, 0), tgrad.zeros(3, 0)]), (1, 1)),
])
def test_strides_of_views_that_are_empty(make, stride):
    t = make()
    assert t.numel() == 0 and t.stride() == stride and t.is_contiguous()


def test_size_one_strides_of_views():
    x = tgrad.zeros(2, 1, 3)
    assert x.stride() == (3, 3, 1)
    assert x.unsqueeze(0).stride() == (6, 3, 3, 1)  # PyTorch: size * stride of the next dim
    assert x.unsqueeze(3).stride() == (3, 3, 1, 1)
    assert x.squeeze(1).stride() == (3, 1)
    assert x.transpose(0, 2).stride() == (1, 3, 3) and not x.transpose(0, 2).is_contiguous()
    assert x.permute(1, 0, 2).is_contiguous()  # only a size-1 dim moved
    assert x.expand(2, 4, 3).stride() == (3, 0, 1)
    assert tgrad.zeros(3, 1).t().is_contiguous()  # (1, 3) with strides (1, 1)


# ------------------------------------------------------------------ Tensor.T
def test_T_warns_below_and_above_two_dims():  # noqa: N802
    with pytest.warns(UserWarning, match=r"^Tensor\.T is deprecated on 0-D tensors\. This "
                                         r"function is the identity in these cases\.$"):
        z = tgrad.tensor(2.5).T
    assert z.shape == () and z.item() == 2.5
    for shape, want in (((3,), (3,)), ((2, 3, 4), (4, 3, 2))):
        x = tgrad.tensor(np.arange(float(np.prod(shape))).reshape(shape))
        with pytest.warns(UserWarning, match=r"^The use of `x\.T` on tensors of dimension "
                                             r"other than 2 to reverse their shape is "
                                             r"deprecated and it will throw an error"):
            y = x.T
        assert y.shape == want
        np.testing.assert_array_equal(y.numpy(), x.numpy().T)
    m = tgrad.tensor(np.arange(6.0).reshape(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(m.T.numpy(), np.arange(6.0).reshape(2, 3).T)


# ------------------------------------------------------------------ view node names
def test_view_op_node_names_are_pytorchs():
    y = tgrad.zeros(2, 1, 3, dtype=tgrad.float64, requires_grad=True) * 1.0
    names = {
        "SqueezeBackward0": y.squeeze(), "SqueezeBackward1": y.squeeze(1),
        "SqueezeBackward2": y.squeeze((1,)), "UnsqueezeBackward0": y.unsqueeze(0),
        "TransposeBackward0": [y.transpose(0, 1), y.swapaxes(0, 2), y.swapdims(0, 2), y.mT],
        "TBackward0": [y[0].t(), y[0, 0].t()],
        "PermuteBackward0": [y.permute(1, 0, 2), y.movedim(0, 1), y.moveaxis(0, 1)],
    }
    for name, ts in names.items():
        for t in ts if isinstance(ts, list) else [ts]:
            assert t.grad_fn.name() == name
    with pytest.warns(UserWarning):
        assert y.T.grad_fn.name() == "PermuteBackward0"
    with pytest.raises(RuntimeError, match="^Output 0 of T is a view and is being modified"):
        y[0].t().split(1)[0].t().add_(1.0)
    # the renamed views still differentiate as before
    x = tgrad.tensor(np.arange(6.0).reshape(2, 1, 3), requires_grad=True)
    assert tgrad.autograd.gradcheck(
        lambda t: t.squeeze(1).t().unsqueeze(0).transpose(0, 2).squeeze() * t.sum(), (x,))


@pytest.mark.parametrize("change", ["t_", "as_strided_", "transpose_"])
def test_view_taken_before_its_base_changed_geometry_in_place(change):
    # v = b.view(-1) no longer replays from b once b.t_() / b.as_strided_() changed b's
    # shape and strides (view(-1) of the transposed b is illegal); v is re-derived from the
    # storage (PyTorch: as_strided), its values unchanged, d/da sum(w v) = w
    w = np.arange(1.0, 13.0)
    a = tgrad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    b = a * 1
    v = b.view(-1)
    if change == "t_":
        b.t_()
    elif change == "transpose_":
        b.transpose_(0, 1)
    else:
        b.as_strided_((6,), (1,))
    loss = (v * tgrad.tensor(w)).sum()
    assert v.tolist() == list(range(12))
    loss.backward()
    if change == "as_strided_":  # (as PyTorch: through b's new node, which spans b[:6])
        w[6:] = 0.0
    np.testing.assert_array_equal(a.grad.numpy(), w.reshape(3, 4))
    assert tgrad.autograd.gradcheck(lambda t: _view_then_retranspose(t), (a.detach().clone()
                                                                         .requires_grad_(),))


def _view_then_retranspose(t):
    b = t * t
    v = b.view(-1)
    b.t_()
    return v.sin() * 2




# ------------------------------------------------------------------ the backend's as_strided
def _overlapping_rows(a: np.ndarray) -> np.ndarray:
    """(3, 3) rows of a's memory one element apart: no flat buffer (its base is NumPy's
    DummyArray), so the backend takes its np.lib.stride_tricks fallback."""
    return np.lib.stride_tricks.as_strided(a, (3, 3), (8, 8))


@pytest.mark.parametrize("make", [
    lambda a: a,  # contiguous: built on a itself
    lambda a: a[:, 1:],  # a strided view: built on its contiguous base
    lambda a: np.asfortranarray(a),  # Fortran order
    _overlapping_rows,
])
@pytest.mark.parametrize("shape, strides, offset", [((3, 2), (2, 3), 1), ((4,), (1,), 2),
                                                    ((0,), (1,), 4), ((2, 2), (0, 1), 0)])
def test_backend_as_strided_reads_memory_from_the_offset(make, shape, strides, offset):
    from tgrad.backends import numpy as np_backend
    a = np.arange(12.0).reshape(3, 4)
    x = make(a)
    root = x if x.flags.forc else a  # the memory x's elements lie in
    start = (x.__array_interface__["data"][0] - root.__array_interface__["data"][0]) // 8
    memory = root.ravel(order="K")[start:]  # from x's first element
    want = np.array([memory[offset + sum(i * s for i, s in zip(idx, strides))]
                     for idx in np.ndindex(*shape)]).reshape(shape)
    got = np_backend.as_strided(x, shape, strides, offset)
    assert got.strides == tuple(s * 8 for s in strides)
    np.testing.assert_array_equal(got, want)
    x.flags.writeable = False  # a read-only x gives a read-only view
    assert not np_backend.as_strided(x, shape, strides, offset).flags.writeable
