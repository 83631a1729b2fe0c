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

__all__ = ["matmul", "is_built"]

_FLAG_NAMES = ("allow_tf32",)
_LOCAL: dict[str, Any] = {"allow_tf32": False}  # used only when Triton is not installed


def _flags():
    """tgrad.kernels.matmul.FLAGS, or None when Triton is not installed."""
    if importlib.util.find_spec("triton") is None:
        return None
    return importlib.import_module("tgrad.kernels.matmul").FLAGS


class _MatmulFlags:
    """``tgrad.backends.cuda.matmul``: ``allow_tf32`` (default False, as in PyTorch)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name not in _FLAG_NAMES:
            raise AttributeError(f"Unknown attribute {name} (tgrad.backends.cuda.matmul has "
                                 f"{', '.join(_FLAG_NAMES)})")
        flags = _flags()
        return _LOCAL[name] if flags is None else getattr(flags, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _FLAG_NAMES:
            raise AttributeError(f"Unknown attribute {name} (tgrad.backends.cuda.matmul has "
                                 f"{', '.join(_FLAG_NAMES)})")
        if not isinstance(value, bool):
            raise TypeError(f"tgrad.backends.cuda.matmul.{name} must be a bool, got "
                            f"{type(value).__name__}")
        flags = _flags()
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
