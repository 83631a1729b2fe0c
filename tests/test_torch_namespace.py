"""PyTorch's top-level names that tgrad adds: the nn.functional ops under torch's top-level
signatures (tgrad/ops/torch_aliases.py) and F's *_with_indices pooling forms.

References: NumPy float64 (correlations, normalizations, losses written out), hand values,
and finite differences (gradcheck in float64).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck

D = tgrad.float64


def _t(a, grad=False):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=D, requires_grad=grad)


def _np(t):
    return t.detach().numpy()


# ------------------------------------------------------------------ item 1: aliases
def test_conv_aliases_match_numpy_correlation():
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((1, 2, 7)), rng.standard_normal((3, 2, 3)), rng.standard_normal(3)
    # torch.conv1d(input, weight, bias, stride, padding, dilation, groups): stride 2, pad 1
    y = tgrad.conv1d(_t(x), _t(w), _t(b), 2, 1)
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    ref = np.stack([np.array([(xp[0, :, i:i + 3] * w[o]).sum() for i in range(0, 7, 2)]) + b[o]
                    for o in range(3)])[None]
    np.testing.assert_allclose(_np(y), ref, rtol=1e-12)
    assert tgrad.conv2d(_t(rng.standard_normal((1, 1, 3, 3))), _t(np.ones((1, 1, 3, 3))),
                        padding="valid").shape == (1, 1, 1, 1)
    xt, wt = _t(x[:, :, :4], True), _t(rng.standard_normal((2, 1, 2)), True)
    assert gradcheck(lambda a, k: tgrad.conv_transpose1d(a, k, None, 2, 0, 1), (xt, wt))


def test_conv_transpose_is_adjoint_of_conv():
    # <conv_transpose2d(y, w), x> == <y, conv2d(x, w)> (both stride 2)
    rng = np.random.default_rng(2)
    x, w, y = (rng.standard_normal(s) for s in ((1, 2, 5, 5), (3, 2, 3, 3), (1, 3, 2, 2)))
    lhs = (_np(tgrad.conv_transpose2d(_t(y), _t(w), None, 2)) * x).sum()
    rhs = (_np(tgrad.conv2d(_t(x), _t(w), None, 2)) * y).sum()
    assert abs(lhs - rhs) < 1e-10
    assert tgrad.conv3d(_t(np.ones((1, 1, 2, 2, 2))), _t(np.ones((1, 1, 2, 2, 2)))).item() == 8
    assert tgrad.conv_transpose3d(_t(np.ones((1, 1, 1, 1, 1))),
                                  _t(np.ones((1, 1, 2, 2, 2)))).shape == (1, 1, 2, 2, 2)


def test_pooling_aliases_default_stride_is_kernel():
    x = np.array([[[1.0, 5.0, 2.0, 0.0, 3.0, 4.0]]])
    np.testing.assert_array_equal(_np(tgrad.max_pool1d(_t(x), 2)), [[[5.0, 2.0, 4.0]]])
    np.testing.assert_array_equal(_np(tgrad.max_pool1d(_t(x), 2, ())), [[[5.0, 2.0, 4.0]]])
    np.testing.assert_array_equal(_np(tgrad.avg_pool1d(_t(x), 3)), [[[8 / 3, 7 / 3]]])
    v, i = tgrad.max_pool1d_with_indices(_t(x), 2)
    assert i.dtype is tgrad.int64 and i.tolist() == [[[1, 2, 5]]]
    v, i = tgrad.adaptive_max_pool1d(_t(x), 2)  # always (values, indices)
    assert v.tolist() == [[[5.0, 4.0]]] and i.tolist() == [[[1, 5]]]
    np.testing.assert_allclose(_np(tgrad.adaptive_avg_pool1d(_t(x), 2)), [[[8 / 3, 7 / 3]]])
    x2 = np.arange(16.0).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(_np(tgrad.max_pool2d(_t(x2), 2)), [[[[5, 7], [13, 15]]]])
    assert tgrad.max_pool3d(_t(np.arange(8.0).reshape(1, 1, 2, 2, 2)), 2).item() == 7


def test_norm_aliases_take_torch_top_level_argument_order():
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(3)
    # batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn)
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    y = tgrad.batch_norm(_t(x), _t(w), _t(b), rm, rv, True, 0.5, 1e-5, False)
    ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5) * w + b
    np.testing.assert_allclose(_np(y), ref, rtol=1e-10)
    np.testing.assert_allclose(_np(rm), 0.5 * x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(_np(rv), 0.5 + 0.5 * x.var(0, ddof=1), rtol=1e-12)
    # layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)
    y = tgrad.layer_norm(_t(x), [3], _t(w), _t(b), 1e-5, True)
    m, v = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    np.testing.assert_allclose(_np(y), (x - m) / np.sqrt(v + 1e-5) * w + b, rtol=1e-10)
    y = tgrad.rms_norm(_t(x), [3], _t(w), 1e-6)
    ref = x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(_np(y), ref, rtol=1e-10)
    xg = rng.standard_normal((2, 4, 3))
    y = tgrad.group_norm(_t(xg), 2, None, None, 1e-5, True)
    g = xg.reshape(2, 2, 6)
    ref = ((g - g.mean(2, keepdims=True)) / np.sqrt(g.var(2, keepdims=True) + 1e-5))
    np.testing.assert_allclose(_np(y), ref.reshape(2, 4, 3), rtol=1e-10)
    y = tgrad.instance_norm(_t(xg), None, None, None, None, True, 0.1, 1e-5, False)
    ref = (xg - xg.mean(2, keepdims=True)) / np.sqrt(xg.var(2, keepdims=True) + 1e-5)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-10)
    xt, wt = _t(x, True), _t(w, True)
    assert gradcheck(lambda a, c: tgrad.layer_norm(a, (3,), c), (xt, wt))


def test_embedding_weight_first_and_padding_idx():
    w = _t(np.arange(12.0).reshape(4, 3), True)
    idx = tgrad.tensor([[0, 2], [2, 3]])
    y = tgrad.embedding(w, idx)
    np.testing.assert_array_equal(_np(y), np.arange(12.0).reshape(4, 3)[[[0, 2], [2, 3]]])
    tgrad.embedding(w, idx, 2).sum().backward()  # row 2 is padding: no gradient
    np.testing.assert_array_equal(_np(w.grad), [[1] * 3, [0] * 3, [0] * 3, [1] * 3])
    w.grad = None
    tgrad.embedding(w, idx, -1).sum().backward()  # negative: no padding
    np.testing.assert_array_equal(_np(w.grad)[:, 0], [1, 0, 2, 1])
    with pytest.raises(TypeError, match="embedding.*'weight'"):
        tgrad.embedding(np.ones((2, 2)), idx)


def test_activation_aliases_hand_values():
    x = np.array([-2.0, -0.25, 0.0, 0.75, 3.0])
    np.testing.assert_allclose(_np(tgrad.celu(_t(x), 2.0)),
                               np.where(x > 0, x, 2.0 * np.expm1(x / 2.0)), rtol=1e-12)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(_np(tgrad.selu(_t(x))),
                               scale * np.where(x > 0, x, alpha * np.expm1(x)), rtol=1e-12)
    np.testing.assert_array_equal(_np(tgrad.threshold(_t(x), 0.5, -9.0)),
                                  [-9, -9, -9, 0.75, 3])
    np.testing.assert_array_equal(_np(tgrad.hardshrink(_t(x), 1.0)), [-2, 0, 0, 0, 3])
    np.testing.assert_array_equal(_np(tgrad.prelu(_t(x), _t([0.5]))),
                                  [-1, -0.125, 0, 0.75, 3])
    np.testing.assert_allclose(_np(tgrad.rrelu(_t(x), 0.1, 0.3)), np.where(x >= 0, x, 0.2 * x),
                               rtol=1e-12)
    for name, ref in (("celu_", np.where(x > 0, x, np.expm1(x))),
                      ("selu_", scale * np.where(x > 0, x, alpha * np.expm1(x)))):
        t = _t(x)
        assert getattr(tgrad, name)(t) is t
        np.testing.assert_allclose(_np(t), ref, rtol=1e-12)
    t = _t(x)
    assert tgrad.threshold_(t, 0.0, 1.0) is t and t.tolist() == [1, 1, 1, 0.75, 3]


def test_rrelu_training_uses_generator():
    x = _t(-np.ones(200))
    a = tgrad.rrelu(x, 0.2, 0.4, True, tgrad.Generator().manual_seed(7))
    b = tgrad.rrelu(x, 0.2, 0.4, True, tgrad.Generator().manual_seed(7))
    np.testing.assert_array_equal(_np(a), _np(b))  # same generator state, same slopes
    assert ((-_np(a) >= 0.2) & (-_np(a) <= 0.4)).all() and np.unique(_np(a)).size > 100
    t = _t(-np.ones(5))
    assert tgrad.rrelu_(t, 0.2, 0.4, True) is t and (-_np(t) >= 0.2).all()
    xt = _t([-1.0, -0.5, 0.3, 2.0], True)
    y = tgrad.rrelu(xt, 0.1, 0.3, True, tgrad.Generator().manual_seed(1))
    y.sum().backward()
    np.testing.assert_allclose(_np(xt.grad), _np(y) / _np(xt), rtol=1e-12)  # dx = slope


def test_dropout_aliases():
    x = _t(np.full((3, 4, 5), 2.0))
    assert tgrad.alpha_dropout(x, 0.5, False) is x and tgrad.feature_dropout(x, 0.5, False) is x
    y = _np(tgrad.feature_dropout(x, 0.5, True))
    kept = y[:, :, 0] != 0
    for v in (y[:, :, 0], y[:, :, 4]):  # one value per (n, c): 0 or 2 / (1 - p)
        assert set(np.unique(v)) <= {0.0, 4.0}
    np.testing.assert_array_equal(y != 0, np.broadcast_to(kept[:, :, None], y.shape))
    t = _t(np.full((4, 50), 2.0))
    assert tgrad.dropout_(t, 0.5, True) is t and set(np.unique(_np(t))) <= {0.0, 4.0}
    t = _t(np.full((20, 3), 1.0))
    assert tgrad.feature_dropout_(t, 0.5, True) is t
    assert tgrad.alpha_dropout_(_t(np.ones(4)), 0.0, True).tolist() == [1.0] * 4
    # alpha dropout: dropped values become a * (-alpha') + b with the affine map of SELU's
    p, alpha = 0.5, 1.7580993408473766
    a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    y = _np(tgrad.alpha_dropout(_t(np.ones(400)), p, True))
    np.testing.assert_allclose(np.unique(y), sorted([a * 1 + a * alpha * p,
                                                      -alpha * a + a * alpha * p]), rtol=1e-12)
    y = _np(tgrad.feature_alpha_dropout(_t(np.ones((30, 2, 3))), p, True))
    assert (y == y[:, :, :1]).all()
    tgrad.feature_alpha_dropout_(_t(np.ones((3, 2))), p, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        tgrad.feature_dropout(_t(np.ones(4)), 0.5, True)
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        tgrad.feature_dropout(_t(np.ones((2, 2))), 1.5, True)


def test_shuffle_and_constant_pad_nd():
    x = np.arange(8.0).reshape(1, 4, 1, 2)
    y = _np(tgrad.pixel_shuffle(_t(x), 2))
    np.testing.assert_array_equal(y, [[[[0, 2, 1, 3], [4, 6, 5, 7]]]])
    np.testing.assert_array_equal(_np(tgrad.pixel_unshuffle(_t(y), 2)), x)
    np.testing.assert_array_equal(_np(tgrad.channel_shuffle(_t(x), 2))[0, :, 0, 0], [0, 4, 2, 6])
    np.testing.assert_array_equal(_np(tgrad.constant_pad_nd(_t(np.ones((2, 2))), [1, 0], 3.0)),
                                  np.pad(np.ones((2, 2)), ((0, 0), (1, 0)), constant_values=3))
    np.testing.assert_array_equal(_np(tgrad.constant_pad_nd(_t(np.ones((2, 2))), (0, 0, -1, 1))),
                                  [[1, 1], [0, 0]])


def test_loss_aliases_int_reduction_numpy():
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((3, 4)), rng.uniform(0.1, 1.0, (3, 4))
    ref = t * (np.log(t) - x)
    np.testing.assert_allclose(_np(tgrad.kl_div(_t(x), _t(t), 0)), ref, rtol=1e-12)
    np.testing.assert_allclose(tgrad.kl_div(_t(x), _t(t)).item(), ref.mean(), rtol=1e-12)
    np.testing.assert_allclose(tgrad.kl_div(_t(x), _t(np.log(t)), 2, log_target=True).item(),
                               ref.sum(), rtol=1e-12)
    np.testing.assert_allclose(tgrad.poisson_nll_loss(_t(x), _t(t), True, False, 1e-8, 1).item(),
                               (np.exp(x) - t * x).mean(), rtol=1e-12)
    z = rng.integers(0, 2, (3, 4)).astype(float)
    w, pw = rng.uniform(0.5, 2, 4), rng.uniform(0.5, 2, 4)
    ref = -w * (pw * z * np.log(1 / (1 + np.exp(-x))) + (1 - z) * np.log(1 - 1 / (1 + np.exp(-x))))
    np.testing.assert_allclose(
        tgrad.binary_cross_entropy_with_logits(_t(x), _t(z), _t(w), _t(pw), 2).item(),
        ref.sum(), rtol=1e-10)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    y = np.array([1.0, -1.0, -1.0])
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(_np(tgrad.cosine_embedding_loss(_t(a), _t(b), _t(y), 0.1, 0)),
                               np.where(y > 0, 1 - cos, np.maximum(0, cos - 0.1)), rtol=1e-10)
    h = rng.choice([-1.0, 1.0], (3, 4))
    np.testing.assert_allclose(tgrad.hinge_embedding_loss(_t(x), _t(h), 0.5).item(),
                               np.where(h > 0, x, np.maximum(0, 0.5 - x)).mean(), rtol=1e-12)
    np.testing.assert_allclose(
        _np(tgrad.margin_ranking_loss(_t(a[:, 0]), _t(b[:, 0]), _t(y), 0.2, 0)),
        np.maximum(0, -y * (a[:, 0] - b[:, 0]) + 0.2), rtol=1e-12)
    n = rng.standard_normal((3, 4))
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=1)  # noqa: E731
    np.testing.assert_allclose(
        tgrad.triplet_margin_loss(_t(a), _t(b), _t(n), 1.0, 2, 1e-6, False, 2).item(),
        np.maximum(d(a, b) - d(a, n) + 1.0, 0).sum(), rtol=1e-10)
    with pytest.raises(TypeError, match=r"kl_div\(\): argument 'reduction' \(position 3\) must "
                                        r"be int, not str"):
        tgrad.kl_div(_t(x), _t(t), "mean")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        tgrad.hinge_embedding_loss(_t(x), _t(h), 1.0, 3)


def test_ctc_loss_alias_single_path():
    # T=1, one target label: the only alignment emits it, loss = -log p(label)
    lp = np.log(np.array([[[0.2, 0.5, 0.3]]]))  # (T=1, N=1, C=3)
    y = tgrad.ctc_loss(_t(lp), tgrad.tensor([[1]]), [1], [1], 0, 0)
    np.testing.assert_allclose(_np(y), [-math.log(0.5)], rtol=1e-12)
    y = tgrad.ctc_loss(_t(lp), tgrad.tensor([[2]]), [1], [1], 0, 2)
    np.testing.assert_allclose(y.item(), -math.log(0.3), rtol=1e-12)


def test_bilinear_alias():
    rng = np.random.default_rng(5)
    a, b, w, c = (rng.standard_normal(s) for s in ((2, 3), (2, 4), (5, 3, 4), (5,)))
    np.testing.assert_allclose(_np(tgrad.bilinear(_t(a), _t(b), _t(w), _t(c))),
                               np.einsum("ni,oij,nj->no", a, w, b) + c, rtol=1e-12)


# ------------------------------------------------------------------ item 2: F *_with_indices
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_functional_max_pool_with_indices(nd):
    x = np.random.default_rng(nd).standard_normal((1, 2) + (4,) * nd)
    f = getattr(F, f"max_pool{nd}d_with_indices")
    out = f(_t(x), 2, return_indices=False)  # always a pair, as PyTorch's
    assert isinstance(out, tuple) and len(out) == 2
    v, i = out
    flat = x.reshape(1, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, _np(i).reshape(1, 2, -1), 2),
                                  _np(v).reshape(1, 2, -1))
    blocks = x.reshape((1, 2) + (2, 2) * nd).transpose(
        (0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2)))
    np.testing.assert_array_equal(_np(v), blocks.reshape((1, 2) + (2,) * nd + (-1,)).max(-1))
    fa = getattr(F, f"adaptive_max_pool{nd}d_with_indices")
    v, i = fa(_t(x), 1)
    np.testing.assert_array_equal(_np(v).reshape(2), flat[0].max(1))
    np.testing.assert_array_equal(_np(i).reshape(2), flat[0].argmax(1))


# ------------------------------------------------------------------ item 3: creation, utility
def _sym(n, f):
    """The symmetric window of length n from the documented formula, float64."""
    return np.array([f(k, n - 1) for k in range(n)]) if n > 1 else np.ones(n)


WINDOWS = {
    "hann_window": lambda k, m: 0.5 - 0.5 * math.cos(2 * math.pi * k / m),
    "hamming_window": lambda k, m: 0.54 - 0.46 * math.cos(2 * math.pi * k / m),
    "blackman_window": lambda k, m: (0.42 - 0.5 * math.cos(2 * math.pi * k / m)
                                     + 0.08 * math.cos(4 * math.pi * k / m)),
    "bartlett_window": lambda k, m: 1 - abs(2 * k / m - 1),
    "kaiser_window": lambda k, m: (np.i0(12.0 * math.sqrt(max(0.0, 1 - ((k - m / 2) / (m / 2))
                                                              ** 2))) / np.i0(12.0)),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_documented_formulas(name):
    f, fn = WINDOWS[name], getattr(tgrad, name)
    for n in (0, 1, 2, 5, 8):
        sym = fn(n, False, dtype=D)
        np.testing.assert_allclose(_np(sym), _sym(n, f), rtol=1e-12, atol=1e-15)
        per = fn(n, dtype=D)  # periodic by default: length n + 1, last value dropped
        np.testing.assert_allclose(_np(per), _sym(n + 1, f)[:n] if n > 1 else np.ones(n),
                                   rtol=1e-12, atol=1e-15)
    w = fn(4, requires_grad=True)
    assert w.dtype is tgrad.get_default_dtype() and w.requires_grad and w.is_leaf
    with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
        fn(4, dtype=tgrad.int64)
    with pytest.raises(RuntimeError, match="non-negative window_length, got window_length=-1"):
        fn(-1)


def test_window_hand_values():
    np.testing.assert_allclose(_np(tgrad.hann_window(4, dtype=D)), [0, 0.5, 1, 0.5], atol=1e-15)
    np.testing.assert_allclose(_np(tgrad.hamming_window(3, False, dtype=D)), [0.08, 1, 0.08])
    np.testing.assert_allclose(_np(tgrad.hamming_window(3, False, 0.5, 0.5, dtype=D)),
                               [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(_np(tgrad.bartlett_window(5, False, dtype=D)),
                               [0, 0.5, 1, 0.5, 0])
    np.testing.assert_allclose(_np(tgrad.kaiser_window(3, False, 0.0, dtype=D)), [1, 1, 1])


def test_asarray_shares_numpy_memory_and_copy_semantics():
    a = np.ones(3)
    t = tgrad.asarray(a)
    a[0] = 7.0
    assert t.dtype is tgrad.float64 and t.tolist() == [7.0, 1.0, 1.0]
    c = tgrad.asarray(a, copy=True)
    f = tgrad.asarray(a, dtype=tgrad.float32)  # a conversion copies
    a[1] = 5.0
    assert c.tolist() == [7.0, 1.0, 1.0] and f.tolist() == [7.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="can't alias"):
        tgrad.asarray(a, dtype=tgrad.float32, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        tgrad.asarray([1, 2], copy=False)
    assert tgrad.asarray([1, 2]).dtype is tgrad.int64
    assert tgrad.asarray([1.0, 2]).dtype is tgrad.get_default_dtype()
    x = tgrad.ones(2, requires_grad=True) * 2
    assert tgrad.asarray(x) is x
    y = tgrad.asarray(x, dtype=D)
    assert y.dtype is D and y.requires_grad  # .to in the graph
    z = tgrad.asarray(x, copy=True)
    assert z is not x and z.tolist() == [2.0, 2.0]
    z.sum().backward()
    with pytest.raises(ValueError, match="can't alias tensor"):
        tgrad.asarray(x, dtype=D, copy=False)
    r = tgrad.asarray(np.zeros(2), requires_grad=True)
    assert r.requires_grad and r.is_leaf


def test_frombuffer_shares_memory():
    b = bytearray(np.array([1, 2, 3], dtype=np.int32).tobytes())
    t = tgrad.frombuffer(b, dtype=tgrad.int32)
    b[0] = 9
    assert t.tolist() == [9, 2, 3]
    assert tgrad.frombuffer(b, dtype=tgrad.int32, count=1, offset=4).tolist() == [2]
    with pytest.raises(ValueError, match=r"requested buffer length \(4 \* 4 bytes\)"):
        tgrad.frombuffer(b, dtype=tgrad.int32, count=4)
    with pytest.raises(ValueError, match="offset .12 bytes. must be non-negative"):
        tgrad.frombuffer(b, dtype=tgrad.int32, offset=12)
    with pytest.raises(ValueError, match="must not be 0"):
        tgrad.frombuffer(b, dtype=tgrad.int32, count=0)


def test_scalar_tensor_and_range():
    s = tgrad.scalar_tensor(3)
    assert s.shape == () and s.dtype is tgrad.get_default_dtype() and s.item() == 3.0
    assert tgrad.scalar_tensor(2, dtype=tgrad.int64).dtype is tgrad.int64
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        r = tgrad.range(1, 4)
    assert r.tolist() == [1.0, 2.0, 3.0, 4.0] and r.dtype is tgrad.get_default_dtype()
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(_np(tgrad.range(0, 1, 0.25, dtype=D)),
                                   [0, 0.25, 0.5, 0.75, 1.0])
        # an integer dtype truncates start, end and step first: 3, 0, -1
        assert tgrad.range(3, 0, -1.5, dtype=tgrad.int64).tolist() == [3, 2, 1, 0]
        np.testing.assert_allclose(_np(tgrad.range(3, 0, -1.5, dtype=D)), [3, 1.5, 0])


def test_scalar_tensor_numel_cov_vander_argument_errors():
    # PyTorch's parser: s is a Number (a 0-d tensor counts as one); a complex s with an
    # imaginary part does not fit a real dtype; numel takes a Tensor; cov's correction and
    # vander's N are ints (not bool, not float)
    assert tgrad.scalar_tensor(1j, dtype=tgrad.complex128).item() == 1j
    assert tgrad.scalar_tensor(2 + 0j).item() == 2.0
    assert tgrad.scalar_tensor(2 + 1j, dtype=tgrad.bool).item() is True
    assert tgrad.scalar_tensor(tgrad.tensor(2.5)).item() == 2.5
    with pytest.raises(RuntimeError, match="scalar_tensor.*cannot be converted to type "
                                           "float32 without overflow"):
        tgrad.scalar_tensor(1j)
    for bad, name in (("a", "str"), (None, "NoneType"), (tgrad.ones(1), "Tensor")):
        with pytest.raises(TypeError, match=rf"scalar_tensor\(\): argument 's' \(position 1\) "
                                            rf"must be Number, not {name}"):
            tgrad.scalar_tensor(bad)
    assert tgrad.numel(tgrad.ones(2, 3)) == 6
    with pytest.raises(TypeError, match=r"numel\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not list"):
        tgrad.numel([1, 2])
    x = tgrad.tensor([[1.0, 2.0, 4.0], [0.0, 1.0, 1.0]])
    for bad in (True, 1.0):
        with pytest.raises(TypeError, match=rf"cov\(\): argument 'correction' must be int, "
                                            rf"not {type(bad).__name__}"):
            tgrad.cov(x, correction=bad)
        with pytest.raises(TypeError, match=rf"vander\(\): argument 'N' must be int, not "
                                            rf"{type(bad).__name__}"):
            tgrad.vander(x[0], N=bad)
    assert tgrad.vander(x[0], N=2).tolist() == [[1.0, 1.0], [2.0, 1.0], [4.0, 1.0]]


def test_split_forms():
    x = tgrad.arange(10.0)
    parts = tgrad.split_with_sizes(x, [3, 7])
    assert [p.tolist() for p in parts] == [[0, 1, 2], list(np.arange(3.0, 10))]
    assert [p.shape[0] for p in tgrad.unsafe_split(x, 4)] == [4, 4, 2]
    assert [p.shape[0] for p in tgrad.unsafe_chunk(x, 3)] == [4, 4, 2]
    assert [p.shape[0] for p in x.unsafe_split_with_sizes([5, 5])] == [5, 5]


def test_copy_variants_are_contiguous_copies_with_gradients():
    a = np.arange(24.0).reshape(2, 3, 4)
    cases = [
        (tgrad.view_copy, ((6, 4),), a.reshape(6, 4)),
        (tgrad.permute_copy, ((2, 0, 1),), a.transpose(2, 0, 1)),
        (tgrad.transpose_copy, (0, 2), a.swapaxes(0, 2)),
        (tgrad.unsqueeze_copy, (1,), a[:, None]),
        (tgrad.diagonal_copy, (0, 1, 2), np.diagonal(a, 0, 1, 2)),
        (tgrad.select_copy, (1, 2), a[:, 2]),
        (tgrad.slice_copy, (2, 1, 4, 2), a[:, :, 1:4:2]),
        (tgrad.unfold_copy, (2, 2, 2), np.stack([a[:, :, 0:2], a[:, :, 2:4]], 2)),
        (tgrad.alias_copy, (), a),
        (tgrad.as_strided_copy, ((2, 2), (1, 4)), np.array([[0, 4], [1, 5]], dtype=float)),
        (tgrad.expand_copy, ((2, 2, 3, 4),), np.broadcast_to(a, (2, 2, 3, 4))),
    ]
    for fn, args, ref in cases:
        x = _t(a, True)
        y = fn(x, *args)
        assert y.is_contiguous() and y._base is None, fn.__name__
        np.testing.assert_array_equal(_np(y), ref)
        y.sum().backward()
        assert x.grad.shape == a.shape, fn.__name__
    x = _t(a[0], True)
    assert gradcheck(lambda v: tgrad.t_copy(v) * 2, (x,))
    assert tgrad.squeeze_copy(_t(np.ones((1, 3, 1)))).shape == (3,)
    assert tgrad.squeeze_copy(_t(np.ones((1, 3, 1))), 0).shape == (3, 1)
    parts = tgrad.split_copy(_t(a, True), 1, 0)
    assert len(parts) == 2 and all(p.is_contiguous() for p in parts)
    assert [p.tolist() for p in tgrad.unbind_copy(_t([[1.0, 2.0], [3.0, 4.0]]), 1)] == \
        [[1.0, 3.0], [2.0, 4.0]]
    d = tgrad.detach_copy(x)
    assert not d.requires_grad and np.array_equal(_np(d), a[0])
    assert tgrad.detach(x).requires_grad is False


def test_poisson_and_binomial_sampling():
    rates = _t(np.array([0.0, 2.0, 40.0] * 400).reshape(400, 3), True)
    y = tgrad.poisson(rates, tgrad.Generator().manual_seed(0))
    v = _np(y)
    assert y.dtype is D and (v == np.round(v)).all() and (v[:, 0] == 0).all()
    np.testing.assert_allclose(v.mean(0)[1:], [2.0, 40.0], rtol=0.1)
    y2 = tgrad.poisson(rates, tgrad.Generator().manual_seed(0))
    np.testing.assert_array_equal(_np(y2), v)  # the generator decides the draws
    y.sum().backward()
    np.testing.assert_array_equal(_np(rates.grad), np.zeros((400, 3)))  # PoissonBackward0
    with pytest.raises(RuntimeError, match="expected rate to be non-negative"):
        tgrad.poisson(_t([-1.0]))
    with pytest.raises(NotImplementedError, match="poisson_cpu.*Long"):
        tgrad.poisson(tgrad.tensor([1, 2]))
    n, p = _t(np.full(2000, 10.0)), _t(np.full(2000, 0.3))
    b = _np(tgrad.binomial(n, p, tgrad.Generator().manual_seed(3)))
    assert ((b >= 0) & (b <= 10) & (b == np.round(b))).all()
    np.testing.assert_allclose(b.mean(), 3.0, rtol=0.05)
    np.testing.assert_allclose(b.var(), 2.1, rtol=0.15)
    assert tgrad.binomial(_t([5.0, 7.0]), _t([0.0, 1.0])).tolist() == [0.0, 7.0]
    with pytest.raises(ValueError, match="binomial only supports floating-point dtypes for "
                                         "count, got: Long"):
        tgrad.binomial(tgrad.tensor([3]), _t([0.5]))


def test_typename_vmap_detach():
    assert tgrad.typename(tgrad.ones(2)) == tgrad.ones(2).type()
    assert tgrad.typename(3) == "int"
    assert tgrad.typename(np.ones(1)) == "numpy.ndarray"
    assert tgrad.typename(tgrad.nn.Linear) == "tgrad.nn.modules.linear.Linear" or \
        tgrad.typename(tgrad.nn.Linear).endswith(".Linear")
    x = _t(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(_np(tgrad.vmap(lambda r: r.sum())(x)), [3.0, 12.0])


# ------------------------------------------------------------------ item 4: settings
@pytest.fixture
def _restore_settings():
    from tgrad.ops import settings
    saved = dict(settings._SETTINGS)
    tf32 = tgrad.backends.cuda.matmul.allow_tf32
    yield
    settings._SETTINGS.update(saved)
    tgrad.backends.cuda.matmul.allow_tf32 = tf32


def test_thread_settings_recorded(_restore_settings):
    import os
    assert tgrad.get_num_threads() == (os.cpu_count() or 1)
    tgrad.set_num_threads(3)
    tgrad.set_num_interop_threads(2)
    assert tgrad.get_num_threads() == 3 and tgrad.get_num_interop_threads() == 2
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        tgrad.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_threads expects an int, but got float"):
        tgrad.set_num_threads(1.5)
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive"):
        tgrad.set_num_interop_threads(-1)


def test_deterministic_settings(_restore_settings):
    assert not tgrad.are_deterministic_algorithms_enabled()
    assert tgrad.get_deterministic_debug_mode() == 0
    tgrad.use_deterministic_algorithms(True, warn_only=True)
    assert tgrad.are_deterministic_algorithms_enabled()
    assert tgrad.is_deterministic_algorithms_warn_only_enabled()
    assert tgrad.get_deterministic_debug_mode() == 1
    tgrad.set_deterministic_debug_mode("error")
    assert tgrad.get_deterministic_debug_mode() == 2
    assert not tgrad.is_deterministic_algorithms_warn_only_enabled()
    # a deterministic op runs as before: repeated-index scatter-add sums in a fixed order
    x = tgrad.zeros(2, dtype=D).index_add(0, tgrad.tensor([0, 0, 1, 0]), _t([1.0, 2, 3, 4]))
    assert x.tolist() == [7.0, 3.0]
    tgrad.set_deterministic_debug_mode(0)
    assert not tgrad.are_deterministic_algorithms_enabled()
    with pytest.raises(TypeError, match=r"use_deterministic_algorithms\(\): argument 'mode' "
                                        r"\(position 1\) must be bool, not int"):
        tgrad.use_deterministic_algorithms(1)


def test_float32_matmul_precision_tracks_allow_tf32(_restore_settings):
    assert tgrad.get_float32_matmul_precision() == "highest"
    tgrad.set_float32_matmul_precision("medium")
    assert tgrad.backends.cuda.matmul.allow_tf32 is True
    assert tgrad.get_float32_matmul_precision() == "medium"
    tgrad.set_float32_matmul_precision("highest")
    assert tgrad.backends.cuda.matmul.allow_tf32 is False
    tgrad.backends.cuda.matmul.allow_tf32 = True  # the flag wins, as in PyTorch
    assert tgrad.get_float32_matmul_precision() == "high"
    tgrad.backends.cuda.matmul.allow_tf32 = False
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        tgrad.set_float32_matmul_precision("low")
    assert tgrad.get_float32_matmul_precision() == "highest"


def test_anomaly_autocast_inference_warn_always(_restore_settings):
    assert not tgrad.is_anomaly_enabled()
    try:
        tgrad.set_anomaly_enabled(True, check_nan=False)
        assert tgrad.is_anomaly_enabled() and not tgrad.is_anomaly_check_nan_enabled()
        assert tgrad.autograd.is_anomaly_enabled()
    finally:
        tgrad.set_anomaly_enabled(False)
    assert not tgrad.is_anomaly_enabled() and tgrad.is_anomaly_check_nan_enabled()
    with pytest.raises(TypeError, match="argument 'enabled' .position 1. must be bool"):
        tgrad.set_anomaly_enabled(1)
    with tgrad.autocast("cpu"):
        with pytest.warns(DeprecationWarning, match="is_autocast_enabled\\('cpu'\\)"):
            assert tgrad.is_autocast_cpu_enabled()
        with pytest.warns(DeprecationWarning):
            assert tgrad.get_autocast_cpu_dtype() is tgrad.bfloat16
    with pytest.warns(DeprecationWarning):
        assert tgrad.get_autocast_gpu_dtype() is tgrad.float16
    assert tgrad.is_autocast_cache_enabled()
    with tgrad.inference_mode():
        t = tgrad.ones(2)
    assert tgrad.is_inference(t) is True and t.is_inference() is True
    assert tgrad.is_inference(t.clone()) is False and tgrad.ones(2).is_inference() is False
    with pytest.raises(TypeError, match="is_inference.*must be Tensor, not int"):
        tgrad.is_inference(1)
    assert not tgrad.is_warn_always_enabled()
    tgrad.set_warn_always(True)
    assert tgrad.is_warn_always_enabled()
    with pytest.raises(RuntimeError, match="set_warn_always expects a bool"):
        tgrad.set_warn_always(1)


# ------------------------------------------------------------------ item 5: Tensor methods
def test_tensor_new_legacy_constructor():
    x = tgrad.ones(2, 3, dtype=D)
    e = x.new()
    assert e.shape == (0,) and e.dtype is D
    s = x.new(2, 3)
    assert s.shape == (2, 3) and s.dtype is D
    assert x.new(x.shape).shape == (2, 3)  # tgrad's shapes are tuples: sizes
    d = x.new([1, 2])
    assert d.dtype is D and d.tolist() == [1.0, 2.0]
    assert tgrad.ones(2, dtype=tgrad.int64).new([1.5, 2]).tolist() == [1, 2]
    y = tgrad.zeros(3, dtype=D)
    z = x.new(y)  # an alias of y
    z[0] = 5.0
    assert y.tolist() == [5.0, 0.0, 0.0]
    with pytest.raises(TypeError, match="expected a tensor of dtype"):
        x.new(tgrad.zeros(2, dtype=tgrad.float32))
    with pytest.raises(TypeError, match="data must be a sequence .got float"):
        x.new(2.5)
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        x.new(2, dtype=tgrad.float32)


def test_resize_keeps_prefix_and_refuses_grad():
    x = tgrad.arange(6.0)
    assert x.resize_(2, 2).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    y = tgrad.zeros(4, dtype=D)
    assert y.resize_as_(tgrad.ones(2, 2)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        tgrad.ones(2, requires_grad=True).resize_(1)


def test_pinned_shared_dim_order_prelu():
    x = tgrad.ones(2, 3)
    assert x.is_pinned() is False
    if not tgrad.cuda.is_available():
        with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
            x.pin_memory()
    assert not x.is_shared()
    assert x.share_memory_() is x and x.is_shared() and x[0].is_shared()
    assert x.dim_order() == (0, 1) and x.t().dim_order() == (1, 0)
    assert tgrad.ones(2, 1, 3).permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert tgrad.ones(()).dim_order() == ()
    np.testing.assert_allclose(_np(_t([-2.0, 3.0]).prelu(_t([0.25]))), [-0.5, 3.0])


def test_nonzero_static():
    a = tgrad.tensor([[0, 1], [2, 0]])
    np.testing.assert_array_equal(_np(tgrad.nonzero_static(a, size=4)),
                                  [[0, 1], [1, 0], [-1, -1], [-1, -1]])
    r = a.nonzero_static(size=1, fill_value=9)
    assert r.dtype is tgrad.int64 and r.tolist() == [[0, 1]]
    assert a.nonzero_static(size=0).shape == (0, 2)
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        a.nonzero_static(size=-1)


# ------------------------------------------------------------------ item 6: fractional pooling
def _ref_fractional(x, k, out, u):
    """Loop reference from PyTorch's generate_intervals (float64), planes (N, C, *spatial);
    u (N, C, n) with ATen's sample order: 2-d (W, H), 3-d (T, H, W)."""
    n = len(out)
    order = (1, 0) if n == 2 else (0, 1, 2)
    vals = np.zeros(x.shape[:2] + tuple(out))
    idx = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            starts = []
            for d in range(n):
                size, s = x.shape[2 + d], u[b, c, order[d]]
                alpha = (size - k[d]) / (out[d] - 1) if out[d] > 1 else 0.0
                st = [int((i + s) * alpha) - int(s * alpha) for i in range(out[d] - 1)]
                starts.append(st + [size - k[d]])
            for o in np.ndindex(*out):
                best, where = -np.inf, None
                for w in np.ndindex(*k):
                    pos = tuple(starts[d][o[d]] + w[d] for d in range(n))
                    v = x[(b, c) + pos]
                    if v > best or np.isnan(v):
                        best, where = v, np.ravel_multi_index(pos, x.shape[2:])
                vals[(b, c) + o], idx[(b, c) + o] = best, where
    return vals, idx


@pytest.mark.parametrize("n,shape,k,out", [(2, (2, 3, 10, 9), (2, 2), (4, 5)),
                                           (2, (1, 1, 5, 5), (2, 3), (4, 3)),
                                           (3, (1, 2, 8, 9, 7), (2, 2, 2), (3, 4, 5))])
def test_fractional_max_pool_matches_generate_intervals(n, shape, k, out):
    rng = np.random.default_rng(sum(shape))
    x, u = rng.standard_normal(shape), rng.random(shape[:2] + (n,))
    f = getattr(F, f"fractional_max_pool{n}d")
    v, i = f(_t(x), k, output_size=out, return_indices=True, _random_samples=_t(u))
    rv, ri = _ref_fractional(x, k, out, u)
    np.testing.assert_array_equal(_np(v), rv)
    np.testing.assert_array_equal(_np(i), ri)
    assert i.dtype is tgrad.int64
    assert gradcheck(lambda a: f(a, k, output_size=out, _random_samples=_t(u)), (_t(x, True),))


def test_fractional_max_pool_hand_values_and_module():
    nan = float("nan")
    x = _t([[[[1.0, nan, 3.0], [nan, 0.0, 1.0], [2.0, 2.0, 2.0]]]])
    v, i = F.fractional_max_pool2d(x, 2, output_size=2, return_indices=True,
                                   _random_samples=_t([[[0.3, 0.3]]]))
    assert i.tolist() == [[[[3, 1], [3, 7]]]]  # the last NaN in a window, else first max
    assert np.isnan(_np(v)[0, 0, 0]).all() and _np(v)[0, 0, 1].tolist()[1] == 2.0
    # unbatched input, output_ratio: int(size * ratio)
    y = F.fractional_max_pool2d(_t(np.ones((2, 9, 7))), 2, output_ratio=(0.5, 0.5))
    assert y.shape == (2, 4, 3)
    m = tgrad.nn.FractionalMaxPool3d(2, output_size=(2, 3, 2), return_indices=True)
    v, i = m(_t(np.arange(2 * 4 * 5 * 6.0).reshape(1, 2, 4, 5, 6)))
    assert v.shape == (1, 2, 2, 3, 2) and m._random_samples is None
    # the maximum of a window of an increasing ramp is its last element
    np.testing.assert_array_equal(_np(v).reshape(-1), _np(i).reshape(-1) + np.repeat([0, 120],
                                                                                        12))
    with pytest.raises(ValueError, match="requires specifying either an output size, or a "
                                         "pooling ratio"):
        tgrad.nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        tgrad.nn.FractionalMaxPool2d(2, output_ratio=1.0)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        tgrad.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5)
    with pytest.raises(RuntimeError, match="pool height 2 too large relative to input height 10"):
        F.fractional_max_pool2d(_t(np.ones((1, 1, 10, 10))), 2, output_size=(10, 10))
    with pytest.raises(ValueError, match="requires specifying either an output_size"):
        F.fractional_max_pool2d(_t(np.ones((1, 1, 4, 4))), 2)
    for k in (0, (2, -1)):  # empty windows (PyTorch gives -inf): a clear error, not NumPy's
        with pytest.raises(RuntimeError, match=r"fractional_max_pool2d\(\): kernel_size must be "
                                               r"greater than zero, but got \[\d, -?\d\]"):
            F.fractional_max_pool2d(_t(np.ones((1, 1, 4, 4))), k, output_size=1)
    with pytest.raises(RuntimeError, match=r"_random_samples of shape \(1, 1, 2\)"):
        F.fractional_max_pool2d(_t(np.ones((1, 1, 4, 4))), 2, output_size=2,
                                _random_samples=_t(np.zeros((1, 1, 3))))
    tgrad.manual_seed(3)
    a = F.fractional_max_pool2d(_t(np.random.default_rng(0).standard_normal((1, 4, 9, 9))), 2,
                                output_size=4, return_indices=True)[1]
    tgrad.manual_seed(3)
    b = F.fractional_max_pool2d(_t(np.random.default_rng(0).standard_normal((1, 4, 9, 9))), 2,
                                output_size=4, return_indices=True)[1]
    assert a.tolist() == b.tolist()  # the samples come from tgrad's generator


@pytest.mark.parametrize("n,shape", [(2, (0, 3, 5, 5)), (2, (0, 5, 5)), (3, (0, 2, 4, 5, 5))])
def test_fractional_max_pool_empty_batch(n, shape):
    # an empty batch (or unbatched channel) dim gives an empty result, as PyTorch (it
    # raised NumPy's reshape error); an empty channel dim of a batch raises PyTorch's error
    f = getattr(F, f"fractional_max_pool{n}d")
    x = _t(np.zeros(shape), True)
    v, i = f(x, 2, output_size=2, return_indices=True)
    assert v.shape == i.shape == shape[:-n] + (2,) * n and i.dtype is tgrad.int64
    v.sum().backward()
    assert x.grad.shape == shape
    with pytest.raises(RuntimeError, match=r"non-zero size for non-batch dimensions, but "
                                           r"got\[2, 0, 5, 5\] with dimension 1 being empty"):
        F.fractional_max_pool2d(_t(np.zeros((2, 0, 5, 5))), 2, output_size=2)


def test_deterministic_mode_fills_uninitialized_memory_as_pytorch():
    # PyTorch: under use_deterministic_algorithms(True), empty and its relatives are
    # filled (NaN, the largest integer, True) while utils.deterministic says so
    import tgrad.utils.deterministic as deterministic
    tgrad.use_deterministic_algorithms(True)
    try:
        for t in (tgrad.empty(3), tgrad.empty_like(tgrad.ones(2, dtype=tgrad.float64)),
                  tgrad.empty_strided((2, 2), (1, 2)), tgrad.zeros(2).new_empty(4),
                  tgrad.empty(2, dtype=tgrad.complex64)):
            assert np.isnan(t.numpy()).all()
        assert tgrad.empty(3, dtype=tgrad.int32).tolist() == [2 ** 31 - 1] * 3
        assert tgrad.empty(2, dtype=tgrad.uint8).tolist() == [255, 255]
        assert tgrad.empty(2, dtype=tgrad.bool).tolist() == [True, True]
        deterministic.fill_uninitialized_memory = False
        assert tgrad.empty(2).shape == (2,)  # (no fill: any values)
    finally:
        deterministic.fill_uninitialized_memory = True
        tgrad.use_deterministic_algorithms(False)


def test_flush_denormal_and_reduced_precision_flags_are_recorded():
    assert tgrad.set_flush_denormal(True) is False  # not supported: subnormals stay exact
    assert tgrad.tensor([1e-40]).item() == np.float32(1e-40)
    with pytest.raises(TypeError):
        tgrad.set_flush_denormal(1)
    m = tgrad.backends.cuda.matmul
    for name in ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(m, name) is True  # PyTorch's default
        setattr(m, name, False)
        assert getattr(m, name) is False
        setattr(m, name, True)
