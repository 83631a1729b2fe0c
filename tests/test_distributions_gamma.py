"""Gamma, Chi2, Beta and Dirichlet: densities, moments, entropies and cdfs against NumPy
float64 formulas (math.lgamma, the Poisson sum for integer shapes); seeded sample moments;
the implicit reparameterisation gradient: dP/da against finite differences of igamma, and
the gradients of expectations (E[dx/da] = d E[x] / da) against their closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck
from tgrad.distributions.gamma import _dp_da

F64 = tgrad.float64
X = np.array([0.3, 1.0, 2.5, 6.0])


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _close(got, want, rtol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=1e-14)


def _digamma(v: float) -> float:
    h = 1e-6  # the derivative of math.lgamma (central difference)
    return (math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h)


def test_gamma_and_chi2_closed_forms():
    a, b = 2.5, 1.5
    d = D.Gamma(_t(a), _t(b))
    _close(d.log_prob(_t(X)), a * np.log(b) + (a - 1) * np.log(X) - b * X - math.lgamma(a))
    _close(d.mean, a / b)
    _close(d.variance, a / b ** 2)
    _close(d.mode, (a - 1) / b)
    _close(d.entropy(), a - np.log(b) + math.lgamma(a) + (1 - a) * _digamma(a), rtol=1e-8)
    n = 3  # integer shape: P(n, y) = 1 - e^-y sum_{k<n} y^k / k!
    y = X * b
    want = 1 - np.exp(-y) * sum(y ** k / math.factorial(k) for k in range(n))
    _close(D.Gamma(_t(float(n)), _t(b)).cdf(_t(X)), want, rtol=1e-12)
    c = D.Chi2(_t(4.0))
    _close(c.log_prob(_t(X)), np.log(X / 4) - X / 2)  # chi2 with 4 dof: x e^(-x/2) / 4
    _close(c.df, 4.0)


def test_gamma_sampling_and_reparameterised_gradient():
    for a in (0.4, 2.5, 30.0):  # both sampler branches, small and large shapes
        conc = _t(a, requires_grad=True)
        rate = _t(2.0, requires_grad=True)
        tgrad.manual_seed(int(a * 10))
        x = D.Gamma(conc, rate).rsample((40000,))
        v = x.detach().numpy()
        assert (v > 0).all()
        assert abs(v.mean() - a / 2) < 4 * math.sqrt(a) / 2 / math.sqrt(40000)
        x.mean().backward()  # d E[x] / da = 1 / rate, d E[x] / d rate = -a / rate^2
        assert abs(conc.grad.item() - 0.5) < 0.02
        np.testing.assert_allclose(rate.grad.item(), -v.mean() / 2.0, rtol=1e-10)
    for a, x in [(0.5, 0.3), (2.0, 1.0), (2.0, 5.0), (7.5, 12.0), (30.0, 30.0)]:
        h = 1e-6 * a
        fd = (tgrad.igamma(_t(a + h), _t(x)).item() - tgrad.igamma(_t(a - h), _t(x)).item()) \
            / (2 * h)
        np.testing.assert_allclose(_dp_da(_t([a]), _t([x])).item(), fd, rtol=1e-6)



@pytest.mark.parametrize("a,x", [(3000.0, 2900.0), (5000.0, 5200.0), (20000.0, 20020.0),
                                 (1e5, 1e5 - 100.0), (1e6, 1e6 + 1000.0), (30.0, 30.0),
                                 (3000.0, 3000.0)])
def test_reparameterised_gradient_at_large_concentrations(a, x):
    """dP/da where gammainc uses Temme's expansion (a > 20, x/a in [0.3, 2.2]; the 300-term
    loops were ~10% off at a = 20000): against a 4th-order central difference of gammainc
    in a (its truncation ~(h/sqrt(a))^4, rounding ~1e-13 relative), and finite at x = a."""
    h = 1e-3 * math.sqrt(a)

    def p_at(v):
        return tgrad.igamma(_t(v), _t(x)).item()
    fd = (-p_at(a + 2 * h) + 8 * p_at(a + h) - 8 * p_at(a - h) + p_at(a - 2 * h)) / (12 * h)
    np.testing.assert_allclose(_dp_da(_t([a]), _t([x])).item(), fd, rtol=1e-8)


@pytest.mark.parametrize("dtype,a", [("float64", 5000.0), ("float32", 1e5),
                                     ("float32", 1e6)])
def test_reparameterised_gradient_mean_is_one_at_large_concentration(dtype, a):
    """E[x] = a for x ~ Gamma(a, 1), so the mean of dx/da over draws is 1 (each draw's
    dx/da ~ 1 + z / (2 sqrt(a)): the mean of 4000 is 1 within ~4e-4 at a = 5000). float32
    too: the backward runs in float64 (in float32, log p(x; a) lost its value: 1.7 at 1e6)."""
    conc = tgrad.full((4000,), a, dtype=getattr(tgrad, dtype), requires_grad=True)
    tgrad.manual_seed(7)
    D.Gamma(conc, 1.0).rsample().sum().backward()
    assert conc.grad.dtype is conc.dtype
    assert abs(conc.grad.numpy().astype(np.float64).mean() - 1.0) < 2e-3

def test_beta_and_dirichlet():
    a, b = 2.0, 3.0
    d = D.Beta(_t(a), _t(b))
    u = np.array([0.1, 0.4, 0.9])
    lbeta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    _close(d.log_prob(_t(u)), (a - 1) * np.log(u) + (b - 1) * np.log1p(-u) - lbeta)
    _close(d.mean, a / (a + b))
    _close(d.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    _close(d.entropy(), lbeta - (a - 1) * _digamma(a) - (b - 1) * _digamma(b)
           + (a + b - 2) * _digamma(a + b), rtol=1e-7)
    ca, cb = _t(a, requires_grad=True), _t(b, requires_grad=True)
    tgrad.manual_seed(1)
    draws = D.Beta(ca, cb).rsample((40000,))
    assert abs(draws.detach().numpy().mean() - 0.4) < 0.005
    draws.mean().backward()  # d E[x]/da = b / (a + b)^2, d E[x]/db = -a / (a + b)^2
    assert abs(ca.grad.item() - b / 25) < 0.005 and abs(cb.grad.item() + a / 25) < 0.005
    alpha = np.array([1.0, 2.0, 3.0])
    dd = D.Dirichlet(_t(alpha))
    assert dd.batch_shape == () and dd.event_shape == (3,)
    p = np.array([0.2, 0.3, 0.5])
    _close(dd.log_prob(_t(p)), ((alpha - 1) * np.log(p)).sum() + math.lgamma(6.0)
           - sum(math.lgamma(v) for v in alpha))
    _close(dd.mean, alpha / 6)
    _close(dd.variance, alpha * (6 - alpha) / (36 * 7))
    c = _t(alpha, requires_grad=True)
    tgrad.manual_seed(2)
    y = D.Dirichlet(c).rsample((40000,))
    np.testing.assert_allclose(y.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    y[:, 0].mean().backward()  # d E[x_0] / d alpha = ((a0 - a_0), -a_0, -a_0) / a0^2
    np.testing.assert_allclose(c.grad.numpy(), np.array([5.0, -1.0, -1.0]) / 36, atol=0.005)
    assert gradcheck(lambda t: D.Dirichlet(t).log_prob(_t(p)), (c,))
    with pytest.raises(ValueError, match="at least one-dimensional"):
        D.Dirichlet(_t(1.0))


def test_modes_with_concentrations_below_one():
    # Beta: (a-1)/(a+b-2) for a, b > 1; 1 or 0 when one concentration is below 1; both below
    # 1: the first vertex (PyTorch's choice); Dirichlet likewise over its K entries
    _close(D.Beta(_t([2.0, 0.5, 0.5, 3.0]), _t([0.5, 0.5, 3.0, 2.0])).mode,
           [1.0, 1.0, 0.0, 2.0 / 3.0])
    _close(D.Dirichlet(_t([[0.5, 0.5, 0.2], [2.0, 3.0, 0.5]])).mode,
           [[1.0, 0.0, 0.0], [1.0 / 3.0, 2.0 / 3.0, 0.0]])


def test_log_prob_at_the_support_boundary_is_finite_where_the_density_is():
    # (a - 1) log x with a = 1 at x = 0 is 0 (xlogy), not 0 * -inf
    _close(D.Gamma(_t([1.0, 2.0]), _t([1.5, 1.0])).log_prob(_t([0.0, 0.0])),
           [math.log(1.5), -np.inf])
    _close(D.Chi2(_t([2.0])).log_prob(_t([0.0])), [-math.log(2.0)])
    _close(D.Beta(_t([1.0, 1.0]), _t([1.0, 3.0])).log_prob(_t([0.0, 0.0])),
           [0.0, math.log(3.0)])
    _close(D.Beta(_t([2.0]), _t([1.0])).log_prob(_t([1.0])), [math.log(2.0)])
    _close(D.Dirichlet(_t([1.0, 2.0])).log_prob(_t([0.0, 1.0])), math.log(2.0))


def test_chi2_expand():
    d = D.Chi2(_t([2.0, 3.0])).expand((4, 2))
    assert d.batch_shape == (4, 2) and d.sample().shape == (4, 2)
    _close(d.mean, np.broadcast_to([2.0, 3.0], (4, 2)))
    _close(d.df, np.broadcast_to([2.0, 3.0], (4, 2)))
    _close(d.log_prob(_t([1.0, 2.0])), np.broadcast_to(
        D.Chi2(_t([2.0, 3.0])).log_prob(_t([1.0, 2.0])).numpy(), (4, 2)))
