"""nn.RNN / LSTM / GRU and their cells against a NumPy float64 evaluation of PyTorch's
formulas (written here), gradients by finite differences (gradcheck / gradgradcheck),
PyTorch's parameter names, shapes and initialisation, dropout between layers, and errors;
PackedSequence inputs against each sequence run alone and the NumPy recurrence."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import init
from tgrad.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
)

# ---------------------------------------------------------------- NumPy reference


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_cell(mode: str, x, h, c, w_ih, w_hh, b_ih=None, b_hh=None, w_hr=None):
    """One step of PyTorch's documented equations: returns (h', c') (c' None but for LSTM)."""
    gi = x @ w_ih.T + (0.0 if b_ih is None else b_ih)
    gh = h @ w_hh.T + (0.0 if b_hh is None else b_hh)
    if mode == "RNN_TANH":
        return np.tanh(gi + gh), None
    if mode == "RNN_RELU":
        return np.maximum(gi + gh, 0.0), None
    if mode == "LSTM":
        hs = w_hh.shape[0] // 4
        a = gi + gh
        i, f, g, o = (a[..., k * hs:(k + 1) * hs] for k in range(4))
        c2 = _sig(f) * c + _sig(i) * np.tanh(g)
        h2 = _sig(o) * np.tanh(c2)
        return (h2 if w_hr is None else h2 @ w_hr.T), c2
    hs = w_hh.shape[0] // 3  # GRU
    r = _sig(gi[..., :hs] + gh[..., :hs])
    z = _sig(gi[..., hs:2 * hs] + gh[..., hs:2 * hs])
    n = np.tanh(gi[..., 2 * hs:] + r * gh[..., 2 * hs:])
    return (1.0 - z) * n + z * h, None


def np_rnn(m, x, h0, c0=None, zero_between_layers: bool = False):
    """The module's layers over a time-major x (L, N, H_in) in float64: (output, h_n, c_n).
    ``zero_between_layers``: every layer but the first reads zeros (dropout with p = 1)."""
    p = {n: t.detach().numpy().astype(np.float64) for n, t in m.named_parameters()}
    d = 2 if m.bidirectional else 1
    inp = x
    h_n, c_n = [], []
    for layer in range(m.num_layers):
        outs = []
        for direction in range(d):
            sfx = f"l{layer}" + ("_reverse" if direction else "")
            k = layer * d + direction
            h, c = h0[k], None if c0 is None else c0[k]
            seq = [None] * inp.shape[0]
            steps = range(inp.shape[0] - 1, -1, -1) if direction else range(inp.shape[0])
            for t in steps:
                h, c = np_cell(m.mode, inp[t], h, c, p[f"weight_ih_{sfx}"],
                               p[f"weight_hh_{sfx}"], p.get(f"bias_ih_{sfx}"),
                               p.get(f"bias_hh_{sfx}"), p.get(f"weight_hr_{sfx}"))
                seq[t] = h
            outs.append(np.stack(seq))
            h_n.append(h)
            c_n.append(c)
        inp = np.concatenate(outs, -1)
        if zero_between_layers and layer < m.num_layers - 1:
            inp = np.zeros_like(inp)
    return inp, np.stack(h_n), (np.stack(c_n) if c0 is not None else None)


# ---------------------------------------------------------------- helpers
_CLASSES = {"RNN_TANH": (nn.RNN, {}), "RNN_RELU": (nn.RNN, {"nonlinearity": "relu"}),
            "LSTM": (nn.LSTM, {}), "GRU": (nn.GRU, {})}


def _module(mode: str, input_size: int, hidden_size: int, **kw):
    cls, extra = _CLASSES[mode]
    tgrad.manual_seed(0)
    return cls(input_size, hidden_size, dtype=tgrad.float64, **extra, **kw)


def _close(a, b, tol=1e-12):
    np.testing.assert_allclose(a.detach().numpy(), b, rtol=tol, atol=tol)


# (num_layers, bidirectional, batch_first, N (None: unbatched), L, H_in, H, bias, extra)
CONFIGS = [
    (1, False, False, 3, 5, 3, 4, True, {}),
    (2, True, False, 2, 4, 5, 3, True, {}),
    (2, False, True, 1, 3, 2, 5, True, {}),        # batch of 1, batch_first
    (1, True, True, None, 4, 3, 2, True, {}),      # unbatched, batch_first
    (2, True, False, None, 1, 3, 3, False, {}),    # unbatched, sequence of 1, no bias
    (2, True, True, 0, 3, 4, 3, True, {}),         # empty batch
    (1, False, False, 2, 1, 7, 1, False, {}),      # seq length 1, hidden size 1
]
LSTM_PROJ = [(2, True, False, 2, 4, 3, 5, True, {"proj_size": 2}),
             (1, False, True, None, 3, 2, 3, False, {"proj_size": 1})]


def _cases():
    for mode in _CLASSES:
        for cfg in CONFIGS + (LSTM_PROJ if mode == "LSTM" else []):
            yield pytest.param(mode, cfg, id=f"{mode}-{'-'.join(map(str, cfg[:8]))}"
                               + ("-proj" if cfg[8] else ""))


@pytest.mark.parametrize("mode,cfg", list(_cases()))
def test_layers_match_numpy(mode, cfg):
    layers, bi, bf, n, length, h_in, hidden, bias, extra = cfg
    m = _module(mode, h_in, hidden, num_layers=layers, bidirectional=bi, batch_first=bf,
                bias=bias, **extra)
    rng = np.random.default_rng(sum(v or 0 for v in cfg[:7]) + len(mode))
    d = 2 if bi else 1
    h_out = extra.get("proj_size", hidden)
    nb = 1 if n is None else n
    x = rng.standard_normal((length, nb, h_in))  # time-major reference layout
    h0 = rng.standard_normal((d * layers, nb, h_out))
    c0 = rng.standard_normal((d * layers, nb, hidden)) if mode == "LSTM" else None
    # what the module is given: batch_first / unbatched layouts
    xm = x[:, 0] if n is None else (x.transpose(1, 0, 2) if bf else x)

    def state(a):
        return tgrad.tensor(a[:, 0] if n is None else a)

    for given in (True, False):
        h0g = h0 if given else np.zeros_like(h0)
        c0g = None if c0 is None else (c0 if given else np.zeros_like(c0))
        ref_out, ref_h, ref_c = np_rnn(m, x, h0g, c0g)
        if mode == "LSTM":
            out, (h, c) = m(tgrad.tensor(xm), (state(h0), state(c0)) if given else None)
        else:
            out, h = m(tgrad.tensor(xm), state(h0) if given else None)
        if n is None:
            ref_out, ref_h = ref_out[:, 0], ref_h[:, 0]
            ref_c = None if ref_c is None else ref_c[:, 0]
        elif bf:
            ref_out = ref_out.transpose(1, 0, 2)
        assert out.shape == ref_out.shape and out.dtype is tgrad.float64
        _close(out, ref_out)
        _close(h, ref_h)
        if mode == "LSTM":
            _close(c, ref_c)


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
def test_cells_match_numpy(mode):
    cls = {"RNN_TANH": nn.RNNCell, "RNN_RELU": nn.RNNCell, "LSTM": nn.LSTMCell,
           "GRU": nn.GRUCell}[mode]
    kw = {"nonlinearity": "relu"} if mode == "RNN_RELU" else {}
    rng = np.random.default_rng(3)
    for bias in (True, False):
        tgrad.manual_seed(1)
        cell = cls(5, 3, bias=bias, dtype=tgrad.float64, **kw)
        p = {k: v.detach().numpy() for k, v in cell.named_parameters()}
        args = (p["weight_ih"], p["weight_hh"], p.get("bias_ih"), p.get("bias_hh"))
        for n in (4, 1, 0, None):
            nb = 1 if n is None else n
            x, h, c = (rng.standard_normal((nb, 5)), rng.standard_normal((nb, 3)),
                       rng.standard_normal((nb, 3)))
            for given in (True, False):
                hg, cg = (h, c) if given else (np.zeros_like(h), np.zeros_like(c))
                ref_h, ref_c = np_cell(mode, x, hg, cg, *args)
                sq = (lambda a: a[0]) if n is None else (lambda a: a)
                xt, ht, ct = tgrad.tensor(sq(x)), tgrad.tensor(sq(h)), tgrad.tensor(sq(c))
                if mode == "LSTM":
                    out_h, out_c = cell(xt, (ht, ct) if given else None)
                    _close(out_c, sq(ref_c))
                else:
                    out_h = cell(xt, ht if given else None)
                assert out_h.shape == sq(ref_h).shape
                _close(out_h, sq(ref_h))


def test_cell_loop_equals_layer():
    """An LSTMCell stepped over a sequence gives nn.LSTM's output when they share weights."""
    rng = np.random.default_rng(4)
    lstm = _module("LSTM", 3, 4)
    cell = nn.LSTMCell(3, 4, dtype=tgrad.float64)
    cell.load_state_dict({k[:-3]: v for k, v in lstm.state_dict().items()})
    x = tgrad.tensor(rng.standard_normal((5, 2, 3)))
    out, (h_n, c_n) = lstm(x)
    h = c = tgrad.zeros(2, 4, dtype=tgrad.float64)
    for t in range(5):
        h, c = cell(x[t], (h, c))
        _close(h, out[t].detach().numpy())
    _close(h_n[0], h.detach().numpy())
    _close(c_n[0], c.detach().numpy())


# ---------------------------------------------------------------- gradients
def _grad_inputs(m, rng, length, n, lstm):
    d = 2 if m.bidirectional else 1
    h_out = m.proj_size or m.hidden_size
    x = tgrad.tensor(rng.standard_normal((length, n, m.input_size)), requires_grad=True)
    h0 = tgrad.tensor(rng.standard_normal((d * m.num_layers, n, h_out)), requires_grad=True)
    c0 = tgrad.tensor(rng.standard_normal((d * m.num_layers, n, m.hidden_size)),
                      requires_grad=True) if lstm else None
    return x, h0, c0


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
def test_gradcheck_layers(mode):
    """d(output, h_n[, c_n]) / d(input, h_0[, c_0], a recurrent weight, a reverse weight)."""
    rng = np.random.default_rng(5)
    extra = {"proj_size": 1} if mode == "LSTM" else {}
    m = _module(mode, 2, 2, num_layers=2, bidirectional=True, **extra)
    x, h0, c0 = _grad_inputs(m, rng, 3, 2, mode == "LSTM")
    w, w_rev = m.weight_hh_l0, m.weight_ih_l1_reverse  # read by the module itself
    if mode == "LSTM":
        def f(x, h0, c0, w, w_rev):
            out, (h, c) = m(x, (h0, c0))
            return out, h, c
        assert gradcheck(f, (x, h0, c0, w, w_rev))
    else:
        def f(x, h0, w, w_rev):
            out, h = m(x, h0)
            return out, h
        assert gradcheck(f, (x, h0, w, w_rev))


@pytest.mark.parametrize("mode", ["RNN_RELU", "LSTM", "GRU"])
def test_gradcheck_cells(mode):
    rng = np.random.default_rng(6)
    cls = {"RNN_RELU": nn.RNNCell, "LSTM": nn.LSTMCell, "GRU": nn.GRUCell}[mode]
    tgrad.manual_seed(2)
    cell = cls(3, 2, dtype=tgrad.float64,
               **({"nonlinearity": "relu"} if mode == "RNN_RELU" else {}))
    x = tgrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    h = tgrad.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    c = tgrad.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    if mode == "LSTM":
        assert gradcheck(lambda x, h, c, w: cell(x, (h, c)), (x, h, c, cell.weight_ih))
    else:
        assert gradcheck(lambda x, h, w: cell(x, h), (x, h, cell.bias_hh))


def test_gradgradcheck_gru():
    """Double backward through the steps' node (its backward is a stack of tgrad ops)."""
    rng = np.random.default_rng(7)
    m = _module("GRU", 2, 2, bidirectional=True)
    x = tgrad.tensor(rng.standard_normal((3, 1, 2)), requires_grad=True)
    h0 = tgrad.tensor(rng.standard_normal((2, 1, 2)), requires_grad=True)
    assert gradgradcheck(lambda x, h0: m(x, h0)[0], (x, h0))


def test_backward_fills_every_parameter_grad():
    m = _module("LSTM", 3, 4, num_layers=2, bidirectional=True, proj_size=2)
    x = tgrad.randn(5, 2, 3, dtype=tgrad.float64)
    out, (h, c) = m(x)
    (out.sum() + h.sum() + c.sum()).backward()
    for name, p in m.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape, name
        assert float(p.grad.abs().sum()) > 0, name


# ---------------------------------------------------------------- dropout between layers
def test_dropout_between_layers():
    rng = np.random.default_rng(8)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.5)
    m = _module("LSTM", 3, 4, num_layers=3, dropout=1.0, bidirectional=True)
    x = rng.standard_normal((4, 2, 3))
    z = np.zeros((6, 2, 4))
    ref_out, ref_h, ref_c = np_rnn(m, x, z, z)
    m.eval()  # no dropout in evaluation
    out, (h, c) = m(tgrad.tensor(x))
    _close(out, ref_out)
    _close(h, ref_h)
    _close(c, ref_c)
    m.train()  # p = 1: layers 2 and 3 read zeros; the last layer's output is not dropped
    out, (h, c) = m(tgrad.tensor(x))
    ref_out, ref_h, ref_c = np_rnn(m, x, z, z, zero_between_layers=True)
    _close(out, ref_out)
    _close(h, ref_h)
    _close(c, ref_c)
    assert np.abs(ref_out).min() > 0
    m.dropout = 0.5  # a random mask: training output differs from evaluation's
    out_train = m(tgrad.tensor(x))[0].detach().numpy()
    m.eval()
    assert not np.allclose(out_train, m(tgrad.tensor(x))[0].detach().numpy())


# ---------------------------------------------------------------- parameters and init
def test_parameter_names_shapes_and_repr():
    m = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    expected = []
    for layer, h_in in ((0, 3), (1, 4)):
        for sfx in ("", "_reverse"):
            expected += [(f"weight_ih_l{layer}{sfx}", (20, h_in)),
                         (f"weight_hh_l{layer}{sfx}", (20, 2)), (f"bias_ih_l{layer}{sfx}", (20,)),
                         (f"bias_hh_l{layer}{sfx}", (20,)), (f"weight_hr_l{layer}{sfx}", (2, 5))]
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == expected
    assert list(m.state_dict()) == [n for n, _ in expected]
    assert [len(ws) for ws in m.all_weights] == [5] * 4
    assert m.all_weights[1][0] is m.weight_ih_l0_reverse
    g = nn.GRU(4, 3, bias=False)
    assert [(n, tuple(p.shape)) for n, p in g.named_parameters()] == \
        [("weight_ih_l0", (9, 4)), ("weight_hh_l0", (9, 3))]
    r = nn.RNN(2, 6, 3, "relu")
    assert r.nonlinearity == "relu" and r.mode == "RNN_RELU" and r.num_layers == 3
    assert [tuple(p.shape) for p in r.parameters()][4] == (6, 6)  # weight_ih_l1
    assert repr(nn.RNN(3, 4, 2, nonlinearity="relu", bias=False, batch_first=True,
                       dropout=0.5, bidirectional=True)) == \
        "RNN(3, 4, num_layers=2, bias=False, batch_first=True, dropout=0.5, bidirectional=True)"
    assert repr(nn.LSTM(3, 4, proj_size=2)) == "LSTM(3, 4, proj_size=2)"
    assert repr(nn.RNNCell(3, 4, bias=False, nonlinearity="relu")) == \
        "RNNCell(3, 4, bias=False, nonlinearity=relu)"
    assert repr(nn.GRUCell(3, 4)) == "GRUCell(3, 4)"
    c = nn.LSTMCell(3, 4, bias=False)
    assert [(n, tuple(p.shape)) for n, p in c.named_parameters()] == \
        [("weight_ih", (16, 3)), ("weight_hh", (16, 4))]
    assert c.bias_ih is None and c.bias_hh is None


@pytest.mark.parametrize("make", [lambda: nn.LSTM(3, 7, 2, bidirectional=True),
                                  lambda: nn.GRUCell(3, 7)])
def test_init_is_uniform_in_registration_order(make):
    """U(-1/sqrt(H), 1/sqrt(H)) via init.uniform_, parameter by parameter in registration
    order from tgrad's generator (so one seed gives one model)."""
    tgrad.manual_seed(11)
    m = make()
    tgrad.manual_seed(11)
    bound = 1 / math.sqrt(7)
    for name, p in m.named_parameters():
        want = init.uniform_(tgrad.empty(p.shape), -bound, bound)
        assert np.array_equal(p.detach().numpy(), want.numpy()), name
        assert float(p.abs().max()) <= bound and p.dtype is tgrad.float32
    assert isinstance(m.reset_parameters(), type(None))


def test_dtype_conversion_and_state_dict_round_trip():
    rng = np.random.default_rng(9)
    m = nn.GRU(3, 4, 2).double()
    assert all(p.dtype is tgrad.float64 for p in m.parameters())
    x = tgrad.tensor(rng.standard_normal((3, 2, 3)))
    out, h = m(x)
    ref_out, ref_h, _ = np_rnn(m, x.numpy(), np.zeros((2, 2, 4)))
    _close(out, ref_out)
    m2 = nn.GRU(3, 4, 2, dtype=tgrad.float64)
    m2.load_state_dict(m.state_dict())
    _close(m2(x)[0], ref_out)
    f32 = nn.RNN(3, 4)  # float32 default dtype
    out32, _ = f32(tgrad.tensor(rng.standard_normal((2, 3)), dtype=tgrad.float32))
    assert out32.dtype is tgrad.float32 and out32.shape == (2, 4)


# ---------------------------------------------------------------- errors (PyTorch's texts)
@pytest.mark.parametrize("make,exc,msg", [
    (lambda: nn.RNN(3, 4, nonlinearity="gelu"), ValueError, "Unknown nonlinearity 'gelu'"),
    (lambda: nn.RNN(3, 4, proj_size=2), ValueError, "proj_size argument is only supported"),
    (lambda: nn.GRU(3, 4, proj_size=2), ValueError, "proj_size argument is only supported"),
    (lambda: nn.GRU(3, 4, projection=2), TypeError, "unexpected keyword argument"),
    (lambda: nn.LSTM(3, 4, proj_size=4), ValueError, "proj_size has to be smaller"),
    (lambda: nn.LSTM(3, 4, proj_size=-1), ValueError, "proj_size should be a positive"),
    (lambda: nn.RNN(3, 0), ValueError, "hidden_size must be greater than zero"),
    (lambda: nn.RNN(0, 3), ValueError, "input_size must be greater than zero"),
    (lambda: nn.RNN(3, 4.0), TypeError, "hidden_size should be of type int, got: float"),
    (lambda: nn.RNN(3, 4, 0), ValueError, "num_layers must be greater than zero"),
    (lambda: nn.LSTM(3, 4, 2, dropout=1.5), ValueError, "dropout should be a number in range"),
    (lambda: nn.GRU(3, 4, bias=1), TypeError, "bias should be of type bool, got: int"),
])
def test_constructor_errors(make, exc, msg):
    with pytest.raises(exc, match=msg):
        make()


def test_forward_errors():
    r = nn.RNN(3, 4, 2)
    x = tgrad.randn(5, 2, 3)
    cases = [
        (lambda: r(tgrad.randn(5, 2, 3, 1)), ValueError,
         "RNN: Expected input to be 2D or 3D, got 4D tensor instead"),
        (lambda: nn.GRU(3, 4)(tgrad.randn(3)), ValueError,
         "GRU: Expected input to be 2D or 3D, got 1D instead"),
        (lambda: r(tgrad.randn(5, 2, 7)), RuntimeError,
         r"input.size\(-1\) must be equal to input_size. Expected 3, got 7"),
        (lambda: r(x, tgrad.randn(2, 3, 4)), RuntimeError,
         r"Expected hidden size \(2, 2, 4\), got \[2, 3, 4\]"),
        (lambda: r(x, tgrad.randn(2, 4)), RuntimeError,
         "For batched 3-D input, hx should also be 3-D but got 2-D tensor"),
        (lambda: r(tgrad.randn(5, 3), tgrad.randn(2, 1, 4)), RuntimeError,
         "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"),
        (lambda: r(tgrad.randn(5, 3), tgrad.randn(3, 4)), RuntimeError,
         r"Expected hidden size \(2, 1, 4\), got \[3, 1, 4\]"),
        (lambda: r(x.double()), ValueError,
         r"RNN input dtype \(tgrad.float64\) does not match weight dtype \(tgrad.float32\)"),
        (lambda: r(x, tgrad.zeros(2, 2, 4, dtype=tgrad.float64)), RuntimeError,
         "hidden state dtype"),
        (lambda: r(tgrad.randn(0, 2, 3)), RuntimeError,
         "Expected sequence length to be larger than 0"),
        (lambda: r(x.numpy()), TypeError,
         "RNN: expected input to be a Tensor or a PackedSequence, got ndarray"),
    ]
    lstm = nn.LSTM(3, 4, 2, proj_size=2)
    cases += [
        (lambda: lstm(x, (tgrad.randn(2, 2, 4), tgrad.randn(2, 2, 4))), RuntimeError,
         r"Expected hidden\[0\] size \(2, 2, 2\), got \[2, 2, 4\]"),
        (lambda: lstm(x, (tgrad.randn(2, 2, 2), tgrad.randn(2, 2, 2))), RuntimeError,
         r"Expected hidden\[1\] size \(2, 2, 4\), got \[2, 2, 2\]"),
        (lambda: lstm(x, (tgrad.randn(2, 2), tgrad.randn(2, 2, 4))), RuntimeError,
         r"For batched 3-D input, hx and cx should also be 3-D but got \(2-D, 3-D\) tensors"),
        (lambda: lstm(x, tgrad.randn(2, 2, 2)), TypeError, r"hx must be a tuple \(h_0, c_0\)"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


def test_cell_errors():
    cell = nn.RNNCell(3, 4)
    lstm = nn.LSTMCell(3, 4)
    cases = [
        (lambda: cell(tgrad.randn(2, 5)), RuntimeError,
         "input has inconsistent input_size: got 5 expected 3"),
        (lambda: cell(tgrad.randn(2, 3), tgrad.randn(3, 4)), RuntimeError,
         "Input batch size 2 doesn't match hidden0 batch size 3"),
        (lambda: cell(tgrad.randn(2, 3), tgrad.randn(2, 5)), RuntimeError,
         "hidden0 has inconsistent hidden_size: got 5, expected 4"),
        (lambda: cell(tgrad.randn(1, 2, 3)), ValueError,
         "RNNCell: Expected input to be 1D or 2D, got 3D instead"),
        (lambda: cell(tgrad.randn(3), tgrad.randn(1, 1, 4)), ValueError,
         "RNNCell: Expected hidden to be 1D or 2D, got 3D instead"),
        (lambda: nn.RNNCell(3, 4, nonlinearity="foo")(tgrad.randn(2, 3)), RuntimeError,
         "Unknown nonlinearity: foo"),
        (lambda: cell(tgrad.randn(2, 3).double()), RuntimeError, "of one dtype"),
        (lambda: lstm(tgrad.randn(2, 3), (tgrad.randn(2, 4), tgrad.randn(2, 5))), RuntimeError,
         "hidden1 has inconsistent hidden_size: got 5, expected 4"),
        (lambda: lstm(tgrad.randn(2, 3), (tgrad.randn(2, 4), tgrad.randn(3, 4))), RuntimeError,
         "Input batch size 2 doesn't match hidden1 batch size 3"),
        (lambda: lstm(tgrad.randn(3), (tgrad.randn(4), tgrad.randn(1, 1, 4))), ValueError,
         r"LSTMCell: Expected hx\[1\] to be 1D or 2D, got 3D instead"),
        (lambda: nn.GRUCell(3, 4)(tgrad.randn(2, 5)), RuntimeError,
         "input has inconsistent input_size: got 5 expected 3"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


# ---------------------------------------------------------------- PackedSequence inputs
def _run_alone(m, seq, h0, c0):
    """m on one sequence (L, H_in) as a batch of one, in the module's layout, from h0 (and
    c0) (D layers, 1, H): (output (L, D H_out), h_n (D layers, H_out), c_n or None)."""
    x = seq.unsqueeze(0 if m.batch_first else 1)
    if c0 is not None:
        out, (h, c) = m(x, (h0, c0))
    else:
        (out, h), c = m(x, h0), None
    out = out[0] if m.batch_first else out[:, 0]
    return out, h[:, 0], None if c is None else c[:, 0]


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
@pytest.mark.parametrize("bi,batch_first,enforce_sorted", [
    (False, False, True), (True, False, False), (True, True, True), (False, True, False)])
def test_packed_input_matches_each_sequence_alone(mode, bi, batch_first, enforce_sorted):
    """The PackedSequence output holds every sequence's own outputs and h_n (c_n) is taken
    at its true last step (the reverse direction's: after its first step), as when each
    sequence runs alone; h_0 and h_n are in the caller's batch order."""
    rng = np.random.default_rng(11)
    extra = {"proj_size": 2} if mode == "LSTM" else {}
    m = _module(mode, 3, 4, num_layers=2, bidirectional=bi, batch_first=batch_first, **extra)
    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 4]
    seqs = [tgrad.tensor(rng.standard_normal((n, 3))) for n in lengths]
    d, h_out = (2 if bi else 1), extra.get("proj_size", 4)
    h0 = tgrad.tensor(rng.standard_normal((2 * d, 4, h_out)))
    c0 = tgrad.tensor(rng.standard_normal((2 * d, 4, 4))) if mode == "LSTM" else None
    padded = tgrad.stack([tgrad.cat([s, tgrad.zeros(5 - s.shape[0], 3, dtype=s.dtype)])
                          for s in seqs], 0 if batch_first else 1)
    packed = pack_padded_sequence(padded, lengths, batch_first=batch_first,
                                  enforce_sorted=enforce_sorted)
    if mode == "LSTM":
        out, (h_n, c_n) = m(packed, (h0, c0))
    else:
        (out, h_n), c_n = m(packed, h0), None
    assert isinstance(out, PackedSequence)
    assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    assert out.data.shape == (sum(lengths), d * h_out)
    if enforce_sorted:
        assert out.sorted_indices is None and out.unsorted_indices is None
    else:
        assert out.sorted_indices.tolist() == [1, 3, 0, 2]
        assert out.unsorted_indices.tolist() == [2, 0, 3, 1]
    assert h_n.shape == (2 * d, 4, h_out)
    res, res_lengths = pad_packed_sequence(out, batch_first=batch_first)
    assert res_lengths.tolist() == lengths
    for b, s in enumerate(seqs):
        ref_out, ref_h, ref_c = _run_alone(m, s, h0[:, b:b + 1],
                                            None if c0 is None else c0[:, b:b + 1])
        got = res[b] if batch_first else res[:, b]
        _close(got[:lengths[b]], ref_out.detach().numpy())
        _close(h_n[:, b], ref_h.detach().numpy())
        if c0 is not None:
            _close(c_n[:, b], ref_c.detach().numpy())


def test_packed_lstm_matches_numpy_recurrence():
    """A bidirectional LSTM over pack_sequence(enforce_sorted=False) against the NumPy
    float64 recurrence of each sequence (zero initial states: h_0 omitted)."""
    rng = np.random.default_rng(12)
    m = _module("LSTM", 2, 3, bidirectional=True)
    lengths = [2, 4, 1]
    seqs = [rng.standard_normal((n, 2)) for n in lengths]
    out, (h_n, c_n) = m(pack_sequence([tgrad.tensor(s) for s in seqs], enforce_sorted=False))
    res, _ = pad_packed_sequence(out)
    for b, s in enumerate(seqs):
        zeros = np.zeros((2, 1, 3))
        ref_out, ref_h, ref_c = np_rnn(m, s[:, None, :], zeros, zeros)
        _close(res[:lengths[b], b], ref_out[:, 0])
        _close(res[lengths[b]:, b], np.zeros((4 - lengths[b], 6)))  # padding, not outputs
        _close(h_n[:, b], ref_h[:, 0])
        _close(c_n[:, b], ref_c[:, 0])


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_packed_gradcheck(mode):
    """d(packed output data, h_n[, c_n]) / d(the sequences, h_0[, c_0], a weight) through
    pack_sequence(enforce_sorted=False) and a 2-layer bidirectional module."""
    rng = np.random.default_rng(13)
    m = _module(mode, 2, 2, num_layers=2, bidirectional=True)
    a, b, c = (tgrad.tensor(rng.standard_normal((n, 2)), requires_grad=True) for n in (2, 3, 1))
    h0 = tgrad.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)
    w = m.weight_hh_l1_reverse
    if mode == "LSTM":
        c0 = tgrad.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)

        def f(a, b, c, h0, c0, w):
            out, (h, cn) = m(pack_sequence([a, b, c], enforce_sorted=False), (h0, c0))
            return out.data, h, cn
        assert gradcheck(f, (a, b, c, h0, c0, w))
    else:
        def f(a, b, c, h0, w):
            out, h = m(pack_sequence([a, b, c], enforce_sorted=False), h0)
            return out.data, h
        assert gradcheck(f, (a, b, c, h0, w))
        assert gradgradcheck(lambda a, b, h0: f(a, b, c, h0, w), (a, b, h0))


def test_packed_input_errors():
    r = nn.RNN(3, 4)
    packed = pack_sequence([tgrad.randn(3, 3), tgrad.randn(2, 3)])
    cases = [
        (lambda: r(packed, tgrad.randn(1, 3, 4)), RuntimeError,
         r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"),
        (lambda: r(pack_sequence([tgrad.randn(3, 5)])), RuntimeError,
         r"input.size\(-1\) must be equal to input_size. Expected 3, got 5"),
        (lambda: r(PackedSequence(tgrad.randn(5, 1, 3), packed.batch_sizes)), RuntimeError,
         "input must have 2 dimensions, got 3"),
        (lambda: r(packed.double()), ValueError, "RNN input dtype"),
        (lambda: nn.LSTM(3, 4)(packed, tgrad.randn(1, 2, 4)), TypeError,
         r"hx must be a tuple \(h_0, c_0\)"),
        (lambda: nn.LSTM(3, 4)(packed, (tgrad.randn(1, 2, 4), tgrad.randn(1, 2, 3))),
         RuntimeError, r"Expected hidden\[1\] size \(1, 2, 4\), got \[1, 2, 3\]"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()
