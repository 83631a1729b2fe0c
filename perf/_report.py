"""The JSON report every perf/ script writes: a common header, then the file."""

from __future__ import annotations

import datetime
import json
import sys
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
