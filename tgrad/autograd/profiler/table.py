"""The key_averages / events table (tabulate), with optional roofline columns."""

from __future__ import annotations

from tabulate import tabulate

from tgrad.autograd.profiler.events import format_time

__all__ = ["SORT_KEYS", "build_table", "sort_events"]

# PyTorch's sort keys (the ones tgrad records) plus the roofline counters.
SORT_KEYS = ("cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total",
             "self_cpu_time_total", "self_cuda_time_total", "self_cpu_time", "self_cuda_time",
             "count", "bytes", "flops")


def sort_events(events, sort_by: str | None) -> list:
    if sort_by is None:
        return list(events)
    if sort_by not in SORT_KEYS:
        raise ValueError(f"table(): unknown sort_by key '{sort_by}'; valid keys are: "
                         f"{', '.join(SORT_KEYS)}")
    return sorted(events, key=lambda e: getattr(e, sort_by) or 0, reverse=True)


def _shorten(name: str, width: int) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None else format(x, fmt)


def build_table(events, sort_by: str | None = None, row_limit: int = 100,
                max_name_column_width: int = 55, header: str | None = None,
                peak_gbps: float | None = None, timer=None) -> str:
    rows_src = sort_events(events, sort_by)
    if row_limit is not None and row_limit > 0:
        rows_src = rows_src[:row_limit]
    has_shapes = any(e.input_shapes for e in events)
    roofline = any(e.bytes is not None for e in events)
    self_total = sum(e.self_cpu_time_total for e in events)
    cuda_total = sum(e.self_cuda_time_total for e in events)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total", "CPU time avg", "CUDA total",
               "CUDA time avg", "Number of Calls"]
    if has_shapes:
        headers.append("Input Shapes")
    if roofline:
        if peak_gbps is None:
            from tgrad.autograd.profiler.device import peak_bandwidth_gbps
            peak_gbps = peak_bandwidth_gbps(timer)
        headers += ["GB/s", "% of peak", "TFLOP/s"]
    rows = []
    for e in rows_src:
        pct = 100.0 * e.self_cpu_time_total / self_total if self_total > 0 else 0.0
        row = [_shorten(e.key, max_name_column_width), f"{pct:.2f}%",
               format_time(e.self_cpu_time_total), format_time(e.cpu_time_total),
               format_time(e.cpu_time), format_time(e.cuda_time_total),
               format_time(e.cuda_time), e.count]
        if has_shapes:
            row.append(str(e.input_shapes) if e.input_shapes is not None else "")
        if roofline:
            g = e.gbps
            row += [_num(g, ".4g"), "" if g is None else f"{100.0 * g / peak_gbps:.3g}%",
                    _num(e.tflops, ".4g")]
        rows.append(row)
    lines = [header] if header else []
    lines.append(tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True))
    lines.append(f"Self CPU time total: {format_time(self_total)}")
    if cuda_total > 0:
        lines.append(f"Self CUDA time total: {format_time(cuda_total)}")
    if roofline:
        lines.append(f"Peak bandwidth for % of peak: {peak_gbps:.1f} GB/s")
    return "\n".join(lines)
