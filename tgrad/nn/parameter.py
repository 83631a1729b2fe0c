"""Parameter: a leaf Tensor that a Module registers as one of its parameters."""

from __future__ import annotations

import numpy as np

from tgrad.tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it
    in ``parameters()``. It shares storage with ``data`` and requires grad by default.

    Ops on a Parameter return plain Tensors; ``detach()`` returns a plain Tensor."""

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            from tgrad.ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor, got {type(data).__name__}")
        super().__init__(data._data, data._storage, data.device)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        from tgrad.ops.movement import clone
        out = Parameter(clone(self.detach()), self.requires_grad)
        memo[id(self)] = out
        return out


class _BufferMeta(type):
    # isinstance(t, Buffer) is True for any tensor marked by Buffer(...), as in PyTorch
    def __instancecheck__(cls, instance) -> bool:
        if cls is Buffer and isinstance(instance, Tensor) \
                and instance.__dict__.get("_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that is module state but not a parameter: assigning ``Buffer(t)`` to a Module
    attribute registers it as a buffer (``persistent``: whether it is in ``state_dict``).

    As in PyTorch, ``Buffer(t)`` returns a plain Tensor (``t`` detached, sharing its storage
    and keeping its ``requires_grad``) marked with ``persistent`` and ``_is_buffer``;
    ``isinstance(x, Buffer)`` checks the mark."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True) -> Tensor:
        if data is None:
            from tgrad.ops.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Buffer: data must be a Tensor, got {type(data).__name__}")
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


_UNINITIALIZED_SHAPE = (
    "Can't access the shape of an uninitialized parameter or buffer. This error usually "
    "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
    "initialized one. Call `forward` to initialize the parameters before accessing their "
    "attributes.")


_UNINITIALIZED_USE = (
    "Attempted to use an uninitialized parameter in {}. This error happens when you are "
    "using a `LazyModule` or explicitly manipulating `tgrad.nn.parameter.Uninitialized"
    "Parameter` objects. When using LazyModules Call `forward` with a dummy batch to "
    "initialize the parameters before calling tgrad functions")


class _PlaceholderArray(np.ndarray):
    """The empty host array behind a placeholder: NumPy computations on it (every CPU op)
    raise PyTorch's ValueError; dtype casts (Module.to / double ...) keep the placeholder."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise ValueError(_UNINITIALIZED_USE.format(ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        raise ValueError(_UNINITIALIZED_USE.format(func.__name__))


class UninitializedTensorMixin:
    """A parameter / buffer of a lazy module whose shape is not known yet: it holds an
    empty placeholder of its dtype and device (which ``Module.to`` and friends convert) and
    becomes a ``cls_to_become`` of ``shape`` in place on ``materialize`` (so optimizers and
    references holding it stay valid). Reading ``shape`` raises PyTorch's RuntimeError (ops
    that read it, i.e. nearly all, raise it too; PyTorch raises a ValueError from its
    dispatcher); ``size()`` is the placeholder's (0,), as PyTorch's."""

    _is_uninitialized = True
    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Become a ``cls_to_become`` of ``shape`` (uninitialised values), on ``device`` /
        of ``dtype`` (default: the placeholder's)."""
        from tgrad.ops.creation import empty
        new = empty(tuple(shape), device=device if device is not None else self.device,
                    dtype=dtype if dtype is not None else self.dtype)
        self._data, self._storage = new._data, new._storage
        self._dtype, self._device = new.dtype, new.device
        self.__class__ = self.cls_to_become

    def _set_placeholder(self, converted: Tensor) -> None:
        """Take dtype and device from ``converted`` (Module._apply's fn of the placeholder)."""
        self._data, self._storage = converted._data, converted._storage
        self._dtype, self._device = converted.dtype, converted.device
        self._guard()

    def _guard(self) -> None:
        """Make host computations on the placeholder raise (a CPU placeholder's array)."""
        if isinstance(self._data, np.ndarray) and not isinstance(self._data,
                                                                   _PlaceholderArray):
            self._data = self._data.view(_PlaceholderArray)

    def _placeholder(self) -> Tensor:
        data = self._data.view(np.ndarray) if isinstance(self._data, np.ndarray) else self._data
        return Tensor(data, self._storage, self.device)

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED_SHAPE)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo: dict):
        if id(self) in memo:
            return memo[id(self)]
        out = type(self)(requires_grad=self.requires_grad, device=self.device,
                         dtype=self.dtype)
        memo[id(self)] = out
        return out


def is_lazy(param: object) -> bool:
    """True for an UninitializedParameter / UninitializedBuffer."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a lazy module infers on its first forward."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        from tgrad.ops.creation import empty
        super().__init__(empty(0, device=device, dtype=dtype), requires_grad)
        self._guard()


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a lazy module infers on its first forward."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None) -> None:
        from tgrad.ops.creation import empty
        data = empty(0, device=device, dtype=dtype)
        super().__init__(data._data, data._storage, data.device)
        if requires_grad:
            self.requires_grad_(True)
        self._guard()
