"""torch.special's functions that ignis's ops compute (the Bessel and
polynomial families need kernels ignis does not have yet)."""

__all__ = ["erf", "erfc", "expit", "logit", "xlogy", "xlog1py", "log1p", "expm1", "exp2",
           "logsumexp", "softmax", "log_softmax", "sinc", "round", "entr", "ndtr", "log_ndtr",
           "gammaln", "digamma", "psi", "polygamma", "multigammaln", "erfinv",
           "i0", "i0e", "i1", "i1e"]


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
