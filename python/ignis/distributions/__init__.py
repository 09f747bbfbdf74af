"""ignis.distributions: probability distributions with torch.distributions'
API: sample / rsample (reparameterised where the distribution allows it),
log_prob, entropy, mean / mode / variance / stddev, batch and event shapes,
and argument validation raising torch's ValueErrors. Distributions are
Python objects over ignis ops, so their log_prob and rsample differentiate
and trace like any other code."""
from . import constraints, transforms  # noqa: F401
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .lkj_cholesky import LKJCholesky
from .laplace import Laplace
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multinomial import Multinomial
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .one_hot_categorical_st import OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (  # noqa: F401
    AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
    CumulativeDistributionTransform, ExpTransform, IndependentTransform, LowerCholeskyTransform,
    PositiveDefiniteTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
    SoftmaxTransform, SoftplusTransform, StackTransform, StickBreakingTransform, TanhTransform,
    Transform, identity_transform,
)
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = ["Distribution", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
           "Dirichlet", "Exponential", "ExpRelaxedCategorical", "Gamma", "Geometric",
           "HalfNormal", "Independent", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
           "MixtureSameFamily", "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT",
           "TransformedDistribution", "Uniform", "constraints", "transforms", "kl_divergence",
           "register_kl", "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform",
           "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "StickBreakingTransform",
           "TanhTransform", "Transform", "Chi2", "ContinuousBernoulli", "FisherSnedecor",
           "Gumbel", "HalfCauchy", "InverseGamma", "Kumaraswamy", "LogisticNormal",
           "LowRankMultivariateNormal", "Multinomial", "NegativeBinomial",
           "OneHotCategoricalStraightThrough", "GeneralizedPareto", "ExponentialFamily",
           "LKJCholesky", "CorrCholeskyTransform",
           "CatTransform", "CumulativeDistributionTransform", "IndependentTransform",
           "LowerCholeskyTransform", "PositiveDefiniteTransform", "ReshapeTransform",
           "SoftplusTransform", "StackTransform", "identity_transform", "biject_to",
           "transform_to", "Pareto", "VonMises", "Weibull", "Wishart"]
