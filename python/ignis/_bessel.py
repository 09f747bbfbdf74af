"""The Bessel functions J0, J1, Y0, Y1, K0, K1 (plain and scaled by e^x) and
the Airy function Ai, for torch.special, as formulas over tensor ops.

Each function is computed in float64 and rounded to the input's dtype,
piecewise, every method seeing only the arguments it is accurate for (the
others are replaced by a harmless value before the method runs):

* small arguments: the power series (Abramowitz & Stegun 9.1.10-11 for J
  and Y, 9.6.10-11 for I and K, 10.4.2-3 for Ai), which converge quickly
  and lose at most a digit to cancellation where they are used;
* J and Y at moderate arguments (2 <= x < 25): Miller's backward
  recurrence J_(n-1) = (2n / x) J_n - J_(n+1) from an arbitrary start far
  above x, normalized by 1 = J_0 + 2 sum J_2k; Y0 and Y1 come from the same
  values through Neumann's series
      Y0 = 2/pi [(log(x/2) + gamma) J0 - 2 sum_k (-1)^k J_2k / k]
      Y1 = 2/pi [(log(x/2) + gamma) J1 - J0 / x
                 + sum_k (-1)^k (J_(2k-1) - J_(2k+1)) / k]
  (the second is minus the derivative of the first);
* J and Y at large arguments: Hankel's asymptotic expansion, whose
  truncation error (about e^(-2x)) is below float64's precision from x = 25;
* K_nu(x) for x > 1: the trapezoidal rule on
      e^x K_nu(x) = int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt,
  an analytic, doubly-exponentially decaying integrand, for which the rule
  converges geometrically in the number of points; the step is chosen per
  element (the integrand narrows as 1/sqrt(x)), so 64 points give full
  precision from x = 1 to the largest float64;
* Ai(x) for x > 2: Ai(x) = sqrt(x / 3) / pi K_(1/3)(2/3 x^(3/2)) by the
  same integral; for -12 < x < -2: Ai(-x) = sqrt(x) / 3 (J_(1/3)(z) +
  J_(-1/3)(z)), z = 2/3 x^(3/2), the fractional-order J by Miller's
  recurrence normalized with (z/2)^nu = sum_k (nu + 2k) Gamma(nu + k) / k!
  J_(nu+2k)(z); below -12: the asymptotic expansion of Ai(-x) (A&S 10.4.60).

None of these has a derivative in torch, and neither do they here: the
results never require grad.
"""

import math

_EULER_GAMMA = 0.5772156649015329
_SERIES_TERMS = 24
_MILLER_START = 80          # J_80(x) / J_0(x) is below 1e-40 for x < 28
_HANKEL_LIMIT = 25.0
_HANKEL_TERMS = 24
_QUADRATURE_POINTS = 64


def _ig():
    import ignis
    return ignis


def _prepare(name, input):
    """input as float64 (detached), and the dtype of the result: torch's
    kernels take bool, integer, float32 and float64 inputs (integers give
    the default dtype) and refuse half, bfloat16 and complex ones."""
    ig = _ig()
    if not isinstance(input, ig.Tensor):
        raise TypeError(f"special.{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    dtype = input.dtype
    if dtype.is_complex or dtype in (ig.float16, ig.bfloat16):
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{_torch_dtype_name(dtype)}'")
    result_dtype = dtype if dtype.is_floating_point else ig.get_default_dtype()
    return input.detach().to(ig.float64), result_dtype


def _torch_dtype_name(dtype):
    names = {"float16": "Half", "bfloat16": "BFloat16", "complex64": "ComplexFloat",
             "complex128": "ComplexDouble", "complex32": "ComplexHalf"}
    short = str(dtype).split(".")[-1]
    return names.get(short, short)


def _finish(value, result_dtype, out):
    value = value.to(result_dtype)
    return value if out is None else out.copy_(value)


# ---- J0, J1, Y0, Y1 ----------------------------------------------------------------------------
def _j_y_series(x):
    """J0, J1, Y0, Y1 at 0 < x <= 2 by their power series in q = x^2 / 4."""
    ig = _ig()
    q = x * x * 0.25
    log_half = (x * 0.5).log()
    j0 = ig.zeros_like(x)
    y0_sum = ig.zeros_like(x)   # sum_k>=1 (-1)^(k+1) H_k q^k / k!^2
    j1_sum = ig.zeros_like(x)   # sum_k (-1)^k q^k / (k! (k+1)!)
    y1_sum = ig.zeros_like(x)   # sum_k (psi(k+1) + psi(k+2)) (-q)^k / (k! (k+1)!)
    term0 = ig.ones_like(x)     # (-q)^k / k!^2
    term1 = ig.ones_like(x)     # (-q)^k / (k! (k+1)!)
    harmonic = 0.0              # H_k
    for k in range(_SERIES_TERMS):
        if k:
            term0 = term0 * (-q) / (k * k)
            term1 = term1 * (-q) / (k * (k + 1))
            harmonic += 1.0 / k
        j0 = j0 + term0
        y0_sum = y0_sum - harmonic * term0
        j1_sum = j1_sum + term1
        psi_sum = 2 * (harmonic - _EULER_GAMMA) + 1.0 / (k + 1)  # psi(k+1) + psi(k+2)
        y1_sum = y1_sum + psi_sum * term1
    j1 = 0.5 * x * j1_sum
    y0 = (2 / math.pi) * ((log_half + _EULER_GAMMA) * j0 + y0_sum)
    y1 = -2 / (math.pi * x) + (2 / math.pi) * log_half * j1 - (0.5 / math.pi) * x * y1_sum
    return j0, j1, y0, y1


def _j_y_miller(x):
    """J0, J1, Y0, Y1 at 2 <= x < 28 by Miller's backward recurrence (module
    docstring). Starting from J_(N+1) = 0, J_N = 1, the values grow at most
    by N! / (x/2)^N (about 1e119), so no rescaling is needed."""
    ig = _ig()
    upper = ig.zeros_like(x)          # J_(n+1), unnormalized
    current = ig.ones_like(x)         # J_n
    norm = ig.zeros_like(x)           # J_0 + 2 sum_k J_2k, less the J_0 added at the end
    y0_sum = ig.zeros_like(x)         # sum_k (-1)^k J_2k / k
    y1_sum = ig.zeros_like(x)         # sum_k (-1)^k (J_(2k-1) - J_(2k+1)) / k
    inv_x = 1.0 / x
    odd_above = ig.zeros_like(x)      # J_(2k+1) while n = 2k
    for n in range(_MILLER_START, 0, -1):
        # current = J_n; step to J_(n-1)
        if n % 2 == 0:
            k = n // 2
            sign = -1.0 if k % 2 else 1.0
            norm = norm + 2 * current
            y0_sum = y0_sum + (sign / k) * current
            odd_above = upper
        else:
            k = (n + 1) // 2  # n = 2k - 1
            sign = -1.0 if k % 2 else 1.0
            y1_sum = y1_sum + (sign / k) * (current - odd_above)
        upper, current = current, (2 * n) * inv_x * current - upper
    j0_raw, j1_raw = current, upper
    norm = norm + j0_raw
    j0, j1 = j0_raw / norm, j1_raw / norm
    log_term = (x * 0.5).log() + _EULER_GAMMA
    y0 = (2 / math.pi) * (log_term * j0 - 2 * y0_sum / norm)
    y1 = (2 / math.pi) * (log_term * j1 - j0 * inv_x + y1_sum / norm)
    return j0, j1, y0, y1


def _hankel_p_q(x, nu):
    """P and Q of Hankel's expansion, sum (-1)^k a_2k / x^2k and
    sum (-1)^k a_(2k+1) / x^(2k+1), a_k = prod_j=1..k (4 nu^2 - (2j-1)^2) / (8j)."""
    ig = _ig()
    mu = 4 * nu * nu
    p, q = ig.ones_like(x), ig.zeros_like(x)
    term = ig.ones_like(x)  # a_k / x^k
    inv_x = 1.0 / x
    for k in range(1, _HANKEL_TERMS + 1):
        term = term * ((mu - (2 * k - 1) ** 2) / (8.0 * k)) * inv_x
        sign = -1.0 if (k // 2) % 2 else 1.0  # (-1)^floor(k/2)
        if k % 2:
            q = q + sign * term
        else:
            p = p + sign * term
    return p, q


def _j_y_hankel(x, nu):
    """J_nu and Y_nu for x >= 25 (nu = 0 or 1):
    sqrt(2 / (pi x)) (P cos chi - Q sin chi) and (P sin chi + Q cos chi),
    chi = x - (2 nu + 1) pi / 4, with cos chi and sin chi from cos x and
    sin x of the exact argument (x - pi/4 would round away its last digits)."""
    p, q = _hankel_p_q(x, nu)
    c, s = x.cos(), x.sin()
    r = 1 / math.sqrt(2)
    if nu == 0:
        cos_chi, sin_chi = (c + s) * r, (s - c) * r
    else:
        cos_chi, sin_chi = (s - c) * r, -(s + c) * r
    amplitude = (2 / math.pi / x).sqrt()
    return amplitude * (p * cos_chi - q * sin_chi), amplitude * (p * sin_chi + q * cos_chi)


def _j_y(x):
    """J0, J1, Y0, Y1 of |x| (float64), each method on its range."""
    ig = _ig()
    ax = x.abs()
    finite = ax.isfinite()
    in_series = ax <= 2
    in_miller = (ax > 2) & (ax < _HANKEL_LIMIT)
    series = _j_y_series(ig.where(in_series & (ax > 0), ax, ig.ones_like(ax)))
    miller = _j_y_miller(ig.where(in_miller, ax, ig.full_like(ax, 10.0)))
    far = ig.where(in_series | in_miller | ~finite, ig.full_like(ax, 50.0), ax)
    j0_far, y0_far = _j_y_hankel(far, 0)
    j1_far, y1_far = _j_y_hankel(far, 1)
    hankel = (j0_far, j1_far, y0_far, y1_far)
    return [ig.where(in_series, s, ig.where(in_miller, m, h))
            for s, m, h in zip(series, miller, hankel)]


def _j_y_edges(x, value, at_zero, odd=False, y=False):
    """torch's values at the edges: NaN at +-inf and NaN; Y is NaN below 0
    and -inf at 0; J1 is odd."""
    ig = _ig()
    if odd:
        value = ig.where(x < 0, -value, value)
    value = ig.where(x == 0, ig.full_like(value, at_zero), value)
    if y:
        value = value.masked_fill(x < 0, float("nan"))
    return value.masked_fill(~x.isfinite(), float("nan"))


def bessel_j0(input, *, out=None):
    """The Bessel function of the first kind of order 0 (torch.special.bessel_j0)."""
    x, dtype = _prepare("bessel_j0", input)
    j0 = _j_y(x)[0]
    return _finish(_j_y_edges(x, j0, 1.0), dtype, out)


def bessel_j1(input, *, out=None):
    """The Bessel function of the first kind of order 1 (torch.special.bessel_j1)."""
    x, dtype = _prepare("bessel_j1", input)
    j1 = _j_y(x)[1]
    j1 = _j_y_edges(x, j1, 0.0, odd=True)
    return _finish(_ig().where(x == 0, x, j1), dtype, out)  # J1(-0) = -0


def bessel_y0(input, *, out=None):
    """The Bessel function of the second kind of order 0 (torch.special.bessel_y0):
    -inf at 0, NaN for negative input."""
    x, dtype = _prepare("bessel_y0", input)
    y0 = _j_y(x)[2]
    return _finish(_j_y_edges(x, y0, float("-inf"), y=True), dtype, out)


def bessel_y1(input, *, out=None):
    """The Bessel function of the second kind of order 1 (torch.special.bessel_y1):
    -inf at 0, NaN for negative input."""
    x, dtype = _prepare("bessel_y1", input)
    y1 = _j_y(x)[3]
    return _finish(_j_y_edges(x, y1, float("-inf"), y=True), dtype, out)


# ---- K0, K1 ------------------------------------------------------------------------------------
def _k_series(x):
    """K0 and K1 at 0 < x <= 1 by their power series in q = x^2 / 4 (A&S 9.6.13, 9.6.11)."""
    ig = _ig()
    q = x * x * 0.25
    log_half = (x * 0.5).log()
    i0 = ig.zeros_like(x)
    k0_sum = ig.zeros_like(x)   # sum_k H_k q^k / k!^2
    i1_sum = ig.zeros_like(x)   # sum_k q^k / (k! (k+1)!)
    k1_sum = ig.zeros_like(x)   # sum_k (psi(k+1) + psi(k+2)) q^k / (k! (k+1)!)
    term0, term1 = ig.ones_like(x), ig.ones_like(x)
    harmonic = 0.0
    for k in range(_SERIES_TERMS):
        if k:
            term0 = term0 * q / (k * k)
            term1 = term1 * q / (k * (k + 1))
            harmonic += 1.0 / k
        i0 = i0 + term0
        k0_sum = k0_sum + harmonic * term0
        i1_sum = i1_sum + term1
        k1_sum = k1_sum + (2 * (harmonic - _EULER_GAMMA) + 1.0 / (k + 1)) * term1
    k0 = -(log_half + _EULER_GAMMA) * i0 + k0_sum
    k1 = 1.0 / x + log_half * (0.5 * x * i1_sum) - 0.25 * x * k1_sum
    return k0, k1


def _k_scaled_quadrature(x, nu):
    """e^x K_nu(x) for x >= 1 by the trapezoidal rule on
    int_0^inf exp(-2x sinh^2(t/2)) cosh(nu t) dt over [0, T], where the
    integrand has fallen to e^-45: T = acosh(1 + 45 / x). With step
    h = T / 64 the rule's error, about exp(-2 pi d / h) for the strip of
    half-width d (< pi/2, and < 2 pi / (h x) where the integrand's growth in
    the strip takes over) in which the integrand is analytic, stays far
    below float64's precision for every x >= 1."""
    ig = _ig()
    end = (1 + 45.0 / x).acosh()
    h = end / _QUADRATURE_POINTS
    total = ig.full_like(x, 0.5)  # the point t = 0, weighted 1/2 (the rule on the whole line, halved)
    for j in range(1, _QUADRATURE_POINTS + 1):
        t = h * j
        half_sinh = (0.5 * t).sinh()
        value = (-2 * x * half_sinh * half_sinh).exp()
        if nu:
            value = value * (nu * t).cosh()
        total = total + value
    return total * h


def _k(x, nu, scaled):
    ig = _ig()
    near = (x > 0) & (x <= 1)
    far = (x > 1) & x.isfinite()
    series = _k_series(ig.where(near, x, ig.ones_like(x)))[nu]
    if scaled:
        series = series * ig.where(near, x, ig.zeros_like(x)).exp()
    quadrature = _k_scaled_quadrature(ig.where(far, x, ig.full_like(x, 2.0)), nu)
    if not scaled:
        quadrature = quadrature * (-ig.where(far, x, ig.full_like(x, 2.0))).exp()
    value = ig.where(near, series, quadrature)
    # torch's edges: inf at 0, NaN below 0 and at -inf / NaN, 0 at +inf.
    value = value.masked_fill(x == 0, float("inf"))
    value = value.masked_fill(x == float("inf"), 0.0)
    return value.masked_fill((x < 0) | x.isnan(), float("nan"))


def modified_bessel_k0(input, *, out=None):
    """The modified Bessel function of the second kind of order 0
    (torch.special.modified_bessel_k0): inf at 0, NaN below."""
    x, dtype = _prepare("modified_bessel_k0", input)
    return _finish(_k(x, 0, scaled=False), dtype, out)


def modified_bessel_k1(input, *, out=None):
    """The modified Bessel function of the second kind of order 1
    (torch.special.modified_bessel_k1): inf at 0, NaN below."""
    x, dtype = _prepare("modified_bessel_k1", input)
    return _finish(_k(x, 1, scaled=False), dtype, out)


def scaled_modified_bessel_k0(input, *, out=None):
    """e^x K0(x) (torch.special.scaled_modified_bessel_k0), finite where
    K0 underflows."""
    x, dtype = _prepare("scaled_modified_bessel_k0", input)
    return _finish(_k(x, 0, scaled=True), dtype, out)


def scaled_modified_bessel_k1(input, *, out=None):
    """e^x K1(x) (torch.special.scaled_modified_bessel_k1)."""
    x, dtype = _prepare("scaled_modified_bessel_k1", input)
    return _finish(_k(x, 1, scaled=True), dtype, out)


# ---- Ai ----------------------------------------------------------------------------------------
_AI_0 = 0.3550280538878172      # Ai(0) = 1 / (3^(2/3) Gamma(2/3))
_AI_PRIME_0 = 0.2588194037928068  # -Ai'(0) = 1 / (3^(1/3) Gamma(1/3))
_AIRY_SERIES_TERMS = 40
_AIRY_ASYMPTOTIC_LIMIT = 12.0
_AIRY_ASYMPTOTIC_TERMS = 30


def _airy_series(x):
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x) for |x| <= 2 (A&S 10.4.2-3):
    f = sum 3^k (1/3)_k x^3k / (3k)!, g = sum 3^k (2/3)_k x^(3k+1) / (3k+1)!,
    whose terms follow f_k = f_(k-1) x^3 / ((3k-1) 3k),
    g_k = g_(k-1) x^3 / (3k (3k+1))."""
    ig = _ig()
    cube = x * x * x
    f_term, g_term = ig.ones_like(x), x.clone()
    f, g = f_term, g_term
    for k in range(1, _AIRY_SERIES_TERMS):
        f_term = f_term * cube / ((3 * k - 1) * (3 * k))
        g_term = g_term * cube / ((3 * k) * (3 * k + 1))
        f, g = f + f_term, g + g_term
    return _AI_0 * f - _AI_PRIME_0 * g


def _airy_positive(x):
    """Ai(x) for x > 2: sqrt(x / 3) / pi e^-z (e^z K_(1/3)(z)), z = 2/3 x^(3/2)."""
    z = (2.0 / 3.0) * x * x.sqrt()
    return (x / 3).sqrt() / math.pi * (-z).exp() * _k_scaled_quadrature(z, 1.0 / 3.0)


def _j_fractional_miller(z, nu):
    """J_nu(z), nu = +-1/3, for 1.8 <= z < 28 by Miller's recurrence,
    normalized with (z/2)^nu = sum_k (nu + 2k) Gamma(nu + k) / k! J_(nu+2k)(z)."""
    ig = _ig()
    upper, current = ig.zeros_like(z), ig.ones_like(z)
    norm = ig.zeros_like(z)
    inv_z = 1.0 / z
    for n in range(_MILLER_START, 0, -1):
        if n % 2 == 0:  # current = J_(nu+n), n = 2k
            k = n // 2
            weight = (nu + n) * math.exp(math.lgamma(nu + k) - math.lgamma(k + 1))
            norm = norm + weight * current
        upper, current = current, 2 * (nu + n) * inv_z * current - upper
    norm = norm + nu * math.gamma(nu) * current  # k = 0: (nu) Gamma(nu) J_nu
    return current * (0.5 * z).pow(nu) / norm


def _airy_negative_miller(x):
    """Ai(x) for -12 < x < -2: sqrt(|x|) / 3 (J_(1/3)(z) + J_(-1/3)(z))."""
    a = -x
    z = (2.0 / 3.0) * a * a.sqrt()
    return a.sqrt() / 3 * (_j_fractional_miller(z, 1.0 / 3.0) + _j_fractional_miller(z, -1.0 / 3.0))


def _airy_negative_asymptotic(x):
    """Ai(x) for x <= -12 (A&S 10.4.60): with a = -x, z = 2/3 a^(3/2),
    Ai(-a) ~ a^(-1/4) / sqrt(pi) [sin(z + pi/4) sum (-1)^k u_2k z^-2k
    - cos(z + pi/4) sum (-1)^k u_(2k+1) z^-(2k+1)],
    u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k); the error, about
    e^(-2z), is below float64's precision there."""
    ig = _ig()
    a = -x
    z = (2.0 / 3.0) * a * a.sqrt()
    inv_z = 1.0 / z
    even, odd = ig.ones_like(z), ig.zeros_like(z)
    term = ig.ones_like(z)  # u_k / z^k
    for k in range(1, _AIRY_ASYMPTOTIC_TERMS + 1):
        term = term * ((6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216.0 * k)) * inv_z
        sign = -1.0 if (k // 2) % 2 else 1.0
        if k % 2:
            odd = odd + sign * term
        else:
            even = even + sign * term
    # sin(z + pi/4) and cos(z + pi/4) from sin z and cos z of the exact z
    s, c = z.sin(), z.cos()
    r = 1 / math.sqrt(2)
    sin_shift, cos_shift = (s + c) * r, (c - s) * r
    return a.pow(-0.25) / math.sqrt(math.pi) * (sin_shift * even - cos_shift * odd)


def airy_ai(input, *, out=None):
    """The Airy function Ai (torch.special.airy_ai); NaN at +-inf as torch's."""
    ig = _ig()
    x, dtype = _prepare("airy_ai", input)
    near = x.abs() <= 2
    positive = x > 2
    middle = (x < -2) & (x > -_AIRY_ASYMPTOTIC_LIMIT)
    far = x <= -_AIRY_ASYMPTOTIC_LIMIT
    value = _airy_series(ig.where(near, x, ig.zeros_like(x)))
    # Ai(x) underflows float64 from x = 105; beyond 200 the formula's
    # pieces overflow (inf * 0), so those arguments give 0 directly.
    positive_x = ig.where(positive, x, ig.full_like(x, 3.0)).clamp(max=200.0)
    value = ig.where(positive, _airy_positive(positive_x), value)
    value = value.masked_fill(x > 200, 0.0)
    value = ig.where(middle, _airy_negative_miller(ig.where(middle, x, ig.full_like(x, -5.0))),
                     value)
    value = ig.where(far, _airy_negative_asymptotic(
        ig.where(far & x.isfinite(), x, ig.full_like(x, -20.0))), value)
    return _finish(value.masked_fill(~x.isfinite(), float("nan")), dtype, out)
