"""``scatter_reduce`` and ``index_reduce``: a copy of input with src's values folded into
the positions an index names along a dim, by sum, prod, mean, amax or amin; with
``include_self`` the input's own value takes part, without it a position that receives
values forgets it (positions that receive none keep it either way).

Shape contract (as ``scatter_add``): index has input's number of dims, index.size(d) <=
input.size(d) for d != dim and <= src.size(d) for every d; the value src[j] goes to
position j with index[j] along dim. ``index_reduce(dim, index, source)`` is the same with
the 1-D index broadcast over source's shape.

Forward: sums and counts through IndexAdd (the deterministic segmented scatter-add),
products, maxima and minima through the ``index_reduce`` primitive (the same kernels, in
index order; amax/amin propagate NaN), then one elementwise step with the input.

Backward, for a target t with contributors c (src values sent to t, and input[t] when it
takes part), g = the output gradient:

    sum:        d c = g[t]
    mean:       d c = g[t] / N_t    (N_t = number of contributors)
    amax/amin:  d c = g[t] / K_t if c equals the result, else 0  (K_t = contributors equal
                to it: ties share evenly, as PyTorch's amax does); a NaN result gives every
                contributor a NaN gradient (as tgrad's amax and PyTorch's scatter_reduce)
    prod:       d c = g[t] * prod(other contributors): with Z_t zero contributors and P_t
                the product of the non-zero ones, P_t / c (Z_t = 0), P_t for the zero c
                (Z_t = 1), else 0 * (the others' non-zero values): 0, or NaN when one of
                them is NaN or inf (as tgrad's prod)
and d input[t] = g[t] where input[t] does not take part but is kept (nothing scattered).
These are tgrad ops (prod's P_t is a scatter_reduce itself), so double backward works.
Bool tensors (as PyTorch): sum and amax are a logical or, prod and amin a logical and
(computed on 0/1 integers); mean, and index_reduce, are not implemented for them. Complex
tensors (as PyTorch's CPU kernels): sum, prod and mean, forward only (PyTorch has no complex
derivative: its error where an input requires grad); amax/amin raise.
Deliberate difference: with include_self=False, PyTorch's amax/amin backward still counts an
excluded input equal to the result among the ties (so a unique maximum gets a fraction of
the gradient, a known PyTorch bug); tgrad counts only the values that took part.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.backends import _numpy_scatter
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    rounded_to,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import ones, ones_like
from tgrad.ops.gathering import _part, _scatter_key, checked_on_device
from tgrad.ops.index import IndexAdd
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["scatter_reduce", "index_reduce"]

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


class ScatterReduce(Function):
    """y = x with src folded in at ``key`` (a normalized advanced-indexing key naming, for
    every element of src, its target in x); see the module docstring for the maths."""

    name = "scatter_reduce"
    node_name = "ScatterReduceBackward0"

    @staticmethod
    def forward(ctx, x, src, key, reduce, include_self):
        shape = x.shape
        ctx.key, ctx.reduce, ctx.include_self = key, reduce, include_self
        ctx.arrays = False  # sum / mean computed on the arrays (scatter_sum_fwd)
        if include_self and reduce != "mean" and reduce != "sum" and not x.dtype.is_complex:
            # combine(x, identity) is x exactly (x * 1, max(x, -inf), min(x, inf)) where
            # nothing is scattered: no count and no where (the backward counts if it must)
            y = _reduce_into(x, src, key, reduce)
            ctx.count = None
            ctx.save_for_backward(x, src, y if reduce in ("amax", "amin") else None)
            return y
        if reduce in ("sum", "mean") and _fast_sum(x, src):  # the same steps on the arrays
            y, count = _numpy_scatter.scatter_sum_fwd(x._data, src._data, key,
                                                      reduce == "mean", include_self)
            ctx.arrays = True
            ctx.count = None if count is None else wrap(count, x.device)
            ctx.save_for_backward(x, src, None)
            return wrap(y, x.device)
        count = _count(src, key, shape)  # values sent to each target (real)
        hit = count > 0
        if reduce in ("sum", "mean"):
            total = IndexAdd.apply(src, key, shape)
            if include_self:
                total = x + total
            if reduce == "mean":
                n = count + 1 if include_self else count
                n = ew.where(n == 0, 1, n)
                total = total / n if x.dtype.is_floating_point or x.dtype.is_complex \
                    else ew.floor_divide(total, n)
        else:
            total = _reduce_into(x, src, key, reduce) if include_self else wrap(
                backend_of(x).index_reduce(shape, x.dtype.np, key, src._data, reduce), x.device)
        y = ew.where(hit, total, x)
        ctx.count = count
        ctx.save_for_backward(x, src, y if reduce in ("amax", "amin") else None)
        return y

    @staticmethod
    def backward(ctx, g):
        x, src, y = ctx.saved_tensors
        key, reduce, incl, count = ctx.key, ctx.reduce, ctx.include_self, ctx.count
        shape = x.shape
        if ctx.arrays and not differentiable_formula() \
                and g.device.type == "cpu" and g.dtype is x.dtype:  # the same on the arrays
            counts = None if count is None else count._data
            gx, gsrc = _numpy_scatter.scatter_sum_bwd(g._data, key, counts,
                                                      reduce == "mean", incl, src.shape)
            gx = g if gx is g._data else wrap(gx, g.device)
            return gx, wrap(gsrc, g.device), None, None, None
        if reduce == "sum":
            gx, gsrc = g, g[key]
        elif reduce == "mean":
            n = (count + 1 if incl else count).to(g.dtype)
            gx = g / ew.where(n == 0, 1, n)
            gsrc = gx[key]
        elif reduce in ("amax", "amin") and not differentiable_formula() \
                and _fast_prod(g, x, src):  # the same steps on the arrays
            gx, gsrc = _extreme_grads_np(g._data, x._data, src._data, y._data, key, incl,
                                         None if incl else count._data)
            return wrap(gx, g.device), wrap(gsrc, g.device), None, None, None
        elif reduce in ("amax", "amin"):
            nan_y = y.isnan()  # a NaN result: every contributor counts, its share is NaN
            x_is = (x == y) | nan_y
            if not incl:
                x_is = x_is & ew.logical_not(count > 0)
            src_is = (src == y[key]) | nan_y[key]
            k = x_is.to(g.dtype) + IndexAdd.apply(src_is.to(g.dtype), key, shape)
            share = ew.where(nan_y, float("nan"), g / ew.where(k == 0, 1, k))
            gx, gsrc = x_is * share, src_is * share[key]
        else:
            gx, gsrc = _prod_grads(g, x, src, key, incl)
        if not incl:  # an input value that a scattered value replaced gets nothing
            gx = ew.where(count > 0, 0, gx)
        return gx, gsrc, None, None, None


def _fast_sum(x: Tensor, src: Tensor) -> bool:
    """Whether sum / mean run on the arrays (_numpy_scatter.scatter_sum_fwd): float32 /
    float64 on the CPU."""
    return x.device.type == "cpu" and src.device.type == "cpu" and \
        x.dtype in (dtypes.float32, dtypes.float64) and src.dtype is x.dtype


def _count(src: Tensor, key, shape: tuple) -> Tensor:
    """How many values of src ``key`` sends to each position of ``shape`` (real)."""
    ones_src = ones_like(src, dtype=dtypes.to_real(src.dtype)) if src.dtype.is_complex \
        else ones_like(src)
    return IndexAdd.apply(ones_src, key, shape)


def _reduce_into(x: Tensor, src: Tensor, key, reduce: str) -> Tensor:
    """combine(x, the fold of src at key) for prod / amax / amin (the identity where
    nothing is scattered)."""
    total = wrap(backend_of(x).index_reduce(x.shape, x.dtype.np, key, src._data, reduce),
                 x.device)
    return {"prod": ew.mul, "amax": ew.maximum, "amin": ew.minimum}[reduce](x, total)


def _prod_grads(g: Tensor, x: Tensor, src: Tensor, key, incl: bool) -> tuple:
    """(d x, d src) of the scattered product: each contributor's product of the others."""
    if not differentiable_formula() and _fast_prod(g, x, src):  # the same steps on arrays
        gx, gsrc = _prod_grads_np(g._data, x._data, src._data, key, incl)
        return wrap(gx, g.device), wrap(gsrc, g.device)
    shape = x.shape
    src_zero = src == 0
    src_safe = ew.where(src_zero, 1, src)
    zeros_at = IndexAdd.apply(src_zero.to(g.dtype), key, shape)
    # the non-zero srcs' product per target (1 where none), differentiable in src
    product = ScatterReduce.apply(ones(shape, dtype=g.dtype, device=g.device), src_safe, key,
                                  "prod", False)
    # NaN / inf contributors per target: a product of the others with a zero in it is
    # 0 * (the rest), NaN when the rest holds a NaN or inf (as prod's own backward)
    src_bad = ew.logical_not(src.isfinite())
    bad_at = IndexAdd.apply(src_bad.to(g.dtype), key, shape)
    x_zero = x_safe = x_bad = None
    if incl:
        x_zero = x == 0
        x_safe = ew.where(x_zero, 1, x)
        zeros_at = zeros_at + x_zero.to(g.dtype)
        product = product * x_safe
        x_bad = ew.logical_not(x.isfinite())
        bad_at = bad_at + x_bad.to(g.dtype)

    zsum = None
    if differentiable_formula():
        # under create_graph: the zero contributors' values summed per target (0, but its
        # derivative reaches each of them), so that a product of the others holding exactly
        # one zero, 0 in value, keeps its derivative in that zero: the product of the rest
        # (a constant 0 there gave second derivatives of 0)
        zsum = IndexAdd.apply(ew.where(src_zero, src, 0), key, shape)
        if incl:
            zsum = zsum + ew.where(x_zero, x, 0)

    def others(value, zero, safe, z, p, bad_others, zs):  # product of the other contributors
        dead = ew.where(bad_others > 0, float("nan"), 0)  # a zero among the others
        if zs is None:
            return ew.where(zero, ew.where(z == 1, p, dead), ew.where(z == 0, p / safe, dead))
        # one zero among the others: p / value times it (value non-zero), or p times the
        # other zero (value itself zero, two zeros in all)
        return ew.where(zero, ew.where(z == 1, p, ew.where(z == 2, p * (zs - value), dead)),
                        ew.where(z == 0, p / safe, ew.where(z == 1, p / safe * zs, dead)))

    gsrc = g[key] * others(src, src_zero, src_safe, zeros_at[key], product[key],
                           bad_at[key] - src_bad.to(g.dtype), None if zsum is None else zsum[key])
    gx = g * others(x, x_zero, x_safe, zeros_at, product, bad_at - x_bad.to(g.dtype), zsum) \
        if incl else g
    return gx, gsrc


def _fast_prod(g: Tensor, x: Tensor, src: Tensor) -> bool:
    """Whether _prod_grads (no create_graph) runs as _prod_grads_np: CPU float32/float64,
    one dtype."""
    return (g.device.type == "cpu" and g.dtype.np in (np.float32, np.float64)
            and x.dtype is g.dtype and src.dtype is g.dtype)


def _prod_grads_np(g: np.ndarray, x: np.ndarray, src: np.ndarray, key,
                   incl: bool) -> tuple:
    """_prod_grads without create_graph on CPU float32/float64 arrays: its tgrad ops as
    the NumPy calls they run, in the same order (no nodes; bit-identical). g, x (shape),
    src (the scattered values), key their targets in x. Without a zero contributor every
    product of the others is P_t / c (the selects that _prod_grads needs for zeros are
    skipped: the same values)."""
    from tgrad.backends import numpy as be
    shape, dt = x.shape, g.dtype
    one = dt.type(1)
    flat = be._flat_index(shape, key) if src.size else None  # (a[key] as a take: faster)

    def at_key(a: np.ndarray) -> np.ndarray:  # a[key]
        return a[key] if flat is None else np.take(a.reshape(-1), flat)

    with np.errstate(all="ignore"):
        src_zero = src == 0
        x_zero = x == 0 if incl else None
        if not src_zero.any() and not (incl and x_zero.any()):
            # no zero: z == 0 everywhere, others = P / c (src_safe = src, x_safe = x);
            # the product is 1 where nothing is scattered (index_reduce's identity), which
            # is what _prod_grads' where(hit, ., 1) gives
            product = be.index_reduce(shape, dt, key, src, "prod")
            if incl:
                product = product * x
            gsrc = at_key(g) * (at_key(product) / src)
            gx = g * (product / x) if incl else g
            return gx, gsrc
        src_safe = np.where(src_zero, one, src)
        zeros_at = be.index_add(shape, dt, key, src_zero.astype(dt))
        hit = be.index_add(shape, dt, key, np.ones_like(src)) > 0
        product = np.where(hit, be.index_reduce(shape, dt, key, src_safe, "prod"), one)
        src_bad = (~np.isfinite(src)).astype(dt)
        bad_at = be.index_add(shape, dt, key, src_bad)
        if incl:
            x_safe = np.where(x_zero, one, x)
            zeros_at = zeros_at + x_zero.astype(dt)
            product = product * x_safe
            x_bad = (~np.isfinite(x)).astype(dt)
            bad_at = bad_at + x_bad

        def others(zero, safe, z, p, bad_others):  # _prod_grads' others, zs None
            dead = np.where(bad_others > 0, dt.type(np.nan), dt.type(0))
            return np.where(zero, np.where(z == 1, p, dead),
                            np.where(z == 0, p / safe, dead))

        gsrc = at_key(g) * others(src_zero, src_safe, at_key(zeros_at), at_key(product),
                                  at_key(bad_at) - src_bad)
        gx = g * others(x_zero, x_safe, zeros_at, product, bad_at - x_bad) if incl else g
    return gx, gsrc


def _extreme_grads_np(g: np.ndarray, x: np.ndarray, src: np.ndarray, y: np.ndarray, key,
                      incl: bool, count) -> tuple:
    """ScatterReduce.backward's amax / amin rule without create_graph on CPU float32 /
    float64 arrays: its tgrad ops as the NumPy calls they run, in the same order (no
    nodes; bit-identical), including the include_self=False masking (count: the forward's
    counts, None with include_self)."""
    from tgrad.backends import numpy as be
    shape, dt = x.shape, g.dtype
    flat = be._flat_index(shape, key) if src.size else None  # (a[key] as a take: faster)

    def at_key(a: np.ndarray) -> np.ndarray:  # a[key]
        return a[key] if flat is None else np.take(a.reshape(-1), flat)

    with np.errstate(all="ignore"):
        nan_y = np.isnan(y)
        x_is = (x == y) | nan_y
        if not incl:
            x_is &= ~(count > 0)
        src_is = (src == at_key(y)) | at_key(nan_y)
        k = x_is.astype(dt) + (be.index_add(shape, dt, key, src_is.astype(dt)) if src.size
                               else np.zeros(shape, dt))
        share = np.where(nan_y, dt.type(np.nan), g / np.where(k == 0, dt.type(1), k))
        gx = x_is * share
        gsrc = src_is * at_key(share)
        if not incl:
            gx = np.where(count > 0, dt.type(0), gx)
    return gx.astype(dt, copy=False), gsrc.astype(dt, copy=False)


register_op(ScatterReduce)


_REDUCE_ALIASES = {"max": "amax", "min": "amin"}  # (PyTorch's scatter_reduce takes them)


@tensor_method("scatter_reduce")
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,  # noqa: A002
                   include_self: bool = True) -> Tensor:
    """A copy of input with src[j] folded in at position index[j] along ``dim`` by
    ``reduce`` (sum, prod, mean, amax, amin; PyTorch also takes max and min for the last
    two); ``include_self``: input's value takes part."""
    reduce = _REDUCE_ALIASES.get(reduce, reduce)
    if reduce not in REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' (position 4) must be Tensor, not "
                        f"{type(src).__name__}")
    if input.dtype is dtypes.bool_:  # sum, amax: logical or; prod, amin: logical and
        if reduce == "mean":
            raise NotImplementedError("scatter_reduce(): reduce='mean' is not implemented for "
                                      "bool tensors (as in PyTorch); convert with .float() "
                                      "first")
        if src.dtype is not dtypes.bool_:
            raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to "
                               f"src.dtype (got {input.dtype.name} and {src.dtype.name})")
        as_int = scatter_reduce(input.to(dtypes.int64), dim, index, src.to(dtypes.int64),
                                reduce, include_self=include_self)
        return as_int != 0
    if input.dtype.is_complex:  # PyTorch's CPU kernels: sum, prod, mean; no derivative
        if reduce in ("amax", "amin"):
            raise NotImplementedError(f"scatter_reduce(): \"scatter_gather_tensor_cpu_reduce_"
                                      f"{reduce}\" not implemented for "
                                      f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (complex "
                                      f"numbers have no order; reduce .real or .abs())")
        from tgrad.autograd.forward_ad import get_tangent
        # no complex derivative, in reverse or forward mode (a dual input: PyTorch's
        # forward mode gives prod no tangent at all; refused here, never a silent zero)
        if (is_grad_enabled() and (input.requires_grad or src.requires_grad)) or \
                get_tangent(input) is not None or get_tangent(src) is not None:
            raise RuntimeError("scatter_reduce does not support automatic differentiation "
                               "for outputs with complex dtype.")
    if input.ndim == 0:  # a 0-d input is a 1-element vector here, as in PyTorch
        return fresh(scatter_reduce(input.reshape(1), dim, index.reshape(-1),
                                    src.reshape(-1), reduce,
                                    include_self=include_self).reshape(()))
    nkey, part_key = _scatter_key("scatter_reduce", input, dim, index, src)
    (x, part), half = widen_halves(input, _part(src, part_key))
    return rounded_to(ScatterReduce.apply(x, part, nkey, reduce, bool(include_self)), half)


@tensor_method("index_reduce")
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,  # noqa: A002
                 include_self: bool = True) -> Tensor:
    """A copy of input with source's slices folded in at ``index`` (a vector) along ``dim``
    by ``reduce`` (prod, mean, amax, amin); ``include_self``: input's value takes part.
    Bool input: prod / amax / amin with include_self only (PyTorch's). amax / amin's
    gradient is shared evenly among the tied values that take part (with include_self=False
    input's value is not one of them; PyTorch 2.13 still counts it when equal)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if input.dtype is dtypes.bool_ and (reduce == "mean" or not include_self):
        raise NotImplementedError(f"index_reduce(): reduce='{reduce}' with include_self="
                                  f"{include_self} is not implemented for bool tensors (as in "
                                  f"PyTorch); convert with .int() first")
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (dtypes.int64, dtypes.int32):  # before index.min() reads it
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{index.dtype.name}")
    if not isinstance(source, Tensor):
        raise TypeError(f"index_reduce(): argument 'source' (position 3) must be Tensor, not "
                        f"{type(source).__name__}")
    if input.ndim == 0 and source.ndim:  # (PyTorch's check, as index_add's)
        raise RuntimeError(f"index_reduce(): source tensor shape must match self tensor "
                           f"shape, excluding the specified dimension. Got self.shape = [] "
                           f"source.shape = {list(source.shape)}")
    d = _wrap_dim(dim, max(input.ndim, 1), "index_reduce")
    n = source.shape[d] if source.ndim else 1
    if index.numel() != n:
        raise RuntimeError(f"index_reduce_(): Number of indices ({index.numel()}) should be "
                           f"equal to source.size(dim): ({n}), for dim: {d}")
    size = input.shape[d] if input.ndim else 1
    if index.numel() and not checked_on_device("index_reduce():", index, size, d, input.shape):
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= size:
            raise IndexError(f"index_reduce(): index {lo if lo < 0 else hi} is out of range "
                             f"for dimension {d} with size {size} (index out of range in "
                             f"self; negative indices are not allowed)")
    for k in range(source.ndim):
        if k != d and source.shape[k] != input.shape[k]:
            raise RuntimeError(f"index_reduce_(): Source/destination tensor must have same "
                               f"slice shapes. Destination slice shape: {list(input.shape)} "
                               f"at dimension {d} and source slice shape: "
                               f"{list(source.shape)} at dimension {d}.")
    if source.ndim == 0:
        return scatter_reduce(input, d, index.reshape(()), source, reduce,
                              include_self=include_self)
    along = [1] * source.ndim
    along[d] = n
    full_index = index.reshape(along).expand(tuple(source.shape))
    return scatter_reduce(input, d, full_index, source, reduce, include_self=include_self)
