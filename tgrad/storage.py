"""PyTorch's storages, as far as tgrad's storage model allows: a small read-only handle on
the memory a tensor views (``Tensor.untyped_storage()`` / ``Tensor.storage()``).

A tgrad tensor is a strided view over its storage root (``Tensor._storage.root``: a NumPy
array on the CPU, a DeviceArray over a Buffer on cuda) that all its views share. The
storage's memory is the root's whole extent: on the CPU the elements the root array spans,
on cuda the root's Buffer. So views of one tensor (and ``.data`` / ``detach()`` of it)
report the same ``data_ptr()``, the usual test for shared memory::

    a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()

On the CPU a storage reads and writes its bytes (``s[i]``, ``s[i] = v``, ``s[a:b]``,
iteration, ``tolist``, ``fill_``, ``copy_``, ``clone``) and ``Tensor.set_(storage, offset,
size, stride)`` views it. A storage cannot be resized (tgrad's storages have a fixed size:
PyTorch's ``resize_`` and ``set_`` past the end grow it) or built on its own; those raise
NotImplementedError / RuntimeError.
"""

from __future__ import annotations

import warnings
import weakref

import numpy as np

from tgrad import dtypes
from tgrad.device import Device

__all__ = ["UntypedStorage", "TypedStorage"]


def _extent(root) -> tuple[int, int]:
    """(address of the first byte, byte length) of the memory a storage root spans."""
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


_CACHE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id(root) -> storage


def _root_bytes(root) -> np.ndarray:
    """A 1-D uint8 array over the bytes a CPU storage root spans (writes reach the root)."""
    if root.size == 0:
        return np.zeros(0, np.uint8)
    # the element at the lowest address, as a (1,) array, then its bytes stretched over the
    # extent (as_strided only builds the view: the extent is the root's own memory)
    first = root[tuple(slice(0, 1) if st >= 0 else slice(n - 1, n)
                       for n, st in zip(root.shape, root.strides))].reshape(1)
    item = first.view(np.uint8) if first.dtype.itemsize else first
    return np.lib.stride_tricks.as_strided(item, (_extent(root)[1],), (1,))


def _byte_value(value, op: str) -> int:
    if isinstance(value, (bool, int, np.integer)):
        return int(value) % 256  # PyTorch stores the low byte: 300 -> 44, -1 -> 255
    what = "can only set storage content with a int types" if op == "__setitem__" \
        else "fill_ expects int"
    raise RuntimeError(f"{what}, but got {type(value).__name__} instead")


class UntypedStorage:
    """The bytes a tensor's storage root spans: ``data_ptr()``, ``nbytes()`` (= ``size()``
    = ``len()``), ``device``, ``element_size()`` (1); on the CPU also the bytes themselves
    (``s[i]``, ``s[i] = v``, ``s[a:b]`` a storage over those bytes, iteration, ``tolist()``,
    ``fill_``, ``copy_``, ``clone()``). Writes reach every tensor viewing the memory; as in
    PyTorch they do not bump the tensors' version counters. All views of one root get the
    same storage object (``is`` holds, as in PyTorch)."""

    def __init__(self, *args, **kwargs) -> None:
        raise NotImplementedError("tgrad.UntypedStorage cannot be created on its own: tgrad "
                                  "tensors own their memory; take one with "
                                  "tensor.untyped_storage()")

    @classmethod
    def _of(cls, t) -> UntypedStorage:
        root = t._storage.root
        hit = _CACHE.get(id(root))
        if hit is not None and hit._root is root:
            return hit
        self = cls._from_root(root, t.device)
        _CACHE[id(root)] = self
        return self

    @classmethod
    def _from_root(cls, root, device: Device, span: tuple[int, int] | None = None):
        self = object.__new__(cls)
        self._root = root
        self._span = span  # (start, stop) bytes of the root's extent (a slice), or None
        self.device = device
        return self

    def data_ptr(self) -> int:
        return _extent(self._root)[0] + (self._span[0] if self._span else 0)

    def nbytes(self) -> int:
        return self._span[1] - self._span[0] if self._span else _extent(self._root)[1]

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_pinned(self, device=None) -> bool:
        return False

    def is_shared(self) -> bool:
        return False

    def type(self) -> str:
        return f"tgrad.storage.{type(self).__name__}"

    def _bytes(self, op: str) -> np.ndarray:
        """The storage's bytes as a writable-through uint8 array (CPU only)."""
        if not isinstance(self._root, np.ndarray):
            raise NotImplementedError(f"storage.{op}: tgrad reads and writes the bytes of CPU "
                                      "storages only; take tensor.cpu().untyped_storage()")
        b = _root_bytes(self._root)
        return b[self._span[0]:self._span[1]] if self._span else b

    def __getitem__(self, idx):
        b = self._bytes("__getitem__")
        if isinstance(idx, slice):
            start, stop, step = idx.indices(len(b))
            if step != 1:
                raise RuntimeError(f"Trying to slice with a step of {step}, but only a step "
                                   "of 1 is supported")
            base = self._span[0] if self._span else 0
            return type(self)._from_root(self._root, self.device,
                                         (base + start, base + max(start, stop)))
        if isinstance(idx, bool) or not isinstance(idx, (int, np.integer)):
            raise TypeError(f"can't index a tgrad.{type(self).__name__} with "
                            f"{type(idx).__name__}")
        return int(b[self._index(idx, len(b))])

    @staticmethod
    def _index(idx: int, n: int) -> int:
        i = int(idx) + n if idx < 0 else int(idx)
        if not 0 <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return i

    def __setitem__(self, idx, value) -> None:
        b = self._bytes("__setitem__")
        v = _byte_value(value, "__setitem__")
        if isinstance(idx, slice):
            if idx.step not in (None, 1):
                raise RuntimeError(f"Trying to slice with a step of {idx.step}, but only a "
                                   "step of 1 is supported")
            b[idx] = v
            return
        if isinstance(idx, bool) or not isinstance(idx, (int, np.integer)):
            raise TypeError(f"can't index a tgrad.{type(self).__name__} with "
                            f"{type(idx).__name__}")
        b[self._index(idx, len(b))] = v

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        return self._bytes("tolist").tolist()

    def fill_(self, value) -> UntypedStorage:
        self._bytes("fill_")[...] = _byte_value(value, "fill_")
        return self

    def copy_(self, src: UntypedStorage, non_blocking: bool = False) -> UntypedStorage:
        """Copy src's bytes into self (the same number of bytes, as PyTorch)."""
        if not isinstance(src, UntypedStorage):
            raise TypeError(f"copy_(): argument 'src' (position 1) must be tgrad.Storage, "
                            f"not {type(src).__name__}")
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src "
                               f"was {src.nbytes()} bytes")
        self._bytes("copy_")[...] = src._bytes("copy_")
        return self

    def clone(self) -> UntypedStorage:
        """A storage over a copy of the bytes."""
        return UntypedStorage._from_root(self._bytes("clone").copy(), self.device)

    def cpu(self) -> UntypedStorage:
        """self (a CPU storage; cuda storages are read through tensor.cpu())."""
        self._bytes("cpu")
        return self

    def resize_(self, size: int):
        raise NotImplementedError("storage.resize_: tgrad's storages have a fixed size (to "
                                  "free memory, drop the tensors that use it)")

    def __repr__(self) -> str:
        return (f"tgrad.{type(self).__name__}(nbytes={self.nbytes()}, "
                f"device={self.device}, data_ptr={self.data_ptr():#x})")


class TypedStorage(UntypedStorage):
    """``Tensor.storage()``: the storage as elements of the tensor's ``dtype`` (PyTorch's
    deprecated TypedStorage): ``size()`` / ``len()`` count elements, ``element_size()`` is
    the dtype's size in bytes, ``s[i]`` / ``s[i] = v`` / iteration / ``tolist()`` /
    ``fill_`` read and write elements, ``untyped()`` the UntypedStorage."""

    @classmethod
    def _of(cls, t) -> TypedStorage:
        self = cls._from_root(t._storage.root, t.device)
        self.dtype: dtypes.DType = t.dtype
        self._untyped = UntypedStorage._of(t)
        return self

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def untyped(self) -> UntypedStorage:
        return self._untyped

    @property
    def _untyped_storage(self) -> UntypedStorage:
        return self._untyped

    def type(self) -> str:
        return f"tgrad.storage.TypedStorage({self.dtype})"

    def _elems(self, op: str) -> np.ndarray:
        b = self._bytes(op)
        return b[:len(b) - len(b) % self.dtype.itemsize].view(self.dtype.np)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if isinstance(idx, bool) or not isinstance(idx, (int, np.integer)):
            raise TypeError(f"can't index a tgrad.TypedStorage with {type(idx).__name__}")
        e = self._elems("__getitem__")
        return e[self._index(idx, len(e))].item()

    def __setitem__(self, idx, value) -> None:
        e = self._elems("__setitem__")
        if isinstance(idx, slice):
            e[idx] = value
        else:
            e[self._index(idx, len(e))] = value

    def tolist(self) -> list:
        return self._elems("tolist").tolist()

    def fill_(self, value) -> TypedStorage:
        self._elems("fill_")[...] = value
        return self

    def copy_(self, src, non_blocking: bool = False) -> TypedStorage:
        self._untyped.copy_(src._untyped if isinstance(src, TypedStorage) else src)
        return self

    def clone(self) -> TypedStorage:
        out = TypedStorage._from_root(self._elems("clone").copy(), self.device)
        out.dtype = self.dtype
        out._untyped = UntypedStorage._from_root(out._root, self.device)
        return out


def typed_storage_warning() -> None:
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                  "UntypedStorage will be the only storage class. This should only matter to "
                  "you if you are using storages directly.  To access UntypedStorage "
                  "directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=3)
