"""i0, i0e, i1, i1e (tgrad.ops.bessel) against an independent float64 reference: the
integral e^-|x| I_n(x) = (1/pi) int_0^pi e^(|x| (cos t - 1)) cos(n t) dt by the trapezoid
rule, which converges geometrically for this periodic integrand, and below |x| = 2 (where
the n = 1 integral cancels) the power series summed term by term with math.fsum (a
cross-check with NumPy's own i0 too); gradients by gradcheck / gradgradcheck, NaN/inf as
NumPy, shapes and dtypes."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import tgrad
import tgrad.special as S
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64
X = np.concatenate([[0.0, 1e-300, 1e-8, 0.5, 1.0, 3.7, 12.0, 19.999, 20.0, 20.001, 35.5,
                     100.0, 500.0, 700.0],
                    np.random.default_rng(0).uniform(0, 60, 200)])


def _scaled_ref(n: int, x: np.ndarray, points: int = 4001) -> np.ndarray:
    """e^-|x| I_n(|x|): the trapezoid rule on [0, pi]; the series below |x| = 2."""
    a = np.abs(x)
    t = np.linspace(0.0, math.pi, points)
    f = np.exp(a[:, None] * (np.cos(t) - 1.0)) * np.cos(n * t)
    w = np.full(points, 1.0)
    w[0] = w[-1] = 0.5
    out = (f * w).sum(1) * (t[1] - t[0]) / math.pi
    for i, v in enumerate(a):
        if v < 2:
            out[i] = math.exp(-v) * math.fsum(
                (v / 2) ** (2 * k + n) / (math.factorial(k) * math.factorial(k + n))
                for k in range(30))
    return out


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def test_scaled_forms_against_quadrature_both_signs():
    for n, fn, parity in ((0, S.i0e, 1.0), (1, S.i1e, -1.0)):
        ref = _scaled_ref(n, X)
        np.testing.assert_allclose(fn(_t(X)).numpy(), ref, rtol=3e-15, atol=1e-300)
        np.testing.assert_allclose(fn(_t(-X)).numpy(), parity * ref, rtol=3e-15, atol=1e-300)


def test_unscaled_forms_and_numpy_i0():
    small = X[X < 700]
    np.testing.assert_allclose(tgrad.i0(_t(small)).numpy(),
                               _scaled_ref(0, small) * np.exp(small), rtol=5e-15)
    np.testing.assert_allclose(S.i1(_t(-small)).numpy(),
                               -_scaled_ref(1, small) * np.exp(small), rtol=5e-15)
    np.testing.assert_allclose(tgrad.i0(_t(small)).numpy(), np.i0(small), rtol=5e-15)
    # near the overflow: finite just below it (where e^x alone already overflows), inf above
    assert np.isfinite(tgrad.i0(_t(713.0)).item()) and 709.8 < 713.0
    np.testing.assert_allclose(tgrad.i0(_t(713.0)).item(),
                               _scaled_ref(0, np.array([713.0]))[0] * math.exp(356.5)
                               * math.exp(356.5),
                               rtol=5e-15)
    assert tgrad.i0(_t(715.0)).item() == math.inf
    # aliases: the same op (each name has its own out= wrapper, named as PyTorch names it)
    unwrap = inspect.unwrap
    assert unwrap(S.modified_bessel_i0) is unwrap(S.i0)
    assert unwrap(S.modified_bessel_i1) is unwrap(S.i1)


def test_specials_match_numpy():
    v = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    with np.errstate(all="ignore"):
        want = np.i0(v)  # NaN at +-inf (0 inf inf), as PyTorch
    np.testing.assert_array_equal(tgrad.i0(_t(v)).numpy(), want)
    np.testing.assert_array_equal(S.i1(_t(v)).numpy(), [np.nan, np.nan, np.nan, 0.0, 0.0])
    np.testing.assert_array_equal(S.i0e(_t(v)).numpy(), [0.0, 0.0, np.nan, 1.0, 1.0])
    np.testing.assert_array_equal(S.i1e(_t(v)).numpy(), [0.0, -0.0, np.nan, 0.0, 0.0])


def test_huge_finite_arguments_overflow_to_inf_and_scale_to_the_leading_term():
    # Past ~1e154 the asymptotic factor (2 pi |x|)^-1/2 must not be formed as the rsqrt of
    # an overflowing product: e^-|x| I_n(|x|) = (2 pi |x|)^-1/2 (1 + O(1/|x|)) (hand value,
    # the next term (1 - 4 n^2) / (8 |x|) is below 1e-20 here), and i0/i1 overflow to
    # +-inf there (they gave 0 and NaN)
    for x in (1e300, 1e308):
        lead = 1.0 / math.sqrt(2 * math.pi) / math.sqrt(x)
        for sign in (1.0, -1.0):
            t = _t([sign * x])
            assert S.i0e(t).item() == pytest.approx(lead, rel=1e-15)
            assert S.i1e(t).item() == pytest.approx(sign * lead, rel=1e-15)
            assert tgrad.i0(t).item() == math.inf
            assert S.i1(t).item() == sign * math.inf
    x32 = tgrad.tensor([1e38, -3e38], dtype=tgrad.float32)
    np.testing.assert_allclose(S.i0e(x32).numpy(),
                               1 / np.sqrt(2 * np.pi * np.array([1e38, 3e38])), rtol=1e-6)
    np.testing.assert_array_equal(S.i1(x32).numpy(), [np.inf, -np.inf])
    g = _t([1e308], requires_grad=True)
    tgrad.i0(g).backward()  # i0' = i1
    assert g.grad.item() == math.inf


def test_float32_halves_shapes_and_views():
    x = np.linspace(-40, 40, 1025)
    for fn, n in ((S.i0e, 0), (S.i1e, 1)):
        ref = _scaled_ref(n, x) * np.sign(x) ** n
        got = fn(tgrad.tensor(x.astype(np.float32)))
        assert got.dtype == tgrad.float32
        np.testing.assert_allclose(got.numpy(), ref, rtol=2e-6, atol=1e-37)
        half = fn(tgrad.tensor(x, dtype=tgrad.bfloat16))
        assert half.dtype == tgrad.bfloat16
        np.testing.assert_allclose(half.float().numpy(), ref, rtol=1e-2, atol=1e-30)
    base = _t(np.linspace(0, 30, 34).reshape(2, 17))
    view = base.T[::2]
    np.testing.assert_allclose(tgrad.i0(view).numpy(), tgrad.i0(view.contiguous()).numpy(),
                               rtol=0, atol=0)
    assert tgrad.i0(_t(np.zeros((0, 3)))).shape == (0, 3)
    assert tgrad.i0(tgrad.tensor([1, 2])).dtype == tgrad.float32  # ints promote
    y = _t([1.0, 2.0])
    y.i0_()
    np.testing.assert_allclose(y.numpy(), np.i0([1.0, 2.0]), rtol=1e-15)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_gradients(name):
    fn = getattr(S, name)
    points = [-25.0, -3.0, -0.4, 0.0, 1e-3, 0.7, 19.9, 20.1, 40.0]
    gradcheck(fn, (_t(points, requires_grad=True),))
    if name.endswith("e"):  # e^-|x|: the first derivative jumps at 0 (sign(x))
        points.remove(0.0)
    gradgradcheck(fn, (_t(points, requires_grad=True),))


def test_derivative_identities_at_zero():
    x = _t([0.0], requires_grad=True)
    (g,) = tgrad.autograd.grad(S.i1(x).sum(), x)
    assert g.item() == 0.5
    (g,) = tgrad.autograd.grad(S.i1e(x).sum(), x)
    assert g.item() == 0.5
    (g,) = tgrad.autograd.grad(tgrad.i0(x).sum(), x)
    assert g.item() == 0.0


def test_scaled_derivatives_far_out():
    """i0e' = i1e - sign(x) i0e and i1e' = i0e - i1e (sign(x) + 1/x) cancel for large |x|
    (both ~ (2 pi |x|)^-1/2, the derivative ~ that / (2|x|)): the difference is computed as
    one series (relative error was ~2|x| eps: 4e-6 at 1e10, PyTorch's 2e-7). Expected values:
    mpmath (50 digits), mp.diff of besseli(nu, t) * exp(-|t|)."""
    xs = [0.5, 5.0, 19.5, 20.0, 25.0, 100.0, 1e5, 1e10, -1e10, -30.0]
    want0 = [-0.48861446726427837, -0.019568545664785996, -0.0023633460008416308,
             -0.0022740897015373562, -0.0016206602281439364, -0.00020022627396642997,
             -6.307854959639557e-9, -1.9947114020819651e-16, 1.9947114020819651e-16,
             0.0012296158835897392]
    want1 = [0.17577286089453498, -0.013225907724122475, -0.0021790173886104129,
             -0.002101221407627077, -0.0015223843046277745, -0.00019721525628487255,
             -6.3077603415786143e-9, -1.9947114017827584e-16, -1.9947114017827584e-16,
             -0.0011675951363651793]
    for fn, want in ((S.i0e, want0), (S.i1e, want1)):
        x = _t(xs, requires_grad=True)
        (g,) = tgrad.autograd.grad(fn(x).sum(), x)
        np.testing.assert_allclose(g.numpy(), want, rtol=2e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_numpy_forms_match_the_composites(dtype, monkeypatch):
    # float32 / float64 CPU inputs run as NumPy (tgrad.backends._numpy_bessel_i), each
    # branch on its own elements: the composites' values (NaN where they give NaN; the
    # sign of a NaN is NumPy's loops' choice), signed zeros included
    import tgrad.ops.bessel as B
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.standard_normal(300) * 3, rng.uniform(-60, 60, 300),
                        [0.0, -0.0, 20.0, -20.0, 19.999, np.nan, np.inf, -np.inf, 1e30,
                         -1e30, 1e-40, 700.0, -720.0]]).astype(dtype)
    forms = {"i0": lambda t: B._unscaled(0, t), "i1": lambda t: B._unscaled(1, t),
             "i0e": lambda t: B._scaled(0, t), "i1e": lambda t: B._scaled(1, t),
             "i0e'": lambda t: B._scaled_parts(t, False)[0],
             "i1e (parts)": lambda t: B._scaled_parts(t, True)[1]}
    for xs in (x, x[:600].reshape(30, 20)[:, ::3], x[:0]):
        xt = tgrad.tensor(xs)
        for name, f in forms.items():
            with np.errstate(all="ignore"):
                got = f(xt).numpy()
                with monkeypatch.context() as m:
                    m.setattr(B, "_on_cpu", lambda t: False)
                    want = f(xt).numpy()  # the composite
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_array_equal(got, want, err_msg=name)
            np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]),
                                          np.signbit(want[~np.isnan(want)]), err_msg=name)
