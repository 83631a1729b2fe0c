"""cumsum beyond the op table (tests/op_db.py checks values and gradients): dtypes, the
reverse-scan backward, in-place form and errors, as PyTorch documents them."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad


def test_cumsum_dtypes():
    assert tgrad.tensor([1, 2, 3], dtype=tgrad.int32).cumsum(0).dtype is tgrad.int64
    b = tgrad.tensor([True, False, True]).cumsum(0)
    assert b.dtype is tgrad.int64 and b.tolist() == [1, 1, 2]
    x = tgrad.tensor([1.5, 2.5])
    y = x.cumsum(0, dtype=tgrad.float64)  # casts the input first
    assert y.dtype is tgrad.float64 and y.tolist() == [1.5, 4.0]
    h = tgrad.full((4096,), 1.0, dtype=tgrad.float16).cumsum(0)
    assert h.tolist()[-1] == 4096.0  # float32 accumulation (float16 alone stalls at 2048)


def test_cumsum_backward_is_the_reverse_cumsum():
    x = tgrad.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=tgrad.float64,
                     requires_grad=True)
    g = tgrad.tensor([[1.0, 10.0, 100.0], [2.0, 20.0, 200.0]], dtype=tgrad.float64)
    x.cumsum(1).backward(g)
    assert x.grad.tolist() == [[111.0, 110.0, 100.0], [222.0, 220.0, 200.0]]
    assert x.cumsum(1).grad_fn.name() == "CumsumBackward0"
    z = tgrad.tensor([1.0, 2.0, 3.0], dtype=tgrad.float64, requires_grad=True)
    (gz,) = tgrad.autograd.grad(z.cumsum(0).pow(2).sum(), z, create_graph=True)
    # d/dz_j sum_k (S_k)^2 = 2 sum_{k >= j} S_k with S = [1, 3, 6]
    assert gz.tolist() == [20.0, 18.0, 12.0]
    (ggz,) = tgrad.autograd.grad(gz.sum(), z)
    # d/dz_i of 2 sum_j sum_{k >= j} S_k = 2 sum_j sum_{k >= max(i, j)} 1
    assert ggz.tolist() == [12.0, 10.0, 6.0]


def test_cumsum_inplace_and_errors():
    a = tgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    assert b.cumsum_(0) is b and b.tolist() == [1.0, 3.0, 6.0]
    b.sum().backward()
    assert a.grad.tolist() == [3.0, 2.0, 1.0]
    with pytest.raises(IndexError, match=r"cumsum: Dimension out of range \(expected to be in "
                                         r"range of \[-1, 0\], but got 1\)"):
        tgrad.ones(3).cumsum(1)
    with pytest.raises(TypeError,
                       match=r"cumsum\(\): argument 'input' \(position 1\) must be Tensor"):
        tgrad.cumsum(np.ones(3), 0)


def _cumprod_second_grad(x_np, hook, scale=1.0):
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(scale * np.linspace(-1.0, 1.5, x_np.size).reshape(x_np.shape),
                     dtype=tgrad.float64)
    v = x.pow(2).cumprod(1)
    if hook:
        v.register_hook(lambda g: g * 3)
    (g,) = tgrad.autograd.grad((v * w).sum(), x, create_graph=True)
    (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), x)
    return g.detach().numpy(), g2.numpy()


def _reference_second_grad(x_np, with_zero):
    """PyTorch's cumprod_backward written in elementary tgrad ops on the same graph (the
    hook on the output y): no zero in x: reversed_cumsum(y g) / x, so the second-order
    gradient reaching y is tripled; with zeros, from x alone (the hook does not act)."""
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    w = tgrad.tensor(np.linspace(-1.0, 1.5, x_np.size).reshape(x_np.shape), dtype=tgrad.float64)
    p = x.pow(2)
    cols = [p[:, :1]]
    for j in range(1, p.shape[1]):
        cols.append(cols[-1] * p[:, j:j + 1])
    y = tgrad.cat(cols, 1)
    y3 = y if with_zero else y * 1.0
    if not with_zero:
        y3.register_hook(lambda g: g * 3)
    gp = (y3 * (3 * w)).flip(1).cumsum(1).flip(1) / p  # 3 w: the hook on the first grad
    (g,) = tgrad.autograd.grad(p, x, gp, create_graph=True)
    (g2,) = tgrad.autograd.grad((g * g).sum() * 0.5 + g.sin().sum(), x)
    return g.detach().numpy(), g2.numpy()


def test_cumprod_double_backward_uses_the_saved_output_as_pytorch():
    # A hook on cumprod's output also scales the second-order gradient that reaches the
    # output through the backward's use of it (PyTorch: reversed_cumsum(y g) / x)
    x_np = np.array([[0.5, -1.2, 0.8], [1.1, 0.7, -0.9]])
    g, g2 = _cumprod_second_grad(x_np, hook=True)
    rg, rg2 = _reference_second_grad(x_np, with_zero=False)
    np.testing.assert_allclose(g, rg, rtol=1e-12)
    np.testing.assert_allclose(g2, rg2, rtol=1e-10)
    # with a zero: PyTorch's x-only formula, so the hook acts on the first-order gradient
    # only: the same as no hook and the weights tripled (that path gradgradchecked below)
    x_np[0, 1] = 0.0
    g, g2 = _cumprod_second_grad(x_np, hook=True)
    rg, rg2 = _cumprod_second_grad(x_np, hook=False, scale=3.0)
    np.testing.assert_allclose(g, rg, rtol=1e-12)
    np.testing.assert_allclose(g2, rg2, rtol=1e-12)
    x = tgrad.tensor(x_np, dtype=tgrad.float64, requires_grad=True)
    assert tgrad.autograd.gradgradcheck(lambda t: t.cumprod(1), (x,))


# ------------------------------------------------------------- the CPU's NumPy scan forms
# cumprod's backward (without create_graph) and logcumsumexp's forward and backward run on
# the CPU as NumPy loops over the flat arrays (tgrad/backends/_numpy_scan.py); they must
# give the composites' bits (tgrad ops, the GPU's path), NaN payloads aside.
INF, NAN = np.inf, np.nan
_SCAN_LAYOUTS = [((1,), 0), ((2,), 0), ((17,), 0), ((1025,), 0), ((3, 17), 1), ((17, 4), 0),
                 ((4, 17, 3), 1), ((4, 17, 3), -2), ((2, 3, 1025), -1), ((5, 0), 1),
                 ((0, 5), 1), ((3, 33), -1)]


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    both_nan = np.isnan(got) & np.isnan(want)
    width = got.dtype.itemsize
    gb = np.ascontiguousarray(got).view(np.uint8).reshape(got.shape + (width,))
    wb = np.ascontiguousarray(want).view(np.uint8).reshape(want.shape + (width,))
    diff = ~(gb == wb).all(-1) & ~both_nan
    assert not diff.any(), (got[diff][:5], want[diff][:5])


def _upstream(rng, shape):
    """An incoming gradient with negative values, -0.0 and an inf (the signs of zeros and
    0 * inf must match too)."""
    g = rng.standard_normal(shape)
    if g.size:
        g.reshape(-1)[rng.random(g.size) < 0.2] = -0.0
        g.reshape(-1)[rng.random(g.size) < 0.05] = INF
    return g


@pytest.mark.parametrize("shape, dim", _SCAN_LAYOUTS)
@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32, tgrad.complex128])
@pytest.mark.parametrize("zeros", ["none", "one", "several", "ends", "inf"])
def test_cumprod_cpu_backward_is_the_composites(shape, dim, dtype, zeros):
    from tgrad.ops.scan import _cumprod_backward_ops
    rng = np.random.default_rng(abs(hash((shape, dim, zeros))) % 2 ** 32)
    x = rng.uniform(0.5, 1.5, shape)
    n = x.shape[dim]
    xm = np.moveaxis(x, dim, -1)  # (a view: writes reach x)
    if n and zeros == "one":
        xm[..., n // 2] = 0.0
    elif n and zeros == "several":
        xm[..., ::3] = -0.0
    elif n and zeros == "ends":
        xm[..., 0] = xm[..., -1] = 0.0
    elif zeros == "inf":
        x[rng.random(shape) < 0.1] = 0.0
        x[rng.random(shape) < 0.1] = INF
    if dtype.is_complex:
        x = x + 1j * rng.uniform(-1, 1, shape) * (x != 0)
    g = _upstream(rng, shape)
    leaf = tgrad.tensor(x, dtype=dtype, requires_grad=True)
    y = tgrad.cumprod(leaf, dim)
    gt = tgrad.tensor(g, dtype=dtype)
    (got,) = tgrad.autograd.grad(y, leaf, gt)
    if n <= 1:
        return
    with tgrad.no_grad():
        want = _cumprod_backward_ops(leaf.detach(), y.detach(), gt, dim % len(shape), True)
    _same_bits(got.numpy(), want.numpy())


def test_cumprod_cpu_backward_non_contiguous_and_exact_with_zeros():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.5, 1.5, (6, 40))
    base[1, 7] = base[2, 0] = base[3, 39] = base[4, 5] = base[4, 9] = 0.0
    g = rng.standard_normal((20, 6))
    leaf = tgrad.tensor(base, requires_grad=True)
    tgrad.cumprod(leaf.t()[::2], 0).backward(tgrad.tensor(g))  # (20, 6), strided
    want = np.zeros_like(base)
    for r in range(6):  # dx_j = sum_{k >= j} g_k prod_{i <= k, i != j} x_i, exactly
        line = base[r, ::2]
        for j in range(20):
            want[r, 2 * j] = sum(g[k, r] * np.prod(np.delete(line[:k + 1], j))
                                 for k in range(j, 20))
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-13, atol=1e-15)
    for pos in ([0], [16], [3, 8], [0, 16]):
        x = rng.uniform(0.5, 1.5, 17)
        x[pos] = 0.0
        x = tgrad.tensor(x, requires_grad=True)
        assert tgrad.autograd.gradcheck(lambda t: t.cumprod(0), (x,))
        assert tgrad.autograd.gradgradcheck(lambda t: t.cumprod(0), (x,))


@pytest.mark.parametrize("shape, dim", _SCAN_LAYOUTS)
@pytest.mark.parametrize("dtype", [tgrad.float64, tgrad.float32])
@pytest.mark.parametrize("special", [None, [INF, -INF, NAN, 1e300, -1e300, 700.0, -745.0,
                                            0.0, -0.0]])
def test_logcumsumexp_cpu_is_the_composites(shape, dim, dtype, special):
    from tgrad.ops.logmath import _logcumsumexp_scan
    rng = np.random.default_rng(abs(hash((shape, dim, special is None))) % 2 ** 32)
    x = rng.standard_normal(shape) * 4
    if special is not None:
        mask = rng.random(shape) < 0.35
        x[mask] = rng.choice(special, size=int(mask.sum()))
    g = _upstream(rng, shape)
    leaf = tgrad.tensor(x, dtype=dtype, requires_grad=True)
    y = tgrad.logcumsumexp(leaf, dim)
    gt = tgrad.tensor(g, dtype=dtype)
    (got,) = tgrad.autograd.grad(y, leaf, gt)
    if x.shape[dim] <= 1 or x.size == 0:
        return
    assert y.grad_fn.name() == "LogcumsumexpBackward0"
    ref = tgrad.tensor(x, dtype=dtype, requires_grad=True)
    want_y = _logcumsumexp_scan(ref, dim % len(shape))  # the composite: one node a step
    (want,) = tgrad.autograd.grad(want_y, ref, gt)
    _same_bits(y.detach().numpy(), want_y.detach().numpy())
    _same_bits(got.numpy(), want.numpy())


def _logcumsumexp_careful(x: np.ndarray) -> np.ndarray:
    """log sum_{j <= k} exp(x_j) of a 1-D float64 x: the running max m plus the log of
    fsum(exp(x_j - m)) (each term <= 1, summed exactly before one rounding)."""
    import math
    out = np.empty_like(x)
    for k in range(len(x)):
        m = x[:k + 1].max()
        out[k] = m if np.isinf(m) else m + math.log(math.fsum(np.exp(x[:k + 1] - m)))
    return out


def test_logcumsumexp_cpu_values_and_gradients_against_references():
    rng = np.random.default_rng(5)
    for scale in (1.0, 30.0, 1e3, 1e300):
        x = rng.standard_normal(1025) * scale
        got = tgrad.logcumsumexp(tgrad.tensor(x), 0).numpy()
        np.testing.assert_allclose(got, _logcumsumexp_careful(x), rtol=1e-13)
    x = np.array([-INF, -INF, -1000.0, 0.0, INF, 3.0, -INF])
    _same_bits(tgrad.logcumsumexp(tgrad.tensor(x), 0).numpy(),
               np.array([-INF, -INF, -1000.0, 0.0, INF, INF, INF]))
    _same_bits(tgrad.logcumsumexp(tgrad.tensor(np.array([1.0, NAN, 2.0, INF])), 0).numpy(),
               np.array([1.0, NAN, NAN, NAN]))
    # dx_j = sum_{k >= j} g_k exp(x_j - out_k), in float64 from the careful out
    x, g = rng.standard_normal((3, 17)) * 5, rng.standard_normal((3, 17))
    leaf = tgrad.tensor(x, requires_grad=True)
    tgrad.logcumsumexp(leaf.t(), 0).backward(tgrad.tensor(g.T))  # (non-contiguous)
    out = np.stack([_logcumsumexp_careful(r) for r in x])
    want = np.stack([[sum(g[r, k] * np.exp(x[r, j] - out[r, k]) for k in range(j, 17))
                      for j in range(17)] for r in range(3)])
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-12, atol=1e-14)
    t = tgrad.tensor(rng.standard_normal((17, 3)), requires_grad=True)
    assert tgrad.autograd.gradcheck(lambda v: v.logcumsumexp(0), (t,))
    assert tgrad.autograd.gradgradcheck(lambda v: v.logcumsumexp(0), (t,))
    assert tgrad.autograd.gradgradcheck(lambda v: v[:, ::2].logcumsumexp(-1), (t,))


# logcumsumexp with infinities: dx_j = sum_{k >= j} g_k exp(x_j - out_k) (PyTorch's formula,
# the prefix logsumexp's gradient) is NaN wherever x_j - out_k is inf - inf, i.e. x_j = +inf,
# or x_j = -inf with every x_i (i <= j) -inf, whatever g (0 too); a tie of infinities does not
# share the gradient 1/2 each. Reference: that formula in NumPy float64, term by term.
_LCSE_SPECIAL = [INF, -INF, NAN, 0.0, 1.5, -2.0]


def _logcumsumexp_grad_ref(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    out = _logcumsumexp_careful(x)
    with np.errstate(all="ignore"):
        return np.array([np.sum(g[j:] * np.exp(x[j] - out[j:])) for j in range(len(x))])


def _lcse_cases():
    import itertools
    rng = np.random.default_rng(11)
    for n in (1, 2, 3, 4):
        for xs in itertools.product(_LCSE_SPECIAL, repeat=n):
            if not np.isfinite(xs).all():
                yield np.array(xs), rng.choice([1.0, 0.0, -0.5, 2.0], n)


@pytest.mark.parametrize("path", ["cpu", "create_graph", "composite"])
def test_logcumsumexp_gradient_is_nan_at_infinite_ties(path):
    from tgrad.ops.logmath import _logcumsumexp_scan
    for x, g in _lcse_cases():
        want = _logcumsumexp_grad_ref(x, g)
        leaf = tgrad.tensor(x, requires_grad=True)
        if path == "composite" and len(x) > 1:
            y = _logcumsumexp_scan(leaf, 0)  # (the GPU's path)
        else:
            y = tgrad.logcumsumexp(leaf, 0)
        (got,) = tgrad.autograd.grad(y, leaf, tgrad.tensor(g),
                                     create_graph=path == "create_graph")
        np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-13, atol=0,
                                   err_msg=str((x, g)))


def test_logcumsumexp_nan_gradient_strided_float32_and_second_order():
    x = np.array([[1.0, -INF], [INF, -INF], [2.0, 3.0], [INF, -INF]])  # dim 0 of x.T
    g = np.array([[0.5, 1.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0]])
    for dt in (tgrad.float64, tgrad.float32):
        leaf = tgrad.tensor(x, dtype=dt, requires_grad=True)
        y = leaf.t().logcumsumexp(1)  # (2, 4), a non-contiguous input
        (got,) = tgrad.autograd.grad(y, leaf, tgrad.tensor(g, dtype=dt))
        want = np.stack([_logcumsumexp_grad_ref(x[:, r], g[r]) for r in range(2)], 1)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=0)
    leaf = tgrad.tensor([INF, 1.0, 2.0], requires_grad=True)  # the second order: NaN at
    (g1,) = tgrad.autograd.grad(leaf.logcumsumexp(0).sum(), leaf, create_graph=True)
    (g2,) = tgrad.autograd.grad(g1.sum(), leaf)  # the infinite element (PyTorch's)
    assert np.isnan(g1.detach().numpy()[0]) and np.isnan(g2.numpy()[0])
    np.testing.assert_array_equal(g1.detach().numpy()[1:], [0.0, 0.0])


def test_logcumsumexp_nan_gradient_on_interpreted_cuda():
    pytest.importorskip("triton")
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from interpreted import run_json
    res = run_json("""
import json, numpy as np, tgrad
inf = float("inf")
x = np.array([[inf, 1.0, inf, -2.0], [-inf, -inf, 0.5, -inf], [1.0, 2.0, 3.0, 4.0]])
g = np.array([[1.0, 0.0, 2.0, -1.0], [0.5, 1.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
out = {}
for dev in ("cpu", "cuda"):
    leaf = tgrad.tensor(x, device=dev, requires_grad=True)
    (gx,) = tgrad.autograd.grad(leaf.logcumsumexp(1), leaf, tgrad.tensor(g, device=dev))
    out[dev] = [str(v) for v in gx.cpu().numpy().ravel()]
print(json.dumps(out))
""")
    assert res["cuda"] == res["cpu"]
    x = np.array([[INF, 1.0, INF, -2.0], [-INF, -INF, 0.5, -INF], [1.0, 2.0, 3.0, 4.0]])
    g = np.array([[1.0, 0.0, 2.0, -1.0], [0.5, 1.0, 1.0, 3.0], [1.0, 1.0, 1.0, 1.0]])
    want = np.stack([_logcumsumexp_grad_ref(x[r], g[r]) for r in range(3)])
    np.testing.assert_allclose(np.array(res["cuda"], float).reshape(3, 4), want, rtol=1e-13)


def test_cumprod_gradient_with_infinite_inputs_is_exact_not_pytorchs_division():
    # y = cumprod(x) is a polynomial in each x_j, so dx_j = sum_{k >= j} prod_{i <= k, i != j}
    # x_i is defined where no term is inf - inf or 0 * inf: x = [inf, 1.5] gives
    # y = [x0, 1.5 x0], dx0 = 1 + 1.5 = 2.5 (hand), where PyTorch's reversed_cumsum(y g) / x
    # reads inf / inf = NaN; a NaN input's own gradient need not be NaN (x = [NaN, 1.5]:
    # dx0 = 2.5, dx1 = x0 = NaN), as for mul. CPU fast path and the composite (cuda's) alike.
    from tgrad.ops.scan import _cumprod_backward_ops
    cases = [([INF, 1.5], [2.5, INF]), ([NAN, 1.5], [2.5, NAN]),
             ([-INF, 2.0, 0.5], [4.0, -INF, -INF]), ([2.0, INF, 3.0], [INF, 8.0, INF])]
    for x, want in cases:
        leaf = tgrad.tensor(x, requires_grad=True)
        y = tgrad.cumprod(leaf, 0)
        (got,) = tgrad.autograd.grad(y, leaf, tgrad.ones(len(x), dtype=tgrad.float64))
        np.testing.assert_array_equal(got.numpy(), want)
        with tgrad.no_grad():
            ops = _cumprod_backward_ops(leaf.detach(), y.detach(), tgrad.ones(len(x),
                                        dtype=tgrad.float64), 0, True)
        np.testing.assert_array_equal(ops.numpy(), want)
