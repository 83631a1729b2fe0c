"""The torch.autograd API: backward/grad, grad modes, tensor autograd attributes, hooks,
retain_grad, Variable, anomaly detection. Values are checked against NumPy float64."""

import re
import threading
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function

A = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]])
B = np.array([[1.0, 2.0, -3.0], [0.25, -0.5, 1.5]])


def leaf(arr, dtype=tgrad.float64):
    return tgrad.tensor(arr, dtype=dtype, requires_grad=True)


# --------------------------------------------------------------------- backward / grad

def test_backward_accumulates_into_leaves():
    a, b = leaf(A), leaf(B)
    loss = (a * b + a.exp()).sum()
    loss.backward()
    np.testing.assert_allclose(a.grad.numpy(), B + np.exp(A), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), A, rtol=1e-12)
    (a * b).sum().backward()  # accumulates
    np.testing.assert_allclose(a.grad.numpy(), 2 * B + np.exp(A), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), 2 * A, rtol=1e-12)
    a.grad = None
    (a * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full_like(A, 3.0))


def test_grad_is_none_by_default_and_settable():
    a = leaf(A)
    assert a.grad is None
    a.grad = tgrad.ones(2, 3, dtype=tgrad.float64)
    (a * 2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full_like(A, 3.0))
    with pytest.raises(RuntimeError, match="attempting to assign a gradient of size '\\[3\\]'"):
        a.grad = tgrad.ones(3, dtype=tgrad.float64)
    with pytest.raises(RuntimeError, match="attempting to assign a gradient with dtype"):
        a.grad = tgrad.ones(2, 3, dtype=tgrad.float32)


def test_grad_does_not_share_memory_between_leaves():
    # y = a + b: the same incoming gradient reaches both leaves.
    a, b = leaf(A), leaf(B)
    (a + b).sum().backward()
    a.grad.add_(1)
    np.testing.assert_allclose(b.grad.numpy(), np.ones_like(B))


def test_retain_graph_error_and_retained_second_backward():
    a = leaf(A)
    y = (a.exp() * a).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), 2 * (np.exp(A) * (1 + A)), rtol=1e-12)
    with pytest.raises(RuntimeError) as e:
        y.backward()
    msg = str(e.value)
    assert "Trying to backward through the graph a second time" in msg
    assert "Specify retain_graph=True" in msg


def test_saved_tensors_are_freed_after_backward():
    a = leaf(A)
    y = a.exp()
    z = y * y
    node = z.grad_fn
    assert node._saved is not None
    z.sum().backward()
    assert node._saved is None



_MASK = [True, False, True, False, True]
# Ops whose PyTorch node saves index data (indices, index, mask) and nothing else, so a
# second backward without retain_graph raises there (checked against PyTorch 2.13).
_INDEX_KEEPING_OPS = {
    "x[index]": lambda x: x[tgrad.tensor([0, 2])],
    "x[mask]": lambda x: x[tgrad.tensor(_MASK)],
    "gather": lambda x: tgrad.gather(x, 0, tgrad.tensor([1, 1])),
    "index_select": lambda x: tgrad.index_select(x, 0, tgrad.tensor([1, 1])),
    "take": lambda x: tgrad.take(x, tgrad.tensor([1, 3])),
    "masked_select": lambda x: tgrad.masked_select(x, x > 0),
    "scatter": lambda x: tgrad.zeros(5, dtype=x.dtype).scatter(0, tgrad.tensor([1, 2]), x),
    "scatter_add": lambda x: tgrad.zeros(5, dtype=x.dtype).scatter_add(
        0, tgrad.tensor([1, 1]), x),
    "index_fill": lambda x: x.index_fill(0, tgrad.tensor([1]), 2.0),
    "index_add": lambda x: x.index_add(0, tgrad.tensor([1, 1]), x[:2]),
    "index_copy": lambda x: x.index_copy(0, tgrad.tensor([1, 2]), x[:2]),
    "index_put": lambda x: x.index_put((tgrad.tensor([1, 2]),), x[:2]),
    "masked_scatter": lambda x: tgrad.zeros(5, dtype=x.dtype).masked_scatter(
        tgrad.tensor(_MASK), x),
    "sort": lambda x: tgrad.sort(x)[0],
    "topk": lambda x: tgrad.topk(x, 2)[0],
    "kthvalue": lambda x: tgrad.kthvalue(x, 2)[0],
    "cummax": lambda x: tgrad.cummax(x, 0)[0],
    "embedding": lambda x: tgrad.nn.functional.embedding(tgrad.tensor([0, 1, 1]),
                                                         x.reshape(5, 1)),
    "max_unpool1d": lambda x: tgrad.nn.functional.max_unpool1d(
        x[:2].reshape(1, 1, 2), tgrad.tensor([[[0, 3]]]), 2, output_size=[5]),
}


@pytest.mark.parametrize("name", sorted(_INDEX_KEEPING_OPS))
def test_second_backward_through_an_index_keeping_op_raises(name):
    x = tgrad.tensor([0.3, -1.2, 0.7, 2.0, -0.4], dtype=tgrad.float64, requires_grad=True)
    y = _INDEX_KEEPING_OPS[name](x).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    y.backward()  # retained: runs again, adding the same gradient
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)
    with pytest.raises(RuntimeError, match=re.escape(
            "Trying to backward through the graph a second time")):
        y.backward()


def test_a_custom_function_that_saves_nothing_backwards_twice():
    # PyTorch raises only when a freed saved tensor is read: a Function that saved
    # nothing runs again without retain_graph
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf(A)
    y = Double.apply(x).sum()
    y.backward()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(A.shape, 4.0))

def test_create_graph_higher_order():
    x = tgrad.tensor([0.3, -1.2, 2.0], dtype=tgrad.float64, requires_grad=True)
    y = (x ** 3 + x.tanh()).sum()
    (g,) = tgrad.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    xn = x.detach().numpy()
    t = np.tanh(xn)
    np.testing.assert_allclose(g.detach().numpy(), 3 * xn ** 2 + 1 - t ** 2, rtol=1e-12)
    (h,) = tgrad.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(h.detach().numpy(), 6 * xn - 2 * t * (1 - t ** 2), rtol=1e-12)
    (h3,) = tgrad.autograd.grad(h.sum(), x)
    d3 = 6 - 2 * (1 - t ** 2) ** 2 + 4 * t ** 2 * (1 - t ** 2)
    np.testing.assert_allclose(h3.numpy(), d3, rtol=1e-10)


def test_backward_create_graph_keeps_grad_graph():
    x = tgrad.tensor([1.5, 2.0], dtype=tgrad.float64, requires_grad=True)
    (x ** 2).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_implicit_gradient_only_for_scalar_outputs():
    a = leaf(A)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        (a * 2).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar "
                                           "outputs"):
        tgrad.autograd.grad(a * 2, a)
    # A single-element non-0-d output is fine.
    x = tgrad.tensor([2.0], requires_grad=True)
    (x * 3).backward()
    assert x.grad.tolist() == [3.0]


def test_vector_jacobian_product_and_shape_check():
    a = leaf(A)
    v = tgrad.tensor(B, dtype=tgrad.float64)
    (a.tanh()).backward(v)
    np.testing.assert_allclose(a.grad.numpy(), B * (1 - np.tanh(A) ** 2), rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape "
                                           r"of \(3,\) and output\[0\] has a shape of \(2, 3\)"):
        (a * 2).backward(tgrad.ones(3, dtype=tgrad.float64))


def test_backward_of_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        tgrad.ones(2).sum().backward()


def test_autograd_backward_function_with_several_tensors():
    a, b = leaf(A), leaf(B)
    y1 = (a * b).sum()
    y2 = a * 2
    tgrad.autograd.backward([y1, y2], [None, tgrad.ones(2, 3, dtype=tgrad.float64)])
    np.testing.assert_allclose(a.grad.numpy(), B + 2, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), A, rtol=1e-12)
    with pytest.raises(RuntimeError, match="got 1 tensors and 2 gradients"):
        tgrad.autograd.backward([a.sum()], [None, None])


def test_grad_returns_without_accumulating():
    a, b = leaf(A), leaf(B)
    ga, gb = tgrad.autograd.grad((a * b).sum(), [a, b])
    np.testing.assert_allclose(ga.numpy(), B)
    np.testing.assert_allclose(gb.numpy(), A)
    assert a.grad is None and b.grad is None


def test_grad_wrt_intermediate_and_multiple_outputs():
    a = leaf(A)
    h = a * 2
    y = (h * h).sum()
    (gh,) = tgrad.autograd.grad(y, h, retain_graph=True)
    np.testing.assert_allclose(gh.numpy(), 2 * (2 * A))
    g1, = tgrad.autograd.grad([y, h.sum()], a, retain_graph=True)
    np.testing.assert_allclose(g1.numpy(), 8 * A + 2)
    g2, = tgrad.autograd.grad([y, h.sum()], [a], grad_outputs=[tgrad.tensor(2.0,
                                                                         dtype=tgrad.float64),
                                                                 None])
    np.testing.assert_allclose(g2.numpy(), 16 * A + 2)


def test_allow_unused():
    a, b = leaf(A), leaf(B)
    y = (a * 2).sum()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph. Set "
                                           "allow_unused=True"):
        tgrad.autograd.grad(y, [a, b], retain_graph=True)
    ga, gb = tgrad.autograd.grad(y, [a, b], allow_unused=True)
    np.testing.assert_allclose(ga.numpy(), np.full_like(A, 2.0))
    assert gb is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        tgrad.autograd.grad(y, tgrad.ones(2))


def test_backward_inputs_restricts_accumulation():
    a, b = leaf(A), leaf(B)
    h = a * b
    loss = (h * h).sum()
    loss.backward(inputs=[a], retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), 2 * A * B * B, rtol=1e-12)
    assert b.grad is None
    loss.backward(inputs=[h])  # a non-leaf input gets .grad
    np.testing.assert_allclose(h.grad.numpy(), 2 * A * B, rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), 2 * A * B * B, rtol=1e-12)  # unchanged
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (a * 1).sum().backward(inputs=[])


def test_only_inputs_false_warns():
    a = leaf(A)
    with pytest.warns(UserWarning, match="only_inputs argument is deprecated"):
        tgrad.autograd.grad((a * 1).sum(), a, only_inputs=False)


def test_diamond_graph_sums_gradients():
    # y = exp(x) used twice through different paths.
    x = tgrad.tensor([0.5, -0.25], dtype=tgrad.float64, requires_grad=True)
    y = x.exp()
    z = y * y + y.tanh() * 3 + y
    z.sum().backward()
    e = np.exp([0.5, -0.25])
    expected = (2 * e + 3 * (1 - np.tanh(e) ** 2) + 1) * e
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


# ------------------------------------------------------------------------ grad modes

def test_grad_mode_exports():
    for name in ("no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"):
        assert getattr(tgrad, name) is getattr(tgrad.autograd, name)


def test_no_grad_context_and_decorators():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.no_grad():
        assert not tgrad.is_grad_enabled()
        y = x * 2
    assert tgrad.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None

    @tgrad.no_grad()
    def f(t):
        return t * 2

    @tgrad.no_grad
    def g(t):
        return t * 2

    assert not f(x).requires_grad and not g(x).requires_grad
    assert f.__name__ == "f"
    assert tgrad.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.no_grad():
        with tgrad.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and not z.requires_grad

    @tgrad.enable_grad
    def f(t):
        return t * 2

    @tgrad.enable_grad()
    def f2(t):
        return t * 2

    with tgrad.no_grad():
        assert f(x).requires_grad and f2(x).requires_grad
        assert not tgrad.is_grad_enabled()


def test_set_grad_enabled_all_forms():
    x = tgrad.ones(2, requires_grad=True)
    with tgrad.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tgrad.is_grad_enabled()
    with tgrad.set_grad_enabled(True):
        assert (x * 2).requires_grad
    try:
        tgrad.set_grad_enabled(False)  # plain call
        assert not tgrad.is_grad_enabled()
        assert not (x * 2).requires_grad
    finally:
        tgrad.set_grad_enabled(True)
    assert (x * 2).requires_grad

    @tgrad.set_grad_enabled(False)
    def f(t):
        return t * 2

    assert tgrad.is_grad_enabled()  # decorating does not switch the mode
    assert not f(x).requires_grad
    assert tgrad.is_grad_enabled()


def test_grad_mode_restored_on_exception():
    with pytest.raises(ValueError):
        with tgrad.no_grad():
            raise ValueError
    assert tgrad.is_grad_enabled()


def test_grad_mode_decorates_generators():
    x = tgrad.ones(2, requires_grad=True)

    @tgrad.no_grad()
    def gen():
        for _ in range(2):
            yield (x * 2).requires_grad, tgrad.is_grad_enabled()

    out = []
    for item in gen():
        out.append(item)
        assert tgrad.is_grad_enabled()  # the caller is unaffected between steps
    assert out == [(False, False), (False, False)]


def test_grad_mode_decorated_generator_keeps_return_value_and_closes_in_mode():
    # PyTorch: `return v` in a decorated generator is StopIteration.value (yield from sees
    # it), and close() runs the generator's finally block in the decorator's mode
    @tgrad.no_grad()
    def gen():
        try:
            sent = yield 1
            yield sent * 2
        finally:
            seen.append(tgrad.is_grad_enabled())
        return "done"

    seen = []
    g = gen()
    assert next(g) == 1 and g.send(5) == 10
    with pytest.raises(StopIteration) as info:
        next(g)
    assert info.value.value == "done" and seen == [False]

    def outer():
        result = yield from gen()
        return result

    o = outer()
    next(o)
    o.send(1)
    with pytest.raises(StopIteration) as info:
        next(o)
    assert info.value.value == "done"

    seen.clear()
    g = gen()
    next(g)
    g.close()
    assert seen == [False] and tgrad.is_grad_enabled()


def test_grad_mode_decorating_a_class_warns_and_constructs_in_the_mode():
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        @tgrad.no_grad()
        class C:
            def __init__(self):
                self.enabled = tgrad.is_grad_enabled()

    assert C().enabled is False and tgrad.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = {}
    started, release = threading.Event(), threading.Event()

    def worker():
        seen["initial"] = tgrad.is_grad_enabled()
        with tgrad.no_grad():
            started.set()
            release.wait(10)
            seen["inside"] = tgrad.is_grad_enabled()

    with tgrad.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        started.wait(10)
        assert not tgrad.is_grad_enabled()
    assert tgrad.is_grad_enabled()  # the other thread's no_grad does not leak here
    release.set()
    th.join()
    assert seen == {"initial": True, "inside": False}


# ---------------------------------------------------------- tensor autograd attributes

def test_requires_grad_and_is_leaf():
    a = tgrad.rand(10, requires_grad=True)
    assert a.is_leaf and a.requires_grad
    c = tgrad.rand(10, requires_grad=True) + 2
    assert not c.is_leaf and c.requires_grad
    d = tgrad.rand(10)
    assert d.is_leaf and not d.requires_grad
    e = tgrad.rand(10).requires_grad_()
    assert e.is_leaf and e.requires_grad
    e.requires_grad_(False)
    assert not e.requires_grad
    e.requires_grad = True
    assert e.requires_grad
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        c.requires_grad_(False)
    with pytest.raises(RuntimeError, match="floating point"):
        tgrad.tensor([1, 2]).requires_grad_()
    # ops on tensors that do not require grad do not record
    assert (d * 2).grad_fn is None


def test_grad_fn_names_and_next_functions():
    a = tgrad.ones(3, requires_grad=True)
    b = a * 2
    c = b ** 2
    assert b.grad_fn.name() == "MulBackward0"
    assert c.grad_fn.name() == "PowBackward0"
    assert type(c.grad_fn).__name__ == "PowBackward0"
    # As PyTorch: pow with a number exponent lists only its tensor input; a number operand
    # of mul (wrapped in a tensor by PyTorch) keeps a (None, 0) slot.
    assert c.grad_fn.next_functions == ((b.grad_fn, 0),)
    (nf0, nr0), (nf1, _) = b.grad_fn.next_functions
    assert nf0.variable is a and nr0 == 0 and nf1 is None
    acc = b.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is a
    assert (a + a).grad_fn.next_functions[0][0] is (a * 1).grad_fn.next_functions[0][0]
    names = {(a - 1).grad_fn.name(), (a / 2).grad_fn.name(), a.exp().grad_fn.name(),
             a.tanh().grad_fn.name(), (-a).grad_fn.name()}
    assert names == {"SubBackward0", "DivBackward0", "ExpBackward0", "TanhBackward0",
                     "NegBackward0"}


def test_node_call_returns_input_gradients():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = tgrad.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    ga, gb = y.grad_fn(tgrad.ones(2))
    assert ga.tolist() == [3.0, 4.0] and gb.tolist() == [1.0, 2.0]
    g = a.exp().grad_fn(tgrad.ones(2))  # one input: the Tensor itself, as PyTorch's
    assert isinstance(g, tgrad.Tensor)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    # one gradient per next_functions edge (tgrad gave one per forward argument: sum's
    # dim / keepdim / dtype and cat's dim as None entries)
    x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    g = x.sum().grad_fn(tgrad.tensor(3.0, dtype=tgrad.float64))
    assert isinstance(g, tgrad.Tensor) and g.tolist() == [3.0, 3.0]
    assert isinstance(x.view(2, 1).grad_fn(tgrad.ones(2, 1, dtype=tgrad.float64)),
                      tgrad.Tensor)
    c = tgrad.cat([x, x * 2])
    g1, g2 = c.grad_fn(tgrad.arange(4.0, dtype=tgrad.float64))
    assert g1.tolist() == [0.0, 1.0] and g2.tolist() == [2.0, 3.0]
    gx, none = (x * 2).grad_fn(tgrad.ones(2, dtype=tgrad.float64))  # the number's slot
    assert gx.tolist() == [2.0, 2.0] and none is None


def test_detach_shares_storage_and_version():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    d = b.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert d.data_ptr() == b.data_ptr()
    y = b.exp()  # saves its output, not b
    z = b * b  # saves b
    d.add_(1)  # visible through b, bumps the shared version counter
    assert b.tolist() == [2.0, 3.0]
    assert b._version == d._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    y.sum().backward()


def test_detach_in_place():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.detach_()
    assert b.is_leaf and not b.requires_grad and b.grad_fn is None
    c = a * 2
    v = c[0:1]
    with pytest.raises(RuntimeError, match="Can't detach views in-place. Use detach\\(\\) "
                                           "instead"):
        v.detach_()



def test_view_of_base_detached_in_place_then_written_depends_on_nothing():
    # PyTorch: once the detached base's memory is written (through another view or the
    # base), a view taken before detach_() is regenerated from the constant base, so it
    # carries no gradient to a; before the write it still does
    a = leaf([1.0, -2.0, 3.0])
    b = a * 2
    v = b[1:]
    w = b[:2]
    b.detach_()
    g, = tgrad.autograd.grad(v.sum(), a, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [0.0, 2.0, 2.0])
    b.view(-1)[2] = 10.0  # a write through a view of the detached base
    np.testing.assert_allclose(v.detach().numpy(), [-4.0, 10.0])
    assert v.requires_grad and v.grad_fn is not None  # as PyTorch: a node with no edge
    loss = (v * 3).sum() + (a * a).sum()
    g, = tgrad.autograd.grad(loss, a)
    np.testing.assert_allclose(g.numpy(), [2.0, -4.0, 6.0])  # from a * a only
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tgrad.autograd.grad(w.sum() * 2, a)
    assert a.grad is None
    (w.sum() + a.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 1.0, 1.0])
    assert b.grad is None

def test_nonleaf_grad_warns_and_retain_grad():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert b.grad is None
    b.retain_grad()
    c = (b * b).sum()
    c.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(b.grad.numpy(), [6.0, 12.0])
        assert a.grad is not None  # leaves never warn
    a.retain_grad()  # no-op on a leaf
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        tgrad.ones(2).retain_grad()


def test_retain_grad_accumulates_over_backward_calls():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 3
    b.retain_grad()
    y = (b * b).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(b.grad.numpy(), [12.0, 24.0])


def test_hooks_on_leaves():
    v = tgrad.tensor([0.0, 0.0, 0.0], requires_grad=True)
    seen = []
    h1 = v.register_hook(lambda g: seen.append(g.tolist()))
    h2 = v.register_hook(lambda g: g * 2)
    v.backward(tgrad.tensor([1.0, 2.0, 3.0]))
    assert v.grad.tolist() == [2.0, 4.0, 6.0]
    assert seen == [[1.0, 2.0, 3.0]]
    h2.remove()
    h1.remove()
    v.grad = None
    v.backward(tgrad.tensor([1.0, 2.0, 3.0]))
    assert v.grad.tolist() == [1.0, 2.0, 3.0]
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tgrad.ones(2).register_hook(lambda g: g)


def test_hooks_on_non_leaves_replace_gradient_flowing_on():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.retain_grad()
    h = b.register_hook(lambda g: g * 10)
    (b * b).sum().backward()
    # the hook replaces d/db = 2b = [4, 8] by [40, 80]; it flows on to a (x2)
    np.testing.assert_allclose(a.grad.numpy(), [80.0, 160.0])
    np.testing.assert_allclose(b.grad.numpy(), [40.0, 80.0])  # retain_grad sees hooked grad
    h.remove()
    a.grad = None
    b2 = a * 2
    b2.register_hook(lambda g: None)  # returning None keeps the gradient
    (b2 * b2).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [8.0, 16.0])


def test_hooks_run_for_autograd_grad():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    a.register_hook(lambda g: g + 1)
    (g,) = tgrad.autograd.grad((a * 3).sum(), a)
    np.testing.assert_allclose(g.numpy(), [4.0, 4.0])


def test_node_hooks():
    a = tgrad.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    calls = []

    def post(grad_inputs, grad_outputs):
        calls.append((grad_inputs[0].tolist(), grad_outputs[0].tolist()))

    h = b.grad_fn.register_hook(post)
    b.sum().backward(retain_graph=True)
    assert calls == [([2.0, 2.0], [1.0, 1.0])]
    h.remove()
    b.sum().backward()
    assert len(calls) == 1


def test_variable_is_deprecated_and_returns_a_tensor():
    from tgrad.autograd import Variable
    t = tgrad.ones(2)
    with pytest.warns(DeprecationWarning, match="deprecated"):
        v = Variable(t, requires_grad=True)
    assert isinstance(v, tgrad.Tensor) and v.requires_grad
    with pytest.warns(DeprecationWarning):
        w = Variable(tgrad.ones(2))
    assert not w.requires_grad
    (v * 2).sum().backward()
    assert v.grad.tolist() == [2.0, 2.0]


# ------------------------------------------------------------------ anomaly detection

class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g * float("nan")


def test_detect_anomaly_reports_nan_and_forward_traceback():
    x = tgrad.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = tgrad.autograd.detect_anomaly()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with ctx:
            assert tgrad.autograd.is_anomaly_enabled()
            y = (x * 0).log() * 0  # log(0) = -inf; its backward computes 0 / 0
            with pytest.raises(RuntimeError,
                               match="Function 'LogBackward0' returned nan values in its "
                                     "0th output."):
                y.sum().backward()
    assert not tgrad.autograd.is_anomaly_enabled()
    traces = [str(m.message) for m in w if "Traceback of forward call" in str(m.message)]
    assert len(traces) == 1
    # PyTorch's category (its C++ TORCH_WARN): a UserWarning (was RuntimeWarning)
    assert [m.category for m in w if "Error detected" in str(m.message)] == [UserWarning]
    assert "Error detected in LogBackward0" in traces[0]
    assert "test_detect_anomaly_reports_nan_and_forward_traceback" in traces[0]
    assert "(x * 0).log()" in traces[0]


def test_detect_anomaly_as_decorator_and_custom_function():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)

    with pytest.warns(UserWarning, match="Anomaly Detection"):
        @tgrad.autograd.detect_anomaly()
        def run():
            NanBackward.apply(x).sum().backward()

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="Function 'NanBackwardBackward' returned nan "
                                               "values in its 0th output."):
            run()
    assert any("NanBackward.apply(x)" in str(m.message) for m in w)
    assert not tgrad.autograd.is_anomaly_enabled()


def test_set_detect_anomaly_call_context_and_decorator():
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    try:
        tgrad.autograd.set_detect_anomaly(True)
        assert tgrad.autograd.is_anomaly_enabled()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
                NanBackward.apply(x).sum().backward()
    finally:
        tgrad.autograd.set_detect_anomaly(False)
    assert not tgrad.autograd.is_anomaly_enabled()
    NanBackward.apply(x).sum().backward()  # without anomaly mode: no check
    assert np.isnan(x.grad.numpy()).all()
    with tgrad.set_detect_anomaly(True):
        assert tgrad.autograd.is_anomaly_enabled()
    assert not tgrad.autograd.is_anomaly_enabled()

    @tgrad.autograd.set_detect_anomaly(True)
    def f():
        return tgrad.autograd.is_anomaly_enabled()

    assert not tgrad.autograd.is_anomaly_enabled()
    assert f() is True
    assert not tgrad.autograd.is_anomaly_enabled()


def test_anomaly_warns_traceback_when_backward_raises():
    class Boom(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = tgrad.tensor([1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with tgrad.autograd.detect_anomaly():
            y = Boom.apply(x)
            with pytest.raises(ValueError, match="boom"):
                y.sum().backward()
    assert any("Error detected in BoomBackward" in str(m.message) and
               "Boom.apply(x)" in str(m.message) for m in w)


def test_root_gradient_takes_the_output_dtype():
    x = tgrad.ones(2, requires_grad=True)  # float32 leaf as the root
    x.backward(tgrad.tensor([1.5, 2.5], dtype=tgrad.float64))
    assert x.grad.dtype is tgrad.float32 and x.grad.tolist() == [1.5, 2.5]
    x.grad = None
    (x * 2).backward(tgrad.tensor([1, 2]))  # an integer gradient is cast too (PyTorch)
    assert x.grad.dtype is tgrad.float32 and x.grad.tolist() == [2.0, 4.0]
    (g,) = tgrad.autograd.grad(x * 2, x, tgrad.tensor([True, False]))
    assert g.dtype is tgrad.float32 and g.tolist() == [2.0, 0.0]


def test_one_grad_mode_instance_entered_twice():
    ng = tgrad.no_grad()
    with ng:
        with ng:
            assert not tgrad.is_grad_enabled()
        assert not tgrad.is_grad_enabled()
    assert tgrad.is_grad_enabled()


def test_backward_create_graph_warns_once_about_the_reference_cycle(monkeypatch):
    # As PyTorch (a TORCH_WARN_ONCE in its engine): backward(create_graph=True) makes a
    # leaf's .grad depend on the leaf itself (x.grad = 2x -> ... -> x), a reference cycle;
    # the first such backward of the process warns, autograd.grad never does.
    import tgrad.autograd as ag
    monkeypatch.setattr(ag, "_create_graph_warned", False)
    msg = "Using backward() with create_graph=True will create a reference cycle"
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (gx,) = tgrad.autograd.grad((x * x).sum(), x, create_graph=True)
        (x * x).sum().backward()
    assert not any(msg in str(m.message) for m in w)
    np.testing.assert_allclose(gx.detach().numpy(), [2.0, 4.0])
    x.grad = None
    with pytest.warns(UserWarning, match=r"^Using backward\(\) with create_graph=True will "
                                         r"create a reference cycle between the parameter and "
                                         r"its gradient") as rec:
        (x * x).sum().backward(create_graph=True)
    assert rec[0].filename == __file__  # attributed to the caller
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0, 4.0])  # 2x
    assert x.grad.requires_grad
    with warnings.catch_warnings(record=True) as w:  # once per process
        warnings.simplefilter("always")
        tgrad.autograd.backward([(x * x).sum()], create_graph=True)
        (x * 3).sum().backward(create_graph=True)
    assert not any(msg in str(m.message) for m in w)
    monkeypatch.setattr(ag, "_create_graph_warned", False)
    with pytest.warns(UserWarning, match="reference cycle") as rec:  # autograd.backward too
        tgrad.autograd.backward([(x * x).sum()], create_graph=True)
    assert rec[0].filename == __file__


def test_create_graph_cycle_warning_points_at_the_callers_line_in_a_fresh_process(tmp_path):
    # In a fresh process Tensor.backward first goes through a lazily bound stub (one more
    # tgrad frame): the warning must still name the user's line, for autograd.backward too.
    import os
    import subprocess
    import sys
    script = tmp_path / "user_code.py"
    script.write_text(
        "import warnings\n"
        "import tgrad\n"
        "import tgrad.autograd as ag\n"
        "x = tgrad.tensor([1.0, 2.0], requires_grad=True)\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    (x * x).sum().backward(create_graph=True)\n"  # line 7
        "    ag._create_graph_warned = False\n"
        "    ag.backward([(x * x).sum()], create_graph=True)\n"  # line 9
        "    ag._create_graph_warned = False\n"
        "    (x * x)[0].backward(create_graph=True)\n"  # line 11: the general path
        "for m in w:\n"
        "    if 'reference cycle' in str(m.message):\n"
        "        print(m.filename, m.lineno)\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, cwd=root, check=True).stdout.split("\n")
    assert out[:3] == [f"{script} 7", f"{script} 9", f"{script} 11"], out


def test_non_tensor_outputs_and_inputs_are_named():
    # PyTorch's texts: an output that is not a tensor (an AssertionError there), an input
    # that is neither a tensor nor a GradientEdge
    x = tgrad.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    with pytest.raises(TypeError, match="Expected output to be a tgrad.Tensor .*output 1 is "
                                        "a float"):
        tgrad.autograd.backward([y, 1.0])
    with pytest.raises(TypeError, match="Expected output to be a tgrad.Tensor .*output 0 is "
                                        "a float"):
        tgrad.autograd.grad([1.0], x, [tgrad.ones(())])
    for bad, name in ((None, "NoneType"), (3.0, "float"), ("a", "str")):
        with pytest.raises(RuntimeError, match="^all inputs have to be Tensors or "
                                               f"GradientEdges, but got {name}$"):
            tgrad.autograd.grad(y, [x, bad], retain_graph=True)
        with pytest.raises(RuntimeError, match=f"but got {name}$"):
            y.backward(inputs=[x, bad], retain_graph=True)
    assert x.grad is None  # nothing ran
    (g,) = tgrad.autograd.grad(y, [x])
    np.testing.assert_allclose(g.numpy(), [2.0, 2.0])


def test_grad_output_complexness_must_match_output():
    # PyTorch's _make_grads: a real gradient for a complex output, or a complex one for a
    # real output, raises (no silent cast dropping the imaginary part); complex64 for a
    # complex128 output is cast (d(2x)/dx = 2, by hand)
    msg = ("For complex Tensors, both grad_output and output are required to have the same "
           "dtype. Mismatch in dtype: grad_output[0] has a dtype of {} and output[0] has a "
           "dtype of {}.")
    for out_dt, g_dt in [(tgrad.complex128, tgrad.float64), (tgrad.float64, tgrad.complex64),
                         (tgrad.complex64, tgrad.int64)]:
        x = tgrad.ones(2, dtype=out_dt, requires_grad=True)
        with pytest.raises(RuntimeError, match=re.escape(msg.format(g_dt, out_dt))):
            (x * 2).backward(tgrad.ones(2, dtype=g_dt))
        with pytest.raises(RuntimeError, match=re.escape(msg.format(g_dt, out_dt))):
            tgrad.autograd.grad(x * 2, x, tgrad.ones(2, dtype=g_dt))
    x = tgrad.ones(2, dtype=tgrad.complex128, requires_grad=True)
    (x * 2).backward(tgrad.tensor([1 + 1j, 2 - 1j], dtype=tgrad.complex64))
    assert x.grad.dtype is tgrad.complex128
    np.testing.assert_array_equal(x.grad.numpy(), [2 + 2j, 4 - 2j])


def test_function_ctx_names_and_instantiation_as_pytorch():
    # FunctionCtx is the class of ctx (for type hints and isinstance); InplaceFunction
    # instances carry an ``inplace`` flag; instantiating a Function only warns (PyTorch's
    # DeprecationWarning) and calling the instance raises PyTorch's legacy-Function error
    from tgrad.autograd.function import FunctionCtx, InplaceFunction
    seen = []

    class Double(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx: FunctionCtx, x):
            seen.append(isinstance(ctx, FunctionCtx))
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = tgrad.tensor([1.5], requires_grad=True)
    Double.apply(x).sum().backward()
    assert seen == [True] and x.grad.tolist() == [2.0]
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        flagged = InplaceFunction(inplace=True)
    assert flagged.inplace is True
    with pytest.warns(DeprecationWarning):
        instance = Double()
    with pytest.raises(RuntimeError, match="Legacy autograd function with non-static forward"):
        instance(x)
    assert tgrad.OutOfMemoryError is tgrad.cuda.OutOfMemoryError


# ------------------------------------------------- which state other threads see (PyTorch's)
def _in_thread(fn):
    out = {}
    t = threading.Thread(target=lambda: out.update(value=fn()))
    t.start()
    t.join()
    return out["value"]


def test_anomaly_mode_is_shared_by_threads_and_the_default_device_is_not():
    # PyTorch: anomaly detection is global (a backward run in a worker thread checks for
    # NaN too), the default device thread-local (a new thread starts on the CPU)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tgrad.autograd.set_detect_anomaly(True):
            assert _in_thread(tgrad.is_anomaly_enabled)
    assert not _in_thread(tgrad.is_anomaly_enabled) and not tgrad.is_anomaly_enabled()
    meta = tgrad.device("cpu", 0)  # (any device other than the default shows the rule)
    try:
        tgrad.set_default_device(meta)
        assert tgrad.get_default_device() == meta
        assert _in_thread(tgrad.get_default_device) == tgrad.device("cpu")
        with tgrad.device("cpu"):
            assert _in_thread(tgrad.get_default_device) == tgrad.device("cpu")
        assert tgrad.get_default_device() == meta
    finally:
        tgrad.set_default_device(None)
    assert tgrad.get_default_device() == tgrad.device("cpu")
