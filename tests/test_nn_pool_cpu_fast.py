"""The CPU kernels of max pooling (tgrad/backends/_numpy_pool.py, taken by MaxPool in
tgrad/nn/_conv.py for float32/float64/integer CPU tensors) against the composite they
replace (window columns, max, _last_nan_wins, the padding fallback; IndexAdd + Col2Im
backward), forced by monkeypatching ``_conv._fast_pool``: bit-identical outputs, indices
and gradients over kernels, strides, padding, dilation, ceil mode, NaN / inf / -inf-only
windows, +-0 ties, non-contiguous and unbatched inputs, empty batches, 1-, 2- and 3-d;
plus a brute-force reference of PyTorch's rule, gradcheck and gradgradcheck in float64."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_pool
from tgrad.nn import _conv

POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}


def _values(shape: tuple, dt, kind: str, seed: int) -> np.ndarray:
    """normal; ties (-1..1 with +-0); specials (NaN with distinct payloads, +-inf, +-0)."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(shape).astype(dt)
    a = rng.integers(-1, 2, shape).astype(dt)
    r = rng.random(shape)
    a[r < 0.2] = -0.0
    if kind == "specials":
        a[(r >= 0.2) & (r < 0.3)] = np.nan
        a[(r >= 0.3) & (r < 0.6)] = -np.inf
        a[(r >= 0.6) & (r < 0.65)] = np.inf
        ints = a.view(np.uint32 if a.dtype == np.float32 else np.uint64)
        nan = np.isnan(a)
        ints[nan] |= rng.integers(1, 999, int(nan.sum())).astype(ints.dtype)  # payloads
    return a


def _run(x_np: np.ndarray, spatial: int, noncontig: bool, grad: bool, **kw) -> list:
    """[y, indices, y without indices, dx] as bytes (dx of a random g with -0.0s)."""
    if noncontig:  # a transposed view of a contiguous copy
        x = tgrad.tensor(np.ascontiguousarray(np.swapaxes(x_np, -1, -2))).transpose(-1, -2)
    else:
        x = tgrad.tensor(x_np)
    if grad:
        x.requires_grad_(True)
    pool = POOL[spatial]
    y, idx = pool(x, return_indices=True, **kw)
    y2 = pool(x, **kw)
    res = [y.detach().numpy().tobytes(), idx.numpy().tobytes(), y2.detach().numpy().tobytes()]
    if grad:
        g = np.random.default_rng(1).standard_normal(y.shape).astype(x_np.dtype)
        g.reshape(-1)[::5] = -0.0
        y2.backward(tgrad.tensor(g))
        res.append(x.grad.numpy().tobytes())
    return res


def _both(monkeypatch, *args, **kw) -> tuple:
    """(the fast path's results, the composite's), the fast kernel seen to run."""
    calls, fwd = [], _numpy_pool.max_pool_fwd

    def spy(*a, **k):
        calls.append(1)
        return fwd(*a, **k)
    with monkeypatch.context() as m:
        m.setattr(_numpy_pool, "max_pool_fwd", spy)
        fast = _run(*args, **kw)
    assert calls
    with monkeypatch.context() as m:
        m.setattr(_conv, "_fast_pool", lambda t: False)
        slow = _run(*args, **kw)
    return fast, slow


GEOMETRIES_2D = [(k, s, p, d, c) for k, s, p, d, c in
                 itertools.product((1, 2, 3), (1, 2, 3), (0, 1), (1, 2), (False, True))
                 if p <= k // 2]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["normal", "ties", "specials"])
def test_max_pool2d_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt, kind):
    for i, (k, s, p, d, c) in enumerate(GEOMETRIES_2D):
        x = _values((2, 3, 7, 8), dt, kind, i)
        fast, slow = _both(monkeypatch, x, 2, i % 3 == 0, True, kernel_size=k, stride=s,
                           padding=p, dilation=d, ceil_mode=c)
        assert fast == slow, (k, s, p, d, c)
    # anisotropic windows, unbatched input
    for i, (k, s, p, d) in enumerate([((2, 3), (1, 2), (1, 0), (1, 2)),
                                      ((3, 1), (2, 3), (1, 0), (2, 1))]):
        for shape in ((2, 2, 9, 6), (3, 9, 6)):
            x = _values(shape, dt, kind, 100 + i)
            fast, slow = _both(monkeypatch, x, 2, False, True, kernel_size=k, stride=s,
                               padding=p, dilation=d, ceil_mode=True)
            assert fast == slow, (k, s, p, d, shape)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["ties", "specials"])
def test_max_pool3d_and_1d_fast_path_is_bit_identical_to_the_composite(monkeypatch, dt,
                                                                        kind):
    for i, (k, s, p, d, c) in enumerate([(2, 2, 0, 1, False), (3, 1, 1, 1, False),
                                         (2, 1, 1, 2, True), (3, 2, 1, 1, True),
                                         ((1, 2, 3), (2, 1, 2), (0, 1, 1), (1, 2, 1), True)]):
        for shape in ((2, 2, 5, 6, 7), (2, 5, 6, 7)):
            x = _values(shape, dt, kind, i)
            fast, slow = _both(monkeypatch, x, 3, i % 2 == 0, True, kernel_size=k, stride=s,
                               padding=p, dilation=d, ceil_mode=c)
            assert fast == slow, (k, s, p, d, c, shape)
    for i, (k, s, p, d, c) in enumerate([(2, 2, 0, 1, False), (3, 1, 1, 2, True)]):
        x = _values((2, 3, 11), dt, kind, i)
        fast, slow = _both(monkeypatch, x, 1, False, True, kernel_size=k, stride=s,
                           padding=p, dilation=d, ceil_mode=c)
        assert fast == slow, (k, s, p, d, c)


@pytest.mark.parametrize("spatial", [2, 3])
def test_max_pool_fast_path_empty_batch(monkeypatch, spatial):
    # (the composite's padding fallback reshaped an empty batch with -1: it raised)
    x = np.zeros((0, 3) + (5,) * spatial, np.float32)
    fast, slow = _both(monkeypatch, x, spatial, False, True, kernel_size=2, padding=1)
    assert fast == slow
    y, idx = POOL[spatial](tgrad.tensor(x), 2, padding=1, return_indices=True)
    assert y.shape == idx.shape == (0, 3) + (3,) * spatial


@pytest.mark.parametrize("dt", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_max_pool_fast_path_integers_tie_with_the_padding(monkeypatch, dt):
    # windows of only the dtype's minimum tie with the padding: their first input element
    info = np.iinfo(dt)
    rng = np.random.default_rng(3)
    for k, s, p, d, c in [(2, 2, 0, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False)]:
        x = rng.integers(info.min, info.min + 2, (2, 3, 7, 8), endpoint=True).astype(dt)
        fast, slow = _both(monkeypatch, x, 2, True, False, kernel_size=k, stride=s,
                           padding=p, dilation=d, ceil_mode=c)
        assert fast == slow, (k, s, p, d, c)


def _brute_force(x: np.ndarray, k: int, s: int, p: int, d: int, out: int) -> tuple:
    """PyTorch's CPU kernel on (N, C, H, W): per window, start at its first input element,
    take val where val > max or isnan(val); (values, flat H W indices)."""
    n, c, h, w = x.shape
    y = np.empty((n, c, out, out), x.dtype)
    idx = np.empty((n, c, out, out), np.int64)
    for a, b, oy, ox in np.ndindex(n, c, out, out):
        rows = [r for r in range(oy * s - p, oy * s - p + d * (k - 1) + 1, d) if 0 <= r < h]
        cols = [q for q in range(ox * s - p, ox * s - p + d * (k - 1) + 1, d) if 0 <= q < w]
        best, at = -np.inf, rows[0] * w + cols[0]
        for r, q in itertools.product(rows, cols):
            v = x[a, b, r, q]
            if v > best or np.isnan(v):
                best, at = v, r * w + q
        y[a, b, oy, ox], idx[a, b, oy, ox] = x.reshape(n, c, -1)[a, b, at], at
    return y, idx


@pytest.mark.parametrize("k,s,p,d", [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 1, 2), (2, 1, 1, 1)])
def test_max_pool2d_fast_path_against_pytorchs_rule(k, s, p, d):
    x = _values((2, 2, 7, 7), np.float64, "specials", k + s)
    out = (7 + 2 * p - d * (k - 1) - 1) // s + 1
    want_y, want_i = _brute_force(x, k, s, p, d, out)
    y, idx = F.max_pool2d(tgrad.tensor(x), k, s, p, d, return_indices=True)
    assert y.numpy().tobytes() == want_y.tobytes()
    assert np.array_equal(idx.numpy(), want_i)


@pytest.mark.parametrize("spatial,k,s,p,d", [(2, 2, 2, 0, 1), (2, 3, 1, 1, 1), (2, 3, 2, 1, 2),
                                             (3, 2, 1, 1, 1), (1, 3, 2, 1, 1)])
def test_max_pool_fast_path_gradcheck_and_gradgradcheck(spatial, k, s, p, d):
    rng = np.random.default_rng(5)
    shape = (2, 2) + (5,) * spatial
    x = tgrad.tensor(rng.permutation(np.prod(shape)).reshape(shape) / 7.0,  # no ties
                     requires_grad=True)

    def fn(t):
        return POOL[spatial](t, k, s, p, d, ceil_mode=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    # create_graph keeps the composite backward: a differentiable gradient
    (gx,) = tgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
    assert gx.requires_grad


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["normal", "ties", "specials"])
def test_max_pool_tiled_backward_matches_the_tap_sums(monkeypatch, dt, kind):
    """Windows that tile the input (stride = kernel, no padding / dilation / ceil extra):
    dx written tap by tap into an uninitialised array (+0 past the last window), bit for
    bit the sums into zeros (the general kernel, forced by patching _tiled), g with -0.0
    and NaN payloads; the tiled path seen to run."""
    calls, tiled = [], _numpy_pool._max_pool_bwd_tiled

    def spy(*a):
        calls.append(1)
        return tiled(*a)
    monkeypatch.setattr(_numpy_pool, "_max_pool_bwd_tiled", spy)
    cases = [((2, 3, 32, 32), 2, 1), ((2, 3, 9, 7), 2, 1), ((2, 2, 10, 11), 3, 1),
             ((2, 2, 6, 5), (2, 1), 1), ((2, 2, 6, 5), 2, 2), ((2, 2, 5, 6, 7), 2, 1),
             ((0, 2, 4, 4), 2, 1), ((1, 2, 3, 5), 2, 1)]
    for i, (shape, k, d) in enumerate(cases):
        x = _values(shape, dt, kind, i)
        g_shape = None
        res = []
        for force_general in (False, True):
            with monkeypatch.context() as m:
                if force_general:
                    m.setattr(_numpy_pool, "_tiled", lambda *a: False)
                xt = tgrad.tensor(x, requires_grad=True)
                pool = POOL[len(shape) - 2]
                y = pool(xt, k, dilation=d)
                g_shape = g_shape or y.shape
                g = _values(tuple(g_shape), dt, "specials", 50 + i)
                g.reshape(-1)[::3] = -0.0
                y.backward(tgrad.tensor(g))
                res.append(xt.grad.numpy().tobytes())
        assert res[0] == res[1], (shape, k, d)
    # tiled: stride = kernel with dilation 1 (or a kernel of 1 along the dilated dim)
    assert len(calls) == len(cases) - 1


def test_max_pool_keeps_compact_winning_taps(monkeypatch):
    """The CPU kernel keeps each window's winning tap as int8 (int32 past 127 taps): the
    indices and the create_graph backward widen them to int64."""
    x = tgrad.tensor(_values((2, 3, 8, 8), np.float32, "ties", 0), requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    assert y.grad_fn.arg.dtype is tgrad.int8 and idx.dtype is tgrad.int64
    assert y.grad_fn._saved_result1.dtype is tgrad.int64
    y12 = F.max_pool2d(tgrad.tensor(_values((1, 1, 12, 12), np.float32, "normal", 1)), 12)
    assert y12.shape == (1, 1, 1, 1)
    _, arg = _numpy_pool.max_pool_fwd(np.zeros((1, 1, 12, 12), np.float32), (12, 12),
                                      (12, 12), (0, 0), (1, 1), (1, 1), (0, 0), -np.inf)
    assert arg.dtype == np.int32
    (gx,) = tgrad.autograd.grad(y.sum(), x, create_graph=True)
    assert np.array_equal(gx.detach().numpy(), _brute_force_grad(x.detach().numpy(),
                                                                  idx.numpy()))


def _brute_force_grad(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """dx of sum(max_pool(x)) from the flat indices: 1 at each window's maximum."""
    dx = np.zeros(x.shape, x.dtype)
    n, c = x.shape[:2]
    for i in range(n):
        for j in range(c):
            np.add.at(dx[i, j].reshape(-1), idx[i, j].reshape(-1), 1)
    return dx


@pytest.mark.parametrize("taps", [126, 127, 128, 129, 256])
def test_max_pool_compact_taps_at_the_int8_int32_boundary(monkeypatch, taps):
    """Windows of 126..256 taps (int8 winning taps up to 127, int32 past them), the
    maximum on the last tap, ties, NaN: the composite's outputs, indices and gradient,
    tiled (stride = kernel) and overlapping."""
    for stride, kind in ((taps, "ties"), (taps, "specials"), (1, "specials")):
        x = _values((2, 2, 1, 2 * taps + 3), np.float32, kind, taps)
        x[0, 0, 0, taps - 1] = 9.0  # (the first window's last tap wins)
        fast, slow = _both(monkeypatch, x, 2, False, True, kernel_size=(1, taps),
                           stride=(1, stride))
        assert fast == slow, (taps, stride, kind)
    x = _values((1, 2, 1, taps), np.float32, "normal", 0)
    x[0, 0, 0, -1] = 9.0
    idx = F.max_pool2d(tgrad.tensor(x), (1, taps), return_indices=True)[1]
    assert idx.numpy()[0, 0, 0, 0] == taps - 1
