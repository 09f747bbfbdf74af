"""torch.special's functions: those ignis's ops compute directly, and the
incomplete gamma, ndtri, erfcx, Hurwitz zeta, orthogonal polynomial and
spherical / modified Bessel functions as formulas over ops (below), and the
Bessel functions J, Y, K and Ai (ignis/_bessel.py)."""

__all__ = ["erf", "erfc", "expit", "logit", "xlogy", "xlog1py", "log1p", "expm1", "exp2",
           "logsumexp", "softmax", "log_softmax", "sinc", "round", "entr", "ndtr", "log_ndtr",
           "gammaln", "digamma", "psi", "polygamma", "multigammaln", "erfinv",
           "i0", "i0e", "i1", "i1e", "gammainc", "gammaincc", "ndtri", "erfcx", "zeta",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p", "spherical_bessel_j0",
           "modified_bessel_i0", "modified_bessel_i1", "bessel_j0", "bessel_j1", "bessel_y0",
           "bessel_y1", "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
           "scaled_modified_bessel_k1", "airy_ai"]

from ._bessel import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1,  # noqa: E402
                      modified_bessel_k0, modified_bessel_k1, scaled_modified_bessel_k0,
                      scaled_modified_bessel_k1)


def _ig():
    import ignis
    return ignis


def _same_as(name):
    """torch.special.<name>, which is ignis.<name>."""
    def fn(input):
        return getattr(_ig(), name)(input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"ignis.{name} (torch.special.{name})."
    return fn


erf, erfc, log1p, expm1, exp2 = (_same_as(n) for n in ("erf", "erfc", "log1p", "expm1", "exp2"))
digamma, erfinv = _same_as("digamma"), _same_as("erfinv")


def gammaln(input):
    """log |gamma(x)| (torch.special.gammaln): ignis.lgamma."""
    return _ig().lgamma(input)


def psi(input):
    """digamma (torch.special.psi)."""
    return _ig().digamma(input)


def polygamma(n, input):
    return _ig().polygamma(n, input)


def multigammaln(input, p):
    """The log multivariate gamma function (torch.special.multigammaln): ignis.mvlgamma."""
    return _ig().mvlgamma(input, p)


def expit(input):
    """1 / (1 + exp(-x)) (torch.special.expit)."""
    return _ig().sigmoid(input)


def logit(input, eps=None):
    return _ig().logit(input, eps)


def xlogy(input, other):
    return _ig().xlogy(input, other)


def xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is NaN) (torch.special.xlog1py)."""
    ig = _ig()
    r = input * ig.log1p(other)
    return ig.where((input == 0) & ~other.isnan(), ig.zeros_like(r), r)


def logsumexp(input, dim, keepdim=False):
    return _ig().logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _ig().softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _ig().log_softmax(input, dim, dtype=dtype)


def sinc(input):
    return _ig().sinc(input)


def round(input, *, decimals=0):
    """Round half to even, at `decimals` decimal places (torch.special.round)."""
    return _ig().round(input, decimals=decimals)


def entr(input):
    """-x log x for x > 0, 0 at 0, -inf below (torch.special.entr)."""
    ig = _ig()
    r = -input * ig.log(ig.where(input > 0, input, ig.ones_like(input)))
    r = ig.where(input == 0, ig.zeros_like(r), r)
    return ig.where(input < 0, ig.full_like(r, float("-inf")), r)


def ndtr(input):
    """The standard normal CDF (torch.special.ndtr)."""
    ig = _ig()
    x = input if input.is_floating_point() else input.to(ig.get_default_dtype())
    return 0.5 * ig.erfc(-x * 0.7071067811865476)


def log_ndtr(input):
    """log of the standard normal CDF, accurate in both tails
    (torch.special.log_ndtr): log1p(-ndtr(-x)) above 0, log(ndtr(x)) down to
    -10, and below that the asymptotic series of log(phi(x) / -x)."""
    ig = _ig()
    x = input if input.is_floating_point() else input.to(ig.get_default_dtype())
    upper = ig.log1p(-0.5 * ig.erfc(x * 0.7071067811865476))
    middle = ig.log(0.5 * ig.erfc(-x * 0.7071067811865476))
    xs = ig.where(x < -10, x, ig.full_like(x, -10.0))
    r = 1.0 / (xs * xs)
    series = r * (-1.0 + r * (3.0 + r * (-15.0 + r * (105.0 + r * (-945.0 + r * 10395.0)))))
    tail = -0.5 * xs * xs - ig.log(-xs) - 0.9189385332046727 + ig.log1p(series)
    return ig.where(x > 0, upper, ig.where(x < -10, tail, middle))


def i0(input, *, out=None):
    """torch.special.i0: the modified Bessel function I0 (ignis.i0)."""
    return _ig().i0(input, out=out)


def i0e(input, *, out=None):
    """torch.special.i0e: exp(-|x|) I0(x), finite where I0 overflows (method:
    ignis/_more_functions.py)."""
    from ._more_functions import _i0e
    r = _i0e(input)
    return r if out is None else out.copy_(r)


def i1(input, *, out=None):
    """torch.special.i1: the modified Bessel function of the first kind of order 1."""
    from ._more_functions import _i1
    r = _i1(input)
    return r if out is None else out.copy_(r)


def i1e(input, *, out=None):
    """torch.special.i1e: exp(-|x|) I1(x)."""
    from ._more_functions import _i1e
    r = _i1e(input)
    return r if out is None else out.copy_(r)


def _written(r, out):
    return r if out is None else out.copy_(r)


def _float_input(input):
    ig = _ig()
    if not isinstance(input, ig.Tensor):
        input = ig.tensor(input)
    return input if input.is_floating_point() else input.to(ig.get_default_dtype())


# ---- incomplete gamma ------------------------------------------------------------------------
def gammainc(input, other, *, out=None):
    """The regularized lower incomplete gamma function P(input, other)
    (series / continued fraction in float64: ignis/distributions/_gamma.py).
    Unlike torch's, it also differentiates in `input`."""
    from .distributions._gamma import special_gammainc
    return _written(special_gammainc(input, other), out)


def gammaincc(input, other, *, out=None):
    """The regularized upper incomplete gamma function Q = 1 - P, computed
    directly (accurate where P is near 1)."""
    from .distributions._gamma import special_gammaincc
    return _written(special_gammaincc(input, other), out)


# ---- ndtri, erfcx -------------------------------------------------------------------------
def ndtri(input, *, out=None):
    """The inverse of the standard normal cdf (torch.special.ndtri).

    erfinv gives a first guess, then Newton steps on log ndtr(x) = log p
    (in the lower half; the upper half by symmetry) make the tail exact: for
    p = 1e-300, 2p - 1 rounds to -1 and erfinv alone would give -inf."""
    ig = _ig()
    p = _float_input(input)
    with ig.no_grad():
        p64 = p.detach().double()
        lower = ig.where(p64 > 0.5, 1 - p64, p64)  # the tail probability
        safe = lower.clamp(min=1e-300, max=0.5)
        guess = -1.4142135623730951 * ig.erfinv(1 - 2 * safe)
        # Where erfinv saturates, the asymptotic x ~ -sqrt(-2 log p - log(-2 log p) - log 2pi).
        t = -2 * safe.log()
        tail = -(t - t.log() - 1.8378770664093453).clamp(min=0).sqrt()
        x = ig.where(guess.isfinite().logical_and(safe > 1e-10), guess, tail)
        for _ in range(4):
            log_cdf = log_ndtr(x)
            log_pdf = -0.5 * x * x - 0.9189385332046727
            # f = log ndtr(x) - log p, f' = pdf / cdf
            step = (log_cdf - safe.log()) / (log_pdf - log_cdf).exp()
            x = x - step
        x = ig.where(p64 > 0.5, -x, x)
        x = x.masked_fill(p64 == 0, float("-inf")).masked_fill(p64 == 1, float("inf"))
        x = x.masked_fill((p64 < 0).logical_or(p64 > 1).logical_or(p64.isnan()), float("nan"))
        x = x.to(p.dtype)
    if p.requires_grad:
        x = _Ndtri.apply(p, x)
    return _written(x, out)


def _ndtri_function():
    from .autograd import Function

    class Ndtri(Function):
        """d ndtri(p) / dp = 1 / pdf(ndtri(p)) = sqrt(2 pi) exp(x^2 / 2)."""

        @staticmethod
        def forward(ctx, p, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2.5066282746310002 * (0.5 * x * x).exp(), None
    return Ndtri


class _LazyFunction:
    def __init__(self, make):
        self._make, self._fn = make, None

    def apply(self, *args):
        if self._fn is None:
            self._fn = self._make()
        return self._fn.apply(*args)


_Ndtri = _LazyFunction(_ndtri_function)


def erfcx(input, *, out=None):
    """The scaled complementary error function exp(x^2) erfc(x).

    Below x = 10 the product itself (exp(x^2) and erfc(x) are each accurate
    to a few ulps there); above, the asymptotic series
    1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k, whose 14 terms are
    exact to float64 for x >= 10. Each branch sees only arguments of its
    own range, so neither makes inf * 0 (nor NaN gradients)."""
    ig = _ig()
    x = _float_input(input)
    cut = 10.0
    near = x.clamp(max=cut)
    direct = (near * near).exp() * ig.erfc(near)
    far = x.clamp(min=cut)
    inv_2x2 = 1.0 / (2 * far * far)
    series = ig.ones_like(far)
    term = ig.ones_like(far)
    for k in range(1, 15):
        term = -term * (2 * k - 1) * inv_2x2
        series = series + term
    asymptotic = series / (far * 1.7724538509055159)
    return _written(ig.where(x < cut, direct, asymptotic), out)


# ---- Hurwitz zeta ----------------------------------------------------------------------------
# B_2j / (2j)! for j = 1..12 (Bernoulli numbers over factorials)
_BERNOULLI_OVER_FACTORIAL = [
    1 / 12, -1 / 720, 1 / 30240, -1 / 1209600, 1 / 47900160, -691 / 1307674368000,
    1 / 74724249600, -3617 / 10670622842880000, 43867 / 5109094217170944000,
    -174611 / 802857662698291200000, 77683 / 14101100039391805440000,
    -236364091 / 1693824136731743669452800000]


def zeta(input, other, *, out=None):
    """The Hurwitz zeta function sum_k (q + k)^-x, x = input, q = other
    (torch.special.zeta): Euler-Maclaurin summation after the first N terms,
    N chosen so that q + N >= max(9, x) (where the 12 correction terms are
    below float64's precision). inf at x = 1 and at nonpositive integer q;
    NaN for x < 1. Differentiable in q (d/dq = -x zeta(x + 1, q)); torch's
    has no derivative, and in x neither has this one."""
    ig = _ig()
    x, q = _float_pair(input, other)
    return _written(_Zeta.apply(x, q), out)


def _float_pair(a, b):
    ig = _ig()
    if not isinstance(a, ig.Tensor):
        a = ig.tensor(a, dtype=b.dtype if b.is_floating_point() else None)
    if not isinstance(b, ig.Tensor):
        b = ig.tensor(b, dtype=a.dtype if a.is_floating_point() else None)
    dtype = ig.promote_types(a.dtype, b.dtype)
    if not dtype.is_floating_point:
        dtype = ig.get_default_dtype()
    return a.to(dtype), b.to(dtype)


def _zeta_values(x, q):
    import math
    ig = _ig()
    with ig.no_grad():
        x64, q64 = ig.broadcast_tensors(x.detach().double(), q.detach().double())
        finite = x64.isfinite().logical_and(q64.isfinite())
        xs = ig.where(finite, x64, ig.full_like(x64, 2.0))
        qs = ig.where(finite, q64, ig.ones_like(q64))
        need = max(9.0, float(xs.max()) if xs.numel() else 9.0)
        lowest = float(qs.min()) if qs.numel() else 1.0
        n_terms = max(0, int(math.ceil(need - lowest)))
        total = ig.zeros_like(xs)
        for k in range(n_terms):
            total = total + (qs + k).pow(-xs)
        w = qs + n_terms
        total = total + w.pow(1 - xs) / (xs - 1) + 0.5 * w.pow(-xs)
        rising = xs.clone()  # x (x + 1) ... (x + 2j - 2)
        power = w.pow(-xs - 1)  # w^(-x - 2j + 1)
        for j, coefficient in enumerate(_BERNOULLI_OVER_FACTORIAL, start=1):
            total = total + coefficient * rising * power
            rising = rising * (xs + 2 * j - 1) * (xs + 2 * j)
            power = power / (w * w)
        # Edges, as torch's: x = 1 -> inf; x < 1 -> NaN; q a nonpositive integer -> inf.
        total = total.masked_fill(xs == 1, float("inf"))
        total = total.masked_fill(xs < 1, float("nan"))
        total = total.masked_fill((qs <= 0).logical_and(qs == qs.floor()), float("inf"))
        # x = inf: the first term alone (1 for q = 1, 0 for q > 1).
        total = ig.where(x64 == float("inf"), ig.where(q64 == 1, ig.ones_like(total),
                         (q64 > 1).logical_not().to(total.dtype) * float("nan")), total)
        total = ig.where(x64.isnan().logical_or(q64.isnan()), x64 + q64, total)
        return total.to(x.dtype)


def _zeta_function():
    from .autograd import Function

    class Zeta(Function):
        @staticmethod
        def forward(ctx, x, q):
            ctx.save_for_backward(x, q)
            return _zeta_values(x, q)

        @staticmethod
        def backward(ctx, grad):
            x, q = ctx.saved_tensors
            if ctx.needs_input_grad[0]:
                raise NotImplementedError("the derivative of zeta in its first argument "
                                          "(input) is not implemented")
            dq = -x * _zeta_values(x + 1, q)
            from .distributions._gamma import _reduce_to
            return None, _reduce_to(grad * dq, q.shape)
    return Zeta


_Zeta = _LazyFunction(_zeta_function)


# ---- orthogonal polynomials -------------------------------------------------------------------
def _polynomial(name, first, step):
    """torch.special.<name>(input, n): the degree-n polynomial of the family
    whose degree 0 is 1, degree 1 is first(x), and
    p_(k+1) = step(k, x, p_k, p_(k-1)); n elementwise (truncated to an
    integer), 0 for n < 0. The recurrence runs to the largest n, each element
    taking its own degree's value; it is differentiable in input (torch's
    has no derivative)."""
    def fn(input, n, *, out=None):
        ig = _ig()
        if not isinstance(input, ig.Tensor) and not isinstance(n, ig.Tensor):
            raise TypeError(f"{name}(): expected input or n to be a Tensor")
        x = _float_input(input)
        n = n if isinstance(n, ig.Tensor) else ig.tensor(n)
        if n.is_floating_point():
            n = n.trunc()
        n = n.to(ig.int64)
        x, n = ig.broadcast_tensors(x, n)
        top = int(n.max()) if n.numel() else 0
        result = ig.where(n == 0, ig.ones_like(x), ig.zeros_like(x))
        if top >= 1:
            previous, current = ig.ones_like(x), first(x)
            result = ig.where(n == 1, current, result)
            for k in range(1, top):
                previous, current = current, step(k, x, current, previous)
                result = ig.where(n == k + 1, current, result)
        return _written(result, out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _polynomial.__doc__.replace("<name>", name)
    return fn


def _chebyshev_step(k, x, p, p_prev):
    return 2 * x * p - p_prev


def _shifted(first):
    # shifted polynomials: the family at 2x - 1 (orthogonal on [0, 1])
    return lambda x: first(2 * x - 1)


def _shifted_step(k, x, p, p_prev):
    return 2 * (2 * x - 1) * p - p_prev


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", lambda x: x, _chebyshev_step)
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", lambda x: 2 * x, _chebyshev_step)
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", lambda x: 2 * x - 1,
                                     _chebyshev_step)
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", lambda x: 2 * x + 1,
                                     _chebyshev_step)
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             _shifted(lambda x: x), _shifted_step)
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             _shifted(lambda x: 2 * x), _shifted_step)
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             _shifted(lambda x: 2 * x - 1), _shifted_step)
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             _shifted(lambda x: 2 * x + 1), _shifted_step)
hermite_polynomial_h = _polynomial("hermite_polynomial_h", lambda x: 2 * x,
                                   lambda k, x, p, q: 2 * x * p - 2 * k * q)
hermite_polynomial_he = _polynomial("hermite_polynomial_he", lambda x: x,
                                    lambda k, x, p, q: x * p - k * q)
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", lambda x: 1 - x,
                                    lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1))
legendre_polynomial_p = _polynomial("legendre_polynomial_p", lambda x: x,
                                    lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1))


# ---- Bessel functions that other ops give --------------------------------------------------
def spherical_bessel_j0(input, *, out=None):
    """sin(x) / x, 1 at 0 (its Taylor series near 0, where the quotient loses digits)."""
    ig = _ig()
    x = _float_input(input)
    small = x.abs() < 1e-3
    xs = ig.where(small, ig.ones_like(x), x)  # the quotient never sees 0
    x2 = x * x
    series = 1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42))
    return _written(ig.where(small, series, xs.sin() / xs), out)


def modified_bessel_i0(input, *, out=None):
    """I0(x) (torch.special.modified_bessel_i0): ignis.i0."""
    return _written(_ig().i0(_float_input(input)), out)


def modified_bessel_i1(input, *, out=None):
    """I1(x) (torch.special.modified_bessel_i1)."""
    return i1(_float_input(input), out=out)
