"""What NumPy's build says about its BLAS (for tgrad.backends.mkl / openmp)."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def blas_info() -> dict:
    """NumPy's ``show_config`` entry for its BLAS ({} when NumPy does not report one)."""
    import numpy as np
    try:
        cfg = np.show_config(mode="dicts")
        return dict(cfg.get("Build Dependencies", {}).get("blas", {}) or {})
    except Exception:  # noqa: BLE001 - older NumPy: no dict mode
        return {}
