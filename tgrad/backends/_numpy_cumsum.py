"""The NumPy backend's cumsum along a dim that is not the innermost, with many lines
(tgrad/backends/numpy.py ``cumsum``): np.cumsum there runs one sequential strided loop per
line (~11 ns an element for (256, 256) along dim 0, against ~3 ns along dim 1). With the
scan dim moved first, the lines become the columns of a (n, R) array and step k is one
vectorised addition of row k - 1 into row k over all R lines. Each element sees the same
additions in the same order (y_k = y_{k-1} + x_k in the accumulation dtype, left to right;
from the end when reversed), so the bits are np.cumsum's. Worth it when R is large: n NumPy
calls of ~0.4 us (measured, (256, 256) float32 along dim 0: 720 -> 96 us; along the
innermost dim no gain, so np.cumsum stays there)."""

from __future__ import annotations

import numpy as np

# the fewest lines (product of the other dims) for which the row loop wins
MIN_LINES = 64


def use_rows(shape: tuple, axis: int) -> bool:
    """Whether ``cumsum_rows`` beats np.cumsum for an array of ``shape`` along ``axis``:
    a dim with elements after it (np.cumsum's strided lines) and many lines."""
    inner = 1
    for s in shape[axis + 1:]:
        inner *= s
    lines = inner
    for s in shape[:axis]:
        lines *= s
    return shape[axis] > 1 and inner > 1 and lines >= MIN_LINES


def cumsum_rows(x: np.ndarray, axis: int, reverse: bool, cd: np.dtype,
                dt: np.dtype) -> np.ndarray:
    """Inclusive sum scan of x along ``axis`` accumulated in ``cd`` (from the end when
    ``reverse``), rounded to ``dt``; a new C-contiguous array of x's shape."""
    a = np.moveaxis(x, axis, 0).astype(cd, order="C")     # (n, ...) a fresh copy
    rows = list(a.reshape(a.shape[0], -1))                 # n views of R elements
    if reverse:
        rows.reverse()
    add, prev = np.add, rows[0]
    for r in rows[1:]:
        add(prev, r, out=r)
        prev = r
    out = np.moveaxis(a, 0, axis)
    return np.ascontiguousarray(out) if out.dtype == dt else out.astype(dt, order="C")
