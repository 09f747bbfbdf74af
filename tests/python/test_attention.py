"""_scaled_dot_product_attention's fused CPU kernels (forward and the fused
backward op) against torch's scaled_dot_product_attention and its gradients,
and against ignis's own differentiable formula (what backward runs under
create_graph). test_nn_ops.py covers the public function's basic values;
this file is about the kernels: odd sizes that cross the block edges, L != S,
causal and bool/float masks (broadcast, fully masked rows), scale, GQA,
16-bit inputs and every gradient."""
import numpy as np
import pytest

import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TOL = {"float32": 2e-5, "float64": 1e-11, "bfloat16": 3e-2}
IDT = {"float32": ignis.float32, "float64": ignis.float64, "bfloat16": ignis.bfloat16}
TDT = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def pair(a, dtype, grad=True):
    """ignis and torch leaves holding `a` in `dtype` (same rounded values)."""
    t = torch.from_numpy(np.ascontiguousarray(a)).to(TDT[dtype]).detach()
    i = ignis.from_numpy(t.double().numpy()).to(IDT[dtype])
    if grad:
        t.requires_grad_()
        i.requires_grad_()
    return i, t


def to_np(x):
    if x is None:
        return None
    return x.detach().to(ignis.float64).numpy() if isinstance(x, ignis.Tensor) \
        else x.detach().double().numpy()


def close(got, want, dtype, scale=1.0):
    g, w = to_np(got), to_np(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def run(shapes, dtype="float32", causal=False, mask=None, scale=None, gqa=False, seed=0,
        mask_grad=False):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s) for s in shapes]
    ins = [pair(a, dtype) for a in arrs]
    iq, ik, iv = [p[0] for p in ins]
    tq, tk, tv = [p[1] for p in ins]
    im = tm = None
    if mask is not None:
        if mask.dtype == bool:
            im, tm = ignis.from_numpy(mask), torch.from_numpy(mask)
        else:
            im, tm = pair(mask, dtype, grad=mask_grad)
    kw = dict(is_causal=causal, scale=scale, enable_gqa=gqa)
    io = IF.scaled_dot_product_attention(iq, ik, iv, attn_mask=im, **kw)
    to = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kw)
    assert io.dtype == IDT[dtype]
    close(io, to, dtype)
    go = rng.standard_normal(tuple(to.shape))
    ig, tg = pair(go, dtype, grad=False)
    io.backward(ig)
    to.backward(tg)
    leaves = [(iq, tq), (ik, tk), (iv, tv)] + ([(im, tm)] if mask_grad else [])
    for i, t in leaves:
        close(i.grad, t.grad, dtype, scale=4)
    return ins, im


# Blocks are 64 queries x 128 keys: these sizes end mid-block, span several
# blocks and have L != S both ways.
SHAPES = [
    ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 4)),
    ((1, 2, 70, 16), (1, 2, 130, 16), (1, 2, 130, 12)),
    ((130, 8), (67, 8), (67, 8)),
    ((3, 129, 32), (3, 200, 32), (3, 200, 32)),
]


@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_values_and_grads(shapes, causal, dtype):
    run(shapes, dtype, causal=causal)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale(dtype):
    run(SHAPES[1], dtype, scale=0.37)
    run(SHAPES[1], dtype, causal=True, scale=1.9)


@pytest.mark.parametrize("L,S", [(70, 150), (150, 70)])
@pytest.mark.parametrize("mshape", ["LS", "B1LS", "11S"])
def test_bool_mask(L, S, mshape):
    rng = np.random.default_rng(1)
    shp = {"LS": (L, S), "B1LS": (2, 1, L, S), "11S": (1, 1, S)}[mshape]
    m = rng.random(shp) > 0.3
    if mshape != "11S":
        m[..., 3, :] = False  # a fully masked row: output 0, gradients 0
    run(((2, 3, L, 16), (2, 3, S, 16), (2, 3, S, 8)), mask=m)
    run(((2, 3, L, 16), (2, 3, S, 16), (2, 3, S, 8)), "float64", mask=m, causal=False)


@pytest.mark.parametrize("mshape", [(70, 150), (2, 1, 70, 150), (2, 3, 70, 150)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mask_and_its_grad(mshape, dtype):
    m = np.random.default_rng(2).standard_normal(mshape)
    run(((2, 3, 70, 16), (2, 3, 150, 16), (2, 3, 150, 8)), dtype, mask=m, mask_grad=True)


def test_float_mask_with_inf_and_causal():
    m = np.random.default_rng(3).standard_normal((70, 70))
    m[5, :] = -np.inf
    m[:, 10] = -np.inf
    (iq, _), (ik, _), (iv, _) = run(((2, 70, 16),) * 3, mask=m, causal=False)[0]
    out = IF.scaled_dot_product_attention(iq, ik, iv, attn_mask=ignis.from_numpy(m).float())
    assert np.all(out.detach().numpy()[:, 5] == 0)


def test_fully_masked_rows_lse():
    q = ignis.randn(1, 2, 6, 4)
    m = ignis.ones(6, 5, dtype=ignis.bool)
    m[2] = False
    out, lse = ignis.ops._scaled_dot_product_attention(q, q[..., :5, :], q[..., :5, :], m,
                                                       False, 0.5)
    assert np.all(out.numpy()[:, :, 2] == 0)
    assert np.all(np.isneginf(lse.numpy()[:, :, 2]))
    assert np.all(np.isfinite(lse.numpy()[:, :, [0, 1, 3, 4, 5]]))


@pytest.mark.parametrize("causal", [False, True])
def test_few_heads_long_sequence(causal):
    """Fewer batch x heads than twice the threads: the backward splits query
    blocks across threads with per-thread dk/dv (the float mask's grad too)."""
    m = None if causal else np.random.default_rng(7).standard_normal((260, 300))
    run(((1, 2, 260, 16), (1, 2, 300, 16), (1, 2, 300, 8)), causal=causal, mask=m,
        mask_grad=not causal)
    run(((1, 1, 300, 32), (1, 1, 300, 32), (1, 1, 300, 32)), "float64", causal=causal)


def test_float16_matches_float32():
    rng = np.random.default_rng(8)
    arrs = [rng.standard_normal((2, 3, 70, 16)).astype(np.float16) for _ in range(3)]
    h = IF.scaled_dot_product_attention(*[ignis.from_numpy(a) for a in arrs], is_causal=True)
    f = IF.scaled_dot_product_attention(*[ignis.from_numpy(a.astype(np.float32))
                                          for a in arrs], is_causal=True)
    assert h.dtype == ignis.float16
    np.testing.assert_allclose(h.float().numpy(), f.numpy(), rtol=2e-3, atol=2e-3)


def test_gqa():
    run(((2, 8, 70, 16), (2, 2, 130, 16), (2, 2, 130, 16)), gqa=True)
    run(((2, 8, 70, 16), (2, 4, 130, 16), (2, 4, 130, 16)), gqa=True, causal=True)


def test_broadcast_batch():
    # key/value shared across heads by broadcasting (size-1 dims)
    run(((2, 4, 33, 8), (2, 1, 40, 8), (1, 1, 40, 8)))


def test_lse_dtype():
    for dt, want in [(ignis.float32, ignis.float32), (ignis.float64, ignis.float64),
                     (ignis.bfloat16, ignis.float32), (ignis.float16, ignis.float32)]:
        q = ignis.randn(2, 5, 8).to(dt)
        out, lse = ignis.ops._scaled_dot_product_attention(q, q, q, None, True, 0.3)
        assert out.dtype == dt and lse.dtype == want
        assert tuple(out.shape) == (2, 5, 8) and tuple(lse.shape) == (2, 5)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 70, 3, 16))  # [B, L, H, E] transposed to [B, H, L, E]
    iq = ignis.from_numpy(x).float().transpose(1, 2)
    tq = torch.from_numpy(x).float().transpose(1, 2)
    close(IF.scaled_dot_product_attention(iq, iq, iq, is_causal=True),
          TF.scaled_dot_product_attention(tq, tq, tq, is_causal=True), "float32")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L", [64, 150])
def test_rows_read_in_place_from_a_fused_projection(causal, L):
    """q, k, v sliced out of one [B, L, 3, H, E] projection and transposed
    (rows 3*H*E apart, read in place by the kernels), a permuted dout, and
    causal strips crossing the diagonal: values and every gradient."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, L, 3, 3, 16))
    g = rng.standard_normal((2, L, 3, 16))  # dout as [B, L, H, E], read transposed
    ix, tx = pair(x, "float32")
    iq, ik, iv = [ix[:, :, i].transpose(1, 2) for i in range(3)]
    tq, tk, tv = [tx[:, :, i].transpose(1, 2) for i in range(3)]
    assert iq.stride()[-2] == 3 * 3 * 16
    io = IF.scaled_dot_product_attention(iq, ik, iv, is_causal=causal)
    to = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    close(io, to, "float32")
    ig, tg = pair(g, "float32", grad=False)
    io.backward(ig.transpose(1, 2))
    to.backward(tg.transpose(1, 2))
    close(ix.grad, tx.grad, "float32", scale=4)


@pytest.mark.parametrize("causal", [False, True])
def test_fused_backward_matches_formula(causal):
    """The fused backward op against the differentiable formula that backward
    runs under create_graph (float64: equal to rounding)."""
    rng = np.random.default_rng(5)
    arrs = [rng.standard_normal(s) for s in ((2, 3, 70, 16), (2, 3, 130, 16), (2, 3, 130, 8))]
    m = rng.standard_normal((70, 130))
    grads = []
    for create_graph in (False, True):
        q, k, v, mm = [ignis.from_numpy(a).requires_grad_() for a in arrs + [m]]
        out = IF.scaled_dot_product_attention(q, k, v, attn_mask=mm, is_causal=causal)
        g = ignis.autograd.grad((out * out).sum(), [q, k, v, mm], create_graph=create_graph)
        grads.append([x.detach().numpy() for x in g])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-11)


def test_double_backward():
    rng = np.random.default_rng(6)
    arrs = [rng.standard_normal(s) for s in ((1, 2, 5, 4), (1, 2, 6, 4), (1, 2, 6, 3))]
    iq, ik, iv = [ignis.from_numpy(a).requires_grad_() for a in arrs]
    tq, tk, tv = [torch.from_numpy(a).requires_grad_() for a in arrs]
    (ig,) = ignis.autograd.grad(IF.scaled_dot_product_attention(iq, ik, iv, is_causal=True)
                                .pow(2).sum(), [iq], create_graph=True)
    (tg,) = torch.autograd.grad(TF.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
                                .pow(2).sum(), [tq], create_graph=True)
    ig.sum().backward()
    tg.sum().backward()
    for i, t in [(ig, tg), (ik.grad, tk.grad), (iv.grad, tv.grad)]:
        close(i, t, "float64")


def test_backward_op_direct():
    q = ignis.randn(2, 9, 8)
    out, lse = ignis.ops._scaled_dot_product_attention(q, q, q, None, True, 0.3)
    dq, dk, dv, dm = ignis.ops._scaled_dot_product_attention_backward(
        ignis.ones_like(out), q, q, q, None, out, lse, True, 0.3)
    assert dm is None
    assert tuple(dq.shape) == tuple(dk.shape) == tuple(dv.shape) == (2, 9, 8)


def test_empty_and_serial_sizes():
    run(((1, 1, 1, 4), (1, 1, 1, 4), (1, 1, 1, 4)), "float64")
    q = ignis.zeros(2, 0, 8)
    assert tuple(IF.scaled_dot_product_attention(q, ignis.zeros(2, 3, 8),
                                                 ignis.zeros(2, 3, 5)).shape) == (2, 0, 5)
