"""tgrad.nn.functional: values vs NumPy float64, fused single ops (one graph node, backward
primitives that are ops themselves), higher derivatives, stability, NaN/inf, errors."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from interpreted import run_json

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import grad, gradcheck, gradgradcheck

D = tgrad.float64


def _t(arr, requires_grad=False, dtype=D):
    return tgrad.tensor(np.asarray(arr, dtype=np.float64), dtype=dtype,
                        requires_grad=requires_grad)


def _np(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_nn_exposes_functional():
    import tgrad.nn
    assert tgrad.nn.functional is F


# ---------------------------------------------------------------------- single fused ops
def _leaf_edges(y):
    return [type(n).__name__ for n, _ in y.grad_fn.next_functions if n is not None]


@pytest.mark.parametrize("name,fn,node", [
    ("softmax", lambda x: F.softmax(x, -1), "SoftmaxBackward0"),
    ("log_softmax", lambda x: F.log_softmax(x, 1), "LogSoftmaxBackward0"),
    ("cross_entropy", lambda x: F.cross_entropy(x, tgrad.tensor([0, 2, 1])),
     "NllLossBackward0"),
    ("layer_norm", lambda x: F.layer_norm(x, (4,)), "NativeLayerNormBackward0"),
    ("gelu", F.gelu, "GeluBackward0"),
    ("silu", F.silu, "SiluBackward0"),
    ("softplus", F.softplus, "SoftplusBackward0"),
])
def test_fused_ops_are_one_node(name, fn, node):
    x = tgrad.randn(3, 4, dtype=D, requires_grad=True)
    y = fn(x)
    assert y.grad_fn.name() == node
    assert _leaf_edges(y) == ["AccumulateGrad"], f"{name} must be a single op on its input"
    # Its backward is one op too (the fused backward primitive), recorded under create_graph.
    (gx,) = grad(y.sum(), x, create_graph=True)
    assert gx.grad_fn is not None and "Backward" in gx.grad_fn.name()


@pytest.mark.parametrize("x_shape,grid_shape,node", [
    ((1, 2, 3, 4), (1, 2, 5, 2), "GridSampler2DBackward0"),
    ((2, 2, 2, 3, 4), (2, 1, 2, 3, 3), "GridSampler3DBackward0"),
])
def test_grid_sample_is_one_node(x_shape, grid_shape, node):
    x = tgrad.randn(*x_shape, dtype=D, requires_grad=True)
    g = (tgrad.rand(*grid_shape, dtype=D) * 2.4 - 1.2).requires_grad_()
    y = F.grid_sample(x, g, align_corners=False)
    assert y.grad_fn.name() == node
    assert _leaf_edges(y) == ["AccumulateGrad", "AccumulateGrad"]
    assert y.grad_fn._saved_interpolation_mode == 0 and y.grad_fn._saved_padding_mode == 0
    gx, gg = grad(y.sum(), (x, g), create_graph=True)
    assert gx.grad_fn.name() == gg.grad_fn.name() == node.replace("0", "Backward0")


def test_grid_sample_input_gradient_is_a_deterministic_scatter_add():
    """Many taps of many points land on the same pixels: d input sums them (the same bits
    on every run), equal to the float64 sum of g * weight."""
    rng = np.random.default_rng(3)
    x = _t(rng.standard_normal((2, 3, 4, 5)), True, tgrad.float32)
    pts = rng.choice([-0.5, 0.0, 0.25], size=(2, 7, 9, 2)) + rng.uniform(-1e-3, 1e-3,
                                                                         (2, 7, 9, 2))
    g = _t(pts, dtype=tgrad.float32)
    w = rng.standard_normal((2, 3, 7, 9))
    runs = [_np(grad(F.grid_sample(x, g, align_corners=True), x, _t(w, dtype=tgrad.float32))[0])
            for _ in range(3)]
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
    x64 = _t(_np(x), True)
    (ref,) = grad(F.grid_sample(x64, _t(_np(g)), align_corners=True), x64, _t(w))
    np.testing.assert_allclose(runs[0], _np(ref), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("k,mode,pad", [(k, m, p) for k in (2, 3)
                                         for m in ("bilinear", "nearest", "bicubic")
                                         for p in ("zeros", "border", "reflection")
                                         if not (k == 3 and m == "bicubic")])
def test_grid_sample_nonfinite_grid_matches_the_composition(k, mode, pad):
    """NaN, +-inf and huge coordinates: the fused op's output and both gradients are the
    composed reference's (NaN where it gives NaN, zeros where its wheres and clamps give
    zeros)."""
    from tgrad.nn._grid_sample import _grid_sample_composed
    rng = np.random.default_rng(k)
    pts = rng.uniform(-1.4, 1.4, (1, 2, 4, 2) if k == 2 else (1, 2, 2, 2, 3))
    pts.reshape(-1)[:6] = [np.nan, np.inf, -np.inf, 1e30, -1e30, 1.0]
    x = _t(rng.standard_normal((1, 2, 3, 4) if k == 2 else (1, 2, 3, 4, 2)), True)
    g = _t(pts, True)
    for ac in (False, True):
        y = F.grid_sample(x, g, mode, pad, ac)
        ref = _grid_sample_composed(x, g, mode, pad, ac)
        w = _t(rng.standard_normal(y.shape))
        got = (y,) + grad(y, (x, g), w)
        want = (ref,) + grad(ref, (x, g), w, materialize_grads=True)
        for a, b in zip(got, want):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


_GS_CASES = [(k, m, p) for k in (2, 3) for m in ("bilinear", "nearest", "bicubic")
             for p in ("zeros", "border", "reflection") if not (k == 3 and m == "bicubic")]


@pytest.mark.parametrize("k,mode,pad", _GS_CASES)
def test_grid_sample_batches_channels_and_layouts_match_the_composition(k, mode, pad):
    """Several images and channels (the CPU backward scatters channel by channel, the
    forward gathers tap by tap from a channels-last copy), odd sizes, a transposed input and
    a sliced grid, points on pixels, edges and outside: output and both gradients are the
    composed reference's."""
    from tgrad.nn._grid_sample import _grid_sample_composed
    rng = np.random.default_rng(10 * k + len(mode) + len(pad))
    sp = (5, 7) if k == 2 else (3, 4, 5)
    buf = rng.standard_normal((3,) + sp[::-1] + (4,))  # x = buf permuted: (3, 4, *sp)
    x = _t(buf, True).permute(0, k + 1, *range(k, 0, -1))
    pts = rng.uniform(-1.3, 1.3, (3, 2 * 11) + (3, 2)[:k - 1] + (k,))
    pts.reshape(-1)[::5] = np.round(pts.reshape(-1)[::5] * 4) / 4
    g = _t(pts, True)[:, ::2]
    assert not x.is_contiguous() and not g.is_contiguous()
    for ac in (False, True):
        y = F.grid_sample(x, g, mode, pad, ac)
        ref = _grid_sample_composed(x, g, mode, pad, ac)
        w = _t(rng.standard_normal(y.shape))
        got = (y,) + grad(y, (x, g), w)
        want = (ref,) + grad(ref, (x, g), w, materialize_grads=True)
        for a, b in zip(got, want):
            np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_grid_sample_nearest_forward_copies_the_composition_bits(k, dt):
    """nearest's CPU forward (one row gather of a channels-last copy): the composed
    reference's bytes, NaN payloads, -0.0 and infinities included, every pad mode."""
    from special_values import mixed_specials, raw_bytes

    from tgrad.nn._grid_sample import _grid_sample_composed
    rng = np.random.default_rng(k)
    sp = (5, 7) if k == 2 else (3, 4, 5)
    x = mixed_specials((3, 6) + sp, dt, rng)
    pts = rng.uniform(-1.3, 1.3, (3, 9) + (3, 2)[:k - 1] + (k,)).astype(dt)
    for pad in ("zeros", "border", "reflection"):
        y = F.grid_sample(tgrad.tensor(x), tgrad.tensor(pts), "nearest", pad, False)
        xw, pw = (x, pts) if dt != np.float16 else (x.astype(np.float32), pts.astype(np.float32))
        ref = _grid_sample_composed(tgrad.tensor(xw), tgrad.tensor(pw), "nearest", pad,
                                    False).numpy().astype(dt)
        assert y.numpy().dtype == dt and raw_bytes(y.numpy()) == raw_bytes(ref)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("x_shape,grid_shape", [((0, 2, 3, 4), (0, 2, 2, 2)),
                                                ((2, 0, 3, 4), (2, 2, 2, 2)),
                                                ((2, 3, 3, 4), (2, 0, 5, 2))])
def test_grid_sample_empty_batch_channels_or_points(mode, x_shape, grid_shape):
    x = tgrad.randn(*x_shape, dtype=D, requires_grad=True)
    g = (tgrad.rand(*grid_shape, dtype=D) * 2 - 1).requires_grad_()
    y = F.grid_sample(x, g, mode, "border", False)
    assert tuple(y.shape) == x_shape[:2] + grid_shape[1:3]
    gx, gg = grad(y.sum(), (x, g))
    assert tuple(gx.shape) == x_shape and tuple(gg.shape) == grid_shape
    assert not _np(gx).any() and not _np(gg).any()


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
def test_grid_sample_bicubic_gradcheck_over_batches_and_channels(pad):
    rng = np.random.default_rng(7)
    x = _t(rng.standard_normal((2, 2, 3, 5)), True)
    g = _t(rng.uniform(-1.2, 1.2, (2, 1, 3, 2)), True)
    for ac in (False, True):
        def f(a, b, ac=ac):
            return F.grid_sample(a, b, "bicubic", pad, ac)
        assert gradcheck(f, (x, g))
        if ac == (pad != "zeros"):  # (the double backward differentiates the composition)
            assert gradgradcheck(f, (x, g))


def test_backward_primitives_are_ops():
    x = tgrad.randn(2, 5, dtype=D, requires_grad=True)
    (gx,) = grad(F.softmax(x, 1)[:, 0].sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "SoftmaxBackwardDataBackward0"
    (gx,) = grad(F.log_softmax(x, 1)[:, 0].sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "LogSoftmaxBackwardDataBackward0"
    (gx,) = grad(F.layer_norm(x, (5,))[:, 0].sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "NativeLayerNormBackwardBackward0"
    (gx,) = grad(F.cross_entropy(x, tgrad.tensor([1, 4])), x, create_graph=True)
    assert gx.grad_fn.name() == "NllLossBackwardBackward0"
    (gx,) = grad(F.gelu(x).sum(), x, create_graph=True)
    assert gx.grad_fn.name() == "GeluBackwardBackward0"


# ---------------------------------------------------------------------- softmax family
@pytest.mark.parametrize("n", [1, 17, 1025])
def test_softmax_log_softmax_rows(n):
    a = np.random.default_rng(n).standard_normal((3, n)) * 5
    y = F.softmax(_t(a), dim=1)
    np.testing.assert_allclose(_np(y), _softmax(a, 1), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_np(F.log_softmax(_t(a), -1)), np.log(_softmax(a, 1)),
                               rtol=1e-10, atol=1e-12)


def test_softmax_stable_for_huge_logits():
    x = _t([[1000.0, 1001.0, 999.0], [-1e4, -1e4, -1e4]])
    np.testing.assert_allclose(_np(F.softmax(x, 1)),
                               [_softmax(np.array([1.0, 2.0, 0.0]), 0), [1 / 3] * 3], rtol=1e-12)
    np.testing.assert_allclose(_np(F.log_softmax(_t([1000.0, 0.0]), 0)), [0.0, -1000.0],
                               atol=1e-12)
    x32 = _t([[88.0, 89.0, 100.0]], dtype=tgrad.float32)  # exp(100) overflows float32
    assert np.all(np.isfinite(_np(F.softmax(x32, 1))))
    np.testing.assert_allclose(_np(F.log_softmax(x32, 1)), [[-12.000006, -11.000017, -2.3e-5]],
                               rtol=1e-5, atol=1e-6)


def test_softmax_nan_inf_as_pytorch():
    y = _np(F.softmax(_t([[0.0, np.nan, 1.0], [0.0, np.inf, 1.0], [-np.inf, 0.0, 1.0],
                          [-np.inf, -np.inf, -np.inf]]), 1))
    assert np.all(np.isnan(y[0])) and np.all(np.isnan(y[1])) and np.all(np.isnan(y[3]))
    np.testing.assert_allclose(y[2], [0.0, *_softmax(np.array([0.0, 1.0]), 0)], rtol=1e-12)


def test_softmax_half_computed_in_float32():
    a = np.random.default_rng(5).standard_normal((4, 33)) * 4
    for dt in (tgrad.float16, tgrad.bfloat16):
        x = _t(a, dtype=dt)
        y = F.softmax(x, 1)
        assert y.dtype is dt
        ref = _softmax(_np(x), 1)  # float64 on the rounded inputs
        tol = 1e-3 if dt is tgrad.float16 else 1.6e-2
        np.testing.assert_allclose(_np(y), ref, rtol=tol, atol=1e-5)


def test_softmax_dim_none_warns_and_dtype_arg():
    x = tgrad.randn(2, 3)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        y = F.softmax(x)
    np.testing.assert_allclose(_np(y).sum(1), [1.0, 1.0], rtol=1e-6)
    assert F.softmax(x, 1, dtype=D).dtype is D
    np.testing.assert_array_equal(_np(x.softmax(1)), _np(F.softmax(x, 1)))
    np.testing.assert_array_equal(_np(x.log_softmax(0)), _np(F.log_softmax(x, 0)))


def test_softmax_higher_order():
    """Third derivatives: gradgradcheck of a function that returns first derivatives."""
    x = tgrad.randn(2, 4, dtype=D, requires_grad=True)
    w = tgrad.randn(2, 4, dtype=D)

    def first(t):
        return grad((F.softmax(t, 1) * w).sum(), t, create_graph=True)[0]
    assert gradcheck(first, (x,)) and gradgradcheck(first, (x,))

    def first_ls(t):
        return grad((F.log_softmax(t, 0) * w).sum(), t, create_graph=True)[0]
    assert gradcheck(first_ls, (x,)) and gradgradcheck(first_ls, (x,))


def test_softmax_errors():
    with pytest.raises(RuntimeError,
                       match="softmax: expected a floating point input, got tgrad.int64"):
        F.softmax(tgrad.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="log_softmax: Dimension out of range"):
        F.log_softmax(tgrad.zeros(2, 3), 2)
    with pytest.raises(TypeError, match="softmax\\(\\): argument 'input' must be Tensor"):
        F.softmax([1.0, 2.0], 0)


# ---------------------------------------------------------------------- cross entropy
def _ce_ref(x, t, reduction="mean", ignore_index=-100):
    logp = np.log(_softmax(x, 1))
    keep = t != ignore_index
    loss = np.where(keep, -logp[np.arange(len(t)), np.where(keep, t, 0)], 0.0)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / keep.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_values_and_grad(reduction):
    rng = np.random.default_rng(6)
    a = rng.standard_normal((6, 5)) * 3
    t = np.array([0, 4, -100, 2, 2, -100])
    x = _t(a, requires_grad=True)
    loss = F.cross_entropy(x, tgrad.tensor(t), reduction=reduction)
    np.testing.assert_allclose(_np(loss), _ce_ref(a, t, reduction), rtol=1e-12)
    # analytic gradient: (softmax - onehot) per kept row, / kept count for mean
    g = np.ones(6) if reduction == "none" else 1.0
    loss.backward(tgrad.ones_like(loss) if reduction == "none" else None)
    onehot = np.eye(5)[np.where(t >= 0, t, 0)]
    expect = (_softmax(a, 1) - onehot) * (t >= 0)[:, None] * np.asarray(g).reshape(-1, 1)
    if reduction == "mean":
        expect = expect / 4
    np.testing.assert_allclose(_np(x.grad), expect, rtol=1e-12, atol=1e-15)
    tt = tgrad.tensor(t)
    assert gradgradcheck(lambda z: F.cross_entropy(z, tt, reduction=reduction),
                         (x.detach().requires_grad_(),))


def test_cross_entropy_spatial_and_1d():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 3, 4))
    t = rng.integers(0, 3, (2, 4))
    got = _np(F.cross_entropy(_t(a), tgrad.tensor(t), reduction="none"))
    ref = _ce_ref(np.moveaxis(a, 1, -1).reshape(-1, 3), t.reshape(-1), "none").reshape(2, 4)
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    v = rng.standard_normal(5)
    np.testing.assert_allclose(_np(F.cross_entropy(_t(v), tgrad.tensor(3))),
                               -np.log(_softmax(v, 0))[3], rtol=1e-12)


def test_cross_entropy_1d_input_with_a_target_of_size_1():
    # PyTorch: for a [C] input a [1] target is that class index (a 0-d loss, any reduction);
    # another size is PyTorch's ValueError
    v = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    want = -np.log(_softmax(v, 0))[0]
    x = _t(v, requires_grad=True)
    for red in ("mean", "sum", "none"):
        got = F.cross_entropy(x, tgrad.tensor([0]), reduction=red)
        assert got.shape == () and abs(got.item() - want) < 1e-13
    F.cross_entropy(x, tgrad.tensor([0])).backward()
    np.testing.assert_allclose(_np(x.grad), _softmax(v, 0) - np.eye(5)[0], rtol=1e-12)
    assert F.cross_entropy(x, tgrad.tensor([-100]), reduction="sum").item() == 0.0
    with pytest.raises(ValueError, match="For 1D input, 1D target must have size 1, but got "
                                         "target size: 2"):
        F.cross_entropy(x, tgrad.tensor([0, 1]))


def test_cross_entropy_large_logits_and_all_ignored():
    x = _t([[1000.0, 0.0], [0.0, -1000.0]], requires_grad=True)
    loss = F.cross_entropy(x, tgrad.tensor([1, 0]), reduction="none")
    np.testing.assert_allclose(_np(loss), [1000.0, 0.0], atol=1e-9)
    y = _t(np.zeros((3, 4)), requires_grad=True)
    loss = F.cross_entropy(y, tgrad.tensor([-100, -100, -100]))
    assert math.isnan(loss.item())  # 0/0 as PyTorch
    loss.backward()
    np.testing.assert_array_equal(_np(y.grad), np.zeros((3, 4)))


@pytest.mark.parametrize("loss_fn", [
    lambda x, t: F.cross_entropy(x, t), lambda x, t: F.nll_loss(x, t),
    lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2),
    lambda x, t: F.cross_entropy(x, t, weight=_t([1.0, 2.0, 0.5, 3.0]))])
def test_mean_loss_with_every_target_ignored_double_backward_is_zero(loss_fn):
    # PyTorch 2.13: the mean is 0/0 = NaN, the gradient 0 and the gradient of a function
    # of that gradient (create_graph=True) 0 too, not NaN
    x = _t(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    loss = loss_fn(x, tgrad.tensor([-100, -100, -100]))
    assert math.isnan(loss.item())
    (g,) = grad(loss, x, create_graph=True)
    np.testing.assert_array_equal(_np(g), np.zeros((3, 4)))
    (gg,) = grad((g * g).sum() + (g * x).sum() + g.sin().sum(), x)
    np.testing.assert_array_equal(_np(gg), np.zeros((3, 4)))



@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignored_rows_get_zero_gradient_even_for_nan_g(reduction):
    # PyTorch's nll_loss backward writes nothing on an ignored row, so its gradient is 0
    # whatever g is; the CPU gave NaN there for a NaN (or inf) g (NaN * 0), where the cuda
    # kernel gave PyTorch's 0 (found by the cpu-vs-cuda program fuzzer)
    v = np.array([[0.3, -1.2, 2.0], [1.0, 0.5, -0.5], [0.0, 0.1, 0.2]])
    for gval in (float("nan"), float("inf")):
        x = _t(v, requires_grad=True)
        loss = F.cross_entropy(x, tgrad.tensor([2, -100, 0]), reduction=reduction)
        (g,) = grad(loss, x, tgrad.full(loss.shape, gval, dtype=D))
        got = _np(g)
        np.testing.assert_array_equal(got[1], np.zeros(3))
        assert np.isnan(got[[0, 2]]).all() if math.isnan(gval) else \
            not np.isfinite(got[[0, 2]]).all()

@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-6), ("float16", 1e-3),
                                         ("bfloat16", 1.6e-2)])
def test_cross_entropy_gradient_of_large_logits_keeps_the_compute_precision(dtype, rtol):
    """dx = softmax(x) - onehot from the row's own shifted exponentials: the saved
    log-sum-exp ~1000 is rounded to float32 (ulp 6e-5), so exp(x - lse) was ~1e-5 off in
    float32. Reference: NumPy float64 softmax of the (rounded) logits, rounded to the dtype."""
    dt = getattr(tgrad, dtype)
    x = tgrad.tensor([[1000.0, 1001.0, -3.0, 999.5], [6e4, 6e4, -6e4, 1.0]], dtype=dt,
                     requires_grad=True)
    t = np.array([0, 3])
    F.cross_entropy(x, tgrad.tensor(t), reduction="sum").backward()
    x64 = x.detach().to(D).numpy()
    want = _softmax(x64, 1) - np.eye(4)[t]
    want = tgrad.tensor(want).to(dt).to(D).numpy()
    np.testing.assert_allclose(x.grad.to(D).numpy(), want, rtol=rtol, atol=1e-7)


def test_cross_entropy_target_modified_in_place_is_detected():
    x = tgrad.randn(3, 4, dtype=D, requires_grad=True)
    t = tgrad.tensor([0, 1, 2])
    loss = F.cross_entropy(x, t)
    t.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_cross_entropy_probability_targets():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 4))
    p = _softmax(rng.standard_normal((3, 4)), 1)
    x = _t(a, requires_grad=True)
    loss = F.cross_entropy(x, _t(p))
    np.testing.assert_allclose(loss.item(), -(p * np.log(_softmax(a, 1))).sum(1).mean(),
                               rtol=1e-12)
    assert gradcheck(lambda z: F.cross_entropy(z, _t(p)), (x,))


def test_cross_entropy_errors():
    x = tgrad.zeros(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        F.cross_entropy(x, tgrad.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                       r"batch_size \(2\)"):
        F.cross_entropy(x, tgrad.tensor([0, 1]))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), reduction="bogus")
    with pytest.raises(RuntimeError, match="cross_entropy: Expected target size"):
        F.cross_entropy(tgrad.zeros(2, 3, 4), tgrad.tensor([[0, 1, 2], [0, 1, 2]]))
    with pytest.raises(RuntimeError, match="cross_entropy: expected a floating point input"):
        F.cross_entropy(tgrad.tensor([[1, 2]]), tgrad.tensor([0]))
    with pytest.raises(RuntimeError, match="cross_entropy: weight tensor should be defined "
                       "either for all 4 classes"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), weight=tgrad.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(x, tgrad.tensor([0, 1, 2]), label_smoothing=1.5)


def _ce_weighted_ref(x, t, w, eps, reduction, ignore_index=-100):
    """PyTorch's definition: (1 - eps) nll + eps / C * smooth, both weighted; "mean" divides
    both by the sum of the kept rows' target weights."""
    logp = np.log(_softmax(x, 1))
    keep = t != ignore_index
    ts = np.where(keep, t, 0)
    wt = np.where(keep, w[ts], 0.0)
    nll = -wt * logp[np.arange(len(t)), ts]
    smooth = np.where(keep, -(logp * w).sum(1), 0.0)
    if reduction == "none":
        return (1 - eps) * nll + eps / x.shape[1] * smooth
    if reduction == "sum":
        return (1 - eps) * nll.sum() + eps / x.shape[1] * smooth.sum()
    return ((1 - eps) * nll.sum() + eps / x.shape[1] * smooth.sum()) / wt.sum()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("eps", [0.0, 0.2, -0.1])  # PyTorch checks only eps <= 1
def test_cross_entropy_weight_and_label_smoothing(reduction, eps):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((5, 4))
    w = rng.uniform(0.5, 2.0, 4)
    t = np.array([3, -100, 0, 3, 1])
    x = _t(a, requires_grad=True)
    tt, wt = tgrad.tensor(t), _t(w)
    loss = F.cross_entropy(x, tt, weight=wt, reduction=reduction, label_smoothing=eps)
    # (PyTorch smooths only above 0: a negative eps is the plain loss)
    np.testing.assert_allclose(_np(loss), _ce_weighted_ref(a, t, w, max(eps, 0.0), reduction),
                               rtol=1e-12, atol=1e-14)
    f = lambda z: F.cross_entropy(z, tt, weight=wt, reduction=reduction,  # noqa: E731
                                  label_smoothing=eps)
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    # nll_loss on log-probabilities with the same weights equals the unsmoothed loss
    if eps == 0.0:
        np.testing.assert_allclose(
            _np(F.nll_loss(F.log_softmax(x, 1), tt, weight=wt, reduction=reduction)),
            _np(loss), rtol=1e-12)


def test_cross_entropy_probability_targets_smoothing_and_weight():
    rng = np.random.default_rng(13)
    a = rng.standard_normal((3, 4))
    q = _softmax(rng.standard_normal((3, 4)), 1)
    w = rng.uniform(0.5, 2.0, 4)
    loss = F.cross_entropy(_t(a), _t(q), weight=_t(w), label_smoothing=0.1)
    qs = q * 0.9 + 0.1 / 4
    np.testing.assert_allclose(loss.item(), -(qs * w * np.log(_softmax(a, 1))).sum(1).mean(),
                               rtol=1e-12)


def test_nll_loss_matches_cross_entropy():
    x = tgrad.randn(4, 5, dtype=D, requires_grad=True)
    t = tgrad.tensor([1, -100, 4, 0])
    a = F.nll_loss(F.log_softmax(x, 1), t)
    b = F.cross_entropy(x, t)
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    assert gradcheck(lambda z: F.nll_loss(z, t, reduction="sum"), (x,))


def test_nll_loss_is_one_node_with_a_correct_fused_backward():
    # PyTorch's single NllLossBackward0 (NllLoss2DBackward0 for (N, C, d1, ...)) with one
    # edge; values against NumPy float64, gradients by gradcheck / gradgradcheck over
    # weight, ignore_index, the reductions, 1-d and k-d inputs
    rng = np.random.default_rng(7)
    wn = np.array([0.5, 1.0, 2.0, 1.5])
    cases = [((4,), np.array(2)), ((3, 4), np.array([1, -100, 3])),
             ((2, 4, 3), np.array([[0, 3, -100], [2, 2, 1]]))]
    for shape, tn in cases:
        xn = rng.standard_normal(shape)
        x = tgrad.tensor(xn, dtype=D, requires_grad=True)
        t = tgrad.tensor(tn)
        for reduction, weight in itertools.product(("none", "sum", "mean"), (None, wn)):
            out = F.nll_loss(x, t, weight=None if weight is None else tgrad.tensor(weight),
                             reduction=reduction)
            # reference: -w[t] x[t] per row (the class axis is 0 for a 1-d input, else 1)
            xm = np.moveaxis(xn, 0 if xn.ndim == 1 else 1, -1)
            keep = tn != -100
            safe = np.where(keep, tn, 0)
            wr = (np.ones(4) if weight is None else weight)[safe] * keep
            rows = -np.take_along_axis(xm, safe[..., None], -1)[..., 0] * wr
            ref = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / wr.sum()}[reduction]
            np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-12)
            node = out.grad_fn
            assert node.name() == ("NllLoss2DBackward0" if xn.ndim > 2 else "NllLossBackward0")
            assert len(node.next_functions) == 1 and node.next_functions[0][0].variable is x

            def f(z, t=t, reduction=reduction, weight=weight):
                return F.nll_loss(z, t, reduction=reduction,
                                  weight=None if weight is None else tgrad.tensor(weight))
            assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    # every row ignored: the mean is 0/0 (NaN, as PyTorch) and the gradient 0
    x = tgrad.tensor(rng.standard_normal((2, 3)), dtype=D, requires_grad=True)
    out = F.nll_loss(x, tgrad.tensor([-100, -100]))
    out.backward()
    assert math.isnan(out.item()) and not x.grad.numpy().any()


def test_nll_loss_weight_that_requires_grad_raises():
    # PyTorch's nll_loss does not differentiate its class weight and refuses one that
    # requires grad (tgrad detached it silently: weight.grad stayed None); under no_grad, or
    # detached, it weighs the rows: -(w1 x01 + w0 x10) / (w1 + w0)
    x = _t([[0.1, 0.2], [0.3, 0.4]], requires_grad=True)
    t = tgrad.tensor([1, 0])
    w = _t([2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="The function 'nll_loss_forward' is not "
                                           "differentiable with respect to argument 'weight'"):
        F.nll_loss(x, t, weight=w)
    with tgrad.no_grad():
        v = F.nll_loss(x, t, weight=w).item()
    want = -(3.0 * 0.2 + 2.0 * 0.3) / 5.0
    assert v == pytest.approx(want, rel=1e-15)
    assert F.nll_loss(x, t, weight=w.detach()).item() == pytest.approx(want, rel=1e-15)


# ---------------------------------------------------------------------- layer norm
def _ln_ref(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("n", [1, 17, 1025])
def test_layer_norm_rows(n):
    rng = np.random.default_rng(n)
    a, w, b = rng.standard_normal((3, n)) * 3 + 1, rng.standard_normal(n), rng.standard_normal(n)
    y = F.layer_norm(_t(a), (n,), _t(w), _t(b))
    np.testing.assert_allclose(_np(y), _ln_ref(a, 1, w, b), rtol=1e-10, atol=1e-12)


def test_layer_norm_grads_and_third_order():
    x = tgrad.randn(3, 2, 3, dtype=D, requires_grad=True)
    w = tgrad.randn(2, 3, dtype=D, requires_grad=True)
    b = tgrad.randn(2, 3, dtype=D, requires_grad=True)
    f = lambda x_, w_, b_: F.layer_norm(x_, (2, 3), w_, b_, 1e-3)  # noqa: E731
    assert gradcheck(f, (x, w, b)) and gradgradcheck(f, (x, w, b))
    v = tgrad.randn(3, 2, 3, dtype=D)

    def first(x_, w_):
        return grad((F.layer_norm(x_, (3,), None, None) * v).sum() +
                    (F.layer_norm(x_, (2, 3), w_) * v).sum(), (x_, w_), create_graph=True)
    x2 = tgrad.randn(3, 2, 3, dtype=D, requires_grad=True)
    assert gradgradcheck(first, (x2, w))


def test_layer_norm_non_contiguous_and_half():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((8, 6))
    x = _t(a).t()[:, ::2]  # [6, 4], strided
    np.testing.assert_allclose(_np(F.layer_norm(x, 4)), _ln_ref(a.T[:, ::2], 1), rtol=1e-10,
                               atol=1e-12)
    for dt, tol in ((tgrad.float16, 1e-3), (tgrad.bfloat16, 1.6e-2)):
        xh = _t(a, dtype=dt)
        y = F.layer_norm(xh, (6,))
        assert y.dtype is dt
        np.testing.assert_allclose(_np(y), _ln_ref(_np(xh), 1), rtol=tol, atol=tol)


def test_layer_norm_empty_and_constant_rows():
    x = tgrad.zeros(0, 4, dtype=D, requires_grad=True)
    y = F.layer_norm(x, (4,))
    assert y.shape == (0, 4)
    y.sum().backward()
    assert x.grad.shape == (0, 4)
    c = _t(np.full((2, 3), 7.0), requires_grad=True)
    y = F.layer_norm(c, (3,), eps=1e-5)
    np.testing.assert_array_equal(_np(y), np.zeros((2, 3)))
    (y * _t(np.arange(6.0).reshape(2, 3))).sum().backward()
    assert np.all(np.isfinite(_np(c.grad)))


def test_layer_norm_errors():
    x = tgrad.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"layer_norm: Given normalized_shape=\[5\], expected "
                       r"input with shape \[\*, 5\], but got input of size \[3, 4\]"):
        F.layer_norm(x, (5,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as "
                       "normalized_shape"):
        F.layer_norm(x, (4,), tgrad.ones(3))
    with pytest.raises(RuntimeError, match="layer_norm: expected a floating point input"):
        F.layer_norm(tgrad.tensor([[1, 2]]), (2,))


# ---------------------------------------------------------------------- activations
def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Representable float32 steps between a and b (+0 and -0 the same point)."""
    ia, ib = (v.view(np.int32).astype(np.int64) for v in (a, b))
    ia, ib = (np.where(i < 0, -(i & 0x7FFFFFFF), i) for i in (ia, ib))
    return np.abs(ia - ib)


def test_gelu_float32_within_one_ulp_of_the_float64_path():
    """float32 gelu and its derivative (the CPU's float64 rational fits, no erf) against the
    float64 path rounded: <= 1 ulp on every 1009th float32 from 0 to 16 (subnormals, the
    lower tail to where x Phi(x) and x phi(x) underflow, gelu = x from ~5.9), both signs,
    and at the derivative's root (-0.7517915...), where Phi + x phi cancels (the float32
    formula x cdf + x pdf was 1e9 ulps off there, x cdf 12 ulps off at -2)."""
    from tgrad.backends import _numpy_nn as nb
    mags = np.arange(0, np.float32(16).view(np.int32), 1009, dtype=np.int32).view(np.float32)
    root = np.float32(-0.75179154)
    near = np.array([np.nextafter(root, np.float32(v)) for v in (-1, 0)] + [root], np.float32)
    x = np.concatenate([mags, -mags, near, [3e38, -3e38, -40.0, 1e-45, -1e-45]]).astype(np.float32)
    g = np.float32(1.0) + np.arange(x.size, dtype=np.float32) % 7 / np.float32(8)
    for got, want in ((nb.gelu_fwd(x, "none"), nb.gelu_fwd(x.astype(np.float64), "none")),
                      (nb.gelu_bwd(g, x, "none"),
                       nb.gelu_bwd(g.astype(np.float64), x.astype(np.float64), "none"))):
        assert got.dtype == np.float32
        assert _ulps(got, want.astype(np.float32)).max() <= 1
    under = np.array([-40.0, -1e30], np.float32)  # gelu' underflows to +0.0, as float64's
    np.testing.assert_array_equal(np.signbit(nb.gelu_bwd(np.ones(2, np.float32), under,
                                                         "none")), [False, False])
    d = nb.gelu_bwd(np.ones(3, np.float32), near, "none")  # ~1e-8 relative there, not ~1
    np.testing.assert_allclose(d, nb.gelu_bwd(np.ones(3), near.astype(np.float64), "none"),
                               rtol=1.2e-7, atol=0)


def test_gelu_float32_specials_layouts_and_halves():
    """+-0 (gelu keeps -0.0, gelu'(+-0) = 1/2), +-inf (gelu(inf) = inf, gelu(-inf) and
    gelu'(+-inf) NaN: the float64 path's values), NaN; non-contiguous, F-ordered, 0-d and
    empty inputs; float16/bfloat16 through float32."""
    from tgrad.backends import _numpy_nn as nb
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0], np.float32)
    y, d = nb.gelu_fwd(x, "none"), nb.gelu_bwd(np.full(6, 2.0, np.float32), x, "none")
    np.testing.assert_array_equal(np.signbit(y[:2]), [False, True])
    np.testing.assert_array_equal(y[:5], [0.0, -0.0, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(d[:5], [1.0, 1.0, np.nan, np.nan, np.nan])
    rng = np.random.default_rng(0)
    base = (rng.standard_normal((70, 90)) * 3).astype(np.float32)
    gb = rng.standard_normal((70, 90)).astype(np.float32)
    want_y, want_d = nb.gelu_fwd(base, "none"), nb.gelu_bwd(gb, base, "none")
    for sl in (np.s_[::2, 1::3], np.s_[:, ::-1]):
        np.testing.assert_array_equal(nb.gelu_fwd(base[sl], "none"), want_y[sl])
        np.testing.assert_array_equal(nb.gelu_bwd(gb[sl], base[sl], "none"), want_d[sl])
    xf = np.asfortranarray(base)
    yf = nb.gelu_fwd(xf, "none")
    assert yf.flags.f_contiguous
    np.testing.assert_array_equal(yf, want_y)
    np.testing.assert_array_equal(nb.gelu_bwd(gb, xf, "none"), want_d)  # (g C-, x F-ordered)
    assert nb.gelu_fwd(np.float32(-1.0).reshape(()), "none").shape == ()
    assert nb.gelu_bwd(np.ones(0, np.float32), np.ones(0, np.float32), "none").shape == (0,)
    for dt in (tgrad.float16, tgrad.bfloat16):
        t = tgrad.tensor(base[:3, :5], dtype=dt, requires_grad=True)
        ref = nb.gelu_fwd(t.detach().float().numpy().astype(np.float64), "none")
        F.gelu(t).sum().backward()
        np.testing.assert_allclose(F.gelu(t).detach().float().numpy(), ref, rtol=1e-2, atol=1e-3)
        assert t.grad.dtype == dt
    t = tgrad.tensor(base, requires_grad=True)  # the tensor op takes the same path
    F.gelu(t).backward(tgrad.tensor(gb))
    np.testing.assert_array_equal(t.grad.numpy(), want_d)


def test_activation_values():
    a = np.linspace(-6, 6, 25)
    x = _t(a)
    phi = 0.5 * (1 + np.vectorize(math.erf)(a / math.sqrt(2)))
    np.testing.assert_allclose(_np(F.gelu(x)), a * phi, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(F.gelu(_t(1.0)).item(), 0.8413447460685429, rtol=1e-12)
    tanh_ref = 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))
    np.testing.assert_allclose(_np(F.gelu(x, approximate="tanh")), tanh_ref, rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(_np(F.silu(x)), a / (1 + np.exp(-a)), rtol=1e-12)
    np.testing.assert_allclose(_np(F.softplus(x)), np.log1p(np.exp(a)), rtol=1e-12)
    np.testing.assert_allclose(_np(F.softplus(x, beta=2, threshold=3)),
                               np.where(2 * a > 3, a, np.log1p(np.exp(2 * a)) / 2), rtol=1e-12)
    np.testing.assert_array_equal(_np(F.relu(x)), np.maximum(a, 0))
    big = _t([100.0, -100.0])  # softplus must not overflow
    np.testing.assert_allclose(_np(F.softplus(big)), [100.0, np.exp(-100.0)], rtol=1e-12)


@pytest.mark.parametrize("fn", [F.gelu, lambda x: F.gelu(x, approximate="tanh"), F.silu,
                                F.softplus, lambda x: F.softplus(x, 0.5, 1.0), F.logsigmoid])
def test_activation_third_order(fn):
    x = _t(np.linspace(-2.9, 3.1, 7), requires_grad=True)  # (no point on a threshold)

    def first(t):
        return grad(fn(t).sum(), t, create_graph=True)[0]
    assert gradcheck(first, (x,)) and gradgradcheck(first, (x,))


def test_softplus_second_derivative_at_the_threshold():
    # beta x == threshold: the first derivative takes the smooth branch, sigmoid(beta x)
    # (PyTorch's softplus_backward tests beta x > threshold), the second is 0 (PyTorch's
    # softplus_double_backward masks beta x < threshold); below it beta s (1 - s); NaN stays
    a = np.array([0.5, 0.25, 2.0, np.nan])
    x = _t(a, requires_grad=True)
    g, = grad(F.softplus(x, 2.0, 1.0).sum(), x, create_graph=True)
    s = 1.0 / (1.0 + np.exp(-2.0 * a))
    np.testing.assert_allclose(_np(g), [s[0], s[1], 1.0, np.nan], rtol=1e-14)
    h, = grad(g.sum(), x)
    np.testing.assert_allclose(_np(h), [0.0, 2.0 * s[1] * (1 - s[1]), 0.0, np.nan],
                               rtol=1e-14, atol=0)


def test_activation_second_derivatives_far_out():
    """Second derivatives where s (1 - s) or 1 - tanh^2 cancel (float64, closed forms in NumPy
    with each sigmoid from its own exp and sech^2 = 1 / cosh^2): logsigmoid'' = -s(x) s(-x)
    (was 1e-3 off at x = -30 and 0 at -100), silu'' = s(x) s(-x) (2 + x (s(-x) - s(x))),
    softplus'' = s(x) s(-x) (was 3e-8 off at 19.9), gelu-tanh'' = sech^2(u) (u' - x t u'^2
    + x u''/2) (was 0 at |x| = 10 and NaN at 1e100; the limit 0 there, NaN at inf)."""
    def second(fn, xs):
        x = _t(xs, requires_grad=True)
        g, = grad(fn(x).sum(), x, create_graph=True)
        return _np(grad(g.sum(), x)[0])

    def sig(v):
        return 1.0 / (1.0 + np.exp(-v))

    a = np.array([-100.0, -30.0, -15.0, 15.0, 30.0])
    np.testing.assert_allclose(second(F.logsigmoid, a), -sig(a) * sig(-a), rtol=1e-14)
    a = np.array([-30.0, 15.0, 30.0, 40.0])
    np.testing.assert_allclose(second(F.silu, a),
                               sig(a) * sig(-a) * (2.0 + a * (sig(-a) - sig(a))), rtol=1e-14)
    a = np.array([-30.0, 15.0, 19.9])
    np.testing.assert_allclose(second(F.softplus, a), sig(a) * sig(-a), rtol=1e-14)
    a = np.array([-10.0, -5.0, 5.0, 10.0])
    k0, k1 = math.sqrt(2.0 / math.pi), 0.044715
    u = k0 * (a + k1 * a ** 3)
    du, ddu = k0 * (1.0 + 3.0 * k1 * a * a), 6.0 * k0 * k1 * a
    want = (du - a * np.tanh(u) * du * du + a * ddu / 2.0) / np.cosh(u) ** 2
    tanh_gelu = lambda x: F.gelu(x, approximate="tanh")  # noqa: E731
    np.testing.assert_allclose(second(tanh_gelu, a), want, rtol=1e-13)
    np.testing.assert_array_equal(second(tanh_gelu, [1e100, -1e100, np.inf, -np.inf]),
                                  [0.0, 0.0, np.nan, np.nan])
    x = _t([-8.0, -3.0, 3.0, 8.0], requires_grad=True)  # logsigmoid's new backward node

    def first(t):
        return grad(F.logsigmoid(t).sum(), t, create_graph=True)[0]
    assert gradgradcheck(first, (x,))


def test_activation_errors_and_inplace():
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(tgrad.zeros(2), approximate="fast")
    with pytest.raises(RuntimeError, match="silu: expected a floating point input"):
        F.silu(tgrad.tensor([1, 2]))
    x = _t([-1.0, 2.0])
    assert F.relu(x, inplace=True) is x
    np.testing.assert_array_equal(_np(x), [0.0, 2.0])


# ---------------------------------------------------------------------- linear, mse
def test_linear_and_errors():
    rng = np.random.default_rng(10)
    a, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    np.testing.assert_allclose(_np(F.linear(_t(a), _t(w), _t(b))), a @ w.T + b, rtol=1e-12)
    with pytest.raises(RuntimeError, match=r"linear: mat1 and mat2 shapes cannot be multiplied "
                       r"\(6x4 and 3x5\)"):
        F.linear(_t(a), _t(rng.standard_normal((5, 3))))


def test_mse_loss_values_and_warning():
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for red, ref in (("mean", ((a - b) ** 2).mean()), ("sum", ((a - b) ** 2).sum()),
                     ("none", (a - b) ** 2)):
        np.testing.assert_allclose(_np(F.mse_loss(_t(a), _t(b), reduction=red)), ref,
                                   rtol=1e-12)
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(_t(a), _t(b[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.mse_loss(_t(a), _t(b))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss"])
def test_pointwise_losses_promote_a_0d_operand_as_broadcast(name):
    # PyTorch's losses broadcast input and target first, so a 0-d float64 input with a
    # (n,) float32 target computes in float64 (a plain 0-d - (n,) subtraction is float32)
    x, t = 0.1, np.array([0.3, -1.7, 2.9], dtype=np.float32)
    d = x - t.astype(np.float64)
    ref = {"mse_loss": d * d, "l1_loss": np.abs(d),
           "smooth_l1_loss": np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)}[name]
    fn = getattr(F, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the target-size warning
        for xt, tt in ((tgrad.tensor(x, dtype=D), tgrad.tensor(t)),
                       (tgrad.tensor(t), tgrad.tensor(x, dtype=D))):
            xt.requires_grad_()
            out = fn(xt, tt, reduction="none")
            assert out.dtype is D and out.shape == (3,)
            np.testing.assert_allclose(np.abs(_np(out)), np.abs(ref), rtol=1e-14)
            (g,) = grad(fn(xt, tt).sum(), xt)
            assert g.dtype is xt.dtype and g.shape == xt.shape
        # a 0-d int64 target with a (n,) int32 input: l1_loss's int64 (integers allowed)
        if name == "l1_loss":
            out = fn(tgrad.tensor([1, 5], dtype=tgrad.int32), tgrad.tensor(2), reduction="none")
            assert out.dtype is tgrad.int64
            np.testing.assert_array_equal(_np(out), [1, 3])


def test_cosine_similarity_promotes_a_0d_operand_as_broadcast():
    # PyTorch broadcasts x1 and x2 first: a 0-d float32 x1 with a float16 x2 is float32
    x2 = np.array([0.3, -1.6, 2.2])
    for a, b in ((tgrad.tensor(0.7), tgrad.tensor(x2, dtype=tgrad.float16)),
                 (tgrad.tensor(x2, dtype=tgrad.float16), tgrad.tensor(0.7))):
        out = F.cosine_similarity(a, b, dim=0)
        assert out.dtype is tgrad.float32 and out.shape == ()
        x2h = x2.astype(np.float16).astype(np.float64)
        ref = 0.7 * x2h.sum() / (np.sqrt(3 * 0.49) * np.linalg.norm(x2h))
        np.testing.assert_allclose(_np(out), ref, rtol=1e-6)


# ---------------------------------------------------------------------- dropout
def test_dropout_mask_scale_grad_and_seed():
    x = tgrad.ones(200_000, dtype=D, requires_grad=True)
    tgrad.manual_seed(123)
    y = F.dropout(x, p=0.25)
    vals = _np(y)
    assert set(np.unique(vals)) <= {0.0, 1.0 / 0.75}
    kept = np.mean(vals != 0)
    assert abs(kept - 0.75) < 0.005  # 200k Bernoulli(0.75): std 0.001
    y.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), vals)  # d/dx = mask / (1 - p)
    tgrad.manual_seed(123)
    np.testing.assert_array_equal(_np(F.dropout(x, p=0.25)), vals)  # reproducible


def test_dropout_edge_cases():
    x = tgrad.randn(5, dtype=D, requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    z = F.dropout(x, 1.0)
    np.testing.assert_array_equal(_np(z), np.zeros(5))
    z.sum().backward()
    np.testing.assert_array_equal(_np(x.grad), np.zeros(5))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                       "got 1.5"):
        F.dropout(x, 1.5)


def test_mse_l1_huber_loss_weight():
    # PyTorch's weight= (input's shape): mse/l1 'mean' is sum(w l) / sum(w), huber's is the
    # plain mean of w l; 'sum' and 'none' are sum(w l) and w l for all three.
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    w = rng.uniform(0.1, 2.0, (3, 4))
    d = a - b
    hub = np.where(np.abs(d) < 0.5, 0.5 * d * d, 0.5 * (np.abs(d) - 0.25))
    for fn, kw, lo, by_w in ((F.mse_loss, {}, d * d, True), (F.l1_loss, {}, np.abs(d), True),
                             (F.huber_loss, {"delta": 0.5}, hub, False)):
        refs = {"none": w * lo, "sum": (w * lo).sum(),
                "mean": (w * lo).sum() / w.sum() if by_w else (w * lo).mean()}
        for red, ref in refs.items():
            got = fn(_t(a), _t(b), reduction=red, weight=_t(w), **kw)
            np.testing.assert_allclose(_np(got), ref, rtol=1e-12)
        # the weight's gradient is l (/ sum(w) for 'mean', less the quotient rule's term)
        assert tgrad.autograd.gradcheck(
            lambda x, y, v, fn=fn, kw=kw: fn(x, y, weight=v, **kw),
            (_t(a, requires_grad=True), _t(b, requires_grad=True),
             _t(w, requires_grad=True)))
        with pytest.raises(ValueError, match="Weights and input must have the same size"):
            fn(_t(a), _t(b), weight=_t(w[0]), **kw)


def test_rms_norm_keeps_the_input_dtype_and_batch_norm_needs_both_running_stats():
    # PyTorch: rms_norm's result has input's dtype whatever the weight's; the weight's
    # gradient has the weight's
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3))
    w = rng.uniform(0.5, 2.0, 3)
    want = a / np.sqrt((a * a).mean(1, keepdims=True) + np.finfo(np.float32).eps) * w
    for in_dt, w_dt in ((tgrad.float32, tgrad.float64), (tgrad.float16, tgrad.float32),
                        (tgrad.float64, tgrad.float32)):
        x = tgrad.tensor(a, dtype=in_dt, requires_grad=True)
        wt = tgrad.tensor(w, dtype=w_dt, requires_grad=True)
        y = F.rms_norm(x, (3,), wt, eps=float(np.finfo(np.float32).eps))
        assert y.dtype is in_dt
        np.testing.assert_allclose(y.detach().double().numpy(), want,
                                   rtol=2e-3 if in_dt is tgrad.float16 else 1e-6)
        y.sum().backward()
        assert x.grad.dtype is in_dt and wt.grad.dtype is w_dt
    with pytest.raises(ValueError, match="running_mean and running_var must either both be "
                       "None or neither be None"):
        F.batch_norm(tgrad.ones(2, 2), tgrad.zeros(2), None, training=True)
    assert tgrad.concatenate([tgrad.ones(1), tgrad.zeros(1)], axis=0).tolist() == [1.0, 0.0]


def test_cross_entropy_gradient_at_huge_logits():
    # softmax - onehot from the saved (row max, log-sum) pair: a summed lse rounded log 3 away
    # at 1e30 (every probability read 1); float64 reference: the shifted softmax
    for row, target in (([1e30, 1e30, 1e30], 0), ([3e38, 3e38, -1.0], 1),
                        ([1e300, 1e300 - 1e284, 0.0], 2)):
        x = tgrad.tensor([row], dtype=tgrad.float64, requires_grad=True)
        F.cross_entropy(x, tgrad.tensor([target])).backward()
        a = np.array(row)
        p = np.exp(a - a.max()) / np.exp(a - a.max()).sum()
        p[target] -= 1.0
        np.testing.assert_allclose(x.grad.numpy()[0], p, rtol=1e-15, atol=1e-300)


def test_layer_norm_and_group_norm_of_a_constant_row():
    # the mean of a constant row is that constant (refined once), so xhat is 0 (PyTorch's;
    # sum / n of [1e30] * 3 is off by an ulp and xhat read -1), and NaN with eps = 0 (0 / 0)
    big = tgrad.tensor([[1e30] * 3], dtype=tgrad.float64)
    np.testing.assert_array_equal(F.layer_norm(big, (3,)).numpy(), [[0.0] * 3])
    np.testing.assert_array_equal(F.group_norm(tgrad.tensor([[1e30] * 4], dtype=tgrad.float64),
                                               2).numpy(), [[0.0] * 4])
    assert np.isnan(F.layer_norm(tgrad.tensor([[0.1] * 3], dtype=tgrad.float64), (3,),
                                 eps=0.0).numpy()).all()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 7)) * 1e3 + 5e3
    want = (a - a.mean(1, keepdims=True)) / np.sqrt(a.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(F.layer_norm(tgrad.tensor(a), (7,)).numpy(), want, rtol=1e-12)


def _reflect_np(c: np.ndarray, size: int, ac: bool) -> np.ndarray:
    """PyTorch's documented reflection padding on unnormalized coordinates: reflect by the
    border pixels' centres (align_corners) or their edges, then clip into [0, size - 1]."""
    twice_low, twice_high = (0, 2 * (size - 1)) if ac else (-1, 2 * size - 1)
    if twice_low == twice_high:
        return np.zeros_like(c)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    a = np.abs(c - low)
    extra, flips = np.fmod(a, span), np.floor(a / span)
    out = np.where(flips % 2 == 0, extra + low, span - extra + low)
    return np.clip(out, 0, size - 1)


def _grid_sample_3d_np(x: np.ndarray, grid: np.ndarray, mode: str, ac: bool) -> np.ndarray:
    """5-D grid_sample with padding_mode='reflection' in NumPy float64 loops (x (N, C, D, H,
    W), grid (N, d, h, w, 3) as (x, y, z) = (W, H, D)): trilinear over the 8 neighbours of
    the reflected point (those past the last pixel weigh nothing), or the nearest pixel
    (ties to even, C's nearbyint)."""
    n, c, *sizes = x.shape
    out = np.zeros((n, c) + grid.shape[1:4])
    for b in range(n):
        for idx in np.ndindex(*grid.shape[1:4]):
            pos = []
            for axis, size in zip((2, 1, 0), sizes):  # grid's z, y, x -> D, H, W
                g = grid[(b,) + idx + (axis,)]
                u = (g + 1) / 2 * (size - 1) if ac else ((g + 1) * size - 1) / 2
                pos.append(_reflect_np(np.array(u), size, ac))
            if mode == "nearest":
                out[(b, slice(None)) + idx] = x[(b, slice(None)) + tuple(
                    int(np.rint(p)) for p in pos)]
                continue
            lo = [int(np.floor(p)) for p in pos]
            for corner in np.ndindex(2, 2, 2):
                at = [lo[i] + corner[i] for i in range(3)]
                if any(a > s - 1 for a, s in zip(at, sizes)):
                    continue
                wgt = np.prod([(pos[i] - lo[i]) if corner[i] else (1 - (pos[i] - lo[i]))
                               for i in range(3)])
                out[(b, slice(None)) + idx] += wgt * x[(b, slice(None)) + tuple(at)]
    return out


@pytest.mark.parametrize("sizes", [(1, 1, 1), (1, 3, 4), (3, 1, 4), (3, 4, 1), (1, 1, 5),
                                   (2, 1, 1)])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_5d_reflection_with_size_one_dims_against_numpy(sizes, mode, ac):
    # values, d input (the sampling weights: y is linear in x) and d grid (central finite
    # differences of the reference; 0 for nearest and along a size-1 dim, whose reflected
    # coordinate is constant) against the NumPy float64 reference, points inside and far
    # outside [-1, 1]
    rng = np.random.default_rng(sum(sizes) + 10 * ac + len(mode))
    x = rng.standard_normal((2, 2) + sizes)
    pts = rng.uniform(-1, 1, (2, 2, 3, 2, 3)) * rng.choice([1.0, 2.5, 7.0, 40.0],
                                                          (2, 2, 3, 2, 3))
    w = rng.standard_normal((2, 2, 2, 3, 2))
    xt, gt = _t(x, True), _t(pts, True)
    y = F.grid_sample(xt, gt, mode, "reflection", ac)
    gx, gg = grad(y, (xt, gt), _t(w))
    np.testing.assert_allclose(_np(y), _grid_sample_3d_np(x, pts, mode, ac), rtol=1e-12,
                               atol=1e-12)
    want_gx = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        e = np.zeros_like(x)
        e[i] = 1.0
        want_gx[i] = (w * _grid_sample_3d_np(e, pts, mode, ac)).sum()
    np.testing.assert_allclose(_np(gx), want_gx, rtol=1e-12, atol=1e-12)
    want_gg = np.zeros_like(pts)
    if mode == "bilinear":
        h = 1e-6
        for i in np.ndindex(*pts.shape):
            up, down = pts.copy(), pts.copy()
            up[i] += h
            down[i] -= h
            want_gg[i] = (w * (_grid_sample_3d_np(x, up, mode, ac)
                               - _grid_sample_3d_np(x, down, mode, ac))).sum() / (2 * h)
    np.testing.assert_allclose(_np(gg), want_gg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_mean_of_no_kept_row_double_backward(fn, weighted):
    # reduction='mean' divides by the total weight of the kept rows, 0 here (every target
    # ignored, with or without class weights): loss = 0 / 0 = NaN, dx = 0 (no kept row
    # contributes); dx is linear in the incoming gradient go, dx = go J with J's rows
    # c_i (p_i - onehot_i) / total, so d(sum dx)/d go = sum_i (...) / 0 = NaN (PyTorch's
    # nll_loss double backward: nll_loss of the incoming gradient, mean over no weight),
    # and d(sum dx)/dx = 0 (dx does not vary with x)
    rng = np.random.default_rng(4)
    x = _t(rng.standard_normal((3, 4)), True)
    t = tgrad.tensor([-100, -100, -100])
    weight = _t([1.0, 0.0, 2.0, 0.0]) if weighted else None
    inp = x if fn == "cross_entropy" else F.log_softmax(x, 1)
    loss = getattr(F, fn)(inp, t, weight=weight)
    assert np.isnan(_np(loss))
    go = _t(1.0, True)
    (gx,) = grad(loss, x, go, create_graph=True)
    np.testing.assert_array_equal(_np(gx), np.zeros((3, 4)))
    ggo, ggx = grad(gx.sum(), (go, x), allow_unused=True, materialize_grads=True)
    assert np.isnan(_np(ggo))
    np.testing.assert_array_equal(_np(ggx), np.zeros((3, 4)))
    # some row kept: finite, d(sum dx)/d go = sum_i (p_i - onehot_i) / 1 = 0 by hand
    t2 = tgrad.tensor([2, -100, -100])
    loss2 = getattr(F, fn)(x if fn == "cross_entropy" else F.log_softmax(x, 1), t2)
    (gx2,) = grad(loss2, x, go, create_graph=True)
    (ggo2,) = grad(gx2.sum(), go)
    np.testing.assert_allclose(_np(ggo2), 0.0, atol=1e-15)


def test_cross_entropy_mean_of_zero_total_weight_with_kept_rows():
    # kept rows whose class weights are 0: PyTorch's nll_loss divides by the total weight,
    # c_i = w_i (g / 0) = 0 * inf = NaN on the kept rows (the whole row of dx), 0 on ignored
    # ones (hand); the second order likewise: NaN d/d go, NaN kept rows of d/dx
    rng = np.random.default_rng(6)
    x = _t(rng.standard_normal((3, 4)), True)
    for fn in ("cross_entropy", "nll_loss"):
        inp = x if fn == "cross_entropy" else F.log_softmax(x, 1)
        t, weight = tgrad.tensor([1, -100, 3]), _t([1.0, 0.0, 2.0, 0.0])
        go = _t(1.0, True)
        (gx,) = grad(getattr(F, fn)(inp, t, weight=weight), x, go, create_graph=True)
        want = np.full((3, 4), np.nan)
        want[1] = 0.0
        np.testing.assert_array_equal(_np(gx), want)
        ggo, ggx = grad(gx.sum(), (go, x))
        assert np.isnan(_np(ggo))
        np.testing.assert_array_equal(np.abs(_np(ggx)), want)  # (nll_loss's: -0.0)


def test_cross_entropy_zero_total_weight_on_interpreted_cuda():
    pytest.importorskip("triton")
    res = run_json("""
import json, numpy as np, tgrad, tgrad.nn.functional as F
x0 = np.random.default_rng(6).standard_normal((3, 4))
out = {}
for dev in ("cpu", "cuda"):
    x = tgrad.tensor(x0, device=dev, requires_grad=True)
    w = tgrad.tensor([1.0, 0.0, 2.0, 0.0], dtype=tgrad.float64, device=dev)
    go = tgrad.tensor(1.0, dtype=tgrad.float64, device=dev, requires_grad=True)
    res = []
    for t in ([1, -100, 3], [-100, -100, -100]):
        loss = F.cross_entropy(x, tgrad.tensor(t, device=dev), weight=w)
        (gx,) = tgrad.autograd.grad(loss, x, go, create_graph=True)
        (ggo,) = tgrad.autograd.grad(gx.sum(), go)
        res.append([str(v) for v in gx.detach().cpu().numpy().ravel()] + [str(ggo.item())])
    out[dev] = res
print(json.dumps(out))
""")
    assert res["cuda"] == res["cpu"]
    assert res["cuda"][0][:4] == ["nan"] * 4 and res["cuda"][0][4:8] == ["0.0"] * 4
    assert res["cuda"][1] == ["0.0"] * 12 + ["nan"]
