"""The CNN ops on CUDA (src/ignis/kernels/cuda: pooling, batch_norm, conv):
each called on CUDA tensors and compared with the same call on the CPU,
forward and gradients, over the windows, strides, paddings, groups and
dtypes the CPU kernels take. Pooling and batch norm compute as the CPU's
kernels do, so they agree bit for bit in float32/float64 (the gradient of
max pooling included: the CUDA backward adds in the CPU's order); a
convolution's products run on cuBLASLt and agree to rounding.

Needs a GPU (skipped with the reason elsewhere); tests/cuda_fake/run.sh runs
it on the fake driver: FAKE_CUDA_TESTS=test_cuda_nn.py.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")


def _np(t):
    return t.detach().cpu().float().numpy() if t.dtype in (ignis.float16, ignis.bfloat16) \
        else t.detach().cpu().numpy()


def _both(fn, inputs, grad_seed=0, exact=True, rtol=1e-5, atol=1e-6):
    """fn on CPU and on CUDA copies of `inputs` (float tensors get gradients);
    compares every output and every input's gradient for a random upstream
    gradient."""
    outs = {}
    grads = {}
    for dev in ("cpu", "cuda"):
        xs = [x.detach().to(dev).requires_grad_(x.is_floating_point())
              if isinstance(x, ignis.Tensor)
              else x for x in inputs]
        out = fn(*xs)
        out = out if isinstance(out, tuple) else (out,)
        outs[dev] = out
        rng = np.random.default_rng(grad_seed)
        loss = None
        for o in out:
            if o.is_floating_point():
                g = ignis.from_numpy(rng.standard_normal(tuple(o.shape))).to(o.dtype).to(dev)
                term = (o * g).sum()
                loss = term if loss is None else loss + term
        loss.backward()
        grads[dev] = [x.grad for x in xs if isinstance(x, ignis.Tensor) and x.is_floating_point()]
    for a, b in zip(outs["cpu"], outs["cuda"]):
        assert b.device.type == "cuda" and b.dtype == a.dtype and b.shape == a.shape
        if exact:
            np.testing.assert_array_equal(_np(b), _np(a))
        else:
            np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)
    for a, b in zip(grads["cpu"], grads["cuda"]):
        assert b is not None and b.device.type == "cuda"
        if exact:
            np.testing.assert_array_equal(_np(b), _np(a))
        else:
            np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)


def _randn(*shape, dtype=ignis.float32, seed=0):
    return ignis.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


# ---- pooling --------------------------------------------------------------------------------

MAX_POOLS = [  # kernel, stride, padding, dilation, ceil_mode
    (2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False),
    ((2, 3), (1, 2), (1, 0), (2, 1), True), (5, 3, 2, 1, True),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", MAX_POOLS)
def test_max_pool2d_and_its_gradient_match_cpu(dtype, case):
    k, s, p, d, ceil = case
    x = _randn(2, 3, 11, 13, dtype=getattr(ignis, dtype))
    _both(lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil, return_indices=True), [x])


def test_max_pool2d_of_ties_nan_and_overlapping_windows():
    # Ties keep the first position, NaN wins, and overlapping windows (stride
    # 1) add several gradients into one input in the CPU's order.
    x = ignis.tensor([[[[1., 1., 2., 2.], [1., float("nan"), 2., 0.],
                        [3., 3., 3., 3.], [0., 0., 5., 5.]]]])
    _both(lambda t: F.max_pool2d(t, 2, 1, return_indices=True), [x])
    _both(lambda t: F.max_pool2d(t, 3, 1, 1, return_indices=True), [_randn(1, 2, 6, 6).round()])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("case", [  # kernel, stride, padding, ceil, count_include_pad, divisor
    (2, 2, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, True, False, None),
    (3, 1, 1, False, False, None), ((3, 2), (2, 1), (1, 1), True, True, None),
    (2, 2, 1, False, True, 3)])
def test_avg_pool2d_and_its_gradient_match_cpu(dtype, case):
    k, s, p, ceil, cip, div = case
    x = _randn(2, 3, 9, 10, dtype=getattr(ignis, dtype))
    _both(lambda t: F.avg_pool2d(t, k, s, p, ceil, cip, div), [x])


@pytest.mark.parametrize("out", [(1, 1), (3, 5), (7, 7), (4, 13)])
def test_adaptive_pooling_and_gradients_match_cpu(out):
    x = _randn(2, 3, 10, 13)
    _both(lambda t: F.adaptive_avg_pool2d(t, out), [x])
    _both(lambda t: F.adaptive_max_pool2d(t, out, return_indices=True), [x])


def test_pooling_of_unbatched_and_empty_batches():
    _both(lambda t: F.max_pool2d(t, 2, return_indices=True), [_randn(3, 8, 8)])
    _both(lambda t: F.avg_pool2d(t, 3, 2, 1), [_randn(3, 8, 8)])
    for fn in (lambda t: F.max_pool2d(t, 2), lambda t: F.avg_pool2d(t, 2),
               lambda t: F.adaptive_avg_pool2d(t, 3)):
        y = fn(ignis.zeros(0, 3, 8, 8, device="cuda"))
        assert y.device.type == "cuda" and y.shape[0] == 0


def test_max_pool2d_of_integers_matches_cpu():
    x = ignis.from_numpy(np.random.default_rng(1).integers(-50, 50, (2, 3, 7, 7)))
    a = F.max_pool2d(x, 3, 2, 1)
    b = F.max_pool2d(x.cuda(), 3, 2, 1)
    assert b.dtype == ignis.int64
    np.testing.assert_array_equal(b.cpu().numpy(), a.numpy())


def test_pooling_errors_on_cuda_are_the_cpus():
    x = ignis.zeros(1, 1, 4, 4, device="cuda")
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(x, 2, 2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.ops.max_pool2d_with_indices_backward(x, x.cpu(), [2], [2], [0], [1], False,
                                                   ignis.zeros(1, 1, 2, 2, dtype=ignis.int64))


# ---- batch norm -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 7), (2, 5, 6, 7), (1, 2, 3, 2, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_its_gradients_match_cpu(dtype, shape, training):
    dt = getattr(ignis, dtype)
    tol = {"float32": 1e-5, "float64": 1e-12}.get(dtype, 1e-2)
    C = shape[1]
    x = _randn(*shape, dtype=dt, seed=1)
    w, b = _randn(C, dtype=dt, seed=2), _randn(C, dtype=dt, seed=3)
    stats = {}
    for dev in ("cpu", "cuda"):
        rm, rv = _randn(C, dtype=dt, seed=4).to(dev), _randn(C, dtype=dt, seed=5).abs().to(dev)
        stats[dev] = (rm, rv)

    def fn(xx, ww, bb):
        rm, rv = stats[xx.device.type]
        return F.batch_norm(xx, rm, rv, ww, bb, training=training, momentum=0.3, eps=1e-4)

    _both(fn, [x, w, b], exact=False, rtol=tol, atol=tol)
    for a, bt in zip(stats["cpu"], stats["cuda"]):  # the running statistics' update
        np.testing.assert_allclose(_np(bt), _np(a), rtol=tol, atol=tol)


def test_batch_norm_module_trains_on_cuda_as_on_cpu():
    import ignis.nn as nn
    ignis.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    mc = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))
    mc.load_state_dict(m.state_dict())
    mc = mc.cuda()
    x = _randn(16, 6, seed=7)
    for model, xx in ((m, x), (mc, x.cuda())):
        opt = ignis.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            model(xx).square().mean().backward()
            opt.step()
    for (k, a), (_, b) in zip(m.state_dict().items(), mc.state_dict().items()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-4, atol=1e-5, err_msg=k)
    m.eval()
    mc.eval()
    np.testing.assert_allclose(_np(mc(x.cuda())), _np(m(x)), rtol=1e-4, atol=1e-5)


# ---- convolution ----------------------------------------------------------------------------

CONVS = [  # input shape, weight shape, stride, padding, dilation, groups, transposed, out_pad
    ((2, 3, 9, 11), (4, 3, 3, 3), 1, 1, 1, 1, False, 0),
    ((2, 4, 10, 9), (6, 2, 3, 2), (2, 1), (1, 0), (1, 2), 2, False, 0),
    ((3, 4, 8, 8), (4, 1, 3, 3), 1, 1, 1, 4, False, 0),  # depthwise
    ((2, 3, 7, 7), (5, 3, 1, 1), 1, 0, 1, 1, False, 0),  # 1x1
    ((2, 3, 17), (4, 3, 5), 2, 2, 1, 1, False, 0),  # 1-D
    ((1, 2, 5, 6, 7), (3, 2, 2, 3, 2), 1, (1, 0, 1), 1, 1, False, 0),  # 3-D
    ((2, 4, 5, 6), (4, 3, 3, 3), 2, 1, 1, 1, True, 1),  # transposed
    ((2, 4, 5, 5), (4, 2, 2, 3), (2, 1), (0, 1), (1, 2), 2, True, 0),  # grouped transposed
    ((2, 3, 9), (3, 5, 4), 3, 1, 1, 1, True, 2),  # 1-D transposed
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CONVS)
@pytest.mark.parametrize("bias", [True, False])
def test_convolution_and_its_gradients_match_cpu(dtype, case, bias):
    xs, ws, stride, pad, dil, groups, transposed, out_pad = case
    dt = getattr(ignis, dtype)
    nd = len(xs) - 2
    tup = lambda v: list(v) if isinstance(v, tuple) else [v] * nd  # noqa: E731
    cout = ws[1] * groups if transposed else ws[0]
    inputs = [_randn(*xs, dtype=dt, seed=1), _randn(*ws, dtype=dt, seed=2)]
    if bias:
        inputs.append(_randn(cout, dtype=dt, seed=3))

    def fn(x, w, b=None):
        return ignis.ops.convolution(x, w, b, tup(stride), tup(pad), tup(dil), transposed,
                                     tup(out_pad), groups)

    tol = 1e-4 if dtype == "float32" else 1e-10
    _both(fn, inputs, exact=False, rtol=tol, atol=tol)


def test_conv2d_module_trains_on_cuda_as_on_cpu():
    import ignis.nn as nn
    ignis.manual_seed(0)

    def make():
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Conv2d(4, 8, 3, stride=2), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3))
    m, mc = make(), make()
    mc.load_state_dict(m.state_dict())
    mc = mc.cuda()
    x = _randn(8, 1, 12, 12, seed=5)
    y = ignis.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    losses = {}
    for key, model, xx, yy in (("cpu", m, x, y), ("cuda", mc, x.cuda(), y.cuda())):
        opt = ignis.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        losses[key] = []
        for _ in range(4):
            opt.zero_grad()
            loss = F.cross_entropy(model(xx), yy)
            loss.backward()
            opt.step()
            losses[key].append(loss.item())
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-4)
    for (k, a), (_, b) in zip(m.state_dict().items(), mc.state_dict().items()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-3, atol=1e-4, err_msg=k)


def test_convolution_of_16_bit_floats_and_an_empty_batch():
    for dt in (ignis.float16, ignis.bfloat16):
        x, w = _randn(2, 3, 6, 6, dtype=dt), _randn(4, 3, 3, 3, dtype=dt, seed=1)
        a = F.conv2d(x, w, padding=1)
        b = F.conv2d(x.cuda(), w.cuda(), padding=1)
        assert b.dtype == dt and b.device.type == "cuda"
        np.testing.assert_allclose(_np(b), _np(a), rtol=2e-2, atol=2e-2)
    y = F.conv2d(ignis.zeros(0, 3, 6, 6, device="cuda"), ignis.ones(4, 3, 3, 3, device="cuda"))
    assert tuple(y.shape) == (0, 4, 4, 4) and y.device.type == "cuda"


# ---- scatter_reduce -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int8", "uint8", "bool"])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_cpu_bit_for_bit(dtype, reduce, include_self):
    # The CUDA kernel folds the values meeting at an element in the CPU's
    # order, rounding to the dtype after each step as the CPU does.
    if dtype == "bool" and reduce == "mean":
        pytest.skip("mean of bool is not defined (torch raises)")
    rng = np.random.default_rng(3)
    dt = getattr(ignis, dtype)
    if dtype == "bool":
        self_ = ignis.from_numpy(rng.integers(0, 2, (5, 7)).astype(bool))
        src = ignis.from_numpy(rng.integers(0, 2, (6, 7)).astype(bool))
    elif dtype in ("int64", "int32", "int8", "uint8"):
        self_ = ignis.from_numpy(rng.integers(0, 5, (5, 7))).to(dt)
        src = ignis.from_numpy(rng.integers(0, 5, (6, 7))).to(dt)
    else:
        self_ = _randn(5, 7, dtype=dt, seed=4)
        src = _randn(6, 7, dtype=dt, seed=5)
        src[1, 2] = float("nan")
        src[2, 3] = -0.0
    index = ignis.from_numpy(rng.integers(0, 5, (6, 7)))
    for dim, idx, s in ((0, index, src), (1, index[:5, :5].clone() % 7, src[:5, :5])):
        a = ignis.scatter_reduce(self_, dim, idx, s, reduce, include_self=include_self)
        b = ignis.scatter_reduce(self_.cuda(), dim, idx.cuda(), s.cuda(), reduce,
                                 include_self=include_self)
        assert b.device.type == "cuda" and b.dtype == a.dtype
        np.testing.assert_array_equal(_np(b), _np(a))
    # in place, and a strided view of self
    a = self_.clone().t()
    b = self_.clone().cuda().t()
    a.scatter_reduce_(0, index[:5, :5].clone() % 7, src[:5, :5].t(), reduce,
                      include_self=include_self)
    b.scatter_reduce_(0, (index[:5, :5].clone() % 7).cuda(), src[:5, :5].t().cuda(), reduce,
                      include_self=include_self)
    np.testing.assert_array_equal(_np(b), _np(a))


def test_scatter_reduce_gradients_and_errors_on_cuda():
    x, src = _randn(4, 3), _randn(6, 3, seed=1)
    idx = ignis.tensor([[0, 1, 2], [0, 0, 1], [3, 1, 0], [2, 2, 2], [1, 3, 0], [0, 1, 3]])
    for reduce in ("sum", "mean", "amax", "amin"):
        _both(lambda a, s: ignis.scatter_reduce(a, 0, idx.to(a.device), s, reduce), [x, src])
    with pytest.raises(RuntimeError, match="out of bounds"):
        ignis.scatter_reduce(x.cuda(), 0, (idx + 4).cuda(), src.cuda(), "sum")
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        ignis.scatter_reduce(x.cuda(), 0, idx.cuda(), src.cuda(), "max")


def test_unfold_and_fold_match_cpu():
    # Overlapping blocks sum through index_add (atomic on CUDA, in no fixed
    # order): equal to rounding.
    x = _randn(2, 3, 7, 6)
    _both(lambda t: F.unfold(t, (2, 3), 1, 1, (2, 1)), [x], exact=False)
    cols = _randn(2, 12, 9, seed=1)
    _both(lambda t: F.fold(t, (4, 5), (2, 3), 1, 1, 2), [cols], exact=False)


@pytest.mark.parametrize("name,kw", [
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=3)),
    ("GRU", dict(num_layers=2, batch_first=True)),
    ("GRU", dict(bidirectional=True, bias=False)),
    ("RNN", dict(nonlinearity="relu")),
])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_recurrent_layers_match_cpu(name, kw, compiled):
    """nn.LSTM/GRU/RNN on CUDA against the same layer on the CPU: outputs,
    final states and every gradient. A layer's direction runs as one
    _rnn_recurrence op (ops/rnn.cpp), whose step loop calls the CUDA cell and
    GEMM kernels; compiled, that op is an extern call of the generated
    wrapper (Note [A recurrence as one op])."""
    ignis.manual_seed(0)
    cpu = getattr(ignis.nn, name)(5, 8, **kw)
    gpu = getattr(ignis.nn, name)(5, 8, **kw).cuda()
    gpu.load_state_dict({k: v.cuda() for k, v in cpu.state_dict().items()})
    x = _randn(3, 7, 5) if kw.get("batch_first") else _randn(7, 3, 5)

    def run(m):
        def f(x):
            out, state = m(x)
            h = state[0] if name == "LSTM" else state
            return out, h
        return ignis.compile(f) if compiled else f

    outs = {}
    for dev, m in (("cpu", cpu), ("cuda", gpu)):
        xd = x.detach().to(dev).requires_grad_(True)
        out, h = run(m)(xd)
        (out.square().mean() + (h * 0.5).sum()).backward()
        outs[dev] = [out, h, xd.grad] + [p.grad for p in m.parameters()]
    for a, b in zip(outs["cpu"], outs["cuda"]):
        assert b is not None and b.device.type == "cuda" and b.shape == a.shape
        np.testing.assert_allclose(_np(b), _np(a), rtol=2e-4, atol=2e-5)
