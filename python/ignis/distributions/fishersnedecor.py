"""FisherSnedecor(df1, df2): the F distribution, (X1 / df1) / (X2 / df2)
for independent chi-square X1, X2 of df1 and df2 degrees of freedom.
rsample differentiates in both through the gamma draws."""
import numbers

import ignis
from . import constraints
from ._gamma import standard_gamma
from .distribution import Distribution
from .utils import broadcast_all, tiny


class FisherSnedecor(Distribution):
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        if isinstance(df1, numbers.Number) and isinstance(df2, numbers.Number):
            batch_shape = ignis.Size()
        else:
            batch_shape = self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        df2 = self.df2
        return (df2 / (df2 - 2)).masked_fill(df2 <= 2, float("nan"))

    @property
    def mode(self):
        df1, df2 = self.df1, self.df2
        return ((df1 - 2) / df1 * df2 / (df2 + 2)).masked_fill(df1 <= 2, float("nan"))

    @property
    def variance(self):
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return var.masked_fill(df2 <= 4, float("nan"))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        # Chi2(df) / df = Gamma(df / 2, 1) / (df / 2)
        x1 = standard_gamma(0.5 * self.df1.expand(shape)) / (0.5 * self.df1)
        x2 = standard_gamma(0.5 * self.df2.expand(shape)) / (0.5 * self.df2)
        ratio = x1 / x2
        # Keep the ratio positive and finite where a draw under/overflowed.
        limit = tiny(ratio.dtype)
        return ratio.clamp(min=limit, max=1 / limit)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        half1, half2 = 0.5 * self.df1, 0.5 * self.df2
        ratio = self.df1 / self.df2
        log_norm = (half1 + half2).lgamma() - half1.lgamma() - half2.lgamma()
        return (log_norm + half1 * ratio.log() + (half1 - 1) * value.log()
                - (half1 + half2) * (ratio * value).log1p())
