"""The backward engine: dependency counting, execution once per node, deep graphs without
recursion, graph release, thread safety and re-entrancy."""

import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import tgrad
from tgrad.autograd import Function


def leaf(arr):
    return tgrad.tensor(arr, dtype=tgrad.float64, requires_grad=True)


class Counted(Function):
    """Identity that counts how often its backward runs."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        Counted.calls += 1
        return g


# ---------------------------------------------------------------------- deep graphs

def test_chain_of_100k_ops_backpropagates_and_frees_without_recursion():
    # In a subprocess, so that a C-stack overflow in deallocation shows as a failure.
    code = textwrap.dedent("""
        import gc, sys, weakref
        import numpy as np
        import tgrad
        gc.disable()  # everything below must be freed by reference counting alone
        x = tgrad.tensor([1.0, 2.0], dtype=tgrad.float64, requires_grad=True)
        y = x
        for _ in range(100_000):
            y = y * 1.0001   # MulBackward0 saves its input: saved tensors chain the graph
        sys.setrecursionlimit(200)  # the engine must not recurse per node
        y.sum().backward(retain_graph=True)
        sys.setrecursionlimit(1000)
        expected = np.prod(np.full(100_000, 1.0001))
        np.testing.assert_allclose(x.grad.numpy(), [expected, expected], rtol=1e-9)
        ref = weakref.ref(y.grad_fn)
        del y  # frees 100k nodes and their saved tensors by reference counting
        assert ref() is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"


# ------------------------------------------------------------------ graph release

def test_graph_and_saved_tensors_released_after_backward():
    x = leaf([0.5, 1.5])
    h = x.exp()
    y = h * x                       # MulBackward0 saves h and x
    h_ref = weakref.ref(h)
    node_ref = weakref.ref(y.grad_fn)
    exp_ref = weakref.ref(h.grad_fn)
    del h
    assert h_ref() is not None      # kept alive only by the saved tensors
    y.sum().backward()
    assert h_ref() is None          # saved tensors freed by backward
    gc.disable()
    try:
        del y
        assert node_ref() is None and exp_ref() is None  # no reference cycles
    finally:
        gc.enable()


def test_retain_graph_keeps_saved_tensors():
    x = leaf([0.5, 1.5])
    h = x.exp()
    y = h * x
    h_ref = weakref.ref(h)
    del h
    y.sum().backward(retain_graph=True)
    assert h_ref() is not None
    y.sum().backward()
    assert h_ref() is None
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([0.5, 1.5]) * (1 + np.array([0.5,
                                                                                      1.5])))


def test_grad_also_frees_the_graph():
    x = leaf([0.5])
    y = x.exp() * x
    tgrad.autograd.grad(y.sum(), x)
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        tgrad.autograd.grad(y.sum(), x)


# ------------------------------------------------------------ scheduling semantics

def test_each_node_runs_once_after_all_gradients_arrive():
    Counted.calls = 0
    x = leaf([1.0, 2.0])
    c = Counted.apply(x)
    # c feeds four consumers along paths of different lengths
    y = c * 2 + (c * 3).exp().log() + c.tanh() + c
    seen = []
    c.register_hook(lambda g: seen.append(g.numpy().copy()))
    y.sum().backward()
    assert Counted.calls == 1
    assert len(seen) == 1  # the hook sees the summed gradient once
    expected = 2 + 3 + (1 - np.tanh([1.0, 2.0]) ** 2) + 1  # log(exp(3c)) = 3c
    np.testing.assert_allclose(seen[0], expected, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_leaf_accumulators_run_first_in_the_order_they_became_ready():
    # PyTorch: AccumulateGrad has the highest sequence number, so a leaf's gradient is
    # accumulated (and its hooks run) as soon as it is ready, siblings in edge order
    log = []
    x, y, z = (tgrad.tensor([1.0], requires_grad=True) for _ in range(3))
    for name, t in zip("xyz", (x, y, z)):
        t.register_hook(lambda g, name=name: log.append(name))
    tgrad.cat([x, y, z]).sum().backward()
    assert "".join(log) == "xyz"
    log.clear()
    (x * y).sum().backward()
    assert "".join(log) == "xy"
    log.clear()
    (z * y + x).sum().backward()  # AddBackward's edges: z * y's node, then x; z before y
    assert "".join(log) == "xzy"
    a, w = tgrad.tensor([1.0, 2.0], requires_grad=True), tgrad.tensor([3.0], requires_grad=True)
    first = []
    tgrad.autograd.graph.register_multi_grad_hook(
        (a, w), lambda g: first.append(tuple(g.shape)), mode="any")
    (a * w).sum().backward()
    assert first == [(2,)]  # a's gradient arrives first
    # an accumulator that is ready runs before a node created later
    order = []
    p = tgrad.tensor([1.0], requires_grad=True)
    p.register_post_accumulate_grad_hook(lambda t: order.append("p"))
    u = p.exp()  # u's node: created after p's accumulator
    v = (u * 2).sin()
    v.grad_fn.register_prehook(lambda g: order.append("sin"))
    w2 = tgrad.tensor([1.0], requires_grad=True)
    w2.register_post_accumulate_grad_hook(lambda t: order.append("w2"))
    (v * w2).sum().backward()  # MulBackward: w2's accumulator ready before sin's node runs
    assert order == ["w2", "sin", "p"]


def test_grad_runs_only_the_needed_part_of_the_graph():
    Counted.calls = 0
    a, b = leaf([1.0]), leaf([2.0])
    side = Counted.apply(b)        # only on the path to b
    y = (a * 3 + side).sum()
    (ga,) = tgrad.autograd.grad(y, a)
    assert ga.tolist() == [3.0]
    assert Counted.calls == 0
    assert b.grad is None and a.grad is None


def test_backward_from_several_roots_sharing_nodes():
    x = leaf([1.0, -2.0])
    h = x * x
    tgrad.autograd.backward([h.sum(), (h * 3).sum()])
    np.testing.assert_allclose(x.grad.numpy(), 4 * 2 * np.array([1.0, -2.0]))


def test_backward_on_a_leaf():
    x = leaf([1.0, 2.0])
    x.backward(tgrad.tensor([3.0, 4.0], dtype=tgrad.float64))
    assert x.grad.tolist() == [3.0, 4.0]


def test_grad_mode_during_backward():
    modes = []
    x = leaf([1.0])
    y = x * 2
    y.register_hook(lambda g: modes.append(tgrad.is_grad_enabled()))
    y.sum().backward(retain_graph=True)
    y.sum().backward(create_graph=True)
    assert modes == [False, True]
    assert tgrad.is_grad_enabled()


def test_error_in_backward_restores_state():
    class Fails(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            raise ValueError("backward failed")

    x = leaf([1.0])
    with pytest.raises(ValueError, match="backward failed"):
        Fails.apply(x).sum().backward()
    assert tgrad.is_grad_enabled()
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_reentrant_backward_inside_a_function():
    class InnerGrad(Function):
        """y = x^2 computed in forward; backward differentiates an inner graph."""

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with tgrad.enable_grad():
                xi = x.detach().requires_grad_()
                (gx,) = tgrad.autograd.grad((xi * xi).sum(), xi)
            return g * gx

    x = leaf([1.5, -2.0])
    InnerGrad.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, -4.0])


# ------------------------------------------------------------------------- threads

def test_threads_backward_on_graphs_sharing_a_leaf_accumulate_exactly():
    w = leaf(np.zeros(64))
    n_threads, n_iter = 4, 50
    errors = []
    barrier = threading.Barrier(n_threads)

    def work(k):
        try:
            barrier.wait()
            for _ in range(n_iter):
                ((w + 1.0) * float(k + 1)).sum().backward()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    expected = n_iter * sum(range(1, n_threads + 1))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(64, float(expected)))


def test_threads_differentiate_one_retained_graph_concurrently():
    x = leaf(np.linspace(-1, 1, 16))
    y = (x.tanh() * x).sum()
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                (g,) = tgrad.autograd.grad(y, x, retain_graph=True)
                results.append(g.numpy().copy())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80
    xn = np.linspace(-1, 1, 16)
    expected = np.tanh(xn) + xn * (1 - np.tanh(xn) ** 2)
    for r in results:
        np.testing.assert_allclose(r, expected, rtol=1e-12)
