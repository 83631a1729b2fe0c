"""The out-of-place writes into a view: ``slice_scatter``, ``select_scatter``,
``diagonal_scatter``, ``as_strided_scatter`` (a copy of input with src written over the
slice / select / diagonal / as_strided view) and ``masked_scatter`` (source's first
elements, in order, written where mask holds).
Each is one node of PyTorch's name (SelectScatterBackward0, SliceScatterBackward0,
DiagonalScatterBackward0, AsStridedScatterBackward0, MaskedScatterBackward0) over a clone
and an indexed (or view) write: d input = g outside the written part, d src = g read from
it.

Shape contract: src has exactly the shape of the view it replaces (PyTorch's check);
masked_scatter's mask broadcasts to input's shape and source holds at least as many
elements as mask has True values (counting them costs one host read on a GPU).
"""

from __future__ import annotations

import math

from tgrad.autograd.function import Function
from tgrad.ops._common import broadcast_or_raise, register_op, require_tensor, tensor_method
from tgrad.ops.composite import _check_mask
from tgrad.ops.creation import zeros
from tgrad.ops.gathering import _ScatterValue, _written
from tgrad.ops.index import IndexAdd, getitem, normalize_key
from tgrad.ops.layout import as_strided, diagonal
from tgrad.ops.reduce import sum_to
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter",
           "masked_scatter"]


class _ViewScatter(Function):
    """out = a copy of input (C-contiguous, storage offset 0) with ``view_of(out)``
    replaced by src (cast to input's dtype, PyTorch's copy_): one node of PyTorch's name
    (SelectScatterBackward0 here; the subclasses below the other views), edges input, src.
        d input = the same scatter of g with zeros written over the view
        d src = view_of(g) (g made C-contiguous first for as_strided, whose view addresses
                the copy's storage), in src's dtype
    Both are tgrad ops (this node again, a view op), so they differentiate again.
    ``attrs`` are PyTorch's saved attributes (the arguments as given)."""

    name = "select_scatter"
    node_name = "SelectScatterBackward0"
    saved_attributes = {"_saved_dim": lambda node: node.attrs["dim"],
                        "_saved_index": lambda node: node.attrs["index"]}
    strided = False  # as_strided_scatter: the view addresses a contiguous tensor's storage

    @classmethod
    def scatter(cls, op: str, input: Tensor, src: Tensor, view_of, attrs: dict) -> Tensor:  # noqa: A002
        """The op ``op`` as this node (checked like PyTorch's)."""
        require_tensor(op, input)
        require_tensor(op, src, "src", 2)
        return cls.apply(input, src, (op, view_of, attrs))

    @staticmethod
    def forward(ctx, input, src, spec):  # noqa: A002
        # spec: (op, view_of, attrs), no tensor argument (edges input and src only)
        op, ctx.view_of, ctx.attrs = spec
        ctx.spec, ctx.src_dtype = spec, src.dtype
        out = input.clone()  # (tgrad's clone: row-major, offset 0)
        view = ctx.view_of(out)
        if tuple(view.shape) != tuple(src.shape):
            raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of "
                               f"self. src size = {list(src.shape)}, slice size = "
                               f"{list(view.shape)}")
        ctx.src_shape = view.shape
        view.copy_(src)
        out._storage.version = 0  # a new tensor, written before anyone saw it (PyTorch's 0)
        return out

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        gi = gs = None
        if need_in:
            zero = zeros(ctx.src_shape, dtype=g.dtype, device=g.device)
            gi = ctx._forward_cls.apply(g, zero, ctx.spec)
        if need_src:
            gs = ctx.view_of(g.clone() if ctx._forward_cls.strided else g)
            if gs.dtype is not ctx.src_dtype:
                gs = gs.to(ctx.src_dtype)
        return gi, gs, None


def _variant(name: str, node_name: str, attrs: tuple, **extra) -> type:
    """_ViewScatter under ``name`` / ``node_name``, saving PyTorch's attributes ``attrs``."""
    saved = {f"_saved_{a}": lambda node, a=a: node.attrs[a] for a in attrs}
    return type("_ViewScatter", (_ViewScatter,), {"name": name, "node_name": node_name,
                                                  "saved_attributes": saved, **extra})


_SliceScatter = _variant("slice_scatter", "SliceScatterBackward0",
                         ("dim", "start", "end", "step"))
_DiagonalScatter = _variant("diagonal_scatter", "DiagonalScatterBackward0",
                            ("dim1", "dim2", "offset"))
_AsStridedScatter = _variant("as_strided_scatter", "AsStridedScatterBackward0",
                             ("size", "stride", "storage_offset"), strided=True)
for _c in (_ViewScatter, _SliceScatter, _DiagonalScatter, _AsStridedScatter):
    register_op(_c)


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
    return _SliceScatter.scatter("slice_scatter", input, src, lambda t: t[key],
                                 {"dim": dim, "start": start, "end": end, "step": step})


@tensor_method("select_scatter")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """input with input.select(dim, index) replaced by src (input's shape without dim)."""
    d = _wrap_dim(dim, input.ndim, "select_scatter")
    n = input.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select_scatter(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return _ViewScatter.scatter("select_scatter", input, src, lambda t: t.select(d, index),
                                {"dim": dim, "index": index})


@tensor_method("diagonal_scatter")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,  # noqa: A002
                     dim2: int = 1) -> Tensor:
    """input with input.diagonal(offset, dim1, dim2) replaced by src."""
    return _DiagonalScatter.scatter(
        "diagonal_scatter", input, src, lambda t: diagonal(t, offset, dim1, dim2),
        {"dim1": dim1, "dim2": dim2, "offset": offset})


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
    return _AsStridedScatter.scatter(
        "as_strided_scatter", input, src,
        lambda t: as_strided(t, size, stride, storage_offset),
        {"size": tuple(size), "stride": tuple(stride), "storage_offset": storage_offset})


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
    keeps_indices = True
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
