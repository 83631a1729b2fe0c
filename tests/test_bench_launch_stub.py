"""perf/bench_launch_stub.py runs end to end without a GPU (a short run; the numbers are
not checked, only that every case ran through tgrad's fast launch path and the report is
written)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("triton")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.skipif(not (shutil.which("cc") or shutil.which("gcc")), reason="no C compiler")
def test_bench_launch_stub_runs(tmp_path):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "perf", "bench_launch_stub.py"),
                        "--out", str(tmp_path), "--number", "64", "--repeat", "1",
                        "--profile", "64"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    res = json.loads((tmp_path / "bench_launch_stub.json").read_text())["results"]
    for k in ("fwd", "nograd", "chain_fwd", "chain_fwdbwd"):
        assert res[k]["median_us"] > 0, k
    # --profile: a cProfile of the tiny forward and of the chain's forward + backward
    prof = (tmp_path / "launch_profile_cuda.txt").read_text()
    assert "===== fwd x 64 (cuda)" in prof and "run_backward" in prof
    stats = res["launch_stats"]
    # after each specialization's first launch, every launch took the fast path
    assert stats["fallback"] == 0 and stats["fast"] > 10 * stats["first"] > 0, stats
