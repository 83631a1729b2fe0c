"""``TaskSpec`` (what was timed) and ``Measurement`` (the times and their statistics), as
torch.utils.benchmark.utils.common, plus its small formatting helpers.

Statistics are NumPy's in float64: ``median`` / ``iqr`` use linear interpolation between
order statistics (``np.quantile``'s default, the same as ``torch.quantile``). PyTorch computes
``significant_figures`` and ``select_unit`` in float32; the float64 result can differ only
when a value lies within float32 rounding of a power of ten.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import textwrap
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # no timing is trusted below 25 ns
_IQR_WARN_THRESHOLD = 0.1  # IQR / median above which a Measurement warns ...
_IQR_GROSS_WARN_THRESHOLD = 0.25  # ... and above which it warns loudly
_UNITS = {-3: ("ns", 1e-9), -2: ("us", 1e-6), -1: ("ms", 1e-3)}
_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


@dataclasses.dataclass(frozen=True, repr=False)
class TaskSpec:
    """What a Timer measured (everything but its globals); hashable, so Measurement.merge
    groups replicates by it."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """``label: sub_label``, else ``stmt: sub_label``, else (multi-line stmt) an
        indented ``stmt:`` block."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        paren = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{paren}\n" + textwrap.indent(self.stmt, "  ")

    def setup_str(self) -> str:
        """"setup: ..." (an indented block when multi-line); "" for an empty / pass setup."""
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return "setup:\n" + textwrap.indent(self.setup, "  ")
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line (a multi-line one is followed by a
        blank line), as Measurement's repr shows them."""
        parts = [p for p in (self.title, self.description or "", self.setup_str()) if p]
        return "\n".join(p + "\n" if "\n" in p else p for p in parts)


_TASKSPEC_FIELDS = frozenset(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(repr=False)
class Measurement:
    """The result of a Timer: ``raw_times`` (seconds per block) of blocks of
    ``number_per_run`` runs each, the ``task_spec`` timed and free ``metadata``.

    The statistics (``times``, ``median``, ``mean``, ``iqr``) are per run, so blocks of
    different sizes compare. TaskSpec's fields read through (``m.label``, ``m.stmt``,
    ``m.num_threads``). ``env`` returns ``task_spec.env`` itself (None when unset), which is
    what torch's property returns in practice.
    """

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # reserved for the user

    def __getattr__(self, name: str) -> Any:
        spec = self.__dict__.get("task_spec")
        if name in _TASKSPEC_FIELDS and spec is not None:
            return getattr(spec, name)
        raise AttributeError(f"'Measurement' object has no attribute {name!r}")

    # -------------------------------------------------------------- statistics
    def _stats(self) -> dict[str, Any]:
        """Sorted per-run times, quartiles, mean and warnings; recomputed when raw_times or
        number_per_run change."""
        key = (self.number_per_run, tuple(self.raw_times))
        cached = self.__dict__.get("_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        times = sorted(self.times)
        stats: dict[str, Any] = {"sorted": tuple(times), "median": -1.0, "mean": -1.0,
                                 "p25": -1.0, "p75": -1.0, "warnings": ()}
        if times:
            arr = np.asarray(times, dtype=np.float64)
            p25, median, p75 = (float(q) for q in np.quantile(arr, [0.25, 0.5, 0.75]))
            stats.update(median=median, mean=float(arr.mean()), p25=p25, p75=p75)
            rel_iqr = (p75 - p25) / median
            if not rel_iqr < _IQR_GROSS_WARN_THRESHOLD:
                msg = "This suggests significant environmental influence."
            elif not rel_iqr < _IQR_WARN_THRESHOLD:
                msg = "This could indicate system fluctuation."
            else:
                msg = ""
            if msg:
                stats["warnings"] = (f"  WARNING: Interquartile range is {rel_iqr * 100:.1f}% "
                                     f"of the median measurement.\n           {msg}",)
        self.__dict__["_cache"] = (key, stats)
        return stats

    @property
    def times(self) -> list[float]:
        """Seconds per run of each block (raw_times / number_per_run)."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self) -> float:
        """Median of ``times`` (seconds per run; -1.0 without times, as torch)."""
        return self._stats()["median"]

    @property
    def mean(self) -> float:
        """Mean of ``times``."""
        return self._stats()["mean"]

    @property
    def iqr(self) -> float:
        """75th minus 25th percentile of ``times``."""
        s = self._stats()
        return s["p75"] - s["p25"]

    @property
    def significant_figures(self) -> int:
        """Digits of the median worth showing (1 to 4): a 90% confidence interval from the
        spread of the interquartile points (at least 25 ns), as torch estimates it."""
        s = self._stats()
        pts = s["sorted"]
        inner = pts[len(pts) // 4:math.ceil(3 * len(pts) / 4)]
        std = float(np.std(np.asarray(inner, dtype=np.float64)))
        ci = max(1.645 * std / math.sqrt(len(inner)), _MIN_CONFIDENCE_INTERVAL)
        figures = math.floor(math.log10(s["median"] / ci))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """True when IQR / median is at least 10% (repr then prints a WARNING)."""
        return bool(self._stats()["warnings"])

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """IQR / median < threshold."""
        return self.iqr / self.median < threshold

    @property
    def title(self) -> str:
        """``task_spec.title``."""
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        """``task_spec.env`` (None when unset: torch's code means "Unspecified env" but
        returns the field too)."""
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """Compare's row name: sub_label, else stmt."""
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        s = self._stats()
        n = len(s["sorted"])
        unit, scale = select_unit(s["median"])
        threads = self.task_spec.num_threads
        lines = [object.__repr__(self), self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{s['median'] / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {(s['p75'] - s['p25']) / scale:.2f} {unit} "
                         f"({s['p25'] / scale:.2f} to {s['p75'] / scale:.2f})")
        per = "per measurement," if n > 1 else ","  # torch prints "10 runs , 1 thread"
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{per} {threads} thread{'s' if threads > 1 else ''}")
        lines.extend(s["warnings"])
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable[Measurement]) -> list[Measurement]:
        """One Measurement per distinct TaskSpec (first-seen order) holding all its
        replicates' per-run times (number_per_run=1); metadata is dropped."""
        groups: dict[TaskSpec, list[float]] = {}
        for m in measurements:
            groups.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]


def select_unit(t: float) -> tuple[str, float]:
    """("ns" | "us" | "ms" | "s", its scale in seconds) for a time ``t`` in seconds. As in
    torch, a time under 1 ns (or not positive) is shown in seconds."""
    if not t > 0:
        return "s", 1.0
    unit, scale = _UNITS.get(int(math.log10(t) // 3), ("s", 1.0))
    return unit, scale


def unit_to_english(u: str) -> str:
    """"ns" -> "nanosecond", "us", "ms", "s" likewise."""
    return _ENGLISH[u]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded to ``n`` significant figures (3.14159, 2 -> 3.1)."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    scale = 10.0 ** (math.ceil(math.log10(abs(x))) - n)
    return float(round(x / scale) * scale)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    """The distinct elements in first-seen order."""
    return list(dict.fromkeys(elements))


@contextlib.contextmanager
def set_torch_threads(n: int) -> Iterator[None]:
    """``tgrad.set_num_threads(n)`` for the block, then the previous count (torch's name).
    tgrad records the count; NumPy's BLAS thread pool is fixed when NumPy loads."""
    import tgrad
    before = tgrad.get_num_threads()
    try:
        tgrad.set_num_threads(n)
        yield
    finally:
        tgrad.set_num_threads(before)
