"""The flash-attention kernels (kernels/cuda/flash_attention.cpp): SDPA on
CUDA for float16/bfloat16, causal or not, with or without an attn_mask,
forward and backward.

Everywhere (no GPU needed): every flash kernel compiles with NVRTC for sm_90
(skipped, saying why, without NVRTC); which calls the dispatch sends to the
flash kernels.
On a GPU, and against the fake driver (tests/cuda_fake/run.sh, which runs the
kernels on the host with real threads and an emulated mma.sync): outputs,
the log-sum-exp and the three gradients against the CPU's flash-style kernel
and against CUDA's op-based path in float32 (the dispatch's fallback), causal
and not, L != S, head dims 64, 128 and 40, L not a multiple of the 64-row
block, a block the causal diagonal crosses, an odd head dim (7: no 16-byte
loads, no paired stores), two 128-row forward blocks, q/k/v sliced out of one fused
projection (strided), a broadcast batch. The GPT-2-sized case runs on a real
GPU only (the host emulation would take minutes).
"""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn.functional as F

AVAILABLE = ignis.cuda.is_available()
REASON = ignis._C._cuda_unavailable_reason()
needs_gpu = pytest.mark.skipif(not AVAILABLE, reason=f"no usable CUDA GPU here: {REASON}")
FAKE = AVAILABLE and ignis.cuda.get_device_name(0) == "Fake GPU"
real_gpu_only = pytest.mark.skipif(not AVAILABLE or FAKE,
                                   reason="needs a real GPU (too slow in the host emulation)"
                                   if AVAILABLE else f"no usable CUDA GPU here: {REASON}")

# Largest |error| allowed, relative to 1 + max |reference|: the kernels round
# p (and ds) to the input dtype before their products, as FlashAttention does.
TOL = {"float16": 1e-2, "bfloat16": 4e-2}


def _np(t):
    t = t.detach().cpu()
    if t.dtype in (ignis.bfloat16, ignis.float16):
        t = t.float()
    return t.numpy().astype(np.float64)


def _sample(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return ignis.from_numpy(rng.standard_normal(shape).astype(np.float32)).to(
        getattr(ignis, dtype))


def _qkv(B, H, L, S, D, dtype):
    """Sampled q [B, H, L, D], k and v [B, H, S, D] (seeds 1, 2, 3)."""
    return (_sample((B, H, L, D), dtype, seed=1), _sample((B, H, S, D), dtype, seed=2),
            _sample((B, H, S, D), dtype, seed=3))


def assert_near(got, want, dtype, what=""):
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    a, b = _np(got), _np(want)
    err = np.abs(a - b).max() if a.size else 0.0
    assert err <= TOL[dtype] * (1 + np.abs(b).max()), (what, err, np.abs(b).max())


# ---- everywhere ------------------------------------------------------------------------------

def _nvrtc():
    try:
        return ignis._C._cuda_nvrtc_version()
    except RuntimeError as e:
        return str(e)


def test_every_flash_kernel_compiles_with_nvrtc():
    version = _nvrtc()
    if isinstance(version, str):
        pytest.skip(f"NVRTC cannot be loaded here ({version[:200]}); set IGNIS_NVRTC_LIBRARY "
                    "or install the nvidia-cuda-nvrtc wheel")
    units = [u for u in ignis._C._cuda_eager_kernel_units() if u[0].startswith("flash_")]
    labels = sorted(u[0] for u in units)
    # Forward and backward per dtype and head-dim tile, each without an attn_mask,
    # with a bool one and with one of the input's dtype, the backward's row dot,
    # the Hopper forward (sm_90a: wgmma) per dtype, head-dim tile and mask kind,
    # and the Hopper backward per dtype, head-dim tile and mask kind.
    assert len(units) == 50, labels
    assert "flash_fwd_sm90_bfloat16_d64.cu" in labels and "flash_fwd_sm90_float16_d128.cu" in labels
    assert "flash_fwd_sm90_mask_float16_d64.cu" in labels
    assert "flash_fwd_sm90_fmask_bfloat16_d128.cu" in labels
    assert "flash_bwd_sm90_bfloat16_d64.cu" in labels
    assert "flash_bwd_sm90_mask_float16_d64.cu" in labels
    assert "flash_bwd_sm90_fmask_bfloat16_d64.cu" in labels
    assert "flash_bwd_sm90_mask_bfloat16_d128.cu" in labels
    assert all("wgmma.mma_async" in u[1] and "--gpu-architecture=sm_90a" in u[2]
               for u in units if "_sm90_" in u[0])
    assert "flash_fwd_bfloat16_d64.cu" in labels and "flash_bwd_float16_d128.cu" in labels
    assert "flash_fwd_mask_float16_d64.cu" in labels and "flash_bwd_mask_bfloat16_d128.cu" in labels
    assert "flash_fwd_fmask_bfloat16_d64.cu" in labels and "flash_bwd_fmask_float16_d128.cu" in labels
    assert all("mma.sync.aligned.m16n8k16" in u[1] for u in units if "_dot_" not in u[0])

    def compile_one(u):
        label, source, options, _ = u
        return ignis._C._cuda_nvrtc_compile(source, label, 90, options)
    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        assert all(s > 0 for s in pool.map(compile_one, units))


def test_dispatch_picks_the_flash_kernels():
    why = ignis._C._cuda_flash_attention_unsupported
    q = ignis.zeros(2, 3, 5, 64, dtype=ignis.bfloat16)
    k = ignis.zeros(2, 3, 7, 64, dtype=ignis.bfloat16)
    # On the CPU tensors the device check is skipped: only the call's shape counts.
    assert why(q, k, k, None) is None
    assert why(q.half(), k.half(), k.half(), None) is None
    assert "dtype" in why(q.float(), k.float(), k.float(), None)
    assert why(q, k, k, ignis.ones(5, 7, dtype=ignis.bool)) is None
    assert why(q, k, k, ignis.zeros(2, 1, 5, 7, dtype=ignis.bfloat16)) is None
    assert "attn_mask" in why(q, k, k, ignis.zeros(5, 7))
    assert "batch dims" in why(q, k, k, ignis.ones(1, 1, 1, 2, 3, 5, 7, dtype=ignis.bool))
    assert "head dim" in why(q[..., :8], k, k[..., :8], None)
    big = ignis.zeros(1, 1, 4, 160, dtype=ignis.bfloat16)
    assert "head dim" in why(big, big, big, None)
    assert "no keys" in why(q, k[:, :, :0], k[:, :, :0], None)


# ---- on a GPU (and the fake driver) ---------------------------------------------------------

def _check_call(q, k, v, dtype, causal, scale=None, strided=None, mask=None, maskc=None):
    """SDPA on CUDA (the flash kernels) against the CPU's kernel and CUDA's
    float32 op path: output, lse, and gradients of q, k, v (`mask`: an
    attn_mask, on the CPU; `maskc`: its CUDA twin when it must keep a layout
    of its own, else mask.cuda())."""
    if strided is not None:
        qc, kc, vc = strided
    else:
        qc, kc, vc = (t.cuda() for t in (q, k, v))
    if maskc is None and mask is not None:
        maskc = mask.cuda()
    assert ignis._C._cuda_flash_attention_unsupported(qc, kc, vc, maskc) is None
    kw = {"is_causal": causal}
    if scale is not None:
        kw["scale"] = scale
    g = _sample(tuple(q.shape[:-2]) + (q.shape[-2], v.shape[-1]), dtype, seed=9)
    ins = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    insc = [t.detach().requires_grad_() for t in (qc, kc, vc)]
    ins32 = [t.detach().cuda().float().requires_grad_() for t in (q, k, v)]
    mask32 = None if mask is None or mask.dtype == ignis.bool else maskc.float()
    outs = []
    for xs, m in ((ins, mask), (insc, maskc), (ins32, maskc if mask32 is None else mask32)):
        o = F.scaled_dot_product_attention(*xs, attn_mask=m, **kw)
        o.backward((g.cuda() if xs[0].device.type == "cuda" else g).to(o.dtype))
        outs.append(o)
    cpu, flash, ops32 = outs
    assert flash.dtype == getattr(ignis, dtype) and flash.device.type == "cuda"
    for want in (cpu, ops32):
        assert_near(flash, want, dtype, "out")
    for name, a, b, c in zip("qkv", ins, insc, ins32):
        assert_near(b.grad, a.grad, dtype, f"d{name} vs cpu")
        assert_near(b.grad, c.grad, dtype, f"d{name} vs ops")
    # The op itself: its float32 lse against the CPU's.
    sc = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    _, lse = ignis.ops._scaled_dot_product_attention(q, k, v, mask, causal, sc)
    _, lsec = ignis.ops._scaled_dot_product_attention(qc, kc, vc, maskc, causal, sc)
    assert lsec.dtype == ignis.float32
    np.testing.assert_allclose(_np(lsec), _np(lse), rtol=1e-4, atol=1e-4)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [
    (1, 2, 70, 50, 64),   # L != S, L past one 64-row block, S not a multiple of 64
    (1, 1, 20, 130, 128),  # three key blocks, head dim 128
    (2, 1, 33, 33, 40),   # an odd head dim (padded to 64), the diagonal inside a block
    (2, 1, 150, 140, 64),  # two 128-row forward blocks a batch index (batch-minor order)
    (1, 2, 9, 11, 7),     # an odd head dim: element loads, single-column stores and atomics
], ids=lambda s: "x".join(map(str, s)))
def test_flash_attention_matches_cpu_and_ops(dtype, causal, shape):
    B, H, L, S, D = shape
    q, k, v = _qkv(B, H, L, S, D, dtype)
    _check_call(q, k, v, dtype, causal)


def _mask(kind, B, H, L, S, dtype, seed=11):
    """An attn_mask of `kind`: its layout and dtype; bool masks drop about a
    third of the scores, float masks add values in [-2, 2] with some -inf."""
    rng = np.random.default_rng(seed)
    shape = {"LS": (L, S), "B1LS": (B, 1, L, S), "BHLS": (B, H, L, S), "1S": (1, S)}[kind[0]]
    if kind[1] == "bool":
        m = rng.random(shape) > 0.35
        return ignis.from_numpy(m)
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    x[rng.random(shape) < 0.2] = -np.inf
    return ignis.from_numpy(x).to(getattr(ignis, kind[1]))


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", [("LS", "bool"), ("B1LS", "bool"), ("BHLS", "input"),
                                  ("1S", "input")], ids=lambda k: "-".join(k))
@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_with_an_attn_mask(dtype, kind, causal):
    # Two 128-row forward blocks and two 128-key backward blocks, an odd tail;
    # the mask broadcast over heads, batch or rows; bool or the input's dtype
    # (what torch accepts).
    B, H, L, S, D = 2, 2, 140, 133, 64
    q, k, v = _qkv(B, H, L, S, D, dtype)
    mask = _mask((kind[0], dtype if kind[1] == "input" else kind[1]), B, H, L, S, dtype)
    _check_call(q, k, v, dtype, causal, mask=mask)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["aligned", "sliced", "transposed", "padding"])
@pytest.mark.parametrize("mdtype", ["bool", "input"])
def test_flash_attention_mask_tiles_in_every_layout(dtype, layout, mdtype):
    # The kernels stage the mask's tiles into shared memory: by cp.async when
    # its columns are contiguous and its rows 16-byte aligned ("aligned": S a
    # multiple of 16; "sliced": rows of 160 cut to 133, so a row's last chunk
    # is partial; "padding": a key-padding mask [B, 1, 1, S], one row staged
    # for all), else element by element ("transposed": column stride L).
    B, H, L, S, D = 2, 2, 140, 144, 64
    if layout == "sliced":
        S = 133
    q, k, v = _qkv(B, H, L, S, D, dtype)
    mt = dtype if mdtype == "input" else "bool"
    if layout == "aligned":
        mask = _mask(("B1LS", mt), B, H, L, S, dtype)
        maskc = mask.cuda()
    elif layout == "sliced":
        wide = _mask(("B1LS", mt), B, H, L, 160, dtype)
        mask, maskc = wide[..., :S], wide.cuda()[..., :S]
    elif layout == "transposed":
        mask = _mask(("B1LS", mt), B, H, S, L, dtype).transpose(-1, -2)
        maskc = _mask(("B1LS", mt), B, H, S, L, dtype).cuda().transpose(-1, -2)
    else:
        lengths = np.array([S // 2 + 3, S - 5])
        m = np.arange(S)[None, None, None, :] < lengths[:, None, None, None]
        mask = ignis.from_numpy(m)
        if mt != "bool":
            mask = ignis.from_numpy(np.where(m, 0.0, -np.inf).astype(np.float32)).to(getattr(ignis, mt))
        maskc = mask.cuda()
    assert maskc.shape == mask.shape
    _check_call(q, k, v, dtype, False, mask=mask, maskc=maskc)


@needs_gpu
def test_flash_attention_rows_a_mask_removes_entirely_are_zeros():
    # A fully masked row: lse = -inf, its output and every gradient through it
    # zero, as the CPU's kernel and PyTorch's math kernel give.
    B, H, L, S, D = 1, 2, 40, 70, 32
    q, k, v = (_sample((B, H, n, D), "bfloat16", seed=i) for i, n in ((1, L), (2, S), (3, S)))
    m = np.ones((L, S), bool)
    m[[0, 17, 39]] = False
    mask = ignis.from_numpy(m)
    _check_call(q, k, v, "bfloat16", False, mask=mask)
    out = F.scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), attn_mask=mask.cuda())
    assert not np.abs(_np(out)[:, :, [0, 17, 39]]).any()


@needs_gpu
def test_a_float_mask_that_needs_a_gradient_gets_it_on_cuda():
    # The mask's gradient is ds, which the flash backward does not write: the
    # op path computes it, and the values agree with the CPU's.
    q, k, v = (_sample((1, 2, 20, 64), "bfloat16", seed=i) for i in (1, 2, 3))
    m = _mask(("LS", "bfloat16"), 1, 2, 20, 20, "bfloat16")
    m = ignis.where(ignis.isinf(m), ignis.zeros_like(m), m)
    grads = []
    for dev in ("cpu", "cuda"):
        mm = m.to(dev).detach().requires_grad_()
        o = F.scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev), attn_mask=mm)
        (o.float() * o.float()).sum().backward()
        grads.append(mm.grad)
    assert_near(grads[1], grads[0], "bfloat16", "d mask")


@needs_gpu
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_flash_attention_reads_slices_of_a_fused_projection(dtype):
    # qkv [B, L, 3 * H * D] split and viewed as [B, H, L, D]: batch and head
    # strides unlike a contiguous tensor's, rows 3 * H * D apart, read in place.
    B, L, H, D = 2, 40, 2, 64
    x = _sample((B, L, 3 * H * D), dtype, seed=4)
    xc = x.cuda()

    def heads(t):
        return [p.view(B, L, H, D).transpose(1, 2) for p in t.split(H * D, dim=2)]
    q, k, v = (t.contiguous() for t in heads(x))
    qc, kc, vc = heads(xc)
    assert not qc.is_contiguous()
    _check_call(q, k, v, dtype, True, strided=(qc, kc, vc))


@needs_gpu
@pytest.mark.parametrize("fused", [True, False])
def test_outputs_and_gradients_are_laid_out_as_their_inputs(fused):
    # torch's CUDA attention allocates its output like the query and the
    # gradients like q, k and v (empty_like): for heads viewed out of a
    # [B, L, H*D] projection, y.transpose(1, 2) is then contiguous (the GPT's
    # .contiguous() after attention copies nothing) and so are the
    # gradients' views back to [B, L, H, D]. Values are unchanged.
    B, L, H, D = 2, 40, 3, 64
    x = _sample((B, L, 3 * H * D), "bfloat16", seed=4).cuda()
    q, k, v = (p.view(B, L, H, D).transpose(1, 2) for p in x.split(H * D, dim=2))
    if not fused:
        q, k, v = (t.contiguous() for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.stride() == ignis.empty_like(q).stride()
    assert y.transpose(1, 2).is_contiguous() == fused
    g = _sample((B, H, L, D), "bfloat16", seed=5).cuda()
    out, lse = ignis.ops._scaled_dot_product_attention(q, k, v, None, True, 0.125)
    grads = ignis.ops._scaled_dot_product_attention_backward(g, q, k, v, None, out, lse, True,
                                                            0.125)
    for a, t in zip(grads[:3], (q, k, v)):
        assert a.stride() == ignis.empty_like(t).stride()
    dense = [t.contiguous() for t in (q, k, v)]
    yr = F.scaled_dot_product_attention(*dense, is_causal=True)
    assert yr.is_contiguous() and bool((y == yr).all())
    outr, lser = ignis.ops._scaled_dot_product_attention(*dense, None, True, 0.125)
    ref = ignis.ops._scaled_dot_product_attention_backward(g, *dense, None, outr, lser, True,
                                                          0.125)
    for a, r in zip(grads[:3], ref[:3]):
        assert bool((a == r).all())
    # Through autograd: the values as before; a leaf's .grad follows
    # torch's layout contract (its own strides when dense, else contiguous).
    leaves = [t.detach().requires_grad_() for t in (q, k, v)]
    F.scaled_dot_product_attention(*leaves, is_causal=True).backward(g)
    for a, r in zip(leaves, ref[:3]):
        assert bool((a.grad == r).all())


@needs_gpu
def test_flash_attention_scale_and_broadcast_batch():
    # A key/value batch of 1 broadcast against two query batches, and a scale.
    q = _sample((2, 2, 17, 64), "float16", seed=5)
    k = _sample((1, 2, 23, 64), "float16", seed=6)
    v = _sample((1, 2, 23, 64), "float16", seed=7)
    _check_call(q, k, v, "float16", False, scale=0.3)


@needs_gpu
def test_flash_backward_op_matches_the_cpu_op():
    # What AOT records: the fused backward op called directly.
    q = _sample((1, 2, 65, 64), "bfloat16", seed=1)
    k = _sample((1, 2, 65, 64), "bfloat16", seed=2)
    v = _sample((1, 2, 65, 64), "bfloat16", seed=3)
    g = _sample((1, 2, 65, 64), "bfloat16", seed=4)
    out, lse = ignis.ops._scaled_dot_product_attention(q, k, v, None, True, 0.125)
    r = ignis.ops._scaled_dot_product_attention_backward(g, q, k, v, None, out, lse, True, 0.125)
    outc, lsec = ignis.ops._scaled_dot_product_attention(q.cuda(), k.cuda(), v.cuda(), None,
                                                         True, 0.125)
    rc = ignis.ops._scaled_dot_product_attention_backward(
        g.cuda(), q.cuda(), k.cuda(), v.cuda(), None, outc, lsec, True, 0.125)
    assert_near(outc, out, "bfloat16", "out")
    for a, b, n in zip(r[:3], rc[:3], "qkv"):
        assert b.dtype == ignis.bfloat16
        assert_near(b, a, "bfloat16", f"d{n}")


@real_gpu_only
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_flash_attention_at_gpt2_size(dtype):
    # GPT-2 small's attention, smaller batch: 8 query blocks, 8 key blocks.
    q = _sample((2, 12, 512, 64), dtype, seed=1)
    k = _sample((2, 12, 512, 64), dtype, seed=2)
    v = _sample((2, 12, 512, 64), dtype, seed=3)
    _check_call(q, k, v, dtype, True)


@real_gpu_only
@pytest.mark.parametrize("D", [64, 128, 96])
def test_flash_attention_long_sequences(D):
    q = _sample((1, 4, 1000, D), "bfloat16", seed=1)
    k = _sample((1, 4, 1000, D), "bfloat16", seed=2)
    v = _sample((1, 4, 1000, D), "bfloat16", seed=3)
    _check_call(q, k, v, "bfloat16", False)
    _check_call(q, k, v, "bfloat16", True)


@needs_gpu
def test_compiled_attention_on_strided_heads_matches_eager():
    # The compiled graph's attention gets the output and gradient layouts
    # the op's meta gives on CUDA (like q, k, v): values and gradients as
    # eager's, through the GPT's split / view / transpose / contiguous.
    B, T, H, D = 2, 16, 2, 64
    x = _sample((B, T, 3 * H * D), "bfloat16", seed=8).cuda().requires_grad_()

    def f(x):
        q, k, v = (p.view(B, T, H, D).transpose(1, 2) for p in x.split(H * D, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return (y.transpose(1, 2).contiguous().view(B, T, H * D) * 2).float().sum()
    le = f(x)
    le.backward()
    ge, x.grad = x.grad.clone(), None
    lc = ignis.compile(f, backend="inductor")(x)
    lc.backward()
    assert abs(le.item() - lc.item()) <= 1e-2 * (1 + abs(le.item()))
    assert_near(x.grad, ge, "bfloat16", "dx")


@needs_gpu
def test_compiled_attention_with_a_padding_mask_matches_eager():
    # A key-padding mask built inside the compiled function (a comparison of
    # an arange with per-batch lengths): the compiled graph hands it to the
    # masked flash kernels; values and gradients as eager's.
    B, T, H, D = 2, 24, 2, 64
    x = _sample((B, T, 3 * H * D), "bfloat16", seed=8).cuda().requires_grad_()
    lengths = ignis.tensor([24, 13]).cuda()

    def f(x, lengths):
        q, k, v = (p.view(B, T, H, D).transpose(1, 2) for p in x.split(H * D, dim=2))
        keep = ignis.arange(T, device=x.device)[None, None, None, :] < lengths[:, None, None, None]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return (y.transpose(1, 2).contiguous().view(B, T, H * D) * 2).float().sum()
    le = f(x, lengths)
    le.backward()
    ge, x.grad = x.grad.clone(), None
    lc = ignis.compile(f, backend="inductor")(x, lengths)
    lc.backward()
    assert abs(le.item() - lc.item()) <= 1e-2 * (1 + abs(le.item()))
    assert_near(x.grad, ge, "bfloat16", "dx")


@needs_gpu
def test_masked_calls_launch_the_masked_kernels(capfd):
    # Eager and compiled: a masked call takes the masked variants, an
    # unmasked one the plain kernels (the fake driver's launch log).
    from _fake_launches import launched, require_fake_gpu
    require_fake_gpu()
    q = _sample((1, 2, 20, 64), "bfloat16", seed=1).cuda().requires_grad_()
    mask = ignis.from_numpy(np.tril(np.ones((20, 20), bool))).cuda()

    def step(fn, m):
        def run():
            q.grad = None
            fn(q, m).float().sum().backward()
        return launched(capfd, run)

    def sdpa(q, m):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=m)
    compiled = ignis.compile(sdpa, backend="inductor")
    # The kernels are the Hopper ones where the fake plays compute capability
    # 9.0 (FAKE_CUDA_CC=90).
    hopper = _hopper() and os.environ.get("IGNIS_CUDA_FLASH_SM90") != "0"
    fwd = "flash_fwd_sm90_bfloat16_d64" if hopper else "flash_fwd_bfloat16_d64"
    bwd = "flash_bwd_sm90_bfloat16_d64" if hopper else "flash_bwd_bfloat16_d64"
    fwd_mask = "flash_fwd_sm90_mask_bfloat16_d64" if hopper else "flash_fwd_mask_bfloat16_d64"
    bwd_mask = "flash_bwd_sm90_mask_bfloat16_d64" if hopper else "flash_bwd_mask_bfloat16_d64"
    for fn in (sdpa, compiled):
        names = step(fn, mask)
        assert fwd_mask in names and bwd_mask in names
        names = step(fn, None)
        assert fwd in names and bwd in names
        assert not [n for n in names if "_mask_" in n]


def _hopper():
    p = ignis.cuda.get_device_properties(0)
    return (p.major, p.minor) == (9, 0)


def _kernels_a_fresh_process_asks_for(script, tmp_path, prefix, args=(), **env):
    """Runs `script` in a new Python process (this directory, `env` added) and
    returns the names of the kernels starting with `prefix` it asked for:
    $IGNIS_CUDA_DUMP_SOURCES receives each one's source (read once a process,
    as the switches the scripts set). The Hopper kernels' switch is the
    caller's alone: not inherited from this process."""
    import subprocess
    import sys
    tmp_path.mkdir(parents=True, exist_ok=True)
    inherited = {k: v for k, v in os.environ.items() if k != "IGNIS_CUDA_FLASH_SM90"}
    env = dict(inherited, IGNIS_CUDA_DUMP_SOURCES=str(tmp_path / "src"),
               IGNIS_CACHE_DIR=str(tmp_path / "cache"), **env)
    subprocess.run([sys.executable, "-c", script, *args], check=True, env=env,
                   cwd=os.path.dirname(os.path.abspath(__file__)))
    return {p.stem for p in (tmp_path / "src").glob(prefix + "*.cu")}


@needs_gpu
def test_hopper_forward_is_the_kernel_of_aligned_calls(tmp_path):
    # On compute capability 9.0 a call with 16-byte aligned rows runs the
    # wgmma forward (with an attn_mask, its masked variant); unaligned rows
    # keep the mma.sync kernels.
    if not _hopper():
        pytest.skip("the Hopper forward needs compute capability 9.0 (sm_90a); "
                    "the fake driver plays one with FAKE_CUDA_CC=90")
    script = (
        "import _checkout, ignis, ignis.nn.functional as F\n"
        "def t(*s, dt=ignis.bfloat16): return ignis.randn(*s).to(dt).cuda()\n"
        "q = t(1, 2, 70, 64)\n"
        "F.scaled_dot_product_attention(q, q, q, is_causal=True)\n"
        "h = t(1, 2, 70, 40, dt=ignis.float16)\n"
        "F.scaled_dot_product_attention(h, h, h)\n"
        "F.scaled_dot_product_attention(q, q, q, attn_mask=ignis.ones(70, 70, dtype=ignis.bool).cuda())\n"
        "w = t(1, 2, 70, 128)\n"
        "F.scaled_dot_product_attention(w, w, w)\n"
        "u = t(1, 2, 70, 12)\n"
        "F.scaled_dot_product_attention(u, u, u)\n"
        "ignis.cuda.synchronize()\n")
    names = _kernels_a_fresh_process_asks_for(script, tmp_path / "on", "flash_fwd")
    assert names == {"flash_fwd_sm90_bfloat16_d64", "flash_fwd_sm90_float16_d64",
                     "flash_fwd_sm90_mask_bfloat16_d64", "flash_fwd_sm90_bfloat16_d128",
                     "flash_fwd_bfloat16_d64"}, names
    # IGNIS_CUDA_FLASH_SM90=0 keeps every call on the mma.sync kernels.
    names = _kernels_a_fresh_process_asks_for(script, tmp_path / "off", "flash_fwd",
                                              IGNIS_CUDA_FLASH_SM90="0")
    assert names == {"flash_fwd_bfloat16_d64", "flash_fwd_float16_d64",
                     "flash_fwd_mask_bfloat16_d64", "flash_fwd_bfloat16_d128"}, names


@needs_gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [
    (1, 3, 300, 260, 64),   # 3 query blocks of 128, keys past two 128-key steps
    (2, 2, 129, 515, 56),   # one row past a block; 5 key steps (3 v stages wrap); D < 64
    (1, 1, 1, 700, 64),     # a single query row
    (1, 1, 700, 1, 64),     # a single key
    (1, 2, 200, 333, 128),  # head tile 128: two swizzle atoms a row, 64-key steps
    (2, 1, 70, 150, 96),    # head dim 96 padded to the 128 tile
], ids=lambda s: "x".join(map(str, s)))
def test_hopper_forward_tiles_and_stages(causal, shape):
    # The wgmma forward's own edges (on a Hopper GPU or the fake driver with
    # FAKE_CUDA_CC=90; elsewhere the mma.sync one runs the same checks): rows
    # and keys past the 128-row tile and the 128-key (64-key at head tile
    # 128) steps, more key steps than v's three stages, head dims padded with
    # zero columns, and a negative scale (the checked softmax path).
    B, H, L, S, D = shape
    q, k, v = _qkv(B, H, L, S, D, "bfloat16")
    _check_call(q, k, v, "bfloat16", causal)
    _check_call(q, k, v, "bfloat16", causal, scale=-0.2)


@needs_gpu
@pytest.mark.parametrize("kind", [("B11S", "bool"), ("B1LS", "bool"), ("LS", "input"),
                                  ("BHLS", "input")], ids=lambda k: "-".join(k))
@pytest.mark.parametrize("shape", [
    (2, 2, 300, 260, 64),   # 3 query blocks of 128, 5 64-key steps (v's 3 stages wrap)
    (1, 2, 129, 70, 128),   # head tile 128: one block an SM; a row past a block
    (1, 1, 1, 200, 40),     # a single query row, head dim 40 padded to 64
], ids=lambda s: "x".join(map(str, s)))
def test_hopper_masked_kernels_tiles_and_stages(kind, shape):
    # The masked wgmma forward (64-key steps, the mask staged beside k and v
    # in two stages) and backward (the mask staged with q and dout; rows past
    # L checked) at their own edges, causal too, with key-padding, full and
    # broadcast masks, bool and of the input's dtype (with -inf entries). On
    # other devices the mma.sync masked kernels run the same checks.
    B, H, L, S, D = shape
    q, k, v = _qkv(B, H, L, S, D, "bfloat16")
    if kind[0] == "B11S":
        lengths = np.random.default_rng(5).integers(1, S + 1, B)
        mask = ignis.from_numpy(np.arange(S)[None, None, None, :] < lengths[:, None, None, None])
    else:
        mask = _mask((kind[0], "bfloat16" if kind[1] == "input" else kind[1]), B, H, L, S,
                     "bfloat16")
    for causal in (False, True):
        _check_call(q, k, v, "bfloat16", causal, mask=mask)


def _fresh_process_gradients_match_the_cpu(tmp_path, shapes, **env):
    """Gradients of SDPA on CUDA (bf16, causal or not) for each (B, H, L, S, D,
    causal) of `shapes`, computed in a fresh process with `env`, against the
    CPU kernel's; returns the backward kernels that process asked for."""
    script = (
        "import sys, numpy as np, _checkout, ignis, ignis.nn.functional as F\n"
        "out = sys.argv[1]\n"
        f"for n, (B, H, L, S, D, causal) in enumerate({shapes!r}):\n"
        "    rng = np.random.default_rng(n)\n"
        "    arrs = [rng.standard_normal(s).astype(np.float32) for s in\n"
        "            ((B, H, L, D), (B, H, S, D), (B, H, S, D), (B, H, L, D))]\n"
        "    q, k, v = (ignis.from_numpy(a).to(ignis.bfloat16).cuda().requires_grad_() for a in arrs[:3])\n"
        "    g = ignis.from_numpy(arrs[3]).to(ignis.bfloat16).cuda()\n"
        "    F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)\n"
        "    for name, t in zip('qkv', (q, k, v)):\n"
        "        np.save(f'{out}/{n}_{name}.npy', t.grad.float().cpu().numpy())\n")
    names = _kernels_a_fresh_process_asks_for(script, tmp_path, "flash_bwd", [str(tmp_path)],
                                              **env)
    for n, (B, H, L, S, D, causal) in enumerate(shapes):
        rng = np.random.default_rng(n)
        arrs = [rng.standard_normal(s).astype(np.float32) for s in
                ((B, H, L, D), (B, H, S, D), (B, H, S, D), (B, H, L, D))]
        q, k, v = (ignis.from_numpy(a).to(ignis.bfloat16).float().requires_grad_()
                   for a in arrs[:3])
        g = ignis.from_numpy(arrs[3]).to(ignis.bfloat16).float()
        F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)
        for name, t in zip("qkv", (q, k, v)):
            got = ignis.from_numpy(np.load(tmp_path / f"{n}_{name}.npy"))
            assert_near(got, t.grad, "bfloat16", f"shape {n}: d{name}")
    return names


_NEEDS_HOPPER = ("the Hopper backward needs compute capability 9.0 (sm_90a); "
                 "the fake driver plays one with FAKE_CUDA_CC=90")


@needs_gpu
def test_hopper_backward_matches_the_cpu(tmp_path):
    # The wgmma backward (head tile 64): gradients of several shapes (rows and
    # keys past its 64-row and 128-key tiles, causal, head dim 40, a single
    # query row) match the CPU kernel's, and the process asks for the Hopper
    # backward's kernel; with IGNIS_CUDA_FLASH_SM90=0 for the mma.sync one.
    if not _hopper():
        pytest.skip(_NEEDS_HOPPER)
    shapes = [(1, 2, 70, 50, 64, True), (2, 1, 130, 300, 64, False), (1, 1, 200, 129, 40, True),
              (1, 2, 1, 9, 64, False)]
    names = _fresh_process_gradients_match_the_cpu(tmp_path, shapes)
    assert "flash_bwd_sm90_bfloat16_d64" in names, names
    off = _fresh_process_gradients_match_the_cpu(tmp_path / "off", shapes,
                                                 IGNIS_CUDA_FLASH_SM90="0")
    assert "flash_bwd_bfloat16_d64" in off and not [n for n in off if "sm90" in n], off


@needs_gpu
def test_hopper_backward_at_head_tile_128(tmp_path):
    # The wgmma backward at head tile 128 (dk, dv of 64 x 128 a warpgroup, dq's
    # columns an atom a warpgroup): its gradients (head dims 128 and 96,
    # causal, edges of its tiles) match the CPU's and a fresh process asks for
    # it; with IGNIS_CUDA_FLASH_SM90=0 for the mma.sync kernel.
    if not _hopper():
        pytest.skip(_NEEDS_HOPPER)
    shapes = [(1, 2, 70, 150, 128, True), (2, 1, 130, 129, 96, False), (1, 1, 1, 40, 128, False)]
    names = _fresh_process_gradients_match_the_cpu(tmp_path, shapes)
    assert "flash_bwd_sm90_bfloat16_d128" in names, names
    off = _fresh_process_gradients_match_the_cpu(tmp_path / "off", shapes[:1],
                                                 IGNIS_CUDA_FLASH_SM90="0")
    assert "flash_bwd_bfloat16_d128" in off and not [n for n in off if "sm90" in n], off
