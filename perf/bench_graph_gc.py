"""What the garbage collector costs a large recorded graph kept alive.

    python perf/bench_graph_gc.py                        # table + perf/out/bench_graph_gc.json
    python perf/bench_graph_gc.py --ops 1000,20000,100000 --out ''

Records a chain of N ops (``y = y * 1.0001`` on a 4-element float64 leaf, every output kept in
a list, as an unrolled loop or a list of losses keeps them), then runs its backward, once
with Python's collector on and once with it off (``gc.disable()``), each in a fresh process
(the heap the collector walks is the process's). Reports the forward's and the backward's
µs per op, the time spent in collections (``gc.callbacks``) and the objects the collector
still tracks per recorded op. The difference between the two runs is what the collector
costs: every full collection walks the whole live graph.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "perf"))
from _report import header, save  # noqa: E402

_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[3])
import numpy as np
import tgrad
n, collector = int(sys.argv[1]), sys.argv[2] == "on"
x = tgrad.tensor(np.ones(4), requires_grad=True)
spent = [0.0, 0.0]
def timed(phase, info):
    if phase == "start":
        spent[1] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - spent[1]
gc.callbacks.append(timed)
gc.collect()
if not collector:
    gc.disable()
spent[0] = 0.0
start = time.perf_counter()
outs, y = [], x
for _ in range(n):
    y = y * 1.0001
    outs.append(y)
fwd = time.perf_counter() - start
fwd_gc = spent[0]
spent[0] = 0.0
start = time.perf_counter()
y.sum().backward()
bwd = time.perf_counter() - start
bwd_gc = spent[0]
# tracked objects per op: a second chain of n ops, counted after collections (which
# untrack tuples of untracked items) once the first made the one-time objects
gc.collect()
before = len(gc.get_objects())
outs2, y = [], x
for _ in range(n):
    y = y * 1.0001
    outs2.append(y)
gc.collect()
tracked = (len(gc.get_objects()) - before) / n
print(json.dumps({"fwd_us": fwd / n * 1e6, "fwd_gc_us": fwd_gc / n * 1e6,
                  "bwd_us": bwd / n * 1e6, "bwd_gc_us": bwd_gc / n * 1e6,
                  "tracked_per_op": tracked}))
"""


def run(n: int, collector: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(n), collector, str(ROOT)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", default="1000,20000,100000", help="chain lengths, comma-separated")
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    from tabulate import tabulate
    rows = []
    for n in [int(s) for s in args.ops.split(",")]:
        on, off = run(n, "on"), run(n, "off")
        rows.append({"ops": n, "fwd_us_gc_on": on["fwd_us"], "fwd_us_gc_off": off["fwd_us"],
                     "fwd_gc_us": on["fwd_gc_us"], "bwd_us_gc_on": on["bwd_us"],
                     "bwd_us_gc_off": off["bwd_us"], "tracked_per_op": on["tracked_per_op"]})
    print("µs per recorded op (y = y * 1.0001, outputs kept); collector on / off")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), floatfmt=".2f"))
    if args.out:
        report = header("tgrad-bench-graph-gc/1")
        report.update(python=sys.version.split()[0], results=rows)
        save(report, args.out, "bench_graph_gc.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
