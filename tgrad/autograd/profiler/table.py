"""The key_averages / events table, laid out as PyTorch's ``_build_table``, with optional
roofline columns."""

from __future__ import annotations

from tgrad.autograd.profiler.events import format_time

__all__ = ["SORT_KEYS", "build_table", "sort_events"]

# The sort keys tgrad records (PyTorch's names; "cuda" may also be spelled "device", as in
# PyTorch) plus the roofline counters. Memory keys sort by 0: memory is not profiled.
SORT_KEYS = ("cpu_time", "cuda_time", "cpu_time_total", "cuda_time_total",
             "self_cpu_time_total", "self_cuda_time_total", "self_cpu_time", "self_cuda_time",
             "device_time", "device_time_total", "self_device_time_total", "count",
             "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
             "self_device_memory_usage", "bytes", "flops")

_COL = 12  # PyTorch's DEFAULT_COLUMN_WIDTH
_SPACING = 2


class SortKeyError(AttributeError, ValueError):
    """An unknown ``sort_by``: PyTorch raises the AttributeError of ``getattr(event, key)``;
    also a ValueError (what tgrad raised before)."""


def sort_events(events, sort_by: str | None) -> list:
    """Descending by the attribute ``sort_by`` (PyTorch: ``getattr(evt, key)`` with "cuda",
    "xpu" and "privateuse1" read as "device")."""
    if sort_by is None:
        return list(events)
    attr = (sort_by.replace("cuda", "device").replace("xpu", "device")
            .replace("privateuse1", "device"))
    for e in events:
        if not hasattr(e, attr):
            raise SortKeyError(
                f"'{type(e).__name__}' object has no attribute '{attr}' (table(): unknown "
                f"sort_by key '{sort_by}'; valid keys are: {', '.join(SORT_KEYS)})")
    return sorted(events, key=lambda e: getattr(e, attr) or 0, reverse=True)


def _fmt_time(time_us: float, time_unit: str | None) -> str:
    """PyTorch's override_time_unit: "s", "ms" or "us" fix the unit; else auto."""
    if time_unit == "s":
        return f"{time_us / 1e6:.3f}s"
    if time_unit == "ms":
        return f"{time_us / 1e3:.3f}ms"
    if time_unit == "us":
        return f"{time_us:.3f}us"
    return format_time(time_us)


def _share(part: float, total: float) -> str:
    """PyTorch's _format_time_share."""
    if total == 0:
        return "NaN" if part != 0 else "0.00%"
    return f"{part * 100.0 / total:.2f}%"


def _num(x: float | None, fmt: str) -> str:
    return "" if x is None else format(x, fmt)


def build_table(events, sort_by: str | None = None, row_limit: int = 100,
                max_name_column_width: int | None = 55, header: str | None = None,
                peak_gbps: float | None = None, timer=None,
                max_shapes_column_width: int | None = 80, top_level_events_only: bool = False,
                time_unit: str | None = None) -> str:
    """PyTorch's columns: Name, Self CPU %, Self CPU, CPU total %, CPU total, CPU time avg,
    then Self CUDA, Self CUDA %, CUDA total, CUDA time avg when any event has CUDA time,
    # of Calls, Input Shapes when recorded; tgrad adds GB/s, % of peak, TFLOP/s when bytes
    were counted. ``row_limit`` < 0 or None: every row; 0: none (PyTorch's)."""
    if len(events) == 0:
        return ""
    rows_src = sort_events(events, sort_by)
    has_device = any(e.self_cuda_time_total > 0 for e in events)
    has_shapes = any(e.input_shapes for e in events)
    roofline = any(e.bytes is not None for e in events)
    self_total = sum(e.self_cpu_time_total for e in events)
    cuda_total = sum(e.self_cuda_time_total for e in events)
    name_w = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    shapes_w = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_w = min(shapes_w, max_shapes_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if has_device:
        headers += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    headers.append("# of Calls")
    widths = [name_w] + [_COL] * (len(headers) - 1)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
    if roofline:
        if peak_gbps is None:
            from tgrad.autograd.profiler.device import peak_bandwidth_gbps
            peak_gbps = peak_bandwidth_gbps(timer)
        headers += ["GB/s", "% of peak", "TFLOP/s"]
        widths += [_COL] * 3
    row_format = "".join("{:>" + str(w) + "}" + " " * _SPACING for w in widths)
    sep = "".join("-" * w + " " * _SPACING for w in widths)
    line_length = sum(widths) + _SPACING * (len(widths) - 1)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [sep, row_format.format(*headers), sep]
    n = 0
    for e in rows_src:
        if row_limit is not None and row_limit >= 0 and n == row_limit:
            break
        if top_level_events_only and getattr(e, "cpu_parent", None) is not None:
            continue
        n += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _share(e.self_cpu_time_total, self_total),
               _fmt_time(e.self_cpu_time_total, time_unit),
               _share(e.cpu_time_total, self_total),
               _fmt_time(e.cpu_time_total, time_unit), _fmt_time(e.cpu_time, time_unit)]
        if has_device:
            row += [_fmt_time(e.self_cuda_time_total, time_unit),
                    _share(e.self_cuda_time_total, cuda_total),
                    _fmt_time(e.cuda_time_total, time_unit), _fmt_time(e.cuda_time, time_unit)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if roofline:
            g = e.gbps
            row += [_num(g, ".4g"), "" if g is None else f"{100.0 * g / peak_gbps:.3g}%",
                    _num(e.tflops, ".4g")]
        lines.append(row_format.format(*row))
    lines.append(sep)
    lines.append(f"Self CPU time total: {_fmt_time(self_total, time_unit)}")
    if has_device:
        lines.append(f"Self CUDA time total: {_fmt_time(cuda_total, time_unit)}")
    if roofline:
        lines.append(f"Peak bandwidth for % of peak: {peak_gbps:.1f} GB/s")
    return "\n".join(lines) + "\n"
