"""``convert_conv2d_weight_memory_format`` / ``convert_conv3d_weight_memory_format``
(``torch.nn.utils.memory_format``): the weights of a model's Conv2d / ConvTranspose2d
(Conv3d / ConvTranspose3d) layers laid out in ``memory_format`` (channels-last strides,
tgrad.ops.movement), the same Parameters, values unchanged."""

from __future__ import annotations

from typing import Any

from tgrad.nn.modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, memory_format: Any, kinds: tuple) -> Module:
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` with the weight of every Conv2d / ConvTranspose2d in ``memory_format``."""
    from tgrad.nn.modules.conv import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` with the weight of every Conv3d / ConvTranspose3d in ``memory_format``."""
    from tgrad.nn.modules.conv import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
