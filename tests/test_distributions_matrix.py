"""LKJCholesky and Wishart: log_prob against hand-written NumPy float64 densities (their
normalising constants from math.lgamma and closed-form integrals), entropy and KL against
closed forms with a NumPy digamma (recurrence + asymptotic series), seeded sample moments
(5 standard errors), rsample gradients by gradcheck in float64, shapes and validation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck

F64 = tgrad.float64
SIGMAS = 5.0


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().numpy()


def _digamma(x: float) -> float:
    """psi(x) for x > 0: psi(x) = psi(x + 1) - 1 / x up to x >= 10, then the asymptotic
    series ln x - 1/(2x) - sum B_2k / (2k x^2k)."""
    acc = 0.0
    while x < 10:
        acc -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240
                                                                          - inv2 / 132))))
    return acc + math.log(x) - 0.5 / x - series


def _mvlgamma(a: float, p: int) -> float:
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - i / 2) for i in range(p))


def _mvdigamma(a: float, p: int) -> float:
    return sum(_digamma(a - i / 2) for i in range(p))


def test_numpy_digamma_helper():
    assert abs(_digamma(1.0) + 0.5772156649015329) < 1e-13
    assert abs(_digamma(0.5) + 0.5772156649015329 + 2 * math.log(2)) < 1e-13


# ------------------------------------------------------------------------------ LKJCholesky
def _chol_2(r):
    return np.array([[1.0, 0.0], [r, math.sqrt(1 - r * r)]])


@pytest.mark.parametrize("eta", [0.7, 1.0, 3.0])
def test_lkj_cholesky_dim2_density(eta):
    # d = 2: L = [[1, 0], [r, sqrt(1 - r^2)]]; p(r) = (1 - r^2)^(eta - 1) / B(1/2, eta)
    d = D.LKJCholesky(2, _t(eta))
    rs = np.array([-0.9, -0.3, 0.0, 0.5, 0.95])
    got = _np(d.log_prob(_t(np.stack([_chol_2(r) for r in rs]))))
    log_b = math.lgamma(0.5) + math.lgamma(eta) - math.lgamma(eta + 0.5)
    np.testing.assert_allclose(got, (eta - 1) * np.log1p(-rs * rs) - log_b, rtol=1e-12,
                               atol=1e-13)
    if eta >= 1:  # a polynomial density in r: Gauss-Legendre integrates it exactly
        nodes, weights = np.polynomial.legendre.leggauss(50)
        lp = _np(d.log_prob(_t(np.stack([_chol_2(r) for r in nodes]))))
        assert abs((weights * np.exp(lp)).sum() - 1) < 1e-12


def test_lkj_cholesky_dim3_density():
    # d = 3: log p = (2 eta - 1) log L_22 + 2 (eta - 1) log L_33 - log Z with
    # Z = int_{-1}^{1} (1 - r^2)^(eta - 1/2) dr * int_disk (1 - rho^2)^(eta - 1) dA
    #   = B(1/2, eta + 1/2) * pi / eta
    eta = 1.7
    d = D.LKJCholesky(3, _t(eta))
    rng = np.random.default_rng(0)
    mats = []
    for _ in range(4):
        r = rng.uniform(-0.9, 0.9)
        v = rng.normal(size=2)
        v *= rng.uniform(0.1, 0.9) / np.linalg.norm(v)
        mats.append([[1, 0, 0], [r, math.sqrt(1 - r * r), 0],
                     [v[0], v[1], math.sqrt(1 - v @ v)]])
    mats = np.array(mats)
    log_z = (math.lgamma(0.5) + math.lgamma(eta + 0.5) - math.lgamma(eta + 1)
             + math.log(math.pi / eta))
    want = ((2 * eta - 1) * np.log(mats[:, 1, 1]) + 2 * (eta - 1) * np.log(mats[:, 2, 2])
            - log_z)
    np.testing.assert_allclose(_np(d.log_prob(_t(mats))), want, rtol=1e-12)


def test_lkj_cholesky_sampling_moments():
    dim, eta, n = 4, 2.0, 4000
    d = D.LKJCholesky(dim, _t(eta))
    tgrad.manual_seed(0)
    chol = d.sample((n,))
    assert tuple(chol.shape) == (n, dim, dim)
    assert bool(D.constraints.corr_cholesky.check(chol).all())
    c = _np(chol) @ np.swapaxes(_np(chol), -1, -2)
    np.testing.assert_allclose(np.diagonal(c, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    # each correlation r_ij: (r + 1) / 2 ~ Beta(b, b), b = eta - 1 + d / 2: mean 0,
    # variance 1 / (2 eta + d - 1); the sample variance's standard error is below
    # var sqrt(2 / n) (a symmetric Beta has negative excess kurtosis)
    var = 1 / (2 * eta + dim - 1)
    rows, cols = np.tril_indices(dim, -1)
    r = c[:, rows, cols]
    assert (np.abs(r.mean(0)) < SIGMAS * math.sqrt(var / n)).all()
    assert (np.abs(r.var(0) - var) < SIGMAS * var * math.sqrt(2 / n)).all()


def test_lkj_cholesky_shapes_and_validation():
    d = D.LKJCholesky(3, _t([0.5, 1.0, 2.0]))
    assert d.batch_shape == (3,) and d.event_shape == (3, 3) and not d.has_rsample
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and tuple(e.sample((5,)).shape) == (5, 2, 3, 3, 3)
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or "
                                         "equal to 2. Found dim=1."):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.LKJCholesky(3, -1.0)
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(_t(np.eye(3) * 2))  # rows not of unit norm


# ---------------------------------------------------------------------------------- Wishart
S = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 1.5]])
P = S.shape[0]


def _wishart_log_pdf(x, nu, sigma):
    return ((nu - P - 1) / 2 * np.linalg.slogdet(x)[1]
            - np.trace(np.linalg.solve(sigma, x), axis1=-2, axis2=-1) / 2
            - nu * P / 2 * math.log(2) - nu / 2 * np.linalg.slogdet(sigma)[1]
            - _mvlgamma(nu / 2, P))


def test_wishart_density_and_parameterisations():
    nu = 5.5
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, P, P))
    x = a @ np.swapaxes(a, -1, -2) + np.eye(P)
    want = _wishart_log_pdf(x, nu, S)
    for kw in ({"covariance_matrix": _t(S)}, {"precision_matrix": _t(np.linalg.inv(S))},
               {"scale_tril": _t(np.linalg.cholesky(S))}):
        w = D.Wishart(_t(nu), **kw)
        np.testing.assert_allclose(_np(w.log_prob(_t(x))), want, rtol=1e-10)
        np.testing.assert_allclose(_np(w.covariance_matrix), S, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(_np(w.precision_matrix), np.linalg.inv(S), rtol=1e-10,
                                   atol=1e-14)
    w = D.Wishart(_t(nu), covariance_matrix=_t(S))
    np.testing.assert_allclose(_np(w.mean), nu * S, rtol=1e-13)
    np.testing.assert_allclose(_np(w.mode), (nu - P - 1) * S, rtol=1e-13)
    np.testing.assert_allclose(_np(w.variance), nu * (S * S + np.outer(np.diag(S), np.diag(S))),
                               rtol=1e-13)
    assert np.isnan(_np(D.Wishart(_t(3.5), covariance_matrix=_t(S)).mode)).all()


def test_wishart_entropy_and_kl_closed_forms():
    nu1, nu2 = 5.5, 7.0
    s2 = np.array([[1.0, 0.2, 0.0], [0.2, 2.0, 0.4], [0.0, 0.4, 1.0]])
    p = D.Wishart(_t(nu1), covariance_matrix=_t(S))
    q = D.Wishart(_t(nu2), covariance_matrix=_t(s2))
    # H = (P + 1) / 2 log det S + P (P + 1) / 2 log 2 + lgamma_P(nu / 2)
    #     - (nu - P - 1) / 2 psi_P(nu / 2) + nu P / 2
    want_h = ((P + 1) / 2 * np.linalg.slogdet(S)[1] + P * (P + 1) / 2 * math.log(2)
              + _mvlgamma(nu1 / 2, P) - (nu1 - P - 1) / 2 * _mvdigamma(nu1 / 2, P)
              + nu1 * P / 2)
    np.testing.assert_allclose(p.entropy().item(), want_h, rtol=1e-12)
    np.testing.assert_allclose(D.ExponentialFamily.entropy(p).item(), want_h, rtol=1e-10)
    # KL through the exponential-family (Bregman) fallback, against the closed form
    # nu1 / 2 (tr(S2^-1 S1) - P) + nu2 / 2 log(det S2 / det S1) + lgamma_P(nu2 / 2)
    # - lgamma_P(nu1 / 2) + (nu1 - nu2) / 2 psi_P(nu1 / 2)
    want_kl = (nu1 / 2 * (np.trace(np.linalg.solve(s2, S)) - P)
               + nu2 / 2 * (np.linalg.slogdet(s2)[1] - np.linalg.slogdet(S)[1])
               + _mvlgamma(nu2 / 2, P) - _mvlgamma(nu1 / 2, P)
               + (nu1 - nu2) / 2 * _mvdigamma(nu1 / 2, P))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), want_kl, rtol=1e-9)


def test_wishart_sampling_and_rsample_gradient():
    nu, n = 6.0, 4000
    w = D.Wishart(_t(nu), covariance_matrix=_t(S))
    tgrad.manual_seed(0)
    x = _np(w.sample((n,)))
    assert x.shape == (n, P, P) and (np.linalg.eigvalsh(x) > 0).all()
    var = nu * (S * S + np.outer(np.diag(S), np.diag(S)))
    assert (np.abs(x.mean(0) - nu * S) < SIGMAS * np.sqrt(var / n)).all()
    # -E[log p] by Monte Carlo: the entropy within 5 standard errors
    lp = _np(w.log_prob(_t(x)))
    assert abs(-lp.mean() - w.entropy().item()) < SIGMAS * lp.std() / math.sqrt(n)

    def draw(tril):
        tgrad.manual_seed(1)
        return D.Wishart(_t([4.0, 6.0]), scale_tril=tril, validate_args=False).rsample((2,))
    tril = np.linalg.cholesky(S)
    assert gradcheck(draw, (_t(tril, requires_grad=True),))


def test_wishart_shapes_and_validation():
    w = D.Wishart(_t([4.0, 5.0]), covariance_matrix=_t(S))
    assert w.batch_shape == (2,) and w.event_shape == (P, P) and w.has_rsample
    e = w.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(e.rsample().shape) == (3, 2, P, P)
    np.testing.assert_allclose(_np(e.mean)[2, 1], 5.0 * S, rtol=1e-13)
    with pytest.raises(ValueError, match=r"Value of df=2.0 expected to be greater than "
                                         r"ndim - 1 = 2."):
        D.Wishart(2.0, covariance_matrix=_t(S))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        D.Wishart(5.0)
    with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
        D.Wishart(5.0, covariance_matrix=_t(-S))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        D.Wishart(2.5, covariance_matrix=_t(S))
    assert any("Low df values detected" in str(c.message) for c in caught)
    with pytest.raises(ValueError, match="to be within the support"):
        w.log_prob(_t(-np.eye(P)))
