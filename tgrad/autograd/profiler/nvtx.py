"""``emit_nvtx``: one NVTX range per op forward, backward node and user range.

Ranges go through the ``nvtx`` package (``pip install nvtx``) so Nsight Systems shows them
next to the kernels. Nothing is recorded by tgrad itself.
"""

from __future__ import annotations

import importlib

from tgrad.autograd import profiler_hooks
from tgrad.autograd.profiler._recorder import shapes_of

__all__ = ["emit_nvtx"]

MISSING_NVTX = ("emit_nvtx() needs the 'nvtx' package to emit NVTX ranges, and it is not "
                "installed; install it with `pip install nvtx` (or use "
                "tgrad.autograd.profiler.profile instead)")


class _NvtxEmitter:
    """Same interface as the profiler's Recorder; each range is a push/pop pair."""

    def __init__(self, nvtx, record_shapes: bool) -> None:
        self.nvtx = nvtx
        self.record_shapes = record_shapes

    def op_start(self, cls, args):
        name = cls.name or cls.__name__
        if self.record_shapes:
            name = f"{name}, sizes = {shapes_of(args)}"
        self.nvtx.push_range(name)
        return name

    def op_end(self, handle, out=None) -> None:
        self.nvtx.pop_range()

    def node_start(self, node):
        name = node.name()
        self.nvtx.push_range(name)
        return name

    def range_start(self, name: str, kind: str = "user"):
        self.nvtx.push_range(name)
        return name  # a non-None handle: callers end only ranges they started

    def node_end(self, handle) -> None:
        self.nvtx.pop_range()

    range_end = node_end


class emit_nvtx:
    """Context manager: every op, backward node and ``record_function`` range becomes an
    NVTX range (PyTorch's ``emit_nvtx(enabled=True, record_shapes=False)``)."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False) -> None:
        self.enabled = enabled
        self.record_shapes = record_shapes
        self._prev = None

    def __enter__(self) -> emit_nvtx:
        if not self.enabled:
            return self
        try:
            nvtx = importlib.import_module("nvtx")
        except ImportError:
            raise ModuleNotFoundError(MISSING_NVTX) from None
        if profiler_hooks.ACTIVE is not None:
            raise RuntimeError("NVTX annotation context manager is already enabled (or a "
                               "profile is running); leave it before entering emit_nvtx()")
        profiler_hooks.ACTIVE = _NvtxEmitter(nvtx, self.record_shapes)
        return self

    def __exit__(self, *exc) -> bool:
        if self.enabled:
            profiler_hooks.ACTIVE = None
        return False
