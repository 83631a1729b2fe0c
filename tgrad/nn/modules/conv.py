"""Conv1d and Conv2d (zero padding; PyTorch's initialisation)."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


def _ntuple(value, n: int) -> tuple:
    return (value,) * n if isinstance(value, int) else tuple(value)


class _ConvNd(Module):
    """weight (out_channels, in_channels / groups, *kernel_size), bias (out_channels,);
    both ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = in_channels / groups * prod(kernel)
    (kaiming_uniform_(a=sqrt(5)), as PyTorch)."""

    _spatial = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, dilation=1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        from tgrad.ops.creation import empty
        super().__init__()
        n = self._spatial
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{type(self).__name__}: padding_mode '{padding_mode}' "
                                      f"is not supported in tgrad (only 'zeros')")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n)
        self.dilation = _ntuple(dilation, n)
        self.groups, self.padding_mode = groups, padding_mode
        self.weight = Parameter(empty((out_channels, in_channels // groups) + self.kernel_size,
                                      device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._spatial:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) \
                else f", padding={self.padding}"
        if self.dilation != (1,) * self._spatial:
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    """(N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out); see F.conv2d."""

    _spatial = 2

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)


class Conv1d(_ConvNd):
    """(N, C_in, L) or (C_in, L) -> (N, C_out, L_out); see F.conv1d."""

    _spatial = 1

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding,
                        self.dilation, self.groups)
