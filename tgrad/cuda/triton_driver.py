"""tgrad's Triton driver: compiled Triton kernels launch on tgrad's stream, torch never loads.

Triton's own ``CudaDriver`` takes the current device, stream and compute capability from
torch (Triton 3.6 to 3.8 import torch in ``GPUDriver.__init__``; 3.9 does so whenever torch
is already loaded, and otherwise launches on the device's default stream). ``TgradCudaDriver``
keeps Triton's compiler, cubin loader and launcher (``CudaUtils``, ``CudaLauncher``) and
answers everything else from ``tgrad.cuda``:

=============================== ==========================================================
Triton asks                     tgrad answers
=============================== ==========================================================
get_current_device()            the thread's current tgrad.cuda device
set_current_device(d)           tgrad.cuda.set_device(d) (makes its primary context current)
get_current_stream(d)           tgrad.cuda's current stream of d (tgrad's stream by default)
get_device_capability(d)        (major, minor) from the runtime's device properties
get_current_target()            GPUTarget("cuda", 10 * major + minor, warp_size)
get_device_interface()          tgrad.cuda (torch.cuda's names: synchronize, Event, ...)
get_benchmarker()               triton.testing.do_bench
get_empty_cache_for_benchmark() a 256 MiB device buffer (L2 flush), zeroed by clear_cache
allocate_default_profile_scratch zeroed scratch from the pool (Triton 3.9 instrumentation)
=============================== ==========================================================

Differences between Triton versions handled here (read in 3.6.0, 3.7.1, 3.8.0 and 3.9.0):

* 3.6-3.7: ``GPUDriver.__init__`` imports torch unconditionally; 3.8-3.9: only when torch is
  already in sys.modules (else the device's default stream). We never call
  ``CudaDriver.__init__``; ``utils`` (which compiles Triton's small C helper against
  libcuda) is built lazily on first use, so the driver can be built without a GPU.
* 3.6-3.7: ``CudaUtils`` has no get_current_device/get_default_stream/...; 3.8+ has them.
  We use none of them.
* 3.6-3.7: ``CudaDriver.is_active`` imports torch, and on every version the first read of
  ``driver.active`` builds Triton's own driver. ``install()`` sets the active driver without
  reading ``driver.active``/``driver.default``.
* 3.8+ adds ``allocate_default_profile_scratch`` (torch in the base class); overridden here.
  3.6-3.7 take profile scratch from ``triton.set_allocator``-style hooks instead.
* ``triton.set_allocator`` (global scratch for device-side TMA descriptors etc.; all four
  versions) gets a tgrad pool allocator.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import triton
from triton.backends.compiler import GPUTarget
from triton.backends.nvidia import driver as _nv
from triton.runtime.driver import driver as _triton_driver_config

L2_FLUSH_BYTES = 256 * 1024 * 1024


def _default_runtime() -> Any:
    from tgrad.cuda._runtime import runtime
    return runtime()


def _default_stream(device: int) -> int:
    from tgrad.cuda.streams import current_stream_handle
    return current_stream_handle(device)


def _default_interface() -> Any:
    import tgrad.cuda
    return tgrad.cuda


class DeviceScratch:
    """``nbytes`` of device memory from the runtime's pool, freed (stream-ordered, on the
    stream it was allocated on) when garbage collected. Has ``data_ptr()`` (what Triton's
    launcher reads) and ``zero_()`` (what ``clear_cache`` calls)."""

    def __init__(self, runtime: Any, nbytes: int, stream: int) -> None:
        self._rt = runtime
        self.nbytes = int(nbytes)
        self.stream = int(stream)
        self.ptr = 0
        self.ptr = runtime.malloc_async(max(self.nbytes, 1), self.stream)

    def data_ptr(self) -> int:
        return self.ptr

    def zero_(self, stream: int | None = None) -> DeviceScratch:
        """Fill with zero bytes on ``stream`` (default: the stream it was allocated on)."""
        self._rt.memset_d8(self.ptr, 0, self.nbytes, self.stream if stream is None else stream)
        return self

    def __del__(self) -> None:
        if self.ptr:
            try:
                self._rt.free_async(self.ptr, self.stream)
            except Exception:  # noqa: BLE001 - interpreter shutdown: the context may be gone
                pass
            self.ptr = 0


class TgradCudaDriver(_nv.CudaDriver):
    """Triton's CUDA driver with device, stream and capability taken from ``tgrad.cuda``.

    ``runtime``, ``current_stream`` and ``device_interface`` default to tgrad.cuda's (tests
    inject their own)."""

    def __init__(self, runtime: Any = None, current_stream: Callable[[int], int] | None = None,
                 device_interface: Any = None) -> None:
        # Deliberately NOT CudaDriver.__init__ / GPUDriver.__init__: they import torch.
        self._runtime = runtime
        self._stream_of = current_stream
        self._interface = device_interface
        self._utils = None
        self._utils_lock = threading.Lock()
        self.launcher_cls = _nv.CudaLauncher

    # ------------------------------------------------------------ plumbing
    @property
    def utils(self) -> Any:
        """Triton's C helper (cubin loading, launch, device properties), built on first use."""
        if self._utils is None:
            with self._utils_lock:
                if self._utils is None:
                    self._utils = _nv.CudaUtils()
        return self._utils

    @utils.setter
    def utils(self, value: Any) -> None:
        self._utils = value

    def _rt(self) -> Any:
        return self._runtime if self._runtime is not None else _default_runtime()

    @staticmethod
    def is_active() -> bool:
        from tgrad.cuda import driver_runtime
        return driver_runtime.is_available()

    # ------------------------------------------------------------ device, stream, target
    def get_current_device(self) -> int:
        return self._rt().current_device()

    def set_current_device(self, device: int) -> None:
        self._rt().set_device(int(device))

    def get_current_stream(self, device: int | None = None) -> int:
        if device is None:
            device = self.get_current_device()
        if self._stream_of is not None:
            return int(self._stream_of(device))
        if self._runtime is not None:
            return int(self._runtime.tgrad_stream(device))
        return int(_default_stream(device))

    def get_device_capability(self, device: int | None = None) -> tuple[int, int]:
        if device is None:
            device = self.get_current_device()
        p = self._rt().get_device_properties(int(device))
        return int(p.major), int(p.minor)

    def get_current_target(self) -> GPUTarget:
        device = self.get_current_device()
        p = self._rt().get_device_properties(device)
        return GPUTarget("cuda", int(p.major) * 10 + int(p.minor), int(p.warp_size or 32))

    def get_active_torch_device(self) -> Any:
        """Triton's name; the answer is a tgrad device (Triton only uses it for scratch)."""
        from tgrad.device import Device
        return Device("cuda", self.get_current_device())

    def get_device_interface(self) -> Any:
        """torch.cuda's stand-in: ``synchronize()``, ``Event(enable_timing=True)`` with
        ``record()``/``elapsed_time()``, ``current_device()``, ``current_stream()``..."""
        return self._interface if self._interface is not None else _default_interface()

    # ------------------------------------------------------------ benchmarking
    def get_benchmarker(self) -> Callable:
        from triton.testing import do_bench
        return do_bench

    def get_empty_cache_for_benchmark(self) -> DeviceScratch:
        """256 MiB that ``clear_cache`` zeroes before each timed run, evicting the L2
        (1 MiB in interpreter mode, which has no cache to flush)."""
        rt = self._rt()
        nbytes = (1 << 20) if getattr(rt, "interpreted", False) else L2_FLUSH_BYTES
        return DeviceScratch(rt, nbytes, self.get_current_stream(self.get_current_device()))

    def clear_cache(self, cache: Any) -> None:
        """Zero the flush buffer on the current stream (the one the timing events use)."""
        if isinstance(cache, DeviceScratch):
            cache.zero_(self.get_current_stream(self.get_current_device()))
        else:
            cache.zero_()

    # ------------------------------------------------------------ scratch (Triton 3.9)
    def allocate_default_profile_scratch(self, size: int, alignment: int, stream: Any) -> Any:
        """Zeroed profile scratch, ordered on the launch stream (``None``/0: tgrad's)."""
        s = int(stream) if stream else self.get_current_stream(self.get_current_device())
        buf = DeviceScratch(self._rt(), size, s)
        if alignment and buf.ptr % int(alignment):
            raise RuntimeError(f"tgrad.cuda: pool allocation {buf.ptr:#x} is not "
                               f"{alignment}-byte aligned as Triton's profile scratch requires")
        return buf.zero_()


class TritonAllocator:
    """``triton.set_allocator`` callback: kernel global scratch from tgrad's pool."""

    def __init__(self, driver: TgradCudaDriver) -> None:
        self._driver = driver

    def __call__(self, size: int, alignment: int, stream: Any) -> DeviceScratch:
        drv = self._driver
        s = int(stream) if stream else drv.get_current_stream(drv.get_current_device())
        buf = DeviceScratch(drv._rt(), size, s)
        if alignment and buf.ptr % int(alignment):
            raise RuntimeError(f"tgrad.cuda: pool allocation {buf.ptr:#x} is not "
                               f"{alignment}-byte aligned as Triton's scratch requires")
        return buf


_install_lock = threading.Lock()
_installed: dict[str, Any] = {"driver": None, "previous": None}


def installed() -> TgradCudaDriver | None:
    """The tgrad driver when it is Triton's active driver, else None."""
    drv = _installed["driver"]
    return drv if drv is not None and _triton_driver_config._active is drv else None


def install(runtime: Any = None) -> TgradCudaDriver:
    """Make a ``TgradCudaDriver`` Triton's active driver (idempotent) and return it.

    Reads neither ``driver.active`` nor ``driver.default`` first: on Triton 3.6 either would
    build Triton's torch-based driver."""
    with _install_lock:
        drv = installed()
        if drv is not None and runtime is None:
            return drv
        config = _triton_driver_config
        previous = getattr(config, "_active", None)
        drv = TgradCudaDriver(runtime)
        config.set_active(drv)
        if _installed["driver"] is None or previous is not _installed["driver"]:
            _installed["previous"] = previous
        _installed["driver"] = drv
        set_allocator = getattr(triton, "set_allocator", None)
        if set_allocator is not None:
            set_allocator(TritonAllocator(drv))
        return drv


def activate() -> TgradCudaDriver:
    """``install()`` over tgrad.cuda's runtime (the name tgrad/kernels uses)."""
    return install()


def uninstall() -> None:
    """Restore the driver that was active before ``install`` (None: Triton picks lazily)."""
    with _install_lock:
        if _installed["driver"] is None:
            return
        config = _triton_driver_config
        if config._active is _installed["driver"]:
            config._active = _installed["previous"]
        _installed["driver"] = None
        _installed["previous"] = None
        null = getattr(getattr(triton.runtime, "_allocation", None), "_NULL_ALLOCATOR", None)
        if null is not None and getattr(triton, "set_allocator", None) is not None:
            triton.set_allocator(null)
