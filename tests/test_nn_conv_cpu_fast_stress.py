"""Adversarial uses of the CPU conv fast path (tgrad/backends/_numpy_conv.py) and its
workspace, each bit-identical to the composite (``_conv._fast_conv`` monkeypatched off):
threads running convolutions of one shape at once, a workspace so small that every give
evicts, one module applied twice in a graph with hooks keeping the gradients they saw,
inference then training, expanded (stride-0) and overlapping inputs, and a retained
graph's plain backward followed by a create_graph one. (Found by a randomized differential
fuzz against PyTorch and the composite; these pin the cases it stressed.)"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.backends import _numpy_conv
from tgrad.nn import _conv


def _composite(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_conv", lambda t: False)
        return fn()


def _same_bits(a: list, b: list) -> None:
    assert len(a) == len(b)
    for p, q in zip(a, b):
        assert p.dtype == q.dtype and p.shape == q.shape
        assert p.tobytes() == q.tobytes()


# (x shape, weight shape, kwargs): the shapes the threads and the small workspace share
SHAPES = [((2, 4, 9, 9), (6, 2, 3, 3), dict(padding=1, groups=2)),
          ((2, 4, 9, 9), (6, 2, 3, 3), dict(padding=2, stride=2, groups=2)),
          ((1, 4, 9), (4, 4, 3), dict(padding=1))]


def _step(x: np.ndarray, w: np.ndarray, kw: dict, g: np.ndarray, retain: bool) -> list:
    """[y, dx, dw] of one convolution; two backwards of a retained graph when ``retain``."""
    tx = tgrad.tensor(x, requires_grad=True)
    tw = tgrad.tensor(w, requires_grad=True)
    y = (F.conv1d if x.ndim == 3 else F.conv2d)(tx, tw, **kw)
    if retain:
        y.backward(tgrad.tensor(g), retain_graph=True)
    y.backward(tgrad.tensor(g))
    return [y.detach().numpy().copy(), tx.grad.numpy().copy(), tw.grad.numpy().copy()]


def _draws(seed: int, count: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        xs, ws, kw = SHAPES[int(rng.integers(len(SHAPES)))]
        dt = np.float32 if rng.random() < 0.5 else np.float64
        x, w = rng.standard_normal(xs).astype(dt), rng.standard_normal(ws).astype(dt)
        with tgrad.no_grad():
            conv = F.conv1d if len(xs) == 3 else F.conv2d
            ys = tuple(conv(tgrad.tensor(x), tgrad.tensor(w), **kw).shape)
        out.append((x, w, kw, rng.standard_normal(ys).astype(dt), bool(rng.random() < 0.5)))
    return out


def test_threads_running_convolutions_of_one_shape_at_once(monkeypatch):
    draws = {s: _draws(s, 40) for s in (1, 2, 3)}
    got: dict = {}

    def work(seed):
        got[seed] = [_step(*d) for d in draws[seed]]

    threads = [threading.Thread(target=work, args=(s,)) for s in draws]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s, ds in draws.items():
        assert len(got[s]) == len(ds)
        for d, r in zip(ds, got[s]):
            _same_bits(r, _composite(monkeypatch, lambda d=d: _step(*d)))


@pytest.mark.parametrize("max_bytes", [0, 3000])
def test_a_workspace_that_evicts_on_every_give(monkeypatch, max_bytes):
    monkeypatch.setattr(_numpy_conv.WORKSPACE, "max_bytes", max_bytes)
    _numpy_conv.WORKSPACE.clear()
    for d in _draws(4, 12):
        _same_bits(_step(*d), _composite(monkeypatch, lambda d=d: _step(*d)))
        assert _numpy_conv.WORKSPACE.nbytes <= max_bytes
    _numpy_conv.WORKSPACE.clear()


@pytest.mark.parametrize("mode", ["zeros", "reflect", "circular"])
def test_one_module_twice_in_a_graph_with_hooks_keeping_gradients(monkeypatch, mode):
    rng = np.random.default_rng(5)
    x_np, g_np = rng.standard_normal((3, 4, 7, 6)), rng.standard_normal((3, 4, 7, 6))

    def run():
        tgrad.manual_seed(1)
        m = tgrad.nn.Conv2d(4, 4, 3, padding=1, padding_mode=mode, dtype=tgrad.float64)
        x = tgrad.tensor(x_np, requires_grad=True)
        kept = []
        x.register_hook(kept.append)
        m.weight.register_hook(kept.append)
        h = m(x)
        h.register_hook(kept.append)
        y = m(tgrad.relu(h))
        y.backward(tgrad.tensor(g_np), retain_graph=True)
        seen = [k.numpy().copy() for k in kept]
        y.backward(tgrad.tensor(g_np))
        for _ in range(2):  # later steps of the same shapes reuse the workspace
            m(tgrad.tensor(x_np * 0.5, requires_grad=True)).sum().backward()
        assert len(kept) == 8  # (the weight hook also saw the two later steps)
        _same_bits(seen, [k.numpy() for k in kept[:3]])  # left alone by the later steps
        return [k.numpy().copy() for k in kept] + [x.grad.numpy().copy(),
                                                   m.weight.grad.numpy().copy(),
                                                   m.bias.grad.numpy().copy()]

    _same_bits(run(), _composite(monkeypatch, run))


def test_inference_then_training(monkeypatch):
    rng = np.random.default_rng(6)
    x, w = rng.standard_normal((3, 4, 7, 6)), rng.standard_normal((6, 4, 3, 3))
    g = rng.standard_normal((3, 6, 7, 6))
    ref = _composite(monkeypatch, lambda: _step(x, w, dict(padding=1), g, False))
    for mode in (tgrad.no_grad, tgrad.inference_mode):
        for _ in range(2):
            with mode():
                y = F.conv2d(tgrad.tensor(x, requires_grad=True),
                             tgrad.tensor(w, requires_grad=True), padding=1)
            _same_bits([y.numpy()], ref[:1])
        _same_bits(_step(x, w, dict(padding=1), g, False), ref)


def test_expanded_and_overlapping_inputs(monkeypatch):
    rng = np.random.default_rng(7)
    xb, wb = rng.standard_normal((1, 3, 1, 6)), rng.standard_normal((1, 3, 1, 1))
    buf_np = rng.standard_normal(54)

    def expanded():
        bx = tgrad.tensor(xb, requires_grad=True)
        bw = tgrad.tensor(wb, requires_grad=True)
        y = F.conv2d(bx.expand(2, 3, 5, 6), bw.expand(4, 3, 3, 3), padding=(1, 0),
                     stride=(2, 1))
        y.backward(tgrad.ones_like(y))
        return [y.detach().numpy().copy(), bx.grad.numpy().copy(), bw.grad.numpy().copy()]

    def overlapping():  # x and w views of one buffer; y changed in place before backward
        buf = tgrad.tensor(buf_np, requires_grad=True)
        x, w = buf.reshape(2, 3, 3, 3), buf[27:].reshape(1, 3, 3, 3)  # w: x's second half
        y = F.conv2d(x, w, padding=1)
        y.add_(1.0)
        y.backward(tgrad.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape)))
        return [y.detach().numpy().copy(), buf.grad.numpy().copy()]

    for fn in (expanded, overlapping):
        _same_bits(fn(), _composite(monkeypatch, fn))


def test_a_plain_backward_then_a_create_graph_one_on_a_retained_graph(monkeypatch):
    rng = np.random.default_rng(8)
    x_np, w_np = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((4, 3, 3, 2))

    def run():
        x = tgrad.tensor(x_np, requires_grad=True)
        w = tgrad.tensor(w_np, requires_grad=True)
        y = F.conv2d(x, w, padding=(2, 1), stride=(2, 1), dilation=(1, 2))
        g = tgrad.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape))
        y.backward(g, retain_graph=True)  # the fast backward hands the columns back
        first = [x.grad.numpy().copy(), w.grad.numpy().copy()]
        gx, gw = tgrad.autograd.grad(y, [x, w], g, create_graph=True, retain_graph=True)
        ((gx * gx).sum() + (gw * gw).sum()).backward(retain_graph=True)
        y.backward(g)
        return first + [gx.detach().numpy().copy(), gw.detach().numpy().copy(),
                        x.grad.numpy().copy(), w.grad.numpy().copy()]

    _same_bits(run(), _composite(monkeypatch, run))
