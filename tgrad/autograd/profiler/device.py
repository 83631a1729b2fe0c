"""Device timing seam: how a GPU backend lends the profiler its events.

The profiler never synchronizes per op. With ``use_cuda=True`` it asks the registered timer
for an event right before and right after every recorded range (op forward, backward node,
user range, engine run) -- i.e. around the kernels that range launches on tgrad's stream --
and resolves all events once, when the profile ends: one ``synchronize()``, then
``elapsed_us(reference, event)`` for each event. A backend provides this object::

    class DeviceTimer(Protocol):
        device: str                                   # "cuda"
        def record(self) -> object: ...               # enqueue an event on the current stream
        def synchronize(self) -> None: ...            # wait until every recorded event is done
        def elapsed_us(self, start, end) -> float: ...  # device microseconds start -> end
        def peak_gbps(self) -> float | None: ...      # optional: measured copy bandwidth

and registers a factory with ``register_device_timer("cuda", factory)``; the factory returns
a timer, or None when no device is present. tgrad's own CUDA timer lives in
tgrad/cuda/profiler_timer.py and is imported (registering itself) the first time a profile
asks for ``use_cuda=True`` while ``tgrad.cuda.is_available()``. Without one,
``use_cuda=True`` warns once per process and the profile records CPU times only.
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from typing import Any, Callable, Protocol

import numpy as np

__all__ = ["DeviceTimer", "register_device_timer", "unregister_device_timer", "make_timer",
           "peak_bandwidth_gbps"]


class DeviceTimer(Protocol):
    device: str

    def record(self) -> Any: ...

    def synchronize(self) -> None: ...

    def elapsed_us(self, start: Any, end: Any) -> float: ...


_FACTORIES: dict[str, Callable[[], DeviceTimer | None]] = {}
_STATE = {"warned_no_cuda": False}
_PEAK_CACHE: dict[str, float] = {}

NO_CUDA_WARNING = ("profile(use_cuda=True): CUDA is not available in this tgrad (no device "
                   "timer registered); recording CPU times only (CUDA columns stay 0)")


def register_device_timer(device_type: str, factory: Callable[[], DeviceTimer | None]) -> None:
    """Register ``factory() -> DeviceTimer | None`` for ``device_type`` (the CUDA backend
    calls this on import)."""
    _FACTORIES[device_type] = factory


def unregister_device_timer(device_type: str) -> None:
    _FACTORIES.pop(device_type, None)


def make_timer(device_type: str = "cuda") -> DeviceTimer | None:
    """The timer for ``device_type``, or None after warning once per process."""
    factory = _FACTORIES.get(device_type)
    if factory is None and device_type == "cuda" and _cuda_available():
        # tgrad.cuda's timer (CUDA events on tgrad's stream) registers itself on import;
        # imported only now, so profiling without use_cuda never touches the CUDA runtime.
        importlib.import_module("tgrad.cuda.profiler_timer")
        factory = _FACTORIES.get(device_type)
    timer = factory() if factory is not None else None
    if timer is None and not _STATE["warned_no_cuda"]:
        _STATE["warned_no_cuda"] = True
        warnings.warn(NO_CUDA_WARNING, UserWarning, stacklevel=3)
    return timer


def _cuda_available() -> bool:
    """tgrad.cuda is present and has a runtime (a GPU, or TRITON_INTERPRET=1)."""
    if importlib.util.find_spec("tgrad.cuda") is None:
        return False
    try:
        return bool(importlib.import_module("tgrad.cuda").is_available())
    except Exception:  # noqa: BLE001 - a broken CUDA install means "no device timer"
        return False


def peak_bandwidth_gbps(timer: DeviceTimer | None = None) -> float:
    """Copy bandwidth (GB/s, read + write bytes) measured once per process and device.

    With a device timer that offers ``peak_gbps()``, that is used; otherwise a NumPy copy of
    32 MiB (beyond the caches), best of 5.
    """
    key = timer.device if timer is not None else "cpu"
    if key in _PEAK_CACHE:
        return _PEAK_CACHE[key]
    peak = None
    if timer is not None and hasattr(timer, "peak_gbps"):
        peak = timer.peak_gbps()
    if peak is None:
        src = np.ones(32 << 20, dtype=np.uint8)
        dst = np.empty_like(src)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter_ns()
            np.copyto(dst, src)
            best = min(best, time.perf_counter_ns() - t0)
        peak = 2 * src.nbytes / max(best, 1)  # bytes per ns == GB/s
    _PEAK_CACHE[key] = float(peak)
    return _PEAK_CACHE[key]
