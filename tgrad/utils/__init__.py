"""tgrad.utils: ``checkpoint`` (activation checkpointing) and ``data`` (datasets,
samplers, DataLoader), as torch.utils."""

from tgrad.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
