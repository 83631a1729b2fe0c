"""Forward op next to its backward node, and host dispatch vs device time per op."""

from __future__ import annotations

from dataclasses import dataclass

from tabulate import tabulate

from tgrad.autograd.profiler.events import format_time

__all__ = ["OpPair", "PairList", "pair_backward", "OpSummary", "Summary", "summarize"]


@dataclass(frozen=True)
class OpPair:
    """One forward op and the backward node it creates (``MulBackward0`` for ``mul``).

    Times are totals in microseconds: device (CUDA) time when a device timer ran, else CPU
    total time. ``ratio`` is backward / forward (None when either is missing).
    """

    forward: str
    backward: str | None
    forward_count: int
    backward_count: int
    forward_time: float
    backward_time: float
    time_kind: str  # "CUDA" or "CPU"

    @property
    def ratio(self) -> float | None:
        if self.forward_time <= 0 or self.backward_count == 0:
            return None
        return self.backward_time / self.forward_time


class PairList(list):
    def __str__(self) -> str:
        return self.table()

    def table(self) -> str:
        kind = self[0].time_kind if self else "CPU"
        headers = ["Forward", "Backward", "Fwd calls", f"Fwd {kind} total", "Bwd calls",
                   f"Bwd {kind} total", "Bwd/Fwd"]
        rows = [[p.forward, p.backward or "", p.forward_count, format_time(p.forward_time),
                 p.backward_count, format_time(p.backward_time),
                 "" if p.ratio is None else f"{p.ratio:.2f}x"] for p in self]
        return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def _inside_backward(e) -> bool:
    p = getattr(e, "cpu_parent", None)
    while p is not None:
        if p.kind == "backward":
            return True
        p = p.cpu_parent
    return False


def pair_backward(events) -> PairList:
    """Pair each forward op with the backward nodes it created (matched by ``pair``).

    ``events`` are FunctionEvents (or averages). Ops run *inside* a backward node are part
    of that node's time, not forward calls, so they are not counted as forward. Ops whose
    backward node never ran are left out. One row per op name, in first-seen order.
    """
    use_cuda = any(e.has_cuda for e in events)
    kind = "CUDA" if use_cuda else "CPU"

    def t(e):
        return e.cuda_time_total if use_cuda else e.cpu_time_total

    fwd: dict = {}  # op name -> [backward node name, count, time]
    bwd: dict = {}  # forward op name -> [count, time]
    for e in events:
        if e.kind == "op" and not _inside_backward(e):
            row = fwd.setdefault(e.key, [e.pair, 0, 0.0])
            row[1] += e.count
            row[2] += t(e)
        elif e.kind == "backward" and e.pair is not None:
            row = bwd.setdefault(e.pair, [0, 0.0])
            row[0] += e.count
            row[1] += t(e)
    out = PairList()
    for name, (node, count, time) in fwd.items():
        if name in bwd:
            out.append(OpPair(name, node, count, bwd[name][0], time, bwd[name][1], kind))
    return out


@dataclass(frozen=True)
class OpSummary:
    """Host (Python dispatch, self CPU) vs device time per call, in microseconds."""

    name: str
    count: int
    host_time_avg: float
    device_time_avg: float | None  # None without a device timer

    @property
    def launch_bound(self) -> bool | None:
        """True when the host takes longer to dispatch than the device to run the op."""
        if self.device_time_avg is None:
            return None
        return self.host_time_avg > self.device_time_avg


class Summary(list):
    def __str__(self) -> str:
        return self.table()

    def table(self) -> str:
        headers = ["Name", "Calls", "Host time avg", "Device time avg", "Host/Device",
                   "Bound by"]
        rows = []
        for s in self:
            if s.device_time_avg is None:
                rows.append([s.name, s.count, format_time(s.host_time_avg), "n/a", "",
                             "n/a (no device timer)"])
                continue
            ratio = (f"{s.host_time_avg / s.device_time_avg:.2f}"
                     if s.device_time_avg > 0 else "inf")
            rows.append([s.name, s.count, format_time(s.host_time_avg),
                         format_time(s.device_time_avg), ratio,
                         "launch (host)" if s.launch_bound else "device"])
        return tabulate(rows, headers=headers, tablefmt="simple", disable_numparse=True)


def summarize(averages) -> Summary:
    """One row per op key, most host time first."""
    use_cuda = any(a.has_cuda for a in averages)
    rows = [OpSummary(a.key, a.count, a.self_cpu_time,
                      a.self_cuda_time if use_cuda else None)
            for a in averages if a.kind == "op"]
    rows.sort(key=lambda s: s.host_time_avg * s.count, reverse=True)
    return Summary(rows)
