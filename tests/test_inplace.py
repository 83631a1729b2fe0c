"""In-place ops: version counters shared by views, the saved-tensor check, leaf checks and
correct gradients through in-place ops on non-leaves and views (vs NumPy and gradcheck)."""

import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck

X = np.array([0.5, -1.5, 2.0, 0.25])
M = np.array([[1.0, -2.0, 0.5], [3.0, 0.75, -1.0]])


def leaf(arr):
    return tgrad.tensor(arr, dtype=tgrad.float64, requires_grad=True)


def f64(arr):
    return tgrad.tensor(arr, dtype=tgrad.float64)


# --------------------------------------------------------------------- version counter

def test_every_inplace_op_bumps_the_shared_version():
    base = tgrad.zeros(2, 3)
    view = base[0]
    other = base.transpose(0, 1)
    ops = [lambda t: t.add_(1), lambda t: t.sub_(1), lambda t: t.mul_(2), lambda t: t.div_(2),
           lambda t: t.zero_(), lambda t: t.fill_(3.0), lambda t: t.copy_(tgrad.ones(3)),
           lambda t: t.clamp_(0, 1), lambda t: t.__iadd__(1), lambda t: t.__imul__(2),
           lambda t: t.__setitem__(0, 5.0), lambda t: t.__setitem__([1, 2], 7.0)]
    for i, op in enumerate(ops):
        op(view)
        assert base._version == view._version == other._version == i + 1
    assert tgrad.zeros(2)._version == 0
    np.testing.assert_array_equal(base.numpy()[0], [5.0, 7.0, 7.0])
    np.testing.assert_array_equal(base.numpy()[1], [0.0, 0.0, 0.0])


def test_out_of_place_ops_do_not_bump_version():
    a = tgrad.ones(3)
    _ = a * 2 + a.exp()
    _ = a[0:2]
    assert a._version == 0


# ---------------------------------------------------------------- saved tensor checks

def test_modified_saved_input_raises_pytorch_message():
    a = leaf(X)
    b = a * 1
    c = b * b  # saves b (version 0)
    b.add_(1)
    with pytest.raises(RuntimeError) as e:
        c.sum().backward()
    msg = str(e.value)
    assert "one of the variables needed for gradient computation has been modified by an " \
           "inplace operation" in msg
    assert "[tgrad.float64 [4]], which is output 0 of AddBackward0" in msg
    assert "is at version 1; expected version 0 instead" in msg


def test_modified_saved_output_raises():
    a = leaf(X)
    y = a.exp()  # saves its output
    y.mul_(2)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="output 0 of ExpBackward0, is at version 2; "
                                           "expected version 0 instead"):
        y.sum().backward()


def test_modified_through_a_view_raises():
    a = leaf(X)
    b = a.tanh()  # saves b
    b[1:3].zero_()
    with pytest.raises(RuntimeError, match="is at version 1; expected version 0"):
        b.sum().backward()


def test_modifying_a_leaf_saved_by_an_op_raises_after_no_grad_update():
    w = leaf(X)
    y = (w * w).sum()
    with tgrad.no_grad():
        w.add_(1)  # allowed under no_grad (an optimizer step) but w was saved
    with pytest.raises(RuntimeError, match="which is a leaf Variable, is at version 1; "
                                           "expected version 0"):
        y.backward()


def test_unsaved_inputs_may_be_modified():
    a = leaf(X)
    b = a * 1
    c = b + 2  # add saves nothing
    b.mul_(3)
    c.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones(4))


# --------------------------------------------------------------------- leaf checks

@pytest.mark.parametrize("op", [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(),
                                lambda t: t.fill_(1.0), lambda t: t.copy_(tgrad.ones(4)),
                                lambda t: t.clamp_(0, 1), lambda t: t.div_(2)])
def test_inplace_on_leaf_requiring_grad_raises(op):
    a = tgrad.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation."):
        op(a)
    assert a._version == 0
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        op(a[0:4])
    with tgrad.no_grad():
        op(a)  # fine under no_grad
    assert a._version == 1


def test_iadd_and_setitem_on_leaf_raise():
    a = tgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        a += 1
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        a[0] = 2.0
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a[[0, 1]] = 2.0


# ------------------------------------------------------------ gradients, no views

def test_inplace_chain_on_non_leaf_matches_numpy():
    a = leaf(X)
    b = a * 1
    b += a * a           # b = a + a^2
    b.mul_(a)            # b = a^2 + a^3
    b.sub_(1)            # b = a^2 + a^3 - 1
    b.div_(2)            # b = (a^2 + a^3 - 1) / 2
    b.clamp_(-1.0, 5.0)
    assert b.grad_fn.name() == "ClampBackward1"
    b.sum().backward()
    raw = (X ** 2 + X ** 3 - 1) / 2
    inside = (raw > -1.0) & (raw < 5.0)
    np.testing.assert_allclose(a.grad.numpy(), np.where(inside, (2 * X + 3 * X ** 2) / 2, 0),
                               rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), np.clip(raw, -1, 5), rtol=1e-12)


def test_inplace_with_alpha_and_unary():
    a = leaf(X)
    b = a * 2
    b.add_(a, alpha=3)   # 5a
    b.exp_()
    b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 5 * np.exp(5 * X), rtol=1e-12)


def test_fill_and_zero_on_non_leaf_cut_the_gradient():
    a = leaf(X)
    b = a * 2
    b.fill_(3.0)  # (PyTorch's in-place overloads: FillBackward2, zero_'s ZeroBackward0,
    assert b.grad_fn.name() == "FillBackward2" and not b.is_leaf  # a 0-d tensor's 3)
    assert (a * 2).zero_().grad_fn.name() == "ZeroBackward0"
    filled = (a * 2).fill_(tgrad.tensor(1.0, dtype=tgrad.float64, requires_grad=True))
    assert filled.grad_fn.name() == "FillBackward3" and len(filled.grad_fn.next_functions) == 2
    (b * a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(4, 3.0))  # only via the product
    a.grad = None
    c = a * 2
    c.zero_()
    (c + a).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones(4))


def test_fill_with_zero_dim_tensor_gets_gradient():
    v = tgrad.tensor(2.0, dtype=tgrad.float64, requires_grad=True)
    b = tgrad.zeros(4, dtype=tgrad.float64)
    b.fill_(v)
    (b * f64(X)).sum().backward()
    np.testing.assert_allclose(v.grad.item(), X.sum())
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        b.fill_(tgrad.ones(2))


def test_copy_routes_gradient_to_source_with_broadcast_and_cast():
    src = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float32, requires_grad=True)
    dst = tgrad.zeros(2, 3, dtype=tgrad.float64)
    dst.copy_(src)
    assert dst.requires_grad and dst.grad_fn.name() == "CopyBackwards"
    (dst * f64(M)).sum().backward()
    assert src.grad.dtype is tgrad.float32
    np.testing.assert_allclose(src.grad.numpy(), M.sum(0), rtol=1e-6)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        dst.copy_(tgrad.ones(4))
    with pytest.raises(TypeError, match="must be Tensor"):
        dst.copy_([1, 2, 3])


def test_inplace_result_type_must_fit():
    i = tgrad.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i.mul_(1.5)
    f = tgrad.ones(2, dtype=tgrad.float16)
    f.add_(tgrad.ones(2, dtype=tgrad.float64))  # same category: cast back
    assert f.dtype is tgrad.float16 and f.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        tgrad.ones(2).add_(tgrad.ones(3, 2))


def test_inplace_into_tensor_not_requiring_grad_from_one_that_does():
    a = leaf(X)
    b = tgrad.ones(4, dtype=tgrad.float64)
    b.mul_(a)
    assert b.requires_grad and not b.is_leaf
    (b * b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * X, rtol=1e-12)


# ---------------------------------------------------------- gradients through views

def test_inplace_through_view_rebases_base():
    a = leaf(X)
    b = a * 1
    v = b[1:]
    v.mul_(a[:3])          # b = [a0, a1 a0, a2 a1, a3 a2]
    assert b.grad_fn.name() == "CopySlices"
    assert v.grad_fn is not None and v._version == b._version == 1
    (b * b).sum().backward()
    x0, x1, x2, x3 = X
    expected = np.array([2 * x0 + 2 * x1 ** 2 * x0,
                         2 * x1 * x0 ** 2 + 2 * x2 ** 2 * x1,
                         2 * x2 * x1 ** 2 + 2 * x3 ** 2 * x2,
                         2 * x3 * x2 ** 2])
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-12)


def test_view_grad_fn_regenerated_after_base_modified():
    a = leaf(M)
    b = a * 1
    row = b[0]
    col = b[:, 1]
    col.mul_(10.0)  # modifies b, so row's grad_fn must see the new values' graph
    assert row.tolist()[1] == M[0, 1] * 10
    (row * row).sum().backward()
    expected = np.zeros_like(M)
    expected[0] = 2 * M[0]
    expected[0, 1] = 2 * M[0, 1] * 100
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-12)


def test_view_read_before_its_base_requires_grad_still_reaches_the_base():
    # a view modified in place while its base needs no grad, its state read (a print does),
    # then the base made to require grad: the view's node is built from the base then, as
    # PyTorch's (reading it first froze it without one: x.grad came out [1, 1, 1])
    x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64)
    v = x[1:]
    v.mul_(2)
    assert not v.requires_grad
    x.requires_grad_()
    assert v.requires_grad
    ((v * 3).sum() + x.sum()).backward()
    assert x.grad.tolist() == [1.0, 4.0, 4.0]  # d/dx (3 x[1:] + x) with x[1:] scaled before


def test_inplace_on_view_of_view_and_transpose():
    a = leaf(M)
    b = a * 2
    v = b.t()[1:]          # (2, 2) view: b[:, 1:].T
    v.mul_(v)              # squares those entries
    b.sum().backward()
    expected = np.full_like(M, 2.0)
    expected[:, 1:] = 8 * M[:, 1:]  # d/da (2a)^2 = 8a
    np.testing.assert_allclose(a.grad.numpy(), expected, rtol=1e-12)


def test_setitem_basic_keys():
    a = leaf(X)
    b = a * 2
    b[0] = 5.0
    b[1:3] = a[2:4] * a[2:4]
    b[-1] = tgrad.tensor(1.0, dtype=tgrad.float64)
    np.testing.assert_allclose(b.detach().numpy(), [5.0, X[2] ** 2, X[3] ** 2, 1.0])
    (b * f64([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 0.0, 2 * 2 * X[2], 2 * 3 * X[3]],
                               rtol=1e-12)


def test_setitem_into_plain_tensor_from_grad_tensor():
    a = leaf(X)
    buf = tgrad.zeros(2, 4, dtype=tgrad.float64)
    buf[1] = a.exp()
    buf[0, ::2] = 1.0
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    (buf * f64(np.arange(8.0).reshape(2, 4))).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp(X) * np.arange(4.0, 8.0), rtol=1e-12)


def test_setitem_advanced_keys():
    a = leaf(X)
    b = a * 1
    b[[0, 2]] = a[1:3] * 3
    b[tgrad.tensor([False, True, False, False])] = 7.0
    np.testing.assert_allclose(b.detach().numpy(), [3 * X[1], 7.0, 3 * X[2], X[3]])
    (b * f64([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 3.0, 9.0, 4.0])
    z = tgrad.zeros(3)
    z[[0, 2]] = [4.0, 5.0]
    z[tgrad.tensor([1])] = tgrad.tensor([6.0])
    assert z.tolist() == [4.0, 6.0, 5.0]


def test_setitem_values_and_errors():
    z = tgrad.zeros(2, 3, dtype=tgrad.int64)
    z[0] = [1, 2, 3]
    z[1, 1:] = 9
    assert z.tolist() == [[1, 2, 3], [0, 9, 9]]
    with pytest.raises(IndexError):
        z[5] = 1
    with pytest.raises(RuntimeError):
        z[0] = [1, 2]


def test_expanded_view_cannot_be_written():
    e = tgrad.ones(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor "
                                           "refers to a single memory location"):
        e.add_(1)


def test_fills_into_expanded_view_fill_every_alias():
    # PyTorch's masked_fill_ / index_fill_ of an overlapping view: a memory element written
    # through any of its aliases holds the value, seen through all of them; the rest keep
    # theirs. Hand-computed expectations.
    t = tgrad.tensor([1.0, 2.0, 3.0])
    e = t.expand(2, 3)
    e.masked_fill_(tgrad.tensor([[True, False, False], [False, True, False]]), 9.0)
    assert t.tolist() == [9.0, 9.0, 3.0]
    assert e.tolist() == [[9.0, 9.0, 3.0], [9.0, 9.0, 3.0]]
    t = tgrad.tensor([1, 2, 3])  # a broadcast mask, an int64 tensor, a 0-d tensor value
    t.expand(2, 3).masked_fill_(tgrad.tensor([False, False, True]), tgrad.tensor(7))
    assert t.tolist() == [1, 2, 7]
    t = tgrad.tensor([1.0, 2.0, 3.0])  # a negative dim and index
    t.expand(2, 3).index_fill_(-1, tgrad.tensor([-1]), -1.0)
    assert t.tolist() == [1.0, 2.0, -1.0]
    t = tgrad.tensor([1.0, 2.0, 3.0])  # one row of the expanded dim: every element
    t.expand(2, 3).index_fill_(0, tgrad.tensor([1]), 0.5)
    assert t.tolist() == [0.5, 0.5, 0.5]
    t = tgrad.zeros(5)  # overlapping unfold windows: element i is in windows i-2..i
    t.unfold(0, 3, 1).index_fill_(1, tgrad.tensor([2]), 4.0)
    assert t.tolist() == [0.0, 0.0, 4.0, 4.0, 4.0]
    for dt in (tgrad.bfloat16, tgrad.float8_e4m3fn):  # ml_dtypes storage, written through
        t = tgrad.zeros(3, dtype=dt)  # a writable alias of the read-only expanded view
        t.expand(2, 3).fill_(1.5)
        t.expand(2, 3).masked_fill_(tgrad.tensor([True, False, False]), 2.0)
        assert t.float().tolist() == [2.0, 1.5, 1.5]
    t = tgrad.zeros(3)  # an overlapping view of a tensor that requires grad: refused
    w = tgrad.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        (t + w).expand(2, 3).masked_fill_(tgrad.tensor([True, False, False]), 1.0)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        tgrad.zeros(3).expand(2, 3).copy_(tgrad.ones(2, 3))  # PyTorch refuses it too


def test_fill_with_complex_value_into_real_tensor():
    # PyTorch: masked_fill reads a complex 0-d tensor as a number (a nonzero imaginary part
    # raises, 1+0j is 1, a bool tensor takes any value); index_fill refuses any complex value
    m = tgrad.tensor([True, False, True])
    for fill in (lambda x, v: x.masked_fill_(m, v), lambda x, v: x.masked_fill(m, v)):
        for dt in (tgrad.float32, tgrad.int64, tgrad.float16):
            with pytest.raises(RuntimeError, match="cannot be converted to type"):
                fill(tgrad.zeros(3, dtype=dt), tgrad.tensor(1 + 2j))
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # no "discards the imaginary part" warning
                assert fill(tgrad.zeros(3, dtype=dt), tgrad.tensor(2 + 0j)).tolist() == \
                    [2, 0, 2]
        assert fill(tgrad.zeros(3, dtype=tgrad.bool), tgrad.tensor(1j)).tolist() == \
            [True, False, True]
    for value in (tgrad.tensor(1 + 2j), tgrad.tensor(1 + 0j), 1 + 0j, 2j):
        for dt in (tgrad.float32, tgrad.int64, tgrad.bool):
            for name in ("index_fill_", "index_fill"):
                with pytest.raises(RuntimeError, match=r"^index_fill_\(\): Converting complex "
                                                       r"Scalar to non-complex type"):
                    getattr(tgrad.zeros(3, dtype=dt), name)(0, tgrad.tensor([1]), value)
    z = tgrad.zeros(3, dtype=tgrad.complex64).index_fill_(0, tgrad.tensor([1]), tgrad.tensor(2j))
    assert z.tolist() == [0, 2j, 0]


def test_inplace_operator_with_ndarray_falls_back_to_out_of_place():
    # PyTorch's x += ndarray: __iadd__ gives NotImplemented, so Python computes x + ndarray
    # (a new tensor, NumPy's float64 promoting) and rebinds x; the old tensor is unchanged
    x = tgrad.ones(2)
    old = x
    x += np.array([1.0, 2.0])
    assert x is not old and x.dtype is tgrad.float64 and x.tolist() == [2.0, 3.0]
    assert old.tolist() == [1.0, 1.0]
    y = tgrad.tensor([2, 3])
    y *= np.full((2, 2), 0.5)
    assert y.dtype is tgrad.float64 and y.tolist() == [[1.0, 1.5], [1.0, 1.5]]
    for op in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__imod__",
               "__ifloordiv__"):
        assert getattr(tgrad.ones(2), op)(np.ones(2)) is NotImplemented
    assert tgrad.ones(2, dtype=tgrad.int64).__iand__(np.ones(2, dtype=np.int64)) is \
        NotImplemented
    with pytest.raises(TypeError, match="add"):  # the method itself still refuses it
        tgrad.ones(2).add_(np.ones(2))


def test_inplace_on_view_created_in_no_grad_mode_raises():
    a = leaf(X)
    b = a * 1
    with tgrad.no_grad():
        v = b[0:2]
    # PyTorch's text
    with pytest.raises(RuntimeError, match=r"^mul_: A view was created in no_grad mode and is "
                                           r"being modified inplace with grad mode enabled\. "
                                           r"Given that this use case is ambiguous"):
        v.mul_(2)
    with tgrad.no_grad():
        v.mul_(2)  # both in no_grad: allowed, not tracked
    assert b.detach().tolist()[:2] == [2 * X[0], 2 * X[1]]


# ---------------------------------------------------------------- gradcheck

def _f_inplace_views(x, y):
    b = x * 1
    b[1:] *= y[:3]
    v = b.reshape(2, 2).t()
    v.add_(y.reshape(2, 2).exp())
    b[0] = y[3] * x[0]
    return b.tanh()


def _f_inplace_ops(x):
    b = x.sin()  # saves x, not its output (which mul_ modifies)
    b.mul_(x)
    b.div_(x * x + 1)
    b.clamp_(-2.0, 2.0)
    c = b * 1
    c[[0, 3]] = x[1:3] * 2
    c.sub_(x, alpha=0.5)
    return c


def test_gradcheck_through_inplace_and_views():
    x = leaf(X)
    y = leaf(np.array([0.3, -0.7, 1.1, 0.9]))
    assert gradcheck(_f_inplace_views, (x, y))
    assert gradgradcheck(_f_inplace_views, (x, y))
    assert gradcheck(_f_inplace_ops, (x,))
    assert gradgradcheck(_f_inplace_ops, (x,))


def test_inplace_values_match_numpy():
    x = leaf(X)
    y = leaf(np.array([0.3, -0.7, 1.1, 0.9]))
    out = _f_inplace_views(x, y).detach().numpy()
    xn, yn = X.copy(), np.array([0.3, -0.7, 1.1, 0.9])
    b = xn * 1
    b[1:] *= yn[:3]
    b.reshape(2, 2).T[...] += np.exp(yn.reshape(2, 2))
    b[0] = yn[3] * xn[0]
    np.testing.assert_allclose(out, np.tanh(b), rtol=1e-12)


def test_retain_grad_follows_inplace_modification():
    a = leaf(X)
    b = a * 2
    b.retain_grad()
    b.mul_(3)  # b.grad is the gradient w.r.t. the new value of b
    (b * b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * 6 * X, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), 72 * X, rtol=1e-12)


def test_view_that_became_a_leaf_is_checked_as_a_leaf():
    base = tgrad.zeros(4, dtype=tgrad.float64)
    v = base[1:3]
    v.requires_grad_()
    assert v.is_leaf
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        v.add_(1)


INPLACE_METHODS = {
    # name: (args built from a second positive input y, reference on NumPy float64)
    "add_": (lambda y: (y,), lambda x, y: x + y),
    "sub_": (lambda y: (y,), lambda x, y: x - y),
    "mul_": (lambda y: (y,), lambda x, y: x * y),
    "div_": (lambda y: (y,), lambda x, y: x / y),
    "pow_": (lambda y: (y,), lambda x, y: x ** y),
    "clamp_": (lambda y: (0.6, 1.6), lambda x, y: np.clip(x, 0.6, 1.6)),
    "fill_": (lambda y: (2.5,), lambda x, y: np.full_like(x, 2.5)),
    "zero_": (lambda y: (), lambda x, y: np.zeros_like(x)),
    "copy_": (lambda y: (y,), lambda x, y: y),
    "neg_": (lambda y: (), lambda x, y: -x),
    "abs_": (lambda y: (), np.abs),
    "exp_": (lambda y: (), lambda x, y: np.exp(x)),
    "log_": (lambda y: (), lambda x, y: np.log(x)),
    "sqrt_": (lambda y: (), lambda x, y: np.sqrt(x)),
    "tanh_": (lambda y: (), lambda x, y: np.tanh(x)),
    "sigmoid_": (lambda y: (), lambda x, y: 1 / (1 + np.exp(-x))),
    "sin_": (lambda y: (), lambda x, y: np.sin(x)),
    "cos_": (lambda y: (), lambda x, y: np.cos(x)),
    "reciprocal_": (lambda y: (), lambda x, y: 1 / x),
    "floor_": (lambda y: (), lambda x, y: np.floor(x)),
    "round_": (lambda y: (), lambda x, y: np.round(x)),
}


@pytest.mark.parametrize("name", sorted(INPLACE_METHODS))
def test_each_inplace_method_on_non_leaf_and_view(name):
    make_args, ref = INPLACE_METHODS[name]
    xs = np.array([0.7, 1.3, 2.2, 0.45])
    ys = np.array([1.1, 0.8, 1.7, 2.3])

    def whole(x, y):
        b = x * 1
        getattr(b, name)(*make_args(y))
        return b * x  # uses the new value of b and x itself

    def through_view(x, y):
        b = x * 1
        getattr(b[1:3], name)(*[a[1:3] if isinstance(a, tgrad.Tensor) else a
                                for a in make_args(y)])
        return b

    x, y = leaf(xs), leaf(ys)
    np.testing.assert_allclose(whole(x, y).detach().numpy(), ref(xs, ys) * xs, rtol=1e-12)
    expected = xs.copy()
    expected[1:3] = ref(xs[1:3], ys[1:3])
    np.testing.assert_allclose(through_view(x, y).detach().numpy(), expected, rtol=1e-12)
    assert gradcheck(whole, (x, y))
    assert gradcheck(through_view, (x, y))
    assert gradgradcheck(whole, (x, y))


def test_complex_python_numbers_fill_and_assign():
    # PyTorch: fill_/setitem/masked_fill/full take a complex number; into a real dtype only
    # with a zero imaginary part (1+0j is 1, nonzero is True for bool), else the overflow
    # RuntimeError (fill_ and setitem raised TypeError on any complex number)
    z = tgrad.zeros(2, dtype=tgrad.complex64)
    np.testing.assert_array_equal(z.fill_(1 + 2j).numpy(), np.full(2, 1 + 2j))
    z[1] = 3 - 1j
    np.testing.assert_array_equal(z.numpy(), [1 + 2j, 3 - 1j])
    assert tgrad.zeros(2, dtype=tgrad.bool).fill_(2j).tolist() == [True, True]
    assert tgrad.zeros(2, dtype=tgrad.bool).fill_(0j).tolist() == [False, False]
    assert tgrad.zeros(2, dtype=tgrad.int64).fill_(3 + 0j).tolist() == [3, 3]
    x = tgrad.zeros(3)
    x[0] = 2 + 0j
    x[1:] = -1.5 + 0j
    assert x.tolist() == [2.0, -1.5, -1.5] and x.dtype is tgrad.float32
    m = tgrad.tensor([True, False])
    assert tgrad.zeros(2).masked_fill(m, 4 + 0j).tolist() == [4.0, 0.0]
    np.testing.assert_array_equal(z.masked_fill(m, 1j).numpy(), [1j, 3 - 1j])
    assert tgrad.full((2,), 5 + 0j, dtype=tgrad.float64).tolist() == [5.0, 5.0]
    for f in (lambda: tgrad.zeros(2).fill_(1 + 1j), lambda: x.__setitem__(0, 1j),
              lambda: tgrad.zeros(2).masked_fill(m, 1 + 1j),
              lambda: tgrad.full((2,), 1j, dtype=tgrad.float32)):
        with pytest.raises(RuntimeError, match="cannot be converted to type float32 without "
                                               "overflow"):
            f()


# ------------------------------------------ results of composite ops are new tensors
# PyTorch's "Tensor Views" lists the view ops; every other op returns a new tensor, so
# _is_view() is False and an in-place op on the result is an ordinary one. These ops are
# composites whose last step is a view (reshape, narrow, permute, transpose) of a temporary.

_I0 = tgrad.tensor(0)
_NEW_RESULT_OPS = {
    "roll": (lambda x: x.roll(1), (3, 4)),
    "rot90_k1": (lambda x: x.rot90(), (3, 4)),
    "rot90_k3": (lambda x: tgrad.rot90(x, 3, (1, 0)), (2, 3)),
    "diag_embed": (lambda x: tgrad.diag_embed(x), (2, 3)),
    "diag_embed_dims": (lambda x: tgrad.diag_embed(x, 1, 0, 2), (2, 3)),
    "kron": (lambda x: tgrad.kron(x, x[:1]), (2, 3)),
    "sort": (lambda x: x.sort(1).values, (3, 4)),
    "sort_0d": (lambda x: x.sum().sort().values, (2,)),
    "msort": (lambda x: x.msort(), (3, 4)),
    "topk": (lambda x: x.topk(2).values, (3, 4)),
    "kthvalue": (lambda x: x.kthvalue(2, 1).values, (3, 4)),
    "median_dim": (lambda x: x.median(0, keepdim=True).values, (3, 4)),
    "mode": (lambda x: x.mode(1).values, (3, 4)),
    "cummax": (lambda x: x.cummax(1).values, (3, 4)),
    "cumsum_0d": (lambda x: x.sum().cumsum(0), (2,)),
    "cumprod_0d": (lambda x: x.sum().cumprod(0), (2,)),
    "gather_0d": (lambda x: x.sum().gather(0, _I0), (2,)),
    "take_0d": (lambda x: x.take(_I0), (2, 3)),
    "scatter_0d": (lambda x: x[0].scatter(0, _I0, x[1]), (2,)),
    "scatter_add_0d": (lambda x: x[0].scatter_add(0, _I0, x[1]), (2,)),
    "scatter_reduce_0d": (lambda x: x[0].scatter_reduce(0, _I0, x[1], "sum"), (2,)),
    "index_add_0d": (lambda x: x[0].index_add(0, _I0, x[1]), (2,)),
    "index_copy_0d": (lambda x: x[0].index_copy(0, _I0, x[1]), (2,)),
    "index_fill_0d": (lambda x: x[0].index_fill(0, _I0, 2.0), (2,)),
    "quantile": (lambda x: x.quantile(0.3, dim=1), (3, 4)),
    "nanquantile_all": (lambda x: x.nanquantile(0.6), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(_NEW_RESULT_OPS))
def test_composite_results_are_not_views_and_take_inplace_ops(name):
    _check_new_result(name, *_NEW_RESULT_OPS[name])


def _check_new_result(name, fn, shape):
    x = leaf(np.random.default_rng(3).permutation(np.prod(shape)).reshape(shape) * 0.37 - 1.0)
    y = fn(x)
    assert not y._is_view() and y._base is None, name
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    w = f64(np.linspace(0.5, 2.0, max(y.numel(), 1)).reshape(y.shape))
    # in-place on the result, then backward: right gradient (finite differences) and no
    # version error; the input is untouched
    before = x.detach().numpy().copy()
    assert gradcheck(lambda t: fn(t).mul_(w), (x,))
    np.testing.assert_array_equal(x.detach().numpy(), before)


def test_composite_results_inplace_values_and_gradient():
    x = leaf(M)
    y = x.roll(1)  # values by hand: the flattened M shifted by one
    y.add_(1.0).mul_(2.0)
    np.testing.assert_allclose(y.detach().numpy(),
                               2.0 * (np.roll(M.reshape(-1), 1).reshape(2, 3) + 1.0))
    (y * f64(M)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * np.roll(M.reshape(-1), -1).reshape(2, 3))
    r = tgrad.rot90(f64(M))  # PyTorch's strides: the flip's, transposed
    np.testing.assert_array_equal(r.numpy(), np.rot90(M))
    assert r.stride() == (1, 3) and not r._is_view()
    d = tgrad.diag_embed(f64(M), 0, 0, 2)  # a row-major new tensor for any dims
    assert d.is_contiguous() and not d._is_view()
    np.testing.assert_array_equal(d.numpy(),  # d[i, b, j] = M[b, i] where i == j
                                  np.stack([np.diag(r) for r in M]).transpose(1, 0, 2))


def test_take_with_a_0d_index_copies():
    x = f64(M)
    y = x.take(tgrad.tensor(4))
    assert y.shape == () and not y._is_view() and float(y) == M.reshape(-1)[4]
    y.fill_(9.0)  # a new tensor: the write does not reach x
    np.testing.assert_array_equal(x.numpy(), M)


def test_index_results_without_grad_are_not_views():
    seq = f64([0.0, 1.0, 2.0])
    v = f64(M)
    for r in (tgrad.searchsorted(seq, v), tgrad.bucketize(v, seq),
              tgrad.unique(tgrad.zeros(0, 3)), tgrad.unique_consecutive(tgrad.zeros(0, 3)),
              tgrad.histogramdd(v, 1)[0], tgrad.unique(v, return_inverse=True)[1],
              f64(0.5).argsort(), v.sort().indices,
              v.topk(2).indices):
        assert not r._is_view()
    np.testing.assert_array_equal(tgrad.searchsorted(seq, v).numpy(),
                                  np.searchsorted([0.0, 1.0, 2.0], M))


def test_broadcast_tensors_returns_a_tensor_of_the_broadcast_shape_itself():
    a, b = f64(M), f64([1.0, 2.0, 3.0])
    ra, rb = tgrad.broadcast_tensors(a, b)
    assert ra is a and rb._is_view() and rb._base is b  # (PyTorch's expand_outplace)
    np.testing.assert_array_equal(rb.numpy(), np.broadcast_to([1.0, 2.0, 3.0], (2, 3)))


def test_select_takes_a_one_element_integer_tensor_index():
    x = f64(M)
    s = tgrad.select(x, 1, tgrad.tensor([2]))
    assert s.shape == (2,) and s._is_view()
    np.testing.assert_array_equal(s.numpy(), M[:, 2])
    with pytest.raises(TypeError, match=r"select\(\): argument 'index' \(position 3\) must "
                                        r"be int, not Tensor"):
        tgrad.select(x, 0, tgrad.tensor([1.0]))
    with pytest.raises(TypeError, match="must be int, not float"):
        tgrad.select(x, 0, 1.5)


# ------------------------------------ in-place writes through .real / .imag of a complex
# The written region of a complex base is per component: b.real covers the real parts
# only, so the imaginary parts' gradient still flows to b's old values (and vice versa).

Z = np.array([1 + 1j, 2 - 3j, 0.5 + 2j])
_W = np.array([1.0, 2.0, 3.0])


def _through_component(z, op):
    b = z * 1
    if op == "real_copy":
        b.real.copy_(tgrad.zeros(3, dtype=tgrad.float64))
    elif op == "imag_mul":
        b.imag.mul_(2)
    elif op == "real_slice_mul":
        b.real[::2].mul_(3)
    elif op == "view_as_real_mul":
        tgrad.view_as_real(b)[..., 0].mul_(5)
    elif op == "chained_imag_mul":
        b[1:].imag.mul_(2)
    elif op == "imag_zero":
        b.imag.zero_()
    elif op == "imag_add":
        b.imag.add_(z.real ** 2)
    return b


@pytest.mark.parametrize("op", ["real_copy", "imag_mul", "real_slice_mul",
                                "view_as_real_mul", "chained_imag_mul", "imag_zero",
                                "imag_add"])
def test_inplace_through_real_imag_views_of_complex(op):
    # hand-computed: the loss sum(w |b|^2) after the write; its gradient with respect to
    # z = x + iy is dL/dx + i dL/dy
    x, y = Z.real.copy(), Z.imag.copy()
    if op == "real_copy":
        gx, gy = 0 * x, 2 * _W * y
    elif op == "imag_mul":
        gx, gy = 2 * _W * x, 8 * _W * y
    elif op == "real_slice_mul":
        k = np.array([9.0, 1.0, 9.0])
        gx, gy = 2 * _W * k * x, 2 * _W * y
    elif op == "view_as_real_mul":
        gx, gy = 50 * _W * x, 2 * _W * y
    elif op == "chained_imag_mul":
        k = np.array([1.0, 4.0, 4.0])
        gx, gy = 2 * _W * x, 2 * _W * k * y
    elif op == "imag_zero":
        gx, gy = 2 * _W * x, 0 * y
    else:  # b.imag = y + x^2
        gx = 2 * _W * x + 2 * _W * (y + x ** 2) * 2 * x
        gy = 2 * _W * (y + x ** 2)
    z = tgrad.tensor(Z, dtype=tgrad.complex128, requires_grad=True)
    b = _through_component(z, op)
    assert b.grad_fn.name() == "CopySlices"
    (b.abs() ** 2 * f64(_W)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), gx + 1j * gy, rtol=1e-12, atol=1e-12)
    z = tgrad.tensor(Z, dtype=tgrad.complex128, requires_grad=True)
    assert gradcheck(lambda t: _through_component(t, op), (z,))
    assert gradgradcheck(lambda t: _through_component(t, op) ** 2, (z,))


def test_inplace_through_view_as_complex_and_transposed_complex_base():
    # a real base written through view_as_complex(b).imag: only its odd elements scale
    a = tgrad.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tgrad.float64, requires_grad=True)
    b = a * 1
    tgrad.view_as_complex(b).imag.mul_(3)
    (b ** 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[2.0, 36.0], [6.0, 72.0]], rtol=1e-12)
    # a complex base laid out transposed (its mask built in its own layout)
    zm = np.array([[1 + 2j, -1j], [3 - 1j, 0.5 + 0.5j]])
    z = tgrad.tensor(zm, dtype=tgrad.complex128, requires_grad=True)
    b = z.t() * 1
    b.t_()
    b.imag[1:].mul_(2)
    (b.abs() ** 2).sum().backward()
    k = np.array([[1.0], [4.0]])
    np.testing.assert_allclose(z.grad.numpy(), 2 * zm.real + 2j * k * zm.imag, rtol=1e-12)



@pytest.mark.parametrize("part, where", [("imag", [1, 2, 3]), ("real", [0, 1, 2]),
                                         ("view_as_real", [0, 1, 2])])
def test_as_strided_of_a_real_view_of_a_complex_base_counts_real_elements(part, where):
    # PyTorch: a real view of complex storage (.real / .imag / view_as_real) is strided in
    # real elements, so as_strided((3,), (1,)) of b.imag reads Im b0, Re b1, Im b1 (storage
    # positions 1, 2, 3 of [Re b0, Im b0, Re b1, Im b1]) and writes back there
    zm = np.array([1 + 2j, 3 + 4j])
    flat = zm.view(np.float64)
    z = tgrad.tensor(zm, requires_grad=True)
    b = z * 1
    view = tgrad.view_as_real(b) if part == "view_as_real" else getattr(b, part)
    assert view.as_strided((3,), (1,)).tolist() == flat[where].tolist()
    view.as_strided_((3,), (1,))
    assert view.dtype == tgrad.float64 and view.tolist() == flat[where].tolist()
    view.mul_(f64([5.0, 6.0, 7.0]))
    want = flat.copy()
    want[where] *= [5.0, 6.0, 7.0]
    np.testing.assert_array_equal(b.detach().numpy().view(np.float64), want)
    # d/dz of sum(w * view_as_real(b)): dL/dRe + i dL/dIm, w scaled where written
    w = np.array([1.0, 2.0, 3.0, 4.0])
    (tgrad.view_as_real(b) * f64(w.reshape(2, 2))).sum().backward()
    gw = w.copy()
    gw[where] *= [5.0, 6.0, 7.0]
    np.testing.assert_array_equal(z.grad.numpy(), gw[0::2] + 1j * gw[1::2])


def test_write_through_a_flat_view_then_a_transposed_use():
    # b.view(-1)[k] = v and then b.mT: the base's gradient arrives transposed, on which the
    # view chain's view(-1) is illegal; the region's gradient is still read (PyTorch:
    # CopySlices copies the gradient into the base's layout). d/da sum(W b^T): W^T, 0 at k
    a = leaf(np.ones((3, 3)))
    v = leaf(2.0)
    b = a * 1
    b.view(-1)[5] = v * 3
    wm = np.arange(9.0).reshape(3, 3)
    (b.mT * f64(wm)).sum().backward()
    want = wm.T.copy()
    want.flat[5] = 0.0
    np.testing.assert_array_equal(a.grad.numpy(), want)
    assert v.grad.item() == 3 * wm.T.flat[5]
    assert tgrad.autograd.gradcheck(lambda t: _flat_write_then_mT(t), (leaf(np.ones((2, 3))),))
    assert tgrad.autograd.gradgradcheck(lambda t: _flat_write_then_mT(t), (leaf(np.ones((2, 3))),))


def _flat_write_then_mT(t):  # noqa: N802
    b = t * t
    b.view(-1)[1:3] = b.view(-1)[3:5] * 2
    return b.mT * 2

def test_copy_takes_a_number_and_warns_when_dropping_imaginary_parts():
    # a number is PyTorch's wrapped number (its own dtype), cast by the copy
    assert tgrad.zeros(2).copy_(3.0).tolist() == [3.0, 3.0]
    assert tgrad.zeros(2, dtype=tgrad.float64).copy_(0.1).tolist() == [0.1, 0.1]  # float64
    assert tgrad.zeros(2, dtype=tgrad.int64).copy_(2.7).tolist() == [2, 2]
    assert tgrad.zeros(2, dtype=tgrad.uint8).copy_(300).tolist() == [300 % 256] * 2
    assert tgrad.zeros(2).copy_(True).tolist() == [1.0, 1.0]
    with pytest.raises(OverflowError, match="int too big to convert"):
        tgrad.zeros(2, dtype=tgrad.int8).copy_(2 ** 70)
    with pytest.raises(TypeError, match="copy_\\(\\): argument 'src' must be Tensor, not list"):
        tgrad.zeros(2).copy_([1.0, 2.0])
    a = leaf([1.0, 2.0])
    b = a * 2
    b.copy_(3.0)  # b no longer depends on a
    b.sum().backward()
    assert a.grad.tolist() == [0.0, 0.0]
    # complex into real: the real parts, with PyTorch's warning
    c = tgrad.tensor([1 + 2j, 3 - 1j])
    for dst in (tgrad.zeros(2), tgrad.zeros(2, dtype=tgrad.int64)):
        with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                             "imaginary part"):
            dst.copy_(c)
        assert dst.tolist() == [1, 3]
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        assert tgrad.zeros(2).copy_(2 + 5j).tolist() == [2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # complex into complex does not warn
        tgrad.zeros(2, dtype=tgrad.complex64).copy_(c)


# -------------------------- nn.functional / linalg results are new tensors, not views
# The same for composites outside tgrad.ops: their last step (a squeeze of an unbatched
# input's added dim, a reshape back to 0-d, a transpose) viewed the op's own temporary.
F = tgrad.nn.functional
_W3 = np.random.default_rng(5).standard_normal((2, 3, 2))
_NN_NEW_RESULT_OPS = {
    "group_norm": (lambda x: F.group_norm(x, 1), (3, 4)),
    "batch_norm_train": (lambda x: F.batch_norm(x, None, None, training=True), (3, 2)),
    "max_pool1d": (lambda x: F.max_pool1d(x, 2), (3, 4)),
    "max_pool2d_unbatched": (lambda x: F.max_pool2d(x, 2), (2, 4, 4)),
    "max_pool2d_indices": (lambda x: F.max_pool2d(x, 1, return_indices=True)[0], (1, 2, 3)),
    "avg_pool2d_unbatched": (lambda x: F.avg_pool2d(x, 2), (2, 4, 4)),
    "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, 2), (2, 4, 3)),
    "adaptive_max_pool2d": (lambda x: F.adaptive_max_pool2d(x, (2, 1)), (2, 4, 3)),
    "conv1d_unbatched": (lambda x: F.conv1d(x, f64(_W3)), (3, 4)),
    "conv2d": (lambda x: F.conv2d(x, f64(_W3[:, :, None])), (1, 3, 1, 4)),
    "conv_transpose1d": (lambda x: F.conv_transpose1d(x, f64(_W3.transpose(1, 0, 2))),
                         (3, 4)),
    "unfold_unbatched": (lambda x: F.unfold(x, 2), (2, 3, 3)),
    "fold_padded": (lambda x: F.fold(x, (2, 2), 1, padding=1), (1, 16)),
    "lu_L": (lambda x: tgrad.linalg.lu(x).L, (3, 4)),
    "embedding_0d_index": (lambda x: F.embedding(tgrad.tensor(1), x), (3, 2)),
    "multi_margin_1d": (lambda x: F.multi_margin_loss(x, tgrad.tensor(1), reduction="none"),
                        (4,)),
    "multilabel_margin_1d": (lambda x: F.multilabel_margin_loss(
        x, tgrad.tensor([1, -1, 0, 0]), reduction="none"), (4,)),
    "affine_grid": (lambda x: F.affine_grid(x, [1, 1, 2, 3], align_corners=False), (1, 2, 3)),
}


@pytest.mark.parametrize("name", sorted(_NN_NEW_RESULT_OPS))
def test_nn_linalg_results_are_not_views_and_take_inplace_ops(name):
    _check_new_result(name, *_NN_NEW_RESULT_OPS[name])


def test_instance_norm_result_is_a_view_that_takes_inplace_ops():
    """PyTorch's instance_norm returns batch_norm's (1, N C, *) result viewed as the input's
    shape (ViewBackward0): a view of the op's own temporary, never of the input; an
    in-place op on it differentiates (finite differences)."""
    x = leaf(np.random.default_rng(3).permutation(12).reshape(2, 2, 3) * 0.37 - 1.0)
    y = F.instance_norm(x)
    assert y._is_view() and y.grad_fn.name() == "ViewBackward0"
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    w = f64(np.linspace(0.5, 2.0, 12).reshape(2, 2, 3))
    assert gradcheck(lambda t: F.instance_norm(t).mul_(w), (x,))


# ... and where the op saves its result for backward (softmax's y, amax's maximum, the
# Cholesky factor, solve's X), an in-place op on it makes backward raise the saved-tensor
# error, as PyTorch's does. References: by hand (softmax of one element is 1, log_softmax
# 0, the max / min column sum of |M|) and NumPy float64.
_SPD = M.T @ M + np.eye(3)
_NN_SAVED_RESULT_OPS = {
    "softmax_0d": (lambda x: F.softmax(x.sum(), 0), "SoftmaxBackward0", 1.0),
    "log_softmax_0d": (lambda x: F.log_softmax(x.sum(), 0), "LogSoftmaxBackward0", 0.0),
    "softmin_0d": (lambda x: F.softmin(x.sum(), 0), "SoftmaxBackward0", 1.0),
    "matrix_norm_1": (lambda x: tgrad.linalg.matrix_norm(x, 1), "", np.abs(M).sum(0).max()),
    "norm_-1": (lambda x: tgrad.linalg.norm(x, -1), "", np.abs(M).sum(0).min()),
    "cholesky_upper": (lambda x: tgrad.linalg.cholesky(x.mT @ x + tgrad.eye(3, dtype=x.dtype),
                                                       upper=True),
                       "LinalgCholeskyExBackward0", np.linalg.cholesky(_SPD).T),
    "solve_vector": (lambda x: tgrad.linalg.solve(x.mT @ x + tgrad.eye(3, dtype=x.dtype),
                                                  x[0]),
                     "LinalgSolveExBackward0", np.linalg.solve(_SPD, M[0])),
}


@pytest.mark.parametrize("name", sorted(_NN_SAVED_RESULT_OPS))
def test_nn_linalg_saved_results_are_not_views(name):
    fn, node, want = _NN_SAVED_RESULT_OPS[name]
    x = leaf(M)
    y = fn(x)
    assert not y._is_view() and y._base is None
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    y.mul_(2.0)
    np.testing.assert_allclose(y.detach().numpy(), 2.0 * np.asarray(want), rtol=1e-12)
    with pytest.raises(RuntimeError, match=f"modified by an inplace operation.*{node}"):
        y.sum().backward()
    np.testing.assert_array_equal(x.detach().numpy(), M)


def test_embedding_of_a_0d_index_copies_the_row():
    # weight[tensor(1)] is basic indexing (a view of the row); embedding copies it, as
    # PyTorch's: a write to the result must not reach the weight
    w = f64(M.T)
    e = F.embedding(tgrad.tensor(1), w)
    assert e.shape == (2,) and not e._is_view()
    np.testing.assert_array_equal(e.numpy(), M.T[1])
    e.fill_(0.0)
    np.testing.assert_array_equal(w.numpy(), M.T)


# ------------------------------------------- non-differentiable in-place ops (regressions)

@pytest.mark.parametrize("op", ["heaviside_", "floor_divide_"])
def test_inplace_without_a_derivative_raises_at_backward(op):
    # PyTorch's node "NotImplemented": the result requires grad and backward raises, rather
    # than a silent zero gradient for what x came from
    for values_grad in (False, True):
        a = leaf(X)
        x = a * 3.0
        y = leaf([1.0, 2.0, 0.5, 3.0]) if values_grad else f64([1.0, 2.0, 0.5, 3.0])
        assert getattr(x, op)(y) is x
        assert x.requires_grad and x.grad_fn.name() == "NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op[:-1]} is not "
                                               f"implemented"):
            (x * 2).sum().backward()


@pytest.mark.parametrize("op", ["lt_", "eq_"])
def test_non_differentiable_inplace_keeps_a_non_leaf_in_the_graph(op):
    # x.op_(y) on a non-leaf used to turn x into a leaf requiring grad: backward then filled
    # x.grad and dropped the gradient of what x came from. The op is not differentiable
    # (its out-of-place result does not require grad), so x's old values get gradient 0.
    a = leaf(X)
    x = a * 3.0
    y = f64([1.0, 2.0, 0.5, 3.0])
    assert getattr(x, op)(y) is x
    assert not x.is_leaf and x.requires_grad and x.grad_fn is not None
    (x * f64([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros(4))
    # a write through a view: the rest of the base keeps its gradient (3 * w)
    a = leaf(X)
    x = a * 3.0
    getattr(x[1:3], op)(y[1:3])
    (x * f64([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 0.0, 0.0, 12.0])


def test_inplace_comparison_with_a_grad_operand_gives_it_a_zero_gradient():
    # PyTorch's x.lt_(y) with only y requiring grad: x joins the graph (CompareBackward0 in
    # tgrad), y's gradient 0; nextafter_ is differentiable in x (PyTorch's
    # NextafterBackward0: g to x, 0 to other)
    y = leaf([1.0, 2.0, 3.0])
    x = f64([0.5, -1.5, 2.0])
    x.lt_(y)
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 1.0, 1.0])
    assert x.requires_grad and not x.is_leaf
    x.sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros(3))
    a = leaf([0.5, -1.5, 2.0])
    z = a * 2
    z.nextafter_(f64([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(z.detach().numpy(), np.nextafter([1.0, -3.0, 4.0],
                                                                   [1.0, 2.0, 3.0]))
    (z * f64([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2.0, 4.0, 6.0])


def test_abs_inplace_refuses_complex():
    # PyTorch: |z| is real, it cannot be stored in place into a complex tensor
    z = tgrad.tensor([3 + 4j, -1j], dtype=tgrad.complex128)
    for op in ("abs_", "absolute_"):
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
            getattr(z, op)()
    np.testing.assert_array_equal(z.numpy(), [3 + 4j, -1j])
    x = f64([-1.5, 2.0])
    assert x.abs_() is x
    np.testing.assert_array_equal(x.numpy(), [1.5, 2.0])


def test_binary_inplace_methods_take_the_operand_by_pytorchs_keyword():
    # x.pow_(exponent=2) (PyTorch's name for pow_'s operand), x.add_(other=..., alpha=...)
    x = tgrad.tensor([2.0, 3.0])
    assert x.pow_(exponent=2).tolist() == [4.0, 9.0]
    assert x.add_(other=1.0, alpha=2).tolist() == [6.0, 11.0]
    with pytest.raises(TypeError, match="pow_\\(\\) missing 1 required positional argument: "
                                        "'exponent'"):
        x.pow_()


def test_in_place_through_a_view_of_a_view_made_a_leaf_raises():
    # x is a view (of a tensor that does not require grad) made a leaf by requires_grad_();
    # writing through a view of x is PyTorch's "view of a leaf" error (it used to pass and
    # change the leaf's values under autograd)
    x = tgrad.zeros(6, dtype=tgrad.float64).view(2, 3).requires_grad_()
    for write in (lambda: x.__setitem__(0, 5.0), lambda: x[0].add_(5.0),
                  lambda: x[:, 1].mul_(2), lambda: x.__setitem__(Ellipsis, 5.0),
                  lambda: x[:2][0].mul_(2)):
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad "
                                               "is being used in an in-place operation"):
            write()
    assert x.abs().sum().item() == 0.0
    with tgrad.no_grad():  # (allowed without grad mode, as PyTorch)
        x[0] = 1.0
    y = tgrad.ones(3, requires_grad=True) * 2  # a view of a non-leaf: still fine
    y[0] = 7.0
    assert y.tolist() == [7.0, 2.0, 2.0]


def test_setitem_bool_keys_uint8_masks_and_mask_shape_errors_as_pytorch():
    # x[True] = v: PyTorch's fast path (x[None] = v, the value cast); x[False] = v writes and
    # checks nothing
    x = tgrad.zeros(3, 3, dtype=tgrad.float64)
    x[True] = tgrad.ones(3, 3, dtype=tgrad.float32)
    assert x.sum().item() == 9.0
    x[False] = tgrad.ones(5)
    x[False] = tgrad.tensor([], dtype=tgrad.int64)
    assert x.sum().item() == 9.0
    # a uint8 mask beside a 0-d tensor or a bool is an index_put_ mask, not masked_fill_'s
    # refusal (which is kept for a uint8 mask alone)
    with pytest.warns(UserWarning):
        y = tgrad.zeros(3, 4, dtype=tgrad.float64)
        y.index_put_((tgrad.tensor(1), tgrad.tensor([0, 0, 1, 1], dtype=tgrad.uint8)),
                     tgrad.tensor(5.0, dtype=tgrad.float64))
        z = tgrad.zeros(3, dtype=tgrad.float64)
        z[tgrad.tensor([1, 0, 1], dtype=tgrad.uint8), True] = 5.0
    assert y.tolist() == [[0.0] * 4, [0.0, 0.0, 5.0, 5.0], [0.0] * 4]
    assert z.tolist() == [5.0, 0.0, 5.0]
    # a mask's value of too many dims: PyTorch's shape-mismatch RuntimeError (NumPy's
    # TypeError leaked)
    w = tgrad.zeros(4, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[2, 2\\] "
                                           "cannot be broadcast to indexing result of shape"):
        w[tgrad.tensor([True, False, True, False])] = tgrad.ones(2, 2, dtype=tgrad.float64)


# ------------------------------------------------- copy_ through a view: the hot path's shortcuts
def test_copy_into_view_drops_the_old_values_edge_and_keeps_gradients():
    # CopyBackwards of a write through a view has no edge to the view's old values (their
    # gradient is 0, the CopySlices routes the base's outside the region), as PyTorch's
    # CopySlices(base, src); values and gradients as NumPy's, twice differentiable
    a = np.arange(12.0).reshape(3, 4) - 5.0
    b = np.linspace(-1, 1, 6).reshape(3, 2)

    def f(x, s):
        out = x * 2.0
        out.narrow(1, 1, 2).copy_(s)
        out[:, 3:] = s[:, :1] * 3.0
        return out * out

    x = tgrad.tensor(a, requires_grad=True)
    s = tgrad.tensor(b, requires_grad=True)
    y = f(x, s)
    node = y.grad_fn.next_functions[0][0]
    assert node.name() == "CopySlices"
    copy_node = node.next_functions[0][0].next_functions[1][0]
    assert copy_node.name() == "CopyBackwards" and copy_node.next_functions[0] == (None, 0)
    ref = a * 2.0
    ref[:, 1:3] = b
    ref[:, 3:] = b[:, :1] * 3.0
    np.testing.assert_array_equal(y.detach().numpy(), ref * ref)
    y.sum().backward()
    gx = 8.0 * a
    gx[:, 1:] = 0.0
    gs = 2.0 * ref[:, 1:3]
    gs[:, 0] += 3.0 * 2.0 * ref[:, 3]
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-15)
    np.testing.assert_allclose(s.grad.numpy(), gs, rtol=1e-15)
    assert gradcheck(f, (tgrad.tensor(a, requires_grad=True), tgrad.tensor(b, requires_grad=True)))
    assert gradgradcheck(f, (tgrad.tensor(a, requires_grad=True),
                             tgrad.tensor(b, requires_grad=True)))


def test_copy_slices_plain_backward_matches_the_recorded_one():
    # without create_graph CopySlices zeroes the region of a copy of g (no mask): the same
    # bits as the masked where of the create_graph path, NaN and -0.0 in g included
    g = np.array([[np.nan, -0.0, 1.5, -2.0], [np.inf, 3.0, -0.0, np.nan]], np.float32)
    out = []
    for create in (False, True):
        x = tgrad.tensor(np.ones((2, 4), np.float32), requires_grad=True)
        base = x * 1.0
        base.narrow(1, 1, 2).copy_(tgrad.zeros(2, 2))
        (gx,) = tgrad.autograd.grad(base, x, tgrad.tensor(g), create_graph=create)
        out.append(gx.detach().numpy())
    assert out[0].tobytes() == out[1].tobytes()
    ref = g.copy()
    ref[:, 1:3] = 0.0
    assert out[0].tobytes() == ref.tobytes()


def test_write_through_a_view_after_an_out_resize_of_its_base():
    # an out= resize re-derives views made before it from the storage (the replay of their
    # chain is not trusted): the write lands where the view points, the graph records it
    base = tgrad.zeros(8)
    view = base[2:4]
    with pytest.warns(UserWarning):
        tgrad.add(tgrad.ones(2, 4), 1.0, out=base)  # resized in its storage
    src = tgrad.tensor([5.0, 6.0], requires_grad=True)
    view.copy_(src)
    assert base.reshape(-1)[2:4].tolist() == [5.0, 6.0]
    base.sum().backward()
    assert src.grad.tolist() == [1.0, 1.0]


def test_has_internal_overlap_fast_order_matches_counting():
    from tgrad._strides import has_internal_overlap
    rng = np.random.default_rng(0)
    for _ in range(300):
        nd = int(rng.integers(1, 4))
        shape = tuple(int(n) for n in rng.integers(0, 4, nd))
        strides = tuple(int(s) for s in rng.integers(-6, 7, nd))
        offs = np.zeros(1, np.int64)
        for n, st in zip(shape, strides):
            offs = (offs[:, None] + np.arange(n) * st).reshape(-1)
        want = bool(offs.size) and np.unique(offs).size < offs.size
        assert has_internal_overlap(shape, strides) == want, (shape, strides)


def test_narrow_is_getitems_slice_view():
    x = tgrad.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    for dim, start, length in ((0, 1, 1), (1, 0, 3), (2, -3, 2), (-1, 4, 0)):
        v = x.narrow(dim, start, length)
        d = dim % 3
        s = start % 4 if d == 2 and start < 0 else start
        w = x[(slice(None),) * d + (slice(s, s + length),)]
        assert v.shape == w.shape and v.stride() == w.stride()
        assert v.grad_fn.name() == w.grad_fn.name() == "SliceBackward0"
        assert v._view_chain[0][1] == w._view_chain[0][1]
        np.testing.assert_array_equal(v.detach().numpy(), w.detach().numpy())
