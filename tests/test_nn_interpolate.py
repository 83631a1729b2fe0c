"""interpolate / Upsample (tgrad/nn/_interpolate.py) and conv_transpose1d/2d, fold,
ConvTranspose1d/2d (tgrad/nn/_conv_transpose.py): values against NumPy float64 loop
references written here (PyTorch's index and weight formulas), the adjoint identities
(conv_transpose is conv's gradient with respect to its input, fold is unfold's transpose),
gradcheck / gradgradcheck, modules and errors."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


def _raises(fn, exc, text):
    with pytest.raises(exc) as info:
        fn()
    assert text in str(info.value), str(info.value)


# ============================================================================ references
def _step(in_size, out_size, scale, t):
    """PyTorch's source step: 1 / scale_factor when one was given (and not recomputed),
    else in / out, in the arithmetic type t."""
    return t(1.0 / scale) if scale is not None else t(in_size) / t(out_size)


def _nearest_src(dst, in_size, out_size, scale, exact, four_d, t):
    """One source index, following PyTorch's CPU kernels element by element."""
    if four_d:  # upsample_nearest2d: nearest_idx / nearest_exact_idx, float32 step
        if not exact and out_size == in_size:
            return dst
        if not exact and out_size == 2 * in_size:
            return dst // 2
        step = _step(in_size, out_size, scale, np.float32)
        real = np.float32((dst + 0.5) * float(step)) if exact else np.float32(dst) * step
    else:  # 1-d / 3-d: the step in the input's precision; (dst + 0.5) step - 0.5 fused
        step = _step(in_size, out_size, scale, t)
        if exact:
            r = t(float(Fraction(float(step)) * Fraction(2 * dst + 1, 2) - Fraction(1, 2)))
            real = np.float32(max(float(r), 0.0) + 0.5)
        else:
            real = np.float32(step * t(dst))
    return min(int(math.floor(real)), in_size - 1)


def _linear_taps(dst, in_size, out_size, scale, align):
    """(i0, i1, w0, w1) of one output position (float64 maths)."""
    if out_size == in_size:
        return dst, dst, 1.0, 0.0
    if align:
        real = (in_size - 1) / (out_size - 1) * dst if out_size > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None else in_size / out_size
        real = max(step * (dst + 0.5) - 0.5, 0.0)
    i0 = min(int(math.floor(real)), in_size - 1)
    w1 = min(max(real - i0, 0.0), 1.0)
    return i0, i0 + (i0 < in_size - 1), 1.0 - w1, w1


def ref_interpolate(x, out, mode, scales=None, align=False):
    """Loops over every output element of (N, C, *spatial) x."""
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    scales = scales or [None] * len(sizes)
    y = np.zeros((n, c) + tuple(out), dtype=np.float64)
    t = np.float64 if x.dtype == np.float64 else np.float32
    for pos in np.ndindex(*out):
        if mode in ("nearest", "nearest-exact"):
            src = tuple(_nearest_src(d, i, o, s, mode == "nearest-exact", len(sizes) == 2, t)
                        for d, i, o, s in zip(pos, sizes, out, scales))
            y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + src]
            continue
        taps = [_linear_taps(d, i, o, s, align) for d, i, o, s in zip(pos, sizes, out, scales)]
        acc = np.zeros((n, c))
        for corner in np.ndindex(*(2,) * len(sizes)):
            idx = tuple(tp[k] for tp, k in zip(taps, corner))
            weight = np.prod([tp[2 + k] for tp, k in zip(taps, corner)])
            acc += weight * x[(slice(None), slice(None)) + idx]
        y[(slice(None), slice(None)) + pos] = acc
    return y


def ref_area(x, out):
    """Adaptive average windows [floor(i in / out), ceil((i + 1) in / out)) per dim."""
    sizes = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        win = tuple(slice(i * s // o, -(-(i + 1) * s // o)) for i, s, o in zip(pos, sizes, out))
        y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + win].mean(
            axis=tuple(range(2, x.ndim)))
    return y


def ref_conv_transpose(x, w, b, stride, padding, output_padding, groups, dilation):
    """Scatter: every input pixel adds x * w over its window of the full output; then the
    padding is cropped. x (N, C_in, *s), w (C_in, C_out / groups, *k)."""
    n, cin = x.shape[:2]
    sizes, kernel = x.shape[2:], w.shape[2:]
    cout_g = w.shape[1]
    out = [(i - 1) * s - 2 * p + d * (k - 1) + o + 1 for i, s, p, d, k, o in
           zip(sizes, stride, padding, dilation, kernel, output_padding)]
    full = [max((i - 1) * s + d * (k - 1) + 1, p + o) for i, s, d, k, p, o in
            zip(sizes, stride, dilation, kernel, padding, out)]
    y = np.zeros((n, cout_g * groups) + tuple(full))
    for ci in range(cin):
        g = ci // (cin // groups)
        for co in range(cout_g):
            for ipos in np.ndindex(*sizes):
                for kpos in np.ndindex(*kernel):
                    opos = tuple(i * s + k * d for i, s, k, d in zip(ipos, stride, kpos, dilation))
                    y[(slice(None), g * cout_g + co) + opos] += \
                        x[(slice(None), ci) + ipos] * w[(ci, co) + kpos]
    y = y[(slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, out))]
    if b is not None:
        y = y + b.reshape((-1,) + (1,) * len(sizes))
    return y


def ref_fold(cols, size, kernel, dilation, padding, stride):
    n, ck, _ = cols.shape
    c = ck // (kernel[0] * kernel[1])
    hp, wp = size[0] + 2 * padding[0], size[1] + 2 * padding[1]
    bh = (hp - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    bw = (wp - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    y = np.zeros((n, c, hp, wp))
    cols = cols.reshape(n, c, kernel[0], kernel[1], bh, bw)
    for ky, kx, by, bx in np.ndindex(kernel[0], kernel[1], bh, bw):
        y[:, :, by * stride[0] + ky * dilation[0], bx * stride[1] + kx * dilation[1]] += \
            cols[:, :, ky, kx, by, bx]
    return y[:, :, padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]


# ============================================================================ interpolate
NEAREST_CASES = [
    # shape, size, scale_factor
    ((2, 3, 7), 12, None),
    ((1, 2, 9), 4, None),            # downsampling, odd sizes
    ((2, 1, 5), None, 2.1),          # non-integer factor (step 1 / 2.1, not 5 / 10)
    ((1, 2, 8), None, 0.37),
    ((2, 2, 5, 7), (9, 3), None),
    ((1, 3, 4, 5), None, (2.1, 1 / 3)),
    ((2, 2, 5, 3), None, 1.1),       # 4-D: out == in copies whatever the factor
    ((1, 2, 7, 6), None, (0.6, 1.7)),
    ((1, 2, 3, 4, 5), (5, 2, 7), None),
    ((1, 1, 3, 5, 4), None, (1.5, 0.7, 2.1)),
]


def _out_and_scales(shape: tuple, size, scale) -> tuple:
    """(output sizes, scale factors or None) of a case, as interpolate derives them."""
    nd = len(shape) - 2
    if size is not None:
        return ((size,) * nd if isinstance(size, int) else size), None
    scales = [scale] * nd if not isinstance(scale, tuple) else list(scale)
    return [int(i * s) for i, s in zip(shape[2:], scales)], scales


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("shape,size,scale", NEAREST_CASES)
def test_nearest_modes_match_reference(mode, shape, size, scale):
    x = RNG.standard_normal(shape)
    y = F.interpolate(_t(x), size=size, scale_factor=scale, mode=mode)
    out, scales = _out_and_scales(shape, size, scale)
    ref = ref_interpolate(x, out, mode, scales)
    assert y.shape == ref.shape and y.dtype is tgrad.float64
    np.testing.assert_array_equal(y.numpy(), ref)  # nearest copies values exactly


def test_nearest_float32_follows_float32_index_maths():
    x = RNG.standard_normal((2, 3, 11)).astype(np.float32)
    for size in (3, 7, 17, 29):
        y = F.interpolate(tgrad.tensor(x), size=size)
        assert y.dtype is tgrad.float32
        np.testing.assert_array_equal(y.numpy(), ref_interpolate(x, [size], "nearest"))


LINEAR_CASES = [
    ((2, 3, 7), "linear", 12, None),
    ((1, 2, 9), "linear", 4, None),
    ((2, 1, 5), "linear", None, 2.1),
    ((1, 2, 1), "linear", 4, None),            # a single input sample
    ((2, 2, 8), "linear", 1, None),            # a single output sample
    ((1, 2, 6), "linear", None, 1.1),          # out == in (6): PyTorch copies
    ((2, 2, 5, 7), "bilinear", (9, 3), None),
    ((1, 3, 4, 5), "bilinear", None, (2.5, 0.45)),
    ((1, 1, 3, 3), "bilinear", None, 2),
    ((1, 2, 3, 4, 5), "trilinear", (5, 2, 7), None),
]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,mode,size,scale", LINEAR_CASES)
def test_linear_modes_match_reference(align, shape, mode, size, scale):
    x = RNG.standard_normal(shape)
    y = F.interpolate(_t(x), size=size, scale_factor=scale, mode=mode, align_corners=align)
    out, scales = _out_and_scales(shape, size, scale)
    ref = ref_interpolate(x, out, mode, scales, align)
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_align_corners_keeps_the_corners():
    x = RNG.standard_normal((1, 2, 4, 5))
    y = F.interpolate(_t(x), size=(7, 9), mode="bilinear", align_corners=True).numpy()
    np.testing.assert_allclose(y[..., [0, -1], :][..., [0, -1]], x[..., [0, -1], :][..., [0, -1]],
                               rtol=1e-12)
    # the default (align_corners=False) gives the half-pixel result instead
    z = F.interpolate(_t(x), size=(7, 9), mode="bilinear").numpy()
    np.testing.assert_allclose(z, ref_interpolate(x, (7, 9), "bilinear"), rtol=1e-12,
                               atol=1e-12)
    assert not np.allclose(y, z)


def test_scale_factor_is_the_step_unless_recomputed():
    x = RNG.standard_normal((1, 2, 5))
    # 5 * 1.7 -> 8 outputs: the kernels step by 1 / 1.7 ...
    y = F.interpolate(_t(x), scale_factor=1.7, mode="linear").numpy()
    np.testing.assert_allclose(y, ref_interpolate(x, [8], "linear", [1.7]), rtol=1e-12)
    # ... and by 5 / 8 once recompute_scale_factor forgets the factor (= size=8)
    z = F.interpolate(_t(x), scale_factor=1.7, mode="linear", recompute_scale_factor=True)
    np.testing.assert_allclose(z.numpy(), ref_interpolate(x, [8], "linear"), rtol=1e-12)
    np.testing.assert_allclose(z.numpy(), F.interpolate(_t(x), size=8, mode="linear").numpy(),
                               rtol=0, atol=0)
    assert not np.allclose(y, z.numpy())
    w = F.interpolate(_t(x), scale_factor=1.7, recompute_scale_factor=False, mode="nearest")
    np.testing.assert_array_equal(w.numpy(), ref_interpolate(x, [8], "nearest", [1.7]))


def test_area_mode_is_adaptive_average():
    x = RNG.standard_normal((2, 3, 7, 5))
    y = F.interpolate(_t(x), size=(3, 4), mode="area")
    np.testing.assert_allclose(y.numpy(), ref_area(x, (3, 4)), rtol=1e-12)
    x1 = RNG.standard_normal((1, 2, 9))
    y1 = F.interpolate(_t(x1), scale_factor=0.5, mode="area")  # out = floor(4.5) = 4
    np.testing.assert_allclose(y1.numpy(), ref_area(x1, (4,)), rtol=1e-12)


def test_area_mode_of_a_5d_input_is_adaptive_average_3d():
    x = RNG.standard_normal((2, 2, 5, 4, 6))
    y = F.interpolate(_t(x), size=(3, 7, 2), mode="area")
    np.testing.assert_allclose(y.numpy(), ref_area(x, (3, 7, 2)), rtol=1e-12, atol=1e-15)
    y1 = F.interpolate(_t(x), scale_factor=(0.5, 1.8, 1.0), mode="area")  # floor: (2, 7, 6)
    np.testing.assert_allclose(y1.numpy(), ref_area(x, (2, 7, 6)), rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda t: F.interpolate(t, size=(2, 3, 4), mode="area"),
                     (_t(x[:1, :1, :3, :4, :5], requires_grad=True),))


def test_empty_batch_and_half_precision():
    y = F.interpolate(tgrad.zeros(0, 2, 5), size=7, mode="linear")
    assert y.shape == (0, 2, 7)
    assert F.interpolate(tgrad.zeros(0, 2, 3, 3), scale_factor=2).shape == (0, 2, 6, 6)
    x = RNG.standard_normal((1, 2, 5, 6))
    for dt in (tgrad.float16, tgrad.bfloat16):
        y = F.interpolate(_t(x).to(dt), size=(7, 4), mode="bilinear")
        assert y.dtype is dt
        np.testing.assert_allclose(y.float().numpy(), ref_interpolate(x, (7, 4), "bilinear"),
                                   atol=4e-2)


def test_result_is_a_new_tensor():
    x = _t(RNG.standard_normal((1, 1, 4)))
    y = F.interpolate(x, size=4)
    y.add_(1.0)
    assert not np.allclose(x.numpy(), y.numpy())


@pytest.mark.parametrize("mode,shape,kw", [
    ("nearest", (1, 2, 3), dict(size=5)),
    ("nearest-exact", (1, 1, 3, 2), dict(scale_factor=(1.5, 2.5))),
    ("linear", (2, 1, 4), dict(size=3)),
    ("linear", (1, 2, 3), dict(scale_factor=2.5, align_corners=True)),
    ("bilinear", (1, 1, 3, 2), dict(size=(2, 5))),
    ("bilinear", (1, 1, 2, 3), dict(scale_factor=1.5, align_corners=True)),
    ("trilinear", (1, 1, 2, 2, 3), dict(size=(3, 1, 4))),
])
def test_interpolate_gradcheck(mode, shape, kw):
    x = _t(RNG.standard_normal(shape), requires_grad=True)
    fn = lambda a: F.interpolate(a, mode=mode, **kw)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_interpolate_gradient_matches_reference_adjoint():
    # interpolation is linear: the gradient is the transposed sampling matrix applied to g
    x = RNG.standard_normal((1, 1, 5))
    basis = np.eye(5).reshape(5, 1, 5)
    a = ref_interpolate(basis, [8], "linear", [1.7])[:, 0, :].T  # (8, 5)
    xt = _t(x, requires_grad=True)
    g = RNG.standard_normal((1, 1, 8))
    F.interpolate(xt, scale_factor=1.7, mode="linear").backward(_t(g))
    np.testing.assert_allclose(xt.grad.numpy()[0, 0], a.T @ g[0, 0], rtol=1e-12)


def test_interpolate_errors():
    x = _t(RNG.standard_normal((2, 3, 5)))
    _raises(lambda: F.interpolate(x, size=3, scale_factor=2), ValueError,
            "only one of size or scale_factor should be defined")
    _raises(lambda: F.interpolate(x), ValueError, "either size or scale_factor should be defined")
    _raises(lambda: F.interpolate(x, size=3, align_corners=True), ValueError,
            "align_corners option can only be set with the interpolating modes")
    _raises(lambda: F.interpolate(x, size=(2, 2)), ValueError,
            "Input and output must have the same number of spatial dimensions")
    _raises(lambda: F.interpolate(x, scale_factor=(2, 2)), ValueError,
            "Input and scale_factor must have the same number of spatial dimensions")
    _raises(lambda: F.interpolate(x, size=(2.0,)), TypeError, "expected size to be one of int")
    _raises(lambda: F.interpolate(x, size=3, recompute_scale_factor=True), ValueError,
            "recompute_scale_factor is not meaningful with an explicit size.")
    _raises(lambda: F.interpolate(x, size=0), RuntimeError,
            "Input and output sizes should be greater than 0, but got input (W: 5) and output "
            "(W: 0)")
    _raises(lambda: F.interpolate(_t(np.zeros((1, 1, 5, 5))), scale_factor=0.1,
                                  mode="bilinear"), RuntimeError,
            "input (H: 5, W: 5) output (H: 0, W: 0)")
    _raises(lambda: F.interpolate(tgrad.zeros(2, 0, 5), size=7), RuntimeError,
            "Non-empty 3D data tensor expected but got a tensor with sizes [2, 0, 5]")
    _raises(lambda: F.interpolate(_t(np.zeros((1, 1, 4, 4))), size=3, mode="linear"),
            NotImplementedError, "Got 4D input, but linear mode needs 3D input")
    _raises(lambda: F.interpolate(x, size=3, mode="bilinear"), NotImplementedError,
            "Got 3D input, but bilinear mode needs 4D input")
    _raises(lambda: F.interpolate(_t(np.zeros((3, 5))), size=3), NotImplementedError,
            "Only 3D, 4D and 5D input Tensors supported (got 2D)")
    _raises(lambda: F.interpolate(x, size=3, mode="bogus"), NotImplementedError, "(got bogus)")
    _raises(lambda: F.interpolate(x, size=3, mode="bicubic"), NotImplementedError,
            "Only 3D, 4D and 5D input Tensors supported (got 3D) for the modes: nearest | "
            "linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact "
            "(got bicubic)")
    _raises(lambda: F.interpolate(_t(np.zeros((1, 1, 2, 3, 4))), size=3, mode="bicubic"),
            NotImplementedError, "(got 5D) for the modes")
    _raises(lambda: F.interpolate(_t(np.zeros((1, 1, 2, 3, 4))), size=3, mode="trilinear",
                                  antialias=True), ValueError,
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input")
    _raises(lambda: F.interpolate(tgrad.arange(16).reshape(1, 1, 4, 4), size=3,
                                  mode="bicubic"), NotImplementedError,
            "not implemented for int64")
    _raises(lambda: F.interpolate(x, size=3, mode="linear", antialias=True), ValueError,
            "Anti-alias option is restricted")
    _raises(lambda: F.interpolate(tgrad.arange(10).reshape(1, 2, 5), size=7),
            NotImplementedError, "not implemented for int64")
    _raises(lambda: F.interpolate([1.0], size=3), TypeError, "must be Tensor")


# ---------------------------------------------------------------------------- bicubic
def _keys(d, a):
    """Keys' cubic convolution kernel (PyTorch's, A = -0.75; antialias uses A = -0.5)."""
    d = abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


def _cubic_src(dst, in_size, out_size, scale, align):
    """PyTorch's cubic source position: not clamped at 0 (unlike the linear modes)."""
    if align:
        return (in_size - 1) / (out_size - 1) * dst if out_size > 1 else 0.0
    step = 1.0 / scale if scale is not None else in_size / out_size
    return step * (dst + 0.5) - 0.5


def ref_bicubic(x, out, scales=None, align=False):
    """Loops over output pixels: 4 x 4 taps at floor(src) - 1 .. + 2, indices clamped into
    the input (border replication), weight W(src - tap) per dim, A = -0.75."""
    h, w = x.shape[2:]
    sy, sx = scales or (None, None)
    y = np.zeros(x.shape[:2] + tuple(out))
    for oy, ox in np.ndindex(*out):
        ry, rx = _cubic_src(oy, h, out[0], sy, align), _cubic_src(ox, w, out[1], sx, align)
        iy, ix = math.floor(ry), math.floor(rx)
        for ty in range(iy - 1, iy + 3):
            for tx in range(ix - 1, ix + 3):
                wt = _keys(ry - ty, -0.75) * _keys(rx - tx, -0.75)
                y[:, :, oy, ox] += wt * x[:, :, min(max(ty, 0), h - 1), min(max(tx, 0), w - 1)]
    return y


def _aa_weights(dst, in_size, out_size, scale, align, cubic):
    """{input index: weight} of one output position of PyTorch's antialias filter."""
    if align:
        s = (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    else:
        s = 1.0 / scale if scale is not None else in_size / out_size
    widen = max(s, 1.0)
    support = (2.0 if cubic else 1.0) * widen
    center = s * (dst + 0.5)
    lo = max(int(center - support + 0.5), 0)
    hi = min(int(center + support + 0.5), in_size)
    filt = (lambda d: _keys(d, -0.5)) if cubic else (lambda d: max(0.0, 1.0 - abs(d)))
    ws = {i: filt((i - center + 0.5) / widen) for i in range(lo, hi)}
    total = sum(ws.values())
    return {i: v / total for i, v in ws.items()}


def ref_antialias(x, out, scales=None, align=False, cubic=False):
    """Loops over output pixels; a dim whose size does not change is copied."""
    h, w = x.shape[2:]
    sy, sx = scales or (None, None)
    y = np.zeros(x.shape[:2] + tuple(out))
    for oy, ox in np.ndindex(*out):
        wy = {oy: 1.0} if out[0] == h else _aa_weights(oy, h, out[0], sy, align, cubic)
        wx = {ox: 1.0} if out[1] == w else _aa_weights(ox, w, out[1], sx, align, cubic)
        for iy, a in wy.items():
            for ix, b in wx.items():
                y[:, :, oy, ox] += a * b * x[:, :, iy, ix]
    return y


BICUBIC_CASES = [
    # shape, size, scale_factor
    ((2, 3, 5, 7), (9, 3), None),
    ((1, 2, 4, 5), None, (2.1, 0.45)),
    ((1, 1, 3, 3), None, 2),
    ((1, 2, 5, 3), None, 1.1),        # out == in: still resampled with step 1 / 1.1
    ((1, 1, 1, 4), (3, 1), None),     # a single input row, a single output column
    ((2, 1, 7, 6), (7, 6), None),     # same size, no factor: the identity
    ((1, 2, 9, 11), None, (0.37, 0.6)),
]


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,size,scale", BICUBIC_CASES)
def test_bicubic_matches_reference(align, shape, size, scale):
    x = RNG.standard_normal(shape)
    y = F.interpolate(_t(x), size=size, scale_factor=scale, mode="bicubic", align_corners=align)
    out, scales = _out_and_scales(shape, size, scale)
    ref = ref_bicubic(x, out, scales, align)
    assert y.shape == ref.shape and y.dtype is tgrad.float64
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_bicubic_hand_values_and_recompute():
    # a linear ramp is reproduced exactly in the interior (the cubic kernel's partition of
    # unity and first moment), and with align_corners the corners are kept
    x = np.arange(6.0).reshape(1, 1, 1, 6) * np.ones((1, 1, 4, 1))
    y = F.interpolate(_t(x), size=(4, 11), mode="bicubic", align_corners=True).numpy()
    np.testing.assert_allclose(y[0, 0, 0, 2:-2], np.linspace(1.0, 4.0, 7), rtol=1e-12)
    assert y[0, 0, 0, 0] == 0.0 and abs(y[0, 0, 0, -1] - 5.0) < 1e-12
    # next to the border the clamped taps bend it: src 0.5 reads 0, 0, 1, 2 with W(1.5),
    # W(0.5), W(0.5), W(1.5): 0.5 + W(1.5) = 0.40625 with A = -0.75
    assert abs(y[0, 0, 0, 1] - (_keys(0.5, -0.75) + 2 * _keys(1.5, -0.75))) < 1e-12
    # the half-pixel default with factor 2: src = (dst + 0.5) / 2 - 0.5, so dst = 2 reads
    # src = 0.75: taps -1 (clamped to 0), 0, 1, 2 with W(1.75), W(0.75), W(0.25), W(1.25)
    v = np.array([3.0, -1.0, 2.0, 5.0])
    w = [_keys(d, -0.75) for d in (1.75, 0.75, 0.25, 1.25)]
    want = w[0] * v[0] + w[1] * v[0] + w[2] * v[1] + w[3] * v[2]
    z = F.interpolate(_t(v.reshape(1, 1, 1, 4)), scale_factor=(1, 2), mode="bicubic")
    assert z.shape == (1, 1, 1, 8)
    assert abs(z.numpy()[0, 0, 0, 2] - want) < 1e-12
    # recompute_scale_factor: the step becomes in / out (= size=out)
    x = RNG.standard_normal((1, 2, 5, 4))
    r = F.interpolate(_t(x), scale_factor=1.7, mode="bicubic", recompute_scale_factor=True)
    np.testing.assert_allclose(r.numpy(), ref_bicubic(x, (8, 6)), rtol=1e-12, atol=1e-12)
    s = F.interpolate(_t(x), scale_factor=1.7, mode="bicubic")
    np.testing.assert_allclose(s.numpy(), ref_bicubic(x, (8, 6), [1.7, 1.7]), rtol=1e-12,
                               atol=1e-12)
    assert not np.allclose(r.numpy(), s.numpy())


def test_bicubic_float32_and_half():
    x = RNG.standard_normal((1, 2, 5, 6))
    ref = ref_bicubic(x, (7, 4))
    y = F.interpolate(_t(x).float(), size=(7, 4), mode="bicubic")
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-5, atol=1e-5)
    for dt in (tgrad.float16, tgrad.bfloat16):
        y = F.interpolate(_t(x).to(dt), size=(7, 4), mode="bicubic")
        assert y.dtype is dt
        np.testing.assert_allclose(y.float().numpy(), ref, atol=5e-2)


AA_CASES = [
    # shape, size, scale_factor
    ((2, 2, 9, 8), (4, 3), None),
    ((1, 1, 13, 7), None, (0.3, 0.5)),
    ((1, 2, 6, 5), (2, 5), None),      # W unchanged: copied
    ((1, 1, 5, 9), (7, 4), None),      # up in H (the plain filter, renormalised)
    ((1, 1, 8, 6), (1, 1), None),      # everything averaged into one pixel
    ((2, 1, 11, 10), None, 0.25),
]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,size,scale", AA_CASES)
def test_antialias_matches_reference(mode, align, shape, size, scale):
    x = RNG.standard_normal(shape)
    y = F.interpolate(_t(x), size=size, scale_factor=scale, mode=mode, align_corners=align,
                      antialias=True)
    out, scales = _out_and_scales(shape, size, scale)
    ref = ref_antialias(x, out, scales, align, mode == "bicubic")
    assert y.shape == ref.shape and y.dtype is tgrad.float64
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_antialias_hand_values():
    # halving with the triangle filter: support 2, centre 2 j + 1, taps 2j - 1 .. 2j + 2
    # with triangle(0.75, 0.25, 0.25, 0.75 away / 2) = 1/8, 3/8, 3/8, 1/8
    v = RNG.standard_normal(10)
    y = F.interpolate(_t(v.reshape(1, 1, 1, 10)), size=(1, 5), mode="bilinear",
                      antialias=True).numpy()[0, 0, 0]
    for j in range(1, 4):
        assert abs(y[j] - (v[2 * j - 1] + 3 * v[2 * j] + 3 * v[2 * j + 1] + v[2 * j + 2]) / 8) \
            < 1e-12
    # at the border the window is cut and renormalised: 3/7, 3/7, 1/7
    assert abs(y[0] - (3 * v[0] + 3 * v[1] + v[2]) / 7) < 1e-12
    # a constant image stays constant, and upsampling bilinear equals the plain bilinear
    c = F.interpolate(tgrad.full((1, 1, 9, 7), 2.5, dtype=tgrad.float64), size=(4, 2),
                      mode="bicubic", antialias=True)
    np.testing.assert_allclose(c.numpy(), 2.5, rtol=1e-12)
    x = RNG.standard_normal((1, 2, 4, 5))
    np.testing.assert_allclose(
        F.interpolate(_t(x), size=(7, 9), mode="bilinear", antialias=True).numpy(),
        ref_interpolate(x, (7, 9), "bilinear"), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode,shape,kw", [
    ("bicubic", (1, 2, 3, 4), dict(size=(5, 3))),
    ("bicubic", (1, 1, 3, 2), dict(scale_factor=1.5, align_corners=True)),
    ("bicubic", (1, 1, 5, 4), dict(size=(2, 3), antialias=True)),
    ("bilinear", (2, 1, 6, 5), dict(scale_factor=(0.5, 0.4), antialias=True)),
    ("bilinear", (1, 1, 5, 6), dict(size=(3, 2), antialias=True, align_corners=True)),
])
def test_bicubic_antialias_gradcheck(mode, shape, kw):
    x = _t(RNG.standard_normal(shape), requires_grad=True)
    fn = lambda a: F.interpolate(a, mode=mode, **kw)  # noqa: E731
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_upsample_aliases_warn_and_agree():
    x = _t(RNG.standard_normal((1, 2, 3, 4)))
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        y = F.upsample(x, scale_factor=2, mode="bilinear")
    np.testing.assert_array_equal(
        y.numpy(), F.interpolate(x, scale_factor=2, mode="bilinear").numpy())
    with pytest.warns(UserWarning, match="upsample_nearest` is deprecated"):
        y = F.upsample_nearest(x, size=(5, 7))
    np.testing.assert_array_equal(y.numpy(), F.interpolate(x, size=(5, 7)).numpy())
    with pytest.warns(UserWarning, match="upsample_bilinear` is deprecated"):
        y = F.upsample_bilinear(x, size=(5, 7))
    np.testing.assert_allclose(
        y.numpy(), ref_interpolate(x.numpy(), (5, 7), "bilinear", align=True), rtol=1e-12)


def test_upsample_modules():
    x = RNG.standard_normal((1, 2, 3, 5))
    m = nn.Upsample(scale_factor=2, mode="bilinear")
    assert list(m.parameters()) == [] and m.scale_factor == 2.0
    assert repr(m) == "Upsample(scale_factor=2.0, mode='bilinear')"
    np.testing.assert_allclose(m(_t(x)).numpy(),
                               ref_interpolate(x, (6, 10), "bilinear", [2.0, 2.0]), rtol=1e-12)
    m = nn.Upsample(size=(4, 7), mode="nearest-exact")
    assert repr(m) == "Upsample(size=(4, 7), mode='nearest-exact')"
    np.testing.assert_array_equal(m(_t(x)).numpy(), ref_interpolate(x, (4, 7), "nearest-exact"))
    m = nn.Upsample(scale_factor=(1.5, 0.6), recompute_scale_factor=True)
    np.testing.assert_array_equal(m(_t(x)).numpy(), ref_interpolate(x, (4, 3), "nearest"))
    m = nn.UpsamplingNearest2d(scale_factor=(2, 3))
    assert m.mode == "nearest" and m.scale_factor == (2.0, 3.0)
    np.testing.assert_array_equal(m(_t(x)).numpy(),
                                  ref_interpolate(x, (6, 15), "nearest", [2.0, 3.0]))
    m = nn.Upsample(scale_factor=(1.5, 2), mode="bicubic", align_corners=True)
    assert repr(m) == "Upsample(scale_factor=(1.5, 2.0), mode='bicubic')"
    np.testing.assert_allclose(m(_t(x)).numpy(), ref_bicubic(x, (4, 10), [1.5, 2.0], True),
                               rtol=1e-12, atol=1e-12)
    m = nn.UpsamplingBilinear2d(size=(4, 9))
    assert m.align_corners is True
    np.testing.assert_allclose(m(_t(x)).numpy(),
                               ref_interpolate(x, (4, 9), "bilinear", align=True), rtol=1e-12)


# ============================================================================ conv_transpose
CT_CASES = [
    # spatial sizes, c_in, c_out, kernel, stride, padding, output_padding, groups, dilation
    ((5,), 2, 3, (3,), (2,), (1,), (1,), 1, (1,)),
    ((4,), 4, 2, (2,), (3,), (0,), (2,), 2, (2,)),
    ((1,), 1, 1, (1,), (1,), (0,), (0,), 1, (1,)),
    ((3, 4), 2, 3, (3, 2), (1, 1), (0, 0), (0, 0), 1, (1, 1)),
    ((4, 3), 2, 3, (3, 3), (2, 3), (1, 2), (1, 2), 1, (1, 2)),
    ((3, 5), 4, 6, (2, 3), (2, 1), (0, 1), (1, 0), 2, (2, 1)),
    ((2, 3), 3, 3, (3, 1), (1, 2), (2, 0), (0, 1), 3, (2, 1)),  # depthwise, op > p
]


@pytest.mark.parametrize("batch", [2, 1, None])
@pytest.mark.parametrize("case", CT_CASES)
def test_conv_transpose_matches_scatter_reference(batch, case):
    sizes, cin, cout, k, s, p, op, g, d = case
    x = RNG.standard_normal((batch or 1, cin) + sizes)
    w = RNG.standard_normal((cin, cout // g) + k)
    b = RNG.standard_normal(cout)
    fn = F.conv_transpose1d if len(sizes) == 1 else F.conv_transpose2d
    xin = _t(x) if batch is not None else _t(x[0])  # None: unbatched input
    y = fn(xin, _t(w), _t(b), s, p, op, g, d)
    ref = ref_conv_transpose(x, w, b, s, p, op, g, d)
    ref = ref if batch is not None else ref[0]
    assert y.shape == ref.shape
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12, atol=1e-12)
    if all(v == 1 for v in s + d) and not any(p + op):
        # keywords and defaults: stride 1, no padding
        y0 = fn(xin, _t(w), groups=g)
        np.testing.assert_allclose(y0.numpy(), ref - b.reshape((-1,) + (1,) * len(sizes)),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CT_CASES)
def test_conv_transpose_is_the_input_gradient_of_conv(case):
    sizes, cin, cout, k, s, p, op, g, d = case
    w = RNG.standard_normal((cin, cout // g) + k)  # conv's weight (O=cin, C/g=cout/g, k)
    gy = RNG.standard_normal((2, cin) + sizes)
    fn, conv = (F.conv_transpose1d, F.conv1d) if len(sizes) == 1 else \
        (F.conv_transpose2d, F.conv2d)
    y = fn(_t(gy), _t(w), None, s, p, op, g, d)
    # conv of an input of y's shape gives gy's shape back; its input gradient for the
    # incoming gradient gy is conv_transpose(gy)
    x = _t(RNG.standard_normal(y.shape), requires_grad=True)
    out = conv(x, _t(w), None, s, p, d, g)
    assert out.shape == gy.shape
    out.backward(_t(gy))
    np.testing.assert_allclose(x.grad.numpy(), y.numpy(), rtol=1e-11, atol=1e-12)
    # the adjoint identity <conv(x), gy> = <x, conv_transpose(gy)>
    np.testing.assert_allclose(np.sum(out.detach().numpy() * gy),
                               np.sum(x.detach().numpy() * y.numpy()), rtol=1e-10)


def test_conv_transpose_empty_batch_and_half():
    w = _t(RNG.standard_normal((4, 3, 3, 2)))
    y = F.conv_transpose2d(tgrad.zeros(0, 4, 5, 6, dtype=tgrad.float64), w, stride=2)
    assert y.shape == (0, 3, 11, 12)
    x = RNG.standard_normal((1, 4, 3, 3))
    wn = w.numpy()
    y = F.conv_transpose2d(_t(x).half(), w.half(), stride=2, padding=1)
    assert y.dtype is tgrad.float16
    ref = ref_conv_transpose(x, wn, None, (2, 2), (1, 1), (0, 0), 1, (1, 1))
    np.testing.assert_allclose(y.float().numpy(), ref, atol=5e-2, rtol=1e-2)


def test_nearest_modes_take_uint8():
    """PyTorch's CPU 'nearest' / 'nearest-exact' kernels take uint8 (tgrad raised): a copy of
    the source pixels, uint8 kept; the interpolating modes still refuse it here."""
    a = RNG.integers(0, 256, (1, 2, 3, 4)).astype(np.uint8)
    x = tgrad.tensor(a)
    y = F.interpolate(x, scale_factor=2, mode="nearest")
    assert y.dtype is tgrad.uint8
    np.testing.assert_array_equal(y.numpy(), a.repeat(2, 2).repeat(2, 3))
    # nearest-exact 3 -> 5: source floor((j + 0.5) 3 / 5) = 0, 0, 1, 2, 2
    y = F.interpolate(x[:, :, :, 0], size=5, mode="nearest-exact")
    np.testing.assert_array_equal(y.numpy(), a[:, :, [0, 0, 1, 2, 2], 0])
    y = F.interpolate(tgrad.tensor(a[:, :1, None]), size=(2, 6, 2), mode="nearest")
    np.testing.assert_array_equal(y.numpy(), a[:, :1, None][:, :, [0, 0]][:, :, :, [
        0, 0, 1, 1, 2, 2]][..., [0, 2]])
    with pytest.raises(NotImplementedError, match="interpolate: mode 'nearest'.*int64"):
        F.interpolate(x.long(), scale_factor=2)


def test_conv_transpose_int64_and_other_integers():
    """PyTorch's CPU conv_transpose takes int64 (exact integer sums, int64 result; tgrad
    raised) and raises NotImplementedError for the other integer dtypes and bool."""
    x = RNG.integers(-4, 5, (2, 4, 3, 3))
    w = RNG.integers(-3, 4, (4, 1, 2, 3))
    b = RNG.integers(-5, 5, 2)
    y = F.conv_transpose2d(tgrad.tensor(x), tgrad.tensor(w), tgrad.tensor(b), stride=2,
                           padding=1, output_padding=1, groups=2)
    assert y.dtype is tgrad.int64
    np.testing.assert_array_equal(y.numpy(), ref_conv_transpose(
        x, w, b, (2, 2), (1, 1), (1, 1), 2, (1, 1)).astype(np.int64))
    y = F.conv_transpose1d(tgrad.tensor(x[..., 0]), tgrad.tensor(w[..., 0]), groups=2)
    assert y.dtype is tgrad.int64
    np.testing.assert_array_equal(y.numpy(), ref_conv_transpose(
        x[..., 0], w[..., 0], None, (1,), (0,), (0,), 2, (1,)).astype(np.int64))
    for dt, name in ((tgrad.int32, "Int"), (tgrad.uint8, "Byte"), (tgrad.bool, "Bool")):
        with pytest.raises(NotImplementedError, match=re.escape(
                f"\"slow_conv_transpose2d_out_cpu\" not implemented for '{name}'")):
            F.conv_transpose1d(tgrad.tensor(x[..., 0]).to(dt), tgrad.tensor(w[..., 0]).to(dt))
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"slow_conv_transpose3d_out_cpu\" not implemented for 'Char'")):
        F.conv_transpose3d(tgrad.ones(1, 1, 2, 2, 2, dtype=tgrad.int8),
                           tgrad.ones(1, 1, 2, 2, 2, dtype=tgrad.int8))


@pytest.mark.parametrize("spatial", [1, 2])
def test_conv_transpose_gradcheck(spatial):
    sizes, k = ((3,), (2,)) if spatial == 1 else ((2, 3), (2, 2))
    x = _t(RNG.standard_normal((1, 4) + sizes), requires_grad=True)
    w = _t(RNG.standard_normal((4, 1) + k), requires_grad=True)
    b = _t(RNG.standard_normal(2), requires_grad=True)
    fn = F.conv_transpose1d if spatial == 1 else F.conv_transpose2d
    f = lambda a, c, e: fn(a, c, e, stride=2, padding=1, output_padding=1,  # noqa: E731
                           groups=2, dilation=1)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))


def test_conv_transpose_errors():
    x, w = _t(np.zeros((2, 4, 5, 6))), _t(np.zeros((4, 3, 3, 2)))
    _raises(lambda: F.conv_transpose2d(x, w, output_padding=1), RuntimeError,
            "output padding must be smaller than either stride or dilation, but got "
            "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
            "dilation_height: 1 dilation_width: 1")
    _raises(lambda: F.conv_transpose2d(x, w, groups=3), RuntimeError,
            "Given groups=3, expected weight to be divisible by 3 at dimension 0")
    _raises(lambda: F.conv_transpose2d(x, _t(np.zeros((3, 3, 3, 2)))), RuntimeError,
            "Given transposed=1, weight of size [3, 3, 3, 2], expected input[2, 4, 5, 6] to "
            "have 3 channels, but got 4 channels instead")
    _raises(lambda: F.conv_transpose2d(x, w, _t(np.zeros(4))), RuntimeError,
            "expected bias to be 1-dimensional with 3 elements, but got bias of size [4]")
    _raises(lambda: F.conv_transpose2d(x, w, padding=4), RuntimeError,
            "Given input size per channel: (5 x 6). Calculated output size per channel: "
            "(-1 x -1). Output size is too small")
    _raises(lambda: F.conv_transpose1d(_t(np.zeros((1, 4, 2))), _t(np.zeros((4, 1, 1))),
                                       padding=1), RuntimeError,
            "Calculated output size per channel: (1 x 0)")
    _raises(lambda: F.conv_transpose2d(x, w, padding=-1), RuntimeError,
            "negative padding is not supported")
    _raises(lambda: F.conv_transpose2d(x, w, stride=0), RuntimeError,
            "non-positive stride is not supported")
    _raises(lambda: F.conv_transpose2d(x[0, 0], w), RuntimeError,
            "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input "
            "of size: [5, 6]")
    _raises(lambda: F.conv_transpose2d(x, w.float()), RuntimeError,
            "expected input and weight to have the same dtype")
    _raises(lambda: F.conv_transpose2d(x, w, stride=(2, 1, 1)), RuntimeError,
            "stride must either be a single int, or a tuple of 2 ints")


# ============================================================================ fold
@pytest.mark.parametrize("size,kernel,dilation,padding,stride", [
    ((5, 6), (2, 2), (1, 1), (0, 0), (1, 1)),
    ((5, 7), (3, 2), (2, 1), (1, 2), (2, 3)),
    ((4, 4), (2, 2), (1, 1), (0, 0), (2, 2)),   # non-overlapping: fold inverts unfold
    ((3, 5), (1, 3), (1, 2), (2, 0), (1, 1)),
])
def test_fold_matches_reference_and_is_unfolds_adjoint(size, kernel, dilation, padding,
                                                       stride):
    x = RNG.standard_normal((2, 3) + size)
    cols = F.unfold(_t(x), kernel, dilation, padding, stride)
    c = RNG.standard_normal(cols.shape)
    y = F.fold(_t(c), size, kernel, dilation, padding, stride)
    np.testing.assert_allclose(y.numpy(), ref_fold(c, size, kernel, dilation, padding, stride),
                               rtol=1e-12, atol=1e-12)
    # <unfold(x), c> = <x, fold(c)>
    np.testing.assert_allclose(np.sum(cols.numpy() * c), np.sum(x * y.numpy()), rtol=1e-10)
    # unbatched input, and batch 1
    np.testing.assert_allclose(F.fold(_t(c[0]), size, kernel, dilation, padding, stride)
                               .numpy(), y.numpy()[0], rtol=1e-12)
    if kernel == stride and not any(padding) and dilation == (1, 1):
        np.testing.assert_allclose(F.fold(cols, size, kernel, dilation, padding, stride)
                                   .numpy(), x, rtol=1e-12)


def test_fold_gradcheck_and_empty_batch():
    c = _t(RNG.standard_normal((1, 2 * 4, 6)), requires_grad=True)
    f = lambda a: F.fold(a, (3, 4), 2, stride=1, padding=0)  # noqa: E731
    assert gradcheck(f, (c,))
    assert gradgradcheck(f, (c,))
    assert F.fold(tgrad.zeros(0, 12, 20), (5, 6), 2).shape == (0, 3, 5, 6)


def test_fold_errors():
    c = _t(np.zeros((2, 12, 20)))
    _raises(lambda: F.fold(c, (5, 6), (2, 3)), RuntimeError,
            "Given output_size=(5, 6), kernel_size=(2, 3), dilation=(1, 1), padding=(0, 0), "
            "stride=(1, 1), expected size of input's dimension 2 to match the calculated "
            "number of sliding blocks 4 * 4 = 16, but got input.size(2)=20.")
    _raises(lambda: F.fold(c, (5, 6), (5, 5)), RuntimeError,
            "Expected size of input's dimension 1 to be divisible by the product of "
            "kernel_size, but got input.size(1)=12 and kernel_size=(5, 5).")
    _raises(lambda: F.fold(c, (5, 6), 2, stride=0), RuntimeError,
            "stride should be greater than zero")
    _raises(lambda: F.fold(c, (5, 6), 2, padding=-1), RuntimeError,
            "padding should be non-negative")
    _raises(lambda: F.fold(c, (5, 6, 7), 2), RuntimeError,
            "It is expected output_size equals to 2, but got size 3")
    _raises(lambda: F.fold(_t(np.zeros((2, 12, 0))), (5, 6), 2), RuntimeError,
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size")


# ============================================================================ modules
def test_conv_transpose_modules():
    m = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2,
                           bias=False, dilation=2)
    assert m.weight.shape == (4, 3, 3, 2) and m.bias is None
    assert repr(m) == ("ConvTranspose2d(4, 6, kernel_size=(3, 2), stride=(2, 2), "
                       "padding=(1, 1), dilation=(2, 2), output_padding=(1, 1), groups=2, "
                       "bias=False)")
    x = RNG.standard_normal((2, 4, 3, 4))
    y = m(_t(x).float())
    ref = ref_conv_transpose(x, m.weight.detach().numpy().astype(np.float64), None, (2, 2),
                             (1, 1), (1, 1), 2, (2, 2))
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-4)
    # PyTorch's init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = out/groups * prod(kernel)
    m = nn.ConvTranspose2d(8, 16, 3, groups=2, dtype=tgrad.float64)
    bound = 1 / math.sqrt(8 * 9)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    assert w.shape == (8, 8, 3, 3) and b.shape == (16,)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound
    m1 = nn.ConvTranspose1d(4, 6, 3, dtype=tgrad.float64)
    assert repr(m1) == "ConvTranspose1d(4, 6, kernel_size=(3,), stride=(1,))"
    x1 = RNG.standard_normal((4, 5))  # unbatched
    np.testing.assert_allclose(
        m1(_t(x1)).detach().numpy(),
        ref_conv_transpose(x1[None], m1.weight.detach().numpy(), m1.bias.detach().numpy(),
                           (1,), (0,), (0,), 1, (1,))[0], rtol=1e-12, atol=1e-12)
    _raises(lambda: nn.ConvTranspose2d(4, 6, 3, padding_mode="reflect"), ValueError,
            'Only "zeros" padding mode is supported for ConvTranspose2d')
    _raises(lambda: nn.ConvTranspose2d(4, 6, 3, groups=4), ValueError,
            "out_channels must be divisible by groups")


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2, dtype=tgrad.float64)
    x = _t(RNG.standard_normal((2, 4, 5, 6)))
    assert m(x).shape == (2, 6, 9, 11)
    y = m(x, output_size=(10, 12))
    assert y.shape == (2, 6, 10, 12)
    np.testing.assert_allclose(
        y.detach().numpy(),
        F.conv_transpose2d(x, m.weight, m.bias, 2, 1, (1, 1), 2).detach().numpy(), rtol=0)
    assert m(x, output_size=[2, 6, 9, 12]).shape == (2, 6, 9, 12)
    _raises(lambda: m(x, output_size=(11, 12)), ValueError,
            "requested an output size of [11, 12], but valid sizes range from [9, 11] to "
            "[10, 12]")
    _raises(lambda: m(x, output_size=(8,)), ValueError,
            "ConvTranspose2D: for 4D input, output_size must have 2 or 4 elements (got 1)")
    m1 = nn.ConvTranspose1d(2, 2, 2, stride=3, dtype=tgrad.float64)
    assert m1(_t(np.zeros((1, 2, 4))), output_size=[13]).shape == (1, 2, 13)


def test_upsampling_decoder_trains():
    # a tiny decoder: gradients reach every parameter through interpolate and conv_transpose
    tgrad.manual_seed(0)
    model = nn.Sequential(nn.ConvTranspose2d(3, 4, 2, stride=2), nn.ReLU(),
                          nn.Upsample(scale_factor=1.5, mode="bilinear"),
                          nn.Conv2d(4, 1, 3, padding=1))
    x = tgrad.randn(2, 3, 3, 3)
    loss = model(x).square().mean()
    loss.backward()
    assert model(x).shape == (2, 1, 9, 9)
    for p in model.parameters():
        assert p.grad is not None and np.isfinite(p.grad.numpy()).all()


def test_cached_plans_are_read_only():
    # the index / weight plans are lru-cached and shared by every call: none may be written
    from tgrad.nn import _interpolate as interp
    plans = [(interp._nearest_plan(5, 3, None, False, False, False),),
             (interp._nearest_plan(5, 10, None, True, True, True),),
             interp._linear_plan(4, 4, None, False, False),
             interp._linear_plan(4, 7, None, False, True),
             interp._linear_plan(4, 7, None, True, False),
             interp._cubic_plan(4, 7, None, False, False),
             interp._antialias_plan(8, 3, None, False, True, False)]
    for plan in plans:
        assert all(not a.flags.writeable for a in plan)


# PyTorch 2.13's interpolate nodes: one Upsample<Mode><k>DBackward0 node on the input (k the
# number of spatial dims; Aa for antialias), whatever align_corners; 'area' is the adaptive
# average pooling node.
_UPSAMPLE_NODES = [
    ((1, 2, 3), {"size": 5, "mode": "nearest"}, "UpsampleNearest1DBackward0"),
    ((1, 2, 2, 3), {"scale_factor": 2, "mode": "nearest"}, "UpsampleNearest2DBackward0"),
    ((1, 1, 2, 2, 3), {"size": (3, 3, 4), "mode": "nearest"}, "UpsampleNearest3DBackward0"),
    ((1, 2, 3), {"size": 5, "mode": "nearest-exact"}, "UpsampleNearestExact1DBackward0"),
    ((1, 2, 2, 3), {"size": (3, 5), "mode": "nearest-exact"},
     "UpsampleNearestExact2DBackward0"),
    ((1, 1, 2, 2, 3), {"size": (3, 3, 4), "mode": "nearest-exact"},
     "UpsampleNearestExact3DBackward0"),
    ((1, 2, 3), {"size": 5, "mode": "linear"}, "UpsampleLinear1DBackward0"),
    ((1, 2, 3), {"size": 5, "mode": "linear", "align_corners": True},
     "UpsampleLinear1DBackward0"),
    ((1, 2, 2, 3), {"size": (3, 5), "mode": "bilinear"}, "UpsampleBilinear2DBackward0"),
    ((1, 2, 2, 3), {"size": (3, 5), "mode": "bilinear", "align_corners": True},
     "UpsampleBilinear2DBackward0"),
    ((1, 1, 4, 5), {"size": (2, 3), "mode": "bilinear", "antialias": True},
     "UpsampleBilinear2DAaBackward0"),
    ((1, 2, 2, 3), {"size": (3, 5), "mode": "bicubic"}, "UpsampleBicubic2DBackward0"),
    ((1, 2, 2, 3), {"size": (3, 5), "mode": "bicubic", "align_corners": True},
     "UpsampleBicubic2DBackward0"),
    ((1, 1, 4, 5), {"size": (2, 3), "mode": "bicubic", "antialias": True},
     "UpsampleBicubic2DAaBackward0"),
    ((1, 1, 2, 2, 3), {"size": (3, 2, 4), "mode": "trilinear"},
     "UpsampleTrilinear3DBackward0"),
    ((1, 1, 2, 2, 3), {"size": (3, 2, 4), "mode": "trilinear", "align_corners": True},
     "UpsampleTrilinear3DBackward0"),
    ((1, 2, 4, 5), {"size": (2, 3), "mode": "area"}, "AdaptiveAvgPool2DBackward0"),
]


@pytest.mark.parametrize("shape,kw,node", _UPSAMPLE_NODES,
                         ids=[f"{c[1]['mode']}-{len(c[0])}d-{i}"
                              for i, c in enumerate(_UPSAMPLE_NODES)])
def test_interpolate_nodes_are_pytorchs_and_differentiate_twice(shape, kw, node):
    x = _t(np.random.default_rng(len(shape)).standard_normal(shape), requires_grad=True)
    y = F.interpolate(x, **kw)
    assert y.grad_fn.name() == node
    assert [f.name() for f, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    assert gradcheck(lambda t: F.interpolate(t, **kw), (x,))
    assert gradgradcheck(lambda t: F.interpolate(t, **kw), (x,))


def test_interpolate_nearest_gradient_is_the_copy_count_by_hand():
    # nearest (size 3 -> 7, 2 -> 5): src = floor(dst * in / out); dx = sum of g over the
    # outputs that copied each input (np.add.at with the hand-computed sources)
    xn = np.random.default_rng(2).standard_normal((1, 1, 3, 2))
    c = np.random.default_rng(3).standard_normal((1, 1, 7, 5))
    rows, cols = np.arange(7) * 3 // 7, np.arange(5) * 2 // 5
    ref = xn[:, :, rows][:, :, :, cols]
    gref = np.zeros_like(xn)
    for i, r in enumerate(rows):
        for j, q in enumerate(cols):
            gref[0, 0, r, q] += c[0, 0, i, j]
    x = _t(xn, requires_grad=True)
    y = F.interpolate(x, size=(7, 5), mode="nearest")
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    y.backward(_t(c))
    np.testing.assert_allclose(x.grad.numpy(), gref, rtol=1e-12, atol=1e-15)
