"""ignis.distributions: probability distributions with torch.distributions'
API: sample / rsample (reparameterised where the distribution allows it),
log_prob, entropy, mean / mode / variance / stddev, batch and event shapes,
and argument validation raising torch's ValueErrors. Distributions are
Python objects over ignis ops, so their log_prob and rsample differentiate
and trace like any other code."""
from . import constraints  # noqa: F401
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .normal import Normal
from .uniform import Uniform

__all__ = ["Distribution", "Bernoulli", "Categorical", "Normal", "Uniform", "constraints"]
