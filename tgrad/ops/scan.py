"""Cumulative ops along one dim: ``cumsum`` (a primitive: one Triton scan kernel on the GPU,
np.cumsum on the CPU) and ``cumprod`` (a Hillis-Steele scan of products: log2(n) steps,
each one multiplication of shifted slices; its backward is another such scan, of products
and sums only, no division, so the gradient is exact when the input holds zeros and
differentiable again for exact higher derivatives; on the CPU without create_graph that
scan runs as NumPy calls on the flat arrays, tgrad.backends._numpy_scan: the same bits)."""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    require_tensor,
    rounded_to,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.inplace import inplace_method
from tgrad.ops.reduce import _dim_or_axis, check_grad_dtype
from tgrad.ops.shape import cat, narrow
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["cumsum", "cumprod"]


class Cumsum(Function):
    """y_k = sum_{j <= k} x_j along ``dim`` (``reverse``: sum_{j >= k});
    dx = the cumsum of g in the other direction (dx_j = sum_{k >= j} g_k)."""

    name = "cumsum"
    node_name = "CumsumBackward0"

    @staticmethod
    def forward(ctx, x, dim, reverse):
        ctx.dim, ctx.reverse = dim, reverse
        return wrap(backend_of(x).cumsum(x._data, dim, reverse), x.device)

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse), None, None


register_op(Cumsum)


def _check_scan_dtype(op: str, input: Tensor, dt) -> None:  # noqa: A002
    """PyTorch's errors for ``dtype=``: no bool scans, no integer result of an input that
    requires grad."""
    if dt is dtypes.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'; ask for an integer "
                                  f"or floating dtype")
    check_grad_dtype(op, input, dt)


@tensor_method("cumsum")
def cumsum(input: Tensor, dim: int | None = None, *, dtype=None,  # noqa: A002
           axis: int | None = None) -> Tensor:
    """Cumulative sum along ``dim`` (or NumPy's name ``axis``); integer and bool inputs give
    int64 (``dtype`` casts the input first, as PyTorch). Accumulation as PyTorch's: on the
    CPU float32 runs in float64, complex64 in complex128 and float16/bfloat16 in float32; on
    the GPU float32, float16 and bfloat16 in float32."""
    dim = _dim_or_axis("cumsum", dim, axis, required=True)
    require_tensor("cumsum", input)
    d = _wrap_dim(dim, input.ndim, "cumsum")
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if dt is not None:
        _check_scan_dtype("cumsum", input, dt)
        input = input.to(dt)  # noqa: A001
    if input.ndim == 0:
        out = fresh(Cumsum.apply(input.reshape(1), 0, False).reshape(()))
    else:
        out = Cumsum.apply(input, d, False)
    return out if dt is None or out.dtype is dt else out.to(dt)  # integers: not int64


def _scan_inplace(name: str, fn) -> None:
    """The in-place scan ``name`` of ``fn``: its ``dtype`` must be self's (PyTorch's check;
    computing in another dtype and casting back is refused)."""
    def scan_(x: Tensor, *args, dtype=None, **kwargs) -> Tensor:
        if dtype is not None and dtypes.as_dtype(dtype) is not x.dtype:
            raise RuntimeError(f"{name}: Bad in-place call: input tensor dtype {x.dtype.name} "
                               f"and output tensor dtype {dtypes.as_dtype(dtype).name} should "
                               f"match")
        return fn(x, *args, dtype=dtype, **kwargs)
    inplace_method(name, scan_)


_scan_inplace("cumsum_", cumsum)


# cumprod's accumulation dtypes on the CPU, PyTorch's: float32 in float64 (a float32 scan
# drifted by 1e-4 over 1e5 factors near 1), complex64 in complex128, halves in float32; the
# result rounded once. On the GPU each dtype multiplies in its own, as PyTorch's CUDA cumprod.
_CPU_ACCUMULATE = {dtypes.float32: dtypes.float64, dtypes.complex64: dtypes.complex128,
                   dtypes.float16: dtypes.float32, dtypes.bfloat16: dtypes.float32}


def _cumprod_scan(x: Tensor, d: int) -> Tensor:
    """Inclusive product scan along dim d, not differentiable (Cumprod.forward's). On the
    CPU np.cumprod in _CPU_ACCUMULATE's dtype: y_j = y_{j-1} x_j left to right (PyTorch's
    CPU loop); elsewhere a Hillis-Steele scan: after the step of span s, y_j covers
    (j - 2s, j]."""
    if x.device.type == "cpu":
        acc = _CPU_ACCUMULATE.get(x.dtype)
        y = np.cumprod(x._data, axis=d, dtype=None if acc is None else acc.np)
        return wrap(np.ascontiguousarray(y.astype(x.dtype.np, copy=False)), x.device)
    n, span, y = x.shape[d], 1, x
    while span < n:
        y = cat([narrow(y, d, 0, span),
                 narrow(y, d, span, n - span) * narrow(y, d, 0, n - span)], d)
        span *= 2
    return y


class Cumprod(Function):
    """y_k = prod_{j <= k} x_j along ``dim`` (n = x.shape[dim] >= 2);
    dx_j = conj(prod_{i < j} x_i) s_j with s_j = sum_{k >= j} g_k conj(prod_{j < i <= k} x_i),
    the linear recurrence s_j = g_j + conj(x_{j+1}) s_{j+1} run as a Hillis-Steele scan (after
    the step of span h, a_j is conj of the product over (j, j + 2h] and s_j holds the terms
    k < j + 2h), so only products and sums.
    Without create_graph, PyTorch's cumprod_backward: a term with a factor x_i == 0 is left
    out rather than multiplied (so an infinite g past a zero gives no NaN: x = [1, 0, 3],
    g = inf gives [inf, inf, 0]); under create_graph the plain differentiable products (as
    PyTorch's double-backward branch: 0 * inf = NaN there). Exact where PyTorch divides by
    x (no zeros: reversed_cumsum(y g) / x), e.g. where y overflows or x holds an inf; under
    create_graph PyTorch's own formulas (that division where x has no zero, else the prefix
    products from x alone), so the saved output y is used where PyTorch uses it and a hook
    on y changes the second-order gradient as in PyTorch."""

    name = "cumprod"
    node_name = "CumprodBackward0"

    @staticmethod
    def forward(ctx, x, d):
        y = _cumprod_scan(x, d)
        ctx.d = d
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        if x.device.type == "cpu" and not differentiable_formula():
            return _cumprod_backward_cpu(x, y, g, ctx.d), None
        return _cumprod_backward_ops(x, y, g, ctx.d, masked=not is_grad_enabled()), None


def _cumprod_backward_ops(x: Tensor, y: Tensor, g: Tensor, d: int, masked: bool) -> Tensor:
    """Cumprod's backward (see Cumprod) in tgrad ops: ``masked`` (no create_graph) drops the
    terms with a zero factor; else differentiable again. x, y, g: x's shape."""
    n = x.shape[d]
    dtype = x.dtype
    wide = _CPU_ACCUMULATE.get(dtype) if masked and x.device.type == "cpu" else None
    if wide is not None:  # the scan in float64 on the CPU too, rounded once (as forward)
        x, y, g = x.to(wide), y.to(wide), g.to(wide)
    xc, yc = x.conj(), y.conj()
    one = narrow(xc, d, 0, 1).new_ones(narrow(xc, d, 0, 1).shape)
    if masked:
        before = cat([one, narrow(yc, d, 0, n - 1)], d)  # conj(prod_{i < j} x_i)
    else:  # create_graph: the saved output y enters the graph as in PyTorch's
        # cumprod_backward (a hook on y sees the same second-order gradient): no zero in
        # x: reversed_cumsum(conj(y) g) / conj(x); with zeros: from x alone (PyTorch's
        # O(n^2) branch), the prefix products by cumprod of x, not taken from y
        if not bool((x == 0).any()):
            from tgrad.ops.composite import flip
            return flip(cumsum(flip(yc * g, (d,)), d), (d,)) / xc
        before = cat([one, cumprod(narrow(xc, d, 0, n - 1), d)], d)
    a = cat([narrow(xc, d, 1, n - 1), one], d)  # a_j = conj(x_{j+1}) (last: unused)
    if masked:
        z = a == 0  # z_j: a zero among x_i, i in (j, j + span]
    s, span = g, 1
    while span < n:
        m = n - span
        term = narrow(a, d, 0, m) * narrow(s, d, span, m)
        if masked:
            term = term.masked_fill(narrow(z, d, 0, m), 0)
        s = cat([narrow(s, d, 0, m) + term, narrow(s, d, m, span)], d)
        if 2 * span < n:
            a = cat([narrow(a, d, 0, m) * narrow(a, d, span, m), narrow(a, d, m, span)], d)
            if masked:
                z = cat([narrow(z, d, 0, m) | narrow(z, d, span, m), narrow(z, d, m, span)],
                        d)
        span *= 2
    gx = before * s
    if masked:  # a zero among x_i, i < j: dx_j = 0
        zero_before = cat([one == 0, narrow(x == 0, d, 0, n - 1)], d).cumsum(d) > 0
        gx = gx.masked_fill(zero_before, 0)
    return gx.to(dtype)


register_op(Cumprod)


def _cumprod_backward_cpu(x: Tensor, y: Tensor, g: Tensor, d: int) -> Tensor:
    """Cumprod's backward without create_graph on the CPU: the same scan, in the same
    operations (so the same bits), on the NumPy arrays (tgrad.backends._numpy_scan), in
    _CPU_ACCUMULATE's dtype and rounded once, as _cumprod_backward_ops. x, y, g: x's shape."""
    from tgrad.backends import _numpy_scan
    wide = _CPU_ACCUMULATE.get(x.dtype, x.dtype).np
    gx = _numpy_scan.cumprod_backward(*(t._data.astype(wide, copy=False) for t in (x, y, g)), d)
    return wrap(gx.astype(x.dtype.np, copy=False), x.device)


@tensor_method("cumprod")
@autocast_policy("fp32", cpu=None)
def cumprod(input: Tensor, dim: int | None = None, *, dtype=None,  # noqa: A002
            axis: int | None = None) -> Tensor:
    """Cumulative product along ``dim``: y_k = prod_{j <= k} x_j (shape kept); integer and
    bool inputs give int64 (``dtype`` casts the input first, as PyTorch).

    Computed as a scan of products; dx_j = sum_{k >= j} g_k prod_{i <= k, i != j} x_i
    exactly, zeros in x included, the terms with a zero factor left out as PyTorch's rule
    (see Cumprod)."""
    dim = _dim_or_axis("cumprod", dim, axis, required=True)
    require_tensor("cumprod", input)
    d = _wrap_dim(dim, input.ndim, "cumprod")  # (its int check refuses a bool)
    if dtype is not None:
        _check_scan_dtype("cumprod", input, dtypes.as_dtype(dtype))
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    elif not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(dtypes.int64)  # noqa: A001
    (y,), half = widen_halves(input.reshape(1) if input.ndim == 0 else input)
    y = y.clone() if y.shape[d] <= 1 else Cumprod.apply(y, d)
    y = rounded_to(y, half)
    return fresh(y.reshape(())) if input.ndim == 0 else y


_scan_inplace("cumprod_", cumprod)
