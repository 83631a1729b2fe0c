"""Probability distributions with PyTorch's ``torch.distributions`` API: ``Normal``,
``Uniform``, ``Bernoulli``, ``Categorical``, ``Exponential``, ``Laplace``,
``MultivariateNormal``, ``Cauchy``, ``HalfCauchy``, ``HalfNormal``, ``LogNormal``,
``Gumbel``, ``Pareto``, ``Weibull``, ``Geometric``, ``Independent``, ``OneHotCategorical``,
``MixtureSameFamily``, ``OneHotCategoricalStraightThrough``, ``Gamma``, ``Chi2``, ``Beta``,
``Dirichlet``, ``Poisson``, ``Binomial``, ``NegativeBinomial``, ``Multinomial``,
``StudentT``, ``FisherSnedecor``, ``VonMises``, ``GeneralizedPareto``, ``InverseGamma``,
``Kumaraswamy``, ``LogisticNormal``, ``ContinuousBernoulli``,
``LowRankMultivariateNormal``, ``LKJCholesky``, ``Wishart``, the ``ExponentialFamily``
base class,
``TransformedDistribution`` with ``transforms``, the relaxed (Gumbel-softmax) Bernoulli
and one-hot categorical, the ``Distribution`` base class,
``constraints`` and ``kl_divergence`` / ``register_kl``, the transform classes (also in
``transforms``) and ``biject_to`` / ``transform_to`` (the constraint registry).

Shapes: ``sample(sample_shape)`` has shape ``sample_shape + batch_shape + event_shape``;
``log_prob``, ``entropy`` and ``kl_divergence`` have the batch shape. ``rsample`` is
differentiable with respect to the parameters (the reparameterisation trick) for the
continuous families; every density, moment and KL is a composition of differentiable tgrad
ops, so higher derivatives work. Sampling uses tgrad's generator (``tgrad.manual_seed``).
See docs/distributions.md for what is missing compared with torch.distributions.
"""

from tgrad.distributions import constraints, transforms
from tgrad.distributions.bernoulli import Bernoulli
from tgrad.distributions.categorical import Categorical
from tgrad.distributions.constraint_registry import biject_to, transform_to
from tgrad.distributions.continuous_bernoulli import ContinuousBernoulli
from tgrad.distributions.counts import Binomial, Multinomial, NegativeBinomial, Poisson
from tgrad.distributions.distribution import Distribution
from tgrad.distributions.exp_family import ExponentialFamily
from tgrad.distributions.exponential import Exponential
from tgrad.distributions.gamma import Beta, Chi2, Dirichlet, Gamma
from tgrad.distributions.generalized_pareto import GeneralizedPareto
from tgrad.distributions.independent import (
    Independent,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
)
from tgrad.distributions.kl import kl_divergence, register_kl
from tgrad.distributions.laplace import Laplace
from tgrad.distributions.lkj_cholesky import LKJCholesky
from tgrad.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from tgrad.distributions.mixture_same_family import MixtureSameFamily
from tgrad.distributions.multivariate_normal import MultivariateNormal
from tgrad.distributions.normal import Normal
from tgrad.distributions.relaxed import (
    ExpRelaxedCategorical,
    LogitRelaxedBernoulli,
    RelaxedBernoulli,
    RelaxedOneHotCategorical,
)
from tgrad.distributions.scalar_families import (
    Cauchy,
    Geometric,
    Gumbel,
    HalfCauchy,
    HalfNormal,
    LogNormal,
    Pareto,
    Weibull,
)
from tgrad.distributions.student import FisherSnedecor, StudentT
from tgrad.distributions.transformed_distribution import TransformedDistribution
from tgrad.distributions.transformed_families import (
    InverseGamma,
    Kumaraswamy,
    LogisticNormal,
)
from tgrad.distributions.transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    CorrCholeskyTransform,
    CumulativeDistributionTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PositiveDefiniteTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from tgrad.distributions.uniform import Uniform
from tgrad.distributions.von_mises import VonMises
from tgrad.distributions.wishart import Wishart

__all__ = ["Bernoulli", "Categorical", "Cauchy", "Distribution", "Exponential", "Geometric",
           "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "Laplace", "LogNormal",
           "MultivariateNormal", "Normal", "OneHotCategorical", "TransformedDistribution",
           "LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical",
           "RelaxedOneHotCategorical", "Pareto", "Weibull", "MixtureSameFamily",
           "OneHotCategoricalStraightThrough", "Gamma", "Chi2", "Beta", "Dirichlet",
           "Uniform", "Poisson", "Binomial", "NegativeBinomial", "Multinomial",
           "StudentT", "FisherSnedecor", "VonMises", "GeneralizedPareto", "InverseGamma",
           "Kumaraswamy", "LogisticNormal", "ContinuousBernoulli", "ExponentialFamily",
           "LowRankMultivariateNormal", "LKJCholesky", "Wishart",
           "constraints", "kl_divergence", "register_kl",
           "transforms", "biject_to", "transform_to", "AbsTransform", "AffineTransform",
           "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "PowerTransform",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]
