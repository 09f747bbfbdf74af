"""torch's top-level functions that ignis adds in _more_functions.py and
_nn_top_level.py (and their Tensor methods, ignis.special's Bessel
functions, set_printoptions), each against torch on the same NumPy inputs:
values, dtypes, shapes, gradients, and torch's exception types."""
import math
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)


def _name(dtype):
    return str(dtype).split(".")[-1]


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def both(a, requires_grad=False):
    """The same array as an ignis and a torch tensor."""
    a = np.array(a)
    i, t = ignis.tensor(a), torch.tensor(a)
    if requires_grad:
        i.requires_grad_(True)
        t.requires_grad_(True)
    return i, t


def same(i, t, rtol=1e-6, atol=1e-7):
    assert _name(i.dtype) == _name(t.dtype), (i.dtype, t.dtype)
    assert tuple(i.shape) == tuple(t.shape), (i.shape, t.shape)
    np.testing.assert_allclose(_np(i).astype(np.float64), _np(t).astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def same_grads(pairs, rtol=1e-5, atol=1e-6):
    for i, t in pairs:
        assert (i.grad is None) == (t.grad is None)
        if t.grad is not None:
            same(i.grad, t.grad, rtol, atol)


# ---- torch's top-level nn functions ---------------------------------------------------------
NN_CASES = [
    ("conv1d", [(2, 3, 9), (4, 3, 3), (4,)], dict(stride=2, padding=1)),
    ("conv2d", [(2, 3, 6, 6), (4, 3, 3, 3), (4,)], dict(padding=1, dilation=1)),
    ("conv3d", [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)], dict()),
    ("conv_transpose1d", [(2, 3, 5), (3, 2, 3)], dict(stride=2, output_padding=1)),
    ("conv_transpose2d", [(1, 3, 4, 4), (3, 2, 3, 3), (2,)], dict(stride=2)),
    ("conv_transpose3d", [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)], dict()),
    ("max_pool1d", [(2, 3, 9)], dict(kernel_size=3)),
    ("max_pool2d", [(2, 3, 7, 7)], dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("max_pool2d", [(1, 2, 6, 6)], dict(kernel_size=2, stride=[])),
    ("max_pool3d", [(1, 2, 4, 4, 4)], dict(kernel_size=2)),
    ("avg_pool1d", [(2, 3, 8)], dict(kernel_size=3, stride=2, padding=1,
                                     count_include_pad=False)),
    ("adaptive_avg_pool1d", [(2, 3, 10)], dict(output_size=4)),
    ("pixel_shuffle", [(1, 8, 3, 3)], dict(upscale_factor=2)),
    ("pixel_unshuffle", [(1, 2, 4, 4)], dict(downscale_factor=2)),
    ("channel_shuffle", [(1, 6, 2, 2)], dict(groups=3)),
    ("selu", [(3, 4)], dict()),
    ("celu", [(3, 4)], dict(alpha=0.7)),
    ("threshold", [(3, 4)], dict(threshold=0.1, value=-2.0)),
    ("rrelu", [(3, 4)], dict(lower=0.1, upper=0.3)),
    ("hardshrink", [(3, 4)], dict(lambd=0.4)),
    ("bilinear", [(3, 4), (3, 5), (2, 4, 5), (2,)], dict()),
    ("pairwise_distance", [(3, 4), (3, 4)], dict(p=1.5, keepdim=True)),
]


@pytest.mark.parametrize("name,shapes,kwargs", NN_CASES, ids=[c[0] for c in NN_CASES])
def test_nn_top_level_values_and_grads(name, shapes, kwargs):
    arrays = [RNG.standard_normal(s) for s in shapes]
    pairs = [both(a, requires_grad=True) for a in arrays]
    i_out = getattr(ignis, name)(*[p[0] for p in pairs], **kwargs)
    t_out = getattr(torch, name)(*[p[1] for p in pairs], **kwargs)
    same(i_out, t_out, rtol=1e-5, atol=1e-6)
    w = RNG.standard_normal(tuple(t_out.shape))
    (i_out * ignis.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    same_grads(pairs)


def test_adaptive_max_pool1d_returns_values_and_indices():
    i, t = both(RNG.standard_normal((2, 3, 10)))
    iv, ii = ignis.adaptive_max_pool1d(i, 4)
    tv, ti = torch.adaptive_max_pool1d(t, 4)
    same(iv, tv)
    same(ii, ti)
    assert type(ignis.adaptive_max_pool1d(i, 4)) is tuple


def test_in_place_activations_write_their_input():
    a = RNG.standard_normal((3, 5))
    for name, args in [("selu_", ()), ("celu_", (0.5,)), ("threshold_", (0.2, 9.0)),
                       ("rrelu_", (0.1, 0.2))]:
        i, t = both(a)
        ri, rt = getattr(ignis, name)(i, *args), getattr(torch, name)(t, *args)
        assert ri is i
        same(i, t)
        same(ri, rt)


def test_dropouts_in_eval_mode_are_identity_and_train_statistics():
    a = RNG.standard_normal((4, 6, 3, 3))
    i, t = both(a)
    for name in ("alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        same(getattr(ignis, name)(i, 0.5, False), getattr(torch, name)(t, 0.5, False))
        assert getattr(ignis, name + "_")(i, 0.5, False) is i
    ignis.manual_seed(0)
    x = ignis.ones(64, 32, 2, 2)
    y = ignis.feature_dropout(x, 0.25, True)
    per_channel = y.reshape(64, 32, 4)
    # every feature map is wholly kept (scaled by 1/(1-p)) or wholly dropped
    assert bool(((per_channel == 0).all(-1) | (per_channel == 1 / 0.75).all(-1)).all())
    kept = float((per_channel[..., 0] != 0).float().mean())
    assert 0.65 < kept < 0.85
    with pytest.raises(RuntimeError):
        ignis.feature_dropout(ignis.ones(5), 0.5, True)
    z = ignis.alpha_dropout(ignis.ones(1000), 0.5, True)
    assert not bool((z == 1).all())


def test_normalizations_in_torch_top_level_argument_order():
    a = RNG.standard_normal((4, 3, 5))
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    (xi, xt), (wi, wt), (bi, bt) = both(a, True), both(w, True), both(b, True)
    rmi, rmt = both(np.zeros(3))
    rvi, rvt = both(np.ones(3))
    oi = ignis.batch_norm(xi, wi, bi, rmi, rvi, True, 0.1, 1e-5, False)
    ot = torch.batch_norm(xt, wt, bt, rmt, rvt, True, 0.1, 1e-5, False)
    same(oi, ot, 1e-5, 1e-6)
    same(rmi, rmt)
    same(rvi, rvt)
    oi.sum().backward()
    ot.sum().backward()
    same_grads([(xi, xt), (wi, wt), (bi, bt)])
    same(ignis.batch_norm(xi, wi, bi, rmi, rvi, False, 0.1, 1e-5, False),
         torch.batch_norm(xt, wt, bt, rmt, rvt, False, 0.1, 1e-5, False), 1e-5, 1e-6)
    g = RNG.standard_normal((2, 6, 4))
    wg, bg = RNG.standard_normal(6), RNG.standard_normal(6)
    same(ignis.group_norm(ignis.tensor(g), 3, ignis.tensor(wg), ignis.tensor(bg)),
         torch.group_norm(torch.tensor(g), 3, torch.tensor(wg), torch.tensor(bg)), 1e-5, 1e-6)
    same(ignis.group_norm(ignis.tensor(g), 2), torch.group_norm(torch.tensor(g), 2), 1e-5, 1e-6)
    same(ignis.instance_norm(xi, wi, bi, None, None, True, 0.1, 1e-5, False),
         torch.instance_norm(xt, wt, bt, None, None, True, 0.1, 1e-5, False), 1e-5, 1e-6)
    same(ignis.layer_norm(xi, [5]), torch.layer_norm(xt, [5]), 1e-5, 1e-6)


# ---- predicates and settings ---------------------------------------------------------------
def test_predicates():
    for a in (np.zeros(()), np.ones((2, 3), np.int32), np.array([], np.uint8),
              np.array([True])):
        i, t = both(a)
        assert ignis.is_complex(i) is torch.is_complex(t) is False
        assert i.is_complex() is False
        assert ignis.is_signed(i) == torch.is_signed(t)
        assert i.is_signed() == t.is_signed()
        assert ignis.is_conj(i) == torch.is_conj(t)
        assert ignis.is_neg(i) == torch.is_neg(t)
    for v in (0.0, 3.0, -1, True, False):
        i, t = both(np.array([v]))
        assert ignis.is_nonzero(i) == torch.is_nonzero(t)
        assert i.is_nonzero() == t.is_nonzero()
    for a in (np.zeros(0), np.zeros(2)):
        i, t = both(a)
        with pytest.raises(RuntimeError) as ei:
            ignis.is_nonzero(i)
        with pytest.raises(RuntimeError) as et:
            torch.is_nonzero(t)
        assert str(ei.value) == str(et.value)
    (ai, at), (bi, bt), (ci, ct) = both(np.zeros((2, 3))), both(np.ones((2, 3))), both(np.ones(6))
    assert ignis.is_same_size(ai, bi) == torch.is_same_size(at, bt)
    assert ai.is_same_size(ci) == at.is_same_size(ct)
    with pytest.raises(TypeError):
        ignis.is_complex([1.0])


RESULT_TYPE_CASES = [
    ((np.int32, 1), (np.float64, 0)), ((np.int32, 1), 1.0), ((np.float16, 1), 1.0),
    ((np.uint8, 0), -1), (True, (np.int8, 1)), (1, 2.0), (2, 3), ((np.int64, 0), (np.int8, 1)),
    ((np.float64, 0), (np.float32, 1)), ((np.bool_, 1), 2.5), ((np.int16, 1), (np.uint8, 1)),
    ((np.bool_, 0), (np.bool_, 1)), ((np.int32, 0), 1.5),
]


def _operand(spec, lib):
    if isinstance(spec, tuple):
        dtype, nd = spec
        return lib.tensor(np.ones((2,) * nd, dtype=dtype))
    return spec


@pytest.mark.parametrize("a,b", RESULT_TYPE_CASES)
def test_result_type(a, b):
    ri = ignis.result_type(_operand(a, ignis), _operand(b, ignis))
    rt = torch.result_type(_operand(a, torch), _operand(b, torch))
    assert _name(ri) == _name(rt)


def test_deterministic_and_device_settings():
    try:
        assert ignis.are_deterministic_algorithms_enabled() is False
        ignis.use_deterministic_algorithms(True, warn_only=True)
        assert ignis.are_deterministic_algorithms_enabled() is True
        assert ignis.is_deterministic_algorithms_warn_only_enabled() is True
        ignis.use_deterministic_algorithms(True)
        assert ignis.is_deterministic_algorithms_warn_only_enabled() is False
    finally:
        ignis.use_deterministic_algorithms(False)
    assert ignis.are_deterministic_algorithms_enabled() is False
    assert str(ignis.get_default_device()) == str(torch.get_default_device()) == "cpu"
    ignis.set_default_device("cpu")
    ignis.set_default_device(None)
    with pytest.raises(NotImplementedError):
        ignis.set_default_device("cuda")
    assert ignis.set_flush_denormal(False) is False


def test_typename():
    i, t = both(np.ones(2, np.float32))
    assert ignis.typename(i) == torch.typename(t).replace("torch.", "ignis.")
    i, t = both(np.ones(2, np.int64))
    assert ignis.typename(i) == torch.typename(t).replace("torch.", "ignis.")
    for obj in (3, "s", [1], math.sqrt, np.float64(1.0), ValueError, ValueError("x")):
        assert ignis.typename(obj) == torch.typename(obj)


def test_set_printoptions_matches_torch_text():
    data = [np.linspace(-3, 3, 7), RNG.standard_normal((4, 12)) * 1e3,
            np.arange(30, dtype=np.float64), np.array([1e-5, 1.0, 123.456]),
            np.array([1.0, 2.0, 1e9]), RNG.standard_normal((50, 50))]
    settings = [dict(precision=2), dict(sci_mode=True), dict(sci_mode=False, precision=6),
                dict(threshold=5, edgeitems=2), dict(linewidth=40), dict(profile="short"),
                dict(profile="full", linewidth=120)]
    try:
        for s in settings:
            ignis.set_printoptions(**s)
            torch.set_printoptions(**s)
            for a in data:
                if s.get("profile") == "full" and a.size > 100:
                    continue
                i, t = both(a.astype(np.float32))
                assert repr(i).replace("ignis", "torch") == repr(t), s
            ignis.set_printoptions(profile="default")
            torch.set_printoptions(profile="default")
    finally:
        ignis.set_printoptions(profile="default", sci_mode=None)
        torch.set_printoptions(profile="default", sci_mode=None)
    i, t = both(np.array([0.5, 2.0]))
    assert repr(i).replace("ignis", "torch") == repr(t)


# ---- complex-number functions on real tensors ----------------------------------------------------
def test_real_imag_conj_detach():
    i, t = both(RNG.standard_normal(3), requires_grad=True)
    assert ignis.real(i) is i and torch.real(t) is t
    assert i.real is i
    assert ignis.conj(i) is i and torch.conj(t) is t
    assert ignis.conj_physical(i) is i and torch.conj_physical(t) is t
    same(ignis.conj_physical(i), torch.conj_physical(t))
    same(i.conj(), t.conj())
    for fn in (lambda x, lib: lib.imag(x), lambda x, lib: x.imag):
        with pytest.raises(RuntimeError) as ei:
            fn(i, ignis)
        with pytest.raises(RuntimeError) as et:
            fn(t, torch)
        assert str(ei.value) == str(et.value)
    d = ignis.detach(i)
    assert not d.requires_grad and torch.detach(t).requires_grad is False
    same(d, t.detach())


@pytest.mark.parametrize("a", [
    np.array([-0.0, 0.0, -1.5, 2.0, np.nan, -np.inf, np.inf]),
    np.array([-3, 0, 4], np.int64), np.array([True, False]), np.zeros((0, 2)),
    np.array(-2.0, np.float32)])
def test_angle(a):
    i, t = both(a)
    same(ignis.angle(i), torch.angle(t))
    same(i.angle(), t.angle())


def test_angle_gradient_is_zero():
    i, t = both(RNG.standard_normal(5), requires_grad=True)
    ignis.angle(i).sum().backward()
    torch.angle(t).sum().backward()
    same_grads([(i, t)])


# ---- integer math ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.uint8])
def test_gcd_lcm(dtype):
    lo = 0 if dtype == np.uint8 else -30
    a = RNG.integers(lo, 30, (6, 5)).astype(dtype)
    b = RNG.integers(lo, 30, (5,)).astype(dtype)
    a[0, :2] = 0
    b[0] = 0
    (ai, at), (bi, bt) = both(a), both(b)
    same(ignis.gcd(ai, bi), torch.gcd(at, bt))
    same(ignis.lcm(ai, bi), torch.lcm(at, bt))
    same(ai.gcd(bi), at.gcd(bt))
    same(ai.lcm(bi), at.lcm(bt))
    ci, ct = both(a)
    assert ci.gcd_(bi) is ci
    ct.gcd_(bt)
    same(ci, ct)
    ci, ct = both(a)
    ignis.lcm_(ci, bi)
    torch.lcm_(ct, bt)
    same(ci, ct)


def test_gcd_mixed_dtypes_and_errors():
    (ai, at), (bi, bt) = both(np.array([12, -18], np.int32)), both(np.array([8, 12], np.int64))
    same(ignis.gcd(ai, bi), torch.gcd(at, bt))
    fi, ft = both(np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        torch.gcd(ft, ft)
    with pytest.raises(RuntimeError):
        ignis.gcd(fi, fi)
    e = ignis.tensor(np.zeros(0, np.int64))
    assert ignis.gcd(e, e).shape == (0,)


# ---- floating-point representation -------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frexp(dtype):
    a = np.concatenate([RNG.standard_normal(20) * 10.0 ** RNG.integers(-30, 30, 20),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.5, -2.0, 1024.0,
                         np.finfo(dtype).tiny / 8, np.finfo(dtype).max,
                         np.nextafter(dtype(1), dtype(2))]]).astype(dtype)
    i, t = both(a)
    mi, ei = ignis.frexp(i)
    mt, et = torch.frexp(t)
    same(mi, mt, 0, 0)
    same(ei, et, 0, 0)
    r = i.frexp()
    assert type(r).__name__ == "frexp" and r._fields == ("mantissa", "exponent")
    with pytest.raises(RuntimeError):
        ignis.frexp(ignis.tensor([1, 2]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter(dtype):
    tiny = np.finfo(dtype).tiny
    x = np.array([1.0, 1.0, 0.0, 0.0, -1.0, 2.0, 2.0, 0.5, 3.0, np.nan, 1.0, -0.0, tiny,
                  -tiny, np.inf, 1e30, -4.0, 7.25], dtype)
    y = np.array([2.0, 0.0, 1.0, -1.0, 0.0, 0.0, 3.0, 0.0, 3.0, 1.0, np.nan, 1.0, 0.0,
                  -1.0, 0.0, np.inf, -np.inf, -1.0], dtype)
    (xi, xt), (yi, yt) = both(x), both(y)
    same(ignis.nextafter(xi, yi), torch.nextafter(xt, yt), 0, 0)
    same(xi.nextafter(yi), xt.nextafter(yt), 0, 0)
    xi.nextafter_(yi)
    xt.nextafter_(yt)
    same(xi, xt, 0, 0)


# ---- Bessel functions ----------------------------------------------------------------------------
BESSEL_X = np.concatenate([np.linspace(-60, 60, 121), [0.0, 1e-8, -1e-3, 39.9, 40.0, 40.1,
                                                       -40.1, 100.0, 700.0, 720.0, np.nan]])


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_values(name):
    i, t = both(BESSEL_X)
    ri = getattr(ignis.special, name)(i)
    rt = getattr(torch.special, name)(t)
    same(ri, rt, rtol=1e-13, atol=1e-300)
    i32, t32 = both(BESSEL_X.astype(np.float32)[np.abs(BESSEL_X) < 80])
    same(getattr(ignis.special, name)(i32), getattr(torch.special, name)(t32), rtol=2e-6)


def test_bessel_top_level_integer_input_and_gradients():
    same(ignis.i0(ignis.tensor([0, 1, 5])), torch.i0(torch.tensor([0, 1, 5])), 1e-6)
    x = np.array([-50.0, -3.0, -0.5, 0.0, 0.7, 2.0, 45.0])
    for name in ("i0", "i0e", "i1", "i1e"):
        i, t = both(x, requires_grad=True)
        getattr(ignis.special, name)(i).sum().backward()
        getattr(torch.special, name)(t).sum().backward()
        same_grads([(i, t)], rtol=1e-10, atol=1e-12)
    i, t = both(x)
    same(i.i0(), t.i0(), 1e-13)
    i.i0_()
    t.i0_()
    same(i, t, 1e-13)


# ---- windows, range --------------------------------------------------------------------------------
@pytest.mark.parametrize("name,extra", [("hann_window", {}), ("hamming_window", {}),
                                        ("hamming_window", {"alpha": 0.5, "beta": 0.3}),
                                        ("blackman_window", {}), ("bartlett_window", {}),
                                        ("kaiser_window", {}), ("kaiser_window", {"beta": 3.5})])
@pytest.mark.parametrize("n", [0, 1, 2, 5, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, extra, n, periodic):
    wi = getattr(ignis, name)(n, periodic, **extra)
    wt = getattr(torch, name)(n, periodic, **extra)
    same(wi, wt, 1e-6, 1e-6)
    wi = getattr(ignis, name)(n, periodic, dtype=ignis.float64, **extra)
    wt = getattr(torch, name)(n, periodic, dtype=torch.float64, **extra)
    same(wi, wt, 1e-12, 1e-12)


def test_window_defaults_and_errors():
    same(ignis.hann_window(8), torch.hann_window(8))
    assert ignis.hann_window(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError):
        torch.hann_window(4, dtype=torch.int64)
    with pytest.raises(RuntimeError):
        ignis.hann_window(4, dtype=ignis.int64)


@pytest.mark.parametrize("args,kwargs", [((1, 4), {}), ((0, 1, 0.1), {}), ((5, 1, -1.5), {}),
                                         ((1, 4), {"dtype": "int64"}), ((-2.5, 3), {}),
                                         ((0, 0), {}), ((1, 2, 0.3), {"dtype": "float64"})])
def test_range(args, kwargs):
    ki = {k: getattr(ignis, v) for k, v in kwargs.items()}
    kt = {k: getattr(torch, v) for k, v in kwargs.items()}
    with warnings.catch_warnings(record=True) as wi:
        warnings.simplefilter("always")
        ri = ignis.range(*args, **ki)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rt = torch.range(*args, **kt)
    assert any(issubclass(w.category, UserWarning) for w in wi)
    same(ri, rt, 1e-6, 1e-6)
    with pytest.raises(TypeError):
        ignis.range(3)
    with pytest.raises(RuntimeError):
        ignis.range(0, 3, 0)


# ---- stacking and splitting ------------------------------------------------------------------------
def test_row_stack_and_splits():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    (ai, at), (bi, bt) = both(a), both(b)
    same(ignis.row_stack([ai, bi]), torch.row_stack([at, bt]))
    x = RNG.standard_normal((7, 4))
    xi, xt = both(x, requires_grad=True)
    for fi, ft in [(lambda v: ignis.split_with_sizes(v, [2, 0, 5]),
                    lambda v: torch.split_with_sizes(v, [2, 0, 5])),
                   (lambda v: v.split_with_sizes([1, 3], 1), lambda v: v.split_with_sizes([1, 3], 1)),
                   (lambda v: ignis.unsafe_split(v, 3), lambda v: torch.unsafe_split(v, 3)),
                   (lambda v: v.unsafe_split(2, 1), lambda v: v.unsafe_split(2, 1)),
                   (lambda v: ignis.unsafe_chunk(v, 3, 1), lambda v: torch.unsafe_chunk(v, 3, 1)),
                   (lambda v: v.unsafe_chunk(4), lambda v: v.unsafe_chunk(4))]:
        pi, pt = fi(xi), ft(xt)
        assert type(pi) is type(pt) and len(pi) == len(pt)
        for p, q in zip(pi, pt):
            same(p, q)
    sum(p.sum() * k for k, p in enumerate(ignis.split_with_sizes(xi, [3, 4]))).backward()
    sum(p.sum() * k for k, p in enumerate(torch.split_with_sizes(xt, [3, 4]))).backward()
    same_grads([(xi, xt)])
    with pytest.raises(TypeError):
        torch.unsafe_split(xt, [3, 4])
    with pytest.raises(TypeError):
        ignis.unsafe_split(xi, [3, 4])
    with pytest.raises(RuntimeError):
        torch.split_with_sizes(xt, [2, 2])
    with pytest.raises(RuntimeError):
        ignis.split_with_sizes(xi, [2, 2])


def test_frombuffer():
    buf = bytearray(np.arange(10, dtype=np.float32).tobytes())
    for kwargs in ({}, {"count": 3}, {"offset": 8}, {"count": 2, "offset": 4}):
        ti = ignis.frombuffer(buf, dtype=ignis.float32, **kwargs)
        tt = torch.frombuffer(buf, dtype=torch.float32, **kwargs)
        same(ti, tt, 0, 0)
    ti = ignis.frombuffer(buf, dtype=ignis.float32)
    ti[0] = 42.0  # shares the buffer's memory
    assert np.frombuffer(buf, np.float32)[0] == 42.0
    assert _name(ignis.frombuffer(buf, dtype=ignis.int16).dtype) == "int16"
    for kwargs in ({"count": 0}, {"offset": 100}, {"count": 20}, {"offset": 3}):
        with pytest.raises(ValueError):
            torch.frombuffer(buf, dtype=torch.float32, **kwargs)
        with pytest.raises(ValueError):
            ignis.frombuffer(buf, dtype=ignis.float32, **kwargs)


# ---- mode, histogram -------------------------------------------------------------------------------
@pytest.mark.parametrize("a,dim,keepdim", [
    (np.array([3, 1, 1, 2, 2, 5, 3]), -1, False),
    (np.array([[2, 1, 1, 2], [0, 7, 7, 0]]), 1, True),
    (RNG.integers(0, 4, (5, 6, 7)), 1, False),
    (RNG.integers(0, 3, (4, 9)).astype(np.float32), 0, False),
    (RNG.integers(-2, 2, (3, 8)).astype(np.int32), -1, True),
    (np.array(4.0), 0, False),
    (np.array([1.5]), 0, False)])
def test_mode(a, dim, keepdim):
    i, t = both(a)
    vi, ii = ignis.mode(i, dim, keepdim)
    vt, it = torch.mode(t, dim, keepdim)
    same(vi, vt, 0, 0)
    same(ii, it, 0, 0)
    r = i.mode(dim)
    assert type(r).__name__ == "mode" and r._fields == ("values", "indices")


def test_mode_gradient():
    a = np.array([[1.0, 2.0, 2.0, 3.0], [4.0, 4.0, 5.0, 6.0]])
    i, t = both(a, requires_grad=True)
    ignis.mode(i, 1).values.sum().backward()
    torch.mode(t, 1).values.sum().backward()
    same_grads([(i, t)])


@pytest.mark.parametrize("bins,kwargs", [
    (5, {}), (4, {"range": (-1.0, 1.0)}), (7, {"density": True}),
    (3, {"weight": True}), (6, {"weight": True, "density": True}),
    ("tensor", {}), ("tensor", {"density": True, "weight": True})])
def test_histogram(bins, kwargs):
    a = RNG.standard_normal((4, 25))
    i, t = both(a)
    kwi, kwt = dict(kwargs), dict(kwargs)
    if kwargs.get("weight"):
        w = RNG.uniform(0, 2, a.shape)
        kwi["weight"], kwt["weight"] = both(w)
    if bins == "tensor":
        edges = np.array([-3.0, -1.0, -0.2, 0.0, 0.5, 2.5])
        bi, bt = both(edges)
    else:
        bi = bt = bins
    hi, ei = ignis.histogram(i, bi, **kwi)
    ht, et = torch.histogram(t, bt, **kwt)
    same(hi, ht, 1e-12, 1e-12)
    same(ei, et, 1e-12, 1e-12)
    r = i.histogram(bi, **kwi)
    assert type(r).__name__ == "histogram" and r._fields == ("hist", "bin_edges")


def test_histogram_edge_cases():
    for a in (np.ones(3), np.array([2.0, 2.0, 5.0]), np.zeros(0)):
        i, t = both(a.astype(np.float32))
        hi, ei = ignis.histogram(i, 3)
        ht, et = torch.histogram(t, 3)
        same(hi, ht)
        same(ei, et)
    with pytest.raises(RuntimeError):
        torch.histogram(torch.tensor([1, 2]), 3)
    with pytest.raises(RuntimeError):
        ignis.histogram(ignis.tensor([1, 2]), 3)


# ---- put, index_reduce -----------------------------------------------------------------------------
@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    a = RNG.standard_normal((3, 4))
    idx = np.array([[0, -1], [5, 7]]) if not accumulate else np.array([1, 1, -12, 11, 5])
    src = RNG.standard_normal(idx.shape)
    (ai, at), (si, st) = both(a, True), both(src, True)
    ii, it = both(idx)
    ri, rt = ignis.put(ai, ii, si, accumulate), torch.put(at, it, st, accumulate)
    same(ri, rt)
    w = RNG.standard_normal(a.shape)
    (ri * ignis.tensor(w)).sum().backward()
    (rt * torch.tensor(w)).sum().backward()
    same_grads([(ai, at), (si, st)])
    ci, ct = both(a)
    assert ci.put_(ii, ignis.tensor(src), accumulate) is ci
    ct.put_(it, torch.tensor(src), accumulate)
    same(ci, ct)
    same(ai.detach().put(ii, si.detach(), accumulate), at.detach().put(it, st.detach(), accumulate))
    with pytest.raises(IndexError):
        torch.put(at.detach(), torch.tensor([12]), torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(IndexError):
        ignis.put(ai.detach(), ignis.tensor([12]), ignis.tensor([1.0], dtype=ignis.float64))
    with pytest.raises(RuntimeError):
        ignis.put(ai.detach(), ignis.tensor([1]), ignis.tensor([1.0], dtype=ignis.float32))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(reduce, include_self, dim):
    a = RNG.standard_normal((5, 4))
    src = RNG.standard_normal((6, 4) if dim == 0 else (5, 6))
    idx = np.array([0, 2, 2, 3, 0, 2]) if dim == 0 else np.array([3, 1, 1, 0, 3, 3])
    (ai, at), (si, st) = both(a, True), both(src, True)
    ii, it = both(idx)
    ri = ignis.index_reduce(ai, dim, ii, si, reduce, include_self=include_self)
    rt = torch.index_reduce(at, dim, it, st, reduce, include_self=include_self)
    same(ri, rt, 1e-12, 1e-12)
    w = RNG.standard_normal(a.shape)
    (ri * ignis.tensor(w)).sum().backward()
    (rt * torch.tensor(w)).sum().backward()
    same_grads([(ai, at), (si, st)], 1e-10, 1e-12)
    ci, ct = both(a)
    assert ci.index_reduce_(dim, ii, ignis.tensor(src), reduce, include_self=include_self) is ci
    ct.index_reduce_(dim, it, torch.tensor(src), reduce, include_self=include_self)
    same(ci, ct, 1e-12, 1e-12)


def test_index_reduce_integer_and_errors():
    a = np.arange(12).reshape(3, 4)
    (ai, at), (si, st) = both(a), both(np.arange(8).reshape(2, 4) + 1)
    ii, it = both(np.array([2, 2]))
    for red in ("prod", "amax", "mean"):
        same(ai.index_reduce(0, ii, si, red), at.index_reduce(0, it, st, red))
    with pytest.raises(RuntimeError):
        torch.index_reduce(at, 0, it, st, "sum")
    with pytest.raises(RuntimeError):
        ignis.index_reduce(ai, 0, ii, si, "sum")


# ---- gradient ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kwargs", [
    ((7,), {}), ((7,), {"edge_order": 2}), ((5, 6), {}), ((5, 6), {"spacing": 0.5}),
    ((5, 6), {"spacing": [2.0, 0.25], "edge_order": 2}), ((4, 5, 3), {"dim": 1}),
    ((4, 5, 3), {"dim": [0, -1], "edge_order": 2}), ((5, 6), {"spacing": "coords"}),
    ((5, 6), {"spacing": "coords", "edge_order": 2}),
    ((6, 4), {"spacing": "coords", "dim": 0})])
def test_gradient(shape, kwargs):
    a = RNG.standard_normal(shape)
    i, t = both(a, requires_grad=True)
    kwi, kwt = dict(kwargs), dict(kwargs)
    if kwargs.get("spacing") == "coords":
        dims = kwargs.get("dim", list(range(len(shape))))
        dims = [dims] if isinstance(dims, int) else dims
        coords = [np.sort(RNG.uniform(0, 5, shape[d])) + np.arange(shape[d]) for d in dims]
        kwi["spacing"] = [ignis.tensor(c) for c in coords]
        kwt["spacing"] = [torch.tensor(c) for c in coords]
    gi, gt = ignis.gradient(i, **kwi), torch.gradient(t, **kwt)
    assert type(gi) is tuple and len(gi) == len(gt)
    for p, q in zip(gi, gt):
        same(p, q, 1e-10, 1e-12)
    sum(p.sum() * (k + 1) for k, p in enumerate(gi)).backward()
    sum(p.sum() * (k + 1) for k, p in enumerate(gt)).backward()
    same_grads([(i, t)], 1e-10, 1e-12)


def test_gradient_integer_input_and_errors():
    i, t = both(np.array([1, 4, 9, 16, 25]))
    same(ignis.gradient(i)[0], torch.gradient(t)[0])
    i, t = both(np.ones((2, 5)))
    with pytest.raises(RuntimeError):
        torch.gradient(t, edge_order=2)
    with pytest.raises(RuntimeError):
        ignis.gradient(i, edge_order=2)
    with pytest.raises(RuntimeError):
        ignis.gradient(i, edge_order=3)


def test_tensor_methods_match_torch():
    for name in ("angle", "conj", "conj_physical", "conj_physical_", "frexp", "gcd", "gcd_", "lcm",
                 "lcm_", "histogram", "i0", "i0_", "index_reduce", "index_reduce_",
                 "is_complex", "is_conj", "is_neg", "is_nonzero", "is_same_size", "is_signed",
                 "mode", "nextafter", "nextafter_", "put", "put_", "split_with_sizes",
                 "unsafe_chunk", "unsafe_split", "hardshrink", "real", "imag"):
        assert hasattr(torch.Tensor, name)
        assert hasattr(ignis.Tensor, name), name
    i, t = both(RNG.standard_normal(6))
    same(i.hardshrink(0.3), t.hardshrink(0.3))
    assert IF.hardshrink is not None


def test_top_level_functions_are_one_graph_under_compile():
    # torch's top-level functions written in Python are graph calls to
    # capture, as ignis._functions' are (tracer_calls.cpp): no graph break.
    w = ignis.randn(4, 3, 3, 3)

    def f(x):
        y = ignis.conv2d(x, w, padding=1)
        y = ignis.max_pool2d(y, 2) + ignis.selu(y).mean()
        z = ignis.hann_window(8) * ignis.i0(x.flatten()[:8])
        return y.sum() + z.sum() + (0.0 if ignis.is_complex(x) else 1.0), ignis.result_type(x, 2.0)

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = ignis.randn(1, 3, 8, 8)
    got, want = ignis.compile(f, backend=backend)(x), f(x)
    assert len(graphs) == 1
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-6)
    assert got[1] == want[1] == ignis.float32


# ---- in-place forms and small Tensor methods of functions made of ops ----------------------
IN_PLACE_CASES = [
    ("addmm_", lambda L: (L.ones(2, 4), L.ones(4, 3))), ("addbmm_", lambda L: (L.ones(2, 2, 4), L.ones(2, 4, 3))),
    ("addmv_", lambda L: (L.ones(3, 4), L.ones(4))),
    ("addr_", lambda L: (L.ones(2), L.ones(3))), ("baddbmm_", lambda L: (L.ones(1, 2, 4), L.ones(1, 4, 3))),
    ("deg2rad_", lambda L: ()), ("rad2deg_", lambda L: ()), ("sinc_", lambda L: ()),
    ("sgn_", lambda L: ()), ("logit_", lambda L: (0.1,)), ("xlogy_", lambda L: (2.0,)),
    ("heaviside_", lambda L: (L.tensor(0.5),)), ("mvlgamma_", lambda L: (2,)),
    ("float_power_", lambda L: (2,)), ("swapaxes_", lambda L: (0, 1)), ("swapdims_", lambda L: (1, 0)),
]


@pytest.mark.parametrize("name,args", IN_PLACE_CASES, ids=[c[0] for c in IN_PLACE_CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_in_place_forms_match_torch(name, args, dtype):
    a = np.abs(RNG.standard_normal((2, 3))) + 1.5
    if name == "addmv_":
        a = a[0]
    elif name == "baddbmm_":
        a = a[None]
    outs = []
    for lib in (ignis, torch):
        x = lib.tensor(a).to(getattr(lib, dtype))
        targs = tuple(t.to(x.dtype) if isinstance(t, lib.Tensor) else t for t in args(lib))
        try:
            r = getattr(x, name)(*targs)
            outs.append((r is x, x))
        except Exception as e:  # noqa: BLE001 - compared below
            outs.append((type(e), str(e)))
    (i_same, i), (t_same, t) = outs
    if isinstance(t, str):  # torch refuses (an integer self for a float result): the same type
        assert i_same is t_same, (i, t)
    else:
        assert i_same and t_same
        same(i, t, rtol=1e-5, atol=1e-6)


def test_small_tensor_methods_match_torch():
    i, t = both(RNG.standard_normal((2, 3)).astype(np.float32))
    for f in (lambda x: x.nbytes, lambda x: x.get_device(), lambda x: x.equal(x),
              lambda x: x.allclose(x + 1e-9), lambda x: x.isclose(x).all().item()):
        assert f(i) == f(t)
    for size in ((1, 3), (3,), (2, 1), ((2, 3),), (1, 1)):
        same(i.sum_to_size(*size), t.sum_to_size(*size))
    for size in ((2, 2), (1, 2, 3)):
        with pytest.raises(RuntimeError) as te:
            t.sum_to_size(*size)
        with pytest.raises(RuntimeError, match=te.value.args[0].replace("[", r"\[").replace(
                "{", r"\{").replace(".", r"\.")):
            i.sum_to_size(*size)
    same((i.abs() + 1).mvlgamma(2), (t.abs() + 1).mvlgamma(2))


def test_settings_and_sym_helpers_match_torch():
    import warnings
    for lib in (ignis, torch):
        assert (lib.sym_max(2, 3), lib.sym_min(2.5, 1), lib.sym_int(2.7), lib.sym_float(2),
                lib.sym_not(True), lib.sym_ite(False, 1, 2), lib.sym_sqrt(4),
                lib.sym_sum([1, 2, 3])) == (3, 1.0, 2, 2.0, False, 2, 2.0, 6)
        assert type(lib.sym_min(2.5, 1)) is float and type(lib.sym_max(2, 3)) is int
        assert lib.get_device(lib.ones(1)) == -1
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled()
        lib.set_warn_always(False)
        n = lib.get_num_interop_threads()
        lib.set_num_interop_threads(n)
        assert lib.get_num_interop_threads() == n
    try:
        for t in (ignis.DoubleTensor, "torch.DoubleTensor"):
            with pytest.warns(UserWarning, match="set_default_tensor_type"):
                ignis.set_default_tensor_type(t)
            assert ignis.get_default_dtype() == ignis.float64 and ignis.ones(1).dtype == ignis.float64
            ignis.set_default_tensor_type(ignis.FloatTensor)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(TypeError, match="only floating-point types"):
                ignis.set_default_tensor_type(ignis.LongTensor)
            with pytest.raises(TypeError, match="only floating-point types"):
                torch.set_default_tensor_type(torch.LongTensor)
    finally:
        ignis.set_default_dtype(ignis.float32)
    assert ignis.get_default_dtype() == ignis.float32


@pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")
def test_numpy_keyword_spellings_match_torch():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x, t = ignis.from_numpy(a), torch.from_numpy(a)
    for ours, theirs in [(x.sum(axis=1), t.sum(axis=1)),
                         (x.mean(axis=-1, keepdims=True), t.mean(axis=-1, keepdims=True)),
                         (ignis.cat([x, x], axis=2), torch.cat([t, t], axis=2)),
                         (x.argmax(axis=0), t.argmax(axis=0)),
                         (ignis.amax(x, axis=(0, 2), keepdims=True),
                          torch.amax(t, axis=(0, 2), keepdims=True))]:
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")
@pytest.mark.parametrize("src, dst", [("float32", "int32"), ("float32", "int16"),
                                      ("int16", "float32"), ("float64", "uint8"),
                                      ("float32", "complex64"), ("complex64", "float64")])
def test_view_as_another_dtype_matches_torch(src, dst):
    a = np.arange(24).astype(src).reshape(2, 3, 4)
    for make in (lambda m, y: y, lambda m, y: y[1:], lambda m, y: y.transpose(0, 1)):
        ours = ours_err = theirs = theirs_err = None
        try:
            ours = make(ignis, ignis.from_numpy(a.copy())).view(getattr(ignis, dst))
        except RuntimeError as e:
            ours_err = str(e)
        try:
            theirs = make(torch, torch.from_numpy(a.copy())).view(getattr(torch, dst))
        except RuntimeError as e:
            theirs_err = str(e)
        assert (ours_err is None) == (theirs_err is None), (ours_err, theirs_err)
        if ours_err is not None:
            assert ours_err.split(" to view")[0] == theirs_err.split(" to view")[0]
            continue
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_setting_data_keeps_the_parameter_and_takes_the_new_values():
    lin = ignis.nn.Linear(3, 2)
    w = lin.weight
    new = ignis.arange(6, dtype=ignis.float64).view(3, 2).t()
    lin.weight.data = new
    assert lin.weight is w and w.requires_grad and w.dtype is ignis.float64
    assert w.shape == (2, 3) and w.stride() == (1, 2)
    np.testing.assert_array_equal(w.detach().numpy(), new.numpy())
    new[0, 0] = 7.0  # shares new's storage, as torch's set_data
    assert w[0, 0].item() == 7.0
    x = ignis.ones(4, 3, dtype=ignis.float64)
    (x @ w.t()).sum().backward()
    assert w.grad.shape == (2, 3)
    with pytest.raises(TypeError):
        w.data = [1.0]
