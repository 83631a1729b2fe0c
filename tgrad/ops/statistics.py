"""Integration, covariance and counting ops composed of existing tgrad ops (no kernel of
their own; gradients, where there are any, come from the parts), with PyTorch's formulas:

- ``trapezoid``/``trapz`` (dx: (sum(y) - (y_0 + y_last) / 2) dx; x: sum(dx_k (y_k +
  y_{k+1}) / 2) with dx the differences of x, broadcast with the differences of y after
  they are taken, as NumPy) and ``cumulative_trapezoid`` (the cumsum of the same terms);
- ``cov`` (weighted by fweights * aweights, normalised by w_sum - correction, or by
  w_sum - correction * sum(w aweights) / w_sum with aweights) and ``corrcoef`` (cov over
  the outer product of the standard deviations, clipped to [-1, 1]);
- ``isin`` (bool, not differentiable): a sort of the test elements and a searchsorted;
- ``histc`` (not differentiable): bins of equal width between min and max (the input's
  extremes when min == max), the last bin closed; each element's bin by PyTorch's linear
  interpolation trunc((x - min) * bins / (max - min)) in the input's dtype (each step
  rounded to it, as PyTorch's CPU kernel), counted by index_add (no host read of the data
  except the extremes when min == max).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from tgrad import dtypes
from tgrad.autograd.grad_mode import no_grad
from tgrad.ops import elementwise as ew
from tgrad.ops._common import require_tensor, same_device, tensor_method
from tgrad.ops.complex_ops import complex as complex_
from tgrad.ops.creation import full, tensor, zeros
from tgrad.ops.gathering import index_add, index_select
from tgrad.ops.layout import diagonal
from tgrad.ops.matmul import matmul
from tgrad.ops.scan import cumsum
from tgrad.ops.searching import searchsorted
from tgrad.ops.shape import narrow
from tgrad.ops.sorting import sort
from tgrad.tensor import Tensor, _int_arg, _wrap_dim

__all__ = ["trapezoid", "trapz", "cumulative_trapezoid", "cov", "corrcoef", "isin", "histc"]


# ------------------------------------------------------------------------------ integration
def _pairs(t: Tensor, d: int) -> tuple:
    """(t[1:], t[:-1]) along dim d (both empty when t is)."""
    n = t.shape[d]
    return narrow(t, d, min(1, n), max(n - 1, 0)), narrow(t, d, 0, max(n - 1, 0))


def _spacing(op: str, y: Tensor, x, dx, d: int):
    """The sample spacing: a Python number (dx, default 1) or the differences of ``x``
    along d, shaped to broadcast with the differences of y."""
    if x is not None and dx is not None:
        raise TypeError(f"{op}(): pass either x or dx, not both")
    if x is None:
        if y.dtype is dtypes.bool_:
            raise RuntimeError(f"{op}: received a bool input for `y`, but bool is not "
                               f"supported")
        dx = 1 if dx is None else dx
        if isinstance(dx, Tensor) and dx.ndim == 0 and not dx.dtype.is_complex:
            dx = dx.item()  # a 0-d tensor is a Number (PyTorch's binding)
        if isinstance(dx, bool) or not isinstance(dx, (int, float)):
            raise RuntimeError(f"{op}: Currently, we only support dx as a real number.")
        return dx
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'x' must be Tensor, not {type(x).__name__} "
                        f"(pass a constant spacing as dx=)")
    if y.dtype is dtypes.bool_ or x.dtype is dtypes.bool_:
        raise RuntimeError(f"{op}: received a bool input for `x` or `y`, but bool is not "
                           f"supported")
    same_device(op, y, x)
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        shape = [1] * y.ndim
        shape[d] = x.shape[0]
        x = x.reshape(shape)
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + x.shape)
    right, left = _pairs(x, d)
    return right - left


def _refuse_0d(op: str, y: Tensor, dim) -> None:
    """PyTorch's IndexError for a 0-d ``y``: it has no dim to integrate along."""
    if y.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions; "
                         f"give y at least one dim")


def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
              dim: int = -1) -> Tensor:
    """The trapezoidal rule along ``dim``: y (..., n, ...) -> y's shape without ``dim``.

    With spacing dx (default 1): dx (sum_k y_k - (y_0 + y_{n-1}) / 2). With sample points
    ``x`` (1-D of length n, or a tensor broadcasting with y after differencing):
    sum_k (x_{k+1} - x_k) (y_k + y_{k+1}) / 2. n = 0 gives zeros (NumPy's result)."""
    require_tensor("trapezoid", y, "y")
    _refuse_0d("trapezoid", y, dim)
    d = _wrap_dim(dim, y.ndim, "trapezoid")
    if y.shape[d] == 0:
        return zeros(y.shape[:d] + y.shape[d + 1:], dtype=y.dtype, device=y.device)
    h = _spacing("trapezoid", y, x, dx, d)
    if not isinstance(h, Tensor):
        ends = narrow(y, d, 0, 1) + narrow(y, d, y.shape[d] - 1, 1)
        return (y.sum(d) - ends.squeeze(d) * 0.5) * h
    right, left = _pairs(y, d)
    return (h * (right + left) / 2.0).sum(d)


def trapz(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
          dim: int = -1) -> Tensor:
    """PyTorch's older name of ``trapezoid`` (same arguments and result)."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: float | None = None,
                         dim: int = -1) -> Tensor:
    """The running trapezoidal rule along ``dim``: y (..., n, ...) -> (..., n - 1, ...),
    out_k = sum_{j <= k} h_j (y_j + y_{j+1}) / 2 with h_j = dx or x_{j+1} - x_j."""
    require_tensor("cumulative_trapezoid", y, "y")
    _refuse_0d("cumulative_trapezoid", y, dim)
    d = _wrap_dim(dim, y.ndim, "cumulative_trapezoid")
    h = _spacing("cumulative_trapezoid", y, x, dx, d)
    right, left = _pairs(y, d)
    return cumsum((h / 2.0) * (left + right), d)


# ------------------------------------------------------------------------------ covariance
def _check_weights(name: str, w: Tensor, n: int, integral: bool) -> Tensor:
    require_tensor("cov", w, name, None)
    if w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {w.ndim} dimensions")
    ok = (not w.dtype.is_floating_point and w.dtype is not dtypes.bool_) if integral else \
        w.dtype.is_floating_point
    if not ok:
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{w.dtype.name} dtype")
    if w.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {n}")
    if n and bool(ew.lt(w.detach().min(), 0)):
        raise RuntimeError(f"cov(): {name} cannot be negative")
    return w.reshape(n)


@tensor_method("cov")
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,  # noqa: A002
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables (rows) of a (V, N) input over its N
    observations (columns); a 0-d or 1-D input is one variable. Shape (V, V), squeezed (one
    variable: 0-d). With w = fweights * aweights (either alone, or none: all 1) and
    w_sum = sum(w): avg = sum_n w_n x_n / w_sum, cov = (x - avg) diag(w) (x - avg)^T / f,
    f = w_sum - correction * sum(w aweights) / w_sum with aweights (and correction != 0),
    else w_sum - correction; f <= 0 warns and divides by 0 (inf/NaN), as PyTorch."""
    require_tensor("cov", input)
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    if input.dtype is dtypes.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    correction = _int_arg("cov", "correction", correction, allow_bool=False)
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = _check_weights("fweights", fweights, n, True)
    if aweights is not None:
        aw = _check_weights("aweights", aweights, n, False)
        w = aw if w is None else w * aw
    same_device("cov", input, fweights, aweights)
    w_sum = n if w is None else w.sum()
    if w is not None and not bool(ew.ne(w_sum.detach(), 0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x if w is None else x * w).sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        factor = w_sum - (w * aw).sum() * correction / w_sum
    else:
        factor = w_sum - correction
    if float(factor.detach() if isinstance(factor, Tensor) else factor) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
        factor = 0.0
    centered = x - avg.unsqueeze(1)
    # conjugated for complex input (PyTorch's x (x w)^H: a Hermitian matrix, real diagonal)
    c = matmul(centered, (centered if w is None else centered * w).t().conj())
    return (c / factor).squeeze()


@tensor_method("corrcoef")
def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """Pearson's correlation coefficients of the variables (rows) of a (V, N) input:
    cov / (std_i std_j), clipped to [-1, 1]; shape (V, V) (one variable: 0-d, c / c:
    1, or NaN for a constant variable). Complex input: the Hermitian covariance scaled by
    sqrt of its real diagonal, real and imaginary parts clipped apart (PyTorch's)."""
    require_tensor("corrcoef", input)
    if input.ndim > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but "
                           f"got an input with {input.ndim} dimensions")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = diagonal(c)
    std = ew.sqrt(d.real if d.dtype.is_complex else d)
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    if c.dtype.is_complex:  # PyTorch clips the real and imaginary parts apart
        return complex_(ew.clamp(c.real, -1, 1), ew.clamp(c.imag, -1, 1))
    return ew.clamp(c, -1, 1)


# ------------------------------------------------------------------------------ counting
def _isin_dtype(t) -> None:
    if isinstance(t, Tensor) and t.dtype is dtypes.bool_:
        raise RuntimeError("Unsupported input type encountered for isin(): bool")


def isin(elements: Tensor | int | float, test_elements: Tensor | int | float, *,
         assume_unique: bool = False, invert: bool = False) -> Tensor:
    """For each element, whether it equals some test element (bool, elements' shape; one
    of the two may be a Python number). ``invert`` negates; ``assume_unique`` is accepted
    (the result does not depend on it). NaN is in nothing. Not differentiable."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    for pos, (name, v) in enumerate((("elements", elements), ("test_elements", test_elements)), 1):
        if not isinstance(v, (Tensor, numbers.Number, np.generic)):  # (named eq otherwise)
            raise TypeError(f"isin(): argument '{name}' (position {pos}) must be Tensor or "
                            f"Number, not {type(v).__name__}")
    _isin_dtype(elements)
    _isin_dtype(test_elements)
    same_device("isin", elements, test_elements)
    with no_grad():
        if not isinstance(test_elements, Tensor):
            found = ew.eq(elements.detach(), test_elements)
        elif not isinstance(elements, Tensor):
            found = ew.eq(test_elements.detach(), elements).any()
        elif test_elements.numel() == 0:
            found = full(elements.shape, False, dtype=dtypes.bool_, device=elements.device)
        else:
            dt = dtypes.result_type(elements, test_elements)
            e = elements.detach().to(dt)
            values = sort(test_elements.detach().reshape(-1).to(dt)).values
            pos = ew.clamp(searchsorted(values, e.reshape(-1)), max=values.shape[0] - 1)
            found = ew.eq(index_select(values, 0, pos), e.reshape(-1)).reshape(e.shape)
        return ew.logical_not(found) if invert else found


@tensor_method("histc")
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """The histogram of ``input``'s elements in ``bins`` bins of equal width over
    [min, max] (min == max: the input's own extremes; still equal: widened by 1 each way):
    element x goes to bin k when edge_k <= x < edge_{k+1}, the last bin closed; elements
    outside [min, max] and NaNs are not counted. A (bins,) tensor of input's dtype; not
    differentiable."""
    require_tensor("histc", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{input.dtype.name}' "
                                  f"(histc takes floating point tensors, as in PyTorch)")
    bins = _int_arg("histc", "bins", bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    with no_grad():
        x = input.detach().reshape(-1)
        if lo == hi and x.numel():
            lo, hi = float(x.min()), float(x.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if any(math.isinf(v) or math.isnan(v) for v in (lo, hi)):
            raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
        if not lo < hi:
            raise RuntimeError("torch.histc: max must be larger than min")
        # PyTorch's histc kernel (LINEAR_INTERPOLATION): edges lo, hi rounded to the input
        # dtype, bin = trunc((x - lo) * bins / (hi - lo)) with every step rounded to the
        # input dtype (so bfloat16/float16 bins come from bfloat16/float16 arithmetic)
        dt, dev = input.dtype, input.device
        lo_t, hi_t = (tensor(v, dtype=dt, device=dev) for v in (lo, hi))
        inside = ew.logical_and(ew.ge(x, lo_t), ew.le(x, hi_t))
        v = ew.where(inside, x, lo_t)  # NaN and outside elements: bin 0, not counted
        pos = ((v - lo_t) * tensor(float(bins), dtype=dt, device=dev)) / (hi_t - lo_t)
        k = ew.clamp(pos.to(dtypes.int64), 0, bins - 1)  # x == hi: the last bin (closed)
        return index_add(zeros(bins, dtype=input.dtype, device=input.device), 0, k,
                         inside.to(input.dtype))
