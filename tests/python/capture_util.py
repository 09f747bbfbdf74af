"""Shared machinery of the capture tests (tests/python/test_capture_*.py).

A case is a factory over a module `T` (ignis or torch): `make(T)` returns the
function to compile, `inputs(T)` its arguments. The same body therefore runs
under ignis.compile and under torch.compile, and each test file records the
numbers real Dynamo gives for it (graphs compiled and graph breaks on the
first call; torch 2.13, a counting backend, dynamic=False) in its EXPECTED
table. check_case runs a case under ignis: compiled result equals the eager
one (values, and gradients when the case asks), the backend was called
EXPECTED graphs times, a second call with fresh inputs of the same kind hits
the cache, and ignis.compiler.explain counts the same graphs and breaks.
test_capture_torch_oracle.py re-checks every table against torch itself.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

# TEMPORARY (until the C side `_C._capture` and the tracer are merged): the
# suite skips, loudly, when the extension has no capture module. Never skips
# once it exists.
HAVE_CAPTURE = hasattr(ignis._C, "_capture")
requires_capture = pytest.mark.skipif(
    not HAVE_CAPTURE, reason="TEMPORARY: ignis._C._capture is not built into this checkout yet")


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test starts and ends with empty capture caches (helpers' code
    objects are shared between tests). Test modules import this fixture."""
    if HAVE_CAPTURE:
        ignis.compiler.reset()
    yield
    if HAVE_CAPTURE:
        ignis.compiler.reset()


# --- inputs ------------------------------------------------------------------------------------
def array(*shape, seed=0, dtype="float32", lo=-2.0, hi=2.0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(int(lo), int(hi) + 1, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def tensor(T, *shape, seed=0, dtype="float32", requires_grad=False, lo=-2.0, hi=2.0):
    """The same data in ignis or torch (a fresh tensor each call)."""
    t = T.from_numpy(array(*shape, seed=seed, dtype=dtype, lo=lo, hi=hi).copy())
    if requires_grad:
        t.requires_grad_(True)
    return t


def xy(T):
    return tensor(T, 4, seed=0), tensor(T, 4, seed=1)


def x1(T):
    return (tensor(T, 4, seed=0),)


def x23(T):
    return (tensor(T, 2, 3, seed=0),)


def xy_grad(T):
    return tensor(T, 4, seed=0, requires_grad=True), tensor(T, 4, seed=1, requires_grad=True)


def x_pos(T):
    return (tensor(T, 4, seed=0, lo=0.5, hi=2.0),)


def x_neg(T):
    return (tensor(T, 4, seed=0, lo=-2.0, hi=-0.5),)


# --- cases -------------------------------------------------------------------------------------
class Case:
    def __init__(self, name, make, inputs, grad=False, recompiles_on_repeat=False):
        self.name = name
        self.make = make
        self.inputs = inputs
        self.grad = grad
        self.recompiles_on_repeat = recompiles_on_repeat

    def __repr__(self):
        return self.name


def registry():
    """A list and a decorator `@case(inputs=..., grad=...)` that appends to it."""
    cases = []

    def case(inputs=xy, grad=False, recompiles_on_repeat=False):
        def register(make):
            name = make.__name__[5:] if make.__name__.startswith("case_") else make.__name__
            cases.append(Case(name, make, inputs, grad, recompiles_on_repeat))
            return make
        return register
    return cases, case


def counting_backend(graphs):
    """A backend that records each graph module and runs it as captured."""
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend


# --- comparisons -------------------------------------------------------------------------------
def is_tensor(v):
    return type(v).__name__ in ("Tensor", "Parameter") and hasattr(v, "shape")


def to_np(t):
    return t.detach().numpy()


def assert_same_value(got, want, path="result"):
    if is_tensor(want):
        assert is_tensor(got), f"{path}: expected a tensor, got {type(got).__name__}"
        assert str(got.dtype) == str(want.dtype), f"{path}: dtype {got.dtype} != {want.dtype}"
        assert tuple(got.shape) == tuple(want.shape), f"{path}: shape {tuple(got.shape)} != " \
            f"{tuple(want.shape)}"
        assert bool(got.requires_grad) == bool(want.requires_grad), f"{path}: requires_grad"
        np.testing.assert_allclose(to_np(got), to_np(want), rtol=1e-5, atol=1e-6, err_msg=path)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}"
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_value(g, w, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{path}: keys {list(got)}"
        for k in want:
            assert_same_value(got[k], want[k], f"{path}[{k!r}]")
    elif isinstance(want, float):
        assert type(got) is float and (got == want or abs(got - want) < 1e-5 * max(1, abs(want))), \
            f"{path}: {got!r} != {want!r}"
    else:
        assert type(got) is type(want) and got == want, f"{path}: {got!r} != {want!r}"


def close(a, b, atol=1e-6):
    """Same shape and values (to float32 rounding) of two tensors."""
    return tuple(a.shape) == tuple(b.shape) and bool(
        np.allclose(to_np(a), to_np(b), rtol=1e-5, atol=atol))


def tensors_in(v):
    if is_tensor(v):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for x in v for t in tensors_in(x)]
    if isinstance(v, dict):
        return [t for x in v.values() for t in tensors_in(x)]
    return []


def backward_grads(result, args):
    """Backpropagates the sum of the float outputs that need grad; returns the
    inputs' grads (None where an input got none)."""
    outs = [t for t in tensors_in(result) if t.requires_grad]
    if outs:
        total = outs[0].sum()
        for t in outs[1:]:
            total = total + t.sum()
        total.backward()
    return [a.grad if is_tensor(a) else None for a in args]


# --- running a case ----------------------------------------------------------------------------
def run_compiled(T, case, compile_fn, graphs):
    fn = case.make(T)
    args = case.inputs(T)
    compiled = compile_fn(fn, graphs)
    return compiled, compiled(*args), args, fn


def param_grads(fn):
    """Grads of a module's parameters (a case may return a module to compile)."""
    if hasattr(fn, "parameters") and callable(fn.parameters):
        return [p.grad for p in fn.parameters()]
    return []


def deterministic(T, module, seed=0):
    """Gives every parameter and float buffer of `module` fixed values (the
    same in ignis and torch) and returns the module."""
    with T.no_grad():
        for i, (_, t) in enumerate(list(module.named_parameters()) + list(module.named_buffers())):
            if t.is_floating_point():
                t.copy_(T.from_numpy(array(*t.shape, seed=seed + i, lo=-0.5, hi=0.5)))
    return module


def ignis_compile(fn, graphs, **kwargs):
    return ignis.compile(fn, backend=counting_backend(graphs), **kwargs)


def check_case(case, expected):
    """Compiled == eager under ignis, and Dynamo's graph and break counts
    (under Dynamo's default config: data-dependent output sizes break the
    graph, where ignis's default keeps them in it; test_dynamic_unbacked.py)."""
    cfg = ignis.compiler.config
    prev = cfg.capture_dynamic_output_shape_ops
    cfg.capture_dynamic_output_shape_ops = False
    try:
        _check_case(case, expected)
    finally:
        cfg.capture_dynamic_output_shape_ops = prev


def _check_case(case, expected):
    want_graphs, want_breaks = expected[case.name]
    T = ignis
    ignis.compiler.reset()
    eager_args = case.inputs(T)
    eager_fn = case.make(T)
    want = eager_fn(*eager_args)

    graphs = []
    compiled, got, args, fn = run_compiled(T, case, ignis_compile, graphs)
    assert_same_value(got, want)
    if case.grad:
        got_grads = backward_grads(got, args) + param_grads(fn)
        want_grads = backward_grads(want, eager_args) + param_grads(eager_fn)
        for i, (g, w) in enumerate(zip(got_grads, want_grads)):
            if w is None:
                assert g is None, f"grad of input {i}: expected None"
            else:
                assert g is not None, f"grad of input {i} missing"
                assert_same_value(g, w, f"grad[{i}]")
    # None: the frame may run eagerly (generators, try/except): only values count.
    if want_graphs is not None:
        assert len(graphs) == want_graphs, \
            f"backend called {len(graphs)} times, Dynamo calls it {want_graphs} times"
    n_first = len(graphs)

    # A second call with equal-kind inputs runs from the cache.
    again = compiled(*case.inputs(T))
    assert_same_value(again, case.make(T)(*case.inputs(T)), "second call")
    if not case.recompiles_on_repeat:
        assert len(graphs) == n_first, "second call recompiled"

    ex = ignis.compiler.explain(case.make(T))(*case.inputs(T))
    assert ex.graph_count == n_first, f"explain: {ex.graph_count} graphs\n{ex}"
    # None: Dynamo's number counts its own tracing restarts (a break inside a
    # loop makes it re-trace and then skip the frame), not breaks; not asserted.
    if want_breaks is not None:
        assert ex.graph_break_count == want_breaks, \
            f"explain: {ex.graph_break_count} breaks, Dynamo has {want_breaks}\n{ex}"
    ignis.compiler.reset()


# --- the torch oracle --------------------------------------------------------------------------
def torch_counts(case):
    """(graphs, breaks, repeat_ok) that torch.compile gives for a case: backend
    calls on the first call, graph breaks met while tracing it, and whether a
    second call hit the cache."""
    import torch
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    graphs = []
    fn = case.make(torch)
    compiled = torch.compile(fn, backend=counting_backend(graphs), dynamic=False)
    got = compiled(*case.inputs(torch))
    n_graphs = len(graphs)
    # Dynamo counts print/unsupported-call breaks under "graph_break" and
    # data-dependent jumps under "unimplemented".
    n_breaks = sum(counters["graph_break"].values()) + sum(
        v for k, v in counters["unimplemented"].items() if k.startswith("Data-dependent"))
    want = case.make(torch)(*case.inputs(torch))
    assert_same_value(got, want)
    compiled(*case.inputs(torch))
    repeat_ok = case.recompiles_on_repeat or len(graphs) == n_graphs
    torch._dynamo.reset()
    return n_graphs, n_breaks, repeat_ok
