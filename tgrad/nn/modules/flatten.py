"""Flatten and Unflatten: reshape modules (views where the layout allows); Unfold and Fold
(F.unfold, F.fold)."""

from __future__ import annotations

from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor, _wrap_dim


class Flatten(Module):
    """Merge dims ``start_dim``..``end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        # PyTorch's check and its TypeErrors; the size is kept as given (its repr shows it)
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, n in enumerate(unflattened_size):
            if not isinstance(n, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element "
                                f"of type {type(n).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        _wrap_dim(self.dim, input.ndim, "Unflatten")
        return input.unflatten(self.dim, tuple(self.unflattened_size))

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _FoldBase(Module):
    """What Unfold and Fold share (siblings, not subclasses of one another, as PyTorch's):
    the sliding window's sizes and their repr."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(_FoldBase):
    """Sliding blocks as columns (F.unfold, PyTorch's im2col)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        from tgrad.nn import functional as F
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(_FoldBase):
    """Columns summed back into an image of ``output_size`` (F.fold, col2im)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(kernel_size, dilation, padding, stride)
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        from tgrad.nn import functional as F
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + super().extra_repr()
