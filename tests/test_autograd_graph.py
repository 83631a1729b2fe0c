"""tgrad.autograd.graph: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks,
register_multi_grad_hook, get_gradient_edge and increment_version, against PyTorch's
documented behaviour (checked with torch 2.14) and NumPy float64 / finite-difference
references."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.autograd.graph import (
    GradientEdge,
    allow_mutation_on_saved_tensors,
    disable_saved_tensors_hooks,
    get_gradient_edge,
    increment_version,
    save_on_cpu,
    saved_tensors_hooks,
)

RNG = np.random.default_rng(7)


def _leaf(*shape):
    return tgrad.tensor(RNG.standard_normal(shape), dtype=tgrad.float64, requires_grad=True)


def _to_numpy(t):
    """A pack hook that really moves the value out of the graph: a NumPy copy."""
    return t.detach().numpy().copy()


def _from_numpy(a):
    return tgrad.tensor(a)


def test_identity_hooks_see_each_saved_tensor_and_keep_gradients():
    x = _leaf(17)
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t

    def unpack(t):
        unpacked.append(t)
        return t

    with saved_tensors_hooks(pack, unpack):
        y = (x * x).sin()  # mul saves x twice; sin saves its input
    assert len(packed) == 3 and packed[0] is x and packed[1] is x
    assert packed[2].grad_fn is y.grad_fn.next_functions[0][0]  # sin's input: mul's output
    assert unpacked == []
    y.sum().backward()
    assert len(unpacked) == 3
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv * xv) * 2 * xv, rtol=1e-13)


def test_saved_output_is_packed_with_its_grad_fn():
    x = _leaf(5)
    seen = []
    with saved_tensors_hooks(lambda t: seen.append(t) or t, lambda t: t):
        y = x.exp()  # exp saves its output
    assert seen[0] is y and seen[0].grad_fn is y.grad_fn
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy()), rtol=1e-14)


def test_nothing_is_packed_where_nothing_is_recorded():
    calls = []
    hooks = saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t)
    x = _leaf(4)
    with hooks:
        with tgrad.no_grad():
            x.sin()
        tgrad.randn(4).sin()  # no input requires grad
    assert calls == []
    w = tgrad.randn(4, dtype=tgrad.float64)
    with hooks:
        x * w  # w does not require grad but x's gradient needs it: packed (PyTorch too)
    assert any(t is w for t in calls)


def test_pack_runs_with_grad_mode_off_and_unpack_in_the_backward_mode():
    modes = {"pack": [], "unpack": []}

    def pack(t):
        modes["pack"].append(tgrad.is_grad_enabled())
        return t

    def unpack(t):
        modes["unpack"].append(tgrad.is_grad_enabled())
        return t

    x = _leaf(3)
    with saved_tensors_hooks(pack, unpack):
        y = x.sin()
    tgrad.autograd.grad(y.sum(), x, retain_graph=True)
    tgrad.autograd.grad(y.sum(), x, create_graph=True)
    assert modes == {"pack": [False], "unpack": [False, True]}


def test_innermost_pair_packs_and_the_packing_pair_unpacks():
    log = []

    def pair(tag):
        return saved_tensors_hooks(lambda t: (tag, t), lambda p: log.append(p[0]) or p[1])

    x = _leaf(3)
    with pair("outer"):
        with pair("inner"):
            y = x.sin()
        z = x.cos()
    with pair("other"):  # active at backward time, not at pack time: not used
        (y + z).sum().backward()
    assert sorted(log) == ["inner", "outer"]
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(xv) - np.sin(xv), rtol=1e-14)


def test_unpack_runs_on_every_read():
    count = [0]

    def unpack(t):
        count[0] += 1
        return t

    x = _leaf(3)
    with saved_tensors_hooks(lambda t: t, unpack):
        y = x.sin()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert count[0] == 2

    class Twice(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors  # noqa: B018 - read twice on purpose
            (a,) = ctx.saved_tensors
            return g * 2

    count[0] = 0
    with saved_tensors_hooks(lambda t: t, unpack):
        out = Twice.apply(_leaf(2))
    out.sum().backward()
    assert count[0] == 2


def test_values_moved_out_of_the_graph_keep_first_and_second_derivatives():
    """Packing to a NumPy copy and unpacking to a fresh tensor: the unpacked tensors get
    their autograd identity back (a node's own output, a non-leaf input, a leaf), so
    gradcheck and gradgradcheck hold against finite differences."""

    def f(x, w):
        with saved_tensors_hooks(_to_numpy, _from_numpy):
            h = (x @ w).sigmoid()  # matmul saves the leaves, sigmoid its output
            return (h * h.tanh()).sum(dim=1)  # mul saves a non-leaf and tanh's output

    x, w = _leaf(3, 4), _leaf(4, 5)
    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))


def test_double_backward_accumulates_into_the_original_leaf():
    x = _leaf(6)
    with saved_tensors_hooks(_to_numpy, _from_numpy):
        y = (x * x * x).sum()
    (g,) = tgrad.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), 3 * xv * xv, rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), 6 * xv, rtol=1e-14)


def test_hooks_active_during_a_create_graph_backward_pack_its_saves():
    x = _leaf(4)
    y = x.sin().sum()
    calls = []
    with saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        (g,) = tgrad.autograd.grad(y, x, create_graph=True)  # g = cos(x) * 1: records cos
    assert calls
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -np.sin(x.detach().numpy()), rtol=1e-14)


def test_no_version_check_with_hooks_as_in_pytorch():
    x = _leaf(5)
    h = x * 1.0
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = (h * h).sum()
    with tgrad.no_grad():
        h.mul_(10)  # the hooks own the saved value: the backward sees the new one
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 10 * x.detach().numpy(), rtol=1e-14)
    h2 = x * 1.0
    y2 = (h2 * h2).sum()
    with tgrad.no_grad():
        h2.mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.backward()


def test_pack_hook_modifying_its_input_raises():
    def pack(t):
        t.add_(1)
        return t

    x = _leaf(3) * 1.0
    with pytest.raises(RuntimeError, match="A saved tensor pack hook is modifying its input "
                                           "in place"):
        with saved_tensors_hooks(pack, lambda t: t):
            x.sin()


def test_unpack_hook_must_return_a_tensor():
    x = _leaf(3)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x.sin()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a "
                                        "Tensor but got result of type int"):
        y.sum().backward()


def test_freed_saved_tensors_raise_pytorch_message():
    x = _leaf(3)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.sin()
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        y.sum().backward()


def test_pack_hook_errors_propagate_and_state_is_restored():
    def pack(t):
        raise ValueError("pack failed")

    with pytest.raises(ValueError, match="pack failed"):
        with saved_tensors_hooks(pack, lambda t: t):
            _leaf(2).sin()
    assert tgrad.is_grad_enabled()
    calls = []
    x = _leaf(2)
    with saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        pass
    x.sin()  # hooks are gone after the block
    assert calls == []


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        with pytest.raises(RuntimeError, match="^no hooks here$"):
            with save_on_cpu():
                pass
        with disable_saved_tensors_hooks("inner"):
            pass
        with pytest.raises(RuntimeError, match="^no hooks here$"):  # outer message back
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again
        with pytest.raises(RuntimeError, match="^hooks are active$"):
            with disable_saved_tensors_hooks("hooks are active"):
                pass

    @disable_saved_tensors_hooks("decorated")
    def uses_hooks():
        with saved_tensors_hooks(lambda t: t, lambda t: t):
            pass

    with pytest.raises(RuntimeError, match="^decorated$"):
        uses_hooks()


def test_hooks_are_thread_local():
    calls = []
    x = _leaf(3)

    def other_thread():
        x.sin()

    with saved_tensors_hooks(lambda t: calls.append(t) or t, lambda t: t):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert calls == []


def test_save_on_cpu_on_cpu_tensors():
    x = _leaf(2, 3)
    with save_on_cpu(pin_memory=True):
        y = (x.exp() * x).sum()
    y.backward()
    xv = x.detach().numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xv) * (xv + 1), rtol=1e-14)

    def f(a):
        with save_on_cpu():
            return (a * a).tanh()

    assert gradgradcheck(f, (_leaf(4),))


def test_get_gradient_edge_and_increment_version():
    x = _leaf(3)
    y = x * 2
    edge = get_gradient_edge(y)
    assert isinstance(edge, GradientEdge) and edge == (y.grad_fn, 0)
    leaf_edge = get_gradient_edge(x)
    assert leaf_edge.node.name() == "AccumulateGrad" and leaf_edge.output_nr == 0
    assert leaf_edge.node is y.grad_fn.next_functions[0][0]
    with pytest.raises(RuntimeError, match="does not require gradients"):
        get_gradient_edge(tgrad.randn(2))
    h = x * 1.0
    z = (h * h).sum()
    before = h._version
    increment_version(h)
    assert h._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_increment_version_takes_an_iterable_of_tensors():
    # PyTorch's signature: increment_version(tensor: Tensor | Iterable[Tensor])
    a, b = _leaf(2) * 1.0, _leaf(3) * 1.0
    va, vb = a._version, b._version
    increment_version((a, b))
    increment_version([a])
    assert (a._version, b._version) == (va + 2, vb + 1)


def test_node_post_hook_sees_one_grad_input_per_edge():
    # PyTorch's grad_inputs hold one gradient per next_functions edge: split's sizes and a
    # custom Function's number argument get no slot. d/dx sum(3 * x[:2]) = [3, 3, 0, 0].
    x = tgrad.tensor([1.0, 2.0, 3.0, 4.0], dtype=tgrad.float64, requires_grad=True)
    a, _ = x.split(2)
    seen = []

    def hook(gi, go):
        seen.append(len(gi))
        return (gi[0] * 2.0,)  # a replacement maps back to the tensor argument

    assert len(a.grad_fn.next_functions) == 1
    a.grad_fn.register_hook(hook)
    (a * 3.0).sum().backward()
    assert seen == [1]
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 0.0, 0.0])

    class Scale(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t, u, k):
            ctx.k = k
            return t * u * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, g * ctx.k, None

    t, u = _leaf(2), _leaf(2)
    out = Scale.apply(t, u, 5.0)
    out.grad_fn.register_hook(lambda gi, go: seen.append(len(gi)))
    out.sum().backward()
    assert seen[-1] == 2 and len(out.grad_fn.next_functions) == 2
    np.testing.assert_array_equal(t.grad.numpy(), [5.0, 5.0])


def test_binary_nodes_with_a_number_operand_as_pytorchs_overloads():
    # PyTorch names the node by overload and gives a number operand no edge; rsub's two
    # edges are (input, other) (they were listed swapped); values and gradients unchanged
    x = tgrad.tensor([0.5, 1.5, -2.5], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor([0.7, 2.0, 1.25], dtype=tgrad.float64, requires_grad=True)
    sp = tgrad.special
    for f, name, edges in (
            (lambda: tgrad.fmod(x, y), "FmodBackward1", [x, y]),
            (lambda: tgrad.fmod(x, 2.0), "FmodBackward0", [x]),
            (lambda: tgrad.fmod(x, tgrad.tensor(2.0, dtype=tgrad.float64)), "FmodBackward1",
             [x, None]),
            (lambda: tgrad.remainder(x, y), "RemainderBackward1", [x, y]),
            (lambda: x % 2.0, "RemainderBackward0", [x]),
            (lambda: tgrad.xlogy(x, y), "XlogyBackward0", [x, y]),
            (lambda: tgrad.xlogy(x, 2.0), "XlogyBackward2", [x]),
            (lambda: tgrad.xlogy(2.0, y), "XlogyBackward1", [y]),
            (lambda: sp.xlog1py(x, 2.0), "SpecialXlog1PyBackward2", [x]),
            (lambda: sp.xlog1py(2.0, y), "SpecialXlog1PyBackward1", [y]),
            (lambda: sp.zeta(3.0, y), "SpecialZetaBackward1", [y]),
            (lambda: tgrad.igamma(y, x.abs().detach().requires_grad_()), "IgammaBackward0",
             None),
            (lambda: tgrad.igammac(y.detach(), y), "IgammacBackward0", [None, y]),
            (lambda: tgrad.rsub(x, y), "RsubBackward0", [x, y]),
            (lambda: y.__rsub__(x), "RsubBackward0", [y, x])):
        node = f().grad_fn
        assert node.name() == name
        if edges is not None:
            assert [None if n is None else n.variable for n, _ in node.next_functions] == edges
    xv, yv = x.detach().numpy(), y.detach().numpy()
    r = tgrad.rsub(x, y, alpha=3.0)
    np.testing.assert_allclose(r.detach().numpy(), yv - 3.0 * xv, rtol=1e-15)
    r.backward(tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64))
    np.testing.assert_array_equal(x.grad.numpy(), [-3.0, -6.0, -9.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0, 3.0])
    m = tgrad.fmod(x, 2.0)  # d/dx fmod(x, c) = 1
    np.testing.assert_array_equal(m.detach().numpy(), np.fmod(xv, 2.0))
    assert tgrad.autograd.gradcheck(lambda a, b: tgrad.rsub(a, b) * a, (x, y))
    assert tgrad.autograd.gradgradcheck(lambda a, b: b.__rsub__(a) * b, (x, y))
    assert tgrad.autograd.gradgradcheck(lambda a: tgrad.xlogy(a, 2.0) + tgrad.xlogy(2.0, a),
                                        (y,))


def test_where_and_rsub_nodes_list_pytorchs_edges():
    # PyTorch: WhereBackward0 has edges for input and other only (a number keeps a (None, 0)
    # slot), none for the bool condition; RsubBackward1 (number - x) one edge, self's
    x = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    y = tgrad.tensor([4.0, 5.0, 6.0], dtype=tgrad.float64, requires_grad=True)
    c = tgrad.tensor([True, False, True])
    w = tgrad.where(c, x, y)
    (ex, _), (ey, _) = w.grad_fn.next_functions  # (only two edges)
    assert ex.variable is x and ey.variable is y
    assert [n for n, _ in tgrad.where(c, x, 0.0).grad_fn.next_functions][1] is None
    assert len(tgrad.where(c, 0.0, x).grad_fn.next_functions) == 2
    for r in (tgrad.rsub(x, 2.0), 2.0 - x):
        assert r.grad_fn.name() == "RsubBackward1" and len(r.grad_fn.next_functions) == 1
    # a post hook sees one gradient per edge and its replacement reaches input and other:
    # d/dx sum(where(c, x, y)) = c, d/dy = not c; doubled by the hook
    seen = []

    def hook(gi, go):
        seen.append(len(gi))
        return tuple(g * 2.0 for g in gi)

    w.grad_fn.register_hook(hook)
    w.sum().backward()
    assert seen == [2]
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 2.0, 0.0])


def test_node_hook_must_return_a_tuple():
    x = _leaf(3)
    y = x.exp()
    y.grad_fn.register_prehook(lambda go: go[0])  # a tensor, not a tuple: PyTorch's TypeError
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'Tensor'$"):
        y.sum().backward()
    y = x.exp()
    y.grad_fn.register_hook(lambda gi, go: list(gi))
    with pytest.raises(TypeError, match="^expected tuple, but hook returned 'list'$"):
        y.sum().backward()


def test_multi_grad_hook_all_mode_waits_for_the_gradients_this_backward_computes():
    from tgrad.autograd.graph import register_multi_grad_hook

    a, b = _leaf(2, 3), _leaf(2, 3)
    c, d = a * b, a * b
    calls = []
    handle = register_multi_grad_hook((a, b, c, d), calls.append)
    c.sum().backward(retain_graph=True)  # d is not in this graph: None, not waited for
    av, bv = a.detach().numpy(), b.detach().numpy()
    (ga, gb, gc, gd), = calls
    np.testing.assert_allclose(ga.numpy(), bv, rtol=1e-15)
    np.testing.assert_allclose(gb.numpy(), av, rtol=1e-15)
    np.testing.assert_allclose(gc.numpy(), np.ones((2, 3)))
    assert gd is None
    calls.clear()
    c.sum().backward(inputs=(a,), retain_graph=True)  # b's gradient is not asked for
    assert [g is not None for g in calls[0]] == [True, False, True, False]
    calls.clear()
    tgrad.autograd.grad((c + d).sum(), b, retain_graph=True)
    assert [g is not None for g in calls[0]] == [False, True, True, True]
    np.testing.assert_allclose(calls[0][1].numpy(), 2 * av, rtol=1e-15)
    calls.clear()
    handle.remove()
    c.sum().backward(retain_graph=True)
    assert calls == []
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        register_multi_grad_hook((a, tgrad.ones(2)), calls.append)
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        register_multi_grad_hook((a,), calls.append, mode="some")


def test_multi_grad_hook_any_mode_runs_once_per_backward():
    from tgrad.autograd.graph import register_multi_grad_hook

    a, b = _leaf(3), _leaf(3)
    y = a * 2.0 + b * 3.0
    seen = []
    register_multi_grad_hook((a, b, tgrad.ones(3)), seen.append, mode="any")
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert len(seen) == 2
    for g in seen:  # whichever came first: a's gradient (2) or b's (3)
        assert g.shape == (3,)
        assert np.allclose(g.numpy(), 2.0) or np.allclose(g.numpy(), 3.0)


# ------------------------------------------------------------ allow_mutation_on_saved_tensors
def test_allow_mutation_on_saved_tensors_pytorch_doc_example():
    # PyTorch's docstring example: b saved by pow, then b.sin_(); backward uses the old b.
    with allow_mutation_on_saved_tensors():
        a = tgrad.ones(2, 3, requires_grad=True, dtype=tgrad.float64)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()
        out.sum().backward()
        np.testing.assert_allclose(b.detach().numpy(), np.full((2, 3), np.sin(1.0)))
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 2.0))  # d(b^2)/da = 2a


def test_allow_mutation_clones_saved_outputs_and_writes_through_views():
    x = np.array([0.5, 1.0, 2.0])
    with allow_mutation_on_saved_tensors() as ctx:
        a = tgrad.tensor(x, requires_grad=True)
        b = a.clone()
        y = b.exp()               # exp saves its output y
        out = (y * b).sum()       # mul saves y and b
        y.mul_(3)
        b[1:].zero_()             # a write through a view of b: b is cloned too
        assert len(ctx.cloned) == 2
        out.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.exp(x) * (1 + x))  # d(e^a a)/da


def test_allow_mutation_second_derivative_after_mutation():
    x = np.array([0.3, -1.2])
    with allow_mutation_on_saved_tensors():
        a = tgrad.tensor(x, requires_grad=True)
        b = a * 1.0
        out = (b ** 3).sum()
        b.add_(5.0)
        (g,) = tgrad.autograd.grad(out, a, create_graph=True)
        (h,) = tgrad.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x ** 2)
    np.testing.assert_allclose(h.numpy(), 6 * x)


def test_allow_mutation_backward_outside_context_and_nesting_raise():
    with allow_mutation_on_saved_tensors():
        a = tgrad.tensor([0.5, 1.0], requires_grad=True)
        out = (a.clone() ** 2).sum()
    with pytest.raises(AssertionError, match="outside of the 'allow_mutation_on_saved_tensors'"):
        out.backward()
    with allow_mutation_on_saved_tensors():
        with pytest.raises(RuntimeError, match="cannot be nested"):
            with allow_mutation_on_saved_tensors():
                pass
        b = a.clone()
        out = (b ** 2).sum()
        b.add_(1.0)
        out.backward()  # the outer context still works after the refused nesting
    np.testing.assert_allclose(a.grad.numpy(), [1.0, 2.0])


def test_without_allow_mutation_the_version_check_still_raises():
    a = tgrad.tensor([0.5, 1.0], requires_grad=True)
    b = a.clone()
    out = (b ** 2).sum()
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_set_multithreading_enabled_is_a_recorded_thread_local_flag():
    from tgrad.autograd import is_multithreading_enabled, set_multithreading_enabled
    assert is_multithreading_enabled() is True
    with set_multithreading_enabled(False):
        assert is_multithreading_enabled() is False
        seen = []
        t = threading.Thread(target=lambda: seen.append(is_multithreading_enabled()))
        t.start()
        t.join()
        assert seen == [True]  # thread-local, as PyTorch's
        x = tgrad.tensor([1.0, 2.0], requires_grad=True)
        (x ** 2).sum().backward()  # backward unchanged: still on the calling thread
        np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert is_multithreading_enabled() is True
    set_multithreading_enabled(False)  # a plain call sets it
    assert is_multithreading_enabled() is False
    set_multithreading_enabled(True)

    @set_multithreading_enabled(False)
    def f():
        return is_multithreading_enabled()

    assert is_multithreading_enabled() is True  # decorating changes nothing now
    assert f() is False and is_multithreading_enabled() is True
    with pytest.raises(TypeError, match="must be bool, not int"):
        set_multithreading_enabled(1)


nnf = tgrad.nn.functional


def _edge_vars(node):
    return [None if n is None else getattr(n, "variable", type(n).__name__)
            for n, _ in node.next_functions]


def test_single_node_ops_have_pytorchs_node_names_and_edges():
    # PyTorch 2.13's nodes of these ops (one node each, not the composition's last part):
    # masked_fill MaskedFillBackward0 (a number value: edge self) / 1 (a 0-d tensor value:
    # edges self, value), flip/fliplr/flipud FlipBackward0, prelu PreluKernelBackward0
    # (edges self and the weight reshaped by a view), rrelu RreluWithNoiseBackward0 (training
    # or not), soft_margin_loss SoftMarginLossBackward0 (edge self only)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4))
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    v = tgrad.tensor(2.5, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor([0.1, 0.2, 0.3], dtype=tgrad.float64, requires_grad=True)
    mask = tgrad.tensor(rng.random((3, 4)) > 0.5)
    sign = tgrad.tensor(np.sign(rng.standard_normal((2, 3, 4))), dtype=tgrad.float64)
    for f, name, edges in (
            (lambda: x.masked_fill(mask, 1.0), "MaskedFillBackward0", [x]),
            (lambda: x.masked_fill(mask, v), "MaskedFillBackward1", [x, v]),
            (lambda: x.flip(0, 2), "FlipBackward0", [x]),
            (lambda: tgrad.flip(x, []), "FlipBackward0", [x]),
            (lambda: x.fliplr(), "FlipBackward0", [x]),
            (lambda: x.flipud(), "FlipBackward0", [x]),
            (lambda: nnf.prelu(x, w), "PreluKernelBackward0", [x, "ViewBackward0"]),
            (lambda: nnf.prelu(x, w[:1]), "PreluKernelBackward0", [x, "ViewBackward0"]),
            (lambda: nnf.rrelu(x), "RreluWithNoiseBackward0", [x]),
            (lambda: nnf.rrelu(x, training=True), "RreluWithNoiseBackward0", [x]),
            (lambda: nnf.soft_margin_loss(x, sign), "SoftMarginLossBackward0", [x]),
            (lambda: nnf.soft_margin_loss(x, sign, reduction="none"),
             "SoftMarginLossBackward0", [x])):
        node = f().grad_fn
        assert node.name() == name and type(node).__name__ == name
        assert _edge_vars(node) == edges
    h = x * 1.0  # in place on a non-leaf: the same node
    h.masked_fill_(mask, 0.0)
    assert h.grad_fn.name() == "MaskedFillBackward0"
    y = x.masked_fill(mask, v)
    assert y.grad_fn._saved_mask is mask
    assert x.flip(-1, 0).grad_fn._saved_dims == (2, 0)  # wrapped
    p = nnf.prelu(x, w)
    assert p.grad_fn._saved_self is x and p.grad_fn._saved_weight.shape == (3, 1)
    s = nnf.soft_margin_loss(x, sign, reduction="sum")
    assert s.grad_fn._saved_reduction == 2 and s.grad_fn._saved_self is x


def test_single_node_ops_values_and_gradients():
    # values against NumPy float64, gradients against hand formulas, and gradcheck /
    # gradgradcheck through the backward formulas
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 4))
    a[0, 0, 0] = 0.0  # prelu/rrelu at 0: the slope (PyTorch's)
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    v = tgrad.tensor(2.5, dtype=tgrad.float64, requires_grad=True)
    wa = np.array([0.1, 0.2, 0.3])
    w = tgrad.tensor(wa, dtype=tgrad.float64, requires_grad=True)
    ma = rng.random((1, 3, 4)) > 0.5
    mask = tgrad.tensor(ma)
    ga = rng.standard_normal((2, 3, 4))
    g = tgrad.tensor(ga, dtype=tgrad.float64)
    # masked_fill: dx = g where not mask; dv = sum of g where mask
    y = x.masked_fill(mask, v)
    np.testing.assert_array_equal(y.detach().numpy(), np.where(ma, 2.5, a))
    gx, gv = tgrad.autograd.grad(y, (x, v), g)
    np.testing.assert_array_equal(gx.numpy(), np.where(ma, 0.0, ga))
    np.testing.assert_allclose(gv.item(), np.where(ma, ga, 0.0).sum(), rtol=1e-14)
    # a mask that enlarges the input: the gradient sums back to the input's shape
    x1 = tgrad.tensor(a[0, 0], dtype=tgrad.float64, requires_grad=True)
    big = x1.masked_fill(tgrad.tensor(ma[0, :, None, :].repeat(2, 1)), 1.0)
    assert big.shape == (3, 2, 4)
    (g1,) = tgrad.autograd.grad(big.sum(), x1)
    np.testing.assert_array_equal(g1.numpy(), (~ma[0, :, None, :].repeat(2, 1)).sum((0, 1)))
    # flip: a reversal; dx = flip(g)
    f = x.flip(0, 2)
    np.testing.assert_array_equal(f.detach().numpy(), a[::-1, :, ::-1])
    (gx,) = tgrad.autograd.grad(f, x, g)
    np.testing.assert_array_equal(gx.numpy(), ga[::-1, :, ::-1])
    # prelu: dx = g or w g (x <= 0); dw_c = sum of g x over x <= 0 in channel c
    wb = wa[:, None]
    p = nnf.prelu(x, w)
    np.testing.assert_array_equal(p.detach().numpy(), np.where(a > 0, a, wb * a))
    gx, gw = tgrad.autograd.grad(p, (x, w), g)
    np.testing.assert_allclose(gx.numpy(), np.where(a > 0, ga, wb * ga), rtol=1e-15)
    np.testing.assert_allclose(gw.numpy(), np.where(a > 0, 0.0, ga * a).sum((0, 2)),
                               rtol=1e-13)
    # rrelu in evaluation: slope (lower + upper) / 2 where x <= 0
    r = nnf.rrelu(x, 0.1, 0.3)
    np.testing.assert_allclose(r.detach().numpy(), np.where(a > 0, a, 0.2 * a), rtol=1e-15)
    (gx,) = tgrad.autograd.grad(r, x, g)
    np.testing.assert_allclose(gx.numpy(), np.where(a > 0, ga, 0.2 * ga), rtol=1e-15)
    # soft_margin_loss: mean of log(1 + exp(-y x)); dx = -y sigmoid(-y x) g / numel
    ya = np.sign(rng.standard_normal((2, 3, 4)))
    t = tgrad.tensor(ya, dtype=tgrad.float64)
    s = nnf.soft_margin_loss(x, t)
    np.testing.assert_allclose(s.item(), np.log1p(np.exp(-ya * a)).mean(), rtol=1e-14)
    (gx,) = tgrad.autograd.grad(s, x)
    np.testing.assert_allclose(gx.numpy(), -ya / (1 + np.exp(ya * a)) / a.size, rtol=1e-13)
    small = tgrad.tensor(a[:, 1:, 1:3], dtype=tgrad.float64, requires_grad=True)  # (no kink at 0)
    ws = tgrad.tensor(wa[1:], dtype=tgrad.float64, requires_grad=True)
    vs = tgrad.tensor(0.5, dtype=tgrad.float64, requires_grad=True)
    ms = tgrad.tensor(ma[:, 1:, 1:3])
    ts = tgrad.tensor(ya[:, 1:, 1:3], dtype=tgrad.float64)
    for fn, args in ((lambda u, c: u.masked_fill(ms, c), (small, vs)),
                     (lambda u: u.flip(0, -1) * u, (small,)),
                     (nnf.prelu, (small, ws)),
                     (lambda u: nnf.rrelu(u) * u, (small,)),
                     (lambda u: nnf.soft_margin_loss(u, ts, reduction="none"), (small,)),
                     (lambda u: nnf.soft_margin_loss(u, ts), (small,)),
                     (lambda u: nnf.soft_margin_loss(u, ts, reduction="sum"), (small,))):
        assert gradcheck(fn, args) and gradgradcheck(fn, args)


def test_rrelu_training_noise_and_gradient_at_zero():
    # PyTorch's rrelu_with_noise: x <= 0 (0 included) takes the drawn slope, so the gradient
    # at 0 is the slope, in [lower, upper] (it was 1)
    x = tgrad.tensor([0.0, 0.0, -1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    y = nnf.rrelu(x, 0.25, 0.5, training=True)
    (g,) = tgrad.autograd.grad(y.sum(), x)
    gv, yv = g.numpy(), y.detach().numpy()
    assert np.all((gv[:3] >= 0.25) & (gv[:3] <= 0.5)) and gv[3] == 1.0
    np.testing.assert_array_equal(yv, [0.0, 0.0, -gv[2], 2.0])  # y = x noise


# PyTorch 2.13's node (out.grad_fn.name()) and edge count of indexing, linear-algebra and
# sorting ops that are one node there (observed with torch 2.13, float64 inputs requiring
# grad): the expectation is PyTorch's name, not the composition's last part
def _one_node_cases():
    rng = np.random.default_rng(3)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    a, b, c = rng.standard_normal((3, 4)), rng.standard_normal((4, 5)), rng.standard_normal((3, 5))
    w, bias = rng.standard_normal((5, 4)), rng.standard_normal(5)
    idx = tgrad.tensor([[0, 2, 1, 2], [1, 1, 0, 0]])
    return [
        ("addmm", lambda: tgrad.addmm(t(c), t(a), t(b)), "AddmmBackward0", 3),
        ("addmm_bcast", lambda: tgrad.addmm(t(bias), t(a), t(b), beta=0.5, alpha=2),
         "AddmmBackward0", 3),
        ("linear", lambda: nnf.linear(t(a), t(w), t(bias)), "AddmmBackward0", 3),
        ("linear_1d", lambda: nnf.linear(t(a[0]), t(w), t(bias)), "ViewBackward0", 1),
        ("linear_nobias", lambda: nnf.linear(t(a), t(w)), "MmBackward0", 2),
        ("mv", lambda: tgrad.mv(t(a), t(w[0])), "MvBackward0", 2),
        ("matmul_2d_1d", lambda: tgrad.matmul(t(a), t(w[0])), "MvBackward0", 2),
        ("bmm", lambda: tgrad.bmm(t(a[None]), t(b[None])), "BmmBackward0", 2),
        ("trace", lambda: tgrad.trace(t(a)), "TraceBackward0", 1),
        ("tril", lambda: tgrad.tril(t(a), 1), "TrilBackward0", 1),
        ("triu", lambda: tgrad.triu(t(a), -1), "TriuBackward0", 1),
        ("embedding", lambda: nnf.embedding(idx, t(w)), "EmbeddingBackward0", 1),
        ("embedding_pad", lambda: nnf.embedding(idx, t(w), padding_idx=1,
                                                scale_grad_by_freq=True),
         "EmbeddingBackward0", 1),
        ("gather", lambda: tgrad.gather(t(a), 0, idx), "GatherBackward0", 1),
        ("take_along_dim", lambda: tgrad.take_along_dim(t(a), idx, 0), "GatherBackward0", 1),
        ("index_select", lambda: tgrad.index_select(t(a), 1, tgrad.tensor([3, 0, 3])),
         "IndexSelectBackward0", 1),
        ("take", lambda: tgrad.take(t(a), tgrad.tensor([[1, -2], [5, 5]])), "TakeBackward0", 1),
        ("norm", lambda: tgrad.norm(t(a)), "LinalgVectorNormBackward0", 1),
        ("Tensor.norm", lambda: t(a).norm(1, 1), "LinalgVectorNormBackward0", 1),
        ("vector_norm", lambda: tgrad.linalg.vector_norm(t(a), 3, 0),
         "LinalgVectorNormBackward0", 1),
        ("linalg.norm", lambda: tgrad.linalg.norm(t(a)), "LinalgVectorNormBackward0", 1),
        ("pairwise_distance", lambda: nnf.pairwise_distance(t(a), t(a[::-1].copy())),
         "NormBackward1", 1),
        ("sort", lambda: tgrad.sort(t(a)).values, "SortBackward0", 1),
        ("sort_stable", lambda: tgrad.sort(t(a), 0, stable=True).values, "SortBackward1", 1),
        ("msort", lambda: tgrad.msort(t(a)), "SortBackward0", 1),
        ("topk", lambda: tgrad.topk(t(a), 2).values, "TopkBackward0", 1),
        ("kthvalue", lambda: tgrad.kthvalue(t(a), 2).values, "KthvalueBackward0", 1),
        ("median_dim", lambda: tgrad.median(t(a), 1).values, "MedianBackward1", 1),
        ("nanmedian_dim", lambda: tgrad.nanmedian(t(a), 1).values, "NanmedianBackward1", 1),
        ("mode", lambda: tgrad.mode(t(a), 1).values, "ModeBackward0", 1),
        ("cummax", lambda: tgrad.cummax(t(a), 1).values, "CummaxBackward0", 1),
        ("cummin", lambda: tgrad.cummin(t(a), 0).values, "CumminBackward0", 1),
        ("scatter", lambda: tgrad.scatter(t(a), 0, idx[:, :3], t(c)), "ScatterBackward0", 2),
        ("scatter_value", lambda: tgrad.scatter(t(a), 1, idx[:, :3], 1.5),
         "ScatterBackward1", 1),
        ("scatter_add", lambda: tgrad.scatter_add(t(a), 0, idx[:, :3], t(c)),
         "ScatterAddBackward0", 2),
        ("index_add", lambda: tgrad.index_add(t(a), 1, tgrad.tensor([3, 0, 3, 1, 1]), t(c),
                                              alpha=2), "IndexAddBackward0", 2),
        ("addmv", lambda: tgrad.addmv(t(c[:, 0]), t(a), t(w[0])), "AddmvBackward0", 3),
        ("addmv_bcast", lambda: tgrad.addmv(t(c[:1, 0]), t(a), t(w[0]), beta=2, alpha=3),
         "AddmvBackward0", 3),
        ("addr", lambda: tgrad.addr(t(a), t(c[:, 0]), t(w[0])), "AddrBackward0", 3),
        ("addbmm", lambda: tgrad.addbmm(t(c), t(a[None]), t(b[None])), "AddbmmBackward0", 3),
        ("baddbmm", lambda: tgrad.baddbmm(t(c[None]), t(a[None]), t(b[None])),
         "BaddbmmBackward0", 3),
        ("baddbmm_bcast", lambda: tgrad.baddbmm(t(c), t(a[None]), t(b[None])),
         "BaddbmmBackward0", 3),
        ("index_copy", lambda: tgrad.index_copy(t(a), 1, tgrad.tensor([0, 2]), t(c[:, :2])),
         "IndexCopyBackward0", 2),
        ("index_fill", lambda: tgrad.index_fill(t(a), 1, tgrad.tensor([0, 2]), 1.5),
         "IndexFillBackward0", 1),
        ("index_fill_tensor", lambda: tgrad.index_fill(t(a), 1, tgrad.tensor([0, 2]),
                                                       t(np.array(1.5))),
         "IndexFillBackward1", 2),
        ("masked_select", lambda: tgrad.masked_select(t(a), tgrad.tensor(a > 0)),
         "MaskedSelectBackward0", 1),
        ("masked_select_bcast", lambda: tgrad.masked_select(t(a[0]), tgrad.tensor(a > 0)),
         "MaskedSelectBackward0", 1),
        ("masked_scatter", lambda: tgrad.masked_scatter(t(a), tgrad.tensor(a > 0), t(c)),
         "MaskedScatterBackward0", 2),
        ("put", lambda: tgrad.put(t(a), tgrad.tensor([0, -1]), t(c[0, :2])), "PutBackward0", 2),
        ("put_accumulate", lambda: tgrad.put(t(a), tgrad.tensor([0, 0]), t(c[0, :2]), True),
         "PutBackward0", 2),
    ]


@pytest.mark.parametrize("op,f,name,edges", _one_node_cases(), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_indexing_linalg_sorting_node_names_are_pytorchs(op, f, name, edges):
    node = f().grad_fn
    assert node.name() == name and type(node).__name__ == name
    assert len(node.next_functions) == edges


def test_addmm_and_linear_one_node_values_and_gradients():
    # AddmmBackward0: edges (input, mat1, mat2); d input = sum_to(beta g), d mat1 =
    # alpha g mat2^T, d mat2 = alpha mat1^T g; linear(x, w, b) = addmm(b, x, w.t())
    rng = np.random.default_rng(4)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    i, a, b = rng.standard_normal((3, 5)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    g = rng.standard_normal((3, 5))
    for inp in (i, i[0], i[:1], np.array(0.7)):
        for beta, alpha in ((1, 1), (0.5, -2), (0, 1.5)):
            ti, ta, tb = t(inp), t(a), t(b)
            y = tgrad.addmm(ti, ta, tb, beta=beta, alpha=alpha)
            assert y.grad_fn.name() == "AddmmBackward0"
            assert _edge_vars(y.grad_fn) == [ti, ta, tb]
            np.testing.assert_allclose(y.detach().numpy(), beta * inp + alpha * a @ b,
                                       rtol=1e-13)
            gi, ga, gb = tgrad.autograd.grad(y, (ti, ta, tb), tgrad.tensor(g))
            np.testing.assert_allclose(gi.numpy(), (beta * g).reshape((-1,) + inp.shape)
                                       .sum(0) if inp.ndim == 1 else
                                       (beta * g).sum() if inp.ndim == 0 else
                                       (beta * g).sum(0, keepdims=True) if inp.shape[0] == 1
                                       else beta * g, rtol=1e-13)
            np.testing.assert_allclose(ga.numpy(), alpha * g @ b.T, rtol=1e-13)
            np.testing.assert_allclose(gb.numpy(), alpha * a.T @ g, rtol=1e-13)
            f = lambda p, q, r, be=beta, al=alpha: tgrad.addmm(p, q, r, beta=be,  # noqa: E731
                                                               alpha=al)
            assert gradcheck(f, (t(inp), t(a), t(b)))
            assert gradgradcheck(f, (t(inp), t(a), t(b)))
    nan = i.copy()
    nan[0, 0] = np.nan  # beta = 0 ignores input's values (PyTorch's), keeps its edge
    ti = t(nan)
    y = tgrad.addmm(ti, t(a), t(b), beta=0)
    np.testing.assert_allclose(y.detach().numpy(), a @ b, rtol=1e-13)
    y.sum().backward()
    np.testing.assert_array_equal(ti.grad.numpy(), np.zeros_like(i))
    w, bias = rng.standard_normal((5, 4)), rng.standard_normal(5)
    for x in (rng.standard_normal(4), a, rng.standard_normal((2, 3, 4))):
        tx, tw, tbias = t(x), t(w), t(bias)
        y = nnf.linear(tx, tw, tbias)
        np.testing.assert_allclose(y.detach().numpy(), x @ w.T + bias, rtol=1e-13)
        assert gradcheck(nnf.linear, (t(x), t(w), t(bias)))
        assert gradgradcheck(nnf.linear, (t(x), t(w), t(bias)))
    y = nnf.linear(t(a), t(w), t(bias))  # PyTorch: edges (bias, input, w.t())
    assert [n.name() for n, _ in y.grad_fn.next_functions] == ["AccumulateGrad",
                                                               "AccumulateGrad", "TBackward0"]
    assert y.grad_fn._saved_alpha == 1 and y.grad_fn._saved_beta == 1
    assert y.grad_fn._saved_mat1_sym_sizes == (3, 4)
    v = nnf.linear(t(a[0]), t(w), t(bias))  # 1-D: viewed as (1, in), as PyTorch
    assert v.shape == (5,) and v.grad_fn.next_functions[0][0].name() == "AddmmBackward0"


def test_scatter_index_add_one_node_values_and_gradients():
    # ScatterBackward0/1, ScatterAddBackward0 (edges input, src), IndexAddBackward0 (input,
    # source): d input = g (scatter: 0 where written), d src = g gathered at index (zero
    # past index's shape), d source = alpha g.index_select(dim, index); NumPy float64 values
    rng = np.random.default_rng(6)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    n = rng.standard_normal
    xa, sa, g = n((3, 4)), n((3, 5)), n((3, 4))
    ia = np.array([[0, 2, 1, 2], [1, 0, 0, 0]])  # unique per column (scatter's rows)
    rows, cols = ia, np.broadcast_to(np.arange(4), ia.shape)
    idx = tgrad.tensor(ia)
    x, s = t(xa), t(sa)
    y = tgrad.scatter_add(x, 0, idx, s)
    want = xa.copy()
    np.add.at(want, (rows, cols), sa[:2, :4])
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-15)
    assert _edge_vars(y.grad_fn) == [x, s] and y.grad_fn._saved_dim == 0
    gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
    want_gs = np.zeros_like(sa)
    want_gs[:2, :4] = g[rows, cols]
    np.testing.assert_array_equal(gx.numpy(), g)
    np.testing.assert_array_equal(gs.numpy(), want_gs)
    y = tgrad.scatter(x, 0, idx, s)
    want = xa.copy()
    want[rows, cols] = sa[:2, :4]
    np.testing.assert_array_equal(y.detach().numpy(), want)
    gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
    want_gx = g.copy()
    want_gx[rows, cols] = 0
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    np.testing.assert_array_equal(gs.numpy(), want_gs)
    y = tgrad.scatter(x, 0, idx, 2.5)
    assert y.grad_fn.name() == "ScatterBackward1" and _edge_vars(y.grad_fn) == [x]
    want[rows, cols] = 2.5
    np.testing.assert_array_equal(y.detach().numpy(), want)
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    i1 = np.array([3, 0, 3, 1, 1])
    y = tgrad.index_add(x, 1, tgrad.tensor(i1), s, alpha=-1.5)
    want = xa.copy()
    np.add.at(want, (slice(None), i1), -1.5 * sa)
    np.testing.assert_allclose(y.detach().numpy(), want, rtol=1e-15)
    assert _edge_vars(y.grad_fn) == [x, s] and y.grad_fn._saved_alpha == -1.5
    gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
    np.testing.assert_array_equal(gx.numpy(), g)
    np.testing.assert_allclose(gs.numpy(), -1.5 * g[:, i1], rtol=1e-15)
    for f in (lambda p, q: tgrad.scatter_add(p, 0, idx, q),
              lambda p, q: tgrad.scatter(p, 0, idx, q),
              lambda p, q: tgrad.scatter(p, 1, idx[:, :3], 2.5) * q[:, :4],
              lambda p, q: tgrad.index_add(p, 1, tgrad.tensor(i1), q, alpha=-1.5)):
        assert gradcheck(f, (t(xa), t(sa)))
        assert gradgradcheck(f, (t(xa), t(sa)))
    for op in (tgrad.scatter, tgrad.scatter_add):  # float16: float32 values rounded once
        h = op(tgrad.tensor(xa, dtype=tgrad.float16), 0, idx, tgrad.tensor(sa, dtype=tgrad.float16))
        ref = xa.astype(np.float16).astype(np.float32)
        src = sa[:2, :4].astype(np.float16).astype(np.float32)
        if op is tgrad.scatter:
            ref[rows, cols] = src
        else:
            np.add.at(ref, (rows, cols), src)
        np.testing.assert_array_equal(h.numpy(), ref.astype(np.float16))


def test_addmv_addr_addbmm_baddbmm_one_node_values_and_gradients():
    # one node each (edges input, a, b): d input = sum_to(beta g), d a / d b = alpha times
    # the product's gradients; NumPy float64 values; beta == 0 ignores input's NaN (addmv,
    # addbmm, addr: alpha == 0 the product's too), baddbmm with alpha == 0 keeps it (PyTorch's)
    rng = np.random.default_rng(7)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    n = rng.standard_normal
    b1, b2 = n((2, 3, 4)), n((2, 4, 5))
    cases = [
        (tgrad.addmv, "AddmvBackward0", n(3), b1[0], b2[0, :, 0], lambda p, q: p @ q),
        (tgrad.addr, "AddrBackward0", n((3, 4)), b1[0, :, 0], b2[0, :, 0], np.outer),
        (tgrad.addbmm, "AddbmmBackward0", n((1, 5)), b1, b2, lambda p, q: (p @ q).sum(0)),
        (tgrad.baddbmm, "BaddbmmBackward0", n((3, 5)), b1, b2, lambda p, q: p @ q),
    ]
    for op, name, ia, pa, qa, prod in cases:
        for beta, alpha in ((1, 1), (0.5, -2)):
            ti, tp, tq = t(ia), t(pa), t(qa)
            y = op(ti, tp, tq, beta=beta, alpha=alpha)
            assert y.grad_fn.name() == name and _edge_vars(y.grad_fn) == [ti, tp, tq]
            assert y.grad_fn._saved_beta == beta and y.grad_fn._saved_alpha == alpha
            np.testing.assert_allclose(y.detach().numpy(), beta * ia + alpha * prod(pa, qa),
                                       rtol=1e-13)
            g = n(y.shape)
            gi, gp, gq = tgrad.autograd.grad(y, (ti, tp, tq), tgrad.tensor(g))
            # finite differences of the NumPy float64 formula, in each operand
            for got, arg in ((gi, 0), (gp, 1), (gq, 2)):
                want = np.zeros_like((ia, pa, qa)[arg])
                for k in np.ndindex(want.shape):
                    ops_ = [ia.copy(), pa.copy(), qa.copy()]
                    ops_[arg][k] += 1e-6
                    hi = (g * (beta * ops_[0] + alpha * prod(ops_[1], ops_[2]))).sum()
                    ops_[arg][k] -= 2e-6
                    lo = (g * (beta * ops_[0] + alpha * prod(ops_[1], ops_[2]))).sum()
                    want[k] = (hi - lo) / 2e-6
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-8)
            f = lambda p, q, r, op=op, be=beta, al=alpha: op(p, q, r, beta=be, alpha=al)  # noqa: E731
            assert gradcheck(f, (t(ia), t(pa), t(qa)))
            assert gradgradcheck(f, (t(ia), t(pa), t(qa)))
        nan = ia.copy()
        nan.flat[0] = np.nan
        ti = t(nan)
        y = op(ti, t(pa), t(qa), beta=0)
        np.testing.assert_allclose(y.detach().numpy(), np.broadcast_to(prod(pa, qa), y.shape),
                                   rtol=1e-13)
        y.sum().backward()
        np.testing.assert_array_equal(ti.grad.numpy(), np.zeros_like(ia))
        inf = pa.copy()
        inf.flat[0] = np.inf
        y = op(t(ia), t(inf), t(qa), alpha=0).detach().numpy()
        assert np.isnan(y).any() == (op is tgrad.baddbmm)


def test_embedding_gather_index_select_one_node_values_and_gradients():
    rng = np.random.default_rng(5)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    wa = rng.standard_normal((5, 3))
    ia = np.array([[0, 2, 1, 2], [4, 2, 0, 0]])
    idx = tgrad.tensor(ia)
    g = rng.standard_normal((2, 4, 3))
    counts = np.bincount(ia.ravel(), minlength=5)
    for pad in (None, 2, -1):
        for scale in (False, True):
            w = t(wa)
            y = nnf.embedding(idx, w, padding_idx=pad, scale_grad_by_freq=scale)
            assert y.grad_fn.name() == "EmbeddingBackward0" and _edge_vars(y.grad_fn) == [w]
            assert y.grad_fn._saved_padding_idx == (-1 if pad is None else pad % 5)
            np.testing.assert_array_equal(y.detach().numpy(), wa[ia])
            y.backward(tgrad.tensor(g))
            ref = np.zeros_like(wa)  # dweight[i] += c g[p] at each position p of index i
            for pos in np.ndindex(ia.shape):
                k = ia[pos]
                if pad is None or k != pad % 5:
                    ref[k] += g[pos] / (counts[k] if scale else 1)
            np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-14)
            f = lambda w, p=pad, s=scale: nnf.embedding(idx, w, padding_idx=p,  # noqa: E731
                                                        scale_grad_by_freq=s)
            # (padding / frequency scaling are not the Jacobian: gradcheck the plain one)
            assert (pad is not None or scale or gradcheck(f, (t(wa),)))
            # with scale_grad_by_freq the double backward in the output gradient is the
            # plain gather (PyTorch's embedding_dense_double_backward: the scale belongs to
            # the gradient's definition), so gradgradcheck's finite differences in that
            # direction see the scale, and PyTorch's check fails there too; the weight
            # direction is checked against central differences in
            # test_nn_more.test_embedding_scale_grad_by_freq
            assert scale or gradgradcheck(f, (t(wa),))
    row = nnf.embedding(tgrad.tensor(3), t(wa))  # a 0-d index: one row, a copy
    assert row.shape == (3,) and row._base is None and row.grad_fn.name() == "EmbeddingBackward0"
    np.testing.assert_array_equal(row.detach().numpy(), wa[3])
    a = rng.standard_normal((3, 4))
    gi = tgrad.tensor([[0, 2, 1, 2], [1, 1, 0, 0]])
    y = tgrad.gather(t(a), 0, gi)
    np.testing.assert_array_equal(y.detach().numpy(), np.take_along_axis(a, gi.numpy(), 0))
    assert y.grad_fn._saved_dim == 0 and y.grad_fn._saved_index is gi
    assert gradcheck(lambda x: tgrad.gather(x, 0, gi), (t(a),))
    assert gradgradcheck(lambda x: tgrad.gather(x, 0, gi), (t(a),))
    ii = tgrad.tensor([3, 0, 3])
    y = tgrad.index_select(t(a), 1, ii)
    np.testing.assert_array_equal(y.detach().numpy(), a[:, [3, 0, 3]])
    x = t(a)
    (gx,) = tgrad.autograd.grad(tgrad.index_select(x, 1, ii).sum(), x)
    np.testing.assert_array_equal(gx.numpy(), np.tile([1.0, 0.0, 0.0, 2.0], (3, 1)))
    assert gradgradcheck(lambda x: tgrad.index_select(x, 1, ii), (t(a),))
    ti = tgrad.tensor([[0, 11], [3, -12]])  # take: x.flatten()[index]; negatives from the end
    x = t(a)
    y = tgrad.take(x, ti)
    np.testing.assert_array_equal(y.detach().numpy(), np.take(a, ti.numpy()))
    gt = rng.standard_normal((2, 2))
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(gt))
    ref = np.zeros(12)
    np.add.at(ref, ti.numpy() % 12, gt)
    np.testing.assert_array_equal(gx.numpy(), ref.reshape(3, 4))
    assert y.grad_fn._saved_index is ti
    assert gradgradcheck(lambda x: tgrad.take(x, ti), (t(a),))


def test_norm_and_sorting_one_node_values_and_gradients():
    rng = np.random.default_rng(6)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    a = rng.permutation(24).reshape(2, 3, 4) / 7.0 - 1.0  # distinct values
    y = tgrad.linalg.vector_norm(t(a), 3, (0, 2), keepdim=True)
    np.testing.assert_allclose(y.detach().numpy(),
                               (np.abs(a) ** 3).sum((0, 2), keepdims=True) ** (1 / 3), rtol=1e-13)
    assert y.grad_fn._saved_ord == 3 and y.grad_fn._saved_dim == (0, 2)
    assert y.grad_fn._saved_keepdim is True
    d = nnf.pairwise_distance(t(a[0]), t(a[1]))
    np.testing.assert_allclose(d.detach().numpy(),
                               np.linalg.norm(a[0] - a[1] + 1e-6, axis=-1), rtol=1e-13)
    assert d.grad_fn._saved_p == 2
    assert gradcheck(lambda u, v: nnf.pairwise_distance(u, v), (t(a[0]), t(a[1])))
    srt = lambda a, k: np.argsort(a, k, kind="stable")  # noqa: E731
    cases = [
        (lambda x: tgrad.sort(x, 1), np.sort(a, 1), srt(a, 1)),
        (lambda x: tgrad.sort(x, -1, descending=True), -np.sort(-a, -1), srt(-a, -1)),
        (lambda x: tgrad.sort(x, 0, stable=True), np.sort(a, 0), srt(a, 0)),
        (lambda x: tgrad.topk(x, 2, 1), -np.sort(-a, 1)[:, :2], srt(-a, 1)[:, :2]),
        (lambda x: tgrad.kthvalue(x, 2, 2), np.sort(a, 2)[..., 1], srt(a, 2)[..., 1]),
        (lambda x: tgrad.kthvalue(x, 2, 2, True), np.sort(a, 2)[..., 1:2],
         srt(a, 2)[..., 1:2]),
        (lambda x: tgrad.median(x, 1), np.sort(a, 1)[:, 1], srt(a, 1)[:, 1]),
        (lambda x: tgrad.nanmedian(x, 1), np.sort(a, 1)[:, 1], srt(a, 1)[:, 1]),
        (lambda x: tgrad.cummax(x, 2), np.maximum.accumulate(a, 2), None),
        (lambda x: tgrad.cummin(x, 0), np.minimum.accumulate(a, 0), None),
    ]
    for f, values, indices in cases:
        x = t(a)
        r = f(x)
        np.testing.assert_array_equal(r.values.detach().numpy(), values)
        if indices is not None:
            np.testing.assert_array_equal(r.indices.numpy(), indices)
        assert r.values.grad_fn._saved_indices is r.indices
        # d x = g scattered back to the positions the values came from
        g = rng.standard_normal(r.values.shape)
        (gx,) = tgrad.autograd.grad(r.values, x, tgrad.tensor(g))
        ix, gk = r.indices.numpy(), g
        if r.values.ndim < a.ndim:  # (kthvalue / median without keepdim)
            dim = r.values.grad_fn._saved_dim
            ix, gk = np.expand_dims(ix, dim), np.expand_dims(g, dim)
        else:
            dim = r.values.grad_fn._saved_dim
        ref = np.zeros_like(a)
        np.add.at(ref, tuple(ix if k == dim else np.arange(s).reshape(
            [-1 if j == k else 1 for j in range(a.ndim)]) for k, s in enumerate(ix.shape)), gk)
        np.testing.assert_allclose(gx.numpy(), ref, rtol=1e-14)
        assert gradcheck(lambda x, f=f: f(x).values, (t(a),))
        assert gradgradcheck(lambda x, f=f: f(x).values, (t(a),))
    m = tgrad.mode(t(np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 5.0]])), 1)
    assert m.values.tolist() == [2.0, 4.0] and m.indices.tolist() == [2, 1]
    for f in (tgrad.sort, lambda z: tgrad.topk(z, 1), lambda z: tgrad.kthvalue(z, 1)):
        z = t(np.array(1.5))  # a 0-d input: a 0-d value of the op's node
        v = f(z).values
        assert v.shape == () and v.grad_fn.next_functions[0][0].variable is z
        v.backward()
        assert z.grad.item() == 1.0


def test_mv_bmm_trace_tril_triu_one_node_values_and_gradients():
    # mv: da = g v^T, dv = a^T g; bmm: matmul's rule per batch; trace: dx = g I;
    # tril / triu: dx = g's own triangle
    rng = np.random.default_rng(7)
    t = lambda a: tgrad.tensor(a, requires_grad=True)  # noqa: E731
    a, v, g = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    ta, tv = t(a), t(v)
    y = tgrad.mv(ta, tv)
    np.testing.assert_allclose(y.detach().numpy(), a @ v, rtol=1e-14)
    assert y.grad_fn._saved_self is ta and y.grad_fn._saved_vec is tv
    ga, gv = tgrad.autograd.grad(y, (ta, tv), tgrad.tensor(g))
    np.testing.assert_allclose(ga.numpy(), np.outer(g, v), rtol=1e-14)
    np.testing.assert_allclose(gv.numpy(), a.T @ g, rtol=1e-14)
    ac = a + 1j * rng.standard_normal((3, 4))
    vc = v + 1j * rng.standard_normal(4)
    for x, u in ((a, v), (ac, vc)):
        assert gradcheck(tgrad.mv, (t(x), t(u))) and gradgradcheck(tgrad.mv, (t(x), t(u)))
    b1, b2 = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(tgrad.bmm(t(b1), t(b2)).detach().numpy(), b1 @ b2, rtol=1e-14)
    assert gradcheck(tgrad.bmm, (t(b1), t(b2))) and gradgradcheck(tgrad.bmm, (t(b1), t(b2)))
    for shape in ((3, 4), (4, 3), (3, 3)):
        m = rng.standard_normal(shape)
        x = t(m)
        y = tgrad.trace(x)
        np.testing.assert_allclose(y.item(), np.trace(m), rtol=1e-14)
        y.backward(tgrad.tensor(2.5))
        np.testing.assert_array_equal(x.grad.numpy(), 2.5 * np.eye(*shape))
        assert gradcheck(tgrad.trace, (t(m),)) and gradgradcheck(tgrad.trace, (t(m),))
    c = rng.standard_normal((2, 3, 4))
    for k in (-1, 0, 2):
        for op, ref in ((tgrad.tril, np.tril), (tgrad.triu, np.triu)):
            x = t(c)
            y = op(x, k)
            np.testing.assert_array_equal(y.detach().numpy(), ref(c, k))
            assert y.grad_fn._saved_diagonal == k
            gc = rng.standard_normal(c.shape)
            (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(gc))
            np.testing.assert_array_equal(gx.numpy(), ref(gc, k))
            assert gradgradcheck(lambda x, op=op, k=k: op(x, k), (t(c),))


def test_scatter_and_scaled_sum_nodes_forward_ad_tangents_are_finite_differences():
    # the one-node scatters, index_copy / index_fill / masked_select and addmv / addr /
    # addbmm / baddbmm take forward-mode AD as the vjp of their (linear in g) backward:
    # tangents against central differences in float64
    from tgrad import func
    rng = np.random.default_rng(8)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64)  # noqa: E731
    n = rng.standard_normal
    idx = tgrad.tensor([[0, 2, 1, 2], [1, 0, 0, 0]])
    cases = [
        (lambda p, q: tgrad.scatter(p, 0, idx, q), ((3, 4), (3, 5))),
        (lambda p, q: tgrad.scatter(p, 0, idx, 2.5) * q[:, :4], ((3, 4), (3, 5))),
        (lambda p, q: tgrad.scatter_add(p, 0, idx, q), ((3, 4), (3, 5))),
        (lambda p, q: tgrad.index_add(p, 1, tgrad.tensor([3, 0, 3]), q, alpha=2),
         ((3, 4), (3, 3))),
        (lambda p, q, r: tgrad.addmv(p, q, r, beta=0.5, alpha=-2), ((3,), (3, 4), (4,))),
        (lambda p, q, r: tgrad.addr(p, q, r, beta=0.5, alpha=-2), ((3, 4), (3,), (4,))),
        (lambda p, q, r: tgrad.addbmm(p, q, r, alpha=3), ((3, 5), (2, 3, 4), (2, 4, 5))),
        (lambda p, q, r: tgrad.baddbmm(p, q, r, beta=2), ((3, 5), (2, 3, 4), (2, 4, 5))),
        (lambda p, q: tgrad.index_copy(p, 1, tgrad.tensor([3, 1]), q), ((3, 4), (3, 2))),
        (lambda p, q: tgrad.index_fill(p, 1, tgrad.tensor([3, 1, 3]), q), ((3, 4), ())),
        (lambda p, q: tgrad.masked_select(p, idx[:, :3] > 0) * q, ((2, 3), ())),
        (lambda p, q: tgrad.masked_scatter(p, idx[:, :3] > 0, q), ((2, 3), (2, 2))),
        (lambda p, q: tgrad.put(p, tgrad.tensor([5, -1, 0]), q, True), ((2, 3), (3,))),
    ]
    for f, shapes in cases:
        xs = [n(s) for s in shapes]
        ts = [n(s) for s in shapes]
        _, tangent = func.jvp(f, tuple(t(a) for a in xs), tuple(t(a) for a in ts))
        eps = 1e-6
        hi = f(*[t(a + eps * d) for a, d in zip(xs, ts)]).numpy()
        lo = f(*[t(a - eps * d) for a, d in zip(xs, ts)]).numpy()
        np.testing.assert_allclose(tangent.numpy(), (hi - lo) / (2 * eps), rtol=1e-6,
                                   atol=1e-8)


def test_index_copy_index_fill_masked_select_one_node_values_and_gradients():
    # IndexCopyBackward0 (edges input, source): d input = g zeroed at the copied slices,
    # d source = g at them; IndexFillBackward0/1 (input; input, value): d value = the sum of
    # g over the filled positions (each once); MaskedSelectBackward0 (edge input, not its
    # expansion): d input = g written where the mask holds, summed to input's shape
    rng = np.random.default_rng(9)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    n = rng.standard_normal
    xa, sa, g = n((3, 4)), n((3, 2)), n((3, 4))
    i = np.array([3, 1])
    x, s = t(xa), t(sa)
    y = tgrad.index_copy(x, 1, tgrad.tensor(i), s)
    want = xa.copy()
    want[:, i] = sa
    np.testing.assert_array_equal(y.detach().numpy(), want)
    assert _edge_vars(y.grad_fn) == [x, s] and y.grad_fn._saved_dim == 1
    gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
    want_gx = g.copy()
    want_gx[:, i] = 0
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    np.testing.assert_array_equal(gs.numpy(), g[:, i])
    v = t(np.array(2.5))
    y = tgrad.index_fill(x, 1, tgrad.tensor([3, 1, 3]), v)
    want[:, i] = 2.5
    np.testing.assert_array_equal(y.detach().numpy(), want)
    assert _edge_vars(y.grad_fn) == [x, v]
    gx, gv = tgrad.autograd.grad(y, (x, v), tgrad.tensor(g))
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    np.testing.assert_allclose(gv.numpy(), g[:, i].sum(), rtol=1e-15)
    y = tgrad.index_fill(x, 1, tgrad.tensor(i), 2.5)
    np.testing.assert_array_equal(y.detach().numpy(), want)
    (gx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
    np.testing.assert_array_equal(gx.numpy(), want_gx)
    mask = xa > 0
    for inp, m in ((xa, mask), (xa[0], mask), (xa[:, :1], mask)):
        ti = t(inp)
        y = tgrad.masked_select(ti, tgrad.tensor(m))
        full = np.broadcast_to(inp, m.shape)
        np.testing.assert_array_equal(y.detach().numpy(), full[m])
        assert _edge_vars(y.grad_fn) == [ti]
        gy = rng.standard_normal(y.shape)
        (gi,) = tgrad.autograd.grad(y, ti, tgrad.tensor(gy))
        dense = np.zeros(m.shape)
        dense[m] = gy
        want_gi = dense.sum(0) if inp.ndim == 1 else dense.sum(1, keepdims=True) \
            if inp.shape[1] == 1 else dense
        np.testing.assert_allclose(gi.numpy(), want_gi, rtol=1e-15)
    for f, args in ((lambda p, q: tgrad.index_copy(p, 1, tgrad.tensor(i), q), (xa, sa)),
                    (lambda p, q: tgrad.index_fill(p, 1, tgrad.tensor(i), q),
                     (xa, np.array(0.3))),
                    (lambda p: tgrad.index_fill(p, 0, tgrad.tensor([2, 0]), -1.0), (xa,)),
                    (lambda p: tgrad.masked_select(p, tgrad.tensor(mask)), (xa[0],))):
        assert gradcheck(f, tuple(t(a) for a in args))
        assert gradgradcheck(f, tuple(t(a) for a in args))


def test_masked_scatter_and_put_one_node_values_and_gradients():
    # MaskedScatterBackward0 (edges input, source): d input = g zeroed where the mask holds
    # (summed to a broadcast input's shape), d source = g there in order, then zeros;
    # PutBackward0 (edges input, source): d input = g (accumulate) or g zeroed at the flat
    # positions, d source = g.flatten()[index]
    rng = np.random.default_rng(10)
    t = lambda a: tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)  # noqa: E731
    n = rng.standard_normal
    xa, sa, g = n((3, 4)), n((2, 7)), n((3, 4))
    mask = xa > 0
    k = int(mask.sum())
    for inp in (xa, xa[:1]):
        x, s = t(inp), t(sa)
        y = tgrad.masked_scatter(x, tgrad.tensor(mask), s)
        want = np.broadcast_to(inp, mask.shape).copy()
        want[mask] = sa.reshape(-1)[:k]
        np.testing.assert_array_equal(y.detach().numpy(), want)
        assert _edge_vars(y.grad_fn) == [x, s]
        gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
        np.testing.assert_allclose(gx.numpy(), np.where(mask, 0, g).sum(0, keepdims=True)
                                   if inp.shape[0] == 1 else np.where(mask, 0, g), rtol=1e-15)
        want_gs = np.zeros(sa.size)
        want_gs[:k] = g[mask]
        np.testing.assert_array_equal(gs.numpy(), want_gs.reshape(sa.shape))
    i = np.array([[0, -1], [5, 7]])
    flat = (i % xa.size).reshape(-1)
    for acc in (False, True):
        x, s = t(xa), t(sa[:, :2])
        y = tgrad.put(x, tgrad.tensor(i), s, acc)
        want = xa.copy().reshape(-1)
        if acc:
            np.add.at(want, flat, sa[:, :2].reshape(-1))
        else:
            want[flat] = sa[:, :2].reshape(-1)
        np.testing.assert_allclose(y.detach().numpy(), want.reshape(xa.shape), rtol=1e-15)
        assert _edge_vars(y.grad_fn) == [x, s]
        gx, gs = tgrad.autograd.grad(y, (x, s), tgrad.tensor(g))
        want_gx = g.copy().reshape(-1)
        if not acc:
            want_gx[flat] = 0
        np.testing.assert_array_equal(gx.numpy(), want_gx.reshape(g.shape))
        np.testing.assert_array_equal(gs.numpy(), g.reshape(-1)[flat].reshape(2, 2))
        # a new tensor, not a view of the op's temporary: in place on it is ordinary
        # (it raised "A view was created in no_grad mode"), the gradient through it too
        y = tgrad.put(x, tgrad.tensor(i), s, acc)
        assert not y._is_view()
        (gx2,) = tgrad.autograd.grad(y.mul_(2), x, tgrad.tensor(g))
        np.testing.assert_array_equal(gx2.numpy(), 2 * gx.numpy())
    for f, args in ((lambda p, q: tgrad.masked_scatter(p, tgrad.tensor(mask), q), (xa, sa)),
                    (lambda p, q: tgrad.masked_scatter(p, tgrad.tensor(mask), q), (xa[0], sa)),
                    (lambda p, q: tgrad.put(p.mT, tgrad.tensor(i), q), (xa, sa[:, :2])),
                    (lambda p, q: tgrad.put(p, tgrad.tensor(i), q, True), (xa, sa[:, :2]))):
        assert gradcheck(f, tuple(t(a) for a in args))
        assert gradgradcheck(f, tuple(t(a) for a in args))


@pytest.mark.parametrize("how", ["data", "detach", "no_grad"])
def test_allow_mutation_on_saved_tensors_sees_writes_through_data(how):
    # .data has a version counter (Storage) of its own but the same memory: a write
    # through it must clone the saved value first too (tgrad's backward read the written
    # value). Reference: d sin(a) / da = cos(a) at the original a (NumPy).
    a = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
    with allow_mutation_on_saved_tensors():
        b = a.sin()
        if how == "data":
            a.data.mul_(2)
        elif how == "detach":
            a.detach().mul_(2)
        else:
            with tgrad.no_grad():
                a.mul_(2)
        b.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.cos([1.0, 2.0]), rtol=1e-15)
    np.testing.assert_array_equal(a.detach().numpy(), [2.0, 4.0])
