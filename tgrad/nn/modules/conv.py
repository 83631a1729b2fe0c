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
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, self._spatial)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, False,
                    0, groups, bias, padding_mode, device, dtype)

    def _setup(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
               dilation, transposed: bool, output_padding, groups: int, bias: bool,
               padding_mode: str, device, dtype) -> None:
        """What a convolution and a transposed one share (PyTorch's _ConvNd.__init__ after
        the checks): the size attributes as n-tuples, ``transposed``, ``output_padding``,
        ``_reversed_padding_repeated_twice``, weight (out_channels, in_channels / groups,
        *kernel_size) (transposed: (in_channels, out_channels / groups, *kernel_size)) and
        bias (out_channels,), both initialised by reset_parameters."""
        from tgrad.ops.creation import empty
        n = self._spatial
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups, self.padding_mode = groups, padding_mode
        # F.pad's (left, right) per spatial dim, last dim first, as PyTorch: a tuple, or for
        # a padding string a list (padding='same': the total d * (k - 1) with the odd one on
        # the right, as F.conv's 'same')
        if padding == "same":
            pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                     for k, d in zip(self.kernel_size, self.dilation)]
            self._reversed_padding_repeated_twice = [q for pair in reversed(pairs)
                                                     for q in pair]
        elif padding == "valid":
            self._reversed_padding_repeated_twice = [0, 0] * n
        else:
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding)
                                                          for _ in range(2))
        lead = (in_channels, out_channels // groups) if transposed \
            else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(lead + self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

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

    def extra_repr(self) -> str:
        """PyTorch's repr of a (transposed) convolution: defaults left out."""
        n = self._spatial
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"  # a string unquoted, as PyTorch: padding=same
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


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


class _ConvTransposeNd(_ConvNd):
    """weight (in_channels, out_channels / groups, *kernel_size), bias (out_channels,); both
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with PyTorch's fan_in of that layout,
    out_channels / groups * prod(kernel) (kaiming_uniform_(a=sqrt(5)), as PyTorch)."""

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, output_padding=0, groups: int = 1, bias: bool = True,
                 dilation=1, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super(_ConvNd, self).__init__()  # Module's (_ConvNd's takes a convolution's args)
        _check_groups(in_channels, out_channels, groups)
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints (no '{padding}' for transposed convolutions)")
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, True,
                    output_padding, groups, bias, padding_mode, device, dtype)

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
