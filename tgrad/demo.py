"""The main job: train a small MLP classifier on two synthetic spirals."""

from __future__ import annotations

import math

import numpy as np

import tgrad


def make_spirals(n_per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals in 2-D; labels 0/1."""
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.random(n_per_class)) * 3 * math.pi
    xs, ys = [], []
    for label, phase in ((0, 0.0), (1, math.pi)):
        pts = np.stack([t * np.cos(t + phase), t * np.sin(t + phase)], 1) / (3 * math.pi)
        xs.append(pts + rng.normal(0, 0.02, pts.shape))
        ys.append(np.full(n_per_class, label))
    return np.concatenate(xs).astype(np.float32), np.concatenate(ys).astype(np.int64)


def run_demo(steps: int = 300, seed: int = 0, device=None, hidden: int = 64,
             verbose: bool = True) -> dict:
    """Train with full-batch gradient descent; returns the losses and final accuracy."""
    tgrad.manual_seed(seed)
    x_np, y_np = make_spirals(200, seed)
    x = tgrad.tensor(x_np, device=device)
    y = tgrad.tensor(y_np.astype(np.float32)[:, None], device=device)
    params = []
    sizes = [2, hidden, hidden, 1]
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        w = (tgrad.randn(fan_in, fan_out, device=device) * math.sqrt(2.0 / fan_in))
        params += [w.requires_grad_(), tgrad.zeros(fan_out, device=device, requires_grad=True)]
    lr = 0.5
    losses = []
    for step in range(steps):
        h = x
        for i in range(0, len(params) - 2, 2):
            h = (h @ params[i] + params[i + 1]).relu()
        logits = h @ params[-2] + params[-1]
        # Binary cross-entropy with logits: softplus(z) - y z, written stably.
        loss = (logits.clamp(min=0) - logits * y + (-logits.abs()).exp().log1p()).mean()
        for p in params:
            p.grad = None
        loss.backward()
        with tgrad.no_grad():
            for p in params:
                p -= lr * p.grad
        losses.append(loss.item())
        if verbose and (step % 50 == 0 or step == steps - 1):
            print(f"step {step:4d}  loss {losses[-1]:.4f}")
    with tgrad.no_grad():
        h = x
        for i in range(0, len(params) - 2, 2):
            h = (h @ params[i] + params[i + 1]).relu()
        pred = (h @ params[-2] + params[-1]).numpy()[:, 0] > 0
    acc = float((pred == y_np.astype(bool)).mean())
    if verbose:
        print(f"final accuracy: {acc:.3f}")
    return {"losses": losses, "accuracy": acc}
