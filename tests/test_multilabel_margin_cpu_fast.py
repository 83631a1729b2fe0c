"""multilabel_margin_loss on the CPU (one _MultilabelMargin node in
tgrad/nn/_losses_extra.py for float32/float64 input) against the composite it replaces
(label counts, (N, C, C) clamped pairs, masked sum), forced by monkeypatching
``_losses_extra._fast_cpu``: bit-identical losses and input gradients over odd sizes, 1-D
input, ties of the hinge at 0, +-0 / inf / NaN inputs, repeated labels, every reduction;
gradcheck, gradgradcheck and forward-mode AD."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _losses_extra


def _run(x, t, red, g, fast: bool, monkeypatch) -> tuple:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(_losses_extra, "_fast_cpu", lambda x: False)
        xt = tgrad.tensor(x, requires_grad=True)
        y = F.multilabel_margin_loss(xt, tgrad.tensor(t), reduction=red)
        name = y.grad_fn.name()
        y.backward(tgrad.tensor(g) if g is not None else tgrad.ones_like(y))
    return y.detach().numpy().tobytes(), xt.grad.numpy().tobytes(), name


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_multilabel_margin_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt):
    rng = np.random.default_rng(2)
    for trial in range(24):
        n, c = int(rng.integers(1, 20)), int(rng.integers(1, 20))
        x = rng.standard_normal((n, c)).astype(dt)
        if trial % 3 == 0:  # hinge ties at exactly 0, +-0
            x = rng.integers(-2, 3, (n, c)).astype(dt)
            x.reshape(-1)[::4] = -0.0
        if trial % 7 == 5:
            x.reshape(-1)[::9] = np.inf
            x.reshape(-1)[1::11] = np.nan
        t = np.where(rng.random((n, c)) < 0.7, rng.integers(0, c, (n, c)), -1)
        one_d = trial % 5 == 4
        if one_d:
            x, t = x[0], t[0]
        for red in ("mean", "sum", "none"):
            g = None
            if red == "none" and not one_d:
                g = rng.standard_normal(n).astype(dt)
                g[::3] = -0.0
            fast = _run(x, t, red, g, True, monkeypatch)
            slow = _run(x, t, red, g, False, monkeypatch)
            assert fast[:2] == slow[:2], (trial, red)
            if red == "none" and not one_d:
                assert fast[2] == "MultilabelMarginLossBackward0" != slow[2]


def test_multilabel_margin_fast_path_against_a_float64_loop():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((7, 5))
    t = np.array([[1, 1, -1, 3, 0]] + [list(rng.permutation(5)[:3]) + [-1, 2]
                                       for _ in range(6)])
    want = np.zeros(7)
    for i in range(7):
        labels = []
        for v in t[i]:
            if v == -1:
                break
            labels.append(v)
        for j in labels:  # (a repeated label counts again)
            for k in range(5):
                if k not in labels:
                    want[i] += max(0.0, 1 - (x[i, j] - x[i, k])) / 5
    y = F.multilabel_margin_loss(tgrad.tensor(x), tgrad.tensor(t), reduction="none")
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("red", ["none", "mean"])
def test_multilabel_margin_fast_path_gradcheck_gradgradcheck_forward_ad(monkeypatch, red):
    import tgrad.autograd.forward_ad as fwad
    rng = np.random.default_rng(6)
    x = tgrad.tensor(rng.standard_normal((4, 6)), requires_grad=True)
    t = tgrad.tensor(np.where(rng.random((4, 6)) < 0.6, rng.integers(0, 6, (4, 6)), -1))

    def fn(v):
        return F.multilabel_margin_loss(v, t, reduction=red)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    tan = tgrad.tensor(rng.standard_normal((4, 6)))
    jvps = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(_losses_extra, "_fast_cpu", lambda x: False)
            with fwad.dual_level():
                jvps.append(fwad.unpack_dual(fn(fwad.make_dual(x.detach(), tan))).tangent)
    np.testing.assert_allclose(jvps[0].numpy(), jvps[1].numpy(), rtol=1e-12, atol=1e-15)
