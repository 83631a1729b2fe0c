"""``tgrad.distributed``: tgrad runs in one process on one device and has no collective
communication. As PyTorch's module on a build without distributed support, ``is_available()``
is False; the guards model code writes around it (``is_initialized()``, and
``get_rank()`` / ``get_world_size()`` behind them) answer as for a process that never joined a
group, and ``init_process_group`` raises with that explanation."""

from __future__ import annotations

from typing import Any

__all__ = ["is_available", "is_initialized", "is_torchelastic_launched", "get_rank",
           "get_world_size", "init_process_group", "destroy_process_group", "barrier"]

_NO_GROUP = ("Default process group has not been initialized, please make sure to call "
             "init_process_group. (tgrad has no distributed support: it runs in one process)")


def is_available() -> bool:
    """False: tgrad has no distributed backend."""
    return False


def is_initialized() -> bool:
    """False: no process group can exist."""
    return False


def is_torchelastic_launched() -> bool:
    """False."""
    return False


def get_rank(group: Any = None) -> int:
    """PyTorch's ValueError: there is no default process group."""
    raise ValueError(_NO_GROUP)


def get_world_size(group: Any = None) -> int:
    """PyTorch's ValueError: there is no default process group."""
    raise ValueError(_NO_GROUP)


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> None:
    """PyTorch's ValueError: there is no default process group."""
    raise ValueError(_NO_GROUP)


def destroy_process_group(group: Any = None) -> None:
    """PyTorch's AssertionError: there is no process group to destroy."""
    raise AssertionError("Process group cannot be None (tgrad has no distributed support)")


def init_process_group(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("tgrad.distributed.init_process_group: tgrad has no distributed "
                       "backend (is_available() is False); it runs in one process on one "
                       "device")
