"""``ctc_loss``: the connectionist temporal classification loss (Graves et al. 2006).
Its gradient is the derivative of the recursion below (autograd's through a composite of
tgrad ops, ``_alpha_loss``, which runs on every device and dtype and gives the double
backward). On the CPU in float32/64 one node, ``_CtcAlphaCpu``, runs the same recursion
on the NumPy arrays and that composite's backward in its order (``_np_forward``,
``_np_backward``): loss and gradient bit for bit the composite's, ~25 NumPy calls a frame
instead of ~30 recorded nodes (9x faster at T=50, N=16, C=20, S=30; docs/performance.md).

Shapes: log_probs (T, N, C) (or (T, C) unbatched), log-softmax outputs over C classes;
targets (N, S) padded, or 1-D holding every target back to back; input_lengths and
target_lengths (N,) (tensors or sequences of ints). For sample n with target l (length
L_n) the extended target l' = (blank, l_1, blank, ..., l_L, blank) has 2 L_n + 1 labels and

    alpha_0(0) = y_0(blank), alpha_0(1) = y_0(l'_1), alpha_0(s > 1) = -inf
    alpha_t(s) = logaddexp(alpha_{t-1}(s), alpha_{t-1}(s-1), [alpha_{t-1}(s-2) if l'_s is
                 not blank and l'_s != l'_{s-2}]) + y_t(l'_s)
    loss_n = -logaddexp(alpha_{T_n - 1}(2 L_n), alpha_{T_n - 1}(2 L_n - 1))

(y = log_probs, all in log space). The recursion runs over t for the whole batch at once
(labels padded to 2 max(L) + 1; a sample past its input length keeps its alpha), so the
forward is T steps of a few vector ops. logaddexp is exact at -inf, so impossible paths
give no NaN. reduction 'mean' divides each loss by its target length (at least 1) and
averages; zero_infinity replaces infinite losses (a target longer than its input allows)
and their gradients by 0. Without it, an infinite loss's gradient is NaN in its sample's
frames t < T_n (0 after them), as PyTorch's backward exp(y) - exp(log(alpha beta) + nll - y)
gives (inf - inf); the recursion alone would give finite values there.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd import grad
from tgrad.autograd.function import Function, differentiable_formula, fw_level
from tgrad.autograd.grad_mode import enable_grad
from tgrad.nn.functional import _check_tensor
from tgrad.ops import elementwise as ew
from tgrad.ops._common import wrap
from tgrad.ops.creation import arange, full, tensor, zeros
from tgrad.ops.logmath import logaddexp
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["ctc_loss"]


class _NanWhereInfinite(Function):
    """y = log_probs (T, N, C); dlog_probs = g, NaN where mask (T, N, 1) is True. The mask
    (frames t < T_n of samples with an infinite loss) is known only after the recursion:
    ctc_loss puts it in ``holder`` before returning, so before any backward."""

    name = "ctc_nan_where_infinite"
    node_name = "CtcLossBackward0"

    @staticmethod
    def forward(ctx, lp, holder):
        ctx.holder = holder
        return lp

    @staticmethod
    def backward(ctx, g):
        return ew.where(ctx.holder[0], float("nan"), g), None


def _int_list(op: str, what: str, value) -> list:
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point or value.dtype is dtypes.bool_:
            raise RuntimeError(f"{op}: {what} must be integers, got {value.dtype.name}")
        return [int(v) for v in value.reshape(-1).tolist()]
    return [int(v) for v in value]


def _labels(tgt: Tensor, blank: int) -> tuple:
    """(ext, skip) of targets tgt (N, S) as tensors on tgt's device: the extended labels
    (N, 2S+1) blank, l_1, blank, ..., l_S, blank, and where a path may skip the blank before
    label s (l'_s is a label that differs from l'_{s-2})."""
    n, s_max = tgt.shape
    ext = full((n, 2 * s_max + 1), blank, dtype=dtypes.int64, device=tgt.device)
    if s_max:
        ext[:, 1::2] = tgt
    skip = zeros((n, 2 * s_max + 1), dtype=dtypes.bool_, device=tgt.device)
    if s_max > 1:
        skip[:, 3::2] = tgt[:, 1:] != tgt[:, :-1]
    return ext, skip


def _np_labels(tgt, blank: int) -> tuple:
    """``_labels`` of a NumPy tgt (N, S), as NumPy arrays."""
    n, s_max = tgt.shape
    ext = np.full((n, 2 * s_max + 1), blank, dtype=np.int64)
    ext[:, 1::2] = tgt
    skip = np.zeros((n, 2 * s_max + 1), dtype=np.bool_)
    skip[:, 3::2] = tgt[:, 1:] != tgt[:, :-1]
    return ext, skip


def _alpha_loss(lp: Tensor, ext: Tensor, skip: Tensor, in_len, tg_len) -> Tensor:
    """-log p(l_n | lp) (N,) by the alpha recursion (module docstring) in tgrad ops, so
    autograd differentiates it (any device and dtype; the double backward of the CPU node).
    lp (T, N, C); ext, skip (N, 2S+1) from ``_labels``."""
    t_max, n, _ = lp.shape
    ext_len, dev, ninf = ext.shape[1], lp.device, float("-inf")
    y = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, ext_len))  # (T, N, 2S+1)
    first = arange(ext_len, device=dev) < 2
    alpha = ew.where(first, y[0], ninf) if t_max else full((n, ext_len), ninf, dtype=lp.dtype,
                                                             device=dev)
    col = full((n, 1), ninf, dtype=lp.dtype, device=dev)
    lengths = tensor(list(in_len), dtype=dtypes.int64, device=dev).unsqueeze(1)
    for t in range(1, t_max):
        shift1 = cat([col, alpha[:, :-1]], 1)
        shift2 = ew.where(skip, cat([col, col, alpha[:, :-2]], 1)[:, :ext_len], ninf)
        new = logaddexp(logaddexp(alpha, shift1), shift2) + y[t]
        alpha = ew.where(lengths > t, new, alpha)  # a finished sequence keeps its alpha
    end = tensor([2 * li for li in tg_len], dtype=dtypes.int64, device=dev).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = alpha.gather(1, (end - 1).clamp(min=0)).squeeze(1)
    has_label = tensor([li > 0 for li in tg_len], device=dev)
    return -logaddexp(last, ew.where(has_label, before, ninf))


# ------------------------------------------------------------------ the CPU node
# The same recursion on the NumPy arrays, vectorised over the batch and the extended labels,
# one step per frame: the composite's ops in its order (logaddexp's value, its backward's
# sigmoid pair), so loss and gradient are the composite's bit for bit, with ~25 NumPy calls
# a frame instead of ~30 recorded nodes.

def _fast_path(lp: Tensor, tgt: Tensor, c: int) -> bool:
    """The NumPy node: float32/64 on the CPU, outside forward-mode AD, lp not empty (the
    composite's loss of no frames does not depend on lp), labels in range (else the
    composite, whose gather raises the index error)."""
    if lp.device.type != "cpu" or lp.dtype not in (dtypes.float32, dtypes.float64) \
            or fw_level() is not None or not lp.numel():
        return False
    labels = tgt.numpy()
    return labels.size == 0 or (0 <= int(labels.min()) and int(labels.max()) < c)


def _np_logaddexp(a, b, out=None, e=None, pos=None, nonpositive: bool = False) -> tuple:
    """(log(e^a + e^b), e) as ``logmath._logaddexp_value``, bit for bit: max(a, b) +
    log1p(e), e = exp(-|a - b|) with a - b read as 0 where a == b; -|a - b| is computed as
    min(a, b) - max(a, b) (the same rounding: round-to-nearest is symmetric). e and
    pos = a >= b give the backward's sigmoid pair (``_np_sigmoid_pair``). out, e, pos:
    where to write them (out may be a or b's memory: a and b are read before it is written).
    nonpositive: the frames hold no NaN and nothing above 0, so alpha holds no NaN or +inf
    and a == b with a NaN difference means a == b == -inf: fmin(NaN, 0) = 0 there saves
    the a == b mask."""
    e = np.minimum(a, b, out=e)
    if pos is not None:
        np.greater_equal(a, b, out=pos)
    eq = None if nonpositive else np.equal(a, b)
    y = np.maximum(a, b, out=out)
    np.subtract(e, y, out=e)
    if nonpositive:
        np.fmin(e, 0, out=e)
    else:
        np.copyto(e, 0, where=eq)
    np.exp(e, out=e)
    y += np.log1p(e)
    return y, e


def _np_sigmoid_pair(e, pos) -> tuple:
    """(sigmoid(a - b), sigmoid(b - a)) from e = exp(-|a - b|) and pos = a >= b, as
    ``logmath._SigmoidPair``: p = 1 / (1 + e), q = e p, (p, q) where a >= b else (q, p)."""
    one = e.dtype.type(1)
    p = np.add(e, one)
    np.true_divide(one, p, out=p)
    q = np.multiply(e, p)
    return np.where(pos, p, q), np.where(pos, q, p)


# Both directions run frame by frame on (N, 2S+1) arrays, the workspace in chunks of a few
# frames (the backward computes the sigmoid pairs a chunk at a time): arrays of
# (T, N, 2S+1) would be fresh memory in every call, whose page faults cost more than the
# per-frame calls save.
_CHUNK = 8192  # elements of a workspace chunk (64 KiB of float64)


def _np_forward(lp, ext, skip, in_len, tg_len, keep: bool) -> tuple:
    """(loss (N,), workspace or None) of lp (T, N, C): the composite ``_alpha_loss``.
    Workspace (keep): for frames 1..T-1 the sigmoid inputs (e, a >= b) of their two
    logaddexps, logaddexp(alpha, shift1) and logaddexp(that, shift2), as chunks of
    (frames, N, 2S+1) arrays (e1, pos1, e2, pos2), and those of the final logaddexp (N,)."""
    t_max, n, c = lp.shape
    ext_len, dt = ext.shape[1], lp.dtype
    ninf = dt.type(-np.inf)
    at = (np.arange(n).reshape(n, 1) * c + ext).reshape(-1)  # ext's places in a frame (N C)
    buf = np.full((n, ext_len + 2), ninf, dt)  # [-inf, -inf, alpha]: the shifts are views
    alpha, shift1 = buf[:, 2:], buf[:, 1:-1]
    if t_max:
        alpha[:, :2] = _frame_labels(lp[0], at, n)[:, :2]
    running = np.asarray(in_len, dtype=np.int64).reshape(n, 1)
    all_run = int(running.min()) if n else t_max  # frames t < this: every sequence runs
    nonpositive = bool(lp.size) and bool(np.max(lp) <= 0)  # (False for a NaN)
    per = max(1, _CHUNK // max(n * ext_len, 1))
    chunks, parts = [], (None,) * 4
    with np.errstate(all="ignore"):
        for t in range(1, t_max):
            if keep and (t - 1) % per == 0:
                m = min(per, t_max - t)
                chunks.append((np.empty((m, n, ext_len), dt), np.empty((m, n, ext_len), bool),
                               np.empty((m, n, ext_len), dt), np.empty((m, n, ext_len), bool)))
            if keep:
                parts = tuple(w[(t - 1) % per] for w in chunks[-1])
            shift2 = np.where(skip, buf[:, :-2], ninf)
            inner, _ = _np_logaddexp(alpha, shift1, None, parts[0], parts[1], nonpositive)
            # alpha is overwritten (after its last read) while every sequence runs
            new, _ = _np_logaddexp(inner, shift2, alpha if t < all_run else inner,
                                   parts[2], parts[3], nonpositive)
            new += _frame_labels(lp[t], at, n)
            if t >= all_run:  # a finished sequence keeps its alpha
                np.copyto(alpha, new, where=running > t)
        rows, end = np.arange(n), 2 * np.asarray(tg_len, dtype=np.int64)
        before = np.where(end > 0, alpha[rows, np.maximum(end - 1, 0)], ninf)
        last = alpha[rows, end]
        pos_f = np.greater_equal(last, before)
        total, e_f = _np_logaddexp(last, before)
    return np.negative(total), ((chunks, per), e_f, pos_f) if keep else None


def _frame_labels(lp_t, at, n: int):
    """y_t (N, 2S+1) = lp_t (N, C) at the extended labels (the composite's gather)."""
    return (lp_t if lp_t.flags.c_contiguous else np.ascontiguousarray(lp_t)).take(
        at).reshape(n, -1)


def _np_backward(g, ws, ext, skip, in_len, tg_len, shape: tuple):
    """d lp (T, N, C) of the loss (N,) given its gradient g, the composite's backward in its
    order. d total = -g; the final logaddexp's pair sends it to alpha's ends (the one
    before only where the target is not empty). Each frame t = T-1..1, from d alpha_t:
    d new = d alpha_t where t < T_n (the rest stays with alpha_{t-1}); d y_t = d new;
    d inner = d new s2a, d shift2 = d new s2b; d alpha_{t-1} = ((kept part + d inner s1a)
    + (d shift2 where skip, two labels left)) + (d inner s1b, one label left), summed in the
    order in which the engine accumulates the composite's nodes (so bit-equal), s1/s2 the
    sigmoid pairs of the frame's two logaddexps. Frame 0: d y_0 = d alpha_0 at labels 0, 1.
    d lp: each frame's d y scatter-added at the extended labels (the gather's backward:
    np.add.at's order). g (N,) -> (T, N, C)."""
    t_max, n, c = shape
    dt = g.dtype
    (chunks, per), e_f, pos_f = ws
    rows, end = np.arange(n), 2 * np.asarray(tg_len, dtype=np.int64)
    running = np.asarray(in_len, dtype=np.int64).reshape(n, 1)
    all_run = int(running.min()) if n else t_max
    zero = dt.type(0)
    out = np.zeros((t_max, n * c), dt)
    at = (rows.reshape(n, 1) * c + ext).reshape(-1)
    with np.errstate(all="ignore"):
        fa, fb = _np_sigmoid_pair(e_f, pos_f)
        gt = np.negative(g)
        ga = np.zeros(ext.shape, dt)
        ga[rows, end] = np.multiply(gt, fa)
        ga[rows, np.maximum(end - 1, 0)] += np.where(end > 0, np.multiply(gt, fb), zero)
        for ci in range(len(chunks) - 1, -1, -1):
            e1, pos1, e2, pos2 = chunks[ci]
            s1a, s1b = _np_sigmoid_pair(e1, pos1)  # (frames, N, 2S+1)
            s2a, s2b = _np_sigmoid_pair(e2, pos2)
            for k in range(len(e1) - 1, -1, -1):
                t = ci * per + k + 1
                if t < all_run:
                    gn, prev = ga, None
                else:
                    gn = np.where(running > t, ga, zero)
                    prev = np.where(running > t, zero, ga)
                np.add.at(out[t], at, gn.reshape(-1))
                g_in = np.multiply(gn, s2a[k])
                g_s2 = np.where(skip, np.multiply(gn, s2b[k]), zero)
                ga = np.multiply(g_in, s1a[k])
                if prev is not None:
                    ga = np.add(prev, ga)
                ga[:, :-2] += g_s2[:, 2:]
                ga[:, :-1] += np.multiply(g_in[:, 1:], s1b[k, :, 1:])
        if t_max:
            gy0 = np.zeros(ext.shape, dt)
            gy0[:, :2] = ga[:, :2]
            np.add.at(out[0], at, gy0.reshape(-1))
    return out.reshape(shape)


class _CtcAlphaCpu(Function):
    """loss (N,) = -log p(l_n | lp) of lp (T, N, C) on the CPU (``_np_forward``); the
    backward is ``_np_backward``, or under create_graph the composite's gradient, built
    again from lp and differentiable."""

    name = "ctc_loss"
    node_name = "CtcLossBackward0"
    released_attributes = ("ws", "labels")

    @staticmethod
    def forward(ctx, lp, labels, in_len, tg_len):
        ext, skip = labels
        need = bool(ctx.needs_input_grad[0])
        loss, ws = _np_forward(lp._data, ext, skip, in_len, tg_len, need)
        if need:
            ctx.save_for_backward(lp)
            ctx.ws, ctx.labels, ctx.in_len, ctx.tg_len = ws, labels, in_len, tg_len
        return wrap(loss, lp.device)

    @staticmethod
    def backward(ctx, g):
        (lp,) = ctx.saved_tensors
        ext, skip = ctx.labels
        if differentiable_formula():
            with enable_grad():
                loss = _alpha_loss(lp, tensor(ext), tensor(skip), ctx.in_len, ctx.tg_len)
            return grad(loss, lp, g, create_graph=True)[0], None, None, None
        d = _np_backward(g._data, ctx.ws, ext, skip, ctx.in_len, ctx.tg_len, tuple(lp.shape))
        return wrap(d, lp.device), None, None, None


def _padded(flat: Tensor, tg_len: list, blank: int) -> Tensor:
    """1-D targets (every target back to back) as (N, max(L)) int64, each row padded with
    blank: NumPy on the CPU, else a slice and cat per row."""
    n, s_max = len(tg_len), max(tg_len, default=0)
    if flat.device.type == "cpu":
        out = np.full((n, s_max), blank, dtype=np.int64)
        out[np.arange(s_max) < np.array(tg_len, dtype=np.int64).reshape(n, 1)] = flat.numpy()
        return tensor(out)
    rows, start = [], 0
    for li in tg_len:
        row = flat[start:start + li]
        rows.append(cat([row, full((s_max - li,), blank, dtype=dtypes.int64,
                                   device=row.device)]) if s_max > li else row)
        start += li
    return cat([r.unsqueeze(0) for r in rows]) if rows else \
        zeros(n, 0, dtype=dtypes.int64, device=flat.device)


@autocast_policy(None, cpu="fp32")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """CTC loss of log_probs (T, N, C) against targets (see the module docstring)."""
    op = "ctc_loss"
    _check_tensor(op, log_probs, "log_probs")
    _check_tensor(op, targets, "targets")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if lp.ndim != 3:
        raise RuntimeError(f"{op}: log_probs must be 2-D (T, C) or 3-D (T, N, C), got shape "
                           f"{list(log_probs.shape)}")
    if not lp.dtype.is_floating_point:
        raise dtypes.kernel_not_implemented("ctc_loss_cpu", lp.dtype, f" ({op}: log_probs must "
                                            f"be floating point, got {lp.dtype.name})")
    t_max, n, c = lp.shape
    holder = []  # the NaN-gradient mask, set below (see _NanWhereInfinite)
    if lp.requires_grad and not zero_infinity:
        lp = _NanWhereInfinite.apply(lp, holder)
    in_len = _int_list(op, "input_lengths", input_lengths)
    tg_len = _int_list(op, "target_lengths", target_lengths)
    if len(in_len) != n or len(tg_len) != n:
        raise RuntimeError(f"{op}: expected input_lengths and target_lengths of length {n} "
                           f"(the batch), got {len(in_len)} and {len(tg_len)}")
    if not 0 <= blank < c:
        raise RuntimeError(f"{op}: blank must be in label range, got blank={blank} for {c} "
                           f"classes")
    for i, (ti, li) in enumerate(zip(in_len, tg_len)):
        if not 0 <= ti <= t_max:
            raise RuntimeError(f"{op}: Expected input_lengths to have value at most {t_max}, "
                               f"but got value {ti} (while checking arguments for ctc_loss)")
        if li < 0:
            raise RuntimeError(f"{op}: target_lengths must be non-negative, got {li} at {i}")
    # targets as (N, S) int64, S = the longest target (1-D targets are split by length)
    tgt = targets.to(dtypes.int64)
    if tgt.ndim == 1 and not unbatched:
        if tgt.shape[0] != sum(tg_len):
            raise RuntimeError(f"{op}: 1-D targets must hold sum(target_lengths) = "
                               f"{sum(tg_len)} labels, got {tgt.shape[0]}")
        tgt = _padded(tgt, tg_len, blank)
    elif unbatched:
        tgt = tgt.reshape(1, -1)
    if tgt.shape[0] != n or tgt.shape[1] < max(tg_len, default=0):
        raise RuntimeError(f"{op}: targets of shape {list(targets.shape)} do not hold "
                           f"target_lengths {tg_len}")
    s_max = max(tg_len, default=0)
    tgt = tgt[:, :s_max]
    dev = lp.device
    if _fast_path(lp, tgt, c):
        loss = _CtcAlphaCpu.apply(lp, _np_labels(tgt.numpy(), blank), tuple(in_len),
                                  tuple(tg_len))
    else:
        loss = _alpha_loss(lp, *_labels(tgt, blank), in_len, tg_len)
    lengths = tensor(np.array(in_len, dtype=np.int64), device=dev)
    has_label = tensor(np.array(tg_len, dtype=np.int64) > 0, device=dev)
    if any(ti == 0 for ti in in_len):  # no frames: only an empty target is possible
        no_input = tensor(np.array(in_len, dtype=np.int64) == 0, device=dev)
        loss = ew.where(no_input, ew.where(has_label, float("inf"), 0.0), loss)
    if zero_infinity:
        loss = ew.where(ew.isinf(loss), 0.0, loss)
    else:  # (T, N, 1): the frames of the samples whose loss is infinite
        holder.append((ew.isinf(loss.detach()) & (arange(t_max, device=dev).unsqueeze(1)
                                                  < lengths)).unsqueeze(2))
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    per = tensor(np.maximum(np.array(tg_len, dtype=np.int64), 1), dtype=loss.dtype, device=dev)
    return (loss / (per.squeeze(0) if unbatched else per)).mean()
