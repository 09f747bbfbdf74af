"""Categorical(probs=None, logits=None): one of K categories (the last dim
of the parameter), with probabilities proportional to probs, or the
softmax of logits."""
import ignis
from . import constraints
from .distribution import Distribution
from .utils import finfo_min, lazy_property, logits_to_probs, probs_to_logits


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else ignis.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    def _nan_of_batch(self):
        return ignis.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mean(self):
        return self._nan_of_batch()

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self._nan_of_batch()

    def sample(self, sample_shape=()):
        if not isinstance(sample_shape, ignis.Size):
            sample_shape = ignis.Size(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with ignis.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = ignis.multinomial(probs_2d, n, True).T
            return samples_2d.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ignis.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=finfo_min(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = ignis.arange(self._num_events, dtype=ignis.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
