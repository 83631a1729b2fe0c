"""PyTorch's device-agnostic ``torch.accelerator`` API over tgrad's one accelerator,
``cuda`` (a GPU, or Triton's interpreter with TRITON_INTERPRET=1): each function is
``tgrad.cuda``'s. Without cuda, ``current_accelerator()`` is None, ``is_available()``
False, ``device_count()`` 0, and the functions that need a device raise PyTorch's
"Cannot access accelerator device when none is available."
"""

from __future__ import annotations

from tgrad.device import Device, as_device

__all__ = ["current_accelerator", "current_device_index", "current_stream", "device_count",
           "device_index", "is_available", "set_device_index", "set_stream", "synchronize",
           "current_device_idx", "set_device_idx", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "reset_accumulated_memory_stats"]

_NONE = "Cannot access accelerator device when none is available."


def _cuda():
    """tgrad.cuda, or PyTorch's RuntimeError when it is unavailable."""
    from tgrad import cuda
    if not cuda.is_available():
        raise RuntimeError(_NONE)
    return cuda


def _index(device, optional: bool) -> int:
    """PyTorch's _get_device_index: an int as it is; a device (or its string) needs the
    accelerator (none: RuntimeError "Accelerator expected"), must be of its type (else
    ValueError) and gives its index; None (with ``optional``): the current device."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = as_device(device)
    if isinstance(device, Device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if device.type != acc.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator "
                             f"{acc.type}.")
        return device.index
    if device is None and optional:
        return _cuda().current_device()
    raise ValueError(f"Expected a tgrad.device with a specified index or an integer, but "
                     f"got:{device}")


def current_accelerator(check_available: bool = False) -> Device | None:
    """``tgrad.device('cuda')`` when cuda is available, else None."""
    from tgrad import cuda
    return as_device("cuda") if cuda.is_available() else None


def is_available() -> bool:
    """Whether an accelerator (cuda) is available."""
    from tgrad import cuda
    return cuda.is_available()


def device_count() -> int:
    """The number of cuda devices (0 without cuda)."""
    from tgrad import cuda
    return cuda.device_count()


def current_device_index() -> int:
    """The current cuda device's index."""
    return _cuda().current_device()


current_device_idx = current_device_index  # PyTorch's deprecated name


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, or a cuda device with an index) the current device; a
    negative index is a no-op."""
    idx = _index(device, optional=False)
    if idx < 0:  # PyTorch's: a negative index is a no-op (even without an accelerator)
        return
    _cuda().set_device(idx)


set_device_idx = set_device_index  # PyTorch's deprecated name


class device_index:  # noqa: N801  (PyTorch's name)
    """Context manager: device ``device`` (an int; None: a no-op) is current inside the
    block, the previous one after it."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            cuda = _cuda()
            self.prev_idx = cuda.current_device()
            cuda.set_device(self.idx)

    def __exit__(self, *exc) -> bool:
        if self.idx is not None:
            _cuda().set_device(self.prev_idx)
        return False


def synchronize(device=None, /) -> None:
    """Wait for the work queued on ``device`` (default: the current device)."""
    cuda = _cuda()
    cuda.synchronize(_index(device, optional=True))


def current_stream(device=None, /):
    """The current stream (a tgrad.cuda.Stream) of ``device`` (default: the current one)."""
    cuda = _cuda()
    return cuda.current_stream(_index(device, optional=True))


def set_stream(stream) -> None:
    """Make ``stream`` (a tgrad.cuda.Stream) the current stream of its device."""
    _cuda().set_stream(stream)


def empty_cache() -> None:
    """tgrad.cuda.empty_cache(); without cuda PyTorch's RuntimeError."""
    _cuda().empty_cache()


def _memory(name: str):
    def fn(device_index=None, /):
        cuda = _cuda()
        return getattr(cuda, name)(_index(device_index, optional=True))
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``tgrad.cuda.{name}`` of the device (default: the current one)."
    return fn


memory_allocated = _memory("memory_allocated")
max_memory_allocated = _memory("max_memory_allocated")
memory_reserved = _memory("memory_reserved")
max_memory_reserved = _memory("max_memory_reserved")
memory_stats = _memory("memory_stats")
reset_peak_memory_stats = _memory("reset_peak_memory_stats")
reset_accumulated_memory_stats = _memory("reset_accumulated_memory_stats")
