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


if __name__ == "__main__":
    main()
