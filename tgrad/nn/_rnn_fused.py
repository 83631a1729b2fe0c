"""The LSTM and GRU cells' pointwise part as one node each (PyTorch's
``_thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``): what follows the two matmuls of a step.

As compositions of tgrad ops a step recorded about a dozen nodes (add, chunk, sigmoid x3,
tanh x2, mul x3, add ...), and a sequence's time went to recording and running them. Here the
forward and backward run the same backend primitives (``unary``, ``binary``,
``sigmoid_backward``, ``tanh_backward``, ``cat``: NumPy on the CPU, Triton kernels on the
GPU) in the order the composite's nodes did, so values and gradients are the composite's,
bit for bit.

Shapes: gi, gh (N, G H) (x w_ih^T + b_ih and h w_hh^T + b_hh), c and h (N, H); G = 4 for the
LSTM (gates i, f, g, o), 3 for the GRU (r, z, n).

LSTM: a = gi + gh; i, f, o = sigmoid(a_i, a_f, a_o), g = tanh(a_g); c' = f c + i g;
    tc = tanh(c'); h' = o tc; act = [i, f, g, o, tc] (N, 5 H).
  Backward, from dh', dc' (and d act): dc_t = dc' + dh' o (1 - tc^2);
    da_i = dc_t g i (1 - i), da_f = dc_t c f (1 - f), da_g = dc_t i (1 - g^2),
    da_o = dh' tc o (1 - o) (each + d act's share times the same activation derivative;
    d act's tc share adds to dc_t through 1 - tc^2); d gi = d gh = [da_i, da_f, da_g, da_o];
    dc = dc_t f.
GRU: ws = [r, z, n] with r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
    n = tanh(gi_n + r gh_n); h' = n + z (h - n).
  Backward, from dh' (and d ws): dn = dh' - dh' z; da_n = dn (1 - n^2);
    da_z = dh' (h - n) z (1 - z); da_r = da_n gh_n r (1 - r); d gi = [da_r, da_z, da_n];
    d gh = [da_r, da_z, da_n r]; dh = dh' z.

The activations (act, ws) are a third / second output of the node, as PyTorch's
"workspace": saved as outputs, they are what the backward reads, and under ``create_graph``
(double backward, forward-mode AD) the backward is the formula above in tgrad ops on them,
differentiable again: its gradients with respect to act come back into this node's backward
as d act / d ws. Saved per step: the LSTM's act and c, the GRU's ws, gh and h (the step's
matmul saves h anyway; the composite kept gh's n block), about what the composite saved,
and as there not c': changing the LSTM's c' in place after its step does not break the
backward (PyTorch's CPU cell allows it too).
"""

from __future__ import annotations

from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE
from tgrad.ops._common import backend_of, wrap
from tgrad.ops.creation import zeros_like
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["lstm_pointwise", "gru_pointwise", "fusable"]


def fusable(*tensors) -> bool:
    """The fused nodes take floating tensors of one dtype on one device (the composite
    handles mixed dtypes by promotion, and complex or other inputs by its ops' rules)."""
    t0 = tensors[0]
    dt, dev = t0.dtype, t0.device
    return dt.is_floating_point and all(t.dtype is dt and t.device is dev for t in tensors)


def _cols(be, x, k: int, h: int, n: int = 1):
    """Columns [k h, (k + n) h) of a 2-D backend array (a view)."""
    return be.basic_index(x, (slice(None), slice(k * h, (k + n) * h)))


class _FusedLSTMCell(Function):
    """(h', c', act) = the LSTM step's pointwise part (module docstring)."""

    name = "_thnn_fused_lstm_cell"
    node_name = "ThnnFusedLstmCellBackward0"

    @staticmethod
    def forward(ctx, gi: Tensor, gh: Tensor, c: Tensor):
        be, hs = backend_of(gi), c.shape[-1]
        a = be.binary("add", gi._data, gh._data)
        i_f = be.unary("sigmoid", _cols(be, a, 0, hs, 2))
        i, f = _cols(be, i_f, 0, hs), _cols(be, i_f, 1, hs)
        g = be.unary("tanh", _cols(be, a, 2, hs))
        o = be.unary("sigmoid", _cols(be, a, 3, hs))
        c2 = be.binary("add", be.binary("mul", f, c._data), be.binary("mul", i, g))
        tc = be.unary("tanh", c2)
        dev = gi.device
        h2, c2 = wrap(be.binary("mul", o, tc), dev), wrap(c2, dev)
        if True not in ctx.needs_input_grad:  # not recorded (no_grad): no workspace
            return h2, c2, None
        act = wrap(be.cat([i_f, g, o, tc], 1), dev)
        ctx.save_for_backward(c, act)
        return h2, c2, act

    @staticmethod
    def backward(ctx, dh, dc, dact):
        c, act = ctx.saved_tensors
        if STATE.enabled:  # create_graph: the formula in tgrad ops, differentiable again
            return _lstm_backward_ops(c, act, dh, dc, dact)
        be, hs, dev = backend_of(act), c.shape[-1], act.device
        act_d, c_d = act._data, c._data
        i, f, g, o, tc = (_cols(be, act_d, k, hs) for k in range(5))
        dh_d = None if dh is None else dh._data
        dc_d = None if dc is None else dc._data
        if dact is not None:  # (only a double backward sends one): d tc joins dc'
            d_tc = be.tanh_backward(_cols(be, dact._data, 4, hs), tc)
            dc_d = d_tc if dc_d is None else be.binary("add", dc_d, d_tc)
        if dh_d is None and dc_d is None:
            dc_t = be.full(c_d.shape, 0, c_d.dtype)
        else:
            dc_t = None if dh_d is None else be.tanh_backward(be.binary("mul", dh_d, o), tc)
            if dc_d is not None:
                dc_t = dc_d if dc_t is None else be.binary("add", dc_d, dc_t)
        d_o = (be.sigmoid_backward(be.binary("mul", dh_d, tc), o) if dh_d is not None
               else be.full(c_d.shape, 0, c_d.dtype))
        d_gates = be.cat([be.sigmoid_backward(be.binary("mul", dc_t, g), i),
                          be.sigmoid_backward(be.binary("mul", dc_t, c_d), f),
                          be.tanh_backward(be.binary("mul", dc_t, i), g), d_o], 1)
        if dact is not None:  # (only a double backward sends one)
            d_gates = be.binary("add", d_gates, _activation_grads(be, dact._data, act_d, hs))
        d_gates = wrap(d_gates, dev)
        return d_gates, d_gates, wrap(be.binary("mul", dc_t, f), dev)


_FusedLSTMCell._backward_cls.materialize_grads = False  # None: an output nobody used


def _activation_grads(be, d, act, hs: int):
    """d through act's gate blocks = [sigmoid, sigmoid, tanh, sigmoid] of the gates
    (N, 4H; act's tc block is not a gate's)."""
    return be.cat([be.sigmoid_backward(_cols(be, d, 0, hs, 2), _cols(be, act, 0, hs, 2)),
                   be.tanh_backward(_cols(be, d, 2, hs), _cols(be, act, 2, hs)),
                   be.sigmoid_backward(_cols(be, d, 3, hs), _cols(be, act, 3, hs))], 1)


def _lstm_backward_ops(c, act, dh, dc, dact):
    """The LSTM backward (module docstring) in tgrad ops on the saved c and act."""
    i, f, g, o, tc = act.chunk(5, 1)
    if dact is not None:
        da_i, da_f, da_g, da_o, da_tc = dact.chunk(5, 1)
        dc = da_tc * (1 - tc * tc) if dc is None else dc + da_tc * (1 - tc * tc)
    if dh is None:
        dc_t = zeros_like(c) if dc is None else dc
        d_o = zeros_like(c)
    else:
        dc_t = dh * o * (1 - tc * tc)
        dc_t = dc_t if dc is None else dc + dc_t
        d_o = dh * tc * o * (1 - o)
    d_gates = cat([dc_t * g * i * (1 - i), dc_t * c * f * (1 - f), dc_t * i * (1 - g * g),
                   d_o], 1)
    if dact is not None:
        d_gates = d_gates + cat([da_i * i * (1 - i), da_f * f * (1 - f), da_g * (1 - g * g),
                                 da_o * o * (1 - o)], 1)
    return d_gates, d_gates, dc_t * f


class _FusedGRUCell(Function):
    """(h', ws) = the GRU step's pointwise part (module docstring)."""

    name = "_thnn_fused_gru_cell"
    node_name = "ThnnFusedGruCellBackward0"

    @staticmethod
    def forward(ctx, gi: Tensor, gh: Tensor, h: Tensor):
        be, hs = backend_of(gi), h.shape[-1]
        gi_d, gh_d = gi._data, gh._data
        rz = be.unary("sigmoid", be.binary("add", _cols(be, gi_d, 0, hs, 2),
                                           _cols(be, gh_d, 0, hs, 2)))
        r, z = _cols(be, rz, 0, hs), _cols(be, rz, 1, hs)
        n = be.unary("tanh", be.binary("add", _cols(be, gi_d, 2, hs),
                                       be.binary("mul", r, _cols(be, gh_d, 2, hs))))
        dev = gi.device
        h2 = wrap(be.binary("add", n, be.binary("mul", z, be.binary("sub", h._data, n))), dev)
        if True not in ctx.needs_input_grad:  # not recorded (no_grad): no workspace
            return h2, None
        ws = wrap(be.cat([rz, n], 1), dev)
        ctx.save_for_backward(gh, h, ws)
        return h2, ws

    @staticmethod
    def backward(ctx, dh, dws):
        gh, h, ws = ctx.saved_tensors
        if STATE.enabled:  # create_graph: the formula in tgrad ops, differentiable again
            return _gru_backward_ops(gh, h, ws, dh, dws)
        be, hs, dev = backend_of(ws), h.shape[-1], ws.device
        ws_d, h_d = ws._data, h._data
        r, z, n = (_cols(be, ws_d, k, hs) for k in range(3))
        if dh is None:
            dh = wrap(be.full(h_d.shape, 0, h_d.dtype), dev)
        dh_d = dh._data
        dhz = be.binary("mul", dh_d, z)
        da_n = be.tanh_backward(be.binary("sub", dh_d, dhz), n)
        da_z = be.sigmoid_backward(be.binary("mul", dh_d, be.binary("sub", h_d, n)), z)
        if dws is not None:  # (only a double backward sends one)
            dws_d = dws._data
            da_n = be.binary("add", da_n, be.tanh_backward(_cols(be, dws_d, 2, hs), n))
            da_z = be.binary("add", da_z, be.sigmoid_backward(_cols(be, dws_d, 1, hs), z))
        dr = be.binary("mul", da_n, _cols(be, gh._data, 2, hs))
        if dws is not None:
            dr = be.binary("add", dr, _cols(be, dws._data, 0, hs))
        da_r = be.sigmoid_backward(dr, r)
        d_gi = be.cat([da_r, da_z, da_n], 1)
        d_gh = be.cat([da_r, da_z, be.binary("mul", da_n, r)], 1)
        return wrap(d_gi, dev), wrap(d_gh, dev), wrap(dhz, dev)


_FusedGRUCell._backward_cls.materialize_grads = False  # None: an output nobody used


def _gru_backward_ops(gh, h, ws, dh, dws):
    """The GRU backward (module docstring) in tgrad ops on the saved gh, h and ws."""
    r, z, n = ws.chunk(3, 1)
    n_h = gh.chunk(3, 1)[2]
    if dh is None:
        dh = zeros_like(h)
    dhz = dh * z
    da_n = (dh - dhz) * (1 - n * n)
    da_z = dh * (h - n) * z * (1 - z)
    dr = None
    if dws is not None:
        dws_r, dws_z, dws_n = dws.chunk(3, 1)
        da_n = da_n + dws_n * (1 - n * n)
        da_z = da_z + dws_z * z * (1 - z)
        dr = dws_r
    dr = da_n * n_h if dr is None else da_n * n_h + dr
    da_r = dr * r * (1 - r)
    return cat([da_r, da_z, da_n], 1), cat([da_r, da_z, da_n * r], 1), dhz


def lstm_pointwise(gi: Tensor, gh: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """(h', c') from gi, gh (N, 4H) and c (N, H): one node."""
    h2, c2, _ = _FusedLSTMCell.apply(gi, gh, c)
    return h2, c2


def gru_pointwise(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    """h' from gi, gh (N, 3H) and h (N, H): one node."""
    return _FusedGRUCell.apply(gi, gh, h)[0]
