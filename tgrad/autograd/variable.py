"""The deprecated ``Variable`` wrapper: it warns and returns a Tensor."""

from __future__ import annotations

import warnings


def Variable(tensor, requires_grad: bool = False):  # noqa: N802
    """Deprecated: Variables and Tensors were merged; this returns ``tensor``."""
    warnings.warn("The Variable API is deprecated: Variables are not needed anymore to use "
                  "autograd with tensors. Use tensors directly, with requires_grad=True.",
                  DeprecationWarning, stacklevel=2)
    from tgrad.tensor import Tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(tensor).__name__}")
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor
