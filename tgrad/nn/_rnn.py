"""Recurrent cells and layers as compositions of tgrad ops (F.linear's matmuls, sigmoid, tanh,
relu and elementwise arithmetic), with PyTorch's formulas and gate orders; nn.RNN, nn.LSTM,
nn.GRU and their cells (tgrad/nn/modules/rnn.py) build on them.

Shapes: x (N, H_in), h (N, H_out), c (N, H); w_ih (G H, H_in), w_hh (G H, H_out), b_ih and
b_hh (G H,), w_hr (H_out, H); H_out = proj_size for an LSTM with projections, else H;
G = 1 (RNN), 4 (LSTM), 3 (GRU). gi = x w_ih^T + b_ih, gh = h w_hh^T + b_hh.

rnn_tanh_cell / rnn_relu_cell: h' = tanh(gi + gh) / relu(gi + gh)
lstm_cell: [i, f, g, o] = gi + gh (chunks of H), c' = sigmoid(f) c + sigmoid(i) tanh(g),
    h' = sigmoid(o) tanh(c') (then h' w_hr^T with a projection)
gru_cell: [r_i, z_i, n_i] = gi, [r_h, z_h, n_h] = gh, r = sigmoid(r_i + r_h),
    z = sigmoid(z_i + z_h), n = tanh(n_i + r n_h), h' = (1 - z) n + z h (as n + z (h - n))

rnn(): the multi-layer, optionally bidirectional, sequence. Each (layer, direction) projects
the whole sequence with one matmul (gi of every step), then steps through time with the
recurrent matmul (the reverse direction from the last step to the first); layer l > 0
reads the previous layer's output (both directions concatenated), after dropout in
training. The steps' gi are views from one ``unbind`` node, whose backward stacks their
gradients (L separate selects would each scatter into a zero (L, N, G H) tensor,
quadratic in L).

Packed sequences (``batch_sizes`` given; PyTorch's PackedSequence layout): the input is the
packed data (sum L_i, H_in), sequences sorted by decreasing length, b_t = batch_sizes[t]
of them running at step t (the first b_t rows). The projection is one matmul over the data
and one ``split`` by batch_sizes gives the steps. Forward direction: step t updates the
first b_t rows of the state; the rows b_t .. b_{t-1} that stop running keep their state,
which is their h_n (c_n). Reverse direction: from step T - 1 down to 0, the rows that join
at step t (b_{t+1} .. b_t) start from their h_0 rows, so every sequence is read from its
own last step to its first and h_n is the state after step 0. The output is packed like
the input (sum L_i, D H_out).

On the CPU in float32/64 (no autocast, forward-AD level, profiler or selective
checkpointing) a (layer, direction), packed or not, is one node instead
(tgrad/nn/_rnn_cpu.py): the same values, the per-step path below rebuilt for create_graph.
"""

from __future__ import annotations

from tgrad.autograd.grad_mode import STATE
from tgrad.nn import _rnn_cpu
from tgrad.nn._rnn_fused import fusable, gru_pointwise, lstm_pointwise
from tgrad.nn.functional import dropout as _dropout
from tgrad.nn.functional import linear
from tgrad.ops._common import require_tensor
from tgrad.ops.matmul import ADDMM_DTYPES, Addmm
from tgrad.ops.shape import cat, split, stack
from tgrad.tensor import Tensor

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn"]

MODES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}  # mode -> gates G


# ---------------------------------------------------------------- one step (gi precomputed)
# (gh = h w_hh^T + b_hh, the recurrent projection: _recurrent)
def _rnn_step(gi: Tensor, gh: Tensor, relu: bool) -> Tensor:
    pre = gi + gh
    return pre.relu() if relu else pre.tanh()


def _lstm_step(gi: Tensor, gh: Tensor, c: Tensor,
               w_hr: Tensor | None) -> tuple[Tensor, Tensor]:
    if fusable(gi, gh, c):  # one node (tgrad/nn/_rnn_fused.py), the same values
        h, c = lstm_pointwise(gi, gh, c)
    else:  # mixed dtypes (autocast), complex: the ops' promotion rules
        i, f, g, o = (gi + gh).chunk(4, 1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else linear(h, w_hr)), c


def _gru_step(gi: Tensor, gh: Tensor, h: Tensor) -> Tensor:
    if fusable(gi, gh, h):  # one node (tgrad/nn/_rnn_fused.py), the same values
        return gru_pointwise(gi, gh, h)
    r_i, z_i, n_i = gi.chunk(3, 1)
    r_h, z_h, n_h = gh.chunk(3, 1)
    r, z = (r_i + r_h).sigmoid(), (z_i + z_h).sigmoid()
    n = (n_i + r * n_h).tanh()
    return n + z * (h - n)


# ---------------------------------------------------------------- the cells (PyTorch's
# torch.rnn_tanh_cell & co.): input (N, H_in), hx (N, H_out) -> (N, H_out)
def _check_cell(op: str, input: Tensor, hxs: tuple, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                sizes: tuple) -> None:
    """PyTorch's checks (and texts) of the cells' input and hidden state(s) against the
    weights; ``sizes``: the expected last dim of each hidden tensor."""
    for name, t in (("input", input), ("hx", hxs[0]), ("weight_ih", w_ih),
                    ("weight_hh", w_hh)) + tuple(("cx", c) for c in hxs[1:]):
        require_tensor(op, t, name, None)
    if input.ndim != 2 or any(h.ndim != 2 for h in hxs):
        raise RuntimeError(f"{op}: expected 2-D input (N, H_in) and hidden state(s) (N, H), "
                           f"got input {list(input.shape)} and hidden "
                           f"{[list(h.shape) for h in hxs]}")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                           f"{w_ih.shape[1]}")
    for k, (h, size) in enumerate(zip(hxs, sizes)):
        if h.shape[0] != input.shape[0]:
            raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{k} "
                               f"batch size {h.shape[0]}")
        if h.shape[1] != size:
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, "
                               f"expected {size}")
    dts = [input.dtype, w_ih.dtype, w_hh.dtype] + [h.dtype for h in hxs]
    if any(d is not dts[0] for d in dts):
        raise RuntimeError(f"{op}: expected input, hidden state and weights of one dtype, got "
                           f"input {input.dtype.name}, hidden "
                           f"{[h.dtype.name for h in hxs]}, weight_ih {w_ih.dtype.name} and "
                           f"weight_hh {w_hh.dtype.name}")


def _simple_cell(op: str, relu: bool, input, hx, w_ih, w_hh, b_ih, b_hh) -> Tensor:  # noqa: A002
    _check_cell(op, input, (hx,), w_ih, w_hh, (w_hh.shape[1],))
    return _rnn_step(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), relu)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """h' = tanh(x w_ih^T + b_ih + h w_hh^T + b_hh); x (N, H_in), hx (N, H) -> (N, H)."""
    return _simple_cell("rnn_tanh_cell", False, input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """h' = relu(x w_ih^T + b_ih + h w_hh^T + b_hh); x (N, H_in), hx (N, H) -> (N, H)."""
    return _simple_cell("rnn_relu_cell", True, input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input: Tensor, hx: tuple, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """(h', c') of one LSTM step (gates i, f, g, o); x (N, H_in), hx = (h (N, H), c (N, H))."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"lstm_cell(): hx must be a tuple (h, c) of two tensors, got "
                        f"{type(hx).__name__}" + (f" of length {len(hx)}"
                                                  if isinstance(hx, (tuple, list)) else ""))
    h, c = hx
    size = w_hh.shape[0] // 4
    _check_cell("lstm_cell", input, (h, c), w_ih, w_hh, (w_hh.shape[1], size))
    return _lstm_step(linear(input, w_ih, b_ih), linear(h, w_hh, b_hh), c, None)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """h' of one GRU step (gates r, z, n; n = tanh(W_in x + b_in + r (W_hn h + b_hn)))."""
    _check_cell("gru_cell", input, (hx,), w_ih, w_hh, (w_hh.shape[1],))
    return _gru_step(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), hx)


# ---------------------------------------------------------------- sequences
def _steps(x: Tensor) -> tuple:
    """x (L, *) -> the L views x[t] (*): one unbind node, whose backward stacks their
    gradients (O(L), not one full-size scatter per step)."""
    return x.unbind(0)


def _recurrent(w_hh: Tensor, b_hh: Tensor | None):
    """h -> h w_hh^T + b_hh for every step of one direction. Where linear would run one
    addmm (a 2-D weight, a 1-D bias of its dtype and device, no autocast), the weight is
    transposed once for the whole sequence: one TBackward0 node, not one per step (the
    gradient sums the steps in the same order, so its values are the same)."""
    if (STATE.autocast is None and b_hh is not None and w_hh.ndim == 2 and b_hh.ndim == 1
            and w_hh.dtype in ADDMM_DTYPES and b_hh.dtype is w_hh.dtype
            and b_hh.device is w_hh.device and not (w_hh._sparse or b_hh._sparse)):
        w_t = w_hh.t()

        def project(h: Tensor) -> Tensor:
            if h.ndim == 2 and h.dtype is w_t.dtype and h.device is w_t.device \
                    and not h._sparse and h.shape[1] == w_t.shape[0]:
                return Addmm.apply(b_hh, h, w_t, 1, 1)
            return linear(h, w_hh, b_hh)  # (its checks and errors)
        return project
    return lambda h: linear(h, w_hh, b_hh)


def _direction(mode: str, gis: tuple, h: Tensor, c: Tensor | None, project,
               w_hr: Tensor | None, reverse: bool) -> tuple:
    """One layer in one direction over the steps' gi: (outputs (L, N, H_out), h_n, c_n);
    ``project``: _recurrent's h -> gh."""
    outs = [None] * len(gis)
    for t in (reversed(range(len(gis))) if reverse else range(len(gis))):
        h, c = _step(mode, gis[t], h, c, project, w_hr)
        outs[t] = h
    return stack(outs), h, c


def _step(mode: str, gi: Tensor, h: Tensor, c: Tensor | None, project,
          w_hr: Tensor | None) -> tuple:
    """One time step: (h', c') (c' None except for the LSTM)."""
    gh = project(h)
    if mode == "LSTM":
        return _lstm_step(gi, gh, c, w_hr)
    if mode == "GRU":
        return _gru_step(gi, gh, h), None
    return _rnn_step(gi, gh, mode == "RNN_RELU"), None


def _direction_packed(mode: str, gis: tuple, sizes: list, h0: Tensor, c0: Tensor | None,
                      project, w_hr: Tensor | None, reverse: bool) -> tuple:
    """One layer in one direction over packed steps (gis[t]: (b_t, G H), b_t = sizes[t]
    non-increasing; h0 (B, H_out), c0 (B, H), B = sizes[0]): (output data (sum b_t, H_out),
    h_n (B, H_out), c_n (B, H) or None), see the module docstring."""
    outs = [None] * len(gis)
    if not reverse:
        h, c = h0, c0
        done_h, done_c = [], []  # states of the rows that stopped, highest rows first
        for t, b in enumerate(sizes):
            if b < h.shape[0]:
                done_h.append(h[b:])
                h = h[:b]
                if c is not None:
                    done_c.append(c[b:])
                    c = c[:b]
            h, c = _step(mode, gis[t], h, c, project, w_hr)
            outs[t] = h
        h_n = cat([h] + done_h[::-1]) if done_h else h
        c_n = None if c is None else (cat([c] + done_c[::-1]) if done_c else c)
        return cat(outs), h_n, c_n
    h, c = h0[:sizes[-1]], None if c0 is None else c0[:sizes[-1]]
    for t in reversed(range(len(sizes))):
        b = sizes[t]
        if b > h.shape[0]:  # rows b_{t+1} .. b_t start here, from their initial state
            h = cat([h, h0[h.shape[0]:b]])
            if c is not None:
                c = cat([c, c0[c.shape[0]:b]])
        h, c = _step(mode, gis[t], h, c, project, w_hr)
        outs[t] = h
    return cat(outs), h, c


def _layer_steps(mode: str, x: Tensor, h0: Tensor, c0: Tensor | None, weights: tuple,
                 batch_sizes: list | None, reverse: bool) -> tuple:
    """One (layer, direction) step by step (a node or two per step): (out, h_n, c_n);
    weights (w_ih, w_hh, b_ih, b_hh, w_hr)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if batch_sizes is None:
        return _direction(mode, _steps(linear(x, w_ih, b_ih)), h0, c0,
                          _recurrent(w_hh, b_hh), w_hr, reverse)
    return _direction_packed(mode, split(linear(x, w_ih, b_ih), batch_sizes), batch_sizes,
                             h0, c0, _recurrent(w_hh, b_hh), w_hr, reverse)


def rnn(mode: str, input: Tensor, hx: tuple, weights: list, num_layers: int,  # noqa: A002
        dropout: float, train: bool, bidirectional: bool,
        batch_sizes: list | None = None) -> tuple:
    """A multi-layer RNN/LSTM/GRU over a time-major sequence (see the module docstring).

    mode: "RNN_TANH", "RNN_RELU", "LSTM" or "GRU"; input (L, N, H_in), L >= 1;
    hx: (h_0,) or, for the LSTM, (h_0, c_0), with h_0 (D num_layers, N, H_out) and c_0
    (D num_layers, N, H), D = 2 if bidirectional else 1; weights: per (layer, direction),
    layer-major, a tuple (w_ih, w_hh, b_ih, b_hh, w_hr) with None for absent ones.
    Returns (output (L, N, D H_out), (h_n,) or (h_n, c_n)) shaped like hx.
    With ``batch_sizes`` (a list of non-increasing ints, N = batch_sizes[0]), input is packed
    data (sum batch_sizes, H_in) and output packed data (sum batch_sizes, D H_out)."""
    if mode not in MODES:
        raise ValueError(f"Unrecognized RNN mode: {mode}")
    d = 2 if bidirectional else 1
    lstm = mode == "LSTM"
    h_n, c_n = [], []
    x = input
    for layer in range(num_layers):
        outs = []
        for direction in range(d):
            k = layer * d + direction
            h0, c0 = hx[0][k], hx[1][k] if lstm else None
            if _rnn_cpu.usable(mode, x, h0, c0, weights[k], batch_sizes):
                # one node for the whole recursion (tgrad/nn/_rnn_cpu.py), the same values
                out, h, c = _rnn_cpu.rnn_layer(mode, x, h0, c0, weights[k], batch_sizes,
                                               direction == 1)
            else:
                out, h, c = _layer_steps(mode, x, h0, c0, weights[k], batch_sizes,
                                         direction == 1)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        x = outs[0] if d == 1 else cat(outs, -1)
        if dropout > 0 and train and layer < num_layers - 1:
            x = _dropout(x, dropout, True)
    return x, ((stack(h_n), stack(c_n)) if lstm else (stack(h_n),))
