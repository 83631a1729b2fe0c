"""The JSON report every perf/ script writes: a common header, then the file."""

from __future__ import annotations

import datetime
import json
import sys
import time
from pathlib import Path


def header(schema: str, command: str | None = None) -> dict:
    """schema, UTC date and the command line (``sys.argv`` unless given)."""
    return {"schema": schema, "date": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"), "command": command or " ".join(sys.argv)}


def save(report: dict, out_dir, name: str) -> Path:
    """Write ``report`` to OUT_DIR/NAME (creating the folder) and say so."""
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"wrote {path}")
    return path


def best_ms(fn, repeat: int, inner: int = 1, warmup: int = 1,
            clock=time.perf_counter) -> float:
    """Best ms per call of ``fn`` over ``repeat`` rounds of ``inner`` calls, after
    ``warmup`` calls (``clock``: wall time, or time.process_time for CPU time)."""
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        for _ in range(inner):
            fn()
        best = min(best, (clock() - start) / inner)
    return best * 1e3
