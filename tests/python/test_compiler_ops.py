"""Every op compiled (backend="inductor") against eager, forward and gradients.

Declaration-driven: the ops come from the op table, not from a hand-kept list.

1. Decomposed ops: every sample of test_decompositions.SAMPLES (every op with
   a decomposition), for each of its dtypes, called through the op's
   `ignis.ops.<name>` (the object capture records) inside
   `ignis.compile(fn, backend="inductor", fullgraph=True)`, against the fused
   op run eagerly: same dtypes and shapes, values within that test's TOL,
   NaN positions equal. Random samples compare dtypes and shapes (and the
   sample's `check`). Ops whose output shape depends on the data
   (DATA_DEPENDENT) graph-break by design: they run without fullgraph.
2. Core ops the compiler lowers itself: every core op of category Pointwise
   (enumerated from the op table; a new one without a spec fails
   `test_every_core_pointwise_op_has_a_spec`), the reductions
   (`sum.dim_IntList` with and without dtype=, `prod.dim_int`, `amax`, `amin`
   over one, several and all dims, keepdim), casts (`_to_copy` between seven
   dtypes), `where`, `clamp` with one or two bounds, comparisons, and the
   canonical views (alone as outputs, feeding a pointwise op, chained, and
   feeding reductions), on layouts contiguous / broadcast operands /
   transposed / sliced with a step / zero-size / 0-dim / large (past the
   thread threshold and vector tails), and for ops of two or more operands a
   Python number of the tensor's kind and of the other kind, a mixed-dtype
   operand and a 0-dim operand of another dtype (type promotion); in float32,
   float64, bfloat16, float16, int64 and bool (casts: also int32). Float
   inputs carry NaN, infinities and signed zeros. Eager decides what a dtype
   accepts: when eager raises, the compiled call (graph breaks allowed) must
   raise the same exception type.
3. Gradients: float64 samples of differentiable ops (both tables), compiled
   with inputs requiring grad and a random upstream gradient, against eager's
   input gradients (rtol 1e-6; finite inputs). When eager's backward raises,
   the compiled one must raise the same type.

Every compiled call must really compile: capture must not break the graph
(fullgraph=True where eager succeeds), AOT must not fall back to running the
graph eagerly (its RuntimeWarning fails the test) and at least one graph must
go through ignis._inductor.compile_fx.

Runtime: by default the (op, dtype, layout) grid of part 2 is sampled
deterministically (every op variant runs in every dtype contiguously and in
every layout at least once, plus a third of the rest chosen by a hash of the
case id; float64 gradients run on every layout); IGNIS_COMPILER_OPS_FULL=1
runs the whole grid. Parts 1 and 3 always run in full.

Known compiler bugs are `xfail(strict=True)` in KNOWN_BUGS below (each with a
standalone repro in compiler_repros/): the suite turns red when one is fixed.
"""
import os
import warnings
import zlib

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import test_decompositions as TD
import ignis._inductor  # noqa: F401  (compile_fx, patched below)

C = ignis._C
FULL = os.environ.get("IGNIS_COMPILER_OPS_FULL") == "1"
CORE = set(C._core_ops())
TABLE = C._op_table()
# overload name ('sum.dim_IntList') -> the ignis.ops object that capture records
PACKET = {s.split("(")[0]: op for _key, (op, _f, _m) in TABLE.items() for s in op.schemas}


def _h(text):
    return zlib.crc32(text.encode())


# --------------------------------------------------------------------------------
# Compiling and comparing
# --------------------------------------------------------------------------------
class _Compiles:
    """Counts the graphs handed to ignis._inductor.compile_fx."""

    def __init__(self, real):
        self.real, self.count = real, 0

    def __call__(self, gm, example_inputs):
        self.count += 1
        return self.real(gm, example_inputs)


@pytest.fixture(autouse=True)
def compiles(monkeypatch):
    counter = _Compiles(ignis._inductor.compile_fx)
    # The inductor backend imports compile_fx from ignis._inductor when called.
    monkeypatch.setattr(ignis._inductor, "compile_fx", counter)
    return counter


def run(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return fn(*args, **kwargs), None
    except Exception as e:  # noqa: BLE001 - compared by type
        return None, e


def compiled_call(fn, args, kwargs, *, fullgraph=True):
    """fn(*args, **kwargs) through backend="inductor"; fails on an AOT fallback."""
    ignis.compiler.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = ignis.compile(fn, backend="inductor", fullgraph=fullgraph)(*args, **kwargs)
    fallback = [str(w.message) for w in caught if "runs eagerly" in str(w.message)]
    assert not fallback, f"AOT/compile fell back to eager: {fallback[0]}"
    return out


def check_forward(fn, args, kwargs, want, want_exc, sample, what, compiles, *, fullgraph=True):
    """The compiled fn against eager's (want, want_exc). fullgraph=False: the
    op graph-breaks by design and runs eagerly inside the compiled call."""
    if want_exc is not None:
        # What a user sees: the compiled call (graph breaks allowed) raises
        # eager's exception type.
        ignis.compiler.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, got_exc = run(lambda: ignis.compile(fn, backend="inductor")(*args, **kwargs))
        assert got_exc is not None, \
            f"{what}: eager raised {type(want_exc).__name__}: {want_exc}; compiled did not"
        assert type(got_exc) is type(want_exc), (
            f"{what}: compiled raised {type(got_exc).__name__}: {got_exc}; "
            f"eager raised {type(want_exc).__name__}: {want_exc}")
        return None
    ignis.manual_seed(0)
    got = compiled_call(fn, args, kwargs, fullgraph=fullgraph)
    assert compiles.count >= 1 or not fullgraph, f"{what}: no graph reached compile_fx"
    TD.assert_close(got, want, sample, what)
    if getattr(sample, "check", None) is not None:
        sample.check(args, got)
    return got


class _Plain:
    """Comparison flags of a deterministic sample (TD.assert_close's `sample`)."""
    random, values, check = False, True, None


def _grad_leaves(args, kwargs, wanted=None):
    count = [0]
    args = [TD._requiring_grad(a, wanted, count) for a in args]
    kwargs = {k: TD._requiring_grad(v, wanted, count) for k, v in kwargs.items()}
    return args, kwargs, TD._leaves(args) + TD._leaves(list(kwargs.values()))


def check_gradients(fn, eager_fn, args, kwargs, what, *, wanted=None, outputs=None,
                    fullgraph=True):
    """Input gradients of compiled fn against eager_fn's (float64 leaves)."""
    args, kwargs, leaves = _grad_leaves(args, kwargs, wanted)
    if not leaves:
        pytest.skip("no float64 inputs")
    want_out = TD.flat(eager_fn(*args, **kwargs))
    which = outputs or range(len(want_out))
    outs = [k for k in which if want_out[k] is not None and want_out[k].requires_grad]
    if not outs:
        pytest.skip("no differentiable outputs")
    rng = np.random.default_rng(_h(what))
    weights = [ignis.from_numpy(rng.uniform(-1, 1, tuple(want_out[k].shape))) for k in outs]

    def grads(out):
        loss = sum((out[k] * w).sum() for k, w in zip(outs, weights))
        return ignis.autograd.grad(loss, leaves, allow_unused=True)

    want, want_exc = run(grads, want_out)
    if want_exc is not None:
        # eager's backward raises: so must the compiled one (graph breaks and
        # AOT falling back allowed: what a user sees)
        ignis.compiler.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, got_exc = run(lambda: grads(TD.flat(
                ignis.compile(fn, backend="inductor")(*args, **kwargs))))
        assert type(got_exc) is type(want_exc), (
            f"{what}: eager's backward raised {type(want_exc).__name__}: {want_exc}; "
            f"compiled: {type(got_exc).__name__}: {got_exc}")
        return
    got = grads(TD.flat(compiled_call(fn, args, kwargs, fullgraph=fullgraph)))
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            assert g is None or not np.any(g.numpy()), f"{what}: eager gives no gradient for input {k}"
            continue
        assert g is not None, f"{what}: no gradient for input {k}"
        assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype, f"{what}: input {k}"
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-9, equal_nan=True,
                                   err_msg=f"{what}: gradient of input {k}")


# --------------------------------------------------------------------------------
# Known compiler bugs: case id -> diagnosis. Each is xfail(strict=True).
# --------------------------------------------------------------------------------
_ABS_BOOL = ("abs's meta rule accepts bool (eager's kernel raises NotImplementedError), so the "
             "compiled graph returns the input instead of raising (abs_bool_does_not_raise.py)")
KNOWN_BUGS = {
    **{f"abs-bool-{layout}": _ABS_BOOL for layout in
       ("contiguous", "broadcast", "transposed", "sliced", "zero_size", "zero_dim", "large")},
    **{f"{name}-0-float32": (
        "the functional fused optimizer steps return a structseq of tensor lists "
        "(return_types._fused_adam, ...), which capture does not hold: the graph breaks at "
        "the call and fullgraph=True refuses it")
       for name in ("_fused_adam", "_fused_adamw", "_fused_sgd", "_fused_adam.tensor_lr",
                    "_fused_adamw.tensor_lr", "_fused_sgd.tensor_lr")},
    "_amp_foreach_non_finite_check_and_unscale_-0-float32": (
        "the op writes two arguments (the gradients and found_inf), which AOT's "
        "functionalization does not take: the graph runs eagerly (docs/autocast.md)"),
    "grad-amin-step_d2-zero_size": (
        "AOT's joint trace of amin's backward with a zero-size result of rank >= 2 ([2, 0]) fails "
        "('a fake tensor ... was not produced by this trace'): falls back to eager "
        "(amin_zero_size_backward.py)"),
}


def _param(case_id, *values):
    reason = KNOWN_BUGS.get(case_id)
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(*values, id=case_id, marks=marks)


# --------------------------------------------------------------------------------
# Part 1: every decomposed op's samples (test_decompositions.SAMPLES)
# --------------------------------------------------------------------------------
# Ops that cannot be compiled whole by design: their output shape depends on
# the data, so capture breaks the graph and runs them eagerly. They run
# without fullgraph: the compiled call (eager underneath) must still match.
DATA_DEPENDENT = {
    "where": "where(condition) is nonzero: its output shape depends on the data",
    "masked_select": "masked_select's output shape depends on the data",
    "_unique2": "unique's output shape is the number of distinct values",
    "unique_dim": "unique's output shape is the number of distinct values",
    "unique_consecutive": "unique_consecutive's output shape is the number of runs",
    ("one_hot", 1): "one_hot(num_classes=-1) takes the class count from the data",
}


def _packet_fn(name):
    op = PACKET[name]
    return lambda *a, **k: op(*a, **k)


DECOMP_CASES = [_param(f"{n}-{i}-{dt}", n, i, dt) for n, i, dt in TD.CASES]
DECOMP_GRAD_CASES = [_param(f"grad-{n}-{i}", n, i) for n, i in TD.GRAD_CASES]


@pytest.mark.parametrize("name,index,dt", DECOMP_CASES)
def test_decomposed_op_compiled_matches_eager(name, index, dt, compiles):
    data_dependent = name in DATA_DEPENDENT or (name, index) in DATA_DEPENDENT
    sample = TD.SAMPLES[name][index]
    args, kwargs = sample.make(f"{name}/{index}/{dt}", dt)
    ignis.manual_seed(0)
    want, want_exc = run(C._op_overload(name), *args, **kwargs)
    check_forward(_packet_fn(name), args, kwargs, want, want_exc, sample, f"{name}[{index}] {dt}",
                  compiles, fullgraph=not data_dependent)


@pytest.mark.parametrize("name,index", DECOMP_GRAD_CASES)
def test_decomposed_op_compiled_gradients(name, index):
    data_dependent = name in DATA_DEPENDENT or (name, index) in DATA_DEPENDENT
    sample = TD.SAMPLES[name][index]
    args, kwargs = sample.make(f"{name}/{index}/grad", "float64")
    check_gradients(_packet_fn(name), C._op_overload(name), args, kwargs, f"{name}[{index}] grad",
                    wanted=sample.grad_inputs, outputs=sample.grad_outputs,
                    fullgraph=not data_dependent)


# --------------------------------------------------------------------------------
# Part 2: core ops the compiler lowers itself
# --------------------------------------------------------------------------------
DTYPES = ("float32", "float64", "bfloat16", "float16", "int64", "bool")
LAYOUTS = ("contiguous", "broadcast", "transposed", "sliced", "zero_size", "zero_dim", "large")
FLOATS = ("float32", "float64", "bfloat16", "float16")

# Operand shapes per layout (operand k uses entry k, the last one repeated).
SHAPES = {
    "contiguous": [(3, 5)],
    "broadcast": [(2, 3, 5), (3, 1), ()],     # one operand (unary): a stride-0 expand
    "transposed": [(3, 5)],
    "sliced": [(3, 5)],
    "zero_size": [(0, 5), (1, 5)],
    "zero_dim": [()],
    "scalar": [(3, 5)],                       # a Python number as the second operand
    # past cpp.min_parallel_elements (threads) and the vector width's tails
    "large": [(37, 1031), (1031,)],
}
SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0])
_FINITE = [False]  # gradient cases: no NaN/inf inputs (see test_core_op_compiled_gradients)


def _values(rng, shape, dt, kind):
    if dt == "bool":
        return rng.random(shape) > 0.5
    if dt in ("int64", "int32"):
        lo, hi = {"any": (-5, 6), "nonzero": (1, 6), "exponent": (0, 4)}.get(kind, (-5, 6))
        v = rng.integers(lo, hi, shape)
        if kind == "nonzero":
            v = v * rng.choice([-1, 1], shape)
        return v
    v = rng.uniform(-2.5, 2.5, shape)
    if kind == "nonzero":
        v = np.where(np.abs(v) < 0.2, 0.5, v)
    if kind in ("special", "nonzero") and v.size and not _FINITE[0]:
        # NaN, infinities and signed zeros in ~1/5 of the places
        pick = rng.random(shape) < 0.2
        v = np.where(pick, rng.choice(SPECIALS[:5] if kind == "special" else SPECIALS[:3], shape), v)
    return v


def make_tensor(rng, shape, dt, layout, kind="any"):
    """A tensor of `shape` and dtype `dt` in `layout` (see SHAPES)."""
    shape = tuple(shape)
    nd = len(shape)
    if layout == "transposed" and nd >= 2:
        base = tuple(reversed(shape))
        return make_tensor(rng, base, dt, "contiguous", kind).permute(*reversed(range(nd)))
    if layout == "sliced" and nd >= 1:
        # every other row (from 0) and every other column (from 1): steps and an offset
        base = ((2 * shape[0],) if nd >= 2 else ()) + tuple(shape[1:-1]) + (2 * shape[-1] + 1,)
        t = make_tensor(rng, base, dt, "contiguous", kind)
        idx = ((slice(None, None, 2),) if nd >= 2 else ()) + (slice(None),) * max(nd - 2, 0) \
            + (slice(1, None, 2),)
        return t[idx]
    if layout == "expanded" and nd >= 1:
        t = make_tensor(rng, (1,) + shape[1:], dt, "contiguous", kind)
        return t.expand(*shape)
    a = np.asarray(_values(rng, shape, dt, kind))
    return ignis.from_numpy(np.array(a, order="C")).to(getattr(ignis, dt))


def _scalar_for(dt, kind, *, other=False):
    """A Python number operand: of the tensor's kind (int for integer and bool
    tensors, float for floats), or with other=True of the other kind."""
    if (dt in FLOATS) != other:
        return 2.0 if kind == "exponent" else -1.25
    return 2 if kind == "exponent" else 3


# Type promotion: the last operand in another dtype, as a full tensor
# ("mixed") or as a 0-dim tensor ("zero_dim_mixed": a 0-dim operand of the
# same category does not promote).
MIXED = {"float32": "int64", "float64": "float32", "bfloat16": "float16", "float16": "float32",
         "int64": "bool", "bool": "float32"}
ZERO_DIM_MIXED = {"float32": "float64", "float64": "bfloat16", "bfloat16": "float32",
                  "float16": "int64", "int64": "float32", "bool": "int64"}
MULTI_LAYOUTS = ("scalar", "scalar_other", "mixed", "zero_dim_mixed")  # operands >= 2


def operands(rng, layout, dt, kinds, *, dtypes=None):
    """Tensor operands (kinds[k] for operand k) for a case's layout."""
    shapes = SHAPES.get(layout, [(3, 5)])
    out = []
    last = len(kinds) - 1
    for k, kind in enumerate(kinds):
        odt = dtypes[k] if dtypes else dt
        shape = shapes[min(k, len(shapes) - 1)]
        if layout in ("scalar", "scalar_other") and k == last and k > 0:
            out.append(_scalar_for(odt, kind, other=layout == "scalar_other"))
            continue
        if layout == "mixed" and k == last and k > 0:
            odt = MIXED[odt]
        if layout == "zero_dim_mixed" and k == last and k > 0:
            odt, shape = ZERO_DIM_MIXED[odt], ()
        lay = {"broadcast": "expanded" if len(kinds) == 1 else "contiguous",
               # mixed layouts: the first operand transposed, the second contiguous
               "transposed": "transposed" if k % 2 == 0 else "contiguous",
               "sliced": "sliced"}.get(layout, "contiguous")
        out.append(make_tensor(rng, shape, odt, lay, kind))
    return out


# ---- pointwise: per op, the kinds of its operands (and a fixed dtype if any) ----
def _pointwise_core_ops():
    """Core ops of category pointwise (where.self, clamp, ...) from the op table."""
    names = []
    for key, (op, _f, _m) in TABLE.items():
        if str(op.category) != "pointwise":
            continue
        for s in op.schemas:
            n = s.split("(")[0]
            if n in CORE and n not in names:
                names.append(n)
    return names


POINTWISE_CORE = _pointwise_core_ops()


def _tensor_params(name):
    schema = next(s for op, _f, _m in TABLE.values() for s in op.schemas
                  if s.split("(")[0] == name)
    params = schema.split("(", 1)[1].rsplit(")", 1)[0].split("->")[0]
    return [p for p in params.split(", ") if p.startswith("Tensor ")]


# kinds of operands beyond "special" (floats with nan/inf/signed zeros)
POINTWISE_KINDS = {
    "div": ("special", "nonzero"), "fmod": ("special", "nonzero"),
    "remainder": ("special", "nonzero"), "pow": ("special", "exponent"),
    "where.self": ("bool", "special", "special"),
}
# extra keyword variants: (suffix, kwargs)
POINTWISE_VARIANTS = {
    "add": [("", {}), ("alpha", {"alpha": 2})],
    "sub": [("", {}), ("alpha", {"alpha": 3})],
    "div": [("", {}), ("trunc", {"rounding_mode": "trunc"}), ("floor", {"rounding_mode": "floor"})],
    "polygamma": [("n0", {"n": 0}), ("n1", {"n": 1}), ("n3", {"n": 3})],
}


def _pointwise_specs():
    """name -> [(variant id, builder(rng, layout, dt) -> (fn, args, kwargs))]."""
    specs = {}
    for name in POINTWISE_CORE:
        if name == "clamp":
            continue
        op = PACKET[name]
        arity = len(_tensor_params(name))
        kinds = POINTWISE_KINDS.get(name, ("special",) * arity)
        for suffix, kw in POINTWISE_VARIANTS.get(name, [("", {})]):
            def build(rng, layout, dt, op=op, kinds=kinds, kw=kw):
                dts = ["bool" if k == "bool" else dt for k in kinds]
                args = operands(rng, layout, dt, ["any" if k == "bool" else k for k in kinds],
                                dtypes=dts)
                return (lambda *a: op(*a, **kw)), args, {}
            layouts = LAYOUTS + (MULTI_LAYOUTS if arity >= 2 else ())
            specs.setdefault(name, []).append((suffix, build, layouts))
    # clamp: two tensor bounds, one (either side), numbers
    clamp = PACKET["clamp"]
    for suffix, which in [("min_max", "tt"), ("min", "t-"), ("max", "-t"), ("numbers", "nn"),
                          ("number_min", "n-")]:
        def build(rng, layout, dt, which=which):
            other = layout == "scalar_other"
            x, lo, hi = operands(rng, "contiguous" if other else layout, dt,
                                 ["special", "any", "any"])
            lo = lo if which[0] == "t" else (
                _scalar_for(dt, "any", other=other) if which[0] == "n" else None)
            hi = hi if which[1] == "t" else (
                -_scalar_for(dt, "any", other=other) if which[1] == "n" else None)
            args = [x] + [b for b in (lo, hi) if isinstance(b, ignis.Tensor)]

            def fn(*a):
                it = iter(a[1:])
                mn = next(it) if isinstance(lo, ignis.Tensor) else lo
                mx = next(it) if isinstance(hi, ignis.Tensor) else hi
                return clamp(a[0], mn, mx)
            return fn, args, {}
        layouts = LAYOUTS + (("scalar_other",) if "n" in which else ("mixed", "zero_dim_mixed"))
        specs.setdefault("clamp", []).append((suffix, build, layouts))
    return specs


POINTWISE_SPECS = _pointwise_specs()

# ---- reductions -------------------------------------------------------------------
RED_SHAPE = {"contiguous": (2, 3, 4), "broadcast": (2, 3, 4), "transposed": (2, 3, 4),
             "sliced": (2, 3, 4), "zero_size": (2, 0, 4), "zero_dim": (), "large": (13, 67, 45)}
RED_LAYOUT = {"broadcast": "expanded", "transposed": "transposed", "sliced": "sliced"}


def _reduction_specs():
    specs = {}
    variants = {
        "sum.dim_IntList": [("d1", ([1], False), {}), ("d02_keep", ([0, 2], True), {}),
                            ("all", (None,), {}), ("d1_f64", ([1], False), {"dtype": "float64"}),
                            ("all_keep_f32", ([], True), {"dtype": "float32"})],
        "prod.dim_int": [("d1", (1, False), {}), ("dlast_keep", (-1, True), {}),
                         ("d0_f64", (0,), {"dtype": "float64"})],
        "amax": [("d1", ([1],), {}), ("d02_keep", ([0, 2], True), {}), ("all", ([],), {})],
        "amin": [("d1", ([1],), {}), ("d02_keep", ([0, 2], True), {}), ("all", ([],), {})],
    }
    # reductions of a view taken inside the graph (an index remapping in the kernel)
    permute, slc = PACKET["permute"], PACKET["slice.Tensor"]
    views = {"sum.dim_IntList": ("perm_d0", ([0], False), {}, lambda t: permute(t, [2, 0, 1])),
             "amax": ("perm_d12_keep", ([1, 2], True), {}, lambda t: permute(t, [2, 0, 1])),
             "amin": ("step_d2", ([2],), {}, lambda t: slc(t, 2, 1, None, 2)),
             "prod.dim_int": ("step_d1", (1,), {}, lambda t: slc(t, 1, 0, None, 2))}
    for name, vs in variants.items():
        op = PACKET[name]
        vs = [v + (None,) for v in vs] + [views[name]]
        for suffix, red_args, red_kw, pre in vs:
            def build(rng, layout, dt, op=op, red_args=red_args, red_kw=red_kw, pre=pre):
                x = make_tensor(rng, RED_SHAPE[layout], dt, RED_LAYOUT.get(layout, "contiguous"),
                                "special")
                a = list(red_args)
                if layout == "zero_dim":  # dims of a 0-dim tensor: 0, -1 or none
                    a[0] = [0] if isinstance(a[0], list) and a[0] else (0 if isinstance(a[0], int)
                                                                        else a[0])
                kw = {k: getattr(ignis, v) for k, v in red_kw.items()}
                if pre is not None:
                    return (lambda t: op(pre(t), *a, **kw)), [x], {}
                return (lambda t: op(t, *a, **kw)), [x], {}
            specs.setdefault(name, []).append((suffix, build, LAYOUTS))
    return specs


# ---- casts ------------------------------------------------------------------------
CAST_DTYPES = ("float32", "float64", "bfloat16", "float16", "int64", "int32", "bool")


def _cast_specs():
    """_to_copy(x: dt, dtype=dst) for every destination; `dt` is the source."""
    op = PACKET["_to_copy"]
    specs = []
    for dst in CAST_DTYPES:
        def build(rng, layout, dt, dst=dst):
            # NaN/inf to an integer is undefined behaviour in C++ (and differs
            # between kernels): finite values for integer destinations.
            kind = "special" if dst in FLOATS + ("bool",) else "any"
            x = operands(rng, layout if layout != "scalar" else "contiguous", dt, [kind])[0]
            if dt in FLOATS and kind == "any":
                x = x * 7.3  # fractions and magnitudes beyond int8, within every int range
            d = getattr(ignis, dst)
            return (lambda t: op(t, dtype=d)), [x], {}
        specs.append((f"to_{dst}", build, LAYOUTS))
    return {"_to_copy": specs}


# ---- views feeding a pointwise op -------------------------------------------------
VIEW_SPECS_RAW = [
    # (view op, id, input shape, args)
    ("view", "flat", (2, 3, 4), ([-1],)),
    ("view", "split_dim", (2, 3, 4), ([2, -1],)),
    ("permute", "201", (2, 3, 4), ([2, 0, 1],)),
    ("expand", "lead", (2, 3, 4), ([5, -1, -1, -1],)),
    ("expand", "size1", (2, 1, 4), ([-1, 6, -1],)),
    ("slice.Tensor", "step", (2, 3, 4), (2, 1, 4, 2)),
    ("slice.Tensor", "neg", (2, 3, 4), (1, -2)),
    ("select.int", "mid", (2, 3, 4), (1, -1)),
    ("squeeze.dims", "d1", (2, 1, 4), ([1],)),
    ("unsqueeze", "d1", (2, 3, 4), (1,)),
    ("t", "2d", (3, 4), ()),
    ("transpose.int", "02", (2, 3, 4), (0, 2)),
]


def _view_specs():
    add = PACKET["add"]
    specs = {}
    for name, vid, shape, vargs in VIEW_SPECS_RAW:
        op = PACKET[name]
        for use in ("fused", "output"):
            def build(rng, layout, dt, op=op, shape=shape, vargs=vargs, use=use):
                if layout == "zero_size":
                    shape_ = tuple(0 if k == 0 else s for k, s in enumerate(shape))
                elif layout == "zero_dim":
                    shape_ = ()
                elif layout == "large":
                    shape_ = tuple(s * 1400 if k == len(shape) - 1 else s for k, s in enumerate(shape))
                else:
                    shape_ = shape
                lay = RED_LAYOUT.get(layout, "contiguous")
                x = make_tensor(rng, shape_, dt, lay, "special")
                if use == "fused":  # the view is an index remapping inside the kernel
                    return (lambda t: add(op(t, *vargs), 1)), [x], {}
                return (lambda t: (op(t, *vargs), add(t, 1))), [x], {}
            specs.setdefault(name, []).append((f"{vid}_{use}", build, LAYOUTS))

    # a chain of views, then a pointwise op
    def chain(t):
        v = PACKET["permute"](t, [2, 0, 1])
        v = PACKET["slice.Tensor"](v, 1, 1, None, 2)
        v = PACKET["unsqueeze"](PACKET["select.int"](v, 2, -1), 0)
        return add(PACKET["expand"](v, [3, -1, -1, -1]), 1)

    def build_chain(rng, layout, dt):
        shape = {"zero_size": (2, 0, 4), "zero_dim": (), "large": (2, 3, 5600)}.get(layout, (2, 3, 4))
        return chain, [make_tensor(rng, shape, dt, RED_LAYOUT.get(layout, "contiguous"), "special")], {}
    specs["permute"].append(("chain_fused", build_chain, LAYOUTS))
    return specs


# ---- core ops run as extern kernels: convolution, pooling, batch norm ----------
def _cnn_specs():
    """cnn_op_samples.SAMPLES in every dtype, on contiguous and transposed inputs."""
    import cnn_op_samples

    specs = {}
    for name, samples in cnn_op_samples.SAMPLES.items():
        op = PACKET[name]
        const = tuple(sorted(cnn_op_samples.CONSTANT_ARGS.get(name, ())))

        def call(*a, op=op, const=const):
            a = list(a)
            for k in const:
                if a[k] is not None:
                    a[k] = a[k].detach()
            return op(*a)
        for suffix, make_args in samples:
            def build(rng, layout, dt, make_args=make_args, call=call):
                def t(shape, kind="any"):
                    x = make_tensor(rng, shape, dt, layout)
                    return x.abs() + 1 if kind == "pos" and dt != "bool" else x
                return call, make_args(t), {}
            specs.setdefault(name, []).append((suffix, build, ("contiguous", "transposed")))
    return specs


CORE_SPECS = {}
CORE_SPECS.update(POINTWISE_SPECS)
CORE_SPECS.update(_reduction_specs())
CORE_SPECS.update(_cast_specs())
CORE_SPECS.update(_view_specs())
CORE_SPECS.update(_cnn_specs())


def _selected(case_id, op_variant, dt, layout, dtypes, full=FULL):
    """The default run's deterministic sample of the grid (FULL: everything)."""
    if full or layout == "contiguous":
        return True
    if dt == dtypes[_h(op_variant + "/" + layout) % len(dtypes)]:
        return True  # every layout at least once per op variant
    return _h(case_id) % 3 == 0


def _core_cases(full=FULL):
    cases, grad_cases = [], []
    for name, variants in CORE_SPECS.items():
        dtypes = CAST_DTYPES if name == "_to_copy" else DTYPES
        for suffix, _build, layouts in variants:
            ov = f"{name}-{suffix}" if suffix else name
            for layout in layouts:
                for dt in dtypes:
                    cid = f"{ov}-{dt}-{layout}"
                    if _selected(cid, ov, dt, layout, dtypes, full):
                        cases.append(_param(cid, name, suffix, dt, layout))
                if "float64" in dtypes:
                    gid = f"grad-{ov}-{layout}"
                    grad_cases.append(_param(gid, name, suffix, layout))
    return cases, grad_cases


CORE_CASES, CORE_GRAD_CASES = _core_cases()


def _spec(name, suffix):
    return next((b, ls) for s, b, ls in CORE_SPECS[name] if s == suffix)


def test_every_core_pointwise_op_has_a_spec():
    assert len(POINTWISE_CORE) > 50, POINTWISE_CORE
    missing = [n for n in POINTWISE_CORE if n not in CORE_SPECS]
    assert not missing, f"core pointwise ops without a spec: {missing}"
    for n in ("sum.dim_IntList", "prod.dim_int", "amax", "amin", "_to_copy", "where.self", "clamp",
              "view", "permute", "expand", "slice.Tensor", "select.int", "squeeze.dims",
              "unsqueeze", "eq", "lt"):
        assert n in CORE_SPECS, n


def test_known_bugs_name_real_cases():
    full = [c.id for group in _core_cases(full=True) for c in group]
    ids = set(full + [c.id for c in DECOMP_CASES + DECOMP_GRAD_CASES])
    stale = sorted(set(KNOWN_BUGS) - ids)
    assert not stale, f"KNOWN_BUGS entries that name no case: {stale}"


@pytest.mark.parametrize("name,suffix,dt,layout", CORE_CASES)
def test_core_op_compiled_matches_eager(name, suffix, dt, layout, compiles):
    build, _ = _spec(name, suffix)
    what = f"{name}[{suffix}] {dt} {layout}"
    rng = np.random.default_rng(_h(what))
    fn, args, kwargs = build(rng, layout, dt)
    want, want_exc = run(fn, *args, **kwargs)
    check_forward(fn, args, kwargs, want, want_exc, _Plain, what, compiles)


@pytest.mark.parametrize("name,suffix,layout", CORE_GRAD_CASES)
def test_core_op_compiled_gradients(name, suffix, layout):
    build, _ = _spec(name, suffix)
    what = f"{name}[{suffix}] float64 {layout} grad"
    rng = np.random.default_rng(_h(what))
    # finite values: gradients at NaN/inf inputs are NaN on both sides anyway,
    # and would hide the rest of the comparison
    _FINITE[0] = True
    try:
        fn, args, kwargs = build(rng, layout, "float64")
    finally:
        _FINITE[0] = False
    _, exc = run(fn, *args, **kwargs)
    if exc is not None:
        pytest.skip(f"eager raises: {type(exc).__name__}")
    check_gradients(fn, fn, args, kwargs, what)
