"""One (layer, direction) of nn.RNN / nn.LSTM / nn.GRU on the CPU as ONE autograd node.

The per-step path (tgrad/nn/_rnn.py ``_direction``) records per step an addmm for
h w_hh^T + b_hh and a fused gate node (tgrad/nn/_rnn_fused.py); at small sizes its time is
the nodes' Python cost. ``_RnnLayerCpu`` runs the same recursion on the NumPy arrays:

forward: gi = linear(x, w_ih, b_ih) (the same op as the per-step path, run unrecorded);
    then per step t (forward order, or T-1 .. 0 for the reverse direction), on the first
    b_t rows of the state (b_t = N unpacked, batch_sizes[t] packed; see _rnn.py's module
    docstring for the packed layout): gh = h w_hh^T + b_hh and the gates exactly as
    ``_FusedLSTMCell`` / ``_FusedGRUCell`` (or tanh / relu of gi + gh for the RNN) compute
    them, the same NumPy calls on the same values, so outputs are the per-step path's bits.
    The calls write into buffers allocated once per call (``out=``), and a step's gates are
    handled gate-major, (G, b_t, H), each gate's block contiguous: NumPy runs a contiguous
    block in one inner loop, a strided (b_t, H) column block row by row (~3x the time of a
    call at these sizes). Saved: h_{t-1} (hp (sum b_t, H_out)), and LSTM c_{t-1} (cp) and
    act = [i, f, g, o, tanh(c_t)] (5, sum b_t, H) (+ the unprojected h with proj_size),
    GRU [r, z, n] (3, sum b_t, H) and gh's n block, RNN h_t. With equal b_t (unpacked, or
    packed of equal lengths) h and c live in one ((L + 1) N, .) buffer, step t writing the
    block after (reverse: before) the one it reads, so hp and cp are views of it, no copies.
backward (BPTT over the workspaces, steps in the reverse order of the forward): per step
    dh_t = d out_t + d h_t(from step t+1), the cell's backward as the fused cells' (the
    same formulas and order) giving d gates (b_t, G H) and d h_{t-1} = dgh w_hh (+ dh z for
    the GRU), d c_{t-1} = dc_t f; the factors of those products that depend on the saved
    activations only (1 - y, 1 - g^2, 1 - tc^2, h - n, ...) computed for groups of steps at
    once, before their loop. Then the weight gradients as ONE product each over all
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
from tgrad.backends.numpy import _sigmoid_into
from tgrad.backends.numpy import relu_backward as _relu_backward
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


# ---------------------------------------------------------------- step plan and states
# The loops below call NumPy on preallocated buffers (``out=``), about a dozen calls a step:
# at small sizes a step's time is the calls' overhead, not their arithmetic.
class _Plan:
    """The steps of one direction: ``order`` (the forward's), per step t ``rows[t]`` (its
    rows of gi / out), and ``steps``: per step in ``order`` (rows, reads, writes, b_t),
    reads / writes the rows of the state buffer (``_state``) it reads h_{t-1} / c_{t-1}
    from and writes h_t / c_t to. uniform (every
    b_t = B): the buffer keeps every step's state, block k = rows [k B, (k + 1) B); step t
    reads block t and writes t + 1 (reverse: reads t + 1, writes t), so h_{t-1} and out are
    views of it, no copies. Else (packed, b_t varied) it is the (B, .) state, its rows
    [:b_t] updated in place, and the loops copy h_{t-1}, c_{t-1} and out per step."""

    __slots__ = ("order", "rows", "uniform", "bsz", "reverse", "steps")

    def __init__(self, sizes: list, offs: list, bsz: int, reverse: bool) -> None:
        steps, rev = len(sizes), int(reverse)
        self.rows = [slice(o, o + b) for o, b in zip(offs, sizes)]
        self.order = list(reversed(range(steps))) if reverse else list(range(steps))
        self.uniform = all(b == bsz for b in sizes)
        self.bsz, self.reverse = bsz, reverse
        if self.uniform:
            blk = [slice(k * bsz, (k + 1) * bsz) for k in range(steps + 1)]
            reads, writes = blk[rev:steps + rev], blk[1 - rev:steps + 1 - rev]
        else:
            reads = writes = [slice(0, b) for b in sizes]
        self.steps = [(self.rows[t], reads[t], writes[t], sizes[t])
                      for t in self.order]


def _state(x0, plan: _Plan, dt) -> tuple:
    """(buffer, h_{t-1} rows, h_t rows) of a state x0 (B, C) (``_Plan``). uniform: the
    ((L + 1) B, C) buffer with x0 in block 0 (forward) or L (reverse), and the row ranges
    of all the steps' reads and writes (each in gi's row order); else a (B, C) copy of x0
    and None, None."""
    if not plan.uniform:
        return np.array(x0, dtype=dt, order="C"), None, None
    bsz, steps = plan.bsz, len(plan.rows)
    buf = np.empty(((steps + 1) * bsz, x0.shape[1]), dt)
    k = steps if plan.reverse else 0
    buf[k * bsz:(k + 1) * bsz] = x0
    lo, hi = slice(0, steps * bsz), slice(bsz, (steps + 1) * bsz)
    return (buf, hi, lo) if plan.reverse else (buf, lo, hi)


def _final(buf, plan: _Plan):
    """The state after the last step (B, C): a copy of the buffer's last written block
    (uniform; the buffer is kept for the backward), else the (B, C) state itself."""
    if not plan.uniform:
        return buf
    k = 0 if plan.reverse else len(plan.rows)
    return buf[k * plan.bsz:(k + 1) * plan.bsz].copy()


def _chunks(order: list, rows: list, width: int) -> list:
    """Consecutive steps of ``order`` in groups [(steps, r0, r1)] whose rows, together the
    range [r0, r1), hold at most _CHUNK elements of ``width`` columns (one step at least):
    the backward computes its per-row factors a group at a time, so they stay small."""
    groups, cur, r0, r1 = [], [], 0, 0
    for t in order:
        s = rows[t]
        lo, hi = (min(r0, s.start), max(r1, s.stop)) if cur else (s.start, s.stop)
        if cur and (hi - lo) * width > _CHUNK:
            groups.append((cur, r0, r1))
            cur, lo, hi = [], s.start, s.stop
        cur.append(t)
        r0, r1 = lo, hi
    if cur:
        groups.append((cur, r0, r1))
    return groups


_CHUNK = 1 << 17


# ---------------------------------------------------------------- forward
def _forward(mode: str, gi, sizes: list, offs: list, h0, c0, w_hh, b_hh, w_hr,
             reverse: bool, keep: bool) -> tuple:
    """(out (sum b_t, H_out), h_n (B, H_out), c_n (B, H) or None, ws dict or None) of one
    direction over gi (sum b_t, G H); ws: the workspaces the backward reads (``keep``)."""
    dt, total = gi.dtype, gi.shape[0]
    plan = _Plan(sizes, offs, h0.shape[0], reverse)
    hx, h_rd, h_wr = _state(h0, plan, dt)
    if b_hh is not None:  # (B, G H): the bias add of a step on whole rows (the same sums)
        b_hh = np.ascontiguousarray(np.broadcast_to(b_hh, (plan.bsz, b_hh.shape[0])))
    if plan.uniform:
        hp, out = hx[h_rd], hx[h_wr]
    else:
        hp = np.empty((total, hx.shape[1]), dt) if keep else None
        out = np.empty((total, hx.shape[1]), dt)
    ws = {"hp": hp} if keep else None
    c_n = None
    if mode == "LSTM":
        c_n = _lstm_loop(gi, plan, hx, hp, out, c0, w_hh, b_hh, w_hr, ws)
    elif mode == "GRU":
        _gru_loop(gi, plan, hx, hp, out, w_hh, b_hh, ws)
    else:
        _rnn_loop(gi, plan, hx, hp, out, w_hh, b_hh, mode == "RNN_RELU")
        if keep:
            ws["y"] = out  # (h_t: the output's rows)
    if keep and (plan.uniform or "y" in ws):
        out = out.copy()  # (the output: not the memory the backward reads)
    return out, _final(hx, plan), c_n, ws


def _gh_into(h, w_t, bias, out):
    """out <- h w_hh^T (+ the bias rows): the per-step path's Addmm (matmul, then + bias)."""
    np.matmul(h, w_t, out=out)
    if bias is not None:
        np.add(out, bias, out=out)
    return out


def _gates(buf, b: int, k: int, hs: int):
    """A contiguous (k, b, H) view of the start of a flat buffer (a step's gates, gate-major:
    each gate's (b, H) block contiguous, so the elementwise calls run on whole blocks)."""
    return buf[:k * b * hs].reshape(k, b, hs)


def _by_gate(x, k: int, hs: int):
    """(b, k H) row-major -> its (k, b, H) view (strided: gate-major indexing, no copy)."""
    return x.reshape(x.shape[0], k, hs).transpose(1, 0, 2)


def _lstm_scratch(bufs: tuple, b: int, hs: int) -> tuple:
    """The LSTM forward's per-step scratch views for a step of b rows: a (b, 4 H), the bias
    rows, A and S (4, b, H) gate-major, and three (b, H)."""
    gh, bias, ga, gs, t1, t2, t3 = bufs
    return (gh[:b], None if bias is None else bias[:b], _gates(ga, b, 4, hs),
            _gates(gs, b, 4, hs), t1[:b], t2[:b], t3[:b])


def _lstm_loop(gi, plan: _Plan, hx, hp, out, c0, w_hh, b_hh, w_hr, ws):
    """_FusedLSTMCell.forward's operations per step, the same NumPy calls on the same
    values (elementwise, so the same bits in any layout), into buffers: a = gi + (h w_hh^T
    + b_hh) (b, 4 H), copied gate-major to A (4, b, H); S = sigmoid(A) (all of A, as the
    cell), g = tanh(A_g) into S's g block; c' = f c + i g, tc = tanh(c'), h' = o tc (then
    h' w_hr^T with a projection). ws (when kept) gets cp (c_{t-1}, (sum b_t, H)), act =
    [i, f, g, o, tc] gate-major (5, sum b_t, H) and hr (the unprojected h'); -> c_n."""
    uniform = plan.uniform
    dt, total, bsz = gi.dtype, gi.shape[0], plan.bsz
    hs = w_hh.shape[0] // 4
    w_t = w_hh.T  # (the per-step path's w_hh.t() view: the same BLAS operand)
    w_hr_t = None if w_hr is None else w_hr.T
    keep = ws is not None
    cx, c_rd, _ = _state(c0, plan, dt)
    cp = cx[c_rd] if uniform else (np.empty((total, hs), dt) if keep else None)
    act = np.empty((5, total, hs), dt) if keep else None
    hr = None if w_hr is None else np.empty((total if keep else bsz, hs), dt)
    bufs = (np.empty((bsz, 4 * hs), dt), b_hh, np.empty(4 * bsz * hs, dt),
            np.empty(4 * bsz * hs, dt), np.empty((bsz, hs), dt), np.empty((bsz, hs), dt),
            np.empty((bsz, hs), dt))
    cache = {}  # b -> the scratch views of a step of b rows
    for rows, rd, wr, b in plan.steps:
        v = cache.get(b)
        if v is None:
            v = cache[b] = _lstm_scratch(bufs, b, hs)
        a, bias, aa, s, t1, t2, tcs = v
        hin, cin, cout = hx[rd], cx[rd], cx[wr]
        if keep and not uniform:
            hp[rows] = hin
            cp[rows] = cin
        np.add(gi[rows], _gh_into(hin, w_t, bias, a), out=a)
        np.copyto(aa, _by_gate(a, 4, hs))  # (gate-major)
        _sigmoid_into(aa, s)  # (its g block then overwritten by tanh)
        np.tanh(aa[2], out=s[2])
        np.add(np.multiply(s[1], cin, out=t1), np.multiply(s[0], s[2], out=t2), out=cout)
        tc = np.tanh(cout, out=act[4, rows] if keep else tcs)
        if hr is None:
            np.multiply(s[3], tc, out=hx[wr])
        else:
            hrb = hr[rows] if keep else hr[:b]
            np.matmul(np.multiply(s[3], tc, out=hrb), w_hr_t, out=hx[wr])
        if keep:
            np.copyto(act[:4, rows], s)
        if not uniform:
            out[rows] = hx[wr]
    if keep:
        ws.update(cp=cp, act=act)
        if hr is not None:
            ws["hr"] = hr
    return _final(cx, plan)


def _gru_loop(gi, plan: _Plan, hx, hp, out, w_hh, b_hh, ws) -> None:
    """_FusedGRUCell.forward's operations per step into buffers (gate-major as the LSTM's):
    [r z] = sigmoid(gi_rz + gh_rz), n = tanh(gi_n + r gh_n), h' = n + z (h - n) (gh = h
    w_hh^T + b_hh); ws (when kept) gets rzn = [r, z, n] gate-major (3, sum b_t, H) and
    ghn = gh's n block (sum b_t, H)."""
    uniform = plan.uniform
    dt, total, bsz = gi.dtype, gi.shape[0], plan.bsz
    hs = w_hh.shape[0] // 3
    w_t = w_hh.T
    keep = ws is not None
    rzn = np.empty((3, total, hs), dt) if keep else None
    ghn = np.empty((total, hs), dt) if keep else None
    bufs = (np.empty((bsz, 3 * hs), dt), b_hh, np.empty(2 * bsz * hs, dt),
            np.empty((bsz, hs), dt), np.empty((bsz, hs), dt), np.empty((bsz, hs), dt))
    cache = {}  # b -> the scratch views of a step of b rows
    z2 = 2 * hs
    for rows, rd, wr, b in plan.steps:
        v = cache.get(b)
        if v is None:
            v = cache[b] = _gru_scratch(bufs, b, hs)
        a, a_rz, a_n, bias, rz, tb, ns, ghs = v
        hin, hout, gt = hx[rd], hx[wr], gi[rows]
        if keep and not uniform:
            hp[rows] = hin
        _gh_into(hin, w_t, bias, a)
        np.add(_by_gate(gt[:, :z2], 2, hs), a_rz, out=rz)  # (gate-major)
        _sigmoid_into(rz, rz)
        gn = ghn[rows] if keep else ghs
        np.copyto(gn, a_n)
        n = rzn[2, rows] if keep else ns
        np.tanh(np.add(gt[:, z2:], np.multiply(rz[0], gn, out=tb), out=tb), out=n)
        np.add(n, np.multiply(rz[1], np.subtract(hin, n, out=tb), out=tb), out=hout)
        if keep:
            np.copyto(rzn[:2, rows], rz)
        if not uniform:
            out[rows] = hout
    if keep:
        ws.update(ghn=ghn, rzn=rzn)


def _gru_scratch(bufs: tuple, b: int, hs: int) -> tuple:
    """The GRU forward's per-step views for a step of b rows: gh (b, 3 H), its [r z] block
    gate-major and its n block, the bias rows, [r z] (2, b, H) and three (b, H)."""
    gh, bias, grz, t1, t2, t3 = bufs
    a = gh[:b]
    return (a, _by_gate(a[:, :2 * hs], 2, hs), a[:, 2 * hs:], None if bias is None else bias[:b],
            _gates(grz, b, 2, hs), t1[:b], t2[:b], t3[:b])


def _rnn_loop(gi, plan: _Plan, hx, hp, out, w_hh, b_hh, relu: bool) -> None:
    """h' = tanh (or relu) of gi + (h w_hh^T + b_hh) per step, into the state buffer (and
    h_{t-1} into hp where not uniform and kept)."""
    uniform = plan.uniform
    w_t, zero = w_hh.T, gi.dtype.type(0)
    gh = np.empty((plan.bsz, w_hh.shape[0]), gi.dtype)
    for rows, rd, wr, b in plan.steps:
        if hp is not None and not uniform:
            hp[rows] = hx[rd]
        a = _gh_into(hx[rd], w_t, None if b_hh is None else b_hh[:b], gh[:b])
        np.add(gi[rows], a, out=a)
        if relu:
            np.maximum(a, zero, out=hx[wr])
        else:
            np.tanh(a, out=hx[wr])
        if not uniform:
            out[rows] = hx[wr]


# ---------------------------------------------------------------- backward (BPTT)
def _backward(mode: str, ws: dict, sizes: list, offs: list, d_out, dh_n, dc_n, w_hh, w_hr,
              reverse: bool, shapes: tuple) -> tuple:
    """(dgi, dgh (sum b_t, G H), dhp (sum b_t, H_out) or None, dh0 (B, H_out), dc0 (B, H)
    or None) from the output gradients (None: not used). dhp: the gradient at the
    projected h of each step (for dW_hr); dgi is dgh except for the GRU."""
    (total, gates), (bsz, hout), hs = shapes
    dt = w_hh.dtype
    plan = _Plan(sizes, offs, bsz, reverse)
    back = plan.order[::-1]
    dh = np.zeros((bsz, hout), dt) if dh_n is None else np.array(dh_n, dtype=dt, order="C")
    dgh = np.empty((total, gates), dt)
    if mode == "LSTM":
        dc = np.zeros((bsz, hs), dt) if dc_n is None else np.array(dc_n, dtype=dt, order="C")
        dhp = np.empty((total, hout), dt) if w_hr is not None else None
        _lstm_back(ws, plan.rows, back, d_out, dh, dc, w_hh, w_hr, dgh, dhp)
        return dgh, dgh, dhp, dh, dc
    if mode == "GRU":
        dgi = _gru_back(ws, plan.rows, back, d_out, dh, w_hh, dgh)
        return dgi, dgh, None, dh, None
    _rnn_back(ws, plan.rows, back, d_out, dh, w_hh, dgh, mode == "RNN_RELU")
    return dgh, dgh, None, dh, None


def _lstm_factors(act, cp, hs: int, steps: list, rows_l: list, r0: int, bsz: int) -> list:
    """The factors of the LSTM backward for the given steps, whose rows are [r0, r0 + R) of
    act [i, f, g, o, tc] (5, R, H) and c_{t-1} (R, H): per step (A, Y, Z, T), A = [g,
    c_{t-1}, i] (3, b, H), Y = [i, f, 1 - g^2, o] and Z = [1 - i, 1 - f, 1, 1 - o] (4, b,
    H) gate-major, T = 1 - tc^2 (b, H); 1 - g^2, 1 - tc^2 and 1 - y as tanh_backward /
    sigmoid_backward compute them. With every b_t = B (the steps' rows consecutive blocks)
    A, Y and Z are made (R / B, k, B, H), so a step's are contiguous blocks; else (k, R, H)
    and a step's are views of k strided blocks."""
    rr, dt = act.shape[1], act.dtype
    uniform = bsz > 0 and all(rows_l[t].stop - rows_l[t].start == bsz for t in steps)
    if uniform:  # (arrays (n, k, B, H); ``blocks(f)`` their gate-major (k, n, B, H) view)
        shape, src = (rr // bsz, bsz, hs), (lambda k: act[k].reshape(rr // bsz, bsz, hs))

        def new(k):
            return np.empty((rr // bsz, k, bsz, hs), dt)

        def blocks(f):
            return f.transpose(1, 0, 2, 3)
    else:
        shape, src = (rr, hs), (lambda k: act[k])

        def new(k):
            return np.empty((k, rr, hs), dt)

        def blocks(f):
            return f
    a3, y = new(3), new(4)
    a3b, yb = blocks(a3), blocks(y)
    a3b[0], a3b[1], a3b[2] = src(2), cp.reshape(shape), src(0)
    yb[0], yb[1], yb[3] = src(0), src(1), src(3)
    np.subtract(1, np.multiply(src(2), src(2), out=yb[2]), out=yb[2])
    z = np.subtract(1, y)
    blocks(z)[2] = 1
    tt = np.multiply(act[4], act[4])
    np.subtract(1, tt, out=tt)
    res = []
    for t in steps:
        lr = slice(rows_l[t].start - r0, rows_l[t].stop - r0)
        if uniform:
            j = lr.start // bsz
            res.append((a3[j], y[j], z[j], tt[lr]))
        else:
            res.append((a3[:, lr], y[:, lr], z[:, lr], tt[lr]))
    return res


def _lstm_back(ws: dict, rows_l: list, back: list, d_out, dh, dc, w_hh, w_hr, dgh,
               dhp) -> None:
    """BPTT of the LSTM in the states dh (B, H_out), dc (B, H) (-> dh0, dc0), d gates into
    dgh: per step, as _FusedLSTMCell.backward (the same products in the same order, with
    the factors of ``_lstm_factors``): dh = d out + dh (then dh w_hr with a projection),
    dc_t = dc + (dh o) (1 - tc^2), d gates = ([dc_t g, dc_t c, dc_t i, dh tc] Y) Z, i.e.
    da_i = ((dc_t g) i) (1 - i), da_f = ((dc_t c) f) (1 - f), da_g = (dc_t i) (1 - g^2),
    da_o = ((dh tc) o) (1 - o) (gate-major (4, b, H), the last product written into dgh's
    rows (b, 4 H)); dc_{t-1} = dc_t f, dh_{t-1} = d gates w_hh."""
    act, cp = ws["act"], ws["cp"]
    hs, dt, bsz = cp.shape[1], dh.dtype, dh.shape[0]
    bufs = (np.empty((bsz, dh.shape[1]), dt), np.empty((bsz, hs), dt),
            None if w_hr is None else np.empty((bsz, hs), dt), np.empty(4 * bsz * hs, dt))
    cache = {}  # b -> the state rows and scratch views of a step of b rows
    for steps, r0, r1 in _chunks(back, rows_l, 12 * hs):
        facs = _lstm_factors(act[:, r0:r1], cp[r0:r1], hs, steps, rows_l, r0, bsz)
        for t, (a3, y, z, tt) in zip(steps, facs):
            rows = rows_l[t]
            b = rows.stop - rows.start
            v = cache.get(b)
            if v is None:
                v = cache[b] = _lstm_back_scratch(bufs, dh, dc, b, hs)
            dhb, dcb, db, tb, dr, dg, dg3, dgo = v
            dgr = dgh[rows]
            dht = dhb if d_out is None else np.add(d_out[rows], dhb, out=db)
            if dr is not None:
                dhp[rows] = dht
                dht = np.matmul(dht, w_hr, out=dr)
            x = np.multiply(dht, act[3, rows], out=tb)
            np.add(dcb, np.multiply(x, tt, out=x), out=dcb)  # dc_t
            np.multiply(dcb, a3, out=dg3)
            np.multiply(dht, act[4, rows], out=dgo)
            np.multiply(np.multiply(dg, y, out=dg), z, out=dg)
            np.copyto(_by_gate(dgr, 4, hs), dg)  # (to rows (b, 4 H))
            np.multiply(dcb, act[1, rows], out=dcb)
            np.matmul(dgr, w_hh, out=dhb)


def _lstm_back_scratch(bufs: tuple, dh, dc, b: int, hs: int) -> tuple:
    """The LSTM backward's views for a step of b rows: dh[:b], dc[:b], three (b, .)
    scratch rows, the (4, b, H) gate-major d gates and its first 3 / last gate."""
    db, tb, dr, dgs = bufs
    dg = _gates(dgs, b, 4, hs)
    return (dh[:b], dc[:b], db[:b], tb[:b], None if dr is None else dr[:b], dg, dg[:3],
            dg[3])


def _gru_back(ws: dict, rows_l: list, back: list, d_out, dh, w_hh, dgh):
    """BPTT of the GRU in the state dh (B, H) (-> dh0), d gh into dgh; -> d gi (sum b_t,
    3 H): per step, as _FusedGRUCell.backward (the same products in the same order):
    dh = d out + dh, dhz = dh z, da_n = (dh - dhz) (1 - n^2), da_z = ((dh (h - n)) z)
    (1 - z), da_r = ((da_n gh_n) r) (1 - r), d gi = [da_r, da_z, da_n] (gate-major, one
    copy to rows at the end), d gh = [da_r, da_z, da_n r]; dh_{t-1} = dhz + d gh w_hh. The
    per-step path sums dh_{t-1} in its engine's order of arrival, (d out + dh z) + dgh
    w_hh, or d out + (dh z + dgh w_hh) where the packed state was sliced or extended
    between the steps (one node passes the last two on): ``pend`` holds dgh w_hh (its
    first ``pb`` rows) meanwhile."""
    rzn, ghn, hp = ws["rzn"], ws["ghn"], ws["hp"]
    hs, dt, bsz = ghn.shape[1], dh.dtype, dh.shape[0]
    total = ghn.shape[0]
    dgi = np.empty((3, total, hs), dt)
    db, pend, pb = np.empty((bsz, hs), dt), np.empty((bsz, hs), dt), 0
    for steps, r0, r1 in _chunks(back, rows_l, 4 * hs):
        n_c = rzn[2, r0:r1]
        tn = np.multiply(n_c, n_c)
        np.subtract(1, tn, out=tn)  # 1 - n^2
        hmn = np.subtract(hp[r0:r1], n_c)  # h - n
        omrz = np.subtract(1, rzn[:2, r0:r1])  # 1 - [r z]
        for t in steps:
            rows = rows_l[t]
            b = rows.stop - rows.start
            lr = slice(rows.start - r0, rows.stop - r0)
            if pb and pb != b:
                np.add(dh[:pb], pend[:pb], out=dh[:pb])
                pb = 0
            dhb, dbb, dgr = dh[:b], db[:b], dgh[rows]
            dht = dhb if d_out is None else np.add(d_out[rows], dhb, out=dbb)
            if pb:
                dht = np.add(dht, pend[:b], out=dbb)
            elif dht is dhb:  # (dhb becomes dhz below)
                dht = dbb
                np.copyto(dht, dhb)
            gt = dgi[:, rows]  # (3, b, H)
            np.multiply(dht, rzn[1, rows], out=dhb)  # dhz: the direct part of dh_{t-1}
            dn = np.subtract(dht, dhb, out=gt[2])
            np.multiply(dn, tn[lr], out=dn)  # da_n
            np.multiply(dn, ghn[rows], out=gt[0])
            np.multiply(dht, hmn[lr], out=gt[1])
            x = gt[:2]
            np.multiply(np.multiply(x, rzn[:2, rows], out=x), omrz[:, lr], out=x)  # da_r, z
            gr = _by_gate(dgr, 3, hs)
            np.copyto(gr[:2], x)
            np.multiply(dn, rzn[0, rows], out=gr[2])
            np.matmul(dgr, w_hh, out=pend[:b])
            pb = b
    if pb:
        np.add(dh[:pb], pend[:pb], out=dh[:pb])
    return np.ascontiguousarray(dgi.transpose(1, 0, 2)).reshape(total, 3 * hs)


def _rnn_back(ws: dict, rows_l: list, back: list, d_out, dh, w_hh, dgh, relu: bool) -> None:
    """BPTT of the tanh / relu RNN in the state dh (B, H) (-> dh0), d pre-activations into
    dgh: dh = d out + dh; d a = dh (1 - y^2) (relu: dh where y != 0); dh_{t-1} = d a w_hh."""
    y = ws["y"]
    db, width = np.empty(dh.shape, dh.dtype), dh.shape[1]
    for steps, r0, r1 in _chunks(back, rows_l, width):
        if not relu:
            tt = np.multiply(y[r0:r1], y[r0:r1])
            np.subtract(1, tt, out=tt)  # 1 - y^2 (tanh_backward's)
        for t in steps:
            rows = rows_l[t]
            b = rows.stop - rows.start
            dhb, dg = dh[:b], dgh[rows]
            dht = dhb if d_out is None else np.add(d_out[rows], dhb, out=db[:b])
            if relu:
                dg[...] = _relu_backward(dht, y[rows])
            else:
                np.multiply(dht, tt[rows.start - r0:rows.stop - r0], out=dg)
            np.matmul(dg, w_hh, out=dhb)


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
    if need[6]:  # (LSTM, RNN: dgi is dgh, the same sum)
        g_bhh = g_bih.copy() if g_bih is not None and dgi is dgh else _rows_sum(dgh, x_dev)
    else:
        g_bhh = None
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
