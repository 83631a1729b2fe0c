"""The KL pairs beyond the same-family basics (tgrad/distributions/kl.py): each closed form
against a trapezoid quadrature of p (log p - log q) over p's support (the log-densities are
tested against their formulas elsewhere), the infinite pairs, and gradcheck of a few."""

from __future__ import annotations

import numpy as np
import pytest

import tgrad
import tgrad.distributions as D
from tgrad.autograd import gradcheck

F64 = tgrad.float64


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _quadrature_kl(p, q, grid: np.ndarray) -> float:
    lp = p.log_prob(_t(grid)).numpy()
    lq = q.log_prob(_t(grid)).numpy()
    w = np.exp(lp)
    return float(np.trapezoid(np.where(w > 0, w * (lp - lq), 0.0), grid))


REALS = np.linspace(-60, 60, 1200001)
HALF = np.concatenate([np.linspace(1e-12, 1e-3, 20001)[:-1], np.linspace(1e-3, 120, 1200001)])
UNIT = np.linspace(1e-12, 1 - 1e-12, 1000001)
PARETO = 1.5 * np.exp(np.linspace(0.0, np.log(2000.0), 2000001))  # fine where p is large

CASES = {
    "lognormal": (D.LogNormal(_t(0.3), _t(0.5)), D.LogNormal(_t(1.0), _t(0.7)), HALF),
    "halfnormal": (D.HalfNormal(_t(0.5)), D.HalfNormal(_t(1.5)), HALF),
    "gumbel": (D.Gumbel(_t(0.3), _t(0.5)), D.Gumbel(_t(1.0), _t(1.5)), REALS),
    "pareto": (D.Pareto(_t(1.5), _t(2.0)), D.Pareto(_t(1.0), _t(1.5)),
               np.linspace(1.5, 5000, 4000001)),
    "exponential_gamma": (D.Exponential(_t(0.5)), D.Gamma(_t(1.5), _t(2.0)), HALF),
    "gamma_exponential": (D.Gamma(_t(1.5), _t(2.0)), D.Exponential(_t(0.5)), HALF),
    "exponential_normal": (D.Exponential(_t(2.0)), D.Normal(_t(1.0), _t(1.5)), HALF),
    "gamma_normal": (D.Gamma(_t(2.5), _t(2.0)), D.Normal(_t(1.0), _t(0.7)), HALF),
    "laplace_normal": (D.Laplace(_t(0.3), _t(0.5)), D.Normal(_t(1.0), _t(1.5)), REALS),
    "gumbel_normal": (D.Gumbel(_t(0.3), _t(0.5)), D.Normal(_t(1.0), _t(1.5)), REALS),
    "normal_laplace": (D.Normal(_t(0.3), _t(0.5)), D.Laplace(_t(1.0), _t(1.5)), REALS),
    "normal_gumbel": (D.Normal(_t(0.3), _t(0.5)), D.Gumbel(_t(1.0), _t(1.5)), REALS),
    "exponential_gumbel": (D.Exponential(_t(2.0)), D.Gumbel(_t(1.0), _t(1.5)), HALF),
    "gamma_gumbel": (D.Gamma(_t(2.5), _t(2.0)), D.Gumbel(_t(1.0), _t(0.7)), HALF),
    "beta_uniform": (D.Beta(_t(2.5), _t(2.0)), D.Uniform(_t(-0.5), _t(1.5)), UNIT),
    # alpha 4.5: the tails p x^2 ~ x^-3.5 are negligible beyond the grid's end
    "pareto_exponential": (D.Pareto(_t(1.5), _t(4.5)), D.Exponential(_t(0.5)), PARETO),
    "pareto_gamma": (D.Pareto(_t(1.5), _t(4.5)), D.Gamma(_t(1.5), _t(2.0)), PARETO),
    "pareto_normal": (D.Pareto(_t(1.5), _t(4.5)), D.Normal(_t(1.0), _t(1.5)), PARETO),
}


@pytest.mark.parametrize("name", list(CASES))
def test_closed_form_matches_quadrature(name):
    p, q, grid = CASES[name]
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), _quadrature_kl(p, q, grid),
                               rtol=2e-6, atol=1e-9)


def test_cauchy_against_an_expectation_over_quantiles():
    # heavy tails: KL = int_0^1 (log p - log q)(F_p^-1(u)) du, by the midpoint rule in u
    p, q = D.Cauchy(_t(0.3), _t(0.5)), D.Cauchy(_t(1.0), _t(1.5))
    n = 2_000_000
    x = p.icdf(_t((np.arange(n) + 0.5) / n))
    want = float((p.log_prob(x) - q.log_prob(x)).numpy().mean())
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-7)


def test_infinite_pairs_and_batches():
    assert D.kl_divergence(D.Pareto(_t(1.0), _t(2.0)), D.Pareto(_t(1.5), _t(2.0))).item() \
        == np.inf  # p's support starts below q's
    assert D.kl_divergence(D.Beta(_t(2.0), _t(2.0)), D.Uniform(_t(0.1), _t(2.0))).item() \
        == np.inf
    # Pareto's mean is infinite for alpha <= 1, its variance for alpha <= 2
    alpha = _t([0.5, 1.0, 1.5, 2.0, 2.5])
    finite = {"Exponential": [0, 0, 1, 1, 1], "Gamma": [0, 0, 1, 1, 1], "Normal": [0, 0, 0, 0, 1]}
    for q in (D.Exponential(_t(0.5)), D.Gamma(_t(1.5), _t(2.0)), D.Normal(_t(1.0), _t(1.5))):
        kl = D.kl_divergence(D.Pareto(_t(1.0), alpha), q).numpy()
        np.testing.assert_array_equal(np.isfinite(kl), finite[type(q).__name__])
        assert (kl[~np.isfinite(kl)] == np.inf).all()
    for p, q in [(D.Normal(_t([0.0, 1.0]), _t(1.0)), D.Exponential(_t([[1.0], [2.0]]))),
                 (D.Gumbel(_t(0.0), _t(1.0)), D.Uniform(_t(0.0), _t(1.0))),
                 (D.Gamma(_t(2.0), _t(1.0)), D.Beta(_t(2.0), _t(2.0))),
                 (D.LogNormal(_t(0.0), _t(1.0)), D.Pareto(_t(1.0), _t(1.0))),
                 (D.Pareto(_t([1.0, 2.0]), _t(3.0)), D.Uniform(_t(0.0), _t(5.0))),
                 (D.Pareto(_t(1.0), _t(3.0)), D.Beta(_t([2.0, 1.0]), _t(2.0))),
                 (D.Beta(_t(2.0), _t(2.0)), D.Pareto(_t([[0.5], [1.0]]), _t(2.0)))]:
        kl = D.kl_divergence(p, q)
        assert kl.shape == tuple(np.broadcast_shapes(p.batch_shape, q.batch_shape))
        assert (kl.numpy() == np.inf).all()


def test_gradients():
    args = (_t([0.3, -1.0], requires_grad=True), _t([0.5, 2.0], requires_grad=True),
            _t([1.0, 0.0], requires_grad=True), _t([1.5, 0.7], requires_grad=True))
    for p_cls, q_cls in [(D.Gumbel, D.Gumbel), (D.Normal, D.Laplace), (D.Normal, D.Gumbel),
                         (D.Cauchy, D.Cauchy), (D.Laplace, D.Normal)]:
        def kl(a, b, c, d, p_cls=p_cls, q_cls=q_cls):
            return D.kl_divergence(p_cls(a, b), q_cls(c, d))
        assert gradcheck(kl, args)
    s, a = _t([1.5, 0.5], requires_grad=True), _t([4.5, 3.0], requires_grad=True)
    for q in (D.Exponential(_t(0.5)), D.Gamma(_t(1.5), _t(2.0)), D.Normal(_t(1.0), _t(1.5))):
        assert gradcheck(lambda s, a, q=q: D.kl_divergence(D.Pareto(s, a), q), (s, a))


def test_kl_halfcauchy_and_weibull_pairs():
    # PyTorch builds HalfCauchy and Weibull as transformed distributions and gets these
    # from its TransformedDistribution rule. Reference: the KL integral by quadrature
    # (NumPy float64) for HalfCauchy, 0 for equal Weibulls.
    s1, s2 = np.array([1.0, 3.0]), 2.0
    got = tgrad.distributions.kl_divergence(
        tgrad.distributions.HalfCauchy(tgrad.tensor(s1, dtype=tgrad.float64)),
        tgrad.distributions.HalfCauchy(tgrad.tensor(s2, dtype=tgrad.float64)))
    x = np.linspace(0.0, 2000.0, 2_000_001)
    for k, a in enumerate(s1):
        pa = 2 / (np.pi * a * (1 + (x / a) ** 2))
        pb = 2 / (np.pi * s2 * (1 + (x / s2) ** 2))
        trapezoid = getattr(np, "trapezoid", None) or np.trapz
        want = trapezoid(pa * np.log(pa / pb), x)  # (the tail past 2000 is ~1e-4)
        assert abs(got[k].item() - want) < 1e-3
    np.testing.assert_allclose(got.numpy(), np.log((s1 + s2) ** 2 / (4 * s1 * s2)),
                               rtol=1e-14)
    w = tgrad.distributions.Weibull(tgrad.tensor([1.0, 2.0]), 2.0)
    z = tgrad.distributions.kl_divergence(w, tgrad.distributions.Weibull(
        tgrad.tensor([1.0, 2.0]), 2.0))
    assert z.tolist() == [0.0, 0.0]
    with pytest.raises(NotImplementedError, match="equal parameters"):
        tgrad.distributions.kl_divergence(tgrad.distributions.Weibull(1.0, 2.0),
                                          tgrad.distributions.Weibull(1.0, 3.0))


def test_bernoulli_log_prob_promotes_a_floating_value():
    # PyTorch: float32 probs with a float64 value give float64 (tgrad cast the value down)
    p = np.float32(0.2)
    b = tgrad.distributions.Bernoulli(tgrad.tensor([p]))
    r = b.log_prob(tgrad.tensor([1.0, 0.0], dtype=tgrad.float64))
    assert r.dtype is tgrad.float64
    # (the logits are float32, as the parameter: the reference reads them back from b)
    lg = b.logits.numpy().astype(np.float64)[0]
    np.testing.assert_allclose(r.numpy(), [-np.log1p(np.exp(-lg)), -np.log1p(np.exp(lg))],
                               rtol=1e-14)
    assert b.log_prob(tgrad.tensor([1.0])).dtype is tgrad.float32
