"""tgrad.utils: ``checkpoint`` (activation checkpointing), ``data`` (datasets,
samplers, DataLoader) and ``hooks`` (RemovableHandle), as torch.utils."""

from tgrad.utils import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
