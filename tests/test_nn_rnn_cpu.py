"""A whole (layer, direction) of nn.RNN / nn.LSTM / nn.GRU as one CPU node
(tgrad/nn/_rnn_cpu.py): outputs and the input / state / w_ih gradients bit-equal to the
per-step path (forced with monkeypatch), w_hh / b_hh / w_hr gradients (one product over all
steps) within a few ulp of it, gradcheck / gradgradcheck in float64, odd and empty sizes,
packed sequences, create_graph, and the cases that keep the per-step path."""

from __future__ import annotations

import numpy as np
import pytest
from test_nn_rnn_fused import graph_node_names

import tgrad
import tgrad.nn as nn
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import _rnn_cpu
from tgrad.nn.utils.rnn import pack_padded_sequence

REAL_USABLE = _rnn_cpu.usable
# gradients of sums over all steps in one product: not the per-step accumulation's bits
SUMMED = ("weight_hh", "bias_hh", "weight_hr")

CONFIGS = [
    (nn.LSTM, {}), (nn.LSTM, {"num_layers": 2, "bidirectional": True}),
    (nn.LSTM, {"proj_size": 3, "bidirectional": True, "num_layers": 2}),
    (nn.LSTM, {"bias": False, "batch_first": True}),
    (nn.GRU, {}), (nn.GRU, {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    (nn.GRU, {"bias": False}),
    (nn.RNN, {"bidirectional": True}), (nn.RNN, {"nonlinearity": "relu", "num_layers": 2}),
]


def _run(monkeypatch, fast: bool, cls, kw: dict, dtype, lengths=None, n=3, length=4,
         hidden=6, h0=True, uses=("out", "h", "c"), dropout=0.0):
    monkeypatch.setattr(_rnn_cpu, "usable", REAL_USABLE if fast else lambda *a: False)
    npdt = np.float32 if dtype is tgrad.float32 else np.float64
    rng = np.random.default_rng(7)
    tgrad.manual_seed(0)
    m = cls(5, hidden, dtype=dtype, dropout=dropout, **kw)
    bf = kw.get("batch_first", False)
    x = tgrad.tensor(rng.standard_normal((n, length, 5) if bf else (length, n, 5)).astype(npdt),
                     requires_grad=True)
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    leaves, hx = [x], None
    if h0:
        hs = [tgrad.tensor(rng.standard_normal((d, n, k)).astype(npdt), requires_grad=True)
              for k in ([kw.get("proj_size") or hidden, hidden] if cls is nn.LSTM
                        else [hidden])]
        leaves += hs
        hx = tuple(hs) if cls is nn.LSTM else hs[0]
    inp = x if lengths is None else pack_padded_sequence(x, lengths, batch_first=bf,
                                                          enforce_sorted=False)
    tgrad.manual_seed(1)  # (dropout)
    y, st = m(inp, hx)
    y = y if lengths is None else y.data
    st = st if isinstance(st, tuple) else (st,)
    loss = 0.0
    if "out" in uses:
        loss = loss + (y * tgrad.tensor(rng.standard_normal(y.shape).astype(npdt))).sum()
    if "h" in uses or ("c" in uses and len(st) == 1):  # (no c: h instead)
        loss = loss + (st[0] * st[0]).sum()
    if "c" in uses and len(st) > 1:
        loss = loss + (st[1] * tgrad.tensor(rng.standard_normal(st[1].shape).astype(npdt))
                       ).sum()
    loss.backward()
    values = [y.detach().numpy()] + [s.detach().numpy() for s in st]
    grads = {f"leaf{k}": t.grad.numpy() for k, t in enumerate(leaves)}
    grads.update({k: p.grad.numpy() for k, p in m.named_parameters()})
    return values, grads, graph_node_names(y)


def _compare(old, new, dtype) -> None:
    for a, b in zip(old[0], new[0]):
        np.testing.assert_array_equal(b, a)
    assert old[1].keys() == new[1].keys()
    ulp = 2e-6 if dtype is tgrad.float32 else 4e-15
    for k, a in old[1].items():
        if k.startswith(SUMMED):
            np.testing.assert_allclose(new[1][k], a, rtol=0, atol=ulp * np.abs(a).max())
        else:
            np.testing.assert_array_equal(new[1][k], a, err_msg=k)
    assert "RnnLayerBackward0" in new[2] and "RnnLayerBackward0" not in old[2]
    assert not any(s.startswith("ThnnFused") for s in new[2])


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64])
@pytest.mark.parametrize("cls,kw", CONFIGS)
@pytest.mark.parametrize("lengths", [None, [4, 2, 3]])
def test_same_as_the_per_step_path(monkeypatch, cls, kw, dtype, lengths):
    old = _run(monkeypatch, False, cls, kw, dtype, lengths)
    new = _run(monkeypatch, True, cls, kw, dtype, lengths)
    _compare(old, new, dtype)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("uses,h0", [(("out",), False), (("h",), True), (("c",), True)])
def test_unused_outputs_and_default_states(monkeypatch, cls, uses, h0):
    kw = {"bidirectional": True}
    for lengths in (None, [1, 4, 2]):
        old = _run(monkeypatch, False, cls, kw, tgrad.float64, lengths, h0=h0, uses=uses)
        new = _run(monkeypatch, True, cls, kw, tgrad.float64, lengths, h0=h0, uses=uses)
        _compare(old, new, tgrad.float64)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("n,length,hidden", [(1, 1, 1), (1, 5, 17), (4, 1, 17), (2, 3, 1)])
def test_odd_sizes(monkeypatch, cls, n, length, hidden):
    for dtype in (tgrad.float32, tgrad.float64):
        args = (cls, {"bidirectional": True}, dtype, None, n, length, hidden)
        _compare(_run(monkeypatch, False, *args), _run(monkeypatch, True, *args), dtype)


def test_dropout_between_layers(monkeypatch):
    args = (nn.LSTM, {"num_layers": 3}, tgrad.float64)
    old = _run(monkeypatch, False, *args, dropout=0.4)
    new = _run(monkeypatch, True, *args, dropout=0.4)
    _compare(old, new, tgrad.float64)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_empty_batch(cls):
    m = cls(3, 4, bidirectional=True, dtype=tgrad.float64)
    x = tgrad.zeros(5, 0, 3, dtype=tgrad.float64, requires_grad=True)
    y, st = m(x)
    assert y.shape == (5, 0, 8) and type(y.grad_fn).__name__ != "StackBackward0"
    st = st if isinstance(st, tuple) else (st,)
    (y.sum() + sum(s.sum() for s in st)).backward()
    assert x.grad.shape == (5, 0, 3)
    for p in m.parameters():
        assert p.grad is not None and not p.grad.numpy().any()


def _small(cls, kw, packed: bool):
    tgrad.manual_seed(3)
    m = cls(2, 3, dtype=tgrad.float64, **kw)
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    hout = kw.get("proj_size") or 3
    h0 = tgrad.tensor(rng.standard_normal((d, 2, hout)), requires_grad=True)
    c0 = tgrad.tensor(rng.standard_normal((d, 2, 3)), requires_grad=True)
    params = list(m.parameters())
    names = [k for k, _ in m.named_parameters()]

    def f(x, h0, c0, *ps):
        ws = {k: p for k, p in zip(names, ps)}
        inp = pack_padded_sequence(x, [3, 1]) if packed else x
        hx = (h0, c0) if cls is nn.LSTM else h0
        y, st = tgrad.func.functional_call(m, ws, (inp, hx))
        y = y.data if packed else y
        st = st if isinstance(st, tuple) else (st,)
        return (y,) + st
    return f, (x, h0, c0, *params)


@pytest.mark.parametrize("cls,kw", [
    (nn.LSTM, {"proj_size": 2, "bidirectional": True}), (nn.LSTM, {"num_layers": 2}),
    (nn.GRU, {"bidirectional": True}), (nn.RNN, {"nonlinearity": "relu"}),
    (nn.RNN, {"bias": False, "bidirectional": True})])
@pytest.mark.parametrize("packed", [False, True])
def test_gradcheck_and_gradgradcheck(cls, kw, packed):
    f, inputs = _small(cls, kw, packed)
    assert "RnnLayerBackward0" in graph_node_names(f(*inputs)[0])
    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_create_graph_gives_the_per_step_double_backward(monkeypatch):
    def run(fast):
        monkeypatch.setattr(_rnn_cpu, "usable", REAL_USABLE if fast else lambda *a: False)
        f, inputs = _small(nn.GRU, {"bidirectional": True}, True)
        inputs = inputs[:2] + inputs[3:]  # (no c0)
        y, h = f(inputs[0], inputs[1], None, *inputs[2:])
        gs = tgrad.autograd.grad((y * y).sum() + h.sum(), inputs, create_graph=True)
        sum((g * g).sum() for g in gs).backward()
        return [g.detach().numpy() for g in gs], [t.grad.numpy() for t in inputs]
    (g_old, gg_old), (g_new, gg_new) = run(False), run(True)
    for u, v in zip(g_old, g_new):  # the rebuilt per-step path's gradients: its bits
        np.testing.assert_array_equal(v, u)
    for u, v in zip(gg_old, gg_new):  # (sums over the two graphs, in another order)
        np.testing.assert_allclose(v, u, rtol=1e-13, atol=1e-13)


def test_no_grad_forward_records_nothing(monkeypatch):
    m = nn.LSTM(3, 4, 2, bidirectional=True)
    x = tgrad.randn(6, 2, 3)
    with tgrad.no_grad():
        y, (h, c) = m(x)
    assert y.grad_fn is None and h.grad_fn is None
    monkeypatch.setattr(_rnn_cpu, "usable", lambda *a: False)
    with tgrad.no_grad():
        y2, (h2, c2) = m(x)
    for a, b in [(y, y2), (h, h2), (c, c2)]:
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_forward_ad_and_profiler_keep_the_per_step_path():
    m = nn.GRU(3, 4, dtype=tgrad.float64)
    x = tgrad.randn(4, 2, 3, dtype=tgrad.float64)
    t = tgrad.randn(4, 2, 3, dtype=tgrad.float64)
    y, jvp = tgrad.func.jvp(lambda v: m(v)[0], (x,), (t,))
    eps = 1e-6
    with tgrad.no_grad():
        fd = (m(x + eps * t)[0] - m(x - eps * t)[0]) / (2 * eps)
    np.testing.assert_allclose(jvp.detach().numpy(), fd.numpy(), rtol=1e-6, atol=1e-8)
    with tgrad.profiler.profile() as prof:
        y = m(x.requires_grad_())[0]
    assert "ThnnFusedGruCellBackward0" in graph_node_names(y)
    assert prof is not None


def test_in_place_change_of_w_hh_after_the_forward_is_an_error():
    m = nn.LSTM(3, 4)
    y, _ = m(tgrad.randn(4, 2, 3))
    with tgrad.no_grad():
        m.weight_hh_l0.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("changed", ["x", "h0"])
def test_create_graph_refuses_an_input_changed_in_place_after_the_forward(changed):
    # The create_graph backward recomputes the per-step path from the node's inputs: an
    # input changed in place since the forward would give gradients of other values, so it
    # raises PyTorch's in-place error (naming the tensor's version) instead.
    m = nn.GRU(3, 4, dtype=tgrad.float64)
    base = tgrad.randn(5, 2, 3, dtype=tgrad.float64, requires_grad=True)
    h_base = tgrad.randn(1, 2, 4, dtype=tgrad.float64, requires_grad=True)
    x, h0 = base * 1.0, h_base * 1.0
    y, _ = m(x, h0)
    assert "RnnLayerBackward0" in graph_node_names(y)
    with tgrad.no_grad():
        (x if changed == "x" else h0).add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*expected "
                                           "version 0 instead"):
        tgrad.autograd.grad((y * y).sum(), [m.weight_hh_l0], create_graph=True)


def test_create_graph_after_an_untouched_forward_still_matches_finite_differences():
    m = nn.GRU(3, 4, dtype=tgrad.float64)
    x = tgrad.randn(5, 2, 3, dtype=tgrad.float64, requires_grad=True)
    y, _ = m(x)
    (g,) = tgrad.autograd.grad((y * y).sum(), [x], create_graph=True)
    eps, d = 1e-6, np.zeros((5, 2, 3))
    d[2, 1, 0] = 1.0
    with tgrad.no_grad():
        def loss(v):
            return float((m(tgrad.tensor(v))[0] ** 2).sum())
        fd = (loss(x.numpy() + eps * d) - loss(x.numpy() - eps * d)) / (2 * eps)
    np.testing.assert_allclose(g.detach().numpy()[2, 1, 0], fd, rtol=1e-7)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_packed_equal_lengths_and_backward_in_small_groups(monkeypatch, cls):
    # equal lengths: the states' one buffer for all steps, as unpacked (varied lengths:
    # the (B, .) state); _CHUNK small: the backward's factors one or two steps at a time
    monkeypatch.setattr(_rnn_cpu, "_CHUNK", 100)
    kw = {"bidirectional": True, "num_layers": 2}
    for lengths in ([4, 4, 4], [4, 2, 3], None):
        for dtype in (tgrad.float32, tgrad.float64):
            args = (cls, kw, dtype, lengths)
            _compare(_run(monkeypatch, False, *args), _run(monkeypatch, True, *args), dtype)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("packed", [False, True])
def test_outputs_changed_in_place_leave_the_gradients(cls, packed):
    # the outputs are not the memory the backward reads (h_{t-1}, c_{t-1}, RNN's h_t)
    def run(in_place):
        tgrad.manual_seed(0)
        m = cls(3, 4, dtype=tgrad.float64)
        x = tgrad.tensor(np.random.default_rng(2).standard_normal((5, 2, 3)),
                         requires_grad=True)
        y, st = m(pack_padded_sequence(x, [5, 3]) if packed else x)
        y = y.data if packed else y
        st = st if isinstance(st, tuple) else (st,)
        if in_place:
            with tgrad.no_grad():
                for t in (y,) + st:
                    t.mul_(-3.0)
        loss = (y * y).sum() + sum((s * s).sum() for s in st)
        loss.backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()]
    for a, b in zip(run(False), run(True)):
        np.testing.assert_allclose(b, -3.0 * a, rtol=1e-12, atol=1e-12)
