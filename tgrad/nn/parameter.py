"""Parameter: a leaf Tensor that a Module registers as one of its parameters."""

from __future__ import annotations

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
