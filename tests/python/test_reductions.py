"""Reduction ops (sum, mean, prod, amax/amin, max/min, argmax/argmin,
var/std, logsumexp, all/any, norm, count_nonzero, nansum, cumsum/cumprod)
against NumPy and PyTorch: dtypes, dims (negative, lists, empty lists),
keepdim, non-contiguous and broadcast inputs, 0-dim and zero-size tensors,
NaN, the meta device, errors, and the multi-threaded paths."""
import math

import numpy as np
import pytest

import ignis

try:
    import torch
except ImportError:  # the NumPy comparisons still run
    torch = None

# torch warns when var's correction leaves no degrees of freedom; ignis
# returns the same inf/nan silently.
pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom")

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NUMERIC = ALL[1:]
LAYOUTS = ["contig", "transposed", "strided", "expanded"]

# Result tolerances by result dtype (16-bit results round once more than
# the reference may).
TOL = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-5, 1e-5),
       "float64": (1e-10, 1e-12)}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def dname(t):
    return str(t.dtype).split(".")[-1]


def gen(shape, dtype, seed=0, kind="normal"):
    """NumPy data for a dtype (bfloat16 data is float32, cast later)."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "uint8":
        return rng.integers(0, 6, shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-4, 5, shape).astype(dtype)
    if kind == "positive":  # products stay near 1
        a = rng.uniform(0.5, 1.5, shape)
    else:
        a = rng.standard_normal(shape)
    if dtype == "bfloat16":  # float32 holding values that bfloat16 represents
        return ignis.from_numpy(a.astype(np.float32)).to(ignis.bfloat16).float().numpy()
    return a.astype(dtype)


def wrap(a, dtype):
    """(ignis, torch-or-None) tensors holding `a` as `dtype`."""
    ti = ignis.from_numpy(np.ascontiguousarray(a))
    tt = torch.from_numpy(np.ascontiguousarray(a)) if torch is not None else None
    if dtype == "bfloat16":
        ti = ti.to(ignis.bfloat16)
        tt = tt.to(torch.bfloat16) if tt is not None else None
    return ti, tt


def make(shape, dtype, layout="contig", seed=0, kind="normal"):
    """Tensors of logical `shape` laid out as `layout`, plus the NumPy values."""
    shape = tuple(shape)
    if layout == "contig":
        a = gen(shape, dtype, seed, kind)
        ti, tt = wrap(a, dtype)
        return ti, tt, a
    if layout == "transposed":  # dims reversed in memory
        a = gen(shape[::-1], dtype, seed, kind)
        ti, tt = wrap(a, dtype)
        perm = list(reversed(range(len(shape))))
        return ti.permute(perm), (tt.permute(perm) if tt is not None else None), a.transpose(perm)
    if layout == "strided":  # every other element of the last dim
        big = shape[:-1] + (shape[-1] * 2,)
        a = gen(big, dtype, seed, kind)
        ti, tt = wrap(a, dtype)
        st = [int(s) for s in np.cumprod((big[1:] + (1,))[::-1])[::-1]]
        st[-1] = 2
        args = (shape, tuple(st), 1)
        return (ti.as_strided(*args), tt.as_strided(*args) if tt is not None else None,
                a[..., 1::2])
    assert layout == "expanded"  # dim 0 broadcast from size 1
    a = gen((1,) + shape[1:], dtype, seed, kind)
    ti, tt = wrap(a, dtype)
    return (ti.expand(*shape), tt.expand(*shape) if tt is not None else None,
            np.broadcast_to(a, shape))


def as_np(t):
    if dname(t) == "bfloat16":
        t = t.float()
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t.numpy())


def close(actual, expected, dtype=None, exact=False):
    """actual: ignis tensor; expected: torch tensor or NumPy array."""
    dtype = dtype or dname(actual)
    x = as_np(actual)
    y = np.asarray(expected) if isinstance(expected, (np.ndarray, np.generic)) \
        else as_np(expected)
    assert x.shape == tuple(y.shape), (x.shape, y.shape)
    if dtype in TOL and not exact:
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(x.astype(np.float64), np.asarray(y, np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(x, y)


def same(ri, rt, exact=False):
    """ignis result vs torch result: tensors, tuples, named tuples."""
    if isinstance(rt, tuple):
        assert isinstance(ri, tuple) and len(ri) == len(rt)
        for a, b in zip(ri, rt):
            same(a, b, exact)
        return
    assert dname(ri) == dname(rt), (dname(ri), dname(rt))
    close(ri, rt, exact=exact)


def both(fn, ti, tt, exact=False):
    ri = fn(ignis, ti)
    if tt is not None:
        same(ri, fn(torch, tt), exact)
    return ri


def raises_like(fn, ti, tt):
    """fn raises the exception type torch raises."""
    etype = Exception
    if tt is not None:
        with pytest.raises(Exception) as et:
            fn(torch, tt)
        etype = type(et.value)
    with pytest.raises(etype):
        fn(ignis, ti)


def np_dims(dim, nd):
    if dim is None or dim == [] or dim == ():
        return tuple(range(nd))
    return tuple(d % nd for d in ((dim,) if isinstance(dim, int) else dim))


SHAPE = (3, 4, 5)
DIMS = [None, 0, -1, 1, (0, 2), [-1, 0], [0, 1, 2], []]


# ---------------------------------------------------------------------------
# sum, nansum, mean, prod
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_sum(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    acc = np.float64 if dtype in FLOATS else np.int64
    for dim in DIMS:
        for keepdim in (False, True):
            if dim is None:
                r = both(lambda m, x: m.sum(x), ti, tt)
            else:
                r = both(lambda m, x: m.sum(x, dim, keepdim), ti, tt)
                ref = np.asarray(a, acc).sum(axis=np_dims(dim, 3), keepdims=keepdim)
                close(r, ref.astype(np.float64) if dtype in FLOATS else ref, dname(r))
            if dim is None:
                close(r, np.asarray(np.asarray(a, acc).sum()), dname(r))
    assert dname(ti.sum()) == ("int64" if dtype not in FLOATS else dtype)
    both(lambda m, x: x.sum(dim=1, dtype=m.float64), ti, tt)
    both(lambda m, x: m.sum(x, (0, 1), dtype=m.int32), ti, tt)
    both(lambda m, x: x.sum(-1, keepdim=True, dtype=m.float32), ti, tt)
    both(lambda m, x: x.sum(dtype=m.bool), ti, tt)


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "float64"])
def test_nansum(dtype):
    ti, tt, a = make(SHAPE, dtype)
    if dtype in FLOATS:
        a = a.copy()
        a[0, 1, 2] = a[2, 3, 0] = np.nan
        ti, tt = wrap(a, dtype)
    for dim in (None, 0, (1, 2)):
        r = both(lambda m, x: m.nansum(x, dim), ti, tt)
        close(r, np.asarray(np.nansum(np.asarray(a, np.float64), axis=dim)), dname(r))
    both(lambda m, x: x.nansum(1, keepdim=True, dtype=m.float64), ti, tt)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mean(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for dim in DIMS:
        for keepdim in (False, True):
            if dim is None:
                r = both(lambda m, x: x.mean(), ti, tt)
            else:
                r = both(lambda m, x: m.mean(x, dim, keepdim), ti, tt)
            ref = np.asarray(a, np.float64).mean(axis=np_dims(dim, 3),
                                                 keepdims=keepdim and dim is not None)
            close(r, np.asarray(ref), dname(r))
    both(lambda m, x: x.mean(1, dtype=m.float64), ti, tt)


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
def test_mean_int(dtype):
    ti, tt, a = make(SHAPE, dtype)
    raises_like(lambda m, x: x.mean(), ti, tt)
    raises_like(lambda m, x: x.mean(0), ti, tt)
    raises_like(lambda m, x: x.mean(dtype=m.int64), ti, tt)
    r = both(lambda m, x: x.mean(dtype=m.float64), ti, tt)
    close(r, np.asarray(np.asarray(a, np.float64).mean()))
    both(lambda m, x: x.mean((0, 2), dtype=m.float32), ti, tt)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_prod(dtype, layout):
    ti, tt, a = make((3, 2, 4), dtype, layout, kind="positive")
    acc = np.float64 if dtype in FLOATS else np.int64
    r = both(lambda m, x: x.prod(), ti, tt)
    close(r, np.asarray(np.asarray(a, acc).prod()), dname(r))
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            r = both(lambda m, x: m.prod(x, dim, keepdim), ti, tt)
            close(r, np.asarray(a, acc).prod(axis=dim, keepdims=keepdim), dname(r))
    both(lambda m, x: x.prod(1, dtype=m.float64), ti, tt)
    both(lambda m, x: x.prod(dtype=m.int32), ti, tt)


def test_integer_sum_wraps_like_torch():
    a = np.full((3, 4), 2**62, dtype=np.int64)
    ti, tt = wrap(a, "int64")
    both(lambda m, x: x.sum(), ti, tt)
    both(lambda m, x: x.prod(1), ti, tt)
    b = np.full((70,), 100, dtype=np.int8)
    ti, tt = wrap(b, "int8")
    both(lambda m, x: x.sum(dtype=m.int8), ti, tt)


# ---------------------------------------------------------------------------
# amax, amin, max, min, argmax, argmin
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_amax_amin(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for dim in DIMS[1:]:
        for keepdim in (False, True):
            for name in ("amax", "amin"):
                r = both(lambda m, x: getattr(m, name)(x, dim, keepdim), ti, tt)
                ref = getattr(np, name)(a, axis=np_dims(dim, 3), keepdims=keepdim)
                close(r, ref.astype(np.float32) if dtype == "bfloat16" else ref, exact=True)
    r = both(lambda m, x: x.amax(), ti, tt)
    close(r, np.asarray(a.max()).astype(as_np(r).dtype), exact=True)
    both(lambda m, x: x.max(), ti, tt, exact=True)
    both(lambda m, x: m.min(x), ti, tt, exact=True)


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_max_min_dim(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for dim in (0, 1, 2, -1, -3):
        for keepdim in (False, True):
            ri = both(lambda m, x: m.max(x, dim, keepdim), ti, tt, exact=True)
            assert type(ri).__name__ == "max" or hasattr(ri, "indices")
            np.testing.assert_array_equal(
                ri.indices.numpy(), np.expand_dims(np.argmax(a, dim), dim) if keepdim
                else np.argmax(a, dim))
            both(lambda m, x: x.min(dim=dim, keepdim=keepdim), ti, tt, exact=True)
    values, indices = ti.max(1)
    assert dname(values) == dtype and dname(indices) == "int64"


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_argmax_argmin(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for name in ("argmax", "argmin"):
        f = getattr(np, name)
        r = both(lambda m, x: getattr(x, name)(), ti, tt, exact=True)
        assert int(r.item()) == int(f(a))
        both(lambda m, x: getattr(m, name)(x, None, True), ti, tt, exact=True)
        for dim in (0, 1, -1):
            for keepdim in (False, True):
                r = both(lambda m, x: getattr(m, name)(x, dim, keepdim), ti, tt, exact=True)
                ref = f(a, axis=dim)
                close(r, np.expand_dims(ref, dim) if keepdim else ref, exact=True)


def test_max_other_is_maximum():
    ti, tt, a = make((3, 4), "float32")
    ui, ut, b = make((4,), "float32", seed=1)
    r = both(lambda m, x: m.max(x, ui if m is ignis else ut), ti, tt, exact=True)
    close(r, np.maximum(a, b), exact=True)
    r = both(lambda m, x: x.min(ui if m is ignis else ut), ti, tt, exact=True)
    close(r, np.minimum(a, b), exact=True)


def nan_data():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 7
    a[0, 1, 2] = np.nan
    a[1, 2, 0] = np.nan
    a[1, 2, 3] = np.nan
    return a


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagation(dtype):
    a = nan_data()
    ti, tt = wrap(a.astype(np.float16) if dtype == "float16" else a.astype(
        np.float32 if dtype == "bfloat16" else dtype), dtype)
    for dim in (0, 1, 2, (0, 2), [1, 2]):
        for name in ("amax", "amin"):
            r = both(lambda m, x: getattr(m, name)(x, dim), ti, tt, exact=True)
            ref = getattr(np, name)(a, axis=np_dims(dim, 3))  # NumPy propagates NaN
            np.testing.assert_array_equal(np.isnan(as_np(r)), np.isnan(ref))
    for dim in (0, 1, 2):
        for name in ("max", "min"):
            v, i = both(lambda m, x: getattr(x, name)(dim), ti, tt, exact=True)
            for name2 in ("argmax", "argmin"):
                r = both(lambda m, x: getattr(x, name2)(dim), ti, tt, exact=True)
                # the index of a NaN wins wherever NaN is present
                np.testing.assert_array_equal(as_np(r), getattr(np, name2)(a, axis=dim))
    assert math.isnan(ti.max().item()) and math.isnan(ti.amin().item())
    assert ti.argmax().item() == 6 and ti.argmin().item() == 6
    for name in ("sum", "mean", "prod", "logsumexp", "norm", "var"):
        r = getattr(ti, name)(1)
        assert np.isnan(as_np(r)).any()


# ---------------------------------------------------------------------------
# var, std, var_mean, std_mean
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_var_std(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    a64 = np.asarray(a, np.float64)
    for dim in (None, 0, -1, (0, 2), [1, 2, 0]):
        for keepdim in (False, True):
            for name in ("var", "std"):
                f = getattr(np, name)
                kd, ax = keepdim, np_dims(dim, 3)
                r = both(lambda m, x: getattr(m, name)(x, dim, keepdim=keepdim), ti, tt)
                close(r, np.asarray(f(a64, axis=ax, ddof=1, keepdims=kd)), dname(r))
                r = both(lambda m, x: getattr(x, name)(dim, False, keepdim), ti, tt)
                close(r, np.asarray(f(a64, axis=ax, ddof=0, keepdims=kd)), dname(r))
                r = both(lambda m, x: getattr(x, name)(dim=dim, correction=2, keepdim=keepdim),
                         ti, tt)
                close(r, np.asarray(f(a64, axis=ax, ddof=2, keepdims=kd)), dname(r))
    both(lambda m, x: x.var(), ti, tt)
    both(lambda m, x: x.std(unbiased=False), ti, tt)
    both(lambda m, x: x.var(correction=0.5), ti, tt)
    for name in ("var_mean", "std_mean"):
        both(lambda m, x: getattr(m, name)(x), ti, tt)
        both(lambda m, x: getattr(m, name)(x, 1, keepdim=True), ti, tt)
        both(lambda m, x: getattr(m, name)(x, (0, 2), correction=0), ti, tt)
        both(lambda m, x: getattr(m, name)(x, [0], False), ti, tt)


def test_var_degenerate():
    ti, tt, _ = make((3, 1), "float32")
    both(lambda m, x: x.var(1), ti, tt)  # n - 1 == 0: nan
    both(lambda m, x: x.var(0, correction=5), ti, tt)  # negative dof: inf / nan
    both(lambda m, x: x.std(0, correction=3), ti, tt)


@pytest.mark.parametrize("dtype", ["bool", "int32", "int64"])
def test_var_int_raises(dtype):
    ti, tt, _ = make(SHAPE, dtype)
    for fn in (lambda m, x: x.var(), lambda m, x: x.std(1), lambda m, x: m.var_mean(x)):
        raises_like(fn, ti, tt)


# ---------------------------------------------------------------------------
# logsumexp
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contig", "transposed", "expanded"])
def test_logsumexp(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for dim in (0, -1, (0, 2), [0, 1, 2]):
        for keepdim in (False, True):
            r = both(lambda m, x: m.logsumexp(x, dim, keepdim), ti, tt)
            a64 = np.asarray(a, np.float64)
            ax = np_dims(dim, 3)
            mx = a64.max(axis=ax, keepdims=True)
            ref = np.log(np.exp(a64 - mx).sum(axis=ax, keepdims=True)) + mx
            close(r, ref if keepdim else ref.squeeze(axis=np_dims(dim, 3)), dname(r))


def test_logsumexp_stable_and_special():
    a = np.array([[1000.0, 1000.0, -1000.0], [-np.inf, -np.inf, -np.inf],
                  [np.inf, 1.0, 2.0], [np.nan, 1.0, 2.0]], dtype=np.float32)
    ti, tt = wrap(a, "float32")
    r = both(lambda m, x: x.logsumexp(1), ti, tt)
    assert np.isclose(as_np(r)[0], 1000 + np.log(2))
    both(lambda m, x: x.logsumexp(0), ti, tt)
    big = np.random.default_rng(3).standard_normal((64, 700)).astype(np.float32) * 50
    ti, tt = wrap(big, "float32")  # multi-threaded row path and column path
    both(lambda m, x: x.logsumexp(1), ti, tt)
    both(lambda m, x: x.logsumexp(0), ti, tt)
    both(lambda m, x: x.logsumexp((0, 1)), ti, tt)


# ---------------------------------------------------------------------------
# all, any, count_nonzero
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_all_any(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    for name in ("all", "any"):
        f = getattr(np, name)
        r = both(lambda m, x: getattr(m, name)(x), ti, tt, exact=True)
        assert bool(r.item()) == bool(f(a))
        for dim in (0, -1, (0, 2), [1], [], None):
            for keepdim in (False, True):
                r = both(lambda m, x: getattr(x, name)(dim=dim, keepdim=keepdim), ti, tt,
                         exact=True)
                if dim != []:
                    ref = f(a, axis=np_dims(dim, 3), keepdims=keepdim)
                    np.testing.assert_array_equal(as_np(r).astype(bool), ref)
    ones = ignis.ones(2, 3, dtype=getattr(ignis, dtype))
    assert ones.all().item() and not (ones * 0).any().item()


@pytest.mark.parametrize("dtype", ALL)
def test_count_nonzero(dtype):
    ti, tt, a = make(SHAPE, dtype, "transposed")
    r = both(lambda m, x: m.count_nonzero(x), ti, tt, exact=True)
    assert r.item() == np.count_nonzero(a)
    for dim in (0, -1, (0, 2), [2, 1], []):
        r = both(lambda m, x: x.count_nonzero(dim), ti, tt, exact=True)
        ref = np.count_nonzero(a, axis=np_dims(dim, 3))
        np.testing.assert_array_equal(as_np(r), ref)
    both(lambda m, x: x.count_nonzero(dim=None), ti, tt, exact=True)


# ---------------------------------------------------------------------------
# norm
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contig", "transposed", "strided"])
def test_norm(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout)
    a64 = np.abs(np.asarray(a, np.float64))
    for p in (2, 1, 0, math.inf, -math.inf, 3, 0.5, -1.5, 2.0):
        for dim in (None, 1, (0, 2), -1):
            for keepdim in (False, True):
                r = both(lambda m, x: x.norm(p, dim, keepdim), ti, tt)
                ax, kd = np_dims(dim, 3), keepdim
                if p == math.inf:
                    ref = a64.max(axis=ax, keepdims=kd)
                elif p == -math.inf:
                    ref = a64.min(axis=ax, keepdims=kd)
                elif p == 0:
                    ref = (a64 != 0).sum(axis=ax, keepdims=kd)
                else:
                    ref = (a64 ** p).sum(axis=ax, keepdims=kd) ** (1 / p)
                close(r, np.asarray(ref, np.float64), dname(r))
    both(lambda m, x: x.norm(), ti, tt)
    both(lambda m, x: m.norm(x, dim=1), ti, tt)
    both(lambda m, x: x.norm(p="fro"), ti, tt)
    both(lambda m, x: x.norm("fro", (0, 1)), ti, tt)
    both(lambda m, x: x.norm(dtype=m.float64), ti, tt)
    both(lambda m, x: x.norm(1, 2, True, dtype=m.float64), ti, tt)


def test_norm_errors():
    ti, tt, _ = make((2, 3), "int64")
    raises_like(lambda m, x: x.norm(), ti, tt)
    ti, tt, _ = make((2, 3), "float32")
    raises_like(lambda m, x: x.norm(dtype=m.float16), ti, tt)
    raises_like(lambda m, x: x.norm(dtype=m.int64), ti, tt)
    raises_like(lambda m, x: x.norm("abc"), ti, tt)
    ei, et, _ = make((2, 0), "float32")
    raises_like(lambda m, x: x.norm(math.inf), ei, et)
    raises_like(lambda m, x: x.norm(-math.inf, 1), ei, et)
    both(lambda m, x: x.norm(math.inf, 0), ei, et)
    both(lambda m, x: x.norm(2, 1), ei, et)


# ---------------------------------------------------------------------------
# cumsum, cumprod
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cumsum_cumprod(dtype, layout):
    ti, tt, a = make(SHAPE, dtype, layout, kind="positive")
    acc = np.float64 if dtype in FLOATS else np.int64
    for dim in (0, 1, 2, -1):
        r = both(lambda m, x: m.cumsum(x, dim), ti, tt)
        close(r, np.cumsum(np.asarray(a, acc), axis=dim), dname(r))
        r = both(lambda m, x: x.cumprod(dim=dim), ti, tt)
        close(r, np.cumprod(np.asarray(a, acc), axis=dim), dname(r))
    assert ti.cumsum(0).is_contiguous()
    both(lambda m, x: x.cumsum(1, dtype=m.float64), ti, tt)
    both(lambda m, x: m.cumprod(x, -1, dtype=m.int32), ti, tt)


@pytest.mark.parametrize("dtype", ["int32", "float32", "float16"])
def test_cumsum_inplace(dtype):
    ti, tt, a = make((4, 5), dtype, kind="positive")
    ti, tt = ti.clone(), tt.clone()
    ri = ti.cumsum_(1)
    assert ri is ti
    tt.cumsum_(1)
    close(ti, tt)
    ui, ut, _ = make((4, 5), dtype, "transposed", kind="positive")
    ui, ut = ui.clone(), ut.clone()  # clones of a transposed view keep its layout
    ui.cumprod_(0)
    ut.cumprod_(0)
    close(ui, ut)
    other = ignis.float64 if dtype != "float64" else ignis.float32
    with pytest.raises(RuntimeError):
        ti.cumsum_(0, dtype=other)


# ---------------------------------------------------------------------------
# zero-size, 0-dim, broadcast inputs
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 3), (2, 0), (0,)])
def test_empty(shape):
    ti, tt, _ = make(shape, "float32")
    ii, it, _ = make(shape, "int32")
    nd = len(shape)
    ok = [
        lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.sum(-1, keepdim=True),
        lambda m, x: x.prod(), lambda m, x: x.prod(0), lambda m, x: x.mean(),
        lambda m, x: x.mean(0), lambda m, x: x.norm(), lambda m, x: x.norm(1, 0),
        lambda m, x: x.logsumexp(0), lambda m, x: x.all(), lambda m, x: x.any(0),
        lambda m, x: x.count_nonzero(), lambda m, x: x.cumsum(0), lambda m, x: x.cumprod(-1),
        lambda m, x: x.nansum(0), lambda m, x: x.var(0),
    ]
    for fn in ok:
        both(fn, ti, tt)
    both(lambda m, x: x.sum(0), ii, it)
    both(lambda m, x: x.cumsum(0), ii, it)
    bad = [lambda m, x: x.amax(), lambda m, x: x.amin(0), lambda m, x: x.max(),
           lambda m, x: x.min(0), lambda m, x: x.argmax(), lambda m, x: x.argmin(0)]
    for fn in bad:
        if shape[0] == 0:
            raises_like(fn, ti, tt)
    if nd == 2 and shape[0] != 0:  # reducing the non-empty dim is fine
        both(lambda m, x: x.amax(0), ti, tt)
        both(lambda m, x: x.max(0), ti, tt)
        both(lambda m, x: x.argmin(0), ti, tt)
    if nd == 2 and shape[1] == 0:
        raises_like(lambda m, x: x.amax(1), ti, tt)
        raises_like(lambda m, x: x.argmax(1), ti, tt)


def test_empty_error_types():
    e = ignis.empty(0, 3)
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        e.amax()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.amax(0)
    with pytest.raises(IndexError, match="argmax"):
        e.argmax()
    with pytest.raises(IndexError, match="max"):
        e.max(0)
    assert math.isnan(e.mean().item()) and e.sum().item() == 0 and e.prod().item() == 1


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float16"])
def test_zero_dim(dtype):
    ti, tt = wrap(np.asarray(gen((), dtype)), dtype)
    fns = [lambda m, x: x.sum(), lambda m, x: x.sum(0), lambda m, x: x.sum(-1, keepdim=True),
           lambda m, x: x.prod(0), lambda m, x: x.amax(0), lambda m, x: x.amin(),
           lambda m, x: x.max(), lambda m, x: x.max(0), lambda m, x: x.min(-1, True),
           lambda m, x: x.all(0), lambda m, x: x.any(), lambda m, x: x.count_nonzero(0),
           lambda m, x: x.cumsum(0), lambda m, x: x.cumprod(-1), lambda m, x: x.logsumexp(0)]
    if dtype != "bool":
        fns += [lambda m, x: x.argmax(), lambda m, x: x.argmax(0, True),
                lambda m, x: x.argmin(-1)]
    if dtype in FLOATS:
        fns += [lambda m, x: x.mean(), lambda m, x: x.mean(0), lambda m, x: x.var(0),
                lambda m, x: x.std(correction=0), lambda m, x: x.norm(),
                lambda m, x: x.norm(1, 0)]
    for fn in fns:
        both(fn, ti, tt)
    for fn in (lambda m, x: x.sum(1), lambda m, x: x.amax(-2), lambda m, x: x.cumsum(1),
               lambda m, x: x.max(1)):
        raises_like(fn, ti, tt)


def test_broadcast_input():
    ti = ignis.arange(5.0).reshape(1, 5).expand(4, 5)
    tt = torch.arange(5.0).reshape(1, 5).expand(4, 5) if torch is not None else None
    for fn in (lambda m, x: x.sum(0), lambda m, x: x.sum(1), lambda m, x: x.argmax(0),
               lambda m, x: x.max(1), lambda m, x: x.cumsum(0), lambda m, x: x.var(0),
               lambda m, x: x.logsumexp(0), lambda m, x: x.norm(1, 0)):
        both(fn, ti, tt)


# ---------------------------------------------------------------------------
# dims and argument errors
# ---------------------------------------------------------------------------
def test_dim_errors():
    ti, tt, _ = make(SHAPE, "float32")
    ii, it, _ = make(SHAPE, "bool")
    cases = [
        (lambda m, x: x.sum((0, 0)), ti, tt), (lambda m, x: x.sum([1, -2]), ti, tt),
        (lambda m, x: x.amax((2, -1)), ti, tt), (lambda m, x: x.mean([0, 0]), ti, tt),
        (lambda m, x: x.var((1, 1)), ti, tt), (lambda m, x: x.sum(3), ti, tt),
        (lambda m, x: x.sum(-4), ti, tt), (lambda m, x: x.amin((0, 5)), ti, tt),
        (lambda m, x: x.max(3), ti, tt), (lambda m, x: x.argmax(-4), ti, tt),
        (lambda m, x: x.cumsum(3), ti, tt), (lambda m, x: x.logsumexp(7), ti, tt),
        (lambda m, x: x.all(4), ti, tt), (lambda m, x: x.norm(2, 3), ti, tt),
        (lambda m, x: x.count_nonzero((0, 0)), ti, tt), (lambda m, x: x.argmax(), ii, it),
        (lambda m, x: x.argmin(0), ii, it), (lambda m, x: x.std((0, 3)), ti, tt),
    ]
    for fn, x, y in cases:
        raises_like(fn, x, y)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        ti.sum((0, 0))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ti.sum(3)


def test_overloads_and_kwargs():
    ti, tt, a = make((3, 4), "float32")
    both(lambda m, x: m.sum(x, dim=(0, 1), keepdim=True), ti, tt)
    both(lambda m, x: m.sum(input=x, dim=1), ti, tt)
    both(lambda m, x: x.sum(dim=None), ti, tt)
    both(lambda m, x: x.max(dim=1, keepdim=True), ti, tt)
    both(lambda m, x: x.std(1, True, True), ti, tt)
    both(lambda m, x: m.var(x, [0, 1], False), ti, tt)
    both(lambda m, x: x.all(1), ti, tt)
    both(lambda m, x: x.any((0, 1)), ti, tt)
    both(lambda m, x: x.norm(None, 1), ti, tt)
    v = ti.max(0)
    assert v.values.shape == (4,) and v.indices.shape == (4,) and v[0] is v.values
    with pytest.raises(TypeError):
        ti.prod((0, 1))


# ---------------------------------------------------------------------------
# meta device: shapes and dtypes only
# ---------------------------------------------------------------------------
META_CASES = [
    lambda m, x: x.sum(), lambda m, x: x.sum((0, 2), keepdim=True),
    lambda m, x: x.sum(1, dtype=m.float64), lambda m, x: x.nansum(-1),
    lambda m, x: x.mean(1, dtype=m.float32), lambda m, x: x.prod(0),
    lambda m, x: x.amax((0, 1)), lambda m, x: x.amin(), lambda m, x: x.max(),
    lambda m, x: x.max(1, True), lambda m, x: x.min(-1), lambda m, x: x.argmax(),
    lambda m, x: x.argmin(2, keepdim=True), lambda m, x: x.all(), lambda m, x: x.any(1),
    lambda m, x: x.count_nonzero(0), lambda m, x: x.cumsum(1), lambda m, x: x.cumprod(0),
    lambda m, x: x.logsumexp((1, 2), True),
]
META_FLOAT = [lambda m, x: x.var(1), lambda m, x: x.std(), lambda m, x: m.var_mean(x, 0),
              lambda m, x: m.std_mean(x, (0, 2), keepdim=True), lambda m, x: x.norm(1, 1),
              lambda m, x: x.norm(dtype=m.float64), lambda m, x: x.mean()]


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "uint8"])
def test_meta(dtype):
    xi = ignis.empty((3, 4, 5), dtype=getattr(ignis, dtype), device="meta")
    xt = torch.empty((3, 4, 5), dtype=getattr(torch, dtype), device="meta") \
        if torch is not None else None
    cases = META_CASES + (META_FLOAT if dtype.startswith("float") else [])
    for fn in cases:
        ri = fn(ignis, xi)
        outs = ri if isinstance(ri, tuple) else (ri,)
        for o in outs:
            assert o.device.type == "meta"
        if xt is None:
            continue
        rt = fn(torch, xt)
        touts = rt if isinstance(rt, tuple) else (rt,)
        for o, t in zip(outs, touts):
            assert tuple(o.shape) == tuple(t.shape) and dname(o) == dname(t)
    # argument errors surface on meta too
    e = ignis.empty((0, 3), device="meta")
    with pytest.raises(RuntimeError):
        e.amax()
    with pytest.raises(RuntimeError):
        xi.sum((1, 1))
    if not dtype.startswith("float"):
        with pytest.raises(RuntimeError):
            xi.mean()


# ---------------------------------------------------------------------------
# large inputs: accuracy and the multi-threaded paths
# ---------------------------------------------------------------------------
def test_float32_sum_accuracy():
    a = np.random.default_rng(5).random(1_000_000).astype(np.float32)
    ref = a.astype(np.float64).sum()
    ti, tt = wrap(a, "float32")
    assert abs(ti.sum().item() - ref) / ref < 1e-5
    assert abs(ti.reshape(1000, 1000).sum(0).sum().item() - ref) / ref < 1e-5
    col = ti.reshape(1_000_000, 1).sum(0).item()  # one long column (vector mode)
    assert abs(col - ref) / ref < 1e-5
    b = a.reshape(250_000, 4)
    bi, bt = wrap(b, "float32")
    r = both(lambda m, x: x.sum(0), bi, bt)
    np.testing.assert_allclose(r.numpy(), b.astype(np.float64).sum(0), rtol=1e-5)
    both(lambda m, x: x.mean(), bi, bt)
    both(lambda m, x: x.norm(), bi, bt)


@pytest.mark.parametrize("shape,dim", [((512, 300), 1), ((512, 300), 0), ((3, 60000), 1),
                                       ((60000, 3), 0), ((7, 90, 80), (0, 2)),
                                       ((40, 50, 60), 1)])
def test_parallel_paths(shape, dim):
    ti, tt, a = make(shape, "float32", seed=11)
    both(lambda m, x: x.sum(dim), ti, tt)
    both(lambda m, x: x.amax(dim), ti, tt, exact=True)
    both(lambda m, x: x.var(dim), ti, tt)
    both(lambda m, x: x.any(dim), ti, tt)
    if isinstance(dim, int):
        both(lambda m, x: x.max(dim), ti, tt, exact=True)
        both(lambda m, x: x.argmin(dim), ti, tt, exact=True)
        both(lambda m, x: x.cumsum(dim), ti, tt)
    both(lambda m, x: x.argmax(), ti, tt, exact=True)
    ii, it, _ = make(shape, "int32", seed=12)
    both(lambda m, x: x.sum(dim), ii, it)
    both(lambda m, x: x.argmax(), ii, it)  # many ties: the first one wins


def test_large_nan_and_ties():
    a = np.zeros(200_000, dtype=np.float32)
    a[150_000] = np.nan
    a[170_000] = 5.0
    ti, tt = wrap(a, "float32")
    assert ti.argmax().item() == 150_000 and ti.argmin().item() == 150_000
    assert math.isnan(ti.max().item())
    b = np.zeros(200_000, dtype=np.float32)
    b[120_000] = b[160_000] = 3.0
    bi, bt = wrap(b, "float32")
    assert bi.argmax().item() == 120_000 and bi.argmin().item() == 0
    c = np.zeros((100_000, 2), dtype=np.float32)
    c[70_000, 1] = np.nan
    ci, ct = wrap(c, "float32")
    both(lambda m, x: x.max(0), ci, ct)
    both(lambda m, x: x.amax(0), ci, ct)
