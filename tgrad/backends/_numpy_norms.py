"""CPU paths of the norm family's plain backwards (tgrad/ops/reduce.py Norm, rms_norm of
tgrad/nn/_norm.py): the same NumPy steps as the tgrad compositions they replace, run on the
arrays at once, without one tgrad op (Python, a Function, a wrapped tensor) per step. Not
a backend primitive: on cuda, under create_graph and inside forward AD the ops keep their
compositions; the callers take these for CPU float32/float64 arrays only (``fast_dtype``).

Bit-identity with the compositions: every arithmetic step is the composition's own NumPy
ufunc on the same operands in the same order (a reduced operand broadcast against the full
one, as the composition's stride-0 expand), results written in place into a fresh
temporary of the full shape; a ``where`` that selects a constant is a ``copyto`` of that
constant under the mask (the same bits), skipped when the mask is all false.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends import numpy as be

_FAST = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def fast_dtype(dt: np.dtype) -> bool:
    """Whether the functions here take arrays of NumPy dtype ``dt``."""
    return dt in _FAST


def norm_grad(g: np.ndarray, x: np.ndarray, y: np.ndarray, p: float, kept: tuple) -> np.ndarray:
    """dx of y = ||x||_p (p = 1 or 2) over some axes: g and y the reduced gradient and norm
    (any shape of ``kept``'s size: ``kept`` is x's shape with 1 on the reduced axes), x
    C-contiguous, non-empty, at least 1-d; all of one float32/float64 dtype.

    p=2: g * where(y == 0, 0, x / y)    (reduce._norm_grad's order: the ratio first)
    p=1: g * sign(x)
    """
    gb, yb = g.reshape(kept), y.reshape(kept)
    token = be._quiet_enter()
    try:
        if p == 2:
            r = np.true_divide(x, yb)
            zero = np.equal(yb, 0.0)
            if zero.any():  # where(y == 0, 0.0, r): +0.0 under the (broadcast) mask
                np.copyto(r, r.dtype.type(0.0), where=zero)
        else:
            r = np.sign(x)
        return np.multiply(gb, r, out=r)
    finally:
        be._quiet_exit(token)
