"""Poisson, Binomial, NegativeBinomial, Multinomial, StudentT, FisherSnedecor and the KL
pairs added with them: log-densities, moments and entropies against float64 formulas written
with math.lgamma (and sums over the support); seeded samples against the exact pmf (a
chi-square statistic) or the known moments; gradcheck of log_prob in every parameter;
shapes, expand and argument validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck, gradgradcheck

F64 = tgrad.float64


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _close(got, want, rtol=1e-12, atol=1e-13):
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=rtol, atol=atol)


def _poisson_lp(k, r):
    return (k * math.log(r) if k else 0.0) - r - math.lgamma(k + 1)


def _binom_lp(k, n, p):
    lc = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    return lc + (k * math.log(p) if k else 0.0) + ((n - k) * math.log1p(-p) if n - k else 0.0)


def _negbin_lp(k, n, p):  # successes (prob p) before the n-th failure
    return (math.lgamma(n + k) - math.lgamma(k + 1) - math.lgamma(n)
            + k * math.log(p) + n * math.log1p(-p))


def _chi2_stat(draws: np.ndarray, pmf: np.ndarray) -> tuple[float, int]:
    """Pearson's statistic over the support cells expected to hold >= 20 draws."""
    expected = pmf * draws.size
    observed = np.bincount(draws.astype(np.int64), minlength=pmf.size)[:pmf.size]
    keep = expected >= 20
    return float(((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()), int(keep.sum())


# ---------------------------------------------------------------------------- Poisson
def test_poisson_closed_forms():
    rates, ks = [0.5, 3.0, 12.5, 100.0], [0.0, 2.0, 10.0, 93.0]
    d = D.Poisson(_t(rates))
    _close(d.log_prob(_t(ks)), [_poisson_lp(k, r) for k, r in zip(ks, rates)])
    _close(d.mean, rates)
    _close(d.variance, rates)
    _close(d.mode, np.floor(rates))
    _close(D.Poisson(_t(0.0)).log_prob(_t([0.0, 1.0])), [0.0, -np.inf])  # 0 log 0 = 0
    gradcheck(lambda r: D.Poisson(r).log_prob(_t(ks)), (_t(rates, requires_grad=True),))
    gradgradcheck(lambda r: D.Poisson(r).log_prob(_t(ks)), (_t(rates, requires_grad=True),))


@pytest.mark.parametrize("rate", [0.3, 4.0, 9.99, 10.0, 57.0])
def test_poisson_samples_follow_the_pmf(rate):
    tgrad.manual_seed(11)
    draws = D.Poisson(_t(rate)).sample((40000,)).numpy()
    assert draws.dtype == np.float64 and (draws == np.floor(draws)).all() and draws.min() >= 0
    ks = np.arange(int(rate * 3 + 30))
    pmf = np.exp([_poisson_lp(k, rate) for k in ks])
    stat, cells = _chi2_stat(draws, pmf)
    assert stat < cells + 5 * math.sqrt(2 * cells)  # chi2(cells - 1): mean + ~5 sd


def test_poisson_large_rate_moments_and_zero_rate():
    tgrad.manual_seed(3)
    draws = D.Poisson(_t([1e4, 0.0])).sample((20000,)).numpy()
    assert abs(draws[:, 0].mean() - 1e4) < 5 * math.sqrt(1e4 / 20000)
    assert abs(draws[:, 0].var() / 1e4 - 1) < 0.05
    assert (draws[:, 1] == 0).all()


def test_poisson_integer_rate_moments_but_no_samples():
    # PyTorch: the moments of an int64 rate are int64, sample() raises torch.poisson's error
    d = D.Poisson(tgrad.tensor([2, 5]))
    assert d.mean.dtype == tgrad.int64 and d.mean.tolist() == [2, 5]
    with pytest.raises(NotImplementedError, match="\"poisson_cpu\" not implemented for 'Long'"):
        d.sample()


# ---------------------------------------------------------------------------- Binomial
def test_binomial_closed_forms_probs_and_logits():
    n, p, k = [1.0, 5.0, 10.0, 40.0], [0.3, 0.5, 0.9, 0.05], [1.0, 2.0, 10.0, 3.0]
    want = [_binom_lp(kk, nn, pp) for kk, nn, pp in zip(k, n, p)]
    _close(D.Binomial(_t(n), _t(p)).log_prob(_t(k)), want)
    logits = np.log(np.array(p) / (1 - np.array(p)))
    _close(D.Binomial(_t(n), logits=_t(logits)).log_prob(_t(k)), want, rtol=1e-11)
    d = D.Binomial(_t(n), _t(p))
    _close(d.mean, np.multiply(n, p))
    _close(d.variance, np.multiply(n, p) * (1 - np.array(p)))
    _close(d.mode, np.minimum(np.floor((np.array(n) + 1) * p), n))
    # probabilities 0 and 1: the certain outcome has log-probability 0
    _close(D.Binomial(_t(4.0), _t([0.0, 1.0])).log_prob(_t([0.0, 4.0])), [0.0, 0.0], atol=1e-12)


def test_binomial_entropy_and_enumerate_support():
    p = np.array([0.2, 0.5, 0.7])
    d = D.Binomial(_t(6.0), _t(p))
    want = [-sum(math.exp(lp) * lp for lp in (_binom_lp(k, 6, q) for k in range(7))) for q in p]
    _close(d.entropy(), want)
    support = d.enumerate_support()
    assert support.shape == (7, 3)
    _close(support[:, 1], np.arange(7.0))
    assert d.enumerate_support(expand=False).shape == (7, 1)
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        D.Binomial(_t([2.0, 3.0]), _t(0.5)).entropy()


def test_binomial_gradients():
    k = _t([0.0, 3.0, 7.0])
    gradcheck(lambda p: D.Binomial(_t(7.0), p).log_prob(k), (_t([0.2, 0.5, 0.8],
                                                                requires_grad=True),))
    gradgradcheck(lambda lg: D.Binomial(_t(7.0), logits=lg).log_prob(k),
                  (_t([-1.0, 0.3, 2.0], requires_grad=True),))
    gradcheck(lambda p: D.Binomial(_t(4.0), p).entropy(), (_t([0.2, 0.6], requires_grad=True),))


@pytest.mark.parametrize("n,p", [(5, 0.3), (30, 0.2), (100, 0.5), (1000, 0.93), (60, 0.7)])
def test_binomial_samples_follow_the_pmf(n, p):
    # both samplers (waiting time below n min(p, 1-p) = 10, BTRS above) and the p > 1/2 flip
    tgrad.manual_seed(n)
    draws = D.Binomial(_t(float(n)), _t(p)).sample((40000,)).numpy()
    assert draws.min() >= 0 and draws.max() <= n and (draws == np.floor(draws)).all()
    pmf = np.exp([_binom_lp(k, n, p) for k in range(n + 1)])
    stat, cells = _chi2_stat(draws, pmf)
    assert stat < cells + 5 * math.sqrt(2 * cells)


def test_binomial_degenerate_samples_and_shapes():
    tgrad.manual_seed(0)
    d = D.Binomial(_t([[7.0], [0.0]]), _t([0.0, 1.0, 0.5]))
    assert d.batch_shape == (2, 3)
    s = d.sample((4,)).numpy()
    assert s.shape == (4, 2, 3)
    assert (s[:, 0, 0] == 0).all() and (s[:, 0, 1] == 7).all() and (s[:, 1] == 0).all()
    assert d.expand((5, 2, 3)).sample().shape == (5, 2, 3)
    assert D.Binomial(10, tgrad.tensor([0.3])).sample().dtype == tgrad.float32


# ---------------------------------------------------------------------------- NegativeBinomial
def test_negative_binomial_closed_forms_and_samples():
    n, p, k = [0.5, 2.0, 7.3], [0.2, 0.5, 0.7], [0.0, 3.0, 11.0]
    d = D.NegativeBinomial(_t(n), _t(p))
    _close(d.log_prob(_t(k)), [_negbin_lp(kk, nn, pp) for kk, nn, pp in zip(k, n, p)],
           rtol=1e-11)
    odds = np.array(p) / (1 - np.array(p))
    _close(d.mean, np.multiply(n, odds))
    _close(d.variance, np.multiply(n, odds) / (1 - np.array(p)))
    _close(d.mode, np.maximum(np.floor((np.array(n) - 1) * odds), 0))
    # total_count 0: all the mass at k = 0
    _close(D.NegativeBinomial(_t(0.0), _t(0.5)).log_prob(_t(0.0)), 0.0)
    gradcheck(lambda nn, pp: D.NegativeBinomial(nn, pp).log_prob(_t(k)),
              (_t(n, requires_grad=True), _t(p, requires_grad=True)))
    tgrad.manual_seed(5)
    draws = D.NegativeBinomial(_t(3.5), _t(0.4)).sample((40000,)).numpy()
    pmf = np.exp([_negbin_lp(kk, 3.5, 0.4) for kk in range(80)])
    stat, cells = _chi2_stat(draws, pmf)
    assert stat < cells + 5 * math.sqrt(2 * cells)


# ---------------------------------------------------------------------------- Multinomial
def test_multinomial_log_prob_entropy_and_moments():
    probs = np.array([[0.2, 0.3, 0.5], [0.0, 0.4, 0.6]])
    d = D.Multinomial(6, probs=_t(probs))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    v = np.array([[1.0, 2.0, 3.0], [0.0, 6.0, 0.0]])

    def lp(x, q):
        return (math.lgamma(sum(x) + 1) - sum(math.lgamma(c + 1) for c in x)
                + sum(c * math.log(pi) for c, pi in zip(x, q) if c))

    _close(d.log_prob(_t(v)), [lp(x, q) for x, q in zip(v, probs)])
    entropies = []
    for q in probs:  # -sum p log p over every count vector summing to 6
        h = 0.0
        for x in itertools.product(range(7), repeat=3):
            if sum(x) == 6 and all(c == 0 or pi > 0 for c, pi in zip(x, q)):
                h -= math.exp(lp(x, q)) * lp(x, q)
        entropies.append(h)
    _close(d.entropy(), entropies, rtol=1e-11)
    _close(d.mean, 6 * probs)
    _close(d.variance, 6 * probs * (1 - probs))
    logits = D.Multinomial(6, logits=_t(np.log([0.2, 0.3, 0.5])))
    _close(logits.log_prob(_t(v[0])), lp(v[0], probs[0]), rtol=1e-11)
    gradcheck(lambda lg: D.Multinomial(6, logits=lg).log_prob(_t(v[0])),
              (_t([0.1, -0.4, 0.9], requires_grad=True),))


def test_multinomial_samples():
    tgrad.manual_seed(2)
    d = D.Multinomial(6, probs=_t([[0.2, 0.3, 0.5], [0.0, 0.4, 0.6]]))
    s = d.sample((20000,)).numpy()
    assert s.shape == (20000, 2, 3)
    assert (s.sum(-1) == 6).all() and (s[:, 1, 0] == 0).all()
    np.testing.assert_allclose(s.mean(0), 6 * np.array([[0.2, 0.3, 0.5], [0.0, 0.4, 0.6]]),
                               atol=0.05)
    assert d.expand((4, 2)).sample((3,)).shape == (3, 4, 2, 3)
    assert D.Multinomial(0, probs=_t([0.5, 0.5])).sample((2,)).numpy().tolist() == [[0, 0]] * 2


# ---------------------------------------------------------------------------- StudentT, F
def test_student_t_closed_forms_and_gradients():
    df, loc, sc = [0.5, 1.5, 2.5, 7.0], [0.0, 1.0, -2.0, 3.0], [1.0, 0.5, 2.0, 3.0]
    x = [0.3, -1.0, 5.0, 2.0]
    d = D.StudentT(_t(df), _t(loc), _t(sc))
    want = [math.lgamma((v + 1) / 2) - math.lgamma(v / 2) - 0.5 * math.log(v * math.pi)
            - math.log(s) - (v + 1) / 2 * math.log1p(((xx - m) / s) ** 2 / v)
            for v, m, s, xx in zip(df, loc, sc, x)]
    _close(d.log_prob(_t(x)), want, rtol=1e-11)
    _close(d.mean, [np.nan, 1.0, -2.0, 3.0])
    _close(d.variance, [np.nan, np.inf, 4.0 * 2.5 / 0.5, 9.0 * 7 / 5])
    # entropy against a quadrature of -p log p (df = 7, scale 3)
    grid = np.linspace(-200, 200, 400001)
    lp = D.StudentT(_t(7.0), _t(0.0), _t(3.0)).log_prob(_t(grid)).numpy()
    h = -np.trapezoid(np.exp(lp) * lp, grid)
    _close(D.StudentT(_t(7.0), _t(0.0), _t(3.0)).entropy(), h, rtol=1e-7)
    args = (_t([2.5, 4.0], requires_grad=True), _t([0.1, -1.0], requires_grad=True),
            _t([1.5, 0.7], requires_grad=True))
    gradcheck(lambda a, b, c: D.StudentT(a, b, c).log_prob(_t([0.3, 2.0])), args)
    gradgradcheck(lambda a, b, c: D.StudentT(a, b, c).entropy(), args)


def test_student_t_and_fisher_snedecor_samples():
    tgrad.manual_seed(1)
    df = _t(5.0, requires_grad=True)
    s = D.StudentT(df, _t(1.0), _t(2.0)).rsample((100000,))
    v = s.detach().numpy()
    assert abs(v.mean() - 1.0) < 5 * math.sqrt(4 * 5 / 3 / 100000)
    assert abs(v.var() / (4 * 5 / 3) - 1) < 0.06
    s.abs().mean().backward()  # differentiable in df through the chi-square draws
    assert np.isfinite(df.grad.numpy()).all()
    f = D.FisherSnedecor(_t(5.0), _t(12.0)).rsample((100000,)).numpy()
    assert f.min() > 0 and abs(f.mean() - 1.2) < 0.02


def test_fisher_snedecor_closed_forms():
    d1, d2, x = [1.0, 3.0, 5.0, 10.0], [1.0, 3.0, 4.5, 12.0], [0.3, 1.0, 5.0, 2.0]
    d = D.FisherSnedecor(_t(d1), _t(d2))

    def lp(v, a, b):
        return (math.lgamma((a + b) / 2) - math.lgamma(a / 2) - math.lgamma(b / 2)
                + a / 2 * math.log(a / b) + (a / 2 - 1) * math.log(v)
                - (a + b) / 2 * math.log1p(a * v / b))

    _close(d.log_prob(_t(x)), [lp(*z) for z in zip(x, d1, d2)], rtol=1e-11)
    _close(d.mean, [np.nan, 3.0, 4.5 / 2.5, 12 / 10])
    _close(d.mode, [np.nan, 1 / 3 * 3 / 5, 3 / 5 * 4.5 / 6.5, 0.8 * 12 / 14])
    _close(d.variance, [np.nan, np.nan, 2 * 4.5 ** 2 * 7.5 / (5 * 2.5 ** 2 * 0.5),
                        2 * 144 * 20 / (10 * 100 * 8)])
    gradcheck(lambda a, b: D.FisherSnedecor(a, b).log_prob(_t(x)),
              (_t(d1, requires_grad=True), _t(d2, requires_grad=True)))


# ---------------------------------------------------------------------------- KL
def test_kl_pairs_against_sums_and_quadrature():
    # discrete: sum_k p(k) (log p(k) - log q(k)) over the (truncated) support
    ks = np.arange(200.0)

    def discrete_kl(p, q):
        lp, lq = p.log_prob(_t(ks)).numpy(), q.log_prob(_t(ks)).numpy()
        w = np.exp(lp)
        return float((w * np.where(w > 0, lp - lq, 0.0)).sum())

    for p, q in [(D.Poisson(_t(3.0)), D.Poisson(_t(5.5))),
                 (D.Geometric(_t(0.3)), D.Geometric(_t(0.6))),
                 (D.Binomial(_t(9.0), _t(0.3)), D.Binomial(_t(9.0), _t(0.7)))]:
        got = D.kl_divergence(p, q)
        sub = ks[:10] if isinstance(p, D.Binomial) else ks
        lp, lq = p.log_prob(_t(sub)).numpy(), q.log_prob(_t(sub)).numpy()
        _close(got, float((np.exp(lp) * (lp - lq)).sum()), rtol=1e-11)
    _close(D.kl_divergence(D.Poisson(_t(0.0)), D.Poisson(_t(2.0))), 2.0)
    _close(D.kl_divergence(D.Binomial(_t(9.0), _t(0.3)), D.Binomial(_t(5.0), _t(0.3))), np.inf)
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(D.Binomial(_t(2.0), _t(0.3)), D.Binomial(_t(5.0), _t(0.3)))
    # continuous: trapezoid quadrature of p (log p - log q)
    x = np.linspace(1e-9, 60, 600001)
    u = np.linspace(1e-9, 1 - 1e-9, 600001)
    for p, q, grid in [(D.Gamma(_t(2.0), _t(0.5)), D.Gamma(_t(3.5), _t(1.2)), x),
                       (D.Beta(_t(2.0), _t(3.0)), D.Beta(_t(1.5), _t(4.5)), u)]:
        lp, lq = p.log_prob(_t(grid)).numpy(), q.log_prob(_t(grid)).numpy()
        _close(D.kl_divergence(p, q), np.trapezoid(np.exp(lp) * (lp - lq), grid), rtol=1e-6)
    a, b = np.array([2.0, 3.0]), np.array([1.5, 4.5])  # Dirichlet on 2 classes = Beta
    _close(D.kl_divergence(D.Dirichlet(_t(a)), D.Dirichlet(_t(b))),
           D.kl_divergence(D.Beta(_t(2.0), _t(3.0)), D.Beta(_t(1.5), _t(4.5))).numpy())


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize("make", [
    lambda: D.Poisson(_t([-1.0])),
    lambda: D.Binomial(_t([2.5]), _t([0.3])),
    lambda: D.Binomial(_t([3.0]), _t([1.3])),
    lambda: D.Binomial(_t([3.0]), _t([0.3])).log_prob(_t([4.0])),
    lambda: D.Poisson(_t([1.0])).log_prob(_t([0.5])),
    lambda: D.Multinomial(3, probs=_t([0.2, 0.8])).log_prob(_t([2.0, 2.0])),
    lambda: D.NegativeBinomial(_t(2.0), probs=_t(1.0)),
    lambda: D.StudentT(_t(-1.0)),
    lambda: D.FisherSnedecor(_t(1.0), _t(0.0)),
    lambda: D.FisherSnedecor(_t(1.0), _t(2.0)).log_prob(_t(-1.0)),
])
def test_invalid_arguments_raise(make):
    with pytest.raises(ValueError, match="Expected"):
        make()


def test_multinomial_needs_an_int_total_count():
    with pytest.raises(NotImplementedError, match="total_count"):
        D.Multinomial(_t([2.0, 3.0]), probs=_t([0.5, 0.5]))


# ---------------------------------------------------------------------------- VonMises
def test_von_mises_density_entropy_and_samples():
    loc, k = _t([0.5, -2.0, 3.0]), _t([2.0, 0.3, 50.0])
    d = D.VonMises(loc, k)
    grid = np.linspace(-np.pi, np.pi, 200001)
    lp = d.log_prob(_t(grid[:, None])).numpy()  # (N, 3): normalised, so it integrates to 1
    np.testing.assert_allclose(np.trapezoid(np.exp(lp), grid, axis=0), 1.0, rtol=1e-12)
    _close(d.entropy(), -np.trapezoid(np.exp(lp) * lp, grid, axis=0), rtol=1e-10)
    circ = np.trapezoid(np.exp(lp) * np.cos(grid[:, None] - loc.numpy()), grid, axis=0)
    _close(d.variance, 1 - circ, rtol=1e-10)  # circular variance 1 - E cos(x - loc)
    _close(d.mean, loc.numpy())
    gradcheck(lambda a, b: D.VonMises(a, b).log_prob(_t([0.1, 2.5, -3.0])),
              (_t([0.5, -2.0, 3.0], requires_grad=True), _t([2.0, 0.3, 5.0], requires_grad=True)))
    tgrad.manual_seed(4)
    for kappa in (1e-6, 0.5, 4.0, 300.0):
        s = D.VonMises(_t(1.0), _t(kappa)).sample((40000,)).numpy()
        assert s.min() >= -np.pi and s.max() < np.pi
        r = np.mean(np.exp(1j * (s - 1.0)))  # the mean resultant, about loc
        want = D.VonMises(_t(1.0), _t(kappa)).variance.item()
        assert abs((1 - r.real) - want) < 5 / math.sqrt(40000)
        assert abs(r.imag) < 5 / math.sqrt(40000)
    assert D.VonMises(_t([0.0, 1.0]), _t(1.0)).expand((3, 2)).sample((4,)).shape == (4, 3, 2)
