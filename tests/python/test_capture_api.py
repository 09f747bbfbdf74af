"""ignis.compile's interface (torch.compile's): decorator forms, argument
validation, backends by name and by callable (the seed's custom backend),
options, disable, functions, lambdas, methods and bound methods; and
ignis.compiler.{disable, is_compiling, config}."""
import contextlib
import functools
import io
import re
import warnings

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import close, counting_backend, requires_capture, tensor

import ignis
from ignis.compiler import InvalidBackend

pytestmark = requires_capture


@pytest.fixture(autouse=True)
def clean_caches():
    ignis.compiler.reset()
    yield
    ignis.compiler.reset()


def add_relu(x, y):
    """Docstring kept."""
    return ignis.relu(x + y)


# --- forms ----------------------------------------------------------------------------------------
def test_compile_function_keeps_metadata():
    cf = ignis.compile(add_relu)
    assert cf.__name__ == "add_relu"
    assert cf.__doc__ == "Docstring kept."
    assert cf.__wrapped__ is add_relu
    assert type(cf).__name__ == "CompiledFunction"
    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    assert close(cf(x, y), add_relu(x, y))


def test_bare_decorator():
    @ignis.compile
    def f(x):
        return x * 2

    x = tensor(ignis, 4)
    assert close(f(x), x * 2)


def test_decorator_with_arguments():
    graphs = []

    @ignis.compile(backend=counting_backend(graphs), fullgraph=True)
    def f(x):
        return x - 1

    x = tensor(ignis, 4)
    assert close(f(x), x - 1)
    assert len(graphs) == 1


def test_decorator_none_model_raises():
    with pytest.raises(RuntimeError, match="Model can't be None"):
        ignis.compile()(None)


def test_compile_lambda():
    graphs = []
    f = ignis.compile(lambda a: a.exp() * 3, backend=counting_backend(graphs))
    x = tensor(ignis, 4)
    assert close(f(x), x.exp() * 3)
    assert len(graphs) == 1


def test_compile_bound_method():
    graphs = []

    class Thing:
        k = 4.0

        def run(self, x):
            return x * self.k

    t = Thing()
    f = ignis.compile(t.run, backend=counting_backend(graphs))
    x = tensor(ignis, 4)
    assert close(f(x), x * 4)
    assert len(graphs) == 1


def test_compiled_function_as_method_descriptor():
    graphs = []

    class Thing:
        def __init__(self, k):
            self.k = k

        @ignis.compile(backend=counting_backend(graphs))
        def run(self, x):
            return x * self.k

    x = tensor(ignis, 4)
    assert close(Thing(2.0).run(x), x * 2)
    assert close(Thing(3.0).run(x), x * 3)
    assert len(graphs) == 2  # the float attribute is guarded


def test_compile_functools_partial():
    f = ignis.compile(functools.partial(ignis.mul, other=3))
    x = tensor(ignis, 4)
    assert close(f(x), x * 3)


def test_disable_true_returns_model_unchanged():
    assert ignis.compile(add_relu, disable=True) is add_relu
    m = ignis.nn.Linear(2, 2)
    assert ignis.compile(m, disable=True) is m
    assert ignis.compile(disable=True)(add_relu) is add_relu


def test_compile_same_function_twice_independent_backends():
    g1, g2 = [], []
    f1 = ignis.compile(add_relu, backend=counting_backend(g1))
    f2 = ignis.compile(add_relu, backend=counting_backend(g2))
    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    f1(x, y)
    f2(x, y)
    f1(x, y)
    assert (len(g1), len(g2)) == (1, 1)


def test_calling_original_after_compile_is_eager():
    graphs = []

    def f(x):
        return x + 1

    ignis.compile(f, backend=counting_backend(graphs))
    f(tensor(ignis, 4))
    assert graphs == []


# --- validation -----------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [None, "default", "reduce-overhead", "max-autotune",
                                  "max-autotune-no-cudagraphs"])
def test_known_modes(mode):
    f = ignis.compile(add_relu, mode=mode)
    x = tensor(ignis, 4)
    assert close(f(x, x), add_relu(x, x))


def test_unknown_mode_lists_valid_ones():
    with pytest.raises(RuntimeError) as info:
        ignis.compile(add_relu, mode="fastest")
    msg = str(info.value)
    assert "fastest" in msg
    for m in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        assert m in msg


def test_mode_and_options_together_raise():
    with pytest.raises(RuntimeError, match="Either mode or options"):
        ignis.compile(add_relu, mode="default", options={})


def test_options_must_be_dict():
    with pytest.raises(TypeError, match="dict"):
        ignis.compile(add_relu, options=[("a", 1)])


def test_options_reach_custom_backend():
    seen = {}

    def backend(gm, example_inputs, options=None):
        seen["options"] = options
        return gm.forward

    f = ignis.compile(add_relu, backend=backend, options={"trace.enabled": True})
    x = tensor(ignis, 4)
    f(x, x)
    assert seen["options"] == {"trace.enabled": True}


def test_unknown_backend_name():
    with pytest.raises(InvalidBackend, match="nonexistent"):
        ignis.compile(add_relu, backend="nonexistent")


def test_non_callable_backend():
    with pytest.raises(InvalidBackend):
        ignis.compile(add_relu, backend=42)


def test_non_callable_model():
    with pytest.raises(RuntimeError):
        ignis.compile(42)


def test_bad_dynamic_and_fullgraph():
    with pytest.raises(TypeError):
        ignis.compile(add_relu, dynamic="yes")
    with pytest.raises(TypeError):
        ignis.compile(add_relu, fullgraph=1)


def test_registered_backend_by_name():
    graphs = []

    @ignis.compiler.register_backend(name="capture_test_counting")
    def capture_test_counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = tensor(ignis, 4)
    out = ignis.compile(add_relu, backend="capture_test_counting")(x, x)
    assert close(out, add_relu(x, x))
    assert len(graphs) == 1


def test_eager_interpreter_backend():
    x = tensor(ignis, 4)
    out = ignis.compile(add_relu, backend="eager_interpreter")(x, x)
    assert close(out, add_relu(x, x))


def test_backend_gets_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append([(tuple(t.shape), t.dtype) for t in example_inputs])
        return gm.forward

    x = tensor(ignis, 2, 3)
    ignis.compile(add_relu, backend=backend)(x, x)
    assert seen == [[((2, 3), ignis.float32), ((2, 3), ignis.float32)]]


def test_backend_result_is_what_runs():
    def backend(gm, example_inputs):
        def run(*args):
            (out,) = gm.forward(*args)
            return (out * 0 + 7,)
        return run

    x = tensor(ignis, 4)
    out = ignis.compile(add_relu, backend=backend)(x, x)
    assert out.tolist() == [7.0] * 4


def test_backend_exception_reaches_user():
    def backend(gm, example_inputs):
        raise ValueError("backend exploded")

    with pytest.raises(Exception, match="backend exploded"):
        ignis.compile(add_relu, backend=backend)(tensor(ignis, 4), tensor(ignis, 4))


def test_default_backend_is_the_compiler():
    import inspect
    sig = inspect.signature(ignis.compile)
    assert sig.parameters["backend"].default == "inductor"  # torch.compile's default too
    assert "inductor" in ignis.compile.__doc__


# --- the seed's custom backend example ------------------------------------------------------------
def test_seed_custom_backend_example_runs():
    buf = io.StringIO()
    torch = ignis  # the example, unchanged apart from the import and the device

    def custom_backend(gm, example_inputs):
        print("FX Graph:")
        gm.graph.print_tabular()
        print("\nGenerated Python code:")
        print(gm.code)
        return gm.forward

    with contextlib.redirect_stdout(buf):
        @torch.compile(backend=custom_backend)
        def func(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            z = x + y
            return torch.relu(z) * 2

        x = torch.randn((4,), dtype=torch.float32, device="cpu")
        y = torch.randn((4,), dtype=torch.float32, device="cpu")
        o = func(x, y)
        x = torch.randn((4,), dtype=torch.float32, device="cpu")
        y = torch.randn((4,), dtype=torch.float32, device="cpu")
        o = func(x, y)
    text = buf.getvalue()
    assert text.count("FX Graph:") == 1  # the second call hits the cache
    assert close(o, ignis.relu(x + y) * 2)
    assert re.search(r"placeholder\s+l_x_\s+L_x_", text)
    assert "mul = relu * 2;  relu = None" in text


# --- ignis.compiler controls ----------------------------------------------------------------------
def test_is_compiling_false_outside():
    assert ignis.compiler.is_compiling() is False


def test_is_compiling_true_in_traced_code():
    # Traced code takes the branch for compiled code, in one graph (as under Dynamo).
    def f(x):
        return x * 2 if ignis.compiler.is_compiling() else x * 3

    x = tensor(ignis, 4)
    assert ignis.compiler.explain(f, x).graph_break_count == 0
    assert close(ignis.compile(f)(x), x * 2)
    assert close(f(x), x * 3)


# --- torch's _check family ---------------------------------------------------------------------------
CHECKS = [
    ("_check", (True,), None), ("_check", (False,), RuntimeError),
    ("_check_index", (False,), IndexError), ("_check_value", (False,), ValueError),
    ("_check_type", (False,), TypeError), ("_check_not_implemented", (False,), NotImplementedError),
    ("_check", (1,), TypeError), ("_check", (False, "a string"), TypeError),
    ("_check_is_size", (-1,), RuntimeError), ("_check_is_size", (2,), None),
]


@pytest.mark.parametrize("name,args,error", CHECKS)
def test_checks_raise_as_torchs(name, args, error):
    """ignis._check and its family: the same exceptions and messages as torch's."""
    def run(mod):
        try:
            getattr(mod, name)(*args)
        except Exception as e:  # noqa: BLE001
            return type(e), str(e).replace("PyTorch", "ignis")
        return None, None
    got = run(ignis)
    assert got[0] is error
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch's _check_is_size
        assert got == run(torch)


def test_a_check_message_is_built_only_when_it_fails():
    built = []
    ignis._check(True, lambda: built.append(1) or "never")
    assert not built
    with pytest.raises(RuntimeError, match="rows: 2"):
        ignis._check(2 > 3, lambda: f"rows: {2}")
    with pytest.raises(KeyError):
        ignis._check_with(KeyError, False)
    with pytest.raises(RuntimeError, match="size"):
        ignis._check_is_size(3, lambda: "size", max=2)
    with pytest.raises(RuntimeError):
        ignis._check_tensor_all(ignis.tensor([True, False]))
    ignis._check_tensor_all(ignis.tensor([True, True]))


def test_checks_on_sizes_are_guards_in_one_graph():
    """A check that holds leaves nothing in the graph (no break), its
    condition on sizes a guard; a size that fails it recompiles, breaks at
    the check and raises eagerly's error with its message."""
    def f(x):
        ignis._check(x.shape[0] > 2, lambda: "need more than 2 rows")
        ignis._check_is_size(x.shape[1], max=16)
        return x * 2

    x = tensor(ignis, 4, 3)
    assert ignis.compiler.explain(f, x).graph_break_count == 0
    cf = ignis.compile(f, dynamic=True)
    assert close(cf(x), x * 2)
    assert close(cf(tensor(ignis, 7, 3)), tensor(ignis, 7, 3) * 2)
    with pytest.raises(RuntimeError, match="need more than 2 rows"):
        cf(tensor(ignis, 2, 3))


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_check_on_a_data_dependent_count_is_a_runtime_check(backend):
    """Note [Runtime checks of data-dependent counts]: the check is a node of
    the one graph (as torch's runtime asserts), raising when the count fails
    it; the relation narrows the count's range, so the branch on it after
    the check adds no break."""
    def f(x, m):
        y = x[m]
        ignis._check_value(y.shape[0] > 0, lambda: "nothing selected")
        if y.shape[0] == 0:  # settled by the check: never taken
            return y.sum()
        return y.sum() / y.shape[0]

    x = ignis.tensor([1.0, -2.0, 3.0, -4.0])
    explained = ignis.compiler.explain(f, x, x > 0)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    cf = ignis.compile(f, backend=backend)
    assert close(cf(x, x > 0), f(x, x > 0))
    assert close(cf(x, x > -3), f(x, x > -3))
    with pytest.raises(ValueError, match=r"ignis._check_value\(\) at .*: expected 0 < u0, "
                                          r"where u0 is the count of True elements"):
        cf(x, x > 10)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_other_relations_of_counts_are_runtime_checks_too(backend):
    """A relation other than a bound on one count (u0 != 2; u0 <= u1 between
    two masks' counts) is a runtime check of the relation in the one graph
    (ignis._checks._runtime_check_relation), raising the check's exception
    with the relation and what each count is; it narrows nothing."""
    def f(x, m):
        y = x[m]
        ignis._check(y.shape[0] != 2, lambda: "two selected")
        return y.sum()

    def g(x, m, k):
        y, z = x[m], x[k]
        ignis._check_index(y.shape[0] <= z.shape[0], lambda: "more y than z")
        return y.sum() - z.sum()

    x = ignis.tensor([1.0, -2.0, 3.0, -4.0])
    for fn, args in ((f, (x, x > -3)), (g, (x, x > 0, x > -3))):
        explained = ignis.compiler.explain(fn, *args)
        assert explained.graph_break_count == 0 and explained.graph_count == 1
    cf, cg = ignis.compile(f, backend=backend), ignis.compile(g, backend=backend)
    assert close(cf(x, x > -3), f(x, x > -3))
    assert close(cg(x, x > 0, x > -3), g(x, x > 0, x > -3))
    with pytest.raises(RuntimeError, match=r"ignis._check\(\) at .*: expected u0 != 2, where "
                                            r"u0 is the count of True elements"):
        cf(x, x > 0)
    with pytest.raises(IndexError, match=r"expected u0 <= u1, where u0 is the count .*; u1 is "):
        cg(x, x > -3, x > 0)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_a_relation_of_a_count_and_a_symbolic_input_size_is_a_runtime_check(backend):
    """A relation of a count and an input's size that is itself symbolic
    (mark_dynamic) is a runtime check too: the size is the graph's int for
    it, so one graph serves every length and the check holds each call's
    own values."""
    def f(x, m):
        y = x[m]
        ignis._check(y.shape[0] != x.shape[0], lambda: "all selected")
        return y.sum()

    x = ignis.tensor([1.0, -2.0, 3.0, -4.0])
    m = x > -3
    for t in (x, m):
        ignis._dynamo.mark_dynamic(t, 0)
    explained = ignis.compiler.explain(f, x, m)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    assert "_runtime_check_relation" in explained.graphs[0].code
    cf = ignis.compile(f, backend=backend)
    assert close(cf(x, m), f(x, m))
    with pytest.raises(RuntimeError, match=r"ignis._check\(\) at .*: expected "
                                            r"L\['x'\].size\(\)\[0\] != u0, where u0 is"):
        cf(x, x > -5)
    longer = ignis.tensor([5.0, 1.0, -2.0, 3.0, -4.0, 0.5])
    assert close(cf(longer, longer > 0), f(longer, longer > 0))
    with pytest.raises(RuntimeError, match="where u0 is the count of True elements"):
        cf(longer, longer > -9)


def test_disable_decorator_forms():
    def f(x):
        return x + 1

    d1 = ignis.compiler.disable(f)
    d2 = ignis.compiler.disable()(f)
    x = tensor(ignis, 4)
    assert close(d1(x), x + 1) and close(d2(x), x + 1)
    assert d1.__name__ == "f"
    with pytest.raises(TypeError):
        ignis.compiler.disable(3)


def test_reset_is_idempotent():
    ignis.compiler.reset()
    ignis.compiler.reset()


def test_compiler_exports():
    for name in ("reset", "disable", "explain", "config", "is_compiling", "register_backend",
                 "lookup_backend", "list_backends"):
        assert hasattr(ignis.compiler, name)
    assert "eager" in ignis.compiler.list_backends()


def test_dynamic_true_compiles_symbolic_shapes_without_a_warning():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cf = ignis.compile(lambda x: x * 2, dynamic=True, backend=backend)
        for n in (3, 5):
            x = ignis.ones(n)
            assert ignis.equal(cf(x), x * 2)
    assert len(graphs) == 1  # one graph for every size (docs/dynamic_shapes.md)
    ignis.compiler.reset()
