"""The out-of-place writes into a view: ``slice_scatter``, ``select_scatter``,
``diagonal_scatter``, ``as_strided_scatter`` (a copy of input with src written over the
slice / select / diagonal / as_strided view) and ``masked_scatter`` (source's first
elements, in order, written where mask holds).
Compositions: a clone and an indexed (or view) write, so d input = g outside the written
part and d src = g read from it (the write's own rule); masked_scatter is that write as one
node of PyTorch's name (MaskedScatterBackward0).

Shape contract: src has exactly the shape of the view it replaces (PyTorch's check);
masked_scatter's mask broadcasts to input's shape and source holds at least as many
elements as mask has True values (counting them costs one host read on a GPU).
"""

from __future__ import annotations

import math

from tgrad.autograd.function import Function
from tgrad.ops._common import broadcast_or_raise, register_op, require_tensor, tensor_method
from tgrad.ops.composite import _check_mask
from tgrad.ops.gathering import _ScatterValue, _written
from tgrad.ops.index import IndexAdd, getitem, normalize_key
from tgrad.ops.layout import as_strided, diagonal
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
           "masked_scatter"]


def _write(op: str, input: Tensor, src: Tensor, view_of) -> Tensor:  # noqa: A002
    """A copy of input with ``view_of(copy)`` replaced by src (checked like PyTorch); src of
    another dtype is cast to input's by the copy (PyTorch's copy_), its gradient in src's."""
    require_tensor(op, input)
    require_tensor(op, src, "src", 2)
    out = input.clone()
    view = view_of(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. "
                           f"src size = {list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return out


@tensor_method("slice_scatter")
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
                  end: int | None = None, step: int = 1) -> Tensor:
    """input with input[..., start:end:step, ...] (along ``dim``) replaced by src."""
    require_tensor("slice_scatter", input)
    require_tensor("slice_scatter", src, "src", 2)
    d = _wrap_dim(dim, input.ndim, "slice_scatter")
    if step <= 0:
        raise RuntimeError(f"slice_scatter(): slice step must be positive, got {step}")
    key = (slice(None),) * d + (slice(start, end, step),)
    return _write("slice_scatter", input, src, lambda t: t[key])


@tensor_method("select_scatter")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """input with input.select(dim, index) replaced by src (input's shape without dim)."""
    d = _wrap_dim(dim, input.ndim, "select_scatter")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return _write("select_scatter", input, src, lambda t: t.select(d, index))


@tensor_method("diagonal_scatter")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Tensor:
    """input with input.diagonal(offset, dim1, dim2) replaced by src."""
    return _write("diagonal_scatter", input, src, lambda t: diagonal(t, offset, dim1, dim2))


@tensor_method("as_strided_scatter")
def as_strided_scatter(input: Tensor, src: Tensor, size, stride,  # noqa: A002
                       storage_offset: int | None = None) -> Tensor:
    """input with its copy's ``as_strided(size, stride, storage_offset)`` view replaced by
    src;  d input = g zeroed at the written storage positions, d src = g read through the
    view (PyTorch 2.13's d input is the complement, a known bug: its gradcheck fails).

    The copy is C-contiguous (tgrad's clone) with storage offset 0, so ``stride`` and
    ``storage_offset`` address input's row-major order (PyTorch's clone keeps a
    transposed input's strides). With overlapping strides the written value of a shared
    position is one of src's (unspecified, as PyTorch)."""
    return _write("as_strided_scatter", input, src,
                  lambda t: as_strided(t, size, stride, storage_offset))


@tensor_method("masked_scatter")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """input with the positions where mask (input and mask broadcast together; the in-place
    method: mask broadcast to self) holds taken, in row-major
    order, by source's first elements (source read flat);  d source = g at those positions
    (zeros for source's unused tail), d input = g elsewhere."""
    require_tensor("masked_scatter", input)
    _check_mask("masked_scatter", mask)
    require_tensor("masked_scatter", source, "source", 3)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {input.dtype.name} and {source.dtype.name}")
    # PyTorch's "The size of tensor a (mask) must match the size of tensor b (input) ..."
    shape = broadcast_or_raise("masked_scatter", mask.shape, input.shape)
    mask = mask.expand(shape)
    # (out of place, input broadcasts too: PyTorch's)
    count = int(mask.sum())  # on a GPU: one synchronizing read
    if count > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {count} "
                           f"elements (the number of True values in mask), got "
                           f"{source.numel()}")
    key, _ = normalize_key((mask,), input.device, len(shape))
    return _MaskedScatter.apply(input, source, key, tuple(shape), count)  # (one node)


class _MaskedScatter(Function):
    """out = input broadcast to ``shape`` with source's first ``count`` elements (read flat)
    written where the mask (the key) holds: one node, PyTorch's MaskedScatterBackward0
    (edges input, source).
        d input = sum_to(g zeroed where the mask holds, input.shape)
        d source = g read where the mask holds, then zeros (source's remaining elements),
                   in source's shape"""

    name = "masked_scatter"
    node_name = "MaskedScatterBackward0"
    saved_attributes = {"_saved_source_sym_sizes": "src_shape"}

    @staticmethod
    def forward(ctx, input, source, key, shape, count):  # noqa: A002
        ctx.key, ctx.shape, ctx.count = key, shape, count
        ctx.in_shape, ctx.src_shape = input.shape, source.shape
        x = input if tuple(input.shape) == shape else input.expand(shape)
        return _written(x, key, source.reshape(-1)[:count])

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        gi = gs = None
        if need_in:
            gi = sum_to(_ScatterValue.apply(g, 0, ctx.key, (None, None)), ctx.in_shape)
        if need_src:
            n = math.prod(ctx.src_shape)
            gs = getitem(g, ctx.key)
            if ctx.count != n:
                gs = IndexAdd.apply(gs, (slice(0, ctx.count),), (n,))
            gs = gs.reshape(ctx.src_shape)
        return gi, gs, None, None, None


register_op(_MaskedScatter)


@tensor_method("masked_scatter_")
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In place (the only in-place form PyTorch has of these): masked_scatter written into
    self, recorded as one in-place op."""
    from tgrad.ops.inplace import apply_inplace
    _check_mask("masked_scatter_", mask)
    try:
        mask = mask.expand(self.shape)
    except RuntimeError as e:  # expand's (PyTorch's) text: in place, self cannot grow
        raise RuntimeError(f"masked_scatter_: {e}") from None
    return apply_inplace(self, "masked_scatter_", lambda x, s: masked_scatter(x, mask, s),
                         source)
