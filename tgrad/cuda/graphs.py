"""CUDA graphs with PyTorch's names: ``tgrad.cuda.CUDAGraph`` and the ``tgrad.cuda.graph(g)``
capture context.

    g = tgrad.cuda.CUDAGraph()
    step()                                  # warm up eagerly first: kernels compile, the
    tgrad.cuda.synchronize()                # optimizer creates its state
    with tgrad.cuda.graph(g):
        loss = step()                       # recorded, not run
    x_static.copy_(next_batch)              # static inputs: update in place
    g.replay()                              # runs the recorded forward/backward/step

Semantics (as torch.cuda.graphs, adapted to the driver's graph memory):

* Capture records tgrad's stream of the current device (every tgrad launch, copy, memset,
  allocation and free goes there). Nothing runs during the capture; tensors created inside
  it are *static outputs* whose contents are defined after each ``replay()``.
* Allocations made during capture are graph memory nodes (``cuMemAllocAsync`` inside
  capture). The executable graph is instantiated with AUTO_FREE_ON_LAUNCH, so each replay
  gets its allocations back at the same addresses: static outputs stay valid across replays
  and are overwritten by each one. There is no caching-allocator pool to share: ``pool()``
  returns a token and ``capture_begin(pool=...)`` accepts one for API compatibility; the
  driver's graph memory pool serves every graph.
* Memory allocated before the capture and freed during it is kept alive until ``reset()``
  (the graph may still read it).
* Host-to-device copies during capture (e.g. a tensor created from a Python list) are
  recorded from a pinned copy of the source: each replay writes the capture-time values.
* Host syncs (``.item()``, ``.numpy()``, ``.cpu()``, ``tgrad.cuda.synchronize()``, an op on a
  temporary host path) raise ``CaptureError`` and the capture is abandoned.
* Python-side values are frozen at capture (scalars passed to kernels, an optimizer's step
  counter): use optimizers whose per-step state lives on the device (plain SGD, momentum).
* Interpreter mode (``TRITON_INTERPRET=1``): graphs are not available; ``capture_begin``
  raises a RuntimeError saying so (no emulation).
"""

from __future__ import annotations

import gc
from typing import Any

from tgrad.cuda import index_errors
from tgrad.cuda._runtime import runtime
from tgrad.cuda.runtime_api import CaptureError, CaptureState

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
           "CaptureError"]


def graph_pool_handle() -> tuple:
    """A token for ``capture_begin(pool=...)`` (torch.cuda.graph_pool_handle); graph memory
    is managed by the driver, so the token only has to be passed around."""
    return ("tgrad-graph-pool",)


def is_current_stream_capturing() -> bool:
    """True while tgrad's current stream of the current device is being captured."""
    from tgrad.cuda.streams import current_stream_handle
    rt = runtime()
    return rt.stream_is_capturing(current_stream_handle(rt.current_device()))


class CUDAGraph:
    """A captured CUDA graph (torch.cuda.CUDAGraph's methods)."""

    def __init__(self) -> None:
        self._rt: Any = None
        self._device: int | None = None
        self._stream: int | None = None
        self._graph: int | None = None
        self._exec: int | None = None
        self._state: CaptureState | None = None
        self._capturing = False
        self._index_checks: list = []  # checked gathers captured (cuda/index_errors.py)

    # ------------------------------------------------------------------ capture
    def capture_begin(self, pool: Any = None, capture_error_mode: str = "global") -> None:
        """Start recording tgrad's stream. ``capture_error_mode``: "global",
        "thread_local" or "relaxed" (CUDA's cudaStreamCaptureMode)."""
        from tgrad.cuda.streams import current_stream_handle
        rt = runtime()
        if rt.interpreted:
            raise RuntimeError(rt.GRAPHS_UNAVAILABLE)
        if self._capturing:
            raise RuntimeError("CUDAGraph.capture_begin: this graph is already capturing")
        if self._exec is not None:
            raise RuntimeError("CUDAGraph.capture_begin: this graph already holds a capture; "
                               "call reset() first")
        device = rt.current_device()
        stream = rt.tgrad_stream(device)
        if current_stream_handle(device) != stream:
            raise RuntimeError("tgrad.cuda.graph captures tgrad's own stream; leave the "
                               "tgrad.cuda.stream(...) context before capturing")
        gc.collect()                 # garbage freed now is not freed inside the capture
        rt.synchronize(device)
        index_errors.check(device)
        index_errors.begin_capture(device)
        try:
            rt.stream_begin_capture(stream, capture_error_mode)
        except Exception:
            index_errors.end_capture(device)
            raise
        self._rt, self._device, self._stream = rt, device, stream
        self._capturing = True

    def capture_end(self) -> None:
        """Stop recording and instantiate the executable graph."""
        if not self._capturing:
            raise RuntimeError("CUDAGraph.capture_end: capture_begin was not called")
        rt = self._rt
        self._capturing = False
        self._index_checks = index_errors.end_capture(self._device)
        graph, state = rt.stream_end_capture(self._stream)
        self._graph, self._state = graph, state
        try:
            self._exec = rt.graph_instantiate(graph, self._device)
        except Exception:
            self.reset()
            raise

    def _abort(self) -> None:
        """End a capture that raised; the partial graph is discarded."""
        if not self._capturing:
            return
        self._capturing = False
        index_errors.end_capture(self._device)
        try:
            graph, state = self._rt.stream_end_capture(self._stream)
        except Exception:  # noqa: BLE001 - an invalidated capture: nothing to keep
            return
        self._graph, self._state = graph, state
        self.reset()

    # ------------------------------------------------------------------ replay
    def replay(self) -> None:
        """Launch the captured work on tgrad's stream (asynchronous, like any launch)."""
        if self._exec is None:
            raise RuntimeError("CUDAGraph.replay: nothing captured (use capture_begin/"
                               "capture_end or the tgrad.cuda.graph(g) context first)")
        self._rt.graph_launch(self._exec, self._stream)
        index_errors.replayed(self._device, self._stream, self._index_checks)

    def reset(self) -> None:
        """Destroy the graph and release what the capture kept alive."""
        rt = self._rt
        if rt is None:
            return
        if self._exec is not None:
            rt.graph_exec_destroy(self._exec)
            self._exec = None
        if self._graph is not None:
            rt.graph_destroy(self._graph)
            self._graph = None
        if self._state is not None:
            rt.release_capture_state(self._state, self._stream)
            self._state = None
        self._index_checks = []

    def pool(self) -> tuple:
        """A token for another graph's ``capture_begin(pool=...)``."""
        return graph_pool_handle()

    def __del__(self) -> None:
        try:
            self.reset()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class graph:  # noqa: N801 - torch.cuda.graph's name
    """``with tgrad.cuda.graph(g): ...`` captures the block into ``g``
    (``pool`` and ``capture_error_mode`` as ``CUDAGraph.capture_begin``)."""

    def __init__(self, cuda_graph: CUDAGraph, pool: Any = None, stream: Any = None,
                 capture_error_mode: str = "global") -> None:
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"tgrad.cuda.graph expects a tgrad.cuda.CUDAGraph, got "
                            f"{type(cuda_graph).__name__}")
        if stream is not None:
            raise ValueError("tgrad.cuda.graph captures tgrad's own stream; stream= is not "
                             "supported")
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> CUDAGraph:
        self.cuda_graph.capture_begin(self.pool, self.capture_error_mode)
        return self.cuda_graph

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.cuda_graph._abort()
            return None
        self.cuda_graph.capture_end()
        return None
