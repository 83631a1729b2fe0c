"""Tensor: a strided view (shape, strides, offset, dtype) over a device buffer, plus the
autograd fields. Operators and methods are attached by ``tgrad.ops`` (one place per op).

Storage model: ``_data`` is the backend array for this view (a NumPy ndarray on the CPU),
which already carries shape, strides and offset and shares memory with every other view of
the same buffer; ``_storage`` is the object all those views share, holding the version
counter that in-place ops bump and saved tensors check.
"""

from __future__ import annotations

import operator
import re
import warnings
from typing import Any

import numpy as np

from tgrad import dtypes
from tgrad._tensor_str import tensor_repr as _tensor_repr
from tgrad.autograd.grad_mode import STATE, is_grad_enabled
from tgrad.device import CPU, Device, as_device


class Size(tuple):
    """PyTorch's torch.Size: a tuple of ints (a tuple subclass: equal to, hashed as and
    usable wherever the plain tuple is) with ``numel()``; ``+``, ``*`` and slices give a Size
    again, an item is an int, and the repr is ``tgrad.Size([2, 3])``. ``x.size()`` returns
    one; ``x.shape`` stays the backend's plain tuple (no wrapper on the hot path: ops read
    it many times per call)."""

    __slots__ = ()

    def __new__(cls, sizes=()) -> Size:
        items = tuple(sizes)
        for i, v in enumerate(items):
            if type(v) is not int:
                try:  # bools, NumPy integers, one-element integer tensors (as PyTorch's)
                    index = operator.index(v)
                except TypeError:
                    index = None
                if index is None:
                    raise TypeError(f"tgrad.Size() takes an iterable of 'int' (item {i} is "
                                    f"'{type(v).__name__}')") from None
                items = items[:i] + (index,) + items[i + 1:]
        return tuple.__new__(cls, items)

    def numel(self) -> int:
        """The number of elements of a tensor of this size (1 for ``Size([])``)."""
        n = 1
        for v in self:
            n *= v
        return n

    def __repr__(self) -> str:
        return f"tgrad.Size({list(self)})"

    __str__ = __repr__

    def __getitem__(self, key):
        item = tuple.__getitem__(self, key)
        return tuple.__new__(Size, item) if type(key) is slice else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return Size, (tuple(self),)


Size.__module__ = "tgrad"  # (tgrad.Size, as torch.Size)


class Storage:
    """What all views of one buffer share: the version counter (and the root array)."""

    __slots__ = ("version", "root", "__weakref__")

    def __init__(self, root: Any) -> None:
        self.version = 0
        self.root = root


class InferenceStorage(Storage):
    """The storage of an inference tensor: memory made inside ``inference_mode()`` (an op's
    result, a creation function). Its views share it, so they are inference tensors too,
    while views of a normal tensor made inside inference_mode stay normal, as in PyTorch.
    Outside inference mode such a tensor may not be saved for backward (function.py's
    _wire_graph), updated in place (check_not_inference) or made to require grad."""

    __slots__ = ()


class CountedInferenceStorage(InferenceStorage):
    """An inference tensor's alias made outside inference mode by ``detach()`` or ``.data``,
    or a normal tensor whose ``.data`` was set to an inference tensor: still an inference
    tensor (``is_inference()``, never saved for backward nor made to require grad), but
    with a version counter of its own (a fresh one; set_data keeps the tensor's), so
    in-place updates are allowed outside inference mode, as PyTorch's. (PyTorch's views of
    such a tensor have no counter again; tgrad's share it, so in-place through them works.)"""

    __slots__ = ()


def _inference_aware_storage(data: Any) -> Storage:
    """Tensor.__init__'s new storage while some thread is inside inference_mode()."""
    return InferenceStorage(data) if STATE.inference else Storage(data)


# What Tensor.__init__ calls to make a new tensor's storage: Storage itself (no extra work on
# the hot path) while no thread is inside inference_mode(True); _inference_aware_storage
# while one is (grad_mode.inference_mode counts them in _INFERENCE_BLOCKS and switches it).
_new_storage = Storage
_INFERENCE_BLOCKS = 0

INFERENCE_INPLACE_MESSAGE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for more details.")


def check_not_inference(t: Tensor) -> None:
    """PyTorch's error for an in-place update (or out=) of an inference tensor outside
    inference mode; call it before writing."""
    if type(t._storage) is InferenceStorage and not STATE.inference:
        raise RuntimeError(INFERENCE_INPLACE_MESSAGE)


_DTYPE_OF = {d.np: d for d in dtypes.SUPPORTED_DTYPES}


class Tensor:
    __slots__ = ("_data", "_storage", "_dtype", "_device", "_requires_grad", "_grad",
                 "_grad_fn", "_output_nr", "_base", "_view_chain", "_grad_fn_version",
                 "_hooks", "_retains_grad", "_grad_accumulator", "__weakref__", "__dict__")

    # Lets NumPy defer to Tensor's reflected operators (ndarray * tensor -> tensor).
    __array_priority__ = 1000
    # True on tgrad.sparse.SparseTensor (a class attribute: no per-tensor cost); read only
    # where a sparse operand must be routed (gradient accumulation, mm / matmul)
    _sparse = False

    def __init__(self, data: Any = None, storage: Storage | None = None, device: Device = CPU,
                 requires_grad: bool = False, *sizes: int) -> None:
        """Internal constructor over a backend array; users call ``tgrad.tensor``. Called with
        anything but a backend array (sizes, a sequence of data, a Tensor, nothing) it is
        PyTorch's legacy ``torch.Tensor(...)`` constructor for the default dtype
        (tgrad/ops/tensor_legacy.py)."""
        try:
            dtype = _DTYPE_OF[data.dtype]
        except (AttributeError, KeyError, TypeError):
            _legacy_init(self, data, storage, device, requires_grad, sizes)
            return
        self._data = data
        self._storage = _new_storage(data) if storage is None else storage
        self._dtype = dtype
        self._device = device
        self._requires_grad = requires_grad
        self._grad = None
        self._grad_fn = None
        self._output_nr = 0
        self._base = None
        self._view_chain = None
        self._hooks = None
        self._retains_grad = False
        self._grad_accumulator = None

    # ------------------------------------------------------------------ metadata
    # dtype and device are read-only, as PyTorch's (``t.dtype = ...`` raises AttributeError;
    # ``.to(dtype)`` / ``.to(device)`` make a converted tensor). The slots are _dtype /
    # _device (written only by tgrad itself); attrgetter keeps the read in C.
    dtype = property(operator.attrgetter("_dtype"), doc="The tensor's dtype (read-only).")
    device = property(operator.attrgetter("_device"), doc="The tensor's device (read-only).")

    @dtype.setter
    def dtype(self, value) -> None:
        raise AttributeError("attribute 'dtype' of 'tgrad.Tensor' objects is not writable "
                             "(use t.to(dtype) for a tensor of another dtype)")

    @device.setter
    def device(self, value) -> None:
        raise AttributeError("attribute 'device' of 'tgrad.Tensor' objects is not writable "
                             "(use t.to(device) for a tensor on another device)")

    @dtype.deleter
    def dtype(self) -> None:
        raise AttributeError("attribute 'dtype' of 'tgrad.Tensor' objects is not writable")

    @device.deleter
    def device(self) -> None:
        raise AttributeError("attribute 'device' of 'tgrad.Tensor' objects is not writable")

    @property
    def shape(self) -> tuple:
        return self._data.shape

    def size(self, dim: int | None = None):
        if dim is None:
            return tuple.__new__(Size, self._data.shape)  # (PyTorch's torch.Size)
        if type(dim) is not int:  # PyTorch's TypeError first (a bool or 1.0 is no dim)
            dim = _int_arg("size", "dim", dim, 1, allow_bool=False)
        if self.ndim == 0:
            raise IndexError(f"size(): dimension specified as {dim} but tensor has no "
                             f"dimensions")
        return self._data.shape[_wrap_dim(dim, self.ndim, "size")]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return self._data.size

    def nelement(self) -> int:
        return self._data.size

    def element_size(self) -> int:
        return self.dtype.itemsize

    def stride(self, dim: int | None = None):
        item = self.dtype.itemsize
        st = tuple(s // item for s in self._data.strides)
        if self._data.size == 0 and not any(st) and isinstance(self._data, np.ndarray):
            # NumPy zeroes the strides of an array made empty (a creation function, clone,
            # an op's result): report a contiguous tensor's (PyTorch's, a size-0 dim counted
            # as 1). A view that became empty (a slice of a non-empty tensor, and views of
            # it) keeps its strides, which are PyTorch's (docs/design.md: the exceptions)
            from tgrad.cuda.array import contiguous_strides
            st = contiguous_strides(self._data.shape)
        if dim is not None and type(dim) is not int:  # PyTorch's TypeError first
            dim = _int_arg("stride", "dim", dim, 1, allow_bool=False)
        if dim is not None and self.ndim == 0:
            raise IndexError(f"stride(): dimension specified as {dim} but tensor has no "
                             f"dimensions")
        return st if dim is None else st[_wrap_dim(dim, self.ndim, "stride")]

    def storage_offset(self) -> int:
        if not isinstance(self._data, np.ndarray):  # DeviceArray (cuda)
            return self._data.offset
        root = self._storage.root
        if self._data.size == 0:
            return 0
        ptr = self._data.__array_interface__["data"][0]
        return (ptr - root.__array_interface__["data"][0]) // self.dtype.itemsize

    def data_ptr(self) -> int:
        if not isinstance(self._data, np.ndarray):  # DeviceArray (cuda)
            return self._data.data_ptr()
        return self._data.__array_interface__["data"][0]

    def is_contiguous(self, memory_format=None) -> bool:
        """Row-major contiguity; ``memory_format=channels_last`` (``channels_last_3d``) asks,
        as PyTorch, whether a 4-D (5-D) tensor's strides are NHWC's (NDHWC's), dims of size 1
        ignored (False for other ranks)."""
        if memory_format is None:
            return self._data.flags.c_contiguous
        return _is_contiguous_as(self, memory_format)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def _has_nan(self) -> bool:
        """True when any element is NaN (anomaly detection)."""
        from tgrad.backends import get_backend
        return get_backend(self.device).isnan_any(self._data)

    @property
    def _version(self) -> int:
        if type(self._storage) is InferenceStorage:  # as PyTorch's
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._storage.version

    @property
    def T(self) -> Tensor:  # noqa: N802
        """The dims reversed (a permute view); other than on a 2-D tensor, PyTorch 2.13's
        deprecation warning (a 0-d tensor: an identity view)."""
        if self.ndim == 0:
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the "
                          "identity in these cases.", UserWarning, stacklevel=2)
        elif self.ndim != 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release. Consider `x.mT` to transpose batches of matrices or "
                          "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(*range(self.ndim - 1, -1, -1))

    # ------------------------------------------------------------------ autograd fields
    @property
    def requires_grad(self) -> bool:
        if (not self._requires_grad and self._base is not None
                and self._grad_fn_version != self._storage.version):
            _refresh_view_grad_fn(self)  # its base was made to require grad in place
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if type(flag) is not bool and not isinstance(flag, np.bool_):
            raise RuntimeError(f"requires_grad must be a bool (t.requires_grad = value, got "
                               f"{type(flag).__name__})")  # (PyTorch's type, not TypeError)
        if flag and self.grad_fn is not None:  # PyTorch: assigning True to a non-leaf raises
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if type(requires_grad) is not bool and not isinstance(requires_grad, np.bool_):
            raise TypeError(f"requires_grad_(): argument 'requires_grad' (position 1) must be "
                            f"bool, not {type(requires_grad).__name__}")
        if self._grad_fn is not None and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to "
                "use a computed variable in a subgraph that doesn't require differentiation "
                "use var_no_grad = var.detach().")
        if requires_grad and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError(
                f"Only Tensors of floating point and complex dtype can require gradients (got "
                f"{self.dtype})")
        if requires_grad and isinstance(self._storage, InferenceStorage) \
                and not STATE.inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def grad_fn(self):
        if self._base is not None and self._grad_fn_version != self._storage.version:
            _refresh_view_grad_fn(self)
        return self._grad_fn

    @property
    def output_nr(self) -> int:
        return self._output_nr

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"{type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient "
                                   f"and the tensor are the same size")
            if value.dtype is not self.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{value.dtype.name}' to a tensor with dtype "
                                   f"'{self.dtype.name}'. The gradient must match the "
                                   f"tensor's dtype")
            if value.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: "
                                   f"{value.device} vs {self.device}")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:  # ``del t.grad``: PyTorch sets it to None
        self._grad = None

    @property
    def data(self) -> Tensor:
        """A tensor sharing memory with this one but outside the autograd graph and, unlike
        ``detach()``, with a version counter of its own (PyTorch): in-place changes through
        ``.data`` are invisible to autograd's "modified by an inplace operation" check."""
        # (an inference tensor's .data is one too, as PyTorch's, and may be written outside
        # inference mode: a counter of its own, unless made inside)
        storage = self._storage
        if type(storage) is InferenceStorage and not STATE.inference:
            return Tensor(self._data, CountedInferenceStorage(storage.root), self.device)
        return Tensor(self._data, type(storage)(storage.root), self.device)

    @data.setter
    def data(self, other: Tensor) -> None:
        if not isinstance(other, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(other).__name__} (t.data = value)")
        if self._requires_grad and not (other.dtype.is_floating_point
                                        or other.dtype.is_complex):
            raise RuntimeError(f"data set to a tensor that requires gradients must be floating "
                               f"point or complex dtype (got {other.dtype}); call "
                               f"requires_grad_(False) first")
        # PyTorch's set_data: this tensor now shows other's memory but keeps its own version
        # counter (shared with its views while the memory is the same), so
        # ``w.data -= lr * g`` neither bumps w's version nor hands w the temporary's counter.
        self._data = other._data
        self._geometry_changed = True  # (ops/layout.replay_on_base)
        if other._storage.root is not self._storage.root:
            # other memory: a storage of its own (views made before keep the old one and
            # its root), carrying on this tensor's version; an inference tensor's memory
            # makes this tensor an inference tensor (PyTorch's set_data takes other's
            # dispatch keys) that keeps its counter, so it may still be written
            storage = (CountedInferenceStorage if isinstance(other._storage, InferenceStorage)
                       else Storage)(other._storage.root)
            storage.version = self._storage.version
            self._storage = storage
        self._dtype = other._dtype
        self._device = other._device

    def detach(self) -> Tensor:
        storage = self._storage
        if type(storage) is not Storage and not STATE.inference:
            # an inference tensor's: outside inference mode a fresh counter (PyTorch's
            # detach of an inference tensor), so the alias may be written in place
            storage = CountedInferenceStorage(storage.root)
        return Tensor(self._data, storage, self.device)

    def _is_view(self) -> bool:
        """Whether this tensor is a view of another (PyTorch's Tensor._is_view: ``_base`` is
        set)."""
        return self._base is not None

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self._grad_fn is not None:  # nodes recorded before now that saved self as an
            from tgrad.autograd.node import _seq  # input raise on unpack (PyTorch)
            self.__dict__["_detached_seq"] = next(_seq)
        self._grad_fn = None
        self._output_nr = 0
        self._requires_grad = False
        self.__dict__.pop("_fw", None)  # a forward-AD tangent goes too (PyTorch's detach_)
        return self

    def retain_grad(self) -> None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        from tgrad.autograd.hooks import install_retain_grad
        install_retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf on which ``retain_grad()`` was called."""
        return self._retains_grad

    _post_accumulate_hooks = None  # set per tensor (its __dict__) by the method below
    # True (set per tensor) on an output of a function that returns several views (split,
    # chunk, unbind) made in grad mode, and on the views taken of it in grad mode: PyTorch's
    # MULTI_OUTPUT_NODE views, which must not be modified in place (multi_output_view_error)
    _multi_output_view = False
    # set per tensor by detach_() of a non-leaf: the node counter then (see SavedTensor)
    _detached_seq = None
    # an output of a custom Function that is a view (made in its forward, or an input
    # returned as is), or a view of one: no in-place (custom_function_view_error)
    _custom_function_view = False
    # True (set per tensor) on a view made inside inference_mode (ops/_common.view_apply),
    # and views of it: an in-place through it outside, in grad mode, raises PyTorch's error
    _inference_mode_view = False
    # True (set per tensor) once an in-place view op (t_, transpose_, as_strided_, ...)
    # changed the tensor's shape or strides: views taken of it before may no longer replay
    # their chain on it (ops/layout.replay_on_base)
    _geometry_changed = False

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a backward has accumulated into this leaf's ``.grad``
        (e.g. to step an optimizer per parameter); it must return None."""
        from tgrad.autograd.hooks import register_post_accumulate_hook
        return register_hook_checked(self, hook, register_post_accumulate_hook)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient of this tensor is computed; a non-None
        return value replaces the gradient. Returns a handle with ``.remove()``."""
        from tgrad.autograd.hooks import register_tensor_hook
        return register_hook_checked(self, hook, register_tensor_hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        _autograd_backward(self, gradient, retain_graph, create_graph, inputs)

    # ------------------------------------------------------------------ interop
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array (this CPU tensor's own memory; a copy from a GPU). A
        tensor that requires grad raises while grad mode is on (as PyTorch: inside
        ``no_grad()`` it is allowed); ``force=True`` always returns it."""
        if force is not False and force is not True:  # (PyTorch's parser: a bool only)
            raise TypeError(f"numpy(): argument 'force' must be bool, not "
                            f"{type(force).__name__}")
        if self._requires_grad and not force and (
                STATE.enabled or (STATE.inference and STATE.inference_grad)):
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            from tgrad.backends import get_backend
            return get_backend(self.device).to_host(self._data)
        return self._data

    def __array__(self, dtype=None, copy=None):
        """``np.asarray(t)``: ``numpy()``'s array, so a tensor that requires grad raises
        while grad mode is on, as PyTorch's (use ``t.detach()``). NumPy's ``copy`` protocol:
        ``np.array(t)`` (copy=True) gets a copy in t's layout, never t's memory; with
        ``copy=False`` a conversion to another ``dtype`` (or a copy from a GPU) raises
        NumPy's ValueError; ``np.asarray(t)`` (copy=None) shares a CPU tensor's memory."""
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError(f"Unable to avoid copy while creating an array as requested "
                                 f"(np.asarray(tensor, dtype={np.dtype(dtype)}, copy=False) "
                                 f"of a {self.dtype} tensor converts it; leave out copy=False)")
            return arr.astype(dtype)  # (a new array)
        if self.device.type == "cpu":
            return arr.copy(order="K") if copy else arr
        if copy is False:  # (from a GPU numpy() is already a new host array)
            raise ValueError(f"Unable to avoid copy while creating an array as requested "
                             f"(np.asarray(tensor, copy=False) of a tensor on {self.device} "
                             f"copies it to the host; leave out copy=False)")
        return arr

    def __array_wrap__(self, array, context=None, return_scalar: bool = False) -> Tensor:
        """A NumPy ufunc given a tensor (``np.add(ndarray, t)``, ``np.exp(t)``) returns a CPU
        tensor of its result, as PyTorch's (Tensor's ``__array_priority__`` makes NumPy ask
        it); a 0-d result too (``return_scalar``). A bool result stays bool (PyTorch's
        converts it to uint8, a leftover from before its bool dtype)."""
        from tgrad.ops.creation import from_numpy
        return from_numpy(np.asarray(array))

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               f"to Scalar")
        return self.numpy(force=True).reshape(()).item()

    def tolist(self):
        return np.asarray(self.numpy(force=True)).tolist()

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        """The tensor's ``unbind(0)`` views, as PyTorch's (UnbindBackward0; being outputs of
        one multi-view op they refuse in-place changes while grad is recorded)."""
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __reversed__(self) -> Tensor:
        """The tensor flipped along dim 0 (a 0-d tensor is itself), as in PyTorch."""
        return self if self.ndim == 0 else self.flip(0)

    def __bool__(self) -> bool:
        if self._data.size != 1:
            how = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {how} is ambiguous (shape "
                               f"{list(self.shape)})")
        return bool(self.item())

    def _python_real(self, kind: str):
        """The one value of self for float() / int(), as PyTorch: ValueError for more or
        fewer elements; a complex value converts when its imaginary part is 0, else
        RuntimeError (PyTorch's overflow text)."""
        if self._data.size != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars "
                             f"(got {kind}() of a tensor of shape {list(self.shape)})")
        v = self.item()
        if isinstance(v, complex):
            if v.imag != 0:
                raise RuntimeError(f"value cannot be converted to type "
                                   f"{'double' if kind == 'float' else 'int64_t'} without "
                                   f"overflow ({kind}() of the complex value {v}; take "
                                   f".real or .abs() first)")
            v = v.real
        return v

    def __float__(self) -> float:
        # PyTorch 2.13 warns for float() only (not int(), item()), and only in grad mode
        # (not under no_grad / inference_mode, e.g. inside optim.LBFGS's step)
        if self._requires_grad and is_grad_enabled():
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to "
                          "unexpected behavior.\nConsider using tensor.detach() first.",
                          UserWarning, stacklevel=2)
        return float(self._python_real("float"))

    def __int__(self) -> int:
        return int(self._python_real("int"))

    def __complex__(self) -> complex:  # complex(t) of a complex tensor (__float__ refuses it)
        if self._data.size != 1:
            raise ValueError(f"only one element tensors can be converted to Python scalars "
                             f"(got complex() of a tensor of shape {list(self.shape)})")
        return complex(self.item())

    def __index__(self) -> int:
        if self.dtype.category > 1 or self._data.size != 1:  # bool or integer, one element
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __format__(self, format_spec: str) -> str:
        """A 0-d tensor formats as its number (f"{loss:.4f}"), as in PyTorch."""
        if self.ndim == 0 and type(self) is Tensor:  # a Parameter formats as its repr
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __contains__(self, element) -> bool:
        """``element in t``: whether any element equals it (PyTorch's rule)."""
        if not isinstance(element, (Tensor, int, float, bool, complex, np.number, np.bool_)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element).__name__}.")
        return bool((self == element).any().item())

    def __repr__(self) -> str:
        """PyTorch's layout: ``tensor([1.5000, 2.0000], requires_grad=True)``. The rules
        (precision, summarization, wrapping, ``tgrad.set_printoptions``) live in
        ``tgrad._tensor_str``."""
        return _tensor_repr(self)

    # ------------------------------------------------------------------ pickling, deepcopy
    def __reduce_ex__(self, protocol: int):
        """Pickle as PyTorch: the values (with their NumPy layout: a transpose stays
        column-major; other views are copied row-major, without their storage), the class,
        device, ``requires_grad`` and the Python attributes; never the autograd graph
        (grad_fn, view base, hooks) nor ``.grad``. A non-leaf comes back as a leaf that
        requires grad, as in PyTorch. (Pickling the graph failed: view Functions such as
        ``t()``'s are classes made at run time, which pickle cannot find by name.)"""
        data = self._data
        if not isinstance(data, np.ndarray):  # a device array: its values on the host
            from tgrad.backends import get_backend
            data = get_backend(self.device).to_host(data)
        return (_rebuild_tensor, (type(self), data, self.device, self.requires_grad,
                                  _picklable_dict(self)))

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy``, as PyTorch's: graph leaves only (a non-leaf raises PyTorch's
        RuntimeError); the copy keeps the values, ``requires_grad``, a deep copy of ``.grad``
        and of the Python attributes, and no autograd history. On the CPU the storage is
        copied whole, once per deepcopy call (the memo), and the copy views it with the
        original's offset and strides: tensors that shared memory (a tensor and its views,
        tied slices) still share it in the copy, as PyTorch's."""
        if not self.is_leaf:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                "module, this may be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        import copy
        shared = _deepcopy_storage_view(self, memo)
        if shared is not None:  # the view over a copy of the whole storage (PyTorch's)
            out = _rebuild_tensor(type(self), shared[0], self.device, self.requires_grad, None)
            out._storage = shared[1]
        else:
            if isinstance(self._data, np.ndarray):
                data = self._data.copy(order="A")  # the layout a pickle keeps
            else:  # a device array: a row-major device copy
                from tgrad.backends import get_backend
                data = get_backend(self.device).clone(self._data)
            out = _rebuild_tensor(type(self), data, self.device, self.requires_grad, None)
        memo[id(self)] = out
        state = _picklable_dict(self)
        if state:
            out.__dict__.update(copy.deepcopy(state, memo))
        if self._grad is not None:
            out._grad = copy.deepcopy(self._grad, memo)
        return out

    # ------------------------------------------------------------------ conversions
    def to(self, *args, **kwargs) -> Tensor:
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other_tensor)``."""
        return _to(self, *args, **kwargs)

    def _cast(self, dtype) -> Tensor:
        """self when it has ``dtype`` already (as to(dtype), without its argument parsing:
        x.float() is x for a float32 x), else to(dtype)."""
        return self if self._dtype is dtype else self.to(dtype)

    def float(self) -> Tensor:
        return self._cast(dtypes.float32)

    def double(self) -> Tensor:
        return self._cast(dtypes.float64)

    def half(self) -> Tensor:
        return self._cast(dtypes.float16)

    def bfloat16(self) -> Tensor:
        return self._cast(dtypes.bfloat16)

    def long(self) -> Tensor:
        return self._cast(dtypes.int64)

    def int(self) -> Tensor:
        return self._cast(dtypes.int32)

    def short(self) -> Tensor:
        return self._cast(dtypes.int16)

    def char(self) -> Tensor:
        return self._cast(dtypes.int8)

    def byte(self) -> Tensor:
        return self._cast(dtypes.uint8)

    def bool(self) -> Tensor:
        return self._cast(dtypes.bool_)

    def cfloat(self) -> Tensor:
        return self._cast(dtypes.complex64)

    def cdouble(self) -> Tensor:
        return self._cast(dtypes.complex128)

    def cpu(self, memory_format=None) -> Tensor:
        """This tensor on the CPU (itself if it is there); ``memory_format`` as ``to``'s."""
        if memory_format is None:
            return self.to("cpu")
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """This tensor on ``device`` (the current cuda device by default; an int is
        ``cuda:<int>``). ``non_blocking`` is accepted as PyTorch's (tgrad's host copies are
        synchronous); ``memory_format`` as ``to``'s."""
        if isinstance(device, int) and not isinstance(device, bool):
            device = f"cuda:{device}"
        elif device is None:
            device = "cuda"
        if memory_format is None:
            return self.to(device, non_blocking=non_blocking)
        return self.to(device, non_blocking=non_blocking, memory_format=memory_format)

    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """With no argument, the type name PyTorch gives (``'tgrad.FloatTensor'``, on a
        GPU ``'tgrad.cuda.FloatTensor'``); else this tensor cast to ``dtype``: a dtype, a
        dtype name, or a type name (``'tgrad.DoubleTensor'``; ``'tgrad.cuda.…'`` also
        moves it to the GPU). Itself when nothing changes."""
        if dtype is None:
            where = "" if self.device.type == "cpu" else self.device.type + "."
            return f"tgrad.{where}{_TYPE_NAMES[self.dtype]}"
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            dt, on_cuda = parse_type_name(dtype)
            return self.to(device="cuda" if on_cuda else "cpu", dtype=dt,
                           non_blocking=non_blocking)
        from tgrad.ops.tensor_legacy import TensorType
        if isinstance(dtype, TensorType):  # tgrad.DoubleTensor, tgrad.cuda.FloatTensor, ...
            return self.to(device="cuda" if dtype.is_cuda else "cpu", dtype=dtype.dtype,
                           non_blocking=non_blocking)
        if isinstance(dtype, type):  # PyTorch: a Python type other than a tensor type
            if not issubclass(dtype, Tensor):
                raise ValueError(f"invalid type: {dtype.__name__!r}")
            # (tgrad.Tensor: the default dtype, PyTorch's torch.Tensor being FloatTensor)
            return self.to(dtypes.get_default_dtype(), non_blocking=non_blocking)
        if not isinstance(dtype, (str, dtypes.DType)):
            raise TypeError("dtype must be a type, str, or dtype object")
        return self.to(dtypes.as_dtype(dtype), non_blocking=non_blocking)


def parse_type_name(name: str) -> tuple:
    """(dtype, on cuda) of a legacy type name: ``'torch.FloatTensor'``,
    ``'tgrad.cuda.DoubleTensor'``...; ValueError("invalid type: ...") for anything else."""
    parts = name.split(".")
    dt = {v: k for k, v in _TYPE_NAMES.items()}.get(parts[-1])
    if dt is None or parts[0] not in ("tgrad", "torch") or len(parts) > 3 \
            or (len(parts) == 3 and parts[1] != "cuda"):
        raise ValueError(f"invalid type: {name!r}")
    return dt, len(parts) == 3


def _legacy_init(self: Tensor, data, storage, device, requires_grad, sizes: tuple) -> None:
    """``tgrad.Tensor(...)`` as PyTorch's legacy constructor: ``__init__``'s positional
    parameters, where not their defaults, are the call's arguments (sizes or data), and a
    device (a str or Device) among them its ``device=`` keyword."""
    from tgrad.device import get_default_device
    from tgrad.ops.tensor_legacy import legacy_new
    given = [] if data is None else [data]
    given += [v for v, default in ((storage, None), (device, CPU), (requires_grad, False))
              if v is not default]
    given += list(sizes)
    devices = [v for v in given if isinstance(v, (str, Device))]
    args = tuple(v for v in given if not isinstance(v, (str, Device)))
    dev = as_device(devices[-1]) if devices else get_default_device()
    made = legacy_new("Tensor", dtypes.get_default_dtype(), dev, args, {}, any_tensor=True)
    for name in Tensor.__slots__[:-2]:  # (all but __weakref__ and __dict__)
        if name != "_grad_fn_version":
            setattr(self, name, getattr(made, name))


# Tensor.type() names (PyTorch's legacy tensor type names)
_TYPE_NAMES = {dtypes.bool_: "BoolTensor", dtypes.uint8: "ByteTensor",
               dtypes.int8: "CharTensor", dtypes.int16: "ShortTensor", dtypes.int32: "IntTensor",
               dtypes.int64: "LongTensor", dtypes.float16: "HalfTensor",
               dtypes.bfloat16: "BFloat16Tensor", dtypes.float32: "FloatTensor",
               dtypes.float64: "DoubleTensor", dtypes.complex64: "ComplexFloatTensor",
               dtypes.complex128: "ComplexDoubleTensor",
               **{d: dtypes.SCALAR_TYPE_NAMES[d] + "Tensor" for d in dtypes.FLOAT8_DTYPES}}


def _rebuild_tensor(cls: type, data: Any, device: Device, requires_grad: bool,
                    state: dict | None) -> Tensor:
    """A leaf ``cls`` instance over ``data`` (a host array is moved to ``device``), for
    ``Tensor.__reduce_ex__`` / ``__deepcopy__``; no subclass ``__init__`` runs (as PyTorch's
    ``_rebuild_from_type_v2``)."""
    if isinstance(data, np.ndarray) and device.type != "cpu":
        from tgrad.backends import get_backend
        data = get_backend(device).from_host(data)
    t = object.__new__(cls)
    Tensor.__init__(t, data, None, device, requires_grad)
    if state:
        t.__dict__.update(state)
    return t


def _deepcopy_storage_view(t: Tensor, memo: dict) -> tuple | None:
    """For Tensor.__deepcopy__: (array, storage) viewing a copy of t's storage root with
    t's byte offset and strides, the root copied and its Storage made once per ``memo``
    (so views copied together share memory again); None where the root is not a
    C-contiguous host array (a device array, a rare strided root): the caller copies t
    alone."""
    root = t._storage.root
    if not (isinstance(t._data, np.ndarray) and isinstance(root, np.ndarray)
            and root.flags.c_contiguous):
        return None
    key = ("tgrad.Storage", id(root))  # (not an int: no clash with deepcopy's id keys)
    hit = memo.get(key)
    if hit is None:
        new_root = root.copy()
        hit = memo[key] = (new_root, _new_storage(new_root), root)  # root: kept alive
    new_root, storage = hit[0], hit[1]
    offset = (t._data.__array_interface__["data"][0]
              - root.__array_interface__["data"][0]) if t._data.size else 0
    data = np.ndarray(t._data.shape, t._data.dtype, buffer=new_root, offset=offset,
                      strides=t._data.strides)
    return data, storage


def _picklable_dict(t: Tensor) -> dict:
    """The Python attributes a pickle or deepcopy of ``t`` keeps: all but forward-mode AD's
    dual (``_fw``), which belongs to a dual level of this process."""
    return {k: v for k, v in t.__dict__.items() if k != "_fw"}


def _autograd_backward(*args, **kwargs) -> None:
    global _autograd_backward
    from tgrad.autograd import tensor_backward
    _autograd_backward = tensor_backward  # bound on first use (tgrad.autograd imports this)
    tensor_backward(*args, **kwargs)


def _to(*args, **kwargs) -> Tensor:
    global _to
    from tgrad.ops.movement import to
    _to = to  # bound on first use (the op library imports this module)
    return to(*args, **kwargs)


def _is_contiguous_as(t: Tensor, fmt) -> bool:
    """Tensor.is_contiguous(memory_format=fmt): PyTorch's rule. contiguous_format (and
    preserve_format, which PyTorch answers alike) is row-major contiguity; channels_last
    (channels_last_3d) needs a 4-D (5-D) tensor whose strides, dims of size 1 skipped, are
    those of a row-major (N, H, W, C) ((N, D, H, W, C)) array."""
    from tgrad.ops.movement import channels_last, channels_last_3d, memory_format
    if not isinstance(fmt, memory_format):
        raise TypeError(f"is_contiguous(): argument 'memory_format' must be "
                        f"tgrad.memory_format, not {type(fmt).__name__}")
    order = {channels_last: (4, (1, 3, 2, 0)),
             channels_last_3d: (5, (1, 4, 3, 2, 0))}.get(fmt)
    if order is None:
        return t._data.flags.c_contiguous
    if t.ndim != order[0]:
        return False
    sizes, strides, expected = t.shape, t.stride(), 1
    for d in order[1]:  # innermost first: C, W, H, (D,) N
        if sizes[d] != 1:
            if strides[d] != expected:
                return False
            expected *= sizes[d]
    return True


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    n = max(ndim, 1)
    if type(dim) is not int:  # (a bool is refused, as PyTorch's parser does)
        dim = _int_arg(op, "dim", dim, allow_bool=False)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def _int_arg(op: str, name: str, value, position: int | None = None,
             allow_bool: bool = True) -> int:
    """``value`` as a Python int (ints, NumPy integers, one-element integer tensors), or
    PyTorch's TypeError naming the op, the argument (and its ``position``); a float, even
    3.0, is refused, and a bool too unless ``allow_bool``."""
    if not allow_bool and isinstance(value, (bool, np.bool_)):
        index = None
    else:
        try:
            index = operator.index(value)
        except TypeError:
            index = None
    if index is None or not -_INT64_BOUND <= index < _INT64_BOUND:
        where = f" (position {position})" if position else ""
        if index is not None:  # PyTorch's ValueError (int64 arguments)
            raise ValueError(f"{op}(): argument '{name}'{where} is {index}, outside the int64 "
                             f"range: Overflow when unpacking long long")
        raise TypeError(f"{op}(): argument '{name}'{where} must be int, not "
                        f"{type(value).__name__}") from None
    return index


_INT64_BOUND = 1 << 63


def register_hook_checked(t: Tensor, hook, register):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    return register(t, hook)


def _refresh_view_grad_fn(view: Tensor) -> None:
    """A view's grad_fn goes stale when its base is modified in place through another view
    (the base's grad_fn was rebased); regenerate it by replaying the view ops on the base."""
    base = view._base
    if view._multi_output_view and (base._requires_grad or view._grad_fn is not None):
        raise multi_output_view_error(view, indirect=True)  # PyTorch: no grad_fn to rebuild
    if view._custom_function_view and view._grad_fn is not None:
        raise custom_function_view_error(view, indirect=True)  # its custom node is stale
    if view._view_chain is None:
        view._grad_fn_version = view._storage.version
        return
    # a base that no longer requires grad (detach_()ed after the view was taken) while the
    # view has a node: PyTorch still regenerates the view's node from the base, with no edge
    # to it, so the view now depends on nothing (its value is the constant base's)
    detached = not base._requires_grad
    if detached and view._grad_fn is None:
        return  # nothing to rebuild; left stale, so a later base.requires_grad_() is seen
    view._grad_fn_version = view._storage.version
    prev = STATE.enabled
    STATE.enabled = True
    if detached:
        base._requires_grad = True  # for the replay only; its edge is cut below
    try:
        from tgrad.ops.layout import replay_on_base
        t = replay_on_base(view)
    finally:
        STATE.enabled = prev
        if detached:
            base._requires_grad = False
    if detached:
        _cut_edge_to(t._grad_fn, base)
    view._grad_fn = t._grad_fn
    view._output_nr = t._output_nr
    view._requires_grad = True
    if view._retains_grad:  # .grad follows the view's new node (as PyTorch's)
        from tgrad.autograd.hooks import move_retain_grad
        move_retain_grad(view)


def _cut_edge_to(node, base: Tensor) -> None:
    """Replace the edge into ``base``'s AccumulateGrad at the bottom of a replayed view
    chain (one edge per view node) by no edge: gradients stop there."""
    from tgrad.autograd.node import AccumulateGrad
    while node is not None:
        edges = node.next_functions
        fn = edges[0][0]
        if isinstance(fn, AccumulateGrad) and fn.variable is base:
            node.next_functions = ((None, 0),) + tuple(edges[1:])
            return
        node = fn


def custom_function_view_error(view: Tensor, indirect: bool = False) -> RuntimeError:
    """PyTorch's error for a view made by a custom Function (see
    ``Tensor._custom_function_view``) modified in place (``indirect``: its base or another
    view of its base was): view+inplace handling would replace the custom backward. The op
    is named by the view's grad_fn less "Backward0" (``Output 0 of MyFn``)."""
    what = ("its base or another view of its base has been" if indirect else "is being")
    name = re.sub(r'Backward[0-9]*$', '', view._grad_fn.name())
    return RuntimeError(
        f"Output {view._output_nr} of {name} is a view and {what} modified inplace. This view "
        "was created inside a custom Function (or because an input was returned as-is) and "
        "the autograd logic to handle view+inplace would override the custom backward "
        "associated with the custom Function, leading to incorrect gradients. This behavior "
        "is forbidden. You can fix this by cloning the output of the custom Function.")


def multi_output_view_error(view: Tensor, indirect: bool = False) -> RuntimeError:
    """PyTorch's error for an output of a function returning several views (or a view of
    one, see ``Tensor._multi_output_view``) modified in place (``indirect``: its base or
    another view of the base was). The op is named by the view's grad_fn less "Backward0"
    (``Output 1 of Split``), as PyTorch's text."""
    gf = view._grad_fn
    if gf is None:
        head = ("A view was created in no_grad mode and "
                + ("its base or another view of its base has been modified inplace"
                   if indirect else "is being modified inplace") + " with grad mode enabled.")
    else:
        what = ("its base or another view of its base has been" if indirect
                else "is being")
        head = (f"Output {view._output_nr} of {re.sub(r'Backward[0-9]*$', '', gf.name())} is "
                f"a view and {what} modified inplace.")
    return RuntimeError(f"{head} This view is the output of a function that returns multiple "
                        f"views. Such functions do not allow the output views to be modified "
                        f"inplace. You should replace the inplace operation by an out-of-place "
                        f"one.")
