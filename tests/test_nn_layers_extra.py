"""rrelu in training and the alpha dropouts (random: checked by their structure and
moments; the deterministic layers lp_pool, local_response_norm and rrelu's evaluation form
are in the op table, tests/op_db_nn.py), and the modules' wiring."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck

ALPHA = 1.7580993408473766  # SELU's alpha * scale


def test_rrelu_lower_above_upper_raises():
    # PyTorch checks the bounds in training and evaluation alike; equal bounds are fine
    x = tgrad.tensor([-2.0, 1.0], dtype=tgrad.float64)
    for training in (False, True):
        with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to "
                                               "the upper bound"):
            F.rrelu(x, 0.5, 0.1, training=training)
        assert F.rrelu(x, 0.25, 0.25, training=training).tolist() == [-0.5, 1.0]


def test_local_response_norm_size_must_be_positive():
    x = tgrad.ones(1, 3, 2, dtype=tgrad.float64)
    for size in (0, -1):
        with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
            F.local_response_norm(x, size)
    # size 1: x / (k + alpha x^2)^beta
    np.testing.assert_allclose(F.local_response_norm(x * 2, 1, 0.5, 1.0, 1.0).numpy(),
                               np.full((1, 3, 2), 2.0 / 3.0), rtol=1e-15)


def test_rrelu_training_slopes_and_gradient():
    tgrad.manual_seed(3)
    x = tgrad.tensor(np.concatenate([-np.ones(20000), np.ones(10)]), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.detach().numpy()[:20000]
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 3e-3 and abs(slopes.std() - 0.2 / math.sqrt(12)) < 3e-3
    np.testing.assert_array_equal(y.detach().numpy()[20000:], 1.0)
    y.sum().backward()  # dx = the slope used
    np.testing.assert_allclose(x.grad.numpy()[:20000], slopes, rtol=1e-15)
    tgrad.manual_seed(3)
    again = F.rrelu(x.detach(), 0.1, 0.3, training=True)  # one generator, reproducible
    np.testing.assert_array_equal(again.numpy(), y.detach().numpy())
    m = tgrad.nn.RReLU(0.1, 0.3)
    assert m.eval()(tgrad.tensor([-2.0])).item() == pytest.approx(-0.4)


@pytest.mark.parametrize("feature", [False, True])
def test_alpha_dropout_values_moments_and_gradient(feature):
    tgrad.manual_seed(1)
    p = 0.2
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    shape = (4, 5000, 2) if feature else (40000,)
    x = tgrad.randn(*shape, dtype=tgrad.float64, requires_grad=True)
    y = fn(x, p, training=True)
    a = 1 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    xv, yv = x.detach().numpy(), y.detach().numpy()
    kept = np.isclose(yv, a * xv + a * ALPHA * p, rtol=0, atol=1e-12)
    dropped = np.isclose(yv, -a * ALPHA * (1 - p), rtol=0, atol=1e-12)
    assert (kept | dropped).all() and abs(dropped.mean() - p) < 0.01
    if feature:  # whole channels: the same decision along the last dim
        assert (dropped[..., 0] == dropped[..., 1]).all()
    assert abs(yv.mean()) < 0.02 and abs(yv.std() - 1) < 0.02  # SELU's moments kept
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, a, 0.0), rtol=1e-15)
    assert fn(x, p, training=False) is x
    assert not fn(x.detach(), 1.0, training=True).numpy().any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        fn(x, 1.5, training=True)
    mod = (tgrad.nn.FeatureAlphaDropout if feature else tgrad.nn.AlphaDropout)(p)
    assert mod.eval()(x) is x


def test_lp_pool_and_lrn_modules():
    x = tgrad.tensor(np.abs(np.random.default_rng(0).standard_normal((1, 4, 4, 4))) + 0.1,
                     requires_grad=True)
    out = tgrad.nn.LPPool2d(2, 2)(x)
    want = np.sqrt((x.detach().numpy() ** 2).reshape(1, 4, 2, 2, 2, 2).sum((3, 5)))
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6)
    assert tgrad.nn.LPPool1d(2, 2)(x[0]).shape == (4, 4, 2)
    lrn = tgrad.nn.LocalResponseNorm(3, alpha=0.5)
    assert lrn(x).shape == x.shape
    assert gradcheck(lambda t: F.local_response_norm(t, 3, 0.5), (x.double(),))
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 "
                                         r"dimensions\)"):
        lrn(tgrad.ones(2, 3))


def _np_cross_map_lrn(a: np.ndarray, size: int, alpha: float, beta: float, k: float):
    """The legacy SpatialCrossMapLRN written out in float64: channel c's window is
    [c - size // 2, c + (size - 1) // 2] clipped to the channels."""
    c = a.shape[1]
    s = np.stack([(a[:, max(0, i - size // 2):min(c, i + (size - 1) // 2 + 1)] ** 2).sum(1)
                  for i in range(c)], 1)
    return a / (k + alpha / size * s) ** beta


def test_cross_map_lrn2d_is_local_response_norm_of_4d_input():
    # PyTorch 2.13's CrossMapLRN2d forward drops a channel of the window past the first few
    # channels and its hand-written backward fails gradcheck; tgrad computes the documented
    # maths (LocalResponseNorm's), checked against NumPy and finite differences
    a = np.random.default_rng(4).standard_normal((2, 7, 3, 2))
    x = tgrad.tensor(a, requires_grad=True)
    for size in (1, 2, 3, 5, 9):
        m = tgrad.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)
        np.testing.assert_allclose(m(x).detach().numpy(),
                                   _np_cross_map_lrn(a, size, 0.5, 0.75, 1.5), rtol=1e-12)
        assert gradcheck(m, (x,))
    assert repr(tgrad.nn.CrossMapLRN2d(3)) == "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D "
                                         "instead."):
        tgrad.nn.CrossMapLRN2d(3)(x[0])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_hessian_under_create_graph_matches_finite_differences(mode):
    # d/dx of <v, grad f(x)> (f = sum grid_sample(x, grid)^3): a Hessian-vector product,
    # against central differences of the first gradient; the same with create_graph (the
    # double backward then records itself: its saved g depends on x too) and for the grid
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((1, 2, 3, 4))
    grid0 = rng.uniform(-0.9, 0.9, (1, 2, 3, 2))
    v = rng.standard_normal(x0.shape)

    def grads(x_np, grid_np):
        x = tgrad.tensor(x_np, requires_grad=True)
        grid = tgrad.tensor(grid_np, requires_grad=True)
        out = F.grid_sample(x, grid, mode=mode, align_corners=False).pow(3).sum()
        return x, grid, tgrad.autograd.grad(out, (x, grid), create_graph=True)

    eps = 1e-6
    fd_x = (grads(x0 + eps * v, grid0)[2][0].detach().numpy() -
            grads(x0 - eps * v, grid0)[2][0].detach().numpy()) / (2 * eps)
    fd_grid = (grads(x0 + eps * v, grid0)[2][1].detach().numpy() -
               grads(x0 - eps * v, grid0)[2][1].detach().numpy()) / (2 * eps)
    for create_graph in (False, True):
        x, grid, (gx, ggrid) = grads(x0, grid0)
        s = (gx * tgrad.tensor(v)).sum()  # d s / d x = H_xx v, d s / d grid = H_grid,x v
        hx, hgrid = tgrad.autograd.grad(s, (x, grid), create_graph=create_graph)
        np.testing.assert_allclose(hx.detach().numpy(), fd_x, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(hgrid.detach().numpy(), fd_grid, rtol=1e-6, atol=1e-7)
        assert hx.requires_grad == create_graph


def test_grid_sample_identity_and_errors():
    x = tgrad.randn(2, 3, 4, 5, dtype=tgrad.float64)
    eye = tgrad.tensor(np.tile([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], (2, 1, 1)))
    for ac in (False, True):  # the identity map samples every pixel centre exactly
        y = F.grid_sample(x, F.affine_grid(eye, (2, 3, 4, 5), ac), align_corners=ac)
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=0, atol=1e-15)
    flip = tgrad.tensor(np.tile([[-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], (2, 1, 1)))
    y = F.grid_sample(x, F.affine_grid(flip, (2, 3, 4, 5), True), align_corners=True)
    np.testing.assert_allclose(y.numpy(), x.numpy()[..., ::-1], rtol=0, atol=1e-15)
    g = tgrad.zeros(2, 1, 1, 2, dtype=tgrad.float64)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                         "'bicubic', but got: 'cubic'"):
        F.grid_sample(x, g, mode="cubic")
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(x, g, padding_mode="wrap")
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        F.grid_sample(x, g[:1])
    with pytest.raises(RuntimeError, match="expected input and grid to have same dtype"):
        F.grid_sample(x, g.float())
    # an integer (or bool) input: PyTorch's NotImplementedError naming its kernel
    with pytest.raises(NotImplementedError, match="\"grid_sampler_2d_cpu_kernel_impl\" not "
                                                  "implemented for 'Long'"):
        F.grid_sample(x.long(), g.long())
    with pytest.raises(NotImplementedError, match="\"grid_sampler3d_cpu\" not implemented for "
                                                  "'Int'"):
        F.grid_sample(tgrad.ones(1, 1, 2, 2, 2, dtype=tgrad.int32),
                      tgrad.zeros(1, 1, 1, 1, 3, dtype=tgrad.int32))
    with pytest.raises(ValueError, match=r"Expected a batch of 2D affine matrices of shape "
                                         r"Nx2x3 for size \[2, 3, 4, 5\]"):
        F.affine_grid(tgrad.zeros(2, 3, 3), (2, 3, 4, 5))
    with pytest.raises(RuntimeError, match=r"affine_grid: Expected theta's batch size 1 to "
                                           r"match size\[0\] = 2"):  # (PyTorch: its bmm's)
        F.affine_grid(eye[:1], (2, 3, 4, 5))
    # PyTorch's check order: batch, grid's last dim, empty spatial dims, then 4D/5D
    with pytest.raises(RuntimeError, match=r"expected grid to have size 3 in last dimension, "
                                           r"but got grid with sizes \[2, 1, 1, 1, 2\]"):
        F.grid_sample(x.unsqueeze(2), g.unsqueeze(1))
    with pytest.raises(RuntimeError, match=r"expected 5D input and grid with same number of "
                                           r"dimensions, but got input with sizes "
                                           r"\[2, 3, 1, 4, 5\] and grid with sizes \[2, 1, 3\]"):
        F.grid_sample(x.unsqueeze(2), tgrad.zeros(2, 1, 3, dtype=tgrad.float64))
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(x.unsqueeze(2), tgrad.zeros(2, 1, 1, 1, 3, dtype=tgrad.float64),
                      mode="bicubic")
    with pytest.raises(RuntimeError, match=r"non-empty spatial dimensions, but input has sizes "
                                           r"\[2, 3, 0, 5\] with dimension 2 being empty"):
        F.grid_sample(x[:, :, :0], g)
    with pytest.raises(ValueError, match=r"Expected a batch of 3D affine matrices of shape "
                                         r"Nx3x4 for size \[2, 3, 1, 4, 5\]"):
        F.affine_grid(eye, (2, 3, 1, 4, 5))
    with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D sizes"):
        F.affine_grid(eye, (2, 3, 4))


def test_grid_sample_3d_identity_and_bicubic_by_hand():
    """The 3-D identity affine grid samples every voxel centre; bicubic at a half-pixel
    x is -3/32 (v0 + v3) + 19/32 (v1 + v2) (Keys' kernel, A = -0.75, at t = 1/2), and a
    constant image stays constant away from the borders (the weights sum to 1)."""
    x = tgrad.randn(2, 2, 3, 4, 5, dtype=tgrad.float64)
    eye = tgrad.tensor(np.tile(np.eye(3, 4), (2, 1, 1)))
    for ac in (False, True):
        y = F.grid_sample(x, F.affine_grid(eye, (2, 2, 3, 4, 5), ac), align_corners=ac)
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=0, atol=1e-14)
    cols = np.arange(8.0)
    img = np.tile(cols ** 2, (1, 1, 3, 1))  # (1, 1, 3, 8)
    px = np.array([3.5, 2.3, 4.75])  # pixel columns, >= 2 taps from either border
    gx = (2 * px + 1) / 8 - 1  # align_corners=False normalization; row y = 1 exactly
    grid = np.stack([gx, np.zeros(3)], -1).reshape(1, 1, 3, 2)
    y = F.grid_sample(tgrad.tensor(img), tgrad.tensor(grid), mode="bicubic",
                      align_corners=False).numpy().ravel()
    np.testing.assert_allclose(y[0], -3 / 32 * (4 + 25) + 19 / 32 * (9 + 16), rtol=1e-14)
    y = F.grid_sample(tgrad.tensor(np.full((1, 1, 3, 8), 2.5)), tgrad.tensor(grid),
                      mode="bicubic", align_corners=False).numpy().ravel()
    np.testing.assert_allclose(y, 2.5, rtol=1e-14)


def test_local_response_norm_int64_truncates_window_means():
    # PyTorch runs an int64 input through its integer avg_pool (the window mean of x^2
    # truncated) and the float formula after it (float32). x = [3, 1, 2] over channels,
    # size 2 (one zero padded before): sums 9, 10, 5 -> means 4, 5, 2 (not 4.5, 5, 2.5)
    x = tgrad.tensor([[[3], [1], [2]]])
    y = F.local_response_norm(x, 2, alpha=1.0, beta=1.0, k=0.0)
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy()[0, :, 0], [3 / 4, 1 / 5, 2 / 2], rtol=1e-6)
    # a 4-d input, against NumPy float64 with the truncated means
    xs = np.arange(-5, 19).reshape(1, 4, 2, 3)
    sq = np.pad(xs * xs, ((0, 0), (1, 1), (0, 0), (0, 0)))
    mean = sum(sq[:, i:i + 4] for i in range(3)) // 3
    want = xs / (mean * 0.5 + 2.0) ** 0.75
    y = F.local_response_norm(tgrad.tensor(xs), 3, alpha=0.5, beta=0.75, k=2.0)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)
    for dt in (tgrad.int32, tgrad.bool):  # PyTorch's avg_pool has no other integer kernel
        with pytest.raises(NotImplementedError, match="avg_pool2d"):
            F.local_response_norm(tgrad.ones(1, 2, 3, dtype=dt), 2)


def test_lp_pool_int64_input_truncates_window_means():
    # PyTorch's composite on an int64 input: x^p (int64 for an integer p), its integer
    # avg_pool (the window mean truncated toward zero), times the window, to 1/p (float32).
    # x = [1, -2, 3, 4, -5, 7, 2], p = 2, k = 2: x^2 = 1, 4 | 9, 16 | 25, 49 -> means 2, 12,
    # 37 -> sqrt(4), sqrt(24), sqrt(74)
    x = tgrad.tensor([[[1, -2, 3, 4, -5, 7, 2]]])
    y = F.lp_pool1d(x, 2, 2)
    assert y.dtype is tgrad.float32
    np.testing.assert_allclose(y.numpy().ravel(), np.sqrt([4.0, 24.0, 74.0]), rtol=1e-6)
    # p = 1, ceil_mode: means trunc(-1 / 2) = 0, trunc(7 / 2) = 3, trunc(2 / 2) = 1 and the
    # last window (one element) 2, each times k = 2
    y = F.lp_pool1d(x, 1, 2, ceil_mode=True)
    np.testing.assert_allclose(y.numpy().ravel(), [0.0, 6.0, 2.0, 4.0], rtol=1e-6)
    # 2-d, against NumPy with the truncated means: windows (2, 2), stride 1
    xs = np.array([[1, 2, -3], [4, 5, 7], [2, 2, 1]])
    sq = xs * xs
    sums = np.array([[sq[i:i + 2, j:j + 2].sum() for j in range(2)] for i in range(2)])
    want = np.sqrt((sums // 4) * 4.0)
    y = F.lp_pool2d(tgrad.tensor(xs[None, None]), 2, 2, 1)
    np.testing.assert_allclose(y.numpy()[0, 0], want, rtol=1e-6)
    for dt, kernel in ((tgrad.int32, "avg_pool2d"), (tgrad.uint8, "avg_pool2d")):
        with pytest.raises(NotImplementedError, match=kernel):  # no other integer kernel
            F.lp_pool1d(x.to(dt), 2, 2)
    with pytest.raises(NotImplementedError, match="avg_pool3d_out_frame"):
        F.lp_pool3d(tgrad.ones(1, 2, 2, 2, dtype=tgrad.int16), 2, 1)


def test_grid_sample_affine_grid_and_kl_div_warnings():
    # PyTorch's UserWarnings: align_corners left None (then False), affine_grid's unit-size
    # grid with align_corners=True, kl_div's reduction='mean'
    import warnings
    theta = tgrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], dtype=tgrad.float64)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior has "
                                         "changed to align_corners=False since 1.3.0"):
        grid = F.affine_grid(theta, (1, 1, 2, 3))
    np.testing.assert_allclose(grid.numpy()[0, 0, :, 0], [-2 / 3, 0.0, 2 / 3], rtol=1e-15)
    with pytest.warns(UserWarning, match="Default grid_sample and affine_grid behavior"):
        F.grid_sample(tgrad.ones(1, 1, 2, 3, dtype=tgrad.float64), grid)
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size grids "
                                         "when align_corners=True"):
        F.affine_grid(theta, (1, 1, 1, 3), align_corners=True)
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss by both the "
                                         "batch size and the support size"):
        F.kl_div(tgrad.zeros(2, 3), tgrad.ones(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.affine_grid(theta, (1, 1, 2, 3), align_corners=False)
        F.kl_div(tgrad.zeros(2, 3), tgrad.ones(2, 3), reduction="batchmean")
