"""Fractional max pooling (Graham 2014), re-exported by tgrad.nn.functional:
fractional_max_pool2d / 3d and their *_with_indices forms.

Shapes: input (N, C, *spatial) or unbatched (C, *spatial), spatial of 2 or 3 dims; output
(N, C, *output_size). For each (n, c) plane one sample u in [0, 1) per spatial dim (drawn
from tgrad's generator as ``rand(N, C, k)`` of input's dtype, or ``_random_samples``)
places the windows as PyTorch's generate_intervals: with alpha = (in - k) / (out - 1),

    start[i] = int((i + u) alpha) - int(u alpha)   for i < out - 1,   start[out - 1] = in - k

(computed in the input's float type, as ATen). Each output is the max of the k-window from
start; its index is the flat position in the input plane (h W + w, or t H W + h W + w); a
NaN wins (the last one in the window), ties keep the first. Sample order, as ATen's: 2-d
(W, H) -- sample 0 places the width windows; 3-d (T, H, W).

The maxima are found on the host (NumPy) and read with ``gather`` in one node
(FractionalMaxPool2D/3DBackward0, PyTorch's), so d input = g scattered (added) to the chosen
positions, and double backward works.
"""

from __future__ import annotations

import numpy as np

from tgrad._autocast import autocast_policy
from tgrad.autograd import function as _function
from tgrad.autograd.function import Function
from tgrad.nn._ntuple import _ntuple
from tgrad.nn.functional import _check_float, _check_tensor
from tgrad.ops._common import fresh
from tgrad.ops.elementwise import node_variant
from tgrad.tensor import Tensor

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


def _n_args(op: str, name: str, value, n: int) -> tuple:
    vals = _ntuple(value, n)
    if len(vals) != n:
        raise ValueError(f"{op}: {name} must be an int or a tuple of {n} (got {value})")
    return vals


def _intervals(samples: np.ndarray, size: int, out: int, k: int, dtype) -> np.ndarray:
    """Window starts (..., out) for samples (...) (ATen's generate_intervals)."""
    starts = np.empty(samples.shape + (out,), dtype=np.int64)
    if out > 1:
        alpha = dtype.type(size - k) / dtype.type(out - 1)
        u = samples.astype(dtype)[..., None]
        i = np.arange(out - 1, dtype=dtype)
        starts[..., :out - 1] = ((i + u) * alpha).astype(np.int64) \
            - (u * alpha).astype(np.int64)
    if out > 0:
        starts[..., out - 1] = size - k
    return starts


def _fractional(op: str, input: Tensor, kernel_size, output_size, output_ratio,  # noqa: A002
                random_samples, n: int) -> tuple[Tensor, Tensor]:
    from tgrad.ops.creation import rand, tensor
    _check_tensor(op, input)
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{op}(): Expected {n + 1}D or {n + 2}D tensor, but got "
                           f"{input.ndim}D input of shape {tuple(input.shape)}")
    _check_float(op, input)
    empty = [d for d in range(1, input.ndim) if input.shape[d] == 0]
    if empty:  # only the leading (batch, or unbatched channel) dim may be empty, as PyTorch
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but got{list(input.shape)} with dimension "
                           f"{empty[0]} being empty.")
    kernel = _n_args(op, "kernel_size", kernel_size, n)
    if any(k <= 0 for k in kernel):  # (PyTorch 2.13 does not check: its windows are empty
        # and its values -inf; no window to take a maximum of is an error here)
        raise RuntimeError(f"{op}(): kernel_size must be greater than zero, but got "
                           f"{list(kernel)}")
    spatial = tuple(input.shape[-n:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an "
                             f"output_ratio")
        ratio = _n_args(op, "output_ratio", output_ratio, n)
        output_size = tuple(int(s * r) for s, r in zip(spatial, ratio))
    out = _n_args(op, "output_size", output_size, n)
    names = ("height", "width") if n == 2 else ("time", "height", "width")
    for name, s, k, o in zip(names, spatial, kernel, out):
        if o + k - 1 > s:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} "
                               f"{s}")
    unbatched = input.ndim == n + 1
    x = input.unsqueeze(0) if unbatched else input
    planes = tuple(x.shape[:2])
    if random_samples is None:
        random_samples = rand(planes[0], planes[1], n, dtype=input.dtype, device=input.device)
    _check_tensor(op, random_samples, "_random_samples")
    if tuple(random_samples.shape) != planes + (n,):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {planes + (n,)} (N, C, "
                           f"{n}), got {tuple(random_samples.shape)}")
    u = np.asarray(random_samples.detach().numpy(force=True), dtype=np.float64)
    dt = np.dtype(np.float64) if input.dtype.itemsize == 8 else np.dtype(np.float32)
    order = (1, 0) if n == 2 else (0, 1, 2)  # which sample places which spatial dim
    flat = 0  # (N, C, *out, *kernel) flat plane positions of every window element
    stride = 1
    for d in reversed(range(n)):
        starts = _intervals(u[..., order[d]], spatial[d], out[d], kernel[d], dt)  # (N, C, o)
        pos = starts[..., :, None] + np.arange(kernel[d])  # (N, C, o_d, k_d)
        pos = pos.reshape(planes + (1,) * d + (out[d],) + (1,) * (n - 1 - d)
                          + (1,) * d + (kernel[d],) + (1,) * (n - 1 - d))
        flat = flat + pos * stride
        stride *= spatial[d]
    flat = np.broadcast_to(flat, planes + out + kernel).reshape(planes + out
                                                                + (int(np.prod(kernel)),))
    values = np.asarray(x.detach().numpy(force=True)).reshape(planes + (stride,))  # no -1:
    # an empty batch or channel dim (planes of 0) leaves it undetermined
    taps = flat.reshape(planes + (int(np.prod(flat.shape[2:])),))
    window = np.take_along_axis(values, taps, 2).reshape(flat.shape)
    nan = np.isnan(window)
    last_nan = window.shape[-1] - 1 - np.argmax(nan[..., ::-1], -1)
    choice = np.where(nan.any(-1), last_nan, np.argmax(np.where(nan, -np.inf, window), -1))
    index = np.take_along_axis(flat, choice[..., None], -1)[..., 0]  # (N, C, *out)
    idx = tensor(np.ascontiguousarray(index), device=input.device)
    if unbatched:  # (a view of the op's own temporary: a new tensor, PyTorch's)
        idx = fresh(idx.squeeze(0))
    return _FRACTIONAL[n].apply(input, idx), idx


class FractionalMaxPool(Function):
    """y = x's value at each window's maximum: ``idx`` (N, C, *out) or unbatched (C, *out)
    holds the flat positions in x's (*spatial) plane (found on the host, above); n = 2 or
    3 spatial dims (``_FRACTIONAL``). One node on the input as given, PyTorch's
    FractionalMaxPool2DBackward0 / FractionalMaxPool3DBackward0 (_saved_indices).
    dx = g scatter-added at those positions (whose backward is a gather: differentiates
    again), attached to x's graph (_piecewise._Attach: d(dx)/dx = 0)."""

    name = "fractional_max_pool2d"
    node_name = "FractionalMaxPool2DBackward0"
    hidden_edges = (1,)  # the indices: no edge (PyTorch's node has the input's only)
    spatial = 2
    saved_attributes = {"_saved_self": 0, "_saved_indices": _function.KeptTensor("idx")}

    @classmethod
    def forward(cls, ctx, x, idx):
        ctx.save_for_backward(x)
        ctx.idx = idx
        lead = tuple(x.shape[:x.ndim - cls.spatial])
        plane = int(np.prod(x.shape[x.ndim - cls.spatial:]))  # (no -1: lead may hold a 0)
        out = int(np.prod(idx.shape[idx.ndim - cls.spatial:]))
        return fresh(x.reshape(lead + (plane,)).gather(-1, idx.reshape(lead + (out,)))
                     .reshape(idx.shape))

    @classmethod
    def backward(cls, ctx, g):
        from tgrad.nn._conv import max_indices_adjoint
        (x,) = ctx.saved_tensors
        return max_indices_adjoint(g, x, ctx.idx, cls.spatial), None


_FRACTIONAL = {2: FractionalMaxPool,
               3: node_variant(FractionalMaxPool, "FractionalMaxPool3DBackward0",
                               saved_attributes=FractionalMaxPool.saved_attributes,
                               name="fractional_max_pool3d", spatial=3)}


@autocast_policy(None, cpu="fp32")
def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """(values, int64 flat h W + w indices) of fractional max pooling over (H, W)."""
    return _fractional("fractional_max_pool2d", input, kernel_size, output_size,
                       output_ratio, _random_samples, 2)


@autocast_policy(None, cpu="fp32")
def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None
                                       ) -> tuple[Tensor, Tensor]:
    """(values, int64 flat t H W + h W + w indices) of fractional max pooling over
    (T, H, W)."""
    return _fractional("fractional_max_pool3d", input, kernel_size, output_size,
                       output_ratio, _random_samples, 3)


@autocast_policy(None, cpu="fp32")
def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                          output_ratio=None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    """Fractional max pooling over the last two dims; with ``return_indices`` also the
    flat positions of the maxima (for max_unpool2d)."""
    y, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                output_ratio, True, _random_samples)
    return (y, idx) if return_indices else y


@autocast_policy(None, cpu="fp32")
def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None,  # noqa: A002
                          output_ratio=None, return_indices: bool = False,
                          _random_samples: Tensor | None = None):
    """Fractional max pooling over the last three dims (module doc)."""
    y, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                output_ratio, True, _random_samples)
    return (y, idx) if return_indices else y
