"""Dirichlet(concentration): distribution on the simplex of the last dim.
rsample normalizes independent Gamma(concentration_i, 1) draws; its gradient
is the gamma draws' implicit one carried through the normalization (a valid
reparameterization gradient; torch's uses another transport map, so the
per-draw gradients differ while their expectations agree)."""
import ignis
from . import constraints
from ._gamma import standard_gamma
from .exp_family import ExponentialFamily


class Dirichlet(ExponentialFamily):
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        shape = concentration.shape
        super().__init__(shape[:-1], shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        gammas = standard_gamma(self.concentration.expand(shape))
        draws = gammas / gammas.sum(-1, keepdim=True)
        return draws.clamp(min=ignis.finfo(draws.dtype).tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (ignis.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma()
                - c.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        above = (self.concentration - 1).clamp(min=0.0)
        mode = above / above.sum(-1, keepdim=True)
        # With every concentration below 1 the density peaks at a vertex: the
        # largest concentration's (torch's choice).
        all_below = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = ignis.nn.functional.one_hot(self.concentration.argmax(-1),
                                             self.concentration.shape[-1]).to(mode.dtype)
        return ignis.where(all_below, vertex, mode)

    @property
    def variance(self):
        c0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (c0 - self.concentration) / (c0.pow(2) * (c0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (c.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((c - 1.0) * c.digamma()).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
