"""Convolution (ops/conv.cpp, kernels/cpu/conv, nn/_conv.py, nn/modules/conv.py)
against torch: F.conv1d/2d/3d and F.conv_transpose1d/2d/3d over a grid of
shapes, strides, paddings (numbers, tuples, "same", "valid"), dilations,
groups, bias and output_padding, batch 1, unbatched and non-contiguous
inputs, in float32 and float64 (bfloat16 computed in float32): values, and
the gradients of input, weight and bias for a random upstream gradient.
The modules with every padding_mode, from the same weights. Bad input
raises torch's exception type.
"""
import itertools

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

TOL = {"float32": (2e-4, 2e-5), "float64": (1e-10, 1e-11), "bfloat16": (3e-2, 3e-2)}


def _pair(a, dtype, grad):
    """The same values as an ignis and a torch tensor."""
    a = np.asarray(a, dtype=np.float64)
    i = ignis.from_numpy(a.copy()).to(getattr(ignis, dtype))
    t = torch.from_numpy(a.copy()).to(getattr(torch, dtype))
    if grad:
        i.requires_grad_()
        t.requires_grad_()
    return i, t


def _np(t):
    if t is None:
        return None
    if isinstance(t, ignis.Tensor):
        return t.detach().to(ignis.float64).numpy()
    return t.detach().to(torch.float64).numpy()


def _close(got, want, dtype, what):
    rtol, atol = TOL[dtype]
    scale = max(1.0, float(np.abs(want).max()) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, err_msg=what)


def _compare(fn_name, x_shape, w_shape, bias, kwargs, dtype="float64", layout="contiguous"):
    rng = np.random.default_rng(hash((fn_name, x_shape, w_shape)) % 2**32)
    xa = rng.standard_normal(x_shape)
    wa = rng.standard_normal(w_shape)
    xi, xt = _pair(xa, dtype, True)
    wi, wt = _pair(wa, dtype, True)
    bi = bt = None
    if bias:
        out_ch = w_shape[1] * kwargs.get("groups", 1) if "transpose" in fn_name else w_shape[0]
        bi, bt = _pair(rng.standard_normal(out_ch), dtype, True)
    xi_in, xt_in = xi, xt
    if layout == "transposed":  # the last two dims swapped, then back: a strided view
        xi_in = xi.transpose(-1, -2).contiguous().transpose(-1, -2)
        xt_in = xt.transpose(-1, -2).contiguous().transpose(-1, -2)
        assert not xi_in.is_contiguous()
    yi = getattr(IF, fn_name)(xi_in, wi, bi, **kwargs)
    yt = getattr(TF, fn_name)(xt_in, wt, bt, **kwargs)
    assert tuple(yi.shape) == tuple(yt.shape), (yi.shape, yt.shape)
    assert yi.dtype == getattr(ignis, dtype)
    _close(_np(yi), _np(yt), dtype, "forward")
    ga = rng.standard_normal(tuple(yt.shape))
    gi, gt = _pair(ga, dtype, False)
    yi.backward(gi)
    yt.backward(gt)
    for name, a, b in (("input", xi, xt), ("weight", wi, wt), ("bias", bi, bt)):
        if a is not None:
            _close(_np(a.grad), _np(b.grad), dtype, f"grad of {name}")


# (fn, input shape, weight shape, kwargs)
CASES = [
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {}),
    ("conv2d", (1, 1, 28, 28), (8, 1, 5, 5), {"padding": 2}),
    ("conv2d", (2, 4, 9, 7), (6, 2, 3, 2), {"stride": 2, "padding": (1, 0), "groups": 2}),
    ("conv2d", (2, 3, 10, 10), (5, 3, 3, 3), {"stride": (2, 1), "dilation": 2, "padding": 2}),
    ("conv2d", (3, 8, 6, 6), (8, 1, 3, 3), {"padding": 1, "groups": 8}),  # depthwise
    ("conv2d", (2, 6, 5, 5), (4, 6, 1, 1), {}),  # 1x1, no im2col
    ("conv2d", (2, 6, 7, 7), (4, 6, 1, 1), {"stride": 2}),
    ("conv2d", (2, 3, 7, 8), (4, 3, 3, 4), {"padding": "same"}),
    ("conv2d", (2, 3, 7, 8), (4, 3, 2, 4), {"padding": "same", "dilation": (1, 3)}),
    ("conv2d", (2, 3, 7, 8), (4, 3, 3, 3), {"padding": "valid"}),
    ("conv2d", (3, 7, 8), (4, 3, 3, 3), {"padding": 1}),  # unbatched
    ("conv2d", (2, 3, 4, 4), (4, 3, 4, 4), {}),  # kernel as large as the input
    ("conv1d", (2, 3, 16), (4, 3, 5), {"stride": 3, "padding": 2}),
    ("conv1d", (2, 4, 16), (4, 2, 3), {"dilation": 3, "groups": 2}),
    ("conv1d", (3, 11), (2, 3, 3), {"padding": "same"}),
    ("conv3d", (2, 2, 5, 6, 4), (3, 2, 3, 2, 2), {"stride": (1, 2, 1), "padding": 1}),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), {}),
    ("conv_transpose2d", (2, 4, 5, 6), (4, 2, 3, 3),
     {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ("conv_transpose2d", (1, 3, 4, 4), (3, 5, 4, 4), {"stride": 2, "padding": 1}),  # DCGAN
    ("conv_transpose2d", (2, 3, 4, 5), (3, 2, 2, 3), {"stride": (2, 3), "dilation": (2, 1),
                                                      "output_padding": (1, 2)}),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 1, 1), {}),
    ("conv_transpose1d", (2, 4, 7), (4, 3, 4), {"stride": 2, "padding": 1}),
    ("conv_transpose1d", (4, 7), (4, 3, 3), {"stride": 3, "output_padding": 2}),
    ("conv_transpose3d", (1, 2, 3, 4, 3), (2, 2, 2, 3, 2), {"stride": 2}),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}")
def test_conv_matches_torch_float64(case, bias):
    fn, xs, ws, kw = case
    _compare(fn, xs, ws, bias, kw)


@pytest.mark.parametrize("case", CASES[:10] + CASES[16:20], ids=lambda c: f"{c[0]}-{c[1]}")
def test_conv_matches_torch_float32(case):
    fn, xs, ws, kw = case
    _compare(fn, xs, ws, True, kw, dtype="float32")


@pytest.mark.parametrize("case", [CASES[0], CASES[16]], ids=lambda c: c[0])
def test_conv_bfloat16(case):
    fn, xs, ws, kw = case
    _compare(fn, xs, ws, True, kw, dtype="bfloat16")


@pytest.mark.parametrize("case", [CASES[2], CASES[17], CASES[12]], ids=lambda c: c[0])
def test_conv_non_contiguous_input(case):
    fn, xs, ws, kw = case
    _compare(fn, xs, ws, True, kw, layout="transposed")


def test_conv_large_batch_runs_items_in_parallel():
    # Enough (sample, group) items to be spread across threads.
    _compare("conv2d", (16, 8, 12, 12), (16, 4, 3, 3), True, {"padding": 1, "groups": 2},
             dtype="float32")
    _compare("conv_transpose2d", (16, 8, 6, 6), (8, 4, 4, 4), True, {"stride": 2, "padding": 1},
             dtype="float32")


def test_conv_batch_zero():
    x = ignis.zeros(0, 3, 5, 5, requires_grad=True)
    w = ignis.randn(4, 3, 3, 3, requires_grad=True)
    y = IF.conv2d(x, w)
    assert tuple(y.shape) == (0, 4, 3, 3)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5)
    assert float(w.grad.abs().sum()) == 0.0


def _raises_like(fn_i, fn_t):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(Exception) as ei:
        fn_i()
    assert type(ei.value).__name__ == type(et.value).__name__, (ei.value, et.value)
    return str(ei.value)


@pytest.mark.parametrize("fn,xs,ws,kw,words", [
    ("conv2d", (2, 4, 8, 8), (4, 3, 3, 3), {}, "to have 3 channels, but got 4 channels"),
    ("conv2d", (2, 3, 2, 2), (4, 3, 3, 3), {}, "Kernel size can't be greater"),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {"stride": 0}, "non-positive stride"),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {"padding": -1}, "negative padding"),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {"dilation": 0}, "dilation"),
    ("conv2d", (2, 4, 8, 8), (3, 2, 3, 3), {"groups": 2}, "divisible by 2"),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {"stride": 2, "padding": "same"}, "strided"),
    ("conv2d", (2, 3, 8, 8), (4, 3, 3, 3), {"padding": "full"}, "padding"),
    ("conv2d", (8, 8), (4, 3, 3, 3), {}, "input to conv2d"),
    ("conv1d", (2, 3, 8, 8), (4, 3, 3), {}, "input to conv1d"),
    ("conv_transpose2d", (2, 3, 5, 5), (4, 3, 3, 3), {}, "to have 4 channels"),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), {"output_padding": 1},
     "output padding must be smaller"),
])
def test_conv_bad_input_raises_like_torch(fn, xs, ws, kw, words):
    x = np.zeros(xs)
    w = np.ones(ws)
    msg = _raises_like(lambda: getattr(IF, fn)(ignis.from_numpy(x), ignis.from_numpy(w), **kw),
                       lambda: getattr(TF, fn)(torch.from_numpy(x), torch.from_numpy(w), **kw))
    assert words in msg


def test_conv_bad_bias_and_dtypes():
    x, w = np.zeros((2, 3, 5, 5)), np.ones((4, 3, 3, 3))
    b = np.zeros(3)  # 3 elements for 4 output channels
    _raises_like(lambda: IF.conv2d(ignis.from_numpy(x), ignis.from_numpy(w), ignis.from_numpy(b)),
                 lambda: TF.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)))
    _raises_like(lambda: IF.conv2d(ignis.from_numpy(x), ignis.from_numpy(w).float()),
                 lambda: TF.conv2d(torch.from_numpy(x), torch.from_numpy(w).float()))
    _raises_like(lambda: IF.conv2d(ignis.from_numpy(x).bool(), ignis.from_numpy(w).bool()),
                 lambda: TF.conv2d(torch.from_numpy(x).bool(), torch.from_numpy(w).bool()))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_conv_integer_dtypes_match_torch(dtype):
    rng = np.random.default_rng(4)
    x, w = rng.integers(0, 5, (2, 3, 6, 6)), rng.integers(0, 3, (4, 3, 3, 3))
    for fn, ww in (("conv2d", w), ("conv_transpose2d", w.transpose(1, 0, 2, 3).copy())):
        def call(mod, F, fn=fn, ww=ww):
            return getattr(F, fn)(mod.from_numpy(x).to(getattr(mod, dtype)),
                                  mod.from_numpy(ww).to(getattr(mod, dtype)), stride=2)
        if fn == "conv_transpose2d" and dtype != "int64":  # torch's takes int64 only
            _raises_like(lambda: call(ignis, IF), lambda: call(torch, TF))
            continue
        yi, yt = call(ignis, IF), call(torch, TF)
        assert yi.dtype == getattr(ignis, dtype)
        np.testing.assert_array_equal(yi.numpy(), yt.numpy())


# --- modules ---------------------------------------------------------------------------
def _copy_params(mi, mt):
    for (n1, p1), (n2, p2) in zip(mi.named_parameters(), mt.named_parameters()):
        assert n1 == n2 and tuple(p1.shape) == tuple(p2.shape), (n1, n2)
        with torch.no_grad():
            p2.copy_(torch.from_numpy(p1.detach().numpy().copy()))


MODULES = [
    ("Conv2d", (3, 6, 3), {"padding": 1}, (2, 3, 9, 9)),
    ("Conv2d", (4, 6, (3, 2)), {"stride": 2, "groups": 2, "bias": False}, (2, 4, 9, 9)),
    ("Conv2d", (3, 4, 3), {"padding": "same", "dilation": 2}, (2, 3, 9, 8)),
    ("Conv2d", (3, 4, 4), {"padding": "same"}, (2, 3, 9, 8)),
    ("Conv1d", (3, 4, 3), {"padding": 2, "padding_mode": "reflect"}, (2, 3, 9)),
] + [("Conv2d", (3, 4, 3), {"padding": (1, 2), "padding_mode": m}, (2, 3, 7, 8))
     for m in ("reflect", "replicate", "circular")] + [
    ("Conv2d", (3, 4, 4), {"padding": "same", "padding_mode": "circular"}, (2, 3, 7, 8)),
    ("ConvTranspose2d", (4, 3, 4), {"stride": 2, "padding": 1}, (2, 4, 5, 5)),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "groups": 2, "output_padding": 1}, (2, 4, 5, 5)),
    ("ConvTranspose1d", (4, 3, 3), {"stride": 2, "dilation": 2}, (2, 4, 6)),
    ("Conv3d", (2, 3, 3), {"padding": 1}, (1, 2, 4, 5, 4)),
]


@pytest.mark.parametrize("name,args,kw,xs", MODULES, ids=lambda v: str(v))
def test_conv_module_matches_torch(name, args, kw, xs):
    ignis.manual_seed(0)
    mi = getattr(ignis.nn, name)(*args, **kw).double()
    mt = getattr(torch.nn, name)(*args, **kw).double()
    assert tuple(mi.weight.shape) == tuple(mt.weight.shape)
    assert repr(mi) == repr(mt)
    _copy_params(mi, mt)
    x = np.random.default_rng(1).standard_normal(xs)
    xi, xt = _pair(x, "float64", True)
    yi, yt = mi(xi), mt(xt)
    _close(_np(yi), _np(yt), "float64", "forward")
    yi.sum().backward()
    yt.sum().backward()
    _close(_np(xi.grad), _np(xt.grad), "float64", "grad of input")
    for (n, pi), (_, pt) in zip(mi.named_parameters(), mt.named_parameters()):
        _close(_np(pi.grad), _np(pt.grad), "float64", f"grad of {n}")


def test_conv_module_init_statistics_match_torch():
    # kaiming-uniform(a=sqrt(5)): U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    m = ignis.nn.Conv2d(16, 32, 3)
    bound = 1 / np.sqrt(16 * 9)
    w = m.weight.detach().numpy()
    assert w.min() >= -bound and w.max() <= bound and w.std() > bound / 2
    assert np.abs(m.bias.detach().numpy()).max() <= bound


def test_conv_transpose_output_size_matches_torch():
    ignis.manual_seed(0)
    mi = ignis.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1).double()
    mt = torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1).double()
    _copy_params(mi, mt)
    x = np.random.default_rng(2).standard_normal((1, 3, 5, 5))
    for size in ([10, 10], [9, 10], (1, 2, 10, 9)):
        yi = mi(ignis.from_numpy(x), output_size=size)
        yt = mt(torch.from_numpy(x), output_size=size)
        _close(_np(yi), _np(yt), "float64", str(size))
    _raises_like(lambda: mi(ignis.from_numpy(x), output_size=[12, 12]),
                 lambda: mt(torch.from_numpy(x), output_size=[12, 12]))


@pytest.mark.parametrize("kw", [{"groups": 4}, {"groups": 0}, {"padding": "full"},
                                {"padding": "same", "stride": 2}, {"padding_mode": "mirror"}])
def test_conv_module_bad_arguments_raise_like_torch(kw):
    _raises_like(lambda: ignis.nn.Conv2d(6, 3, 3, **kw), lambda: torch.nn.Conv2d(6, 3, 3, **kw))


def test_conv_transpose_module_rejects_padding_modes():
    _raises_like(lambda: ignis.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"),
                 lambda: torch.nn.ConvTranspose2d(2, 3, 3, padding_mode="reflect"))


def test_conv_state_dict_loads_into_torch():
    mi = ignis.nn.Conv2d(3, 4, 3)
    mt = torch.nn.Conv2d(3, 4, 3)
    sd = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in mi.state_dict().items()}
    mt.load_state_dict(sd)
    x = np.random.default_rng(3).standard_normal((1, 3, 6, 6)).astype(np.float32)
    _close(_np(mi(ignis.from_numpy(x))), _np(mt(torch.from_numpy(x))), "float32", "forward")


def test_conv_grid_float64_against_torch():
    """A sweep of strides x paddings x dilations x groups on one 2-D shape."""
    for stride, pad, dil, groups in itertools.product([1, 2, 3], [0, 1, 2], [1, 2], [1, 3]):
        _compare("conv2d", (2, 6, 9, 10), (6, 6 // groups, 3, 2), True,
                 {"stride": stride, "padding": pad, "dilation": dil, "groups": groups})
        if pad < 2:
            _compare("conv_transpose2d", (2, 6, 4, 5), (6, 2, 3, 2), True,
                     {"stride": stride, "padding": pad, "dilation": dil, "groups": groups,
                      "output_padding": min(stride, dil) - 1})
