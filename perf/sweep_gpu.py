"""Launch-config sweep on the GPU for the kernels under their bandwidth targets in the
latest bench_gpu run: row and column reductions, the row kernels (cross_entropy,
log_softmax, layer_norm) and bfloat16 elementwise. Each candidate is patched into
``tgrad.kernels.configs`` for the time of its measurements and timed exactly as
perf/bench_gpu.py times (its ``Bench``: CUDA events, L2 flushed, median of ``--reps``).
The first candidate of every group is the config in use, so each table row compares with
it directly. Configs that fail to compile or launch are recorded as errors.

Usage: PYTHONPATH=. python perf/sweep_gpu.py --out OUTDIR [--reps 30] [--budget-s 200]
       TRITON_INTERPRET=1 PYTHONPATH=. python perf/sweep_gpu.py --out OUTDIR --smoke
Writes OUTDIR/bench_gpu.json (every timing, ``Bench``'s format) and OUTDIR/sweep_gpu.md
(per op: each candidate's % of copy bandwidth, the best marked).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

import numpy as np

import tgrad
from tgrad.kernels import configs
from tgrad.kernels import launch as kernel_launch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_gpu as bg  # noqa: E402

RC, EC, RowC = configs.RedConfig, configs.EwConfig, configs.RowConfig

# Candidates (the third round's: around the configs the first two rounds chose, see
# perf/results/h200_20261204_run4). None: the config tgrad picks itself.
# Row reductions (block_m, block_k, num_warps), rows contiguous in K
ROW_RED = [None, RC(1, 2048, 4, 2), RC(1, 2048, 4, 3), RC(1, 1024, 4, 3), RC(8, 512, 8, 2),
           RC(1, 4096, 4), RC(2, 2048, 4), RC(16, 512, 8)]
# column reductions: (config, RED_SPLIT_PROGRAMS, RED_SPLIT_MIN_ELEMENTS)
# (split programs 1: one launch, no second stage; its launch gap is a few us of ~46)
COL_RED = [(configs.RED_COL, configs.RED_SPLIT_PROGRAMS, configs.RED_SPLIT_MIN_ELEMENTS),
           (RC(64, 32, 4, 2), 1024, 16384), (RC(64, 32, 4, 3), 1024, 16384),
           (RC(32, 64, 4, 3), 1, 16384), (RC(16, 128, 4, 3), 1, 16384),
           (RC(64, 32, 4, 4), 1024, 16384)]
# row kernels at n = 4096: (block_m, num_warps)
ROW_KERNEL = [None, (1, 4), (1, 2), (2, 4), (4, 8), (4, 16)]
# layer_norm backward: how many programs (partial dw/db rows) stage 1 runs
LN_PARTIALS = [None, 132, 264, 1056]
# layer_norm backward with its row-block loop software-pipelined: (block_m, warps, stages)
LN_STAGES = [None, (1, 8, 2), (2, 8, 2), (4, 8, 2), (4, 16, 2)]
# cross_entropy forward as persistent pipelined programs: (block_m, warps, stages)
CE_STAGES = [None, (1, 4, 2), (1, 4, 3), (2, 4, 2), (1, 8, 2)]
# bfloat16 contiguous elementwise: (block, num_warps)
EW_16 = [None, (2048, 2), (4096, 4), (1024, 4)]


@contextlib.contextmanager
def patched(**attrs):
    """Set configs' attributes (functions or constants) for the block, then restore."""
    old = {k: getattr(configs, k) for k in attrs}
    for k, v in attrs.items():
        setattr(configs, k, v)
    kernel_launch._ew_plans.clear()  # cached plans hold the elementwise block
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(configs, k, v)
        kernel_launch._ew_plans.clear()


def _label(cfg) -> str:
    if cfg is None:
        return "current"
    vals = cfg if isinstance(cfg, tuple) else (cfg.block_m, cfg.block_k, cfg.num_warps) + (
        (f"s{cfg.stages}",) if cfg.stages > 1 else ())
    return "/".join(str(v) for v in vals)


def sweep(b: bg.Bench) -> list:
    """Runs every group, the ones with untried variants first (``--budget-s`` skips the
    tail); returns (group, op, label, row) tuples."""
    be, m, k, n = b.be, b.sz.rows, b.sz.cols, b.sz.numel
    f32, bf16 = np.dtype(np.float32), np.dtype("bfloat16")
    out = []

    def run(group, op, label, fn, nbytes, family, dtype="float32", shape=(m, k)):
        row = b.run(f"{op} [{group} {label}]", family, fn, nbytes=nbytes, shape=shape,
                    dtype=dtype)
        out.append((group, op, label, row))

    x2 = bg._randn(be, (m, k), f32, 3)
    nb = m * k * 4
    red_ops = [("sum rows", lambda: be.sum_(x2, (1,), False)),
               ("amax rows", lambda: be.amax(x2, (1,), False)),
               ("logsumexp rows", lambda: be.logsumexp(x2, (1,), False)),
               ("var rows", lambda: be.var(x2, (1,), 1.0, False))]
    orig_red = configs.red_config
    for cfg in ROW_RED:
        def red_cfg(kk, m_contig, interp, kind="", rows=1 << 30, cfg=cfg):
            if cfg is None or m_contig or interp or kk != k:
                return orig_red(kk, m_contig, interp, kind, rows)
            return cfg
        with patched(red_config=red_cfg):
            for op, fn in red_ops:
                run("row red", op, _label(cfg), fn, nb + m * 4, "reduction")

    # row kernels: the candidates' RowConfig for rows of k, else the config in use
    row_ops = {dt: _row_kernel_ops(be, np.dtype(dt), m, k) for dt in ("bfloat16", "float32")}
    orig_row = configs.row_config

    def row_group(group, cands, choose, only=None):
        """choose(cand, heavy, strided) -> a RowConfig, or None for the one in use."""
        for cand in cands:
            def cfg(rn, f64, interp, heavy=False, strided=False, half_rows=False, cand=cand):
                c = None if cand is None or interp or f64 or rn != k else choose(cand, heavy,
                                                                               strided)
                return c or orig_row(rn, f64, interp, heavy, strided, half_rows)
            with patched(row_config=cfg):
                for dtype, ops in row_ops.items():
                    for op, fn, nbytes, family in ops:
                        if only is None or op == only:
                            run(f"{group} {dtype}", op, _label(cand), fn, nbytes, family,
                                dtype)

    bn = configs._pow2(k)
    row_group("ce stages", CE_STAGES, lambda c, heavy, strided: None if heavy else RowC(
        True, c[0], bn, c[1], c[2]), only="cross_entropy fwd")
    row_group("ln stages", LN_STAGES, lambda c, heavy, strided: RowC(
        True, c[0], bn, c[1], c[2]) if heavy and not strided else None, only="layer_norm bwd")

    for parts in LN_PARTIALS:
        with patched(**({} if parts is None else {"LN_MAX_PARTIALS": parts})):
            for dtype, ops in row_ops.items():
                for op, fn, nbytes, family in ops:
                    if op == "layer_norm bwd":
                        run(f"ln partials {dtype}", op,
                            "current" if parts is None else str(parts), fn, nbytes, family,
                            dtype)

    col_ops = [("sum cols", lambda: be.sum_(x2, (0,), False)),
               ("sum_to", lambda: be.sum_to(x2, (1, k)))]
    for cfg, progs, min_el in COL_RED:
        def col_cfg(kk, m_contig, interp, kind="", rows=1 << 30, cfg=cfg):
            return cfg if m_contig and not interp else orig_red(kk, m_contig, interp, kind,
                                                                rows)
        label = _label(cfg) + f" split {progs}/{min_el}"
        with patched(red_config=col_cfg, RED_SPLIT_PROGRAMS=progs,
                     RED_SPLIT_MIN_ELEMENTS=min_el):
            for op, fn in col_ops:
                run("col red", op, label, fn, nb + k * 4, "reduction")
    xh = be.cast(bg._randn(be, (n,), f32, 1), bf16)
    gh = be.cast(bg._randn(be, (n,), f32, 2), bf16)
    orig_ew = configs.ew_config
    for cand in EW_16:
        def ew_cfg(contiguous, interp, numel=1 << 30, itemsize=4, cand=cand):
            if cand is None or interp or not contiguous or itemsize != 2:
                return orig_ew(contiguous, interp, numel, itemsize)
            return EC(*cand)
        with patched(ew_config=ew_cfg):
            run("ew bf16", "tanh fwd", _label(cand), lambda: be.unary("tanh", xh), n * 4,
                "elementwise", "bfloat16", (n,))
            run("ew bf16", "tanh_backward", _label(cand), lambda: be.tanh_backward(gh, xh),
                n * 6, "elementwise_bwd", "bfloat16", (n,))

    row_group("row", ROW_KERNEL, lambda c, heavy, strided: RowC(True, c[0], bn, c[1]))

    return out


def _row_kernel_ops(be, dt: np.dtype, m: int, k: int) -> list:
    """(op, fn, bytes moved, family) of the row kernels timed at (m, k) in dtype dt."""
    s = dt.itemsize
    full = m * k * s
    x, g = bg._randn(be, (m, k), dt, 6), bg._randn(be, (m, k), dt, 7)
    t = be.from_host(np.random.default_rng(8).integers(0, k, m).astype(np.int64))
    w, bias = bg._randn(be, (k,), dt, 9), bg._randn(be, (k,), dt, 10)
    _, mean, rstd = be.layer_norm_fwd(x, 1, w, bias, 1e-5)
    ops = [("cross_entropy fwd", lambda: be.cross_entropy_fwd(x, t, None, 1, -100, "none"),
            full + m * (8 + s + 4), "nn"),
           ("layer_norm bwd", lambda: be.layer_norm_bwd(g, x, mean, rstd, w, 1, True, True),
            3 * full + 3 * k * s + 8 * m, "nn_bwd")]
    if s == 2:
        ops += [("log_softmax fwd", lambda: be.log_softmax_fwd(x, 1), 2 * full, "nn"),
                ("layer_norm fwd", lambda: be.layer_norm_fwd(x, 1, w, bias, 1e-5),
                 2 * full + 2 * k * s + 8 * m, "nn")]
    return ops


def markdown(b: bg.Bench, results: list) -> str:
    rep = b.report()
    lines = [f"# Config sweep: {rep['device']} (sm_{rep['sm']}), triton {rep['triton']}", "",
             f"Each candidate timed like bench_gpu (median of {rep['reps']}, L2 flushed); % of "
             f"a device-to-device copy ({b.copy_gbs} GB/s). Labels: reductions "
             "block_m/block_k/warps (+ split programs/min elements), row kernels "
             "block_m/warps, elementwise block/warps; 'current' is the config in use.", "",
             "| group | op | config | ms | % of copy | best |", "|---|---|---|---|---|---|"]
    best: dict = {}
    for group, op, label, row in results:
        if row["fraction"] is not None and row["fraction"] > best.get((group, op), (0,))[0]:
            best[(group, op)] = (row["fraction"], label)
    for group, op, label, row in results:
        frac = "" if row["fraction"] is None else f"{row['fraction']:.0%}"
        mark = "best" if best.get((group, op), (0, None))[1] == label else ""
        ms = row["error"][:80].replace("|", "/") if row["error"] else bg._fmt(row["ms"])
        lines.append(f"| {group} | {op} | {label} | {ms} | {frac} | {mark} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--budget-s", type=float, default=0.0)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if not tgrad.cuda.is_available() or (tgrad.cuda.is_interpreted() and not args.smoke):
        print("sweep_gpu: needs a real GPU (or --smoke in the interpreter)")
        return 2
    b = bg.Bench(args.out, bg.sizes_for(args.smoke, args.reps, None), args.budget_s,
                 args.smoke)
    bg.bench_copy(b)
    results = sweep(b)
    b.write()
    md = markdown(b, results)
    with open(os.path.join(args.out, "sweep_gpu.md"), "w") as f:
        f.write(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
