"""float32 fmod / remainder / floor_divide for the NumPy backend, exact and bit-identical to
NumPy's (which call libm's fmod per element, ~15 ns each), from float64 arithmetic.

With a, b float32 (24-bit significands) and q = trunc(fl64(a / b)):
  * q is the true trunc(a / b) wherever |fl64(a / b)| < 2^29. fl64 is monotonic, so it
    never rounds below an integer the true quotient reaches; rounding up to the next
    integer n + 1 would need (n + 1) - a / b <= |a / b| 2^-53 < 2^-24, but a - (n + 1) b is
    a nonzero multiple of b's last-bit unit u (a is a multiple of u once |a| >= |b|) and
    u / |b| > 2^-24 (for |a| < |b|, a / b is at most 1 - 2^-25 away from 1 likewise).
  * r = a - q b is then exact in float64: q b has <= 29 + 24 = 53 bits, and the exact
    difference (C's fmod(a, b), a multiple of u below |b|) is a float32 value.
Elements outside that range (|q| >= 2^29, b = 0, a = +-inf, b = +-inf (0 * inf), NaN) are
computed by NumPy itself, so the results are NumPy's bit for bit everywhere (signed zeros,
NaN, inf). float64 and the other dtypes keep NumPy's functions (the callers' dispatch)."""
from __future__ import annotations

import numpy as np

_F32 = np.dtype(np.float32)
_LIMIT = 2.0 ** 29  # |q| below this: q b and a - q b exact in float64 (see above)
_FLOOR_LIMIT = 2.0 ** 20  # floor_divide: NumPy's float32 steps round to the exact value
_MIN_SIZE = 64  # smaller results: NumPy's own functions (nothing to gain)


def fast(a, b) -> bool:
    """Whether a float32 op of ``a`` (an array) and ``b`` (an array or NumPy scalar) takes
    this module's path: float32 operands, a result of at least _MIN_SIZE elements."""
    if a.dtype != _F32 or np.result_type(b) != _F32:
        return False
    return (a.size if a.ndim and np.ndim(b) == 0 else
            np.prod(np.broadcast_shapes(a.shape, np.shape(b)))) >= _MIN_SIZE


def _parts(a, b):
    """(q, r) float64 of the broadcast shape: q = trunc(a / b), r = a - q b (exact where
    |q| < _LIMIT and b finite; r's zeros may have either sign)."""
    q = np.divide(a, b, dtype=np.float64)
    np.trunc(q, out=q)
    r = np.multiply(q, b)
    np.subtract(a, r, out=r)
    return q, r


def _all_exact(q, r, limit: float) -> bool:
    """Whether every element is in the exact range: -limit < q < limit (a NaN fails the
    comparisons: np.max / np.min propagate it) and r is not NaN (b = +-inf: a - 0 * inf)."""
    return bool(q.max() < limit) and bool(q.min() > -limit) and not np.isnan(r.max())


def _inexact(q, r, limit: float) -> np.ndarray:
    """The elements _all_exact rejects (bool, q's shape)."""
    ok = np.abs(q) < limit
    ok &= r == r
    return ~ok


def _fmod_parts(a, b):
    """(fmod(a, b) float32, q, r, exact or None: the elements of q / r to ignore)."""
    q, r = _parts(a, b)
    out = r.astype(_F32)  # (exact: a float32 value)
    np.copysign(out, a, out=out)  # C's fmod: the sign of a, zeros too
    if _all_exact(q, r, _LIMIT):
        return out, q, r, None
    bad = _inexact(q, r, _LIMIT)
    np.fmod(a, b, out=out, where=bad)
    return out, q, r, bad


def fmod(a, b) -> np.ndarray:
    """np.fmod(a, b) of float32 operands (see fast), bit for bit."""
    return _fmod_parts(a, b)[0]


def remainder(a, b) -> np.ndarray:
    """PyTorch's remainder of float32 operands (the numpy backend's _remainder: NumPy's,
    whose zero results keep the sign of a), bit for bit: fmod(a, b), plus b in float32
    where fmod is nonzero with the sign opposite to b's (NumPy's npy_divmod: mod += b)."""
    out, q, r, bad = _fmod_parts(a, b)
    m = np.signbit(out)  # m: fmod nonzero, its sign not b's (NumPy: mod && (b < 0) != (mod < 0))
    m ^= np.signbit(b)
    m &= out != 0
    # out + m b (m 0/1; no branches: np.where on a random mask mispredicts ~half its
    # elements); a zero result is a zero fmod with m = 0 (with m = 1, |fmod| < |b|), whose
    # sign (a's) the + 0 may have lost
    out += b * m
    np.copysign(out, a, out=out, where=out == 0)
    if bad is not None:  # NumPy's remainder there, its zeros given a's sign
        np.remainder(a, b, out=out, where=bad)
        bad &= out == 0
        np.copysign(out, a, out=out, where=bad)
    return out


def floor_divide(a, b) -> np.ndarray:
    """np.floor_divide(a, b) of float32 operands, bit for bit. NumPy's npy_divmod in float32:
    div = (a - fmod) / b, minus 1 where fmod is nonzero with the sign opposite to b's, then
    floor(div), plus 1 where div - floor(div) > 0.5 (zero: copysign(0, a / b)). For
    |q| < 2^20 its two roundings of a - fmod = q b and of / b move div by < 2^20 2^-23,
    the - 1 by <= 2^-4, so the snap gives the exact q - m (m: that 0/1 correction); a zero
    is q's, whose sign is a / b's. Elsewhere NumPy computes it."""
    q, r = _parts(a, b)
    np.multiply(r, b, out=r)
    out = np.empty(q.shape, _F32)
    np.subtract(q, r < 0, out=out)  # q - m, exact (|q| < 2^20); -0.0 - 0 stays -0.0
    if not _all_exact(q, r, _FLOOR_LIMIT):
        np.floor_divide(a, b, out=out, where=_inexact(q, r, _FLOOR_LIMIT))
    return out
