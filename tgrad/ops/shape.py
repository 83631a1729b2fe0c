"""Shape ops and views. Views share storage (and the version counter) with their base.

Each view op's backward is the inverse view or its adjoint: permute -> inverse permute,
expand -> sum_to, reshape -> reshape back, basic indexing -> scatter into zeros.
"""

from __future__ import annotations

import numpy as np

from tgrad.autograd.function import Function
from tgrad.ops._common import (backend_of, make_view, register_op, tensor_method, view_apply,
                               wrap)
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["reshape", "view", "permute", "transpose", "expand", "broadcast_to", "squeeze",
           "unsqueeze", "flatten", "t", "swapaxes", "movedim"]


def _infer_shape(op: str, shape: tuple, numel: int) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred")
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{op}: invalid shape dimension {min(shape)}")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = shape[:neg[0]] + (numel // known,) + shape[neg[0] + 1:]
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


class View(Function):
    """y = x viewed with another shape (no copy);  dx = reshape(g, x.shape)."""

    name = "view"
    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        arr = backend_of(x).reshape_view(x._data, shape)
        if arr is None:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one "
                f"dimension spans across two contiguous subspaces). Use .reshape(...) instead. "
                f"(input shape {list(x.shape)}, strides {list(x.stride())}, requested "
                f"{list(shape)})")
        ctx.shape = x.shape
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


class ReshapeCopy(Function):
    """Reshape that had to copy (strides did not allow a view); dx = reshape(g, x.shape)."""

    name = "reshape"
    node_name = "ReshapeAliasBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return wrap(backend_of(x).reshape_copy(x._data, shape), x.device)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape), None


@tensor_method("view")
def view(input: Tensor, *shape) -> Tensor:  # noqa: A002
    """A view with a new shape; raises when the strides do not allow one."""
    shape = _infer_shape("view", shape, input.numel())
    return view_apply(View, input, shape)


@tensor_method("reshape")
def reshape(input: Tensor, *shape) -> Tensor:  # noqa: A002
    """A view when the strides allow, else a copy (as PyTorch)."""
    shape = _infer_shape("reshape", shape, input.numel())
    if backend_of(input).reshape_view(input._data, shape) is not None:
        return view_apply(View, input, shape)
    return ReshapeCopy.apply(input, shape)


class Permute(Function):
    """y = x with dims reordered;  dx = permute(g, inverse)."""

    name = "permute"
    node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return make_view(x, backend_of(x).permute(x._data, dims))

    @staticmethod
    def backward(ctx, g):
        return g.permute(*np.argsort(ctx.dims).tolist()), None


@tensor_method("permute")
def permute(input: Tensor, *dims) -> Tensor:  # noqa: A002
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}"
                           .replace("(sparse_coo)", ""))
    dims = tuple(_wrap_dim(int(d), input.ndim, "permute") for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"permute: repeated dim in {list(dims)}")
    return view_apply(Permute, input, dims)


@tensor_method("transpose", "swapaxes")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    """Swap two dims (a view)."""
    if input.ndim == 0:
        return view_apply(Permute, input, ())
    d0 = _wrap_dim(dim0, input.ndim, "transpose")
    d1 = _wrap_dim(dim1, input.ndim, "transpose")
    dims = list(range(input.ndim))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return view_apply(Permute, input, tuple(dims))


swapaxes = transpose


@tensor_method("t")
def t(input: Tensor) -> Tensor:  # noqa: A002
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input


def _mT(self: Tensor) -> Tensor:  # noqa: N802
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


Tensor.mT = property(_mT)


@tensor_method("movedim")
def movedim(input: Tensor, source: int, destination: int) -> Tensor:  # noqa: A002
    src = _wrap_dim(source, input.ndim, "movedim")
    dst = _wrap_dim(destination, input.ndim, "movedim")
    order = [d for d in range(input.ndim) if d != src]
    order.insert(dst, src)
    return permute(input, *order)


class Expand(Function):
    """y = x broadcast to ``shape`` (a view, stride 0);  dx = sum_to(g, x.shape)."""

    name = "expand"
    node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        try:
            arr = backend_of(x).expand(x._data, shape)
        except ValueError:
            raise RuntimeError(
                f"The expanded size of the tensor must match the existing size at non-singleton "
                f"dimensions. Target sizes: {list(shape)}. Tensor sizes: {list(x.shape)}"
            ) from None
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.reduce import sum_to
        return sum_to(g, ctx.shape), None


@tensor_method("expand")
def expand(input: Tensor, *sizes) -> Tensor:  # noqa: A002
    """Broadcast to ``sizes`` without copying; -1 keeps a dim."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    lead = len(sizes) - input.ndim
    if lead < 0:
        raise RuntimeError(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({input.ndim})")
    shape = tuple(input.shape[i - lead] if s == -1 and i >= lead else int(s)
                  for i, s in enumerate(sizes))
    if shape == input.shape:
        return input
    return view_apply(Expand, input, shape)


def broadcast_to(input: Tensor, shape) -> Tensor:  # noqa: A002
    return expand(input, tuple(shape))


tensor_method("broadcast_to")(broadcast_to)
tensor_method("expand_as")(lambda self, other: expand(self, other.shape))


@tensor_method("squeeze")
def squeeze(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Remove size-1 dims (all, or those in ``dim``)."""
    if dim is None:
        shape = tuple(s for s in input.shape if s != 1)
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(d, input.ndim, "squeeze") for d in dims}
        shape = tuple(s for i, s in enumerate(input.shape) if not (i in dims and s == 1))
    return view_apply(View, input, shape)


@tensor_method("unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    d = _wrap_dim(dim, input.ndim + 1, "unsqueeze")
    shape = input.shape[:d] + (1,) + input.shape[d:]
    return view_apply(View, input, shape)


@tensor_method("flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:  # noqa: A002
    if input.ndim == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, input.ndim, "flatten")
    e = _wrap_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input.shape[:s] + (int(np.prod(input.shape[s:e + 1], dtype=np.int64)),) + \
        input.shape[e + 1:]
    return reshape(input, shape)


for _c in (View, ReshapeCopy, Permute, Expand):
    register_op(_c)
