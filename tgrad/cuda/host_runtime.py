"""Interpreter-mode runtime (``TRITON_INTERPRET=1``): the ``cuda`` device emulated in host
memory. Implements ``tgrad.cuda.runtime_api.DeviceRuntime``.

CUDA graphs are not available here: ``stream_begin_capture`` raises a RuntimeError saying so
(kernels run synchronously in the interpreter; there is nothing to record and replay).

Allocations are NumPy byte buffers kept alive in a table keyed by address; kernels run in
Triton's interpreter, which reads and writes those addresses directly. Work is synchronous,
so streams are always idle and an event records the host clock when it is recorded.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
import time

import numpy as np

from tgrad.cuda.runtime_api import CaptureState, DeviceProperties, OutOfMemoryError

# Emulated capacity; TGRAD_INTERPRET_MEMORY (bytes) overrides it (tests use a small one).
_DEFAULT_CAPACITY = 8 << 30


class HostRuntime:
    name = "interpreter"
    interpreted = True

    def __init__(self, capacity: int | None = None) -> None:
        env = os.environ.get("TGRAD_INTERPRET_MEMORY")
        self.capacity = int(env) if env else (capacity or _DEFAULT_CAPACITY)
        self._buffers: dict[int, np.ndarray] = {}
        self._in_use = 0        # emulated reserved bytes (== bytes of live buffers)
        self._in_use_peak = 0   # their peak since the start or reset_mem_peaks
        self._ids = itertools.count(1)
        self._events: dict[int, float | None] = {}
        self._streams: set[int] = set()
        self._tgrad_stream = next(self._ids)
        self._streams.add(self._tgrad_stream)
        self._local = threading.local()
        self._lock = threading.Lock()
        try:  # bfloat16 and float8 conversions that round as the GPU's; two of the
            # interpreter's slow paths that change no result made fast (see the modules)
            from tgrad.kernels import interpreter_bf16, interpreter_fp8, interpreter_speedups
            interpreter_bf16.install()
            interpreter_fp8.install()
            interpreter_speedups.install()
        except ImportError:  # no Triton: nothing runs kernels here anyway
            pass

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        return 1

    def get_device_properties(self, device: int) -> DeviceProperties:
        self._check(device)
        return DeviceProperties(name="Triton interpreter (host memory)", major=9, minor=0,
                                total_memory=self.capacity, multi_processor_count=1,
                                warp_size=32, l2_cache_size=0)

    def set_device(self, device: int) -> None:
        self._check(device)
        self._local.device = device

    def current_device(self) -> int:
        return getattr(self._local, "device", 0)

    def synchronize(self, device: int) -> None:
        self._check(device)

    def _check(self, device: int) -> None:
        if device != 0:
            raise RuntimeError(f"CUDA error: invalid device ordinal {device} (interpreter mode "
                               f"emulates one device, cuda:0)")

    # ---------------------------------------------------------------- streams
    def tgrad_stream(self, device: int) -> int:
        self._check(device)
        return self._tgrad_stream

    def stream_create(self, device: int, priority: int = 0) -> int:
        self._check(device)
        s = next(self._ids)
        self._streams.add(s)
        return s

    def stream_destroy(self, stream: int) -> None:
        self._streams.discard(stream)

    def stream_synchronize(self, stream: int) -> None:
        pass

    def stream_query(self, stream: int) -> bool:
        return True

    def stream_wait_event(self, stream: int, event: int) -> None:
        pass

    # ---------------------------------------------------------------- events
    def event_create(self, enable_timing: bool = False) -> int:
        e = next(self._ids)
        self._events[e] = None
        return e

    def event_destroy(self, event: int) -> None:
        self._events.pop(event, None)

    def event_record(self, event: int, stream: int) -> None:
        self._events[event] = time.perf_counter()

    def event_synchronize(self, event: int) -> None:
        pass

    def event_query(self, event: int) -> bool:
        return True

    def event_elapsed_ms(self, start: int, end: int) -> float:
        t0, t1 = self._events.get(start), self._events.get(end)
        if t0 is None or t1 is None:
            raise RuntimeError("CUDA error: device not ready (elapsed_time needs both events "
                               "recorded; call record() on each first)")
        return (t1 - t0) * 1e3

    # ---------------------------------------------------------------- memory
    def malloc_async(self, nbytes: int, stream: int) -> int:
        nbytes = max(int(nbytes), 1)
        with self._lock:
            if self._in_use + nbytes > self.capacity:
                raise OutOfMemoryError(
                    f"CUDA out of memory (interpreter capacity {self.capacity} bytes)")
            # 256-byte alignment like cudaMalloc: over-allocate and align the address.
            buf = np.empty(nbytes + 256, np.uint8)
            addr = buf.ctypes.data
            ptr = (addr + 255) & ~255
            self._buffers[ptr] = buf
            self._in_use += nbytes
            self._in_use_peak = max(self._in_use_peak, self._in_use)
        return ptr

    def free_async(self, ptr: int, stream: int) -> None:
        with self._lock:
            buf = self._buffers.pop(ptr, None)
            if buf is not None:
                self._in_use -= buf.size - 256

    def mem_reserved(self, device: int) -> int:
        return self._in_use

    def mem_reserved_peak(self, device: int) -> int:
        return self._in_use_peak

    def reset_mem_peaks(self, device: int) -> None:
        with self._lock:
            self._in_use_peak = self._in_use

    def mem_get_info(self, device: int) -> tuple[int, int]:
        return self.capacity - self._in_use, self.capacity

    def empty_cache(self, device: int) -> None:
        pass

    # ---------------------------------------------------------------- copies and fills
    def memcpy_htod(self, dst: int, src: np.ndarray, stream: int) -> None:
        src = np.asarray(src, order="C")
        if src.nbytes:
            ctypes.memmove(dst, src.ctypes.data, src.nbytes)

    def memcpy_dtoh(self, dst: np.ndarray, src: int, stream: int) -> None:
        if not dst.flags.c_contiguous:
            raise ValueError("memcpy_dtoh: destination must be C-contiguous")
        if dst.nbytes:
            ctypes.memmove(dst.ctypes.data, src, dst.nbytes)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        if nbytes:
            ctypes.memmove(dst, src, nbytes)

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: int) -> None:
        if nbytes:
            ctypes.memset(dst, value, nbytes)

    # ---------------------------------------------------------------- CUDA graphs
    GRAPHS_UNAVAILABLE = (
        "CUDA graphs are not available in interpreter mode (TRITON_INTERPRET=1): kernels run "
        "synchronously in Triton's interpreter on the host, so there is no GPU work to record "
        "and replay. Run the step eagerly (without tgrad.cuda.graph), or use a real GPU.")

    def stream_begin_capture(self, stream: int, mode: str = "global") -> None:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)

    def stream_end_capture(self, stream: int) -> tuple[int, CaptureState]:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)

    def stream_is_capturing(self, stream: int) -> bool:
        return False

    def release_capture_state(self, cap: CaptureState, stream: int) -> None:
        pass

    def graph_instantiate(self, graph: int, device: int) -> int:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)

    def graph_exec_destroy(self, graph_exec: int) -> None:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)

    def graph_destroy(self, graph: int) -> None:
        raise RuntimeError(self.GRAPHS_UNAVAILABLE)
