"""F.ctc_loss on the CPU: ``ctc_loss(log_softmax(x, 2), targets, ...)`` forward + backward
and forward under no_grad (ms, best of ``--repeat`` rounds of ``--inner`` calls, after one
warm-up call), targets (N, S) padded, every input length T and target length S.

    python perf/bench_ctc.py                          # table + perf/out/bench_ctc.json
    python perf/bench_ctc.py --compare torch --out ''

``--compare torch`` times PyTorch eager on the same inputs in the same run, with
``torch.set_num_threads(1)`` (tgrad never imports torch, only this script does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
from _report import best_ms, header, save  # noqa: E402


def cases(lib: str, x: np.ndarray, targets: np.ndarray) -> tuple:
    """(fwd+bwd, no_grad fwd) closures for ``lib`` ("tgrad" or "torch")."""
    if lib == "torch":
        import torch as m
        m.set_num_threads(1)
        fn = m.nn.functional.ctc_loss
    else:
        import tgrad as m
        fn = m.nn.functional.ctc_loss
    t, n = x.shape[:2]
    xt, tt = m.tensor(x), m.tensor(targets)
    in_len, tg_len = [t] * n, [targets.shape[1]] * n

    def fwdbwd():
        z = xt.detach().requires_grad_()
        fn(z.log_softmax(2), tt, in_len, tg_len).backward()

    def fwd():
        with m.no_grad():
            fn(xt.log_softmax(2), tt, in_len, tg_len)
    return fwdbwd, fwd


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, default=50)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--classes", type=int, default=20)
    p.add_argument("--target", type=int, default=30)
    p.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--inner", type=int, default=5)
    p.add_argument("--compare", choices=["torch"], default=None)
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    from tabulate import tabulate
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.frames, args.batch, args.classes)).astype(args.dtype)
    targets = rng.integers(1, args.classes, (args.batch, args.target))
    libs = ["tgrad"] + ([args.compare] if args.compare else [])
    rows = [{"lib": lib, **dict(zip(("fwdbwd_ms", "fwd_nograd_ms"),
                                    (best_ms(f, args.repeat, args.inner)
                                     for f in cases(lib, x, targets))))} for lib in libs]
    print(f"T={args.frames} N={args.batch} C={args.classes} S={args.target} {args.dtype}, "
          f"best of {args.repeat} x {args.inner} (ms)")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), floatfmt=".2f"))
    if args.out:
        report = header("tgrad-bench-ctc/1")
        report.update(frames=args.frames, batch=args.batch, classes=args.classes,
                      target=args.target, dtype=args.dtype, numpy=np.__version__,
                      results=rows)
        save(report, args.out, "bench_ctc.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
