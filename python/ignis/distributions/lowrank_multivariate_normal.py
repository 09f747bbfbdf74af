"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): the Gaussian of
mean loc and covariance W W^T + diag(D), W = cov_factor (n x r), D =
cov_diag. Solves and log-determinants go through the r x r "capacitance"
matrix K = I + W^T D^-1 W (Woodbury identity and matrix determinant lemma),
so nothing of size n x n is factored."""
import math

import ignis
from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis


def _capacitance_tril(W, D):
    """The Cholesky factor of I + W^T D^-1 W."""
    m = W.shape[-1]
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W
    K = K + ignis.eye(m, dtype=W.dtype, device=W.device)
    return ignis.linalg.cholesky(K)


def _low_rank_log_det(W, D, capacitance_tril):
    """log det(W W^T + D) = 2 log det(L_K) + sum log D."""
    return (2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
            + D.log().sum(-1))


def _low_rank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_K^-1 W^T D^-1 x|^2."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = (Wt_Dinv @ x.unsqueeze(-1)).squeeze(-1)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            batch_shape = ignis.broadcast_shapes(tuple(loc.shape[:-1]),
                                                 tuple(cov_factor.shape[:-2]),
                                                 tuple(cov_diag.shape[:-1]))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {tuple(loc.shape)}, cov_factor "
                             f"{tuple(cov_factor.shape)}, cov_diag {tuple(cov_diag.shape)}"
                             ) from e
        batch_shape = tuple(batch_shape)
        n, m = event_shape[0], cov_factor.shape[-1]
        self.loc = loc.expand(batch_shape + (n,))
        self.cov_factor = cov_factor.expand(batch_shape + (n, m))
        self.cov_diag = cov_diag.expand(batch_shape + (n,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        var = (self._unbroadcasted_cov_factor.pow(2).sum(-1)
               + self._unbroadcasted_cov_diag)
        return var.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    def _dense_covariance(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return W @ W.mT + ignis.diag_embed(D)

    @property
    def scale_tril(self):
        # Cholesky of the covariance scaled to unit diagonal, then scaled back
        # (better conditioned when the variances differ in magnitude).
        n = self._event_shape[0]
        root_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        W_scaled = self._unbroadcasted_cov_factor / root_d
        K = W_scaled @ W_scaled.mT + ignis.eye(n, dtype=W_scaled.dtype, device=W_scaled.device)
        L = root_d * ignis.linalg.cholesky(K)
        return L.expand(tuple(self._batch_shape) + (n, n))

    @property
    def covariance_matrix(self):
        n = self._event_shape[0]
        return self._dense_covariance().expand(tuple(self._batch_shape) + (n, n))

    @property
    def precision_matrix(self):
        # Woodbury: D^-1 - D^-1 W K^-1 W^T D^-1, with K^-1 = L_K^-T L_K^-1.
        n = self._event_shape[0]
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        Wt_Dinv = W.mT / D.unsqueeze(-2)
        A = ignis.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = ignis.diag_embed(D.reciprocal()) - A.mT @ A
        return precision.expand(tuple(self._batch_shape) + (n, n))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        w_shape = tuple(shape[:-1]) + tuple(W.shape[-1:])
        eps_w = ignis.randn(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = ignis.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (W @ eps_w.unsqueeze(-1)).squeeze(-1) + D.sqrt() * eps_d

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        M = _low_rank_mahalanobis(W, D, diff, self._capacitance_tril)
        log_det = _low_rank_log_det(W, D, self._capacitance_tril)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        log_det = _low_rank_log_det(W, D, self._capacitance_tril)
        n = self._event_shape[0]
        h = 0.5 * (n * (1.0 + math.log(2 * math.pi)) + log_det)
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
