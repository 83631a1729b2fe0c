"""Data movement: clone, contiguous, to(dtype/device). Each is differentiable:
clone/contiguous pass the gradient through; a cast casts it back to the input dtype."""

from __future__ import annotations

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.backends import get_backend
from tgrad.device import Device, as_device
from tgrad.ops._common import backend_of, register_op, tensor_method, wrap
from tgrad.tensor import Tensor

__all__ = ["clone", "contiguous"]


class Clone(Function):
    name = "clone"
    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx, x):
        return wrap(backend_of(x).clone(x._data), x.device)

    @staticmethod
    def backward(ctx, g):
        return g


class ToCopy(Function):
    """Cast and/or move;  dx = g cast/moved back to x's dtype and device."""

    name = "to"
    node_name = "ToCopyBackward0"

    @staticmethod
    def forward(ctx, x, dtype, device):
        ctx.dtype, ctx.device = x.dtype, x.device
        data = x._data
        if device != x.device:
            host = get_backend(x.device).to_host(data)
            host = host.astype(dtype.np, copy=False)
            return wrap(get_backend(device).from_host(host), device)
        be = backend_of(x)
        if dtype is x.dtype:  # to(..., copy=True) without a change: still a new buffer
            return wrap(be.clone(data), device)
        return wrap(be.cast(data, dtype.np), device)

    @staticmethod
    def backward(ctx, g):
        return g.to(ctx.device, ctx.dtype), None, None


for _c in (Clone, ToCopy):
    register_op(_c)


@tensor_method("clone")
def clone(input: Tensor) -> Tensor:  # noqa: A002
    """A copy with its own storage (C-contiguous); differentiable."""
    return Clone.apply(input)


@tensor_method("contiguous")
def contiguous(input: Tensor) -> Tensor:  # noqa: A002
    """``input`` itself when C-contiguous, else a contiguous copy."""
    if input.is_contiguous():
        return input
    return Clone.apply(input)


def to(x: Tensor, *args, **kwargs) -> Tensor:
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, (str, Device, int)) and not isinstance(a, bool):
            if isinstance(a, str) and a in dtypes._BY_NAME and a not in ("cpu", "cuda"):
                dtype = dtypes.as_dtype(a)
            else:
                device = a
        elif a is not None:
            dtype = a
    dt = x.dtype if dtype is None else dtypes.as_dtype(dtype)
    dev = x.device if device is None else as_device(device)
    if dev.type != "cpu":
        get_backend(dev)  # clear error when the device has no backend
    if dt is x.dtype and dev == x.device and not copy:
        return x
    return ToCopy.apply(x, dt, dev)
