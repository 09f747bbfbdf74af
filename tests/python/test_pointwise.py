"""Unary, binary and ternary pointwise ops against torch and NumPy.

Each op runs on every dtype over several shapes and memory layouts
(contiguous, permuted, strided, broadcast-expanded, 0-dim, zero-size); ignis
must give torch's result dtype and values, or raise torch's exception type
where torch refuses the dtype. Float results are also checked against a
float64 NumPy formula. Type promotion, Python-number operands and the
in-place forms have their own tests below.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ignis
from conftest import (
    DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, _layout_base_and_view, assert_np, assert_same,
    assert_same_error, compare_call, dtype_name, ig_dtype, lib_fn, make_pair, np64,
    requires_torch, run, th_dtype, torch,
)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> (input kind, NumPy float64 reference or None)
UNARY = {
    "neg": ("any", np.negative), "negative": ("any", np.negative),
    "abs": ("any", np.abs), "absolute": ("any", np.abs),
    "exp": ("any", np.exp), "exp2": ("any", np.exp2),
    "log": ("positive", np.log), "log2": ("positive", np.log2),
    "log10": ("positive", np.log10), "log1p": ("positive", np.log1p),
    "expm1": ("any", np.expm1), "sqrt": ("positive", np.sqrt),
    "rsqrt": ("positive", lambda x: 1 / np.sqrt(x)),
    "sin": ("any", np.sin), "cos": ("any", np.cos), "tan": ("unit", np.tan),
    "asin": ("unit", np.arcsin), "acos": ("unit", np.arccos), "atan": ("any", np.arctan),
    "sinh": ("any", np.sinh), "cosh": ("any", np.cosh), "tanh": ("any", np.tanh),
    "asinh": ("any", np.arcsinh), "acosh": ("positive", np.arccosh),
    "atanh": ("unit", np.arctanh), "arcsin": ("unit", np.arcsin), "arccos": ("unit", np.arccos),
    "arctan": ("any", np.arctan), "arcsinh": ("any", np.arcsinh),
    "arccosh": ("positive", np.arccosh), "arctanh": ("unit", np.arctanh),
    "sigmoid": ("any", _sigmoid), "relu": ("any", lambda x: np.maximum(x, 0)),
    "silu": ("any", lambda x: x * _sigmoid(x)),
    "mish": ("any", lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "gelu": ("any", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "erf": ("any", _erf), "erfc": ("any", lambda x: 1 - _erf(x)),
    # the gamma family and erfinv: torch is the oracle (NumPy has none of them)
    "lgamma": ("any", None), "digamma": ("any", None), "erfinv": ("unit", None),
    "floor": ("any", np.floor), "ceil": ("any", np.ceil), "round": ("any", np.round),
    "trunc": ("any", np.trunc), "fix": ("any", np.trunc),
    "frac": ("any", lambda x: x - np.trunc(x)), "sign": ("any", np.sign),
    "reciprocal": ("nonzero", lambda x: 1 / x), "square": ("any", np.square),
    "bitwise_not": ("any", None), "logical_not": ("any", lambda x: x == 0),
    "isnan": ("any", np.isnan), "isinf": ("any", np.isinf), "isposinf": ("any", np.isposinf),
    "isneginf": ("any", np.isneginf), "isfinite": ("any", np.isfinite),
    "signbit": ("any", np.signbit),
}

SHAPES = [(2, 3), (3, 1, 4), (5,), (), (0, 3), (2, 0)]


def _unary_cases(name, dtype):
    kind = UNARY[name][0]
    for shape in SHAPES:
        for layout in LAYOUTS if len(shape) else ["contiguous"]:
            yield shape, layout, kind


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    ref = UNARY[name][1]
    for i, (shape, layout, kind) in enumerate(_unary_cases(name, dtype)):
        x, xt = make_pair(shape, dtype, layout, seed=i, kind=kind)
        msg = f"{name}({dtype}{list(shape)} {layout})"
        out = compare_call(lambda: lib_fn(ignis, name)(x),
                           lambda: lib_fn(torch, name)(xt), check_strides=True, msg=msg)
        if out is None:
            continue
        # Method form gives the same thing as the function.
        if hasattr(ignis.Tensor, name):
            assert_same(getattr(x, name)(), out, msg=msg + " method")
        if ref is not None and dtype_name(out.dtype) in FLOAT_DTYPES + ["bool"] and \
                dtype in FLOAT_DTYPES:
            assert_np(out, ref(np64(x)), msg=msg + " vs numpy")


SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-6, 30.0, -30.0, 100.0, -100.0,
           math.inf, -math.inf, math.nan]


@requires_torch
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values(name, dtype):
    """inf, nan, signed zeros, halfway points and large magnitudes."""
    specials = SPECIAL
    if name == "gelu":  # torch's vectorised float32/bfloat16 gelu gives nan at +inf
        specials = [v for v in SPECIAL if not math.isinf(v)]
    a = np.array(specials, dtype=np.float64)
    x = ignis.from_numpy(a).to(ig_dtype(dtype))
    xt = torch.from_numpy(a).to(th_dtype(dtype))
    compare_call(lambda: lib_fn(ignis, name)(x), lambda: lib_fn(torch, name)(xt),
                 msg=f"{name}({dtype} specials)")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma(n, dtype):
    """torch.polygamma(n, x) and x.polygamma(n) over every dtype and layout;
    poles (0 and the negative integers) and infinities included. torch's
    trigamma (n = 1) is good to about 5e-10 in float64 (ignis's to 1e-16,
    checked against a direct sum), hence that tolerance there."""
    rtol = 1e-8 if n == 1 and dtype == "float64" else None
    for i, (shape, layout, kind) in enumerate(_unary_cases("digamma", dtype)):
        x, xt = make_pair(shape, dtype, layout, seed=i, kind="positive" if n > 1 else kind)
        msg = f"polygamma({n}, {dtype}{list(shape)} {layout})"
        out = compare_call(lambda: ignis.polygamma(n, x), lambda: torch.polygamma(n, xt),
                           rtol=rtol, check_strides=True, msg=msg)
        if out is not None:
            assert_same(x.polygamma(n), out, msg=msg + " method")
            assert_same(ignis.special.polygamma(n, x), out, msg=msg + " special")
    if dtype in FLOAT_DTYPES:
        a = np.array(SPECIAL + [-2.0, -3.0, 0.3, -0.7], dtype=np.float64)
        compare_call(lambda: ignis.polygamma(n, ignis.from_numpy(a).to(ig_dtype(dtype))),
                     lambda: torch.polygamma(n, torch.from_numpy(a).to(th_dtype(dtype))),
                     rtol=rtol, msg=f"polygamma({n}, {dtype} specials)")


def test_polygamma_rejects_a_negative_order_and_a_float_one():
    with pytest.raises(RuntimeError, match="does not support negative n"):
        ignis.polygamma(-1, ignis.ones(3))
    with pytest.raises(TypeError, match="must be int"):
        ignis.polygamma(1.0, ignis.ones(3))


@requires_torch
@pytest.mark.parametrize("p", [1, 2, 4])
def test_mvlgamma_and_special_aliases(p):
    a = np.array([2.0, 3.5, 10.25, 40.0]) + p
    x, xt = ignis.from_numpy(a), torch.from_numpy(a)
    assert_same(ignis.mvlgamma(x, p), torch.mvlgamma(xt, p))
    assert_same(ignis.special.multigammaln(x, p), torch.special.multigammaln(xt, p))
    assert_same(ignis.special.gammaln(x), torch.special.gammaln(xt))
    assert_same(ignis.special.psi(x), torch.special.psi(xt))
    assert_same(ignis.special.digamma(x), torch.special.digamma(xt))
    u = ignis.from_numpy(np.array([-0.5, 0.0, 0.9]))
    assert_same(ignis.special.erfinv(u), torch.special.erfinv(torch.from_numpy(u.numpy())))
    with pytest.raises(RuntimeError, match="All elements must be greater than"):
        ignis.mvlgamma(ignis.tensor([0.1]), 3)


@requires_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_gelu_approximate(approximate, dtype):
    x, xt = make_pair((4, 5), dtype)
    compare_call(lambda: ignis.nn.functional.gelu(x, approximate=approximate),
                 lambda: torch.nn.functional.gelu(xt, approximate=approximate))


def test_gelu_bad_approximate():
    with pytest.raises(ValueError):
        ignis.nn.functional.gelu(ignis.ones(3), approximate="fast")


# --------------------------------------------------------------------------------
# Binary
# --------------------------------------------------------------------------------
# name -> (kind of the second operand, NumPy float64 reference or None)
BINARY = {
    "add": ("any", np.add), "sub": ("any", np.subtract), "subtract": ("any", np.subtract),
    "mul": ("any", np.multiply), "multiply": ("any", np.multiply),
    "div": ("nonzero", np.divide), "divide": ("nonzero", np.divide),
    "true_divide": ("nonzero", np.divide), "floor_divide": ("nonzero", np.floor_divide),
    "pow": ("small", np.power), "fmod": ("nonzero", np.fmod),
    "remainder": ("nonzero", np.remainder), "maximum": ("any", np.maximum),
    "minimum": ("any", np.minimum), "bitwise_and": ("any", None), "bitwise_or": ("any", None),
    "bitwise_xor": ("any", None), "atan2": ("any", np.arctan2), "hypot": ("any", np.hypot),
    "copysign": ("any", np.copysign), "eq": ("any", np.equal), "ne": ("any", np.not_equal),
    "lt": ("any", np.less), "le": ("any", np.less_equal), "gt": ("any", np.greater),
    "ge": ("any", np.greater_equal), "less": ("any", np.less),
    "less_equal": ("any", np.less_equal), "greater": ("any", np.greater),
    "greater_equal": ("any", np.greater_equal), "not_equal": ("any", np.not_equal),
    "logical_and": ("any", np.logical_and), "logical_or": ("any", np.logical_or),
    "logical_xor": ("any", np.logical_xor), "rsub": ("any", lambda a, b: b - a),
}

BINARY_SHAPES = [((2, 3), (2, 3)), ((3, 1, 4), (2, 1)), ((4,), ()), ((), (3, 2)), ((), ()),
                 ((0, 3), (1, 3)), ((2, 1), (0,))]


def _lhs_kind(name):
    return "small" if name == "pow" else "any"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_same_dtype(name, dtype):
    kind, ref = BINARY[name]
    for i, (sa, sb) in enumerate(BINARY_SHAPES):
        for layout in LAYOUTS:
            if layout != "contiguous" and not (sa and sb):
                continue
            a, at = make_pair(sa, dtype, layout, seed=2 * i, kind=_lhs_kind(name))
            b, bt = make_pair(sb, dtype, "contiguous", seed=2 * i + 1, kind=kind)
            msg = f"{name}({dtype}{list(sa)} {layout}, {dtype}{list(sb)})"
            out = compare_call(lambda: lib_fn(ignis, name)(a, b),
                               lambda: lib_fn(torch, name)(at, bt), check_strides=True, msg=msg)
            if out is not None and ref is not None and dtype in FLOAT_DTYPES:
                assert_np(out, ref(np64(a), np64(b)), msg=msg + " vs numpy")


MIXED_OPS = ["add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "maximum", "eq",
             "lt", "bitwise_and", "logical_or", "atan2", "rsub"]


@requires_torch
@pytest.mark.parametrize("dtype_a", DTYPES)
@pytest.mark.parametrize("name", MIXED_OPS)
def test_binary_mixed_dtypes(name, dtype_a):
    """Every dtype pair, as dimensioned and as 0-dim operands."""
    kind = BINARY[name][0]
    for dtype_b in DTYPES:
        for sa, sb in [((2, 3), (3,)), ((2, 3), ()), ((), (2,))]:
            a, at = make_pair(sa, dtype_a, seed=1, kind=_lhs_kind(name))
            b, bt = make_pair(sb, dtype_b, seed=2, kind=kind)
            compare_call(lambda: lib_fn(ignis, name)(a, b), lambda: lib_fn(torch, name)(at, bt),
                         msg=f"{name}({dtype_a}{list(sa)}, {dtype_b}{list(sb)})")


SCALARS = [2, -3, 0, 2.5, -0.75, True, False, 1e10, -7]


def _th_with_scalar(name, at, s):
    """torch's op with a Python number; ops that take only tensors in torch
    (maximum, atan2, ...) get it as a 0-dim tensor of the number's default
    dtype, which promotes like a Python number against a dimensioned tensor."""
    f = lib_fn(torch, name)
    try:
        return f(at, s)
    except TypeError:
        return f(at, torch.tensor(s))


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_python_scalar(name, dtype):
    """Python numbers as the second operand promote as PyTorch's wrapped numbers."""
    a, at = make_pair((2, 3), dtype, seed=3, kind=_lhs_kind(name))
    for s in SCALARS:
        if s == 0 and BINARY[name][0] == "nonzero":
            continue
        if name == "pow" and isinstance(s, (int, float)) and abs(s) > 10:
            continue
        compare_call(lambda: lib_fn(ignis, name)(a, s), lambda: _th_with_scalar(name, at, s),
                     msg=f"{name}({dtype}, {s!r})")


OPERATORS = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
    "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OPERATORS))
def test_python_operators(op, dtype):
    """Tensor operators, reflected operators (2 - t) and unary operators."""
    f = OPERATORS[op]
    a, at = make_pair((3, 2), dtype, seed=4, kind="small" if op == "**" else "any")
    b, bt = make_pair((2,), dtype, seed=5, kind="nonzero" if op in "/ // %" else "small")
    compare_call(lambda: f(a, b), lambda: f(at, bt), msg=f"t {op} t ({dtype})")
    for s in [3, 1.5, True]:
        compare_call(lambda: f(a, s), lambda: f(at, s), msg=f"t {op} {s!r} ({dtype})")
        compare_call(lambda: f(s, b), lambda: f(s, bt), msg=f"{s!r} {op} t ({dtype})")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_unary_operators(dtype):
    a, at = make_pair((2, 3), dtype)
    for f in (lambda t: -t, lambda t: abs(t), lambda t: ~t, lambda t: +t):
        compare_call(lambda: f(a), lambda: f(at), msg=dtype)


@requires_torch
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("name", ["div", "floor_divide", "fmod", "remainder", "pow", "maximum",
                                  "minimum", "atan2", "hypot", "copysign", "eq", "lt"])
def test_binary_special_values(name, dtype):
    """inf/nan/signed-zero operands (every pair of specials)."""
    vals = np.array([0.0, -0.0, 1.0, -2.5, math.inf, -math.inf, math.nan])
    a = np.repeat(vals, len(vals))
    b = np.tile(vals, len(vals))
    if name == "copysign":  # the sign of a NaN is unspecified (torch's bfloat16 reads it as -)
        a, b = a[~np.isnan(b)], b[~np.isnan(b)]
    x, y = ignis.from_numpy(a).to(ig_dtype(dtype)), ignis.from_numpy(b).to(ig_dtype(dtype))
    xt, yt = torch.from_numpy(a).to(th_dtype(dtype)), torch.from_numpy(b).to(th_dtype(dtype))
    compare_call(lambda: getattr(ignis, name)(x, y), lambda: getattr(torch, name)(xt, yt),
                 msg=f"{name} {dtype} specials")


@requires_torch
@pytest.mark.parametrize("rounding_mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_div_rounding_mode(rounding_mode, dtype):
    a, at = make_pair((3, 4), dtype, seed=6)
    b, bt = make_pair((4,), dtype, seed=7, kind="nonzero")
    compare_call(lambda: ignis.div(a, b, rounding_mode=rounding_mode),
                 lambda: torch.div(at, bt, rounding_mode=rounding_mode))
    compare_call(lambda: a.div(2, rounding_mode=rounding_mode),
                 lambda: at.div(2, rounding_mode=rounding_mode))


def test_div_bad_rounding_mode():
    with pytest.raises(ValueError):
        ignis.div(ignis.ones(2), ignis.ones(2), rounding_mode="ceil")


@requires_torch
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero(name, dtype):
    a, at = make_pair((4,), dtype)
    z, zt = ignis.zeros(4, dtype=ig_dtype(dtype)), torch.zeros(4, dtype=th_dtype(dtype))
    compare_call(lambda: getattr(ignis, name)(a, z), lambda: getattr(torch, name)(at, zt))


@requires_torch
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod", "div_trunc", "div_floor"])
def test_integer_min_divided_by_minus_one(name, dtype):
    """INT_MIN / -1 overflows: it must wrap (quotient INT_MIN, remainder 0), not trap.

    torch itself dies of SIGFPE on this lane for int32/int64, so it is compared
    only on the other lanes; the overflowing lane is compared with NumPy.
    """
    lo = int(np.iinfo(np.dtype(dtype)).min)
    vals_a, vals_b = [lo, lo, 7, -7], [-1, 1, -1, 2]
    a = ignis.tensor(vals_a, dtype=ig_dtype(dtype))
    b = ignis.tensor(vals_b, dtype=ig_dtype(dtype))
    at = torch.tensor(vals_a[1:], dtype=th_dtype(dtype))
    bt = torch.tensor(vals_b[1:], dtype=th_dtype(dtype))
    if name.startswith("div_"):
        mode = name[4:]
        out = ignis.div(a, b, rounding_mode=mode)
        expect = torch.div(at, bt, rounding_mode=mode)
    else:
        out = getattr(ignis, name)(a, b)
        expect = getattr(torch, name)(at, bt)
    assert_same(out.narrow(0, 1, 3), expect)
    wrapped = 0 if name in ("remainder", "fmod") else lo
    assert out.tolist()[0] == wrapped


@requires_torch
def test_pow_negative_integer_exponent():
    a = ignis.tensor([2, 3, -1, 1])
    at = torch.tensor([2, 3, -1, 1])
    compare_call(lambda: a ** -1, lambda: at ** -1)
    compare_call(lambda: ignis.pow(a, ignis.tensor([-1, -2, -3, -4])),
                 lambda: torch.pow(at, torch.tensor([-1, -2, -3, -4])))
    compare_call(lambda: a ** 2.0, lambda: at ** 2.0)
    compare_call(lambda: 2 ** a, lambda: 2 ** at)


@requires_torch
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_pow_that_overflows_wraps_as_torch(dtype):
    # Computed in the unsigned type: an overflowing power wraps around (it was
    # signed-overflow undefined behaviour, found by ./dev test --sanitize).
    vals = [100, 7, 3, 2, 0, 1] + ([] if dtype == "uint8" else [-3, -7])
    a = ignis.tensor(vals, dtype=getattr(ignis, dtype))
    at = torch.tensor(vals, dtype=getattr(torch, dtype))
    for e in (5, 31, 63):
        compare_call(lambda: a ** e, lambda: at ** e)
    big = [2 ** 32, 3, -7, 2] if dtype == "int64" else None
    if big:
        compare_call(lambda: ignis.pow(ignis.tensor(big), ignis.tensor([3, 40, 3, 63])),
                     lambda: torch.pow(torch.tensor(big), torch.tensor([3, 40, 3, 63])))


@requires_torch
@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integer_add_sub_mul_that_overflow_wrap_as_torch(dtype):
    # In the unsigned type (scalar_ops.h, detail::wrap_*): signed overflow was
    # undefined behaviour (UBSan: int64 min * 28 in the bit-shift decomposition).
    info = torch.iinfo(getattr(torch, dtype))
    vals = [info.min, info.max, info.min + 1, info.max - 1, 3, 0]
    a = ignis.tensor(vals, dtype=getattr(ignis, dtype))
    at = torch.tensor(vals, dtype=getattr(torch, dtype))
    compare_call(lambda: a * 28, lambda: at * 28)
    compare_call(lambda: a * a, lambda: at * at)
    compare_call(lambda: a + a, lambda: at + at)
    compare_call(lambda: a - a.flip(0), lambda: at - at.flip(0))
    compare_call(lambda: a.add(a, alpha=3), lambda: at.add(at, alpha=3))
    compare_call(lambda: ignis.rsub(a, 1, alpha=2), lambda: torch.rsub(at, 1, alpha=2))
    compare_call(lambda: a << 3, lambda: at << 3)


@requires_torch
def test_add_alpha():
    for dtype in DTYPES:
        a, at = make_pair((2, 3), dtype, seed=8)
        b, bt = make_pair((3,), dtype, seed=9)
        for alpha in [2, -1, 0.5, True]:
            for name in ["add", "sub", "rsub"]:
                compare_call(lambda: getattr(ignis, name)(a, b, alpha=alpha),
                             lambda: getattr(torch, name)(at, bt, alpha=alpha),
                             msg=f"{name}({dtype}, alpha={alpha!r})")


@requires_torch
def test_bool_subtraction_and_negation_messages():
    b = ignis.tensor([True, False])
    bt = torch.tensor([True, False])
    for f in [lambda t: t - t, lambda t: t - 1, lambda t: 1 - t, lambda t: -t,
              lambda t: t.sub(True), lambda t: t.neg()]:
        _, e1 = run(f, b)
        _, e2 = run(f, bt)
        assert type(e1) is type(e2) is RuntimeError
        assert str(e1) == str(e2)


# --------------------------------------------------------------------------------
# Type promotion
# --------------------------------------------------------------------------------
@requires_torch
def test_promote_types_table():
    for a in DTYPES:
        for b in DTYPES:
            got = ignis.promote_types(ig_dtype(a), ig_dtype(b))
            want = torch.promote_types(th_dtype(a), th_dtype(b))
            assert dtype_name(got) == dtype_name(want), (a, b)


@requires_torch
def test_can_cast_table():
    for a in DTYPES:
        for b in DTYPES:
            assert ignis.can_cast(ig_dtype(a), ig_dtype(b)) == \
                torch.can_cast(th_dtype(a), th_dtype(b)), (a, b)


@requires_torch
@pytest.mark.parametrize("da", DTYPES)
def test_result_type_categories(da):
    """dim tensor vs 0-dim tensor vs Python number, for every dtype pair."""
    for db in DTYPES:
        for sa, sb in [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]:
            a = ignis.ones(sa, dtype=ig_dtype(da))
            b = ignis.ones(sb, dtype=ig_dtype(db))
            at = torch.ones(sa, dtype=th_dtype(da))
            bt = torch.ones(sb, dtype=th_dtype(db))
            assert dtype_name(ignis.mul(a, b).dtype) == dtype_name(torch.mul(at, bt).dtype), \
                (da, sa, db, sb)
            assert dtype_name(ignis.where(ignis.ones(1, dtype=ignis.bool), a, b).dtype) == \
                dtype_name(torch.where(torch.ones(1, dtype=torch.bool), at, bt).dtype)
        for s in [1, 2.5, True]:
            a = ignis.ones(2, dtype=ig_dtype(da))
            at = torch.ones(2, dtype=th_dtype(da))
            assert dtype_name(ignis.mul(a, s).dtype) == dtype_name(torch.mul(at, s).dtype)
            assert dtype_name(ignis.mul(a.select(0, 0), s).dtype) == \
                dtype_name(torch.mul(at.select(0, 0), s).dtype)


def test_promotion_examples():
    assert (ignis.ones(3, dtype=ignis.int32) + 2.5).dtype is ignis.float32
    assert (ignis.ones(3, dtype=ignis.int8) + ignis.ones(3, dtype=ignis.uint8)).dtype is ignis.int16
    f16 = ignis.ones(3, dtype=ignis.float16)
    assert (f16 + ignis.tensor(1.0, dtype=ignis.float64)).dtype is ignis.float16
    assert (f16 + ignis.ones(3, dtype=ignis.float64)).dtype is ignis.float64
    assert (ignis.ones(3, dtype=ignis.int8) + ignis.tensor(1000)).dtype is ignis.int8
    assert (ignis.ones(3, dtype=ignis.int8) + ignis.tensor(1.5)).dtype is ignis.float32
    assert (ignis.ones(3, dtype=ignis.bool) + 1).dtype is ignis.int64
    assert (ignis.ones(3, dtype=ignis.bool) + True).dtype is ignis.bool
    assert (ignis.ones(3, dtype=ignis.uint8) + 1).dtype is ignis.uint8
    assert (ignis.ones(3, dtype=ignis.int64) / 2).dtype is ignis.float32
    assert (ignis.ones(3, dtype=ignis.float16) * 2.5).dtype is ignis.float16
    assert (ignis.ones(3, dtype=ignis.bfloat16) + ignis.ones(3, dtype=ignis.float16)).dtype \
        is ignis.float32


@requires_torch
def test_default_dtype_affects_python_floats():
    try:
        ignis.set_default_dtype(ignis.float64)
        torch.set_default_dtype(torch.float64)
        assert (ignis.ones(2, dtype=ignis.int32) * 0.5).dtype is ignis.float64
        assert ignis.exp(ignis.ones(2, dtype=ignis.int32)).dtype is ignis.float64
        assert (ignis.ones(2, dtype=ignis.float16) * 0.5).dtype is ignis.float16
    finally:
        ignis.set_default_dtype(ignis.float32)
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError):
        ignis.set_default_dtype(ignis.int64)


# --------------------------------------------------------------------------------
# Ternary ops
# --------------------------------------------------------------------------------
@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_where(dtype):
    for i, (sc, sa, sb) in enumerate([((2, 3), (2, 3), (2, 3)), ((3, 1), (1, 4), (4,)),
                                      ((), (2,), ()), ((0, 2), (1, 2), (2,))]):
        for layout in ["contiguous", "transposed", "expanded"]:
            c, ct = make_pair(sc, "bool", layout if sc else "contiguous", seed=i)
            a, at = make_pair(sa, dtype, layout if sa else "contiguous", seed=i + 10)
            b, bt = make_pair(sb, "float32", seed=i + 20)
            compare_call(lambda: ignis.where(c, a, b), lambda: torch.where(ct, at, bt),
                         check_strides=True, msg=f"where {dtype} {layout} {sa}")
            compare_call(lambda: ignis.where(c, a, a), lambda: torch.where(ct, at, at))
            for s in [1, 2.5, True]:
                compare_call(lambda: ignis.where(c, a, s), lambda: torch.where(ct, at, s))
                compare_call(lambda: a.where(c, s), lambda: at.where(ct, s))
    # Condition dtypes other than bool.
    c, ct = make_pair((3,), dtype)
    a, at = make_pair((3,), "float32")
    compare_call(lambda: ignis.where(c, a, a), lambda: torch.where(ct, at, at),
                 msg=f"where(cond={dtype})")


CLAMP_BOUNDS = [(-1, 1), (0.5, None), (None, 2), (2, -2), (-1.5, 2.5), (True, None)]


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp(dtype):
    x, xt = make_pair((3, 4), dtype, "transposed")
    for lo, hi in CLAMP_BOUNDS:
        for name in ["clamp", "clip"]:
            compare_call(lambda: getattr(ignis, name)(x, lo, hi),
                         lambda: getattr(torch, name)(xt, lo, hi), msg=f"{name}({lo}, {hi})")
            compare_call(lambda: getattr(x, name)(min=lo, max=hi),
                         lambda: getattr(xt, name)(min=lo, max=hi))
    lo, lot = make_pair((4,), dtype, seed=1)
    hi, hit = make_pair((3, 1), dtype, seed=2)
    compare_call(lambda: ignis.clamp(x, lo, hi), lambda: torch.clamp(xt, lot, hit))
    compare_call(lambda: ignis.clamp(x, lo), lambda: torch.clamp(xt, lot))
    compare_call(lambda: ignis.clamp(x, max=hi), lambda: torch.clamp(xt, max=hit))
    compare_call(lambda: ignis.clamp_min(x, lo), lambda: torch.clamp_min(xt, lot))
    compare_call(lambda: ignis.clamp_max(x, hi), lambda: torch.clamp_max(xt, hit))
    compare_call(lambda: ignis.clamp_min(x, 1), lambda: torch.clamp_min(xt, 1))
    compare_call(lambda: ignis.clamp_max(x, 0.5), lambda: torch.clamp_max(xt, 0.5))


def test_clamp_needs_a_bound():
    with pytest.raises(RuntimeError):
        ignis.clamp(ignis.ones(3))


@requires_torch
def test_clamp_nan():
    a = np.array([1.0, math.nan, -3.0, 5.0])
    x, xt = ignis.from_numpy(a), torch.from_numpy(a)
    compare_call(lambda: ignis.clamp(x, -1, 1), lambda: torch.clamp(xt, -1, 1))
    # A NaN bound propagates (torch 2.13, the oracle; older torch ignored a
    # NaN Python-number bound).
    assert np.isnan(ignis.clamp(x, min=math.nan).numpy()).all()
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 13):
        compare_call(lambda: ignis.clamp(x, min=math.nan), lambda: torch.clamp(xt, min=math.nan))
    compare_call(lambda: ignis.clamp(x, max=ignis.tensor(math.nan, dtype=ignis.float64)),
                 lambda: torch.clamp(xt, max=torch.tensor(math.nan, dtype=torch.float64)))


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_lerp(dtype):
    a, at = make_pair((3, 4), dtype, seed=1)
    b, bt = make_pair((4,), dtype, seed=2)
    w, wt = make_pair((3, 1), dtype, seed=3, kind="unit")
    for weight, weight_t in [(0.25, 0.25), (0.75, 0.75), (0.0, 0.0), (1.0, 1.0), (w, wt)]:
        compare_call(lambda: ignis.lerp(a, b, weight), lambda: torch.lerp(at, bt, weight_t),
                     msg=f"lerp {dtype}")
    other = "float64" if dtype != "float64" else "float32"
    c, ct = make_pair((4,), other)
    compare_call(lambda: ignis.lerp(a, c, 0.5), lambda: torch.lerp(at, ct, 0.5),
                 msg=f"lerp {dtype} end {other}")
    compare_call(lambda: ignis.lerp(a, b, c), lambda: torch.lerp(at, bt, ct),
                 msg=f"lerp {dtype} weight {other}")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name, dtype):
    s, st_ = make_pair((2, 3), dtype, "transposed", seed=1)
    a, at = make_pair((3,), dtype, seed=2)
    b, bt = make_pair((2, 1), dtype, seed=3, kind="nonzero")
    for value in [1, 2, 0.5, -1.5]:
        compare_call(lambda: getattr(ignis, name)(s, a, b, value=value),
                     lambda: getattr(torch, name)(st_, at, bt, value=value),
                     msg=f"{name} {dtype} value={value}")
    f, ft = make_pair((3,), "float32", seed=4, kind="nonzero")
    compare_call(lambda: getattr(ignis, name)(f, a, b), lambda: getattr(torch, name)(ft, at, bt),
                 msg=f"{name} float self, {dtype} tensors")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill(dtype):
    x, xt = make_pair((3, 4), dtype, "transposed")
    m, mt = make_pair((4,), "bool", seed=5)
    values = [0, 1, -2, 2.7, True, 100]
    for v in values:
        compare_call(lambda: ignis.masked_fill(x, m, v), lambda: torch.masked_fill(xt, mt, v),
                     msg=f"masked_fill {dtype} {v!r}")
        compare_call(lambda: x.masked_fill(m, ignis.tensor(v)),
                     lambda: xt.masked_fill(mt, torch.tensor(v)), msg=f"0-dim value {v!r}")
    # The mask may broadcast the result beyond self (out of place only).
    big, bigt = make_pair((2, 3, 4), "bool", seed=6)
    compare_call(lambda: ignis.masked_fill(x, big, 1), lambda: torch.masked_fill(xt, bigt, 1))
    compare_call(lambda: x.clone().masked_fill_(big, 1), lambda: xt.clone().masked_fill_(bigt, 1))
    # Non-bool masks and non-0-dim values are errors.
    compare_call(lambda: x.masked_fill(m.to(ignis.uint8), 1),
                 lambda: xt.masked_fill(mt.to(torch.uint8), 1))
    compare_call(lambda: x.masked_fill(m, ignis.ones(1)), lambda: xt.masked_fill(mt, torch.ones(1)))


# --------------------------------------------------------------------------------
# In-place forms
# --------------------------------------------------------------------------------
INPLACE = {
    "add_": (lambda t, o: t.add_(o)), "sub_": (lambda t, o: t.sub_(o)),
    "mul_": (lambda t, o: t.mul_(o)), "div_": (lambda t, o: t.div_(o)),
    "clamp_": (lambda t, o: t.clamp_(min=o)), "clamp_min_": (lambda t, o: t.clamp_min_(o)),
    "maximum_": None, "pow_": (lambda t, o: t.pow_(o)),
    "masked_fill_": (lambda t, o: t.masked_fill_(t != t, o)),
    "remainder_": (lambda t, o: t.remainder_(o)), "eq_": (lambda t, o: t.eq_(o)),
    "lt_": (lambda t, o: t.lt_(o)), "bitwise_and_": (lambda t, o: t.bitwise_and_(o)),
    # torch's logical_and_ takes only a tensor: give it the number as a 0-dim tensor.
    "logical_and_": (lambda t, o: t.logical_and_(o if isinstance(t, ignis.Tensor)
                                                 else torch.tensor(o))),
    "lerp_": (lambda t, o: t.lerp_(t, o)),
    "addcmul_": (lambda t, o: t.addcmul_(t, t, value=o)), "copysign_": (lambda t, o: t.copysign_(o)),
    "floor_divide_": (lambda t, o: t.floor_divide_(o)),
    "exp_": (lambda t, o: t.exp_()), "neg_": (lambda t, o: t.neg_()),
    "abs_": (lambda t, o: t.abs_()), "floor_": (lambda t, o: t.floor_()),
    "sigmoid_": (lambda t, o: t.sigmoid_()), "logical_not_": (lambda t, o: t.logical_not_()),
    "bitwise_not_": (lambda t, o: t.bitwise_not_()), "relu_": (lambda t, o: t.relu_()),
    "sqrt_": (lambda t, o: t.abs().sqrt_()), "round_": (lambda t, o: t.round_()),
}
INPLACE.pop("maximum_")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_ops(name, dtype):
    """Same object back, version bumped, torch's values, torch's dtype errors."""
    f = INPLACE[name]
    for other in [2, 0.5, True]:
        for layout in ["contiguous", "transposed", "strided"]:
            x, xt = make_pair((2, 3), dtype, layout, kind="nonzero")
            version = x._version
            y, e = run(f, x, other)
            yt, et = run(f, xt, other)
            msg = f"{name}({dtype} {layout}, {other!r})"
            if et is not None:
                assert_same_error(e, et, msg)
                continue
            assert e is None, f"{msg}: {e!r}"
            assert y is x or name == "sqrt_", msg
            assert x._version > version or name == "sqrt_", msg
            assert_same(y, yt, msg=msg)
            assert y.stride() == yt.stride(), msg


@requires_torch
def test_inplace_result_type_message():
    x = ignis.zeros(3, dtype=ignis.int64)
    xt = torch.zeros(3, dtype=torch.int64)
    for f in [lambda t: t.add_(1.5), lambda t: t.mul_(ignis.ones(3) if t is x else torch.ones(3)),
              lambda t: t.div_(2), lambda t: t.exp_(), lambda t: t.pow_(0.5)]:
        _, e = run(f, x)
        _, et = run(f, xt)
        assert type(e) is type(et) is RuntimeError
        assert str(e) == str(et), (str(e), str(et))
    _, e = run(lambda: x.clamp_(0.5))
    assert isinstance(e, RuntimeError) and "can't be cast to the desired output type" in str(e)
    b = ignis.zeros(3, dtype=ignis.bool)
    _, e = run(lambda: b.add_(1))
    assert isinstance(e, RuntimeError)
    assert str(e) == "result type Long can't be cast to the desired output type Bool"


@requires_torch
def test_inplace_broadcast_rules():
    x, xt = make_pair((3,), "float32")
    y, yt = make_pair((2, 3), "float32")
    compare_call(lambda: x.add_(y), lambda: xt.add_(yt))
    compare_call(lambda: y.clone().add_(x), lambda: yt.clone().add_(xt))


@requires_torch
def test_inplace_on_expanded_tensor_is_refused():
    """...except for fills with a number, where every alias receives the same
    value (fill_ with a tensor value, and so `t[i] = tensor`, is refused:
    fuzz seed 3713103)."""
    for f in [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.neg_(),
              lambda t: t.clamp_(0, 1), lambda t: t.masked_fill_(t > 0, 1),
              lambda t: t.copy_(t.clone()), lambda t: t.fill_(3), lambda t: t.zero_(),
              lambda t: t.fill_(t.sum()), lambda t: (t.__setitem__(-1, t.sum()), t)[1],
              lambda t: (t.__setitem__(-1, 4.0), t)[1]]:
        x = ignis.zeros(3).expand(2, 3)
        xt = torch.zeros(3).expand(2, 3)
        compare_call(lambda: f(x), lambda: f(xt))


@requires_torch
def test_inplace_with_overlapping_input():
    """An input sharing part of the output's memory is refused, as in torch;
    the very same memory (x.add_(x)) is fine."""
    calls = [lambda x: x.add_(x.t()), lambda x: x.copy_(x.t()), lambda x: x.add_(x),
             lambda x: x.narrow(0, 1, 2).add_(x.narrow(0, 0, 2)),
             lambda x: x.narrow(0, 1, 2).copy_(x.narrow(0, 0, 2)),
             lambda x: x.view(-1).narrow(0, 1, 8).mul_(x.view(-1).narrow(0, 0, 8)),
             lambda x: x.clamp_(x.t()), lambda x: x.lerp_(x.t(), 0.5),
             lambda x: x.narrow(1, 0, 2).add_(x.narrow(1, 1, 2)),  # not dense: allowed
             lambda x: x.masked_fill_(x.t() > 3, 0), lambda x: x.neg_()]
    for i, f in enumerate(calls):
        x = ignis.arange(9.0).view(3, 3)
        xt = torch.arange(9.0).view(3, 3)
        compare_call(lambda: f(x), lambda: f(xt), msg=f"call {i}")
        assert_same(x, xt, msg=f"call {i}")


@requires_torch
def test_inplace_views_share_writes():
    base, baset = make_pair((4, 5), "float32")
    v, vt = base.t(), baset.t()
    v.mul_(2)
    vt.mul_(2)
    assert_same(base, baset)
    assert base._version == v._version


# --------------------------------------------------------------------------------
# Large tensors use the parallel path
# --------------------------------------------------------------------------------
@requires_torch
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_large_parallel(layout):
    x, xt = make_pair((300, 257), "float32", layout)
    y, yt = make_pair((257,), "float32", seed=2)
    old = ignis.get_num_threads()
    try:
        ignis.set_num_threads(2)
        compare_call(lambda: ignis.exp(x) * y + 1, lambda: torch.exp(xt) * yt + 1,
                     check_strides=True)
        compare_call(lambda: ignis.where(x > 0, x, y), lambda: torch.where(xt > 0, xt, yt))
    finally:
        ignis.set_num_threads(old)


# --------------------------------------------------------------------------------
# Meta device: shapes, dtypes and strides without data
# --------------------------------------------------------------------------------
def _make_meta(shape, dtype, layout):
    base, view = _layout_base_and_view(tuple(shape), layout)
    return view(ignis.empty(base, dtype=ig_dtype(dtype), device="meta"))


META_CALLS = [
    ("exp", lambda a, b: ignis.exp(a)), ("neg", lambda a, b: -a),
    ("isnan", lambda a, b: ignis.isnan(a)), ("add", lambda a, b: a + b),
    ("add_scalar", lambda a, b: a + 2.5), ("div", lambda a, b: a / b),
    ("eq", lambda a, b: a == b), ("where", lambda a, b: ignis.where(a > b, a, b)),
    ("clamp", lambda a, b: ignis.clamp(a, b)), ("lerp", lambda a, b: ignis.lerp(a, b, 0.5)),
    ("addcmul", lambda a, b: ignis.addcmul(a, a, b)),
    ("masked_fill", lambda a, b: a.masked_fill(b > 0, 1.0)),
    ("clone", lambda a, b: a.clone()), ("to", lambda a, b: a.to(ignis.float16)),
    ("contiguous", lambda a, b: a.contiguous()),
    ("zeros_like", lambda a, b: ignis.zeros_like(a)),
    ("empty_like", lambda a, b: ignis.empty_like(a, dtype=ignis.int32)),
    ("view_t", lambda a, b: a.t()), ("reshape", lambda a, b: a.reshape(-1)),
    ("add_", lambda a, b: a.clone().add_(b)),
]


@pytest.mark.parametrize("name", [c[0] for c in META_CALLS])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
def test_meta_matches_cpu(name, layout):
    fn = dict(META_CALLS)[name]
    a, _ = make_pair((3, 4), "float32", layout, seed=1)
    b, _ = make_pair((4,), "float32", seed=2)
    cpu = fn(a, b)
    meta = fn(_make_meta((3, 4), "float32", layout), _make_meta((4,), "float32", "contiguous"))
    assert meta.device.type == "meta"
    assert tuple(meta.shape) == tuple(cpu.shape)
    assert meta.dtype is cpu.dtype
    assert meta.stride() == cpu.stride()


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float16", "float32"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "expanded"])
def test_meta_matches_cpu_every_op(layout, dtype):
    """Every unary and binary op (where the CPU call succeeds): the meta
    result has the CPU result's shape, dtype and strides."""
    a, _ = make_pair((3, 4), dtype, layout, kind="nonzero")
    b, _ = make_pair((4,), dtype, seed=2, kind="nonzero")
    ma, mb = _make_meta((3, 4), dtype, layout), _make_meta((4,), dtype, "contiguous")
    calls = [(n, lambda x, y, n=n: lib_fn(ignis, n)(x)) for n in UNARY]
    calls += [(n, lambda x, y, n=n: lib_fn(ignis, n)(x, y)) for n in BINARY]
    calls += [(n + "_s", lambda x, y, n=n: lib_fn(ignis, n)(x, 2)) for n in BINARY]
    for name, fn in calls:
        cpu, e = run(fn, a, b)
        if e is not None:
            continue
        meta = fn(ma, mb)
        assert meta.device.type == "meta", name
        assert (tuple(meta.shape), meta.dtype, meta.stride()) == \
            (tuple(cpu.shape), cpu.dtype, cpu.stride()), name


def test_meta_creation_and_errors():
    m = ignis.empty(2, 3, device="meta")
    assert m.device.type == "meta" and tuple(m.shape) == (2, 3)
    assert ignis.zeros(4, dtype=ignis.int8, device="meta").dtype is ignis.int8
    assert tuple(ignis.arange(5, device="meta").shape) == (5,)
    with pytest.raises(RuntimeError):
        m + ignis.empty(4, device="meta")
    with pytest.raises(RuntimeError):
        m.to("cpu")
    with pytest.raises(RuntimeError):
        m.item()


# --------------------------------------------------------------------------------
# Property-based: random shapes that broadcast
# --------------------------------------------------------------------------------
@st.composite
def broadcastable_shapes(draw):
    nd = draw(st.integers(0, 4))
    shape = [draw(st.integers(0, 3)) for _ in range(nd)]
    other = [s if draw(st.booleans()) else 1 for s in shape]
    cut = draw(st.integers(0, nd))
    return tuple(shape), tuple(other[cut:])


@requires_torch
@settings(max_examples=40, deadline=None)
@given(shapes=broadcastable_shapes(), name=st.sampled_from(["add", "mul", "maximum", "lt", "atan2"]),
       da=st.sampled_from(DTYPES), db=st.sampled_from(DTYPES), swap=st.booleans())
def test_broadcast_property(shapes, name, da, db, swap):
    sa, sb = shapes if not swap else shapes[::-1]
    a, at = make_pair(sa, da, seed=1)
    b, bt = make_pair(sb, db, seed=2)
    compare_call(lambda: getattr(ignis, name)(a, b), lambda: getattr(torch, name)(at, bt),
                 check_strides=True, msg=f"{name} {da}{sa} {db}{sb}")


@requires_torch
def test_broadcast_errors():
    a, at = make_pair((2, 3), "float32")
    b, bt = make_pair((4,), "float32")
    compare_call(lambda: a + b, lambda: at + bt)
    compare_call(lambda: ignis.where(a > 0, a, b), lambda: torch.where(at > 0, at, bt))
