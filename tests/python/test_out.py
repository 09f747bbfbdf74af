"""`out=` on ops that return new tensors, and Tensor.resize_, against PyTorch."""
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

torch = pytest.importorskip("torch")


def pair(a):
    a = np.asarray(a)
    return ignis.from_numpy(a.copy()), torch.from_numpy(a.copy())


def same(i, t):
    assert tuple(i.shape) == tuple(t.shape)
    assert str(i.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(i.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)


rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((3, 4)).astype(np.float32)

CASES = {
    "add": lambda m, x, y: (m.add, (x, y), {}),
    "add_alpha": lambda m, x, y: (m.add, (x, y), {"alpha": 2.0}),
    "mul_scalar": lambda m, x, y: (m.mul, (x, 3.0), {}),
    "exp": lambda m, x, y: (m.exp, (x,), {}),
    "where": lambda m, x, y: (m.where, (x > 0, x, y), {}),
    "sum_dim": lambda m, x, y: (m.sum, (x, 1), {}),
    "mean_dim": lambda m, x, y: (m.mean, (x, 0), {}),
    "matmul": lambda m, x, y: (m.matmul, (x, y.T), {}),
    "mm": lambda m, x, y: (m.mm, (x, y.T), {}),
    "clamp": lambda m, x, y: (m.clamp, (x, -0.5, 0.5), {}),
    "cat": lambda m, x, y: (m.cat, ([x, y],), {}),
    "stack": lambda m, x, y: (m.stack, ([x, y],), {}),
    "zeros": lambda m, x, y: (m.zeros, (2, 5), {}),
    "arange": lambda m, x, y: (m.arange, (6,), {}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_matches_torch(name):
    xi, xt = pair(X)
    yi, yt = pair(Y)
    fi, ai, ki = CASES[name](ignis, xi, yi)
    ft, at, kt = CASES[name](torch, xt, yt)
    expect = ft(*at, **kt)
    oi, ot = ignis.empty(expect.shape, dtype=getattr(ignis, str(expect.dtype)[6:])), \
        torch.empty(expect.shape, dtype=expect.dtype)
    ri = fi(*ai, **ki, out=oi)
    rt = ft(*at, **kt, out=ot)
    assert ri is oi and rt is ot
    same(oi, ot)


def test_out_casts_to_a_wider_dtype_and_refuses_a_narrower_one():
    xi, xt = pair(X)
    oi, ot = ignis.empty(3, 4, dtype=ignis.float64), torch.empty(3, 4, dtype=torch.float64)
    ignis.exp(xi, out=oi)
    torch.exp(xt, out=ot)
    same(oi, ot)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.exp(xt, out=torch.empty(3, 4, dtype=torch.int64))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        ignis.exp(xi, out=ignis.empty(3, 4, dtype=ignis.int64))


def test_out_resizes_with_a_warning_unless_empty():
    xi, _ = pair(X)
    o = ignis.zeros(7)
    with pytest.warns(UserWarning, match="was resized"):
        ignis.neg(xi, out=o)
    assert tuple(o.shape) == (3, 4) and o.is_contiguous()
    np.testing.assert_array_equal(o.numpy(), -X)
    e = ignis.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ignis.neg(xi, out=e)
    np.testing.assert_array_equal(e.numpy(), -X)


def test_out_may_alias_an_input():
    xi, xt = pair(X)
    yi, yt = pair(Y)
    ignis.add(xi, yi, out=xi)
    torch.add(xt, yt, out=xt)
    same(xi, xt)


def test_out_refuses_autograd_and_allows_no_grad():
    a = ignis.ones(3, requires_grad=True)
    o = ignis.empty(3)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ignis.mul(a, 2.0, out=o)
    with ignis.no_grad():
        ignis.mul(a, 2.0, out=o)
    np.testing.assert_array_equal(o.numpy(), np.full(3, 2.0, np.float32))


def test_out_with_several_results():
    xi, xt = pair(X)
    vi, ii = ignis.empty(0), ignis.empty(0, dtype=ignis.int64)
    vt, it = torch.empty(0), torch.empty(0, dtype=torch.int64)
    ri = ignis.max(xi, 1, out=(vi, ii))
    torch.max(xt, 1, out=(vt, it))
    assert ri[0] is vi and ri[1] is ii
    same(vi, vt)
    same(ii, it)
    with pytest.raises(TypeError, match="'out' must be a tuple"):
        ignis.max(xi, 1, out=vi)


def test_out_is_not_taken_by_views_or_in_place_ops():
    xi, _ = pair(X)
    with pytest.raises(TypeError):
        ignis.transpose(xi, 0, 1, out=ignis.empty(4, 3))
    with pytest.raises(TypeError):
        xi.add_(1.0, out=ignis.empty(3, 4))


def test_out_device_and_type_errors():
    xi, _ = pair(X)
    with pytest.raises(TypeError, match="'out' must be Tensor"):
        ignis.exp(xi, out=[1, 2])
    assert ignis.exp(xi, out=None).shape == (3, 4)


def test_resize_matches_torch():
    for sizes in [(2, 6), (4,), (5, 5), ()]:
        ti = ignis.arange(12.0)
        tt = torch.arange(12.0)
        ri = ti.resize_(sizes)
        tt.resize_(sizes)
        assert ri is ti and tuple(ti.shape) == tuple(tt.shape) and ti.is_contiguous()
        n = min(12, int(np.prod(sizes)))
        np.testing.assert_array_equal(ti.numpy().ravel()[:n], tt.numpy().ravel()[:n])
    t = ignis.zeros(2, 2)
    t.resize_([3, 1])
    assert tuple(t.shape) == (3, 1)
    assert ignis.zeros(3).resize_(2, 2).shape == (2, 2)
    # A view with an offset grows from its offset; the base keeps its storage.
    base = ignis.arange(6.0)
    v = base[2:]
    v.resize_(8)
    assert v.storage_offset() == 2 and tuple(v.shape) == (8,)
    np.testing.assert_array_equal(v.numpy()[:4], [2.0, 3.0, 4.0, 5.0])
    np.testing.assert_array_equal(base.numpy(), np.arange(6.0, dtype=np.float32))
    with pytest.raises(RuntimeError, match="require grad"):
        ignis.ones(2, requires_grad=True).resize_(4)
    with pytest.raises(TypeError):
        ignis.ones(2).resize_("a")


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_out_inside_a_compiled_function(backend):
    # Captured as r = op(...); out.copy_(r): one graph, the write visible
    # both to later ops and to the caller's tensor.
    def f(x, y, o):
        ignis.mul(x, y, out=o)
        t = ignis.empty(3)
        ignis.add(o, 1.0, out=t)
        return t * 2

    x, y = ignis.randn(3), ignis.randn(3)
    o_eager, o_comp = ignis.zeros(3), ignis.zeros(3)
    ignis.compiler.reset()
    cf = ignis.compile(f, backend=backend, fullgraph=True)
    np.testing.assert_allclose(cf(x, y, o_comp).numpy(), f(x, y, o_eager).numpy(), rtol=1e-6)
    np.testing.assert_allclose(o_comp.numpy(), o_eager.numpy(), rtol=1e-6)


def test_out_that_would_be_resized_or_needs_grad_runs_eagerly():
    def f(x, o):
        ignis.exp(x, out=o)
        return o + 1

    x = ignis.randn(3)
    ignis.compiler.reset()
    cf = ignis.compile(f, backend="aot_eager")
    o = ignis.empty(0)
    np.testing.assert_allclose(cf(x, o).numpy(), np.exp(x.numpy()) + 1, rtol=1e-6)
    assert tuple(o.shape) == (3,)
    a = ignis.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        cf(a, ignis.empty(3))


def test_out_with_generator_and_requires_grad_keywords():
    g1, g2 = ignis.Generator().manual_seed(7), ignis.Generator().manual_seed(7)
    o = ignis.empty(5)
    r = ignis.randn(5, generator=g1, out=o)
    assert r is o
    np.testing.assert_array_equal(o.numpy(), ignis.randn(5, generator=g2).numpy())
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ignis.zeros(3, requires_grad=True, out=ignis.empty(3))
