"""LKJCholesky(dim, concentration=1.0): the LKJ law on correlation matrices
(Lewandowski, Kurowicka & Joe, 2009), density proportional to
det(C)^(concentration - 1), over their lower Cholesky factors L.

Sampling is the onion method: row i of L (i >= 1) is sqrt(y_i) u_i on its
first i entries, u_i uniform on the unit sphere and
y_i ~ Beta(i / 2, concentration + (dim - 2) / 2 - (i - 1) / 2) (the squared
length of the row's off-diagonal part), then the diagonal entry completes
the row to unit norm.

In L's coordinates the density is
prod_(i=1)^(d-1) L_ii^(d - i - 1 + 2 (concentration - 1)) / c, with
log c = (d - 1) / 2 log(pi) + log Gamma_(d-1)(a - 1/2) - (d - 1) log Gamma(a),
a = concentration + (d - 1) / 2 (Gamma_p the multivariate gamma function)."""
import math

import ignis
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = ignis.Size((dim, dim))
        # The onion method's Beta for each row i: Beta(i / 2, eta + (d - 2) / 2
        # - (i - 1) / 2) (row 0's is unused: the row is e_0). torch's first
        # parameter is i - 1/2 instead, which gives rows past the second too
        # large a spread (its samples' correlations are not LKJ's).
        row = ignis.arange(dim, dtype=self.concentration.dtype,
                           device=self.concentration.device)
        offset = (row - 1).clamp(min=0)  # 0, 0, 1, ..., dim - 2
        marginal = self.concentration + 0.5 * (dim - 2)
        self._beta = Beta((0.5 * row).clamp(min=0.5), marginal.unsqueeze(-1) - 0.5 * offset,
                          validate_args=False)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self)) if _instance is None else _instance
        batch_shape = ignis.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with ignis.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            normal = ignis.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            norms = normal.norm(dim=-1, keepdim=True)
            # row 0 has no entries below the diagonal: a zero row, not 0 / 0
            sphere = normal / ignis.where(norms > 0, norms, ignis.ones_like(norms))
            w = y.sqrt() * sphere
            diag = (1 - w.pow(2).sum(-1)).clamp(min=ignis.finfo(w.dtype).tiny).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = self.dim
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        # exponent of L_ii for i = 1..d-1: d - i - 1 + 2 (concentration - 1)
        i = ignis.arange(1, d, dtype=value.dtype, device=value.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + d - 1 - i
        unnormalized = (order * diag.log()).sum(-1)
        alpha = self.concentration + 0.5 * (d - 1)
        log_normalizer = (0.5 * (d - 1) * math.log(math.pi)
                          + ignis.mvlgamma(alpha - 0.5, d - 1)
                          - (d - 1) * alpha.lgamma())
        return unnormalized - log_normalizer
