"""F.linear_cross_entropy / nn.LinearCrossEntropyLoss / nn.LinearCrossEntropyOptions
(PyTorch 2.13): against a NumPy float64 reference and against cross_entropy(linear(...))
composed of tgrad's ops; the chunked path (options given) keeps no (N, C) tensor."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.nn import LinearCrossEntropyOptions


def _np_lce(x, w, t, b=None, cw=None, reduction="mean", ignore_index=-100):
    """Class-index targets: l_r = cw[t_r] (logsumexp(z_r) - z_r,t_r), z = x w^T + b."""
    z = x @ w.T + (0 if b is None else b)
    m = z.max(1, keepdims=True)
    lse = (m + np.log(np.exp(z - m).sum(1, keepdims=True)))[:, 0]
    valid = t != ignore_index
    ts = np.where(valid, t, 0)
    rw = (np.ones(w.shape[0]) if cw is None else cw)[ts] * valid
    loss = (lse - z[np.arange(len(t)), ts]) * rw
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / rw.sum()


def _data(seed=0, n=7, d=4, c=5):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, c, n)
    t[2] = -100
    return (rng.standard_normal((n, d)), rng.standard_normal((c, d)), t,
            rng.standard_normal(c), rng.uniform(0.5, 2.0, c))


@pytest.mark.parametrize("options", [None, LinearCrossEntropyOptions(batch_chunk_size=3),
                                     LinearCrossEntropyOptions()])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_values_and_grads_match_numpy_and_composed(options, reduction):
    x, w, t, b, cw = _data()
    for bias, cls_w in ((None, None), (b, cw)):
        xs = tgrad.tensor(x, requires_grad=True)
        ws = tgrad.tensor(w, requires_grad=True)
        bs = None if bias is None else tgrad.tensor(bias, requires_grad=True)
        cws = None if cls_w is None else tgrad.tensor(cls_w)
        out = F.linear_cross_entropy(xs, ws, tgrad.tensor(t), linear_bias=bs, weight=cws,
                                     reduction=reduction, options=options)
        np.testing.assert_allclose(out.detach().numpy(),
                                   _np_lce(x, w, t, bias, cls_w, reduction), rtol=1e-12)
        xr, wr = tgrad.tensor(x, requires_grad=True), tgrad.tensor(w, requires_grad=True)
        br = None if bias is None else tgrad.tensor(bias, requires_grad=True)
        ref = F.cross_entropy(F.linear(xr, wr, br), tgrad.tensor(t), weight=cws,
                              reduction=reduction)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
        gout = tgrad.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(out.shape))
        (out * gout).sum().backward()
        (ref * gout).sum().backward()
        for a, r in ((xs, xr), (ws, wr), (bs, br)):
            if a is not None:
                np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-10,
                                           atol=1e-14)


def test_unbatched_probability_targets_and_k_dim():
    x, w, t, b, cw = _data(1)
    # unbatched: input (D,), target () -> a 0-d loss, chunked or not
    for opts in (None, LinearCrossEntropyOptions(batch_chunk_size=1)):
        out = F.linear_cross_entropy(tgrad.tensor(x[0]), tgrad.tensor(w), tgrad.tensor(t[0]),
                                     options=opts, reduction="none")
        assert out.shape == ()
        np.testing.assert_allclose(out.numpy(), _np_lce(x[:1], w, t[:1], reduction="none")[0],
                                   rtol=1e-12)
    # class probabilities (reference path): -sum_c p_c log_softmax(z)_c, weighted by cw[c]
    p = np.random.default_rng(2).dirichlet(np.ones(5), 7)
    z = x @ w.T + b
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    with pytest.warns(UserWarning, match="``options`` ignored"):
        out = F.linear_cross_entropy(tgrad.tensor(x), tgrad.tensor(w), tgrad.tensor(p),
                                     linear_bias=tgrad.tensor(b), weight=tgrad.tensor(cw),
                                     options=LinearCrossEntropyOptions())
    np.testing.assert_allclose(out.numpy(), -(p * logp * cw).sum(1).mean(), rtol=1e-12)
    # K-dimensional: weight (C, d1, D) -> logits (N, C, d1), target (N, d1)
    rng = np.random.default_rng(3)
    wk, tk = rng.standard_normal((5, 3, 4)), rng.integers(0, 5, (7, 3))
    zk = np.einsum("nd,ckd->nck", x, wk)
    lse = np.log(np.exp(zk).sum(1))
    want = (lse - np.take_along_axis(zk, tk[:, None], 1)[:, 0]).mean()
    out = F.linear_cross_entropy(tgrad.tensor(x), tgrad.tensor(wk), tgrad.tensor(tk))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("options", [None, LinearCrossEntropyOptions(batch_chunk_size=2)])
def test_gradcheck_and_gradgradcheck(options):
    x, w, t, b, cw = _data(4, n=5, d=3, c=4)
    t[2] = 1
    t[3] = -100
    args = (tgrad.tensor(x, requires_grad=True), tgrad.tensor(w, requires_grad=True),
            tgrad.tensor(b, requires_grad=True))

    def f(xx, ww, bb):
        return F.linear_cross_entropy(xx, ww, tgrad.tensor(t), linear_bias=bb,
                                      weight=tgrad.tensor(cw), options=options)
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_chunked_node_saves_no_logits():
    n, d, c = 16, 3, 40
    rng = np.random.default_rng(5)
    x = tgrad.tensor(rng.standard_normal((n, d)), requires_grad=True)
    w = tgrad.tensor(rng.standard_normal((c, d)), requires_grad=True)
    t = tgrad.tensor(rng.integers(0, c, n))
    out = F.linear_cross_entropy(x, w, t, options=LinearCrossEntropyOptions(batch_chunk_size=4))
    node = out.grad_fn
    while type(node).__name__ != "LinearCrossEntropyBackward0":
        node = node.next_functions[0][0]
    shapes = [tuple(s.shape) for s in node.saved_tensors if s is not None]
    assert (n, d) in shapes and (c, d) in shapes
    assert all(s[-1:] != (c,) or len(s) < 2 for s in shapes), shapes
    assert max(int(np.prod(s)) for s in shapes) < n * c


def test_options_chunk_sizes_and_errors():
    adj = LinearCrossEntropyOptions()._adjust(100, 8, 1000, tgrad.float32, "cpu")
    # aspect_ratio:2: next_pow2(ceil(100 / ceil(1000 / 8))) // 2 = 1 // 2 -> at least 1
    assert (adj.batch_chunk_size, adj.chunking_method, adj.acc_policy) == (
        1, "aspect_ratio:2", "compact")
    adj = LinearCrossEntropyOptions(chunking_method="aspect_ratio")._adjust(
        100, 64, 256, tgrad.float32)
    assert adj.batch_chunk_size == 32  # next_pow2(ceil(100 / 4)) = 32
    assert LinearCrossEntropyOptions(batch_chunk_size=7)._adjust(
        5, 2, 3, tgrad.float64).batch_chunk_size == 5
    with pytest.raises(ValueError, match="invalid acc_policy: 'fast'"):
        LinearCrossEntropyOptions(acc_policy="fast")
    with pytest.raises(ValueError, match="invalid chunking_method: 'rows'"):
        LinearCrossEntropyOptions(chunking_method="rows")
    with pytest.raises(ValueError, match="batch_chunk_size must be positive int or None"):
        LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio")._adjust(
            100, 64, 256, tgrad.float32)
    x, w = tgrad.zeros(3, 4), tgrad.zeros(5, 4)
    with pytest.raises(RuntimeError, match="expected input with dimensionality 1 or 2, got 3"):
        F.linear_cross_entropy(x.reshape(1, 3, 4), w, tgrad.zeros(3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"expected equal input and linear_weight last "
                                           r"dimensions \(in_features\), got 4 and 3"):
        F.linear_cross_entropy(x, w[:, :3], tgrad.zeros(3, dtype=tgrad.int64))
    with pytest.raises(RuntimeError, match=r"expected linear_bias shape \(5,\), got \(4,\)"):
        F.linear_cross_entropy(x, w, tgrad.zeros(3, dtype=tgrad.int64),
                               linear_bias=tgrad.zeros(4))
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified when target "
                                           "contains probabilities"):
        F.linear_cross_entropy(x, w, tgrad.zeros(3, 5), ignore_index=0)


def test_module_matches_functional():
    tgrad.manual_seed(0)
    m = tgrad.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True)
    assert tuple(m.linear.weight.shape) == (10, 4)
    x = tgrad.randn(3, 4, dtype=tgrad.float32)
    t = tgrad.tensor(np.array([[0, 4], [1, 2], [3, 3]]))
    want = F.cross_entropy(F.linear(x, m.linear.weight, m.linear.bias).reshape(3, 5, 2), t)
    np.testing.assert_allclose(m(x, t).detach().numpy(), want.detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(5,\), got \(4,\)"):
        tgrad.nn.LinearCrossEntropyLoss(4, 5, weight=tgrad.ones(4))
