"""The NumPy backend's nextafter (integer steps of the bit patterns), nan_to_num (one copy,
masked only when something is not finite) and cummax / cummin indices against NumPy / the
previous formulas, bit for bit, with their gradients."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import numpy as nb

UINT = {np.float32: np.uint32, np.float64: np.uint64}


def _specials(dt) -> np.ndarray:
    fi = np.finfo(dt)
    return np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, fi.smallest_subnormal,
                     -fi.smallest_subnormal, fi.max, -fi.max, fi.tiny, -fi.tiny, 1.0, -1.0],
                    dt)


def _bits(rng, n: int, dt) -> np.ndarray:
    u = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * 2 + rng.integers(0, 2, n,
                                                                         dtype=np.uint64)
    return u.astype(UINT[dt]).view(dt)


def _same(x, y) -> bool:
    return x.dtype == y.dtype and x.shape == y.shape and np.array_equal(
        x.view(UINT[x.dtype.type]), y.view(UINT[y.dtype.type]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_nextafter_is_numpys_bit_for_bit(dt):
    rng = np.random.default_rng(0)
    n = 40_000
    xs = [_bits(rng, n, dt), rng.choice(_specials(dt), n), rng.standard_normal(n).astype(dt)]
    with np.errstate(all="ignore"):
        for x in xs:
            for y in xs + [x.copy(), -x]:
                assert _same(nb._nextafter(x, y), np.nextafter(x, y))


@pytest.mark.parametrize("dt", [tgrad.float32, tgrad.float64])
@pytest.mark.parametrize("shape", [(1,), (17,), (1023,), (1025,), (0,), (0, 4), (37, 29)])
def test_nextafter_tensor_sizes_layouts(dt, shape):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(dt.np)
    b = rng.choice(_specials(dt.np), shape)
    want = np.nextafter(a, b)
    got = tgrad.nextafter(tgrad.tensor(a), tgrad.tensor(b))
    assert got.dtype is dt and _same(got.numpy(), want)
    if len(shape) == 2:  # transposed operands, a broadcast row
        ta, tb = tgrad.tensor(a.T.copy()).T, tgrad.tensor(b.T.copy()).T
        assert _same(tgrad.nextafter(ta, tb).numpy(), want)
        row = tgrad.tensor(b[:1])
        assert _same(tgrad.nextafter(tgrad.tensor(a), row).numpy(), np.nextafter(a, b[:1]))


def test_nextafter_gradient():
    # PyTorch's NextafterBackward0: g to input, 0 to other
    rng = np.random.default_rng(2)
    x = tgrad.tensor(rng.standard_normal((9, 70)), requires_grad=True)
    y = tgrad.tensor(rng.standard_normal((9, 70)), requires_grad=True)
    assert gradcheck(lambda a: tgrad.nextafter(a, y.detach()), (x,))
    g = tgrad.tensor(rng.standard_normal((9, 70)))
    tgrad.nextafter(x, y).backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), g.numpy())
    np.testing.assert_array_equal(y.grad.numpy(), np.zeros((9, 70)))


def _with_nonfinite(shape, dt, seed=3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 3).astype(dt)
    flat = a.reshape(-1)
    k = flat.size
    if k:
        idx = rng.permutation(k)
        flat[idx[: k // 7]] = np.nan
        flat[idx[k // 7: k // 5]] = np.inf
        flat[idx[k // 5: k // 4]] = -np.inf
        flat[idx[k // 4: k // 3]] = -0.0
    return a


@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16, tgrad.bfloat16])
@pytest.mark.parametrize("shape", [(1,), (17,), (1023,), (1025,), (0,), (30, 41)])
@pytest.mark.parametrize("args", [(), (0.5, 7.0, -7.0), (1.0, 1e6, -1e300)])
def test_nan_to_num_values(dtype, shape, args):
    a = tgrad.tensor(_with_nonfinite(shape, np.float64)).to(dtype)
    an = a.numpy()
    t = an.dtype.type
    fi = ml_dtypes.finfo(an.dtype)
    nan, hi, lo = args if args else (0.0, fi.max, fi.min)
    want = an.copy()
    with np.errstate(over="ignore"):  # (1e6 is inf in float16, -1e300 -inf below float64)
        want[np.isnan(an)], want[an == np.inf], want[an == -np.inf] = t(nan), t(hi), t(lo)
    got = tgrad.nan_to_num(a, *args)
    assert got.dtype is dtype and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))
    if len(shape) == 2:  # a transposed view
        t = tgrad.tensor(an.T.copy()).T
        np.testing.assert_array_equal(tgrad.nan_to_num(t, *args).numpy().view(np.uint8),
                                      want.view(np.uint8))


def test_nan_to_num_gradients():
    a = _with_nonfinite((13, 21), np.float64)
    x = tgrad.tensor(a, requires_grad=True)
    y = tgrad.nan_to_num(x, 0.5)
    assert y.grad_fn.name() == "NanToNumBackward0"
    g = np.full(a.shape, np.nan)  # even a NaN upstream gradient is 0 where x is not finite
    y.backward(tgrad.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), np.where(np.isfinite(a), g, 0.0))
    finite = tgrad.tensor(np.random.default_rng(4).standard_normal((5, 7)), requires_grad=True)
    assert gradcheck(lambda t: tgrad.nan_to_num(t) * t, (finite,))
    assert gradgradcheck(lambda t: tgrad.nan_to_num(t) * t, (finite,))
    # in place: the mask is saved, not the overwritten input
    z = tgrad.tensor(a, requires_grad=True)
    w = z.clone()
    w.nan_to_num_()
    w.sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.isfinite(a).astype(np.float64))
    np.testing.assert_array_equal(w.detach().numpy(), np.nan_to_num(a))


def _old_cum_extreme_indices(a: np.ndarray, d: int, larger: bool) -> np.ndarray:
    """The indices by ufunc.accumulate (the CPU path before the log-step scans)."""
    a = a.astype(np.float32) if a.dtype in (np.float16, ml_dtypes.bfloat16) else a
    m = (np.maximum if larger else np.minimum).accumulate(a, axis=d)
    took = a == m
    if a.dtype.kind == "f":
        took |= np.isnan(a)
    shape = [1] * a.ndim
    shape[d] = a.shape[d]
    pos = np.where(took, np.arange(a.shape[d], dtype=np.int64).reshape(shape), 0)
    return np.maximum.accumulate(pos, axis=d)


def _cum_inputs(shape, kind: str, rng) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal(shape).astype(np.float32)
    if kind == "ties":
        return rng.integers(-3, 4, shape).astype(np.float64)
    if kind == "nonfinite":
        a = rng.integers(-3, 4, shape).astype(np.float32)
        for v in (np.nan, np.inf, -np.inf):
            a[rng.random(shape) < 0.01] = v
        return a
    if kind == "zeros":  # 0.0 and -0.0 tie
        a = np.where(rng.random(shape) < 0.5, np.float32(0.0), np.float32(-0.0))
        a[rng.random(shape) < 0.03] = np.nan
        return a
    if kind == "int":
        return rng.integers(-5, 5, shape).astype(np.int32)
    if kind == "specials":  # +-0, +-inf, NaNs with distinct payloads
        from special_values import mixed_specials
        return mixed_specials(shape, np.float64, rng)
    return rng.random(shape) < 0.3  # bool


@pytest.mark.parametrize("shape", [(1,), (17,), (1023,), (1025,), (5000,), (4096, 1),
                                   (17, 1023), (3, 1025, 2), (2, 3, 700), (64, 64)])
@pytest.mark.parametrize("kind", ["normal", "ties", "nonfinite", "zeros", "int", "bool",
                                  "specials"])
def test_cum_extreme_indices_match_the_accumulate_path(shape, kind):
    from tgrad.ops.logmath import _cum_extreme_cpu
    a = _cum_inputs(shape, kind, np.random.default_rng(5))
    for arr in (a, np.moveaxis(np.ascontiguousarray(np.moveaxis(a, 0, -1)), -1, 0)):
        for d in range(a.ndim):
            for larger in (True, False):
                got, vals = _cum_extreme_cpu(arr, d, larger)
                assert got.dtype == np.int64
                np.testing.assert_array_equal(got, _old_cum_extreme_indices(arr, d, larger))
                # the values from the running extreme: the gathered bits (zero signs, NaN
                # payloads included)
                want = np.take_along_axis(arr, got, d)
                assert vals.dtype == arr.dtype and vals.shape == arr.shape
                assert np.ascontiguousarray(vals).tobytes() == want.tobytes()


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [tgrad.float32, tgrad.float64, tgrad.float16])
def test_cum_extreme_tensor_values_indices_and_gradient(op, dtype):
    rng = np.random.default_rng(6)
    a = rng.integers(-4, 5, (70, 90)).astype(np.float64)
    a[rng.random(a.shape) < 0.01] = np.nan
    x = tgrad.tensor(a, dtype=dtype, requires_grad=True)
    xn = x.detach().numpy()
    for d, t in ((1, x), (0, x), (0, tgrad.tensor(xn.T.copy(), requires_grad=True).T)):
        v, i = getattr(tgrad, op)(t, d)
        want_i = _old_cum_extreme_indices(xn, d, op == "cummax")
        np.testing.assert_array_equal(i.numpy(), want_i)
        want_v = np.take_along_axis(xn, want_i, d)
        np.testing.assert_array_equal(v.detach().numpy().view(np.uint8),
                                      want_v.view(np.uint8))
    g = rng.standard_normal(a.shape)
    getattr(tgrad, op)(x, 1)[0].backward(tgrad.tensor(g, dtype=dtype))
    want = np.zeros(a.shape)
    np.add.at(want, (np.arange(70)[:, None], _old_cum_extreme_indices(xn, 1, op == "cummax")),
              tgrad.tensor(g, dtype=dtype).double().numpy())
    np.testing.assert_allclose(x.grad.double().numpy(), want,
                               rtol=0 if dtype is tgrad.float64 else 1e-2, atol=0)



@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("scan_from", [10 ** 9, 16])  # ufunc.accumulate / log-step scans
def test_cum_extreme_gradcheck(op, scan_from, monkeypatch):
    from tgrad.ops import logmath
    monkeypatch.setattr(logmath, "_SCAN_MIN_SIZE", scan_from)
    y = tgrad.tensor(np.random.default_rng(8).standard_normal((6, 45)), requires_grad=True)
    for d in (0, 1):
        assert gradcheck(lambda u, d=d: getattr(tgrad, op)(u, d)[0], (y,))
        assert gradgradcheck(lambda u, d=d: getattr(tgrad, op)(u, d)[0] * u, (y,))

def test_gather_by_index_arrays_uses_linear_positions_and_keeps_errors():
    from tgrad.backends.numpy import gather
    rng = np.random.default_rng(7)
    x = rng.standard_normal((40, 50, 3)).astype(np.float32)
    key = (rng.integers(0, 40, (30, 1, 1)), rng.integers(-50, 50, (1, 70, 1)),
           rng.integers(0, 3, (30, 70, 1)))
    got = gather(x, key)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, x[key])
    with pytest.raises(IndexError):
        gather(x, (key[0], key[1] + 100, key[2]))
