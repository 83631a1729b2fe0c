"""Registers the ``cuda`` backend without importing Triton at ``import tgrad`` time: the
proxy loads tgrad/backends/triton.py on first use, or raises a one-line error naming why
CUDA is unavailable."""

from __future__ import annotations

from tgrad.backends import register_backend
from tgrad.cuda._runtime import get_runtime_or_none, why_unavailable


class _LazyTritonBackend:
    name = "triton"

    def _load(self):
        if get_runtime_or_none() is None:
            raise RuntimeError(f"tgrad: device 'cuda' is not available: {why_unavailable()}")
        from tgrad.backends import triton as mod
        register_backend("cuda", mod)
        return mod

    def __getattr__(self, attr: str):
        return getattr(self._load(), attr)


register_backend("cuda", _LazyTritonBackend())
