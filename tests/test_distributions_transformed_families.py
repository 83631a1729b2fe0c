"""InverseGamma, Kumaraswamy, LogisticNormal (TransformedDistribution compositions, as in
torch.distributions) and GeneralizedPareto: log_prob against hand-written NumPy float64
densities, normalisation, moments and entropy by quadrature on a grid, seeded sample
moments (tolerance 5 standard errors), rsample gradients by gradcheck in float64, shapes,
expand and validation errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck

F64 = tgrad.float64
SIGMAS = 5.0  # sample-moment tolerance, in standard errors
N_DRAWS = 20000


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().numpy()


def _log_grid(lo: float, hi: float, n: int = 200001) -> np.ndarray:
    return np.exp(np.linspace(math.log(lo), math.log(hi), n))


def _quad(fx: np.ndarray, x: np.ndarray) -> float:
    return float(np.trapezoid(fx, x))


def _check_sample_mean(draws: np.ndarray, mean: float, var: float) -> None:
    se = math.sqrt(var / draws.size)
    assert abs(draws.mean() - mean) < SIGMAS * se, (draws.mean(), mean, se)


# ----------------------------------------------------------------------------- InverseGamma
def _inverse_gamma_log_pdf(x, a, b):
    return a * math.log(b) - math.lgamma(a) - (a + 1) * np.log(x) - b / x


def test_inverse_gamma_density_moments_entropy():
    a, b = 5.0, 2.0
    d = D.InverseGamma(_t(a), _t(b))
    x = np.array([0.1, 0.4, 1.3, 7.0])
    np.testing.assert_allclose(_np(d.log_prob(_t(x))), _inverse_gamma_log_pdf(x, a, b),
                               rtol=1e-12)
    grid = _log_grid(1e-3, 1e3)
    p = np.exp(_inverse_gamma_log_pdf(grid, a, b))
    assert abs(_quad(p, grid) - 1) < 1e-8
    np.testing.assert_allclose(d.mean.item(), _quad(grid * p, grid), rtol=1e-7)
    np.testing.assert_allclose(d.variance.item(),
                               _quad((grid - b / (a - 1)) ** 2 * p, grid), rtol=1e-6)
    np.testing.assert_allclose(d.entropy().item(),
                               -_quad(p * _inverse_gamma_log_pdf(grid, a, b), grid), rtol=1e-7)
    np.testing.assert_allclose(d.mode.item(), grid[np.argmax(p)], rtol=1e-4)
    # cdf through the decreasing 1/x: 1 - Gamma's cdf at 1/x, against the integral
    low = _log_grid(1e-3, 0.4)
    np.testing.assert_allclose(d.cdf(_t(0.4)).item(),
                               _quad(np.exp(_inverse_gamma_log_pdf(low, a, b)), low), rtol=1e-8)
    heavy = D.InverseGamma(_t([0.5, 1.5, 2.5]), _t(1.0))
    assert _np(heavy.mean)[0] == math.inf and np.isfinite(_np(heavy.mean)[1:]).all()
    assert _np(heavy.variance)[:2].tolist() == [math.inf, math.inf]


def test_inverse_gamma_sampling_and_rsample_gradient():
    a, b = 6.0, 3.0
    d = D.InverseGamma(_t(a), _t(b))
    tgrad.manual_seed(0)
    draws = _np(d.sample((N_DRAWS,)))
    _check_sample_mean(draws, b / (a - 1), b * b / ((a - 1) ** 2 * (a - 2)))
    assert (draws > 0).all()

    def draw(rate):  # 1 / (G / rate) = rate / G, G a standard gamma draw
        tgrad.manual_seed(1)
        return D.InverseGamma(_t([2.0, 4.0]), rate).rsample((3,))
    assert gradcheck(draw, (_t([0.5, 2.0], requires_grad=True),))


def test_inverse_gamma_shapes_and_validation():
    d = D.InverseGamma(_t([1.0, 2.0]), 1.0)
    assert d.batch_shape == (2,) and d.event_shape == () and d.has_rsample
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and type(e) is D.InverseGamma
    assert tuple(e.sample().shape) == (3, 2) and tuple(e.concentration.shape) == (3, 2)
    with pytest.raises(ValueError, match="Expected parameter concentration"):
        D.InverseGamma(-1.0, 1.0)
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(_t(-1.0))


def test_inverse_gamma_kl_is_the_gamma_bases_kl():
    # PyTorch's (TransformedDistribution, TransformedDistribution) rule: equal transforms
    # and event shapes -> the bases' KL (KL is invariant under the shared bijection 1/x)
    a1, b1, a2, b2 = [3.0, 1.5], [2.0, 0.7], [2.5, 4.0], [1.0, 3.0]
    p, q = D.InverseGamma(_t(a1), _t(b1)), D.InverseGamma(_t(a2), _t(b2))
    kl = D.kl_divergence(p, q)
    assert tuple(kl.shape) == (2,)
    np.testing.assert_allclose(_np(kl), _np(D.kl_divergence(D.Gamma(_t(a1), _t(b1)),
                                                           D.Gamma(_t(a2), _t(b2)))),
                               rtol=1e-14)
    grid = _log_grid(1e-4, 1e10, 400001)  # 1.5-power tail: mass ~ x^-1.5 beyond
    for i in range(2):  # quadrature of p (log p - log q) of the InverseGamma densities
        lp = _inverse_gamma_log_pdf(grid, a1[i], b1[i])
        lq = _inverse_gamma_log_pdf(grid, a2[i], b2[i])
        np.testing.assert_allclose(_np(kl)[i], _quad(np.exp(lp) * (lp - lq), grid),
                                   rtol=1e-6)
    # batch shapes broadcast; gradients flow to both distributions' parameters
    assert tuple(D.kl_divergence(D.InverseGamma(_t(2.0), _t(1.0)), q).shape) == (2,)
    assert gradcheck(lambda c, r: D.kl_divergence(D.InverseGamma(c, r), q),
                     (_t([3.0, 1.5], requires_grad=True), _t([2.0, 0.7], requires_grad=True)))


def test_transformed_kl_needs_equal_transforms_and_event_shapes():
    tr = D.transforms
    base = D.Normal(_t([0.0, 1.0]), _t([1.0, 2.0]))
    other = D.Normal(_t([0.5, -1.0]), _t([1.5, 0.5]))
    # equal parametrised transforms compare by value, as PyTorch's __eq__
    p = D.TransformedDistribution(base, [tr.AffineTransform(1.0, _t(2.0)), tr.ExpTransform()])
    q = D.TransformedDistribution(other, [tr.AffineTransform(_t(1.0), 2.0), tr.ExpTransform()])
    np.testing.assert_allclose(_np(D.kl_divergence(p, q)),
                               _np(D.kl_divergence(base, other)), rtol=1e-14)
    same_power = D.TransformedDistribution(D.Gamma(_t(2.0), _t(1.0)), tr.PowerTransform(_t(2.0)))
    assert tr.PowerTransform(2.0) == tr.PowerTransform(_t([2.0, 2.0]))
    assert tr.PowerTransform(2.0) != tr.PowerTransform(3.0)
    assert tr.AffineTransform(0.0, 1.0) != tr.AffineTransform(0.0, _t([1.0, 2.0]))
    np.testing.assert_allclose(
        D.kl_divergence(same_power, D.TransformedDistribution(
            D.Gamma(_t(3.0), _t(2.0)), tr.PowerTransform(2.0))).item(),
        D.kl_divergence(D.Gamma(_t(2.0), _t(1.0)), D.Gamma(_t(3.0), _t(2.0))).item(),
        rtol=1e-14)
    # different transforms, or equal ones with different event shapes: NotImplementedError
    r = D.TransformedDistribution(other, [tr.AffineTransform(1.0, 3.0), tr.ExpTransform()])
    with pytest.raises(NotImplementedError, match="transforms differ"):
        D.kl_divergence(p, r)
    with pytest.raises(NotImplementedError, match="transforms differ"):
        D.kl_divergence(D.InverseGamma(_t(2.0), _t(1.0)),
                        D.TransformedDistribution(D.Gamma(_t(2.0), _t(1.0)),
                                                  tr.PowerTransform(-2.0)))
    vec = D.TransformedDistribution(D.Independent(other, 1), [tr.ExpTransform()])
    with pytest.raises(NotImplementedError, match=r"event shapes differ: \(\) and \(2,\)"):
        D.kl_divergence(D.TransformedDistribution(base, [tr.ExpTransform()]), vec)


# ------------------------------------------------------------------------------ Kumaraswamy
def _kumaraswamy_log_pdf(x, a, b):
    return math.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)


def test_kumaraswamy_density_cdf_moments_entropy():
    a, b = 2.0, 5.0
    d = D.Kumaraswamy(_t(a), _t(b))
    x = np.array([0.05, 0.3, 0.7, 0.95])
    np.testing.assert_allclose(_np(d.log_prob(_t(x))), _kumaraswamy_log_pdf(x, a, b),
                               rtol=1e-12)
    np.testing.assert_allclose(_np(d.cdf(_t(x))), 1 - (1 - x ** a) ** b, rtol=1e-12)
    np.testing.assert_allclose(_np(d.icdf(d.cdf(_t(x)))), x, rtol=1e-10)
    grid = np.linspace(0, 1, 200001)[1:-1]
    p = np.exp(_kumaraswamy_log_pdf(grid, a, b))
    assert abs(_quad(p, grid) - 1) < 1e-8
    mean = _quad(grid * p, grid)
    np.testing.assert_allclose(d.mean.item(), mean, rtol=1e-8)
    np.testing.assert_allclose(d.variance.item(), _quad((grid - mean) ** 2 * p, grid),
                               rtol=1e-7)
    np.testing.assert_allclose(d.entropy().item(),
                               -_quad(p * _kumaraswamy_log_pdf(grid, a, b), grid), rtol=1e-7)
    np.testing.assert_allclose(d.mode.item(), grid[np.argmax(p)], atol=1e-5)
    modes = _np(D.Kumaraswamy(_t([0.5, 2.0, 1.0]), _t([2.0, 0.5, 3.0])).mode)
    assert np.isnan(modes[:2]).all() and modes[2] == 0.0  # a = 1: p decreasing from x = 0


def test_kumaraswamy_sampling_and_rsample_gradient():
    a, b = 3.0, 2.0
    d = D.Kumaraswamy(_t(a), _t(b))
    tgrad.manual_seed(0)
    draws = _np(d.sample((N_DRAWS,)))
    assert ((draws >= 0) & (draws <= 1)).all()
    _check_sample_mean(draws, d.mean.item(), d.variance.item())

    def draw(c1, c0):
        tgrad.manual_seed(2)
        return D.Kumaraswamy(c1, c0).rsample((4,))
    assert gradcheck(draw, (_t([0.7, 3.0], requires_grad=True),
                            _t([2.0, 0.9], requires_grad=True)))


def test_kumaraswamy_shapes_and_validation():
    d = D.Kumaraswamy(_t([1.0, 2.0]), 3.0)
    assert d.batch_shape == (2,) and d.support is D.constraints.unit_interval
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and tuple(e.concentration1.shape) == (4, 2)
    assert tuple(e.rsample((3,)).shape) == (3, 4, 2)
    with pytest.raises(ValueError, match="Expected parameter concentration0"):
        D.Kumaraswamy(1.0, 0.0)
    with pytest.raises(ValueError, match="to be within the support"):
        d.log_prob(_t(1.5))


# --------------------------------------------------------------------------- LogisticNormal
def _logistic_normal_log_pdf(y, mu, s):
    """Stick breaking inverted by hand: x_i = log(y_i / r_i) + log(K - i), r_i = 1 -
    sum_{j<=i} y_j; the Jacobian of y_{1..K} -> x is triangular with diagonal
    1 / y_i + 1 / r_i."""
    k = y.shape[-1] - 1
    r = 1 - np.cumsum(y[..., :k], -1)
    x = np.log(y[..., :k] / r) + np.log(k - np.arange(k))
    normal = -0.5 * ((x - mu) / s) ** 2 - np.log(s) - 0.5 * math.log(2 * math.pi)
    return (normal + np.log(1 / y[..., :k] + 1 / r)).sum(-1)


def test_logistic_normal_density_and_normalisation():
    mu, s = np.array([0.3, -0.5, 1.0]), np.array([0.8, 1.2, 0.5])
    d = D.LogisticNormal(_t(mu), _t(s))
    assert d.batch_shape == () and d.event_shape == (4,)
    y = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.15, 0.05]])
    np.testing.assert_allclose(_np(d.log_prob(_t(y))), _logistic_normal_log_pdf(y, mu, s),
                               rtol=1e-11)
    # K = 1 (scalar parameters): a law on (t, 1 - t) that integrates to 1 over t
    d1 = D.LogisticNormal(_t(0.4), _t(0.7))
    assert d1.event_shape == (2,)
    t = np.linspace(0, 1, 100001)[1:-1]
    pts = np.stack([t, 1 - t], -1)
    p = np.exp(_np(d1.log_prob(_t(pts))))
    np.testing.assert_allclose(p, np.exp(_logistic_normal_log_pdf(pts, 0.4, 0.7)), rtol=1e-9)
    assert abs(_quad(p, t) - 1) < 1e-6
    # loc, scale: the base Normal's
    np.testing.assert_allclose(_np(d.loc), mu)
    np.testing.assert_allclose(_np(d.scale), s)


def test_logistic_normal_sampling_and_rsample_gradient():
    d = D.LogisticNormal(_t([0.0, 0.0]), _t([0.5, 0.5]))
    tgrad.manual_seed(3)
    draws = _np(d.sample((N_DRAWS,)))
    assert draws.shape == (N_DRAWS, 3)
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    # the first coordinate is sigmoid(x_1 - log 2), x_1 ~ N(0, 0.5^2): its mean by quadrature
    z = np.linspace(-10, 10, 200001)
    phi = np.exp(-0.5 * z ** 2) / math.sqrt(2 * math.pi)
    first = 1 / (1 + np.exp(-(0.5 * z - math.log(2))))
    m1, m2 = _quad(first * phi, z), _quad(first ** 2 * phi, z)
    _check_sample_mean(draws[:, 0], m1, m2 - m1 * m1)

    def draw(loc, scale):
        tgrad.manual_seed(4)
        return D.LogisticNormal(loc, scale).rsample((2,))
    assert gradcheck(draw, (_t([0.1, -0.2], requires_grad=True),
                            _t([0.5, 1.5], requires_grad=True)))
    e = d.expand((5,))
    assert e.batch_shape == (5,) and e.event_shape == (3,) and tuple(e.sample().shape) == (5, 3)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.LogisticNormal(_t([0.0]), _t([-1.0]))


# ------------------------------------------------------------------------ GeneralizedPareto
def _gpd_log_pdf(x, loc, s, xi):
    z = (x - loc) / s
    if xi == 0:
        return -math.log(s) - z
    return -math.log(s) - (1 / xi + 1) * np.log1p(xi * z)


def _gpd_cdf(x, loc, s, xi):
    z = (x - loc) / s
    return 1 - np.exp(-z) if xi == 0 else 1 - (1 + xi * z) ** (-1 / xi)


@pytest.mark.parametrize("xi", [0.3, 0.0, -0.4])
def test_generalized_pareto_density_cdf_moments(xi):
    loc, s = 0.5, 2.0
    d = D.GeneralizedPareto(_t(loc), _t(s), _t(xi))
    upper = loc - s / xi if xi < 0 else math.inf
    x = np.array([0.6, 1.5, 4.0, 5.0])
    np.testing.assert_allclose(_np(d.log_prob(_t(x))), _gpd_log_pdf(x, loc, s, xi), rtol=1e-12)
    np.testing.assert_allclose(_np(d.cdf(_t(x))), _gpd_cdf(x, loc, s, xi), rtol=1e-12)
    np.testing.assert_allclose(_np(d.icdf(_t(_gpd_cdf(x, loc, s, xi)))), x, rtol=1e-11)
    if xi < 0:
        grid = np.linspace(loc, upper, 200001)[:-1]
    else:
        grid = loc + _log_grid(1e-9, 1e6 if xi > 0 else 200.0, 400001)
    p = np.exp(_gpd_log_pdf(grid, loc, s, xi))
    assert abs(_quad(p, grid) - 1) < 1e-5
    mean = _quad(grid * p, grid)
    np.testing.assert_allclose(d.mean.item(), mean, rtol=1e-5)
    np.testing.assert_allclose(d.variance.item(), _quad((grid - mean) ** 2 * p, grid), rtol=2e-4)
    np.testing.assert_allclose(d.entropy().item(), -_quad(p * _gpd_log_pdf(grid, loc, s, xi),
                                                          grid), rtol=1e-5, atol=1e-6)
    assert d.mode.item() == loc
    assert _np(d.support.upper_bound).item() == upper


def test_generalized_pareto_special_cases_and_validation():
    # concentration -1: Uniform(loc, loc + scale), density 1 / scale
    u = D.GeneralizedPareto(_t(1.0), _t(2.0), _t(-1.0))
    np.testing.assert_allclose(_np(u.log_prob(_t([1.5, 2.9]))), -math.log(2.0), rtol=1e-14)
    heavy = D.GeneralizedPareto(_t(0.0), _t(1.0), _t([0.5, 1.5]))
    assert np.isnan(_np(heavy.mean)[1]) and np.isnan(_np(heavy.variance)).all()
    with pytest.raises(ValueError, match="to be within the support"):
        D.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(_t(3.0))  # above loc - scale / xi = 2
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.GeneralizedPareto(0.0, -1.0, 0.0)
    d = D.GeneralizedPareto(_t([0.0, 1.0]), 1.0, 0.2)
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(e.entropy().shape) == (3, 2)
    assert tuple(d.sample((4,)).shape) == (4, 2)


def test_generalized_pareto_sampling_and_rsample_gradient():
    loc, s, xi = 1.0, 2.0, 0.2
    d = D.GeneralizedPareto(_t(loc), _t(s), _t(xi))
    tgrad.manual_seed(5)
    draws = _np(d.sample((N_DRAWS,)))
    assert (draws >= loc).all()
    _check_sample_mean(draws, d.mean.item(), d.variance.item())

    def draw(loc_, scale_, conc_):
        tgrad.manual_seed(6)
        return D.GeneralizedPareto(loc_, scale_, conc_).rsample((3,))
    assert gradcheck(draw, (_t([0.0, 1.0], requires_grad=True),
                            _t([1.0, 0.5], requires_grad=True),
                            _t([0.3, -0.2], requires_grad=True)))
