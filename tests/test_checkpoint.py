"""tgrad.utils.checkpoint: values and gradients equal to the plain run (and to finite
differences), dropout masks reproduced in the recomputation, parameters inside the
function get gradients, checkpoint_sequential; the non-reentrant variant's PyTorch
behaviour (checked with torch 2.13): captured tensors under autograd.grad, any output
structure, double backward, one recomputation per backward with early stop, the
determinism check; the use_reentrant=None warning, and the reentrant variant's limits."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.autograd.node import FREED_MESSAGE
from tgrad.utils.checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
    set_checkpoint_early_stop,
)

RNG = np.random.default_rng(3)


def _leaf(*shape):
    return tgrad.tensor(RNG.standard_normal(shape), requires_grad=True)


def _model():
    tgrad.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 8),
                         nn.GELU(), nn.Linear(8, 2)).double()


def _run(model, x, wrap):
    tgrad.manual_seed(1)  # the same dropout draws in every run
    model.zero_grad()
    x.grad = None
    y = wrap(model, x)
    y.sum().backward()
    return [y.detach().numpy()] + [p.grad.numpy() for p in model.parameters()] + [
        x.grad.numpy()]


@pytest.mark.parametrize("wrap", [
    lambda m, x: checkpoint(m, x, use_reentrant=False),
    lambda m, x: checkpoint(m, x, use_reentrant=True),
    lambda m, x: checkpoint_sequential(m, 3, x, use_reentrant=True),
    lambda m, x: checkpoint_sequential(m, 1, x, use_reentrant=True),
    lambda m, x: checkpoint_sequential(m, 3, x, use_reentrant=False),
    lambda m, x: checkpoint_sequential(m, 2, x, use_reentrant=False, preserve_rng_state=True),
])
def test_checkpoint_matches_the_plain_run(wrap):
    model = _model()
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((5, 4)), requires_grad=True)
    ref = _run(model, x, lambda m, t: m(t))
    got = _run(model, x, wrap)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("reentrant", [True, False])
def test_gradcheck_through_checkpoint_with_kwargs_and_several_outputs(reentrant):
    def fn(a, b, scale=1.0):
        return (a * b).sin() * scale, a.exp() + b

    a = tgrad.tensor(np.array([0.3, -0.7]), requires_grad=True)
    b = tgrad.tensor(np.array([1.1, 0.4]), requires_grad=True)
    assert gradcheck(lambda p, q: checkpoint(fn, p, q, scale=2.0, use_reentrant=reentrant),
                     (a, b))


@pytest.mark.parametrize("reentrant", [True, False])
def test_parameters_get_gradients_when_no_input_requires_grad(reentrant):
    model = _model().eval()
    x = tgrad.tensor(np.ones((2, 4)))
    ref = [p.grad.numpy().copy() for p in _backward(model, lambda: model(x))]
    got = _backward(model, lambda: checkpoint(model, x, use_reentrant=reentrant))
    for a, b in zip(ref, got):
        assert np.abs(a).sum() > 0
        np.testing.assert_allclose(b.grad.numpy(), a, rtol=1e-13, atol=1e-15)


def _backward(model, run):
    model.zero_grad()
    run().sum().backward()
    return list(model.parameters())


def test_double_backward_through_reentrant_checkpoint_raises():
    a = tgrad.tensor(np.array([0.5]), requires_grad=True)
    y = checkpoint(lambda t: t * t * t, a, use_reentrant=True)
    with pytest.raises(RuntimeError, match="create_graph=True\\) is not supported"):
        tgrad.autograd.grad(y.sum(), a, create_graph=True)


def test_rng_state_round_trip():
    tgrad.manual_seed(5)
    state = tgrad.get_rng_state()
    first = tgrad.rand(4).tolist()
    tgrad.set_rng_state(state)
    assert tgrad.rand(4).tolist() == first


def test_autograd_grad_writes_no_grad_and_dict_outputs_raise():
    w = tgrad.tensor(np.array([0.5, -1.0]), requires_grad=True)
    x = tgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = checkpoint(lambda a: (a * w).exp(), x, use_reentrant=False)
    (gx,) = tgrad.autograd.grad(y.sum(), x)
    np.testing.assert_allclose(gx.numpy(), np.array([0.5, -1.0]) * np.exp([0.5, -2.0]))
    assert w.grad is None and x.grad is None
    with pytest.raises(TypeError, match="must return a Tensor or a tuple"):
        checkpoint(lambda a: {"k": a * w}, x, use_reentrant=True)


# ---------------------------------------------------------------- use_reentrant=False


def _np(t):
    return t.detach().numpy()


def test_captured_tensors_get_gradients_from_backward_and_autograd_grad():
    x, w, b = _leaf(3), _leaf(3), _leaf(3)

    def fn(t):  # w and b are captured, not passed
        return (t * w).sin() + b * t

    xv, wv, bv = _np(x), _np(w), _np(b)
    gx = np.cos(xv * wv) * wv + bv  # d/dx sum(sin(x w) + b x), float64 by hand
    gw = np.cos(xv * wv) * xv
    gb = xv
    gw_, gb_ = tgrad.autograd.grad(checkpoint(fn, x, use_reentrant=False).sum(), [w, b])
    np.testing.assert_allclose(_np(gw_), gw, rtol=1e-13)
    np.testing.assert_allclose(_np(gb_), gb, rtol=1e-13)
    assert x.grad is None and w.grad is None and b.grad is None
    checkpoint(fn, x, use_reentrant=False).sum().backward()
    for t, g in ((x, gx), (w, gw), (b, gb)):
        np.testing.assert_allclose(_np(t.grad), g, rtol=1e-13)


def test_module_parameters_under_autograd_grad_match_the_plain_run():
    model = _model().eval()
    x = _leaf(5, 4)
    params = list(model.parameters())
    ref = tgrad.autograd.grad(model(x).tanh().sum(), params + [x])
    got = tgrad.autograd.grad(checkpoint(model, x, use_reentrant=False).tanh().sum(),
                              params + [x])
    for a, b in zip(ref, got):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-13, atol=1e-15)


def test_any_output_structure():
    x, w = _leaf(4), _leaf(4)

    def fn(t):
        return {"a": (t * w).exp(), "rest": [t.sin(), ((t * t).cos(), "label"), 7]}

    def loss(out):
        return (out["a"].sum() + 2 * out["rest"][0].sum() + 3 * out["rest"][1][0].sum())

    out = checkpoint(fn, x, use_reentrant=False)
    assert out["rest"][1][1] == "label" and out["rest"][2] == 7
    loss(out).backward()
    xv, wv = _np(x), _np(w)
    np.testing.assert_allclose(_np(x.grad), wv * np.exp(xv * wv) + 2 * np.cos(xv)
                               - 3 * np.sin(xv * xv) * 2 * xv, rtol=1e-13)
    np.testing.assert_allclose(_np(w.grad), xv * np.exp(xv * wv), rtol=1e-13)
    assert gradcheck(lambda t: loss(checkpoint(fn, t, use_reentrant=False)), (x,))


def test_double_backward():
    x, w = _leaf(3), _leaf(3)

    def fn(a, b):
        return (a * b).sin() * a

    assert gradgradcheck(lambda a, b: checkpoint(fn, a, b, use_reentrant=False), (x, w))
    (g,) = tgrad.autograd.grad(checkpoint(fn, x, w, use_reentrant=False).sum(), x,
                               create_graph=True)
    (gg,) = tgrad.autograd.grad(g.sum(), x)
    xv, wv = _np(x), _np(w)
    # d/dx [sin(xw) + x w cos(xw)] = 2 w cos(xw) - x w^2 sin(xw)
    np.testing.assert_allclose(_np(gg), 2 * wv * np.cos(xv * wv)
                               - xv * wv * wv * np.sin(xv * wv), rtol=1e-12)


def test_inputs_without_grad_kwargs_and_a_returned_input():
    x, c = _leaf(3), tgrad.tensor(RNG.standard_normal(3))

    def fn(a, k, *, scale, shift=None):
        return (a * k).sin() * scale + shift, k

    y, k = checkpoint(fn, x, c, use_reentrant=False, scale=2.0, shift=c)
    assert k is c and not k.requires_grad  # returned unchanged, as torch does
    y.sum().backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.cos(_np(x) * _np(c)) * _np(c), rtol=1e-13)
    assert gradcheck(lambda a: checkpoint(fn, a, c, use_reentrant=False, scale=2.0,
                                          shift=c)[0], (x,))
    x.grad = None
    out = checkpoint(lambda t: t, x, use_reentrant=False)
    assert out is x
    (out * 3).sum().backward()
    np.testing.assert_allclose(_np(x.grad), np.full(3, 3.0))


def test_one_recomputation_per_backward_with_early_stop():
    x = _leaf(4)
    log = []

    def fn(t):
        log.append("start")
        y = t.sin().exp().tanh() * t  # several saved tensors
        log.append("end")  # after the last save: early stop does not get here
        return y * 2

    y = checkpoint(fn, x, use_reentrant=False)
    assert log == ["start", "end"]
    y.sum().backward(retain_graph=True)
    assert log == ["start", "end", "start"]
    first = _np(x.grad).copy()
    y.sum().backward()  # a second backward recomputes again
    assert log == ["start", "end", "start", "start"]
    np.testing.assert_allclose(_np(x.grad), 2 * first, rtol=1e-13)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()
    assert FREED_MESSAGE.startswith("Trying to backward through the graph a second time")

    log.clear()
    checkpoint(fn, x, use_reentrant=False, early_stop=False).sum().backward()
    assert log == ["start", "end", "start", "end"]
    log.clear()
    with set_checkpoint_early_stop(False):
        y = checkpoint(fn, x, use_reentrant=False)
    y.sum().backward()
    assert log == ["start", "end", "start", "end"]


def test_under_no_grad_the_function_just_runs():
    x = _leaf(3)
    calls = []
    with tgrad.no_grad():
        y = checkpoint(lambda t: calls.append(1) or t.exp(), x, use_reentrant=False)
    assert calls == [1] and not y.requires_grad and y.grad_fn is None
    np.testing.assert_allclose(_np(y), np.exp(_np(x)), rtol=1e-15)


def test_recomputation_with_different_metadata_or_count_raises():
    x = _leaf(4)
    state = {"n": 0}

    def shape_changes(t):
        state["n"] += 1
        return (t if state["n"] == 1 else t[:2]).sin().sum()

    y = checkpoint(shape_changes, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors "
                       "have different metadata than during the forward pass") as info:
        y.backward()
    assert "tensor at position 0" in str(info.value) and "(4,)" in str(info.value)
    assert isinstance(info.value, RuntimeError)

    state["n"] = 0

    def count_changes(t):
        state["n"] += 1
        return (t.sin() * t.cos()).sum() if state["n"] == 1 else (t * 2).sum()

    y = checkpoint(count_changes, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved "
                       "during the original forward and recomputation"):
        y.backward()
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(count_changes, x, use_reentrant=False, determinism_check="shapes")


def test_dtype_change_in_recomputation_raises_unless_the_check_is_off():
    x = _leaf(3)
    state = {"n": 0}

    def fn(t):
        state["n"] += 1
        return (t if state["n"] == 1 else t.float()).exp().sum()

    with pytest.raises(CheckpointError, match="float32"):
        checkpoint(fn, x, use_reentrant=False).backward()
    state["n"] = 0
    checkpoint(fn, x, use_reentrant=False, determinism_check="none").backward()
    np.testing.assert_allclose(_np(x.grad), np.exp(_np(x)), rtol=1e-6)


def test_custom_function_saves_go_through_the_checkpoint():
    class Cube(tgrad.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 3 * g * t * t

    x = _leaf(3)
    calls = []
    y = checkpoint(lambda t: calls.append(1) or Cube.apply(t.sin()), x, use_reentrant=False)
    y.sum().backward()
    assert len(calls) == 2  # forward, then one recomputation for Cube's saved tensor
    np.testing.assert_allclose(_np(x.grad), 3 * np.sin(_np(x)) ** 2 * np.cos(_np(x)),
                               rtol=1e-13)


def test_nested_checkpoints_and_context_fn():
    x, w = _leaf(3), _leaf(3)
    log = []

    def inner(t):
        return (t * w).sin().exp()

    def outer(t):
        return checkpoint(inner, t.cos(), use_reentrant=False).tanh()

    ref = tgrad.autograd.grad(inner(x.cos()).tanh().sum(), [x, w])
    got = tgrad.autograd.grad(checkpoint(outer, x, use_reentrant=False).sum(), [x, w])
    for a, b in zip(ref, got):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-13)

    class Tag:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            log.append(self.name)

        def __exit__(self, *exc):
            pass

    y = checkpoint(lambda t: t.exp(), x, use_reentrant=False,
                   context_fn=lambda: (Tag("forward"), Tag("recompute")))
    y.sum().backward()
    assert log == ["forward", "recompute"]
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t.exp(), x, use_reentrant=True,
                   context_fn=lambda: (Tag("f"), Tag("r")))


@pytest.mark.parametrize("reentrant", [True, False])
def test_recomputation_runs_under_the_forward_autocast_state(reentrant):
    x = tgrad.tensor(RNG.standard_normal((2, 3)), dtype=tgrad.float32, requires_grad=True)
    w = tgrad.tensor(RNG.standard_normal((3, 3)), dtype=tgrad.float32, requires_grad=True)

    def fn(t):
        return (t @ w).sin()

    def grads(run):
        x.grad = w.grad = None
        with tgrad.autocast("cpu", dtype=tgrad.bfloat16):
            y = run()
        assert y.dtype == tgrad.bfloat16
        y.float().sum().backward()  # outside the autocast region
        return _np(x.grad), _np(w.grad)

    ref = grads(lambda: fn(x))
    got = grads(lambda: checkpoint(fn, x, use_reentrant=reentrant))
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(b, a)


def test_use_reentrant_none_warns_and_takes_the_reentrant_variant():
    x = _leaf(3)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed "
                      "explicitly"):
        y = checkpoint(lambda t: t.exp(), x)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    assert checkpoint(lambda t: t.exp(), x, use_reentrant=False).grad_fn.name() \
        == "ExpBackward0"
    model = _model()
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        y = checkpoint_sequential(model, 2, tgrad.tensor(np.ones((2, 4))))
    assert y.grad_fn.name() != "CheckpointFunctionBackward"  # the last chunk runs plainly
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint_sequential(model, 2, x, use_reentrant=False, scale=2)


# ---------------------------------------------------------------- selective checkpointing

class _Counted(tgrad.autograd.Function):
    """y = sin(x) with a call counter on its forward; dy/dx = cos(x) (saves x)."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        _Counted.calls += 1
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


def _sac_fn(x, y):  # f = sum(sigmoid(counted(x @ y) @ y) * y)
    return (tgrad.sigmoid(_Counted.apply(tgrad.mm(x, y)) @ y) * y).sum()


def _sac_reference(x, y):  # NumPy float64: the gradients of _sac_fn by hand
    a = x @ y
    b = np.sin(a)
    c = b @ y
    s = 1 / (1 + np.exp(-c))
    gc = y * s * (1 - s)
    gb = gc @ y.T
    ga = gb * np.cos(a)
    gx = ga @ y.T
    gy = x.T @ ga + b.T @ gc + s
    return gx, gy


@pytest.mark.parametrize("policy, calls", [
    ([_Counted], 1),  # kept: not run again in backward
    (["matmul"], 2),  # the products kept, _Counted recomputed
    ([], 2),  # plain checkpoint
    (lambda ctx, op, *a, **k: (CheckpointPolicy.MUST_SAVE if op is _Counted
                               else CheckpointPolicy.PREFER_RECOMPUTE), 1),
    (lambda ctx, op, *a, **k: op is _Counted, 1),  # a bool: True is MUST_SAVE
    (lambda ctx, op, *a, **k: CheckpointPolicy.PREFER_SAVE, 1),
    (lambda ctx, op, *a, **k: CheckpointPolicy.MUST_RECOMPUTE, 2),
])
def test_selective_checkpoint_keeps_saved_ops_and_matches_the_gradients(policy, calls):
    import functools
    rng = np.random.default_rng(0)
    xv, yv = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    x = tgrad.tensor(xv, requires_grad=True)
    y = tgrad.tensor(yv, requires_grad=True)
    _Counted.calls = 0
    out = checkpoint(_sac_fn, x, y, use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    assert _Counted.calls == 1
    out.backward()
    assert _Counted.calls == calls
    gx, gy = _sac_reference(xv, yv)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), gy, rtol=1e-12, atol=1e-12)


def test_selective_checkpoint_policy_args_and_public_function_mapping():
    import functools
    seen = []

    def policy(ctx, op, *args, **kwargs):
        seen.append((op.name, ctx.is_recompute, tuple(args[0].shape),
                     tuple(ctx.op_output.shape)))
        return CheckpointPolicy.MUST_SAVE if op.name == "matmul" else \
            CheckpointPolicy.PREFER_RECOMPUTE

    x = tgrad.randn(2, 3, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.randn(4, 3, dtype=tgrad.float64, requires_grad=True)

    def fn(x, w):  # the product of F.linear and tgrad.mm are both "matmul"
        return tgrad.nn.functional.linear(x, w).tanh().mm(w).exp().sum()

    out = checkpoint(fn, x, w, use_reentrant=False,
                     context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    names = [s[0] for s in seen]
    assert names.count("matmul") == 2 and "tanh" in names and "exp" in names
    assert all(s[1] is False for s in seen)  # asked in the forward only
    assert ("matmul", False, (2, 3), (2, 4)) in seen
    n = len(seen)
    out.backward()
    assert len(seen) == n
    # central differences in float64 (a SAC region backpropagates once: no gradcheck)
    out = checkpoint(fn, x, w, use_reentrant=False, context_fn=functools.partial(
        create_selective_checkpoint_contexts, [tgrad.mm, "tanh"]))
    gx, gw = tgrad.autograd.grad(out, (x, w))
    for t, g in ((x, gx), (w, gw)):
        v = t.detach().numpy()
        fd = np.zeros_like(v)
        for i in np.ndindex(v.shape):
            d = np.zeros_like(v)
            d[i] = 1e-6
            plus = fn(*[tgrad.tensor(v + d) if a is t else a.detach() for a in (x, w)])
            minus = fn(*[tgrad.tensor(v - d) if a is t else a.detach() for a in (x, w)])
            fd[i] = (plus.item() - minus.item()) / 2e-6
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-7)


def test_selective_checkpoint_errors():
    import functools
    x = tgrad.randn(3, 3, dtype=tgrad.float64, requires_grad=True)
    ctx_fn = functools.partial(create_selective_checkpoint_contexts, ["matmul"])
    out = checkpoint(_sac_fn, x, x, use_reentrant=False, context_fn=ctx_fn)
    out.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
        out.backward()

    def mutating(x):
        y = x @ x
        z = y.sin()
        y.mul_(2)
        return z.sum()
    out = checkpoint(mutating, x, use_reentrant=False, context_fn=ctx_fn)
    with pytest.raises(RuntimeError, match="cached during selective activation checkpoint "
                                           "has been mutated"):
        out.backward()
    with pytest.raises(TypeError, match="either a function or a list of ops"):
        create_selective_checkpoint_contexts("matmul")
    with pytest.raises(ValueError, match="Expected op in `op_list`"):
        create_selective_checkpoint_contexts([3])
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(_sac_fn, x, x, use_reentrant=True, context_fn=ctx_fn)
    assert [p.value for p in CheckpointPolicy] == [0, 1, 2, 3, 4, 5]
