"""``tgrad.nn.attention``: ``SDPBackend`` and the ``sdpa_kernel`` context manager of
torch.nn.attention. tgrad's ``scaled_dot_product_attention`` has a single implementation
(the math formula, with Triton kernels on cuda): it runs when any of MATH,
FLASH_ATTENTION, EFFICIENT_ATTENTION or CUDNN_ATTENTION is enabled, whichever it is, and
raises PyTorch's "No viable backend" error when none is. The flags live in
``tgrad.backends.cuda`` (``flash_sdp_enabled()`` ...)."""

from __future__ import annotations

import contextlib
import enum
from typing import Iterator

from tgrad.backends import cuda as _cuda_flags

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.Enum):
    """The scaled dot product attention backends (PyTorch's values)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    def __int__(self) -> int:
        return self.value

    def __str__(self) -> str:
        return f"SDPBackend.{self.name}"


_BACKEND_NAMES = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
                  "mem_efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH,
                  "overrideable": SDPBackend.OVERRIDEABLE}
_PRIORITY: list[int] = [int(b) for b in (SDPBackend.FLASH_ATTENTION,
                                         SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH,
                                         SDPBackend.CUDNN_ATTENTION, SDPBackend.OVERRIDEABLE)]


def _current(with_priority: bool = False) -> list[SDPBackend]:
    backends = [b for name, b in _BACKEND_NAMES.items() if _cuda_flags.SDP_FLAGS[name]]
    if with_priority:
        backends.sort(key=lambda b: _PRIORITY.index(int(b)))
    return backends


def _apply(backends: list, set_priority: bool) -> None:
    for name, b in _BACKEND_NAMES.items():
        _cuda_flags.SDP_FLAGS[name] = b in backends
    if set_priority:
        order = [int(b) for b in backends]
        order += [p for p in _PRIORITY if p not in order]
        _PRIORITY[:] = order


@contextlib.contextmanager
def sdpa_kernel(backends: list[SDPBackend] | SDPBackend,
                set_priority: bool = False) -> Iterator[dict]:
    """Inside the block only ``backends`` (one SDPBackend or a list) are enabled; the
    previous flags come back on exit. ``set_priority``: the list's order is recorded as the
    priority order (tgrad has one implementation, so it changes nothing else)."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = _current(with_priority=set_priority)
    try:
        _apply(backends, set_priority)
        yield {}
    finally:
        _apply(previous, set_priority)


def check_viable() -> None:
    """Raise PyTorch's error when no backend that runs tgrad's implementation is enabled."""
    f = _cuda_flags.SDP_FLAGS
    if not (f["math"] or f["flash"] or f["mem_efficient"] or f["cudnn"]):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. "
                           "This is likely due to turning off both the math kernel and the "
                           "fused kernels.")
