"""F.grid_sample on the CPU: forward + backward (input and grid both requiring grad,
``grid_sample(x, grid).sum().backward()``) and forward alone, in ms (best of ``--repeat``
calls after one warm-up call), per mode and dtype.

    python perf/bench_grid_sample.py --compare torch
    python perf/bench_grid_sample.py --tgrad /tmp/base /tmp/branch --rounds 2 --compare torch

Input (N, C, H, W) = --shape, grid (N, Ho, Wo, 2) = --grid, uniform in [-1, 1],
align_corners=False, zeros padding. Each ``--tgrad`` checkout (default: this script's) and
PyTorch (``--compare torch``, one thread; tgrad never imports torch, only this script does)
runs each case (dtype, mode) in a fresh subprocess, the checkouts alternating for
``--rounds`` rounds; the table shows each one's best over the rounds. (Fresh processes,
because glibc's malloc raises its mmap threshold after freeing a large block: a case timed
after another that freed large temporaries page-faults less than it would alone, and page
faults are expensive on this VM. ``--shared`` times every case in one process per checkout.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))
from _report import best_ms  # noqa: E402

MODES = ("bicubic", "bilinear", "nearest")
DTYPES = ("float64", "float32")


def _child(lib: str, shape: tuple, grid_shape: tuple, repeat: int, cases: list) -> dict:
    """{"dtype mode": [fwd+bwd ms, fwd ms]} of ``lib`` ("torch" or "tgrad")."""
    if lib == "torch":
        import torch as m
        m.set_num_threads(1)
        fn = m.nn.functional.grid_sample
    else:
        import tgrad as m
        fn = m.nn.functional.grid_sample
    rng = np.random.default_rng(0)
    res = {}
    for case in cases:
        dt, mode = case.split()
        x = rng.standard_normal(shape).astype(dt)
        g = rng.uniform(-1, 1, grid_shape).astype(dt)

        def both(mode=mode, x=x, g=g):
            xt = m.tensor(x, requires_grad=True)
            gt = m.tensor(g, requires_grad=True)
            fn(xt, gt, mode=mode, align_corners=False).sum().backward()

        def fwd(mode=mode, x=x, g=g):
            fn(m.tensor(x), m.tensor(g), mode=mode, align_corners=False)
        res[case] = [best_ms(both, repeat), best_ms(fwd, repeat)]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", type=int, nargs=4, default=(4, 8, 64, 64))
    ap.add_argument("--grid", type=int, nargs=4, default=(4, 48, 48, 2))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tgrad", nargs="+", default=[str(ROOT)], help="checkouts to time")
    ap.add_argument("--compare", choices=["torch"], default=None)
    ap.add_argument("--shared", action="store_true", help="all cases in one process")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)  # lib, checkout, cases
    a = ap.parse_args()
    if a.child:
        if a.child[0] == "tgrad":
            sys.path.insert(0, a.child[1])
        print(json.dumps(_child(a.child[0], tuple(a.shape), tuple(a.grid), a.repeat,
                                a.child[2].split(","))))
        return
    runs = [("tgrad", p) for p in a.tgrad] + ([("torch", "")] if a.compare else [])
    cases = [f"{dt} {mode}" for dt in DTYPES for mode in MODES]
    groups = [",".join(cases)] if a.shared else cases
    best: dict = {}
    for _ in range(a.rounds):
        for lib, path in runs:
            for group in groups:
                cmd = [sys.executable, __file__, "--child", lib, path or "-", group,
                       "--repeat", str(a.repeat), "--shape", *map(str, a.shape), "--grid",
                       *map(str, a.grid)]
                out = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                text=True).stdout)
                col = best.setdefault(path or lib, {})
                for case, t in out.items():
                    col[case] = [min(u, v) for u, v in zip(col.get(case, t), t)]
    names = list(best)
    how = "one process per checkout" if a.shared else "one process per case"
    print(f"input {a.shape}, grid {a.grid}; ms, best of {a.repeat} x {a.rounds} rounds, "
          f"{how}; fwd+bwd / fwd")
    print("| case | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for case in best[names[0]]:
        cells = [f"{best[n][case][0]:.2f} / {best[n][case][1]:.2f}" for n in names]
        print(f"| {case} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
