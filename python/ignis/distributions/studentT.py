"""StudentT(df, loc=0.0, scale=1.0): Student's t with df degrees of freedom,
shifted and scaled. rsample is a normal over the root of a chi-square
(Gamma(df/2, 1/2)) draw, differentiable in df through the gamma draw."""
import math

import ignis
from . import constraints
from ._gamma import standard_gamma
from .distribution import Distribution
from .utils import broadcast_all


class StudentT(Distribution):
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc.masked_fill(self.df <= 1, float("nan"))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        var = ignis.where(df > 2, finite, ignis.full_like(df, float("inf")))
        return var.masked_fill(df <= 1, float("nan"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = ignis.randn(shape, dtype=self.df.dtype, device=self.df.device)
        chi2 = 2 * standard_gamma(0.5 * self.df.expand(shape))  # Chi2(df) = 2 Gamma(df/2, 1)
        y = x * (self.df / chi2).sqrt()
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + (0.5 * self.df).lgamma() - (0.5 * (self.df + 1.0)).lgamma())
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self):
        lbeta = ((0.5 * self.df).lgamma() + math.lgamma(0.5)
                 - (0.5 * (self.df + 1)).lgamma())
        return (self.scale.log()
                + 0.5 * (self.df + 1) * ((0.5 * (self.df + 1)).digamma()
                                         - (0.5 * self.df).digamma())
                + 0.5 * self.df.log() + lbeta)
