"""CPU forward of nansum's NaN-to-zero step (tgrad/ops/extras.py ``NanToZero``): the
composition ``where(~isnan(x), x, 0.0)`` as one copy and, only where x holds a NaN, a
masked write of +0.0 (``copyto``: the same bits as the where; ~40 us -> ~8 us for
(256, 256) float32 without NaN). Not a backend primitive: the op takes it for CPU
float32/float64 arrays only (``fast_dtype``); cuda keeps the composition."""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_dtypes import fast_dtype  # noqa: F401 - the caller's dtype test


def nan_to_zero(x: np.ndarray) -> tuple:
    """(y, nan): y a fresh copy of x in x's layout (order "K", as the where keeps it, so
    the sum after it adds in the same order) with +0.0 at x's NaNs; nan the bool mask of
    x's NaNs (x's shape), None when x holds none."""
    nan = np.isnan(x)
    y = np.array(x, order="K")
    if not nan.any():
        return y, None
    np.copyto(y, x.dtype.type(0), where=nan)
    return y, nan
