"""``profile`` (the context manager) and ``record_function`` (user ranges)."""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

from tgrad.autograd import profiler_hooks
from tgrad.autograd.profiler import _recorder
from tgrad.autograd.profiler._recorder import (
    E0,
    E1,
    INFO,
    METRICS,
    OP,
    SHAPES,
    T0,
    T1,
    USER,
    DetailedRecorder,
    RangeEnd,
    Recorder,
    make_recorder,
    shape_lists,
)
from tgrad.autograd.profiler.device import make_timer
from tgrad.autograd.profiler.events import EventList, FunctionEvent

__all__ = ["profile", "record_function"]


class profile:
    """Profile every op forward, backward node, the engine run and ``record_function``
    ranges inside the ``with`` block (PyTorch's ``torch.autograd.profiler.profile``).

    Args:
        enabled: False makes this a no-op (nothing recorded, nothing added to ops).
        use_cuda: also time each range with device events (resolved once at exit); warns
            once and records CPU times only when no CUDA device timer is available.
        record_shapes: record the input shapes of each op (``group_by_input_shape``).
        use_device: PyTorch's spelling of ``use_cuda``: ``"cuda"`` times the device;
            another name warns that it is not a valid device option (as PyTorch).
        with_flops: record bytes read + written and FLOPs of each op (roofline columns).
        peak_gbps: bandwidth for the ``% of peak`` column; measured by a copy once per
            process when not given.
        profile_memory, with_stack, with_modules, use_kineto, experimental_config,
        acc_events, custom_trace_id_callback: accepted as in PyTorch and record nothing
        more (tgrad profiles no memory, Python stacks or modules). ``use_cpu=False``
        raises PyTorch's AssertionError (device-only events need Kineto).
    """

    def __init__(self, enabled: bool = True, use_cuda: bool = False,
                 record_shapes: bool = False, *, use_device: str | None = None,
                 with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False,
                 use_kineto: bool = False, use_cpu: bool = True,
                 experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Callable | None = None,
                 peak_gbps: float | None = None) -> None:
        if enabled and not use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto "
                                 "(use_kineto=True)")
        if use_device is not None and use_device != "cuda":
            warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=2)
        self.enabled = enabled
        self.use_cuda = use_cuda or use_device == "cuda"
        self.use_device = "cuda" if self.use_cuda else None
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.peak_gbps = peak_gbps
        self.function_events: EventList | None = None
        self._recorder: Recorder | None = None
        self._entered = False

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self._entered:
            raise RuntimeError("profiler context manager is not reentrant")
        if profiler_hooks.ACTIVE is not None:
            raise RuntimeError("Profiler is already enabled on this thread")
        self._entered = True
        timer = make_timer("cuda") if self.use_cuda else None
        rec = make_recorder(self.record_shapes, self.with_flops, timer)
        self._recorder = rec
        self._thread = threading.get_native_id()  # the OS thread id, as PyTorch records
        self._ref_event = timer.record() if timer is not None else None
        self._t0 = _recorder._now()
        profiler_hooks.ACTIVE = rec
        return self

    def __exit__(self, *exc) -> bool:
        if not self.enabled or self._recorder is None:  # (off, or never entered)
            self.function_events = EventList(peak_gbps=self.peak_gbps)
            return False
        t_exit = _recorder._now()
        if profiler_hooks.ACTIVE is self._recorder:
            profiler_hooks.ACTIVE = None
        rec = self._recorder
        self.function_events = self._build(rec, t_exit)
        self._recorder = None
        return False

    # ------------------------------------------------------------------ building events
    def _build(self, rec: Recorder, t_exit: int) -> EventList:
        """Records -> FunctionEvents. The records are the sequence of range starts and ends,
        so a stack of open ranges gives every event its parent exactly. Ranges still open
        when the profile ended end at the profile's end."""
        timer = rec.timer
        if timer is not None:  # the single synchronize of the whole profile
            timer.synchronize()
        events: list = []
        stack: list = []

        def start(e: FunctionEvent) -> None:
            if stack:
                e.cpu_parent = stack[-1]
                stack[-1].cpu_children.append(e)
            stack.append(e)
            events.append(e)

        t0 = self._t0
        records = rec.records
        if isinstance(rec, DetailedRecorder):
            index: dict = {}  # id(record) -> its event; a record's second sighting ends it
            for r in records:
                e = index.get(id(r))
                if e is None:
                    e = index[id(r)] = self._detailed_event(len(events), r, t_exit, timer)
                    start(e)
                elif stack and stack[-1] is e:
                    stack.pop()
                elif e in stack:
                    stack.remove(e)
            return EventList(_with_evaluate_ranges(events), self.peak_gbps, timer)
        # Flat records (Recorder / TimedRecorder); device events, if any, run in step.
        dev = getattr(rec, "device_events", None)
        ref = self._ref_event
        k = 0
        i, n = 0, len(records)
        thread = self._thread
        started: dict = {}  # index of a start marker -> its event (for RangeEnd)
        while i < n:
            item = records[i]
            kind = type(item)
            if kind is int or kind is RangeEnd:
                if kind is int:  # an op's or node's end: closes the innermost open range
                    e, t = (stack.pop() if stack else None), item
                else:  # a user range's end: closes that range, wherever it is
                    e, t = started.get(item.start), item.t
                    if e is not None and e in stack:
                        stack.remove(e)
                if e is not None:
                    e.cpu_interval = (e.cpu_interval[0], (t - t0) / 1e3)
                    if dev is not None:
                        e.cuda_interval = (e.cuda_interval[0], timer.elapsed_us(ref, dev[k]))
                k += 1
                i += 1
                continue
            info = rec.op_info(item) if isinstance(item, type) else item
            cs = timer.elapsed_us(ref, dev[k]) if dev is not None else None
            k += 1
            e = FunctionEvent(len(events), info[0], info[1], thread,
                              (records[i + 1] - t0) / 1e3, (t_exit - t0) / 1e3,
                              cuda_start_us=cs, cuda_end_us=cs, pair=info[2])
            started[i] = e
            start(e)
            i += 2
        return EventList(_with_evaluate_ranges(events), self.peak_gbps, timer)

    def _detailed_event(self, i: int, r: list, t_exit: int, timer) -> FunctionEvent:
        info = r[INFO]
        t0 = self._t0
        end = r[T1] if r[T1] else t_exit
        shapes = shape_lists(r[SHAPES])
        nbytes = flops = cs = ce = None
        m = r[METRICS]
        if info[1] == OP and r[T1] and type(m) is tuple and len(m) == 2 \
                and isinstance(m[0], int):
            nbytes, flops = m
        if timer is not None:
            ref = self._ref_event
            cs = timer.elapsed_us(ref, r[E0])
            ce = timer.elapsed_us(ref, r[E1] if r[E1] is not None else r[E0])
        return FunctionEvent(i, info[0], info[1], self._thread, (r[T0] - t0) / 1e3,
                             (end - t0) / 1e3, shapes, cs, ce, nbytes, flops, info[2])

    # ------------------------------------------------------------------ results
    def _check_finish(self) -> EventList:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")
        return self.function_events

    def __str__(self) -> str:
        if self.function_events is None:
            return "<unfinished tgrad.autograd.profile>"
        return str(self.function_events)

    def events(self) -> EventList:
        return self._check_finish()

    def table(self, sort_by: str | None = None, row_limit: int = 100, *args: Any,
              **kwargs: Any) -> str:
        return self._check_finish().table(sort_by, row_limit, *args, **kwargs)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False, *, pair_backward: bool = False):
        """Events averaged by name (and input shapes); see EventList.key_averages."""
        return self._check_finish().key_averages(group_by_input_shape, group_by_stack_n,
                                                 group_by_overload_name,
                                                 pair_backward=pair_backward)

    def pair_backward(self):
        """Each forward op next to its backward node (forward/backward time and ratio)."""
        return self.key_averages(pair_backward=True)

    def summary(self):
        """Host dispatch time vs device time per op (launch-bound ops at a glance)."""
        from tgrad.autograd.profiler.pairs import summarize
        return summarize(self.key_averages())

    def total_average(self):
        return self._check_finish().total_average()

    @property
    def self_cpu_time_total(self) -> float:
        return self._check_finish().self_cpu_time_total

    def export_chrome_trace(self, path: str, use_python_export: bool = False) -> None:
        self._check_finish().export_chrome_trace(path)


EVALUATE_FUNCTION = "autograd::engine::evaluate_function: "


def _with_evaluate_ranges(events: list) -> list:
    """PyTorch's engine runs each backward node inside a range named
    ``"autograd::engine::evaluate_function: <node>"``; tgrad times the node alone, so that
    parent range is added here, once per profile (the hot path records nothing more). It
    has the node's CPU and CUDA intervals (self time 0) and kind "engine"."""
    out = []
    for e in events:
        if e.kind == "backward":
            cuda = e.cuda_interval or (None, None)
            w = FunctionEvent(0, EVALUATE_FUNCTION + e.name, "engine", e.thread,
                              *e.cpu_interval, cuda_start_us=cuda[0], cuda_end_us=cuda[1])
            p = w.cpu_parent = e.cpu_parent
            if p is not None:
                p.cpu_children[next(i for i, c in enumerate(p.cpu_children) if c is e)] = w
            w.cpu_children.append(e)
            e.cpu_parent = w
            out.append(w)
        out.append(e)
    for i, e in enumerate(out):
        e.id = i
    return out


class record_function:
    """A named user range inside a profile: ``with record_function("step"):`` or as a
    decorator ``@record_function("step")``. Outside a profile it costs one attribute read."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self._prof = None
        self._handle = None

    def __enter__(self) -> record_function:
        prof = profiler_hooks.ACTIVE
        if prof is not None:
            self._prof = prof
            self._handle = prof.range_start(self.name, USER)
        return self

    def __exit__(self, *exc) -> bool:
        if self._prof is not None:
            self._prof.range_end(self._handle)
            self._prof = self._handle = None
        return False

    def __call__(self, fn: Callable) -> Callable:
        name, args = self.name, self.args

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with record_function(name, args):  # a fresh range per call (re-entrant)
                return fn(*a, **k)
        return wrapper
