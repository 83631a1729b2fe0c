"""``ctc_loss``: the connectionist temporal classification loss (Graves et al. 2006),
composed of tgrad ops so its gradient (and double backward) come from autograd.

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

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.nn.functional import _check_tensor
from tgrad.ops import elementwise as ew
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
        s_max = max(tg_len, default=0)
        rows, start = [], 0
        for li in tg_len:
            row = tgt[start:start + li]
            rows.append(cat([row, full((s_max - li,), blank, dtype=dtypes.int64,
                                       device=row.device)]) if s_max > li else row)
            start += li
        tgt = cat([r.unsqueeze(0) for r in rows]) if rows else \
            zeros(n, 0, dtype=dtypes.int64, device=lp.device)
    elif unbatched:
        tgt = tgt.reshape(1, -1)
    if tgt.shape[0] != n or tgt.shape[1] < max(tg_len, default=0):
        raise RuntimeError(f"{op}: targets of shape {list(targets.shape)} do not hold "
                           f"target_lengths {tg_len}")
    s_max = max(tg_len, default=0)
    tgt = tgt[:, :s_max]
    ext_len = 2 * s_max + 1
    dev = lp.device
    # extended labels (N, 2S+1): blank, l_1, blank, l_2, ..., blank
    ext = full((n, ext_len), blank, dtype=dtypes.int64, device=dev)
    if s_max:
        ext[:, 1::2] = tgt
    # a skip over the blank between two labels is allowed when they differ
    skip = zeros((n, ext_len), dtype=dtypes.bool_, device=dev)
    if s_max > 1:
        skip[:, 3::2] = tgt[:, 1:] != tgt[:, :-1]
    y = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, ext_len))  # (T, N, 2S+1)
    ninf = float("-inf")
    first = arange(ext_len, device=dev) < 2
    alpha = ew.where(first, y[0], ninf) if t_max else full((n, ext_len), ninf, dtype=lp.dtype,
                                                             device=dev)
    col = full((n, 1), ninf, dtype=lp.dtype, device=dev)
    lengths = tensor(in_len, dtype=dtypes.int64, device=dev).unsqueeze(1)
    for t in range(1, t_max):
        shift1 = cat([col, alpha[:, :-1]], 1)
        shift2 = ew.where(skip, cat([col, col, alpha[:, :-2]], 1)[:, :ext_len], ninf)
        new = logaddexp(logaddexp(alpha, shift1), shift2) + y[t]
        alpha = ew.where(lengths > t, new, alpha)  # a finished sequence keeps its alpha
    end = tensor([2 * li for li in tg_len], dtype=dtypes.int64, device=dev).unsqueeze(1)
    last = alpha.gather(1, end).squeeze(1)
    before = alpha.gather(1, (end - 1).clamp(min=0)).squeeze(1)
    has_label = tensor([li > 0 for li in tg_len], device=dev)
    total = logaddexp(last, ew.where(has_label, before, ninf))
    loss = -total
    no_input = tensor([ti == 0 for ti in in_len], device=dev)
    if any(ti == 0 for ti in in_len):  # no frames: only an empty target is possible
        loss = ew.where(no_input, ew.where(has_label, float("inf"), 0.0), loss)
    if zero_infinity:
        loss = ew.where(ew.isinf(loss), 0.0, loss)
    else:  # (T, N, 1): the frames of the samples whose loss is infinite
        holder.append((ew.isinf(loss.detach()) & (arange(t_max, device=dev).unsqueeze(1)
                                                  < lengths.squeeze(1))).unsqueeze(2))
    if unbatched:
        loss = loss.squeeze(0)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    per = tensor([max(li, 1) for li in tg_len], dtype=loss.dtype, device=dev)
    return (loss / (per.squeeze(0) if unbatched else per)).mean()
