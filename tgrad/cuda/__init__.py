"""tgrad.cuda: the torch-free CUDA runtime (torch.cuda's names).

The runtime is chosen lazily: the real driver (``cuda-bindings``) when a GPU is present, the
host emulation when ``TRITON_INTERPRET=1`` (kernels run in Triton's interpreter), otherwise
``is_available()`` is False and ``why_unavailable()`` says why. Importing never raises.
"""

from __future__ import annotations

from tgrad.cuda import interop as _interop
from tgrad.cuda import memory as _memory
from tgrad.cuda._runtime import get_runtime_or_none, runtime
from tgrad.cuda._runtime import why_unavailable as _why
from tgrad.cuda.graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from tgrad.cuda.runtime_api import CaptureError, DeviceProperties, OutOfMemoryError
from tgrad.cuda.streams import Event, Stream, _device_index, current_stream, stream

__all__ = ["is_available", "why_unavailable", "is_interpreted", "device_count",
           "current_device", "set_device", "get_device_name", "get_device_properties",
           "get_device_capability", "synchronize", "Stream", "Event", "current_stream",
           "stream", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "empty_cache", "mem_get_info", "OutOfMemoryError",
           "DeviceProperties", "is_initialized", "ops_without_native_kernel",
           "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "CaptureError"]

_interop.install()


def is_available() -> bool:
    """True when tensors can be placed on ``cuda`` (a GPU, or interpreter mode)."""
    return get_runtime_or_none() is not None


def why_unavailable() -> str | None:
    """One line saying why ``is_available()`` is False (None when it is True)."""
    return _why()


def is_initialized() -> bool:
    return is_available()


def is_interpreted() -> bool:
    """True when the ``cuda`` device is emulated in host memory (``TRITON_INTERPRET=1``)."""
    rt = get_runtime_or_none()
    return bool(rt is not None and rt.interpreted)


def device_count() -> int:
    rt = get_runtime_or_none()
    return 0 if rt is None else rt.device_count()


def current_device() -> int:
    return runtime().current_device()


def set_device(device) -> None:
    runtime().set_device(_device_index(device))


def get_device_properties(device=None) -> DeviceProperties:
    return runtime().get_device_properties(_device_index(device))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None) -> None:
    """Wait for all work queued on ``device`` (default: the current one)."""
    runtime().synchronize(_device_index(device))


def memory_allocated(device=None) -> int:
    """Bytes held by live cuda tensors on ``device``."""
    return _memory.memory_allocated(_device_index(device))


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats``."""
    return _memory.max_memory_allocated(_device_index(device))


def reset_peak_memory_stats(device=None) -> None:
    _memory.reset_peak_memory_stats(_device_index(device))


def memory_reserved(device=None) -> int:
    """Bytes the device's memory pool holds from the driver."""
    return runtime().mem_reserved(_device_index(device))


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device."""
    return runtime().mem_get_info(_device_index(device))


def empty_cache() -> None:
    """Return unused memory to the driver: tgrad's small-block free lists go back to the
    pool, then the pool is trimmed (live tensors are untouched)."""
    rt = get_runtime_or_none()
    if rt is not None:
        d = rt.current_device()
        rt.synchronize(d)
        rt.empty_cache(d)


def ops_without_native_kernel() -> list[str] | None:
    """Primitives of the NumPy backend that the cuda backend still runs through its
    temporary host path (None when the Triton backend cannot be imported here)."""
    try:
        from tgrad.backends import triton as tb
    except ImportError:
        return None
    return tb.ops_without_native_kernel()
