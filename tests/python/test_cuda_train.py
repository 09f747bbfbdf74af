"""Training on CUDA: the ops the example GPT's training step needs beyond the
pointwise, reduction, row and GEMM kernels (test_cuda_ops.py, test_cuda_blas.py):
indexing (kernels/cuda/index_kernels), ranges and random numbers
(kernels/cuda/random_kernels), losses and the other ops that run on CUDA
through their decomposition, attention, the optimizers, and the GPT itself.

Everywhere (no GPU needed):
  * the indexing and random kernels compile with NVRTC for sm_90 (skipped,
    saying why, without NVRTC);
  * every op one training step of the GPT (examples/gpt.py, with and without
    dropout; AdamW, Adam and SGD) dispatches has a CUDA kernel, read from the
    registry after tracing the step on the CPU.
On a GPU (skipped with the reason elsewhere): each op against the CPU, values
and gradients; the same seed gives the same rand/randn/bernoulli/dropout
numbers on both devices; optimizer steps; a few GPT training steps on CUDA
give the CPU's losses.
"""
import copy
import os
import pathlib
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
from gpt import GPTConfig, build_gpt, configure_optimizer  # noqa: E402

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")

FLOATS = ["float16", "bfloat16", "float32", "float64"]
ALL = ["bool", "uint8", "int8", "int16", "int32", "int64"] + FLOATS


def _dt(name):
    return getattr(ignis, name)


def _np(t):
    t = t.detach().cpu()
    if t.dtype in (ignis.bfloat16, ignis.float16):
        t = t.float()
    return t.numpy()


def _sample(shape, dtype, seed=0, low=-3, high=3):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return ignis.from_numpy(rng.integers(0, 2, size=shape).astype(bool))
    if dtype in ("uint8",):
        return ignis.from_numpy(rng.integers(0, 50, size=shape).astype(np.uint8))
    if dtype in ("int8", "int16", "int32", "int64"):
        return ignis.from_numpy(rng.integers(low, high + 1, size=shape).astype(dtype))
    return ignis.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(_dt(dtype))


def _tol(dtype):
    return {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12}.get(dtype, 0)


def assert_close(got, want, dtype=None, scale=1.0):
    assert got.device.type == "cuda", got.device
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape)
    tol = _tol(dtype or str(want.dtype).split(".")[-1]) * scale
    np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)


# ---- everywhere --------------------------------------------------------------------------

def test_index_and_random_kernel_units_exist():
    # test_cuda_ops.py's test_every_generated_kernel_compiles_with_nvrtc compiles every
    # unit, these included; here: that each dtype has its indexing and random units.
    units = [u for u in ignis._C._cuda_eager_kernel_units()
             if u[0].startswith(("index_", "random_"))]
    labels = {u[0] for u in units}
    for dt in ALL:
        assert f"index_{dt}.cu" in labels and f"random_{dt}.cu" in labels, dt
    for label, source, options, kernels in units:
        assert kernels >= 3 if label.startswith("index_") else kernels >= 1, label


def test_index_and_random_kernel_sources():
    units = {u[0]: u[1] for u in ignis._C._cuda_eager_kernel_units()}
    idx = units["index_float16.cu"]
    assert "atomicCAS" in idx and "ig_map_add<ig_half, float>" in idx
    assert "ig_map_add<float, float>" in units["index_float32.cu"]
    rnd = units["random_float32.cu"]
    # The CPU's Philox constants and Box-Muller (kernels/cpu/random.h, fill.cpp).
    for s in ("0xD2511F53u", "0xCD9E8D57u", "0x9E3779B9u", "0xBB67AE85u", "6.283185307179586"):
        assert s in rnd, s
    assert "ig_dropout<float, float>" in rnd


def _gpt_step_ops(dropout, opt_name="adamw", use_mha=False):
    cfg = GPTConfig(dropout=dropout, use_mha=use_mha)
    ignis.manual_seed(0)
    model = build_gpt(ignis)(cfg)
    if opt_name == "adamw":
        opt = configure_optimizer(ignis, model)
    elif opt_name == "adam":
        opt = ignis.optim.Adam(model.parameters(), lr=1e-3, weight_decay=0.01)
    else:
        opt = ignis.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9, weight_decay=0.01)
    x = ignis.randint(0, cfg.vocab_size, (2, cfg.block_size))
    y = ignis.randint(0, cfg.vocab_size, (2, cfg.block_size))

    def step():
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    step()  # optimizer state exists from here on
    return sorted(set(ignis._C._dispatch_trace(step)))


@pytest.mark.parametrize("dropout,opt_name,use_mha", [
    (0.0, "adamw", False), (0.1, "adamw", False), (0.1, "adamw", True), (0.0, "adam", False),
    (0.0, "sgd", False)])
def test_every_op_of_a_gpt_training_step_has_a_cuda_kernel(dropout, opt_name, use_mha):
    names = _gpt_step_ops(dropout, opt_name, use_mha)
    assert "index_put_" in names and "addmm" in names
    missing = []
    for n in names:
        op = getattr(ignis.ops, n.split(".")[0])
        if not op.has_cuda_kernel:
            missing.append(n)
    assert not missing, missing


def test_indexing_and_random_ops_have_cuda_kernels():
    for n in ["index_select", "gather", "scatter", "scatter_add", "index_add", "index_copy",
              "index_fill", "index", "index_put_", "embedding", "cat", "tril", "triu", "flip",
              "roll", "pad", "repeat", "arange", "rand", "randn", "randint", "uniform_",
              "normal_", "bernoulli_", "native_dropout", "nll_loss", "cross_entropy",
              "_scaled_dot_product_attention", "_scaled_dot_product_attention_backward",
              "linspace", "eye", "rms_norm", "one_hot", "mse_loss"]:
        assert getattr(ignis.ops, n).has_cuda_kernel, n
    for n in ["cumsum", "cumprod", "sort", "topk", "argsort", "scatter_reduce",
              "scatter_reduce_"]:
        assert getattr(ignis.ops, n).has_cuda_kernel, n


def test_cnn_ops_have_cuda_kernels():
    # Convolution, pooling and batch norm (kernels/cuda: conv, pooling,
    # batch_norm; test_cuda_nn.py compares them with the CPU's on a GPU).
    for n in ["convolution", "convolution_backward", "max_pool2d_with_indices",
              "max_pool2d_with_indices_backward", "avg_pool2d", "avg_pool2d_backward",
              "_adaptive_avg_pool2d", "_adaptive_avg_pool2d_backward", "adaptive_max_pool2d",
              "adaptive_max_pool2d_backward", "_native_batch_norm_legit_functional",
              "native_batch_norm_backward"]:
        assert getattr(ignis.ops, n).has_cuda_kernel, n


# ---- on a GPU: random numbers --------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_matches_cpu_bit_for_bit(dtype):
    for shape in [(7,), (33, 65), (1000, 3)]:
        ignis.manual_seed(123)
        a = ignis.rand(*shape, dtype=_dt(dtype))
        ignis.manual_seed(123)
        b = ignis.rand(*shape, dtype=_dt(dtype), device="cuda")
        assert b.device.type == "cuda"
        np.testing.assert_array_equal(_np(b), _np(a))
    # The stream continues from the same offset on both.
    ignis.manual_seed(5)
    a1, a2 = ignis.rand(10), ignis.rand(10)
    ignis.manual_seed(5)
    b1, b2 = ignis.rand(10, device="cuda"), ignis.rand(10, device="cuda")
    np.testing.assert_array_equal(_np(b2), _np(a2))
    np.testing.assert_array_equal(_np(b1), _np(a1))


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_and_normal_match_cpu(dtype):
    ignis.manual_seed(7)
    a = ignis.randn(257, 31, dtype=_dt(dtype))
    ignis.manual_seed(7)
    b = ignis.randn(257, 31, dtype=_dt(dtype), device="cuda")
    # Box-Muller in double: the device's log/cos may differ in the last bit.
    tol = 1e-13 if dtype == "float64" else 1e-6
    np.testing.assert_allclose(_np(b), _np(a), rtol=tol, atol=tol)
    a = ignis.empty(40, 30, dtype=_dt(dtype)).t()
    b = ignis.empty(40, 30, dtype=_dt(dtype), device="cuda").t()
    ignis.manual_seed(8)
    a.normal_(2.0, 0.5)
    ignis.manual_seed(8)
    b.normal_(2.0, 0.5)
    np.testing.assert_allclose(_np(b), _np(a), rtol=max(tol, _tol(dtype)), atol=tol)


@needs_gpu
def test_uniform_bernoulli_randint_and_generators_match_cpu():
    for dtype in FLOATS:
        a = ignis.empty(100, 7, dtype=_dt(dtype))
        b = ignis.empty(100, 7, dtype=_dt(dtype), device="cuda")
        ignis.manual_seed(3)
        a.uniform_(-2.0, 5.0)
        ignis.manual_seed(3)
        b.uniform_(-2.0, 5.0)
        # from + range * u in double: a compiler may fuse it (FMA) on either
        # side, which moves the last bit of a double (not of the narrower types).
        tol = 1e-15 if dtype == "float64" else 0
        np.testing.assert_allclose(_np(b), _np(a), rtol=tol, atol=tol)
        ignis.manual_seed(4)
        a.bernoulli_(0.3)
        ignis.manual_seed(4)
        b.bernoulli_(0.3)
        np.testing.assert_array_equal(_np(b), _np(a))
    for dtype in ["int64", "int32", "uint8", "float32"]:
        ignis.manual_seed(9)
        a = ignis.randint(-5 if dtype != "uint8" else 0, 20, (300,), dtype=_dt(dtype))
        ignis.manual_seed(9)
        b = ignis.randint(-5 if dtype != "uint8" else 0, 20, (300,), dtype=_dt(dtype),
                          device="cuda")
        np.testing.assert_array_equal(_np(b), _np(a))
    g1, g2 = ignis.Generator().manual_seed(11), ignis.Generator().manual_seed(11)
    np.testing.assert_array_equal(_np(ignis.rand(50, generator=g2, device="cuda")),
                                  _np(ignis.rand(50, generator=g1)))
    a = ignis.empty(64)
    b = ignis.empty(64, device="cuda")
    a.bernoulli_(ignis.full((64,), 0.5))
    b.bernoulli_(ignis.full((64,), 0.5, device="cuda"))  # the composite runs on CUDA


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_masks_match_cpu(dtype):
    x = _sample((37, 129), dtype)
    xc = x.cuda()
    for p in [0.1, 0.5, 0.9]:
        ignis.manual_seed(21)
        out, mask = ignis.ops.native_dropout(x, p, True)
        ignis.manual_seed(21)
        gout, gmask = ignis.ops.native_dropout(xc, p, True)
        assert gmask.dtype == ignis.bool and gout.device.type == "cuda"
        np.testing.assert_array_equal(_np(gmask), _np(mask))
        np.testing.assert_array_equal(_np(gout), _np(out))
        ignis.manual_seed(22)
        want = F.dropout(x, p)
        ignis.manual_seed(22)
        got = F.dropout(xc, p)
        np.testing.assert_array_equal(_np(got), _np(want))
    out, mask = ignis.ops.native_dropout(xc, 0.5, False)
    assert bool(mask.all()) and np.array_equal(_np(out), _np(x))


@needs_gpu
def test_dropout_backward_on_cuda():
    x = _sample((16, 33), "float32")
    xa, xb = x.clone().requires_grad_(), x.cuda().requires_grad_()
    ignis.manual_seed(1)
    (F.dropout(xa, 0.3) * 2).sum().backward()
    ignis.manual_seed(1)
    (F.dropout(xb, 0.3) * 2).sum().backward()
    np.testing.assert_allclose(_np(xb.grad), _np(xa.grad), rtol=1e-6)


@needs_gpu
def test_arange_linspace_eye_match_cpu():
    cases = [((10,), {}), ((2, 17, 3), {}), ((-4.5, 3.0, 0.25), {}),
             ((5,), {"dtype": ignis.float16}), ((0, 1000, 7), {"dtype": ignis.int32}),
             ((1.0, 2.0, 0.1), {"dtype": ignis.float64}), ((300,), {"dtype": ignis.bfloat16})]
    for args, kw in cases:
        want = ignis.arange(*args, **kw)
        got = ignis.arange(*args, device="cuda", **kw)
        assert got.dtype == want.dtype
        # start + step * i in double: a fused multiply-add on either side moves
        # the last bit of a double only.
        tol = 1e-15 if want.dtype == ignis.float64 else 0
        np.testing.assert_allclose(_np(got), _np(want), rtol=tol, atol=tol)
    np.testing.assert_allclose(_np(ignis.linspace(-1, 3, 11, device="cuda")),
                               _np(ignis.linspace(-1, 3, 11)), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(_np(ignis.eye(4, 6, device="cuda")), _np(ignis.eye(4, 6)))


# ---- on a GPU: indexing ----------------------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", ALL)
def test_index_select_gather_and_views_match_cpu(dtype):
    x = _sample((6, 9, 5), dtype)
    xc = x.cuda()
    for idx_dt in (ignis.int64, ignis.int32):
        idx = ignis.tensor([4, 0, 4, 2, 5], dtype=idx_dt)
        for dim in range(3):
            i = idx % x.shape[dim]
            assert_close(ignis.index_select(xc, dim, i.cuda()), ignis.index_select(x, dim, i))
    xt = x.transpose(0, 2)
    assert_close(ignis.index_select(xt.cuda(), 1, ignis.tensor([1, 1, 8]).cuda()),
                 ignis.index_select(xt, 1, ignis.tensor([1, 1, 8])))
    g = ignis.randint(0, 9, (6, 4, 5))
    assert_close(ignis.gather(xc, 1, g.cuda()), ignis.gather(x, 1, g))
    assert_close(xc.flip(0, 2), x.flip(0, 2))
    assert_close(xc.roll(3, 1), x.roll(3, 1))
    assert_close(xc.roll(-7), x.roll(-7))
    assert_close(xc.repeat(2, 1, 3), x.repeat(2, 1, 3))
    if dtype != "bool":
        assert_close(F.pad(xc, (1, 2, 0, 3)), F.pad(x, (1, 2, 0, 3)))
    assert_close(ignis.tril(xc, -1), ignis.tril(x, -1))
    assert_close(ignis.triu(xc, 2), ignis.triu(x, 2))
    assert_close(ignis.tril(xc.transpose(1, 2)), ignis.tril(x.transpose(1, 2)))
    y, yc = x.clone(), xc.clone()
    y.triu_(1)
    yc.triu_(1)
    assert_close(yc, y)


@needs_gpu
def test_advanced_indexing_matches_cpu():
    x = _sample((5, 7, 4), "float32")
    xc = x.cuda()
    i = ignis.tensor([[0, 4], [3, 3]])
    j = ignis.tensor([6, 1])
    for key in [(i,), (slice(None), j), (i, j), (i, slice(None), ignis.tensor([0, 3])),
                (Ellipsis, ignis.tensor([1, 1, 2])), (x[:, 0, 0] > 0,), (x > 0.5,)]:
        kc = tuple(k.cuda() if isinstance(k, ignis.Tensor) else k for k in key)
        assert_close(xc[kc], x[key])
        assert_close(xc[key], x[key])  # CPU indices for a CUDA tensor, as torch allows
    assert_close(ignis.masked_select(xc, xc > 0), ignis.masked_select(x, x > 0))
    np.testing.assert_array_equal(_np(ignis.nonzero(xc > 1)), _np(ignis.nonzero(x > 1)))
    assert_close(ignis.take(xc, ignis.tensor([0, 139, -1]).cuda()),
                 ignis.take(x, ignis.tensor([0, 139, -1])))
    # (a CUDA index is checked on the device: raised at the next synchronization)
    with pytest.raises(IndexError, match="out of bounds"):
        xc[ignis.tensor([5]).cuda()]
        ignis.cuda.synchronize()


@needs_gpu
@pytest.mark.parametrize("dtype", ALL)
def test_index_put_accumulate_and_scatter_add_with_repeated_indices(dtype):
    # Repeated indices add up (atomically on the GPU, 8- and 16-bit types by
    # compare-and-swap); small integer values keep every sum exact.
    base = _sample((6, 5), dtype, seed=1, low=-2, high=2)
    vals = _sample((8, 5), dtype, seed=2, low=-2, high=2)
    idx = ignis.tensor([0, 3, 3, 5, 0, 0, 2, 3])
    want = base.clone().index_put_((idx,), vals, accumulate=True)
    got = base.cuda().index_put_((idx.cuda(),), vals.cuda(), accumulate=True)
    assert_close(got, want, scale=8)
    want = base.index_add(0, idx, vals)
    got = base.cuda().index_add(0, idx.cuda(), vals.cuda())
    assert_close(got, want, scale=8)
    src = _sample((4, 5), dtype, seed=3, low=-2, high=2)
    sidx = ignis.tensor([[0, 1, 2, 3, 4], [0, 0, 0, 0, 0], [5, 5, 1, 1, 2], [0, 1, 2, 3, 4]])
    want = base.scatter_add(0, sidx, src)
    got = base.cuda().scatter_add(0, sidx.cuda(), src.cuda())
    assert_close(got, want, scale=8)
    # Without repeats: plain writes.
    u = ignis.tensor([4, 1, 0])
    want = base.clone().index_put_((u,), vals[:3])
    got = base.cuda().index_put_((u.cuda(),), vals[:3].cuda())
    assert_close(got, want)
    assert_close(base.cuda().index_copy(0, u.cuda(), vals[:3].cuda()),
                 base.index_copy(0, u, vals[:3]))
    assert_close(base.cuda().index_fill(1, ignis.tensor([0, 4]).cuda(), 1),
                 base.index_fill(1, ignis.tensor([0, 4]), 1))
    perm = ignis.tensor([[5, 4, 3, 2, 1], [0, 5, 4, 3, 2]])
    s2 = _sample((2, 5), dtype, seed=4)
    assert_close(base.cuda().scatter(0, perm.cuda(), s2.cuda()), base.scatter(0, perm, s2))
    assert_close(base.cuda().scatter(0, perm.cuda(), 1), base.scatter(0, perm, 1))


@needs_gpu
def test_atomic_adds_of_16_bit_neighbours_do_not_clobber_each_other():
    # Neighbouring float16/bfloat16 (and int8) elements share a 32-bit word:
    # many threads adding to both halves at once must lose nothing.
    for dtype in ["float16", "bfloat16", "int8", "int16", "bool"]:
        n = 4096
        idx = ignis.arange(n) % 4
        vals = ignis.ones(n, dtype=_dt(dtype))
        z = ignis.zeros(4, dtype=_dt(dtype))
        got = z.cuda().index_put_((idx.cuda(),), vals.cuda(), accumulate=True)
        want = z.index_put_((idx,), vals, accumulate=True) if dtype != "int8" else None
        if dtype == "int8":  # 1024 wraps to 0 in int8, as on the CPU
            want = ignis.zeros(4, dtype=ignis.int8).index_put_((idx,), vals, accumulate=True)
        assert_close(got, want, scale=1)


@needs_gpu
@pytest.mark.parametrize("dtype", FLOATS)
def test_embedding_forward_and_backward_match_cpu(dtype):
    w = _sample((50, 16), dtype)
    idx = ignis.tensor([[1, 2, 1, 49], [0, 0, 7, 1]])
    wa, wb = w.clone().requires_grad_(), w.cuda().requires_grad_()
    ya, yb = F.embedding(idx, wa), F.embedding(idx.cuda(), wb)
    assert_close(yb, ya)
    g = _sample(tuple(ya.shape), dtype, seed=5)
    ya.backward(g)
    yb.backward(g.cuda())
    assert_close(wb.grad, wa.grad, scale=4)
    wa.grad = wb.grad = None
    F.embedding(idx, wa, padding_idx=1).sum().backward()
    F.embedding(idx.cuda(), wb, padding_idx=1).sum().backward()
    assert_close(wb.grad, wa.grad)


@needs_gpu
def test_cat_and_stack_match_cpu():
    a, b = _sample((3, 4), "float32"), _sample((3, 2), "float16", seed=1)
    c = _sample((4, 3), "float32", seed=2).t()
    for dim in (1, -1):
        assert_close(ignis.cat([a.cuda(), b.cuda(), c.cuda()], dim), ignis.cat([a, b, c], dim))
    assert_close(ignis.stack([a.cuda(), c.cuda()], 1), ignis.stack([a, c], 1))
    x = _sample((4, 6), "float32").requires_grad_()
    xc = x.detach().cuda().requires_grad_()
    p, q = x.split([2, 4], 1)
    pc, qc = xc.split([2, 4], 1)
    (ignis.cat([q, p], 1) * ignis.arange(6.0)).sum().backward()
    (ignis.cat([qc, pc], 1) * ignis.arange(6.0, device="cuda")).sum().backward()
    assert_close(xc.grad, x.grad)


# ---- on a GPU: losses and attention ---------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"ignore_index": 3}, {"weight": True},
                                {"label_smoothing": 0.1}, {"weight": True, "ignore_index": 0}])
@pytest.mark.parametrize("C", [7, 40, 2056])
def test_cross_entropy_and_nll_loss_match_cpu(dtype, kw, C):
    # 7 classes: one element a load; 40 and 2056: 16-byte vectors (2056 rows
    # take two rounds of four loads a thread, the second partial).
    x = _sample((12, C), dtype)
    t = ignis.tensor([3, 0, 6, 1, 3, 3, 2, 5, 4, 0, 1, 6]) * (C // 7)
    kw = dict(kw)
    if kw.pop("weight", False):
        kw["weight"] = _sample((C,), dtype, seed=9).abs() + 0.5
    kwc = {k: (v.cuda() if isinstance(v, ignis.Tensor) else v) for k, v in kw.items()}
    xa, xb = x.clone().requires_grad_(), x.cuda().requires_grad_()
    la, lb = F.cross_entropy(xa, t, **kw), F.cross_entropy(xb, t.cuda(), **kwc)
    assert_close(lb, la, scale=10)
    ga = ignis.ones_like(la) if la.dim() else None
    la.backward(ga)
    lb.backward(ga.cuda() if ga is not None else None)
    assert_close(xb.grad, xa.grad, scale=10)
    if "label_smoothing" not in kw:
        lp = F.log_softmax(x, 1)
        assert_close(F.nll_loss(lp.cuda(), t.cuda(), **kwc), F.nll_loss(lp, t, **kw), scale=10)
    if C != 7:
        return
    # Three dims (class dim 1), as the GPT's loss is not but others are.
    x3 = _sample((2, 7, 5), dtype)
    t3 = ignis.randint(0, 7, (2, 5))
    assert_close(F.cross_entropy(x3.cuda(), t3.cuda()), F.cross_entropy(x3, t3), scale=10)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_cross_entropy_with_infinities_and_nan_matches_cpu(dtype):
    # A row whose first 16-byte vector is all -inf (a masked part the
    # vector fold must keep harmless), a row with one -inf, a row with a NaN
    # (NaN loss and gradient), and logits sliced at an odd offset (scalar loads).
    x = _sample((4, 25), dtype)
    x[0, :8] = float("-inf")
    x[1, 20] = float("-inf")
    x[2, 5] = float("nan")
    t = ignis.tensor([9, 3, 1, 23])
    for logits in (x[:, :24], x[:, 1:]):
        la = logits.clone().requires_grad_()
        lb = logits.cuda().requires_grad_()
        for red in ("none", "mean"):
            ya = F.cross_entropy(la, t, reduction=red)
            yb = F.cross_entropy(lb, t.cuda(), reduction=red)
            np.testing.assert_allclose(_np(yb), _np(ya), rtol=_tol(dtype), atol=_tol(dtype))
        F.cross_entropy(la, t, reduction="none").sum().backward()
        F.cross_entropy(lb, t.cuda(), reduction="none").sum().backward()
        np.testing.assert_allclose(_np(lb.grad), _np(la.grad), rtol=_tol(dtype) * 10,
                                   atol=_tol(dtype) * 10)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("mask", [None, "causal", "bool", "float"])
def test_scaled_dot_product_attention_forward_and_backward_match_cpu(dtype, mask):
    q = _sample((2, 3, 9, 8), dtype, seed=1)
    k = _sample((2, 3, 11, 8), dtype, seed=2)
    v = _sample((2, 3, 11, 5), dtype, seed=3)
    kw = {}
    if mask == "causal":
        kw["is_causal"] = True
    elif mask == "bool":
        m = _sample((9, 11), "bool", seed=4)
        m[:, 0] = True
        kw["attn_mask"] = m
    elif mask == "float":
        kw["attn_mask"] = _sample((3, 9, 11), dtype, seed=5)
    kwc = {n: (a.cuda() if isinstance(a, ignis.Tensor) else a) for n, a in kw.items()}
    ins = [t.clone().requires_grad_() for t in (q, k, v)]
    insc = [t.cuda().requires_grad_() for t in (q, k, v)]
    oa = F.scaled_dot_product_attention(*ins, **kw)
    ob = F.scaled_dot_product_attention(*insc, **kwc)
    scale = 4 if dtype == "float16" else 10
    assert_close(ob, oa, scale=scale)
    g = _sample(tuple(oa.shape), dtype, seed=6)
    oa.backward(g)
    ob.backward(g.cuda())
    for a, b in zip(ins, insc):
        assert_close(b.grad, a.grad, scale=scale * 4)
    # The backward op itself (what AOT records): the CUDA kernel vs the CPU's.
    out, lse = ignis.ops._scaled_dot_product_attention(q, k, v, kw.get("attn_mask"),
                                                       mask == "causal", 0.3)
    outc, lsec = ignis.ops._scaled_dot_product_attention(
        q.cuda(), k.cuda(), v.cuda(), kwc.get("attn_mask"), mask == "causal", 0.3)
    assert_close(outc, out, scale=scale)
    assert_close(lsec, lse, scale=scale)
    r = ignis.ops._scaled_dot_product_attention_backward(g, q, k, v, kw.get("attn_mask"), out,
                                                        lse, mask == "causal", 0.3)
    rc = ignis.ops._scaled_dot_product_attention_backward(
        g.cuda(), q.cuda(), k.cuda(), v.cuda(), kwc.get("attn_mask"), outc, lsec,
        mask == "causal", 0.3)
    for a, b in zip(r[:3], rc[:3]):
        assert_close(b, a, scale=scale * 4)


@needs_gpu
def test_attention_with_dropout_runs_on_cuda():
    q = _sample((2, 2, 8, 4), "float32").cuda().requires_grad_()
    ignis.manual_seed(0)
    y = F.scaled_dot_product_attention(q, q, q, dropout_p=0.2, is_causal=True)
    y.sum().backward()
    assert q.grad.device.type == "cuda" and bool(ignis.isfinite(q.grad).all())


# ---- on a GPU: optimizers and the GPT ---------------------------------------------------------

@needs_gpu
@pytest.mark.parametrize("make", [
    lambda p: ignis.optim.AdamW(p, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95)),
    lambda p: ignis.optim.Adam(p, lr=1e-2, weight_decay=0.01),
    lambda p: ignis.optim.Adam(p, lr=1e-2, amsgrad=True),
    lambda p: ignis.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda p: ignis.optim.SGD(p, lr=1e-1),
], ids=["adamw", "adam", "adam-amsgrad", "sgd-nesterov", "sgd"])
def test_optimizer_steps_match_cpu(make):
    ws = [_sample((5, 3), "float32", seed=s) for s in range(3)]
    pa = [ignis.nn.Parameter(w.clone()) for w in ws]
    pb = [ignis.nn.Parameter(w.cuda()) for w in ws]
    oa, ob = make(pa), make(pb)
    for step in range(4):
        for p, q, s in zip(pa, pb, range(3)):
            g = _sample((5, 3), "float32", seed=100 + 10 * step + s)
            p.grad, q.grad = g, g.cuda()
        oa.step()
        ob.step()
    for p, q in zip(pa, pb):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-5, atol=1e-6)


def _train(cfg, device, steps, batch=4, seed=0):
    ignis.manual_seed(seed)
    model = build_gpt(ignis)(cfg)
    if device != "cpu":
        model = model.to(device)
    opt = configure_optimizer(ignis, model)
    rng = np.random.default_rng(seed)
    # One batch, seen every step: the model memorises it, so the loss falls.
    x = ignis.from_numpy(rng.integers(0, cfg.vocab_size, (batch, cfg.block_size))).to(device)
    y = ignis.from_numpy(rng.integers(0, cfg.vocab_size, (batch, cfg.block_size))).to(device)
    losses = []
    for _ in range(steps):
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, model


@needs_gpu
@pytest.mark.parametrize("dropout", [0.0, 0.1])
@pytest.mark.parametrize("use_mha", [False, True])
def test_gpt_trains_on_cuda_with_the_cpus_losses(dropout, use_mha):
    # The same seed draws the same weights on the CPU (then moved) and the
    # same dropout masks on both devices, so the losses agree to rounding.
    cfg = GPTConfig(vocab_size=96, block_size=32, n_layer=2, n_head=4, n_embd=64,
                    dropout=dropout, use_mha=use_mha)
    want, mc = _train(cfg, "cpu", 6)
    got, mg = _train(cfg, "cuda", 6)
    assert all(np.isfinite(got)), got
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4)
    assert got[-1] < got[0]
    # The key bias's gradient is 0 in exact arithmetic (a per-row shift of the
    # scores), so its value is rounding noise, which Adam turns into steps of up
    # to lr: parameters agree to about lr, the losses much closer.
    for (na, pa), (nb, pb) in zip(mc.named_parameters(), mg.named_parameters()):
        assert pb.device.type == "cuda", nb
        np.testing.assert_allclose(_np(pb), _np(pa), rtol=2e-3, atol=3e-3, err_msg=na)


@needs_gpu
def test_mixing_devices_still_raises():
    a = ignis.ones(3, 3, device="cuda")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ignis.index_select(a, 0, ignis.tensor([0]).cuda()) + ignis.ones(1, 3)


# ---- multi-tensor optimizer steps and the fused cross-entropy -------------------------------

def test_multi_tensor_and_cross_entropy_kernel_units_exist():
    units = {u[0]: u[1] for u in ignis._C._cuda_eager_kernel_units()}
    for dt in FLOATS:
        src = units[f"multi_tensor_{dt}.cu"]
        assert "AdamElement" in src and "__grid_constant__" in src
        assert "ig_cross_entropy_fwd<T, C, 1>" in units[f"rows_{dt}.cu"]


OPTIMS = {
    "adamw": lambda p, **k: ignis.optim.AdamW(p, lr=1e-2, weight_decay=0.1, betas=(0.9, 0.95), **k),
    "adam-wd-maximize": lambda p, **k: ignis.optim.Adam(p, lr=1e-2, weight_decay=0.01,
                                                        maximize=True, **k),
    "adam-amsgrad": lambda p, **k: ignis.optim.Adam(p, lr=1e-2, amsgrad=True, **k),
    "sgd-nesterov": lambda p, **k: ignis.optim.SGD(p, lr=1e-2, momentum=0.9, nesterov=True,
                                                   weight_decay=0.01, **k),
    "sgd-dampening": lambda p, **k: ignis.optim.SGD(p, lr=1e-2, momentum=0.8, dampening=0.3,
                                                    maximize=True, **k),
    "sgd": lambda p, **k: ignis.optim.SGD(p, lr=1e-1, **k),
}
# 45 tensors (two launches of at most 40) and one of two 65536-element chunks.
OPT_SHAPES = [(5, 3)] * 43 + [(), (70001,)]


def _optimizer_run(make, device, impl, dtype="float32", steps=3, lr_tensor=False):
    ws = [_sample(s, "float32", seed=i) for i, s in enumerate(OPT_SHAPES)]
    ps = [ignis.nn.Parameter(w.to(device=device, dtype=_dt(dtype))) for w in ws]
    opt = make(ps, **impl)
    if lr_tensor:
        for g in opt.param_groups:
            g["lr"] = ignis.tensor(g["lr"], device=device)
    for step in range(steps):
        for i, p in enumerate(ps):
            g = _sample(OPT_SHAPES[i], "float32", seed=1000 + 100 * step + i)
            p.grad = g.to(device=device, dtype=_dt(dtype))
        opt.step()
    return ps, opt


@needs_gpu
@pytest.mark.parametrize("name", list(OPTIMS))
@pytest.mark.parametrize("impl", [{}, {"foreach": True}, {"fused": True}],
                         ids=["default", "foreach", "fused"])
def test_foreach_and_fused_optimizer_steps_on_cuda_match_the_cpus_for_loop(name, impl):
    want, _ = _optimizer_run(OPTIMS[name], "cpu", {"foreach": False})
    got, opt = _optimizer_run(OPTIMS[name], "cuda", impl)
    for q, p in zip(got, want):
        assert q.device.type == "cuda"
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-5, atol=1e-6)
    # Step counts: on the device for the fused kernel to read, else on the host.
    for state in opt.state.values():
        if "step" in state:
            assert state["step"].device.type == ("cuda" if impl.get("fused") else "cpu")
            assert state["step"].item() == 3.0


@needs_gpu
@pytest.mark.parametrize("name", ["adamw", "adam-amsgrad", "sgd-nesterov"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_fused_steps_on_cuda_match_the_cpus_fused_steps(name, dtype):
    """The same formula (scalar_ops.h's AdamElement/SgdElement) on both
    devices, in float for 16-bit parameters."""
    want, _ = _optimizer_run(OPTIMS[name], "cpu", {"fused": True}, dtype=dtype)
    got, _ = _optimizer_run(OPTIMS[name], "cuda", {"fused": True}, dtype=dtype)
    for q, p in zip(got, want):
        assert q.dtype == _dt(dtype)
        np.testing.assert_allclose(_np(q), _np(p), rtol=_tol(dtype) + 1e-6, atol=_tol(dtype) + 1e-6)


@needs_gpu
@pytest.mark.parametrize("name", ["adamw", "sgd-nesterov"])
def test_fused_steps_on_cuda_take_a_device_learning_rate(name):
    want, _ = _optimizer_run(OPTIMS[name], "cpu", {"foreach": False})
    got, _ = _optimizer_run(OPTIMS[name], "cuda", {"fused": True}, lr_tensor=True)
    for q, p in zip(got, want):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-5, atol=1e-6)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fused_adam_on_parameters_at_odd_offsets(dtype):
    """The fused kernel moves 16 bytes of each tensor per load when all of a
    tensor's pointers are 16-byte aligned; a parameter one element into its
    storage takes the scalar loop, an aligned one the vector loop and a tail.
    Both match the CPU's fused step."""
    def step(device):
        base = _sample((2 * 1008,), "float32", seed=7).to(device=device, dtype=_dt(dtype))
        ps = [ignis.nn.Parameter(base[1:1004].detach()),
              ignis.nn.Parameter(base[1008:2011].detach())]
        assert ps[0].storage_offset() == 1 and ps[1].storage_offset() == 1008
        opt = ignis.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, amsgrad=True, fused=True)
        for k in range(3):
            for i, p in enumerate(ps):
                p.grad = _sample((1003,), "float32", seed=50 + 10 * k + i).to(
                    device=device, dtype=_dt(dtype))
            opt.step()
        return ps
    # (float32: the GPU's contracted multiply-adds put an element 2e-5 off
    # after three AMSGrad steps; a wrong element or lane would be far off.)
    tol = 1e-4 if dtype == "float32" else _tol(dtype) + 1e-6
    for q, p in zip(step("cuda"), step("cpu")):
        np.testing.assert_allclose(_np(q), _np(p), rtol=tol, atol=tol)


@needs_gpu
def test_fused_adam_step_is_one_op_and_never_reads_the_device():
    """The fused step dispatches its steps' increment and _fused_adamw_ only
    (no per-parameter ops, no copy to the host)."""
    ps = [ignis.nn.Parameter(_sample((4, 3), "float32", seed=i).cuda()) for i in range(5)]
    for p in ps:
        p.grad = ignis.ones_like(p)
    opt = ignis.optim.AdamW(ps, lr=1e-3, fused=True)
    opt.step()
    names = ignis._C._dispatch_trace(opt.step)
    assert "_fused_adamw_" in names
    assert not {"lerp_", "addcdiv_", "_local_scalar_dense", "item"} & set(names), names


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"},
                                {"ignore_index": 3}, {"ignore_index": 3, "reduction": "none"},
                                {"weight": True, "ignore_index": 0},
                                {"label_smoothing": 0.2, "ignore_index": 3},
                                {"label_smoothing": 0.1, "weight": True, "reduction": "sum"},
                                {"label_smoothing": 0.1, "weight": True, "ignore_index": 6}])
def test_fused_cross_entropy_matches_the_cpu(dtype, kw):
    """cross_entropy with class indices over [N, C] (wide rows: 300 classes)
    and [C] logits runs the fused row kernels; values and gradients against
    the CPU's kernel, with rows whose target is ignore_index."""
    kw = dict(kw)
    for shape in [(9, 300), (300,)]:
        C = shape[-1]
        x = _sample(shape, dtype, seed=3) * 3
        rng = np.random.default_rng(5)
        t = ignis.from_numpy(np.asarray(rng.integers(0, 7, shape[:-1]), dtype=np.int64))
        if len(shape) == 2:
            t[1], t[4] = 3, 6  # rows that ignore_index 3 / 6 leave out
        kw_cpu = dict(kw)
        if kw_cpu.pop("weight", False):
            kw_cpu["weight"] = (_sample((C,), dtype, seed=9).abs() + 0.5)
        kw_gpu = {k: (v.cuda() if isinstance(v, ignis.Tensor) else v) for k, v in kw_cpu.items()}
        xa, xb = x.clone().requires_grad_(), x.cuda().requires_grad_()
        la, lb = F.cross_entropy(xa, t, **kw_cpu), F.cross_entropy(xb, t.cuda(), **kw_gpu)
        assert_close(lb, la, scale=10)
        ga = _sample(tuple(la.shape), "float32", seed=11).to(la.dtype) if la.dim() else None
        la.backward(ga)
        lb.backward(ga.cuda() if ga is not None else None)
        assert_close(xb.grad, xa.grad, scale=10)


@needs_gpu
def test_fused_cross_entropy_runs_one_kernel_each_way():
    """On CUDA, [N, C] class-index cross_entropy no longer dispatches
    log_softmax/gather (the decomposition) forward or backward; three-dim
    inputs and class probabilities still do, with the CPU's values."""
    x = _sample((6, 10), "float32").cuda().requires_grad_()
    t = ignis.tensor([1, 2, 3, 4, 5, 6]).cuda()
    names = ignis._C._dispatch_trace(lambda: F.cross_entropy(x, t).backward())
    assert "cross_entropy" in names
    decomposed = {"log_softmax", "_log_softmax", "gather", "nll_loss"}
    assert not decomposed & {n.split(".")[0] for n in names}, names
    x3 = _sample((2, 7, 5), "float32")
    t3 = ignis.randint(0, 7, (2, 5))
    assert_close(F.cross_entropy(x3.cuda(), t3.cuda()), F.cross_entropy(x3, t3), scale=10)
    p = ignis.softmax(_sample((6, 10), "float32", seed=2), 1)
    xs = _sample((6, 10), "float32", seed=4)
    assert_close(F.cross_entropy(xs.cuda(), p.cuda(), label_smoothing=0.1),
                 F.cross_entropy(xs, p, label_smoothing=0.1), scale=10)


@needs_gpu
def test_fused_cross_entropy_edge_rows():
    """Every target ignored: mean is NaN (0/0) as on the CPU, sum 0, and the
    gradient 0; a row of -inf logits except the target."""
    x = _sample((4, 5), "float32").cuda().requires_grad_()
    t = ignis.full((4,), -100, dtype=ignis.int64).cuda()
    assert np.isnan(F.cross_entropy(x, t).item())
    loss = F.cross_entropy(x, t, reduction="sum")
    assert loss.item() == 0.0
    loss.backward()
    assert (x.grad == 0).all().item()
    m = ignis.full((2, 4), float("-inf"))
    m[0, 1] = 2.0
    m[1, 3] = 0.5
    tt = ignis.tensor([1, 3])
    assert_close(F.cross_entropy(m.cuda(), tt.cuda(), reduction="none"),
                 F.cross_entropy(m, tt, reduction="none"))
    # [C] logits on the GPU with a 0-dim target left on the CPU (a scalar may join).
    x1 = _sample((7,), "float32", seed=8)
    assert_close(F.cross_entropy(x1.cuda(), ignis.tensor(4)), F.cross_entropy(x1, ignis.tensor(4)))


FOREACH_CALLS = [
    ("_foreach_add", lambda a, b, c, z: (a, 2.5), {}),
    ("_foreach_add", lambda a, b, c, z: (a, b), {"alpha": -0.5}),
    ("_foreach_add", lambda a, b, c, z: (a, z), {"alpha": 2}),
    ("_foreach_sub", lambda a, b, c, z: (a, [1.0, 2.0, 3.0]), {}),
    ("_foreach_mul", lambda a, b, c, z: (a, b), {}),
    ("_foreach_div", lambda a, b, c, z: (a, [2.0, 4.0, 0.5]), {}),
    ("_foreach_maximum", lambda a, b, c, z: (a, b), {}),
    ("_foreach_minimum", lambda a, b, c, z: (a, 0.1), {}),
    ("_foreach_lerp", lambda a, b, c, z: (a, b, 0.1), {}),
    ("_foreach_lerp", lambda a, b, c, z: (a, b, c), {}),
    ("_foreach_addcmul", lambda a, b, c, z: (a, b, c), {"value": 0.3}),
    ("_foreach_addcdiv", lambda a, b, c, z: (a, b, c, [0.5, -1.0, 2.0]), {}),
    ("_foreach_sqrt", lambda a, b, c, z: (a,), {}),
    ("_foreach_neg", lambda a, b, c, z: (a,), {}),
    ("_foreach_exp", lambda a, b, c, z: (a,), {}),
    ("_foreach_log", lambda a, b, c, z: (a,), {}),
    ("_foreach_reciprocal", lambda a, b, c, z: (a,), {}),
    ("_foreach_sigmoid", lambda a, b, c, z: (a,), {}),
]


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("call", FOREACH_CALLS,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(FOREACH_CALLS)])
def test_foreach_ops_on_cuda_run_one_multi_tensor_launch(call, dtype):
    """Under no_grad, on contiguous CUDA tensors, a _foreach_ op is one
    multi-tensor launch (no per-tensor op dispatched), with the CPU's values,
    functional and in place (versions bumped)."""
    name, args_of, kw = call
    shapes = [(4, 3), (70001,), ()]

    def lists(seed):
        return [(_sample(s, "float32", seed=seed + i).abs() + 0.5).to(_dt(dtype))
                for i, s in enumerate(shapes)]
    cpu = [lists(10), lists(20), lists(30)]
    gpu = [[t.cuda() for t in lst] for lst in cpu]
    z = ignis.tensor(1.5, dtype=_dt(dtype))
    with ignis.no_grad():
        want = getattr(ignis, name)(*args_of(*cpu, z), **kw)
        gargs = args_of(*gpu, z.cuda())
        names = ignis._C._dispatch_trace(lambda: getattr(ignis, name)(*gargs, **kw))
        per_tensor = name[len("_foreach_"):]
        assert not {per_tensor, per_tensor + "_"} & {n.split(".")[0] for n in names}, names
        got = getattr(ignis, name)(*gargs, **kw)
        for g, w in zip(got, want):
            assert_close(g, w, dtype)
        before = [t._version for t in gpu[0]]
        getattr(ignis, name + "_")(*gargs, **kw)
        for g, w, v in zip(gpu[0], want, before):
            assert_close(g, w, dtype)
            assert g._version > v


@needs_gpu
def test_foreach_ops_on_cuda_fall_back_tensor_by_tensor():
    """A strided tensor, mixed dtypes, or grad mode with a tensor requiring
    grad: the per-tensor ops, with the same values (and autograd's graph)."""
    a = [_sample((4, 3), "float32", seed=1).cuda(), _sample((3, 4), "float32", seed=2).cuda().t()]
    b = [_sample((4, 3), "float32", seed=3).cuda(), _sample((4, 3), "float64", seed=4).cuda()]
    with ignis.no_grad():
        names = ignis._C._dispatch_trace(lambda: ignis._foreach_mul(a, b))
        assert "mul" in {n.split(".")[0] for n in names}
        got = ignis._foreach_mul(a, b)
    assert got[1].dtype == ignis.float64
    for g, x, y in zip(got, a, b):
        np.testing.assert_allclose(_np(g), _np(x) * _np(y), rtol=1e-6)
    x = [_sample((5,), "float32").cuda().requires_grad_()]
    y = ignis._foreach_mul(x, 3.0)
    y[0].sum().backward()
    np.testing.assert_allclose(_np(x[0].grad), np.full(5, 3.0))


@needs_gpu
def test_optimizer_state_moves_between_fused_and_foreach():
    """A fused optimizer's state (step counts on the GPU) loaded into a foreach
    one (step counts on the host): the steps continue as one run."""
    ws = [_sample((4, 3), "float32", seed=i) for i in range(3)]
    grads = [[_sample((4, 3), "float32", seed=50 + 10 * k + i) for i in range(3)]
             for k in range(4)]

    def run(switch):
        ps = [ignis.nn.Parameter(w.cuda()) for w in ws]
        opt = ignis.optim.AdamW(ps, lr=1e-2, amsgrad=True, fused=True)
        for k in range(4):
            if switch and k == 2:
                other = ignis.optim.AdamW(ps, lr=1e-2, amsgrad=True)
                other.load_state_dict(opt.state_dict())
                for g in other.param_groups:  # the saved groups say fused, as torch's do
                    g["fused"], g["foreach"] = None, True
                opt = other
            for p, g in zip(ps, grads[k]):
                p.grad = g.cuda()
            opt.step()
        return ps, opt
    want, _ = run(False)
    got, opt = run(True)
    for q, p in zip(got, want):
        np.testing.assert_allclose(_np(q), _np(p), rtol=1e-5, atol=1e-6)
    for state in opt.state.values():
        assert state["step"].device.type == "cpu" and state["step"].item() == 4.0


@needs_gpu
@pytest.mark.parametrize("form", ["pow_number", "rpow", "pow_cpu_scalar", "pow_tensor"])
def test_pow_gradients_on_cuda_match_cpu(form):
    # pow's derivative masks where the exponent is 0 (and the base 0): with a
    # number or a 0-dim CPU exponent the mask is a CPU scalar beside CUDA
    # gradients (found by the CUDA compiler's tests: "invalid device ordinal").
    fns = {
        "pow_number": lambda x, e: x.pow(2),
        "rpow": lambda x, e: 2.0 ** x,
        "pow_cpu_scalar": lambda x, e: x.pow(ignis.tensor(3.0)),
        "pow_tensor": lambda x, e: x.abs().pow(e),
    }
    fn = fns[form]
    grads = {}
    for dev in ("cpu", "cuda"):
        x = _sample((4, 5), "float32", seed=1).to(dev).requires_grad_()
        e = _sample((4, 5), "float32", seed=2).to(dev).requires_grad_()
        fn(x, e).sum().backward()
        grads[dev] = (x.grad, e.grad if form == "pow_tensor" else None)
    assert_close(grads["cuda"][0], grads["cpu"][0].cuda())
    if form == "pow_tensor":
        assert_close(grads["cuda"][1], grads["cpu"][1].cuda())
