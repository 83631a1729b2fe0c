"""``tgrad.backends.mkl``: ``is_available()`` says whether NumPy, tgrad's CPU backend, is
linked against Intel MKL (from NumPy's build configuration)."""

from __future__ import annotations

from tgrad.backends._numpy_build import blas_info

__all__ = ["is_available"]


def is_available() -> bool:
    """True when NumPy's BLAS is MKL."""
    return "mkl" in str(blas_info().get("name", "")).lower()
