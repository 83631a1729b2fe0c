"""F.dropout as one op whose backward regenerates its mask (nothing stored).

CPU: state is a 64-bit SFC64 key drawn from tgrad's generator (tgrad/backends/_numpy_nn.py);
cuda (Triton's interpreter, in a subprocess): state is the Philox (seed, offset) of
tgrad/kernels/dropout.py. References: the mask read off the forward output (x has no zeros),
NumPy float64 arithmetic, and finite differences (gradcheck / gradgradcheck in float64 with
the generator reseeded before every evaluation, so every evaluation uses one mask).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from interpreted import interpreter_env

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

ROOT = Path(__file__).resolve().parent.parent
D = tgrad.float64


def _np(t):
    return t.detach().numpy()


def _nonzero(rng, *shape):
    """Values in +-[0.5, 1.5): never zero, so y == 0 exactly where the mask drops."""
    return (rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape))


def test_reproducible_with_manual_seed_and_fresh_per_call():
    x = tgrad.tensor(_nonzero(np.random.default_rng(0), 1000), dtype=D)
    tgrad.manual_seed(7)
    a, b = _np(F.dropout(x, 0.5)), _np(F.dropout(x, 0.5))
    tgrad.manual_seed(7)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.5)), a)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.5)), b)
    assert not np.array_equal(a != 0, b != 0)  # a new mask per call


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_rate_and_scaling(p):
    n = 100_000
    x_np = _nonzero(np.random.default_rng(1), n)
    y = _np(F.dropout(tgrad.tensor(x_np, dtype=D), p))
    kept = y != 0
    frac_dropped = 1.0 - kept.mean()
    assert abs(frac_dropped - p) < 5 * np.sqrt(p * (1 - p) / n), frac_dropped
    np.testing.assert_array_equal(y[kept], x_np[kept] * (1.0 / (1.0 - p)))


def test_backward_uses_the_forward_mask():
    rng = np.random.default_rng(2)
    x = tgrad.tensor(_nonzero(rng, 40, 30), dtype=D, requires_grad=True)
    g = rng.standard_normal((40, 30))
    p = 0.3
    y = F.dropout(x, p)
    assert y.grad_fn.name() == "NativeDropoutBackward0"
    assert isinstance(y.grad_fn.state, int)  # a key, not a stored mask
    tgrad.rand(100)  # drawing more numbers in between must not change the backward's mask
    y.backward(tgrad.tensor(g, dtype=D))
    mask = _np(y) != 0
    np.testing.assert_array_equal(_np(x.grad), g * (mask * (1.0 / (1.0 - p))))


def test_gradcheck_and_gradgradcheck_with_one_mask():
    def f(x):
        tgrad.manual_seed(11)  # every evaluation draws the same mask
        return F.dropout(x, 0.4)

    x = tgrad.tensor(_nonzero(np.random.default_rng(3), 5, 4), dtype=D, requires_grad=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    y = f(x)
    v = tgrad.ones(5, 4, dtype=D, requires_grad=True)
    (gx,) = tgrad.autograd.grad(y, x, v, create_graph=True)
    np.testing.assert_array_equal(_np(gx), (_np(y) != 0) * (1.0 / 0.6))
    assert gx.grad_fn.name() == "NativeDropoutBackwardBackward0"
    (gv,) = tgrad.autograd.grad(gx.sum(), v)  # the backward's backward: the same mask
    np.testing.assert_array_equal(_np(gv), _np(gx))


@pytest.mark.parametrize("shape", [(), (1,), (17,), (3, 5), (2, 0, 3)])
def test_cpu_mask_is_the_documented_sfc64_words(shape):
    """docs/backends.md: element i (row-major) is kept when the i-th uint32 word of
    SFC64(key).random_raw(ceil(n / 2)) is >= ceil(p 2^32)."""
    p = 0.3
    rng = np.random.default_rng(8)
    x = tgrad.tensor(_nonzero(rng, *shape), dtype=D, requires_grad=True)
    y = F.dropout(x, p)
    n = int(np.prod(shape))
    words = np.random.SFC64(y.grad_fn.state).random_raw((n + 1) // 2).view(np.uint32)[:n]
    keep = (words.astype(np.int64) >= int(np.ceil(p * 2.0**32))).reshape(shape)
    np.testing.assert_array_equal(_np(y), np.where(keep, _np(x) * (1.0 / (1.0 - p)), 0.0))


def test_non_contiguous_input_uses_the_logical_order():
    x = tgrad.tensor(_nonzero(np.random.default_rng(4), 6, 9), dtype=D)
    tgrad.manual_seed(5)
    a = _np(F.dropout(x.t(), 0.5))
    tgrad.manual_seed(5)
    b = _np(F.dropout(x.t().contiguous(), 0.5))
    np.testing.assert_array_equal(a, b)


def test_identity_cases_and_p_one():
    x = tgrad.tensor(_nonzero(np.random.default_rng(5), 7), dtype=D, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    np.testing.assert_array_equal(_np(z), np.zeros(7))
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.zeros(7))
    m = tgrad.nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(x, -0.1)


def test_p_one_propagates_nan_like_pytorch():
    x = tgrad.tensor([np.nan, np.inf, 1.0], dtype=D)
    np.testing.assert_array_equal(_np(F.dropout(x, 1.0)), [np.nan, np.nan, 0.0])


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float32"])
def test_low_precision_dtypes(dt):
    x_np = _nonzero(np.random.default_rng(6), 500)
    x = tgrad.tensor(x_np, dtype=getattr(tgrad, dt))
    y = F.dropout(x, 0.25)
    assert y.dtype is x.dtype
    got = y.float().numpy().astype(np.float64)
    xr = x.float().numpy().astype(np.float64)
    kept = got != 0
    scaled = xr[kept].astype(np.float32) * np.float32(1.0 / 0.75)  # computed in float32
    ref = tgrad.tensor(scaled, dtype=tgrad.float32).to(x.dtype).float().numpy()
    np.testing.assert_array_equal(got[kept], ref.astype(np.float64))


def test_inplace():
    base = tgrad.tensor(_nonzero(np.random.default_rng(7), 50), dtype=D, requires_grad=True)
    h = base * 1.0
    out = F.dropout(h, 0.5, inplace=True)
    assert out is h
    out.sum().backward()
    np.testing.assert_array_equal(_np(base.grad), (_np(out) != 0) * (1.0 / 0.5))


CUDA_SCRIPT = textwrap.dedent(r"""
    import json
    import numpy as np
    import tgrad
    import tgrad.nn.functional as F
    assert tgrad.cuda.is_interpreted()
    res = {}
    rng = np.random.default_rng(0)
    xn = rng.uniform(0.5, 1.5, 4096) * rng.choice([-1.0, 1.0], 4096)
    p = 0.3
    x = tgrad.tensor(xn, dtype=tgrad.float32, device="cuda", requires_grad=True)
    tgrad.manual_seed(3)
    y = F.dropout(x, p)
    y2 = F.dropout(x, p)
    tgrad.manual_seed(3)
    y3 = F.dropout(x, p)
    res["state"] = list(y.grad_fn.state)
    yn = y.detach().cpu().numpy()
    kept = yn != 0
    res["repro"] = bool(np.array_equal(yn, y3.detach().cpu().numpy()))
    res["fresh"] = not np.array_equal(kept, y2.detach().cpu().numpy() != 0)
    res["dropped"] = float(1 - kept.mean())
    res["scale_err"] = float(np.max(np.abs(yn[kept] - (xn[kept].astype(np.float32)
                                                    * np.float32(1 / (1 - p))))))
    g = rng.standard_normal(4096).astype(np.float32)
    tgrad.rand(100, device="cuda")  # advancing the generator must not change the mask
    y.backward(tgrad.tensor(g, device="cuda"))
    gx = x.grad.cpu().numpy()
    res["bwd_err"] = float(np.max(np.abs(gx - g * (kept * np.float32(1 / (1 - p))))))

    def f(t):
        tgrad.manual_seed(11)
        return F.dropout(t, 0.4)

    # Central differences of every output w.r.t. every input by hand, float64, one mask per
    # evaluation; then tgrad.autograd.gradcheck itself on the cuda tensor.
    x0 = xn[:12].reshape(3, 4)
    xd = tgrad.tensor(x0, dtype=tgrad.float64, device="cuda", requires_grad=True)
    yd = f(xd)
    ana = np.zeros((12, 12))
    for k in range(12):
        v = np.zeros(12)
        v[k] = 1.0
        (gk,) = tgrad.autograd.grad(yd, xd, tgrad.tensor(v.reshape(3, 4), device="cuda",
                                                         dtype=tgrad.float64),
                                    retain_graph=True)
        ana[k] = gk.cpu().numpy().reshape(-1)
    num = np.zeros((12, 12))
    eps = 1e-6
    for i in range(12):
        d = np.zeros(12)
        d[i] = eps
        hi = f(tgrad.tensor(x0 + d.reshape(3, 4), device="cuda")).cpu().numpy().reshape(-1)
        lo = f(tgrad.tensor(x0 - d.reshape(3, 4), device="cuda")).cpu().numpy().reshape(-1)
        num[:, i] = (hi - lo) / (2 * eps)
    res["gradcheck_err"] = float(np.max(np.abs(ana - num)))
    from tgrad.autograd import gradcheck
    res["gradcheck"] = bool(gradcheck(f, (xd,)))
    res["kept_cols"] = int((np.abs(np.diag(ana)) > 0).sum())
    z = F.dropout(xd, 1.0)
    res["p1"] = z.detach().cpu().numpy().tolist()
    print("RESULT" + json.dumps(res))
""")


def test_interpreted_cuda_dropout():
    env = interpreter_env()
    proc = subprocess.run([sys.executable, "-c", CUDA_SCRIPT], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(next(ln for ln in proc.stdout.splitlines()
                          if ln.startswith("RESULT"))[len("RESULT"):])
    assert len(res["state"]) == 2  # Philox (seed, offset)
    assert res["repro"] and res["fresh"]
    p, n = 0.3, 4096
    assert abs(res["dropped"] - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert res["scale_err"] <= 1e-6
    assert res["bwd_err"] <= 1e-6
    assert res["gradcheck_err"] < 1e-5  # gradcheck's default atol / rtol scale
    assert 0 < res["kept_cols"] < 12
    assert res["gradcheck"]
    assert res["p1"] == [[0.0] * 4] * 3


def test_feature_dropout_p_one_is_x_times_zero_at_any_rank():
    # PyTorch's p == 1 path multiplies by 0 before the rank check: 0-d and 1-d inputs work
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fn in (F.dropout2d, F.dropout3d):
            assert fn(tgrad.ones(()), 1.0).tolist() == 0.0
            y = fn(tgrad.tensor([1.0, float("inf"), 2.0]), 1.0).numpy()
            np.testing.assert_array_equal(np.isnan(y), [False, True, False])
            x = tgrad.ones(3)
            assert fn(x, 1.0, inplace=True) is x and x.tolist() == [0.0, 0.0, 0.0]
        with pytest.raises(RuntimeError, match="at least 2 dimensions"):
            F.dropout2d(tgrad.ones(3), 0.5)  # p < 1 still needs (N, C, ...)
