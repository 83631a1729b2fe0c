"""The contract between ``tgrad.cuda`` and the runtime under it.

Two implementations exist:

* ``tgrad.cuda.driver_runtime.DriverRuntime`` - a real GPU through NVIDIA's driver API
  (``cuda-bindings``: ``cuda.bindings.driver``), used when a CUDA driver is present.
* ``tgrad.cuda.host_runtime.HostRuntime`` - interpreter mode (``TRITON_INTERPRET=1``): the
  "device" is host memory, kernels run in Triton's interpreter, streams are in-order and
  synchronous, events read a host clock.

Everything above this module (``tgrad.cuda``'s public API, DeviceArray, the Triton backend)
talks to the runtime only through the methods below. Handles (streams, events) are opaque
Python ints; device pointers are ints (virtual addresses; host addresses in interpreter mode).

Rules every implementation follows:

* Device indices are 0-based ints; ``set_device`` makes a device current for the calling
  thread (the driver runtime retains and sets the device's primary context).
* Each device has ONE tgrad stream (``tgrad_stream(device)``), created lazily, on which tgrad
  issues every launch, copy, memset, alloc and free. User streams come from
  ``stream_create``.
* Memory is stream-ordered: ``malloc_async``/``free_async`` use the device's default memory
  pool (``cuMemAllocAsync``/``cuMemFreeAsync``) whose release threshold the runtime raises to
  UINT64_MAX at first use, so freed blocks are reused instead of returned to the driver
  (no hand-written caching allocator). ``empty_cache`` trims the pool
  (``cuMemPoolTrimTo(pool, 0)`` after a synchronize).
* Out of memory: ``malloc_async`` raises ``OutOfMemoryError`` (defined here); tgrad.cuda
  re-raises it with the requested size and the allocated/reserved bytes.
* Host copies: ``memcpy_htod`` returns once the host buffer may be reused;
  ``memcpy_dtoh`` returns once ``dst`` holds the data (it synchronizes the stream).
  Host buffers are C-contiguous NumPy arrays.
* CUDA graphs: ``stream_begin_capture``/``stream_end_capture`` (cuStreamBeginCapture /
  cuStreamEndCapture), ``graph_instantiate``/``graph_launch``/``graph_exec_destroy``/
  ``graph_destroy``, ``stream_is_capturing``. While a stream captures, host syncs and
  device-to-host copies raise ``CaptureError`` (defined here). Interpreter mode has no graphs.
* Other errors raise ``RuntimeError`` whose message names the driver call and its error name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


class OutOfMemoryError(RuntimeError):
    """CUDA out of memory (``tgrad.cuda.OutOfMemoryError``; torch.cuda.OutOfMemoryError)."""


class CaptureError(RuntimeError):
    """An operation that cannot be captured into a CUDA graph was issued while a stream
    was capturing (a host sync, a device-to-host copy)."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"CUDA error: operation not permitted when stream is capturing: {what} cannot be "
            "recorded into a CUDA graph. Do it outside the tgrad.cuda.graph(...) block (for "
            "example read the loss with .item() after g.replay()), or keep the value on the "
            "device.")


@dataclass
class CaptureState:
    """What a runtime tracks while a stream captures: pointers allocated during the capture
    (``allocs``), frees of older memory postponed until the graph is reset (``deferred``)
    and pinned host buffers that captured host-to-device copies read (``pinned``)."""

    device: int
    allocs: set = field(default_factory=set)
    deferred: list = field(default_factory=list)
    pinned: list = field(default_factory=list)


@dataclass(frozen=True)
class DeviceProperties:
    """What ``tgrad.cuda.get_device_properties`` returns (torch.cuda's field names)."""

    name: str
    major: int
    minor: int
    total_memory: int            # bytes
    multi_processor_count: int
    warp_size: int = 32
    l2_cache_size: int = 0       # bytes
    max_threads_per_multi_processor: int = 2048
    shared_memory_per_block_optin: int = 0  # bytes

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count}, "
                f"L2_cache_size={self.l2_cache_size // (1 << 20)}MB)")


@runtime_checkable
class DeviceRuntime(Protocol):
    """What a tgrad CUDA runtime provides. All methods may be called from any thread."""

    #: short name shown by ``python -m tgrad info``: "driver" or "interpreter"
    name: str
    #: True when kernels run in Triton's interpreter over host memory
    interpreted: bool

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int: ...
    def get_device_properties(self, device: int) -> DeviceProperties: ...
    def set_device(self, device: int) -> None: ...
    def current_device(self) -> int: ...
    def synchronize(self, device: int) -> None:
        """Wait for all work on ``device`` (``cuCtxSynchronize``)."""

    # ---------------------------------------------------------------- streams
    def tgrad_stream(self, device: int) -> int:
        """The stream tgrad launches on for ``device`` (created once, never destroyed)."""

    def stream_create(self, device: int, priority: int = 0) -> int: ...
    def stream_destroy(self, stream: int) -> None: ...
    def stream_synchronize(self, stream: int) -> None: ...
    def stream_query(self, stream: int) -> bool:
        """True when all work on ``stream`` has completed."""

    def stream_wait_event(self, stream: int, event: int) -> None: ...

    # ---------------------------------------------------------------- events
    def event_create(self, enable_timing: bool = False) -> int: ...
    def event_destroy(self, event: int) -> None: ...
    def event_record(self, event: int, stream: int) -> None: ...
    def event_synchronize(self, event: int) -> None: ...
    def event_query(self, event: int) -> bool: ...
    def event_elapsed_ms(self, start: int, end: int) -> float:
        """Milliseconds between two recorded, completed timing events."""

    # ---------------------------------------------------------------- memory
    def malloc_async(self, nbytes: int, stream: int) -> int:
        """Device pointer to ``nbytes`` (>= 1) from the default pool, ordered on ``stream``.
        Raises OutOfMemoryError when the device has no room."""

    def free_async(self, ptr: int, stream: int) -> None: ...
    def mem_reserved(self, device: int) -> int:
        """Bytes the device's pool holds from the driver (RESERVED_MEM_CURRENT)."""

    def mem_reserved_peak(self, device: int) -> int:
        """Peak of ``mem_reserved`` since the start or ``reset_mem_peaks``
        (RESERVED_MEM_HIGH)."""

    def reset_mem_peaks(self, device: int) -> None:
        """Set the pool's high watermarks to their current values (RESERVED_MEM_HIGH and
        USED_MEM_HIGH set to 0, which the driver turns into the current value)."""

    def mem_get_info(self, device: int) -> tuple[int, int]:
        """(free, total) bytes of the device."""

    def empty_cache(self, device: int) -> None:
        """Return unused pool memory to the driver (cuMemPoolTrimTo 0)."""

    # ---------------------------------------------------------------- copies and fills
    def memcpy_htod(self, dst: int, src: np.ndarray, stream: int) -> None: ...
    def memcpy_dtoh(self, dst: np.ndarray, src: int, stream: int) -> None: ...
    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None: ...
    def memset_d8(self, dst: int, value: int, nbytes: int, stream: int) -> None: ...

    # ---------------------------------------------------------------- CUDA graphs
    # (the interpreter runtime raises RuntimeError from stream_begin_capture)
    def stream_begin_capture(self, stream: int, mode: str = "global") -> None: ...
    def stream_end_capture(self, stream: int) -> tuple[int, CaptureState]: ...
    def stream_is_capturing(self, stream: int) -> bool: ...
    def release_capture_state(self, cap: CaptureState, stream: int) -> None: ...
    def graph_instantiate(self, graph: int, device: int) -> int: ...
    def graph_launch(self, graph_exec: int, stream: int) -> None: ...
    def graph_exec_destroy(self, graph_exec: int) -> None: ...
    def graph_destroy(self, graph: int) -> None: ...
