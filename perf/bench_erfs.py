"""The erf family on the CPU: erfc, erfcx, ndtr, log_ndtr, ndtri at 64K elements, float32 and
float64, the forward and f(x).sum().backward() (µs, min of 9), PyTorch (one thread) in the
same run. x = 4 N(0, 1), ndtri's p = U(0, 1).

    PYTHONPATH=<checkout> /tmp/tv/bin/python perf/bench_erfs.py

tgrad is imported from PYTHONPATH (the path is printed); only this script imports torch.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import tgrad


def _best(f, n: int = 9) -> float:
    f()
    best = 1e9
    for _ in range(n):
        s = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - s)
    return best * 1e6


def main() -> None:
    torch.set_num_threads(1)
    print("tgrad:", tgrad.__file__)
    rng = np.random.default_rng(0)
    n = 1 << 16
    for dt in (np.float32, np.float64):
        x = (rng.standard_normal(n) * 4).astype(dt)
        p = rng.random(n).astype(dt)
        for name, a in [("erfc", x), ("erfcx", x), ("ndtr", x), ("log_ndtr", x), ("ndtri", p)]:
            tf, gf = getattr(torch.special, name), getattr(tgrad.special, name)
            ta, ga = torch.from_numpy(a), tgrad.tensor(a)
            tr, gr = torch.from_numpy(a).requires_grad_(), tgrad.tensor(a, requires_grad=True)

            def gb(gf=gf, gr=gr):
                gf(gr).sum().backward()
                gr.grad = None

            def tb(tf=tf, tr=tr):
                tf(tr).sum().backward()
                tr.grad = None

            fwd = _best(lambda gf=gf, ga=ga: gf(ga))
            fwd_torch = _best(lambda tf=tf, ta=ta: tf(ta))
            print(f"{np.dtype(dt).name} {name} fwd {fwd:.0f} torch {fwd_torch:.0f} | fwd+bwd "
                  f"{_best(gb):.0f} torch {_best(tb):.0f}", flush=True)


if __name__ == "__main__":
    main()
