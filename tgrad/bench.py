"""``python -m tgrad bench``: time ops forward and backward over a size sweep.

On the CPU every op is timed against the raw NumPy code doing the same maths (forward: the
output; backward: one fresh gradient array per input, as each leaf owns its ``.grad``), and
the table reports tgrad's overhead (µs per op, forward plus backward) and its throughput
ratio (NumPy time / tgrad time; 1.0 means as fast as NumPy).

Method: ``time.perf_counter_ns`` around a loop of ``number`` calls (chosen so one sample
lasts at least ``min_sample_s``), warm-up excluded, tgrad and NumPy samples interleaved (so
a load change on the machine hits both), median of the samples.

``--compare NAME`` adds another framework's timings (e.g. torch) through an adapter that
lives in ``perf/bench_cpu.py`` (``COMPARE[NAME]``), so tgrad itself never imports it.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

SCHEMA = "tgrad-bench/1"
# Targets of issues 3 and 7 (CPU backend).
TARGET_OVERHEAD_US = 2.5  # tgrad - NumPy, forward + backward, 64 elements
TARGET_RATIO = 0.9  # NumPy time / tgrad time at 1M elements
OVERHEAD_SIZE = 64
THROUGHPUT_SIZE = 1 << 20
DEFAULT_OPS = ("add", "mul", "div", "exp", "tanh", "relu", "sum", "mean", "matmul")
DEFAULT_SIZES = (64, 4096, 65536, 1 << 20)

Fn = Callable[[], object]


# ------------------------------------------------------------------------------ cases
@dataclass
class Case:
    """One op at one size: zero-argument closures for each side and phase.

    ``fwd`` runs the forward with autograd recording; ``bwd`` runs only the backward of a
    retained graph (gradients reset first); ``fwdbwd`` does both, as a training step does.
    """

    op: str
    shapes: list
    tgrad_fwd: Fn
    tgrad_bwd: Fn
    tgrad_fwdbwd: Fn
    numpy_fwd: Fn
    numpy_bwd: Fn
    numpy_fwdbwd: Fn
    bytes_fwd: int  # bytes read + written by the forward maths
    flops_fwd: int = 0
    leaves: list = field(default_factory=list)  # tgrad inputs (their .grad after fwdbwd)


def _np_dtype(dtype: str) -> np.dtype:
    from tgrad import dtypes
    return dtypes.as_dtype(dtype).np


def _shapes_for(op: str, size: int) -> list:
    if op == "matmul":
        s = max(1, round(math.sqrt(size)))
        return [(s, s), (s, s)]
    if op in ("add", "sub", "mul", "div", "maximum"):
        return [(size,), (size,)]
    return [(size,)]


def _compute(dt: np.dtype):
    """(up, down): float16/bfloat16 compute in float32, as tgrad's NumPy backend does."""
    if dt.itemsize == 2:
        f32 = np.dtype(np.float32)
        return (lambda x: x.astype(f32)), (lambda y: np.asarray(y).astype(dt))
    return (lambda x: x), (lambda y: y)


# NumPy reference maths per op: fwd(a[, b]) -> y and bwd(g, a[, b], y) -> grads, written
# as the straightforward NumPy code a user would write (the same formulas as tgrad's rules).
def _ref(op: str, up, down):
    if op == "add":
        return (lambda a, b: down(up(a) + up(b)),
                lambda g, a, b, y: (g.copy(), g.copy()))
    if op == "sub":
        return (lambda a, b: down(up(a) - up(b)),
                lambda g, a, b, y: (g.copy(), down(-up(g))))
    if op == "mul":
        return (lambda a, b: down(up(a) * up(b)),
                lambda g, a, b, y: (down(up(g) * up(b)), down(up(g) * up(a))))
    if op == "div":
        return (lambda a, b: down(up(a) / up(b)),
                lambda g, a, b, y: (down(up(g) / up(b)),
                                    down(-up(g) * up(a) / (up(b) * up(b)))))
    if op == "maximum":
        def bwd_max(g, a, b, y):
            share = (a == b) * 0.5
            return (g * ((a > b) + share), g * ((a < b) + share))
        return (lambda a, b: np.maximum(a, b), bwd_max)
    if op == "exp":
        return (lambda a: down(np.exp(up(a))), lambda g, a, y: (down(up(g) * up(y)),))
    if op == "log":
        return (lambda a: down(np.log(up(a))), lambda g, a, y: (down(up(g) / up(a)),))
    if op == "tanh":
        return (lambda a: down(np.tanh(up(a))),
                lambda g, a, y: (down(up(g) * (1 - up(y) * up(y))),))
    if op == "sigmoid":
        def sig(a):
            x = up(a)
            e = np.exp(-np.abs(x))
            return down(np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype))
        return (sig, lambda g, a, y: (down(up(g) * up(y) * (1 - up(y))),))
    if op == "relu":
        return (lambda a: np.maximum(a, a.dtype.type(0)), lambda g, a, y: (g * (y > 0),))
    if op == "sum":
        return (lambda a: down(np.sum(a, dtype=up(a[:0]).dtype)),  # float32 accumulation
                lambda g, a, y: (np.full(a.shape, g, a.dtype),))
    if op == "mean":
        return (lambda a: down(np.mean(up(a))),
                lambda g, a, y: (np.full(a.shape, down(up(g) / a.size), a.dtype),))
    if op == "matmul":
        return (lambda a, b: down(up(a) @ up(b)),
                lambda g, a, b, y: (down(up(g) @ up(b).T), down(up(a).T @ up(g))))
    raise KeyError(op)


SUPPORTED_OPS = ("add", "sub", "mul", "div", "maximum", "exp", "log", "tanh", "sigmoid",
                 "relu", "sum", "mean", "matmul")


def _tgrad_op(op: str):
    import tgrad
    fn = getattr(tgrad, op, None)
    if fn is None:
        raise RuntimeError(f"bench: tgrad has no op '{op}' in this build")
    return fn


def make_case(op: str, size: int, dtype: str = "float32", seed: int = 0) -> Case:
    """Build the closures timing ``op`` on ``size`` elements (matmul: sqrt(size) squared)."""
    import tgrad
    if op not in SUPPORTED_OPS:
        raise ValueError(f"bench: unknown op '{op}'; choose from {', '.join(SUPPORTED_OPS)}")
    dt = _np_dtype(dtype)
    if dt.kind != "f" and dt.name != "bfloat16":
        raise ValueError(f"bench: dtype must be floating point, got {dtype}")
    up, down = _compute(dt)
    rng = np.random.default_rng(seed)
    shapes = _shapes_for(op, size)
    positive = op in ("log", "div")
    arrays = []
    for i, s in enumerate(shapes):
        x = rng.uniform(0.5, 2.0, s) if positive and (op == "log" or i == 1) \
            else rng.standard_normal(s)
        arrays.append(x.astype(dt))
    leaves = [tgrad.tensor(x, requires_grad=True) for x in arrays]
    # The NumPy side works on the very same buffers as tgrad (same memory, same caches).
    raw = [t.detach().numpy() for t in leaves]
    fn = _tgrad_op(op)
    ref_fwd, ref_bwd = _ref(op, up, down)

    y0 = fn(*leaves)
    g_t = tgrad.tensor(rng.standard_normal(y0.shape).astype(dt))
    g = g_t.numpy()

    def reset() -> None:
        for t in leaves:
            t.grad = None

    def t_fwd() -> object:
        return fn(*leaves)

    y_kept = fn(*leaves)

    def t_bwd() -> None:
        reset()
        y_kept.backward(g_t, retain_graph=True)

    def t_fwdbwd() -> None:
        reset()
        fn(*leaves).backward(g_t)

    y_np = ref_fwd(*raw)

    def n_fwd() -> object:
        return ref_fwd(*raw)

    def n_bwd() -> object:
        return ref_bwd(g, *raw, y_np)

    def n_fwdbwd() -> object:
        y = ref_fwd(*raw)
        return ref_bwd(g, *raw, y)

    nbytes = sum(x.nbytes for x in arrays) + y_np.nbytes
    flops = 2 * shapes[0][0] * shapes[0][1] * shapes[1][1] if op == "matmul" else 0
    return Case(op, [list(s) for s in shapes], t_fwd, t_bwd, t_fwdbwd, n_fwd, n_bwd, n_fwdbwd,
                nbytes, flops, leaves)


# ------------------------------------------------------------------------------ timing
@dataclass(frozen=True)
class TimingConfig:
    min_sample_s: float = 0.002  # one sample (a loop of `number` calls) lasts at least this
    budget_s: float = 0.25  # time spent sampling one measurement (one pair of functions)
    min_repeat: int = 5
    max_repeat: int = 200
    warmup_s: float = 0.02


def _loop_ns(fn: Fn, number: int) -> int:
    clock = time.perf_counter_ns
    t0 = clock()
    for _ in range(number):
        fn()
    return clock() - t0


def _calibrate(fn: Fn, cfg: TimingConfig) -> tuple[int, float]:
    """(number of calls per sample, estimated seconds per call); also warms ``fn`` up."""
    fn()  # first call: lazy imports, caches
    number = 1
    while True:
        ns = _loop_ns(fn, number)
        if ns >= cfg.warmup_s * 1e9 or number >= 1 << 22:
            break
        number *= 2 if ns > 0.2 * cfg.warmup_s * 1e9 else 8
    per_call = max(ns, 1) / number / 1e9
    return max(1, math.ceil(cfg.min_sample_s / per_call)), per_call


def time_pair(fa: Fn, fb: Fn, cfg: TimingConfig) -> tuple[dict, dict]:
    """Median (and min, quartiles) µs per call of ``fa`` and ``fb``, samples interleaved."""
    na, pa = _calibrate(fa, cfg)
    nb, pb = _calibrate(fb, cfg)
    per_round = na * pa + nb * pb
    repeat = int(min(cfg.max_repeat, max(cfg.min_repeat, cfg.budget_s / max(per_round, 1e-9))))
    sa, sb = [], []
    for _ in range(repeat):
        sa.append(_loop_ns(fa, na) / na / 1e3)
        sb.append(_loop_ns(fb, nb) / nb / 1e3)
    return _stats(sa, na), _stats(sb, nb)


def _stats(samples: list, number: int) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) >= 2 else samples * 3
    return {"median_us": statistics.median(samples), "min_us": min(samples),
            "q1_us": q[0], "q3_us": q[2], "repeat": len(samples), "number": number}


# ------------------------------------------------------------------------------ running
@dataclass
class BenchConfig:
    device: str = "cpu"
    ops: tuple = DEFAULT_OPS
    sizes: tuple = DEFAULT_SIZES
    dtype: str = "float32"
    out: str | None = "perf/out"
    compare: tuple = ()
    timing: TimingConfig = field(default_factory=TimingConfig)
    progress: bool = True
    command: str = ""


class Progress:
    """A one-line progress bar on stderr (a line per step when stderr is not a terminal)."""

    def __init__(self, total: int, enabled: bool = True, width: int = 24) -> None:
        self.total, self.done, self.enabled, self.width = total, 0, enabled, width
        self.tty = sys.stderr.isatty()

    def step(self, label: str) -> None:
        if not self.enabled:
            return
        self.done += 1
        fill = self.width * self.done // max(self.total, 1)
        line = f"[{'#' * fill}{'.' * (self.width - fill)}] {self.done}/{self.total} {label}"
        if self.tty:
            sys.stderr.write("\r" + line.ljust(72) + ("\n" if self.done == self.total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _load_compare(name: str):
    """The adapter for ``--compare name`` from perf/bench_cpu.py (not part of the package)."""
    path = Path(__file__).resolve().parent.parent / "perf" / "bench_cpu.py"
    if not path.exists():
        raise RuntimeError(f"bench --compare {name}: {path} not found; --compare needs the "
                           f"tgrad source tree (the adapters live in perf/, outside the package)")
    spec = importlib.util.spec_from_file_location("_tgrad_perf_bench_cpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    table = getattr(mod, "COMPARE", {})
    if name not in table:
        raise RuntimeError(f"bench --compare {name}: no adapter; available: "
                           f"{', '.join(sorted(table)) or 'none'}")
    return table[name]


def run_bench(cfg: BenchConfig) -> dict:
    """Run the sweep; returns the JSON-ready report (see ``SCHEMA``)."""
    if cfg.device != "cpu":
        raise RuntimeError(f"bench --device {cfg.device}: only the cpu benchmark exists in this "
                           f"build (the CUDA one, with CUDA events and L2 flushes, is issue 7's "
                           f"GPU part); use --device cpu")
    adapters = {name: _load_compare(name) for name in cfg.compare}
    for op in cfg.ops:
        if op not in SUPPORTED_OPS:
            raise ValueError(f"bench: unknown op '{op}'; choose from {', '.join(SUPPORTED_OPS)}")
    progress = Progress(len(cfg.ops) * len(cfg.sizes), cfg.progress)
    rows = []
    for op in cfg.ops:
        for size in cfg.sizes:
            rows.append(_measure(op, size, cfg, adapters))
            progress.step(f"{op} n={size}")
    return {
        "schema": SCHEMA,
        "device": cfg.device,
        "device_name": _cpu_name(),
        "dtype": cfg.dtype,
        "versions": _versions(cfg.compare),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": cfg.command or " ".join([Path(sys.executable).name] + sys.argv),
        "method": {"timer": "time.perf_counter_ns", "statistic": "median",
                   "warmup": "excluded", "interleaved": True, **asdict(cfg.timing)},
        "targets": {"overhead_us_max": TARGET_OVERHEAD_US, "overhead_size": OVERHEAD_SIZE,
                    "ratio_min": TARGET_RATIO, "ratio_size": THROUGHPUT_SIZE},
        "results": rows,
    }


def _measure(op: str, size: int, cfg: BenchConfig, adapters: dict) -> dict:
    case = make_case(op, size, cfg.dtype)
    row = {"op": op, "size": size, "shapes": case.shapes, "dtype": cfg.dtype}
    for phase in ("fwd", "bwd", "fwdbwd"):
        t, n = time_pair(getattr(case, f"tgrad_{phase}"), getattr(case, f"numpy_{phase}"),
                         cfg.timing)
        row[f"tgrad_{phase}_us"] = t["median_us"]
        row[f"numpy_{phase}_us"] = n["median_us"]
        row[f"stats_{phase}"] = {"tgrad": t, "numpy": n}
        row[f"overhead_{phase}_us"] = t["median_us"] - n["median_us"]
        row[f"ratio_{phase}"] = n["median_us"] / t["median_us"]
    row["overhead_us"] = row["overhead_fwdbwd_us"]
    row["ratio"] = row["ratio_fwdbwd"]
    row["bytes_fwd"] = case.bytes_fwd
    row["tgrad_fwd_gbps"] = case.bytes_fwd / (row["tgrad_fwd_us"] * 1e3)
    if case.flops_fwd:
        row["flops_fwd"] = case.flops_fwd
        row["tgrad_fwd_gflops"] = case.flops_fwd / (row["tgrad_fwd_us"] * 1e3)
    for name, adapter in adapters.items():
        fwd, fwdbwd = adapter(op, size, cfg.dtype, cfg.device)
        o_fwd, _ = time_pair(fwd, case.numpy_fwd, cfg.timing)
        o_fb, _ = time_pair(fwdbwd, case.numpy_fwdbwd, cfg.timing)
        row[f"{name}_fwd_us"] = o_fwd["median_us"]
        row[f"{name}_fwdbwd_us"] = o_fb["median_us"]
        row[f"ratio_vs_{name}_fwdbwd"] = o_fb["median_us"] / row["tgrad_fwdbwd_us"]
    row["meets_overhead"] = (row["overhead_us"] <= TARGET_OVERHEAD_US
                             if size == OVERHEAD_SIZE else None)
    row["meets_ratio"] = (min(row["ratio_fwd"], row["ratio_fwdbwd"]) >= TARGET_RATIO
                          if size == THROUGHPUT_SIZE else None)
    return row


def _cpu_name() -> str:
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{name} ({os.cpu_count()} cores)"


def _versions(compare: tuple) -> dict:
    import tgrad

    def dist(name: str) -> str | None:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    out = {"tgrad": tgrad.__version__, "python": platform.python_version(),
           "numpy": np.__version__, "triton": dist("triton")}
    for name in compare:
        out[name] = dist(name)
    return out


# ------------------------------------------------------------------------------ output
def format_table(report: dict) -> str:
    from tabulate import tabulate
    compare = [k[:-len("_fwdbwd_us")] for k in (report["results"][0] if report["results"]
                                                 else {}) if k.endswith("_fwdbwd_us")
               and k not in ("tgrad_fwdbwd_us", "numpy_fwdbwd_us", "overhead_fwdbwd_us")]
    head = ["op", "size", "tgrad fwd µs", "numpy fwd µs", "tgrad bwd µs", "numpy bwd µs",
            "tgrad f+b µs", "numpy f+b µs", "overhead µs", "ratio fwd", "ratio f+b"]
    head += [f"{c} f+b µs" for c in compare]
    head.append("target")
    body = []
    for r in report["results"]:
        line = [r["op"], r["size"], r["tgrad_fwd_us"], r["numpy_fwd_us"], r["tgrad_bwd_us"],
                r["numpy_bwd_us"], r["tgrad_fwdbwd_us"], r["numpy_fwdbwd_us"],
                r["overhead_us"], r["ratio_fwd"], r["ratio_fwdbwd"]]
        line += [r[f"{c}_fwdbwd_us"] for c in compare]
        verdict = ""
        if r["meets_overhead"] is not None:
            verdict = f"overhead<={TARGET_OVERHEAD_US}: {'ok' if r['meets_overhead'] else 'MISS'}"
        if r["meets_ratio"] is not None:
            verdict = f"ratio>={TARGET_RATIO}: {'ok' if r['meets_ratio'] else 'MISS'}"
        body.append(line + [verdict])
    title = (f"tgrad bench  device={report['device']} ({report['device_name']})  "
             f"dtype={report['dtype']}  numpy {report['versions']['numpy']}  "
             f"python {report['versions']['python']}\n"
             "median µs per call; overhead = tgrad f+b - numpy f+b; ratio = numpy / tgrad")
    return title + "\n" + tabulate(body, head, floatfmt=".3g")


def write_json(report: dict, out_dir: str, stem: str = "bench") -> Path:
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    stamp = report["date"].replace(":", "").replace("-", "")[:15]
    file = path / f"{stem}_{report['device']}_{report['dtype']}_{stamp}.json"
    file.write_text(json.dumps(report, indent=1))
    return file


def _csv(text: str, cast=str) -> tuple:
    return tuple(cast(x.strip()) for x in text.split(",") if x.strip())


def _size(text: str) -> int:
    t = text.lower().replace("_", "")
    mult = {"k": 1 << 10, "m": 1 << 20}.get(t[-1:], 1)
    return int(t[:-1] if mult != 1 else t) * mult


def add_arguments(parser) -> None:
    """The ``bench`` subcommand's options (also used by perf/bench_cpu.py)."""
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--ops", default=",".join(DEFAULT_OPS),
                        help=f"comma-separated, from: {','.join(SUPPORTED_OPS)}")
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES),
                        help="comma-separated element counts (1k = 1024, 1m = 1048576)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--out", default="perf/out", help="folder for the JSON ('' for none)")
    parser.add_argument("--compare", default="", help="e.g. torch (adapters in perf/)")
    parser.add_argument("--budget", type=float, default=TimingConfig.budget_s,
                        help="seconds of sampling per measurement")
    parser.add_argument("--no-progress", action="store_true")


def config_from_args(args, command: str = "") -> BenchConfig:
    """A BenchConfig from parsed ``add_arguments`` options."""
    return BenchConfig(device=args.device, ops=_csv(args.ops), sizes=_csv(args.sizes, _size),
                       dtype=args.dtype, out=args.out or None, compare=_csv(args.compare),
                       timing=TimingConfig(budget_s=args.budget),
                       progress=not args.no_progress, command=command)


def main(args) -> int:
    """``python -m tgrad bench``: prints the table and writes the JSON."""
    cfg = config_from_args(args, " ".join(["python -m tgrad"] + sys.argv[1:]))
    report = run_bench(cfg)
    print(format_table(report))
    if cfg.out:
        print(f"wrote {write_json(report, cfg.out)}")
    return 0
