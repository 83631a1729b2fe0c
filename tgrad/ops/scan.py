"""Cumulative ops along one dim: ``cumsum`` (a primitive: one Triton scan kernel on the GPU,
np.cumsum on the CPU)."""

from __future__ import annotations

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops._common import backend_of, register_op, require_tensor, tensor_method, wrap
from tgrad.ops.inplace import inplace_method
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["cumsum"]


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


@tensor_method("cumsum")
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """Cumulative sum along ``dim``; integer and bool inputs give int64 (``dtype`` casts
    the input first, as PyTorch)."""
    require_tensor("cumsum", input)
    d = _wrap_dim(dim, input.ndim, "cumsum")
    dt = None if dtype is None else dtypes.as_dtype(dtype)
    if dt is not None:
        input = input.to(dt)  # noqa: A001
    if input.ndim == 0:
        out = Cumsum.apply(input.reshape(1), 0, False).reshape(())
    else:
        out = Cumsum.apply(input, d, False)
    return out if dt is None or out.dtype is dt else out.to(dt)  # integers: not int64


inplace_method("cumsum_", cumsum)
