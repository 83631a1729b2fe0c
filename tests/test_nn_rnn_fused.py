"""The LSTM and GRU steps' fused pointwise nodes (tgrad/nn/_rnn_fused.py): values against a
NumPy float64 evaluation of the equations, bit-equality with the composite of tgrad ops they
replace (values and gradients), gradcheck / gradgradcheck in float64, odd and empty sizes,
non-contiguous inputs, NaN, the mixed-dtype fallback, forward-mode AD, the node names, and
the interpreted cuda device."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn._rnn_fused import gru_pointwise, lstm_pointwise


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_lstm(gi, gh, c):
    hs = c.shape[-1]
    a = gi + gh
    i, f, g, o = (a[:, k * hs:(k + 1) * hs] for k in range(4))
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    return _sig(o) * np.tanh(c2), c2


def np_gru(gi, gh, h):
    hs = h.shape[-1]
    r = _sig(gi[:, :hs] + gh[:, :hs])
    z = _sig(gi[:, hs:2 * hs] + gh[:, hs:2 * hs])
    n = np.tanh(gi[:, 2 * hs:] + r * gh[:, 2 * hs:])
    return (1.0 - z) * n + z * h


def composite_lstm(gi, gh, c):
    """What tgrad/nn/_rnn.py recorded before (and still runs for mixed dtypes)."""
    i, f, g, o = (gi + gh).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def composite_gru(gi, gh, h):
    r_i, z_i, n_i = gi.chunk(3, 1)
    r_h, z_h, n_h = gh.chunk(3, 1)
    r, z = (r_i + r_h).sigmoid(), (z_i + z_h).sigmoid()
    n = (n_i + r * n_h).tanh()
    return n + z * (h - n)


def _leaves(rng, n, hs, gates, dtype=np.float64, scale=1.5):
    def t(shape):
        return tgrad.tensor((scale * rng.standard_normal(shape)).astype(dtype),
                            requires_grad=True)
    return t((n, gates * hs)), t((n, gates * hs)), t((n, hs))


SIZES = [(1, 1), (3, 17), (17, 5), (0, 4), (2, 1)]  # (N, H)


@pytest.mark.parametrize("n,hs", SIZES)
def test_lstm_matches_numpy_float64(n, hs):
    rng = np.random.default_rng(n * 31 + hs)
    gi, gh, c = _leaves(rng, n, hs, 4)
    h2, c2 = lstm_pointwise(gi, gh, c)
    want_h, want_c = np_lstm(gi.detach().numpy(), gh.detach().numpy(), c.detach().numpy())
    np.testing.assert_allclose(h2.detach().numpy(), want_h, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(c2.detach().numpy(), want_c, rtol=1e-14, atol=1e-15)
    assert h2.shape == c2.shape == (n, hs) and h2.dtype is tgrad.float64
    assert type(h2.grad_fn).__name__ == "ThnnFusedLstmCellBackward0"
    assert h2.grad_fn is c2.grad_fn


@pytest.mark.parametrize("n,hs", SIZES)
def test_gru_matches_numpy_float64(n, hs):
    rng = np.random.default_rng(n * 37 + hs)
    gi, gh, h = _leaves(rng, n, hs, 3)
    h2 = gru_pointwise(gi, gh, h)
    want = np_gru(gi.detach().numpy(), gh.detach().numpy(), h.detach().numpy())
    np.testing.assert_allclose(h2.detach().numpy(), want, rtol=1e-14, atol=1e-15)
    assert type(h2.grad_fn).__name__ == "ThnnFusedGruCellBackward0"


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_same_bits_as_the_composite(mode, dtype):
    """The fused forward and backward run the composite's primitives in its order."""
    rng = np.random.default_rng(3)
    gates = 4 if mode == "LSTM" else 3
    leaves = _leaves(rng, 5, 7, gates, dtype)
    fused, composite = (lstm_pointwise, composite_lstm) if mode == "LSTM" else (
        gru_pointwise, composite_gru)
    results = []
    for fn in (fused, composite):
        for t in leaves:
            t.grad = None
        out = fn(*leaves)
        outs = out if isinstance(out, tuple) else (out,)
        seed_rng = np.random.default_rng(99)  # the same seeds for both
        seeds = [tgrad.tensor(seed_rng.standard_normal(o.shape).astype(dtype)) for o in outs]
        tgrad.autograd.backward(outs, seeds)
        results.append([o.detach().numpy() for o in outs] + [t.grad.numpy() for t in leaves])
    for got, want in zip(*results):
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_gradcheck_and_gradgradcheck(mode):
    rng = np.random.default_rng(11)
    gates = 4 if mode == "LSTM" else 3
    leaves = _leaves(rng, 3, 2, gates, scale=0.8)
    fn = lstm_pointwise if mode == "LSTM" else gru_pointwise
    assert gradcheck(fn, leaves)
    assert gradgradcheck(fn, leaves)


def test_gradients_when_one_output_is_unused():
    # only h' reaches the loss: dc' is materialised as zeros (and the converse)
    rng = np.random.default_rng(12)
    gi, gh, c = _leaves(rng, 2, 3, 4)
    for k in (0, 1):
        assert gradcheck(lambda a, b, c, k=k: lstm_pointwise(a, b, c)[k], (gi, gh, c))
        assert gradgradcheck(lambda a, b, c, k=k: lstm_pointwise(a, b, c)[k], (gi, gh, c))
    # and the fast backward of each alone matches the composite's bits
    for k in (0, 1):
        got = tgrad.autograd.grad(lstm_pointwise(gi, gh, c)[k].sum(), (gi, gh, c))
        want = tgrad.autograd.grad(composite_lstm(gi, gh, c)[k].sum(), (gi, gh, c))
        for a, b in zip(got, want):
            assert np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_non_contiguous_inputs(mode):
    rng = np.random.default_rng(13)
    n, hs = 4, 3
    gates = 4 if mode == "LSTM" else 3
    gi_t = tgrad.tensor(rng.standard_normal((gates * hs, n)), requires_grad=True)
    gh_big = tgrad.tensor(rng.standard_normal((n, 2 * gates * hs)), requires_grad=True)
    s = tgrad.tensor(rng.standard_normal((hs, n)), requires_grad=True)
    gi, gh, state = gi_t.t(), gh_big[:, ::2], s.t()  # transposed and strided views
    assert not (gi.is_contiguous() or gh.is_contiguous() or state.is_contiguous())
    if mode == "LSTM":
        got = lstm_pointwise(gi, gh, state)
        want = np_lstm(gi.detach().numpy(), gh.detach().numpy(), state.detach().numpy())
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.detach().numpy(), b, rtol=1e-14, atol=1e-15)
        assert gradcheck(lstm_pointwise, (gi, gh, state))
    else:
        got = gru_pointwise(gi, gh, state)
        want = np_gru(gi.detach().numpy(), gh.detach().numpy(), state.detach().numpy())
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-14, atol=1e-15)
        assert gradcheck(gru_pointwise, (gi, gh, state))


def test_nan_and_inf_follow_numpy():
    gi = np.array([[np.nan, 0.0, 0.0, 0.0, np.inf, 1.0, -np.inf, 2.0],
                   [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
    gh = np.zeros_like(gi)
    c = np.array([[1.0, np.inf], [np.nan, 1.0]])
    h2, c2 = lstm_pointwise(tgrad.tensor(gi), tgrad.tensor(gh), tgrad.tensor(c))
    with np.errstate(all="ignore"):
        want_h, want_c = np_lstm(gi, gh, c)
    np.testing.assert_array_equal(h2.numpy(), want_h)
    np.testing.assert_array_equal(c2.numpy(), want_c)
    gi3 = np.array([[np.nan, 0.0, np.inf, -np.inf, 0.0, 1.0]])
    g2 = gru_pointwise(tgrad.tensor(gi3), tgrad.tensor(np.zeros_like(gi3)),
                       tgrad.tensor(np.array([[0.5, np.inf]])))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(g2.numpy(), np_gru(gi3, np.zeros_like(gi3),
                                                         np.array([[0.5, np.inf]])))


def graph_node_names(t) -> list:
    """The class names of every node of t's graph (each node once)."""
    names, stack, seen = [], [t.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        names.append(type(node).__name__)
        stack.extend(n for n, _ in node.next_functions)
    return names


def test_modules_record_one_fused_node_per_step(monkeypatch):
    # the per-step path (on the CPU a whole direction is one node, tgrad/nn/_rnn_cpu.py;
    # the per-step path runs on cuda, under create_graph, forward AD and the profiler)
    from tgrad.nn import _rnn_cpu
    monkeypatch.setattr(_rnn_cpu, "usable", lambda *args: False)
    tgrad.manual_seed(0)
    m = nn.LSTM(3, 4, dtype=tgrad.float64)
    x = tgrad.randn(5, 2, 3, dtype=tgrad.float64, requires_grad=True)
    out, (h, c) = m(x)
    assert type(c.grad_fn).__name__ == "StackBackward0"
    names = graph_node_names(out)
    assert names.count("ThnnFusedLstmCellBackward0") == 5
    assert "SigmoidBackward0" not in names
    # per step an addmm and the gates; w_ih and w_hh transposed once each for the sequence
    assert names.count("AddmmBackward0") == 6 and names.count("TBackward0") == 2
    g = nn.GRUCell(3, 4, dtype=tgrad.float64)
    assert type(g(x[0]).grad_fn).__name__ == "ThnnFusedGruCellBackward0"


def test_mixed_dtypes_take_the_composite_with_promotion():
    rng = np.random.default_rng(14)
    gi = tgrad.tensor(rng.standard_normal((2, 8)).astype(np.float32), requires_grad=True)
    h = tgrad.tensor(rng.standard_normal((2, 2)), requires_grad=True)  # float64
    c = tgrad.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((8, 2)), requires_grad=True)
    from tgrad.nn._rnn import _lstm_step
    from tgrad.nn.functional import linear
    h2, c2 = _lstm_step(gi, linear(h, w), c, None)
    assert h2.dtype is tgrad.float64 and type(h2.grad_fn).__name__ == "MulBackward0"
    gh = h.detach().numpy() @ w.detach().numpy().T
    want_h, want_c = np_lstm(gi.detach().numpy().astype(np.float64), gh, c.detach().numpy())
    np.testing.assert_allclose(h2.detach().numpy(), want_h, rtol=1e-6)
    np.testing.assert_allclose(c2.detach().numpy(), want_c, rtol=1e-6)


def test_forward_mode_ad_matches_finite_differences():
    rng = np.random.default_rng(15)
    leaves = [t.detach() for t in _leaves(rng, 2, 3, 4)]
    tangents = [tgrad.tensor(rng.standard_normal(t.shape)) for t in leaves]
    _, jvp_out = tgrad.func.jvp(lambda *a: lstm_pointwise(*a), tuple(leaves), tuple(tangents))
    eps = 1e-6
    plus = np_lstm(*[(t + eps * d).numpy() for t, d in zip(leaves, tangents)])
    minus = np_lstm(*[(t - eps * d).numpy() for t, d in zip(leaves, tangents)])
    for got, p, m in zip(jvp_out, plus, minus):
        np.testing.assert_allclose(got.numpy(), (p - m) / (2 * eps), rtol=1e-6, atol=1e-8)


def test_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad
from tgrad.nn._rnn_fused import gru_pointwise, lstm_pointwise
rng = np.random.default_rng(2)
arrays = [rng.standard_normal(s) for s in [(3, 8), (3, 8), (3, 2), (3, 6), (3, 6), (3, 2)]]
out = {}
for dev in ("cpu", "cuda"):
    t = [tgrad.tensor(a, device=dev, requires_grad=True) for a in arrays]
    h, c = lstm_pointwise(t[0], t[1], t[2])
    g = gru_pointwise(t[3], t[4], t[5])
    (h.sum() + (c * c).sum() + (g * g).sum()).backward()
    out[dev] = [v.detach().cpu().numpy().ravel().tolist() for v in [h, c, g] + [x.grad for x in t]]
print(json.dumps(out))
""")
    for got, want in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN])
def test_under_autocast_the_steps_take_linear_and_the_composite(cls):
    # autocast lowers the projections to bfloat16 while the state stays float32: the steps
    # use linear (its casts) and the composite (its promotion), as documented in docs/nn.md
    tgrad.manual_seed(0)
    m = cls(3, 4)
    x = tgrad.randn(5, 2, 3, requires_grad=True)
    ref = m(x)[0].detach().numpy()
    with tgrad.autocast("cpu"):
        y = m(x)[0]
    np.testing.assert_allclose(y.float().detach().numpy(), ref, atol=2e-2)
    y.float().sum().backward()
    assert x.grad.dtype is tgrad.float32 and np.isfinite(x.grad.numpy()).all()


def test_in_place_on_the_new_cell_state_keeps_the_backward():
    # as PyTorch's CPU cell (tanh saves its result, the products their factors): the node
    # saves tanh(c'), not c', so changing c' in place after the step is allowed
    rng = np.random.default_rng(16)
    tgrad.manual_seed(3)
    cell = nn.LSTMCell(3, 2, dtype=tgrad.float64)
    x, h0, c0 = (tgrad.tensor(rng.standard_normal(s), requires_grad=True)
                 for s in [(2, 3), (2, 2), (2, 2)])

    def step(x, h0, c0):
        h, c = cell(x, (h0, c0))
        return h, c.mul_(2.0)

    assert gradcheck(step, (x, h0, c0))
    h, c = step(x, h0, c0)
    (h.sum() + c.sum()).backward()
    w = {n: p.detach().numpy() for n, p in cell.named_parameters()}
    eps = 1e-6

    def loss(xv):
        gi = xv @ w["weight_ih"].T + w["bias_ih"]
        gh = h0.detach().numpy() @ w["weight_hh"].T + w["bias_hh"]
        hv, cv = np_lstm(gi, gh, c0.detach().numpy())
        return hv.sum() + 2.0 * cv.sum()

    xv = x.detach().numpy()
    fd = np.zeros_like(xv)
    for idx in np.ndindex(*xv.shape):
        d = np.zeros_like(xv)
        d[idx] = eps
        fd[idx] = (loss(xv + d) - loss(xv - d)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-7, atol=1e-9)

