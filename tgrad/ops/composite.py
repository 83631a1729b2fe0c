"""Ops built from other ops, with no primitive (and so no kernel) of their own: each runs on
every backend wherever its parts do, and differentiates through them.

- ``frac`` = x - trunc(x);
- masking: ``masked_fill``/``masked_fill_`` and ``tril``/``triu`` (and their in-place forms)
  are ``where`` over a bool mask, so their gradients are exact zeros where the mask closes;
- gathering: ``index_select`` and ``gather`` are advanced indexing (the gradient
  scatter-adds, repeated indices add up); their arguments are checked as PyTorch checks them;
- copies: ``repeat``/``tile`` (expand, then one copying reshape; the gradient sums the
  copies back), ``flip`` (index_select with reversed positions);
- comparisons: ``isclose``, ``allclose``, ``equal``, ``logical_xor`` (not differentiable);
- PyTorch's other names for ops tgrad has (``absolute``, ``greater``, ``swapdims``...).

Their nodes carry the parts' names (``WhereBackward0``, ``IndexBackward0``), not PyTorch's
``MaskedFillBackward0``/``GatherBackward0``.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.ops import elementwise as ew
from tgrad.ops._common import same_device, tensor_method
from tgrad.ops.creation import arange
from tgrad.ops.index import getitem
from tgrad.ops.inplace import apply_inplace
from tgrad.ops.reduce import sum_to
from tgrad.ops.shape import transpose
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["masked_fill", "tril", "triu", "index_select", "gather", "select", "isclose",
           "allclose", "equal", "logical_xor", "absolute", "greater", "greater_equal", "less",
           "less_equal", "not_equal", "swapdims", "numel",
           "tile", "flip", "frac"]


# ------------------------------------------------------------------------------ masking
def _fill_value(op: str, input: Tensor, value):  # noqa: A002
    """``value`` as ``where`` takes it so the result keeps ``input``'s dtype: a Python number
    (cast to int/bool for such inputs, as PyTorch casts it) or a 0-d tensor of input's dtype
    and device (its gradient flows back through the cast)."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        if value.dtype is not input.dtype or value.device != input.device:
            value = value.to(device=input.device, dtype=input.dtype)
        return value
    if input.dtype is dtypes.bool_:
        return bool(value)
    if not input.dtype.is_floating_point:
        return int(value)
    return float(value)


def _check_mask(op: str, mask) -> None:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        got = mask.dtype.name if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype {got}")


@tensor_method("masked_fill")
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:  # noqa: A002
    """``value`` where ``mask`` holds, else ``input`` (mask and input broadcast); input's dtype.
    d input = g where not mask;  d value (a 0-d tensor) = sum of g where mask."""
    _check_mask("masked_fill", mask)
    return ew.where(mask, _fill_value("masked_fill", input, value), input)


@tensor_method("masked_fill_")
def masked_fill_(self: Tensor, mask: Tensor, value) -> Tensor:
    _check_mask("masked_fill_", mask)
    value = _fill_value("masked_fill_", self, value)
    return apply_inplace(self, "masked_fill_", lambda x, v: ew.where(mask, v, x), value)


def _triangle(op: str, input: Tensor, diagonal: int, lower: bool) -> Tensor:  # noqa: A002
    """``input`` with the elements above (tril) or below (triu) the ``diagonal``-th diagonal
    of its last two dims set to 0: the mask is column - row <= diagonal (tril) or >= (triu),
    one (rows, cols) bool tensor broadcast over the batch dims."""
    if input.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    rows, cols = input.shape[-2:]
    offset = arange(cols, device=input.device) - arange(rows, device=input.device).unsqueeze(1)
    keep = ew.le(offset, diagonal) if lower else ew.ge(offset, diagonal)
    return ew.where(keep, input, False if input.dtype is dtypes.bool_ else 0)


@tensor_method("tril")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The lower triangle (on and below diagonal ``diagonal``) of the last two dims."""
    return _triangle("tril", input, diagonal, True)


@tensor_method("triu")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """The upper triangle (on and above diagonal ``diagonal``) of the last two dims."""
    return _triangle("triu", input, diagonal, False)


tensor_method("tril_")(lambda self, diagonal=0: apply_inplace(
    self, "tril_", lambda x: _triangle("tril_", x, diagonal, True)))
tensor_method("triu_")(lambda self, diagonal=0: apply_inplace(
    self, "triu_", lambda x: _triangle("triu_", x, diagonal, False)))


@tensor_method("frac")
def frac(input: Tensor) -> Tensor:  # noqa: A002
    """x - trunc(x) (the sign of x kept);  dx = g."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"frac: not implemented for {input.dtype.name} tensors; it takes "
                           f"floating point tensors, as in PyTorch")
    return input - ew.trunc(input)


tensor_method("frac_")(lambda self: apply_inplace(self, "frac_", frac))


# ------------------------------------------------------------------------------ gathering
def _check_index(op: str, input: Tensor, index, dim: int, size: int) -> None:  # noqa: A002
    """An int32/int64 tensor on input's device with every value in [0, size)."""
    if not isinstance(index, Tensor) or index.dtype not in (dtypes.int64, dtypes.int32):
        got = index.dtype.name if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index, got {got}")
    same_device(op, input, index)
    if index.numel():
        lo, hi = int(index.min()), int(index.max())  # on a GPU: one synchronizing read each
        bad = lo if lo < 0 else hi if hi >= size else None
        if bad is not None:
            raise IndexError(f"{op}(): index {bad} is out of bounds for dimension {dim} with "
                             f"size {size}")


@tensor_method("index_select")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """The entries ``index`` (a vector, or one 0-d index) of ``input`` along ``dim``:
    y.shape = input.shape with dim -> len(index);  dx scatter-adds g (repeats add up)."""
    d = _wrap_dim(dim, input.ndim, "index_select")
    if isinstance(index, Tensor) and index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape "
                         f"{list(index.shape)}")
    _check_index("index_select", input, index, d, input.shape[d] if input.ndim else 1)
    if input.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                               f"{index.numel()} value(s)")
        return input.clone()
    return getitem(input, (slice(None),) * d + (index.reshape(-1),))


@tensor_method("gather")
def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:  # noqa: A002
    """out[i][j][k] = input[i][index[i][j][k]][k] for dim = 1 (likewise for any dim);
    out.shape = index.shape, index.size(d) <= input.size(d) for d != dim;
    dx = zeros with g scatter-added at the gathered positions (PyTorch's scatter_add)."""
    d = _wrap_dim(dim, input.ndim, "gather")
    if isinstance(index, Tensor) and max(index.ndim, 1) != max(input.ndim, 1):
        raise RuntimeError(f"gather(): Index tensor must have the same number of dimensions "
                           f"as input tensor ({index.ndim} and {input.ndim})")
    _check_index("gather", input, index, d, input.shape[d] if input.ndim else 1)
    if input.ndim == 0:
        return gather(input.reshape(1), 0, index.reshape(1)).reshape(index.shape)
    for k, (n_idx, n_in) in enumerate(zip(index.shape, input.shape)):
        if k != d and n_idx > n_in:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
    # One index array per dim, broadcast to index.shape: aranges along the other dims.
    key = []
    for k, n in enumerate(index.shape):
        if k == d:
            key.append(index if index.dtype is dtypes.int64 else index.to(dtypes.int64))
        else:
            shape = [1] * index.ndim
            shape[k] = n
            key.append(arange(n, device=input.device).reshape(shape))
    return getitem(input, tuple(key))


@tensor_method("select")
def select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """input[..., index, ...] at ``dim`` (a view without that dim)."""
    d = _wrap_dim(dim, input.ndim, "select")
    n = input.shape[d] if input.ndim else 0
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    return getitem(input, (slice(None),) * d + (index,))


@tensor_method("sum_to_size")
def sum_to_size(self: Tensor, *size) -> Tensor:
    """``self`` summed over dims so that it has ``size`` (which must expand to self.shape)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    lead = self.ndim - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(self.shape)}}}.")
    return sum_to(self, size)


# ------------------------------------------------------------------------------ copies
@tensor_method("repeat")
def repeat(input: Tensor, *sizes) -> Tensor:  # noqa: A002
    """``input`` tiled ``sizes[d]`` times along each dim d (leading dims added as needed):
    y.shape[d] = sizes[d] * x.shape[d];  dx = the sum of the gradient over the copies."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    sizes = tuple(int(r) for r in sizes)
    if len(sizes) < input.ndim:
        raise RuntimeError(f"repeat: Number of dimensions of repeat dims ({len(sizes)}) can "
                           f"not be smaller than number of dimensions of tensor ({input.ndim})")
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: Trying to create tensor with negative dimension: "
                           f"{list(sizes)}")
    shape = (1,) * (len(sizes) - input.ndim) + input.shape
    # (s0, s1, ...) -> (1, s0, 1, s1, ...) -> expand to (r0, s0, r1, s1, ...) -> (r0 s0, ...)
    spread = [n for s in shape for n in (1, s)]
    wide = [n for r, s in zip(sizes, shape) for n in (r, s)]
    out = input.reshape(spread).expand(wide)
    return out.reshape([r * s for r, s in zip(sizes, shape)])


def tile(input: Tensor, dims) -> Tensor:  # noqa: A002
    """``repeat`` with ``dims`` padded with leading 1s to input's number of dims."""
    dims = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


tensor_method("tile")(lambda self, *dims: tile(
    self, dims[0] if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims))


def flip(input: Tensor, dims) -> Tensor:  # noqa: A002
    """A copy of ``input`` with the order of elements reversed along ``dims``."""
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    wrapped = [_wrap_dim(d, input.ndim, "flip") for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"flip: dims {list(dims)} has a dim appearing more than once")
    if input.ndim == 0 or not wrapped:
        return input.clone()
    out = input
    for d in wrapped:
        out = index_select(out, d, arange(input.shape[d] - 1, -1, -1, device=input.device))
    return out


tensor_method("flip")(lambda self, *dims: flip(
    self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims))


# ------------------------------------------------------------------------------ comparisons
@tensor_method("isclose")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (bool), as PyTorch: equal
    values (infinities included) are close; NaNs only with ``equal_nan``; an infinite
    difference never is."""
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype.name} did not match {other.dtype.name}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if tol < 0:
            raise RuntimeError(f"isclose(): {name} must be greater than or equal to zero, but "
                               f"got {tol}")
    with no_grad():
        a, b = input.detach(), other.detach()
        close = ew.eq(a, b)
        if equal_nan and a.dtype.is_floating_point:
            close = ew.logical_or(close, ew.logical_and(ew.isnan(a), ew.isnan(b)))
        if rtol == 0 and atol == 0:
            return close
        if a.dtype is dtypes.bool_:
            a, b = a.to(dtypes.float32), b.to(dtypes.float32)
        actual = ew.abs(a - b)
        allowed = ew.abs(b * rtol) + atol
        return ew.logical_or(close, ew.logical_and(ew.isfinite(actual), ew.le(actual, allowed)))


@tensor_method("allclose")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,  # noqa: A002
             equal_nan: bool = False) -> bool:
    """True when every element pair is ``isclose`` (shapes broadcast)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@tensor_method("equal")
def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """True when both have the same shape and equal elements (NaN is never equal)."""
    if input.shape != other.shape:
        return False
    with no_grad():
        return bool(ew.eq(input.detach(), other.detach()).all())


@tensor_method("logical_xor")
def logical_xor(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Elementwise xor of the truth values (nonzero, NaN included, is true); bool."""
    return ew.ne(ew.ne(input, 0), ew.ne(other, 0))


# ------------------------------------------------------------------------------ other names
absolute = ew.abs
greater, greater_equal, less, less_equal, not_equal = ew.gt, ew.ge, ew.lt, ew.le, ew.ne
swapdims = transpose
for _name, _fn in (("absolute", ew.abs), ("greater", ew.gt), ("greater_equal", ew.ge),
                   ("less", ew.lt), ("less_equal", ew.le), ("not_equal", ew.ne),
                   ("swapdims", transpose)):
    tensor_method(_name)(_fn)
tensor_method("absolute_")(lambda self: self.abs_())
tensor_method("type_as")(lambda self, other: self.to(other.dtype))


def numel(input: Tensor) -> int:  # noqa: A002
    """The number of elements of ``input``."""
    return math.prod(input.shape)
