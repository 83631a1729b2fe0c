"""``Compare``: torch.utils.benchmark.Compare's tables of Measurements, one table per label,
a row per (num_threads, env, sub_label or stmt) and a column per description, medians in one
unit per table (that of the fastest entry), replicates merged. The text is torch's, character
for character; unlike torch, a None description (an unnamed column) or a None env next to a
named one ("(Unspecified env)") renders instead of raising TypeError."""

from __future__ import annotations

import enum
import math

from tgrad.utils.benchmark.utils import common
from tgrad.utils.benchmark.utils.common import Measurement

__all__ = ["Colorize", "Compare"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"
_HIGH_VARIANCE = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100."


class Colorize(enum.Enum):
    """Compare's coloring: none, against each column's best or against each row's best."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(cell: str, value: float, best: float) -> str:
    """Green (bold) within 1% or 100 ns of the best, blue (bold) within 10%, dim red at 2x
    or more, red (bold) at 5x or more."""
    if value <= best * 1.01 or value <= best + 100e-9:
        code = BEST + BOLD
    elif value <= best * 1.1:
        code = GOOD + BOLD
    elif value >= best * 5:
        code = VERY_BAD + BOLD
    elif value >= best * 2:
        code = BAD
    else:
        return cell
    return code + cell + TERMINATE * 2


def _env_name(env: str | None) -> str:
    return "Unspecified env" if env is None else env


class _ColumnFormat:
    """How one column prints its medians: right-aligned with as many integer digits as its
    largest entry and 1 decimal (trimmed: as many decimals as its least precise entry has
    significant figures left), plus a "(! NN%)" slot when a warning is highlighted."""

    def __init__(self, results: list[Measurement], scale: float, trim: bool,
                 highlight: bool) -> None:
        self.trim = trim
        self.highlight = highlight and any(m.has_warnings for m in results)
        digits = [(m, math.ceil(math.log10(m.median / scale))) for m in results]
        int_digits = max(d for _, d in digits)
        decimals = min(max(m.significant_figures - d, 0) for m, d in digits) if trim else 1
        width = int_digits + decimals + (1 if decimals else 0)
        # as torch's: a negative width (a sub-ns time shown in seconds) reads as sign "-"
        self.spec = f">{width}.{decimals}f"
        self.blank = " " * len(self.cell(1.0, 1, None))

    def cell(self, value: float, figures: int, spread: float | None) -> str:
        if self.trim:
            value = common.trim_sigfig(value, figures)
        note = f" (! {spread * 100:.0f}%)" if self.highlight and spread is not None else ""
        return format(value, self.spec) + format(note, f">{7 if self.highlight else 0}")


class _Table:
    """One label's results laid out (rows, columns, unit) and rendered."""

    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool,
                 highlight: bool) -> None:
        self.results = results
        self.label = results[0].label
        self.colorize = colorize
        self.highlight = highlight
        self.unit, self.scale = common.select_unit(min(m.median for m in results))
        keys = common.ordered_unique(self._row_key(m) for m in results)
        # stable: stmt order kept within each (num_threads, env); None env sorts first
        self.row_keys = sorted(keys, key=lambda k: (k[0], k[1] is not None, k[1] or ""))
        self.col_keys = common.ordered_unique(m.description for m in results)
        rows = {k: i for i, k in enumerate(self.row_keys)}
        cols = {k: j for j, k in enumerate(self.col_keys)}
        self.grid: list[list[Measurement | None]] = [[None] * len(cols) for _ in rows]
        for m in results:
            self.grid[rows[self._row_key(m)]][cols[m.description]] = m
        # rows with the same num_threads form a group (a "N threads: ---" separator each)
        self.group: list[int] = []
        for i, key in enumerate(self.row_keys):
            new = i == 0 or key[0] != self.row_keys[i - 1][0]
            self.group.append((self.group[-1] if self.group else -1) + new)
        self.formats = [
            _ColumnFormat([row[j] for row in self.grid if row[j] is not None], self.scale,
                          trim, highlight) for j in range(len(cols))]

    @staticmethod
    def _row_key(m: Measurement) -> tuple[int, str | None, str]:
        return m.num_threads, m.env, m.as_row_name

    def _first_cells(self) -> list[str]:
        """Row names, each after "(env)" where the env changes within a thread group (only
        when the table has several envs)."""
        envs = {m.env for m in self.results}
        show_env = len(envs) > 1
        env_width = max(len(_env_name(e)) for e in envs) if show_env else 0
        cells: list[str] = []
        prior: str | None = ""
        for i, (_, env, name) in enumerate(self.row_keys):
            if i == 0 or self.group[i] != self.group[i - 1]:
                prior = ""
            shown = f"({_env_name(env)})" if show_env and env != prior else ""
            cells.append("  " + shown.ljust(env_width + 4) + name)
            prior = env
        return cells

    def _best(self, i: int) -> list[float | None]:
        row = self.grid[i]
        if self.colorize == Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        if self.colorize == Colorize.COLUMNWISE:
            out = []
            for j in range(len(row)):
                col = [r[j].median for k, r in enumerate(self.grid)
                       if self.group[k] == self.group[i] and r[j] is not None]
                out.append(min(col) if col else None)
            return out
        return [None] * len(row)

    def render(self) -> str:
        table = [[""] + [d if d is not None else "" for d in self.col_keys]]
        for first, row in zip(self._first_cells(), self.grid):
            cells = [first]
            for m, fmt in zip(row, self.formats):
                if m is None:
                    cells.append(fmt.blank)
                else:
                    spread = m.iqr / m.median if m.has_warnings else None
                    cells.append(fmt.cell(m.median / self.scale, m.significant_figures,
                                          spread))
            table.append(cells)
        widths = [max(len(r[j]) for r in table) for j in range(len(table[0]))]
        header = "  |  ".join(c.center(w) for c, w in zip(table[0], widths))
        lines = [header]
        for i, cells in enumerate(table[1:]):
            if i == 0 or self.group[i] != self.group[i - 1]:
                lines.append(f"{self.row_keys[i][0]} threads: ".ljust(len(header), "-"))
            out = [cells[0].ljust(widths[0])]
            for cell, w, m, best in zip(cells[1:], widths[1:], self.grid[i], self._best(i)):
                cell = cell.center(w)
                if m is not None and best is not None:
                    cell = _color(cell, m.median, best)
                out.append(cell)
            lines.append("  |  ".join(out))
        title = f" {self.label or ''} ".center(len(header) - 2, "-")
        warn = self.highlight and any(m.has_warnings for m in self.results)
        return (f"[{title}]\n" + "\n".join(lines) + "\n\n"
                f"Times are in {common.unit_to_english(self.unit)}s ({self.unit}).\n"
                + (_HIGH_VARIANCE + "\n" if warn else ""))


class Compare:
    """Tables of Measurements, as torch.utils.benchmark.Compare: ``print()`` or ``str()``.

    One table per ``label`` (first-seen order); rows are ``sub_label`` (else ``stmt``),
    grouped by ``num_threads`` and prefixed with ``(env)`` when envs differ; columns are
    ``description``; cells are medians in the table's unit. Measurements with the same
    TaskSpec are merged first. ``trim_significant_figures()``, ``colorize(rowwise=False)``
    and ``highlight_warnings()`` switch on torch's display options.
    """

    def __init__(self, results: list[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results) -> None:
        """Append Measurements (anything else: ValueError)."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 "instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Print each column to the significant figures its measurements support."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color each cell against the best (smallest) median of its column within its
        thread group, or of its row when ``rowwise``."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Append "(! NN%)" (IQR / median) to cells whose measurement has warnings."""
        self._highlight_warnings = True

    def print(self) -> None:
        """Print ``str(self)``."""
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [_Table(group, self._colorize, self._trim_significant_figures,
                       self._highlight_warnings).render() for group in by_label.values()]
