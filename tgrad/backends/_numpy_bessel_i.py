"""CPU (NumPy) forms of tgrad.ops.bessel's i0 / i1 / i0e / i1e forwards and of the shared
series of their derivatives (``_scaled_parts``), for a float32 / float64 array in its dtype:
the composites' operations per element in the same order (rsqrt as 1 / sqrt, a number over
an array as reciprocal(t) * number), so the bits are the same, with each branch (the power
series below |x| = 20, the asymptotic series above) on its own elements only, where the
composites evaluate both on every element and select.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad.backends._numpy_special import _horner, blocked_native, split_apply
from tgrad.ops import bessel as b

_RS = 1.0 / math.sqrt(2 * math.pi)


def _split(a: np.ndarray, small_fn, big_fn) -> np.ndarray:
    """small_fn(a[idx]) where a < 20 (and NaN), big_fn(a[idx]) where a >= 20, each on its
    own elements (one call when every element is small)."""
    return split_apply(~(a >= b._SWITCH), small_fn, big_fn, a)


def _series(nu: int, s: np.ndarray) -> np.ndarray:
    """I_nu(s) by the power series (bessel._parts' ``series``)."""
    out = _horner(b._SERIES[nu], s * s * 0.25)
    if nu == 1:
        out = out * s * 0.5
    return out


def _rsqrt(ab: np.ndarray) -> np.ndarray:
    """(2 pi ab)^-1/2 as bessel._parts': rsqrt(ab) (1 / sqrt) times (2 pi)^-1/2."""
    return 1.0 / np.sqrt(ab) * _RS


def _scaled_big(nu: int, ab: np.ndarray) -> np.ndarray:
    """e^-a I_nu(a) for a >= 20 by the asymptotic series (bessel._parts' ``scaled``)."""
    return _horner(b._ASYMPTOTIC[nu], np.reciprocal(ab)) * _rsqrt(ab)


def _odd(nu: int, x: np.ndarray, out: np.ndarray) -> np.ndarray:
    return out * np.sign(x) if nu == 1 else out


def _unscaled_block(nu: int, x: np.ndarray) -> np.ndarray:
    """bessel._unscaled: the series below 20, e^-a I (e^(a/2))^2 above; times sign(x) for i1."""
    def big(ab):
        half = np.exp(ab * 0.5)
        return _scaled_big(nu, ab) * half * half
    return _odd(nu, x, _split(np.abs(x), lambda s: _series(nu, s), big))


def _scaled_block(nu: int, x: np.ndarray) -> np.ndarray:
    """bessel._scaled: the series times e^-a below 20, the asymptotic series above."""
    return _odd(nu, x, _split(np.abs(x), lambda s: _series(nu, s) * np.exp(-s),
                              lambda ab: _scaled_big(nu, ab)))


def unscaled(nu: int, x: np.ndarray) -> np.ndarray:
    """I_nu elementwise (nu 0 or 1) of a float32 / float64 array, in its dtype."""
    return blocked_native(lambda v: _unscaled_block(nu, v), x)


def scaled(nu: int, x: np.ndarray) -> np.ndarray:
    """e^-|x| I_nu elementwise of a float32 / float64 array, in its dtype."""
    return blocked_native(lambda v: _scaled_block(nu, v), x)


def _parts_block(x: np.ndarray, which: int) -> np.ndarray:
    """bessel._scaled_parts' i0e'(x) (which 0) or i1e(x) (which 1), each from its branch."""
    def small(s):
        t = s * s * 0.25
        s1 = _horner(b._SERIES[1], t) * s * 0.5
        scale = np.exp(-s)
        return (s1 - _horner(b._SERIES[0], t)) * scale if which == 0 else s1 * scale

    def big(ab):
        rs = _rsqrt(ab)
        coefs = b._ASYMPTOTIC_DIFF if which == 0 else b._ASYMPTOTIC[1]
        return _horner(coefs, np.reciprocal(ab)) * rs
    return _split(np.abs(x), small, big) * np.sign(x)


def scaled_parts(x: np.ndarray, with_i1e: bool) -> tuple:
    """bessel._scaled_parts on a float32 / float64 array: (i0e'(x), i1e(x) or None)."""
    d0 = blocked_native(lambda v: _parts_block(v, 0), x)
    return d0, (blocked_native(lambda v: _parts_block(v, 1), x) if with_i1e else None)
