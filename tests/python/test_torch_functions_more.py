"""More of torch's functions and nn pieces that ignis writes over its ops:
F.embedding_bag / nn.EmbeddingBag, F.affine_grid / F.grid_sample, the 3-D
poolings, max_unpool1d/2d/3d and their modules, InstanceNorm3d
(nn/_embedding_bag.py, nn/_grid_sample.py, nn/_pooling.py), and torch's
aminmax, h/v/dsplit, logspace, vander, trapezoid, cov, corrcoef, histc,
renorm, matrix_power, the *_scatter functions, masked_scatter, ldexp, ...
(_functions.py). Values and gradients against torch from the same NumPy
inputs, torch's exception types for bad input, the Tensor methods, and a
few under ignis.compile against eager."""
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn as inn
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(11)


def f64(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _name(dtype):
    return str(dtype).split(".")[-1]


class G:
    """A float array passed as a leaf that requires grad (its gradient compared)."""

    def __init__(self, array):
        self.array = np.asarray(array)


def _make(lib, v):
    if isinstance(v, G):
        return lib.tensor(v.array).requires_grad_()
    if isinstance(v, np.ndarray):
        return lib.tensor(v)
    if isinstance(v, (list, tuple)) and v and all(isinstance(e, np.ndarray) for e in v):
        return type(v)(lib.tensor(e) for e in v)
    return v


def _outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _compare(fi, ft, args, kwargs=None, tol=1e-10):
    """fi / ft on each library's copies of args: outputs (shape, dtype,
    values) and the gradients of the G leaves, for a random cotangent."""
    kwargs = kwargs or {}
    ai = [_make(ignis, a) for a in args]
    at = [_make(torch, a) for a in args]
    ki = {k: _make(ignis, v) for k, v in kwargs.items()}
    kt = {k: _make(torch, v) for k, v in kwargs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oi, ot = _outputs(fi(*ai, **ki)), _outputs(ft(*at, **kt))
    assert len(oi) == len(ot)
    for a, b in zip(oi, ot):
        assert tuple(a.shape) == tuple(b.shape)
        assert _name(a.dtype) == _name(b.dtype)
        t = max(tol, 1e-6) if b.dtype == torch.float32 else tol
        np.testing.assert_allclose(_np(a), _np(b), rtol=t, atol=t)
    leaves = [(a, b) for a, b in zip(ai + list(ki.values()), at + list(kt.values()))
              if isinstance(b, torch.Tensor) and b.requires_grad]
    if not leaves or not _cotangents(ot, ot):
        return oi
    li = sum((o * ignis.tensor(c)).sum() for o, c in _cotangents(oi, ot))
    lt = sum((o * torch.tensor(c)).sum() for o, c in _cotangents(ot, ot))
    li.backward()
    lt.backward()
    for a, b in leaves:
        if b.grad is not None and b.grad.numel() == 0:
            continue  # an empty leaf: torch's empty gradient, or none
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=tol, atol=tol)
    return oi


def _cotangents(outs, like):
    rng = np.random.default_rng(3)
    return [(o, rng.standard_normal(tuple(t.shape)))
            for o, t in zip(outs, like) if t.dtype.is_floating_point and t.requires_grad]


def _raises_like_torch(fi, ft, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as want:
            ft(*[_make(torch, a) for a in args], **{k: _make(torch, v) for k, v in kwargs.items()})
        with pytest.raises(want.type):
            fi(*[_make(ignis, a) for a in args], **{k: _make(ignis, v) for k, v in kwargs.items()})


# ---- embedding_bag -------------------------------------------------------------------------
IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 7])
BAGS = [
    ({"offsets": np.array([0, 3, 3, 7])}, IDX),                   # an empty bag
    ({"offsets": np.array([0, 1, 9])}, IDX),                      # bags of one
    ({"offsets": np.array([0, 2, 5, 10]), "include_last_offset": True}, IDX),
    ({"offsets": np.array([0, 4]), "padding_idx": 4}, IDX),
    ({"padding_idx": -1}, IDX.reshape(2, 5) % 10),                # 2-D: one bag per row
    ({}, IDX.reshape(5, 2)),
    ({"offsets": np.array([0, 6, 10])}, np.array([2, 2, 2, 2, 2, 2, 0, 1, 5, 5])),  # padding only
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("case", range(len(BAGS)))
def test_embedding_bag_matches_torch(mode, case):
    kw, idx = BAGS[case]
    kw = dict(kw, mode=mode)
    if case == 6:
        kw["padding_idx"] = 2  # the first bag is all padding: 0
    _compare(lambda w, x, **k: IF.embedding_bag(x, w, **k),
             lambda w, x, **k: TF.embedding_bag(x, w, **k), [G(f64(10, 3)), idx], kw)


@pytest.mark.parametrize("twod", [False, True])
def test_embedding_bag_per_sample_weights(twod):
    idx = IDX.reshape(2, 5) if twod else IDX
    kw = {} if twod else {"offsets": np.array([0, 3, 8])}
    _compare(lambda w, x, p, **k: IF.embedding_bag(x, w, mode="sum", per_sample_weights=p, **k),
             lambda w, x, p, **k: TF.embedding_bag(x, w, mode="sum", per_sample_weights=p, **k),
             [G(f64(10, 4)), idx, G(f64(*idx.shape))], kw)


def test_embedding_bag_int32_indices_and_float32():
    w = f64(10, 3).astype(np.float32)
    _compare(lambda w, x, o: IF.embedding_bag(x, w, o), lambda w, x, o: TF.embedding_bag(x, w, o),
             [G(w), IDX.astype(np.int32), np.array([0, 5], dtype=np.int32)], tol=1e-6)


EMBEDDING_BAG_ERRORS = [
    (IDX, f64(10, 3), np.array([1, 4]), {}),                 # offsets[0] != 0
    (IDX, f64(10, 3), np.array([0, 11]), {}),                # past the input
    (IDX.reshape(2, 5), f64(10, 3), np.array([0, 1]), {}),   # 2-D input with offsets
    (IDX, f64(10, 3), None, {}),                             # 1-D without offsets
    (IDX.reshape(1, 2, 5), f64(10, 3), None, {}),
    (IDX, f64(10), np.array([0]), {}),
    (IDX, f64(10, 3), np.array([0]), {"mode": "median"}),
    (IDX, f64(10, 3), np.array([0]), {"mode": "mean", "per_sample_weights": f64(10)}),
    (IDX, f64(10, 3), np.array([0]), {"per_sample_weights": f64(9), "mode": "sum"}),
    (IDX, f64(10, 3), np.array([0]), {"mode": "max", "scale_grad_by_freq": True}),
    (IDX, f64(10, 3), np.array([0]), {"padding_idx": 10}),
    (IDX.astype(np.float64), f64(10, 3), np.array([0]), {}),
]


@pytest.mark.parametrize("case", range(len(EMBEDDING_BAG_ERRORS)))
def test_embedding_bag_bad_input_raises_like_torch(case):
    x, w, off, kw = EMBEDDING_BAG_ERRORS[case]
    _raises_like_torch(IF.embedding_bag, TF.embedding_bag, x, w, off, **kw)


def test_embedding_bag_module():
    w = f64(6, 3)
    mi = inn.EmbeddingBag.from_pretrained(ignis.tensor(w), mode="max", padding_idx=1)
    mt = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(w), mode="max", padding_idx=1)
    assert repr(mi) == repr(mt)
    assert not mi.weight.requires_grad
    x, off = np.array([0, 1, 5, 2, 1]), np.array([0, 2])
    np.testing.assert_allclose(_np(mi(ignis.tensor(x), ignis.tensor(off))),
                               _np(mt(torch.tensor(x), torch.tensor(off))))
    m = inn.EmbeddingBag(7, 2, mode="sum", padding_idx=-2)
    assert m.padding_idx == 5 and m.weight[5].abs().sum().item() == 0
    assert repr(m) == "EmbeddingBag(7, 2, mode='sum', padding_idx=5)"
    y = m(ignis.tensor([[0, 5, 6], [1, 1, 2]]), per_sample_weights=ignis.ones(2, 3))
    y.sum().backward()
    assert tuple(m.weight.grad.shape) == (7, 2) and m.weight.grad[5].abs().sum().item() == 0
    assert m.weight.grad[1].tolist() == [2.0, 2.0]
    with pytest.raises(AssertionError):
        inn.EmbeddingBag(3, 2, padding_idx=3)
    with pytest.raises(AssertionError):
        inn.EmbeddingBag.from_pretrained(ignis.zeros(3))


# ---- affine_grid and grid_sample -----------------------------------------------------------
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 2, 3, 1, 4], [2, 1, 1, 3]])
def test_affine_grid_matches_torch(size, align_corners):
    nd = len(size) - 2
    _compare(lambda t: IF.affine_grid(t, size, align_corners),
             lambda t: TF.affine_grid(t, size, align_corners), [G(f64(size[0], nd, nd + 1))])


GRID_CASES = [(m, p, a, nd) for m in ("bilinear", "nearest", "bicubic")
              for p in ("zeros", "border", "reflection") for a in (False, True)
              for nd in ((2, 3) if m != "bicubic" else (2,))]


@pytest.mark.parametrize("mode,padding,align,nd", GRID_CASES,
                         ids=[f"{m}-{p}-{a}-{nd}d" for m, p, a, nd in GRID_CASES])
def test_grid_sample_matches_torch(mode, padding, align, nd):
    spatial = (4, 5) if nd == 2 else (3, 4, 5)
    out = (6, 7) if nd == 2 else (2, 3, 4)
    inp = f64(2, 3, *spatial)
    grid = f64(2, *out, nd, lo=-1.4, hi=1.4)  # points outside, for the padding modes
    _compare(lambda x, g: IF.grid_sample(x, g, mode, padding, align),
             lambda x, g: TF.grid_sample(x, g, mode, padding, align), [G(inp), G(grid)], tol=1e-9)


def test_grid_sample_float32_and_affine_composition():
    theta = np.array([[[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]]]).astype(np.float32)
    inp = f64(1, 2, 5, 6).astype(np.float32)

    def run(F, t, x):
        return F.grid_sample(x, F.affine_grid(t, [1, 2, 4, 3], False), align_corners=False)
    _compare(lambda t, x: run(IF, t, x), lambda t, x: run(TF, t, x), [G(theta), G(inp)], tol=1e-5)


def test_grid_sample_non_finite_grid_reads_zero():
    g = np.array([[[[np.nan, 0.0], [np.inf, 0.5], [0.2, -np.inf]]]])
    _compare(lambda x, g: IF.grid_sample(x, g, align_corners=False),
             lambda x, g: TF.grid_sample(x, g, align_corners=False), [f64(1, 2, 3, 3), g])


GRID_ERRORS = [
    (f64(2, 3, 4, 5), f64(1, 6, 7, 2), {}),
    (f64(2, 3, 4, 5), f64(2, 6, 7, 3), {}),
    (f64(3, 4, 5), f64(2, 6, 7, 2), {}),
    (f64(2, 3, 0, 5), f64(2, 6, 7, 2), {}),
    (f64(2, 3, 4, 5), f64(2, 6, 7, 2), {"mode": "area"}),
    (f64(2, 3, 4, 5), f64(2, 6, 7, 2), {"padding_mode": "wrap"}),
    (f64(2, 3, 2, 4, 5), f64(2, 1, 6, 7, 3), {"mode": "bicubic"}),
    (f64(2, 3, 4, 5), f64(2, 6, 7, 2).astype(np.float32), {}),
]


@pytest.mark.parametrize("case", range(len(GRID_ERRORS)))
def test_grid_sample_bad_input_raises_like_torch(case):
    x, g, kw = GRID_ERRORS[case]
    _raises_like_torch(IF.grid_sample, TF.grid_sample, x, g, align_corners=False, **kw)


@pytest.mark.parametrize("theta,size", [(f64(2, 2, 3), [2, 3, 4]), (f64(2, 3, 3), [2, 3, 4, 5]),
                                        (f64(2, 2, 3), [2, 3, 0, 5]),
                                        (f64(2, 3, 4), [2, 3, 4, 5]),
                                        (np.ones((2, 2, 3), dtype=np.int64), [2, 3, 4, 5])])
def test_affine_grid_bad_input_raises_like_torch(theta, size):
    _raises_like_torch(IF.affine_grid, TF.affine_grid, theta, size, align_corners=False)


def test_grid_sample_and_affine_grid_warn_without_align_corners():
    with pytest.warns(UserWarning, match="align_corners"):
        IF.affine_grid(ignis.zeros(1, 2, 3), [1, 1, 2, 2])
    with pytest.warns(UserWarning, match="align_corners"):
        IF.grid_sample(ignis.zeros(1, 1, 2, 2), ignis.zeros(1, 1, 1, 2))


# ---- 3-D pooling, unpooling, InstanceNorm3d ------------------------------------------------
POOL3D = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3, 2), "stride": (1, 2, 2), "ceil_mode": True},
    {"kernel_size": (3, 2, 3), "stride": 2, "padding": (1, 0, 1), "ceil_mode": True},
]


@pytest.mark.parametrize("kw", POOL3D + [{"kernel_size": 2, "dilation": 2, "padding": 1},
                                         {"kernel_size": (1, 2, 3), "dilation": (2, 1, 2)}])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 6, 5, 7)])
def test_max_pool3d_matches_torch(kw, shape):
    _compare(lambda x: IF.max_pool3d(x, return_indices=True, **kw),
             lambda x: TF.max_pool3d(x, return_indices=True, **kw), [G(f64(*shape))])
    _compare(lambda x: inn.MaxPool3d(**kw)(x), lambda x: torch.nn.MaxPool3d(**kw)(x),
             [G(f64(*shape).astype(np.float32))], tol=1e-6)


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kw", POOL3D + [{"kernel_size": 3, "padding": 1, "divisor_override": 5}])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 6, 5, 4)])
def test_avg_pool3d_matches_torch(kw, count_include_pad, shape):
    kw = dict(kw, count_include_pad=count_include_pad)
    _compare(lambda x: IF.avg_pool3d(x, **kw), lambda x: TF.avg_pool3d(x, **kw), [G(f64(*shape))])
    _compare(lambda x: inn.AvgPool3d(**kw)(x), lambda x: torch.nn.AvgPool3d(**kw)(x),
             [G(f64(*shape))])


@pytest.mark.parametrize("size", [1, (2, 3, 4), (3, None, 5), (7, 6, 8)])
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 6, 5, 4)])
def test_adaptive_avg_pool3d_matches_torch(size, shape):
    _compare(lambda x: IF.adaptive_avg_pool3d(x, size), lambda x: TF.adaptive_avg_pool3d(x, size),
             [G(f64(*shape))])
    _compare(lambda x: inn.AdaptiveAvgPool3d(size)(x),
             lambda x: torch.nn.AdaptiveAvgPool3d(size)(x), [G(f64(*shape))])


@pytest.mark.parametrize("nd,shape,kw", [
    (1, (2, 3, 9), {"kernel_size": 3, "stride": 2}),
    (1, (3, 8), {"kernel_size": 2}),
    (2, (2, 3, 8, 6), {"kernel_size": 2}),
    (2, (2, 3, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1}),
    (2, (3, 8, 6), {"kernel_size": 2, "output_size": (9, 7)}),
    (3, (2, 2, 4, 6, 4), {"kernel_size": 2}),
    (3, (2, 5, 6, 4), {"kernel_size": (1, 2, 2), "output_size": [5, 7, 5]}),
])
def test_max_unpool_inverts_max_pool_like_torch(nd, shape, kw):
    pool_kw = {k: v for k, v in kw.items() if k != "output_size"}
    x = torch.tensor(f64(*shape))
    y, idx = getattr(TF, f"max_pool{nd}d")(x, return_indices=True, **pool_kw)
    _compare(lambda y, i: getattr(IF, f"max_unpool{nd}d")(y, i, **kw),
             lambda y, i: getattr(TF, f"max_unpool{nd}d")(y, i, **kw),
             [G(y.numpy()), idx.numpy()])
    mod_kw = {k: v for k, v in pool_kw.items()}
    _compare(lambda y, i: getattr(inn, f"MaxUnpool{nd}d")(**mod_kw)(y, i, kw.get("output_size")),
             lambda y, i: getattr(torch.nn, f"MaxUnpool{nd}d")(**mod_kw)(y, i,
                                                                         kw.get("output_size")),
             [G(y.numpy()), idx.numpy()])


def test_max_pool3d_indices_feed_max_unpool3d():
    x = ignis.tensor(f64(2, 3, 4, 6, 4))
    y, i = IF.max_pool3d(x, 2, return_indices=True)
    back = IF.max_unpool3d(y, i, 2)
    kept = back != 0
    assert int(kept.sum()) == y.numel()
    np.testing.assert_array_equal(_np(back[kept]), _np(x[kept]))


POOL_ERRORS = [
    (IF.max_pool3d, TF.max_pool3d, (f64(1, 2, 4, 4, 4), 3), {"padding": 2}),
    (IF.max_pool3d, TF.max_pool3d, (f64(1, 2, 4, 4, 4), 5), {}),
    (IF.max_pool3d, TF.max_pool3d, (f64(4, 4, 4), 2), {}),
    (IF.max_pool3d, TF.max_pool3d, (f64(1, 2, 4, 4, 4), 2), {"stride": 0}),
    (IF.avg_pool3d, TF.avg_pool3d, (f64(1, 2, 4, 4, 4), 3), {"padding": 2}),
    (IF.avg_pool3d, TF.avg_pool3d, (f64(1, 2, 4, 4, 4), 2), {"divisor_override": 0}),
    (IF.adaptive_avg_pool3d, TF.adaptive_avg_pool3d, (f64(4, 4, 4), 2), {}),
    (IF.adaptive_avg_pool3d, TF.adaptive_avg_pool3d, (f64(1, 4, 4, 4), (2, 2)), {}),
]


@pytest.mark.parametrize("case", range(len(POOL_ERRORS)))
def test_pool3d_bad_input_raises_like_torch(case):
    fi, ft, args, kw = POOL_ERRORS[case]
    _raises_like_torch(fi, ft, *args, **kw)


def _pooled():
    y, i = TF.max_pool2d(torch.tensor(f64(1, 2, 4, 4)), 2, return_indices=True)
    return y.numpy(), i.numpy()


@pytest.mark.parametrize("change", ["int32", "shape", "output_size", "rank", "index",
                                    "output_size_len"])
def test_max_unpool_bad_input_raises_like_torch(change):
    y, i = _pooled()
    kw = {}
    if change == "int32":
        i = i.astype(np.int32)
    elif change == "shape":
        i = i[..., :1]
    elif change == "output_size":
        kw["output_size"] = (9, 9)
    elif change == "rank":
        y, i = y[0, 0], i[0, 0]
    elif change == "index":
        i = i * 10
    else:
        kw["output_size"] = (1, 2, 3)
    _raises_like_torch(IF.max_unpool2d, TF.max_unpool2d, y, i, 2, **kw)


def test_pooling_module_reprs_match_torch():
    pairs = [(inn.MaxUnpool1d(2), torch.nn.MaxUnpool1d(2)),
             (inn.MaxUnpool2d(2, 1, 1), torch.nn.MaxUnpool2d(2, 1, 1)),
             (inn.MaxUnpool3d((2, 2, 2)), torch.nn.MaxUnpool3d((2, 2, 2))),
             (inn.AvgPool3d(2), torch.nn.AvgPool3d(2)), (inn.MaxPool3d(2), torch.nn.MaxPool3d(2)),
             (inn.AdaptiveAvgPool3d(3), torch.nn.AdaptiveAvgPool3d(3)),
             (inn.InstanceNorm3d(4), torch.nn.InstanceNorm3d(4))]
    for a, b in pairs:
        assert repr(a) == repr(b)


@pytest.mark.parametrize("affine,track", [(False, False), (True, True)])
@pytest.mark.parametrize("shape", [(2, 3, 3, 4, 5), (3, 2, 4, 3)])
def test_instance_norm3d_matches_torch(affine, track, shape):
    mi, mt = inn.InstanceNorm3d(3, affine=affine, track_running_stats=track), \
        torch.nn.InstanceNorm3d(3, affine=affine, track_running_stats=track)
    mi.double()
    mt.double()
    _compare(mi, mt, [G(f64(*shape))])
    if track:
        np.testing.assert_allclose(_np(mi.running_mean), _np(mt.running_mean), rtol=1e-10)
        np.testing.assert_allclose(_np(mi.running_var), _np(mt.running_var), rtol=1e-10)
        mi.eval()
        mt.eval()
        _compare(mi, mt, [G(f64(*shape))])
    with pytest.raises(ValueError):
        mi(ignis.zeros(3, 4, 5))


# ---- torch.* functions ---------------------------------------------------------------------
M34 = RNG.random((3, 4)) > 0.5

# name: [(args, kwargs)]; G(...) arrays require grad, other arrays are tensors.
CASES = {
    "aminmax": [((G(f64(3, 4)),), {}), ((G(f64(3, 4)),), {"dim": 1, "keepdim": True}),
                ((G(f64(3, 4)),), {"keepdim": True}), ((G(f64(2, 3, 4)),), {"dim": -2}),
                ((np.array([True, False]),), {}), ((np.array(2.5),), {})],
    "hsplit": [((G(f64(3, 4)), 2), {}), ((G(f64(6)), [2, 5]), {}), ((G(f64(2, 6, 2)), 3), {})],
    "vsplit": [((G(f64(4, 4)), [1, 3]), {}), ((G(f64(6, 2)), 3), {})],
    "dsplit": [((G(f64(2, 3, 6)), 3), {}), ((G(f64(2, 3, 6)), [1, 4]), {})],
    "trapezoid": [((G(f64(3, 5)),), {}), ((G(f64(3, 5)), G(f64(5))), {}),
                  ((G(f64(3, 5)),), {"dx": 0.5, "dim": 0}),
                  ((G(f64(3, 5)), G(f64(3, 5))), {"dim": 0}),
                  ((G(f64(2, 3, 5)), G(f64(3, 5))), {"dim": 1}),
                  ((np.array([1, 2, 4]),), {}), ((G(f64(3, 0)),), {})],
    "trapz": [((G(f64(3, 5)), G(f64(5))), {}), ((G(f64(3, 5)),), {"dx": 2.0, "dim": 0})],
    "cumulative_trapezoid": [((G(f64(3, 5)),), {}), ((G(f64(3, 5)), G(f64(5))), {}),
                             ((G(f64(4, 5)),), {"dx": 2.0, "dim": 0})],
    "cov": [((G(f64(3, 6)),), {}), ((G(f64(6)),), {}), ((G(f64(3, 6)),), {"correction": 0}),
            ((G(f64(3, 6)),), {"fweights": RNG.integers(0, 4, 6)}),
            ((G(f64(3, 6)),), {"fweights": RNG.integers(1, 4, 6),
                               "aweights": RNG.uniform(0.1, 1, 6)}),
            ((G(f64(3, 6)),), {"aweights": RNG.uniform(0.1, 1, 6), "correction": 2}),
            ((f64(2, 1),), {"aweights": np.array([0.5])}),  # torch: no gradient here
            ((np.array([[1, 2, 4], [3, 1, 0]]),), {})],
    "corrcoef": [((G(f64(3, 6)),), {}), ((G(f64(6)),), {})],
    "histc": [((f64(50),), {}), ((f64(4, 50),), {"bins": 7, "min": -1, "max": 1}),
              ((f64(50).astype(np.float32),), {"bins": 10}),
              ((np.array([1.0, 1.0, 1.0]),), {"bins": 4}),
              ((np.array([0.0, 1.0, 2.0, 3.0, np.nan]),), {"bins": 3, "min": 0, "max": 3})],
    "isreal": [((f64(3),), {})],
    "renorm": [((G(f64(3, 4, 2)), 2, 1, 1.0), {}), ((G(f64(3, 4)), 1, 0, 2.0), {}),
               ((G(f64(3, 4)), 3.5, -1, 0.5), {}), ((G(f64(2, 5)), 2, 0, 100.0), {})],
    "matrix_power": [((G(f64(3, 3)), 0), {}), ((G(f64(2, 3, 3)), 1), {}), ((G(f64(3, 3)), 2), {}),
                     ((G(f64(3, 3)), 3), {}), ((G(f64(2, 3, 3)), 6), {}),
                     ((G(f64(4, 4)), 7), {}), ((np.arange(9).reshape(3, 3), 5), {})],
    "narrow_copy": [((G(f64(3, 6)), 1, 2, 3), {}), ((G(f64(3, 6)), -2, 0, 1), {})],
    "resolve_conj": [((G(f64(3)),), {})],
    "resolve_neg": [((G(f64(3)),), {})],
    "select_scatter": [((G(f64(3, 4)), G(f64(4)), 0, 1), {}),
                       ((G(f64(3, 4, 2)), G(f64(3, 2)), 1, -1), {})],
    "slice_scatter": [((G(f64(4, 6)), G(f64(4, 2))), {"dim": 1, "start": 1, "end": 5, "step": 2}),
                      ((G(f64(5, 3)), G(f64(2, 3))), {"start": -2}),
                      ((G(f64(5, 3)), G(f64(5, 3))), {}),
                      ((G(f64(5, 3)), G(f64(0, 3))), {"start": 2, "end": 2})],
    "diagonal_scatter": [((G(f64(4, 6)), G(f64(4))), {"offset": 1}),
                         ((G(f64(4, 6)), G(f64(3))), {"offset": -1}),
                         ((G(f64(2, 3, 4)), G(f64(3, 2))), {"dim1": 0, "dim2": 2}),
                         ((G(f64(3, 3)), G(f64(0))), {"offset": 3})],
    "masked_scatter": [((G(f64(3, 4)), M34, G(f64(15))), {}),
                       ((G(f64(4)), M34, G(f64(12))), {}),
                       ((G(f64(3, 4)), M34[0], G(f64(2, 6))), {})],
    "ldexp": [((G(f64(3)), np.array([1, 0, 3])), {}),
              ((np.array([1, 2]), np.array([3, -4])), {}),
              ((f64(3), np.array([-1, -2, 3])), {})],
}


@pytest.mark.parametrize("name,i", [(n, i) for n in CASES for i in range(len(CASES[n]))],
                         ids=[f"{n}-{i}" for n in CASES for i in range(len(CASES[n]))])
def test_function_matches_torch(name, i):
    args, kwargs = CASES[name][i]
    _compare(getattr(ignis, name), getattr(torch, name), args, kwargs,
             tol=1e-5 if name == "histc" else 1e-10)


METHODS = ["aminmax", "hsplit", "vsplit", "dsplit", "cov", "corrcoef", "histc", "isreal",
           "renorm", "matrix_power", "narrow_copy", "resolve_conj", "resolve_neg",
           "select_scatter", "slice_scatter", "diagonal_scatter", "masked_scatter", "ldexp"]


@pytest.mark.parametrize("name", METHODS)
def test_tensor_method_matches_torch(name):
    args, kwargs = CASES[name][0]
    _compare(lambda x, *a, **k: getattr(x, name)(*a, **k),
             lambda x, *a, **k: getattr(x, name)(*a, **k), args, kwargs,
             tol=1e-5 if name == "histc" else 1e-10)


def test_aminmax_is_a_named_tuple():
    r = ignis.aminmax(ignis.tensor([[1.0, 5.0], [-2.0, 3.0]]), dim=1)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    assert r.min.tolist() == [1.0, -2.0] and r.max.tolist() == [5.0, 3.0]


@pytest.mark.parametrize("args,kwargs", [((0, 2, 5), {}), ((-1.5, 3, 7), {"base": 2.0}),
                                         ((0, 2, 5), {"dtype": "int64"}),
                                         ((1, 1, 1), {"dtype": "float64"}),
                                         ((2, -1, 0), {}), ((0.5, 4, 9), {"base": 3})])
def test_logspace_matches_torch(args, kwargs):
    ki = {k: getattr(ignis, v) if k == "dtype" else v for k, v in kwargs.items()}
    kt = {k: getattr(torch, v) if k == "dtype" else v for k, v in kwargs.items()}
    _compare(lambda: ignis.logspace(*args, **ki), lambda: torch.logspace(*args, **kt), [],
             tol=1e-6)
    assert ignis.logspace(0, 1, 3, requires_grad=True).requires_grad


@pytest.mark.parametrize("x,kw", [(f64(4), {}), (f64(4), {"N": 6, "increasing": True}),
                                  (np.array([1, 2, 3]), {"N": 3}), (f64(3), {"N": 0}),
                                  (f64(3), {"N": 1}), (np.array([True, False]), {})])
def test_vander_matches_torch(x, kw):
    # torch's own vander has no usable gradient (it writes a cumprod's input
    # in place): the gradient is compared with torch's powers' below
    _compare(ignis.vander, torch.vander, [x], kw)


def test_vander_gradient_is_the_powers_gradient():
    a = f64(4)
    xi = ignis.tensor(a).requires_grad_()
    xt = torch.tensor(a).requires_grad_()
    c = f64(4, 5)
    (ignis.vander(xi, N=5) * ignis.tensor(c)).sum().backward()
    (xt.unsqueeze(1) ** torch.arange(4, -1, -1) * torch.tensor(c)).sum().backward()
    np.testing.assert_allclose(_np(xi.grad), _np(xt.grad), rtol=1e-10)


def test_linalg_matrix_power_and_negative_power():
    a = f64(3, 3)
    np.testing.assert_allclose(_np(ignis.linalg.matrix_power(ignis.tensor(a), 4)),
                               _np(torch.linalg.matrix_power(torch.tensor(a), 4)), rtol=1e-10)
    # negative powers: powers of the inverse (linalg.inv), as torch
    np.testing.assert_allclose(_np(ignis.matrix_power(ignis.tensor(a), -2)),
                               _np(torch.matrix_power(torch.tensor(a), -2)), rtol=1e-9)


def test_in_place_methods_match_torch():
    a, m, s = f64(3, 4), M34, f64(12)
    for name, args in (("masked_scatter_", (m, s)), ("renorm_", (2, 0, 1.0)),
                       ("ldexp_", (np.array([1, -2, 0, 3]),))):
        xi, xt = ignis.tensor(a), torch.tensor(a)
        ri = getattr(xi, name)(*[_make(ignis, v) for v in args])
        rt = getattr(xt, name)(*[_make(torch, v) for v in args])
        assert ri is xi and rt is xt
        np.testing.assert_allclose(_np(xi), _np(xt), rtol=1e-12)
    with pytest.raises(RuntimeError):  # the mask must broadcast to self
        ignis.tensor(a[0]).masked_scatter_(ignis.tensor(m), ignis.tensor(s))


def test_ldexp_gradient_with_negative_exponents():
    # torch's gradient for a negative integer exponent is 0 (it takes 2 ** other
    # in integers); ignis's is 2 ** other
    x = ignis.tensor([1.5, -2.0], dtype=ignis.float64, requires_grad=True)
    ignis.ldexp(x, ignis.tensor([-2, 1])).sum().backward()
    assert x.grad.tolist() == [0.25, 2.0]


FUNCTION_ERRORS = [
    ("aminmax", (np.zeros(0),), {}),
    ("aminmax", (f64(2, 3),), {"dim": 2}),
    ("hsplit", (f64(4, 6), 4), {}),
    ("hsplit", (np.array(1.0), 2), {}),
    ("vsplit", (f64(4), 2), {}),
    ("vsplit", (f64(4, 6), 0), {}),
    ("dsplit", (f64(4, 6), 2), {}),
    ("logspace", (0, 2, -1), {}),
    ("vander", (f64(2, 2),), {}),
    ("vander", (f64(2),), {"N": -1}),
    ("trapezoid", (np.array([True]),), {}),
    ("trapezoid", (f64(4, 6), f64(5)), {}),
    ("trapezoid", (f64(4, 6), f64(6)), {"dx": 2}),
    ("cumulative_trapezoid", (f64(4, 6), f64(5)), {}),
    ("cov", (f64(2, 3, 4),), {}),
    ("cov", (f64(4, 6),), {"fweights": np.ones(6)}),
    ("cov", (f64(4, 6),), {"fweights": np.array([1, -1, 1, 1, 1, 1])}),
    ("cov", (f64(4, 6),), {"aweights": np.ones(5)}),
    ("cov", (np.array([True, False]),), {}),
    ("corrcoef", (f64(2, 3, 4),), {}),
    ("histc", (np.array([1, 2, 3]), 3), {}),
    ("histc", (f64(5), 3), {"min": 2, "max": 1}),
    ("histc", (f64(5), 0), {}),
    ("histc", (f64(5), 3), {"min": -np.inf, "max": 1}),
    ("renorm", (f64(3, 4), 0, 0, 1.0), {}),
    ("renorm", (f64(3, 4), 2, 0, -1.0), {}),
    ("renorm", (f64(3, 4), 2, 3, 1.0), {}),
    ("renorm", (f64(4), 2, 0, 1.0), {}),
    ("matrix_power", (f64(3, 4), 2), {}),
    ("matrix_power", (f64(3), 2), {}),
    ("narrow_copy", (f64(3, 6), 1, 2, 5), {}),
    ("select_scatter", (f64(4, 6), f64(4), 0, 1), {}),
    ("select_scatter", (f64(4, 6), f64(6), 0, 4), {}),
    ("slice_scatter", (f64(4, 6), f64(4, 2), 1, 0, 6, 2), {}),
    ("diagonal_scatter", (f64(4, 6), f64(5), 1), {}),
    ("masked_scatter", (f64(3, 4), M34.astype(np.float64), f64(12)), {}),
    ("masked_scatter", (f64(3, 4), np.ones((3, 4), dtype=bool), f64(3)), {}),
    ("masked_scatter", (f64(3, 4), M34, f64(12).astype(np.float32)), {}),
    ("ldexp", (f64(3), 2), {}),
]


@pytest.mark.parametrize("case", range(len(FUNCTION_ERRORS)),
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(FUNCTION_ERRORS)])
def test_function_bad_input_raises_like_torch(case):
    name, args, kwargs = FUNCTION_ERRORS[case]
    _raises_like_torch(getattr(ignis, name), getattr(torch, name), *args, **kwargs)


def test_cov_warns_when_degrees_of_freedom_run_out():
    for lib in (ignis, torch):
        with pytest.warns(UserWarning, match="degrees of freedom"):
            r = lib.cov(lib.tensor([[1.0, 2.0, 4.0]]), correction=3)
        assert np.isinf(_np(r)) or np.isnan(_np(r))


# ---- compiled --------------------------------------------------------------------------------
def _bags(w, x, off, psw):
    return (IF.embedding_bag(x, w, off, mode="sum", per_sample_weights=psw),
            IF.embedding_bag(x, w, off, mode="max", padding_idx=2),
            IF.embedding_bag(x.reshape(2, 4), w, mode="mean"))


def _sampling(x, theta):
    g = IF.affine_grid(theta, [2, 3, 5, 4], align_corners=False)
    return (IF.grid_sample(x, g, "bilinear", "reflection", False),
            IF.grid_sample(x, g * 1.2, "bicubic", "zeros", True))


def _pools(x):
    y, i = IF.max_pool3d(x, 2, return_indices=True)
    return (IF.avg_pool3d(x, 3, 2, 1, ceil_mode=True), IF.adaptive_avg_pool3d(x, (2, 3, 1)),
            IF.max_unpool3d(y * 2, i, 2))


def _functions(x, m, s):
    return (ignis.select_scatter(x, x[0] * 2, 0, 1), ignis.masked_scatter(x, m, s),
            ignis.diagonal_scatter(x, s[:5], 1), ignis.slice_scatter(x, s[:10].reshape(5, 2), 1,
                                                                      1, 5, 2),
            ignis.cov(x), ignis.histc(x.detach(), 5), ignis.aminmax(x, dim=0).max,
            ignis.cumulative_trapezoid(x, dx=0.5), ignis.renorm(x, 2, 0, 1.0),
            ignis.matrix_power(x[:, :5], 5))


def _compiled_inputs(fn):
    if fn is _bags:
        return [G(f64(10, 3)), np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array([0, 3, 3, 6]),
                G(f64(8))]
    if fn is _sampling:
        return [G(f64(2, 3, 4, 6)), G(f64(2, 2, 3))]
    if fn is _pools:
        return [G(f64(2, 3, 6, 6, 6))]
    return [G(f64(5, 6)), RNG.random((5, 6)) > 0.5, G(f64(30))]


@pytest.mark.parametrize("fn", [_bags, _sampling, _pools, _functions])
def test_compiled_matches_eager(fn):
    """Each traces whole (fullgraph) and gives eager's values and gradients."""
    from ignis._inductor import metrics
    ignis.compiler.reset()
    metrics.reset()
    args = _compiled_inputs(fn)
    eager, compiled = [_make(ignis, a) for a in args], [_make(ignis, a) for a in args]
    want = fn(*eager)
    got = ignis.compile(fn, backend="inductor", fullgraph=True)(*compiled)
    assert metrics.generated_kernel_count > 0
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-9, atol=1e-9)
    cot = [ignis.tensor(RNG.standard_normal(tuple(w.shape))) for w in want]
    sum((w * c).sum() for w, c in zip(want, cot) if w.requires_grad).backward()
    sum((g * c).sum() for g, c in zip(got, cot) if g.requires_grad).backward()
    for a, b in zip(compiled, eager):
        if b.requires_grad:
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-9, atol=1e-9)


# ---- scans by doubling (Note [Scans by doubling], _functions.py) --------------------------------
@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_cummax_cummin_match_torch(name, dtype):
    """Values, indices (the later on ties; the last NaN wins) and gradients
    (to the elements picked) over several lengths and dims."""
    rng = np.random.default_rng(3)
    for shape, dim in [((7,), 0), ((3, 9), 1), ((3, 9), 0), ((2, 17, 3), -2), ((1,), 0),
                       ((4, 0), 1)]:
        a = rng.integers(-3, 4, shape).astype(dtype)  # many ties
        if dtype != "int64" and a.size:
            a.flat[rng.integers(0, a.size, 2)] = np.nan
        grad = dtype == "float64"
        x = ignis.tensor(a, requires_grad=grad)
        xt = torch.tensor(a, requires_grad=grad)
        got, want = getattr(ignis, name)(x, dim), getattr(torch, name)(xt, dim)
        assert type(got).__name__ == name
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
        np.testing.assert_array_equal(got.values.detach().numpy(), want.values.detach().numpy())
        m_got = getattr(x, name)(dim)
        np.testing.assert_array_equal(m_got.indices.numpy(), want.indices.numpy())
        if grad and a.size:
            w = rng.standard_normal(shape)
            (got.values * ignis.tensor(w)).sum().backward()
            (want.values * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
    zero_d = getattr(ignis, name)(ignis.tensor(3.0), 0)
    assert float(zero_d.values) == 3.0 and int(zero_d.indices) == 0


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_logcumsumexp_matches_torch_without_overflow(dtype):
    rng = np.random.default_rng(4)
    for shape, dim in [((9,), 0), ((3, 33), 1), ((5, 4), 0), ((1,), 0)]:
        a = (rng.standard_normal(shape) * 300).astype(dtype)  # exp overflows float32 alone
        x = ignis.tensor(a, requires_grad=dtype == "float64")
        xt = torch.tensor(a, requires_grad=dtype == "float64")
        got, want = ignis.logcumsumexp(x, dim), torch.logcumsumexp(xt, dim)
        tol = 1e-12 if dtype == "float64" else 2e-5
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(x.logcumsumexp(dim).detach().numpy(), want.detach().numpy(),
                                   rtol=tol, atol=tol)
        if dtype == "float64":
            w = rng.standard_normal(shape)
            (got * ignis.tensor(w)).sum().backward()
            (want * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    edge = np.array([-1000.0, 0.0, 1000.0, -np.inf])
    np.testing.assert_array_equal(ignis.logcumsumexp(ignis.tensor(edge), 0).numpy(),
                                  torch.logcumsumexp(torch.tensor(edge), 0).numpy())


def test_scans_compile_in_one_graph():
    def f(t):
        return t.cummax(1).values + t.logcumsumexp(1) - ignis.cummin(t, 1).values
    x = ignis.randn(3, 11, dtype=ignis.float64, requires_grad=True)
    ex = ignis.compiler.explain(f)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    got = ignis.compile(f, backend="inductor", fullgraph=True)(x)
    got.sum().backward()
    g = x.grad.clone()
    x.grad = None
    want = f(x)
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-12)
    ignis.compiler.reset()
