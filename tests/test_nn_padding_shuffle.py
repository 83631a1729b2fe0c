"""F.pad's reflect / replicate / circular modes and the padding modules, pixel_shuffle,
pixel_unshuffle, channel_shuffle, gumbel_softmax, the in-place activations and the
CosineSimilarity / PairwiseDistance / Softmax2d modules: values against independent NumPy
references (np.pad, explicit loops), gradcheck / gradgradcheck in float64, PyTorch's error
texts (checked against PyTorch 2.14) and reprs."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _t(a, **kw) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


def _nc(a) -> tgrad.Tensor:
    a = np.asarray(a, dtype=np.float64)
    t = tgrad.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)
    assert not t.is_contiguous()
    return t


def ref_pad(a: np.ndarray, pad, mode: str) -> np.ndarray:
    """PyTorch's pad by np.pad: positive pads by NumPy's mode; negative pads crop (for
    circular before wrapping, for reflect / replicate after)."""
    k = len(pad) // 2
    pairs = [(0, 0)] * (a.ndim - k) + [(pad[2 * i], pad[2 * i + 1]) for i in range(k)][::-1]
    crop = tuple(slice(max(-lo, 0), a.shape[d] - max(-hi, 0)) for d, (lo, hi)
                 in enumerate(pairs))
    pos = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if mode == "circular":
        return np.pad(a[crop], pos, mode="wrap")
    out = np.pad(a, pos, mode=NP_MODE[mode])
    crop = tuple(slice(max(-lo, 0), out.shape[d] - max(-hi, 0)) for d, (lo, hi)
                 in enumerate(pairs))
    return out[crop]


# ---------------------------------------------------------------- F.pad modes
SHAPES_PADS = [
    ((2, 17), (3, 16)), ((1, 3, 17), (2, 1)), ((3, 5, 4), (1, 2, 3, 0)),
    ((2, 1, 4, 5), (0, 4, 3, 1)), ((2, 3, 4, 5), (1, 1, 2, 2, 2, 0)),
    ((1, 2, 2, 3, 4), (2, 1, 1, 0, 1, 1)), ((2, 5), (-1, 2)), ((1, 2, 5), (-1, -1)),
    ((1, 3, 4), (2, -1, -1, 1)), ((2, 3, 2), (1, 0, -1, -1)), ((5, 3, 3), (-1, 1, -1, -1)),
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape, pad", SHAPES_PADS)
def test_pad_modes_match_numpy(mode, shape, pad):
    a = np.random.default_rng(0).standard_normal(shape)
    for make in (_t, _nc):
        got = F.pad(make(a), pad, mode=mode)
        want = ref_pad(a, pad, mode)
        assert got.shape == want.shape and got.dtype is tgrad.float64
        assert got.is_contiguous()  # PyTorch's (also a crop after another dim's wrap)
        np.testing.assert_array_equal(got.numpy(), want)


def test_pad_modes_pytorch_values_and_dtypes():
    x = tgrad.arange(3.0).reshape(1, 1, 3)
    # values printed by PyTorch 2.14 for crops combined with pads
    assert F.pad(x, (-1, 2), mode="reflect").tolist() == [[[1.0, 2.0, 1.0, 0.0]]]
    assert F.pad(x, (-1, 2), mode="circular").tolist() == [[[1.0, 2.0, 1.0, 2.0]]]
    assert F.pad(x, (2, -1), mode="circular").tolist() == [[[0.0, 1.0, 0.0, 1.0]]]
    assert F.pad(x, (-2, 3), mode="replicate").tolist() == [[[2.0, 2.0, 2.0, 2.0]]]
    assert F.pad(x, (-3, 1), mode="reflect").tolist() == [[[1.0]]]
    assert F.pad(x, (-4, 1), mode="circular").shape == (1, 1, 0)
    assert F.pad(_a(1, 2, 3), (-2, -1, 0, 0), mode="reflect").shape == (1, 2, 0)
    xi = tgrad.tensor(np.arange(6).reshape(1, 2, 3))
    y = F.pad(xi, (1, 1), mode="reflect")
    assert y.dtype is tgrad.int64 and y.tolist() == [[[1, 0, 1, 2, 1], [4, 3, 4, 5, 4]]]
    assert F.pad(x, (1, 1), "replicate", 0.0).tolist() == [[[0.0, 0.0, 1.0, 2.0, 2.0]]]
    for pad in ((-1, 0), (0, 0)):  # a crop (or nothing) is a new tensor, not a view
        y = F.pad(x, pad, mode="circular")
        y.zero_()
        assert x.tolist() == [[[0.0, 1.0, 2.0]]]
    # empty batches pad; circular also pads empty channels
    for mode in ("reflect", "replicate", "circular"):
        assert F.pad(tgrad.zeros(0, 2, 3), (1, 1), mode=mode).shape == (0, 2, 5)
        assert F.pad(tgrad.zeros(0, 2, 3, 3), (1, 1, 1, 1), mode=mode).shape == (0, 2, 5, 5)
    assert F.pad(tgrad.zeros(1, 0, 3), (1, 1), mode="circular").shape == (1, 0, 5)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_gradients(mode):
    rng = np.random.default_rng(1)
    x1 = _t(rng.standard_normal((2, 4)), requires_grad=True)
    x2 = _t(rng.standard_normal((1, 3, 4)), requires_grad=True)
    x3 = _t(rng.standard_normal((1, 2, 3, 3)), requires_grad=True)
    for x, pad in ((x1, (3, 2)), (x2, (2, -1, 1, 2)), (x3, (1, 2, 2, 1, 1, 1))):
        fn = lambda z, pad=pad: F.pad(z, pad, mode=mode)  # noqa: E731
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))
    # every output position sends its gradient to the input element it copied
    a = rng.standard_normal((1, 2, 5))
    w = rng.standard_normal((1, 2, 9))
    x = _t(a, requires_grad=True)
    (F.pad(x, (2, 2), mode=mode) * _t(w)).sum().backward()
    idx = ref_pad(np.arange(5.0).reshape(1, 1, 5), (2, 2), mode)[0, 0].astype(int)
    want = np.zeros((1, 2, 5))
    for o, i in enumerate(idx):
        want[..., i] += w[..., o]
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-15, atol=1e-15)


_NOT_SUPPORTED = ("Supported combinations for non-constant padding:\n"
                  "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                  "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                  "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")


def _a(*shape):
    return tgrad.arange(float(math.prod(shape))).reshape(*shape)


@pytest.mark.parametrize("call, err, msg", [
    (lambda: F.pad(_a(3), (1, 1), mode="reflect"), NotImplementedError,
     "Padding size 2 is not supported for 1D input tensor.\n" + _NOT_SUPPORTED),
    (lambda: F.pad(_a(1, 1, 2, 3), (1, 1), mode="replicate"), NotImplementedError,
     "Padding size 2 is not supported for 4D input tensor.\n" + _NOT_SUPPORTED),
    (lambda: F.pad(_a(2, 2, 3), (1, 1, 1, 1, 1, 1), mode="circular"), NotImplementedError,
     "Padding size 6 is not supported for 3D input tensor.\n" + _NOT_SUPPORTED),
    (lambda: F.pad(_a(1, 2, 3), (1, 1), mode="bogus"), NotImplementedError,
     "Unrecognised padding mode bogus"),
    (lambda: F.pad(_a(1, 2, 3), (1, 1), mode="reflect", value=1.0), RuntimeError,
     "Padding mode \"reflect\" doesn't take in value argument"),
    (lambda: F.pad(_a(1, 2, 3), (1,), mode="circular"), RuntimeError,
     "Padding length must be divisible by 2"),
    (lambda: F.pad(_a(2), (1, 1, 1, 1)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 4 and input of dimension 1"),
    (lambda: F.pad(_a(1, 1, 2), (1.5, 1)), TypeError,
     "pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
     "float at pos 0"),
    (lambda: F.pad(_a(1, 2, 3), (3, 0), mode="reflect"), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but "
     "got: padding (3, 0) at dimension 2 of input [1, 2, 3]"),
    (lambda: F.pad(_a(1, 2, 3), (0, 0, 0, 2), mode="reflect"), RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension, but "
     "got: padding (0, 2) at dimension 1 of input [1, 2, 3]"),
    (lambda: F.pad(_a(1, 2, 2, 3), (0, 0, 0, 0, 0, 2), mode="reflect"), RuntimeError,
     "Argument #8: Padding size should be less than the corresponding input dimension, but "
     "got: padding (0, 2) at dimension 1 of input [1, 2, 2, 3]"),
    (lambda: F.pad(_a(1, 2, 3), (-2, -1), mode="reflect"), RuntimeError,
     "input (W: 3) is too small. Calculated output W: 0"),
    (lambda: F.pad(_a(1, 2, 3), (-2, -1), mode="replicate"), RuntimeError,
     "input (W: 3) is too small. Calculated output W: 0"),
    (lambda: F.pad(_a(1, 2, 3), (-2, -1, 0, 0), mode="replicate"), RuntimeError,
     "Calculated output H: 2 W: 0 must be >= 1 in every dimension (input H: 2, W: 3)"),
    (lambda: F.pad(_a(1, 2, 2, 3), (0, 0, 0, 0, -1, -1), mode="replicate"), RuntimeError,
     "Calculated output D: 0 H: 2 W: 3 must be >= 1 in every dimension (input D: 2, H: 2, "
     "W: 3)"),
    (lambda: F.pad(_a(1, 2, 3), (0, 4), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),
    (lambda: F.pad(_a(1, 1, 3), (-2, 2), mode="circular"), RuntimeError,
     "Padding value causes wrapping around more than once."),  # PyTorch: overlap error
    (lambda: F.pad(_a(0, 3), (1, 1), mode="reflect"), RuntimeError,
     "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero "
     "dimensions for input, but got: [0, 3]"),
    (lambda: F.pad(_a(2, 0, 3, 3), (1, 1, 1, 1), mode="replicate"), RuntimeError,
     "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
     "dimensions for input, but got: [2, 0, 3, 3]"),
    (lambda: nn.CircularPad1d(1)(_a(3)), ValueError, "expected 2D or 3D input (got 1D input)"),
    (lambda: nn.CircularPad2d(1)(_a(3, 3)), ValueError,
     "expected 3D or 4D input (got 2D input)"),
    (lambda: nn.CircularPad3d(1)(_a(3, 3, 3)), ValueError,
     "expected 4D or 5D input (got 3D input)"),
    (lambda: nn.ZeroPad2d(1)(_a(3)), RuntimeError,
     "Padding length should be less than or equal to two times the input dimension but got "
     "padding length 4 and input of dimension 1"),
])
def test_pad_errors(call, err, msg):
    with pytest.raises(err, match=re.escape(msg)):
        call()


def test_padding_modules():
    a = np.random.default_rng(2).standard_normal((2, 3, 4, 5, 6))
    x = _t(a)
    cases = [
        (nn.ZeroPad1d(2), "ZeroPad1d((2, 2))", np.pad(a, [(0, 0)] * 4 + [(2, 2)])),
        (nn.ZeroPad2d((1, 2, 3, 4)), "ZeroPad2d((1, 2, 3, 4))",
         np.pad(a, [(0, 0)] * 3 + [(3, 4), (1, 2)])),
        (nn.ZeroPad3d(1), "ZeroPad3d((1, 1, 1, 1, 1, 1))",
         np.pad(a, [(0, 0)] * 2 + [(1, 1)] * 3)),
        (nn.ConstantPad1d((2, 0), 3.5), "ConstantPad1d(padding=(2, 0), value=3.5)",
         np.pad(a, [(0, 0)] * 4 + [(2, 0)], constant_values=3.5)),
        (nn.ConstantPad2d(1, -1), "ConstantPad2d(padding=(1, 1, 1, 1), value=-1)",
         np.pad(a, [(0, 0)] * 3 + [(1, 1)] * 2, constant_values=-1)),
        (nn.ConstantPad3d([1, 0, 0, 1, 2, 0], 2.0),
         "ConstantPad3d(padding=(1, 0, 0, 1, 2, 0), value=2.0)",
         np.pad(a, [(0, 0)] * 2 + [(2, 0), (0, 1), (1, 0)], constant_values=2.0)),
    ]
    for m, text, want in cases:
        assert repr(m) == text
        np.testing.assert_array_equal(m(x).numpy(), want)
    b = a[0]  # (3, 4, 5, 6): a batch of 3-D inputs, or one 4-D one
    for kind, mode in (("Reflection", "reflect"), ("Replication", "replicate"),
                       ("Circular", "circular")):
        for k, pad, inp in ((1, (2, 1), b[0]), (2, (1, 2, 3, 0), b[0]),
                            (3, (1, 1, 2, 0, 0, 2), b)):
            m = getattr(nn, f"{kind}Pad{k}d")(pad)
            assert repr(m) == f"{kind}Pad{k}d({pad})"
            np.testing.assert_array_equal(m(_t(inp)).numpy(), ref_pad(inp, pad, mode))
        assert getattr(nn, f"{kind}Pad2d")(1).padding == (1, 1, 1, 1)


# ---------------------------------------------------------------- shuffles
def ref_pixel_shuffle(a, r):
    *lead, c, h, w = a.shape
    out = np.zeros((*lead, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[..., ch, i::r, j::r] = a[..., ch * r * r + i * r + j, :, :]
    return out


def ref_channel_shuffle(a, g):
    c = a.shape[1]
    out = np.empty_like(a)
    for k in range(c):  # out channel j * g + gi is in channel gi * (c / g) + j
        j, gi = divmod(k, g)
        out[:, k] = a[:, gi * (c // g) + j]
    return out


@pytest.mark.parametrize("shape, r", [((1, 4, 3, 5), 2), ((2, 18, 1, 17), 3),
                                      ((3, 4, 2, 2), 1), ((4, 2, 3), 2), ((2, 3, 8, 2, 3), 2),
                                      ((0, 4, 2, 3), 2)])
def test_pixel_shuffle_and_unshuffle(shape, r):
    a = np.random.default_rng(3).standard_normal(shape)
    for make in (_t, _nc) if shape[0] > 1 else (_t,):
        y = F.pixel_shuffle(make(a), r)
        want = ref_pixel_shuffle(a, r)
        assert y.shape == want.shape
        np.testing.assert_array_equal(y.numpy(), want)
        np.testing.assert_array_equal(F.pixel_unshuffle(_t(want), r).numpy(), a)
    m, u = nn.PixelShuffle(r), nn.PixelUnshuffle(r)
    assert repr(m) == f"PixelShuffle(upscale_factor={r})"
    assert repr(u) == f"PixelUnshuffle(downscale_factor={r})"
    np.testing.assert_array_equal(u(m(_t(a))).numpy(), a)


def test_shuffle_gradients():
    rng = np.random.default_rng(4)
    x = _t(rng.standard_normal((1, 8, 2, 4)), requires_grad=True)
    for fn in (lambda z: F.pixel_shuffle(z, 2), lambda z: F.pixel_unshuffle(z, 2),
               lambda z: F.channel_shuffle(z, 4), lambda z: F.native_channel_shuffle(z, 2)):
        assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


_SAME = lambda a: a  # noqa: E731


@pytest.mark.parametrize("call, shape, ref", [
    (lambda z: F.pixel_shuffle(z, 1), (2, 3, 2, 2), _SAME),
    (lambda z: F.pixel_unshuffle(z, 1), (2, 3, 2, 2), _SAME),
    (lambda z: F.channel_shuffle(z, 1), (2, 3, 2), _SAME),
    (lambda z: F.native_channel_shuffle(z, 1), (2, 3, 2), _SAME),
    (lambda z: F.channel_shuffle(z, 2), (1, 2, 1, 2), _SAME),  # (C / groups = 1: identity)
    (lambda z: F.pixel_shuffle(z, 2), (0, 4, 1, 1), lambda a: a.reshape(0, 1, 2, 2)),
    (lambda z: F.pixel_shuffle(z.transpose(2, 3), 1), (1, 2, 3, 2),
     lambda a: np.swapaxes(a, 2, 3)),
])
def test_shuffles_return_a_new_tensor_never_the_input_s_memory(call, shape, ref):
    # PyTorch's shuffles always return a new tensor; factor / groups 1 (or C / groups 1) is
    # the identity, whose reshapes and permute were all views of the input: a write to the
    # result reached the input. Here the result is a copy: x's values, x left untouched.
    a = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
    x = _t(a, requires_grad=True)
    y = call(x)
    assert not y._is_view() and y._base is None
    np.testing.assert_array_equal(y.detach().numpy(), ref(a))
    y.detach().fill_(0.0)
    np.testing.assert_array_equal(x.detach().numpy(), a)
    if x.numel():  # an in-place op on the result, then backward: the right gradient
        assert gradcheck(lambda z: call(z).mul_(2.0), (x,))


@pytest.mark.parametrize("shape, g", [((2, 6, 3), 3), ((1, 4, 1), 2), ((3, 17, 2, 2), 17),
                                      ((2, 12, 1, 1, 2), 4), ((0, 4, 1), 2), ((1, 0, 1), 2)])
def test_channel_shuffle(shape, g):
    a = np.random.default_rng(5).standard_normal(shape)
    got = F.channel_shuffle(_t(a), g)
    want = ref_channel_shuffle(a, g)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(nn.ChannelShuffle(g)(_t(a)).numpy(), want)
    if shape[0] > 1:
        np.testing.assert_array_equal(F.native_channel_shuffle(_nc(a), g).numpy(), want)
    assert repr(nn.ChannelShuffle(g)) == f"ChannelShuffle(groups={g})"


@pytest.mark.parametrize("call, err, msg", [
    (lambda: F.pixel_shuffle(_a(4, 2), 2), RuntimeError,
     "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 "
     "dimension(s)"),
    (lambda: F.pixel_shuffle(_a(1, 5, 2, 2), 2), RuntimeError,
     "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
     "upscale_factor, but input.size(-3)=5 is not divisible by 4"),
    (lambda: F.pixel_shuffle(_a(1, 4, 2, 2), 0), RuntimeError,
     "pixel_shuffle expects a positive upscale_factor, but got 0"),
    (lambda: F.pixel_shuffle(_a(1, 4, 2, 3), 2.0), TypeError,
     "pixel_shuffle(): argument 'upscale_factor' (position 2) must be int, not float"),
    (lambda: F.pixel_unshuffle(_a(4, 2), 2), RuntimeError,
     "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 "
     "dimension(s)"),
    (lambda: F.pixel_unshuffle(_a(1, 1, 3, 4), 2), RuntimeError,
     "pixel_unshuffle expects height to be divisible by downscale_factor, but "
     "input.size(-2)=3 is not divisible by 2"),
    (lambda: F.pixel_unshuffle(_a(1, 1, 4, 3), 2), RuntimeError,
     "pixel_unshuffle expects width to be divisible by downscale_factor, but "
     "input.size(-1)=3 is not divisible by 2"),
    (lambda: F.pixel_unshuffle(_a(1, 1, 4, 4), -1), RuntimeError,
     "pixel_unshuffle expects a positive downscale_factor, but got -1"),
    (lambda: F.channel_shuffle(_a(2, 4), 2), RuntimeError,
     "channel_shuffle expects input with > 2 dims, but got input with sizes [2, 4]"),
    (lambda: F.channel_shuffle(_a(1, 5, 2), 2), RuntimeError,
     "Number of channels must be divisible by groups. Got 5 channels and 2 groups."),
    (lambda: F.native_channel_shuffle(_a(1, 4, 2), 0), RuntimeError,
     "Number of groups to divide channels in must be positive. Value of groups:0"),
    (lambda: nn.Softmax2d()(_a(2, 3)), ValueError,
     "Softmax2d: expected input to be 3D or 4D, got 2D instead"),
])
def test_shuffle_errors(call, err, msg):
    with pytest.raises(err, match=re.escape(msg)):
        call()


# ---------------------------------------------------------------- gumbel_softmax
def _np_softmax(z, axis):
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def test_gumbel_softmax_uses_tgrads_generator():
    logits = _t(np.random.default_rng(6).standard_normal((3, 5)))
    tgrad.manual_seed(7)
    e = tgrad.empty_like(logits).exponential_().numpy()  # the draw gumbel_softmax makes
    tgrad.manual_seed(7)
    y = F.gumbel_softmax(logits, tau=0.5, dim=0)
    want = _np_softmax((logits.numpy() - np.log(e)) / 0.5, 0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-13)
    tgrad.manual_seed(7)
    np.testing.assert_array_equal(F.gumbel_softmax(logits, tau=0.5, dim=0).numpy(), y.numpy())


def test_gumbel_softmax_hard_is_straight_through_and_samples_the_softmax():
    rng = np.random.default_rng(8)
    lg = rng.standard_normal((4, 3))
    w = _t(rng.standard_normal((4, 3)))
    x = _t(lg, requires_grad=True)
    tgrad.manual_seed(3)
    y = F.gumbel_softmax(x, tau=2.0, hard=True)
    yn = y.detach().numpy()
    assert set(np.unique(yn)) <= {0.0, 1.0} and (yn.sum(1) == 1).all()
    (y * w).sum().backward()
    g_hard = x.grad.numpy().copy()
    x.grad = None
    tgrad.manual_seed(3)
    soft = F.gumbel_softmax(x, tau=2.0)
    assert (soft.detach().numpy().argmax(1) == yn.argmax(1)).all()
    (soft * w).sum().backward()
    np.testing.assert_allclose(g_hard, x.grad.numpy(), rtol=1e-13, atol=1e-15)
    # the hard samples follow softmax(logits): frequencies over 20000 draws
    logits = _t(np.log([0.2, 0.5, 0.3]))
    draws = F.gumbel_softmax(logits.expand(20000, 3), hard=True).numpy()
    np.testing.assert_allclose(draws.mean(0), [0.2, 0.5, 0.3], atol=0.015)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        F.gumbel_softmax(logits, eps=1e-5)


# ---------------------------------------------------------------- in-place activations
def test_inplace_activations():
    a = np.array([-2.5, -0.5, 0.25, 1.5, 3.0])
    sa, ss = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    cases = [  # (fn, args, value, derivative)
        (F.relu_, (), np.maximum(a, 0.0), (a > 0) * 1.0),
        (F.elu_, (0.5,), np.where(a > 0, a, 0.5 * np.expm1(a)),
         np.where(a > 0, 1.0, 0.5 * np.exp(a))),
        (F.selu_, (), ss * np.where(a > 0, a, sa * np.expm1(a)),
         ss * np.where(a > 0, 1.0, sa * np.exp(a))),
        (F.celu_, (2.0,), np.where(a > 0, a, 2.0 * np.expm1(a / 2.0)),
         np.where(a > 0, 1.0, np.exp(a / 2.0))),
        (F.leaky_relu_, (0.1,), np.where(a > 0, a, 0.1 * a), np.where(a > 0, 1.0, 0.1)),
        (F.hardtanh_, (-1.0, 2.0), np.clip(a, -1.0, 2.0), ((a > -1) & (a < 2)) * 1.0),
        (F.threshold_, (0.3, -7.0), np.where(a <= 0.3, -7.0, a), (a > 0.3) * 1.0),
    ]
    for fn, args, want, deriv in cases:
        x = _t(a)
        out = fn(x, *args)
        assert out is x, fn.__name__
        np.testing.assert_allclose(x.numpy(), want, rtol=1e-15, err_msg=fn.__name__)
        leaf = _t(a, requires_grad=True)
        y = leaf * 1.0
        assert fn(y, *args) is y
        y.sum().backward()  # through the in-place op on a non-leaf
        np.testing.assert_allclose(leaf.grad.numpy(), deriv, rtol=1e-15, err_msg=fn.__name__)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        F.relu_(_t(a, requires_grad=True))


# ---------------------------------------------------------------- distance modules
def test_cosine_similarity_pairwise_distance_softmax2d_modules():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal((4, 3)), rng.standard_normal((1, 3))
    cs = nn.CosineSimilarity(dim=1, eps=1e-8)
    assert repr(cs) == "CosineSimilarity()" and (cs.dim, cs.eps) == (1, 1e-8)
    want = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    np.testing.assert_allclose(cs(_t(a), _t(b)).numpy(), want, rtol=1e-14)
    pd = nn.PairwiseDistance(p=1.0, eps=1e-3, keepdim=True)
    assert repr(pd) == "PairwiseDistance()" and (pd.norm, pd.eps, pd.keepdim) == (1.0, 1e-3,
                                                                                 True)
    np.testing.assert_allclose(pd(_t(a), _t(b)).numpy(),
                               np.abs(a - b + 1e-3).sum(1, keepdims=True), rtol=1e-14)
    assert nn.PairwiseDistance()(_t(a), _t(b)).shape == (4,)
    sm = nn.Softmax2d()
    assert repr(sm) == "Softmax2d()"
    for shape in ((2, 3, 4, 5), (3, 1, 17)):
        c = rng.standard_normal(shape)
        np.testing.assert_allclose(sm(_t(c)).numpy(), _np_softmax(c, -3), rtol=1e-14)


def test_module_int_or_sequence_arguments():
    # PyTorch's _ntuple rule: an iterable (tuple, list, array) gives its entries, anything
    # else (an int, a NumPy int) is repeated
    x = np.arange(2 * 3 * 4, dtype=np.float64).reshape(1, 2, 3, 4)
    for padding in ((1, 2, 0, 1), [1, 2, 0, 1], np.array([1, 2, 0, 1])):
        m = nn.ZeroPad2d(padding)
        assert m.padding == (1, 2, 0, 1)
        np.testing.assert_array_equal(m(_t(x)).numpy(),
                                      np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)]))
    assert nn.ReflectionPad3d(np.int64(1)).padding == (1,) * 6
    m = nn.FractionalMaxPool2d(np.int64(2), output_size=np.array([2, 3]))
    assert m.kernel_size == (2, 2) and m.output_size == (2, 3)
    assert tuple(m(_t(np.ones((1, 1, 4, 5)))).shape) == (1, 1, 2, 3)
    assert nn.FractionalMaxPool3d(2, output_ratio=0.5).output_ratio == (0.5, 0.5, 0.5)


# PyTorch 2.13's pad nodes: one ConstantPadNdBackward0 (any pad length, crops too),
# ReflectionPad{1,2,3}DBackward0 / ReplicationPad{1,2,3}DBackward0 by the number of padded
# dims, on the input; circular is a composition in PyTorch as well (CopySlices).
_PAD_NODES = [
    ((1, 2), "constant", "ConstantPadNdBackward0"),
    ((1, -1, 0, 2), "constant", "ConstantPadNdBackward0"),
    ((1, 2), "reflect", "ReflectionPad1DBackward0"),
    ((1, 2, 1, 0), "reflect", "ReflectionPad2DBackward0"),
    ((1, 0, 1, 1, 0, 1), "reflect", "ReflectionPad3DBackward0"),
    ((0, 0), "reflect", "ReflectionPad1DBackward0"),
    ((2, 1), "replicate", "ReplicationPad1DBackward0"),
    ((2, 1, 0, 3), "replicate", "ReplicationPad2DBackward0"),
    ((1, 0, 1, 2, 2, 1), "replicate", "ReplicationPad3DBackward0"),
]


@pytest.mark.parametrize("pad,mode,node", _PAD_NODES)
def test_pad_nodes_values_and_gradients_are_pytorchs(pad, mode, node):
    # values against np.pad (crops by slicing); the gradient of sum(y * c) against the
    # adjoint by hand: c's entries added back at the input position each output copied
    rng = np.random.default_rng(len(pad))
    k = len(pad) // 2
    xn = rng.standard_normal((2, 3) + (4, 5, 3)[:max(k, 2) if mode == "constant" else k])
    nd = xn.ndim
    x = _t(xn, requires_grad=True)
    y = F.pad(x, pad, mode=mode)
    assert y.grad_fn.name() == node
    assert y.grad_fn.next_functions[0][0].name() == "AccumulateGrad"
    widths = [(0, 0)] * (nd - k) + [(max(pad[2 * i], 0), max(pad[2 * i + 1], 0))
                                    for i in reversed(range(k))]
    crop = [slice(None)] * (nd - k) + [slice(max(-pad[2 * i], 0),
                                             xn.shape[nd - 1 - i] - max(-pad[2 * i + 1], 0))
                                       for i in reversed(range(k))]
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}[mode]
    ref = np.pad(xn[tuple(crop)], widths, mode=np_mode)
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    # adjoint by hand: pad the positions 0..n-1 of x the same way and scatter c back
    pos = np.arange(xn.size, dtype=np.float64).reshape(xn.shape)
    where_from = np.pad(pos[tuple(crop)], widths, mode=np_mode)
    c = rng.standard_normal(ref.shape)
    gref = np.zeros(xn.size)
    keep = np.ones(ref.shape, bool)
    if mode == "constant":  # the fill's positions (np.pad's zeros) copy nothing
        inner = np.zeros(ref.shape, bool)
        inner[tuple(slice(w0, s - w1) for (w0, w1), s in zip(widths, ref.shape))] = True
        keep = inner
    np.add.at(gref, where_from[keep].astype(np.int64), c[keep])
    (y * _t(c)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), gref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate"])
def test_pad_one_node_gradcheck_and_gradgradcheck(mode):
    x = _t(np.random.default_rng(8).standard_normal((1, 2, 3, 4)), requires_grad=True)
    pad = (1, -1, 2, 1) if mode == "constant" else (1, 2, 2, 1)
    assert gradcheck(lambda t: F.pad(t, pad, mode=mode, value=None), (x,))
    assert gradgradcheck(lambda t: F.pad(t, pad, mode=mode, value=None), (x,))
    y = F.pad(x, pad, mode=mode)
    assert y.grad_fn._saved_pad if mode == "constant" else y.grad_fn._saved_padding


def _np_pixel_shuffle(a, r):
    *lead, c, h, w = a.shape
    k = len(lead)
    return a.reshape(*lead, c // (r * r), r, r, h, w).transpose(
        *range(k), k, k + 3, k + 1, k + 4, k + 2).reshape(*lead, c // (r * r), h * r, w * r)


@pytest.mark.parametrize("op", ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle"])
def test_shuffles_are_one_node_with_the_inverse_as_gradient(op):
    # PyTorch's PixelShuffleBackward0 / PixelUnshuffleBackward0 / ChannelShuffleBackward0;
    # the shuffles are permutations, so the gradient of sum(y * c) is c sent back through
    # the inverse permutation (by hand: NumPy positions 0..n-1 shuffled the same way)
    rng = np.random.default_rng(11)
    shape = {"pixel_shuffle": (2, 8, 2, 3), "pixel_unshuffle": (2, 2, 4, 6),
             "channel_shuffle": (2, 6, 2, 2)}[op]
    fn = {"pixel_shuffle": lambda t: F.pixel_shuffle(t, 2),
          "pixel_unshuffle": lambda t: F.pixel_unshuffle(t, 2),
          "channel_shuffle": lambda t: F.channel_shuffle(t, 3)}[op]
    xn = rng.standard_normal(shape)
    x = _t(xn, requires_grad=True)
    y = fn(x)
    node = {"pixel_shuffle": "PixelShuffleBackward0", "pixel_unshuffle":
            "PixelUnshuffleBackward0", "channel_shuffle": "ChannelShuffleBackward0"}[op]
    assert y.grad_fn.name() == node
    assert [f.name() for f, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    pos = np.arange(xn.size).reshape(shape)
    if op == "pixel_shuffle":
        moved = _np_pixel_shuffle(pos, 2)
    elif op == "pixel_unshuffle":  # its inverse: the positions it takes each value from
        moved = np.empty(xn.size, np.int64)
        moved[_np_pixel_shuffle(np.arange(xn.size).reshape(2, 8, 2, 3), 2).reshape(-1)] = \
            np.arange(xn.size)
        moved = moved.reshape(2, 8, 2, 3)
    else:
        moved = pos.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(shape)
    np.testing.assert_array_equal(y.detach().numpy(), xn.reshape(-1)[moved])
    c = rng.standard_normal(moved.shape)
    y.backward(_t(c))
    gref = np.zeros(xn.size)
    gref[moved.reshape(-1)] = c.reshape(-1)
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), gref)
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))
