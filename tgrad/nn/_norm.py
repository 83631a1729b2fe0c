"""batch_norm, group_norm, instance_norm and rms_norm, re-exported by tgrad.nn.functional.

Shapes (PyTorch's): input (N, C, *) with channels on dim 1; weight and bias (C,).
batch_norm is one op (``BatchNorm``, PyTorch's NativeBatchNormBackward0 node): per-channel
statistics reduced over the non-channel dims in place (no channel-major copy), its
backward one formula; instance_norm is batch_norm of the (1, N C, *) view (PyTorch's
ViewBackward0 over NativeBatchNormBackward0). group_norm is one op (``GroupNorm``,
NativeGroupNormBackward0) over the fused layer_norm primitives. Running statistics are
updated in place outside the graph with the unbiased variance, as PyTorch does.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd import function as _function
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import STATE, is_grad_enabled, no_grad
from tgrad.backends import _numpy_nn as _np_nn
from tgrad.backends import _numpy_norms as _np_norms
from tgrad.nn.functional import _check_float, _check_tensor
from tgrad.ops._common import backend_of, fresh, rounded_to, widen_halves, wrap
from tgrad.tensor import Tensor, _int_arg

__all__ = ["batch_norm", "group_norm", "instance_norm", "rms_norm"]


def _widened(x: Tensor) -> Tensor:
    """float16/bfloat16 inputs are normalised in float32 and rounded once at the end."""
    return x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


def _check_params(op: str, x: Tensor, c: int, **params) -> None:
    for name, p in params.items():
        if p is None:
            continue
        _check_tensor(op, p, name)
        if p.numel() != c:
            if op == "group_norm":  # (PyTorch's group_norm text; batch/instance_norm's below)
                raise RuntimeError(f"Expected {name} to be a vector of size equal to the number "
                                   f"of channels in input, but got {name} of shape "
                                   f"{list(p.shape)} and input of shape {list(x.shape)}")
            raise RuntimeError(f"{name} should contain {c} elements not {p.numel()}")
        if p.device != x.device:
            raise RuntimeError(f"{op}: expected {name} on {x.device} (the input's device), "
                               f"got {p.device}")


def _check_vectors(op: str, x: Tensor, **params) -> None:
    """Per-channel parameters / statistics must be vectors (C,): a (C, 1) one would
    broadcast against the spatial dims (PyTorch's group_norm text; batch_norm's weight and
    bias, which PyTorch reads by numel, are not checked here)."""
    for name, p in params.items():
        if isinstance(p, Tensor) and p.ndim != 1:
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(p.shape)} "
                               f"and input of shape {list(x.shape)} ({op})")


def _check_affine_dtypes(op: str, x: Tensor, **params) -> None:
    """PyTorch's CPU group_norm / instance_norm rule for weight and bias: a float16/bfloat16
    input takes float32 or its own dtype, any other floating input only its own."""
    if x.device.type != "cpu" or not x.dtype.is_floating_point:
        return
    half = x.dtype in (dtypes.float16, dtypes.bfloat16)
    for name, p in params.items():
        if not isinstance(p, Tensor) or p.dtype is x.dtype or (half and p.dtype is
                                                               dtypes.float32):
            continue
        what = ("all inputs must share same datatype." if x.dtype is dtypes.float64 else
                "expect parameter to have scalar type of Float")
        raise RuntimeError(f"mixed dtype (CPU): {what} ({op}: input {x.dtype.name}, {name} "
                           f"{p.dtype.name})")


def _check_param_dtypes(op: str, x: Tensor, **params) -> None:
    """PyTorch's CPU batch_norm dtype rule: a float16/bfloat16 input takes float32 or its own
    dtype's parameters and statistics; any other input only its own dtype (a float64 input
    with a float32 module is a RuntimeError, not a silent promotion)."""
    if not x.dtype.is_floating_point:
        return
    ok = ((x.dtype, dtypes.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16)
          else (x.dtype,))
    for name, p in params.items():
        if isinstance(p, Tensor) and p.dtype not in ok:
            raise RuntimeError(
                f"{op}: mixed dtype (CPU): all inputs must share same datatype; got input "
                f"{x.dtype.name} and {name} {p.dtype.name}. Convert the module (.to("
                f"{x.dtype.name})) or the input (.to({p.dtype.name}))")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of (N, C, *) over N and the spatial dims: with the batch's
    statistics when ``training`` (updating ``running_mean``/``running_var`` in place:
    r = (1 - momentum) r + momentum s, s the batch mean / unbiased variance), else with the
    running ones; then y * weight + bias."""
    _check_tensor("batch_norm", input, "input")
    if momentum is None:  # (the modules pass 1 / num_batches_tracked for their None)
        raise TypeError("batch_norm(): argument 'momentum' (position 7) must be float, not "
                        "NoneType")
    _check_param_dtypes("batch_norm", input, weight=weight, bias=bias,
                        running_mean=running_mean, running_var=running_var)
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
                weight: Tensor | None, bias: Tensor | None, training: bool, momentum: float,
                eps: float) -> Tensor:
    """batch_norm without its dtype rule (instance_norm's eval path: PyTorch's takes a
    float64 input with float32 running statistics there)."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected 2D or more input (N, C, *), got input of size "
                         f"{list(input.shape)}")
    c = input.shape[1]
    _check_params("batch_norm", input, c, running_mean=running_mean, running_var=running_var,
                  weight=weight, bias=bias)
    _check_vectors("batch_norm", input, running_mean=running_mean, running_var=running_var)
    _check_float("batch_norm", input)  # (PyTorch's NotImplementedError, its kernel text)
    # weight and bias are read by element count, as PyTorch: a (C, 1) one as its (C,) view
    weight = weight if weight is None or weight.ndim == 1 else weight.reshape(c)
    bias = bias if bias is None or bias.ndim == 1 else bias.reshape(c)
    mean_grad = running_mean is not None and running_mean.requires_grad
    if (mean_grad or running_var is not None and running_var.requires_grad) \
            and is_grad_enabled():
        raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with "
                           f"respect to argument '{'running_mean' if mean_grad else 'running_var'}'"
                           f". This input cannot have requires_grad True.")
    if training:
        count = input.numel() // max(c, 1)
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {list(input.shape)}")
        if not eps > 0.0:  # PyTorch 2.13: the batch's variance may be 0
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
        running = (running_mean, running_var, momentum) if count else (None, None, momentum)
        return BatchNorm.apply(input, weight, bias, (running, True, float(eps)))
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be "
                           f"defined in evaluation mode")
    return BatchNorm.apply(input, weight, bias, ((running_mean, running_var, None), False,
                                                 float(eps)))


class BatchNorm(Function):
    """y = (x - mean) * invstd * w + b per channel of x (N, C, *); w, b (C,) or None;
    ``spec`` = ((running_mean, running_var, momentum), training, eps). Training: mean and
    invstd = 1 / sqrt(var + eps) of the batch (biased var), reduced over dims (0, 2, ...)
    of x in place (PyTorch's save_mean / save_invstd, kept on the node), and the running
    statistics blended in (unbiased var); eval: the running ones. float16/bfloat16 x: in
    float32, rounded once. One node, PyTorch's NativeBatchNormBackward0 (edges: input,
    weight, bias). With M = N * spatial values per channel, xhat = (x - mean) invstd:
      training: dx = invstd w / M * (M g - sum(g) - xhat sum(g xhat))
      eval:     dx = invstd w g
      dw = sum(g xhat),  db = sum(g)   (sums over dims (0, 2, ...))
    Under create_graph the backward recomputes mean / invstd from x in tgrad ops, so the
    double backward differentiates through the batch statistics."""

    name = "batch_norm"
    node_name = "NativeBatchNormBackward0"
    scalar_edges = True  # None weight / bias keep their (None, 0) slots (PyTorch's)
    hidden_edges = (3,)
    saved_attributes = {"_saved_input": 0, "_saved_weight": 1,
                        "_saved_result1": _function.KeptTensor("mean"),
                        "_saved_result2": _function.KeptTensor("invstd"),
                        "_saved_training": lambda node: node.training,
                        "_saved_eps": lambda node: node.eps}

    @staticmethod
    def forward(ctx, x, w, b, spec):
        (running_mean, running_var, momentum), training, eps = spec
        ctx.training, ctx.eps = training, eps
        ctx.save_for_backward(x, w)
        count = x.numel() // max(x.shape[1], 1)
        if x.device.type == "cpu":  # the NumPy primitive: in place, one temporary
            y, mean, var, invstd = _np_nn.batch_norm_fwd(
                x._data, None if w is None else w._data, None if b is None else b._data,
                None if training else running_mean._data,
                None if training else running_var._data, eps)
            ctx.mean, ctx.invstd = wrap(mean, x.device), wrap(invstd, x.device)
            if training and (running_mean is not None or running_var is not None):
                _blend(running_mean, ctx.mean, running_var, wrap(var, x.device), count,
                       momentum)
            return wrap(y, x.device)
        (xf,), half = widen_halves(x)
        dims, shape = _channel_dims(x)
        if training:  # two-pass statistics, reduced over dims in place
            mean = xf.mean(dims)
            xc = xf - mean.reshape(shape)
            var = (xc * xc).mean(dims)
            if running_mean is not None or running_var is not None:
                _blend(running_mean, mean, running_var, var, count, momentum)
        else:
            mean, var = running_mean.to(xf.dtype), running_var.to(xf.dtype)
            if mean is running_mean:  # kept on the node: not the live buffer a later
                mean = mean.clone()  # update changes (the CPU path keeps a copy too)
            xc = xf - mean.reshape(shape)
        invstd = (var + eps).rsqrt()
        scale = invstd if w is None else invstd * w.to(xf.dtype)
        y = xc * scale.reshape(shape)
        del xc
        if b is not None:
            y = y + b.to(xf.dtype).reshape(shape)
        ctx.mean, ctx.invstd = mean, invstd
        return rounded_to(y, half)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if x.device.type == "cpu" and not differentiable_formula():
            dx, dw, db = _np_nn.batch_norm_bwd(g._data, x._data, None if w is None else w._data,
                                               ctx.mean._data, ctx.invstd._data, ctx.training,
                                               bool(need_x), bool(need_w), bool(need_b))
            return (None if dx is None else wrap(dx, g.device),
                    None if dw is None else wrap(dw, g.device),
                    None if db is None else wrap(db, g.device), None)
        (gf, xf), half = widen_halves(g, x)
        dims, shape = _channel_dims(x)
        m = float(xf.numel() // max(x.shape[1], 1))
        mean, invstd = ctx.mean, ctx.invstd
        if ctx.training and differentiable_formula():  # mean and invstd as functions of x,
            mean = xf.mean(dims)  # so that the double backward differentiates through them
            invstd = (((xf - mean.reshape(shape)) ** 2).mean(dims) + ctx.eps).rsqrt()
        training = ctx.training and need_x
        # xc = x - mean; sum(g xhat) = invstd sum(g xc)
        xc = xf - mean.reshape(shape) if need_w or training else None
        sum_gxc = (gf * xc).sum(dims) if need_w or training else None
        sum_g = gf.sum(dims) if need_b or training else None
        scale = invstd if w is None else invstd * w.to(gf.dtype)
        dx = dw = db = None
        if training:  # dx = scale (g - sum(g)/M) - xc (scale invstd^2 sum(g xc) / M)
            k = scale * invstd * invstd * sum_gxc / m
            dx = (gf - (sum_g / m).reshape(shape)) * scale.reshape(shape)
            dx = dx - xc * k.reshape(shape)
        elif need_x:
            dx = gf * scale.reshape(shape)
        del xc
        if dx is not None:
            dx = rounded_to(dx, half)
        pdt = gf.dtype if w is None else w.dtype
        if need_w and w is not None:
            dw = (sum_gxc * invstd).to(pdt)
        if need_b:
            db = sum_g.to(pdt)
        return dx, dw, db, None


def _channel_dims(x: Tensor) -> tuple:
    """(the dims of x (N, C, *) but the channel's, the (C, 1, ...) shape of a per-channel
    vector broadcast against x)."""
    return (0,) + tuple(range(2, x.ndim)), (x.shape[1],) + (1,) * (x.ndim - 2)


def _blend(running_mean, mean: Tensor, running_var, var: Tensor, count: int,
           momentum) -> None:
    """r = (1 - m) r + m s in place (outside the graph) for the batch's mean and unbiased
    variance var * count / (count - 1). (For PyTorch's momentum None, the cumulative
    average, the modules pass 1 / num_batches_tracked; F.batch_norm refuses None.)"""
    m = float(momentum)
    with no_grad():
        if running_mean is not None:
            _blend_one(running_mean, mean, m)
        if running_var is not None:
            _blend_one(running_var, var * (count / (count - 1)), m)


def _blend_one(running: Tensor, stat: Tensor, m: float) -> None:
    """running = (1 - m) running + m stat, in place. Half buffers are blended in float32
    and rounded once, as PyTorch's kernel (rounding each step in the half dtype was an ulp
    off in about a quarter of the channels)."""
    if running.dtype.itemsize < 4 and running.dtype.is_floating_point:
        running.copy_(running.float() * (1.0 - m) + stat.float() * m)
    else:
        running.mul_(1.0 - m).add_(stat.to(running.dtype) * m)


@autocast_policy("fp32", cpu=None)
def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) over each group of C / num_groups channels and the spatial dims
    (biased variance), then y * weight + bias per channel."""
    _check_tensor("group_norm", input, "input")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {input.ndim}")
    n, c = input.shape[0], input.shape[1]
    g = _int_arg("group_norm", "num_groups", num_groups, 2)
    if g <= 0 or c % g:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _check_params("group_norm", input, c, weight=weight, bias=bias)
    _check_vectors("group_norm", input, weight=weight, bias=bias)
    _check_affine_dtypes("group_norm", input, weight=weight, bias=bias)
    _check_float("group_norm", input)  # (PyTorch's NotImplementedError, its kernel text)
    per_group = (c // g) * math.prod(input.shape[2:])
    if n * per_group == 1:  # PyTorch's _verify_batch_size: one value normalises to 0
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    return GroupNorm.apply(input, weight, bias, (g, float(eps)))


class GroupNorm(Function):
    """x (N, C, *) normalised over each group of C / G channels and the spatial dims
    (biased variance), then y * w + b per channel; ``spec`` = (G, eps). The statistics and
    the normalisation are the fused layer_norm primitive over the (N, G, C / G * spatial)
    view; float16/bfloat16 x in float32, rounded once. One node, PyTorch's
    NativeGroupNormBackward0 (edges: input, weight, bias; mean and rstd (N, G) kept as its
    _saved_result1/2). With xhat the normalised x and sums over dims (0, 2, ...):
      dx = layer_norm's dx (per group, without weight) of g w:
           rstd (g w - mean(g w) - xhat mean(g w xhat)) over each group
      dw = sum(g xhat),  db = sum(g)
    dx is the LayerNormBackward op (its own backward: the double backward); under
    create_graph xhat is recomputed from x in tgrad ops (dw differentiates through it)."""

    name = "group_norm"
    node_name = "NativeGroupNormBackward0"
    scalar_edges = True  # None weight / bias keep their (None, 0) slots (PyTorch's)
    hidden_edges = (3,)
    saved_attributes = {"_saved_input": 0, "_saved_weight": 1,
                        "_saved_group": lambda node: node.groups,
                        "_saved_eps": lambda node: node.eps,
                        "_saved_result1": _function.KeptTensor("mean"),
                        "_saved_result2": _function.KeptTensor("rstd")}

    @staticmethod
    def forward(ctx, x, w, b, spec):
        groups, eps = spec
        (xf,), half = widen_halves(x)
        rows = xf.reshape(x.shape[0], groups, x.numel() // max(x.shape[0] * groups, 1))
        y, mean, rstd = backend_of(x).layer_norm_fwd(rows._data, 1, None, None, eps)
        shape = (x.shape[1],) + (1,) * (x.ndim - 2)
        if x.device.type == "cpu":  # the affine in place in y (a buffer of the op's own)
            y = y.reshape(x.shape)
            if w is not None:
                np.multiply(y, w._data.astype(y.dtype).reshape(shape), out=y)
            if b is not None:
                np.add(y, b._data.astype(y.dtype).reshape(shape), out=y)
            y = wrap(y, x.device)
        else:
            y = wrap(y, x.device).reshape(x.shape)
            if w is not None:
                y = y * w.to(xf.dtype).reshape(shape)
            if b is not None:
                y = y + b.to(xf.dtype).reshape(shape)
        ctx.groups, ctx.eps = groups, eps
        ctx.mean = wrap(mean, x.device).reshape(x.shape[0], groups)
        ctx.rstd = wrap(rstd, x.device).reshape(x.shape[0], groups)
        ctx.save_for_backward(x, w)
        return rounded_to(fresh(y), half)

    @staticmethod
    def backward(ctx, g):
        from tgrad.nn.functional import LayerNormBackward, _ln_stats
        x, w = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        if _host_group_norm_bwd(g, x, w):  # the same steps on the arrays (bit-identical)
            return _group_norm_bwd_host(ctx, g, x, w, need_x, need_w, need_b)
        (gf, xf), half = widen_halves(g, x)
        n, groups = x.shape[0], ctx.groups
        dims, shape = _channel_dims(x)
        rows = xf.reshape(n, groups, x.numel() // max(n * groups, 1))
        mean, rstd = ctx.mean.unsqueeze(-1), ctx.rstd.unsqueeze(-1)
        dx = dw = db = None
        if need_x:
            gw = gf if w is None else gf * w.to(gf.dtype).reshape(shape)
            dx = LayerNormBackward.apply(gw.reshape(rows.shape), rows, None, mean, rstd, 1,
                                         ctx.eps, False, False)[0]
            dx = rounded_to(dx.reshape(x.shape), half)
        pdt = gf.dtype if w is None else w.dtype
        need_w = need_w and w is not None
        if differentiable_formula():  # xhat as a function of x (the double backward)
            if need_w:
                xhat = _ln_stats(rows, 1, ctx.eps)[0].reshape(x.shape)
                dw = (gf * xhat).sum(dims).to(pdt)
            if need_b:
                db = gf.sum(dims).to(pdt)
        elif need_w or need_b:  # PyTorch's: per (n, c) sums of g x and g, one full-size
            c = x.shape[1]  # product; dw_c = sum_n rstd (sum(g x) - mean sum(g))
            # (sizes, not -1: an empty batch has dw = db = 0, as PyTorch)
            planes, per_group = (n, c, math.prod(x.shape[2:])), (n, groups, c // groups)
            gr = gf.reshape(planes)
            sum_g = gr.sum(-1)
            if need_w:
                sum_gx = (gr * xf.reshape(planes)).sum(-1)
                dw = ((sum_gx.reshape(per_group) - mean * sum_g.reshape(per_group))
                      * rstd).sum(0).reshape(c).to(pdt)
            if need_b:
                db = sum_g.sum(0).to(pdt)
        return dx, dw, db, None


_HOST_DTYPES = (dtypes.float32, dtypes.float64)


def _host_group_norm_bwd(g: Tensor, x: Tensor, w: Tensor | None) -> bool:
    """Whether GroupNorm's plain backward runs on the NumPy arrays: no graph to record
    (create_graph and forward AD keep the tgrad ops), CPU float32/float64 tensors of one
    dtype."""
    return (not differentiable_formula() and x.device.type == "cpu"
            and x.dtype in _HOST_DTYPES and g.dtype is x.dtype
            and (w is None or w.dtype is x.dtype))


def _group_norm_bwd_host(ctx, g: Tensor, x: Tensor, w: Tensor | None, need_x: bool,
                         need_w: bool, need_b: bool) -> tuple:
    """GroupNorm.backward's plain branch on the arrays: the same NumPy calls as its tgrad
    ops make (the multiplies, layer_norm_bwd on the (N, G, rest) rows, the sums), without
    their ~20 nodes' Python work; shapes as there."""
    be = backend_of(x)
    n, groups, c = x.shape[0], ctx.groups, x.shape[1]
    ga, xa = g._data, x._data
    rows_shape = (n, groups, x.numel() // max(n * groups, 1))
    mean, rstd = ctx.mean._data[..., None], ctx.rstd._data[..., None]  # (N, G, 1)
    shape = (c,) + (1,) * (x.ndim - 2)
    dx = dw = db = None
    with be.quiet():
        if need_x:
            gw = ga if w is None else np.multiply(ga, w._data.reshape(shape))
            dx = be.layer_norm_bwd(np.reshape(gw, rows_shape), np.reshape(xa, rows_shape),
                                   mean, rstd, None, 1, False, False)[0]
            dx = wrap(dx.reshape(x.shape), x.device)
        need_w = need_w and w is not None
        if need_w or need_b:  # dw_c = sum_n rstd (sum(g x) - mean sum(g)), db_c = sum g
            planes, per_group = (n, c, math.prod(x.shape[2:])), (n, groups, c // groups)
            gr = ga.reshape(planes)
            sum_g = be.sum_(gr, (2,), False)
            if need_w:
                sum_gx = be.sum_(np.multiply(gr, xa.reshape(planes)), (2,), False)
                t = np.subtract(sum_gx.reshape(per_group),
                                np.multiply(mean, sum_g.reshape(per_group)))
                dw = wrap(be.sum_(np.multiply(t, rstd), (0,), False).reshape(c), x.device)
            if need_b:
                db = wrap(be.sum_(sum_g, (0,), False), x.device)
    return dx, dw, db, None


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) of (N, C, *) over its spatial dims; with
    ``use_input_stats`` False, by the running statistics (batch_norm in eval mode)."""
    _check_tensor("instance_norm", input, "input")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected 3D or more input (N, C, *), got input of "
                         f"size {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    _check_params("instance_norm", input, c, running_mean=running_mean,
                  running_var=running_var, weight=weight, bias=bias)
    _check_vectors("instance_norm", input, running_mean=running_mean, running_var=running_var,
                   weight=weight, bias=bias)
    _check_affine_dtypes("instance_norm", input, weight=weight, bias=bias)
    spatial = math.prod(input.shape[2:])
    if use_input_stats and spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    # PyTorch's: batch_norm of the (1, N C, *) view, the per-channel vectors repeated N
    # times; the running statistics' copies are averaged back over the batch
    def repeated(t):
        return None if t is None else t.repeat(n)

    rm, rv = repeated(running_mean), repeated(running_var)
    y = _batch_norm(input.reshape((1, n * c) + tuple(input.shape[2:])), rm, rv,
                    repeated(weight), repeated(bias), use_input_stats, momentum, eps)
    if use_input_stats and n * spatial:
        with no_grad():
            for running, copies in ((running_mean, rm), (running_var, rv)):
                if running is not None:
                    running.copy_(copies.reshape(n, c).mean(0))
    return y.view(input.shape)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """y = x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight, in
    input's dtype (a weight of another float dtype does not promote it, as PyTorch's);
    ``eps`` None is the machine epsilon of the compute dtype (float32 for float16/bfloat16
    inputs; the real part's for complex), PyTorch's default. Complex x: PyTorch's composite,
    x^2 (not |x|^2) and the principal square root."""
    _check_tensor("rms_norm", input, "input")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < k or input.shape[input.ndim - k:] != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(str(s) for s in ns)}], but got input of size"
                           f"{list(input.shape)}")
    if weight is not None:
        _check_tensor("rms_norm", weight, "weight")
        if weight.shape != ns:
            raise RuntimeError(f"rms_norm: Expected weight to be of same shape as "
                               f"normalized_shape, but got weight of shape "
                               f"{list(weight.shape)} and normalized_shape = {list(ns)}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise dtypes.kernel_not_implemented("rms_norm", input.dtype, f" (rms_norm: expected a "
                                            f"floating point or complex input, got "
                                            f"{input.dtype.name})")
    if eps is None:  # the compute dtype's epsilon: float32's for float16/bfloat16 (PyTorch)
        eps = float(ml_dtypes.finfo(_widened(input).dtype.np).eps)
    if _rms_norm_on_numpy(input, weight):  # one node, NumPy forward and plain backward
        return RmsNormCpu.apply(input, weight, k, float(eps))
    (x, w), half = widen_halves(input, weight)
    dims = tuple(range(x.ndim - k, x.ndim))
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if w is not None:
        y = y * w
    y = rounded_to(y, half)
    if y.dtype is not input.dtype and not y.dtype.is_complex:  # PyTorch's: in input's dtype
        y = y.to(input.dtype)  # (a float64 weight does not widen a float32 input)
    return y


def _rms_norm_on_numpy(x: Tensor, w: Tensor | None) -> bool:
    """Whether rms_norm runs as RmsNormCpu: a CPU float32/float64 x, C-contiguous and
    non-empty, w None or of x's dtype on the CPU (another device: the composition's error),
    and no forward-AD level (its tangents need the composition's nodes)."""
    xa = x._data
    return (x._device.type == "cpu" and _np_norms.fast_dtype(xa.dtype) and xa.size > 0
            and xa.flags.c_contiguous
            and (w is None or (w.dtype is x.dtype and w._device.type == "cpu"))
            and not (_function._FW_ACTIVE and STATE.fw_level is not None))


class RmsNormCpu(Function):
    """rms_norm on the CPU arrays (_numpy_norms.rms_norm_fwd / _bwd: the composition's
    steps, the same bits): y = x rsqrt(mean(x^2 over the last k dims) + eps) [* w]. One
    node named as the composition's last (PyTorch's MulBackward0). Under create_graph the
    backward is the composition itself, rebuilt from x and w (differentiable)."""

    name = "rms_norm"
    node_name = "MulBackward0"

    @staticmethod
    def forward(ctx, x, w, k, eps):
        y, r, t = _np_norms.rms_norm_fwd(x._data, None if w is None else w._data, k, eps)
        ctx.k, ctx.eps, ctx.r, ctx.t = k, eps, r, t
        ctx.save_for_backward(x, w)
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad[:2]
        need_w = need_w and w is not None
        if differentiable_formula() or g.dtype is not x.dtype or g.device.type != "cpu":
            return _rms_norm_composite_grads(g, x, w, ctx.k, ctx.eps, need_x, need_w)
        wa = None if w is None else w._data
        dx, dw = _np_norms.rms_norm_bwd(np.ascontiguousarray(g._data), x._data, wa, ctx.r,
                                        ctx.t, ctx.k, need_x, need_w)
        return (None if dx is None else wrap(dx, x.device),
                None if dw is None else wrap(dw, x.device), None, None)


def _rms_norm_composite_grads(g: Tensor, x: Tensor, w: Tensor | None, k: int, eps: float,
                              need_x: bool, need_w: bool) -> tuple:
    """RmsNormCpu's gradients in tgrad ops (recorded under create_graph, differentiable
    again): _numpy_norms.rms_norm_bwd's formula, r = rsqrt(mean(x^2) + eps) recomputed
    from x (so second derivatives flow through it)."""
    from tgrad.ops.reduce import sum_to
    dims = tuple(range(x.ndim - k, x.ndim))
    r = ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    dx = dw = None
    if need_w:
        dw = sum_to(g * (x * r), w.shape)
    if need_x:
        gt = g if w is None else g * w
        gr = sum_to(gt * x, r.shape)
        gx2 = (gr * (r * r * r) * -0.5) / float(math.prod(x.shape[x.ndim - k:])) * x
        dx = gt * r + gx2 + gx2
    return dx, dw, None, None
