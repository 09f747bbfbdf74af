"""Complex tensors (Note [Complex tensors], src/ignis/ops/complex.cpp): complex64 and
complex128, their creation, printing and NumPy interop, view_as_real / view_as_complex, the
ops written as real ops on real views, gradients in torch's convention (LLaMA's rotary
embedding through polar and view_as_complex), and the same under ignis.compile. Compared
with torch where it is installed, NumPy otherwise."""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")


def crand(*shape, seed=0, dtype=np.complex64):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if isinstance(a, ignis.Tensor) else np.asarray(a)
    b = b.detach().numpy() if torch is not None and isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- dtypes, creation, NumPy ----------------------------------------------------------------
def test_dtypes_and_their_properties():
    assert ignis.complex64 is ignis.cfloat and ignis.complex128 is ignis.cdouble
    assert ignis.complex64.is_complex and not ignis.complex64.is_floating_point
    assert ignis.complex64.itemsize == 8 and ignis.complex128.itemsize == 16
    assert ignis.complex64.to_real() is ignis.float32
    assert ignis.float64.to_complex() is ignis.complex128
    assert ignis.promote_types(ignis.float64, ignis.complex64) is ignis.complex128
    assert ignis.promote_types(ignis.int64, ignis.complex64) is ignis.complex64
    assert not ignis.float32.is_complex


def test_tensors_from_python_and_numpy():
    t = ignis.tensor([1 + 2j, 3 - 1j])
    assert t.dtype is ignis.complex64 and t.is_complex() and ignis.is_complex(t)
    np.testing.assert_array_equal(t.numpy(), np.array([1 + 2j, 3 - 1j], np.complex64))
    assert ignis.tensor([1, 2.5j]).dtype is ignis.complex64
    assert ignis.tensor([1j], dtype=ignis.complex128).dtype is ignis.complex128
    a = crand(3, 4, dtype=np.complex128)
    x = ignis.from_numpy(a)
    assert x.dtype is ignis.complex128 and x.shape == (3, 4)
    a[0, 0] = 5 + 5j  # shares memory both ways
    assert x[0, 0].item() == 5 + 5j
    assert isinstance(x[1, 2].item(), complex) and complex(x[1, 2]) == complex(a[1, 2])
    assert x.tolist() == a.tolist()
    assert ignis.zeros(2, dtype=ignis.complex64).tolist() == [0j, 0j]
    assert ignis.ones(2, 2, dtype=ignis.cfloat).sum().item() == 4 + 0j
    assert ignis.full((2,), 3.0, dtype=ignis.complex64).tolist() == [3 + 0j, 3 + 0j]


@needs_torch
@pytest.mark.parametrize("values", [[1 + 2j, 3 - 1j], [[0.5 - 1.25j, 2j], [-3.0, 1e-5 + 1j]],
                                    [1 + 0j], [100.0 + 0.001j, -2.5j]])
def test_repr_matches_torch(values):
    for dt in ("complex64", "complex128"):
        ours = repr(ignis.tensor(values, dtype=getattr(ignis, dt)))
        theirs = repr(torch.tensor(values, dtype=getattr(torch, dt)))
        assert ours == theirs.replace("torch.", "ignis."), (ours, theirs)


def test_casts_both_ways():
    x = ignis.tensor([1.5, -2.0])
    z = x.to(ignis.complex64)
    assert z.tolist() == [1.5 + 0j, -2 + 0j]
    assert z.to(ignis.complex128).dtype is ignis.complex128
    w = ignis.tensor([1 + 2j, 3 - 4j])
    assert w.to(ignis.float32).tolist() == [1.0, 3.0]  # the real parts, as torch
    y = ignis.zeros(2, dtype=ignis.complex64)
    y.copy_(ignis.tensor([7.0, 8.0]))
    assert y.tolist() == [7 + 0j, 8 + 0j]
    assert w.clone().tolist() == w.tolist() and w.t().contiguous().tolist() == w.tolist()


# ---- views ------------------------------------------------------------------------------------
def test_view_as_real_and_complex_share_memory():
    a = crand(2, 3)
    z = ignis.from_numpy(a)
    r = ignis.view_as_real(z)
    assert r.dtype is ignis.float32 and r.shape == (2, 3, 2) and r.stride() == (6, 2, 1)
    np.testing.assert_array_equal(r.numpy(), np.stack([a.real, a.imag], -1))
    r[0, 0, 1] = 9.0
    assert a[0, 0].imag == 9.0
    zt = z.t()  # strides double; the storage offset too
    assert ignis.view_as_real(zt).stride() == (2, 6, 1)
    c = ignis.view_as_complex(r)
    assert c.dtype is ignis.complex64 and c.shape == (2, 3)
    np.testing.assert_array_equal(c.numpy(), a)
    col = ignis.view_as_real(z[:, 1])
    assert col.storage_offset() == 2 and col.stride() == (6, 1)
    # real and imag are views: writing them writes z
    z.real[1] = 0.0
    z.imag.mul_(2)
    np.testing.assert_array_equal(a[1].real, 0.0)
    z.real = 1.0
    np.testing.assert_array_equal(a.real, 1.0)


@pytest.mark.parametrize("make, message", [
    (lambda: ignis.view_as_real(ignis.ones(2)), "only supported for complex tensors"),
    (lambda: ignis.view_as_complex(ignis.ones(2, 3)), "last dimension of size 2"),
    (lambda: ignis.view_as_complex(ignis.ones(3, 2)[:, :1].expand(3, 2)),
     "last dimension with stride 1"),
    (lambda: ignis.view_as_complex(ignis.ones(3, 3)[:, 1:]), "stride divisible by 2"),
    (lambda: ignis.view_as_complex(ignis.ones(5)[1:].view(2, 2)), "storage_offset divisible by 2"),
    (lambda: ignis.view_as_complex(ignis.ones(2, 2, dtype=ignis.int64)), "float and double"),
    (lambda: ignis.imag(ignis.ones(2)), "non-complex dtypes"),
])
def test_view_errors_name_the_problem(make, message):
    with pytest.raises(RuntimeError, match=message):
        make()


# ---- ops ----------------------------------------------------------------------------------------
@needs_torch
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arithmetic_matches_torch(op):
    a, b = crand(3, 4, seed=1), crand(4, seed=2)
    f = np.random.default_rng(3).standard_normal((3, 1)).astype(np.float32)
    cases = [(a, b), (a, f), (f, a), (a, a[:1])]
    for x, y in cases:
        ours = getattr(ignis, op)(ignis.from_numpy(x), ignis.from_numpy(y))
        theirs = getattr(torch, op)(torch.from_numpy(x), torch.from_numpy(y))
        close(ours, theirs)
    z = ignis.from_numpy(a)
    tz = torch.from_numpy(a)
    for s in (2.0, 1j, 0.5 - 2j, 3):
        close(getattr(z, f"__{'truediv' if op == 'div' else op}__")(s),
              getattr(tz, f"__{'truediv' if op == 'div' else op}__")(s))
    close(ignis.add(z, z, alpha=2) if op == "add" else z, torch.add(tz, tz, alpha=2) if op == "add" else tz)
    w = z.clone()
    getattr(w, op + "_")(ignis.from_numpy(b))
    tw = tz.clone()
    getattr(tw, op + "_")(torch.from_numpy(b))
    close(w, tw)


@needs_torch
def test_promotion_matches_torch():
    a = crand(3)
    d = np.arange(3, dtype=np.float64)
    i = np.arange(3, dtype=np.int64)
    for x, y in [(a, d), (i, a), (a, np.float32(2.0))]:
        ours = ignis.as_tensor(x) * ignis.as_tensor(y)
        theirs = torch.as_tensor(x) * torch.as_tensor(y)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        close(ours, theirs)
    assert (ignis.arange(3) * 1j).dtype is ignis.complex64
    assert (ignis.arange(3, dtype=ignis.float64) * 1j).dtype is ignis.complex128


@needs_torch
def test_unary_reductions_and_products_match_torch():
    a = crand(2, 3, 4, seed=4)
    z, tz = ignis.from_numpy(a), torch.from_numpy(a)
    for name in ("neg", "exp", "abs", "angle", "conj", "real", "imag"):
        close(getattr(ignis, name)(z), getattr(torch, name)(tz).resolve_conj(), tol=2e-5)
    close(ignis.polar(z.abs(), z.angle()), torch.polar(tz.abs(), tz.angle()), tol=2e-5)
    close(ignis.complex(z.real, z.imag), tz)
    close(z.sum(), tz.sum(), tol=1e-4)
    close(z.sum(1), tz.sum(1), tol=1e-4)
    close(z.sum((0, 2), keepdim=True), tz.sum((0, 2), keepdim=True), tol=1e-4)
    close(z.mean(-1), tz.mean(-1), tol=1e-5)
    close(z.sum(dtype=ignis.complex128), tz.sum(dtype=torch.complex128), tol=1e-4)
    b = crand(4, 5, seed=5)
    close(z @ ignis.from_numpy(b), tz @ torch.from_numpy(b), tol=1e-4)
    close(z[0] @ ignis.from_numpy(b), tz[0] @ torch.from_numpy(b), tol=1e-4)
    close(z == z.conj(), tz == tz.conj())
    close(z != ignis.from_numpy(a.copy()), tz != torch.from_numpy(a.copy()))
    close(ignis.isreal(z.real.to(ignis.complex64)), torch.isreal(tz.real.to(torch.complex64)))


def test_an_op_without_a_rule_says_so():
    z = ignis.tensor([1 + 1j])
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        ignis.tanh(z)  # (sin has a rule; tanh not yet)


# ---- gradients ----------------------------------------------------------------------------------
def _rope(lib, x, freqs_cis):
    """LLaMA's apply_rotary_emb: pairs of x as complex numbers, rotated."""
    xc = lib.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    return lib.view_as_real(xc * freqs_cis).flatten(3)


def _freqs(lib, dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (lib.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = lib.arange(end)
    freqs = lib.outer(t, freqs).float()
    return lib.polar(lib.ones_like(freqs), freqs)


@needs_torch
def test_rotary_embedding_values_and_gradients_match_torch():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 5, 3, 8)).astype(np.float32)
    w = rng.standard_normal((2, 5, 3, 8)).astype(np.float32)
    outs = {}
    for lib in (ignis, torch):
        xt = lib.from_numpy(x.copy()).requires_grad_(True)
        f = _freqs(lib, 8, 5).reshape(1, 5, 1, 4)
        y = _rope(lib, xt, f)
        (y * lib.from_numpy(w)).sum().backward()
        outs[lib.__name__] = (y.detach().numpy(), xt.grad.numpy())
    np.testing.assert_allclose(outs["ignis"][0], outs["torch"][0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs["ignis"][1], outs["torch"][1], rtol=1e-5, atol=1e-5)


@needs_torch
def test_gradients_of_complex_leaves_follow_torchs_convention():
    a, b = crand(3, seed=8), crand(3, seed=9)
    grads = {}
    for lib in (ignis, torch):
        za = lib.from_numpy(a.copy()).requires_grad_(True)
        zb = lib.from_numpy(b.copy()).requires_grad_(True)
        loss = ((za * zb).abs() + (za / zb).real * 2 + lib.angle(za - zb)).sum()
        loss.backward()
        grads[lib.__name__] = (za.grad.numpy(), zb.grad.numpy())
        assert za.grad.dtype == za.dtype
    for o, t in zip(grads["ignis"], grads["torch"]):
        np.testing.assert_allclose(o, t, rtol=1e-4, atol=1e-5)


# ---- compiled -----------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_rotary_embedding_compiled_equals_eager(backend):
    ignis._dynamo.reset()
    rng = np.random.default_rng(11)
    x = ignis.from_numpy(rng.standard_normal((2, 6, 2, 8)).astype(np.float32))
    f = _freqs(ignis, 8, 6).reshape(1, 6, 1, 4)

    def fn(x, f):
        return _rope(ignis, x, f) * 2 + 1

    want = fn(x, f)
    got = ignis.compile(fn, backend=backend)(x, f)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    xg = x.clone().requires_grad_(True)
    ignis.compile(fn, backend=backend)(xg, f).sum().backward()
    xe = x.clone().requires_grad_(True)
    fn(xe, f).sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), xe.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_the_compiler_sees_through_a_view_as_real_of_view_as_complex(programs):
    # view_as_real(view_as_complex(x)) is x: the pairs the complex multiply produces and
    # the program views as real again are read by the next kernel with no extern between
    # (graph/passes/complex_views.h); x is read in place.
    ignis._dynamo.reset()
    x = ignis.randn(2, 6, 2, 8)
    f = _freqs(ignis, 8, 6).reshape(1, 6, 1, 4)
    got = ignis.compile(lambda x, f: _rope(ignis, x, f) * 2 + 1, backend="inductor")(x, f)
    np.testing.assert_allclose(got.numpy(), (_rope(ignis, x, f) * 2 + 1).numpy(), rtol=1e-6,
                               atol=1e-6)
    text = "\n".join(programs)
    assert "view_as_complex" not in text, text
    assert text.count("view_as_real(") == 1, text  # the complex input's real view (an alias)


@needs_torch
def test_more_math_and_data_movement_match_torch():
    a = crand(3, 4, seed=12)
    a[0, 0] = -2.0 + 0.0j  # on the negative real axis: sqrt's and log's branch cut
    z, tz = ignis.from_numpy(a), torch.from_numpy(a)
    for name in ("reciprocal", "square", "log", "sqrt", "sin", "cos"):
        close(getattr(z, name)(), getattr(tz, name)(), tol=2e-5)
    close(z ** 2, tz ** 2, tol=2e-5)
    close(z ** 0.5, tz ** 0.5, tol=2e-5)
    close(z ** ignis.from_numpy(a[1]), tz ** torch.from_numpy(a[1]), tol=1e-4)
    idx = np.array([2, 0, 2])
    close(z[ignis.from_numpy(idx)], tz[torch.from_numpy(idx)])
    close(z[:, ignis.from_numpy(idx)], tz[:, torch.from_numpy(idx)])
    close(z.index_select(1, ignis.from_numpy(idx)), tz.index_select(1, torch.from_numpy(idx)))
    close(z.flip(-1), tz.flip(-1))
    close(z.roll(1, 0), tz.roll(1, 0))
    close(z.roll(2), tz.roll(2))
    close(z.repeat(2, 1), tz.repeat(2, 1))
    m = np.array([True, False, True, False])
    close(ignis.where(ignis.from_numpy(m), z, ignis.zeros(())), torch.where(torch.from_numpy(m), tz, torch.zeros(())))
    close(z.masked_fill(ignis.from_numpy(m), 2.0), tz.masked_fill(torch.from_numpy(m), 2.0))
    close(ignis.cat([z, z]), torch.cat([tz, tz]))
    close(ignis.stack([z, z], 1), torch.stack([tz, tz], 1))


@pytest.mark.skipif(not ignis.cuda.is_available(),
                    reason=f"no usable CUDA GPU here: {ignis._C._cuda_unavailable_reason()}")
def test_complex_tensors_on_cuda_compute_through_the_real_kernels():
    a = crand(2, 6, 2, 4, seed=13)
    z = ignis.from_numpy(a).cuda()
    assert z.dtype is ignis.complex64 and z.device.type == "cuda"
    np.testing.assert_array_equal(z.cpu().numpy(), a)
    assert z[0, 0, 0, 0].item() == complex(a[0, 0, 0, 0])
    f = _freqs(ignis, 8, 6).reshape(1, 6, 1, 4)
    x = ignis.from_numpy(np.random.default_rng(14).standard_normal((2, 6, 2, 8)).astype(np.float32))
    xg = x.cuda().requires_grad_(True)
    y = _rope(ignis, xg, f.cuda())
    y.sum().backward()
    xc = x.clone().requires_grad_(True)
    _rope(ignis, xc, f).sum().backward()
    np.testing.assert_allclose(y.detach().cpu().numpy(), _rope(ignis, x, f).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(xg.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((z * z).sum().cpu().numpy(), (a * a).sum(), rtol=1e-4)


def test_llama_attention_with_complex_rotary_embedding_compiles_dynamic_lengths():
    # Meta's LLaMA code: freqs_cis a complex buffer sliced to the length, view_as_complex,
    # a complex multiply, view_as_real. Four lengths give two graphs (automatic dynamic:
    # view_as_real / view_as_complex have shape rules) and eager's values and gradients.
    ignis._dynamo.reset()
    nn = ignis.nn

    class Attn(nn.Module):
        def __init__(self, d=32, h=4, maxlen=32):
            super().__init__()
            self.h = h
            self.wq, self.wk = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.wv, self.wo = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
            self.register_buffer("freqs_cis", _freqs(ignis, d // h, maxlen), persistent=False)

        def forward(self, x):
            B, L, D = x.shape
            q, k = self.wq(x).view(B, L, self.h, -1), self.wk(x).view(B, L, self.h, -1)
            v = self.wv(x).view(B, L, self.h, -1)
            f = self.freqs_cis[:L].view(1, L, 1, -1)
            q, k = _rope(ignis, q, f), _rope(ignis, k, f)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(y.transpose(1, 2).reshape(B, L, D))

    ignis.manual_seed(0)
    model = Attn()
    compiled = ignis.compile(model)
    rng = np.random.default_rng(15)
    counts = []
    before = ignis._dynamo.utils.counters["stats"]["unique_graphs"]
    for L in (16, 12, 9, 20):
        x = ignis.from_numpy(rng.standard_normal((2, L, 32)).astype(np.float32))
        want = model(x)
        want.square().sum().backward()
        want_grad = model.wq.weight.grad.clone()
        model.zero_grad()
        got = compiled(x)
        got.square().sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(model.wq.weight.grad.numpy(), want_grad.numpy(), rtol=1e-4,
                                   atol=1e-4)
        model.zero_grad()
        counts.append(ignis._dynamo.utils.counters["stats"]["unique_graphs"] - before)
    assert counts == [1, 2, 2, 2], counts


def test_a_complex_view_of_a_computed_buffer_keeps_it_alive(programs):
    # view_as_complex of a computed value is an extern view: its input lives as long as
    # the view (a graph output here), so later kernels do not take its memory.
    ignis._dynamo.reset()

    def f(x):
        z = ignis.view_as_complex(x * 2)
        c = (x * 3 + (x + 1).sum()) * 5
        d = (c - 1).exp() + c
        return z, d

    x = ignis.randn(64, 2)
    z, d = ignis.compile(f, backend="inductor")(x)
    wz, wd = f(x)
    np.testing.assert_array_equal(z.numpy(), wz.numpy())
    np.testing.assert_allclose(d.numpy(), wd.numpy(), rtol=1e-5)
    assert "view view_as_complex(" in "\n".join(programs)


def test_a_real_operands_imaginary_part_is_zero_even_where_it_is_infinite():
    # where/eq with a real operand: its imaginary part is zeros, not real * 0 (NaN at inf).
    out = ignis.where(ignis.tensor([True, False]), ignis.tensor([float("inf"), 1.0]),
                      ignis.tensor([1 + 1j, 2j]))
    assert out.tolist() == [complex(float("inf"), 0), 2j]
