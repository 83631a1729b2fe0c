"""Distances between vectors, composed of existing tgrad ops (no kernel of their own: they
run wherever their parts do, and differentiate through them):

- ``cdist(x1, x2, p)``: ||x1[..., i, :] - x2[..., j, :]||_p for every pair of rows, batch
  dims broadcast: one broadcast difference (..., P, R, M), then the vector ``norm`` over the
  last dim, in one node of PyTorch's name: CdistBackward0, whose backward is PyTorch's
  _cdist_backward (0 where a distance is 0; p = 0: 0; p = 1: sign(diff); 0 < p < 1: 0
  where a difference is 0; p = inf: each tie for the largest |difference| gets the full
  gradient). Where PyTorch takes its matmul path (p = 2 and more than 25 rows, or
  compute_mode 'use_mm_for_euclid_dist'), the node is PyTorch's EuclideanDistBackward0
  under a ViewBackward0 (the batch expanded and reshaped to (B, R, M) first, as PyTorch),
  with PyTorch's matmul backward; its values are the differences' norms (PyTorch's
  |a|^2 + |b|^2 - 2 a.b is faster, less exact), except for float32 on the CPU: there
  |a|^2 + |b|^2 - 2 a.b in float64 with a per-pair error bound, the pairs it does not
  cover recomputed from their differences (tgrad/backends/_numpy_dist.py euclid_f32:
  within 0.52 ulp of the exact distance, where the float32 differences' norm was a few
  ulp off and overflowed / underflowed in the squares).
- ``pairwise_distance(x1, x2, p, eps)``: ||x1 - x2 + eps||_p over the last dim of the
  broadcast shape (PyTorch's formula, eps added to every difference).
- ``pdist(input, p)``: the cdist of the rows of a 2-D input with themselves, upper
  triangle (i < j) in row-major order, as one index_select of each row pair (float32,
  p = 2 on the CPU: the upper triangle of the (N, N) matmul-path distances above).

- ``dist(input, other, p)``: ||input - other||_p over all elements of the broadcast
  difference (a 0-d tensor; ``norm``'s gradient rules);
- ``renorm(input, p, dim, maxnorm)``: each slice along ``dim`` whose p-norm exceeds
  ``maxnorm`` scaled by maxnorm / (norm + 1e-7) (PyTorch's formula), differentiated through
  the norm.

``cosine_similarity`` is nn.functional's (tgrad/nn/_composite.py); tgrad.cosine_similarity
names the same function.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.ops import elementwise as ew
from tgrad.ops._common import (
    broadcast_or_raise,
    register_op,
    require_tensor,
    rounded_to,
    same_device,
    tensor_method,
    widen_halves,
    wrap,
)
from tgrad.ops.gathering import index_select
from tgrad.ops.inplace import inplace_method
from tgrad.ops.layout import triu_indices
from tgrad.ops.reduce import NormP, check_norm_identity, norm
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["cdist", "pairwise_distance", "pdist", "dist", "renorm"]

_COMPUTE_MODES = (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


def _p_arg(op: str, p, nonnegative: bool = True, kind: str = "float") -> float:
    """p as a float (PyTorch's TypeError naming ``kind`` for a non-number; with
    ``nonnegative``, its RuntimeError for p < 0 or NaN)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{op}(): argument 'p' must be {kind}, not {type(p).__name__}")
    if nonnegative and (p < 0 or math.isnan(p)):
        raise RuntimeError(f"{op} only supports non-negative p values")
    return float(p)


@autocast_policy("fp32")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str | None = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The p-norm distance between each row of ``x1`` and each row of ``x2``.

    Shapes: x1 (B..., P, M), x2 (B..., R, M) -> (B..., P, R), the batch dims broadcast;
    out[..., i, j] = (sum_k |x1[..., i, k] - x2[..., j, k]|^p)^(1/p) (p = 0: the count of
    nonzero differences; p = inf: the largest |difference|). Floating point inputs of one
    dtype; p >= 0. Empty P or R give an empty result, M = 0 zeros."""
    require_tensor("cdist", x1, "x1")
    require_tensor("cdist", x2, "x2", 2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{t.dtype.name}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist: expected scalar type {x1.dtype.name} but found "
                           f"{x2.dtype.name} (X1 and X2 must have the same dtype)")
    p = _p_arg("cdist", p)
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    same_device("cdist", x1, x2)
    batch = broadcast_or_raise("cdist", x1.shape[:-2], x2.shape[:-2])
    (a, b), half = widen_halves(x1, x2)
    r1, r2 = a.shape[-2], b.shape[-2]
    mm = compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode != "donot_use_mm_for_euclid_dist" and (r1 > 25 or r2 > 25))
    if p == 2 and mm and a.numel() and b.numel():
        # PyTorch's cdist_impl: _euclidean_dist of the (B, R, M) expansions (the inputs
        # themselves for one batch), viewed back: ViewBackward0 over EuclideanDistBackward0
        nb = math.prod(batch)
        if nb != 1:
            m = a.shape[-1]
            a = a.expand(tuple(batch) + (r1, m)).reshape(nb, r1, m)
            b = b.expand(tuple(batch) + (r2, m)).reshape(nb, r2, m)
        return rounded_to(_EuclideanDist.apply(a, b).view(tuple(batch) + (r1, r2)), half)
    return rounded_to(_Cdist.apply(a, b, p), half)  # (CdistBackward0)


def _pair_differences(x1: Tensor, x2: Tensor) -> Tensor:
    """x1[..., i, :] - x2[..., j, :] for every pair: (B..., P, M), (B..., R, M) ->
    (B..., P, R, M), the batch dims broadcast."""
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)


class _Cdist(Function):
    """y[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p: one node, PyTorch's
    CdistBackward0 (edges x1, x2; the batch dims broadcast). The forward is the norm of the
    pair differences d (B..., P, R, M) (M = 0: zeros). Backward (PyTorch's _cdist_backward,
    per pair, g and y broadcast over M):
        dd = norm's rule of d (p = 0: 0; 1: g sign d; 2: g d / y, 0 where y = 0; inf:
             g sign(d) where |d| is the largest, each tie in full, PyTorch's; other p:
             g sign(d) |d|^(p-1) / y^(p-1), 0 where d or y is 0)
        dx1 = sum_to(sum_j dd, x1.shape)        dx2 = -sum_to(sum_i dd, x2.shape)
    (tgrad ops: it differentiates again)."""

    name = "_cdist_forward"
    node_name = "CdistBackward0"
    saved_attributes = {"_saved_p": "p", "_saved_result": 2, "_saved_x1": 0, "_saved_x2": 1}

    @staticmethod
    def forward(ctx, x1, x2, p):
        d = _pair_differences(x1, x2)
        # (M = 0: every distance is 0; the inf norm has no identity)
        y = norm(d, p if d.shape[-1] else 2.0, -1)
        ctx.save_for_backward(x1, x2, y)
        ctx.p = p
        return y

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.reduce import _norm_grad, sum_to
        x1, x2, y = ctx.saved_tensors
        d = _pair_differences(x1, x2)
        dd = _norm_grad(g.unsqueeze(-1).expand(d.shape), d, y.unsqueeze(-1), ctx.p)
        need1, need2 = ctx.needs_input_grad[:2]
        g1 = sum_to(dd.sum(-2), x1.shape) if need1 else None
        g2 = -sum_to(dd.sum(-3), x2.shape) if need2 else None
        return g1, g2, None


class _EuclideanDist(Function):
    """y[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_2 of (B, P, M), (B, R, M) (or one
    batch of 2-D / 3-D inputs, broadcast): one node, PyTorch's EuclideanDistBackward0 (its
    matmul path). The values are the differences' norms (tgrad's; PyTorch's forward is
    |a|^2 + |b|^2 - 2 a.b, less exact); float32 on the CPU: _numpy_dist.euclid_f32 (that
    form in float64 under a per-pair error bound, within 0.52 ulp of the exact distance).
    Backward (PyTorch's _euclidean_dist_backward), with
    r = g / y (0 where y = 0):
        dx1 = x1 rowsum(r) - r @ x2        dx2 = x2 colsum(r) - r^T @ x1
    (each summed to its operand's shape; tgrad ops: it differentiates again)."""

    name = "_euclidean_dist"
    node_name = "EuclideanDistBackward0"
    saved_attributes = {"_saved_result": 2, "_saved_x1": 0, "_saved_x2": 1}

    @staticmethod
    def forward(ctx, x1, x2):
        if x1.device.type == "cpu" and x1.dtype is dtypes.float32:
            # float64 GEMM with a per-pair error bound, exact recomputation of the pairs it
            # does not cover: faithfully rounded (tgrad/backends/_numpy_dist.py)
            from tgrad.backends import _numpy_dist  # (CPU only: not a backend primitive)
            y = wrap(_numpy_dist.euclid_f32(x1._data, x2._data), x1.device)
        else:
            y = norm(_pair_differences(x1, x2), 2.0, -1)
        ctx.save_for_backward(x1, x2, y)
        return y

    @staticmethod
    def backward(ctx, g):
        from tgrad.ops.reduce import sum_to
        x1, x2, y = ctx.saved_tensors
        r = ew.where(y == 0.0, 0.0, g / y)
        need1, need2 = ctx.needs_input_grad[:2]
        g1 = sum_to(x1 * r.sum(-1, keepdim=True) - r @ x2, x1.shape) if need1 else None
        g2 = sum_to(x2 * r.sum(-2).unsqueeze(-1) - r.mT @ x1, x2.shape) if need2 else None
        return g1, g2


register_op(_Cdist)
register_op(_EuclideanDist)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim of the broadcast shape (PyTorch's formula).

    Shapes: x1 and x2 broadcast to (..., D) -> (...) ((..., 1) with ``keepdim``); two 0-d
    inputs give a 0-d result. Integer inputs are promoted by the addition of eps."""
    require_tensor("pairwise_distance", x1, "x1")
    require_tensor("pairwise_distance", x2, "x2", 2)
    broadcast_or_raise("pairwise_distance", x1.shape, x2.shape)
    same_device("pairwise_distance", x1, x2)
    p = _p_arg("pairwise_distance", p, nonnegative=False)
    (a, b), half = widen_halves(x1, x2)
    dim = max(x1.ndim, x2.ndim) - 1
    diff = a - b + eps
    if not diff.dtype.is_floating_point:  # (complex: norm's |.| path; integers: its error)
        return rounded_to(norm(diff, float(p), dim, keepdim), half)
    axes = (dim,) if diff.ndim else None  # (two 0-d inputs: the one element)
    check_norm_identity(diff.shape, float(p), dim, axes)
    # at::norm's node, NormBackward1, as PyTorch's pairwise_distance
    return rounded_to(NormP.apply(diff, float(p), axes, keepdim), half)


@autocast_policy("fp32", cpu=None)
def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """The p-norm distance between every pair of rows of a 2-D (N, M) input: a 1-D tensor of
    N (N - 1) / 2 distances ||input[i] - input[j]||_p for i < j, in row-major order (the
    upper triangle of cdist(input, input) without its diagonal)."""
    require_tensor("pdist", input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"pdist only supports floating-point dtypes, got: "
                           f"{input.dtype.name}")
    p = _p_arg("pdist", p)
    n = input.shape[0]
    (x,), half = widen_halves(input)
    if p == 2 and x.device.type == "cpu" and x.dtype is dtypes.float32 and x.numel():
        # the upper triangle of the (N, N) Euclidean distances of the GEMM path (its
        # faithfully rounded values; its backward, a matmul, differentiates again)
        from tgrad.backends import _numpy_dist  # (CPU only: not a backend primitive)
        # (N (N - 1) / 2,) positions in the (N, N) rows
        flat = wrap(_numpy_dist.upper_positions(n), x.device)
        full = _EuclideanDist.apply(x, x).reshape(-1)
        return rounded_to(index_select(full, 0, flat), half)
    pairs = triu_indices(n, n, 1, device=input.device)  # (2, N (N - 1) / 2)
    diff = index_select(x, 0, pairs[0]) - index_select(x, 0, pairs[1])
    if diff.shape[-1] == 0:  # M = 0: every distance is 0 (the inf norm has no identity)
        p = 2.0
    return rounded_to(norm(diff, p, -1), half)


@tensor_method("dist")
@autocast_policy("fp32", cpu=None)
def dist(input: Tensor, other: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002
    """||input - other||_p over every element of the broadcast difference (a 0-d tensor)."""
    require_tensor("dist", input)
    require_tensor("dist", other, "other", 2)
    broadcast_or_raise("dist", input.shape, other.shape)
    same_device("dist", input, other)
    return norm(input - other, _p_arg("dist", p, nonnegative=False, kind="Number"))


@tensor_method("renorm")
@autocast_policy("fp32", cpu=None)
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:  # noqa: A002
    """Each slice input.select(dim, i) whose p-norm exceeds ``maxnorm`` is scaled to it:
    y = x * where(norm > maxnorm, maxnorm / (norm + 1e-7), 1), norm taken over all dims but
    ``dim`` (shape of input; complex input: the norm of |x|, a real factor); the gradient
    goes through the norm as well."""
    require_tensor("renorm", input)
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"renorm: expected a floating point or complex tensor as input, "
                           f"got {input.dtype.name}")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = _wrap_dim(dim, input.ndim, "renorm")
    (x,), half = widen_halves(input)
    others = tuple(i for i in range(x.ndim) if i != d)
    norms = norm(x, float(p), others, keepdim=True)
    factor = ew.where(ew.gt(norms, maxnorm), maxnorm / (norms + 1e-7), 1.0)
    return rounded_to(x * factor, half)


inplace_method("renorm_", renorm)
