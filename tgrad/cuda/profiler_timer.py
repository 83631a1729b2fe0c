"""The profiler's CUDA device timer (``profile(use_cuda=True)``), registered for "cuda".

Implements ``tgrad.autograd.profiler.device.DeviceTimer`` over tgrad.cuda's runtime:

* ``record()`` enqueues a timing event on the *current* stream of the current device (tgrad's
  own stream unless a ``tgrad.cuda.stream(s)`` block is active), i.e. in stream order with
  the kernels the profiled range launches. No synchronize per op.
* ``synchronize()`` is called once, when the profile ends; ``elapsed_us(a, b)`` then reads
  ``cuEventElapsedTime`` for each recorded event against the profile's reference event.
* ``peak_gbps()``: read + write bandwidth of one device-to-device copy (256 MiB on a GPU,
  8 MiB in interpreter mode), best of 5, measured once per process and device.

Event handles are pooled per process and device: a timer hands its events back to the pool
when it is garbage collected (its profile's results are gone), so repeated profiles create
no new events. In interpreter mode (``TRITON_INTERPRET=1``) events exist too: the host runtime
records the host clock, and since interpreted kernels run synchronously the CUDA columns
then equal the host time spent in the range's kernels.

Importing this module does not import Triton; the profiler imports it lazily the first
time ``use_cuda=True`` is asked for (tgrad/autograd/profiler/device.py).
"""

from __future__ import annotations

import threading

from tgrad.autograd.profiler.device import register_device_timer
from tgrad.cuda._runtime import get_runtime_or_none
from tgrad.cuda.streams import current_stream_handle

__all__ = ["CudaTimer", "make_cuda_timer", "copy_bandwidth_gbps"]

_POOL: dict[int, list[int]] = {}  # device index -> free timing-event handles
_POOL_LOCK = threading.Lock()
_PEAK: dict[int, float] = {}     # device index -> measured copy GB/s


class CudaTimer:
    """CUDA events on tgrad's stream for one profile (see the module docstring)."""

    device = "cuda"

    def __init__(self, rt) -> None:
        self._rt = rt
        self._dev = rt.current_device()
        self._events: list[int] = []  # every handle this timer recorded (returned on del)

    def record(self) -> int:
        with _POOL_LOCK:
            free = _POOL.get(self._dev)
            h = free.pop() if free else None
        if h is None:
            h = self._rt.event_create(True)
        self._events.append(h)
        self._rt.event_record(h, current_stream_handle(self._dev))
        return h

    def synchronize(self) -> None:
        if self._events:
            self._rt.event_synchronize(self._events[-1])
        self._rt.synchronize(self._dev)

    def elapsed_us(self, start: int, end: int) -> float:
        return self._rt.event_elapsed_ms(start, end) * 1e3

    def peak_gbps(self) -> float:
        return copy_bandwidth_gbps(self._dev)

    def __del__(self) -> None:
        events = getattr(self, "_events", None)
        if events:
            with _POOL_LOCK:
                _POOL.setdefault(self._dev, []).extend(events)
            self._events = []


def copy_bandwidth_gbps(device: int | None = None) -> float:
    """GB/s (bytes read + written) of a device-to-device copy on ``device``, measured with
    CUDA events on tgrad's stream once per process (best of 5 after one warm-up)."""
    rt = get_runtime_or_none()
    if rt is None:
        raise RuntimeError("copy_bandwidth_gbps: tgrad.cuda is not available")
    dev = rt.current_device() if device is None else int(device)
    if dev in _PEAK:
        return _PEAK[dev]
    nbytes = (8 << 20) if rt.interpreted else (256 << 20)
    stream = current_stream_handle(dev)
    src = rt.malloc_async(nbytes, stream)
    dst = rt.malloc_async(nbytes, stream)
    e0, e1 = rt.event_create(True), rt.event_create(True)
    try:
        rt.memset_d8(src, 1, nbytes, stream)
        rt.memcpy_dtod(dst, src, nbytes, stream)  # warm-up
        best = float("inf")
        for _ in range(5):
            rt.event_record(e0, stream)
            rt.memcpy_dtod(dst, src, nbytes, stream)
            rt.event_record(e1, stream)
            rt.event_synchronize(e1)
            best = min(best, rt.event_elapsed_ms(e0, e1))
    finally:
        rt.event_destroy(e0)
        rt.event_destroy(e1)
        rt.free_async(src, stream)
        rt.free_async(dst, stream)
        rt.synchronize(dev)
    _PEAK[dev] = 2 * nbytes / max(best, 1e-6) / 1e6  # bytes / ms / 1e6 == GB/s
    return _PEAK[dev]


def make_cuda_timer() -> CudaTimer | None:
    """The factory registered for "cuda": a timer, or None when tgrad.cuda is unavailable."""
    rt = get_runtime_or_none()
    return None if rt is None else CudaTimer(rt)


register_device_timer("cuda", make_cuda_timer)
