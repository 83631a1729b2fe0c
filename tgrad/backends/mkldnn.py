"""``tgrad.backends.mkldnn``: tgrad's CPU ops run on NumPy, which does not use oneDNN
(MKL-DNN): ``is_available()`` is False; the ``enabled`` flag is recorded and has no effect."""

from __future__ import annotations

import sys
from typing import Iterator

from tgrad.backends import _flags

__all__ = ["is_available", "enabled", "deterministic", "allow_tf32", "flags"]

enabled: bool = True
deterministic: bool = False
allow_tf32: bool = True


def is_available() -> bool:
    """False: NumPy (tgrad's CPU backend) does not use oneDNN."""
    return False


def flags(enabled: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:
    """Context manager setting the flags inside the block, restoring them after."""
    return _flags.set_flags(sys.modules[__name__], enabled=enabled,
                            deterministic=deterministic, allow_tf32=allow_tf32)


_flags.install(__name__, ("enabled", "deterministic", "allow_tf32"))
