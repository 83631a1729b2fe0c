"""tgrad.utils.checkpoint: values and gradients equal to the plain run (and to finite
differences), dropout masks reproduced in the recomputation, parameters inside the
function get gradients, checkpoint_sequential, and the unsupported double backward."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.utils.checkpoint import checkpoint, checkpoint_sequential


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
    lambda m, x: checkpoint_sequential(m, 3, x),
    lambda m, x: checkpoint_sequential(m, 1, x),
])
def test_checkpoint_matches_the_plain_run(wrap):
    model = _model()
    x = tgrad.tensor(np.random.default_rng(0).standard_normal((5, 4)), requires_grad=True)
    ref = _run(model, x, lambda m, t: m(t))
    got = _run(model, x, wrap)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-13, atol=1e-15)


def test_gradcheck_through_checkpoint_with_kwargs_and_several_outputs():
    def fn(a, b, scale=1.0):
        return (a * b).sin() * scale, a.exp() + b

    a = tgrad.tensor(np.array([0.3, -0.7]), requires_grad=True)
    b = tgrad.tensor(np.array([1.1, 0.4]), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda p, q: checkpoint(fn, p, q, scale=2.0), (a, b))


def test_parameters_get_gradients_when_no_input_requires_grad():
    model = _model().eval()
    x = tgrad.tensor(np.ones((2, 4)))
    checkpoint(model, x).sum().backward()
    assert all(p.grad is not None and np.abs(p.grad.numpy()).sum() > 0
               for p in model.parameters())


def test_double_backward_through_checkpoint_raises():
    a = tgrad.tensor(np.array([0.5]), requires_grad=True)
    y = checkpoint(lambda t: t * t * t, a)
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
        checkpoint(lambda a: {"k": a * w}, x)
