"""cross_entropy with label smoothing: the one-node CPU path (_CrossEntropySmooth) against
the composite of tgrad ops it replaces (_smoothed) and float64 references."""

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

SHAPES = [(7, 5), (3, 4, 2, 3), (0, 4), (6, 1)]


def _run(xn, tn, wn, red, eps, fused, monkeypatch):
    monkeypatch.setattr(F, "_ce_smooth_on_numpy",
                        F.__dict__["_ce_smooth_on_numpy"] if fused else lambda *a: False)
    x = tgrad.tensor(xn, requires_grad=True)
    w = None if wn is None else tgrad.tensor(wn)
    loss = F.cross_entropy(x, tgrad.tensor(tn), weight=w, reduction=red, label_smoothing=eps)
    (loss.sum() if red == "none" else loss).backward()
    return loss.detach().numpy(), x.grad.numpy(), loss.grad_fn.name()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fused_matches_composite(shape, red, weighted, dt, monkeypatch):
    rng = np.random.default_rng(3)
    xn = (rng.standard_normal(shape) * 3).astype(dt)
    tn = rng.integers(0, shape[1], (shape[0],) + shape[2:])
    tn.flat[::3] = -100  # some ignored rows
    wn = rng.uniform(0.2, 2.0, shape[1]).astype(dt) if weighted else None
    orig = F._ce_smooth_on_numpy
    l1, g1, n1 = _run(xn, tn, wn, red, 0.2, True, monkeypatch)
    monkeypatch.setattr(F, "_ce_smooth_on_numpy", orig)
    l0, g0, n0 = _run(xn, tn, wn, red, 0.2, False, monkeypatch)
    assert n1 == n0 == "AddBackward0"
    np.testing.assert_array_equal(l1, l0)  # the forward: the composite's steps, bit for bit
    # the backward: one formula, against the composite in float64
    monkeypatch.setattr(F, "_ce_smooth_on_numpy", lambda *a: False)
    _, g64, _ = _run(xn.astype(np.float64), tn, None if wn is None else wn.astype(np.float64),
                     red, 0.2, False, monkeypatch)
    tol = 1e-6 if dt == np.float32 else 1e-14
    np.testing.assert_allclose(g1, g64, rtol=tol, atol=tol * max(np.abs(g64).max(initial=0), 1))


def test_fused_path_taken_and_all_ignored():
    x = tgrad.tensor(np.zeros((2, 3), np.float32), requires_grad=True)
    loss = F.cross_entropy(x, tgrad.tensor([-100, -100]), label_smoothing=0.2)
    assert loss.grad_fn.name() == "AddBackward0" and np.isnan(loss.item())
    assert loss.grad_fn._forward_cls is F._CrossEntropySmooth  # (the fused node)
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3), np.float32))


def test_non_contiguous_input():
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((6, 9))
    t = tgrad.tensor(rng.integers(0, 6, 9))
    x = tgrad.tensor(xn, requires_grad=True)
    F.cross_entropy(x.t(), t, label_smoothing=0.1).backward()
    xc = tgrad.tensor(np.ascontiguousarray(xn.T), requires_grad=True)
    F.cross_entropy(xc, t, label_smoothing=0.1).backward()
    np.testing.assert_allclose(x.grad.numpy().T, xc.grad.numpy(), rtol=1e-14, atol=1e-16)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradcheck_gradgradcheck(red, weighted):
    rng = np.random.default_rng(4)
    x = tgrad.tensor(rng.standard_normal((5, 4, 3)), requires_grad=True)
    t = tgrad.tensor(np.array([[0, 1, -100], [3, 2, 1], [0, 0, 0], [1, -100, 3], [2, 2, 2]]))
    w = tgrad.tensor(rng.uniform(0.5, 2, 4)) if weighted else None

    def f(x):
        return F.cross_entropy(x, t, weight=w, reduction=red, label_smoothing=0.3)

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_forward_ad_matches_backward():
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(6)
    x, v = tgrad.tensor(rng.standard_normal((5, 4))), tgrad.tensor(rng.standard_normal((5, 4)))
    t = tgrad.tensor(np.array([0, 1, 2, 3, -100]))
    with fwAD.dual_level():
        out = F.cross_entropy(fwAD.make_dual(x, v), t, label_smoothing=0.2)
        tangent = fwAD.unpack_dual(out).tangent.item()
    xx = x.detach().requires_grad_(True)
    F.cross_entropy(xx, t, label_smoothing=0.2).backward()
    np.testing.assert_allclose(tangent, (xx.grad * v).sum().item(), rtol=1e-12)
