"""``tgrad.backends.mps``: tgrad has no Apple MPS backend."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """False: tgrad has no MPS device."""
    return False


def is_built() -> bool:
    """False: tgrad is not built with MPS support."""
    return False
