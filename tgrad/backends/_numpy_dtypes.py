"""The dtypes of the CPU fast paths (the NumPy backend's private helpers): float32 and
float64 run their NumPy steps; halves, complex and the rest take the ops' compositions."""

from __future__ import annotations

import numpy as np

FLOAT32_64 = frozenset((np.dtype(np.float32), np.dtype(np.float64)))


def fast_dtype(dt: np.dtype) -> bool:
    """Whether the CPU fast paths take arrays of NumPy dtype ``dt``."""
    return dt in FLOAT32_64
