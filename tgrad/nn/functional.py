"""tgrad.nn.functional: activations, softmax family, losses, layer_norm, linear, dropout.

softmax, log_softmax, cross_entropy and layer_norm are single ops with fused forward and
backward primitives (``softmax_fwd``/``softmax_bwd``...); gelu, silu and softplus are single
ops with paired backward primitives. Every backward primitive is itself an op whose own
backward is written in differentiable tgrad ops, so create_graph / gradgradcheck work to any
order. linear with a bias is one AddmmBackward0 node, as PyTorch's (a 1-D or contiguous
>= 3-D input is viewed to 2-D and back; without a bias it is a matmul, and other >= 3-D
inputs are matmul + add); mse_loss is one node with its reduction (MseLossBackward0), as
PyTorch's; dropout is one op whose backward regenerates its mask from the backend's random
state (nothing stored).

Notation: ``g`` incoming gradient, ``gg`` the gradient arriving at a backward op's output,
``y`` the forward output; sums/means are over the op's reduced dim(s), kept for broadcasting.
"""

from __future__ import annotations

import functools
import math
import warnings

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd import function as _function
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import STATE, is_grad_enabled
from tgrad.backends import _numpy_act as _np_act
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    require_tensor,
    shape_str,
    tensor_method,
    user_stacklevel,
    view_apply,
    widen_halves,
    wrap,
)
from tgrad.ops.elementwise import exp, sigmoid, tanh, where  # noqa: F401 (F.tanh, as torch)
from tgrad.ops.elementwise import relu as _relu_op
from tgrad.ops.inplace import apply_inplace
from tgrad.ops.matmul import _T, ADDMM_DTYPES, Addmm
from tgrad.ops.shape import TView, View
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["relu", "gelu", "silu", "softplus", "softmax", "log_softmax", "cross_entropy",
           "nll_loss", "mse_loss", "layer_norm", "linear", "dropout"]  # + _composite's below

_REDUCTIONS = ("none", "mean", "sum")


def _check_tensor(op: str, x, arg: str = "input") -> None:
    require_tensor(op, x, arg, None)


_compute = widen_halves  # composites compute halves in float32 and round once


def _kernel_operands(input: Tensor, target: Tensor) -> tuple:  # noqa: A002
    """((x, t), half) for a loss that is one fused kernel in PyTorch (mse, smooth_l1,
    huber): its TensorIterator reads a bool operand in the pair's promoted dtype, so
    mse_loss(float, bool) is mse_loss(float, bool.float()) (a float result; two bools, or a
    bool and an integer, are refused before by _check_float_kernel). Then ``_compute``."""
    if input.dtype is dtypes.bool_ or target.dtype is dtypes.bool_:
        dt = dtypes.promote_types(input.dtype, target.dtype)
        input, target = input.to(dt), target.to(dt)  # noqa: A001  (a no-op for dt's own)
    return _compute(input, target)


def _broadcast_dtypes(input: Tensor, target: Tensor) -> tuple:  # noqa: A002
    """(input, target) in the dtype PyTorch's mse / l1 / smooth_l1 / huber losses compute
    in: they broadcast the pair first (torch.broadcast_tensors), so a 0-d operand takes part
    in the promotion as a dimensioned one (mse_loss(0-d float64, (n,) float32) is float64,
    not float32 as in 0-d float64 - (n,) float32). Both cast to promote_types when only one
    is 0-d and the dtypes differ; else unchanged."""
    if input.dtype is target.dtype or (input.dim() == 0) == (target.dim() == 0):
        return input, target
    dt = dtypes.promote_types(input.dtype, target.dtype)
    return input.to(dt), target.to(dt)


def _per_element(k: int):
    """``flops`` metadata for the profiler: ~k floating point operations per element of the
    first tensor argument (exp/erf/tanh count as one)."""
    def flops(args, out) -> int:
        t = next((a for a in args if isinstance(a, Tensor)), None)
        return 0 if t is None else k * t.numel()
    return staticmethod(flops)


def _check_float_kernel(op: str, kernel: str, *tensors: Tensor) -> None:
    """PyTorch runs these ops' kernels in the promoted dtype of their tensors (an integer
    input with a float target is fine) and has no integer or bool kernel for them."""
    common = functools.reduce(dtypes.promote_types, (t.dtype for t in tensors))
    if not common.is_floating_point:
        raise dtypes.kernel_not_implemented(
            kernel, common, f" ({op} of {' and '.join(t.dtype.name for t in tensors)} tensors; "
            f"convert them with .float())")


# PyTorch's CPU kernel names, named by its NotImplementedError for an integer or bool input
# ("GeluKernelImpl" not implemented for 'Long'); ops not listed raise RuntimeError
_FLOAT_KERNELS = {
    "gelu": "GeluKernelImpl", "silu": "silu_cpu", "softplus": "softplus_cpu", "elu": "elu_cpu",
    "selu": "elu_cpu", "celu": "elu_cpu", "mish": "mish_cpu", "hardswish": "hardswish_cpu",
    "hardsigmoid": "hardsigmoid_cpu", "leaky_relu": "leaky_relu_cpu", "rrelu": "leaky_relu_cpu",
    "softshrink": "softshrink_check", "hardshrink": "hardshrink_cpu", "prelu": "prelu_cpu",
    "glu": "glu_cpu", "layer_norm": "LayerNormKernelImpl",
    "binary_cross_entropy": "binary_cross_entropy",
    "binary_cross_entropy_with_logits": "log_sigmoid_cpu",
    "multilabel_soft_margin_loss": "log_sigmoid_cpu", "nll_loss": "nll_loss_out_frame",
    "multi_margin_loss": "multi_margin_loss_cpu_kernel",
    "multilabel_margin_loss": "multilabel_margin_loss_forward_out_frame",
    "batch_norm": "batch_norm", "group_norm": "GroupNormKernelImpl",
}


def _check_float(op: str, x: Tensor, kernel: str | None = None) -> None:
    """A floating ``x``, else PyTorch's NotImplementedError naming its kernel (``kernel``
    or _FLOAT_KERNELS[op]; RuntimeError for an op without one there)."""
    _check_tensor(op, x)
    if not x.dtype.is_floating_point:
        kernel = kernel or _FLOAT_KERNELS.get(op)
        msg = (f"{op}: expected a floating point input, got {x.dtype}; convert it with "
               f".float()")
        if kernel is None:
            raise RuntimeError(msg)
        raise dtypes.kernel_not_implemented(kernel, x.dtype, f" ({msg})")


def _not_differentiable(fn: str, arg: str, t) -> None:
    """PyTorch's error for a tensor argument its loss kernel does not differentiate (a class
    weight, a pos_weight...) that requires grad while grad mode is on."""
    if isinstance(t, Tensor) and t.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{fn}' is not differentiable with respect to argument "
                           f"'{arg}'. This input cannot have requires_grad True.")


# ====================================================================== softmax family
class Softmax(Function):
    """y = softmax(x, dim);  dx = softmax_backward(g, y, dim) = y (g - sum(g y))."""

    name = "softmax"
    node_name = "SoftmaxBackward0"
    saved_attributes = {"_saved_dim": "dim", "_saved_result": 0}
    flops = _per_element(5)

    @staticmethod
    def forward(ctx, x, dim):
        y = wrap(backend_of(x).softmax_fwd(x._data, dim), x.device)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return SoftmaxBackward.apply(g, y, ctx.dim), None


class SoftmaxBackward(Function):
    """out = y (g - s), s = sum(g y).
    d/dg = y gg - y sum(gg y) = softmax_backward(gg, y);
    d/dy = gg (g - s) - g sum(gg y)."""

    name = "softmax_backward"
    node_name = "SoftmaxBackwardDataBackward0"
    flops = _per_element(4)

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return wrap(backend_of(g).softmax_bwd(g._data, y._data, dim), g.device)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        d = ctx.dim
        need_g, need_y, _ = ctx.needs_input_grad
        dg = SoftmaxBackward.apply(gg, y, d) if need_g else None
        dy = None
        if need_y:
            s = (g * y).sum(d, keepdim=True)
            dy = gg * (g - s) - g * (gg * y).sum(d, keepdim=True)
        return dg, dy, None


class LogSoftmax(Function):
    """y = x - logsumexp(x, dim);  dx = log_softmax_backward(g, y, dim) = g - exp(y) sum(g)."""

    name = "log_softmax"
    node_name = "LogSoftmaxBackward0"
    saved_attributes = {"_saved_dim": "dim", "_saved_result": 0}
    flops = _per_element(5)

    @staticmethod
    def forward(ctx, x, dim):
        y = wrap(backend_of(x).log_softmax_fwd(x._data, dim), x.device)
        ctx.dim = dim
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return LogSoftmaxBackward.apply(g, y, ctx.dim), None


class LogSoftmaxBackward(Function):
    """out = g - exp(y) sum(g).  d/dg = gg - sum(gg exp(y));  d/dy = -gg exp(y) sum(g)."""

    name = "log_softmax_backward"
    node_name = "LogSoftmaxBackwardDataBackward0"
    flops = _per_element(4)

    @staticmethod
    def forward(ctx, g, y, dim):
        ctx.dim = dim
        ctx.save_for_backward(g, y)
        return wrap(backend_of(g).log_softmax_bwd(g._data, y._data, dim), g.device)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        d = ctx.dim
        need_g, need_y, _ = ctx.needs_input_grad
        p = exp(y)
        dg = gg - (gg * p).sum(d, keepdim=True) if need_g else None
        dy = -gg * p * g.sum(d, keepdim=True) if need_y else None
        return dg, dy, None


def _softmax_dim(op: str, x: Tensor, dim) -> int:
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {op} has been deprecated. Change the "
                      f"call to include dim=X as an argument.", stacklevel=3)
        dim = 0 if x.ndim in (0, 1, 3) else 1
    return _wrap_dim(dim, x.ndim, op)  # (an int: a float or str is PyTorch's TypeError)


def _softmax_like(op: str, cls, input: Tensor, dim, dtype) -> Tensor:  # noqa: A002
    _check_tensor(op, input)
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    d = _softmax_dim(op, input, dim)
    base = "log_softmax" if op == "log_softmax" else "softmax"
    _check_float(op, input, f"{base}_lastdim_kernel_impl" if d == input.ndim - 1 or
                 input.ndim == 0 else f"{base}_kernel_impl")
    if input.ndim == 0:
        return fresh(cls.apply(input.reshape(1), 0).reshape(()))  # (not a view: PyTorch's)
    return cls.apply(input, d)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (max-subtracted; one fused op)."""
    return _softmax_like("softmax", Softmax, input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
                dtype=None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (one fused op)."""
    return _softmax_like("log_softmax", LogSoftmax, input, dim, dtype)


@tensor_method("softmax")
def _softmax_method(self: Tensor, dim: int, dtype=None) -> Tensor:
    return softmax(self, dim, dtype=dtype)


@tensor_method("log_softmax")
def _log_softmax_method(self: Tensor, dim: int, dtype=None) -> Tensor:
    return log_softmax(self, dim, dtype=dtype)


def softmax_backward(grad: Tensor, output: Tensor, dim: int) -> Tensor:
    """y (g - sum(g y)) along ``dim``: the fused backward of softmax, as an op."""
    return SoftmaxBackward.apply(grad, output, _wrap_dim(dim, output.ndim, "softmax_backward"))


def log_softmax_backward(grad: Tensor, output: Tensor, dim: int) -> Tensor:
    """g - exp(y) sum(g) along ``dim``: the fused backward of log_softmax, as an op."""
    return LogSoftmaxBackward.apply(grad, output,
                                    _wrap_dim(dim, output.ndim, "log_softmax_backward"))


# ====================================================================== cross entropy
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}  # PyTorch's at::Reduction values


class CrossEntropy(Function):
    """loss_i = rw_i (logsumexp(x_i) - x_i[t_i]) (0 where t_i == ignore_index), reduced;
    rw_i = weight[t_i] (1 without class weights).
    dx = cross_entropy_backward(g, x, t) = c_i (softmax(x_i) - onehot(t_i))."""

    name = "cross_entropy"
    node_name = "NllLossBackward0"
    # PyTorch's node saves log_softmax(x) as _saved_self and the class weights; tgrad's
    # fused node keeps x and per-row weights, so only these have PyTorch's meaning
    saved_attributes = {"_saved_target": 1,
                        "_saved_ignore_index": lambda node: node.meta[1],
                        "_saved_reduction": lambda node: _REDUCTION_ENUM[node.meta[2]],
                        "_saved_total_weight": lambda node: _ce_total_weight(node),
                        "_saved_weight": lambda node: _ce_class_weight(node)}
    flops = _per_element(5)

    @staticmethod
    def forward(ctx, x, target, rw, axis, ignore_index, reduction):
        loss, lse = backend_of(x).cross_entropy_fwd(
            x._data, target._data, None if rw is None else rw._data, axis, ignore_index,
            reduction)
        ctx.lse = wrap(lse, x.device)
        ctx.meta = (axis, ignore_index, reduction)
        ctx.save_for_backward(x, target, rw)  # (version-checked, as PyTorch's saved target)
        return wrap(loss, x.device)

    @staticmethod
    def backward(ctx, g):
        x, target, rw = ctx.saved_tensors
        return (CrossEntropyBackward.apply(g, x, ctx.lse, target, rw, *ctx.meta),
                None, None, None, None, None)


def _ce_total_weight(node) -> Tensor:
    """PyTorch's total_weight of a cross_entropy node: the sum of the kept rows' class
    weights (their count without weights) for "mean"/"sum", 0 for "none" (not computed);
    a 0-d tensor of x's dtype, derived on read from the saved target and row weights."""
    from tgrad.autograd.grad_mode import no_grad
    from tgrad.ops.creation import zeros
    _, target, rw = node.saved_tensors
    shape, dtype, device = node._in_meta[0]  # x's (the node exists: x needs a gradient)
    if node.meta[2] == "none":
        return zeros((), dtype=dtype, device=device)
    with no_grad():
        keep = (target != node.meta[1]).to(dtype)
        return (keep if rw is None else keep * rw.to(dtype)).sum()


def _ce_class_weight(node):
    """PyTorch's _saved_weight: None without class weights; with them tgrad keeps only
    each row's weight[target] (what its backward reads), not the weight tensor itself."""
    if node._in_meta[2] is _function._NOT_TENSOR:  # (rw was None: readable after backward)
        return None
    raise AttributeError(f"{node.name()}._saved_weight: tgrad's cross_entropy node keeps "
                         f"each row's class weight (weight[target]), not the weight tensor; "
                         f"it is None only for a call without weight")


def _ce_row_weights(x: Tensor, target: Tensor, rw, ignore_index: int) -> Tensor:
    """Per-row factors (target's shape, x's dtype): rw where kept, 0 where ignored."""
    keep = (target != ignore_index).to(x.dtype)
    return keep if rw is None else keep * rw.to(x.dtype)


class CrossEntropyBackward(Function):
    """out = c (p - onehot), p = softmax(x), c = g rw (/ sum(rw) for "mean").
    d/dx = softmax_backward(gg c, p);
    d/dg = sum_c(gg (p - onehot)) rw, summed (and / sum(rw)) for "sum"/"mean".
    A "mean" whose total weight sum(rw) is 0 divides by it, as PyTorch's nll_loss: the kept
    rows' c is rw (g / 0) (NaN for a zero class weight), d/dg is NaN also when every row is
    ignored (0 / 0); ignored rows stay 0."""

    name = "cross_entropy_backward"
    node_name = "NllLossBackwardBackward0"
    flops = _per_element(5)

    @staticmethod
    def forward(ctx, g, x, lse, target, rw, axis, ignore_index, reduction):
        ctx.meta = (axis, ignore_index, reduction)
        ctx.save_for_backward(g, x, target, rw)
        return wrap(backend_of(x).cross_entropy_bwd(
            g._data, x._data, target._data, None if rw is None else rw._data, lse._data, axis,
            ignore_index, reduction), x.device)

    @staticmethod
    def backward(ctx, gg):
        from tgrad.ops.creation import arange
        g, x, t, rw = ctx.saved_tensors
        axis, ignore_index, red = ctx.meta
        need_g, need_x = ctx.needs_input_grad[:2]
        w = _ce_row_weights(x, t, rw, ignore_index)
        total = float(w.sum().item()) if red == "mean" else None
        w_dg = w  # d/dg's: the unscaled weights over 0 when the total is 0
        if total:
            w = w_dg = w / total
        elif total is not None:  # 0: PyTorch's division by it, ignored rows kept at 0
            w = where(t != ignore_index, w / 0.0, 0.0)
        p = Softmax.apply(x, axis)
        dg = dx = None
        if need_x:
            dx = SoftmaxBackward.apply(gg * (g * w).unsqueeze(axis), p, axis)
        if need_g:
            classes = arange(x.shape[axis], device=x.device).reshape(
                tuple(-1 if i == axis else 1 for i in range(x.ndim)))
            onehot = (classes == t.unsqueeze(axis)).to(x.dtype)
            r = (gg * (p - onehot)).sum(axis) * w_dg
            dg = r if red == "none" else r.sum()
            if total == 0:  # (0 / 0 = NaN where every row is ignored, as PyTorch's)
                dg = dg / 0.0
        return dg, dx, None, None, None, None, None, None


def _legacy_reduction(size_average, reduce, reduction: str) -> str:
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.", stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_class_target(op: str, input: Tensor, target: Tensor) -> int:  # noqa: A002
    """The class axis of ``input``; validates target's shape against input's."""
    if input.ndim == 0:  # (PyTorch's nll_loss_nd: a ValueError)
        raise ValueError(f"Expected 1 or more dimensions (got 0) ({op}: the input must have "
                         f"a dimension of classes, got a 0-d tensor)")
    if input.ndim == 1:
        if target.ndim != 0:
            raise RuntimeError(f"{op}: for a 1-D input of {input.shape[0]} classes the target "
                               f"must be 0-D (a class index), got shape {shape_str(target.shape)}")
        return 0
    want = input.shape[:1] + input.shape[2:]
    if target.shape != want:
        if input.ndim == 2 and target.ndim == 1:
            raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                             f"batch_size ({target.shape[0]}).")
        raise RuntimeError(f"{op}: Expected target size {shape_str(want)}, got "
                           f"{shape_str(target.shape)} (input shape {shape_str(input.shape)})")
    return 1


def _check_class_weight_dtype(op: str, input: Tensor, weight) -> None:  # noqa: A002
    """The class ``weight`` of a class-index loss must have the input's dtype: PyTorch's
    kernels promote neither (under autocast the kernel sees its own casts: not checked)."""
    if weight is not None and weight.dtype is not input.dtype and STATE.autocast is None:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(f"expected scalar type {names.get(input.dtype, input.dtype.name)} "
                           f"but found {names.get(weight.dtype, weight.dtype.name)} ({op}: "
                           f"weight of dtype {weight.dtype.name} for an input of dtype "
                           f"{input.dtype.name}; convert it with weight.to(input.dtype))")


def _check_index_target(op: str, target: Tensor) -> Tensor:
    """Class indices must be int64 or uint8 (PyTorch's Long or Byte; returned as int64): a
    float target would be truncated, an int32 one PyTorch refuses too."""
    if target.dtype is dtypes.uint8:
        return target.to(dtypes.int64)
    if target.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: expected target dtype to be Long or Byte, but got "
                           f"{dtypes.SCALAR_TYPE_NAMES.get(target.dtype, target.dtype.name)} "
                           f"(class indices must be int64; convert with target.long())")
    return target


def _check_targets_in_range(target: Tensor, n_classes: int, ignore_index: int) -> None:
    import numpy as np
    t = np.asarray(target.numpy(force=True))
    bad = t[(t != ignore_index) & ((t < 0) | (t >= n_classes))]
    if bad.size:
        raise IndexError(f"Target {int(bad.flat[0])} is out of bounds (cross_entropy over "
                         f"{n_classes} classes; valid targets are 0..{n_classes - 1} or "
                         f"ignore_index={ignore_index}).")


@autocast_policy(None, cpu="fp32")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` ([C], [N, C] or [N, C, d1, ...]) against class
    indices ``target`` ([], [N] or [N, d1, ...]) in one fused op, with optional class
    ``weight`` [C] (not differentiable there, as PyTorch) and ``label_smoothing``; or against
    class probabilities (a float ``target`` of input's shape), composed from log_softmax
    (``weight`` is differentiated then)."""
    _check_tensor("cross_entropy", input)  # (before input.ndim below)
    if not input.dtype.is_floating_point:  # PyTorch's error names log_softmax's kernel
        _check_float("cross_entropy", input, "log_softmax_lastdim_kernel_impl"
                     if input.ndim <= 2 else "log_softmax_kernel_impl")
    _check_tensor("cross_entropy", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if label_smoothing > 1.0:  # (a negative one is no smoothing, as in PyTorch)
        raise RuntimeError(f"cross_entropy: label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    axis = 0 if input.ndim == 1 else 1
    if weight is not None:
        _check_tensor("cross_entropy", weight, "weight")
        n_classes = input.shape[axis] if input.ndim else 0
        if weight.shape != (n_classes,):
            raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all "
                               f"{n_classes} classes or no classes but got weight tensor of "
                               f"shape: {shape_str(weight.shape)}")
    if target.shape == input.shape and not target.dtype.is_floating_point:
        raise RuntimeError(f"cross_entropy: Expected floating point type for target with class "
                           f"probabilities, got "
                           f"{dtypes.SCALAR_TYPE_NAMES.get(target.dtype, target.dtype.name)} (a "
                           f"target of input's shape {shape_str(input.shape)} holds class "
                           f"probabilities; class indices have input's shape without dim "
                           f"{axis})")
    if target.dtype.is_floating_point and target.shape == input.shape:
        if ignore_index != -100:
            raise RuntimeError("cross_entropy: ignore_index is not supported for floating point "
                               "target (class probabilities); leave it at -100")
        # composed from tgrad ops: the weight is differentiated too (as PyTorch)
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing)
    _check_class_weight_dtype("cross_entropy", input, weight)
    if weight is not None:  # (of input's dtype but under autocast)
        weight = weight.to(input.dtype)
    if weight is not None and weight.requires_grad and is_grad_enabled():
        raise RuntimeError("cross_entropy: the derivative for 'weight' is not implemented with "
                           "class-index targets (as PyTorch); pass weight.detach()")
    if input.device != target.device:
        raise RuntimeError(f"cross_entropy: input is on {input.device} but target is on "
                           f"{target.device}; move them to the same device")
    if input.ndim == 1 and target.ndim == 1:  # PyTorch: a 1-D target of size 1 is that index
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.shape[0]}")
        target = target.reshape(())
    axis = _check_class_target("cross_entropy", input, target)
    target = _check_index_target("cross_entropy", target)
    ignore_index = _int_arg("cross_entropy_loss", "ignore_index", ignore_index, 5)
    _check_targets_in_range(target, input.shape[axis], ignore_index)
    rw = None
    if weight is not None:
        rw = weight[where(target != ignore_index, target, 0)]
    if label_smoothing > 0.0 and _ce_smooth_on_numpy(input, target, weight):
        return _CrossEntropySmooth.apply(input, target, weight, rw, axis, int(ignore_index),
                                         reduction, float(label_smoothing))
    loss = CrossEntropy.apply(input, target, rw, axis, int(ignore_index), reduction)
    if label_smoothing <= 0.0:  # PyTorch smooths only above 0
        return loss
    return _smoothed(input, target, weight, rw, axis, int(ignore_index), reduction,
                     label_smoothing, loss)


def _ce_smooth_on_numpy(x: Tensor, target: Tensor, weight) -> bool:
    """Whether label-smoothed cross_entropy takes the one-node NumPy path: every tensor on
    the CPU, x float32 or float64 (others: the composite _smoothed)."""
    return (x.device.type == "cpu" and target.device.type == "cpu"
            and (weight is None or weight.device.type == "cpu")
            and x.dtype in (dtypes.float32, dtypes.float64))


class _CrossEntropySmooth(Function):
    """Label-smoothed cross entropy over class indices in one node (CPU float32/float64):
    loss = (1 - eps) nll + eps / C smooth, smooth_i = -sum_c w_c log_softmax(x)_ic (0 on
    ignored rows), both reduced alike ("mean" divides by the kept rows' total weight), the
    same values as the composite _smoothed (which the other devices and dtypes take).
    dx = a_i (p - onehot(t_i)) + b_i (W p - w), p = softmax(x), W = sum(w), a_i = (1 - eps)
    g rw_i, b_i = eps / C g (/ total for "mean"; 0 on ignored rows); as tgrad ops under
    create_graph (_ce_smooth_formula), one NumPy pass otherwise."""

    name = "cross_entropy_label_smoothing"
    node_name = "AddBackward0"  # (the composite's top node, as PyTorch's)
    flops = _per_element(8)

    @staticmethod
    def forward(ctx, x, target, weight, rw, axis, ignore_index, reduction, eps):
        from tgrad.backends._numpy_ce_smooth import ce_smooth_fwd
        loss, lse, denom = ce_smooth_fwd(
            x._data, target._data, None if weight is None else weight._data,
            None if rw is None else rw._data, axis, ignore_index, reduction, eps)
        ctx.lse, ctx.denom = lse, denom
        ctx.meta = (axis, ignore_index, reduction, eps)
        ctx.save_for_backward(x, target, weight, rw)
        return wrap(loss, x.device)

    @staticmethod
    def backward(ctx, g):
        x, target, weight, rw = ctx.saved_tensors
        if differentiable_formula():
            dx = _ce_smooth_formula(g, x, target, weight, rw, ctx.denom, *ctx.meta)
        else:
            from tgrad.backends._numpy_ce_smooth import ce_smooth_bwd
            dx = wrap(ce_smooth_bwd(g._data, x._data, target._data,
                                    None if weight is None else weight._data,
                                    None if rw is None else rw._data, ctx.lse, ctx.denom,
                                    *ctx.meta), x.device)
        return dx, None, None, None, None, None, None, None


def _ce_smooth_formula(g: Tensor, x: Tensor, t: Tensor, weight, rw, denom, axis: int,
                       ignore_index: int, reduction: str, eps: float) -> Tensor:
    """_CrossEntropySmooth's dx as tgrad ops (differentiable in g and x):
    (a + b W) p - a onehot - b w, a and b of t's shape (see the class)."""
    import numpy as np

    from tgrad.ops.creation import arange, ones
    n_cls = x.shape[axis]
    bshape = tuple(-1 if i == axis else 1 for i in range(x.ndim))
    kept = t != ignore_index
    ga, gb = g * (1.0 - eps), g * (eps / n_cls)
    if denom is not None:
        d = wrap(np.asarray(denom), x.device)
        ga, gb = ga / d, gb / d
    a = where(kept, ga * rw if rw is not None else ga, 0.0).unsqueeze(axis)
    b = where(kept, gb, 0.0).unsqueeze(axis)
    w = weight if weight is not None else ones(n_cls, dtype=x.dtype, device=x.device)
    p = Softmax.apply(x, axis)
    onehot = (arange(n_cls, device=x.device).reshape(bshape) == t.unsqueeze(axis)).to(x.dtype)
    return (a + b * w.sum()) * p - a * onehot - b * w.reshape(bshape)


def _smoothed(x: Tensor, t: Tensor, weight, rw, axis: int, ignore_index: int, reduction: str,
              eps: float, nll: Tensor) -> Tensor:
    """PyTorch's label smoothing: (1 - eps) nll + eps / C * smooth, with
    smooth_i = -sum_c w_c log_softmax(x)_ic (0 on ignored rows), reduced like nll."""
    logp = log_softmax(x, axis)
    if weight is not None:
        logp = logp * weight.reshape(tuple(-1 if i == axis else 1 for i in range(x.ndim)))
    kept = t != ignore_index
    keep = kept.to(x.dtype)
    # where, not * keep: an ignored row gets no gradient even when the mean over no rows
    # makes it inf (0 * inf would be NaN; PyTorch masks there too)
    smooth = where(kept, -logp.sum(axis), 0.0)
    if reduction == "mean":
        denom = (rw * keep).sum() if rw is not None else keep.sum()
        smooth = smooth.sum() / denom
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - eps) + smooth * (eps / x.shape[axis])


def _cross_entropy_probs(input: Tensor, target: Tensor, weight, reduction: str,  # noqa: A002
                         eps: float) -> Tensor:
    """loss = -sum_c w_c q_c log_softmax(x)_c with q = (1 - eps) target + eps / C;
    "mean" divides by the number of samples (as PyTorch, even with weights)."""
    if target.shape != input.shape:
        raise RuntimeError(f"cross_entropy: with class probabilities the target must have the "
                           f"input's shape {shape_str(input.shape)}, got "
                           f"{shape_str(target.shape)}")
    axis = 0 if input.ndim == 1 else 1
    if eps > 0.0:
        target = target * (1.0 - eps) + eps / input.shape[axis]
    logp = log_softmax(input, axis)
    if weight is not None:
        logp = logp * weight.reshape(tuple(-1 if i == axis else 1 for i in range(input.ndim)))
    loss = -(target * logp).sum(axis)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    n = loss.numel()
    return loss.sum() / float(n) if n else loss.sum() / 0.0


@autocast_policy("fp32")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
             size_average=None, ignore_index: int = -100, reduce=None,
             reduction: str = "mean") -> Tensor:
    """-w[t_i] input[i, t_i] (log-probabilities in), reduced ("mean" divides by the sum of
    the kept rows' weights); composed of a gather of the target classes."""
    _check_float("nll_loss", input)
    _check_tensor("nll_loss", target, "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    axis = _check_class_target("nll_loss", input, target)
    target = _check_index_target("nll_loss", target)
    ignore_index = _int_arg("nll_loss_nd", "ignore_index", ignore_index, 5)
    _check_targets_in_range(target, input.shape[axis], ignore_index)
    if weight is not None:
        if weight.shape != (input.shape[axis],):
            raise RuntimeError(f"nll_loss: weight tensor should be defined either for all "
                               f"{input.shape[axis]} classes or no classes but got weight "
                               f"tensor of shape: {shape_str(weight.shape)}")
        _check_class_weight_dtype("nll_loss", input, weight)
        _not_differentiable("nll_loss_forward", "weight", weight)
        weight = weight.detach().to(input.dtype)
    if _nll_on_numpy(input, target, weight):
        safe, w, keep = _nll_rows_numpy(input, target, weight, ignore_index)
    else:
        keep = target != ignore_index
        safe = where(keep, target, 0)
        w = keep.to(input.dtype)
        if weight is not None:
            w = w * weight[safe]
    cls = NllLoss if input.ndim <= 2 else NllLoss2d
    return cls.apply(input, safe, w, keep, axis, reduction)


_NLL_NP_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)


def _nll_on_numpy(x: Tensor, target: Tensor, weight) -> bool:
    """Whether nll_loss runs on the NumPy arrays (nll_loss_fwd/bwd): every tensor on the
    CPU, x of a dtype those primitives compute as the ops do (not float8)."""
    return (x.device.type == "cpu" and target.device.type == "cpu"
            and (weight is None or weight.device.type == "cpu") and x.dtype in _NLL_NP_DTYPES)


def _nll_rows_numpy(x: Tensor, target: Tensor, weight, ignore_index: int) -> tuple:
    """(safe, w, keep) as tensors, computed on the NumPy arrays with the ops' steps:
    keep = t != ignore_index, safe = t where kept else 0, w = keep (x's dtype), times
    weight[safe] (weight already of x's dtype; halves multiplied in float32 and rounded)."""
    import numpy as np
    t = target._data
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    dt = x.dtype.np
    w = keep.astype(dt)
    if weight is not None:
        w = backend_of(x).binary("mul", w, weight._data[safe])
    dev = x.device
    return wrap(safe, dev), wrap(w, dev), wrap(np.asarray(keep), dev)


class NllLoss(Function):
    """One node, as PyTorch's: loss_i = -w_i x[i, t_i] (0 where t_i is ignored; w_i =
    weight[t_i] times kept), reduced ('mean' divides by sum(w)).
    dx = scatter of -c_i at t_i along the class axis, c_i = g_i w_i ('none'), g w_i ('sum'),
    g w_i / sum(w) ('mean'); 0 in ignored rows (also when every row is: no 0/0). Linear in
    g and independent of x, so its double backward is the same scatter of gg."""

    name = "nll_loss"
    node_name = "NllLossBackward0"
    hidden_edges = (1, 2, 3)  # PyTorch's node has one edge, the input's

    @staticmethod
    def forward(ctx, x, safe, w, keep, axis, reduction):
        ctx.save_for_backward(safe, w, keep)
        ctx.meta = (axis, reduction, tuple(x.shape))
        if (x.device.type == "cpu" and x.dtype in _NLL_NP_DTYPES
                and safe.device.type == "cpu" and w.device.type == "cpu"):  # same, in NumPy
            from tgrad.backends import _numpy_nn  # (CPU only: not a backend primitive)
            return wrap(_numpy_nn.nll_loss_fwd(x._data, safe._data, w._data, keep._data, axis,
                                               reduction), x.device)
        # where, not only * w: ignored rows get exactly 0 (a -inf there stays out)
        loss = where(keep, -_take_class(x, safe, axis) * w, 0.0)
        if reduction == "none":
            return loss
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / w.sum()

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.gathering import _along_key
        from tgrad.ops.index import IndexAdd, normalize_key
        safe, w, keep = ctx.saved_tensors
        axis, reduction, shape = ctx.meta
        if (g.device.type == "cpu" and g.dtype in _NLL_NP_DTYPES
                and not differentiable_formula()):  # a plain backward: the same in NumPy
            from tgrad.backends import _numpy_nn  # (CPU only: not a backend primitive)
            return (wrap(_numpy_nn.nll_loss_bwd(g._data, safe._data, w._data, keep._data,
                                                axis, reduction, shape), g.device),
                    None, None, None, None, None)
        c = g * w if reduction != "mean" else g * (w / w.sum())
        c = where(keep, -c, 0.0)
        # zeros(shape) with c added at (i, t_i): one position per row, so the same values as
        # a scatter into zeros (a -0.0 becomes 0.0) in one buffer, where scatter cloned the
        # zeros and wrote through an index_put (3 full-size buffers); its backward gathers.
        key, _ = normalize_key(_along_key(safe.unsqueeze(axis), axis, c.device), c.device)
        dx = IndexAdd.apply(c.unsqueeze(axis), key, shape)
        return dx, None, None, None, None, None


class NllLoss2d(NllLoss):
    """nll_loss of a (N, C, d1, ...) input: PyTorch's NllLoss2DBackward0 node."""

    node_name = "NllLoss2DBackward0"


def _take_class(x: Tensor, t: Tensor, axis: int) -> Tensor:
    """x[i, t_i] along ``axis`` (a gather: a -inf log-probability of another class stays
    out of the result and its gradient, where a one-hot product would make NaN)."""
    from tgrad.ops.gathering import gather
    return gather(x, axis, t.unsqueeze(axis)).squeeze(axis)


# ====================================================================== mse, linear
@autocast_policy("fp32")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """(input - target)^2, reduced (broadcasting, with PyTorch's warning when shapes
    differ); with ``weight`` (input's shape) w (input - target)^2, whose 'mean' is
    sum(w l) / sum(w) (PyTorch's)."""
    _check_tensor("mse_loss", input)
    _check_tensor("mse_loss", target, "target")
    _check_float_kernel("mse_loss", "mse_cpu", input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_if_shapes_differ(input, target)
    _check_elementwise_weight("mse_loss", input, weight)
    (x, t), half = _kernel_operands(*_broadcast_dtypes(input, target))
    if weight is not None:  # PyTorch's weighted mse_loss is a composition too
        d = x - t
        return _weighted_reduced(d * d, weight, reduction, half, by_weight=True)
    loss = MseLoss.apply(x, t, reduction)
    return loss if half is None else loss.to(half)


class _DiffLoss(Function):
    """One node with its reduction for an elementwise loss l(d) of d = x - t (x and t
    broadcast), as PyTorch's fused losses: subclasses give ``loss(d, p)`` and its
    derivative ``dloss(d, p)`` (tgrad ops, so the backward differentiates again).
    dl/dx = g' dloss(d), dl/dt = -g' dloss(d), g' = g / numel ('mean'), else g; the engine
    sums a broadcast gradient to each input's shape. Under create_graph with both wanted,
    dl/dt is computed again with nodes of its own (PyTorch's calls the loss's backward
    twice), so differentiating one gradient without retain_graph leaves the other's graph
    whole.

    ``np_loss`` / ``np_dloss`` (tgrad/backends/_numpy_act.py; None: none): ``loss`` and
    ``dloss`` as the same NumPy steps on the arrays (the same bits), taken for CPU
    float32/float64 operands of one dtype: in the forward, and in the backward when no graph
    is recorded (``differentiable_formula``)."""

    np_loss = None  # (d array, p) -> l array
    np_dloss = None  # (d array, p) -> dl/dd array

    @staticmethod
    def loss(d: Tensor, p) -> Tensor:
        raise NotImplementedError

    @staticmethod
    def dloss(d: Tensor, p) -> Tensor:
        raise NotImplementedError

    @classmethod
    def _np_ok(cls, x: Tensor, t: Tensor, hook) -> bool:
        return hook is not None and x._device.type == "cpu" and t._device is x._device \
            and t.dtype is x.dtype and _np_act.fast_dtype(x.dtype.np)

    @classmethod
    def forward(cls, ctx, x, t, reduction, p=None):
        ctx.save_for_backward(x, t)
        if cls._np_ok(x, t, cls.np_loss):  # d = x - t and the loss on the arrays
            loss = wrap(cls.np_loss(backend_of(x).binary("sub", x._data, t._data), p),
                        x.device)
        else:
            loss = cls.loss(x - t, p)
        ctx.meta = (reduction, loss.numel(), p)
        return _reduce_loss(loss, reduction)

    @classmethod
    def backward(cls, ctx, g):
        x, t = ctx.saved_tensors
        reduction, n, p = ctx.meta
        need_x, need_t = ctx.needs_input_grad[:2]
        if not differentiable_formula() and cls._np_ok(x, t, cls.np_dloss) \
                and g._device is x._device and g.dtype is x.dtype:
            return _np_loss_grads(cls.np_dloss, x, t, g, reduction, n, p, need_x, need_t)

        def dloss_dd() -> Tensor:
            return _mean_scaled(g, reduction, n) * cls.dloss(x - t, p)

        dd = dloss_dd()
        if need_x and need_t and differentiable_formula():
            return dd, -dloss_dd(), None, None
        return (dd if need_x else None), (-dd if need_t else None), None, None


def _np_loss_grads(np_dloss, x: Tensor, t: Tensor, g: Tensor, reduction: str, n: int, p,
                   need_x: bool, need_t: bool) -> tuple:
    """_DiffLoss's plain backward on the arrays: dd = g' * dloss(x - t) with g' = g / n
    ('mean', n cast to g's dtype as the number operand of g / float(n)), else g; the
    gradients (dd, -dd) (broadcast-shaped: the engine sums them to x's and t's shapes)."""
    be = backend_of(x)
    gs = g._data
    if reduction == "mean":
        gs = be.binary("div", gs, gs.dtype.type(float(n)))
    dd = be.binary("mul", gs, np_dloss(be.binary("sub", x._data, t._data), p))
    gx = wrap(dd, x.device) if need_x else None
    gt = wrap(be.unary("neg", dd), x.device) if need_t else None
    return gx, gt, None, None


class MseLoss(_DiffLoss):
    """One node with its reduction, as PyTorch's (MseLossBackward0): l = d^2 (d = x - t),
    dl/dd = 2 d (see _DiffLoss)."""

    name = "mse_loss"
    node_name = "MseLossBackward0"

    @staticmethod
    def loss(d: Tensor, p) -> Tensor:
        return d * d

    @staticmethod
    def dloss(d: Tensor, p) -> Tensor:
        return d * 2.0


def _reduce_loss(loss: Tensor, reduction: str) -> Tensor:
    """An elementwise loss reduced inside a loss node's forward ('mean' / 'sum' / 'none')."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _mean_scaled(g: Tensor, reduction: str, n: int) -> Tensor:
    """A loss node's incoming gradient per element: g / n for 'mean' (n: the elementwise
    loss's numel), else g (a 0-d g broadcasts in the products of the backward)."""
    return g / float(n) if reduction == "mean" else g


def _warn_if_shapes_differ(input: Tensor, target: Tensor) -> None:  # noqa: A002
    """PyTorch's warning for elementwise losses whose target broadcasts against input."""
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the "
                      f"input size ({list(input.shape)}). This will likely lead to incorrect "
                      f"results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=user_stacklevel())


def _check_elementwise_weight(op: str, input: Tensor, weight) -> None:  # noqa: A002
    """PyTorch's check of the elementwise ``weight`` of mse/l1/huber_loss: input's shape."""
    if weight is None:
        return
    _check_tensor(op, weight, "weight")
    if weight.shape != input.shape:
        raise ValueError(f"Weights and input must have the same size. ({op}: weight "
                         f"{list(weight.shape)}, input {list(input.shape)})")


def _weighted_reduced(loss: Tensor, weight: Tensor, reduction: str, half,
                      by_weight: bool) -> Tensor:
    """w l reduced; 'mean' is sum(w l) / sum(w) when ``by_weight`` (mse/l1_loss) and the
    plain mean of w l otherwise (huber_loss), as PyTorch's."""
    wl = loss * weight
    if reduction == "mean" and by_weight:
        wl = wl.sum() / weight.sum()
        return wl if half is None else wl.to(half)
    return _reduced(wl, reduction, half)


def _reduced(loss: Tensor, reduction: str, half) -> Tensor:
    """An elementwise loss reduced ('mean' / 'sum' / 'none'), rounded to ``half``."""
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss if half is None else loss.to(half)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """y = input @ weight^T + bias; weight: [out, in] (or [in]), bias: [out] (or [])."""
    if STATE.autocast is not None:  # tgrad.amp's "lower" policy, then autocast off inside
        return _linear_in_autocast(input, weight, bias)  # (one rounding, as PyTorch's)
    return _linear(input, weight, bias)


def _linear(input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:  # noqa: A002
    """linear's body (its casts done)."""
    _check_tensor("linear", input)
    _check_tensor("linear", weight, "weight")
    if weight.ndim not in (1, 2):
        raise RuntimeError(f"linear: weight must be 1-D or 2-D, got shape "
                           f"{shape_str(weight.shape)}")
    if bias is not None:
        _check_tensor("linear", bias, "bias")
        if bias.dtype is not weight.dtype and weight.dtype is input.dtype:  # (no promotion)
            names = dtypes.SCALAR_TYPE_NAMES
            raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                               f"{names.get(bias.dtype, bias.dtype.name)} and "
                               f"{names.get(input.dtype, input.dtype.name)} (linear: bias of "
                               f"dtype {bias.dtype.name} for an input and weight of dtype "
                               f"{input.dtype.name}; convert it with bias.to(input.dtype))")
    if input.ndim == 0 or input.shape[-1] != weight.shape[-1]:
        rows = int(math.prod(input.shape[:-1])) if input.ndim else 1
        cols = input.shape[-1] if input.ndim else 1
        w_shape = (weight.shape[1], weight.shape[0]) if weight.ndim == 2 else (weight.shape[0],
                                                                              1)
        raise RuntimeError(f"linear: mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} "
                           f"and {w_shape[0]}x{w_shape[1]}) (input {shape_str(input.shape)}, "
                           f"weight {shape_str(weight.shape)})")
    if input.dtype in ADDMM_DTYPES and weight.dtype is input.dtype:  # no half to widen
        x, w, b, half = input, weight, bias, None  # (_compute's common case, at once)
    else:
        (x, w, b), half = _compute(input, weight, bias)
    wd = w._data
    if wd.ndim == 2:
        w = view_apply(TView, w, _T)  # w.t() (PyTorch's TBackward0)
        xn = x._data.ndim
        if b is not None and (xn <= 2 or (b._data.ndim == 1 and x.is_contiguous())):
            # PyTorch's one AddmmBackward0 node (bias, x, w^T) where one kernel applies; a
            # 1-D input is viewed as (1, in), a contiguous >= 3-D one (with a 1-D bias) as
            # (rows, in), and the result viewed back (ViewBackward0 on both sides; the
            # shapes were checked above). Other >= 3-D inputs: matmul + add, as PyTorch's
            dt = x.dtype
            if b.dtype is dt and w.dtype is dt and dt in ADDMM_DTYPES and (
                    b._data.shape == wd.shape[:1] or b._data.ndim == 0) and \
                    b.device is x.device and w.device is x.device and not (
                    x._sparse or w._sparse):
                if xn == 2:
                    y = Addmm.apply(b, x, w, 1, 1)
                else:
                    lead = x.shape[:-1]
                    y = Addmm.apply(b, view_apply(View, x, (math.prod(lead), wd.shape[1])),
                                    w, 1, 1)
                    y = view_apply(View, y, lead + wd.shape[:1])
                return y if half is None else y.to(half)
    else:
        w = w.t()  # (a 1-D weight: PyTorch's t() too, a TBackward0 alias)
    y = x.matmul(w)
    if b is not None:
        y = y + b
    return y if half is None else y.to(half)


_linear_in_autocast = autocast_policy("lower")(_linear)


# ====================================================================== dropout
class Dropout(Function):
    """y = x m / (1 - p), m_i = [u_i >= p] with u_i uniform from tgrad's generator.
    The mask is never stored: the backend returns a small ``state`` from which it
    regenerates m (GPU: the Philox (seed, offset); CPU: a 64-bit SFC64 key, see
    tgrad/backends/_numpy_nn.py). backward: dx = dropout_backward(g, p, state) = g m / (1-p).
    Shapes: x, y, g, dx all the same shape; p a float in [0, 1]."""

    name = "dropout"
    node_name = "NativeDropoutBackward0"
    flops = _per_element(1)

    @staticmethod
    def forward(ctx, x, p):
        y, state = backend_of(x).dropout_fwd(x._data, p)
        ctx.p, ctx.state = p, state
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        return DropoutBackward.apply(g, ctx.p, ctx.state), None


class DropoutBackward(Function):
    """out = g m / (1 - p) (the forward's mask m, regenerated from ``state``).
    Linear in g, so d/dg applied to gg is the same op: dropout_backward(gg, p, state)."""

    name = "dropout_backward"
    node_name = "NativeDropoutBackwardBackward0"
    flops = _per_element(1)

    @staticmethod
    def forward(ctx, g, p, state):
        ctx.p, ctx.state = p, state
        return wrap(backend_of(g).dropout_bwd(g._data, p, state), g.device)

    @staticmethod
    def backward(ctx, gg):
        return DropoutBackward.apply(gg, ctx.p, ctx.state), None, None


def dropout(input: Tensor, p: float = 0.5, training: bool = True,  # noqa: A002
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` (a Bernoulli mask from tgrad's generator,
    seeded by tgrad.manual_seed) and scale the rest by 1/(1-p); identity when not
    training or p == 0. One op (``dropout``, node ``NativeDropoutBackward0``) whose
    backward regenerates the mask instead of saving it."""
    _check_tensor("dropout", input)
    if not 0.0 <= p <= 1.0:
        if p != p:  # NaN: PyTorch's kernel check (a RuntimeError, also when not training)
            raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    _check_float("dropout", input)
    y = Dropout.apply(input, float(p))
    return input.copy_(y) if inplace else y


# ====================================================================== layer norm
class LayerNorm(Function):
    """y = (x - mean) * rstd * w + b over the last k dims.
    backward: (dx, dw, db) = layer_norm_backward(g, x, w, mean, rstd) (one fused op)."""

    name = "layer_norm"
    node_name = "NativeLayerNormBackward0"
    scalar_edges = True  # None weight / bias keep their (None, 0) slots (PyTorch's)
    hidden_edges = (3, 4)
    # result1/2: the mean and rstd (kept as ctx attributes); the bias is not kept (None
    # only where there is none)
    saved_attributes = {"_saved_input": 0, "_saved_weight": 1,
                        "_saved_bias": lambda node: _ln_saved_bias(node),
                        "_saved_normalized_shape": lambda node: node._out_meta[0][0][
                            len(node._out_meta[0][0]) - node.k:],
                        "_saved_result1": _function.KeptTensor("mean"),
                        "_saved_result2": _function.KeptTensor("rstd")}
    flops = _per_element(8)

    @staticmethod
    def forward(ctx, x, w, b, k, eps):
        be = backend_of(x)
        y, mean, rstd = be.layer_norm_fwd(x._data, k, None if w is None else w._data,
                                          None if b is None else b._data, eps)
        ctx.mean, ctx.rstd = wrap(mean, x.device), wrap(rstd, x.device)
        ctx.k, ctx.eps, ctx.has_w, ctx.has_b = k, eps, w is not None, b is not None
        ctx.save_for_backward(x, w)
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        _, need_w, need_b = ctx.needs_input_grad[:3]
        dx, dw, db = LayerNormBackward.apply(g, x, w, ctx.mean, ctx.rstd, ctx.k, ctx.eps,
                                             bool(need_w), bool(need_b))
        return dx, dw, db, None, None


def _ln_saved_bias(node) -> None:
    """PyTorch's _saved_bias of a layer_norm node: None without a bias; tgrad's node does
    not keep a given bias (no gradient formula reads it)."""
    if not node.has_b:
        return None
    raise AttributeError(f"{node.name()}._saved_bias: tgrad's layer_norm node does not keep "
                         f"the bias (no gradient reads it); it is None only for a call "
                         f"without bias")


def _ln_stats(x: Tensor, k: int, eps: float):
    """(h, r): xhat and rstd recomputed in differentiable ops (for higher derivatives)."""
    dims = tuple(range(x.ndim - k, x.ndim))
    xc = x - x.mean(dims, keepdim=True)
    r = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    return xc * r, r, dims


class LayerNormBackward(Function):
    """(dx, dw, db) = (r (gw - mean(gw) - h mean(gw h)), sum_batch(g h), sum_batch(g)),
    gw = g w, h = xhat, r = rstd, N = normalized numel. Its backward, for cotangents
    (ggx, ggw, ggb), with m = mean(gw h), P(v) = v - mean(v):
      d/dg = w r (ggx - mean(ggx) - h mean(ggx h)) + ggw h + ggb
      d/dw = sum_batch(g r (ggx - mean(ggx) - h mean(ggx h)))
      d/dx = r (c - mean(c) - h mean(c h)) + s h / N,  where
             c = -r m ggx - (r/N) sum(ggx h) gw + ggw g,
             s = -r^2 sum(ggx P(gw)) + r^2 m sum(ggx h)
    (from dh = r (dx - mean(dx) - h mean(h dx)) and dr = -r^2 mean(h dx))."""

    name = "layer_norm_backward"
    node_name = "NativeLayerNormBackwardBackward0"
    flops = _per_element(12)

    @staticmethod
    def forward(ctx, g, x, w, mean, rstd, k, eps, need_w, need_b):
        be = backend_of(g)
        dx, dw, db = be.layer_norm_bwd(g._data, x._data, mean._data, rstd._data,
                                       None if w is None else w._data, k, need_w, need_b)
        ctx.k, ctx.eps = k, eps
        ctx.save_for_backward(g, x, w)
        return (wrap(dx, g.device), None if dw is None else wrap(dw, g.device),
                None if db is None else wrap(db, g.device))

    @staticmethod
    def backward(ctx, ggx, ggw, ggb):
        g, x, w = ctx.saved_tensors
        need_g, need_x, need_w = ctx.needs_input_grad[:3]
        k = ctx.k
        h, r, dims = _ln_stats(x, k, ctx.eps)
        n = float(math.prod(x.shape[x.ndim - k:]))
        batch = tuple(range(x.ndim - k))
        gw = g * w if w is not None else g
        dg = dx = dw = None

        def proj(v):  # r (v - mean(v) - h mean(v h)): the adjoint of g -> dx with w = 1
            return r * (v - v.mean(dims, keepdim=True) - h * (v * h).mean(dims, keepdim=True))

        u = proj(ggx) if ggx is not None else None
        if need_g:
            parts = []
            if u is not None:
                parts.append(u * w if w is not None else u)
            if ggw is not None:
                parts.append(ggw * h)
            if ggb is not None:
                parts.append(ggb.expand(g.shape))
            if parts:
                dg = parts[0]
                for p in parts[1:]:
                    dg = dg + p
        if need_w and w is not None and u is not None:
            dw = (u * g).sum(batch) if batch else u * g
        if need_x:
            c = None
            if ggx is not None:
                m = (gw * h).mean(dims, keepdim=True)
                sh = (ggx * h).sum(dims, keepdim=True)
                c = -(r * m) * ggx - (r / n) * sh * gw
                pgw = gw - gw.mean(dims, keepdim=True)
                s = (r * r) * (m * sh - (ggx * pgw).sum(dims, keepdim=True))
            if ggw is not None:
                c = ggw * g if c is None else c + ggw * g
            if c is not None:
                dx = r * (c - c.mean(dims, keepdim=True) - h * (c * h).mean(dims, keepdim=True))
                if ggx is not None:
                    dx = dx + s * h / n
        return dg, dx, dw, None, None, None, None, None, None


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims (biased variance), then scale by
    ``weight`` and shift by ``bias`` (one fused op)."""
    _check_float("layer_norm", input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(s) for s in normalized_shape)
    k = len(ns)
    if k == 0 or input.ndim < k or input.shape[input.ndim - k:] != ns:
        raise RuntimeError(f"layer_norm: Given normalized_shape={list(ns)}, expected input "
                           f"with shape [*, {', '.join(str(s) for s in ns)}], but got input "
                           f"of size {shape_str(input.shape)}")
    params = [p for p in (weight, bias) if p is not None]
    # PyTorch's mixed type: a float16/bfloat16 input with float32 weight and bias is
    # normalized in float32 with the float32 parameters and rounded once to its dtype
    mixed = (input.dtype.itemsize == 2 and input.dtype.is_floating_point and params
             and all(p.dtype is dtypes.float32 for p in params if isinstance(p, Tensor)))
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        _check_tensor("layer_norm", p, name)
        if p.shape != ns:
            raise RuntimeError(f"layer_norm: Expected {name} to be of same shape as "
                               f"normalized_shape, but got {name} of shape "
                               f"{shape_str(p.shape)} and normalized_shape = {list(ns)}")
        if p.dtype is not input.dtype and not mixed:
            raise RuntimeError(f"layer_norm: expected {name} to have the input's dtype "
                               f"{input.dtype} (or float32 for a float16/bfloat16 input), "
                               f"got {p.dtype}")
        if p.device != input.device:
            raise RuntimeError(f"layer_norm: expected {name} on {input.device}, got {p.device}")
    if mixed:
        y = LayerNorm.apply(input.to(dtypes.float32), weight, bias, k, float(eps))
        return y.to(input.dtype)
    return LayerNorm.apply(input, weight, bias, k, float(eps))


def layer_norm_backward(grad: Tensor, input: Tensor, weight, mean: Tensor,  # noqa: A002
                        rstd: Tensor, k: int, eps: float = 1e-5) -> tuple:
    """The fused layer_norm backward as an op: (dx, dw, db)."""
    return LayerNormBackward.apply(grad, input, weight, mean, rstd, k, eps,
                                   weight is not None, True)


# ====================================================================== activations
def _gelu_dd(x: Tensor, approximate: str) -> Tensor:
    """d^2 gelu / dx^2.  'none': phi(x) (2 - x^2);
    'tanh': (1 - t^2)(u' - x t u'^2 + x u''/2), u'' = 6 sqrt(2/pi) 0.044715 x, t = tanh(u),
    with 1 - t^2 = sech(u)^2 = 4e / (1 + e)^2 and t = sign(u) (1 - e) / (1 + e) from one
    e = exp(-2|u|): 1 - t^2 itself cancels to 0 from |u| ~ 19 (float64; ~9 in float32, 30%
    off at x = 5) where the true value is ~4e. Where sech^2 is 0 (|u| > ~370, or u's cube
    overflowed to inf) the result is 0 (the limit), not 0 * inf = NaN; at x = +-inf NaN, as
    PyTorch's."""
    if approximate == "tanh":
        k0, k1 = math.sqrt(2.0 / math.pi), 0.044715
        u = (x + x * x * x * k1) * k0
        e = exp(u.abs() * -2.0)
        sech2 = e * 4.0 / ((e + 1.0) * (e + 1.0))
        t = (1.0 - e) / (1.0 + e) * u.sign()
        du = (x * x * (3.0 * k1) + 1.0) * k0
        ddu = x * (6.0 * k0 * k1)
        limit = (sech2 == 0.0) & (x.abs() < math.inf)
        return where(limit, 0.0, sech2 * (du - x * t * du * du + x * ddu * 0.5))
    phi = exp(x * x * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
    return phi * (2.0 - x * x)


def _silu_dd(x: Tensor) -> Tensor:
    """d^2 silu / dx^2 = s s' (2 + x (1 - 2 s)), s = sigmoid(x), s' = sigmoid(-x) (not
    1 - s, which cancels for x >> 0: 1e-3 relative error at x = 30 in float64)."""
    s = sigmoid(x)
    return s * sigmoid(-x) * (x * (1.0 - s * 2.0) + 2.0)


def _softplus_dd(x: Tensor, beta: float, threshold: float) -> Tensor:
    """d^2 softplus / dx^2 = beta s s', s = sigmoid(beta x), s' = sigmoid(-beta x) (1 - s
    cancels for beta x >> 0: 3e-8 relative error at 19.9 in float64, 0 in float32); 0 where
    beta x >= threshold (at the threshold too: PyTorch's softplus_double_backward masks
    beta x < threshold, while the first derivative takes the smooth branch there), NaN for a
    NaN x."""
    bx = x * beta
    return where(bx >= threshold, 0.0, sigmoid(bx) * sigmoid(-bx) * beta)


# name: (node name, second derivative rule dd(x, *params), flops per element fwd, bwd)
ACTIVATIONS = {
    "gelu": ("GeluBackward0", _gelu_dd, 8, 12),
    "silu": ("SiluBackward0", _silu_dd, 4, 6),
    "softplus": ("SoftplusBackward0", _softplus_dd, 4, 5),
}


def _make_activation(name: str, node: str, dd, fwd_flops: int, bwd_flops: int):
    fwd_prim, bwd_prim = name + "_fwd", name + "_bwd"

    def b_forward(ctx, g, x, *params):
        ctx.params = params
        ctx.save_for_backward(g, x)
        return wrap(getattr(backend_of(g), bwd_prim)(g._data, x._data, *params), g.device)

    def b_backward(ctx, gg):
        # out = g f'(x):  d/dg = gg f'(x) = f_backward(gg, x);  d/dx = gg g f''(x)
        g, x = ctx.saved_tensors
        need_g, need_x = ctx.needs_input_grad[:2]
        dg = bwd_cls.apply(gg, x, *ctx.params) if need_g else None
        dx = gg * g * dd(x, *ctx.params) if need_x else None
        return (dg, dx) + (None,) * len(ctx.params)

    bwd_cls = type(name.capitalize() + "Backward", (Function,), {
        "name": name + "_backward", "node_name": node[:-1] + "Backward0",
        "flops": _per_element(bwd_flops),
        "forward": staticmethod(b_forward), "backward": staticmethod(b_backward)})

    def f_forward(ctx, x, *params):
        ctx.params = params
        ctx.save_for_backward(x)
        return wrap(getattr(backend_of(x), fwd_prim)(x._data, *params), x.device)

    def f_backward(ctx, g):
        (x,) = ctx.saved_tensors
        return (bwd_cls.apply(g, x, *ctx.params),) + (None,) * len(ctx.params)

    fwd_cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": node, "flops": _per_element(fwd_flops),
        "forward": staticmethod(f_forward), "backward": staticmethod(f_backward)})
    return register_op(fwd_cls), register_op(bwd_cls)


_ACT = {n: _make_activation(n, *spec) for n, spec in ACTIVATIONS.items()}


def gelu(input: Tensor, approximate: str = "none") -> Tensor:  # noqa: A002
    """x Phi(x) ('none', exact via erf) or its tanh approximation ('tanh')."""
    _check_float("gelu", input)
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate argument must be either none or tanh, got "
                           f"'{approximate}'")
    return _ACT["gelu"][0].apply(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x sigmoid(x); complex x (CPU): the value only, as PyTorch's (which has no complex
    derivative for it: its error when x requires grad)."""
    _check_tensor("silu", input)
    if input.dtype.is_complex:
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("silu does not support automatic differentiation for outputs "
                               "with complex dtype.")
        out = input * sigmoid(input)
        return input.copy_(out) if inplace else out
    _check_float("silu", input)
    if inplace:  # out of place on a snapshot, then written back (the op saves its input)
        return apply_inplace(input, "silu_", _ACT["silu"][0].apply)
    return _ACT["silu"][0].apply(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:  # noqa: A002
    """log(1 + exp(beta x)) / beta, reverting to x where beta x > threshold."""
    _check_float("softplus", input)
    return _ACT["softplus"][0].apply(input, float(beta), float(threshold))


def relu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(x, 0)."""
    _check_tensor("relu", input)
    return input.relu_() if inplace else _relu_op(input)


for _c in (Softmax, SoftmaxBackward, LogSoftmax, LogSoftmaxBackward, CrossEntropy,
           CrossEntropyBackward, LayerNorm, LayerNormBackward, Dropout, DropoutBackward):
    register_op(_c)


# Ops composed of the ones above and of tgrad ops (leaky_relu, losses, one_hot, pad...).
from tgrad.nn import _composite  # noqa: E402
from tgrad.nn._composite import *  # noqa: E402,F401,F403

__all__ += _composite.__all__

# Convolution, pooling and the batch/group/instance/RMS norms, composed of tgrad ops.
from tgrad.nn import _conv, _norm  # noqa: E402
from tgrad.nn._conv import *  # noqa: E402,F401,F403
from tgrad.nn._norm import *  # noqa: E402,F401,F403

__all__ += _conv.__all__ + _norm.__all__

# Attention (matmuls and the fused softmax), and multi-head attention over it.
from tgrad.nn import _attention, _mha  # noqa: E402
from tgrad.nn._attention import *  # noqa: E402,F401,F403
from tgrad.nn._mha import *  # noqa: E402,F401,F403

__all__ += _attention.__all__ + _mha.__all__

# More activations (hardswish, softshrink, prelu...), composed of tgrad ops.
from tgrad.nn import _activations  # noqa: E402
from tgrad.nn._activations import *  # noqa: E402,F401,F403

__all__ += _activations.__all__

# Transposed convolution, fold and interpolate, composed of tgrad ops.
from tgrad.nn import _conv_transpose, _interpolate  # noqa: E402
from tgrad.nn._conv_transpose import *  # noqa: E402,F401,F403
from tgrad.nn._interpolate import *  # noqa: E402,F401,F403

__all__ += _conv_transpose.__all__ + _interpolate.__all__

# Channel-wise dropout (dropout1d/2d/3d): dropout's mask on ones, times the input.
from tgrad.nn import _dropout  # noqa: E402
from tgrad.nn._dropout import *  # noqa: E402,F401,F403

__all__ += _dropout.__all__

# Distances between vectors (tgrad/ops/distances.py), under their nn.functional names.
from tgrad.ops.distances import pairwise_distance, pdist  # noqa: E402

__all__ += ["pairwise_distance", "pdist"]

# More losses, pixel/channel shuffles, gumbel_softmax and in-place activations, composed.
from tgrad.nn import _losses_extra, _shuffle  # noqa: E402
from tgrad.nn._losses_extra import *  # noqa: E402,F401,F403
from tgrad.nn._shuffle import *  # noqa: E402,F401,F403

__all__ += _losses_extra.__all__ + _shuffle.__all__

# Bags of embedding rows (sum, mean, max), composed of a gather and scatter reductions.
from tgrad.nn import _embedding_bag  # noqa: E402
from tgrad.nn._embedding_bag import *  # noqa: E402,F401,F403

__all__ += _embedding_bag.__all__

# fractional_max_pool2d / 3d: host-chosen maxima read with gather.
from tgrad.nn import _fractional  # noqa: E402
from tgrad.nn._fractional import *  # noqa: E402,F401,F403

__all__ += _fractional.__all__

# lp_pool, local_response_norm, rrelu and the alpha dropouts, composed of tgrad ops.
from tgrad.nn import _layers_extra  # noqa: E402
from tgrad.nn._layers_extra import *  # noqa: E402,F401,F403

__all__ += _layers_extra.__all__

# affine_grid / grid_sample (spatial transformers), composed of gathers and weights.
from tgrad.nn import _grid_sample  # noqa: E402
from tgrad.nn._grid_sample import *  # noqa: E402,F401,F403

__all__ += _grid_sample.__all__

# ctc_loss: the CTC forward recursion in log space, composed of tgrad ops.
from tgrad.nn import _ctc  # noqa: E402
from tgrad.nn._ctc import *  # noqa: E402,F401,F403

__all__ += _ctc.__all__

# nn.functional.grad is the tgrad.nn.grad module (conv*d_input / conv*d_weight), as PyTorch's.
from tgrad.nn import grad as _grad_module  # noqa: E402

grad = _grad_module

# linear_cross_entropy (PyTorch 2.13): linear + cross_entropy, row-chunked with options.
from tgrad.nn._linear_cross_entropy import linear_cross_entropy  # noqa: E402,F401

__all__ += ["linear_cross_entropy"]
