"""Linear, Bilinear and Identity."""

from __future__ import annotations

import math

from tgrad.nn import functional as F
from tgrad.nn import init
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.tensor import Tensor


def _weight_and_bias(module: Module, weight_shape: tuple, bias: bool, device, dtype) -> None:
    """module.weight of ``weight_shape`` and module.bias of weight_shape[0] (or a None bias
    registered), then the module's reset_parameters."""
    from tgrad.ops.creation import empty
    module.weight = Parameter(empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(empty(weight_shape[0], device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input


class Linear(Module):
    """y = x W^T + b.  x: (*, in_features) -> y: (*, out_features); W: (out, in); b: (out,).

    Initialised like PyTorch: W ~ kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)),
    b ~ U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, device, dtype)

    def reset_parameters(self) -> None:
        init._layer_default_(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under another name: PyTorch's MultiheadAttention.out_proj (the name keeps
    its quantization passes off it; here it only shows in the repr)."""


class Bilinear(Module):
    """y = x1^T W x2 + b per output feature.  x1: (*, in1_features), x2: (*, in2_features)
    -> y: (*, out_features); W: (out, in1, in2); b: (out,). Initialised like PyTorch:
    W, b ~ U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, device, dtype)

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:  # PyTorch's check (the bound divides by it)
            raise ValueError(f"in1_features must be > 0, but got "
                             f"(in1_features={self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
