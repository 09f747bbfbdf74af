"""kl_divergence(p, q) and register_kl: KL(p || q) by the closed form
registered for the pair of types. The most specific registration (by the
types' method resolution orders) wins, as in torch."""
import math

import ignis
import ignis.nn.functional as F
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel, _EULER_GAMMA
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import (LowRankMultivariateNormal, _low_rank_log_det,
                                          _low_rank_mahalanobis)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}  # (type_p, type_q) -> fn(p, q)
_KL_MEMO = {}  # (type(p), type(q)) -> the fn chosen for them


def register_kl(type_p, type_q):
    """Decorator: registers fn(p, q) as KL(p || q) for p of type_p and q of
    type_q (subclasses included unless more specific ones are registered)."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMO.clear()
        return fn
    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(tp, tq) for tp, tq in _KL_REGISTRY
               if issubclass(type_p, tp) and issubclass(type_q, tq)]
    if not matches:
        return None
    # Nearest in the MRO of p's type first, then of q's.
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    best = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    """KL(p || q), batched over the distributions' batch shape."""
    key = (type(p), type(q))
    if key not in _KL_MEMO:
        _KL_MEMO[key] = _dispatch_kl(*key)
    fn = _KL_MEMO[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fn(p, q)


def _where_inf(mask, value):
    return value.masked_fill(mask, float("inf"))


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = t.masked_fill((q.probs == 0).expand_as(t), float("inf"))
    t = t.masked_fill((p.probs == 0).expand_as(t), 0.0)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = t1.masked_fill(q.probs == 0, float("inf")).masked_fill(p.probs == 0, 0.0)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = t2.masked_fill(q.probs == 1, float("inf")).masked_fill(p.probs == 1, 0.0)
    return t1 + t2


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return kl.masked_fill(p.total_count > q.total_count, float("inf"))


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    n = p.event_shape[0]
    batch = tuple(ignis.broadcast_shapes(tuple(lq.shape[:-2]), tuple(lp.shape[:-2])))
    solved = ignis.linalg.solve_triangular(lq.expand(batch + (n, n)),
                                           lp.expand(batch + (n, n)), upper=False)
    term2 = solved.pow(2).sum((-2, -1))  # trace(Sq^-1 Sp)
    term3 = _batch_mahalanobis(lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    sum_p = p.concentration1 + p.concentration0
    sum_q = q.concentration1 + q.concentration0
    t1 = q.concentration1.lgamma() + q.concentration0.lgamma() + sum_p.lgamma()
    t2 = p.concentration1.lgamma() + p.concentration0.lgamma() + sum_q.lgamma()
    t3 = (p.concentration1 - q.concentration1) * p.concentration1.digamma()
    t4 = (p.concentration0 - q.concentration0) * p.concentration0.digamma()
    t5 = (sum_q - sum_p) * sum_p.digamma()
    return t1 - t2 + t3 + t4 + t5


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low).logical_or(q.high < p.high)
    return result.masked_fill(outside, float("inf"))


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    t1 = -q.concentration * ratio.log()
    return t1 + ratio + q.concentration.lgamma() + q.concentration * 0.5772156649015329 \
        - (1 + 0.5772156649015329)


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    loc_diff = p.loc - q.loc
    scale_ratio = p.scale / q.scale
    loc_diff_scale_ratio = loc_diff / p.scale
    t1 = scale_ratio.log()
    t2 = math.sqrt(2 / math.pi) * p.scale * (-0.5 * loc_diff_scale_ratio.pow(2)).exp()
    t3 = loc_diff * (loc_diff_scale_ratio / math.sqrt(2)).erf()
    return -t1 + (t2 + t3) / q.scale - (0.5 * (1 + math.log(0.5 * math.pi)))


# --- the distributions added with Gumbel, Pareto, ContinuousBernoulli and the
# low-rank normal. Cross-family pairs are written KL(p || q) = -H(p) - E_p[log q],
# with E_p[log q] from p's moments (E x, E x^2, E log x, E e^(-x/s)).

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _infinite_like(p, q=None):
    """KL = inf over p's batch (q gives zero density where p does not)."""
    return ignis.full(tuple(p.batch_shape), math.inf, dtype=_param_dtype(p),
                      device=_param_device(p))


def _param_dtype(p):
    return p.mean.dtype


def _param_device(p):
    return p.mean.device


def _minus_log_normal(q, mean, second_moment):
    """-E[log Normal(q.loc, q.scale)(x)] from E x and E x^2."""
    expected_sq = second_moment - 2 * q.loc * mean + q.loc.pow(2)
    return q.scale.log() + _HALF_LOG_2PI + expected_sq / (2 * q.scale.pow(2))


def _minus_log_gumbel(q, mean, expected_exp_neg_x_over_scale):
    """-E[log Gumbel(q.loc, q.scale)(x)] = log s + E z + E e^-z, z = (x - loc) / s."""
    return (q.scale.log() + (mean - q.loc) / q.scale
            + (q.loc / q.scale).exp() * expected_exp_neg_x_over_scale)


def _minus_log_gamma(q, mean, mean_log):
    return (-q.concentration * q.rate.log() + q.concentration.lgamma()
            - (q.concentration - 1) * mean_log + q.rate * mean)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ratio = p.scale / q.scale
    loc_gap = (p.loc - q.loc) / q.scale
    # E_p[exp(-z_q)] = exp(-loc_gap) Gamma(1 + ratio)
    return ((q.scale / p.scale).log() + ratio * _EULER_GAMMA - 1 - _EULER_GAMMA + loc_gap
            + ((1 + ratio).lgamma() - loc_gap).exp())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # alpha_q log(s_p / s_q) + log(alpha_p / alpha_q) + alpha_q / alpha_p - 1,
    # infinite where p puts mass below q's scale.
    kl = (q.alpha * (p.scale / q.scale).log() + (p.alpha / q.alpha).log()
          + q.alpha / p.alpha - 1)
    return kl.masked_fill(p.scale < q.scale, math.inf)


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p, q):
    expected_log_q = (p.mean * (q.probs.log() - (-q.probs).log1p()) + (-q.probs).log1p()
                      + q._cont_bern_log_norm())
    return -p.entropy() - expected_log_q


def _kl_dense_normals(p_loc, p_cov, q_loc, q_cov):
    """KL between Gaussians from their dense covariances."""
    return _kl_multivariatenormal_multivariatenormal(
        MultivariateNormal(p_loc, covariance_matrix=p_cov, validate_args=False),
        MultivariateNormal(q_loc, covariance_matrix=q_cov, validate_args=False))


def _low_rank_trace_term(q, p_cov):
    """trace(Sigma_q^-1 Sigma_p) from q's Woodbury form."""
    W, D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    A = ignis.linalg.solve_triangular(q._capacitance_tril, Wt_Dinv, upper=False)
    precision = ignis.diag_embed(D.reciprocal()) - A.mT @ A
    return (precision * p_cov).sum((-2, -1))


def _kl_to_low_rank(p_loc, p_cov, p_half_log_det, q):
    if tuple(p_loc.shape[-1:]) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    W, D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    n = q.event_shape[0]
    log_det_q = _low_rank_log_det(W, D, q._capacitance_tril)
    mahalanobis = _low_rank_mahalanobis(W, D, q.loc - p_loc, q._capacitance_tril)
    return 0.5 * (log_det_q - 2 * p_half_log_det + _low_rank_trace_term(q, p_cov)
                  + mahalanobis - n)


def _low_rank_half_log_det(p):
    return 0.5 * _low_rank_log_det(p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag,
                                   p._capacitance_tril)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    return _kl_to_low_rank(p.loc, p._dense_covariance(), _low_rank_half_log_det(p), q)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p, q):
    L = p._unbroadcasted_scale_tril
    return _kl_to_low_rank(p.loc, L @ L.mT, p._half_log_det(), q)


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p, q):
    if tuple(p.event_shape) != tuple(q.event_shape):
        raise ValueError("KL-divergence between two (Low Rank) Multivariate Normals with "
                         "different event shapes cannot be computed")
    n = p.event_shape[0]
    lq = q._unbroadcasted_scale_tril
    p_cov = p._dense_covariance()
    batch = tuple(ignis.broadcast_shapes(tuple(lq.shape[:-2]), tuple(p_cov.shape[:-2])))
    solved = ignis.linalg.solve_triangular(lq.expand(batch + (n, n)),
                                           p_cov.expand(batch + (n, n)), upper=False)
    # trace(Sq^-1 Sp) = trace(Lq^-T Lq^-1 Sp) = sum of (Lq^-1 Sp) * Lq^-1 ... computed
    # as the squared norm of Lq^-1 Lp with Sp = Lp Lp^T:
    lp = p.scale_tril
    solved = ignis.linalg.solve_triangular(lq.expand(batch + (n, n)),
                                           lp.expand(batch + (n, n)), upper=False)
    trace = solved.pow(2).sum((-2, -1))
    mahalanobis = _batch_mahalanobis(lq, q.loc - p.loc)
    return (q._half_log_det() - _low_rank_half_log_det(p)
            + 0.5 * (trace + mahalanobis - n))


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    mean = (p.low + p.high) / 2
    second = p.variance + mean.pow(2)
    return -p.entropy() + _minus_log_normal(q, mean, second)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    width = p.high - p.low
    # E[exp(-x / s)] over [low, high)
    expected = q.scale / width * ((-p.low / q.scale).exp() - (-p.high / q.scale).exp())
    return -p.entropy() + _minus_log_gumbel(q, p.mean, expected)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    kl = -p.entropy() - q.rate.log() + q.rate * p.mean
    return kl.masked_fill(p.low < 0, math.inf)


def _uniform_mean_log(low, high):
    """E[log x] for x uniform on [low, high), 0 <= low: (b log b - a log a) / (b - a) - 1."""
    return (ignis.xlogy(high, high) - ignis.xlogy(low, low)) / (high - low) - 1


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p, q):
    low = p.low.clamp(min=0)
    kl = -p.entropy() + _minus_log_gamma(q, p.mean, _uniform_mean_log(low, p.high))
    return kl.masked_fill(p.low < 0, math.inf)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p, q):
    low, high = p.low.clamp(0, 1), p.high.clamp(0, 1)
    mean_log = _uniform_mean_log(low, high)
    mean_log1m = _uniform_mean_log(1 - high, 1 - low)  # 1 - x is uniform on (1 - b, 1 - a]
    a, b = q.concentration1, q.concentration0
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    kl = -p.entropy() + log_beta - (a - 1) * mean_log - (b - 1) * mean_log1m
    return kl.masked_fill((p.low < 0).logical_or(p.high > 1), math.inf)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return -p.entropy() + _minus_log_normal(q, p.mean, 2 * p.rate.pow(-2))


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    rs = p.rate * q.scale
    return -p.entropy() + _minus_log_gumbel(q, p.mean, rs / (rs + 1))


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    second = p.concentration * (p.concentration + 1) / p.rate.pow(2)
    return -p.entropy() + _minus_log_normal(q, p.mean, second)


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    rs = p.rate * q.scale
    expected = (rs / (rs + 1)).pow(p.concentration)
    return -p.entropy() + _minus_log_gumbel(q, p.mean, expected)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    return -p.entropy() + _minus_log_normal(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    expected = (-p.loc / q.scale + p.scale.pow(2) / (2 * q.scale.pow(2))).exp()
    return -p.entropy() + _minus_log_gumbel(q, p.loc, expected)


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return -p.entropy() + _minus_log_normal(q, p.loc, 2 * p.scale.pow(2) + p.loc.pow(2))


def _beta_mean_log(p):
    return p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma()


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return -p.entropy() + _minus_log_normal(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(Beta, Uniform)
def _kl_beta_uniform(p, q):
    kl = -p.entropy() + (q.high - q.low).log()
    return kl.masked_fill((q.low > 0).logical_or(q.high < 1), math.inf)


@register_kl(Beta, Exponential)
def _kl_beta_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Beta, Gamma)
def _kl_beta_gamma(p, q):
    return -p.entropy() + _minus_log_gamma(q, p.mean, _beta_mean_log(p))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    low = p.low.clamp(min=q.scale)  # (only used where p.low >= q.scale)
    mean_log = _uniform_mean_log(low, p.high)
    kl = -p.entropy() - q.alpha.log() - q.alpha * q.scale.log() + (q.alpha + 1) * mean_log
    return kl.masked_fill(p.low < q.scale, math.inf)


def _minus_log_cb(q, mean):
    """-E[log ContinuousBernoulli(q.probs)(x)] from E x."""
    log_p, log_1mp = q.probs.log(), (-q.probs).log1p()
    return -(mean * (log_p - log_1mp) + log_1mp + q._cont_bern_log_norm())


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p, q):
    return -p.entropy() + _minus_log_cb(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p, q):
    kl = -p.entropy() + _minus_log_cb(q, p.mean)
    return kl.masked_fill((p.low < 0).logical_or(p.high > 1), math.inf)


@register_kl(ContinuousBernoulli, Exponential)
def _kl_cb_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_cb_normal(p, q):
    return -p.entropy() + _minus_log_normal(q, p.mean, p.variance + p.mean.pow(2))


@register_kl(ContinuousBernoulli, Uniform)
def _kl_cb_uniform(p, q):
    kl = -p.entropy() + (q.high - q.low).log()
    return kl.masked_fill((q.low > 0).logical_or(q.high < 1), math.inf)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # sum over x in {0, 1} of p(x) log(p(x) / q(x)), q(0) = e^-r, q(1) = r e^-r
    probs = p.probs
    return (ignis.xlogy(probs, probs) + ignis.xlogy(1 - probs, 1 - probs)
            - probs * q.rate.log() + q.rate)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    mean_log = p.scale.log() + p.alpha.reciprocal()
    return -p.entropy() + _minus_log_gamma(q, p.mean, mean_log)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    a = p.alpha.clamp(min=2)
    second = a * p.scale.pow(2) / (a - 2)  # infinite for alpha <= 2
    return -p.entropy() + _minus_log_normal(q, p.mean, second)


# Pairs where q has no density on part of p's support: KL is infinite.
for _p, _q in [(Normal, Beta), (Normal, Exponential), (Normal, Gamma), (Normal, Pareto),
               (Normal, Uniform), (Gumbel, Beta), (Gumbel, Exponential), (Gumbel, Gamma),
               (Gumbel, Pareto), (Gumbel, Uniform), (Laplace, Beta), (Laplace, Exponential),
               (Laplace, Gamma), (Laplace, Pareto), (Laplace, Uniform), (Exponential, Beta),
               (Exponential, Pareto), (Exponential, Uniform), (Gamma, Beta), (Gamma, Pareto),
               (Gamma, Uniform), (Pareto, Beta), (Pareto, Uniform), (Beta, Pareto),
               (ContinuousBernoulli, Pareto), (Exponential, ContinuousBernoulli),
               (Gamma, ContinuousBernoulli), (Gumbel, ContinuousBernoulli),
               (Laplace, ContinuousBernoulli), (Normal, ContinuousBernoulli),
               (Pareto, ContinuousBernoulli), (Poisson, Bernoulli), (Poisson, Binomial)]:
    register_kl(_p, _q)(_infinite_like)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    """The Bregman divergence of the log normalizer A between the natural
    parameters: A(theta_q) - A(theta_p) - <theta_q - theta_p, grad A(theta_p)>
    (two members of one family; grad A at p's detached parameters, as torch)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    log_normalizer_p = p._log_normalizer(*p_params)
    grads = ignis.autograd.grad(log_normalizer_p.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - log_normalizer_p
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result
