"""perf/sweep_gpu.py's logic, with --smoke in Triton's interpreter (tiny sizes, 2 reps):
every candidate of every group runs without error, the table has one row per candidate and
op with one best per op, and the configs patched in are restored afterwards. Speed is only
measured on a GPU."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from interpreted import run_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent(r"""
    import json, os, sys
    root, out = {root!r}, {out!r}
    sys.path.insert(0, os.path.join(root, "perf"))
    import sweep_gpu
    from tgrad.kernels import configs
    before = (configs.red_config, configs.row_config, configs.ew_config,
              configs.RED_SPLIT_PROGRAMS)
    rc = sweep_gpu.main(["--out", out, "--smoke", "--reps", "2"])
    after = (configs.red_config, configs.row_config, configs.ew_config,
             configs.RED_SPLIT_PROGRAMS)
    n = (4 * len(sweep_gpu.ROW_RED) + 2 * len(sweep_gpu.COL_RED)
         + 6 * len(sweep_gpu.ROW_KERNEL) + 2 * len(sweep_gpu.EW_16)
         + 2 * len(sweep_gpu.LN_PARTIALS) + 2 * len(sweep_gpu.LN_STAGES)
         + 2 * len(sweep_gpu.CE_STAGES))
    print(json.dumps({{"rc": rc, "restored": before == after, "n": n}}))
""")


def test_sweep_gpu_smoke(tmp_path):
    res = run_json(SCRIPT.format(root=str(ROOT), out=str(tmp_path)))
    assert res["rc"] == 0 and res["restored"]
    rep = json.loads((tmp_path / "bench_gpu.json").read_text())
    assert rep["n_errors"] == 0, [r for r in rep["results"] if r["error"]]
    assert len(rep["results"]) == res["n"] + 1  # + the copy reference
    rows = [ln.split(" | ") for ln in (tmp_path / "sweep_gpu.md").read_text().splitlines()
            if ln.startswith("| ") and not ln.startswith("| group") and "---" not in ln]
    assert len(rows) == res["n"]
    ops = {(r[0], r[1]) for r in rows}
    best = [(r[0], r[1]) for r in rows if r[5].strip(" |") == "best"]
    assert sorted(best) == sorted(ops)  # exactly one best per (group, op)
