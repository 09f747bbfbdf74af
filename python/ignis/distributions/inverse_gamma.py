"""InverseGamma(concentration, rate): 1 / x for x ~ Gamma(concentration,
rate); density rate^a x^(-a-1) e^(-rate / x) / Gamma(a)."""
import math

import ignis
from . import constraints
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform


class InverseGamma(TransformedDistribution):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -ignis.ones((), dtype=base.rate.dtype, device=base.rate.device)
        super().__init__(base, PowerTransform(neg_one), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        # Infinite for concentration <= 1.
        return (self.rate / (self.concentration - 1)).masked_fill(self.concentration <= 1,
                                                                   math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c = self.concentration
        var = self.rate.pow(2) / ((c - 1).pow(2) * (c - 2))
        return var.masked_fill(c <= 2, math.inf)

    def entropy(self):
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
