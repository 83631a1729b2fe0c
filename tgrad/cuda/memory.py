"""Device buffers over the runtime's stream-ordered pool, and the memory statistics.

A ``Buffer`` owns one allocation; it is freed (``free_async`` on tgrad's stream) when the
last DeviceArray viewing it dies. ``memory_allocated`` counts the bytes of live buffers
(requested sizes); ``reserved`` is what the pool holds from the driver.
"""

from __future__ import annotations

import threading

from tgrad.cuda._runtime import runtime
from tgrad.cuda.runtime_api import OutOfMemoryError

_lock = threading.Lock()
_allocated: dict[int, int] = {}
_peak: dict[int, int] = {}
_total: dict[int, int] = {}  # bytes ever allocated (reset_accumulated_memory_stats)
_freed: dict[int, int] = {}  # bytes ever freed


def _fmt_bytes(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"


class Buffer:
    """``nbytes`` of device memory on ``device`` (an int index); ``owner`` keeps an external
    allocation alive (from_dlpack), in which case tgrad never frees it."""

    __slots__ = ("ptr", "nbytes", "device", "owner", "_rt", "__weakref__")

    def __init__(self, nbytes: int, device: int, ptr: int | None = None, owner=None) -> None:
        self.nbytes = int(nbytes)
        self.device = device
        self.owner = owner
        self._rt = runtime()
        if ptr is not None:
            self.ptr = ptr
            return
        self.ptr = 0
        rt = self._rt
        try:
            ptr = rt.malloc_async(max(self.nbytes, 1), rt.tgrad_stream(device))
        except OutOfMemoryError as e:
            alloc = _allocated.get(device, 0)
            reserved = rt.mem_reserved(device)
            free, total = rt.mem_get_info(device)
            raise OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {_fmt_bytes(self.nbytes)} on cuda:{device} "
                f"(total capacity {_fmt_bytes(total)}, {_fmt_bytes(free)} free); "
                f"{_fmt_bytes(alloc)} allocated by tgrad tensors, {_fmt_bytes(reserved)} "
                f"reserved by the memory pool. Free tensors you no longer need or call "
                f"tgrad.cuda.empty_cache(). ({e})") from None
        self.ptr = ptr
        with _lock:
            a = _allocated.get(device, 0) + self.nbytes
            _allocated[device] = a
            _total[device] = _total.get(device, 0) + self.nbytes
            if a > _peak.get(device, 0):
                _peak[device] = a

    def __del__(self) -> None:
        if self.owner is not None or not self.ptr:
            return
        try:
            self._rt.free_async(self.ptr, self._rt.tgrad_stream(self.device))
            with _lock:
                _allocated[self.device] = _allocated.get(self.device, 0) - self.nbytes
                _freed[self.device] = _freed.get(self.device, 0) + self.nbytes
        except Exception:  # noqa: BLE001 - interpreter shutdown: the context may be gone
            pass

    # The Triton interpreter treats a kernel argument's storage like a torch storage.
    def data_ptr(self) -> int:
        return self.ptr

    def cpu(self) -> Buffer:
        return self

    def copy_(self, other: Buffer) -> None:
        """No-op: interpreter-mode buffers already are host memory."""


def memory_allocated(device: int) -> int:
    return _allocated.get(device, 0)


def max_memory_allocated(device: int) -> int:
    return _peak.get(device, 0)


def max_memory_reserved(device: int) -> int:
    """Peak of the bytes the pool held from the driver (the runtime tracks it: the driver's
    RESERVED_MEM_HIGH on a GPU)."""
    return runtime().mem_reserved_peak(device)


def reset_peak_memory_stats(device: int) -> None:
    """Both peaks (tensor bytes and reserved bytes) back to their current values."""
    with _lock:
        _peak[device] = _allocated.get(device, 0)
    runtime().reset_mem_peaks(device)


def memory_stats(device: int) -> dict[str, int]:
    """The statistics tgrad tracks, under PyTorch's memory_stats keys: bytes of live cuda
    tensors (current, peak, and the historical totals allocated / freed) and the bytes the
    pool holds from the driver (current and peak). PyTorch's other keys (block counts,
    pools, segments) are not tracked and are absent."""
    with _lock:
        cur = _allocated.get(device, 0)
        stats = {"allocated_bytes.all.current": cur,
                 "allocated_bytes.all.peak": _peak.get(device, 0),
                 "allocated_bytes.all.allocated": _total.get(device, 0),
                 "allocated_bytes.all.freed": _freed.get(device, 0)}
    stats["reserved_bytes.all.current"] = runtime().mem_reserved(device)
    stats["reserved_bytes.all.peak"] = max_memory_reserved(device)
    return dict(sorted(stats.items()))


def reset_accumulated_memory_stats(device: int) -> None:
    with _lock:
        _total[device] = 0
        _freed[device] = 0
