"""``tgrad.backends.cuda``: PyTorch's ``torch.backends.cuda`` flags for tgrad's GPU backend.

    import tgrad.backends.cuda
    tgrad.backends.cuda.matmul.allow_tf32 = True   # float32 matmuls may use TF32 tensor cores

The flag itself lives in ``tgrad.kernels.matmul.FLAGS`` (read at every matmul launch). This
module imports nothing heavy: ``matmul`` is a proxy that imports tgrad.kernels.matmul (and
with it Triton) on first use of a flag, so ``import tgrad`` / ``import tgrad.backends.cuda``
never import Triton. Without Triton installed the flag is kept here (there is no GPU matmul
for it to affect); it is still readable and settable.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["matmul", "is_built", "enable_flash_sdp", "flash_sdp_enabled",
           "enable_mem_efficient_sdp", "mem_efficient_sdp_enabled", "enable_math_sdp",
           "math_sdp_enabled", "enable_cudnn_sdp", "cudnn_sdp_enabled", "sdp_kernel",
           "preferred_linalg_library", "preferred_blas_library"]

_FLAG_NAMES = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
               "allow_bf16_reduced_precision_reduction")
# allow_tf32 here only when Triton is not installed; the reduced-precision flags always (PyTorch's
# defaults, True; recorded only: tgrad's float16/bfloat16 matmuls always accumulate in float32)
_LOCAL: dict[str, Any] = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                          "allow_bf16_reduced_precision_reduction": True}
_RECORDED = frozenset(_FLAG_NAMES[1:])


def _flags():
    """tgrad.kernels.matmul.FLAGS, or None when Triton is not installed."""
    if importlib.util.find_spec("triton") is None:
        return None
    return importlib.import_module("tgrad.kernels.matmul").FLAGS


class _MatmulFlags:
    """``tgrad.backends.cuda.matmul``: ``allow_tf32`` (default False, as in PyTorch) and the
    recorded ``allow_fp16_reduced_precision_reduction`` / ``allow_bf16_...`` (default True)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name not in _FLAG_NAMES:
            raise AttributeError(f"Unknown attribute {name} (tgrad.backends.cuda.matmul has "
                                 f"{', '.join(_FLAG_NAMES)})")
        flags = None if name in _RECORDED else _flags()
        return _LOCAL[name] if flags is None else getattr(flags, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _FLAG_NAMES:
            raise AttributeError(f"Unknown attribute {name} (tgrad.backends.cuda.matmul has "
                                 f"{', '.join(_FLAG_NAMES)})")
        if not isinstance(value, bool):
            raise TypeError(f"tgrad.backends.cuda.matmul.{name} must be a bool, got "
                            f"{type(value).__name__}")
        flags = None if name in _RECORDED else _flags()
        if flags is None:
            _LOCAL[name] = value
        else:
            setattr(flags, name, value)

    def __repr__(self) -> str:
        return "tgrad.backends.cuda.matmul(" + ", ".join(
            f"{n}={getattr(self, n)}" for n in _FLAG_NAMES) + ")"


matmul = _MatmulFlags()


def is_built() -> bool:
    """True when this tgrad can run the GPU backend (Triton is installed); as in PyTorch it
    says nothing about whether a GPU is present (see ``tgrad.cuda.is_available()``)."""
    return importlib.util.find_spec("triton") is not None


# Scaled dot product attention backends (torch.backends.cuda's sdp flags). tgrad's
# scaled_dot_product_attention has one implementation, which runs whenever any of the math,
# flash, mem_efficient or cudnn flags is on; with all four off it raises PyTorch's "No viable
# backend" error. tgrad.nn.attention.sdpa_kernel sets these flags.
SDP_FLAGS: dict[str, bool] = {"cudnn": True, "flash": True, "mem_efficient": True,
                              "math": True, "overrideable": True}


def _set_sdp(name: str, enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise RuntimeError(f"enable_{name}_sdp expects a bool, but got "
                           f"{type(enabled).__name__}")
    SDP_FLAGS[name] = enabled


def enable_flash_sdp(enabled: bool) -> None:
    _set_sdp("flash", enabled)


def flash_sdp_enabled() -> bool:
    return SDP_FLAGS["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _set_sdp("mem_efficient", enabled)


def mem_efficient_sdp_enabled() -> bool:
    return SDP_FLAGS["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    _set_sdp("math", enabled)


def math_sdp_enabled() -> bool:
    return SDP_FLAGS["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _set_sdp("cudnn", enabled)


def cudnn_sdp_enabled() -> bool:
    return SDP_FLAGS["cudnn"]


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """Deprecated (FutureWarning, as in PyTorch): ``tgrad.nn.attention.sdpa_kernel`` with
    the enabled backends."""
    import warnings

    from tgrad.nn.attention import SDPBackend, sdpa_kernel
    warnings.warn("`tgrad.backends.cuda.sdp_kernel()` is deprecated. In the future, this "
                  "context manager will be removed. Please see "
                  "`tgrad.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=2)
    chosen = [b for b, on in ((SDPBackend.FLASH_ATTENTION, enable_flash),
                              (SDPBackend.EFFICIENT_ATTENTION, enable_mem_efficient),
                              (SDPBackend.MATH, enable_math),
                              (SDPBackend.CUDNN_ATTENTION, enable_cudnn)) if on]
    return sdpa_kernel(chosen)


# Preferred libraries (torch.backends.cuda.preferred_linalg_library / preferred_blas_library).
# tgrad's cuda linear algebra and matmuls are its own Triton kernels (no cuSOLVER, MAGMA or
# cuBLAS), so the one choice is "default"; naming a library tgrad lacks raises.
class _Backend:
    """An enum member as PyTorch's _LinalgBackend / _BlasBackend: prints as Kind.Name."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name

    def __repr__(self) -> str:
        return f"{self.kind}.{self.name}"


_LINALG_DEFAULT = _Backend("_LinalgBackend", "Default")
_BLAS_DEFAULT = _Backend("_BlasBackend", "Default")
_LINALG_NAMES = {"cusolver": "cuSOLVER", "magma": "MAGMA"}
_BLAS_NAMES = {"cublas": "cuBLAS", "hipblas": "hipBLAS", "cublaslt": "cuBLASLt",
               "hipblaslt": "hipBLASLt", "ck": "CK"}


def _preferred(op: str, backend, default: _Backend, names: dict) -> _Backend:
    if backend is None or backend is default:
        return default
    if not isinstance(backend, str):
        raise RuntimeError(f"{op}: Unknown input value type {type(backend).__name__}; give "
                           f"None or a string")
    key = backend.lower()
    if key == "default":
        return default
    if key in names:
        raise RuntimeError(f"Cannot set preferred backend to {names[key]}: tgrad has no "
                           f"{names[key]} (its cuda ops are Triton kernels); use 'default'")
    raise RuntimeError(f"Unknown input value. Choose from: default, {', '.join(names)}.")


def preferred_linalg_library(backend: str | None = None) -> _Backend:
    """The linear-algebra library cuda ops use: always ``_LinalgBackend.Default`` (tgrad's
    own kernels; 'cusolver' / 'magma' raise). CPU linear algebra is NumPy's LAPACK."""
    return _preferred("preferred_linalg_library", backend, _LINALG_DEFAULT, _LINALG_NAMES)


def preferred_blas_library(backend: str | None = None) -> _Backend:
    """The BLAS cuda matmuls use: always ``_BlasBackend.Default`` (tgrad's Triton matmul;
    'cublas', 'cublaslt', ... raise). CPU matmuls are NumPy's BLAS."""
    return _preferred("preferred_blas_library", backend, _BLAS_DEFAULT, _BLAS_NAMES)
