"""Convolution and pooling as compositions of tgrad ops (no kernel of their own, except on
the CPU: below), re-exported by tgrad.nn.functional.

Shapes (PyTorch's): conv2d input (N, C, H, W) or unbatched (C, H, W), weight
(O, C / groups, kh, kw), bias (O,) -> (N, O, oh, ow) with
oh = (H + 2 ph - dh (kh - 1) - 1) // sh + 1 (ow likewise). The 1-d forms run as 2-d ones
with H = 1.

How: the padded input is flattened to (N, C, Hp Wp) and its windows are gathered by one
``Im2Col`` into columns (N, C, kh kw, oh ow) ("im2col"); a convolution is then one
batched matmul of the weight (groups, O / groups, C / groups kh kw) with those columns, and
a pooling a max or mean over the kh kw axis (a convolution as one ``Convolution`` node,
PyTorch's ConvolutionBackward0, whose backward is the formula of those parts). Gradients
come from the parts: the gather's
backward (``Col2Im``) adds the columns' gradient into the overlapping windows (on the CPU
one strided-slice add per kernel offset, deterministic kernels on the GPU), max's
backward routes each window's gradient to the index it returned (the first maximum, or
the last NaN, as PyTorch's max_pool2d), so double backward works too. Memory is that of
im2col: N C kh kw oh ow elements for the columns.

On the CPU, ``Convolution`` in float32/float64 runs the same steps as NumPy primitives
(tgrad/backends/_numpy_conv.py, scratch arrays in a workspace) and ``MaxPool`` in
float32/float64 and the integers strided per-tap NumPy kernels without columns
(tgrad/backends/_numpy_pool.py), both bit-identical to the composite; likewise the
adaptive poolings (float32/float64; average pooling of halves in float32) one pass per dim
(tgrad/backends/_numpy_adaptive.py; the average's NaNs may keep another NaN's payload).
The composite is what runs under create_graph (the backward) and on other dtypes and
devices.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterable

import numpy as np

from tgrad import dtypes
from tgrad._autocast import autocast_policy, max_pool3d_cpu_policy
from tgrad.autograd import function as _function
from tgrad.autograd.function import Function, differentiable_formula
from tgrad.autograd.grad_mode import is_grad_enabled
from tgrad.backends import _numpy_adaptive as _np_adapt
from tgrad.backends import _numpy_conv as _np_conv
from tgrad.backends import _numpy_pool as _np_pool
from tgrad.nn._composite import pad as _pad
from tgrad.nn._piecewise import _Attach
from tgrad.nn.functional import _check_float, _check_tensor
from tgrad.ops import elementwise as ew
from tgrad.ops._common import backend_of, fresh, rounded_to, widen_halves, wrap
from tgrad.ops.creation import device_constant
from tgrad.ops.creation import tensor as _tensor
from tgrad.ops.elementwise import where
from tgrad.ops.gathering import _along_key, checked_on_device
from tgrad.ops.index import IndexAdd, normalize_key
from tgrad.tensor import Tensor

__all__ = ["conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
           "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d", "unfold", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


def _tuple(op: str, what: str, value, n: int) -> tuple:
    """``value`` as n ints (an int repeats; a sequence must have 1 or n entries); anything
    else (a float, even 2.0, a str, None; a float entry) is PyTorch's TypeError."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        vals = (int(value),)
    elif isinstance(value, Iterable) and not isinstance(value, str):
        vals = list(value)
        for i, v in enumerate(vals):
            try:  # (ints, NumPy integers, integer 0-d tensors)
                vals[i] = operator.index(v)
            except TypeError:
                raise TypeError(f"{op}(): argument '{what}' must be tuple of ints, but found "
                                f"element of type {type(v).__name__} at pos {i}") from None
        vals = tuple(vals)
    else:
        raise TypeError(f"{op}(): argument '{what}' must be tuple of ints, not "
                        f"{type(value).__name__}")
    if len(vals) == 1:
        return vals * n
    if len(vals) != n:
        raise RuntimeError(f"{op}: {what} must either be a single int, or a tuple of {n} ints "
                           f"(got {list(vals)})")
    return vals


def _row_major_strides(sizes: tuple) -> np.ndarray:
    """The element stride of each dim of a contiguous array of ``sizes``."""
    return np.cumprod((1,) + tuple(sizes[:0:-1]))[::-1]


@functools.lru_cache(maxsize=256)
def _window_index(size: tuple, kernel: tuple, stride: tuple, dilation: tuple,
                  out: tuple) -> np.ndarray:
    """Flat positions (into a row-major (Hp, Wp) plane, or a (Dp, Hp, Wp) volume) of every
    window element: shape (prod kernel, prod out); in 2-d, entry [ky kw + kx, oy ow + ox] =
    (oy sh + ky dh) Wp + ox sw + kx dw, and likewise per dim in 3-d."""
    nd = len(size)
    place = _row_major_strides(size)
    idx = np.zeros((1,) * (2 * nd), np.int64)
    for i, (k, st, d, o) in enumerate(zip(kernel, stride, dilation, out)):
        shape_k = [1] * (2 * nd)
        shape_k[i] = k
        shape_o = [1] * (2 * nd)
        shape_o[nd + i] = o
        coord = (np.arange(k) * d).reshape(shape_k) + (np.arange(o) * st).reshape(shape_o)
        idx = idx + coord * int(place[i])
    idx = idx.reshape(int(np.prod(kernel)), int(np.prod(out)))
    idx.flags.writeable = False  # cached (and shared as a device constant)
    return idx


def _window_key(geom: tuple, device) -> tuple:
    """The backend key (:, :, flat window index) of ``geom`` = (size, kernel, stride,
    dilation, blocks) for a (N, C, prod size) tensor on ``device``. On the CPU the cached
    read-only index itself (the NumPy im2col / col2im read the geometry, not the key; no
    per-call copy of the index); elsewhere its device copy, as any index key."""
    idx = _window_index(*geom)
    if device.type == "cpu":
        return (slice(None), slice(None), idx.reshape(-1))
    index = device_constant(idx, dtypes.int64, device).reshape(-1)
    return normalize_key((slice(None), slice(None), index), device)[0]


class Im2Col(Function):
    """cols = x[:, :, idx] (x (N, C, prod size) flat planes, idx = _window_index(*geom):
    every window's elements, (N, C, prod kernel prod blocks));  dx = Col2Im(g) (each
    window's gradient added back where it was read: the adjoint of the gather). Backend
    ``im2col``: the gather at the key on the GPU, a copy of a strided view of the planes in
    NumPy (the same values)."""

    name = "im2col"
    node_name = "Im2ColBackward0"

    @staticmethod
    def forward(ctx, x, key, geom):
        ctx.key, ctx.geom = key, geom
        return wrap(backend_of(x).im2col(x._data, key, *geom), x.device)

    @staticmethod
    def backward(ctx, g):
        return Col2Im.apply(g, ctx.key, ctx.geom), None, None


class Col2Im(Function):
    """y = zeros (N, C, prod size) with cols (N, C, prod kernel prod blocks) added at the
    window positions (PyTorch's col2im: overlaps add up);  dcols = Im2Col(gy). Backend
    ``col2im``: deterministic, in index_add's summation order over the key (the NumPy one
    adds one strided slice per kernel offset, the GPU one runs index_add)."""

    name = "col2im"
    node_name = "Col2ImBackward0"

    @staticmethod
    def forward(ctx, cols, key, geom):
        ctx.key, ctx.geom = key, geom
        return wrap(backend_of(cols).col2im(cols._data, key, *geom), cols.device)

    @staticmethod
    def backward(ctx, gg):
        return Im2Col.apply(gg, ctx.key, ctx.geom), None, None


def _columns(x: Tensor, kernel: tuple, stride: tuple, dilation: tuple,
             out: tuple) -> Tensor:
    """im2col of a padded (N, C, *spatial) input: (N, C, prod kernel, prod out)."""
    n, c = x.shape[:2]
    geom = (tuple(x.shape[2:]), kernel, stride, dilation, out)
    flat = x.reshape(n, c, math.prod(x.shape[2:]))
    cols = Im2Col.apply(flat, _window_key(geom, x.device), geom)
    return cols.reshape(n, c, math.prod(kernel), math.prod(out))


def _check_like_input(op: str, x: Tensor, weight: Tensor, bias: Tensor | None) -> None:
    """weight and bias must have the input's dtype and device (convolutions, transposed or
    not)."""
    for t, name in ((weight, "weight"), (bias, "bias")):
        if t is not None and (t.dtype is not x.dtype or t.device != x.device):
            kind = "dtype" if t.dtype is not x.dtype else "device"
            raise RuntimeError(
                f"{op}: Input type ({_type_name(x)}) and {name} type ({_type_name(t)}) should "
                f"be the same: expected input and {name} to have the same dtype and device, "
                f"but got input {x.dtype.name} on {x.device} and {name} {t.dtype.name} on "
                f"{t.device}; convert the {name} with .to(input.{kind})")


def _type_name(t: Tensor) -> str:
    """PyTorch's type in its conv dtype/device errors: 'float', 'double', 'cuda float'..."""
    name = dtypes.SCALAR_TYPE_NAMES.get(t.dtype, t.dtype.name).lower()
    return name if t.device.type == "cpu" else f"{t.device.type} {name}"


def _pad_hw(x: Tensor, pad: tuple, value: float) -> Tensor:
    """(N, C, H, W) padded by (ph, pw) on both sides with ``value``."""
    ph, pw = pad
    if ph == 0 and pw == 0:
        return x
    return _pad(x, (pw, pw, ph, ph), value=value)


def _batched(op: str, x: Tensor, spatial: int) -> tuple:
    """(x with a batch dim, whether one was added) for an input of spatial + 1 or
    spatial + 2 dims."""
    if x.ndim == spatial + 2:
        return x, False
    if x.ndim == spatial + 1:
        return x.unsqueeze(0), True
    raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input "
                       f"to {op}, but got input of size: {list(x.shape)}")


# ---------------------------------------------------------------------------- convolution
def _same_padding(kernel: tuple, dilation: tuple) -> tuple:
    """'same': total padding d (k - 1) per dim, left = total // 2, right = the rest."""
    return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                 for k, d in zip(kernel, dilation))


def _conv(op: str, input: Tensor, weight: Tensor, bias, stride, padding, dilation,  # noqa: A002
          groups: int, spatial: int) -> Tensor:
    _check_tensor(op, input, "input")
    _check_tensor(op, weight, "weight")
    if weight.ndim != spatial + 2:
        raise RuntimeError(f"{op}: expected weight to be {spatial + 2}-dimensional (out "
                           f"channels, in channels / groups, kernel...), but got weight of "
                           f"size {list(weight.shape)}")
    x, added = _batched(op, input, spatial)
    stride = _tuple(op, "stride", stride, spatial)
    dilation = _tuple(op, "dilation", dilation, spatial)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * spatial
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = _same_padding(kernel, dilation)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = tuple((p, p) for p in _tuple(op, "padding", padding, spatial))
        if any(p < 0 for p, _ in pads):
            raise RuntimeError("negative padding is not supported")
    out_ch, in_per_group = weight.shape[0], weight.shape[1]
    c = x.shape[1]
    if out_ch == 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {list(weight.shape)} instead")
    if out_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{list(weight.shape)}] instead")
    if c != in_per_group * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {in_per_group * groups} "
                           f"channels, but got {c} channels instead")
    if bias is not None:
        _check_tensor(op, bias, "bias")
        if bias.shape != (out_ch,):
            raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                               f"1-dimensional with {out_ch} elements, but got bias of size "
                               f"{list(bias.shape)} instead")
    _check_like_input(op, x, weight, bias)
    padded = tuple(s + lo + hi for s, (lo, hi) in zip(x.shape[2:], pads))
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(p < s for p, s in zip(padded, span)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, span))}). Kernel size can't be greater "
                           f"than actual input size")
    out = tuple((p - s) // st + 1 for p, s, st in zip(padded, span, stride))
    y = Convolution.apply(x, weight, bias, (kernel, stride, dilation, pads, groups, out))
    # (a squeeze of the op's own temporary: a new tensor, PyTorch's, not a view)
    return fresh(y.squeeze(0)) if added else y


def _conv_columns(x: Tensor, groups: int, kernel: tuple, stride: tuple, dilation: tuple,
                  out: tuple) -> Tensor:
    """Padded x (N, C, *spatial) -> its columns (N, groups, C / groups k, L), k = prod
    kernel, L = prod out (_columns, grouped)."""
    n, c = x.shape[0], x.shape[1]
    cols = _columns(x, kernel, stride, dilation, out)  # (N, C, k, L)
    return cols.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(out))


def _conv_core(x: Tensor, weight: Tensor, groups: int, kernel: tuple, stride: tuple,
               dilation: tuple, out: tuple) -> tuple:
    """Padded x (N, C, *spatial), weight (O, C/g, *kernel) -> ((N, O, *out), the columns):
    y[n, g, o, l] = sum_{c, k} w[g, o, c k] cols[n, g, c k, l] (k, l flat window/output)."""
    out_ch = weight.shape[0]
    cols = _conv_columns(x, groups, kernel, stride, dilation, out)
    w = weight.reshape(groups, out_ch // groups, cols.shape[2])
    return (w @ cols).reshape(x.shape[0], out_ch, *out), cols


def _as_2d(x: Tensor, weight: Tensor, geometry: tuple) -> tuple:
    """A 1-d convolution's input (N, C, L), weight (O, C/g, k) and geometry as the 2-d
    one's with H = 1 (other ranks unchanged)."""
    kernel, stride, dilation, pads, groups, out = geometry
    if len(kernel) != 1:
        return x, weight, geometry
    return x.unsqueeze(2), weight.unsqueeze(2), ((1,) + kernel, (1,) + stride, (1,) + dilation,
                                                 ((0, 0),) + pads, groups, (1,) + out)


def _padded(x: Tensor, pads: tuple) -> Tensor:
    """x (N, C, *spatial) zero-padded by pads ((lo, hi) per spatial dim)."""
    flat_pads = tuple(p for lo_hi in reversed(pads) for p in lo_hi)
    return _pad(x, flat_pads) if any(flat_pads) else x


def _conj(t: Tensor) -> Tensor:
    return t.conj() if t.dtype.is_complex else t


def _fast_conv(x: Tensor) -> bool:
    """Whether Convolution runs the NumPy primitives (tgrad/backends/_numpy_conv.py) on
    ``x``: a CPU tensor of a real dtype they take (float32/float64; weight and bias have
    x's dtype and device, _check_like_input)."""
    return x.device.type == "cpu" and x.dtype.np in _np_conv.FAST_DTYPES


def _bias_grad(g: Tensor, spatial: int) -> Tensor:
    """db = g (N, O, *out) summed over N and the spatial dims: a contiguous g as its
    (N, O, L) view over (0, 2), one pass (a pairwise sum per output plane, running over N;
    float64 bit for bit the (0, 2, ...) sum, which NumPy reduces the same way; float32 within
    an ulp or two of it: the per-axis cascade over (0, 2, 3) made one pass per axis, 4-6x
    slower on a (32, 16, 32, 32) gradient)."""
    if spatial > 1 and g.is_contiguous():
        return g.reshape(g.shape[0], g.shape[1], math.prod(g.shape[2:])).sum((0, 2))
    return g.sum((0,) + tuple(range(2, 2 + spatial)))


class Convolution(Function):
    """y = conv(x, w) + b: x (N, C, *spatial) (1-d runs as 2-d with H = 1), w (O, C / G,
    *kernel), b (O,) or None -> (N, O, *out); geometry = (kernel, stride, dilation, pads
    ((lo, hi) per dim), groups G, out). One node, PyTorch's ConvolutionBackward0 (edges x,
    w, bias: a (None, 0) slot without one). float16/bfloat16 computed in float32 and rounded
    once, both ways.

    With the padded input's columns cols (N, G, C/G k, L) (im2col), w as (G, O/G, C/G k) and
    g as (N, G, O/G, L), y = w @ cols, so (complex: conjugates, as matmul's rule)
      dw = sum_n g cols^H;  dcols = w^H g, dx = col2im(dcols) with the padding cropped off;
      db = sum of g over N and the spatial dims.
    Each is an Im2Col / Col2Im / matmul / reshape / slice of tgrad ops, so the backward
    differentiates again (under create_graph the columns are rebuilt from the saved x, in
    its graph; else the forward's are reused)."""

    name = "convolution"
    node_name = "ConvolutionBackward0"
    scalar_edges = True  # bias None keeps its (None, 0) slot, as PyTorch's
    hidden_edges = (3,)
    saved_attributes = {
        "_saved_input": 0, "_saved_weight": 1,
        "_saved_bias_sym_sizes_opt": lambda node: (node.geometry_in[1],),
        "_saved_stride": lambda node: node.geometry_in[0][1],
        "_saved_padding": lambda node: tuple(lo for lo, _ in node.geometry_in[0][3]),
        "_saved_dilation": lambda node: node.geometry_in[0][2],
        "_saved_groups": lambda node: node.geometry_in[0][4],
        "_saved_transposed": lambda node: False,
        "_saved_output_padding": lambda node: (0,) * len(node.geometry_in[0][0])}

    @staticmethod
    def forward(ctx, x, weight, bias, geometry):
        ctx.save_for_backward(x, weight)
        ctx.geometry_in = (geometry, 0 if bias is None else weight.shape[0])  # (0,): no bias
        ctx.np_cols = None  # the fast path's columns (a _numpy_conv workspace array)
        x2, w2, geometry2 = _as_2d(x, weight, geometry)
        kernel, stride, dilation, pads, groups, out = geometry2
        if _fast_conv(x):  # the same values from NumPy directly (_numpy_conv)
            y, ctx.np_cols = _np_conv.conv_fwd(
                x2._data, w2._data, None if bias is None else bias._data, kernel, stride,
                dilation, pads, groups, out, bool(ctx.needs_input_grad[1]))
            ctx.cols, ctx.half = None, None
            return wrap(y.reshape((y.shape[0], weight.shape[0]) + geometry[5]), x.device)
        xp = _padded(x2, pads)
        (xp, w2, bias), half = widen_halves(xp, w2, bias)  # halves: float32, rounded once
        y, cols = _conv_core(xp, w2, groups, kernel, stride, dilation, out)
        if bias is not None:  # (in place: y is the matmul's own output, not yet shared)
            y.add_(bias.reshape((weight.shape[0],) + (1,) * len(out)))
        ctx.cols = cols if ctx.needs_input_grad[1] else None  # for dw (first order)
        ctx.half = half
        # (a reshape of the op's own temporary: a new tensor, PyTorch's, not a view)
        return fresh(rounded_to(y.reshape((y.shape[0], weight.shape[0]) + geometry[5]), half))

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b, _ = ctx.needs_input_grad
        geometry = ctx.geometry_in[0]
        spatial = len(geometry[0])
        x2, w2, (kernel, stride, dilation, pads, groups, out) = _as_2d(x, weight, geometry)
        n, out_ch = g.shape[0], weight.shape[0]
        half = ctx.half
        if half is not None:
            g = g.float()
        gx = gw = gb = None
        if need_b:  # the sum over N and the spatial dims
            gb = rounded_to(_bias_grad(g, spatial), half)
        np_cols, ctx.np_cols = ctx.np_cols, None  # (a second backward rebuilds them)
        if _fast_conv(x) and not differentiable_formula():  # the same sums in NumPy
            gx, gw = _np_conv.conv_bwd(g._data.reshape((n, out_ch) + out), x2._data, w2._data,
                                       np_cols, kernel, stride, dilation, pads, groups,
                                       bool(need_x), bool(need_w))
            return (None if gx is None else wrap(gx.reshape(x.shape), g.device),
                    None if gw is None else wrap(gw.reshape(weight.shape), g.device), gb, None)
        if np_cols is not None:  # (the composite below rebuilds its own)
            _np_conv.WORKSPACE.give("cols", np_cols)
        gm = g.reshape(n, groups, out_ch // groups, math.prod(out))  # (N, G, O/G, L)
        if need_w:
            cols = ctx.cols
            if cols is None or is_grad_enabled():  # rebuilt in x's graph (create_graph)
                xp = _padded(x2, pads)
                cols = _conv_columns(xp.float() if half is not None else xp, groups, kernel,
                                     stride, dilation, out)
            gw = rounded_to((gm @ _conj(cols).transpose(-1, -2)).sum(0).reshape(weight.shape),
                            half)
            ctx.cols = cols = None  # freed before col2im's buffers (the peak memory)
        if need_x:
            wm = (w2.float() if half is not None else w2).reshape(groups, out_ch // groups, -1)
            gcols = _conj(wm).transpose(-1, -2) @ gm  # (N, G, C/G k, L)
            c = x2.shape[1]
            size = tuple(s + lo + hi for s, (lo, hi) in zip(x2.shape[2:], pads))
            geom = (size, kernel, stride, dilation, out)
            flat = gcols.reshape(n, c, math.prod(kernel) * math.prod(out))
            gxp = Col2Im.apply(flat, _window_key(geom, g.device), geom).reshape(n, c, *size)
            if any(p for lo_hi in pads for p in lo_hi):  # the padding cropped off
                gxp = gxp[(slice(None), slice(None)) + tuple(
                    slice(lo, lo + s) for s, (lo, _) in zip(x2.shape[2:], pads))]
            gx = rounded_to(gxp.reshape(x.shape), half)
        ctx.cols = None
        return gx, gw, gb, None
@autocast_policy("lower")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """2-d cross-correlation (PyTorch's conv2d): input (N, C, H, W) or (C, H, W), weight
    (O, C / groups, kh, kw) -> (N, O, oh, ow); ``padding`` an int, a pair, 'valid' or 'same'."""
    return _conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


@autocast_policy("lower")
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """3-d cross-correlation: input (N, C, D, H, W) or (C, D, H, W), weight
    (O, C / groups, kd, kh, kw) -> (N, O, od, oh, ow); ``padding`` an int, a triple, 'valid'
    or 'same'."""
    return _conv("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


@autocast_policy("lower")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups: int = 1) -> Tensor:
    """1-d cross-correlation: input (N, C, L) or (C, L), weight (O, C / groups, k) ->
    (N, O, out)."""
    return _conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


def _no_integer_kernel(op: str, input: Tensor, kernel: str) -> None:  # noqa: A002
    """PyTorch's im2col / col2im take floating, complex and bool inputs, not integers."""
    dt = input.dtype
    if not (dt.is_floating_point or dt.is_complex or dt is dtypes.bool_):
        raise NotImplementedError(f"{op}: not implemented for {dt.name} inputs; convert with "
                                  f".float() first (\"{kernel}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[dt]}')")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Sliding blocks of a (N, C, H, W) or (C, H, W) input as columns
    (N, C kh kw, L), L = oh ow (PyTorch's im2col; zero padding)."""
    _check_tensor("unfold", input, "input")
    _no_integer_kernel("unfold", input, "im2col_out_cpu")
    x, added = _batched("unfold", input, 2)
    if 0 in x.shape[1:]:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    kernel = _tuple("unfold", "kernel_size", kernel_size, 2)
    dilation = _tuple("unfold", "dilation", dilation, 2)
    pad = _tuple("unfold", "padding", padding, 2)
    stride = _tuple("unfold", "stride", stride, 2)
    if any(v <= 0 for v in kernel + dilation + stride) or any(p < 0 for p in pad):
        raise RuntimeError(f"unfold: kernel_size, dilation and stride must be positive and "
                           f"padding non-negative, got kernel_size={list(kernel)}, "
                           f"dilation={list(dilation)}, padding={list(pad)}, "
                           f"stride={list(stride)}")
    padded = (x.shape[0], x.shape[1]) + tuple(s + 2 * p for s, p in zip(x.shape[2:], pad))
    out = _pool_out("unfold", padded, kernel, stride, dilation, (0, 0), False, pad)
    return Unfold.apply(input, (kernel, dilation, pad, stride, out))


_SAVED_IM2COL = {"_saved_kernel_size": lambda node: node.geometry[0],
                 "_saved_dilation": lambda node: node.geometry[1],
                 "_saved_padding": lambda node: node.geometry[2],
                 "_saved_stride": lambda node: node.geometry[3]}


class Unfold(Function):
    """unfold (PyTorch's im2col): x (N, C, H, W) or (C, H, W), zero-padded by pad, ->
    cols (N, C kh kw, L) (or (C kh kw, L)), L = prod out; geometry = (kernel, dilation, pad,
    stride, out). One node, PyTorch's Im2ColBackward0. Linear, its adjoint col2im:
    dx = col2im(g) over the padded plane with the padding cropped off (a Col2Im node and
    slices: differentiates again)."""

    name = "unfold"
    node_name = "Im2ColBackward0"
    saved_attributes = dict(_SAVED_IM2COL,
                            _saved_self_sym_argsize_minus_1=lambda node: node.in_size[1],
                            _saved_self_sym_argsize_minus_2=lambda node: node.in_size[0])

    @staticmethod
    def forward(ctx, x, geometry):
        kernel, dilation, pad, stride, out = geometry
        ctx.geometry, ctx.in_size = geometry, tuple(x.shape[-2:])
        x, added = (x.unsqueeze(0), True) if x.ndim == 3 else (x, False)
        cols = _columns(_pad_hw(x, pad, 0.0), kernel, stride, dilation, out)
        n, c = cols.shape[0], cols.shape[1]
        y = cols.reshape(n, c * cols.shape[2], cols.shape[3])
        return fresh(y.squeeze(0) if added else y)  # (a view of the op's own temporary)

    @staticmethod
    def backward(ctx, g):
        kernel, dilation, pad, stride, out = ctx.geometry
        added = g.ndim == 2
        g = g.unsqueeze(0) if added else g
        n, c = g.shape[0], g.shape[1] // math.prod(kernel)
        size = tuple(s + 2 * p for s, p in zip(ctx.in_size, pad))
        geom = (size, kernel, stride, dilation, out)
        flat = g.reshape(n, c, g.shape[1] // c * g.shape[2])
        gx = Col2Im.apply(flat, _window_key(geom, g.device), geom).reshape(n, c, *size)
        for d, (p, s) in enumerate(zip(pad, ctx.in_size), start=2):  # the padding cropped
            if p:
                gx = gx.narrow(d, p, s)
        return (gx.squeeze(0) if added else gx), None


# ---------------------------------------------------------------------------- pooling
def _pool_args(op: str, kernel_size, stride, padding, dilation, spatial: int) -> tuple:
    kernel = _tuple(op, "kernel_size", kernel_size, spatial)
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(op, "stride", stride, spatial)
    pad = _tuple(op, "padding", padding, spatial)
    dilation = _tuple(op, "dilation", dilation, spatial)
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(k <= 0 for k in kernel) or any(s < 0 for s in stride):
        raise RuntimeError(f"{op}: kernel_size and stride must be positive, got kernel_size="
                           f"{list(kernel)}, stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: dilation must be greater than zero, but got "
                           f"{list(dilation)}")
    for p, k, d in zip(pad, kernel, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
        if p > k // 2:
            raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, "
                               f"but got pad={p} and kernel_size={k}")
    return kernel, stride, pad, dilation


def _pool_out(op: str, shape: tuple, kernel: tuple, stride: tuple, dilation: tuple,
              pad: tuple, ceil_mode: bool, shown_pad: tuple | None = None) -> tuple:
    """Output size per spatial dim (PyTorch's pooling_output_shape): floor or ceil of
    (size + 2 p - d (k - 1) - 1) / s + 1, less one when ceil mode's last window would start
    in the right padding. ``shape`` is (N, C, *sizes) before padding (the pad is added
    here), or, for unfold, already padded (pad 0)."""
    out = []
    for size, k, s, d, p in zip(shape[2:], kernel, stride, dilation, pad):
        num = size + 2 * p - d * (k - 1) - 1
        o = (-(-num // s) if ceil_mode else num // s) + 1
        if ceil_mode and (o - 1) * s >= size + p:
            o -= 1
        out.append(o)
    if any(o <= 0 for o in out):
        sizes = "x".join(map(str, shape[1:]))
        outs = "x".join(map(str, (shape[1],) + tuple(max(o, 0) for o in out)))
        raise RuntimeError(f"Given input size: ({sizes}). Calculated output size: ({outs}). "
                           f"Output size is too small")
    return tuple(out)


def _pool_input(op: str, input: Tensor, spatial: int) -> tuple:  # noqa: A002
    _check_tensor(op, input, "input")
    if input.ndim not in (spatial + 1, spatial + 2) or (
            input.ndim == spatial + 2 and 0 in input.shape[1:]) or (
            input.ndim == spatial + 1 and 0 in input.shape):
        raise RuntimeError(f"{op}: non-empty {spatial + 1}D or {spatial + 2}D (batch mode) "
                           f"tensor expected for input, got size {list(input.shape)}")
    x, added = _batched(op, input, spatial)
    if spatial == 1:
        x = x.unsqueeze(2)
    return x, added


def _pool_result(y: Tensor, added: bool, spatial: int) -> Tensor:
    """The pooled (N, C, *out) temporary without the dims _pool_input added: a new tensor
    (PyTorch's), not a view of the temporary."""
    if spatial == 1:
        y = y.squeeze(2)
    return fresh(y.squeeze(0) if added else y)


def _max_pool(op: str, input: Tensor, kernel_size, stride, padding, dilation,  # noqa: A002
              ceil_mode: bool, return_indices: bool, spatial: int):
    x, added = _pool_input(op, input, spatial)
    if x.dtype.is_complex:  # PyTorch's error: maxima need an order
        raise dtypes.kernel_not_implemented(op, x.dtype, ": complex numbers have no order; "
                                            "pool .real, .imag or .abs() instead")
    if x.dtype is dtypes.bool_ or (spatial == 1 and not return_indices
                                   and not x.dtype.is_floating_point):
        # PyTorch's CPU kernels: none for bool; max_pool1d's own (max_pool1d_impl, taken
        # without return_indices) none for integers either (its indices path is 2-D's)
        kernel = "max_pool1d_impl" if spatial == 1 and not return_indices else \
            f"max_pool{max(spatial, 2)}d"
        raise NotImplementedError(f"{op}: not implemented for {x.dtype.name} inputs; convert "
                                  f"with .float() first (\"{kernel}\" not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[x.dtype]}')")
    kernel, stride_, pad, dilation = _pool_args(op, kernel_size, stride, padding, dilation,
                                                spatial)
    if spatial == 1:
        kernel, stride_, pad, dilation = ((1,) + kernel, (1,) + stride_, (0,) + pad,
                                          (1,) + dilation)
    out = _pool_out(op, x.shape, kernel, stride_, dilation, pad, ceil_mode)
    given = (() if stride is None or (not isinstance(stride, int) and len(stride) == 0)
             else stride_)
    geometry = (kernel, stride_, pad, dilation, out, ceil_mode, given, bool(return_indices))
    # PyTorch's node takes the input as given (unbatched too); a 1-d pool is its 2-d one on
    # input.unsqueeze(-2), then squeezed
    if spatial == 1:
        res = _MAX_POOL[2].apply(input.unsqueeze(-2), geometry)
        if not return_indices:
            return fresh(res.squeeze(-2))
        return fresh(res[0].squeeze(-2)), fresh(res[1].squeeze(-2))
    return _MAX_POOL[spatial].apply(input, geometry)


def _pool_positions(padded: tuple, sizes: tuple, kernel: tuple, stride: tuple,
                    dilation: tuple, out: tuple, pad: tuple) -> tuple:
    """For the windows of a padded plane (sizes: the unpadded one): (on_padding (k, L) bool,
    the flat row-major position in the unpadded plane of every window element (k, L),
    clipped where it falls on padding)."""
    idx = _window_index(padded, kernel, stride, dilation, out)  # (k, L)
    coords = [c_ - p for c_, p in zip(np.unravel_index(idx, padded), pad)]  # unpadded
    on_pad = np.zeros(idx.shape, bool)
    for coord, size in zip(coords, sizes):
        on_pad |= (coord < 0) | (coord >= size)
    flat = np.ravel_multi_index(tuple(np.clip(cd, 0, sz - 1) for cd, sz in
                                      zip(coords, sizes)), sizes)
    return on_pad, flat


class MaxPool(Function):
    """max_pool (2-d, or 3-d: ``_MAX_POOL``): x (N, C, *sizes) or unbatched (C, *sizes) ->
    y[n, c, o] = the maximum of window o (implicit -inf padding; ceil_mode's last windows
    may reach further), and with return_indices its flat position in the unpadded plane
    (the first maximum; the last NaN where a window holds NaNs; the first element inside
    the input where every value ties with the padding: PyTorch's kernels); geometry =
    (kernel, stride, pad, dilation, out, ceil_mode, the stride as given, return_indices).
    One node, PyTorch's MaxPool2DWithIndicesBackward0 / MaxPool3DWithIndicesBackward0.
    dx = g added at each window's maximum: g scattered to the argmax of its window's
    columns, then col2im (the composition's adjoints: an index add, whose backward is a
    gather, and a Col2Im node: differentiates again), attached to x's graph
    (_piecewise._Attach: d(dx)/dx = 0, PyTorch's double backward)."""

    name = "max_pool2d"
    node_name = "MaxPool2DWithIndicesBackward0"
    saved_attributes = {"_saved_self": 0,
                        "_saved_kernel_size": lambda node: node.geometry[0],
                        "_saved_stride": lambda node: node.geometry[6],
                        "_saved_padding": lambda node: node.geometry[2],
                        "_saved_dilation": lambda node: node.geometry[3],
                        "_saved_ceil_mode": lambda node: node.geometry[5],
                        "_saved_result1": lambda node: MaxPool.indices(node)}

    @staticmethod
    def forward(ctx, x, geometry):
        ctx.save_for_backward(x)
        ctx.geometry = geometry
        kernel, stride, pad, dilation, out = geometry[:5]
        added = x.ndim == len(kernel) + 1
        x = x.unsqueeze(0) if added else x
        n, c = x.shape[:2]
        sizes = tuple(x.shape[2:])
        # Ceil mode's last windows may reach past the padding: pad the right/bottom further
        # with -inf (never selected: every window starts inside the input or its left pad).
        extra = tuple(max(0, (o - 1) * s + d * (k - 1) + 1 - (size + 2 * p))
                      for o, s, d, k, size, p in zip(out, stride, dilation, kernel, sizes, pad))
        low = float("-inf") if x.dtype.is_floating_point else _int_min(x.dtype)
        padded = tuple(size + 2 * p + e for size, p, e in zip(sizes, pad, extra))
        flat = None
        if _fast_pool(x):  # the CPU kernel: strided taps, no columns (_numpy_pool)
            y, arg = _np_pool.max_pool_fwd(x._data, kernel, stride, pad, dilation, out,
                                           extra, low)
            y = wrap(y, x.device)  # (arg: int8 or int32, widened by MaxPool.arg64)
            arg = wrap(arg.reshape(n, c, math.prod(out)), x.device)
        else:
            y, arg, flat = MaxPool._composite(x, kernel, stride, pad, dilation, out, extra,
                                              low, padded)
        ctx.arg, ctx.plane = arg, (padded, sizes, added)
        y = fresh(y.squeeze(0) if added else y)  # (a view of the op's own temporary)
        if not geometry[7]:
            return y
        indices = MaxPool.indices(ctx, flat)
        return y, fresh(indices.squeeze(0) if added else indices)

    @staticmethod
    def _composite(x: Tensor, kernel: tuple, stride: tuple, pad: tuple, dilation: tuple,
                   out: tuple, extra: tuple, low, padded: tuple) -> tuple:
        """(y (N, C, *out), arg (N, C, L) the winning tap, flat (k, L) the unpadded
        positions) of x (N, C, *sizes) through window columns (tgrad ops: any device)."""
        n, c = x.shape[:2]
        sizes = tuple(x.shape[2:])
        flat_pads = tuple(v for i in reversed(range(len(sizes)))
                          for v in (pad[i], pad[i] + extra[i]))
        xp = _pad(x, flat_pads, value=low) if any(flat_pads) else x
        cols = _columns(xp, kernel, stride, dilation, out)  # (N, C, k, L)
        first, arg = cols.max(dim=2)  # (N, C, L): the first maximum of each window
        arg = _last_nan_wins(cols, first, arg)
        # A window whose input values are all -inf (or the integer minimum) ties with its
        # padding: PyTorch then takes the window's first element inside the input, so the
        # first maximum is replaced by it where it fell on padding.
        on_pad, flat = _pool_positions(padded, sizes, kernel, stride, dilation, out, pad)
        if on_pad.any():  # (L: not -1, which an empty batch leaves undetermined)
            length = math.prod(out)
            first_inside = np.argmin(on_pad, axis=0)  # (L,)
            hit = _tensor(on_pad, device=x.device).gather(0, arg.reshape(n * c, length))
            fallback = _tensor(first_inside, dtype=dtypes.int64, device=x.device)
            arg = where(hit, fallback, arg.reshape(n * c, length)).reshape(arg.shape)
        y = cols.gather(2, arg.unsqueeze(2)).squeeze(2).reshape(n, c, *out)
        return y, arg, flat

    @staticmethod
    def arg64(ctx) -> Tensor:
        """ctx.arg (N, C, L), the winning taps, as int64: the CPU kernel keeps them as int8
        (or int32 past 127 taps), the composite as int64."""
        arg = ctx.arg
        return arg if arg.dtype is dtypes.int64 else wrap(arg._data.astype(np.int64),
                                                          arg.device)

    @staticmethod
    def indices(ctx, flat=None) -> Tensor:
        """(N, C, *out) flat positions of the maxima in the unpadded plane: indices[nc, l]
        = position[arg[nc, l], l] (a gather along the window axis)."""
        kernel, stride, pad, dilation, out = ctx.geometry[:5]
        padded, sizes, _ = ctx.plane
        if flat is None:
            flat = _pool_positions(padded, sizes, kernel, stride, dilation, out, pad)[1]
        arg = MaxPool.arg64(ctx)
        n, c = arg.shape[:2]
        position = _tensor(flat, dtype=dtypes.int64, device=arg.device)
        return position.gather(0, arg.reshape(n * c, math.prod(out))).reshape(n, c, *out)

    @staticmethod
    def backward(ctx, g, *_):
        (x,) = ctx.saved_tensors
        kernel, stride, pad, dilation, out = ctx.geometry[:5]
        padded, sizes, added = ctx.plane
        gb = g.unsqueeze(0) if added else g
        n, c = gb.shape[:2]
        if not differentiable_formula() and _fast_pool(gb) and gb.dtype.is_floating_point:
            # the same sums tap by tap, strided (_numpy_pool.max_pool_bwd): bit-identical
            gx = _np_pool.max_pool_bwd(gb._data, ctx.arg._data.reshape(gb.shape), padded,
                                       sizes, kernel, stride, dilation, pad)
            return wrap(gx[0] if added else gx, g.device), None
        k, length = math.prod(kernel), math.prod(out)
        # the gather's adjoint (g at each window's argmax), then col2im's: (N, C, k, L)
        # windows summed into the padded plane, the padding cropped off
        key = normalize_key(_along_key(MaxPool.arg64(ctx).unsqueeze(2), 2, gb.device),
                            gb.device)[0]
        gcols = IndexAdd.apply(gb.reshape(n, c, 1, length), key, (n, c, k, length))
        geom = (padded, kernel, stride, dilation, out)
        gx = Col2Im.apply(gcols.reshape(n, c, k * length), _window_key(geom, gb.device),
                          geom).reshape(n, c, *padded)
        for d, (p, size) in enumerate(zip(pad, sizes), start=2):
            if p or gx.shape[d] != size:
                gx = gx.narrow(d, p, size)
        return _Attach.apply(gx.squeeze(0) if added else gx, x), None


_MAX_POOL = {2: MaxPool, 3: ew.node_variant(MaxPool, "MaxPool3DWithIndicesBackward0",
                                            saved_attributes=MaxPool.saved_attributes,
                                            name="max_pool3d")}


def _fast_pool(t: Tensor) -> bool:
    """Whether MaxPool runs the NumPy kernels (tgrad/backends/_numpy_pool.py) on ``t``: a
    CPU tensor of a dtype they take (float32/float64, the integers)."""
    return t.device.type == "cpu" and t.dtype.np in _np_pool.FAST_DTYPES


def _last_nan_wins(cols: Tensor, first: Tensor, arg: Tensor) -> Tensor:
    """cols (..., k, L) windows along dim -2, first/arg (..., L) their first maximum and its
    position (max's). PyTorch's max-pooling kernels take an element when val > max or
    isnan(val), so in a window holding a NaN the last NaN wins: there arg becomes the last
    NaN's position (the value is NaN either way; the index and the gradient move). On the
    CPU a host check skips the extra pass when no window has a NaN; other devices compute
    it always (no host sync)."""
    if not cols.dtype.is_floating_point:
        return arg
    has_nan = first.isnan()
    if cols.device.type == "cpu" and not bool(has_nan.any()):
        return arg
    k = cols.shape[-2]
    position = _tensor(np.arange(k).reshape(k, 1), dtype=dtypes.int64, device=cols.device)
    last = where(cols.isnan(), position, -1).amax(-2)
    return where(has_nan, last, arg)


def _int_min(dt) -> int:
    return int(np.iinfo(dt.np).min) if dt is not dtypes.bool_ else 0


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over kh x kw windows of (N, C, H, W) or (C, H, W) (implicit -inf padding); with
    ``return_indices`` also the flat H W position of each maximum (the first one)."""
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 2)


@autocast_policy(None, cpu=max_pool3d_cpu_policy)
def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over kd x kh x kw windows of (N, C, D, H, W) or (C, D, H, W) (implicit -inf
    padding); with ``return_indices`` also the flat D H W position of each maximum."""
    return _max_pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 3)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode: bool = False, return_indices: bool = False):
    """Max over windows of k along the last dim of (N, C, L) or (C, L)."""
    return _max_pool("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, 1)


def _avg_pool(op: str, input: Tensor, kernel_size, stride, padding, ceil_mode: bool,  # noqa: A002
              count_include_pad: bool, divisor_override, spatial: int) -> Tensor:
    x, added = _pool_input(op, input, spatial)
    if not x.dtype.is_floating_point and x.dtype is not dtypes.int64:
        # PyTorch's CPU kernels take int64 (below) but no other integer or bool dtype
        kernel_name = "avg_pool3d_out_frame" if spatial == 3 else "avg_pool2d"
        raise dtypes.kernel_not_implemented(kernel_name, x.dtype, f" ({op} of an input of "
                                            f"dtype {x.dtype.name}; convert it with .float() "
                                            f"or .long())")
    kernel, stride_, pad, _ = _pool_args(op, kernel_size, stride, padding, 1, spatial)
    if spatial == 1:
        kernel, stride_, pad = (1,) + kernel, (1,) + stride_, (0,) + pad
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    ones = (1,) * len(kernel)
    out = _pool_out(op, x.shape, kernel, stride_, ones, pad, ceil_mode)
    sizes = tuple(x.shape[2:])
    if divisor_override is not None:
        divisor = np.full(out, float(divisor_override))
    else:
        divisor = functools.reduce(np.multiply.outer, (
            _avg_counts(o, s, k, size, p, count_include_pad)
            for o, s, k, size, p in zip(out, stride_, kernel, sizes, pad)))
    # PyTorch's node takes the input as given (unbatched too); a 1-d pool is its 2-d one
    # on input.unsqueeze(-2), then squeezed
    given = (() if stride is None or (not isinstance(stride, int) and len(stride) == 0)
             else stride_)
    geometry = (kernel, stride_, pad, out, divisor.reshape(-1), ceil_mode, count_include_pad,
                divisor_override, given)
    if spatial == 1:
        return fresh(_AVG_POOL[2].apply(input.unsqueeze(-2), geometry).squeeze(-2))
    return _AVG_POOL[spatial].apply(input, geometry)


class AvgPool(Function):
    """avg_pool (2-d, or 3-d: ``_AVG_POOL``): x (N, C, *sizes) or unbatched (C, *sizes) ->
    y[n, c, o] = (sum of the window o of x zero-padded by pad, right-extended for ceil_mode)
    / divisor[o]; geometry = (kernel, stride, pad, out, divisor (L,) NumPy, ceil_mode,
    count_include_pad, divisor_override, the stride as given). One node, PyTorch's
    AvgPool2DBackward0 / AvgPool3DBackward0. Linear in x: dx = col2im(g / divisor spread
    over each window) over the padded plane, the padding cropped off (a Col2Im node: the
    backward differentiates again); attached to x's graph (_piecewise._Attach: d(dx)/dx = 0,
    PyTorch's double backward). int64 sums divide truncating toward zero (PyTorch's CPU
    kernel); float16/bfloat16 sum and divide in float32, rounded once."""

    name = "avg_pool2d"
    node_name = "AvgPool2DBackward0"
    saved_attributes = {"_saved_self": 0,
                        "_saved_kernel_size": lambda node: node.geometry[0],
                        "_saved_stride": lambda node: node.geometry[8],
                        "_saved_padding": lambda node: node.geometry[2],
                        "_saved_ceil_mode": lambda node: node.geometry[5],
                        "_saved_count_include_pad": lambda node: node.geometry[6],
                        "_saved_divisor_override": lambda node: node.geometry[7]}

    @staticmethod
    def _plane(kernel, stride, pad, out, sizes) -> tuple:
        """(padded plane sizes, flat pads for _pad): pad each side, plus what ceil_mode's
        last window reaches past the end."""
        extra = [max(0, (o - 1) * s + k - (size + 2 * p))
                 for o, s, k, size, p in zip(out, stride, kernel, sizes, pad)]
        flat_pads = tuple(v for i in reversed(range(len(sizes)))
                          for v in (pad[i], pad[i] + extra[i]))
        return tuple(sz + 2 * p + e for sz, p, e in zip(sizes, pad, extra)), flat_pads

    @classmethod
    def forward(cls, ctx, x, geometry):
        ctx.save_for_backward(x)
        ctx.geometry = geometry
        kernel, stride, pad, out, divisor = geometry[:5]
        spatial = len(kernel)
        added = x.ndim == spatial + 1
        x = x.unsqueeze(0) if added else x
        n, c = x.shape[:2]
        _, flat_pads = cls._plane(kernel, stride, pad, out, tuple(x.shape[2:]))
        xp = _pad(x, flat_pads) if any(flat_pads) else x
        (xp,), half = widen_halves(xp)  # halves: float32 sums and divisions, rounded once
        total = _columns(xp, kernel, stride, (1,) * spatial, out).sum(dim=2)  # (N, C, L)
        div = _tensor(divisor, dtype=total.dtype, device=x.device)
        # int64: PyTorch's CPU kernel divides the integer window sum by the integer divisor
        # in C++, truncating toward zero (-7 / 2 = -3)
        y = (total / div if total.dtype.is_floating_point
             else total.div(div, rounding_mode="trunc")).reshape(n, c, *out)
        return fresh(rounded_to(y.squeeze(0) if added else y, half))

    @classmethod
    def backward(cls, ctx, g):
        (x,) = ctx.saved_tensors
        kernel, stride, pad, out, divisor = ctx.geometry[:5]
        spatial = len(kernel)
        added = g.ndim == spatial + 1
        gb = g.unsqueeze(0) if added else g
        (gb,), half = widen_halves(gb)
        n, c = gb.shape[:2]
        sizes = tuple(x.shape[-spatial:])
        plane, _ = cls._plane(kernel, stride, pad, out, sizes)
        k, length = math.prod(kernel), math.prod(out)
        div = _tensor(divisor, dtype=gb.dtype, device=gb.device)
        gcols = (gb.reshape(n, c, 1, length) / div).expand(n, c, k, length)
        geom = (plane, kernel, stride, (1,) * spatial, out)
        gx = Col2Im.apply(gcols.reshape(n, c, k * length), _window_key(geom, gb.device),
                          geom).reshape(n, c, *plane)
        for d, (p, size) in enumerate(zip(pad, sizes), start=2):  # the padding cropped off
            if p or gx.shape[d] != size:
                gx = gx.narrow(d, p, size)
        gx = rounded_to(gx.squeeze(0) if added else gx, half)
        return _Attach.apply(gx, x), None


_AVG_POOL = {2: AvgPool, 3: ew.node_variant(AvgPool, "AvgPool3DBackward0",
                                            saved_attributes=AvgPool.saved_attributes,
                                            name="avg_pool3d")}


def _avg_counts(o: int, s: int, k: int, size: int, p: int, include_pad: bool) -> np.ndarray:
    """Divisor per output position along one dim (PyTorch's avg_pool): the window clipped
    to [-p, size + p) when padding counts, else to the input [0, size)."""
    start = np.arange(o) * s - p
    end = np.minimum(start + k, size + p)
    if include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, size) - np.maximum(start, 0)).astype(np.float64)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over kh x kw windows of (N, C, H, W) or (C, H, W) (zero padding; the divisor
    counts the padding unless ``count_include_pad`` is False)."""
    return _avg_pool("avg_pool2d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override, 2)


@autocast_policy(None, cpu="fp32")
def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over kd x kh x kw windows of (N, C, D, H, W) or (C, D, H, W) (zero padding; the
    divisor counts the padding unless ``count_include_pad`` is False)."""
    return _avg_pool("avg_pool3d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override, 3)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over windows of k along the last dim of (N, C, L) or (C, L)."""
    return _avg_pool("avg_pool1d", input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None, 1)


def _adaptive_windows(size: int, out: int) -> tuple:
    """PyTorch's adaptive windows along one dim: window i is [floor(i size / out),
    ceil((i + 1) size / out)). Returns (index (out, longest), lengths (out,)); the index
    pads short windows with ``size``, the position of an appended zero."""
    lo = np.arange(out) * size // out
    hi = -(-(np.arange(1, out + 1) * size) // out)
    longest = int((hi - lo).max()) if out else 0
    j = np.arange(longest)
    index = np.where(lo[:, None] + j < hi[:, None], lo[:, None] + j, size)
    return index, (hi - lo).astype(np.float64)


def _adaptive_args(op: str, input: Tensor, output_size, spatial: int) -> tuple:  # noqa: A002
    """(spatial sizes, output sizes) after PyTorch's checks of an adaptive pooling."""
    _check_tensor(op, input, "input")
    if input.ndim not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{op}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but got "
                           f"{list(input.shape)}")
    for d in range(input.ndim - spatial, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    if not input.dtype.is_floating_point:  # PyTorch's NotImplementedError, naming its kernel
        kernel = op[:-2] + ("3d_cpu" if spatial == 3 else "2d")
        _check_float(op, input, kernel)
    sizes = input.shape[input.ndim - spatial:]
    if output_size is None:  # None keeps a size only per element, as in (None, 7) (PyTorch)
        raise TypeError(f"{op}(): argument 'output_size' must be tuple of ints, not NoneType")
    outs = (output_size,) * spatial if isinstance(output_size, int) else tuple(output_size)
    if len(outs) != spatial:
        raise RuntimeError(f"{op}: output_size must be an int or a tuple of {spatial} "
                           f"(got {output_size})")
    outs = tuple(s if o is None else int(o) for o, s in zip(outs, sizes))
    if any(o < 0 for o in outs):
        raise RuntimeError(f"{op}: output_size must be non-negative, got {list(outs)}")
    return sizes, outs


def _adaptive_avg(op: str, input: Tensor, output_size, spatial: int) -> Tensor:  # noqa: A002
    sizes, outs = _adaptive_args(op, input, output_size, spatial)
    if all(o == 1 for o in outs):  # PyTorch's: the mean over the spatial dims, kept
        # (MeanBackward1; 1-d: on input.unsqueeze(-2), squeezed, as the 2-d op below)
        x = input.unsqueeze(-2) if spatial == 1 else input
        y = x.mean(tuple(range(-1, -max(spatial, 2) - 1, -1)), keepdim=True)
        return fresh(y.squeeze(-2)) if spatial == 1 else y
    if spatial == 1:  # PyTorch's: the 2-d op on input.unsqueeze(-2), squeezed
        return fresh(AdaptiveAvgPool.apply(input.unsqueeze(-2), ((1,) + tuple(sizes),
                                                                 (1,) + outs)).squeeze(-2))
    return _ADAPTIVE_AVG[spatial].apply(input, (tuple(sizes), outs))


def _fast_adaptive(t: Tensor) -> bool:
    """Whether the adaptive poolings run the NumPy kernels (tgrad/backends/
    _numpy_adaptive.py) on ``t``: a CPU float32/float64 tensor."""
    return t.device.type == "cpu" and t.dtype.np in _np_adapt.FAST_DTYPES


@functools.lru_cache(maxsize=256)
def _adaptive_plan(size: int, out: int) -> tuple:
    """(index shape, flat index, lengths) of _adaptive_windows(size, out), cached read-only
    host constants (device_constant keys them by identity)."""
    index, lengths = _adaptive_windows(size, out)
    flat = index.reshape(-1)
    flat.flags.writeable = lengths.flags.writeable = False
    return index.shape, flat, lengths


def _adaptive_dims(x: Tensor, sizes: tuple, outs: tuple):
    """(dim, size, out, index shape, flat window index (device int64), lengths (device))
    for each spatial dim of x, PyTorch's adaptive windows (_adaptive_windows), copied to
    the device once per (size, out) and dtype."""
    spatial = len(sizes)
    for i, (size, o) in enumerate(zip(sizes, outs)):
        shape, flat, lengths = _adaptive_plan(size, o)
        yield (x.ndim - spatial + i, size, o, shape,
               device_constant(flat, dtypes.int64, x.device),
               device_constant(lengths, x.dtype, x.device))


class AdaptiveAvgPool(Function):
    """adaptive_avg_pool (2-d, or 3-d: ``_ADAPTIVE_AVG``): x (N, C, *sizes) or unbatched
    (C, *sizes) -> the mean of each of PyTorch's adaptive windows (window i of a dim:
    [floor(i size / out), ceil((i + 1) size / out))); geometry = (sizes, outs). One dim at a
    time (a box's mean is the mean of its rows' means): each window gathered from the dim
    with a zero appended (short windows read the zero, so a NaN or inf reaches only the
    windows holding it), summed, divided by its length. One node, PyTorch's
    AdaptiveAvgPool2DBackward0 / AdaptiveAvgPool3DBackward0. Linear in x: dx = the adjoint,
    dim by dim in reverse: g / length spread over each window's positions (an index add,
    whose backward is a gather: differentiates again), attached to x's graph
    (_piecewise._Attach: d(dx)/dx = 0). float16/bfloat16 in float32, rounded once. On the
    CPU (float32/float64, halves widened) the same sums by _numpy_adaptive.avg_fwd /
    avg_bwd (the backward's when no graph is built)."""

    name = "adaptive_avg_pool2d"
    node_name = "AdaptiveAvgPool2DBackward0"
    saved_attributes = {"_saved_self": 0}

    @staticmethod
    def forward(ctx, x, geometry):
        ctx.save_for_backward(x)
        ctx.geometry = geometry
        (y,), half = widen_halves(x)
        if _fast_adaptive(y):  # the CPU kernel: a pass per dim on the arrays (bit-identical)
            return rounded_to(wrap(_np_adapt.avg_fwd(y._data, geometry[1]), x.device), half)
        for dim, _, _, shape, flat, lengths in _adaptive_dims(y, *geometry):
            z = _pad(y.movedim(dim, -1), (0, 1))
            windows = z.index_select(-1, flat).reshape(z.shape[:-1] + shape)
            y = (windows.sum(-1) / lengths).movedim(-1, dim)
        return fresh(rounded_to(y, half))  # (a view of the last mean: a new tensor)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        (gx,), half = widen_halves(g)
        if not differentiable_formula() and _fast_adaptive(gx):  # (the same sums: CPU kernel)
            dx = _np_adapt.avg_bwd(gx._data, ctx.geometry[0])
            return rounded_to(wrap(dx, g.device), half), None
        for dim, size, o, shape, flat, lengths in reversed(list(_adaptive_dims(gx, *ctx.geometry))):
            gm = gx.movedim(dim, -1) / lengths  # (..., o)
            spread = gm.unsqueeze(-1).expand(gm.shape + shape[1:]).reshape(
                gm.shape[:-1] + (o * shape[1],))
            z = gm.new_zeros(gm.shape[:-1] + (size + 1,)).index_add(-1, flat, spread)
            gx = z.narrow(-1, 0, size).movedim(-1, dim)
        return _Attach.apply(rounded_to(gx.contiguous(), half), x), None


_ADAPTIVE_AVG = {2: AdaptiveAvgPool,
                 3: ew.node_variant(AdaptiveAvgPool, "AdaptiveAvgPool3DBackward0",
                                    saved_attributes=AdaptiveAvgPool.saved_attributes,
                                    name="adaptive_avg_pool3d")}


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over PyTorch's adaptive windows so the output's last two dims are
    ``output_size`` (an int, a pair, None keeps a size)."""
    return _adaptive_avg("adaptive_avg_pool2d", input, output_size, 2)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows of the last dim of (N, C, L) or (C, L)."""
    return _adaptive_avg("adaptive_avg_pool1d", input, output_size, 1)


def _adaptive_max(op: str, input: Tensor, output_size, return_indices: bool,  # noqa: A002
                  spatial: int):
    sizes, outs = _adaptive_args(op, input, output_size, spatial)
    if spatial == 1:  # PyTorch's: the 2-d op on input.unsqueeze(-2), both results squeezed
        y, indices = AdaptiveMaxPool.apply(input.unsqueeze(-2), ((1,) + tuple(sizes),
                                                                 (1,) + outs))
        y, indices = fresh(y.squeeze(-2)), fresh(indices.squeeze(-2))
    else:
        y, indices = _ADAPTIVE_MAX[spatial].apply(input, (tuple(sizes), outs))
    return (y, indices) if return_indices else y


class AdaptiveMaxPool(Function):
    """adaptive_max_pool (2-d, or 3-d: ``_ADAPTIVE_MAX``): x (N, C, *sizes) or unbatched
    (C, *sizes) -> (the maximum of each of PyTorch's adaptive windows, its flat position in
    the (*sizes) plane); geometry = (sizes, outs). Every window of the output grid is
    gathered as its candidates (dim by dim; short windows padded with -inf, never chosen
    over a real element: windows are never empty), the first maximum taken (a NaN wins, the
    last one: _last_nan_wins), as PyTorch's kernel. One node, PyTorch's
    AdaptiveMaxPool2DBackward0 / AdaptiveMaxPool3DBackward0 (the indices as
    _saved_result1). dx = g added at each window's maximum (a scatter add into the flat
    plane, whose backward is a gather: differentiates again), attached to x's graph
    (_piecewise._Attach: d(dx)/dx = 0). On the CPU (float32/float64) the same choice and
    sums by _numpy_adaptive.max_fwd / max_bwd (the backward's when no graph is built)."""

    name = "adaptive_max_pool2d"
    node_name = "AdaptiveMaxPool2DBackward0"
    saved_attributes = {"_saved_self": 0, "_saved_result1": _function.KeptTensor("indices")}

    @staticmethod
    def forward(ctx, x, geometry):
        sizes, outs = geometry
        spatial = len(sizes)
        ctx.save_for_backward(x)
        ctx.spatial = spatial
        if _fast_adaptive(x):  # the CPU kernel: a pass per dim on the arrays (bit-identical)
            y, indices = _np_adapt.max_fwd(x._data, outs)
            y, indices = wrap(y, x.device), wrap(indices, x.device)
            ctx.indices = indices
            ctx.mark_non_differentiable(indices)
            return y, indices
        windows = [_adaptive_windows(n, o)[0] for n, o in zip(sizes, outs)]  # (o_i, k_i)
        lead = x.shape[:x.ndim - spatial]
        nl = len(lead)
        g = _pad(x, (0, 1) * spatial, value=float("-inf"))  # index size_i reads the -inf
        for i, idx in enumerate(windows):  # dim nl + 2 i becomes (o_i, k_i)
            d = nl + 2 * i
            g = g.index_select(d, _tensor(idx.reshape(-1), dtype=dtypes.int64,
                                          device=x.device))
            g = g.reshape(*g.shape[:d], *idx.shape, *g.shape[d + 1:])
        # (lead, o_1, k_1, ..., o_n, k_n) -> (lead, o_1, ..., o_n, k_1 ... k_n)
        order = list(range(nl)) + [nl + 2 * i for i in range(spatial)] + \
            [nl + 2 * i + 1 for i in range(spatial)]
        g = g.permute(*order).reshape(*lead, *outs, math.prod(w.shape[1] for w in windows))
        if 0 in outs:  # no windows: empty results (PyTorch's)
            y = g.sum(-1)
            indices = y.new_zeros(y.shape, dtype=dtypes.int64)
        else:
            first, arg = g.max(-1)
            arg = _last_nan_wins(g.unsqueeze(-1), first.unsqueeze(-1),
                                 arg.unsqueeze(-1)).squeeze(-1)
            y = fresh(g.gather(-1, arg.unsqueeze(-1)).squeeze(-1))
            # candidate k of window w sits at the flat position sum_i windows_i[w_i, k_i]
            # place_i
            place = _row_major_strides(sizes)
            pos = np.zeros((1,) * (2 * spatial), np.int64)
            for i, idx in enumerate(windows):
                shape = [1] * (2 * spatial)
                shape[i], shape[spatial + i] = idx.shape
                pos = pos + idx.reshape(shape) * int(place[i])
            pos = _tensor(pos.reshape(*outs, -1), dtype=dtypes.int64, device=x.device)
            indices = fresh(pos.expand(*lead, *pos.shape).gather(-1, arg.unsqueeze(-1))
                            .squeeze(-1))
        ctx.indices = indices
        ctx.mark_non_differentiable(indices)
        return y, indices

    @staticmethod
    def backward(ctx, g, _):
        (x,) = ctx.saved_tensors
        if not differentiable_formula() and _fast_adaptive(g):  # (scatter_add's order)
            sizes = tuple(x.shape[x.ndim - ctx.spatial:])
            return wrap(_np_adapt.max_bwd(g._data, ctx.indices._data, sizes), g.device), None
        return max_indices_adjoint(g, x, ctx.indices, ctx.spatial), None


def max_indices_adjoint(g: Tensor, x: Tensor, indices: Tensor, spatial: int) -> Tensor:
    """dx of a max pool that read x at ``indices`` (lead..., *out; flat positions in x's
    last ``spatial`` dims), g of indices' shape: zeros of x's shape with each g added at
    its index (a scatter_add over the flattened plane; whose backward is a gather, so it
    differentiates again), attached to x's graph (_piecewise._Attach: d(dx)/dx = 0)."""
    lead = tuple(x.shape[:x.ndim - spatial])
    plane = math.prod(x.shape[x.ndim - spatial:])
    out = math.prod(g.shape[g.ndim - spatial:])  # (no -1: lead may hold a 0)
    gx = g.new_zeros(lead + (plane,)).scatter_add(
        -1, indices.reshape(lead + (out,)), g.reshape(lead + (out,)))
    return _Attach.apply(gx.reshape(x.shape), x)


_ADAPTIVE_MAX = {2: AdaptiveMaxPool,
                 3: ew.node_variant(AdaptiveMaxPool, "AdaptiveMaxPool3DBackward0",
                                    saved_attributes=AdaptiveMaxPool.saved_attributes,
                                    name="adaptive_max_pool3d")}


@autocast_policy(None, cpu="fp32")
def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows so the output's last three dims are ``output_size``; with
    ``return_indices`` also each maximum's flat D H W position."""
    return _adaptive_max("adaptive_max_pool3d", input, output_size, return_indices, 3)


# The *_with_indices forms always return (values, indices); ``return_indices`` is accepted
# and ignored, as PyTorch's.
def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _max_pool("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True, 1)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True, 2)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                            dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _max_pool("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                     True, 3)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool1d", input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool2d", input, output_size, True, 2)


@autocast_policy(None, cpu="fp32")
def adaptive_max_pool3d_with_indices(input: Tensor, output_size,  # noqa: A002
                                     return_indices: bool = False) -> tuple[Tensor, Tensor]:
    return _adaptive_max("adaptive_max_pool3d", input, output_size, True, 3)


@autocast_policy(None, cpu="fp32")
def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Mean over adaptive windows so the output's last three dims are ``output_size``."""
    return _adaptive_avg("adaptive_avg_pool3d", input, output_size, 3)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over PyTorch's adaptive windows so the output's last two dims are
    ``output_size``; with ``return_indices`` also each maximum's flat H W position."""
    return _adaptive_max("adaptive_max_pool2d", input, output_size, return_indices, 2)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows of the last dim of (N, C, L) or (C, L)."""
    return _adaptive_max("adaptive_max_pool1d", input, output_size, return_indices, 1)


def _max_unpool(op: str, input: Tensor, indices: Tensor, kernel_size, stride, padding,  # noqa: A002
                output_size, spatial: int) -> Tensor:
    """The inverse of max pooling: zeros of the unpooled size with each input value written
    at its index (a flat position in its (N, C) plane, as max_pool's return_indices give);
    d input = g read at the indices."""
    _check_tensor(op, input)
    _check_tensor(op, indices, "indices")
    if input.dtype.is_complex:
        raise NotImplementedError(f"{op}: \"{op if op != 'max_unpool1d' else 'max_unpool2d'}\" "
                                  f"not implemented for "
                                  f"'{dtypes.SCALAR_TYPE_NAMES[input.dtype]}' (floating point "
                                  f"and integer inputs only)")
    if indices.dtype is not dtypes.int64:
        raise RuntimeError(f"{op}: elements in indices should be type int64 but got: "
                           f"{indices.dtype.name}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: Expected shape of indices to be same as that of the input "
                           f"tensor ({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    x, added = _batched(op, input, spatial)
    idx = indices.unsqueeze(0) if added else indices
    kernel = _tuple(op, "kernel_size", kernel_size, spatial)
    stride = kernel if stride is None else _tuple(op, "stride", stride, spatial)
    pad = _tuple(op, "padding", padding, spatial)
    default = tuple((n - 1) * s - 2 * p + k
                    for n, s, p, k in zip(x.shape[2:], stride, pad, kernel))
    if output_size is None:
        out = default
    else:
        out = tuple(int(o) for o in output_size)[-spatial:]
        for o, d, s in zip(out, default, stride):
            if not d - s < o < d + s:
                raise ValueError(f"invalid output_size {list(output_size)} (dim must be "
                                 f"between {d - s} and {d + s})")
    plane = math.prod(out)
    lead = tuple(idx.shape[:idx.ndim - spatial])  # (N, C): a flat position in each plane
    if idx.numel() and not checked_on_device(f"{op}:", idx, plane, len(lead), lead + (plane,)):
        lo, hi = int(idx.min()), int(idx.max())  # (on cuda: checked there, no host read)
        if lo < 0 or hi >= plane:
            raise RuntimeError(f"{op}: Found an invalid max index: {lo if lo < 0 else hi} "
                               f"(output volumes are of size {'x'.join(map(str, out))})")
    if spatial == 1:  # PyTorch's: the 2-d op on the inputs unsqueezed at -2, squeezed
        return fresh(MaxUnpool.apply(input.unsqueeze(-2), indices.unsqueeze(-2),
                                     (1,) + out).squeeze(-2))
    return _MAX_UNPOOL[spatial].apply(input, indices, out)


class MaxUnpool(Function):
    """max_unpool (2-d, or 3-d: ``_MAX_UNPOOL``): x (N, C, *in) or unbatched (C, *in) and
    its int64 ``indices`` (flat positions in each (N, C) plane of the output) -> zeros of
    (..., *out) with each x written at its index (a scatter; a repeated index keeps one).
    One node on the input as given, PyTorch's MaxUnpool2DBackward0 / MaxUnpool3DBackward0
    (the indices get no edge). Linear in x: dx = g read at the indices (a gather, whose
    backward is the scatter add: differentiates again)."""

    name = "max_unpool2d"
    node_name = "MaxUnpool2DBackward0"
    keeps_indices = True
    hidden_edges = (1,)

    @staticmethod
    def _flat(t: Tensor, k: int) -> Tensor:
        """t (..., *spatial) as (..., prod(spatial)), the k spatial dims flattened."""
        lead = tuple(t.shape[:t.ndim - k])
        return t.reshape(lead + (math.prod(t.shape[t.ndim - k:]),))

    @staticmethod
    def forward(ctx, x, idx, out):
        k = len(out)
        ctx.idx, ctx.x_shape, ctx.k = idx, tuple(x.shape), k
        lead = tuple(x.shape[:x.ndim - k])
        zeros = x.new_zeros(lead + (math.prod(out),))
        y = zeros.scatter(-1, MaxUnpool._flat(idx, k), MaxUnpool._flat(x, k))
        return fresh(y.reshape(lead + tuple(out)))  # (a view of the op's own temporary)

    @staticmethod
    def backward(ctx, g):
        gx = MaxUnpool._flat(g, ctx.k).gather(-1, MaxUnpool._flat(ctx.idx, ctx.k))
        return gx.reshape(ctx.x_shape), None, None


_MAX_UNPOOL = {2: MaxUnpool, 3: ew.node_variant(MaxUnpool, "MaxUnpool3DBackward0",
                                                name="max_unpool3d")}


@autocast_policy(None, cpu="fp32")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """Undo max_pool2d: (N, C, H, W) values at their ``indices`` in a zero
    (N, C, (H - 1) s - 2 p + k, ...) output (or ``output_size``)."""
    return _max_unpool("max_unpool2d", input, indices, kernel_size, stride, padding,
                       output_size, 2)


@autocast_policy(None, cpu="fp32")
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """Undo max_pool1d (see max_unpool2d)."""
    return _max_unpool("max_unpool1d", input, indices, kernel_size, stride, padding,
                       output_size, 1)


@autocast_policy(None, cpu="fp32")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """Undo max_pool3d (see max_unpool2d)."""
    return _max_unpool("max_unpool3d", input, indices, kernel_size, stride, padding,
                       output_size, 3)
