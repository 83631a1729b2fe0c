"""CPU paths of the along-dim index ops (tgrad/ops/gathering.py's gather, take_along_dim,
scatter, scatter_add and tgrad/ops/tensor_extras.py's put) on the NumPy arrays.

The advanced key of ``gather(x, dim, index)`` reads x[a_0, .., index, .., a_{r-1}] with
a_k = arange(index.shape[k]) broadcast along dim k; its C-order linear positions in x (shape
S, row-major strides s_k = prod S[k+1:]) are

    flat = index * s_dim + sum_{k != dim} a_k * s_k        (int64, index's shape)

built here by arithmetic on the (already range-checked) index, without NumPy's generic
multi-array indexing (np.take_along_axis / x[key]: ~5x slower) or a second range check.
Reads are ``np.take`` of x's flat (C-order) array, writes a flat assignment and sums
``np.add.at`` of the flat positions: the same elements as the key's, visited in the same
(C) order as NumPy's indexing and the backend's ``_ufunc_at`` visit them, so a repeated
position keeps the same written value and folds its sum in the same order (the same bits).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad.backends.numpy import _down, _up, compute_dtype, quiet

__all__ = ["key_and_flat", "flat_positions", "take", "add_at", "written", "wrapped"]


def key_and_flat(shape: tuple, dim: int, index: np.ndarray) -> tuple:
    """(the normalized advanced key of the gather along ``dim`` of an array of ``shape``:
    index as a new int64 array at dim, aranges reshaped to broadcast elsewhere (what
    normalize_key makes of gathering._along_key's tensors); its flat positions).
    index: integer, >= 1 dims (as many as shape), values in [0, shape[dim])."""
    idx = index.astype(np.int64)  # (a copy: the key keeps the forward's indices)
    key = []
    for k, n in enumerate(idx.shape):
        if k == dim:
            key.append(idx)
        else:
            key.append(np.arange(n, dtype=np.int64).reshape((1,) * k + (n,)
                                                            + (1,) * (idx.ndim - k - 1)))
    return tuple(key), flat_positions(shape, dim, idx)


def flat_positions(shape: tuple, dim: int, idx: np.ndarray) -> np.ndarray:
    """The C-order positions in an array of ``shape`` of the gather key (module
    docstring), idx int64 in [0, shape[dim]); C-contiguous, idx's shape."""
    if idx.size == 0:  # (also every case of a size-0 dim in shape: its stride 0 below)
        return np.zeros(idx.shape, np.int64)
    strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
    flat = idx * strides[dim] if strides[dim] != 1 else idx.copy(order="C")
    for k, n in enumerate(idx.shape):
        if k != dim and n > 1:
            step = np.arange(0, n * strides[k], strides[k], dtype=np.int64)
            flat += step.reshape((n,) + (1,) * (idx.ndim - k - 1))
    return flat


def wrapped(idx: np.ndarray, n: int) -> np.ndarray:
    """int64 positions in [0, n) of an index in [-n, n) (negatives count from the end)."""
    idx = idx.astype(np.int64, copy=False)
    return np.where(idx < 0, idx + n, idx) if idx.size and idx.min() < 0 else idx


def take(x: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """x's elements (C order) at ``flat``, flat's shape, C-contiguous."""
    return np.take(x.reshape(-1), flat)


def add_at(shape: tuple, dtype: np.dtype, flat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """zeros(shape) with v (flat's shape) added at ``flat`` (repeats add up in C order):
    the backend's index_add for the key of these positions (halves summed in float32)."""
    out = np.zeros(shape, compute_dtype(dtype))
    with quiet():  # inf + -inf: NaN without a warning, as PyTorch
        np.add.at(out.reshape(-1), flat.reshape(-1), _up(v).reshape(-1))
    return _down(out, dtype)


def written(x: np.ndarray, flat: np.ndarray, value) -> np.ndarray:
    """A C-contiguous copy of x with ``value`` (flat's shape, or a scalar of x's dtype)
    written at ``flat`` (at a repeated position the last one in C order stays, as NumPy's
    indexed assignment)."""
    out = np.array(x, copy=True, order="C")
    out.reshape(-1)[flat] = value
    return out
