"""Multinomial(total_count=1, probs=None, logits=None): the counts of each
of K categories among total_count independent draws of a Categorical."""
import ignis
from . import constraints
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution


class Multinomial(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = tuple(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._binomial = Binomial(total_count=self.total_count, probs=new.probs,
                                 validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        sample_shape = ignis.Size(sample_shape)
        with ignis.no_grad():
            # total_count category draws, counted per category.
            draws = self._categorical.sample(ignis.Size((self.total_count,)) + sample_shape)
            k = self._categorical._num_events
            counts = (draws.unsqueeze(-1) == ignis.arange(k, device=draws.device))
            return counts.to(self.probs.dtype).sum(0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits = self.logits
        logits, value = ignis.broadcast_tensors(logits, value)
        logits = logits.clone()
        # A category of probability 0 drawn 0 times contributes 0, not 0 * -inf.
        logits = logits.masked_fill((value == 0).logical_and(logits == -float("inf")), 0.0)
        log_factorial_n = ignis.tensor(float(self.total_count + 1), dtype=logits.dtype).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers

    def entropy(self):
        # H = n H(categorical) - log n! + sum_k E[log x_k!], each x_k binomial.
        n = ignis.tensor(float(self.total_count), dtype=self.probs.dtype)
        support = self._binomial.enumerate_support()
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = (support + 1).lgamma()
        return (n * self._categorical.entropy() - (n + 1).lgamma()
                + (binomial_probs * weights).sum((0, -1)))
