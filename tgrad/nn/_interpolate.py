"""interpolate (resizing), one node per call, re-exported by tgrad.nn.functional.

Shapes (PyTorch's): input (N, C, *spatial) with 1, 2 or 3 spatial dims (3-D, 4-D or 5-D
input; no unbatched form) -> (N, C, *out). ``size`` gives out directly; ``scale_factor``
gives out_i = floor(in_i * scale_i), and the kernels then use 1 / scale_i as the source step
(not in_i / out_i) unless ``recompute_scale_factor=True``, which forgets the factor once out
is known. Modes: 'nearest' (src = floor(dst * step)), 'nearest-exact'
(src = floor((dst + 0.5) * step), clamped), 'linear' / 'bilinear' / 'trilinear' (separable,
two taps per dim; ``align_corners`` maps the corner pixel centres onto each other,
step = (in - 1) / (out - 1), else src = (dst + 0.5) step - 0.5 clamped at 0), 'bicubic'
(4-D only; separable, four taps per dim at floor(src) - 1 .. floor(src) + 2, indices
clamped into the input (border replication), src not clamped at 0, weights of Keys' cubic
convolution with A = -0.75: W(d) = (A + 2)|d|^3 - (A + 3)|d|^2 + 1 for |d| <= 1,
A|d|^3 - 5A|d|^2 + 8A|d| - 4A for 1 < |d| < 2, else 0; no copy shortcut when out == in),
'area' (adaptive average pooling, 3-D, 4-D and 5-D input).

``antialias=True`` ('bilinear' / 'bicubic', 4-D; PyTorch's separable antialias / PIL
filter, used whenever a dim's size changes, up or down): with s = the step (align_corners:
(in - 1) / (out - 1)), output j is centred at c = s (j + 0.5) and reads the inputs
[max(trunc(c - r + 0.5), 0), min(trunc(c + r + 0.5), in)) with r = (taps / 2) max(s, 1)
(taps = 2 bilinear, 4 bicubic), weighted by filter((i - c + 0.5) / max(s, 1)) normalised to
sum 1; filter: the triangle 1 - |d| (bilinear) or the cubic above with A = -0.5 (PIL's;
bicubic). A dim whose size does not change is copied.

How: the source indices and weights depend only on the sizes, so they are computed on the
host with PyTorch's CPU formulas (float32 arithmetic for float32/float16/bfloat16 inputs,
float64 for float64, as its kernels; 4-D nearest inputs follow its nearest_idx quirks, see
_nearest_plan; cached), then each resized spatial dim is one
``index_select`` (nearest) or two index_selects and a weighted sum (linear), or, for
bicubic and antialias, one index_select of K taps per output (K, out) and a weighted sum
over the taps, all inside one ``Resample`` node (PyTorch's Upsample...Backward0 names); its
backward is the adjoint of those steps (a deterministic scatter-add, IndexAdd), so double
backward works too.
"""

from __future__ import annotations

import functools
import math
import warnings
from fractions import Fraction

import numpy as np

from tgrad import dtypes
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.backends import _numpy_interp as _np_interp
from tgrad.nn._conv import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from tgrad.nn.functional import _check_tensor
from tgrad.ops._common import rounded_to, widen_halves, wrap
from tgrad.ops.creation import device_constant
from tgrad.ops.elementwise import node_variant
from tgrad.ops.index import add_at
from tgrad.tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_LINEAR_NDIM = {"linear": 3, "bilinear": 4, "trilinear": 5}


# ---------------------------------------------------------------------------- index maths
def _step(in_size: int, out_size: int, scale, t) -> np.floating:
    """PyTorch's compute_scales_value in dtype t: 1 / scale when a positive scale factor was
    given, else in / out."""
    if scale is not None and scale > 0:
        return t(1.0 / scale)
    return t(in_size) / t(out_size)


def _half_pixel(step, out_size: int, t) -> np.ndarray:
    """step (dst + 0.5) - 0.5 for dst in range(out_size), rounded once to t (PyTorch's
    kernels compute it as a fused multiply-add)."""
    dst = np.arange(out_size)
    if t is np.float32:  # exact in float64 (24-bit operands), then one rounding
        return (np.float64(step) * (dst + 0.5) - 0.5).astype(np.float32)
    s = Fraction(float(step))
    return np.array([float(s * Fraction(2 * d + 1, 2) - Fraction(1, 2))
                     for d in dst.tolist()], dtype=np.float64)


def _freeze(*arrays) -> tuple:
    """The arrays made read-only (the plans are lru-cached and shared), as a tuple."""
    for a in arrays:
        a.flags.writeable = False
    return arrays


def _source_coords(in_size: int, out_size: int, scale, align_corners: bool, t,
                   clamp_at_zero: bool) -> tuple:
    """(real, i0), each (out_size,): the source position of each output index in dtype t,
    (in - 1) / (out - 1) dst with align_corners, else half-pixel step (dst + 0.5) - 0.5
    (clamped at 0 for linear, not for cubic), and i0 = its floor taken in float32
    (PyTorch's guard_index_and_lambda), at most in_size - 1."""
    dst = np.arange(out_size)
    if align_corners:
        step = t(in_size - 1) / t(out_size - 1) if out_size > 1 else t(0)
        real = step * dst.astype(t)
    else:
        real = _half_pixel(_step(in_size, out_size, scale, t), out_size, t)
        if clamp_at_zero:
            real = np.maximum(real, t(0))
    i0 = np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), in_size - 1)
    return real, i0


@functools.lru_cache(maxsize=256)
def _nearest_plan(in_size: int, out_size: int, scale, exact: bool, double: bool,
                  four_d: bool) -> np.ndarray:
    """Source index (out_size,) of PyTorch's CPU nearest / nearest-exact kernels. Those of
    3-D and 5-D inputs compute the step in the input's precision (float32 for halves); those
    of 4-D inputs (nearest_idx / nearest_exact_idx) always in float32, and 'nearest' there
    copies when out == in and takes dst // 2 when out == 2 in, whatever the scale factor."""
    dst = np.arange(out_size)
    if four_d:
        if not exact and out_size == in_size:
            src = dst
        elif not exact and out_size == 2 * in_size:
            src = dst >> 1
        else:
            step = _step(in_size, out_size, scale, np.float32)
            real = (dst + 0.5) * np.float64(step) if exact else dst.astype(np.float32) * step
            src = np.floor(real.astype(np.float32)).astype(np.int64)
    else:
        t = np.float64 if double else np.float32
        step = _step(in_size, out_size, scale, t)
        if exact:
            real = np.maximum(_half_pixel(step, out_size, t), t(0))
            src = np.floor((real.astype(np.float64) + 0.5).astype(np.float32))
        else:
            src = np.floor((step * dst.astype(t)).astype(np.float32))
    return _freeze(np.minimum(src.astype(np.int64), in_size - 1))[0]


@functools.lru_cache(maxsize=256)
def _linear_plan(in_size: int, out_size: int, scale, align_corners: bool,
                 double: bool) -> tuple:
    """(index0, index1, weight0, weight1), each (out_size,), of PyTorch's CPU linear
    kernels: out[j] = weight0[j] in[index0[j]] + weight1[j] in[index1[j]]."""
    t = np.float64 if double else np.float32
    if out_size == in_size:  # PyTorch copies (whatever the scale factor)
        dst = np.arange(out_size)
        return _freeze(dst, dst, np.ones(out_size, t), np.zeros(out_size, t))
    real, i0 = _source_coords(in_size, out_size, scale, align_corners, t, True)
    w1 = np.clip(real - i0.astype(t), t(0), t(1)).astype(t)
    return _freeze(i0, i0 + (i0 < in_size - 1), (t(1) - w1).astype(t), w1)


def _cubic_weights(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel W(d) (see the module docstring) with parameter a."""
    d = np.abs(d)
    near = ((a + 2) * d - (a + 3)) * d * d + 1  # |d| <= 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a  # 1 < |d| < 2
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


@functools.lru_cache(maxsize=256)
def _cubic_plan(in_size: int, out_size: int, scale, align_corners: bool,
                double: bool) -> tuple:
    """(index, weight), each (out_size, 4), of PyTorch's bicubic kernels:
    out[j] = sum_k weight[j, k] in[index[j, k]], taps floor(src) - 1 .. floor(src) + 2
    clamped into [0, in_size), A = -0.75 (source position in the input's precision, float32
    for halves; floor in float32, as PyTorch's guard_index_and_lambda)."""
    t = np.float64 if double else np.float32
    # half-pixel not clamped at 0 (PyTorch's cubic=True)
    real, i0 = _source_coords(in_size, out_size, scale, align_corners, t, False)
    frac = np.clip(real.astype(np.float64) - i0, 0.0, 1.0)
    taps = np.arange(-1, 3)
    index = np.clip(i0[:, None] + taps, 0, in_size - 1)
    weight = _cubic_weights(frac[:, None] - taps, -0.75).astype(t)
    return _freeze(index, weight)


@functools.lru_cache(maxsize=256)
def _antialias_plan(in_size: int, out_size: int, scale, align_corners: bool, cubic: bool,
                    double: bool) -> tuple:
    """(index, weight), each (out_size, K), of PyTorch's antialiased bilinear / bicubic
    (see the module docstring); K = 2 ceil(r) + 1, unused taps index 0 with weight 0."""
    t = np.float64 if double else np.float32
    if align_corners:
        s = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        s = float(_step(in_size, out_size, scale, t))
    taps = 4 if cubic else 2
    widen = s if s >= 1.0 else 1.0
    support = taps * 0.5 * widen
    k = int(math.ceil(support)) * 2 + 1
    index = np.zeros((out_size, k), dtype=np.int64)
    weight = np.zeros((out_size, k), dtype=np.float64)
    for j in range(out_size):
        center = s * (j + 0.5)
        lo = max(int(center - support + 0.5), 0)  # C++ truncation
        n = min(max(min(int(center + support + 0.5), in_size) - lo, 0), k)
        d = (np.arange(lo, lo + n) - center + 0.5) / widen
        w = _cubic_weights(d, -0.5) if cubic else np.maximum(1.0 - np.abs(d), 0.0)
        total = w.sum()
        index[j, :n] = np.arange(lo, lo + n)
        weight[j, :n] = w / total if total != 0 else w
    return _freeze(index, weight.astype(t))


# ---------------------------------------------------------------------------- resampling
def _weighted_taps(y: Tensor, axis: int, index: np.ndarray, weight: np.ndarray) -> Tensor:
    """out[..., j, ...] = sum_k weight[j, k] y[..., index[j, k], ...] along ``axis``:
    one index_select of the (out, K) taps, then a weighted sum over K."""
    o, k = index.shape
    g = y.index_select(axis, device_constant(index.reshape(-1), dtypes.int64, y.device))
    g = g.reshape(y.shape[:axis] + (o, k) + y.shape[axis + 1:])
    w = device_constant(weight, y.dtype, y.device).reshape((o, k) + (1,) * (y.ndim - 1 - axis))
    return (g * w).sum(axis + 1)


def _out_sizes(x: Tensor, output_size, scale_factors) -> list:
    if output_size is not None:
        return [int(s) for s in output_size]
    # PyTorch's compute_output_size: int64(in * scale) in double precision (truncation)
    return [int(i * float(s)) for i, s in zip(x.shape[2:], scale_factors)]


def _check_sizes(x: Tensor, out: list) -> None:
    sizes = x.shape[2:]
    if any(s <= 0 for s in sizes) or any(o <= 0 for o in out):
        names = ("D", "H", "W")[3 - len(sizes):]
        ins = ", ".join(f"{n}: {s}" for n, s in zip(names, sizes))
        outs = ", ".join(f"{n}: {o}" for n, o in zip(names, out))
        sep = " and" if len(sizes) == 1 else ""
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}){sep} output ({outs})")
    if x.shape[1] == 0:
        raise RuntimeError(f"Non-empty {x.ndim}D data tensor expected but got a tensor with "
                           f"sizes {list(x.shape)}")


def _resample(x: Tensor, output_size, scale_factors, mode: str, align_corners,
              antialias: bool = False) -> Tensor:
    """x (N, C, *spatial) resized one spatial dim at a time (see the module docstring)."""
    nearest = mode in ("nearest", "nearest-exact")
    if not (x.dtype.is_floating_point or (nearest and x.dtype is dtypes.uint8)):
        raise NotImplementedError(f"interpolate: mode '{mode}' is not implemented for "
                                  f"{x.dtype.name} inputs in tgrad (floating point only, uint8 "
                                  f"too for the nearest modes; PyTorch's CPU also has uint8 "
                                  f"bilinear / bicubic of 4-D inputs, with its own integer "
                                  f"rounding); convert with .float() first")
    out = _out_sizes(x, output_size, scale_factors)
    _check_sizes(x, out)
    double = x.dtype is dtypes.float64
    steps = []  # (kind, axis, input size, index / weight arrays...) per resized dim
    for i, o in enumerate(out):
        axis, size = 2 + i, x.shape[2 + i]
        scale = None if scale_factors is None else float(scale_factors[i])
        if antialias:
            if o == size:
                continue  # PyTorch copies the dims it does not resize
            steps.append(("taps", axis, size) + _antialias_plan(
                size, o, scale, bool(align_corners), mode == "bicubic", double))
        elif mode == "bicubic":  # no shortcut: a factor with out == in still resamples
            steps.append(("taps", axis, size) + _cubic_plan(size, o, scale,
                                                             bool(align_corners), double))
        elif nearest:
            index = _nearest_plan(size, o, scale, mode == "nearest-exact", double,
                                  x.ndim == 4)
            if o == size and np.array_equal(index, np.arange(o)):
                continue  # the identity
            steps.append(("select", axis, size, index))
        else:
            if o == size:
                continue  # PyTorch copies
            steps.append(("linear", axis, size) + _linear_plan(size, o, scale,
                                                               bool(align_corners), double))
    return _resample_class(mode, x.ndim, antialias).apply(x, (tuple(steps), nearest))


def _select(y: Tensor, axis: int, index: np.ndarray) -> Tensor:
    return y.index_select(axis, device_constant(index, dtypes.int64, y.device))


def _scatter(g: Tensor, axis: int, size: int, index: np.ndarray) -> Tensor:
    """The adjoint of _select: g added back at ``index`` along axis, into ``size``
    positions (an IndexAdd node: its backward is the select, so it differentiates again)."""
    return add_at(g, axis, size, device_constant(index, dtypes.int64, g.device))


def _weights(w: np.ndarray, y: Tensor, axis: int) -> Tensor:
    """w (out,) or (out, K) as a device constant broadcast along ``axis`` of y."""
    return device_constant(w, y.dtype, y.device).reshape(w.shape + (1,) * (y.ndim - 1 - axis))


def _fast(t: Tensor) -> bool:
    """Whether resampling runs on ``t``'s arrays (tgrad/backends/_numpy_interp.py): float32
    or float64 on the CPU."""
    return t.device.type == "cpu" and t.dtype.np in _np_interp.FAST_DTYPES


class Resample(Function):
    """interpolate's resampling: ``spec`` = (steps, nearest), one step per resized spatial
    dim of x (N, C, *spatial), applied in order (see the module docstring):
      ("select", axis, n, index):  y = x.index_select(axis, index);
      ("linear", axis, n, i0, i1, w0, w1):  y = x[i0] w0 + x[i1] w1 along axis;
      ("taps", axis, n, index (out, K), weight (out, K)):  y = sum_k x[index[:, k]] w[:, k].
    No step: a copy of x. Linear modes compute float16/bfloat16 in float32, rounded once.
    One node, PyTorch's Upsample{Nearest,NearestExact,Linear,Bilinear,Bicubic,Trilinear}
    {1,2,3}DBackward0 / Upsample{Bilinear,Bicubic}2DAaBackward0 (``_resample_class``).
    Linear in x: dx = the adjoint, steps in reverse: select -> g index-added at index;
    linear -> (g w0) added at i0 plus (g w1) at i1; taps -> (g w) spread over the K taps,
    added at index. IndexAdd nodes, so the backward differentiates again (d(dx)/dx = 0).
    float32/float64 on the CPU: the forward and the plain backward (not under create_graph
    or forward AD) run the same steps on the arrays (tgrad/backends/_numpy_interp.py, the
    same bits)."""

    name = "upsample"
    node_name = "UpsampleNearest2DBackward0"

    @staticmethod
    def forward(ctx, x, spec):
        steps, nearest = spec
        ctx.spec = spec
        if steps and _fast(x):  # the same arithmetic on the arrays (_numpy_interp)
            return wrap(_np_interp.resample_fwd(x._data, steps), x.device)
        (y,), half = ((x,), None) if nearest else widen_halves(x)
        for kind, axis, _, *plan in steps:
            if kind == "select":
                y = _select(y, axis, plan[0])
            elif kind == "linear":
                i0, i1, w0, w1 = plan
                y = _select(y, axis, i0) * _weights(w0, y, axis) + \
                    _select(y, axis, i1) * _weights(w1, y, axis)
            else:
                y = _weighted_taps(y, axis, *plan)
        if not steps:
            y = y.clone()  # a new tensor, as PyTorch's
        return rounded_to(y, half)

    @staticmethod
    def backward(ctx, g):
        steps, nearest = ctx.spec
        if steps and not differentiable_formula() and _fast(g):  # (_numpy_interp)
            return wrap(_np_interp.resample_bwd(g._data, steps), g.device), None
        (g,), half = ((g,), None) if nearest else widen_halves(g)
        for kind, axis, size, *plan in reversed(steps):
            if kind == "select":
                g = _scatter(g, axis, size, plan[0])
            elif kind == "linear":
                i0, i1, w0, w1 = plan
                g = _scatter(g * _weights(w0, g, axis), axis, size, i0) + \
                    _scatter(g * _weights(w1, g, axis), axis, size, i1)
            else:
                index, weight = plan
                o, k = index.shape
                spread = g.unsqueeze(axis + 1) * _weights(weight, g, axis)  # (.., o, K, ..)
                g = _scatter(spread.reshape(g.shape[:axis] + (o * k,) + g.shape[axis + 1:]),
                             axis, size, index.reshape(-1))
        return rounded_to(g, half), None


_NODE_MODES = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear",
               "bilinear": "Bilinear", "bicubic": "Bicubic", "trilinear": "Trilinear"}


@functools.lru_cache(maxsize=None)
def _resample_class(mode: str, ndim: int, antialias: bool) -> type:
    """Resample under PyTorch's node name for ``mode`` on an ndim-D input."""
    name = f"Upsample{_NODE_MODES[mode]}{ndim - 2}D{'Aa' if antialias else ''}Backward0"
    return node_variant(Resample, name, name="upsample_" + mode.replace("-", "_")
                        + f"{ndim - 2}d" + ("_aa" if antialias else ""))


# ---------------------------------------------------------------------------- public API
def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize (N, C, L), (N, C, H, W) or (N, C, D, H, W) to ``size`` or by ``scale_factor``
    (a number or one per spatial dim) with PyTorch's index and weight formulas. ``mode``:
    'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear' (4-D), 'bicubic' (4-D),
    'trilinear' (5-D) or 'area' (3-D/4-D/5-D); ``align_corners`` only for the interpolating
    modes (default False); ``antialias`` for 'bilinear' / 'bicubic' (PyTorch's separable
    antialias filter, see the module docstring)."""
    _check_tensor("interpolate", input, "input")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2  # number of spatial dims
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and output "
                    f"size of {size}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    f"format and output size in (o1, o2, ...,oK) format.")
            if not all(_is_int(s) for s in size):
                raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, "
                                f"int] or Tuple[int, int, int], but got size with types "
                                f"{[type(s) for s in size]}")
            output_size = list(size)
        else:
            if not _is_int(size):
                raise TypeError(f"interpolate(): expected size to be an int or a tuple of "
                                f"ints, but got {type(size).__name__}")
            output_size = [size] * dim
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    f"Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    f"(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                    f"format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor)] * dim
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True  # area always works from an explicit size
    if recompute_scale_factor:
        output_size = [int(input.shape[i + 2] * scale_factors[i]) for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if antialias and mode == "lanczos":
        raise NotImplementedError("interpolate: mode 'lanczos' is not supported in tgrad")
    if antialias:
        return _resample(input, output_size, scale_factors, mode, align_corners, True)
    if input.ndim in (3, 4, 5):
        if mode in ("nearest", "nearest-exact"):
            return _resample(input, output_size, scale_factors, mode, None)
        if mode == "area":
            pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[input.ndim - 3]
            return pool(input, output_size)
        if _LINEAR_NDIM.get(mode) == input.ndim:
            return _resample(input, output_size, scale_factors, mode, align_corners)
        if mode in _LINEAR_NDIM:
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                      f"{_LINEAR_NDIM[mode]}D input")
        if mode == "bicubic" and input.ndim == 4:
            return _resample(input, output_size, scale_factors, mode, align_corners)
        if mode == "lanczos" and input.ndim == 4:
            raise NotImplementedError(f"interpolate: mode '{mode}' is not supported in tgrad")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
        f"modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
        f"nearest-exact (got {mode})")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of interpolate (warns, as PyTorch's)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated: interpolate(input, size, scale_factor, mode='nearest') (warns)."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated: interpolate(input, size, scale_factor, mode='bilinear',
    align_corners=True) (warns)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
