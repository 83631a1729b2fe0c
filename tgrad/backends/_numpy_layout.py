"""CPU paths of layout ops of tgrad/ops (roll: tgrad/ops/composite.py): the compositions'
copies done on the arrays at once, without one tgrad op (a Function, a wrapped tensor) per
step. Not a backend primitive: the cuda device keeps the compositions. Pure copies (no
arithmetic), so the values are the compositions' bit for bit, for every dtype.
"""

from __future__ import annotations

import itertools

import numpy as np


def roll_shifts(shape: tuple, shifts: tuple, dims: tuple) -> dict:
    """{dim: k} with k = the total shift mod n of each (wrapped) dim of size n that moves
    (a dim listed twice rolls by the sum, as two rolls do); {} when nothing moves."""
    ks: dict = {}
    for s, d in zip(shifts, dims):
        n = shape[d]
        if n:
            ks[d] = (ks.get(d, 0) + s) % n
    return {d: k for d, k in ks.items() if k}


def roll(a: np.ndarray, ks: dict) -> np.ndarray:
    """``a`` rolled by ``ks`` (roll_shifts, nonempty): a new C-contiguous array whose first
    k elements along each dim d are a's last k (out[..., :k, ...] = a[..., n-k:, ...],
    out[..., k:, ...] = a[..., :n-k, ...]): the cat of two narrows per dim that the
    composition makes, as 2^len(ks) block copies."""
    out = np.empty(a.shape, a.dtype)
    pieces = []
    for d, k in ks.items():
        n = a.shape[d]  # (destination slice, source slice) pairs along d
        pieces.append(((d, slice(0, k), slice(n - k, n)), (d, slice(k, n), slice(0, n - k))))
    full = [slice(None)] * a.ndim
    for combo in itertools.product(*pieces):
        dst, src = list(full), list(full)
        for d, to, frm in combo:
            dst[d], src[d] = to, frm
        out[tuple(dst)] = a[tuple(src)]
    return out


def one_hot(idx: np.ndarray, num_classes: int) -> np.ndarray:
    """int64 array of shape (*idx.shape, num_classes), C-contiguous: 1 at each (checked:
    0 <= i < num_classes) class index, 0 elsewhere; the values of the composition
    ``(idx[..., None] == arange(num_classes)).long()`` by one scatter of ones into zeros
    at the flat positions p * num_classes + idx[p]."""
    n = idx.size
    out = np.zeros(n * num_classes, np.int64)
    if n and num_classes:
        out[np.arange(0, n * num_classes, num_classes) + idx.reshape(-1)] = 1
    return out.reshape(idx.shape + (num_classes,))
