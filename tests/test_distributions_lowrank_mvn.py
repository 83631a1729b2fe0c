"""LowRankMultivariateNormal against dense NumPy float64 Gaussians (slogdet, solve,
cholesky, inv of W W^T + diag D): log_prob, entropy, the covariance / precision / scale_tril
views, the KL pairs with itself and MultivariateNormal, seeded sample moments (5 standard
errors), rsample gradients by gradcheck, shapes, expand and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck

F64 = tgrad.float64
RNG = np.random.default_rng(7)
N, M = 4, 2


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().numpy()


def _params(batch=(2,)):
    return (RNG.normal(size=batch + (N,)), RNG.normal(size=batch + (N, M)),
            RNG.uniform(0.5, 2.0, size=batch + (N,)))


def _cov(w, d):
    return w @ np.swapaxes(w, -1, -2) + np.apply_along_axis(np.diag, -1, d)


def _dense_log_prob(x, loc, cov):
    diff = x - loc
    sol = np.linalg.solve(cov, diff[..., None])[..., 0]
    return -0.5 * (N * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1]
                   + (diff * sol).sum(-1))


def _dense_kl(m1, c1, m2, c2):
    c2inv = np.linalg.inv(c2)
    diff = m2 - m1
    return 0.5 * (np.linalg.slogdet(c2)[1] - np.linalg.slogdet(c1)[1]
                  + np.trace(c2inv @ c1, axis1=-2, axis2=-1)
                  + np.einsum("...i,...ij,...j->...", diff, c2inv, diff) - N)


def test_lowrank_mvn_density_entropy_and_matrices():
    loc, w, d = _params()
    dist = D.LowRankMultivariateNormal(_t(loc), _t(w), _t(d))
    assert dist.batch_shape == (2,) and dist.event_shape == (N,)
    cov = _cov(w, d)
    x = RNG.normal(size=(3, 2, N))
    np.testing.assert_allclose(_np(dist.log_prob(_t(x))), _dense_log_prob(x, loc, cov),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(dist.entropy()),
                               0.5 * (N * (1 + math.log(2 * math.pi))
                                      + np.linalg.slogdet(cov)[1]), rtol=1e-12)
    np.testing.assert_allclose(_np(dist.covariance_matrix), cov, rtol=1e-13)
    np.testing.assert_allclose(_np(dist.precision_matrix), np.linalg.inv(cov), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(_np(dist.scale_tril), np.linalg.cholesky(cov), rtol=1e-11,
                               atol=1e-13)
    np.testing.assert_allclose(_np(dist.variance), np.diagonal(cov, axis1=-2, axis2=-1),
                               rtol=1e-13)
    np.testing.assert_array_equal(_np(dist.mean), loc)
    np.testing.assert_array_equal(_np(dist.mode), loc)


def test_lowrank_mvn_kl_pairs():
    (l1, w1, d1), (l2, w2, d2) = _params(), _params()
    p = D.LowRankMultivariateNormal(_t(l1), _t(w1), _t(d1))
    q = D.LowRankMultivariateNormal(_t(l2), _t(w2), _t(d2))
    want = _dense_kl(l1, _cov(w1, d1), l2, _cov(w2, d2))
    np.testing.assert_allclose(_np(D.kl_divergence(p, q)), want, rtol=1e-10)
    p_full = D.MultivariateNormal(_t(l1), covariance_matrix=_t(_cov(w1, d1)))
    q_full = D.MultivariateNormal(_t(l2), scale_tril=_t(np.linalg.cholesky(_cov(w2, d2))))
    np.testing.assert_allclose(_np(D.kl_divergence(p_full, q)), want, rtol=1e-10)
    np.testing.assert_allclose(_np(D.kl_divergence(p, q_full)), want, rtol=1e-10)
    # a q with no batch dims broadcasts against p's batch
    q0 = D.MultivariateNormal(_t(l2[0]), covariance_matrix=_t(_cov(w2, d2)[0]))
    np.testing.assert_allclose(_np(D.kl_divergence(p, q0)),
                               _dense_kl(l1, _cov(w1, d1), l2[0], _cov(w2, d2)[0]), rtol=1e-10)
    other = D.LowRankMultivariateNormal(_t(np.zeros(3)), _t(np.ones((3, 1))), _t(np.ones(3)))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(p, other)


def test_lowrank_mvn_sampling_and_rsample_gradient():
    loc, w, d = _params(())
    dist = D.LowRankMultivariateNormal(_t(loc), _t(w), _t(d))
    tgrad.manual_seed(0)
    n = 20000
    draws = _np(dist.sample((n,)))
    assert draws.shape == (n, N)
    var = np.diag(_cov(w, d))
    assert (np.abs(draws.mean(0) - loc) < 5 * np.sqrt(var / n)).all()
    # the sample variance's standard error is about var sqrt(2 / n) for a Gaussian
    assert (np.abs(draws.var(0) - var) < 5 * var * math.sqrt(2 / n)).all()

    def draw(loc_, w_, d_):
        tgrad.manual_seed(1)
        return D.LowRankMultivariateNormal(loc_, w_, d_).rsample((2,))
    assert gradcheck(draw, (_t(loc, requires_grad=True), _t(w, requires_grad=True),
                            _t(d, requires_grad=True)))
    x = _t(RNG.normal(size=(3, N)))
    assert gradcheck(lambda w_: D.LowRankMultivariateNormal(_t(loc), w_, _t(d)).log_prob(x),
                     (_t(w, requires_grad=True),))


def test_lowrank_mvn_shapes_expand_and_validation():
    loc, w, d = _params(())
    dist = D.LowRankMultivariateNormal(_t(loc), _t(w), _t(d))
    e = dist.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(e.sample().shape) == (3, 2, N)
    assert tuple(e.cov_factor.shape) == (3, 2, N, M)
    np.testing.assert_allclose(_np(e.log_prob(_t(loc)))[2, 1],
                               _dense_log_prob(loc, loc, _cov(w, d)), rtol=1e-12)
    with pytest.raises(ValueError, match="Expected parameter cov_diag"):
        D.LowRankMultivariateNormal(_t(loc), _t(w), _t(-d))
    with pytest.raises(ValueError, match="loc must be at least one-dimensional"):
        D.LowRankMultivariateNormal(_t(0.0), _t(w), _t(d))
    with pytest.raises(ValueError, match=f"cov_factor must be a batch of matrices with shape "
                                         f"{N} x m"):
        D.LowRankMultivariateNormal(_t(loc), _t(w.T), _t(d))
    with pytest.raises(ValueError, match="cov_diag must be a batch of vectors"):
        D.LowRankMultivariateNormal(_t(loc), _t(w), _t(d[:2]))
    with pytest.raises(ValueError, match="Incompatible batch shapes"):
        D.LowRankMultivariateNormal(_t(np.zeros((2, N))), _t(np.zeros((3, N, M))), _t(d))
    with pytest.raises(ValueError, match="to be within the support"):
        dist.log_prob(_t(np.full(N, np.nan)))
