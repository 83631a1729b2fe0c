"""``tgrad.nn.utils.fusion``, PyTorch's: fold an eval-mode BatchNorm into the convolution
or linear layer before it.

    w' = w * gamma / sqrt(running_var + eps)   (per output channel)
    b' = (b - running_mean) * gamma / sqrt(running_var + eps) + beta
"""

from __future__ import annotations

import copy

from tgrad.autograd.grad_mode import no_grad
from tgrad.nn.modules.module import Module
from tgrad.nn.parameter import Parameter
from tgrad.ops.creation import ones_like, zeros_like
from tgrad.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w: Tensor, conv_b, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w, bn_b, transpose: bool = False) -> tuple:
    """(weight, bias) Parameters of the convolution that equals conv then BatchNorm (eval);
    ``transpose``: a transposed convolution (output channels on dim 1)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    inv_std = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    w = (conv_w * (bn_w * inv_std).reshape(shape)).to(w_dtype)
    b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(b_dtype)
    return Parameter(w.detach(), conv_w.requires_grad), Parameter(b.detach(),
                                                                 conv_b.requires_grad)


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` computing conv followed by ``bn`` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")
    fused = copy.deepcopy(conv)
    with no_grad():
        fused.weight, fused.bias = fuse_conv_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
            bn.bias, transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b, bn_rm: Tensor, bn_rv: Tensor,
                           bn_eps: float, bn_w: Tensor, bn_b: Tensor) -> tuple:
    """(weight, bias) Parameters of the linear layer equal to linear then BatchNorm."""
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    w = linear_w * scale.unsqueeze(-1)
    b = (linear_b - bn_rm) * scale + bn_b
    return Parameter(w.detach(), linear_w.requires_grad), Parameter(b.detach(),
                                                                   linear_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` computing linear followed by ``bn`` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features must equal bn.num_features or "
                             "bn.num_features must be 1")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("BatchNorm without running statistics cannot be fused")
    fused = copy.deepcopy(linear)
    with no_grad():
        fused.weight, fused.bias = fuse_linear_bn_weights(
            fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
            bn.bias)
    return fused
