"""A small CNN on the CPU and its parts, in ms (best of ``--repeat`` blocks of ``--inner``
calls, CPU time of the process: the box is shared):

* conv2d 3x3 padding 1 of the two layers, (32, 3, 32, 32) -> 16 and (32, 16, 16, 16) -> 32,
  forward (no_grad) and forward + backward (input, weight, bias requiring grad);
* batch_norm2d training on (32, 16, 32, 32) and (32, 32, 16, 16), forward and f + b;
* relu and max_pool2d(2) on the same shapes, forward and f + b;
* one SGD (momentum 0.9) step of Conv(3,16)-BN-ReLU-MaxPool-Conv(16,32)-BN-ReLU-MaxPool-
  Linear, batch 32 of 32 x 32 float32, cross entropy.

    python perf/bench_cnn_cpu.py --compare torch
    python perf/bench_cnn_cpu.py --tgrad /tmp/base /tmp/branch --rounds 3 --compare torch

Each ``--tgrad`` checkout (default: this script's) and PyTorch (``--compare torch``, one
thread; tgrad never imports torch, only this script does) runs the layers in a fresh
subprocess and the step in another, the checkouts alternating (in reversed order every
other round) for ``--rounds`` rounds; the table shows each one's best over the rounds.
float32, OPENBLAS_NUM_THREADS=1. The step's time depends a lot on page faults (glibc
trims the freed top of its heap after each step; MALLOC_TRIM_THRESHOLD_ and
MALLOC_MMAP_THRESHOLD_ set high remove them): compare checkouts in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))
from _report import best_ms  # noqa: E402


def _cpu_ms(fn, repeat: int, inner: int) -> float:
    """Best CPU-time ms per call (two warm-up calls): best_ms on time.process_time."""
    return best_ms(fn, repeat, inner, warmup=2, clock=time.process_time)


CONVS = (((32, 3, 32, 32), 16), ((32, 16, 16, 16), 32))
NORMS = ((32, 16, 32, 32), (32, 32, 16, 16))


def _cnn_step(m, x: np.ndarray, y: np.ndarray):
    nn = m.nn
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10))
    opt = m.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9)
    xt, yt = m.tensor(x), m.tensor(y)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(net(xt), yt).backward()
        opt.step()
    return step


def _child(lib: str, part: str, repeat: int, inner: int) -> dict:
    """{case: ms} of ``lib`` ("torch" or "tgrad"): the layers (``part`` "ops") or the CNN
    step ("step", in a process of its own: the layers' large temporaries change how often
    malloc hands pages back to the OS, and page faults are expensive on this VM)."""
    if lib == "torch":
        import torch as m
        m.set_num_threads(1)
    else:
        import tgrad as m
    functional = m.nn.functional
    rng = np.random.default_rng(0)
    if part == "step":
        step = _cnn_step(m, rng.standard_normal((32, 3, 32, 32)).astype(np.float32),
                         rng.integers(0, 10, 32))
        return {"cnn step": _cpu_ms(step, repeat, inner)}
    res = {}
    for xs, o in CONVS:
        x, w, b = (m.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
                   for s in (xs, (o, xs[1], 3, 3), (o,)))
        g = m.tensor(rng.standard_normal((xs[0], o) + xs[2:]).astype(np.float32))

        def fwd(x=x, w=w, b=b):
            with m.no_grad():
                functional.conv2d(x, w, b, padding=1)

        def both(x=x, w=w, b=b, g=g):
            x.grad = w.grad = b.grad = None
            functional.conv2d(x, w, b, padding=1).backward(g)
        name = f"conv2d {xs} -> {o}"
        res[name + " fwd"] = _cpu_ms(fwd, repeat, inner)
        res[name + " fwd+bwd"] = _cpu_ms(both, repeat, inner)
    for xs in NORMS:
        x = m.tensor(rng.standard_normal(xs).astype(np.float32), requires_grad=True)
        bn = m.nn.BatchNorm2d(xs[1])
        g = m.tensor(rng.standard_normal(xs).astype(np.float32))

        def fwd(x=x, bn=bn):
            with m.no_grad():
                bn(x)

        def both(x=x, bn=bn, g=g):
            x.grad = bn.weight.grad = bn.bias.grad = None
            bn(x).backward(g)
        res[f"batch_norm2d {xs} fwd"] = _cpu_ms(fwd, repeat, inner)
        res[f"batch_norm2d {xs} fwd+bwd"] = _cpu_ms(both, repeat, inner)
    for xs in NORMS:
        x = m.tensor(rng.standard_normal(xs).astype(np.float32), requires_grad=True)
        pooled = xs[:2] + tuple(s // 2 for s in xs[2:])
        for name, fn, gs in (("relu", functional.relu, xs),
                             ("max_pool2d(2)", lambda t: functional.max_pool2d(t, 2), pooled)):
            g = m.tensor(rng.standard_normal(gs).astype(np.float32))

            def fwd(x=x, fn=fn):
                with m.no_grad():
                    fn(x)

            def both(x=x, fn=fn, g=g):
                x.grad = None
                fn(x).backward(g)
            res[f"{name} {xs} fwd"] = _cpu_ms(fwd, repeat, inner)
            res[f"{name} {xs} fwd+bwd"] = _cpu_ms(both, repeat, inner)
    return res


def _run(lib: str, path: str | None, args) -> dict:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    if path is not None:
        env["PYTHONPATH"] = path
    res = {}
    for part in ("ops", "step"):
        cmd = [sys.executable, __file__, "--child", lib, "--part", part, "--repeat",
               str(args.repeat), "--inner", str(args.inner)]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        res.update(json.loads(out.stdout.strip().splitlines()[-1]))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tgrad", nargs="*", default=[str(ROOT)], help="checkouts to time")
    ap.add_argument("--compare", choices=["torch"], help="also time PyTorch (one thread)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.part, args.repeat, args.inner)))
        return
    runs = [("tgrad " + p, "tgrad", p) for p in args.tgrad]
    if args.compare:
        runs.append(("torch", "torch", None))
    best: dict = {}
    for r in range(args.rounds):  # (the order reversed every other round)
        for label, lib, path in runs[::-1] if r % 2 else runs:
            for case, ms in _run(lib, path, args).items():
                row = best.setdefault(case, {})
                row[label] = min(row.get(label, float("inf")), ms)
    labels = [r[0] for r in runs]
    print("| case | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for case, row in best.items():
        print(f"| {case} | " + " | ".join(f"{row[lb]:.2f}" for lb in labels) + " |")


if __name__ == "__main__":
    main()
