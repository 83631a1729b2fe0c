"""tgrad.distributions: log_prob, cdf/icdf, entropy, mean, variance and KL divergences
against closed forms written directly in NumPy float64 (never through tgrad); gradients of
every one of them (and of rsample, reseeded per call) by gradcheck and gradgradcheck;
sample shapes and moments of seeded draws (tolerances of 5 standard errors); parameter
broadcasting; PyTorch's argument-validation errors."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import tgrad
from tgrad.autograd import gradcheck, gradgradcheck
from tgrad.distributions import (
    Bernoulli,
    Categorical,
    Distribution,
    Exponential,
    Laplace,
    Normal,
    Uniform,
    kl_divergence,
    register_kl,
)

F64 = tgrad.float64
_erf = np.vectorize(math.erf)


def _t(a, **kw):
    return tgrad.tensor(np.asarray(a, dtype=np.float64), dtype=F64, **kw)


def _np(t):
    return t.detach().double().numpy()


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---- NumPy float64 references -------------------------------------------------------------
# Each returns a dict of the quantities a family defines, from its parameters (NumPy
# arrays, already broadcast by NumPy) and a value.

def _ref_normal(p, x):
    m, s = p["loc"], p["scale"]
    z = (x - m) / s
    return {"log_prob": -0.5 * z ** 2 - np.log(s) - 0.5 * np.log(2 * np.pi),
            "entropy": 0.5 + 0.5 * np.log(2 * np.pi) + np.log(s),
            "mean": m, "variance": s ** 2, "stddev": s, "mode": m,
            "cdf": 0.5 * (1 + _erf(z / np.sqrt(2)))}


def _ref_uniform(p, x):
    lo, hi = p["low"], p["high"]
    inside = (lo <= x) & (x < hi)
    with np.errstate(divide="ignore"):
        lp = np.where(inside, -np.log(hi - lo), -np.inf)
    return {"log_prob": lp, "entropy": np.log(hi - lo), "mean": (lo + hi) / 2,
            "variance": (hi - lo) ** 2 / 12, "stddev": (hi - lo) / np.sqrt(12),
            "cdf": np.clip((x - lo) / (hi - lo), 0, 1)}


def _ref_exponential(p, x):
    r = p["rate"]
    return {"log_prob": np.log(r) - r * x, "entropy": 1 - np.log(r), "mean": 1 / r,
            "variance": 1 / r ** 2, "stddev": 1 / r, "mode": np.zeros_like(r),
            "cdf": 1 - np.exp(-r * x)}


def _ref_laplace(p, x):
    m, b = p["loc"], p["scale"]
    return {"log_prob": -np.log(2 * b) - np.abs(x - m) / b, "entropy": 1 + np.log(2 * b),
            "mean": m, "variance": 2 * b ** 2, "stddev": np.sqrt(2) * b, "mode": m,
            "cdf": np.where(x < m, 0.5 * np.exp((x - m) / b), 1 - 0.5 * np.exp(-(x - m) / b))}


def _bern_probs(p):
    return p["probs"] if "probs" in p else _sigmoid(p["logits"])


def _ref_bernoulli(p, x):
    q = _bern_probs(p)
    return {"log_prob": x * np.log(q) + (1 - x) * np.log(1 - q),
            "entropy": -q * np.log(q) - (1 - q) * np.log(1 - q),
            "mean": q, "variance": q * (1 - q), "stddev": np.sqrt(q * (1 - q))}


def _cat_probs(p):
    if "probs" in p:
        return p["probs"] / p["probs"].sum(-1, keepdims=True)
    e = np.exp(p["logits"] - p["logits"].max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _ref_categorical(p, x):
    q = _cat_probs(p)
    lp = np.log(np.take_along_axis(np.broadcast_to(q, x.shape + q.shape[-1:]),
                                   x[..., None].astype(np.int64), -1)[..., 0])
    nan = np.full(q.shape[:-1], np.nan)
    return {"log_prob": lp, "entropy": -(q * np.log(q)).sum(-1), "mean": nan,
            "variance": nan, "stddev": nan, "mode": q.argmax(-1)}


# name -> (class, params, value, reference). Parameters broadcast against each other.
CASES = {
    "Normal": (Normal, {"loc": [[-1.0], [0.5]], "scale": [0.5, 1.0, 3.0]},
               [[0.3, -1.2, 4.0], [0.5, 2.0, -3.0]], _ref_normal),
    "Uniform": (Uniform, {"low": [-1.0, 0.0, 2.0], "high": [1.0, 0.5, 5.0]},
                [0.3, 0.25, 4.5], _ref_uniform),
    "Exponential": (Exponential, {"rate": [0.5, 1.0, 4.0]}, [0.3, 2.0, 0.1],
                    _ref_exponential),
    "Laplace": (Laplace, {"loc": [-1.0, 0.5, 2.0], "scale": [0.5, 1.5, 3.0]},
                [0.3, 0.2, -4.0], _ref_laplace),
    "Bernoulli(probs)": (Bernoulli, {"probs": [0.2, 0.5, 0.9]}, [1.0, 0.0, 0.0],
                         _ref_bernoulli),
    "Bernoulli(logits)": (Bernoulli, {"logits": [-2.0, 0.3, 1.5]}, [1.0, 0.0, 1.0],
                          _ref_bernoulli),
    "Categorical(probs)": (Categorical, {"probs": [[0.2, 0.3, 0.5], [1.0, 2.0, 1.0]]},
                           [[2, 0], [1, 1]], _ref_categorical),
    "Categorical(logits)": (Categorical, {"logits": [[-1.0, 0.3, 2.0], [0.5, 0.5, -3.0]]},
                            [[2, 0], [1, 2]], _ref_categorical),
}
RSAMPLE_CASES = ["Normal", "Uniform", "Exponential", "Laplace"]


def _case(name):
    cls, params, value, ref = CASES[name]
    params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    value = np.asarray(value, dtype=np.int64 if cls is Categorical else np.float64)
    return cls, params, value, ref


def _value_tensor(value):
    if value.dtype == np.int64:
        return tgrad.tensor(value, dtype=tgrad.int64)
    return _t(value)


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_numpy_reference(name):
    cls, params, value, ref = _case(name)
    d = cls(**{k: _t(v) for k, v in params.items()})
    bparams = dict(zip(params, np.broadcast_arrays(*params.values())))
    expected = ref(bparams, value)
    np.testing.assert_allclose(_np(d.log_prob(_value_tensor(value))), expected["log_prob"],
                               rtol=1e-12, atol=1e-12)
    for key in ("entropy", "mean", "variance", "stddev", "mode", "cdf"):
        if key not in expected:
            continue
        got = d.cdf(_value_tensor(value)) if key == "cdf" else (
            d.entropy() if key == "entropy" else getattr(d, key))
        np.testing.assert_allclose(_np(got), expected[key], rtol=1e-12, atol=1e-12,
                                   err_msg=key)
    np.testing.assert_allclose(_np(d.perplexity()), np.exp(expected["entropy"]), rtol=1e-12)


@pytest.mark.parametrize("name", ["Uniform", "Exponential", "Laplace"])
def test_icdf_inverts_cdf(name):
    cls, params, value, _ = _case(name)
    d = cls(**{k: _t(v) for k, v in params.items()})
    np.testing.assert_allclose(_np(d.icdf(d.cdf(_t(value)))), value, rtol=1e-10)


def test_uniform_log_prob_outside_support_without_validation():
    d = Uniform(_t([0.0, 0.0]), _t([1.0, 1.0]), validate_args=False)
    assert _np(d.log_prob(_t([1.0, -0.5]))).tolist() == [-math.inf, -math.inf]
    assert _np(d.cdf(_t([2.0, -0.5]))).tolist() == [1.0, 0.0]


def test_bernoulli_mode_and_categorical_mode():
    np.testing.assert_array_equal(_np(Bernoulli(_t([0.2, 0.5, 0.7])).mode),
                                  [0.0, np.nan, 1.0])
    m = Categorical(_t([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]])).mode
    assert m.dtype is tgrad.int64 and m.tolist() == [1, 0]
    assert np.isnan(_np(Uniform(0.0, 1.0).mode)).all()


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_of_log_prob_entropy_and_moments(name):
    cls, params, value, _ = _case(name)
    names = list(params)
    inputs = tuple(_t(params[k], requires_grad=True) for k in names)
    v = _value_tensor(value)

    def make(*ts):
        return cls(**dict(zip(names, ts)))

    funcs = [lambda *ts: make(*ts).log_prob(v), lambda *ts: make(*ts).entropy()]
    if cls is not Categorical:  # its mean and variance are NaN constants
        funcs += [lambda *ts: make(*ts).mean, lambda *ts: make(*ts).variance,
                  lambda *ts: make(*ts).stddev]
    if cls in (Normal, Uniform, Exponential, Laplace):
        funcs.append(lambda *ts: make(*ts).cdf(v))
    if cls in (Uniform, Exponential, Laplace):
        u = _t(np.linspace(0.1, 0.8, value.size).reshape(value.shape))
        funcs.append(lambda *ts: make(*ts).icdf(u))
    for f in funcs:
        assert gradcheck(f, inputs)
        assert gradgradcheck(f, inputs)


@pytest.mark.parametrize("name", RSAMPLE_CASES)
def test_rsample_gradients(name):
    cls, params, _, _ = _case(name)
    names = list(params)
    inputs = tuple(_t(params[k], requires_grad=True) for k in names)

    def draw(*ts):
        tgrad.manual_seed(7)  # the same noise at every evaluation
        return cls(**dict(zip(names, ts))).rsample((4,))

    assert cls.has_rsample
    assert gradcheck(draw, inputs)
    assert gradgradcheck(draw, inputs)


def test_normal_rsample_is_loc_plus_scale_times_standard_normal():
    loc, scale = _t([1.0, -2.0], requires_grad=True), _t([0.5, 3.0], requires_grad=True)
    tgrad.manual_seed(11)
    x = Normal(loc, scale).rsample((5,))
    tgrad.manual_seed(11)
    z = _np(tgrad.randn(5, 2, dtype=F64))
    np.testing.assert_allclose(_np(x), np.array([1.0, -2.0]) + np.array([0.5, 3.0]) * z,
                               rtol=1e-14)
    assert x.requires_grad
    gl, gs = tgrad.autograd.grad(x.sum(), (loc, scale))
    np.testing.assert_allclose(_np(gl), [5.0, 5.0])
    np.testing.assert_allclose(_np(gs), z.sum(0), rtol=1e-12)


def test_sample_is_not_differentiable_and_discrete_have_no_rsample():
    loc = _t([0.0, 1.0], requires_grad=True)
    assert not Normal(loc, 1.0).sample((3,)).requires_grad
    assert not Bernoulli.has_rsample and not Categorical.has_rsample
    with pytest.raises(NotImplementedError):
        Bernoulli(_t([0.5])).rsample()
    with pytest.raises(NotImplementedError):
        Categorical(_t([0.5, 0.5])).rsample()


@pytest.mark.parametrize("name", list(CASES))
def test_sample_shapes(name):
    cls, params, _, _ = _case(name)
    d = cls(**{k: _t(v) for k, v in params.items()})
    batch = d.batch_shape
    assert d.event_shape == ()
    assert d.sample().shape == batch
    assert d.sample((5,)).shape == (5,) + batch
    assert d.sample((2, 3)).shape == (2, 3) + batch
    if cls.has_rsample:
        assert d.rsample((2, 3)).shape == (2, 3) + batch
    s = d.sample((4,))
    assert s.dtype is (tgrad.int64 if cls is Categorical else F64)


N = 20_000


def _check_moments(x, mean, var, m4):
    """x: (N, ...) draws; mean, var, central fourth moment m4: arrays of the batch shape.
    The sample mean is within 5 standard errors sqrt(var / N) of the mean, and the sample
    variance within 5 of its standard error sqrt((m4 - var^2) / N)."""
    assert np.all(np.abs(x.mean(0) - mean) < 5 * np.sqrt(var / N))
    assert np.all(np.abs(x.var(0) - var) < 5 * np.sqrt((m4 - var ** 2) / N))


def test_sample_moments_continuous():
    tgrad.manual_seed(2024)
    loc, scale = np.array([-1.0, 2.0]), np.array([0.5, 3.0])
    x = _np(Normal(_t(loc), _t(scale)).sample((N,)))
    _check_moments(x, loc, scale ** 2, 3 * scale ** 4)
    lo, hi = np.array([-1.0, 2.0]), np.array([1.0, 7.0])
    x = _np(Uniform(_t(lo), _t(hi)).sample((N,)))
    _check_moments(x, (lo + hi) / 2, (hi - lo) ** 2 / 12, (hi - lo) ** 4 / 80)
    assert np.all(x >= lo) and np.all(x < hi)
    r = np.array([0.5, 4.0])
    x = _np(Exponential(_t(r)).rsample((N,)))
    _check_moments(x, 1 / r, 1 / r ** 2, 9 / r ** 4)
    assert np.all(x >= 0)
    x = _np(Laplace(_t(loc), _t(scale)).rsample((N,)))
    _check_moments(x, loc, 2 * scale ** 2, 24 * scale ** 4)  # kurtosis 6


def test_sample_moments_discrete():
    tgrad.manual_seed(99)
    p = np.array([0.1, 0.5, 0.85])
    x = _np(Bernoulli(_t(p)).sample((N,)))
    assert set(np.unique(x)) <= {0.0, 1.0}
    # the sample variance of 0/1 draws is m (1 - m) of the sample mean m: only m is free
    assert np.all(np.abs(x.mean(0) - p) < 5 * np.sqrt(p * (1 - p) / N))
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    x = Categorical(_t(probs)).sample((N,)).numpy()
    assert x.shape == (N, 2) and x.min() >= 0 and x.max() <= 2
    for b in range(2):
        freq = np.bincount(x[:, b], minlength=3) / N
        assert np.all(np.abs(freq - probs[b]) < 5 * np.sqrt(probs[b] * (1 - probs[b]) / N))


def test_parameter_broadcasting_and_python_floats():
    d = Normal(_t([[0.0], [1.0]]), _t([1.0, 2.0, 3.0]))
    assert d.batch_shape == (2, 3) and d.loc.shape == (2, 3) and d.scale.shape == (2, 3)
    assert d.log_prob(_t(np.zeros((4, 2, 3)))).shape == (4, 2, 3)
    assert d.log_prob(_t(0.5)).shape == (2, 3)  # a value broadcast against the batch
    d = Normal(0.0, 1.0)
    assert d.batch_shape == () and d.loc.dtype is tgrad.get_default_dtype()
    assert d.sample((3,)).shape == (3,)
    d = Uniform(0.0, _t([1.0, 2.0]))
    assert d.batch_shape == (2,) and d.low.dtype is F64 and d.low.tolist() == [0.0, 0.0]
    assert Exponential(2.0).batch_shape == () and Bernoulli(logits=0.3).batch_shape == ()
    d = Categorical(logits=_t(np.zeros((2, 4))))
    assert d.batch_shape == (2,) and d.param_shape == (2, 4)
    assert Categorical(_t([0.5, 0.5])).batch_shape == ()
    with pytest.raises(ValueError, match="Input arguments must all be instances of"):
        Normal("0", 1.0)


def test_expand():
    d = Normal(_t([0.0, 1.0]), 2.0).expand((3, 2))
    assert d.batch_shape == (3, 2) and d.sample((4,)).shape == (4, 3, 2)
    np.testing.assert_allclose(_np(d.log_prob(_t(0.0)))[2],
                               _ref_normal({"loc": np.array([0.0, 1.0]),
                                            "scale": np.array([2.0, 2.0])},
                                           0.0)["log_prob"], rtol=1e-12)
    c = Categorical(logits=_t([0.0, 1.0, 2.0])).expand((5,))
    assert c.batch_shape == (5,) and c.logits.shape == (5, 3) and c.sample().shape == (5,)
    b = Bernoulli(probs=_t(0.3)).expand((2, 2))
    assert b.batch_shape == (2, 2) and b.probs.shape == (2, 2)
    for d in (Uniform(0.0, 1.0), Exponential(1.0), Laplace(0.0, 1.0)):
        assert d.expand((3,)).batch_shape == (3,)


# ---- KL divergences -------------------------------------------------------------------------

def _kl_normal(p, q):
    m1, s1, m2, s2 = p["loc"], p["scale"], q["loc"], q["scale"]
    return np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5


def _kl_bernoulli(p, q):
    a, b = _bern_probs(p), _bern_probs(q)
    return a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b))


def _kl_categorical(p, q):
    a, b = _cat_probs(p), _cat_probs(q)
    return (a * np.log(a / b)).sum(-1)


def _kl_exponential(p, q):
    r1, r2 = p["rate"], q["rate"]
    return np.log(r1 / r2) + r2 / r1 - 1


def _kl_laplace(p, q):
    m1, b1, m2, b2 = p["loc"], p["scale"], q["loc"], q["scale"]
    d = np.abs(m1 - m2)
    return np.log(b2 / b1) + d / b2 + (b1 / b2) * np.exp(-d / b1) - 1


def _kl_uniform(p, q):
    inside = (q["low"] <= p["low"]) & (p["high"] <= q["high"])
    return np.where(inside, np.log((q["high"] - q["low"]) / (p["high"] - p["low"])), np.inf)


def _kl_uniform_normal(p, q):
    # -H(U) - E_U[log N]: E_U[(x - m)^2] = (h - l)^2 / 12 + ((h + l) / 2 - m)^2
    lo, hi, m, s = p["low"], p["high"], q["loc"], q["scale"]
    second = (hi - lo) ** 2 / 12 + ((hi + lo) / 2 - m) ** 2
    return -np.log(hi - lo) + 0.5 * np.log(2 * np.pi * s ** 2) + second / (2 * s ** 2)


KL_CASES = {
    "Normal": (Normal, {"loc": [0.0, 1.0, -2.0], "scale": [1.0, 0.5, 2.0]},
               Normal, {"loc": [0.5, -1.0, -2.0], "scale": [2.0, 0.7, 1.0]}, _kl_normal),
    "Bernoulli": (Bernoulli, {"probs": [0.2, 0.5, 0.9]},
                  Bernoulli, {"logits": [0.3, -1.0, 2.0]}, _kl_bernoulli),
    "Categorical": (Categorical, {"probs": [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]]},
                    Categorical, {"logits": [[0.0, 1.0, -1.0], [2.0, 0.0, 0.5]]},
                    _kl_categorical),
    "Exponential": (Exponential, {"rate": [0.5, 1.0, 3.0]},
                    Exponential, {"rate": [2.0, 1.5, 0.2]}, _kl_exponential),
    "Laplace": (Laplace, {"loc": [0.0, 1.0, -2.0], "scale": [1.0, 0.5, 2.0]},
                Laplace, {"loc": [0.5, -1.0, -2.5], "scale": [2.0, 0.7, 1.0]}, _kl_laplace),
    "Uniform": (Uniform, {"low": [0.0, -1.0], "high": [1.0, 0.5]},
                Uniform, {"low": [-1.0, -2.0], "high": [2.0, 0.7]}, _kl_uniform),
    "Uniform-Normal": (Uniform, {"low": [0.0, -1.0], "high": [1.0, 0.5]},
                       Normal, {"loc": [0.3, 2.0], "scale": [1.5, 0.4]}, _kl_uniform_normal),
}


def _arrays(params):
    return {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_matches_numpy_and_gradients(name):
    cp, pp, cq, pq, ref = KL_CASES[name]
    pp, pq = _arrays(pp), _arrays(pq)
    kl = kl_divergence(cp(**{k: _t(v) for k, v in pp.items()}),
                       cq(**{k: _t(v) for k, v in pq.items()}))
    np.testing.assert_allclose(_np(kl), ref(pp, pq), rtol=1e-12, atol=1e-14)
    names = list(pp) + list(pq)
    inputs = tuple(_t(v, requires_grad=True) for v in list(pp.values()) + list(pq.values()))

    def f(*ts):
        p = cp(**dict(zip(names[:len(pp)], ts[:len(pp)])))
        return kl_divergence(p, cq(**dict(zip(names[len(pp):], ts[len(pp):]))))

    assert gradcheck(f, inputs)
    assert gradgradcheck(f, inputs)


def test_kl_of_a_distribution_with_itself_is_zero_and_infinite_cases():
    d = Normal(_t([0.0, 2.0]), _t([1.0, 3.0]))
    assert np.abs(_np(kl_divergence(d, d))).max() < 1e-15
    kl = kl_divergence(Uniform(_t([0.0, 0.0]), _t([1.0, 1.0])),
                       Uniform(_t([0.5, -1.0]), _t([2.0, 2.0])))
    assert _np(kl)[0] == math.inf and _np(kl)[1] == pytest.approx(math.log(3.0), rel=1e-14)
    # zero-probability categories: p = 0 contributes 0, q = 0 where p > 0 gives inf
    kl = kl_divergence(Categorical(_t([0.0, 0.5, 0.5])), Categorical(_t([0.25, 0.75, 0.0])))
    assert _np(kl) == math.inf
    kl = kl_divergence(Categorical(_t([0.0, 0.5, 0.5])), Categorical(_t([0.5, 0.25, 0.25])))
    assert _np(kl) == pytest.approx(math.log(2.0), rel=1e-14)
    kl = kl_divergence(Bernoulli(_t([0.0, 1.0, 0.3])), Bernoulli(_t([0.5, 0.5, 1.0])))
    np.testing.assert_allclose(_np(kl), [math.log(2.0), math.log(2.0), math.inf], rtol=1e-14)


def test_kl_monte_carlo_agrees_for_normal():
    tgrad.manual_seed(5)
    p, q = Normal(0.5, 1.5), Normal(-1.0, 2.0)
    x = p.sample((N,))
    mc = _np(p.log_prob(x) - q.log_prob(x))
    exact = _kl_normal({"loc": 0.5, "scale": 1.5}, {"loc": -1.0, "scale": 2.0})
    assert abs(mc.mean() - exact) < 5 * mc.std() / math.sqrt(N)


def test_kl_dispatch_and_register():
    with pytest.raises(NotImplementedError,
                       match=r"No KL\(p \|\| q\) is implemented for p type Normal and q "
                             r"type Categorical"):
        kl_divergence(Normal(0.0, 1.0), Categorical(_t([0.5, 0.5])))
    # two exponential families reach PyTorch's Bregman fallback, which needs one family
    with pytest.raises(NotImplementedError, match="different exponential families"):
        kl_divergence(Normal(0.0, 1.0), Bernoulli(0.5))

    class MyNormal(Normal):
        pass

    # a subclass uses its base's rule until it registers its own
    kl = kl_divergence(MyNormal(0.0, 1.0), Normal(1.0, 1.0))
    assert kl.item() == pytest.approx(0.5, rel=1e-6)

    @register_kl(MyNormal, Normal)
    def _kl_mine(p, q):
        return tgrad.tensor(-1.0)

    assert kl_divergence(MyNormal(0.0, 1.0), Normal(1.0, 1.0)).item() == -1.0
    assert kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        register_kl(int, Normal)


# ---- validation -----------------------------------------------------------------------------

def test_bad_parameters_raise_pytorch_messages():
    with pytest.raises(ValueError) as e:
        Normal(0.0, -1.0)
    assert str(e.value) == ("Expected parameter scale (Tensor of shape ()) of distribution "
                            "Normal(loc: 0.0, scale: -1.0) to satisfy the constraint "
                            "GreaterThan(lower_bound=0.0), but found invalid values:\n-1.0")
    with pytest.raises(ValueError, match=r"Expected parameter loc \(Tensor of shape \(2,\)\) "
                                         r"of distribution Normal\(loc: tgrad\.Size\(\[2\]\), "
                                         r"scale: tgrad\.Size\(\[2\]\)\)"
                                         r" to satisfy the constraint Real\(\)"):
        Normal(_t([0.0, math.nan]), 1.0)
    with pytest.raises(ValueError, match=r"constraint GreaterThan\(lower_bound=0.0\)"):
        Exponential(_t([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"constraint GreaterThan\(lower_bound=0.0\)"):
        Laplace(0.0, _t([1.0, -2.0]))
    with pytest.raises(ValueError, match=r"parameter probs .* constraint Interval\("
                                         r"lower_bound=0.0, upper_bound=1.0\)"):
        Bernoulli(probs=_t([0.5, 1.5]))
    with pytest.raises(ValueError, match=r"parameter probs .* constraint Simplex\(\)"):
        Categorical(probs=_t([-0.5, 1.5]))
    with pytest.raises(ValueError, match=r"parameter logits .* constraint "
                                         r"IndependentConstraint\(Real\(\), 1\)"):
        Categorical(logits=_t([0.0, math.nan]))
    # PyTorch 2.13: low < high through arg_constraints (less_than(high), greater_than(low))
    with pytest.raises(ValueError, match=r"^Expected parameter low \(Tensor of shape \(2,\)\) "
                                         r"of distribution Uniform\(low: tgrad\.Size\(\[2\]\), "
                                         r"high: tgrad\.Size\(\[2\]\)\) "
                                         r"to satisfy the constraint LessThan\(upper_bound="):
        Uniform(_t([0.0, 1.0]), _t([1.0, 1.0]))
    for cls in (Bernoulli, Categorical):
        with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, "
                                             "but not both."):
            cls(probs=_t([0.5]), logits=_t([0.0]))
        with pytest.raises(ValueError, match="Either `probs` or `logits`"):
            cls()
    with pytest.raises(ValueError, match="`probs` parameter must be at least one-dimensional."):
        Categorical(probs=_t(1.0))
    with pytest.raises(ValueError, match="`logits` parameter must be at least "
                                         "one-dimensional."):
        Categorical(logits=_t(1.0))
    # validate_args=False skips the checks
    assert Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    Uniform(1.0, 0.0, validate_args=False)


def test_bad_values_raise_pytorch_messages():
    d = Exponential(1.0)
    with pytest.raises(ValueError) as e:
        d.log_prob(tgrad.tensor(-1.0))
    assert str(e.value) == ("Expected value argument (Tensor of shape ()) to be within the "
                            "support (GreaterThanEq(lower_bound=0.0)) of the distribution "
                            "Exponential(rate: 1.0), but found invalid values:\n-1.0")
    with pytest.raises(ValueError, match="^The value argument to log_prob must be a Tensor$"):
        d.log_prob(1.0)
    with pytest.raises(ValueError, match=r"Value is not broadcastable with "
                                         r"batch_shape\+event_shape: \(2,\) vs \(3,\)."):
        Normal(_t([0.0, 1.0, 2.0]), 1.0).log_prob(_t([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"support \(Boolean\(\)\)"):
        Bernoulli(0.5).log_prob(tgrad.tensor(0.5))
    with pytest.raises(ValueError, match=r"support \(IntegerInterval\(lower_bound=0, "
                                         r"upper_bound=2\)\)"):
        Categorical(_t([0.2, 0.3, 0.5])).log_prob(tgrad.tensor(3))
    with pytest.raises(ValueError, match=r"support \(Interval\(lower_bound="):
        Uniform(0.0, 1.0).log_prob(tgrad.tensor(1.5))
    with pytest.raises(ValueError, match=r"support \(Real\(\)\)"):
        Normal(0.0, 1.0).log_prob(tgrad.tensor(math.nan))
    assert _np(Exponential(1.0, validate_args=False).log_prob(tgrad.tensor(-1.0))) == 1.0


def test_default_validation_switch_and_repr():
    # PyTorch's "Normal(loc: torch.Size([2]), scale: torch.Size([2]))" (Tensor.size())
    assert repr(Normal(_t([0.0, 1.0]), 1.0)) == ("Normal(loc: tgrad.Size([2]), "
                                                  "scale: tgrad.Size([2]))")
    assert repr(Bernoulli(logits=0.5)) == "Bernoulli(logits: 0.5)"
    # a 0-d tensor formats as its value (as torch's Tensor.__format__), others as tensors
    assert repr(Exponential(_t([2.0]))) == f"Exponential(rate: {_t([2.0])})"
    # a class-level dependent support (PyTorch's _DependentProperty; the first letter was cut)
    assert repr(tgrad.distributions.Uniform.support) == "DependentProperty()"
    try:
        Distribution.set_default_validate_args(False)
        assert Normal(0.0, -1.0).scale.item() == -1.0
    finally:
        Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        Distribution.set_default_validate_args("yes")


def test_reachable_as_attribute_of_tgrad():
    assert tgrad.distributions.Normal is Normal
    code = ("import sys, tgrad; d = tgrad.distributions.Normal(0.0, 1.0); "
            "print(type(d).__module__, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "tgrad.distributions.normal False"
    with pytest.raises(AttributeError, match="module 'tgrad' has no attribute 'nope'"):
        tgrad.nope  # noqa: B018


# ---- MultivariateNormal ---------------------------------------------------------------------
# References in NumPy float64: log p = -(n log 2 pi + d^T S^-1 d + log det S) / 2,
# H = (n (1 + log 2 pi) + log det S) / 2, KL = (tr(Sq^-1 Sp) + dm^T Sq^-1 dm - n
# + log det Sq - log det Sp) / 2.

from tgrad.distributions import MultivariateNormal  # noqa: E402

_MRNG = np.random.default_rng(11)


def _spd(n, batch=()):
    m = _MRNG.standard_normal(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def _mvn_ref_log_prob(loc, cov, x):
    d = x - loc
    n = loc.shape[-1]
    maha = np.einsum("...i,...i->...", d, np.linalg.solve(cov, d[..., None])[..., 0])
    return -0.5 * (n * np.log(2 * np.pi) + maha + np.linalg.slogdet(cov)[1])


def _mvn_ref_kl(mp, sp, mq, sq):
    n = mp.shape[-1]
    dm = mq - mp
    tr = np.trace(np.linalg.solve(sq, sp), axis1=-2, axis2=-1)
    maha = np.einsum("...i,...i->...", dm, np.linalg.solve(sq, dm[..., None])[..., 0])
    return 0.5 * (tr + maha - n + np.linalg.slogdet(sq)[1] - np.linalg.slogdet(sp)[1])


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
@pytest.mark.parametrize("n,batch", [(1, ()), (3, (2,)), (17, ())])
def test_mvn_values_match_numpy(param, n, batch):
    loc, cov = _MRNG.standard_normal(batch + (n,)), _spd(n, batch)
    arg = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov),
           "scale_tril": np.linalg.cholesky(cov)}[param]
    d = MultivariateNormal(_t(loc), **{param: _t(arg)})
    assert d.batch_shape == batch and d.event_shape == (n,)
    x = _MRNG.standard_normal((4,) + batch + (n,))
    np.testing.assert_allclose(_np(d.log_prob(_t(x))), _mvn_ref_log_prob(loc, cov, x),
                               rtol=1e-12, atol=1e-12)
    ent = 0.5 * (n * (1 + np.log(2 * np.pi)) + np.linalg.slogdet(cov)[1])
    np.testing.assert_allclose(_np(d.entropy()), ent, rtol=1e-12)
    assert d.entropy().shape == batch
    np.testing.assert_allclose(_np(d.mean), loc)
    np.testing.assert_allclose(_np(d.mode), loc)
    np.testing.assert_allclose(_np(d.variance), np.diagonal(cov, 0, -2, -1), rtol=1e-12)
    np.testing.assert_allclose(_np(d.covariance_matrix), cov, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_np(d.precision_matrix), np.linalg.inv(cov), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(_np(d.scale_tril), np.linalg.cholesky(cov), rtol=1e-12,
                               atol=1e-12)


def test_mvn_broadcasting_expand_and_sample_shapes():
    loc, cov = _MRNG.standard_normal((4, 1, 3)), _spd(3, (2,))
    d = MultivariateNormal(_t(loc), _t(cov))
    assert d.batch_shape == (4, 2) and d.event_shape == (3,)
    assert d.sample((5,)).shape == (5, 4, 2, 3) and d.rsample().shape == (4, 2, 3)
    x = _MRNG.standard_normal((2, 3))  # broadcast against the batch
    np.testing.assert_allclose(_np(d.log_prob(_t(x))),
                               _mvn_ref_log_prob(loc, cov, x), rtol=1e-12)
    e = MultivariateNormal(_t(loc[0, 0]), _t(cov[0])).expand((5, 2))
    assert e.batch_shape == (5, 2) and e.log_prob(_t(x)).shape == (5, 2)
    assert e.sample((3,)).shape == (3, 5, 2, 3)
    d32 = MultivariateNormal(tgrad.tensor(loc.astype(np.float32)),
                             tgrad.tensor(cov.astype(np.float32)))
    np.testing.assert_allclose(d32.log_prob(tgrad.tensor(x.astype(np.float32))).numpy(),
                               _mvn_ref_log_prob(loc, cov, x.astype(np.float32)),
                               rtol=1.3e-6, atol=1e-5)


def test_mvn_rsample_is_loc_plus_scale_tril_times_standard_normal_and_moments():
    loc, cov = np.array([1.0, -2.0, 0.5]), _spd(3)
    d = MultivariateNormal(_t(loc), _t(cov))
    tgrad.manual_seed(3)
    z = tgrad.randn((2, 3), dtype=F64)
    tgrad.manual_seed(3)
    np.testing.assert_allclose(_np(d.rsample((2,))),
                               loc + _np(z) @ np.linalg.cholesky(cov).T, rtol=1e-12)
    tgrad.manual_seed(4)
    x = _np(d.sample((N,)))
    se = np.sqrt(np.diagonal(cov) / N)
    assert np.all(np.abs(x.mean(0) - loc) < 5 * se)
    assert np.abs(np.cov(x.T) - cov).max() < 5 * np.sqrt(2 * np.diagonal(cov).max() ** 2 / N)


def test_mvn_gradients():
    loc = _t(_MRNG.standard_normal((2, 3)), requires_grad=True)
    cov = _t(_spd(3, (2,)), requires_grad=True)
    x = _t(_MRNG.standard_normal((2, 3)), requires_grad=True)

    def sym(c):
        return (c + c.mT) / 2

    def log_prob(m, c, v):
        return MultivariateNormal(m, sym(c)).log_prob(v)

    def entropy(c):
        return MultivariateNormal(tgrad.zeros(3, dtype=F64), sym(c)).entropy()

    def log_prob_precision(m, c, v):
        return MultivariateNormal(m, precision_matrix=sym(c)).log_prob(v)

    def log_prob_tril(m, c, v):
        return MultivariateNormal(m, scale_tril=c.tril()).log_prob(v)

    tril = _t(np.linalg.cholesky(cov.detach().numpy()), requires_grad=True)
    for f, args in [(log_prob, (loc, cov, x)), (entropy, (cov,)),
                    (log_prob_precision, (loc, cov, x)), (log_prob_tril, (loc, tril, x))]:
        assert gradcheck(f, args)
        assert gradgradcheck(f, args)

    def rsample(m, c):
        tgrad.manual_seed(9)
        return MultivariateNormal(m, scale_tril=c.tril()).rsample((2,))

    assert gradcheck(rsample, (loc, tril))
    assert gradgradcheck(rsample, (loc, tril))


def test_mvn_kl_matches_numpy_and_gradients():
    mp, sp = _MRNG.standard_normal((2, 3)), _spd(3, (2,))
    mq, sq = _MRNG.standard_normal(3), _spd(3)
    kl = kl_divergence(MultivariateNormal(_t(mp), _t(sp)), MultivariateNormal(_t(mq), _t(sq)))
    assert kl.shape == (2,)
    np.testing.assert_allclose(_np(kl), _mvn_ref_kl(mp, sp, mq, sq), rtol=1e-12, atol=1e-14)
    same = MultivariateNormal(_t(mq), _t(sq))
    assert abs(_np(kl_divergence(same, same))) < 1e-14

    def f(a, b, c, e):
        return kl_divergence(MultivariateNormal(a, (b + b.mT) / 2),
                             MultivariateNormal(c, scale_tril=e.tril()))

    args = (_t(mp, requires_grad=True), _t(sp, requires_grad=True),
            _t(mq, requires_grad=True), _t(np.linalg.cholesky(sq), requires_grad=True))
    assert gradcheck(f, args)
    assert gradgradcheck(f, args)


def test_mvn_errors_have_pytorch_messages():
    z2, eye2 = _t([0.0, 0.0]), _t(np.eye(2))
    with pytest.raises(ValueError, match=r"^Exactly one of covariance_matrix or "
                       r"precision_matrix or scale_tril may be specified\.$"):
        MultivariateNormal(z2)
    with pytest.raises(ValueError, match=r"^Exactly one of covariance_matrix"):
        MultivariateNormal(z2, eye2, scale_tril=eye2)
    with pytest.raises(ValueError, match=r"^loc must be at least one-dimensional\.$"):
        MultivariateNormal(_t(0.0), eye2)
    for kw in ("covariance_matrix", "precision_matrix"):
        with pytest.raises(ValueError, match=f"^{kw} must be at least two-dimensional, with "
                           f"optional leading batch dimensions$"):
            MultivariateNormal(z2, **{kw: z2})
    with pytest.raises(ValueError, match=r"^scale_tril matrix must be at least "
                       r"two-dimensional, with optional leading batch dimensions$"):
        MultivariateNormal(z2, scale_tril=z2)
    for bad in ([[1.0, 2.0], [2.0, 1.0]], [[1.0, 2.0], [0.0, 1.0]]):
        with pytest.raises(ValueError) as e:
            MultivariateNormal(z2, _t(bad))
        assert str(e.value).startswith(
            "Expected parameter covariance_matrix (Tensor of shape (2, 2)) of distribution "
            "MultivariateNormal(loc: tgrad.Size([2]), covariance_matrix: tgrad.Size([2, 2])) "
            "to satisfy the "
            "constraint PositiveDefinite(), but found invalid values:\n")
    for bad in ([[1.0, 2.0], [0.0, 1.0]], [[-1.0, 0.0], [0.0, 1.0]]):
        with pytest.raises(ValueError, match=r"to satisfy the constraint LowerCholesky\(\)"):
            MultivariateNormal(z2, scale_tril=_t(bad))
    with pytest.raises(ValueError, match=r"^KL-divergence between two Multivariate Normals "
                       r"with {26}different event shapes cannot be computed$"):
        kl_divergence(MultivariateNormal(z2, eye2),
                      MultivariateNormal(_t([0.0, 0.0, 0.0]), _t(np.eye(3))))
    with pytest.raises(ValueError, match=r"^The right-most size of value must match "
                       r"event_shape: \(3,\) vs \(2,\)\.$"):
        MultivariateNormal(z2, eye2).log_prob(_t([0.0, 0.0, 0.0]))
    with pytest.raises(RuntimeError, match="not positive-definite"):
        MultivariateNormal(z2, _t([[1.0, 2.0], [2.0, 1.0]]), validate_args=False)
