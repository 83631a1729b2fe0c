"""``python -m tgrad bench``: time ops forward and backward over a size sweep.

On the CPU every op is timed against the raw NumPy code doing the same maths (forward: the
output; backward: one fresh gradient array per input, as each leaf owns its ``.grad``), and
the table reports tgrad's overhead (µs per op, forward plus backward) and its throughput
ratio (NumPy time / tgrad time; 1.0 means as fast as NumPy).

Method: ``time.perf_counter_ns`` around a loop of ``number`` calls (chosen so one sample
lasts at least ``min_sample_s``), warm-up excluded, tgrad and NumPy samples interleaved (so
a load change on the machine hits both), median of the samples.

On the GPU (``--device cuda``) each op and phase is timed with CUDA events
(``tgrad.cuda.Event``) around one call, the L2 flushed before every run (a 256 MiB buffer is
overwritten), warm-up excluded, median of ``--reps`` runs; a device-to-device copy of the
same number of bytes is measured in the same run, and the table reports GB/s (bytes read +
written), % of copy bandwidth and, for matmul, TFLOP/s. A PNG plot of bandwidth against size
per op is written when matplotlib is installed. In interpreter mode (``TRITON_INTERPRET=1``)
the same code runs, for testing only: its numbers mean nothing.

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
    # CHAIN ops in a row (y = op(y[, b])) then one backward: the per-call setup of backward()
    # is shared by CHAIN nodes, as in a real graph. None where a chain makes no sense.
    tgrad_chain: Fn | None = None
    numpy_chain: Fn | None = None


CHAIN = 16
CHAIN_OPS = ("add", "sub", "mul", "tanh", "relu", "sigmoid")


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
                lambda g, a, b, y: (down(up(g) / up(b)), down(-up(g) * up(y) / up(b))))
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


def make_case(op: str, size: int, dtype: str = "float32", seed: int = 0,
              device: str = "cpu") -> Case:
    """Build the closures timing ``op`` on ``size`` elements (matmul: sqrt(size) squared).
    On ``device="cuda"`` the tgrad side runs on the GPU (the NumPy side stays on the host)."""
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
    leaves = [tgrad.tensor(x, requires_grad=True, device=device) for x in arrays]
    # The NumPy side works on the very same buffers as tgrad (same memory, same caches).
    raw = [t.detach().numpy() for t in leaves] if device == "cpu" else arrays
    fn = _tgrad_op(op)
    ref_fwd, ref_bwd = _ref(op, up, down)

    y0 = fn(*leaves)
    g_t = tgrad.tensor(rng.standard_normal(y0.shape).astype(dt), device=device)
    g = g_t.cpu().numpy()

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

    t_chain = n_chain = None
    if op in CHAIN_OPS:
        t_chain, n_chain = _chain(fn, ref_fwd, ref_bwd, leaves, raw, g_t, g, reset)

    nbytes = sum(x.nbytes for x in arrays) + y_np.nbytes
    flops = 2 * shapes[0][0] * shapes[0][1] * shapes[1][1] if op == "matmul" else 0
    return Case(op, [list(s) for s in shapes], t_fwd, t_bwd, t_fwdbwd, n_fwd, n_bwd, n_fwdbwd,
                nbytes, flops, leaves, t_chain, n_chain)


def _chain(fn, ref_fwd, ref_bwd, leaves: list, raw: list, g_t, g, reset) -> tuple:
    """tgrad and NumPy closures for CHAIN applications of ``fn`` and one backward."""
    rest_t, rest_n = leaves[1:], raw[1:]  # binary ops: the same ``b`` every step

    def t_chain() -> None:
        reset()
        y = leaves[0]
        for _ in range(CHAIN):
            y = fn(y, *rest_t)
        y.backward(g_t)

    def n_chain() -> object:
        ys = [raw[0]]
        for _ in range(CHAIN):
            ys.append(ref_fwd(ys[-1], *rest_n))
        gy, gb = g, None
        for i in range(CHAIN - 1, -1, -1):
            grads = ref_bwd(gy, ys[i], *rest_n, ys[i + 1])
            gy = grads[0]
            if rest_n:  # b's gradient sums over the chain
                gb = grads[1] if gb is None else gb + grads[1]
        return gy, gb

    return t_chain, n_chain


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
    reps: int = 50  # cuda: timed runs per measurement


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
    if cfg.device == "cuda":
        return run_bench_cuda(cfg)
    if cfg.device != "cpu":
        raise ValueError(f"bench --device {cfg.device}: choose cpu or cuda")
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
    row["chain_overhead_per_op_us"] = None
    if case.tgrad_chain is not None:
        t, n = time_pair(case.tgrad_chain, case.numpy_chain, cfg.timing)
        row["stats_chain"] = {"tgrad": t, "numpy": n, "chain": CHAIN}
        row["tgrad_chain_per_op_us"] = t["median_us"] / CHAIN
        row["numpy_chain_per_op_us"] = n["median_us"] / CHAIN
        row["chain_overhead_per_op_us"] = (t["median_us"] - n["median_us"]) / CHAIN
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


# ------------------------------------------------------------------------------ cuda
L2_FLUSH_BYTES = 256 << 20


class CudaTimer:
    """CUDA-event timing on tgrad's stream with an L2 flush before every run."""

    def __init__(self, reps: int, warmup: int = 3) -> None:
        import tgrad
        from tgrad.cuda._runtime import runtime
        self.tgrad, self.rt = tgrad, runtime()
        self.reps, self.warmup = reps, warmup
        dev = self.rt.current_device()
        self.stream = self.rt.tgrad_stream(dev)
        self.flush_bytes = (1 << 20) if self.rt.interpreted else L2_FLUSH_BYTES
        self.flush_ptr = self.rt.malloc_async(self.flush_bytes, self.stream)
        self._flush_ms: float | None = None  # one flush's device time (flushes_to_cover)

    def flush(self) -> None:
        self.rt.memset_d8(self.flush_ptr, 0, self.flush_bytes, self.stream)

    def flushes_to_cover(self, fn: Fn) -> int:
        """How many L2 flushes to queue before the start event so that the GPU is still
        busy when the host has enqueued ``fn()``: otherwise the event pair also times the
        host's Python (an idle GPU waiting for the launch), as on the first H200 runs,
        where wrappers with several allocations looked several times slower than their
        kernels. Twice ``fn``'s measured host time, in flush durations, plus one (at most
        64); always 1 in the interpreter, where device work is host work."""
        if self.rt.interpreted:
            return 1
        if self._flush_ms is None:
            Event = self.tgrad.cuda.Event  # noqa: N806
            a, b = Event(enable_timing=True), Event(enable_timing=True)
            self.flush()
            a.record()
            self.flush()
            b.record()
            b.synchronize()
            self._flush_ms = max(a.elapsed_time(b), 1e-3)
        self.tgrad.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        host_ms = (time.perf_counter() - t0) * 1e3
        self.tgrad.cuda.synchronize()
        return min(64, 1 + math.ceil(2 * host_ms / self._flush_ms))

    def time_ms(self, fn: Fn) -> dict:
        """Median (min, quartiles) milliseconds of one ``fn()`` on the device."""
        Event = self.tgrad.cuda.Event  # noqa: N806
        for _ in range(self.warmup):
            fn()
        flushes = self.flushes_to_cover(fn)
        pairs = [(Event(enable_timing=True), Event(enable_timing=True))
                 for _ in range(self.reps)]
        for start, end in pairs:
            for _ in range(flushes):
                self.flush()
            start.record()
            fn()
            end.record()
        self.tgrad.cuda.synchronize()
        ms = [a.elapsed_time(b) for a, b in pairs]
        st = _stats([m * 1e3 for m in ms], 1)
        return {k.replace("_us", "_ms"): (v / 1e3 if k.endswith("_us") else v)
                for k, v in st.items()}

    def wall_us(self, fn: Fn) -> float:
        """Median wall-clock µs of one ``fn()`` between two device syncs (any stream of the
        context: used for frameworks whose kernels run on their own streams)."""
        sync = self.tgrad.cuda.synchronize
        for _ in range(self.warmup):
            fn()
        out = []
        for _ in range(self.reps):
            self.flush()
            sync()
            t0 = time.perf_counter_ns()
            fn()
            sync()
            out.append((time.perf_counter_ns() - t0) / 1e3)
        return statistics.median(out)

    def copy_gbps(self, nbytes: int) -> float:
        """Device-to-device copy bandwidth (read + write) for ``nbytes`` copied."""
        nbytes = max(int(nbytes), 1)
        src = self.rt.malloc_async(nbytes, self.stream)
        dst = self.rt.malloc_async(nbytes, self.stream)
        try:
            t = self.time_ms(lambda: self.rt.memcpy_dtod(dst, src, nbytes, self.stream))
        finally:
            self.rt.free_async(src, self.stream)
            self.rt.free_async(dst, self.stream)
        return 2 * nbytes / (t["median_ms"] * 1e6)

    def close(self) -> None:
        self.rt.free_async(self.flush_ptr, self.stream)


def run_bench_cuda(cfg: BenchConfig) -> dict:
    """The GPU sweep (module docstring); same report schema plus bandwidth columns."""
    import tgrad
    if not tgrad.cuda.is_available():
        raise RuntimeError(f"bench --device cuda: tgrad.cuda is not available here "
                           f"({tgrad.cuda.why_unavailable()})")
    for op in cfg.ops:
        if op not in SUPPORTED_OPS:
            raise ValueError(f"bench: unknown op '{op}'; choose from {', '.join(SUPPORTED_OPS)}")
    adapters = {name: _load_compare(name) for name in cfg.compare}
    timer = CudaTimer(cfg.reps)
    progress = Progress(len(cfg.ops) * len(cfg.sizes), cfg.progress)
    rows = []
    try:
        for op in cfg.ops:
            for size in cfg.sizes:
                rows.append(_measure_cuda(op, size, cfg, timer, adapters))
                progress.step(f"{op} n={size}")
    finally:
        timer.close()
    props = tgrad.cuda.get_device_properties()
    return {
        "schema": SCHEMA, "device": "cuda", "device_name": props.name,
        "interpreted": tgrad.cuda.is_interpreted(), "dtype": cfg.dtype,
        "versions": _versions(cfg.compare),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": cfg.command or " ".join([Path(sys.executable).name] + sys.argv),
        "method": {"timer": "CUDA events on tgrad's stream", "statistic": "median",
                   "reps": cfg.reps, "warmup": "excluded (3 runs)",
                   "l2_flush_bytes": timer.flush_bytes,
                   "copy_reference": "cuMemcpyDtoDAsync of bytes/2, same run",
                   "bwd_bytes_model": "read grad + every input, write every input's grad",
                   "compare": "wall clock between device syncs, both frameworks"},
        "results": rows,
    }


def _measure_cuda(op: str, size: int, cfg: BenchConfig, timer: CudaTimer,
                  adapters: dict) -> dict:
    case = make_case(op, size, cfg.dtype, device="cuda")
    row: dict = {"op": op, "size": size, "shapes": case.shapes, "dtype": cfg.dtype}
    in_bytes = sum(t.numel() * t.element_size() for t in case.leaves)
    out_bytes = case.bytes_fwd - in_bytes
    bytes_by_phase = {"fwd": case.bytes_fwd, "bwd": out_bytes + 2 * in_bytes}
    bytes_by_phase["fwdbwd"] = bytes_by_phase["fwd"] + bytes_by_phase["bwd"]
    copy = timer.copy_gbps(case.bytes_fwd // 2)
    row["copy_gbps"] = copy
    for phase in ("fwd", "bwd", "fwdbwd"):
        t = timer.time_ms(getattr(case, f"tgrad_{phase}"))
        row[f"tgrad_{phase}_us"] = t["median_ms"] * 1e3
        row[f"stats_{phase}"] = t
        gbps = bytes_by_phase[phase] / (t["median_ms"] * 1e6)
        row[f"{phase}_gbps"] = gbps
        row[f"{phase}_pct_copy"] = 100 * gbps / copy
    if case.flops_fwd:
        row["flops_fwd"] = case.flops_fwd
        row["fwd_tflops"] = case.flops_fwd / (row["tgrad_fwd_us"] * 1e6)
    for name, adapter in adapters.items():
        fwd, fwdbwd = adapter(op, size, cfg.dtype, "cuda")
        row[f"{name}_fwd_us"] = timer.wall_us(fwd)
        row[f"{name}_fwdbwd_us"] = timer.wall_us(fwdbwd)
        row["tgrad_wall_fwdbwd_us"] = timer.wall_us(case.tgrad_fwdbwd)
        row[f"ratio_vs_{name}_fwdbwd"] = row[f"{name}_fwdbwd_us"] / row["tgrad_wall_fwdbwd_us"]
    return row


def format_table_cuda(report: dict) -> str:
    from tabulate import tabulate
    res = report["results"]
    compare = sorted({k[len("ratio_vs_"):-len("_fwdbwd")] for r in res for k in r
                      if k.startswith("ratio_vs_")})
    head = ["op", "size", "fwd µs", "fwd GB/s", "fwd % copy", "bwd µs", "bwd GB/s",
            "bwd % copy", "f+b µs", "copy GB/s", "TFLOP/s"]
    head += [f"{c}/tgrad f+b" for c in compare]
    body = [[r["op"], r["size"], r["tgrad_fwd_us"], r["fwd_gbps"], r["fwd_pct_copy"],
             r["tgrad_bwd_us"], r["bwd_gbps"], r["bwd_pct_copy"], r["tgrad_fwdbwd_us"],
             r["copy_gbps"], r.get("fwd_tflops")] + [r.get(f"ratio_vs_{c}_fwdbwd")
                                                      for c in compare] for r in res]
    note = " (INTERPRETER MODE: numbers are meaningless)" if report.get("interpreted") else ""
    title = (f"tgrad bench  device=cuda ({report['device_name']}){note}  "
             f"dtype={report['dtype']}  triton {report['versions']['triton']}\n"
             "CUDA events, L2 flushed, median; GB/s = bytes read + written / time; "
             "% copy = of a device-to-device copy measured in this run")
    return title + "\n" + tabulate(body, head, floatfmt=".3g", missingval="-")


def write_plot(report: dict, out_dir: str, stem: str = "bench") -> Path | None:
    """PNG of forward bandwidth against size per op (None without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ops = sorted({r["op"] for r in report["results"]})
    for op in ops:
        rs = sorted((r for r in report["results"] if r["op"] == op), key=lambda r: r["size"])
        ax.plot([r["size"] for r in rs], [r["fwd_gbps"] for r in rs], marker="o", label=op)
    rs = sorted(report["results"], key=lambda r: r["size"])
    ax.plot([r["size"] for r in rs], [r["copy_gbps"] for r in rs], "k--", label="d2d copy")
    ax.set(xscale="log", yscale="log", xlabel="elements", ylabel="GB/s (forward)",
           title=f"tgrad on {report['device_name']} ({report['dtype']})")
    ax.legend(fontsize=7)
    path = Path(out_dir)
    path.mkdir(parents=True, exist_ok=True)
    file = path / f"{stem}_cuda_{report['dtype']}.png"
    fig.savefig(file, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return file


# ------------------------------------------------------------------------------ output
def format_table(report: dict) -> str:
    from tabulate import tabulate
    if report.get("device") == "cuda":
        return format_table_cuda(report)
    compare = [k[:-len("_fwdbwd_us")] for k in (report["results"][0] if report["results"]
                                                 else {}) if k.endswith("_fwdbwd_us")
               and k not in ("tgrad_fwdbwd_us", "numpy_fwdbwd_us", "overhead_fwdbwd_us")]
    head = ["op", "size", "tgrad fwd µs", "numpy fwd µs", "tgrad bwd µs", "numpy bwd µs",
            "tgrad f+b µs", "numpy f+b µs", "overhead µs", "ratio fwd", "ratio f+b",
            f"chain{CHAIN} overhead µs/op"]
    head += [f"{c} f+b µs" for c in compare]
    head.append("target")
    body = []
    for r in report["results"]:
        line = [r["op"], r["size"], r["tgrad_fwd_us"], r["numpy_fwd_us"], r["tgrad_bwd_us"],
                r["numpy_bwd_us"], r["tgrad_fwdbwd_us"], r["numpy_fwdbwd_us"],
                r["overhead_us"], r["ratio_fwd"], r["ratio_fwdbwd"],
                r["chain_overhead_per_op_us"]]
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
    parser.add_argument("--reps", type=int, default=50,
                        help="cuda: CUDA-event timed runs per measurement (median)")
    parser.add_argument("--no-progress", action="store_true")


def config_from_args(args, command: str = "") -> BenchConfig:
    """A BenchConfig from parsed ``add_arguments`` options."""
    return BenchConfig(device=args.device, ops=_csv(args.ops), sizes=_csv(args.sizes, _size),
                       dtype=args.dtype, out=args.out or None, compare=_csv(args.compare),
                       timing=TimingConfig(budget_s=args.budget),
                       progress=not args.no_progress, command=command,
                       reps=getattr(args, "reps", 50))


def main(args) -> int:
    """``python -m tgrad bench``: prints the table and writes the JSON."""
    cfg = config_from_args(args, " ".join(["python -m tgrad"] + sys.argv[1:]))
    try:
        report = run_bench(cfg)
    except (RuntimeError, ValueError) as e:
        print(f"python -m tgrad bench: error: {e}", file=sys.stderr)
        return 2
    print(format_table(report))
    if cfg.out:
        print(f"wrote {write_json(report, cfg.out)}")
        if report["device"] == "cuda":
            png = write_plot(report, cfg.out)
            print(f"wrote {png}" if png else "no plot (matplotlib is not installed)")
    return 0
