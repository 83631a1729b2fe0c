"""Convolution, pooling and the batch/group/instance/RMS norms (tgrad/nn/_conv.py,
tgrad/nn/_norm.py) and their modules: running statistics, defaults, errors with PyTorch's
texts, and a small CNN training end to end. Values and gradients in general are in the op
table (tests/op_db_nn.py: NumPy float64 references, gradcheck and gradgradcheck)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F


def _t(values, **kw):
    return tgrad.tensor(np.asarray(values, dtype=np.float64), **kw)


def _raises(fn, exc, text):
    with pytest.raises(exc) as info:
        fn()
    assert text in str(info.value), str(info.value)


def test_batch_norm_updates_running_statistics():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5))
    mean0, var0 = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    rm, rv = _t(mean0), _t(var0)
    F.batch_norm(_t(x), rm, rv, training=True, momentum=0.3)
    # r = (1 - m) r + m s, with the batch's unbiased variance (PyTorch)
    np.testing.assert_allclose(rm.numpy(), 0.7 * mean0 + 0.3 * x.mean(axis=(0, 2)),
                               rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.7 * var0 + 0.3 * x.var(axis=(0, 2), ddof=1),
                               rtol=1e-12)
    # eval mode normalises with them and leaves them alone
    y = F.batch_norm(_t(x), rm, rv, training=False, eps=1e-3)
    ref = (x - rm.numpy()[:, None]) / np.sqrt(rv.numpy()[:, None] + 1e-3)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-12)



@pytest.mark.parametrize("shape", [(2, 3, 2), (2, 3, 2, 2)])
@pytest.mark.parametrize("affine", [False, True])
def test_batch_norm_training_result_is_c_contiguous(shape, affine):
    # PyTorch's batch_norm returns a C-contiguous result, so y.view(-1) works (tgrad's was
    # the channel-major temporary moved back: strides (2, 4, 1) for (2, 3, 2))
    x = np.random.default_rng(1).standard_normal(shape)
    w = _t([0.5, 1.0, 2.0]) if affine else None
    b = _t([0.0, -1.0, 1.0]) if affine else None
    y = F.batch_norm(_t(x), None, None, w, b, training=True)
    assert y.is_contiguous()
    axes = (0,) + tuple(range(2, x.ndim))
    ref = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(x.var(axis=axes, keepdims=True)
                                                          + 1e-5)
    if affine:
        bshape = (3,) + (1,) * (x.ndim - 2)
        ref = ref * np.reshape([0.5, 1.0, 2.0], bshape) + np.reshape([0.0, -1.0, 1.0], bshape)
    np.testing.assert_allclose(y.view(-1).numpy(), ref.reshape(-1), rtol=1e-10, atol=1e-12)

def test_batch_norm_eps_checks():
    # PyTorch 2.13's F.batch_norm: eps > 0 when training, eps >= 0 in evaluation
    x = _t(np.arange(6.0).reshape(3, 2))
    for eps in (0.0, -1.0):
        _raises(lambda eps=eps: F.batch_norm(x, None, None, training=True, eps=eps),
                ValueError, f"batch_norm eps must be positive during training, but got {eps}")
    _raises(lambda: F.batch_norm(x, _t(np.zeros(2)), _t(np.ones(2)), eps=-1.0), ValueError,
            "batch_norm eps must be non-negative, but got -1.0")
    y = F.batch_norm(x, _t(np.ones(2)), _t(np.full(2, 4.0)), eps=0.0)  # (x - 1) / 2
    np.testing.assert_array_equal(y.numpy(), (np.arange(6.0).reshape(3, 2) - 1) / 2)


def test_batchnorm_module_train_eval_and_state():
    rng = np.random.default_rng(1)
    bn = nn.BatchNorm2d(2, momentum=None, dtype=tgrad.float64)
    assert sorted(bn.state_dict()) == ["bias", "num_batches_tracked", "running_mean",
                                       "running_var", "weight"]
    xs = [rng.standard_normal((3, 2, 2, 2)) for _ in range(2)]
    for x in xs:
        bn(_t(x))
    assert bn.num_batches_tracked.item() == 2
    # momentum None: the cumulative average of the batches' statistics
    np.testing.assert_allclose(bn.running_mean.numpy(),
                               np.mean([x.mean(axis=(0, 2, 3)) for x in xs], axis=0),
                               rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(),
                               np.mean([x.var(axis=(0, 2, 3), ddof=1) for x in xs], axis=0),
                               rtol=1e-12)
    bn.eval()
    x = rng.standard_normal((1, 2, 3, 3))
    y = bn(_t(x)).detach().numpy()
    ref = (x - bn.running_mean.numpy()[:, None, None]) / np.sqrt(
        bn.running_var.numpy()[:, None, None] + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 2
    _raises(lambda: bn(_t(x[0])), ValueError, "expected 4D input (got 3D input)")
    _raises(lambda: nn.BatchNorm1d(2)(_t(x)), ValueError, "expected 2D or 3D input")



def test_float16_running_statistics_are_rounded_once():
    # PyTorch blends half running stats in float32 and rounds once: r = round(0.9 r +
    # 0.1 s) (tgrad rounded the product, the scaled stat and the sum each in float16).
    # Reference: NumPy float64 on the float16 values, rounded to float16.
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16, 256)).astype(np.float16)
    rm = rng.standard_normal(256).astype(np.float16)
    rv = rng.uniform(0.5, 2.0, 256).astype(np.float16)
    trm, trv = tgrad.tensor(rm), tgrad.tensor(rv)
    tgrad.nn.functional.batch_norm(tgrad.tensor(x), trm, trv, training=True, momentum=0.1)
    xd = x.astype(np.float64)
    want_m = (0.9 * rm.astype(np.float64) + 0.1 * xd.mean(0)).astype(np.float16)
    want_v = (0.9 * rv.astype(np.float64) + 0.1 * xd.var(0, ddof=1)).astype(np.float16)
    np.testing.assert_array_equal(trm.numpy(), want_m)
    np.testing.assert_array_equal(trv.numpy(), want_v)

def test_batch_norm_without_running_stats_uses_the_batch_in_eval():
    bn = nn.BatchNorm1d(2, affine=False, track_running_stats=False, dtype=tgrad.float64).eval()
    x = np.random.default_rng(2).standard_normal((5, 2))
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
    np.testing.assert_allclose(bn(_t(x)).numpy(), ref, rtol=1e-12)
    assert bn.running_mean is None and list(bn.state_dict()) == []


def test_instance_norm_module_and_running_stats():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    m = nn.InstanceNorm1d(3, track_running_stats=True, momentum=0.5, dtype=tgrad.float64)
    y = m(_t(x)).numpy()
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, ref, rtol=1e-12)
    # PyTorch averages the per-instance statistics over the batch
    np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * x.mean(-1).mean(0), rtol=1e-12)
    np.testing.assert_allclose(m.running_var.numpy(),
                               0.5 + 0.5 * x.var(-1, ddof=1).mean(0), rtol=1e-12)
    np.testing.assert_allclose(nn.InstanceNorm1d(3)(_t(x[0])).numpy(), ref[0], rtol=1e-12)


def test_rms_norm_default_eps_is_the_dtype_epsilon():
    x = np.array([[1e-4, -2e-4, 3e-4]], dtype=np.float32)
    y = F.rms_norm(tgrad.tensor(x), (3,)).numpy()
    x64 = x.astype(np.float64)
    eps = float(np.finfo(np.float32).eps)
    ref = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps)
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    m = nn.RMSNorm(3, dtype=tgrad.float64)
    np.testing.assert_allclose(m(_t(x64)).detach().numpy(),
                               x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True)
                                             + np.finfo(np.float64).eps), rtol=1e-12)


def test_group_norm_module():
    rng = np.random.default_rng(4)
    gn = nn.GroupNorm(2, 4, dtype=tgrad.float64)
    with tgrad.no_grad():
        gn.weight.copy_(_t([1.0, 2.0, 3.0, 4.0]))
        gn.bias.copy_(_t([0.0, -1.0, 1.0, 0.5]))
    x = rng.standard_normal((2, 4, 3))
    g = x.reshape(2, 2, 6)
    xhat = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    ref = xhat.reshape(2, 4, 3) * np.array([1, 2, 3, 4.0])[:, None] \
        + np.array([0, -1, 1, 0.5])[:, None]
    np.testing.assert_allclose(gn(_t(x)).detach().numpy(), ref, rtol=1e-12)
    _raises(lambda: nn.GroupNorm(3, 4), ValueError, "divisible by num_groups")


def test_group_norm_bias_false_keeps_weight_only():
    # PyTorch's keyword-only bias: affine with bias=False has a weight and no bias; the
    # output is xhat * weight; without affine there are no parameters whatever bias says.
    rng = np.random.default_rng(5)
    gn = nn.GroupNorm(2, 4, dtype=tgrad.float64, bias=False)
    assert gn.bias is None and [n for n, _ in gn.named_parameters()] == ["weight"]
    assert list(gn.state_dict()) == ["weight"]
    assert repr(gn) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=False)"
    with tgrad.no_grad():
        gn.weight.copy_(_t([1.0, 2.0, 3.0, 4.0]))
    x = rng.standard_normal((2, 4, 3))
    g = x.reshape(2, 2, 6)
    xhat = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    ref = xhat.reshape(2, 4, 3) * np.array([1, 2, 3, 4.0])[:, None]
    np.testing.assert_allclose(gn(_t(x)).detach().numpy(), ref, rtol=1e-12)
    plain = nn.GroupNorm(2, 4, affine=False, bias=True)
    assert plain.weight is None and plain.bias is None and list(plain.state_dict()) == []
    assert repr(nn.GroupNorm(1, 2)) == "GroupNorm(1, 2, eps=1e-05, affine=True, bias=True)"
    _raises(lambda: nn.GroupNorm(3, 4), ValueError,
            "num_channels (4) must be divisible by num_groups (3)")


def test_conv_modules_match_the_functional_form_and_init_bounds():
    tgrad.manual_seed(0)
    conv = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2, dtype=tgrad.float64)
    assert conv.weight.shape == (6, 2, 3, 2) and conv.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3 * 2)  # fan_in = in / groups * kernel
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound and np.abs(w).max() > 0
    x = _t(np.random.default_rng(5).standard_normal((2, 4, 5, 5)))
    np.testing.assert_array_equal(
        conv(x).detach().numpy(),
        F.conv2d(x, conv.weight, conv.bias, 2, 1, 1, 2).detach().numpy())
    c1 = nn.Conv1d(3, 2, 3, padding="same", bias=False, dtype=tgrad.float64)
    assert c1.bias is None and c1(_t(np.ones((1, 3, 7)))).shape == (1, 2, 7)
    _raises(lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError,
            "in_channels must be divisible by groups")
    _raises(lambda: nn.Conv2d(2, 4, 3, padding="same", stride=2), ValueError,
            "padding='same' is not supported for strided convolutions")
    _raises(lambda: nn.Conv2d(2, 4, 3, padding_mode="reflection"), ValueError,
            "but got padding_mode='reflection'")


def test_pooling_modules():
    x = _t(np.arange(16.0).reshape(1, 1, 4, 4))
    y, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert y.tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    assert idx.tolist() == [[[[5, 7], [13, 15]]]] and idx.dtype is tgrad.int64
    assert nn.AvgPool2d(2)(x).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    assert nn.AdaptiveAvgPool2d(1)(x).tolist() == [[[[7.5]]]]
    assert nn.AdaptiveAvgPool1d(2)(_t([[1.0, 2.0, 3.0]])).tolist() == [[1.5, 2.5]]
    assert nn.MaxPool1d(2)(_t([[1.0, 3.0, 2.0, 0.0]])).tolist() == [[3.0, 2.0]]
    assert nn.AvgPool1d(3, 1, 1, count_include_pad=False)(_t([[3.0, 6.0]])).tolist() == \
        [[4.5, 4.5]]


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = _t([[[[1.0, 3.0], [3.0, 2.0]]]], requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]


CONV_ERRORS = [
    (lambda: F.conv2d(_t(np.ones((2, 3))), _t(np.ones((4, 3, 3, 3)))), RuntimeError,
     "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [2, 3]"),
    (lambda: F.conv2d(_t(np.ones((2, 4, 5, 5))), _t(np.ones((4, 3, 3, 3)))), RuntimeError,
     "Given groups=1, weight of size [4, 3, 3, 3], expected input[2, 4, 5, 5] to have 3 "
     "channels, but got 4 channels instead"),
    (lambda: F.conv2d(_t(np.ones((2, 4, 5, 5))), _t(np.ones((3, 2, 3, 3))), groups=2),
     RuntimeError, "Given groups=2, expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv2d(_t(np.ones((2, 3, 2, 2))), _t(np.ones((4, 3, 3, 3)))), RuntimeError,
     "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
     "can't be greater than actual input size"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((4, 3, 3, 3))), stride=0),
     RuntimeError, "non-positive stride is not supported"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((4, 3, 3, 3))), padding=-1),
     RuntimeError, "negative padding is not supported"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((4, 3, 3, 3))), _t(np.ones(3))),
     RuntimeError, "expected bias to be 1-dimensional with 4 elements, but got bias of size "
     "[3] instead"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((4, 3, 3, 3))), padding="same",
                      stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((4, 3, 3, 3))), padding="foo"),
     RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))),
                      tgrad.ones(4, 3, 3, 3, dtype=tgrad.float32)), RuntimeError,
     "expected input and weight to have the same dtype"),
    (lambda: F.conv1d(_t(np.ones((1, 3, 5))), _t(np.ones((4, 3, 3, 3)))), RuntimeError,
     "conv1d: expected weight to be 3-dimensional"),
    (lambda: F.max_pool2d(_t(np.ones((2, 3, 5, 5))), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: F.max_pool2d(_t(np.ones((3, 2, 2))), 3), RuntimeError,
     "Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too small"),
    (lambda: F.avg_pool2d(_t(np.ones((3, 2, 2))), 3), RuntimeError, "Output size is too small"),
    (lambda: F.max_pool2d(_t(np.ones(3)), 1), RuntimeError,
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    (lambda: F.max_pool2d(_t(np.ones((1, 1, 4, 4))), 2, stride=0), RuntimeError,
     "stride should not be zero"),
    (lambda: F.max_pool2d(_t(np.ones((1, 1, 4, 4))), (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of 2 ints"),
    (lambda: F.adaptive_avg_pool2d(_t(np.ones(3)), 2), RuntimeError,
     "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [3]"),
    (lambda: F.adaptive_avg_pool2d(_t(np.ones((2, 3, 0, 4))), 2), RuntimeError,
     "Expected input to have non-zero size for non-batch dimensions"),
    (lambda: F.batch_norm(_t(np.ones((1, 3))), _t(np.zeros(3)), _t(np.ones(3)),
                          training=True), ValueError,
     "Expected more than 1 value per channel when training, got input size [1, 3]"),
    (lambda: F.batch_norm(_t(np.ones((4, 3))), _t(np.zeros(2)), _t(np.ones(3)),
                          training=True), RuntimeError,
     "running_mean should contain 3 elements not 2"),
    (lambda: F.batch_norm(_t(np.ones((4, 3))), None, None), RuntimeError,
     "running_mean must be defined in evaluation mode"),
    (lambda: F.group_norm(_t(np.ones((4, 6, 2))), 4), RuntimeError,
     "Expected number of channels in input to be divisible by num_groups, but got input of "
     "shape [4, 6, 2] and num_groups=4"),
    (lambda: F.group_norm(_t(np.ones((2, 6))), 2, _t(np.ones(4))), RuntimeError,
     "Expected weight to be a vector of size equal to the number of channels in input, but "
     "got weight of shape [4] and input of shape [2, 6]"),
    (lambda: F.rms_norm(_t(np.ones((4, 3))), (2,)), RuntimeError,
     "Given normalized_shape=[2], expected input with shape [*2], but got input of size[4, 3]"),
    (lambda: F.conv2d(_t(np.ones((1, 3, 5, 5))), _t(np.ones((0, 3, 3, 3)))), RuntimeError,
     "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of "
     "size [0, 3, 3, 3] instead"),
    (lambda: F.rms_norm(_t(np.ones((3, 4))), ()), RuntimeError,
     "Expected normalized_shape to be at least 1-dimensional"),
    (lambda: F.conv2d(np.ones((1, 3, 5, 5)), _t(np.ones((4, 3, 3, 3)))), TypeError,
     "conv2d(): argument 'input' must be Tensor, not ndarray"),
]


@pytest.mark.parametrize("case", range(len(CONV_ERRORS)))
def test_errors_follow_pytorch(case):
    fn, exc, text = CONV_ERRORS[case]
    _raises(fn, exc, text)


def test_small_cnn_trains():
    """Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d -> Flatten -> Linear learns to tell two
    fixed patterns apart: the loss falls by more than half in a few SGD steps."""
    tgrad.manual_seed(0)
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((2, 1, 6, 6))
    x = np.concatenate([a + 0.1 * rng.standard_normal((8, 1, 6, 6)),
                        b + 0.1 * rng.standard_normal((8, 1, 6, 6))]).astype(np.float32)
    y = np.array([0] * 8 + [1] * 8)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(36, 2))
    opt = tgrad.optim.SGD(model.parameters(), lr=0.1)
    xs, ys = tgrad.tensor(x), tgrad.tensor(y)
    losses = []
    for _ in range(15):
        opt.zero_grad()
        loss = F.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses


def test_max_pool_window_of_only_minus_inf_picks_its_first_input_element():
    # PyTorch starts each window at its first element inside the input: a window whose
    # input values are all -inf returns (and routes the gradient to) that element, never
    # the padding
    x = _t([[[-np.inf, -np.inf, 1.0]]], requires_grad=True)
    y, idx = F.max_pool1d(x, 2, 1, padding=1, return_indices=True)
    assert idx.tolist() == [[[0, 0, 2, 2]]]
    y[..., 0].sum().backward()
    assert x.grad.tolist() == [[[1.0, 0.0, 0.0]]]
    _raises(lambda: F.max_pool2d(_t(np.ones((1, 1, 2, 2))), 2, 1, padding=2, dilation=3),
            RuntimeError, "pad should be smaller than or equal to half of kernel size")


def test_max_pool_window_with_nans_picks_its_last_nan():
    # PyTorch's kernels take val when val > max or isnan(val): the last NaN of a window wins
    # (index and gradient); windows without NaN keep the first maximum
    nan = float("nan")
    x = _t([[[1.0, nan, 2.0, nan, nan, 3.0, 5.0, nan, 4.0, 4.0, 4.0]]], requires_grad=True)
    y, idx = F.max_pool1d(x, 3, 1, return_indices=True)
    assert idx.tolist() == [[[1, 3, 4, 4, 4, 7, 7, 7, 8]]]
    assert np.isnan(y.detach().numpy()[..., :8]).all() and y[0, 0, 8].item() == 4.0
    y.sum().backward()
    assert x.grad.tolist() == [[[0.0, 1.0, 0.0, 1.0, 3.0, 0.0, 0.0, 3.0, 1.0, 0.0, 0.0]]]
    # adaptive windows of 11 -> 3: [0, 4), [3, 8), [7, 11): the same rule
    ya, ia = F.adaptive_max_pool1d(x.detach(), 3, return_indices=True)
    assert ia.tolist() == [[[3, 7, 7]]]
    # 2-d windows are scanned row-major: (1, 1) is the last NaN of the 2x2 window
    x2 = _t([[[[nan, 1.0], [2.0, nan]]]])
    assert F.max_pool2d(x2, 2, return_indices=True)[1].tolist() == [[[[3]]]]
    assert F.adaptive_max_pool2d(x2, 1, return_indices=True)[1].tolist() == [[[[3]]]]


def test_adaptive_max_pool_to_an_empty_output_size():
    # PyTorch: no windows, an empty result (and int64 indices); it was a reshape error
    x = _t(np.arange(24.0).reshape(2, 3, 4), requires_grad=True)
    for call, shape in ((lambda z: F.adaptive_max_pool1d(z, 0, True), (2, 3, 0)),
                        (lambda z: F.adaptive_max_pool2d(z, (0, 2), True), (2, 0, 2)),
                        (lambda z: F.adaptive_max_pool2d(z, (3, 0), True), (2, 3, 0)),
                        (lambda z: F.adaptive_max_pool3d(z[None], (0, 1, 2), True),
                         (1, 0, 1, 2))):
        y, idx = call(x)
        assert y.shape == idx.shape == shape and idx.dtype == tgrad.int64
        assert y.requires_grad and not y._is_view()
        (g,) = tgrad.autograd.grad(y.sum(), x)  # nothing read: a zero gradient
        np.testing.assert_array_equal(g.numpy(), np.zeros((2, 3, 4)))
    assert F.adaptive_max_pool1d(x, 0).shape == (2, 3, 0)


@pytest.mark.parametrize("fn, shape, kernel", [
    (F.adaptive_avg_pool1d, (1, 2, 4), "adaptive_avg_pool2d"),
    (F.adaptive_avg_pool2d, (1, 2, 4, 4), "adaptive_avg_pool2d"),
    (F.adaptive_avg_pool3d, (1, 2, 4, 4, 4), "adaptive_avg_pool3d_cpu"),
    (F.adaptive_max_pool1d, (1, 2, 4), "adaptive_max_pool2d"),
    (F.adaptive_max_pool2d, (1, 2, 4, 4), "adaptive_max_pool2d"),
    (F.adaptive_max_pool3d, (1, 2, 4, 4, 4), "adaptive_max_pool3d_cpu"),
])
def test_adaptive_pool_integer_input_raises_not_implemented(fn, shape, kernel):
    # PyTorch: NotImplementedError naming its CPU kernel, for integer and bool inputs
    for dt in (tgrad.int64, tgrad.bool):
        _raises(lambda dt=dt: fn(tgrad.ones(shape, dtype=dt), 2), NotImplementedError,
                f"\"{kernel}\" not implemented for")


def test_rms_norm_half_default_eps_is_float32s():
    y = F.rms_norm(tgrad.full((2, 4), 1e-2, dtype=tgrad.bfloat16), (4,)).float().numpy()
    np.testing.assert_allclose(y, np.full((2, 4), 1e-2 / math.sqrt(1e-4 + 2.0 ** -23)),
                               rtol=1e-2)


def test_norms_of_an_empty_batch():
    x = _t(np.ones((0, 3, 4)))
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    assert F.batch_norm(x, rm, rv, training=True).shape == (0, 3, 4)
    assert rm.tolist() == [0.0] * 3 and rv.tolist() == [1.0] * 3  # untouched
    assert F.group_norm(x, 3).shape == (0, 3, 4)
    assert F.instance_norm(x).shape == (0, 3, 4)


def test_window_tables_are_device_constants_made_once():
    from tgrad.ops import creation
    x, w = tgrad.randn(1, 2, 6, 7), tgrad.randn(3, 2, 3, 3)
    F.conv2d(x, w, padding=1)
    before = dict(creation._CONSTANTS)
    F.conv2d(x, w, padding=1)  # same geometry: the same index tensor, no new copy
    assert creation._CONSTANTS == before
    arr = np.arange(4)
    arr.flags.writeable = False
    a = creation.device_constant(arr, tgrad.int64, "cpu")
    assert creation.device_constant(arr, tgrad.int64, "cpu") is a
    assert a.tolist() == [0, 1, 2, 3]


# ===================================================================== padding_mode
# nn.Conv1d/2d/3d(padding_mode='reflect' | 'replicate' | 'circular'): PyTorch pads the input
# with F.pad in that mode by the module's padding (for padding='same': d * (k - 1) in all,
# the extra one on the right), then convolves with padding 0. Reference: np.pad ('reflect',
# 'edge', 'wrap') and a direct convolution loop in float64.
_NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def _np_conv(x, w, b, stride, dilation, groups):
    """Cross-correlation of an already padded x (N, C, *S) with w (O, C / groups, *K)."""
    n, c, sizes = x.shape[0], x.shape[1], x.shape[2:]
    o, kernel = w.shape[0], w.shape[2:]
    out_sizes = [(s - d * (k - 1) - 1) // st + 1
                 for s, k, st, d in zip(sizes, kernel, stride, dilation)]
    out = np.zeros((n, o, *out_sizes))
    cg, og = c // groups, o // groups
    for oc in range(o):
        g = oc // og
        for pos in np.ndindex(*out_sizes):
            acc = np.zeros(n)
            for kpos in np.ndindex(*kernel):
                src = tuple(p * st + kk * d
                            for p, kk, st, d in zip(pos, kpos, stride, dilation))
                acc += x[(slice(None), slice(g * cg, (g + 1) * cg)) + src] \
                    @ w[(oc, slice(None)) + kpos]
            out[(slice(None), oc) + pos] = acc + (0.0 if b is None else b[oc])
    return out


def _np_padded_conv(x, w, b, mode, padding, stride, dilation, groups):
    """np.pad of the spatial dims by ``padding`` (pairs (left, right) in dim order), then
    the convolution."""
    xp = np.pad(x, [(0, 0), (0, 0)] + list(padding), mode=_NP_MODE[mode])
    return _np_conv(xp, w, b, stride, dilation, groups)


PADDING_MODE_CASES = [  # dims, in/out channels, kernel, padding, stride, dilation, groups, size
    (1, (2, 4), (3,), (2,), (1,), (1,), 2, (6,)),
    (1, (2, 3), (2,), (1,), (2,), (2,), 1, (5,)),
    (2, (2, 2), (3, 2), (1, 2), (1, 2), (1, 1), 1, (4, 5)),
    (2, (4, 2), (2, 3), (0, 1), (1, 1), (2, 1), 2, (5, 4)),
    (3, (2, 2), (2, 3, 2), (1, 0, 2), (1, 1, 2), (1, 1, 1), 1, (3, 4, 3)),
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("case", PADDING_MODE_CASES)
def test_conv_padding_mode_matches_numpy_pad_then_convolve(mode, case):
    dims, (cin, cout), kernel, padding, stride, dilation, groups, size = case
    rng = np.random.default_rng(dims * 10 + len(mode))
    conv = getattr(nn, f"Conv{dims}d")(cin, cout, kernel, stride=stride, padding=padding,
                                        dilation=dilation, groups=groups,
                                        padding_mode=mode, dtype=tgrad.float64)
    assert conv.padding_mode == mode and f"padding_mode={mode}" in repr(conv)
    x = rng.standard_normal((2, cin, *size))
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    want = _np_padded_conv(x, w, b, mode, [(p, p) for p in padding], stride, dilation,
                           groups)
    got = conv(_t(x))
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    # an unbatched input (C, *S) gives the batched result's first item
    np.testing.assert_allclose(conv(_t(x[0])).detach().numpy(), want[0], rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("dims,kernel,dilation", [
    (1, (4,), (3,)),            # even kernel, dilated: d (k - 1) = 9 -> (4, 5)
    (2, (2, 3), (1, 2)),        # (0, 1) on H, (2, 2) on W
    (3, (2, 1, 3), (2, 1, 1)),  # (1, 1), (0, 0), (1, 1)
])
def test_conv_padding_same_with_padding_modes(mode, dims, kernel, dilation):
    rng = np.random.default_rng(dims)
    size = (11,) if dims == 1 else (4, 6) if dims == 2 else (4, 3, 5)
    conv = getattr(nn, f"Conv{dims}d")(2, 3, kernel, padding="same", dilation=dilation,
                                        padding_mode=mode, dtype=tgrad.float64)
    x = rng.standard_normal((2, 2, *size))
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
            for k, d in zip(kernel, dilation)]
    if mode == "zeros":
        xp = np.pad(x, [(0, 0), (0, 0)] + pads)
        want = _np_conv(xp, w, b, (1,) * dims, dilation, 1)
    else:
        want = _np_padded_conv(x, w, b, mode, pads, (1,) * dims, dilation, 1)
    got = conv(_t(x)).detach().numpy()
    assert got.shape == x.shape[:1] + (3,) + size
    assert ", padding=same, " in repr(conv)  # unquoted, as PyTorch
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # padding='valid' with a mode pads nothing
    valid = getattr(nn, f"Conv{dims}d")(2, 3, kernel, padding="valid", dilation=dilation,
                                         padding_mode=mode, dtype=tgrad.float64)
    want = _np_conv(x, valid.weight.detach().numpy(), valid.bias.detach().numpy(),
                    (1,) * dims, dilation, 1)
    np.testing.assert_allclose(valid(_t(x)).detach().numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_conv_padding_mode_gradcheck(mode, dims):
    from tgrad.autograd import gradcheck
    rng = np.random.default_rng(dims)
    kernel = (3, 2, 2)[:dims]
    padding = (2, 1, 1)[:dims]
    size = (4, 3, 3)[:dims]
    conv = getattr(nn, f"Conv{dims}d")(2, 2, kernel, padding=padding, padding_mode=mode,
                                        dtype=tgrad.float64)
    x = _t(rng.standard_normal((1, 2, *size)), requires_grad=True)
    pads = [(p, p) for p in padding]
    flat = [q for pair in reversed(pads) for q in pair]  # F.pad's order: last dim first

    def f(x, w, b):
        return getattr(F, f"conv{dims}d")(F.pad(x, flat, mode=mode), w, b)

    w = conv.weight.detach().clone().requires_grad_()
    b = conv.bias.detach().clone().requires_grad_()
    assert gradcheck(f, (x, w, b))
    assert gradcheck(conv, (x,))  # the module's input gradient against finite differences
    # the module's forward is that composite: same values and weight / bias gradients
    gy = _t(rng.standard_normal(conv(x).shape))
    (conv(x) * gy).sum().backward()
    gx = x.grad.numpy().copy()
    x.grad = None
    (f(x, w, b) * gy).sum().backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(conv.weight.grad.numpy(), w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(conv.bias.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_conv_padding_mode_errors():
    _raises(lambda: nn.Conv1d(2, 2, 3, padding_mode="wrap"), ValueError,
            "padding_mode must be one of {'zeros', 'reflect', 'replicate', 'circular'}, "
            "but got padding_mode='wrap'")
    _raises(lambda: nn.Conv3d(2, 2, 3, padding_mode="Reflect"), ValueError,
            "but got padding_mode='Reflect'")
    # the padding string is checked first, as PyTorch
    _raises(lambda: nn.Conv2d(2, 2, 3, padding="full", padding_mode="wrap"), ValueError,
            "Invalid padding string 'full'")
    _raises(lambda: nn.Conv2d(2, 2, 3, padding="same", stride=2, padding_mode="reflect"),
            ValueError, "padding='same' is not supported for strided convolutions")
    # F.pad's own errors: reflect needs padding < the size, circular wraps at most once
    conv = nn.Conv2d(1, 1, 3, padding=3, padding_mode="reflect")
    _raises(lambda: conv(tgrad.randn(1, 1, 3, 3)), RuntimeError,
            "Padding size should be less than the corresponding input dimension")
    conv = nn.Conv2d(1, 1, 3, padding=4, padding_mode="circular")
    _raises(lambda: conv(tgrad.randn(1, 1, 3, 3)), RuntimeError,
            "Padding value causes wrapping around more than once")
    assert nn.Conv2d(1, 1, 3, padding=3, padding_mode="circular")(
        tgrad.randn(1, 1, 3, 3)).shape == (1, 1, 7, 7)
    # transposed convolutions keep PyTorch's 'zeros'-only rule
    _raises(lambda: nn.ConvTranspose1d(1, 1, 3, padding_mode="circular"), ValueError,
            'Only "zeros" padding mode is supported for ConvTranspose1d')


def _np_int_avg_pool1d(x, k, s, p, include_pad):
    """PyTorch's CPU int64 avg_pool: the integer window sum divided by the integer divisor
    in C++ (truncation toward zero)."""
    n = x.shape[-1]
    out = []
    for start in range(-p, n + p - k + 1, s):
        lo, hi = max(start, 0), min(start + k, n)
        total = int(x[..., lo:hi].sum())
        d = k if include_pad else hi - lo
        out.append(abs(total) // d * (1 if total >= 0 else -1))
    return out


def test_avg_pool_of_int64_truncates_like_pytorch_cpu():
    x = tgrad.tensor([[[1, 2, 4, 7, -3, -4]]])
    for k, s, p in ((2, 2, 0), (3, 1, 1), (2, 1, 1)):
        for inc in (True, False):
            out = F.avg_pool1d(x, k, s, p, count_include_pad=inc)
            assert out.dtype is tgrad.int64
            assert out[0, 0].tolist() == _np_int_avg_pool1d(x.numpy()[0, 0], k, s, p, inc)
    x2 = tgrad.tensor([[[[-2, -3], [-5, -9]]]])  # sum -19: -4.75 -> -4
    assert F.avg_pool2d(x2, 2).tolist() == [[[[-4]]]]
    assert nn.AvgPool2d(2)(-x2).tolist() == [[[[4]]]]
    assert F.avg_pool2d(-x2, 2, divisor_override=3).tolist() == [[[[6]]]]  # 19 // 3
    x3 = -tgrad.arange(8).reshape(1, 1, 2, 2, 2)  # sum -28 / 8 = -3.5 -> -3
    assert F.avg_pool3d(x3, 2).tolist() == [[[[[-3]]]]]
    assert F.avg_pool1d(tgrad.tensor([[1, 2, 3, 4, 5]]), 2, ceil_mode=True).tolist() == \
        [[1, 3, 5]]
    # the other integer dtypes and bool raise PyTorch's NotImplementedError
    with pytest.raises(NotImplementedError, match="\"avg_pool2d\" not implemented for 'Int'"):
        F.avg_pool1d(x.int(), 2)
    with pytest.raises(NotImplementedError, match="\"avg_pool2d\" not implemented for 'Bool'"):
        F.avg_pool2d(x2 > 0, 2)
    with pytest.raises(NotImplementedError, match="\"avg_pool3d_out_frame\" not implemented "
                                                  "for 'Int'"):
        F.avg_pool3d(x3.int(), 2)


def test_conv_module_int_or_sequence_arguments():
    # PyTorch's _ntuple rule: an int (NumPy's too) repeats, an iterable gives its entries
    conv = nn.Conv2d(1, 1, np.int64(3), stride=np.array([1, 2]), padding=[1, 0],
                     dtype=tgrad.float64)
    assert conv.kernel_size == (3, 3) and conv.stride == (1, 2) and conv.padding == (1, 0)
    x = np.random.default_rng(0).standard_normal((1, 1, 4, 5))
    w = conv.weight.detach().numpy()[0, 0]
    xp = np.pad(x[0, 0], [(1, 1), (0, 0)])
    want = np.array([[(xp[i:i + 3, j:j + 3] * w).sum() for j in range(0, 3, 2)]
                     for i in range(4)]) + conv.bias.item()
    np.testing.assert_allclose(conv(_t(x)).detach().numpy()[0, 0], want, rtol=1e-12)
    _raises(lambda: F.conv2d(_t(x), conv.weight, stride=2.0), TypeError,
            "conv2d(): argument 'stride' must be tuple of ints, not float")
    _raises(lambda: F.conv2d(_t(x), conv.weight, stride=(1, 1, 1)), RuntimeError,
            "stride must either be a single int, or a tuple of 2 ints")


def test_pooling_and_im2col_of_types_pytorch_has_no_kernel_for():
    # PyTorch: no bool max-pooling; max_pool1d without indices (max_pool1d_impl) and
    # unfold/fold (im2col/col2im) no integers; max_pool2d/3d and max_pool1d's indices path
    # take integers
    b = tgrad.ones(1, 2, 4, 4, dtype=tgrad.bool)
    for call, kernel in ((lambda: F.max_pool1d(b[0], 2), "max_pool1d_impl"),
                         (lambda: F.max_pool1d(b[0], 2, return_indices=True), "max_pool2d"),
                         (lambda: F.max_pool2d(b, 2), "max_pool2d"),
                         (lambda: F.max_pool3d(b[None], 2), "max_pool3d")):
        with pytest.raises(NotImplementedError, match=rf"^max_pool\dd: .*\"{kernel}\" not "
                                                      rf"implemented for 'Bool'"):
            call()
    i = tgrad.tensor(np.arange(8).reshape(1, 2, 4))
    with pytest.raises(NotImplementedError, match="\"max_pool1d_impl\" not implemented for "
                                                  "'Long'"):
        F.max_pool1d(i, 2)
    values, idx = F.max_pool1d(i, 2, return_indices=True)
    np.testing.assert_array_equal(values.numpy(), [[[1, 3], [5, 7]]])  # max of each pair
    np.testing.assert_array_equal(idx.numpy(), [[[1, 3], [1, 3]]])
    np.testing.assert_array_equal(F.max_pool2d(i[None], (1, 2)).numpy(), [[[[1, 3], [5, 7]]]])
    with pytest.raises(NotImplementedError, match="\"im2col_out_cpu\" not implemented for "
                                                  "'Long'"):
        F.unfold(i[None], 2)
    with pytest.raises(NotImplementedError, match="\"col2im_out_cpu\" not implemented for "
                                                  "'Int'"):
        F.fold(tgrad.ones(4, 4, dtype=tgrad.int32), (3, 3), 2)


def test_norms_grid_sample_and_losses_of_integers_raise_pytorchs_kernel_error():
    # PyTorch has no CPU kernel for these on integer / bool inputs: NotImplementedError
    i = tgrad.ones(2, 3, 4, 4, dtype=tgrad.int64)
    for call, kernel in (
            (lambda: F.batch_norm(i, None, None, training=True), "batch_norm"),
            (lambda: F.group_norm(i, 3), "GroupNormKernelImpl"),
            (lambda: F.rms_norm(i, (4,)), "rms_norm"),
            (lambda: F.grid_sample(i, tgrad.zeros(2, 1, 1, 2, dtype=tgrad.int64),
                                   align_corners=False), "grid_sampler_2d_cpu_kernel_impl"),
            (lambda: F.multilabel_margin_loss(i[0, 0], tgrad.zeros(4, 4, dtype=tgrad.int64)),
             "multilabel_margin_loss_forward_out_frame"),
            (lambda: F.ctc_loss(tgrad.ones(5, 2, 4, dtype=tgrad.int32),
                                tgrad.tensor([[1, 2], [1, 1]]), tgrad.tensor([5, 5]),
                                tgrad.tensor([2, 2])), "ctc_loss_cpu")):
        with pytest.raises(NotImplementedError, match=rf"\"{kernel}\" not implemented for "
                                                      rf"'(Long|Int)'"):
            call()


def _np_col2im(cols, size, kernel, stride, dilation, blocks):
    """Hand-written float64 col2im: every column entry [n, c, k, b] (k, b row-major
    multi-indices) added at position (b_i s_i + k_i d_i)_i, one term at a time."""
    n, c = cols.shape[:2]
    out = np.zeros((n, c) + size)
    src = cols.reshape((n, c) + kernel + blocks).astype(np.float64)
    for k in np.ndindex(*kernel):
        for b in np.ndindex(*blocks):
            at = tuple(bi * si + ki * di for ki, bi, si, di in zip(k, b, stride, dilation))
            out[(slice(None), slice(None)) + at] += src[(slice(None), slice(None)) + k + b]
    return out.reshape(n, c, -1)


@pytest.mark.parametrize("kernel, stride, dilation", [
    ((3,), (1,), (1,)), ((1, 4), (1, 3), (1, 2)), ((3, 3), (1, 1), (1, 1)),
    ((2, 3), (2, 1), (3, 1)), ((2, 2, 3), (1, 2, 1), (2, 1, 1))])
def test_numpy_col2im_sums_each_kernel_offset_like_add_at(kernel, stride, dilation):
    # the NumPy backend's col2im (conv's input gradient, conv_transpose, fold) adds one
    # strided slice per kernel offset: the sums of a hand loop, and in float32 bit for bit
    # those of np.add.at over the flat window index (the same order of terms per position)
    from tgrad.backends import numpy as be
    from tgrad.nn._conv import _window_index
    rng = np.random.default_rng(3)
    blocks = tuple(int(rng.integers(2, 5)) for _ in kernel)
    size = tuple((b - 1) * s + d * (k - 1) + 1 + int(rng.integers(0, 3))
                 for b, s, d, k in zip(blocks, stride, dilation, kernel))
    idx = _window_index(size, kernel, stride, dilation, blocks).reshape(-1)
    key = (slice(None), slice(None), idx)
    cols = rng.standard_normal((2, 3, idx.size))
    got = be.col2im(cols, key, size, kernel, stride, dilation, blocks)
    np.testing.assert_allclose(got, _np_col2im(cols, size, kernel, stride, dilation, blocks),
                               rtol=1e-12, atol=1e-12)
    c32 = (cols * 1e3).astype(np.float32)
    c32[0, 0, :3] = [np.inf, -np.inf, np.nan]
    ref = np.zeros((2, 3, math.prod(size)), np.float32)
    with np.errstate(invalid="ignore"):
        np.add.at(ref, key, c32)
    strided = np.zeros((2, 6, idx.size), np.float32)
    strided[:, ::2] = c32  # a non-contiguous input
    got32 = be.col2im(strided[:, ::2], key, size, kernel, stride, dilation, blocks)
    assert got32.dtype == np.float32 and got32.tobytes() == ref.tobytes()
    half = be.col2im(c32.astype(np.float16), key, size, kernel, stride, dilation, blocks)
    ref16 = np.zeros_like(ref)
    with np.errstate(invalid="ignore"):
        np.add.at(ref16, key, c32.astype(np.float16).astype(np.float32))
    assert half.dtype == np.float16  # float32 sums, rounded once
    np.testing.assert_array_equal(half, ref16.astype(np.float16))


@pytest.mark.parametrize("kernel, stride, dilation", [
    ((3,), (1,), (1,)), ((1, 4), (1, 3), (1, 2)), ((3, 3), (1, 1), (1, 1)),
    ((2, 3), (2, 1), (3, 1)), ((2, 2, 3), (1, 2, 1), (2, 1, 1))])
def test_numpy_im2col_is_the_gather_at_the_window_index(kernel, stride, dilation):
    # the NumPy backend's im2col copies a strided view of the planes (rows of 9+ outputs;
    # shorter ones take the gather): the same array (values, dtype, C-contiguous layout)
    # as the gather at the flat window index, for every dtype, a non-contiguous input and
    # empty batches/channels
    for last in (3, 11):
        _check_im2col_against_the_gather(kernel, stride, dilation, last)


def _check_im2col_against_the_gather(kernel, stride, dilation, last):
    from tgrad.backends import numpy as be
    from tgrad.nn._conv import _window_index
    rng = np.random.default_rng(4)
    blocks = tuple(int(rng.integers(1, 5)) for _ in kernel[:-1]) + (last,)
    size = tuple((b - 1) * s + d * (k - 1) + 1 + int(rng.integers(0, 3))
                 for b, s, d, k in zip(blocks, stride, dilation, kernel))
    idx = _window_index(size, kernel, stride, dilation, blocks).reshape(-1)
    key = (slice(None), slice(None), idx)
    x = rng.standard_normal((2, 3, math.prod(size)))
    for a in (x, x.astype(np.float32), x.astype(np.float16), x.astype(ml_dtypes.bfloat16),
              (x + 1j * x[::-1]).astype(np.complex64), x > 0, x.astype(np.int64)):
        # (long rows: the strided copy, which reads no key)
        got = be.im2col(a, None if last > 8 else key, size, kernel, stride, dilation, blocks)
        want = np.take(a, idx, axis=2)
        assert got.dtype == a.dtype and got.flags.c_contiguous
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    wide = np.zeros((2, 6, 2 * math.prod(size)))
    wide[:, ::2, ::2] = x  # channels and positions strided
    got = be.im2col(wide[:, ::2, ::2], key, size, kernel, stride, dilation, blocks)
    assert got.tobytes() == np.take(x, idx, axis=2).tobytes()
    for shape in ((0, 3), (2, 0)):
        empty = be.im2col(np.zeros(shape + (math.prod(size),), np.float32), key, size,
                          kernel, stride, dilation, blocks)
        assert empty.shape == shape + (idx.size,) and empty.dtype == np.float32


def test_conv_fold_and_pool_gradients_through_col2im_match_finite_differences():
    # strided, dilated, grouped 1/2/3-d convs, conv_transpose and fold: first and second
    # derivatives in float64 against finite differences (Im2Col/Col2Im are each other's
    # backward)
    rng = np.random.default_rng(4)

    def leaf(*shape):
        return tgrad.tensor(rng.standard_normal(shape), requires_grad=True)

    cases = [
        (lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2, groups=2),
         (leaf(1, 4, 9), leaf(2, 2, 3))),
        (lambda x, w: F.conv2d(x, w, stride=(2, 1), padding="valid", dilation=(1, 2)),
         (leaf(1, 2, 6, 7), leaf(2, 2, 2, 3))),
        (lambda x, w: F.conv3d(x, w, padding="same", dilation=(2, 1, 1)),
         (leaf(1, 1, 4, 3, 3), leaf(1, 1, 2, 2, 2))),
        (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, dilation=2),
         (leaf(1, 2, 3, 3), leaf(2, 1, 2, 2))),
        (lambda x: F.fold(x, (5, 4), (2, 2), dilation=(1, 2), padding=1, stride=2),
         (leaf(1, 8, 6),)),
        (lambda x: F.avg_pool2d(x, 3, 2, 1), (leaf(1, 2, 5, 5),)),
    ]
    for fn, args in cases:
        assert tgrad.autograd.gradcheck(fn, args)
        assert tgrad.autograd.gradgradcheck(fn, args)


def test_fold_of_float8_raises_pytorchs_col2im_error():
    x = tgrad.ones(1, 8, 4).to(tgrad.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="\"col2im_out_cpu\" not implemented for "
                                                  "'Float8_e4m3fn'"):
        F.fold(x, (3, 3), 2)


def _np_conv1d(x, w, b, stride, padding, dilation, groups):
    """Direct float64 loops (N, C, L) * (O, C/G, k) -> (N, O, out)."""
    n, c, length = x.shape
    o, cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    out = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((n, o, out))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for t in range(out):
            start = t * stride
            win = xp[:, g * cg:(g + 1) * cg, start:start + dilation * (k - 1) + 1:dilation]
            y[:, oc, t] = (win * w[oc]).sum((1, 2))
    return y if b is None else y + b[None, :, None]


def test_convolution_is_one_node_of_pytorchs_name_with_its_saved_values():
    # PyTorch 2.13: conv1d/2d/3d end in ConvolutionBackward0, edges (input, weight, bias)
    # with a (None, 0) slot for a missing bias; an unbatched input adds SqueezeBackward1
    rng = np.random.default_rng(3)
    x = tgrad.tensor(rng.standard_normal((2, 4, 9)), dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((6, 2, 3)), dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(6), dtype=tgrad.float64, requires_grad=True)
    y = F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2)
    node = y.grad_fn
    assert node.name() == "ConvolutionBackward0" == type(node).__name__
    assert [n.variable for n, _ in node.next_functions] == [x, w, b]
    assert node._saved_input is x and node._saved_weight is w
    assert (node._saved_stride, node._saved_padding, node._saved_dilation, node._saved_groups,
            node._saved_transposed, node._saved_output_padding,
            node._saved_bias_sym_sizes_opt) == ((2,), (1,), (2,), 2, False, (0,), (6,))
    nb = F.conv2d(x.reshape(2, 4, 3, 3), w.reshape(6, 2, 3, 1), groups=2).grad_fn
    assert nb.name() == "ConvolutionBackward0" and nb.next_functions[2] == (None, 0)
    assert F.conv3d(x.reshape(2, 4, 3, 3, 1), w.reshape(6, 2, 3, 1, 1),
                    groups=2).grad_fn.name() == "ConvolutionBackward0"
    un = F.conv1d(x[0], w, b, groups=2).grad_fn
    assert un.name() == "SqueezeBackward1"
    assert un.next_functions[0][0].name() == "ConvolutionBackward0"
    # values and gradients against direct float64 loops (the gradient of sum(y r) is the
    # convolution's adjoint: checked by finite differences below, by hand for the bias)
    ref = _np_conv1d(x.detach().numpy(), w.detach().numpy(), b.detach().numpy(), 2, 1, 2, 2)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    r = rng.standard_normal(y.shape)
    (gb,) = tgrad.autograd.grad((y * tgrad.tensor(r)).sum(), b)
    np.testing.assert_allclose(gb.numpy(), r.sum((0, 2)), rtol=1e-13)


@pytest.mark.parametrize("op,xs,ws,kw", [
    (F.conv1d, (2, 4, 7), (4, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    (F.conv1d, (3, 5), (2, 3, 2), dict(padding="same")),
    (F.conv2d, (1, 2, 4, 5), (3, 2, 2, 3), dict(stride=(2, 1), padding=(1, 0))),
    (F.conv3d, (1, 2, 3, 3, 3), (2, 1, 2, 2, 2), dict(padding=1, groups=2)),
])
def test_convolution_node_gradcheck_and_gradgradcheck(op, xs, ws, kw):
    # the node's backward (matmuls and col2im of tgrad ops) against finite differences, and
    # differentiated again (create_graph rebuilds the columns in x's graph)
    rng = np.random.default_rng(4)
    x = tgrad.tensor(rng.standard_normal(xs), dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(ws), dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(ws[0]), dtype=tgrad.float64, requires_grad=True)
    fn = lambda a, c, d: op(a, c, d, **kw)  # noqa: E731
    assert tgrad.autograd.gradcheck(fn, (x, w, b))
    assert tgrad.autograd.gradgradcheck(fn, (x, w, b))


def test_unfold_of_an_empty_non_batch_dim_raises_pytorchs_error():
    # PyTorch's im2col takes a 0 batch size only; C, H or W of 0 is its RuntimeError (the
    # backward used to divide by C = 0)
    for shape in ((2, 0, 7, 8), (2, 3, 0, 8), (0, 7, 8)):
        with pytest.raises(RuntimeError, match=r"Expected 3D or 4D \(batch mode\) tensor with "
                                               r"possibly 0 batch size and other non-zero "
                                               r"dimensions for input, but got: \["):
            F.unfold(tgrad.zeros(shape, requires_grad=True), 3)
    assert F.unfold(tgrad.zeros(0, 2, 4, 4), 3).shape == (0, 18, 4)


def test_unfold_and_fold_are_pytorchs_im2col_col2im_nodes():
    # PyTorch 2.13: unfold is one Im2ColBackward0 node, fold one Col2ImBackward0 (batched or
    # not), with the geometry as _saved_kernel_size/_dilation/_padding/_stride
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 5, 4))
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=2)
    y = F.unfold(x, **kw)
    node = y.grad_fn
    assert node.name() == "Im2ColBackward0" and node.next_functions[0][0].variable is x
    assert (node._saved_kernel_size, node._saved_dilation, node._saved_padding,
            node._saved_stride, node._saved_self_sym_argsize_minus_2,
            node._saved_self_sym_argsize_minus_1) == ((2, 3), (1, 2), (1, 1), (2, 2), 5, 4)
    # values: column (c, ky, kx), block (by, bx) = padded x[c, 2 by + ky, 2 bx + 2 kx]
    ap = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.stack([ap[:, :, ky:ky + 5:2, 2 * kx:2 * kx + 2:2]
                    for ky in range(2) for kx in range(3)], 2).reshape(2, 18, -1)
    np.testing.assert_array_equal(y.detach().numpy(), ref)
    z = F.fold(y, (5, 4), **kw)
    assert z.grad_fn.name() == "Col2ImBackward0" and z.grad_fn._saved_padding == (1, 1)
    assert F.unfold(x[0], 2).grad_fn.name() == "Im2ColBackward0"
    assert F.fold(y[0], (5, 4), **kw).grad_fn.name() == "Col2ImBackward0"
    # fold is unfold's adjoint: <fold(c), g> = <c, unfold(g)>, so fold's gradient is unfold(g)
    c = tgrad.tensor(rng.standard_normal((2, 18, 3)), dtype=tgrad.float64, requires_grad=True)
    g = rng.standard_normal((2, 3, 5, 4))
    (gc,) = tgrad.autograd.grad(F.fold(c, (5, 4), **kw), c, tgrad.tensor(g))
    gp = np.pad(g, ((0, 0), (0, 0), (1, 1), (1, 1)))
    np.testing.assert_array_equal(gc.numpy(), np.stack(
        [gp[:, :, ky:ky + 5:2, 2 * kx:2 * kx + 2:2] for ky in range(2) for kx in range(3)],
        2).reshape(2, 18, -1))
    small = tgrad.tensor(a[:1, :2], dtype=tgrad.float64, requires_grad=True)
    for fn, arg in ((lambda t: F.unfold(t, **kw), small),
                    (lambda t: F.fold(t, (5, 4), **kw), c[:1, :12].detach().requires_grad_()),
                    (lambda t: F.unfold(t, 2), small[0])):
        assert tgrad.autograd.gradcheck(fn, (arg,)) and tgrad.autograd.gradgradcheck(fn, (arg,))


def test_conv_transpose_is_pytorchs_convolution_node_and_conv_adjoint():
    # PyTorch 2.13: conv_transpose1d/2d/3d end in ConvolutionBackward0 with transposed=True;
    # _saved_bias_sym_sizes_opt is (0,) without a bias (conv's too)
    rng = np.random.default_rng(6)
    y = tgrad.tensor(rng.standard_normal((2, 4, 4)), dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((4, 3, 3)), dtype=tgrad.float64, requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(6), dtype=tgrad.float64, requires_grad=True)
    kw = dict(stride=2, padding=1, dilation=2, groups=2)
    t = F.conv_transpose1d(y, w, None, output_padding=1, **kw)
    node = t.grad_fn
    assert node.name() == "ConvolutionBackward0" == type(node).__name__
    assert node.next_functions[0][0].variable is y and node.next_functions[1][0].variable is w
    assert node.next_functions[2] == (None, 0)
    assert (node._saved_stride, node._saved_padding, node._saved_output_padding,
            node._saved_dilation, node._saved_groups, node._saved_transposed,
            node._saved_bias_sym_sizes_opt) == ((2,), (1,), (1,), (2,), 2, True, (0,))
    assert F.conv1d(t, w, groups=2).grad_fn._saved_bias_sym_sizes_opt == (0,)
    assert F.conv_transpose1d(y, w, b, output_padding=1, **kw).grad_fn \
        ._saved_bias_sym_sizes_opt == (6,)
    # conv_transpose is conv's adjoint in the input: <T(y), x> = <y, conv(x)> (NumPy loops)
    assert t.shape == (2, 6, 10)
    x = rng.standard_normal((2, 6, 10))
    conv = _np_conv1d(x, w.detach().numpy(), None, 2, 1, 2, 2)
    np.testing.assert_allclose((t.detach().numpy() * x).sum(),
                               (y.detach().numpy() * conv).sum(), rtol=1e-12)
    assert F.conv_transpose2d(y.reshape(2, 4, 2, 2), w.reshape(4, 3, 3, 1)).grad_fn.name() \
        == "ConvolutionBackward0"
    assert F.conv_transpose3d(y.reshape(2, 4, 2, 2, 1), w.reshape(4, 3, 3, 1, 1)).grad_fn \
        .name() == "ConvolutionBackward0"


@pytest.mark.parametrize("op,xs,ws,kw", [
    (F.conv_transpose1d, (2, 4, 3), (4, 1, 3),
     dict(stride=2, padding=1, output_padding=1, dilation=2, groups=2)),
    (F.conv_transpose1d, (4, 3), (4, 2, 2), {}),
    (F.conv_transpose2d, (1, 2, 3, 2), (2, 2, 2, 3), dict(stride=(2, 1), padding=(1, 0))),
    (F.conv_transpose3d, (1, 2, 2, 2, 2), (2, 1, 2, 2, 2), dict(stride=2, padding=1)),
])
def test_conv_transpose_node_gradcheck_and_gradgradcheck(op, xs, ws, kw):
    rng = np.random.default_rng(7)
    x = tgrad.tensor(rng.standard_normal(xs), dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(rng.standard_normal(ws), dtype=tgrad.float64, requires_grad=True)
    groups = kw.get("groups", 1)
    b = tgrad.tensor(rng.standard_normal(ws[1] * groups), dtype=tgrad.float64,
                     requires_grad=True)
    fn = lambda a, c, d: op(a, c, d, **kw)  # noqa: E731
    assert tgrad.autograd.gradcheck(fn, (x, w, b))
    assert tgrad.autograd.gradgradcheck(fn, (x, w, b))


def test_avg_pool_is_pytorchs_avg_pool_node():
    # PyTorch 2.13: avg_pool2d/3d are one AvgPool2DBackward0 / AvgPool3DBackward0 node on
    # the input as given (unbatched too); avg_pool1d is avg_pool2d of x.unsqueeze(-2), squeezed
    rng = np.random.default_rng(8)
    a = rng.standard_normal((2, 3, 5, 6))
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    y = F.avg_pool2d(x, 2, 1, 1, True, False, 3)
    node = y.grad_fn
    assert node.name() == "AvgPool2DBackward0" and node.next_functions[0][0].variable is x
    assert (node._saved_kernel_size, node._saved_stride, node._saved_padding,
            node._saved_ceil_mode, node._saved_count_include_pad,
            node._saved_divisor_override) == ((2, 2), (1, 1), (1, 1), True, False, 3)
    assert node._saved_self is x and F.avg_pool2d(x, 2).grad_fn._saved_stride == ()
    assert F.avg_pool2d(x[0], 2).grad_fn.name() == "AvgPool2DBackward0"
    assert F.avg_pool3d(x, 2).grad_fn.name() == "AvgPool3DBackward0"
    p1 = F.avg_pool1d(x[0], 2).grad_fn
    assert p1.name() == "SqueezeBackward1"
    assert p1.next_functions[0][0].name() == "AvgPool2DBackward0"
    # values and gradient against NumPy: 2 x 2 windows, stride 2 (each x in one window)
    z = F.avg_pool2d(x, 2)
    ref = a[:, :, :4, :].reshape(2, 3, 2, 2, 3, 2).mean((3, 5))
    np.testing.assert_allclose(z.detach().numpy(), ref, rtol=1e-14)
    g = rng.standard_normal((2, 3, 2, 3))
    (gx,) = tgrad.autograd.grad(z, x, tgrad.tensor(g))
    want = np.zeros_like(a)
    want[:, :, :4, :] = np.repeat(np.repeat(g, 2, 2), 2, 3) / 4
    np.testing.assert_allclose(gx.numpy(), want, rtol=1e-14)
    # create_graph: the gradient is in x's graph (its derivative in x is 0, PyTorch's)
    (gg,) = tgrad.autograd.grad(F.avg_pool2d(x, 3, 2, 1).sum(), x, create_graph=True)
    (h,) = tgrad.autograd.grad(gg.sum(), x)
    assert gg.requires_grad and not h.numpy().any()
    small = tgrad.tensor(a[:1, :2, :4, :4], dtype=tgrad.float64, requires_grad=True)
    for fn in (lambda t: F.avg_pool2d(t, (2, 3), (2, 1), 1, count_include_pad=False),
               lambda t: F.avg_pool2d(t[0], 3, 2, 1, ceil_mode=True, divisor_override=2),
               lambda t: F.avg_pool3d(t, 2, 1, 1, ceil_mode=True),
               lambda t: F.avg_pool1d(t[0, 0], 3, 2, 1)):
        assert tgrad.autograd.gradcheck(fn, (small,)) and tgrad.autograd.gradgradcheck(fn, (small,))


def test_max_pool_is_pytorchs_max_pool_with_indices_node():
    # PyTorch 2.13: max_pool2d/3d are one MaxPool2DWithIndicesBackward0 /
    # MaxPool3DWithIndicesBackward0 node (the indices as _saved_result1); max_pool1d is the
    # 2-d node on x.unsqueeze(-2), squeezed
    a = np.random.default_rng(9).standard_normal((2, 3, 5, 6))
    a[0, 0, 1, 1] = a[0, 0, 1, 2] = np.nan  # a window with NaNs: the last NaN wins
    x = tgrad.tensor(a, dtype=tgrad.float64, requires_grad=True)
    y, idx = F.max_pool2d(x, 2, 1, 1, 2, True, return_indices=True)
    node = y.grad_fn
    assert node.name() == "MaxPool2DWithIndicesBackward0" and node._saved_self is x
    assert (node._saved_kernel_size, node._saved_stride, node._saved_padding,
            node._saved_dilation, node._saved_ceil_mode) == ((2, 2), (1, 1), (1, 1), (2, 2),
                                                              True)
    np.testing.assert_array_equal(node._saved_result1.numpy(), idx.numpy())
    assert F.max_pool2d(x, 2).grad_fn._saved_stride == ()
    assert F.max_pool2d(x[0], 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.max_pool3d(x, 2).grad_fn.name() == "MaxPool3DWithIndicesBackward0"
    p1 = F.max_pool1d(x[0], 2).grad_fn
    assert p1.name() == "SqueezeBackward1"
    assert p1.next_functions[0][0].name() == "MaxPool2DWithIndicesBackward0"
    # overlapping 3 x 3 windows, stride 1: each window's g added at its maximum (NumPy)
    b = a[1]
    z, zi = F.max_pool2d(x[1], 3, 1, 1, return_indices=True)
    g = np.random.default_rng(10).standard_normal(z.shape)
    (gx,) = tgrad.autograd.grad(z, x, tgrad.tensor(g))
    bp = np.pad(b, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    want = np.zeros_like(b)
    for ch in range(3):
        for i in range(5):
            for j in range(6):
                win = bp[ch, i:i + 3, j:j + 3]
                r, q = np.unravel_index(np.argmax(win), (3, 3))
                assert z[ch, i, j].item() == win[r, q]
                assert zi[ch, i, j].item() == (i + r - 1) * 6 + (j + q - 1)
                want[ch, i + r - 1, j + q - 1] += g[ch, i, j]
    np.testing.assert_allclose(gx.numpy()[1], want, rtol=1e-14)
    # create_graph: the gradient is in x's graph (its derivative in x is 0, PyTorch's)
    (gg,) = tgrad.autograd.grad(F.max_pool2d(x[1], 2).sum(), x, create_graph=True)
    (h,) = tgrad.autograd.grad(gg.sum(), x)
    assert gg.requires_grad and not h.numpy().any()
    small = tgrad.tensor(a[1:, :2, :4, :4], dtype=tgrad.float64, requires_grad=True)
    for fn in (lambda t: F.max_pool2d(t, (2, 3), (2, 1), 1, dilation=(1, 2)),
               lambda t: F.max_pool2d(t[0], 3, 2, 1, ceil_mode=True),
               lambda t: F.max_pool3d(t, 2, 1, 1, ceil_mode=True),
               lambda t: F.max_pool1d(t[0, 0], 3, 2, 1)):
        assert tgrad.autograd.gradcheck(fn, (small,)) and tgrad.autograd.gradgradcheck(fn, (small,))


# PyTorch 2.13's nodes of the norms (out.grad_fn.name() and its next_functions' names, for
# float64 leaves): batch_norm (train and eval) and group_norm are one native node with edges
# (input, weight, bias), None where no weight / bias is given; instance_norm is that
# batch_norm node on the (1, N C, *) view, viewed back.
_NORM_NODES = [
    ("batch_norm_train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     "NativeBatchNormBackward0", ["AccumulateGrad"] * 3),
    ("batch_norm_train_plain", lambda x, w, b: F.batch_norm(
        x, _t(np.zeros(3)), _t(np.ones(3)), training=True),
     "NativeBatchNormBackward0", ["AccumulateGrad", None, None]),
    ("batch_norm_eval", lambda x, w, b: F.batch_norm(x, _t(np.zeros(3)), _t(np.ones(3)), w, b),
     "NativeBatchNormBackward0", ["AccumulateGrad"] * 3),
    ("batch_norm_2d_input", lambda x, w, b: F.batch_norm(x[:, :, 0, 0], None, None, w, b,
                                                         training=True),
     "NativeBatchNormBackward0", ["SelectBackward0", "AccumulateGrad", "AccumulateGrad"]),
    ("group_norm", lambda x, w, b: F.group_norm(x.reshape(2, 3, 4), 3, w * 2.0, b),
     "NativeGroupNormBackward0", ["ViewBackward0", "MulBackward0", "AccumulateGrad"]),
    ("group_norm_plain", lambda x, w, b: F.group_norm(x, 3),
     "NativeGroupNormBackward0", ["AccumulateGrad", None, None]),
    ("instance_norm", lambda x, w, b: F.instance_norm(x, None, None, w, b),
     "ViewBackward0", ["NativeBatchNormBackward0"]),
    ("instance_norm_eval", lambda x, w, b: F.instance_norm(
        x, _t(np.zeros(3)), _t(np.ones(3)), use_input_stats=False),
     "ViewBackward0", ["NativeBatchNormBackward0"]),
]


@pytest.mark.parametrize("name,fn,node,edges", _NORM_NODES, ids=[c[0] for c in _NORM_NODES])
def test_norm_nodes_are_pytorchs(name, fn, node, edges):
    rng = np.random.default_rng(0)
    x = _t(rng.standard_normal((2, 3, 2, 2)), requires_grad=True)
    w, b = _t(rng.standard_normal(3), requires_grad=True), _t(rng.standard_normal(3),
                                                              requires_grad=True)
    out = fn(x, w, b)
    assert out.grad_fn.name() == node
    assert [None if f is None else f.name() for f, _ in out.grad_fn.next_functions] == edges
    if name == "instance_norm":  # batch_norm's edges: the view, the repeated parameters
        # (PyTorch's RepeatBackward0; tgrad's repeat of a vector is an expand + reshape)
        inner = out.grad_fn.next_functions[0][0]
        assert [f.name() for f, _ in inner.next_functions][0] == "ViewBackward0"
        assert len(inner.next_functions) == 3


def _np_bn_train(x, w, b, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shape = (x.shape[1],) + (1,) * (x.ndim - 2)
    mean = x.mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    return y * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_batch_norm_one_node_values_and_gradients_against_numpy(layout):
    # forward against NumPy float64; the gradients of sum(y * c) against central
    # differences of the NumPy forward (x, weight, bias); the saved statistics are the
    # batch's mean and 1 / sqrt(biased var + eps) (PyTorch's save_mean / save_invstd)
    rng = np.random.default_rng(5)
    xn = rng.standard_normal((3, 2, 4)) * 2.0 + 1.5
    if layout == "transposed":  # a non-contiguous input: the result is C-contiguous
        xn = np.ascontiguousarray(xn.transpose(2, 1, 0)).transpose(2, 1, 0)
    wn, bn, cn = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal((3, 2, 4))
    x = _t(xn, requires_grad=True)
    if layout == "transposed":
        x = _t(np.ascontiguousarray(xn.transpose(2, 1, 0)), requires_grad=True)
        xin = x.permute(2, 1, 0)
    else:
        xin = x
    w, b = _t(wn, requires_grad=True), _t(bn, requires_grad=True)
    y = F.batch_norm(xin, None, None, w, b, training=True)
    assert y.is_contiguous()
    np.testing.assert_allclose(y.detach().numpy(), _np_bn_train(xn, wn, bn), rtol=1e-12,
                               atol=1e-12)
    node = y.grad_fn
    np.testing.assert_allclose(node._saved_result1.numpy(), xn.mean(axis=(0, 2)), rtol=1e-12)
    np.testing.assert_allclose(node._saved_result2.numpy(),
                               1.0 / np.sqrt(xn.var(axis=(0, 2)) + 1e-5), rtol=1e-12)
    assert node._saved_training is True and node._saved_eps == 1e-5
    (y * _t(cn)).sum().backward()

    def numeric(which):
        args = [xn, wn, bn]
        base = args[which]
        out = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            hi, lo = base.copy(), base.copy()
            hi[i] += 1e-6
            lo[i] -= 1e-6
            fa = [hi if k == which else a for k, a in enumerate(args)]
            fb = [lo if k == which else a for k, a in enumerate(args)]
            out[i] = ((_np_bn_train(*fa) - _np_bn_train(*fb)) * cn).sum() / 2e-6
        return out

    gx = x.grad.numpy().transpose(2, 1, 0) if layout == "transposed" else x.grad.numpy()
    np.testing.assert_allclose(gx, numeric(0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w.grad.numpy(), numeric(1), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.grad.numpy(), numeric(2), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_one_node_norms_gradcheck_and_gradgradcheck(training, affine):
    from tgrad.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(6)
    x = _t(rng.standard_normal((3, 4, 3)), requires_grad=True)
    params = (_t(rng.standard_normal(4), requires_grad=True),
              _t(rng.standard_normal(4), requires_grad=True)) if affine else ()
    rm, rv = _t(rng.standard_normal(4)), _t(rng.uniform(0.5, 2.0, 4))
    fns = [lambda x, *p: F.batch_norm(x, rm, rv, *p, training=training),
           lambda x, *p: F.instance_norm(x, rm, rv, *p, use_input_stats=training)]
    if training:
        fns.append(lambda x, *p: F.group_norm(x, 2, *p))
    for fn in fns:
        assert gradcheck(fn, (x, *params))
        assert gradgradcheck(fn, (x, *params))


def test_batch_norm_refuses_running_statistics_that_require_grad():
    # PyTorch's native_batch_norm is not differentiable with respect to them
    x = _t(np.ones((2, 3)))
    rm, rv = _t(np.zeros(3), requires_grad=True), _t(np.ones(3))
    for training in (True, False):
        _raises(lambda t=training: F.batch_norm(x, rm, rv, training=t), RuntimeError,
                "The function 'native_batch_norm' is not differentiable with respect to "
                "argument 'running_mean'. This input cannot have requires_grad True.")
    with tgrad.no_grad():  # outside grad mode they are plain statistics
        assert F.batch_norm(x, rm, rv).shape == (2, 3)


def test_functional_batch_norm_refuses_momentum_none():
    # PyTorch's TypeError: F.batch_norm's momentum is a float (the modules turn their None
    # into 1 / num_batches_tracked); None must not silently freeze the running statistics
    x = _t(np.arange(6.0).reshape(2, 3))
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    _raises(lambda: F.batch_norm(x, rm, rv, training=True, momentum=None), TypeError,
            "batch_norm(): argument 'momentum' (position 7) must be float, not NoneType")
    np.testing.assert_array_equal(rm.numpy(), np.zeros(3))


@pytest.mark.parametrize("bias_dtype", ["float32", "float16"])
@pytest.mark.parametrize("op", ["batch_norm_train", "batch_norm_eval", "layer_norm"])
def test_norm_bias_gradient_of_a_half_input_without_weight_rounds_once(op, bias_dtype):
    # db = sum(g) over the non-channel (batch) dims, accumulated in float32 and rounded
    # once to the bias's dtype: a float32 bias of a float16 input keeps float32 precision
    rng = np.random.default_rng(3)
    xn = rng.standard_normal((64, 3, 5)).astype(np.float16)
    gn = rng.standard_normal((64, 3, 5)).astype(np.float16)
    n = 5 if op == "layer_norm" else 3
    x = tgrad.tensor(xn, requires_grad=True)
    b = tgrad.zeros(n, dtype=getattr(tgrad, bias_dtype), requires_grad=True)
    if op == "layer_norm":
        y = F.layer_norm(x, (5,), None, b)
    elif op == "batch_norm_train":
        y = F.batch_norm(x, None, None, None, b, training=True)
    else:
        y = F.batch_norm(x, tgrad.zeros(3), tgrad.ones(3), None, b, training=False)
    y.backward(tgrad.tensor(gn))
    ref = gn.astype(np.float64).sum(axis=(0, 1) if op == "layer_norm" else (0, 2))
    assert b.grad.dtype == b.dtype
    np.testing.assert_allclose(b.grad.numpy().astype(np.float64), ref,
                               rtol=1e-6 if bias_dtype == "float32" else 1e-3, atol=1e-5)


def test_group_norm_values_and_saved_statistics_against_numpy():
    rng = np.random.default_rng(7)
    xn, wn, bn = rng.standard_normal((2, 6, 3)), rng.standard_normal(6), rng.standard_normal(6)
    x = _t(xn, requires_grad=True)
    y = F.group_norm(x, 3, _t(wn, requires_grad=True), _t(bn))
    g = xn.reshape(2, 3, 6)
    mean, var = g.mean(-1), g.var(-1)
    ref = ((g - mean[..., None]) / np.sqrt(var[..., None] + 1e-5)).reshape(2, 6, 3)
    np.testing.assert_allclose(y.detach().numpy(), ref * wn[:, None] + bn[:, None], rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(y.grad_fn._saved_result1.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(y.grad_fn._saved_result2.numpy(), 1.0 / np.sqrt(var + 1e-5),
                               rtol=1e-12)
    assert y.grad_fn._saved_group == 3 and y.grad_fn.next_functions[2] == (None, 0)


# PyTorch 2.13's adaptive pooling nodes: one AdaptiveAvgPool2D/3DBackward0 or
# AdaptiveMaxPool2D/3DBackward0 node on the input; the 1-d forms are the 2-d node on
# input.unsqueeze(-2), squeezed (SqueezeBackward1).
_ADAPTIVE_NODES = [
    ("avg1d", lambda x: F.adaptive_avg_pool1d(x.reshape(2, 3, 4), 3),
     "SqueezeBackward1", "AdaptiveAvgPool2DBackward0"),
    ("avg2d", lambda x: F.adaptive_avg_pool2d(x, (3, 2)), "AdaptiveAvgPool2DBackward0",
     "AccumulateGrad"),
    ("avg3d", lambda x: F.adaptive_avg_pool3d(x, (1, 3, 2)), "AdaptiveAvgPool3DBackward0",
     "AccumulateGrad"),
    ("area", lambda x: F.interpolate(x, size=(3, 3), mode="area"),
     "AdaptiveAvgPool2DBackward0", "AccumulateGrad"),
    # to one element: PyTorch 2.14's mean over the pooled dims, keepdim (MeanBackward1)
    ("avg1d_to_1", lambda x: F.adaptive_avg_pool1d(x.reshape(2, 3, 4), 1),
     "SqueezeBackward1", "MeanBackward1"),
    ("avg2d_to_1x1", lambda x: F.adaptive_avg_pool2d(x, 1), "MeanBackward1",
     "AccumulateGrad"),
    ("avg2d_to_none_1", lambda x: F.adaptive_avg_pool2d(x[:, :, :1], (None, 1)),
     "MeanBackward1", "SliceBackward0"),
    ("avg3d_to_1", lambda x: F.adaptive_avg_pool3d(x, (1, 1, 1)), "MeanBackward1",
     "AccumulateGrad"),
    ("area_to_1x1", lambda x: F.interpolate(x, size=(1, 1), mode="area"),
     "MeanBackward1", "AccumulateGrad"),
    ("max1d", lambda x: F.adaptive_max_pool1d(x.reshape(2, 3, 4), 3),
     "SqueezeBackward1", "AdaptiveMaxPool2DBackward0"),
    ("max2d", lambda x: F.adaptive_max_pool2d(x, (3, 2)), "AdaptiveMaxPool2DBackward0",
     "AccumulateGrad"),
    ("max2d_indices", lambda x: F.adaptive_max_pool2d(x, (3, 2), return_indices=True)[0],
     "AdaptiveMaxPool2DBackward0", "AccumulateGrad"),
    ("max3d", lambda x: F.adaptive_max_pool3d(x, (1, 3, 2)), "AdaptiveMaxPool3DBackward0",
     "AccumulateGrad"),
]


@pytest.mark.parametrize("name,fn,node,edge", _ADAPTIVE_NODES,
                         ids=[c[0] for c in _ADAPTIVE_NODES])
def test_adaptive_pool_nodes_are_pytorchs(name, fn, node, edge):
    x = _t(np.random.default_rng(0).standard_normal((2, 3, 2, 2)), requires_grad=True)
    out = fn(x)
    assert out.grad_fn.name() == node
    assert [f.name() for f, _ in out.grad_fn.next_functions][0] == edge


def _np_windows(size, out):
    return [(i * size // out, -(-(i + 1) * size // out)) for i in range(out)]


def test_adaptive_pool_values_and_gradients_against_numpy():
    # by hand: each output is its window's mean / first maximum; d mean = 1 / window size
    # at each element of the window, d max = 1 at the maximum (summed over the windows)
    rng = np.random.default_rng(3)
    xn = rng.permutation(2 * 5 * 7).reshape(1, 2, 5, 7).astype(np.float64)  # distinct
    gn = rng.standard_normal((1, 2, 3, 4))
    avg, mx = np.zeros((1, 2, 3, 4)), np.zeros((1, 2, 3, 4))
    gavg, gmax = np.zeros_like(xn), np.zeros_like(xn)
    idx = np.zeros((1, 2, 3, 4), np.int64)
    for c in range(2):
        for i, (h0, h1) in enumerate(_np_windows(5, 3)):
            for j, (w0, w1) in enumerate(_np_windows(7, 4)):
                win = xn[0, c, h0:h1, w0:w1]
                avg[0, c, i, j] = win.mean()
                gavg[0, c, h0:h1, w0:w1] += gn[0, c, i, j] / win.size
                r, q = np.unravel_index(np.argmax(win), win.shape)
                mx[0, c, i, j] = win[r, q]
                idx[0, c, i, j] = (h0 + r) * 7 + w0 + q
                gmax[0, c, h0 + r, w0 + q] += gn[0, c, i, j]
    for fn, ref, gref in ((lambda x: F.adaptive_avg_pool2d(x, (3, 4)), avg, gavg),
                          (lambda x: F.adaptive_max_pool2d(x, (3, 4)), mx, gmax)):
        x = _t(xn, requires_grad=True)
        y = fn(x)
        np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12)
        y.backward(_t(gn))
        np.testing.assert_allclose(x.grad.numpy(), gref, rtol=1e-12, atol=1e-15)
    y, i = F.adaptive_max_pool2d(_t(xn, requires_grad=True), (3, 4), return_indices=True)
    assert i.tolist() == idx.tolist() and not i.requires_grad
    assert y.grad_fn._saved_result1.tolist() == idx.tolist()


def test_adaptive_pools_gradcheck_and_gradgradcheck():
    from tgrad.autograd import gradcheck, gradgradcheck
    rng = np.random.default_rng(4)
    for fn, shape in ((lambda x: F.adaptive_avg_pool1d(x, 3), (2, 5)),
                      (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 3, 4)),
                      (lambda x: F.adaptive_avg_pool3d(x, (2, 1, 2)), (1, 3, 2, 3)),
                      (lambda x: F.adaptive_max_pool1d(x, 3), (2, 5)),
                      (lambda x: F.adaptive_max_pool2d(x, (2, 3)), (1, 2, 3, 4)),
                      (lambda x: F.adaptive_max_pool3d(x, (2, 1, 2)), (1, 3, 2, 3))):
        x = _t(rng.permutation(math.prod(shape)).reshape(shape) * 0.1, requires_grad=True)
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_fractional_max_pool_is_one_node_with_gradients_by_hand(n, batched):
    # PyTorch's FractionalMaxPool2D/3DBackward0 on the input as given (unbatched too; the
    # indices get no edge); d x = g added at each returned index (by hand, np.add.at)
    rng = np.random.default_rng(n)
    side, planes = (5, (2, 3)) if n == 2 else (4, (1, 2))  # (small: gradgradcheck)
    shape = (planes if batched else planes[1:]) + (side,) * n
    xn = rng.permutation(math.prod(shape)).reshape(shape) * 0.1  # distinct values
    x = _t(xn, requires_grad=True)
    samples = _t(np.full((planes[0] if batched else 1, planes[1], n), 0.3))
    pool = F.fractional_max_pool2d if n == 2 else F.fractional_max_pool3d
    y, idx = pool(x, 2, output_size=(3,) * n, return_indices=True, _random_samples=samples)
    assert y.grad_fn.name() == f"FractionalMaxPool{n}DBackward0"
    assert [f.name() for f, _ in y.grad_fn.next_functions] == ["AccumulateGrad"]
    flat_x, flat_i = xn.reshape(-1, side ** n), idx.numpy().reshape(-1, 3 ** n)
    np.testing.assert_array_equal(y.detach().numpy().reshape(-1, 3 ** n),
                                  np.take_along_axis(flat_x, flat_i, 1))
    c = rng.standard_normal(tuple(y.shape))
    y.backward(_t(c))
    gref = np.zeros_like(flat_x)
    for p in range(flat_x.shape[0]):
        np.add.at(gref[p], flat_i[p], c.reshape(-1, 3 ** n)[p])
    np.testing.assert_allclose(x.grad.numpy().reshape(gref.shape), gref, rtol=1e-12)
    from tgrad.autograd import gradcheck, gradgradcheck
    fn = lambda t: pool(t, 2, output_size=(3,) * n, _random_samples=samples)  # noqa: E731
    assert gradcheck(fn, (x,)) and gradgradcheck(fn, (x,))


def test_layer_norm_node_keeps_pytorchs_none_edges():
    # NativeLayerNormBackward0's edges are (input, weight, bias), (None, 0) where absent
    x = _t(np.ones((2, 3)), requires_grad=True)
    w = _t(np.ones(3), requires_grad=True)
    assert [None if f is None else f.name() for f, _ in F.layer_norm(x, (3,)).grad_fn
            .next_functions] == ["AccumulateGrad", None, None]
    assert [None if f is None else f.name() for f, _ in F.layer_norm(x, (3,), w).grad_fn
            .next_functions] == ["AccumulateGrad", "AccumulateGrad", None]


@pytest.mark.parametrize("n,shape", [(1, (2, 3, 8)), (2, (3, 4, 4)), (2, (1, 2, 4, 6)),
                                     (3, (1, 2, 4, 4, 4))])
def test_max_unpool_is_one_node_with_gradients_by_hand(n, shape):
    # PyTorch's MaxUnpool2D/3DBackward0 on the input as given (the indices get no edge);
    # max_unpool1d is the 2-d node on unsqueeze(-2), squeezed. y = zeros with x written at
    # the indices; dx = g read there (by hand with NumPy)
    rng = np.random.default_rng(len(shape))
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[n - 1]
    _, idx = pool(_t(rng.standard_normal(shape)), 2, return_indices=True)
    xn = rng.standard_normal(tuple(idx.shape))
    x = _t(xn, requires_grad=True)
    y = unpool(x, idx, 2)
    node = "SqueezeBackward1" if n == 1 else f"MaxUnpool{n}DBackward0"
    assert y.grad_fn.name() == node
    inner = y.grad_fn.next_functions[0][0] if n == 1 else y.grad_fn
    assert inner.name() == ("MaxUnpool2DBackward0" if n == 1 else node)
    assert len(inner.next_functions) == 1
    lead = xn.shape[:xn.ndim - n]
    flat_i = idx.numpy().reshape(lead + (-1,))
    ref = np.zeros(lead + (math.prod(y.shape[y.ndim - n:]),))
    np.put_along_axis(ref, flat_i, xn.reshape(lead + (-1,)), -1)
    np.testing.assert_array_equal(y.detach().numpy().reshape(ref.shape), ref)
    c = rng.standard_normal(tuple(y.shape))
    y.backward(_t(c))
    np.testing.assert_array_equal(x.grad.numpy().reshape(flat_i.shape),
                                  np.take_along_axis(c.reshape(ref.shape), flat_i, -1))
    from tgrad.autograd import gradcheck, gradgradcheck
    assert gradcheck(lambda t: unpool(t, idx, 2), (x,))
    assert gradgradcheck(lambda t: unpool(t, idx, 2), (x,))


def test_conv_family_and_batch_norm_on_interpreted_cuda_match_the_cpu():
    # the cuda path (Im2Col's gather, Col2Im's index_add, batch_norm in tgrad ops) against
    # the NumPy one (strided im2col/col2im, the fused batch_norm primitives) in float64:
    # values, gradients and a double backward of conv2d (create_graph)
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad
import tgrad.nn.functional as F
rng = np.random.default_rng(5)
cases = [
    (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
     [(2, 3, 6, 5), (4, 3, 3, 2), (4,)]),
    (lambda x, w: F.conv1d(x, w, padding=2, groups=3), [(2, 3, 7), (3, 1, 3)]),
    (lambda x, w: F.conv3d(x, w, padding=1), [(1, 2, 4, 4, 3), (2, 2, 2, 3, 2)]),
    (lambda x: F.unfold(x, (2, 3), padding=1, stride=2), [(2, 2, 5, 6)]),
    (lambda c: F.fold(c, (4, 5), (2, 2)), [(2, 8, 12)]),
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), [(1, 2, 3, 3), (2, 3, 3, 3)]),
    (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     [(3, 4, 5, 2), (4,), (4,)]),
]
out = {}
for dev in ("cpu", "cuda"):
    vals = []
    for fn, shapes in cases:
        xs = [tgrad.tensor(rng.standard_normal(s), device=dev, requires_grad=True)
              for s in shapes]
        y = fn(*xs)
        w = tgrad.tensor(np.random.default_rng(1).standard_normal(y.shape), device=dev)
        grads = tgrad.autograd.grad((y * y * w).sum(), xs, create_graph=True)
        second = tgrad.autograd.grad(sum((g * g).sum() for g in grads), xs[0])[0]
        vals += [v.detach().cpu().numpy().ravel().tolist() for v in [y, *grads, second]]
    rng = np.random.default_rng(5)
    out[dev] = vals
print(json.dumps(out))
""")
    for got, want in zip(res["cuda"], res["cpu"]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("contiguous", [True, False])
def test_conv_bias_gradient_is_the_float64_sum_to_an_ulp_or_two(contiguous):
    # db sums g over N and the spatial dims (a contiguous g as its (N, O, L) view in one
    # pass, another g per axis): within 2 ulps of the float64 sum of the float32 g; float64
    # to 1e-13 of NumPy's sum; 2-d and 3-d
    rng = np.random.default_rng(8)
    for xs, ws in (((6, 3, 12, 10), (5, 3, 3, 3)), ((3, 2, 5, 6, 4), (4, 2, 2, 3, 2))):
        spatial = len(xs) - 2
        fn = F.conv2d if spatial == 2 else F.conv3d
        gshape = (xs[0], ws[0]) + tuple(s + 2 - k + 1 for s, k in zip(xs[2:], ws[2:]))
        gn = rng.standard_normal(gshape) + 0.25
        for dt in (tgrad.float32, tgrad.float64):
            x = tgrad.tensor(rng.standard_normal(xs), dtype=dt)
            w = tgrad.tensor(rng.standard_normal(ws), dtype=dt)
            b = tgrad.tensor(np.zeros(ws[0]), dtype=dt, requires_grad=True)
            y = fn(x, w, b, padding=1)
            g = tgrad.tensor(gn, dtype=dt)
            if not contiguous:  # the same values, batch-last in memory
                g = tgrad.tensor(np.ascontiguousarray(np.moveaxis(gn, 0, -1)),
                                 dtype=dt).movedim(-1, 0)
                assert not g.is_contiguous()
            y.backward(g)
            g64 = gn.astype(dt.np).astype(np.float64)
            axes = (0,) + tuple(range(2, 2 + spatial))
            got = b.grad.numpy()
            if dt is tgrad.float64:
                np.testing.assert_allclose(got, g64.sum(axes), rtol=1e-13)
                continue
            exact = g64.sum(axes)
            assert (np.abs(got - exact) <= 2 * np.spacing(np.abs(exact).astype(np.float32))).all()


def test_conv_and_batch_norm_of_empty_batches_and_channels():
    # an empty batch or channel dim through the one-pass sums (the conv bias gradient, the
    # batch statistics) and im2col: zero-size results and gradients, the bias counted for
    # an input of no channels
    for fn, xs, ws in ((F.conv2d, (2, 0, 5, 5), (3, 0, 3, 3)),
                       (F.conv2d, (0, 2, 5, 5), (3, 2, 3, 3)),
                       (F.conv3d, (0, 2, 3, 3, 3), (3, 2, 1, 1, 1)),
                       (F.conv1d, (0, 2, 5), (3, 2, 3))):
        x = tgrad.zeros(xs, requires_grad=True)
        w = tgrad.ones(ws, requires_grad=True)
        b = tgrad.arange(3.0).requires_grad_()
        y = fn(x, w, b, padding=1)
        y.sum().backward()
        per_channel = y.numel() // 3
        np.testing.assert_array_equal(b.grad.numpy(), [per_channel] * 3)
        assert x.grad.shape == xs and w.grad.shape == ws
        np.testing.assert_array_equal(y.detach().numpy(),
                                      np.broadcast_to(np.arange(3.0).reshape(
                                          (1, 3) + (1,) * (len(xs) - 2)), y.shape))
    for xs in ((0, 3, 4, 5), (4, 0, 2, 2)):
        x = tgrad.zeros(xs, requires_grad=True)
        y = F.batch_norm(x, None, None, training=True)
        y.sum().backward()
        assert y.shape == xs and x.grad.shape == xs


def test_conv_dtype_error_reads_as_pytorch():
    x = tgrad.ones(1, 2, 5, 5)
    with pytest.raises(RuntimeError, match=r"conv2d: Input type \(float\) and bias type "
                                           r"\(double\) should be the same.*bias with \.to\(input"
                                           r"\.dtype\)"):
        F.conv2d(x, tgrad.ones(3, 2, 3, 3), tgrad.ones(3, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match=r"Input type \(double\) and weight type \(float\)"):
        F.conv2d(x.double(), tgrad.ones(3, 2, 3, 3))


@pytest.mark.parametrize("pshape", [(3, 1), (1, 3), (3, 1, 1)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_reads_weight_and_bias_by_element_count(pshape, training):
    # PyTorch takes any weight / bias of C elements; the values and the gradients are those
    # of the (C,) vectors, the gradients in the parameters' own shapes
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 3, 5))
    w, b = rng.standard_normal(3) + 1.5, rng.standard_normal(3)
    mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
    if not training:
        mean, var = np.array([0.1, -0.2, 0.3]), np.array([1.5, 0.5, 2.0])
    ref = ((x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)) * w[:, None] + b[:, None]
    xt = tgrad.tensor(x, requires_grad=True)
    wt = tgrad.tensor(w.reshape(pshape), requires_grad=True)
    bt = tgrad.tensor(b.reshape(pshape), requires_grad=True)
    rm = tgrad.tensor([0.1, -0.2, 0.3], dtype=tgrad.float64)
    rv = tgrad.tensor([1.5, 0.5, 2.0], dtype=tgrad.float64)
    y = F.batch_norm(xt, rm, rv, wt, bt, training=training)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(x.shape)
    y.backward(tgrad.tensor(g))
    xhat = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    assert wt.grad.shape == pshape and bt.grad.shape == pshape
    np.testing.assert_allclose(wt.grad.numpy().reshape(3), (g * xhat).sum(axis=(0, 2)),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(bt.grad.numpy().reshape(3), g.sum(axis=(0, 2)), rtol=1e-12)
    assert tgrad.autograd.gradcheck(
        lambda a, c, d: F.batch_norm(a, None, None, c, d, training=True),
        (xt, wt, bt))


@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_conv_transpose_of_an_empty_batch(spatial):
    # PyTorch: an empty batch gives the (0, C_out, *out) result, out = (i - 1) s - 2 p +
    # d (k - 1) + op + 1 per dim (hand), also where out is 0 or the input planes are empty
    # (a batch of samples would raise there), with zero weight and bias gradients
    fn = getattr(F, f"conv_transpose{spatial}d")
    cases = [(5, 3, dict(stride=2, padding=1, output_padding=1, dilation=2, groups=2)),
             (1, 2, dict(padding=1)),                          # out = 0
             (0, 3, dict(stride=2, output_padding=1)),         # empty planes, out = 2
             (0, 1, {})]                                       # empty planes, out = 0
    for size, k, kw in cases:
        groups = kw.get("groups", 1)
        s, p, d, op = (kw.get(n, dflt) for n, dflt in (("stride", 1), ("padding", 0),
                                                         ("dilation", 1), ("output_padding", 0)))
        out = (size - 1) * s - 2 * p + d * (k - 1) + op + 1
        x = tgrad.zeros((0, 4) + (size,) * spatial, dtype=tgrad.float64, requires_grad=True)
        w = tgrad.tensor(np.full((4, 3) + (k,) * spatial, np.inf), requires_grad=True)
        b = tgrad.arange(3.0 * groups, dtype=tgrad.float64).requires_grad_()
        y = fn(x, w, b, **kw)
        assert y.shape == (0, 3 * groups) + (out,) * spatial
        assert y.grad_fn.name() == "ConvolutionBackward0"
        gx, gw, gb = tgrad.autograd.grad(y.sum(), (x, w, b), create_graph=True)
        assert gx.shape == x.shape and gw.shape == w.shape and gb.shape == b.shape
        np.testing.assert_array_equal(gw.detach().numpy(), np.zeros(w.shape))
        np.testing.assert_array_equal(gb.detach().numpy(), np.zeros(3 * groups))
        (ggx,) = tgrad.autograd.grad(gw.sum() + gb.sum(), (x,), allow_unused=True)
        assert ggx is None or ggx.shape == x.shape
    with pytest.raises(RuntimeError, match="Output size is too small"):  # out < 0
        fn(tgrad.zeros((0, 4) + (1,) * spatial), tgrad.ones((4, 3) + (1,) * spatial), padding=1)
    with pytest.raises(RuntimeError, match="Output size is too small"):  # a sample, out = 0
        fn(tgrad.zeros((1, 4) + (1,) * spatial), tgrad.ones((4, 3) + (2,) * spatial), padding=1)
    with pytest.raises(RuntimeError, match="Only zero batch or zero channel inputs"):
        fn(tgrad.zeros((1, 4) + (0,) * spatial), tgrad.ones((4, 3) + (2,) * spatial))


def test_conv_transpose_of_an_empty_batch_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, tgrad, tgrad.nn.functional as F
out = []
for size, k, kw in ((5, 3, dict(stride=2, padding=1, output_padding=1)), (0, 3, dict(stride=2))):
    x = tgrad.zeros((0, 4, size, size), device="cuda", requires_grad=True)
    w = tgrad.ones((4, 3, k, k), device="cuda", requires_grad=True)
    b = tgrad.ones(3, device="cuda", requires_grad=True)
    y = F.conv_transpose2d(x, w, b, **kw)
    y.sum().backward()
    out.append([list(y.shape), list(x.grad.shape), float(w.grad.abs().sum()), b.grad.tolist()])
print(json.dumps(out))
""")
    assert res == [[[0, 3, 10, 10], [0, 4, 5, 5], 0.0, [0.0] * 3],
                   [[0, 3, 1, 1], [0, 4, 0, 0], 0.0, [0.0] * 3]]
