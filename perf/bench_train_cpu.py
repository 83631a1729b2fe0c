"""Whole training steps on the CPU (zero_grad + forward + backward + optimizer step), ms per
step, best of ``--repeat`` rounds of ``--inner`` steps after ``--inner`` warm-up steps:

    mlp_adam  4 x (Linear(256, 256) + ReLU) + Linear(256, 10), batch 64 float32,
              cross_entropy, Adam (lr 1e-3)
    cnn_sgd   Conv2d(3, 16, 3, p=1)-BatchNorm2d-ReLU-MaxPool2d(2), Conv2d(16, 32, 3, p=1)-
              BatchNorm2d-ReLU-MaxPool2d(2), Flatten, Linear(2048, 10); batch 32 of 3x32x32
              float32, cross_entropy, SGD (lr 1e-2, momentum 0.9)
    tfm_adamw Embedding(1000, 128), 2 x TransformerEncoderLayer(128, 4 heads, ffn 256, gelu,
              dropout 0.1, batch_first), Linear(128, 1000); batch 16 of 32 tokens,
              cross_entropy over the 512 tokens, AdamW (lr 1e-3)
    vae_adam  VAE 784-400-20-400-784 (ReLU), batch 128 of binary pixels, reparameterised z
              (randn_like), binary_cross_entropy_with_logits (sum) + KL, Adam (lr 1e-3)
    resnet_sgd Conv2d(3, 32, 3)-BN-ReLU, 2 residual blocks (2 x Conv2d(32, 32, 3, no bias)-BN,
              ReLU after the add), AdaptiveAvgPool2d(1), Linear(32, 10); batch 32 of 3x32x32,
              cross_entropy with label_smoothing 0.1, SGD (lr 0.1, momentum 0.9, weight decay
              5e-4)

    python perf/bench_train_cpu.py                          # table + perf/out/bench_train_cpu.json
    OPENBLAS_NUM_THREADS=1 python perf/bench_train_cpu.py --compare torch --out ''

``--compare torch`` builds the same models in PyTorch eager (one thread) and times them in
the same run (tgrad never imports torch, only this script does). Set OPENBLAS_NUM_THREADS=1
for a one-thread comparison (NumPy's matmul uses OpenBLAS's threads otherwise).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "perf"))
from _report import best_ms, header, save  # noqa: E402


def _mlp_adam(lib, rng):
    nn = lib.nn
    layers = []
    for _ in range(4):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(256, 10))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.tensor(rng.standard_normal((64, 256)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 64))
    return model, opt, x, y


def _cnn_sgd(lib, rng):
    nn = lib.nn
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                          nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(32 * 8 * 8, 10))
    opt = lib.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = lib.tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 32))
    return model, opt, x, y


def _tfm_adamw(lib, rng):
    nn = lib.nn
    lib.manual_seed(0)
    vocab, width = 1000, 128

    class TinyTransformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            layer = nn.TransformerEncoderLayer(width, 4, 256, dropout=0.1, batch_first=True,
                                               activation="gelu")
            self.encoder = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens):  # (16, 32) -> logits (16 * 32, vocab)
            return self.head(self.encoder(self.embed(tokens))).reshape(-1, vocab)

    model = TinyTransformer()
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x = lib.tensor(rng.integers(0, vocab, (16, 32)))
    y = lib.tensor(rng.integers(0, vocab, 16 * 32))
    return model, opt, x, y


def _vae_adam(lib, rng):
    nn, fn = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(784, 400), nn.ReLU())
            self.mu, self.logvar = nn.Linear(400, 20), nn.Linear(400, 20)
            self.dec = nn.Sequential(nn.Linear(20, 400), nn.ReLU(), nn.Linear(400, 784))

        def forward(self, x):  # (128, 784) -> the loss (a 0-d tensor)
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            z = mu + lib.randn_like(mu) * lib.exp(0.5 * logvar)
            rec = fn.binary_cross_entropy_with_logits(self.dec(z), x, reduction="sum")
            return rec - 0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())

    model = VAE()
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    x = lib.tensor((rng.random((128, 784)) > 0.5).astype(np.float32))
    return model, opt, x, None


def _resnet_sgd(lib, rng):
    nn, fn = lib.nn, lib.nn.functional
    lib.manual_seed(0)

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

        def forward(self, x):
            return fn.relu(x + self.b2(self.c2(fn.relu(self.b1(self.c1(x))))))

    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                          Block(32), Block(32), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(32, 10))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    x = lib.tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, 32))
    return model, opt, x, y


CASES = {"mlp_adam": _mlp_adam, "cnn_sgd": _cnn_sgd, "tfm_adamw": _tfm_adamw,
         "vae_adam": _vae_adam, "resnet_sgd": _resnet_sgd}
# cross_entropy's label_smoothing per case (a case whose model returns its own loss has y None)
_LABEL_SMOOTHING = {"resnet_sgd": 0.1}


def step_ms(lib, case: str, repeat: int, inner: int) -> float:
    """Best ms per training step of ``case`` built with ``lib`` (tgrad or torch)."""
    model, opt, x, y = CASES[case](lib, np.random.default_rng(0))

    smoothing = _LABEL_SMOOTHING.get(case, 0.0)

    def step():
        opt.zero_grad()
        out = model(x)
        loss = out if y is None else lib.nn.functional.cross_entropy(
            out, y, label_smoothing=smoothing)
        loss.backward()
        opt.step()

    return best_ms(step, repeat, inner, warmup=inner)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES), help="comma list of " + ", ".join(CASES))
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--inner", type=int, default=5)
    p.add_argument("--compare", default="", help="torch: time PyTorch eager in the same run")
    p.add_argument("--out", default=str(ROOT / "perf" / "out"))
    args = p.parse_args(argv)
    import tgrad
    torch = None
    if args.compare == "torch":
        import torch
        torch.set_num_threads(1)
    rows = []
    for case in args.cases.split(","):
        row = {"case": case, "tgrad_ms": step_ms(tgrad, case, args.repeat, args.inner)}
        if torch is not None:
            row["torch_ms"] = step_ms(torch, case, args.repeat, args.inner)
            row["ratio"] = row["tgrad_ms"] / row["torch_ms"]
        rows.append(row)
    from tabulate import tabulate
    print("ms per training step (zero_grad + forward + backward + step)")
    print(tabulate([list(r.values()) for r in rows], headers=list(rows[0]), floatfmt=".2f"))
    if args.out:
        report = header("tgrad-bench-train-cpu/1")
        report.update(numpy=np.__version__, results=rows)
        save(report, args.out, "bench_train_cpu.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
