"""Per-op metadata for the roofline columns: bytes read + written, and FLOPs.

An op (a ``Function`` subclass) may define either as a staticmethod:

    flops(args, out) -> int            # floating point operations of one call
    bytes_accessed(args, out) -> int   # bytes read + written by one call

``args`` are the positional arguments given to ``apply`` and ``out`` what ``forward``
returned (None if the call raised). Without ``bytes_accessed`` the default counts the
``nbytes`` of every tensor argument (read) and every tensor output (written); an output
that is a new view of an input's storage counts 0 (a view moves no data). Without
``flops`` the count is unknown (None).
"""

from __future__ import annotations

from typing import Any

from tgrad.tensor import Tensor

__all__ = ["default_bytes", "op_hooks"]


def default_bytes(args: tuple, out: Any) -> int:
    """nbytes of tensor inputs plus tensor outputs; 0 when the output is a view."""
    read = 0
    for a in args:
        if isinstance(a, Tensor):
            read += a._data.nbytes
    if isinstance(out, Tensor):  # the common case: one output
        w = _written(out, args)
        return 0 if w < 0 else read + w
    if not isinstance(out, tuple):
        return read
    total = read
    for o in out:
        if isinstance(o, Tensor):
            w = _written(o, args)
            if w < 0:
                return 0
            total += w
    return total


def _written(o: Tensor, args: tuple) -> int:
    """Bytes written to output ``o``; -1 when ``o`` is a new view of an input's storage."""
    s = o._storage
    for a in args:
        if isinstance(a, Tensor) and a._storage is s:
            return o._data.nbytes if a is o else -1  # in-place writes back; a view moves 0
    return o._data.nbytes


def op_hooks(cls: type, name: str) -> tuple:
    """(bytes_fn, flops_fn) for an op class, looked up once per class per profile."""
    nb = getattr(cls, "bytes_accessed", None) or default_bytes
    fl = getattr(cls, "flops", None)
    return nb, fl
