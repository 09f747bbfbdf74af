"""VonMises(loc, concentration): the circular normal on [-pi, pi), density
exp(k cos(x - loc)) / (2 pi I0(k)). Sampling is the rejection method of
Best & Fisher (1979), run in float64; there is no rsample."""
import math

import ignis
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property


def _log_i0(k):
    # log I0(k) = log(i0e(k)) + k: finite for large k, where I0 overflows.
    return ignis.special.i0e(k).log() + k


def _rejection_sample(loc, concentration, proposal_r, shape):
    """Best-Fisher draws around 0, shifted by loc and wrapped into [-pi, pi)."""
    with ignis.no_grad():
        k = concentration.double().expand(shape)
        r = proposal_r.double().expand(shape)
        done = ignis.zeros(shape, dtype=ignis.bool, device=k.device)
        x = ignis.zeros(shape, dtype=ignis.float64, device=k.device)
        while not bool(done.all()):
            u = ignis.rand((3,) + tuple(shape), dtype=ignis.float64, device=k.device)
            u1, u2, u3 = u.unbind()
            z = (math.pi * u1).cos()
            f = (1 + r * z) / (r + z)
            c = k * (r - f)
            accept = ((c * (2 - c) - u2) > 0).logical_or(((c / u2).log() + 1 - c) >= 0)
            take = accept.logical_and(done.logical_not())
            angle = (u3 - 0.5).sign() * f.acos()
            x = ignis.where(take, angle, x)
            done = done.logical_or(accept)
        x = (x + math.pi + loc.double()) % (2 * math.pi) - math.pi
        return x.to(loc.dtype)


class VonMises(Distribution):
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.size(), validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)

    @lazy_property
    def _proposal_r(self):
        # r = (1 + sqrt(1 + 4k^2)) / (2k), written for accuracy at small k
        # (where it is about 1/k) and used in float64.
        k = self.concentration.double()
        tau = 1 + (1 + 4 * k.pow(2)).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        small = 1 / k + k / 4  # rho ~ k / 2
        return ignis.where(k < 1e-5, small, (1 + rho.pow(2)) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _rejection_sample(self.loc, self.concentration, self._proposal_r, shape)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        new.__dict__.pop("_proposal_r", None)
        return new

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        # 1 - I1(k) / I0(k), the circular variance.
        k = self.concentration
        return 1 - (ignis.special.i1e(k) / ignis.special.i0e(k))
