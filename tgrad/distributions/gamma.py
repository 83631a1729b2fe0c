"""``Gamma(concentration, rate)``, ``Chi2(df)`` (Gamma(df / 2, 1 / 2)), ``Beta`` and
``Dirichlet`` (normalised gamma draws), with reparameterised samples.

Sampling: standard gamma draws by Marsaglia and Tsang's rejection method (d = a - 1/3,
c = 1 / sqrt(9 d), x = d (1 + c z)^3 accepted when log u < z^2 / 2 + d - d v + d log v),
a < 1 through gamma(a + 1) u^(1/a); a vectorised loop over tgrad ops until every element is
accepted (acceptance > 95%), on any device.

Gradient (implicit reparameterisation): x = F^-1(u; a) gives
    dx/da = -(dP(a, x)/da) / p(x; a),   p(x; a) = x^(a-1) e^-x / Gamma(a),
with dP/da computed exactly (to rounding) by differentiating the series / continued
fraction of the regularized incomplete gamma P term by term (tgrad/ops/incomplete_gamma.py's
branches), and, where gammainc uses Temme's uniform expansion (a > 20, x / a in [0.3, 2.2]),
as the derivative of that expansion (autograd through its ops): ~1e-12 relative at any
concentration, instead of PyTorch's rational approximations; d(x / rate)/d rate follows by
the chain rule.

    log p(x) = a log b + (a - 1) log x - b x - lgamma(a);  mean a / b;  variance a / b^2;
    mode (a - 1) / b (0 for a < 1);  H = a - log b + lgamma(a) + (1 - a) digamma(a);
    cdf = P(a, b x)
"""

from __future__ import annotations

from collections.abc import Sequence

from tgrad.autograd import grad
from tgrad.autograd.function import Function
from tgrad.autograd.grad_mode import enable_grad
from tgrad.distributions import constraints
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.utils import broadcast_all, in_float64
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import arange, as_tensor, rand, randn
from tgrad.ops.extras import xlogy
from tgrad.ops.incomplete_gamma import _temme, converge, igamma, small_vs, uniform_region
from tgrad.ops.shape import stack
from tgrad.ops.special import digamma, lgamma, xlog1py
from tgrad.tensor import Tensor

__all__ = ["Gamma", "Chi2", "Beta", "Dirichlet"]


def _marsaglia_tsang(a: Tensor) -> Tensor:
    """Standard gamma draws of shape a.shape for a >= 1 (no graph)."""
    d = a - 1.0 / 3.0
    c = 1.0 / ew.sqrt(9.0 * d)
    out = a * 0.0
    todo = a >= 0  # every element still to draw
    for _ in range(100):
        z = randn(a.shape, dtype=a.dtype, device=a.device)
        u = rand(a.shape, dtype=a.dtype, device=a.device)
        v = (1.0 + c * z) ** 3
        ok = (v > 0) & (ew.log(u) < 0.5 * z * z + d - d * v + d * ew.log(ew.where(v > 0, v,
                                                                                  1.0)))
        take = todo & ok
        out = ew.where(take, d * v, out)
        todo = todo & ~ok
        if not bool(todo.any()):
            return out
    raise RuntimeError("gamma sampling: rejection did not finish in 100 rounds")


def _standard_gamma_draw(a: Tensor) -> Tensor:
    """Standard gamma draws (no graph), any a > 0."""
    small = a < 1
    x = _marsaglia_tsang(ew.where(small, a + 1.0, a))
    u = rand(a.shape, dtype=a.dtype, device=a.device)
    boost = ew.exp(ew.log(u) / ew.where(small, a, 1.0))
    return ew.where(small, x * boost, x)


def _log_standard_gamma_draw(a: Tensor) -> Tensor:
    """log of standard gamma draws (no graph), any a > 0: for a < 1, log gamma(a + 1) +
    log(u) / a, which stays finite where gamma(a + 1) u^(1/a) underflows (a = 0.01: below
    float32's smallest normal for u < 0.42)."""
    small = a < 1
    x = _marsaglia_tsang(ew.where(small, a + 1.0, a))
    u = rand(a.shape, dtype=a.dtype, device=a.device)
    tiny = 1e-300 if a.dtype.itemsize == 8 else 1e-30
    boost = ew.log(u.clamp(min=tiny)) / ew.where(small, a, 1.0)
    return ew.where(small, ew.log(x) + boost, ew.log(x))


def _dp_da(a: Tensor, x: Tensor) -> Tensor:
    """d P(a, x) / d a: the series (x < a + 1) and the continued fraction for Q = 1 - P,
    differentiated term by term."""
    use_series = x < a + 1
    # series: P = exp(log_pre) * S,  S = sum_n t_n,  t_0 = 1/a,  t_n = t_{n-1} x / (a + n)
    xs = ew.where(use_series, x, 0.5 * a)

    def series_step(n: int, st: dict) -> None:
        a, t, xs = st["a"], st["t"], st["x"]
        st["dt"] = dt = st["dt"] * xs / (a + n) - t * xs / (a + n) ** 2
        st["t"] = t = t * xs / (a + n)
        st["s"], st["ds"] = st["s"] + t, st["ds"] + dt

    t = 1.0 / a
    s, ds = converge(series_step, {"a": a, "x": xs, "t": t, "dt": -t / a, "s": t, "ds": -t / a},
                     lambda st: small_vs(st["dt"], st["ds"]) & small_vs(st["t"], st["s"]),
                     ("s", "ds"))
    pre_s = ew.exp(a * ew.log(xs) - xs - lgamma(a))
    dseries = pre_s * (s * (ew.log(xs) - digamma(a)) + ds)
    # continued fraction for Q (modified Lentz), carrying d/da of b, c, d and h
    xc = ew.where(use_series, a + 2.0, x)
    tiny = 1e-300 if a.dtype.itemsize == 8 else 1e-30
    b = xc + 1.0 - a

    def fraction_step(i: int, st: dict) -> None:
        a, d, dd, c, dc = st["a"], st["d"], st["dd"], st["c"], st["dc"]
        # dan = d an / da = i, as a tensor: dan / c then divides (a number over a tensor
        # would multiply by 1 / c, an ulp apart)
        an, dan = -i * (i - a), float(i) + 0.0 * a
        st["b"] = b = st["b"] + 2.0
        dden = dan * d + an * dd - 1.0  # db = d(x + 1 - a + 2 i)/da = -1
        den = an * d + b
        d, dd = 1.0 / den, -dden / (den * den)
        c, dc = b + an / c, -1.0 + dan / c - an * dc / (c * c)
        st["d"], st["dd"], st["c"], st["dc"] = d, dd, c, dc
        st["prev_dh"], h, dh = st["dh"], st["h"], st["dh"]
        st["h"], st["dh"] = h * d * c, dh * d * c + h * dd * c + h * d * dc

    d = 1.0 / b
    dd = 1.0 / (b * b)  # -db / b^2 with db = -1
    zero = 0.0 * a
    h, dh = converge(fraction_step, {"a": a, "b": b, "c": 1.0 / tiny + zero, "dc": zero,
                                     "d": d, "dd": dd, "h": d, "dh": dd, "prev_dh": dd},
                     lambda st: small_vs(st["d"] * st["c"] - 1.0, 1.0)
                     & small_vs(st["dh"] - st["prev_dh"], st["dh"]), ("h", "dh"))
    pre_c = ew.exp(a * ew.log(xc) - xc - lgamma(a))
    dq = pre_c * (h * (ew.log(xc) - digamma(a)) + dh)
    out = ew.where(use_series, dseries, -dq)
    # Where gammainc uses Temme's uniform expansion (a > 20, x/a in [0.3, 2.2]: the loops
    # above would need O(sqrt(a)) terms, more than the 300 terms past a ~ 2000), dP/da is the
    # derivative of that expansion, taken by autograd through its ops.
    uniform = uniform_region(a, x)
    if bool(uniform.any()):
        with enable_grad():
            at = ew.where(uniform, a, 100.0).detach().requires_grad_()
            p, _ = _temme(at, ew.where(uniform, x, 100.0))
            (dp,) = grad(p.sum(), at)
        out = ew.where(uniform, dp, out)
    return out


def _dx_da(a: Tensor, x: Tensor) -> Tensor:
    """dx/da = -(dP/da) / p(x; a) of standard gamma draws x (float64 inputs)."""
    safe_x = ew.where(x > 0, x, 1e-300)
    log_pdf = (a - 1) * ew.log(safe_x) - safe_x - lgamma(a)
    return -_dp_da(a, safe_x) / ew.exp(log_pdf)


def _dlog_x_da(a: Tensor, log_x: Tensor) -> Tensor:
    """d log x / da of log-space draws (float64 inputs; see _LogStandardGamma)."""
    first_term = log_x < -36.04  # x < 2.2e-16, float64's eps
    x = ew.exp(ew.where(first_term, 0.0, log_x))
    log_xp = a * ew.log(x) - x - lgamma(a)  # log(x p(x; a))
    series = -_dp_da(a, x) / ew.exp(log_xp)
    tail = -(log_x - digamma(a + 1.0)) / a
    return ew.where(first_term, tail, series)


class _StandardGamma(Function):
    """x ~ Gamma(a, 1) with the implicit reparameterisation gradient."""

    @staticmethod
    def forward(ctx, a):
        x = _standard_gamma_draw(a)
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    def backward(ctx, g):
        # in float64 whatever the dtype: log p(x; a) is a difference of terms ~a log a
        # (a float32 a = 1e6 lost its value to rounding; the mean of dx/da read 1.7)
        return g * in_float64(_dx_da, *ctx.saved_tensors)


class _LogStandardGamma(Function):
    """log x, x ~ Gamma(a, 1), drawn in log space (no underflow at small a), with the
    implicit reparameterisation gradient of log x:
        d log x / da = -(dP(a, x)/da) / (x p(x; a)).
    Where x < eps, P's series is its first term to rounding (t_1 / t_0 = x / (a + 1)):
    P = x^a e^-x / Gamma(a + 1), so d log x / da = -(log x - digamma(a + 1)) / a, taken from
    log x itself (x may have underflowed)."""

    @staticmethod
    def forward(ctx, a):
        log_x = _log_standard_gamma_draw(a)
        ctx.save_for_backward(a, log_x)
        return log_x

    @staticmethod
    def backward(ctx, g):
        return g * in_float64(_dlog_x_da, *ctx.saved_tensors)  # as _StandardGamma


def _normalized_log_gamma(log_g: Tensor, dim: int) -> Tensor:
    """g / g.sum(dim) from log g, scaled by the largest (detached: the ratio does not depend
    on it) so that nothing underflows to 0 / 0; the gradient flows through exp."""
    g = ew.exp(log_g - log_g.amax(dim, keepdim=True).detach())
    return g / g.sum(dim, keepdim=True)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` a > 0 and ``rate`` b > 0
    (module docstring)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(tuple(self.concentration.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ew.relu(self.concentration - 1) / self.rate

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        a = self.concentration.expand(tuple(shape))
        x = _StandardGamma.apply(a) / self.rate.expand(tuple(shape))
        tiny = 1e-300 if x.dtype.itemsize == 8 else 1e-30
        return x.clamp(min=tiny)  # PyTorch clamps to the smallest normal too

    def log_prob(self, value: Tensor) -> Tensor:
        # PyTorch casts the value to rate's dtype first (a float64 value of a float32 Gamma
        # gives float32; a Python float is accepted)
        value = as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        # xlogy: (a - 1) log x is 0 at a = 1, x = 0 (the density e^-bx b is finite there)
        return xlogy(a, b) + xlogy(a - 1, value) - b * value - lgamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        x = value * self.rate
        return igamma(self.concentration.expand(tuple(x.shape)), x)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - ew.log(self.rate) + lgamma(a) + (1.0 - a) * digamma(a)

    _mean_carrier_measure = 0

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        """F(theta1, theta2) = lgamma(theta1 + 1) + (theta1 + 1) log(-1 / theta2)."""
        return lgamma(x + 1) + (x + 1) * ew.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2)."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5 + 0.0 * df, validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2

    def expand(self, batch_shape: Sequence[int], _instance=None) -> Chi2:
        new = super().expand(batch_shape, _instance)  # (df is not stored: a property)
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new.rate = self.rate.expand(tuple(batch_shape))
        return new


def _dirichlet_mode(a: Tensor) -> Tensor:
    """The mode of Dirichlet(a) over the last dim (see Dirichlet.mode)."""
    excess = ew.relu(a - 1)
    mode = excess / excess.sum(-1, keepdim=True)
    first = (arange(a.shape[-1], device=a.device) == 0).to(a.dtype)
    return ew.where((a < 1).all(-1, keepdim=True), first, mode)


def _lbeta(a: Tensor, b: Tensor) -> Tensor:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


class Beta(ExponentialFamily):
    """The beta distribution on (0, 1) with ``concentration1`` a and ``concentration0`` b
    (both > 0): X / (X + Y), X ~ Gamma(a, 1), Y ~ Gamma(b, 1), so rsample is differentiable
    through the gamma draws.

    log p = (a - 1) log x + (b - 1) log(1 - x) - lbeta(a, b); mean a / (a + b);
    variance a b / ((a + b)^2 (a + b + 1));
    H = lbeta - (a - 1) psi(a) - (b - 1) psi(b) + (a + b - 2) psi(a + b)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0,
                 validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(tuple(self.concentration1.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        """Dirichlet's mode of (a, b), first coordinate: (a - 1) / (a + b - 2) for a, b > 1,
        1 or 0 when one concentration is below 1, 1 when both are (PyTorch's choice)."""
        return _dirichlet_mode(stack([self.concentration1, self.concentration0], -1))[..., 0]

    @property
    def variance(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        # X / (X + Y) from log X and log Y: at small concentrations both draws can underflow
        # to 0 (0 / 0); in log space the sample keeps its law (near 0 or 1, as it should)
        log_xy = stack([_LogStandardGamma.apply(self.concentration1.expand(tuple(shape))),
                        _LogStandardGamma.apply(self.concentration0.expand(tuple(shape)))], -1)
        x = _normalized_log_gamma(log_xy, -1)[..., 0]
        info_tiny = 1e-300 if x.dtype.itemsize == 8 else 1e-30
        return x.clamp(min=info_tiny, max=1.0 - info_tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        # xlogy / xlog1py: 0 log 0 = 0 at the ends for a = 1 or b = 1
        return xlogy(a - 1, value) + xlog1py(b - 1, -value) - _lbeta(a, b)

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return (_lbeta(a, b) - (a - 1) * digamma(a) - (b - 1) * digamma(b)
                + (a + b - 2) * digamma(a + b))

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        """F = log B(x, y) (PyTorch's parameterisation; no carrier measure defined)."""
        return lgamma(x) + lgamma(y) - lgamma(x + y)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex with ``concentration`` alpha (the last dim
    is the event, K > 0 entries each > 0): normalised Gamma(alpha_k, 1) draws.

    log p = sum (alpha_k - 1) log x_k + lgamma(alpha_0) - sum lgamma(alpha_k),
    alpha_0 = sum alpha_k; mean alpha / alpha_0;
    variance alpha (alpha_0 - alpha) / (alpha_0^2 (alpha_0 + 1));
    H = sum lgamma(alpha_k) - lgamma(alpha_0) + (alpha_0 - K) psi(alpha_0)
        - sum (alpha_k - 1) psi(alpha_k)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]),
                         validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """relu(alpha - 1) normalised; where every alpha_k < 1 (the density peaks at every
        vertex) the first vertex, as PyTorch."""
        return _dirichlet_mode(self.concentration)

    @property
    def variance(self) -> Tensor:
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0.pow(2) * (a0 + 1))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        # normalised in log space, as Beta's: draws that underflow keep their law
        x = _normalized_log_gamma(_LogStandardGamma.apply(self.concentration.expand(tuple(shape))),
                                  -1)
        tiny = 1e-300 if x.dtype.itemsize == 8 else 1e-30
        return x.clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return xlogy(a - 1, value).sum(-1) + lgamma(a.sum(-1)) - lgamma(a).sum(-1)

    def entropy(self) -> Tensor:
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (lgamma(a).sum(-1) - lgamma(a0) + (a0 - k) * digamma(a0)
                - ((a - 1) * digamma(a)).sum(-1))

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        """F = sum lgamma(x) - lgamma(sum x) (PyTorch's parameterisation)."""
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
