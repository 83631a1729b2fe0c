"""nn.functional ops composed of other tgrad ops (no primitive or kernel of their own),
re-exported by tgrad.nn.functional. Gradients come from the parts, so these are written
to keep them exact where PyTorch has a dedicated backward:

- a branch a ``where`` does not select must not hold inf/NaN, or its zero gradient times
  that inf becomes NaN (elu takes expm1 of min(x, 0); kl_div takes log of a target with
  its zeros replaced by 1);
- hardtanh/relu6 pass the gradient strictly inside (lo, hi), as PyTorch's backward does
  (clamp passes it at the bounds too);
- binary_cross_entropy is one Function with PyTorch's backward (the composite of a clamped
  log gives 0/0 at x = 0 or 1), written in tgrad ops so it differentiates again.
- binary_cross_entropy_with_logits is one Function with PyTorch's backward (sigmoid(x) - t;
  the composite's (1 - t) - sigmoid(-x) cancels for very negative x);
- elu is one Function (its backward takes alpha e^x, not elu(x) + alpha, which cancels);
- the piecewise-linear ops pass their input through ``tie`` (tgrad/nn/_piecewise.py), so
  their gradient stays in x's graph under create_graph, as PyTorch's.

float16/bfloat16 losses compute in float32 and round once, as the fused ops do.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from tgrad import dtypes
from tgrad._autocast import UNSAFE_BCE, autocast_policy, refuse_in_region
from tgrad.autograd import function as _function
from tgrad.autograd.function import Function, differentiable_formula, expandable
from tgrad.autograd.grad_mode import STATE
from tgrad.backends import _numpy_act as _np_act
from tgrad.backends import _numpy_layout as _np_layout
from tgrad.nn._piecewise import _Attach
from tgrad.nn.functional import (
    _broadcast_dtypes,
    _check_elementwise_weight,
    _check_float,
    _check_float_kernel,
    _check_reduction,
    _check_tensor,
    _compute,
    _DiffLoss,
    _kernel_operands,
    _legacy_reduction,
    _mean_scaled,
    _reduce_loss,
    _reduced,
    _warn_if_shapes_differ,
    _weighted_reduced,
    softmax,
    softplus,
)
from tgrad.ops._common import (
    backend_of,
    broadcast_or_raise,
    rounded_to,
    user_stacklevel,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, full
from tgrad.ops.elementwise import (
    _check_sub_operands,
    clamp,
    exp,
    expm1,
    log,
    log1p,
    sigmoid,
    where,
)
from tgrad.ops.index import IndexAdd, _index_fwd, normalize_key
from tgrad.ops.inplace import apply_inplace
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["leaky_relu", "elu", "selu", "logsigmoid", "hardtanh", "relu6", "glu", "softmin",
           "mish", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "cosine_similarity", "normalize",
           "one_hot", "embedding", "pad", "bilinear"]


# ====================================================================== activations
def _rounded_once(fn):
    """``fn`` computed in float32 for float16/bfloat16 inputs and rounded once (as PyTorch's
    fused activations), so a chain of ops does not round at every step."""
    def run(x: Tensor) -> Tensor:
        (x,), half = _compute(x)
        y = fn(x)
        return y if half is None else y.to(half)
    return run


def leaky_relu(input: Tensor, negative_slope: float = 0.01,  # noqa: A002
               inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope x;  dx = g or negative_slope g (at 0: the slope),
    in x's graph (tie: d(dx)/dx = 0)."""
    _check_float("leaky_relu", input)
    fn = lambda x: LeakyRelu.apply(x, negative_slope)  # noqa: E731
    return apply_inplace(input, "leaky_relu_", fn) if inplace else fn(input)


class _Piecewise(Function):
    """One node for a piecewise-linear activation y = f(x), as PyTorch's: dx = J(x) g with
    J piecewise constant (``mask_grad``), attached to x's graph (_piecewise._Attach: under
    create_graph dx requires grad when x does, d(dx)/dx = 0, PyTorch's double backward);
    d(dx)/dg is the same masking, so the backward differentiates again.

    On the CPU (float32/float64) ``np_value`` / ``np_grad`` (tgrad/backends/_numpy_act.py:
    the same NumPy steps on the arrays, the same bits; None: none, or a result None where
    they do not apply) compute the forward, and the backward when no graph is recorded
    (``differentiable_formula``: not under create_graph or in a forward-AD level)."""

    np_value = None  # (x array, *p) -> y array or None
    np_grad = None  # (x array, g array, *p) -> dx array

    @classmethod
    def forward(cls, ctx, x, *p):
        ctx.save_for_backward(x)
        ctx.p = p
        if cls.np_value is not None and _np_fast(x):
            y = cls.np_value(x._data, *p)
            if y is not None:
                return wrap(y, x.device)
        return cls.value(x, *p)

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        if cls.np_grad is not None and not differentiable_formula() and _np_fast(g) \
                and g.dtype is x.dtype:
            return (wrap(cls.np_grad(x._data, g._data, *ctx.p), g.device),) \
                + (None,) * len(ctx.p)
        return (_Attach.apply(cls.mask_grad(x, g, *ctx.p), x),) + (None,) * len(ctx.p)


def _np_fast(t: Tensor) -> bool:
    """Whether ``t`` is a CPU float32/float64 tensor, whose op may run _numpy_act's steps."""
    return t._device.type == "cpu" and _np_act.fast_dtype(t.dtype.np)


class LeakyRelu(_Piecewise):
    """y = x where x > 0, else slope x;  dx = g where x > 0, else slope g (at 0 and NaN
    too, as PyTorch's leaky_relu_backward)."""

    name = "leaky_relu"
    node_name = "LeakyReluBackward0"
    np_value = staticmethod(_np_act.leaky_relu)
    np_grad = staticmethod(_np_act.leaky_relu_grad)

    @staticmethod
    def value(x: Tensor, slope: float) -> Tensor:
        return where(x > 0, x, x * slope)

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, slope: float) -> Tensor:
        return where(x > 0, g, g * slope)


class Hardtanh(_Piecewise):
    """y = clamp(x, lo, hi);  dx = 0 where x <= lo or x >= hi, else g (NaN: g), as
    PyTorch's hardtanh_backward (clamp passes it at the bounds too)."""

    name = "hardtanh"
    node_name = "HardtanhBackward0"
    np_value = staticmethod(_np_act.hardtanh)
    np_grad = staticmethod(_np_act.hardtanh_grad)

    @staticmethod
    def value(x: Tensor, lo: float, hi: float) -> Tensor:
        return clamp(x, lo, hi)

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, lo: float, hi: float) -> Tensor:
        return where((x <= lo) | (x >= hi), 0.0, g)


class Threshold(_Piecewise):
    """y = value where x <= threshold, else x (NaN passes);  dx = g where x > threshold or
    NaN, else 0 (PyTorch's threshold_backward)."""

    name = "threshold"
    node_name = "ThresholdBackward0"
    np_value = staticmethod(_np_act.threshold)
    np_grad = staticmethod(_np_act.threshold_grad)

    @staticmethod
    def value(x: Tensor, th: float, v: float) -> Tensor:
        return where(_at_most(x, th), v, x)

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, th: float, v: float) -> Tensor:
        return where(_at_most(x, th), 0.0, g)


def _at_most(x: Tensor, th: float) -> Tensor:
    """x <= th, a float16/bfloat16 x compared in float32 (PyTorch's opmath: 0.3 is not
    rounded to the half 0.30005 first, so a half x of 0.30005 stays above it)."""
    return (x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x) <= th


class Hardsigmoid(_Piecewise):
    """y = clamp(x + 3, 0, 6) / 6;  dx = g / 6 strictly inside (-3, 3), else 0 (PyTorch's
    hardsigmoid_backward)."""

    name = "hardsigmoid"
    node_name = "HardsigmoidBackward0"
    np_value = staticmethod(_np_act.hardsigmoid)
    np_grad = staticmethod(_np_act.hardsigmoid_grad)

    @staticmethod
    def value(x: Tensor) -> Tensor:
        return clamp(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor) -> Tensor:
        return where((x > -3.0) & (x < 3.0), g / 6.0, 0.0)


class Elu(Function):
    """PyTorch's elu with input_scale s (elu: s = 1; celu: s = 1 / alpha):
    y = x for x > 0 (and NaN), else alpha (e^(s x) - 1);
    dx = g for x > 0 (and NaN: PyTorch's elu_backward tests x <= 0), else alpha s e^(s x) g.
    The negative branch's derivative is alpha s e^(s x) itself, not s (y + alpha), which
    cancels to a few ulps of alpha for very negative x in float32. Both are tgrad ops, so the
    backward differentiates again: d(dx)/dx = alpha s^2 e^(s x) g for x < 0, else 0 (at
    x = 0 too: PyTorch's elu_double_backward masks x < 0, while its elu_backward takes the
    negative branch at x <= 0), d(dx)/dg as above.
    The exponentials take x where x < 0, 0 elsewhere: no inf in the branch not taken (and
    e^0 = 1 carries no gradient to an x of 0)."""

    name = "elu"
    node_name = "EluBackward0"

    @staticmethod
    def forward(ctx, x, alpha, s, scale=None):
        ctx.save_for_backward(x)
        ctx.alpha, ctx.s, ctx.scale = alpha, s, scale
        if _np_fast(x):  # the same steps on the arrays (_numpy_act)
            return wrap(_np_act.elu(x._data, alpha, s, scale), x.device)
        neg = x <= 0
        y = where(neg, expm1(where(neg, x, 0.0) * s) * alpha, x)
        return y if scale is None else y * scale  # selu: scale * elu(x, alpha)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if not differentiable_formula() and _np_fast(g) and g.dtype is x.dtype:
            dx = _np_act.elu_grad(x._data, g._data, ctx.alpha, ctx.s, ctx.scale)
            return wrap(dx, g.device), None, None, None
        if ctx.scale is not None:
            g = g * ctx.scale
        neg = x <= 0
        return where(neg, g * (exp(where(x < 0, x, 0.0) * ctx.s) * (ctx.alpha * ctx.s)), g), \
            None, None, None


class Celu(Elu):
    """celu: PyTorch's CeluBackward0 node (Elu with s = 1 / alpha)."""

    node_name = "CeluBackward0"


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x where x > 0, else alpha (e^x - 1);  dx = g or alpha e^x g (see Elu)."""
    _check_float("elu", input)
    fn = _rounded_once(lambda x: Elu.apply(x, alpha, 1.0))
    return apply_inplace(input, "elu_", fn) if inplace else fn(input)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """scale * elu(x, alpha) with the self-normalising constants (one node, PyTorch's
    EluBackward0: dx = scale g or scale alpha e^x g)."""
    _check_float("selu", input)
    fn = _rounded_once(lambda x: Elu.apply(x, _SELU_ALPHA, 1.0, _SELU_SCALE))  # EluBackward0
    return apply_inplace(input, "selu_", fn) if inplace else fn(input)


def logsigmoid(input: Tensor) -> Tensor:  # noqa: A002
    """log(sigmoid(x)) = -softplus(-x), never switched to the linear form (softplus' stable
    max + log1p form keeps float64 exact for any x);  dx = g sigmoid(-x)."""
    _check_float("logsigmoid", input, "log_sigmoid_cpu")
    if input.dtype in (dtypes.float16, dtypes.bfloat16):  # softplus' own half rounding
        return -softplus(-input, 1.0, math.inf)
    return LogSigmoid.apply(input)


class _SigmoidOfNeg(Function):
    """y = sigmoid(-x), logsigmoid's derivative;  dx = -g sigmoid(x) y, each factor from its
    own exp: sigmoid's own rule y (1 - y) cancels where y -> 1 (x << 0: 1e-3 relative
    error at x = -30, 0 instead of e^-100 at -100 in float64)."""

    name = "logsigmoid_backward"
    node_name = "LogSigmoidBackwardBackward0"

    @staticmethod
    def forward(ctx, x):
        y = sigmoid(-x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors  # y = sigmoid(-x), the output (in the graph: higher orders)
        return -(g * sigmoid(x) * y)


class LogSigmoid(Function):
    """One node, PyTorch's LogSigmoidBackward0: y = -softplus(-x);  dx = g sigmoid(-x), tgrad
    ops, so the backward differentiates again (d(dx)/dx = -g sigmoid(x) sigmoid(-x), see
    ``_SigmoidOfNeg``)."""

    name = "logsigmoid"
    node_name = "LogSigmoidBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return 0.0 - softplus(-x, 1.0, math.inf)  # +0.0 (not -0.0) at x = +inf, as PyTorch

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * _SigmoidOfNeg.apply(x)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,  # noqa: A002
             inplace: bool = False) -> Tensor:
    """clamp(x, min_val, max_val);  dx = g strictly inside (min_val, max_val), else 0, in x's
    graph (tie: d(dx)/dx = 0). Integer inputs stay integer, the bounds truncated to the
    dtype as PyTorch's (bool raises)."""
    _check_tensor("hardtanh", input)
    if max_val < min_val:
        raise ValueError("min_val cannot be greater than max_val")  # PyTorch's text
    if input.dtype is dtypes.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if not input.dtype.is_floating_point:
        lo, hi = _int_scalars("hardtanh", input.dtype, min_val, max_val)
        fn = lambda x: clamp(x, lo, hi)  # noqa: E731
    else:
        fn = lambda x: Hardtanh.apply(x, min_val, max_val)  # noqa: E731
    return apply_inplace(input, "hardtanh_", fn) if inplace else fn(input)


def _int_scalars(op: str, dt, *values) -> tuple:
    """Python numbers as an integer op of PyTorch takes them: truncated towards zero,
    raising if one does not fit ``dt``."""
    for v in values:
        dtypes.check_value_fits(op, v, dt)
    return tuple(math.trunc(v) for v in values)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """min(max(x, 0), 6) (hardtanh(x, 0, 6); integer inputs stay integer)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """a * sigmoid(b) with a, b the two halves of ``input`` along ``dim``."""
    _check_float("glu", input)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _wrap_dim(dim, input.ndim, "glu")
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")

    return _rounded_once(lambda x: Glu.apply(x, d))(input)


class Glu(Function):
    """One node, PyTorch's GluBackward0: y = a sigmoid(b), (a, b) = x.chunk(2, dim);
    dx = cat(g s, g a s (1 - s)) along dim, s = sigmoid(b): tgrad ops of the saved x, so
    the backward differentiates again."""

    name = "glu"
    node_name = "GluBackward0"

    @staticmethod
    def forward(ctx, x, d):
        ctx.save_for_backward(x)
        ctx.d, ctx.s = d, None
        if _np_fast(x):  # the same steps on the arrays (_numpy_act)
            if not ctx.needs_input_grad[0]:
                return wrap(_np_act.glu(x._data, d), x.device)
            # sigmoid(b) kept for the fast backward (one exp pass less; x stays saved, so
            # its version check still guards an in-place change after the forward)
            y, ctx.s = _np_act.glu(x._data, d, keep=True)
            return wrap(y, x.device)
        a, b = x.chunk(2, d)
        return a * sigmoid(b)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.shape import cat
        (x,) = ctx.saved_tensors
        if not differentiable_formula() and _np_fast(g) and g.dtype is x.dtype \
                and g.shape == _halved(x.shape, ctx.d):
            s, ctx.s = ctx.s, None  # (consumed: a retained graph's second backward
            # recomputes it)
            return wrap(_np_act.glu_grad(x._data, g._data, ctx.d, s), g.device), None
        a, b = x.chunk(2, ctx.d)
        s = sigmoid(b)
        ga = g * s
        return cat([ga, ga * a * (1.0 - s)], ctx.d), None


def _halved(shape: tuple, d: int) -> tuple:
    """shape with dim d halved (a glu output's shape)."""
    return shape[:d] + (shape[d] // 2,) + shape[d + 1:]


@autocast_policy("fp32", cpu=None)
def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,  # noqa: A002
            dtype=None) -> Tensor:
    """softmax(-x) along ``dim``."""
    return softmax(-input, dim, dtype=dtype)


class Mish(Function):
    """y = x tanh(softplus(x));  dx = g (t + x sigmoid(x) (1 - t^2)), t = tanh(softplus(x))
    (PyTorch's mish_backward: g times one finite factor, so an infinite g gives +-inf where
    the chain rule through x * t would add inf and -inf, or take inf * 0 at x = 0). The
    backward is tgrad ops, so it differentiates again."""

    name = "mish"
    node_name = "MishBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * softplus(x).tanh()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = softplus(x).tanh()
        return g * (t + x * x.sigmoid() * (1.0 - t * t))


def mish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x tanh(softplus(x)) (see Mish)."""
    _check_float("mish", input)
    fn = _rounded_once(Mish.apply)
    return apply_inplace(input, "mish_", fn) if inplace else fn(input)


# ====================================================================== losses
def _pair(op: str, kernel: str | None, input: Tensor, target: Tensor,  # noqa: A002
          size_average, reduce, reduction: str) -> tuple:
    """Checked (input, target) in compute dtype, the half dtype to round to, reduction.
    The loss is computed in the promoted dtype of input and target, which must be a float
    one where PyTorch has only a floating-point ``kernel`` (None: integers are fine)."""
    _check_tensor(op, input)
    _check_tensor(op, target, "target")
    if kernel is not None:
        _check_float_kernel(op, kernel, input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_if_shapes_differ(input, target)
    # a fused kernel reads a bool operand promoted; a composition (l1_loss, smooth_l1 with
    # beta 0) subtracts, which refuses bools as PyTorch's, before any cast to a half dtype
    if kernel is None:
        if input.dtype is dtypes.bool_ or target.dtype is dtypes.bool_:
            _check_sub_operands(input, target)
        (x, t), half = _compute(*_broadcast_dtypes(input, target))
    else:
        (x, t), half = _kernel_operands(*_broadcast_dtypes(input, target))
    return x, t, half, reduction


@autocast_policy("fp32")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """|input - target|, reduced;  dx = g sign(x - t) (0 where equal). With ``weight``
    (input's shape) w |input - target|, whose 'mean' is sum(w l) / sum(w) (PyTorch's)."""
    x, t, half, reduction = _pair("l1_loss", None, input, target, size_average, reduce,
                                  reduction)
    _check_elementwise_weight("l1_loss", input, weight)
    if weight is not None:
        return _weighted_reduced((x - t).abs(), weight, reduction, half, by_weight=True)
    return _reduced((x - t).abs(), reduction, half)


@autocast_policy("fp32")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    x, t, half, reduction = _pair("smooth_l1_loss", "smooth_l1_cpu" if beta else None,
                                  input, target, size_average, reduce, reduction)
    if beta == 0.0:  # PyTorch's l1_loss composition (its grad_fn is the reduction's)
        return _reduced((x - t).abs(), reduction, half)
    loss = SmoothL1Loss.apply(x, t, reduction, beta)
    return loss if half is None else loss.to(half)


class SmoothL1Loss(_DiffLoss):
    """l = 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (beta > 0);
    dl/dd = d / beta where |d| < beta, else sign(d) (NaN for NaN: PyTorch's
    smooth_l1_backward), so d(dl/dd)/dd = 1 / beta strictly inside, else 0 (PyTorch's
    double backward)."""

    name = "smooth_l1_loss"
    node_name = "SmoothL1LossBackward0"
    np_loss = staticmethod(_np_act.smooth_l1)
    np_dloss = staticmethod(_np_act.smooth_l1_grad)

    @staticmethod
    def loss(d: Tensor, beta: float) -> Tensor:
        ad = d.abs()
        dq = clamp(d, -beta, beta)  # the quadratic branch stays finite where it is not taken
        return where(ad < beta, dq * dq * (0.5 / beta), ad - 0.5 * beta)

    @staticmethod
    def dloss(d: Tensor, beta: float) -> Tensor:
        return where(d.abs() < beta, d * (1.0 / beta), d.sign())


class HuberLoss(_DiffLoss):
    """l = 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta);
    dl/dd = d where |d| < delta, else delta sign(d) (NaN for NaN: PyTorch's
    huber_backward), so d(dl/dd)/dd = 1 strictly inside, else 0."""

    name = "huber_loss"
    node_name = "HuberLossBackward0"
    np_loss = staticmethod(_np_act.huber)
    np_dloss = staticmethod(_np_act.huber_grad)

    @staticmethod
    def loss(d: Tensor, delta: float) -> Tensor:
        ad = d.abs()
        dq = clamp(d, -delta, delta)  # the quadratic branch stays finite where not taken
        return where(ad < delta, dq * dq * 0.5, (ad - 0.5 * delta) * delta)

    @staticmethod
    def dloss(d: Tensor, delta: float) -> Tensor:
        return where(d.abs() < delta, d, d.sign() * delta)


@autocast_policy("fp32")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target)."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_tensor("huber_loss", input)
    _check_tensor("huber_loss", target, "target")
    common = dtypes.promote_types(input.dtype, target.dtype)
    if not input.dtype.is_floating_point and common is not input.dtype:
        # PyTorch's kernel writes into input's dtype (checked before its dtype support)
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(f"huber_loss: result type {names[common]} can't be cast to the "
                           f"desired output type {names[input.dtype]}")
    x, t, half, reduction = _pair("huber_loss", "huber_cpu", input, target, None, None,
                                  reduction)
    _check_elementwise_weight("huber_loss", input, weight)
    if weight is not None:  # 'mean' is the plain mean of w l here (PyTorch's composition)
        return _weighted_reduced(HuberLoss.apply(x, t, "none", delta), weight, reduction,
                                 half, by_weight=False)
    loss = HuberLoss.apply(x, t, reduction, delta)
    if half is None and loss.dtype is not input.dtype:  # PyTorch's kernel writes into
        loss = loss.to(input.dtype)  # input's dtype (a float64 target: computed, then cast)
    return loss if half is None else loss.to(half)


_LOG_FLOOR = -100.0  # PyTorch clamps BCE's logs at -100
_BCE_EPS = 9.999999960041972e-13  # floor of x (1 - x) in its gradient: float32 1e-12 (PyTorch)


class BinaryCrossEntropy(Function):
    """l = -w (t log x + (1 - t) log1p(-x)), logs clamped at -100 (w: the optional weight,
    broadcast to x's shape), reduced in the node (one node, PyTorch's
    BinaryCrossEntropyBackward0 with or without a weight);
    dl/dx = g' w (x - t) / max(x (1 - x), 1e-12);  dl/dt = g' w (log(1 - x) - log(x))
    (unclamped);  dl/dw = g' times the unweighted loss (PyTorch raises for a weight that
    requires grad), with g' = g / numel ('mean'), else g.
    Forward and backward are tgrad ops, so the backward differentiates again."""

    name = "binary_cross_entropy"
    node_name = "BinaryCrossEntropyBackward0"
    hidden_edges = (2,)  # PyTorch's node lists input and target (weight: not differentiable)

    @staticmethod
    def forward(ctx, x, t, w=None, reduction="none"):
        ctx.save_for_backward(x, t, w)
        ctx.reduction = reduction
        loss = _bce(x, t)
        if w is not None:
            loss = loss * w
        return _reduce_loss(loss, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t, w = ctx.saved_tensors
        need_x, need_t, need_w = ctx.needs_input_grad[:3]
        g = _mean_scaled(g, ctx.reduction, x.numel())
        gw = g * _bce(x, t) if need_w else None
        if w is not None:
            g = g * w
        gx = g * (x - t) / clamp(x * (1.0 - x), min=_BCE_EPS) if need_x else None
        gt = g * (log1p(-x) - log(x)) if need_t else None
        return gx, gt, gw, None


def _bce(x: Tensor, t: Tensor) -> Tensor:
    # log(1 - x) as log1p(-x), PyTorch's: 1 - x rounds away a small x (bce(1e-20, 0) is
    # 1e-20, not 0)
    return -(t * _clamped_log(x) + (1.0 - t) * clamp(log1p(-x), min=_LOG_FLOOR))


def _clamped_log(x: Tensor) -> Tensor:
    return clamp(log(x), min=_LOG_FLOOR)


def _check_loss_weight(op: str, weight: Tensor, input: Tensor) -> None:  # noqa: A002
    """``weight`` must broadcast to input's shape without enlarging it (PyTorch's in-place
    multiply of the loss by the weight)."""
    if not expandable(weight.shape, input.shape):
        raise RuntimeError(f"{op}: weight of shape {list(weight.shape)} doesn't match the "
                           f"broadcast shape of input {list(input.shape)}")


@autocast_policy(None, cpu="fp32")  # PyTorch's CPU list: fp32; CUDA refuses (below)
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,  # noqa: A002
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) of probabilities ``input`` in [0, 1], reduced."""
    refuse_in_region(UNSAFE_BCE, input, target, weight)  # PyTorch's: not in a CUDA region
    _check_float("binary_cross_entropy", input)
    _check_tensor("binary_cross_entropy", target, "target")
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the "
                         f"input size ({list(input.shape)}) is deprecated. Please ensure they "
                         f"have the same size.")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input.numel():
        lo, hi = float(input.detach().amin()), float(input.detach().amax())
        if not (0.0 <= lo and hi <= 1.0):  # NaN fails too
            raise RuntimeError(f"binary_cross_entropy: all elements of input should be between "
                               f"0 and 1 (got values in [{lo}, {hi}])")
    if target.dtype is not input.dtype:  # PyTorch's kernel: no promotion, no rounding
        raise RuntimeError(f"binary_cross_entropy: Found dtype "
                           f"{dtypes.SCALAR_TYPE_NAMES[target.dtype]} but expected "
                           f"{dtypes.SCALAR_TYPE_NAMES[input.dtype]} (the target must have "
                           f"input's dtype; convert it with target.to(input.dtype))")
    if target.numel():  # PyTorch 2.13 checks the target's range too
        lo, hi = float(target.detach().amin()), float(target.detach().amax())
        if not (0.0 <= lo and hi <= 1.0):  # NaN fails too
            raise RuntimeError(f"binary_cross_entropy: all elements of target should be "
                               f"between 0 and 1 (got values in [{lo}, {hi}])")
    (x, t), half = _compute(input, target)
    if weight is not None:
        _check_loss_weight("binary_cross_entropy", weight, input)
        if weight.dtype is not x.dtype and weight.dtype.is_floating_point:
            weight = weight.to(x.dtype)  # PyTorch multiplies the loss by it in place
    loss = BinaryCrossEntropy.apply(x, t, weight, reduction)
    return loss if half is None else loss.to(half)


class BinaryCrossEntropyWithLogits(Function):
    """l = (1 - t) x + c softplus(-x), c = 1 + (pw - 1) t (pw = 1 without pos_weight), the
    BCE of sigmoid(x) (softplus(-x) = -log sigmoid(x), exact for any x). PyTorch's backward:
    dl/dx = (pw t + 1 - t) sigmoid(x) - pw t  (sigmoid(x) - t without pos_weight; autograd
    through the forward gives (1 - t) - c sigmoid(-x), which cancels: 0 instead of
    sigmoid(x) ~ 2e-9 at x = -20 in float32);
    dl/dt = pw softplus(-x) - softplus(x)  (-x without pos_weight);
    dl/dpw = t softplus(-x).
    ``reduction`` 'mean' / 'sum' reduces in the node (one node, PyTorch's
    BinaryCrossEntropyWithLogitsBackward0 on the loss), so g is the reduced loss's gradient:
    each element's is g / numel ('mean', numel of the loss, which is input's shape: the
    caller refuses a pos_weight that enlarges it) or g ('sum'), broadcast in the products
    below.
    Forward and backward are tgrad ops, so the backward differentiates again."""

    name = "binary_cross_entropy_with_logits"
    node_name = "BinaryCrossEntropyWithLogitsBackward0"

    @staticmethod
    def forward(ctx, x, t, pw, reduction="none"):
        ctx.save_for_backward(x, t, pw)
        sp = softplus(-x, 1.0, math.inf)
        if pw is not None:
            sp = sp * ((pw - 1.0) * t + 1.0)
        loss = (1.0 - t) * x + sp
        ctx.meta = (reduction, loss.numel())
        return _reduce_loss(loss, reduction)

    @staticmethod
    def backward(ctx, g):
        x, t, pw = ctx.saved_tensors
        need_x, need_t, need_pw = ctx.needs_input_grad[:3]
        g = _mean_scaled(g, *ctx.meta)
        gx = gt = gpw = None
        if pw is None:
            if need_x:
                gx = g * (sigmoid(x) - t)
            if need_t:
                gt = g * -x
            return gx, gt, None, None
        if need_x:
            pt = pw * t
            gx = g * ((pt + 1.0 - t) * sigmoid(x) - pt)
        if need_t:
            gt = g * (pw * softplus(-x, 1.0, math.inf) - softplus(x, 1.0, math.inf))
        if need_pw:
            gpw = g * (t * softplus(-x, 1.0, math.inf))
        return gx, gt, gpw, None


@autocast_policy("fp32")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,  # noqa: A002
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x): BCE of sigmoid(x), stable for
    any x;  dx = g (sigmoid(x) (1 + (pw - 1) t) - pw t) (see BinaryCrossEntropyWithLogits),
    times the weight (and 1 / n for reduction="mean"). Without a weight it is one node
    with the reduction (PyTorch's BinaryCrossEntropyWithLogitsBackward0)."""
    _check_float("binary_cross_entropy_with_logits", input)
    _check_tensor("binary_cross_entropy_with_logits", target, "target")
    if target.shape != input.shape:
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size "
                         f"({list(input.shape)})")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if pos_weight is not None:  # PyTorch multiplies input's softplus by it in place
        _check_tensor("binary_cross_entropy_with_logits", pos_weight, "pos_weight")
        shape = broadcast_or_raise("binary_cross_entropy_with_logits", pos_weight.shape,
                                   input.shape)
        if shape != tuple(input.shape):
            raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the "
                               f"broadcast shape {list(shape)} (binary_cross_entropy_with_"
                               f"logits: pos_weight of shape {list(pos_weight.shape)} must "
                               f"broadcast to input's shape)")
    if not (target.dtype.is_floating_point or target.dtype.is_complex):  # PyTorch's text
        raise RuntimeError(f"result type {dtypes.SCALAR_TYPE_NAMES[input.dtype]} can't be cast "
                           f"to the desired output type "
                           f"{dtypes.SCALAR_TYPE_NAMES[target.dtype]} (binary_cross_entropy_"
                           f"with_logits: the target holds probabilities; convert it with "
                           f"target.float())")
    # a float target keeps its dtype: the loss is in the promoted dtype (float32 input,
    # float64 target: float64, as PyTorch; the target is never rounded)
    (x, t), half = _compute(input, target)
    if pos_weight is not None and pos_weight.dtype.is_floating_point and \
            not t.dtype.is_complex:  # (PyTorch's in-place ops keep the loss's dtype)
        pos_weight = pos_weight.to(dtypes.promote_types(x.dtype, t.dtype))
    if t.dtype.is_complex:  # (a real input: _check_float) PyTorch's formula, a complex loss
        if pos_weight is not None:  # PyTorch's error (its kernel writes input's dtype)
            raise RuntimeError(f"binary_cross_entropy_with_logits: result type "
                               f"{dtypes.SCALAR_TYPE_NAMES[t.dtype]} can't be cast to the "
                               f"desired output type {dtypes.SCALAR_TYPE_NAMES[x.dtype]} "
                               f"(a complex target with pos_weight)")
        loss = (1.0 - t) * x + (log1p(exp(-x.abs())) + clamp(-x, min=0.0))  # softplus(-x)
    elif weight is None and half is None:  # one node, reduced in it (PyTorch's grad_fn)
        return BinaryCrossEntropyWithLogits.apply(x, t, pos_weight, reduction)
    else:
        loss = BinaryCrossEntropyWithLogits.apply(x, t, pos_weight)
    if weight is not None:
        _check_loss_weight("binary_cross_entropy_with_logits", weight, input)
        # PyTorch multiplies the loss by it in place: the loss keeps its dtype
        loss = loss * (weight.to(loss.dtype) if weight.dtype.is_floating_point else weight)
    return _reduced(loss, reduction, half)


@autocast_policy("fp32")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence t (log t - x) of log-probabilities ``input`` (0 where t == 0;
    with ``log_target``: e^t (t - x)); reduction "batchmean" divides the sum by the batch
    size (the mathematically right KL), "mean" by the number of elements."""
    _check_tensor("kl_div", input)
    _check_tensor("kl_div", target, "target")
    if input.dtype.is_complex or target.dtype.is_complex:  # PyTorch's text
        raise RuntimeError(f"kl_div: Complex inputs not supported. (input {input.dtype.name}, "
                           f"target {target.dtype.name}: pass real log-probabilities and "
                           f"probabilities)")
    _check_float("kl_div", input)
    if not target.dtype.is_floating_point:  # PyTorch's text
        raise RuntimeError(f"kl_div: Integral inputs not supported. (target of dtype "
                           f"{target.dtype.name}: pass probabilities, or log-probabilities "
                           f"with log_target=True, as a float tensor)")
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.",  # PyTorch's text
                      stacklevel=user_stacklevel())
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    (x, t), half = _compute(input, target)
    if log_target:
        loss = t.exp() * (t - x)
    else:  # xlogy(t, t): log of t with its zeros replaced by 1, so 0 log 0 = 0 (no NaN grad)
        loss = t * log(where(t == 0, 1.0, t)) - t * x  # t < 0: NaN, as PyTorch
    if reduction == "batchmean":
        n = input.shape[0] if input.ndim else 1
        loss = loss.sum() / float(n)
        return loss if half is None else loss.to(half)
    return _reduced(loss, reduction, half)


# ====================================================================== vectors
@autocast_policy("fp32", cpu=None)
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum((x1 / max(|x1|, eps)) (x2 / max(|x2|, eps))) along ``dim`` (inputs broadcast),
    as PyTorch: each input is divided by its own norm first (the result stays in [-1, 1]),
    and the clamp at eps is not differentiated (the gradient is the unclamped norm's)."""
    _check_tensor("cosine_similarity", x1, "x1")
    _check_tensor("cosine_similarity", x2, "x2")
    if eps < 0:  # PyTorch's text
        raise RuntimeError(f"eps must be non-negative, got: {eps} (cosine_similarity)")
    common = dtypes.promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, "
                           f"yet common dtype is {dtypes.SCALAR_TYPE_NAMES[common]}")
    (a, b), half = _compute(*_broadcast_dtypes(x1, x2))  # PyTorch's broadcast first
    # dim counts in the broadcast shape; PyTorch's errors name the op
    shape = broadcast_or_raise("cosine_similarity", a.shape, b.shape)
    d = _wrap_dim(dim, len(shape), "cosine_similarity")
    if _cosine_on_numpy(a, b, shape):  # one node, NumPy forward and backward
        cos = _CosineSimilarity.apply(a, b, d, float(eps), tuple(shape))
    else:
        a, b = a.expand(shape), b.expand(shape)
        cos = (_unit_or_scaled(a, dim, eps) * _unit_or_scaled(b, dim, eps)).sum(dim)
    return cos if half is None else cos.to(half)


def _unit_or_scaled(x: Tensor, dim: int, eps: float) -> Tensor:
    """x / max(|x|, eps) along ``dim``, without overflow or underflow of |x|: with the
    (constant) scale s = max |x_i|, x / |x| = u / |u| for u = x / s, whose norm lies in
    [1, sqrt(n)]; the eps test uses |x| = s |u|. The clamp is not differentiated. An empty
    x is returned as is (nothing to scale; amax of an empty dim would raise): the caller's
    sum over an empty ``dim`` is 0, PyTorch's cosine."""
    if x.numel() == 0:
        return x
    return _unit_parts(x, dim, eps)[0]


def _unit_parts(x: Tensor, dim: int, eps: float) -> tuple:
    """(y, u, nu, small, den, s) of _unit_or_scaled for a non-empty x: y = x / max(|x|, eps)
    (x's shape), u = x / s, the keepdim row values nu = |u|, small = |x| < eps (bool) and
    the small rows' divisor den (value eps, |x|'s gradient), s = max |x_i| (constant)."""
    s = x.detach().abs().amax(dim, keepdim=True)
    s = where((s > 0) & (s < math.inf), s, 1.0)
    u = x / s
    nu = u.norm(2, dim, keepdim=True)
    small = (s * nu.detach()) < eps  # |x| < eps: divide x itself by eps
    # Each branch's divisor is 1 where the other branch is taken, so the branch not taken
    # has finite values and gradients (no 0 * inf in where's backward). The small branch
    # divides x (not u) by a divisor of value eps and |x|'s gradient (|x| = s |u| < eps
    # cannot overflow there): x / eps and its gradient g / eps stay normal numbers for a
    # tiny x (u / (eps / s) underflowed to 0 at |x| ~ 1e-200, and so did the gradient).
    nx = s * where(small, nu, 0.0)
    den = nx + where(small, eps - nx, 1.0 - nx).detach()  # (x's dtype: eps - nx)
    return where(small, x / den, u / where(small, 1.0, nu)), u, nu, small, den, s


_COSINE_NP = (dtypes.float32, dtypes.float64)


def _cosine_on_numpy(a: Tensor, b: Tensor, shape) -> bool:
    """Whether cosine_similarity runs as _CosineSimilarity: CPU tensors of one dtype,
    float32 or float64, and a non-empty broadcast shape (other devices: the composite)."""
    return (a.device.type == "cpu" and b.device.type == "cpu" and a.dtype is b.dtype
            and a.dtype in _COSINE_NP and math.prod(shape) > 0)


def _rows_along(x, dim: int, shape: tuple):
    """x's array, C-contiguous, with rows along ``dim`` of the broadcast ``shape``: x's dims
    padded on the left to len(shape), ``dim`` expanded to shape[dim] (the other dims keep
    x's sizes; they broadcast in the NumPy maths)."""
    a = x._data.reshape((1,) * (len(shape) - x.ndim) + tuple(x.shape))
    if a.shape[dim] != shape[dim]:
        a = np.broadcast_to(a, a.shape[:dim] + (shape[dim],) + a.shape[dim + 1:])
    return np.ascontiguousarray(a)


def _rows_back(d, x: Tensor) -> Tensor:
    """A gradient of the broadcast shape summed to x's shape, as a tensor on x's device."""
    from tgrad.backends._numpy_sum import float_sum
    pad = d.ndim - x.ndim
    padded = (1,) * pad + tuple(x.shape)
    axes = tuple(i for i, n in enumerate(padded) if n == 1 and d.shape[i] != 1)
    if axes:
        d = float_sum(d, axes, True, d.dtype)
    return wrap(np.ascontiguousarray(d.reshape(x.shape)), x.device)


class _CosineSimilarity(Function):
    """cos = sum over ``dim`` of (x1 / max(|x1|, eps)) (x2 / max(|x2|, eps)) for CPU
    float32 / float64 x1, x2 broadcasting to ``shape`` (non-empty): one node whose forward
    and backward run in NumPy (tgrad/backends/_numpy_dist.py: the composite's steps, the
    same values; backward, per row and g broadcast along dim, the clamp not differentiated:
        dx1 = g / D1 (y2 - cos x1 / |x1|)   (D1 = max(|x1|, eps); x1 / |x1| = 0 at x1 = 0)
        dx2 = g / D2 (y1 - cos x2 / |x2|)
    each summed to its input's shape). Under create_graph / forward AD the same formula in
    tgrad ops on _unit_parts' pieces, whose derivative is the composite's."""

    name = "_cosine_similarity"
    node_name = "SumBackward1"  # (the composite's, and PyTorch's, last node)

    @staticmethod
    def forward(ctx, x1, x2, dim, eps, shape):
        from tgrad.backends import _numpy_dist  # (CPU only: not a backend primitive)
        save = True in ctx.needs_input_grad[:2]
        cos, saved = _numpy_dist.cosine_fwd(_rows_along(x1, dim, shape),
                                            _rows_along(x2, dim, shape), eps, dim, save)
        if save:
            ctx.save_for_backward(x1, x2)
            ctx.np_saved = saved
        ctx.meta = (dim, eps, shape)
        return wrap(cos, x1.device)

    @staticmethod
    def backward(ctx, g):
        x1, x2 = ctx.saved_tensors
        dim, eps, shape = ctx.meta
        need1, need2 = ctx.needs_input_grad[:2]
        if differentiable_formula() or g.device.type != "cpu":
            d1, d2 = _cosine_grads_ops(x1, x2, g, dim, eps, shape, need1, need2)
            return d1, d2, None, None, None
        from tgrad.backends import _numpy_dist
        d1, d2 = _numpy_dist.cosine_bwd(g._data, ctx.np_saved, need1, need2)
        return (None if d1 is None else _rows_back(d1, x1),
                None if d2 is None else _rows_back(d2, x2), None, None, None)


def _cosine_grads_ops(x1, x2, g, dim: int, eps: float, shape, need1: bool, need2: bool):
    """_CosineSimilarity's backward in tgrad ops (differentiable again): per input, with
    (y, u, nu, small, den, s) of _unit_parts, x / |x| = y in the large rows, u / nu in the
    small ones (0 at nu = 0), dx = g (y_other - cos x / |x|) / nu / s (large rows) or
    / den (small rows: den's value is eps), summed to the input's shape."""
    from tgrad.ops.reduce import sum_to
    p1, p2 = _unit_parts(x1.expand(shape), dim, eps), _unit_parts(x2.expand(shape), dim, eps)
    cos = (p1[0] * p2[0]).sum(dim, keepdim=True)
    gk = g.unsqueeze(dim)
    out = []
    for need, x, p, q in ((need1, x1, p1, p2), (need2, x2, p2, p1)):
        if not need:
            out.append(None)
            continue
        y, u, nu, small, den, s = p
        zero = nu.detach() == 0
        hat = where(small, where(zero, 0.0, u / where(zero, 1.0, nu)), y)
        d = gk * (q[0] - cos * hat) / where(small, den, nu) / where(small, 1.0, s)
        out.append(sum_to(d, x.shape))
    return out[0], out[1]


@autocast_policy("fp32", cpu=None)
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,  # noqa: A002
              out=None) -> Tensor:
    """input / max(||input||_p, eps) along ``dim`` (complex input: its real norm, as
    PyTorch's)."""
    if not (isinstance(input, Tensor) and input.dtype.is_complex):
        _check_float("normalize", input)
    if out is None and _normalize_on_numpy(input, p):  # one node, NumPy forward and backward
        return _NormalizeCpu.apply(input, float(p), _wrap_dim(dim, input.ndim, "normalize"),
                                   float(eps))
    denom = clamp(input.norm(p, dim, keepdim=True), min=eps)
    if out is not None:  # PyTorch's torch.div(input, denom, out=out): out='s rules, no grad
        import tgrad
        return tgrad.div(input, denom.expand_as(input), out=out)
    return input / denom


def _normalize_on_numpy(x: Tensor, p) -> bool:
    """Whether normalize runs as _NormalizeCpu: p = 1 or 2, a CPU float32/float64 x, at
    least 1-d, C-contiguous and non-empty, and no forward-AD level (its tangents need the
    composition's nodes)."""
    from tgrad.backends import _numpy_norms
    xa = x._data
    return (type(p) in (int, float) and p in (1, 2) and x._device.type == "cpu"
            and _numpy_norms.fast_dtype(xa.dtype) and xa.ndim > 0 and xa.size > 0
            and xa.flags.c_contiguous
            and not (_function._FW_ACTIVE and STATE.fw_level is not None))


class _NormalizeCpu(Function):
    """F.normalize on the CPU arrays (_numpy_norms.normalize_fwd / _bwd: the composition's
    steps, the same bits): y = x / max(||x||_p over dim, eps). One node named as the
    composition's last (PyTorch's DivBackward0). Under create_graph the backward is the
    composition rebuilt from x in tgrad ops (differentiable again)."""

    name = "normalize"
    node_name = "DivBackward0"

    @staticmethod
    def forward(ctx, x, p, dim, eps):
        from tgrad.backends import _numpy_norms
        y, n, d = _numpy_norms.normalize_fwd(x._data, p, dim, eps)
        ctx.p, ctx.dim, ctx.eps, ctx.n, ctx.d = p, dim, eps, n, d
        ctx.save_for_backward(x)
        return wrap(y, x.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if differentiable_formula() or g.dtype is not x.dtype or g.device.type != "cpu":
            from tgrad.ops.elementwise import _DIV_B, _GT_MASK
            from tgrad.ops.reduce import _norm_grad, sum_to
            n = x.norm(ctx.p, ctx.dim, keepdim=True)
            d = clamp(n, min=ctx.eps)
            q = g / d
            gd = sum_to(_DIV_B(q, x, d), d.shape)
            gn = _GT_MASK(gd, n, float(x.dtype.np.type(ctx.eps)))
            gx = _norm_grad(gn.expand(x.shape), x, n.expand(x.shape), ctx.p)  # Norm's rule
            return q + gx, None, None, None
        from tgrad.backends import _numpy_norms
        dx = _numpy_norms.normalize_bwd(np.ascontiguousarray(g._data), x._data, ctx.n,
                                        ctx.d, ctx.p, ctx.dim, ctx.eps)
        return wrap(dx, x.device), None, None, None


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:  # noqa: A002
    """int64 tensor of shape (*input.shape, num_classes) with a 1 at each class index
    (num_classes = -1: one more than the largest index)."""
    _check_tensor("one_hot", input, "input")
    num_classes = _int_arg("one_hot", "num_classes", num_classes, 2)
    if input.dtype is not dtypes.int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor, "
                           f"got {input.dtype.name}")
    cpu = input._device.type == "cpu"
    if input.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        lo = hi = 0
    elif cpu:
        lo, hi = int(input._data.min()), int(input._data.max())
    else:
        lo, hi = int(input.min()), int(input.max())
    if lo < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    if cpu:  # one scatter of ones (the composition's values, C-contiguous)
        return wrap(_np_layout.one_hot(input._data, num_classes), input._device)
    classes = arange(num_classes, device=input.device)
    return (input.unsqueeze(-1) == classes).long()


class _ScaleGrad(Function):
    """y = x (an alias);  dx = g * scale, scale a constant tensor broadcast against g
    (embedding's scale_grad_by_freq: 1 / the count of each position's index), so
    d(dx)/dg = scale and the backward differentiates again."""

    name = "embedding_scale_grad_by_freq"
    node_name = "EmbeddingScaleGradByFreqBackward0"

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.scale, None


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float,  # noqa: A002
                       norm_type: float) -> None:
    """PyTorch's embedding_renorm_, under no_grad: each row of ``weight`` that ``input``
    references and whose norm_type-norm exceeds max_norm is scaled in place by
    max_norm / (norm + 1e-7); rows not referenced (or with norm <= max_norm) are left alone.
    As PyTorch, the norm is taken in the weight's dtype and the scale in float64, and the
    row is multiplied by it in the weight's dtype (float32 for float16/bfloat16, rounded
    once). A repeated index writes the same row twice. Not differentiated (neither
    backward nor forward AD sees the scale)."""
    from tgrad.autograd.grad_mode import no_grad
    # through a detached alias: the write bypasses forward AD too (PyTorch's renorm is not
    # differentiated, so weight's tangent stays as given: jvp = tweight[input], the
    # transpose of the backward's scatter)
    with no_grad():
        weight = weight.detach()
        idx = input.reshape(-1)
        # (k, embedding_dim), embedding's lookup (negatives out of range); on cuda its
        # check is read before the write (which would wrap a negative index), at a
        # synchronization, as PyTorch's renorm synchronizes
        rows = _Embedding.apply(weight, (idx, None, False))
        if idx.device.type == "cuda":
            from tgrad import cuda
            cuda.synchronize(idx.device)
        norm = rows.norm(norm_type, dim=-1, keepdim=True).to(dtypes.float64)
        scale = where(norm > max_norm, max_norm / (norm + 1e-7), 1.0)
        compute = dtypes.float32 if weight.dtype in (dtypes.float16, dtypes.bfloat16) \
            else weight.dtype
        weight[idx] = (rows.to(compute) * scale.to(compute)).to(weight.dtype)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,  # noqa: A002
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows ``weight[input]`` (shape (*input.shape, embedding_dim)); the ``padding_idx`` row
    gets no gradient.  dweight[i] = sum of the output gradients where input == i, divided
    by the number of times i occurs in ``input`` when ``scale_grad_by_freq``.
    ``max_norm``: first, under no_grad, each referenced row whose norm_type-norm exceeds
    max_norm is scaled IN PLACE in ``weight`` by max_norm / (norm + 1e-7) (PyTorch's
    embedding_renorm_; the padding row too), then looked up. ``sparse=True``: dweight is a
    sparse COO tensor (tgrad.sparse.sparse_embedding; a dense one when weight is not a
    leaf, where PyTorch's stays sparse)."""
    _check_tensor("embedding", input)
    if input.dtype not in (dtypes.int64, dtypes.int32):  # PyTorch: uint8 and int16 raise too
        raise RuntimeError(f"embedding: expected an integer index tensor (Long or Int), got "
                           f"{input.dtype.name}")
    _check_tensor("embedding", weight, "weight")
    if weight.ndim != 2:  # [num_embeddings, embedding_dim]
        raise RuntimeError(f"'weight' must be 2-D (embedding: got a weight of shape "
                           f"{list(weight.shape)}; it is [num_embeddings, embedding_dim])")
    # a negative index is out of range (weight[input] alone would count from the end): on
    # cuda the lookup's gather kernel rejects it (no host sync; raised at the next one)
    low = int(input._data.min()) if input.device.type == "cpu" and input.numel() else 0
    if low < 0:  # (the CPU array's own min: no reduction node's work)
        raise IndexError(f"embedding: index out of range in self (index "
                         f"{low} of a weight with {weight.shape[0]} rows)")
    if padding_idx is not None:
        padding_idx = _int_arg("embedding", "padding_idx", padding_idx, 3)
        if not -weight.shape[0] <= padding_idx < weight.shape[0]:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= weight.shape[0]
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse:
        from tgrad.sparse import sparse_embedding
        return sparse_embedding(weight, input, padding_idx, scale_grad_by_freq)
    return _Embedding.apply(weight, (input, padding_idx, scale_grad_by_freq))


class _Embedding(Function):
    """y = weight[input]: rows of weight (num, dim), y (*input.shape, dim), a copy (a 0-d
    input gives one row, (dim,)). One node, PyTorch's EmbeddingBackward0 (edge: weight).
        dweight = zeros(num, dim); dweight[input[p]] += c_p g[p] over positions p, with
        c_p = 0 where input[p] == padding_idx, else 1 / (the count of input[p] in input)
        with scale_grad_by_freq, else 1
    (an index_put with accumulation, differentiable in g: its double backward reads
    g's gradient back at input). Saves nothing but the key (input's array); the counts of
    scale_grad_by_freq, when weight requires grad."""

    name = "embedding"
    node_name = "EmbeddingBackward0"
    keeps_indices = True
    saved_attributes = {"_saved_indices": lambda node: node.indices,
                        "_saved_padding_idx": lambda node: -1 if node.padding_idx is None
                        else node.padding_idx,
                        "_saved_scale_grad_by_freq": lambda node: node.scale is not None,
                        "_saved_sparse": lambda node: False,
                        "_saved_weight_sym_argsize_0": lambda node: node.shape[0]}

    @staticmethod
    def forward(ctx, weight, spec):
        # spec: (input, padding_idx, scale_grad_by_freq), one argument that is no tensor
        # (the node's only edge is weight's, PyTorch's; and fewer arguments to record)
        input, padding_idx, scale_grad_by_freq = spec  # noqa: A001
        # (a 0-d index would be basic indexing, a view of weight: looked up as one of (1,))
        flat = input if input.ndim else input.reshape(1)
        key = normalize_key(flat, weight.device, 2)[0]
        # (on cuda negatives are out of range in the kernel; on the CPU embedding checked)
        arr = _index_fwd(ctx, weight, key, "gather",
                         **({} if weight.device.type == "cpu" else {"wrap_negative": False}))
        if not input.ndim:  # (1, dim) -> (dim,): a view of the fresh result
            arr = backend_of(weight).reshape_view(arr, weight.shape[1:])
        ctx.indices, ctx.padding_idx, ctx.scale = input, padding_idx, None
        if scale_grad_by_freq and ctx.needs_input_grad[0]:
            # each position's gradient / the count of its index in the whole input
            from tgrad.ops.searching import bincount
            counts = bincount(flat.reshape(-1), minlength=weight.shape[0])[flat]
            ctx.scale = (1.0 / counts.to(weight.dtype)).unsqueeze(-1)
        return wrap(arr, weight.device)

    @staticmethod
    def backward(ctx, g):
        idx = ctx.indices
        if not idx.ndim:
            g, idx = g.unsqueeze(0), idx.reshape(1)
        if ctx.scale is not None:  # (under create_graph its derivative in g leaves the
            # scale out, as PyTorch's embedding_dense_double_backward)
            g = _UnscaledInBackward.apply(g, ctx.scale) if differentiable_formula() else \
                g * ctx.scale
        if ctx.padding_idx is not None and (differentiable_formula()
                                            or g.device.type != "cpu"):
            g = where((idx != ctx.padding_idx).unsqueeze(-1), g, 0.0)  # no gradient to it
        gw = IndexAdd.apply(g, ctx.key, ctx.shape)
        if ctx.padding_idx is not None and g.device.type == "cpu" \
                and not differentiable_formula():
            # the pad row's sum zeroed after the scatter (gw a fresh array): where's zeroed
            # terms summed to +0.0 there and left every other row's terms as they are, so
            # the same bits without the pass over g (541 -> 390 us f+b on (32, 128) x 64)
            gw._data[ctx.padding_idx] = 0
        return gw, None


class _UnscaledInBackward(Function):
    """y = g * scale (embedding's scale_grad_by_freq);  dg = gy: the derivative of the
    scaled gradient in g is the plain gather, as PyTorch's embedding double backward (the
    scale is part of the gradient's definition, not of the map g -> dweight)."""

    @staticmethod
    def forward(ctx, g, scale):
        return g * scale

    @staticmethod
    def backward(ctx, gy):
        return gy, None


def pad(input: Tensor, pad: tuple, mode: str = "constant",  # noqa: A002
        value: float | None = None) -> Tensor:
    """Pad (or, with negative sizes, crop) the last len(pad) // 2 dims: ``pad`` is
    (left, right) of the last dim, then of the one before, ...; ``mode`` 'constant' (fill
    with ``value``), or 'reflect' / 'replicate' / 'circular' (tgrad/nn/_pad.py: len(pad) 2,
    4 or 6 on an input with one or two more dims, as PyTorch).
    dx = the gradient of the copied region (summed over the copies of a border)."""
    from tgrad.nn._pad import MODES, pad_nonconstant
    _check_tensor("pad", input)
    if mode != "constant" and mode not in MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pad = list(pad)
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(p).__name__} at pos {i}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.ndim}")
    if isinstance(value, (complex, np.complexfloating)):  # (PyTorch's, complex inputs too)
        raise TypeError("pad(): argument 'value' (position 4) must be float, not complex")
    if mode != "constant":
        return pad_nonconstant(input, [int(p) for p in pad], mode, value)
    pad = tuple(int(p) for p in pad)
    return ConstantPad.apply(input, (pad, 0 if value is None else value,
                                     _constant_pad_geometry(input.shape, pad)))  # (checked)


def _constant_pad_geometry(in_shape, pad: tuple) -> tuple:
    """(output shape, source slices of the input, destination slices of the output) of a
    constant pad by ``pad`` (negative sizes crop)."""
    ndim = len(in_shape)
    shape, src, dst = list(in_shape), [slice(None)] * ndim, [slice(None)] * ndim
    for i in range(len(pad) // 2):
        d = ndim - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        n = shape[d] + left + right
        if n < 0 or -left > shape[d] or -right > shape[d]:  # crops past the other end
            raise RuntimeError(f"pad: narrow(): length must be non-negative: dim {d} of size "
                               f"{shape[d]} cannot be cropped by pads ({left}, {right})")
        src[d] = slice(max(-left, 0), shape[d] - max(-right, 0))
        dst[d] = slice(max(left, 0), n - max(right, 0))
        shape[d] = n
    return shape, tuple(src), tuple(dst)


class ConstantPad(Function):
    """y = x padded (negative sizes: cropped) by ``spec`` = (pad, value, the pad's
    ``_constant_pad_geometry``): a ``value``-filled tensor of the padded shape with x's kept
    region copied in. One node, PyTorch's
    ConstantPadNdBackward0 (_saved_pad). Linear in x: dx = g padded by the negated pads
    with 0 (its region cropped out, what x lost to a crop zero), the same op, so the
    backward differentiates again."""

    name = "constant_pad_nd"
    node_name = "ConstantPadNdBackward0"
    saved_attributes = {"_saved_pad": lambda node: list(node.spec[0])}

    @staticmethod
    def forward(ctx, x, spec):
        ctx.spec = spec
        return _constant_pad_copy(x, spec[1], spec[2])

    @staticmethod
    def backward(ctx, g):
        back = tuple(-p for p in ctx.spec[0])
        geometry = _constant_pad_geometry(g.shape, back)
        if not differentiable_formula() and _fast_constant_pad(g):  # the same copy, no node
            shape, src, dst = geometry
            if all(s in (slice(None), slice(0, n)) for s, n in zip(dst, shape)):  # a crop only
                return wrap(np.array(g._data[src], order="C"), g.device), None
            return _constant_pad_copy(g, 0, geometry), None
        return ConstantPad.apply(g, (back, 0, geometry)), None


def _fast_constant_pad(t: Tensor) -> bool:
    """Whether constant padding copies ``t``'s arrays in NumPy: on the CPU."""
    return t.device.type == "cpu"


def _constant_pad_copy(x: Tensor, value, geometry: tuple) -> Tensor:
    """A ``value``-filled tensor of the padded shape with x's kept region copied in
    (``geometry``: _constant_pad_geometry's); on the CPU the copy is one NumPy slice
    assignment on the arrays (the same bits, without a tgrad op)."""
    shape, src, dst = geometry
    out = full(shape, value, dtype=x.dtype, device=x.device)
    if _fast_constant_pad(x):
        out._data[dst] = x._data[src]
    else:
        out[dst] = x[src]
    return out



# the C++ type names PyTorch's bilinear error prints
_CPP_TYPE_NAMES = {dtypes.bool_: "bool", dtypes.int32: "int", dtypes.int64: "long int",
                   dtypes.float16: "c10::Half", dtypes.bfloat16: "c10::BFloat16",
                   dtypes.float32: "float", dtypes.float64: "double"}


@autocast_policy("promote", cpu=None)
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor,
             bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]:
    input1 (..., in1) and input2 (..., in2) of one batch shape, weight (out, in1, in2),
    bias (out,). One matmul of input1 with weight laid out (in1, out * in2), then a product
    with input2 summed over in2 (float16/bfloat16 in float32, rounded once); the gradients are
    those of these two steps."""
    for name, t in (("input1", input1), ("input2", input2), ("weight", weight)):
        _check_tensor("bilinear", t, name)
    if input1.ndim == 0 or input2.ndim == 0 or weight.ndim != 3:
        raise RuntimeError(f"bilinear(): expected inputs with a feature dim and a 3-D weight, "
                           f"got input1 {list(input1.shape)}, input2 {list(input2.shape)}, "
                           f"weight {list(weight.shape)}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    out, in1, in2 = weight.shape
    if input1.shape[-1] != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {in1}")
    if input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {in2}")
    named = [("input1", input1), ("input2", input2), ("weight", weight)]
    named += [] if bias is None else [("bias", bias)]
    if len({t.dtype for _, t in named}) > 1:
        raise RuntimeError("All tensors must have the same dtype, got " + ", ".join(
            f"{name}: {_CPP_TYPE_NAMES.get(t.dtype, t.dtype.name)}" for name, t in named))
    if bias is not None and tuple(bias.shape) != (out,):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{out}]")
    (x1, x2, w, b), half = widen_halves(input1, input2, weight, bias)  # halves: float32
    mixed = x1 @ w.permute(1, 0, 2).reshape(in1, out * in2)  # (..., out * in2)
    # (sum keeps an integer dtype: PyTorch's bilinear of int32 is int32)
    y = (mixed.reshape(*x1.shape[:-1], out, in2) * x2.unsqueeze(-2)).sum(
        -1, dtype=None if x1.dtype.is_floating_point else x1.dtype)
    return rounded_to(y if b is None else y + b, half)
