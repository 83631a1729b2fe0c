"""``parameters_to_vector`` / ``vector_to_parameters`` (PyTorch's
torch.nn.utils.convert_parameters): all parameters as one flat vector and back."""

from __future__ import annotations

from typing import Iterable

from tgrad.ops.shape import cat
from tgrad.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated in order (one vector of their promoted
    dtype; differentiable, like ``cat``)."""
    flat = [p.reshape(-1) for p in parameters]
    if not flat:  # PyTorch's ValueError (from torch.cat)
        raise ValueError("parameters_to_vector(): expected a non-empty iterable of "
                         "parameters (torch.cat(): expected a non-empty list of Tensors)")
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Point each parameter's ``.data`` at its slice of ``vec`` (consecutive, in order, in
    the parameter's shape), as PyTorch does: the parameters then share ``vec``'s memory."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].view_as(param).data
        pointer += n
