"""The CPU backend's one process-level step: let glibc's malloc keep freed heap memory.

NumPy takes every array from ``malloc``. glibc serves a request above its mmap threshold
(128 KiB at start) with a fresh ``mmap`` and raises the threshold, up to 32 MiB, to the
size of each such block freed; it hands the free top of the heap back to the system once
that exceeds twice the threshold (the trim threshold). A training step frees several
MiB of activations and gradients at once, so with the thresholds where they happen to be,
the heap top was returned and faulted in again page by page on every step (~2 us a page):
377 faults and 0.65 ms of an LSTM step's 2.9 ms, and 4,500 faults in a small CNN's step,
depending only on the heap layout (the same code ran without them from another folder).

``prime_heap`` takes and frees one block just under glibc's 32 MiB limit without touching
its pages (no page is faulted in): glibc's own rule then sets the mmap threshold to 32 MiB
and the trim threshold to 64 MiB, as it does in any program once it has freed a block that
large. Cost: the process keeps up to 64 MiB of freed heap for reuse. Thresholds the user
fixed (``mallopt`` or ``MALLOC_MMAP_THRESHOLD_``) stay as they are (glibc then skips its
rule); other C libraries just allocate and free the block. ``TGRAD_HEAP_PRIME=0`` in the
environment leaves the heap alone. docs/performance.md, "The heap: page faults".
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["prime_heap"]

# glibc's largest dynamic mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX, 32 MiB)
# less room for the chunk header and NumPy's alignment: the freed block must not exceed it
PRIME_BYTES = (32 << 20) - (64 << 10)


def prime_heap() -> bool:
    """Allocate and free one untouched PRIME_BYTES block (module docstring); False when
    ``TGRAD_HEAP_PRIME`` is 0 or empty."""
    if os.environ.get("TGRAD_HEAP_PRIME", "1") in ("0", ""):
        return False
    block = np.empty(PRIME_BYTES, np.uint8)  # mmapped, never written: no page faulted in
    del block
    return True
