"""gaussian_nll_loss: the one-node CPU path (_GaussianNLL) against the composite of tgrad
ops it replaces and float64 references."""

import itertools

import ml_dtypes
import numpy as np
import pytest

import tgrad
import tgrad.nn._losses_extra as LE
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

ORIG = LE._gnll_on_numpy


def _run(x, t, v, red, full, eps, fused, monkeypatch, t_grad=True):
    """(loss, dx, dt, dv, node name) with a random upstream gradient."""
    monkeypatch.setattr(LE, "_gnll_on_numpy", ORIG if fused else lambda *a: False)
    a = tgrad.tensor(x, requires_grad=True)
    b = tgrad.tensor(t, requires_grad=t_grad)
    c = tgrad.tensor(v, requires_grad=True)
    loss = F.gaussian_nll_loss(a, b, c, full=full, eps=eps, reduction=red)
    g = np.random.default_rng(1).standard_normal(loss.shape).astype(loss.detach().numpy().dtype)
    loss.backward(tgrad.tensor(g))
    return (loss.detach().numpy(), a.grad.numpy(), b.grad.numpy() if t_grad else None,
            c.grad.numpy(), loss.grad_fn.name())


def _data(shape, dt, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dt)
    t = rng.standard_normal(shape).astype(dt)
    v = (rng.random(shape) * 2).astype(dt)
    if specials and x.size >= 10:
        xf, tf, vf = x.reshape(-1), t.reshape(-1), v.reshape(-1)
        xf[0], xf[1], tf[7] = np.nan, np.inf, -np.inf
        vf[2], vf[3], vf[4], vf[5], vf[6] = np.nan, np.inf, 0.0, 1e-8, -0.0  # NaN, inf, < eps
        vf[8], vf[9] = 1e-6, dt(1e-6) * dt(1.0000001)  # at and just above eps
    return x, t, v


def _same_bits(p, q):
    """Equal bits, NaNs only compared by position (the composite's NaN signs differ)."""
    assert type(p) is np.ndarray and p.dtype == q.dtype and p.shape == q.shape
    nan = np.isnan(p)
    np.testing.assert_array_equal(nan, np.isnan(q))
    assert np.where(nan, 0, p).tobytes() == np.where(nan, 0, q).tobytes()


SHAPES = [(9, 5), (7,), (0, 4), (4, 0), (), (3, 300, 7), (13, 129)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fused_matches_composite_bits(shape, red, full, dt, monkeypatch):
    x, t, v = _data(shape, dt)
    for eps, t_grad in ((1e-6, True), (0.3, False)):
        got = _run(x, t, v, red, full, eps, True, monkeypatch, t_grad)
        want = _run(x, t, v, red, full, eps, False, monkeypatch, t_grad)
        assert got[4] == want[4]
        for p, q in zip(got[:4], want[:4]):
            if q is not None:
                _same_bits(p, q)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_values_against_float64(dt, monkeypatch):
    """Loss and gradients within a few ulps of float64 (x, t, v rounded to dt first)."""
    x, t, v = _data((300, 37), dt, seed=4, specials=False)
    v[0, :5] = [0.0, 1e-9, 1e-6, 2e-6, 1e-3]
    loss, dx, dtg, dv, _ = _run(x, t, v, "none", True, 1e-6, True, monkeypatch)
    x64, t64, v64 = (a.astype(np.float64) for a in (x, t, v))
    vc = np.maximum(v64, 1e-6)
    d = x64 - t64
    ref = 0.5 * (np.log(vc) + d * d / vc) + 0.5 * np.log(2 * np.pi)
    g = np.random.default_rng(1).standard_normal(loss.shape).astype(dt).astype(np.float64)
    eps = np.finfo(dt).eps
    scale = 0.5 * (np.abs(np.log(vc)) + d * d / vc) + 1
    assert np.all(np.abs(loss - ref) <= 4 * eps * scale)
    r = g * 0.5 / vc
    np.testing.assert_allclose(dx, 2 * r * d, rtol=4 * eps)
    np.testing.assert_array_equal(dtg, -dx)
    dv_scale = np.abs(r) * (1 + d * d / vc)  # the two terms' sizes
    assert np.all(np.abs(dv - (r - r * d * d / vc)) <= 4 * eps * dv_scale)


@pytest.mark.parametrize("hdt", [np.float16, ml_dtypes.bfloat16])
def test_halves(hdt, monkeypatch):
    x, t, v = _data((9, 6), np.float32, specials=False)
    x, t, v = x.astype(hdt), t.astype(hdt), v.astype(hdt)
    for red, full in itertools.product(("none", "mean", "sum"), (False, True)):
        got = _run(x, t, v, red, full, 1e-6, True, monkeypatch)
        want = _run(x, t, v, red, full, 1e-6, False, monkeypatch)
        assert got[0].dtype == np.dtype(hdt)
        for p, q in zip(got[:4], want[:4]):
            _same_bits(p, q)


def test_fast_path_taken_and_node_names():
    a = tgrad.randn(4, 3, requires_grad=True)
    t = tgrad.randn(4, 3)
    v = tgrad.rand(4, 3, requires_grad=True)
    names = {("none", False): "MulBackward0", ("none", True): "AddBackward0",
             ("mean", False): "MeanBackward0", ("mean", True): "MeanBackward0",
             ("sum", False): "SumBackward0", ("sum", True): "SumBackward0"}
    for (red, full), name in names.items():
        node = F.gaussian_nll_loss(a, t, v, full=full, reduction=red).grad_fn
        assert issubclass(node._forward_cls, LE._GaussianNLL)
        assert node.name() == name
    node = F.gaussian_nll_loss(a, t, 0.5).grad_fn  # a float var: one of input's shape
    assert issubclass(node._forward_cls, LE._GaussianNLL)
    assert ORIG(a, t, v)
    assert not ORIG(a, t, v[:, :1])  # var (N, 1): the composite
    assert not ORIG(a, t[:1], v)  # a broadcast target
    assert not ORIG(a, t, v.double())
    assert not issubclass(F.gaussian_nll_loss(a, t, v[:, 0]).grad_fn._forward_cls,
                          LE._GaussianNLL)


def test_negative_var_raises():
    x = tgrad.zeros(2, 3)
    for dt, tiny in ((tgrad.float32, -1e-30), (tgrad.float64, -1e-300), (tgrad.float16, -1e-7)):
        v = tgrad.ones(2, 3, dtype=dt)
        v[1, 2] = tiny  # (a subnormal for float16)
        with pytest.raises(ValueError, match="var has negative entry/entries"):
            F.gaussian_nll_loss(x, x, v)
    v = tgrad.tensor([[np.nan, -0.0, 1.0]] * 2)  # NaN and -0.0 are not negative
    assert np.isnan(F.gaussian_nll_loss(x, x, v).item())
    nc = tgrad.ones(3, 2)
    nc[2, 1] = -1.0  # a non-contiguous var (a transpose) with a negative entry
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, nc.t())


def test_non_contiguous_inputs(monkeypatch):
    x, t, v = _data((7, 5), np.float64, seed=5, specials=False)
    out = []
    for tr in (True, False):
        a = tgrad.tensor(x.T.copy() if not tr else x, requires_grad=True)
        b = tgrad.tensor(t.T.copy() if not tr else t)
        c = tgrad.tensor(v.T.copy() if not tr else v, requires_grad=True)
        args = (a.t(), b.t(), c.t()) if tr else (a, b, c)
        loss = F.gaussian_nll_loss(*args, reduction="none")
        assert issubclass(loss.grad_fn._forward_cls, LE._GaussianNLL)
        loss.sum().backward()
        grads = (a.grad.numpy().T, c.grad.numpy().T) if tr else (a.grad.numpy(), c.grad.numpy())
        out.append((loss.detach().numpy(), *grads))
    for p, q in zip(*out):
        np.testing.assert_array_equal(p, q)


def test_empty_batch():
    a = tgrad.zeros(0, 3, requires_grad=True)
    v = tgrad.ones(0, 3, requires_grad=True)
    m = F.gaussian_nll_loss(a, tgrad.zeros(0, 3), v)
    assert m.shape == () and np.isnan(m.item())
    s = F.gaussian_nll_loss(a, tgrad.zeros(0, 3), v, reduction="sum")
    assert s.item() == 0.0 and type(s.detach().numpy()) is np.ndarray
    s.backward()
    assert a.grad.shape == (0, 3) and v.grad.shape == (0, 3)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 5), (6,), ()])
def test_gradcheck_gradgradcheck(red, shape):
    rng = np.random.default_rng(10)
    a = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
    t = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
    v = tgrad.tensor(rng.random(shape) + 0.3, requires_grad=True)

    def f(a, t, v):
        return F.gaussian_nll_loss(a, t, v, full=True, reduction=red)

    assert gradcheck(f, (a, t, v))
    assert gradgradcheck(f, (a, t, v))


def test_create_graph_matches_composite(monkeypatch):
    x, t, v = _data((5, 4), np.float64, specials=False)
    v[0, :2] = [1e-9, 0.0]  # clamped: the identity's gradient in both
    out = []
    for fused in (True, False):
        monkeypatch.setattr(LE, "_gnll_on_numpy", ORIG if fused else lambda *a: False)
        a = tgrad.tensor(x, requires_grad=True)
        b = tgrad.tensor(t, requires_grad=True)
        c = tgrad.tensor(v, requires_grad=True)
        loss = F.gaussian_nll_loss(a, b, c)
        ga, gb, gc = tgrad.autograd.grad(loss, (a, b, c), create_graph=True)
        assert ga.requires_grad and gc.requires_grad
        hh = tgrad.autograd.grad((ga * ga).sum() + (gc * c).sum() + (gb * a).sum(), (a, b, c))
        out.append([q.detach().numpy() for q in (ga, gb, gc, *hh)])
    for f, c in zip(*out):
        np.testing.assert_allclose(f, c, rtol=1e-12, atol=1e-15 * np.abs(c).max())


def test_forward_ad_matches_backward():
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(11)
    a, tan = tgrad.tensor(rng.standard_normal((4, 5))), tgrad.tensor(rng.standard_normal((4, 5)))
    t = tgrad.tensor(rng.standard_normal((4, 5)))
    v = tgrad.tensor(rng.random((4, 5)) + 0.2)
    with fwAD.dual_level():
        out = F.gaussian_nll_loss(a, t, fwAD.make_dual(v, tan))
        tangent = fwAD.unpack_dual(out).tangent.item()
    vv = v.detach().requires_grad_(True)
    F.gaussian_nll_loss(a, t, vv).backward()
    np.testing.assert_allclose(tangent, (vv.grad * tan).sum().item(), rtol=1e-12)


# ---------------------------------------------------------------- poisson_nll_loss
P_ORIG = LE._poisson_on_numpy


def _prun(x, t, red, log_input, eps, fused, monkeypatch, t_grad=True):
    """(loss, dx, dt, node name) with a random upstream gradient."""
    monkeypatch.setattr(LE, "_poisson_on_numpy", P_ORIG if fused else lambda *a: False)
    a = tgrad.tensor(x, requires_grad=True)
    b = tgrad.tensor(t, requires_grad=t_grad)
    loss = F.poisson_nll_loss(a, b, log_input=log_input, eps=eps, reduction=red)
    g = np.random.default_rng(1).standard_normal(loss.shape).astype(loss.detach().numpy().dtype)
    loss.backward(tgrad.tensor(g))
    return (loss.detach().numpy(), a.grad.numpy(), b.grad.numpy() if t_grad else None,
            loss.grad_fn.name())


def _pdata(shape, dt, log_input, seed=0, specials=True):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dt)
    x = x if log_input else np.abs(x)
    t = (rng.random(shape) * 3).astype(dt)
    if specials and x.size >= 10:
        xf, tf = x.reshape(-1), t.reshape(-1)
        xf[0], xf[1], xf[2], xf[3] = np.nan, np.inf, -np.inf if log_input else 0.0, 100.0
        tf[4], tf[5] = np.nan, 0.0
    return x, t


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_poisson_fused_matches_composite_bits(shape, red, log_input, dt, monkeypatch):
    x, t = _pdata(shape, dt, log_input)
    for eps, t_grad in ((1e-8, True), (0.3, False)):
        got = _prun(x, t, red, log_input, eps, True, monkeypatch, t_grad)
        want = _prun(x, t, red, log_input, eps, False, monkeypatch, t_grad)
        assert got[3] == want[3]
        for p, q in zip(got[:3], want[:3]):
            if q is not None:
                _same_bits(p, q)


@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_poisson_values_against_float64(log_input, dt, monkeypatch):
    x, t = _pdata((300, 37), dt, log_input, seed=4, specials=False)
    loss, dx, dtg, _ = _prun(x, t, "none", log_input, 1e-8, True, monkeypatch)
    x64, t64 = x.astype(np.float64), t.astype(np.float64)
    g = np.random.default_rng(1).standard_normal(loss.shape).astype(dt).astype(np.float64)
    eps = np.finfo(dt).eps
    if log_input:
        ref, scale = np.exp(x64) - t64 * x64, np.exp(x64) + np.abs(t64 * x64)
        rdx, dscale = g * (np.exp(x64) - t64), np.abs(g) * (np.exp(x64) + t64)
        rdt, tscale = -g * x64, np.abs(g * x64)
    else:  # (x + eps rounded: log's absolute error ~ eps)
        xe = x64 + 1e-8
        lg = np.log(xe)
        ref, scale = x64 - t64 * lg, x64 + t64 * (np.abs(lg) + 1)
        rdx, dscale = g * (1 - t64 / xe), np.abs(g) * (1 + t64 / xe)
        rdt, tscale = -g * lg, np.abs(g) * (np.abs(lg) + 1)
    assert np.all(np.abs(loss - ref) <= 4 * eps * scale)
    assert np.all(np.abs(dx - rdx) <= 4 * eps * dscale)
    assert np.all(np.abs(dtg - rdt) <= 4 * eps * tscale)


@pytest.mark.parametrize("hdt", [np.float16, ml_dtypes.bfloat16])
def test_poisson_halves(hdt, monkeypatch):
    for log_input, red in itertools.product((True, False), ("none", "mean", "sum")):
        x, t = _pdata((9, 6), np.float32, log_input, specials=False)
        x, t = x.astype(hdt), t.astype(hdt)
        got = _prun(x, t, red, log_input, 1e-8, True, monkeypatch)
        want = _prun(x, t, red, log_input, 1e-8, False, monkeypatch)
        assert got[0].dtype == np.dtype(hdt)
        for p, q in zip(got[:3], want[:3]):
            _same_bits(p, q)


def test_poisson_fast_path_taken_and_node_names():
    a = tgrad.randn(4, 3, requires_grad=True)
    t = tgrad.rand(4, 3)
    for red, name in (("none", "SubBackward0"), ("mean", "MeanBackward0"),
                      ("sum", "SumBackward0")):
        for log_input in (True, False):
            node = F.poisson_nll_loss(a.abs(), t, log_input=log_input, reduction=red).grad_fn
            assert issubclass(node._forward_cls, LE._PoissonNLL)
            assert node.name() == name
        node = F.poisson_nll_loss(a, t, full=True, reduction=red).grad_fn  # full: composite
        assert not issubclass(getattr(node, "_forward_cls", object), LE._PoissonNLL)
    assert P_ORIG(a, t)
    assert not P_ORIG(a, t[:1])  # a broadcast target
    assert not P_ORIG(a, t.double())


def test_poisson_empty_batch():
    a = tgrad.zeros(0, 3, requires_grad=True)
    m = F.poisson_nll_loss(a, tgrad.zeros(0, 3))
    assert m.shape == () and np.isnan(m.item())
    s = F.poisson_nll_loss(a, tgrad.zeros(0, 3), reduction="sum")
    assert s.item() == 0.0 and type(s.detach().numpy()) is np.ndarray
    s.backward()
    assert a.grad.shape == (0, 3)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("log_input", [True, False])
@pytest.mark.parametrize("shape", [(4, 5), ()])
def test_poisson_gradcheck_gradgradcheck(red, log_input, shape):
    rng = np.random.default_rng(10)
    a = tgrad.tensor(rng.random(shape) + 0.2, requires_grad=True)
    t = tgrad.tensor(rng.random(shape) * 3, requires_grad=True)

    def f(a, t):
        return F.poisson_nll_loss(a, t, log_input=log_input, reduction=red)

    assert gradcheck(f, (a, t))
    assert gradgradcheck(f, (a, t))


@pytest.mark.parametrize("log_input", [True, False])
def test_poisson_create_graph_matches_composite(log_input, monkeypatch):
    x, t = _pdata((5, 4), np.float64, log_input, specials=False)
    x = x + (0 if log_input else 0.1)
    out = []
    for fused in (True, False):
        monkeypatch.setattr(LE, "_poisson_on_numpy", P_ORIG if fused else lambda *a: False)
        a = tgrad.tensor(x, requires_grad=True)
        b = tgrad.tensor(t, requires_grad=True)
        loss = F.poisson_nll_loss(a, b, log_input=log_input)
        ga, gb = tgrad.autograd.grad(loss, (a, b), create_graph=True)
        assert ga.requires_grad and gb.requires_grad
        hh = tgrad.autograd.grad((ga * ga).sum() + (gb * a).sum(), (a, b))
        out.append([q.detach().numpy() for q in (ga, gb, *hh)])
    for f, c in zip(*out):
        np.testing.assert_allclose(f, c, rtol=1e-12, atol=1e-15 * np.abs(c).max())
