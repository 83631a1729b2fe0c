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
