"""Fit the polynomial of the float32 lgamma path (tgrad/backends/_numpy_special.py,
``_LGAMMA32_F``) and print it with its measured error.

float32 lgamma is evaluated in float64 from an approximation (~1e-11), rounded to float32,
and the elements within 2^-6 float32 ulp of a rounding boundary are recomputed by the
float64 path (``_float64_path_rounding``), so the approximation only needs to be well
inside that guard (2^-30 relative). Below 2.5 it is

    lgamma(2 + z) = z F(z),   F(z) ~ lgamma(2 + z) / z,   z in [-1/2, 1/2]

(lgamma(1 + z) = z F(z) - log1p(z), lgamma(x) = x F(x) - log1p(x) - log(x) for x < 1/2;
the roots 1 and 2 are z = -1 and z = 0 of those, so the error stays relative there).
F is a Chebyshev interpolant of the float64 path's lgamma(2 + z) / z (~1e-16), returned as
monomial coefficients in z; the printed error is the float64 evaluation's (Horner, as the
backend does it) against the float64 path, relative, on a dense sample of float32 z.
Run from a checkout: PYTHONPATH=. python docs/gen_lgamma32_coefs.py (numpy only).
"""

import numpy as np
from numpy.polynomial import chebyshev as C

from tgrad.backends._numpy_special import _lgamma_block
from tgrad.backends.numpy import _horner_f64 as horner

EULER = 0.57721566490153286061
TERMS = 12  # the fewest whose error stays below ~1e-11 (the guard: ~1e-9 relative)


def f_exact(z: np.ndarray) -> np.ndarray:
    zero = z == 0.0
    v = _lgamma_block(2.0 + z) / np.where(zero, 1.0, z)
    return np.where(zero, 1.0 - EULER, v)  # F(0) = psi(2)


def main():
    cheb = C.chebinterpolate(lambda t: f_exact(t * 0.5), TERMS - 1)  # on t = 2z in [-1, 1]
    mono = C.cheb2poly(cheb) * 0.5 ** -np.arange(TERMS)  # in z
    coefs = [float(c) for c in mono]
    x = np.arange(*np.array([1.5, 2.5], np.float32).view(np.uint32), 7,
                  dtype=np.uint32).view(np.float32).astype(np.float64)
    z = x - 2.0
    z = z[z != 0.0]
    err = np.max(np.abs(horner(tuple(coefs), z) / f_exact(z) - 1.0))
    print(f"_LGAMMA32_F = {tuple(coefs)!r}")
    print(f"max relative error of z F(z) on {z.size} float32 points: {err:.3g}")


if __name__ == "__main__":
    main()
