"""tgrad.autograd.profiler: PyTorch's autograd profiler API, plus roofline columns.

    with tgrad.autograd.profiler.profile() as prof:
        y = (x * x).sum(); y.backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total"))

Modules: ``profile`` (context manager, record_function), ``_recorder`` (the hot path
installed in ``profiler_hooks.ACTIVE``), ``events`` (FunctionEvent, EventList), ``table``,
``pairs`` (forward/backward pairs, host vs device summary), ``trace`` (Chrome trace),
``device`` (the device-timer seam for CUDA events), ``metadata`` (bytes / FLOPs per op),
``nvtx`` (emit_nvtx). See docs/profiler.md.
"""

from tgrad.autograd.profiler.device import (
                                            DeviceTimer,
                                            peak_bandwidth_gbps,
                                            register_device_timer,
                                            unregister_device_timer,
)
from tgrad.autograd.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from tgrad.autograd.profiler.metadata import default_bytes
from tgrad.autograd.profiler.nvtx import emit_nvtx
from tgrad.autograd.profiler.pairs import OpPair, OpSummary, PairList, Summary
from tgrad.autograd.profiler.profile import profile, record_function

__all__ = ["profile", "record_function", "emit_nvtx", "EventList", "FunctionEvent",
           "FunctionEventAvg", "OpPair", "PairList", "OpSummary", "Summary", "DeviceTimer",
           "register_device_timer", "unregister_device_timer", "peak_bandwidth_gbps",
           "default_bytes"]
