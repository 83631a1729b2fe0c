"""CPU memory check of issue 3 ("no hidden copies"): peak bytes of each op's forward and
backward against the bytes the op cannot avoid.

    python perf/bench_memory_cpu.py                       # every op of OPS, 1M elements
    python perf/bench_memory_cpu.py --ops add,softmax --size 64k --out ''

For each op, with float32 leaves of ``--size`` elements (2-D, n x n for matmul/linear and
the row-wise nn ops), tracemalloc (NumPy reports its data buffers to it) gives the peak
bytes allocated above the starting point during

- ``fwd``: ``y = op(*leaves)`` with grad recording (the graph's saved tensors included);
- ``bwd``: ``y.backward(g)`` with ``g`` made beforehand (the leaf ``.grad`` included).

``need_fwd`` = output bytes + the saved tensors the backward formula needs beyond the
inputs and outputs + the temporaries no NumPy implementation avoids (per op in ``_ops``:
e.g. var's float64 copy); ``need_bwd`` = the leaf gradients' bytes. The ratios
``peak / need`` are reported; above ``--flag`` (default 2.0), with an excess of at least a
tenth of a leaf's bytes, the row is marked ``*``. The
NumPy temporaries of an op that works in place on buffers it owns count once.

Prints a table and writes JSON (``--out``, default perf/out/, ``''`` for none), schema
``tgrad-bench-memory/1``.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = "tgrad-bench-memory/1"


def _ops():
    """name -> (shapes, fn, saved), built on call.

    Each entry: ``(shapes(n), fn(tg, nnf, *leaves), saved)`` where ``shapes`` lists the leaf
    shapes (floating, requires_grad) and ``saved`` is the number of extra full-size float32
    buffers (as a fraction of the first leaf's element count) the backward rule needs or
    NumPy cannot avoid as temporaries. Index tensors are made inside ``fn``."""
    import numpy as np

    def flat(n):
        return [(n,)]

    def flat2(n):
        return [(n,), (n,)]

    def sq(n):
        m = int(math.isqrt(n))
        return [(m, m)]

    def sq2(n):
        m = int(math.isqrt(n))
        return [(m, m), (m, m)]

    def bcast_row(n):
        m = int(math.isqrt(n))
        return [(m, m), (m,)]

    def bcast_col(n):
        m = int(math.isqrt(n))
        return [(m, m), (m, 1)]

    def idx(m, hi, seed=0):
        return np.random.default_rng(seed).integers(0, hi, m)

    ops = {}

    def add(name, shapes, fn, saved=0.0):
        ops[name] = (shapes, fn, saved)

    for u in ("neg", "exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "abs", "relu",
              "square", "reciprocal", "rsqrt", "expm1", "log1p", "erf", "atan", "sign",
              "floor"):
        # outputs or inputs are saved: both exist anyway
        add(u, flat, lambda tg, nnf, x, u=u: getattr(tg, u)(x))
    add("pow_2.5", flat, lambda tg, nnf, x: tg.pow(x, 2.5))
    add("pow_tt", flat2, lambda tg, nnf, a, b: tg.pow(a, b))
    for b in ("add", "sub", "mul", "div", "maximum", "atan2"):
        add(b, flat2, lambda tg, nnf, x, y, b=b: getattr(tg, b)(x, y))
        add(b + "_row", bcast_row, lambda tg, nnf, x, y, b=b: getattr(tg, b)(x, y))
    add("add_col", bcast_col, lambda tg, nnf, x, y: tg.add(x, y))
    add("mul_scalar", flat, lambda tg, nnf, x: x * 3.0)
    add("add_scalar", flat, lambda tg, nnf, x: x + 3.0)
    add("clamp", flat, lambda tg, nnf, x: tg.clamp(x, -0.5, 0.5))
    add("where", flat2, lambda tg, nnf, a, b: tg.where(a > 0, a, b))
    # temporaries a NumPy reduction cannot avoid: logsumexp e^(x - max), norm x^2 (one
    # buffer), var/std the float64 copy x - mean (PyTorch's accumulation type: two)
    for r, tmp in (("sum", 0), ("mean", 0), ("amax", 0), ("logsumexp", 1), ("var", 2),
                   ("std", 2), ("norm", 1), ("prod", 0)):
        add(r + "_dim1", sq, lambda tg, nnf, x, r=r: getattr(tg, r)(x, 1), tmp)
    add("sum_all", flat, lambda tg, nnf, x: x.sum())
    add("mean_all", flat, lambda tg, nnf, x: x.mean())
    add("max_dim1", sq, lambda tg, nnf, x: tg.max(x, 1)[0])
    add("softmax", sq, lambda tg, nnf, x: nnf.softmax(x, 1))
    add("log_softmax", sq, lambda tg, nnf, x: nnf.log_softmax(x, 1))
    add("layer_norm", sq, lambda tg, nnf, x: nnf.layer_norm(x, x.shape[-1:]))
    add("cross_entropy", sq, lambda tg, nnf, x: nnf.cross_entropy(
        x, tg.tensor(idx(x.shape[0], x.shape[1]))), saved=1.0)  # the softmax
    add("mse_loss", flat2, lambda tg, nnf, a, b: nnf.mse_loss(a, b), saved=1.0)  # a - b
    add("gelu", flat, lambda tg, nnf, x: nnf.gelu(x))
    add("gelu_tanh", flat, lambda tg, nnf, x: nnf.gelu(x, approximate="tanh"))
    add("silu", flat, lambda tg, nnf, x: nnf.silu(x))
    add("leaky_relu", flat, lambda tg, nnf, x: nnf.leaky_relu(x, 0.1))
    add("softplus", flat, lambda tg, nnf, x: nnf.softplus(x))
    # dropout saves nothing (the mask is regenerated); its float64 uniforms are temporaries
    add("dropout", flat, lambda tg, nnf, x: nnf.dropout(x, 0.5))
    add("matmul", sq2, lambda tg, nnf, a, b: a @ b)
    add("linear", sq2, lambda tg, nnf, x, w: nnf.linear(x, w))
    add("getitem_slice", sq, lambda tg, nnf, x: x[::2])
    add("getitem_index", sq, lambda tg, nnf, x: x[tg.tensor(idx(x.shape[0], x.shape[0]))])
    add("index_select", sq, lambda tg, nnf, x: tg.index_select(
        x, 0, tg.tensor(idx(x.shape[0], x.shape[0]))))
    add("gather", sq, lambda tg, nnf, x: tg.gather(
        x, 1, tg.tensor(idx(x.numel(), x.shape[1]).reshape(x.shape))), saved=2.0)  # int64
    add("scatter_add", sq2, lambda tg, nnf, x, s: tg.scatter_add(
        x, 1, tg.tensor(idx(x.numel(), x.shape[1]).reshape(x.shape)), s), saved=2.0)
    add("masked_fill", flat, lambda tg, nnf, x: x.masked_fill(x > 0, 0.0), saved=0.25)
    add("masked_select", flat, lambda tg, nnf, x: x.masked_select(x > 1.25), saved=0.25)
    add("embedding", sq, lambda tg, nnf, w: nnf.embedding(
        tg.tensor(idx(w.shape[0], w.shape[0])), w), saved=0.01)  # int64 rows
    add("nll_loss", sq, lambda tg, nnf, x: nnf.nll_loss(
        x, tg.tensor(idx(x.shape[0], x.shape[1]))))
    add("normalize", sq, lambda tg, nnf, x: nnf.normalize(x, dim=1))

    def img(n):  # (1, 64, h, h): 64 channels
        h = int(math.isqrt(n // 64))
        return [(1, 64, h, h)]

    add("conv2d_3x3", lambda n: img(n) + [(64, 64, 3, 3)],
        lambda tg, nnf, x, w: nnf.conv2d(x, w, padding=1))
    add("max_pool2d", img, lambda tg, nnf, x: nnf.max_pool2d(x, 2), saved=0.5)  # int64 argmax
    add("avg_pool2d", img, lambda tg, nnf, x: nnf.avg_pool2d(x, 2))
    add("batch_norm", img, lambda tg, nnf, x: nnf.batch_norm(
        x, None, None, training=True))
    add("cat", flat2, lambda tg, nnf, a, b: tg.cat([a, b]))
    add("stack", flat2, lambda tg, nnf, a, b: tg.stack([a, b]))
    add("transpose_contig", sq, lambda tg, nnf, x: x.t().contiguous())
    add("reshape", sq, lambda tg, nnf, x: x.reshape(-1))
    add("expand_contig", lambda n: [(int(math.isqrt(n)), 1)],
        lambda tg, nnf, x: x.expand(x.shape[0], x.shape[0]).contiguous())
    add("cumsum", sq, lambda tg, nnf, x: tg.cumsum(x, 1), saved=2.0)  # float64 running sum
    add("sort", sq, lambda tg, nnf, x: tg.sort(x, 1)[0], saved=2.0)  # int64 indices
    add("topk", sq, lambda tg, nnf, x: tg.topk(x, 8, 1)[0], saved=2.0)  # int64 positions
    return ops


def _fmt_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "km" else s) * mult


def _nbytes(t) -> int:
    return int(t.numel()) * t.element_size()


def measure(name: str, size: int, dtype: str = "float32", spec=None) -> dict:
    """Peak traced bytes of one op's forward and backward (see the module docstring)."""
    import numpy as np

    import tgrad as tg
    import tgrad.nn.functional as nnf

    shapes, fn, saved = spec if spec is not None else _ops()[name]
    rng = np.random.default_rng(0)
    leaves = [tg.tensor(rng.uniform(0.5, 2.0, s).astype(dtype), requires_grad=True)
              for s in shapes(size)]
    tg.manual_seed(0)
    # warm-up (caches, lazy imports), then measure
    y = fn(tg, nnf, *leaves)
    y.backward(tg.ones_like(y))
    for t in leaves:
        t.grad = None
    del y
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    y = fn(tg, nnf, *leaves)
    t_fwd = time.perf_counter() - t0
    peak_fwd = tracemalloc.get_traced_memory()[1] - base
    g = tg.tensor(rng.standard_normal(tuple(y.shape)).astype(dtype))
    gc.collect()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    y.backward(g)
    t_bwd = time.perf_counter() - t0
    peak_bwd = tracemalloc.get_traced_memory()[1] - base
    out_b = _nbytes(y)
    need_fwd = out_b + int(saved * _nbytes(leaves[0]))
    need_bwd = sum(_nbytes(t) for t in leaves)
    row = {"op": name, "shapes": [list(t.shape) for t in leaves], "out_shape": list(y.shape),
           "peak_fwd": peak_fwd, "need_fwd": need_fwd, "ratio_fwd": peak_fwd / max(need_fwd, 1),
           "peak_bwd": peak_bwd, "need_bwd": need_bwd, "ratio_bwd": peak_bwd / max(need_bwd, 1),
           "fwd_ms": t_fwd * 1e3, "bwd_ms": t_bwd * 1e3}
    del y, g, leaves
    gc.collect()
    return row


def run(ops: list, size: int, flag: float = 2.0) -> dict:
    import numpy as np
    from _report import header

    import tgrad

    table = _ops()
    unknown = [o for o in ops if o not in table]
    if unknown:
        raise ValueError(f"unknown op(s) {unknown}; known: {', '.join(table)}")
    started = tracemalloc.is_tracing()
    if not started:
        tracemalloc.start()
    try:
        rows = [measure(o, size, spec=table[o]) for o in ops]
    finally:
        if not started:
            tracemalloc.stop()
    for r in rows:  # (an excess under a tenth of a leaf is no copy: small outputs)
        tenth = r["need_bwd"] // (10 * len(r["shapes"]))
        r["flagged"] = any(r[f"ratio_{p}"] > flag and r[f"peak_{p}"] - r[f"need_{p}"] > tenth
                           for p in ("fwd", "bwd"))
    rep = header(SCHEMA)
    rep.update({"size": size, "dtype": "float32", "flag_ratio": flag,
                "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                             "tgrad": getattr(tgrad, "__version__", "?")},
                "method": "tracemalloc peak above the start, after a warm-up call",
                "results": rows})
    return rep


def format_table(rep: dict) -> str:
    from tabulate import tabulate
    mb = 1 / (1 << 20)
    body = [[r["op"] + (" *" if r["flagged"] else ""),
             "x".join(map(str, r["shapes"][0])),
             f"{r['peak_fwd'] * mb:.2f}", f"{r['need_fwd'] * mb:.2f}", f"{r['ratio_fwd']:.2f}",
             f"{r['peak_bwd'] * mb:.2f}", f"{r['need_bwd'] * mb:.2f}", f"{r['ratio_bwd']:.2f}",
             f"{r['fwd_ms']:.2f}", f"{r['bwd_ms']:.2f}"] for r in rep["results"]]
    return tabulate(body, headers=["op", "leaf 0", "fwd MB", "need", "ratio", "bwd MB",
                                   "need", "ratio", "fwd ms", "bwd ms"], stralign="right")


def main(argv: list[str] | None = None) -> int:
    for p in (str(ROOT), str(ROOT / "perf")):
        if p not in sys.path:
            sys.path.insert(0, p)
    parser = argparse.ArgumentParser(prog="perf/bench_memory_cpu.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=None, help="comma-separated ops (default: all)")
    parser.add_argument("--size", default="1m", help="elements per leaf (64k, 1m, ...)")
    parser.add_argument("--flag", type=float, default=2.0, help="mark ratios above this")
    parser.add_argument("--out", default=str(ROOT / "perf" / "out"),
                        help="folder for the JSON ('' for none)")
    args = parser.parse_args(argv)
    ops = list(_ops()) if not args.ops else [o.strip() for o in args.ops.split(",")]
    rep = run(ops, _fmt_size(args.size), args.flag)
    if argv is not None:
        rep["command"] = " ".join(["python", "perf/bench_memory_cpu.py"] + list(argv))
    print(format_table(rep))
    flagged = [r["op"] for r in rep["results"] if r["flagged"]]
    print(f"{len(flagged)} of {len(rep['results'])} ops above {args.flag}x: "
          f"{', '.join(flagged) or 'none'}")
    if args.out:
        from _report import save
        save(rep, args.out, "bench_memory_cpu.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
