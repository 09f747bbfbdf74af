"""MultivariateNormal(loc, covariance_matrix=None, precision_matrix=None,
scale_tril=None): the Gaussian of mean loc, its covariance given by exactly
one of the three matrices. Everything is computed from the lower Cholesky
factor L of the covariance (cov = L L^T)."""
import math

import ignis
from . import constraints
from .distribution import Distribution
from .utils import lazy_property


def _batch_mahalanobis(scale_tril, diff):
    """diff^T (L L^T)^-1 diff over the last dim, L and diff broadcast."""
    n = diff.shape[-1]
    batch = ignis.broadcast_shapes(tuple(scale_tril.shape[:-2]), tuple(diff.shape[:-1]))
    L = scale_tril.expand(tuple(batch) + (n, n))
    d = diff.expand(tuple(batch) + (n,)).unsqueeze(-1)
    solved = ignis.linalg.solve_triangular(L, d, upper=False)
    return solved.squeeze(-1).pow(2).sum(-1)


def _precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision^-1, from a Cholesky of the
    flipped precision (no explicit inverse of the precision)."""
    flipped = ignis.linalg.cholesky(precision.flip((-2, -1)))
    l_inv = flipped.flip((-2, -1)).mT
    eye = ignis.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return ignis.linalg.solve_triangular(l_inv, eye.expand(l_inv.shape), upper=False)


class MultivariateNormal(Distribution):
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m for m in (covariance_matrix, scale_tril, precision_matrix) if m is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        matrix = given[0]
        if matrix.dim() < 2:
            name = ("covariance_matrix" if covariance_matrix is not None else
                    "scale_tril" if scale_tril is not None else "precision_matrix")
            raise ValueError(f"{name} must be at least two-dimensional, with optional leading "
                             f"batch dimensions")
        batch_shape = ignis.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))
        n = loc.shape[-1]
        full = tuple(batch_shape) + (n, n)
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(full)
        else:
            self.precision_matrix = precision_matrix.expand(full)
        self.loc = loc.expand(tuple(batch_shape) + (n,))
        super().__init__(batch_shape, (n,), validate_args=validate_args)
        # The factor of the matrix as given, not broadcast (smaller solves).
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ignis.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape, _instance)
        return new  # _unbroadcasted_scale_tril is shared as is (it broadcasts)

    @lazy_property
    def scale_tril(self):
        L = self._unbroadcasted_scale_tril
        return L.expand(tuple(self._batch_shape) + tuple(L.shape[-2:]))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(tuple(self._batch_shape) + tuple(L.shape[-2:]))

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        eye = ignis.eye(L.shape[-1], dtype=L.dtype, device=L.device)
        l_inv = ignis.linalg.solve_triangular(L, eye.expand(L.shape), upper=False)
        return (l_inv.mT @ l_inv).expand(tuple(self._batch_shape) + tuple(L.shape[-2:]))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = ignis.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
