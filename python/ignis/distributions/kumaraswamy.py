"""Kumaraswamy(concentration1 a, concentration0 b): density
a b x^(a-1) (1 - x^a)^(b-1) on (0, 1), a Beta-like law with a closed-form
cdf; x = (1 - (1 - u)^(1/b))^(1/a) for a uniform u."""
import ignis
from . import constraints
from .gumbel import _EULER_GAMMA
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all


def _log_moment(a, b, n):
    """log E[X^n] = log(b B(1 + n/a, b))."""
    arg = 1 + n / a
    return b.log() + arg.lgamma() + b.lgamma() - (arg + b).lgamma()


class Kumaraswamy(TransformedDistribution):
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base = Uniform(ignis.zeros_like(self.concentration1),
                       ignis.ones_like(self.concentration1), validate_args=validate_args)
        super().__init__(base, self._make_transforms(), validate_args=validate_args)

    def _make_transforms(self):
        # u^(1/b) is distributed as (1 - u)^(1/b); 1 - that; then the 1/a root.
        return [PowerTransform(exponent=self.concentration0.reciprocal()),
                AffineTransform(loc=1.0, scale=-1.0),
                PowerTransform(exponent=self.concentration1.reciprocal())]

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        new = super().expand(batch_shape, _instance=new)
        new.concentration1 = self.concentration1.expand(tuple(batch_shape))
        new.concentration0 = self.concentration0.expand(tuple(batch_shape))
        new.transforms = new._make_transforms()
        return new

    @property
    def mean(self):
        return _log_moment(self.concentration1, self.concentration0, 1).exp()

    @property
    def mode(self):
        a, b = self.concentration1, self.concentration0
        # ((a - 1) / (a b - 1))^(1/a) where a >= 1, b >= 1 and not both 1; NaN elsewhere.
        log_mode = ((a - 1).log() - (a * b - 1).log()) / a
        defined = (a >= 1).logical_and(b >= 1).logical_and((a != 1).logical_or(b != 1))
        return log_mode.exp().masked_fill(defined.logical_not(), float("nan"))

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        return _log_moment(a, b, 2).exp() - self.mean.pow(2)

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        harmonic_b = b.digamma() + 1 / b + _EULER_GAMMA  # H_b = psi(b + 1) + gamma
        return (1 - 1 / a) * harmonic_b + (1 - 1 / b) - (a * b).log()
