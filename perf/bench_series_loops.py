"""Host time of the term-by-term loops behind gammainc / gammaincc and Gamma's and Beta's
reparameterised gradients (tgrad/ops/incomplete_gamma.py ``converge``), on the current
device.

    python perf/bench_series_loops.py                  # 200k float64 elements, CPU
    python perf/bench_series_loops.py --size 20000 --device cuda --out ''

Each case runs once to warm up, then ``--repeats`` times; the table gives the best and the
median (ms). The draws are seeded, so a run before and after a change times the same work;
``--save-values FILE.npz`` keeps the results (values and gradients) to compare two runs for
bit identity. Writes JSON (schema tgrad-bench-series-loops/1) to ``--out`` (default
perf/out/; '' for none).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _report import header, save  # noqa: E402


def cases(size: int, device: str) -> dict:
    """name -> a function returning the arrays it computed (values or parameter grads)."""
    import tgrad
    from tgrad.distributions import Beta, Gamma
    rng = np.random.default_rng(0)
    a = tgrad.tensor(rng.uniform(0.1, 30.0, size), device=device)
    x = tgrad.tensor(rng.uniform(0.01, 60.0, size), device=device)

    def rsample_grads(dist, *params):
        def run():
            tgrad.manual_seed(0)
            leaves = [tgrad.full((size,), p, dtype=tgrad.float64, device=device,
                                 requires_grad=True) for p in params]
            dist(*leaves).rsample().sum().backward()
            return [t.grad.cpu().numpy() for t in leaves]
        return run

    return {
        "gammainc": lambda: [tgrad.special.gammainc(a, x).cpu().numpy()],
        "gammaincc": lambda: [tgrad.special.gammaincc(a, x).cpu().numpy()],
        "Gamma(0.7, 1) rsample + backward": rsample_grads(Gamma, 0.7, 1.0),
        "Beta(2, 3) rsample + backward": rsample_grads(Beta, 2.0, 3.0),
        "Beta(0.05, 0.1) rsample + backward": rsample_grads(Beta, 0.05, 0.1),
    }


def main(argv: list | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=200_000)
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--save-values", default="", help="an .npz file for the results")
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    from tabulate import tabulate
    rows, values = [], {}
    for name, fn in cases(args.size, args.device).items():
        values[name] = fn()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        rows.append({"case": name, "best_ms": min(times), "median_ms": statistics.median(times)})
    print(f"{args.size} float64 elements on {args.device}, {args.repeats} timed runs each")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), floatfmt=".0f"))
    if args.save_values:
        np.savez(args.save_values, **{f"{k}/{i}": v for k, vs in values.items()
                                      for i, v in enumerate(vs)})
    if args.out:
        report = header("tgrad-bench-series-loops/1")
        report.update(size=args.size, device=args.device, results=rows)
        save(report, args.out, "bench_series_loops.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
