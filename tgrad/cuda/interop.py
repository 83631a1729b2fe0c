"""Zero-copy exchange: ``__cuda_array_interface__`` (v3), ``__dlpack__`` /
``__dlpack_device__`` on Tensor, and ``tgrad.from_dlpack``.

DLPack structs (dlpack.h, unversioned ``DLManagedTensor`` in a "dltensor" capsule)::

    DLTensor { void* data; DLDevice {int32 type, id}; int32 ndim; DLDataType {u8 code,
               u8 bits, u16 lanes}; int64* shape; int64* strides; u64 byte_offset }
    DLManagedTensor { DLTensor dl_tensor; void* manager_ctx; void (*deleter)(self*) }

A cuda tensor is exported as kDLCUDA; in interpreter mode (host memory) as kDLCPU, so
``numpy.from_dlpack`` can read it. Strides are in elements.
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np

KDL_CPU, KDL_CUDA = 1, 2
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                             ("deleter", _DELETER)]


class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER_VERSIONED = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensorVersioned))
_DLManagedTensorVersioned._fields_ = [
    ("version", ctypes.c_uint32 * 2), ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER_VERSIONED), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]
_FLAG_READ_ONLY = 1
# capsule name -> (its struct, its name once consumed)
_CAPSULES = {b"dltensor": (_DLManagedTensor, b"used_dltensor"),
             b"dltensor_versioned": (_DLManagedTensorVersioned, b"used_dltensor_versioned")}


def _managed(capsule):
    """The DLManagedTensor(Versioned) struct in an unconsumed capsule, and its name."""
    for name, (struct, _) in _CAPSULES.items():
        if _api.PyCapsule_IsValid(capsule, name):
            return struct.from_address(_api.PyCapsule_GetPointer(capsule, name)), name
    raise BufferError("from_dlpack: expected an unconsumed DLPack capsule ('dltensor' or "
                      "'dltensor_versioned')")

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int

# Exported tensors stay alive here until the consumer calls the deleter.
_LIVE: dict = {}
_ids = itertools.count(1)


@_DELETER
def _deleter(mt_ptr) -> None:
    _LIVE.pop(ctypes.addressof(mt_ptr.contents), None)


# The destructor gets a raw PyObject* of a dying capsule: never wrap it as py_object.
_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))


@_CAPSULE_DTOR
def _capsule_destructor(capsule_ptr) -> None:
    # Called when the capsule dies; if nobody consumed it, release the export ourselves.
    if _is_valid_raw(capsule_ptr, b"dltensor"):
        _LIVE.pop(_get_pointer_raw(capsule_ptr, b"dltensor"), None)


_BFLOAT = 4
_NUMPY_READS_VERSIONED = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def dtype_to_dl(dt: np.dtype) -> tuple[int, int]:
    if dt.name == "bfloat16":
        return _BFLOAT, 16
    if dt.kind not in _CODES:
        raise BufferError(f"__dlpack__: dtype {dt} has no DLPack code")
    return _CODES[dt.kind], dt.itemsize * 8


def dl_to_dtype(code: int, bits: int) -> np.dtype:
    if code == _BFLOAT and bits == 16:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    kind = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}.get(code)
    if kind is None:
        raise BufferError(f"from_dlpack: unsupported DLPack dtype code {code}")
    return np.dtype(np.bool_) if kind == "b" else np.dtype(f"{kind}{bits // 8}")


def to_capsule(arr, device: tuple[int, int]):
    """A "dltensor" capsule viewing DeviceArray ``arr`` (kept alive until deleted)."""
    mt = _DLManagedTensor()
    n = arr.ndim
    shape = (ctypes.c_int64 * max(n, 1))(*arr.shape)
    strides = (ctypes.c_int64 * max(n, 1))(*arr.estrides)
    code, bits = dtype_to_dl(arr.dtype)
    mt.dl_tensor = _DLTensor(arr.data_ptr(), _DLDevice(*device), n, _DLDataType(code, bits, 1),
                             shape, strides, 0)
    mt.manager_ctx = None
    mt.deleter = _deleter
    addr = ctypes.addressof(mt)
    _LIVE[addr] = (mt, shape, strides, arr)
    return _api.PyCapsule_New(addr, b"dltensor", ctypes.cast(_capsule_destructor,
                                                              ctypes.c_void_p))


class _Import:
    """Owner of an imported DLManagedTensor(Versioned): calls its deleter when tgrad drops
    it."""

    def __init__(self, mt) -> None:
        self.mt = mt

    def __del__(self) -> None:
        if self.mt.deleter:
            self.mt.deleter(ctypes.pointer(self.mt))


def _open_capsule(capsule, device_type: int):
    """Read a "dltensor" capsule of ``device_type`` and mark it consumed: the dtype, shape
    and strides (elements), the first and one-past-last element offsets it spans (lo <= 0 <
    hi, negative strides included), the address of element ``lo`` and an owner whose death
    calls the producer's deleter."""
    from tgrad.cuda.array import contiguous_strides
    mt, name = _managed(capsule)
    t = mt.dl_tensor
    if t.device.device_type != device_type:
        kind = {KDL_CPU: "CPU", KDL_CUDA: "CUDA"}[device_type]
        raise BufferError(f"from_dlpack: expected a {kind} DLPack tensor, got device type "
                          f"{t.device.device_type}")
    if t.dtype.lanes != 1:
        raise BufferError("from_dlpack: vector dtypes (lanes > 1) are not supported")
    dt = dl_to_dtype(t.dtype.code, t.dtype.bits)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = (tuple(t.strides[i] for i in range(t.ndim)) if t.strides
               else contiguous_strides(shape))
    _api.PyCapsule_SetName(capsule, _CAPSULES[name][1])
    lo = min([0] + [(s - 1) * st for s, st in zip(shape, strides) if st < 0])
    hi = sum((s - 1) * st for s, st in zip(shape, strides) if st > 0) + 1
    base = (t.data or 0) + t.byte_offset + lo * dt.itemsize
    read_only = name == b"dltensor_versioned" and bool(mt.flags & _FLAG_READ_ONLY)
    return dt, shape, strides, lo, hi, base, _Import(mt), t.device.device_id, read_only


def from_capsule(capsule):
    """A DeviceArray over a kDLCUDA capsule's memory (zero-copy; the capsule is consumed)."""
    from tgrad.cuda.array import DeviceArray
    from tgrad.cuda.memory import Buffer
    dt, shape, strides, lo, hi, base, owner, device_id, _ = _open_capsule(capsule, KDL_CUDA)
    buf = Buffer((hi - lo) * dt.itemsize, device_id, ptr=base, owner=owner)
    return DeviceArray(buf, shape, strides, -lo, dt)


def _host_array_from_capsule(capsule) -> np.ndarray:
    """A NumPy array over a kDLCPU capsule's memory (zero-copy; the capsule is consumed),
    for the dtypes ``np.from_dlpack`` cannot import (bfloat16); writable unless a versioned
    capsule says read-only (PyTorch's from_dlpack writes through)."""
    dt, shape, strides, lo, hi, base, owner, _, read_only = _open_capsule(capsule, KDL_CPU)
    if any(s == 0 for s in shape):
        return np.empty(shape, dt)
    memory = (ctypes.c_char * ((hi - lo) * dt.itemsize)).from_address(base)
    memory.owner = owner  # (the producer's deleter runs when the last view dies)
    arr = np.ndarray(shape, dt, memory, -lo * dt.itemsize,
                     tuple(st * dt.itemsize for st in strides))
    arr.flags.writeable = not read_only
    return arr


class _HostArray:
    """The DeviceArray fields ``to_capsule`` reads, over a NumPy array: the export path of
    the dtypes NumPy's own ``__dlpack__`` refuses (bfloat16)."""

    def __init__(self, a: np.ndarray) -> None:
        self.array, self.ndim, self.shape, self.dtype = a, a.ndim, a.shape, a.dtype
        self.estrides = tuple(st // a.itemsize for st in a.strides)

    def data_ptr(self) -> int:
        return self.array.__array_interface__["data"][0]


def cuda_array_interface(t) -> dict:
    """``__cuda_array_interface__`` (version 3) of a cuda tensor."""
    from tgrad.cuda import is_interpreted
    from tgrad.cuda.streams import current_stream_handle
    d = t._data
    return {"shape": tuple(d.shape), "typestr": d.dtype.str,
            "data": (d.data_ptr() if d.size else 0, False), "version": 3,
            "strides": None if d.is_contiguous() else tuple(d.strides),
            "descr": [("", d.dtype.str)],
            "stream": None if is_interpreted() else (current_stream_handle(d.device) or 1)}


def _device_of(t) -> tuple[int, int]:
    from tgrad.cuda import is_interpreted
    if t.device.type == "cpu" or is_interpreted():
        return (KDL_CPU, 0)
    return (KDL_CUDA, t.device.index)


def _tensor_cai(self) -> dict:
    if self.device.type != "cuda":
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor "
                             f"(device {self.device}). If CUDA data is required use "
                             f"tensor.cuda() to copy tensor to device memory.")
    if self.requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. "
                           "If gradients aren't required, use var.detach() to get Variable "
                           "that doesn't require grad.")
    return cuda_array_interface(self)


def _tensor_dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if self.device.type == "cpu":
        if self._data.dtype.name == "bfloat16":  # (NumPy has no DLPack code for it; an
            return to_capsule(_HostArray(self._data), (KDL_CPU, 0))  # unversioned capsule)
        if max_version is not None:  # a versioned capsule (NumPy >= 2.1), which a consumer
            try:  # such as np.from_dlpack keeps writable; a legacy capsule it makes read-only
                return self._data.__dlpack__(max_version=max_version)
            except TypeError:  # (older NumPy: the legacy capsule)
                pass
        return self._data.__dlpack__()
    from tgrad.cuda._runtime import runtime
    from tgrad.cuda.streams import current_stream_handle
    ours = current_stream_handle(self._data.device)
    if stream is not None and stream != -1 and stream != ours:
        runtime().stream_synchronize(ours)  # the consumer's stream sees finished data
    return to_capsule(self._data, _device_of(self))


def _tensor_dlpack_device(self) -> tuple[int, int]:
    return _device_of(self)


class _CapsuleHolder:
    def __init__(self, capsule) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_kwargs):
        return self.capsule

    def __dlpack_device__(self):
        d = _managed(self.capsule)[0].dl_tensor.device
        return (d.device_type, d.device_id)


def from_dlpack(ext):
    """A tgrad tensor sharing memory with ``ext`` (an object with ``__dlpack__`` or a
    DLPack capsule): CPU data gives a cpu tensor, CUDA data a cuda tensor. bfloat16 and
    complex data included (tgrad reads the bfloat16 capsules NumPy cannot)."""
    from tgrad.device import Device
    from tgrad.tensor import Tensor
    if not hasattr(ext, "__dlpack__"):
        ext = _CapsuleHolder(ext)
    dev_type, dev_id = ext.__dlpack_device__()
    if dev_type == KDL_CPU:
        # (a versioned capsule when the producer makes one: NumPy marks an array from a
        # legacy capsule read-only, as it cannot say whether writing is allowed, where
        # PyTorch's from_dlpack writes through)
        try:  # (NumPy reads versioned capsules from 2.1 on)
            capsule = (ext.__dlpack__(max_version=(1, 0)) if _NUMPY_READS_VERSIONED
                       else ext.__dlpack__())
        except TypeError:
            capsule = ext.__dlpack__()
        if _managed(capsule)[0].dl_tensor.dtype.code == _BFLOAT:  # (NumPy cannot import it)
            return Tensor(_host_array_from_capsule(capsule), None, Device("cpu"))
        return Tensor(np.from_dlpack(_CapsuleHolder(capsule)), None, Device("cpu"))
    if dev_type != KDL_CUDA:
        raise BufferError(f"from_dlpack: unsupported DLPack device type {dev_type} "
                          f"(tgrad takes CPU (1) and CUDA (2))")
    from tgrad.cuda.streams import current_stream_handle
    capsule = ext.__dlpack__(stream=current_stream_handle(dev_id))
    return Tensor(from_capsule(capsule), None, Device("cuda", dev_id))


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor`` (``tensor.__dlpack__()``), for consumers that take a
    capsule (``tgrad.from_dlpack``, older libraries); the memory is shared."""
    from tgrad.tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()


def install() -> None:
    """Attach the interop dunders to Tensor (done once by ``import tgrad.cuda``)."""
    from tgrad.tensor import Tensor
    Tensor.__cuda_array_interface__ = property(_tensor_cai)
    Tensor.__dlpack__ = _tensor_dlpack
    Tensor.__dlpack_device__ = _tensor_dlpack_device
