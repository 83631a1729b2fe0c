"""Special functions: lgamma, digamma, polygamma, mvlgamma and sinc (shape-preserving
elementwise ops, composites of tgrad's elementwise ops, so they run on every backend).

Each is a Function whose backward is written with differentiable tgrad ops (higher-order
gradients work): lgamma' = digamma, polygamma(n)' = polygamma(n + 1) (the error-function
family is in tgrad.ops.erfs). float16/bfloat16 inputs are computed in float32 and rounded
once, except lgamma / digamma / polygamma, which compute float32 (so the halves too) in
float64 (``_in_float64``); integer and bool inputs are promoted to the default float dtype
(as PyTorch).

Maths (x > 0, after the reflections x -> 1 - x for x < 0):
- lgamma: Taylor series of lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) z^k / k
  (radius 2; |z| <= 1/2 here, 30 terms) on [0, 2.5) (lgamma(1 + z) = lgamma(2 + z) -
  log1p(z), lgamma(x) = lgamma(1 + x) - log x), the recurrence lgamma(x) = log(x - 1) +
  lgamma(x - 1) down to [1.5, 2.5) on [2.5, 8), and Stirling's series on [8, inf): each
  relative to ~1e-15, also near the roots 1 and 2.
- digamma / polygamma: the recurrence psi^(n)(x) = psi^(n)(x + 1) + (-1)^(n+1) n! / x^(n+1)
  up to x >= 10 + n, then the asymptotic (Euler-Maclaurin) series (for n >= 1 scaled by
  2^(e (n+1)), e = min(floor(log2 x), 1023), with n! as mantissa * 2^exponent); digamma on
  [1.25, 2.75) (around its root 1.4616, where the recurrence's sum cancels) by the series of
  psi(2 + z).
- reflections, with r = x - round(x) (exact) so that pi r carries no rounding error:
  lgamma(x) = log(pi / |sin(pi r)|) - lgamma(1 - x); where its terms cancel (around the roots
  in (-20, -2)), lgamma(x) - lgamma(x0) about the nearer root x0 (``_lgamma_near_roots``);
  psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi r)), P_n the n-th derivative of
  cot as a polynomial in cot (P_0 = c, P_(k+1) = -(1 + c^2) P_k'(c)).
"""

from __future__ import annotations

import math
from fractions import Fraction
from types import SimpleNamespace

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    apply_float_unary,
    float_input,
    host_reads_ok,
    require_tensor,
    rounded_to,
    tensor_method,
    wrap,
)
from tgrad.ops.complex_ops import conj_of
from tgrad.ops.creation import full_like
from tgrad.ops.extras import _tensors_in_result_dtype, number_operand_nodes
from tgrad.ops.inplace import inplace_method
from tgrad.ops.logmath import signbit
from tgrad.tensor import Tensor, _int_arg

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "sinc"]

_EULER = 0.57721566490153286061
_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798), Fraction(-174611, 330))  # B_2 .. B_20


def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 = sum_{m >= 2} m^-k (k >= 2) by Euler-Maclaurin at N = 20 (to ~1e-17)."""
    n = 20
    terms = [m ** -k for m in range(2, n)] + [n ** (1 - k) / (k - 1), n ** -k / 2]
    for j, b in enumerate(_BERNOULLI, 1):
        rising = math.prod(range(k, k + 2 * j - 1))
        terms.append(float(b / math.factorial(2 * j) * rising) * n ** (-k - 2 * j + 1))
    return math.fsum(terms)


# lgamma(2 + z) = sum_k _LG2[k-1] z^k
_LG2 = [1.0 - _EULER] + [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, 31)]
# psi(2 + z) = d/dz lgamma(2 + z) = (1 - gamma) + sum_k (-1)^k (zeta(k) - 1) z^(k-1), |z| < 3/4
_PSI2 = [1.0 - _EULER] + [(-1) ** k * _zeta_minus_one(k) for k in range(2, 41)]
# Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi)/2 + sum_k B_2k / (2k (2k-1) x^(2k-1))
_STIRLING = [float(b / (2 * k * (2 * k - 1))) for k, b in enumerate(_BERNOULLI, 1)]
# psi(x) = log x - 1/(2x) - sum_k B_2k / (2k x^2k)
_PSI = [float(b / (2 * k)) for k, b in enumerate(_BERNOULLI, 1)]


def _horner(coefs, t: Tensor) -> Tensor:
    """sum_k coefs[k] t^k."""
    acc = coefs[-1] + t * 0.0
    for c in reversed(coefs[:-1]):
        acc = acc * t + c
    return acc


def _reduced(x: Tensor) -> Tensor:
    """r = x - round(x) in [-1/2, 1/2] (exact): sin(pi x) = +-sin(pi r), cot(pi x) = cot(pi r)."""
    return x - ew.round(x)


def _poles(x: Tensor) -> Tensor:
    """x a non-positive integer (or -inf)."""
    return ew.logical_and(ew.le(x, 0.0), ew.eq(x, ew.floor(x)))


# lgamma's breakpoints, shared with its NumPy form (tgrad/backends/_numpy_special.py),
# which must give the same float64 bits: Stirling's series from 8 on; below, the recurrence
# lgamma(y) = log(y - 1) + lgamma(y - 1) down from y >= 2.5 (at most 6 steps: y < 8), then
# lgamma(2 + z)'s series; the roots' expansion on (-20, -2), where |reflection| > 2 |lgamma|
LGAMMA_STIRLING_FROM = 8.0
LGAMMA_RECURRENCE_DOWN_FROM, LGAMMA_RECURRENCE_STEPS = 2.5, 6
LGAMMA_ROOTS_SPAN = (-20.0, -2.0)
LGAMMA_TINY_SINE = 2.0 ** -100  # sin(pi x) below this: the pole's -log|sin| form


def _lgamma_pos(x: Tensor) -> Tensor:
    """lgamma(x) for x > 0 (see the module docstring); other elements give garbage."""
    big = ew.ge(x, LGAMMA_STIRLING_FROM)
    xb = ew.where(big, x, LGAMMA_STIRLING_FROM)
    r = 1.0 / xb
    stirling = ((xb - 0.5) * ew.log(xb) - xb + 0.5 * math.log(2 * math.pi)
                + r * _horner(_STIRLING, r * r))
    # below 8: z in [-1/2, 1/2) with lgamma(x) = lgamma(2 + z) + corr
    xs = ew.where(big, 2.0, ew.where(ew.gt(x, 0.0), x, 1.0))
    low, mid = ew.lt(xs, 0.5), ew.lt(xs, 1.5)
    prod, y = xs * 0.0 + 1.0, xs
    for _ in range(LGAMMA_RECURRENCE_STEPS):  # 2.5 <= y < 8: lgamma(y - 1) + log(y - 1)
        down = ew.ge(y, LGAMMA_RECURRENCE_DOWN_FROM)
        y = ew.where(down, y - 1.0, y)
        prod = prod * ew.where(down, y, 1.0)
    z = ew.where(low, xs, ew.where(mid, xs - 1.0, y - 2.0))
    corr = ew.log(prod) - ew.where(mid, ew.log1p(z), 0.0) - ew.where(low, ew.log(xs), 0.0)
    return ew.where(big, stirling, z * _horner(_LG2, z) + corr)


# The roots of lgamma on (-20, -2), two in each (m, m + 1), m = -3 .. -20 (|Gamma| = 1 near
# each pole, within 1/n! of the pole -n), as double-doubles hi + lo: (left_hi, left_lo,
# right_hi, right_lo) per interval, the left root the one near m. By mpmath at 80 digits:
# r = mpmath.findroot(lambda t: mpmath.log(abs(mpmath.gamma(t))), (a, b), solver="anderson"),
# bracketed between the pole +- 1e-40 and m + 1/2; hi = float(r), lo = float(r - hi)
_LGAMMA_ROOTS = (
    (-2.7476826467274127, 9.055340329338315e-17, -2.4570247382208006, -3.7075610815513266e-17),
    (-3.955294284858598, -1.999428391746348e-17, -3.14358088834998, -2.1818179852331714e-16),
    (-4.991544640560048, 1.5174411760571722e-16, -4.039361839740537, 2.1143995503980602e-16),
    (-5.998607480080875, -3.311862478893795e-16, -5.0082181683225935, -4.3926353491015815e-17),
    (-6.999801507890638, 1.0550130037400023e-17, -6.001385294453155, 6.415847287933042e-17),
    (-7.999975197095821, -5.261737128572354e-17, -7.000198333407325, 2.504354173632409e-16),
    (-8.999997244250977, -2.2185620509727132e-16, -8.000024800270682, -4.354586297860107e-16),
    (-9.99999972442663, 4.883037618642443e-16, -9.000002755714823, -9.491348611623208e-17),
    (-10.99999997494789, 1.9843998306985407e-16, -10.000000275573013, -3.4909708332642057e-16),
    (-11.999999997912324, -1.0020693920103036e-16, -11.000000025052106, -6.850849812286175e-16),
    (-12.99999999983941, 6.747262033096337e-16, -12.000000002087676, 1.2222548112048185e-16),
    (-13.99999999998853, 8.094860741926607e-16, -13.00000000016059, -6.745919484964342e-16),
    (-14.999999999999236, 8.82932241476868e-16, -14.00000000001147, -8.094853704222662e-16),
    (-15.999999999999952, -1.668613399265054e-16, -15.000000000000764, -8.829322382710274e-16),
    (-16.999999999999996, -7.412564244549576e-16, -16.000000000000046, -1.6094954994609367e-15),
    (-18.0, 1.5619206968586233e-16, -17.000000000000004, 7.412564244550028e-16),
    (-19.0, 8.22063524662433e-18, -18.0, -1.561920696858622e-16),
    (-20.0, 4.110317623312165e-19, -19.0, -8.22063524662433e-18),
)

# (-3, -2)'s minimum of |Gamma|: x0 = mpmath.findroot(mpmath.digamma, -2.61) (60 digits) as
# hi, lo; used on [-2.679, -2.534) (halfway to the roots); lgamma(x0) =
# float(mpmath.log(abs(mpmath.gamma(x0))))
_LGAMMA_MIN3 = (-2.6107208684441447, 9.881960746978353e-17, -2.679, -2.534,
                -0.11862999102044386)


def _lgamma_near_roots(x: Tensor) -> Tensor:
    """lgamma(x) for x in (-20, -2), not an integer (others: garbage), relative to a few ulp
    also at the roots, where the reflection's terms cancel (up to 1e16 ulp there). With x0
    the nearer root of x's interval (hi + lo), -n its pole and e = x + n, e0 = x0 + n:
    lgamma(x) = lgamma(2 + e) - sum_{k=0}^{n+1} log|x + k| (Gamma(x + n + 2) / the product),
    and lgamma(x0) = 0, so with d = x - x0 = e - e0 (x - hi exact):
    lgamma(x) = d sum_j LG2_j h_j(e, e0) - sum_{k=0}^{n+1} log1p(d / (x0 + k)),
    h_j = (e^j - e0^j) / (e - e0) = sum_i e^i e0^(j-1-i) (lgamma(2 + z)'s series, _LG2);
    x0 + k = (hi + k) + lo with hi + k exact, and 1 + d / (x0 + k) = (x + k) / (x0 + k) > 0
    (no pole between x and x0)."""
    from tgrad.ops.creation import tensor
    m = ew.floor(x)
    i = ew.clamp(-m - 3.0, 0.0, len(_LGAMMA_ROOTS) - 1.0).to(dtypes.int64)
    cols = [tensor([r[c] for r in _LGAMMA_ROOTS], dtype=x.dtype, device=x.device)[i]
            for c in range(4)]
    left = ew.lt(x, (cols[0] + cols[2]) * 0.5)
    hi, lo = ew.where(left, cols[0], cols[2]), ew.where(left, cols[1], cols[3])
    n = ew.where(left, -m, -m - 1.0)
    # (-3, -2)'s minimum (lgamma -0.1186, between roots 0.29 apart) would cancel 10-fold:
    # there x0 is the minimum itself, lgamma(x0) added at the end
    mid = ew.logical_and(ew.ge(x, _LGAMMA_MIN3[2]), ew.lt(x, _LGAMMA_MIN3[3]))
    hi, lo = ew.where(mid, _LGAMMA_MIN3[0], hi), ew.where(mid, _LGAMMA_MIN3[1], lo)
    n = ew.where(mid, 3.0, n)
    return lgamma_about_root(x, hi, lo, n, mid, _TENSOR_MATH)


# the array functions lgamma_about_root calls, for tgrad tensors (NumPy's module for arrays)
_TENSOR_MATH = SimpleNamespace(where=ew.where, abs=ew.abs, log=ew.log, log1p=ew.log1p)


def lgamma_about_root(x, hi, lo, n, mid, xp):
    """_lgamma_near_roots' sums, once for tensors and NumPy arrays (tgrad/backends/
    _numpy_special.py; ``xp``: _TENSOR_MATH or numpy): x0 = hi + lo the root (the (-3, -2)
    minimum where ``mid``, whose lgamma is added), -n the pole, e = x + n, e0 = x0 + n."""
    e = x + n
    e0 = (hi + n) + lo
    d = (x - hi) - lo
    h, p = x * 0.0 + 1.0, e0  # h_1 = 1, p = e0^j
    acc = h * _LG2[0]
    for c in _LG2[1:]:
        h = e * h + p  # h_(j+1) = e h_j + e0^j
        p = p * e0
        acc = acc + h * c
    logs = x * 0.0
    for k in range(22):  # k <= n + 1 <= 21
        x0k = (hi + float(k)) + lo
        r = d / x0k
        # log1p(r) near r = -1 (x near the pole, x0 not) magnifies r's rounding: there
        # log((x + k) / (x0 + k)) (x + k exact, |log| > 0.4)
        term = xp.where(xp.abs(r) < 0.5, xp.log1p(r), xp.log((x + float(k)) / x0k))
        logs = logs + xp.where(n + 1.0 >= float(k), term, 0.0)
    return xp.where(mid, _LGAMMA_MIN3[4], logs * 0.0) + (d * acc - logs)


def _lgamma(x: Tensor) -> Tensor:
    neg = ew.lt(x, 0.0)
    lg = _lgamma_pos(ew.where(neg, 1.0 - x, x))
    r = ew.where(_poles(x), 0.25, _reduced(x))
    # log |sin(pi r)|; below |r| = 2^-100 it is log(pi) + log |r| (to (pi r)^2 / 6 < 1e-59),
    # taken so because pi r rounds to a subnormal (losing relative precision) for a
    # subnormal r: lgamma(-5e-324) = -log(5e-324) = 744.44, not 744.49
    tiny = ew.lt(ew.abs(r), LGAMMA_TINY_SINE)
    refl = ew.where(tiny, -ew.log(ew.abs(r)),
                    math.log(math.pi) - ew.log(ew.abs(ew.sin(r * math.pi)))) - lg
    out = ew.where(neg, refl, lg)
    # where the reflection's terms cancel more than 2-fold (its error ~1e-16 |lgamma(1 - x)|):
    # around the roots in (-20, -2) (beyond, no float is near one) the expansion about them
    near = ew.logical_and(ew.logical_and(ew.gt(x, LGAMMA_ROOTS_SPAN[0]),
                                         ew.lt(x, LGAMMA_ROOTS_SPAN[1])),
                          ew.lt(ew.abs(refl) * 2.0, ew.abs(lg)))
    if not host_reads_ok(x):  # (a CUDA graph capture: no host read, every element through it)
        out = ew.where(near, _lgamma_near_roots(ew.where(near, x, -2.5)), out)
    elif bool(near.any()):  # (on the subset only: ~300 ops an element)
        out = out.clone()
        out[near] = _lgamma_near_roots(x[near])
    out = ew.where(ew.logical_or(_poles(x), ew.isinf(x)), math.inf, out)
    return ew.where(ew.isnan(x), x, out)


def _cot_derivative(n: int) -> list:
    """Integer coefficients (by power of c) of P_n(c) = d^n/dy^n cot(y), c = cot(y)."""
    p = [0, 1]
    for _ in range(n):
        dp = [i * a for i, a in enumerate(p)][1:] or [0]
        p = [0] * (len(dp) + 2)
        for i, a in enumerate(dp):  # -(1 + c^2) dp
            p[i] -= a
            p[i + 2] -= a
    return p


def _polygamma_pos(n: int, x: Tensor) -> Tensor:
    """psi^(n)(x) for x > 0 (other elements: garbage)."""
    top = 10.0 + n
    acc, z = x * 0.0, ew.where(ew.gt(x, 0.0), x, 1.0)
    if n:  # past polygamma_scaled_from(n) the sum is scaled by b^(n+1), b = 2^e ~ x (exact),
        # so that neither n! nor the terms z^-(n+1) leave float range where psi^(n)(x) does
        # not; elsewhere b = 1 (the terms unscaled)
        # (at most 1023: log2 of the floats just below 2^1024 rounds to 1024.0, b = inf)
        e = ew.where(ew.gt(z, polygamma_scaled_from(n)),
                     ew.clamp(ew.floor(ew.log2(z)), max=1023.0), 0.0)
        b = ew.exp2(e)
    for _ in range(int(top)):  # the recurrence up to z >= top: acc += 1/z or (z/b)^-(n+1)
        up = ew.lt(z, top)
        acc = acc + ew.where(up, 1.0 / z if n == 0 else ew.pow(z / b, -float(n + 1)), 0.0)
        z = ew.where(up, z + 1.0, z)
    r = 1.0 / z
    if n == 0:  # near its root 1.4616 the series about 2 avoids the recurrence's cancellation
        near = ew.logical_and(ew.ge(x, 1.25), ew.lt(x, 2.75))
        series = _horner(_PSI2, ew.where(near, x, 2.0) - 2.0)
        return ew.where(near, series, ew.log(z) - 0.5 * r - r * r * _horner(_PSI, r * r) - acc)
    coefs, mantissa, exponent = polygamma_zeta_terms(n)
    # b^(n+1) z^-n (1/n + r (1/2 + r H(r^2))), the zeta tail scaled
    tail = ew.pow(z / b, -float(n)) * (b / float(n) + b / z * (0.5 + r * _horner(coefs, r * r)))
    return _times_pow2((acc + tail) * mantissa, float(exponent) - e * float(n + 1))


# The largest n polygamma takes: every x where psi^(n)(x) is finite gets it to ~1e-16 up to
# n ~ 1200 (against mpmath; n = 1500 already gives 0 for values ~1e144), and the cost grows
# as n (the recurrence up to z >= 10 + n). Its backward (n + 1) is computed.
POLYGAMMA_MAX_N = 1000


def polygamma_scaled_from(n: int) -> float:
    """The x past which psi^(n)'s sum (n >= 1) is scaled: where the terms, down to
    max(x, 10 + n)^-(n+1), would pass below 2^-1000 (0.0: every x). Below it the scaled
    sum's operations give the unscaled sum's bits (b = 1: the NumPy form's fast path)."""
    limit = 2.0 ** (1000 / (n + 1))
    return 0.0 if 10.0 + n >= limit else limit


def _times_pow2(v: Tensor, k: Tensor) -> Tensor:
    """v * 2^k for an integer-valued float64 k, exact but where the result is subnormal:
    2^k as three factors of at most 2^+-1000 (|k| > 2200 gives 0 or inf, |v| being within
    [2^-1100, 2^1024) here). Shared bit for bit with the NumPy form."""
    k = ew.clamp(k, -2200.0, 2200.0)
    k1 = ew.clamp(k, -1000.0, 1000.0)
    k2 = ew.clamp(k - k1, -1000.0, 1000.0)
    return v * ew.exp2(k1) * ew.exp2(k2) * ew.exp2(k - k1 - k2)


def polygamma_zeta_terms(n: int) -> tuple[list, float, int]:
    """For n >= 1, psi^(n)(z) = (-1)^(n+1) n! zeta(n + 1, z): the Euler-Maclaurin
    coefficients of zeta's tail in r = 1/z (c_k = B_2k / (2k)! s (s+1) ... (s+2k-2), s = n+1)
    and the factor (-1)^(n+1) n! as mantissa * 2^exponent (|mantissa| in [1, 2]: n! passes
    float range from n = 171). Read by _polygamma_pos and its NumPy form
    (tgrad/backends/_numpy_special.py)."""
    s = n + 1
    coefs = [float(b / math.factorial(2 * k)) * math.prod(range(s, s + 2 * k - 1))
             for k, b in enumerate(_BERNOULLI, 1)]
    fact = math.factorial(n)
    exponent = fact.bit_length() - 1
    return coefs, (-1) ** (n + 1) * float(Fraction(fact, 1 << exponent)), exponent


# From n = 164 on a coefficient of P_n passes float range (and they only grow with n);
# _cot_derivative costs ~n^3 big-int steps (14 s at n = 4000), so it is not computed there.
REFLECTION_TERMS_MAX_N = 163


def polygamma_reflection_terms(n: int) -> tuple[list, float] | None:
    """P_n's coefficients (_cot_derivative) and pi^(n+1) as floats, or None where one of
    them passes float range (n > REFLECTION_TERMS_MAX_N: then |psi^(n)(x)| > max for every
    x < 0 but the half-integers' cancellation, see _reflection_past_range)."""
    if n > REFLECTION_TERMS_MAX_N:
        return None
    try:
        return [float(c) for c in _cot_derivative(n)], math.pi ** (n + 1)
    except OverflowError:
        return None


def _reflection_past_range(n: int, r: Tensor, cot: Tensor, pos: Tensor) -> Tensor:
    """psi^(n)(x), x < 0, for an n whose reflection terms pass float range (n >= 170). Then
    |psi^(n)(x)| >= n! |r|^-(n+1) (1 - (2|r|)^(n+1)...) is past max: the nearest pole's term
    (-1)^(n+1) n! r^-(n+1) gives the sign, (-sign r)^(n+1) inf. At a half-integer (cot = 0)
    with n even the two nearest terms cancel (P_n(0) = 0): psi^(n)(x) = psi^(n)(1 - x), pos."""
    if n % 2:
        return full_like(pos, math.inf)
    big = ew.where(ew.lt(r, 0.0), math.inf, -math.inf)
    return ew.where(ew.eq(cot, 0.0), pos, big)


def _polygamma(n: int, x: Tensor) -> Tensor:
    neg = ew.lt(x, 0.0)
    pos = _polygamma_pos(n, ew.where(neg, 1.0 - x, x))
    r = ew.where(_poles(x), 0.25, _reduced(x))
    # cot(pi r) as tan(pi (1/2 - |r|)) (1/2 - |r| exact) where cot is small
    far = ew.ge(ew.abs(r), 0.25)
    cot = ew.where(far, ew.tan((0.5 - ew.abs(r)) * math.pi) * ew.sign(r),
                   1.0 / ew.tan(ew.where(far, 0.25, r) * math.pi))
    # 1 / tan(pi r) is +-inf for a subnormal r (the true cot is past the dtype's max): held
    # at +-max, so that P_n(cot) overflows to +-inf with its sign (at +-inf, _horner's
    # t * 0.0 gives NaN): psi^(n)(-5e-324) = +inf, as PyTorch
    top = dtypes.finfo(cot.dtype).max
    cot = ew.clamp(cot, -top, top)
    terms = polygamma_reflection_terms(n)
    if terms is None:
        refl = _reflection_past_range(n, r, cot, pos)
    else:
        refl = (-1) ** n * pos - terms[1] * _horner(terms[0], cot)
    out = ew.where(neg, refl, pos)
    if n == 0:  # PyTorch: -inf at +0, +inf at -0, NaN at negative integers and -inf
        pole = ew.where(signbit(x), math.inf, -math.inf).to(x.dtype)
        out = ew.where(ew.eq(x, 0.0), pole, ew.where(_poles(x), math.nan, out))
        return ew.where(ew.eq(x, math.inf), math.inf, out)
    out = ew.where(ew.eq(x, -math.inf), math.nan, ew.where(  # +-inf with PyTorch's sign
        _poles(x), (-1) ** (n + 1) * math.inf, out))
    return ew.where(ew.eq(x, math.inf), 0.0, out)


def _in_float64(fn, x: Tensor, *args) -> Tensor:
    """fn(x, *args), a float32 x (the halves arrive as float32) computed in float64 and
    rounded once, as igamma: in float32 the reflection's terms cancel (lgamma(-2.5) came out
    16 ulp off, 77 near its root -2.4566; digamma ~45 ulp near -4.65), and the recurrences
    and series add a few ulp more (PyTorch's float32 lgamma: ~1 ulp)."""
    if x.dtype is dtypes.float32:
        return fn(x.to(dtypes.float64), *args).to(x.dtype)
    return fn(x, *args)


def _on_numpy(x: Tensor) -> bool:
    """Whether the forward runs as tgrad.backends._numpy_special's NumPy form of the same
    formulas (a float32 / float64 CPU tensor): each branch (the reflection, the pieces of
    the series) on its own elements only, in cache-sized blocks, where the composites
    (every device) evaluate every branch for every element as hundreds of tensor ops."""
    return x.device.type == "cpu" and (x.dtype is dtypes.float64 or x.dtype is dtypes.float32)


class Lgamma(Function):
    """y = log |Gamma(x)| (+inf at the poles 0, -1, -2, ... and at +-inf; float32 computed
    in float64);  dx = g * digamma(x)."""

    node_name = "LgammaBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if _on_numpy(x):
            from tgrad.backends import _numpy_special
            return wrap(_numpy_special.lgamma(x._data), x.device)
        return _in_float64(_lgamma, x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Polygamma.apply(x, 0)


class Polygamma(Function):
    """y = psi^(n)(x), the n-th derivative of digamma psi = Gamma' / Gamma (float32
    computed in float64);  dx = g * psi^(n+1)(x)."""

    node_name = "PolygammaBackward0"

    @staticmethod
    def forward(ctx, x, n):
        ctx.save_for_backward(x)
        ctx.n = n
        if _on_numpy(x):
            from tgrad.backends import _numpy_special
            return wrap(_numpy_special.polygamma(n, x._data), x.device)
        return _in_float64(lambda v: _polygamma(n, v), x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * Polygamma.apply(x, ctx.n + 1), None


class Digamma(Polygamma):
    """Polygamma with n = 0, under PyTorch's name for it (its derivative: polygamma(1))."""

    node_name = "DigammaBackward0"


@tensor_method("lgamma")
def lgamma(input: Tensor) -> Tensor:  # noqa: A002
    """log |Gamma(x)| elementwise (any shape); +inf at 0, -1, -2, ... and at +-inf, as
    PyTorch. float64 error <= 6 ulp on a dense sweep of (-40, 0) (at the negative roots too,
    by an expansion about them), ~1e-15 relative for x > 0. dx = digamma(x)."""
    return apply_float_unary(Lgamma, "lgamma", input)


@tensor_method("digamma")
def digamma(input: Tensor) -> Tensor:  # noqa: A002
    """psi(x) = d/dx lgamma(x) elementwise (any shape); PyTorch's values at the poles: -inf at
    +0, +inf at -0, NaN at negative integers and -inf; +inf at +inf. dx = polygamma(1, x)."""
    return apply_float_unary(Digamma, "digamma", input, 0)


def polygamma(n: int, input: Tensor) -> Tensor:  # noqa: A002
    """psi^(n)(x), the n-th derivative of digamma (n = 0: digamma), elementwise (any
    shape). For n >= 1: (-1)^(n+1) inf at the poles 0, -1, ..., 0 at +inf, NaN at -inf;
    finite wherever the value is (n! and x^-(n+1) are scaled). n <= POLYGAMMA_MAX_N (larger
    n raise; PyTorch gives NaN from n ~ 170). dx = polygamma(n + 1, x)."""
    n = _int_arg("polygamma", "n", n, 1, allow_bool=False)  # (int('a') leaked ValueError)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n > POLYGAMMA_MAX_N:
        raise RuntimeError(
            f"polygamma: n = {n} is past the largest order supported, {POLYGAMMA_MAX_N} (there "
            f"psi^(n)(x) is finite only for x near n/e, and the scaling of n! used here no "
            f"longer reaches it); use n <= {POLYGAMMA_MAX_N}")
    return apply_float_unary(Polygamma, "polygamma", input, int(n))


tensor_method("polygamma")(lambda self, n: polygamma(n, self))


@tensor_method("mvlgamma")
def mvlgamma(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """The multivariate log-gamma of dimension p, elementwise (any shape):
    sum_{i<p} lgamma(x - i/2) + p (p - 1)/4 log(pi). Where some x <= (p - 1)/2 the terms
    reach lgamma's poles and negative arguments, giving inf or lgamma's values there (as
    PyTorch 2.14, which no longer raises; no host sync to check)."""
    require_tensor("mvlgamma", input)
    p = _int_arg("mvlgamma", "p", p, 2, allow_bool=False)
    if input.dtype is dtypes.bool_:  # PyTorch's check (a bool would read as 0 / 1)
        raise RuntimeError("mvlgamma: The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x, half = float_input("mvlgamma", input)
    out = Lgamma.apply(x)
    for i in range(1, p):
        out = out + Lgamma.apply(x - i / 2)
    return rounded_to(out + p * (p - 1) / 4 * math.log(math.pi), half)


for _name, _fn in (("lgamma_", lgamma), ("digamma_", digamma)):
    inplace_method(_name, _fn)


# ------------------------------------------------------------------------------ sinc
# sinc'(t) = (t cos t - sin t) / t^2 = sum_{k>=1} (-1)^k 2k t^(2k-1) / (2k+1)!, by the series
# below |t| = 0.5 (where the difference cancels; also finite for tiny t, where t^2 underflows)
_SINC_DERIV = [(-1) ** k * 2 * k / math.factorial(2 * k + 1) for k in range(1, 10)]


class Sinc(Function):
    """y = sin(pi x) / (pi x), 1 at 0;  dx = g pi sinc'(pi x), sinc'(t) = (t cos t - sin t)
    / t^2 (its series near 0, so 0 at 0 and finite for tiny x). Complex x alike (the series
    for |t| < 0.5), with the holomorphic rule dx = g conj(pi sinc'(pi x))."""

    node_name = "SincBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        zero = ew.eq(x, 0.0)
        px = ew.where(zero, 1.0, x) * math.pi
        return ew.where(zero, 1.0, ew.sin(px) / px)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        t = x * math.pi
        near = ew.lt(ew.abs(t), 0.5)
        tn = ew.where(near, t, 0.0)
        series = tn * _horner(_SINC_DERIV, tn * tn)
        tf = ew.where(near, 1.0, t)  # keeps the branch not taken finite
        direct = (ew.cos(tf) * tf - ew.sin(tf)) / (tf * tf)
        return g * math.pi * conj_of(ew.where(near, series, direct))


@tensor_method("sinc")
def sinc(input: Tensor) -> Tensor:  # noqa: A002
    """The normalised sinc sin(pi x) / (pi x) elementwise (any shape), 1 at 0. A complex x
    takes the complex sin and division, and ``Sinc``'s gradient (its series near 0: the
    composed one cancelled there, complex64's gradient at 1e-8 was O(1))."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        return Sinc.apply(input)
    return apply_float_unary(Sinc, "sinc", input)


# ------------------------------------------------------------ torch.special only (not at tgrad.)
class Xlog1py(Function):
    """y = x log1p(y), 0 where x == 0 unless y is NaN (PyTorch's rule); PyTorch's backward:
    dx = xlog1py(g, y), 0 where x == 0 and y <= -1;  dy = g x / (1 + y) (NaN at x = 0,
    y = -1, as PyTorch). xlog1py(g, y) is 0 where g == 0, so a zero upstream gradient stays
    0 at y = -1. Both are tgrad ops, so the backward differentiates again."""

    node_name = "SpecialXlog1PyBackward0"

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        # x == 0 (y not NaN) gives +0.0, as PyTorch's `if (x == 0) return 0` (x log1p y
        # would be -0.0 for -1 < y < 0 or x = -0.0, NaN for y <= -1 or y = inf); log1p is
        # taken of 0 there instead (the branch not taken stays finite)
        zero = ew.logical_and(ew.eq(x, 0), ew.eq(y, y))
        return ew.where(zero, 0.0, x * ew.log1p(ew.where(zero, 0.0, y)))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        need_x, need_y = ctx.needs_input_grad
        gx = ew.where(ew.logical_and(ew.eq(x, 0), ew.le(y, -1)), 0.0, Xlog1py.apply(g, y)) \
            if need_x else None
        gy = g * x / (1.0 + y) if need_y else None
        return gx, gy


def xlog1py(input, other) -> Tensor:  # noqa: A002
    """x log1p(y) (broadcast, in the promoted float dtype), 0 where x == 0 unless y is NaN
    (PyTorch's rule); dx = xlog1py(g, y) (0 where x == 0 and y <= -1), dy = g x / (1 + y)
    (see ``Xlog1py``)."""
    cls = _XLOG1PY_NODES.get((isinstance(input, Tensor), isinstance(other, Tensor)), Xlog1py)
    x, y = _tensors_in_result_dtype(input, other, "xlog1py")
    return cls.apply(x, y)


_XLOG1PY_NODES = number_operand_nodes(Xlog1py)  # SpecialXlog1PyBackward1/2, as PyTorch's


class Entr(Function):
    """y = -x log x for x > 0, 0 at 0, -inf for x < 0 (NaN stays NaN);
    dx = -g (1 + log x) (+inf at 0, NaN for x < 0, as PyTorch)."""

    node_name = "SpecialEntrBackward0"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        pos = ew.gt(x, 0.0)
        val = -x * ew.log(ew.where(pos, x, 1.0))
        return ew.where(pos, val, ew.where(ew.eq(x, 0.0), 0.0, ew.where(
            ew.lt(x, 0.0), -math.inf, x)))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return -g * (1.0 + ew.log(x))


def entr(input: Tensor) -> Tensor:  # noqa: A002
    """The elementwise entropy -x log x (any shape; see ``Entr``)."""
    return apply_float_unary(Entr, "entr", input)
