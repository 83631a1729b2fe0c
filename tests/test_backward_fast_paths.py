"""The host-overhead fast paths of a plain backward give what the general paths give.

Rules of mul, div, exp, relu, tanh and sigmoid run their op's primitive on the backend
arrays when nothing observes the op (no create_graph, profiler, autocast or forward-AD
level); the engine builds a single root's buffer directly; matmul decides its case from the
arrays' ndim. Values are checked against NumPy float64 formulas, against the recorded
(create_graph) path bit for bit, and the observed cases (profiler, mixed dtypes, number
operands, a root that is not output 0) still take the general paths.
"""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad.autograd import profiler

RNG = np.random.default_rng(7)
X = RNG.uniform(-2.0, 2.0, 16)
Y = RNG.uniform(0.5, 2.0, 16)  # a divisor away from 0
G = RNG.standard_normal(16)

# op, its function of leaves, and the NumPy float64 gradients (g, a, b) -> per leaf
CASES = {
    "mul": (lambda a, b: a * b, lambda g, a, b: (g * b, g * a)),
    "div": (lambda a, b: a / b, lambda g, a, b: (g / b, -(g / b) * a / b)),
    "exp": (lambda a, b: a.exp(), lambda g, a, b: (g * np.exp(a),)),
    "relu": (lambda a, b: a.relu(), lambda g, a, b: (np.where(a > 0, g, 0.0),)),
    "tanh": (lambda a, b: a.tanh(), lambda g, a, b: (g * (1 - np.tanh(a) ** 2),)),
    "sigmoid": (lambda a, b: a.sigmoid(),
                lambda g, a, b: (g * (s := 1 / (1 + np.exp(-a))) * (1 - s),)),
}


def _grads(op: str, create_graph: bool, dtype=np.float64) -> list:
    fn, _ = CASES[op]
    a = tgrad.tensor(X.astype(dtype), requires_grad=True)
    b = tgrad.tensor(Y.astype(dtype), requires_grad=True)
    y = fn(a, b)
    y.backward(tgrad.tensor(G.astype(dtype)), create_graph=create_graph)
    return [t.grad for t in (a, b) if t.grad is not None]


@pytest.mark.parametrize("op", sorted(CASES))
def test_plain_backward_matches_numpy_float64(op):
    got = _grads(op, create_graph=False)
    want = CASES[op][1](G, X, Y)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype is tgrad.float64 and g.grad_fn is None
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("op", sorted(CASES))
def test_plain_backward_bitwise_equals_recorded_path(op):
    # float32: the recorded rules (create_graph, through Function.apply) and the direct
    # primitives round the same way, so the bits agree
    plain = _grads(op, create_graph=False, dtype=np.float32)
    recorded = _grads(op, create_graph=True, dtype=np.float32)
    for p, r in zip(plain, recorded):
        assert p.dtype is r.dtype is tgrad.float32
        assert np.array_equal(p.numpy(), r.detach().numpy())


def test_profiled_backward_still_records_the_rules_ops():
    a = tgrad.tensor(X, requires_grad=True)
    b = tgrad.tensor(Y, requires_grad=True)
    with profiler.profile() as prof:
        (a * b).backward(tgrad.tensor(G))
        a.relu().backward(tgrad.tensor(G))
    (node,) = [e for e in prof.function_events if e.name == "MulBackward0"]
    assert [c.name for c in node.cpu_children] == ["mul", "mul"]
    (node,) = [e for e in prof.function_events if e.name == "ReluBackward0"]
    assert [c.name for c in node.cpu_children] == ["relu_backward"]


def test_mixed_dtypes_and_numbers_take_the_general_rules():
    a = tgrad.tensor(X.astype(np.float32), requires_grad=True)
    b = tgrad.tensor(Y, requires_grad=True)  # float64: the product promotes
    (a * b).backward(tgrad.tensor(G))
    assert a.grad.dtype is tgrad.float32 and b.grad.dtype is tgrad.float64
    np.testing.assert_allclose(a.grad.numpy(), (G * Y).astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), G * X.astype(np.float32), rtol=1e-12)
    c = tgrad.tensor(X, requires_grad=True)
    (c * 0.5 / 4.0).backward(tgrad.tensor(G))
    np.testing.assert_allclose(c.grad.numpy(), G * 0.5 / 4.0, rtol=1e-15)


def test_backward_under_no_grad_rules_called_by_hand():
    # a node applied by hand under no_grad takes the direct path; with a gradient that
    # does not broadcast it gives the op's own error, not NumPy's ValueError
    a = tgrad.tensor(X, requires_grad=True)
    b = tgrad.tensor(Y, requires_grad=True)
    y = a * b
    with tgrad.no_grad():
        ga, gb = y.grad_fn(tgrad.tensor(G))
        np.testing.assert_allclose(ga.numpy(), G * Y, rtol=1e-15)
        np.testing.assert_allclose(gb.numpy(), G * X, rtol=1e-15)
        with pytest.raises(RuntimeError, match="mul: The size of tensor a"):
            y.grad_fn(tgrad.ones(3))


@pytest.mark.parametrize("index", [0, 1, 2])
def test_single_root_of_a_multi_output_node(index):
    # one root edge whose node has several outputs (output_nr 0 too): the general buffer
    x = tgrad.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    parts = x.unbind(0)
    parts[index].backward(tgrad.tensor([2.0, 3.0]))
    want = np.zeros((3, 2))
    want[index] = [2.0, 3.0]
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_several_roots_still_summed():
    x = tgrad.tensor(X, requires_grad=True)
    tgrad.autograd.backward([x * 2.0, x * x], [tgrad.tensor(G), tgrad.tensor(G)])
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * G + 2.0 * X * G, rtol=1e-14)


@pytest.mark.parametrize("sa, sb", [((3, 4), (4, 2)), ((4,), (4,)), ((4,), (4, 2)),
                                    ((3, 4), (4,)), ((2, 3, 4), (4, 2))])
def test_matmul_cases_forward_and_backward(sa, sb):
    an, bn = RNG.standard_normal(sa), RNG.standard_normal(sb)
    a = tgrad.tensor(an, requires_grad=True)
    b = tgrad.tensor(bn, requires_grad=True)
    y = a @ b
    np.testing.assert_allclose(y.detach().numpy(), an @ bn, rtol=1e-12)
    g = RNG.standard_normal(y.shape)
    y.backward(tgrad.tensor(g))
    # d(a @ b) with the 1-D operands read as a row (a) / column (b) vector
    a2 = an.reshape(1, -1) if an.ndim == 1 else an
    b2 = bn.reshape(-1, 1) if bn.ndim == 1 else bn
    g2 = g.reshape(a2.shape[:-1] + (b2.shape[-1],))
    ga = (g2 @ np.swapaxes(b2, -1, -2)).reshape(an.shape) if an.ndim == 1 else \
        g2 @ np.swapaxes(b2, -1, -2)
    gb = (np.swapaxes(a2, -1, -2) @ g2)
    gb = gb.sum(0) if an.ndim == 3 else gb  # b broadcast over a's batch: summed
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.grad.numpy(), gb.reshape(bn.shape), rtol=1e-12, atol=1e-14)


def test_matmul_errors_unchanged():
    with pytest.raises(RuntimeError, match=r"need to be at least 1D, but they are 0D and 1D"):
        tgrad.tensor(1.0) @ tgrad.ones(3)
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(2x3 and 4x1\)"):
        tgrad.ones(2, 3) @ tgrad.ones(4, 1)
    with pytest.raises(RuntimeError, match="same dtype"):
        tgrad.ones(2, 3) @ tgrad.ones(3, 1, dtype=tgrad.float64)


# ------------------------------------------------------------------ recording fast paths
# Function.apply / _wire_graph take a one-output branch for a new float non-view output,
# create a leaf's AccumulateGrad inline, and saved_tensors returns a plain saved tensor
# without SavedTensor.unpack when its checks pass. The cases below are the ones those
# guards must send to the general code.


def test_leaf_accumulator_is_shared_and_weak():
    a = tgrad.tensor(X, requires_grad=True)
    b = tgrad.tensor(Y, requires_grad=True)
    y, z = a * b, a * 2.0
    acc = y.grad_fn.next_functions[0][0]
    assert acc is z.grad_fn.next_functions[0][0]  # one accumulator per leaf
    assert acc.name() == "AccumulateGrad" and acc.variable is a
    assert y.grad_fn.next_functions[1][0].variable is b
    assert acc._seq < y.grad_fn._seq  # numbered before the node that points at it
    del y, z, acc
    y = a * b  # the old accumulator died with its graph: a new one
    assert y.grad_fn.next_functions[0][0].variable is a


@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4)])
def test_one_output_branch_metadata(shape):
    a = tgrad.tensor(RNG.standard_normal(shape), requires_grad=True)
    x = tgrad.tensor(RNG.standard_normal(shape))
    y = a * x
    node = y.grad_fn
    assert node.name() == "MulBackward0" and y.requires_grad and not y.is_leaf
    assert y._output_nr == 0 and y._base is None
    assert node._out_meta == (((*shape,), tgrad.float64, a.device),)
    assert node._in_meta == (((*shape,), tgrad.float64, a.device), None)
    assert node.next_functions[1] == (None, 0)
    y.backward(tgrad.ones_like(y))
    np.testing.assert_array_equal(a.grad.numpy(), x.numpy())


def test_returned_input_and_view_outputs_take_the_general_path():
    class Identity(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    a = tgrad.tensor(X, requires_grad=True)
    y = Identity.apply(a)
    assert y is not a and y._base is a  # a fresh alias, a view of the input (PyTorch's)
    y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full(16, 2.0))
    v = (a * 1.0)[2:5]  # a view output: its grad_fn_version is set by the general loop
    assert v._base is not None and v.grad_fn.name() == "SliceBackward0"


def test_saved_tensor_checks_still_raise():
    a = tgrad.tensor(X, requires_grad=True)
    b = tgrad.tensor(Y)
    y = a * b
    b.add_(1.0)  # b is saved for a's gradient: the version check fires
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    c = a * 1.0
    d = c * a  # c (a non-leaf input) is saved, then detached in place
    c.detach_()
    with pytest.raises(RuntimeError, match="detached in-place"):
        d.sum().backward()


def test_saved_output_is_an_alias_with_the_node():
    a = tgrad.tensor(X, requires_grad=True)
    y = a.exp()  # saves its output
    (saved,) = [t for t in y.grad_fn.saved_tensors if t is not None]
    assert saved is not y and saved.grad_fn is y.grad_fn
    np.testing.assert_array_equal(saved.numpy(force=True), y.numpy(force=True))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_backend_binary_dtypes(dtype):
    from tgrad.backends import numpy as backend
    x = (X * 3).astype(dtype)
    y = (Y * 3).astype(dtype)
    out = backend.binary("mul", x, y)
    ref = (x.astype(np.float64) * y.astype(np.float64)).astype(dtype)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, ref)
    with np.errstate(all="raise"):  # quiet inside, the caller's state kept
        big = np.full(3, 3e38, np.float32)
        assert np.isinf(backend.binary("mul", big, big)).all()
        assert np.geterr()["over"] == "raise"
