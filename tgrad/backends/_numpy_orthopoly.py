"""CPU (NumPy) forwards of the orthogonal polynomials of tgrad.ops.special_functions for a
float32 / float64 array x and one number n (the common call, ``T_n(x)`` with n = 5): the
composites' operations per element in the same order, so the results are bit-identical.

With one n every mask of the composites is uniform: the recurrence runs on every element
(its ``where(active, ...)`` keep the new term), the trigonometric closed forms are not used
(the callers come here only for n up to their thresholds), and only the ends (x = +-1, or
1 / 0 for the shifted Chebyshev forms; x = 0 for Laguerre) are set afterwards, on their own
elements. The composites' ~50 tensor ops with full-size masks become n - 1 recurrence steps
of three or four NumPy operations: (256, 256) float32 T_5 1134 -> ~60 us.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

Step = Callable[[float, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def scalar_degree(n: float, dtype: np.dtype) -> int:
    """n as the composites' _poly_args take it: rounded to x's dtype, truncated; NaN, +-inf
    and |n| >= 2^63 count as -1 (PyTorch's static_cast<int64_t>(n))."""
    with np.errstate(all="ignore"):
        v = float(np.trunc(np.asarray(n, dtype=dtype)))
    return -1 if math.isnan(v) or abs(v) >= 2.0 ** 63 else int(v)


def _set_where(out: np.ndarray, mask: np.ndarray, value) -> None:
    """out[mask] = value (value: a number or an array of out's shape), on mask's elements."""
    idx = np.flatnonzero(mask)
    if idx.size:
        out.flat[idx] = value if np.ndim(value) == 0 else np.ravel(value).take(idx)


def recurrence(x: np.ndarray, nn: int, q0: Callable[[np.ndarray], np.ndarray], first: int,
               step: Step) -> np.ndarray:
    """q_n (a new array of x's shape and dtype) for nn >= 0: q_0 = 1, q_1 = q0(x), then
    q_k = step(k - 1, x, q_(k-1), q_(k-2)) for k = first + 1 .. nn (special_functions.
    _three_term's and _chebyshev's recurrences, ``first`` their first k minus one). (An
    array also for a 0-d x, whose arithmetic gives NumPy scalars.)"""
    if nn == 0:
        return np.ones_like(x)
    p, q = np.ones_like(x), q0(x)
    with np.errstate(all="ignore"):
        for k in range(first + 1, nn + 1):
            p, q = q, step(k - 1.0, x, q, p)
    return np.array(q) if q is x or not isinstance(q, np.ndarray) else q


def three_term(x: np.ndarray, nn: int, q0, first: int, step: Step, cap: int | None,
               ends: Callable[[np.ndarray, int], tuple] | None) -> np.ndarray:
    """special_functions._three_term for one degree nn: 0 for nn < 0, NaN above ``cap``
    (Hermite), the recurrence otherwise, then ``ends`` (mask, value) set."""
    if nn < 0:
        return np.zeros_like(x)
    if cap is not None and nn > cap:
        return np.full_like(x, math.nan)
    out = recurrence(x, nn, q0, first, step)
    if ends is not None:
        mask, value = ends(x, nn)
        _set_where(out, mask, value)
    return out


def chebyshev(kind: str, shifted: bool, x: np.ndarray, nn: int) -> np.ndarray:
    """special_functions._chebyshev for one degree nn at most its closed-form threshold:
    T/U/V/W_n(y), y = x (``shifted``: 2x - 1), by (y + y) q - p from q_1 = y, 2y, 2y - 1,
    2y + 1; PyTorch's values at the ends."""
    if nn < 0:
        return np.zeros_like(x)
    with np.errstate(all="ignore"):
        y = x + x - 1.0 if shifted else x
    q0 = {"t": lambda y: y, "u": lambda y: y + y, "v": lambda y: y + y - 1.0,
          "w": lambda y: y + y + 1.0}[kind]
    out = recurrence(y, nn, q0, 1, lambda k, y, q, p: (y + y) * q - p)
    sign = 1.0 if nn % 2 == 0 else -1.0
    top, bottom = {"t": (1.0, sign), "u": (nn + 1.0, sign * (nn + 1.0)),
                   "v": (1.0, sign * (2.0 * nn + 1.0)), "w": (2.0 * nn + 1.0, sign)}[kind]
    _set_where(out, x == 1.0, top)
    _set_where(out, x == 0.0 if shifted else x == -1.0, bottom)
    return out
