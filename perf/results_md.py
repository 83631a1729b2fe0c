"""Render a committed CPU benchmark JSON (perf/bench_cpu.py) as markdown, so the table in
perf/results/*.md always comes from the JSON and is never edited by hand.

    python perf/results_md.py perf/results/cpu_bench.json > perf/results/cpu_bench.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def render(report: dict, source: str) -> str:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tgrad.bench import format_table
    v = report["versions"]
    return "\n".join([
        "# CPU benchmark: tgrad overhead over raw NumPy (issues 3 and 7)",
        "",
        f"Generated from `{source}` by `perf/results_md.py` (not edited by hand).",
        "",
        f"- date: {report['date']}",
        f"- machine: 2-core CI VM ({report['device_name']})",
        f"- numpy {v['numpy']}, python {v['python']}, dtype {report['dtype']}"
        + (f"; PyTorch {v['torch']} eager (CPU) timed in the same run" if v.get("torch")
           else ""),
        f"- command: `{report['command']}`",
        "",
        "```",
        format_table(report),
        "```",
        "",
        report.get("summary", ""),
        "",
    ])


if __name__ == "__main__":
    path = sys.argv[1]
    print(render(json.loads(Path(path).read_text()), path), end="")
