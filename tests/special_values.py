"""Inputs with special values for the bit-identity tests of the CPU fast paths (a NumPy path
against the composite it replaces): NaNs with distinct payloads, +-inf, +-0; a transposed
(non-contiguous) leaf; and the bytes two results are compared by."""

from __future__ import annotations

import numpy as np

import tgrad

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def with_nan_payloads(a: np.ndarray, rng: np.random.Generator, high: int = 99) -> np.ndarray:
    """a (float16/32/64) with a random payload (1 .. high - 1) ORed into each NaN, in place."""
    ints = a.view(_UINT[a.itemsize])
    nan = np.isnan(a)
    ints[nan] |= rng.integers(1, high, int(nan.sum())).astype(ints.dtype)
    return a


def mixed_specials(shape: tuple, dt, rng: np.random.Generator,
                   cuts: tuple = (0.1, 0.15, 0.2, 0.23, 0.26)) -> np.ndarray:
    """N(0, 1) of ``dt`` with -0.0 where a uniform draw r < cuts[0], +0.0 up to cuts[1], NaN
    (with payloads) up to cuts[2], -inf up to cuts[3], +inf up to cuts[4]."""
    a = rng.standard_normal(shape).astype(dt)
    r = rng.random(shape)
    lo = 0.0
    for value, hi in zip((-0.0, 0.0, np.nan, -np.inf, np.inf), cuts):
        a[(r >= lo) & (r < hi)] = value
        lo = hi
    return with_nan_payloads(a, rng)


def raw_bytes(a: np.ndarray) -> bytes:
    """a's elements' bytes in C order (any layout)."""
    return np.ascontiguousarray(a).tobytes()


def nan_canonical(a: np.ndarray) -> bytes:
    """a's bytes with every NaN as np.nan (NaN payloads and signs aside; float16 compared as
    float32); the rest bit for bit."""
    a = np.array(a, dtype=np.float32 if a.dtype == np.float16 else a.dtype)
    a[np.isnan(a)] = np.nan
    return a.tobytes()


def layout_leaf(xn: np.ndarray, layout: str) -> tgrad.Tensor:
    """xn as a leaf requiring grad: C-contiguous (layout "c") or through a transposed copy
    (a non-contiguous view)."""
    if layout == "c":
        return tgrad.tensor(xn, requires_grad=True)
    base = tgrad.tensor(np.ascontiguousarray(np.swapaxes(xn, -1, -2)))
    return base.transpose(-1, -2).detach().requires_grad_(True)
