"""ExponentialFamily: distributions with density
p(x; theta) = exp(<t(x), theta> - A(theta) + k(x)), theta the natural
parameters, A the log normalizer and k the carrier measure. Subclasses give
_natural_params, _log_normalizer(*theta) and _mean_carrier_measure (E[k(x)]);
then entropy is A(theta) - <theta, grad A(theta)> - E[k(x)] (the Bregman
form, with grad A from autograd), and kl.py's fallback for two members of
the same family is A's Bregman divergence."""
import ignis
from .distribution import Distribution


class ExponentialFamily(Distribution):
    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        # The gradient of A is taken at detached copies of the parameters.
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        grads = ignis.autograd.grad(log_normalizer.sum(), params, create_graph=True)
        result = result + log_normalizer
        for param, grad in zip(params, grads):
            result = result - (param * grad).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
