"""Host time of tiny cuda ops end to end, without a GPU (issue 7): tgrad's driver runtime
over the tests' fake cuda-bindings (tests/test_cuda_driver_runtime.py: FakeCudaDriver, in
Python) and Triton's real C launcher built against the stand-in libcuda.so.1 of
tests/cuda_stub/libcuda_stub.c (cuLaunchKernelEx records and returns). Everything tgrad does
per op runs: autograd recording, the backend's dtype/broadcast work, allocation from the
small-block lists, the fast launch path and Triton's launcher; what is missing is the real
driver's own time (launches, and the fake's Python stands in for cuda-bindings' calls).

    python perf/bench_launch_stub.py [--out DIR] [--number 2000] [--profile N]

Cases: perf/bench_launch.py's (1-element float32 tensors requiring grad: fwd ``a * b``,
fwdbwd, the 32-node chain's forward and backward per node, engine = chain backward per node
minus its formula's two multiplies under no_grad), plus nograd (one ``a * b`` under
no_grad).
Needs a C compiler (the stand-in libcuda is built into a temporary folder); the timing runs
in a subprocess whose libcuda.so.1 is the stand-in. Writes DIR/bench_launch_stub.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))
import _report  # noqa: E402
from bench_launch import CHAIN  # noqa: E402

MARKER = "@@RESULT@@"


def build_stub(out_dir: str) -> str:
    """Compile the stand-in libcuda.so.1 against Triton's cuda.h; returns its folder."""
    import triton
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("bench_launch_stub: no C compiler (cc/gcc) to build the stand-in")
    include = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "include")
    subprocess.run([cc, "-O1", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-I", include,
                    "-o", os.path.join(out_dir, "libcuda.so.1"),
                    str(ROOT / "tests" / "cuda_stub" / "libcuda_stub.c")], check=True)
    return out_dir


def measure(number: int, repeat: int, profile_n: int = 0, out: str = "") -> dict:
    """Runs inside the subprocess (libcuda.so.1 is the stand-in): perf/bench_launch.py's
    cases and arithmetic on device cuda, plus ``nograd`` (one ``a * b`` under no_grad)."""
    import numpy as np
    sys.path.insert(0, str(ROOT / "tests"))
    import test_cuda_driver_runtime as fake_driver

    from tgrad.cuda import _runtime, driver_runtime
    rt = driver_runtime.DriverRuntime(bindings=fake_driver.FakeCudaDriver(
        n_devices=1, capacity=1 << 30))
    _runtime._state.update(rt=rt, why=None, done=True)
    import bench_launch

    import tgrad
    a, b = (tgrad.tensor(np.float32(1.0), device="cuda") for _ in range(2))

    def nograd():
        with tgrad.no_grad():
            return a * b

    cases = dict(bench_launch.tgrad_cases("cuda", 1), nograd=nograd)
    res = bench_launch.measure(cases, number, repeat, None)
    from tgrad.kernels import launch
    res["launch_stats"] = dict(launch.stats)
    if profile_n:
        os.makedirs(out, exist_ok=True)
        res["profile"] = str(bench_launch.profile("cuda", profile_n, Path(out)))
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    ap.add_argument("--number", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also write a cProfile of N tiny ops (perf/bench_launch.py's) to OUT")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(MARKER + json.dumps(measure(a.number, a.repeat, a.profile, a.out)))
        return 0
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, LD_LIBRARY_PATH=build_stub(d) + os.pathsep
                   + os.environ.get("LD_LIBRARY_PATH", ""),
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("TRITON_INTERPRET", None)
        p = subprocess.run([sys.executable, __file__, "--child", "--number", str(a.number),
                            "--repeat", str(a.repeat), "--profile", str(a.profile),
                            "--out", a.out], capture_output=True, text=True, env=env)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith(MARKER)), None)
    if p.returncode != 0 or line is None:
        print(p.stdout[-3000:] + p.stderr[-3000:], file=sys.stderr)
        return 1
    res = json.loads(line[len(MARKER):])
    res["chain_fwd_per_node"] = {"median_us": res["chain_fwd"]["median_us"] / CHAIN}
    for k in ("fwd", "nograd", "chain_fwd_per_node", "bwd_per_node", "engine_per_node"):
        print(f"{k:18s} {res[k]['median_us']:8.2f} us")
    import triton
    report = dict(_report.header("tgrad-bench-launch-stub/1"),
                  python=platform.python_version(), triton=triton.__version__,
                  machine=platform.processor() or platform.machine(), results=res)
    _report.save(report, a.out, "bench_launch_stub.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
