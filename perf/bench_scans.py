"""cumprod and logcumsumexp on the CPU: f(x).sum().backward() and the forward under no_grad
(ms, best of ``--repeat`` rounds of ``--inner`` calls), float64 (N, L) scanned along dim 1.

    PYTHONPATH=<checkout> python perf/bench_scans.py [--rows 64 --length 1024 --compare torch]

tgrad is imported from PYTHONPATH (the path is printed), so the one script times any
checkout; ``--compare torch`` times PyTorch eager on the same data in the same run, on one
thread (tgrad never imports torch, only this script does). cumprod's input is uniform in
[0.5, 1.5] (no zeros, no overflow), logcumsumexp's standard normal.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (perf/: the report helpers only)
from _report import best_ms  # noqa: E402

OPS = ("cumprod", "logcumsumexp")


def _closures(m, op: str, data: np.ndarray) -> tuple:
    """(fwd+bwd, no_grad fwd) of ``op`` in module ``m`` (tgrad or torch)."""
    def fwdbwd():
        x = m.tensor(data, requires_grad=True)
        getattr(m, op)(x, 1).sum().backward()

    def fwd():
        with m.no_grad():
            getattr(m, op)(m.tensor(data), 1)
    return fwdbwd, fwd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--length", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--inner", type=int, default=5)
    p.add_argument("--compare", choices=["torch"], default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    shape = (args.rows, args.length)
    data = {"cumprod": rng.uniform(0.5, 1.5, shape), "logcumsumexp": rng.standard_normal(shape)}
    libs = ["tgrad"] + ([args.compare] if args.compare else [])
    mods = {lib: importlib.import_module(lib) for lib in libs}
    if args.compare:
        mods["torch"].set_num_threads(1)
    print(f"tgrad: {mods['tgrad'].__file__}; float64 {shape}, dim 1, best of {args.repeat} x "
          f"{args.inner} (ms)")
    for op in OPS:
        line = [f"{op:13s}"]
        for lib in libs:
            fb, f = (best_ms(c, args.repeat, args.inner)
                     for c in _closures(mods[lib], op, data[op]))
            line.append(f"{lib} fwd+bwd {fb:7.3f} fwd {f:6.3f}")
        print(" | ".join(line))
    return 0


if __name__ == "__main__":
    sys.exit(main())
