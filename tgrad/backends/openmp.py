"""``tgrad.backends.openmp``: ``is_available()`` says whether NumPy's BLAS (the only
multithreaded code under tgrad's CPU ops) was built with OpenMP, from NumPy's build
configuration (OpenBLAS's ``USE_OPENMP``); tgrad itself has no OpenMP code."""

from __future__ import annotations

from tgrad.backends._numpy_build import blas_info

__all__ = ["is_available"]


def is_available() -> bool:
    """True when NumPy's BLAS reports an OpenMP build."""
    info = blas_info()
    conf = " ".join(str(v) for v in info.values()).upper()
    return "USE_OPENMP=1" in conf or "OPENMP" in str(info.get("name", "")).upper()
