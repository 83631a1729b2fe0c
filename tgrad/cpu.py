"""PyTorch's ``torch.cpu``: the CPU as a device module (what ``tgrad.get_device_module``
returns for ``cpu``). The CPU runs tgrad's ops synchronously, so there is nothing to wait
for."""

from __future__ import annotations

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize"]


def is_available() -> bool:
    """True: the CPU is always available."""
    return True


def device_count() -> int:
    """1."""
    return 1


def current_device() -> str:
    """'cpu'."""
    return "cpu"


def set_device(device) -> None:
    """A no-op (there is one CPU device)."""


def synchronize(device=None) -> None:
    """A no-op: CPU ops have finished when they return."""
