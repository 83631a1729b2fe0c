"""NumPy-style numerical helpers with PyTorch's signatures, composed of tgrad ops:

- ``histogram(input, bins, *, range, weight, density)``: (hist, bin_edges). ``bins`` an int
  (equal bins over ``range``, default [min, max] of the input ([0, 1] when it is empty),
  widened by 1/2 on each side when they are equal, as NumPy; a range that is not finite,
  e.g. from a NaN or inf in the input, raises, as PyTorch) or a tensor of increasing edges;
  each bin is [e_i, e_i+1) except the last, which holds its right edge; values outside
  are not counted; ``density`` divides by the total and the bin widths. (PyTorch has it
  for CPU tensors only; tgrad runs it on any device.) float32/float64 inputs; float16 and
  bfloat16 only with edge tensors (of the input's dtype, as any edges), as PyTorch's
  kernels: other dtypes raise its NotImplementedError.
- ``histogramdd(input, bins, *, range, weight, density)``: (hist, bin_edges) of the points
  in the rows of ``input`` (..., N): per dim, edges as histogram's (``bins`` an int, N ints
  or N edge tensors; ``range`` 2N floats, min and max per dim); a point outside any dim's
  edges is not counted; ``density`` divides by the total and each bin's volume. Also the
  ``Tensor.histogram`` method.
- ``gradient(input, *, spacing, dim, edge_order)``: NumPy's gradient, one tensor per dim:
  central differences inside (for coordinates x: (h_s^2 f[i+1] + (h_d^2 - h_s^2) f[i]
  - h_d^2 f[i-1]) / (h_s h_d (h_s + h_d)), h_s = x[i] - x[i-1], h_d = x[i+1] - x[i]),
  one-sided first or second order differences at the edges; differentiable in input.
  Steps and coordinates may be complex (computed in the promoted complex dtype, as
  PyTorch's; float16 values then give complex64 where PyTorch has no ComplexHalf division).
"""

from __future__ import annotations

import builtins
import math
import numbers

from tgrad import dtypes, return_types
from tgrad.ops._common import fresh, require_tensor, tensor_method
from tgrad.ops.creation import linspace, zeros
from tgrad.ops.elementwise import where
from tgrad.ops.gathering import scatter_add
from tgrad.ops.searching import searchsorted
from tgrad.ops.shape import cat
from tgrad.tensor import Tensor, _wrap_dim

__all__ = ["histogram", "histogramdd", "gradient"]

histogram_result = return_types.histogram
histogramdd_result = return_types.histogramdd


@tensor_method("histogram")
def histogram(input: Tensor, bins=100, *, range=None, weight=None,  # noqa: A001,A002
              density: bool = False) -> tuple:
    """(hist, bin_edges) of ``input``'s values (module docstring)."""
    require_tensor("histogram", input)
    _check_dtypes("histogram", input, [bins] if isinstance(bins, Tensor) else None)
    x = input.reshape(-1)
    if isinstance(bins, Tensor):
        if range is not None:  # (PyTorch: no overload takes both)
            raise TypeError("histogram(): range= goes with an int bins only; with a bins "
                            "tensor the edges give the range")
        edges = bins.clone()  # (a new tensor, as PyTorch's: not the caller's)
        if edges.ndim != 1 or edges.numel() < 2:
            raise RuntimeError("torch.histogram: bins tensor should have one dimension and "
                               "at least 2 elements")
        n = edges.numel() - 1
    else:
        if not isinstance(bins, numbers.Integral):
            raise TypeError(f"histogram(): argument 'bins' must be int or Tensor, not "
                            f"{type(bins).__name__}")
        n = int(bins)
        if n <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {n}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0  # empty input: [0, 1] (PyTorch's and NumPy's)
        _check_finite("histogram", 0, lo, hi)
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): max must be larger than min (got "
                               f"{lo} > {hi})")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = linspace(lo, hi, n + 1, dtype=input.dtype, device=input.device)
    w = None
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise RuntimeError(f"torch.histogram: if weight tensor is provided it should have "
                               f"the same shape as the input tensor (got {list(weight.shape)} "
                               f"and {list(input.shape)})")
        _check_weight_dtype("histogram", input, weight)
        w = weight.reshape(-1)
    first, last = edges[0], edges[-1]
    inside = (x >= first) & (x <= last)
    idx = (searchsorted(edges, x, right=True) - 1).clamp(0, n - 1)  # x == last: last bin
    # a point outside counts nothing, whatever its weight (w * 0 was NaN for a NaN or inf w)
    ones = inside.to(input.dtype) if w is None else where(inside, w, 0)
    hist = scatter_add(zeros(n, dtype=input.dtype, device=input.device), 0, idx, ones)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    return histogram_result(hist, edges)


def _check_weight_dtype(op: str, input: Tensor, weight: Tensor) -> None:  # noqa: A002
    """PyTorch's RuntimeError for a weight tensor of another dtype than the input (it does
    not convert: hist takes the input's dtype)."""
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"torch.{op}: if weight tensor is provided, input tensor and weight "
                           f"tensor should have the same dtype, but got input({input.dtype.name})"
                           f", and weight({weight.dtype.name}); convert weight with "
                           f".to({input.dtype.name})")


def _check_dtypes(op: str, input: Tensor, edges: list | None) -> None:  # noqa: A002
    """PyTorch's dtype rules: edge tensors (``edges``) take float16/bfloat16/float32/float64
    inputs of their own dtype; int bin counts (``edges`` None) float32/float64 only. Other
    dtypes raise its NotImplementedError ("histogram_cpu" / "histogramdd" not implemented
    for 'Long'), a bins tensor of another dtype its RuntimeError."""
    dt = input.dtype
    ok = (dtypes.float32, dtypes.float64) if edges is None else \
        (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
    if dt not in ok:
        kernel = "histogramdd" if edges is None else "histogram_cpu"
        raise NotImplementedError(
            f"torch.{op}: not implemented for {dt.name} inputs: it takes float32/float64 "
            f"(float16/bfloat16 only with bins edge tensors); convert with .double() "
            f"(\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dt]}')")
    for d, e in enumerate(edges or ()):
        if isinstance(e, Tensor) and e.dtype is not dt:
            raise RuntimeError(f"torch.{op}: input tensor and bins tensors should have the "
                               f"same dtype, but got input with dtype {dt.name} and bins for "
                               f"dimension {d} with dtype {e.dtype.name}")


def _check_finite(op: str, dim: int, lo: float, hi: float) -> None:
    """A bin range must be finite: a NaN or inf in the range (or, with no range, in the
    input) raises, as PyTorch."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.{op}: dimension {dim}'s range [{lo:g}, {hi:g}] is not "
                           f"finite; pass a finite range= or remove the NaN/inf values")


def _edges_1d(op: str, x: Tensor, bins, lo_hi, dim: int = 0) -> Tensor:
    """One dim's edges: a given 1-D tensor, or ``bins`` equal bins over ``lo_hi`` (default
    [min, max] of ``x``, [0, 1] when empty, widened by 1/2 on each side when equal)."""
    if isinstance(bins, Tensor):
        edges = bins
        if edges.ndim != 1 or edges.numel() < 1:
            raise RuntimeError(f"torch.{op}: bins tensors should have one dimension and at "
                               f"least 1 element, but got {list(edges.shape)}")
        return edges
    n = int(bins)
    if n <= 0:
        raise RuntimeError(f"torch.{op}(): bins must be > 0, but got {n} for a dimension")
    if lo_hi is not None:
        lo, hi = lo_hi
    elif x.numel():
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0  # empty input: [0, 1] (PyTorch's and NumPy's)
    _check_finite(op, dim, lo, hi)
    if lo > hi:
        raise RuntimeError(f"torch.{op}(): max must be larger than min (got {lo} > {hi})")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return linspace(lo, hi, n + 1, dtype=x.dtype, device=x.device)


def histogramdd(input: Tensor, bins=10, *, range=None, weight=None,  # noqa: A001,A002
                density: bool = False) -> tuple:
    """(hist, bin_edges) of the N-dimensional points in ``input``'s rows (module docstring):
    hist has one dim of len(edges) - 1 per coordinate; bin_edges is a tuple of N tensors."""
    op = "histogramdd"
    require_tensor(op, input)
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    dims = input.shape[-1]
    pts = input.reshape(-1, dims)
    bins = [bins] * dims if isinstance(bins, numbers.Integral) else list(bins)
    _check_dtypes(op, input, bins if any(isinstance(b, Tensor) for b in bins) else None)
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range is not None:
        range = [float(r) for r in range]  # noqa: A001
        if len(range) != 2 * dims:
            raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range "
                               f"should have {2 * dims} elements, but got {len(range)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                           f"the same shape as the input tensor excluding its innermost "
                           f"dimension (got {list(weight.shape)}, expected "
                           f"{list(input.shape[:-1])})")
    if weight is not None:
        _check_weight_dtype(op, input, weight)
    ones = (zeros(pts.shape[0], dtype=input.dtype, device=input.device) + 1 if weight is None
            else weight.reshape(-1))
    flat = None
    edges_all, counts = [], []
    for d in builtins.range(dims):
        x = pts[:, d]
        edges = _edges_1d(op, x, bins[d], None if range is None else range[2 * d:2 * d + 2],
                         d)
        n = edges.numel() - 1
        edges_all.append(edges)
        counts.append(n)
        if n <= 0:
            ones = ones * 0
            continue
        inside = (x >= edges[0]) & (x <= edges[-1])
        ones = where(inside, ones, 0)  # (not ones * inside: a NaN or inf weight outside)
        idx = (searchsorted(edges, x, right=True) - 1).clamp(0, n - 1)  # x == last: last bin
        flat = idx if flat is None else flat * n + idx
    total = 1
    for n in counts:
        total *= max(n, 0)
    hist = zeros(total, dtype=input.dtype, device=input.device)
    if total and flat is not None:
        hist = scatter_add(hist, 0, flat, ones)
    hist = fresh(hist.reshape(tuple(max(n, 0) for n in counts)))
    if density and total:
        vol = None
        for d, e in enumerate(edges_all):  # each bin's volume: the outer product of widths
            w = (e[1:] - e[:-1]).reshape([-1 if k == d else 1 for k in builtins.range(dims)])
            vol = w if vol is None else vol * w
        hist = hist / (hist.sum() * vol)
    return histogramdd_result(hist, tuple(edges_all))



def _step(s) -> float | complex:
    """A uniform step as a Python float, or complex (PyTorch computes with complex steps)."""
    v = s.item() if isinstance(s, Tensor) else s
    return complex(v) if isinstance(v, complex) else float(v)


def _spacings(spacing, dims: list, input: Tensor) -> list:  # noqa: A002
    """Per dim: a Python float or complex (uniform step) or a 1-D coordinate tensor
    (complex coordinates kept: the differences are complex, as PyTorch's)."""
    if isinstance(spacing, (numbers.Number, Tensor)) and not (
            isinstance(spacing, Tensor) and spacing.ndim == 1 and len(dims) == 1):
        if isinstance(spacing, Tensor):
            if spacing.ndim != 0:
                raise RuntimeError("torch.gradient expected spacing to be unspecified, a "
                                   "scalar or a list")
        return [_step(spacing)] * len(dims)
    seq = [spacing] if isinstance(spacing, Tensor) else list(spacing)
    if len(seq) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(seq)} and a dim argument of "
                           f"length {len(dims)}.")
    out = []
    for s, d in zip(seq, dims):
        if isinstance(s, Tensor) and s.ndim == 1:
            if s.numel() != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and of the dimension's size {input.shape[d]}, got "
                                   f"{s.numel()}")
            # integer coordinates count as the default float dtype (PyTorch)
            out.append(s if s.dtype.is_floating_point or s.dtype.is_complex
                       else s.to(dtypes.get_default_dtype()))
        else:
            out.append(_step(s))
    return out


def _along(t: Tensor, d: int, start: int, stop: int | None) -> Tensor:
    idx = [slice(None)] * t.ndim
    idx[d] = slice(start, stop)
    return t[tuple(idx)]


def _shape_for(h: Tensor, d: int, ndim: int) -> Tensor:
    shape = [1] * ndim
    shape[d] = -1
    return h.reshape(shape)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002
    """NumPy's gradient of ``input`` along ``dim`` (an int, a list, or all dims), one
    tensor per dim (module docstring)."""
    require_tensor("gradient", input)
    if input.dtype is dtypes.uint8:  # PyTorch's errors (the differences would wrap)
        raise RuntimeError("torch.gradient does not support uint8 input.")
    if input.dtype is dtypes.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead. "
                           "(gradient of a bool tensor: convert it with .float())")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, "
                           f"got {edge_order}")
    dims = list(range(input.ndim)) if dim is None else (
        [dim] if isinstance(dim, int) else list(dim))
    dims = [_wrap_dim(d, input.ndim, "gradient") for d in dims]
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"torch.gradient: dim {d} appears multiple times in the list "
                               f"of dims")
    f = (input if input.dtype.is_floating_point or input.dtype.is_complex  # complex stays
         else input.to(dtypes.get_default_dtype()))
    values = f
    out = []
    for d, h in zip(dims, _spacings(spacing, dims, values)):
        f = values
        n = f.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        if isinstance(h, Tensor):
            # coordinates promote with the values (PyTorch: float16 values over float32
            # coordinates give float32), computed in that dtype; h real (a complex f) unless
            # the coordinates are complex
            rt = dtypes.promote_types(f.dtype, h.dtype)
            f, h = f.to(rt), h.to(rt if h.dtype.is_complex else dtypes.to_real(rt))
        fm, f0, fp = _along(f, d, 0, n - 2), _along(f, d, 1, n - 1), _along(f, d, 2, None)
        if not isinstance(h, Tensor):  # a float or complex step
            inner = (fp - fm) / (2 * h)
            if edge_order == 1:
                left = (_along(f, d, 1, 2) - _along(f, d, 0, 1)) / h
                right = (_along(f, d, n - 1, n) - _along(f, d, n - 2, n - 1)) / h
            else:
                left = (-1.5 * _along(f, d, 0, 1) + 2 * _along(f, d, 1, 2)
                        - 0.5 * _along(f, d, 2, 3)) / h
                right = (0.5 * _along(f, d, n - 3, n - 2) - 2 * _along(f, d, n - 2, n - 1)
                         + 1.5 * _along(f, d, n - 1, n)) / h
        else:
            dx = h[1:] - h[:-1]
            hs, hd = _shape_for(dx[:-1], d, f.ndim), _shape_for(dx[1:], d, f.ndim)
            inner = (hs * hs * fp + (hd * hd - hs * hs) * f0 - hd * hd * fm) / (
                hs * hd * (hs + hd))
            if edge_order == 1:
                left = (_along(f, d, 1, 2) - _along(f, d, 0, 1)) / dx[0].item()
                right = (_along(f, d, n - 1, n) - _along(f, d, n - 2, n - 1)) / dx[-1].item()
            else:  # NumPy's second-order one-sided formulas on uneven grids
                d1, d2 = dx[0].item(), dx[1].item()
                a, b, c = -(2 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), \
                    -d1 / (d2 * (d1 + d2))
                left = a * _along(f, d, 0, 1) + b * _along(f, d, 1, 2) + c * _along(f, d, 2, 3)
                d1, d2 = dx[-2].item(), dx[-1].item()
                a, b, c = d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), \
                    (2 * d2 + d1) / (d2 * (d1 + d2))
                right = (a * _along(f, d, n - 3, n - 2) + b * _along(f, d, n - 2, n - 1)
                         + c * _along(f, d, n - 1, n))
        out.append(cat([left, inner, right], d))
    return tuple(out)

