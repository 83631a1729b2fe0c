"""The erf family on the CPU: special.erfc, erfcx, ndtr, log_ndtr and ndtri at ``--size``
elements (default 64K), float32 and float64, the forward and f(x).sum().backward() (µs, best
of ``--repeat`` calls). x = 4 N(0, 1); ndtri's p = U(0, 1).

    PYTHONPATH=<checkout> python perf/bench_erfs.py [--compare torch]

tgrad is imported from PYTHONPATH (the path is printed), so the one script times any
checkout; ``--compare torch`` times PyTorch eager on the same data in the same run, on one
thread (tgrad never imports torch, only this script does).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (perf/: the report helpers only)
from _report import best_ms  # noqa: E402

OPS = ("erfc", "erfcx", "ndtr", "log_ndtr", "ndtri")


def _closures(m, op: str, data: np.ndarray) -> tuple:
    """(fwd, fwd+bwd) of ``m.special.<op>`` (m: tgrad or torch) on ``data``."""
    f = getattr(m.special, op)
    x = m.tensor(data)
    xg = m.tensor(data, requires_grad=True)

    def fwd():
        f(x)

    def fwdbwd():
        f(xg).sum().backward()
        xg.grad = None
    return fwd, fwdbwd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=1 << 16)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--compare", choices=["torch"], default=None)
    args = p.parse_args(argv)
    libs = ["tgrad"] + ([args.compare] if args.compare else [])
    mods = {lib: importlib.import_module(lib) for lib in libs}
    if args.compare:
        mods["torch"].set_num_threads(1)
    print(f"tgrad: {mods['tgrad'].__file__}; {args.size} elements, best of {args.repeat} (µs)")
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        data = {"x": (rng.standard_normal(args.size) * 4).astype(dt),
                "p": rng.random(args.size).astype(dt)}
        for op in OPS:
            line = [f"{np.dtype(dt).name:8s} {op:9s}"]
            for lib in libs:
                fwd, fb = (best_ms(c, args.repeat) * 1e3
                           for c in _closures(mods[lib], op, data["p" if op == "ndtri" else "x"]))
                line.append(f"{lib} fwd {fwd:8.0f} fwd+bwd {fb:8.0f}")
            print(" | ".join(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
