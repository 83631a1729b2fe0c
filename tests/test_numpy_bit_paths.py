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
                assert _same(nb.nextafter(x, y), np.nextafter(x, y))


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
