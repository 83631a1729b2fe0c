"""``linear_cross_entropy`` (PyTorch 2.13): cross_entropy(linear(input, W, b), target), and
its ``LinearCrossEntropyOptions``.

options=None is PyTorch's reference path: the (N, C[, d1, ...]) logits are built and
cross_entropy takes them (class indices or probabilities, label smoothing, K-dimensional
weights (C, d1, ..., dK, D)). With ``options`` (class-index int64 targets, no smoothing,
no K-dim, reduction mean/sum/none, as PyTorch; anything else warns and takes the reference
path) the rows are processed in chunks of ``batch_chunk_size`` and the full logits never
exist: forward keeps per chunk only each row's loss

    l_r = w[t_r] (logsumexp_c z_rc - z_r,t_r),   z = x W^T + b   (0 where t_r == ignore_index)

and the node saves only input, W, b, target and the class weight; backward recomputes each
chunk's logits (B, C) and with p = softmax(z), s_r = g_r w[t_r] (/ sum_r w[t_r] for 'mean'):

    dz = s (p - onehot(t)),  dx = dz W,  dW = sum over chunks dz^T x,  db = sum dz.

Backward is made of tgrad ops of the saved inputs, so it differentiates again (PyTorch's
chunked path refuses double backward; its reference path allows it).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops._common import rounded_to, widen_halves
from tgrad.ops.creation import arange
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["linear_cross_entropy", "LinearCrossEntropyOptions"]

# Per-(device type, input dtype) (acc_policy, chunking_method) of the "auto" sentinels,
# PyTorch's table; other pairs take _AUTO_FALLBACK.
_AUTO_DEFAULTS = {
    ("cuda", "bfloat16"): ("compact", "aspect_ratio:2"),
    ("cuda", "float16"): ("compact", "aspect_ratio:2"),
    ("cpu", "bfloat16"): ("accurate", "aspect_ratio"),
    ("cpu", "float16"): ("accurate", "aspect_ratio"),
}
_AUTO_FALLBACK = ("compact", "aspect_ratio:2")


@dataclasses.dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """Chunking options of ``linear_cross_entropy`` (PyTorch's fields and checks).

    batch_chunk_size: rows per chunk (None: set by chunking_method, or one chunk);
    chunking_method: "auto", "aspect_ratio[:N]" (chunk = next_pow2(ceil(N_rows /
    ceil(C / D))) // N, so a chunk's logits are about the input's size / N) or None;
    acc_policy / acc_dtype: accumulation precision (tgrad computes float16/bfloat16 in
    float32 under every policy; acc_dtype=float64 widens); allow_retain_graph: accepted,
    tgrad's backward always recomputes, so retain_graph works either way."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self) -> None:
        if self.acc_policy not in {"auto", "accurate", "balanced", "compact"}:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, sep, factor = str(self.chunking_method).partition(":")
            if not sep:
                factor = "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        if not (self.batch_chunk_size is None or (
                isinstance(self.batch_chunk_size, int) and self.batch_chunk_size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got "
                             f"{self.batch_chunk_size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (
                dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64):
            raise ValueError(f"acc_dtype must be one of {{None, tgrad.float16, tgrad.bfloat16, "
                             f"tgrad.float32, tgrad.float64}}, got {self.acc_dtype!r}. Pass "
                             f"acc_dtype=None to let the op pick automatically.")

    @staticmethod
    def _chunk_by_method(num_batches: int, in_features: int, num_classes: int,
                         method: str) -> int:
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        inc = -(-num_classes // in_features)
        target = -(-num_batches // inc)
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches: int, in_features: int, num_classes: int,
                dtype, device_type: str = "cpu") -> LinearCrossEntropyOptions:
        """The concrete options of one call: "auto" resolved, the chunk size computed
        (PyTorch's _adjust; an explicit batch_chunk_size turns "auto" chunking off)."""
        policy, method = self.acc_policy, self.chunking_method
        if method == "auto" and self.batch_chunk_size is not None:
            method = None
        ap, cm = _AUTO_DEFAULTS.get((device_type, dtype.name), _AUTO_FALLBACK)
        policy = ap if policy == "auto" else policy
        method = cm if method == "auto" else method
        chunk = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size,
                                                                      num_batches)
        if method is not None:
            chunk = self._chunk_by_method(num_batches, in_features, num_classes, method)
            if self.batch_chunk_size is not None and self.batch_chunk_size != chunk:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and "
                                 f"chunking_method ('{method}') give different chunk sizes "
                                 f"({self.batch_chunk_size} vs {chunk}); pass only one.")
        acc = self.acc_dtype
        if acc is None:
            acc = (dtypes.float32 if self.acc_policy == "auto"
                   and dtype in (dtypes.float16, dtypes.bfloat16) else dtype)
        return dataclasses.replace(self, acc_policy=policy, chunking_method=method,
                                   batch_chunk_size=max(1, chunk), acc_dtype=acc)


def _chunk_logits(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    z = x @ w.mT  # (B, C)
    return z if b is None else z + b


class _ChunkedLinearCrossEntropy(Function):
    """Per-row losses l (N,) of rows x (N, D) against W (C, D), b (C,), targets t (N,)
    with per-row weights rw (N,) (w[t], 0 where ignored); saves no (N, C) tensor."""

    name = "linear_cross_entropy"
    node_name = "LinearCrossEntropyBackward0"

    @staticmethod
    def forward(ctx, x, w, b, t, rw, chunk):
        ctx.chunk = chunk
        ctx.save_for_backward(x, w, b, t, rw)
        n, c = x.shape[0], w.shape[0]
        cls = arange(c, device=x.device)
        out = []
        for s in range(0, n, chunk):
            z = _chunk_logits(x[s:s + chunk], w, b)  # (B, C), freed after this chunk
            tc = t[s:s + chunk]
            picked = (z * (cls == tc.unsqueeze(1)).to(z.dtype)).sum(1)
            out.append((z.logsumexp(1) - picked) * rw[s:s + chunk])
        return cat(out) if out else rw * 0.0

    @staticmethod
    def backward(ctx, g):
        x, w, b, t, rw = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        chunk = ctx.chunk
        n, c = x.shape[0], w.shape[0]
        cls = arange(c, device=x.device)
        scale = g * rw  # (N,)
        dxs, dw, db = [], None, None
        for s in range(0, n, chunk):
            xc, tc = x[s:s + chunk], t[s:s + chunk]
            z = _chunk_logits(xc, w, b)
            dz = (z.softmax(1) - (cls == tc.unsqueeze(1)).to(z.dtype)) \
                * scale[s:s + chunk].unsqueeze(1)  # (B, C)
            if need_x:
                dxs.append(dz @ w)
            if need_w:
                term = dz.mT @ xc
                dw = term if dw is None else dw + term
            if need_b and b is not None:
                term = dz.sum(0)
                db = term if db is None else db + term
        dx = (cat(dxs) if dxs else x * 0.0) if need_x else None
        if need_w and dw is None:
            dw = w * 0.0
        if need_b and b is not None and db is None:
            db = b * 0.0
        return dx, dw, db, None, None, None


def _chunked(input: Tensor, linear_weight: Tensor, target: Tensor,  # noqa: A002
             linear_bias: Tensor | None, weight: Tensor | None, reduction: str,
             ignore_index: int, options: LinearCrossEntropyOptions) -> Tensor:
    batched = input.ndim == 2
    x = input if batched else input.unsqueeze(0)
    t = target if batched else target.reshape(1)
    n, d = x.shape
    c = linear_weight.shape[0]
    if tuple(t.shape) != (n,):
        raise ValueError(f"linear_cross_entropy: expected target of shape {[n] if batched else []}"
                         f" (class indices) for input of shape {list(input.shape)}, got "
                         f"{list(target.shape)}")
    opts = options._adjust(n, d, c, input.dtype, input.device.type)
    if weight is not None and tuple(weight.shape) != (c,):
        raise RuntimeError(f"linear_cross_entropy: expected weight of shape [{c}] (one per "
                           f"class), got {list(weight.shape)}")
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= c))
    if bool(bad.any()):
        raise IndexError(f"Target {int(t[bad][0])} is out of bounds.")
    ts = t.masked_fill(~valid, 0)
    acc = opts.acc_dtype
    (x, w, b), half = widen_halves(x, linear_weight, linear_bias)
    if acc is dtypes.float64:
        x, w = x.double(), w.double()
        b = None if b is None else b.double()
    rw = valid.to(x.dtype) if weight is None else weight.detach().to(x.dtype)[ts] * valid
    loss = _ChunkedLinearCrossEntropy.apply(x, w, b, ts, rw, opts.batch_chunk_size)
    if reduction == "none":
        out = loss if batched else loss[0]
    elif reduction == "sum":
        out = loss.sum()
    else:  # cross_entropy's weighted mean: sum w[t] l / sum w[t] (0 / 0 = nan: all ignored)
        out = loss.sum() / rw.sum()
    out = out.to(input.dtype) if acc is dtypes.float64 and half is None else out
    return rounded_to(out, half)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...) with input
    (D) or (N, D), linear_weight (C, D) or (C, d1, ..., dK, D); ignore_index=None: no
    ignored class for probability targets, -100 for indices. With ``options`` the rows go
    in chunks and the logits are never kept (see the module docstring)."""
    from tgrad.nn import functional as F
    F._check_tensor("linear_cross_entropy", input)
    F._check_tensor("linear_cross_entropy", linear_weight, "linear_weight")
    F._check_tensor("linear_cross_entropy", target, "target")
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           f"respectively")
    c = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (c, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(c, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batches, c, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    chunkable = (reduction in ("mean", "sum", "none") and label_smoothing == 0.0
                 and target.dtype is dtypes.int64 and not out_features)
    if options is not None and not chunkable:
        warnings.warn(f"linear_cross_entropy: ``options`` ignored; chunked path needs "
                      f"reduction in {{'mean','sum','none'}}, label_smoothing == 0, "
                      f"target.dtype == int64, out_features == (). Got "
                      f"reduction={reduction!r}, label_smoothing={label_smoothing}, "
                      f"target.dtype={target.dtype.name}, out_features={out_features}, "
                      f"linear_bias.shape="
                      f"{tuple(linear_bias.shape) if linear_bias is not None else None}.",
                      stacklevel=2)
    if options is not None and chunkable:
        return _chunked(input, linear_weight, target, linear_bias, weight, reduction,
                        ignore_index, options)
    w2, b2 = linear_weight, linear_bias
    if out_features:
        k = math.prod(out_features) * c
        w2 = linear_weight.reshape(k, in_features)
        b2 = None if linear_bias is None else linear_bias.reshape(k)
    logits = F.linear(input, w2, b2).reshape(logits_shape)
    return F.cross_entropy(logits, target, weight=weight, reduction=reduction,
                           ignore_index=ignore_index, label_smoothing=label_smoothing)
