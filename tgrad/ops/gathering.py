"""Gathering and scattering along a dim, composed of advanced indexing (no primitive of
their own): ``index_select``, ``gather``, ``take_along_dim`` read through an integer key
(the gradient scatter-adds, repeated indices add up; one node of PyTorch's name,
GatherBackward0 / IndexSelectBackward0: ops/index.py's AlongDim); ``scatter_add``/``index_add`` add
through ``IndexAdd`` and ``scatter`` writes through an indexed assignment (its gradient
skips the written positions), each one node of PyTorch's name (ScatterAddBackward0,
IndexAddBackward0, ScatterBackward0/1) whose backward is a formula of tgrad ops;
``select`` is a view; ``nonzero``/``argwhere`` read the tensor on the host (the count
decides the shape). Index tensors are checked as PyTorch checks them (dtype, device,
range). On a GPU the range is checked on the device, by the gather kernel itself for the
reads and by a range-check launch for the writers (``checked_on_device``, also used by
take, put_, index_reduce and embedding_bag): no synchronization, a bad index raises at the
next one, as PyTorch's device-side assert.
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_along as _along_np
from tgrad.ops._common import (
    backend_of,
    fresh,
    register_op,
    require_tensor,
    rounded_to,
    same_device,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.creation import arange, full, tensor
from tgrad.ops.elementwise import node_variant
from tgrad.ops.index import AlongDim, IndexAdd, getitem, normalize_key
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["index_select", "gather", "select", "take_along_dim", "scatter_add", "scatter",
           "index_add", "nonzero", "argwhere"]


def _check_index(op: str, input: Tensor, index, dim: int, size: int,  # noqa: A002
                 error: type = RuntimeError, kernel_may_check: bool = False) -> bool:
    """An int32/int64 tensor on input's device with every value in [0, size) (PyTorch's
    RuntimeError, as gather, scatter* and index_add raise it; index_select's is an
    IndexError, ``error``). On cuda the range is checked on the device, without a
    synchronization: a bad index raises at the next one, as PyTorch's device-side assert
    (tgrad/cuda/index_errors.py). With ``kernel_may_check`` (the reads) and an index of <= 4
    dims (one index array per dim, as gather_nd_kernel takes them) the gather kernel checks
    it itself: True is returned. Otherwise a range-check launch does (the writers, whose
    kernels wrap negatives). On the CPU the range is read here."""
    require_tensor(op, index, "index", 3)  # (position 3 in gather, scatter*, index_*)
    if index.dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, got "
                           f"{index.dtype.name}")
    same_device(op, input, index)
    if kernel_may_check and _kernel_checks(input, index):
        return True
    if checked_on_device(f"{op}():", index, size, dim, input.shape):
        return False
    if index.numel():
        a = index._data  # (a CPU tensor here: cuda returned above)
        # one pass: as unsigned, a negative index is >= 2^31 (2^63) and so >= size too
        if a.view(a.dtype.str.replace("i", "u")).max() < size:
            return False
        lo, hi = int(a.min()), int(a.max())
        bad = lo if lo < 0 else hi if hi >= size else None
        if bad is not None:
            raise error(f"{op}(): index {bad} is out of bounds for dimension {dim} with "
                        f"size {size}")
    return False


def checked_on_device(op: str, index: Tensor, size: int, dim: int, shape: tuple,
                      negatives: bool = False) -> bool:
    """On cuda, launch the range check of ``index`` ([0, size), or [-size, size) with
    ``negatives``, along ``dim`` of a tensor of ``shape``) and return True: a bad value
    raises at the next synchronization, the error beginning with ``op`` (e.g. "take():").
    Elsewhere False: the caller checks on the host, at once."""
    if index.device.type != "cuda":
        return False
    backend_of(index).check_index_range(index._data, size, dim, tuple(shape), op, negatives)
    return True


def _kernel_checks(input: Tensor, index: Tensor) -> bool:  # noqa: A002
    # (float8 inputs read through the NumPy backend's gather, the host path, which wraps)
    return input.device.type == "cuda" and input.ndim > 0 and index.ndim <= 4 and \
        input.dtype not in dtypes.FLOAT8_DTYPES


def _along(op: str, input: Tensor, dim: int, index: Tensor, kernel_checks: bool,  # noqa: A002
           wrap_negative: bool = False, node=None) -> Tensor:
    """input read at ``index`` along ``dim`` (validated), one GatherBackward0 node (or
    ``node``); with ``kernel_checks`` the gather kernel checks the range, negatives out of
    range unless ``wrap_negative`` (once, take_along_dim's), and the error names ``op``."""
    if node is None:
        if _host_flat(input, index):  # the CPU: the key and its flat positions, on the arrays
            key, flat = _along_np.key_and_flat(input.shape, dim, index._data)
            return AlongDim.apply(input, key, (dim, index, {}, flat))
        key, _ = normalize_key(_along_key(index, dim, input.device), input.device)
    else:  # index_select: the vector index at dim, whole slices elsewhere
        key, _ = normalize_key((slice(None),) * dim + (index.reshape(-1),), input.device,
                               input.ndim)
    options = {"wrap_negative": wrap_negative, "op": f"{op}():"} if kernel_checks else {}
    return (node or AlongDim).apply(input, key, (dim, index, options))


def _host_flat(input: Tensor, index: Tensor) -> bool:  # noqa: A002
    """Whether the along-dim key is built on the host with its flat positions
    (tgrad/backends/_numpy_along.py): a CPU input of 1+ dims and an index of 1+ dims."""
    return input.device.type == "cpu" and index.ndim > 0 and input.ndim > 0


def _along_key(index: Tensor, dim: int, device) -> tuple:
    """The advanced-indexing key that reads (or writes) position index[j] along ``dim`` for
    every j of index's shape: index (as int64) at ``dim``, an arange broadcast along each
    other dim. A 0-d index (of a 1-D input) is the key itself: one element, a 0-d result."""
    if index.ndim == 0:
        return (index if index.dtype is dtypes.int64 else index.to(dtypes.int64),)
    key = []
    for k, n in enumerate(index.shape):
        if k == dim:
            key.append(index if index.dtype is dtypes.int64 else index.to(dtypes.int64))
        else:
            shape = [1] * index.ndim
            shape[k] = n
            key.append(arange(n, device=device).reshape(shape))
    return tuple(key)


def _check_sizes(op: str, index: Tensor, dim: int, input: Tensor, src=None) -> None:  # noqa: A002
    """index.size(d) <= input.size(d) for d != dim, and <= src.size(d) for every d (PyTorch's
    gather/scatter contract)."""
    for k, n in enumerate(index.shape):
        if k != dim and n > input.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}")
        if isinstance(src, Tensor) and n > src.shape[k]:
            raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be no larger "
                               f"than src {list(src.shape)} at dimension {k}")


@tensor_method("index_select")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The entries ``index`` (a vector, or one 0-d index) of ``input`` along ``dim``:
    y.shape = input.shape with dim -> len(index);  dx scatter-adds g (repeats add up)."""
    require_tensor("index_select", input)
    d = _wrap_dim(dim, input.ndim, "index_select")
    if isinstance(index, Tensor) and index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape "
                         f"{list(index.shape)}")
    on_device = _check_index("index_select", input, index, d,
                             input.shape[d] if input.ndim else 1, IndexError, True)
    if input.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        return input.clone()
    return _along("index_select", input, d, index, on_device, node=_IndexSelect)


# index_select: gather's class under PyTorch's name (its saved dim, index, self's sizes)
_IndexSelect = node_variant(AlongDim, "IndexSelectBackward0",
                            saved_attributes={"_saved_dim": "dim", "_saved_index": "index",
                                              "_saved_self_sym_sizes": "shape"})


@tensor_method("gather")
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:  # noqa: A002
    """out[i][j][k] = input[i][index[i][j][k]][k] for dim = 1 (likewise for any dim);
    out.shape = index.shape, index.size(d) <= input.size(d) for d != dim;
    dx = zeros with g scatter-added at the gathered positions (PyTorch's scatter_add).
    ``sparse_grad`` is accepted for PyTorch's signature; the gradient is always dense (the
    same values as PyTorch's sparse one)."""
    require_tensor("gather", input)
    dtypes.refuse_float8("gather_expanded_index", input.dtype)
    d = _wrap_dim(dim, input.ndim, "gather")
    if isinstance(index, Tensor) and max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError(f"gather(): Index tensor must have the same number of dimensions "
                           f"as input tensor ({index.ndim} and {input.ndim})")
    on_device = _check_index("gather", input, index, d, input.shape[d] if input.ndim else 1,
                             kernel_may_check=True)
    if input.ndim == 0:
        return fresh(gather(input.reshape(1), 0, index.reshape(-1)).reshape(index.shape))
    _check_sizes("gather", index, d, input)
    return _along("gather", input, d, index, on_device)


@tensor_method("select")
def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """input[..., index, ...] at ``dim`` (a view without that dim). ``index``: an int, or
    a one-element integer tensor (its value, as PyTorch's __index__)."""
    require_tensor("select", input)
    if isinstance(index, Tensor) and index.numel() == 1 and not (
            index.dtype.is_floating_point or index.dtype.is_complex):
        index = int(index.item())
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"select(): argument 'index' (position 3) must be int, not "
                        f"{type(index).__name__}")
    d = _wrap_dim(dim, input.ndim, "select")
    n = input.shape[d] if input.ndim else 0
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return getitem(input, (slice(None),) * d + (index,))


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """gather along ``dim`` with input and indices broadcast against each other except along
    ``dim``; negative indices in [-size, 0) count from the end (as NumPy's
    take_along_axis and PyTorch's). dim None: over the flattened input, indices in [0, numel)
    only (PyTorch's)."""
    require_tensor("take_along_dim", input)
    require_tensor("take_along_dim", indices, "indices", 2)
    if isinstance(indices, Tensor) and indices.dtype is not dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{dtypes.SCALAR_TYPE_NAMES[indices.dtype]}")
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    if input.ndim == 0:  # PyTorch's error (no dim to take along)
        raise IndexError(f"take_along_dim(): Dimension specified as {dim} but tensor has no "
                         f"dimensions (pass dim=None to index the 0-d input)")
    d = _wrap_dim(dim, input.ndim, "take_along_dim")
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    same_device("take_along_dim", input, indices)
    on_device = _kernel_checks(input, indices)  # (the kernel wraps negatives once)
    if indices.numel() and not on_device:
        lo, size = int(indices.min()), input.shape[d]  # on a GPU: one synchronizing read
        if lo < -size:
            raise IndexError(f"take_along_dim(): index {lo} is out of bounds for dimension "
                             f"{d} with size {size}")
        if lo < 0:
            indices = indices + (indices < 0).long() * size
    shape_in, shape_ix = list(input.shape), list(indices.shape)
    for k in range(input.ndim):
        if k != d:
            if shape_in[k] != shape_ix[k] and 1 not in (shape_in[k], shape_ix[k]):
                raise RuntimeError(f"take_along_dim(): The size of tensor a ({shape_in[k]}) "
                                   f"must match the size of tensor b ({shape_ix[k]}) at "
                                   f"non-singleton dimension {k} (input of shape "
                                   f"{list(input.shape)}, indices of shape "
                                   f"{list(indices.shape)})")
            m = shape_in[k] if shape_ix[k] == 1 else shape_ix[k]
            shape_in[k] = shape_ix[k] = m
    if on_device:
        return _along("take_along_dim", input.expand(shape_in), d, indices.expand(shape_ix),
                      True, wrap_negative=True)
    return gather(input.expand(shape_in), d, indices.expand(shape_ix))


tensor_method("take_along_dim")(take_along_dim)


def _scatter_key(op: str, input: Tensor, dim: int, index: Tensor, src,  # noqa: A002
                 with_flat: bool = False) -> tuple:
    """(normalized key, part key) for writing src[j] at index's positions along ``dim``,
    after PyTorch's checks (dims, sizes, range, src dtype): the key reads (or writes)
    input's positions, the part key (basic: ints and slices) src's part of index's shape
    (src's first element for a 0-d index). ``with_flat``: a third item, the key's flat
    positions on the CPU (tgrad/backends/_numpy_along.py), else None."""
    require_tensor(op, index, "index", 3)
    d = _wrap_dim(dim, input.ndim, op)
    for name, t in (("self", input), ("src", src)):  # (PyTorch's text names the tensor)
        if isinstance(t, Tensor) and max(index.ndim, 1) != max(t.ndim, 1):
            raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions "
                               f"as {name} tensor (index of shape {list(index.shape)}, {name} "
                               f"of shape {list(t.shape)})")
    if isinstance(src, Tensor) and src.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype (got "
                           f"{input.dtype.name} and {src.dtype.name})")
    _check_index(op, input, index, d, input.shape[d] if input.ndim else 1)
    _check_sizes(op, index, d, input, src)
    part_key = None
    if isinstance(src, Tensor):
        part_key = (tuple(slice(0, n) for n in index.shape) if index.ndim
                    else (0,) * src.ndim)  # a 0-d index writes src's first element
    if with_flat and _host_flat(input, index):
        key, flat = _along_np.key_and_flat(input.shape, d, index._data)
        return key, part_key, flat
    key, _ = normalize_key(_along_key(index, d, input.device), input.device)
    return (key, part_key, None) if with_flat else (key, part_key)


def _part(src: Tensor, part_key: tuple) -> Tensor:
    """src's part that a scatter writes (src itself where the part key covers it)."""
    if all(type(k) is slice and k.stop == n for k, n in zip(part_key, src.shape)) \
            and len(part_key) == src.ndim:
        return src
    return getitem(src, part_key)


def _src_grad(ctx, g: Tensor) -> Tensor:
    """d src of a scatter: g gathered at the written positions (index's shape; PyTorch's
    grad.gather(dim, index)), zeros for src's part past index's shape (src's shape); a 0-d
    src broadcast over the positions (index_fill's value): their sum."""
    if ctx.flat is not None and not differentiable_formula():  # (the CPU's positions)
        gp = wrap(_along_np.take(g._data, ctx.flat), g.device)
    else:
        gp = getitem(g, ctx.key)
    if tuple(gp.shape) == tuple(ctx.src_shape):
        return gp
    if not ctx.src_shape and not ctx.part_key:
        return gp.sum()
    return IndexAdd.apply(gp, normalize_key(ctx.part_key)[0], ctx.src_shape)


_ADD_AT_DTYPES = frozenset((dtypes.float32, dtypes.float64, dtypes.complex64,
                            dtypes.complex128))


def _add_at(input: Tensor, part: Tensor, key: tuple, alpha, flat=None) -> Tensor:  # noqa: A002
    """input + zeros with alpha * part added at ``key`` (repeats add up): scatter_add's and
    index_add's forward. float32/64 and complex: the backend arrays' add, mul and index_add
    (the Tensor ops' own steps, without their calls; on the CPU with the key's ``flat``
    positions: _numpy_along's add_at, the same sums); halves in float32 rounded once."""
    if input.dtype in _ADD_AT_DTYPES and part.dtype is input.dtype:
        be = backend_of(input)
        p = part._data if alpha == 1 else be.binary("mul", part._data,
                                                     input.dtype.np.type(alpha))
        added = (be.index_add(input.shape, input.dtype.np, key, p) if flat is None else
                 _along_np.add_at(input.shape, input.dtype.np, flat, p))
        return wrap(be.binary("add", input._data, added), input.device)
    (x, part), half = widen_halves(input, part)
    part = part if alpha == 1 else part * alpha
    return rounded_to(x + IndexAdd.apply(part, key, x.shape), half)


def _written(input: Tensor, key: tuple, value, flat=None) -> Tensor:  # noqa: A002
    """A copy of input with ``value`` written at ``key``: a tensor of input's dtype, or a
    number into a float or complex input, on the backend arrays (IndexPut's steps, without
    the indexed assignment's calls; on the CPU with the key's ``flat`` positions:
    _numpy_along's written, the same writes); anything else through that assignment (its
    casts)."""
    dt = input.dtype
    if value.dtype is dt if isinstance(value, Tensor) else (
            dt.is_floating_point or dt.is_complex) and not isinstance(value, bool):
        v = value._data if isinstance(value, Tensor) else dt.np.type(value)
        if flat is not None:
            return wrap(_along_np.written(input._data, flat, v), input.device)
        be = backend_of(input)
        out = be.clone(input._data)
        be.index_put_(out, key, v)
        return wrap(out, input.device)
    out = input.clone()
    out[key] = value
    return out


_SCATTER_SAVED = {"_saved_dim": "dim", "_saved_index": "index"}


def _keep_along(ctx, along: tuple) -> None:
    """ctx.dim, ctx.index (the saved attributes) and ctx.flat from a scatter's ``along``:
    (dim, index) or, on the CPU, (dim, index, the key's flat positions); flat None else."""
    ctx.dim, ctx.index, *flat = along
    ctx.flat = flat[0] if flat else None


def _zeroed(ctx, g: Tensor) -> Tensor:
    """g with zeros at the written positions (d input of a scatter): ScatterBackward1's node
    again (differentiable), or on the CPU in a plain backward _numpy_along's written."""
    if ctx.flat is not None and not differentiable_formula():
        return wrap(_along_np.written(g._data, ctx.flat, g.dtype.np.type(0)), g.device)
    return _ScatterValue.apply(g, 0, ctx.key, (ctx.dim, ctx.index, ctx.flat))


class _ScatterAdd(Function):
    """out = input + zeros with src's part (index's shape) added at index along dim
    (repeats add up): one node, PyTorch's ScatterAddBackward0 (edges input, src).
        d input = g        d src = g.gather(dim, index) (zero past index's shape)
    Halves: computed in float32, rounded once (the composition's values)."""

    name = "scatter_add"
    node_name = "ScatterAddBackward0"
    keeps_indices = True
    saved_attributes = _SCATTER_SAVED

    @staticmethod
    def forward(ctx, input, src, key, part_key, along):  # noqa: A002
        _keep_along(ctx, along)
        ctx.key, ctx.part_key, ctx.src_shape = key, part_key, src.shape
        return _add_at(input, _part(src, part_key), key, 1, ctx.flat)

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        return (g if need_in else None), (_src_grad(ctx, g) if need_src else None), \
            None, None, None


class _Scatter(Function):
    """out = input with src's part (index's shape) written at index along dim: one node,
    PyTorch's ScatterBackward0 (edges input, src). At a repeated index one of the written
    values is kept (unspecified, as PyTorch); every src position still gets g there.
        d input = g.scatter(dim, index, 0) (g where nothing was written)
        d src = g.gather(dim, index) (zero past index's shape)"""

    name = "scatter"
    node_name = "ScatterBackward0"
    keeps_indices = True
    saved_attributes = _SCATTER_SAVED

    @staticmethod
    def forward(ctx, input, src, key, part_key, along):  # noqa: A002
        _keep_along(ctx, along)
        ctx.key, ctx.part_key, ctx.src_shape = key, part_key, src.shape
        return _written(input, key, _part(src, part_key), ctx.flat)

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        gi = _zeroed(ctx, g) if need_in else None
        return gi, (_src_grad(ctx, g) if need_src else None), None, None, None


class _ScatterValue(Function):
    """out = input with the number ``value`` written at index along dim: one node,
    PyTorch's ScatterBackward1 (edge: input).  d input = g.scatter(dim, index, 0) (this
    node again, so it differentiates again)."""

    name = "scatter"
    node_name = "ScatterBackward1"
    keeps_indices = True
    saved_attributes = _SCATTER_SAVED

    @staticmethod
    def forward(ctx, input, value, key, along):  # noqa: A002
        _keep_along(ctx, along)
        ctx.key = key
        return _written(input, key, value, ctx.flat)

    @staticmethod
    def backward(ctx, g):
        return _zeroed(ctx, g), None, None, None


class _IndexAdd(Function):
    """out = input + alpha * source's slices added at index along dim (repeats add up): one
    node, PyTorch's IndexAddBackward0 (edges input, source). Halves: computed in float32,
    rounded once (the composition's values).
        d input = g        d source = conj(alpha) * g.index_select(dim, index)"""

    name = "index_add"
    node_name = "IndexAddBackward0"
    keeps_indices = True
    saved_attributes = {"_saved_alpha": "alpha", "_saved_dim": "dim", "_saved_index": "index",
                        "_saved_source_dim": "source_dim"}

    @staticmethod
    def forward(ctx, input, source, key, alpha, along):  # noqa: A002
        ctx.dim, ctx.index = along
        ctx.key, ctx.alpha, ctx.source_dim = key, alpha, source.ndim
        return _add_at(input, source, key, alpha)

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        gs = None
        if need_src:
            gs = getitem(g, ctx.key)
            gs = gs if ctx.alpha == 1 else gs * ctx.alpha.conjugate()
        return (g if need_in else None), gs, None, None, None


# index_copy / index_fill: the scatter nodes under PyTorch's names (their key: a slice of
# every dim before ``dim``, the index at ``dim``; index_fill's without repeats, so a 0-d
# value tensor's gradient sums each filled position once)
INDEX_COPY = node_variant(_Scatter, "IndexCopyBackward0", name="index_copy", saved_attributes={
    **_SCATTER_SAVED, "_saved_source_dim": lambda node: len(node.src_shape)})
INDEX_FILL_TENSOR = node_variant(_Scatter, "IndexFillBackward1", name="index_fill",
                                 saved_attributes=_SCATTER_SAVED)
INDEX_FILL = node_variant(_ScatterValue, "IndexFillBackward0", name="index_fill",
                          saved_attributes=_SCATTER_SAVED)

class _Put(Function):
    """out = input with source's elements written (``accumulate``: added; repeats add up)
    at the flat positions ``key`` of input's row-major order: one node, PyTorch's
    PutBackward0 (edges input, source).
        d input = g (accumulate) or g zeroed at the positions
        d source = g.flatten()[index] (source's shape)"""

    name = "put"
    node_name = "PutBackward0"
    saved_attributes = {"_saved_accumulate": "accumulate", "_saved_index": "index"}

    @staticmethod
    def forward(ctx, input, source, key, accumulate, along):  # noqa: A002
        # along: (index,), kept for the saved attribute (a tensor argument would be an edge);
        # on the CPU (index, its positions in [0, numel): _numpy_along's flat positions)
        ctx.index, *pos = along
        ctx.flat = pos[0] if pos else None
        ctx.key, ctx.accumulate = key, accumulate
        ctx.shape, ctx.src_shape = input.shape, source.shape
        if ctx.flat is not None:  # the flattened arrays (no reshape nodes: grad mode is off)
            flat = wrap(input._data.reshape(-1), input.device)
            part = wrap(source._data.reshape(-1), source.device)
            out = _add_at(flat, part, key, 1, ctx.flat) if accumulate else \
                _written(flat, key, part, ctx.flat)
            return wrap(out._data.reshape(input.shape), input.device)
        flat, part = input.reshape(-1), source.reshape(-1)
        out = _add_at(flat, part, key, 1) if accumulate else _written(flat, key, part)
        return fresh(out.reshape(input.shape))  # (out is new: not a view, as PyTorch's)

    @staticmethod
    def backward(ctx, g):
        need_in, need_src = ctx.needs_input_grad[:2]
        if ctx.flat is not None and not differentiable_formula():  # the CPU's positions
            gi = gs = None
            if need_in:
                gi = g if ctx.accumulate else wrap(_along_np.written(
                    g._data.reshape(-1), ctx.flat, g.dtype.np.type(0)).reshape(ctx.shape),
                    g.device)
            if need_src:
                gs = wrap(_along_np.take(g._data, ctx.flat).reshape(ctx.src_shape), g.device)
            return gi, gs, None, None, None
        flat = g.reshape(-1)
        gi = gs = None
        if need_in:
            gi = g if ctx.accumulate else _ScatterValue.apply(
                flat, 0, ctx.key, (0, ctx.index)).reshape(ctx.shape)
        if need_src:
            gs = getitem(flat, ctx.key).reshape(ctx.src_shape)
        return gi, gs, None, None, None


for _c in (_ScatterAdd, _Scatter, _ScatterValue, _IndexAdd, _Put):
    register_op(_c)


@tensor_method("scatter_add")
@autocast_policy("promote", cpu=None)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:  # noqa: A002
    """A copy of input with src[i][j] added at [i][index[i][j]] (dim = 1; repeats add up);
    d input = g, d src = g gathered at index."""
    require_tensor("scatter_add", input)
    require_tensor("scatter_add", index, "index", 3)
    require_tensor("scatter_add", src, "src", 4)
    if input.ndim == 0:  # a 0-d input is a 1-element vector here, as in PyTorch
        return fresh(scatter_add(input.reshape(1), dim, index.reshape(-1),
                                 src.reshape(-1)).reshape(()))
    key, part_key, flat = _scatter_key("scatter_add", input, dim, index, src, True)
    along = (_wrap_dim(dim, input.ndim, "scatter_add"), index, flat)
    return _ScatterAdd.apply(input, src, key, part_key, along)  # (ScatterAddBackward0)


@tensor_method("scatter")
def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None,  # noqa: A002
            reduce=None) -> Tensor:
    """A copy of input with src[i][j] (or ``value``) written at [i][index[i][j]] (dim = 1);
    d input = g where nothing was written, d src = g gathered at index. PyTorch's deprecated
    ``reduce='add' | 'multiply'`` accumulates instead: scatter_reduce's 'sum' / 'prod' with
    include_self (differentiable here; PyTorch's has no derivative)."""
    require_tensor("scatter", input)
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing 1 required argument: 'src' or 'value'")
    if not isinstance(src, Tensor):
        dtypes.check_value_fits("scatter", src, input.dtype)
    if reduce is not None:
        modes = {"add": "sum", "multiply": "prod"}
        if reduce not in modes:
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
        from tgrad.ops.scatter_reduce import scatter_reduce
        if not isinstance(src, Tensor):
            src = full(tuple(index.shape), src, dtype=input.dtype, device=input.device)
        return scatter_reduce(input, dim, index, src, modes[reduce], include_self=True)
    if input.ndim == 0:  # a 0-d input is a 1-element vector here, as in PyTorch
        flat = src.reshape(-1) if isinstance(src, Tensor) else src
        return fresh(scatter(input.reshape(1), dim, index.reshape(-1), flat).reshape(()))
    key, part_key, flat = _scatter_key("scatter", input, dim, index, src, True)
    along = (_wrap_dim(dim, input.ndim, "scatter"), index, flat)
    if isinstance(src, Tensor):  # (one ScatterBackward0 node; a number: ScatterBackward1)
        return _Scatter.apply(input, src, key, part_key, along)
    return _ScatterValue.apply(input, src, key, along)


@tensor_method("index_add")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,  # noqa: A002
              alpha=1) -> Tensor:
    """A copy of input with alpha * source's slices added at ``index`` along ``dim``."""
    require_tensor("index_add", input)
    require_tensor("index_add", index, "index", 3)
    require_tensor("index_add", source, "source", 4)
    if input.ndim == 0:  # a 0-d input is a 1-element vector here, as in PyTorch
        if source.ndim:  # (PyTorch's check: the source of a 0-d input is 0-d too)
            raise RuntimeError(f"index_add(): source tensor shape must match self tensor "
                               f"shape, excluding the specified dimension. Got self.shape = "
                               f"[] source.shape = {list(source.shape)}")
        return fresh(index_add(input.reshape(1), dim, index.reshape(-1), source.reshape(-1),
                               alpha=alpha).reshape(()))
    d = _wrap_dim(dim, input.ndim, "index_add")
    if index.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    _check_index("index_add", input, index, d, input.shape[d] if input.ndim else 1)
    want = input.shape[:d] + (index.numel(),) + input.shape[d + 1:]
    if source.shape != want or source.dtype is not input.dtype:
        raise RuntimeError(f"index_add(): source of shape {list(source.shape)} and dtype "
                           f"{source.dtype.name} must have shape {list(want)} and dtype "
                           f"{input.dtype.name}")
    # alpha converted to input's dtype as PyTorch's index_add does (no error for a float
    # alpha on an integer tensor, unlike add): checked for overflow, then truncated toward
    # zero for integers, any nonzero alpha is True for bool
    dtypes.check_value_fits("index_add", alpha, input.dtype)
    if input.dtype is dtypes.bool_:
        alpha = bool(alpha)
    elif not (input.dtype.is_floating_point or input.dtype.is_complex):
        alpha = math.trunc(alpha)
    nkey, _ = normalize_key((slice(None),) * d + (index.reshape(-1),), input.device)
    return _IndexAdd.apply(input, source, nkey, alpha, (d, index))  # (IndexAddBackward0)


def nonzero(input: Tensor, *, as_tuple: bool = False):  # noqa: A002
    """Indices of the nonzero elements: an int64 (count, ndim) tensor, or one 1-D tensor
    per dim with ``as_tuple`` (read on the host: the count decides the shape)."""
    require_tensor("nonzero", input)
    dtypes.refuse_float8("nonzero_count_cpu", input.dtype)
    values = np.asarray(input.detach().numpy(force=True))
    idx = np.argwhere(values.reshape(values.shape or (1,)) != 0).astype(np.int64)
    if as_tuple:  # a 0-d input counts as 1-D: one index tensor
        return tuple(tensor(np.ascontiguousarray(idx[:, k]), device=input.device)
                     for k in range(idx.shape[1]))
    return tensor(idx[:, :input.ndim].reshape(len(idx), input.ndim), device=input.device)


tensor_method("nonzero")(nonzero)


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """nonzero(input) as one (count, ndim) tensor."""
    require_tensor("argwhere", input)
    return nonzero(input)


tensor_method("argwhere")(argwhere)
