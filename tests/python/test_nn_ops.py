"""Neural-network and composite ops against torch (and NumPy): softmax family,
layer_norm / rms_norm / normalize, dropout, embedding, one_hot, losses,
activations, linear and scaled_dot_product_attention. Values, dtypes,
shapes, strided inputs, zero sizes and error types."""
import numpy as np
import pytest

import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

# torch's own warnings (implicit softmax dim, broadcast losses, mixed dtypes)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same numbers however the suite is filtered or ordered."""
    global RNG
    RNG = np.random.default_rng(0)
FLOATS = ["float32", "float64", "float16", "bfloat16"]
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-12), "float16": (2e-3, 2e-3),
       "bfloat16": (2e-2, 2e-2)}


def rand(shape, dtype="float32", scale=1.0):
    a = np.asarray(RNG.standard_normal(shape) * scale).astype(np.float32 if dtype == "bfloat16" else dtype)
    if dtype == "bfloat16":
        a = torch.from_numpy(a).bfloat16().float().numpy()
    return a


def cast(a, dtype):
    """`a` as a NumPy array of `dtype` (float32 holding bf16 values for 'bfloat16')."""
    if dtype == "bfloat16":
        return torch.from_numpy(np.asarray(a, np.float32)).bfloat16().float().numpy()
    return np.asarray(a).astype(dtype)


def both(a, dtype=None):
    """ignis and torch tensors holding the NumPy array `a` (strides kept on the ignis side)."""
    dtype = dtype or str(a.dtype)
    t = torch.from_numpy(a if a.flags.writeable else a.copy())
    if dtype == "bfloat16":
        return ignis.from_numpy(a).to(ignis.bfloat16), t.to(torch.bfloat16)
    return ignis.from_numpy(a), t


def as_np(t):
    if str(t.dtype).endswith("bfloat16"):
        t = t.float()
    return np.asarray(t.numpy())


def name(dt):
    return str(dt).split(".")[-1]


def torch_ref(fn, *args, **kw):
    """fn(*args, **kw) in torch; with 16-bit float tensors among the arguments,
    computed in float64 and rounded to the dtype torch returns (torch's own
    16-bit kernels accumulate in 16 bits, ignis's in float or double)."""
    want = fn(*args, **kw)
    if not any(isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16)
               for a in list(args) + list(kw.values())):
        return want
    up = lambda a: a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a  # noqa
    exact = fn(*[up(a) for a in args], **{k: up(v) for k, v in kw.items()})
    return exact.to(want.dtype)


def check(got, want, rtol=None, atol=None, equal_nan=False):
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    assert name(got.dtype) == name(want.dtype), (got.dtype, want.dtype)
    r, a = TOL.get(name(want.dtype), (0, 0))
    np.testing.assert_allclose(as_np(got).astype(np.float64),
                               as_np(want.detach()).astype(np.float64),
                               rtol=r if rtol is None else rtol, atol=a if atol is None else atol,
                               equal_nan=equal_nan)


# ---- softmax / log_softmax ------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,dim", [((5, 7), -1), ((5, 7), 0), ((2, 3, 4), 1), ((6,), 0),
                                       ((), 0), ((), -1), ((0, 4), 1), ((3, 0), 1),
                                       ((3, 600, 2), 1), ((2, 1000), 1)])
def test_softmax(fn, dtype, shape, dim):
    x = rand(shape, dtype, scale=3.0)
    ix, tx = both(x, dtype)
    check(getattr(ignis, fn)(ix, dim), getattr(torch, fn)(tx, dim))
    check(getattr(ix, fn)(dim), getattr(tx, fn)(dim))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_numpy_reference(fn):
    x = rand((4, 9), "float64", scale=50.0)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    got = getattr(ignis, fn)(ignis.from_numpy(x), 1).numpy()
    np.testing.assert_allclose(got, ref if fn == "softmax" else np.log(ref), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_noncontiguous_and_dtype_arg(fn):
    x = rand((6, 8)).T  # transposed
    ix, tx = both(x)
    for d in (0, 1):
        check(getattr(ignis, fn)(ix, d), getattr(torch, fn)(tx, d))
    check(getattr(ignis, fn)(ix, 1, dtype=ignis.float64),
          getattr(torch, fn)(tx, 1, dtype=torch.float64))
    xi = RNG.integers(-3, 3, size=(3, 4))
    ii, ti = both(xi)
    check(getattr(ignis, fn)(ii, 1, dtype=ignis.float32),
          getattr(torch, fn)(ti, 1, dtype=torch.float32))
    xh = rand((3, 5), "float16")
    ih, th = both(xh)
    check(getattr(ignis, fn)(ih, -1, dtype=ignis.float32),
          getattr(torch, fn)(th, -1, dtype=torch.float32))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_special_values(fn):
    inf, nan = np.inf, np.nan
    x = np.array([[1.0, -inf, 2.0], [-inf, -inf, -inf], [1.0, nan, 0.0], [inf, 1.0, 0.0],
                  [1e30, -1e30, 0.0]], np.float32)
    ix, tx = both(x)
    check(getattr(ignis, fn)(ix, 1), getattr(torch, fn)(tx, 1), equal_nan=True)
    check(getattr(ignis, fn)(ix, 0), getattr(torch, fn)(tx, 0), equal_nan=True)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "_safe_softmax"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_softmax_over_few_long_rows(fn, dtype):
    """Note [Few long rows] (kernels/cpu/nn_util.h): rows of
    at least 32768 elements, fewer than 64, split into chunks over the
    threads; NumPy's float64 values (the edge rows against torch), and the
    same bits on 1 and 2 threads."""
    inf, nan = np.inf, np.nan
    x = rand((5, 40000), "float64", scale=4.0)
    x[1, 123] = nan
    x[2, :20000] = -inf                 # -inf over whole chunks
    x[3] = -inf                         # a row of -inf
    x[4, 39999] = 60.0                  # the max in the last chunk
    ix = ignis.from_numpy(x).to(getattr(ignis, dtype))
    fns = {"softmax": ignis.softmax, "log_softmax": ignis.log_softmax,
           "_safe_softmax": ignis.ops._safe_softmax}
    f = fns[fn]
    prev = ignis.get_num_threads()
    try:
        ignis.set_num_threads(1)
        one = f(ix, 1)
        ignis.set_num_threads(2)
        two = f(ix, 1)
    finally:
        ignis.set_num_threads(prev)
    np.testing.assert_array_equal(as_np(one), as_np(two))
    tx = torch.from_numpy(x).to(getattr(torch, dtype))
    want = torch._safe_softmax(tx, 1) if fn == "_safe_softmax" else getattr(torch, fn)(tx, 1)
    check(two, want, equal_nan=True)
    xf = as_np(ix).astype(np.float64)  # the input as ignis holds it
    rows = [0, 4] + ([2] if fn != "log_softmax" else [])
    m = xf[rows].max(axis=1, keepdims=True)
    e = np.exp(xf[rows] - m)
    ref = e / e.sum(axis=1, keepdims=True)
    ref = np.log(ref) if fn == "log_softmax" else ref
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(as_np(two)[rows].astype(np.float64), ref, rtol=tol, atol=tol * 1e-2)


@pytest.mark.parametrize("fn", ["layer_norm", "rms_norm"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_norms_over_few_long_rows(fn, dtype):
    """Few long rows of layer_norm and rms_norm split into chunks over the
    threads (Note [Few long rows], kernels/cpu/nn_util.h): torch's values, the weight and bias read
    at each chunk's offset, the same bits on 1 and 2 threads; layer_norm's
    saved mean and rstd too."""
    n = 40000
    x = rand((3, n), "float64", scale=3.0) + 5.0
    w, b = rand((n,), "float64"), rand((n,), "float64")
    ix, iw, ib = (ignis.from_numpy(a).to(getattr(ignis, dtype)) for a in (x, w, b))
    tx, tw, tb = (torch.from_numpy(a).to(getattr(torch, dtype)) for a in (x, w, b))

    def run(threads):
        prev = ignis.get_num_threads()
        ignis.set_num_threads(threads)
        try:
            if fn == "layer_norm":
                return ignis.ops.native_layer_norm(ix, [n], iw, ib, 1e-5)
            return (IF.rms_norm(ix, (n,), iw, 1e-6),)
        finally:
            ignis.set_num_threads(prev)

    one, two = run(1), run(2)
    for a, c in zip(one, two):
        np.testing.assert_array_equal(as_np(a), as_np(c))
    if fn == "layer_norm":
        want = torch.native_layer_norm(tx, [n], tw, tb, 1e-5)
        for got, ref in zip(two, want):
            check(got, ref)
    else:
        check(two[0], TF.rms_norm(tx, (n,), tw, 1e-6))


def test_softmax_functional_forms():
    x = rand((3, 4, 5))
    ix, tx = both(x)
    check(IF.softmax(ix, dim=2), TF.softmax(tx, dim=2))
    check(IF.log_softmax(ix, 1, 3, ignis.float64), TF.log_softmax(tx, 1, 3, torch.float64))
    with pytest.warns(UserWarning):
        want = TF.softmax(tx)  # implicit dim: 0 for 3-D input
    check(IF.softmax(ix), want)


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ignis.softmax(ignis.ones(2, 3, dtype=ignis.int64), 1)
    with pytest.raises(NotImplementedError):
        torch.softmax(torch.ones(2, 3, dtype=torch.int64), 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ignis.softmax(ignis.ones(2, 3), 2)
    with pytest.raises(NotImplementedError):
        ignis.log_softmax(ignis.ones(2, 3), 1, dtype=ignis.int32)


def test_softmax_meta():
    r = ignis.softmax(ignis.empty(2, 3, device="meta"), 1, dtype=ignis.float64)
    assert r.device.type == "meta" and r.dtype == ignis.float64 and tuple(r.shape) == (2, 3)


# ---- layer_norm / rms_norm / normalize ----------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,ns", [((4, 6), (6,)), ((2, 3, 5), (3, 5)), ((7,), (7,)),
                                      ((0, 4), (4,)), ((3, 700), (700,))])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm(dtype, shape, ns, affine):
    x = rand(shape, dtype, scale=2.0) + 1.5
    ix, tx = both(x, dtype)
    w = both(rand(ns, dtype), dtype) if affine in ("weight", "both") else (None, None)
    b = both(rand(ns, dtype), dtype) if affine in ("bias", "both") else (None, None)
    check(IF.layer_norm(ix, list(ns), w[0], b[0]), TF.layer_norm(tx, list(ns), w[1], b[1]))
    check(ignis.layer_norm(ix, list(ns), w[0], b[0], 1e-3),
          torch.layer_norm(tx, list(ns), w[1], b[1], 1e-3))


def test_layer_norm_numpy_and_stats():
    x = rand((5, 8), "float64")
    out, mean, rstd = ignis.native_layer_norm(ignis.from_numpy(x), [8], None, None, 1e-5)
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (x - mu) / np.sqrt(var + 1e-5), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), mu, rtol=1e-12)
    np.testing.assert_allclose(rstd.numpy(), 1 / np.sqrt(var + 1e-5), rtol=1e-12)
    t = torch.native_layer_norm(torch.from_numpy(x), [8], None, None, 1e-5)
    for g, w in zip((out, mean, rstd), t):
        check(g, w)


def test_layer_norm_mixed_and_strided():
    x = rand((4, 6)).T  # [6, 4], transposed
    ix, tx = both(x)
    w, b = both(rand((4,))), both(rand((4,)))
    check(IF.layer_norm(ix, [4], w[0], b[0]), TF.layer_norm(tx, [4], w[1], b[1]))
    xh = rand((3, 4), "float16")
    ih, th = both(xh)
    check(IF.layer_norm(ih, [4], w[0], b[0]), TF.layer_norm(th, [4], w[1], b[1]))
    xb = rand((3, 4), "bfloat16")
    ib, tb = both(xb, "bfloat16")
    check(IF.layer_norm(ib, [4], w[0]), TF.layer_norm(tb, [4], w[1]))


def test_layer_norm_errors():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        IF.layer_norm(ignis.ones(2, 3), [4])
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        IF.layer_norm(ignis.ones(2, 3), [3], ignis.ones(4))
    with pytest.raises(RuntimeError, match="mixed dtype"):
        IF.layer_norm(ignis.ones(2, 3), [3], ignis.ones(3, dtype=ignis.float64))
    with pytest.raises(NotImplementedError, match="Long"):
        IF.layer_norm(ignis.ones(2, 3, dtype=ignis.int64), [3])
    with pytest.raises(RuntimeError, match="at least 1-dimensional"):
        IF.layer_norm(ignis.ones(2, 3), [])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("with_weight", [False, True])
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(dtype, with_weight, eps):
    x = rand((3, 2, 9), dtype)
    ix, tx = both(x, dtype)
    w = both(rand((2, 9), dtype), dtype) if with_weight else (None, None)
    check(IF.rms_norm(ix, [2, 9], w[0], eps), TF.rms_norm(tx, [2, 9], w[1], eps))


def test_rms_norm_mixed_and_errors():
    x = rand((4, 5))
    ix, tx = both(x)
    w = both(rand((5,), "float64"))
    check(IF.rms_norm(ix, [5], w[0]), TF.rms_norm(tx, [5], w[1]))
    np.testing.assert_allclose(
        IF.rms_norm(ix, [5], eps=1e-6).numpy(),
        x / np.sqrt((x.astype(np.float64) ** 2).mean(1, keepdims=True) + 1e-6), rtol=1e-5)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        IF.rms_norm(ignis.ones(2, 3), [4])
    with pytest.raises(NotImplementedError):
        IF.rms_norm(ignis.ones(2, 3, dtype=ignis.int32), [3])


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.5])
@pytest.mark.parametrize("dim", [1, 0, -1])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_normalize(p, dim, dtype):
    x = rand((3, 4, 2), dtype)
    ix, tx = both(x, dtype)
    check(IF.normalize(ix, p, dim), TF.normalize(tx, p, dim))


def test_normalize_eps_and_errors():
    x = np.zeros((2, 3), np.float32)
    ix, tx = both(x)
    check(IF.normalize(ix, eps=1e-3), TF.normalize(tx, eps=1e-3))
    with pytest.raises(RuntimeError, match="floating point"):
        IF.normalize(ignis.ones(3, dtype=ignis.int64), dim=0)


@pytest.mark.parametrize("sa,sb,dim", [((3, 4), (3, 4), 1), ((3, 4), (4,), 1), ((2, 3, 4), (2, 3, 4), 0),
                                       ((4,), (4,), 0), ((0, 4), (0, 4), 1), ((2, 5), (2, 5), -1)])
@pytest.mark.parametrize("dtype", FLOATS)
def test_cosine_similarity(sa, sb, dim, dtype):
    (ia, ta), (ib, tb) = both(rand(sa, dtype), dtype), both(rand(sb, dtype), dtype)
    check(IF.cosine_similarity(ia, ib, dim), TF.cosine_similarity(ta, tb, dim))


def test_cosine_similarity_eps_promotion_errors():
    z = np.zeros((3, 4), np.float32)
    (iz, tz), (io, to) = both(z), both(np.ones((3, 4)))
    check(IF.cosine_similarity(iz, io), TF.cosine_similarity(tz, to))
    with pytest.raises(RuntimeError, match="floating point"):
        IF.cosine_similarity(ignis.ones(3, 4, dtype=ignis.int64), ignis.ones(3, 4, dtype=ignis.int64))
    with pytest.raises(RuntimeError, match="must match"):
        IF.cosine_similarity(ignis.ones(3, 4), ignis.ones(5, 4))
    with pytest.raises(IndexError):
        IF.cosine_similarity(ignis.ones(4), ignis.ones(4), dim=2)


# ---- dropout --------------------------------------------------------------------------------------
def test_dropout_identity_cases():
    x = ignis.randn(4, 5)
    assert ignis.dropout(x, 0.5, False) is x
    assert ignis.dropout(x, 0.0, True) is x
    assert IF.dropout(x, 0.3, training=False) is x
    xi = ignis.ones(3, dtype=ignis.int64)
    assert ignis.dropout(xi, 0.5, False) is xi


@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_statistics(dtype):
    ignis.manual_seed(123)
    p = 0.3
    x = ignis.ones(200, 100, dtype=getattr(ignis, dtype))
    y = as_np(IF.dropout(x, p))
    assert y.dtype == np.float32 or name(IF.dropout(x, p).dtype) == dtype
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.02
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=TOL[dtype][0] * 4)


def test_dropout_mask_seed_and_p1():
    x = rand((50, 40)) + 5
    ix = ignis.from_numpy(x)
    ignis.manual_seed(7)
    out, mask = ignis.native_dropout(ix, 0.25, True)
    assert mask.dtype == ignis.bool and out.dtype == ignis.float32
    m = mask.numpy()
    np.testing.assert_allclose(out.numpy(), np.where(m, x / 0.75, 0), rtol=1e-6)
    ignis.manual_seed(7)
    out2, _ = ignis.native_dropout(ix, 0.25, True)
    np.testing.assert_array_equal(out.numpy(), out2.numpy())
    np.testing.assert_array_equal(IF.dropout(ix, 1.0).numpy(), np.zeros_like(x))
    out, mask = ignis.native_dropout(ix, 0.5, False)
    np.testing.assert_array_equal(out.numpy(), x)
    assert mask.numpy().all()
    # non-contiguous input
    y = IF.dropout(ix.t(), 0.5)
    yn = y.numpy()
    assert yn.shape == (40, 50) and np.all((yn == 0) | np.isclose(yn, 2 * x.T))


def test_dropout_inplace_and_errors():
    x = ignis.ones(100)
    ignis.manual_seed(3)
    r = IF.dropout(x, 0.5, True, True)
    assert r is x
    v = x.numpy()
    assert set(np.unique(v)).issubset({0.0, 2.0}) and 0 < (v == 0).sum() < 100
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        IF.dropout(x, 1.5)
    with pytest.raises(ValueError):
        TF.dropout(torch.ones(3), 1.5)
    # One op serves torch.dropout (RuntimeError there) and F.dropout (ValueError);
    # F's exception type wins. native_dropout raises RuntimeError like torch's.
    with pytest.raises(ValueError, match="dropout probability"):
        ignis.dropout(x, -0.1, True)
    with pytest.raises(RuntimeError, match="dropout probability"):
        ignis.native_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError):
        ignis.dropout(ignis.ones(3, dtype=ignis.int64), 0.5, True)
    with pytest.raises(RuntimeError):
        torch.dropout(torch.ones(3, dtype=torch.int64), 0.5, True)


# ---- embedding / one_hot ---------------------------------------------------------------------------
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
@pytest.mark.parametrize("wdtype", ["float32", "float16", "bfloat16", "int64"])
def test_embedding(idx_dtype, wdtype):
    w = rand((10, 4), "float32") if wdtype != "int64" else RNG.integers(0, 9, (10, 4))
    w = w.astype(np.float32 if wdtype == "bfloat16" else wdtype)
    idx = RNG.integers(0, 10, size=(3, 5)).astype(idx_dtype)
    (iw, tw), (ii, ti) = both(w, wdtype), both(idx)
    check(ignis.embedding(iw, ii), torch.embedding(tw, ti))
    check(ignis.embedding(iw, ii, 2), torch.embedding(tw, ti, 2))


def test_embedding_strided_and_empty():
    w = rand((6, 10))[:, ::2]  # row stride 10, column stride 2
    idx = np.array([4, 0, 4, 3, 5])
    (iw, tw), (ii, ti) = both(w), both(idx)
    check(ignis.embedding(iw, ii), torch.embedding(tw, ti))
    check(ignis.embedding(iw.t(), ii.narrow(0, 0, 4)), torch.embedding(tw.t(), ti[:4]))
    e = np.zeros((0,), np.int64)
    check(ignis.embedding(iw, ignis.from_numpy(e)), torch.embedding(tw, torch.from_numpy(e)))
    check(ignis.embedding(iw, ignis.tensor(2)), torch.embedding(tw, torch.tensor(2)))


def test_embedding_errors():
    w = ignis.ones(5, 3)
    with pytest.raises(IndexError, match="index out of range in self"):
        ignis.embedding(w, ignis.tensor([1, 5]))
    with pytest.raises(IndexError):
        ignis.embedding(w, ignis.tensor([-1]))
    with pytest.raises(RuntimeError, match="Long, Int"):
        ignis.embedding(w, ignis.tensor([1.0]))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        ignis.embedding(ignis.ones(5), ignis.tensor([1]))


def test_functional_embedding_argument_order():
    if IF.embedding is ignis.embedding:
        pytest.skip("ignis.nn.functional.embedding is the op itself (torch.embedding order); "
                    "F.embedding(input, weight) needs a Python wrapper in nn/functional.py")
    w, idx = rand((6, 3)), np.array([[1, 2], [5, 0]])
    (iw, tw), (ii, ti) = both(w), both(idx)
    check(IF.embedding(ii, iw), TF.embedding(ti, tw))
    check(IF.embedding(ii, iw, padding_idx=0), TF.embedding(ti, tw, padding_idx=0))


def test_one_hot():
    idx = np.array([[0, 3], [2, 1]])
    ii, ti = both(idx)
    check(IF.one_hot(ii), TF.one_hot(ti))
    check(IF.one_hot(ii, 6), TF.one_hot(ti, 6))
    e = np.zeros((0,), np.int64)
    check(IF.one_hot(ignis.from_numpy(e), 3), TF.one_hot(torch.from_numpy(e), 3))
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        IF.one_hot(ii, 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        IF.one_hot(ignis.tensor([1, -2]), 4)
    with pytest.raises(RuntimeError, match="LongTensor"):
        IF.one_hot(ignis.tensor([1, 2], dtype=ignis.int32), 4)
    with pytest.raises(RuntimeError, match="empty tensor"):
        IF.one_hot(ignis.from_numpy(e))


# ---- nll_loss / cross_entropy ------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def class_case(shape, dtype, ignore=-100, with_ignored=False):
    x = rand(shape, dtype, scale=2.0)
    C = shape[1] if len(shape) > 1 else shape[0]
    tshape = (shape[0],) + shape[2:] if len(shape) > 1 else ()
    t = RNG.integers(0, C, size=tshape)
    if with_ignored and t.size:
        t.reshape(-1)[::3] = ignore
    return both(x, dtype), both(np.asarray(t, np.int64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2, 3), (5,), (0, 3)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(reduction, shape, weighted):
    (ix, tx), (it, tt) = class_case(shape, "float32", with_ignored=True)
    C = shape[1] if len(shape) > 1 else shape[0]
    w = both(np.abs(rand((C,))) + 0.1) if weighted else (None, None)
    check(IF.nll_loss(ix, it, w[0], reduction=reduction),
          TF.nll_loss(tx, tt, w[1], reduction=reduction), equal_nan=True)
    it, tt = both(np.where(tt.numpy() == -100, 1, tt.numpy()))
    check(IF.nll_loss(ix, it, w[0], ignore_index=1, reduction=reduction),
          TF.nll_loss(tx, tt, w[1], ignore_index=1, reduction=reduction), equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_nll_loss_dtypes_and_legacy_flags(dtype):
    (ix, tx), (it, tt) = class_case((8, 4), dtype)

    def ref(*args, **kw):
        return torch_ref(TF.nll_loss, *args, **kw)

    check(IF.nll_loss(ix, it), ref(tx, tt))
    check(IF.nll_loss(ix, it, size_average=False), ref(tx, tt, size_average=False))
    check(IF.nll_loss(ix, it, reduce=False), ref(tx, tt, reduce=False))
    tu = both(tt.numpy().astype(np.uint8))
    check(IF.nll_loss(ix, tu[0]), ref(tx, tu[1]))


def test_nll_loss_errors():
    x = ignis.ones(4, 3)
    with pytest.raises(IndexError, match="Target 3 is out of bounds."):
        IF.nll_loss(x, ignis.tensor([0, 1, 2, 3]))
    with pytest.raises(IndexError, match="Target -1 is out of bounds."):
        IF.nll_loss(x, ignis.tensor([0, 1, 2, -1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(4\) to match target batch_size \(3\)"):
        IF.nll_loss(x, ignis.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        IF.nll_loss(x, ignis.tensor([0, 1, 2, 1], dtype=ignis.int32))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        IF.nll_loss(x, ignis.tensor([0, 1, 2, 1]), reduction="bad")
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 3 classes"):
        IF.nll_loss(x, ignis.tensor([0, 1, 2, 1]), weight=ignis.ones(4))
    with pytest.raises(RuntimeError, match="size mismatch"):
        IF.nll_loss(ignis.ones(2, 3, 4, 5), ignis.zeros(2, 4, 6, dtype=ignis.int64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 4), (4,), (0, 3)])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_indices(reduction, shape, smoothing, weighted):
    (ix, tx), (it, tt) = class_case(shape, "float32", with_ignored=True)
    C = shape[1] if len(shape) > 1 else shape[0]
    w = both(np.abs(rand((C,))) + 0.1) if weighted else (None, None)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check(IF.cross_entropy(ix, it, w[0], **kw), TF.cross_entropy(tx, tt, w[1], **kw),
          rtol=1e-5, atol=1e-6, equal_nan=True)
    it, tt = both(np.where(tt.numpy() == -100, 2, tt.numpy()))
    check(IF.cross_entropy(ix, it, w[0], ignore_index=2, **kw),
          TF.cross_entropy(tx, tt, w[1], ignore_index=2, **kw), rtol=1e-5, atol=1e-6,
          equal_nan=True)


@pytest.mark.parametrize("dtype", FLOATS)
def test_cross_entropy_dtypes_large_logits(dtype):
    (ix, tx), (it, tt) = class_case((5, 7), dtype)
    check(IF.cross_entropy(ix, it), torch_ref(TF.cross_entropy, tx, tt))
    x = rand((3, 4), dtype, scale=200.0)
    ix, tx = both(x, dtype)
    t = both(np.array([0, 3, 1]))
    check(IF.cross_entropy(ix, t[0], reduction="none"),
          torch_ref(TF.cross_entropy, tx, t[1], reduction="none"), rtol=TOL[dtype][0] * 2)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5), (6,)])
def test_cross_entropy_probabilities(reduction, smoothing, shape):
    x = rand(shape)
    p = np.exp(rand(shape))
    p = p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    (ix, tx), (ip, tp) = both(x), both(p.astype(np.float32))
    C = shape[1] if len(shape) > 1 else shape[0]
    w = both(np.abs(rand((C,))) + 0.5)
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    check(IF.cross_entropy(ix, ip, **kw), TF.cross_entropy(tx, tp, **kw), rtol=1e-5, atol=1e-6)
    check(IF.cross_entropy(ix, ip, w[0], **kw), TF.cross_entropy(tx, tp, w[1], **kw), rtol=1e-5,
          atol=1e-6)
    pd = both(p)  # float64 probabilities promote the result
    check(IF.cross_entropy(ix, pd[0], **kw), TF.cross_entropy(tx, pd[1], **kw), rtol=1e-6,
          atol=1e-7)


def test_cross_entropy_numpy_reference_and_errors():
    x = rand((4, 3), "float64")
    t = np.array([0, 2, 1, 2])
    lse = np.log(np.exp(x).sum(1))
    ref = (lse - x[np.arange(4), t]).mean()
    got = IF.cross_entropy(ignis.from_numpy(x), ignis.from_numpy(t))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12)
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        IF.cross_entropy(ignis.from_numpy(x), ignis.from_numpy(t), label_smoothing=1.5)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        IF.cross_entropy(ignis.from_numpy(x), ignis.tensor([0, 1, 3, 1]))
    with pytest.raises(NotImplementedError, match="Int"):
        IF.cross_entropy(ignis.ones(4, 3, dtype=ignis.int32), ignis.from_numpy(t))
    with pytest.raises(RuntimeError, match="Expected floating point type for target"):
        IF.cross_entropy(ignis.ones(2, 3), ignis.ones(2, 3, dtype=ignis.int64))


# ---- elementwise losses --------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,kw", [("mse_loss", {}), ("l1_loss", {}),
                                   ("smooth_l1_loss", {"beta": 0.5}),
                                   ("smooth_l1_loss", {"beta": 0.0}),
                                   ("huber_loss", {"delta": 0.7})])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_pointwise_losses(fn, kw, reduction, dtype):
    x, y = rand((4, 6), dtype), rand((4, 6), dtype)
    (ix, tx), (iy, ty) = both(x, dtype), both(y, dtype)
    check(getattr(IF, fn)(ix, iy, reduction=reduction, **kw),
          torch_ref(getattr(TF, fn), tx, ty, reduction=reduction, **kw), rtol=TOL[dtype][0] * 4)


@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses_weighted(fn, reduction):
    x, y, w = rand((3, 5)), rand((3, 5)), np.abs(rand((3, 5)))
    (ix, tx), (iy, ty), (iw, tw) = both(x), both(y), both(w)
    check(getattr(IF, fn)(ix, iy, reduction=reduction, weight=iw),
          getattr(TF, fn)(tx, ty, reduction=reduction, weight=tw))


def test_pointwise_losses_broadcast_promotion_strides():
    x, y = rand((4, 3)), rand((3,), "float64")
    (ix, tx), (iy, ty) = both(x), both(y)
    with pytest.warns(UserWarning):
        want = TF.mse_loss(tx, ty)
    check(IF.mse_loss(ix, iy), want)
    check(IF.l1_loss(ix.t(), ix.t().contiguous(), reduction="none"),
          TF.l1_loss(tx.t(), tx.t().contiguous(), reduction="none"))
    e = np.zeros((0,), np.float32)
    (ie, te) = both(e)
    check(IF.mse_loss(ie, ie), TF.mse_loss(te, te), equal_nan=True)
    np.testing.assert_allclose(IF.mse_loss(ix, ix.t().t(), reduction="sum").numpy(), 0.0)
    with pytest.raises(NotImplementedError):
        IF.mse_loss(ignis.ones(3, dtype=ignis.int64), ignis.ones(3, dtype=ignis.int64))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        IF.mse_loss(ignis.ones(2, 3), ignis.ones(2, 3), weight=ignis.ones(3))
    with pytest.raises(RuntimeError, match="must match"):
        IF.mse_loss(ignis.ones(4, 3), ignis.ones(5, 3))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_cross_entropy(reduction, dtype):
    p = RNG.uniform(0.02, 0.98, (4, 5)).astype(np.float32)
    p[0, :2] = [0.0, 1.0]  # log clamped at -100
    y = RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    w = RNG.uniform(0.5, 2, (5,)).astype(np.float32)
    (ip, tp), (iy, ty), (iw, tw) = both(cast(p, dtype), dtype), both(cast(y, dtype), dtype), both(w)
    rt = TOL[dtype][0] * 4
    check(IF.binary_cross_entropy(ip, iy, reduction=reduction),
          torch_ref(TF.binary_cross_entropy, tp, ty, reduction=reduction), rtol=rt)
    check(IF.binary_cross_entropy(ip, iy, iw.to(ip.dtype), reduction=reduction),
          torch_ref(TF.binary_cross_entropy, tp, ty, tw.to(tp.dtype), reduction=reduction),
          rtol=rt)


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        IF.binary_cross_entropy(ignis.full((3,), 1.5), ignis.ones(3))
    with pytest.raises(ValueError, match="different to the input size"):
        IF.binary_cross_entropy(ignis.ones(2, 3), ignis.ones(3))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        IF.binary_cross_entropy(ignis.ones(3), ignis.ones(3, dtype=ignis.float64))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_bce_with_logits(reduction, dtype):
    x, y = rand((4, 5), dtype, scale=30.0), RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    (ix, tx), (iy, ty) = both(x, dtype), both(cast(y, dtype), dtype)
    w, pw = both(np.abs(rand((4, 1)))), both(np.abs(rand((5,))) + 0.5)
    rt = TOL[dtype][0] * 4
    f_i, f_t = IF.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits
    check(f_i(ix, iy, reduction=reduction), torch_ref(f_t, tx, ty, reduction=reduction), rtol=rt)
    check(f_i(ix, iy, w[0], reduction=reduction, pos_weight=pw[0]),
          torch_ref(f_t, tx, ty, w[1], reduction=reduction, pos_weight=pw[1]), rtol=rt)
    with pytest.raises(ValueError, match="must be the same as input size"):
        f_i(ix, iy.t())
    # the result takes the target's dtype (PyTorch computes in place into it)
    y32 = both(y)
    check(f_i(ix, y32[0], reduction=reduction), f_t(tx, y32[1], reduction=reduction),
          rtol=max(rt, 1e-5))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(RNG.dirichlet(np.ones(5), 4)).astype(np.float32)
    y = RNG.dirichlet(np.ones(5), 4)
    y[0, 1] = 0.0  # 0 * log 0 contributes 0
    if log_target:
        with np.errstate(divide="ignore"):
            y = np.log(y)  # -inf where 0: NaN loss there, as in torch
    (ix, tx), (iy, ty) = both(x), both(y.astype(np.float32))
    check(IF.kl_div(ix, iy, reduction=reduction, log_target=log_target),
          TF.kl_div(tx, ty, reduction=reduction, log_target=log_target), rtol=1e-5, atol=1e-6,
          equal_nan=True)
    iy64, ty64 = both(y)  # float64 target promotes
    check(IF.kl_div(ix, iy64, reduction=reduction, log_target=log_target),
          TF.kl_div(tx, ty64, reduction=reduction, log_target=log_target), rtol=1e-6, atol=1e-7,
          equal_nan=True)


# ---- activations -----------------------------------------------------------------------------------------
ACTS = [("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 3.0}),
        ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
        ("elu", {"alpha": 0.5}), ("hardtanh", {}), ("hardtanh", {"min_val": -0.5, "max_val": 2.0}),
        ("relu6", {}), ("logsigmoid", {}), ("glu", {}), ("glu", {"dim": 0})]


@pytest.mark.parametrize("fn,kw", ACTS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_activations(fn, kw, dtype):
    x = rand((4, 6), dtype, scale=4.0)
    ix, tx = both(x, dtype)
    check(getattr(IF, fn)(ix, **kw), getattr(TF, fn)(tx, **kw))
    check(getattr(IF, fn)(ix.t(), **kw), getattr(TF, fn)(tx.t(), **kw))


@pytest.mark.parametrize("fn,kw", [("leaky_relu", {"negative_slope": 0.1}), ("elu", {}),
                                   ("hardtanh", {}), ("relu6", {})])
def test_activations_inplace(fn, kw):
    x = rand((3, 4), scale=8.0)
    ix, tx = both(x.copy())
    r = getattr(IF, fn)(ix, inplace=True, **kw)
    want = getattr(TF, fn)(tx, inplace=True, **kw)
    assert r is ix
    check(ix, want)
    iy = ignis.from_numpy(x.copy())
    getattr(ignis, fn + "_")(iy)
    check(iy, getattr(TF, fn)(torch.from_numpy(x.copy())))


def test_activation_extremes_and_integers():
    x = np.array([-100.0, -30.0, -1e-8, 0.0, 1e-8, 25.0, 100.0, np.nan], np.float32)
    ix, tx = both(x)
    for fn in ["softplus", "logsigmoid", "elu", "leaky_relu", "hardtanh"]:
        check(getattr(IF, fn)(ix), getattr(TF, fn)(tx), equal_nan=True)
    xi = np.array([-9, -1, 0, 3, 8])
    ii, ti = both(xi)
    check(IF.hardtanh(ii), TF.hardtanh(ti))
    check(IF.relu6(ii), TF.relu6(ti))
    for fn in ["softplus", "leaky_relu", "elu", "logsigmoid", "glu"]:
        with pytest.raises(NotImplementedError, match="Long"):
            getattr(IF, fn)(ignis.ones(4, dtype=ignis.int64))
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        IF.hardtanh(ignis.ones(3, dtype=ignis.bool))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        IF.glu(ignis.ones(3))
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        IF.glu(ignis.ones(()))


# ---- linear ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_shape", [(5,), (4, 5), (2, 3, 5), (0, 5), (2, 0, 5)])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_linear(in_shape, bias, dtype):
    x, w = rand(in_shape, dtype), rand((3, 5), dtype)
    (ix, tx), (iw, tw) = both(x, dtype), both(w, dtype)
    b = both(rand((3,), dtype), dtype) if bias else (None, None)
    check(IF.linear(ix, iw, b[0]), TF.linear(tx, tw, b[1]), rtol=TOL[dtype][0] * 4)


def test_linear_strided_int_and_errors():
    x = rand((5, 3, 4)).transpose(1, 0, 2)  # [3, 5, 4] non-contiguous
    w, b = rand((4, 2)).T, rand((2,))
    (ix, tx), (iw, tw), (ib, tb) = both(x), both(w), both(b)
    check(IF.linear(ix, iw, ib), TF.linear(tx, tw, tb))
    xi, wi, bi = (RNG.integers(-3, 3, s) for s in [(2, 3), (4, 3), (4,)])
    check(IF.linear(*[both(a)[0] for a in (xi, wi, bi)]), TF.linear(*[both(a)[1] for a in (xi, wi, bi)]))
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        IF.linear(ignis.ones(4, 3), ignis.ones(2, 4))
    with pytest.raises(RuntimeError, match="same dtype"):
        IF.linear(ignis.ones(4, 3), ignis.ones(2, 3), ignis.ones(2, dtype=ignis.float64))
    with pytest.raises(RuntimeError, match="at least 1D"):
        IF.linear(ignis.ones(()), ignis.ones(()))
    # zero input features: the product is all zeros plus the bias
    x0, w0, b0 = np.zeros((2, 3, 0), np.float32), np.zeros((4, 0), np.float32), rand((4,))
    check(IF.linear(*[both(a)[0] for a in (x0, w0, b0)]), TF.linear(*[both(a)[1] for a in (x0, w0, b0)]))


# ---- scaled_dot_product_attention -------------------------------------------------------------------------------
def sdpa_pair(shape_q, shape_k, shape_v, dtype="float32"):
    return [both(rand(s, dtype), dtype) for s in (shape_q, shape_k, shape_v)]


@pytest.mark.parametrize("shapes", [((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)),
                                    ((4, 8), (4, 8), (4, 8)), ((1, 5, 8), (1, 3, 8), (1, 3, 2))])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(shapes, causal):
    (iq, tq), (ik, tk), (iv, tv) = sdpa_pair(*shapes)
    check(IF.scaled_dot_product_attention(iq, ik, iv, is_causal=causal),
          TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal))
    check(IF.scaled_dot_product_attention(iq, ik, iv, is_causal=causal, scale=0.3),
          TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal, scale=0.3))


@pytest.mark.parametrize("L,S", [(4, 5), (5, 5)])
def test_sdpa_masks(L, S):
    (iq, tq), (ik, tk), (iv, tv) = sdpa_pair((2, 2, L, 8), (2, 2, S, 8), (2, 2, S, 3))
    bm = RNG.random((L, S)) > 0.4
    bm[2] = False  # a fully masked row gives zeros
    ib, tb = both(bm)
    check(IF.scaled_dot_product_attention(iq, ik, iv, attn_mask=ib),
          TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tb))
    fm = rand((2, 1, L, S))
    ifm, tfm = both(fm)
    check(IF.scaled_dot_product_attention(iq, ik, iv, ifm),
          TF.scaled_dot_product_attention(tq, tk, tv, tfm))


def test_sdpa_numpy_reference_gqa_dtypes():
    q, k, v = rand((3, 4), "float64"), rand((5, 4), "float64"), rand((5, 2), "float64")
    s = q @ k.T / 2.0
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v
    got = IF.scaled_dot_product_attention(*[ignis.from_numpy(a) for a in (q, k, v)])
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    (iq, tq), (ik, tk), (iv, tv) = sdpa_pair((1, 4, 3, 8), (1, 2, 5, 8), (1, 2, 5, 8))
    check(IF.scaled_dot_product_attention(iq, ik, iv, enable_gqa=True),
          TF.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True))
    for dtype in ["float16", "bfloat16"]:
        (iq, tq), (ik, tk), (iv, tv) = sdpa_pair((2, 3, 8), (2, 3, 8), (2, 3, 8), dtype)
        check(IF.scaled_dot_product_attention(iq, ik, iv),
              TF.scaled_dot_product_attention(tq, tk, tv), rtol=TOL[dtype][0] * 2,
              atol=TOL[dtype][1] * 2)


def test_sdpa_dropout_and_errors():
    (iq, _), (ik, _), (iv, _) = sdpa_pair((2, 6, 8), (2, 6, 8), (2, 6, 8))
    out = IF.scaled_dot_product_attention(iq, ik, iv, dropout_p=0.5)
    assert tuple(out.shape) == (2, 6, 8) and np.isfinite(out.numpy()).all()
    with pytest.raises(RuntimeError, match="same dtype"):
        IF.scaled_dot_product_attention(iq, ik, iv.double())
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        IF.scaled_dot_product_attention(ignis.ones(4), ignis.ones(4), ignis.ones(4))
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        IF.scaled_dot_product_attention(iq, ik, iv, attn_mask=ignis.ones(6, 6, dtype=ignis.int64))
    with pytest.raises(RuntimeError, match="Number of heads"):
        IF.scaled_dot_product_attention(ignis.ones(1, 3, 2, 4), ignis.ones(1, 2, 2, 4),
                                        ignis.ones(1, 2, 2, 4), enable_gqa=True)
