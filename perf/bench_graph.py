"""MLP training step: eager vs CUDA-graph replay vs PyTorch eager (issue 7).

    python perf/bench_graph.py --out perf/out                 # cuda; --compare torch adds PyTorch
    python perf/bench_graph.py --device cpu                   # eager only (no graphs on cpu)

Model: 4 Linear layers of 256 (ReLU between), batch 64, MSE loss, SGD with momentum 0.9;
one step = zero_grad(set_to_none) + forward + backward + optimizer step. The graph is
captured after one eager warm-up step (kernels compiled, momentum buffers created) and
replayed with the static input updated in place between replays.

Timing: ``--steps`` steps per sample, one synchronize at the end of each sample (so the
number is the steady-state time per step, host and GPU overlapped), ``--repeat`` samples,
median. Target (issue 7): graph replay >= 3x faster per step than eager, and faster than
PyTorch eager in the same run. Writes ``OUT/bench_graph.json``. The graph's result is checked
against eager (same weights, same batches) before timing.
"""

from __future__ import annotations

import argparse
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

WIDTH, LAYERS, BATCH = 256, 4, 64


def init_weights(seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    ws = []
    for _ in range(LAYERS):
        w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        ws.append((w, (rng.standard_normal(WIDTH) * 0.01).astype(np.float32)))
    return ws


def tgrad_model(device: str, weights: list):
    layers = []
    for i, (w, b) in enumerate(weights):
        lin = tgrad.nn.Linear(WIDTH, WIDTH)
        lin.weight.data = tgrad.tensor(w)
        lin.bias.data = tgrad.tensor(b)
        layers.append(lin)
        if i < LAYERS - 1:
            layers.append(tgrad.nn.ReLU())
    model = tgrad.nn.Sequential(*layers).to(device)
    opt = tgrad.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = tgrad.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, step


def timed(fn, steps: int, repeat: int, sync) -> dict:
    fn()
    sync()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / steps * 1e6)
    return {"median_us": statistics.median(samples), "min_us": min(samples)}


def run_tgrad(device: str, steps: int, repeat: int, batches: list) -> dict:
    weights = init_weights()
    sync = tgrad.cuda.synchronize if device == "cuda" else (lambda: None)
    x = tgrad.tensor(batches[0][0], device=device)
    y = tgrad.tensor(batches[0][1], device=device)
    _, step = tgrad_model(device, weights)
    res = {"eager": timed(lambda: step(x, y), steps, repeat, sync)}
    if device != "cuda":
        return res
    # correctness: graph replays vs eager on fresh models with the same weights
    _, step_e = tgrad_model(device, weights)
    _, step_g = tgrad_model(device, weights)
    xs = tgrad.tensor(batches[0][0], device=device)
    ys = tgrad.tensor(batches[0][1], device=device)
    le = [step_e(tgrad.tensor(a, device=device), tgrad.tensor(b, device=device)).item()
          for a, b in batches]
    lg = [step_g(xs, ys).item()]
    sync()
    g = tgrad.cuda.CUDAGraph()
    with tgrad.cuda.graph(g):
        loss_s = step_g(xs, ys)
    for a, b in batches[1:]:
        xs.copy_(tgrad.tensor(a, device=device))
        ys.copy_(tgrad.tensor(b, device=device))
        g.replay()
        lg.append(loss_s.item())
    res["graph_max_loss_diff"] = float(np.max(np.abs(np.array(le) - np.array(lg))))
    res["graph"] = timed(g.replay, steps, repeat, sync)
    return res


def run_torch(device: str, steps: int, repeat: int, batches: list) -> dict:
    import torch
    dev = "cuda" if device == "cuda" else "cpu"
    layers = []
    for i, (w, b) in enumerate(init_weights()):
        lin = torch.nn.Linear(WIDTH, WIDTH)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if i < LAYERS - 1:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.from_numpy(batches[0][0]).to(dev)
    y = torch.from_numpy(batches[0][1]).to(dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    return {"eager": timed(step, steps, repeat, sync)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    p.add_argument("--compare", default="", help="comma list: torch")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--out", default=str(ROOT / "perf" / "out"),
                   help="folder for the JSON; '' writes nothing")
    a = p.parse_args(argv)
    gpu = tgrad.cuda.is_available() and not tgrad.cuda.is_interpreted()
    if a.device == "cuda" and not gpu:
        print(f"no real GPU here ({tgrad.cuda.why_unavailable() or 'interpreter mode'}); "
              "use --device cpu for the eager step only", file=sys.stderr)
        return 2
    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((BATCH, WIDTH)).astype(np.float32),
                rng.standard_normal((BATCH, WIDTH)).astype(np.float32)) for _ in range(4)]
    res = {"tgrad": run_tgrad(a.device, a.steps, a.repeat, batches)}
    if "torch" in a.compare.split(","):
        try:
            res["torch"] = run_torch(a.device, a.steps, a.repeat, batches)
        except ImportError as e:
            res["torch_error"] = f"torch not importable: {e}"
    from tabulate import tabulate
    t = res["tgrad"]
    rows = [["tgrad eager", t["eager"]["median_us"]]]
    if "graph" in t:
        rows.append(["tgrad CUDA graph replay", t["graph"]["median_us"]])
    if "torch" in res:
        rows.append(["PyTorch eager", res["torch"]["eager"]["median_us"]])
    print(f"MLP {LAYERS}x{WIDTH}, batch {BATCH}, SGD momentum, device {a.device}")
    print(tabulate(rows, headers=["variant", "us / step"], floatfmt=".1f"))
    summary = []
    if "graph" in t:
        sp = t["eager"]["median_us"] / t["graph"]["median_us"]
        summary.append(f"graph speed-up over eager: {sp:.2f}x (target >= 3): "
                       f"{'MET' if sp >= 3 else 'NOT MET'}; max |loss graph - eager| = "
                       f"{t['graph_max_loss_diff']:.2e}")
        if "torch" in res:
            r = res["torch"]["eager"]["median_us"] / t["graph"]["median_us"]
            summary.append(f"graph vs PyTorch eager: {r:.2f}x faster (target > 1): "
                           f"{'MET' if r > 1 else 'NOT MET'}")
    print("\n".join(summary))
    report = {**_report.header("tgrad-bench-graph/1"), "python": platform.python_version(),
        "numpy": np.__version__, "device": a.device,
        "device_name": tgrad.cuda.get_device_name() if gpu else platform.processor(),
        "model": {"layers": LAYERS, "width": WIDTH, "batch": BATCH},
        "method": "perf_counter over --steps steps + one sync, median of --repeat",
        "results": res, "targets": summary}
    if a.out:  # ('' : the table only)
        _report.save(report, a.out, "bench_graph.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
