"""``quantile`` and ``nanquantile`` (PyTorch's semantics), composed of sort, gather and lerp:
the gradient reaches the one or two input elements each quantile interpolates between
(ties in the sorted order: the ones the stable sort put there).

For each slice along ``dim`` (all elements when dim is None) sorted ascending (NaN last),
with n the slice length (nanquantile: its number of non-NaN values) and q in [0, 1]:

    rank = q (n - 1)  (computed in the input's dtype, as PyTorch);
    linear:   lerp(v[floor(rank)], v[ceil(rank)], rank - floor(rank));
    lower / higher: v[floor(rank)] / v[ceil(rank)];  midpoint: their mean;
    nearest:  v[round(rank)] (half to even).

A tensor q gets a gradient through the linear weight: (v[ceil] - v[floor]) (n - 1) (the
other interpolations do not depend on q's value between ranks: no gradient).

quantile gives NaN for a slice holding a NaN (its rank points at the last, NaN, element);
nanquantile gives NaN for an all-NaN slice. Output shape: the reduced input shape (dim
kept as size 1 with ``keepdim``; with dim None and keepdim every dim is size 1), with a
leading dim of len(q) when q is a 1-D tensor.
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.ops import elementwise as ew
from tgrad.ops._common import fresh, require_tensor, tensor_method
from tgrad.ops.composite import lerp
from tgrad.ops.creation import tensor
from tgrad.ops.gathering import gather
from tgrad.ops.sorting import sort
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["quantile", "nanquantile"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _q_tensor(op: str, input: Tensor, q) -> Tensor:  # noqa: A002
    """q as a 1-D tensor of input's dtype and device, checked to lie in [0, 1] (on the host:
    a tensor q is read back once, as PyTorch does; a number needs no read)."""
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        if q.device != input.device:
            raise RuntimeError(f"{op}() q tensor must be on the same device as the input "
                               f"tensor, but found {q.device} and {input.device}")
        qt = q.reshape(-1)  # in the graph: the linear weight is differentiable in q
        values = q.detach().reshape(-1).cpu().numpy()
    elif isinstance(q, (int, float)) and not isinstance(q, bool):
        values = np.array([float(q)])
        qt = None
    else:
        raise TypeError(f"{op}(): argument 'q' must be a float or a Tensor, not "
                        f"{type(q).__name__}")
    outside = ~((values >= 0) & (values <= 1))  # NaN is outside too
    if outside.any():
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got "
                           f"{float(values[outside][0]):g}")
    return qt if qt is not None else tensor(values, dtype=input.dtype, device=input.device)


def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str,  # noqa: A002
              ignore_nan: bool) -> Tensor:
    require_tensor(op, input)
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if interpolation not in _MODES:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    qt = _q_tensor(op, input, q)
    if dim is None:
        x = input.reshape(-1)
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        d = _wrap_dim(dim, input.ndim, op)
        x = input.unsqueeze(0) if input.ndim == 0 else input.movedim(d, -1)
        shape = list(input.shape)
        if input.ndim:
            if keepdim:
                shape[d] = 1
            else:
                del shape[d]
        out_shape = tuple(shape)
    values = sort(x, -1).values  # (..., n), NaN last
    n = x.shape[-1]
    nan = ew.isnan(values)
    qs = qt.reshape((-1,) + (1,) * values.ndim)  # (Q, 1, ..., 1): ranks (Q, ..., 1)
    if ignore_nan:
        valid = ew.logical_not(nan).sum(-1, keepdim=True).to(input.dtype)
        rank = ew.clamp(qs * (valid - 1.0), min=0.0)  # all-NaN slices: rank 0 (a NaN)
    else:
        rank = ew.where(nan.any(-1, keepdim=True), float(n - 1), qs * float(n - 1))
    # The indices come from the rank's value; the linear weight rank - low keeps the rank's
    # graph, so a tensor q gets d result / d q = (above - below) (n - 1), as PyTorch's.
    fixed = rank.detach()
    low, high = ew.floor(fixed), ew.ceil(fixed)
    if interpolation == "nearest":
        low = high = ew.round(fixed)
    elif interpolation == "lower":
        high = low
    elif interpolation == "higher":
        low = high
    expanded = values.expand((qs.shape[0],) + values.shape)
    below = gather(expanded, -1, low.long())
    above = gather(expanded, -1, high.long())
    if interpolation == "linear":
        result = lerp(below, above, rank - low)
    elif interpolation == "midpoint":
        result = lerp(below, above, 0.5)
    else:
        result = below
    result = result.reshape((qs.shape[0],) + out_shape)
    return fresh(result if isinstance(q, Tensor) and q.ndim == 1 else result[0])


@tensor_method("quantile")
@autocast_policy(None, cpu="fp32")
def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,  # noqa: A002
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of each slice along ``dim`` (see the module docstring); NaN where a
    slice holds a NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@tensor_method("nanquantile")
@autocast_policy(None, cpu="fp32")
def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *,  # noqa: A002
                interpolation: str = "linear") -> Tensor:
    """``quantile`` ignoring NaN values (NaN only for an all-NaN slice)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)
