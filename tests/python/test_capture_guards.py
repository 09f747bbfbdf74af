"""Guards and recompiles: each scenario calls one compiled function several
times with inputs that keep or break its guards (dtype, shape, strides,
requires_grad, Parameter type, int/float/bool/str argument values, None,
globals and their identity, closure values, object attributes, module
training flag, grad mode, default dtype, list lengths), and checks every
result against eager and the total number of graphs compiled (Dynamo's
numbers, dynamic=False). Then cache_size_limit and reset()."""
import warnings

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (assert_same_value, close, counting_backend, deterministic,
                          requires_capture, tensor)

import ignis

pytestmark = requires_capture

SCENARIOS = []


def scenario(make):
    SCENARIOS.append(make)
    return make


G = {"scale": 2.0}
SCALE = 2.0
FN = None


def set_global(name, value):
    globals()[name] = value


# Each scenario: make(T) -> (fn, [thunk, ...]); a thunk prepares state and
# returns the call's arguments.
@scenario
def dtype_change(T):
    def f(x):
        return x * 2
    return f, [lambda: (tensor(T, 4),), lambda: (tensor(T, 4).double(),), lambda: (tensor(T, 4),)]


@scenario
def shape_change(T):
    def f(x):
        return x.sum(0)
    return f, [lambda: (tensor(T, 4),), lambda: (tensor(T, 6),), lambda: (tensor(T, 2, 3),),
               lambda: (tensor(T, 4, seed=5),)]


@scenario
def stride_change(T):
    def f(x):
        return x + 1
    return f, [lambda: (tensor(T, 3, 3),), lambda: (tensor(T, 3, 3).t(),),
               lambda: (tensor(T, 3, 3),)]


@scenario
def requires_grad_change(T):
    def f(x):
        return (x * 3).sum()
    return f, [lambda: (tensor(T, 4),), lambda: (tensor(T, 4, requires_grad=True),),
               lambda: (tensor(T, 4, seed=2),)]


@scenario
def parameter_type_change(T):
    def f(x):
        return x * 2
    return f, [lambda: (tensor(T, 4),), lambda: (T.nn.Parameter(tensor(T, 4)),)]


@scenario
def int_arg_value(T):
    def f(x, n):
        return x * n
    return f, [lambda: (tensor(T, 4), 2), lambda: (tensor(T, 4), 2), lambda: (tensor(T, 4), 3)]


@scenario
def float_arg_value(T):
    def f(x, k):
        return x + k
    return f, [lambda: (tensor(T, 4), 0.5), lambda: (tensor(T, 4), 1.5)]


@scenario
def bool_arg_value(T):
    def f(x, flag):
        return x + 1 if flag else x - 1
    return f, [lambda: (tensor(T, 4), True), lambda: (tensor(T, 4), False),
               lambda: (tensor(T, 4), True)]


@scenario
def string_arg_value(T):
    def f(x, mode):
        return T.relu(x) if mode == "relu" else T.tanh(x)
    return f, [lambda: (tensor(T, 4), "relu"), lambda: (tensor(T, 4), "tanh"),
               lambda: (tensor(T, 4), "relu")]


@scenario
def none_vs_tensor_arg(T):
    def f(x, b=None):
        return x if b is None else x + b
    return f, [lambda: (tensor(T, 4), None), lambda: (tensor(T, 4), tensor(T, 4, seed=3)),
               lambda: (tensor(T, 4), None)]


@scenario
def int_arg_in_range_loop(T):
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x
    return f, [lambda: (tensor(T, 4), 1), lambda: (tensor(T, 4), 2), lambda: (tensor(T, 4), 1)]


@scenario
def global_float_changed(T):
    def f(x):
        return x * SCALE
    return f, [lambda: set_global("SCALE", 2.0) or (tensor(T, 4),),
               lambda: (tensor(T, 4),),
               lambda: set_global("SCALE", 3.0) or (tensor(T, 4),)]


@scenario
def global_dict_entry_changed(T):
    def f(x):
        return x * G["scale"]
    return f, [lambda: G.__setitem__("scale", 2.0) or (tensor(T, 4),),
               lambda: G.__setitem__("scale", 5.0) or (tensor(T, 4),)]


@scenario
def global_function_replaced(T):
    def f(x):
        return FN(x)
    return f, [lambda: set_global("FN", T.sin) or (tensor(T, 4),),
               lambda: set_global("FN", T.cos) or (tensor(T, 4),),
               lambda: set_global("FN", T.sin) or (tensor(T, 4),)]


@scenario
def closure_value_changed(T):
    box = {"k": 1}

    def f(x):
        return x * box["k"]

    def set_k(v):
        box["k"] = v
    return f, [lambda: (tensor(T, 4),), lambda: set_k(4) or (tensor(T, 4),)]


@scenario
def object_attribute_changed(T):
    class Cfg:
        eps = 0.1
    cfg = Cfg()

    def f(x):
        return x + cfg.eps

    def set_eps(v):
        cfg.eps = v
    return f, [lambda: (tensor(T, 4),), lambda: set_eps(0.2) or (tensor(T, 4),),
               lambda: (tensor(T, 4),)]


@scenario
def module_training_flag(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = T.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) * (2 if self.training else 1)
    m = deterministic(T, M())

    def f(x):
        return m(x)
    return f, [lambda: m.train() and (tensor(T, 2, 4),), lambda: m.eval() and (tensor(T, 2, 4),),
               lambda: m.train() and (tensor(T, 2, 4),)]


@scenario
def grad_mode_changed(T):
    def f(x):
        return x * 2
    state = {}

    def call(enabled):
        T.set_grad_enabled(enabled)
        return (tensor(T, 4, requires_grad=True),)

    def done():
        T.set_grad_enabled(True)
        return (tensor(T, 4, requires_grad=True),)
    return f, [lambda: call(True), lambda: call(False), done]


@scenario
def list_length_changed(T):
    def f(xs):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        return out
    return f, [lambda: ([tensor(T, 4), tensor(T, 4)],),
               lambda: ([tensor(T, 4), tensor(T, 4), tensor(T, 4)],),
               lambda: ([tensor(T, 4, seed=9), tensor(T, 4)],)]


@scenario
def tuple_of_ints_arg(T):
    def f(x, shape):
        return x.reshape(shape)
    return f, [lambda: (tensor(T, 6), (2, 3)), lambda: (tensor(T, 6), (3, 2)),
               lambda: (tensor(T, 6), (2, 3))]


@scenario
def same_guards_many_calls(T):
    def f(x, y):
        return x * y + 1
    return f, [lambda: (tensor(T, 4, seed=i), tensor(T, 4, seed=i + 1)) for i in range(5)]


# Dynamo's total graph counts over each scenario's calls (torch 2.13, dynamic=False).
EXPECTED_GRAPHS = {
    "dtype_change": 2,
    "shape_change": 3,
    "stride_change": 2,
    "requires_grad_change": 2,
    "parameter_type_change": 2,
    "int_arg_value": 2,
    "float_arg_value": 2,
    "bool_arg_value": 2,
    "string_arg_value": 2,
    # The first frame had no tensor op: Dynamo marks the code skipped, so the
    # later call with a tensor runs eagerly too.
    "none_vs_tensor_arg": 0,
    "int_arg_in_range_loop": 2,
    "global_float_changed": 2,
    "global_dict_entry_changed": 2,
    "global_function_replaced": 2,
    "closure_value_changed": 2,
    "object_attribute_changed": 2,
    "module_training_flag": 2,
    "grad_mode_changed": 2,
    "list_length_changed": 2,
    "tuple_of_ints_arg": 2,
    "same_guards_many_calls": 1,
}


def run_scenario(T, make, compile_fn):
    fn, thunks = make(T)
    eager_fn, eager_thunks = make(T)
    graphs = []
    compiled = compile_fn(fn, backend=counting_backend(graphs))
    try:
        for i, (thunk, eager_thunk) in enumerate(zip(thunks, eager_thunks)):
            got = compiled(*thunk())
            want = eager_fn(*eager_thunk())
            assert_same_value(got, want, f"call {i}")
    finally:
        T.set_grad_enabled(True)
    return len(graphs)


@pytest.mark.parametrize("make", SCENARIOS, ids=lambda m: m.__name__)
def test_recompiles(make):
    ignis.compiler.reset()
    try:
        n = run_scenario(ignis, make, ignis.compile)
    finally:
        ignis.compiler.reset()
    assert n == EXPECTED_GRAPHS[make.__name__], f"{n} graphs; Dynamo compiles " \
        f"{EXPECTED_GRAPHS[make.__name__]}"


def test_cache_entry_count_follows_recompiles():
    from ignis._C import _capture

    def f(x):
        return x + 1

    cf = ignis.compile(f, dynamic=False)  # a static entry per shape
    for n in (2, 3, 4, 3):
        cf(tensor(ignis, n))
    assert _capture.cache_entry_count(f.__code__) == 3
    ignis.compiler.reset()
    assert _capture.cache_entry_count(f.__code__) == 0


def test_reset_forces_recompile():
    graphs = []

    def f(x):
        return x.cos()

    cf = ignis.compile(f, backend=counting_backend(graphs))
    cf(tensor(ignis, 4))
    cf(tensor(ignis, 4))
    assert len(graphs) == 1
    ignis.compiler.reset()
    cf(tensor(ignis, 4))
    assert len(graphs) == 2
    ignis.compiler.reset()


# --- cache_size_limit ----------------------------------------------------------------------------
def test_cache_size_limit_warns_once_and_runs_eagerly():
    graphs = []

    def f(x):
        return x * 2 + 1

    assert ignis.compiler.config.cache_size_limit == 8
    cf = ignis.compile(f, backend=counting_backend(graphs), dynamic=False)  # as Dynamo's numbers
    for n in range(1, 9):
        cf(tensor(ignis, n))
    assert len(graphs) == 8
    with pytest.warns(UserWarning, match=r"L\['x'\]") as record:
        out = cf(tensor(ignis, 9))
    assert close(out, tensor(ignis, 9) * 2 + 1)
    assert len(record) == 1
    assert "cache_size_limit" in str(record[0].message) or "8" in str(record[0].message)
    assert len(graphs) == 8  # ran eagerly
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once only
        out = cf(tensor(ignis, 10))
    assert close(out, tensor(ignis, 10) * 2 + 1)
    assert len(graphs) == 8
    ignis.compiler.reset()


def test_cache_size_limit_is_read_at_compile_time():
    graphs = []

    def f(x, k):
        return x * k

    old = ignis.compiler.config.cache_size_limit
    ignis.compiler.config.cache_size_limit = 2
    try:
        # dynamic=False: each k is its own entry (automatic dynamic would make k a symbol)
        cf = ignis.compile(f, backend=counting_backend(graphs), dynamic=False)
    finally:
        ignis.compiler.config.cache_size_limit = old
    cf(tensor(ignis, 4), 1)
    cf(tensor(ignis, 4), 2)
    with pytest.warns(UserWarning, match=r"L\['k'\]"):
        assert close(cf(tensor(ignis, 4), 3), tensor(ignis, 4) * 3)
    assert len(graphs) == 2
    # Entries already cached still run compiled.
    assert close(cf(tensor(ignis, 4), 1), tensor(ignis, 4))
    assert len(graphs) == 2
    ignis.compiler.reset()


def test_cache_size_limit_validation():
    with pytest.raises(ValueError):
        ignis.compiler.config.cache_size_limit = -1
    with pytest.raises(AttributeError):
        ignis.compiler.config.no_such_setting = 1
    assert ignis.compiler.config.cache_size_limit == 8


def test_config_patch_as_torchs():
    # torch._dynamo.config.patch: keyword, dict and (name, value) forms, as a
    # context manager and a decorator; unknown names raise.
    config = ignis._dynamo.config
    with config.patch(cache_size_limit=3):
        assert config.cache_size_limit == 3
    assert config.cache_size_limit == 8

    @config.patch("cache_size_limit", 5)
    def read():
        return config.cache_size_limit
    assert read() == 5 and config.cache_size_limit == 8
    with config.patch({"capture_scalar_outputs": False}):
        assert config.capture_scalar_outputs is False
    assert config.capture_scalar_outputs is True
    with pytest.raises(AttributeError):
        config.patch(no_such_setting=1)
    with pytest.raises(ValueError):
        with config.patch(cache_size_limit=-1):
            pass
    assert config.cache_size_limit == 8


def test_globals_of_another_module_are_guarded():
    # An inlined helper from another module reads that module's globals: the
    # reads are guarded through its globals dict, so changing one recompiles.
    ns = {"SCALE": 2.0, "__name__": "helper_module"}
    exec("def helper(t):\n    return t * SCALE\n", ns)
    helper = ns["helper"]

    def f(x):
        return helper(x) + 1

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    x = tensor(ignis, 4)
    assert close(cf(x), x * 2.0 + 1)
    assert close(cf(x), x * 2.0 + 1)
    assert len(graphs) == 1
    ns["SCALE"] = 3.0
    assert close(cf(x), x * 3.0 + 1)
    assert len(graphs) == 2
    ignis.compiler.reset()


def test_isinstance_of_a_legacy_tensor_type_under_compile():
    # ignis.FloatTensor's metaclass checks a tensor's dtype and device: the tracer asks it
    # about the traced tensor (the guards fix its dtype), as eager does, not the class.
    def f(x):
        y = x * 2
        return (isinstance(x, ignis.FloatTensor), isinstance(y, ignis.LongTensor),
                isinstance(y.long(), ignis.LongTensor), isinstance(x, ignis.Tensor))
    c = ignis.compile(f)
    for dt in (ignis.float32, ignis.int64):
        x = ignis.ones(2, dtype=dt)
        assert c(x) == f(x)
