"""Matrix products: matmul / @ (1-D, 2-D, batched with broadcasting), mm, bmm.

For y = a @ b (a: [..., n, k], b: [..., k, m]):
    da = sum_to(g @ b^T, a.shape)    db = sum_to(a^T @ g, b.shape)
1-D operands are unsqueezed to matrices and the extra dim squeezed away, as NumPy/PyTorch.
"""

from __future__ import annotations

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.ops._common import backend_of, register_op, same_device, tensor_method, wrap
from tgrad.tensor import Tensor

__all__ = ["matmul", "mm", "bmm"]


class MatMul(Function):
    name = "matmul"
    node_name = "MmBackward0"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return wrap(backend_of(a).matmul(a._data, b._data), a.device)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.reduce import sum_to
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        ga = sum_to(matmul(g, b.mT), a.shape) if need_a else None
        gb = sum_to(matmul(a.mT, g), b.shape) if need_b else None
        return ga, gb


register_op(MatMul)


def _check(op: str, a: Tensor, b: Tensor) -> None:
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor arguments, got {type(t).__name__}")
    same_device(op, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, but got "
                           f"{a.dtype} and {b.dtype}")
    if a.dtype is dtypes.bool_:
        raise RuntimeError(f"{op}: not implemented for bool tensors")
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"{op}: both arguments to matmul need to be at least 1D, but they "
                           f"are {a.ndim}D and {b.ndim}D")
    if a.shape[-1] != b.shape[-2 if b.ndim > 1 else 0]:
        raise RuntimeError(f"{op}: shapes cannot be multiplied ({_desc(a)} and {_desc(b)})")


def _desc(t: Tensor) -> str:
    if t.ndim == 1:
        return f"1x{t.shape[0]}"
    return "x".join(str(s) for s in t.shape)


@tensor_method("matmul", "__matmul__")
def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Matrix product with NumPy's matmul rules (broadcast batch dims)."""
    _check("matmul", input, other)
    a, b = input, other
    if a.ndim == 1 and b.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b.unsqueeze(1)).reshape(())
    if a.ndim == 1:
        return MatMul.apply(a.unsqueeze(0), b).squeeze(-2)
    if b.ndim == 1:
        return MatMul.apply(a, b.unsqueeze(1)).squeeze(-1)
    try:
        return MatMul.apply(a, b)
    except ValueError:
        raise RuntimeError(f"matmul: batch dimensions cannot be broadcast "
                           f"({list(a.shape)} and {list(b.shape)})") from None


tensor_method("__rmatmul__")(lambda self, other: matmul(other, self))


@tensor_method("mm")
def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2D tensors, got {input.ndim}D and {mat2.ndim}D")
    return matmul(input, mat2)


@tensor_method("bmm")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm: expected 3D tensors, got {input.ndim}D and {mat2.ndim}D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch sizes must match, got {input.shape[0]} and "
                           f"{mat2.shape[0]}")
    return matmul(input, mat2)
