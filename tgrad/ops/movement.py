"""Data movement: clone, contiguous, to(dtype/device). Each is differentiable:
clone/contiguous pass the gradient through; a cast casts it back to the input dtype."""

from __future__ import annotations

import warnings

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.backends import get_backend, numpy_backend
from tgrad.device import Device, as_device
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    require_tensor,
    tensor_method,
    wrap,
)
from tgrad.tensor import Tensor

__all__ = ["clone", "contiguous", "memory_format", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]


class memory_format:  # noqa: N801  (PyTorch's name)
    """PyTorch's ``torch.memory_format``: the layout ``clone``/``contiguous``/``to`` and the
    factories give. tgrad's ops make row-major tensors (``contiguous_format``;
    ``preserve_format`` gives row-major too). ``channels_last`` (4-D) and
    ``channels_last_3d`` (5-D) give PyTorch's NHWC / NDHWC strides (a permuted view of a
    row-major NHWC buffer), which every op reads in place; an op's result is row-major
    again, where PyTorch would keep the format."""

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


# channels-last formats: (rank, the dims in memory order: N, then the spatial dims, C)
_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _check_format(op: str, input: Tensor, fmt) -> bool:  # noqa: A002
    """PyTorch's checks of a ``memory_format`` argument; True for a channels-last one (of
    the right rank)."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}(): argument 'memory_format' must be tgrad.memory_format, not "
                        f"{type(fmt).__name__}")
    last = _LAST.get(fmt)
    if last is not None and input.ndim != last[0]:
        raise RuntimeError(f"required rank {last[0]} tensor to use {fmt.name} format")
    return last is not None


def to_channels_last(x: Tensor, fmt: memory_format) -> Tensor:
    """A copy of ``x`` (4-D / 5-D) with PyTorch's channels-last strides: the values laid
    out N, spatial dims, C in a row-major buffer and viewed back in x's dim order;
    differentiable (a permute, a copy and the inverse permute)."""
    order = _LAST[fmt][1]
    back = tuple(order.index(d) for d in range(len(order)))
    return fresh(Clone.apply(x.permute(order)).permute(back))


def laid_out(t: Tensor, fmt) -> Tensor:
    """A new tensor ``t`` (no graph) in ``fmt``: itself unless that is a channels-last
    format, else its channels-last copy (requires_grad kept: a leaf again)."""
    if fmt not in _LAST:
        return t
    from tgrad.autograd.grad_mode import no_grad
    with no_grad():
        out = to_channels_last(t.detach(), fmt)
    return out.requires_grad_() if t.requires_grad else out


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
    require_tensor("clone", input)
    if _check_format("clone", input,
                     preserve_format if memory_format is None else memory_format):
        return to_channels_last(input, memory_format)
    return Clone.apply(input)


@tensor_method("contiguous")
def contiguous(input: Tensor, *,  # noqa: A002
               memory_format: memory_format = contiguous_format) -> Tensor:
    """``input`` itself when C-contiguous, else a contiguous copy (``preserve_format`` is
    only accepted for an input already contiguous, as PyTorch); with a channels-last
    ``memory_format``, itself when already laid out so, else a channels-last copy."""
    if _check_format("contiguous", input, memory_format):
        if input.is_contiguous(memory_format=memory_format):
            return input
        return to_channels_last(input, memory_format)
    if input.is_contiguous():
        return input
    if memory_format is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return Clone.apply(input)


def _is_device_arg(a) -> bool:
    """A device positional of Tensor.to: a Device, a device string (not a dtype name) or an
    index."""
    if isinstance(a, str):
        return a not in dtypes._BY_NAME or a in ("cpu", "cuda")
    return isinstance(a, Device) or (isinstance(a, int) and not isinstance(a, bool))


def _to_signature_error(args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}"
                                                         for k, v in kwargs.items()])
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of: (dtype, bool non_blocking, bool copy), (device, dtype, "
                     f"bool non_blocking, bool copy), (Tensor other, bool non_blocking, bool "
                     f"copy)")


def _to_args(args: tuple, kwargs: dict) -> tuple:
    """(dtype, device, copy) from PyTorch's three Tensor.to signatures: to(dtype, ...),
    to(device=None, dtype=None, ...), to(other, ...), each followed by non_blocking and copy
    (bools); a dtype before a device, two dtypes or a non-bool flag is PyTorch's TypeError."""
    given = dict(kwargs)
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    flags = {k: kwargs.pop(k) for k in ("non_blocking", "copy") if k in kwargs}
    rest = list(args)
    if rest and isinstance(rest[0], Tensor):  # to(other, non_blocking, copy)
        if dtype is not None or device is not None:
            raise _to_signature_error(args, given)
        dtype, device = rest[0].dtype, rest[0].device
        rest.pop(0)
    elif rest and (rest[0] is None or _is_device_arg(rest[0])):  # to(device, dtype, ...)
        first = rest.pop(0)
        if first is not None:
            if device is not None:
                raise TypeError("to() got multiple values for argument 'device'")
            device = first
        if rest and not isinstance(rest[0], (bool, np.bool_)):  # the dtype (or None)
            second = rest.pop(0)
            if second is not None:
                if dtype is not None or _is_device_arg(second):
                    raise _to_signature_error(args, given)
                dtype = second
    elif rest and not isinstance(rest[0], (bool, np.bool_)):  # to(dtype, ...)
        if dtype is not None or device is not None:
            raise _to_signature_error(args, given)
        dtype = rest.pop(0)
    if len(rest) > 2 or any(not isinstance(b, (bool, np.bool_)) for b in rest) or any(
            not isinstance(v, (bool, np.bool_)) for v in flags.values()):
        raise _to_signature_error(args, given)
    if len(rest) == 2:
        flags["copy"] = rest[1]
    return dtype, device, bool(flags.get("copy", False))


def to(x: Tensor, *args, **kwargs) -> Tensor:
    fmt = kwargs.pop("memory_format", None)
    unknown = sorted(set(kwargs) - {"dtype", "device", "non_blocking", "copy"})
    if unknown:
        raise TypeError(f"to() got unexpected keyword arguments {unknown}")
    # (checked as clone's; a channels-last format lays the result out so, unless x is)
    last = fmt is not None and _check_format("to", x, fmt)
    dtype, device, copy = _to_args(args, kwargs)
    if isinstance(dtype, str):  # a dtype name ('float64'), as tgrad.dtype names
        dtype = dtypes.as_dtype(dtype)
    dt = x.dtype if dtype is None else dtypes.as_dtype(dtype)
    dev = x.device if device is None else as_device(device)
    if dev.type != "cpu":
        get_backend(dev)  # clear error when the device has no backend
    if dt is x.dtype and dev == x.device and not copy:
        if last and not x.is_contiguous(memory_format=fmt):
            return to_channels_last(x, fmt)
        return x
    if x.dtype.is_complex and not dt.is_complex and dt is not dtypes.bool_:  # (to bool: z != 0)
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=2)
    out = ToCopy.apply(x, dt, dev)
    return to_channels_last(out, fmt) if last else out
