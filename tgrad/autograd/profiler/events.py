"""FunctionEvent (one recorded range), FunctionEventAvg (per-key sums) and EventList.

All times are microseconds (floats), as in PyTorch. ``self_*`` times subtract the totals of
the direct children (ranges that started inside this one), so nesting never double counts
within one row.
"""

from __future__ import annotations

from typing import Iterable

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList", "format_time"]


def format_time(time_us: float) -> str:
    """PyTorch's format: 1.234s / 1.234ms / 1.234us."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


class _TimesMixin:
    @property
    def cpu_time(self) -> float:
        """Average CPU time per call (total / count)."""
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cuda_time(self) -> float:
        """Average CUDA time per call (total / count)."""
        return 0.0 if self.count == 0 else self.cuda_time_total / self.count

    @property
    def self_cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.self_cpu_time_total / self.count

    @property
    def self_cuda_time(self) -> float:
        return 0.0 if self.count == 0 else self.self_cuda_time_total / self.count

    # PyTorch's device_* names (it now prefers them to cuda_*), and its memory fields:
    # memory is not profiled, so they are 0 (as PyTorch's without profile_memory).
    @property
    def device_time(self) -> float:
        return self.cuda_time

    @property
    def device_time_total(self) -> float:
        return self.cuda_time_total

    @property
    def self_device_time_total(self) -> float:
        return self.self_cuda_time_total

    @property
    def self_device_time(self) -> float:
        return self.self_cuda_time

    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0

    # ---------------------------------------------------------------- roofline
    def _busy_us(self) -> float:
        """Time the op's work took: its total device time when measured, else its total
        CPU time (totals: ops a composite op runs inside itself do its work)."""
        return self.cuda_time_total if self.has_cuda else self.cpu_time_total

    @property
    def gbps(self) -> float | None:
        """Achieved bandwidth in GB/s (bytes read + written / total time), None if unknown."""
        t = self._busy_us()
        return None if self.bytes is None or t <= 0 else self.bytes / (t * 1e3)

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s (FLOPs / total time), None when the op has no FLOP count."""
        t = self._busy_us()
        return None if self.flops is None or t <= 0 else self.flops / (t * 1e6)


def _rewrite_name(name: str) -> str:
    """PyTorch's wildcard: the "ProfilerStep#N" ranges of tgrad.profiler's step() all get
    the name (and key) "ProfilerStep*", so key_averages has one row for them; the trace
    keeps "ProfilerStep#N" (``trace_name``)."""
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


class FunctionEvent(_TimesMixin):
    """One recorded range: an op forward, a backward node, a user or engine range."""

    count = 1

    def __init__(self, id: int, name: str, kind: str, thread: int,  # noqa: A002
                 start_us: float, end_us: float, input_shapes: list | None = None,
                 cuda_start_us: float | None = None, cuda_end_us: float | None = None,
                 nbytes: int | None = None, flops: int | None = None,
                 pair: str | None = None) -> None:
        self.id = id
        self.name = _rewrite_name(name)
        self.trace_name = name  # the name in the Chrome trace
        self.kind = kind  # "op", "backward", "user" or "engine"
        self.thread = thread
        self.cpu_interval = (start_us, end_us)
        self.cuda_interval = (None if cuda_start_us is None else (cuda_start_us, cuda_end_us))
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.bytes = nbytes
        self.flops = flops
        self.pair = pair  # backward node name of an op / forward op name of a node
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def has_cuda(self) -> bool:
        return self.cuda_interval is not None

    @property
    def cpu_time_total(self) -> float:
        return self.cpu_interval[1] - self.cpu_interval[0]

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cuda_time_total(self) -> float:
        iv = self.cuda_interval
        return 0.0 if iv is None else iv[1] - iv[0]

    @property
    def self_cuda_time_total(self) -> float:
        return max(0.0, self.cuda_time_total - sum(c.cuda_time_total
                                                   for c in self.cpu_children))

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} kind={self.kind} "
                f"cpu_time={format_time(self.cpu_time_total)} "
                f"cuda_time={format_time(self.cuda_time_total)} "
                f"input_shapes={self.input_shapes}>")


class FunctionEventAvg(_TimesMixin):
    """Sums over all events that share a key (name, and input shapes when grouped)."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.kind: str | None = None
        self.pair: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cuda_time_total = 0.0
        self.self_cuda_time_total = 0.0
        self.input_shapes: list | None = None
        self.bytes: int | None = None
        self.flops: int | None = None
        self.has_cuda = False
        self.cpu_parent = None  # the first event's (PyTorch's: top_level_events_only)

    def add(self, other) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.cpu_parent = other.cpu_parent
            self.kind = other.kind
            self.pair = other.pair
            self.input_shapes = other.input_shapes
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cuda_time_total += other.cuda_time_total
        self.self_cuda_time_total += other.self_cuda_time_total
        self.has_cuda = self.has_cuda or other.has_cuda
        if other.bytes is not None:
            self.bytes = (self.bytes or 0) + other.bytes
        if other.flops is not None:
            self.flops = (self.flops or 0) + other.flops
        return self

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} count={self.count} "
                f"self_cpu_time={format_time(self.self_cpu_time_total)} "
                f"cpu_time={format_time(self.cpu_time)} "
                f"cuda_time={format_time(self.cuda_time)} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of FunctionEvent / FunctionEventAvg with PyTorch's reporting methods."""

    def __init__(self, events: Iterable = (), peak_gbps: float | None = None,
                 timer=None) -> None:
        super().__init__(events)
        self._peak_gbps = peak_gbps
        self._timer = timer

    def __str__(self) -> str:
        return self.table()

    @property
    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False, *, pair_backward: bool = False,
                     group_by_input_shape: bool | None = None):
        """Average events by name (and input shapes: PyTorch's EventList spells it
        ``group_by_input_shapes``, its profilers ``group_by_input_shape``; both are taken).
        tgrad records no stacks or overload names, so ``group_by_stack_n`` and
        ``group_by_overload_name`` change nothing. With ``pair_backward=True`` return a
        PairList: each forward op next to its backward node."""
        if group_by_input_shape is not None:
            group_by_input_shapes = group_by_input_shape
        if pair_backward:  # from the events themselves: it needs their nesting
            from tgrad.autograd.profiler.pairs import pair_backward as _pair
            return _pair(self)
        groups: dict = {}
        for e in self:
            key = (e.key, str(e.input_shapes)) if group_by_input_shapes else e.key
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
            avg.add(e)
        if not group_by_input_shapes:
            for avg in groups.values():
                avg.input_shapes = None
        return EventList(groups.values(), self._peak_gbps, self._timer)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for e in self:
            total.add(e)
        total.key = "Total"
        total.input_shapes = None
        return total

    def table(self, sort_by: str | None = None, row_limit: int = 100,
              max_src_column_width: int = 75, max_name_column_width: int = 55,
              max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None, *,
              peak_gbps: float | None = None) -> str:
        """PyTorch's table: ``sort_by`` an event attribute (descending; unknown: an
        AttributeError), ``time_unit`` "s" / "ms" / "us" (default: per value),
        ``top_level_events_only`` rows of events without a parent. tgrad records no source
        locations, so ``max_src_column_width`` changes nothing."""
        from tgrad.autograd.profiler.table import build_table
        return build_table(self, sort_by=sort_by, row_limit=row_limit,
                           max_name_column_width=max_name_column_width, header=header,
                           peak_gbps=peak_gbps if peak_gbps is not None else self._peak_gbps,
                           timer=self._timer, max_shapes_column_width=max_shapes_column_width,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        """Write a Chrome trace (JSON, loadable in Perfetto / chrome://tracing); tgrad's
        export is always the Python one (``use_python_export`` is PyTorch's switch)."""
        from tgrad.autograd.profiler.trace import export_chrome_trace
        export_chrome_trace(self, path)
