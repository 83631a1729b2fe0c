"""Reductions over ``dim`` (int, tuple, negative or None) with ``keepdim``.

Backward rules broadcast the incoming gradient back over the reduced dims
(``_expand_back``); ``sum_to`` is the un-broadcasting reduction binary ops use.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops._common import backend_of, normalize_dims, register_op, tensor_method, wrap
from tgrad.tensor import Tensor

__all__ = ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "sum_to"]

values_indices = namedtuple("values_indices", ["values", "indices"])


def _kept_shape(shape: tuple, axes) -> tuple:
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back(g: Tensor, x_shape: tuple, axes, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to ``x_shape``."""
    if not keepdim:
        g = g.reshape(_kept_shape(x_shape, axes))
    return g.expand(x_shape)


def _reduced_numel(shape: tuple, axes) -> int:
    if axes is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


class Sum(Function):
    """y = sum_{axes} x;  dx = broadcast(g)."""

    name = "sum"
    node_name = "SumBackward1"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        data = x._data if dtype is None else backend_of(x).cast(x._data, dtype.np)
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return wrap(backend_of(x).sum_(data, axes, keepdim), x.device)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.shape, ctx.axes, ctx.keepdim), None, None, None


class Mean(Function):
    """y = sum_{axes} x / N;  dx = broadcast(g) / N."""

    name = "mean"
    node_name = "MeanBackward1"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {x.dtype}")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return wrap(backend_of(x).mean(x._data, axes, keepdim), x.device)

    @staticmethod
    def backward(ctx, g):
        n = _reduced_numel(ctx.shape, ctx.axes)
        return _expand_back(g, ctx.shape, ctx.axes, ctx.keepdim) / float(n if n > 0 else 1), None, None


def _make_extreme(name: str):
    """amax/amin: ties share the gradient evenly: dx = broadcast(g) * [x == y] / count."""

    def forward(ctx, x, axes, keepdim):
        if x.numel() == 0 and (axes is None or any(x.shape[a] == 0 for a in axes)):
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument." if axes is None else
                               f"{name}(): Expected reduction dim {axes} to have non-zero size.")
        y = wrap(getattr(backend_of(x), name)(x._data, axes, keepdim), x.device)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.keepdim = axes, keepdim
        return y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        mask = (x == _expand_back(y, x.shape, ctx.axes, ctx.keepdim)).to(g.dtype)
        count = mask.sum(dim=ctx.axes, keepdim=True)
        return _expand_back(g, x.shape, ctx.axes, ctx.keepdim) * mask / count, None, None

    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": f"{name.capitalize()}Backward0",
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    return register_op(cls)


Amax = _make_extreme("amax")
Amin = _make_extreme("amin")


def _make_arg(name: str):
    def forward(ctx, x, axis, keepdim):
        if x.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0." if axis is None else
                               f"{name}(): Expected reduction dim {axis} to have non-zero size.")
        return wrap(getattr(backend_of(x), name)(x._data, axis, keepdim), x.device)

    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": f"{name.capitalize()}Backward0",
        "forward": staticmethod(forward)})
    return register_op(cls)


Argmax = _make_arg("argmax")
Argmin = _make_arg("argmin")


class MaxDim(Function):
    """(values, indices) along one dim; dx = broadcast(g) at the returned index only."""

    name = "max_dim"
    node_name = "MaxBackward0"
    kind = "max"

    @classmethod
    def _run(cls, ctx, x, axis, keepdim):
        if x.ndim and x.shape[axis] == 0:
            raise IndexError(f"{cls.kind}(): Expected reduction dim {axis} to have non-zero "
                             f"size.")
        be = backend_of(x)
        ax = axis if x.ndim else None
        idx = wrap(getattr(be, "arg" + cls.kind)(x._data, ax, keepdim), x.device)
        vals = wrap(getattr(be, "a" + cls.kind)(x._data, (ax,) if x.ndim else None, keepdim),
                    x.device)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.shape, ctx.axis, ctx.keepdim = x.shape, axis, keepdim
        return vals, idx

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        return MaxDim._run(ctx, x, axis, keepdim)

    @staticmethod
    def backward(ctx, g, _gi):
        from tgrad.ops.creation import arange
        (idx,) = ctx.saved_tensors
        shape, axis = ctx.shape, ctx.axis
        if not shape:
            return g, None, None
        axes = (axis,)
        idx_full = _expand_back(idx, shape, axes, ctx.keepdim)
        pos = arange(shape[axis], device=g.device).reshape(
            tuple(-1 if i == axis else 1 for i in range(len(shape))))
        mask = (pos == idx_full).to(g.dtype)
        return _expand_back(g, shape, axes, ctx.keepdim) * mask, None, None


class MinDim(MaxDim):
    name = "min_dim"
    node_name = "MinBackward0"
    kind = "min"

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        return MinDim._run(ctx, x, axis, keepdim)


for _c in (Sum, Mean, MaxDim, MinDim):
    register_op(_c)


@tensor_method("sum")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A001,A002
    """Sum over ``dim`` (all dims when None); integer and bool inputs sum to int64."""
    axes = normalize_dims("sum", dim, input.ndim)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
    return Sum.apply(input, axes, keepdim, dtype)


@tensor_method("mean")
def mean(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    return Mean.apply(input, normalize_dims("mean", dim, input.ndim), keepdim)


@tensor_method("amax")
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:  # noqa: A002
    """Maximum over ``dim`` (all dims for ``()``/None); NaN propagates; ties share grad."""
    return Amax.apply(input, normalize_dims("amax", dim if dim != () else None, input.ndim),
                      keepdim)


@tensor_method("amin")
def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:  # noqa: A002
    return Amin.apply(input, normalize_dims("amin", dim if dim != () else None, input.ndim),
                      keepdim)


def _single_dim(op: str, dim, ndim: int):
    if dim is None:
        return None
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return normalize_dims(op, int(dim), ndim)[0] if ndim else 0


@tensor_method("argmax")
def argmax(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """Index of the maximum (of the flattened tensor when ``dim`` is None)."""
    axis = _single_dim("argmax", dim, input.ndim)
    return Argmax.apply(input, axis if input.ndim else None, keepdim and axis is not None)


@tensor_method("argmin")
def argmin(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A002
    axis = _single_dim("argmin", dim, input.ndim)
    return Argmin.apply(input, axis if input.ndim else None, keepdim and axis is not None)


@tensor_method("max")
def max(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001,A002
    """``max(x)``: the maximum; ``max(x, dim)``: (values, indices); ``max(x, other)``:
    elementwise maximum."""
    if isinstance(dim, Tensor):
        from tgrad.ops.elementwise import maximum
        return maximum(input, dim)
    if dim is None:
        return amax(input)
    return values_indices(*MaxDim.apply(input, _single_dim("max", dim, input.ndim), keepdim))


@tensor_method("min")
def min(input: Tensor, dim=None, keepdim: bool = False):  # noqa: A001,A002
    if isinstance(dim, Tensor):
        from tgrad.ops.elementwise import minimum
        return minimum(input, dim)
    if dim is None:
        return amin(input)
    return values_indices(*MinDim.apply(input, _single_dim("min", dim, input.ndim), keepdim))


class SumTo(Function):
    """Un-broadcast: sum ``g`` down to ``shape``;  dx = expand(g, x.shape)."""

    name = "sum_to"
    node_name = "SumToBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            i + lead for i, s in enumerate(shape) if s == 1 and x.shape[i + lead] != 1)
        be = backend_of(x)
        out = be.sum_(x._data, axes, True) if axes else x._data
        return wrap(be.reshape_copy(out, shape) if out.shape != shape else
                    (be.clone(out) if out is x._data else out), x.device)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape), None


register_op(SumTo)


def sum_to(x: Tensor, shape) -> Tensor:
    """Sum ``x`` over broadcast dims so that it has ``shape`` (None: a Python scalar input)."""
    if shape is None or x.shape == tuple(shape):
        return x
    return SumTo.apply(x, tuple(shape))
