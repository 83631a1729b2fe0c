"""bfloat16 in Triton's interpreter (tgrad/kernels/interpreter_bf16.py): a user's kernel that
converts, computes and compares bfloat16 values directly gives what the GPU's bfloat16
instructions give (each op on the values, rounded once to nearest even), not arithmetic on
the stored bits. Runs in a subprocess with TRITON_INTERPRET=1."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

pytest.importorskip("triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interpreted import run_json_file  # noqa: E402

SCRIPT = textwrap.dedent('''
    import json
    import ml_dtypes
    import numpy as np
    import triton
    import triton.language as tl

    import tgrad
    from tgrad.kernels.launch import karg

    @triton.jit
    def bf16_ops(X, Y, F64, NEG, FMA, DIV, LT, NE0, MAX, CLAMP, CAST, BACK, SUM, N,
                 BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        m = i < N
        x = tl.load(X + i, mask=m)  # bfloat16 operands, no upcast
        y = tl.load(Y + i, mask=m)
        tl.store(NEG + i, -x, mask=m)
        tl.store(FMA + i, x * y + x, mask=m)
        tl.store(DIV + i, x / y, mask=m)
        tl.store(LT + i, (x < y).to(tl.int32), mask=m)
        tl.store(NE0 + i, (x != 0).to(tl.int32), mask=m)
        tl.store(MAX + i, tl.maximum(x, y), mask=m)
        tl.store(CLAMP + i, tl.clamp(x, -1.0, 1.0), mask=m)
        f = tl.load(F64 + i, mask=m)
        tl.store(CAST + i, f.to(tl.bfloat16), mask=m)  # float64 -> bfloat16
        tl.store(BACK + i, x.to(tl.float64), mask=m)   # bfloat16 -> float64
        tl.store(SUM + i, tl.sum(tl.load(Y + i, mask=m, other=0.0), axis=0), mask=i == 0)

    @triton.jit
    def bf16_dot(A, B, C, D: tl.constexpr):
        r = tl.arange(0, D)
        a = tl.load(A + r[:, None] * D + r[None, :])  # bfloat16 tiles, float32 accumulator
        b = tl.load(B + r[:, None] * D + r[None, :])
        tl.store(C + r[:, None] * D + r[None, :], tl.dot(a, b))

    bf16 = np.dtype(ml_dtypes.bfloat16)
    rng = np.random.default_rng(5)
    n = 40
    f64 = np.concatenate([[-0.0, 0.0, 2.5, -7006.8, 1e-40, np.inf, np.nan],
                          rng.standard_normal(n - 7) * 3])
    x, y = f64.astype(bf16), (rng.standard_normal(n) * 3).astype(bf16)
    dev = lambda a: tgrad.tensor(a, device="cuda")  # noqa: E731
    outs = {k: tgrad.empty(n, dtype=d, device="cuda") for k, d in (
        ("neg", tgrad.bfloat16), ("fma", tgrad.bfloat16), ("div", tgrad.bfloat16),
        ("lt", tgrad.int32), ("ne0", tgrad.int32), ("max", tgrad.bfloat16),
        ("clamp", tgrad.bfloat16), ("cast", tgrad.bfloat16), ("back", tgrad.float64),
        ("sum", tgrad.bfloat16))}
    bf16_ops[(1,)](*(karg(t._data) for t in (dev(x), dev(y), dev(f64), *outs.values())), n,
                   BLOCK=64)
    got = {k: v.cpu().numpy() for k, v in outs.items()}
    got["sum"] = got["sum"][:1]
    a, b = (rng.standard_normal((16, 16)).astype(bf16) for _ in range(2))
    c = tgrad.empty(16, 16, device="cuda")
    bf16_dot[(1,)](karg(dev(a)._data), karg(dev(b)._data), karg(c._data), D=16)
    got["dot"] = c.cpu().numpy()
    r = lambda a: np.asarray(a, np.float32).astype(bf16)  # noqa: E731 - one rounding
    xf, yf = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(all="ignore"):
        want = {"neg": r(-xf), "fma": r(r(xf * yf).astype(np.float32) + xf),
                "div": r(xf / yf), "lt": (xf < yf).astype(np.int32),
                "ne0": (xf != 0).astype(np.int32), "max": r(np.maximum(xf, yf)),
                "clamp": r(np.clip(xf, -1.0, 1.0)), "cast": f64.astype(bf16),
                "back": x.astype(np.float64),
                "dot": np.matmul(a.astype(np.float32), b.astype(np.float32)),
                # the 64 lanes (zeros past n) summed in float32, rounded once
                "sum": r([np.sum(np.pad(yf, (0, 64 - n)))])}
    # maximum and clamp without propagate_nan: Triton 3.6's interpreter gives NaN for a NaN
    # operand, 3.9's and the GPU the other one (not a bfloat16 matter): compared off NaNs
    keep = {k: ~np.isnan(xf) & ~np.isnan(yf) if k in ("max", "clamp") else Ellipsis
            for k in want}
    bad = {k: [[str(v) for v in got[k][keep[k]][:8]], [str(v) for v in want[k][keep[k]][:8]]]
           for k in want if not np.array_equal(got[k][keep[k]].astype(np.float64),
                                               want[k][keep[k]].astype(np.float64),
                                               equal_nan=True)}
    print(json.dumps(bad))
''')


def test_a_users_bfloat16_kernel_computes_on_values(tmp_path):
    bad = run_json_file(SCRIPT, tmp_path, "bf16_kernel.py")
    assert not bad, bad
