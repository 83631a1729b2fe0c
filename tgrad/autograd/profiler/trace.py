"""Chrome trace export: a CPU track (pid 0) and a CUDA track (pid 1).

Format: the JSON Object Format of the Trace Event spec, ``{"traceEvents": [...]}``. Ranges
are complete events (``"ph": "X"``, ``cat`` PyTorch's "cpu_op" / "user_annotation") with
``ts``/``dur`` in microseconds since the profile
started; metadata events (``"ph": "M"``) name the two processes. CUDA slices are the device
intervals of the ranges (placed on the same time axis: the device reference event was
recorded when the profile started); without a device timer the CUDA track is empty.
"""

from __future__ import annotations

import json

__all__ = ["CPU_PID", "CUDA_PID", "trace_events", "export_chrome_trace"]

# PyTorch's categories: "cpu_op" for ops, backward nodes and engine ranges,
# "user_annotation" for record_function; tgrad's kind goes to args["kind"].
_CAT = {"op": "cpu_op", "backward": "cpu_op", "engine": "cpu_op", "user": "user_annotation"}

CPU_PID, CUDA_PID = 0, 1
CUDA_TID = 0  # tgrad's stream


def _meta(pid: int, name: str, sort: int) -> list:
    return [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}},
            {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
             "args": {"sort_index": sort}}]


def trace_events(events) -> list:
    out = _meta(CPU_PID, "CPU", 0) + _meta(CUDA_PID, "CUDA", 1)
    out.append({"name": "thread_name", "ph": "M", "pid": CUDA_PID, "tid": CUDA_TID,
                "args": {"name": "tgrad stream"}})
    for e in events:
        args = {"kind": e.kind}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes  # PyTorch's name for the shapes
        if e.bytes is not None:
            args["bytes"] = e.bytes
        if e.flops is not None:
            args["flops"] = e.flops
        start, end = e.cpu_interval
        cat = _CAT.get(e.kind, e.kind)
        out.append({"name": e.trace_name, "cat": cat, "ph": "X", "ts": start,
                    "dur": end - start, "pid": CPU_PID, "tid": e.thread, "args": args})
        if e.cuda_interval is not None:
            cs, ce = e.cuda_interval
            out.append({"name": e.trace_name, "cat": cat, "ph": "X", "ts": cs, "dur": ce - cs,
                        "pid": CUDA_PID, "tid": CUDA_TID, "args": args})
    return out


def export_chrome_trace(events, path: str) -> None:
    with open(path, "w") as f:
        json.dump({"traceEvents": trace_events(events), "displayTimeUnit": "ms"}, f)
