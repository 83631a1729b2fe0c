"""``tgrad.backends.cpu``: ``get_cpu_capability()``, the SIMD level of the CPU code. tgrad's
CPU ops are NumPy's, so this is what NumPy detected at run time, in PyTorch's names."""

from __future__ import annotations

__all__ = ["get_cpu_capability"]


def get_cpu_capability() -> str:
    """'AVX512' or 'AVX2' (x86, as NumPy detects them: AVX512 means the Skylake-X set,
    PyTorch's requirement), 'SVE' on ARM with SVE, otherwise 'DEFAULT'."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as feats
    except ImportError:  # NumPy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as feats
    if feats.get("AVX512_SKX"):
        return "AVX512"
    if feats.get("AVX2") and feats.get("FMA3"):
        return "AVX2"
    if feats.get("SVE"):
        return "SVE"
    return "DEFAULT"
