"""The main job (``python -m tgrad demo``): train a small MLP classifier on two synthetic
spirals with tgrad.nn + tgrad.optim, show a progress bar with the loss, print the final
accuracy, then profile the last steps: the op table and a Chrome trace file."""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from typing import TextIO

import numpy as np

import tgrad
from tgrad import nn, optim
from tgrad.autograd import profiler
from tgrad.nn import functional as F


def make_spirals(n_per_class: int, seed: int, noise: float = 0.02) -> tuple[np.ndarray,
                                                                              np.ndarray]:
    """Two interleaved spirals in 2-D: x (2n, 2) float32 in about [-1, 1], y (2n,) int64."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for label, phase in ((0, 0.0), (1, math.pi)):
        t = np.sqrt(rng.random(n_per_class)) * 3 * math.pi
        pts = np.stack([t * np.cos(t + phase), t * np.sin(t + phase)], 1) / (3 * math.pi)
        xs.append(pts + rng.normal(0, noise, pts.shape))
        ys.append(np.full(n_per_class, label))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def make_model(hidden: int, device) -> nn.Module:
    """2 -> hidden -> hidden -> 2 logits, ReLU in between."""
    return nn.Sequential(nn.Linear(2, hidden, device=device), nn.ReLU(),
                         nn.Linear(hidden, hidden, device=device), nn.ReLU(),
                         nn.Linear(hidden, 2, device=device))


def best_device() -> str:
    """"cuda" when the GPU backend is present and a device (or the interpreter) is
    available, else "cpu"."""
    from tgrad import backends, cuda
    if "cuda" in backends._BACKENDS and cuda.is_available():
        return "cuda"
    return "cpu"


def _interpreted() -> bool:
    """True when the cuda device is Triton's interpreter (no device timer)."""
    from tgrad import cuda
    return cuda.is_interpreted()


def progress_bar(step: int, total: int, loss: float, width: int = 30) -> str:
    done = int(width * step / total)
    return f"\r[{'#' * done}{'.' * (width - done)}] step {step:4d}/{total}  loss {loss:.4f}"


def run_demo(steps: int = 300, seed: int = 0, device: str | None = None, hidden: int = 64,
             n_per_class: int = 200, lr: float = 0.01, profile_steps: int = 5,
             trace_path: str | None = None, verbose: bool = True,
             out: TextIO | None = None) -> dict:
    """Train full-batch with Adam on cross-entropy; the last ``profile_steps`` steps run
    under the profiler. Returns losses, accuracy, the profiler table and the trace path."""
    out = out or sys.stdout
    say = (lambda s, end="\n": print(s, end=end, file=out, flush=True)) if verbose \
        else (lambda s, end="\n": None)
    device = device or best_device()
    tgrad.manual_seed(seed)
    x_np, y_np = make_spirals(n_per_class, seed)
    x = tgrad.tensor(x_np, device=device)
    y = tgrad.tensor(y_np, device=device)
    model = make_model(hidden, device)
    opt = optim.Adam(model.parameters(), lr=lr)
    say(f"tgrad demo: {len(y_np)} points (two spirals), MLP 2-{hidden}-{hidden}-2, Adam "
        f"lr={lr}, {steps} steps on {device}")

    def train_step() -> float:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    losses: list[float] = []
    profile_steps = max(1, min(profile_steps, steps))
    t0 = time.perf_counter()
    for step in range(steps - profile_steps):
        losses.append(train_step())
        if step % 10 == 0:
            say(progress_bar(step + 1, steps, losses[-1]), end="")
    with profiler.profile(use_cuda=device != "cpu" and not _interpreted()) as prof:
        for _ in range(profile_steps):
            with profiler.record_function("train_step"):
                losses.append(train_step())
    say(progress_bar(steps, steps, losses[-1]))
    train_s = time.perf_counter() - t0

    model.eval()
    with tgrad.no_grad():
        pred = model(x).argmax(1)
    accuracy = float((pred.numpy() == y_np).mean())
    say(f"final loss {losses[-1]:.4f}  accuracy {accuracy:.3f}  ({train_s:.1f} s)")

    on_gpu = device != "cpu" and not _interpreted()
    key, what = ("self_cuda_time_total", "device") if on_gpu else ("self_cpu_time_total", "CPU")
    table = prof.key_averages().table(sort_by=key, row_limit=12)
    say(f"\nprofile of the last {profile_steps} training steps (top ops by self {what} time):")
    say(table)
    if trace_path is None:
        trace_path = os.path.join(tempfile.gettempdir(), "tgrad_demo_trace.json")
    prof.export_chrome_trace(trace_path)
    say(f"Chrome trace written to {trace_path} (open it in https://ui.perfetto.dev or "
        "chrome://tracing)")
    return {"losses": losses, "accuracy": accuracy, "table": table, "trace_path": trace_path,
            "device": device, "seconds": train_s}
