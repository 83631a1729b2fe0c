"""Loss modules over tgrad.nn.functional."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor


class CrossEntropyLoss(Module):
    """Softmax cross-entropy of logits (N, C) against class indices (N,)."""

    def __init__(self, reduction: str = "mean", **kwargs) -> None:
        super().__init__()
        self.reduction = reduction
        self.kwargs = kwargs

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, reduction=self.reduction, **self.kwargs)


class MSELoss(Module):
    """Mean (or sum) of squared differences."""

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)
