"""Float32 sums with a small error along every axis, and the block iteration of elementwise
work, for the NumPy backends (numpy.py, _numpy_nn.py, _numpy_special.py).

Float32 sums along axes NumPy does not sum pairwise. np.add.reduce sums pairwise (error
~ log n ulps) only along the axis it loops innermost, the one of smallest stride (several
trailing axes of a C-contiguous array count as one); along any other axis it keeps one
running float32 total per output, whose error grows like n (1e6 rows of 0.1: +0.96%).
Where an output would add more than _MAX_RUNNING terms that way, such an axis is summed
in blocks instead: running totals of _CASCADE_BLOCK terms, then the block totals the same
way (PyTorch's cascade sum in spirit). Measured against float64 (1e6 x 2, 1e5 x 8,
2000 x 2000, 4096 x 64 summed over dim 0): 1-3 ulps, where the running totals gave
28-1600; as fast as the plain reduction within the noise from 2000 x 2000 up, a few us
more below.
"""
from __future__ import annotations

import numpy as np


def flat_blocks(x: np.ndarray, out: np.ndarray, block: int):
    """(x's block, out's block) views over the elements of x and out (one shape and memory
    layout, both dense: C- or F-contiguous, or out made by np.empty_like(x) of a dense x) in
    memory order, ``block`` elements at a time: elementwise work done block by block keeps
    its temporaries in cache."""
    xf, of = x.ravel(order="K"), out.ravel(order="K")  # (views of both)
    for i in range(0, xf.size, block):
        yield xf[i:i + block], of[i:i + block]


_MAX_RUNNING = 128  # running terms per output left to NumPy (error <= ~64 ulps, ~3 typical)
_CASCADE_BLOCK = 16  # (128 gave 29 ulps on 1e6 equal terms: their roundings add up)
_CASCADE_TYPES = frozenset((np.dtype(np.float32), np.dtype(np.complex64)))


def float_sum(x: np.ndarray, axes, keepdims: bool = False, dtype=None) -> np.ndarray:
    """np.add.reduce(x, axes, dtype, keepdims) with an error growing like log n along every
    reduced axis (accumulating in float32 or complex64; others as np.add.reduce)."""
    acc = x.dtype if dtype is None else np.dtype(dtype)
    if x.size <= 2 * _MAX_RUNNING or acc not in _CASCADE_TYPES or x.ndim < 2:
        return np.add.reduce(x, axis=axes, dtype=dtype, keepdims=keepdims)  # (<= a block)
    nd = x.ndim
    if axes is None:
        axes = tuple(range(nd))
    elif type(axes) is int:
        axes = (axes % nd,)
    else:
        axes = tuple(sorted(a % nd for a in axes))
    inner = _innermost_axis(x)
    running = 1  # terms each output adds one after another: all but the pairwise axis's
    for a in axes:
        if a != inner:
            running *= x.shape[a]
    if running <= _MAX_RUNNING or (x.flags.c_contiguous and axes[0] + len(axes) == nd):
        return np.add.reduce(x, axis=axes, dtype=dtype, keepdims=keepdims)  # (one inner loop)
    x = x.astype(acc, copy=False)  # (a half input: widened once, for the blocks)
    for a in sorted(axes, key=lambda a: abs(x.strides[a])):  # the pairwise axis first
        x = _cascade_axis(x, a)
    return x if keepdims else x.reshape([n for i, n in enumerate(x.shape) if i not in axes])


def _innermost_axis(x: np.ndarray) -> int | None:
    """The axis NumPy's reduction loops innermost: the smallest stride among extents > 1."""
    best, best_stride = None, None
    for i, (n, st) in enumerate(zip(x.shape, x.strides)):
        if n > 1 and (best is None or abs(st) < best_stride):
            best, best_stride = i, abs(st)
    return best


def _cascade_axis(x: np.ndarray, a: int) -> np.ndarray:
    """x summed over axis a (kept, length 1), in blocks of _CASCADE_BLOCK while a is not
    the axis NumPy sums pairwise."""
    lead = (slice(None),) * a
    n = x.shape[a]
    while n > _CASCADE_BLOCK and _innermost_axis(x) != a:
        m = n // _CASCADE_BLOCK  # (splitting one axis in two is always a view)
        body = x[lead + (slice(0, m * _CASCADE_BLOCK),)]
        head = np.add.reduce(body.reshape(x.shape[:a] + (m, _CASCADE_BLOCK) + x.shape[a + 1:]),
                             axis=a + 1)
        if m * _CASCADE_BLOCK < n:  # the leftover (< one block) joins the last block
            head[lead + (slice(m - 1, m),)] += np.add.reduce(
                x[lead + (slice(m * _CASCADE_BLOCK, None),)], axis=a, keepdims=True)
        x, n = head, m
    return np.add.reduce(x, axis=a, keepdims=True)
