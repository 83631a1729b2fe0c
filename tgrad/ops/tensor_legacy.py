"""PyTorch's remaining Tensor methods for legacy and memory-placement code:

- ``x.new(...)``, the legacy constructor, of x's dtype and device: ``x.new()`` an empty 1-D
  tensor, ``x.new(2, 3)`` an uninitialised (2, 3) tensor (tgrad zero-fills), ``x.new([1,
  2])`` a copy of the data, ``x.new(other)`` an alias of ``other`` (same dtype and device
  required). ``x.shape`` is a plain tuple in tgrad, so a tuple of ints is read as sizes, as
  a ``tgrad.Size`` (``x.new(x.size())``) is (PyTorch reads a tuple that is not a torch.Size
  as data);
- ``is_pinned()`` False; ``pin_memory()`` raises PyTorch's error when no GPU is available,
  else returns a CPU copy (tgrad has no page-locked memory);
- ``share_memory_()`` / ``is_shared()``: tgrad's storages are process-local NumPy arrays;
  share_memory_ marks the tensor (is_shared then says True) and changes nothing else;
- ``nonzero_static(input, *, size, fill_value=-1)`` (also top level): nonzero's (size, ndim)
  int64 indices, truncated or padded with ``fill_value`` to ``size`` rows;
- ``dim_order()``: dims from outermost to innermost in memory (stable sort by stride,
  largest first);
- ``prelu(weight)``: nn.functional.prelu;
- ``untyped_storage()`` / ``storage()``: tgrad.storage's handles on the memory the tensor
  views (``data_ptr()`` equal across views of one tensor);
- ``set_(source)``: self becomes a view of ``source``'s memory with its shape, strides and
  storage offset (``set_(source, storage_offset, size, stride)``: that geometry over
  source's storage; ``set_()``: empty). Same dtype and device required; self keeps a
  version counter of its own (bumped), as PyTorch's. Not differentiable (PyTorch's
  set_ has no derivative): a source or self that requires grad raises. A CPU storage
  source (``set_(storage[, storage_offset, size, stride])``) views its bytes as self's
  dtype; a view past its end raises (PyTorch grows the storage);
- ``as_subclass(cls)``: an alias of self (a view, attached to the graph) of type ``cls``;
- PyTorch's legacy tensor types ``tgrad.FloatTensor``, ``LongTensor``, ... (and
  ``tgrad.cuda.FloatTensor``, ...): calling one is the legacy constructor of its dtype and
  device (as ``x.new``; the data of ``LongTensor([1.7])`` truncated to ``[1]``), and
  ``isinstance(x, tgrad.FloatTensor)`` asks whether x is a dense float32 CPU tensor, as
  PyTorch's ``torch.tensortype`` classes; ``x.type(tgrad.DoubleTensor)`` casts. They are not
  subclasses of Tensor (as in PyTorch). ``tgrad.Tensor(...)`` called with sizes, data or a
  tensor (rather than a backend array) is the same constructor for the default dtype;
  ``set_default_tensor_type`` (deprecated, as PyTorch's) sets the default dtype (and, for a
  cuda type, the default device).
"""

from __future__ import annotations

import weakref

import numpy as np

from tgrad.ops._common import fresh, require_tensor, tensor_method
from tgrad.tensor import Tensor

__all__ = ["nonzero_static", "set_default_tensor_type", "BoolTensor", "ByteTensor", "CharTensor",
           "ShortTensor", "IntTensor", "LongTensor", "HalfTensor", "BFloat16Tensor",
           "FloatTensor", "DoubleTensor"]

_SHARED = weakref.WeakSet()  # the storages share_memory_ marked


@tensor_method("new")
def new(self: Tensor, *args, device=None, **kwargs) -> Tensor:
    """Legacy constructor of self's dtype and device (module doc)."""
    from tgrad.device import as_device
    return legacy_new("new", self.dtype, self.device if device is None else as_device(device),
                      args, kwargs)


def legacy_new(op: str, dtype, dev, args: tuple, kwargs: dict,
               any_tensor: bool = False) -> Tensor:
    """PyTorch's legacy constructor (``x.new``, ``tgrad.FloatTensor(...)``,
    ``tgrad.Tensor(...)``; module doc) for ``dtype`` on ``dev``: no argument, sizes (ints,
    a Size or a tuple of ints), a sequence of data, or a Tensor to alias (of ``dtype`` and on
    ``dev`` unless ``any_tensor``, as ``torch.Tensor(t)``)."""
    from tgrad.ops.creation import tensor, zeros
    if kwargs:
        raise TypeError(f"{op}() received an invalid combination of arguments - got "
                        f"keyword(s) {', '.join(sorted(kwargs))}; expected sizes, data or a "
                        f"Tensor and an optional device (use new_empty / new_tensor for a "
                        f"dtype)")
    ints = (int, np.integer)
    if not args:
        return zeros(0, dtype=dtype, device=dev)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if not any_tensor and (other.dtype is not dtype or other.device != dev):
            raise TypeError(f"{op}(): expected a tensor of dtype {dtype} on {dev} (got "
                            f"{other.dtype} on {other.device})")
        return other.detach()
    if all(isinstance(a, ints) and not isinstance(a, bool) for a in args):
        return zeros(tuple(int(a) for a in args), dtype=dtype, device=dev)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, tuple) and all(isinstance(a, ints) and not isinstance(a, bool)
                                           for a in data):
            return zeros(tuple(int(a) for a in data), dtype=dtype, device=dev)
        if isinstance(data, (list, tuple, np.ndarray)):
            return tensor(data, dtype=dtype, device=dev)
        raise TypeError(f"{op}(): data must be a sequence (got {type(data).__name__})")
    raise TypeError(f"{op}(): expected sizes (ints), one sequence of data or a Tensor, got "
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


@tensor_method("untyped_storage")
def untyped_storage(self: Tensor):
    """The memory self views, as bytes (tgrad.storage.UntypedStorage)."""
    from tgrad.storage import UntypedStorage
    return UntypedStorage._of(self)


@tensor_method("storage")
def storage(self: Tensor):
    """The memory self views, as elements of self's dtype (PyTorch's deprecated
    TypedStorage, with its warning)."""
    from tgrad.storage import TypedStorage, typed_storage_warning
    typed_storage_warning()
    return TypedStorage._of(self)


@tensor_method("set_")
def set_(self: Tensor, source: Tensor | None = None, storage_offset: int | None = None,
         size=None, stride=None) -> Tensor:
    """self re-pointed at ``source``'s memory (module doc)."""
    from tgrad._out import _C10_NAMES
    from tgrad.autograd.grad_mode import STATE
    from tgrad.ops.creation import empty
    from tgrad.ops.inplace import check_inplace
    from tgrad.storage import UntypedStorage
    from tgrad.tensor import Storage
    if isinstance(source, UntypedStorage):
        check_inplace(self, "set_")
        return _set_storage(self, source, storage_offset, size, stride)
    check_inplace(self, "set_")
    if source is None:
        if storage_offset is not None or size is not None:
            raise TypeError("set_(): storage_offset/size need a source tensor")
        source = empty(0, dtype=self.dtype, device=self.device)
    if not isinstance(source, Tensor):
        raise TypeError(f"set_(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {_C10_NAMES[source.dtype]} to a "
                           f"tensor of type {_C10_NAMES[self.dtype]}")
    if source.device != self.device:
        raise RuntimeError(f"set_: source is on {source.device} but self is on "
                           f"{self.device}; move one of them with .to()")
    if STATE.enabled and (self._requires_grad or source._requires_grad):
        raise NotImplementedError("set_: tgrad does not differentiate through set_ (PyTorch "
                                  "has no derivative for it either); pass source.detach() "
                                  "or call it under tgrad.no_grad()")
    data = source._data
    if storage_offset is not None or size is not None:
        from tgrad._strides import contiguous_strides
        from tgrad.ops.layout import as_strided
        if size is None:
            raise TypeError("set_(): size is required with storage_offset")
        size = tuple(int(n) for n in size)
        stride = contiguous_strides(size) if stride is None else tuple(int(s) for s in stride)
        off = source.storage_offset() if storage_offset is None else int(storage_offset)
        data = as_strided(source.detach(), size, stride, off)._data
    self._data = data
    self._geometry_changed = True  # (layout.replay_on_base)
    if source._storage.root is not self._storage.root:
        storage = Storage(source._storage.root)  # its memory, self's own version counter
        storage.version = self._storage.version
        self._storage = storage
    fresh(self)  # no longer a view of what it viewed
    self._storage.version += 1
    return self


def _set_storage(self: Tensor, source, storage_offset, size, stride) -> Tensor:
    """set_(storage[, storage_offset, size, stride]): self views the storage's bytes as its
    dtype (the whole storage, 1-D, without a size). CPU only; tgrad cannot grow a storage,
    so a view past its end raises (PyTorch resizes the storage)."""
    from tgrad._out import _C10_NAMES
    from tgrad._strides import contiguous_strides
    from tgrad.autograd.grad_mode import STATE
    from tgrad.storage import TypedStorage
    from tgrad.tensor import Storage
    if isinstance(source, TypedStorage) and source.dtype is not self.dtype:
        raise RuntimeError(f"Expected a Storage of type {_C10_NAMES[self.dtype].lower()} or an "
                           f"UntypedStorage, but got type {_C10_NAMES[source.dtype]} for "
                           "argument 1 'storage'")
    if source.device != self.device:
        raise RuntimeError(f"set_: the storage is on {source.device} but self is on "
                           f"{self.device}; move one of them with .to()")
    if storage_offset is not None and size is None:
        raise TypeError("set_(): received an invalid combination of arguments: "
                        "(Storage source, int storage_offset) needs a size too")
    if STATE.enabled and self._requires_grad:
        raise NotImplementedError("set_: tgrad does not differentiate through set_ (PyTorch "
                                  "has no derivative for it either); call it under "
                                  "tgrad.no_grad()")
    raw = source._bytes("set_")
    item = self.dtype.itemsize
    elems = raw[:len(raw) - len(raw) % item].view(self.dtype.np)
    off = 0 if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    size = (len(elems),) if size is None else tuple(int(n) for n in size)
    stride = contiguous_strides(size) if stride is None else tuple(int(st) for st in stride)
    if len(stride) != len(size) or any(n < 0 for n in size):
        raise RuntimeError(f"set_: size {list(size)} and stride {list(stride)} must have the "
                           "same length, with sizes >= 0")
    if any(n == 0 for n in size):
        lo = hi = off
    else:
        lo = off + sum((n - 1) * st for n, st in zip(size, stride) if st < 0)
        hi = off + sum((n - 1) * st for n, st in zip(size, stride) if st > 0) + 1
    if lo < 0 or hi > len(elems):
        raise RuntimeError(f"set_: size {list(size)}, stride {list(stride)} and storage "
                           f"offset {off} need {hi} elements of {self.dtype} but the storage "
                           f"holds {len(elems)} ({source.nbytes()} bytes); tgrad cannot grow "
                           "a storage (PyTorch resizes it)")
    data = np.lib.stride_tricks.as_strided(elems[off:] if off < len(elems) else elems[:0],
                                           size, tuple(st * item for st in stride))
    if any(n == 0 for n in size):
        data = np.empty(size, self.dtype.np)
    self._data = data
    self._geometry_changed = True  # (layout.replay_on_base)
    if source._root is not self._storage.root:
        storage = Storage(source._root)  # its memory, self's own version counter
        storage.version = self._storage.version
        self._storage = storage
    fresh(self)  # no longer a view of what it viewed
    self._storage.version += 1
    return self


@tensor_method("_typed_storage")
def _typed_storage(self: Tensor):
    """storage() without the deprecation warning (PyTorch's internal accessor)."""
    from tgrad.storage import TypedStorage
    return TypedStorage._of(self)


@tensor_method("as_subclass")
def as_subclass(self: Tensor, cls: type) -> Tensor:
    """An alias of self (a view sharing its memory and attached to the autograd graph) of
    type ``cls``, a Tensor subclass; cls.__init__ is not called (as PyTorch's)."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")
    out = self.view(self.shape)
    try:
        out.__class__ = cls
    except TypeError as e:
        raise NotImplementedError(f"as_subclass: {cls.__name__} lays out its instances "
                                  f"differently from tgrad.Tensor ({e}); tgrad supports "
                                  f"subclasses that add no __slots__") from None
    return out


class TensorType(type):
    """The metaclass of PyTorch's legacy tensor types (``torch.tensortype``): a class per dtype
    and device type, called as the legacy constructor, answering isinstance by dtype and
    device (module doc)."""

    dtype: object
    is_cuda: bool

    def __instancecheck__(cls, obj: object) -> bool:
        return (isinstance(obj, Tensor) and not obj._sparse and obj.dtype is cls.dtype
                and (obj.device.type == "cuda") is cls.is_cuda)

    def __call__(cls, *args, device=None, **kwargs) -> Tensor:
        from tgrad.device import as_device
        kind = "cuda" if cls.is_cuda else "cpu"
        dev = as_device(kind if device is None else device)
        if dev.type != kind:
            raise RuntimeError(f"legacy constructor expects device type: {kind} but device "
                               f"type: {dev.type} was passed")
        return legacy_new(cls.__name__, cls.dtype, dev, args, kwargs)

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _tensor_types(module: str, is_cuda: bool) -> dict:
    # PyTorch's ten legacy types: Tensor.type()'s names but the complex and float8 ones
    from tgrad import dtypes
    from tgrad.tensor import _TYPE_NAMES
    names = {dt: name for dt, name in _TYPE_NAMES.items()
             if not dt.is_complex and dt not in dtypes.FLOAT8_DTYPES}
    where = "cuda" if is_cuda else "the CPU"
    return {name: TensorType(name, (), {"dtype": dt, "is_cuda": is_cuda, "is_sparse": False,
                                        "__module__": module,
                                        "__doc__": f"PyTorch's legacy {module}.{name}: {dt} "
                                                   f"tensors on {where}"})
            for dt, name in names.items()}


CPU_TENSOR_TYPES = _tensor_types("tgrad", False)
CUDA_TENSOR_TYPES = _tensor_types("tgrad.cuda", True)  # (tgrad.cuda's module __getattr__)
_TYPE_OF = {(c.dtype, c.is_cuda): c for table in (CPU_TENSOR_TYPES, CUDA_TENSOR_TYPES)
            for c in table.values()}
BoolTensor = CPU_TENSOR_TYPES["BoolTensor"]
ByteTensor = CPU_TENSOR_TYPES["ByteTensor"]
CharTensor = CPU_TENSOR_TYPES["CharTensor"]
ShortTensor = CPU_TENSOR_TYPES["ShortTensor"]
IntTensor = CPU_TENSOR_TYPES["IntTensor"]
LongTensor = CPU_TENSOR_TYPES["LongTensor"]
HalfTensor = CPU_TENSOR_TYPES["HalfTensor"]
BFloat16Tensor = CPU_TENSOR_TYPES["BFloat16Tensor"]
FloatTensor = CPU_TENSOR_TYPES["FloatTensor"]
DoubleTensor = CPU_TENSOR_TYPES["DoubleTensor"]


def set_default_tensor_type(t) -> None:
    """Deprecated (as PyTorch's): a floating legacy type (or its name, 'torch.DoubleTensor')
    sets the default dtype, and a cuda one the default device too."""
    import warnings

    from tgrad import dtypes
    from tgrad.device import set_default_device
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        from tgrad.tensor import parse_type_name
        try:
            t = _TYPE_OF[parse_type_name(t)]
        except (ValueError, KeyError):  # (no legacy type: ComplexFloatTensor...)
            raise TypeError(f"invalid type: '{t}'") from None
    if not isinstance(t, TensorType):
        raise TypeError(f"invalid type: '{t}'")
    if not t.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_device("cuda" if t.is_cuda else "cpu")  # (first: it may raise)
    dtypes.set_default_dtype(t.dtype)
