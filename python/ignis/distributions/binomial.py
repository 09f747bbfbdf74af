"""Binomial(total_count=1, probs=None, logits=None): the number of successes
in total_count independent trials of success probability probs."""
import ignis
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits


def _clamp_by_zero(x):
    # max(x, 0) whose gradient at 0 is 1/2 (as torch's, for matching grads).
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _expand_extra = ("_param",)

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
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

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

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
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        """Counts of uniforms below probs among total_count of them (exact;
        drawn in chunks of trials so that memory stays bounded)."""
        shape = tuple(self._extended_shape(sample_shape))
        with ignis.no_grad():
            probs = self.probs.expand(shape)
            counts = self.total_count.expand(shape)
            n_max = int(counts.max().item()) if counts.numel() else 0
            result = ignis.zeros(shape, dtype=probs.dtype, device=probs.device)
            chunk = max(1, min(n_max, 2 ** 22 // max(1, probs.numel())))
            for start in range(0, n_max, chunk):
                n = min(chunk, n_max - start)
                u = ignis.rand(shape + (n,), dtype=probs.dtype, device=probs.device)
                trial = ignis.arange(start, start + n, dtype=probs.dtype, device=probs.device)
                hit = (u < probs.unsqueeze(-1)).logical_and(trial < counts.unsqueeze(-1))
                result = result + hit.to(probs.dtype).sum(-1)
            return result

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = (self.total_count + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (self.total_count - value + 1).lgamma()
        # log(1 + e^logits)^n written to stay finite for large |logits|.
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p()
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count.min() == total_count).item()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max().item())
        if not bool((self.total_count.min() == total_count).item()):
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = ignis.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
