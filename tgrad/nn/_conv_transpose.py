"""Transposed convolution and fold (col2im) as compositions of tgrad ops (no kernel of their
own), re-exported by tgrad.nn.functional.

Shapes (PyTorch's): conv_transpose2d input (N, C_in, H, W) or unbatched (C_in, H, W),
weight (C_in, C_out / groups, kh, kw), bias (C_out,) -> (N, C_out, oh, ow) with
oh = (H - 1) sh - 2 ph + dh (kh - 1) + oph + 1 (ow likewise). The 1-d form runs as the 2-d
one with H = 1; the 3-d one adds a depth dim to every step. fold: input (N, C kh kw, L) or
(C kh kw, L) -> (N, C, H, W), the adjoint (transpose) of unfold: every column entry is
added at the position unfold read it from.

How: conv_transpose is the adjoint of conv2d with respect to its input. Each input pixel
(n, ci, iy, ix) spreads its value times the weight over a kh x kw window of the output at
(iy sh + ky dh, ix sw + kx dw). One batched matmul of the weight (groups, C_out / groups
kh kw, C_in / groups) with the input (N, groups, C_in / groups, H W) gives those windows as
columns (N, C_out, kh kw, H W); one ``Col2Im`` ("col2im", the adjoint of the gather that
conv2d's im2col uses; tgrad/nn/_conv.py) sums them into an (N, C_out, Hf, Wf) plane, and
the padding is cropped off both sides. One node (``ConvTranspose``, PyTorch's
ConvolutionBackward0) whose backward is the parts' adjoints (col2im's is im2col's gather,
the matmul's a matmul), so double backward works too. Memory is that of the
columns: N C_out kh kw H W elements.
"""

from __future__ import annotations

import math

from tgrad import dtypes
from tgrad._autocast import autocast_policy
from tgrad.autograd.function import Function
from tgrad.nn._conv import (
    _SAVED_IM2COL,
    Col2Im,
    _batched,
    _check_like_input,
    _columns,
    _conj,
    _no_integer_kernel,
    _pad_hw,
    _padded,
    _tuple,
    _window_key,
)
from tgrad.nn.functional import _check_tensor
from tgrad.ops._common import fresh, rounded_to, widen_halves
from tgrad.tensor import Tensor

__all__ = ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold"]


def _col2im(cols: Tensor, size: tuple, kernel: tuple, stride: tuple, dilation: tuple,
            blocks: tuple) -> Tensor:
    """The adjoint of _conv._columns: cols (N, C, kh kw, bh bw) summed into a zero
    (N, C, *size) plane, entry [n, c, ky kw + kx, by bw + bx] added at
    (by sh + ky dh, bx sw + kx dw)."""
    n, c = cols.shape[0], cols.shape[1]
    geom = (tuple(size), kernel, stride, dilation, blocks)
    flat = cols.reshape(n, c, cols.shape[2] * cols.shape[3])
    return Col2Im.apply(flat, _window_key(geom, cols.device), geom).reshape(n, c, *size)


def _crop(y: Tensor, pad: tuple, out: tuple) -> Tensor:
    """y (N, C, Hf, Wf)[:, :, ph:ph + oh, pw:pw + ow] (no-op dims skipped)."""
    for d, (p, o) in enumerate(zip(pad, out), start=2):
        if p != 0 or o != y.shape[d]:
            y = y.narrow(d, p, o)
    return y


# ---------------------------------------------------------------------------- fold
def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,  # noqa: A002
         stride=1) -> Tensor:
    """Sums sliding-block columns (N, C kh kw, L) or (C kh kw, L) into (N, C, H, W) (or
    (C, H, W)), ``output_size`` = (H, W): PyTorch's col2im, the adjoint of unfold with the
    same arguments (overlapping entries add up; fold(unfold(x)) = x times the number of
    blocks covering each pixel)."""
    _check_tensor("fold", input, "input")
    _no_integer_kernel("fold", input, "col2im_out_cpu")
    if input.ndim not in (2, 3) or 0 in input.shape[input.ndim - 2:]:
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    if not isinstance(output_size, int) and len(tuple(output_size)) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size "
                           f"{len(tuple(output_size))}")
    size = _tuple("fold", "output_size", output_size, 2)
    kernel = _tuple("fold", "kernel_size", kernel_size, 2)
    dilation = _tuple("fold", "dilation", dilation, 2)
    pad = _tuple("fold", "padding", padding, 2)
    stride = _tuple("fold", "stride", stride, 2)
    for what, vals in (("kernel", kernel), ("stride", stride), ("dilation", dilation)):
        if any(v <= 0 for v in vals):
            raise RuntimeError(f"{what} should be greater than zero, but got "
                               f"{what}_height: {vals[0]} {what}_width: {vals[1]}")
    if any(p < 0 for p in pad):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {pad[0]} "
                           f"pad_width: {pad[1]}")
    if any(s <= 0 for s in size):
        raise RuntimeError(f"fold: output_size must be positive, got {list(size)}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    k = kernel[0] * kernel[1]
    if x.shape[1] % k:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={kernel}.")
    padded = tuple(s + 2 * p for s, p in zip(size, pad))
    blocks = tuple((p - d * (kk - 1) - 1) // s + 1
                   for p, kk, s, d in zip(padded, kernel, stride, dilation))
    args = (f"output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={pad}, stride={stride}")
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given {args}, calculated shape of the array of sliding blocks as "
                           f"({blocks[0]}, {blocks[1]}), but its components must be at least "
                           f"one.")
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given {args}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}.")
    return Fold.apply(input, (kernel, dilation, pad, stride, size, padded, blocks))


class Fold(Function):
    """fold (PyTorch's col2im): cols (N, C kh kw, L) or (C kh kw, L) summed into the padded
    (N, C, *padded) plane, cropped to (N, C, *size) (or (C, ...)); geometry = (kernel,
    dilation, pad, stride, size, padded, blocks). One node, PyTorch's Col2ImBackward0.
    Linear, its adjoint im2col: dcols = im2col(g zero-padded) (an Im2Col node: differentiates
    again). float16/bfloat16 sums in float32, rounded once."""

    name = "fold"
    node_name = "Col2ImBackward0"
    saved_attributes = _SAVED_IM2COL

    @staticmethod
    def forward(ctx, x, geometry):
        kernel, dilation, pad, stride, size, padded, blocks = ctx.geometry = geometry
        unbatched = x.ndim == 2
        x = x.unsqueeze(0) if unbatched else x
        k = kernel[0] * kernel[1]
        n, c = x.shape[0], x.shape[1] // k
        (x,), half = widen_halves(x)  # halves: float32 sums, rounded once
        y = _col2im(x.reshape(n, c, k, x.shape[2]), padded, kernel, stride, dilation, blocks)
        y = _crop(y, pad, size)  # (a crop and squeeze of the op's own temporary: a new tensor)
        return fresh(rounded_to(y.squeeze(0) if unbatched else y, half))

    @staticmethod
    def backward(ctx, g):
        kernel, dilation, pad, stride, size, padded, blocks = ctx.geometry
        unbatched = g.ndim == 3
        g = g.unsqueeze(0) if unbatched else g
        cols = _columns(_pad_hw(g, pad, 0.0), kernel, stride, dilation, blocks)
        n, c = cols.shape[0], cols.shape[1]
        cols = cols.reshape(n, c * cols.shape[2], cols.shape[3])
        return (cols.squeeze(0) if unbatched else cols), None


# ---------------------------------------------------------------------------- conv_transpose
def _conv_transpose(op: str, input: Tensor, weight: Tensor, bias, stride, padding,  # noqa: A002
                    output_padding, groups: int, dilation, spatial: int) -> Tensor:
    _check_tensor(op, input, "input")
    _check_tensor(op, weight, "weight")
    x, added = _batched(op, input, spatial)
    if weight.ndim != spatial + 2:
        raise RuntimeError(f"{op}: expected weight to be {spatial + 2}-dimensional (in "
                           f"channels, out channels / groups, kernel...), but got weight of "
                           f"size {list(weight.shape)}")
    stride = _tuple(op, "stride", stride, spatial)
    padding = _tuple(op, "padding", padding, spatial)
    output_padding = _tuple(op, "output_padding", output_padding, spatial)
    dilation = _tuple(op, "dilation", dilation, spatial)
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(o >= s and o >= d for o, s, d in zip(output_padding, stride, dilation)):
        names = ("depth", "height", "width")[3 - spatial:]
        parts = [f"{what}_{name}: {v}" for what, vals in (
            ("output_padding", output_padding), ("stride", stride), ("dilation", dilation))
            for name, v in zip(names, vals)]
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, "
                           f"but got {' '.join(parts)}")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    in_ch, out_per_group = weight.shape[0], weight.shape[1]
    if in_ch < groups or in_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{list(weight.shape)}] instead")
    if x.shape[1] != in_ch:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {in_ch} channels, but got "
                           f"{x.shape[1]} channels instead")
    if 0 in weight.shape[1:]:
        raise RuntimeError(f"{op}: non-empty weight expected, but got weight of size "
                           f"{list(weight.shape)}")
    if 0 in x.shape[2:] and x.shape[0] != 0:  # (an empty batch may have empty planes)
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got "
                           f"input shape: {list(x.shape)}")
    out_ch = out_per_group * groups
    if bias is not None:
        _check_tensor(op, bias, "bias")
        if bias.shape != (out_ch,):
            raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, "
                               f"expected bias to be 1-dimensional with {out_ch} elements, but "
                               f"got bias of size {list(bias.shape)} instead")
    _check_like_input(op, x, weight, bias)
    if not (x.dtype.is_floating_point or x.dtype.is_complex or x.dtype is dtypes.int64):
        kernel = f"slow_conv_transpose{3 if spatial == 3 else 2}d_out_cpu"  # PyTorch's
        raise dtypes.kernel_not_implemented(kernel, x.dtype, f" ({op}: floating point, "
                                            f"complex or int64 inputs only, as PyTorch's CPU "
                                            f"kernels; convert with .float() first)")
    kernel, sizes = tuple(weight.shape[2:]), tuple(x.shape[2:])
    out = tuple((i - 1) * s - 2 * p + d * (k - 1) + o + 1 for i, s, p, d, k, o in zip(
        sizes, stride, padding, dilation, kernel, output_padding))
    if any(o < 0 or (o == 0 and x.shape[0] != 0) for o in out):
        # PyTorch: an empty batch only needs sizes >= 0 (an empty result of that shape)
        lead = (1,) * max(0, 2 - spatial)  # PyTorch runs 1-d as 2-d and reports it so
        raise RuntimeError(f"Given input size per channel: "
                           f"({' x '.join(map(str, lead + sizes))}). Calculated output size "
                           f"per channel: ({' x '.join(map(str, lead + out))}). Output size "
                           f"is too small")
    y = ConvTranspose.apply(x, weight, bias, (kernel, stride, padding, output_padding,
                                              dilation, groups, out))
    return fresh(y.squeeze(0)) if added else y  # (not a view: PyTorch's)


def _transpose_2d(x: Tensor, weight: Tensor, geometry: tuple) -> tuple:
    """A 1-d transposed convolution's input, weight and geometry as the 2-d one's with
    H = 1 (other ranks unchanged), plus the input's spatial sizes and the uncropped
    output plane ``full`` (output_padding may reach past the last window: zeros there)."""
    kernel, stride, padding, output_padding, dilation, groups, out = geometry
    if len(kernel) == 1:
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        kernel, stride, dilation = (1,) + kernel, (1,) + stride, (1,) + dilation
        padding, out = (0,) + padding, (1,) + out
    sizes = tuple(x.shape[2:])
    full = tuple(max((i - 1) * s + d * (kk - 1) + 1, p + o) for i, s, d, kk, p, o in zip(
        sizes, stride, dilation, kernel, padding, out))
    return x, weight, (kernel, stride, padding, dilation, groups, out, sizes, full)


class ConvTranspose(Function):
    """y = conv_transpose(x, w) + b: x (N, C_in, *sizes) (1-d runs as 2-d with H = 1), w
    (C_in, C_out / G, *kernel), b (C_out,) or None -> (N, C_out, *out). One node, PyTorch's
    ConvolutionBackward0 with transposed=True (edges x, w, bias: a (None, 0) slot without
    one). float16/bfloat16 computed in float32 and rounded once, both ways.

    With w as (G, C_in/G, C_out/G k) and x as (N, G, C_in/G, L): cols = w^T @ x (N, G,
    C_out/G k, L), y = crop(col2im(cols)) (+ b). The adjoints (complex: conjugates, as
    matmul's rule): dcols = im2col(g zero-padded back to the uncropped plane);
    dx = conj(w) @ dcols;  dw = sum_n conj(x) @ dcols^T;  db = the sum of g over N and the
    spatial dims. All tgrad ops (an Im2Col node, matmuls, a pad), so the backward
    differentiates again."""

    name = "conv_transpose"
    node_name = "ConvolutionBackward0"
    scalar_edges = True  # bias None keeps its (None, 0) slot, as PyTorch's
    hidden_edges = (3,)
    saved_attributes = {
        "_saved_input": 0, "_saved_weight": 1,
        "_saved_bias_sym_sizes_opt": lambda node: (node.bias_size,),  # (0,): no bias
        "_saved_stride": lambda node: node.geometry[1],
        "_saved_padding": lambda node: node.geometry[2],
        "_saved_output_padding": lambda node: node.geometry[3],
        "_saved_dilation": lambda node: node.geometry[4],
        "_saved_groups": lambda node: node.geometry[5],
        "_saved_transposed": lambda node: True}

    @staticmethod
    def forward(ctx, x, weight, bias, geometry):
        ctx.save_for_backward(x, weight)
        ctx.geometry = geometry
        in_ch = weight.shape[0]
        if x.shape[0] == 0:  # an empty batch: (0, C_out, *out), as PyTorch's (the planes may
            ctx.out_ch = weight.shape[1] * geometry[5]  # be empty, or not fit a window)
            ctx.bias_size = 0 if bias is None else ctx.out_ch
            return x.new_zeros((0, ctx.out_ch) + geometry[6])
        x, weight, (kernel, stride, padding, dilation, groups, out, sizes, full) = \
            _transpose_2d(x, weight, geometry)
        out_ch = ctx.out_ch = weight.shape[1] * groups
        ctx.bias_size = 0 if bias is None else out_ch
        (x, weight, bias), half = widen_halves(x, weight, bias)  # halves: float32, rounded once
        n, k, length = x.shape[0], math.prod(kernel), math.prod(sizes)
        # cols[n, g, co k, l] = sum_ci w[g, ci, co k] x[n, g, ci, l]
        w = weight.reshape(groups, in_ch // groups, (out_ch // groups) * k).transpose(1, 2)
        cols = (w @ x.reshape(n, groups, in_ch // groups, length)).reshape(n, out_ch, k, length)
        y = _crop(_col2im(cols, full, kernel, stride, dilation, sizes), padding, out)
        if bias is not None:
            y = y + bias.reshape((out_ch,) + (1,) * len(out))
        ctx.half = half
        # (a reshape of the op's own temporary: a new tensor, PyTorch's, not a view)
        return fresh(rounded_to(y.reshape((n, out_ch) + geometry[6]), half))

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b, _ = ctx.needs_input_grad
        if x.shape[0] == 0:  # an empty batch: zero gradients (sums over no element); under
            # create_graph nodes of what the general formulas read (dx: w and g, dw: x and
            # g, db: g), through 0 * sum(t): an empty t's sum is 0, and dx is empty itself
            def zero(shape: tuple, *of: Tensor) -> Tensor:
                out = g.new_zeros(shape)
                for t in of:
                    out = out + t.sum() * 0
                return out
            return (zero(x.shape, weight, g) if need_x else None,
                    zero(weight.shape, x, g) if need_w else None,
                    zero((ctx.out_ch,), g) if need_b else None, None)
        half, out_ch = ctx.half, ctx.out_ch
        spatial = len(ctx.geometry[0])
        x2, w2, (kernel, stride, padding, dilation, groups, out, sizes, full) = \
            _transpose_2d(x, weight, ctx.geometry)
        if half is not None:
            g, x2, w2 = g.float(), x2.float(), w2.float()
        gx = gw = gb = None
        if need_b:  # the sum over N and the spatial dims
            gb = rounded_to(g.sum((0,) + tuple(range(2, 2 + spatial))), half)
        if not (need_x or need_w):
            return gx, gw, gb, None
        n, in_ch, k, length = g.shape[0], weight.shape[0], math.prod(kernel), math.prod(sizes)
        g2 = g.reshape((n, out_ch) + out)
        # the crop's adjoint: g zero-padded back to the uncropped plane; col2im's: im2col
        gfull = _padded(g2, tuple((p, f - p - o) for p, f, o in zip(padding, full, out)))
        dcols = _columns(gfull, kernel, stride, dilation, sizes)  # (N, C_out, k, L)
        dcols = dcols.reshape(n, groups, (out_ch // groups) * k, length)
        wm = w2.reshape(groups, in_ch // groups, (out_ch // groups) * k)
        if need_x:  # dx = conj(w) @ dcols: (N, G, C_in/G, L)
            gx = rounded_to((_conj(wm) @ dcols).reshape(x.shape), half)
        if need_w:  # dw[g, ci, co k] = sum_n,l dcols[n, g, co k, l] conj(x[n, g, ci, l])
            xm = x2.reshape(n, groups, in_ch // groups, length)
            gw = rounded_to((_conj(xm) @ dcols.transpose(-1, -2)).sum(0).reshape(
                weight.shape), half)
        return gx, gw, gb, None
@autocast_policy("lower")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """2-d transposed convolution (the gradient of conv2d with respect to its input):
    input (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kh, kw) ->
    (N, C_out, oh, ow), oh = (H - 1) sh - 2 ph + dh (kh - 1) + oph + 1: ``padding`` crops ph
    rows (pw columns) off each side of the full output, ``output_padding`` (smaller than
    stride or dilation) adds rows/columns at the bottom/right."""
    return _conv_transpose("conv_transpose2d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 2)


@autocast_policy("lower")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """3-d transposed convolution: input (N, C_in, D, H, W) or (C_in, D, H, W), weight
    (C_in, C_out / groups, kd, kh, kw) -> (N, C_out, od, oh, ow), each size as in 2-d."""
    return _conv_transpose("conv_transpose3d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 3)


@autocast_policy("lower")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1) -> Tensor:
    """1-d transposed convolution: input (N, C_in, L) or (C_in, L), weight
    (C_in, C_out / groups, k) -> (N, C_out, (L - 1) s - 2 p + d (k - 1) + op + 1)."""
    return _conv_transpose("conv_transpose1d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 1)
