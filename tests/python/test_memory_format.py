"""Memory formats, layouts and a few tensor APIs real programs use (Note [Memory formats] in
src/ignis/core/memory_format.cpp): `memory_format=` on clone, contiguous, to, empty and the
*_like creators, is_contiguous(memory_format=), Module.to(memory_format=), eager and under
ignis.compile on every backend; the factories' layout= and pin_memory= keywords; torch's
scatter(..., reduce=); post-accumulate-grad hooks; numpy(force=True).
Strides and values are compared with torch where it is installed."""
import pickle

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")

FORMATS = ["contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]
SHAPES = [(2, 3, 4, 5), (2, 3, 1, 1), (2, 1, 4, 5), (1, 3, 4, 5), (0, 3, 4, 5), (2, 0, 4, 5),
          (2, 3, 4, 5, 6), (2, 1, 1, 5, 6), (3, 4), (2, 3, 4)]


def make(lib, shape, layout):
    """A tensor of `shape` with values 0..n-1, laid out as `layout` says."""
    n = int(np.prod(shape))
    x = lib.arange(n, dtype=lib.float32).reshape(shape) if n else lib.zeros(shape)
    if layout == "permuted" and len(shape) == 4:
        x = x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    elif layout == "transposed" and len(shape) >= 2:
        x = x.transpose(-1, -2)
    elif layout == "sliced" and len(shape) >= 2 and shape[-1] > 1:
        x = x[..., ::2]
    return x


def outcome(fn):
    """(strides, values) of fn(), or the exception's type."""
    try:
        r = fn()
    except (RuntimeError, ValueError, TypeError) as e:
        return type(e).__name__
    if isinstance(r, bool):
        return r
    vals = r.detach().numpy() if isinstance(r, ignis.Tensor) else r.detach().cpu().numpy()
    return tuple(r.stride()), vals.tolist()


# ---- the objects ------------------------------------------------------------------------------
def test_memory_formats_and_layouts_are_singletons_that_print_and_pickle():
    for name in FORMATS:
        f = getattr(ignis, name)
        assert isinstance(f, ignis.memory_format)
        assert repr(f) == "ignis." + name
        assert pickle.loads(pickle.dumps(f)) is f
    assert ignis.channels_last is not ignis.contiguous_format
    assert isinstance(ignis.strided, ignis.layout) and repr(ignis.strided) == "ignis.strided"
    assert pickle.loads(pickle.dumps(ignis.strided)) is ignis.strided
    assert ignis.ones(2).layout is ignis.strided
    with pytest.raises(TypeError):
        ignis.memory_format()
    with pytest.raises(TypeError):
        ignis.dtype()


# ---- eager, against torch ---------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "permuted", "transposed", "sliced"])
def test_copies_in_a_memory_format_match_torch(shape, layout):
    ti, tt = make(ignis, shape, layout), make(torch, shape, layout)
    for name in FORMATS:
        fi, ft = getattr(ignis, name), getattr(torch, name)
        cases = [
            (lambda: ti.clone(memory_format=fi), lambda: tt.clone(memory_format=ft)),
            (lambda: ti.contiguous(memory_format=fi), lambda: tt.contiguous(memory_format=ft)),
            (lambda: ti.to(memory_format=fi), lambda: tt.to(memory_format=ft)),
            (lambda: ti.to(ignis.float64, memory_format=fi),
             lambda: tt.to(torch.float64, memory_format=ft)),
            (lambda: ignis.zeros_like(ti, memory_format=fi),
             lambda: torch.zeros_like(tt, memory_format=ft)),
            (lambda: ignis.full_like(ti, 7, memory_format=fi),
             lambda: torch.full_like(tt, 7, memory_format=ft)),
            (lambda: ti.is_contiguous(memory_format=fi), lambda: tt.is_contiguous(memory_format=ft)),
        ]
        for k, (a, b) in enumerate(cases):
            assert outcome(a) == outcome(b), (name, k)
        if name != "preserve_format":
            ei = outcome(lambda: ignis.empty(shape, memory_format=fi))
            et = outcome(lambda: torch.empty(shape, memory_format=ft))
            assert (ei if isinstance(ei, str) else ei[0]) == (et if isinstance(et, str) else et[0])


@needs_torch
def test_errors_match_torch():
    x = ignis.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        x.contiguous(memory_format=ignis.channels_last)
    with pytest.raises(RuntimeError, match="rank 5 tensor to use channels_last_3d"):
        x.clone(memory_format=ignis.channels_last_3d)
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the "
                                           "contiguous operator"):
        x.transpose(0, 1).contiguous(memory_format=ignis.preserve_format)
    assert x.contiguous(memory_format=ignis.preserve_format) is x  # nothing to copy: allowed
    assert x.is_contiguous(memory_format=ignis.channels_last) is False
    with pytest.raises(TypeError, match="memory_format"):
        x.is_contiguous(memory_format="channels_last")
    with pytest.raises(TypeError):
        x.clone(memory_format="channels_last")


def test_contiguous_returns_self_when_already_in_the_format():
    x = ignis.randn(2, 3, 4, 5).contiguous(memory_format=ignis.channels_last)
    assert x.contiguous(memory_format=ignis.channels_last) is x
    assert x.to(memory_format=ignis.channels_last) is x
    assert x.to(memory_format=ignis.channels_last, copy=True) is not x
    y = x.contiguous()
    assert y is not x and y.is_contiguous() and y.stride() == (60, 20, 5, 1)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_ops_keep_a_channels_last_layout_and_gradients_flow():
    x = ignis.randn(2, 3, 4, 5).to(memory_format=ignis.channels_last).requires_grad_(True)
    y = (x * 2 + 1).relu()
    assert y.is_contiguous(memory_format=ignis.channels_last)
    z = y.clone(memory_format=ignis.contiguous_format)
    assert z.is_contiguous()
    z.sum().backward()
    expect = 2.0 * (x.detach() * 2 + 1 > 0).float()
    np.testing.assert_array_equal(x.grad.numpy(), expect.numpy())


@needs_torch
def test_module_to_memory_format_lays_out_4d_and_5d_parameters():
    mi = ignis.nn.Sequential(ignis.nn.Conv2d(3, 4, 3), ignis.nn.Linear(4, 2))
    mt = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(4, 2))
    mi = mi.to(memory_format=ignis.channels_last)
    mt = mt.to(memory_format=torch.channels_last)
    for (ni, pi), (nt, pt) in zip(mi.named_parameters(), mt.named_parameters()):
        assert ni == nt and pi.stride() == pt.stride(), ni
        assert isinstance(pi, ignis.nn.Parameter)
    with pytest.raises(TypeError, match="memory_format"):
        mi.to(memory_format="channels_last")


# ---- compiled ---------------------------------------------------------------------------------
def _formats_program(x, w):
    y = x.contiguous(memory_format=ignis.channels_last)
    z = (y * 2 + 1).relu()
    c = z.clone(memory_format=ignis.contiguous_format)
    e = ignis.empty_like(z, memory_format=ignis.contiguous_format).fill_(1) + z
    return z, c, e, ignis.nn.functional.conv2d(y, w), y.is_contiguous(memory_format=ignis.channels_last)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_memory_formats_give_eagers_strides_and_values(backend):
    ignis._dynamo.reset()
    x, w = ignis.randn(2, 3, 8, 8), ignis.randn(4, 3, 3, 3)
    want = _formats_program(x, w)
    got = ignis.compile(_formats_program, backend=backend)(x, w)
    assert got[-1] is True and want[-1] is True
    for g, e in zip(got[:-1], want[:-1]):
        assert g.stride() == e.stride()
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, atol=1e-6)
    assert want[0].stride() == (192, 1, 24, 3) and want[1].stride() == (192, 64, 8, 1)


def test_the_aot_graph_prints_memory_formats(capsys):
    ignis._dynamo.reset()
    gms = []

    def keep(gm, example_inputs):
        gms.append(gm)
        return gm

    from ignis._functorch.aot_autograd import aot_module_simplified
    fn = ignis.compile(lambda x: x.clone(memory_format=ignis.channels_last) * 2,
                       backend=lambda gm, ex: aot_module_simplified(gm, ex, fw_compiler=keep))
    out = fn(ignis.randn(2, 3, 4, 5))
    assert out.stride() == (60, 1, 15, 3)
    code = gms[0].code
    assert "memory_format = ignis.channels_last" in code


# ---- layout= and pin_memory= ------------------------------------------------------------------
def test_factories_take_layout_and_pin_memory():
    assert ignis.zeros(3, layout=ignis.strided).tolist() == [0.0, 0.0, 0.0]
    assert ignis.ones(2, layout=None, pin_memory=False).tolist() == [1.0, 1.0]
    assert ignis.empty_like(ignis.ones(2), layout=ignis.strided).shape == (2,)
    assert ignis.arange(3, layout=ignis.strided, requires_grad=False).tolist() == [0, 1, 2]
    with pytest.raises(NotImplementedError, match="layout=ignis.sparse_coo is not supported"):
        ignis.zeros(3, layout=ignis.sparse_coo)
    with pytest.raises(TypeError, match="argument 'layout' must be ignis.layout"):
        ignis.zeros(3, layout="strided")
    x = ignis.ones(2)
    z = x.new_zeros(3, requires_grad=True)
    assert z.requires_grad and z.tolist() == [0.0, 0.0, 0.0]
    assert x.new_empty(2, layout=ignis.strided).shape == (2,)
    assert x.new_full((2,), 5.0, requires_grad=True).requires_grad
    assert x.new_tensor([1.0, 2.0], requires_grad=True).requires_grad


def test_pin_memory_true_pins_or_refuses_like_torch():
    if ignis.cuda.is_available():
        assert ignis.zeros(4, pin_memory=True).is_pinned()
    else:
        with pytest.raises(RuntimeError):
            ignis.zeros(4, pin_memory=True)


# ---- scatter(..., reduce=) ----------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_scatter_with_reduce_matches_torch(reduce, dtype):
    rng = np.random.default_rng(1)
    base = rng.integers(1, 4, size=(4, 5)).astype(dtype)
    src = rng.integers(1, 4, size=(3, 5)).astype(dtype)
    index = rng.integers(0, 4, size=(3, 5))
    for dim in (0, 1):
        idx = index if dim == 0 else index[:, :4] % 5
        s = src if dim == 0 else src[:, :4]
        ti = ignis.from_numpy(base).scatter(dim, ignis.from_numpy(idx), ignis.from_numpy(s),
                                            reduce=reduce)
        tt = torch.from_numpy(base).scatter(dim, torch.from_numpy(idx), torch.from_numpy(s),
                                            reduce=reduce)
        np.testing.assert_array_equal(ti.numpy(), tt.numpy())
        vi = ignis.from_numpy(base).scatter(dim, ignis.from_numpy(idx), 2, reduce=reduce)
        vt = torch.from_numpy(base).scatter(dim, torch.from_numpy(idx), 2, reduce=reduce)
        np.testing.assert_array_equal(vi.numpy(), vt.numpy())
        xi = ignis.from_numpy(base.copy())
        r = xi.scatter_(dim, ignis.from_numpy(idx), ignis.from_numpy(s), reduce=reduce)
        assert r is xi
        np.testing.assert_array_equal(xi.numpy(), tt.numpy())
        xi = ignis.from_numpy(base.copy())
        xi.scatter_(dim, ignis.from_numpy(idx), 2, reduce=reduce)
        np.testing.assert_array_equal(xi.numpy(), vt.numpy())


def test_scatter_reduce_refuses_bad_arguments():
    i = ignis.tensor([0, 0, 1])
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        ignis.ones(5).scatter(0, i, 2.0, reduce="mean")
    # A Python number for scatter_reduce's src: a TypeError, not a read past a 0-dim tensor.
    with pytest.raises(TypeError, match="argument 'src' must be Tensor"):
        ignis.zeros(5).scatter_reduce(0, i, 2.0, "sum")


def test_scatter_with_reduce_has_scatter_reduces_gradients():
    """torch has no derivative for scatter(reduce=); ignis's is scatter_reduce's, so "add"
    differentiates and "multiply" (a product) says clearly that it does not."""
    x = ignis.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = ignis.tensor([4.0, 5.0], requires_grad=True)
    x.scatter(0, ignis.tensor([0, 2]), s, reduce="add").pow(2).sum().backward()
    # y = (1 + 4, 2, 3 + 5): dy^2 = 2y, passed to x everywhere and to s at its targets.
    assert x.grad.tolist() == [10.0, 4.0, 16.0] and s.grad.tolist() == [10.0, 16.0]
    y = x.scatter(0, ignis.tensor([0, 0]), s, reduce="multiply")
    with pytest.raises(NotImplementedError, match="scatter_reduce"):
        y.sum().backward()


# ---- post-accumulate-grad hooks ---------------------------------------------------------------
def test_post_accumulate_grad_hooks_see_the_accumulated_gradient():
    p = ignis.ones(3, requires_grad=True)
    seen = []
    h = p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
    (p * 2).sum().backward()
    (p * 3).sum().backward()
    h.remove()
    (p * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[2.0] * 3, [5.0] * 3]
    assert p.grad.tolist() == [8.0] * 3
    with pytest.raises(RuntimeError, match="non-leaf"):
        (p * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ignis.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    q = ignis.ones(2, requires_grad=True)
    q.register_post_accumulate_grad_hook(lambda t: 1)
    with pytest.raises(RuntimeError, match="must return None"):
        q.sum().backward()


@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_an_optimizer_step_in_backward_through_hooks_matches_a_step_after(backend):
    """The pattern the hook exists for: each parameter stepped as soon as its gradient is
    accumulated, then freed; the weights equal an ordinary step's, compiled or not."""
    ignis._dynamo.reset()

    def model():
        ignis.manual_seed(0)
        return ignis.nn.Sequential(ignis.nn.Linear(4, 8), ignis.nn.ReLU(), ignis.nn.Linear(8, 2))

    x, target = ignis.randn(5, 4), ignis.randn(5, 2)
    plain = model()
    opt = ignis.optim.SGD(plain.parameters(), lr=0.1)
    ignis.nn.functional.mse_loss(plain(x), target).backward()
    opt.step()

    hooked = model()
    opts = {p: ignis.optim.SGD([p], lr=0.1) for p in hooked.parameters()}

    def step(p):
        opts[p].step()
        opts[p].zero_grad()

    for p in hooked.parameters():
        p.register_post_accumulate_grad_hook(step)
    run = ignis.compile(hooked, backend=backend) if backend != "eager" else hooked
    ignis.nn.functional.mse_loss(run(x), target).backward()
    for a, b in zip(plain.parameters(), hooked.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
        assert b.grad is None


# ---- numpy() ------------------------------------------------------------------------------------
def test_numpy_force_reads_any_tensor():
    x = ignis.ones(2, requires_grad=True) * 2
    assert x.numpy(force=True).tolist() == [2.0, 2.0]
    assert x.tolist() == [2.0, 2.0]


# ---- storages -----------------------------------------------------------------------------------
@needs_torch
def test_storages_describe_the_memory_like_torchs():
    for lib in (ignis, torch):
        t = lib.arange(10.0)[2:6]
        u, s = t.untyped_storage(), t.storage()
        assert (u.nbytes(), u.size(), len(u), u.element_size()) == (40, 40, 40, 1)
        assert u.data_ptr() == t.data_ptr() - 8 and s.data_ptr() == u.data_ptr()
        assert (s.size(), len(s), s.nbytes(), s.element_size()) == (10, 10, 40, 4)
        assert s.dtype == lib.float32 and s[3] == 3.0 and s.tolist() == list(map(float, range(10)))
        assert u[0] == 0 and len(u.tolist()) == 40
        assert t.is_shared() is False
        # Views share their storage; a copy does not.
        assert t[1:].untyped_storage().data_ptr() == u.data_ptr()
        assert t.clone().untyped_storage().data_ptr() != u.data_ptr()
    p = ignis.ones(3, requires_grad=True)
    assert p.untyped_storage().nbytes() == 12 and p.storage().tolist() == [1.0, 1.0, 1.0]


# ---- training in channels-last ------------------------------------------------------------------
@needs_torch
def test_gradients_are_laid_out_as_their_parameters():
    """torch's layout contract: a dense parameter's .grad has its strides."""
    for lib in (ignis, torch):
        conv = lib.nn.Conv2d(3, 4, 3).to(memory_format=lib.channels_last)
        x = lib.ones(2, 3, 6, 6)
        conv(x).sum().backward()
        assert conv.weight.grad.stride() == conv.weight.stride() == (27, 1, 9, 3)
        w = lib.ones(3, 4).t().requires_grad_(True)  # a transposed leaf
        (w * 2).sum().backward()
        assert w.grad.stride() == w.stride() == (1, 4)


class _Block(ignis.nn.Module):
    def __init__(self, c):
        super().__init__()
        nn = ignis.nn
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return (self.b2(self.c2(self.b1(self.c1(x)).relu())) + x).relu()


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_a_channels_last_cnn_trains_like_a_contiguous_one_eager_and_compiled(opt):
    """The fused optimizer steps (the CPU default) take channels-last parameters and their
    gradients (they refused them as not contiguous); compiled and eager, channels-last and
    contiguous, the losses agree."""
    nn = ignis.nn
    x = ignis.randn(8, 3, 16, 16)
    y = ignis.randint(0, 10, (8,))

    def run(channels_last, compiled):
        ignis._dynamo.reset()
        ignis.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), _Block(16), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 10))
        inp = x
        if channels_last:
            m, inp = m.to(memory_format=ignis.channels_last), x.to(memory_format=ignis.channels_last)
        o = (ignis.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) if opt == "sgd"
             else ignis.optim.AdamW(m.parameters(), lr=1e-2))
        f = ignis.compile(m, backend="inductor") if compiled else m
        losses = []
        for _ in range(3):
            o.zero_grad()
            loss = nn.functional.cross_entropy(f(inp), y)
            loss.backward()
            o.step()
            losses.append(loss.item())
        if channels_last:
            assert m[0].weight.is_contiguous(memory_format=ignis.channels_last)
        return losses

    want = run(False, False)
    for cl, comp in [(True, False), (True, True), (False, True)]:
        np.testing.assert_allclose(run(cl, comp), want, rtol=2e-5, atol=2e-6)


def _conv_layouts(lib, x_cl, w_cl, kind):
    cl = lib.channels_last_3d if kind == "3d" else lib.channels_last
    shape = (2, 3, 4, 6, 6) if kind == "3d" else (2, 3, 6, 6)
    wshape = {"3d": (4, 3, 2, 2, 2), "transposed": (3, 4, 3, 3), "grouped": (3, 1, 3, 3)}.get(kind, (4, 3, 3, 3))
    x = lib.randn(*shape)
    w = lib.randn(*wshape)
    x = (x.to(memory_format=cl) if x_cl else x).requires_grad_()
    w = (w.to(memory_format=cl) if w_cl else w).requires_grad_()
    F = lib.nn.functional
    y = {"3d": lambda: F.conv3d(x, w), "transposed": lambda: F.conv_transpose2d(x, w),
         "grouped": lambda: F.conv2d(x, w, groups=3)}.get(kind, lambda: F.conv2d(x, w, padding=1))()
    g = y.detach() * 0 + 1
    y.backward(g.contiguous())
    return (y.is_contiguous(), y.is_contiguous(memory_format=cl), x.grad.stride(), w.grad.stride())


@needs_torch
@pytest.mark.parametrize("kind", ["2d", "3d", "transposed", "grouped"])
def test_convolution_outputs_are_laid_out_as_torchs(kind):
    # torch lays a convolution's output out channels-last when its input or
    # its weight is; a channels-last model stays channels-last layer to layer.
    for x_cl in (False, True):
        for w_cl in (False, True):
            assert _conv_layouts(ignis, x_cl, w_cl, kind) == _conv_layouts(torch, x_cl, w_cl, kind), \
                (kind, x_cl, w_cl)


def _cl_block(x, w1, w2):
    F = ignis.nn.functional
    return F.conv2d(F.conv2d(x, w1, padding=1).relu(), w2)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_convolutions_keep_eagers_layouts_and_gradients(backend):
    ignis._dynamo.reset()
    x = ignis.randn(2, 3, 8, 8).to(memory_format=ignis.channels_last)
    w1, w2 = ignis.randn(4, 3, 3, 3), ignis.randn(5, 4, 1, 1)
    outs = []
    for fn in (_cl_block, ignis.compile(_cl_block, backend=backend)):
        a, b = w1.clone().requires_grad_(), w2.clone().requires_grad_()
        y = fn(x, a, b)
        y.sum().backward()
        outs.append((y, a.grad, b.grad))
    (ye, ae, be), (yc, ac, bc) = outs
    assert ye.is_contiguous(memory_format=ignis.channels_last) and ye.stride() == yc.stride()
    for e, c in zip((ye, ae, be), (yc, ac, bc)):
        np.testing.assert_allclose(c.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-5)


@needs_torch
def test_convert_conv_weight_memory_format_matches_torch():
    for lib in (ignis, torch):
        m = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.ReLU(),
                              lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)), lib.nn.Linear(2, 2))
        out = lib.nn.utils.convert_conv2d_weight_memory_format(m, lib.channels_last)
        assert out is m
        assert m[0].weight.stride() == (27, 1, 9, 3) and m[2][0].weight.stride() == (18, 1, 6, 2)
        assert m[3].weight.stride() == (2, 1)
        assert isinstance(m[0].weight, lib.nn.Parameter)
        m3 = lib.nn.Conv3d(2, 3, 2)
        lib.nn.utils.convert_conv3d_weight_memory_format(m3, lib.channels_last_3d)
        assert m3.weight.is_contiguous(memory_format=lib.channels_last_3d)


@needs_torch
def test_base_and_is_inference_match_torch():
    for lib in (ignis, torch):
        a = lib.ones(3)
        assert a._base is None and a.detach()._base is None
        assert a[1:]._base is a and a[1:][1:]._base is a and a.view(3)._base is a
        assert (a * 2)._base is None
        x = lib.ones(3, requires_grad=True)
        assert x[1:]._base is x
        with lib.inference_mode():
            b, c = lib.ones(2), a * 2
        assert b.is_inference() and c.is_inference() and b[1:].is_inference()
        assert not (b + 1).is_inference() and not a.is_inference()
        assert not lib.is_inference_mode_enabled()


def test_memory_formats_under_dynamic_shapes():
    ignis._dynamo.reset()

    def f(x):
        y = x.contiguous(memory_format=ignis.channels_last)
        return (y * 2).sum(1), y + 1

    cf = ignis.compile(f, dynamic=True)
    for n in (2, 3, 5):
        x = ignis.randn(n, 3, 4, 5)
        got, want = cf(x), f(x)
        for g, w in zip(got, want):
            assert g.stride() == w.stride()
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-6)


@needs_torch
def test_set_takes_another_tensors_or_a_storages_memory_like_torch():
    for lib in (ignis, torch):
        x, y = lib.ones(3), lib.arange(6.0).view(2, 3)
        v0 = x._version
        assert x.set_(y) is x and x.data_ptr() == y.data_ptr() and x.shape == (2, 3)
        assert x._version > v0
        assert x.set_().shape == (0,)
        z = lib.zeros(2)
        z.set_(lib.arange(10.0).untyped_storage(), 2, (2, 2), (2, 1))
        assert z.tolist() == [[2.0, 3.0], [4.0, 5.0]]
        with pytest.raises(RuntimeError, match="Could not set tensor of type"):
            lib.ones(2).set_(lib.ones(2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.ones(2, requires_grad=True).set_(lib.zeros(2))
        # A tensor saved for backward and then set_ elsewhere: backward refuses it.
        a = lib.ones(3, requires_grad=True)
        b = a * 1
        c = b * b
        b.set_(lib.zeros(3))
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            c.sum().backward()
