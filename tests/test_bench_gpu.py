"""perf/bench_gpu.py's logic, run with --smoke in Triton's interpreter (tiny sizes, 2 reps):
every benchmark family runs and is scored against the copy measured in the same run, the
JSON / markdown / PNG are written, a failing benchmark is recorded instead of aborting the
run, and --budget-s skips what would not fit. Performance is only measured on a GPU
(perf/gpu_check.sh); nothing here checks speed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from interpreted import interpreter_env

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent(r"""
    import json, os, sys
    sys.path.insert(0, os.path.join(sys.argv[1], "perf"))
    import bench_gpu
    out = sys.argv[2]
    rc = bench_gpu.main(["--out", out, "--smoke"])
    # failure recording and the time budget, on a Bench of their own
    b = bench_gpu.Bench(os.path.join(out, "extra"), bench_gpu.sizes_for(True, 2, None), 0.0,
                        True)
    os.makedirs(b.out, exist_ok=True)
    b.copy_gbs = 1.0
    def boom():
        raise ValueError("kernel exploded")
    r1 = b.run("boom", "nn", boom, nbytes=8)
    r2 = b.run("after boom", "elementwise", lambda: None, nbytes=8)
    b.budget_s = 1e-9
    r3 = b.run("late", "elementwise", lambda: None, nbytes=8)
    saved = json.load(open(os.path.join(b.out, "bench_gpu.json")))
    print("RESULT" + json.dumps({"rc": rc, "boom": r1, "after": r2, "late": r3,
                                 "saved_errors": saved["n_errors"]}))
""")


def test_bench_gpu_smoke(tmp_path):
    env = interpreter_env()
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT), str(tmp_path)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(next(ln for ln in proc.stdout.splitlines()
                          if ln.startswith("RESULT"))[len("RESULT"):])
    assert res["rc"] == 0

    rep = json.loads((tmp_path / "bench_gpu.json").read_text())
    assert rep["smoke"] and rep["interpreted"]
    assert rep["n_errors"] == 0, [r for r in rep["results"] if r["error"]]
    assert rep["copy_GBps"] > 0
    rows = rep["results"]
    fams = {r["family"] for r in rows}
    assert fams == {"copy", "elementwise", "elementwise_bwd", "reduction", "reduction_bwd",
                    "nn", "nn_bwd", "matmul", "indexing"}
    names = {(r["name"].split()[0], r["dtype"]) for r in rows if r["family"].startswith("nn")}
    for op in ("softmax", "log_softmax", "cross_entropy", "layer_norm"):
        assert {(op, "float32"), (op, "bfloat16")} <= names, op
    for r in rows:
        assert r["ms"] > 0, r
        if r["family"] in ("copy", "matmul"):
            continue
        # scored against the copy of this run: fraction == (bytes / ms) / copy bandwidth
        assert r["target"] == {"elementwise": 0.9, "elementwise_bwd": 0.9, "reduction": 0.8,
                               "reduction_bwd": 0.75, "nn": 0.8, "nn_bwd": 0.7,
                               "indexing": None}[r["family"]]
        expect = r["bytes"] / r["ms"] / 1e6 / rep["copy_GBps"]
        assert abs(r["fraction"] - expect) <= 1e-3 * expect + 1e-9, r
        assert r["meets_target"] == (None if r["target"] is None
                                     else r["fraction"] >= r["target"])
    mm = [r for r in rows if r["family"] == "matmul"]
    assert len(mm) == 2 and all(r["dtype"] == "bfloat16" and r["TFLOP/s"] > 0 for r in mm)
    assert mm[0]["flops"] == 2 * rep["matmul_n"] ** 3
    # interpreter: no torch reference is tried and no published rate matches
    assert rep["matmul_reference"]["tflops"] is None
    assert mm[0]["fraction"] is None and "none" in rep["matmul_reference"]["kind"]

    md = (tmp_path / "bench_gpu.md").read_text()
    assert "| op | dtype | shape | ms | GB/s |" in md and "SMOKE" in md
    assert md.count("\n| ") == len(rows) + 1  # header + one line per result
    png = (tmp_path / "bench_gpu.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 100

    assert res["boom"]["error"].startswith("ValueError: kernel exploded")
    assert res["boom"]["ms"] is None and res["after"]["error"] is None
    assert res["late"]["error"].startswith("skipped: time budget")
    assert res["saved_errors"] == 2  # the JSON is rewritten after every benchmark
