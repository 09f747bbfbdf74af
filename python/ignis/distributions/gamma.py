"""Gamma(concentration, rate): density rate^a x^(a-1) e^(-rate x) / Gamma(a).
rsample differentiates in both parameters (implicit reparameterization in
the concentration: see _gamma.py)."""
import numbers

import ignis
from . import constraints
from ._gamma import gammainc, standard_gamma
from .exp_family import ExponentialFamily
from .utils import broadcast_all


class Gamma(ExponentialFamily):
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, numbers.Number) and isinstance(rate, numbers.Number):
            batch_shape = ignis.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        draws = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # Keep draws positive after the division (torch clamps the same way).
        return draws.clamp(min=ignis.finfo(draws.dtype).tiny)

    def log_prob(self, value):
        value = ignis.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (ignis.xlogy(self.concentration, self.rate)
                + ignis.xlogy(self.concentration - 1, value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return gammainc(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()

    _mean_carrier_measure = 0
