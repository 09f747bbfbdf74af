"""GeneralizedPareto(loc, scale, concentration): the law of exceedances over
a high threshold; with z = (x - loc) / scale and xi = concentration, the
cdf is 1 - (1 + xi z)^(-1/xi) (1 - e^-z at xi = 0). The support is
x >= loc, bounded above by loc - scale / xi when xi < 0.

The xi = 0 case is a limit: the general formulas are evaluated at a
nonzero stand-in for xi there and replaced, so that no NaN (nor a NaN
gradient) comes from the unselected branch."""
import math

import ignis
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class GeneralizedPareto(Distribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def _split_concentration(self):
        # |xi| <= 1e-8 counts as 0, as torch's (the limit is then exact to O(xi)).
        zero = self.concentration.abs() <= 1e-8
        safe = ignis.where(zero, ignis.ones_like(self.concentration), self.concentration)
        return zero, safe

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        zero, safe = self._split_concentration()
        upper = ignis.where(self.concentration < 0, self.loc - self.scale / safe,
                            ignis.full_like(self.loc, math.inf))
        return constraints.interval(self.loc, upper)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ignis.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        zero, safe = self._split_concentration()
        general = -(1 / safe + 1) * (safe * z).log1p()
        return ignis.where(zero, -z, general) - self.scale.log()

    def log_survival_function(self, value):
        z = (value - self.loc) / self.scale
        zero, safe = self._split_concentration()
        return ignis.where(zero, -z, -(safe * z).log1p() / safe)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -self.log_survival_function(value).expm1()

    def icdf(self, value):
        zero, safe = self._split_concentration()
        log_tail = (-value).log1p()  # log(1 - p)
        general = (-safe * log_tail).expm1() / safe
        return self.loc + self.scale * ignis.where(zero, -log_tail, general)

    @property
    def mean(self):
        xi = self.concentration
        return (self.loc + self.scale / (1 - xi)).masked_fill(xi >= 1, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        xi = self.concentration
        var = self.scale.pow(2) / ((1 - xi).pow(2) * (1 - 2 * xi))
        return var.masked_fill(xi >= 0.5, math.nan)

    def entropy(self):
        return self.scale.log() + self.concentration + 1
