"""More of PyTorch's small functions and Tensor methods, built from tgrad ops:

- ``angle(input)``: of real numbers: 0 for x >= 0, pi for x < 0, NaN for NaN; float for
  integer inputs; its gradient is zero (PyTorch's for real inputs). -0.0 gives 0 as in
  PyTorch (NumPy's arctan2-based angle gives pi);
- ``put(input, index, source, accumulate)`` / ``Tensor.put_``: ``input.flatten()[index] =
  source`` (``accumulate``: +=, repeated indices summed), negative indices from the end;
- ``Tensor.fill_diagonal_(fill_value, wrap)``: the main diagonal of a 2-D tensor, or of an
  n-D one with equal dims; ``wrap`` restarts a tall matrix's diagonal after every N + 1
  rows (NumPy's fill_diagonal);
- ``Tensor.hardshrink(lambd)``: F.hardshrink.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor, tensor_method
from tgrad.ops.creation import arange, full, full_like, zeros_like
from tgrad.tensor import Tensor

__all__ = ["angle", "put"]


class _Angle(Function):
    """angle of real x (forward from tgrad ops); d angle / dx = 0."""

    node_name = "AngleBackward0"

    @staticmethod
    def forward(ctx, x):
        out = ew.where(x < 0, full_like(x, math.pi), zeros_like(x))  # pi in x's dtype
        return ew.where(x.isnan(), x, out)

    @staticmethod
    def backward(ctx, g):
        return zeros_like(g)


@tensor_method("angle")
def angle(input: Tensor) -> Tensor:  # noqa: A002
    """The argument of real numbers: 0 (x >= 0), pi (x < 0), NaN (NaN)."""
    require_tensor("angle", input)
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    return _Angle.apply(x)


def _flat_index(op: str, t: Tensor, index: Tensor) -> Tensor:
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        got = index.dtype.name if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {got}")
    n = t.numel()
    if index.numel():
        lo, hi = int(index.min()), int(index.max())
        if lo < -n or hi >= n:
            raise IndexError(f"{op}(): index {lo if lo < -n else hi} out of range for tensor "
                             f"of size {list(t.shape)}")
    return index.reshape(-1)


@tensor_method("put_")
def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """In place: input.flatten()[index] = source (``accumulate``: +=); returns input."""
    idx = _flat_index("put_", input, index)
    if source.numel() != idx.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {idx.numel()}")
    if not input.is_contiguous():
        raise RuntimeError("put_(): the tensor must be contiguous (its flattened view is "
                           "written); call .contiguous() first")
    input.view(-1).index_put_((idx,), source.reshape(-1).to(input.dtype), accumulate)
    return input


@tensor_method("put")
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy of input with input.flatten()[index] = source (``accumulate``: +=)."""
    require_tensor("put", input)
    return put_(input.clone(), index, source, accumulate)


@tensor_method("fill_diagonal_")
def fill_diagonal_(input: Tensor, fill_value, wrap: bool = False) -> Tensor:  # noqa: A002
    """In place: the main diagonal (i, i, ..., i) = fill_value; returns input."""
    if input.ndim < 2:
        raise RuntimeError("fill_diagonal_(): dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("fill_diagonal_(): all dimensions of input must be of equal length")
    rows, cols = input.shape[0], input.shape[1]
    n = min(input.shape)
    if input.ndim == 2 and wrap and rows > cols + 1:
        flat = arange(0, rows * cols, cols + 1, device=input.device)  # NumPy's wrap
        r, c = flat // cols, flat % cols
        idx = (r, c)
    else:
        i = arange(n, device=input.device)
        idx = (i,) * input.ndim
    value = full((idx[0].shape[0],), fill_value, dtype=input.dtype, device=input.device)
    input.index_put_(idx, value)
    return input


@tensor_method("hardshrink")
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """F.hardshrink: x where |x| > lambd, else 0."""
    from tgrad.nn import functional as F
    return F.hardshrink(input, lambd)
