"""F.nll_loss on the CPU: forward and forward + backward µs (min over repeats) of a (512, 128)
float32 log-probability input and (512,) int64 targets, with PyTorch's in the same run when
it imports (``--compare torch``; one thread).

    PYTHONPATH=<checkout> python perf/bench_nll_loss.py [--compare torch]
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np

import tgrad
import tgrad.nn.functional as F


def _us(fn, number: int = 300, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", choices=["torch"], default=None)
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--c", type=int, default=128)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.n, args.c)).astype(np.float32)
    a = a - np.log(np.exp(a).sum(1, keepdims=True))  # log-probabilities
    t = rng.integers(0, args.c, args.n)
    x, y = tgrad.tensor(a, requires_grad=True), tgrad.tensor(t)

    def fwd_bwd() -> None:
        F.nll_loss(x, y).backward()
        x.grad = None

    print(f"tgrad  fwd {_us(lambda: F.nll_loss(x, y)):7.1f} us  fwd+bwd {_us(fwd_bwd):7.1f} us")
    if args.compare == "torch":
        import torch
        torch.set_num_threads(1)
        tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(t)

        def torch_fwd_bwd() -> None:
            torch.nn.functional.nll_loss(tx, ty).backward()
            tx.grad = None

        print(f"torch  fwd {_us(lambda: torch.nn.functional.nll_loss(tx, ty)):7.1f} us  "
              f"fwd+bwd {_us(torch_fwd_bwd):7.1f} us")


if __name__ == "__main__":
    main()
