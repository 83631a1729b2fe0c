"""multilabel_soft_margin_loss: the one-node CPU path (_MultilabelSoftMargin) against the
composite of tgrad ops it replaces and float64 references."""

import numpy as np
import pytest

import tgrad
import tgrad.nn._losses_extra as LE
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

ORIG = LE._mlsm_on_numpy


def _run(xn, yn, wn, red, fused, monkeypatch, y_grad=True):
    monkeypatch.setattr(LE, "_mlsm_on_numpy", ORIG if fused else lambda *a: False)
    x = tgrad.tensor(xn, requires_grad=True)
    y = tgrad.tensor(yn, requires_grad=y_grad)
    w = None if wn is None else tgrad.tensor(wn)
    loss = F.multilabel_soft_margin_loss(x, y, weight=w, reduction=red)
    (loss.sum() if red == "none" else loss).backward()
    return (loss.detach().numpy(), x.grad.numpy(), None if y.grad is None else y.grad.numpy(),
            loss.grad_fn.name())


@pytest.mark.parametrize("shape", [(7, 5), (5,), (0, 4), (4, 0), (3, 2, 6)])
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fused_matches_composite(shape, red, weighted, dt, monkeypatch):
    rng = np.random.default_rng(7)
    xn = (rng.standard_normal(shape) * 4).astype(dt)
    if xn.size:
        xn.flat[0], xn.flat[-1] = 40.0, -40.0  # saturated sigmoids
    yn = rng.uniform(0.05, 0.95, shape).astype(dt)
    wn = rng.uniform(0.5, 2.0, shape[-1]).astype(dt) if weighted else None
    l1, gx1, gy1, n1 = _run(xn, yn, wn, red, True, monkeypatch)
    l0, _, _, n0 = _run(xn, yn, wn, red, False, monkeypatch)
    assert n1 == n0
    np.testing.assert_array_equal(l1, l0)  # the composite's steps, bit for bit
    w64 = None if wn is None else wn.astype(np.float64)
    _, gx, gy, _ = _run(xn.astype(np.float64), yn.astype(np.float64), w64, red, False,
                        monkeypatch)
    # one formula each (dx over one denominator in float64, dy = -c w x)
    tol = 4 * np.finfo(dt).eps
    np.testing.assert_allclose(gx1, gx, rtol=tol, atol=tol * np.abs(gx).max(initial=0))
    np.testing.assert_allclose(gy1, gy, rtol=tol, atol=tol * np.abs(gy).max(initial=0))


def test_binary_and_broadcast_targets(monkeypatch):
    rng = np.random.default_rng(8)
    xn = rng.standard_normal((6, 3)) * 30
    for yn in [(rng.random((6, 3)) > 0.5).astype(np.float64),
               (rng.random(3) > 0.5).astype(np.float64)]:
        l1, g1, _, _ = _run(xn, yn, None, "mean", True, monkeypatch, y_grad=False)
        l0, g0, _, _ = _run(xn, yn, None, "mean", False, monkeypatch, y_grad=False)
        np.testing.assert_array_equal(l1, l0)
        np.testing.assert_allclose(g1, g0, rtol=1e-14, atol=0)


def test_non_contiguous_input():
    rng = np.random.default_rng(9)
    xn, yn = rng.standard_normal((5, 7)), rng.random((7, 5))
    x = tgrad.tensor(xn, requires_grad=True)
    F.multilabel_soft_margin_loss(x.t(), tgrad.tensor(yn)).backward()
    xc = tgrad.tensor(np.ascontiguousarray(xn.T), requires_grad=True)
    F.multilabel_soft_margin_loss(xc, tgrad.tensor(yn)).backward()
    np.testing.assert_array_equal(x.grad.numpy().T, xc.grad.numpy())


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradcheck_gradgradcheck(red, weighted):
    rng = np.random.default_rng(10)
    x = tgrad.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    y = tgrad.tensor(rng.random((4, 5)), requires_grad=True)
    w = tgrad.tensor(rng.uniform(0.5, 2, 5)) if weighted else None

    def f(x, y):
        return F.multilabel_soft_margin_loss(x, y, weight=w, reduction=red)

    assert gradcheck(f, (x, y))
    assert gradgradcheck(f, (x, y))


def test_forward_ad_matches_backward():
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(11)
    x, v = tgrad.tensor(rng.standard_normal((4, 5))), tgrad.tensor(rng.standard_normal((4, 5)))
    y = tgrad.tensor(rng.random((4, 5)))
    with fwAD.dual_level():
        out = F.multilabel_soft_margin_loss(fwAD.make_dual(x, v), y)
        tangent = fwAD.unpack_dual(out).tangent.item()
    xx = x.detach().requires_grad_(True)
    F.multilabel_soft_margin_loss(xx, y).backward()
    np.testing.assert_allclose(tangent, (xx.grad * v).sum().item(), rtol=1e-12)
