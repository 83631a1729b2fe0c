"""Streams and events with torch.cuda's names. tgrad launches and copies on the *current*
stream of a device: tgrad's own stream unless a ``tgrad.cuda.stream(s)`` context is active."""

from __future__ import annotations

import threading

from tgrad.cuda import index_errors
from tgrad.cuda._runtime import runtime

_local = threading.local()


def _device_index(device) -> int:
    if device is None:
        return runtime().current_device()
    if isinstance(device, int):
        return device
    from tgrad.device import as_device
    d = as_device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index


def current_stream_handle(device: int) -> int:
    """The raw stream handle launches and copies on ``device`` go to."""
    current = getattr(_local, "current", None)
    if current:
        s = current.get(device)
        if s is not None:
            return s.cuda_stream
    return runtime().tgrad_stream(device)


class Stream:
    """A CUDA stream (``tgrad.cuda.Stream(device=None, priority=0)``)."""

    def __init__(self, device=None, priority: int = 0, *, _handle: int | None = None) -> None:
        self.device_index = _device_index(device)
        self._owned = _handle is None
        self.cuda_stream = (runtime().stream_create(self.device_index, priority)
                            if _handle is None else _handle)

    @property
    def device(self):
        from tgrad.device import Device
        return Device("cuda", self.device_index)

    def synchronize(self) -> None:
        runtime().stream_synchronize(self.cuda_stream)
        index_errors.check(self.device_index, self.cuda_stream)

    def query(self) -> bool:
        return runtime().stream_query(self.cuda_stream)

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        runtime().stream_wait_event(self.cuda_stream, event._handle)

    def wait_stream(self, stream: Stream) -> None:
        self.wait_event(stream.record_event())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.cuda_stream == self.cuda_stream

    def __hash__(self) -> int:
        return hash(self.cuda_stream)

    def __repr__(self) -> str:
        return (f"<tgrad.cuda.Stream device=cuda:{self.device_index} "
                f"cuda_stream={self.cuda_stream:#x}>")

    def __del__(self) -> None:
        if getattr(self, "_owned", False):
            try:
                runtime().stream_destroy(self.cuda_stream)
            except Exception:  # noqa: BLE001 - shutdown
                pass


def current_stream(device=None) -> Stream:
    idx = _device_index(device)
    current = getattr(_local, "current", None) or {}
    return current.get(idx) or Stream(idx, _handle=current_stream_handle(idx))


def default_stream(device=None) -> Stream:
    """The stream tgrad queues work on when no other is selected: tgrad's own stream of
    ``device`` (default: the current device), a non-blocking stream, not the legacy null
    stream."""
    idx = _device_index(device)
    return Stream(idx, _handle=runtime().tgrad_stream(idx))


def set_stream(stream: Stream | None) -> None:
    """Make ``stream`` the current stream of its device in this thread (None: no-op);
    prefer the ``stream`` context manager."""
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream: expected a tgrad.cuda.Stream, got "
                        f"{type(stream).__name__}")
    current = getattr(_local, "current", None)
    if current is None:
        current = _local.current = {}
    if stream.cuda_stream == runtime().tgrad_stream(stream.device_index):
        current.pop(stream.device_index, None)
    else:
        current[stream.device_index] = stream


class StreamContext:
    """Context manager: ``stream`` is the current stream of its device inside the block
    (None, or no cuda available: a no-op), the previous current stream after it."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self._prev: Stream | None = None

    def __enter__(self) -> Stream | None:
        if self.stream is None:
            return None
        self._prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self.stream is not None:
            set_stream(self._prev)
        return False


def stream(s: Stream | None) -> StreamContext:
    """Make ``s`` the current stream of its device inside the block (None: no-op)."""
    return StreamContext(s)


class Event:
    """A CUDA event (``Event(enable_timing=False)``): record, synchronize, query,
    elapsed_time (milliseconds, both events recorded and timing enabled)."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        self.enable_timing = enable_timing
        self._handle = runtime().event_create(enable_timing)
        self._recorded = False

    def record(self, stream: Stream | None = None) -> None:
        if stream is None:
            stream = current_stream()
        runtime().event_record(self._handle, stream.cuda_stream)
        self._recorded = True

    def synchronize(self) -> None:
        if self._recorded:
            runtime().event_synchronize(self._handle)

    def query(self) -> bool:
        return (not self._recorded) or runtime().event_query(self._handle)

    def wait(self, stream: Stream | None = None) -> None:
        (current_stream() if stream is None else stream).wait_event(self)

    def elapsed_time(self, end_event: Event) -> float:
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if not (self._recorded and end_event._recorded):
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return runtime().event_elapsed_ms(self._handle, end_event._handle)

    def __del__(self) -> None:
        try:
            runtime().event_destroy(self._handle)
        except Exception:  # noqa: BLE001 - shutdown
            pass
