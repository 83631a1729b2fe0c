"""batch_norm, group_norm, instance_norm and rms_norm as compositions of tgrad ops,
re-exported by tgrad.nn.functional.

Shapes (PyTorch's): input (N, C, *) with channels on dim 1; weight and bias (C,).
Normalising with batch or group statistics reuses the fused ``layer_norm`` op (one kernel
each way on the GPU, biased variance, its own exact backward): the values to normalise
together are laid out as the rows of a layer_norm, and the per-channel affine follows as
one broadcast multiply-add. Running statistics are updated in place outside the graph with
the unbiased variance, as PyTorch does.
"""

from __future__ import annotations

import math

import ml_dtypes

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.functional import _check_float, _check_tensor
from tgrad.ops._common import fresh, rounded_to, widen_halves
from tgrad.tensor import Tensor, _int_arg

__all__ = ["batch_norm", "group_norm", "instance_norm", "rms_norm"]


def _layer_norm(x: Tensor, k: int, eps: float) -> Tensor:
    from tgrad.nn.functional import layer_norm
    return layer_norm(x, x.shape[x.ndim - k:], None, None, eps)


def _widened(x: Tensor) -> Tensor:
    """float16/bfloat16 inputs are normalised in float32 and rounded once at the end."""
    return x.float() if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


def _affine(y: Tensor, weight, bias) -> Tensor:
    """y * weight + bias with (C,) parameters broadcast along dim 1 of y (N, C, *), in y's
    dtype (float32 for a widened half input: the caller rounds once). y is the norm's own
    temporary (often a reshape or movedim of one): without parameters it is returned as a
    new tensor (PyTorch's), not a view."""
    shape = (y.shape[1],) + (1,) * (y.ndim - 2)
    if weight is not None:
        y = y * weight.to(y.dtype).reshape(shape)
    if bias is not None:
        y = y + bias.to(y.dtype).reshape(shape)
    return fresh(y)


def _check_params(op: str, x: Tensor, c: int, **params) -> None:
    for name, p in params.items():
        if p is None:
            continue
        _check_tensor(op, p, name)
        if p.numel() != c:
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
    _check_param_dtypes("batch_norm", input, weight=weight, bias=bias,
                        running_mean=running_mean, running_var=running_var)
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
    if training:
        count = input.numel() // max(c, 1)
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {list(input.shape)}")
        if not eps > 0.0:  # PyTorch 2.13: the batch's variance may be 0
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
        # Rows = channels: (C, N * spatial), normalised by the fused layer_norm.
        x = _widened(input)
        rows = x.movedim(1, 0).reshape(c, -1)
        y = _layer_norm(rows, 1, eps).reshape((c, input.shape[0]) + tuple(input.shape[2:]))
        y = y.movedim(0, 1).contiguous()  # C-contiguous, as PyTorch's (y.view(-1) works)
        if (running_mean is not None or running_var is not None) and count:
            _update_running(rows, running_mean, running_var, momentum)
        return _affine(y, weight, bias).to(input.dtype)
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be "
                           f"defined in evaluation mode")
    # y = (x - mean) / sqrt(var + eps) * weight + bias, in float32 for a float16/bfloat16
    # input (rounded once), in the input's dtype otherwise
    shape = (c,) + (1,) * (input.ndim - 2)
    x = _widened(input)
    mean, var = running_mean.to(x.dtype), running_var.to(x.dtype)
    y = (x - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    return _affine(y, weight, bias).to(input.dtype)


def _update_running(x: Tensor, running_mean, running_var, momentum) -> None:
    """Blend into the running statistics, in place and outside the graph, the statistics
    of x (C, *, count): the mean and unbiased variance over the last dim, averaged over the
    middle dims (instance norm's per-instance statistics); r = (1 - m) r + m s. Momentum
    None is PyTorch's cumulative average (the caller passes 1 / num_batches_tracked)."""
    m = 0.0 if momentum is None else float(momentum)
    middle = tuple(range(1, x.ndim - 1))
    with no_grad():
        x = x.detach()
        for running, stat in ((running_mean, Tensor.mean), (running_var, _unbiased_var)):
            if running is not None:
                s = stat(x, -1)
                if middle:
                    s = s.mean(middle)
                running.mul_(1.0 - m).add_(s.to(running.dtype) * m)


def _unbiased_var(x: Tensor, dim: int) -> Tensor:
    return x.var(dim, correction=1)


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
    y = _layer_norm(_widened(input).reshape(n, g, per_group), 1, eps).reshape(input.shape)
    return _affine(y, weight, bias).to(input.dtype)


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
    if not use_input_stats:
        return _batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    spatial = math.prod(input.shape[2:])
    if spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    rows = _widened(input).reshape(n * c, spatial)
    y = _layer_norm(rows, 1, eps).reshape(input.shape)
    if (running_mean is not None or running_var is not None) and n * spatial:
        # PyTorch averages the per-instance statistics over the batch.
        _update_running(rows.reshape(n, c, spatial).movedim(1, 0), running_mean, running_var,
                        momentum)
    return _affine(y, weight, bias).to(input.dtype)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> Tensor:
    """y = x / sqrt(mean(x^2 over the trailing normalized_shape dims) + eps) * weight;
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
    (x, w), half = widen_halves(input, weight)
    dims = tuple(range(x.ndim - k, x.ndim))
    y = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    if w is not None:
        y = y * w
    return rounded_to(y, half)
