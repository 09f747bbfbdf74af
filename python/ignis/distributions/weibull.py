"""Weibull(scale, concentration): density (k/s) (x/s)^(k-1) exp(-(x/s)^k)
on x > 0; x = scale * E^(1/k) for E ~ Exponential(1)."""
import ignis
from . import constraints
from .exponential import Exponential
from .gumbel import _EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all


class Weibull(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(ignis.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new = super().expand(batch_shape, _instance=new)
        shape = tuple(batch_shape)
        new.scale = self.scale.expand(shape)
        new.concentration = self.concentration.expand(shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        new.transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                          AffineTransform(loc=0, scale=new.scale)]
        return new

    @property
    def mean(self):
        return self.scale * (1 + self.concentration_reciprocal).lgamma().exp()

    @property
    def mode(self):
        # scale (1 - 1/k)^(1/k): 0 at k = 1, NaN below (as torch's; the
        # density is unbounded at 0 there).
        k = self.concentration
        return self.scale * ((k - 1) / k).pow(self.concentration_reciprocal)

    @property
    def variance(self):
        first = (1 + self.concentration_reciprocal).lgamma().exp()
        second = (1 + 2 * self.concentration_reciprocal).lgamma().exp()
        return self.scale.pow(2) * (second - first.pow(2))

    def entropy(self):
        return (_EULER_GAMMA * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)
