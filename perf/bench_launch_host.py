"""Host time of one elementwise kernel launch (issue 7), measurable without a GPU: the whole
``tgrad.kernels.launch.launch_ew`` wrapper (plan lookup, pointers, key, argument tuple) with
a no-op stand-in for Triton's compiled launcher, so only tgrad's Python is timed.

    python perf/bench_launch_host.py                 # table + perf/out/bench_launch_host.json

Cases: a 2-input kernel on 0-d, 64-element contiguous and 64x64 strided (one transposed,
one broadcast input) arrays. On the GPU the launcher itself (Triton's C launcher, the
driver's cuLaunchKernel) comes on top.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
import _report  # noqa: E402
from tabulate import tabulate  # noqa: E402

import tgrad.kernels.launch as L  # noqa: E402
from tgrad.cuda.array import DeviceArray  # noqa: E402
from tgrad.kernels.elementwise import f_mul  # noqa: E402


class _NoOpCompiled:
    """Stands in for a CompiledKernel: ``run`` does nothing."""
    function, packed_metadata = 0, ()

    def run(self, *args) -> None:
        pass


class _FirstLaunch:
    """Stands in for ``ew_kernel[grid](...)`` (compile + launch): returns the no-op."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: _NoOpCompiled()


def _arr(shape: tuple, estrides: tuple, ptr: int = 4096) -> DeviceArray:
    return DeviceArray(SimpleNamespace(ptr=ptr), shape, estrides, 0, np.dtype(np.float32))


CASES = {
    "0-d": lambda: (_arr((), ()), [_arr((), ()), _arr((), ())]),
    "64 contiguous": lambda: (_arr((64,), (1,)), [_arr((64,), (1,)), _arr((64,), (1,))]),
    "64x64 strided": lambda: (_arr((64, 64), (64, 1)),
                              [_arr((64, 64), (1, 64)), _arr((64, 64), (0, 1))]),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = ap.parse_args(argv)
    # Stand-ins: no driver, no kernel, no device; the fast path itself is the real code.
    L.clear_launch_cache()
    L.fast_path_enabled = lambda: True
    L._driver_ready[:] = [True]
    L._hot.update(rt=SimpleNamespace(current_device=lambda: 0), stream=lambda d: 0,
                  knobs=SimpleNamespace(debug=False, launch_enter_hook=None,
                                        launch_exit_hook=None))
    L.ew_kernel = _FirstLaunch()
    L.kernel_info = lambda kernel: None  # first launches go through kernel[grid]
    rows = []
    for name, make in CASES.items():
        out, ins = make()
        L.launch_ew(f_mul, out, ins, False)  # first launch: plan + "compile"
        samples = [t / args.number * 1e6 for t in timeit.repeat(
            lambda out=out, ins=ins: L.launch_ew(f_mul, out, ins, False), number=args.number,
            repeat=args.repeat)]
        rows.append({"case": name, "median_us": statistics.median(samples),
                     "min_us": min(samples)})
    assert L.stats["fast"] >= args.number * args.repeat * len(CASES)
    print(tabulate([[r["case"], f"{r['median_us']:.2f}", f"{r['min_us']:.2f}"] for r in rows],
                   headers=["case", "launch_ew µs (median)", "min µs"]))
    command = " ".join(["python", "perf/bench_launch_host.py"]
                       + (argv if argv is not None else sys.argv[1:]))
    report = dict(_report.header("tgrad-bench-launch-host/1", command),
                  python=sys.version.split()[0], numpy=np.__version__, results=rows)
    _report.save(report, args.out, "bench_launch_host.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
