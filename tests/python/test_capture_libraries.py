"""Capture of the Python that libraries are written in (einops first): sets
and frozensets, cls.__subclasses__(), imports inside functions,
functools.lru_cache helpers, len() through __len__, OrderedDict,
itertools.chain, Module.parameters()/named_parameters()/zero_grad() inside
the compiled function; then einops itself (rearrange, repeat, reduce, its
layers, a ViT) on ignis tensors, against Dynamo on the same code with torch
tensors. Guard tests check that changing what a trace read (a global set, a
class's subclasses, sys.modules, a closure) gives a new trace, never a stale
answer."""
import functools
import itertools
import sys
from collections import OrderedDict

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (check_case, close, counting_backend, deterministic, registry,
                          requires_capture, tensor, x1, x23)

import ignis

pytestmark = requires_capture
CASES, case = registry()

NAMES = {"b", "h", "w"}
RESERVED = frozenset({"_", "..."})


# --- sets and frozensets ----------------------------------------------------------------------
@case(inputs=x1)
def case_set_builtin_and_methods(T):
    def f(x):
        s = set(["a", "b"])
        s.add("c")
        s.update(("d",))
        t = s - {"a"}
        u = set.symmetric_difference(s, {"a", "z"})
        return x * len(t) + len(u) + ("c" in s) + ("a" in t)
    return f


@case(inputs=x1)
def case_global_set_and_frozenset(T):
    def f(x):
        both = NAMES | {"c"}
        if "h" in NAMES and "_" in RESERVED and "b" not in RESERVED:
            return x + len(both)
        return x - 1
    return f


@case(inputs=x1)
def case_set_comprehension_and_sorted(T):
    def f(x):
        s = {n.upper() for n in ("a", "b", "a")}
        return x + len(s) + len(sorted(s)[0])
    return f


# --- classes, imports, caches, lengths ---------------------------------------------------------
class Base:
    def scale(self):
        return 1


class Double(Base):
    def scale(self):
        return 2


@case(inputs=x1)
def case_subclasses_registry(T):
    def f(x):
        total = 0
        for cls in Base.__subclasses__():
            total += cls().scale()
        return x * total
    return f


@case(inputs=x1)
def case_import_inside_function(T):
    def f(x):
        import math
        from collections import OrderedDict as OD
        from os import path
        d = OD(a=1)
        return x * math.pi + len(d) + len(path.sep)
    return f


@functools.lru_cache(16)
def _parse(pattern):
    left, right = pattern.split("->")
    return tuple(left.split()), tuple(right.split())


@case(inputs=x23)
def case_lru_cache_helper(T):
    def f(x):
        left, right = _parse("a b -> b a")
        return x.permute([left.index(n) for n in right])
    return f


class Bag:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


BAG = Bag(3)


@case(inputs=x1)
def case_len_of_user_object(T):
    def f(x):
        local = Bag(2)
        return x * len(BAG) + len(local)
    return f


@case(inputs=x1)
def case_ordered_dict_and_chain(T):
    def f(x):
        d = OrderedDict()
        for k in itertools.chain(["a", "b"], ("c",)):
            d[k] = len(d)
        return x + sum(d.values()) + list(d)[-1].count("c")
    return f


# --- nn.Module traversal inside the compiled function -----------------------------------------
def mlp(T):
    T.manual_seed(0)
    return deterministic(T, T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 2)))


def x34(T):
    return (tensor(T, 3, 4, seed=0),)


@case(inputs=x34)
def case_module_parameters_sum(T):
    m = mlp(T)

    def f(x):
        s = x.sum()
        for p in m.parameters():
            s = s + p.sum()
        return s
    return f


@case(inputs=x34)
def case_module_named_parameters(T):
    m = mlp(T)

    def f(x):
        return sum(p.sum() for n, p in m.named_parameters() if n.endswith("weight")) + x
    return f


@case(inputs=x34)
def case_module_zero_grad_then_forward(T):
    m = mlp(T)

    def f(x):
        m.zero_grad()
        return m(x)
    return f


# Dynamo's counts (torch 2.13, a counting backend, dynamic=False): (graphs, graph breaks).
EXPECTED = {
    "set_builtin_and_methods": (1, 0),
    "global_set_and_frozenset": (1, 0),
    "set_comprehension_and_sorted": (1, 0),
    "subclasses_registry": (1, 0),
    "import_inside_function": (1, 0),
    "lru_cache_helper": (1, 0),
    "len_of_user_object": (1, 0),
    "ordered_dict_and_chain": (1, 0),
    "module_parameters_sum": (1, 0),
    "module_named_parameters": (1, 0),
    "module_zero_grad_then_forward": (1, 0),
}


@pytest.mark.parametrize("c", CASES, ids=repr)
def test_case(c):
    check_case(c, EXPECTED)


# --- guards: what the trace read changes -------------------------------------------------------
def test_global_set_change_retraces():
    g = sys.modules[__name__].__dict__
    saved = set(NAMES)

    def f(x):
        return x + 1 if "z" in NAMES else x - 1

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    x = tensor(ignis, 4)
    try:
        assert close(cf(x), x - 1)
        NAMES.add("z")  # mutated in place: the equality guard fails
        assert close(cf(x), x + 1)
        g["NAMES"] = {"q"}  # rebound
        assert close(cf(x), x - 1)
        assert len(graphs) == 3
    finally:
        g["NAMES"] = saved


def test_global_set_mutation_inside_breaks_and_is_applied():
    def f(x):
        NAMES.add("y")
        return x * 2

    saved = set(NAMES)
    try:
        ex = ignis.compiler.explain(f)(tensor(ignis, 4))
        assert ex.graph_break_count == 1 and "set.add()" in ex.break_reasons[0].reason
        assert "y" in NAMES
    finally:
        NAMES.clear()
        NAMES.update(saved)


def test_new_subclass_retraces():
    class Root:
        pass

    class A(Root):
        k = 1

    def f(x):
        return x * sum(c.k for c in Root.__subclasses__())

    cf = ignis.compile(f)
    x = tensor(ignis, 4)
    assert close(cf(x), x * 1)

    class B(Root):  # noqa: F841  (registers itself as a subclass)
        k = 10
    assert close(cf(x), x * 11)


def test_import_of_unloaded_module_breaks_and_imports():
    name = "test_capture_libraries_fresh_mod"
    sys.modules.pop(name, None)

    def f(x):
        import test_capture_libraries_fresh_mod  # noqa: F401
        return x + 1

    import types
    mod = types.ModuleType(name)
    loaded = []

    class Finder:  # an import hook: Python runs it at the break, not the tracer
        def find_spec(self, fullname, path=None, target=None):
            if fullname != name:
                return None
            import importlib.util

            class Loader:
                def create_module(self, spec):
                    return mod

                def exec_module(self, module):
                    loaded.append(module)
            return importlib.util.spec_from_loader(name, Loader())

    finder = Finder()
    sys.meta_path.insert(0, finder)
    try:
        # The import is not traced: the frame runs eagerly (a plan cannot
        # resume after an import), Python imports the module, and the hook's
        # own frames are not captured (no break is reported from them).
        ex = ignis.compiler.explain(f)(tensor(ignis, 4))
        assert ex.graph_count == 0 and ex.graph_break_count == 1
        assert "not imported yet" in ex.break_reasons[0].reason
        assert loaded == [mod]
        # Now imported: it traces, guarded on sys.modules holding that module.
        graphs = []
        cf = ignis.compile(f, backend=counting_backend(graphs))
        assert close(cf(tensor(ignis, 4)), tensor(ignis, 4) + 1)
        assert len(graphs) == 1
        sys.modules[name] = types.ModuleType(name)  # another module: the guard fails
        cf(tensor(ignis, 4))
        assert len(graphs) == 2
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(name, None)


def test_lru_cache_is_traced_through_not_read():
    @functools.lru_cache(None)
    def k(n):
        return n * 2

    def f(x):
        return x * k(3)

    cf = ignis.compile(f)
    assert close(cf(tensor(ignis, 4)), tensor(ignis, 4) * 6)
    # The trace inlined the wrapped function; the cache stayed empty, as
    # under Dynamo.
    assert k.cache_info().currsize == 0


def test_resumed_closures_keep_their_own_cells():
    # One code object, two closures: a break in the first closure's frame
    # must not make the second resume with the first's cells.
    class P:
        def __init__(self):
            self.items = []

    def make(p):
        def add(v):
            print(end="")  # a graph break
            p.items.append(v)
        return add

    p, q = P(), P()
    adders = (make(p), make(q))

    def outer(x):
        for a in adders:
            print(end="")
            a("v")
        return x + 1

    ignis.compile(outer)(tensor(ignis, 4))
    assert p.items == ["v"] and q.items == ["v"]


def test_user_len_returning_bad_value_raises_as_eager():
    class Bad:
        def __len__(self):
            return -1

    def f(x):
        return x + len(Bad())

    with pytest.raises(ValueError):
        f(tensor(ignis, 4))
    with pytest.raises(ValueError):
        ignis.compile(f)(tensor(ignis, 4))


def test_zero_grad_in_compiled_function_clears_grads():
    m = mlp(ignis)
    m(tensor(ignis, 3, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())

    def f(x):
        m.zero_grad()
        return m(x)

    graphs = []
    out = ignis.compile(f, backend=counting_backend(graphs))(tensor(ignis, 3, 4))
    assert all(p.grad is None for p in m.parameters())
    assert close(out, m(tensor(ignis, 3, 4))) and len(graphs) == 1


def test_generator_argument_breaks_with_reason():
    g = ignis.Generator().manual_seed(1)

    def f(x):
        return x + ignis.randn(4, generator=g)

    ex = ignis.compiler.explain(f)(tensor(ignis, 4))
    assert ex.graph_break_count == 1 and "generator=" in ex.break_reasons[0].reason


# --- einops ------------------------------------------------------------------------------------
def einops_layers(T):
    if T is ignis:
        from ignis.utils import einops as layers
    else:
        from einops.layers import torch as layers
    return layers


def vit(T, image=8, patch=4, dim=16, depth=2, heads=2, classes=5):
    """A small ViT written with einops (functions and the Rearrange layer)."""
    from einops import rearrange, reduce, repeat
    nn = T.nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(dim, dim * 3)
            self.out = nn.Linear(dim, dim)

        def forward(self, x):
            q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=heads)
                       for t in self.qkv(x).chunk(3, dim=-1))
            a = (q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5).softmax(dim=-1)
            return self.out(rearrange(a @ v, "b h n d -> b n (h d)"))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.attn = nn.LayerNorm(dim), Attention()
            self.n2 = nn.LayerNorm(dim)
            self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.mlp(self.n2(x))

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            n = (image // patch) ** 2
            self.to_patches = nn.Sequential(
                einops_layers(T).Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
                nn.Linear(patch * patch * 3, dim))
            self.cls = nn.Parameter(T.zeros(1, 1, dim))
            self.pos = nn.Parameter(T.zeros(1, n + 1, dim))
            self.blocks = nn.ModuleList([Block() for _ in range(depth)])
            self.pool = einops_layers(T).Reduce("b n d -> b d", "mean")
            self.head = nn.Linear(dim, classes)

        def forward(self, img):
            x = self.to_patches(img)
            x = T.cat([repeat(self.cls, "() n d -> b n d", b=x.shape[0]), x], dim=1) + self.pos
            for b in self.blocks:
                x = b(x)
            return self.head(self.pool(x[:, 1:]) + reduce(x[:, :1], "b 1 d -> b d", "max"))

    T.manual_seed(0)
    return deterministic(T, ViT())


def dynamo_explain(fn, *args):
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(*args)
    torch._dynamo.reset()
    return ex.graph_count, ex.graph_break_count


def test_einops_vit_is_one_graph_as_in_dynamo():
    pytest.importorskip("einops")
    img = tensor(ignis, 2, 3, 8, 8)
    model = vit(ignis)
    want = model(img)
    ex = ignis.compiler.explain(model)(img)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    graphs = []
    compiled = ignis.compile(model, backend=counting_backend(graphs))
    got = compiled(img)
    assert close(got, want, atol=1e-5) and len(graphs) == 1
    # Gradients through the compiled graph equal eager ones.
    got.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model(img).sum().backward()
    assert all(close(g, p.grad, atol=1e-5) for g, p in zip(grads, model.parameters()))
    compiled(tensor(ignis, 2, 3, 8, 8, seed=1))  # same shapes: no recompile
    assert len(graphs) == 1
    try:
        import torch
    except ImportError:
        return
    assert dynamo_explain(vit(torch), tensor(torch, 2, 3, 8, 8)) == (1, 0)
    assert close(got.detach(), ignis.from_numpy(vit(torch)(tensor(torch, 2, 3, 8, 8)).detach().numpy()),
                 atol=1e-5)


def einops_ops(T):
    from einops import rearrange, reduce, repeat

    def f(x):
        y = rearrange(x, "b (h w) c -> b c h w", h=2)
        y = repeat(y, "b c h w -> b c h (w k)", k=2)
        z = reduce(y, "b c h w -> b c", "sum")
        return rearrange([z, z * 2], "n b c -> b (n c)")
    return f


def test_einops_functions_trace_as_dynamo_and_guard_their_patterns():
    pytest.importorskip("einops")
    x = tensor(ignis, 2, 4, 3, requires_grad=True)
    f = einops_ops(ignis)
    want = f(x)
    ex = ignis.compiler.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    got = cf(x)
    assert close(got, want)
    # Another shape changes the recipe einops derives: a new trace, right values.
    x2 = tensor(ignis, 3, 6, 3)
    assert close(cf(x2), f(x2)) and len(graphs) == 2
    try:
        import torch
    except ImportError:
        return
    assert dynamo_explain(einops_ops(torch), tensor(torch, 2, 4, 3)) == (1, 0)


def test_einops_errors_raise_as_in_eager():
    einops = pytest.importorskip("einops")

    def f(x):
        return einops.rearrange(x, "a b -> a c")

    with pytest.raises(einops.EinopsError):
        f(tensor(ignis, 2, 3))
    with pytest.raises(einops.EinopsError):
        ignis.compile(f)(tensor(ignis, 2, 3))


def test_einops_layers_are_ignis_modules():
    pytest.importorskip("einops")
    from ignis.utils.einops import Rearrange, Reduce
    x = tensor(ignis, 2, 3, 4)
    r = Rearrange("b c n -> b n c")
    assert isinstance(r, ignis.nn.Module) and close(r(x), x.permute(0, 2, 1))
    assert close(Reduce("b c n -> b c", "max")(x), x.amax(dim=2))
    seq = ignis.nn.Sequential(r, ignis.nn.Linear(3, 2))
    assert list(dict(seq.state_dict())) == ["1.weight", "1.bias"]


# --- random ops called with generator= --------------------------------------------------------
# Dynamo (torch 2.13) does not put such a call in a graph: the Generator
# argument has no proxy ("Failed to convert args/kwargs to proxy"), so it
# breaks there, runs the call eagerly and resumes. ignis breaks at the same
# place, so each call draws from the user's generator exactly as eagerly.
def generator_program(T, g):
    def f(x):
        y = x.sin() * 2
        z = y + T.randn(4, generator=g)
        z = z + T.empty(4).uniform_(generator=g)
        z = z + T.randperm(4, generator=g)
        return z.cos() + T.multinomial(x.abs() + 1, 2, generator=g).sum()
    return f


def test_generator_calls_break_as_in_dynamo():
    torch = pytest.importorskip("torch")
    ex = ignis.compiler.explain(generator_program(ignis, ignis.Generator()))(tensor(ignis, 4))
    want = dynamo_explain(generator_program(torch, torch.Generator()), tensor(torch, 4))
    assert (ex.graph_count, ex.graph_break_count) == want
    assert ex.graph_break_count >= 1
    assert all("generator=" in b.reason for b in ex.break_reasons)


@pytest.mark.parametrize("backend", [None, "aot_eager", "inductor"])
def test_generator_streams_match_eager_call_after_call(backend):
    """Two generators with the same seed: one drives eager calls, the other
    the compiled ones; a later call continues the stream, and calls with the
    default generator in between (seeded alike) do not disturb it."""
    g_eager, g_comp = ignis.Generator().manual_seed(7), ignis.Generator().manual_seed(7)
    other_eager, other_comp = ignis.Generator().manual_seed(3), ignis.Generator().manual_seed(3)
    kw = {} if backend is None else {"backend": backend}
    f_eager = generator_program(ignis, g_eager)
    f_comp = ignis.compile(generator_program(ignis, g_comp), **kw)

    def mixed(g):
        def h(x):
            return x * ignis.rand(4) + ignis.rand(4, generator=g)
        return h
    h_eager, h_comp = mixed(other_eager), ignis.compile(mixed(other_comp), **kw)
    x = tensor(ignis, 4)
    for i in range(3):
        close(f_comp(x), f_eager(x))
        ignis.manual_seed(100 + i)
        want = h_eager(x)
        ignis.manual_seed(100 + i)
        close(h_comp(x), want)
    assert ignis.equal(g_comp.get_state(), g_eager.get_state())
    assert ignis.equal(other_comp.get_state(), other_eager.get_state())


def test_a_method_of_a_numpy_argument_reads_the_calls_own_array():
    # ndarray.astype breaks the graph; the bound method at the break is read from L['a'] at
    # run time (as a constant it was bound to the first call's array: its results came
    # back for every later array).
    import numpy as np
    c = ignis.compile(lambda a: a.astype(np.float32))
    assert c(np.ones((2, 4))).shape == (2, 4)
    out = c(np.zeros((2, 4, 4)))
    assert out.shape == (2, 4, 4) and out.dtype == np.float32 and not out.any()
