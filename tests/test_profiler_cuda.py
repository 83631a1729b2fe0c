"""profile(use_cuda=True) with tgrad.cuda's device timer (tgrad/cuda/profiler_timer.py).

No GPU here, so the profile runs in a subprocess with TRITON_INTERPRET=1, where the cuda
device is emulated in host memory and its events record the host clock. The subprocess
checks, and prints as JSON, that: CUDA columns are filled for forward ops and backward
nodes; a node's CUDA interval contains the ops it launched; no synchronize happens while
the profile runs (one when it ends); events are reused by the next profile; the Chrome
trace has a CUDA track; the `% of peak` column uses the copy bandwidth measured by the
timer. Without CUDA, use_cuda=True still warns (tests/test_profiler.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent(r"""
    import gc, json, sys, warnings
    import numpy as np
    import tgrad
    from tgrad.autograd import profiler
    from tgrad.cuda import profiler_timer
    from tgrad.cuda._runtime import runtime

    warnings.simplefilter("error")          # use_cuda must not warn when CUDA is present
    assert tgrad.cuda.is_available() and tgrad.cuda.is_interpreted()
    rt = runtime()
    calls = {"sync": 0, "event_sync": 0, "event_create": 0}

    def counting(name, key):
        fn = getattr(rt, name)
        def wrapper(*a, **k):
            calls[key] += 1
            return fn(*a, **k)
        setattr(rt, name, wrapper)

    counting("synchronize", "sync")
    counting("event_synchronize", "event_sync")
    counting("event_create", "event_create")

    tgrad.manual_seed(0)
    x = tgrad.randn(16, 8, device="cuda", requires_grad=True)
    w = tgrad.randn(8, 4, device="cuda", requires_grad=True)

    def step():
        with profiler.record_function("my_step"):
            y = (x.tanh() @ w).sum()
        y.backward()

    step()                                   # compiles the interpreted kernels
    out = {}
    for detailed in (False, True):           # TimedRecorder and DetailedRecorder
        gc.collect()
        calls.update(sync=0, event_sync=0, event_create=0)
        with profiler.profile(use_cuda=True, record_shapes=detailed,
                              with_flops=detailed) as prof:
            step()
            inside = dict(calls)
        after = dict(calls)
        evs = prof.function_events
        def first(name):
            return next(e for e in evs if e.name == name)
        rows = {a.key: a for a in prof.key_averages()}
        res = {"inside": inside, "after": after,
               "cuda_total": {k: rows[k].cuda_time_total for k in rows},
               "self_cuda": {k: rows[k].self_cuda_time_total for k in rows},
               "cpu_total": {k: rows[k].cpu_time_total for k in rows}}
        contain = []
        for name in ("TanhBackward0", "MmBackward0", "my_step"):
            e = first(name)
            s, t = e.cuda_interval
            for c in e.cpu_children:
                cs, ct = c.cuda_interval
                contain.append([name, c.name, s <= cs <= ct <= t])
        res["contain"] = contain
        res["children"] = {n: [c.name for c in first(n).cpu_children]
                           for n in ("TanhBackward0", "MmBackward0")}
        prof.export_chrome_trace(sys.argv[1] + f"/trace{int(detailed)}.json")
        if detailed:
            res["peak_measured"] = profiler_timer.copy_bandwidth_gbps()
            res["peak_used"] = profiler.peak_bandwidth_gbps(evs._timer)
            res["table"] = prof.key_averages().table(sort_by="cuda_time_total")
            res["gbps_tanh"] = rows["tanh"].gbps
        out[str(int(detailed))] = res
        del prof, evs, rows
    print("RESULT" + json.dumps(out))
""")


@pytest.fixture(scope="module")
def interp_profile(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prof_cuda")
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp)], capture_output=True,
                          text=True, env=env, cwd=str(tmp))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    return json.loads(line[len("RESULT"):]), tmp


@pytest.mark.parametrize("detailed", ["0", "1"])
def test_cuda_columns_are_attributed_to_ops_and_nodes(interp_profile, detailed):
    res = interp_profile[0][detailed]
    cuda = res["cuda_total"]
    for key in ("tanh", "matmul", "sum", "TanhBackward0", "MmBackward0", "tanh_backward",
                "AccumulateGrad", "my_step", "autograd::engine::run_backward"):
        assert cuda[key] > 0.0, (key, cuda)
    # A backward node's device time includes the kernels of the ops it launched.
    assert res["children"]["TanhBackward0"] == ["tanh_backward"]
    assert "matmul" in res["children"]["MmBackward0"]
    assert res["contain"] and all(ok for _, _, ok in res["contain"]), res["contain"]
    assert cuda["TanhBackward0"] >= cuda["tanh_backward"]
    assert cuda["my_step"] >= cuda["tanh"] + cuda["sum"]
    for key, self_t in res["self_cuda"].items():
        assert 0.0 <= self_t <= cuda[key] + 1e-6, key


@pytest.mark.parametrize("detailed", ["0", "1"])
def test_events_resolved_once_at_profile_end(interp_profile, detailed):
    res = interp_profile[0][detailed]
    assert res["inside"]["sync"] == 0 and res["inside"]["event_sync"] == 0, res["inside"]
    assert res["after"]["sync"] == 1 and res["after"]["event_sync"] == 1, res["after"]
    if detailed == "1":  # the second profile reuses the first one's (pooled) events
        assert res["inside"]["event_create"] == 0, res["inside"]


def test_chrome_trace_has_cuda_track(interp_profile):
    _, tmp = interp_profile
    for detailed in ("0", "1"):
        trace = json.loads((tmp / f"trace{detailed}.json").read_text())["traceEvents"]
        slices = [e for e in trace if e["ph"] == "X"]
        for e in slices:
            assert {"ph", "ts", "dur", "pid", "tid", "name"} <= set(e)
            assert e["dur"] >= 0
        cuda = [e for e in slices if e["pid"] == 1]
        names = {e["name"] for e in cuda}
        assert {"tanh", "matmul", "TanhBackward0", "MmBackward0", "my_step"} <= names
        assert len(cuda) == len([e for e in slices if e["pid"] == 0])
        meta = [e for e in trace if e["ph"] == "M" and e["name"] == "process_name"]
        assert {"CPU", "CUDA"} == {e["args"]["name"] for e in meta}


def test_peak_bandwidth_comes_from_the_device_copy(interp_profile):
    res = interp_profile[0]["1"]
    assert res["peak_measured"] > 0
    assert res["peak_used"] == res["peak_measured"]  # measured once, reused
    assert res["gbps_tanh"] is not None and res["gbps_tanh"] > 0
    assert "CUDA total" in res["table"] and "tanh" in res["table"]
