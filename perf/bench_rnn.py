"""nn.LSTM / nn.GRU / nn.RNN on the CPU: one layer over a sequence, forward + backward and
forward under no_grad (ms, best of ``--repeat`` calls after one warm-up call), and the bytes
tgrad's recorded graph holds after the forward (tracemalloc: NumPy reports its buffers;
PyTorch's are not seen there, so only tgrad's are reported).

    python perf/bench_rnn.py                          # table + perf/out/bench_rnn.json
    python perf/bench_rnn.py --length 50 --batch 8 --hidden 64 --compare torch --out ''

float32 input (L, N, H) and hidden size H; ``--compare torch`` times PyTorch eager on the
same shapes in the same run (with ``torch.set_num_threads`` left as it is; tgrad never
imports torch, only this script does).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
from _report import best_ms, header, save  # noqa: E402

MODULES = ("LSTM", "GRU", "RNN")


def held_mb(fwd) -> float:
    """MB allocated and still held after ``fwd()`` returns its output (the graph's saved
    tensors and the output)."""
    gc.collect()
    tracemalloc.start()
    out = fwd()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del out
    return held / 1e6


def cases(lib: str, x: np.ndarray, hidden: int) -> dict:
    """module name -> (fwd+bwd, no_grad fwd, fwd with grad) closures for ``lib`` ("tgrad"
    or "torch")."""
    if lib == "torch":
        import torch as m
    else:
        import tgrad as m
    out = {}
    for name in MODULES:
        m.manual_seed(0)
        mod = getattr(m.nn, name)(x.shape[-1], hidden)
        xt = m.tensor(x, requires_grad=True)

        def fwdbwd(mod=mod, xt=xt):
            mod.zero_grad()
            xt.grad = None
            y, _ = mod(xt)
            y.sum().backward()

        def fwd(mod=mod, xt=xt):
            with m.no_grad():
                mod(xt)

        out[name] = (fwdbwd, fwd, lambda mod=mod, xt=xt: mod(xt))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--length", type=int, default=50)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--compare", choices=["torch"], default=None)
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    from tabulate import tabulate
    x = np.random.default_rng(0).standard_normal(
        (args.length, args.batch, args.hidden)).astype(np.float32)
    libs = ["tgrad"] + ([args.compare] if args.compare else [])
    timed = {lib: {name: [best_ms(f, args.repeat) for f in fns[:2]] + [held_mb(fns[2])]
                   for name, fns in cases(lib, x, args.hidden).items()} for lib in libs}
    rows = []
    for name in MODULES:
        row = {"module": name, "tgrad_fwdbwd_ms": timed["tgrad"][name][0],
               "tgrad_fwd_nograd_ms": timed["tgrad"][name][1],
               "tgrad_graph_mb": timed["tgrad"][name][2]}
        if args.compare:
            row.update(torch_fwdbwd_ms=timed["torch"][name][0],
                       torch_fwd_nograd_ms=timed["torch"][name][1])
        rows.append(row)
    print(f"L={args.length} N={args.batch} H={args.hidden} float32, best of {args.repeat} (ms)")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), floatfmt=".2f"))
    if args.out:
        report = header("tgrad-bench-rnn/1")
        report.update(length=args.length, batch=args.batch, hidden=args.hidden,
                      numpy=np.__version__, results=rows)
        save(report, args.out, "bench_rnn.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
