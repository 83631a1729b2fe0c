"""More of PyTorch's small functions and Tensor methods, built from tgrad ops:

- ``angle(input)``: of real numbers: 0 for x >= 0, pi for x < 0, NaN for NaN; float for
  integer inputs; its gradient is zero (PyTorch's for real inputs). -0.0 gives 0 as in
  PyTorch (NumPy's arctan2-based angle gives pi);
- ``put(input, index, source, accumulate)`` / ``Tensor.put_``: ``input.flatten()[index] =
  source`` (``accumulate``: +=, repeated indices summed), negative indices from the end;
- ``Tensor.fill_diagonal_(fill_value, wrap)``: the main diagonal of a 2-D tensor, or of an
  n-D one with equal dims; ``wrap`` restarts a tall matrix's diagonal after every N + 1
  rows (NumPy's fill_diagonal);
- ``Tensor.hardshrink(lambd)``: F.hardshrink;
- ``Tensor.resize_(*sizes)`` / ``resize_as_(other)``: self re-pointed, contiguously from its
  storage offset, at the new shape, within its storage (growing the storage is not
  supported: tgrad's storages have a fixed size); not on a tensor requiring grad;
- ``Tensor.apply_(fn)`` / ``map_(other, fn)``: self[i] = fn(self[i]) / fn(self[i],
  other[i]) (other broadcast to self's shape, of self's dtype), a Python call per element,
  on the CPU only and not on a tensor requiring grad; the callable must return a number
  (a real one for a real self), as PyTorch.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._strides import contiguous_strides
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE
from tgrad.backends import _numpy_along as _along_np
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor, sizes_keyword, tensor_method
from tgrad.ops.creation import arange, full, full_like, zeros_like
from tgrad.ops.gathering import _Put, checked_on_device
from tgrad.ops.index import normalize_key
from tgrad.tensor import Tensor, _int_arg, check_not_inference

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
    if input.dtype.is_complex:
        from tgrad.ops.complex_ops import complex_angle
        return complex_angle(input)
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    return _Angle.apply(x)


def _flat_index(op: str, t: Tensor, index: Tensor, source: Tensor) -> Tensor:
    """``index`` flattened, after PyTorch's checks in its order: index dtype, source dtype
    (and type), source size, index range."""
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        got = (dtypes.SCALAR_TYPE_NAMES[index.dtype] if isinstance(index, Tensor)
               else type(index).__name__)
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {got}")
    require_tensor(op, source, "source", 2)
    if source.dtype is not t.dtype:
        names = dtypes.SCALAR_TYPE_NAMES  # PyTorch's text
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {names[t.dtype]} and source.dtype = "
                           f"{names[source.dtype]}")
    if source.numel() != index.numel():
        raise IndexError(f"{op}(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = t.numel()
    if index.numel() and not checked_on_device(f"{op}():", index, n, 0, (n,),
                                               negatives=True):
        a = index._data if index.device.type == "cpu" else index  # (the array: no nodes)
        lo, hi = int(a.min()), int(a.max())
        if lo < -n or hi >= n:
            raise IndexError(f"{op}(): index {lo if lo < -n else hi} out of range for tensor "
                             f"of size {list(t.shape)}")
    return index.reshape(-1)


@tensor_method("put_")
def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """In place: input.flatten()[index] = source (``accumulate``: +=); returns input. The
    index counts input's elements in row-major (logical) order, whatever its strides."""
    idx = _flat_index("put_", input, index, source)
    if input.is_contiguous():
        input.view(-1).index_put_((idx,), source.reshape(-1), accumulate)
    else:  # a transposed or sliced tensor: the flat index as coordinates in its shape
        from tgrad.ops.small_extras import unravel_index
        input.index_put_(unravel_index(idx, input.shape), source.reshape(-1), accumulate)
    return input


@tensor_method("put")
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy of input with input.flatten()[index] = source (``accumulate``: +=)."""
    require_tensor("put", input)
    idx = _flat_index("put_", input, index, source)  # (PyTorch's texts: put runs put_)
    key, _ = normalize_key((idx,), input.device)  # (one PutBackward0 node)
    along = (index,)
    if input.device.type == "cpu":  # the positions in [0, numel) (tgrad/backends/_numpy_along)
        along = (index, _along_np.wrapped(key[0], input.numel()))
    return _Put.apply(input, source, key, bool(accumulate), along)


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


@tensor_method("resize_")
def resize_(self: Tensor, *sizes, size=None, memory_format=None) -> Tensor:
    """Give self the shape ``sizes`` (ints, one sequence or the keyword ``size``),
    contiguous from its storage offset (the values are the storage's there); raises if that
    needs more memory than the storage has."""
    from tgrad.ops.layout import _storage_span, as_strided
    check_not_inference(self)
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if STATE.fw_current is not None:
        from tgrad.autograd.forward_ad import get_tangent
        if get_tangent(self) is not None:  # (PyTorch's text; the tangent kept its shape)
            raise RuntimeError("cannot resize variables that has a forward grad")
    if size is not None:
        sizes = sizes_keyword("resize_", "size", sizes, size)
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    sizes = tuple(_int_arg("resize_", "size", n) for n in sizes)  # (no floats: TypeError)
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    if sizes == self.shape:  # (whatever the strides: the values stay, as PyTorch's)
        return self
    off = self.storage_offset()
    if off + math.prod(sizes) > _storage_span(self)[1]:
        raise RuntimeError(f"resize_: growing the storage is not supported by tgrad (shape "
                           f"{list(sizes)} from storage offset {off} needs "
                           f"{off + math.prod(sizes)} elements, the storage has "
                           f"{_storage_span(self)[1]})")
    self._data = as_strided(self.detach(), sizes, contiguous_strides(tuple(sizes)), off)._data
    self._geometry_changed = True  # (layout.replay_on_base)
    self._storage.version += 1
    return self


@tensor_method("resize_as_")
def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape)``."""
    require_tensor("resize_as_", the_template, "the_template")
    return resize_(self, the_template.shape)


def _python_map(self: Tensor, op: str, fn, *others: Tensor) -> Tensor:
    """self[i] = fn(self[i], *(o[i] for o in others)), each ``other`` broadcast to self's
    shape (PyTorch's checks: CPU, no tensor requiring grad, ``other`` of self's dtype, a
    number returned, a real one for a real self)."""
    if self.device.type != "cpu":
        raise TypeError(f"{op} is only implemented on CPU tensors")
    if self._requires_grad or any(o._requires_grad for o in others):
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    import numpy as np

    from tgrad.ops.inplace import _write
    from tgrad.tensor import _TYPE_NAMES
    for o in others:
        if o.dtype is not self.dtype:  # PyTorch's text
            raise TypeError(f"{op}: expected tgrad.{_TYPE_NAMES[self.dtype]} for 'other' "
                            f"(got tgrad.{_TYPE_NAMES[o.dtype]})")
        if np.broadcast_shapes(o.shape, self.shape) != self.shape:
            raise RuntimeError(f"{op}: the expanded size of the tensor must match the existing "
                               f"size: 'other' of shape {list(o.shape)} cannot be broadcast "
                               f"to self's shape {list(self.shape)}")
    vals = [np.broadcast_to(np.asarray(o.numpy(force=True)), self.shape) for o in others]
    out = np.empty(self.shape, self.dtype.np)
    mine = self.numpy(force=True)
    real = not self.dtype.is_complex
    for i in np.ndindex(self.shape):
        v = fn(mine[i].item(), *[v[i].item() for v in vals])
        if isinstance(v, Tensor) and v.numel() == 1:
            v = v.item()
        if not isinstance(v, (bool, int, float, complex, np.number, np.bool_)) or (
                real and isinstance(v, (complex, np.complexfloating))):
            raise TypeError(f"{op}(): the callable must return a "
                            f"{'real ' if real else ''}number, not {type(v).__name__}")
        try:
            out[i] = v
        except OverflowError:
            raise RuntimeError(f"{op}(): value {v} returned by the callable cannot be "
                               f"converted to type {self.dtype.name} without overflow") from None
    _write(self, out)
    return self


@tensor_method("apply_")
def apply_(self: Tensor, callable) -> Tensor:  # noqa: A002
    """self[i] = callable(self[i]) for every element (CPU only; Python numbers)."""
    return _python_map(self, "apply_", callable)


@tensor_method("map_")
def map_(self: Tensor, tensor: Tensor, callable) -> Tensor:  # noqa: A002
    """self[i] = callable(self[i], tensor[i]) with ``tensor`` broadcast to self's shape."""
    require_tensor("map_", tensor, "tensor", 1)
    return _python_map(self, "map_", callable, tensor)
