"""CPU performance check of issues 3 and 7: tgrad's per-op overhead over raw NumPy.

    python perf/bench_cpu.py                      # 64 and 1M elements, the default ops
    python perf/bench_cpu.py --ops mul,tanh --sizes 64 --budget 1 --compare torch

Targets (CPU backend):
- overhead (tgrad - NumPy, forward + backward, 64 elements) <= 2.5 µs per op;
- throughput at 1M elements >= 0.9x raw NumPy (forward, and forward + backward).

Prints the table of ``tgrad.bench`` plus a target summary and writes JSON to ``--out``
(default perf/out/). ``COMPARE`` holds the adapters for ``--compare`` (also used by
``python -m tgrad bench --compare``): they import the other framework here, in perf/, never
from tgrad/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OPS = "add,mul,div,exp,tanh,relu,sum,mean,matmul"
DEFAULT_SIZES = "64,1m"


def torch_adapter(op: str, size: int, dtype: str, device: str):
    """(fwd, fwd+bwd) closures running ``op`` in PyTorch eager on the same shapes/values
    as tgrad.bench (gradients reset to None each step, as tgrad's are)."""
    import numpy as np
    import torch

    from tgrad.bench import _shapes_for

    tdt = getattr(torch, dtype)
    dev = "cuda" if device == "cuda" else "cpu"
    rng = np.random.default_rng(0)
    leaves = []
    for i, s in enumerate(_shapes_for(op, size)):
        x = rng.uniform(0.5, 2.0, s) if op in ("log", "div") and (op == "log" or i == 1) \
            else rng.standard_normal(s)
        leaves.append(torch.tensor(x, dtype=tdt, device=dev, requires_grad=True))
    fn = {"relu": torch.relu, "sum": torch.sum, "mean": torch.mean}.get(op) or getattr(torch, op)
    g = torch.randn(fn(*leaves).shape, dtype=tdt, device=dev)

    def fwd():
        return fn(*leaves)

    def fwdbwd():
        for t in leaves:
            t.grad = None
        fn(*leaves).backward(g)

    return fwd, fwdbwd


COMPARE = {"torch": torch_adapter}


def summarize(report: dict) -> str:
    """One line per target: the worst op and whether the target holds."""
    from tgrad.bench import OVERHEAD_SIZE, TARGET_OVERHEAD_US, TARGET_RATIO, THROUGHPUT_SIZE
    rows = report["results"]
    lines = []
    small = [r for r in rows if r["size"] == OVERHEAD_SIZE]
    if small:
        worst = max(small, key=lambda r: r["overhead_us"])
        ok = all(r["meets_overhead"] for r in small)
        lines.append(f"overhead at {OVERHEAD_SIZE} elements (fwd+bwd): worst {worst['op']} "
                     f"{worst['overhead_us']:.1f} µs, target <= {TARGET_OVERHEAD_US} µs: "
                     f"{'MET' if ok else 'NOT MET'}")
    big = [r for r in rows if r["size"] == THROUGHPUT_SIZE]
    if big:
        worst = min(big, key=lambda r: min(r["ratio_fwd"], r["ratio_fwdbwd"]))
        ok = all(r["meets_ratio"] for r in big)
        lines.append(f"throughput at {THROUGHPUT_SIZE} elements: worst {worst['op']} "
                     f"fwd {worst['ratio_fwd']:.2f}x, fwd+bwd {worst['ratio_fwdbwd']:.2f}x "
                     f"NumPy, target >= {TARGET_RATIO}x: {'MET' if ok else 'NOT MET'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tgrad import bench

    parser = argparse.ArgumentParser(prog="perf/bench_cpu.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_arguments(parser)
    parser.set_defaults(ops=DEFAULT_OPS, sizes=DEFAULT_SIZES, out=str(ROOT / "perf" / "out"))
    args = parser.parse_args(argv)
    if args.device != "cpu":
        parser.error("perf/bench_cpu.py is the CPU benchmark; use --device cpu")
    words = sys.argv[1:] if argv is None else list(argv)
    cfg = bench.config_from_args(args, " ".join(["python", "perf/bench_cpu.py"] + words))
    report = bench.run_bench(cfg)
    report["summary"] = summarize(report)
    print(bench.format_table(report))
    print(report["summary"])
    if cfg.out:
        print(f"wrote {bench.write_json(report, cfg.out, stem='bench_cpu')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
