"""kl_divergence(p, q) and register_kl (PyTorch's ``torch.distributions.kl``).

KL(p || q) = E_p[log p(x) - log q(x)], of shape batch_shape (p's and q's broadcast). Rules
are looked up by the pair of types: among the registered pairs (P, Q) with p an instance of
P and q of Q, the most specific one (closest in p's MRO, then in q's) wins, so a subclass
uses its base's rule until it registers its own.

Closed forms registered here:

- Normal || Normal: log(s2 / s1) + (s1^2 + (m1 - m2)^2) / (2 s2^2) - 1/2;
- Bernoulli || Bernoulli: p (softplus(-l_q) - softplus(-l_p)) + (1 - p) (softplus(l_q) -
  softplus(l_p)) (l: logits), with p log(p/q) = inf where q = 0 < p and 0 where p = 0;
- Categorical || Categorical: sum_k p_k (log p_k - log q_k), same conventions at zeros;
- Exponential || Exponential: log(r1 / r2) + r2 / r1 - 1;
- Laplace || Laplace: log(b2 / b1) + |m1 - m2| / b2 + (b1 / b2) e^(-|m1 - m2| / b1) - 1;
- Uniform || Uniform: log((h2 - l2) / (h1 - l1)) if [l1, h1] lies in [l2, h2], else inf;
- MultivariateNormal || MultivariateNormal: sum log diag(L_q) - sum log diag(L_p) +
  (|L_q^{-1} L_p|_F^2 + |L_q^{-1}(m_q - m_p)|^2 - n) / 2;
- Uniform || Normal: -log(h - l) + log(sqrt(2 pi) s) + ((h - l)^2 / 12 + ((h + l) / 2 -
  m)^2) / (2 s^2);
- Gamma || Gamma: a_q log(b_p / b_q) + lgamma(a_q) - lgamma(a_p) + (a_p - a_q) psi(a_p)
  + (b_q - b_p) a_p / b_p;
- Beta || Beta and Dirichlet || Dirichlet: lgamma(A_p) - lgamma(A_q) - sum (lgamma(a_p)
  - lgamma(a_q)) + sum (a_p - a_q)(psi(a_p) - psi(A_p)), A = sum of the concentrations;
- Poisson || Poisson: r_p log(r_p / r_q) - r_p + r_q (r_q where r_p = 0);
- Binomial || Binomial (n_p >= n_q): n (p (l_p - l_q) + log1p(-p) - log1p(-q)), inf
  where n_p > n_q;
- Geometric || Geometric: -H(p) - log1p(-q) / p - l_q;
- LogNormal || LogNormal and HalfNormal || HalfNormal: their Normals' KL;
- Gumbel || Gumbel: log(b2 / b1) + gamma_e (b1 / b2 - 1) + (m1 - m2) / b2
  + e^((m2 - m1) / b2) Gamma(1 + b1 / b2) - 1;
- Pareto || Pareto: log(a1 / a2) + a2 log(s1 / s2) + a2 / a1 - 1 (inf where s1 < s2);
- Pareto || {Exponential, Gamma, Normal}: -H(p) - E_p[log q] with -H(p) = log(a / s) - 1
  - 1/a, E[log x] = log s + 1/a, E[x] = a s / (a - 1) and Var[x] = a s^2 / ((a - 1)^2
  (a - 2)); inf where a <= 1 (Normal: a <= 2), where those moments are infinite;
  Pareto || {Beta, Uniform} and Beta || Pareto: inf (PyTorch's);
- Cauchy || Cauchy: log(((s1 + s2)^2 + (m1 - m2)^2) / (4 s1 s2));
- across families, -H(p) - E_p[log q] with p's moments: Exponential || Gamma, Gamma ||
  Exponential, {Exponential, Gamma, Laplace, Gumbel} || Normal, {Normal, Exponential,
  Gamma} || Gumbel, Normal || Laplace, Beta || Uniform; and inf where p's support is not
  inside q's (the reals-supported families against the half-line or interval ones, the
  half-line ones against Beta, Pareto and Uniform; Poisson against Bernoulli and
  Binomial);
- Uniform || {Exponential, Gamma, Pareto, Beta, Gumbel}: -log(h - l) - E_p[log q] with
  E[x] = (h + l) / 2, E[log x] = (h log h - l log l) / (h - l) - 1 (xlogy: finite at
  l = 0, where PyTorch's is NaN), inf where [l, h] is not inside q's support;
- Beta || {Exponential, Gamma, Normal}: -H(p) - E_p[log q] with E[x] = a / (a + b),
  E[log x] = psi(a) - psi(a + b) and Beta's variance; Bernoulli || Poisson:
  -H(p) - (p log r - r).
- ContinuousBernoulli || ContinuousBernoulli: mean_p (l_p - l_q) + log C_p + log1p(-lam_p)
  - log C_q - log1p(-lam_q); {Beta, Uniform} || ContinuousBernoulli: -H(p) - E_p[x] l_q -
  log1p(-lam_q) - log C_q (Uniform: inf where [low, high] is not inside [0, 1]);
  ContinuousBernoulli || {Exponential, Normal, Uniform}: -H(p) - E_p[log q] (Uniform: inf
  where [0, 1] is not inside [low, high]); inf for the reals- and half-line-supported
  families and Pareto against ContinuousBernoulli, and ContinuousBernoulli || Pareto
  (PyTorch's). PyTorch's Uniform pairs also give inf when the intervals merely share an
  end (KL(ContinuousBernoulli || Uniform(0, 1)) = -H(p) here, inf there).
- LowRankMultivariateNormal || {LowRankMultivariateNormal, MultivariateNormal} and
  MultivariateNormal || LowRankMultivariateNormal: (log det S_q - log det S_p +
  tr(S_q^{-1} S_p) + |m_q - m_p|^2_{S_q^{-1}} - n) / 2 with the low-rank log-determinants
  and Woodbury inverses (PyTorch's expansions of the trace);
- TransformedDistribution || TransformedDistribution (e.g. InverseGamma || InverseGamma):
  KL(base_p || base_q) when both push their bases through equal transforms (compared with
  the transforms' __eq__) and have equal event shapes, since KL is invariant under a shared
  bijection; otherwise NotImplementedError (PyTorch's rule and conditions). It is
  registered in transformed_distribution.py, as Independent || Independent is in
  independent.py (that module imports this one);
- ExponentialFamily || ExponentialFamily of the same type (the fallback for a family with
  no closed form registered): the Bregman divergence of the log normaliser,
  F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>; different families raise
  NotImplementedError (PyTorch's message).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from tgrad.distributions.bernoulli import Bernoulli
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from tgrad.distributions.counts import Binomial, Poisson
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.exponential import Exponential
from tgrad.distributions.gamma import Beta, Dirichlet, Gamma
from tgrad.distributions.laplace import Laplace
from tgrad.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_mahalanobis,
)
from tgrad.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from tgrad.distributions.normal import Normal
from tgrad.distributions.scalar_families import (
    EULER_GAMMA,
    Cauchy,
    Geometric,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    LogNormal,
    Pareto,
    Weibull,
)
from tgrad.distributions.uniform import Uniform
from tgrad.linalg import solve_triangular
from tgrad.nn import functional as F
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import zeros
from tgrad.ops.extras import xlogy
from tgrad.ops.matmul import matmul
from tgrad.ops.shape import stack
from tgrad.ops.special import digamma, lgamma
from tgrad.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict[tuple[type, type], Callable] = {}
_KL_MEMOIZE: dict[tuple[type, type], Callable | None] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable], Callable]:
    """Decorator registering ``fn(p, q) -> Tensor`` as KL(p || q) for instances of
    ``type_p`` and ``type_q`` (Distribution subclasses)."""
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # a new rule may be more specific than a memoised one
        return fun

    return decorator


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    matches = [(type_p.__mro__.index(p), type_q.__mro__.index(q), p, q)
               for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    *_, p, q = min(matches, key=lambda m: (m[0], m[1]))
    return _KL_REGISTRY[p, q]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """KL(p || q) = E_p[log p(x) - log q(x)], batched over the distributions' broadcast
    batch_shape. Raises NotImplementedError for a pair of types with no registered rule."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _dispatch_kl(*key)
    fun = _KL_MEMOIZE[key]
    if fun is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - ew.log(var_ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = ew.where(p.probs == 0, 0.0, ew.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = ew.where(p.probs == 1, 0.0, ew.where(q.probs == 1, math.inf, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = ew.where(p.probs == 0, 0.0, ew.where(q.probs == 0, math.inf, t))
    return t.sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    rate_ratio = q.rate / p.rate
    return -ew.log(rate_ratio) + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    scale_ratio = p.scale / q.scale
    loc_abs_diff = ew.abs(p.loc - q.loc)
    t1 = -ew.log(scale_ratio)
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * ew.exp(-loc_abs_diff / p.scale)
    return t1 + t2 + t3 - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ew.log((q.high - q.low) / (p.high - p.low))
    return ew.where((q.low > p.low) | (q.high < p.high), math.inf, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    common_term = p.high - p.low
    t1 = ew.log(math.sqrt(math.pi * 2) * q.scale / common_term)
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with"
                         "                          different event shapes cannot be "
                         "computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (ew.log(lq.diagonal(0, -2, -1)).sum(-1)
                  - ew.log(lp.diagonal(0, -2, -1)).sum(-1))
    batch = tuple(np.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2])))
    n = p.event_shape[0]
    term2 = solve_triangular(lq.expand(*batch, n, n), lp.expand(*batch, n, n),
                             upper=False).pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    t1 = q.concentration * ew.log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


def _kl_dirichlet_terms(ap: Tensor, aq: Tensor) -> Tensor:
    """KL of Dirichlet(ap) from Dirichlet(aq), concentrations along the last dim."""
    sum_p, sum_q = ap.sum(-1), aq.sum(-1)
    t1 = lgamma(sum_p) - lgamma(sum_q)
    t2 = (lgamma(ap) - lgamma(aq)).sum(-1)
    t3 = (ap - aq) * (digamma(ap) - digamma(sum_p).unsqueeze(-1))
    return t1 - t2 + t3.sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    return _kl_dirichlet_terms(stack([p.concentration1, p.concentration0], -1),
                               stack([q.concentration1, q.concentration0], -1))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    return _kl_dirichlet_terms(p.concentration, q.concentration)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    # xlogy: 0 log(0 / r_q) = 0, so KL(Poisson(0) || Poisson(r_q)) = r_q
    return xlogy(p.rate, p.rate) - xlogy(p.rate, q.rate) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + ew.log1p(-p.probs)
                          - ew.log1p(-q.probs))
    return ew.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - ew.log1p(-q.probs) / p.probs - q.logits


# ------------------------------------------------------------------ more families (closed forms)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


@register_kl(LogNormal, LogNormal)
def _kl_lognormal_lognormal(p: LogNormal, q: LogNormal) -> Tensor:
    return _kl_normal_normal(p, q)  # the same loc / scale algebra (x -> log x is shared)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    return 0.5 * (var_ratio - 1 - ew.log(var_ratio))


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ct = p.scale / q.scale
    return (ew.log(q.scale / p.scale) + EULER_GAMMA * (ct - 1) + (p.loc - q.loc) / q.scale
            + ew.exp((q.loc - p.loc) / q.scale + lgamma(ct + 1)) - 1)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    kl = (ew.log(p.alpha / q.alpha) + q.alpha * ew.log(p.scale / q.scale)
          + q.alpha / p.alpha - 1)
    return ew.where(p.scale < q.scale, math.inf, kl)


def _pareto_moments(p: Pareto) -> tuple:
    """(-H(p), E[log x], E[x]) of Pareto(s, a): log p(x) = log a + a log s - (a + 1) log x,
    E[log x] = log s + 1/a, so -H = log(a / s) - 1 - 1/a; E[x] = a s / (a - 1) (inf for
    a <= 1)."""
    mean_log = ew.log(p.scale) + 1 / p.alpha
    neg_entropy = ew.log(p.alpha / p.scale) - 1 - 1 / p.alpha
    return neg_entropy, mean_log, p.alpha * p.scale / (p.alpha - 1)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p: Pareto, q: Exponential) -> Tensor:
    # -H(p) - log r + r E[x]; inf where a <= 1 (E[x] infinite)
    neg_h, _, mean = _pareto_moments(p)
    return ew.where(p.alpha <= 1, math.inf, neg_h - ew.log(q.rate) + q.rate * mean)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p: Pareto, q: Gamma) -> Tensor:
    # -H(p) + lgamma(k) - k log b - (k - 1) E[log x] + b E[x]; inf where a <= 1
    neg_h, mean_log, mean = _pareto_moments(p)
    k, b = q.concentration, q.rate
    kl = neg_h + lgamma(k) - k * ew.log(b) - (k - 1) * mean_log + b * mean
    return ew.where(p.alpha <= 1, math.inf, kl)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p: Pareto, q: Normal) -> Tensor:
    # -H(p) - E[log q] with Var[x] = a s^2 / ((a - 1)^2 (a - 2)); inf where a <= 2
    neg_h, _, mean = _pareto_moments(p)
    var = p.alpha * (p.scale / (p.alpha - 1)).pow(2) / (p.alpha - 2)
    return ew.where(p.alpha <= 2, math.inf, neg_h + _cross_normal(mean, var, q))


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return ew.log(((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2))
                  / (4 * p.scale * q.scale))


@register_kl(HalfCauchy, HalfCauchy)
def _kl_halfcauchy_halfcauchy(p: HalfCauchy, q: HalfCauchy) -> Tensor:
    """|Cauchy(0, s)| on both sides: the Cauchy pair's KL with both locations 0 (KL is
    invariant under the shared fold; PyTorch gets it from its TransformedDistribution
    rule, its HalfCauchy being one)."""
    return ew.log((p.scale + q.scale).pow(2) / (4 * p.scale * q.scale))


@register_kl(Weibull, Weibull)
def _kl_weibull_weibull(p: Weibull, q: Weibull) -> Tensor:
    """PyTorch's Weibull is Exponential(1) pushed through power and affine transforms, and
    its TransformedDistribution rule gives KL only for equal transforms: 0 when both have
    the same parameters (compared after broadcasting), else NotImplementedError."""
    if not (bool((p.scale == q.scale).all()) and bool(
            (p.concentration == q.concentration).all())):
        raise NotImplementedError(
            "KL(Weibull || Weibull) is implemented only for equal parameters (PyTorch "
            "derives it from its TransformedDistribution rule, which needs equal "
            "transforms)")
    shape = np.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return zeros(shape, dtype=p.scale.dtype, device=p.scale.device)


def _cross_normal(mean: Tensor, var: Tensor, q: Normal) -> Tensor:
    """-E_p[log q] for q = Normal(m, s), from p's mean and variance."""
    return ew.log(q.scale) + _LOG_SQRT_2PI + (var + (mean - q.loc).pow(2)) / (2 * q.scale.pow(2))


def _cross_gumbel(mean: Tensor, exp_neg: Tensor, q: Gumbel) -> Tensor:
    """-E_p[log q] for q = Gumbel(m, b): log b + E[z] + E[e^-z], z = (x - m) / b, given
    p's mean and ``exp_neg`` = E_p[e^(-x / b)]."""
    return ew.log(q.scale) + (mean - q.loc) / q.scale + ew.exp(q.loc / q.scale) * exp_neg


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    # E_p[log x] = -gamma_e - log r, E_p[x] = 1 / r
    r, a, b = p.rate, q.concentration, q.rate
    return (-p.entropy() - a * ew.log(b) + (a - 1) * (EULER_GAMMA + ew.log(r)) + b / r
            + lgamma(a))


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - ew.log(q.rate) + q.rate * p.concentration / p.rate


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    return -p.entropy() + _cross_normal(1 / p.rate, p.rate.pow(-2), q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p: Gamma, q: Normal) -> Tensor:
    a, b = p.concentration, p.rate
    return -p.entropy() + _cross_normal(a / b, a / b.pow(2), q)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p: Laplace, q: Normal) -> Tensor:
    return -p.entropy() + _cross_normal(p.loc, 2 * p.scale.pow(2), q)


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p: Gumbel, q: Normal) -> Tensor:
    mean = p.loc + EULER_GAMMA * p.scale
    return -p.entropy() + _cross_normal(mean, (math.pi * p.scale).pow(2) / 6, q)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    # E|x - m| for x ~ N(mu, s), d = mu - m: s sqrt(2/pi) e^(-d^2 / 2s^2) + d erf(d / (s sqrt 2))
    d, s = p.loc - q.loc, p.scale
    mean_abs = (s * math.sqrt(2 / math.pi) * ew.exp(-(d / s).pow(2) / 2)
                + d * ew.erf(d / (s * math.sqrt(2))))
    return -p.entropy() + ew.log(2 * q.scale) + mean_abs / q.scale


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p: Normal, q: Gumbel) -> Tensor:
    # E[e^(-x / b)] = e^(-mu / b + s^2 / (2 b^2))
    b = q.scale
    return -p.entropy() + _cross_gumbel(p.loc, ew.exp(-p.loc / b + (p.scale / b).pow(2) / 2), q)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p: Exponential, q: Gumbel) -> Tensor:
    # E[e^(-x / b)] = r / (r + 1 / b)
    r, b = p.rate, q.scale
    return -p.entropy() + _cross_gumbel(1 / r, r * b / (r * b + 1), q)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p: Gamma, q: Gumbel) -> Tensor:
    # E[e^(-x / b)] = (beta b / (beta b + 1))^a
    a, beta, b = p.concentration, p.rate, q.scale
    return -p.entropy() + _cross_gumbel(a / beta, (beta * b / (beta * b + 1)).pow(a), q)


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p: Beta, q: Uniform) -> Tensor:
    kl = -p.entropy() + ew.log(q.high - q.low)
    return ew.where((q.low > 0) | (q.high < 1), math.inf, kl)


def _mean_log_uniform(low: Tensor, high: Tensor) -> Tensor:
    """E[log x] for x ~ Uniform(low, high), 0 <= low: (h log h - l log l) / (h - l) - 1
    (xlogy: 0 log 0 = 0 at low = 0, where PyTorch's x log x is NaN)."""
    return (xlogy(high, high) - xlogy(low, low)) / (high - low) - 1


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    # -log(h - l) - log r + r E[x]; inf where low < 0
    kl = q.rate * (p.high + p.low) / 2 - ew.log((p.high - p.low) * q.rate)
    return ew.where(p.low < 0, math.inf, kl)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    # -log(h - l) + lgamma(a) - a log b - (a - 1) E[log x] + b E[x]; inf where low < 0
    a, b = q.concentration, q.rate
    low = ew.where(p.low < 0, 0.0, p.low)  # (keeps the logs of the branch not taken real)
    kl = (-ew.log(p.high - p.low) + lgamma(a) - a * ew.log(b)
          - (a - 1) * _mean_log_uniform(low, p.high) + b * (p.high + p.low) / 2)
    return ew.where(p.low < 0, math.inf, kl)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p: Uniform, q: Gumbel) -> Tensor:
    # -log(h - l) + log b + E[z] + E[e^-z], z = (x - m) / b:
    # E[e^-z] = b (e^-z_l - e^-z_h) / (h - l)
    c = q.scale / (p.high - p.low)
    zh, zl = (p.high - q.loc) / q.scale, (p.low - q.loc) / q.scale
    return ew.log(c) + 0.5 * (zh + zl) - c * (ew.exp(-zh) - ew.exp(-zl))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    # -log(h - l) - log(alpha s^alpha) + (alpha + 1) E[log x]; inf where low < s
    low = ew.where(p.low < q.scale, q.scale, p.low)
    kl = ((q.alpha + 1) * _mean_log_uniform(low, p.high)
          - ew.log(q.alpha * q.scale.pow(q.alpha) * (p.high - p.low)))
    return ew.where(p.low < q.scale, math.inf, kl)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    # -log(h - l) - (a - 1) E[log x] - (b - 1) E[log(1 - x)] + lbeta(a, b), with
    # E[log(1 - x)] the mean log of Uniform(1 - h, 1 - l); inf outside [0, 1]
    a, b = q.concentration1, q.concentration0
    out = (p.low < 0) | (p.high > 1)
    low, high = ew.where(out, 0.25, p.low), ew.where(out, 0.75, p.high)
    kl = (-ew.log(p.high - p.low) - (a - 1) * _mean_log_uniform(low, high)
          - (b - 1) * _mean_log_uniform(1 - high, 1 - low)
          + lgamma(a) + lgamma(b) - lgamma(a + b))
    return ew.where(out, math.inf, kl)


def _beta_mean_log(p: Beta) -> Tensor:
    """E[log x] for x ~ Beta(a, b): digamma(a) - digamma(a + b)."""
    return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p: Beta, q: Exponential) -> Tensor:
    return -p.entropy() - ew.log(q.rate) + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p: Beta, q: Gamma) -> Tensor:
    a, b = q.concentration, q.rate
    return (-p.entropy() + lgamma(a) - a * ew.log(b) - (a - 1) * _beta_mean_log(p)
            + b * p.mean)


@register_kl(Beta, Normal)
def _kl_beta_normal(p: Beta, q: Normal) -> Tensor:
    return -p.entropy() + _cross_normal(p.mean, p.variance, q)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    # E_p[log q] = p log r - r (log q(0) = -r, log q(1) = log r - r)
    return -p.entropy() - (p.probs * ew.log(q.rate) - q.rate)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p: ContinuousBernoulli,
                                                  q: ContinuousBernoulli) -> Tensor:
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + ew.log1p(-p.probs)
    t3 = -q._cont_bern_log_norm() - ew.log1p(-q.probs)
    return t1 + t2 + t3


def _minus_cross_log_cb(mean_x: Tensor, q: ContinuousBernoulli) -> Tensor:
    """-E_p[log q] for q continuous Bernoulli: log q(x) = x l + log1p(-lam) + log C."""
    return -mean_x * q.logits - ew.log1p(-q.probs) - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() + _minus_cross_log_cb(p.mean, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    result = -p.entropy() + _minus_cross_log_cb(p.mean, q)
    return ew.where((p.high > 1) | (p.low < 0), math.inf, result)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p: ContinuousBernoulli, q: Exponential) -> Tensor:
    return -p.entropy() - ew.log(q.rate) + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p: ContinuousBernoulli, q: Normal) -> Tensor:
    # -E_p[log q] = log(sqrt(2 pi) s) + (Var_p + (E_p - m)^2) / (2 s^2)
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).pow(2)) + ew.log(q.scale)
    t3 = (p.variance + p.mean.pow(2) - 2.0 * q.loc * p.mean) / (2.0 * q.scale.pow(2))
    return -p.entropy() + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p: ContinuousBernoulli, q: Uniform) -> Tensor:
    result = -p.entropy() + ew.log(q.high - q.low)
    return ew.where((q.low > 0) | (q.high < 1), math.inf, result)


def _batch_trace_XXT(X: Tensor) -> Tensor:  # noqa: N802, N803  (PyTorch's name)
    """tr(X X^T) = the sum of X's squared entries over its last two dims."""
    return X.pow(2).sum((-2, -1))


def _lowrank_q_terms(q: LowRankMultivariateNormal) -> Tensor:
    """A = L_C^{-1} W^T D^{-1} of q, so that Sigma_q^{-1} = diag(1 / D) - A^T A."""
    qwt_qdinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, qwt_qdinv, upper=False)


def _check_event_shapes(p: Distribution, q: Distribution) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two (Low Rank) Multivariate Normals with "
                         f"different event shapes ({p.event_shape} and {q.event_shape}) "
                         f"cannot be computed")


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal,
                        q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    term1 = q._log_det() - p._log_det()
    term3 = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor,
                                       q._unbroadcasted_cov_diag, q.loc - p.loc,
                                       q._capacitance_tril)
    # tr(Sigma_q^{-1} Sigma_p) = tr((diag(1 / q_d) - A^T A)(diag(p_d) + p_w p_w^T))
    a_mat = _lowrank_q_terms(q)
    p_w, p_d, q_d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, \
        q._unbroadcasted_cov_diag
    term21 = (p_d / q_d).sum(-1)
    term22 = _batch_trace_XXT(p_w * ew.rsqrt(q_d).unsqueeze(-1))
    term23 = _batch_trace_XXT(a_mat * p_d.sqrt().unsqueeze(-2))
    term24 = _batch_trace_XXT(matmul(a_mat, p_w))
    return 0.5 * (term1 + term21 + term22 - term23 - term24 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    lp = p._unbroadcasted_scale_tril
    term1 = q._log_det() - 2 * ew.log(lp.diagonal(0, -2, -1)).sum(-1)
    term3 = _batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor,
                                       q._unbroadcasted_cov_diag, q.loc - p.loc,
                                       q._capacitance_tril)
    # tr((diag(1 / q_d) - A^T A) Lp Lp^T)
    a_mat = _lowrank_q_terms(q)
    term21 = _batch_trace_XXT(lp * ew.rsqrt(q._unbroadcasted_cov_diag).unsqueeze(-1))
    term22 = _batch_trace_XXT(matmul(a_mat, lp))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    _check_event_shapes(p, q)
    lq = q._unbroadcasted_scale_tril
    term1 = 2 * ew.log(lq.diagonal(0, -2, -1)).sum(-1) - p._log_det()
    term3 = _batch_mahalanobis(lq, q.loc - p.loc)
    # tr(Lq^{-T} Lq^{-1} (p_w p_w^T + diag p_d)) = |Lq^{-1} p_w|_F^2 + |Lq^{-1} sqrt(p_d)|_F^2
    p_w = p._unbroadcasted_cov_factor
    batch = tuple(np.broadcast_shapes(tuple(lq.shape[:-2]), tuple(p_w.shape[:-2])))
    n, m = p.event_shape[0], p_w.shape[-1]
    lq_b = lq.expand(*batch, n, n)
    term21 = _batch_trace_XXT(solve_triangular(lq_b, p_w.expand(*batch, n, m), upper=False))
    p_diag = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(*batch, n, n)
    term22 = _batch_trace_XXT(solve_triangular(lq_b, p_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - n)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log normaliser F at the natural parameters (summed
    over q's event dims)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_nparams, lg_normal, gradients = p._bregman_terms()
    result = q._log_normalizer(*q._natural_params) - lg_normal
    n_batch = len(np.broadcast_shapes(p.batch_shape, q.batch_shape))
    for pnp, qnp, g in zip(p_nparams, q._natural_params, gradients):
        term = (qnp - pnp) * g
        if term.dim() > n_batch:  # a parameter with event dims (Dirichlet's, Wishart's
            term = term.sum(tuple(range(n_batch - term.dim(), 0)))  # matrix): summed
        result = result - term
    return result


def _infinite(p: Distribution, q: Distribution) -> Tensor:
    """KL = inf: p puts mass where q's density is 0 (batch shape of p and q broadcast)."""
    from tgrad.ops.creation import full
    shape = tuple(np.broadcast_shapes(p.batch_shape, q.batch_shape))
    like = next(iter(v for v in p.__dict__.values() if isinstance(v, Tensor)))
    return full(shape, math.inf, dtype=like.dtype, device=like.device)


for _p in (Normal, Laplace, Gumbel, Cauchy):  # supported on the reals
    for _q in (Exponential, Gamma, Pareto, Beta, Uniform, ContinuousBernoulli):
        register_kl(_p, _q)(_infinite)
for _p in (Exponential, Gamma, HalfNormal, LogNormal):  # on the half-line
    for _q in (Beta, Pareto, Uniform, ContinuousBernoulli):
        register_kl(_p, _q)(_infinite)
for _q in (Beta, Uniform, ContinuousBernoulli):  # Pareto's support is unbounded
    register_kl(Pareto, _q)(_infinite)
register_kl(Beta, Pareto)(_infinite)  # (0, 1) against [s, inf), s > 0
register_kl(ContinuousBernoulli, Pareto)(_infinite)
for _q in (Bernoulli, Binomial):  # Poisson's support is unbounded, theirs is not
    register_kl(Poisson, _q)(_infinite)
