"""CosineSimilarity and PairwiseDistance over tgrad.nn.functional (PyTorch's attributes;
no extra_repr, as PyTorch)."""

from __future__ import annotations

from tgrad.nn import functional as F
from tgrad.nn.modules.module import Module
from tgrad.tensor import Tensor

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """F.cosine_similarity(x1, x2, dim, eps): inputs broadcast, ``dim`` is reduced."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """F.pairwise_distance(x1, x2, p, eps, keepdim): ||x1 - x2 + eps||_p over the last
    dim; the norm order is stored as ``norm`` (PyTorch's attribute name)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
