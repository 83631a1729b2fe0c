"""The real-GPU runtime: ``DeviceRuntime`` over NVIDIA's driver API (``cuda-bindings``).

Design (the contract is in ``runtime_api.py``):

* Nothing happens at import: ``cuda.bindings`` is imported and ``cuInit`` called on first use.
  ``why_unavailable()`` answers "why can't I use the GPU" in one line and never raises.
* One primary context per device (``cuDevicePrimaryCtxRetain``; the same context PyTorch,
  CuPy and Triton's own loader use). Each thread has a current device (0 until
  ``set_device``); its primary context is kept current on that thread, because Triton loads
  modules into and launches in the thread's current context. Work for another device runs
  with that device's context pushed for the duration of the call.
* One tgrad stream per device (non-blocking: it never waits on the legacy default stream).
* Memory: ``cuMemAllocAsync``/``cuMemFreeAsync`` on the device's default memory pool, whose
  release threshold is raised to UINT64_MAX at first use so freed blocks stay in the pool and
  are reused by later allocations (the driver's pool is the caching allocator). On out of
  memory the pool is trimmed after a device synchronize and the allocation retried once, then
  ``OutOfMemoryError`` is raised. Small blocks (at most ``SMALL_BLOCK_MAX`` bytes, rounded
  up to ``SMALL_BLOCK_ROUND``) freed on a tgrad stream outside any capture are kept on a
  Python free list per (stream, size) and handed out again without a driver call, as the
  pool would (reuse in the freeing stream's order); ``empty_cache`` and out of memory give
  them back to the pool first.
* Host copies synchronize the stream (as PyTorch's blocking ``copy_`` does), so a host buffer
  may be reused, or read, as soon as the call returns.
* CUDA graphs: ``stream_begin_capture``/``stream_end_capture`` capture tgrad's stream into a
  graph (stream-ordered allocations become graph memory nodes; the graph is instantiated with
  AUTO_FREE_ON_LAUNCH so allocations that outlive the capture - static outputs - stay at the
  same address on every replay). While a stream captures, host syncs (``synchronize``,
  ``stream_synchronize``, ``event_synchronize``, ``memcpy_dtoh``) raise ``CaptureError``
  before calling the driver; ``memcpy_htod`` copies its source into pinned memory owned by
  the capture (the copy is replayed from it); frees of memory allocated before the capture
  are deferred and handed to the graph, which frees them when it is reset.
* Every failing driver call raises ``CudaDriverError`` (a ``RuntimeError``) naming the call,
  the error name and the driver's description of it.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .runtime_api import CaptureError, CaptureState, DeviceProperties, OutOfMemoryError

UINT64_MAX = (1 << 64) - 1
CUDA_SUCCESS = 0
CUDA_ERROR_OUT_OF_MEMORY = 2
CUDA_ERROR_NOT_READY = 600
CAPTURE_MODES = {"global": 0, "thread_local": 1, "relaxed": 2}  # CUstreamCaptureMode
AUTO_FREE_ON_LAUNCH = 1  # CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
# The small-block free lists (module docstring): a cuMemAllocAsync + cuMemFreeAsync pair
# through cuda-bindings cost about 15 us of host time per tiny op on the H200 machine
# (perf/bench_launch.py --profile); a list pop and append cost well under 1 us.
SMALL_BLOCK_MAX = 1 << 20       # bytes; larger blocks always go to the driver's pool
SMALL_BLOCK_ROUND = 512         # sizes rounded up to this, so close sizes share a list
SMALL_CACHE_BYTES = 256 << 20   # at most this much kept on the lists (per process)

_bindings_lock = threading.Lock()
_bindings: Any = None            # the cuda.bindings.driver module once imported
_bindings_error: str | None = None
_probe_lock = threading.Lock()
_probe_done = False
_probe_reason: str | None = None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def load_bindings() -> Any:
    """The ``cuda.bindings.driver`` module (``cuda.cuda`` on cuda-python < 12.6), or None.

    Import errors are remembered (see ``why_unavailable``), never raised."""
    global _bindings, _bindings_error
    if _bindings is not None or _bindings_error is not None:
        return _bindings
    with _bindings_lock:
        if _bindings is None and _bindings_error is None:
            try:
                from cuda.bindings import driver as cu
            except ImportError:
                try:
                    from cuda import cuda as cu  # cuda-python 11.x / 12.0-12.5 layout
                except ImportError as exc:
                    _bindings_error = ("cuda-bindings is not installed "
                                       f"(pip install cuda-bindings): {_first_line(exc)}")
                    return None
            except Exception as exc:  # a broken installation must not break `import tgrad`
                _bindings_error = f"cuda-bindings failed to import: {_first_line(exc)}"
                return None
            _bindings = cu
    return _bindings


def error_name(code: int) -> str:
    """``CUDA_ERROR_...`` name of a CUresult code (works without a driver)."""
    cu = load_bindings()
    if cu is not None:
        try:
            err, name = cu.cuGetErrorName(cu.CUresult(int(code)))
            if int(err) == CUDA_SUCCESS and name:
                return name.decode() if isinstance(name, bytes) else str(name)
        except Exception:
            pass
        try:
            return cu.CUresult(int(code)).name
        except Exception:
            pass
    return f"CUresult {int(code)}"


def error_string(code: int) -> str | None:
    """The driver's description of a CUresult code, or None when no driver can say."""
    cu = load_bindings()
    if cu is None:
        return None
    try:
        err, text = cu.cuGetErrorString(cu.CUresult(int(code)))
    except Exception:
        return None
    if int(err) != CUDA_SUCCESS or not text:
        return None
    return text.decode() if isinstance(text, bytes) else str(text)


class CudaDriverError(RuntimeError):
    """A CUDA driver call failed. ``call`` is the API name, ``code`` the CUresult value."""

    def __init__(self, call: str, code: int, detail: str = "") -> None:
        self.call = call
        self.code = int(code)
        self.name = error_name(code)
        text = error_string(code)
        msg = f"CUDA driver error: {call} failed with {self.name} ({int(code)})"
        if text:
            msg += f": {text}"
        if detail:
            msg += f" [{detail}]"
        super().__init__(msg)


def check(call: str, ret: Any, detail: str = "") -> Any:
    """Unpack a cuda-bindings result tuple ``(CUresult, *outputs)``.

    Raises ``CudaDriverError`` unless the CUresult is CUDA_SUCCESS; returns None, the single
    output, or the tuple of outputs."""
    if isinstance(ret, tuple):
        err, out = ret[0], ret[1:]
    else:
        err, out = ret, ()
    if int(err) != CUDA_SUCCESS:
        raise CudaDriverError(call, int(err), detail)
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def why_unavailable() -> str | None:
    """One line saying why no CUDA device can be used here, or None when one can.

    The first call imports cuda-bindings and calls ``cuInit(0)`` and ``cuDeviceGetCount``;
    the answer is cached. Never raises."""
    global _probe_done, _probe_reason
    if _probe_done:
        return _probe_reason
    with _probe_lock:
        if not _probe_done:
            _probe_reason = _probe()
            _probe_done = True
    return _probe_reason


def _probe(cu: Any = None) -> str | None:
    """None when ``cu`` (default: cuda-bindings) can init the driver and sees a device,
    else the one-line reason."""
    if cu is None:
        cu = load_bindings()
        if cu is None:
            return _bindings_error
    try:
        err = cu.cuInit(0)[0]
    except Exception as exc:  # cuda-bindings >= 13 raises when libcuda.so.1 is missing
        return f"no NVIDIA driver: libcuda.so.1 could not be loaded ({_first_line(exc)})"
    if int(err) != CUDA_SUCCESS:
        text = error_string(err)
        return f"cuInit failed with {error_name(err)}" + (f" ({text})" if text else "")
    try:
        err, count = cu.cuDeviceGetCount()
    except Exception as exc:
        return f"cuDeviceGetCount raised {_first_line(exc)}"
    if int(err) != CUDA_SUCCESS:
        return f"cuDeviceGetCount failed with {error_name(err)}"
    if int(count) == 0:
        return "the NVIDIA driver reports no CUDA device"
    return None


def is_available() -> bool:
    return why_unavailable() is None


def _fmt_bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} bytes"


class DriverRuntime:
    """``DeviceRuntime`` on a real GPU through ``cuda.bindings.driver``.

    ``bindings`` replaces the cuda-bindings module (tests pass a fake). Stream and event
    handles are the driver's ``CUstream``/``CUevent`` addresses as ints; pointers are
    ``CUdeviceptr`` values as ints."""

    name = "driver"
    interpreted = False

    def __init__(self, bindings: Any = None) -> None:
        self._cu_override = bindings
        self._cu: Any = None
        self._lock = threading.RLock()
        self._tls = threading.local()
        self._count: int | None = None
        self._ctx: dict[int, Any] = {}          # device -> primary CUcontext (retained)
        self._pools: dict[int, Any] = {}        # device -> default CUmemoryPool (configured)
        self._streams: dict[int, int] = {}      # device -> tgrad stream handle
        self._stream_device: dict[int, int] = {}  # stream handle -> device
        self._props: dict[int, DeviceProperties] = {}
        self._capture: dict[int, CaptureState] = {}  # capturing stream -> its state
        self._tgrad_streams: set[int] = set()   # the values of _streams
        self._small_free: dict[tuple[int, int], list[int]] = {}  # (stream, size) -> ptrs
        self._small_size: dict[int, int] = {}   # small block ptr -> its rounded size
        self._small_cached = 0                  # bytes on the free lists

    # ------------------------------------------------------------------ setup
    def _init(self) -> Any:
        """cuInit once; returns the bindings module. Raises RuntimeError when unusable."""
        cu = self._cu
        if cu is not None:
            return cu
        with self._lock:
            if self._cu is None:
                if self._cu_override is not None:
                    cu = self._cu_override
                    reason = _probe(cu)
                    if reason is not None:
                        raise RuntimeError(reason)
                else:
                    reason = why_unavailable()
                    if reason is not None:
                        raise RuntimeError(reason)
                    cu = load_bindings()
                self._count = int(check("cuDeviceGetCount", cu.cuDeviceGetCount()))
                self._cu = cu
        return self._cu

    def _check_device(self, device: int, what: str) -> int:
        self._init()
        if not isinstance(device, int) or isinstance(device, bool):
            raise TypeError(f"{what}: device index must be an int, got {type(device).__name__}")
        if not 0 <= device < (self._count or 0):
            raise RuntimeError(f"{what}: invalid device ordinal {device} "
                               f"(this machine has {self._count} CUDA device(s))")
        return device

    def _primary_ctx(self, device: int) -> Any:
        ctx = self._ctx.get(device)
        if ctx is None:
            with self._lock:
                ctx = self._ctx.get(device)
                if ctx is None:
                    cu = self._cu
                    dev = check("cuDeviceGet", cu.cuDeviceGet(device))
                    ctx = check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(dev))
                    self._ctx[device] = ctx
        return ctx

    def _thread_device(self) -> int:
        """This thread's current device, binding device 0's context on first use."""
        dev = getattr(self._tls, "device", None)
        if dev is None:
            self.set_device(0)
            dev = 0
        return dev

    def _enter(self, device: int) -> bool:
        """Make ``device``'s context current for one call; True when a context was pushed."""
        if self._thread_device() == device:
            return False
        ctx = self._primary_ctx(self._check_device(device, "tgrad.cuda"))
        check("cuCtxPushCurrent", self._cu.cuCtxPushCurrent(ctx))
        return True

    def _leave(self, pushed: bool) -> None:
        if pushed:
            check("cuCtxPopCurrent", self._cu.cuCtxPopCurrent())

    def _device_of_stream(self, stream: int) -> int:
        dev = self._stream_device.get(stream)
        return self._thread_device() if dev is None else dev

    def _on_stream_device(self, stream: int, call: str, fn: Any, *args: Any) -> Any:
        """check(call, fn(*args)) with the context of ``stream``'s device current."""
        pushed = self._enter(self._device_of_stream(stream))
        try:
            return check(call, fn(*args))
        finally:
            self._leave(pushed)

    # ---------------------------------------------------------------- devices
    def device_count(self) -> int:
        self._init()
        return int(self._count or 0)

    def get_device_properties(self, device: int) -> DeviceProperties:
        props = self._props.get(device)
        if props is not None:
            return props
        self._check_device(device, "get_device_properties")
        cu = self._cu
        dev = check("cuDeviceGet", cu.cuDeviceGet(device))
        a = cu.CUdevice_attribute

        def attr(name: str) -> int:
            return int(check(f"cuDeviceGetAttribute({name})",
                             cu.cuDeviceGetAttribute(getattr(a, name), dev)))

        raw = check("cuDeviceGetName", cu.cuDeviceGetName(256, dev))
        name = (raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw))
        props = DeviceProperties(
            name=name.split("\x00", 1)[0].strip(),
            major=attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR"),
            minor=attr("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR"),
            total_memory=int(check("cuDeviceTotalMem", cu.cuDeviceTotalMem(dev))),
            multi_processor_count=attr("CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT"),
            warp_size=attr("CU_DEVICE_ATTRIBUTE_WARP_SIZE"),
            l2_cache_size=attr("CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE"),
            max_threads_per_multi_processor=attr(
                "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR"),
            shared_memory_per_block_optin=attr(
                "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
        )
        self._props[device] = props
        return props

    def set_device(self, device: int) -> None:
        self._check_device(device, "set_device")
        ctx = self._primary_ctx(device)
        check("cuCtxSetCurrent", self._cu.cuCtxSetCurrent(ctx))
        self._tls.device = device

    def current_device(self) -> int:
        self._init()
        return self._thread_device()

    def _no_capture(self, what: str, stream: int | None = None, device: int | None = None
                    ) -> None:
        """Raise CaptureError when ``stream`` (or any stream of ``device``) is capturing."""
        for s, st in self._capture.items():
            if s == stream or (stream is None and (device is None or st.device == device)):
                raise CaptureError(what)

    def synchronize(self, device: int) -> None:
        if self._capture:
            self._no_capture("synchronize() (a device-wide host sync)", device=device)
        pushed = self._enter(device)
        try:
            check("cuCtxSynchronize", self._cu.cuCtxSynchronize(), f"device {device}")
        finally:
            self._leave(pushed)

    # ---------------------------------------------------------------- streams
    def tgrad_stream(self, device: int) -> int:
        s = self._streams.get(device)
        if s is not None:
            return s
        with self._lock:
            s = self._streams.get(device)
            if s is None:
                s = self.stream_create(device)
                self._streams[device] = s
                self._tgrad_streams.add(s)
        return s

    def stream_create(self, device: int, priority: int = 0) -> int:
        self._check_device(device, "stream_create")
        cu = self._cu
        flags = int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING)
        pushed = self._enter(device)
        try:
            if priority:
                s = check("cuStreamCreateWithPriority",
                          cu.cuStreamCreateWithPriority(flags, int(priority)))
            else:
                s = check("cuStreamCreate", cu.cuStreamCreate(flags))
        finally:
            self._leave(pushed)
        handle = int(s)
        self._stream_device[handle] = device
        return handle

    def stream_destroy(self, stream: int) -> None:
        self._init()
        if stream in self._streams.values():
            raise RuntimeError("stream_destroy: the tgrad stream of a device is never destroyed")
        check("cuStreamDestroy", self._cu.cuStreamDestroy(self._cu.CUstream(stream)))
        self._stream_device.pop(stream, None)

    def stream_synchronize(self, stream: int) -> None:
        if self._capture:
            self._no_capture("Stream.synchronize() (a host sync)", stream)
        self._init()
        check("cuStreamSynchronize", self._cu.cuStreamSynchronize(self._cu.CUstream(stream)))

    def _query(self, call: str, ret: Any) -> bool:
        """``ret`` of cuStreamQuery / cuEventQuery: False while NOT_READY, else checked."""
        err = ret[0]
        if int(err) == CUDA_ERROR_NOT_READY:
            return False
        check(call, (err,))
        return True

    def stream_query(self, stream: int) -> bool:
        self._init()
        return self._query("cuStreamQuery", self._cu.cuStreamQuery(self._cu.CUstream(stream)))

    def stream_wait_event(self, stream: int, event: int) -> None:
        self._init()
        cu = self._cu
        check("cuStreamWaitEvent", cu.cuStreamWaitEvent(cu.CUstream(stream), cu.CUevent(event), 0))

    # ---------------------------------------------------------------- events
    def event_create(self, enable_timing: bool = False) -> int:
        """An event of the calling thread's current device."""
        self._init()
        self._thread_device()
        f = self._cu.CUevent_flags
        flags = f.CU_EVENT_DEFAULT if enable_timing else f.CU_EVENT_DISABLE_TIMING
        return int(check("cuEventCreate", self._cu.cuEventCreate(int(flags))))

    def event_destroy(self, event: int) -> None:
        self._init()
        check("cuEventDestroy", self._cu.cuEventDestroy(self._cu.CUevent(event)))

    def event_record(self, event: int, stream: int) -> None:
        self._init()
        cu = self._cu
        check("cuEventRecord", cu.cuEventRecord(cu.CUevent(event), cu.CUstream(stream)))

    def event_synchronize(self, event: int) -> None:
        if self._capture:
            self._no_capture("Event.synchronize() (a host sync)")
        self._init()
        check("cuEventSynchronize", self._cu.cuEventSynchronize(self._cu.CUevent(event)))

    def event_query(self, event: int) -> bool:
        self._init()
        return self._query("cuEventQuery", self._cu.cuEventQuery(self._cu.CUevent(event)))

    def event_elapsed_ms(self, start: int, end: int) -> float:
        self._init()
        cu = self._cu
        return float(check("cuEventElapsedTime",
                           cu.cuEventElapsedTime(cu.CUevent(start), cu.CUevent(end))))

    # ---------------------------------------------------------------- memory
    def _pool(self, device: int) -> Any:
        """The device's default pool, its release threshold raised to UINT64_MAX once."""
        pool = self._pools.get(device)
        if pool is None:
            with self._lock:
                pool = self._pools.get(device)
                if pool is None:
                    cu = self._cu
                    dev = check("cuDeviceGet", cu.cuDeviceGet(device))
                    supported = check("cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED)",
                                      cu.cuDeviceGetAttribute(
                                          cu.CUdevice_attribute
                                          .CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev))
                    if not int(supported):
                        raise RuntimeError(
                            f"tgrad.cuda: device {device} does not support stream-ordered "
                            "memory pools (cuMemAllocAsync); tgrad needs CUDA 11.2+ and a "
                            "driver/GPU with memory pool support")
                    pool = check("cuDeviceGetDefaultMemPool", cu.cuDeviceGetDefaultMemPool(dev))
                    check("cuMemPoolSetAttribute(RELEASE_THRESHOLD)",
                          cu.cuMemPoolSetAttribute(
                              pool, cu.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                              cu.cuuint64_t(UINT64_MAX)))
                    self._pools[device] = pool
        return pool

    def malloc_async(self, nbytes: int, stream: int) -> int:
        want = int(nbytes)
        if want < 1:
            raise ValueError(f"malloc_async: nbytes must be >= 1, got {nbytes}")
        small = (want <= SMALL_BLOCK_MAX and not self._capture
                 and stream in self._tgrad_streams)
        if small:
            nbytes = -(-want // SMALL_BLOCK_ROUND) * SMALL_BLOCK_ROUND
            blocks = self._small_free.get((stream, nbytes))
            if blocks:
                try:
                    ptr = blocks.pop()  # (another thread may have emptied the list)
                except IndexError:
                    pass
                else:
                    self._small_cached -= nbytes
                    return ptr
        self._init()
        cu = self._cu
        device = self._device_of_stream(stream)
        pushed = self._enter(device)
        try:
            self._pool(device)
            err, ptr = cu.cuMemAllocAsync(int(nbytes), cu.CUstream(stream))
            cap = self._capture.get(stream) if self._capture else None
            if int(err) == CUDA_ERROR_OUT_OF_MEMORY and cap is None:
                # Free blocks stay in the pool (release threshold UINT64_MAX); hand them back
                # to the driver once pending frees have completed, then retry once.
                self.empty_cache(device)
                err, ptr = cu.cuMemAllocAsync(int(nbytes), cu.CUstream(stream))
            if int(err) == CUDA_ERROR_OUT_OF_MEMORY:
                if cap is None:
                    # a failed allocation can leave the pool grown by what it mapped before
                    # failing (on the H200 that held the GPU's memory and made other
                    # processes' module loads fail with out of memory): hand it back
                    self.empty_cache(device)
                raise OutOfMemoryError(
                    f"CUDA out of memory. Tried to allocate {_fmt_bytes(want)} on "
                    f"device {device} (cuMemAllocAsync returned CUDA_ERROR_OUT_OF_MEMORY "
                    "after trimming the memory pool)")
            check("cuMemAllocAsync", (err,), f"{int(nbytes)} bytes on device {device}")
        finally:
            self._leave(pushed)
        ptr = int(ptr)
        if cap is not None:
            cap.allocs.add(ptr)
        elif small:
            self._small_size[ptr] = nbytes
        return ptr

    def free_async(self, ptr: int, stream: int) -> None:
        if self._capture:
            cap = self._capture.get(stream)
            if cap is not None:
                if ptr in cap.allocs:
                    cap.allocs.discard(ptr)   # freed inside the capture: a graph free node
                else:
                    cap.deferred.append(ptr)  # allocated before: the graph may still use it
                    return
        size = self._small_size.get(ptr)
        if size is not None:
            if (not self._capture and stream in self._tgrad_streams
                    and self._small_cached + size <= SMALL_CACHE_BYTES):
                self._small_free.setdefault((stream, size), []).append(ptr)
                self._small_cached += size
                return
            del self._small_size[ptr]
        self._init()
        cu = self._cu
        self._on_stream_device(stream, "cuMemFreeAsync", cu.cuMemFreeAsync,
                               cu.CUdeviceptr(ptr), cu.CUstream(stream))

    def _pool_attribute(self, device: int, name: str) -> int:
        """The value of the device pool's ``CU_MEMPOOL_ATTR_<name>`` (a cuuint64_t one)."""
        cu = self._cu
        pushed = self._enter(device)
        try:
            val = check(f"cuMemPoolGetAttribute({name})",
                        cu.cuMemPoolGetAttribute(
                            self._pool(device),
                            getattr(cu.CUmemPool_attribute, f"CU_MEMPOOL_ATTR_{name}")))
        finally:
            self._leave(pushed)
        return int(val)

    def mem_reserved(self, device: int) -> int:
        return self._pool_attribute(device, "RESERVED_MEM_CURRENT")

    def mem_reserved_peak(self, device: int) -> int:
        # the driver tracks the pool's peak itself (the small-block lists hold pool memory,
        # so they are counted in it as in RESERVED_MEM_CURRENT)
        return self._pool_attribute(device, "RESERVED_MEM_HIGH")

    def reset_mem_peaks(self, device: int) -> None:
        # 0 is the only value the driver accepts for a *_HIGH attribute: it resets the
        # watermark to the current value (as PyTorch's cudaMallocAsync backend does)
        cu = self._cu
        pushed = self._enter(device)
        try:
            pool = self._pool(device)
            for name in ("RESERVED_MEM_HIGH", "USED_MEM_HIGH"):
                check(f"cuMemPoolSetAttribute({name})",
                      cu.cuMemPoolSetAttribute(
                          pool, getattr(cu.CUmemPool_attribute, f"CU_MEMPOOL_ATTR_{name}"),
                          cu.cuuint64_t(0)))
        finally:
            self._leave(pushed)

    def mem_get_info(self, device: int) -> tuple[int, int]:
        pushed = self._enter(device)
        try:
            free, total = check("cuMemGetInfo", self._cu.cuMemGetInfo())
        finally:
            self._leave(pushed)
        return int(free), int(total)

    def empty_cache(self, device: int) -> None:
        pushed = self._enter(device)
        try:
            for key in [k for k in self._small_free if self._device_of_stream(k[0]) == device]:
                blocks = self._small_free.pop(key)
                self._small_cached -= key[1] * len(blocks)
                for p in blocks:
                    del self._small_size[p]
                    check("cuMemFreeAsync", self._cu.cuMemFreeAsync(self._cu.CUdeviceptr(p),
                                                                     self._cu.CUstream(key[0])))
            check("cuCtxSynchronize", self._cu.cuCtxSynchronize(), f"device {device}")
            check("cuMemPoolTrimTo", self._cu.cuMemPoolTrimTo(self._pool(device), 0))
        finally:
            self._leave(pushed)

    # ---------------------------------------------------------------- copies and fills
    @staticmethod
    def _host(arr: np.ndarray, what: str) -> tuple[int, int]:
        if not isinstance(arr, np.ndarray):
            raise TypeError(f"{what}: host buffer must be a numpy.ndarray, got "
                            f"{type(arr).__name__}")
        if not arr.flags.c_contiguous:
            raise ValueError(f"{what}: host buffer must be C-contiguous (shape {arr.shape}, "
                             f"strides {arr.strides}); pass np.ascontiguousarray(...)")
        return int(arr.ctypes.data), int(arr.nbytes)

    def memcpy_htod(self, dst: int, src: np.ndarray, stream: int) -> None:
        addr, nbytes = self._host(src, "memcpy_htod")
        if nbytes == 0:
            return
        self._init()
        cu = self._cu
        if self._capture and stream in self._capture:
            self._captured_htod(dst, src, nbytes, stream)
            return
        device = self._device_of_stream(stream)
        pushed = self._enter(device)
        try:
            s = cu.CUstream(stream)
            check("cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync(cu.CUdeviceptr(dst), addr, nbytes, s))
            # pageable source: wait so the caller may reuse or free it at once
            check("cuStreamSynchronize", cu.cuStreamSynchronize(s))
        finally:
            self._leave(pushed)

    def memcpy_dtoh(self, dst: np.ndarray, src: int, stream: int) -> None:
        if self._capture:
            self._no_capture("a copy from the device to the host (.item(), .numpy(), .cpu(), "
                             "printing a cuda tensor, or an op that reads cuda data on the "
                             "host)", stream)
        addr, nbytes = self._host(dst, "memcpy_dtoh")
        if not dst.flags.writeable:
            raise ValueError("memcpy_dtoh: destination array is read-only")
        if nbytes == 0:
            return
        self._init()
        cu = self._cu
        device = self._device_of_stream(stream)
        pushed = self._enter(device)
        try:
            s = cu.CUstream(stream)
            check("cuMemcpyDtoHAsync", cu.cuMemcpyDtoHAsync(addr, cu.CUdeviceptr(src), nbytes, s))
            check("cuStreamSynchronize", cu.cuStreamSynchronize(s))
        finally:
            self._leave(pushed)

    def memcpy_dtod(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        if int(nbytes) == 0:
            return
        self._init()
        cu = self._cu
        self._on_stream_device(stream, "cuMemcpyDtoDAsync", cu.cuMemcpyDtoDAsync,
                               cu.CUdeviceptr(dst), cu.CUdeviceptr(src), int(nbytes),
                               cu.CUstream(stream))

    def memset_d8(self, dst: int, value: int, nbytes: int, stream: int) -> None:
        if int(nbytes) == 0:
            return
        self._init()
        cu = self._cu
        self._on_stream_device(stream, "cuMemsetD8Async", cu.cuMemsetD8Async,
                               cu.CUdeviceptr(dst), int(value) & 0xFF, int(nbytes),
                               cu.CUstream(stream))

    # ---------------------------------------------------------------- CUDA graphs
    def _captured_htod(self, dst: int, src: np.ndarray, nbytes: int, stream: int) -> None:
        """A host-to-device copy recorded into the graph being captured on ``stream``: the
        source is staged in pinned memory the capture owns (replays copy from it again)."""
        cu = self._cu
        cap = self._capture[stream]
        relaxed = cu.CUstreamCaptureMode(CAPTURE_MODES["relaxed"])
        old = check("cuThreadExchangeStreamCaptureMode",
                    cu.cuThreadExchangeStreamCaptureMode(relaxed))
        try:
            host = int(check("cuMemHostAlloc", cu.cuMemHostAlloc(int(nbytes), 0)))
        finally:
            check("cuThreadExchangeStreamCaptureMode", cu.cuThreadExchangeStreamCaptureMode(old))
        cap.pinned.append(host)
        import ctypes
        ctypes.memmove(host, int(src.ctypes.data), int(nbytes))
        self._on_stream_device(stream, "cuMemcpyHtoDAsync", cu.cuMemcpyHtoDAsync,
                               cu.CUdeviceptr(dst), host, int(nbytes), cu.CUstream(stream))

    def stream_begin_capture(self, stream: int, mode: str = "global") -> None:
        """Start capturing ``stream`` into a graph (``cuStreamBeginCapture``)."""
        if mode not in CAPTURE_MODES:
            raise ValueError(f"capture_error_mode must be one of {sorted(CAPTURE_MODES)}, "
                             f"got {mode!r}")
        self._init()
        if stream in self._capture:
            raise RuntimeError("stream_begin_capture: this stream is already capturing")
        cu = self._cu
        device = self._device_of_stream(stream)
        pushed = self._enter(device)
        try:
            check("cuStreamBeginCapture", cu.cuStreamBeginCapture(
                cu.CUstream(stream), cu.CUstreamCaptureMode(CAPTURE_MODES[mode])))
        finally:
            self._leave(pushed)
        self._capture[stream] = CaptureState(device=device)

    def stream_end_capture(self, stream: int) -> tuple[int, CaptureState]:
        """Stop capturing ``stream``: (graph handle, the capture's state). The state's
        ``deferred`` pointers and ``pinned`` buffers belong to the caller from now on
        (``release_capture_state``). Raises CudaDriverError when the capture was
        invalidated (the state is released first)."""
        self._init()
        cap = self._capture.pop(stream, None)
        if cap is None:
            raise RuntimeError("stream_end_capture: this stream is not capturing")
        cu = self._cu
        pushed = self._enter(cap.device)
        try:
            graph = check("cuStreamEndCapture", cu.cuStreamEndCapture(cu.CUstream(stream)))
        except Exception:
            self.release_capture_state(cap, stream)
            raise
        finally:
            self._leave(pushed)
        return int(graph), cap

    def stream_is_capturing(self, stream: int) -> bool:
        """True while ``stream`` captures (``cuStreamIsCapturing``: ACTIVE or INVALIDATED)."""
        if stream in self._capture:
            return True
        self._init()
        status = check("cuStreamIsCapturing", self._cu.cuStreamIsCapturing(
            self._cu.CUstream(stream)))
        return int(status) != 0

    def release_capture_state(self, cap: CaptureState, stream: int) -> None:
        """Free what a finished capture kept alive: deferred frees and pinned staging
        buffers (after the stream's work, including replays, has completed)."""
        cu = self._cu
        pushed = self._enter(cap.device)
        try:
            if cap.deferred or cap.pinned:
                check("cuStreamSynchronize", cu.cuStreamSynchronize(cu.CUstream(stream)))
            for p in cap.deferred:
                self._small_size.pop(p, None)
                check("cuMemFreeAsync", cu.cuMemFreeAsync(cu.CUdeviceptr(p), cu.CUstream(stream)))
            for h in cap.pinned:
                check("cuMemFreeHost", cu.cuMemFreeHost(h))
        finally:
            self._leave(pushed)
        cap.deferred.clear()
        cap.pinned.clear()

    def graph_instantiate(self, graph: int, device: int) -> int:
        """An executable graph (AUTO_FREE_ON_LAUNCH: allocations left by the previous replay
        are freed before the next, and come back at the same addresses)."""
        cu = self._cu
        pushed = self._enter(device)
        try:
            fn = getattr(cu, "cuGraphInstantiateWithFlags", None) or cu.cuGraphInstantiate
            ex = check("cuGraphInstantiate", fn(cu.CUgraph(graph), AUTO_FREE_ON_LAUNCH))
        finally:
            self._leave(pushed)
        return int(ex)

    def graph_launch(self, graph_exec: int, stream: int) -> None:
        self._init()
        cu = self._cu
        check("cuGraphLaunch", cu.cuGraphLaunch(cu.CUgraphExec(graph_exec), cu.CUstream(stream)))

    def graph_exec_destroy(self, graph_exec: int) -> None:
        self._init()
        check("cuGraphExecDestroy", self._cu.cuGraphExecDestroy(self._cu.CUgraphExec(graph_exec)))

    def graph_destroy(self, graph: int) -> None:
        self._init()
        check("cuGraphDestroy", self._cu.cuGraphDestroy(self._cu.CUgraph(graph)))
