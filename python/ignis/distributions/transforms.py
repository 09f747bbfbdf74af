"""Transforms: invertible maps y = t(x) with log|det dy/dx|, for
TransformedDistribution (torch.distributions.transforms). Each has a domain
and a codomain constraint (their event_dim says how many rightmost dims
one application acts on), sign (+1 / -1 for monotone maps of scalars) and
forward_shape / inverse_shape."""
import numbers

import ignis
import ignis.nn.functional as F
from . import constraints
from .utils import eps, sum_rightmost, tiny

__all__ = ["Transform", "ExpTransform", "AffineTransform", "SigmoidTransform",
           "TanhTransform", "SoftmaxTransform", "StickBreakingTransform", "ComposeTransform",
           "PowerTransform", "AbsTransform", "identity_transform"]


class Transform:
    domain = constraints.real
    codomain = constraints.real
    bijective = False

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached = None  # (x, y) of the last call, with cache_size=1

    @property
    def event_dim(self):
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def sign(self):
        raise NotImplementedError

    @property
    def inv(self):
        """The inverse transform (y -> x)."""
        return _InverseTransform(self)

    def __call__(self, x):
        if self._cache_size and self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size and self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """t.inv: calls t's inverse; its log-det is minus t's."""

    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def _inverse(self, y):
        return self._inv(y)

    def _inv_call(self, y):
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__


class _SameKind(Transform):
    """Transforms without parameters: equal to any other of their class."""

    def __eq__(self, other):
        return type(other) is type(self)

    __hash__ = object.__hash__


class ExpTransform(_SameKind):
    """y = exp(x)."""
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


def _clipped_sigmoid(x):
    # Kept inside (0, 1) so that logs of it (and the inverse) stay finite.
    return x.sigmoid().clamp(min=tiny(x.dtype), max=1.0 - eps(x.dtype))


class SigmoidTransform(_SameKind):
    """y = sigmoid(x)."""
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

    def _inverse(self, y):
        y = y.clamp(min=tiny(y.dtype), max=1.0 - eps(y.dtype))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(_SameKind):
    """y = tanh(x)."""
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2), written so that it stays accurate for large |x|.
        return 2.0 * (0.6931471805599453 - x - F.softplus(-2.0 * x))


class AbsTransform(_SameKind):
    """y = |x| (not injective: the inverse gives the nonnegative root)."""
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class SoftmaxTransform(_SameKind):
    """y = softmax(x) over the last dim (not bijective: the inverse is log)."""
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.amax(-1, keepdim=True)).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class StickBreakingTransform(_SameKind):
    """Maps R^(K-1) onto the K-simplex by stick breaking (bijective)."""
    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    @staticmethod
    def _log_offset(n, like):
        # log(n), log(n-1), ..., log(1): centres the logits of each break.
        return ignis.arange(n, 0, -1, dtype=like.dtype, device=like.device).log()

    def _call(self, x):
        z = _clipped_sigmoid(x - self._log_offset(x.shape[-1], x))
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, (0, 1), value=1.0) * F.pad(z_cumprod, (1, 0), value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=tiny(y.dtype))
        return y_crop.log() - remaining.log() + self._log_offset(y_crop.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        x = x - self._log_offset(x.shape[-1], x)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ignis.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return ignis.Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _shape_of(v):
    return tuple(v.shape) if isinstance(v, ignis.Tensor) else ()


class AffineTransform(Transform):
    """y = loc + scale * x; event_dim > 0 treats that many rightmost dims as
    one event (the log-det sums over them)."""
    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else \
            constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Real):
            import math
            result = ignis.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self._event_dim])
                                    + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        return ignis.broadcast_shapes(tuple(shape), _shape_of(self.loc), _shape_of(self.scale))

    inverse_shape = forward_shape

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False

        def same(a, b):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                return a == b
            a = a if isinstance(a, ignis.Tensor) else ignis.tensor(float(a))
            b = b if isinstance(b, ignis.Tensor) else ignis.tensor(float(b))
            return bool((a == b).all())
        return same(self.loc, other.loc) and same(self.scale, other.scale)

    __hash__ = object.__hash__


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""
    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        if not isinstance(exponent, ignis.Tensor):
            exponent = ignis.tensor(float(exponent))
        self.exponent = exponent

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return ignis.broadcast_shapes(tuple(shape), tuple(self.exponent.shape))

    inverse_shape = forward_shape

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__


class _EventDimConstraint(constraints.Constraint):
    """The domain / codomain of a composition: its parts' constraint with the
    event_dim the composition works at."""

    def __init__(self, base, event_dim):
        self.base, self.event_dim = base, event_dim
        self.is_discrete = base.is_discrete

    def check(self, value):
        extra = self.event_dim - self.base.event_dim
        return constraints.independent(self.base, extra).check(value) if extra > 0 \
            else self.base.check(value)

    def __repr__(self):
        return repr(self.base) if self.event_dim == self.base.event_dim else \
            f"IndependentConstraint({self.base!r}, {self.event_dim - self.base.event_dim})"


class ComposeTransform(Transform):
    """parts applied in order: y = parts[-1](...parts[0](x))."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        return _EventDimConstraint(self.parts[0].domain, event_dim)

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        return _EventDimConstraint(self.parts[-1].codomain, event_dim)

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    def _call(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def _inverse(self, y):
        for part in reversed(self.parts):
            y = part.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return ignis.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        event_dim = self.domain.event_dim
        total = 0
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(part.log_abs_det_jacobian(a, b),
                                          event_dim - part.domain.event_dim)
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def __repr__(self):
        return "ComposeTransform(\n    " + ",\n    ".join(repr(p) for p in self.parts) + "\n)"


identity_transform = ComposeTransform([])


class SoftplusTransform(_SameKind):
    """y = softplus(x) = log(1 + e^x), onto the positive reals."""
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        # x = log(e^y - 1) = y + log(1 - e^-y), written to stay finite for large y.
        return y + (-(-y).expm1()).log()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)  # log sigmoid(x)


class LowerCholeskyTransform(_SameKind):
    """An unconstrained square matrix to a lower-triangular one with
    positive diagonal: the strict lower triangle is kept, the diagonal
    exponentiated."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_SameKind):
    """An unconstrained square matrix to a positive definite one: L L^T for
    L its LowerCholeskyTransform image."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L @ L.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(ignis.linalg.cholesky(y))


class IndependentTransform(Transform):
    """base_transform acting on events of reinterpreted_batch_ndims more
    rightmost dims: the log-det sums over them."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims,
                                    cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __repr__(self):
        return f"{type(self).__name__}({self.base_transform!r}, " \
               f"{self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshapes the rightmost dims from in_shape to out_shape (same numel);
    volume preserving."""
    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = ignis.Size(in_shape)
        self.out_shape = ignis.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.new_zeros(batch)

    def _reshaped(self, shape, old, new):
        shape = tuple(shape)
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if shape[cut:] != tuple(old):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {tuple(old)}")
        return ignis.Size(shape[:cut] + tuple(new))

    def forward_shape(self, shape):
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._reshaped(shape, self.out_shape, self.in_shape)


class CumulativeDistributionTransform(Transform):
    """y = distribution.cdf(x): onto the unit interval, log-det the log density."""
    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        return self.distribution.support

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)


class CatTransform(Transform):
    """Transforms applied to consecutive pieces (of given lengths) of dim."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths has {len(self.lengths)} entries for "
                             f"{len(self.transforms)} transforms")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    def _pieces(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} is out of range for a {value.dim()}-D value")
        if value.size(self.dim) != self.length:
            raise ValueError(f"CatTransform expects size {self.length} along dim {self.dim}, "
                             f"got {value.size(self.dim)}")
        start = 0
        for t, length in zip(self.transforms, self.lengths):
            yield t, value.narrow(self.dim, start, length), start, length
            start += length

    def _call(self, x):
        return ignis.cat([t(piece) for t, piece, _, _ in self._pieces(x)], dim=self.dim)

    def _inverse(self, y):
        return ignis.cat([t.inv(piece) for t, piece, _, _ in self._pieces(y)], dim=self.dim)

    def log_abs_det_jacobian(self, x, y):
        parts = []
        ys = [piece for _, piece, _, _ in self._pieces(y)]
        for (t, xs, _, _), yp in zip(self._pieces(x), ys):
            part = t.log_abs_det_jacobian(xs, yp)
            if t.event_dim < self.event_dim:
                part = sum_rightmost(part, self.event_dim - t.event_dim)
            parts.append(part)
        dim = self.dim if self.dim < 0 else self.dim - x.dim()
        # The pieces' log-dets are joined along dim when it is a batch dim,
        # summed when it is inside the event.
        if dim + self.event_dim >= 0:
            total = parts[0]
            for p in parts[1:]:
                total = total + p
            return total
        return ignis.cat(parts, dim=dim + self.event_dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """One transform per index along dim."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    def _slices(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} is out of range for a {value.dim()}-D value")
        if value.size(self.dim) != len(self.transforms):
            raise ValueError(f"StackTransform has {len(self.transforms)} transforms for size "
                             f"{value.size(self.dim)} along dim {self.dim}")
        return [value.select(self.dim, i) for i in range(value.size(self.dim))]

    def _call(self, x):
        return ignis.stack([t(v) for v, t in zip(self._slices(x), self.transforms)], self.dim)

    def _inverse(self, y):
        return ignis.stack([t.inv(v) for v, t in zip(self._slices(y), self.transforms)],
                           self.dim)

    def log_abs_det_jacobian(self, x, y):
        return ignis.stack([t.log_abs_det_jacobian(a, b) for a, b, t in
                            zip(self._slices(x), self._slices(y), self.transforms)], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


__all__ += ["SoftplusTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
            "IndependentTransform", "ReshapeTransform", "CumulativeDistributionTransform",
            "CatTransform", "StackTransform"]


def _tril_to_vec(matrix, diag=0):
    """The entries of the lower triangle (below diagonal `diag`), row by row."""
    n = matrix.shape[-1]
    rows, cols = ignis.tril_indices(n, n, diag, device=matrix.device)
    return matrix[..., rows, cols]


def _vec_to_tril(vec, diag=0):
    """The inverse of _tril_to_vec (diag <= 0): a square matrix, zeros elsewhere.
    Below diagonal diag of an n x n matrix lie m (m + 1) / 2 entries, m = n + diag."""
    count = vec.shape[-1]
    m = round(((1 + 8 * count) ** 0.5 - 1) / 2)
    if m * (m + 1) // 2 != count:
        raise ValueError(f"{count} entries do not fill a lower triangle")
    n = m - diag
    rows, cols = ignis.tril_indices(n, n, diag, device=vec.device)
    out = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    out[..., rows, cols] = vec
    return out


class CorrCholeskyTransform(_SameKind):
    """A vector of D (D - 1) / 2 reals to the Cholesky factor of a D x D
    correlation matrix: tanh makes each a partial correlation in (-1, 1),
    placed below the diagonal row by row; each row is then a stick
    breaking of the unit sphere, y_ij = r_ij sqrt(1 - sum_(k<j) y_ik^2)
    and y_ii the rest of the row's unit norm."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        e = eps(x.dtype)
        r = x.tanh().clamp(min=-1 + e, max=1 - e)
        r = _vec_to_tril(r, diag=-1)
        # remaining length of each row before column j: prod_(k<j) sqrt(1 - r_ik^2)
        remaining = (1 - r.pow(2)).sqrt().cumprod(-1)
        remaining = F.pad(remaining[..., :-1], (1, 0), value=1.0)
        n = r.shape[-1]
        eye = ignis.eye(n, dtype=r.dtype, device=r.device)
        return (r + eye) * remaining

    def _inverse(self, y):
        left = 1 - (y * y).cumsum(-1)
        left = F.pad(left[..., :-1], (1, 0), value=1.0)  # 1 - sum_(k<j) y_ik^2
        partial = _tril_to_vec(y, diag=-1) / _tril_to_vec(left, diag=-1).sqrt()
        return partial.atanh()

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # the stick breaking: 1/2 sum log(1 - sum_(k<j) y_ik^2) over j < i
        left = 1 - (y * y).cumsum(-1)
        stick = 0.5 * _tril_to_vec(left, diag=-2).log().sum(-1)
        # tanh: log(1 - tanh(x)^2), written to stay accurate for large |x|
        tanh = (2.0 * (0.6931471805599453 - x - F.softplus(-2.0 * x))).sum(-1)
        return stick + tanh

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        count = shape[-1]
        n = round((0.25 + 2 * count) ** 0.5 + 0.5)
        if n * (n - 1) // 2 != count:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return ignis.Size(tuple(shape[:-1]) + (n, n))

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        n = shape[-1]
        return ignis.Size(tuple(shape[:-2]) + (n * (n - 1) // 2,))


__all__ += ["CorrCholeskyTransform"]
