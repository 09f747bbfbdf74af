"""ignis.Generator (the C++ Philox generator) and `generator=` on the random
ops. ignis's streams are not torch's (Philox counters, not mt19937), so these
are ignis-only invariants: a generator seeded with s gives the global
generator's stream after manual_seed(s); generators are independent of each
other and of the global one; states round-trip; pickling and deepcopy copy
the state; every random op, sampler and nn.init function takes generator=;
and compiled code gives eager's numbers. API shapes are checked against
torch where installed."""
import copy
import pickle
import threading

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.nn.functional as F

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None


def arr(t):
    return t.detach().numpy().copy()


# Each draw: (name, fn(generator) -> tensor); generator=None draws from the global one.
DRAWS = [
    ("rand", lambda g: ignis.rand(3, 4, generator=g)),
    ("randn", lambda g: ignis.randn(5, generator=g)),
    ("randn_f64", lambda g: ignis.randn(5, dtype=ignis.float64, generator=g)),
    ("randint", lambda g: ignis.randint(10, (6,), generator=g)),
    ("randint_low", lambda g: ignis.randint(-5, 5, (2, 3), generator=g)),
    ("randperm", lambda g: ignis.randperm(9, generator=g)),
    ("multinomial", lambda g: ignis.multinomial(ignis.ones(2, 6), 3, generator=g)),
    ("multinomial_repl", lambda g: ignis.multinomial(ignis.ones(6), 8, True, generator=g)),
    ("uniform_", lambda g: ignis.empty(4).uniform_(-2, 3, generator=g)),
    ("normal_", lambda g: ignis.empty(4).normal_(1, 2, generator=g)),
    ("random_", lambda g: ignis.empty(4, dtype=ignis.int64).random_(0, 100, generator=g)),
    ("bernoulli_", lambda g: ignis.empty(8).bernoulli_(0.3, generator=g)),
    ("random_to", lambda g: ignis.empty(5).random_(7, generator=g)),
    ("random_all", lambda g: ignis.empty(5).random_(generator=g)),
    ("bernoulli_tensor", lambda g: ignis.empty(2, 4).bernoulli_(ignis.tensor([0.2, 0.5, 0.7, 0.9]), generator=g)),
    ("rand_like", lambda g: ignis.rand_like(ignis.zeros(2, 2), generator=g)),
    ("randn_like", lambda g: ignis.randn_like(ignis.zeros(3), generator=g)),
    ("randint_like", lambda g: ignis.randint_like(ignis.zeros(3), 7, generator=g)),
    ("normal_tensors", lambda g: ignis.normal(ignis.zeros(3), ignis.ones(3), generator=g)),
    ("normal_floats", lambda g: ignis.normal(0.0, 1.0, (4,), generator=g)),
    ("bernoulli", lambda g: ignis.bernoulli(ignis.full((6,), 0.5), generator=g)),
    ("bernoulli_method", lambda g: ignis.full((6,), 0.5).bernoulli(generator=g)),
    ("exponential_", lambda g: ignis.empty(4).exponential_(2.0, generator=g)),
    ("geometric_", lambda g: ignis.empty(4).geometric_(0.3, generator=g)),
    ("cauchy_", lambda g: ignis.empty(4).cauchy_(generator=g)),
    ("log_normal_", lambda g: ignis.empty(4).log_normal_(generator=g)),
    ("poisson", lambda g: ignis.poisson(ignis.full((5,), 4.0), generator=g)),
]
IDS = [d[0] for d in DRAWS]


@pytest.mark.parametrize("name,draw", DRAWS, ids=IDS)
def test_same_seed_same_stream_as_the_global_generator(name, draw):
    g = ignis.Generator().manual_seed(1234)
    a, b = arr(draw(g)), arr(draw(g))
    ignis.manual_seed(1234)
    np.testing.assert_array_equal(arr(draw(None)), a)
    np.testing.assert_array_equal(arr(draw(None)), b)
    g2 = ignis.Generator().manual_seed(1234)
    np.testing.assert_array_equal(arr(draw(g2)), a)


@pytest.mark.parametrize("name,draw", DRAWS, ids=IDS)
def test_generators_are_independent(name, draw):
    ignis.manual_seed(0)
    global_state = ignis.get_rng_state()
    g1 = ignis.Generator().manual_seed(7)
    g2 = ignis.Generator().manual_seed(7)
    s2 = g2.get_state()
    a = arr(draw(g1))
    # g1's draws moved neither g2 nor the global generator
    np.testing.assert_array_equal(arr(g2.get_state()), arr(s2))
    np.testing.assert_array_equal(arr(ignis.get_rng_state()), arr(global_state))
    # and the global generator's draws do not move g2
    draw(None)
    np.testing.assert_array_equal(arr(draw(g2)), a)


@pytest.mark.parametrize("name,draw", DRAWS, ids=IDS)
def test_state_round_trip(name, draw):
    g = ignis.Generator().manual_seed(99)
    draw(g)
    state = g.get_state()
    a = arr(draw(g))
    assert g.set_state(state) is g
    np.testing.assert_array_equal(arr(draw(g)), a)
    other = ignis.Generator().set_state(state)
    np.testing.assert_array_equal(arr(draw(other)), a)


def test_different_seeds_differ():
    a = ignis.rand(100, generator=ignis.Generator().manual_seed(1))
    b = ignis.rand(100, generator=ignis.Generator().manual_seed(2))
    assert not np.array_equal(arr(a), arr(b))
    g = ignis.Generator().manual_seed(1)
    assert not np.array_equal(arr(ignis.rand(100, generator=g)), arr(ignis.rand(100, generator=g)))


def test_generator_methods():
    g = ignis.Generator()
    assert g.initial_seed() == 67280421310721  # torch.Generator's default seed
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert g.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    with pytest.raises(RuntimeError):
        g.manual_seed(2 ** 64)
    with pytest.raises(TypeError):
        g.manual_seed("3")
    s = g.seed()
    assert isinstance(s, int) and g.initial_seed() == s and 0 <= s < 2 ** 63
    assert str(g.device) == "cpu" and str(ignis.Generator("cpu").device) == "cpu"
    st = g.get_state()
    assert st.dtype == ignis.uint8 and tuple(st.shape) == (16,)
    with pytest.raises(TypeError):
        g.set_state(st.to(ignis.int64))
    with pytest.raises(RuntimeError):
        g.set_state(st[:8])
    with pytest.raises(TypeError):
        g.set_state([1, 2])
    assert "Generator" in repr(g)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_api_matches_torch_generator():
    for name in ("manual_seed", "seed", "initial_seed", "get_state", "set_state", "device"):
        assert hasattr(torch.Generator(), name) and hasattr(ignis.Generator(), name)
    assert isinstance(ignis.manual_seed(0), ignis.Generator)
    assert isinstance(torch.manual_seed(0), torch.Generator)
    assert isinstance(ignis.default_generator, ignis.Generator)
    assert torch.get_rng_state().dtype == torch.uint8
    assert ignis.get_rng_state().dtype == ignis.uint8


def test_default_generator_is_the_global_generator():
    assert ignis.manual_seed(11) is ignis.default_generator
    assert ignis.initial_seed() == ignis.default_generator.initial_seed() == 11
    a = arr(ignis.rand(5))
    ignis.default_generator.manual_seed(11)
    np.testing.assert_array_equal(arr(ignis.rand(5)), a)
    ignis.default_generator.manual_seed(11)
    np.testing.assert_array_equal(arr(ignis.rand(5, generator=ignis.default_generator)), a)
    np.testing.assert_array_equal(arr(ignis.get_rng_state()),
                                  arr(ignis.default_generator.get_state()))
    # set_rng_state takes the tensor, and the older (seed, offset) pair
    s = ignis.get_rng_state()
    b = arr(ignis.randn(3))
    ignis.set_rng_state(s)
    np.testing.assert_array_equal(arr(ignis.randn(3)), b)
    ignis.set_rng_state((11, 0))
    np.testing.assert_array_equal(arr(ignis.rand(5)), a)


def test_generator_none_is_the_global_generator():
    ignis.manual_seed(3)
    a = arr(ignis.rand(4, generator=None))
    ignis.manual_seed(3)
    np.testing.assert_array_equal(arr(ignis.rand(4)), a)


def test_bad_generator_arguments():
    with pytest.raises(TypeError, match="generator"):
        ignis.rand(3, generator=5)
    with pytest.raises(TypeError):
        ignis.zeros(3, generator=ignis.Generator())  # not a random op
    with pytest.raises(TypeError):  # dropout does not take one (as in torch)
        F.dropout(ignis.ones(3), 0.5, generator=ignis.Generator())


def test_requires_grad_with_generator():
    g = ignis.Generator().manual_seed(0)
    t = ignis.rand(3, generator=g, requires_grad=True)
    assert t.requires_grad
    np.testing.assert_array_equal(arr(t), arr(ignis.rand(3, generator=g.manual_seed(0))))


def test_pickle_and_deepcopy_copy_the_state():
    g = ignis.Generator().manual_seed(21)
    ignis.rand(10, generator=g)
    for h in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert h is not g and h.initial_seed() == 21
        np.testing.assert_array_equal(arr(ignis.rand(4, generator=h)),
                                      arr(ignis.rand(4, generator=copy.deepcopy(g))))
    h = copy.deepcopy(g)
    ignis.rand(3, generator=h)
    assert not np.array_equal(arr(h.get_state()), arr(g.get_state()))


def test_generator_is_per_call_and_per_thread():
    """generator= covers only its own call, on its own thread."""
    g = ignis.Generator().manual_seed(5)
    out = {}

    def worker():
        ignis.manual_seed(0)  # the global generator is process-wide
        out["t"] = arr(ignis.rand(1000, generator=g))

    th = threading.Thread(target=worker)
    th.start()
    th.join()
    np.testing.assert_array_equal(out["t"], arr(ignis.rand(1000, generator=g.manual_seed(5))))
    ignis.manual_seed(0)
    a = arr(ignis.rand(4))
    ignis.manual_seed(0)
    ignis.rand(4, generator=g)
    np.testing.assert_array_equal(arr(ignis.rand(4)), a)


def test_sampler_statistics():
    g = ignis.Generator().manual_seed(0)
    n = 200_000
    e = ignis.empty(n, dtype=ignis.float64).exponential_(2.0, generator=g)
    assert abs(float(e.mean()) - 0.5) < 0.01 and float(e.min()) >= 0
    geo = ignis.empty(n, dtype=ignis.float64).geometric_(0.25, generator=g)
    assert abs(float(geo.mean()) - 4.0) < 0.05 and float(geo.min()) >= 1
    ln = ignis.empty(n, dtype=ignis.float64).log_normal_(0.0, 0.5, generator=g)
    assert abs(float(ln.log().mean())) < 0.01 and abs(float(ln.log().std()) - 0.5) < 0.01
    c = ignis.empty(n, dtype=ignis.float64).cauchy_(1.0, 2.0, generator=g)
    assert abs(float(np.median(arr(c))) - 1.0) < 0.05
    nt = ignis.normal(ignis.full((n,), 3.0), ignis.full((n,), 2.0), generator=g)
    assert abs(float(nt.mean()) - 3) < 0.02 and abs(float(nt.std()) - 2) < 0.02
    p = ignis.rand(n, generator=g)
    b = ignis.bernoulli(p, generator=g)
    assert abs(float(b.mean()) - 0.5) < 0.01
    assert set(np.unique(arr(b)).tolist()) <= {0.0, 1.0}
    po = ignis.poisson(ignis.full((n,), 3.0), generator=g)
    assert abs(float(po.mean()) - 3.0) < 0.02


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_random_function_signatures_like_torch():
    for lib in (ignis, torch):
        g = lib.Generator().manual_seed(0)
        a = lib.normal(lib.zeros(2, 3), 1.0, generator=g)
        b = lib.normal(0.0, lib.ones(3), generator=g)
        c = lib.normal(1.0, 2.0, (2, 2), generator=g)
        d = lib.bernoulli(lib.full((4,), 0.5), generator=g)
        e = lib.bernoulli(lib.zeros(4), 1.0, generator=g)
        f = lib.zeros(3).bernoulli(0.0, generator=g)
        h = lib.poisson(lib.ones(3), generator=g)
        shapes = [tuple(x.shape) for x in (a, b, c, d, e, f, h)]
        assert shapes == [(2, 3), (3,), (2, 2), (4,), (4,), (3,), (3,)]
        assert [str(x.dtype).split(".")[-1] for x in (a, d, h)] == ["float32"] * 3
        assert e.tolist() == [1.0] * 4 and f.tolist() == [0.0] * 3
        with pytest.raises(RuntimeError):
            lib.empty(3).exponential_(-1.0)
        with pytest.raises(RuntimeError):
            lib.bernoulli(lib.full((2,), 2.0))


INITS = [
    ("uniform_", lambda t, g: nn.init.uniform_(t, -1, 1, generator=g)),
    ("normal_", lambda t, g: nn.init.normal_(t, 0, 2, generator=g)),
    ("trunc_normal_", lambda t, g: nn.init.trunc_normal_(t, generator=g)),
    ("xavier_uniform_", lambda t, g: nn.init.xavier_uniform_(t, generator=g)),
    ("xavier_normal_", lambda t, g: nn.init.xavier_normal_(t, generator=g)),
    ("kaiming_uniform_", lambda t, g: nn.init.kaiming_uniform_(t, generator=g)),
    ("kaiming_normal_", lambda t, g: nn.init.kaiming_normal_(t, generator=g)),
    ("orthogonal_", lambda t, g: nn.init.orthogonal_(t, generator=g)),
    ("sparse_", lambda t, g: nn.init.sparse_(t, 0.5, generator=g)),
]


@pytest.mark.parametrize("name,fn", INITS, ids=[i[0] for i in INITS])
def test_nn_init_takes_generator(name, fn):
    ignis.manual_seed(0)
    before = arr(ignis.get_rng_state())
    a = fn(ignis.empty(6, 5), ignis.Generator().manual_seed(3))
    b = fn(ignis.empty(6, 5), ignis.Generator().manual_seed(3))
    np.testing.assert_array_equal(arr(a), arr(b))
    np.testing.assert_array_equal(arr(ignis.get_rng_state()), before)  # global untouched
    c = fn(ignis.empty(6, 5), ignis.Generator().manual_seed(4))
    assert not np.array_equal(arr(a), arr(c))


def test_data_utilities_follow_the_generator():
    from ignis.utils.data import DataLoader, RandomSampler, random_split
    g = ignis.Generator().manual_seed(8)
    s = g.get_state()
    order = list(RandomSampler(range(20), generator=g))
    g.set_state(s)
    assert list(RandomSampler(range(20), generator=g)) == order
    parts = [list(p) for p in random_split(range(10), [4, 6],
                                           generator=ignis.Generator().manual_seed(1))]
    again = [list(p) for p in random_split(range(10), [4, 6],
                                           generator=ignis.Generator().manual_seed(1))]
    assert parts == again
    dl = DataLoader(ignis.arange(10), batch_size=5, shuffle=True,
                    generator=ignis.Generator().manual_seed(2))
    dl2 = DataLoader(ignis.arange(10), batch_size=5, shuffle=True,
                     generator=ignis.Generator().manual_seed(2))
    assert [b.tolist() for b in dl] == [b.tolist() for b in dl2]


def test_compiled_random_ops_match_eager():
    """Compiled: random ops without generator= draw the global stream as
    eager does (in the graph); with generator= the call graph-breaks and
    runs eagerly on that generator, so the values are eager's either way."""
    g = ignis.Generator()

    def with_gen(x):
        return x * 2 + ignis.rand(4, generator=g)

    def with_global(x):
        return x * 2 + ignis.rand(4)

    x = ignis.ones(4)
    ex = ignis.compiler.explain(with_gen, x)
    assert ex.graph_break_count == 1
    assert "generator=" in ex.break_reasons[0].reason
    assert ignis.compiler.explain(with_global, x).graph_break_count == 0

    g.manual_seed(5)
    want = [arr(with_gen(x)) for _ in range(2)]
    compiled = ignis.compile(with_gen)
    g.manual_seed(5)
    got = [arr(compiled(x)) for _ in range(2)]
    np.testing.assert_array_equal(got, want)

    ignis.manual_seed(5)
    want = [arr(with_global(x)) for _ in range(2)]
    compiled = ignis.compile(with_global)
    ignis.manual_seed(5)
    got = [arr(compiled(x)) for _ in range(2)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def philox_words(seed, counters):
    """Philox-4x32-10 in NumPy (Salmon et al., SC'11): the four 32-bit words
    of each counter's block under the 64-bit key `seed`, as uint32 [n, 4]."""
    ctr = np.asarray(counters, dtype=np.uint64)
    c = [ctr & 0xFFFFFFFF, ctr >> np.uint64(32), np.zeros_like(ctr), np.zeros_like(ctr)]
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    mask = np.uint64(0xFFFFFFFF)
    for _ in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & mask, (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & mask]
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & mask, (k1 + np.uint64(0xBB67AE85)) & mask
    return np.stack(c, 1).astype(np.uint32)


@pytest.mark.parametrize("threads", [1, 2])
def test_float_uniforms_are_the_philox_words(threads):
    """rand and dropout's mask are Philox-4x32-10's words, element i word i % 4
    of block i // 4 (kernels/cpu/random.h computes 16 blocks per SIMD batch):
    checked against a NumPy Philox for lengths that end inside a batch and a
    block, a second draw starting where the first ended, a non-contiguous
    fill (the element-wise path), and dropout's mask."""
    prev = ignis.get_num_threads()
    ignis.set_num_threads(threads)
    try:
        seed = 0x1234_5678_9ABC
        for n in (1, 63, 1000, 70001):
            ignis.manual_seed(seed)
            first, second = arr(ignis.rand(n)), arr(ignis.rand(n))
            words = philox_words(seed, np.arange(2 * ((n + 3) // 4)))
            expect = (words >> 8).astype(np.float32) * np.float32(2.0 ** -24)
            np.testing.assert_array_equal(first, expect[: (n + 3) // 4].reshape(-1)[:n])
            np.testing.assert_array_equal(second, expect[(n + 3) // 4:].reshape(-1)[:n])
        ignis.manual_seed(seed)
        strided = ignis.empty(3, 1000).t().uniform_()  # column-major: element-wise path
        np.testing.assert_array_equal(arr(strided).reshape(-1), first[:3000])
        ignis.manual_seed(seed)
        _, mask = ignis.native_dropout(ignis.ones(70001), 0.3, True)
        np.testing.assert_array_equal(arr(mask), first < np.float32(0.7))
    finally:
        ignis.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2])
def test_normals_are_box_muller_on_the_philox_words(threads):
    """randn / normal_ are Box-Muller on one Philox block per element:
    sqrt(-2 log u1) cos(2 pi u2) with u1 = 1 - (words 0, 1 as 53 bits), u2
    words 2, 3 (Note [Normal floats in batches], kernels/cpu/fill.cpp).
    Against that formula in NumPy's float64: float32 within an ulp and
    equal on all but a few elements in 10^5, float64 to rounding, across
    batch ends, a second draw, a strided fill and bfloat16. randint,
    bernoulli_ and float64 uniforms, the other draws of a block per element
    (16 blocks per SIMD batch too), are the words exactly."""
    prev = ignis.get_num_threads()
    ignis.set_num_threads(threads)
    try:
        seed = 0x0BAD_5EED_1234

        def reference(first, n):
            w = philox_words(seed, np.arange(first, first + n)).astype(np.uint64)
            to53 = lambda a, b: ((a << np.uint64(32) | b) >> np.uint64(11)).astype(np.float64) \
                * 2.0 ** -53
            u1, u2 = 1.0 - to53(w[:, 0], w[:, 1]), to53(w[:, 2], w[:, 3])
            return np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)

        def close_floats(got, want):
            ulps = np.abs(got.view(np.int32).astype(np.int64) -
                          want.astype(np.float32).view(np.int32).astype(np.int64))
            assert ulps.max() <= 1 and (ulps != 0).mean() < 1e-4, (ulps.max(), (ulps != 0).mean())

        for n in (1, 15, 17, 1000, 200003):
            ignis.manual_seed(seed)
            first, second = arr(ignis.randn(n)), arr(ignis.randn(n))
            close_floats(first, reference(0, n))
            close_floats(second, reference(n, n))
        ignis.manual_seed(seed)
        np.testing.assert_allclose(arr(ignis.randn(1000, dtype=ignis.float64)),
                                   reference(0, 1000), rtol=1e-13, atol=1e-13)
        ignis.manual_seed(seed)
        strided = ignis.empty(3, 1000).t().normal_(2.0, 0.5)  # filled in row-major order
        np.testing.assert_allclose(arr(strided).reshape(-1), 2.0 + 0.5 * reference(0, 3000),
                                   rtol=1e-6, atol=1e-6)
        ignis.manual_seed(seed)
        half = ignis.randn(5000, dtype=ignis.bfloat16).float().numpy()
        np.testing.assert_allclose(half, reference(0, 5000), rtol=2 ** -8, atol=1e-6)
        # The other draws of a block per element: randint, bernoulli_, float64 uniforms.
        n = 1037
        w = philox_words(seed, np.arange(n)).astype(np.uint64)
        bits = w[:, 0] << np.uint64(32) | w[:, 1]
        ignis.manual_seed(seed)
        np.testing.assert_array_equal(arr(ignis.randint(-7, 50304, (n,))),
                                      (bits % np.uint64(50311)).astype(np.int64) - 7)
        ignis.manual_seed(seed)
        u = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
        np.testing.assert_array_equal(arr(ignis.empty(n).bernoulli_(0.3)), (u < 0.3).astype(np.float32))
        ignis.manual_seed(seed)
        np.testing.assert_array_equal(arr(ignis.rand(n, dtype=ignis.float64)), u)
    finally:
        ignis.set_num_threads(prev)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_uniform_floats_draw_dropouts_numbers(dtype):
    """rand (float precision) takes four elements from one Philox block, as the
    dropout kernel does (Note [Uniform floats are dropout's numbers]): after
    one seed, rand(n) < 1 - p is dropout's mask, and both move the generator
    by the same count. dropout on float64 still draws float-precision numbers."""
    x = ignis.randn(7, 9, dtype=getattr(ignis, dtype))
    for p in (0.1, 0.5, 0.8):
        ignis.manual_seed(11)
        out, mask = ignis.native_dropout(x, p, True)
        after_dropout = arr(ignis.rand(5))
        ignis.manual_seed(11)
        u = ignis.rand(7, 9)
        after_rand = arr(ignis.rand(5))
        np.testing.assert_array_equal(arr(mask), arr(u < 1 - p))
        np.testing.assert_array_equal(after_dropout, after_rand)
        np.testing.assert_array_equal(arr(out), arr(ignis.where(u < 1 - p, x * (1 / (1 - p)), 0.0)))


@pytest.mark.parametrize("backend", ["inductor", "aot_eager_decomp_partition", "aot_eager"])
def test_compiled_dropout_gives_eagers_mask(backend):
    """A compiled dropout (decomposed into rand < 1 - p) gives eager's mask and
    values for the same manual_seed, forward and backward, and leaves the
    generator where eager's leaves it."""
    def f(x, w):
        h = F.dropout(ignis.tanh(x @ w), 0.3, training=True)
        return F.dropout(h * 2 + 1, 0.5, training=True).sum(1)

    x = ignis.randn(6, 10)
    w = ignis.randn(10, 13, requires_grad=True)
    runs = []
    for fn in (f, ignis.compile(f, backend=backend)):
        w.grad = None
        ignis.manual_seed(3)
        out = fn(x, w)
        out.sum().backward()
        runs.append((arr(out), arr(w.grad), arr(ignis.rand(3))))
    (want, want_grad, want_next), (got, got_grad, got_next) = runs
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got_next, want_next)


def test_ignis_random_module():
    import ignis.random as R
    assert R.manual_seed(4) is ignis.default_generator is R.default_generator
    assert R.initial_seed() == 4
    a = arr(ignis.rand(3))
    R.manual_seed(4)
    with R.fork_rng():
        ignis.rand(10)
    np.testing.assert_array_equal(arr(ignis.rand(3)), a)
    s = R.get_rng_state()
    b = arr(ignis.rand(2))
    R.set_rng_state(s)
    np.testing.assert_array_equal(arr(ignis.rand(2)), b)
    assert isinstance(R.seed(), int)


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_random_and_bernoulli_overloads_like_torch():
    """random_(to), random_() and bernoulli_(Tensor p): torch's ranges and shapes."""
    n = 20000
    for dt, hi in (("float32", 2 ** 24), ("float64", 2 ** 53), ("int8", 127), ("uint8", 255),
                   ("int16", 32767), ("bool", 1)):
        for lib in (ignis, torch):
            x = lib.empty(n, dtype=getattr(lib, dt)).random_()
            v = x.to(lib.float64).numpy() if dt != "bool" else x.numpy().astype(np.float64)
            assert v.min() >= 0 and v.max() <= hi, (lib.__name__, dt)
            if dt in ("int8", "uint8", "bool"):
                assert v.max() >= hi - 2, (lib.__name__, dt)
        i = ignis.empty(n, dtype=getattr(ignis, dt)).random_(2 if dt == "bool" else 5)
        assert set(np.unique(i.numpy().astype(np.int64))) <= set(range(5))
    for lib in (ignis, torch):
        p = lib.tensor([0.0, 1.0, 0.5])
        x = lib.empty(4000, 3).bernoulli_(p)
        m = x.mean(0).tolist()
        assert m[0] == 0.0 and m[1] == 1.0 and abs(m[2] - 0.5) < 0.05
        with pytest.raises(TypeError):
            lib.empty(3).random_(1, 2, 3)
