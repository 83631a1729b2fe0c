"""More composite ops PyTorch code reaches for (no primitive or kernel of their own):
NaN-aware sums, nan_to_num, xlogy, logit, diff, repeat_interleave, take, inner, unflatten,
fliplr/flipud, index_fill/index_copy/index_put, and the in-place forms of composites.

Branches a ``where`` does not take are kept finite (their zero gradient times an inf would
be NaN), as in composite.py.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad.ops import composite as cp
from tgrad.ops import elementwise as ew
from tgrad.ops import gathering as ga
from tgrad.ops._common import rounded_to, tensor_method, widen_halves
from tgrad.ops.creation import tensor
from tgrad.ops.index import IndexAdd, getitem, normalize_key
from tgrad.ops.inplace import apply_inplace
from tgrad.ops.shape import cat, narrow
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["nansum", "nanmean", "nan_to_num", "xlogy", "logit", "diff", "repeat_interleave",
           "take", "inner", "fliplr", "flipud", "index_fill", "index_copy", "index_put"]


# ------------------------------------------------------------------------------ NaN-aware
@tensor_method("nansum")
def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """sum treating NaN as 0;  dx = g where x is not NaN, else 0."""
    return ew.where(ew.isnan(input), 0, input).sum(dim, keepdim, dtype=dtype)


@tensor_method("nanmean")
def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """mean over the non-NaN elements (NaN where there are none)."""
    if dtype is not None:
        input = input.to(dtypes.as_dtype(dtype))  # noqa: A001
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.name}")
    kept = ew.logical_not(ew.isnan(input))
    return nansum(input, dim, keepdim) / kept.sum(dim, keepdim).to(input.dtype)


@tensor_method("nan_to_num")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Tensor:
    """NaN -> ``nan``, +inf -> ``posinf`` (default: the dtype's largest finite value),
    -inf -> ``neginf`` (its lowest);  dx = g where x is finite, else 0."""
    if not input.dtype.is_floating_point:
        return input.clone()
    info = np.finfo(input.dtype.np)
    hi = float(info.max) if posinf is None else posinf
    lo = float(info.min) if neginf is None else neginf
    x = ew.where(ew.isnan(input), nan, input)
    return ew.where(ew.eq(x, np.inf), hi, ew.where(ew.eq(x, -np.inf), lo, x))


tensor_method("nan_to_num_")(lambda self, nan=0.0, posinf=None, neginf=None: apply_inplace(
    self, "nan_to_num_", lambda x: nan_to_num(x, nan, posinf, neginf)))


@tensor_method("xlogy")
def xlogy(input: Tensor, other) -> Tensor:  # noqa: A002
    """x log(y), 0 where x == 0 (unless y is NaN, as PyTorch);  dx = log y, dy = x / y.
    Only where log y is infinite (y = 0 or inf) does x == 0 need the ``where``; there its
    log is taken of 1 instead, so the branch not taken stays finite."""
    y = other if isinstance(other, Tensor) else tensor(float(other), dtype=input.dtype
                                                        if input.dtype.is_floating_point
                                                        else None, device=input.device)
    zero = ew.logical_and(ew.eq(input, 0), ew.logical_or(ew.eq(y, 0), ew.eq(y, np.inf)))
    return ew.where(zero, 0.0, input * ew.log(ew.where(zero, 1.0, y)))


@tensor_method("logit")
def logit(input: Tensor, eps: float | None = None) -> Tensor:  # noqa: A002
    """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when ``eps`` is given."""
    (x,), half = widen_halves(input)
    if eps is not None:
        x = ew.clamp(x, eps, 1.0 - eps)
    return rounded_to(ew.log(x / (1.0 - x)), half)


# ------------------------------------------------------------------------------ shapes, copies
@tensor_method("diff")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,  # noqa: A002
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along ``dim`` (after concatenating prepend / append)."""
    d = _wrap_dim(dim, input.ndim, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    parts = [t for t in (prepend, input, append) if t is not None]
    x = cat(parts, d) if len(parts) > 1 else input
    (x,), half = widen_halves(x)  # halves: n subtractions in float32, one rounding
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        x = narrow(x, d, 1, m - 1) - narrow(x, d, 0, m - 1) if x.dtype is not dtypes.bool_ \
            else ew.ne(narrow(x, d, 1, m - 1), narrow(x, d, 0, m - 1))
    return rounded_to(x, half)


@tensor_method("repeat_interleave")
def repeat_interleave(input: Tensor, repeats, dim: int | None = None, *,  # noqa: A002
                      output_size: int | None = None) -> Tensor:
    """Each element (slice along ``dim``; flattened when dim is None) repeated ``repeats``
    times (an int, or a tensor of one count per element); the gradient sums the copies."""
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(dim, x.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor):
        counts = np.asarray(repeats.numpy(force=True)).reshape(-1)
        if counts.size == 1:
            repeats = int(counts[0])
        else:
            if counts.size != x.shape[d]:
                raise RuntimeError(f"repeats must have the same size as input along dim, but "
                                   f"got repeats.size(0) = {counts.size} and input.size({d}) "
                                   f"= {x.shape[d]}")
            if (counts < 0).any():
                raise RuntimeError("repeats can not be negative")
            idx = np.repeat(np.arange(counts.size), counts)
            return ga.index_select(x, d, tensor(idx, device=x.device))
    if repeats < 0:
        raise RuntimeError("repeats can not be negative")
    shape = list(x.shape)
    wide = shape[:d + 1] + [repeats] + shape[d + 1:]
    out = x.unsqueeze(d + 1).expand(wide)
    return out.reshape(shape[:d] + [shape[d] * repeats] + shape[d + 1:])


@tensor_method("take")
def take(input: Tensor, index: Tensor) -> Tensor:  # noqa: A002
    """input.flatten()[index] (shape of index; negative indices count from the end)."""
    n = input.numel()
    if index.numel():
        lo, hi = int(index.min()), int(index.max())
        if lo < -n or hi >= n:
            raise IndexError(f"take(): index {lo if lo < -n else hi} out of range for tensor "
                             f"of size {list(input.shape)}")
    return getitem(input.reshape(-1), index)


@tensor_method("inner")
def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Sum over the last dims: out[a..., b...] = sum_k input[a..., k] other[b..., k]
    (a product when either is 0-d)."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    out = input.reshape(-1, k) @ other.reshape(-1, k).T
    return out.reshape(input.shape[:-1] + other.shape[:-1])


@tensor_method("unflatten")
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:  # noqa: A002
    """Split dim ``dim`` into ``sizes`` (one entry may be -1)."""
    d = _wrap_dim(dim, input.ndim, "unflatten")
    return input.reshape(input.shape[:d] + tuple(sizes) + input.shape[d + 1:])


@tensor_method("fliplr")
def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """flip along dim 1 (input at least 2-D)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return cp.flip(input, (1,))


@tensor_method("flipud")
def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """flip along dim 0 (input at least 1-D)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return cp.flip(input, (0,))


# ------------------------------------------------------------------------------ indexed writes
def _dim_key(input: Tensor, dim: int, index: Tensor, op: str) -> tuple:  # noqa: A002
    d = _wrap_dim(dim, input.ndim, op)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    ga._check_index(op, input, index, d, input.shape[d] if input.ndim else 1)
    return (slice(None),) * d + (index.reshape(-1),)


@tensor_method("index_fill")
def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """A copy with the slices at ``index`` along ``dim`` set to ``value``."""
    out = input.clone()
    out[_dim_key(input, dim, index, "index_fill")] = value
    return out


@tensor_method("index_copy")
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """A copy with source's slices written at ``index`` along ``dim``."""
    key = _dim_key(input, dim, index, "index_copy")
    d = len(key) - 1
    want = input.shape[:d] + (index.numel(),) + input.shape[d + 1:]
    if source.shape != want:
        raise RuntimeError(f"index_copy(): source of shape {list(source.shape)} must have "
                           f"shape {list(want)}")
    out = input.clone()
    out[key] = source
    return out


@tensor_method("index_put")
def index_put(input: Tensor, indices, values, accumulate: bool = False) -> Tensor:  # noqa: A002
    """A copy with values written (``accumulate``: added) at the advanced index ``indices``
    (a tuple of index tensors)."""
    return index_put_(input.clone(), indices, values, accumulate)


@tensor_method("index_put_")
def index_put_(self: Tensor, indices, values, accumulate: bool = False) -> Tensor:
    """self[indices] = values (or += with ``accumulate``, repeated indices adding up)."""
    key = tuple(indices)
    if accumulate:
        nkey, _ = normalize_key(key, self.device)
        vals = values if isinstance(values, Tensor) else tensor(values, dtype=self.dtype,
                                                                device=self.device)
        shape = getitem(self.detach(), key).shape
        add = IndexAdd.apply(vals.to(self.dtype).expand(shape), nkey, self.shape)
        return apply_inplace(self, "index_put_", lambda x, a: x + a, add)
    self[key] = values
    return self


# ------------------------------------------------------------------------------ in-place forms
def _inplace(name: str, fn):
    def method(self, *args, **kwargs):
        return apply_inplace(self, name, lambda x, *a: fn(x, *a, **kwargs), *args)
    method.__name__ = name
    return tensor_method(name)(method)


for _name, _fn in (("index_add_", ga.index_add), ("scatter_", ga.scatter),
                   ("scatter_add_", ga.scatter_add), ("lerp_", cp.lerp),
                   ("addcmul_", cp.addcmul), ("addcdiv_", cp.addcdiv),
                   ("clamp_min_", cp.clamp_min), ("clamp_max_", cp.clamp_max),
                   ("index_fill_", index_fill), ("index_copy_", index_copy),
                   ("xlogy_", xlogy), ("logit_", logit)):
    _inplace(_name, _fn)

