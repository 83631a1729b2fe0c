"""The hot path: the object installed as ``profiler_hooks.ACTIVE`` while a profile runs.

Every range adds to ``records`` when it starts and when it ends, so ``records`` is the
exact sequence of starts and ends (nesting is rebuilt from it when the profile ends,
whatever the clock's resolution; ranges on one thread nest properly):

    Recorder:          start: op_class or info, t_start_ns    end: t_end_ns   (flat)
                       (a user range's end: RangeEnd(index of its start, t_end_ns), as
                       record_function ranges may be exited out of order)
    DetailedRecorder:  start: [info, t_start_ns, t_end_ns, shapes, dev_start, dev_end,
                               metrics]
                       end:   the same list again (t_end_ns filled in)

Only the thread that started the profile records (PyTorch's profiler is thread-local):
a start on another thread returns a false handle and its end adds nothing.

``info`` is a tuple cached per op class / node class / range name:
``(name, kind, pair, bytes_fn, flops_fn)`` where ``pair`` links an op to its backward node
name and a node to its forward op name. ``DetailedRecorder`` (record_shapes / with_flops /
device timer) adds input shapes, device events and, after ``op_end``, ``(bytes, flops)``.
Host timestamps are taken innermost (device events outside), so an op's own CPU time
excludes the event records.
"""

from __future__ import annotations

import threading
import time

from tgrad.autograd.profiler.metadata import op_hooks
from tgrad.tensor import Tensor

_now = time.perf_counter_ns

INFO, T0, T1, SHAPES, E0, E1, METRICS = range(7)
OP, BACKWARD, USER, ENGINE = "op", "backward", "user", "engine"


def shapes_of(args: tuple) -> list:
    """PyTorch's input_shapes: one shape list per argument ([] for non-tensors)."""
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


def shape_lists(shapes) -> list:
    """Recorded shape tuples as PyTorch's list of lists."""
    return [] if shapes is None else [list(s) for s in shapes]


class RangeEnd:
    """The end of a user range in a flat record: the index of its start marker in
    ``records`` and the end time."""

    __slots__ = ("start", "t")

    def __init__(self, start: int, t: int) -> None:
        self.start, self.t = start, t


class Recorder:
    """Host timestamps only: the cheapest recorder (two clock reads per range).

    ``records`` is flat and allocates nothing per range that the garbage collector tracks:
    a range start appends its marker (the op class, or the cached info tuple of a node or
    named range) then its start time (an int); a range end appends its end time (an int),
    which closes the innermost open range. The hot methods are closures over locals (no
    attribute lookups), set per instance.
    """

    timer = None

    def __init__(self) -> None:
        self.records: list = []
        self._op_info: dict = {}
        self._node_info: dict = {}
        self._range_info: dict = {}
        self._install()

    def _install(self) -> None:
        records = self.records
        append = records.append
        node_get, make_node = self._node_info.get, self._make_node_info
        now, ident, tid = _now, threading.get_ident, threading.get_ident()

        def op_start(cls, args: tuple) -> bool:
            if ident() != tid:
                return False
            append(cls)  # the class becomes its info when the profile ends
            append(now())
            return True

        def end(handle, out=None) -> None:
            if handle:
                append(now())

        def node_start(node) -> bool:
            if ident() != tid:
                return False
            append(node_get(type(node)) or make_node(node))
            append(now())
            return True

        def range_start(name: str, kind: str = USER) -> int:
            if ident() != tid:
                return 0
            append(self._range(name, kind))
            append(now())
            return len(records) - 1  # (> 0: the index of the start marker, plus one)

        def range_end(handle) -> None:
            if handle:
                append(RangeEnd(handle - 1, now()))

        self.op_start, self.op_end = op_start, end
        self.node_start, self.node_end = node_start, end
        self.range_start, self.range_end = range_start, range_end

    def op_info(self, cls) -> tuple:
        return self._op_info.get(cls) or self._make_op_info(cls)

    def _make_op_info(self, cls) -> tuple:
        name = cls.name or cls.__name__
        backward_cls = getattr(cls, "_backward_cls", None)
        pair = backward_cls._node_name if backward_cls is not None else None
        info = (name, OP, pair) + op_hooks(cls, name)
        self._op_info[cls] = info
        return info

    def _make_node_info(self, node) -> tuple:
        fwd = getattr(type(node), "_forward_cls", None)
        pair = (fwd.name or fwd.__name__) if fwd is not None else None
        info = (node.name(), BACKWARD, pair, None, None)
        self._node_info[type(node)] = info
        return info

    def _range(self, name: str, kind: str) -> tuple:
        info = self._range_info.get((name, kind))
        if info is None:
            info = self._range_info[(name, kind)] = (str(name), kind, None, None, None)
        return info


class TimedRecorder(Recorder):
    """``Recorder`` plus device events (``use_cuda=True``): ``device_events`` gets one event
    per range start and one per range end, in the same order as ``records``. Per range:
    device event, host start ... host end, device event (host times exclude the events)."""

    def __init__(self, timer) -> None:
        self.timer = timer
        self.device_events: list = []
        super().__init__()

    def _install(self) -> None:
        records = self.records
        append = records.append
        dev = self.device_events.append
        record = self.timer.record
        node_get, make_node = self._node_info.get, self._make_node_info
        now, ident, tid = _now, threading.get_ident, threading.get_ident()

        def op_start(cls, args: tuple) -> bool:
            if ident() != tid:
                return False
            append(cls)
            dev(record())
            append(now())
            return True

        def end(handle, out=None) -> None:
            if handle:
                append(now())
                dev(record())

        def node_start(node) -> bool:
            if ident() != tid:
                return False
            append(node_get(type(node)) or make_node(node))
            dev(record())
            append(now())
            return True

        def range_start(name: str, kind: str = USER) -> int:
            if ident() != tid:
                return 0
            append(self._range(name, kind))
            dev(record())
            append(now())
            return len(records) - 1

        def range_end(handle) -> None:
            if handle:
                append(RangeEnd(handle - 1, now()))
                dev(record())

        self.op_start, self.op_end = op_start, end
        self.node_start, self.node_end = node_start, end
        self.range_start, self.range_end = range_start, range_end


class DetailedRecorder(Recorder):
    """Adds input shapes, bytes / FLOPs and device events (each only when asked for).
    Its records are lists ``[info, t0, t1, shapes, dev_start, dev_end, metrics]``, appended
    at the start and again (the same list) at the end."""

    def __init__(self, record_shapes: bool, with_flops: bool, timer) -> None:
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.timer = timer
        super().__init__()

    def _install(self) -> None:
        self._append = self.records.append
        self._tid = threading.get_ident()
        for name in ("op_start", "op_end", "node_start", "node_end", "range_start",
                     "range_end"):
            setattr(self, name, getattr(self, "_" + name))

    def _op_start(self, cls, args: tuple) -> list | None:
        if threading.get_ident() != self._tid:
            return None
        rec = [self._op_info.get(cls) or self._make_op_info(cls), 0, 0, None, None, None,
               args if self.with_flops else None]  # args until op_end (counts need `out`)
        if self.record_shapes:
            rec[SHAPES] = [a.shape if isinstance(a, Tensor) else () for a in args]
        if self.timer is not None:
            rec[E0] = self.timer.record()
        self._append(rec)
        rec[T0] = _now()
        return rec

    def _op_end(self, rec: list | None, out=None) -> None:
        if rec is None:
            return
        rec[T1] = _now()
        self._append(rec)
        if self.timer is not None:
            rec[E1] = self.timer.record()
        if self.with_flops:
            info = rec[INFO]
            args = rec[METRICS]
            flops_fn = info[4]
            rec[METRICS] = (info[3](args, out), flops_fn(args, out) if flops_fn else None)

    def _node_start(self, node) -> list:
        return self._start(self._node_info.get(type(node)) or self._make_node_info(node))

    def _range_start(self, name: str, kind: str = USER) -> list:
        return self._start(self._range(name, kind))

    def _start(self, info: tuple) -> list | None:
        if threading.get_ident() != self._tid:
            return None
        rec = [info, 0, 0, None, None, None, None]
        if self.timer is not None:
            rec[E0] = self.timer.record()
        self._append(rec)
        rec[T0] = _now()
        return rec

    def _end(self, rec: list | None) -> None:
        if rec is None:
            return
        rec[T1] = _now()
        self._append(rec)
        if self.timer is not None:
            rec[E1] = self.timer.record()

    _node_end = _end
    _range_end = _end


def make_recorder(record_shapes: bool, with_flops: bool, timer) -> Recorder:
    """The cheapest recorder that records what was asked for."""
    if record_shapes or with_flops:
        return DetailedRecorder(record_shapes, with_flops, timer)
    if timer is not None:
        return TimedRecorder(timer)
    return Recorder()
