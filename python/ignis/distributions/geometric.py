"""Geometric(probs=None, logits=None): the number of failures before the
first success, P(k) = (1 - p)^k p on k = 0, 1, 2, ..."""
import numbers

import ignis
from . import constraints
from .distribution import Distribution
from .utils import bce_with_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits


class Geometric(Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param, scalar = self.probs, isinstance(probs, numbers.Number)
        else:
            (self.logits,) = broadcast_all(logits)
            param, scalar = self.logits, isinstance(logits, numbers.Number)
        super().__init__(ignis.Size() if scalar else param.size(),
                         validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            # p = 0 is in unit_interval but has no distribution (torch checks it apart).
            raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                             f"{tuple(self.probs.shape)}) of distribution {self!r} to be "
                             f"positive but found invalid values:\n{self.probs}")

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ignis.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ignis.no_grad():
            tiny = ignis.finfo(self.probs.dtype).tiny
            u = ignis.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            return (u.clamp(min=tiny).log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # p = 1 and k = 0: 0 * log(0) is 0 here, not nan.
        probs = probs.masked_fill((probs == 1).logical_and(value == 0), 0.0)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return bce_with_logits(self.logits, self.probs) / self.probs
