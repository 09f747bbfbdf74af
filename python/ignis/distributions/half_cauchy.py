"""HalfCauchy(scale): |x| for x ~ Cauchy(0, scale)."""
import math

import ignis
from . import constraints
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class HalfCauchy(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)
        # scale lives on the base (a property here, which Distribution's check skips).
        if self._validate_args and not bool((base.scale > 0).all()):
            raise ValueError(f"Expected parameter scale of distribution HalfCauchy to satisfy "
                             f"the constraint GreaterThan(lower_bound=0.0), but found invalid "
                             f"values:\n{base.scale}")

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return ignis.full(self._extended_shape(), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    @property
    def mode(self):
        return ignis.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ignis.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return log_prob.masked_fill(value < 0, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
