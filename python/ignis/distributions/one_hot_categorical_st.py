"""OneHotCategoricalStraightThrough: a OneHotCategorical whose rsample is
the one-hot draw in the forward pass and has the gradient of probs in the
backward pass (the straight-through estimator, Bengio et al., 2013)."""
from .one_hot_categorical import OneHotCategorical


class OneHotCategoricalStraightThrough(OneHotCategorical):
    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached, so the same tensor as log_prob's
        return samples + (probs - probs.detach())
