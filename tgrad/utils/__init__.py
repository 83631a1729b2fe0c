"""tgrad.utils: ``checkpoint`` (activation checkpointing), ``data`` (datasets,
samplers, DataLoader), ``hooks`` (RemovableHandle), and, imported on first use,
``benchmark`` (Timer, Measurement, Compare), ``deterministic`` (fill_uninitialized_memory),
``dlpack`` (to_dlpack, from_dlpack) and ``_pytree`` (nested-container flatten / map), as
torch.utils."""

from tgrad.utils import checkpoint, data, hooks

__all__ = ["benchmark", "checkpoint", "data", "deterministic", "dlpack", "hooks"]


def __getattr__(name: str) -> object:
    # imported on first use (import tgrad stays as fast)
    if name in ("benchmark", "deterministic", "dlpack", "_pytree"):
        import importlib
        return importlib.import_module("tgrad.utils." + name)
    raise AttributeError(f"module 'tgrad.utils' has no attribute {name!r}")
