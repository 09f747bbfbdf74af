"""Pooling (ops/pooling.cpp, kernels/cpu/pooling, nn/_pooling.py) against torch:
max_pool1d/2d (kernel, stride, padding, dilation, ceil_mode, return_indices),
avg_pool1d/2d (count_include_pad, ceil_mode, divisor_override), adaptive
average and max pooling 1d/2d, and the modules; values, indices and input
gradients in float64 and float32, NaN propagation, unbatched input, bad
arguments raising torch's exception type.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

TOL = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}


def _pair(a, dtype="float64", grad=True):
    i = ignis.from_numpy(a.copy()).to(getattr(ignis, dtype))
    t = torch.from_numpy(a.copy()).to(getattr(torch, dtype))
    if grad:
        i.requires_grad_()
        t.requires_grad_()
    return i, t


def _np(t):
    if isinstance(t, ignis.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def _compare(fn, shape, kwargs, dtype="float64", nan=False):
    rng = np.random.default_rng(abs(hash((fn, shape, str(kwargs)))) % 2**32)
    a = rng.standard_normal(shape)
    if nan:
        a.flat[::7] = np.nan
    xi, xt = _pair(a, dtype)
    yi, yt = getattr(IF, fn)(xi, **kwargs), getattr(TF, fn)(xt, **kwargs)
    if isinstance(yt, tuple):
        np.testing.assert_array_equal(_np(yi[1]), _np(yt[1]), err_msg="indices")
        assert yi[1].dtype == ignis.int64
        yi, yt = yi[0], yt[0]
    assert tuple(yi.shape) == tuple(yt.shape)
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_np(yi), _np(yt), rtol=rtol, atol=atol, err_msg="forward")
    if nan:
        return
    g = rng.standard_normal(tuple(yt.shape))
    yi.backward(ignis.from_numpy(g.copy()).to(yi.dtype))
    yt.backward(torch.from_numpy(g.copy()).to(yt.dtype))
    np.testing.assert_allclose(_np(xi.grad), _np(xt.grad), rtol=rtol, atol=atol, err_msg="grad")


MAX2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
    {"kernel_size": 2, "stride": 3, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "return_indices": True},
    {"kernel_size": 2, "dilation": 2, "return_indices": True, "ceil_mode": True},
]


@pytest.mark.parametrize("kw", MAX2D, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 7, 7)], ids=str)
def test_max_pool2d(kw, shape):
    _compare("max_pool2d", shape, kw)


def test_max_pool2d_float32_and_nan():
    _compare("max_pool2d", (2, 3, 10, 10), {"kernel_size": 3, "stride": 2}, "float32")
    _compare("max_pool2d", (2, 3, 10, 10), {"kernel_size": 3, "stride": 2,
                                            "return_indices": True}, nan=True)


@pytest.mark.parametrize("kw", [{"kernel_size": 3}, {"kernel_size": 4, "stride": 2, "padding": 2},
                                {"kernel_size": 3, "dilation": 2, "ceil_mode": True,
                                 "return_indices": True}], ids=str)
def test_max_pool1d(kw):
    _compare("max_pool1d", (2, 3, 15), kw)


AVG2D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": (2, 3), "divisor_override": 5},
]


@pytest.mark.parametrize("kw", AVG2D, ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 9, 8), (3, 6, 7)], ids=str)
def test_avg_pool2d(kw, shape):
    _compare("avg_pool2d", shape, kw)


def test_avg_pool1d():
    _compare("avg_pool1d", (2, 3, 15), {"kernel_size": 4, "stride": 3, "padding": 2,
                                        "ceil_mode": True, "count_include_pad": False})
    _compare("avg_pool1d", (2, 3, 15), {"kernel_size": 3}, "float32")


@pytest.mark.parametrize("size", [1, 3, (2, 5), (7, 8), (None, 4)], ids=str)
def test_adaptive_pool2d(size):
    _compare("adaptive_avg_pool2d", (2, 3, 7, 8), {"output_size": size})
    _compare("adaptive_max_pool2d", (2, 3, 7, 8), {"output_size": size, "return_indices": True})


def test_adaptive_pool1d():
    _compare("adaptive_avg_pool1d", (2, 3, 10), {"output_size": 4})
    _compare("adaptive_max_pool1d", (2, 3, 10), {"output_size": 3, "return_indices": True})


@pytest.mark.parametrize("name,args,shape", [
    ("MaxPool2d", (3, 2, 1), (2, 3, 8, 8)), ("MaxPool1d", (2,), (2, 3, 8)),
    ("AvgPool2d", (3, 2, 1), (2, 3, 8, 8)), ("AvgPool1d", (2,), (2, 3, 8)),
    ("AdaptiveAvgPool2d", ((1, 1),), (2, 3, 8, 8)), ("AdaptiveMaxPool2d", (2,), (2, 3, 8, 8)),
    ("AdaptiveAvgPool1d", (3,), (2, 3, 8)), ("AdaptiveMaxPool1d", (3,), (2, 3, 8)),
], ids=str)
def test_pool_modules(name, args, shape):
    mi, mt = getattr(ignis.nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(mi) == repr(mt)
    a = np.random.default_rng(0).standard_normal(shape)
    xi, xt = _pair(a)
    np.testing.assert_allclose(_np(mi(xi)), _np(mt(xt)), rtol=1e-12)


@pytest.mark.parametrize("fn,shape,kw", [
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 3, "padding": 2}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 0}),
    ("max_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "stride": 0}),
    ("max_pool2d", (2, 3, 2, 2), {"kernel_size": 3}),
    ("max_pool2d", (8, 8), {"kernel_size": 2}),
    ("avg_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "padding": 2}),
    ("avg_pool2d", (2, 3, 8, 8), {"kernel_size": 2, "divisor_override": 0}),
    ("adaptive_avg_pool2d", (2, 3, 8, 8), {"output_size": (2, 2, 2)}),
    ("adaptive_max_pool2d", (2, 0, 8, 8), {"output_size": 2}),
], ids=str)
def test_pool_bad_input_raises_like_torch(fn, shape, kw):
    a = np.zeros(shape)
    with pytest.raises(Exception) as et:
        getattr(TF, fn)(torch.from_numpy(a), **kw)
    with pytest.raises(Exception) as ei:
        getattr(IF, fn)(ignis.from_numpy(a), **kw)
    assert type(ei.value).__name__ == type(et.value).__name__, (ei.value, et.value)


@pytest.mark.parametrize("fn", ["avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_pool_integer_input_raises_like_torch(fn):
    a = np.zeros((1, 2, 4, 4), dtype=np.int32)
    with pytest.raises(Exception) as et:
        getattr(TF, fn)(torch.from_numpy(a), 2)
    with pytest.raises(Exception) as ei:
        getattr(IF, fn)(ignis.from_numpy(a), 2)
    assert type(ei.value).__name__ == type(et.value).__name__


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_max_pool2d_integer_dtypes_match_torch(dtype):
    a = np.random.default_rng(0).integers(0, 100, (2, 3, 7, 7))
    yi, ii = IF.max_pool2d(ignis.from_numpy(a).to(getattr(ignis, dtype)), 3, 2, 1,
                           return_indices=True)
    yt, it = TF.max_pool2d(torch.from_numpy(a).to(getattr(torch, dtype)), 3, 2, 1,
                           return_indices=True)
    assert yi.dtype == getattr(ignis, dtype)
    np.testing.assert_array_equal(yi.numpy(), yt.numpy())
    np.testing.assert_array_equal(ii.numpy(), it.numpy())


def test_max_pool2d_matches_torch_over_a_sweep_of_windows():
    # The kernel's vectorised path (output columns whose windows lie inside
    # the row) and its edges, with NaN and ties: values and indices as
    # torch's, for every kernel, stride, padding, dilation and ceil_mode.
    import itertools
    rng = np.random.default_rng(0)
    checked = 0
    for k, s, p, d, ceil, H, W in itertools.product([1, 2, 3, 4], [1, 2, 3], [0, 1, 2], [1, 2, 3],
                                                   [False, True], [5, 8], [5, 9, 13]):
        x = rng.standard_normal((2, 3, H, W)).astype(np.float32)
        x[0, 0, 0, 0] = np.nan
        x[1, 2, H // 2, :] = 1.0
        try:
            tv, ti = TF.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil,
                                                    return_indices=True)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                IF.max_pool2d(ignis.from_numpy(x), k, s, p, d, ceil_mode=ceil)
            continue
        iv, ii = IF.max_pool2d(ignis.from_numpy(x), k, s, p, d, ceil_mode=ceil,
                              return_indices=True)
        np.testing.assert_array_equal(iv.numpy(), tv.numpy(), err_msg=str((k, s, p, d, ceil)))
        np.testing.assert_array_equal(ii.numpy(), ti.numpy(), err_msg=str((k, s, p, d, ceil)))
        checked += 1
    assert checked > 300


@pytest.mark.parametrize("name,shape,args", [
    ("max_pool1d_with_indices", (2, 3, 9), (3, 2)),
    ("max_pool2d_with_indices", (2, 3, 6, 7), (2,)),
    ("max_pool3d_with_indices", (1, 2, 5, 6, 4), (2,)),
    ("adaptive_max_pool1d_with_indices", (2, 3, 9), (4,)),
    ("adaptive_max_pool2d_with_indices", (2, 3, 7, 5), ((3, 2),)),
], ids=lambda v: v if isinstance(v, str) else None)
def test_with_indices_spellings_match_torch(name, shape, args):
    # torch's F.*_with_indices: (values, indices) whatever return_indices says.
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    (iv, ii), (tv, ti) = (getattr(IF, name)(ignis.from_numpy(a), *args),
                          getattr(TF, name)(torch.from_numpy(a), *args))
    np.testing.assert_array_equal(iv.numpy(), tv.numpy())
    np.testing.assert_array_equal(ii.numpy(), ti.numpy())


@pytest.mark.parametrize("shape,out", [((1, 2, 5, 6, 7), (2, 3, 4)), ((2, 3, 4, 4), (3, 3, 3)),
                                       ((1, 1, 3, 5, 2), (3, 2, 1)), ((1, 2, 4, 4, 4), (4, None, 2)),
                                       ((1, 1, 7, 5, 3), 2)], ids=str)
def test_adaptive_max_pool3d_matches_torch(shape, out):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    a[..., 0] = a[..., -1]  # ties: the first maximum, as torch's
    xi, xt = ignis.from_numpy(a).requires_grad_(), torch.from_numpy(a.copy()).requires_grad_()
    (vi, ii), (vt, it) = (IF.adaptive_max_pool3d(xi, out, True),
                          TF.adaptive_max_pool3d(xt, out, True))
    np.testing.assert_array_equal(vi.detach().numpy(), vt.detach().numpy())
    np.testing.assert_array_equal(ii.numpy(), it.numpy())
    vi.sum().backward()
    vt.sum().backward()
    np.testing.assert_array_equal(xi.grad.numpy(), xt.grad.numpy())
    mi, mt = ignis.nn.AdaptiveMaxPool3d(out), torch.nn.AdaptiveMaxPool3d(out)
    assert repr(mi) == repr(mt)
    np.testing.assert_array_equal(mi(xi).detach().numpy(), mt(xt).detach().numpy())


@pytest.mark.parametrize("args,kw", [((2, 2), {}), ((3, (2, 3, 2)), {"stride": 1, "ceil_mode": True}),
                                     ((1.5, 2), {"stride": (1, 2, 1)})], ids=str)
def test_lp_pool3d_matches_torch(args, kw):
    a = np.abs(np.random.default_rng(1).standard_normal((1, 2, 4, 6, 5))).astype(np.float32)
    np.testing.assert_allclose(IF.lp_pool3d(ignis.from_numpy(a), *args, **kw).numpy(),
                               TF.lp_pool3d(torch.from_numpy(a), *args, **kw).numpy(),
                               rtol=1e-5, atol=1e-6)
    mi, mt = ignis.nn.LPPool3d(*args, **kw), torch.nn.LPPool3d(*args, **kw)
    assert repr(mi) == repr(mt)
