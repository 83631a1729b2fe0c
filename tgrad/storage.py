"""PyTorch's storages, as far as tgrad's storage model allows: a small read-only handle on
the memory a tensor views (``Tensor.untyped_storage()`` / ``Tensor.storage()``).

A tgrad tensor is a strided view over its storage root (``Tensor._storage.root``: a NumPy
array on the CPU, a DeviceArray over a Buffer on cuda) that all its views share. The
storage's memory is the root's whole extent: on the CPU the elements the root array spans,
on cuda the root's Buffer. So views of one tensor (and ``.data`` / ``detach()`` of it)
report the same ``data_ptr()``, the usual test for shared memory::

    a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()

A storage cannot be resized (tgrad's storages have a fixed size), built on its own or
handed to ``Tensor.set_`` (pass a tensor instead); those raise NotImplementedError.
"""

from __future__ import annotations

import warnings

from tgrad import dtypes
from tgrad.device import Device

__all__ = ["UntypedStorage", "TypedStorage"]


def _extent(root) -> tuple[int, int]:
    """(address of the first byte, byte length) of the memory a storage root spans."""
    import numpy as np
    if not isinstance(root, np.ndarray):  # DeviceArray (cuda): its whole Buffer
        return root.buffer.ptr, root.buffer.nbytes
    lo = hi = 0
    for n, st in zip(root.shape, root.strides):
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    start = root.__array_interface__["data"][0]
    if root.size == 0:
        return start, 0
    return start + lo, hi - lo + root.itemsize


class UntypedStorage:
    """The bytes a tensor's storage root spans: ``data_ptr()``, ``nbytes()`` (= ``size()``
    = ``len()``), ``device``, ``element_size()`` (1)."""

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError("tgrad.UntypedStorage cannot be created on its own: tgrad "
                                  "tensors own their memory; take one with "
                                  "tensor.untyped_storage()")

    @classmethod
    def _of(cls, t) -> UntypedStorage:
        self = object.__new__(cls)
        self._root = t._storage.root
        self.device: Device = t.device
        return self

    def data_ptr(self) -> int:
        return _extent(self._root)[0]

    def nbytes(self) -> int:
        return _extent(self._root)[1]

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def resize_(self, size: int):
        raise NotImplementedError("storage.resize_: tgrad's storages have a fixed size (to "
                                  "free memory, drop the tensors that use it)")

    def __repr__(self) -> str:
        return (f"tgrad.{type(self).__name__}(nbytes={self.nbytes()}, "
                f"device={self.device}, data_ptr={self.data_ptr():#x})")


class TypedStorage(UntypedStorage):
    """``Tensor.storage()``: the storage as elements of the tensor's ``dtype`` (PyTorch's
    deprecated TypedStorage): ``size()`` / ``len()`` count elements, ``element_size()`` is
    the dtype's size in bytes, ``untyped()`` the UntypedStorage."""

    @classmethod
    def _of(cls, t) -> TypedStorage:
        self = super()._of(t)
        self.dtype: dtypes.DType = t.dtype
        return self

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def untyped(self) -> UntypedStorage:
        out = object.__new__(UntypedStorage)
        out._root, out.device = self._root, self.device
        return out


def typed_storage_warning() -> None:
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage "
                  "directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=3)
