"""Dropout: zero each element with probability p in training, scale the rest by 1/(1-p)."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor


class _DropoutNd(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:  # (NaN passes, as PyTorch's; F.dropout refuses it)
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels: input (N, C, L) or (C, L) -> same shape; in training each
    channel is zeroed with probability p, the others scaled by 1/(1-p)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels: input (N, C, H, W) -> same shape (a 3-D input is read as
    (N, C, L), with PyTorch's warning)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels: input (N, C, D, H, W) or (C, D, H, W) -> same shape."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance (F.alpha_dropout); the identity
    in evaluation."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """AlphaDropout of whole channels (F.feature_alpha_dropout)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.feature_alpha_dropout(input, self.p, self.training, self.inplace)
