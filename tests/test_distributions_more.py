"""Cauchy, HalfCauchy, HalfNormal, LogNormal, Gumbel, Geometric, Independent,
OneHotCategorical and Normal.icdf against NumPy float64 evaluations of their textbook
densities, cdfs and moments; seeded sample statistics; gradcheck of log_prob and rsample
with respect to the parameters; shapes and validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck

F64 = tgrad.float64
X = np.array([0.3, 1.7, 4.0])


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _close(got, want, rtol=1e-12):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=1e-14)


def test_cauchy():
    loc, s = 0.5, 2.0
    d = D.Cauchy(_t(loc), _t(s))
    z = (X - loc) / s
    _close(d.log_prob(_t(X)), -np.log(np.pi * s * (1 + z * z)))
    _close(d.cdf(_t(X)), 0.5 + np.arctan(z) / np.pi)
    _close(d.icdf(d.cdf(_t(X))), X)
    _close(d.entropy(), np.log(4 * np.pi * s))
    assert np.isnan(d.mean.item()) and d.variance.item() == math.inf and d.mode.item() == loc
    tgrad.manual_seed(0)
    samples = d.sample((20000,)).numpy()
    assert abs(np.median(samples) - loc) < 0.1  # the median is loc


def test_half_cauchy_and_half_normal():
    s = 1.5
    hc = D.HalfCauchy(_t(s))
    _close(hc.log_prob(_t(X)), np.log(2 / (np.pi * s * (1 + (X / s) ** 2))))
    _close(hc.cdf(_t(X)), 2 / np.pi * np.arctan(X / s))
    unchecked = D.HalfCauchy(_t(s), validate_args=False)
    assert unchecked.log_prob(_t([-1.0])).item() == -math.inf  # outside the support
    hn = D.HalfNormal(_t(s))
    _close(hn.log_prob(_t(X)), np.log(np.sqrt(2) / (s * np.sqrt(np.pi))) - X ** 2 / (2 * s * s))
    _close(hn.mean, s * np.sqrt(2 / np.pi))
    _close(hn.variance, s * s * (1 - 2 / np.pi))
    _close(hn.entropy(), 0.5 * np.log(np.pi * s * s / 2) + 0.5)
    _close(hn.icdf(hn.cdf(_t(X))), X, rtol=1e-10)
    tgrad.manual_seed(1)
    draws = hn.sample((40000,)).numpy()
    assert (draws >= 0).all() and abs(draws.mean() - s * np.sqrt(2 / np.pi)) < 0.02


def test_log_normal():
    mu, s = 0.2, 0.7
    d = D.LogNormal(_t(mu), _t(s))
    _close(d.log_prob(_t(X)),
           -np.log(X * s * np.sqrt(2 * np.pi)) - (np.log(X) - mu) ** 2 / (2 * s * s))
    _close(d.mean, np.exp(mu + s * s / 2))
    _close(d.mode, np.exp(mu - s * s))
    _close(d.variance, (np.exp(s * s) - 1) * np.exp(2 * mu + s * s))
    _close(d.entropy(), mu + 0.5 + np.log(s * np.sqrt(2 * np.pi)))
    _close(d.icdf(d.cdf(_t(X))), X, rtol=1e-10)
    loc = _t(mu, requires_grad=True)
    tgrad.manual_seed(2)
    draw = D.LogNormal(loc, _t(s)).rsample((3,))
    draw.sum().backward()  # d exp(loc + s z) / d loc = the sample itself
    np.testing.assert_allclose(loc.grad.item(), draw.detach().numpy().sum(), rtol=1e-12)


def test_gumbel():
    loc, s = 1.0, 2.0
    d = D.Gumbel(_t(loc), _t(s))
    z = (X - loc) / s
    _close(d.log_prob(_t(X)), -np.log(s) - (z + np.exp(-z)))
    _close(d.cdf(_t(X)), np.exp(-np.exp(-z)))
    _close(d.icdf(d.cdf(_t(X))), X, rtol=1e-10)
    _close(d.mean, loc + s * np.euler_gamma)
    _close(d.variance, (np.pi * s) ** 2 / 6)
    _close(d.entropy(), np.log(s) + 1 + np.euler_gamma)
    tgrad.manual_seed(3)
    assert abs(d.sample((40000,)).numpy().mean() - (loc + s * np.euler_gamma)) < 0.05


def test_geometric():
    p = 0.3
    d = D.Geometric(_t(p))
    k = np.array([0.0, 1.0, 5.0])
    _close(d.log_prob(_t(k)), k * np.log1p(-p) + np.log(p))
    _close(d.mean, (1 - p) / p)
    _close(d.variance, (1 - p) / p ** 2)
    _close(d.entropy(), (-(1 - p) * np.log(1 - p) - p * np.log(p)) / p)
    dl = D.Geometric(logits=_t(np.log(p / (1 - p))))
    _close(dl.log_prob(_t(k)), k * np.log1p(-p) + np.log(p), rtol=1e-10)
    assert D.Geometric(_t(1.0)).log_prob(_t([0.0])).item() == 0.0
    tgrad.manual_seed(4)
    draws = d.sample((40000,)).numpy()
    assert (draws == np.floor(draws)).all() and abs(draws.mean() - (1 - p) / p) < 0.05
    # PyTorch's text, listing the invalid values only
    with pytest.raises(ValueError, match=r"of distribution Geometric\(probs: "
                                         r"tgrad\.Size\(\[2\]\)\) to be positive but found "
                                         r"invalid values:\ntensor\(\[0\.\]"):
        D.Geometric(_t([0.0, 0.5]))


def test_independent_and_one_hot_categorical():
    loc, scale = np.array([[0.0, 1.0], [2.0, -1.0]]), np.array([[1.0, 2.0], [0.5, 1.0]])
    base = D.Normal(_t(loc), _t(scale))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (2,) and ind.has_rsample
    v = np.array([[0.5, 0.5], [1.0, 1.0]])
    want = (-(v - loc) ** 2 / (2 * scale ** 2) - np.log(scale * np.sqrt(2 * np.pi))).sum(-1)
    _close(ind.log_prob(_t(v)), want)
    _close(ind.entropy(), (0.5 + 0.5 * np.log(2 * np.pi) + np.log(scale)).sum(-1))
    q = D.Independent(D.Normal(_t(loc + 1), _t(scale)), 1)
    _close(D.kl_divergence(ind, q), (1 / (2 * scale ** 2)).sum(-1))
    assert ind.expand((3, 2)).batch_shape == (3, 2)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims <= len"):
        D.Independent(base, 3)
    p = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    oh = D.OneHotCategorical(_t(p))
    assert oh.batch_shape == (2,) and oh.event_shape == (3,)
    tgrad.manual_seed(5)
    s = oh.sample((1000,)).numpy()
    assert s.shape == (1000, 2, 3) and (s.sum(-1) == 1).all()
    np.testing.assert_allclose(s.mean(0), p, atol=0.05)
    x = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    _close(oh.log_prob(_t(x)), np.log([0.5, 0.6]))
    _close(oh.mode, [[0, 0, 1], [1, 0, 0]])
    _close(oh.entropy(), -(p * np.log(p)).sum(-1))
    _close(D.kl_divergence(oh, D.OneHotCategorical(_t(p[::-1].copy()))),
           (p * np.log(p / p[::-1])).sum(-1))


def test_normal_icdf_and_gradchecks():
    d = D.Normal(_t(1.0), _t(2.0))
    _close(d.icdf(_t([0.975, 0.5])), [1.0 + 2.0 * 1.959963984540054, 1.0], rtol=1e-12)
    value = _t(X)
    for cls, params in ((D.Cauchy, (0.3, 1.2)), (D.Gumbel, (0.3, 1.2)),
                        (D.LogNormal, (0.3, 1.2))):
        a, b = (_t(v, requires_grad=True) for v in params)
        assert gradcheck(lambda u, w, c=cls: c(u, w).log_prob(value), (a, b))
    s = _t(1.3, requires_grad=True)
    for cls in (D.HalfNormal, D.HalfCauchy):
        assert gradcheck(lambda w, c=cls: c(w).log_prob(value), (s,))
    pr = _t(0.4, requires_grad=True)
    assert gradcheck(lambda w: D.Geometric(w).log_prob(_t([0.0, 2.0])), (pr,))


# ------------------------------------------------------------- transforms / TransformedDistribution
def test_transforms_inverse_and_jacobians():
    from tgrad.distributions import transforms as T
    x = np.array([-1.5, -0.2, 0.4, 2.0])
    cases = [(T.ExpTransform(), np.exp, x), (T.TanhTransform(), np.tanh, x),
             (T.SigmoidTransform(), lambda v: 1 / (1 + np.exp(-v)), x),
             (T.AffineTransform(1.0, -2.0), lambda v: 1.0 - 2.0 * v, x),
             (T.PowerTransform(3.0), lambda v: v ** 3, np.abs(x) + 0.1)]
    for t, f, xs in cases:
        y = t(_t(xs))
        _close(y, f(xs))
        _close(t.inv(y), xs, rtol=1e-10)
        h = 1e-6  # log|dy/dx| against a central difference of the NumPy map
        num = np.log(np.abs((f(xs + h) - f(xs - h)) / (2 * h)))
        np.testing.assert_allclose(t.log_abs_det_jacobian(_t(xs), y).numpy(), num, rtol=1e-6,
                                   atol=1e-8)
    comp = T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform()])
    y = comp(_t(x))
    _close(y, np.exp(0.5 + 2.0 * x))
    _close(comp.log_abs_det_jacobian(_t(x), y), np.log(2.0) + 0.5 + 2.0 * x)
    _close(comp.inv(y), x, rtol=1e-12)
    cached = T.ExpTransform(cache_size=1)
    xt = _t(x)
    assert cached.inv(cached(xt)) is xt  # the cached pair: no round-off
    assert T.ExpTransform().inv.inv.__class__ is T.ExpTransform
    _close(T.AbsTransform()(_t(x)), np.abs(x))


def test_transformed_distribution():
    from tgrad.distributions import transforms as T
    mu, s = np.array([0.2, -0.5]), np.array([1.0, 0.5])
    base = D.Normal(_t(mu), _t(s))
    squashed = D.TransformedDistribution(base, [T.TanhTransform()])
    assert squashed.batch_shape == (2,) and squashed.event_shape == () and squashed.has_rsample
    y = np.array([0.3, -0.9])
    a = np.arctanh(y)
    want = -(a - mu) ** 2 / (2 * s * s) - np.log(s * np.sqrt(2 * np.pi)) - np.log1p(-y * y)
    _close(squashed.log_prob(_t(y)), want, rtol=1e-10)
    loc = _t(mu, requires_grad=True)
    tgrad.manual_seed(6)
    draw = D.TransformedDistribution(D.Normal(loc, _t(s)), T.TanhTransform()).rsample()
    draw.sum().backward()  # d tanh(loc + s z) / d loc = 1 - tanh^2
    np.testing.assert_allclose(loc.grad.numpy(), 1 - draw.detach().numpy() ** 2, rtol=1e-12)
    as_lognormal = D.TransformedDistribution(D.Normal(0.3, 0.8), T.ExpTransform())
    _close(as_lognormal.log_prob(_t(X)), D.LogNormal(0.3, 0.8).log_prob(_t(X)).numpy())
    _close(as_lognormal.cdf(_t(X)), D.LogNormal(0.3, 0.8).cdf(_t(X)).numpy())
    flipped = D.TransformedDistribution(D.Normal(0.0, 1.0), T.AffineTransform(1.0, -2.0))
    _close(flipped.cdf(_t(X)), 1 - D.Normal(0.0, 1.0).cdf(_t((1.0 - X) / 2.0)).numpy())
    _close(flipped.icdf(flipped.cdf(_t(X))), X, rtol=1e-10)
    vec = D.TransformedDistribution(D.Normal(_t(np.zeros(3)), _t(np.ones(3))),
                                    T.AffineTransform(_t(np.zeros(3)), _t([1.0, 2.0, 3.0]),
                                                      event_dim=1))
    assert vec.batch_shape == () and vec.event_shape == (3,)
    _close(vec.log_prob(_t(np.zeros(3))), -3 * 0.5 * np.log(2 * np.pi) - np.log(6.0))
    tgrad.manual_seed(7)
    assert squashed.sample((4,)).shape == (4, 2)
    assert squashed.expand((3, 2)).batch_shape == (3, 2)


# ------------------------------------------------------------------ relaxed (Gumbel-softmax)
def test_relaxed_bernoulli():
    t, p = 0.7, np.array([0.3, 0.8])
    lg = np.log(p / (1 - p))
    base = D.LogitRelaxedBernoulli(_t(t), probs=_t(p))
    x = np.array([-0.4, 1.3])
    s = 1 / (1 + np.exp(-(t * x - lg)))  # u as a function of x: the density is T s (1 - s)
    _close(base.log_prob(_t(x)), np.log(t * s * (1 - s)), rtol=1e-10)
    rb = D.RelaxedBernoulli(_t(t), logits=_t(lg))
    y = np.array([0.2, 0.9])
    z = np.log(y / (1 - y))
    s = 1 / (1 + np.exp(-(t * z - lg)))
    _close(rb.log_prob(_t(y)), np.log(t * s * (1 - s)) - np.log(y * (1 - y)), rtol=1e-10)
    logits = _t(lg, requires_grad=True)
    tgrad.manual_seed(8)
    draw = D.RelaxedBernoulli(_t(t), logits=logits).rsample((5,))
    assert ((draw > 0) & (draw < 1)).all().item()
    draw.sum().backward()
    assert logits.grad is not None and (logits.grad.numpy() > 0).all()  # increasing in logits
    tgrad.manual_seed(9)
    ones = (D.RelaxedBernoulli(_t(t), probs=_t(p)).sample((20000,)).numpy() > 0.5).mean(0)
    np.testing.assert_allclose(ones, p, atol=0.02)  # P(sample > 1/2) = p at any T


def test_relaxed_one_hot_categorical():
    t = 0.6
    p = np.array([0.2, 0.5, 0.3])
    d = D.RelaxedOneHotCategorical(_t(t), probs=_t(p))
    assert d.batch_shape == () and d.event_shape == (3,) and d.has_rsample
    y = np.array([0.1, 0.7, 0.2])
    k = 3
    got = d.log_prob(_t(y)).item()
    base = D.ExpRelaxedCategorical(_t(t), probs=_t(p))
    # the density of x = log_softmax((log p + g) / T), from Maddison et al.'s Concrete
    # density by the change of variables y = exp(x) (PyTorch's closed form)
    score = np.log(p) - t * np.log(y)
    expect_base = (math.lgamma(k) + (k - 1) * np.log(t)
                   + np.sum(score - np.log(np.sum(np.exp(score)))))
    np.testing.assert_allclose(base.log_prob(_t(np.log(y))).item(), expect_base, rtol=1e-12)
    # y = exp(x): log p(y) = log p_base(log y) - sum log y (the exp transform's Jacobian)
    np.testing.assert_allclose(got, expect_base - np.log(y).sum(), rtol=1e-12)
    tgrad.manual_seed(10)
    s = d.sample((20000,)).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    counts = np.bincount(s.argmax(-1), minlength=3) / 20000  # Gumbel-max: argmax ~ p
    np.testing.assert_allclose(counts, p, atol=0.015)


def test_pareto_and_weibull():
    scale, alpha = 1.5, 3.0
    d = D.Pareto(_t(scale), _t(alpha))
    x = np.array([1.6, 2.0, 5.0])
    _close(d.log_prob(_t(x)), np.log(alpha * scale ** alpha / x ** (alpha + 1)))
    _close(d.cdf(_t(x)), 1 - (scale / x) ** alpha)
    _close(d.icdf(d.cdf(_t(x))), x, rtol=1e-10)
    _close(d.mean, alpha * scale / (alpha - 1))
    _close(d.variance, scale ** 2 * alpha / ((alpha - 1) ** 2 * (alpha - 2)))
    _close(d.entropy(), np.log(scale / alpha) + 1 + 1 / alpha)
    assert D.Pareto(_t(1.0), _t(0.5)).mean.item() == math.inf
    with pytest.raises(ValueError, match="support"):
        d.log_prob(_t([1.0]))  # below scale: outside the support
    lam, k = 2.0, 1.5
    w = D.Weibull(_t(lam), _t(k))
    _close(w.log_prob(_t(x)), np.log(k / lam) + (k - 1) * np.log(x / lam) - (x / lam) ** k)
    _close(w.cdf(_t(x)), 1 - np.exp(-(x / lam) ** k))
    _close(w.icdf(w.cdf(_t(x))), x, rtol=1e-10)
    _close(w.mean, lam * math.gamma(1 + 1 / k))
    _close(w.variance, lam ** 2 * (math.gamma(1 + 2 / k) - math.gamma(1 + 1 / k) ** 2))
    _close(w.mode, lam * ((k - 1) / k) ** (1 / k))
    _close(w.entropy(), np.euler_gamma * (1 - 1 / k) + np.log(lam / k) + 1)
    tgrad.manual_seed(11)
    assert abs(w.sample((40000,)).numpy().mean() - lam * math.gamma(1 + 1 / k)) < 0.03
    tgrad.manual_seed(12)
    assert abs(np.median(d.sample((40000,)).numpy()) - scale * 2 ** (1 / alpha)) < 0.02
    a = _t(alpha, requires_grad=True)
    assert gradcheck(lambda t: D.Pareto(_t(scale), t).log_prob(_t(x)), (a,))
    kk = _t(k, requires_grad=True)
    assert gradcheck(lambda t: D.Weibull(_t(lam), t).log_prob(_t(x)), (kk,))


# ------------------------------------------- mixtures, enumerate_support, straight-through
def _normal_logpdf(x, mu, s):
    return -(x - mu) ** 2 / (2 * s * s) - np.log(s * np.sqrt(2 * np.pi))


def test_mixture_same_family():
    pi, mu, s = np.array([0.3, 0.7]), np.array([-1.0, 2.0]), np.array([0.5, 1.0])
    m = D.MixtureSameFamily(D.Categorical(_t(pi)), D.Normal(_t(mu), _t(s)))
    assert m.batch_shape == () and m.event_shape == () and not m.has_rsample
    x = np.array([0.0, 1.0, 3.5])
    want = np.log((pi * np.exp(_normal_logpdf(x[:, None], mu, s))).sum(-1))
    _close(m.log_prob(_t(x)), want)
    _close(m.mean, (pi * mu).sum())
    mean = (pi * mu).sum()
    _close(m.variance, (pi * (s ** 2 + (mu - mean) ** 2)).sum())
    from math import erf
    cdf = [sum(p * 0.5 * (1 + erf((v - a) / (b * np.sqrt(2)))) for p, a, b in zip(pi, mu, s))
           for v in x]
    _close(m.cdf(_t(x)), cdf)
    tgrad.manual_seed(13)
    draws = m.sample((40000,)).numpy()
    assert abs(draws.mean() - mean) < 0.03
    # vector components (an Independent Normal), a batch of 2 mixtures of 3
    locs = np.random.default_rng(14).standard_normal((2, 3, 4))
    mv = D.MixtureSameFamily(D.Categorical(logits=_t(np.zeros((2, 3)))),
                             D.Independent(D.Normal(_t(locs), _t(np.ones((2, 3, 4)))), 1))
    assert mv.batch_shape == (2,) and mv.event_shape == (4,)
    assert mv.sample((5,)).shape == (5, 2, 4)
    v = np.zeros((2, 4))
    comp = _normal_logpdf(v[:, None, :], locs, 1.0).sum(-1)  # (2, 3)
    _close(mv.log_prob(_t(v)), np.log(np.exp(comp).mean(-1)))
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(_t(np.ones(3))), D.Normal(_t(mu), _t(s)))
    with pytest.raises(ValueError, match="needs to be an instance of"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(_t(mu), _t(s)))
    loc = _t(mu, requires_grad=True)
    assert gradcheck(lambda t: D.MixtureSameFamily(D.Categorical(_t(pi)),
                                                   D.Normal(t, _t(s))).log_prob(_t(x)), (loc,))


def test_enumerate_support_and_straight_through():
    b = D.Bernoulli(_t([0.3, 0.6]))
    np.testing.assert_array_equal(b.enumerate_support().numpy(), [[0, 0], [1, 1]])
    assert b.enumerate_support(expand=False).shape == (2, 1)
    c = D.Categorical(_t(np.ones((2, 3))))
    np.testing.assert_array_equal(c.enumerate_support().numpy(), [[0, 0], [1, 1], [2, 2]])
    assert c.enumerate_support().dtype is tgrad.int64
    oh = D.OneHotCategorical(_t(np.ones((2, 3))))
    sup = oh.enumerate_support()
    assert sup.shape == (3, 2, 3)
    np.testing.assert_array_equal(sup[:, 0].numpy(), np.eye(3))
    # summing probabilities over the support gives 1 (exact enumeration)
    np.testing.assert_allclose(c.log_prob(c.enumerate_support()).exp().sum(0).numpy(), 1.0)
    logits = _t([0.2, -0.3, 0.5], requires_grad=True)
    st = D.OneHotCategoricalStraightThrough(logits=logits)
    tgrad.manual_seed(15)
    y = st.rsample()
    assert set(y.detach().numpy().tolist()) <= {0.0, 1.0} and y.detach().numpy().sum() == 1
    (y * _t([1.0, 2.0, 3.0])).sum().backward()  # gradient of p . w through softmax
    p = np.exp([0.2, -0.3, 0.5]) / np.exp([0.2, -0.3, 0.5]).sum()
    w = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(logits.grad.numpy(), p * (w - (p * w).sum()), rtol=1e-12)


# ---------------------------------------------------------------- differential-test fixes
def test_beta_small_concentrations_sample_without_nan_and_keep_the_law():
    # both gamma draws underflow at a = b = 0.01 (X / (X + Y) was 0 / 0); the law puts
    # nearly all its mass next to 0 and 1, half each for equal concentrations
    tgrad.manual_seed(0)
    for dt, c in ((tgrad.float32, 0.01), (F64, 0.01), (F64, 1e-3)):
        s = D.Beta(tgrad.full((20000,), c, dtype=dt), c).sample().to(F64).numpy()
        assert not np.isnan(s).any() and s.min() >= 0.0 and s.max() <= 1.0
        assert abs((s < 0.01).mean() - 0.5) < 0.03 and abs((s > 0.99).mean() - 0.5) < 0.03
    s = D.Beta(tgrad.full((100000,), 0.01, dtype=F64), 0.03).sample().numpy()
    assert abs(s.mean() - 0.25) < 0.01  # a / (a + b)
    d = D.Dirichlet(tgrad.full((20000, 3), 0.01, dtype=tgrad.float32))
    x = d.sample().to(F64).numpy()
    assert not np.isnan(x).any() and np.allclose(x.sum(-1), 1.0, atol=1e-6)
    # by symmetry each vertex is the largest coordinate a third of the time (underflowed
    # draws clamped to a tie of 1/K each would all go to the first)
    np.testing.assert_allclose(np.bincount(x.argmax(-1), minlength=3) / 20000, [1 / 3] * 3,
                               atol=0.02)


def test_beta_rsample_gradient_at_small_concentrations():
    # d E[X] / da = b / (a + b)^2 and d E[X] / db = -a / (a + b)^2, through the log-space
    # draws (d log X / da = -(log X - digamma(a + 1)) / a where X underflows)
    tgrad.manual_seed(1)
    for av, bv in ((0.05, 0.1), (0.01, 0.01), (2.0, 3.0)):
        a, b = _t(av, requires_grad=True), _t(bv, requires_grad=True)
        D.Beta(a, b).rsample((200000,)).mean().backward()
        np.testing.assert_allclose([a.grad.item(), b.grad.item()],
                                   [bv / (av + bv) ** 2, -av / (av + bv) ** 2], rtol=0.03)


def test_log_gamma_draw_gradient_matches_the_incomplete_gamma():
    # the implicit reparameterisation: d log x / da = -(dP(a, x) / da) / (x p(x; a)), dP/da
    # by central differences of gammainc; includes draws x < eps (the first-term branch)
    from tgrad.distributions.gamma import _LogStandardGamma
    tgrad.manual_seed(2)
    for av in (0.05, 0.7, 3.0):
        a = tgrad.full((500,), av, dtype=F64, requires_grad=True)
        log_x = _LogStandardGamma.apply(a)
        log_x.sum().backward()
        x = log_x.detach().exp()
        h = 1e-6 * av
        dp = (tgrad.special.gammainc(tgrad.full((500,), av + h, dtype=F64), x)
              - tgrad.special.gammainc(tgrad.full((500,), av - h, dtype=F64), x)) / (2 * h)
        xn = x.numpy()
        log_xp = av * np.log(xn) - xn - math.lgamma(av)
        np.testing.assert_allclose(a.grad.numpy(), -dp.numpy() / np.exp(log_xp), rtol=1e-6)


def test_transformed_cdf_needs_a_signed_transform():
    # AbsTransform is not monotone: no sign, so cdf / icdf raise (PyTorch's
    # NotImplementedError), instead of the base's cdf at |y|
    d = D.TransformedDistribution(D.Normal(_t(0.0), _t(1.0)), D.transforms.AbsTransform())
    with pytest.raises(NotImplementedError, match="AbsTransform"):
        d.cdf(_t(1.0))
    with pytest.raises(NotImplementedError, match="AbsTransform"):
        d.icdf(_t(0.5))
    with pytest.raises(NotImplementedError):
        D.transforms.AbsTransform().sign  # noqa: B018
    assert D.transforms.ExpTransform().inv.sign == 1
    assert D.transforms.ComposeTransform([]).sign == 1


def _phi(z):
    return 0.5 * (1 + np.vectorize(math.erf)(np.asarray(z) / math.sqrt(2)))


def test_transformed_cdf_icdf_with_a_tensor_scale():
    # y = l + s x, x ~ N(mu, 1): cdf(y) = Phi((y - l) / s - mu) for s > 0, 1 - that for s < 0
    mu, loc, scale = np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([2.0, -3.0])
    d = D.TransformedDistribution(D.Normal(_t(mu), 1.0),
                                  D.transforms.AffineTransform(_t(loc), _t(scale)))
    y = np.array([0.5, 2.0])
    phi = _phi((y - loc) / scale - mu)
    want = np.where(scale > 0, phi, 1 - phi)
    _close(d.cdf(_t(y)), want)
    _close(d.icdf(_t(want)), y)
    u = np.array([0.3, 0.6])  # icdf: the base's icdf of u (s > 0) or of 1 - u (s < 0)
    q = d.icdf(_t(u)).numpy()
    _close(d.cdf(_t(q)), u)
    median = loc + scale * mu
    assert q[0] < median[0] and q[1] > median[1]  # cdf increasing in y for either sign


def test_geometric_log_prob_gradient_at_probs_one():
    # log p(0) = log p: d/dp = 1 / p, also at p = 1 (k log1p(-p) is 0 there)
    p = _t([1.0, 0.5, 0.25], requires_grad=True)
    lp = D.Geometric(probs=p).log_prob(_t([0.0, 0.0, 2.0]))
    _close(lp, [0.0, math.log(0.5), 2 * math.log(0.75) + math.log(0.25)])
    lp.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), [1.0, 2.0, -2 / 0.75 + 4.0], rtol=1e-15)


def test_bernoulli_gradients_for_very_negative_logits():
    # d log p(0) / dl = -sigmoid(l), d log p(1) / dl = sigmoid(-l); dH / dl = -l p (1 - p)
    ls = np.array([-10.0, -17.0, -20.0, -27.6, -40.0])
    p = 1.0 / (1.0 + np.exp(-ls))
    for dt, rtol in ((tgrad.float32, 2e-6), (F64, 1e-14)):
        lg = tgrad.tensor(ls, dtype=dt, requires_grad=True)
        d = D.Bernoulli(logits=lg)
        (g0,) = tgrad.autograd.grad(d.log_prob(tgrad.zeros(5, dtype=dt)).sum(), lg)
        np.testing.assert_allclose(g0.numpy(), -p, rtol=rtol)
        (g1,) = tgrad.autograd.grad(d.log_prob(tgrad.ones(5, dtype=dt)).sum(), lg)
        np.testing.assert_allclose(g1.numpy(), 1 - p, rtol=rtol)
        (gh,) = tgrad.autograd.grad(d.entropy().sum(), lg)
        np.testing.assert_allclose(gh.numpy(), -ls * p * (1 - p), rtol=10 * rtol)


def test_mixture_same_family_support_holds_every_component():
    # PyTorch's MixtureSameFamilyConstraint: each value is checked against all K components
    # of its own batch row (the components' support alone broadcast the value along K)
    m = D.MixtureSameFamily(D.Categorical(_t([[0.25, 0.75], [0.25, 0.75]])),
                            D.Uniform(_t([[0.0, 1.0], [0.0, 2.0]]), _t([[2.0, 3.0], [2.0, 3.0]])))
    assert repr(m.support).startswith("MixtureSameFamilyConstraint(Interval(")
    with pytest.raises(ValueError, match="to be within the support"):
        m.log_prob(_t([1.0, 2.5]))  # 2.5 is outside row 1's [0, 2]
    # row 0: both densities 1/2; row 1: 2.0 is in both closed supports, and the densities
    # are 0 (Uniform(0, 2)'s log_prob is -inf at its high end, as PyTorch's) and 1
    _close(m.log_prob(_t([1.5, 2.0])), [math.log(0.5), math.log(0.75)])


def test_expand_of_mixture_and_relaxed_families():
    mix = D.MixtureSameFamily(D.Categorical(logits=_t([[0.1, 0.5, -1.0], [0.0, 0.2, 0.3]])),
                              D.Normal(_t([[0.0, 1.0, 2.0], [-1.0, 0.0, 3.0]]),
                                       _t([1.0, 2.0, 0.5])))
    dists = [mix,
             D.RelaxedBernoulli(_t(0.7), probs=_t([0.3, 0.6])),
             D.LogitRelaxedBernoulli(_t(0.7), logits=_t([0.3, -0.6])),
             D.RelaxedOneHotCategorical(_t(0.7), probs=_t([0.2, 0.3, 0.5])),
             D.ExpRelaxedCategorical(_t(0.7), logits=_t([0.2, 0.3, 0.5]))]
    tgrad.manual_seed(3)
    for d in dists:
        e = d.expand((4,) + d.batch_shape)
        assert type(e) is type(d) and e.batch_shape == (4,) + d.batch_shape
        assert e.event_shape == d.event_shape
        x = e.sample((5,))
        assert x.shape == (5, 4) + d.batch_shape + d.event_shape
        if d.has_rsample:
            assert e.rsample().shape == (4,) + d.batch_shape + d.event_shape
        want = np.broadcast_to(d.log_prob(x).numpy(), (5, 4) + d.batch_shape)
        np.testing.assert_array_equal(e.log_prob(x).numpy(), want)
    e = mix.expand((3, 2))  # the mixture's own batch dim grows too
    assert e.mixture_distribution.batch_shape == (3, 2)
    assert e.component_distribution.batch_shape == (3, 2, 3)


def test_positive_support_cdf_at_zero():
    # cdf(0) = 0 for LogNormal and Weibull (support x > 0; PyTorch checks the cdf's
    # argument against its closure), a negative value is still refused
    for d in (D.LogNormal(_t([0.0, 1.0]), 1.0), D.Weibull(_t([1.0, 2.0]), 1.5)):
        _close(d.cdf(_t([0.0, 0.0])), [0.0, 0.0])
        with pytest.raises(ValueError, match="GreaterThanEq"):
            d.cdf(_t([-1.0, 0.5]))
        with pytest.raises(ValueError):
            d.log_prob(_t([0.0, 0.5]))  # the density's support stays x > 0
    for d in (D.Exponential(_t(2.0)), D.Gamma(_t(2.0), _t(1.0)), D.HalfNormal(_t(1.0)),
              D.HalfCauchy(_t(1.0)), D.Pareto(_t(1.0), _t(2.0))):
        at = 1.0 if isinstance(d, D.Pareto) else 0.0
        assert d.cdf(_t(at)).item() == 0.0


def _quad(fn, lo, hi, n=400):
    """Gauss-Legendre quadrature of fn over [lo, hi] (NumPy float64)."""
    x, w = np.polynomial.legendre.leggauss(n)
    mid, half = (hi + lo) / 2, (hi - lo) / 2
    return float((w * fn(mid + half * x)).sum() * half)


_LOG_Q = {  # NumPy float64 log densities of q
    "Exponential": lambda x, r: math.log(r) - r * x,
    "Gamma": lambda x, a, b: a * math.log(b) + (a - 1) * np.log(x) - b * x - math.lgamma(a),
    "Gumbel": lambda x, m, b: -math.log(b) - (x - m) / b - np.exp(-(x - m) / b),
    "Pareto": lambda x, s, al: math.log(al) + al * math.log(s) - (al + 1) * np.log(x),
    "Beta": lambda x, a, b: ((a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - math.lgamma(a)
                             - math.lgamma(b) + math.lgamma(a + b)),
    "Normal": lambda x, m, s: -math.log(s * math.sqrt(2 * math.pi)) - (x - m) ** 2 / (2 * s * s),
}


def test_kl_uniform_against_quadrature():
    # KL(U(l, h) || q) = -log(h - l) - mean over [l, h] of log q
    cases = [("Exponential", (0.5, 2.0), (1.5,)), ("Gamma", (0.1, 3.0), (0.7, 2.0)),
             ("Gamma", (0.5, 2.0), (1.5, 0.5)), ("Gumbel", (-1.0, 1.0), (2.0, 1.0)),
             ("Pareto", (1.5, 2.0), (1.0, 0.5)), ("Beta", (0.1, 0.9), (1.5, 0.5)),
             ("Beta", (0.3, 0.5), (0.7, 2.0)), ("Normal", (-1.0, 2.0), (0.5, 1.5))]
    for name, (lo, hi), params in cases:
        mean_log_q = _quad(lambda x, n=name, pr=params: _LOG_Q[n](x, *pr), lo, hi) / (hi - lo)
        want = -math.log(hi - lo) - mean_log_q
        q = getattr(D, name)(*[_t(v) for v in params])
        got = D.kl_divergence(D.Uniform(_t(lo), _t(hi)), q).item()
        assert got == pytest.approx(want, rel=1e-9), (name, lo, hi, params)
    # l = 0 at the edge of the support: finite (0 log 0 = 0), the integral of log x
    u0 = D.Uniform(_t(0.0), _t(2.0))
    g = D.kl_divergence(u0, D.Gamma(_t(0.5), _t(1.0))).item()
    # -log 2 + lgamma(a) - a log b - (a - 1) E[log x] + b E[x], E[log x] = log 2 - 1 for
    # U(0, 2), E[x] = 1 (a = 0.5, b = 1)
    want = -math.log(2.0) + math.lgamma(0.5) + 0.5 * (math.log(2.0) - 1.0) + 1.0
    assert g == pytest.approx(want, rel=1e-14)
    # p's mass outside q's support: inf
    for q in (D.Exponential(_t(1.0)), D.Gamma(_t(2.0), _t(1.0)), D.Pareto(_t(1.0), _t(2.0)),
              D.Beta(_t(2.0), _t(2.0))):
        assert D.kl_divergence(D.Uniform(_t(-0.5), _t(0.5)), q).item() == math.inf
    assert D.kl_divergence(D.Uniform(_t(0.5), _t(1.5)), D.Beta(_t(2.0), _t(2.0))).item() \
        == math.inf


def test_kl_beta_against_quadrature():
    # KL(Beta(a, b) || q) = integral of p (log p - log q) over (0, 1)
    for a, b in ((2.5, 1.5), (2.0, 3.0)):
        def lp(x, a=a, b=b):
            return _LOG_Q["Beta"](x, a, b)
        for name, params in (("Exponential", (1.5,)), ("Gamma", (0.7, 2.0)),
                             ("Normal", (1.5, 0.3)), ("Uniform", (-1.0, 2.0))):
            if name == "Uniform":
                def lq(x, params=params):
                    return -math.log(params[1] - params[0]) + 0 * x
            else:
                def lq(x, name=name, params=params):
                    return _LOG_Q[name](x, *params)
            want = _quad(lambda x, lp=lp, lq=lq: np.exp(lp(x)) * (lp(x) - lq(x)), 0.0, 1.0,
                         2000)
            q = getattr(D, name)(*[_t(v) for v in params])
            got = D.kl_divergence(D.Beta(_t(a), _t(b)), q).item()
            assert got == pytest.approx(want, rel=1e-8), (a, b, name)


def test_kl_poisson_bernoulli_pairs():
    # Bernoulli(p) || Poisson(r): p log(p / (r e^-r)) + (1 - p) log((1 - p) / e^-r)
    for p, r in ((0.3, 1.5), (0.0, 0.7), (1.0, 2.0)):
        want = (p * math.log(p / (r * math.exp(-r))) if p else 0.0) + \
            ((1 - p) * math.log((1 - p) / math.exp(-r)) if p < 1 else 0.0)
        got = D.kl_divergence(D.Bernoulli(_t(p)), D.Poisson(_t(r))).item()
        assert got == pytest.approx(want, rel=1e-14)
    # a Poisson has mass at every k >= 0: inf against a bounded support
    kl = D.kl_divergence(D.Poisson(_t([0.3, 1.0])), D.Bernoulli(_t([0.5, 0.2])))
    assert kl.tolist() == [math.inf, math.inf]
    kl = D.kl_divergence(D.Poisson(_t([0.3, 1.0])), D.Binomial(5, _t([0.5, 0.2])))
    assert kl.tolist() == [math.inf, math.inf]


def test_sample_n_is_sample_of_n_with_a_future_warning():
    # PyTorch's deprecated Distribution.sample_n(n) = sample((n,)), FutureWarning
    for d in (D.Normal(_t([0.0, 1.0]), 1.0), D.Categorical(_t([[0.2, 0.8]] * 3)),
              D.MultivariateNormal(_t([0.0, 0.0]), scale_tril=_t(np.eye(2)))):
        with pytest.warns(FutureWarning, match=r"`sample_n\(n\)` will be deprecated"):
            s = d.sample_n(4)
        assert s.shape == (4,) + d.batch_shape + d.event_shape


def test_one_hot_straight_through_expand_keeps_its_class():
    d = D.OneHotCategoricalStraightThrough(_t([0.2, 0.3, 0.5]))
    e = d.expand((2,))
    assert type(e) is D.OneHotCategoricalStraightThrough and e.has_rsample
    assert e.batch_shape == (2,) and e.event_shape == (3,)
    p = _t([0.2, 0.3, 0.5], requires_grad=True)
    tgrad.manual_seed(0)
    x = D.OneHotCategoricalStraightThrough(p).expand((2,)).rsample()
    w = np.array([1.0, 2.0, 3.0])
    (x * _t(w)).sum().backward()
    # straight through the normalised probs q = p / sum(p) (sum 1 here), two rows:
    # d/dp_j = 2 (w_j - w . p)
    np.testing.assert_allclose(p.grad.numpy(), 2 * (w - w @ [0.2, 0.3, 0.5]), rtol=1e-12)


def test_half_cauchy_and_gamma_log_prob_take_the_parameter_dtype():
    # PyTorch casts the value to scale's (HalfCauchy) / rate's (Gamma) dtype
    x = np.array([0.0, 0.5, 2.0])
    s = np.float32(2.0)
    lp = D.HalfCauchy(tgrad.tensor([s])).log_prob(_t(x))
    assert lp.dtype == tgrad.float32
    np.testing.assert_allclose(lp.numpy(), np.log(2 / (np.pi * 2.0 * (1 + (x / 2.0) ** 2))),
                               rtol=1e-6)
    lp = D.Gamma(2, tgrad.tensor([np.float32(3.0)])).log_prob(_t(x[1:]))
    assert lp.dtype == tgrad.float32
    np.testing.assert_allclose(lp.numpy(), np.log(9.0 * x[1:]) - 3.0 * x[1:], rtol=1e-6,
                               atol=1e-6)
    assert D.Chi2(tgrad.tensor([np.float32(3.0)])).log_prob(_t([1.0])).dtype == tgrad.float32
    # the cast comes before validation there, so a Python float value is accepted
    g = D.Gamma(_t(2.0), _t(3.0), validate_args=True).log_prob(0.5)
    assert g.dtype == F64 and abs(g.item() - (math.log(4.5) - 1.5)) < 1e-14
    assert D.HalfNormal(_t([2.0])).log_prob(tgrad.tensor([0.5])).dtype == F64  # no cast


def test_uniform_arg_constraints_are_per_instance():
    u = D.Uniform(_t([0.0, 1.0]), _t([2.0, 3.0]))
    c = u.arg_constraints  # PyTorch: {"low": less_than(high), "high": greater_than(low)}
    assert repr(c["low"]).startswith("LessThan(upper_bound=")
    assert repr(c["high"]).startswith("GreaterThan(lower_bound=")
    assert c["low"].check(_t([1.9, 3.0])).tolist() == [True, False]
    assert c["high"].check(_t([0.0, 1.5])).tolist() == [False, True]
    e = u.expand((3, 2))
    assert e.arg_constraints["low"].check(_t(np.full((3, 2), 1.0))).all()
    with pytest.raises(ValueError, match=r"^Expected parameter low \(Tensor of shape \(\)\) of "
                                         r"distribution Uniform\(low: 1.0, high: 1.0\) to satisfy "
                                         r"the constraint LessThan\(upper_bound=1.0\)"):
        D.Uniform(1.0, 1.0)
    assert D.Uniform(1.0, 0.0, validate_args=False).low.item() == 1.0


def test_independent_enumerate_support_without_reinterpreted_dims():
    base = D.Bernoulli(_t([[0.3, 0.4]]))
    ind0 = D.Independent(base, 0)
    assert ind0.has_enumerate_support
    np.testing.assert_array_equal(ind0.enumerate_support().numpy(),
                                  np.array([0.0, 1.0]).reshape(2, 1, 1) * np.ones((2, 1, 2)))
    assert ind0.enumerate_support(expand=False).shape == (2, 1, 1)
    ind1 = D.Independent(base, 1)
    assert not ind1.has_enumerate_support
    with pytest.raises(NotImplementedError, match="cartesian product"):
        ind1.enumerate_support()
    assert not D.Independent(D.Normal(_t([0.0]), 1.0), 0).has_enumerate_support
