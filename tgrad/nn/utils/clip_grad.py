"""tgrad.nn.utils.clip_grad: gradient clipping, as ``torch.nn.utils``: ``get_total_norm``
(the norm of a list of tensors), ``clip_grads_with_norm_`` (scale by a given total norm),
``clip_grad_norm_`` (the two together; ``clip_grad_norm`` is its deprecated alias) and
``clip_grad_value_``. Clipping works in place
on ``p.grad`` under no_grad; parameters without a gradient are skipped."""

from __future__ import annotations

import math
import warnings
from typing import Iterable

from tgrad.autograd.grad_mode import no_grad
from tgrad.dtypes import result_type
from tgrad.ops.creation import tensor
from tgrad.ops.elementwise import isfinite
from tgrad.ops.reduce import norm
from tgrad.ops.shape import stack
from tgrad.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def _refuse_sparse(tensors: list[Tensor], op: str) -> None:
    """A sparse COO gradient: PyTorch's NotImplementedError (no SparseCPU kernel for
    ``op``), before any gradient is changed."""
    if any(t._sparse for t in tensors):
        from tgrad.sparse import unsupported
        raise unsupported(op)


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of the vector of every element of ``tensors`` (the norm of
    their norms), in the widest of their dtypes; 0 for no tensors."""
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    tensors = [t for t in tensors if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    _refuse_sparse(tensors, "linalg_vector_norm")
    for t in tensors:  # (every norm type, inf too: linalg.vector_norm's check)
        if not (t.dtype.is_floating_point or t.dtype.is_complex):
            from tgrad.linalg._triangular import not_floating_error
            raise not_floating_error("linalg.vector_norm", t.dtype)
    with no_grad():
        if norm_type == math.inf:
            if any(t.numel() == 0 for t in tensors):
                raise RuntimeError("clip_grad_norm_: cannot compute the infinity norm of an "
                                   "empty gradient, because max has no identity")
            norms = [t.detach().abs().amax() for t in tensors]
        else:
            norms = [norm(t.detach(), norm_type) for t in tensors]
        dt = result_type(*norms)  # mixed dtypes: the widest (a float16 norm may be inf)
        norms = stack([n.to(dt) for n in norms])
        total = norms.amax() if norm_type == math.inf else norm(norms, norm_type)
    if error_if_nonfinite and not bool(isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            f"non-finite, so it cannot be clipped. To disable this error and scale the "
            f"gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                          total_norm: Tensor, foreach=None) -> None:
    """Scale every gradient by min(1, max_norm / (total_norm + 1e-6)) in place;
    ``total_norm`` is a Tensor (as ``get_total_norm`` returns)."""
    if not isinstance(total_norm, Tensor):  # PyTorch's TypeError (from clamp)
        raise TypeError(f"clip_grads_with_norm_(): total_norm must be a Tensor (as "
                        f"get_total_norm returns), got {type(total_norm).__name__}")
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        scale = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            s = scale.to(device=g.device)
            if g.dtype.itemsize == 2 and g.dtype.is_floating_point:
                # a half gradient times the float32 scale, rounded once (PyTorch's)
                g.copy_(g.float() * s.float())
            else:
                g.mul_(s.to(dtype=g.dtype))


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale the gradients so that their total ``norm_type``-norm (the norm of the vector of
    every gradient element) is at most ``max_norm``; returns the total norm before clipping.

    The scale is min(1, max_norm / (total + 1e-6)), applied to every gradient (as PyTorch,
    so a norm already below ``max_norm`` leaves the gradients unchanged)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    parameters = list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters: Iterable[Tensor] | Tensor, max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """Deprecated alias of ``clip_grad_norm_`` (warns with a FutureWarning, as PyTorch)."""
    warnings.warn("`tgrad.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`tgrad.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float,
                     foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    grads = _grads(parameters)
    _refuse_sparse(grads, "clamp_min_")
    with no_grad():
        for g in grads:
            g.clamp_(-clip_value, clip_value)
