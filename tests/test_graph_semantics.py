"""Graph details a PyTorch user can observe: node names, next_functions, gradient buffers
that must not alias (AccumulateGrad keeps a fresh gradient without copying it only when
nothing else references it), and NumPy's error state around ops."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function
from tgrad.backends import numpy as np_backend

X = np.array([0.5, -1.25, 2.0, 3.5])
W = np.array([1.5, 2.0, -0.75, 0.25])


def leaves():
    return (tgrad.tensor(X, dtype=tgrad.float64, requires_grad=True),
            tgrad.tensor(W, dtype=tgrad.float64, requires_grad=True))


def shares_memory(a, b) -> bool:
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


# ---------------------------------------------------------------- node names (PyTorch's)
def test_reduction_node_names_full_and_dim():
    x = tgrad.tensor(np.ones((2, 3)), requires_grad=True)
    assert x.sum().grad_fn.name() == "SumBackward0"
    assert x.sum(0).grad_fn.name() == "SumBackward1"
    assert x.mean().grad_fn.name() == "MeanBackward0"
    assert x.mean(dim=1, keepdim=True).grad_fn.name() == "MeanBackward1"


def test_dot_and_index_node_names_and_values():
    x, w = leaves()
    y = x @ w
    assert y.grad_fn.name() == "DotBackward0" and y.shape == ()
    np.testing.assert_allclose(y.item(), X @ W, rtol=1e-14)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), W, rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), X, rtol=1e-14)
    assert tgrad.autograd.gradcheck(lambda a, b: a @ b, leaves())
    assert tgrad.autograd.gradgradcheck(lambda a, b: a @ b, leaves())
    m = tgrad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    assert m[0].grad_fn.name() == "SelectBackward0"
    assert m[..., 1].grad_fn.name() == "SelectBackward0"
    assert m[1, :].grad_fn.name() == "SelectBackward0"
    assert m[0:2].grad_fn.name() == "SliceBackward0"
    assert m[1, 1:3].grad_fn.name() == "SliceBackward0"
    # a None last: UnsqueezeBackward0, saving the new dim's place in the result; no
    # effective item: PyTorch's alias (AliasBackward0)
    for key, dim in (((None,), 0), ((slice(None), None), 1), ((0, None), 0),
                     ((Ellipsis, None), 2), ((slice(1, 2), None, None), 2)):
        assert m[key].grad_fn.name() == "UnsqueezeBackward0", key
        assert m[key].grad_fn._saved_dim == dim, key
    assert m[None, 0].grad_fn.name() == "SelectBackward0"
    assert m[None, 1:2].grad_fn.name() == "SliceBackward0"
    assert m[...].grad_fn.name() == m[:].grad_fn.name() == "AliasBackward0"
    # c + x is x + c, as c * x is x * c (PyTorch's __radd__ / __rmul__): edges (x, None)
    for y in (1 + m, 2.5 * m):
        assert [n is None for n, _ in y.grad_fn.next_functions] == [False, True]
    m[2].sum().backward()
    expect = np.zeros((3, 4))
    expect[2] = 1.0
    np.testing.assert_array_equal(m.grad.numpy(), expect)


def test_next_functions_list_tensor_inputs_only():
    x, w = leaves()
    y = x * w
    s = y.sum()
    assert s.grad_fn.next_functions == ((y.grad_fn, 0),)
    (ax, _), (aw, _) = y.grad_fn.next_functions
    assert ax.variable is x and aw.variable is w
    # A number operand of a binary op keeps a (None, 0) slot, as in PyTorch (a + 2).
    nf = (x + 2).grad_fn.next_functions
    assert len(nf) == 2 and nf[0][0].variable is x and nf[1] == (None, 0)
    assert x.clamp(0.0, 1.0).grad_fn.next_functions[0][0].variable is x
    assert len(x.clamp(0.0, 1.0).grad_fn.next_functions) == 1


def test_custom_function_next_functions_skip_non_tensor_args():
    class Scale(Function):
        @staticmethod
        def forward(ctx, k, t, note):
            ctx.k = k
            return t * k

        @staticmethod
        def backward(ctx, g):
            return None, g * ctx.k, None

    x, _ = leaves()
    y = Scale.apply(3.0, x, "note")
    nf = y.grad_fn.next_functions
    assert len(nf) == 1 and nf[0][0].variable is x
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(4, 3.0))


# ---------------------------------------------------------------- gradients never aliased
def test_fresh_gradient_is_kept_and_values_are_right():
    x, w = leaves()
    (x * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), W, rtol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), X, rtol=1e-14)
    assert not shares_memory(x.grad, w.grad)
    (x * w).sum().backward()  # accumulates in place into the kept buffer
    np.testing.assert_allclose(x.grad.numpy(), 2 * W, rtol=1e-14)


def test_linear_gradients_are_kept_without_a_copy_in_the_leaf_layout(monkeypatch):
    # y = x @ w.t() + b (linear's addmm): w.t()'s gradient is computed transposed (PyTorch's
    # mm_mat2_backward), so TBackward0 hands w a C-contiguous gradient viewing a fresh array,
    # and b's is a reshape of SumTo's fresh sum: both kept as .grad, not copied
    from tgrad.autograd import node

    def no_copy(t):
        raise AssertionError(f"AccumulateGrad copied a gradient of shape {t.shape}")
    rng = np.random.default_rng(1)
    xv, wv, bv = rng.standard_normal((5, 3)), rng.standard_normal((4, 3)), rng.standard_normal(4)
    gv = rng.standard_normal((5, 4))
    for dt in (tgrad.float64, tgrad.complex128):
        w = tgrad.tensor(wv * (1 + 0.5j if dt.is_complex else 1), dtype=dt, requires_grad=True)
        b = tgrad.tensor(bv, dtype=dt, requires_grad=True)
        x = tgrad.tensor(xv, dtype=dt)
        monkeypatch.setattr(node, "_plain_clone", no_copy)
        tgrad.addmm(b, x, w.t()).backward(tgrad.tensor(gv, dtype=dt))
        monkeypatch.undo()
        np.testing.assert_allclose(w.grad.numpy(), gv.T @ xv, rtol=1e-14)
        np.testing.assert_allclose(b.grad.numpy(), gv.sum(0), rtol=1e-14)
        assert w.grad.stride() == w.stride() == (3, 1) and w.grad.is_contiguous()
    # mat1 laid out transposed: (w b^H)^H, x.t() @ v with x a (3, 5) leaf
    x = tgrad.tensor(xv.T.copy(), requires_grad=True, dtype=tgrad.float64)
    v = tgrad.tensor(wv.T.copy(), dtype=tgrad.float64)
    (x.t() @ v).backward(tgrad.tensor(gv, dtype=tgrad.float64))
    np.testing.assert_allclose(x.grad.numpy(), (gv @ wv).T, rtol=1e-14)
    assert x.grad.is_contiguous()


def test_transposed_gradient_kept_by_a_hook_is_not_aliased():
    # w.t()'s gradient, kept by a hook, is what w's gradient views: w gets a copy
    rng = np.random.default_rng(2)
    w = tgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    wt = w.t()
    seen = []
    wt.register_hook(seen.append)
    (tgrad.tensor(rng.standard_normal((5, 3))) @ wt).sum().backward()
    assert not shares_memory(w.grad, seen[0])
    expected = seen[0].numpy().T.copy()
    w.grad.zero_()
    np.testing.assert_array_equal(seen[0].numpy().T, expected)


def test_transposed_gradient_shares_the_version_counter_of_what_it_views():
    # autograd.grad through w.t() hands back the grad_output's memory (PyTorch: G.t(), a
    # view of G): it must share G's version counter, so writing it in place makes a
    # backward that saved G raise instead of silently using the modified values
    w = tgrad.ones(2, 3, dtype=tgrad.float64, requires_grad=True)
    g = tgrad.full((3, 2), 2.0, dtype=tgrad.float64, requires_grad=True)
    e = (g * g).sum()  # saves g
    gw, = tgrad.autograd.grad(w.t(), w, g)
    assert shares_memory(gw, g)
    with tgrad.no_grad():
        gw.add_(1.0)
    assert g._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        e.backward()
    # a private gradient is still kept as .grad without a copy (see the test above)
    w2 = tgrad.ones(2, 3, dtype=tgrad.float64, requires_grad=True)
    (tgrad.ones(4, 3, dtype=tgrad.float64) @ w2.t()).sum().backward()
    np.testing.assert_array_equal(w2.grad.numpy(), np.full((2, 3), 4.0))


def test_products_of_transposed_operands_differentiate_twice():
    rng = np.random.default_rng(3)
    x = tgrad.tensor(rng.standard_normal((3, 5)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(4), requires_grad=True)
    fn = lambda x, w, b: tgrad.addmm(b, x.t(), w.t()) ** 2  # noqa: E731
    assert tgrad.autograd.gradcheck(fn, (x, w, b))
    assert tgrad.autograd.gradgradcheck(fn, (x, w, b))
    assert tgrad.autograd.gradgradcheck(lambda x, w: (x.t() @ w.t()).sin(), (x, w))


def test_user_gradient_is_not_aliased():
    x, _ = leaves()
    g = tgrad.tensor(np.array([1.0, 2.0, 3.0, 4.0]), dtype=tgrad.float64)
    (x * 1.0).backward(g)
    assert x.grad is not g and not shares_memory(x.grad, g)
    x2, _ = leaves()
    x2.backward(g)  # the root is the leaf itself
    assert not shares_memory(x2.grad, g)
    x2.grad.add_(1.0)
    np.testing.assert_array_equal(g.numpy(), [1.0, 2.0, 3.0, 4.0])


def test_shared_gradient_of_add_reaches_two_leaves_as_copies():
    x, w = leaves()
    c = tgrad.tensor(np.array([2.0, 3.0, 4.0, 5.0]), dtype=tgrad.float64)
    ((x + w) * c).sum().backward()  # AddBackward0 passes one fresh tensor to both leaves
    np.testing.assert_allclose(x.grad.numpy(), c.numpy())
    np.testing.assert_allclose(w.grad.numpy(), c.numpy())
    assert not shares_memory(x.grad, w.grad)
    x.grad.mul_(10.0)
    np.testing.assert_allclose(w.grad.numpy(), c.numpy())


def test_gradient_kept_by_a_hook_is_not_aliased():
    x, w = leaves()
    seen = []
    x.register_hook(lambda g: seen.append(g))
    (x * w).sum().backward()
    assert not shares_memory(x.grad, seen[0])
    x.grad.zero_()
    np.testing.assert_allclose(seen[0].numpy(), W)
    # A hook returning a tensor it also keeps.
    x2, _ = leaves()
    kept = []

    def double(g):
        kept.append(g * 2.0)
        return kept[-1]
    x2.register_hook(double)
    (x2 * w).sum().backward()
    assert not shares_memory(x2.grad, kept[0])
    np.testing.assert_allclose(x2.grad.numpy(), 2 * W)


def test_retained_gradient_is_not_aliased():
    x, w = leaves()
    y = x * 1.0
    y.retain_grad()
    (y * w).sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), W)
    np.testing.assert_allclose(x.grad.numpy(), W)
    assert not shares_memory(x.grad, y.grad)
    x.grad.zero_()
    np.testing.assert_allclose(y.grad.numpy(), W)


def test_gradient_returned_by_custom_backward_from_ctx_is_copied():
    class KeepsGrad(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.const = tgrad.tensor(np.array([7.0, 8.0, 9.0, 10.0]), dtype=tgrad.float64)
            return t * 1.0

        @staticmethod
        def backward(ctx, g):
            return ctx.const

    x, _ = leaves()
    y = KeepsGrad.apply(x)
    y.sum().backward(retain_graph=True)
    assert not shares_memory(x.grad, y.grad_fn.const)
    x.grad.zero_()
    np.testing.assert_array_equal(y.grad_fn.const.numpy(), [7.0, 8.0, 9.0, 10.0])


def test_expanded_gradient_is_materialized():
    x = tgrad.tensor(np.ones((2, 3)), requires_grad=True)
    x.mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1 / 6))
    x.grad.add_(1.0)  # a broadcast view would be read-only
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1 + 1 / 6))


# ---------------------------------------------------------------- NumPy error state
def test_ops_are_quiet_and_leave_numpy_error_state_alone():
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tgrad.tensor([1.0, 0.0, -1.0])
        y = (x / 0.0).log()
    assert np.isnan(y.numpy()[1]) and np.isnan(y.numpy()[2])
    assert np.geterr() == before
    old = np.seterr(all="raise")
    try:
        assert np.isinf((x / 0.0).numpy()[0])  # tgrad never raises/warns on inf/nan
        with pytest.raises(FloatingPointError):
            np.array([1.0]) / 0.0  # and the user's setting still holds outside ops
    finally:
        np.seterr(**old)
    with np_backend.quiet():
        assert np.geterr()["divide"] == "ignore"
    assert np.geterr() == before


def test_fresh_gradient_is_not_copied():
    x, w = leaves()
    y = x * w
    ids = []
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: ids.append(id(grad_inputs[0])))
    y.sum().backward()
    assert ids == [id(x.grad)]  # the tensor MulBackward0 returned (alive as x.grad): no copy


def test_relu_backward_primitive_matches_its_definition():
    rng = np.random.default_rng(3)
    import ml_dtypes
    for dt in (np.float16, ml_dtypes.bfloat16, np.float32, np.float64):
        g = rng.standard_normal(50).astype(dt)
        x = rng.standard_normal(50)
        x[[3, 17]] = np.nan  # relu(NaN) is NaN, and PyTorch passes g through there
        y = np.maximum(x, 0).astype(dt)
        # PyTorch's threshold_backward: 0 where y <= 0, else g
        ref = np.where(y.astype(np.float64) <= 0, 0.0, g.astype(np.float64)).astype(dt)
        got = np_backend.relu_backward(g, y)
        assert got.dtype == dt
        np.testing.assert_array_equal(got, ref)
    x = tgrad.tensor(np.array([-1.5, 0.25, 2.0, -0.5]), dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda t: t.relu(), (x,))
    assert tgrad.autograd.gradgradcheck(lambda t: t.relu() * t, (x,))


def test_cpu_nodes_free_their_workspaces_with_the_saved_tensors():
    # ctc_loss, logcumsumexp and the RNN layers keep NumPy workspaces as ctx attributes:
    # a backward without retain_graph frees them with the saved tensors (a second backward
    # raises PyTorch's error); with retain_graph they stay and a second backward agrees
    rng = np.random.default_rng(4)
    lstm = tgrad.nn.LSTM(3, 4)
    targets = tgrad.tensor(rng.integers(1, 5, (2, 3)))

    def cases():
        x = tgrad.tensor(rng.standard_normal((6, 2, 5)), requires_grad=True)
        yield x, tgrad.nn.functional.ctc_loss(x.log_softmax(2), targets, [6, 6], [3, 2])
        yield x, x.logcumsumexp(0).sum()
        xs = tgrad.tensor(rng.standard_normal((5, 2, 3)).astype(np.float32), requires_grad=True)
        yield xs, lstm(xs)[0].sum()

    for x, loss in cases():
        node = loss.grad_fn
        while not any(hasattr(node, name) and name in node._released_attributes
                      for name in ("ws", "steps")):
            node = node.next_functions[0][0]
        (first,) = tgrad.autograd.grad(loss, x, retain_graph=True)
        (again,) = tgrad.autograd.grad(loss, x)
        np.testing.assert_array_equal(again.numpy(), first.numpy())
        assert all(getattr(node, name) is None for name in node._released_attributes)
        with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
            tgrad.autograd.grad(loss, x)
