"""The gamma function machinery behind Gamma, Beta, Dirichlet, Chi2-based
StudentT: the regularized lower incomplete gamma P(a, x), its derivative
in a, a standard-gamma sampler, and the implicit reparameterization
gradient of its samples.

All of it runs in float64 whatever the parameters' dtype (results are cast
back): the sampler's rejection test and the derivatives lose too much in
float32.

Implicit reparameterization (Figurnov et al., 2018): a draw x ~ Gamma(a, 1)
is F^-1(u; a) for a uniform u, so with u held fixed
    dx/da = -(dF/da)(x; a) / (dF/dx)(x; a) = -(dP/da)(a, x) / pdf(x; a).
dP/da has no closed form: it is taken by a Richardson-extrapolated central
difference of P in a (truncation O(h^4), h = 1e-3 a), on whichever of P or
Q = 1 - P is computed directly, so that the difference does not cancel.
Its relative error is about 1e-9, well below that of torch's own
approximations of this gradient.
"""
import ignis
from ..autograd import Function

_TINY64 = 2.2250738585072014e-308
_EPS64 = 2.220446049250313e-16
_CONVERGED = 4 * _EPS64
_MAX_ITERATIONS = 5000


def _log_prefactor(a, x):
    # log(x^a e^-x / Gamma(a))
    return a * x.log() - x - a.lgamma()


def _lower_series(a, x):
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = 1.0 / a
    total = term.clone()
    n = a.clone()
    for _ in range(_MAX_ITERATIONS):
        n = n + 1
        term = term * x / n
        total = total + term
        if not bool((term.abs() > total.abs() * _CONVERGED).any()):
            break
    return (_log_prefactor(a, x).exp() * total).clamp(max=1.0)


def _upper_continued_fraction(a, x):
    """Q(a, x) = 1 - P(a, x) by its continued fraction (modified Lentz; fast
    for x >= a + 1)."""
    b = x + 1 - a
    c = ignis.full_like(x, 1.0 / _TINY64)
    d = 1.0 / b
    h = d.clone()
    for i in range(1, _MAX_ITERATIONS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = ignis.where(d.abs() < _TINY64, ignis.full_like(d, _TINY64), d)
        c = b + an / c
        c = ignis.where(c.abs() < _TINY64, ignis.full_like(c, _TINY64), c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        # A few ulps, not one: converged fractions can wobble by 2 ulps forever.
        if not bool(((delta - 1).abs() > _CONVERGED).any()):
            break
    return (_log_prefactor(a, x).exp() * h).clamp(max=1.0)


def _by_region(a, x, series_fn, fraction_fn):
    """series_fn where x < a + 1, fraction_fn elsewhere, each computed on its
    own elements only; x <= 0 maps to P = 0 (Q = 1)."""
    a, x = ignis.broadcast_tensors(a, x)
    a, x = a.reshape(-1), x.reshape(-1)
    positive = x > 0
    in_series = positive.logical_and(x < a + 1)
    in_fraction = positive.logical_and(in_series.logical_not())
    out = ignis.zeros_like(x)
    if bool(in_series.any()):
        out[in_series] = series_fn(a[in_series], x[in_series])
    if bool(in_fraction.any()):
        out[in_fraction] = fraction_fn(a[in_fraction], x[in_fraction])
    return out, in_series, in_fraction, positive


def _gammainc_values(a, x):
    """P(a, x) in float64 (no gradient), of the broadcast shape."""
    shape = ignis.broadcast_shapes(tuple(a.shape), tuple(x.shape))
    with ignis.no_grad():
        a64, x64 = a.detach().double(), x.detach().double()
        finite_x = x64.masked_fill(x64 == float("inf"), 0.0)
        out, _, _, _ = _by_region(a64, finite_x, _lower_series,
                                  lambda aa, xx: 1 - _upper_continued_fraction(aa, xx))
        out = out.reshape(shape).masked_fill((x64 == float("inf")).expand(shape), 1.0)
        return out


def _dgammainc_da(a, x):
    """dP/da (float64, no gradient): Richardson-extrapolated central
    differences of P where the series is used, of -Q where the fraction is."""
    shape = ignis.broadcast_shapes(tuple(a.shape), tuple(x.shape))
    with ignis.no_grad():
        a64, x64 = ignis.broadcast_tensors(a.detach().double(), x.detach().double())
        a64, x64 = a64.reshape(-1), x64.reshape(-1)
        h = 1e-3 * a64
        positive = x64 > 0
        # The region is chosen at a, and kept for the shifted evaluations.
        in_series = positive.logical_and(x64 < a64 + 1)
        in_fraction = positive.logical_and(in_series.logical_not())
        out = ignis.zeros_like(x64)

        def richardson(fn, aa, xx, hh):
            def central(step):
                return (fn(aa + step, xx) - fn(aa - step, xx)) / (2 * step)
            return (4 * central(hh / 2) - central(hh)) / 3

        if bool(in_series.any()):
            m = in_series
            out[m] = richardson(_lower_series, a64[m], x64[m], h[m])
        if bool(in_fraction.any()):
            m = in_fraction
            out[m] = -richardson(_upper_continued_fraction, a64[m], x64[m], h[m])
        return out.reshape(shape)


def _gamma_log_pdf(a, x):
    return (a - 1) * x.log() - x - a.lgamma()


class _GammaInc(Function):
    """P(a, x), differentiable in both arguments."""

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return _gammainc_values(a, x).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        a64, x64 = a.double(), x.double()
        grad_a = grad_x = None
        if ctx.needs_input_grad[0]:
            grad_a = _reduce_to(grad * _dgammainc_da(a64, x64).to(grad.dtype), a.shape)
        if ctx.needs_input_grad[1]:
            pdf = ignis.where(x64 > 0, _gamma_log_pdf(a64, x64.clamp(min=_TINY64)).exp(),
                              ignis.zeros_like(x64))
            grad_x = _reduce_to(grad * pdf.to(grad.dtype), x.shape)
        return grad_a, grad_x


def _reduce_to(grad, shape):
    # Sums a broadcast gradient back to an argument's shape.
    shape = tuple(shape)
    while grad.dim() > len(shape):
        grad = grad.sum(0)
    for i, s in enumerate(shape):
        if s == 1 and grad.shape[i] != 1:
            grad = grad.sum(i, keepdim=True)
    return grad


def gammainc(a, x):
    """The regularized lower incomplete gamma function P(a, x)
    (torch.special.gammainc), differentiable in a and in x."""
    return _GammaInc.apply(a, x)


def _sample_standard_gamma(alpha):
    """Draws of Gamma(alpha, 1), one per element of alpha (no gradient).

    Marsaglia & Tsang (2000): for a >= 1, x = d (1 + c z)^3 with z normal,
    d = a - 1/3, c = 1 / sqrt(9 d), accepted when
    log u < z^2 / 2 + d - d v + d log v; every element is redrawn until it
    is accepted (acceptance is above 95%, so a few rounds). For a < 1 a
    draw for a + 1 is boosted by u^(1/a)."""
    with ignis.no_grad():
        a = alpha.detach().double()
        boost = a < 1
        a1 = ignis.where(boost, a + 1, a)
        d = a1 - 1.0 / 3.0
        c = (9 * d).rsqrt()
        out = ignis.zeros_like(a)
        pending = ignis.ones_like(a, dtype=ignis.bool)
        while bool(pending.any()):
            z = ignis.randn(a.shape, dtype=ignis.float64, device=a.device)
            u = ignis.rand(a.shape, dtype=ignis.float64, device=a.device)
            v = (1 + c * z) ** 3
            log_v = v.clamp(min=_TINY64).log()
            ok = (v > 0).logical_and(u.log() < 0.5 * z * z + d - d * v + d * log_v)
            take = pending.logical_and(ok)
            out = ignis.where(take, d * v, out)
            pending = pending.logical_and(ok.logical_not())
        u = ignis.rand(a.shape, dtype=ignis.float64, device=a.device).clamp(min=_TINY64)
        boosted = (out.log() + u.log() / a).exp()
        out = ignis.where(boost, boosted, out)
        tiny = ignis.finfo(alpha.dtype).tiny
        return out.to(alpha.dtype).clamp(min=tiny)


def standard_gamma_grad(alpha, x):
    """dx/dalpha of a Gamma(alpha, 1) draw x at fixed uniform level
    (torch._standard_gamma_grad): -(dP/da) / pdf."""
    a64, x64 = alpha.detach().double(), x.detach().double()
    with ignis.no_grad():
        grad = -_dgammainc_da(a64, x64) / _gamma_log_pdf(a64, x64).exp()
    return grad.to(alpha.dtype)


class _StandardGamma(Function):
    """Gamma(alpha, 1) samples with the implicit reparameterization gradient."""

    @staticmethod
    def forward(ctx, alpha):
        x = _sample_standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * standard_gamma_grad(alpha, x)


def standard_gamma(alpha):
    """Draws of Gamma(alpha, 1) of alpha's shape, differentiable in alpha."""
    return _StandardGamma.apply(alpha)


def _gammaincc_values(a, x):
    """Q(a, x) = 1 - P(a, x) in float64 (no gradient), computed directly
    (not as 1 - P, which loses Q's digits where P is near 1)."""
    shape = ignis.broadcast_shapes(tuple(a.shape), tuple(x.shape))
    with ignis.no_grad():
        a64, x64 = a.detach().double(), x.detach().double()
        finite_x = x64.masked_fill(x64 == float("inf"), 0.0)
        out, _, _, positive = _by_region(a64, finite_x,
                                         lambda aa, xx: 1 - _lower_series(aa, xx),
                                         _upper_continued_fraction)
        out = out.masked_fill(positive.logical_not(), 1.0)  # Q(a, 0) = 1
        return out.reshape(shape).masked_fill((x64 == float("inf")).expand(shape), 0.0)


def _special_edges(a, x, value, upper):
    """torch's values where the series and fraction do not apply: NaN for
    a < 0, x < 0, a = x = 0 or a NaN; P(0, x > 0) = 1; P(inf, x) = 0
    (Q the complements)."""
    a, x = ignis.broadcast_tensors(a, x)
    one, zero = (0.0, 1.0) if upper else (1.0, 0.0)
    value = value.masked_fill((a == 0).logical_and(x > 0), one)
    value = value.masked_fill((a == float("inf")).logical_and(x < float("inf")), zero)
    bad = (a < 0).logical_or(x < 0).logical_or((a == 0).logical_and(x == 0))
    bad = bad.logical_or(a.isnan()).logical_or(x.isnan())
    bad = bad.logical_or((a == float("inf")).logical_and(x == float("inf")))
    return value.masked_fill(bad, float("nan"))


class _GammaIncC(Function):
    """Q(a, x), differentiable in both arguments (dQ = -dP)."""

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return _gammaincc_values(a, x).to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        grad_a, grad_x = _GammaInc.backward(ctx, grad)
        return (None if grad_a is None else -grad_a), (None if grad_x is None else -grad_x)


def _as_floats(a, x):
    # Integer arguments compute in the default float dtype; both the promoted one.
    if not isinstance(a, ignis.Tensor):
        a = ignis.tensor(a, dtype=x.dtype if x.is_floating_point() else None)
    if not isinstance(x, ignis.Tensor):
        x = ignis.tensor(x, dtype=a.dtype if a.is_floating_point() else None)
    dtype = ignis.promote_types(a.dtype, x.dtype)
    if not dtype.is_floating_point:
        dtype = ignis.get_default_dtype()
    return a.to(dtype), x.to(dtype)


def special_gammainc(a, x):
    """torch.special.gammainc, with torch's values at the domain's edges."""
    a, x = _as_floats(a, x)
    return _special_edges(a, x, _GammaInc.apply(a, x), upper=False)


def special_gammaincc(a, x):
    """torch.special.gammaincc: Q(a, x) = 1 - P(a, x), computed directly."""
    a, x = _as_floats(a, x)
    return _special_edges(a, x, _GammaIncC.apply(a, x), upper=True)
