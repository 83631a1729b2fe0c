"""Reductions over ``dim`` (int, tuple, negative or None) with ``keepdim``: sum mean prod
amax amin max min argmax argmin var std logsumexp norm all any.

Backward rules broadcast the incoming gradient back over the reduced dims
(``_expand_back``); ``sum_to`` is the un-broadcasting reduction the engine's gradient
validation applies to broadcast-shaped gradients.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator

import numpy as np

from tgrad import dtypes, return_types
from tgrad.autograd import profiler_hooks
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import STATE, is_grad_enabled
from tgrad.backends import _numpy_extreme as _np_extreme
from tgrad.backends import _numpy_norms as _np_norms
from tgrad.ops._common import (
    backend_of,
    make_view,
    normalize_dims,
    register_op,
    require_tensor,
    route_sparse,
    tensor_method,
    wrap,
)
from tgrad.ops.complex_ops import no_complex as _no_complex
from tgrad.ops.elementwise import _EQ_MASK, _fused, node_variant, where
from tgrad.return_types import values_indices  # noqa: F401  (re-exported)
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["sum", "mean", "prod", "amax", "amin", "max", "min", "argmax", "argmin", "var",
           "std", "var_mean", "std_mean", "logsumexp", "norm", "all", "any", "sum_to"]



def _reduce_dims(op: str, dim, ndim: int) -> tuple | None:
    """normalize_dims for sum, mean, var, std, logsumexp, norm, amax and amin: an empty
    ``dim`` (``()`` or ``[]``) reduces every dim there, as in PyTorch (all/any keep it as no
    reduction)."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return normalize_dims(op, dim, ndim)




def check_grad_dtype(op: str, input: Tensor, dtype) -> None:  # noqa: A002
    """PyTorch's refusal to record a reduction or scan whose ``dtype=`` result cannot carry
    a gradient (an integer or bool dtype of an input that requires grad, grad mode on)."""
    if (dtype is not None and not (dtype.is_floating_point or dtype.is_complex)
            and input.requires_grad
            and STATE.enabled):
        raise RuntimeError(f"Autograd not support dtype: {dtypes.SCALAR_TYPE_NAMES[dtype]} "
                           f"({op}(dtype={dtype.name}) of a tensor that requires grad; "
                           f"detach() it first or ask for a floating dtype)")


def _kept_shape(shape: tuple, axes) -> tuple:
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _expand_back(g: Tensor, x_shape: tuple, axes, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to ``x_shape``."""
    if axes is None and g.ndim == 0:
        if not differentiable_formula() and profiler_hooks.ACTIVE is None:
            # A plain backward: the stride-0 view itself, without expand()'s argument
            # handling (measured: 16 -> 9 us after a 4 MB op has flushed the caches)
            return make_view(g, backend_of(g).expand(g._data, x_shape))  # 0-d: never fails
        return g.expand(x_shape)  # a full reduction: a 0-d gradient expands as it is
    if not keepdim:
        g = g.reshape(_kept_shape(x_shape, axes))
    return g.expand(x_shape)


# Elementwise tails of reduction backwards, over the gradient and the reduced values broadcast
# back (stride-0 views): one fused primitive (one kernel) in a plain backward, the composite
# under create_graph (see elementwise._fused).
_LOGSUMEXP_GRAD = _fused("logsumexp", lambda g, x, y: g * (x - y).exp())
_CENTERED_GRAD = _fused("centered", lambda g, x, m: g * (x - m))
_PROD_GRAD = _fused("prod", lambda g, y, x: g * y / x)


def _reduced_numel(shape: tuple, axes) -> int:
    if axes is None:
        return math.prod(shape)
    return math.prod([shape[a] for a in axes])


class Sum(Function):
    """y = sum_{axes} x;  dx = broadcast(g)."""

    name = "sum"
    node_name = "SumBackward1"
    saved_attributes = {"_saved_dim": "axes", "_saved_keepdim": "keepdim",
                        "_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        be = backend_of(x)
        data = x._data if dtype is None else be.cast(x._data, dtype.np)
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        out = be.sum_(data, axes, keepdim)  # integers and bools sum to int64...
        if dtype is not None:  # ...unless a dtype is asked for (int32 wraps, as PyTorch's)
            out = be.cast(out, dtype.np)
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, g):
        return _expand_back(g, ctx.shape, ctx.axes, ctx.keepdim), None, None, None


class SumAll(Sum):
    """sum() over every dim: PyTorch's node name is SumBackward0 (SumBackward1 with dims)."""

    node_name = "SumBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape"}


class Mean(Function):
    """y = sum_{axes} x / N;  dx = broadcast(g) / N."""

    name = "mean"
    node_name = "MeanBackward1"
    saved_attributes = {"_saved_dim": "axes", "_saved_keepdim": "keepdim",
                        "_saved_self_sym_sizes": "shape",
                        "_saved_self_sym_numel": lambda node: math.prod(node.shape)}

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        if not (x.dtype.is_floating_point or x.dtype.is_complex):
            raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{dtypes.SCALAR_TYPE_NAMES[x.dtype]} ({x.dtype}); convert with "
                               f".float() or pass dtype=")
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim
        return wrap(backend_of(x).mean(x._data, axes, keepdim), x.device)

    @staticmethod
    def backward(ctx, g):
        # Divide the reduced gradient first (N times fewer elements), then broadcast.
        n = float(_reduced_numel(ctx.shape, ctx.axes) or 1)
        if not differentiable_formula() and profiler_hooks.ACTIVE is None:
            # A plain backward: the backend's division itself, as div(g, n) runs it (the
            # number in g's dtype; float32 for a half g), without the op's dispatch
            number = np.float32(n) if g.dtype.itemsize == 2 else g.dtype.np.type(n)
            g = wrap(backend_of(g).binary("div", g._data, number), g.device)
        else:
            g = g / n
        return _expand_back(g, ctx.shape, ctx.axes, ctx.keepdim), None, None


def _make_extreme(name: str, prim: str | None = None, node_name: str | None = None,
                  nan_share: bool = False):
    """amax/amin: ties share the gradient evenly: dx = broadcast(g) * [x == y] / count.
    ``nan_share`` (max()/min() of the whole tensor, PyTorch's evenly_distribute_backward):
    when the result is NaN, the NaN elements share it instead (x == NaN is never true)."""
    prim = prim or name

    def forward(ctx, x, axes, keepdim):
        if x.numel() == 0 and axes is None:  # (an empty dim given: _check_extreme_dims)
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        y = wrap(getattr(backend_of(x), prim)(x._data, axes, keepdim), x.device)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.keepdim = axes, keepdim
        return y

    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if _extreme_grad_on_numpy(g, x, y, ctx.axes):  # the same steps on the arrays
            return wrap(_np_extreme.extreme_grad(g._data, x._data, y._data, ctx.axes,
                                                 _kept_shape(x.shape, ctx.axes), nan_share),
                        x.device), None, None
        yb = _expand_back(y, x.shape, ctx.axes, ctx.keepdim)
        hit = x == yb
        if nan_share:  # [x == y or both NaN]: no host sync to ask whether y is NaN
            hit = hit | (x.isnan() & yb.isnan())
        count = hit.to(g.dtype).sum(dim=ctx.axes, keepdim=True)
        share = (g.reshape(count.shape) / count).expand(x.shape)  # g / count, reduced size
        if nan_share:
            return where(hit, share, 0.0), None, None
        # A NaN result (no x equals it, count 0): NaN over its whole slice, as PyTorch's
        # g / count * [x == y] gives, rather than a gradient that silently vanishes.
        return where(yb.isnan(), float("nan"), _EQ_MASK(share, x, yb)), None, None

    # saved_tensors is (x, y); amax() over every dim saved dim () in PyTorch
    saved = {"_saved_self": 0, "_saved_result": 1}
    if not nan_share:
        saved.update(_saved_dim=lambda node: node.axes or (), _saved_keepdim="keepdim")
    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": node_name or f"{name.capitalize()}Backward0",
        "saved_attributes": saved,
        "forward": staticmethod(forward), "backward": staticmethod(backward)})
    return register_op(cls)


def _extreme_grad_on_numpy(g: Tensor, x: Tensor, y: Tensor, axes) -> bool:
    """Whether amax/amin's (max()/min()'s) plain backward runs _numpy_extreme.extreme_grad:
    no graph to record (create_graph and forward AD keep the tgrad ops), CPU float32/float64
    tensors of one dtype, reduced slices of at most MAX_SLICE elements (an exact count)."""
    return (not differentiable_formula() and x._device.type == "cpu"
            and _np_extreme.fast_dtype(x._data.dtype) and g.dtype is x.dtype
            and y.dtype is x.dtype
            and _reduced_numel(x.shape, axes) <= _np_extreme.MAX_SLICE)


def _check_extreme_dims(name: str, input: Tensor, dim) -> None:  # noqa: A002
    """amax/amin over a given empty dim raise PyTorch's IndexError naming the first such
    dim as the caller wrote it (-1 stays -1); dims were validated by _reduce_dims."""
    if input.numel() != 0 or dim is None:
        return
    for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
        if input.shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


Amax = _make_extreme("amax")
Amin = _make_extreme("amin")
MaxAll = _make_extreme("max", "amax", "MaxBackward1", nan_share=True)
MinAll = _make_extreme("min", "amin", "MinBackward1", nan_share=True)


def _make_arg(name: str):
    def forward(ctx, x, axis, keepdim):
        if x.numel() == 0 and (axis is None or x.shape[axis] == 0):
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
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
    saved_attributes = {"_saved_dim": "axis", "_saved_keepdim": "keepdim",
                        "_saved_indices": 0, "_saved_self_sym_sizes": "shape"}

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
        # where, not * mask: a NaN or inf g stays out of the other positions (PyTorch
        # scatters g into zeros)
        return where(pos == idx_full, _expand_back(g, shape, axes, ctx.keepdim), 0.0), None, None


class MinDim(MaxDim):
    name = "min_dim"
    node_name = "MinBackward0"
    kind = "min"
    saved_attributes = MaxDim.saved_attributes

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        return MinDim._run(ctx, x, axis, keepdim)


class MeanAll(Mean):
    """mean() over every dim: MeanBackward0 (MeanBackward1 with dims), as PyTorch."""

    node_name = "MeanBackward0"
    saved_attributes = {"_saved_self_sym_sizes": "shape",
                        "_saved_self_sym_numel": lambda node: math.prod(node.shape)}


for _c in (Sum, Mean, MaxDim, MinDim):  # SumAll/MeanAll share the ops' names
    register_op(_c)


@tensor_method("sum")
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None,  # noqa: A001,A002
        axis=None, keepdims=None) -> Tensor:
    """Sum over ``dim`` (all dims when None); integer and bool inputs sum to int64."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("sum", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("sum", keepdim, keepdims)
    require_tensor("sum", input)
    axes = _reduce_dims("sum", dim, input.ndim)
    if dtype is not None:
        dtype = dtypes.as_dtype(dtype)
        check_grad_dtype("sum", input, dtype)
    try:
        return (SumAll if dim is None else Sum).apply(input, axes, keepdim, dtype)
    except RuntimeError as e:
        return route_sparse("sum", e, input, dim=dim, keepdim=keepdim, dtype=dtype)


@tensor_method("mean")
def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None,  # noqa: A002
         axis=None, keepdims=None) -> Tensor:
    """Mean over ``dim`` (all dims when None); ``dtype`` casts the input first."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("mean", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("mean", keepdim, keepdims)
    require_tensor("mean", input)
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
        if (dt in (dtypes.float16, dtypes.bfloat16) and not input.dtype.is_floating_point
                and not input.dtype.is_complex and input.device.type == "cpu"):
            # PyTorch's CPU mean of integers into a half dtype: cast to float32, sum, divide,
            # round once (70000 is not inf first)
            return mean(input.to(dtypes.float32), dim, keepdim).to(dt)
        input = input.to(dt)  # noqa: A001
    return (MeanAll if dim is None else Mean).apply(
        input, _reduce_dims("mean", dim, input.ndim), keepdim)


@tensor_method("amax")
def amax(input: Tensor, dim=(), keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A002
    """Maximum over ``dim`` (all dims for ``()``/None); NaN propagates; ties share grad."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("amax", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("amax", keepdim, keepdims)
    require_tensor("amax", input)
    _no_complex("amax", input)
    axes = _reduce_dims("amax", dim, input.ndim)
    _check_extreme_dims("amax", input, dim)
    if input.numel():  # (an empty result needs no kernel: PyTorch's float8 gives it too)
        dtypes.refuse_float8("max_values_cpu", input.dtype)
    return Amax.apply(input, axes, keepdim)


@tensor_method("amin")
def amin(input: Tensor, dim=(), keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A002
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("amin", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("amin", keepdim, keepdims)
    require_tensor("amin", input)
    _no_complex("amin", input)
    axes = _reduce_dims("amin", dim, input.ndim)
    _check_extreme_dims("amin", input, dim)
    if input.numel():  # (an empty result needs no kernel: PyTorch's float8 gives it too)
        dtypes.refuse_float8("min_values_cpu", input.dtype)
    return Amin.apply(input, axes, keepdim)


class _Required:
    """The default of an argument that must be given (None has a meaning there)."""

    def __repr__(self) -> str:
        return "<required>"


_REQUIRED = _Required()


def _dim_or_axis(op: str, dim, axis, required: bool = False):
    """``dim``, or NumPy's name for it, ``axis`` (PyTorch's argument parser accepts both;
    giving both is an error)."""
    if axis is None:
        if dim is None and required:
            raise TypeError(f"{op}() missing required argument 'dim'")
        return dim
    if dim is not None and not (isinstance(dim, tuple) and dim == ()):
        raise TypeError(f"{op}() got multiple values for argument 'dim' (and its alias "
                        "'axis')")
    return axis


def _keepdim_or_keepdims(op: str, keepdim: bool, keepdims) -> bool:
    """``keepdim``, or NumPy's name for it, ``keepdims`` (PyTorch's argument parser accepts
    both; giving both is an error)."""
    if keepdim:
        raise TypeError(f"{op}() got multiple values for argument 'keepdim' (and its alias "
                        "'keepdims')")
    return keepdims


def _single_dim(op: str, dim, ndim: int):
    if dim is None:
        return None
    # _wrap_dim's int check: NumPy integers and 0-d integer tensors taken, a bool refused
    d = _wrap_dim(dim, ndim, op)  # a 0-d tensor takes dims -1 and 0
    return d if ndim else 0


def _arg_extreme(cls, input: Tensor, dim, keepdim: bool) -> Tensor:  # noqa: A002
    require_tensor(cls.name, input)
    if input.dtype is dtypes.bool_:
        raise RuntimeError(f"{cls.name}(): does not support bool input; convert with .int() "
                           f"first")
    axis = _single_dim(cls.name, dim, input.ndim)
    out = cls.apply(input, axis if input.ndim else None, keepdim and axis is not None)
    if keepdim and axis is None and input.ndim:  # the flat index, with every dim kept
        out = out.reshape((1,) * input.ndim)
    return out


@tensor_method("argmax")
def argmax(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A002
    """Index of the maximum (of the flattened tensor when ``dim`` is None)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("argmax", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("argmax", keepdim, keepdims)
    if isinstance(input, Tensor) and input.dtype.is_complex:  # PyTorch's RuntimeError
        raise RuntimeError("argmax(): does not support complex input")
    return _arg_extreme(Argmax, input, dim, keepdim)


@tensor_method("argmin")
def argmin(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A002
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("argmin", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("argmin", keepdim, keepdims)
    if isinstance(input, Tensor) and input.dtype.is_complex:  # PyTorch's RuntimeError
        raise RuntimeError("argmin(): does not support complex input")
    return _arg_extreme(Argmin, input, dim, keepdim)


def _max_min_other(op: str, input: Tensor, other, dim):  # noqa: A002
    """max/min(input, other=other): the elementwise maximum/minimum (PyTorch's keyword)."""
    if not isinstance(other, Tensor) or dim is not None:
        raise TypeError(f"{op}(): other= takes a Tensor, without dim (got other of type "
                        f"{type(other).__name__}{'' if dim is None else ' and a dim'})")
    return _max_min(op, input, other, False)


def _max_min(op: str, input: Tensor, dim, keepdim: bool):  # noqa: A002
    """max/min: a Tensor ``dim`` is the other operand of maximum/minimum; None reduces all
    dims (amax/amin); an int gives (values, indices) along it."""
    require_tensor(op, input)
    _no_complex(f"{op}_all", input)
    if isinstance(dim, Tensor):
        from tgrad.ops.elementwise import maximum, minimum
        return (maximum if op == "max" else minimum)(input, dim)
    if dim is None:
        if keepdim:
            raise TypeError(f"{op}(): keepdim=True needs a dim (PyTorch's {op}() has no "
                            f"keepdim without dim); use amax/amin(input, keepdim=True)"
                            .replace("amax/amin", "amax" if op == "max" else "amin"))
        return (MaxAll if op == "max" else MinAll).apply(input, None, False)
    if input.ndim and input.numel():  # PyTorch's float8 error (0-d, empty: no kernel runs)
        dtypes.refuse_float8(f"{op}_cpu", input.dtype)
    cls = MaxDim if op == "max" else MinDim
    return getattr(return_types, op)(*cls.apply(input, _single_dim(op, dim, input.ndim),
                                                 keepdim))


def _keyword_tensor_dim(fn):
    """max/min: a Tensor passed as ``dim=`` (keyword) is the dim to reduce along, one
    integer element as PyTorch's; only a positional Tensor is the other operand of
    maximum/minimum. (One Python signature cannot tell the two apart, hence this wrapper.)"""
    elementwise = {"max": "maximum", "min": "minimum"}[fn.__name__]

    @functools.wraps(fn)
    def with_tensor_dim(*args, **kwargs):
        for key in ("dim", "axis"):
            d = kwargs.get(key)
            if isinstance(d, Tensor):
                try:
                    if d.dtype is dtypes.bool_:
                        raise TypeError
                    kwargs[key] = operator.index(d)
                except TypeError:
                    raise TypeError(f"{fn.__name__}(): argument '{key}' must be int, not a "
                                    f"Tensor of shape {list(d.shape)} and dtype {d.dtype} (a "
                                    f"Tensor {key}= must hold one integer; a Tensor passed "
                                    f"positionally is the other operand of {elementwise})"
                                    ) from None
        return fn(*args, **kwargs)
    with_tensor_dim.keyword_sensitive = True  # (tgrad/_out.py: keep dim= a keyword)
    return with_tensor_dim


@tensor_method("max")
@_keyword_tensor_dim
def max(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None,  # noqa: A001,A002
        other=None):
    """``max(x)``: the maximum; ``max(x, dim)``: (values, indices); ``max(x, other)`` (or
    ``other=``): elementwise maximum."""
    if other is not None:
        return _max_min_other("max", input, other, dim)
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("max", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("max", keepdim, keepdims)
    return _max_min("max", input, dim, keepdim)


@tensor_method("min")
@_keyword_tensor_dim
def min(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None,  # noqa: A001,A002
        other=None):
    if other is not None:
        return _max_min_other("min", input, other, dim)
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("min", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("min", keepdim, keepdims)
    return _max_min("min", input, dim, keepdim)


# ------------------------------------------------------------------------------ prod
class Prod(Function):
    """y = prod_{axes} x;  dx_i = g * prod_{j != i} x_j  (j over i's reduced slice).

    Without zeros in x this is g * y / x. With zeros (where y / x is 0/0) the products of
    the others are formed explicitly: the slice, flattened to length n, is repeated n times
    with the diagonal set to 1 and reduced with prod, O(n^2) work. Both forms are tgrad ops,
    so second derivatives are right at zeros too (d^2 y / dx_i dx_j = prod_{k != i, j}).
    """

    name = "prod"
    node_name = "ProdBackward1"

    @staticmethod
    def forward(ctx, x, axes, keepdim, dtype):
        be = backend_of(x)
        data = x._data if dtype is None else be.cast(x._data, dtype.np)
        y = wrap(be.prod(data, axes, keepdim), x.device)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.keepdim = axes, keepdim
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        gx = _expand_back(g, x.shape, ctx.axes, ctx.keepdim)
        if x.numel() == 0:
            return gx, None, None, None
        red = tuple(range(x.ndim)) if ctx.axes is None else ctx.axes
        if _reduced_numel(x.shape, red) == 1:  # one factor: dx = g, also where x is inf or
            # NaN (y / x would be NaN there; PyTorch's g * y / x gives NaN for a >= 1-d x).
            # A 0-d x: g itself, a constant (PyTorch's rule); a >= 1-d x under create_graph:
            # g times the empty product of the others (1, a node of x's graph), so dx is in
            # x's graph with a zero second derivative, as PyTorch's (there by y / x)
            if x.ndim == 0 or not is_grad_enabled():
                return gx, None, None, None
            return gx * _prod_of_others(x, ctx.axes), None, None, None
        if x.dtype.is_complex:  # g * conj(prod of the others) (PyTorch's convention)
            from tgrad.ops.complex_ops import conj_of
            return gx * conj_of(_prod_of_others(x, ctx.axes)), None, None, None
        if not bool(any(x == 0.0)):
            return (_PROD_GRAD(gx, _expand_back(y, x.shape, ctx.axes, ctx.keepdim), x),
                    None, None, None)
        return gx * _prod_of_others(x, ctx.axes), None, None, None


def _prod_of_others(x: Tensor, axes) -> Tensor:
    """out_i = prod_{j != i} x_j over i's reduced slice, without division; shape of x."""
    from tgrad.ops.creation import arange
    from tgrad.ops.elementwise import where
    nd = x.ndim
    red = tuple(range(nd)) if axes is None else axes
    kept = tuple(d for d in range(nd) if d not in red)
    perm = kept + red
    n = _reduced_numel(x.shape, red)
    kept_shape = tuple(x.shape[d] for d in kept)
    flat = x.permute(*perm).reshape(kept_shape + (n,))                  # (..., n)
    idx = arange(n, device=x.device)
    diag = idx.reshape(n, 1) == idx                                     # (n, n) bool
    rows = where(diag, 1.0, flat.unsqueeze(-2).expand(kept_shape + (n, n)))
    others = prod(rows, dim=-1)                                         # (..., n)
    others = others.reshape(kept_shape + tuple(x.shape[d] for d in red))
    inv = [0] * nd
    for i, d in enumerate(perm):
        inv[d] = i
    return others.permute(*inv)


register_op(Prod)


class ProdAll(Prod):
    """Prod of every element: PyTorch's ProdBackward0 (over a dim: ProdBackward1)."""

    node_name = "ProdBackward0"


@tensor_method("prod")
def prod(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None,  # noqa: A002
         axis=None, keepdims=None) -> Tensor:
    """Product over ``dim`` (all elements when None); integer and bool inputs give int64."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("prod", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("prod", keepdim, keepdims)
    require_tensor("prod", input)
    axes = normalize_dims("prod", dim, input.ndim)
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    check_grad_dtype("prod", input, dt)
    out = (Prod if dim is not None else ProdAll).apply(input, axes, keepdim, dt)
    return out if dt is None or out.dtype is dt else out.to(dt)  # e.g. int32: not int64


# ------------------------------------------------------------------------------ var / std
def _check_var_dtype(op: str, x: Tensor) -> None:
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"{op}(): std and var only support floating point dtypes, got "
                           f"{x.dtype}; convert with .float()")


def _var_grad(g: Tensor, x: Tensor, axes, correction, keepdim: bool,
              scale: float = 2.0) -> Tensor:
    """broadcast(g * scale / (N - correction)) * (x - mean(x)): var's backward (scale 2;
    std's is scale 1 with g / y for g); the factor is applied on the reduced gradient (N
    times fewer elements), inf when N <= correction."""
    dof = builtins.max(_reduced_numel(x.shape, axes) - correction, 0)
    gs = _expand_back(g * (scale / dof if dof > 0 else math.inf), x.shape, axes, keepdim)
    m = mean(x, axes, keepdim=True)
    if x.dtype.is_complex:  # (the fused kernel computes in g's real dtype)
        return gs * (x - m)
    return _CENTERED_GRAD(gs, x, m.expand(x.shape))


class Var(Function):
    """y = sum_{axes} (x - mean)^2 / (N - correction);
    dx = broadcast(g) * 2 (x - mean(x)) / (N - correction).
    Complex x (CPU): y = sum |x - mean|^2 / (N - correction), real; with y = var(Re x) +
    var(Im x) the same rule gives dx = dRe + i dIm = broadcast(g) 2 (x - mean(x)) / (N - c)
    (PyTorch's)."""

    name = "var"
    node_name = "VarBackward0"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        _check_var_dtype("var", x)
        ctx.save_for_backward(x)
        ctx.axes, ctx.correction, ctx.keepdim = axes, correction, keepdim
        return wrap(backend_of(x).var(x._data, axes, correction, keepdim), x.device)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _var_grad(g, x, ctx.axes, ctx.correction, ctx.keepdim), None, None, None


register_op(Var)


def _var_args(op: str, input: Tensor, dim, unbiased, keepdim, correction):  # noqa: A002
    require_tensor(op, input)
    if isinstance(dim, bool):  # var(x, unbiased) (PyTorch's older overload)
        dim, unbiased = None, dim
    if correction is not None and unbiased is not None:
        raise RuntimeError(f"{op}(): cannot pass both 'unbiased' and 'correction'; use "
                           f"correction=1 (unbiased) or correction=0 (biased)")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    if not isinstance(correction, (int, float)) or isinstance(correction, bool):
        raise TypeError(f"{op}(): correction must be a number, got {type(correction).__name__}")
    axes = _reduce_dims(op, dim, input.ndim)
    if _reduced_numel(input.shape, axes) - correction <= 0:  # (PyTorch's warning)
        import warnings

        from tgrad.ops._common import user_stacklevel
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less "
                      f"than the reduction factor (input numel divided by output numel).",
                      UserWarning, stacklevel=user_stacklevel())
    return axes, correction, keepdim


@tensor_method("var")
def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None, axis=None, keepdims=None) -> Tensor:
    """Variance over ``dim`` with Bessel's ``correction`` (1 = unbiased, as PyTorch)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("var", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("var", keepdim, keepdims)
    return Var.apply(input, *_var_args("var", input, dim, unbiased, keepdim, correction))


class Std(Function):
    """y = sqrt(var_{axes}(x, correction)), rooted before rounding to x's dtype;
    dx = broadcast(g / y) * (x - mean(x)) / (N - c)."""

    name = "std"
    node_name = "StdBackward0"

    @staticmethod
    def forward(ctx, x, axes, correction, keepdim):
        _check_var_dtype("std", x)
        be = backend_of(x)
        y = wrap(be.var(x._data, axes, correction, keepdim, sqrt=True), x.device)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.correction, ctx.keepdim = axes, correction, keepdim
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        # d std = d var / (2 std) = (g / std) (x - mean) / (N - c), and 0 where std is 0 (a
        # constant slice: PyTorch's choice of subgradient, instead of 0/0). g / std first:
        # PyTorch's 2 std overflows for a float32 std past 1.7e38 (its gradient is then 0)
        # (the divisor is 1 where std is 0, so g's derivative there is 0, as through
        # PyTorch's masked_fill_, not 0 * (1 / 0) = NaN: create_graph and forward AD)
        zero = y == 0.0
        gv = where(zero, 0.0, g / where(zero, 1.0, y))
        return _var_grad(gv, x, ctx.axes, ctx.correction, ctx.keepdim, 1.0), None, None, None


register_op(Std)


@tensor_method("std")
def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
        correction: float | None = None, axis=None, keepdims=None) -> Tensor:
    """Standard deviation over ``dim``: sqrt of ``var`` with the same arguments."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("std", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("std", keepdim, keepdims)
    return Std.apply(input, *_var_args("std", input, dim, unbiased, keepdim, correction))


def var_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
             correction: float | None = None, axis=None, keepdims=None) -> tuple:
    """(var, mean) over ``dim`` (``var_mean(x, unbiased)``, a bool second, as in var)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("var_mean", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("var_mean", keepdim, keepdims)
    axes, correction, keepdim = _var_args("var_mean", input, dim, unbiased, keepdim,
                                          correction)
    return Var.apply(input, axes, correction, keepdim), mean(input, axes, keepdim)


def std_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,  # noqa: A002
             correction: float | None = None, axis=None, keepdims=None) -> tuple:
    """(std, mean) over ``dim`` (``std_mean(x, unbiased)``, a bool second, as in std)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("std_mean", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("std_mean", keepdim, keepdims)
    axes, correction, keepdim = _var_args("std_mean", input, dim, unbiased, keepdim,
                                          correction)
    return Std.apply(input, axes, correction, keepdim), mean(input, axes, keepdim)


# ------------------------------------------------------------------------------ logsumexp
class Logsumexp(Function):
    """y = log sum_{axes} exp(x) (shifted by the max);  dx = broadcast(g) * exp(x - y)."""

    name = "logsumexp"
    node_name = "LogsumexpBackward0"

    @staticmethod
    def forward(ctx, x, axes, keepdim):
        be = backend_of(x)
        data = x._data
        if not x.dtype.is_floating_point:
            data = be.cast(data, dtypes.get_default_dtype().np)
        y = wrap(be.logsumexp(data, axes, keepdim), x.device)
        ctx.save_for_backward(x, y)
        ctx.axes, ctx.keepdim = axes, keepdim
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        yb = _expand_back(y, x.shape, ctx.axes, ctx.keepdim)
        return _LOGSUMEXP_GRAD(_expand_back(g, x.shape, ctx.axes, ctx.keepdim), x, yb), None, None


register_op(Logsumexp)


@tensor_method("logsumexp")
def logsumexp(input: Tensor, dim=_REQUIRED, keepdim: bool = False, *,  # noqa: A002
              axis=None, keepdims=None) -> Tensor:
    """log(sum(exp(x))) over ``dim`` (required; None: every dim), computed stably (the max
    is subtracted first)."""
    if dim is _REQUIRED:
        dim = _dim_or_axis("logsumexp", None, axis, required=True)
    elif axis is not None:
        dim = _dim_or_axis("logsumexp", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("logsumexp", keepdim, keepdims)
    require_tensor("logsumexp", input)
    axes = _reduce_dims("logsumexp", dim, input.ndim)
    if input.dtype.is_complex:
        return _complex_logsumexp(input, axes, keepdim)
    return Logsumexp.apply(input, axes, keepdim)


def _complex_logsumexp(x: Tensor, axes, keepdim: bool) -> Tensor:
    """PyTorch's complex logsumexp: log(sum(exp(x - m))) + m with m the (detached) max of
    the real parts (0 where not finite), so the result is the principal log (imaginary part
    in (-pi, pi]). Composed of differentiable ops: dx = g conj(exp(x - y))."""
    from tgrad.ops import elementwise as ew
    from tgrad.ops.complex_ops import real
    dims = tuple(range(x.ndim)) if axes is None else axes
    if x.numel():
        m = amax(real(x).detach(), dims, True)
        m = ew.where(ew.isfinite(m), m, 0.0)
    else:
        m = 0.0
    y = ew.log(sum(ew.exp(x - m), dims, True)) + m
    return y if keepdim else y.squeeze(dims) if dims else y


# ------------------------------------------------------------------------------ norm
def _norm_grad(g, x, y, p):
    """Rules of the vector p-norm, g and y already broadcast to x's shape.

    p=2:      g (x / y)            (0 where y == 0, as PyTorch; the ratio first, as PyTorch's
              norm_backward: g x overflows or goes subnormal in float16 where x / y <= 1)
    p=1:      g sign(x)
    p=+-inf:  g sign(x) [|x| == y or x is NaN] / count   (ties share evenly; a NaN row's
              gradient goes to its NaN elements, PyTorch's mask)
    p=0:      0
    other p:  g sign(x) |x|^(p-1) / y^(p-1)   (p > 1 as sign(x)|x|^(p-1) (g / y^(p-1)),
              PyTorch's order; 0 where x == 0: for p < 1 PyTorch's
              choice of subgradient; for p > 1 the limit, which x |x|^(p-2) would make 0/0;
              and 0 where y == 0, as PyTorch)
    """
    from tgrad.ops.elementwise import sign, where
    if p == 0:
        return g * 0.0
    if p == 1:
        return g * sign(x)
    if p == 2:  # x / y masked (not x / safe_y): the rule's own derivative is then NaN
        return g * where(y == 0.0, 0.0, x / y)  # at y == 0 (0 * (1 / 0)) as PyTorch's, not
    safe_y = where(y == 0.0, 1.0, y)            # the identity that x / 1 would give
    if p in (math.inf, -math.inf):
        return g * sign(x) * _inf_norm_mask(x, y)
    t = sign(x) * x.abs() ** (p - 1.0)
    if p < 1:  # y^(1-p) is 0 where y is (a zero element makes a p < 0 norm 0)
        return g * where(x == 0.0, 0.0, t) * y ** (1.0 - p)
    return t * (g / safe_y ** (p - 1.0))


def _inf_norm_mask(x, y):
    """Where |x| is the +-inf norm y, or is NaN (PyTorch's mask: a NaN makes y NaN)."""
    from tgrad.ops.elementwise import isnan
    a = x.abs()
    return (a == y) | isnan(a)


_NORM_SAVED = {"_saved_self": 0, "_saved_result": 1, "_saved_keepdim": "keepdim",
               "_saved_dim": "axes"}  # (_saved_dim: the wrapped dims; None for every dim)


class Norm(Function):
    """y = ||x||_p over ``axes`` (vector norm of the selected elements); rules above.
    PyTorch's LinalgVectorNormBackward0 (torch.norm, Tensor.norm, linalg.vector_norm /
    norm / matrix_norm('fro'), F.normalize); NormP is pairwise_distance's NormBackward1."""

    name = "norm"
    node_name = "LinalgVectorNormBackward0"
    saved_attributes = {**_NORM_SAVED, "_saved_ord": "p"}

    @staticmethod
    def forward(ctx, x, p, axes, keepdim):
        # a complex x: the (real) norm of |x| (PyTorch's, one node on x itself)
        a = _complex_abs(x) if x.dtype.is_complex else x
        if not a.dtype.is_floating_point:
            raise RuntimeError(f"norm(): input dtype should be floating point, but got "
                               f"{x.dtype}; convert with .float()")
        y = wrap(backend_of(a).norm(a._data, p, axes, keepdim), x.device)
        ctx.save_for_backward(x, y)
        ctx.p, ctx.axes, ctx.keepdim = p, axes, keepdim
        return y

    @staticmethod
    def backward(ctx, g):
        if ctx.p == 0:  # the count of non-zeros: no gradient (undefined, PyTorch's)
            return None, None, None, None
        x, y = ctx.saved_tensors
        axes, keep = ctx.axes, ctx.keepdim
        if ctx.p in (1, 2) and _norm_grad_on_numpy(g, x, y):  # the same steps on the arrays
            kept = _kept_shape(x.shape, axes)
            return wrap(_np_norms.norm_grad(g._data, x._data, y._data, ctx.p, kept),
                        x.device), None, None, None
        a = _complex_abs(x) if x.dtype.is_complex else x
        gx = _expand_back(g, x.shape, axes, keep)
        yb = _expand_back(y, x.shape, axes, keep)
        if ctx.p in (math.inf, -math.inf):
            count = _inf_norm_mask(a, yb).sum(dim=axes, keepdim=True)
            gx = gx / _expand_back(count, x.shape, axes, True)
        ga = _norm_grad(gx, a, yb, ctx.p)
        if x.dtype.is_complex:  # through |x|: d|x| = g sgn(x) (abs's rule, PyTorch's)
            from tgrad.ops.aliases import sgn
            ga = ga * sgn(x)
        return ga, None, None, None


def _norm_grad_on_numpy(g: Tensor, x: Tensor, y: Tensor) -> bool:
    """Whether Norm's plain backward runs _numpy_norms.norm_grad: no graph to record
    (create_graph and forward AD keep the tgrad ops), CPU float32/float64 tensors of one
    dtype, x C-contiguous (the composition's result layout), non-empty and at least 1-d."""
    xa = x._data
    return (not differentiable_formula() and x._device.type == "cpu"
            and _np_norms.fast_dtype(xa.dtype) and g.dtype is x.dtype and y.dtype is x.dtype
            and xa.ndim > 0 and xa.size > 0 and xa.flags.c_contiguous)


def _complex_abs(x: Tensor) -> Tensor:
    """|x| of a complex x (real, x's real dtype)."""
    from tgrad.ops.elementwise import abs as _abs
    return _abs(x)


register_op(Norm)
# at::norm's node (pairwise_distance's): the same op, its saved p named _saved_p
NormP = node_variant(Norm, "NormBackward1", saved_attributes={**_NORM_SAVED, "_saved_p": "p"})


def check_norm_identity(shape: tuple, p: float, dim, axes) -> None:
    """PyTorch's check: the -inf/inf norms (min / max of |x|) and p < 0 have no value over
    an empty reduced dim (no identity); ``dim`` as the caller gave it (for the text),
    ``axes`` normalized (None: every dim)."""
    if not (p < 0 or p == math.inf):
        return
    if axes is None:
        if math.prod(shape) == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty "
                               f"tensor because the operation does not have an identity")
        return
    for d in dim if isinstance(dim, (tuple, list)) else (dim,):  # (valid: axes came out)
        if shape and shape[int(d) % len(shape)] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the "
                               f"dimension {d} because this dimension is empty and the "
                               f"operation does not have an identity")


def scalar_order(op: str, order):
    """A 0-d tensor order (not requiring grad) read as a number, as PyTorch's (True is 1);
    anything else is returned unchanged for the caller's own checks."""
    if isinstance(order, Tensor) and order.ndim == 0 and not order.requires_grad:
        if order.dtype.is_complex:
            raise RuntimeError(f"{op}: Expected a non-complex scalar as the order of norm.")
        return order.item() if order.dtype.is_floating_point else int(order.item())
    return order


@tensor_method("norm")
def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:  # noqa: A002
    """Vector p-norm over ``dim`` (all elements when None): p = 'fro' (= 2, the default),
    any float, inf or -inf. As torch.norm, another string p ('nuc'), or 'fro' over more
    than two dims, is linalg.matrix_norm(input, p, dim, keepdim) with dim None meaning
    every dim (so the input must then be 2-D). p=None is the default 2-norm (PyTorch's).
    A complex input gives the real norm of |input| (linalg.vector_norm's, as PyTorch's:
    gradient g d||.||/d|x| sgn(x))."""
    require_tensor("norm", input)
    if p is None:
        p = "fro"
    p = scalar_order("norm", p)
    if isinstance(p, bool):  # (PyTorch reads True as 1 and False as 0)
        p = int(p)
    if isinstance(p, str):
        if p != "fro" or (isinstance(dim, (tuple, list)) and len(dim) > 2):
            from tgrad.linalg._norms import matrix_norm  # (linalg imports tgrad.ops)
            return matrix_norm(input, p, tuple(range(input.ndim)) if dim is None else dim,
                               keepdim, dtype=dtype)
        p = 2
    if not isinstance(p, (int, float)) or isinstance(p, bool):
        raise TypeError(f"norm(): p must be a number or 'fro', got {type(p).__name__}")
    if input.dtype.is_complex:
        from tgrad.linalg._norms import vector_norm
        axes = _reduce_dims("norm", dim, input.ndim)
        check_norm_identity(input.shape, float(p), dim, axes)
        return vector_norm(input, float(p), axes, keepdim, dtype=dtype)
    if dtype is not None:  # (linalg.vector_norm's checks: floating input, no narrowing)
        from tgrad.linalg._norms import _float_check
        input = _float_check("linalg.vector_norm", input, dtype)  # noqa: A001
    axes = _reduce_dims("norm", dim, input.ndim)
    check_norm_identity(input.shape, float(p), dim, axes)
    return Norm.apply(input, float(p), axes, keepdim)


# ------------------------------------------------------------------------------ all / any
def _make_logical_reduce(name: str):
    def forward(ctx, x, axes, keepdim):
        return wrap(getattr(backend_of(x), name + "_")(x._data, axes, keepdim), x.device)

    cls = type(name.capitalize(), (Function,), {
        "name": name, "node_name": f"{name.capitalize()}Backward0",
        "forward": staticmethod(forward)})
    return register_op(cls)


All = _make_logical_reduce("all")
Any = _make_logical_reduce("any")


@tensor_method("all")
def all(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001,A002
    """True where every element over ``dim`` is non-zero (a bool tensor, not differentiable;
    uint8 for a uint8 input, as PyTorch)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("all", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("all", keepdim, keepdims)
    require_tensor("all", input)
    out = All.apply(input, normalize_dims("all", dim, input.ndim), keepdim)
    return out.to(dtypes.uint8) if input.dtype is dtypes.uint8 else out  # PyTorch: uint8


@tensor_method("any")
def any(input: Tensor, dim=None, keepdim: bool = False, *, axis=None, keepdims=None) -> Tensor:  # noqa: A001,A002
    """True where some element over ``dim`` is non-zero (a bool tensor, not differentiable;
    uint8 for a uint8 input, as PyTorch)."""
    if axis is not None:  # NumPy's name, accepted as PyTorch does
        dim = _dim_or_axis("any", dim, axis)
    if keepdims is not None:  # (NumPy's name too, as for axis)
        keepdim = _keepdim_or_keepdims("any", keepdim, keepdims)
    require_tensor("any", input)
    out = Any.apply(input, normalize_dims("any", dim, input.ndim), keepdim)
    return out.to(dtypes.uint8) if input.dtype is dtypes.uint8 else out  # PyTorch: uint8


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
        if not axes:  # (only size-1 dims dropped or none: a copy of x)
            return wrap(be.reshape_copy(x._data, shape) if x.shape != shape else
                        be.clone(x._data), x.device)
        out = be.sum_(x._data, axes, True)  # a fresh array: reshaped in place, no copy
        if out.shape != shape:
            view = be.reshape_view(out, shape)
            out = view if view is not None else be.reshape_copy(out, shape)
        return wrap(out, x.device)

    @staticmethod
    def backward(ctx, g):
        return g.expand(ctx.shape), None


register_op(SumTo)


def sum_to(x: Tensor, shape) -> Tensor:
    """Sum ``x`` over broadcast dims so that it has ``shape`` (None: a Python scalar input)."""
    if shape is None or x.shape == tuple(shape):
        return x
    return SumTo.apply(x, tuple(shape))

