"""NegativeBinomial(total_count, probs=None, logits=None): the number of
successes (each of probability probs) before total_count failures;
P(k) = C(k + r - 1, k) p^k (1 - p)^r. total_count may be any positive real."""
import ignis
import ignis.nn.functional as F
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits


class NegativeBinomial(Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _expand_extra = ("_param",)

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
            self._param = self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

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
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=()):
        # A Poisson whose rate is Gamma(total_count, (1 - p) / p) distributed.
        with ignis.no_grad():
            rates = Gamma(self.total_count, (-self.logits).exp(),
                          validate_args=False).sample(sample_shape)
            return ignis.poisson(rates)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = (self.total_count * F.logsigmoid(-self.logits)
                            + value * F.logsigmoid(self.logits))
        log_normalization = (-(self.total_count + value).lgamma() + (1.0 + value).lgamma()
                             + self.total_count.lgamma())
        # P(0) = 1 when total_count is 0 (the lgammas alone would give inf - inf).
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0, 0.0)
        return log_unnormalized - log_normalization
