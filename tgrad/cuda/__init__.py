"""tgrad.cuda: the torch-free CUDA runtime (torch.cuda's names).

The runtime is chosen lazily: the real driver (``cuda-bindings``) when a GPU is present, the
host emulation when ``TRITON_INTERPRET=1`` (kernels run in Triton's interpreter), otherwise
``is_available()`` is False and ``why_unavailable()`` says why. Importing never raises.
"""

from __future__ import annotations

import warnings as _warnings

from tgrad._device_amp import device_amp_module as _device_amp_module
from tgrad.cuda import index_errors, nvtx
from tgrad.cuda import interop as _interop
from tgrad.cuda import memory as _memory
from tgrad.cuda._runtime import get_runtime_or_none, runtime
from tgrad.cuda._runtime import why_unavailable as _why
from tgrad.cuda.graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing
from tgrad.cuda.runtime_api import CaptureError, DeviceProperties, OutOfMemoryError
from tgrad.cuda.streams import (
    Event,
    Stream,
    StreamContext,
    _device_index,
    current_stream,
    default_stream,
    set_stream,
    stream,
)

__all__ = ["is_available", "why_unavailable", "is_interpreted", "device_count",
           "current_device", "set_device", "get_device_name", "get_device_properties",
           "get_device_capability", "synchronize", "Stream", "Event", "current_stream",
           "stream", "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats",
           "memory_reserved", "empty_cache", "mem_get_info", "OutOfMemoryError",
           "DeviceProperties", "is_initialized", "ops_without_native_kernel",
           "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "CaptureError", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "initial_seed", "get_rng_state", "get_rng_state_all", "set_rng_state",
           "set_rng_state_all", "default_generators", "max_memory_reserved", "memory_stats",
           "memory_summary", "reset_max_memory_allocated", "reset_accumulated_memory_stats",
           "memory_cached", "max_memory_cached", "device", "device_of", "StreamContext",
           "default_stream", "set_stream", "is_bf16_supported", "get_arch_list", "init",
           "ipc_collect", "nvtx"]

# PyTorch's deprecated torch.cuda.amp: tgrad.amp's autocast / GradScaler / custom_fwd /
# custom_bwd on "cuda", each with PyTorch's FutureWarning (tgrad/_device_amp.py)
amp = _device_amp_module(__name__, "cuda", "float16",
                         ["autocast", "GradScaler", "custom_fwd", "custom_bwd"])

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
    """Make ``device`` (an index, a cuda device or its string) the current device; a
    negative index is a no-op and a non-cuda device a ValueError, as in PyTorch (both
    without needing cuda)."""
    idx = _device_index(device)
    if idx >= 0:
        runtime().set_device(idx)


def get_device_properties(device=None) -> DeviceProperties:
    return runtime().get_device_properties(_device_index(device))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def synchronize(device=None) -> None:
    """Wait for all work queued on ``device`` (default: the current one); raises the
    IndexError of a cuda index tensor found out of range since the last synchronization
    (tgrad/cuda/index_errors.py)."""
    idx = _device_index(device)
    runtime().synchronize(idx)
    index_errors.check(idx)


def memory_allocated(device=None) -> int:
    """Bytes held by live cuda tensors on ``device`` (0 when cuda is unavailable, as in
    PyTorch)."""
    if not is_available():
        return 0
    return _memory.memory_allocated(_device_index(device))


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since the start or ``reset_peak_memory_stats`` (0 when
    cuda is unavailable)."""
    if not is_available():
        return 0
    return _memory.max_memory_allocated(_device_index(device))


def reset_peak_memory_stats(device=None) -> None:
    """Reset both peaks, ``max_memory_allocated`` and ``max_memory_reserved``, to the
    current values (PyTorch's)."""
    _memory.reset_peak_memory_stats(_device_index(device))


def memory_reserved(device=None) -> int:
    """Bytes the device's memory pool holds from the driver (0 when cuda is unavailable)."""
    if not is_available():
        return 0
    return runtime().mem_reserved(_device_index(device))


def max_memory_reserved(device=None) -> int:
    """Peak of ``memory_reserved`` since the start or ``reset_peak_memory_stats`` (the
    driver's high watermark of the pool; 0 when cuda is unavailable, as in PyTorch)."""
    if not is_available():
        return 0
    return _memory.max_memory_reserved(_device_index(device))


def memory_stats(device=None) -> dict:
    """PyTorch's memory statistics, restricted to what tgrad tracks:
    ``allocated_bytes.all.{current,peak,allocated,freed}`` and
    ``reserved_bytes.all.{current,peak}`` (the other keys PyTorch reports are absent, not
    zero).
    An empty dict when cuda is unavailable, as in PyTorch."""
    if not is_available():
        return {}
    return _memory.memory_stats(_device_index(device))


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A human-readable table of ``memory_stats`` (only the rows tgrad tracks)."""
    stats = memory_stats(device)
    if not stats:
        raise RuntimeError("tgrad.cuda.memory_summary: cuda is not available "
                           f"({why_unavailable()})")
    idx = _device_index(device)
    rows = [("Allocated memory (current)", "allocated_bytes.all.current"),
            ("Allocated memory (peak)", "allocated_bytes.all.peak"),
            ("Allocated memory (total allocated)", "allocated_bytes.all.allocated"),
            ("Allocated memory (total freed)", "allocated_bytes.all.freed"),
            ("Reserved memory (current)", "reserved_bytes.all.current"),
            ("Reserved memory (peak)", "reserved_bytes.all.peak")]
    line = "=" * 60
    out = [line, f" tgrad CUDA memory summary, device ID {idx}".ljust(60), line]
    out += [f" {label:<40} {_memory._fmt_bytes(stats[key]):>17} " for label, key in rows]
    out.append(line)
    return "\n".join(out) + "\n"


def reset_max_memory_allocated(device=None) -> None:
    """Deprecated alias of ``reset_peak_memory_stats`` (PyTorch's FutureWarning)."""
    _warnings.warn("tgrad.cuda.reset_max_memory_allocated now calls "
                   "tgrad.cuda.reset_peak_memory_stats, which resets /all/ peak memory stats.",
                   FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_accumulated_memory_stats(device=None) -> None:
    """Zero the historical totals (``allocated_bytes.all.allocated`` / ``.freed``)."""
    _memory.reset_accumulated_memory_stats(_device_index(device))


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved``."""
    _warnings.warn("`tgrad.cuda.memory_cached` has been renamed to "
                   "`tgrad.cuda.memory_reserved`", FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved``."""
    _warnings.warn("`tgrad.cuda.max_memory_cached` has been renamed to "
                   "`tgrad.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


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


def init() -> None:
    """Initialise tgrad's cuda state (selecting the runtime); raises when cuda is
    unavailable. Every cuda call initialises on demand, so this is rarely needed."""
    runtime()


def ipc_collect() -> None:
    """No-op: tgrad does not share cuda tensors between processes (raises when cuda is
    unavailable, as PyTorch)."""
    runtime()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current device supports bfloat16: False without cuda; True for compute
    capability >= 8.0; below that, ``including_emulation`` (bfloat16 tensors can still be
    created there, as PyTorch checks)."""
    if not is_available():
        return False
    if get_device_capability()[0] >= 8:
        return True
    return bool(including_emulation)


def get_arch_list() -> list[str]:
    """The architectures tgrad's kernels are compiled for: Triton compiles at run time for
    the devices present, so these are their ``sm_XY`` (empty without cuda)."""
    if not is_available():
        return []
    return sorted({"sm_{}{}".format(*get_device_capability(i)) for i in range(device_count())})


class device:  # noqa: N801  (PyTorch's name)
    """Context manager selecting the current cuda device (``device``: an index, a cuda
    device or its string; None or a negative index: a no-op)."""

    def __init__(self, device) -> None:
        if device is None or (isinstance(device, int) and device < 0):
            self.idx = -1
        else:
            self.idx = _device_index(device)
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx < 0:
            return
        rt = runtime()
        self.prev_idx = rt.current_device()
        if self.prev_idx != self.idx:
            rt.set_device(self.idx)

    def __exit__(self, *exc) -> bool:
        if self.prev_idx >= 0 and self.prev_idx != self.idx:
            runtime().set_device(self.prev_idx)
        return False


class device_of(device):  # noqa: N801  (PyTorch's name)
    """``device`` for the device of a tensor (a no-op for a CPU tensor)."""

    def __init__(self, obj) -> None:
        dev = obj.device
        super().__init__(dev.index if dev.type == "cuda" else -1)


# ---------------------------------------------------------------- random number generators
# tgrad keeps one Philox generator for all cuda devices (tgrad.generator._DefaultCudaGenerator),
# so the per-device functions all act on it. As in PyTorch, the seeding functions are
# silently ignored when cuda is unavailable, while the ones that read a state raise.

def __getattr__(name: str):
    if name.endswith("Tensor"):  # PyTorch's legacy tensor types (tgrad.ops.tensor_legacy)
        from tgrad.ops.tensor_legacy import CUDA_TENSOR_TYPES
        if name in CUDA_TENSOR_TYPES:
            return CUDA_TENSOR_TYPES[name]
    if name == "default_generators":
        # One entry per device (an empty tuple without cuda, as in PyTorch).
        from tgrad.generator import _DefaultCudaGenerator
        return tuple(_DefaultCudaGenerator(i) for i in range(device_count()))
    raise AttributeError(f"module 'tgrad.cuda' has no attribute '{name}'")


def _gen(device="cuda"):
    from tgrad.generator import _DefaultCudaGenerator
    if isinstance(device, int):
        idx = device
    else:
        from tgrad.device import as_device
        d = as_device(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        idx = d.index
    rt = runtime()
    idx = rt.current_device() if idx is None else idx
    if not 0 <= idx < rt.device_count():
        raise RuntimeError(f"Invalid device index cuda:{idx} ({rt.device_count()} cuda "
                           "device(s) available)")
    return _DefaultCudaGenerator(idx)


def manual_seed(seed: int) -> None:
    """Seed the cuda generator (ignored without cuda; the CPU one is left alone)."""
    from tgrad.generator import normalize_seed
    seed = normalize_seed(int(seed))
    if is_available():
        _gen().manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator (the same one in tgrad): ``manual_seed``."""
    manual_seed(seed)


def seed() -> None:
    """Seed the cuda generator from the operating system's entropy (ignored without cuda)."""
    if is_available():
        _gen().seed()


def seed_all() -> None:
    """``seed`` for all devices (one generator in tgrad)."""
    seed()


def initial_seed() -> int:
    """The seed of the cuda generator (raises without cuda)."""
    return _gen().initial_seed()


def get_rng_state(device="cuda"):
    """The cuda generator's state for ``set_rng_state``: a 16-byte uint8 CPU tensor (Philox
    seed and offset; tgrad.generator's doc). Raises without cuda."""
    return _gen(device).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a state from ``get_rng_state`` (ignored without cuda, as in PyTorch)."""
    if is_available():
        _gen(device).set_state(new_state)


def get_rng_state_all() -> list:
    """``get_rng_state`` of every device ([] without cuda)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """``set_rng_state(state, i)`` for the i-th state."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)
