"""DeviceArray: the backend array of cuda tensors (Tensor._data on the GPU).

A strided view over a device ``Buffer``: ``shape``, element ``estrides``, element ``offset``
and a NumPy ``dtype``. It mirrors the few ndarray attributes Tensor reads (``shape``,
``ndim``, ``size``, ``dtype``, byte ``strides``, ``itemsize``, ``flags.c_contiguous``) and
what Triton needs of a kernel argument (``data_ptr()`` and a ``dtype`` whose str is a NumPy
name). Views share the Buffer; the memory is freed when the last view dies.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from tgrad._strides import contiguous_strides
from tgrad.cuda import index_errors
from tgrad.cuda._runtime import runtime
from tgrad.cuda.memory import Buffer
from tgrad.cuda.streams import current_stream_handle

# Called once, when the first float8 DeviceArray is made: the Triton backend then routes its
# compute primitives' float8 arguments to the host path (backends/triton.py), so that until
# a float8 array exists those primitives run unwrapped.
float8_hooks: list = []
_float8_seen = False


def _first_float8() -> None:
    global _float8_seen
    _float8_seen = True
    for hook in float8_hooks:
        hook()


class DeviceArray:
    __slots__ = ("buffer", "shape", "estrides", "offset", "dtype", "__weakref__")

    def __init__(self, buffer: Buffer, shape: tuple, estrides: tuple, offset: int,
                 dtype: np.dtype) -> None:
        self.buffer = buffer
        self.shape = tuple(map(int, shape))  # (map: ~3x faster than a generator here)
        self.estrides = tuple(map(int, estrides))
        self.offset = int(offset)
        self.dtype = dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        # a 1-byte dtype that is not an integer or bool: float8 (kind "f" or "V")
        if dtype.itemsize == 1 and not _float8_seen and dtype.kind not in "iub":
            _first_float8()

    # ------------------------------------------------------------ construction
    @staticmethod
    def empty(shape: tuple, dtype, device: int = 0) -> DeviceArray:
        dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        if not shape:  # 0-d: one element
            return DeviceArray(Buffer(dtype.itemsize, device), (), (), 0, dtype)
        return DeviceArray(Buffer(math.prod(shape) * dtype.itemsize, device), shape,
                           contiguous_strides(shape), 0, dtype)

    @staticmethod
    def from_host(arr: np.ndarray, device: int = 0) -> DeviceArray:
        arr = np.asarray(arr, order="C")
        out = DeviceArray.empty(arr.shape, arr.dtype, device)
        if arr.size:
            rt = runtime()
            rt.memcpy_htod(out.data_ptr(), arr, current_stream_handle(device))
        return out

    def view(self, shape: tuple, estrides: tuple, offset: int | None = None) -> DeviceArray:
        return DeviceArray(self.buffer, shape, estrides,
                           self.offset if offset is None else offset, self.dtype)

    def to_host(self) -> np.ndarray:
        """A C-contiguous NumPy copy (copies the span the view covers, then gathers)."""
        out = np.empty(self.shape, self.dtype)
        if out.size == 0:
            return out
        lo, hi = self.span()
        host = np.empty(hi - lo, self.dtype)
        rt = runtime()
        stream = current_stream_handle(self.device)
        rt.memcpy_dtoh(host, self.buffer.ptr + lo * self.dtype.itemsize, stream)
        if index_errors.waiting:  # the stream has been waited for: report its bad indices
            index_errors.check(self.device, stream)
        item = self.dtype.itemsize
        if item == 1 and self.dtype.kind not in "biu":  # float8 (ml_dtypes): NumPy's
            host, dst = host.view(np.uint8), out.view(np.uint8)  # as_strided cannot take it
        else:
            dst = out
        view = np.lib.stride_tricks.as_strided(
            host[self.offset - lo:], self.shape, tuple(s * item for s in self.estrides))
        dst[...] = view
        return out

    def span(self) -> tuple[int, int]:
        """[lo, hi) element range of the buffer this (non-empty) view touches."""
        lo = hi = self.offset
        for s, st in zip(self.shape, self.estrides):
            if st >= 0:
                hi += (s - 1) * st
            else:
                lo += (s - 1) * st
        return lo, hi + 1

    # ------------------------------------------------------------ ndarray-like metadata
    @property
    def device(self) -> int:
        return self.buffer.device

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def strides(self) -> tuple:
        """Byte strides, as NumPy reports them."""
        return tuple(s * self.dtype.itemsize for s in self.estrides)

    def is_contiguous(self) -> bool:
        if self.size <= 1:
            return True
        return all(st == cs for s, st, cs in
                   zip(self.shape, self.estrides, contiguous_strides(self.shape)) if s != 1)

    @property
    def flags(self):
        return SimpleNamespace(c_contiguous=self.is_contiguous())

    def data_ptr(self) -> int:
        return self.buffer.ptr + self.offset * self.dtype.itemsize

    def __repr__(self) -> str:
        return (f"DeviceArray(shape={self.shape}, estrides={self.estrides}, "
                f"offset={self.offset}, dtype={self.dtype}, device=cuda:{self.device})")


class KernelArg:
    """What the Triton interpreter expects of a tensor argument (torch-like accessors);
    in interpreter mode the device memory already is host memory, so every "copy" is a
    no-op and the kernel reads the buffer in place."""

    __slots__ = ("_storage", "_offset", "_shape", "_strides", "dtype")

    def __init__(self, storage: Buffer | None, offset: int, shape: tuple, strides: tuple,
                 dtype: np.dtype) -> None:
        self._storage, self._offset, self._shape, self._strides = storage, offset, shape, strides
        self.dtype = dtype

    @staticmethod
    def of(a: DeviceArray) -> KernelArg:
        return KernelArg(a.buffer, a.offset, a.shape, a.estrides, a.dtype)

    def data_ptr(self) -> int:
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def untyped_storage(self) -> Buffer:
        return self._storage

    def storage_offset(self) -> int:
        return self._offset

    def size(self) -> tuple:
        return self._shape

    def stride(self) -> tuple:
        return self._strides

    def new_empty(self, *_args, **_kwargs) -> KernelArg:
        return KernelArg(None, 0, (0,), (1,), self.dtype)

    def set_(self, storage: Buffer, offset: int, size: tuple, stride: tuple) -> KernelArg:
        self._storage, self._offset, self._shape, self._strides = storage, offset, size, stride
        return self

    def copy_(self, other) -> None:
        pass
