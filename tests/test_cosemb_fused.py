"""cosine_embedding_loss: the one-node CPU path (_CosineEmbedding) against the composite of
tgrad ops it replaces and float64 references."""

import ml_dtypes
import numpy as np
import pytest

import tgrad
import tgrad.nn._losses_extra as LE
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

ORIG = LE._cos_emb_on_numpy


def _run(x1n, x2n, yn, red, fused, monkeypatch, margin=0.0):
    monkeypatch.setattr(LE, "_cos_emb_on_numpy", ORIG if fused else lambda *a: False)
    a = tgrad.tensor(x1n, requires_grad=True)
    b = tgrad.tensor(x2n, requires_grad=True)
    loss = F.cosine_embedding_loss(a, b, tgrad.tensor(yn), margin=margin, reduction=red)
    (loss.sum() if loss.ndim else loss).backward()
    return loss.detach().numpy(), a.grad.numpy(), b.grad.numpy(), loss.grad_fn.name()


def _ref(x1, x2, y, margin):
    """Per-row loss in float64."""
    x1, x2 = x1.astype(np.float64), x2.astype(np.float64)
    q1, q2 = (x1 * x1).sum(-1) + 1e-12, (x2 * x2).sum(-1) + 1e-12
    with np.errstate(all="ignore"):  # (the NaN / inf rows)
        cos = (x1 * x2).sum(-1) / np.sqrt(q1 * q2)
    return np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(cos - margin, 0), 0.0)


def _grad_scales(x1, x2, red):
    """Per element, the size of the two terms of dx1 = gc (x2 / den - cos x1 / q1) (and of
    dx2) in float64, |gc| <= 1 / N ('mean') or 1: the scale of their rounding errors."""
    x1, x2 = x1.astype(np.float64), x2.astype(np.float64)
    with np.errstate(all="ignore"):
        q1, q2 = (x1 * x1).sum(-1) + 1e-12, (x2 * x2).sum(-1) + 1e-12
        den = np.sqrt(q1 * q2)
        cos = np.abs((x1 * x2).sum(-1) / den)
        g = 1.0 / max(1, cos.size) if red == "mean" else 1.0
        e = np.expand_dims
        return (g * (np.abs(x2) / e(den, -1) + np.abs(x1) * e(cos / q1, -1)),
                g * (np.abs(x1) / e(den, -1) + np.abs(x2) * e(cos / q2, -1)))


def _data(shape, dt, seed=3, specials=True):
    rng = np.random.default_rng(seed)
    x1 = rng.standard_normal(shape).astype(dt)
    x2 = rng.standard_normal(shape).astype(dt)
    y = rng.choice(np.array([1.0, -1.0, 1.0, -1.0, 0.0, 2.0]), size=shape[:-1])
    if specials and len(shape) == 2 and shape[0] >= 6 and shape[1]:
        x1[0, 0] = np.nan  # a NaN row
        x1[1, -1] = np.inf  # an inf row
        x1[2] = 0.0  # a zero vector: cos = 0 (the eps)
        x2[3] = x1[3] * dt(0.5)  # parallel: cos = 1
        x2[4] = -x1[4]  # antiparallel: cos = -1
        y[:6] = [1, -1, -1, -1, 1, -1]
    return x1, x2, y.astype(np.float32)


SHAPES = [(9, 5), (7,), (0, 4), (4, 0), (6, 129), (1, 1), (13, 300)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("margin", [0.0, 0.1, -0.3])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fused_matches_composite(shape, red, margin, dt, monkeypatch):
    x1, x2, y = _data(shape, dt)
    l1, ga1, gb1, n1 = _run(x1, x2, y, red, True, monkeypatch, margin)
    l0, ga0, gb0, n0 = _run(x1, x2, y, red, False, monkeypatch, margin)
    assert n1 == n0 and l1.shape == l0.shape and l1.dtype == l0.dtype
    if dt == np.float64 or shape[-1] > 128:  # float_sum's row sums: the composite's bits
        np.testing.assert_array_equal(l1, l0)
    else:  # float32 rows <= 128 summed by einsum: as close to float64 as the composite
        np.testing.assert_array_equal(np.isnan(l1), np.isnan(l0))
        eps = np.finfo(dt).eps
        np.testing.assert_allclose(l1, l0, rtol=0, atol=4 * eps * max(1, y.size))
        if red == "none":
            ref = _ref(x1, x2, y, margin)
            ok = np.isfinite(ref)
            np.testing.assert_allclose(l1[ok], ref[ok], rtol=0, atol=4 * eps)
    for g1, g0, sc in zip((ga1, gb1), (ga0, gb0), _grad_scales(x1, x2, red)):
        np.testing.assert_array_equal(np.isfinite(g1), np.isfinite(g0))
        fin = np.isfinite(g0)
        # the same formula's roundings in another order (and, float32 rows <= 128, cos
        # a few ulps away: its error scaled by the row's 1 / den)
        tol = (4 if dt == np.float64 or shape[-1] > 128 else 16) * np.finfo(dt).eps
        assert np.all(np.abs(g1[fin] - g0[fin].astype(np.float64)) <= tol * sc[fin])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_values_against_float64(dt, monkeypatch):
    """Odd sizes, many rows: within a few ulps of 1 (the loss is O(1)) of float64."""
    for d in (3, 33, 128, 131):
        x1, x2, y = _data((2000, d), dt, seed=d, specials=False)
        y = np.where(y == 0, 1, np.where(y == 2, -1, y)).astype(np.float32)
        l1 = _run(x1, x2, y, "none", True, monkeypatch, 0.2)[0]
        np.testing.assert_allclose(l1, _ref(x1, x2, y, 0.2), rtol=0,
                                   atol=4 * np.finfo(dt).eps)


@pytest.mark.parametrize("hdt", [np.float16, ml_dtypes.bfloat16])
def test_halves(hdt, monkeypatch):
    x1, x2, y = _data((9, 6), np.float32)
    x1, x2 = x1.astype(hdt), x2.astype(hdt)
    for red in ("none", "mean", "sum"):
        l1 = _run(x1, x2, y, red, True, monkeypatch)[0]
        l0 = _run(x1, x2, y, red, False, monkeypatch)[0]
        assert l1.dtype == l0.dtype == np.dtype(hdt)
        np.testing.assert_allclose(l1.astype(np.float64), l0.astype(np.float64),
                                   rtol=float(np.finfo(hdt).eps), atol=0)


def test_fast_path_taken_and_node_names():
    a = tgrad.randn(4, 3, requires_grad=True)
    b = tgrad.randn(4, 3, requires_grad=True)
    y = tgrad.tensor([1.0, -1.0, 1.0, -1.0])
    for red, name in (("none", "AddBackward0"), ("mean", "MeanBackward0"),
                      ("sum", "SumBackward0")):
        node = F.cosine_embedding_loss(a, b, y, reduction=red).grad_fn
        assert issubclass(node._forward_cls, LE._CosineEmbedding)
        assert node.name() == name
    assert ORIG(a, b, y)
    assert not ORIG(a, b, y.detach().requires_grad_(True))  # the composite: no target edge
    assert not ORIG(a, b[:1], y)  # broadcast inputs
    assert not ORIG(a, b.double(), y)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(5)
    x1n, x2n = rng.standard_normal((7, 5)), rng.standard_normal((7, 5))
    y = tgrad.tensor(np.sign(rng.standard_normal(5)))
    for dt in (tgrad.float32, tgrad.float64):
        a = tgrad.tensor(x1n, dtype=dt, requires_grad=True)
        b = tgrad.tensor(x2n, dtype=dt, requires_grad=True)
        loss = F.cosine_embedding_loss(a.t(), b.t(), y, reduction="none")
        loss.sum().backward()
        ac = tgrad.tensor(np.ascontiguousarray(x1n.T), dtype=dt, requires_grad=True)
        bc = tgrad.tensor(np.ascontiguousarray(x2n.T), dtype=dt, requires_grad=True)
        lc = F.cosine_embedding_loss(ac, bc, y, reduction="none")
        lc.sum().backward()
        eps = 4 * np.finfo(np.float32 if dt is tgrad.float32 else np.float64).eps
        np.testing.assert_allclose(loss.detach().numpy(), lc.detach().numpy(), atol=eps)
        np.testing.assert_allclose(a.grad.numpy().T, ac.grad.numpy(), atol=eps)
        np.testing.assert_allclose(b.grad.numpy().T, bc.grad.numpy(), atol=eps)


def test_empty_batch():
    a = tgrad.zeros(0, 3, requires_grad=True)
    b = tgrad.zeros(0, 3, requires_grad=True)
    y = tgrad.zeros(0)
    m = F.cosine_embedding_loss(a, b, y)
    assert m.shape == () and np.isnan(m.item())
    s = F.cosine_embedding_loss(a, b, y, reduction="sum")
    assert s.item() == 0.0
    s.backward()
    assert a.grad.shape == (0, 3) and b.grad.shape == (0, 3)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 5), (6,)])
def test_gradcheck_gradgradcheck(red, shape):
    rng = np.random.default_rng(10)
    a = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
    b = tgrad.tensor(rng.standard_normal(shape), requires_grad=True)
    y = tgrad.tensor(np.array([1.0, -1.0, -1.0, 1.0])[:shape[0]] if len(shape) == 2
                     else np.array(-1.0))

    def f(a, b):  # margin -1.5: cos - margin > 0 everywhere (away from the hinge)
        return F.cosine_embedding_loss(a, b, y, margin=-1.5, reduction=red)

    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_create_graph_matches_composite(monkeypatch):
    x1, x2, y = _data((5, 4), np.float64, specials=False)
    y = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
    out = []
    for fused in (True, False):
        monkeypatch.setattr(LE, "_cos_emb_on_numpy", ORIG if fused else lambda *a: False)
        a = tgrad.tensor(x1, requires_grad=True)
        b = tgrad.tensor(x2, requires_grad=True)
        loss = F.cosine_embedding_loss(a, b, tgrad.tensor(y), margin=-0.5)
        ga, gb = tgrad.autograd.grad(loss, (a, b), create_graph=True)
        assert ga.requires_grad
        hh = tgrad.autograd.grad((ga * ga).sum() + (gb * b).sum(), (a, b))
        out.append([t.detach().numpy() for t in (ga, gb, *hh)])
    for f, c in zip(*out):
        np.testing.assert_allclose(f, c, rtol=1e-12, atol=1e-15 * np.abs(c).max())


def test_forward_ad_matches_backward():
    import tgrad.autograd.forward_ad as fwAD
    rng = np.random.default_rng(11)
    a, v = tgrad.tensor(rng.standard_normal((4, 5))), tgrad.tensor(rng.standard_normal((4, 5)))
    b = tgrad.tensor(rng.standard_normal((4, 5)))
    y = tgrad.tensor([1.0, -1.0, 1.0, -1.0])
    with fwAD.dual_level():
        out = F.cosine_embedding_loss(fwAD.make_dual(a, v), b, y, margin=-1.5)
        tangent = fwAD.unpack_dual(out).tangent.item()
    aa = a.detach().requires_grad_(True)
    F.cosine_embedding_loss(aa, b, y, margin=-1.5).backward()
    np.testing.assert_allclose(tangent, (aa.grad * v).sum().item(), rtol=1e-12)
