"""MixtureSameFamily(mixture_distribution, component_distribution): a
mixture whose K components are the rightmost batch dim of one distribution,
weighted by a Categorical over K."""
import ignis
from . import constraints
from .categorical import Categorical
from .distribution import Distribution


class MixtureSameFamily(Distribution):
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`"
                                 f"({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km is not None and kc is not None and km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(cdbs, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        MixtureSameFamily.__init__(
            new, self._mixture_distribution.expand(batch_shape),
            self._component_distribution.expand(batch_shape + (self._num_component,)),
            validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad_mixture(self, x):
        # Mixture weights (batch + (K,)) lined up with the components' events.
        return x.reshape(tuple(x.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture(self._mixture_distribution.probs)
        return (probs * self._component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        # The law of total variance: E[Var(X | k)] + Var(E[X | k]).
        probs = self._pad_mixture(self._mixture_distribution.probs)
        dim = -1 - self._event_ndims
        mean_cond_var = (probs * self._component_distribution.variance).sum(dim)
        centred = self._component_distribution.mean - self.mean.unsqueeze(dim)
        var_cond_mean = (probs * centred.pow(2)).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x):
        x = x.unsqueeze(-1 - self._event_ndims)
        cdf_x = self._component_distribution.cdf(x)
        return (cdf_x * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        x = x.unsqueeze(-1 - self._event_ndims)
        log_prob_x = self._component_distribution.log_prob(x)  # [S, B, K]
        log_mix_prob = self._mixture_distribution.logits.log_softmax(-1)  # [B, K]
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=()):
        with ignis.no_grad():
            sample_shape = tuple(sample_shape)
            mix_sample = self._mixture_distribution.sample(sample_shape)  # [S, B]
            comp_samples = self._component_distribution.sample(sample_shape)  # [S, B, K, E]
            es = tuple(self.event_shape)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = index.expand(tuple(mix_sample.shape) + (1,) + es)
            return comp_samples.gather(-1 - len(es), index).squeeze(-1 - len(es))

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
