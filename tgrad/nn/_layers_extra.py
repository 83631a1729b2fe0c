"""More nn.functional layers, composed of tgrad ops (so their gradients, double backward and
GPU paths are those of their parts), with PyTorch's formulas and signatures:

- ``lp_pool1d/2d/3d``: (sum over the window of x^p)^(1/p), as PyTorch computes it: the window
  mean of x^p (avg_pool), times the window size, its negative values clamped to 0, to 1/p.
  p = inf is the window's max of |x| (max_pool of |x|: dx = g sign(x) at the first maximum),
  p = -inf its min of |x| (-max_pool of -|x|), as PyTorch.
- ``local_response_norm(x, size, alpha, beta, k)``: x / (k + alpha * mean of x^2 over the
  ``size`` channels around each one (zero padded: size // 2 before, (size - 1) // 2
  after))^beta; the channel windows are ``Tensor.unfold`` views.
- ``rrelu(x, lower, upper, training)``: x for x >= 0, a x below, with a ~ U(lower, upper)
  drawn per element in training (tgrad's generator) and (lower + upper) / 2 otherwise;
  dx = g * slope.
- ``alpha_dropout`` / ``feature_alpha_dropout``: SELU-preserving dropout. With keep mask m
  ~ Bernoulli(1 - p) (per element, or per channel for the feature form), alpha = 1.7580993..
  and a = ((alpha^2 p + 1)(1 - p))^(-1/2): y = a m x + a alpha (m - 1 + p), i.e. kept:
  a x + a alpha p; dropped: -a alpha (1 - p); dx = g a m. p = 1 gives zeros, as PyTorch.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad.nn._composite import LeakyRelu, _Piecewise
from tgrad.nn._dropout import _channel_shape, _check_p
from tgrad.nn.functional import _check_float, _check_tensor, dropout
from tgrad.ops import elementwise as ew
from tgrad.ops.inplace import apply_inplace
from tgrad.tensor import Tensor

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "local_response_norm", "rrelu", "rrelu_",
           "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA_SCALE = 1.7580993408473766  # selu's alpha * scale: its negative saturation


def _lp_pool(op: str, input: Tensor, norm_type: float, kernel_size, stride,  # noqa: A002
             ceil_mode: bool, spatial: int) -> Tensor:
    from tgrad.nn import functional as F
    # no dtype check of its own: an integer or bool input runs PyTorch's composition (x^p in
    # pow's dtype, avg_pool's int64 kernel, the final ^(1/p) a float), so int64/bool give a
    # float result and int32/uint8 its avg_pool's NotImplementedError, as PyTorch
    _check_tensor(op, input)
    if norm_type in (math.inf, -math.inf):  # the limits, as PyTorch: max (min) of |x|
        max_pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial]
        if norm_type > 0:
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[spatial]
    window = math.prod(kernel_size) if isinstance(kernel_size, (tuple, list)) \
        else kernel_size ** spatial
    out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (ew.sign(out) * ew.relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over kh x kw windows: (sum of x^p)^(1/p) (p = inf: max of
    |x|)."""
    return _lp_pool("lp_pool2d", input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over kd x kh x kw windows: (sum of x^p)^(1/p) (p = inf: max
    of |x|)."""
    return _lp_pool("lp_pool3d", input, norm_type, kernel_size, stride, ceil_mode, 3)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling over windows of the last dim: (sum of x^p)^(1/p) (p = inf: max
    of |x|)."""
    return _lp_pool("lp_pool1d", input, norm_type, kernel_size, stride, ceil_mode, 1)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4,  # noqa: A002
                        beta: float = 0.75, k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean over ``size`` neighbouring channels of x^2)^beta, for input
    (N, C, *) with at least one spatial dim."""
    from tgrad.nn.functional import pad
    _check_tensor("local_response_norm", input)
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    if size <= 0:  # PyTorch's avg_pool error (an empty window would give NaN)
        raise RuntimeError(f"local_response_norm: kernel size should be greater than zero, "
                           f"but got size {size}")
    integer = input.dtype is dtypes.int64  # PyTorch's avg_pool has an int64 kernel only
    if not integer:
        _check_float("local_response_norm", input,
                     "avg_pool2d" if input.ndim == 3 else "avg_pool3d_out_frame")
    sq = (input * input).movedim(1, -1)  # channels last: pad, then one window per channel
    sq = pad(sq, (size // 2, (size - 1) // 2))
    win = sq.unfold(-1, size, 1)
    # an int64 input: PyTorch's integer avg_pool truncates the window mean (sum // size);
    # the float formula then gives the default float dtype (int64 * alpha)
    mean = (ew.div(win.sum(-1), size, rounding_mode="trunc") if integer
            else win.mean(-1)).movedim(-1, 1)
    return input / (mean * alpha + k).pow(beta)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: slopes ~ U(lower, upper) per element in training, their mean
    (lower + upper) / 2 in evaluation."""
    return rrelu_impl(input, lower, upper, training, inplace, None)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,  # noqa: A002
           training: bool = False) -> Tensor:
    """rrelu in place."""
    return rrelu_impl(input, lower, upper, training, True, None)


def rrelu_impl(input: Tensor, lower: float, upper: float, training: bool,  # noqa: A002
               inplace: bool, generator) -> Tensor:
    """rrelu with the slopes drawn from ``generator`` (None: tgrad's default one);
    torch.rrelu's form."""
    _check_float("rrelu", input)
    if not lower <= upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the upper bound (rrelu "
                           f"got lower={lower}, upper={upper})")
    if not training:  # leaky_relu at the mean slope, under PyTorch's node name
        slope = (lower + upper) / 2
        fn = lambda x: RreluEval.apply(x, slope)  # noqa: E731
        return apply_inplace(input, "rrelu_", fn) if inplace else fn(input)
    from tgrad.ops.creation import empty
    slope = empty(input.shape, dtype=input.dtype, device=input.device)
    slope.uniform_(lower, upper, generator=generator)
    noise = ew.where(input > 0, 1.0, slope)  # x <= 0 takes its slope (0 too), as PyTorch
    fn = lambda x: RreluWithNoise.apply(x, noise)  # noqa: E731
    return apply_inplace(input, "rrelu_", fn) if inplace else fn(input)


# PyTorch's rrelu node in evaluation: leaky_relu's rule (LeakyRelu) at slope (lower + upper) / 2
RreluEval = ew.node_variant(LeakyRelu, "RreluWithNoiseBackward0")


class RreluWithNoise(_Piecewise):
    """rrelu in training: y = x noise, noise 1 where x > 0, else the drawn slope (same shape
    as x); dx = g noise (in x's graph: _Piecewise). PyTorch's RreluWithNoiseBackward0 (no
    edge for the noise)."""

    name = "rrelu_with_noise"
    node_name = "RreluWithNoiseBackward0"
    hidden_edges = (1,)

    @staticmethod
    def value(x: Tensor, noise: Tensor) -> Tensor:
        return x * noise

    @staticmethod
    def mask_grad(x: Tensor, g: Tensor, noise: Tensor) -> Tensor:
        return g * noise


def _alpha_dropout(op: str, input: Tensor, p: float, training: bool,  # noqa: A002
                   inplace: bool, feature: bool) -> Tensor:
    _check_tensor(op, input)
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    _check_float(op, input)
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    from tgrad.ops.creation import ones
    shape = _channel_shape(input, 2) if feature else tuple(input.shape)
    keep = (dropout(ones(shape, dtype=input.dtype, device=input.device), p, True) > 0) \
        .to(input.dtype)
    alpha = _SELU_ALPHA_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = (keep - 1) * (alpha * a) + alpha * a * p
    noise = keep * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's zero mean and unit variance (drops to its saturation
    value, then an affine map); the identity when not training."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,  # noqa: A002
                          inplace: bool = False) -> Tensor:
    """alpha_dropout of whole channels ((N, C) mask, broadcast over the other dims)."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)
