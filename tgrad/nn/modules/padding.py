"""Padding modules over F.pad: ZeroPad1d/2d/3d, ConstantPad1d/2d/3d, ReflectionPad1d/2d/3d,
ReplicationPad1d/2d/3d and CircularPad1d/2d/3d. ``padding`` is an int (the same on every
side) or a tuple (left, right[, top, bottom[, front, back]]), stored as a tuple; reprs
are PyTorch's."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn._ntuple import _ntuple
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    mode = "constant"
    k = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self.k)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``."""
    k = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``."""
    k = 3


class _ZeroPadNd(_ConstantPadNd):
    # ZeroPad{k}d's mixin ahead of ConstantPad{k}d (a ZeroPad2d is a ConstantPad2d, as
    # PyTorch's): the value is 0 and the repr shows the padding only
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pads the last 2 dims with zeros."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pads the last 3 dims with zeros."""


class _ReflectionPadNd(_PadNd):
    mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    """Reflects the last dim of (C, W) or (N, C, W) about its edges (pads < W)."""


class ReflectionPad2d(_ReflectionPadNd):
    """Reflects the last 2 dims of (C, H, W) or (N, C, H, W)."""
    k = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Reflects the last 3 dims of (C, D, H, W) or (N, C, D, H, W)."""
    k = 3


class _ReplicationPadNd(_PadNd):
    mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    """Repeats the edge values of the last dim of (C, W) or (N, C, W)."""


class ReplicationPad2d(_ReplicationPadNd):
    """Repeats the edge values of the last 2 dims of (C, H, W) or (N, C, H, W)."""
    k = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Repeats the edge values of the last 3 dims of (C, D, H, W) or (N, C, D, H, W)."""
    k = 3


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        if input.ndim not in (self.k + 1, self.k + 2):
            raise ValueError(f"expected {self.k + 1}D or {self.k + 2}D input (got "
                             f"{input.ndim}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Wraps the last dim of (C, W) or (N, C, W) around (pads <= W)."""


class CircularPad2d(_CircularPadNd):
    """Wraps the last 2 dims of (C, H, W) or (N, C, H, W) around."""
    k = 2


class CircularPad3d(_CircularPadNd):
    """Wraps the last 3 dims of (C, D, H, W) or (N, C, D, H, W) around."""
    k = 3
