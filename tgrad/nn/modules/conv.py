"""Conv1d/2d/3d (padding_mode 'zeros', 'reflect', 'replicate' or 'circular') and
ConvTranspose1d/2d/3d (zero padding only); PyTorch's initialisation."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn._ntuple import _ntuple
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _check_groups(in_channels: int, out_channels: int, groups: int) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups:
        raise ValueError("out_channels must be divisible by groups")


def _setup(conv: Module, in_channels: int, out_channels: int, kernel_size, stride, padding,
           dilation, groups: int, bias: bool, padding_mode: str, weight_lead: tuple, device,
           dtype) -> None:
    """What a convolution and a transposed one share (after _check_groups and their own
    padding checks): the size attributes as n-tuples, weight ``weight_lead + kernel_size``
    and bias (out_channels,), both initialised by reset_parameters."""
    from tgrad.ops.creation import empty
    n = conv._spatial
    conv.in_channels, conv.out_channels = in_channels, out_channels
    conv.kernel_size = _ntuple(kernel_size, n)
    conv.stride = _ntuple(stride, n)
    conv.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
    conv.dilation = _ntuple(dilation, n)
    conv.groups, conv.padding_mode = groups, padding_mode
    conv.weight = Parameter(empty(weight_lead + conv.kernel_size, device=device, dtype=dtype))
    if bias:
        conv.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
    else:
        conv.register_parameter("bias", None)
    conv.reset_parameters()


def _extra_repr(conv: Module) -> str:
    """PyTorch's repr of a (transposed) convolution: defaults left out."""
    n = conv._spatial
    s = (f"{conv.in_channels}, {conv.out_channels}, kernel_size={conv.kernel_size}, "
         f"stride={conv.stride}")
    if conv.padding != (0,) * n:
        s += f", padding={conv.padding}"  # a string unquoted, as PyTorch: padding=same
    if conv.dilation != (1,) * n:
        s += f", dilation={conv.dilation}"
    if getattr(conv, "output_padding", (0,) * n) != (0,) * n:
        s += f", output_padding={conv.output_padding}"
    if conv.groups != 1:
        s += f", groups={conv.groups}"
    if conv.bias is None:
        s += ", bias=False"
    if conv.padding_mode != "zeros":
        s += f", padding_mode={conv.padding_mode}"
    return s


class _ConvNd(Module):
    """weight (out_channels, in_channels / groups, *kernel_size), bias (out_channels,);
    both ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels / groups * prod(kernel)
    (kaiming_uniform_(a=sqrt(5)), as PyTorch)."""

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, dilation=1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        _check_groups(in_channels, out_channels, groups)
        n = self._spatial
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
               groups, bias, padding_mode, (out_channels, in_channels // groups), device,
               dtype)
        # F.pad's (left, right) per spatial dim, last dim first (PyTorch's
        # _reversed_padding_repeated_twice); for padding='same' the total d * (k - 1) with
        # the odd one on the right, as F.conv's 'same'
        if padding == "same":
            pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                     for k, d in zip(self.kernel_size, self.dilation)]
        elif padding == "valid":
            pairs = [(0, 0)] * n
        else:
            pairs = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [q for pair in reversed(pairs) for q in pair]

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        conv = getattr(F, f"conv{self._spatial}d")  # F.conv1d / conv2d / conv3d
        if self.padding_mode != "zeros":
            # as PyTorch: F.pad in that mode (a composite: its gradient sums the copies of
            # each border element into it), then the convolution without padding
            padded = F.pad(input, self._reversed_padding_repeated_twice,
                           mode=self.padding_mode)
            return conv(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                        self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)

    extra_repr = _extra_repr


class Conv2d(_ConvNd):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out); see F.conv2d."""

    _spatial = 2


class Conv1d(_ConvNd):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out); see F.conv1d."""

    _spatial = 1


class Conv3d(_ConvNd):
    """(N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); see
    F.conv3d."""

    _spatial = 3


class _ConvTransposeNd(Module):
    """weight (in_channels, out_channels / groups, *kernel_size), bias (out_channels,); both
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with PyTorch's fan_in of that layout,
    out_channels / groups * prod(kernel) (kaiming_uniform_(a=sqrt(5)), as PyTorch)."""

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, output_padding=0, groups: int = 1, bias: bool = True,
                 dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        _check_groups(in_channels, out_channels, groups)
        n = self._spatial
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints (no '{padding}' for transposed convolutions)")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        self.output_padding = _ntuple(output_padding, n)
        _setup(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
               groups, bias, padding_mode, (in_channels, out_channels // groups), device,
               dtype)

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def _output_padding(self, input: Tensor, output_size) -> tuple:  # noqa: A002
        """output_padding, or the one that makes the output ``output_size`` (the spatial
        sizes, optionally preceded by the batch and channel sizes), as PyTorch."""
        if output_size is None:
            return self.output_padding
        n = self._spatial
        non_spatial = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == non_spatial + n:
            output_size = output_size[non_spatial:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {non_spatial + n} elements (got {len(output_size)})")
        sizes = input.shape[input.ndim - n:]
        min_sizes = [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, s, p, d, k in zip(
            sizes, self.stride, self.padding, self.dilation, self.kernel_size)]
        max_sizes = [m + s - 1 for m, s in zip(min_sizes, self.stride)]
        for size, lo, hi in zip(output_size, min_sizes, max_sizes):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {min_sizes} to {max_sizes} (for an input of "
                                 f"{list(sizes)})")
        return tuple(o - m for o, m in zip(output_size, min_sizes))

    def forward(self, input: Tensor, output_size=None) -> Tensor:  # noqa: A002
        conv_t = getattr(F, f"conv_transpose{self._spatial}d")  # F.conv_transpose1d/2d/3d
        return conv_t(input, self.weight, self.bias, self.stride, self.padding,
                      self._output_padding(input, output_size), self.groups, self.dilation)

    extra_repr = _extra_repr


class ConvTranspose2d(_ConvTransposeNd):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out); see
    F.conv_transpose2d. ``forward(input, output_size)`` picks the output_padding that gives
    ``output_size``."""

    _spatial = 2


class ConvTranspose1d(_ConvTransposeNd):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out); see F.conv_transpose1d."""

    _spatial = 1


class ConvTranspose3d(_ConvTransposeNd):
    """(N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); see
    F.conv_transpose3d. ``forward(input, output_size)`` picks the output_padding that gives
    ``output_size``."""

    _spatial = 3
