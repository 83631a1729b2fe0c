"""Small PyTorch functions built from tgrad ops, with PyTorch's signatures:

- ``logspace(start, end, steps, base)``: base ** linspace(start, end, steps), computed in
  float64 on the host and cast (like ``linspace``; an integer dtype as PyTorch's kernel);
- ``randint_like(input, low, high)``: ``randint`` with input's shape, dtype and device;
- ``narrow_copy``: ``narrow`` then ``clone`` (new memory);
- ``is_floating_point(input)`` as a function (it is a Tensor method too);
- ``unravel_index(indices, shape)``: the coordinates of flat row-major indices, a tuple of
  int64 tensors of indices' shape (floor division and remainder, on indices' device);
- ``vander(x, N, increasing)``: columns x^(N-1), ..., x, 1 (or increasing powers) as a
  cumulative product of x, as PyTorch builds it (its gradient is cumprod's, exact at 0).
"""

from __future__ import annotations

import numpy as np

from tgrad import dtypes
from tgrad._layout import check_layout
from tgrad.ops._common import require_tensor, tensor_method
from tgrad.ops.creation import (
    _finish,
    check_pin_memory,
    ones,
    randint,
    spaced_dtype,
    spaced_integers,
)
from tgrad.ops.shape import cat, narrow
from tgrad.tensor import Tensor, _int_arg

__all__ = ["logspace", "randint_like", "narrow_copy", "is_floating_point", "unravel_index",
           "vander"]


def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype=None,
             device=None, requires_grad: bool = False, *, layout=None,
             pin_memory: bool = False) -> Tensor:
    """``steps`` values from base^start to base^end, evenly spaced in the exponent. An
    integer dtype converts start and end to it first, as PyTorch (``logspace(0.1, 0.9, 3,
    dtype=int64)`` is [1, 1, 1]; see ``creation.spaced_integers``)."""
    if pin_memory:
        check_pin_memory("logspace", device)
    check_layout("logspace", layout)
    dt, _ = spaced_dtype("logspace", start, end, dtype)
    steps = _int_arg("logspace", "steps", steps, 3, allow_bool=False)
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    if dt.is_complex:  # base ** (complex exponents)
        lo, hi = (complex(v.item() if isinstance(v, Tensor) else v) for v in (start, end))
        return _finish(np.power(complex(base), np.linspace(lo, hi, steps)).astype(dt.np),
                       device, requires_grad)
    if not dt.is_floating_point:
        return _finish(spaced_integers("logspace", start, end, steps, dt, float(base)),
                       device, requires_grad)
    if dt in dtypes.FLOAT8_DTYPES and steps > 1:  # PyTorch has no float8 logspace kernel
        dtypes.refuse_float8("logspace_cpu", dt)  # (0 or 1 value, base^start, it fills)
    values = _real_logspace(start, end, steps, float(base), dt.np)
    if dt in dtypes.FLOAT8_DTYPES:
        return _finish(dtypes.to_float8(values, dt.np), device, requires_grad)
    return _finish(values.astype(dt.np), device, requires_grad)


def _real_logspace(start, end, steps: int, base: float, np_dtype) -> np.ndarray:
    """PyTorch's CPU logspace for a real floating dtype, in float64: start and end rounded to
    the dtype, step = double(end - start) / (steps - 1) (the difference in the dtype),
    exponent i < steps // 2 start + step * i, else end - step * (steps - 1 - i), then
    base ** exponent by C's pow (np.float_power: bit for bit math.pow, where np.power's
    vector loop can be 1 ulp off) rounded to the dtype; one value: base ** start."""
    lo, hi = (v.item() if isinstance(v, Tensor) else v for v in (start, end))
    with np.errstate(all="ignore"):
        if steps <= 1:
            return np.float_power(base, np.full(steps, float(lo)))
        lo_t, hi_t = np_dtype.type(lo), np_dtype.type(hi)
        step = np.float64(hi_t - lo_t) / (steps - 1)
        i = np.arange(steps, dtype=np.float64)
        ex = np.where(i < steps // 2, np.float64(lo_t) + step * i,
                      np.float64(hi_t) - step * (steps - 1 - i))
        return np.float_power(base, ex)


def randint_like(input: Tensor, low: int = 0, high: int | None = None, *,  # noqa: A002
                 dtype=None, device=None, requires_grad: bool = False,
                 generator=None, layout=None) -> Tensor:
    """Integers uniform in [low, high) in input's shape (``randint_like(x, high)`` means
    low = 0), with input's dtype and device unless given."""
    require_tensor("randint_like", input)
    check_layout("randint_like", layout)
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), generator=generator,
                   dtype=dtype or input.dtype, device=device or input.device,
                   requires_grad=requires_grad)


@tensor_method("narrow_copy")
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:  # noqa: A002
    """``narrow`` as new memory (a copy, not a view)."""
    require_tensor("narrow_copy", input)
    return narrow(input, dim, start, length).clone()


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    """True for float16, bfloat16, float32 and float64 tensors."""
    require_tensor("is_floating_point", input)
    return input.dtype.is_floating_point


def unravel_index(indices: Tensor, shape) -> tuple:
    """The row-major coordinates in ``shape`` of flat ``indices`` (negative ones count from
    the end, as PyTorch), one int64 tensor per dim."""
    require_tensor("unravel_index", indices, "indices")
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    for s in shape:  # PyTorch's TypeError (int() truncated a float size)
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"unravel_index: expected 'shape' sequence to only contain ints, "
                            f"but got {type(s)}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    total = int(np.prod(shape))
    idx = indices.to(dtypes.int64)
    if idx.numel():
        lo, hi = int(idx.min()), int(idx.max())  # on a GPU: synchronizing reads
        if lo < -total or hi >= total:
            raise ValueError(f"'indices' must be in range [{-total}, {total - 1}] for shape "
                             f"{tuple(shape)}")
    idx = idx % max(total, 1)
    coords = []
    for size in reversed(shape):
        coords.append(idx % size if size else idx * 0)
        idx = idx // size if size else idx
    return tuple(reversed(coords))


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-D x: column j is x^(N-1-j) (increasing: x^j), N
    columns (default len(x))."""
    require_tensor("vander", x, "x")
    if x.ndim != 1:
        raise RuntimeError(f"x must be a one-dimensional tensor, got {x.ndim} dimensions")
    n = x.shape[0] if N is None else _int_arg("vander", "N", N, allow_bool=False)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = x.dtype if x.dtype is not dtypes.bool_ else dtypes.int64
    first = ones(x.shape[0], 1, dtype=dt, device=x.device)
    if n == 0:
        return first[:, :0]
    powers = cat([first, x.to(dt).unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1)
    return powers if increasing else powers.flip(1)
