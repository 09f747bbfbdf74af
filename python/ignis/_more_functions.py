"""More of torch's top-level functions, written over ignis's ops: the
predicates and settings of the torch namespace (is_nonzero, result_type,
use_deterministic_algorithms, ...), the complex-number functions as they act
on real tensors (ignis has no complex dtype), integer and floating-point
bit-level math (gcd, lcm, frexp, nextafter), the modified Bessel functions,
window functions, and mode, histogram, put, index_reduce and gradient.
"""
import math

from ._functions import _dim, _ig, _values_indices
from ._tensor_str import set_printoptions  # noqa: F401

__all__ = ["is_complex", "is_nonzero", "is_same_size", "is_signed", "result_type",
           "set_printoptions", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "get_default_device", "set_default_device", "set_flush_denormal", "detach", "real",
           "imag", "conj", "conj_physical", "conj_physical_", "polar", "complex", "is_conj", "is_neg", "angle", "gcd",
           "gcd_", "lcm", "lcm_", "frexp", "nextafter", "i0", "i0_", "hann_window",
           "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "range",
           "row_stack", "split_with_sizes", "unsafe_chunk", "unsafe_split", "mode", "histogram",
           "put", "index_reduce", "gradient", "frombuffer", "typename", "set_default_tensor_type",
           "get_num_interop_threads", "set_num_interop_threads", "set_warn_always",
           "is_warn_always_enabled", "get_device", "sym_int", "sym_float", "sym_max", "sym_min",
           "sym_not", "sym_ite", "sym_sqrt", "sym_sum", "igamma", "igammac", "sinc_", "logit_",
           "ldexp_", "deg2rad_", "rad2deg_", "xlogy_", "nan_to_num_", "detach_", "fill",
           "orgqr"]

_builtin_range = range


# ---- predicates -------------------------------------------------------------------------
def _check_tensor(name, input):
    if not isinstance(input, _ig().Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def is_complex(input):
    """torch.is_complex: whether input's dtype is complex64 or complex128."""
    _check_tensor("is_complex", input)
    return input.dtype.is_complex


def is_conj(input):
    """torch.is_conj: False (only complex tensors carry a conjugate bit)."""
    _check_tensor("is_conj", input)
    return False


def is_neg(input):
    """torch.is_neg: False (only complex tensors carry a negative bit)."""
    _check_tensor("is_neg", input)
    return False


def is_nonzero(input):
    """torch.is_nonzero: whether the single element of input is non-zero."""
    _check_tensor("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other):
    """torch.is_same_size: whether the two shapes are equal."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    """torch.is_signed: whether input's dtype holds negative values (all but uint8 and bool)."""
    ig = _ig()
    return input.dtype not in (ig.uint8, ig.bool)


# ---- type promotion -----------------------------------------------------------------------
def _category(dtype):
    ig = _ig()
    if dtype is ig.bool:
        return 0
    return 2 if dtype.is_floating_point else 1


def result_type(tensor1, tensor2):
    """torch.result_type: the dtype an elementwise op of the two operands
    gives. Tensors of one or more dims decide first; a 0-dim tensor or a
    Python number changes the result only when it is of a higher category
    (bool < integer < floating): a 0-dim tensor by promotion with its dtype,
    a number as int64 or the default float dtype."""
    import numbers
    ig = _ig()
    dims, zero_dims, numbers_ = [], [], []
    for x in (tensor1, tensor2):
        if isinstance(x, ig.Tensor):
            (dims if x.dim() > 0 else zero_dims).append(x.dtype)
        elif isinstance(x, bool):
            numbers_.append(ig.bool)
        elif isinstance(x, numbers.Integral):
            numbers_.append(ig.int64)
        elif isinstance(x, numbers.Real):
            numbers_.append(ig.get_default_dtype())
        else:
            raise TypeError(f"result_type(): argument must be Tensor or Number, not "
                            f"{type(x).__name__}")
    result = None
    for group in (dims, zero_dims, numbers_):
        if not group:
            continue
        group_dtype = group[0]
        for d in group[1:]:
            group_dtype = ig.promote_types(group_dtype, d)
        if result is None:
            result = group_dtype
        elif _category(group_dtype) > _category(result):
            # A number of a higher category takes its own kind's default
            # (int64, the default float dtype) but keeps a tensor's width
            # when the tensor is of that category already: promote.
            result = ig.promote_types(result, group_dtype) if group is not numbers_ \
                else group_dtype
    return result


# ---- settings -----------------------------------------------------------------------------
_DETERMINISTIC = {"mode": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """torch.use_deterministic_algorithms: records the setting. ignis's CPU
    kernels give the same results run to run, so nothing else changes."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not "
                        f"{type(mode).__name__}")
    _DETERMINISTIC["mode"] = mode
    _DETERMINISTIC["warn_only"] = bool(warn_only)


def are_deterministic_algorithms_enabled():
    """torch.are_deterministic_algorithms_enabled."""
    return _DETERMINISTIC["mode"]


def is_deterministic_algorithms_warn_only_enabled():
    """torch.is_deterministic_algorithms_warn_only_enabled."""
    return _DETERMINISTIC["warn_only"]


def get_default_device():
    """torch.get_default_device: ignis's factory functions make CPU tensors
    unless told otherwise, so this is always cpu."""
    return _ig().device("cpu")


def set_default_device(device):
    """torch.set_default_device: ignis keeps no default device other than the
    CPU; None or a CPU device is accepted, others raise NotImplementedError."""
    if device is None:
        return
    d = _ig().device(device) if not isinstance(device, int) else None
    if d is None or d.type != "cpu":
        raise NotImplementedError(f"ignis.set_default_device: only the CPU can be the default "
                                  f"device (got {device!r}); pass device= to factory functions")


def set_default_tensor_type(t, /):
    """torch.set_default_tensor_type (deprecated there): the default dtype of a
    floating legacy type (ignis.DoubleTensor, or its name); a CUDA type also
    asks for the CUDA default device, which ignis refuses."""
    import warnings
    from . import _legacy_types
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  stacklevel=2)
    name = t if isinstance(t, str) else f"{t.__module__}.{t.__name__}"
    dtype = t.dtype if isinstance(t, _legacy_types.tensortype) else _legacy_types.dtype_of(name)
    if dtype is None:
        raise TypeError(f"invalid type: '{name}'")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if ".cuda." in name:
        set_default_device("cuda")
    _ig().set_default_dtype(dtype)


_INTEROP_THREADS = [1]  # ignis runs no inter-op thread pool: the number is only kept


def get_num_interop_threads():
    """torch.get_num_interop_threads: what set_num_interop_threads set (1 by default)."""
    return _INTEROP_THREADS[0]


def set_num_interop_threads(nthreads):
    """torch.set_num_interop_threads: kept for get_num_interop_threads (ignis
    runs ops of one graph on intra-op threads only)."""
    if not isinstance(nthreads, int) or nthreads <= 0:
        raise RuntimeError("Expected positive number of threads")
    _INTEROP_THREADS[0] = nthreads


_WARN_ALWAYS = [False]


def set_warn_always(b, /):
    """torch.set_warn_always: the flag is_warn_always_enabled reads."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled():
    return _WARN_ALWAYS[0]


def get_device(input):
    """torch.get_device: input.get_device() (-1 on the CPU)."""
    return input.get_device()


# torch's symbolic-shape helpers, on the plain Python numbers ignis's sizes are.
def sym_int(a):
    return int(a)


def sym_float(a):
    return float(a)


def sym_max(a, b):
    m = max(a, b)
    return float(m) if isinstance(a, float) or isinstance(b, float) else m


def sym_min(a, b):
    m = min(a, b)
    return float(m) if isinstance(a, float) or isinstance(b, float) else m


def sym_not(a):
    return not a


def sym_ite(b, t, f):
    return t if b else f


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(args):
    return sum(args)


def set_flush_denormal(mode):
    """torch.set_flush_denormal: returns False, as torch does where flushing
    denormals is not supported (ignis does not change the FPU's mode)."""
    return False


def typename(obj):
    """torch.typename: a tensor's type() string, else the object's module and
    qualified name (the module left out for builtins)."""
    if isinstance(obj, _ig().Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = getattr(type(obj), "__module__", "") or ""
        qualname = type(obj).__qualname__
    return f"{module}.{qualname}" if module not in ("", "builtins") else qualname


# ---- complex numbers -----------------------------------------------------------------------
# Complex tensors compute through their real views (Note [Complex tensors],
# src/ignis/ops/complex.cpp): these functions are written on view_as_real, so
# autograd, capture and the compiler see real ops.
def detach(input):
    """torch.detach: input.detach()."""
    return input.detach()


def real(input):
    """torch.real: a complex tensor's real parts as a view (writes reach input); a real
    tensor is its own real part (input itself)."""
    _check_tensor("real", input)
    if input.dtype.is_complex:
        return _ig().view_as_real(input).select(-1, 0)
    return input


def imag(input):
    """torch.imag: a complex tensor's imaginary parts as a view; real tensors have none
    (torch's error)."""
    _check_tensor("imag", input)
    if input.dtype.is_complex:
        return _ig().view_as_real(input).select(-1, 1)
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _from_parts(re, im):
    """The complex tensor with real parts `re` and imaginary parts `im` (same dtype)."""
    ig = _ig()
    re, im = ig.broadcast_tensors(re, im)
    return ig.view_as_complex(ig.stack([re, im], -1))


def conj(input):
    """torch.conj: the complex conjugate (a new tensor: torch returns a lazy view with a
    conjugate bit, ignis computes it); a real tensor is its own conjugate (input itself)."""
    _check_tensor("conj", input)
    if input.dtype.is_complex:
        return _from_parts(real(input), -imag(input))
    return input


def conj_physical(input):
    """torch.conj_physical: the conjugate, computed; of a real tensor, input itself."""
    _check_tensor("conj_physical", input)
    return conj(input)


def conj_physical_(input):
    """torch.conj_physical_: negates input's imaginary parts in place."""
    if input.dtype.is_complex:
        imag(input).neg_()
    return input


def polar(abs, angle):  # noqa: A002 - torch's argument names
    """torch.polar: abs * (cos(angle) + i sin(angle)), complex64 from float32 inputs
    (complex128 from float64)."""
    if abs.dtype != angle.dtype or abs.dtype not in (_ig().float32, _ig().float64):
        raise RuntimeError("Expected both inputs to be Float or Double tensors but got "
                           f"{abs.dtype} and {angle.dtype}")
    return _from_parts(abs * angle.cos(), abs * angle.sin())


def complex(real, imag):  # noqa: A001 - torch's name
    """torch.complex: the complex tensor real + i imag (float32 -> complex64,
    float64 -> complex128)."""
    if real.dtype != imag.dtype or real.dtype not in (_ig().float32, _ig().float64,
                                                     _ig().float16):
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{real.dtype} and {imag.dtype}")
    if real.dtype == _ig().float16:
        raise RuntimeError("complex32 (ComplexHalf) is not supported by ignis")
    return _from_parts(real, imag)


def angle(input):
    """torch.angle: atan2(imag, real) of a complex tensor (a real tensor of its real
    type). Of a real tensor: 0 where input >= 0, pi where < 0, NaN
    for NaN; integer and bool inputs give the default float dtype. The
    gradient is zero."""
    ig = _ig()
    if input.dtype.is_complex:
        return ig.atan2(imag(input), real(input))
    x = input if input.dtype.is_floating_point else input.to(ig.get_default_dtype())
    pi = ig.full((), math.pi, dtype=x.dtype, device=x.device)
    zero = ig.zeros((), dtype=x.dtype, device=x.device)
    # x * 0 carries NaN through (and gives a zero gradient); inf does not
    # reach it: where picks the constant there.
    return ig.where(x.isnan(), x * 0, ig.where(x < 0, pi, zero))


# ---- integer math -------------------------------------------------------------------------
def _integer_operands(name, input, other):
    ig = _ig()
    for t in (input, other):
        if not isinstance(t, ig.Tensor):
            raise TypeError(f"{name}(): argument 'other' must be Tensor, not {type(t).__name__}")
        if t.dtype.is_floating_point or t.dtype is ig.bool:
            raise RuntimeError(f'"{name}_cpu" not implemented for '
                               f"'{_dtype_word(t.dtype)}'")
    dtype = result_type(input, other)
    a, b = ig.broadcast_tensors(input.to(dtype), other.to(dtype))
    return a, b


def _dtype_word(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "bool": "Bool"}.get(str(dtype).split(".")[-1], str(dtype))


def gcd(input, other):
    """torch.gcd: the greatest common divisor of integer tensors, never
    negative; gcd(0, 0) = 0. Euclid's algorithm on all elements at once,
    until every remainder is zero."""
    ig = _ig()
    a, b = _integer_operands("gcd", input, other)
    a, b = a.abs(), b.abs()
    zero = ig.zeros((), dtype=a.dtype, device=a.device)
    while bool((b != 0).any()):
        nonzero = b != 0
        safe_b = ig.where(nonzero, b, ig.ones((), dtype=b.dtype, device=b.device))
        a, b = ig.where(nonzero, b, a), ig.where(nonzero, a.remainder(safe_b), zero)
    return a


def lcm(input, other):
    """torch.lcm: the least common multiple, never negative; 0 when either is 0."""
    ig = _ig()
    a, b = _integer_operands("lcm", input, other)
    g = gcd(a, b)
    safe_g = ig.where(g == 0, ig.ones((), dtype=g.dtype, device=g.device), g)
    return ig.where(g == 0, ig.zeros((), dtype=g.dtype, device=g.device),
                    (a.div(safe_g, rounding_mode="trunc") * b).abs())


def _write_into(name, input, result):
    if tuple(result.shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast "
                           f"shape {list(result.shape)}")
    if result.dtype != input.dtype:
        raise RuntimeError(f"result type {_dtype_word(result.dtype)} can't be cast to the "
                           f"desired output type {_dtype_word(input.dtype)}")
    return input.copy_(result)


def gcd_(input, other):
    """torch.gcd_: gcd written into input."""
    return _write_into("gcd_", input, gcd(input, other))


def lcm_(input, other):
    """torch.lcm_: lcm written into input."""
    return _write_into("lcm_", input, lcm(input, other))


# ---- floating-point representation -------------------------------------------------------
def _frexp_parts(x):
    """(mantissa, exponent) of a float64 tensor's finite non-zero elements
    (others: x, 0): x = mantissa * 2**exponent with 0.5 <= |mantissa| < 1.
    The exponent is log2's, corrected by one where rounding moved it."""
    ig = _ig()
    finite_nonzero = x.isfinite() & (x != 0)
    ax = ig.where(finite_nonzero, x.abs(), ig.ones((), dtype=x.dtype))
    e = ax.log2().floor() + 1
    # ax / 2**e as two exact scalings by powers of two, each of which stays
    # in float64's range (2**e itself may not: e runs from -1073 to 1025).
    half = (e * 0.5).floor()
    m = ax * ig.pow(2.0, -half) * ig.pow(2.0, half - e)
    too_big, too_small = m >= 1, m < 0.5
    m = ig.where(too_big, m * 0.5, ig.where(too_small, m * 2, m))
    e = e + too_big.to(e.dtype) - too_small.to(e.dtype)
    mantissa = ig.where(finite_nonzero, m.copysign(x), x)
    exponent = ig.where(finite_nonzero, e, ig.zeros((), dtype=e.dtype))
    return mantissa, exponent


def frexp(input, *, out=None):
    """torch.frexp: (mantissa, exponent), input = mantissa * 2**exponent with
    |mantissa| in [0.5, 1) (zero, inf and NaN: themselves and 0); exponent
    int32. Floating inputs only."""
    from .linalg import _named
    ig = _ig()
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    with ig.no_grad():
        m, e = _frexp_parts(input.to(ig.float64))
    result = _named("frexp", ["mantissa", "exponent"], (m.to(input.dtype), e.to(ig.int32)))
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return _named("frexp", ["mantissa", "exponent"], tuple(out))
    return result


_MANTISSA_BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
_MIN_EXPONENT = {"float64": -1074, "float32": -149, "float16": -24, "bfloat16": -133}


def nextafter(input, other, *, out=None):
    """torch.nextafter: the next floating-point value after input toward
    other (other where they are equal, NaN where either is). Stepping by one
    unit in the last place of input's dtype, computed in float64 (exact: the
    step is a power of two and the sum is representable)."""
    ig = _ig()
    if not input.dtype.is_floating_point or input.dtype != other.dtype:
        raise RuntimeError(f'"nextafter_cpu" not implemented for '
                           f"'{_dtype_word(input.dtype)}'" if not input.dtype.is_floating_point
                           else f"expected both inputs to have the same dtype, got "
                           f"{input.dtype} and {other.dtype}")
    name = str(input.dtype).split(".")[-1]
    with ig.no_grad():
        x, y = ig.broadcast_tensors(input.to(ig.float64), other.to(ig.float64))
        mantissa, e = _frexp_parts(x)
        # The spacing of values at |x| (a unit in the last place), and half of
        # it just below a power of two, where stepping toward zero lands.
        floor_exp = ig.full((), float(_MIN_EXPONENT[name]), dtype=ig.float64)
        ulp_exp = ig.maximum(e - _MANTISSA_BITS[name], floor_exp)
        away_from_zero = (y > x) == (x > 0)
        at_power_of_two = mantissa.abs() == 0.5
        step_exp = ig.where(~away_from_zero & at_power_of_two,
                            ig.maximum(ulp_exp - 1, floor_exp), ulp_exp)
        step = ig.pow(2.0, step_exp)
        moved = ig.where(away_from_zero, x + step.copysign(x), x - step.copysign(x))
        tiniest = ig.pow(2.0, floor_exp).expand_as(x)
        moved = ig.where(x == 0, tiniest.copysign(y), moved)
        largest = ig.full((), float(ig.finfo(input.dtype).max), dtype=ig.float64)
        moved = ig.where(x.isinf(), largest.copysign(x), moved)  # only toward finite y here
        result = ig.where(x == y, y, moved)
        result = ig.where(x.isnan() | y.isnan(), x + y, result).to(input.dtype)
    if out is not None:
        return out.copy_(result)
    return result


# ---- modified Bessel functions of the first kind --------------------------------------------
# Computed in float64 by two methods, each where it converges to roundoff:
#  |x| <= 40: the power series I_nu(x) = sum_k (x/2)^(2k+nu) / (k! (k+nu)!), of
#    positive terms (no cancellation), 64 terms (at |x| = 40 the last term is
#    below 1e-24 of the sum);
#  |x| > 40: the asymptotic expansion I_nu(x) ~ e^x / sqrt(2 pi x) *
#    sum_k (-1)^k a_k(nu) / x^k, a_k = prod_{j<=k} (4nu^2 - (2j-1)^2) / (8j),
#    40 terms (the terms shrink past 1e-28 before they would grow again).
# The exponentially scaled forms (i0e, i1e) use the expansion without e^x, so
# they stay finite where I_nu overflows. Gradients come from these formulas.
_SERIES_LIMIT = 40.0
_SERIES_TERMS = 64
_ASYMPTOTIC_TERMS = 40


def _bessel_series(x, nu):
    """I_nu(x) by its power series (x: float64, |x| <= 40)."""
    q = x * x * 0.25
    term = (x * 0.5) ** nu if nu else x.new_ones(x.shape)
    term = term / math.factorial(nu)
    total = term
    for k in _builtin_range(1, _SERIES_TERMS):
        term = term * q / (k * (k + nu))
        total = total + term
    return total


def _bessel_asymptotic_scaled(ax, nu):
    """e^-x I_nu(x) for x = ax > 40 by the asymptotic expansion."""
    term = ax.new_ones(ax.shape)
    total = term
    for k in _builtin_range(1, _ASYMPTOTIC_TERMS):
        # the k-th term, (-1)^k a_k / x^k, from the one before it
        term = term * (-(4 * nu * nu - (2 * k - 1) ** 2) / (8.0 * k)) / ax
        total = total + term
    return total / (2 * math.pi * ax).sqrt()


def _bessel(input, nu, scaled):
    ig = _ig()
    x = input.to(ig.float64)
    small = x.abs() <= _SERIES_LIMIT
    # Each method sees only inputs it converges for (others replaced by a
    # harmless value), so the unused branch contributes no NaN gradient.
    xs = ig.where(small, x, ig.zeros((), dtype=x.dtype))
    ax = ig.where(small, ig.full((), 2 * _SERIES_LIMIT, dtype=x.dtype), x.abs())
    series = _bessel_series(xs, nu)
    asym = _bessel_asymptotic_scaled(ax, nu)
    if nu % 2 == 1:  # I_1 is odd
        asym = asym * ig.where(x < 0, -1.0, 1.0).to(x.dtype)
    if scaled:
        series = series * (-xs.abs()).exp()
    else:
        asym = asym * ax.exp()
    result = ig.where(small, series, asym)
    result = ig.where(x.isnan(), x, result)
    out_dtype = input.dtype if input.dtype.is_floating_point else ig.get_default_dtype()
    return result.to(out_dtype)


def i0(input, *, out=None):
    """torch.i0 (torch.special.i0): the modified Bessel function of the first
    kind of order 0 (see the method above); integer inputs give floats."""
    r = _bessel(input, 0, scaled=False)
    return r if out is None else out.copy_(r)


def i0_(input):
    """torch.i0_: i0 written into input."""
    return input.copy_(i0(input))


def _i0e(input):
    return _bessel(input, 0, scaled=True)


def _i1(input):
    return _bessel(input, 1, scaled=False)


def _i1e(input):
    return _bessel(input, 1, scaled=True)


# ---- window functions ------------------------------------------------------------------------
def _window(name, window_length, periodic, dtype, device, requires_grad, values):
    """A window of `window_length` points: values(n, N) of the positions
    n = 0..N-1 (float64) for a symmetric window of N points; a periodic
    window is the symmetric one of window_length + 1 points, less its last."""
    ig = _ig()
    dtype = ig.get_default_dtype() if dtype is None else dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length == 0:
        w = ig.empty(0, dtype=dtype, device=device)
    elif window_length == 1:
        w = ig.ones(1, dtype=dtype, device=device)
    else:
        n_points = window_length + 1 if periodic else window_length
        n = ig.arange(n_points, dtype=ig.float64)
        w = values(n, n_points)[:window_length].to(dtype)
        if device is not None:
            w = w.to(device)
    if requires_grad:
        w.requires_grad_(True)
    return w


def _cosine_sum(coefficients):
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1)): the generalized cosine windows."""
    def values(n, N):
        phase = n * (2 * math.pi / (N - 1))
        total = 0
        for k, a in enumerate(coefficients):
            total = total + (-1) ** k * a * (phase * k).cos()
        return total
    return values


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                requires_grad=False):
    """torch.hann_window: 0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((0.5, 0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """torch.hamming_window: alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((alpha, beta)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """torch.blackman_window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((0.42, 0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """torch.bartlett_window: the triangle 1 - |2n / (N - 1) - 1|."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - (n * (2.0 / (N - 1)) - 1).abs())


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """torch.kaiser_window: I0(beta sqrt(1 - ((n - a) / a)^2)) / I0(beta), a = (N - 1) / 2."""
    def values(n, N):
        a = (N - 1) / 2.0
        r = ((n - a) / a).clamp(-1.0, 1.0)
        return i0((1 - r * r).sqrt() * beta) / i0(_ig().tensor(float(beta), dtype=n.dtype))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   values)


# ---- creation, splitting -------------------------------------------------------------------
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          requires_grad=False):
    """torch.range (deprecated in torch): start, start + step, ... up to and
    including end; the default float dtype unless dtype is given."""
    import warnings
    ig = _ig()
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    start, end, step = (float(v) for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) / step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    dtype = ig.get_default_dtype() if dtype is None else dtype
    r = (ig.arange(count, dtype=ig.float64) * step + start).to(dtype)
    if device is not None:
        r = r.to(device)
    if out is not None:
        return out.resize_(r.shape).copy_(r) if hasattr(out, "resize_") else out.copy_(r)
    if requires_grad:
        r.requires_grad_(True)
    return r


def row_stack(tensors, *, out=None):
    """torch.row_stack: vstack."""
    r = _ig().vstack(tensors)
    return r if out is None else out.copy_(r)


def split_with_sizes(input, split_sizes, dim=0):
    """torch.split_with_sizes: pieces of the given sizes along dim, which must
    add up to its length."""
    d = _dim(dim, input.dim())
    length = input.shape[d]
    if sum(split_sizes) != length or any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {length} "
                           f"(input tensor's size at dimension {dim}), but got "
                           f"split_sizes={list(split_sizes)}")
    return tuple(input.split(list(split_sizes), d))


def unsafe_split(tensor, split_size, dim=0):
    """torch.unsafe_split: split into pieces of split_size (an int, as
    torch's; ignis does not track the views' aliasing either way)."""
    if not isinstance(split_size, int):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__}")
    return tuple(tensor.split(split_size, dim))


def unsafe_chunk(input, chunks, dim=0):
    """torch.unsafe_chunk: chunk."""
    return tuple(input.chunk(chunks, dim))


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """torch.frombuffer: a 1-D tensor over the buffer's memory (shared, not
    copied) from byte `offset`, `count` elements (-1: all that fit)."""
    import numpy as np
    import warnings
    ig = _ig()
    np_dtype = np.dtype(str(dtype).split(".")[-1]) if dtype is not ig.bfloat16 else None
    if np_dtype is None:
        raise TypeError("ignis.frombuffer: bfloat16 is not supported")
    nbytes = memoryview(buffer).nbytes
    if nbytes == 0 or count == 0:
        raise ValueError(f"both buffer length ({nbytes}) and count ({count}) must not be 0")
    if not 0 <= offset < nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({nbytes} bytes) minus 1")
    if count < 0 and (nbytes - offset) % np_dtype.itemsize:
        raise ValueError(f"buffer length ({nbytes - offset} bytes) after offset ({offset} bytes) "
                         f"must be a multiple of element size ({np_dtype.itemsize})")
    if count > 0 and count * np_dtype.itemsize > nbytes - offset:
        raise ValueError(f"requested buffer length ({count} * {np_dtype.itemsize} bytes) after "
                         f"offset ({offset} bytes) must not be greater than actual buffer length "
                         f"({nbytes} bytes)")
    array = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    if not array.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors. This means you can write to the underlying "
                      "(supposedly non-writable) buffer using the tensor.", UserWarning,
                      stacklevel=2)
        array.flags.writeable = True if _writeable_possible(array) else False
    t = ig.from_numpy(array) if array.flags.writeable else ig.tensor(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _writeable_possible(array):
    try:
        array.flags.writeable = True
        return True
    except ValueError:
        return False


# ---- mode, histogram ------------------------------------------------------------------------
def mode(input, dim=-1, keepdim=False, *, out=None):
    """torch.mode: along dim, the most frequent value (the smallest of those
    equally frequent) and the index of its last occurrence, as torch.

    The slice is sorted (stably); an element's count so far in its run of
    equal values is its sorted position less the run's start; the first
    maximum of that count is the end of the smallest most frequent run.
    Each NaN counts as a value of its own (NaN != NaN); with NaNs in a slice,
    torch's CPU result depends on where its sort leaves them and is not
    always matched."""
    ig = _ig()
    d = _dim(dim, input.dim())
    if input.dim() == 0:
        r = _values_indices(input.clone(), ig.zeros((), dtype=ig.int64), "mode")
        return r
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    x = input.detach().movedim(d, -1)
    s, perm = x.sort(dim=-1, stable=True)
    positions = ig.arange(n, device=x.device).expand(s.shape)
    run_starts = ig.ones(s.shape, dtype=ig.bool, device=x.device)
    if n > 1:
        run_starts[..., 1:] = s[..., 1:] != s[..., :-1]
    start = ig.cummax(ig.where(run_starts, positions, ig.zeros_like(positions)), -1)[0]
    count = positions - start
    # the last element of the first longest run: its count, at its position
    at = count.argmax(-1, keepdim=True)
    values = s.gather(-1, at).squeeze(-1)
    indices = perm.gather(-1, at).squeeze(-1)
    if keepdim:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    if input.requires_grad:
        # the value is one of input's elements: gradient flows to it
        src = input.movedim(d, -1).gather(-1, perm.gather(-1, at)).squeeze(-1)
        values = src.unsqueeze(d) if keepdim else src
    r = _values_indices(values, indices, "mode")
    if out is not None:
        out[0].copy_(r[0])
        out[1].copy_(r[1])
        return _values_indices(out[0], out[1], "mode")
    return r


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """torch.histogram: (hist, bin_edges). bins: a count (equal bins over
    `range`, else over the data's min..max, widened by 0.5 each side when
    they are equal) or a tensor of increasing edges. Each bin holds
    [left, right), the last one also its right edge; elements outside are
    not counted. weight: each element's weight; density: hist divided by its
    total and the bins' widths."""
    from .linalg import _named
    ig = _ig()
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"histogram_cpu" not implemented for '
                           f"'{_dtype_word(input.dtype)}'")
    x = input.detach().reshape(-1)
    if isinstance(bins, ig.Tensor):
        if bins.dim() != 1:
            raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension, but "
                               f"got {bins.dim()} dimensions")
        edges = bins.detach().to(input.dtype)
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                               "dimension 0")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel() == 0:
            lo, hi = 0.0, 1.0
        else:
            lo, hi = float(x.min()), float(x.max())
        if lo > hi:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {lo} "
                               f"max {hi} for dimension 0")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = ig.linspace(lo, hi, bins + 1, dtype=input.dtype)
    nbins = edges.numel() - 1
    w = None if weight is None else weight.detach().reshape(-1).to(input.dtype)
    hist = ig.zeros(nbins, dtype=input.dtype)
    if nbins > 0 and x.numel() > 0:
        inside = (x >= edges[0]) & (x <= edges[-1])
        which = ig.searchsorted(edges, x, right=True) - 1
        which = which.clamp(0, nbins - 1)  # x == the last edge: the last bin
        counted = inside.to(input.dtype) if w is None else ig.where(inside, w, 0.0 * w)
        hist = hist.index_add(0, which, counted)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    r = _named("histogram", ["hist", "bin_edges"], (hist, edges.clone()))
    if out is not None:
        out[0].copy_(r[0])
        out[1].copy_(r[1])
        return _named("histogram", ["hist", "bin_edges"], tuple(out))
    return r


# ---- writes at indices ------------------------------------------------------------------------
def put(input, index, source, accumulate=False):
    """torch.put: a copy of input with source's elements written (or, with
    accumulate, added) at the flat indices `index` of input read as 1-D
    (negative indices count from the end)."""
    ig = _ig()
    if index.dtype is not ig.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{str(index.dtype).split('.')[-1].capitalize()}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype} and source.dtype = {source.dtype}")
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    n = input.numel()
    flat_index = index.reshape(-1)
    if flat_index.numel():
        lo, hi = int(flat_index.min()), int(flat_index.max())
        bad = hi if hi >= n else (lo if lo < -n else None)
        if bad is not None:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                             "elements.")
    flat = input.reshape(-1)
    written = ig.index_put(flat, (flat_index.remainder(max(n, 1)),), source.reshape(-1),
                           accumulate)
    return written.reshape(input.shape)


def _tensor_put_(self, index, source, accumulate=False):
    """Tensor.put_: put written into self."""
    return self.copy_(put(self, index, source, accumulate))


_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """torch.index_reduce: source's slices along dim reduced ("prod", "mean",
    "amax" or "amin") into input's slices at `index`; with include_self, the
    input's own value takes part. Slices no index names are input's. Made of
    scatter_reduce with the index spread over source's shape."""
    ig = _ig()
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    d = _dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (ig.int64, ig.int32):
        raise RuntimeError("index_reduce_(): Expected dtype int32/int64 for index")
    if source.dtype != input.dtype:
        raise RuntimeError("index_reduce_(): self and source must have the same scalar type")
    src_len = source.shape[d] if source.dim() else 1
    if index.numel() != src_len:
        raise IndexError("index_reduce_(): Index should have the same number of elements as "
                         "dimension of source")
    shape = [1] * max(source.dim(), 1)
    shape[d] = index.numel()
    spread = index.to(ig.int64).reshape(shape).expand(source.shape)
    needs_grad = ig.is_grad_enabled() and (input.requires_grad or source.requires_grad)
    if reduce == "prod" and needs_grad:
        # scatter_reduce's "prod" has no derivative in ignis: a chain of
        # products (one per index entry) has, zeros included.
        r = _index_prod(input, d, index.to(ig.int64), source, include_self)
    else:
        r = input.scatter_reduce(d, spread, source, reduce, include_self=include_self)
    return r if out is None else out.copy_(r)


def _index_prod(input, d, index, source, include_self):
    """index_reduce(..., "prod") as input's slices times, one index entry at
    a time, a factor that is source's slice at that entry's slice and 1
    elsewhere (differentiable by the product rule)."""
    ig = _ig()
    ones = ig.ones_like(input)
    r = input
    if not include_self:
        named = ig.zeros(input.shape[d], dtype=ig.bool, device=input.device)
        named[index] = True
        view = [1] * input.dim()
        view[d] = -1
        r = ig.where(named.reshape(view), ones, input)
    for k in _builtin_range(index.numel()):
        r = r * ones.index_copy(d, index[k:k + 1], source.narrow(d, k, 1))
    return r


def _tensor_index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """Tensor.index_reduce_: index_reduce written into self."""
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


# ---- gradient ----------------------------------------------------------------------------------
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """torch.gradient: the derivative of the sampled function along each of
    `dim` (all dims by default), a tuple of tensors. Interior points by
    central differences (second-order accurate, also on unevenly spaced
    coordinates), the two edges by one-sided differences of order
    `edge_order` (1 or 2). spacing: one number for all dims, a number per
    dim, or a 1-D tensor of coordinates per dim."""
    ig = _ig()
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(_builtin_range(input.dim()))
    elif isinstance(dim, int):
        dims = [_dim(dim, input.dim())]
    else:
        dims = [_dim(d, input.dim()) for d in dim]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but got "
                               f"a spacing argument of length {len(spacing)} and a dim argument "
                               f"of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point else input.to(ig.get_default_dtype())
    return tuple(_gradient_along(f, d, h, edge_order) for d, h in zip(dims, spacings))


def _gradient_along(f, d, h, edge_order):
    ig = _ig()
    n = f.shape[d]

    def sl(a, b):
        return f.narrow(d, a, b - a)

    if isinstance(h, ig.Tensor):
        x = h.to(f.dtype)
        view = [1] * f.dim()
        view[d] = -1

        def dx(a, b):  # x[a:b] shaped to broadcast along d
            return x[a:b].reshape(view)

        hl, hr = dx(1, n - 1) - dx(0, n - 2), dx(2, n) - dx(1, n - 1)
        interior = (hl * hl * sl(2, n) - hr * hr * sl(0, n - 2)
                    + (hr * hr - hl * hl) * sl(1, n - 1)) / (hl * hr * (hl + hr))
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / (dx(1, 2) - dx(0, 1))
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / (dx(n - 1, n) - dx(n - 2, n - 1))
        else:
            h1, h2 = dx(1, 2) - dx(0, 1), dx(2, 3) - dx(1, 2)
            first = (-(2 * h1 + h2) / (h1 * (h1 + h2)) * sl(0, 1)
                     + (h1 + h2) / (h1 * h2) * sl(1, 2) - h1 / (h2 * (h1 + h2)) * sl(2, 3))
            h1, h2 = dx(n - 2, n - 1) - dx(n - 3, n - 2), dx(n - 1, n) - dx(n - 2, n - 1)
            last = (h2 / (h1 * (h1 + h2)) * sl(n - 3, n - 2)
                    - (h1 + h2) / (h1 * h2) * sl(n - 2, n - 1)
                    + (2 * h2 + h1) / (h2 * (h1 + h2)) * sl(n - 1, n))
    else:
        h = float(h)
        interior = (sl(2, n) - sl(0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (sl(1, 2) - sl(0, 1)) / h
            last = (sl(n - 1, n) - sl(n - 2, n - 1)) / h
        else:
            first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / h
            last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / h
    return ig.cat([first, interior, last], d)


# ---- incomplete gamma, and top-level forms of in-place methods ----------------------------
def igamma(input, other, *, out=None):
    """torch.igamma: torch.special.gammainc."""
    from . import special
    return special.gammainc(input, other, out=out)


def igammac(input, other, *, out=None):
    """torch.igammac: torch.special.gammaincc."""
    from . import special
    return special.gammaincc(input, other, out=out)


def _method_as_function(name, doc):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


# torch.sinc_(x) and the like are x.sinc_() (torch exposes them at top level).
sinc_ = _method_as_function("sinc_", "torch.sinc_: input.sinc_().")
logit_ = _method_as_function("logit_", "torch.logit_: input.logit_(eps).")
ldexp_ = _method_as_function("ldexp_", "torch.ldexp_: input.ldexp_(other).")
deg2rad_ = _method_as_function("deg2rad_", "torch.deg2rad_: input.deg2rad_().")
rad2deg_ = _method_as_function("rad2deg_", "torch.rad2deg_: input.rad2deg_().")
xlogy_ = _method_as_function("xlogy_", "torch.xlogy_: input.xlogy_(other).")
nan_to_num_ = _method_as_function("nan_to_num_", "torch.nan_to_num_: input.nan_to_num_(...).")
detach_ = _method_as_function("detach_", "torch.detach_: input.detach_().")


def fill(input, value):
    """torch.fill(input, value): a tensor like input filled with value (a
    number or a 0-d tensor), differentiable in a tensor value."""
    ig = _ig()
    if isinstance(value, ig.Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        return value.to(input.dtype).expand(input.shape).clone()
    return ig.full_like(input, value)


def orgqr(input, input2, *, out=None):
    """torch.orgqr: torch.linalg.householder_product(input, input2)."""
    from . import linalg
    return linalg.householder_product(input, input2, out=out)
