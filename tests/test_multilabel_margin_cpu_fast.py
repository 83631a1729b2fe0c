"""multilabel_margin_loss on the CPU (one _MultilabelMargin node in
tgrad/nn/_losses_extra.py for float32/float64 input) against the composite it replaces
(label counts, (N, C, C) clamped pairs, masked sum), forced by monkeypatching
``_losses_extra._fast_cpu``: bit-identical losses and input gradients over odd sizes, 1-D
input, ties of the hinge at 0, +-0 / inf / NaN inputs, repeated labels, every reduction;
gradcheck, gradgradcheck and forward-mode AD. The plain backward's counts path
(``_mlm_grad_counts``: gl times the exact integer counts, rounded once) against an
independent float64 count loop, byte for byte; the bit-identity test against the composite
runs with that path off (``_MLM_EXACT_C = -1``: the (N, C, C) sums)."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _losses_extra


def _run(x, t, red, g, fast: bool, monkeypatch, counts: bool = False) -> tuple:
    with monkeypatch.context() as m:
        if not counts:
            m.setattr(_losses_extra, "_MLM_EXACT_C", -1)
        if not fast:
            m.setattr(_losses_extra, "_fast_cpu", lambda x: False)
        xt = tgrad.tensor(x, requires_grad=True)
        y = F.multilabel_margin_loss(xt, tgrad.tensor(t), reduction=red)
        name = y.grad_fn.name()
        y.backward(tgrad.tensor(g) if g is not None else tgrad.ones_like(y))
    return y.detach().numpy().tobytes(), xt.grad.numpy().tobytes(), name


def _trial_inputs(rng, trial: int, n: int, c: int, dt) -> tuple:
    """(x (n, c) of dt, t (n, c) labels with -1 ends) for one trial: hinge ties at exactly
    0 and +-0 every third trial, inf / NaN inputs at trial % 7 == 5."""
    x = rng.standard_normal((n, c)).astype(dt)
    if trial % 3 == 0:  # hinge ties at exactly 0, +-0
        x = rng.integers(-2, 3, (n, c)).astype(dt)
        x.reshape(-1)[::4] = -0.0
    if trial % 7 == 5:
        x.reshape(-1)[::9] = np.inf
        x.reshape(-1)[1::11] = np.nan
    return x, np.where(rng.random((n, c)) < 0.7, rng.integers(0, c, (n, c)), -1)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_multilabel_margin_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt):
    rng = np.random.default_rng(2)
    for trial in range(24):
        n, c = int(rng.integers(1, 20)), int(rng.integers(1, 20))
        x, t = _trial_inputs(rng, trial, n, c, dt)
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


def _counts_reference(x: np.ndarray, t: np.ndarray, gl: np.ndarray) -> np.ndarray:
    """dx = gl * (number of (target j, non-target k) pairs with a positive hinge where
    the class is k, minus where it is j; a repeated label counts again), the count in
    float64 by loops and the product rounded once to x's dtype."""
    n, c = x.shape
    dx = np.zeros((n, c))
    for i in range(n):
        labels = []
        for v in t[i]:
            if v == -1:
                break
            labels.append(int(v))
        for j in labels:
            for k in range(c):
                if k not in labels and 1 - float(x[i, j]) + float(x[i, k]) > 0:
                    dx[i, k] += 1
                    dx[i, j] -= 1
    return (np.float64(1) * gl[:, None].astype(np.float64) * dx).astype(x.dtype) + 0


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_multilabel_margin_counts_backward_is_gl_times_exact_counts(dt):
    rng = np.random.default_rng(11)
    for trial in range(30):
        n, c = int(rng.integers(1, 13)), int(rng.integers(1, 37))
        x, t = _trial_inputs(rng, trial, n, c, dt)
        g = rng.standard_normal(n).astype(dt)
        g[::3] = -0.0
        xt = tgrad.tensor(x, requires_grad=True)
        y = F.multilabel_margin_loss(xt, tgrad.tensor(t), reduction="none")
        assert y.grad_fn.name() == "MultilabelMarginLossBackward0"
        y.backward(tgrad.tensor(g))
        gl = np.true_divide(g, dt(c))
        with np.errstate(invalid="ignore"):
            want = _counts_reference(x, t, gl)
        assert xt.grad.numpy().tobytes() == want.tobytes(), trial


def test_multilabel_margin_counts_backward_matches_the_sums_where_exact(monkeypatch):
    """(512, 32) with the 'mean' and 'sum' reductions: gl a power of two, so the sums
    are exact too and both paths give the same bytes; an empty batch; a non-finite g
    takes the sums path (its NaNs)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((512, 32)).astype(np.float32)
    t = np.where(rng.random((512, 32)) < 0.8, rng.integers(0, 32, (512, 32)), -1)
    for red in ("mean", "sum"):
        assert (_run(x, t, red, None, True, monkeypatch, counts=True)
                == _run(x, t, red, None, True, monkeypatch))
    e = np.zeros((0, 5), np.float32)
    assert _run(e, np.zeros((0, 5), np.int64), "sum", None, True, monkeypatch,
                counts=True)[1] == b""
    g = np.array([np.inf, 1.0, np.nan], np.float32)
    xs, ts = x[:3], t[:3]
    assert (_run(xs, ts, "none", g, True, monkeypatch, counts=True)
            == _run(xs, ts, "none", g, True, monkeypatch))
