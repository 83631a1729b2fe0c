"""The CPU kernels of adaptive pooling (tgrad/backends/_numpy_adaptive.py, taken by
AdaptiveAvgPool / AdaptiveMaxPool in tgrad/nn/_conv.py for float32/float64 CPU tensors,
float16/bfloat16 average pooling in float32) against the composites they replace, forced
by monkeypatching ``_conv._fast_adaptive``: bit-identical outputs, indices and gradients
over output sizes below, equal to and above the input's (1, 7, 17, ...), windows of more
than 8 and 128 elements (NumPy's pairwise sum), NaN / inf / +-0 ties, non-contiguous and
unbatched inputs, empty batches, zero output sizes; values against a float64 loop over
PyTorch's windows; gradcheck and gradgradcheck in float64 (the create_graph backward).
(The average's NaNs compare as NaNs, not by payload: ``_nan_canonical``.)"""

from __future__ import annotations

import numpy as np
import pytest
from special_values import with_nan_payloads

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_adaptive
from tgrad.nn import _conv

AVG = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}
MAX = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}

# (input shape, output size, spatial dims): smaller, equal, larger, 1, long windows (> 8
# and > 128 terms: NumPy's pairwise sum), unbatched
CASES = [((2, 3, 17), 7, 1), ((2, 3, 7), 17, 1), ((3, 1), 7, 1), ((2, 3, 128), 7, 1),
         ((2, 2, 300), 2, 1), ((2, 3, 16, 16), (5, 5), 2), ((2, 3, 7, 17), (17, 7), 2),
         ((3, 1, 9), (13, 1), 2), ((2, 2, 1, 1), (7, 3), 2), ((1, 2, 5, 140), (2, 1), 2),
         ((2, 3, 9, 9), (9, 4), 2), ((2, 2, 8, 16, 16), 3, 3), ((2, 3, 5, 9), (4, 4, 3), 3),
         ((1, 2, 3, 7, 11), (5, 7, 2), 3)]


def _values(shape: tuple, dt, kind: str, seed: int) -> np.ndarray:
    """normal (scales 1e-4 .. 1e4); ties (-1..1 with +-0); specials (NaN with payloads,
    +-inf, +-0)."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return (rng.standard_normal(shape) * rng.choice([1e-4, 1.0, 1e4], shape)).astype(dt)
    a = rng.integers(-1, 2, shape).astype(dt)
    r = rng.random(shape)
    a[r < 0.2] = -0.0
    if kind == "specials":
        a[(r >= 0.2) & (r < 0.25)] = np.nan
        a[(r >= 0.25) & (r < 0.35)] = -np.inf
        a[(r >= 0.35) & (r < 0.4)] = np.inf
        with_nan_payloads(a, rng)
    return a


def _nan_canonical(a: np.ndarray) -> bytes:
    """a's bytes with every NaN as np.nan: which payload a sum of NaNs (or of a NaN and
    inf - inf) keeps is not defined (NumPy's own add keeps either operand's, depending on
    the loop its array length takes), so the average's NaNs compare as NaNs; every other
    value, and the maximum's NaNs (the elements themselves), bit for bit."""
    a = np.array(a, dtype=np.float32 if a.dtype == np.float16 else a.dtype)
    a[np.isnan(a)] = np.nan
    return a.tobytes()


def _run(x_np: np.ndarray, out, spatial: int, noncontig: bool) -> list:
    """[avg y, avg dx, max y, max indices, max dx, max y without indices] as bytes."""
    if noncontig:  # a reversed view of a copy
        x = tgrad.tensor(np.ascontiguousarray(x_np[..., ::-1])).flip(-1).detach()
    else:
        x = tgrad.tensor(x_np)
    x.requires_grad_(True)
    res = []
    y = AVG[spatial](x, out)
    g = np.random.default_rng(1).standard_normal(y.shape).astype(x_np.dtype)
    g.reshape(-1)[::5] = -0.0
    (dx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
    res += [y.dtype.name, _nan_canonical(y.detach().numpy()), dx.numpy().tobytes()]
    if x_np.dtype in (np.float32, np.float64):
        y, idx = MAX[spatial](x, out, return_indices=True)
        (dx,) = tgrad.autograd.grad(y, x, tgrad.tensor(g))
        res += [y.shape, y.detach().numpy().tobytes(), idx.numpy().tobytes(),
                dx.numpy().tobytes(), MAX[spatial](x, out).detach().numpy().tobytes()]
    return res


def _spy(calls: list, name: str, fn):
    def spy(*a):
        calls.append(name)
        return fn(*a)
    return spy


def _both(monkeypatch, *args) -> tuple:
    """(the fast path's results, the composite's), the fast kernels seen to run."""
    calls = []
    with monkeypatch.context() as m:
        for name in ("avg_fwd", "avg_bwd", "max_fwd", "max_bwd"):
            m.setattr(_numpy_adaptive, name, _spy(calls, name, getattr(_numpy_adaptive, name)))
        fast = _run(*args)
    assert "avg_fwd" in calls and "avg_bwd" in calls
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_adaptive", lambda t: False)
        slow = _run(*args)
    return fast, slow


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["normal", "ties", "specials"])
def test_adaptive_pool_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt, kind):
    for i, (shape, out, spatial) in enumerate(CASES):
        x = _values(shape, dt, kind, i)
        fast, slow = _both(monkeypatch, x, out, spatial, i % 3 == 1)
        assert fast == slow, (shape, out)


def test_adaptive_avg_pool_halves_fast_path_is_bit_identical(monkeypatch):
    for i, (shape, out, spatial) in enumerate([((2, 3, 17), 7, 1), ((2, 3, 9, 10), (4, 3), 2),
                                               ((1, 2, 5, 6, 7), 3, 3)]):
        for dt in (np.float16, tgrad.bfloat16):
            x = _values(shape, np.float32, "normal", i)
            xs = tgrad.tensor(x).to(dt).numpy() if dt is tgrad.bfloat16 else x.astype(dt)
            fast, slow = _both(monkeypatch, xs, out, spatial, False)
            assert fast == slow and fast[0] == tgrad.tensor(xs).dtype.name, (shape, dt)


@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_adaptive_pool_fast_path_empty_batch_and_zero_outputs(monkeypatch, spatial):
    x = np.zeros((0, 3) + (5,) * spatial, np.float32)
    fast, slow = _both(monkeypatch, x, (3,) * spatial, spatial, False)
    assert fast == slow
    y = AVG[spatial](tgrad.tensor(x), (3,) * spatial)
    assert y.shape == (0, 3) + (3,) * spatial
    x = _values((2, 3) + (5,) * spatial, np.float64, "normal", 0)
    zero = (0,) + (2,) * (spatial - 1)
    fast, slow = _both(monkeypatch, x, zero, spatial, False)
    assert fast == slow and AVG[spatial](tgrad.tensor(x), zero).shape == (2, 3) + zero


def _windows(size: int, out: int) -> list:
    return [range(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


@pytest.mark.parametrize("shape,out", [((2, 3, 7, 17), (17, 7)), ((2, 1, 13, 5), (4, 9)),
                                       ((1, 2, 130, 3), (1, 2))])
def test_adaptive_pool_fast_path_against_a_float64_loop(shape, out):
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    n, c, h, w = shape
    want = np.empty((n, c) + out)
    wmax = np.empty((n, c) + out, np.float32)
    widx = np.empty((n, c) + out, np.int64)
    for i, rows in enumerate(_windows(h, out[0])):
        for j, cols in enumerate(_windows(w, out[1])):
            box = x[:, :, rows.start:rows.stop, cols.start:cols.stop].astype(np.float64)
            want[:, :, i, j] = box.mean((-1, -2))
            for a, b in np.ndindex(n, c):  # the first maximum, row-major
                flat = [(r * w + q, x[a, b, r, q]) for r in rows for q in cols]
                at = max(flat, key=lambda t: (t[1], -t[0]))[0]
                wmax[a, b, i, j], widx[a, b, i, j] = x.reshape(n, c, -1)[a, b, at], at
    y = F.adaptive_avg_pool2d(tgrad.tensor(x), out).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    y, idx = F.adaptive_max_pool2d(tgrad.tensor(x), out, return_indices=True)
    assert y.numpy().tobytes() == wmax.tobytes()
    assert np.array_equal(idx.numpy(), widx)


@pytest.mark.parametrize("spatial,shape,out", [(1, (2, 2, 7), 3), (1, (2, 2, 3), 7),
                                               (2, (1, 2, 5, 7), (3, 9)),
                                               (3, (1, 2, 3, 4, 5), (2, 5, 3))])
def test_adaptive_pool_fast_path_gradcheck_and_gradgradcheck(spatial, shape, out):
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.permutation(np.prod(shape)).reshape(shape) / 7.0,  # no ties
                     requires_grad=True)
    for fn in (lambda t: AVG[spatial](t, out), lambda t: MAX[spatial](t, out)):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))
