"""The losses of tgrad/nn/_losses_extra.py and their modules: forward values against
independent NumPy float64 references written here (per reduction), gradcheck and
gradgradcheck in float64 away from the hinges, odd sizes, broadcasting, non-contiguous
inputs, empty batches, PyTorch's error texts (checked against PyTorch 2.14) and reprs."""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.nn as nn
import tgrad.nn.functional as F
from tgrad.autograd import gradcheck, gradgradcheck

REDUCTIONS = ("none", "mean", "sum")


def _t(a, **kw) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.float64), **kw)


def _nc(a) -> tgrad.Tensor:
    """A non-contiguous float64 tensor (a transposed view) holding the values of ``a``."""
    a = np.asarray(a, dtype=np.float64)
    t = tgrad.tensor(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)
    assert not t.is_contiguous() or a.ndim < 2 or 1 in a.shape
    return t


def _long(a) -> tgrad.Tensor:
    return tgrad.tensor(np.asarray(a, dtype=np.int64))


def _red(loss: np.ndarray, reduction: str):
    if reduction == "mean":
        return loss.mean() if loss.size else np.nan
    return loss.sum() if reduction == "sum" else loss


def _close(got: tgrad.Tensor, want) -> None:
    want = np.asarray(want, dtype=np.float64)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12, atol=1e-14)


def _logsig(x):
    return -np.logaddexp(0.0, -x)


def _signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


# ---------------------------------------------------------------- NumPy references
def ref_margin_ranking(a, b, y, margin):
    return np.maximum(0.0, -y * (a - b) + margin)


def ref_hinge_embedding(x, y, margin):
    return np.where(y != 1, np.maximum(0.0, margin - x), 0.0) + np.where(y != -1, x, 0.0)


def ref_soft_margin(x, y):
    return np.log1p(np.exp(-y * x))


def ref_multilabel_soft_margin(x, y, w=None):
    loss = -(y * _logsig(x) + (1 - y) * _logsig(-x))
    if w is not None:
        loss = loss * w
    return loss.mean(-1)


def ref_cosine_embedding(a, b, y, margin):
    dot = (a * b).sum(-1)
    cos = dot / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    return np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(0.0, cos - margin),
                                                      0.0)


def ref_multi_margin(x, t, p, margin, w=None):
    x2 = np.atleast_2d(x)
    t1 = np.atleast_1d(t)
    n, c = x2.shape
    out = np.zeros(n)
    for i in range(n):
        for j in range(c):
            if j != t1[i]:
                z = max(0.0, margin - x2[i, t1[i]] + x2[i, j]) ** p
                out[i] += z * (1.0 if w is None else w[t1[i]])
        out[i] /= c
    return out if x.ndim == 2 else out[0]


def ref_multilabel_margin(x, t):
    x2, t2 = np.atleast_2d(x), np.atleast_2d(t)
    n, c = x2.shape
    out = np.zeros(n)
    for i in range(n):
        labels = []
        for v in t2[i]:
            if v == -1:
                break
            labels.append(v)
        for j in labels:
            for k in range(c):
                if k not in labels:
                    out[i] += max(0.0, 1.0 - (x2[i, j] - x2[i, k]))
        out[i] /= c
    return out if x.ndim == 2 else out[0]


def ref_pdist(a, b, p, eps):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1.0 / p)


def ref_triplet(a, pos, neg, margin, p, eps, swap):
    dp, dn = ref_pdist(a, pos, p, eps), ref_pdist(a, neg, p, eps)
    if swap:
        dn = np.minimum(dn, ref_pdist(pos, neg, p, eps))
    return np.maximum(0.0, margin + dp - dn)


def ref_poisson(x, t, log_input, full, eps):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        with np.errstate(divide="ignore", invalid="ignore"):
            st = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
        loss = loss + np.where(t > 1, st, 0.0)
    return loss


def ref_gaussian(x, t, v, full, eps):
    v = np.maximum(v, eps)
    loss = 0.5 * (np.log(v) + (x - t) ** 2 / v)
    return loss + 0.5 * np.log(2 * np.pi) if full else loss


# ---------------------------------------------------------------- forward vs references
def _data(rng, n=17, c=5):
    return {
        "x": rng.standard_normal((n, c)), "x2": rng.standard_normal((n, c)),
        "x3": rng.standard_normal((n, c)), "sign": _signs(rng, (n, c)),
        "sign_n": _signs(rng, (n,)), "prob": rng.random((n, c)),
        "cls": rng.integers(0, c, n), "rate": rng.random((n, c)) * 4,
        "var": rng.random((n, c)) + 0.1,
    }


def _cases(d):
    """(name, tgrad call(reduction, make), reference(reduction)); ``make`` builds inputs."""
    ml_target = np.full(d["x"].shape, -1, np.int64)
    for i in range(d["x"].shape[0]):
        k = i % d["x"].shape[1]
        ml_target[i, :k] = (np.arange(k) * 2 + i) % d["x"].shape[1]
    ml_target[0, :2] = 3  # a repeated label counts twice (PyTorch's loop)
    return [
        ("margin_ranking", lambda r, m: F.margin_ranking_loss(
            m(d["x"]), m(d["x2"]), m(d["sign"]), margin=0.3, reduction=r),
         lambda r: _red(ref_margin_ranking(d["x"], d["x2"], d["sign"], 0.3), r)),
        ("hinge_embedding", lambda r, m: F.hinge_embedding_loss(
            m(d["x"]), m(d["sign"]), margin=0.7, reduction=r),
         lambda r: _red(ref_hinge_embedding(d["x"], d["sign"], 0.7), r)),
        ("soft_margin", lambda r, m: F.soft_margin_loss(m(d["x"]), m(d["sign"]), reduction=r),
         lambda r: _red(ref_soft_margin(d["x"], d["sign"]), r)),
        ("multilabel_soft_margin", lambda r, m: F.multilabel_soft_margin_loss(
            m(d["x"]), m(d["prob"]), weight=_t(np.arange(1.0, 6.0)), reduction=r),
         lambda r: _red(ref_multilabel_soft_margin(d["x"], d["prob"], np.arange(1.0, 6.0)),
                        r)),
        ("cosine_embedding", lambda r, m: F.cosine_embedding_loss(
            m(d["x"]), m(d["x2"]), _t(d["sign_n"]), margin=0.1, reduction=r),
         lambda r: _red(ref_cosine_embedding(d["x"], d["x2"], d["sign_n"], 0.1), r)),
        ("multi_margin_p1", lambda r, m: F.multi_margin_loss(
            m(d["x"]), _long(d["cls"]), margin=0.8, reduction=r),
         lambda r: _red(ref_multi_margin(d["x"], d["cls"], 1, 0.8), r)),
        ("multi_margin_p2_w", lambda r, m: F.multi_margin_loss(
            m(d["x"]), _long(d["cls"]), p=2, weight=_t(np.arange(1.0, 6.0)), reduction=r),
         lambda r: _red(ref_multi_margin(d["x"], d["cls"], 2, 1.0, np.arange(1.0, 6.0)), r)),
        ("multilabel_margin", lambda r, m: F.multilabel_margin_loss(
            m(d["x"]), _long(ml_target), reduction=r),
         lambda r: _red(ref_multilabel_margin(d["x"], ml_target), r)),
        ("triplet", lambda r, m: F.triplet_margin_loss(
            m(d["x"]), m(d["x2"]), m(d["x3"]), margin=1.5, reduction=r),
         lambda r: _red(ref_triplet(d["x"], d["x2"], d["x3"], 1.5, 2, 1e-6, False), r)),
        ("triplet_p1_swap", lambda r, m: F.triplet_margin_loss(
            m(d["x"]), m(d["x2"]), m(d["x3"]), p=1, eps=1e-3, swap=True, reduction=r),
         lambda r: _red(ref_triplet(d["x"], d["x2"], d["x3"], 1.0, 1, 1e-3, True), r)),
        ("triplet_distance", lambda r, m: F.triplet_margin_with_distance_loss(
            m(d["x"]), m(d["x2"]), m(d["x3"]), margin=2.0, swap=True, reduction=r,
            distance_function=lambda u, v: ((u - v) ** 2).sum(-1)),
         lambda r: _red(np.maximum(0.0, 2.0 + ((d["x"] - d["x2"]) ** 2).sum(-1) - np.minimum(
             ((d["x"] - d["x3"]) ** 2).sum(-1), ((d["x2"] - d["x3"]) ** 2).sum(-1))), r)),
        ("poisson_log", lambda r, m: F.poisson_nll_loss(m(d["x"]), m(d["rate"]), reduction=r),
         lambda r: _red(ref_poisson(d["x"], d["rate"], True, False, 1e-8), r)),
        ("poisson_full", lambda r, m: F.poisson_nll_loss(
            m(d["var"]), m(d["rate"]), log_input=False, full=True, eps=1e-3, reduction=r),
         lambda r: _red(ref_poisson(d["var"], d["rate"], False, True, 1e-3), r)),
        ("gaussian", lambda r, m: F.gaussian_nll_loss(
            m(d["x"]), m(d["x2"]), m(d["var"]), reduction=r),
         lambda r: _red(ref_gaussian(d["x"], d["x2"], d["var"], False, 1e-6), r)),
        ("gaussian_full_eps", lambda r, m: F.gaussian_nll_loss(
            m(d["x"]), m(d["x2"]), m(d["var"]), full=True, eps=0.5, reduction=r),
         lambda r: _red(ref_gaussian(d["x"], d["x2"], d["var"], True, 0.5), r)),
    ]


@pytest.mark.parametrize("n", [1, 17])
@pytest.mark.parametrize("make", [_t, _nc], ids=["contiguous", "strided"])
def test_forward_matches_numpy_reference(n, make):
    d = _data(np.random.default_rng(n), n=n)
    for name, call, ref in _cases(d):
        for r in REDUCTIONS:
            got = call(r, make)
            want = ref(r)
            assert got.dtype is tgrad.float64, name
            try:
                _close(got, want)
            except AssertionError as e:
                raise AssertionError(f"{name} reduction={r}: {e}") from None


def _gradcase(name):
    rng = np.random.default_rng(3)
    x, x2, x3 = (rng.standard_normal((3, 4)) for _ in range(3))
    sign, sign_n = _signs(rng, (3, 4)), _signs(rng, (3,))
    cls = np.array([0, 3, 1])
    rate = rng.random((3, 4)) * 3
    table = {
        "margin_ranking": ([x, x2], lambda a, b: F.margin_ranking_loss(a, b, _t(sign),
                                                                        margin=0.3)),
        "hinge_embedding": ([x], lambda a: F.hinge_embedding_loss(a, _t(sign), margin=0.7,
                                                                 reduction="sum")),
        "soft_margin": ([x], lambda a: F.soft_margin_loss(a, _t(sign), reduction="none")),
        "multilabel_soft_margin": ([x, rng.random((3, 4))],
                                   lambda a, y: F.multilabel_soft_margin_loss(a, y)),
        "cosine_embedding": ([x, x2], lambda a, b: F.cosine_embedding_loss(
            a, b, _t(sign_n), margin=-0.9, reduction="none")),
        "multi_margin_p1": ([x], lambda a: F.multi_margin_loss(a, _long(cls), margin=0.8)),
        "multi_margin_p2": ([x], lambda a: F.multi_margin_loss(
            a, _long(cls), p=2, weight=_t([1.0, 2.0, 0.5, 3.0]), reduction="none")),
        "multilabel_margin": ([x], lambda a: F.multilabel_margin_loss(
            a, _long([[0, 2, -1, 1], [3, -1, 0, 0], [1, 0, 2, 3]]), reduction="sum")),
        "triplet": ([x, x2, x3], lambda a, p, q: F.triplet_margin_loss(a, p, q, margin=3.0,
                                                                       swap=True)),
        "triplet_distance": ([x, x2, x3], lambda a, p, q: F.triplet_margin_with_distance_loss(
            a, p, q, margin=3.0, reduction="none")),
        "poisson": ([x, rng.random((3, 4)) * 3], lambda a, t: F.poisson_nll_loss(
            a, t, full=True)),
        "poisson_linear": ([rng.random((3, 4)) + 0.5], lambda a: F.poisson_nll_loss(
            a, _t(rate), log_input=False, reduction="sum")),
        "gaussian": ([x, x2, rng.random((3, 4)) + 0.2], lambda a, t, v: F.gaussian_nll_loss(
            a, t, v, full=True)),
        "gaussian_homoscedastic": ([x, x2, rng.random(3) + 0.2],
                                   lambda a, t, v: F.gaussian_nll_loss(a, t, v,
                                                                       reduction="none")),
    }
    arrays, fn = table[name]
    return [_t(a, requires_grad=True) for a in arrays], fn


@pytest.mark.parametrize("name", ["margin_ranking", "hinge_embedding", "soft_margin",
                                  "multilabel_soft_margin", "cosine_embedding",
                                  "multi_margin_p1", "multi_margin_p2", "multilabel_margin",
                                  "triplet", "triplet_distance", "poisson", "poisson_linear",
                                  "gaussian", "gaussian_homoscedastic"])
def test_gradcheck_and_gradgradcheck(name):
    inputs, fn = _gradcase(name)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# ---------------------------------------------------------------- broadcasting, shapes
def test_broadcasting_where_pytorch_broadcasts():
    rng = np.random.default_rng(5)
    a, b, y = rng.standard_normal((3, 1)), rng.standard_normal((1, 4)), _signs(rng, (3, 4))
    _close(F.margin_ranking_loss(_t(a), _t(b), _t(y), reduction="none"),
           ref_margin_ranking(a, b, y, 0.0))
    x, s = rng.standard_normal((3, 1)), _signs(rng, (4,))
    _close(F.hinge_embedding_loss(_t(x), _t(s), reduction="none"), ref_hinge_embedding(x, s, 1.0))
    x2 = rng.standard_normal((3, 4))
    _close(F.soft_margin_loss(_t(x2), _t(s), reduction="none"), ref_soft_margin(x2, s))
    p = rng.random(4)
    _close(F.multilabel_soft_margin_loss(_t(x2), _t(p), reduction="none"),
           ref_multilabel_soft_margin(x2, p))
    u, v, yn = rng.standard_normal((2, 3)), rng.standard_normal((1, 3)), np.array([1.0, -1.0])
    _close(F.cosine_embedding_loss(_t(u), _t(v), _t(yn), reduction="none"),
           ref_cosine_embedding(u, v, yn, 0.0))
    a3, pos = rng.standard_normal((2, 3)), rng.standard_normal((1, 3))
    _close(F.triplet_margin_loss(_t(a3), _t(pos), _t(u), margin=2.0, reduction="none"),
           ref_triplet(a3, pos, u, 2.0, 2, 1e-6, False))
    rate = rng.random((3, 4)) * 3
    _close(F.poisson_nll_loss(_t(x), _t(rate), full=True, reduction="none"),
           ref_poisson(x, rate, True, True, 1e-8))
    # gaussian: target broadcasts; var (N, 1) or (1, C) (one mismatched dim of size 1)
    for var in (rng.random((3, 1)) + 0.1, rng.random((1, 4)) + 0.1):
        _close(F.gaussian_nll_loss(_t(x2), _t(x2[:1] * 0.5), _t(var), reduction="none"),
               ref_gaussian(x2, x2[:1] * 0.5, var, False, 1e-6))
    _close(F.gaussian_nll_loss(_t(x2), _t(x2 * 0.5), 0.25, reduction="none"),
           ref_gaussian(x2, x2 * 0.5, 0.25, False, 1e-6))
    big = np.array([np.inf, 1.0])  # a float var is var everywhere, even next to an inf
    _close(F.gaussian_nll_loss(_t(big), _t([0.0, 0.0]), 2.0, reduction="none"),
           ref_gaussian(big, np.zeros(2), 2.0, False, 1e-6))


def test_unbatched_and_single_sample_shapes():
    x = np.array([0.3, -0.2, 0.9])
    assert F.multi_margin_loss(_t(x), _long(1), reduction="none").shape == ()
    _close(F.multi_margin_loss(_t(x), _long([1])), ref_multi_margin(x, np.array(1), 1, 1.0))
    _close(F.multi_margin_loss(_t(1.5), _long(0), reduction="none"), 0.0)
    _close(F.multilabel_margin_loss(_t(x), _long([2, -1, 0]), reduction="none"),
           ref_multilabel_margin(x, np.array([2, -1, 0])))
    _close(F.multilabel_soft_margin_loss(_t(x), _t([1.0, 0.0, 1.0]), reduction="none"),
           ref_multilabel_soft_margin(x, np.array([1.0, 0.0, 1.0])))
    _close(F.cosine_embedding_loss(_t(x), _t(x[::-1].copy()), _t(-1.0), reduction="none"),
           ref_cosine_embedding(x, x[::-1], -1.0, 0.0))
    _close(F.triplet_margin_loss(_t(x), _t(x * 2), _t(-x), reduction="none"),
           ref_triplet(x, x * 2, -x, 1.0, 2, 1e-6, False))


@pytest.mark.parametrize("call", [
    lambda r: F.margin_ranking_loss(_t(np.zeros(0)), _t(np.zeros(0)), _t(np.zeros(0)),
                                    reduction=r),
    lambda r: F.hinge_embedding_loss(_t(np.zeros(0)), _t(np.zeros(0)), reduction=r),
    lambda r: F.soft_margin_loss(_t(np.zeros(0)), _t(np.zeros(0)), reduction=r),
    lambda r: F.multilabel_soft_margin_loss(_t(np.zeros((0, 3))), _t(np.zeros((0, 3))),
                                            reduction=r),
    lambda r: F.cosine_embedding_loss(_t(np.zeros((0, 3))), _t(np.zeros((0, 3))),
                                      _t(np.zeros(0)), reduction=r),
    lambda r: F.multi_margin_loss(_t(np.zeros((0, 3))), _long(np.zeros(0)), reduction=r),
    lambda r: F.multilabel_margin_loss(_t(np.zeros((0, 3))), _long(np.zeros((0, 3))),
                                       reduction=r),
    lambda r: F.triplet_margin_loss(*(_t(np.zeros((0, 3))),) * 3, reduction=r),
    lambda r: F.poisson_nll_loss(_t(np.zeros(0)), _t(np.zeros(0)), reduction=r),
    lambda r: F.gaussian_nll_loss(_t(np.zeros((0, 3))), _t(np.zeros((0, 3))),
                                  _t(np.ones((0, 3))), reduction=r),
])
def test_empty_batch(call):
    assert math.isnan(call("mean").item())  # PyTorch: nan (multi/multilabel margin: garbage)
    assert call("sum").item() == 0.0
    assert call("none").numel() == 0


# ---------------------------------------------------------------- special values
def test_poisson_full_stirling_only_above_one_and_gaussian_var_clamp_gradient():
    t = _t([0.0, 0.5, 1.0, 3.0], requires_grad=True)
    x = _t([0.1, 0.2, -0.3, 0.4])
    loss = F.poisson_nll_loss(x, t, full=True, reduction="none")
    _close(loss, ref_poisson(x.numpy(), t.detach().numpy(), True, True, 1e-8))
    loss.sum().backward()
    tn = 3.0
    want = -x.numpy().copy()
    want[3] += math.log(tn) + 0.5 / tn  # d/dt (t log t - t + 0.5 log(2 pi t))
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-14)  # finite at t = 0
    # var below eps is clamped without differentiating the clamp (identity gradient)
    v = _t([1e-9, 2.0], requires_grad=True)
    F.gaussian_nll_loss(_t([1.0, 1.0]), _t([0.0, 0.0]), v, reduction="sum").backward()
    vc = np.array([1e-6, 2.0])
    np.testing.assert_allclose(v.grad.numpy(), 0.5 * (1 / vc - 1 / vc ** 2), rtol=1e-14)


def test_soft_margin_is_stable_for_large_margins():
    x = _t([800.0, -800.0], requires_grad=True)
    loss = F.soft_margin_loss(x, _t([-1.0, -1.0]), reduction="none")
    assert loss.tolist() == [800.0, 0.0]
    loss.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0]


def test_legacy_size_average_and_reduce():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(5), _signs(rng, (5,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(F.soft_margin_loss(_t(x), _t(y), size_average=False), ref_soft_margin(x, y).sum())
        _close(F.margin_ranking_loss(_t(x), _t(x[::-1].copy()), _t(y), reduce=False),
               ref_margin_ranking(x, x[::-1], y, 0.0))
        m = nn.HingeEmbeddingLoss(size_average=False)
    assert m.reduction == "sum"


# ---------------------------------------------------------------- errors (PyTorch's texts)
def _z(*shape):
    return _t(np.zeros(shape))


@pytest.mark.parametrize("call, err, msg", [
    (lambda: F.margin_ranking_loss(_z(3), _z(3, 1), _z(3)), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
     "input1: tgrad.Size([3]), input2: tgrad.Size([3, 1]), target: tgrad.Size([3]) "),
    (lambda: F.margin_ranking_loss(_z(2), _z(2), _z(2), reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.soft_margin_loss(_z(3, 1), _z(4)), RuntimeError,
     "output with shape [3, 1] doesn't match the broadcast shape [3, 4]"),
    (lambda: F.multilabel_soft_margin_loss(_z(2, 3), _z(2, 3), reduction="bad"), ValueError,
     "bad is not valid"),
    (lambda: F.cosine_embedding_loss(_z(2, 3), _z(2, 3), _z(2, 1)), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cosine_embedding_loss(_z(2, 3, 4), _z(2, 3, 4), _z(2)), RuntimeError,
     "1D target tensor expects 2D input tensors, but found inputs with sizes [2, 3, 4] and "
     "[2, 3, 4]."),
    (lambda: F.cosine_embedding_loss(_z(2, 3), _z(2, 3), _t(1.0)), RuntimeError,
     "0D target tensor expects 1D input tensors, but found inputs with sizes [2, 3] and "
     "[2, 3]."),
    (lambda: F.cosine_embedding_loss(_z(2, 3), _z(2, 3), _z(3)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
     "dimension 0"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1]), p=3), ValueError,
     "only p == 1 and p == 2 supported"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1]), p=3, reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1]), weight=_z(3, 1)), ValueError,
     "weight must be one-dimensional"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1]), weight=_z(4)), RuntimeError,
     "inconsistent weight size, expected 3 but got [4]"),
    (lambda: F.multi_margin_loss(_z(2, 3, 4), _long([0, 1])), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"),
    (lambda: F.multi_margin_loss(_z(2, 0), _long([0, 1])), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 0]"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1, 2])), RuntimeError,
     "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
     "samples (batch size). Expected target size [2], but got [3]. Input has shape [2, 3]."),
    (lambda: F.multi_margin_loss(_z(3), _long([1, 0])), RuntimeError,
     "multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
     "samples (batch size). Expected target size [1], but got [2]. Input has shape [3]."),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 3])), RuntimeError,
     "target out of range"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, -1])), RuntimeError,
     "target out of range"),
    (lambda: F.multi_margin_loss(_z(2, 3), _z(2)), RuntimeError,
     "expected scalar type Long but found Double"),
    (lambda: F.multi_margin_loss(_z(2, 3), _long([0, 1]), weight=_t(np.ones(3),
                                                                     requires_grad=True)),
     RuntimeError, "The function 'multi_margin_loss' is not differentiable with respect to "
                   "argument 'weight'. This input cannot have requires_grad True."),
    (lambda: F.multilabel_margin_loss(_z(2, 3), _long([0, 1])), RuntimeError,
     "inconsistent target size: [2] for input of size: [2, 3]"),
    (lambda: F.multilabel_margin_loss(_z(2, 3), _long([[3, -1, 0], [0, 1, 2]])),
     RuntimeError, "argument #2 'target' is out of range"),
    (lambda: F.multilabel_margin_loss(_z(1, 3), _long([[2, -1, 7]])), RuntimeError,
     "argument #2 'target' is out of range"),
    (lambda: F.multilabel_margin_loss(_z(2, 3, 4), _long(np.zeros((2, 3, 4)))), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"),
    (lambda: F.triplet_margin_loss(_z(2, 3), _z(3), _z(2, 3)), RuntimeError,
     "The anchor, positive, and negative tensors are expected to have the same number of "
     "dimensions, but got: anchor 2D, positive 1D, and negative 2D inputs"),
    (lambda: F.triplet_margin_loss(_z(2, 3), _z(2, 3), _z(2, 3), margin=0), ValueError,
     "margin must be greater than 0, got 0"),
    (lambda: F.triplet_margin_with_distance_loss(_z(2, 3), _z(2, 3), _z(2, 3), margin=-1.5),
     ValueError, "margin must be greater than 0, got -1.5"),
    (lambda: F.triplet_margin_with_distance_loss(_z(2, 3), _z(2, 3), _z(2, 3),
                                                 reduction="bad"),
     ValueError, "bad is not a valid value for reduction"),
    (lambda: F.poisson_nll_loss(_z(2), _z(2), reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), _t(np.ones((2, 4)))), ValueError,
     "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), _t(np.ones(3))), ValueError,
     "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), _t(np.ones((1, 1)))), ValueError,
     "var is of incorrect size"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), _t(-np.ones((2, 3)))), ValueError,
     "var has negative entry/entries"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), -0.5), ValueError,
     "var has negative entry/entries"),
    (lambda: F.gaussian_nll_loss(_z(2, 3), _z(2, 3), _t(np.ones((2, 3))), reduction="bad"),
     ValueError, "bad is not valid"),
    (lambda: nn.TripletMarginLoss(margin=0), ValueError,
     "TripletMarginLoss: expected margin to be greater than 0, got 0 instead"),
    (lambda: nn.TripletMarginWithDistanceLoss(margin=0), ValueError,
     "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got 0 instead"),
    (lambda: nn.MultiMarginLoss(p=3), ValueError, "only p == 1 and p == 2 supported"),
    (lambda: nn.MultiMarginLoss(weight=_z(2, 2)), ValueError,
     "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"),
])
def test_errors(call, err, msg):
    with pytest.raises(err, match=re.escape(msg)):
        call()


# ---------------------------------------------------------------- modules
def test_modules_call_their_functions_and_repr():
    rng = np.random.default_rng(4)
    x, x2, x3 = (_t(rng.standard_normal((4, 3))) for _ in range(3))
    s, sn = _t(_signs(rng, (4, 3))), _t(_signs(rng, (4,)))
    cls, w = _long([0, 2, 1, 1]), _t([1.0, 0.5, 2.0])
    ml = _long([[0, -1, 1], [2, 1, -1], [1, 1, 1], [-1, 0, 0]])
    rate, var = _t(rng.random((4, 3)) * 3), _t(rng.random((4, 3)) + 0.1)
    pairs = [
        (nn.MarginRankingLoss(margin=0.5, reduction="sum"), (x, x2, s),
         F.margin_ranking_loss(x, x2, s, 0.5, reduction="sum"), "MarginRankingLoss()"),
        (nn.HingeEmbeddingLoss(margin=2.0), (x, s), F.hinge_embedding_loss(x, s, 2.0),
         "HingeEmbeddingLoss()"),
        (nn.CosineEmbeddingLoss(margin=0.2, reduction="none"), (x, x2, sn),
         F.cosine_embedding_loss(x, x2, sn, 0.2, reduction="none"), "CosineEmbeddingLoss()"),
        (nn.SoftMarginLoss(), (x, s), F.soft_margin_loss(x, s), "SoftMarginLoss()"),
        (nn.MultiLabelSoftMarginLoss(weight=w), (x, rate / 3),
         F.multilabel_soft_margin_loss(x, rate / 3, w), "MultiLabelSoftMarginLoss()"),
        (nn.MultiMarginLoss(p=2, margin=0.5, weight=w), (x, cls),
         F.multi_margin_loss(x, cls, 2, 0.5, w), "MultiMarginLoss()"),
        (nn.MultiLabelMarginLoss(reduction="none"), (x, ml),
         F.multilabel_margin_loss(x, ml, reduction="none"), "MultiLabelMarginLoss()"),
        (nn.TripletMarginLoss(margin=0.5, p=1.0, eps=0.0, swap=True), (x, x2, x3),
         F.triplet_margin_loss(x, x2, x3, 0.5, 1.0, 0.0, True), "TripletMarginLoss()"),
        (nn.TripletMarginWithDistanceLoss(swap=True), (x, x2, x3),
         F.triplet_margin_with_distance_loss(x, x2, x3, swap=True),
         "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"),
        (nn.PoissonNLLLoss(log_input=False, full=True, eps=0.1), (var, rate),
         F.poisson_nll_loss(var, rate, False, True, eps=0.1), "PoissonNLLLoss()"),
        (nn.GaussianNLLLoss(full=True, eps=0.2), (x, x2, var),
         F.gaussian_nll_loss(x, x2, var, True, 0.2), "GaussianNLLLoss()"),
    ]
    for module, args, want, text in pairs:
        np.testing.assert_array_equal(module(*args).numpy(), want.numpy(), err_msg=text)
        assert repr(module) == text
    assert list(nn.MultiMarginLoss(weight=w).state_dict()) == ["weight"]
    assert list(nn.MultiLabelSoftMarginLoss(weight=w).state_dict()) == ["weight"]
    assert list(nn.MultiMarginLoss().state_dict()) == []
    m = nn.TripletMarginLoss()
    assert (m.margin, m.p, m.eps, m.swap, m.reduction) == (1.0, 2.0, 1e-6, False, "mean")
    custom = nn.TripletMarginWithDistanceLoss(distance_function=nn.CosineSimilarity(dim=1))
    assert repr(custom) == ("TripletMarginWithDistanceLoss(\n  (distance_function): "
                            "CosineSimilarity()\n)")
    p = nn.PoissonNLLLoss()
    assert (p.log_input, p.full, p.eps) == (True, False, 1e-8)


# ------------------------------------------------- target dtypes (PyTorch 2.13's promotion)
def _softplus64(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def test_float_target_of_another_dtype_is_promoted_not_rounded():
    # 100000001 is not a float32 (it rounds to 1e8): the target's terms dominate the loss,
    # so rounding the target to the input's dtype would change it by ~1e-8 relative, while
    # the float32 exp / softplus of the input add errors below 1e-14 relative
    xv, tv = np.array([0.5, 1.0]), np.array([100000001.0, 3.0])
    x, t = tgrad.tensor(xv.astype(np.float32)), _t(tv)
    got = F.poisson_nll_loss(x, t)
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean(np.exp(xv) - tv * xv), rtol=1e-13)
    got = F.poisson_nll_loss(x, t, full=True)
    stir = np.where(tv > 1, tv * np.log(tv) - tv + 0.5 * np.log(2 * np.pi * tv), 0.0)
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean(np.exp(xv) - tv * xv + stir), rtol=1e-13)
    got = F.binary_cross_entropy_with_logits(x, t)
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean((1 - tv) * xv + _softplus64(-xv)),
                               rtol=1e-13)
    # the reverse (float64 input, float32 target) computes in float64 too
    got = F.poisson_nll_loss(_t(xv), tgrad.tensor([1.5, 3.0]))
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean(np.exp(xv) - [1.5, 3.0] * xv), rtol=1e-14)
    # an integer target is taken in the input's dtype (binary_cross_entropy_with_logits
    # refuses one, as PyTorch: its kernel writes the loss into the target's dtype)
    assert F.poisson_nll_loss(x, _long([1, 0])).dtype is tgrad.float32
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        F.binary_cross_entropy_with_logits(x, _long([1, 0]))
    # float16 input, float32 target: a float32 result (the promoted dtype; exp(x) is
    # float16's, as PyTorch's)
    got = F.poisson_nll_loss(x.half(), tgrad.tensor([1.5, 3.0]))
    assert got.dtype is tgrad.float32
    np.testing.assert_allclose(got.item(), np.mean(np.exp(xv) - [1.5, 3.0] * xv), rtol=2e-3)
    # the other losses that took the target in input's dtype
    y = _t([1.0, -1.0])
    got = F.margin_ranking_loss(x, x * 2, y)
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean(np.maximum(0, -y.numpy() * (xv - 2 * xv))))
    q = np.array([100000001.0, 0.0])
    got = F.multilabel_soft_margin_loss(x.unsqueeze(0), _t(q[None]))
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(),
                               np.mean(q * _softplus64(-xv) + (1 - q) * _softplus64(xv)),
                               rtol=1e-13)
    var = np.array([1.0000001, 2.0])  # log(var) of the float32-rounded var differs by 1e-8
    got = F.gaussian_nll_loss(x, x, _t(var))
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), np.mean(0.5 * np.log(var)), rtol=1e-13)
    probs = np.array([100000001.0, -100000000.0])
    got = F.cross_entropy(x.unsqueeze(0), _t(probs[None]))
    logp = xv - np.log(np.exp(xv).sum())
    assert got.dtype is tgrad.float64
    np.testing.assert_allclose(got.item(), -(probs * logp).sum(), rtol=1e-7)
    # soft_margin_loss keeps input's dtype (PyTorch writes into an input-dtype result)
    assert F.soft_margin_loss(x, y).dtype is tgrad.float32


def test_binary_cross_entropy_target_of_another_dtype_raises():
    p = tgrad.tensor([0.5, 0.25])
    with pytest.raises(RuntimeError, match=r"^binary_cross_entropy: Found dtype Double but "
                       r"expected Float"):
        F.binary_cross_entropy(p, _t([1.0, 0.0]))
    with pytest.raises(RuntimeError, match=r"Found dtype Long but expected Float"):
        F.binary_cross_entropy(p, _long([1, 0]))
    got = F.binary_cross_entropy(p.double(), _t([1.0, 0.0]))
    np.testing.assert_allclose(got.item(), -np.mean([np.log(0.5), np.log(0.75)]), rtol=1e-14)


@pytest.mark.parametrize("op", ["nll_loss", "cross_entropy"])
def test_class_index_target_must_be_int64(op):
    fn = getattr(F, op)
    logits = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
    x = _t(logits)
    cases = [(tgrad.tensor([1.7, 0.2]), "Float"), (_t([1.0, 0.0]), "Double"),
             (tgrad.tensor([1, 0], dtype=tgrad.int32), "Int"),
             (tgrad.tensor([True, False]), "Bool")]
    for target, name in cases:
        with pytest.raises(RuntimeError, match=rf"^{op}: expected target dtype to be Long or "
                           rf"Byte, but got {name}"):
            fn(x, target)
        with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
            fn(x[0], target[0])  # a 1-D input and a 0-d target
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                       "Int"):
        fn(tgrad.zeros(2, 3, 4), tgrad.zeros(2, 4, dtype=tgrad.int32))
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    got = fn(x if op == "cross_entropy" else _t(logp), _long([1, 0]))
    np.testing.assert_allclose(got.item(), -(logp[0, 1] + logp[1, 0]) / 2, rtol=1e-14)


def test_cross_entropy_target_of_input_shape_is_probabilities():
    logits = np.array([[1.0, 2.0], [0.5, -1.0]])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    q = np.array([[0.25, 0.75], [1.0, 0.0]])
    np.testing.assert_allclose(F.cross_entropy(_t(logits), _t(q)).item(),
                               -(q * logp).sum(1).mean(), rtol=1e-14)
    for target, name in ((_long([[1, 0], [0, 1]]), "Long"),
                         (tgrad.tensor([[1, 0], [0, 1]], dtype=tgrad.int32), "Int")):
        with pytest.raises(RuntimeError, match=rf"^cross_entropy: Expected floating point type "
                           rf"for target with class probabilities, got {name}"):
            F.cross_entropy(_t(logits), target)


# --------------------------------------------------- softsign / tanhshrink of integers
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_softsign_tanhshrink_integer_input_gives_default_float(dtype):
    v = np.array([1, -2, 3, 0])
    x = tgrad.tensor(v, dtype=getattr(tgrad, dtype))
    got = F.softsign(x)
    assert got.dtype is tgrad.float32
    np.testing.assert_allclose(got.numpy(), v / (1 + np.abs(v)), rtol=1e-6)
    got = F.tanhshrink(x)
    assert got.dtype is tgrad.float32
    np.testing.assert_allclose(got.numpy(), v - np.tanh(v), rtol=1e-6, atol=1e-7)
    assert nn.Softsign()(x).dtype is tgrad.float32
    old = tgrad.get_default_dtype()
    tgrad.set_default_dtype(tgrad.float64)
    try:
        np.testing.assert_allclose(F.softsign(x).numpy(), v / (1 + np.abs(v)), rtol=1e-15)
        np.testing.assert_allclose(F.tanhshrink(x).numpy(), v - np.tanh(v), rtol=1e-15)
        assert F.tanhshrink(x).dtype is tgrad.float64
    finally:
        tgrad.set_default_dtype(old)


def test_softsign_tanhshrink_bool_input_raises():
    b = tgrad.tensor([True, False])
    with pytest.raises(NotImplementedError, match="softsign: \"abs_cpu\" not implemented for "
                       "'Bool'"):
        F.softsign(b)
    with pytest.raises(RuntimeError, match=r"tanhshrink: Subtraction, the `-` operator, with a "
                       r"bool tensor is not supported"):
        F.tanhshrink(b)


# ------------------------------------------- integer and complex inputs (PyTorch's dtypes)
def test_integer_inputs_compute_in_the_default_float_dtype():
    """PyTorch's formulas take integer tensors (the float margin / exp / log / eps promote
    them to the default dtype, float32); the values are the float64 references'."""
    rng = np.random.default_rng(5)
    a, b, c = (rng.integers(0, 6, (4, 3)) for _ in range(3))
    y = np.where(rng.random((4, 3)) < 0.5, -1, 1)
    i64 = lambda v: tgrad.tensor(v)  # noqa: E731
    for dt in (tgrad.int64, tgrad.int32, tgrad.int8):
        got = F.margin_ranking_loss(i64(a).to(dt), i64(b).to(dt), i64(y).to(dt),
                                    margin=0.5, reduction="none")
        assert got.dtype is tgrad.float32
        np.testing.assert_allclose(got.numpy(), ref_margin_ranking(a, b, y, 0.5), rtol=1e-6)
        got = F.poisson_nll_loss(i64(a).to(dt), i64(b).to(dt), full=True, reduction="sum")
        assert got.dtype is tgrad.float32
        np.testing.assert_allclose(got.numpy(), ref_poisson(a, b, True, True, 1e-8).sum(),
                                   rtol=1e-6)
        got = F.poisson_nll_loss(i64(a + 1).to(dt), i64(b).to(dt), log_input=False,
                                 reduction="none")
        np.testing.assert_allclose(got.numpy(), ref_poisson(a + 1, b, False, False, 1e-8),
                                   rtol=1e-6)
        got = F.triplet_margin_loss(i64(a).to(dt), i64(b).to(dt), i64(c).to(dt),
                                    reduction="none")
        assert got.dtype is tgrad.float32
        np.testing.assert_allclose(got.numpy(), ref_triplet(a, b, c, 1.0, 2, 1e-6, False),
                                   rtol=1e-6)
    # uint8 wraps as PyTorch's: -1 * 1 in uint8 is 255, so max(0, 255 * (1 - 0)) = 255
    u8 = tgrad.tensor([1, 2], dtype=tgrad.uint8)
    got = F.margin_ranking_loss(u8, u8 * 0, u8, reduction="none")
    np.testing.assert_array_equal(got.numpy(), [255.0, 252.0])
    # an integer target with a float64 input: float64, the target not rounded
    got = F.poisson_nll_loss(_t(a), i64(b), reduction="none")
    assert got.dtype is tgrad.float64
    _close(got, ref_poisson(a, b, True, False, 1e-8))
    b_ = tgrad.tensor([True, False])
    with pytest.raises(RuntimeError, match="bool"):
        F.margin_ranking_loss(b_, b_, b_)


def test_complex_inputs_follow_pytorch_formulas():
    """soft_margin_loss: log(1 + exp(-y x)); poisson_nll_loss: exp(x) - t x or
    x - t log(x + eps) (complex results); triplet_margin_loss: real distances of complex
    differences. Gradients (PyTorch's convention) by gradcheck."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    p = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    n = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    y = _signs(rng, (3, 4))
    t = rng.uniform(0.5, 3.0, (3, 4))
    cx = lambda v, **kw: tgrad.tensor(v, dtype=tgrad.complex128, **kw)  # noqa: E731
    for red in REDUCTIONS:
        got = F.soft_margin_loss(cx(x), _t(y), reduction=red)
        assert got.dtype is tgrad.complex128
        np.testing.assert_allclose(got.numpy(), _red(np.log1p(np.exp(-y * x)), red),
                                   rtol=1e-12)
        for log_input in (True, False):
            got = F.poisson_nll_loss(cx(x), _t(t), log_input=log_input, reduction=red)
            assert got.dtype is tgrad.complex128
            want = np.exp(x) - t * x if log_input else x - t * np.log(x + 1e-8)
            np.testing.assert_allclose(got.numpy(), _red(want, red), rtol=1e-12)
        got = F.triplet_margin_loss(cx(x), cx(p), cx(n), swap=True, reduction=red)
        assert got.dtype is tgrad.float64
        np.testing.assert_allclose(got.numpy(),
                                   _red(ref_triplet(x, p, n, 1.0, 2, 1e-6, True), red),
                                   rtol=1e-12)
    got = F.triplet_margin_loss(cx(x), cx(p), cx(n), reduction="none").numpy()
    assert got.dtype == np.float64
    xg = cx(x, requires_grad=True)
    assert gradcheck(lambda v: F.poisson_nll_loss(v, _t(t)), (xg,))
    assert gradcheck(lambda v: F.poisson_nll_loss(v, _t(t), log_input=False), (xg,))
    assert gradcheck(lambda v: F.triplet_margin_loss(v, cx(p), cx(n), reduction="sum"), (xg,))
    with pytest.raises(NotImplementedError, match="poisson_nll_loss.*full"):
        F.poisson_nll_loss(cx(x), _t(t), full=True)
    with pytest.raises(RuntimeError, match="margin_ranking_loss"):
        F.margin_ranking_loss(cx(x), cx(x), _t(y))


def test_complex_target_of_real_input_keeps_its_imaginary_part():
    # PyTorch's arithmetic: a real input with a complex target gives a complex loss (tgrad
    # cast the target to the input's dtype, dropping its imaginary part with a warning);
    # the real input's gradient is real (the engine takes the real part)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4))
    t = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    ct = tgrad.tensor(t, dtype=tgrad.complex128)
    got = F.poisson_nll_loss(_t(x), ct)
    assert got.dtype is tgrad.complex128
    np.testing.assert_allclose(got.numpy(), np.mean(np.exp(x) - t * x), rtol=1e-12)
    got = F.poisson_nll_loss(_t(np.abs(x) + 0.1), ct, log_input=False, reduction="sum")
    np.testing.assert_allclose(got.numpy(),
                               np.sum(np.abs(x) + 0.1 - t * np.log(np.abs(x) + 0.1 + 1e-8)),
                               rtol=1e-12)
    # multilabel_soft_margin_loss: -mean_C(t log sigmoid(x) + (1 - t) log sigmoid(-x))
    got = F.multilabel_soft_margin_loss(_t(x), ct, reduction="none")
    ls = -np.logaddexp(0.0, -x)
    want = -np.mean(t * ls + (1 - t) * (ls - x), axis=1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    xg = _t(x, requires_grad=True)
    (F.poisson_nll_loss(xg, ct) * (0.5 - 2j)).real.backward()
    assert xg.grad.dtype is tgrad.float64  # d/dx Re((0.5 - 2j) mean(e^x - t x))
    np.testing.assert_allclose(xg.grad.numpy(), ((0.5 - 2j) * (np.exp(x) - t)).real / x.size,
                               rtol=1e-12)
    for a, b in ((_t(x), ct), (ct, _t(x))):
        with pytest.raises(RuntimeError, match="kl_div: Complex inputs not supported"):
            F.kl_div(a, b)
    # binary_cross_entropy_with_logits: (1 - t) x + softplus(-x), complex (PyTorch's
    # forward; its autograd refuses complex, tgrad's gives the real input a real gradient)
    xg = _t(3 * x, requires_grad=True)
    got = F.binary_cross_entropy_with_logits(xg, ct, reduction="none")
    assert got.dtype is tgrad.complex128
    np.testing.assert_allclose(got.detach().numpy(), (1 - t) * 3 * x + np.logaddexp(0, -3 * x),
                               rtol=1e-12)
    (got * tgrad.tensor(t)).real.sum().backward()  # d/dx Re(t ((1 - t) + sigmoid(x) - 1))
    sig = 1 / (1 + np.exp(-3 * x))
    np.testing.assert_allclose(xg.grad.numpy(), (t * (sig - t)).real, rtol=1e-12)
    with pytest.raises(RuntimeError, match="binary_cross_entropy_with_logits: result type "
                                           "ComplexDouble can't be cast .* Double"):
        F.binary_cross_entropy_with_logits(_t(x), ct, pos_weight=_t(np.ones(4)))
    with pytest.raises(RuntimeError, match="soft_margin_loss: result type ComplexDouble "
                                           "can't be cast to the desired output type Double"):
        F.soft_margin_loss(_t(x), ct)


def test_hinge_embedding_loss_integer_input_as_pytorch():
    # PyTorch computes margin - x in the integer input's dtype (margin converted to it,
    # truncated): 'none'/'sum' are integers, 'mean' raises mean()'s dtype error
    x = tgrad.tensor([1, 0, 3, 1])
    y = tgrad.tensor([1, -1, -1, 1])
    out = F.hinge_embedding_loss(x, y, margin=2, reduction="none")
    assert out.dtype is tgrad.int64
    assert out.tolist() == [1, 2, 0, 1]  # x, max(0, 2 - 0), max(0, 2 - 3), x
    s = F.hinge_embedding_loss(x, y, margin=2, reduction="sum")
    assert s.dtype is tgrad.int64 and s.item() == 4
    # margin 1.5 truncates to 1; a float target only selects
    assert F.hinge_embedding_loss(x, y.float(), margin=1.5, reduction="none").tolist() == \
        [1, 1, 0, 1]
    # uint8: 2 - 3 wraps to 255 (two's complement), max(0, 255) keeps it
    u = F.hinge_embedding_loss(x.to(tgrad.uint8), y, margin=2, reduction="none")
    assert u.dtype is tgrad.uint8 and u.tolist() == [1, 2, 255, 1]
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype"):
        F.hinge_embedding_loss(x, y, margin=2)
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8"):
        F.hinge_embedding_loss(x.to(tgrad.uint8), y, margin=300, reduction="none")
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool"):
        F.hinge_embedding_loss(tgrad.tensor([True, False]), tgrad.tensor([1, -1]),
                               reduction="none")


@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_fused_losses_read_a_bool_operand_as_the_promoted_float(name, reduction):
    # PyTorch's fused kernels (TensorIterator) promote a bool operand: the loss of (x, mask)
    # is the loss of (x, mask as 0/1 floats); hand values, d = x - t, beta = delta = 1
    x = np.array([0.5, 1.0, -1.0, 2.5])
    m = np.array([True, False, True, False])
    d = x - m
    elem = {"mse_loss": d * d,
            "smooth_l1_loss": np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5),
            "huber_loss": np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5)}[name]
    want = {"none": elem, "mean": elem.mean(), "sum": elem.sum()}[reduction]
    fn = getattr(F, name)
    xt = tgrad.tensor(x, dtype=tgrad.float64, requires_grad=True)
    got = fn(xt, tgrad.tensor(m), reduction=reduction)
    assert got.dtype == tgrad.float64
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-12)
    got.sum().backward()
    dl = {"mse_loss": 2 * d}.get(name, np.clip(d, -1, 1))  # dl/dd
    scale = 1 / x.size if reduction == "mean" else 1.0
    np.testing.assert_allclose(xt.grad.numpy(), dl * scale, rtol=1e-12)
    x32 = tgrad.tensor(x, dtype=tgrad.float32)
    if name != "huber_loss":  # a bool input and a float target: a float32 result too
        r = fn(tgrad.tensor(m), x32, reduction=reduction)
        assert r.dtype == tgrad.float32
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)
    else:  # huber_loss writes into the input's dtype: PyTorch's cast error
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                               "desired output type Bool"):
            fn(tgrad.tensor(m), x32, reduction=reduction)
        with pytest.raises(RuntimeError, match="result type Long can't be cast to the "
                                               "desired output type Bool"):
            fn(tgrad.tensor(m), tgrad.tensor([1, 2, 3, 4]), reduction=reduction)
    kernel = {"mse_loss": "mse_cpu"}.get(name, name.replace("_loss", "_cpu"))
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
        fn(tgrad.tensor(m), tgrad.tensor(m), reduction=reduction)


def test_l1_loss_refuses_bool_operands_as_pytorch():
    # PyTorch's l1_loss is a composition whose subtraction refuses bools
    # (so is smooth_l1_loss's with beta 0, l1_loss's composition), a half operand included
    m, x = tgrad.tensor([True, False]), tgrad.tensor([0.5, 1.0])
    for a, b in ((x, m), (m, x), (m, m), (x.half(), m), (m, x.bfloat16())):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with "):
            F.l1_loss(a, b)
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with "):
            F.smooth_l1_loss(a, b, beta=0.0)


def test_negative_label_smoothing_is_no_smoothing():
    # PyTorch smooths only above 0: a negative value gives the plain loss (tgrad smoothed
    # with it). Reference: NumPy float64 mean of -log_softmax at the targets.
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 4))
    t = np.array([0, 1, 2])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    want = -logp[np.arange(3), t].mean()
    for ls in (-0.1, -0.5, 0.0):
        got = tgrad.nn.functional.cross_entropy(tgrad.tensor(x), tgrad.tensor(t),
                                                label_smoothing=ls)
        np.testing.assert_allclose(got.item(), want, rtol=1e-14)


def test_multi_margin_loss_of_a_1d_input_keeps_the_target_dims():
    x = tgrad.tensor([0.1, 0.9, -0.3, 0.4], dtype=tgrad.float64)
    f = tgrad.nn.functional.multi_margin_loss
    # PyTorch: the loss has the target's shape, (1,) for a (1,) target, () for a 0-d one
    want = np.maximum(0.0, 1 - 0.9 + np.array([0.1, -0.3, 0.4])).sum() / 4
    r = f(x, tgrad.tensor([1]), reduction="none")
    assert r.shape == (1,) and abs(r.item() - want) < 1e-15
    assert f(x, tgrad.tensor(1), reduction="none").shape == ()
    assert f(x, tgrad.tensor([1]), reduction="sum").shape == ()


def test_loss_warnings_point_at_the_callers_line():
    # PyTorch's warnings name the user's line; a fixed stacklevel named autocast_policy's
    # wrapper (tgrad/_autocast.py) instead
    x = tgrad.zeros(2, 3)
    for call in (lambda: F.kl_div(x, x), lambda: F.mse_loss(x, tgrad.zeros(3)),
                 lambda: F.l1_loss(x, tgrad.zeros(3))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        assert caught and all(w.filename == __file__ for w in caught), \
            [(w.filename, w.lineno) for w in caught]
