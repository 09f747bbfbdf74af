"""Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None):
the distribution of sum_k x_k x_k^T for df Gaussian vectors x_k of
covariance V (df real, > p - 1 for p x p matrices). As MultivariateNormal,
everything is computed from the lower Cholesky factor L of V = L L^T.

Density, with Gamma_p the multivariate gamma function:
    log p(X) = (df - p - 1)/2 log|X| - tr(V^-1 X)/2
               - df p/2 log 2 - df/2 log|V| - log Gamma_p(df/2).
Samples come from the Bartlett decomposition: X = (L A)(L A)^T with A
lower triangular, A_ii = sqrt(chi2(df - i)), i = 0..p-1, and A_ij standard
normal below the diagonal, so rsample differentiates in df (through the
chi2 draws) and in L."""
import math
import warnings

import ignis
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import lazy_property

_LOG_2 = math.log(2)


def _multivariate_digamma(x, p):
    """d/dx log Gamma_p(x) = sum_i=0..p-1 digamma(x - i/2), for x > (p - 1)/2."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    offsets = ignis.arange(p, dtype=x.dtype, device=x.device) / 2
    return ignis.digamma(x.unsqueeze(-1) - offsets).sum(-1)


class Wishart(ExponentialFamily):
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        # df's lower bound depends on the matrix size, so the constraints are per instance.
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self._event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            # torch raises AssertionError here (not ValueError, unlike MultivariateNormal)
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        matrix = given[0]
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, ignis.Tensor):
            batch_shape = ignis.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(df.shape))
            self.df = df.expand(batch_shape)
        else:
            batch_shape = tuple(matrix.shape[:-2])
            self.df = ignis.tensor(df, dtype=matrix.dtype, device=matrix.device)
        batch_shape = tuple(batch_shape)
        p = matrix.shape[-1]
        event_shape = (matrix.shape[-2], p)
        # Checked whatever validate_args says: below p - 1 there is no density.
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = batch_shape + event_shape
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(full)
        else:
            self.precision_matrix = precision_matrix.expand(full)
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(i + 1) for i in range(len(batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ignis.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._diagonal_chi2()

    def _diagonal_chi2(self):
        """The chi2 laws of A_ii^2 in the Bartlett factor: df - i, i = 0..p-1."""
        L = self._unbroadcasted_scale_tril
        steps = ignis.arange(self._event_shape[-1], dtype=L.dtype, device=L.device)
        return Chi2(self.df.unsqueeze(-1) - steps, validate_args=False)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        full = batch_shape + tuple(self._event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(full)
        new.df = self.df.expand(batch_shape)
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(full)
        ExponentialFamily.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._batch_dims = [-(i + 1) for i in range(len(batch_shape))]
        new._dist_chi2 = new._diagonal_chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        L = self._unbroadcasted_scale_tril
        return L.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ignis.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        return ignis.cholesky_solve(eye.expand(L.shape), L).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def _df_matrix(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        """(df - p - 1) V, which exists only for df > p + 1 (NaN elsewhere)."""
        factor = self.df - (self._event_shape[-1] + 1)
        factor = factor.masked_fill(factor <= 0, float("nan"))
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        """Var X_ij = df (V_ij^2 + V_ii V_jj)."""
        V = self.covariance_matrix
        diagonal = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diagonal.unsqueeze(-1) * diagonal.unsqueeze(-2))

    def _bartlett_sample(self, sample_shape):
        L = self._unbroadcasted_scale_tril
        p = self._event_shape[-1]
        eps = ignis.finfo(L.dtype).eps
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps)
        shape = tuple(sample_shape) + tuple(self._batch_shape) + (p, p)
        below = ignis.randn(shape, dtype=L.dtype, device=L.device).tril(-1)
        factor = L @ (ignis.diag_embed(diagonal) + below)
        sample = factor @ factor.mT
        return 0.5 * (sample + sample.mT)  # symmetric to the last bit

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A sample by the Bartlett decomposition. For df close to p - 1 a
        draw can be numerically singular; such draws are redrawn up to
        max_try_correction times (default 10), with a warning, and may stay
        singular (their log_prob is then -inf or NaN)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = tuple(sample_shape)
        sample = self._bartlett_sample(sample_shape)
        singular = ~self.support.check(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redrawn = self._bartlett_sample(sample_shape)
                sample = ignis.where(singular[..., None, None], redrawn, sample)
                singular = ~self.support.check(sample)
                if not bool(singular.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        half_log_det_v = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace_term = ignis.cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-df * (p * _LOG_2 / 2 + half_log_det_v)
                - ignis.mvlgamma(df / 2, p)
                + (df - p - 1) / 2 * ignis.linalg.slogdet(value)[1]
                - trace_term / 2)

    def entropy(self):
        """(p + 1)/2 log|V| + p(p + 1)/2 log 2 + log Gamma_p(df/2)
        - (df - p - 1)/2 psi_p(df/2) + df p / 2."""
        df = self.df
        p = self._event_shape[-1]
        half_log_det_v = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det_v)
                + ignis.mvlgamma(df / 2, p)
                - (df - p - 1) / 2 * _multivariate_digamma(df / 2, p)
                + df * p / 2)

    @property
    def _natural_params(self):
        return -self.precision_matrix / 2, (self.df - self._event_shape[-1] - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        shape = y + (p + 1) / 2  # df / 2
        return (shape * (-ignis.linalg.slogdet(-2 * x)[1] + _LOG_2 * p)
                + ignis.mvlgamma(shape, p))
