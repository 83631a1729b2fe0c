"""Special functions (tgrad.ops.special, tgrad.ops.erfs, tgrad.special) against independent
float64 references: math.lgamma, closed forms, and a direct-sum + Euler-Maclaurin reference
for digamma / polygamma written here; math.erf / math.erfc, decimal exponentials and the
Mills-ratio continued fraction for the error-function family."""

from __future__ import annotations

import decimal
import inspect
import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.ops import special as special_ops

F64 = tgrad.float64
EULER = 0.5772156649015329
ZETA3 = 1.2020569031595942
RNG = np.random.default_rng(0)
POS = np.concatenate([RNG.uniform(1e-6, 1e-3, 40), RNG.uniform(0.0, 3.0, 300),
                      RNG.uniform(0.5, 10.0, 300), RNG.uniform(10, 1e3, 60),
                      [1e-300, 0.5, 1.0, 2.0, 2.5, 8.0, 1e5, 1e10, 1e100]])
NEG = -RNG.uniform(0.0, 30.0, 400)
NEG = NEG[np.abs(NEG - np.round(NEG)) > 1e-3]
_B = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30), Fraction(5, 66),
      Fraction(-691, 2730)]


def _ref_terms(n: int, x: float) -> list:
    """The terms whose exact sum is psi^(n)(x) / ((-1)^(n+1) n!) for n >= 1 (Hurwitz zeta
    sum_k (x + k)^-(n+1)), or psi(x) for n = 0: the sum up to x + k >= 60, then the
    Euler-Maclaurin tail (6 Bernoulli terms)."""
    s, m = n + 1, max(0, math.ceil(60 - x))
    z = x + m
    if n == 0:
        return ([-1 / (x + k) for k in range(m)] + [math.log(z), -0.5 / z]
                + [-float(b / (2 * j)) * z ** (-2 * j) for j, b in enumerate(_B, 1)])
    return ([(x + k) ** -s for k in range(m)] + [z ** (1 - s) / (s - 1), z ** -s / 2]
            + [float(b / math.factorial(2 * j)) * math.prod(range(s, s + 2 * j - 1))
               * z ** (-s - 2 * j + 1) for j, b in enumerate(_B, 1)])


def ref_polygamma(n: int, xs) -> tuple:
    """(psi^(n)(x), sum of the terms' magnitudes: the scale of the rounding errors)."""
    f = 1.0 if n == 0 else (-1) ** (n + 1) * math.factorial(n)
    terms = [_ref_terms(n, float(x)) for x in xs]
    return (np.array([f * math.fsum(t) for t in terms]),
            np.array([abs(f) * math.fsum(abs(v) for v in t) for t in terms]))


def _run(fn, x, *args):
    """fn(float64 tensor of x, *args) as an array."""
    return fn(tgrad.tensor(np.asarray(x), dtype=F64), *args).numpy()


def _poly(n: int, x) -> np.ndarray:
    return tgrad.polygamma(n, tgrad.tensor(np.asarray(x), dtype=F64)).numpy()


# ------------------------------------------------------------------------------ lgamma
def test_lgamma_vs_math_lgamma():
    ref = np.vectorize(math.lgamma)(POS)
    ours = _run(tgrad.lgamma, POS)
    # math.lgamma is accurate to ~1e-15 absolute (not relative) below 3, where its value is
    # small; the near-root test below checks the relative accuracy there
    far = np.abs(ref) > 0.5
    np.testing.assert_allclose(ours[far], ref[far], rtol=1e-14)
    np.testing.assert_allclose(ours, ref, rtol=1e-14, atol=1.5e-15)
    ref_n = np.vectorize(math.lgamma)(NEG)  # absolute ~1e-15 near the negative roots
    np.testing.assert_allclose(_run(tgrad.lgamma, NEG), ref_n, rtol=1e-14, atol=2e-15)


def test_lgamma_closed_forms_and_near_roots():
    n = np.arange(1, 171)
    np.testing.assert_allclose(_run(tgrad.lgamma, n.astype(float)),
                               [math.log(math.factorial(k - 1)) for k in n], rtol=1e-15)
    half = _run(tgrad.lgamma, [0.5, -0.5, -1.5])
    np.testing.assert_allclose(half, [0.5 * math.log(math.pi), math.log(2 * math.sqrt(math.pi)),
                                      math.log(4 / 3 * math.sqrt(math.pi))], rtol=1e-15)
    e = np.array([1e-3, -1e-3, 3e-5, -7e-7, 1e-9, -1e-12])
    e = (1 + e) - 1  # exact: the offsets of the float64 inputs 1 + e (and 2 + e below)
    z2, z4, z5 = math.pi ** 2 / 6, math.pi ** 4 / 90, 1.0369277551433699
    near1 = -EULER * e + z2 * e ** 2 / 2 - ZETA3 * e ** 3 / 3 + z4 * e ** 4 / 4 - z5 * e ** 5 / 5
    np.testing.assert_allclose(_run(tgrad.lgamma, 1 + e), near1, rtol=1e-14)
    e = (2 + e) - 2
    near2 = ((1 - EULER) * e + (z2 - 1) * e ** 2 / 2 - (ZETA3 - 1) * e ** 3 / 3
             + (z4 - 1) * e ** 4 / 4 - (z5 - 1) * e ** 5 / 5)
    np.testing.assert_allclose(_run(tgrad.lgamma, 2 + e), near2, rtol=1e-14)
    tiny = np.array([1e-300, 5e-324, 1e-20])
    np.testing.assert_allclose(_run(tgrad.lgamma, tiny), -np.log(tiny), rtol=1e-15)


def test_lgamma_special_values():
    x = [0.0, -0.0, -1.0, -2.0, -1e300, math.inf, -math.inf, math.nan]
    np.testing.assert_array_equal(_run(tgrad.lgamma, x), [math.inf] * 7 + [math.nan])


def test_lgamma_negative_subnormal_and_tiny():
    # lgamma(x) = -log|x| - gamma x + ... for tiny x: pi r rounded to a subnormal cost the
    # reflection ~5% (lgamma(-5e-324) was 744.486, -log(5e-324) = 744.440)
    x = np.array([-5e-324, -1e-310, -2.5e-320, -1e-300, -1e-200])
    np.testing.assert_allclose(_run(tgrad.lgamma, x), -np.log(-x), rtol=1e-15)
    x32 = np.array([-1e-45, -1e-40, -3e-39, -1e-30], np.float32)  # float32 subnormals too
    ours = tgrad.lgamma(tgrad.tensor(x32)).numpy()
    assert ours.dtype == np.float32
    np.testing.assert_allclose(ours, -np.log(-x32.astype(np.float64)), rtol=1e-7)


def test_float32_lgamma_digamma_polygamma_within_an_ulp():
    # float32 is computed in float64 and rounded once: in float32 the reflection cancelled
    # (lgamma(-2.5) 16 ulp off, ~77 near the root -2.4566; digamma ~45 ulp near -4.65)
    x = np.concatenate([RNG.uniform(-5.0, 20.0, 300), [-2.5, -2.4626508, -4.648369, -0.5,
                                                       1.4616321, 2.0, 1.0]])
    x = x[np.abs(x - np.round(x)) > 1e-3].astype(np.float32)
    x64 = x.astype(np.float64)
    checks = [(tgrad.lgamma, np.vectorize(math.lgamma)(x64), 1e-15),
              (tgrad.digamma, ref_polygamma(0, x64)[0], 0.0),
              (lambda t: tgrad.polygamma(1, t), ref_polygamma(1, x64)[0], 0.0)]
    for fn, ref, atol in checks:
        ours = fn(tgrad.tensor(x)).numpy()
        assert ours.dtype == np.float32
        # one float32 ulp of the float64 reference (math.lgamma: ~1e-15 absolute)
        assert np.all(np.abs(ours - ref) <= np.spacing(np.abs(ref).astype(np.float32)) + atol)
    np.testing.assert_array_equal(tgrad.lgamma(tgrad.tensor([-2.5], dtype=tgrad.float32)),
                                  # log(8 sqrt(pi) / 15) = lgamma(-2.5), rounded to float32
                                  np.float32([math.log(8 * math.sqrt(math.pi) / 15)]))


# ------------------------------------------------------------------------------ psi^(n)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma_vs_series_reference(n):
    for xs in (POS[(POS > 1e-5) & (POS < 1e3)], NEG):
        ref, scale = ref_polygamma(n, xs)
        ours = _poly(n, xs) if n else _run(tgrad.digamma, xs)
        # relative 1e-14, or the reference's own rounding where its terms cancel
        assert np.all(np.abs(ours - ref) <= 1e-14 * np.abs(ref) + 2e-15 * scale), n


def test_digamma_polygamma_closed_forms():
    ln2 = math.log(2.0)
    cases = [(0, 1.0, -EULER), (0, 0.5, -EULER - 2 * ln2), (0, -0.5, -EULER - 2 * ln2 + 2),
             (1, 1.0, math.pi ** 2 / 6), (1, 0.5, math.pi ** 2 / 2),
             (1, -0.5, math.pi ** 2 / 2 + 4), (2, 1.0, -2 * ZETA3),
             (3, 1.0, math.pi ** 4 / 15), (2, 0.5, -14 * ZETA3)]
    for n, x, v in cases:
        np.testing.assert_allclose(_poly(n, [x]), [v], rtol=2e-15, atol=1e-16)
    k = np.arange(1, 60)
    harmonic = [math.fsum(1 / j for j in range(1, m)) - EULER for m in k]
    np.testing.assert_allclose(_run(tgrad.digamma, k.astype(float)), harmonic, rtol=2e-15,
                               atol=1e-16)
    big = np.array([1e5, 1e10, 1e100])
    np.testing.assert_allclose(_run(tgrad.digamma, big),
                               np.log(big) - 0.5 / big - 1 / (12 * big ** 2), rtol=1e-15)
    for n in (1, 2, 4):
        lead = (-1) ** (n + 1) * math.factorial(n - 1) / big ** n * (1 + n / (2 * big))
        np.testing.assert_allclose(_poly(n, big), lead, rtol=1e-9)


def test_digamma_polygamma_special_values():
    x = [0.0, -0.0, -1.0, -2.0, math.inf, -math.inf, math.nan]
    nan, inf = math.nan, math.inf
    np.testing.assert_array_equal(_run(tgrad.digamma, x), [-inf, inf, nan, nan, inf, nan, nan])
    np.testing.assert_array_equal(_poly(1, x), [inf] * 4 + [0.0, nan, nan])
    np.testing.assert_array_equal(_poly(2, x), [-inf] * 4 + [0.0, nan, nan])
    np.testing.assert_array_equal(_poly(3, x), [inf] * 4 + [0.0, nan, nan])
    assert _run(tgrad.digamma, [5e-324])[0] == -inf


def _decimal_polygamma(n: int, x: float) -> float:
    """psi^(n)(x), n >= 1, in 60-digit decimal arithmetic from x's exact binary value:
    (-1)^(n+1) n! zeta(n + 1, x), the sum up to z = x + m >= 4 (n + 1) + 60, then the
    Euler-Maclaurin tail (6 Bernoulli terms: each ~ ((n + 1) / (2 pi z))^2 times the one
    before, < 1e-17 relative in all), rounded once to float (+-inf past its range)."""
    with decimal.localcontext() as ctx:
        ctx.prec, ctx.Emax, ctx.Emin = 60, 10 ** 6, -10 ** 6
        s, q = n + 1, decimal.Decimal(x)
        m = max(0, math.ceil(4 * s + 60 - x))
        z = q + m
        zeta = sum(1 / (q + k) ** s for k in range(m)) + 1 / (z ** (s - 1) * (s - 1))
        zeta += 1 / (2 * z ** s)
        for j, b in enumerate(_B, 1):
            c = decimal.Decimal(b.numerator) / (b.denominator * math.factorial(2 * j))
            zeta += c * math.prod(range(s, s + 2 * j - 1)) / z ** (s + 2 * j - 1)
        return float((-1) ** (n + 1) * math.factorial(n) * zeta)


def test_polygamma_large_orders_vs_decimal_reference():
    # n! passes float range from n = 171, and the terms z^-(n+1) leave it for large x long
    # before psi^(n)(x) does (polygamma(100, 1e4) ~ -9e-245 had come out -0.0;
    # polygamma(170, x) raised OverflowError): the sum is scaled by 2^(e (n+1)), e ~ log2 x
    xs = [1e-300, 3e-5, 0.37, 1.0, 2.0, 7.3, 30.0, 150.0, 300.0, 1e4, 1e100, 1e300,
          -0.3, -2.7, -30.6]
    for n in (20, 100, 149, 170, 171, 200, 201, 500):
        ours = _poly(n, xs)
        for x, got in zip(xs, ours):
            ref = _decimal_polygamma(n, x)
            if math.isinf(ref) or ref == 0.0:
                assert got == ref, (n, x, got, ref)
            else:  # each term's x + k rounds once: up to (n + 1) ulp of the sum
                assert abs(got - ref) <= 2 * (n + 1) * 2.0 ** -53 * abs(ref), (n, x, got, ref)


def test_polygamma_largest_order_and_past_it():
    # n <= 1000 (special.POLYGAMMA_MAX_N): psi^(1000)(x) is finite only for x near n/e
    # (there to (n + 1) ulp), inf below, 0 above; larger n raise (they had run n steps of
    # the recurrence and ~n^3 big-int steps for the reflection's polynomial: 217 s at 10^4)
    xs = [300.0, 367.9, 420.0, 2.5, 1e4, -2.5]
    for x, got in zip(xs, _poly(1000, xs)):
        ref = _decimal_polygamma(1000, x)
        if math.isinf(ref) or ref == 0.0:
            assert got == ref, (x, got, ref)
        else:
            assert abs(got - ref) <= 2 * 1001 * 2.0 ** -53 * abs(ref), (x, got, ref)
    x = tgrad.tensor([367.9], dtype=F64, requires_grad=True)
    (g,) = tgrad.autograd.grad(tgrad.polygamma(1000, x), x)  # psi^(1001), past the limit
    ref = _decimal_polygamma(1001, 367.9)
    assert abs(g.item() - ref) <= 2 * 1002 * 2.0 ** -53 * abs(ref)
    with pytest.raises(RuntimeError, match=r"polygamma: n = 1001 is past the largest order "
                                           r"supported, 1000"):
        tgrad.polygamma(1001, x)
    with pytest.raises(ValueError, match=r"polygamma\(\): argument 'n' \(position 1\) is "
                                         r"10+, outside the int64 range"):
        tgrad.polygamma(10 ** 30, x)
    # the reflection's polynomial P_n: built up to n = 163, past float range from 164 on
    assert special_ops.polygamma_reflection_terms(163) is not None
    with pytest.raises(OverflowError):
        float(max(map(abs, special_ops._cot_derivative(164))))
    assert special_ops.polygamma_reflection_terms(164) is None


def test_polygamma_large_orders_at_negative_half_integers():
    # past float range but where the nearest poles' terms cancel: at a half-integer with n
    # even (n + 1 odd), P_n(cot) = P_n(0) = 0 and psi^(n)(x) = psi^(n)(1 - x), finite; with n
    # odd they add up: +inf
    for n in (170, 200):
        np.testing.assert_array_equal(_poly(n, [-2.5, -0.5, -40.5]), _poly(n, [3.5, 1.5, 41.5]))
        assert np.isfinite(_poly(n, [-2.5])).all()
    np.testing.assert_array_equal(_poly(171, [-2.5, -0.5]), [math.inf, math.inf])


def test_digamma_polygamma_negative_subnormal_are_inf():
    # psi^(n)(x) ~ (-1)^(n+1) n! / x^(n+1) = +n! / |x|^(n+1) past the float range for a
    # negative subnormal x: +inf (1 / tan(pi x) overflowed, and the polynomial in it gave NaN)
    x = [-5e-324, -1e-310, -4e-309]  # (|x| < 1 / max: digamma ~ -1/x overflows too)
    np.testing.assert_array_equal(_run(tgrad.digamma, x), [math.inf] * 3)
    for n in (1, 2, 3):
        np.testing.assert_array_equal(_poly(n, x), [math.inf] * 3)
    x32 = tgrad.tensor([-1e-40, -1e-45], dtype=tgrad.float32)
    assert tgrad.digamma(x32).tolist() == [math.inf] * 2
    assert tgrad.polygamma(2, x32).tolist() == [math.inf] * 2
    # a normal tiny x keeps its finite value -1/x - gamma
    np.testing.assert_allclose(_run(tgrad.digamma, [-1e-300, -1e-20]), [1e300, 1e20],
                               rtol=1e-15)


# ------------------------------------------------------------------------------ erf
def test_erf_float64_within_an_ulp_from_1_to_2_5():
    # math.erf (libm, ~0.6 ulp here) as the reference; tgrad's Chebyshev series on [1, 2.5)
    # was 5 ulp off at 1 (erf(1) = 0.8427007929497154 against 0.8427007929497149)
    x = np.concatenate([np.linspace(1.0, 2.5, 151), RNG.uniform(1.0, 2.5, 200),
                        [np.nextafter(1.0, 0.0), np.nextafter(2.5, 0.0)]])
    x = np.concatenate([x, -x])
    ours = _run(tgrad.erf, x)
    ref = np.vectorize(math.erf)(x)
    assert np.all(np.abs(ours - ref) <= np.spacing(np.abs(ref)))
    # 40-digit values (mpmath.erf) rounded to float64: erf(1), erf(1.5), erf(2)
    np.testing.assert_array_equal(_run(tgrad.erf, [1.0, 1.5, 2.0, -1.0]),
                                  [0.8427007929497149, 0.9661051464753108, 0.9953222650189527,
                                   -0.8427007929497149])


# ------------------------------------------------------------------------------ erfinv
def test_erfinv_inverts_erf():
    y = np.concatenate([RNG.uniform(-1, 1, 400), [0.5, -0.25, 1e-300, 0.99, -0.9999]])
    x = _run(tgrad.erfinv, y)
    np.testing.assert_allclose(np.vectorize(math.erf)(x), y, rtol=0, atol=1e-15)
    np.testing.assert_allclose(_run(tgrad.erfinv, [0.5, 0.0]), [0.4769362762044699, 0.0],
                               rtol=1e-15)
    t = 1 - (1 - 10.0 ** -np.arange(3, 17))  # tails: erfc(x) = 1 - y (exact)
    np.testing.assert_allclose(np.vectorize(math.erfc)(_run(tgrad.erfinv, 1 - t)), t,
                               rtol=1e-12)
    np.testing.assert_array_equal(_run(tgrad.erfinv, [1.0, -1.0, 1.5, -2.0, math.nan, -0.0]),
                                  [math.inf, -math.inf, math.nan, math.nan, math.nan, -0.0])
    assert np.signbit(_run(tgrad.erfinv, [-0.0])[0])


def _upper_tail(x: float) -> float:
    """Q(x) = 1 - Phi(x) for x >= 3: phi(x) (exp in 40-digit decimals, so x^2 is exact) times
    the Mills ratio by its continued fraction 1 / (x + 1 / (x + 2 / (x + 3 / ...)))."""
    with localcontext() as ctx:
        ctx.prec = 40
        phi = (-(Decimal(x) ** 2) / 2).exp() / (2 * Decimal(math.pi)).sqrt()
    return float(phi) * _mills(x)


def _mills(x: float) -> float:
    r = x
    for k in range(400, 0, -1):
        r = x + k / r
    return 1 / r


def test_erfc_erfcx():
    x = np.concatenate([RNG.uniform(-6, 6, 300), RNG.uniform(4, 26.5, 100), [0.0, 0.5, 2.0, 4.0]])
    np.testing.assert_allclose(_run(tgrad.erfc, x), np.vectorize(math.erfc)(x), rtol=2e-15)
    with localcontext() as ctx:
        ctx.prec = 40
        ref = [float(Decimal(math.erfc(v)) * (Decimal(v) ** 2).exp()) for v in x]
    np.testing.assert_allclose(_run(tgrad.special.erfcx, x), ref, rtol=2e-15)
    big = np.array([1e3, 1e8, 1e200])
    np.testing.assert_allclose(_run(tgrad.special.erfcx, big), 1 / (big * math.sqrt(math.pi))
                               * (1 - 0.5 / big ** 2 + 0.75 / big ** 4), rtol=1e-15)
    inf, nan = math.inf, math.nan
    np.testing.assert_array_equal(_run(tgrad.erfc, [inf, -inf, nan, 30.0, -30.0]),
                                  [0.0, 2.0, nan, 0.0, 2.0])
    np.testing.assert_array_equal(_run(tgrad.special.erfcx, [inf, -inf, nan, -30.0]),
                                  [0.0, inf, nan, inf])


# log|Gamma(x)| at and next to lgamma's negative roots (and a few other points of (-20, -2)),
# by mpmath at 50 digits: float(mpmath.log(abs(mpmath.gamma(mpmath.mpf(x)))))
LGAMMA_NEAR_ROOTS = [
    (-19.999999999999996, -9.064551793876099),
    (-17.000000000000004, -0.2340087832595242),
    (-16.999999999999996, -0.23400878325950386),
    (-16.000000000000046, 0.03425520333503583),
    (-15.999999999999952, -0.0034851246475472554),
    (-15.5, -28.133024629191414),
    (-15.000000000000764, 0.0011552549067268103),
    (-10.999999999999988, 14.515993852508151),
    (-10.99999997494789, 7.92108817813105e-09),
    (-10.000000275573013, 1.2668051387565237e-09),
    (-6.999801507890639, 4.525967654362372e-12),
    (-6.999801507890638, 5.313011065735902e-14),
    (-6.001385294453156, -6.892410931887324e-13),
    (-6.001385294453155, -4.6433836942838004e-14),
    (-5.998607480080876, 3.9894309784344193e-13),
    (-5.998607480080875, -2.3721063667118474e-13),
    (-5.008218168322594, -1.0414877920967533e-13),
    (-5.0082181683225935, 5.4188509265538106e-15),
    (-4.991544640560049, 1.2118818570529118e-13),
    (-4.991544640560048, 1.7683619350849613e-14),
    (-4.039361839740538, -2.945930505051872e-14),
    (-4.039361839740537, -5.664578074060335e-15),
    (-3.9552942848585984, 8.789393144349778e-15),
    (-3.955294284858598, -4.14382750757705e-16),
    (-3.1435808883499803, -1.7579854183617677e-15),
    (-3.14358088834998, 1.6978655906121085e-15),
    (-2.999999999999999, 32.86559955876921),
    (-2.996, 3.734749966953644),
    (-2.7486776467274128, 0.00191427796843175),
    (-2.747682646727413, 1.0234931857070284e-15),
    (-2.7476826467274127, 1.733509244024501e-16),
    (-2.679, -0.09167320727712147),
    (-2.6107208684441447, -0.11862999102044386),
    (-2.534, -0.08822577207474436),
    (-2.457024738220801, -6.168712140884665e-16),
    (-2.4570247382208006, 5.619192358950097e-17),
    (-2.4, 0.10258361596827728),
    (-2.0000000000000004, 34.657359027997266),
]


def test_lgamma_near_its_negative_roots():
    # the reflection's terms cancel there (up to 1e16 ulp at the roots, 2884 ulp on a dense
    # sweep of (-40, 0)); the expansion about the roots keeps a few ulp
    x = np.array([v for v, _ in LGAMMA_NEAR_ROOTS])
    ref = np.array([r for _, r in LGAMMA_NEAR_ROOTS])
    got = _run(tgrad.lgamma, x)
    ulps = np.abs(got - ref) / np.spacing(np.abs(ref))
    assert ulps.max() <= 8, (x[np.argmax(ulps)], ulps.max())
    # float32: computed in float64, so correctly rounded but for ties
    x32 = x.astype(np.float32)
    x32 = x32[x32 != np.round(x32)]
    got32 = tgrad.lgamma(tgrad.tensor(x32)).numpy().astype(np.float64)
    ref32 = _run(tgrad.lgamma, x32.astype(np.float64))  # float64: <= 8 ulp of it, above
    assert np.all(np.abs(got32 - ref32) <= 0.5001 * np.spacing(np.abs(ref32).astype(np.float32)))
    t = tgrad.tensor([-2.4570247382208006, -2.61, -3.9, -5.0082], dtype=F64,
                     requires_grad=True)
    assert gradcheck(tgrad.lgamma, (t,))


def test_capture_paths_without_host_reads_match(monkeypatch):
    # While a CUDA graph is captured (host_reads_ok False) lgamma runs its near-root
    # expansion on every element and keeps it where needed, and erfcx's gradient its
    # continued fraction: the values must be the mpmath ones above, as on the normal path.
    # (Forced here on the CPU; capture itself needs a real GPU.)
    from tgrad.ops import erfs, special
    x = np.array([v for v, _ in LGAMMA_NEAR_ROOTS] + [-30.5, -1.5, 0.3, 7.0, -2.5])
    normal = _run(tgrad.lgamma, x)

    def erfcx_grad():
        t = tgrad.tensor([v for v, _ in ERFCX_GRAD], dtype=F64, requires_grad=True)
        tgrad.special.erfcx(t).sum().backward()
        return t.grad.numpy()

    normal_grad = erfcx_grad()
    for mod in (erfs, special):
        monkeypatch.setattr(mod, "host_reads_ok", lambda t: False)
    # (lgamma's composite, which the GPU runs: on the CPU a tensor's forward is NumPy's)
    monkeypatch.setattr(special, "_on_numpy", lambda t: False)
    np.testing.assert_array_equal(_run(tgrad.lgamma, x), normal)
    ref = np.array([r for _, r in LGAMMA_NEAR_ROOTS])
    got = _run(tgrad.lgamma, x)[:len(ref)]
    assert (np.abs(got - ref) / np.spacing(np.abs(ref))).max() <= 8
    np.testing.assert_array_equal(erfcx_grad(), normal_grad)
    np.testing.assert_allclose(normal_grad, [g for _, g in ERFCX_GRAD], rtol=3e-15)


# erfcx'(x) = 2 x erfcx(x) - 2/sqrt(pi), by mpmath at 60 digits:
# float(2*v*mpmath.exp(v*v)*mpmath.erfc(v) - 2/mpmath.sqrt(mpmath.pi)), v = mpmath.mpf(x)
ERFCX_GRAD = [
    (1.0, -0.27321201478389856),
    (2.0, -0.1067964618534896),
    (2.5, -0.07434734678979467),
    (3.0, -0.05437226000717287),
    (4.0, -0.032383506095021455),
    (5.0, -0.02133278976482631),
    (30.0, -0.0006258354105074841),
    (1000.0, -5.641887372654967e-07),
    (100000.0, -5.641895834631278e-11),
    (100000000.0, -5.641895835477562e-17),
    (-3.0, -97237.06150316462),
]


def test_erfcx_gradient_at_large_x():
    # 2 x erfcx(x) - 2/sqrt(pi) cancels for large x (5.5e-6 relative at 1e5, all digits
    # at 1e8 before): the continued fraction's tail from x = 2.5 on
    x = tgrad.tensor([v for v, _ in ERFCX_GRAD], dtype=F64, requires_grad=True)
    tgrad.special.erfcx(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [d for _, d in ERFCX_GRAD], rtol=3e-15)
    x = tgrad.tensor([1e300, math.inf], dtype=F64, requires_grad=True)
    tgrad.special.erfcx(x).sum().backward()  # the limit 0 (x^-2 underflows)
    assert x.grad.tolist() == [0.0, 0.0]
    x32 = tgrad.tensor([2.5, 4.0, 30.0, 1e3, 1e8], requires_grad=True)
    tgrad.special.erfcx(x32).sum().backward()
    np.testing.assert_allclose(x32.grad.numpy(), [dict(ERFCX_GRAD)[v] for v in (
        2.5, 4.0, 30.0, 1e3, 1e8)], rtol=3e-7)
    t = tgrad.tensor([2.0, 2.5, 3.7, 4.0, 9.0, 40.0, -1.5], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.special.erfcx, (t,))
    assert gradgradcheck(tgrad.special.erfcx, (t,))


def test_ndtr_log_ndtr():
    x = np.concatenate([RNG.uniform(-5, 5, 300), [0.0, -1.0, 1.0]])
    mid = np.vectorize(lambda v: math.erfc(-v / math.sqrt(2)) / 2)(x)
    np.testing.assert_allclose(_run(tgrad.special.ndtr, x), mid, rtol=4e-15)
    log_mid = np.where(x < 0, np.log(mid), np.log1p(-np.vectorize(
        lambda v: math.erfc(v / math.sqrt(2)) / 2)(x)))  # log1p(-Phi(-x)) where Phi ~ 1
    np.testing.assert_allclose(_run(tgrad.special.log_ndtr, x), log_mid, rtol=4e-15)
    tail = np.concatenate([RNG.uniform(5, 37, 100), [8.25, 20.0, 37.5]])
    q = np.vectorize(_upper_tail)(tail)  # Phi(-t) = Q(t)
    np.testing.assert_allclose(_run(tgrad.special.ndtr, -tail), q, rtol=2e-15)
    np.testing.assert_allclose(_run(tgrad.special.log_ndtr, tail), np.log1p(-q), rtol=2e-15)
    far = np.array([40.0, 1e3, 1e150])
    log_q = -far ** 2 / 2 - 0.5 * math.log(2 * math.pi) + np.log(np.vectorize(_mills)(far))
    np.testing.assert_allclose(_run(tgrad.special.log_ndtr, -far), log_q, rtol=1e-15)
    inf, nan = math.inf, math.nan
    np.testing.assert_array_equal(_run(tgrad.special.ndtr, [inf, -inf, nan]), [1.0, 0.0, nan])
    np.testing.assert_array_equal(_run(tgrad.special.log_ndtr, [inf, -inf, nan]),
                                  [0.0, -inf, nan])


def test_ndtri():
    p = np.array([0.975, 0.5, 0.1, 1e-10])
    np.testing.assert_allclose(
        _run(tgrad.special.ndtri, p),
        [1.959963984540054, 0.0, -1.2815515655446004, -6.361340902404056], rtol=2e-15)
    u = RNG.uniform(0, 1, 300)
    x = _run(tgrad.special.ndtri, u)
    back = np.vectorize(lambda v: math.erfc(-v / math.sqrt(2)) / 2)(x)
    assert np.all(np.abs(back - u) <= 4e-15 * (1 + x * x) * u)  # Phi's own conditioning
    np.testing.assert_allclose(_run(tgrad.special.ndtri, 1 - u), -x, rtol=1e-15, atol=1e-16)
    tiny = 10.0 ** -np.arange(5, 320, 15)
    x = _run(tgrad.special.ndtri, tiny)
    assert np.all(np.abs(np.vectorize(_upper_tail)(-x) - tiny) <= 4e-16 * (1 + x * x) * tiny)
    inf, nan = math.inf, math.nan
    np.testing.assert_array_equal(_run(tgrad.special.ndtri, [0.0, 1.0, -0.1, 1.1, nan]),
                                  [-inf, inf, nan, nan, nan])


# ------------------------------------------------------------------------------ mvlgamma
def test_mvlgamma():
    x = RNG.uniform(2.0, 9.0, 50)
    for p in (1, 2, 5):
        ref = [sum(math.lgamma(v - i / 2) for i in range(p)) + p * (p - 1) / 4
               * math.log(math.pi) for v in x]
        np.testing.assert_allclose(_run(tgrad.mvlgamma, x, p), ref, rtol=1e-14, atol=1e-15)
        np.testing.assert_allclose(tgrad.special.multigammaln(tgrad.tensor(x), p).numpy(),
                                   ref, rtol=1e-14, atol=1e-15)
    # x <= (p - 1)/2: no error (PyTorch 2.14): a pole of lgamma gives inf
    low = tgrad.mvlgamma(tgrad.tensor([0.5, 1.0, 2.5], dtype=F64), 3)
    assert low.tolist()[:2] == [math.inf, math.inf]
    np.testing.assert_allclose(low.tolist()[2], sum(math.lgamma(2.5 - i / 2) for i in range(3))
                               + 1.5 * math.log(math.pi), rtol=1e-14)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        tgrad.mvlgamma(tgrad.tensor([3.0]), 0)


# ------------------------------------------------------------------------------ autograd
FUNCS = {"lgamma": tgrad.lgamma, "digamma": tgrad.digamma,
         "polygamma1": lambda t: tgrad.polygamma(1, t),
         "polygamma3": lambda t: t.polygamma(3), "mvlgamma": lambda t: t.abs().mvlgamma(3) * 1,
         "sinc": tgrad.sinc, "entr": tgrad.special.entr}


@pytest.mark.parametrize("name", list(FUNCS))
def test_gradcheck_and_gradgradcheck(name):
    x = np.array([0.3, 1.7, 2.6, 12.5] + ([] if name in ("entr", "mvlgamma") else [-2.4, -0.6]))
    t = tgrad.tensor(x + (1.5 if name == "mvlgamma" else 0.0), dtype=F64, requires_grad=True)
    assert gradcheck(FUNCS[name], (t,))
    assert gradgradcheck(FUNCS[name], (t,))


ERF_FUNCS = {"erfc": tgrad.erfc, "erfcx": tgrad.special.erfcx, "ndtr": tgrad.special.ndtr,
             "log_ndtr": tgrad.special.log_ndtr}


@pytest.mark.parametrize("name", list(ERF_FUNCS))
def test_erf_family_gradcheck(name):
    x = tgrad.tensor([-6.0, -1.5, -0.3, 0.2, 0.8, 3.0, 7.0], dtype=F64, requires_grad=True)
    assert gradcheck(ERF_FUNCS[name], (x,)) and gradgradcheck(ERF_FUNCS[name], (x,))


def test_erfinv_ndtri_and_xlog1py_gradients():
    y = tgrad.tensor([0.3, -0.7, 0.95, 0.0, 0.9995], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.erfinv, (y,)) and gradgradcheck(tgrad.erfinv, (y,))
    p = tgrad.tensor([0.003, 0.2, 0.5, 0.9, 0.999], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.special.ndtri, (p,)) and gradgradcheck(tgrad.special.ndtri, (p,))
    (g,) = tgrad.autograd.grad(tgrad.erfinv(y).sum(), y)
    x = tgrad.erfinv(y).detach().numpy()
    np.testing.assert_allclose(g.numpy(), math.sqrt(math.pi) / 2 * np.exp(x * x), rtol=1e-14)
    a = tgrad.tensor([0.5, 2.0, -1.0], dtype=F64, requires_grad=True)
    b = tgrad.tensor([0.2, 3.0, -0.5], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.special.xlog1py, (a, b)) and gradgradcheck(tgrad.special.xlog1py,
                                                                      (a, b))


def test_erf_family_saves_what_pytorch_saves():
    """erfc, erfinv and ndtr save their input (an in-place change of the result is fine:
    y.mul_(2) doubles the gradient), ndtri its result (an in-place change of the input is
    fine), as PyTorch."""
    v = np.array([-1.3, 0.2, 0.8])
    x = tgrad.tensor(v, dtype=F64, requires_grad=True)
    y = tgrad.erfc(x)
    y.mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -4 / math.sqrt(math.pi) * np.exp(-v * v),
                               rtol=1e-14)
    x.grad = None
    y = tgrad.special.ndtr(x)
    y.mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(-v * v / 2) / math.sqrt(2 * math.pi),
                               rtol=1e-14)
    e = tgrad.tensor([math.erf(t) for t in v], dtype=F64, requires_grad=True)  # erfinv(e) = v
    y = tgrad.erfinv(e)
    y.mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), math.sqrt(math.pi) * np.exp(v * v),
                               rtol=1e-13)
    p = tgrad.tensor([0.5 * (1 + math.erf(t / math.sqrt(2))) for t in v], dtype=F64,
                     requires_grad=True)  # ndtri(p) = v
    q = p * 1.0
    y = tgrad.special.ndtri(q)
    q.mul_(2.0)
    y.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), math.sqrt(2 * math.pi) * np.exp(v * v / 2),
                               rtol=1e-13)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y = tgrad.special.ndtri(p * 1.0)
        y.mul_(2.0)
        y.sum().backward()
    assert gradgradcheck(tgrad.erfc, (x,)) and gradgradcheck(tgrad.special.ndtr, (x,))


def test_backward_rules():
    x = tgrad.tensor([0.7, 3.2, -1.3], dtype=F64, requires_grad=True)
    (g,) = tgrad.autograd.grad(tgrad.lgamma(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), tgrad.digamma(x.detach()).numpy())
    (g,) = tgrad.autograd.grad(tgrad.polygamma(2, x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), tgrad.polygamma(3, x.detach()).numpy())
    assert tgrad.lgamma(x).grad_fn.name() == "LgammaBackward0"


# ------------------------------------------------------------------------------ dtypes, shapes
TOLS = {tgrad.float32: (1.3e-6, 1e-5), tgrad.float16: (1e-3, 1e-5),
        tgrad.bfloat16: (1.6e-2, 1e-5)}
LOW = {"lgamma": (tgrad.lgamma, np.concatenate([POS[POS < 1e3], NEG])),
       "digamma": (tgrad.digamma, np.concatenate([POS[(POS > 1e-3) & (POS < 1e3)], NEG])),
       "polygamma2": (lambda t: tgrad.polygamma(2, t), np.concatenate([POS[POS > 0.05], NEG])),
       "erfinv": (tgrad.erfinv, RNG.uniform(-0.999, 0.999, 200)),
       "erfc": (tgrad.erfc, RNG.uniform(-3, 9, 200)),
       "log_ndtr": (tgrad.special.log_ndtr, RNG.uniform(-30, 6, 200)),
       "ndtri": (tgrad.special.ndtri, RNG.uniform(0.001, 0.999, 200)),
       "sinc": (tgrad.sinc, RNG.uniform(-9, 9, 200))}


@pytest.mark.parametrize("dt", list(TOLS))
@pytest.mark.parametrize("name", list(LOW))
def test_low_precision_forward(name, dt):
    fn, x = LOW[name]
    t = tgrad.tensor(x).to(dt)
    x_low = t.double()  # the rounded inputs, so the float64 result is the reference
    ref = fn(x_low).numpy()
    out = fn(t)
    assert out.dtype is dt
    ok = np.abs(ref) < np.finfo(np.float16).max if dt is tgrad.float16 else np.isfinite(ref)
    rtol, atol = TOLS[dt]
    np.testing.assert_allclose(out.double().numpy()[ok], ref[ok], rtol=rtol, atol=atol)


def test_integer_inputs_promote_and_errors():
    for fn in (tgrad.lgamma, tgrad.digamma, tgrad.erfinv, lambda t: tgrad.polygamma(1, t),
               tgrad.erfc, tgrad.special.ndtr):
        out = fn(tgrad.tensor([1, 2]))
        assert out.dtype is tgrad.float32
    assert tgrad.lgamma(tgrad.tensor([True])).numpy().tolist() == [0.0]
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n"):
        tgrad.polygamma(-1, tgrad.tensor([1.0]))
    with pytest.raises(TypeError):
        tgrad.lgamma(1.5)


@pytest.mark.parametrize("shape", [(), (0,), (1,), (17,), (1023,), (3, 0, 2)])
def test_shapes(shape):
    x = tgrad.tensor(RNG.uniform(0.1, 5.0, shape), dtype=F64)
    for fn in (tgrad.lgamma, tgrad.digamma, tgrad.erfinv, tgrad.sinc, tgrad.erfc,
               tgrad.special.ndtri):
        y = fn(x * 0.19 if fn is tgrad.erfinv else x)
        assert y.shape == x.shape


def test_non_contiguous_and_inplace():
    base = tgrad.tensor(RNG.uniform(0.1, 5.0, (6, 8)), dtype=F64)
    view = base.t()[::2]
    for fn in (tgrad.lgamma, tgrad.digamma, lambda t: tgrad.polygamma(2, t)):
        np.testing.assert_array_equal(fn(view).numpy(), fn(view.contiguous()).numpy())
    for name in ("lgamma", "digamma"):
        x = base.clone()
        getattr(x, name + "_")()
        np.testing.assert_array_equal(x.numpy(), getattr(tgrad, name)(base).numpy())
    for name in ("erfinv", "erfc"):
        y = base.clone() * 0.1
        ref = getattr(tgrad, name)(y).numpy()
        getattr(y, name + "_")()
        np.testing.assert_array_equal(y.numpy(), ref)


def test_special_namespace():
    s = tgrad.special
    # the same ops (both namespaces carry the out= wrapper of tgrad/_out.py around them)
    unwrap = inspect.unwrap
    assert unwrap(s.gammaln) is unwrap(tgrad.lgamma)
    assert unwrap(s.psi) is unwrap(tgrad.digamma)
    assert unwrap(s.expit) is unwrap(tgrad.sigmoid)
    x = tgrad.tensor([-2.0, 0.0, 0.5, 1.0, 3.7], dtype=F64)
    np.testing.assert_allclose(s.sinc(x).numpy(), np.sinc(x.numpy()), rtol=1e-15, atol=1e-16)
    np.testing.assert_array_equal(
        s.entr(tgrad.tensor([0.0, -1.0, 0.5, math.inf, math.nan])).numpy(),
        np.array([0.0, -math.inf, -0.5 * math.log(0.5), -math.inf, math.nan], np.float32))
    np.testing.assert_array_equal(
        s.xlog1py(tgrad.tensor([0.0, 0.0, 0.0, 2.0, 3.0]),
                  tgrad.tensor([-1.0, -2.0, math.nan, -1.0, 1.0])).numpy(),
        np.array([0.0, 0.0, math.nan, -math.inf, 3 * math.log(2.0)], np.float32))
    np.testing.assert_allclose(s.log_softmax(x, 0).numpy(),
                               x.numpy() - np.log(np.exp(x.numpy()).sum()), rtol=1e-14)
    np.testing.assert_allclose(s.softmax(x, 0, dtype=F64).exp().numpy(),
                               np.exp(np.exp(x.numpy()) / np.exp(x.numpy()).sum()), rtol=1e-14)
    for name in ("erf", "erfc", "erfcx", "erfinv", "ndtr", "ndtri", "log_ndtr", "logit",
                 "xlogy", "expm1", "exp2", "log1p", "logsumexp", "round", "polygamma",
                 "digamma", "multigammaln"):
        assert callable(getattr(s, name))


def test_sinc_gradient_near_zero_is_finite_and_accurate():
    # d/dx sinc(x) = pi f'(pi x), f'(t) = (t cos t - sin t) / t^2 = -t/3 + t^3/30 - t^5/840
    # + ...: the truncated series (with Fractions) below |t| = 0.05, the closed form in
    # 50-digit decimals above
    xs = [0.0, 1e-300, -1e-300, 1e-200, 1e-8, -3e-4, 0.015, -0.0318, 0.0319, 0.2, 0.5, 3.7]
    x = tgrad.tensor(xs, dtype=F64, requires_grad=True)
    tgrad.sinc(x).sum().backward()
    for v, got in zip(xs, x.grad.numpy()):
        t = math.pi * v
        if abs(t) < 0.05:
            want = math.pi * float(sum(Fraction((-1) ** k * 2 * k, math.factorial(2 * k + 1))
                                       * Fraction(t) ** (2 * k - 1) for k in range(1, 8)))
        else:
            with localcontext() as ctx:
                ctx.prec = 50
                td = Decimal(t)
                # cos / sin by their Taylor series in Decimal
                c = s = Decimal(0)
                term_c, term_s = Decimal(1), td
                for k in range(60):
                    c, s = c + term_c, s + term_s
                    term_c = -term_c * td * td / ((2 * k + 1) * (2 * k + 2))
                    term_s = -term_s * td * td / ((2 * k + 2) * (2 * k + 3))
                want = math.pi * float((td * c - s) / (td * td))
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)


def test_float32_inputs_stay_float32_under_a_float64_default():
    import tgrad.special as S
    prev = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    try:
        x = tgrad.tensor([1.5, 0.0, 0.3], dtype=tgrad.float32)
        for out in (S.digamma(x), S.psi(x), S.polygamma(0, x), S.ndtri(x * 0.5),
                    tgrad.distributions.StudentT(x + 1.0).variance):
            assert out.dtype == tgrad.float32
    finally:
        tgrad.set_default_dtype(prev)


# ------------------------------------------- PyTorch 2.13 parity fixes: gammainc, log_ndtr
def _igamma_series_ref(a: float, x: float) -> tuple:
    """(P, Q) in float64 from the lower series (x < a + 1): P = x^a e^-x / Gamma(a + 1)
    sum_n x^n / ((a+1)..(a+n)), Q = 1 - P (absolute error ~1e-16)."""
    term = total = 1.0
    n = 0
    while term > 1e-18 * total:
        n += 1
        term *= x / (a + n)
        total += term
    p = math.exp(a * math.log(x) - x - math.lgamma(a + 1)) * total
    return p, 1.0 - p


def test_gammainc_float32_small_a_does_not_cancel():
    a_vals = [1e-7, 8.336864993907511e-06, 1e-4, 1e-2, 0.3]
    x_vals = [0.05, 0.3, 0.712017834186554, 1.0]
    a32 = np.array([a for a in a_vals for _ in x_vals], np.float32)
    x32 = np.array([x for _ in a_vals for x in x_vals], np.float32)
    ref = np.array([_igamma_series_ref(float(a), float(x)) for a, x in zip(a32, x32)])
    a, x = tgrad.tensor(a32), tgrad.tensor(x32)
    q = tgrad.special.gammaincc(a, x)
    assert q.dtype is tgrad.float32
    np.testing.assert_allclose(q.numpy(), ref[:, 1], rtol=1e-6)
    np.testing.assert_allclose(tgrad.special.gammainc(a, x).numpy(), ref[:, 0], rtol=1e-6)
    # the reported case: 3.046028e-06 (float32 came out 3.2783e-06)
    q = tgrad.special.gammaincc(tgrad.tensor([8.336864993907511e-06]),
                                tgrad.tensor([0.712017834186554])).item()
    assert abs(q - 3.046028e-06) < 2e-12
    # closed forms: Q(1, x) = e^-x, Q(1/2, x) = erfc(sqrt x)
    xs = np.array([0.01, 0.5, 3.0, 20.0], np.float32)
    xd = xs.astype(np.float64)
    np.testing.assert_allclose(
        tgrad.special.gammaincc(tgrad.ones(4), tgrad.tensor(xs)).numpy(), np.exp(-xd),
        rtol=1e-6)
    np.testing.assert_allclose(
        tgrad.special.gammaincc(tgrad.full((4,), 0.5), tgrad.tensor(xs)).numpy(),
        [math.erfc(math.sqrt(v)) for v in xd], rtol=1e-6)
    # halves: computed wide, rounded once
    for dt, rtol in ((tgrad.float16, 1e-3), (tgrad.bfloat16, 8e-3)):
        ah = tgrad.tensor([0.01, 0.01, 0.3, 0.3], dtype=dt)
        xh = tgrad.tensor([0.3, 1.0, 0.3, 1.0], dtype=dt)
        ref = [_igamma_series_ref(float(p), float(v))[1]
               for p, v in zip(ah.float().tolist(), xh.float().tolist())]
        q = tgrad.special.gammaincc(ah, xh)
        assert q.dtype is dt
        np.testing.assert_allclose(q.float().numpy(), ref, rtol=rtol)


def test_gammainc_type_promotion():
    f32 = tgrad.tensor([1.0, 2.0])
    y = tgrad.special.gammainc(f32, tgrad.tensor(1.0, dtype=F64))  # a 0-d tensor: no promotion
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy(), [1 - math.exp(-1), 1 - 2 * math.exp(-1)], rtol=1e-6)
    y = tgrad.special.gammainc(tgrad.tensor([1, 2]), tgrad.tensor([1.0, 1.0], dtype=F64))
    assert y.dtype is F64
    np.testing.assert_allclose(y.numpy(), [1 - math.exp(-1), 1 - 2 * math.exp(-1)],
                               rtol=1e-13)
    y = tgrad.special.gammaincc(tgrad.tensor([True]), tgrad.tensor([1.0]))
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy(), [math.exp(-1)], rtol=1e-6)
    y = tgrad.special.gammaincc(tgrad.tensor([1.0], dtype=tgrad.float16),
                                tgrad.tensor([1.0], dtype=tgrad.bfloat16))
    assert y.dtype is tgrad.float32
    y = tgrad.special.gammaincc(tgrad.tensor(1.0, dtype=F64),
                                tgrad.tensor([1.0, 1.0], dtype=tgrad.float16))
    assert y.dtype is tgrad.float16
    with pytest.raises(NotImplementedError, match="\"igamma_cpu\" not implemented for 'Long'"):
        tgrad.special.gammainc(tgrad.tensor([1, 2]), tgrad.tensor([1, 1]))
    with pytest.raises(NotImplementedError, match="\"igammac_cpu\" not implemented for 'Bool'"):
        tgrad.special.gammaincc(tgrad.tensor([True]), tgrad.tensor([True]))


def test_log_ndtr_far_tail_does_not_overflow_x_squared():
    # x^2 overflows from |x| = 1.34e154 in float64, x^2 / 2 only from 1.9e154
    far = np.array([1.34e154, 1.5e154, 1.89e154])
    log_q = -(far / 2) * far - 0.5 * math.log(2 * math.pi) + np.log(np.vectorize(_mills)(far))
    assert np.isfinite(log_q).all()
    np.testing.assert_allclose(_run(tgrad.special.log_ndtr, -far), log_q, rtol=1e-15)
    assert _run(tgrad.special.log_ndtr, [-1.91e154])[0] == -math.inf
    # float32: from 1.84e19 to 2.6e19
    x32 = np.array([-2.0e19, -2.6e19], np.float32)
    xd = -x32.astype(np.float64)
    ref = -(xd / 2) * xd - 0.5 * math.log(2 * math.pi) - np.log(xd)
    y = tgrad.special.log_ndtr(tgrad.tensor(x32)).numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-6)
    # the gradient there: phi / Phi ~ -x
    x = tgrad.tensor([-1.5e154], dtype=F64, requires_grad=True)
    tgrad.special.log_ndtr(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.5e154], rtol=1e-12)


# ------------------------------------------------------------- xlogy / xlog1py backward rules
def _xgrads(fn, xv, yv, g):
    x = tgrad.tensor(xv, dtype=F64, requires_grad=True)
    y = tgrad.tensor(yv, dtype=F64, requires_grad=True)
    return [v.tolist() for v in tgrad.autograd.grad(fn(x, y), (x, y),
                                                    tgrad.tensor(g, dtype=F64))]


def test_xlogy_xlog1py_backward_follows_pytorch_rules():
    # PyTorch's: dx = xlogy(g, y) (0 where x == 0 and y <= 0), dy = g x / y; so a zero
    # upstream gradient at y = 0 gives dx = 0 (not 0 * -inf), and dy is 0 / 0 at x = y = 0
    nan, inf = math.nan, math.inf
    gx, gy = _xgrads(tgrad.xlogy, [0.0, 0.0, 2.0, 2.0, 0.0, 3.0], [0.0, -1.0, 0.0, 0.0, inf, 4.0],
                     [1.0, 1.0, 1.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(gx, [0.0, 0.0, -inf, 0.0, inf, 0.5 * math.log(4.0)])
    np.testing.assert_array_equal(gy, [nan, -0.0, inf, nan, 0.0, 0.5 * 3.0 / 4.0])
    # xlog1py: the same with log1p(y) and 1 + y (y = -1 is xlogy's y = 0)
    gx, gy = _xgrads(tgrad.special.xlog1py, [0.0, 0.0, 2.0, 2.0, 0.0, 3.0],
                     [-1.0, -2.0, -1.0, -1.0, inf, 3.0], [1.0, 1.0, 1.0, 0.0, 1.0, 0.5])
    np.testing.assert_array_equal(gx, [0.0, 0.0, -inf, 0.0, inf, 0.5 * math.log(4.0)])
    np.testing.assert_array_equal(gy, [nan, -0.0, inf, nan, 0.0, 0.5 * 3.0 / 4.0])
    x = tgrad.tensor(2.0, requires_grad=True)
    (tgrad.xlogy(x, 0.0) * 0).backward()
    assert x.grad.item() == 0.0
    assert tgrad.xlogy(x, 3.0).grad_fn.name() == "XlogyBackward2"  # PyTorch's overload


def test_xlogy_xlog1py_zero_x_gives_positive_zero():
    # PyTorch: x == 0 returns 0 (+0.0) unless y is NaN; x log y was -0.0 for 0 < y < 1 or
    # x = -0.0 (and log1p's -1 < y < 0)
    x = [0.0, 0.0, -0.0, -0.0, 0.0, -0.0]
    for fn, ys in ((tgrad.xlogy, [0.5, 1e-300, 2.0, 0.0, -1.0, math.inf]),
                   (tgrad.special.xlog1py, [-0.5, -1e-300, 2.0, -1.0, -3.0, math.inf])):
        for dt in (F64, tgrad.float32, tgrad.bfloat16):
            out = fn(tgrad.tensor(x, dtype=dt), tgrad.tensor(ys, dtype=dt)).float().numpy()
            np.testing.assert_array_equal(out, np.zeros(6))
            assert not np.signbit(out).any(), (fn, dt)
        assert math.isnan(fn(tgrad.tensor([-0.0]), tgrad.tensor([math.nan])).item())
        # the ordinary values keep their sign: -2 log(2) (xlog1py: -2 log(3))
        out = fn(tgrad.tensor([-2.0], dtype=F64), tgrad.tensor([2.0], dtype=F64)).numpy()
        np.testing.assert_allclose(out, [-2.0 * math.log(2.0 if fn is tgrad.xlogy else 3.0)],
                                   rtol=1e-15)


def test_xlogy_xlog1py_gradcheck_and_gradgradcheck_with_broadcast():
    x = tgrad.tensor([[0.5, 2.0, -1.5], [0.7, -0.2, 3.0]], dtype=F64, requires_grad=True)
    y = tgrad.tensor([0.3, 2.5, 0.8], dtype=F64, requires_grad=True)
    for fn in (tgrad.xlogy, tgrad.special.xlog1py):
        assert gradcheck(fn, (x, y)) and gradgradcheck(fn, (x, y))
    # x = 0 with y > 0: dx = log y, second order finite
    x0 = tgrad.tensor([0.0, 0.0], dtype=F64, requires_grad=True)
    y0 = tgrad.tensor([0.5, 3.0], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.xlogy, (x0, y0)) and gradgradcheck(tgrad.xlogy, (x0, y0))
    (gx,) = tgrad.autograd.grad(tgrad.special.xlog1py(x0, y0).sum(), x0)
    np.testing.assert_allclose(gx.numpy(), np.log1p([0.5, 3.0]), rtol=1e-15)



CAPTURE_SCRIPT = '''
import json
import numpy as np
import tgrad
from tgrad.cuda import host_runtime
from tgrad.cuda.runtime_api import CaptureError

xe = np.array([-1.0, 0.3, 2.0, 2.4, 2.5, 3.0, 40.0, 1e8])


def grads(values):
    b = tgrad.tensor(values, device="cuda", requires_grad=True)
    (g,) = tgrad.autograd.grad(tgrad.special.erfcx(b).sum(), b)
    return g


eager = [grads(xe).numpy(), grads(xe[:4]).numpy()]
reads = []


def no_reads(self, dst, src, stream):  # what a capturing stream refuses
    reads.append(dst.nbytes)
    raise CaptureError("a copy from the device to the host")


real_read = host_runtime.HostRuntime.memcpy_dtoh
host_runtime.HostRuntime.stream_is_capturing = lambda self, stream: True
host_runtime.HostRuntime.memcpy_dtoh = no_reads
captured = [grads(xe), grads(xe[:4])]
host_runtime.HostRuntime.memcpy_dtoh = real_read
host_runtime.HostRuntime.stream_is_capturing = lambda self, stream: False
print(json.dumps({"reads": reads, "eager": [e.tolist() for e in eager],
                  "captured": [c.numpy().tolist() for c in captured]}))
'''


def test_erfcx_backward_reads_nothing_on_the_host_while_a_graph_is_captured(tmp_path):
    # erfcx's gradient skips its continued fraction (x >= 2.5) when no element needs it,
    # which reads a mask on the host. While a CUDA graph is captured that read would end
    # the capture, so the fraction runs on every element instead: the same values, no read.
    # Checked on the interpreted device, the host runtime told it is capturing and its
    # device-to-host copy refusing, as a capturing stream does; values against the eager
    # run (with and without elements past 2.5) and erfcx' = 2 x e^(x^2) erfc(x) - 2/sqrt(pi).
    import sys
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    from interpreted import run_json_file
    out = run_json_file(CAPTURE_SCRIPT, tmp_path, "capture_erfcx.py")
    assert out["reads"] == []
    assert out["captured"] == out["eager"]  # the same formula per element
    for v, g in zip([-1.0, 0.3, 2.0, 2.4], out["captured"][1]):  # (before 2.5: no cancel)
        want = 2 * v * math.exp(v * v) * math.erfc(v) - 2 / math.sqrt(math.pi)
        assert g == pytest.approx(want, rel=1e-12), v


def _numpy_forward_inputs() -> tuple:
    """(erfinv's y, lgamma / polygamma's x): more than a block of _numpy_special (so the
    blocks' seams are crossed) and every branch, the poles, zeros, infs and NaN."""
    from tgrad.backends._numpy_special import _BLOCK
    edges = [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, -1e-310]
    t = 1 - np.logspace(-16, -0.4, 300)
    y = np.concatenate([RNG.uniform(-1, 1, _BLOCK + 999), t, -t, [1.0, -1.0, 1.5, -2.0, 0.5,
                                                                  -0.5], edges])
    x = np.concatenate([RNG.uniform(-25, 25, _BLOCK + 999), POS, NEG, [-3.0, -20.0, -2.5],
                        [v for v, _ in LGAMMA_NEAR_ROOTS], RNG.uniform(1.2, 2.8, 300),
                        RNG.uniform(-2.7, -2.5, 300), [1e300, -1e300, 3e38, -0.7], edges])
    return y, x


@pytest.mark.parametrize("dt", [tgrad.float64, tgrad.float32])
def test_cpu_numpy_forwards_are_the_composites_values(monkeypatch, dt):
    # On the CPU erfinv, lgamma and polygamma run as tgrad.backends._numpy_special: the
    # composites' formulas on the NumPy array, in blocks, each branch on its own elements
    # only. Their values must be the composites' (the GPU's path, forced here on the CPU)
    # bit for bit, signed zeros and NaN included; float32 lgamma / polygamma both compute
    # in float64. float32 erfinv is computed in float64 and rounded once (its composite,
    # in float32, is ~2 ulp off): the float64 result rounded.
    from tgrad.ops import erfs, special
    y, x = _numpy_forward_inputs()
    cases = [(tgrad.erfinv, y), (tgrad.lgamma, x), (tgrad.digamma, x)] + [
        (lambda t, n=n: tgrad.polygamma(n, t), x) for n in (1, 2, 3, 171, 200)]

    def values():
        return [fn(tgrad.tensor(v, dtype=dt)).numpy() for fn, v in cases]

    fast = values()
    monkeypatch.setattr(erfs, "_F32_F64", ())
    monkeypatch.setattr(special, "_on_numpy", lambda t: False)
    slow = values()
    if dt is tgrad.float32:
        slow[0] = tgrad.erfinv(tgrad.tensor(y.astype(np.float32).astype(np.float64),
                                            dtype=F64)).numpy().astype(np.float32)
    for a, b in zip(fast, slow):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)  # (NaN where NaN)
        num = ~np.isnan(b)
        assert np.array_equal(np.signbit(a[num]), np.signbit(b[num]))


@pytest.mark.parametrize("lo, hi", [(0.05, 4.5), (3.0, 9.0), (1.3, 2.7), (-4.0, 0.2)])
def test_cpu_numpy_forwards_narrow_ranges_are_the_composites_bits(monkeypatch, lo, hi):
    # a block whose elements all leave the recurrences early (lgamma's downward one, psi's
    # upward one stop once no element moves) or all take psi's series about 2: the same
    # bits as the composites, which run every step for every element
    from tgrad.ops import special
    x = np.concatenate([RNG.uniform(lo, hi, 4097), [lo, hi]])
    cases = [tgrad.lgamma, tgrad.digamma, lambda t: tgrad.polygamma(1, t),
             lambda t: tgrad.polygamma(3, t)]
    fast = [fn(tgrad.tensor(x, dtype=F64)).numpy() for fn in cases]
    monkeypatch.setattr(special, "_on_numpy", lambda t: False)
    for fn, a in zip(cases, fast):
        b = fn(tgrad.tensor(x, dtype=F64)).numpy()
        np.testing.assert_array_equal(a.view(np.int64), b.view(np.int64))


def test_cpu_numpy_forwards_keep_the_layout_and_gradients():
    # the result has the input's memory layout (as a ufunc's: a transposed input gives a
    # transposed result), also for a strided view; the backward formulas call the forwards
    x = tgrad.tensor(RNG.uniform(-0.9, 0.9, (40, 30, 20)), dtype=F64)
    for fn in (tgrad.erfinv, tgrad.lgamma, tgrad.digamma, lambda t: tgrad.polygamma(2, t)):
        for v in (x, x.permute(2, 0, 1), x[:, ::3, 1:], x[5, 7], x.float().transpose(0, 2)):
            out = fn(v)
            assert out.dtype == v.dtype and out.shape == v.shape
            if v.is_contiguous() or v.dim() == 3 and v.stride(0) == 1:
                assert out.stride() == v.stride()
            np.testing.assert_array_equal(out.numpy(), fn(v.contiguous()).numpy())
    t = tgrad.tensor([-2.45, -0.3, 0.7, 3.1, 12.0], dtype=F64, requires_grad=True)
    for fn in (tgrad.lgamma, tgrad.digamma, lambda t: tgrad.polygamma(1, t)):
        assert gradcheck(fn, (t,)) and gradgradcheck(fn, (t,))
    u = tgrad.tensor([-0.97, -0.6, 0.1, 0.55, 0.999], dtype=F64, requires_grad=True)
    assert gradcheck(tgrad.erfinv, (u,)) and gradgradcheck(tgrad.erfinv, (u,))


def _around(points, dt, n: int = 8) -> np.ndarray:
    """points and their n nearest floats of dtype dt on either side."""
    out = []
    for v in np.asarray(points, dt):
        up, dn = v, v
        for _ in range(n):
            up, dn = np.nextafter(up, dt(np.inf)), np.nextafter(dn, dt(-np.inf))
            out += [up, dn]
    return np.concatenate([np.asarray(points, dt), np.asarray(out, dt)])


def _erf_family_inputs(dt) -> tuple:
    """(x, p): more than a block of _numpy_special, every region of erfc / erfcx / ndtr /
    log_ndtr (x) and ndtri (p) with the floats next to each boundary, +-0, +-inf, NaN,
    subnormals, the float range's ends and (p) values outside [0, 1]."""
    from tgrad.backends._numpy_special import _BLOCK
    fi = np.finfo(dt)
    edges = [0.0, -0.0, math.inf, -math.inf, math.nan, fi.smallest_subnormal,
             -fi.smallest_subnormal, fi.tiny, -fi.tiny, fi.max, -fi.max]
    bounds = [0.5, 1.0, 2.0, 2.5, 4.0, 5.65, 27.2, 38.5]
    with np.errstate(over="ignore"):
        x = np.concatenate([RNG.uniform(-12, 12, _BLOCK + 999), RNG.standard_normal(20000) * 30,
                            np.sign(RNG.standard_normal(5000)) * 10.0 ** RNG.uniform(-40, 40, 5000),
                            _around(bounds + [-b for b in bounds], dt), edges]).astype(dt)
        tiny = 10.0 ** RNG.uniform(np.log10(fi.smallest_subnormal), 0, 20000)
        p = np.concatenate([RNG.uniform(0, 1, _BLOCK + 999), tiny, 1 - tiny,
                            _around([0.25, 0.5, 0.75, fi.tiny], dt), [1.0, 1.5, -0.5, 2.0, -fi.max],
                            edges]).astype(dt)
    return x, p


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_cpu_numpy_erf_family_is_the_composites_bits(dt):
    # On the CPU erfc, erfcx, ndtr, log_ndtr and ndtri run as tgrad.backends._numpy_special:
    # the composites' operations per element in the same order, in the input's dtype, each
    # region on its own elements only. The bits must be the composites' (the GPU's path),
    # float32 included (but float32 erfc, ndtr and ndtri are computed in float64 from their
    # own fits: within 0.505 ulp of the float64 composite, tests/test_special_f32.py), NaN
    # where NaN; also for a strided, transposed view.
    from tgrad.ops import erfs
    x, p = _erf_family_inputs(dt)
    own = (erfs._erfc, erfs._ndtr, erfs._ndtri) if dt is np.float32 else ()
    for fn, v in [(erfs._erfc, x), (erfs._erfcx, x), (erfs._ndtr, x), (erfs._log_ndtr, x),
                  (erfs._ndtri, p)]:
        if fn in own:  # within 0.505 ulp of the float64 composite (the GPU's float64)
            t = tgrad.tensor(v)
            fast = fn(t).numpy()
            exact = fn.composite(t.double()).numpy()
            r = exact.astype(dt)
            odd = ~np.isfinite(r) | (r == 0)  # (NaN, +-inf, +-0: those, sign included)
            np.testing.assert_array_equal(fast[odd].view("u4"), r[odd].view("u4"),
                                          err_msg=fn.__name__)
            ulps = np.abs(fast[~odd] - exact[~odd]) / np.spacing(np.abs(r[~odd]))
            assert ulps.max() <= 0.505, fn.__name__
            m = t[: 60 * 50].reshape(60, 50)[::2, 1:].t()  # a strided, transposed view
            np.testing.assert_array_equal(fn(m).numpy(), fn(m.contiguous()).numpy())
            continue
        t = tgrad.tensor(v)
        fast, slow = fn(t).numpy(), fn.composite(t).numpy()
        assert fast.dtype == slow.dtype == dt
        nan = np.isnan(slow)
        assert np.array_equal(np.isnan(fast), nan), fn.__name__
        bits = "u%d" % fast.itemsize
        np.testing.assert_array_equal(fast[~nan].view(bits), slow[~nan].view(bits),
                                      err_msg=fn.__name__)
        m = t[: 60 * 50].reshape(60, 50)[::2, 1:].t()  # a strided, transposed view
        np.testing.assert_array_equal(fn(m).numpy(), fn.composite(m.contiguous()).numpy())
    empty = tgrad.tensor(np.zeros((0, 3), dt))
    assert tgrad.special.ndtri(empty).shape == (0, 3) and tgrad.erfc(empty).shape == (0, 3)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_cpu_numpy_erfcx_log_ndtr_gradients_are_the_composites_bits(monkeypatch, dt):
    # with no graph to record (create_graph=False), erfcx's and log_ndtr's backwards on the
    # CPU compute their factor on the NumPy arrays (erfcx's continued fraction on x >= 2.5
    # only, log_ndtr's two branches on their own elements): the composites' bits, float32
    # included; with create_graph the composites run (gradgradcheck)
    from tgrad.ops import erfs
    x, _ = _erf_family_inputs(dt)
    w = RNG.uniform(0.5, 2, x.size).astype(dt)
    t = tgrad.tensor(x, requires_grad=True)
    fns = (tgrad.special.erfcx, tgrad.special.log_ndtr)

    def grads():
        out = []
        for fn in fns:
            t.grad = None
            fn(t).backward(tgrad.tensor(w))
            out.append(t.grad.numpy())
        return out

    fast = grads()
    monkeypatch.setattr(erfs, "_F32_F64", ())
    for a, b in zip(fast, grads()):
        nan = np.isnan(b)
        assert np.array_equal(np.isnan(a), nan)
        bits = "u%d" % a.itemsize
        np.testing.assert_array_equal(a[~nan].view(bits), b[~nan].view(bits))
    monkeypatch.undo()
    u = tgrad.tensor([-8.0, -3.0, -0.5, 0.0, 0.7, 2.4, 2.6, 7.0, 40.0], dtype=F64,
                     requires_grad=True)
    for fn in fns:
        assert gradcheck(fn, (u,)) and gradgradcheck(fn, (u,))


def test_polygamma_at_the_top_of_float_range():
    # log2 of the floats just below 2^1024 rounds to 1024.0: the scale b = 2^floor(log2 x)
    # was 2^1024 = inf and polygamma(n >= 1, x) +-inf (1.8e308: n = 1 gave inf, not 5.6e-309);
    # e is at most 1023 (b <= x still). The NumPy form and the composite (the GPU's ops)
    top = np.finfo(np.float64).max
    xs = [top, np.nextafter(top, 0.0), top * (1 - 2.0 ** -45), 2.0 ** 1023, 1e308]
    from tgrad.ops.special import _polygamma_pos
    for n in (1, 2, 3, 10, 150, 171, 300):
        ours = _poly(n, xs)
        comp = _polygamma_pos(n, tgrad.tensor(np.asarray(xs), dtype=F64)).numpy()
        for x, got, got_c in zip(xs, ours, comp):
            ref = _decimal_polygamma(n, x)
            assert got == ref and got_c == ref, (n, x, got, got_c, ref)
