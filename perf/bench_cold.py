"""Host time of one op with cold caches: the fixed cost that 1M-element ops pay (issue 3).

    python perf/bench_cold.py                       # sum,mean,add,mul,exp at 64 elements
    python perf/bench_cold.py --ops sum --calls 3000 --out ''

Next to a 1M-element op (4 MB streamed through the caches), tgrad's Python bookkeeping runs
with cold caches: it costs 3-4x its warm time, and that, not extra passes over the data, is
what keeps `sum`/`mean` below 0.9x NumPy at 1M elements in perf/bench_cpu.py. This script
measures that cost directly and reproducibly: before every timed call it writes
``--flush-mb`` MB (default 8, more than this box's L2), then times one tgrad forward, or one
backward of a retained graph, on 64-element tensors, and the same for the raw NumPy code of
``tgrad.bench`` under the same flushes. Medians of ``--calls`` single calls (µs), warm (no
flush) and cold, and cold - NumPy cold: the cost the bookkeeping adds at 1M elements.

Writes JSON (schema tgrad-bench-cold/1) to ``--out`` (default perf/out/; '' for none).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _report import header, save  # noqa: E402


def median_us(fn, calls: int, flush: np.ndarray | None) -> float:
    """Median µs of ``calls`` single calls of ``fn``, ``flush`` rewritten before each."""
    clock = time.perf_counter_ns
    times = []
    for i in range(calls):
        if flush is not None:
            flush.fill(i & 255)
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return float(np.median(times)) / 1e3


def measure(op: str, size: int, calls: int, flush: np.ndarray) -> list[dict]:
    """Rows for ``op``'s forward and backward: warm and cold, tgrad and NumPy."""
    from tgrad.bench import make_case
    case = make_case(op, size)
    rows = []
    for phase, t_fn, n_fn in (("forward", case.tgrad_fwd, case.numpy_fwd),
                              ("backward", case.tgrad_bwd, case.numpy_bwd)):
        for fn in (t_fn, n_fn):  # warm-up: lazy imports, first-call caches
            fn()
        row = {"op": op, "phase": phase, "size": size,
               "tgrad_warm_us": median_us(t_fn, calls, None),
               "tgrad_cold_us": median_us(t_fn, calls, flush),
               "numpy_warm_us": median_us(n_fn, calls, None),
               "numpy_cold_us": median_us(n_fn, calls, flush)}
        row["cold_overhead_us"] = row["tgrad_cold_us"] - row["numpy_cold_us"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ops", default="sum,mean,add,mul,exp")
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--calls", type=int, default=1500, help="timed single calls per median")
    p.add_argument("--flush-mb", type=float, default=8.0)
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    flush = np.empty(int(args.flush_mb * (1 << 20)), np.uint8)
    rows = [r for op in args.ops.split(",") for r in measure(op, args.size, args.calls, flush)]

    from tabulate import tabulate
    cols = ["op", "phase", "tgrad_warm_us", "tgrad_cold_us", "numpy_warm_us", "numpy_cold_us",
            "cold_overhead_us"]
    print(f"host µs per call, {args.size} elements, caches flushed by a {args.flush_mb:g} MB "
          f"write before each cold call (median of {args.calls})")
    print(tabulate([[r[c] for c in cols] for r in rows], headers=cols, floatfmt=".2f"))
    if args.out:
        import platform

        import tgrad
        report = header("tgrad-bench-cold/1", "python perf/bench_cold.py " + " ".join(
            argv if argv is not None else sys.argv[1:]))
        report.update(machine=platform.processor() or platform.machine(),
                      python=platform.python_version(), numpy=np.__version__,
                      tgrad=getattr(tgrad, "__version__", "?"), flush_mb=args.flush_mb,
                      calls=args.calls, results=rows)
        save(report, args.out, "bench_cold.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
