"""The CPU primitives' scratch arrays, kept from call to call (``WORKSPACE``): fresh
temporaries of a few MiB fault their pages in again on every step (glibc trims the freed
top of its heap), so the convolution's columns (_numpy_conv) and batch_norm's blocks
(_numpy_nn) reuse theirs. Never a tensor's memory."""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

__all__ = ["WORKSPACE", "Workspace"]


class Workspace:
    """Scratch arrays kept between calls, by (tag, shape, dtype): ``take`` hands out one no
    other caller holds (a kept one, or a new one), ``give`` puts it back for the next
    ``take`` of its key. An array is held by at most one caller between its take and its
    give, and only by CPU primitives (_numpy_conv's and batch_norm's in _numpy_nn; never a
    tensor's memory: outputs and gradients are fresh arrays), so reuse cannot alias
    anything a user sees. At most
    ``max_bytes`` are kept (the least recently given dropped first; an array larger than
    that is never kept); ``clear`` drops them all. Thread-safe (one lock)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict = OrderedDict()  # key -> [arrays]
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, tag, shape: tuple, dtype: np.dtype, zeros: bool = False) -> np.ndarray:
        """A C-contiguous (shape) array of dtype: uninitialized (zeros when new and
        ``zeros``: a kept one holds what its last user left, which for tag "pad" is a zero
        border, as nothing writes it)."""
        key = (tag, shape, dtype)
        with self._lock:
            arrays = self._kept.get(key)
            if arrays:
                a = arrays.pop()
                if not arrays:
                    del self._kept[key]
                self._bytes -= a.nbytes
                return a
        return np.zeros(shape, dtype) if zeros else np.empty(shape, dtype)

    def give(self, tag, a: np.ndarray) -> None:
        """Keep ``a`` (taken with ``tag``; its caller drops every reference to it)."""
        if a.nbytes > self.max_bytes:
            return
        key = (tag, a.shape, a.dtype)
        with self._lock:
            self._kept.setdefault(key, []).append(a)
            self._kept.move_to_end(key)
            self._bytes += a.nbytes
            while self._bytes > self.max_bytes:  # the least recently given key first
                old = next(iter(self._kept))
                arrays = self._kept[old]
                self._bytes -= arrays.pop(0).nbytes
                if not arrays:
                    del self._kept[old]

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays kept now."""
        return self._bytes


# (64 MiB: the columns and their gradient of a few layers of a small CNN; a larger
# convolution's scratch arrays are made fresh every call, as before)
WORKSPACE = Workspace(64 << 20)
