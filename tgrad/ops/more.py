"""More of PyTorch's ops, composed of existing tgrad ops (no primitive or kernel of their
own, so they run and differentiate wherever their parts do).

Views and shapes:

- ``diagonal(x, offset, dim1, dim2)``: the elements x[..., i + r0, ..., i + c0, ...]
  (r0 = max(-offset, 0), c0 = max(offset, 0)) as the last dim, always a **view** (as in
  PyTorch): the backend's as_strided from element (r0, c0) with stride s1 + s2 along the
  diagonal, the other dims keeping theirs;  d x = zeros with g written on that diagonal.
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

Maths (float16/bfloat16 computed in float32, rounded once):

- ``logaddexp(a, b)`` = max(a, b) + log1p(exp(-|a - b|)), with a - b taken as 0 where
  a == b (so equal infinities give +-inf, not NaN);  da = sigmoid(a - b) (1/2 on ties,
  through maximum's tie share).  ``logaddexp2`` = max + log1p(2^-|a - b|) / ln 2.
- ``hypot(a, b)`` = m sqrt(1 + (n / m)^2), m = max(|a|, |b|), n = min(|a|, |b|): no
  overflow for large values; inf where either is infinite (even with a NaN, as C's hypot);
  da = a / hypot (0 at a = b = 0 and at infinities, where PyTorch's a / hypot is NaN).
- ``copysign(a, b)`` = |a| with the sign of b (-0.0 counts as negative); da = sign of the
  result times sign(a) (0 at a = 0, as PyTorch); no gradient to b.
- ``signbit(x)``: x < 0, or x is -0.0 (atan2(x, -1) < 0). A NaN's sign bit is not
  visible to tgrad's ops: signbit(NaN) is False whatever its sign (PyTorch reads the bit).
- ``fmax``/``fmin``: where(a >= b or b is NaN, a, b) (<= for fmin): NaN only where both
  are; the gradient goes to the chosen operand (to a on ties, as PyTorch).
- ``float_power(a, b)`` = pow in float64.
- ``logcumsumexp(x, dim)``: a Hillis-Steele scan of logaddexp (log2(n) steps of
  y[k:] = logaddexp(y[k:], y[:-k])), stable without a global shift; O(n log n) work.
- ``cummax``/``cummin(x, dim)``: the indices by the same scan over (value, index) pairs
  (the later pair wins when its value is >= (<=) or NaN, unless the earlier is NaN: the last
  index of the running extreme, NaN sticking, as PyTorch); values = x at the indices, so
  d x scatter-adds g to them (PyTorch's rule).

Searching and counting (not differentiable; ``bincount`` with weights is, through
index_add):

- ``searchsorted(seq, values)``/``bucketize(values, boundaries)``: one stable argsort of
  values and sequence concatenated per row (values first for side='left', after for
  'right', so ties land on the right side), a cumsum of "is a sequence element" flags, read
  back at each value's position (a second argsort inverts the order). A NaN value gives
  len(seq), as PyTorch; NaNs in the sequence sort last (PyTorch's binary search gives
  undefined positions there).
- ``bincount``: index_add of the weights (or ones) into zeros(max(input) + 1, minlength).
- ``unique`` (dim=None; always sorted, which ``sorted=False`` allows) and
  ``unique_consecutive``: sort, flag the first element of each run of equal values (NaNs
  are all distinct, as PyTorch), cumsum of the flags = the inverse, index_add = counts.

One-argument ``where(condition)`` is not here: ``where`` lives in elementwise.py.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import no_grad
from tgrad.ops import composite as cp
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    backend_of,
    make_view,
    register_op,
    rounded_to,
    same_device,
    tensor_method,
    view_apply,
    widen_halves,
)
from tgrad.ops.creation import arange, ones, tensor, zeros
from tgrad.ops.gathering import index_add, take_along_dim
from tgrad.ops.index import getitem
from tgrad.ops.reduce import amax, amin, values_indices
from tgrad.ops.scan import cumsum
from tgrad.ops.shape import cat, narrow, permute, transpose
from tgrad.ops.sorting import _take, argsort, sort
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["diagonal", "diag_embed", "tensor_split", "hsplit", "vsplit", "dsplit", "dstack",
           "column_stack", "row_stack", "atleast_3d", "rot90", "tril_indices",
           "triu_indices", "kron", "tensordot", "aminmax", "logaddexp", "logaddexp2", "hypot",
           "copysign", "signbit", "fmax", "fmin", "float_power", "logcumsumexp", "cummax",
           "cummin", "searchsorted", "bucketize", "bincount", "unique", "unique_consecutive"]

aminmax_result = namedtuple("aminmax", ["min", "max"])


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
        be = backend_of(x)
        start = x._data
        if length:  # the first element of the diagonal (strides unchanged)
            key = [slice(None)] * x.ndim
            key[d1], key[d2] = slice(r0, None), slice(c0, None)
            start = be.basic_index(x._data, tuple(key))
        st = x.stride()
        arr = be.as_strided(start, tuple(x.shape[k] for k in rest) + (length,),
                            tuple(st[k] for k in rest) + (st[d1] + st[d2],))
        ctx.shape, ctx.args = x.shape, (offset, d1, d2)
        return make_view(x, arr)

    @staticmethod
    def backward(ctx, g):
        offset, d1, d2 = ctx.args
        nd = len(ctx.shape)
        rest = [k for k in range(nd) if k not in (d1, d2)]
        order = rest + [d1, d2]  # g's dims: rest..., diagonal
        out = zeros(tuple(ctx.shape[k] for k in order), dtype=g.dtype, device=g.device)
        i = arange(g.shape[-1], device=g.device)
        out[..., i + max(-offset, 0), i + max(offset, 0)] = g
        return permute(out, np.argsort(order).tolist()), None, None, None


register_op(Diagonal)


@tensor_method("diagonal")
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """The ``offset``-th diagonal of the (dim1, dim2) planes, as the last dim (a view):
    out[..., i] = input[..., i + max(-offset, 0) (dim1), ..., i + max(offset, 0) (dim2)]."""
    offset = _int_arg("diagonal", "offset", offset)
    d1 = _wrap_dim(dim1, input.ndim, "diagonal")
    d2 = _wrap_dim(dim2, input.ndim, "diagonal")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return view_apply(Diagonal, input, offset, d1, d2)


@tensor_method("diag_embed")
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: A002
    """A tensor of one more dim, zero but for input's last dim written on the ``offset``-th
    diagonal of its (dim1, dim2) planes (of size n + |offset|); the other dims are input's
    leading ones, in order."""
    offset = _int_arg("diag_embed", "offset", offset)
    nd = input.ndim + 1
    d1 = _wrap_dim(dim1, nd, "diag_embed")
    d2 = _wrap_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1]
    m = n + abs(offset)
    out = zeros(input.shape[:-1] + (m, m), dtype=input.dtype, device=input.device)
    i = arange(n, device=input.device)
    out[..., i + max(-offset, 0), i + max(offset, 0)] = input
    order = [None] * nd
    order[d1], order[d2] = nd - 2, nd - 1
    rest = iter(range(nd - 2))
    return permute(out, [next(rest) if o is None else o for o in order])


# ------------------------------------------------------------------------------ splits, stacks
@tensor_method("tensor_split")
def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple:  # noqa: A002
    """Views along ``dim``: ``sections`` (an int) nearly equal pieces (the first size % n one
    longer), or the pieces between the listed ``indices`` (Python slice rules: negative
    from the end, clamped, decreasing ones empty). A tensor argument: 0-d int64 = sections,
    1-D int64 = indices."""
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


def _split_dim(op: str, input: Tensor, indices_or_sections, need: int, dim: int) -> tuple:  # noqa: A002
    """hsplit/vsplit/dsplit: tensor_split along ``dim`` of an input of >= ``need`` dims; an
    int must divide the dim's size."""
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
def hsplit(input: Tensor, indices_or_sections) -> tuple:  # noqa: A002
    """tensor_split along dim 1 (dim 0 of a 1-D tensor); an int must divide that dim."""
    dim = 1 if input.ndim > 1 else 0
    return _split_dim("hsplit", input, indices_or_sections, 1, dim)


@tensor_method("vsplit")
def vsplit(input: Tensor, indices_or_sections) -> tuple:  # noqa: A002
    """tensor_split along dim 0 of a tensor of >= 2 dims."""
    return _split_dim("vsplit", input, indices_or_sections, 2, 0)


@tensor_method("dsplit")
def dsplit(input: Tensor, indices_or_sections) -> tuple:  # noqa: A002
    """tensor_split along dim 2 of a tensor of >= 3 dims."""
    return _split_dim("dsplit", input, indices_or_sections, 3, 2)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dims (views): 0-d -> (1, 1, 1), (n,) -> (1, n, 1),
    (m, n) -> (m, n, 1); one tensor in, one out."""
    out = []
    for t in cp._tensor_args(tensors):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = t.unsqueeze(-1)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _nonempty(op: str, tensors) -> list:
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


def dstack(tensors) -> Tensor:
    """cat along dim 2 of the tensors made at least 3-D."""
    return cat([atleast_3d(t) for t in _nonempty("dstack", tensors)], 2)


def column_stack(tensors) -> Tensor:
    """cat along dim 1, 0-d and 1-D tensors taken as columns (n, 1)."""
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t
                for t in _nonempty("column_stack", tensors)], 1)


row_stack = cp.vstack


@tensor_method("rot90")
def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """A copy rotated by k * 90 degrees in the plane ``dims``, from dims[0] towards dims[1]:
    k = 1: flip(dims[1]) then transpose; 2: flip both; 3: flip(dims[0]) then transpose."""
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
    if k == 1:
        return transpose(cp.flip(input, (b,)), a, b)
    if k == 2:
        return cp.flip(input, (a, b))
    if k == 3:
        return transpose(cp.flip(input, (a,)), a, b)
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
                 device=None) -> Tensor:
    """The (2, N) coordinates (row-major) of the lower triangle of a (row, col) matrix: the
    elements with col - row <= offset."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, device, True)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=dtypes.int64,
                 device=None) -> Tensor:
    """The (2, N) coordinates (row-major) of the upper triangle: col - row >= offset."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, device, False)


# ------------------------------------------------------------------------------ products
@tensor_method("kron")
def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Kronecker product: out[i * q + j] = input[i] other[j] per dim (shapes padded with
    leading 1s to the same number of dims); out.shape[d] = p_d q_d."""
    nd = max(input.ndim, other.ndim)
    if nd == 0:
        return input * other
    s = (1,) * (nd - input.ndim) + input.shape
    t = (1,) * (nd - other.ndim) + other.shape
    a = input.reshape([n for p in s for n in (p, 1)])
    b = other.reshape([n for q in t for n in (1, q)])
    return (a * b).reshape([p * q for p, q in zip(s, t)])


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


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Sum over the paired dims: dims = n (a's last n with b's first n) or (dims_a, dims_b);
    out.shape = a's other dims + b's other dims. A contracted dim of size 1 against size n
    sums the other operand over that dim (PyTorch broadcasts it)."""
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
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        return aminmax_result(amin(input, (), keepdim), amax(input, (), keepdim))
    d = _wrap_dim(dim, input.ndim, "aminmax")
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return aminmax_result(amin(input, d, keepdim), amax(input, d, keepdim))


# ------------------------------------------------------------------------------ maths
def _tensor_pair(op: str, input, other) -> None:  # noqa: A002
    for pos, name, v in ((1, "input", input), (2, "other", other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    same_device(op, input, other)


def _float_pair(op: str, input, other) -> tuple:  # noqa: A002
    """input and other in their promoted dtype, which must be floating (PyTorch has no
    integer kernel for these ops)."""
    _tensor_pair(op, input, other)
    dt = dtypes.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{op}\" not implemented for {dt.name} tensors (as in "
                                  f"PyTorch); it takes floating point tensors")
    return input.to(dt), other.to(dt)


def _logaddexp(a: Tensor, b: Tensor, base2: bool = False) -> Tensor:
    """max(a, b) + log(1 + e^-|a - b|) (base 2: + log2(1 + 2^-|a - b|)), a - b read as 0
    where a == b: equal infinities stay infinite, and the tie's gradient 1/2 each comes from
    maximum (the where keeps the NaN of inf - inf out of the backward)."""
    d = ew.where(ew.eq(a, b), 0.0, a - b)
    t = -ew.abs(d)
    tail = ew.log1p(ew.exp2(t)) * (1.0 / math.log(2.0)) if base2 else ew.log1p(ew.exp(t))
    return ew.maximum(a, b) + tail


@tensor_method("logaddexp")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log(e^a + e^b), stable;  da = sigmoid(a - b), db = sigmoid(b - a)."""
    (a, b), half = widen_halves(*_float_pair("logaddexp", input, other))
    return rounded_to(_logaddexp(a, b), half)


@tensor_method("logaddexp2")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """log2(2^a + 2^b), stable;  da = 2^a / (2^a + 2^b)."""
    (a, b), half = widen_halves(*_float_pair("logaddexp2", input, other))
    return rounded_to(_logaddexp(a, b, base2=True), half)


@tensor_method("hypot")
def hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """sqrt(a^2 + b^2) without overflow or underflow: m sqrt(1 + (n/m)^2) with
    m = max(|a|, |b|), n = min(|a|, |b|); inf where either is infinite;  da = a / hypot."""
    (a, b), half = widen_halves(*_float_pair("hypot", input, other))
    inf = ew.logical_or(ew.isinf(a), ew.isinf(b))
    x = ew.abs(ew.where(inf, 0.0, a))  # infinities replaced: the branch not taken stays finite
    y = ew.abs(ew.where(inf, 0.0, b))
    m, n = ew.maximum(x, y), ew.minimum(x, y)
    r = n / ew.where(ew.eq(m, 0.0), 1.0, m)
    out = ew.where(inf, math.inf, m * ew.sqrt(r * r + 1.0))
    return rounded_to(out, half)


@tensor_method("signbit")
def signbit(input: Tensor) -> Tensor:  # noqa: A002
    """True where the sign is negative, -0.0 and -inf included (bool); False for NaN."""
    with no_grad():
        x = input.detach()
        if x.dtype is dtypes.bool_:
            return ew.ne(x, x)
        if not x.dtype.is_floating_point:
            return ew.lt(x, 0)
        # atan2(x, -1) is -pi for -0.0 and pi for +0.0, negative exactly for negative x
        return ew.lt(ew.atan2(x, -1.0), 0.0)


@tensor_method("copysign")
def copysign(input: Tensor, other) -> Tensor:  # noqa: A002
    """|input| with the sign of ``other`` (a tensor or a number; -0.0 is negative), in the
    promoted floating dtype;  d input = g sign(out) sign(input) (0 at input = 0)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    dt = dtypes.result_type(input, other)
    if not dt.is_floating_point:
        dt = dtypes.get_default_dtype()
    mag = ew.abs(input.to(dt))
    if isinstance(other, Tensor):
        same_device("copysign", input, other)
        return ew.where(signbit(other), -mag, mag)
    return -mag if math.copysign(1.0, float(other)) < 0 else mag


@tensor_method("fmax")
def fmax(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """maximum ignoring NaN (NaN only where both are);  the gradient goes to the chosen
    operand, to input on ties."""
    _tensor_pair("fmax", input, other)
    return ew.where(ew.logical_or(ew.ge(input, other), ew.isnan(other)), input, other)


@tensor_method("fmin")
def fmin(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """minimum ignoring NaN (NaN only where both are);  the gradient goes to the chosen
    operand, to input on ties."""
    _tensor_pair("fmin", input, other)
    return ew.where(ew.logical_or(ew.le(input, other), ew.isnan(other)), input, other)


@tensor_method("float_power")
def float_power(input, exponent) -> Tensor:  # noqa: A002
    """input ** exponent computed in float64 (either may be a number)."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): expected input or exponent to be a Tensor")
    base, exp = (v.to(dtypes.float64) if isinstance(v, Tensor) else float(v)
                 for v in (input, exponent))
    return ew.pow(base, exp)


# ------------------------------------------------------------------------------ scans
def _scan_input(op: str, input: Tensor, dim) -> tuple:  # noqa: A002
    """(input as >= 1-D, the wrapped dim)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = _wrap_dim(_int_arg(op, "dim", dim), input.ndim, op)
    return (input.reshape(1) if input.ndim == 0 else input), d


@tensor_method("logcumsumexp")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """out_k = log sum_{j <= k} exp(x_j) along ``dim``, stable (no global shift:
    [-1000, 0] gives [-1000, log(1 + e^-1000)]);  dx_j = sum_{k >= j} g_k e^(x_j - out_k)."""
    x, d = _scan_input("logcumsumexp", input, dim)
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp\" not implemented for {x.dtype.name} "
                                  f"tensors (as in PyTorch); it takes floating point tensors")
    n, k = x.shape[d], 1
    if n <= 1:
        return input.clone()
    (y,), half = widen_halves(x)
    while k < n:  # after the step with span k, y_j covers (j - 2k, j]
        head = narrow(y, d, 0, k)
        y = cat([head, _logaddexp(narrow(y, d, k, n - k), narrow(y, d, 0, n - k))], d)
        k *= 2
    return rounded_to(y, half)


def _cum_extreme(op: str, input: Tensor, dim, larger: bool) -> values_indices:  # noqa: A002
    x, d = _scan_input(op, input, dim)
    n = x.shape[d]
    if x.numel() == 0:
        return values_indices(input.clone(), zeros(input.shape, dtype=dtypes.int64,
                                                  device=input.device))
    with no_grad():
        v = x.detach()
        shape = [1] * x.ndim
        shape[d] = n
        i = arange(n, device=x.device).reshape(shape).expand(x.shape)
        floating = v.dtype.is_floating_point
        k = 1
        while k < n:  # Hillis-Steele: combine (earlier, later) summaries k apart
            lv, rv = narrow(v, d, 0, n - k), narrow(v, d, k, n - k)
            later = ew.ge(rv, lv) if larger else ew.le(rv, lv)
            if floating:  # a later NaN wins; an earlier NaN sticks
                later = ew.logical_or(ew.isnan(rv),
                                      ew.logical_and(ew.logical_not(ew.isnan(lv)), later))
            v = cat([narrow(v, d, 0, k), ew.where(later, rv, lv)], d)
            i = cat([narrow(i, d, 0, k), ew.where(later, narrow(i, d, k, n - k),
                                                  narrow(i, d, 0, n - k))], d)
            k *= 2
        i = i.clone() if n == 1 else i  # (else the scan's cat made it)
    values = _take(x, i, d)  # d x = g scatter-added to the indices (PyTorch's rule)
    return values_indices(values.reshape(input.shape), i.reshape(input.shape))


@tensor_method("cummax")
def cummax(input: Tensor, dim: int) -> values_indices:  # noqa: A002
    """(values, indices) of the running maximum along ``dim``: the last index of the
    maximum so far; from a NaN on, NaN and the latest NaN's index."""
    return _cum_extreme("cummax", input, dim, True)


@tensor_method("cummin")
def cummin(input: Tensor, dim: int) -> values_indices:  # noqa: A002
    """(values, indices) of the running minimum along ``dim`` (cummax's rules)."""
    return _cum_extreme("cummin", input, dim, False)


# ------------------------------------------------------------------------------ searching
def _side(op: str, right: bool, side) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.{op}(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError(f"torch.{op}(): side and right can't be set to opposites, got side "
                           f"of left while right was True")
    return side == "right"


def searchsorted(sorted_sequence: Tensor, values, *, out_int32: bool = False,
                 right: bool = False, side: str | None = None,
                 sorter: Tensor | None = None) -> Tensor:
    """For each value, the index where inserting it keeps the last dim of
    ``sorted_sequence`` sorted: the count of elements < value (side='left') or <= value
    ('right'). A 1-D sequence serves values of any shape; else its leading dims must equal
    values' leading dims. ``sorter``: the argsort of an unsorted sequence. int64 (int32
    with out_int32); not differentiable."""
    seq = sorted_sequence
    right = _side("searchsorted", right, side)
    if seq.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if not isinstance(values, Tensor):
        values = tensor(values, device=seq.device)
    same_device("searchsorted", seq, values)
    if seq.ndim > 1 and seq.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    with no_grad():
        seq, v = seq.detach(), values.detach()
        if sorter is not None:
            if sorter.shape != seq.shape or sorter.dtype is not dtypes.int64:
                raise RuntimeError(f"torch.searchsorted(): sorter must be an int64 tensor of "
                                   f"the boundaries' shape {list(seq.shape)}, got "
                                   f"{sorter.dtype.name} {list(sorter.shape)}")
            seq = take_along_dim(seq, sorter, -1)
        dt = dtypes.result_type(seq, v)
        n = seq.shape[-1]
        rows = seq.reshape(1, n) if seq.ndim == 1 else seq
        vals = v.reshape(1, -1) if seq.ndim == 1 else v
        rows, vals = rows.to(dt), vals.to(dt)
        m = vals.shape[-1]
        # stable order of values and sequence together: values first (side='left') put a
        # value before the elements equal to it, after ('right') behind them
        merged = cat([rows, vals], -1) if right else cat([vals, rows], -1)
        order = argsort(merged, -1)
        is_seq = ew.lt(order, n) if right else ew.ge(order, m)
        before = cumsum(is_seq, -1)  # int64; at a value's position: the elements before it
        where_now = argsort(order, -1)  # the position each merged entry was sorted to
        at = narrow(where_now, -1, n, m) if right else narrow(where_now, -1, 0, m)
        out = _take(before, at, before.ndim - 1) if m else at
        if dt.is_floating_point:  # PyTorch's binary search puts NaN values past the end
            out = ew.where(ew.isnan(vals), n, out)
        out = out.reshape(v.shape)
        return out.to(dtypes.int32) if out_int32 else out


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False,  # noqa: A002
              right: bool = False) -> Tensor:
    """The bucket of each input value among the 1-D ``boundaries``: right=False:
    boundaries[i-1] < x <= boundaries[i]; right=True: boundaries[i-1] <= x < boundaries[i]
    (searchsorted(boundaries, input, right=right))."""
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


@tensor_method("bincount")
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """out[k] = the number of times k occurs in the 1-D non-negative integer ``input`` (the
    sum of ``weights`` there), of length max(max(input) + 1, minlength). Counts are int64;
    float32 weights give float32, other weights float64 (as PyTorch)."""
    if input.dtype.is_floating_point or input.dtype is dtypes.bool_:
        raise NotImplementedError(f"\"bincount\" not implemented for {input.dtype.name} "
                                  f"tensors; it counts non-negative integers")
    minlength = _int_arg("bincount", "minlength", minlength)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim != 1 or (input.numel() and int(input.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape != input.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    size = max(int(input.max()) + 1 if input.numel() else 0, minlength)
    if weights is None:
        src = ones(input.shape, dtype=dtypes.int64, device=input.device)
    else:
        src = weights.to(dtypes.float32 if weights.dtype is dtypes.float32 else dtypes.float64)
    return index_add(zeros(size, dtype=src.dtype, device=input.device), 0, input, src)


def _runs(flat: Tensor, return_inverse: bool, return_counts: bool, order, shape):
    """unique's tail: ``flat`` is 1-D with equal values adjacent; ``order`` maps its
    positions back to the input's (None: the identity). Returns unique's result."""
    n = flat.numel()
    if n == 0:
        vals, inv = flat, zeros(shape, dtype=dtypes.int64, device=flat.device)
        counts = zeros(0, dtype=dtypes.int64, device=flat.device)
    else:
        first = cat([ones(1, dtype=dtypes.bool_, device=flat.device),
                     ew.ne(narrow(flat, 0, 1, n - 1), narrow(flat, 0, 0, n - 1))])
        run = cumsum(first, 0) - 1  # the run (unique value) each position belongs to
        vals = getitem(flat, first)
        if order is None:
            inv = run
        else:
            inv = zeros(n, dtype=dtypes.int64, device=flat.device)
            inv[order] = run
        inv = inv.reshape(shape)
        counts = index_add(zeros(vals.numel(), dtype=dtypes.int64, device=flat.device), 0,
                           run, ones(n, dtype=dtypes.int64, device=flat.device))
    out = (vals,) + ((inv,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def _check_dim_none(op: str, dim) -> None:
    if dim is not None:
        raise NotImplementedError(f"{op}(dim={dim}): only dim=None (the flattened tensor) is "
                                  f"supported by tgrad")


@tensor_method("unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: int | None = None):
    """The distinct values of the flattened input, sorted (also for sorted=False); with
    return_inverse, each element's position among them (input's shape); with
    return_counts, how often each occurs. NaNs are all distinct (NaN != NaN), as
    PyTorch. Not differentiable."""
    _check_dim_none("unique", dim)
    with no_grad():
        flat = input.detach().reshape(-1)
        vals, order = sort(flat) if flat.numel() else (flat, None)
        return _runs(vals, return_inverse, return_counts, order, input.shape)


@tensor_method("unique_consecutive")
def unique_consecutive(input: Tensor, return_inverse: bool = False,  # noqa: A002
                       return_counts: bool = False, dim: int | None = None):
    """The first element of every run of equal consecutive values of the flattened input
    (with the run index of each element, and the run lengths). Not differentiable."""
    _check_dim_none("unique_consecutive", dim)
    with no_grad():
        return _runs(input.detach().reshape(-1), return_inverse, return_counts, None,
                     input.shape)
