"""PyTorch's remaining Tensor methods for legacy and memory-placement code:

- ``x.new(...)``, the legacy constructor, of x's dtype and device: ``x.new()`` an empty 1-D
  tensor, ``x.new(2, 3)`` an uninitialised (2, 3) tensor (tgrad zero-fills), ``x.new([1,
  2])`` a copy of the data, ``x.new(other)`` an alias of ``other`` (same dtype and device
  required). tgrad's shapes are plain tuples, so a tuple of ints is read as sizes (what
  ``x.new(x.size())`` means in PyTorch, where a tuple that is not a torch.Size is data);
- ``is_pinned()`` False; ``pin_memory()`` raises PyTorch's error when no GPU is available,
  else returns a CPU copy (tgrad has no page-locked memory);
- ``share_memory_()`` / ``is_shared()``: tgrad's storages are process-local NumPy arrays;
  share_memory_ marks the tensor (is_shared then says True) and changes nothing else;
- ``nonzero_static(input, *, size, fill_value=-1)`` (also top level): nonzero's (size, ndim)
  int64 indices, truncated or padded with ``fill_value`` to ``size`` rows;
- ``dim_order()``: dims from outermost to innermost in memory (stable sort by stride,
  largest first);
- ``prelu(weight)``: nn.functional.prelu.
"""

from __future__ import annotations

import weakref

import numpy as np

from tgrad.ops._common import require_tensor, tensor_method
from tgrad.tensor import Tensor

__all__ = ["nonzero_static"]

_SHARED = weakref.WeakSet()  # the storages share_memory_ marked


@tensor_method("new")
def new(self: Tensor, *args, device=None, **kwargs) -> Tensor:
    """Legacy constructor of self's dtype and device (module doc)."""
    from tgrad.device import as_device
    from tgrad.ops.creation import tensor, zeros
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"keyword(s) {', '.join(sorted(kwargs))}; expected sizes, data or a "
                        f"Tensor and an optional device (use new_empty / new_tensor for a "
                        f"dtype)")
    dev = self.device if device is None else as_device(device)
    ints = (int, np.integer)
    if not args:
        return zeros(0, dtype=self.dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype is not self.dtype or other.device != dev:
            raise TypeError(f"new(): expected a tensor of dtype {self.dtype} on {dev} (got "
                            f"{other.dtype} on {other.device})")
        return other.detach()
    if all(isinstance(a, ints) and not isinstance(a, bool) for a in args):
        return zeros(tuple(int(a) for a in args), dtype=self.dtype, device=dev)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, tuple) and all(isinstance(a, ints) and not isinstance(a, bool)
                                           for a in data):
            return zeros(tuple(int(a) for a in data), dtype=self.dtype, device=dev)
        if isinstance(data, (list, tuple, np.ndarray)):
            return tensor(data, dtype=self.dtype, device=dev)
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    raise TypeError(f"new(): expected sizes (ints), one sequence of data or a Tensor, got "
                    f"({', '.join(type(a).__name__ for a in args)})")


@tensor_method("is_pinned")
def is_pinned(self: Tensor, device=None) -> bool:
    """False: tgrad has no page-locked memory."""
    return False


@tensor_method("pin_memory")
def pin_memory(self: Tensor, device=None) -> Tensor:
    """A CPU copy when a GPU is available (not page-locked); PyTorch's error otherwise."""
    from tgrad import cuda
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if self.device.type != "cpu":
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    return self.clone()


@tensor_method("share_memory_")
def share_memory_(self: Tensor) -> Tensor:
    """Mark self as shared (tgrad's storages are process-local; nothing moves)."""
    _SHARED.add(self._storage)
    return self


@tensor_method("is_shared")
def is_shared(self: Tensor) -> bool:
    return self._storage in _SHARED


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """nonzero(input) as exactly ``size`` rows: truncated, or padded with ``fill_value``."""
    from tgrad.ops.creation import tensor
    from tgrad.ops.gathering import nonzero
    require_tensor("nonzero_static", input)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer (got "
                           f"{size!r})")
    idx = np.asarray(nonzero(input).numpy(force=True))[:size]
    out = np.full((int(size), input.ndim), fill_value, dtype=np.int64)
    out[:len(idx)] = idx
    return tensor(out, device=input.device)


tensor_method("nonzero_static")(nonzero_static)


@tensor_method("dim_order")
def dim_order(self: Tensor, *, ambiguity_check: bool = False) -> tuple:
    """The dims from outermost to innermost in memory (stable by stride, largest first)."""
    strides = self.stride()
    return tuple(sorted(range(self.ndim), key=lambda d: -strides[d]))


@tensor_method("prelu")
def prelu(self: Tensor, weight: Tensor) -> Tensor:
    """nn.functional.prelu(self, weight)."""
    from tgrad.nn.functional import prelu as f
    return f(self, weight)
