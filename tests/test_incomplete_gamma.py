"""igamma / igammac (special.gammainc / gammaincc) against closed forms (a = 1: 1 - e^-x;
a = 1/2: erf(sqrt x); integer a: the Poisson sum) and a NumPy quadrature of the gamma
density for general a, both branches (series and continued fraction); PyTorch's special
values; the x derivative by gradcheck; the unimplemented a derivative; broadcasting."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck

F64 = tgrad.float64
X = np.array([1e-3, 0.1, 0.5, 1.0, 2.5, 7.0, 20.0, 80.0])


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _simpson(f: np.ndarray, h: float) -> float:
    return h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())


def _p_quadrature(a: float, x: float) -> float:
    """P(a, x) by Simpson's rule after t = v^m, m = ceil(5 / a): the integrand
    m v^(m a - 1) exp(-v^m) / Gamma(a) on [0, x^(1/m)] is smooth (no t^(a-1) kink at 0)."""
    m = math.ceil(5 / a)
    v = np.linspace(0.0, x ** (1 / m), 200001)
    return _simpson(m * v ** (m * a - 1) * np.exp(-v ** m), v[1] - v[0]) / math.gamma(a)


def test_closed_forms():
    np.testing.assert_allclose(tgrad.igamma(_t(np.ones(8)), _t(X)).numpy(), -np.expm1(-X),
                               rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(tgrad.special.gammainc(_t(0.5), _t(X)).numpy(),
                               [math.erf(math.sqrt(v)) for v in X], rtol=1e-13)
    for n in (2, 5, 30):
        q = np.exp(-X) * sum(X ** k / math.factorial(k) for k in range(n))  # Poisson tail
        np.testing.assert_allclose(tgrad.igammac(_t(float(n)), _t(X)).numpy(), q,
                                   rtol=1e-12, atol=1e-300)
        np.testing.assert_allclose(tgrad.igamma(_t(float(n)), _t(X)).numpy(), 1 - q,
                                   rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("a", [0.3, 1.7, 4.2, 12.5])
def test_general_a_against_quadrature(a):
    xs = np.array([0.2, 1.0, a, a + 3.0])  # both sides of the x = a + 1 switch
    want = np.array([_p_quadrature(a, v) for v in xs])
    got = tgrad.special.gammainc(_t(a), _t(xs)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tgrad.special.gammaincc(_t(a), _t(xs)).numpy(), 1 - want,
                               rtol=1e-8, atol=1e-12)


def test_special_values_broadcasting_float32():
    a = _t([0.0, -1.0, 2.0, 1.0, 2.0, np.inf, np.nan])
    x = _t([1.0, 1.0, 0.0, np.inf, -1.0, 3.0, 1.0])
    got = tgrad.igamma(a, x).numpy()
    np.testing.assert_array_equal(got, [1.0, np.nan, 0.0, 1.0, np.nan, 0.0, np.nan])
    np.testing.assert_array_equal(tgrad.igammac(a, x).numpy(),
                                  [0.0, np.nan, 1.0, 0.0, np.nan, 1.0, np.nan])
    out = tgrad.igamma(_t([[1.0], [2.0]]), _t([0.5, 1.5, 3.0]))  # (2, 1) with (3,)
    assert out.shape == (2, 3)
    f32 = tgrad.igamma(tgrad.tensor([2.0]), tgrad.tensor([1.5]))
    assert f32.dtype is tgrad.float32
    np.testing.assert_allclose(f32.numpy(), 1 - np.exp(-1.5) * 2.5, rtol=1e-6)


def test_derivatives():
    a = _t([0.7, 2.0, 5.0])
    x = _t([0.4, 2.5, 9.0], requires_grad=True)
    assert gradcheck(lambda v: tgrad.igamma(a, v), (x,))
    assert gradcheck(lambda v: tgrad.igammac(a, v), (x,))
    aa = _t([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative with respect to the first"):
        tgrad.igamma(aa, _t([1.0])).sum().backward()
    with pytest.raises(RuntimeError, match="expected floating point"):
        tgrad.igamma(tgrad.tensor([1]), tgrad.tensor([1]))


def _poisson_tails(a: int, x: float) -> tuple[float, float]:
    """(P, Q) for integer a: P = e^-x sum_{k>=a} x^k / k!, Q = e^-x sum_{k<a} x^k / k!, each
    summed directly (neither is 1 minus the other): the terms relative to the one at
    m = floor(x) by the recurrence t_(k+1) = t_k x / (k + 1), out to 1e-300 on both sides,
    math.fsum, and normalised by their total (which is e^x exactly)."""
    m = int(x)
    terms = {m: 1.0}
    t, k = 1.0, m
    while t > 1e-300:
        t *= x / (k + 1)
        k += 1
        terms[k] = t
    t, k = 1.0, m
    while t > 1e-300 and k > 0:
        t *= k / x
        k -= 1
        terms[k] = t
    total = math.fsum(terms.values())
    above = math.fsum(v for k, v in terms.items() if k >= a)
    below = math.fsum(v for k, v in terms.items() if k < a)
    return above / total, below / total


@pytest.mark.parametrize("a", [25, 300, 5000, 100000])
def test_large_a_uniform_expansion_against_poisson_sums(a):
    # Temme's expansion where a > 20 and 0.3 <= x/a <= 2.2 (the loops need O(sqrt a) terms
    # there), the loops just outside; both tails to 3e-13 relative (tails of 1e-125 and
    # smaller included)
    ratios = [0.25, 0.3, 0.7, 0.99, 1.0, 1.0 + 1e-9, 1.01, 1.3, 2.2, 2.3]
    xs = np.array([a * r for r in ratios])
    p = tgrad.special.gammainc(_t(np.full(len(xs), float(a))), _t(xs)).numpy()
    q = tgrad.special.gammaincc(_t(np.full(len(xs), float(a))), _t(xs)).numpy()
    for x, pp, qq in zip(xs, p, q):
        want_p, want_q = _poisson_tails(a, float(x))
        for got, want in ((pp, want_p), (qq, want_q)):
            if want > 1e-300:
                np.testing.assert_allclose(got, want, rtol=3e-13, atol=0)


def test_large_a_float32():
    a = _t([1e4, 1e6]).float()
    np.testing.assert_allclose(tgrad.special.gammainc(a, a).numpy(),
                               [_poisson_tails(int(v), v)[0] for v in (1e4, 1e6)], rtol=1e-5)


def _e1(x: float) -> float:
    """The exponential integral E1(x) = -gamma - log x - sum_k (-x)^k / (k k!), x <= 2."""
    total, term = 0.0, 1.0
    for k in range(1, 60):
        term *= -x / k
        total += term / k
    return -0.5772156649015329 - math.log(x) - total


def test_small_a_upper_tail_and_denormal_a():
    # Q(a, x) = a E1(x) + O(a^2 log^2 x) for tiny a: the upper tail must not come out as
    # 1 - P (which gave -2.4e-14 for Q(1e-300, 0.5) and 9e-16 for Q(1e-20, 1e-10)); PyTorch
    # (Cephes' igamc_series) computes it directly
    for a in (1e-300, 1e-20, 1e-12):
        xs = np.array([1e-10, 0.3, 0.5, 0.8, 1.0])
        got = tgrad.special.gammaincc(_t(np.full(5, a)), _t(xs)).numpy()
        np.testing.assert_allclose(got, [a * _e1(v) for v in xs], rtol=1e-9, atol=0)
    # moderate a where the upper tail is small: against a quadrature of the upper integral
    for a, x in ((0.05, 0.8), (0.02, 0.3), (0.3, 1.0)):
        s = np.linspace(0.0, 60.0, 600001)
        want = _simpson((x + s) ** (a - 1) * np.exp(-(x + s)), s[1] - s[0]) / math.gamma(a)
        got = tgrad.special.gammaincc(_t(a), _t(x)).item()
        np.testing.assert_allclose(got, want, rtol=1e-9)
    # a subnormal a: P = 1 - O(a) (it was inf / NaN: the series' first term 1/a overflowed)
    sub = _t([5e-324, 1e-320, 1e-310])
    for x in (1e-10, 0.5, 0.999):
        np.testing.assert_allclose(tgrad.special.gammainc(sub, _t(x)).numpy(), 1.0, rtol=1e-15)
    np.testing.assert_allclose(tgrad.special.gammaincc(_t(1e-310), _t(0.5)).item(),
                               1e-310 * _e1(0.5), rtol=1e-6)


def _record_active(monkeypatch) -> list:
    """The number of active elements at each convergence check (the _set_aside calls of
    the composite's loops and of their NumPy form, which the CPU forward runs)."""
    from tgrad.backends import _numpy_igamma as nig
    from tgrad.ops import incomplete_gamma as ig
    active = []
    set_aside, set_aside_np = ig._set_aside, nig._set_aside
    monkeypatch.setattr(ig, "_set_aside", lambda ok, *rest: active.append(ok.numel())
                        or set_aside(ok, *rest))
    monkeypatch.setattr(nig, "_set_aside", lambda ok, *rest: active.append(ok.size)
                        or set_aside_np(ok, *rest))
    return active


def test_each_element_stops_at_its_own_converged_check(monkeypatch):
    # Once converged, the continued fraction's step ratio d c wanders within two ulps of 1:
    # checked all at once, some of 20000 elements were always off and the loop ran all 300
    # terms (19 checks at a = 1). Each element now stops at its first passing check (and
    # is set aside); the same holds for the fraction's a-derivative in Gamma's rsample
    # gradient.
    from tgrad.distributions.gamma import _dp_da
    from tgrad.ops import incomplete_gamma as ig
    active = _record_active(monkeypatch)
    x = np.random.default_rng(0).uniform(2.0, 60.0, 20000)
    for a, q in ((1.0, np.exp(-x)), (3.0, np.exp(-x) * (1 + x + x * x / 2))):
        active.clear()
        np.testing.assert_allclose(tgrad.special.gammaincc(_t(a), _t(x)).numpy(), q,
                                   rtol=1e-13)
        assert 0 < len(active) < ig._TERMS // ig._CHECK_EVERY, (a, len(active))
    # dP/da (Gamma's rsample gradient), continued fraction branch, against central
    # differences of Q (P = 1 - Q would cancel out there)
    active.clear()
    d = _dp_da(_t(np.full(20000, 2.0)), _t(x + 1.0))
    assert len(active) < ig._TERMS // ig._CHECK_EVERY, len(active)  # both loops together
    h = 1e-5
    fd = -(tgrad.special.gammaincc(_t(2.0 + h), _t(x + 1.0)).numpy()
           - tgrad.special.gammaincc(_t(2.0 - h), _t(x + 1.0)).numpy()) / (2 * h)
    np.testing.assert_allclose(d.numpy(), fd, rtol=1e-6)


def test_converge_sets_elements_aside_at_their_first_passing_check(monkeypatch):
    # v counts the terms (v = n after term n); element e converges once v >= stop[e]: it is
    # set aside at the first check (every _CHECK_EVERY terms) at or after that, with v
    # equal to that check's n; an element that never converges keeps v = _TERMS - 1.
    # State entries broadcast (a 0-d one included); the result has their shape.
    from tgrad.ops import incomplete_gamma as ig
    every, last = ig._CHECK_EVERY, ig._TERMS - 1
    stop = np.array([[5.0, 2 * every + 1, 1e9], [every, 1.0, 3 * every - 1]])
    want = np.array([[every, 3 * every, last], [every, every, 3 * every]], dtype=np.float64)

    def step(n: int, s: dict) -> None:
        s["v"] = s["v"] + s["one"]

    active = _record_active(monkeypatch)
    (v,) = ig.converge(step, {"v": _t(0.0), "one": _t(1.0), "stop": _t(stop)},
                       lambda s: s["v"] >= s["stop"], ("v",))
    np.testing.assert_array_equal(v.numpy(), want)
    assert active[:4] == [6, 3, 3, 1], active  # 3 set aside at the first check, 2 at the third
    assert len(active) == last // every
    # every element done at one check: no reassembly needed, same answer
    (v,) = ig.converge(step, {"v": _t([0.0, 0.0]), "one": _t(1.0), "stop": _t(3.0)},
                       lambda s: s["v"] >= s["stop"], ("v",))
    np.testing.assert_array_equal(v.numpy(), [every, every])
    # no elements
    (v,) = ig.converge(step, {"v": _t(np.zeros((0, 3))), "one": _t(1.0), "stop": _t(3.0)},
                       lambda s: s["v"] >= s["stop"], ("v",))
    assert v.shape == (0, 3)


def test_converge_is_differentiable_through_the_set_aside_values():
    # v = w^n at the check where element e stops (n = _CHECK_EVERY or 2 _CHECK_EVERY):
    # d v / d w = n w^(n-1), through the compaction's indexing and the reassembly
    from tgrad.ops import incomplete_gamma as ig
    every = ig._CHECK_EVERY
    w = _t([1.01, 0.99, 1.02], requires_grad=True)
    stop = _t([1.0, 2 * every, 1.0])

    def step(n: int, s: dict) -> None:
        s["v"], s["n"] = s["v"] * s["w"], s["n"] + 1.0

    (v,) = ig.converge(step, {"v": _t(1.0), "w": w, "n": _t(0.0), "stop": stop},
                       lambda s: s["n"] >= s["stop"], ("v",))
    n = np.array([every, 2 * every, every])
    wn = w.detach().numpy()
    np.testing.assert_allclose(v.detach().numpy(), wn ** n, rtol=1e-14)
    (g,) = tgrad.autograd.grad(v.sum(), w)
    np.testing.assert_allclose(g.numpy(), n * wn ** (n - 1), rtol=1e-13)


def _bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    """The same float64 bits (NaN: any NaN)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    same = (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (np.flatnonzero(~same)[:5], got[~same][:5], want[~same][:5])


def _igamma_inputs() -> list:
    """(a, x) pairs reaching every branch: the series and the continued fraction (bench-like
    and log-uniform over 1e-13 .. 3e3), Cephes' small-a upper series, Temme's uniform region
    (and just outside it), integer / half-integer points, and the special values."""
    rng = np.random.default_rng(3)
    n = 3001  # (odd)
    sp = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 5e-324, 1e-310, 1.0, 1e300, 2.5])
    spa, spx = np.meshgrid(sp, sp)
    big = np.exp(rng.uniform(np.log(15.0), 12.0, n))
    return [(np.abs(rng.standard_normal(n)) + 0.1, np.abs(rng.standard_normal(n)) + 0.1),
            (np.exp(rng.uniform(-30, 8, n)), np.exp(rng.uniform(-30, 8, n))),
            (rng.uniform(0, 1.2, n) * 10.0 ** rng.integers(-12, 0, n), rng.uniform(0, 1.2, n)),
            (big, big * rng.uniform(0.2, 2.5, n)),
            (rng.integers(0, 40, n).astype(np.float64), rng.integers(0, 90, n) / 2),
            (spa.ravel(), spx.ravel())]


@pytest.mark.parametrize("upper", [False, True])
def test_cpu_forward_is_the_composite_bit_for_bit(upper):
    # the CPU forward (tgrad.backends._numpy_igamma: each element through its own branch)
    # gives the composite's float64 bits (_regularized, the cuda path), and float32's
    # is that rounded once
    from tgrad.ops import incomplete_gamma as ig
    fn = tgrad.special.gammaincc if upper else tgrad.special.gammainc
    for a, x in _igamma_inputs():
        want = ig._regularized(_t(a), _t(x), upper).numpy()
        _bits_equal(fn(_t(a), _t(x)).numpy(), want)
        with np.errstate(over="ignore"):  # (1e300 -> inf)
            a32, x32 = a.astype(np.float32), x.astype(np.float32)
        want32 = ig._regularized(_t(a32), _t(x32), upper).numpy().astype(np.float32)
        got32 = fn(tgrad.tensor(a32), tgrad.tensor(x32)).numpy()
        np.testing.assert_array_equal(got32, want32)


def test_cpu_forward_layouts_and_empty():
    # broadcast (stride-0) and transposed operands, a 0-d one, empty tensors
    a = np.abs(np.random.default_rng(4).standard_normal((7, 5))) + 0.1
    x = np.array([0.05, 0.7, 1.3, 4.0, 30.0])
    got = tgrad.special.gammaincc(_t(a).T, _t(x)[:, None]).numpy()
    want = tgrad.special.gammaincc(_t(np.ascontiguousarray(a.T)),
                                   _t(np.repeat(x[:, None], 7, 1))).numpy()
    _bits_equal(got, want)
    assert tgrad.special.gammainc(_t(2.0), _t(x)).shape == (5,)
    assert tgrad.special.gammainc(_t(np.zeros((0, 3))), _t(1.0)).shape == (0, 3)
    e = _t(np.zeros((2, 0)), requires_grad=True)
    y = tgrad.special.gammaincc(_t(1.0), e)
    y.sum().backward()
    assert y.shape == (2, 0) and e.grad.shape == (2, 0)
