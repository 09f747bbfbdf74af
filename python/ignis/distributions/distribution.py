"""Distribution: the base class (shapes, validation, sample via rsample)."""
import warnings

import ignis
from . import constraints
from .utils import lazy_property

_VALIDATE_ARGS = True


class Distribution:
    has_rsample = False
    has_enumerate_support = False
    arg_constraints = {}
    support = None

    @staticmethod
    def set_default_validate_args(value):
        """Whether distributions check their arguments (default True, as torch in
        non-optimised Python)."""
        if value not in (True, False):
            raise ValueError
        global _VALIDATE_ARGS
        _VALIDATE_ARGS = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = ignis.Size(batch_shape)
        self._event_shape = ignis.Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                        getattr(type(self), param, None), (property, lazy_property)):
                    continue  # a parameter computed from another (probs from logits)
                value = getattr(self, param)
                valid = constraint.check(value)
                if not bool(valid.all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}")

    _validate_args = property(lambda self: self.__dict__.get("_validate_args_value",
                                                             _VALIDATE_ARGS),
                              lambda self, v: self.__dict__.__setitem__("_validate_args_value",
                                                                        v))

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same kind whose parameters are expanded to
        batch_shape (torch's Distribution.expand: views, no copies). The
        parameters expanded are the tensors named in arg_constraints and
        those a subclass lists in _expand_extra."""
        batch_shape = ignis.Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        n_batch = len(self._batch_shape)
        for key, value in self.__dict__.items():
            is_param = key in self.arg_constraints or key in self._expand_extra
            if is_param and isinstance(value, ignis.Tensor):
                value = value.expand(tuple(batch_shape) + tuple(value.shape[n_batch:]))
            new.__dict__[key] = value
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    _expand_extra = ()

    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    @property
    def mean(self):
        raise NotImplementedError

    @property
    def mode(self):
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """A sample (no gradient) of shape sample_shape + batch + event shape."""
        with ignis.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampling "
                                  "(rsample)")

    def sample_n(self, n):
        warnings.warn("sample_n will be deprecated. Use .sample((n,)) instead", UserWarning)
        return self.sample(ignis.Size((n,)))

    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return self.entropy().exp()

    def enumerate_support(self, expand=True):
        raise NotImplementedError

    def _extended_shape(self, sample_shape=()):
        if not isinstance(sample_shape, ignis.Size):
            sample_shape = ignis.Size(sample_shape)
        return ignis.Size(tuple(sample_shape) + tuple(self._batch_shape)
                          + tuple(self._event_shape))

    def _validate_sample(self, value):
        if not isinstance(value, ignis.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{tuple(value.shape)} vs {tuple(self._event_shape)}.")
        actual_shape = tuple(value.shape)
        expected_shape = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        valid = support.check(value)
        if not bool(valid.all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names)
        return f"{type(self).__name__}({args})"
