"""Bernoulli(probs=None, logits=None): 1 with probability probs."""
import numbers

import ignis
from . import constraints
from .exp_family import ExponentialFamily
from .utils import bce_with_logits, broadcast_all, lazy_property, logits_to_probs, probs_to_logits


class Bernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        batch_shape = ignis.Size() if is_scalar else param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan"))

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with ignis.no_grad():
            p = self.probs.expand(shape)
            return (ignis.rand(shape, dtype=p.dtype, device=p.device) < p).to(p.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = ignis.broadcast_tensors(self.logits, value)
        return -bce_with_logits(logits, value)

    def entropy(self):
        return bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = ignis.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self):
        return (ignis.logit(self.probs),)

    def _log_normalizer(self, x):
        return x.exp().log1p()

    _mean_carrier_measure = 0
