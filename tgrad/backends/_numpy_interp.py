"""CPU primitives of F.interpolate's resampling (tgrad/nn/_interpolate.py ``Resample``):
the composite's steps run on the NumPy arrays, no tgrad op per step; the same arithmetic
on the same operands in the same order, so bit-identical to the composite (which runs
under create_graph / forward AD and on other devices).

``steps``: one (kind, axis, input size n, plan...) per resized spatial dim, applied in
order (see Resample's docstring); x (N, C, *spatial) float32 or float64.

Forward, per step along ``axis`` (out positions o):
  select:  y = take(x, index, axis)                         (a copy: any order, same bits)
  linear:  y = take(x, i0) * w0[o] + take(x, i1) * w1[o]    (two products, one sum: the
           composite's mul, mul, add, each rounded once, the i0 term first)
  taps:    y = sum_k take(x, index (o, K) flat)[.., o, k, ..] * w[o, k]: the products, then
           the backend's own sum over the K axis (tgrad/backends/numpy.py ``sum_``) on an
           array of the composite's shape and layout, so its additions come in its order.

Backward (steps in reverse; the adjoint): ``_add_at`` is the backend's ``index_add`` (the
composite's IndexAdd forward) with the composite's key (whole slices, index at ``axis``):
  select:  dx = add_at(g, index)
  linear:  dx = add_at(g w0, i0) + add_at(g w1, i1)
  taps:    dx = add_at((g[.., o, None, ..] w[o, k]) reshaped (.., o K, ..), index flat)
"""

from __future__ import annotations

import numpy as np

from tgrad.backends import numpy as _be

__all__ = ["FAST_DTYPES", "resample_fwd", "resample_bwd"]

FAST_DTYPES = frozenset((np.dtype(np.float32), np.dtype(np.float64)))

_FULL = slice(None)


def _col(w: np.ndarray, dt: np.dtype, ndim: int, axis: int) -> np.ndarray:
    """w (o,) or (o, K) in dtype dt, shaped to broadcast along ``axis`` of an ndim-D
    array (trailing 1s for the later dims)."""
    return w.astype(dt, copy=False).reshape(w.shape + (1,) * (ndim - 1 - axis))


def resample_fwd(x: np.ndarray, steps: tuple) -> np.ndarray:
    """x (N, C, *spatial) resampled by each step in turn (at least one step); a new
    C-contiguous array."""
    y = x
    with np.errstate(all="ignore"):  # inf * 0, inf - inf: NaN silently, as PyTorch
        for kind, axis, _, *plan in steps:
            if kind == "select":
                y = np.take(y, plan[0], axis)
            elif kind == "linear":
                i0, i1, w0, w1 = plan
                a = np.take(y, i0, axis)
                np.multiply(a, _col(w0, y.dtype, y.ndim, axis), out=a)
                b = np.take(y, i1, axis)
                np.multiply(b, _col(w1, y.dtype, y.ndim, axis), out=b)
                y = np.add(a, b, out=a)
            else:
                index, weight = plan
                o, k = index.shape
                g = np.take(y, index.reshape(-1), axis)
                g = g.reshape(y.shape[:axis] + (o, k) + y.shape[axis + 1:])
                np.multiply(g, _col(weight, y.dtype, y.ndim, axis), out=g)
                y = _be.sum_(g, (axis + 1,), False)
    return y


def _add_at(g: np.ndarray, axis: int, size: int, index: np.ndarray) -> np.ndarray:
    """zeros with ``size`` positions along axis, g added back at ``index`` (the
    composite's IndexAdd: the backend's index_add, zeros for an empty g)."""
    shape = g.shape[:axis] + (size,) + g.shape[axis + 1:]
    if g.size == 0:
        return np.zeros(shape, g.dtype)
    return _be.index_add(shape, g.dtype, (_FULL,) * axis + (index,), g)


def resample_bwd(g: np.ndarray, steps: tuple) -> np.ndarray:
    """dx of resample_fwd for the output gradient g (the adjoint, steps in reverse)."""
    with np.errstate(all="ignore"):
        for kind, axis, size, *plan in reversed(steps):
            if kind == "select":
                g = _add_at(g, axis, size, plan[0])
            elif kind == "linear":
                i0, i1, w0, w1 = plan
                a = _add_at(g * _col(w0, g.dtype, g.ndim, axis), axis, size, i0)
                b = _add_at(g * _col(w1, g.dtype, g.ndim, axis), axis, size, i1)
                g = np.add(a, b, out=a)
            else:
                index, weight = plan
                o, k = index.shape
                spread = np.expand_dims(g, axis + 1) * _col(weight, g.dtype, g.ndim, axis)
                spread = spread.reshape(g.shape[:axis] + (o * k,) + g.shape[axis + 1:])
                g = _add_at(spread, axis, size, index.reshape(-1))
    return g
