"""Rearranging ops and gumbel_softmax composed of tgrad views and ops, re-exported by
tgrad.nn.functional: pixel_shuffle, pixel_unshuffle, channel_shuffle
(native_channel_shuffle), gumbel_softmax, and the in-place activations relu_, elu_,
selu_, celu_, leaky_relu_, hardtanh_, threshold_ (the ``inplace=True`` forms).
The shuffles are one reshape, one permute and one reshape inside one node of PyTorch's
name (PixelShuffleBackward0, PixelUnshuffleBackward0, ChannelShuffleBackward0), whose
gradient is the inverse shuffle of the output gradient; their result is always a new
tensor (PyTorch's), never a view of the input. On the CPU the forward and the plain
backward are NumPy copies on the arrays (tgrad/backends/_numpy_pad.py; the same bits).
"""

from __future__ import annotations

import warnings

from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_pad as _np_pad
from tgrad.nn._activations import celu
from tgrad.nn._activations import threshold as _threshold
from tgrad.nn._composite import elu, hardtanh, leaky_relu, selu
from tgrad.nn.functional import _check_float, _check_tensor, relu, softmax
from tgrad.ops._common import fresh, wrap
from tgrad.ops.creation import empty_like, zeros_like
from tgrad.ops.sorting import _int_arg
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "gumbel_softmax", "relu_", "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_",
           "threshold_"]


def _factor(op: str, name: str, value) -> int:
    value = _int_arg(op, name, 2, value)
    if value <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {value}")
    return value


def _at_least_3d(op: str, input: Tensor) -> None:  # noqa: A002
    _check_tensor(op, input)
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")


def _new(out: Tensor, input: Tensor) -> Tensor:  # noqa: A002
    """The shuffle's result as the new tensor PyTorch returns: a copy when every reshape
    was a view of ``input`` (factor or groups 1, size-1 or empty dims: writes to it would
    reach ``input``), else the reshape's copy (or a view of it) as a non-view."""
    return out.clone() if out._storage.root is input._storage.root else fresh(out)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C r^2, H, W) -> (*, C, H r, W r): out[..., c, h r + i, w r + j] =
    in[..., c r^2 + i r + j, h, w] (r = upscale_factor)."""
    _at_least_3d("pixel_shuffle", input)
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    return PixelShuffle.apply(input, r)


def _pixel_shuffle(input: Tensor, r: int) -> Tensor:  # noqa: A002
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return _new(x.reshape(*lead, c // (r * r), h * r, w * r), input)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C, H r, W r) -> (*, C r^2, H, W), the inverse of pixel_shuffle
    (r = downscale_factor)."""
    _at_least_3d("pixel_unshuffle", input)
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by "
                           f"downscale_factor, but input.size(-1)={w} is not divisible by {r}")
    return PixelUnshuffle.apply(input, r)


def _pixel_unshuffle(input: Tensor, r: int) -> Tensor:  # noqa: A002
    *lead, c, h, w = input.shape
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return _new(x.reshape(*lead, c * r * r, h // r, w // r), input)


def _fast(t: Tensor) -> bool:
    """Whether the shuffles copy ``t``'s array in NumPy (tgrad/backends/_numpy_pad.py): on
    the CPU."""
    return t.device.type == "cpu"


class PixelShuffle(Function):
    """pixel_shuffle by r as one node, PyTorch's PixelShuffleBackward0: the reshape /
    permute / reshape above; dx = pixel_unshuffle(g, r) (the inverse permutation, the same
    kind of node: differentiates again)."""

    name = "pixel_shuffle"
    node_name = "PixelShuffleBackward0"
    saved_attributes = {"_saved_upscale_factor": lambda node: node.r}

    @staticmethod
    def forward(ctx, x, r):
        ctx.r = r
        if _fast(x):  # the same copy on the array (_numpy_pad)
            return wrap(_np_pad.pixel_shuffle(x._data, r), x.device)
        return _pixel_shuffle(x, r)

    @staticmethod
    def backward(ctx, g):
        if not differentiable_formula() and _fast(g):  # the copy, no node
            return wrap(_np_pad.pixel_unshuffle(g._data, ctx.r), g.device), None
        return PixelUnshuffle.apply(g, ctx.r), None


class PixelUnshuffle(Function):
    """pixel_unshuffle by r as one node, PyTorch's PixelUnshuffleBackward0;
    dx = pixel_shuffle(g, r)."""

    name = "pixel_unshuffle"
    node_name = "PixelUnshuffleBackward0"
    saved_attributes = {"_saved_downscale_factor": lambda node: node.r}

    @staticmethod
    def forward(ctx, x, r):
        ctx.r = r
        if _fast(x):  # the same copy on the array (_numpy_pad)
            return wrap(_np_pad.pixel_unshuffle(x._data, r), x.device)
        return _pixel_unshuffle(x, r)

    @staticmethod
    def backward(ctx, g):
        if not differentiable_formula() and _fast(g):  # the copy, no node
            return wrap(_np_pad.pixel_shuffle(g._data, ctx.r), g.device), None
        return PixelShuffle.apply(g, ctx.r), None


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """(N, C, *) -> (N, C, *) with the channels seen as (groups, C / groups) transposed:
    out[:, j groups + g] = in[:, g (C / groups) + j]."""
    _check_tensor("channel_shuffle", input)
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    groups = _int_arg("channel_shuffle", "groups", 2, groups)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    return ChannelShuffle.apply(input, groups)


class ChannelShuffle(Function):
    """channel_shuffle in ``groups`` as one node, PyTorch's ChannelShuffleBackward0: the
    channels seen as (groups, C / groups), transposed; dx = channel_shuffle(g, C / groups)
    (the inverse transposition, the same node: differentiates again)."""

    name = "channel_shuffle"
    node_name = "ChannelShuffleBackward0"
    saved_attributes = {"_saved_groups": lambda node: node.groups}

    @staticmethod
    def forward(ctx, x, groups):
        ctx.groups = groups
        if _fast(x):  # the same copy on the array (_numpy_pad)
            return wrap(_np_pad.channel_shuffle(x._data, groups), x.device)
        n, c, *rest = x.shape
        y = x.reshape(n, groups, c // groups, *rest).transpose(1, 2)
        return _new(y.reshape(n, c, *rest), x)

    @staticmethod
    def backward(ctx, g):
        if not differentiable_formula() and _fast(g):  # the copy, no node
            return wrap(_np_pad.channel_shuffle(g._data, g.shape[1] // ctx.groups),
                        g.device), None
        return ChannelShuffle.apply(g, g.shape[1] // ctx.groups), None


native_channel_shuffle = channel_shuffle


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) along ``dim`` with g = -log(E), E ~ Exponential(1) from
    tgrad's generator (tgrad.manual_seed replays it), i.e. g ~ Gumbel(0, 1). With ``hard``
    the one-hot of the argmax, y_hard - y_soft.detach() + y_soft (straight through: the
    value is one-hot, the gradient the soft sample's). ``eps`` is deprecated (it warns)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    _check_float("gumbel_softmax", logits)
    gumbels = -empty_like(logits).exponential_().log()
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    d = _wrap_dim(dim, logits.ndim, "gumbel_softmax") if logits.ndim else 0
    index = y_soft.max(d, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter(d, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def relu_(input: Tensor) -> Tensor:  # noqa: A002
    """relu in place (returns ``input``)."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """elu in place."""
    return elu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:  # noqa: A002
    """selu in place."""
    return selu(input, inplace=True)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:  # noqa: A002
    """celu in place."""
    return celu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:  # noqa: A002
    """leaky_relu in place."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:  # noqa: A002
    """hardtanh in place."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:  # noqa: A002
    """threshold in place."""
    return _threshold(input, threshold, value, inplace=True)


