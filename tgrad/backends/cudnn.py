"""``tgrad.backends.cudnn``: torch.backends.cudnn's flags. tgrad uses no cuDNN (its GPU
kernels are Triton's), so ``is_available()`` is False and ``version()`` None, and the flags
are recorded but change nothing: ``enabled`` (True), ``benchmark`` (False),
``deterministic`` (False), ``allow_tf32`` (True; PyTorch's flag for cuDNN convolutions, a
separate flag from ``tgrad.backends.cuda.matmul.allow_tf32``, which tgrad's matmuls do
honour). For deterministic algorithms see ``tgrad.use_deterministic_algorithms`` where
available; ``cudnn.deterministic`` does not tie to it (as in PyTorch)."""

from __future__ import annotations

from typing import Iterator

from tgrad.backends import _flags

__all__ = ["is_available", "version", "flags", "enabled", "benchmark", "deterministic",
           "allow_tf32"]

enabled: bool = True
benchmark: bool = False
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: tgrad is not built with cuDNN."""
    return False


def version() -> None:
    """None: tgrad is not built with cuDNN (PyTorch's value without it)."""
    return None


def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    """Context manager setting the four flags inside the block (PyTorch's defaults of the
    arguments), restoring them after."""
    import sys
    return _flags.set_flags(sys.modules[__name__], enabled=enabled, benchmark=benchmark,
                            deterministic=deterministic, allow_tf32=allow_tf32)


_flags.install(__name__, ("enabled", "benchmark", "deterministic", "allow_tf32"))
