"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and
orthogonal as parametrizations (nn.utils.parametrize), the successors of
the hook-based nn.utils.weight_norm / spectral_norm."""
from enum import Enum, auto

import ignis
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .weight_norm import _weight_norm, norm_except_dim


# --- orthogonal ---------------------------------------------------------------------------

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _householder_product(A, tau):
    """The first k columns of H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T
    with v_i column i of A below the diagonal and 1 on it
    (torch.linalg.householder_product for real A of shape (..., n, k)),
    composed of differentiable ops."""
    n, k = A.size(-2), A.size(-1)
    eye = ignis.eye(n, k, dtype=A.dtype, device=A.device)
    V = A.tril(-1) + eye
    Q = eye.expand(*A.shape[:-2], n, k)
    for i in reversed(range(k)):
        v = V[..., :, i:i + 1]
        Q = Q - tau[..., i:i + 1].unsqueeze(-1) * (v @ (v.mT @ Q))
    return Q


def _geqrf(A):
    """LAPACK's geqrf for real A (..., m, n): R on and above the diagonal,
    the Householder vectors (unit leading entry implied) below it, and tau;
    each reflector as dlarfg makes it (beta = -sign(alpha) * norm)."""
    A = A.clone()
    m, n = A.size(-2), A.size(-1)
    taus = []
    for i in range(min(m, n)):
        alpha = A[..., i, i]
        x = A[..., i + 1:, i]
        xnorm = x.norm(dim=-1) if m - i > 1 else ignis.zeros_like(alpha)
        nonzero = xnorm != 0
        norm = ignis.sqrt(alpha * alpha + xnorm * xnorm)
        beta = ignis.where(alpha >= 0, -norm, norm)
        safe_beta = ignis.where(nonzero, beta, ignis.ones_like(beta))
        tau = ignis.where(nonzero, (beta - alpha) / safe_beta, ignis.zeros_like(beta))
        scale = ignis.where(nonzero, 1 / (alpha - safe_beta), ignis.zeros_like(beta))
        v = ignis.cat([ignis.ones_like(alpha).unsqueeze(-1), x * scale.unsqueeze(-1)], dim=-1)
        # Apply H = I - tau v v^T to the trailing columns, then store v and beta.
        if i + 1 < n:
            trailing = A[..., i:, i + 1:]
            A[..., i:, i + 1:] = trailing - tau[..., None, None] * v.unsqueeze(-1) * \
                (v.unsqueeze(-2) @ trailing)
        A[..., i + 1:, i] = ignis.where(nonzero.unsqueeze(-1), x * scale.unsqueeze(-1), x)
        A[..., i, i] = ignis.where(nonzero, beta, alpha)
        taus.append(tau)
    return A, ignis.stack(taus, dim=-1)


def _with_diagonal(A, diag):
    """A with its (..., min(n, k)) main diagonal replaced by `diag`."""
    eye = ignis.eye(A.size(-2), A.size(-1), dtype=A.dtype, device=A.device)
    d = ignis.zeros(*A.shape[:-2], A.size(-1), dtype=A.dtype, device=A.device)
    d[..., :diag.size(-1)] = diag
    return A * (1 - eye) + eye * d.unsqueeze(-2)


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    eye = ignis.eye(k, dtype=Q.dtype, device=Q.device)
    eps = 10.0 * n * ignis.finfo(Q.dtype).eps
    return ignis.allclose(Q.mT @ Q, eye, atol=eps)


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with diag(R) made non-negative: LAPACK's
    Householder Q times the signs of R's diagonal, as torch computes it."""
    Q, R = ignis.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


class _Orthogonal(Module):
    """Maps an unconstrained matrix (batch) to an orthogonal one: through the
    matrix exponential or the Cayley map of the skew-symmetric matrix of its
    lower triangle, or as a product of Householder reflections. With the
    trivialization, the result is multiplied by the buffer `base`, set by
    right_inverse, so the unconstrained tensor starts at the identity map."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # X is tall (n >= k) from here.
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:  # embed into a square matrix
                X = ignis.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT  # skew-symmetric
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = ignis.linalg.matrix_exp(A)
            else:  # (I + A/2)(I - A/2)^{-1}, as a solve
                eye = ignis.eye(n, dtype=A.dtype, device=A.device)
                Q = ignis.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            # X's diagonal (+-1, truncated to integers as torch does) flips
            # columns; it is not differentiated through.
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().to(Q.dtype).unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    @ignis.no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            # Householder: the QR reflectors, R's diagonal turned into signs so
            # that forward() rebuilds Q's columns with diag(R) > 0.
            A, tau = _geqrf(Q)
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            signs = ignis.where(tau == 0.0, -signs, signs)
            A = _with_diagonal(A, signs)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:  # complete Q to a random n x n orthogonal matrix
            N = ignis.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(ignis.cat([Q, N], dim=-1))
        self.base = Q
        # -Id: householder(zeros) and the identity diagonal give the identity map.
        neg_id = ignis.zeros_like(Q_init)
        m = min(neg_id.size(-2), neg_id.size(-1))
        return _with_diagonal(neg_id, -ignis.ones(*neg_id.shape[:-2], m, dtype=neg_id.dtype,
                                                   device=neg_id.device))


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrains the matrix (or batch of matrices) `name` to be orthogonal
    (torch.nn.utils.parametrizations.orthogonal). orthogonal_map defaults to
    "matrix_exp" for square matrices and "householder" otherwise, as
    torch's does for real dtypes. Returns the module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ignis.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# --- weight_norm --------------------------------------------------------------------------

class _WeightNorm(Module):
    """(g, v) -> g * v / ||v|| (the norm over every dim but `dim`)."""

    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Weight normalization as a parametrization: the originals are
    `parametrizations.<name>.original0` (g) and `original1` (v)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# --- spectral_norm ------------------------------------------------------------------------

class _SpectralNorm(Module):
    """weight / sigma, sigma estimated by power iteration on the buffers
    `_u` and `_v` (updated in training mode; 15 iterations at creation).
    A 1-d weight is simply normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight.detach())
            h, w = weight_mat.shape
            u = ignis.randn(h, dtype=weight.dtype, device=weight.device)
            v = ignis.randn(w, dtype=weight.dtype, device=weight.device)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.flatten(1)

    @ignis.no_grad()
    def _power_method(self, weight_mat, n_power_iterations):
        # u first, then v (the hook-based spectral_norm goes v, then u).
        for _ in range(n_power_iterations):
            self._u.copy_(F.normalize(ignis.mv(weight_mat, self._v), dim=0, eps=self.eps))
            self._v.copy_(F.normalize(ignis.mv(weight_mat.mT, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ignis.dot(u, ignis.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization as a parametrization; dim defaults to 1 for
    ConvTranspose modules and 0 otherwise. Returns the module."""
    weight = getattr(module, name, None)
    if not isinstance(weight, ignis.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
