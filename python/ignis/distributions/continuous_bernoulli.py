"""ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501)): the
density C(l) l^x (1 - l)^(1 - x) on [0, 1] (Loaiza-Ganem & Cunningham,
2019), C(l) = 2 atanh(1 - 2l) / (1 - 2l) its normalizer.

The closed forms of C, the mean, variance, cdf and icdf divide by 1 - 2l,
so for l inside lims (around 1/2) they are replaced by Taylor expansions
in x = l - 1/2. The closed forms are evaluated at an l moved outside lims
there, so that neither branch makes NaNs (nor NaN gradients through the
unselected branch of the where)."""
import math
import numbers

import ignis
from . import constraints
from .exp_family import ExponentialFamily
from .utils import (
    bce_with_logits, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits,
)


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _expand_extra = ("_param",)

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, numbers.Number)
            (self.probs,) = broadcast_all(probs)
            # Checked before the clamp below, which would make any value pass.
            if validate_args is not None and \
                    not bool(self.arg_constraints["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = ignis.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]).logical_or(self.probs >= self._lims[1])

    def _cut_probs(self):
        # probs where the closed forms are used, lims[0] (a safe value) elsewhere.
        return ignis.where(self._outside_unstable_region(), self.probs,
                           ignis.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        cut = self._cut_probs()
        # |1 - 2l| and atanh(1 - 2l) share their sign, so the log's argument is
        # positive; written with logs so that probs near 0 or 1 stay finite.
        cut_below_half = ignis.where(cut <= 0.5, cut, ignis.zeros_like(cut))
        cut_above_half = ignis.where(cut >= 0.5, cut, ignis.ones_like(cut))
        log_norm = ((ignis.abs(ignis.log1p(-cut) - ignis.log(cut))).log()
                    - ignis.where(cut <= 0.5, ignis.log1p(-2.0 * cut_below_half),
                                  ignis.log(2.0 * cut_above_half - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return ignis.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (ignis.log1p(-cut) - ignis.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return ignis.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        vars_ = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                 + 1.0 / (ignis.log1p(-cut) - ignis.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return ignis.where(self._outside_unstable_region(), vars_, taylor)

    def sample(self, sample_shape=()):
        with ignis.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = ignis.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = ((cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0)
                / (2.0 * cut - 1.0))
        unbounded = ignis.where(self._outside_unstable_region(), cdfs, value)
        return ignis.where(value <= 0.0, ignis.zeros_like(value),
                           ignis.where(value >= 1.0, ignis.ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        icdfs = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) \
            / (cut.log() - (-cut).log1p())
        return ignis.where(self._outside_unstable_region(), icdfs, value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return (self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm()
                - log_probs0)

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """log((e^x - 1) / x), its Taylor series where x is inside lims - 1/2."""
        outside = (x <= self._lims[0] - 0.5).logical_or(x > self._lims[1] - 0.5)
        cut = ignis.where(outside, x, ignis.full_like(x, self._lims[0] - 0.5))
        log_norm = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return ignis.where(outside, log_norm, taylor)

    _mean_carrier_measure = 0
