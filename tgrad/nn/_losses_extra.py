"""More losses composed of tgrad ops (no primitive of their own), re-exported by
tgrad.nn.functional: margin_ranking_loss, hinge_embedding_loss, soft_margin_loss,
multilabel_soft_margin_loss, cosine_embedding_loss, multi_margin_loss,
multilabel_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
poisson_nll_loss and gaussian_nll_loss. Values, shapes, reductions and error texts are
PyTorch's; gradients come from the parts (``clamp(min=0)`` for the hinges, ``where`` for
the masks), so double backward works and they run on every backend. soft_margin_loss is one
node (``SoftMarginLoss``, PyTorch's name) over the same parts, its backward a formula; on
the CPU (float32/float64) multilabel_soft_margin_loss's rows, cosine_embedding_loss and
gaussian_nll_loss / poisson_nll_loss (same-shape operands; poisson without ``full``)
are one node each, on the NumPy arrays
(tgrad/backends/_numpy_mlsm.py, _numpy_cosemb.py, _numpy_gnll.py).

Shapes: N batch, C classes, D features; "reduced" means 'none' (per element / per
sample), 'mean' (NaN for an empty batch, as PyTorch) or 'sum'.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends._numpy_dtypes import fast_dtype
from tgrad.nn._composite import logsigmoid
from tgrad.nn.functional import (
    _check_class_weight_dtype,
    _check_float,
    _check_reduction,
    _check_tensor,
    _compute,
    _legacy_reduction,
    _not_differentiable,
    _reduced,
    softplus,
)
from tgrad.ops._common import broadcast_or_raise, fresh, require_tensor, wrap
from tgrad.ops.creation import arange
from tgrad.ops.creation import full as _full
from tgrad.ops.distances import pairwise_distance
from tgrad.ops.elementwise import clamp, log, minimum, node_variant, sigmoid, where
from tgrad.ops.gathering import gather
from tgrad.ops.scan import cumsum
from tgrad.tensor import Size, Tensor

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "cosine_embedding_loss", "multi_margin_loss",
           "multilabel_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss"]


def _size(shape) -> str:
    return repr(Size(shape))  # (PyTorch's message prints a torch.Size)


def _as_operand(target: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """``target`` as an operand of input's arithmetic: a float target keeps its dtype, so
    the loss is computed in the promoted dtype (float32 input, float64 target: float64, as
    PyTorch; the target is never rounded), a complex one too (a real input's loss is then
    complex, as PyTorch's arithmetic: its imaginary part is not dropped); an integer/bool
    target is taken in a floating or complex input's dtype (with an integer input both
    promote, as PyTorch's arithmetic)."""
    if target.dtype.is_floating_point or target.dtype.is_complex \
            or not (input.dtype.is_floating_point or input.dtype.is_complex):
        return target
    return target.to(input.dtype)


def _check_real_or_int(op: str, x: Tensor) -> None:
    """A real input of any dtype, as PyTorch's loss formulas take: an integer one is promoted
    by the float margin / exp / log in them (to the default dtype), a bool one raises the
    arithmetic's error; a complex one raises ``_check_float``'s error (no order for max(0, .))."""
    _check_tensor(op, x)
    if x.dtype.is_complex:
        _check_float(op, x)


@autocast_policy("fp32")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor,
                        margin: float = 0.0, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -y (x1 - x2) + margin), reduced. x1, x2, y of one number of dims (they
    broadcast); y is 1 (x1 should rank higher) or -1."""
    _check_real_or_int("margin_ranking_loss", input1)
    _check_tensor("margin_ranking_loss", input2, "input2")
    _check_tensor("margin_ranking_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {_size(input1.shape)}, input2: "
                           f"{_size(input2.shape)}, target: {_size(target.shape)} ")
    (a, b, y), half = _compute(input1, input2, _as_operand(target, input1))
    return _reduced(clamp(-y * (a - b) + margin, min=0.0), reduction, half)


@autocast_policy("fp32")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,  # noqa: A002
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """x where y == 1, max(0, margin - x) where y == -1 (PyTorch's sum of both masks for
    other y), input and target broadcast; reduced. An integer input computes in its dtype
    as PyTorch's (margin converted to it, truncated; uint8's margin - x wraps), so 'none' and
    'sum' give integers and 'mean' raises mean()'s error; a bool input raises."""
    _check_tensor("hinge_embedding_loss", input)
    _check_tensor("hinge_embedding_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    dt = input.dtype
    if dt is dtypes.bool_:  # PyTorch computes margin - x: its bool-subtraction error
        raise RuntimeError("hinge_embedding_loss: Subtraction, the `-` operator, with two "
                           "bool tensors is not supported. Use the `^` or `logical_xor()` "
                           "operator instead.")
    if not (dt.is_floating_point or dt.is_complex):
        broadcast_or_raise("hinge_embedding_loss", input.shape, target.shape)
        dtypes.check_value_fits("hinge_embedding_loss", margin, dt)
        m = _full(input.shape, int(margin), dtype=dt, device=input.device)
        loss = (where(target != 1, clamp(m - input, min=0), 0)
                + where(target != -1, input, 0))
        return _reduced(loss, reduction, None)
    _check_float("hinge_embedding_loss", input)
    (x,), half = _compute(input)
    broadcast_or_raise("hinge_embedding_loss", x.shape, target.shape)
    loss = (where(target != 1, clamp(-x + margin, min=0.0), 0.0)
            + where(target != -1, x, 0.0))
    return _reduced(loss, reduction, half)


@autocast_policy("fp32")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None,  # noqa: A002
                     reduce=None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y x)) (as a stable softplus), reduced; target broadcasts to input's
    shape but may not enlarge it."""
    _check_tensor("soft_margin_loss", input)
    if not input.dtype.is_complex:
        _check_float("soft_margin_loss", input)
    _check_tensor("soft_margin_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    shape = broadcast_or_raise("soft_margin_loss", input.shape, target.shape)
    if shape != input.shape:
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    if target.dtype.is_complex and not input.dtype.is_complex:  # PyTorch's error
        raise RuntimeError(f"soft_margin_loss: result type "
                           f"{dtypes.SCALAR_TYPE_NAMES[target.dtype]} can't be cast to the "
                           f"desired output type {dtypes.SCALAR_TYPE_NAMES[input.dtype]} "
                           f"(a complex target needs a complex input)")
    (x, y), half = _compute(input, target.to(input.dtype))
    if x.dtype.is_complex:  # PyTorch's formula, log1p(exp(-y x)) (softplus has no complex)
        return _reduced((-y * x).exp().log1p(), reduction, half)
    loss = SoftMarginLoss.apply(x, y, reduction)
    return loss if half is None else loss.to(half)


_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}  # PyTorch's at::Reduction values


class SoftMarginLoss(Function):
    """loss = softplus(z) = log(1 + exp(z)) (stable), z = -y x, reduced ('none': x's shape;
    'mean' / 'sum': 0-d); x and y of one shape (the caller broadcasts y). One node,
    PyTorch's SoftMarginLossBackward0 (its one edge is input's; target's is hidden, but
    tgrad differentiates a target that requires grad, where PyTorch refuses).
    With s = sigmoid(z) = d softplus / dz and G = g ('none'), g ('sum') or g / numel
    ('mean'), broadcast over x: dx = -y s G;  dy = -x s G. Written with mul / sigmoid,
    so the backward differentiates again (d(dx)/dx = y^2 s (1 - s) G)."""

    name = "soft_margin_loss"
    node_name = "SoftMarginLossBackward0"
    hidden_edges = (1,)
    saved_attributes = {"_saved_self": 0, "_saved_target": 1,
                        "_saved_reduction": lambda node: _REDUCTION_ENUM[node.reduction]}

    @staticmethod
    def forward(ctx, x, y, reduction):
        ctx.save_for_backward(x, y)
        ctx.reduction = reduction
        loss = softplus(-y * x, 1.0, math.inf)
        return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" \
            else loss

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        need_x, need_y, _ = ctx.needs_input_grad
        if ctx.reduction == "mean":
            g = g / x.numel()
        gs = sigmoid(-y * x) * g
        gx = -y * gs if need_x else None
        gy = -x * gs if need_y else None
        return gx, gy, None


@autocast_policy("fp32", cpu=None)
def multilabel_soft_margin_loss(input: Tensor, target: Tensor,  # noqa: A002
                                weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:
    """-mean_c w_c (y_c log sigmoid(x_c) + (1 - y_c) log sigmoid(-x_c)) over the last dim
    (C) of input (N, C) or (C); target (0/1) broadcasts; 'none' gives (N,) (or ())."""
    _check_float("multilabel_soft_margin_loss", input)
    _check_tensor("multilabel_soft_margin_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    (x, y), half = _compute(input, _as_operand(target, input))
    if _mlsm_on_numpy(x, y, weight):
        loss = _MultilabelSoftMargin.apply(x, y, weight)
        return _reduced(loss, reduction, half)
    loss = -(y * logsigmoid(x) + (1.0 - y) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(input.ndim - 1) / input.shape[-1]
    return _reduced(loss, reduction, half)


def _mlsm_on_numpy(x: Tensor, y: Tensor, weight) -> bool:
    """Whether multilabel_soft_margin_loss's rows take the one-node NumPy path: CPU
    tensors of one float32/float64 dtype, y broadcasting to x without growing it, no
    gradient wanted for weight nor for a broadcast y (the composite differentiates them)."""
    dt = x.dtype
    if x.device.type != "cpu" or dt not in (dtypes.float32, dtypes.float64) or x.ndim == 0:
        return False
    for t in (y, weight):
        if t is None:
            continue
        if (t.device.type != "cpu" or t.dtype is not dt
                or (t.requires_grad and (t is weight or t.shape != x.shape))
                or t.ndim > x.ndim or any(a not in (1, b) for a, b in
                                          zip(t.shape[::-1], x.shape[::-1]))):
            return False
    return True


class _MultilabelSoftMargin(Function):
    """rows = sum_c w_c l_c / C over the last dim, l = -(y logsigmoid(x) + (1 - y)
    logsigmoid(-x)), one node on the CPU (the composite's values, bit for bit);
    dx = g_row / C w_c ((1 - y) sigmoid(x) - y sigmoid(-x)) (= sigmoid(x) - y, without its
    cancellation); dy = -g_row / C w_c x (logsigmoid(x) - logsigmoid(-x) = x); as tgrad ops
    under create_graph."""

    name = "multilabel_soft_margin_rows"
    node_name = "DivBackward0"  # (the composite's: its sum over C / C)

    @staticmethod
    def forward(ctx, x, y, weight):
        from tgrad.backends._numpy_mlsm import mlsm_rows_fwd
        ctx.save_for_backward(x, y, weight)
        return wrap(mlsm_rows_fwd(x._data, y._data, None if weight is None else weight._data),
                    x.device)

    @staticmethod
    def backward(ctx, g):
        x, y, weight = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad[:2]
        dx = dy = None
        if differentiable_formula():
            c = (g / x.shape[-1]).unsqueeze(-1)
            if weight is not None:
                c = c * weight
            if need_x:
                dx = c * ((1.0 - y) * sigmoid(x) - y * sigmoid(-x))
            if need_y:
                dy = -(c * x)
            return dx, dy, None
        from tgrad.backends._numpy_mlsm import mlsm_rows_bwd, mlsm_rows_bwd_target
        w = None if weight is None else weight._data
        if need_x:
            dx = wrap(mlsm_rows_bwd(g._data, x._data, y._data, w), x.device)
        if need_y:
            dy = wrap(mlsm_rows_bwd_target(g._data, x._data, w), x.device)
        return dx, dy, None


_COS_EPS = 1e-12  # PyTorch's EPSILON added to both squared norms


@autocast_policy("fp32")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor,
                          margin: float = 0.0, size_average=None, reduce=None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1;
    cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12)(sum(x2^2) + 1e-12)) over D.
    x1, x2 (N, D) with y (N,), or (D,) with a 0-d y (the inputs broadcast); reduced."""
    _check_float("cosine_embedding_loss", input1)
    _check_tensor("cosine_embedding_loss", input2, "input2")
    _check_tensor("cosine_embedding_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if td == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{td}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    (a, b), half = _compute(input1, input2)
    if _cos_emb_on_numpy(a, b, target):
        loss = _COS_EMB_NODES[reduction].apply(a, b, target, float(margin), reduction)
        return loss if half is None else loss.to(half)
    prod = (a * b).sum(td)
    cos = prod / (((a * a).sum(td) + _COS_EPS) * ((b * b).sum(td) + _COS_EPS)).sqrt()
    broadcast_or_raise("cosine_embedding_loss", target.shape, cos.shape)
    loss = (where(target == 1, 1.0 - cos, 0.0)
            + where(target == -1, clamp(cos - margin, min=0.0), 0.0))
    return _reduced(loss, reduction, half)


def _cos_emb_on_numpy(a: Tensor, b: Tensor, target: Tensor) -> bool:
    """Whether cosine_embedding_loss takes the one-node NumPy path: CPU inputs of one
    shape and one float32/float64 dtype, a real CPU target of the rows' shape (no
    broadcast) that wants no gradient (the composite has no edge to it: comparisons)."""
    dt = a.dtype
    return (a.device.type == "cpu" and b.device.type == "cpu" and target.device.type == "cpu"
            and dt in (dtypes.float32, dtypes.float64) and b.dtype is dt
            and a.shape == b.shape and target.shape == a.shape[:-1]
            and not target.requires_grad and not target.dtype.is_complex)


class _CosineEmbedding(Function):
    """cosine_embedding_loss, reduced, as one node on the CPU (the composite's values, bit
    for bit): x1, x2 (N, D) (or (D,)), y (N,) (or ()); cos = p / den, p = sum(x1 x2),
    den = sqrt(q1 q2), q_i = sum(x_i^2) + 1e-12. With gc = dl/dcos G per row (-G where
    y == 1, G where y == -1 and cos - margin > 0, G the row's share of g):
    dx1 = gc (x2 / den - cos x1 / q1), dx2 = gc (x1 / den - cos x2 / q2); as tgrad ops
    under create_graph (or inside forward AD). One subclass per reduction: PyTorch's node
    names (AddBackward0 for 'none', MeanBackward0, SumBackward0)."""

    name = "cosine_embedding_loss"

    @staticmethod
    def forward(ctx, x1, x2, y, margin, reduction):
        from tgrad.backends._numpy_cosemb import cos_emb_fwd
        loss, ctx.stats = cos_emb_fwd(x1._data, x2._data, y._data, margin, reduction)
        ctx.save_for_backward(x1, x2, y)
        ctx.margin, ctx.reduction = margin, reduction
        return wrap(loss, x1.device)

    @staticmethod
    def backward(ctx, g):
        x1, x2, y = ctx.saved_tensors
        need1, need2 = ctx.needs_input_grad[:2]
        if differentiable_formula():
            return (*_cos_emb_grads(g, x1, x2, y, ctx.margin, ctx.reduction, need1, need2),
                    None, None, None)
        from tgrad.backends._numpy_cosemb import cos_emb_bwd, cos_emb_grad_cos
        gc = cos_emb_grad_cos(g._data, y._data, ctx.stats[0], ctx.margin, ctx.reduction)
        dx1, dx2 = cos_emb_bwd(gc, x1._data, x2._data, ctx.stats, need1, need2)
        return (None if dx1 is None else wrap(dx1, x1.device),
                None if dx2 is None else wrap(dx2, x1.device), None, None, None)


def _cos_emb_grads(g: Tensor, x1: Tensor, x2: Tensor, y: Tensor, margin: float,
                   reduction: str, need1: bool, need2: bool) -> tuple:
    """_CosineEmbedding's backward as tgrad ops (differentiable again): the row
    statistics recomputed, then dx_i = gc (x_j / den - cos x_i / q_i) (see the class)."""
    d = x1.ndim - 1
    q1 = (x1 * x1).sum(d) + _COS_EPS
    q2 = (x2 * x2).sum(d) + _COS_EPS
    den = (q1 * q2).sqrt()
    cos = (x1 * x2).sum(d) / den
    if reduction == "mean":
        g = g / max(cos.numel(), 1)
    gc = where(y == 1, -g, 0.0) + where((y == -1) & (cos - margin > 0), g, 0.0)
    c_other = (gc / den).unsqueeze(-1)
    gcc = gc * cos
    dx1 = c_other * x2 - (gcc / q1).unsqueeze(-1) * x1 if need1 else None
    dx2 = c_other * x1 - (gcc / q2).unsqueeze(-1) * x2 if need2 else None
    return dx1, dx2


_COS_EMB_NODES = {"none": node_variant(_CosineEmbedding, "AddBackward0"),
                  "mean": node_variant(_CosineEmbedding, "MeanBackward0"),
                  "sum": node_variant(_CosineEmbedding, "SumBackward0")}


def _margin_input_check(op: str, input: Tensor) -> None:  # noqa: A002
    if input.ndim > 2 or (input.ndim >= 1 and input.shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")


def _long_target(target: Tensor) -> None:
    if target.dtype.name != "int64":
        found = dtypes.SCALAR_TYPE_NAMES[target.dtype]
        raise RuntimeError(f"expected scalar type Long but found {found}")


@autocast_policy("fp32")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1,  # noqa: A002
                      margin: float = 1.0, weight: Tensor | None = None, size_average=None,
                      reduce=None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge: loss_i = sum_{j != y_i} w[y_i] max(0, margin - x[i, y_i] +
    x[i, j])^p / C for input (N, C) (or (C,), or a 0-d input as one class) and class
    indices target (N,) (int64); 'none' gives (N,) (() for a 1-D input). ``weight`` (C,)
    gets no gradient (PyTorch raises if it requires one)."""
    _check_float("multi_margin_loss", input)
    _check_tensor("multi_margin_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _margin_input_check("multi_margin_loss", input)
    _long_target(target)
    n = input.shape[0] if input.ndim == 2 else 1
    c = input.shape[-1] if input.ndim else 1
    if target.ndim > 1 or target.numel() != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")
    if weight is not None:
        if weight.numel() != c:
            raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                               f"{list(weight.shape)}")
        _check_class_weight_dtype("multi_margin_loss", input, weight)
        _not_differentiable("multi_margin_loss", "weight", weight)
    t = target.reshape(n)
    if bool(((t < 0) | (t >= c)).any()):  # one synchronizing read on a GPU
        raise RuntimeError("target out of range")
    (x,), half = _compute(input.reshape(n, c))
    xy = gather(x, 1, t.unsqueeze(1))
    h = clamp(x - xy + margin, min=0.0)
    if p == 2:
        h = h * h
    h = where(arange(c, device=x.device) == t.unsqueeze(1), 0.0, h)
    loss = h.sum(1) / c
    if weight is not None:
        loss = loss * weight.detach().to(x.dtype)[t]
    if input.ndim < 2 and target.ndim == 0:  # (a (1,) target keeps its dim, as PyTorch)
        loss = fresh(loss.reshape(()))  # (a view of the op's own temporary: a new tensor)
    return _reduced(loss, reduction, half)


@autocast_policy("fp32")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None,  # noqa: A002
                           reduce=None, reduction: str = "mean") -> Tensor:
    """loss_i = sum_{j in T_i} sum_{c not in T_i} max(0, 1 - (x[i, j] - x[i, c])) / C, with
    T_i the class indices of target[i] (int64, input's shape (N, C) or (C,)) before its
    first -1 (a repeated index counts again, as PyTorch); 'none' gives (N,) (or ())."""
    _check_float("multilabel_margin_loss", input)
    _check_tensor("multilabel_margin_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _margin_input_check("multilabel_margin_loss", input)
    _long_target(target)
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    n = input.shape[0] if input.ndim == 2 else 1
    c = input.shape[-1] if input.ndim else 1
    t = target.detach().reshape(n, c)
    if bool(((t < -1) | (t >= c)).any()):  # one synchronizing read on a GPU
        raise RuntimeError("argument #2 'target' is out of range")
    (x,), half = _compute(input.reshape(n, c))
    if _fast_cpu(x):
        loss = _MultilabelMargin.apply(x, _label_counts(t._data))
        if input.ndim < 2:
            loss = fresh(loss.reshape(()))
        return _reduced(loss, reduction, half)
    # cnt[i, k]: how often class k is a target of sample i before its first -1 (on the
    # device: a one-hot compare, (N, C, C) as the pairs below, with no index-bounds reads)
    live = cumsum(t == -1, 1) == 0
    hit = (t.unsqueeze(2) == arange(c, device=t.device)) & live.unsqueeze(2)
    cnt = hit.to(x.dtype).sum(1)
    other = (cnt == 0).to(x.dtype)
    # pairs (target j, non-target k): (N, C_j, C_k)
    h = clamp(1.0 - x.unsqueeze(2) + x.unsqueeze(1), min=0.0)
    loss = (h * cnt.unsqueeze(2) * other.unsqueeze(1)).sum((1, 2)) / c
    if input.ndim < 2:
        loss = fresh(loss.reshape(()))  # (a view of the op's own temporary: a new tensor)
    return _reduced(loss, reduction, half)


def _fast_cpu(x: Tensor) -> bool:
    """Whether a loss runs as its one-node NumPy form: a CPU float32/float64 input."""
    return x.device.type == "cpu" and x.dtype in (dtypes.float32, dtypes.float64)


def _label_counts(t: np.ndarray) -> np.ndarray:
    """(N, C) int64: how often class k is a target of sample i before its first -1 in
    t (N, C) int64 (entries in [-1, C))."""
    n, c = t.shape
    live = np.cumsum(t == -1, 1) == 0
    rows = np.broadcast_to(np.arange(n)[:, None] * c, t.shape)
    return np.bincount((rows + t)[live], minlength=n * c).reshape(n, c)


class _MultilabelMargin(Function):
    """multilabel_margin_loss per sample on the CPU (float32/float64): x (N, C) -> (N,),
    loss_i = sum_{j, k} h[i, j, k] cnt[i, j] other[i, k] / C, h = clamp(1 - x_j + x_k, 0),
    cnt (N, C) the label counts (``_label_counts``), other = (cnt == 0): the composite's
    steps as NumPy calls in the same order (bit-identical), one node instead of ~10 (PyTorch's
    MultilabelMarginLossBackward0).
        dx_k = sum_j gh[i, j, k] - sum_k' gh[i, k, k'],  gh = (g / C) other_k cnt_j [h > 0]
    (the clamp's strict mask; the composite's broadcast sums); under create_graph the same
    as tgrad ops (linear in g, the mask a constant: differentiates again)."""

    name = "multilabel_margin_loss"
    node_name = "MultilabelMarginLossBackward0"

    @staticmethod
    def forward(ctx, x, cnt):
        with np.errstate(all="ignore"):  # inf - inf: NaN without a warning, as the composite
            return _MultilabelMargin._forward(ctx, x, cnt)

    @staticmethod
    def _forward(ctx, x, cnt):
        xd = x._data
        dt = xd.dtype.type
        cw = cnt.astype(xd.dtype)
        other = (cw == 0).astype(xd.dtype)
        h = np.add(np.subtract(dt(1.0), xd)[:, :, None], xd[:, None, :])  # (N, C_j, C_k)
        np.maximum(h, dt(0), out=h)
        ctx.h, ctx.cw, ctx.other, ctx.c = h, cw, other, xd.shape[1]
        s = np.multiply(h, cw[:, :, None])
        np.multiply(s, other[:, None, :], out=s)
        return wrap(np.true_divide(s.sum((1, 2)), dt(ctx.c)), x.device)

    @staticmethod
    def backward(ctx, g):
        if differentiable_formula():
            mask = wrap(ctx.h > 0, g.device)
            gl = (g / ctx.c).reshape(-1, 1, 1)
            gh = where(mask, gl * wrap(ctx.other, g.device).unsqueeze(1)
                       * wrap(ctx.cw, g.device).unsqueeze(2), 0.0)
            return gh.sum(1) - gh.sum(2), None
        with np.errstate(all="ignore"):
            return _MultilabelMargin._backward(ctx, g), None

    @staticmethod
    def _backward(ctx, g):
        gd = g._data
        gl = np.true_divide(gd, gd.dtype.type(ctx.c))
        if ctx.c <= _MLM_EXACT_C and np.isfinite(gl).all():
            return wrap(_mlm_grad_counts(gl, ctx.h, ctx.cw, ctx.other), g.device)
        gk = np.multiply(gl[:, None], ctx.other)  # (N, C_k): the sum's g times other
        gh = np.multiply(gk[:, None, :], ctx.cw[:, :, None])  # (N, C_j, C_k) times cnt
        # where(h > 0, gh, +0) as a bit mask (10x faster than np.where on a random mask)
        ut = np.uint32 if gh.dtype == np.float32 else np.uint64
        bits = np.multiply(ctx.h > 0, ut(np.iinfo(ut).max), dtype=ut)
        gh = np.bitwise_and(gh.view(ut), bits, out=bits).view(gh.dtype)
        return wrap(np.subtract(gh.sum(1), gh.sum(2)), g.device)


_MLM_EXACT_C = 4096  # C * C < 2**24: _mlm_grad_counts' integer sums exact in float32


def _mlm_grad_counts(gl: np.ndarray, h: np.ndarray, cw: np.ndarray,
                     other: np.ndarray) -> np.ndarray:
    """_MultilabelMargin's dx (N, C) from gl = g / C (N,), finite, as gl times integer
    counts: with m = [h > 0] (N, C_j, C_k),
        dx_k = gl (other_k sum_j cw_j m_jk - cw_k sum_k' other_k' m_kk')
    the two sums (integers <= C * C, exact in float32 for C <= 4096) by batched matmuls of
    the 0/1 mask, then one product per element: the exact gl * count rounded once (the
    sums of gh's copies of gl * cw_j could round at each add; equal where those are exact,
    e.g. a power-of-two gl, and otherwise at least as close to the float64 value). ~6x
    faster than the (N, C, C) gh and its two sums (a non-finite gl keeps that path: its
    NaNs from inf * 0). float32 vs float64 in 300 random cases: max error 1.25 eps * 2|g|
    (the sums' 2.2)."""
    a = np.greater(h, 0).astype(h.dtype)
    t1 = np.matmul(cw[:, None, :], a)[:, 0, :]  # sum_j cw_j m_jk
    np.multiply(t1, other, out=t1)
    t2 = np.matmul(a, other[:, :, None])[:, :, 0]  # sum_k other_k m_jk
    np.multiply(t2, cw, out=t2)
    np.subtract(t1, t2, out=t1)
    np.multiply(gl[:, None], t1, out=t1)
    # + 0: a zero is +0.0 (gl < 0 made -0.0; the sums' zeros were +0.0 in every random
    # case tried; only a target scored 1 above every non-target, every other target within
    # 1 below it, gave -0.0 there)
    return np.add(t1, t1.dtype.type(0), out=t1)


def _triplet_dims(op: str, anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    """PyTorch's checks: three tensors of one number of dims."""
    for pos, (name, t) in enumerate((("anchor", anchor), ("positive", positive),
                                     ("negative", negative)), 1):
        require_tensor(op, t, name, pos)
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == p and p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{p}D, and negative {n}D inputs")


@autocast_policy("fp32")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, pos) - d(a, neg)), d = pairwise_distance(., ., p, eps) over the
    last dim (inputs (N, D) or (D,), broadcasting); with ``swap`` d(a, neg) is
    min(d(a, neg), d(pos, neg)). Reduced."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    # (integer inputs: promoted by eps; complex: real distances, pairwise_distance's norm of
    # the complex differences)
    _triplet_dims("triplet_margin_loss", anchor, positive, negative)
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dn = minimum(dn, pairwise_distance(positive, negative, p, eps))
    return _reduced(clamp(dp - dn + margin, min=0.0), reduction, None)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, pos) - d(a, neg)) for any ``distance_function`` d (default
    pairwise_distance), ``swap`` as triplet_margin_loss; reduced."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _triplet_dims("triplet_margin_with_distance_loss", anchor, positive, negative)
    d = pairwise_distance if distance_function is None else distance_function
    dp, dn = d(anchor, positive), d(anchor, negative)
    if swap:
        dn = minimum(dn, d(positive, negative))
    return _reduced(clamp(dp - dn + margin, min=0.0), reduction, None)


@autocast_policy("fp32")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean") -> Tensor:
    """exp(x) - t x (log_input) or x - t log(x + eps); with ``full`` plus the Stirling term
    t log(t) - t + 0.5 log(2 pi t) where t > 1. Input and target broadcast; reduced."""
    _check_tensor("poisson_nll_loss", input)  # integer: exp / log promote it; complex: a
    _check_tensor("poisson_nll_loss", target, "target")  # complex loss (PyTorch's formula)
    if full and (input.dtype.is_complex or target.dtype.is_complex):
        dt = input.dtype if input.dtype.is_complex else target.dtype
        raise dtypes.kernel_not_implemented("le_cpu", dt, " (poisson_nll_loss: full=True "
                                            "compares the target with 1, which needs real "
                                            "tensors)")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    broadcast_or_raise("poisson_nll_loss", input.shape, target.shape)
    (x, t), half = _compute(input, _as_operand(target, input))
    if not full and _poisson_on_numpy(x, t):
        loss = _POISSON_NODES[reduction].apply(x, t, bool(log_input), float(eps), reduction)
        return loss if half is None else loss.to(half)
    loss = x.exp() - t * x if log_input else x - t * log(x + eps)
    if full:
        big = t > 1
        ts = where(big, t, 2.0)  # finite where the term is not taken (no NaN gradient)
        stirling = ts * log(ts) - ts + log(ts * (2.0 * math.pi)) * 0.5
        loss = loss + where(big, stirling, 0.0)
    return _reduced(loss, reduction, half)


def _poisson_on_numpy(x: Tensor, t: Tensor) -> bool:
    """Whether poisson_nll_loss (without ``full``) takes the one-node NumPy path: CPU input
    and target of one shape (no broadcast) and one float32/float64 dtype."""
    dt = x.dtype
    return (x.device.type == "cpu" and t.device.type == "cpu"
            and dt in (dtypes.float32, dtypes.float64) and t.dtype is dt and x.shape == t.shape)


class _PoissonNLL(Function):
    """poisson_nll_loss without ``full``, reduced, as one node on the CPU (the composite's
    values and gradients, bit for bit): x, t of one shape; l = exp(x) - t x (log_input) or
    x - t log(x + eps). With G the element's share of g: dx = G (exp(x) - t), dt = -G x, or
    dx = G (1 - t / (x + eps)), dt = -G log(x + eps); as tgrad ops under create_graph (or
    inside forward AD). One subclass per reduction: PyTorch's last node (SubBackward0,
    MeanBackward0, SumBackward0)."""

    name = "poisson_nll_loss"

    @staticmethod
    def forward(ctx, x, t, log_input, eps, reduction):
        from tgrad.backends._numpy_gnll import poisson_fwd
        loss, ctx.arrays = poisson_fwd(x._data, t._data, log_input, eps, reduction)
        ctx.save_for_backward(x, t)
        ctx.log_input, ctx.eps, ctx.reduction = log_input, eps, reduction
        return wrap(loss, x.device)

    @staticmethod
    def backward(ctx, g):
        x, t = ctx.saved_tensors
        need_x, need_t = ctx.needs_input_grad[:2]
        if differentiable_formula():
            return (*_poisson_grads(g, x, t, ctx.log_input, ctx.eps, ctx.reduction,
                                    need_x, need_t), None, None, None)
        from tgrad.backends._numpy_gnll import poisson_bwd
        dx, dt = poisson_bwd(g._data, x._data, t._data, ctx.arrays, ctx.log_input,
                             ctx.reduction, need_x, need_t)
        return (None if dx is None else wrap(dx, x.device),
                None if dt is None else wrap(dt, x.device), None, None, None)


def _poisson_grads(g: Tensor, x: Tensor, t: Tensor, log_input: bool, eps: float,
                   reduction: str, need_x: bool, need_t: bool) -> tuple:
    """_PoissonNLL's backward as tgrad ops (differentiable again; see the class)."""
    if reduction == "mean":
        g = g / max(x.numel(), 1)
    m = -g
    if log_input:
        dx = g * x.exp() + m * t if need_x else None
        dt = m * x if need_t else None
    else:
        xe = x + eps
        dx = g + m * t / xe if need_x else None
        dt = m * log(xe) if need_t else None
    return dx, dt


_POISSON_NODES = {"none": node_variant(_PoissonNLL, "SubBackward0"),
                  "mean": node_variant(_PoissonNLL, "MeanBackward0"),
                  "sum": node_variant(_PoissonNLL, "SumBackward0")}


@autocast_policy("fp32", cpu=None)
def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float,  # noqa: A002
                      full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 (log(max(var, eps)) + (x - t)^2 / max(var, eps)) (+ 0.5 log(2 pi) with
    ``full``), reduced. ``var`` (a tensor or a float) has input's shape, or input's shape
    without its last dim, or input's shape with one dim of size 1; the clamp at eps is not
    differentiated (as PyTorch's no_grad clamp_). target broadcasts."""
    _check_float("gaussian_nll_loss", input)
    _check_tensor("gaussian_nll_loss", target, "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _full(input.shape, float(var), dtype=input.dtype, device=input.device)
    else:
        _check_tensor("gaussian_nll_loss", var, "var")
        if var.numel() and _any_negative(var):
            raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                v for s, v in zip(input.shape, var.shape) if s != v) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    (x, t, v), half = _compute(input, target, _as_operand(var, input))
    if _gnll_on_numpy(x, t, v):
        loss = _GNLL_NODES[reduction, bool(full)].apply(x, t, v, float(eps), bool(full),
                                                        reduction)
        return loss if half is None else loss.to(half)
    v = _clamped_var(v, eps)
    loss = (log(v) + (x - t) ** 2 / v) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduced(loss, reduction, half)


def _clamped_var(v: Tensor, eps: float) -> Tensor:
    """max(v, eps) (NaN stays NaN) with the identity's gradient everywhere (PyTorch's
    no_grad clamp_ of a clone)."""
    return where(v >= eps, v, v - v.detach() + eps)


def _any_negative(var: Tensor) -> bool:
    """Whether var has an entry < 0 (NaN is not): on the NumPy array for a CPU
    float32/float64 var (no graph, no tgrad ops), else by tgrad ops."""
    if var.device.type == "cpu" and fast_dtype(var._data.dtype):
        return bool(np.less(var._data, 0).any())
    return bool((var < 0).any())


def _gnll_on_numpy(x: Tensor, t: Tensor, v: Tensor) -> bool:
    """Whether gaussian_nll_loss takes the one-node NumPy path: CPU input, target and var
    of one shape (no broadcast: var of (N, 1) or (N,) keeps the composite) and one
    float32/float64 dtype."""
    dt = x.dtype
    return (x.device.type == "cpu" and t.device.type == "cpu" and v.device.type == "cpu"
            and dt in (dtypes.float32, dtypes.float64) and t.dtype is dt and v.dtype is dt
            and x.shape == t.shape == v.shape)


class _GaussianNLL(Function):
    """gaussian_nll_loss, reduced, as one node on the CPU (the composite's values and
    gradients, bit for bit): x, t, v of one shape S; vc = max(v, eps),
    l = 0.5 (log(vc) + (x - t)^2 / vc) (+ 0.5 log(2 pi)). With G the element's share of
    g and r = G / 2 / vc: dx = 2 r (x - t), dt = -dx, dv = r - r (x - t)^2 / vc (the clamp
    not differentiated: the identity's gradient, unmasked); as tgrad ops under
    create_graph (or inside forward AD). One subclass per reduction (and ``full`` for
    'none'): PyTorch's last node (MulBackward0 / AddBackward0, MeanBackward0,
    SumBackward0)."""

    name = "gaussian_nll_loss"

    @staticmethod
    def forward(ctx, x, t, v, eps, full, reduction):
        from tgrad.backends._numpy_gnll import gnll_fwd
        loss, ctx.arrays = gnll_fwd(x._data, t._data, v._data, eps, full, reduction)
        ctx.save_for_backward(x, t, v)
        ctx.eps, ctx.reduction = eps, reduction
        return wrap(loss, x.device)

    @staticmethod
    def backward(ctx, g):
        x, t, v = ctx.saved_tensors
        need = ctx.needs_input_grad[:3]
        if differentiable_formula():
            return (*_gnll_grads(g, x, t, v, ctx.eps, ctx.reduction, *need), None, None, None)
        from tgrad.backends._numpy_gnll import gnll_bwd
        grads = gnll_bwd(g._data, ctx.arrays, ctx.reduction, *need)
        return (*(None if a is None else wrap(a, x.device) for a in grads), None, None, None)


def _gnll_grads(g: Tensor, x: Tensor, t: Tensor, v: Tensor, eps: float, reduction: str,
                need_x: bool, need_t: bool, need_v: bool) -> tuple:
    """_GaussianNLL's backward as tgrad ops (differentiable again; see the class)."""
    vc = _clamped_var(v, eps)
    d = x - t
    if reduction == "mean":
        g = g / max(d.numel(), 1)
    r = g * 0.5 / vc
    dx = r * (d * 2) if need_x or need_t else None
    dv = r - r * (d * d) / vc if need_v else None
    return (dx if need_x else None), (-dx if need_t else None), dv


_GNLL_MEAN = node_variant(_GaussianNLL, "MeanBackward0")
_GNLL_SUM = node_variant(_GaussianNLL, "SumBackward0")
_GNLL_NODES = {("none", False): node_variant(_GaussianNLL, "MulBackward0"),
               ("none", True): node_variant(_GaussianNLL, "AddBackward0"),
               ("mean", False): _GNLL_MEAN, ("mean", True): _GNLL_MEAN,
               ("sum", False): _GNLL_SUM, ("sum", True): _GNLL_SUM}
