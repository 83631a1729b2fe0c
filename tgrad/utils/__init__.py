"""tgrad.utils: ``checkpoint`` (activation checkpointing), as torch.utils."""

from tgrad.utils import checkpoint

__all__ = ["checkpoint"]
