"""Cumulative ops along one dim: ``cumsum`` (a primitive: one Triton scan kernel on the GPU,
np.cumsum on the CPU) and ``cumprod`` (a Hillis-Steele scan of products: log2(n) steps,
each one multiplication of shifted slices; only products, no division, so autograd through
it gives the exact gradient when the input holds zeros (PyTorch's dedicated rule) and exact
higher derivatives)."""

from __future__ import annotations

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.ops._common import (
    backend_of,
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
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

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
    CPU float32 runs in float64 and float16/bfloat16 in float32; on the GPU both in float32."""
    dim = _dim_or_axis("cumsum", dim, axis, required=True)
    require_tensor("cumsum", input)
    d = _wrap_dim(dim, input.ndim, "cumsum")
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if dt is not None:
        _check_scan_dtype("cumsum", input, dt)
        input = input.to(dt)  # noqa: A001
    if input.ndim == 0:
        out = Cumsum.apply(input.reshape(1), 0, False).reshape(())
    else:
        out = Cumsum.apply(input, d, False)
    return out if dt is None or out.dtype is dt else out.to(dt)  # integers: not int64


inplace_method("cumsum_", cumsum)


@tensor_method("cumprod")
@autocast_policy("fp32", cpu=None)
def cumprod(input: Tensor, dim: int | None = None, *, dtype=None,  # noqa: A002
            axis: int | None = None) -> Tensor:
    """Cumulative product along ``dim``: y_k = prod_{j <= k} x_j (shape kept); integer and
    bool inputs give int64 (``dtype`` casts the input first, as PyTorch).

    Computed as a scan of products (after the step of span s, y_j covers (j - 2s, j]), so
    dx_j = sum_{k >= j} g_k prod_{i <= k, i != j} x_i exactly, zeros in x included."""
    dim = _dim_or_axis("cumprod", dim, axis, required=True)
    require_tensor("cumprod", input)
    d = _wrap_dim(_int_arg("cumprod", "dim", dim), input.ndim, "cumprod")
    if dtype is not None:
        _check_scan_dtype("cumprod", input, dtypes.as_dtype(dtype))
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    elif not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(dtypes.int64)  # noqa: A001
    (y,), half = widen_halves(input.reshape(1) if input.ndim == 0 else input)
    n, span = y.shape[d], 1
    if n <= 1:
        y = y.clone()
    while span < n:
        y = cat([narrow(y, d, 0, span),
                 narrow(y, d, span, n - span) * narrow(y, d, 0, n - span)], d)
        span *= 2
    return rounded_to(y, half).reshape(input.shape)


inplace_method("cumprod_", cumprod)
