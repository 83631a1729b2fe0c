"""Data movement: clone, contiguous, to(dtype/device). Each is differentiable:
clone/contiguous pass the gradient through; a cast casts it back to the input dtype."""

from __future__ import annotations

import warnings

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.backends import get_backend, numpy_backend
from tgrad.device import Device, as_device
from tgrad.ops._common import backend_of, register_op, tensor_method, wrap
from tgrad.tensor import Tensor

__all__ = ["clone", "contiguous", "memory_format", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]


class memory_format:  # noqa: N801  (PyTorch's name)
    """PyTorch's ``torch.memory_format``: the layout ``clone``/``contiguous`` give. tgrad
    makes every new tensor row-major (``contiguous_format``); ``preserve_format`` is
    accepted (its result is row-major too) and the channels-last formats are rejected."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"tgrad.{self.name}"

    def __reduce__(self) -> str:
        return self.name  # pickles as the module-level constant


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def _check_format(op: str, input: Tensor, fmt) -> None:  # noqa: A002
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be tgrad.memory_format, not "
                        f"{type(fmt).__name__}")
    rank = {channels_last: 4, channels_last_3d: 5}.get(fmt)
    if rank is not None:
        if input.ndim != rank:
            raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
        raise RuntimeError(f"{op}(): memory_format={fmt} is not supported: tgrad lays tensors "
                           f"out row-major; use tgrad.contiguous_format")


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
        if dtype.is_complex or x.dtype.is_complex:
            dtypes.check_complex_device("to", dtype, device)
        if dtype.itemsize == 1 and device.type != "cpu":  # (float8 or a 1-byte integer)
            dtypes.check_float8_device("to", dtype, device)
        if device != x.device:
            host = get_backend(x.device).to_host(data)
            if dtype in dtypes.FLOAT8_DTYPES or x.dtype in dtypes.FLOAT8_DTYPES:
                host = numpy_backend.cast(host, dtype.np)  # (float8: PyTorch's rounding)
            else:
                host = host.astype(dtype.np, copy=False)
            return wrap(get_backend(device).from_host(host), device)
        be = backend_of(x)
        if dtype is x.dtype:  # to(..., copy=True) without a change: still a new buffer
            return wrap(be.clone(data), device)
        return wrap(be.cast(data, dtype.np), device)

    @staticmethod
    def backward(ctx, g):
        if g.dtype.is_complex and not ctx.dtype.is_complex:
            # a real input cast to complex gets the real part of the gradient (PyTorch)
            from tgrad.ops.complex_ops import real
            g = real(g)
        return g.to(ctx.device, ctx.dtype), None, None


for _c in (Clone, ToCopy):
    register_op(_c)


@tensor_method("clone")
def clone(input: Tensor, *,  # noqa: A002
          memory_format: memory_format | None = preserve_format) -> Tensor:
    """A copy with its own storage, C-contiguous with either ``memory_format``
    (``preserve_format``, the default, does not keep a transposed input's strides as
    PyTorch's does); differentiable."""
    _check_format("clone", input, preserve_format if memory_format is None else memory_format)
    return Clone.apply(input)


@tensor_method("contiguous")
def contiguous(input: Tensor, *,  # noqa: A002
               memory_format: memory_format = contiguous_format) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy (``preserve_format`` is
    only accepted for an input already contiguous, as PyTorch)."""
    _check_format("contiguous", input, memory_format)
    if input.is_contiguous():
        return input
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return Clone.apply(input)


def to(x: Tensor, *args, **kwargs) -> Tensor:
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    copy = kwargs.pop("copy", False)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    if fmt is not None:  # checked as clone's: the channels-last formats are refused; with
        _check_format("to", x, fmt)  # neither a dtype nor a device change x is returned
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
    if x.dtype.is_complex and not dt.is_complex and dt is not dtypes.bool_:  # (to bool: z != 0)
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=2)
    return ToCopy.apply(x, dt, dev)
