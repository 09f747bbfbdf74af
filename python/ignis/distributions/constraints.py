"""Constraints: what values a parameter or a sample may take. check(value)
is a bool tensor, True where the value satisfies the constraint."""
import ignis

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean",
           "simplex", "integer_interval", "interval", "dependent", "dependent_property",
           "greater_than", "less_than", "is_dependent", "nonnegative_integer",
           "positive_integer", "real_vector", "independent", "positive_definite",
           "lower_cholesky", "one_hot", "greater_than_eq", "half_open_interval"]


class Constraint:
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A constraint that depends on other parameters (not checked)."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, *, is_discrete=False, event_dim=0):
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class dependent_property(property):
    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        super().__init__(fn)
        self.is_discrete, self.event_dim = is_discrete, event_dim

    def __call__(self, fn):
        # dependent_property(is_discrete=..., event_dim=...) used as a decorator.
        return dependent_property(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _Real(Constraint):
    def check(self, value):
        return value == value  # not NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        return (value == 0).logical_or(value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < value

    def __repr__(self):
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= value

    def __repr__(self):
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, value):
        return value < self.upper_bound

    def __repr__(self):
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (self.lower_bound <= value).logical_and(value <= self.upper_bound)

    def __repr__(self):
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        return (self.lower_bound <= value).logical_and(value < self.upper_bound)

    def __repr__(self):
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound):
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        return (value % 1 == 0).logical_and(self.lower_bound <= value) \
            .logical_and(value <= self.upper_bound)

    def __repr__(self):
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1).logical_and((value.sum(-1) - 1).abs() < 1e-6)


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound):
        self.lower_bound = lower_bound

    def check(self, value):
        return (value % 1 == 0).logical_and(value >= self.lower_bound)

    def __repr__(self):
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Independent(Constraint):
    """A constraint on single values, checked over the rightmost
    reinterpreted_batch_ndims dims all at once (torch's independent)."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self):
        return self.base_constraint.is_discrete

    @property
    def event_dim(self):
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        if self.reinterpreted_batch_ndims:
            result = result.reshape(tuple(result.shape[:result.dim()
                                                       - self.reinterpreted_batch_ndims])
                                    + (-1,)).all(-1)
        return result

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, " \
               f"{self.reinterpreted_batch_ndims})"


class _PositiveDefinite(Constraint):
    event_dim = 2

    def check(self, value):
        sym = (value - value.mT).abs().amax((-2, -1)) <= 1e-6 * value.abs().amax((-2, -1))
        return sym.logical_and(ignis.linalg.cholesky_ex(value)[1] == 0)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        lower = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        positive_diag = (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)
        return lower.logical_and(positive_diag)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        is_boolean = ((value == 0).logical_or(value == 1)).all(-1)
        return is_boolean.logical_and(value.sum(-1) == 1)


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
simplex = _Simplex()
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
real_vector = _Independent(real, 1)
independent = _Independent
positive_definite = _PositiveDefinite()
lower_cholesky = _LowerCholesky()
one_hot = _OneHot()


# --- matrix constraints and the ones of CatTransform / StackTransform ---------------

class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return ignis.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1],
                          dtype=ignis.bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value):
        square = super().check(value)
        if not bool(square.all()):
            return square
        close = (value - value.mT).abs() <= 1e-6 + 1e-6 * value.mT.abs()
        return close.reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym = super().check(value)
        if not bool(sym.all()):
            return sym
        return ignis.linalg.eigvalsh(value).ge(0).all(-1)


class _Multinomial(Constraint):
    """Nonnegative vectors (of counts) summing to at most upper_bound."""
    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound):
        self.upper_bound = upper_bound

    def check(self, x):
        return (x >= 0).all(dim=-1).logical_and(x.sum(dim=-1) <= self.upper_bound)

    def __repr__(self):
        return f"Multinomial(upper_bound={self.upper_bound})"


class _Cat(Constraint):
    """Constraints applied to consecutive pieces (of given lengths) along dim."""

    def __init__(self, cseq, dim=0, lengths=None):
        self.cseq = list(cseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"lengths has {len(self.lengths)} entries for "
                             f"{len(self.cseq)} constraints")
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} is out of range for a {value.dim()}-D value")
        checks, start = [], 0
        for constraint, length in zip(self.cseq, self.lengths):
            checks.append(constraint.check(value.narrow(self.dim, start, length)))
            start += length
        return ignis.cat(checks, self.dim)


class _Stack(Constraint):
    """One constraint per index along dim."""

    def __init__(self, cseq, dim=0):
        self.cseq = list(cseq)
        self.dim = dim

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value):
        if not -value.dim() <= self.dim < value.dim():
            raise IndexError(f"dim {self.dim} is out of range for a {value.dim()}-D value")
        pieces = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return ignis.stack([c.check(v) for v, c in zip(pieces, self.cseq)], self.dim)


lower_triangular = _LowerTriangular()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
multinomial = _Multinomial
cat = _Cat
stack = _Stack
__all__ += ["lower_triangular", "square", "symmetric", "positive_semidefinite", "multinomial",
            "cat", "stack"]


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: lower triangular,
    positive diagonal, rows of unit norm."""
    event_dim = 2

    def check(self, value):
        tol = eps_of(value.dtype) * value.size(-1) * 10
        row_norm = value.detach().pow(2).sum(-1).sqrt()
        unit_rows = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return lower_cholesky.check(value).logical_and(unit_rows)


def eps_of(dtype):
    return ignis.finfo(dtype).eps


corr_cholesky = _CorrCholesky()
__all__ += ["corr_cholesky"]
