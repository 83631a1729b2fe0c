"""One (layer, direction) of nn.RNN / nn.LSTM / nn.GRU on the CPU as ONE autograd node.

The per-step path (tgrad/nn/_rnn.py ``_direction``) records per step an addmm for
h w_hh^T + b_hh and a fused gate node (tgrad/nn/_rnn_fused.py); at small sizes its time is
the nodes' Python cost. ``_RnnLayerCpu`` runs the same recursion on the NumPy arrays:

forward: gi = linear(x, w_ih, b_ih) (the same op as the per-step path, run unrecorded);
    then per step t (forward order, or T-1 .. 0 for the reverse direction), on the first
    b_t rows of the state (b_t = N unpacked, batch_sizes[t] packed; see _rnn.py's module
    docstring for the packed layout): gh = h w_hh^T + b_hh and the gates exactly as
    ``_FusedLSTMCell`` / ``_FusedGRUCell`` (or tanh / relu of gi + gh for the RNN) compute
    them, the same NumPy calls in the same order, so outputs are the per-step path's bits.
    Saved per step (rows of (sum b_t, .) workspaces): h_{t-1} (hp), and LSTM c_{t-1} and
    act = [i, f, g, o, tanh(c_t)] (+ the unprojected h with proj_size), GRU [r, z, n] and
    gh's n block, RNN h_t.
backward (BPTT over the workspaces, steps in the reverse order of the forward): per step
    dh_t = d out_t + d h_t(from step t+1), the cell's backward as the fused cells' (the
    same formulas and order) giving d gates (b_t, G H) and d h_{t-1} = dgh w_hh (+ dh z for
    the GRU), d c_{t-1} = dc_t f; then the weight gradients as ONE product each over all
    steps: dW_hh = dgh^T hp, db_hh = sum dgh, dW_ih = dgi^T x, db_ih = sum dgi, dx = dgi w_ih
    (dgi, dgh (sum b_t, G H) stacked; for the LSTM and RNN dgi = dgh), with projections
    dW_hr = dhp^T h_raw and dh_raw = dhp w_hr.

The per-step d h / d c / d x are the per-step path's bits (the same sums in the same
order); the weight and bias gradients sum all steps in one product instead of one per step,
so they differ from it in the last bits. Under create_graph or a forward-AD level in the
backward, the backward rebuilds the per-step path from the saved inputs and differentiates
it (so double backward is the per-step path's). ``usable`` says when the node applies
(CPU, float32/64, no autocast, forward AD, profiler or selective checkpointing).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd import profiler_hooks
from tgrad.autograd.function import Function, differentiable_formula, fw_level
from tgrad.autograd.grad_mode import STATE, enable_grad
from tgrad.autograd.node import SavedTensor
from tgrad.backends.numpy import _sigmoid
from tgrad.backends.numpy import relu_backward as _relu_backward
from tgrad.backends.numpy import sigmoid_backward as _sig_bw
from tgrad.backends.numpy import tanh_backward as _tanh_bw
from tgrad.ops._common import wrap
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor

__all__ = ["usable", "rnn_layer"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_FLOATS = (dtypes.float32, dtypes.float64)


# ---------------------------------------------------------------- when the node applies
def usable(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: tuple,
           sizes: list | None) -> bool:
    """The NumPy node for this (layer, direction): CPU float32/64 dense tensors of one
    dtype, shapes consistent (else the per-step path raises its errors), no autocast,
    forward-AD level, profiler or selective checkpointing (there the per-step path's nodes
    are what is seen)."""
    if (profiler_hooks.ACTIVE is not None or fw_level() is not None
            or STATE.autocast is not None or STATE.sac is not None):
        return False
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    ts = [t for t in (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr) if t is not None]
    dt = x.dtype
    for t in ts:
        if not isinstance(t, Tensor) or t.dtype is not dt or t.device.type != "cpu" or t._sparse:
            return False
    if dt not in _FLOATS or w_ih.ndim != 2 or w_hh.ndim != 2 or h0.ndim != 2:
        return False
    gh, hout = w_hh.shape
    hs = gh // _GATES[mode]
    n = x.shape[1] if sizes is None else sizes[0]
    return (x.ndim == (3 if sizes is None else 2) and x.shape[-1] == w_ih.shape[1]
            and w_ih.shape[0] == gh == hs * _GATES[mode]
            and all(b is None or b.shape == (gh,) for b in (b_ih, b_hh))
            and h0.shape == (n, hout)
            and (c0 is None) == (mode != "LSTM") and (c0 is None or c0.shape == (n, hs))
            and (w_hr.shape == (hout, hs) if w_hr is not None else hout == hs))


def _acc(a, b):
    """a + b where either may be None (no gradient)."""
    return b if a is None else (a if b is None else np.add(a, b))


def _layout(sizes: list | None, shape: tuple) -> tuple:
    """(batch sizes per step, row offsets per step) of gi's rows (sum b_t, G H)."""
    if sizes is None:
        length, n = shape[0], shape[1]
        return [n] * length, [t * n for t in range(length)]
    offs, total = [], 0
    for b in sizes:
        offs.append(total)
        total += b
    return list(sizes), offs


# ---------------------------------------------------------------- forward
def _forward(mode: str, gi, sizes: list, offs: list, h0, c0, w_hh, b_hh, w_hr,
             reverse: bool, keep: bool) -> tuple:
    """(out (sum b_t, H_out), h_n (B, H_out), c_n (B, H) or None, ws dict or None) of one
    direction over gi (sum b_t, G H); ws: the workspaces the backward reads (``keep``)."""
    dt, total = gi.dtype, gi.shape[0]
    hs, hout = w_hh.shape[0] // _GATES[mode], w_hh.shape[1]
    w_t = w_hh.T  # (the per-step path's w_hh.t() view: the same BLAS operand)
    w_hr_t = None if w_hr is None else w_hr.T
    h = np.array(h0, dtype=dt, order="C")  # state (B, H_out) (rows [:b_t] run at step t)
    c = None if c0 is None else np.array(c0, dtype=dt, order="C")
    out = np.empty((total, hout), dt)
    ws = None
    if keep:
        ws = {"hp": np.empty((total, hout), dt)}
        if mode == "LSTM":
            ws.update(cp=np.empty((total, hs), dt), act=np.empty((total, 5 * hs), dt))
            if w_hr is not None:
                ws["hr"] = np.empty((total, hs), dt)
        elif mode == "GRU":
            ws.update(ghn=np.empty((total, hs), dt), rzn=np.empty((total, 3 * hs), dt))
        else:
            ws["y"] = np.empty((total, hs), dt)
    zero = dt.type(0)
    for t in (reversed(range(len(sizes))) if reverse else range(len(sizes))):
        b, r0 = sizes[t], offs[t]
        rows = slice(r0, r0 + b)
        hb = h[:b]
        gh = np.matmul(hb, w_t)  # Addmm: matmul, then + bias
        if b_hh is not None:
            gh = np.add(gh, b_hh)
        gt = gi[rows]
        if keep:
            ws["hp"][rows] = hb
        if mode == "LSTM":
            cb = c[:b]
            h2, c2 = _lstm_step(gt, gh, cb, hs, ws, rows)
            if w_hr is not None:
                if keep:
                    ws["hr"][rows] = h2
                h2 = np.matmul(h2, w_hr_t)
            c[:b] = c2
        elif mode == "GRU":
            h2 = _gru_step(gt, gh, hb, hs, ws, rows)
        else:
            pre = np.add(gt, gh)
            h2 = np.maximum(pre, zero) if mode == "RNN_RELU" else np.tanh(pre)
            if keep:
                ws["y"][rows] = h2
        h[:b] = h2
        out[rows] = h2
    return out, h, c, ws


def _lstm_step(gt, gh, c, hs: int, ws, rows) -> tuple:
    """(h', c'): _FusedLSTMCell.forward's operations; act into ws (when kept)."""
    a = np.add(gt, gh)
    s = _sigmoid(a)  # (elementwise: i, f and o as the cell's two calls; its g block unused)
    i_f, o = s[:, :2 * hs], s[:, 3 * hs:]
    i, f = i_f[:, :hs], i_f[:, hs:]
    g = np.tanh(a[:, 2 * hs:3 * hs])
    c2 = np.add(np.multiply(f, c), np.multiply(i, g))
    tc = np.tanh(c2)
    if ws is not None:
        ws["cp"][rows] = c
        act = ws["act"][rows]
        act[:, :2 * hs] = i_f
        act[:, 2 * hs:3 * hs] = g
        act[:, 3 * hs:4 * hs] = o
        act[:, 4 * hs:] = tc
    return np.multiply(o, tc), c2


def _gru_step(gt, gh, h, hs: int, ws, rows):
    """h': _FusedGRUCell.forward's operations; [r, z, n] and gh's n block into ws."""
    rz = _sigmoid(np.add(gt[:, :2 * hs], gh[:, :2 * hs]))
    r, z = rz[:, :hs], rz[:, hs:]
    n = np.tanh(np.add(gt[:, 2 * hs:], np.multiply(r, gh[:, 2 * hs:])))
    if ws is not None:
        ws["ghn"][rows] = gh[:, 2 * hs:]
        rzn = ws["rzn"][rows]
        rzn[:, :2 * hs] = rz
        rzn[:, 2 * hs:] = n
    return np.add(n, np.multiply(z, np.subtract(h, n)))


# ---------------------------------------------------------------- backward (BPTT)
def _backward(mode: str, ws: dict, sizes: list, offs: list, d_out, dh_n, dc_n, w_hh, w_hr,
              reverse: bool, shapes: tuple) -> tuple:
    """(dgi, dgh (sum b_t, G H), dhp (sum b_t, H_out) or None, dh0 (B, H_out), dc0 (B, H)
    or None) from the output gradients (None: not used). dhp: the gradient at the
    projected h of each step (for dW_hr); dgi is dgh except for the GRU."""
    (total, gates), (bsz, hout), hs = shapes
    dt = w_hh.dtype
    dh = np.zeros((bsz, hout), dt) if dh_n is None else np.array(dh_n, dtype=dt, order="C")
    dc = None
    if mode == "LSTM":
        dc = np.zeros((bsz, hs), dt) if dc_n is None else np.array(dc_n, dtype=dt, order="C")
    dgh = np.empty((total, gates), dt)
    dgi = np.empty((total, gates), dt) if mode == "GRU" else dgh
    dhp = np.empty((total, hout), dt) if w_hr is not None else None
    # dh_n / dc_n rows that a step never reached are themselves (dh0, dc0). GRU: the
    # per-step path sums dh_{t-1} in its engine's order of arrival, (d out + dh z) + dgh w_hh,
    # or d out + (dh z + dgh w_hh) where the packed state was sliced or extended between
    # the steps (one node passes the last two on); ``pending`` holds dgh w_hh meanwhile.
    pending = None
    for t in (range(len(sizes)) if reverse else reversed(range(len(sizes)))):
        b, r0 = sizes[t], offs[t]
        rows = slice(r0, r0 + b)
        if pending is not None and pending.shape[0] != b:
            np.add(dh[:pending.shape[0]], pending, out=dh[:pending.shape[0]])
            pending = None
        dht = dh[:b] if d_out is None else np.add(d_out[rows], dh[:b])
        if pending is not None:
            dht = np.add(dht, pending)
        if mode == "LSTM":
            if dhp is not None:
                dhp[rows] = dht
                dht = np.matmul(dht, w_hr)
            dc[:b] = _lstm_step_bw(ws, rows, dht, dc[:b], hs, dgh[rows])
            dh[:b] = np.matmul(dgh[rows], w_hh)
        elif mode == "GRU":
            dh[:b] = _gru_step_bw(ws, rows, dht, hs, dgi[rows], dgh[rows])
            pending = np.matmul(dgh[rows], w_hh)
        else:
            y = ws["y"][rows]
            dgh[rows] = _relu_backward(dht, y) if mode == "RNN_RELU" else _tanh_bw(dht, y)
            dh[:b] = np.matmul(dgh[rows], w_hh)
    if pending is not None:
        np.add(dh[:pending.shape[0]], pending, out=dh[:pending.shape[0]])
    return dgi, dgh, dhp, dh, dc


def _lstm_step_bw(ws: dict, rows, dh, dc, hs: int, d_gates):
    """_FusedLSTMCell.backward (dh, dc given): d gates into d_gates (b, 4H); -> dc_{t-1}."""
    act, c = ws["act"][rows], ws["cp"][rows]
    i, f, g, o, tc = (act[:, k * hs:(k + 1) * hs] for k in range(5))
    dc_t = np.add(dc, _tanh_bw(np.multiply(dh, o), tc))
    # sigmoid_backward of the i, f, o blocks at once (elementwise: (d y) (1 - y)), then g's
    np.multiply(dc_t, g, out=d_gates[:, :hs])
    np.multiply(dc_t, c, out=d_gates[:, hs:2 * hs])
    np.multiply(dh, tc, out=d_gates[:, 3 * hs:])
    y = act[:, :4 * hs]
    np.multiply(d_gates, y, out=d_gates)
    np.multiply(d_gates, 1 - y, out=d_gates)
    d_gates[:, 2 * hs:3 * hs] = _tanh_bw(np.multiply(dc_t, i), g)
    return np.multiply(dc_t, f)


def _gru_step_bw(ws: dict, rows, dh, hs: int, d_gi, d_gh):
    """_FusedGRUCell.backward: d gi, d gh into d_gi, d_gh (b, 3H); -> dh z (the direct part
    of dh_{t-1})."""
    rzn, h = ws["rzn"][rows], ws["hp"][rows]
    r, z, n = rzn[:, :hs], rzn[:, hs:2 * hs], rzn[:, 2 * hs:]
    dhz = np.multiply(dh, z)
    da_n = _tanh_bw(np.subtract(dh, dhz), n)
    da_z = _sig_bw(np.multiply(dh, np.subtract(h, n)), z)
    da_r = _sig_bw(np.multiply(da_n, ws["ghn"][rows]), r)
    d_gi[:, :hs] = d_gh[:, :hs] = da_r
    d_gi[:, hs:2 * hs] = d_gh[:, hs:2 * hs] = da_z
    d_gi[:, 2 * hs:] = da_n
    d_gh[:, 2 * hs:] = np.multiply(da_n, r)
    return dhz


# ---------------------------------------------------------------- the node
class _RnnLayerCpu(Function):
    """(out, h_n[, c_n]) of one (layer, direction) from x, h0, c0 and its weights (module
    docstring); out (L, N, H_out) or packed (sum b_t, H_out), h_n (N, H_out), c_n (N, H)."""

    name = "_rnn_layer_cpu"
    node_name = "RnnLayerBackward0"
    released_attributes = ("ws", "args", "arg_saves")

    @staticmethod
    def forward(ctx, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, sizes, reverse):
        from tgrad.nn.functional import linear
        gi = linear(x, w_ih, b_ih)._data  # (not recorded: the node's forward)
        gates = gi.shape[-1]
        gi2 = gi.reshape(-1, gates)
        steps, offs = _layout(sizes, gi.shape)
        keep = True in ctx.needs_input_grad
        with np.errstate(all="ignore"):
            out, h_n, c_n, ws = _forward(mode, gi2, steps, offs, h0._data,
                                         None if c0 is None else c0._data, w_hh._data,
                                         None if b_hh is None else b_hh._data,
                                         None if w_hr is None else w_hr._data, reverse, keep)
        dev = x.device
        res = (wrap(out.reshape(gi.shape[:-1] + (out.shape[1],)), dev), wrap(h_n, dev))
        if c_n is not None:
            res += (wrap(c_n, dev),)
        if keep:
            need_x, need_w = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
            ctx.save_for_backward(x if need_w else None, w_ih if need_x else None, w_hh,
                                  w_hr)
            ctx.ws, ctx.steps, ctx.offs = ws, steps, offs
            ctx.args = (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode, sizes, reverse)
            # each input's version now: the create_graph rebuild recomputes from them
            ctx.arg_saves = tuple(None if t is None else SavedTensor(t, False)
                                  for t in (x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr))
        return res

    @staticmethod
    def backward(ctx, d_out, dh_n, dc_n=None):
        x_s, w_ih_s, w_hh, w_hr = ctx.saved_tensors
        if differentiable_formula():
            return _rebuilt_grads(ctx, (d_out, dh_n, dc_n))
        x, h0, c0, w_ih, _, b_ih, b_hh, _, mode, sizes, reverse = ctx.args
        need = ctx.needs_input_grad
        dev, hs = w_hh.device, w_hh.shape[0] // _GATES[mode]
        total, gates = sum(ctx.steps), w_hh.shape[0]
        with np.errstate(all="ignore"):
            dgi, dgh, dhp, dh0, dc0 = _backward(
                mode, ctx.ws, ctx.steps, ctx.offs,
                None if d_out is None else d_out._data.reshape(-1, w_hh.shape[1]),
                None if dh_n is None else dh_n._data,
                None if dc_n is None else dc_n._data, w_hh._data,
                None if w_hr is None else w_hr._data, reverse,
                ((total, gates), tuple(h0.shape), hs))
            grads = _weight_grads(need, ctx.ws, x_s, w_ih_s, dgi, dgh, dhp, w_hr is not None,
                                  dev)
        g_x, g_wih, g_bih, g_whh, g_bhh, g_whr = grads
        return (None if g_x is None else wrap(g_x.reshape(x.shape), dev),
                wrap(dh0, dev) if need[1] else None,
                wrap(dc0, dev) if need[2] else None,
                _w(g_wih, dev), _w(g_whh, dev), _w(g_bih, dev), _w(g_bhh, dev), _w(g_whr, dev),
                None, None, None)


_RnnLayerCpu._backward_cls.materialize_grads = False  # None: an output nobody used


def _w(a, dev):
    return None if a is None else wrap(a, dev)


def _weight_grads(need: tuple, ws: dict, x, w_ih, dgi, dgh, dhp, proj: bool,
                  x_dev) -> tuple:
    """(dx, dW_ih, db_ih, dW_hh, db_hh, dW_hr), one product / sum each over all steps:
    dx = dgi w_ih, dW_ih = dgi^T x, dW_hh = dgh^T hp, dW_hr = dhp^T h_raw, db = sums of
    rows (None where not needed)."""
    g_x = np.matmul(dgi, w_ih._data) if need[0] else None
    g_wih = np.matmul(dgi.T, x._data.reshape(-1, x.shape[-1])) if need[3] else None
    g_whh = np.matmul(dgh.T, ws["hp"]) if need[4] else None
    g_bih = _rows_sum(dgi, x_dev) if need[5] else None
    g_bhh = _rows_sum(dgh, x_dev) if need[6] else None
    g_whr = np.matmul(dhp.T, ws["hr"]) if proj and need[7] else None
    return g_x, g_wih, g_bih, g_whh, g_bhh, g_whr


def _rows_sum(g, dev):
    """g (R, C) summed over its rows: linear's bias gradient (sum_to, unrecorded)."""
    return sum_to(wrap(g, dev), g.shape[1:])._data


def _rebuilt_grads(ctx, grads: tuple) -> tuple:
    """create_graph (or forward AD over the backward): the per-step path rebuilt from the
    inputs and differentiated with create_graph, so the gradients are differentiable. The
    inputs must be unchanged since the forward (their versions are checked)."""
    from tgrad.autograd import grad
    from tgrad.nn._rnn import _layer_steps
    mode, sizes, reverse = ctx.args[8:]
    # (an input changed in place since the forward raises PyTorch's in-place error)
    inputs = tuple(None if s is None else s.unpack(ctx) for s in ctx.arg_saves)
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr = inputs
    need = [k for k in range(8) if ctx.needs_input_grad[k]]
    with enable_grad():
        outs = _layer_steps(mode, x, h0, c0, (w_ih, w_hh, b_ih, b_hh, w_hr), sizes, reverse)
    pairs = [(o, g) for o, g in zip(outs, grads) if o is not None and g is not None]
    res = [None] * 11
    if pairs:
        got = grad([o for o, _ in pairs], [inputs[k] for k in need], [g for _, g in pairs],
                   create_graph=True, allow_unused=True)
        for k, g in zip(need, got):
            res[k] = g
    return tuple(res)


def rnn_layer(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: tuple,
              sizes: list | None, reverse: bool) -> tuple:
    """(out, h_n, c_n or None) of one (layer, direction) as one node (``usable`` first)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    res = _RnnLayerCpu.apply(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, mode,
                             None if sizes is None else tuple(sizes), reverse)
    return res if len(res) == 3 else (res[0], res[1], None)
