"""histogram and gradient against NumPy (np.histogram, np.gradient) in float64: equal bins,
given edges, weights, density, the right-closed last bin, out-of-range values, constant
inputs; uniform and coordinate spacings, both edge orders, dims; gradcheck; errors."""

from __future__ import annotations

import math
import statistics

import ml_dtypes
import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck

F64 = tgrad.float64
RNG = np.random.default_rng(41)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


@pytest.mark.parametrize("bins,rng", [(10, None), (7, (-1.0, 1.5)), (1, None)])
def test_histogram_equal_bins(bins, rng):
    x = RNG.standard_normal((40, 25))
    h, e = tgrad.histogram(_t(x), bins, range=rng)
    hn, en = np.histogram(x, bins, range=rng)
    np.testing.assert_array_equal(h.numpy(), hn)
    np.testing.assert_allclose(e.numpy(), en, rtol=1e-15)


def test_histogram_points_outside_count_nothing_whatever_their_weight():
    # a NaN or inf weight on a point outside the range made its clamped bin NaN (w * 0);
    # NumPy (and PyTorch) leave such points out
    x = np.array([1.0, 2.0, 30.0, -5.0])
    w = np.array([1.0, 5.0, np.nan, np.inf])
    for bins in (2, tgrad.tensor([0.0, 2.0, 4.0], dtype=tgrad.float64)):
        for density in (False, True):
            h, e = tgrad.histogram(tgrad.tensor(x), bins=bins, weight=tgrad.tensor(w),
                                   density=density,
                                   **({} if isinstance(bins, tgrad.Tensor) else
                                      {"range": (0.0, 4.0)}))
            want, _ = np.histogram(x, bins=2, range=(0.0, 4.0), weights=w, density=density)
            np.testing.assert_allclose(h.numpy(), want, rtol=1e-15)
    pts = np.array([[1.0, 1.0], [30.0, 1.0], [1.0, -7.0]])
    wd = np.array([1.0, np.nan, np.inf])
    h, _ = tgrad.histogramdd(tgrad.tensor(pts), bins=[2, 2], range=[0.0, 4.0, 0.0, 4.0],
                             weight=tgrad.tensor(wd))
    want, _ = np.histogramdd(pts, bins=[2, 2], range=[(0.0, 4.0), (0.0, 4.0)], weights=wd)
    np.testing.assert_array_equal(h.numpy(), want)
    # the edges returned are a new tensor, not the caller's bins
    bins = tgrad.tensor([0.0, 1.0, 2.0, 3.0])
    e = tgrad.histogram(tgrad.tensor([0.5]), bins=bins).bin_edges
    assert e is not bins
    e.mul_(10)
    assert bins.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_histogram_edges_weights_density_and_edge_cases():
    x = np.array([-2.0, -1.0, 0.0, 0.25, 0.5, 1.0, 2.0, 2.0, 3.0])
    edges = np.array([-1.0, 0.0, 0.5, 2.0])
    w = RNG.random(x.size)
    for density in (False, True):
        h, e = tgrad.histogram(_t(x), _t(edges), weight=_t(w), density=density)
        hn, _ = np.histogram(x, edges, weights=w, density=density)
        np.testing.assert_allclose(h.numpy(), hn, rtol=1e-14)
    h, _ = tgrad.histogram(_t(x), _t(edges))  # 2.0 (the last edge) lands in the last bin
    np.testing.assert_array_equal(h.numpy(), np.histogram(x, edges)[0])
    h, e = tgrad.histogram(_t([3.0, 3.0]), 4)  # equal min and max: widened by 1/2
    np.testing.assert_allclose(e.numpy(), np.histogram([3.0, 3.0], 4)[1])
    np.testing.assert_array_equal(h.numpy(), np.histogram([3.0, 3.0], 4)[0])
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        tgrad.histogram(_t(x), 0)
    h, e = tgrad.histogram(_t(np.zeros(0)), 4)  # empty input: the range is [0, 1] (NumPy's)
    np.testing.assert_allclose(e.numpy(), np.histogram(np.zeros(0), 4)[1])
    np.testing.assert_array_equal(h.numpy(), [0.0] * 4)
    h, e = tgrad.histogramdd(_t(np.zeros((0, 2))), [2, 3])
    np.testing.assert_allclose(e[1].numpy(), [0.0, 1 / 3, 2 / 3, 1.0])
    assert h.shape == (2, 3)
    for bad in ([1.0, np.nan, 2.0], [1.0, np.inf]):  # a non-finite range raises (PyTorch's)
        with pytest.raises(RuntimeError, match=r"torch\.histogram: dimension 0's range .* is "
                                               r"not finite"):
            tgrad.histogram(_t(bad), 4)
    with pytest.raises(RuntimeError, match=r"histogram: dimension 0's range \[0, inf\]"):
        tgrad.histogram(_t(x), 4, range=(0.0, math.inf))
    with pytest.raises(RuntimeError, match=r"histogramdd: dimension 1's range \[nan, nan\]"):
        tgrad.histogramdd(_t([[1.0, np.nan]]), 2)
    with pytest.raises(RuntimeError, match="same shape as the input"):
        tgrad.histogram(_t(x), 3, weight=_t([1.0]))
    # a weight of another dtype is refused, not converted (PyTorch's error)
    with pytest.raises(RuntimeError, match=r"input tensor and weight tensor should have the "
                                           r"same dtype, but got input\(float64\), and "
                                           r"weight\(float32\)"):
        tgrad.histogram(_t(x), 3, weight=_t(x).float())
    with pytest.raises(RuntimeError, match=r"histogramdd: .* same dtype"):
        tgrad.histogramdd(_t([[1.0, 2.0]]), 2, weight=tgrad.ones(1))
    # bins: an int or an edges tensor (a list was int()'s TypeError); range= only with an
    # int (PyTorch has no overload with both: it was ignored)
    with pytest.raises(TypeError, match="argument 'bins' must be int or Tensor, not list"):
        tgrad.histogram(_t(x), [0.0, 1.0, 2.0])
    with pytest.raises(TypeError, match="range= goes with an int bins only"):
        tgrad.histogram(_t(x), _t([0.0, 1.0, 2.0]), range=(0.0, 1.0))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(edge_order):
    f = RNG.standard_normal((5, 6, 4))
    got = tgrad.gradient(_t(f), spacing=(0.5, 2.0, 1.5), edge_order=edge_order)
    for g, w in zip(got, np.gradient(f, 0.5, 2.0, 1.5, edge_order=edge_order)):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-13, atol=1e-13)
    xs = np.cumsum(RNG.uniform(0.1, 1.0, 6))
    (g,) = tgrad.gradient(_t(f), spacing=[_t(xs)], dim=1, edge_order=edge_order)
    np.testing.assert_allclose(g.numpy(), np.gradient(f, xs, axis=1, edge_order=edge_order),
                               rtol=1e-12, atol=1e-12)
    (g,) = tgrad.gradient(_t(f), spacing=3.0, dim=-1, edge_order=edge_order)
    np.testing.assert_allclose(g.numpy(), np.gradient(f, 3.0, axis=-1, edge_order=edge_order),
                               rtol=1e-13, atol=1e-13)
    ints = tgrad.tensor([1, 4, 9, 16])
    np.testing.assert_allclose(tgrad.gradient(ints)[0].numpy(), np.gradient([1, 4, 9, 16]))


def test_gradient_gradcheck_and_errors():
    x = _t(RNG.standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(lambda t: tgrad.gradient(t, edge_order=2), (x,))
    with pytest.raises(RuntimeError, match="edge_order=1 and edge_order=2"):
        tgrad.gradient(x, edge_order=3)
    with pytest.raises(RuntimeError, match="at least edge_order\\+1"):
        tgrad.gradient(_t([1.0, 2.0]), edge_order=2)
    with pytest.raises(RuntimeError, match="same length"):
        tgrad.gradient(x, spacing=[1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        tgrad.gradient(x, dim=[1, -1])


def test_float32_cumsum_accumulates_in_float64_on_cpu():
    """PyTorch's CPU cumsum runs a float32 sum in double: each prefix is the float64
    prefix sum rounded once (a float32 running sum drifts by ~1e-3 relative here)."""
    rng = np.random.default_rng(3)
    x = (rng.random((3, 200_001)) + 0.1).astype(np.float32)
    want = np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)
    got = tgrad.tensor(x).cumsum(1).numpy()
    np.testing.assert_array_equal(got, want)
    want_rev = np.flip(np.cumsum(np.flip(x.astype(np.float64), 1), axis=1), 1)
    got_rev = tgrad.tensor(x).flip(1).cumsum(1).flip(1).numpy()
    np.testing.assert_array_equal(got_rev, want_rev.astype(np.float32))
    # the gradient (a reversed cumsum of g) takes the same path
    t = tgrad.tensor(x[0], requires_grad=True)
    g = rng.random(x.shape[1]).astype(np.float32)
    t.cumsum(0).backward(tgrad.tensor(g))
    want_grad = np.flip(np.cumsum(np.flip(g.astype(np.float64)))).astype(np.float32)
    np.testing.assert_array_equal(t.grad.numpy(), want_grad)


def test_complex64_cumsum_accumulates_in_complex128_on_cpu():
    # as float32 in float64 (PyTorch's CPU accumulation type for both)
    rng = np.random.default_rng(5)
    x = ((rng.random(20_001) + 0.1) + 1j * (rng.random(20_001) + 0.1)).astype(np.complex64)
    want = np.cumsum(x.astype(np.complex128)).astype(np.complex64)
    np.testing.assert_array_equal(tgrad.tensor(x).cumsum(0).numpy(), want)


def test_gradient_refuses_uint8_and_bool_as_pytorch():
    # PyTorch raises (a uint8 difference would wrap); int32/int64 compute in float
    with pytest.raises(RuntimeError, match="torch.gradient does not support uint8 input"):
        tgrad.gradient(tgrad.tensor([1, 0, 1, 1], dtype=tgrad.uint8))
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        tgrad.gradient(tgrad.tensor([True, False, True]))
    (g,) = tgrad.gradient(tgrad.tensor([1, 0, 1, 1], dtype=tgrad.int32))
    np.testing.assert_array_equal(g.numpy(), np.gradient(np.array([1.0, 0.0, 1.0, 1.0])))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("shape,dim", [((3,), None), ((7, 2049), 1), ((5, 3, 6), (0, 2))])
def test_mean_backward_divides_once_in_the_gradient_dtype(dtype, shape, dim):
    """mean's gradient is g / n broadcast back: one division in g's dtype (float32 for
    halves, as PyTorch's Tensor / Scalar), the same bits in a plain backward (the backend's
    division) and under create_graph (the recorded div op)."""
    dt = getattr(tgrad, dtype)
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.standard_normal(shape), dtype=dt, requires_grad=True)
    kw = {} if dim is None else {"dim": dim}
    y = x.mean(**kw)
    g64 = rng.standard_normal(y.shape)
    g = tgrad.tensor(g64, dtype=dt)
    n = x.numel() // max(y.numel(), 1)
    gd = g.numpy()
    if dtype in ("float16", "bfloat16"):
        want = (gd.astype(np.float32) / np.float32(n)).astype(gd.dtype)
    else:  # a quotient of exact operands, correctly rounded from float64
        want = (gd.astype(np.float64) / n).astype(gd.dtype)
    keep = [1 if dim is None or i in (dim if isinstance(dim, tuple) else (dim,)) else s
            for i, s in enumerate(shape)]
    want = np.broadcast_to(want.reshape(keep), shape)
    y.backward(g, retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    (recorded,) = tgrad.autograd.grad(y, x, g, create_graph=True)
    np.testing.assert_array_equal(recorded.detach().numpy(), want)


@pytest.mark.parametrize("dtype,values", [
    ("float16", [0.0, 500.0]),  # variance 125000 > float16's max; std 353.55 fits
    ("bfloat16", [0.0, 3e19, 1e38]),  # variance past bfloat16's ~3.4e38
    ("float32", [1e30, 3e38]),  # variance past float32's range
    ("float32", [1e-30, 1e-25, 1e-40]),  # variance below float32's smallest subnormal
    ("float64", [1.0, 2.0, 4.0]),
])
def test_std_is_rooted_before_rounding_to_the_input_dtype(dtype, values):
    """std = sqrt(var) taken before the one rounding to the input's dtype, as PyTorch's CPU
    std (double accumulation): the std fits where the variance does not (before: inf or 0,
    with a 0 gradient). Reference: Python's statistics.stdev (exact rational variance) of
    the same (rounded) values; NumPy's two-pass is 1 ulp off for [1, 2, 4]."""
    dt = getattr(tgrad, dtype)
    x = tgrad.tensor(values, dtype=dt, requires_grad=True)
    xs = x.detach().to(tgrad.float64).numpy()
    want = np.float64(statistics.stdev(xs.tolist()))
    y = x.std()
    np.testing.assert_array_equal(y.detach().to(tgrad.float64).numpy(),
                                  tgrad.tensor(want).to(dt).to(tgrad.float64).numpy())
    s, m = tgrad.std_mean(x)
    np.testing.assert_array_equal(s.detach().numpy(), y.detach().numpy())
    y.backward()
    # d std / dx_i = (x_i - mean) / ((N - 1) std), in float64, rounded to the dtype
    want_grad = (xs - xs.mean()) / ((len(xs) - 1) * want)
    np.testing.assert_allclose(x.grad.to(tgrad.float64).numpy(), want_grad,
                               rtol={"float16": 1e-3, "bfloat16": 8e-3}.get(dtype, 1e-6))


def test_float32_var_accumulates_in_float64_on_cpu():
    """PyTorch's CPU var runs float32 in double: the result is the float64 variance rounded
    once (a float32 computation of a 1e4-offset row loses ~1e-4 relative)."""
    rng = np.random.default_rng(8)
    x = (1e4 + rng.standard_normal((4, 10001))).astype(np.float32)
    want = np.var(x.astype(np.float64), axis=1, ddof=1).astype(np.float32)
    np.testing.assert_array_equal(tgrad.tensor(x).var(1).numpy(), want)
    np.testing.assert_array_equal(tgrad.tensor(x).std(1).numpy(),
                                  np.sqrt(np.var(x.astype(np.float64), axis=1, ddof=1))
                                  .astype(np.float32))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex128"])
def test_var_std_of_constant_slices_are_exactly_zero(dtype):
    """var/std shift each slice by its first element before the mean (var is shift-invariant):
    a constant slice gives exactly 0, as PyTorch's Welford does (the plain mean of 3 copies
    of 0.846 rounds, leaving std 1.4e-16 and a 1/std gradient of ~1e15). Reference: hand
    values (0 for constant slices, the std gradient's 0 subgradient there) and NumPy float64
    for the non-constant slices."""
    dt = getattr(tgrad, dtype)
    c = tgrad.tensor([[0.846]], dtype=dt).expand(3, 1, 1)  # a stride-0 view
    for f in (lambda t: t.var(0), lambda t: t.std(0), lambda t: tgrad.var_mean(t, 0)[0],
              lambda t: tgrad.std_mean(t, 0)[0], lambda t: t.std(), lambda t: t.var((0, 2))):
        np.testing.assert_array_equal(f(c).numpy(), np.zeros(f(c).shape))
    vals = np.array([[0.846, 0.846, 0.846, 0.846, 0.846], [-5.356693731611109] * 5,
                     [1.0, 2.0, 4.0, 8.0, 1e8]])
    x = tgrad.tensor(vals, dtype=dt, requires_grad=True)
    xs = x.detach().numpy().astype(np.complex128 if dtype == "complex128" else np.float64)
    want = np.std(xs, axis=1, ddof=1)
    y = x.std(1)
    np.testing.assert_array_equal(y.detach().numpy()[:2], [0.0, 0.0])
    np.testing.assert_allclose(y.detach().numpy()[2], want[2], rtol=1e-6 if dtype == "float32"
                               else 1e-14)
    y.sum().backward()
    gw = (xs - xs.mean(1, keepdims=True)) / (4 * want[:, None])  # 0 rows 0: the subgradient
    gw[:2] = 0
    np.testing.assert_array_equal(x.grad.numpy()[:2], np.zeros((2, 5)))
    np.testing.assert_allclose(x.grad.numpy()[2], gw[2], rtol=1e-5 if dtype == "float32"
                               else 1e-12)
    # inf / NaN as before: any non-finite element makes the slice's variance NaN
    z = tgrad.tensor([[math.inf, 1.0], [1.0, math.inf], [math.nan, 1.0]], dtype=dt)
    assert np.isnan(z.var(1).numpy()).all()


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_takes_complex_spacing(edge_order):
    # PyTorch computes with complex steps and coordinates (tgrad dropped the imaginary part
    # of coordinates with a warning and raised TypeError for spacing=1j). Reference: NumPy's
    # gradient of the values made complex (it casts to the values' dtype otherwise)
    f = RNG.standard_normal((5, 4))
    xs = np.cumsum(RNG.uniform(0.1, 1.0, 5) + 1j * RNG.uniform(-1.0, 1.0, 5))
    (g,) = tgrad.gradient(_t(f), spacing=(tgrad.tensor(xs),), dim=0, edge_order=edge_order)
    assert g.dtype is tgrad.complex128
    np.testing.assert_allclose(g.numpy(), np.gradient(f + 0j, xs, axis=0,
                                                      edge_order=edge_order), rtol=1e-12)
    for spacing in (0.5 - 2j, (0.5 - 2j,), tgrad.tensor(0.5 - 2j)):  # uniform complex steps
        (g,) = tgrad.gradient(_t(f), spacing=spacing, dim=1, edge_order=edge_order)
        np.testing.assert_allclose(g.numpy(), np.gradient(f + 0j, 0.5 - 2j, axis=1,
                                                          edge_order=edge_order), rtol=1e-12)
    # dtypes as PyTorch's promotion: float32 values, complex step -> complex64; complex64
    # coordinates -> complex64; complex values over real coordinates stay complex
    f32 = tgrad.tensor(f, dtype=tgrad.float32)
    assert tgrad.gradient(f32, spacing=1j, dim=0)[0].dtype is tgrad.complex64
    c64 = tgrad.tensor(xs, dtype=tgrad.complex64)
    assert tgrad.gradient(f32, spacing=(c64,), dim=0)[0].dtype is tgrad.complex64
    (g,) = tgrad.gradient(tgrad.tensor(f * (1 + 2j)), spacing=(tgrad.tensor(xs.real),), dim=0)
    np.testing.assert_allclose(g.numpy(), np.gradient(f * (1 + 2j), xs.real, axis=0),
                               rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_2norm_gradient_divides_before_scaling(dtype):
    """d||x||_2/dx = g (x / ||x||): the ratio first, as PyTorch's norm_backward, so neither
    g x overflowing (x = 6e4, g = 2 in float16 gave inf; with ||x|| = inf, NaN) nor g x
    falling into the subnormals (x ~ 1e-7) spoils the gradient. Reference: NumPy float64 of
    the rounded inputs, rounded to the dtype."""
    dt = getattr(tgrad, dtype)
    rtol = {"float16": 1e-3, "bfloat16": 1.6e-2}[dtype]
    for xs, g in (([6e4, 1.0, -3e4], 2.0), ([1e-7, 2e-7, 0.0, -1e-7], 0.5),
                  ([6e4, 6e4, 1.0], 3.0)):  # the last: ||x|| overflows float16, x / inf = 0
        for f in (lambda x: x.norm(), lambda x: tgrad.linalg.vector_norm(x, dim=0),
                  lambda x: tgrad.dist(x, tgrad.zeros_like(x))):
            x = tgrad.tensor(xs, dtype=dt, requires_grad=True)
            y = f(x)
            y.backward(tgrad.tensor(g, dtype=dt))
            x64 = x.detach().to(tgrad.float64).numpy()
            y64 = y.detach().to(tgrad.float64).numpy()  # the forward's (possibly inf) norm
            want = tgrad.tensor(g * (x64 / y64)).to(dt).to(tgrad.float64).numpy()
            np.testing.assert_allclose(x.grad.to(tgrad.float64).numpy(), want, rtol=rtol,
                                       atol=1e-5)


@pytest.mark.parametrize("p", [math.inf, -math.inf])
def test_inf_norm_gradient_of_a_row_with_nan_stays_at_the_nan(p):
    """The +-inf norm of a row holding a NaN is NaN; its gradient goes to the NaN element(s)
    only (PyTorch's mask |x| == y or isnan(x)), not NaN over the whole row (the tie count
    was 0 there, g / 0 * 0). The NaN element's own gradient is g sign(NaN) = NaN (tgrad's
    sign of NaN, docs/design.md). By hand; a NaN-free row is unchanged (ties share)."""
    x = tgrad.tensor([[1.0, math.nan, -2.0, 3.0], [-3.0, 1.0, 3.0, 3.0]], dtype=F64,
                     requires_grad=True)
    tgrad.linalg.vector_norm(x, p, dim=1).backward(tgrad.tensor([2.0, 3.0], dtype=F64))
    row1 = [-1.0, 0.0, 1.0, 1.0] if p > 0 else [0.0, 3.0, 0.0, 0.0]
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, math.nan, 0.0, 0.0], row1])


def test_float32_pow_of_a_number_is_correctly_rounded():
    # the exponent rounded to float32 (PyTorch's vectorized CPU loop), the power computed
    # in double and rounded once: exactly NumPy's float64 power of the same operands
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-3, 3, 200), rng.uniform(0, 1e-3, 20),
                        [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e30]]).astype(np.float32)
    for e in (0.1, 1 / 3, 2.5, 1.5, -1.5, 7.0, 4.0, -3.0, 100.5, 3.7, 2.0000001, 16777217.0):
        want = np.power(x.astype(np.float64), np.float64(np.float32(e))).astype(np.float32)
        got = (tgrad.tensor(x) ** e).numpy()
        np.testing.assert_array_equal(got, want, err_msg=str(e))
    assert (tgrad.tensor([-1.0]) ** 2.0000001).tolist() == [1.0]  # (2.0000001f is 2)


@pytest.mark.parametrize("dt, np_dt", [(tgrad.float16, np.float16),
                                        (tgrad.bfloat16, ml_dtypes.bfloat16)])
def test_add_sub_alpha_of_halves_read_alpha_and_numbers_in_the_half_dtype(dt, np_dt):
    # PyTorch's kernel: round(x + half(alpha) * y) computed in float32 (tgrad used the
    # exact alpha: 10-16 of 64 results differed), and a number operand is a half value
    # (sub(ones, 1e5, alpha=0.3) in float16 is -inf: 1e5 is inf there)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np_dt)
    y = rng.standard_normal(64).astype(np_dt)
    tx, ty = tgrad.tensor(x.astype(np.float32)).to(dt), tgrad.tensor(y.astype(np.float32)).to(dt)
    for alpha in (0.3, 1 / 3, -2.5):
        a = np.float64(np.asarray(alpha, np_dt).astype(np.float64))
        want_add = (x.astype(np.float64) + a * y.astype(np.float64)).astype(np.float32)
        want_sub = (x.astype(np.float64) - a * y.astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(tgrad.add(tx, ty, alpha=alpha).float().numpy(),
                                      want_add.astype(np_dt).astype(np.float32))
        np.testing.assert_array_equal(tgrad.sub(tx, ty, alpha=alpha).float().numpy(),
                                      want_sub.astype(np_dt).astype(np.float32))
    if dt is tgrad.float16:
        r = tgrad.sub(tgrad.ones(2, dtype=dt), 1e5, alpha=0.3)
        assert np.isneginf(r.float().numpy()).all()


# ----------------------------------------------- float32 sums along axes NumPy loops outward
def _ulps32(got: np.ndarray, exact: np.ndarray) -> float:
    """Largest error of float32 results in units of the last place of the exact values."""
    spacing = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return float(np.max(np.abs(got.astype(np.float64) - exact) / spacing))


@pytest.mark.parametrize("shape, dims, transposed", [
    ((200_000, 3), (0,), False),      # rows of a C-contiguous array: NumPy's running total
    ((3, 200_000), (1,), True),       # the same memory read through a transposed view
    ((4, 30_000, 5), (1,), False),    # a middle dim ((batch, time, channel) pooling)
    ((40, 6, 30, 30), (0, 2, 3), False),  # batch norm's statistics
])
def test_float32_sum_and_mean_stay_within_a_few_ulps_along_any_dim(shape, dims, transposed):
    # NumPy sums pairwise only along the axis it loops innermost; along others it keeps one
    # float32 running total per output (1e6 rows of 0.1 summed to 100958, +0.96%). tgrad
    # sums those axes in blocks (tgrad/backends/_numpy_sum.py), like PyTorch's cascade sum.
    rng = np.random.default_rng(5)
    a = (0.1 + 0.2 * rng.random(shape[::-1] if transposed else shape)).astype(np.float32)
    a = a.T if transposed else a
    exact = a.astype(np.float64).sum(axis=dims)
    x = tgrad.from_numpy(a)
    assert _ulps32(x.sum(dims).numpy(), exact) <= 8
    assert _ulps32(x.mean(dims).numpy(), exact / math.prod(shape[d] for d in dims)) <= 8
    m = x.amax(dims, keepdim=True)  # logsumexp reduces the same way
    exact_lse = np.log(np.exp(a.astype(np.float64) - m.numpy()).sum(axis=dims)) + \
        m.numpy().astype(np.float64).squeeze(dims)
    assert _ulps32(tgrad.logsumexp(x, dims).numpy(), exact_lse) <= 8


def test_float32_long_column_sum_is_not_a_running_total():
    x = tgrad.full((1_000_000, 2), 0.1)
    exact = 1_000_000 * np.float64(np.float32(0.1))
    np.testing.assert_allclose(x.sum(0).numpy(), [exact, exact], rtol=1e-6)  # was +0.96%
    c = tgrad.from_numpy(np.full((100_000, 2), 0.1 + 0.2j, dtype=np.complex64))
    exact_c = 100_000 * np.complex128(np.complex64(0.1 + 0.2j))
    np.testing.assert_allclose(c.sum(0).numpy(), [exact_c, exact_c], rtol=1e-6)


def test_float32_batch_norm_statistics_and_gradients_use_the_blocked_sum():
    rng = np.random.default_rng(6)
    a = rng.normal(3.0, 1.0, (2048, 4, 8))
    g = rng.normal(0.0, 1.0, (2048, 4, 8))
    results = {}
    for dt in (tgrad.float32, F64):
        x = tgrad.tensor(a, dtype=dt, requires_grad=True)
        y = tgrad.nn.functional.batch_norm(x, None, None, training=True)
        y.backward(tgrad.tensor(g, dtype=dt))
        results[dt] = (y.detach().double().numpy(), x.grad.double().numpy())
    for got, exact in zip(results[tgrad.float32], results[F64]):
        # normwise error in units of 2^-24 (was ~180 for the gradient, a running total)
        assert np.abs(got - exact).max() / np.abs(exact).max() / 2.0 ** -24 < 16


def test_float32_batch_norm_of_a_4d_batch_reduces_each_plane_as_its_3d_view():
    # a C-contiguous (N, C, H, W) batch is reduced as its (N, C, H W) view (one pairwise sum
    # per plane): the same bits as batch_norm of that view, errors of a few 2^-24 normwise
    # against float64; a channels-last batch (the per-axis path) to the same precision
    rng = np.random.default_rng(7)
    a = rng.normal(3.0, 2.0, (32, 6, 16, 20))
    g = rng.normal(0.0, 1.0, a.shape)
    w, b = rng.standard_normal(6), rng.standard_normal(6)

    def run(arr, dt, shape=None, channels_last=False):
        x = tgrad.tensor(arr, dtype=dt, requires_grad=True)
        xin = x.reshape(shape) if shape else x
        if channels_last:
            xin = xin.contiguous(memory_format=tgrad.channels_last)
        wt, bt = (tgrad.tensor(v, dtype=dt, requires_grad=True) for v in (w, b))
        y = tgrad.nn.functional.batch_norm(xin, None, None, wt, bt, training=True)
        y.backward(tgrad.tensor(g, dtype=dt).reshape(y.shape))
        return [y.detach().double().numpy().reshape(a.shape)] + \
            [t.grad.double().numpy().reshape(-1) for t in (x, wt, bt)]

    exact = run(a, F64)
    four = run(a, tgrad.float32)
    three = run(a.reshape(32, 6, -1), tgrad.float32)
    for got4, got3 in zip(four, three):
        assert got4.reshape(-1).tobytes() == got3.reshape(-1).tobytes()
    for got in (four, run(a, tgrad.float32, channels_last=True)):
        for v, e in zip(got, exact):
            e = e.reshape(v.shape)
            assert np.abs(v - e).max() / np.abs(e).max() / 2.0 ** -24 < 8
