"""CPU (NumPy) forward of the regularized incomplete gamma functions P(a, x) / Q(a, x)
(tgrad.ops.incomplete_gamma, whose docstring states the maths): the same operations per
element in the same order on float64 arrays, so the results are bit-identical to the
composite's (tests/test_incomplete_gamma.py compares the two).

Two things make it fast, neither changes a value: each element runs only the branch it
takes (the series, the continued fraction, Cephes' small-a upper series or Temme's
expansion), where the composite, which also runs on the GPU, runs the series and the
fraction over every element and selects; and the loops run on NumPy arrays, in place,
without a tensor op's overhead per term. The loops keep the composite's schedule: every
_CHECK_EVERY terms the converged elements are set aside (each element stops at its first
passing check, so its value is the composite's), at most _TERMS - 1 terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tgrad.backends._numpy_special import _horner, erfc, lgamma, on_elements
from tgrad.ops._temme_coefs import D as _TEMME
from tgrad.ops.incomplete_gamma import _CHECK_EVERY, _LGAM1P, _M_MINUS_LOG1P, _TERMS

_EPS = float(np.finfo(np.float64).eps)  # incomplete_gamma.small_vs's eps (float64)
_TINY = 1e-300  # _upper_fraction's floor for |d|, |c| (float64)


def _converge(step: Callable[[int, dict], None], state: dict,
              converged: Callable[[dict], np.ndarray], keep: str) -> np.ndarray:
    """incomplete_gamma.converge on 1-D float64 arrays (one length): run ``step(n, state)``
    for n = 1 .. _TERMS - 1, every _CHECK_EVERY-th term set the elements where
    ``converged(state)`` holds aside (their ``keep`` value is final) and go on with the
    others; return ``keep``'s values, in the elements' order."""
    out = np.empty_like(state[keep])
    positions = np.arange(out.size)
    for n in range(1, _TERMS):
        step(n, state)
        if n % _CHECK_EVERY == 0:
            state, positions = _set_aside(converged(state), state, positions, keep, out)
            if not positions.size:
                return out
    out[positions] = state[keep]
    return out


def _set_aside(ok: np.ndarray, state: dict, positions: np.ndarray, keep: str,
               out: np.ndarray) -> tuple:
    """Write ``keep``'s values where ``ok`` holds to out at their positions; return the
    state and positions of the other elements."""
    if ok.all():
        out[positions] = state[keep]
        return state, positions[:0]
    if not ok.any():
        return state, positions
    out[positions[ok]] = state[keep][ok]
    rest = np.flatnonzero(~ok)
    return {k: v.take(rest) for k, v in state.items()}, positions.take(rest)


def _series_converged(s: dict) -> np.ndarray:
    """small_vs(term, total): |term| <= eps |total|."""
    return np.abs(s["term"]) <= np.abs(s["total"]) * _EPS


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """incomplete_gamma._lower_series: P = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a+1)..(a+n))."""
    def step(n: int, s: dict) -> None:
        term = s["term"]
        term *= s["x"]
        term /= s["a"] + n
        s["total"] += term

    one = a * 0.0
    one += 1.0
    total = _converge(step, {"a": a, "x": x, "term": one, "total": one.copy()},
                      _series_converged, "total")
    return np.exp(a * np.log(x) - x - lgamma(a + 1.0)) * total


def _lgamma1p(a: np.ndarray) -> np.ndarray:
    """incomplete_gamma._lgamma1p: lgamma(1 + a), by its Taylor series where |a| <= 1/4."""
    near = np.abs(a) <= 0.25
    out = np.empty_like(a)
    at = np.flatnonzero(near)
    out[at] = _horner(_LGAM1P, a.take(at))
    at = np.flatnonzero(~near)
    out[at] = lgamma(a.take(at) + 1.0)
    return out


def _upper_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """incomplete_gamma._upper_series: Q for small a and x <= 1.1 (Cephes' igamc_series)."""
    def step(n: int, s: dict) -> None:
        fac = s["fac"]
        fac *= np.negative(s["x"]) / n
        s["term"] = term = fac / (s["a"] + n)
        s["total"] += term

    zero = x * 0.0
    total = _converge(step, {"a": a, "x": x, "fac": zero + 1.0, "term": zero,
                             "total": zero.copy()}, _series_converged, "total")
    logx = np.log(x)
    return -np.expm1(a * logx - _lgamma1p(a)) - np.exp(a * logx - lgamma(a)) * total


def _floored(v: np.ndarray, scratch: np.ndarray) -> np.ndarray:
    """v with the elements of |v| < _TINY set to _TINY, in place (where(|v| < tiny, tiny,
    v): those are rare, so the write is skipped where there are none)."""
    low = np.less(np.abs(v, out=scratch), _TINY)
    if low.any():
        v[low] = _TINY
    return v


def _fraction_step(i: int, s: dict) -> None:
    """One modified-Lentz step of incomplete_gamma._upper_fraction, in place:
    an = -i (i - a), b += 2, d = 1 / floored(an d + b), c = floored(b + an / c), h *= d c."""
    an = np.subtract(i, s["a"])
    an *= float(-i)
    b = s["b"]
    b += 2.0
    d, c, scratch = s["d"], s["c"], np.empty_like(b)
    d *= an
    d += b
    np.reciprocal(_floored(d, scratch), out=d)  # (the composite's 1.0 / t: times 1.0)
    np.divide(an, c, out=c)
    c += b
    _floored(c, scratch)
    h = s["h"]
    h *= d
    h *= c


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """incomplete_gamma._upper_fraction: Q = x^a e^-x / Gamma(a) h, h by modified Lentz."""
    b = x + 1.0 - a
    d = np.reciprocal(np.where(np.abs(b) < _TINY, _TINY, b))
    h = _converge(_fraction_step, {"a": a, "b": b, "c": x * 0.0 + 1.0 / _TINY, "d": d,
                                   "h": d.copy()},
                  lambda s: np.abs(s["d"] * s["c"] - 1.0) <= _EPS, "h")
    return np.exp(a * np.log(x) - x - lgamma(a)) * h


def _temme_eta(m: np.ndarray) -> np.ndarray:
    """incomplete_gamma._temme_eta: sign(m) sqrt(2 (m - log1p(m))), by a series below 0.1."""
    near = np.abs(m) < 0.1
    mn = np.where(near, m, 0.0)
    mf = np.where(near, 1.0, m)
    return np.where(near, mn * np.sqrt(2.0 * _horner(_M_MINUS_LOG1P, mn)),
                    np.sqrt(2.0 * (mf - np.log1p(mf))) * np.sign(mf))


def _temme(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """incomplete_gamma._temme's P (or Q with ``upper``), a > 20."""
    eta = _temme_eta((x - a) / a)
    total = a * 0.0
    for row in reversed(_TEMME):
        total = total / a + _horner(row, eta)
    r = np.exp(a * -0.5 * eta * eta) * (1.0 / np.sqrt(2 * math.pi * a)) * total
    z = eta * np.sqrt(a * 0.5)
    return erfc(z) * 0.5 + r if upper else erfc(-z) * 0.5 - r


def _special(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P (Q with ``upper``) where a or x is not positive and finite (PyTorch's values)."""
    nan = math.nan
    lower_at = np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), nan,
                        np.where(a == 0, np.where(x > 0, 1.0, nan),
                                 np.where(x == 0, 0.0,
                                          np.where(np.isinf(a), np.where(np.isinf(x), nan, 0.0),
                                                   1.0))))
    return 1.0 - lower_at if upper else lower_at


def regularized(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (Q with ``upper``) of two float64 arrays of one shape, as
    incomplete_gamma._regularized computes it (bit for bit), each element by its own
    branch: Temme's expansion where uniform_region holds, else for Q Cephes' upper series
    where the composite takes it (small a, x <= 1.1), else the series for x < a + 1 and the
    continued fraction beyond (1 - the other for the complement)."""
    shape = a.shape
    a, x = a.reshape(-1), x.reshape(-1)
    out = np.empty_like(a)
    with np.errstate(all="ignore"):
        ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
        ratio = x / a
        uniform = ok & (a > 20) & (ratio >= 0.3) & (ratio <= 2.2)
        rest = ok & ~uniform
        use_series = x < a + 1
        if upper:  # the composite's ``direct`` (on the elements outside the uniform region)
            direct = rest & (x <= 1.1) & np.where(x <= 0.5, a * np.log(x) >= -0.4, a <= x * 1.1)
            on_elements(out, direct, _upper_series, a, x)
            rest &= ~direct
            on_elements(out, rest & use_series, lambda u, v: 1.0 - _lower_series(u, v), a, x)
            on_elements(out, rest & ~use_series, _upper_fraction, a, x)
        else:
            on_elements(out, rest & use_series, _lower_series, a, x)
            on_elements(out, rest & ~use_series, lambda u, v: 1.0 - _upper_fraction(u, v), a, x)
        on_elements(out, uniform, lambda u, v: _temme(u, v, upper), a, x)
        on_elements(out, ~ok, lambda u, v: _special(u, v, upper), a, x)
    return out.reshape(shape)
