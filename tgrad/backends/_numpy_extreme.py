"""CPU path of amax/amin's (and max()/min()'s of a whole tensor) plain backward
(tgrad/ops/reduce.py ``_make_extreme``): the composition's steps on the arrays at once,
without one tgrad op per step. Not a backend primitive: on cuda, under create_graph and
inside forward AD the rule keeps its composition; the caller takes this for CPU
float32/float64 arrays of one dtype only (``fast_dtype``).

Bit-identity with the composition: the tie count is an integer, exact in the float dtype
for slices of at most 2**24 elements (the caller's limit; the composition's float sum of
0/1 values is then exact in any order); the share g / count is the same IEEE division; the
masked selections copy bits (``copyto``), as the composition's where/masked product does.
"""

from __future__ import annotations

import numpy as np

from tgrad.backends._numpy_dtypes import fast_dtype  # noqa: F401 - the caller's dtype test

# the largest reduced slice whose tie count every float32 summation order gets exactly
MAX_SLICE = 1 << 24


def extreme_grad(g: np.ndarray, x: np.ndarray, y: np.ndarray, axes, kept: tuple,
                 nan_share: bool) -> np.ndarray:
    """dx of y = amax/amin(x) over ``axes`` (None: all): g, y of the reduced size (any shape
    of ``kept``'s size; ``kept`` is x's shape with 1 on the reduced axes), x of any layout;
    all of one float32/float64 dtype. Returns a fresh C-contiguous array of x's shape:

        hit = [x == y]  (nan_share: or both NaN),  count = sum(hit) over the slice,
        dx  = g / count where hit, else +0.0;
        without nan_share a NaN y (count 0) gives NaN over its whole slice."""
    yk = y.reshape(kept)
    hit = np.equal(x, yk)
    isnan_y = np.isnan(yk)
    any_nan = bool(isnan_y.any())
    if nan_share and any_nan:
        hit |= np.isnan(x) & isnan_y
    # (bytes summed in int32: faster than count_nonzero or a float sum of the bools)
    count = np.add.reduce(hit.view(np.uint8), axis=axes, dtype=np.int32,
                          keepdims=True).astype(x.dtype)
    with np.errstate(all="ignore"):  # g / 0 where y is NaN (overwritten below)
        share = np.divide(g.reshape(kept), count)
    out = np.zeros(x.shape, x.dtype)
    np.copyto(out, share, where=hit)
    if any_nan and not nan_share:
        np.copyto(out, np.nan, where=isnan_y)
    return out
