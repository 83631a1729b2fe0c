"""ContinuousBernoulli and the ExponentialFamily base class (entropy and the KL fallback
through the Bregman divergence of the log normaliser): densities against a hand-written
NumPy float64 formula, normalisation, moments, entropy and KL by quadrature, seeded sample
means (5 standard errors), rsample gradients by gradcheck in float64, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck
from tgrad.distributions.kl import _kl_expfamily_expfamily

F64 = tgrad.float64
GRID = np.linspace(0.0, 1.0, 400001)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().numpy()


def _quad(fx, x=GRID):
    return float(np.trapezoid(fx, x))


def _cb_log_pdf(x, lam):
    """log C(lam) + x log lam + (1 - x) log(1 - lam), C(lam) = 2 atanh(1 - 2 lam) /
    (1 - 2 lam) (2 at lam = 1/2)."""
    c = 2.0 if lam == 0.5 else 2 * np.arctanh(1 - 2 * lam) / (1 - 2 * lam)
    return math.log(c) + x * math.log(lam) + (1 - x) * math.log1p(-lam)


@pytest.mark.parametrize("lam", [0.03, 0.2, 0.4999, 0.5, 0.5008, 0.9])
def test_continuous_bernoulli_density_moments_entropy_cdf(lam):
    d = D.ContinuousBernoulli(probs=_t(lam))
    x = np.array([0.0, 0.1, 0.5, 0.77, 1.0])
    # inside lims (0.499, 0.501) the normaliser is a Taylor series (error ~ d^3, d ~ 1e-6)
    np.testing.assert_allclose(_np(d.log_prob(_t(x))), _cb_log_pdf(x, lam), rtol=1e-12,
                               atol=1e-12)
    p = np.exp(_cb_log_pdf(GRID, lam))
    assert abs(_quad(p) - 1) < 1e-10
    mean = _quad(GRID * p)
    np.testing.assert_allclose(d.mean.item(), mean, rtol=1e-9)
    np.testing.assert_allclose(d.variance.item(), _quad((GRID - mean) ** 2 * p), rtol=1e-8)
    np.testing.assert_allclose(d.entropy().item(), -_quad(p * _cb_log_pdf(GRID, lam)),
                               rtol=1e-8, atol=1e-11)
    # within lims (0.499, 0.501) the cdf is x itself (PyTorch's): off by < 2 |lam - 1/2|
    near_half = 0.499 < lam <= 0.501
    for v in (0.25, 0.6):
        sub = np.linspace(0.0, v, 200001)
        np.testing.assert_allclose(d.cdf(_t(v)).item(),
                                   _quad(np.exp(_cb_log_pdf(sub, lam)), sub),
                                   rtol=0 if near_half else 1e-9,
                                   atol=2 * abs(lam - 0.5) if near_half else 0)
    u = _t([0.01, 0.3, 0.5, 0.99])
    np.testing.assert_allclose(_np(d.cdf(d.icdf(u))), _np(u), rtol=1e-10)
    # ExponentialFamily's generic entropy (Bregman) agrees with the closed form
    np.testing.assert_allclose(D.ExponentialFamily.entropy(d).item(), d.entropy().item(),
                               rtol=1e-8, atol=1e-10)


def test_continuous_bernoulli_logits_sampling_and_gradients():
    d = D.ContinuousBernoulli(logits=_t([-2.0, 0.0, 1.5]))
    lam = 1 / (1 + np.exp(-np.array([-2.0, 0.0, 1.5])))
    np.testing.assert_allclose(_np(d.probs), lam, rtol=1e-14)
    assert d.batch_shape == (3,) and d.event_shape == () and d.has_rsample
    tgrad.manual_seed(0)
    n = 20000
    draws = _np(d.sample((n,)))
    assert ((draws >= 0) & (draws <= 1)).all()
    se = np.sqrt(_np(d.variance) / n)
    assert (np.abs(draws.mean(0) - _np(d.mean)) < 5 * se).all()

    def draw(logits):
        tgrad.manual_seed(1)
        return D.ContinuousBernoulli(logits=logits).rsample((3,))
    assert gradcheck(draw, (_t([-2.0, 0.7, 3.0], requires_grad=True),))
    assert gradcheck(lambda pr: D.ContinuousBernoulli(probs=pr).log_prob(_t([0.2, 0.9])),
                     (_t([0.3, 0.8], requires_grad=True),))
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and tuple(e.sample().shape) == (2, 3)
    np.testing.assert_allclose(_np(e.mean)[1], _np(d.mean), rtol=1e-15)


def test_continuous_bernoulli_validation():
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(probs=1.5)
    clamped = D.ContinuousBernoulli(probs=_t(1.5), validate_args=False)
    assert clamped.probs.item() == 1 - np.finfo(np.float64).eps
    with pytest.raises(ValueError, match="Either `probs` or `logits`"):
        D.ContinuousBernoulli(probs=0.3, logits=0.1)
    with pytest.raises(ValueError, match="to be within the support"):
        D.ContinuousBernoulli(probs=0.3).log_prob(_t(1.2))


def _kl_quad(log_p, log_q, x=GRID):
    return _quad(np.exp(log_p) * (log_p - log_q), x)


def test_continuous_bernoulli_kl_pairs():
    lp, lq = 0.3, 0.85
    p, q = D.ContinuousBernoulli(_t(lp)), D.ContinuousBernoulli(_t(lq))
    np.testing.assert_allclose(D.kl_divergence(p, q).item(),
                               _kl_quad(_cb_log_pdf(GRID, lp), _cb_log_pdf(GRID, lq)), rtol=1e-8)
    # the Bregman fallback gives the same number as the closed form
    np.testing.assert_allclose(_kl_expfamily_expfamily(p, q).item(),
                               D.kl_divergence(p, q).item(), rtol=1e-10)
    inner = GRID[1:-1]
    a, b = 2.0, 3.0
    log_beta = ((a - 1) * np.log(inner) + (b - 1) * np.log1p(-inner)
                - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    np.testing.assert_allclose(D.kl_divergence(D.Beta(_t(a), _t(b)), q).item(),
                               _kl_quad(log_beta, _cb_log_pdf(inner, lq), inner), rtol=1e-7)
    sub = np.linspace(0.2, 0.7, 200001)
    np.testing.assert_allclose(D.kl_divergence(D.Uniform(_t(0.2), _t(0.7)), q).item(),
                               _kl_quad(np.full_like(sub, -math.log(0.5)),
                                        _cb_log_pdf(sub, lq), sub), rtol=1e-8)
    rate = 1.7
    np.testing.assert_allclose(D.kl_divergence(p, D.Exponential(_t(rate))).item(),
                               _kl_quad(_cb_log_pdf(GRID, lp), math.log(rate) - rate * GRID),
                               rtol=1e-8)
    m, s = 0.4, 0.6
    log_n = -0.5 * ((GRID - m) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
    np.testing.assert_allclose(D.kl_divergence(p, D.Normal(_t(m), _t(s))).item(),
                               _kl_quad(_cb_log_pdf(GRID, lp), log_n), rtol=1e-8)
    np.testing.assert_allclose(D.kl_divergence(p, D.Uniform(_t(-1.0), _t(2.0))).item(),
                               _kl_quad(_cb_log_pdf(GRID, lp), -math.log(3.0)), rtol=1e-8)
    # an interval sharing an end with [0, 1] is fine; a shorter one is not
    np.testing.assert_allclose(D.kl_divergence(p, D.Uniform(_t(0.0), _t(1.0))).item(),
                               -p.entropy().item(), rtol=1e-12)
    assert D.kl_divergence(p, D.Uniform(_t(0.1), _t(2.0))).item() == math.inf
    assert D.kl_divergence(D.Uniform(_t(-0.5), _t(0.5)), q).item() == math.inf
    for other in (D.Normal(_t(0.0), _t(1.0)), D.Exponential(_t(1.0)), D.Gamma(_t(2.0), _t(1.0)),
                  D.Laplace(_t(0.0), _t(1.0)), D.Gumbel(_t(0.0), _t(1.0)),
                  D.Pareto(_t(1.0), _t(2.0))):
        assert D.kl_divergence(other, q).item() == math.inf
    assert D.kl_divergence(p, D.Pareto(_t(1.0), _t(2.0))).item() == math.inf


def test_exponential_family_members_and_bregman_kl():
    assert all(issubclass(c, D.ExponentialFamily) for c in
               (D.Bernoulli, D.Beta, D.ContinuousBernoulli, D.Dirichlet, D.Exponential,
                D.Gamma, D.Chi2, D.Normal, D.Poisson))
    # entropy by Bregman vs the textbook closed forms
    m, s = 0.3, 1.7
    np.testing.assert_allclose(D.ExponentialFamily.entropy(D.Normal(_t(m), _t(s))).item(),
                               0.5 * math.log(2 * math.pi * math.e * s * s), rtol=1e-12)
    r = 2.5
    np.testing.assert_allclose(D.ExponentialFamily.entropy(D.Exponential(_t(r))).item(),
                               1 - math.log(r), rtol=1e-12)
    pb = 0.3
    np.testing.assert_allclose(D.ExponentialFamily.entropy(D.Bernoulli(_t(pb))).item(),
                               -pb * math.log(pb) - (1 - pb) * math.log(1 - pb), rtol=1e-12)
    # the KL fallback vs textbook closed forms
    kl = _kl_expfamily_expfamily(D.Normal(_t(m), _t(s)), D.Normal(_t(-1.0), _t(0.5)))
    np.testing.assert_allclose(kl.item(), math.log(0.5 / s) + (s * s + (m + 1) ** 2) / 0.5 - 0.5,
                               rtol=1e-12)
    kl = _kl_expfamily_expfamily(D.Poisson(_t(2.0)), D.Poisson(_t(3.5)))
    np.testing.assert_allclose(kl.item(), 2.0 * math.log(2.0 / 3.5) - 2.0 + 3.5, rtol=1e-12)
    kl = _kl_expfamily_expfamily(D.Bernoulli(_t(0.3)), D.Bernoulli(_t(0.6)))
    np.testing.assert_allclose(kl.item(), 0.3 * math.log(0.5) + 0.7 * math.log(0.7 / 0.4),
                               rtol=1e-12)
    # a vector family: Dirichlet's sum over the event dim (vs a Beta, its K = 2 case,
    # through the Beta's own Bregman divergence)
    kl_dir = _kl_expfamily_expfamily(D.Dirichlet(_t([2.0, 3.0])), D.Dirichlet(_t([1.5, 4.0])))
    inner = GRID[1:-1]

    def log_beta(a, b):
        return ((a - 1) * np.log(inner) + (b - 1) * np.log1p(-inner)
                - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    np.testing.assert_allclose(kl_dir.item(), _kl_quad(log_beta(2.0, 3.0), log_beta(1.5, 4.0),
                                                       inner), rtol=1e-7)
    with pytest.raises(NotImplementedError, match="different exponential families"):
        D.kl_divergence(D.Normal(_t(0.0), _t(1.0)), D.Bernoulli(_t(0.5)))
    # its gradient flows to q's parameters (p's are detached, as PyTorch)
    q_loc = _t(-1.0, requires_grad=True)
    assert gradcheck(lambda ql: _kl_expfamily_expfamily(D.Normal(_t(m), _t(s)),
                                                        D.Normal(ql, _t(0.5))), (q_loc,))
