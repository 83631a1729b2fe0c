"""PyTorch's ``torch.cpu``: the CPU as a device module (what ``tgrad.get_device_module``
returns for ``cpu``). The CPU runs tgrad's ops synchronously, so there is nothing to wait
for: as PyTorch's, ``Stream`` and ``Event`` are placeholders for device-agnostic code, and
``stream(s)`` only changes what ``current_stream()`` returns. (PyTorch's
``get_capabilities``, the CPU's instruction sets from cpuinfo, is not provided.)
``tgrad.cpu.amp`` holds PyTorch's deprecated ``torch.cpu.amp.autocast`` / ``GradScaler``:
``tgrad.amp``'s on the CPU, with PyTorch's FutureWarning.)"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from tgrad._device_amp import device_amp_module

__all__ = ["is_available", "is_initialized", "synchronize", "current_device",
           "current_stream", "stream", "set_device", "device_count", "Stream",
           "StreamContext", "Event"]  # PyTorch's (its amp submodule is not listed)


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


def is_initialized() -> bool:
    """True: the CPU needs no initialization."""
    return True


class Stream:
    """A placeholder stream (PyTorch's torch.cpu.Stream): its methods do nothing."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """A placeholder event (PyTorch's torch.cpu.Event): always complete."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_default_cpu_stream = Stream()
_current_stream = _default_cpu_stream


def current_stream(device=None) -> Stream:
    """The selected Stream: the default one, or that of the innermost ``stream(s)`` block
    (``device`` is ignored)."""
    return _current_stream


class StreamContext(AbstractContextManager):
    """Context manager making ``stream`` current inside the block (None: a no-op)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev_stream = _default_cpu_stream

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is not None:
            self.prev_stream = _current_stream
            _current_stream = self.stream

    def __exit__(self, type: Any, value: Any, traceback: Any) -> None:  # noqa: A002
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def stream(stream: Stream | None) -> AbstractContextManager:
    """``StreamContext(stream)``."""
    return StreamContext(stream)


amp = device_amp_module(__name__, "cpu", "bfloat16", ["autocast", "GradScaler"])
