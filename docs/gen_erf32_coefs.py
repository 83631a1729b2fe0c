"""Fit the polynomials of the float32 erf path (tgrad/backends/numpy.py, ``_ERF32_SMALL`` and
``_ERF32_MID``) and print them with their measured error.

float32 erf is evaluated in float64 and rounded once; for its results to be the correctly
rounded ones (up to ties closer than float64's own rounding), the float64 value needs
~1e-16, not float32's 6e-8. Two pieces cover |x| < 4 (from 4 on erf(x) = sign(x): erfc(4) =
1.5e-8 is below half an ulp of 1):

    |x| < 1:      erf(x) = x P(x^2)                      P(t) ~ erf(sqrt t) / sqrt t, t in [0, 1]
    1 <= |x| < 4: erf(x) = 1 - exp(-x^2) H(|x| - 5/2)    H(v) ~ erfcx(5/2 + v), v in [-3/2, 3/2]

(for a float32 x, x^2 and |x| - 5/2 are exact in float64). Both are Chebyshev interpolants
(mpmath.chebyfit, near-minimax) at 40 digits, returned as monomial coefficients; the printed
error is the float64 evaluation's (Horner, as the backend does it) against mpmath, relative,
on a dense sample. Run from a checkout: PYTHONPATH=. python docs/gen_erf32_coefs.py (numpy,
mpmath).
"""

import mpmath as mp
import numpy as np

# the backend's own Horner evaluation, so the printed error is the path's
from tgrad.backends.numpy import _horner_f64 as horner

mp.mp.dps = 40
SMALL_TERMS, MID_TERMS = 12, 22  # the fewest whose fits stay below ~1e-16


def erf_over_x(t):
    if t == 0:
        return 2 / mp.sqrt(mp.pi)
    s = mp.sqrt(t)
    return mp.erf(s) / s


def erfcx_mid(v):
    x = mp.mpf(2.5) + v
    return mp.exp(x * x) * mp.erfc(x)


def fit(f, interval, n):
    """Monomial coefficients, constant first, of f's degree n - 1 Chebyshev interpolant."""
    coefs, err = mp.chebyfit(f, interval, n, error=True)
    return [float(c) for c in coefs[::-1]], err


def measured(coefs, xs, value, ref):
    """max relative error of the float64 erf built from coefs on the float32 points xs."""
    got = value(coefs, xs.astype(np.float64))
    return max(abs((mp.mpf(float(g)) - mp.erf(mp.mpf(float(x)))) / ref(x))
               for g, x in zip(got, xs))


def main():
    rng = np.random.default_rng(0)
    small, e_small = fit(erf_over_x, [0, 1], SMALL_TERMS)
    mid, e_mid = fit(erfcx_mid, [-1.5, 1.5], MID_TERMS)
    xs = np.sort(rng.uniform(0.0, 1.0, 4000).astype(np.float32))
    xm = np.sort(rng.uniform(1.0, 4.0, 4000).astype(np.float32))
    err_s = measured(small, xs, lambda c, x: x * horner(c, x * x),
                     lambda x: mp.erf(mp.mpf(float(x))) if x else 1)
    err_m = measured(mid, xm, lambda c, x: 1.0 - np.exp(-x * x) * horner(c, x - 2.5),
                     lambda x: mp.erf(mp.mpf(float(x))))
    print(f"# small: {SMALL_TERMS} terms, fit error {mp.nstr(e_small, 3)}, "
          f"float64 evaluation {mp.nstr(err_s, 3)} relative")
    print(f"# mid: {MID_TERMS} terms, fit error {mp.nstr(e_mid, 3)} (of erfcx), "
          f"float64 evaluation {mp.nstr(err_m, 3)} relative")
    print("_ERF32_SMALL = (" + ", ".join(repr(c) for c in small) + ")")
    print("_ERF32_MID = (" + ", ".join(repr(c) for c in mid) + ")")
    erfc_erfinv32()


# The float32 erfc / ndtr / erfinv / ndtri of tgrad/backends/_numpy_special.py, evaluated in
# float64 and rounded once, need ~1e-10 relative (not 1e-16: erf's bits above were the
# float64 series'), so that their results stay within ~0.502 ulp of the exact values:
#   erfc(a) = t exp(-a^2 + E(t)), t = 1 / (1 + a/2), a in [0, 10.5] (erfc(10.5) rounds to 0)
#   erfinv(y) = y C(w - 5/2) for w = -log((1 - y)(1 + y)) < 5,
#             = y T(sqrt(w) - 3) for 5 <= w < 16, = y F(sqrt(w) - 57/8) for 16 <= w <= 105
#               (ndtri's tail down to p = 2^-149: w = -log(4 p (1 - p)))
ERFC_TERMS, ERFINV_C_TERMS, ERFINV_T_TERMS, ERFINV_F_TERMS = 14, 14, 14, 18


def _erfinv_over_y(w):
    with mp.workdps(80):  # (y rounds to 1 at 40 digits from w ~ 92)
        y = mp.sqrt(-mp.expm1(-w))
        return +(mp.erfinv(y) / y) if w else mp.sqrt(mp.pi) / 2


def erfc_erfinv32():
    fits = {
        "_ERFC32": (lambda t: mp.log(mp.erfc(x := 2 / t - 2) * mp.exp(x * x) / t),
                    [1 / (1 + 10.5 / 2), 1], ERFC_TERMS),
        "_ERFINV32_C": (lambda u: _erfinv_over_y(u + 2.5), [-2.5, 2.5], ERFINV_C_TERMS),
        "_ERFINV32_T": (lambda v: _erfinv_over_y((v + 3) ** 2), [mp.sqrt(5) - 3, 1],
                        ERFINV_T_TERMS),
        "_ERFINV32_F": (lambda v: _erfinv_over_y((v + 7.125) ** 2), [-3.125, 3.125],
                        ERFINV_F_TERMS),
    }
    for name, (f, interval, n) in fits.items():
        coefs, err = fit(f, interval, n)
        print(f"# {name}: {n} terms, fit error {mp.nstr(err, 3)}")
        print(f"{name} = (" + ", ".join(repr(c) for c in coefs) + ")")


if __name__ == "__main__":
    main()
