"""tgrad.profiler: PyTorch's torch.profiler API (profile with schedule / step /
on_trace_ready, schedule, tensorboard_trace_handler, activities) over the autograd profiler.

Expected values are hand-written: the schedule tables come from torch.profiler.schedule's
documented rule (skip_first, then cycles of wait / warmup / active, the last active step
RECORD_AND_SAVE, ``repeat`` cycles), and each step runs a known number of ops inside a
``record_function("it{i}")`` marker, so which steps were recorded and how many ops each
window holds are known exactly.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import tgrad
import tgrad.profiler as tgrad_profiler
from tgrad.autograd import profiler as autograd_profiler
from tgrad.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)

ROOT = Path(__file__).resolve().parent.parent
LETTER = {ProfilerAction.NONE: "N", ProfilerAction.WARMUP: "W", ProfilerAction.RECORD: "R",
          ProfilerAction.RECORD_AND_SAVE: "S"}


def actions(fn, n: int = 12) -> str:
    return "".join(LETTER[fn(i)] for i in range(n))


# ----------------------------------------------------------------------------- schedule
@pytest.mark.parametrize("kwargs, table", [
    # cycle = 1 wait + 1 warmup + 2 active, forever
    (dict(wait=1, warmup=1, active=2), "NWRSNWRSNWRS"),
    # one cycle only
    (dict(wait=1, warmup=1, active=2, repeat=1), "NWRSNNNNNNNN"),
    # 2 skipped steps, then two cycles of N W S
    (dict(skip_first=2, wait=1, warmup=1, active=1, repeat=2), "NNNWSNWSNNNN"),
    # skip_first_wait: the first cycle starts at its warmup (right after skip_first)
    (dict(skip_first_wait=1, skip_first=1, wait=2, warmup=1, active=1), "NWSNNWSNNWSN"),
    (dict(skip_first_wait=1, wait=2, warmup=1, active=2, repeat=2), "WRSNNWRSNNNN"),
    (dict(wait=0, warmup=2, active=3, skip_first=1), "NWWRRSWWRRSW"),
    # every step is a whole cycle
    (dict(wait=0, warmup=1, active=1), "WSWSWSWSWSWS"),
])
def test_schedule_action_tables(kwargs, table):
    assert actions(schedule(**kwargs)) == table


def test_schedule_without_warmup_warns_and_saves_every_step():
    with pytest.warns(UserWarning, match="Profiler won't be using warmup"):
        fn = schedule(wait=0, warmup=0, active=1)
    assert actions(fn) == "S" * 12


@pytest.mark.parametrize("kwargs, bad", [
    (dict(wait=-1, warmup=1, active=1), "wait=-1"),
    (dict(wait=0, warmup=-1, active=1), "warmup=-1"),
    (dict(wait=0, warmup=1, active=0), "active=0"),
    (dict(wait=0, warmup=1, active=1, repeat=-1), "repeat=-1"),
    (dict(wait=0, warmup=1, active=1, skip_first=-2), "skip_first=-2"),
])
def test_schedule_argument_errors(kwargs, bad):
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments") as err:
        schedule(**kwargs)
    assert bad in str(err.value)


def test_schedule_rejects_negative_steps_and_positional_args():
    with pytest.raises(AssertionError, match="Step must be non-negative. Got -1."):
        schedule(wait=1, warmup=1, active=1)(-1)
    with pytest.raises(TypeError):
        schedule(1, 1, 1)  # keyword-only, as in torch


def test_enums_have_torchs_members_and_values():
    assert [(a.name, a.value) for a in ProfilerAction] == [
        ("NONE", 0), ("WARMUP", 1), ("RECORD", 2), ("RECORD_AND_SAVE", 3),
        ("DEVICE_STOPPED", 4)]
    assert {a.name: a.value for a in ProfilerActivity} == {
        "CPU": 0, "XPU": 1, "CUDA": 2, "HPU": 3, "MTIA": 4, "PrivateUse1": 5}


# ----------------------------------------------------------------------------- recording
def run_steps(prof: profile, n: int, x: tgrad.Tensor, muls_per_step: int = 1) -> None:
    """Step i: a record_function("it{i}") marker around ``muls_per_step`` muls."""
    for i in range(n):
        with record_function(f"it{i}"):
            for _ in range(muls_per_step):
                x * x
        prof.step()


def window(prof: profile) -> dict:
    """What the current window holds: marker names, op counts, step number."""
    rows = {e.key: e.count for e in prof.key_averages()}
    marks = sorted((e.name for e in prof.events() if e.name.startswith("it")),
                   key=lambda s: int(s[2:]))
    return {"step": prof.step_num, "marks": marks, "mul": rows.get("mul", 0),
            "steps": rows.get("ProfilerStep*", 0)}


def test_records_only_active_steps_and_calls_on_trace_ready_per_cycle():
    x = tgrad.randn(4)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler clears events at the end of each cycle"
        with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                     on_trace_ready=lambda p: seen.append(window(p))) as prof:
            run_steps(prof, 10, x, muls_per_step=3)
    # NWRS NWRS NN: cycles record steps 2-3 and 6-7; the handler runs at steps 4 and 8.
    assert seen == [{"step": 4, "marks": ["it2", "it3"], "mul": 6, "steps": 2},
                    {"step": 8, "marks": ["it6", "it7"], "mul": 6, "steps": 2}]
    assert prof.step_num == 10
    # The last window is what the profile reports afterwards.
    assert window(prof)["marks"] == ["it6", "it7"]
    # Each step is a "ProfilerStep#N" range (trace name) holding that step's work.
    steps = [e for e in prof.events() if e.name == "ProfilerStep*"]
    assert [e.trace_name for e in steps] == ["ProfilerStep#6", "ProfilerStep#7"]
    assert [[c.name for c in e.cpu_children] for e in steps] == [["it6"], ["it7"]]


def test_cycle_open_at_exit_is_saved_at_stop():
    x = tgrad.randn(4)
    seen = []
    with profile(schedule=schedule(wait=1, warmup=1, active=3),
                 on_trace_ready=lambda p: seen.append(window(p))) as prof:
        run_steps(prof, 4, x)  # steps N W R R, and step 4 (S) is open at exit
    assert seen == [{"step": 4, "marks": ["it2", "it3"], "mul": 2, "steps": 3}]


def test_warmup_open_at_exit_records_nothing():
    x = tgrad.randn(4)
    seen = []
    with profile(schedule=schedule(wait=1, warmup=2, active=1),
                 on_trace_ready=lambda p: seen.append(window(p))) as prof:
        run_steps(prof, 2, x)  # N W, then step 2 (W) at exit: start + stop, no handler
    assert seen == []
    assert list(prof.events()) == []


def test_without_schedule_everything_is_recorded_once():
    x = tgrad.randn(4)
    seen = []
    with profile(on_trace_ready=lambda p: seen.append(window(p))) as prof:
        run_steps(prof, 3, x, muls_per_step=2)
    assert seen == [{"step": 3, "marks": ["it0", "it1", "it2"], "mul": 6, "steps": 0}]


def test_acc_events_keeps_every_window_on_one_time_axis():
    x = tgrad.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "clears events" warning with acc_events
        with profile(schedule=schedule(wait=1, warmup=1, active=1, repeat=3),
                     acc_events=True) as prof:
            run_steps(prof, 9, x)
    w = window(prof)
    assert (w["marks"], w["mul"], w["steps"]) == (["it2", "it5", "it8"], 3, 3)
    marks = [e for e in prof.events() if e.name.startswith("it")]
    for a, b in zip(marks, marks[1:]):
        assert a.cpu_interval[1] <= b.cpu_interval[0]
    assert len({e.id for e in prof.events()}) == len(prof.events())


def test_start_stop_step_without_with_and_shapes():
    a, b = tgrad.randn(2, 3), tgrad.randn(3, 5)
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
    prof.start()
    a @ b
    prof.step()
    a @ b
    prof.stop()
    by_shape = prof.key_averages(group_by_input_shape=True)
    mm = [e for e in by_shape if e.key == "matmul"]
    assert [(e.count, e.input_shapes) for e in mm] == [(2, [[2, 3], [3, 5]])]
    assert prof.step_num == 1


def test_with_flops_counts_matmul():
    a, b = tgrad.randn(4, 6), tgrad.randn(6, 3)
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        a @ b
    mm = {e.key: e for e in prof.key_averages()}["matmul"]
    assert mm.flops == 2 * 4 * 6 * 3


def test_execution_trace_observer_brackets_each_window():
    calls = []

    class Observer:
        def start(self):
            calls.append("start")

        def stop(self):
            calls.append("stop")

        def cleanup(self):
            calls.append("cleanup")

    x = tgrad.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                     execution_trace_observer=Observer()) as prof:
            run_steps(prof, 5, x)
    assert calls == ["start", "stop", "start", "stop", "cleanup"]


def test_memory_stack_and_module_flags_add_no_invented_columns(tmp_path):
    x = tgrad.randn(4)
    with profile(profile_memory=True, with_stack=True, with_modules=True) as prof:
        x * x
    table = prof.key_averages(group_by_stack_n=5).table()
    assert "mul" in table and "Mem" not in table
    path = tmp_path / "stacks.txt"
    prof.export_stacks(str(path))
    assert path.read_text() == ""  # no stacks recorded, none written
    with pytest.raises(ValueError, match="metric should be one of"):
        prof.export_stacks(str(path), metric="cpu_time")


# ----------------------------------------------------------------------------- traces
def trace_slices(path: Path) -> list:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]


@pytest.mark.parametrize("use_gzip", [False, True])
def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path, use_gzip):
    out = tmp_path / "log" / "run"  # created by the handler
    x = tgrad.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                     on_trace_ready=tensorboard_trace_handler(str(out), "worker0",
                                                              use_gzip)) as prof:
            run_steps(prof, 10, x)
    suffix = r"\.pt\.trace\.json" + (r"\.gz" if use_gzip else "")
    files = sorted(os.listdir(out))
    assert len(files) == 2 and all(re.fullmatch(r"worker0\.\d+" + suffix, f) for f in files)
    files.sort(key=lambda f: int(f.split(".")[1]))  # time.time_ns() in the name
    for name, marks in zip(files, (["it2", "it3"], ["it6", "it7"])):
        slices = trace_slices(out / name)
        assert [e["name"] for e in slices if e["name"].startswith("it")] == marks
        assert sum(e["name"] == "mul" for e in slices) == 2
        steps = [e["name"] for e in slices if e["name"].startswith("ProfilerStep")]
        assert steps == [f"ProfilerStep#{m[2:]}" for m in marks]
        assert all(e["dur"] >= 0 for e in slices)


def test_tensorboard_default_worker_name_is_host_and_pid(tmp_path):
    with profile() as prof:
        tgrad.randn(3) * 2.0
    tensorboard_trace_handler(str(tmp_path))(prof)
    (name,) = os.listdir(tmp_path)
    assert name.startswith(f"{socket.gethostname()}_{os.getpid()}.")
    assert "mul" in {e["name"] for e in trace_slices(tmp_path / name)}


def test_export_chrome_trace_direct_and_gzip(tmp_path):
    x = tgrad.randn(4, requires_grad=True)
    with profile() as prof:
        (x * x).sum().backward()
    for name in ("t.json", "t.json.gz"):
        prof.export_chrome_trace(str(tmp_path / name))
        names = {e["name"] for e in trace_slices(tmp_path / name)}
        assert {"mul", "sum", "MulBackward0", "autograd::engine::run_backward"} <= names


# ----------------------------------------------------------------------------- activities
def test_supported_activities_follow_cuda_availability(monkeypatch):
    monkeypatch.setattr(tgrad_profiler, "_cuda_available", lambda: False)
    assert supported_activities() == {ProfilerActivity.CPU}
    assert profile().activities == {ProfilerActivity.CPU}  # the default
    monkeypatch.setattr(tgrad_profiler, "_cuda_available", lambda: True)
    assert supported_activities() == {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    assert profile().activities == {ProfilerActivity.CPU, ProfilerActivity.CUDA}


def test_unavailable_activity_warns_and_is_dropped():
    x = tgrad.randn(4)
    for act in (ProfilerActivity.CUDA, ProfilerActivity.XPU):
        with pytest.warns(UserWarning, match=f"{act.name} is not available, disabling "
                                             f"{act.name} profiling"):
            with profile(activities=[ProfilerActivity.CPU, act]) as prof:
                x * x
        mul = {e.key: e for e in prof.key_averages()}["mul"]
        assert (mul.count, mul.cuda_time_total) == (1, 0.0)
    prof = profile(activities=[ProfilerActivity.CUDA])
    with pytest.warns(UserWarning, match="CUDA is not available"):
        with pytest.raises(AssertionError, match="No activities specified for the profiler"):
            prof.start()
    assert tgrad.autograd.profiler_hooks.ACTIVE is None


def test_activity_and_argument_errors():
    with pytest.raises(AssertionError, match="No valid profiler activities found"):
        profile(activities=[])
    with pytest.raises(AssertionError, match="No valid profiler activities found"):
        profile(activities=["cpu"])
    with pytest.raises(TypeError, match="Expected ProfilerActivity or dict"):
        profile(activities=[ProfilerActivity.CPU, "cuda"])
    with pytest.raises(ValueError, match="Activity ProfilerActivity.CPU specified more than"):
        profile(activities=[ProfilerActivity.CPU, {ProfilerActivity.CPU: []}])
    with pytest.raises(TypeError):
        profile([ProfilerActivity.CPU])  # keyword-only, as in torch
    with pytest.warns(FutureWarning, match="`use_cuda` is deprecated"):
        p = profile(use_cuda=False)
    assert p.activities == {ProfilerActivity.CPU}
    with pytest.raises(AssertionError, match="No valid profiler activities found"):
        with pytest.warns(FutureWarning):
            profile(activities=[ProfilerActivity.CUDA], use_cuda=False)


def test_results_before_recording_and_bad_schedules():
    prof = profile()
    for call, what in ((prof.key_averages, "getting key averages"),
                       (prof.events, "accessing events")):
        with pytest.raises(AssertionError, match="Profiler must be initialized before " + what):
            call()
    with pytest.raises(ValueError, match="DEVICE_STOPPED is set internally"):
        profile(schedule=lambda step: ProfilerAction.DEVICE_STOPPED)
    prof = profile(schedule=lambda step: ProfilerAction.NONE if step == 0 else "record")
    prof.start()
    with pytest.raises(TypeError, match="must return a tgrad.profiler.ProfilerAction"):
        prof.step()
    assert prof.step_num == 0  # checked before any change
    prof.stop()


def test_module_wiring():
    assert tgrad.profiler.profile is profile
    assert record_function is autograd_profiler.record_function
    with pytest.raises(RuntimeError, match="Profiler is already enabled"):
        with profile():
            with profile():
                pass
    assert tgrad.autograd.profiler_hooks.ACTIVE is None


# ----------------------------------------------------------------------------- cuda
CUDA_SCRIPT = textwrap.dedent(r"""
    import json, warnings
    import tgrad
    from tgrad.profiler import ProfilerActivity, profile, schedule, supported_activities

    warnings.simplefilter("error")  # CUDA is available: nothing to warn about
    assert supported_activities() == {ProfilerActivity.CPU, ProfilerActivity.CUDA}
    x = tgrad.randn(64, device="cuda")
    x * x  # compile the interpreted kernel
    seen = []
    with profile(schedule=schedule(wait=0, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: seen.append(
                     {e.key: [e.count, e.cuda_time_total] for e in p.key_averages()})) as p:
        for _ in range(4):
            x * x
            p.step()
    print("RESULT" + json.dumps(seen))
""")


def test_default_activities_time_cuda_ops_interpreted():
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", CUDA_SCRIPT], capture_output=True,
                          text=True, env=env, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    (rows,) = json.loads(line[len("RESULT"):])
    assert rows["mul"][0] == 2 and rows["mul"][1] > 0.0
    assert rows["ProfilerStep*"][0] == 2
