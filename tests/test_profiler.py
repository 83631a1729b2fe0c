"""tgrad.autograd.profiler: what is recorded, self/total maths, tables, traces, roofline,
the device-timer seam and emit_nvtx.

Times are made exact with a fake clock (``_recorder._now`` patched): a custom Function
``Spend`` advances it by a known number of ns in forward and backward, so every total,
self time, average, GB/s and ratio has a hand-computed expected value. Real-clock tests
check structure (names, counts, nesting, schema), never wall-clock limits.
"""

from __future__ import annotations

import json
import math
import sys
import types
import warnings

import numpy as np
import pytest

import tgrad
from tgrad.autograd import profiler, profiler_hooks
from tgrad.autograd.profiler import _recorder, device
from tgrad.autograd.profiler.metadata import default_bytes
from tgrad.autograd.profiler.table import SORT_KEYS
from tgrad.ops.matmul import MatMul


# ----------------------------------------------------------------------------- fixtures
class FakeClock:
    """Host clock (ns) and device clock (ns) that move only when told to."""

    def __init__(self) -> None:
        self.host = 1_000_000
        self.dev = 0

    def now(self) -> int:
        return self.host


class FakeTimer:
    """A DeviceTimer over FakeClock.dev: events are the device time when recorded."""

    device = "cuda"

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.records = 0
        self.syncs = 0
        self.elapsed_calls_before_sync = 0

    def record(self) -> int:
        self.records += 1
        return self.clock.dev

    def synchronize(self) -> None:
        self.syncs += 1

    def elapsed_us(self, start: int, end: int) -> float:
        if self.syncs == 0:
            self.elapsed_calls_before_sync += 1
        return (end - start) / 1e3


CLOCK = FakeClock()


class Spend(tgrad.autograd.Function):
    """Identity whose forward costs ``host`` ns of host time and ``dev`` ns of device time
    and whose backward costs 7000 ns host / 2000 ns device. Carries roofline metadata."""

    @staticmethod
    def forward(ctx, x, host, dev):
        CLOCK.host += host
        CLOCK.dev += dev
        return x.clone()  # a nested op: recorded as a child taking 0 fake time

    @staticmethod
    def backward(ctx, g):
        CLOCK.host += 7000
        CLOCK.dev += 2000
        return g, None, None

    @staticmethod
    def bytes_accessed(args, out):
        return 8000

    @staticmethod
    def flops(args, out):
        return 16000


@pytest.fixture
def clock(monkeypatch):
    CLOCK.host, CLOCK.dev = 1_000_000, 0
    monkeypatch.setattr(_recorder, "_now", CLOCK.now)
    return CLOCK


def _by_name(events, name):
    return [e for e in events if e.name == name]


# ----------------------------------------------------------------------------- on / off
def test_disabled_profile_installs_nothing_and_records_nothing():
    x = tgrad.ones(3, requires_grad=True)
    with profiler.profile(enabled=False) as prof:
        assert profiler_hooks.ACTIVE is None
        (x * x).sum().backward()
    assert profiler_hooks.ACTIVE is None
    assert len(prof.function_events) == 0


def test_records_every_forward_op_backward_node_accumulategrad():
    x = tgrad.tensor([[1.0, 2.0]], requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(10):
            y = x ** 2
            y.backward(tgrad.ones_like(y))
    assert profiler_hooks.ACTIVE is None
    avg = {a.key: a for a in prof.key_averages()}
    # 10 forward pows at top level; PowBackward0 runs the fused pow_base_backward op.
    assert len([e for e in _by_name(prof.function_events, "pow") if e.cpu_parent is None]) == 10
    assert avg["PowBackward0"].count == 10
    assert avg["AccumulateGrad"].count == 10
    # The leaf really got its gradient: 10 * 2x.
    np.testing.assert_allclose(x.grad.numpy(), 10 * 2 * np.array([[1.0, 2.0]]))
    # Ops run by a backward node are its children; AccumulateGrad is not inside PowBackward0.
    for node in _by_name(prof.function_events, "PowBackward0"):
        assert node.kind == "backward"
        assert all(c.kind == "op" for c in node.cpu_children)
        assert [c.name for c in node.cpu_children] == ["pow_base_backward"]
        assert node.pair == "pow"
    assert {e.kind for e in _by_name(prof.function_events, "pow")} == {"op"}


def test_engine_run_is_a_range_enclosing_the_backward_nodes():
    x = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with profiler.profile() as prof:
        (x * x).sum().backward()
    runs = _by_name(prof.function_events, "autograd::engine::run_backward")
    assert len(runs) == 1 and runs[0].kind == "engine"
    nodes = [e for e in prof.function_events if e.kind == "backward"]
    assert {n.name for n in nodes} == {"SumBackward0", "MulBackward0", "AccumulateGrad"}
    # each node inside PyTorch's "autograd::engine::evaluate_function: <node>" range, which
    # has the node's interval (self time 0) and sits in the engine run
    for n in nodes:
        w = n.cpu_parent
        assert w.name == "autograd::engine::evaluate_function: " + n.name
        assert (w.kind, w.cpu_interval, w.cpu_children) == ("engine", n.cpu_interval, [n])
        assert w.self_cpu_time_total == 0.0 and w.cpu_parent is runs[0]
        assert w.id + 1 == n.id and prof.function_events[w.id] is w


def test_nested_ranges_self_plus_children_equals_total_real_clock():
    x = tgrad.randn(4, 5, requires_grad=True)
    w = tgrad.randn(5, 3, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("step"):
            (x @ w).tanh().sum().backward()
    for e in prof.function_events:
        kids = sum(c.cpu_time_total for c in e.cpu_children)
        assert math.isclose(e.self_cpu_time_total + kids, e.cpu_time_total, abs_tol=1e-6)
        for c in e.cpu_children:
            assert e.cpu_interval[0] <= c.cpu_interval[0] <= c.cpu_interval[1]
            assert c.cpu_interval[1] <= e.cpu_interval[1]
    step = _by_name(prof.function_events, "step")[0]
    assert step.kind == "user"
    # Everything else ran inside "step".
    assert all(e is step or e.cpu_parent is not None for e in prof.function_events)


# ----------------------------------------------------------------------------- exact times
def test_self_and_total_times_exact_with_fake_clock(clock):
    x = tgrad.ones(4, requires_grad=True)
    with profiler.profile() as prof:
        with profiler.record_function("outer"):
            a = Spend.apply(x, 3000, 0)
            b = Spend.apply(x, 5000, 0)
            clock.host += 2000  # outer's own work
        (a + b).sum().backward()
    avg = {e.key: e for e in prof.key_averages()}
    spend = avg["Spend"]
    assert spend.count == 2
    assert spend.cpu_time_total == pytest.approx(8.0)
    assert spend.self_cpu_time_total == pytest.approx(8.0)  # nested clone took 0
    assert spend.cpu_time == pytest.approx(4.0)
    for e in _by_name(prof.function_events, "Spend"):
        assert [(c.name, c.cpu_time_total) for c in e.cpu_children] == [("clone", 0.0)]
    assert avg["outer"].cpu_time_total == pytest.approx(10.0)
    assert avg["outer"].self_cpu_time_total == pytest.approx(2.0)
    bwd = avg["SpendBackward"]
    assert bwd.count == 2 and bwd.cpu_time_total == pytest.approx(14.0)
    assert prof.self_cpu_time_total == pytest.approx(10.0 + 14.0)
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    assert lines[3].split()[:2] == ["SpendBackward", "58.33%"]  # 14 / 24
    assert lines[4].split()[:2] == ["Spend", "33.33%"]  # 8 / 24
    assert "Self CPU time total: 24.000us" in table


@pytest.mark.parametrize("detailed", [False, True], ids=["timed", "detailed"])
def test_pair_backward_and_summary_with_device_timer(clock, monkeypatch, detailed):
    timer = FakeTimer(clock)
    monkeypatch.setitem(device._FACTORIES, "cuda", lambda: timer)
    x = tgrad.ones(4, requires_grad=True)
    with profiler.profile(use_cuda=True, record_shapes=detailed, with_flops=detailed) as prof:
        a = Spend.apply(x, 3000, 1000)
        b = Spend.apply(x, 5000, 3000)
        (a + b).sum().backward()
        assert timer.syncs == 0  # nothing resolved while profiling
    assert timer.syncs == 1 and timer.elapsed_calls_before_sync == 0
    n_ranges = len([e for e in prof.function_events  # (evaluate_function ranges: no records)
                    if not e.name.startswith("autograd::engine::evaluate_function: ")])
    assert timer.records == 2 * n_ranges + 1  # two per range + the reference event
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["Spend"].cuda_time_total == pytest.approx(4.0)
    assert avg["Spend"].self_cuda_time_total == pytest.approx(4.0)
    assert avg["SpendBackward"].cuda_time_total == pytest.approx(4.0)
    pairs = {p.forward: p for p in prof.key_averages(pair_backward=True)}
    p = pairs["Spend"]
    assert (p.backward, p.forward_count, p.backward_count) == ("SpendBackward", 2, 2)
    assert p.time_kind == "CUDA" and p.ratio == pytest.approx(4.0 / 4.0)
    assert "SpendBackward" in str(prof.pair_backward())
    summ = {s.name: s for s in prof.summary()}
    s = summ["Spend"]
    assert s.host_time_avg == pytest.approx(4.0) and s.device_time_avg == pytest.approx(2.0)
    assert s.launch_bound is True
    assert "launch (host)" in str(prof.summary())
    # The CUDA track of the trace holds the device intervals on the profile's time axis.
    cuda = [e for e in _trace(prof) if e["ph"] == "X" and e["pid"] == 1]
    spend = [e for e in cuda if e["name"] == "Spend"]
    assert [(e["ts"], e["dur"]) for e in spend] == [(0.0, 1.0), (1.0, 3.0)]


def test_roofline_columns_exact(clock):
    x = tgrad.ones(4, requires_grad=True)
    with profiler.profile(with_flops=True, peak_gbps=4.0) as prof:
        Spend.apply(x, 3000, 0)
        Spend.apply(x, 5000, 0)
    spend = {e.key: e for e in prof.key_averages()}["Spend"]
    assert spend.bytes == 16000 and spend.flops == 32000
    assert spend.gbps == pytest.approx(16000 / 8000)  # bytes / ns == GB/s
    assert spend.tflops == pytest.approx(32000 / 8e6)  # flops / (us * 1e6)
    table = prof.key_averages().table()
    row = next(r for r in table.splitlines() if r.split()[0] == "Spend")
    assert row.split()[-3:] == ["2", "50%", "0.004"]
    assert table.splitlines()[1].split()[-5:] == ["GB/s", "%", "of", "peak", "TFLOP/s"]
    assert "Peak bandwidth for % of peak: 4.0 GB/s" in table


def test_default_bytes_views_inplace_and_matmul_flops():
    a = tgrad.randn(1000)
    b = tgrad.randn(1000)
    assert default_bytes((a, b), a * b) == 3 * 1000 * 4
    assert default_bytes((a, (10, 100)), a.reshape(10, 100)) == 0  # a view moves nothing
    assert default_bytes((a, b), a) == 3 * 1000 * 4  # in place: read a, b; write a
    m = tgrad.randn(2, 1, 3, 4)
    n = tgrad.randn(5, 4, 6)
    expect = 2 * 2 * 5 * 3 * 6 * 4
    assert MatMul.flops((m, n), None) == expect
    with profiler.profile(with_flops=True) as prof:
        m.float() @ n.float()
    ev = _by_name(prof.function_events, "matmul")[0]
    out_bytes = np.empty((2, 5, 3, 6), np.float32).nbytes
    assert ev.flops == expect
    # the broadcast batch (m (2, 1, 3, 4) against n (5, 4, 6)) is read in place, not
    # copied to the full batch as PyTorch's bmm does
    assert ev.bytes == m._data.nbytes + n._data.nbytes + out_bytes


# ----------------------------------------------------------------------------- shapes / tables
def test_group_by_input_shape():
    with profiler.profile(record_shapes=True) as prof:
        for shape in [(2, 3), (2, 3), (4,)]:
            tgrad.ones(shape) * tgrad.ones(*shape)
    rows = [a for a in prof.key_averages(group_by_input_shape=True) if a.key == "mul"]
    got = sorted((a.count, str(a.input_shapes)) for a in rows)
    assert got == [(1, "[[4], [4]]"), (2, "[[2, 3], [2, 3]]")]
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    assert prof.key_averages()[0].input_shapes is None
    assert "Input Shapes" not in prof.key_averages().table()


def _ranges(clock, spec):
    """Run a record_function range per (name, ns) in spec on the fake clock."""
    for name, ns in spec:
        with profiler.record_function(name):
            clock.host += ns


def test_table_columns_sorting_and_errors(clock):
    with profiler.profile() as prof:
        _ranges(clock, [("a", 1000)] + [("b", 300)] * 5 + [("c", 1200)])
    avg = prof.key_averages()
    lines = avg.table().splitlines()
    header = lines[1]  # PyTorch's layout: a rule, the column names, a rule, the rows
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    assert [c.strip() for c in header.split("  ") if c.strip()] == [
        "Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
        "# of Calls"]  # CUDA columns only when some event has CUDA time (PyTorch's)
    assert "GB/s" not in header  # roofline columns only with with_flops=True

    def order(sort_by):
        return [r.split()[0] for r in avg.table(sort_by=sort_by).splitlines()[3:6]]

    assert order("cpu_time_total") == ["b", "c", "a"]  # 1.5, 1.2, 1.0 us
    assert order("self_cpu_time_total") == ["b", "c", "a"]
    assert order("cpu_time") == ["c", "a", "b"]  # averages 1.2, 1.0, 0.3 us
    assert order("count") == ["b", "a", "c"]  # ties keep first-seen order
    assert order(None) == ["a", "b", "c"]  # first-seen order
    row_b = next(r for r in avg.table().splitlines() if r.split()[0] == "b")
    assert row_b.split() == ["b", "40.54%", "1.500us", "40.54%", "1.500us", "0.300us",
                             "5"]  # 1.5 / (1.0 + 1.5 + 1.2) = 40.54%
    one = avg.table(sort_by="cpu_time_total", row_limit=1).splitlines()
    assert len(one) == 6 and one[3].split()[0] == "b"
    # an unknown key: PyTorch's AttributeError (getattr on the event); also a ValueError
    with pytest.raises(AttributeError, match="'FunctionEventAvg' object has no attribute "
                                             "'wall_time'"):
        avg.table(sort_by="wall_time")
    with pytest.raises(ValueError, match="unknown sort_by key 'wall_time'; valid keys are: "
                                         ".*self_cpu_time_total"):
        avg.table(sort_by="wall_time")
    for key in SORT_KEYS:  # every advertised key sorts
        avg.table(sort_by=key)
    text = str(prof)  # PyTorch: str(prof) is the table of the (unaveraged) events
    assert text == prof.function_events.table()
    assert [r.split()[0] for r in text.splitlines()[3:10]] == ["a"] + ["b"] * 5 + ["c"]


def test_table_options_as_pytorch(clock, monkeypatch):
    # time_unit, header, top_level_events_only, name truncation, the device_* sort keys and
    # the CUDA columns (only when some event has CUDA time), all as torch's _build_table.
    timer = FakeTimer(clock)
    monkeypatch.setitem(device._FACTORIES, "cuda", lambda: timer)
    with profiler.profile(use_device="cuda") as prof:
        with profiler.record_function("outer_range"):
            clock.host += 3000
            clock.dev += 4000
            with profiler.record_function("inner"):
                clock.host += 1000
                clock.dev += 1000
    ev = prof.function_events
    lines = ev.table(sort_by="self_device_time_total", time_unit="ms", header="HDR",
                     max_name_column_width=8).splitlines()
    assert lines[0] == "=" * len(lines[2].rstrip()) and lines[1] == "HDR"
    cols = [c.strip() for c in lines[3].split("  ") if c.strip()]
    assert cols[6:] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg",
                        "# of Calls"]
    # outer: self CPU 3us of 4us total, self CUDA 4us of 5us; inner: 1us / 1us
    assert lines[5].split() == ["outer...", "75.00%", "0.003ms", "100.00%", "0.004ms",
                                "0.004ms", "0.004ms", "80.00%", "0.005ms", "0.005ms", "1"]
    assert lines[6].split()[0] == "inner..."  # PyTorch's rule: cut when len >= width - 3
    assert lines[-2:] == ["Self CPU time total: 0.004ms", "Self CUDA time total: 0.005ms"]
    top = ev.table(top_level_events_only=True).splitlines()
    assert top[1] == "This report only display top-level ops statistics"
    assert [r.split()[0] for r in top[5:-3]] == ["outer_range"]  # rows, rule, 2 totals
    by_cuda = [r.split()[0] for r in ev.table(sort_by="cuda_time_total").splitlines()[3:5]]
    assert by_cuda == [r.split()[0] for r in
                       ev.table(sort_by="device_time_total").splitlines()[3:5]]
    assert ev[0].device_time_total == ev[0].cuda_time_total == pytest.approx(5.0)
    assert ev[0].self_cpu_memory_usage == 0  # memory is not profiled
    assert profiler.EventList().table() == ""  # PyTorch: an empty list prints nothing
    # key_averages(group_by_input_shape, group_by_stack_n): positional as in PyTorch
    avg = prof.key_averages(False, 5)
    assert isinstance(avg, profiler.EventList) and {a.key for a in avg} == {"outer_range",
                                                                             "inner"}


def test_legacy_profile_accepts_pytorchs_arguments():
    x = tgrad.ones(2)
    with profiler.profile(profile_memory=True, with_stack=True, with_modules=True,
                          use_kineto=True, experimental_config=None, acc_events=True) as p:
        x * x
    assert [e.name for e in p.function_events] == ["mul"]
    with pytest.warns(UserWarning, match="The foo is not a valid device option."):
        profiler.profile(use_device="foo")
    with pytest.raises(AssertionError, match="Device-only events supported only with Kineto"):
        profiler.profile(use_cpu=False)


def test_results_before_the_end_and_nesting_errors():
    with profiler.profile() as prof:
        with pytest.raises(RuntimeError, match="didn't finish"):
            prof.key_averages()
        assert str(prof) == "<unfinished tgrad.autograd.profile>"
        with pytest.raises(RuntimeError, match="already enabled"):
            with profiler.profile():
                pass
    assert profiler_hooks.ACTIVE is None


def test_record_function_decorator_and_recursion(clock):
    @profiler.record_function("fib")
    def fib(n):
        clock.host += 1000
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    assert fib(5) == 5  # outside a profile: nothing recorded, still works
    with profiler.profile() as prof:
        assert fib(4) == 3
    fibs = _by_name(prof.function_events, "fib")
    assert len(fibs) == 9  # calls of fib(4)
    assert fibs[0].cpu_time_total == pytest.approx(9.0) and fibs[0].cpu_parent is None
    assert fibs[0].self_cpu_time_total == pytest.approx(1.0)
    assert [len(f.cpu_children) for f in fibs[:2]] == [2, 2]


def test_use_cuda_without_cuda_warns_once_and_records_cpu(monkeypatch):
    monkeypatch.setitem(device._STATE, "warned_no_cuda", False)
    monkeypatch.delitem(device._FACTORIES, "cuda", raising=False)
    x = tgrad.ones(3)
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with profiler.profile(use_cuda=True) as prof:
            x * x
    assert [e.name for e in prof.function_events] == ["mul"]
    assert prof.function_events[0].cuda_time_total == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with profiler.profile(use_cuda=True):
            x * x


# ----------------------------------------------------------------------------- traces
def _trace(prof):
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            data = json.load(f)
    finally:
        os.remove(path)
    assert isinstance(data, dict) and isinstance(data["traceEvents"], list)
    return data["traceEvents"]


def test_chrome_trace_schema():
    x = tgrad.randn(3, requires_grad=True)
    with profiler.profile(record_shapes=True) as prof:
        with profiler.record_function("step"):
            (x * x).sum().backward()
    events = _trace(prof)
    meta = {(e["pid"], e["args"]["name"]) for e in events
            if e["ph"] == "M" and e["name"] == "process_name"}
    assert meta == {(0, "CPU"), (1, "CUDA")}
    xs = [e for e in events if e["ph"] == "X"]
    assert len(xs) == len(prof.function_events)
    for e in xs:
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid", "cat", "args"}
        assert isinstance(e["name"], str) and isinstance(e["tid"], int)
        assert isinstance(e["ts"], float) and e["ts"] >= 0
        assert isinstance(e["dur"], float) and e["dur"] >= 0
        assert e["pid"] == 0  # no CUDA slices on the CPU
    by_name = {e["name"]: e for e in xs}
    assert by_name["mul"]["args"]["Input Dims"] == [[3], [3]]  # PyTorch's names
    assert (by_name["mul"]["cat"], by_name["mul"]["args"]["kind"]) == ("cpu_op", "op")
    assert by_name["step"]["cat"] == "user_annotation"
    assert by_name["MulBackward0"]["cat"] == "cpu_op"
    assert by_name["autograd::engine::evaluate_function: MulBackward0"]["cat"] == "cpu_op"
    step = by_name["step"]
    for e in xs:  # every slice lies within the user range on the same track
        assert step["ts"] <= e["ts"] and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 1e-6


# ----------------------------------------------------------------------------- nvtx
def test_emit_nvtx_missing_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # import nvtx -> ImportError
    with pytest.raises(ModuleNotFoundError, match="'nvtx' package.*pip install nvtx"):
        with profiler.emit_nvtx():
            pass
    assert profiler_hooks.ACTIVE is None


def test_emit_nvtx_pushes_balanced_ranges(monkeypatch):
    log = []
    fake = types.ModuleType("nvtx")
    fake.push_range = lambda message=None, **kw: log.append(("push", message))
    fake.pop_range = lambda **kw: log.append(("pop",))
    monkeypatch.setitem(sys.modules, "nvtx", fake)
    x = tgrad.ones(2, requires_grad=True)
    with profiler.emit_nvtx(record_shapes=True):
        with profiler.record_function("step"):
            (x * x).sum().backward()
    assert profiler_hooks.ACTIVE is None
    pushes = [m[0] for k, *m in log if k == "push"]
    assert log[:5] == [("push", "step"), ("push", "mul, sizes = [[2], [2]]"), ("pop",),
                       ("push", "sum, sizes = [[2], [], [], []]"), ("pop",)]
    assert "SumBackward0" in pushes and "MulBackward0" in pushes and "AccumulateGrad" in pushes
    assert sum(1 for k, *_ in log if k == "pop") == len(pushes)
    depth = 0
    for k, *_ in log:
        depth += 1 if k == "push" else -1
        assert depth >= 0


def test_pair_backward_counts_only_true_forward_calls():
    x = tgrad.randn(5, 5, requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(3):
            (x.tanh() * x).sum().backward()
    pairs = {p.forward: p for p in prof.key_averages(pair_backward=True)}
    # MulBackward0 / TanhBackward0 run muls themselves: those are backward time, not forward.
    assert {k: (p.backward, p.forward_count, p.backward_count) for k, p in pairs.items()} == {
        "tanh": ("TanhBackward0", 3, 3), "mul": ("MulBackward0", 3, 3),
        "sum": ("SumBackward0", 3, 3)}
    fwd_mul = [e for e in prof.function_events if e.name == "mul" and e.cpu_parent is None]
    bwd_mul = _by_name(prof.function_events, "MulBackward0")
    p = pairs["mul"]
    assert p.time_kind == "CPU"
    assert p.forward_time == pytest.approx(sum(e.cpu_time_total for e in fwd_mul))
    assert p.backward_time == pytest.approx(sum(e.cpu_time_total for e in bwd_mul))
    assert p.ratio == pytest.approx(p.backward_time / p.forward_time)
    assert {s.name for s in prof.summary()} >= {"tanh", "mul", "sum"}
    assert all(s.device_time_avg is None and s.launch_bound is None for s in prof.summary())


class Boom(tgrad.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x * 2.0  # a nested op that completes
        raise ValueError("boom")

    @staticmethod
    def backward(ctx, g):
        return g


@pytest.mark.parametrize("kwargs", [{}, {"record_shapes": True, "with_flops": True}],
                         ids=["plain", "detailed"])
def test_an_op_that_raises_is_recorded_and_nesting_survives(kwargs):
    x = tgrad.ones(3)
    with profiler.profile(**kwargs) as prof:
        with profiler.record_function("outer"):
            with pytest.raises(ValueError, match="boom"):
                Boom.apply(x)
            x + x
        with profiler.record_function("left_open"):
            pass
    names = [(e.name, e.cpu_parent.name if e.cpu_parent else None)
             for e in prof.function_events]
    assert names == [("outer", None), ("Boom", "outer"), ("mul", "Boom"), ("add", "outer"),
                     ("left_open", None)]
    boom = prof.function_events[1]
    assert boom.cpu_interval[1] <= prof.function_events[3].cpu_interval[0]


def test_range_still_open_at_exit_ends_with_the_profile(clock):
    rf = profiler.record_function("open")
    with profiler.profile() as prof:
        clock.host += 1000
        rf.__enter__()
        clock.host += 4000
    rf.__exit__(None, None, None)  # after the profile: ignored, nothing breaks
    (ev,) = prof.function_events
    assert ev.cpu_interval == (pytest.approx(1.0), pytest.approx(5.0))


@pytest.mark.parametrize("record_shapes", [False, True])
def test_user_ranges_exited_out_of_order_keep_their_own_times(monkeypatch, record_shapes):
    # a opens, b opens, a closes, b closes: each range ends at its own exit (the flat
    # recorder used to close the innermost open range, swapping the two durations)
    from tgrad.autograd.profiler import _recorder
    clock = iter([0, 1_000, 10_000, 30_000, 100_000, 200_000, 300_000])
    monkeypatch.setattr(_recorder, "_now", lambda: next(clock))
    with profiler.profile(record_shapes=record_shapes) as prof:
        a, b = profiler.record_function("a"), profiler.record_function("b")
        a.__enter__()
        b.__enter__()
        a.__exit__(None, None, None)
        b.__exit__(None, None, None)
    times = {e.name: e.cpu_interval for e in prof.function_events}
    assert times == {"a": (1.0, 30.0), "b": (10.0, 100.0)}  # us from the profile's start


def test_only_the_profiling_thread_is_recorded():
    # PyTorch's profiler is thread-local: ranges and ops of another thread (a data loading
    # thread) are not recorded and do not disturb the profiling thread's ranges
    import threading
    go, done = threading.Event(), threading.Event()

    def background():
        go.wait()
        for _ in range(20):
            with profiler.record_function("bg"):
                tgrad.ones(3) * 2
        done.set()

    worker = threading.Thread(target=background)
    worker.start()
    with profiler.profile() as prof:
        with profiler.record_function("main"):
            go.set()
            done.wait()
            tgrad.ones(2) + 1
    worker.join()
    names = [e.name for e in prof.function_events]
    assert "bg" not in names and names.count("main") == 1
    main = next(e for e in prof.function_events if e.name == "main")
    assert [c.name for c in main.cpu_children] == ["add"]


def test_a_second_start_is_ignored_and_the_profiler_still_works():
    p = tgrad.profiler.profile()
    p.start()
    with pytest.warns(UserWarning, match="already running; the call is ignored"):
        p.start()
    tgrad.ones(2) * 3
    p.stop()
    assert any(e.name == "mul" for e in p.events())
    assert profiler_hooks.ACTIVE is None
    with tgrad.profiler.profile() as again:  # nothing left installed
        tgrad.ones(2) - 1
    assert any(e.name == "sub" for e in again.events())


def test_pytorch_keywords_of_the_profiler_api(tmp_path):
    with tgrad.profiler.profile(custom_trace_id_callback=lambda: "id",
                                post_processing_timeout_s=1.0) as prof:
        tgrad.ones(2) * 3
        tgrad.ones(3) + 1
    events = prof.events()
    by_shape = events.key_averages(group_by_input_shapes=True)
    assert sorted(e.key for e in by_shape) == ["add", "mul"]
    assert events.key_averages(group_by_input_shape=True)[0].key in ("add", "mul")
    none, every = prof.key_averages().table(row_limit=0), prof.key_averages().table(row_limit=-1)
    assert "Name" in none and "mul" not in none and "add" not in none  # (0: no rows)
    assert "mul" in every and "add" in every
    prof.export_chrome_trace(str(tmp_path / "t.json"), use_python_export=True)
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    handler = tgrad.profiler.tensorboard_trace_handler(str(tmp_path / "tb"),
                                                       use_python_export=True)
    handler(prof)
    assert len(list((tmp_path / "tb").iterdir())) == 1
