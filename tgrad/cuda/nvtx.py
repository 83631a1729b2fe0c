"""``tgrad.cuda.nvtx``: torch.cuda.nvtx's NVTX annotations (range_push / range_pop /
range_start / range_end / mark / range) over the ``nvtx`` package (``pip install nvtx``), the
one ``tgrad.autograd.profiler.emit_nvtx`` uses. Without the package every call raises
ModuleNotFoundError saying how to install it (PyTorch without NVTX raises RuntimeError
"NVTX functions not installed")."""

from __future__ import annotations

import contextlib
import importlib
import threading
from typing import Any, Iterator

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

MISSING_NVTX = ("tgrad.cuda.nvtx needs the 'nvtx' package to emit NVTX ranges, and it is not "
                "installed; install it with `pip install nvtx`")

_local = threading.local()  # the depth of this thread's push/pop ranges


def _nvtx():
    try:
        return importlib.import_module("nvtx")
    except ImportError:
        raise ModuleNotFoundError(MISSING_NVTX) from None


def range_push(msg: str) -> int:
    """Push a range onto this thread's stack of nested ranges; returns its zero-based
    depth."""
    _nvtx().push_range(msg)
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    return depth


def range_pop() -> int:
    """Pop the innermost range; returns the zero-based depth of the range ended (-1 when
    none is open, as NVTX's nvtxRangePop)."""
    depth = getattr(_local, "depth", 0)
    if depth == 0:
        return -1
    _nvtx().pop_range()
    _local.depth = depth - 1
    return depth - 1


def range_start(msg: str) -> Any:
    """Start a range that may end on another thread; returns the handle for ``range_end``."""
    return _nvtx().start_range(message=msg)


def range_end(range_id: Any) -> None:
    """End a range started by ``range_start``."""
    _nvtx().end_range(range_id)


def mark(msg: str) -> None:
    """An instantaneous event."""
    _nvtx().mark(message=msg)


@contextlib.contextmanager
def range(msg: str, *args, **kwargs) -> Iterator[None]:  # noqa: A001  (PyTorch's name)
    """Context manager / decorator: a range around the block; extra arguments format
    ``msg`` (``msg.format(*args, **kwargs)``)."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
