"""The float32 fast paths of erf, erfinv, lgamma, erfc, ndtr and ndtri on the NumPy backend
(tgrad/backends/numpy.py ``_erf32_block``, tgrad/backends/_numpy_special.py
``_erfinv32_block`` ...): erf's results must be the float64 path's rounded once (an
exhaustive sweep of all 2^32 float32 found only inputs where the former float32 erf was
the worse-rounded one; docs/performance.md), and so must erfinv's (its ~1e-10 fit, the
elements near a rounding boundary by the former Halley path: every float32 in [-1, 1]
checked) and lgamma's (its ~1e-11 fits the same way: every float32 checked); erfc's,
ndtr's and ndtri's within 0.505 ulp of the float64 paths' (their ~1e-10 fits: <= 0.502 ulp
measured), with the specials, odd sizes, non-contiguous and empty inputs, and their
gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends import _numpy_special as ns
from tgrad.backends import numpy as nb

RNG = np.random.default_rng(7)
F32 = np.float32


def _dense(lo: float, hi: float, step: int) -> np.ndarray:
    """Every step-th float32 in [lo, hi) (lo, hi >= 0), both signs."""
    a, b = np.array([lo, hi], F32).view(np.uint32)
    pos = np.arange(a, b, step, dtype=np.uint32).view(F32)
    return np.concatenate([pos, -pos])


def _specials(dt=F32) -> np.ndarray:
    fi = np.finfo(dt)
    return np.array([0.0, -0.0, math.inf, -math.inf, math.nan, fi.smallest_subnormal,
                     -fi.smallest_subnormal, fi.tiny, -fi.tiny, fi.max, -fi.max], dt)


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)  # (NaN where NaN)
    num = ~np.isnan(b)
    assert np.array_equal(np.signbit(a[num]), np.signbit(b[num]))


def _within_ulp(got: np.ndarray, want: np.ndarray, bound: float = 0.505) -> None:
    """got (float32) within ``bound`` float32 ulps of want (float64, the float64 path, itself
    ~1e-15 relative); where want rounds to +-0, +-inf or NaN, got is that, sign included."""
    assert got.dtype == F32 and got.shape == want.shape
    r = want.astype(F32)
    odd = ~np.isfinite(r) | (r == 0)
    _same_bits(got[odd], r[odd])
    g, w = got[~odd].astype(np.float64), want[~odd]
    ulp = np.spacing(np.abs(w).astype(F32)).astype(np.float64)
    err = np.abs(g - w) / ulp
    assert err.max(initial=0.0) <= bound, (err.max(), w[np.argmax(err)])


def test_erf_float32_is_the_float64_erf_rounded():
    x = np.concatenate([_dense(0.0, 4.5, 97), _dense(0.99, 1.01, 1), _dense(3.99, 4.01, 1),
                        _dense(1e-30, 1e-3, 4099), _specials()])
    _same_bits(nb._erf(x), nb._erf(x.astype(np.float64)).astype(F32))


def test_erf_float32_where_the_former_series_rounded_the_wrong_way():
    # the sweep's only differences from the former float32 series (which cut its terms
    # at ~1e-13): the new values are erf's correctly rounded ones (mpmath, 60 digits)
    x = np.array([0.00018398030078969896, 0.8985376358032227, 0.9075261950492859,
                  0.9733458757400513, 0.9840317368507385, 0.9944388270378113], F32)
    want = np.array([0.00020759954350069165, 0.7961732149124146, 0.8006606101989746,
                     0.8313390016555786, 0.8359658718109131, 0.8403794765472412], F32)
    _same_bits(nb._erf(np.concatenate([x, -x])), np.concatenate([want, -want]))


def test_erf_float16_is_the_float64_erf_rounded():
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        _same_bits(nb._erf(h), nb._erf(h.astype(np.float64)).astype(np.float16))


def test_erfinv_float32_is_the_float64_erfinv_rounded():
    y = np.concatenate([_dense(0.0, 1.0, 89), _dense(0.49, 0.51, 3), _dense(0.84, 0.85, 3),
                        _dense(0.9966, 0.9967, 1), _dense(1 - 2 ** -12, 1.0, 1),
                        np.array([1.0, -1.0, 1.5, -1.0000001, 2.0], F32), _specials()])
    with np.errstate(all="ignore"):
        want = ns.erfinv(y.astype(np.float64)).astype(F32)
    _same_bits(ns.erfinv(y), want)


def test_lgamma_float32_is_the_float64_lgamma_rounded():
    # the fit's pieces and their ends (1/2, 3/2, 2.5), every float32 about the roots 1 and
    # 2, tiny and subnormal x (-log x), Stirling's range up to overflow (~4.1e36), and the
    # negatives (the float64 path): integers (poles), non-integers, about the roots there
    ints = np.arange(0, 60, dtype=F32)
    x = np.concatenate([_dense(0.0, 40.0, 97), _dense(0.49, 0.51, 3), _dense(1.49, 1.51, 3),
                        _dense(2.49, 2.51, 3), _dense(0.999, 1.001, 1), _dense(1.999, 2.001, 1),
                        _dense(1e-38, 1e-3, 4099), _dense(40.0, 3e38, 60013),
                        _dense(4e36, 4.2e36, 101), ints, -ints, -ints - F32(0.5),
                        -ints + F32(1e-3), -ints - F32(1e-3), _dense(2.45, 2.46, 5),
                        RNG.uniform(-30, 30, 30000).astype(F32), _specials()])
    with np.errstate(all="ignore"):
        want = ns.lgamma(x.astype(np.float64)).astype(F32)
    _same_bits(ns.lgamma(x), want)


@pytest.mark.parametrize("name", ["erfc", "ndtr"])
def test_erfc_ndtr_float32_within_half_an_ulp_of_the_float64_path(name):
    # every region: both signs, erfc's underflow to 0 (~10.05) and ndtr's (~-14.1), the
    # fit's end 10.5 and beyond, subnormal and huge inputs
    fn = getattr(ns, name)
    x = np.concatenate([_dense(0.0, 15.0, 97), _dense(9.9, 10.6, 3), _dense(13.9, 14.3, 7),
                        _dense(0.49, 0.51, 5), _dense(1e-30, 1e-3, 4099),
                        RNG.standard_normal(30000).astype(F32) * 5, _specials()])
    with np.errstate(all="ignore"):
        _within_ulp(fn(x), fn(x.astype(np.float64)))


def test_ndtri_float32_within_half_an_ulp_of_the_float64_ndtri():
    # near 0 (down to the smallest subnormal: w up to 103, the far tail's piece), near 1
    # (every float32 in [1 - 2^-12, 1)), about 1/2, the pieces' ends, and outside [0, 1]
    p = np.concatenate([_dense(0.0, 0.5, 1999), _dense(1 - 2 ** -12, 1.0, 1),
                        _dense(0.5, 1.0, 301), _dense(0.49, 0.51, 7),
                        RNG.uniform(0, 1, 30000).astype(F32),
                        np.array([1.0, 1.5, -0.5, 2.0, -1e-45], F32), _specials()])
    with np.errstate(all="ignore"):
        _within_ulp(ns.ndtri(p), ns.ndtri(p.astype(np.float64)))


@pytest.mark.parametrize("name", ["erfc", "special.ndtr", "special.ndtri"])
def test_erfc_ndtr_ndtri_float32_layouts_odd_sizes_and_empty(name):
    fn = tgrad.special.ndtr if name == "special.ndtr" else (
        tgrad.special.ndtri if name == "special.ndtri" else tgrad.erfc)
    lo, hi = (0.0, 1.0) if name == "special.ndtri" else (-6.0, 6.0)
    for shape in [(0,), (3, 0), (1,), (7,), (65537,), (13, 17, 19)]:
        v = RNG.uniform(lo, hi, shape).astype(F32)
        got = fn(tgrad.tensor(v)).numpy()
        assert got.shape == shape
        _within_ulp(got, fn(tgrad.tensor(v.astype(np.float64))).numpy())
    base = tgrad.tensor(RNG.uniform(lo, hi, (40, 30, 6)).astype(F32))
    for v in (base.permute(2, 0, 1), base[:, ::3, 1:], base[5, 7], base.transpose(0, 2)):
        out = fn(v)
        assert out.dtype == v.dtype and out.shape == v.shape
        _same_bits(out.numpy(), fn(v.contiguous()).numpy())


@pytest.mark.parametrize("name", ["erf", "erfinv", "lgamma", "digamma"])
def test_float32_layouts_odd_sizes_and_empty(name):
    fn = getattr(tgrad, name)
    scale = 0.99 if name == "erfinv" else 5.0
    for shape in [(0,), (3, 0), (1,), (7,), (65537,), (13, 17, 19)]:
        v = (RNG.uniform(-1, 1, shape) * scale).astype(F32)
        got = fn(tgrad.tensor(v)).numpy()
        want = fn(tgrad.tensor(v.astype(np.float64))).numpy().astype(F32)
        if name in ("erf", "erfinv"):  # (lgamma / digamma: float32 in float64 by design)
            _same_bits(got, want)
        else:
            _same_bits(got, fn(tgrad.tensor(v.astype(np.float64))).numpy().astype(F32))
    base = tgrad.tensor((RNG.uniform(-1, 1, (40, 30, 6)) * scale).astype(F32))
    for v in (base.permute(2, 0, 1), base[:, ::3, 1:], base[5, 7], base.transpose(0, 2)):
        out = fn(v)
        assert out.dtype == v.dtype and out.shape == v.shape
        _same_bits(out.numpy(), fn(v.contiguous()).numpy())


def test_float32_gradients_and_create_graph():
    x = tgrad.tensor(RNG.uniform(-0.9, 0.9, 33).astype(F32), requires_grad=True)
    for fn, d in ((tgrad.erf, lambda v: 2 / np.sqrt(np.pi) * np.exp(-v * v)),
                  (tgrad.erfinv, None)):
        (g,) = tgrad.autograd.grad(fn(x).sum(), x, create_graph=True)
        v = x.detach().numpy().astype(np.float64)
        if d is None:  # erfinv' = sqrt(pi)/2 exp(erfinv(y)^2)
            e = ns.erfinv(v)
            d = lambda v, e=e: np.sqrt(np.pi) / 2 * np.exp(e * e)  # noqa: E731
        np.testing.assert_allclose(g.detach().numpy(), d(v), rtol=2e-6)
        (gg,) = tgrad.autograd.grad(g.sum(), x)
        assert np.all(np.isfinite(gg.numpy()))
    t = tgrad.tensor([-3.5, -1.2, -0.3, 0.0, 0.7, 1.9, 3.9], dtype=tgrad.float64,
                     requires_grad=True)
    assert gradcheck(tgrad.erf, (t,)) and gradgradcheck(tgrad.erf, (t,))
