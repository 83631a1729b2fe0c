"""GPU benchmark of tgrad's Triton kernels (issues 4 and 5), one run, all references
measured in the same run.

Timing: tgrad.cuda events on tgrad's stream, median of ``--reps`` runs after two warm-up
runs, L2 flushed before each run (a 256 MiB buffer is overwritten; matmul is not flushed).
Bandwidth = the bytes an op must move (inputs read once + outputs written once) / time,
compared with a device-to-device copy (cuMemcpyDtoD of the elementwise input) measured
first in the same run.

Targets (fraction of copy bandwidth, or of the matmul reference rate):
  issue 4: elementwise fwd/bwd at >= 16M elements 90%; row and column reductions with
           rows >= 2048: 80%, their backward 75%
  issue 5: softmax, log_softmax, cross_entropy, layer_norm at rows >= 2048: forward 80%,
           backward 70%; bf16 matmul at 4096^3: 70% of torch.matmul measured in the same
           run (a subprocess, when torch with CUDA is importable; perf/ only, tgrad never
           imports torch) or else of the device's published dense bf16 rate (H100/H200 SXM:
           989.4 TFLOP/s). The JSON says which reference was used.

Robustness: every benchmark runs in its own try/except; a failure is recorded (its error
text) in the JSON and the run goes on. Results are rewritten after every benchmark, so a
run killed by a timeout still leaves its JSON. ``--budget-s`` skips what would not fit.

Usage: PYTHONPATH=. python perf/bench_gpu.py --out OUTDIR [--reps 50] [--budget-s 170]
       TRITON_INTERPRET=1 PYTHONPATH=. python perf/bench_gpu.py --out OUTDIR --smoke
``--smoke``: tiny sizes and 2 reps, allowed in Triton's interpreter: it checks the script's
logic (tests/test_bench_gpu_smoke.py), not performance.
Writes OUTDIR/bench_gpu.json, OUTDIR/bench_gpu.md and OUTDIR/bench_gpu.png (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass

import numpy as np

import tgrad

# family -> target fraction of the reference (copy bandwidth, or matmul rate)
TARGETS = {"elementwise": 0.90, "elementwise_bwd": 0.90, "reduction": 0.80,
           "reduction_bwd": 0.75, "nn": 0.80, "nn_bwd": 0.70, "matmul": 0.70}
# Published dense (no sparsity) bf16 tensor-core rates, TFLOP/s, by device-name substring.
PUBLISHED_BF16_TFLOPS = {"H200": 989.4, "H100 SXM": 989.4, "H100 80GB HBM3": 989.4,
                         "H100 PCIe": 756.0, "H100 NVL": 835.0, "A100": 312.0}

TORCH_MATMUL = r"""
import sys, torch
n = int(sys.argv[1]); reps = int(sys.argv[2])
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    a @ b
torch.cuda.synchronize()
ts = []
for _ in range(reps):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(); a @ b; e1.record(); e1.synchronize(); ts.append(e0.elapsed_time(e1))
ts.sort()
print("MS", ts[len(ts) // 2], torch.__version__, torch.cuda.get_device_name())
"""


@dataclass
class Sizes:
    numel: int          # elementwise
    rows: int           # reductions and row ops: (rows, cols)
    cols: int
    mm: int             # matmul M = N = K
    flush_bytes: int
    reps: int


def sizes_for(smoke: bool, reps: int, numel: int | None) -> Sizes:
    if smoke:
        return Sizes(numel or 4096, 16, 64, 32, 1 << 16, 2)
    return Sizes(numel or (1 << 25), 8192, 4096, 4096, 256 << 20, reps)


class Bench:
    """Runs benchmarks, records results and errors, writes the report files."""

    def __init__(self, out: str, sz: Sizes, budget_s: float, smoke: bool) -> None:
        from tgrad.backends import triton as be
        from tgrad.cuda import runtime
        from tgrad.cuda.streams import current_stream_handle
        self.be, self.rt, self.out, self.sz, self.smoke = be, runtime(), out, sz, smoke
        self.dev = tgrad.cuda.current_device()
        self.stream = lambda: current_stream_handle(self.dev)
        self.t_start = time.perf_counter()
        self.budget_s = budget_s
        self.rows: list[dict] = []
        self.copy_gbs: float | None = None
        self.mm_ref: dict = {"kind": None, "tflops": None, "detail": None}
        from tgrad.bench import CudaTimer
        self.timer = CudaTimer(sz.reps)
        self.timer.flush_bytes = min(self.timer.flush_bytes, sz.flush_bytes)
        props = tgrad.cuda.get_device_properties(self.dev)
        self.info = {"device": props.name, "sm": f"{props.major}{props.minor}",
                     "interpreted": tgrad.cuda.is_interpreted(), "smoke": smoke,
                     "triton": _version("triton"), "numpy": np.__version__,
                     "reps": sz.reps, "numel": sz.numel, "row_shape": [sz.rows, sz.cols],
                     "matmul_n": sz.mm, "l2_flush_bytes": sz.flush_bytes}

    # ------------------------------------------------------------------ timing
    def timed(self, fn, flush: bool = True) -> float:
        """Median milliseconds of ``fn()`` over reps runs (two warm-up runs first). With
        ``flush``, enough L2 flushes are queued before the start event to keep the GPU busy
        while the host enqueues ``fn()`` (tgrad.bench.CudaTimer.flushes_to_cover): the
        event pair then times the GPU work, not the host's Python."""
        fn()
        fn()  # compile / autotune + warm-up
        flushes = self.timer.flushes_to_cover(fn) if flush else 0
        times = []
        for _ in range(self.sz.reps):
            for _ in range(flushes):
                self.timer.flush()
            e0 = tgrad.cuda.Event(enable_timing=True)
            e1 = tgrad.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
        return statistics.median(times)

    # ------------------------------------------------------------------ recording
    def run(self, name: str, family: str, fn, *, nbytes: int | None = None,
            flops: int | None = None, dtype: str = "float32", shape=None,
            flush: bool = True) -> dict:
        row = {"name": name, "family": family, "dtype": dtype,
               "shape": list(shape) if shape is not None else None,
               "target": TARGETS.get(family), "ms": None, "GB/s": None, "TFLOP/s": None,
               "fraction": None, "reference": None, "meets_target": None, "bytes": nbytes,
               "flops": flops, "error": None}
        elapsed = time.perf_counter() - self.t_start
        if self.budget_s and elapsed > self.budget_s:
            row["error"] = f"skipped: time budget of {self.budget_s:.0f}s used ({elapsed:.0f}s)"
        else:
            try:
                ms = self.timed(fn, flush)
                row["ms"] = round(ms, 5)
                if nbytes is not None:
                    row["GB/s"] = _sig(nbytes / ms / 1e6)
                if flops is not None:
                    row["TFLOP/s"] = _sig(flops / ms / 1e9)
                self._score(row)
            except Exception as e:  # noqa: BLE001 - record and go on
                tb = traceback.format_exception_only(type(e), e)[-1].strip()
                row["error"] = tb[:500]
        self.rows.append(row)
        self.write()
        status = row["error"] or (f"{row['ms']} ms" + (f", {row['fraction']:.0%} of "
                                                       f"{row['reference']}"
                                                       if row["fraction"] is not None else ""))
        print(f"  {name}: {status}", flush=True)
        return row

    def _score(self, row: dict) -> None:
        if row["family"] == "matmul":
            ref = self.mm_ref["tflops"]
            if ref and row["TFLOP/s"] is not None:
                row["fraction"] = _sig(row["TFLOP/s"] / ref)
                row["reference"] = f"{self.mm_ref['kind']} ({ref:.1f} TFLOP/s)"
        elif row["family"] != "copy" and self.copy_gbs and row["GB/s"] is not None:
            row["fraction"] = _sig(row["GB/s"] / self.copy_gbs)
            row["reference"] = f"copy ({self.copy_gbs:.0f} GB/s)"
        if row["fraction"] is not None and row["target"] is not None:
            row["meets_target"] = row["fraction"] >= row["target"]

    # ------------------------------------------------------------------ output
    def report(self) -> dict:
        errors = [r for r in self.rows if r["error"]]
        scored = [r for r in self.rows if r["meets_target"] is not None]
        return dict(self.info, copy_GBps=self.copy_gbs, matmul_reference=self.mm_ref,
                    wall_s=round(time.perf_counter() - self.t_start, 1),
                    n_errors=len(errors), n_scored=len(scored),
                    n_meeting_target=sum(bool(r["meets_target"]) for r in scored),
                    results=self.rows)

    def write(self) -> None:
        with open(os.path.join(self.out, "bench_gpu.json"), "w") as f:
            json.dump(self.report(), f, indent=1)

    def markdown(self) -> str:
        rep = self.report()
        ref = self.mm_ref
        smoke = " [SMOKE: interpreter/tiny sizes, not performance]" if self.smoke else ""
        copy = "n/a" if self.copy_gbs is None else f"{self.copy_gbs:.1f} GB/s"
        mm = ref["kind"] or "none"
        if ref["tflops"]:
            mm += f" = {ref['tflops']:.1f} TFLOP/s"
        if ref["detail"]:
            mm += f" ({ref['detail']})"
        lines = [f"# tgrad GPU benchmark: {rep['device']} (sm_{rep['sm']}), triton "
                 f"{rep['triton']}{smoke}", "",
                 f"Median of {rep['reps']} runs, CUDA events, L2 flushed "
                 f"({rep['l2_flush_bytes']} bytes). Copy (device-to-device): {copy}. "
                 f"Matmul reference: {mm}.", "",
                 "| op | dtype | shape | ms | GB/s | TFLOP/s | of reference | target | ok |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in self.rows:
            ok = ("" if r["meets_target"] is None else ("yes" if r["meets_target"] else "NO"))
            if r["error"]:
                ok = "ERROR: " + r["error"].replace("|", "/")[:120]
            frac = "" if r["fraction"] is None else f"{r['fraction']:.0%}"
            tgt = "" if r["target"] is None else f"{r['target']:.0%}"
            shape = "x".join(map(str, r["shape"])) if r["shape"] else ""
            lines.append(f"| {r['name']} | {r['dtype']} | {shape} | {_fmt(r['ms'])} | "
                         f"{_fmt(r['GB/s'])} | {_fmt(r['TFLOP/s'])} | {frac} | {tgt} | {ok} |")
        lines += ["", f"{rep['n_meeting_target']}/{rep['n_scored']} scored benchmarks meet "
                  f"their target; {rep['n_errors']} errors; {rep['wall_s']} s."]
        return "\n".join(lines) + "\n"

    def plot(self) -> str:
        """bench_gpu.png: one bar per scored benchmark (fraction of its reference), a black
        tick at its target; with matplotlib when installed (labelled), otherwise a plain
        bar chart drawn here (bars in the order of bench_gpu.md's scored rows)."""
        rows = [r for r in self.rows if r["fraction"] is not None]
        path = os.path.join(self.out, "bench_gpu.png")
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            write_bar_png(path, [r["fraction"] for r in rows], [r["target"] for r in rows],
                          [r["meets_target"] for r in rows])
            return f"wrote {path} (no matplotlib: unlabelled bars, in bench_gpu.md's order)"
        fig, ax = plt.subplots(figsize=(11, 0.32 * len(rows) + 1.5))
        colors = [{True: "tab:green", False: "tab:red"}.get(r["meets_target"], "tab:gray")
                  for r in rows]
        ax.barh([f"{r['name']} [{r['dtype']}]" for r in rows],
                [r["fraction"] for r in rows], color=colors)
        for i, r in enumerate(rows):
            if r["target"] is not None:
                ax.plot([r["target"]] * 2, [i - 0.4, i + 0.4], "k-", lw=1.2)
        ax.set_xlabel("fraction of reference (copy bandwidth; matmul: reference TFLOP/s); "
                      "black tick = target")
        ax.set_title(f"tgrad GPU benchmark, {self.info['device']}"
                     + (" (smoke)" if self.smoke else ""))
        ax.invert_yaxis()
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return f"wrote {path}"


def write_bar_png(path: str, fractions: list, targets: list, ok: list) -> None:
    """A dependency-free PNG (zlib + struct): horizontal bars of width fraction (x axis
    0 .. 1.25, grid lines at 0.5 and 1.0), green when the target is met, red when not, grey
    without a target; a black tick at each target."""
    import struct
    import zlib
    bar_h, gap, width, scale = 14, 6, 600, 1.25
    h = max(1, len(fractions)) * (bar_h + gap) + gap
    img = np.full((h, width, 3), 255, np.uint8)
    for frac in (0.5, 1.0):
        img[:, int(frac / scale * (width - 1))] = (170, 170, 170)
    for i, (f, t, good) in enumerate(zip(fractions, targets, ok)):
        y0 = gap + i * (bar_h + gap)
        x1 = int(min(max(f, 0.0), scale) / scale * (width - 1))
        img[y0:y0 + bar_h, :max(x1, 1)] = {True: (40, 160, 60), False: (200, 50, 50)}.get(
            good, (130, 130, 130))
        if t is not None:
            xt = int(t / scale * (width - 1))
            img[max(y0 - 3, 0):y0 + bar_h + 3, max(xt - 1, 0):xt + 1] = 0
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, h, 8, 2,
                                                                     0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def _sig(v: float) -> float:
    """Rounded to 5 significant digits (GPU rates and interpreter rates both readable)."""
    return float(f"{v:.5g}")


def _fmt(v) -> str:
    return "" if v is None else f"{v:g}"


def _version(mod: str) -> str | None:
    try:
        return __import__(mod).__version__
    except Exception:  # noqa: BLE001
        return None


def _randn(be, shape, dtype, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return be.cast(be.from_host(a), np.dtype(dtype))


# ====================================================================== the benchmarks
def bench_copy(b: Bench) -> None:
    be, n = b.be, b.sz.numel
    x = _randn(be, (n,), "float32", 0)
    y = be.empty((n,), np.dtype(np.float32))
    row = b.run("memcpy dtod (reference)", "copy",
                lambda: b.rt.memcpy_dtod(y.data_ptr(), x.data_ptr(), x.nbytes, b.stream()),
                nbytes=2 * x.nbytes, shape=(n,))
    if row["GB/s"]:
        b.copy_gbs = row["GB/s"]
        row["fraction"] = 1.0


def bench_elementwise(b: Bench) -> None:
    be, n = b.be, b.sz.numel
    f32 = np.dtype(np.float32)
    x, g = _randn(be, (n,), f32, 1), _randn(be, (n,), f32, 2)
    y = be.empty((n,), f32)
    nb2, nb3 = 2 * n * 4, 3 * n * 4
    b.run("copy kernel (strided copy_)", "elementwise", lambda: be.copy_(y, x), nbytes=nb2,
          shape=(n,))
    b.run("tanh fwd", "elementwise", lambda: be.unary("tanh", x), nbytes=nb2, shape=(n,))
    b.run("add fwd", "elementwise", lambda: be.binary("add", x, g), nbytes=nb3, shape=(n,))
    b.run("mul fwd (row broadcast)", "elementwise",
          lambda: be.binary("mul", be.reshape_view(x, (n // 64, 64)),
                            be.basic_index(g, (slice(0, 64),))), nbytes=nb2, shape=(n,))
    b.run("tanh_backward(g, y)", "elementwise_bwd", lambda: be.tanh_backward(g, x),
          nbytes=nb3, shape=(n,))
    b.run("sigmoid_backward(g, y)", "elementwise_bwd", lambda: be.sigmoid_backward(g, x),
          nbytes=nb3, shape=(n,))
    b.run("mul backward (g * other)", "elementwise_bwd", lambda: be.binary("mul", g, x),
          nbytes=nb3, shape=(n,))
    # bf16 elementwise: half the bytes, same kernels computing in float32 registers
    xh, gh = be.cast(x, np.dtype("bfloat16")), be.cast(g, np.dtype("bfloat16"))
    b.run("tanh fwd", "elementwise", lambda: be.unary("tanh", xh), nbytes=n * 4, shape=(n,),
          dtype="bfloat16")
    b.run("tanh_backward(g, y)", "elementwise_bwd", lambda: be.tanh_backward(gh, xh),
          nbytes=n * 6, shape=(n,), dtype="bfloat16")


def bench_reductions(b: Bench) -> None:
    be = b.be
    m, k = b.sz.rows, b.sz.cols
    f32 = np.dtype(np.float32)
    x2 = _randn(be, (m, k), f32, 3)
    nb = m * k * 4
    b.run("sum rows (dim=1)", "reduction", lambda: be.sum_(x2, (1,), False),
          nbytes=nb + m * 4, shape=(m, k))
    b.run("sum cols (dim=0)", "reduction", lambda: be.sum_(x2, (0,), False),
          nbytes=nb + k * 4, shape=(m, k))
    b.run("amax rows (dim=1)", "reduction", lambda: be.amax(x2, (1,), False),
          nbytes=nb + m * 4, shape=(m, k))
    b.run("logsumexp rows (dim=1)", "reduction", lambda: be.logsumexp(x2, (1,), False),
          nbytes=nb + m * 4, shape=(m, k))
    b.run("var rows (dim=1)", "reduction", lambda: be.var(x2, (1,), 1.0, False),
          nbytes=nb + m * 4, shape=(m, k))
    # backward of a sum: the gradient broadcast back (one strided copy writing m x k)
    out = be.empty((m, k), f32)
    gr, gc = _randn(be, (m, 1), f32, 4), _randn(be, (1, k), f32, 5)
    b.run("sum rows backward (expand m x 1)", "reduction_bwd",
          lambda: be.copy_(out, be.expand(gr, (m, k))), nbytes=nb + m * 4, shape=(m, k))
    b.run("sum cols backward (expand 1 x k)", "reduction_bwd",
          lambda: be.copy_(out, be.expand(gc, (m, k))), nbytes=nb + k * 4, shape=(m, k))
    # sum_to: the un-broadcast reduction every broadcasting op's backward runs
    b.run("sum_to (m x k -> 1 x k)", "reduction", lambda: be.sum_to(x2, (1, k)),
          nbytes=nb + k * 4, shape=(m, k))


def bench_nn(b: Bench, dtype: str) -> None:
    be = b.be
    m, k = b.sz.rows, b.sz.cols
    dt = np.dtype(dtype)
    s = dt.itemsize
    cs = 8 if dt == np.float64 else 4  # compute-dtype bytes of per-row statistics
    x, g = _randn(be, (m, k), dt, 6), _randn(be, (m, k), dt, 7)
    full = m * k * s
    shape = (m, k)
    for name, fwd, bwd in (("softmax", "softmax_fwd", "softmax_bwd"),
                           ("log_softmax", "log_softmax_fwd", "log_softmax_bwd")):
        ffn, bfn = getattr(be, fwd), getattr(be, bwd)
        y = ffn(x, 1)
        b.run(f"{name} fwd", "nn", lambda f=ffn: f(x, 1), nbytes=2 * full,
              shape=shape, dtype=dtype)
        b.run(f"{name} bwd", "nn_bwd", lambda f=bfn, y=y: f(g, y, 1),
              nbytes=3 * full, shape=shape, dtype=dtype)
    t = be.from_host(np.random.default_rng(8).integers(0, k, m).astype(np.int64))
    loss, lse = be.cross_entropy_fwd(x, t, None, 1, -100, "none")
    gl = be.full((m,), 1.0, dt)
    b.run("cross_entropy fwd (none)", "nn",
          lambda: be.cross_entropy_fwd(x, t, None, 1, -100, "none"),
          nbytes=full + m * (8 + s + cs), shape=shape, dtype=dtype)
    b.run("cross_entropy bwd (none)", "nn_bwd",
          lambda: be.cross_entropy_bwd(gl, x, t, None, lse, 1, -100, "none"),
          nbytes=2 * full + m * (8 + s + cs), shape=shape, dtype=dtype)
    w, bias = _randn(be, (k,), dt, 9), _randn(be, (k,), dt, 10)
    _, mean, rstd = be.layer_norm_fwd(x, 1, w, bias, 1e-5)
    b.run("layer_norm fwd", "nn", lambda: be.layer_norm_fwd(x, 1, w, bias, 1e-5),
          nbytes=2 * full + 2 * k * s + 2 * m * cs, shape=shape, dtype=dtype)
    b.run("layer_norm bwd (dx, dw, db)", "nn_bwd",
          lambda: be.layer_norm_bwd(g, x, mean, rstd, w, 1, True, True),
          nbytes=3 * full + 3 * k * s + 2 * m * cs, shape=shape, dtype=dtype)


def bench_indexing(b: Bench) -> None:
    """x[idx] with a device index tensor (an embedding lookup: whole rows) and x[:, idx]
    (one element per index): gather_nd computes the offsets on the device; the lookup's
    backward (index_add: the targets sorted on the device for a device index, on the host
    for a host one; and one run of m equal indices; bytes: the fill, the values read and the
    result written). No target in
    the issues; recorded against the copy bandwidth."""
    be = b.be
    m, k = b.sz.rows, b.sz.cols
    f32 = np.dtype(np.float32)
    x = _randn(be, (m, k), f32, 11)
    rows = be.from_host(np.random.default_rng(12).integers(0, m, m).astype(np.int64))
    cols = be.from_host(np.random.default_rng(13).integers(0, k, k).astype(np.int64))
    b.run("gather rows x[idx] (device idx)", "indexing", lambda: be.gather(x, (rows,)),
          nbytes=2 * m * k * 4 + m * 8, shape=(m, k))
    b.run("gather cols x[:, idx] (device idx)", "indexing",
          lambda: be.gather(x, (slice(None), cols)), nbytes=2 * m * k * 4 + k * 8,
          shape=(m, k))
    # the lookup's backward: zeros (m, k) with g's rows summed at idx (repeats: a run each)
    host_rows = be.to_host(rows)
    for where, idx in (("device", rows), ("host", host_rows)):
        b.run(f"index_add rows (backward of x[idx], {where} idx)", "indexing",
              lambda idx=idx: be.index_add((m, k), f32, (idx,), x), nbytes=3 * m * k * 4,
              shape=(m, k))
    # every index the same row (a padding token without padding_idx): one run of m,
    # folded by chunk partials (scatter_parts_kernel), about 3 sqrt(m) steps a lane
    same = be.from_host(np.zeros(m, np.int64))
    b.run("index_add rows, all indices equal (device idx)", "indexing",
          lambda: be.index_add((m, k), f32, (same,), x), nbytes=3 * m * k * 4, shape=(m, k))


def matmul_reference(b: Bench) -> None:
    """torch.matmul measured in a subprocess on the same GPU (when torch with CUDA is
    importable), else the published dense bf16 rate of the device."""
    n = b.sz.mm
    ref = b.mm_ref
    if not b.info["interpreted"]:
        try:
            proc = subprocess.run([sys.executable, "-c", TORCH_MATMUL, str(n), "20"],
                                  capture_output=True, text=True, timeout=90)
            line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("MS ")), None)
            if line:
                _, ms, tv, name = line.split(" ", 3)
                ref.update(kind="torch.matmul measured in this run",
                           tflops=round(2 * n ** 3 / float(ms) / 1e9, 2),
                           detail=f"torch {tv} on {name}, median of 20")
                return
            ref["detail"] = ("torch unavailable: "
                             + (proc.stderr.strip().splitlines() or ["no output"])[-1][:200])
        except Exception as e:  # noqa: BLE001
            ref["detail"] = f"torch reference failed: {type(e).__name__}: {e}"[:200]
    name = b.info["device"]
    rate = next((v for k, v in PUBLISHED_BF16_TFLOPS.items() if k in name), None)
    if rate is not None:
        ref.update(kind=f"published dense bf16 rate of {name}", tflops=rate)
    else:
        ref["kind"] = f"none (no torch, no published rate known for '{name}')"


def bench_matmul(b: Bench) -> None:
    be, n = b.be, b.sz.mm
    bf = np.dtype("bfloat16")
    a, bm, gc = (_randn(be, (n, n), bf, s) for s in (11, 12, 13))
    flops = 2 * n ** 3
    b.run("matmul C = A @ B", "matmul", lambda: be.matmul(a, bm), flops=flops,
          nbytes=3 * n * n * 2, shape=(n, n, n), dtype="bfloat16", flush=False)
    bt = be.permute(bm, (1, 0))  # B^T read in place (no transposed copy)
    b.run("matmul backward dA = dC @ B^T", "matmul", lambda: be.matmul(gc, bt), flops=flops,
          nbytes=3 * n * n * 2, shape=(n, n, n), dtype="bfloat16", flush=False)


# ====================================================================== main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--numel", type=int, default=None, help="elementwise size (>= 16M)")
    ap.add_argument("--budget-s", type=float, default=0.0,
                    help="skip benchmarks that start after this many seconds (0: no limit)")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes, 2 reps, interpreter allowed (tests the script)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if not tgrad.cuda.is_available() or (tgrad.cuda.is_interpreted() and not args.smoke):
        why = tgrad.cuda.why_unavailable() or "interpreter mode (use --smoke)"
        print(f"bench_gpu: needs a real GPU ({why})")
        with open(os.path.join(args.out, "bench_gpu.json"), "w") as f:
            json.dump({"error": f"no GPU: {why}", "results": []}, f, indent=1)
        return 2
    b = Bench(args.out, sizes_for(args.smoke, args.reps, args.numel), args.budget_s,
              args.smoke)
    print(f"bench_gpu: {b.info['device']}, reps {b.sz.reps}, elementwise {b.sz.numel}, rows "
          f"{b.sz.rows}x{b.sz.cols}, matmul {b.sz.mm}^3", flush=True)
    steps = [("copy", bench_copy), ("elementwise", bench_elementwise),
             ("reductions", bench_reductions), ("matmul reference", matmul_reference),
             ("matmul", bench_matmul), ("nn float32", lambda b: bench_nn(b, "float32")),
             ("nn bfloat16", lambda b: bench_nn(b, "bfloat16")), ("indexing", bench_indexing)]
    for label, step in steps:
        print(f"== {label}", flush=True)
        try:
            step(b)
        except Exception as e:  # noqa: BLE001 - setup of a group failed: record, go on
            b.rows.append({"name": f"{label} (setup)", "family": label, "dtype": None,
                           "shape": None, "target": None, "ms": None, "GB/s": None,
                           "TFLOP/s": None, "fraction": None, "reference": None,
                           "meets_target": None, "bytes": None, "flops": None,
                           "error": traceback.format_exception_only(type(e), e)[-1].strip()})
            b.write()
    b.write()
    md = b.markdown()
    with open(os.path.join(args.out, "bench_gpu.md"), "w") as f:
        f.write(md)
    print(md)
    print(b.plot())
    return 0


if __name__ == "__main__":
    sys.exit(main())
