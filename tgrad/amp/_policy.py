"""Autocast's cast policies, applied where an op starts (``Function.apply`` for the ops
registered with a policy, ``autocast_policy`` for composite entry points such as
F.linear or the losses). PyTorch's three kinds:

    "lower":   float32 tensors on an autocast device -> that device's autocast dtype
               (float16 / bfloat16): matmul, linear, convolutions...
    "fp32":    float16 / bfloat16 tensors -> float32: exp, log, pow, sum, softmax, the losses
    "promote": every floating tensor -> the widest floating dtype among them

float64 tensors, and tensors on devices outside the autocast region, are left alone.
"""

from __future__ import annotations

import functools
from typing import Callable

from tgrad.autograd.grad_mode import STATE

__all__ = ["cast_args", "autocast_policy"]


def _cast(t, kind: str, low, widest):
    dt = t.dtype
    if not dt.is_floating_point:
        return t
    if kind == "lower":
        return t.to(low) if dt.name == "float32" else t
    if kind == "fp32":
        return t.to(_float32()) if dt.itemsize == 2 else t
    return t.to(widest) if dt is not widest else t


def _float32():
    from tgrad import dtypes
    return dtypes.float32


def cast_args(kind: str, args: tuple, kwargs: dict | None = None) -> tuple:
    """(args, kwargs) cast by ``kind`` for the autocast region in force (STATE.autocast)."""
    from tgrad.tensor import Tensor
    region = STATE.autocast
    tensors = [a for a in args if isinstance(a, Tensor)]
    if kwargs:
        tensors += [v for v in kwargs.values() if isinstance(v, Tensor)]
    if not any(t.device.type in region for t in tensors):
        return args, kwargs
    widest = None
    if kind == "promote":
        from tgrad import dtypes
        floats = [t.dtype for t in tensors if t.dtype.is_floating_point]
        if not floats:
            return args, kwargs
        widest = floats[0]
        for d in floats[1:]:
            widest = dtypes.promote_types(widest, d)  # float16 with bfloat16: float32

    def one(a):
        if isinstance(a, Tensor) and a.device.type in region:
            return _cast(a, kind, region[a.device.type], widest)
        return a
    new_args = tuple(one(a) for a in args)
    new_kwargs = {k: one(v) for k, v in kwargs.items()} if kwargs else kwargs
    return new_args, new_kwargs


def autocast_policy(kind: str) -> Callable:
    """Decorator: inside an autocast region the function's tensor arguments are cast by
    ``kind`` first (one thread-local read outside one)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if STATE.autocast is not None:
                args, kwargs = cast_args(kind, args, kwargs)
            return fn(*args, **kwargs)
        return wrapper
    return deco
