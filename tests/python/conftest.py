"""Shared helpers for the ignis test suite.

Every op test builds the same inputs in ignis and in torch (from one NumPy
array), runs the op in both, and checks that ignis gives torch's dtype,
shape and values (dtype-aware tolerances), or raises torch's exception type
when torch raises. NumPy supplies float64 reference values where the op has
a clean NumPy formula. torch is optional: without it only the NumPy checks run.
"""
import math

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

try:
    import torch
    HAVE_TORCH = True
except ImportError:  # pragma: no cover - the torch comparison is skipped
    torch = None
    HAVE_TORCH = False


@pytest.fixture
def programs(monkeypatch):
    """Compiles through backend="inductor" and records each graph's program
    (the compiler's passes and schedules, read by the tests that assert
    what a graph stores)."""
    from ignis import _inductor
    texts = []
    real = _inductor.compile_fx

    def recording(gm, example_inputs):
        compiled = real(gm, example_inputs)
        texts.append(compiled.program)
        return compiled
    monkeypatch.setattr(_inductor, "compile_fx", recording)
    ignis.compiler.reset()
    yield texts
    ignis.compiler.reset()


def kernel_args(source, kernel=0):
    """{argN: the graph's buffer} for generated kernel_<kernel>, from the
    comment under its name (Note [Kernels of one text]: "// arg0 = buf3,
    arg1 = arg1_1")."""
    import re
    line = re.search(rf"^// kernel_{kernel}: .*\n// (.*)$", source, re.M).group(1)
    return dict(pair.split(" = ") for pair in line.split(", "))


def kernel_arg(source, buffer, kernel=0):
    """The name generated kernel_<kernel>'s code gives the graph's `buffer`."""
    args = kernel_args(source, kernel)
    for arg, name in args.items():
        if name == buffer:
            return arg
    raise AssertionError(f"kernel_{kernel} takes no {buffer}: {args}")


def pytest_configure(config):
    # torch warns about deprecated-but-working inputs (uint8 `where` conditions,
    # ...), NumPy references about nan results (0 ** -0.5): both are expected.
    config.addinivalue_line("filterwarnings", "ignore::UserWarning")
    config.addinivalue_line("filterwarnings", "ignore::RuntimeWarning")
    # ... but generated code that its compiler refuses is a compiler bug,
    # whatever else the test checks: the graph then runs eagerly, right but
    # slow, and only this warning says so (a bfloat16 softmax backward ran
    # eagerly on the GPU for days). A test that provokes it on purpose
    # catches it with pytest.warns.
    for what in ("NVRTC could not compile", "compiling generated C\\+\\+"):
        config.addinivalue_line(
            "filterwarnings", f"error:aot_autograd. the captured graph.*{what}:RuntimeWarning")


DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]

# (rtol, atol) for comparing results of each dtype. Both libraries compute
# 16-bit floats in float32 and round once, so results agree to about an ulp.
TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1e-5, 1e-6),
       "float64": (1e-10, 1e-12)}
# Against a float64 NumPy reference, the input itself was already rounded.
NP_TOL = {"float16": (4e-3, 2e-3), "bfloat16": (3.2e-2, 2e-2), "float32": (2e-5, 1e-5),
          "float64": (1e-10, 1e-12)}

ALLOWED_ERRORS = (TypeError, ValueError, IndexError, RuntimeError, NotImplementedError)


def dtype_name(d):
    """'float32' for ignis.float32, torch.float32 or the string itself."""
    return d if isinstance(d, str) else str(d).split(".")[-1]


def ig_dtype(name):
    return getattr(ignis, name)


def th_dtype(name):
    return getattr(torch, name)


# --------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------
def make_array(shape, dtype, *, seed=0, kind="any"):
    """Random NumPy data for a tensor of `dtype` (a name).

    kind: "any" (floats in [-4, 4], ints spread over a small signed range),
    "positive" (> 0), "unit" (floats in (-1, 1)), "nonzero" (no zeros),
    "small" (ints in [0, 4], floats in [-2, 2]). bfloat16 data is returned as
    float32 values; the tensors are converted by the libraries.
    """
    return np.asarray(_random_values(tuple(shape), dtype, seed, kind))


def _random_values(shape, dtype, seed, kind):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in FLOAT_DTYPES:
        lo, hi = {"any": (-4, 4), "positive": (0.1, 4), "unit": (-0.95, 0.95),
                  "nonzero": (0.25, 4), "small": (-2, 2)}[kind]
        a = rng.uniform(lo, hi, shape)
        if kind == "nonzero":
            a = a * rng.choice([-1, 1], shape)
        np_dt = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
        return a.astype(np_dt)
    lo, hi = {"any": (-20, 20), "positive": (1, 20), "unit": (-1, 1), "nonzero": (1, 20),
              "small": (0, 4)}[kind]
    if dtype == "uint8":
        lo = max(lo, 0)
    a = rng.integers(lo, hi + 1, shape)
    if kind == "nonzero" and dtype != "uint8":
        a = a * rng.choice([-1, 1], shape)
    return a.astype(np.dtype(dtype))


def ig_from_array(a, dtype):
    t = ignis.from_numpy(np.array(a, order="C"))
    return t.to(ig_dtype(dtype)) if dtype == "bfloat16" else t.clone()


def th_from_array(a, dtype):
    t = torch.from_numpy(np.array(a, order="C"))
    return t.to(th_dtype(dtype)) if dtype == "bfloat16" else t.clone()


LAYOUTS = ["contiguous", "transposed", "strided", "expanded"]


def _layout_base_and_view(shape, layout):
    """(base shape, view function(lib_tensor) -> tensor of `shape`)."""
    nd = len(shape)
    if layout == "contiguous" or nd == 0:
        return shape, lambda t: t
    if layout == "transposed":
        rev = tuple(reversed(shape))
        return rev, lambda t: t.permute(*reversed(range(nd)))
    if layout == "strided":
        base = tuple(shape[:-1]) + (2 * shape[-1] + 1,)
        strides, s = [], 1
        for d in reversed(base):
            strides.insert(0, s)
            s *= max(d, 1)
        strides[-1] *= 2
        return base, lambda t: t.as_strided(shape, strides, 1)
    if layout == "expanded":
        base = (1,) + tuple(shape[1:])
        return base, lambda t: t.expand(*shape)
    raise ValueError(layout)


def make_pair(shape, dtype, layout="contiguous", *, seed=0, kind="any"):
    """The same tensor in ignis and torch (torch is None without torch).

    layout: "contiguous", "transposed" (a permuted view), "strided" (every
    other element, offset 1), "expanded" (stride-0 leading dim).
    """
    base, view = _layout_base_and_view(tuple(shape), layout)
    a = make_array(base, dtype, seed=seed, kind=kind)
    ig = view(ig_from_array(a, dtype))
    th = view(th_from_array(a, dtype)) if HAVE_TORCH else None
    return ig, th


def to_np(t):
    """Values of an ignis or torch tensor as a NumPy array (bf16 as float32)."""
    if HAVE_TORCH and isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype is torch.bfloat16 else t).numpy()
    return (t.float() if t.dtype is ignis.bfloat16 else t).numpy()


def np64(t):
    a = to_np(t)
    return a if a.dtype == np.bool_ else a.astype(np.float64)


# --------------------------------------------------------------------------------
# Comparisons
# --------------------------------------------------------------------------------
def assert_values(actual, expected, dtype, *, tol=TOL, rtol=None, atol=None, msg=""):
    """Element-wise comparison of two arrays holding results of `dtype`."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{msg} shape {actual.shape} != {expected.shape}"
    name = dtype_name(dtype)
    if name in FLOAT_DTYPES:
        r, a = tol[name]
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                                   rtol=r if rtol is None else rtol,
                                   atol=a if atol is None else atol, equal_nan=True,
                                   err_msg=msg)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=msg)


def assert_same(ig, th, *, rtol=None, atol=None, check_strides=False, msg=""):
    """ignis result `ig` equals torch result `th`: dtype, shape, values."""
    assert isinstance(ig, ignis.Tensor), f"{msg} expected an ignis.Tensor, got {type(ig)}"
    assert dtype_name(ig.dtype) == dtype_name(th.dtype), \
        f"{msg} dtype {ig.dtype} != torch's {th.dtype}"
    assert tuple(ig.shape) == tuple(th.shape), f"{msg} shape {tuple(ig.shape)} != {tuple(th.shape)}"
    if check_strides and ig.numel() > 1:
        assert ig.stride() == th.stride(), f"{msg} strides {ig.stride()} != torch's {th.stride()}"
    assert_values(to_np(ig), to_np(th), ig.dtype, rtol=rtol, atol=atol, msg=msg)


def assert_np(ig, ref, *, rtol=None, atol=None, msg=""):
    """ignis result equals a float64 NumPy reference (rounded to ig's dtype)."""
    name = dtype_name(ig.dtype)
    ref = np.asarray(ref)
    if name in FLOAT_DTYPES:
        assert_values(np64(ig), ref, name, tol=NP_TOL, rtol=rtol, atol=atol, msg=msg)
    else:
        assert_values(to_np(ig), ref.astype(to_np(ig).dtype), name, msg=msg)


def run(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - the caller compares exception types
        return None, e


def assert_same_error(ig_exc, th_exc, msg=""):
    """Both raised, and ignis raised torch's exception type."""
    assert ig_exc is not None, f"{msg} torch raised {type(th_exc).__name__}: {th_exc} but ignis did not"
    assert type(ig_exc) is type(th_exc), (
        f"{msg} ignis raised {type(ig_exc).__name__}: {ig_exc}; "
        f"torch raised {type(th_exc).__name__}: {th_exc}")


def compare_call(ig_fn, th_fn, *, rtol=None, atol=None, check_strides=False, msg=""):
    """Calls both; same exception type when torch raises, same result otherwise.

    Returns the ignis result (None when both raised). Without torch, checks
    only that ignis raises one of the allowed exception types.
    """
    ig, ig_exc = run(ig_fn)
    if not HAVE_TORCH:
        if ig_exc is not None:
            assert isinstance(ig_exc, ALLOWED_ERRORS), f"{msg} {ig_exc!r}"
        return ig
    th, th_exc = run(th_fn)
    if th_exc is not None:
        assert_same_error(ig_exc, th_exc, msg)
        return None
    assert ig_exc is None, f"{msg} ignis raised {type(ig_exc).__name__}: {ig_exc}; torch did not"
    if isinstance(th, (tuple, list)):
        assert len(ig) == len(th), f"{msg} {len(ig)} results != {len(th)}"
        for a, b in zip(ig, th):
            assert_same(a, b, rtol=rtol, atol=atol, check_strides=check_strides, msg=msg)
    else:
        assert_same(ig, th, rtol=rtol, atol=atol, check_strides=check_strides, msg=msg)
    return ig


def lib_fn(lib, name):
    """ignis.<name> / torch.<name>, falling back to nn.functional."""
    f = getattr(lib, name, None)
    if f is None:
        f = getattr(lib.nn.functional, name)
    return f


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


requires_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")

__all__ = [
    "DTYPES", "FLOAT_DTYPES", "INT_DTYPES", "LAYOUTS", "ALLOWED_ERRORS", "HAVE_TORCH", "torch",
    "dtype_name", "ig_dtype", "th_dtype", "make_array", "make_pair", "ig_from_array",
    "th_from_array", "to_np", "np64", "assert_values", "assert_same", "assert_np", "run",
    "assert_same_error", "compare_call", "lib_fn", "requires_torch", "math",
]
