"""The CPU (NumPy) paths of tgrad/backends/_numpy_dist.py:

- cosine_similarity as one node (_CosineSimilarity): forward bit-identical to the tgrad-op
  composite (_unit_or_scaled), gradients and double backward against it, gradcheck and
  gradgradcheck in float64, broadcasting (also along dim), odd sizes, non-contiguous
  inputs, zero vectors, tiny / huge / non-finite values, forward AD;
- float32 cdist (matmul path) and pdist (p = 2) through euclid_f32: within 0.52 ulp of the
  float64 differences' norm (faithful rounding, the bound in euclid_f32's docstring) on
  random, duplicate, near-duplicate, offset-cluster, tiny and huge rows, batched and
  broadcast; non-finite values as the differences give them; gradients and double
  backward against the float64 composite."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.backends._numpy_dist import euclid_f32
from tgrad.nn import _composite

F = tgrad.nn.functional
RNG = np.random.default_rng(26)


# ------------------------------------------------------------------ cosine_similarity
def _cos_composite(a: tgrad.Tensor, b: tgrad.Tensor, dim: int, eps: float) -> tgrad.Tensor:
    shape = np.broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return (_composite._unit_or_scaled(a.expand(shape), dim, eps)
            * _composite._unit_or_scaled(b.expand(shape), dim, eps)).sum(dim)


_COS_CASES = [((5, 7), (5, 7), 1), ((1, 1), (1, 1), 1), ((17, 3), (17, 3), 0),
              ((4, 1, 9), (3, 9), -1), ((6, 3), (6, 1), 1), ((2, 5, 4), (2, 5, 4), 0),
              ((33, 17), (17,), 1), ((3, 1), (3, 4), 1), ((512, 128), (512, 128), 1)]


def _cos_inputs(shp1, shp2, dt, kind):
    a = RNG.standard_normal(shp1)
    b = RNG.standard_normal(shp2)
    if kind == "zero":
        a[..., 0] = 0.0
        a.reshape(-1)[: a.shape[-1]] = 0.0
    elif kind == "tiny":
        a = a * 1e-9  # |x| < eps = 1e-8: the clamped branch
    elif kind == "scaled":
        a = a * (1e-30 if dt == np.float32 else 1e-200)
        b = b * (1e30 if dt == np.float32 else 1e200)
    elif kind == "nonfinite":
        a.reshape(-1)[0] = np.nan
        b.reshape(-1)[-1] = np.inf
    return a.astype(dt), b.astype(dt)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("case", _COS_CASES)
@pytest.mark.parametrize("kind", ["plain", "zero", "tiny", "scaled", "nonfinite"])
@pytest.mark.parametrize("eps", [1e-8, 0.0])
def test_cosine_forward_is_the_composites_bit_for_bit(dt, case, kind, eps):
    shp1, shp2, dim = case
    a, b = _cos_inputs(shp1, shp2, dt, kind)
    got = F.cosine_similarity(tgrad.tensor(a), tgrad.tensor(b), dim, eps).numpy()
    want = _cos_composite(tgrad.tensor(a), tgrad.tensor(b), dim, eps).numpy()
    np.testing.assert_array_equal(got, want)  # (NaN where NaN)
    assert got.dtype == dt


def test_cosine_forward_non_contiguous_and_promoted():
    a = RNG.standard_normal((9, 6)).astype(np.float32)
    b = RNG.standard_normal((6, 9)).astype(np.float32)
    ta, tb = tgrad.tensor(a)[::2], tgrad.tensor(b).t()[::2]
    np.testing.assert_array_equal(F.cosine_similarity(ta, tb).numpy(),
                                  _cos_composite(ta, tb, 1, 1e-8).numpy())
    # float32 with float64: each input normalised in its own dtype (the composite)
    out = F.cosine_similarity(ta, tb.double())
    assert out.dtype is tgrad.float64
    np.testing.assert_array_equal(out.numpy(), _cos_composite(ta, tb.double(), 1,
                                                              1e-8).numpy())


@pytest.mark.parametrize("case", _COS_CASES[:-1])
@pytest.mark.parametrize("kind", ["plain", "zero", "tiny", "scaled"])
def test_cosine_gradients_match_the_composite(case, kind):
    shp1, shp2, dim = case
    a, b = _cos_inputs(shp1, shp2, np.float64, kind)
    res = []
    for f in (lambda x, y: F.cosine_similarity(x, y, dim),
              lambda x, y: _cos_composite(x, y, dim, 1e-8)):
        ta, tb = tgrad.tensor(a, requires_grad=True), tgrad.tensor(b, requires_grad=True)
        y = f(ta, tb)
        g = np.linspace(-1.0, 2.0, y.numel()).reshape(y.shape)
        y.backward(tgrad.tensor(g))
        res.append((ta.grad.numpy(), tb.grad.numpy()))
    # the scale of a gradient entry before any cancellation: |g| / max(|x|, eps) (the
    # broadcast-along-dim cases sum to an exact 0: rounding noise of that scale)
    shape = np.broadcast_shapes(a.shape, b.shape)
    for got, want, x in zip(*res, (a, b)):
        xb = np.broadcast_to(x, shape)
        m = max(np.abs(xb).max(), 1e-300)
        norms = np.linalg.norm(xb / m, axis=dim) * m  # (scaled: no overflow at 1e200)
        scale = np.max(np.abs(g)) / max(norms.min(), 1e-8)
        assert np.all(np.abs(got - want) <= 1e-13 * scale)


@pytest.mark.parametrize("case", _COS_CASES[:-1])
def test_cosine_gradcheck_gradgradcheck(case):
    shp1, shp2, dim = case
    a = tgrad.tensor(RNG.standard_normal(shp1), requires_grad=True)
    b = tgrad.tensor(RNG.standard_normal(shp2), requires_grad=True)
    f = lambda x, y: F.cosine_similarity(x, y, dim)  # noqa: E731
    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


@pytest.mark.parametrize("scale", [1.0, 1e-9])  # 1e-9: the clamped (|x| < eps) rows
def test_cosine_double_backward_is_the_composites(scale):
    a = tgrad.tensor(RNG.standard_normal((4, 1, 5)) * scale, requires_grad=True)
    b = tgrad.tensor(RNG.standard_normal((3, 5)), requires_grad=True)
    res = []
    for f in (lambda x, y: F.cosine_similarity(x, y, -1),
              lambda x, y: _cos_composite(x, y, -1, 1e-8)):
        y = f(a, b)
        g = tgrad.tensor(np.linspace(-1, 1, y.numel()).reshape(y.shape), requires_grad=True)
        ga, gb = tgrad.autograd.grad(y, (a, b), g, create_graph=True)
        s = (ga * ga).sum() * scale + gb.sin().sum()
        res.append([t.numpy() for t in tgrad.autograd.grad(s, (a, b, g))])
    for got, want in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())


def test_cosine_forward_ad_and_node():
    import tgrad.autograd.forward_ad as fwAD
    a, b = tgrad.tensor(RNG.standard_normal((4, 5))), tgrad.tensor(RNG.standard_normal((4, 5)))
    tan = tgrad.tensor(RNG.standard_normal((4, 5)))
    res = []
    for f in (lambda x: F.cosine_similarity(x, b), lambda x: _cos_composite(x, b, 1, 1e-8)):
        with fwAD.dual_level():
            res.append(fwAD.unpack_dual(f(fwAD.make_dual(a, tan))).tangent.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12, atol=1e-15)
    y = F.cosine_similarity(tgrad.tensor(a.numpy(), requires_grad=True), b)
    assert type(y.grad_fn).__name__ == "SumBackward1"


def test_cosine_float32_gradient_close_to_float64():
    a, b = RNG.standard_normal((64, 17)), RNG.standard_normal((64, 17))
    grads = []
    for dt in (np.float32, np.float64):
        ta = tgrad.tensor(a.astype(dt), requires_grad=True)
        F.cosine_similarity(ta, tgrad.tensor(b.astype(dt))).sum().backward()
        grads.append(ta.grad.numpy().astype(np.float64))
    scale = np.abs(grads[1]).max(1, keepdims=True)
    assert np.all(np.abs(grads[0] - grads[1]) <= 2e-6 * scale)


# ------------------------------------------------------------------ Euclidean distances
def _ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return np.sqrt(((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1))


def _ulps(got: np.ndarray, ref: np.ndarray) -> float:
    """max |got - ref| in ulps of float32(ref) (0 where equal, also both inf / NaN)."""
    same = (got == ref) | (np.isnan(got) & np.isnan(ref))
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    sp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - ref) / np.where(sp > 0, sp, 1.0)
    return float(np.max(np.where(same, 0.0, err), initial=0.0))


def _rows(kind: str, p: int, r: int, m: int):
    a = RNG.standard_normal((p, m))
    b = RNG.standard_normal((r, m))
    if kind == "duplicates":
        k = min(p, r)
        b[: (k + 1) // 2] = a[: (k + 1) // 2]
    elif kind == "near":  # one float32 ulp apart
        k = min(p, r)
        a32 = a.astype(np.float32)
        b[:k] = np.nextafter(a32[:k], np.float32(np.inf))
    elif kind == "offset":  # clusters far from the origin: |a|^2 >> d^2
        a, b = a + 3000.0, b * 1e-3 + 3000.0
    elif kind == "tiny":  # squares below float32's range
        a, b = a * 1e-30, b * 1e-30
    elif kind == "huge":  # squares above float32's range
        a, b = a * 1e30, b * 1e30
    return a.astype(np.float32), b.astype(np.float32)


@pytest.mark.parametrize("kind", ["random", "duplicates", "near", "offset", "tiny", "huge"])
@pytest.mark.parametrize("sizes", [(1, 1, 1), (17, 5, 3), (26, 33, 17), (40, 31, 1),
                                   (64, 64, 200)])
def test_euclid_f32_is_faithfully_rounded(kind, sizes):
    a, b = _rows(kind, *sizes)
    assert _ulps(euclid_f32(a, b), _ref(a, b)) < 0.52
    assert _ulps(euclid_f32(a, a), _ref(a, a)) < 0.52  # (b is a: the pdist case)


def test_euclid_f32_batched_broadcast_and_non_finite():
    a = RNG.standard_normal((3, 1, 7, 5)).astype(np.float32)
    b = RNG.standard_normal((4, 9, 5)).astype(np.float32)
    assert euclid_f32(a, b).shape == (3, 4, 7, 9)
    assert _ulps(euclid_f32(a, b), _ref(a, b)) < 0.52
    a, b = a[0, 0].copy(), b[0].copy()
    a[1, 2], a[2, 0], b[3, 2], b[4, 1], b[5, 4] = np.inf, np.nan, np.inf, -np.inf, np.inf
    a[3, 4] = -np.inf
    with np.errstate(invalid="ignore"):
        assert _ulps(euclid_f32(a, b), _ref(a, b)) < 0.52


@pytest.mark.parametrize("kind", ["random", "duplicates", "offset"])
def test_cdist_float32_matmul_path(kind):
    a, b = _rows(kind, 30, 27, 9)
    # a non-contiguous x1, a batch broadcast against x2's
    ta = tgrad.tensor(np.ascontiguousarray(a.T)).t()
    for x1, x2, want in ((ta, tgrad.tensor(b), _ref(a, b)),
                         (tgrad.tensor(np.stack([a, a[::-1]])), tgrad.tensor(b[None]),
                          _ref(np.stack([a, a[::-1]]), b[None]))):
        y = tgrad.cdist(x1, x2)
        assert y.dtype is tgrad.float32 and y.shape == want.shape
        assert _ulps(y.numpy(), want) < 0.52


def _grads(f, xs, dt):
    ts = [tgrad.tensor(x.astype(dt), requires_grad=True) for x in xs]
    y = f(*ts)
    g = np.cos(np.arange(y.numel())).reshape(y.shape).astype(dt)
    y.backward(tgrad.tensor(g))
    return [t.grad.numpy().astype(np.float64) for t in ts]


@pytest.mark.parametrize("n,m", [(2, 1), (17, 3), (40, 8)])
def test_pdist_float32_values_and_gradients(n, m):
    x = RNG.standard_normal((n, m)).astype(np.float32)
    x[-1] = x[0]  # a zero distance: its gradient is 0
    i, j = np.triu_indices(n, 1)
    want = _ref(x, x)[i, j]
    y = tgrad.pdist(tgrad.tensor(x))
    assert y.dtype is tgrad.float32 and y.shape == want.shape
    assert _ulps(y.numpy(), want) < 0.52
    got, ref = _grads(tgrad.pdist, [x], np.float32), _grads(tgrad.pdist, [x], np.float64)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-4, atol=1e-5 * np.abs(ref[0]).max())
    # non-contiguous input, halves (computed in float32, rounded once)
    xt = tgrad.tensor(np.ascontiguousarray(x.T)).t()
    np.testing.assert_array_equal(tgrad.pdist(xt).numpy(), y.numpy())
    assert tgrad.pdist(tgrad.tensor(x).half()).dtype is tgrad.float16


def test_pdist_float32_empty_and_double_backward():
    assert tgrad.pdist(tgrad.zeros(1, 3)).shape == (0,)
    assert tgrad.pdist(tgrad.zeros(0, 3)).shape == (0,)
    np.testing.assert_array_equal(tgrad.pdist(tgrad.zeros(3, 0)).numpy(), np.zeros(3))
    x = RNG.standard_normal((6, 4))
    res = []
    for dt in (np.float32, np.float64):
        t = tgrad.tensor(x.astype(dt), requires_grad=True)
        (gx,) = tgrad.autograd.grad(tgrad.pdist(t).sum(), (t,), create_graph=True)
        (ggx,) = tgrad.autograd.grad((gx * gx).sum(), (t,))
        res.append(ggx.numpy().astype(np.float64))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-5 * np.abs(res[1]).max())


def test_cdist_float32_gradients_close_to_float64():
    a, b = _rows("random", 30, 26, 5)
    f = lambda x, y: tgrad.cdist(x, y)  # noqa: E731
    for got, ref in zip(_grads(f, [a, b], np.float32), _grads(f, [a, b], np.float64)):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())
    assert math.isfinite(float(tgrad.cdist(tgrad.tensor(a), tgrad.tensor(a)).sum()))
