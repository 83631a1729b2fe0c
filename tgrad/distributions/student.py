"""``StudentT(df, loc, scale)`` and ``FisherSnedecor(df1, df2)``, reparameterised through
gamma draws (so rsample is differentiable in every parameter, df included).

    StudentT:  x = loc + scale z / sqrt(V / df),  z ~ N(0, 1),  V ~ Chi2(df);
               log p = -(df + 1)/2 log1p(y^2 / df) - log scale - log(df)/2 - log(pi)/2
                       - lgamma(df / 2) + lgamma((df + 1) / 2),  y = (x - loc) / scale;
               mean loc (NaN for df <= 1); variance scale^2 df / (df - 2) (inf for
               1 < df <= 2, NaN for df <= 1); H = log scale + (df + 1)/2 (psi((df + 1)/2)
               - psi(df / 2)) + log(df)/2 + lbeta(df / 2, 1/2)
    FisherSnedecor: x = (V1 / df1) / (V2 / df2),  Vi ~ Chi2(dfi);
               log p = lgamma((d1 + d2)/2) - lgamma(d1/2) - lgamma(d2/2) + d1/2 log d1
                       + d2/2 log d2 + (d1/2 - 1) log x - (d1 + d2)/2 log(d2 + d1 x);
               mean d2 / (d2 - 2) for d2 > 2; mode (d1 - 2)/d1 d2/(d2 + 2) for d1 > 2;
               variance 2 d2^2 (d1 + d2 - 2) / (d1 (d2 - 2)^2 (d2 - 4)) for d2 > 4
               (NaN otherwise, as PyTorch)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tgrad.distributions import constraints
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.gamma import Chi2, Gamma
from tgrad.distributions.utils import _finfo, broadcast_all
from tgrad.ops import elementwise as ew
from tgrad.ops.creation import randn
from tgrad.ops.special import digamma, lgamma
from tgrad.tensor import Tensor

__all__ = ["StudentT", "FisherSnedecor"]


class StudentT(Distribution):
    """Student's t distribution with ``df`` > 0 degrees of freedom, location ``loc`` and
    ``scale`` > 0 (module docstring)."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Tensor | float, loc: Tensor | float = 0.0,
                 scale: Tensor | float = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(tuple(self.df.shape), validate_args=validate_args)

    def _expand_extra(self, new: Distribution) -> None:
        new._chi2 = Chi2(new.df, validate_args=False)

    @property
    def mean(self) -> Tensor:
        return ew.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        finite = self.scale.pow(2) * df / ew.where(df > 2, df - 2, 1.0)
        return ew.where(df > 2, finite, ew.where(df > 1, math.inf, math.nan).to(df.dtype))

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        z = randn(shape, dtype=self.df.dtype, device=self.df.device)
        v = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * z * ew.rsqrt(v / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        z = (ew.log(self.scale) + 0.5 * ew.log(df) + 0.5 * math.log(math.pi)
             + lgamma(0.5 * df) - lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * ew.log1p(y * y / df) - z

    def entropy(self) -> Tensor:
        df = self.df
        lbeta = lgamma(0.5 * df) + math.lgamma(0.5) - lgamma(0.5 * (df + 1))
        return (ew.log(self.scale)
                + 0.5 * (df + 1) * (digamma(0.5 * (df + 1)) - digamma(0.5 * df))
                + 0.5 * ew.log(df) + lbeta)


class FisherSnedecor(Distribution):
    """The F distribution with ``df1`` > 0 and ``df2`` > 0 degrees of freedom (module
    docstring)."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Tensor | float, df2: Tensor | float,
                 validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(tuple(self.df1.shape), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        d2 = self.df2
        return ew.where(d2 > 2, d2 / ew.where(d2 > 2, d2 - 2, 1.0), math.nan)

    @property
    def mode(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        return ew.where(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), math.nan)

    @property
    def variance(self) -> Tensor:
        d1, d2 = self.df1, self.df2
        d2_safe = ew.where(d2 > 4, d2, 5.0)
        v = 2 * d2_safe.pow(2) * (d1 + d2_safe - 2) / (d1 * (d2_safe - 2).pow(2) * (d2_safe - 4))
        return ew.where(d2 > 4, v, math.nan)

    def rsample(self, sample_shape: Sequence[int] = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        # Gamma(d / 2, rate d / 2) = Chi2(d) / d
        x1 = Gamma(self.df1 * 0.5, self.df1 * 0.5).rsample(sample_shape).expand(tuple(shape))
        x2 = Gamma(self.df2 * 0.5, self.df2 * 0.5).rsample(sample_shape).expand(tuple(shape))
        tiny = float(_finfo(x2.dtype).tiny)
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        d1, d2 = self.df1, self.df2
        h1, h2 = 0.5 * d1, 0.5 * d2
        return (lgamma(h1 + h2) - lgamma(h1) - lgamma(h2)
                + h1 * ew.log(d1) + h2 * ew.log(d2)
                + (h1 - 1) * ew.log(value) - (h1 + h2) * ew.log(d2 + d1 * value))
