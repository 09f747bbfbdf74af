"""sort, argsort, topk, randperm, multinomial, broadcast_to/broadcast_tensors,
shifts and number ** tensor: values and gradients against torch and NumPy,
errors of torch's type, and capture without graph breaks."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")


def _np(t):
    return (t.float() if t.dtype == ignis.bfloat16 else t).numpy()


def _same(got, want, tol=0.0):
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    want = want.float() if want.dtype == torch.bfloat16 else want
    np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


def _pair(a):
    return ignis.tensor(a), torch.tensor(a)


RNG = np.random.default_rng(0)
# Ties, NaN and infinities, which decide the order of equal and unordered elements.
SPECIAL = np.array([[3.0, np.nan, 1.0, 3.0, -np.inf, 0.0, -0.0, np.inf, 1.0, np.nan],
                    [2.0, 2.0, 2.0, -1.0, 5.0, np.nan, 7.0, -3.0, 2.0, 0.5]], dtype=np.float32)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "int64", "int32", "uint8",
                                   "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_stable(dtype, dim, descending):
    if dtype in ("uint8", "bool"):
        a = RNG.integers(0, 2 if dtype == "bool" else 6, (5, 7))
    elif dtype.startswith("int"):
        a = RNG.integers(-4, 5, (5, 7))
    else:
        a = RNG.integers(-3, 4, (5, 7)).astype(np.float64) + 0.5 * (RNG.random((5, 7)) > 0.7)
    x, t = ignis.tensor(a).to(getattr(ignis, dtype)), torch.tensor(a).to(getattr(torch, dtype))
    v, i = ignis.sort(x, dim=dim, descending=descending, stable=True)
    tv, ti = torch.sort(t, dim=dim, descending=descending, stable=True)
    _same(v, tv)
    _same(i, ti)
    # The default overload is stable as well, and argsort is its indices.
    _same(ignis.sort(x, dim, descending)[1], ti)
    _same(ignis.argsort(x, dim=dim, descending=descending, stable=True), ti)
    _same(x.argsort(dim, descending), ti)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_nan_and_infinities_as_torch(descending):
    x, t = _pair(SPECIAL)
    for dim in (0, 1):
        v, i = x.sort(dim, descending)
        tv, ti = t.sort(dim=dim, descending=descending, stable=True)
        _same(v, tv)
        _same(i, ti)


def test_sort_layouts_and_shapes():
    a = RNG.standard_normal((4, 6, 5)).astype(np.float32)
    x, t = _pair(a)
    for xs, ts in [(x.transpose(0, 2), t.transpose(0, 2)), (x[:, ::2], t[:, ::2]),
                   (x[1], t[1]), (x[:, :0], t[:, :0]), (x[0, 0, 0], t[0, 0, 0])]:
        for dim in range(-max(xs.dim(), 1), max(xs.dim(), 1)):
            v, i = xs.sort(dim)
            tv, ti = ts.sort(dim)
            _same(v, tv)
            _same(i, ti)
    r = ignis.sort(x, 1)
    assert type(r).__name__ == "sort" and r.values is r[0] and r.indices is r[1]


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_topk_matches_torch(largest, dim):
    a = RNG.permutation(60).reshape(6, 10).astype(np.float32)  # no ties: torch's order is fixed
    x, t = _pair(a)
    for k in (0, 1, 3, x.shape[dim]):
        v, i = x.topk(k, dim=dim, largest=largest)
        tv, ti = t.topk(k, dim=dim, largest=largest)
        _same(v, tv)
        _same(i, ti)
    r = ignis.topk(x, 2)
    assert type(r).__name__ == "topk" and r.values is r[0]


def test_topk_with_nan_and_ties_picks_what_a_stable_sort_picks():
    x, t = _pair(SPECIAL)
    for largest in (True, False):
        v, i = x.topk(4, largest=largest)
        tv, _ = t.topk(4, largest=largest)
        _same(v, tv)
        sv, si = x.sort(-1, descending=largest)
        assert i.tolist() == si[:, :4].tolist()


def test_sort_and_topk_gradients_match_torch():
    a = RNG.standard_normal((4, 7))
    for fn in (lambda m, x: m.sort(x, 1, True)[0], lambda m, x: m.sort(x, 0)[0],
               lambda m, x: m.topk(x, 3, 1)[0], lambda m, x: m.topk(x, 2, 0, False)[0],
               lambda m, x: m.sort(x, stable=True, dim=1)[0]):
        x = ignis.tensor(a, requires_grad=True)
        t = torch.tensor(a, requires_grad=True)
        y, ty = fn(ignis, x), fn(torch, t)
        g = RNG.standard_normal(tuple(ty.shape))
        y.backward(ignis.tensor(g))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())


def test_topk_of_a_0_dim_tensor_and_of_bools_as_torch():
    # A 0-dim tensor gives itself back for k = 0 and 1; bool has no topk.
    for k in (0, 1):
        v, i = ignis.tensor(2.5).topk(k)
        tv, ti = torch.tensor(2.5).topk(k)
        assert v.shape == tuple(tv.shape) and v.item() == tv.item() and i.item() == ti.item()
    with pytest.raises(RuntimeError) as te:
        torch.tensor([True, False]).topk(1)
    with pytest.raises(type(te.value), match="topk does not support bool"):
        ignis.tensor([True, False]).topk(1)


def test_ordering_errors_have_torch_types():
    x, t = _pair(RNG.standard_normal((3, 4)).astype(np.float32))
    for f in (lambda m, v: m.topk(v, 5), lambda m, v: m.topk(v, -1), lambda m, v: m.sort(v, 2),
              lambda m, v: m.topk(v, 1, dim=3), lambda m, v: m.argsort(v, -3)):
        with pytest.raises(Exception) as te:
            f(torch, t)
        with pytest.raises(type(te.value)):
            f(ignis, x)


def test_randperm():
    ignis.manual_seed(0)
    p = ignis.randperm(50)
    assert p.dtype == ignis.int64 and sorted(p.tolist()) == list(range(50))
    assert ignis.randperm(0).shape == (0,)
    assert ignis.randperm(6, dtype=ignis.float32).dtype == ignis.float32
    ignis.manual_seed(3)
    a = ignis.randperm(20).tolist()
    ignis.manual_seed(3)
    assert ignis.randperm(20).tolist() == a  # the seed decides it
    assert ignis.randperm(20).tolist() != a  # and the generator advances
    # Every position takes every value about equally often.
    counts = np.zeros((4, 4))
    for _ in range(2000):
        for pos, v in enumerate(ignis.randperm(4).tolist()):
            counts[pos, v] += 1
    assert np.all(np.abs(counts - 500) < 100)
    with pytest.raises(RuntimeError):
        ignis.randperm(-1)


def test_multinomial_with_replacement_follows_the_weights():
    ignis.manual_seed(1)
    w = ignis.tensor([0.1, 0.0, 0.6, 0.3])
    s = ignis.multinomial(w, 20000, replacement=True)
    assert s.dtype == ignis.int64 and s.shape == (20000,)
    freq = np.bincount(s.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    rows = ignis.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
    assert rows.multinomial(3, True).tolist() == [[0, 0, 0], [2, 2, 2]]


def test_multinomial_without_replacement():
    ignis.manual_seed(2)
    w = ignis.tensor([[1.0, 2.0, 3.0, 4.0, 0.0]] * 3, dtype=ignis.float64)
    s = ignis.multinomial(w, 4)
    assert s.shape == (3, 4)
    for row in s.tolist():
        assert sorted(row) == [0, 1, 2, 3]  # never the zero weight, never twice
    # With too few positive weights, zero-weight categories follow, as in torch.
    assert sorted(ignis.multinomial(ignis.tensor([1.0, 0.0, 0.0]), 2).tolist()) in ([0, 1],
                                                                                    [0, 2])
    # The first draw follows the weights; the second follows what is left.
    first = np.zeros(4)
    for _ in range(3000):
        first[ignis.multinomial(w[0], 1).item()] += 1
    np.testing.assert_allclose(first / 3000, [0.1, 0.2, 0.3, 0.4], atol=0.03)


def test_multinomial_errors_have_torch_types():
    cases = [([0.0, 0.0], 1, False), ([1.0, 1.0], 3, False), ([-1.0, 1.0], 1, False),
             ([1.0, float("nan")], 1, True), ([1.0, 2.0], 0, True), ([[[1.0]]], 1, True),
]
    for w, n, r in cases:
        with pytest.raises(Exception) as te:
            torch.multinomial(torch.tensor(w), n, r)
        with pytest.raises(type(te.value)):
            ignis.multinomial(ignis.tensor(w), n, r)
    with pytest.raises(RuntimeError):
        ignis.multinomial(ignis.tensor([1, 2]), 1)


def test_broadcast_to_and_broadcast_tensors_are_views():
    a = RNG.standard_normal((3, 1)).astype(np.float32)
    x, t = _pair(a)
    y = ignis.broadcast_to(x, (2, 3, 4))
    _same(y, torch.broadcast_to(t, (2, 3, 4)))
    x[0, 0] = 7.0
    assert y[1, 0, 3].item() == 7.0  # shares x's storage
    _same(x.broadcast_to((3, 5)), torch.tensor(x.numpy()).broadcast_to((3, 5)))
    b, c = ignis.tensor([1.0, 2.0]), ignis.tensor([[1.0], [2.0], [3.0]])
    bb, cc = ignis.broadcast_tensors(b, c)
    tb, tc = torch.broadcast_tensors(torch.tensor([1.0, 2.0]), torch.tensor([[1.0], [2.0], [3.0]]))
    _same(bb, tb)
    _same(cc, tc)
    # Gradients flow back summed over the broadcast dims.
    p = ignis.tensor([1.0, 2.0], requires_grad=True)
    q, _ = ignis.broadcast_tensors(p, c)
    q.sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError):
        ignis.broadcast_tensors(ignis.ones(3), ignis.ones(4))
    with pytest.raises(RuntimeError):
        ignis.broadcast_to(ignis.ones(3), (4,))


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_shifts_match_torch(dtype):
    a = RNG.integers(-100, 100, (4, 5)) if dtype != "uint8" else RNG.integers(0, 255, (4, 5))
    n = RNG.integers(-3, 70, (5,))
    if dtype == "uint8":
        n = np.abs(n)
    x = ignis.tensor(a).to(getattr(ignis, dtype))
    t = torch.tensor(a).to(getattr(torch, dtype))
    nx, nt = ignis.tensor(n).to(x.dtype), torch.tensor(n).to(t.dtype)
    _same(x << nx, t << nt)
    _same(x >> nx, t >> nt)
    _same(x << 2, t << 2)
    _same(x >> 1, t >> 1)
    _same(ignis.bitwise_left_shift(x, nx), torch.bitwise_left_shift(t, nt))
    _same(ignis.bitwise_right_shift(x, nx), torch.bitwise_right_shift(t, nt))
    y = x.clone()
    y <<= 1
    _same(y, t << 1)
    y >>= 2
    _same(y, (t << 1) >> 2)


def test_shift_reflected_and_errors():
    _same(3 << ignis.tensor([1, 2]), 3 << torch.tensor([1, 2]))
    _same(64 >> ignis.tensor([1, 2]), 64 >> torch.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        ignis.tensor([1.5]) << 1
    with pytest.raises(TypeError):
        ignis.tensor([1]) << "a"


def test_number_to_tensor_power():
    e = RNG.standard_normal((3, 4)).astype(np.float32)
    x, t = _pair(e)
    _same(2 ** x, 2 ** t, 1e-6)
    _same(ignis.pow(2.5, x), torch.pow(2.5, t), 1e-6)
    _same(2 ** ignis.tensor([1, 2, 3]), 2 ** torch.tensor([1, 2, 3]))
    _same(2.5 ** ignis.tensor([1, 2]), 2.5 ** torch.tensor([1, 2]), 1e-6)
    p = ignis.tensor(e, requires_grad=True)
    tp = torch.tensor(e, requires_grad=True)
    ignis.pow(3.0, p).sum().backward()
    torch.pow(3.0, tp).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-5)


def test_ops_compile_without_graph_breaks():
    def f(x, w):
        v, i = x.sort(1, descending=True)
        tv, ti = x.topk(2, 1)
        b, _ = ignis.broadcast_tensors(w, x)
        return v * 2 + ignis.broadcast_to(w, x.shape), i, tv.sum(), ti, b + 2 ** x
    x = ignis.tensor(RNG.standard_normal((3, 5)).astype(np.float32))
    w = ignis.tensor(RNG.standard_normal((5,)).astype(np.float32))
    ignis.compiler.reset()
    for backend in ("aot_eager", "inductor"):
        got = ignis.compile(f, backend=backend, fullgraph=True)(x, w)
        for g, e in zip(got, f(x, w)):
            np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    ignis.compiler.reset()


# --- unique / unique_consecutive -------------------------------------------------------------
UNIQUE_DATA = [SPECIAL, SPECIAL[0], np.array([[2, 1], [1, 5], [2, 1]], dtype=np.int64),
               np.array([True, False, True]), np.zeros((0,), dtype=np.float32),
               np.array(5, dtype=np.int32), RNG.integers(0, 4, (6, 3)).astype(np.uint8)]


@pytest.mark.parametrize("data", UNIQUE_DATA, ids=lambda a: f"{a.dtype}{list(a.shape)}")
@pytest.mark.parametrize("return_inverse", [False, True])
@pytest.mark.parametrize("return_counts", [False, True])
def test_unique_matches_torch(data, return_inverse, return_counts):
    # NaNs are each their own value, sorted last (torch's CPU kernel). Slices
    # holding NaN are left out of the dim= cases: torch's lexicographic order
    # is no order with NaN, and may leave equal slices apart (SPECIAL's two
    # (1, 2) columns come out twice).
    a, t = _pair(data)
    dims_of = range(data.ndim) if not np.isnan(data.astype(np.float64)).any() else []
    for dims in [{}] + [{"dim": d} for d in dims_of]:
        got = ignis.unique(a, return_inverse=return_inverse, return_counts=return_counts, **dims)
        want = torch.unique(t, return_inverse=return_inverse, return_counts=return_counts, **dims)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        nan = np.isnan(data.astype(np.float64))
        for i, (g, w) in enumerate(zip(got, want)):
            if i == 1 and return_inverse and nan.any():
                # Which NaN of the values each NaN element maps to is torch's
                # sort's accident; ignis keeps their order: each its own.
                gi = g.numpy()
                np.testing.assert_array_equal(gi[~nan], w.numpy()[~nan])
                assert len(set(gi[nan].tolist())) == nan.sum()
                assert np.isnan(got[0].numpy()[gi[nan]]).all()
                continue
            _same(g, w)
        m = a.unique(sorted=False, return_inverse=return_inverse, return_counts=return_counts, **dims)
        for g, w in zip(m if isinstance(m, tuple) else (m,), got):
            assert (g.numpy() == w.numpy()).sum() + np.isnan(g.numpy().astype(np.float64)).sum() \
                == g.numel()


@pytest.mark.parametrize("data", [np.array([1, 1, 2, 2, 3, 1, 1, 2]), SPECIAL,
                                  np.array([[1, 2], [1, 2], [0, 1], [0, 1]]),
                                  np.zeros((0,), dtype=np.int64)], ids=["runs", "special", "rows", "empty"])
def test_unique_consecutive_matches_torch(data):
    a, t = _pair(data)
    dims_of = range(data.ndim) if not np.isnan(data.astype(np.float64)).any() else []
    for dims in [{}] + [{"dim": d} for d in dims_of]:
        got = ignis.unique_consecutive(a, return_inverse=True, return_counts=True, **dims)
        want = torch.unique_consecutive(t, return_inverse=True, return_counts=True, **dims)
        for g, w in zip(got, want):
            _same(g, w)
        _same(a.unique_consecutive(**dims), torch.unique_consecutive(t, **dims))


def test_unique_values_carry_gradient_to_first_occurrences():
    # torch's _unique2 has no derivative (backward raises); ignis's composite
    # gives one: each distinct value's gradient reaches its first occurrence.
    x = ignis.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    v = ignis.unique(x)
    (v * ignis.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [100.0, 1.0, 0.0, 10.0])
