"""Host time per tiny op (issue 7): how much Python/engine time one op costs when the
kernel itself is negligible.

    python perf/bench_launch.py                                  # cpu (+ cuda if present)
    python perf/bench_launch.py --device cuda --compare torch --out perf/out

Cases (all on 1-element float32 tensors unless noted; inputs are leaves with
requires_grad=True, so the forward includes output allocation and autograd recording):

============ ============================================================================
fwd          ``c = a * b``
fwdbwd       ``a.grad = b.grad = None; (a * b).backward()``
numpy_*      (cpu) the same maths as raw NumPy on the same-sized arrays (64 elements: the
             issue's CPU target is <= 2.5 us overhead per op, forward+backward)
chain_bwd    per node: backward through a chain of 32 ``x = x * w`` nodes, divided by 32
nograd_bwd   per node: the two ops the MulBackward0 formula runs (``g * w``, ``g * x``)
             called directly under no_grad, i.e. the node's launches without the engine
engine       chain_bwd - nograd_bwd: the engine's host time per backward node beyond its
             launches (target <= 3 us on the H200 machine)
============ ============================================================================

Timing: ``time.perf_counter_ns`` over loops of ``--number`` calls, ``--repeat`` loops, GC
disabled while timing, median reported (min in the JSON). On cuda the loop is followed by
one synchronize, so the number is host throughput (what the Python thread spends per op;
the GPU runs asynchronously). ``--compare torch`` times PyTorch eager in the same run
(perf/ imports torch; tgrad never does). Writes ``OUT/bench_launch.json``.
``--profile N``: afterwards, tgrad's fwd and chain_fwdbwd cases run N times under cProfile;
the functions with the most own time go to ``OUT/launch_profile_<device>.txt`` (where the
host microseconds of a tiny op go).
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
import _report  # noqa: E402

import tgrad  # noqa: E402

CHAIN = 32


def timeit(fn, number: int, repeat: int, sync=None) -> dict:
    """Median and min microseconds per call of ``fn`` (warm-up excluded)."""
    for _ in range(max(number // 10, 3)):
        fn()
    if sync:
        sync()
    samples = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter_ns()
            for _ in range(number):
                fn()
            if sync:
                sync()
            samples.append((time.perf_counter_ns() - t0) / number / 1e3)
    finally:
        if enabled:
            gc.enable()
    return {"median_us": statistics.median(samples), "min_us": min(samples)}


# ------------------------------------------------------------------------------ cases
def _autograd_cases(mk, ones_like, no_grad) -> dict:
    """The timed closures, written once for any framework with PyTorch's autograd API:
    ``mk()`` makes a leaf requiring grad."""
    a, b = mk(), mk()
    g = ones_like(a)

    def fwd():
        return a * b

    def fwdbwd():
        a.grad = None
        b.grad = None
        (a * b).backward(g)

    x0 = mk()
    ws = [mk() for _ in range(CHAIN)]
    gx = ones_like(x0)

    def chain():
        x = x0
        for w in ws:
            x = x * w
        return x

    def chain_bwd():
        # forward + backward of the chain; measure() subtracts the forward
        x0.grad = None
        for w in ws:
            w.grad = None
        chain().backward(gx)

    def nograd_formula():
        with no_grad():
            for w in ws:
                gx * w
                gx * x0
    return {"fwd": fwd, "fwdbwd": fwdbwd, "chain_fwd": chain, "chain_fwdbwd": chain_bwd,
            "nograd_formula": nograd_formula}


def tgrad_cases(device: str, numel: int) -> dict:
    rng = np.random.default_rng(0)
    shape = () if numel == 1 else (numel,)

    def mk():
        data = rng.standard_normal(numel).astype(np.float32).reshape(shape)
        return tgrad.tensor(data, device=device, requires_grad=True)
    return _autograd_cases(mk, tgrad.ones_like, tgrad.no_grad)


def torch_cases(device: str, numel: int) -> dict:
    import torch
    dev = "cuda" if device == "cuda" else "cpu"
    shape = () if numel == 1 else (numel,)
    mk = lambda: torch.randn(shape, device=dev, requires_grad=True)  # noqa: E731
    return _autograd_cases(mk, torch.ones_like, torch.no_grad)


def numpy_cases(numel: int) -> dict:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(numel).astype(np.float32), rng.standard_normal(numel)
    b = b.astype(np.float32)
    g = np.ones_like(a)

    def fwd():
        return np.multiply(a, b)

    def fwdbwd():
        np.multiply(a, b)
        return np.multiply(g, b), np.multiply(g, a)
    return {"fwd": fwd, "fwdbwd": fwdbwd}


def measure(cases: dict, number: int, repeat: int, sync) -> dict:
    out = {}
    for name, fn in cases.items():
        n = number if not name.startswith(("chain", "nograd")) else max(number // CHAIN, 20)
        out[name] = timeit(fn, n, repeat, sync)
    if "chain_fwdbwd" in out:
        per = lambda k, s="median_us": out[k][s] / CHAIN  # noqa: E731
        bwd_node = per("chain_fwdbwd") - per("chain_fwd")
        out["bwd_per_node"] = {"median_us": bwd_node}
        out["nograd_formula_per_node"] = {"median_us": per("nograd_formula")}
        out["engine_per_node"] = {"median_us": bwd_node - per("nograd_formula")}
    return out


def run(device: str, compare: list, number: int, repeat: int) -> list:
    sync = None
    if device == "cuda":
        sync = tgrad.cuda.synchronize
    rows = []
    for numel in ([1, 64] if device == "cpu" else [1]):
        res = {"device": device, "numel": numel,
               "tgrad": measure(tgrad_cases(device, numel), number, repeat, sync)}
        if device == "cpu":
            res["numpy"] = measure(numpy_cases(numel), number, repeat, None)
        if "torch" in compare:
            try:
                import torch
                tsync = torch.cuda.synchronize if device == "cuda" else None
                res["torch"] = measure(torch_cases(device, numel), number, repeat, tsync)
            except ImportError as e:
                res["torch_error"] = f"torch not importable: {e}"
        rows.append(res)
    return rows


TABLE_KEYS = ["fwd", "fwdbwd", "bwd_per_node", "nograd_formula_per_node", "engine_per_node"]


def table(rows: list) -> str:
    from tabulate import tabulate
    out = []
    for r in rows:
        for k in TABLE_KEYS:
            t = r["tgrad"].get(k, {}).get("median_us")
            line = [r["device"], r["numel"], k, t]
            n = r.get("numpy", {}).get(k, {}).get("median_us")
            line.append(n)
            line.append(None if n is None or t is None else t - n)
            p = r.get("torch", {}).get(k, {}).get("median_us")
            line.append(p)
            line.append(None if p is None or t is None or p == 0 else t / p)
            out.append(line)
    return tabulate(out, headers=["device", "numel", "case", "tgrad us", "numpy us",
                                  "tgrad-numpy us", "torch us", "tgrad/torch"],
                    floatfmt=".2f", missingval="-")


def targets(rows: list) -> list[str]:
    lines = []
    for r in rows:
        t = r["tgrad"]
        if r["device"] == "cpu" and r["numel"] == 64:
            ov = t["fwdbwd"]["median_us"] - r["numpy"]["fwdbwd"]["median_us"]
            lines.append(f"cpu overhead over NumPy (fwd+bwd, 64 el): {ov:.2f} us "
                         f"(target <= 2.5): {'MET' if ov <= 2.5 else 'NOT MET'}")
        if r["device"] == "cuda":
            eng = t["engine_per_node"]["median_us"]
            lines.append(f"cuda engine host time per backward node beyond launches: "
                         f"{eng:.2f} us (target <= 3): {'MET' if eng <= 3 else 'NOT MET'}")
            if "torch" in r:
                ratio = t["fwd"]["median_us"] / r["torch"]["fwd"]["median_us"]
                lines.append(f"cuda forward host time vs PyTorch eager: {ratio:.2f}x "
                             f"(target <= 1.0): {'MET' if ratio <= 1.0 else 'NOT MET'}")
    return lines


def profile(device: str, number: int, out: Path) -> Path:
    """cProfile of tgrad's fwd (``number`` calls) and chain_fwdbwd (``number // CHAIN``):
    the 40 functions with the most own time, then the 25 with the most cumulative time."""
    import cProfile
    import io
    import pstats
    cases = tgrad_cases(device, 1)
    text = io.StringIO()
    for name, n in (("fwd", number), ("chain_fwdbwd", max(number // CHAIN, 20))):
        fn = cases[name]
        fn()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(n):
            fn()
        if device == "cuda":
            tgrad.cuda.synchronize()
        prof.disable()
        text.write(f"===== {name} x {n} ({device})\n")
        st = pstats.Stats(prof, stream=text).strip_dirs()
        st.sort_stats("tottime").print_stats(40)
        st.sort_stats("cumulative").print_stats(25)
    path = out / f"launch_profile_{device}.txt"
    path.write_text(text.getvalue())
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="all", choices=("all", "cpu", "cuda"))
    p.add_argument("--compare", default="", help="comma list: torch")
    p.add_argument("--number", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "perf" / "out"),
                   help="folder for the JSON (and --profile traces); '' writes nothing")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="also write a cProfile of N tiny ops per device")
    a = p.parse_args(argv)
    compare = [c for c in a.compare.split(",") if c]
    devices = ["cpu", "cuda"] if a.device == "all" else [a.device]
    gpu = tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()
    if "cuda" in devices and not gpu:
        if a.device == "cuda":
            print(f"no real GPU here ({tgrad.cuda.why_unavailable() or 'interpreter mode'})",
                  file=sys.stderr)
            return 2
        devices.remove("cuda")
    rows = []
    for d in devices:
        rows += run(d, compare, a.number, a.repeat)
    print(table(rows))
    summary = targets(rows)
    print("\n".join(summary))
    report = {**_report.header("tgrad-bench-launch/1"), "python": platform.python_version(),
        "numpy": np.__version__,
        "device_name": tgrad.cuda.get_device_name() if gpu else platform.processor(),
        "method": "perf_counter_ns loops, GC off, median of repeats; cuda: one sync per loop",
        "rows": rows, "targets": summary}
    if a.out:  # ('' : the table only, as the other bench scripts)
        out = _report.save(report, a.out, "bench_launch.json").parent
        for d in devices if a.profile else ():
            print(f"wrote {profile(d, a.profile, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
