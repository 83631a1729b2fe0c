"""PyTorch's diagonal, split, stack and product ops beyond the core set, composed of
existing tgrad ops (no kernel of their own: they run and differentiate wherever their parts
do; ``diagonal`` is a view op of its own).

Views and shapes:

- ``diagonal(x, offset, dim1, dim2)``: the elements x[..., i + r0, ..., i + c0, ...]
  (r0 = max(-offset, 0), c0 = max(offset, 0)) as the last dim, always a **view** (as in
  PyTorch): the backend's as_strided from element (r0, c0) with stride s1 + s2 along the
  diagonal, the other dims keeping theirs;  d x = zeros with g written on that diagonal.
- ``x.unfold(dim, size, step)``: the windows x[..., i step : i step + size, ...] along dim
  (n = (x.shape[dim] - size) // step + 1 of them) as that dim, each window's elements as a
  new last dim; a **view** (as_strided: dim's stride times step, the new dim dim's stride);
  d x = zeros with g's windows index_added back at i step + j (overlaps add up).
- ``diag_embed(x, offset, dim1, dim2)``: zeros with x's last dim written on a diagonal of
  the new dims (an indexed write; d x = that diagonal of g).
- ``tensor_split``/``hsplit``/``vsplit``/``dsplit``: views (narrow / slices);
  ``dstack``/``column_stack``/``row_stack``: cat of ``atleast_3d``/(n, 1)-shaped/
  ``atleast_2d`` inputs; ``atleast_3d``: views.
- ``rot90(x, k, dims)``: flip one dim then transpose (k = 1, 3), flip both (k = 2), as
  PyTorch.
- ``tril_indices``/``triu_indices(row, col, offset)``: (2, N) row-major coordinates.
- ``kron(a, b)``: a reshaped to (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...),
  merged to (a0 b0, a1 b1, ...).
- ``tensordot(a, b, dims)``: permute the contracted dims together, one matmul of
  (free_a, K) @ (K, free_b); a size-1 contracted dim against size n sums the other operand
  over it first (as PyTorch).
- ``aminmax(x, dim, keepdim)``: (amin, amax) as the named tuple (min, max).
- ``as_strided(x, size, stride, storage_offset)``: a **view** of x's storage with the given
  geometry (element strides, absolute storage offset; None keeps x's offset), bounds-checked
  against the storage; d x (PyTorch's AsStridedBackward) = g scatter-added into a zero
  "storage" by the view's geometry, read back by x's geometry (divided by how often x's own
  geometry reads each element when x overlaps itself). An in-place write through it is
  replayed on the base by storage geometry (on a stand-in laid out as the base was when the
  base's gradient is re-routed, as PyTorch's CopySlices).
"""

from __future__ import annotations

import math

import numpy as np

from tgrad import dtypes, return_types
from tgrad._autocast import autocast_policy
from tgrad._layout import check_layout
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import STATE, is_grad_enabled, no_grad
from tgrad.ops import composite as cp
from tgrad.ops._common import (
    backend_of,
    fresh,
    make_view,
    register_op,
    require_tensor,
    tensor_method,
    view_apply,
    wrap,
)
from tgrad.ops.creation import arange, tensor, zeros
from tgrad.ops.index import getitem
from tgrad.ops.reduce import amax, amin
from tgrad.ops.shape import _tensor_list, cat, check_tensor_seq, narrow, permute, transpose
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["diagonal", "diag_embed", "tensor_split", "hsplit", "vsplit", "dsplit",
           "dstack", "column_stack", "row_stack", "atleast_3d", "rot90", "tril_indices",
           "triu_indices", "kron", "tensordot", "aminmax", "unfold", "as_strided"]

aminmax_result = return_types.aminmax


# ------------------------------------------------------------------------------ diagonals
class Diagonal(Function):
    """y = the ``offset``-th diagonal of x's (d1, d2) planes as the last dim: a view of x's
    storage (as_strided; the other dims keep their strides, the diagonal has s1 + s2);
    dx = zeros of x's shape with g written on that diagonal."""

    name = "diagonal"
    node_name = "DiagonalBackward0"

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        r0, c0 = max(-offset, 0), max(offset, 0)
        length = max(0, min(x.shape[d1] - r0, x.shape[d2] - c0))
        rest = [k for k in range(x.ndim) if k not in (d1, d2)]
        st = x.stride()
        arr = backend_of(x).as_strided(  # from the diagonal's first element, (r0, c0)
            x._data, tuple([x.shape[k] for k in rest]) + (length,),
            tuple([st[k] for k in rest]) + (st[d1] + st[d2],),
            r0 * st[d1] + c0 * st[d2] if length else 0)
        ctx.shape, ctx.args = x.shape, (offset, d1, d2)
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        offset, d1, d2 = ctx.args
        if g.device.type == "cpu" and not is_grad_enabled():  # (create_graph: index_put)
            out = np.zeros(ctx.shape, g.dtype.np)
            _write_diagonal(out, g._data, offset, d1, d2)
            return wrap(out, g.device), None, None, None
        nd = len(ctx.shape)
        rest = [k for k in range(nd) if k not in (d1, d2)]
        order = rest + [d1, d2]  # g's dims: rest..., diagonal
        out = zeros(tuple(ctx.shape[k] for k in order), dtype=g.dtype, device=g.device)
        i = arange(g.shape[-1], device=g.device)
        out[..., i + max(-offset, 0), i + max(offset, 0)] = g
        return permute(out, np.argsort(order).tolist()), None, None, None


register_op(Diagonal)


def _write_diagonal(a: np.ndarray, values: np.ndarray, offset: int, d1: int, d2: int) -> None:
    """a's ``offset``-th diagonal of its (d1, d2) planes = values (rest dims..., length),
    through a strided view of a (the one Diagonal's forward makes): element (i + r0, i + c0)
    of a plane lies i (s1 + s2) past (r0, c0)."""
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = values.shape[-1]
    if not length:
        return
    key = [slice(None)] * a.ndim
    key[d1], key[d2] = slice(r0, None), slice(c0, None)
    start = a[tuple(key)]
    rest = [k for k in range(a.ndim) if k not in (d1, d2)]
    st = a.strides
    np.lib.stride_tricks.as_strided(start, tuple(a.shape[k] for k in rest) + (length,),
                                    tuple(st[k] for k in rest) + (st[d1] + st[d2],))[...] = values


class DiagonalCopy(Diagonal):
    """diagonal_copy (torch.diag of a 2-D x): the ``offset``-th diagonal of x's (d1, d2)
    planes as a new C-contiguous tensor, PyTorch's node DiagonalBackward0_copy (edge x).
    dx = Diagonal's: zeros of x's shape with g written on that diagonal (an index_put of
    g: it differentiates again)."""

    name = "diagonal_copy"
    node_name = "DiagonalBackward0_copy"
    saved_attributes = {"_saved_dim1": lambda node: node.args[1],
                        "_saved_dim2": lambda node: node.args[2],
                        "_saved_offset": lambda node: node.args[0],
                        "_saved_self_sym_sizes": "shape"}

    @staticmethod
    def forward(ctx, x, offset, d1, d2):
        view = Diagonal.forward(ctx, x, offset, d1, d2)
        return wrap(backend_of(x).clone(view._data), x.device)


class DiagEmbed(Function):
    """y = zeros with x's last dim (n) written on the ``offset``-th diagonal of the (d1,
    d2) planes of size n + |offset| (diag_embed; torch.diag of a 1-D x): one node,
    PyTorch's DiagEmbedBackward0 (edge x); y is a new C-contiguous tensor of x.ndim + 1
    dims, the others x's leading ones in order.
        dx = g.diagonal(offset, d1, d2)   (the diagonal read back: a view of g, PyTorch's)
    ``dims`` are d1, d2 as the caller gave them (saved so: PyTorch's _saved_dim1/2), ``wd``
    wrapped."""

    name = "diag_embed"
    node_name = "DiagEmbedBackward0"
    saved_attributes = {"_saved_dim1": lambda node: node.dims[0],
                        "_saved_dim2": lambda node: node.dims[1],
                        "_saved_offset": "offset"}

    @staticmethod
    def forward(ctx, x, offset, dims, wd):
        ctx.offset, ctx.dims, ctx.wd = offset, dims, wd
        nd = x.ndim + 1
        n = x.shape[-1]
        m = n + abs(offset)
        order = [None] * nd
        order[wd[0]], order[wd[1]] = nd - 2, nd - 1
        rest = iter(range(nd - 2))
        order = [next(rest) if o is None else o for o in order]
        if x.device.type == "cpu":  # x written through a strided view of out's diagonal
            out = np.zeros(x.shape[:-1] + (m, m), x.dtype.np)
            _write_diagonal(out, x._data, offset, nd - 2, nd - 1)
            plain = order == sorted(order)
            return wrap(out if plain else out.transpose(order).copy(order="C"), x.device)
        out = zeros(x.shape[:-1] + (m, m), dtype=x.dtype, device=x.device)
        i = arange(n, device=x.device)
        out[..., i + max(-offset, 0), i + max(offset, 0)] = x
        # a new row-major tensor, as PyTorch's (not a view of the (..., m, m) temporary)
        y = permute(out, order)
        return wrap(backend_of(x).clone(y._data), x.device)

    @staticmethod
    def backward(ctx, g):
        return g.diagonal(ctx.offset, *ctx.wd), None, None, None


register_op(DiagonalCopy)
register_op(DiagEmbed)


@tensor_method("diagonal")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The ``offset``-th diagonal of the (dim1, dim2) planes, as the last dim (a view):
    out[..., i] = input[..., i + max(-offset, 0) (dim1), ..., i + max(offset, 0) (dim2)]."""
    require_tensor("diagonal", input)
    offset = _int_arg("diagonal", "offset", offset)
    d1 = _wrap_dim(dim1, input.ndim, "diagonal")
    d2 = _wrap_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return view_apply(Diagonal, input, offset, d1, d2)


class Unfold(Function):
    """y[..., i, ..., j] = x[..., i step + j, ...] (i along ``dim``, j the new last dim): a
    view of x's storage; dx = zeros with g's windows added back (index_add along dim)."""

    name = "unfold"
    node_name = "UnfoldBackward0"

    @staticmethod
    def forward(ctx, x, d, size, step):
        n = (x.shape[d] - size) // step + 1
        st = x.stride()
        arr = backend_of(x).as_strided(
            x._data, x.shape[:d] + (n,) + x.shape[d + 1:] + (size,),
            st[:d] + (st[d] * step,) + st[d + 1:] + (st[d],))
        ctx.shape, ctx.args = x.shape, (d, size, step)
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        d, size, step = ctx.args
        n = g.shape[d]
        # g (..., n, ..., size) -> (..., n * size, ...) with window i's element j at i*size+j
        src = g.movedim(-1, d + 1).flatten(d, d + 1)
        pos = (arange(n, device=g.device) * step).unsqueeze(-1) + arange(size, device=g.device)
        out = zeros(ctx.shape, dtype=g.dtype, device=g.device)
        return out.index_add(d, pos.reshape(-1), src), None, None, None


register_op(Unfold)


@tensor_method("unfold")
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """Tensor.unfold: all windows of ``size`` elements, ``step`` apart, along ``dimension``,
    as a view: that dim becomes the window index ((len - size) // step + 1 windows) and a new
    last dim holds each window. A 0-d input gives shape (size,), size 0 or 1 (PyTorch)."""
    size = _int_arg("unfold", "size", size)
    step = _int_arg("unfold", "step", step)
    d = _wrap_dim(dimension, max(input.ndim, 1), "unfold")
    length = input.shape[d] if input.ndim else 1
    if size < 0:
        raise RuntimeError(f"unfold: size is {size} but must be >= 0")
    if size > length:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {length} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    if input.ndim == 0:
        return input.unsqueeze(0)[:size]  # PyTorch: shape (size,)
    return view_apply(Unfold, input, d, size, step)


@tensor_method("diag_embed")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """A tensor of one more dim, zero but for input's last dim written on the ``offset``-th
    diagonal of its (dim1, dim2) planes (of size n + |offset|); the other dims are input's
    leading ones, in order."""
    require_tensor("diag_embed", input)
    offset = _int_arg("diag_embed", "offset", offset)
    if input.ndim == 0:
        raise IndexError("diag_embed: input must be at least 1-dimensional (its last dim "
                         "goes on the diagonal)")
    nd = input.ndim + 1
    d1 = _wrap_dim(dim1, nd, "diag_embed")
    d2 = _wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return DiagEmbed.apply(input, offset, (dim1, dim2), (d1, d2))


# ------------------------------------------------------------------------------ splits, stacks
def _the_split(op: str, indices_or_sections, sections, indices, tensor_indices_or_sections=None):
    """The one split argument of tensor_split / hsplit / vsplit / dsplit, given positionally or
    by PyTorch's keywords ``sections`` (an int), ``indices`` (a sequence of ints) or, for
    tensor_split, ``tensor_indices_or_sections`` (a tensor)."""
    given = [v for v in (indices_or_sections, sections, indices, tensor_indices_or_sections)
             if v is not None]
    if len(given) != 1:
        kinds = "sections (an int), indices (a sequence of ints)"
        kinds += (" or tensor_indices_or_sections (a tensor)" if op == "tensor_split" else "")
        raise TypeError(f"{op}() takes exactly one of {kinds}, got {len(given)}")
    if sections is not None and isinstance(sections, (list, tuple, Tensor)):
        raise TypeError(f"{op}(): argument 'sections' must be int, not "
                        f"{type(sections).__name__}")
    if indices is not None and not isinstance(indices, (list, tuple)):
        raise TypeError(f"{op}(): argument 'indices' must be tuple of ints, not "
                        f"{type(indices).__name__}")
    return given[0]


@tensor_method("tensor_split")
def tensor_split(input: Tensor, indices_or_sections=None, dim: int = 0, *, sections=None,  # noqa: A002
                 indices=None, tensor_indices_or_sections=None) -> tuple:
    """Views along ``dim``: ``sections`` (an int) nearly equal pieces (the first size % n one
    longer), or the pieces between the listed ``indices`` (Python slice rules: negative
    from the end, clamped, decreasing ones empty). A tensor argument: 0-d int64 = sections,
    1-D int64 = indices. Positional, or by PyTorch's keywords ``sections``, ``indices``,
    ``tensor_indices_or_sections``."""
    require_tensor("tensor_split", input)
    if tensor_indices_or_sections is not None:
        require_tensor("tensor_split", tensor_indices_or_sections,
                       "tensor_indices_or_sections", None)
    indices_or_sections = _the_split("tensor_split", indices_or_sections, sections, indices,
                                     tensor_indices_or_sections)
    if input.ndim == 0:
        raise RuntimeError(f"tensor_split expected at least a 1-dimensional tensor, but got a "
                           f"tensor with {input.ndim} dims")
    d = _wrap_dim(dim, input.ndim, "tensor_split")
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios.dtype is not dtypes.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have "
                               f"dtype of long, but got {ios.dtype.name}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.ndim} dims")
        ios = int(ios.item()) if ios.ndim == 0 else [int(v) for v in ios.tolist()]
    key = (slice(None),) * d
    if isinstance(ios, (list, tuple)):
        bounds = [None] + [_int_arg("tensor_split", "indices", v) for v in ios] + [None]
        return tuple(getitem(input, key + (slice(lo, hi),))
                     for lo, hi in zip(bounds[:-1], bounds[1:]))
    sections = _int_arg("tensor_split", "sections", ios)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    q, r = divmod(input.shape[d], sections)
    out, start = [], 0
    for k in range(sections):
        size = q + (k < r)
        out.append(narrow(input, d, start, size))
        start += size
    return tuple(out)


def _split_dim(op: str, input: Tensor, need: int, dim: int, indices_or_sections,  # noqa: A002
               sections, indices) -> tuple:
    """hsplit/vsplit/dsplit: tensor_split along ``dim`` of an input of >= ``need`` dims; an
    int must divide the dim's size. The split is given positionally or by PyTorch's keywords
    ``sections`` (an int) or ``indices`` (a sequence of ints)."""
    indices_or_sections = _the_split(op, indices_or_sections, sections, indices)
    if input.ndim < need:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {input.ndim} dimensions!")
    if not isinstance(indices_or_sections, (list, tuple, Tensor)):
        n = _int_arg(op, "sections", indices_or_sections)
        size = input.shape[dim]
        if n == 0 or size % n:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {n}!")
    return tensor_split(input, indices_or_sections, dim)


@tensor_method("hsplit")
def hsplit(input: Tensor, indices_or_sections=None, *, sections=None,  # noqa: A002
           indices=None) -> tuple:
    """tensor_split along dim 1 (dim 0 of a 1-D tensor); an int must divide that dim."""
    require_tensor("hsplit", input)
    dim = 1 if input.ndim > 1 else 0
    return _split_dim("hsplit", input, 1, dim, indices_or_sections, sections, indices)


@tensor_method("vsplit")
def vsplit(input: Tensor, indices_or_sections=None, *, sections=None,  # noqa: A002
           indices=None) -> tuple:
    """tensor_split along dim 0 of a tensor of >= 2 dims."""
    require_tensor("vsplit", input)
    return _split_dim("vsplit", input, 2, 0, indices_or_sections, sections, indices)


@tensor_method("dsplit")
def dsplit(input: Tensor, indices_or_sections=None, *, sections=None,  # noqa: A002
           indices=None) -> tuple:
    """tensor_split along dim 2 of a tensor of >= 3 dims."""
    require_tensor("dsplit", input)
    return _split_dim("dsplit", input, 3, 2, indices_or_sections, sections, indices)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (views): 0-d -> (1, 1, 1), (n,) -> (1, n, 1),
    (m, n) -> (m, n, 1); one tensor in, one out."""
    out = []
    for t in cp._tensor_args("atleast_3d", tensors):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = t.unsqueeze(-1)
        out.append(t)
    return cp.one_or_tuple(tensors, out)


def _nonempty(op: str, tensors) -> list:
    """``tensors`` as a list: a non-empty list or tuple of tensors (PyTorch's errors)."""
    return _tensor_list(op, tensors)


def dstack(tensors) -> Tensor:
    """cat along dim 2 of the tensors made at least 3-D."""
    return cat([atleast_3d(t) for t in _nonempty("dstack", tensors)], 2)


def column_stack(tensors) -> Tensor:
    """cat along dim 1, 0-d and 1-D tensors taken as columns (n, 1)."""
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t
                for t in _nonempty("column_stack", tensors)], 1)


def row_stack(tensors) -> Tensor:
    """Alias of ``vstack``."""
    check_tensor_seq("row_stack", tensors)
    return cp.vstack(tensors)


@tensor_method("rot90")
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """A copy rotated by k * 90 degrees in the plane ``dims``, from dims[0] towards dims[1]:
    k = 1: flip(dims[1]) then transpose; 2: flip both; 3: flip(dims[0]) then transpose."""
    require_tensor("rot90", input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    a, b = (_wrap_dim(d, input.ndim, "rot90") for d in dims)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k = _int_arg("rot90", "k", k) % 4
    if k == 1:  # (PyTorch's strides: the flip's transposed; a new tensor, not a view of it)
        return fresh(transpose(cp.flip(input, (b,)), a, b))
    if k == 2:
        return cp.flip(input, (a, b))
    if k == 3:
        return fresh(transpose(cp.flip(input, (a,)), a, b))
    return input.clone()


def _triangle_indices(op: str, row: int, col: int, offset: int, dtype, device,
                      lower: bool) -> Tensor:
    row, col = _int_arg(op, "row", row), _int_arg(op, "col", col)
    offset = _int_arg(op, "offset", offset)
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dt = dtypes.as_dtype(dtype)
    if dt not in (dtypes.int64, dtypes.int32):
        raise NotImplementedError(f"\"{op}\" not implemented for '{dt.name}' (int64 or int32 "
                                  f"indices only, as in PyTorch)")
    # coordinates of a shape, not tensor data: computed on the host, as arange's are
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return tensor(np.stack([r, c]).reshape(2, -1), dtype=dt, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=dtypes.int64,
                 device=None, layout=None) -> Tensor:
    """The (2, N) coordinates (row-major) of the lower triangle of a (row, col) matrix: the
    elements with col - row <= offset."""
    check_layout("tril_indices", layout)
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=dtypes.int64,
                 device=None, layout=None) -> Tensor:
    """The (2, N) coordinates (row-major) of the upper triangle: col - row >= offset."""
    check_layout("triu_indices", layout)
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


# ------------------------------------------------------------------------------ products
@tensor_method("kron")
def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Kronecker product: out[i * q + j] = input[i] other[j] per dim (shapes padded with
    leading 1s to the same number of dims); out.shape[d] = p_d q_d."""
    require_tensor("kron", input)
    require_tensor("kron", other, "other", 2)
    nd = max(input.ndim, other.ndim)
    # PyTorch's graph: _unsafe_view of each operand to (p_0, 1, p_1, 1, ...) / (1, q_0,
    # 1, q_1, ...), their product, _unsafe_view of it to (p_0 q_0, ...): UnsafeViewBackward0
    # over MulBackward0 over two UnsafeViewBackward0 (their arrays views of the operands'
    # where the strides allow, else copies; PyTorch refuses the copy case)
    from tgrad.ops.shape import UnsafeView
    s = (1,) * (nd - input.ndim) + input.shape
    t = (1,) * (nd - other.ndim) + other.shape
    a = UnsafeView.apply(input, tuple(n for p in s for n in (p, 1)))
    b = UnsafeView.apply(other, tuple(n for q in t for n in (1, q)))
    return UnsafeView.apply(a * b, tuple(p * q for p, q in zip(s, t)))


def _tensordot_dims(a: Tensor, b: Tensor, dims) -> tuple[list, list]:
    if isinstance(dims, Tensor):
        dims = dims.tolist() if dims.numel() > 1 else int(dims.item())
    if isinstance(dims, (list, tuple)):
        if len(dims) != 2:
            raise RuntimeError(f"tensordot expects dims to be an int or a pair of dim lists, "
                               f"got {dims}")
        da, db = ([v] if isinstance(v, int) else list(v) for v in dims)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
        return da, db
    n = _int_arg("tensordot", "dims", dims)
    if n < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
    if n > a.ndim or n > b.ndim:
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
    return list(range(-n, 0)), list(range(n))


@autocast_policy("promote", cpu=None)
def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Sum over the paired dims: dims = n (a's last n with b's first n) or (dims_a, dims_b);
    out.shape = a's other dims + b's other dims. A contracted dim of size 1 against size n
    sums the other operand over that dim (PyTorch broadcasts it)."""
    require_tensor("tensordot", a)
    require_tensor("tensordot", b, "b", 2)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"both inputs should have same dtype (tensordot got {a.dtype.name} "
                           f"and {b.dtype.name})")
    da, db = _tensordot_dims(a, b, dims)
    wa = [_wrap_dim(d, a.ndim, "tensordot") for d in da]
    wb = [_wrap_dim(d, b.ndim, "tensordot") for d in db]
    for w in (wa, wb):
        if len(set(w)) != len(w):
            dup = next(d for d in w if w.count(d) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    for i, j, gi, gj in zip(wa, wb, da, db):
        p, q = a.shape[i], b.shape[j]
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {p} "
                               f"in dim {gi} and second has size {q} in dim {gj}")
        if p == 1 and q != 1:
            b = b.sum(j, keepdim=True)
        elif q == 1 and p != 1:
            a = a.sum(i, keepdim=True)
    free_a = [d for d in range(a.ndim) if d not in wa]
    free_b = [d for d in range(b.ndim) if d not in wb]
    k = math.prod(a.shape[d] for d in wa)
    x = permute(a, free_a + wa).reshape(math.prod(a.shape[d] for d in free_a), k)
    y = permute(b, wb + free_b).reshape(k, math.prod(b.shape[d] for d in free_b))
    return (x @ y).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


@tensor_method("aminmax")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """(min, max) of all elements or along ``dim``: amin and amax (NaN propagates; the
    gradient is shared evenly by tied extremes, as amin/amax)."""
    require_tensor("aminmax", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return aminmax_result(amin(input, (), keepdim), amax(input, (), keepdim))
    d = _wrap_dim(dim, input.ndim, "aminmax")
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return aminmax_result(amin(input, d, keepdim), amax(input, d, keepdim))


# ------------------------------------------------------------------------------ as_strided
def _root_in_dtype(x: Tensor):
    """x's storage root, read in x's dtype: a real view of a complex root (.real, .imag,
    view_as_real) counts its storage in real elements, as PyTorch's (and a complex view
    of a real root in complex ones); a root laid out otherwise is left as is."""
    root = x._storage.root
    if (isinstance(root, np.ndarray) and root.dtype != x._data.dtype and root.size
            and root.flags.c_contiguous):
        try:
            return root.reshape(-1).view(x._data.dtype)
        except ValueError:
            pass
    return root


def _storage_span(x: Tensor) -> tuple[int, int]:
    """[lo, hi) element offsets of x's storage root (offset 0 = the root's first element)."""
    root = _root_in_dtype(x)
    if not isinstance(root, np.ndarray):  # DeviceArray (cuda): offsets are absolute
        return root.span() if root.size else (root.offset, root.offset)
    if root.size == 0:
        return 0, 0
    lo = hi = 0
    for n, st in zip(root.shape, root.strides):
        st //= root.itemsize
        if st >= 0:
            hi += (n - 1) * st
        else:
            lo += (n - 1) * st
    return lo, hi + 1


def _geometry_index(size: tuple, stride: tuple, offset: int) -> np.ndarray:
    """The storage offset of every element of the geometry (an int64 array of ``size``)."""
    idx = np.full(size, offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[d] = n
        idx = idx + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return idx


class AsStrided(Function):
    """y = the view of x's storage with geometry (size, stride, offset);
    dx = zeros over the storage, g added at y's positions, read at x's positions (divided by
    each position's multiplicity in x's geometry), as PyTorch's as_strided_backward."""

    name = "as_strided"
    node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        root = _root_in_dtype(x)
        if isinstance(root, np.ndarray):
            lo, hi = _storage_span(x)
            flat = np.lib.stride_tricks.as_strided(root, (max(hi, 1),), (root.itemsize,))
            start = flat[offset:]
        else:
            start = root.view((), (), offset)
        arr = backend_of(x).as_strided(start, size, stride)
        ctx.geom = (x.shape, x.stride(), x.storage_offset()), (size, stride, offset)
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        (xs, xst, xoff), (ys, yst, yoff) = ctx.geom
        gx = zeros(xs, dtype=g.dtype, device=g.device)
        if not gx.numel() or not g.numel():
            return gx, None, None, None
        xi, yi = _geometry_index(xs, xst, xoff), _geometry_index(ys, yst, yoff)
        lo = min(int(xi.min()), int(yi.min()))
        n = max(int(xi.max()), int(yi.max())) + 1 - lo
        buf = zeros((n,), dtype=g.dtype, device=g.device)
        buf = buf.index_add(0, tensor((yi - lo).ravel(), device=g.device), g.reshape(-1))
        gx = buf[tensor((xi - lo).ravel(), device=g.device)].reshape(xs)
        count = np.bincount((xi - lo).ravel(), minlength=n)[(xi - lo)]
        if count.max() > 1:  # x reads some positions more than once (e.g. expanded)
            gx = gx / tensor(count, dtype=g.dtype, device=g.device)
        return gx, None, None, None


register_op(AsStrided)


def storage_geometry(t: Tensor) -> tuple:
    """(shape, stride, storage offset, storage size), offsets from the storage's start."""
    lo, hi = _storage_span(t)
    return t.shape, t.stride(), t.storage_offset() - lo, hi - lo


def with_geometry(t: Tensor, geom: tuple, fill=None) -> Tensor:
    """A tensor laid out in new memory by ``geom`` (see storage_geometry) holding t's values
    (copied, so differentiable in t), or ``fill`` (then t only gives dtype and device)."""
    shape, stride, offset, n = geom
    from tgrad.ops.creation import full
    buf = full((n,), 0 if fill is None else fill, dtype=t.dtype, device=t.device)
    if fill is not None:
        return AsStrided.apply(buf, shape, stride, offset)
    return as_strided_view(AsStrided, buf, shape, stride, offset).copy_(t)


def _as_strided_replay(t: Tensor, size: tuple, stride: tuple, offset: int,
                       geom: tuple) -> Tensor:
    """as_strided (``offset`` from the storage's start) of ``t`` standing for a base laid
    out by ``geom``: a view when t is laid out so, else of a copy laid out so."""
    if storage_geometry(t) != geom:
        t = with_geometry(t, geom)
    return AsStrided.apply(t, size, stride, offset + _storage_span(t)[0])


def as_strided_view(cls, x: Tensor, size: tuple, stride: tuple, offset: int) -> Tensor:
    """``cls.apply`` (AsStrided or its in-place form) and the view chain that replays it on
    the base (for in-place writes through it)."""
    out = cls.apply(x, size, stride, offset)
    if STATE.enabled and (x._base is None or x._view_chain is not None):
        root = x if x._base is None else x._base
        pre = ()
        if root.dtype.is_complex and not x.dtype.is_complex:  # x: .real/.imag/view_as_real
            from tgrad.ops.complex_ops import view_as_real  # of a complex base: replayed on
            pre = ((view_as_real, ()),)  # the base read as reals (offsets in real units)
            with no_grad():
                root = view_as_real(root)
        rel = offset - _storage_span(root)[0]
        out._view_chain = pre + (
            (_as_strided_replay, (size, stride, rel, storage_geometry(root))),)
        if x._multi_output_view:  # a view of a split's output is one too (PyTorch)
            out._multi_output_view = True
    return out


def check_as_strided(op: str, x: Tensor, size, stride, storage_offset) -> tuple:
    """(size, stride, offset) as int tuples, or PyTorch's errors."""
    size = tuple(_int_arg(op, "size", s) for s in size)
    stride = tuple(_int_arg(op, "stride", s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"{op}: Negative dimension sizes are not allowed, got {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    offset = x.storage_offset() if storage_offset is None else _int_arg(
        op, "storage_offset", storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    lo, hi = _storage_span(x)
    if math.prod(size):
        need = offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1
        if need > hi:
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{offset}, and itemsize {x.dtype.itemsize} requiring a storage size of "
                f"{need * x.dtype.itemsize} are out of bounds for storage of size "
                f"{(hi - lo) * x.dtype.itemsize}")
    return size, stride, offset


@tensor_method("as_strided")
def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """A view of ``input``'s storage with shape ``size``, element strides ``stride`` and
    absolute ``storage_offset`` (None: input's own)."""
    size, stride, offset = check_as_strided("as_strided", input, size, stride, storage_offset)
    return as_strided_view(AsStrided, input, size, stride, offset)


def replay_on_base(view: Tensor) -> Tensor:
    """``view``'s chain replayed on its base; when the base's shape or strides were changed
    in place since (``x.t_()``), the chain no longer gives the view, and the view is
    re-derived from the storage geometry (as_strided on the base, as PyTorch does), its
    chain replaced (None when the base does not span its storage, see _spans_storage)."""
    base = view._base
    t = base
    try:
        for fn, args in view._view_chain:
            t = fn(t, *args)
    except (RuntimeError, ValueError, IndexError):  # the base's new geometry (x.t_(),
        if not base._geometry_changed:  # as_strided_) no longer fits the chain (view(-1)
            raise  # of a transpose...); any other error is a bug
        t = None
    if not (base._geometry_changed or view._geometry_changed):
        # neither tensor's geometry was changed in place (x.t_(), as_strided_, resize_,
        # set_, .data =, an out= resize): the recorded chain gives the view as it was made
        return t
    if (t is not None and t._data.shape == view._data.shape
            and t._data.strides == view._data.strides and t.data_ptr() == view.data_ptr()):
        return t
    out = as_strided_view(AsStrided, base, view.shape, view.stride(), view.storage_offset())
    view._view_chain = out._view_chain
    return out
