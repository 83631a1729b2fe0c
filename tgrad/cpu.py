"""PyTorch's ``torch.cpu``: the CPU as a device module (what ``tgrad.get_device_module``
returns for ``cpu``). The CPU runs tgrad's ops synchronously, so there is nothing to wait
for: as PyTorch's, ``Stream`` and ``Event`` are placeholders for device-agnostic code, and
``stream(s)`` only changes what ``current_stream()`` returns. (PyTorch's
``get_capabilities``, the CPU's instruction sets from cpuinfo, is not provided.)
``tgrad.cpu.amp`` holds PyTorch's deprecated ``torch.cpu.amp.autocast`` / ``GradScaler``:
``tgrad.amp``'s on the CPU, with PyTorch's FutureWarning.)"""

from __future__ import annotations

import sys
import types
import warnings
from contextlib import AbstractContextManager
from typing import Any

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


def _make_amp() -> dict:
    """The classes of ``tgrad.cpu.amp``, PyTorch's deprecated ``torch.cpu.amp``: autocast
    with dtype bfloat16 by default, GradScaler on "cpu", warning as PyTorch does."""
    from tgrad import amp as _amp
    from tgrad import dtypes

    class autocast(_amp.autocast):  # noqa: N801 - PyTorch's name
        """``tgrad.amp.autocast("cpu", ...)`` (deprecated, as ``torch.cpu.amp.autocast``)."""

        def __init__(self, enabled: bool = True, dtype: Any = dtypes.bfloat16,
                     cache_enabled: bool = True) -> None:
            warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                          "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    class GradScaler(_amp.GradScaler):
        """``tgrad.amp.GradScaler("cpu", ...)`` (deprecated, as ``torch.cpu.amp.GradScaler``)."""

        def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                     backoff_factor: float = 0.5, growth_interval: int = 2000,
                     enabled: bool = True) -> None:
            warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                          "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                          stacklevel=2)
            super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__, cls.__qualname__ = amp.__name__, cls.__name__
    return {"autocast": autocast, "GradScaler": GradScaler}


def _amp_getattr(name: str) -> object:
    if name in amp.__all__:  # made on first use (tgrad.amp imports the tensor machinery)
        vars(amp).update(_make_amp())
        return vars(amp)[name]
    raise AttributeError(f"module {amp.__name__!r} has no attribute {name!r}")


amp = types.ModuleType(__name__ + ".amp", _make_amp.__doc__)
amp.__all__ = ["autocast", "GradScaler"]
amp.__getattr__ = _amp_getattr
sys.modules[amp.__name__] = amp  # ``import tgrad.cpu.amp`` / ``from tgrad.cpu.amp import ...``
