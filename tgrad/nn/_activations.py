"""More activations composed of tgrad ops, re-exported by tgrad.nn.functional:
hardswish, hardsigmoid, softsign, tanhshrink, softshrink, hardshrink, celu, threshold,
prelu. Written so values and gradients match PyTorch's dedicated kernels at the kinks
(the derivative PyTorch's backward gives there is noted per op) and no branch a ``where``
does not take holds an inf whose zero gradient would become NaN.
"""

from __future__ import annotations

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_act as _np_act
from tgrad.nn._composite import (
    Celu,
    Hardsigmoid,
    Threshold,
    _check_float,
    _int_scalars,
    _np_fast,
    _Piecewise,
    _rounded_once,
)
from tgrad.nn._piecewise import _Attach
from tgrad.nn.functional import _check_tensor
from tgrad.ops._common import rounded_to, widen_halves, wrap
from tgrad.ops.elementwise import clamp, tanh, where
from tgrad.ops.inplace import apply_inplace
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor

__all__ = ["hardswish", "hardsigmoid", "softsign", "tanhshrink", "softshrink", "hardshrink",
           "celu", "threshold", "prelu"]


class Hardswish(Function):
    """y = x relu6(x + 3) / 6 (NaN at -inf, as PyTorch's kernel);
    dx = 0 for x <= -3, g (x / 3 + 1/2) strictly between, else g (x >= 3, and NaN as in
    PyTorch's hardswish_backward). Both are tgrad ops, so the backward differentiates
    again."""

    name = "hardswish"
    node_name = "HardswishBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _np_fast(x):  # the same steps on the arrays (_numpy_act)
            return wrap(_np_act.hardswish(x._data), x.device)
        return x * clamp(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if not differentiable_formula() and _np_fast(g) and g.dtype is x.dtype:
            return wrap(_np_act.hardswish_grad(x._data, g._data), g.device)
        middle = (x > -3.0) & (x < 3.0)
        return where(middle, g * (x / 3.0 + 0.5), where(x <= -3.0, 0.0, g))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """x relu6(x + 3) / 6 (see Hardswish for the gradient)."""
    _check_float("hardswish", input)
    fn = _rounded_once(Hardswish.apply)
    return apply_inplace(input, "hardswish_", fn) if inplace else fn(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(x + 3) / 6;  dx = g / 6 strictly inside (-3, 3), else 0."""
    _check_float("hardsigmoid", input)
    fn = _rounded_once(Hardsigmoid.apply)
    return apply_inplace(input, "hardsigmoid_", fn) if inplace else fn(input)


def _int_ok(op: str, input: Tensor, kernel: str) -> bool:  # noqa: A002
    """True for an integer input (PyTorch's composites take it: the division / tanh give
    the default float dtype); bool raises PyTorch's error of the op that refuses it."""
    _check_tensor(op, input)
    if input.dtype is dtypes.bool_:
        if kernel == "abs":
            raise NotImplementedError(f"{op}: \"abs_cpu\" not implemented for 'Bool'")
        raise RuntimeError(f"{op}: Subtraction, the `-` operator, with a bool tensor is not "
                           f"supported. If you are trying to invert a mask, use the `~` or "
                           f"`logical_not()` operator instead.")
    return not input.dtype.is_floating_point


def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """x / (1 + |x|) (PyTorch's composite, NaN at +-inf included); an integer x gives the
    default float dtype (|x| + 1 in x's dtype, then a true division, as PyTorch)."""
    if _int_ok("softsign", input, "abs"):
        return input / (input.abs() + 1)
    return _rounded_once(lambda x: x / (x.abs() + 1.0))(input)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """x - tanh(x); an integer x gives the default float dtype (as PyTorch)."""
    if _int_ok("tanhshrink", input, "sub"):
        return input - tanh(input)
    return _rounded_once(lambda x: x - tanh(x))(input)


def _check_lambd(op: str, lambd: float) -> None:
    if lambd < 0:
        raise RuntimeError(f"{op}: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}.")


class Softshrink(_Piecewise):
    """y = x - l for x > l, x + l for x < -l, else 0 (NaN stays NaN);
    dx = g outside [-l, l], else exactly 0 (also for an infinite g), as PyTorch's
    softshrink_backward; NaN: 0 (PyTorch's vectorized loop; its scalar tail gives g)."""

    name = "softshrink"
    node_name = "SoftshrinkBackward0"
    np_value = staticmethod(_np_act.softshrink)
    np_grad = staticmethod(_np_act.shrink_grad)

    @staticmethod
    def value(x: Tensor, lambd: float) -> Tensor:
        # float16/bfloat16: compared and shifted in float32, rounded once (PyTorch's opmath:
        # a bfloat16 0.30078 > 0.3 gives 7.8e-4, not 0)
        (x,), half = widen_halves(x)
        y = where(x > lambd, x - lambd, where(x < -lambd, x + lambd, where(x == x, 0.0, x)))
        return rounded_to(y, half)

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, lambd: float) -> Tensor:
        return where((x < -lambd) | (x > lambd), g, 0.0)


class Hardshrink(_Piecewise):
    """y = x outside [-l, l], NaN for NaN, else 0;  dx = g outside [-l, l], else 0 (NaN
    too), as PyTorch's hardshrink_backward."""

    name = "hardshrink"
    node_name = "HardshrinkBackward0"
    np_value = staticmethod(_np_act.hardshrink)
    np_grad = staticmethod(_np_act.shrink_grad)

    @staticmethod
    def value(x: Tensor, lambd: float) -> Tensor:
        return where((x < -lambd) | (x > lambd), x, where(x == x, 0.0, x))

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, lambd: float) -> Tensor:
        return where((x < -lambd) | (x > lambd), g, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x - l for x > l, x + l for x < -l, else 0: one node (SoftshrinkBackward0), dx in x's
    graph (_piecewise._Attach: d(dx)/dx = 0)."""
    _check_float("softshrink", input)
    _check_lambd("softshrink", lambd)
    return Softshrink.apply(input, lambd)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x outside [-l, l], NaN for NaN, else 0: one node (HardshrinkBackward0)."""
    _check_float("hardshrink", input)
    return Hardshrink.apply(input, lambd)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """x for x > 0, else alpha (e^(x / alpha) - 1);  dx = g or e^(x / alpha) g (1 at 0):
    PyTorch's elu with input_scale 1 / alpha (the Elu Function of _composite.py)."""
    _check_float("celu", input)
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")  # PyTorch's text
    fn = _rounded_once(lambda x: Celu.apply(x, alpha, 1.0 / alpha))
    return apply_inplace(input, "celu_", fn) if inplace else fn(input)


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """value where x <= threshold, else x (NaN passes);  dx = g where x > threshold or NaN,
    in x's graph (tie: d(dx)/dx = 0). Integer inputs stay integer, threshold and value
    truncated to the dtype as PyTorch's."""
    _check_tensor("threshold", input)
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    dtypes.refuse_float8("threshold_cpu", input.dtype)
    if not input.dtype.is_floating_point:
        th, v = _int_scalars("threshold", input.dtype, threshold, value)
        fn = lambda x: where(x <= th, v, x)  # noqa: E731
    else:
        fn = lambda x: Threshold.apply(x, threshold, value)  # noqa: E731
    return apply_inplace(input, "threshold_", fn) if inplace else fn(input)


@autocast_policy("lower")
def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """x for x > 0, else w x, with w of one element or one per channel (dim 1);
    dx = g or w g (w at 0), dw = sum of g x over x <= 0."""
    _check_float("prelu", input)
    if not isinstance(weight, Tensor):
        raise TypeError(f"prelu(): argument 'weight' must be Tensor, not "
                        f"{type(weight).__name__}")
    if weight.dtype is not input.dtype:  # PyTorch promotes neither way
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{dtypes.SCALAR_TYPE_NAMES.get(input.dtype, input.dtype.name)} and "
                           f"{dtypes.SCALAR_TYPE_NAMES.get(weight.dtype, weight.dtype.name)}")
    channels = input.shape[1] if input.ndim >= 2 else 1
    n = weight.numel()
    if input.ndim == 0 and n != 1:  # a 0-d input takes a one-element weight only
        raise RuntimeError("prelu: Not allow zero-dim input tensor.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if n not in (1, channels):
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {n} and channel size = {channels}.")
    w = weight.reshape(()) if n == 1 else weight.reshape((n,) + (1,) * (input.ndim - 2))
    return PreluKernel.apply(input, w)


def _np_prelu(x: Tensor, w: Tensor) -> bool:
    """Whether prelu's x (C-contiguous: the composition's layouts) and w are CPU
    float32/float64 of one dtype, whose node may run _numpy_act's steps (the same bits)."""
    return _np_fast(x) and w._device.type == "cpu" and w.dtype is x.dtype \
        and x._data.flags.c_contiguous


class PreluKernel(Function):
    """y = x where x > 0, else w x; w () or (C, 1, ..., 1) broadcasting over x (N, C, ...).
    One node, PyTorch's PreluKernelBackward0 (edges: input, the reshaped weight).
    dx = g where x > 0, else w g (w at 0 too, as PyTorch);  dw = sum of g x where x <= 0,
    summed to w's shape. Both are where / mul / sum of g, x and w, so the backward
    differentiates again (d(dx)/dw = g where x <= 0, d(dw)/dx = g there); dx is attached to
    x's graph (_piecewise._Attach) so that a constant w and g still give x the zero second
    derivative PyTorch gives, not an error. On the CPU (float32/float64, x C-contiguous)
    the forward, and the backward when no graph is recorded (``differentiable_formula``),
    run the same steps on the arrays (_numpy_act.prelu / prelu_grads: the same bits)."""

    name = "prelu"
    node_name = "PreluKernelBackward0"
    saved_attributes = {"_saved_self": 0, "_saved_weight": 1}

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        if _np_prelu(x, w):  # the same steps on the arrays (_numpy_act)
            return wrap(_np_act.prelu(x._data, w._data), x.device)
        return where(x > 0, x, w * x)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need_x, need_w = ctx.needs_input_grad
        if not differentiable_formula() and _np_prelu(x, w) and _np_fast(g) \
                and g.dtype is x.dtype and g.shape == x.shape \
                and (g._data.flags.c_contiguous or not any(g._data.strides)):
            # (g C-contiguous, or one value expanded, as sum's backward gives: the products
            # with it are C-contiguous, as the composition's, so dw sums in the same order)
            gx, gxw = _np_act.prelu_grads(x._data, w._data, g._data, need_x, need_w)
            return (wrap(gx, g.device) if need_x else None,
                    sum_to(wrap(gxw, g.device), w.shape) if need_w else None)
        pos = x > 0
        gx = gw = None
        if need_x:
            gx = _Attach.apply(where(pos, g, w * g), x)
        if need_w:
            gw = sum_to(where(pos, 0.0, g * x), w.shape)
            if gw.dtype is not w.dtype:
                gw = gw.to(w.dtype)
        return gx, gw
