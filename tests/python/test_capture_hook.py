"""The frame hook, the per-code cache and the wrapper types of _C._capture.

STUB-DEPENDENT: these tests run against src/ignis/capture/tracer_stub.cpp,
a stand-in trace_frame that does not trace. It guards every argument
(tensors: dtype/device/sizes/strides/requires_grad/type; None/bool/int/
float/str: value; others: type) and grad mode, and calls
backend(fn, [args]); the backend's result is the entry's "graph", called
with the arguments, whose first output the call returns. A backend that
returns None makes a RunOriginal entry; functions named stub_skip* are
rejected by the stub (skip_code). The lead rewrites this file against the
real tracer.
"""
import gc
import sys
import warnings

import _checkout  # noqa: F401  (must precede `import ignis`)
import pytest

import ignis
from ignis._C import _capture as C


class Backend:
    """Counts compiles and calls; the "graph" runs fn eagerly."""

    def __init__(self, run_original=False):
        self.compiles = 0
        self.calls = 0
        self.run_original = run_original

    def __call__(self, fn, inputs):
        self.compiles += 1
        self.inputs = list(inputs)
        if self.run_original:
            return None

        def graph(*args):
            self.calls += 1
            return (fn(*args),)

        return graph


@pytest.fixture(autouse=True)
def _reset():
    C.reset()
    mask = C.log_mask()
    yield
    C.set_log_mask(mask)
    C.reset()


def compiled(fn, backend=None, limit=8):
    return C.CompiledFunction(fn, backend or Backend(), cache_size_limit=limit)


# --- installation ---------------------------------------------------------------


def test_hook_installed_only_while_a_compiled_call_runs():
    seen = []

    def f(x):
        seen.append(C.hook_installed())
        return x

    b = Backend(run_original=True)
    cf = compiled(f, b)
    assert not C.hook_installed()
    cf(1)
    assert seen == [True]
    assert not C.hook_installed()


def test_hook_uninstalled_after_exception():
    def f(x):
        raise ValueError("boom")

    cf = compiled(f, Backend(run_original=True))
    with pytest.raises(ValueError, match="boom"):
        cf(1)
    assert not C.hook_installed()


# --- cache hits and misses -------------------------------------------------------


def test_cache_hit_runs_the_plan():
    def f(x, y):
        return x + y

    b = Backend()
    cf = compiled(f, b)
    x, y = ignis.ones(3), ignis.ones(3)
    for _ in range(5):
        assert cf(x, y).tolist() == [2.0, 2.0, 2.0]
    assert b.compiles == 1
    assert b.calls == 5
    assert C.cache_entry_count(f.__code__) == 1


def test_run_original_entry_runs_the_bytecode():
    def f(x):
        return x * 2

    b = Backend(run_original=True)
    cf = compiled(f, b)
    assert cf(3) == 6
    assert cf(3) == 6
    assert b.compiles == 1
    assert C.cache_entry_count(f.__code__) == 1


def test_guard_failure_recompiles():
    def f(x):
        return x + 1

    b = Backend()
    cf = compiled(f, b)
    cf(ignis.ones(4))
    cf(ignis.ones(8))
    cf(ignis.ones(4))
    cf(ignis.ones(8))
    cf(ignis.ones(4, dtype=ignis.float64))
    assert b.compiles == 3
    assert C.cache_entry_count(f.__code__) == 3


def test_each_backend_has_its_own_entries():
    def f(x):
        return x + 1

    b1, b2 = Backend(), Backend()
    x = ignis.ones(2)
    compiled(f, b1)(x)
    compiled(f, b2)(x)
    compiled(f, b1)(x)
    assert (b1.compiles, b2.compiles) == (1, 1)
    assert C.cache_entry_count(f.__code__) == 2


def test_recompile_log_names_the_failed_guard(capsys):
    def f(x):
        return x + 1

    C.set_log_mask(C.LOG_RECOMPILES)
    cf = compiled(f)
    cf(ignis.ones(4))
    cf(ignis.ones(8))
    err = capsys.readouterr().err
    line = f.__code__.co_firstlineno
    assert f"[recompiles] Recompiling function f in {__file__}:{line}" in err
    assert "    triggered by the following guard failure(s):" in err
    assert "    - 0/0: tensor 'L['x']' size mismatch at index 0. expected 4, actual 8" in err


@pytest.mark.parametrize("first,second,reason", [
    (lambda: ignis.ones(2), lambda: ignis.ones(2, dtype=ignis.float64),
     "tensor 'L['x']' dtype mismatch. expected Float, actual Double"),
    (lambda: ignis.ones(2), lambda: ignis.ones(2).requires_grad_(),
     "tensor 'L['x']' requires_grad mismatch. expected requires_grad=0"),
    (lambda: ignis.ones(2, 3), lambda: ignis.ones(3, 2).t(),
     "tensor 'L['x']' stride mismatch at index 0. expected 3, actual 1"),
    (lambda: ignis.ones(2), lambda: ignis.ones(2, 1),
     "tensor 'L['x']' rank mismatch. expected 1, actual 2"),
    (lambda: 3, lambda: 4, "L['x'] == 3"),
    (lambda: "a", lambda: "b", "L['x'] == 'a'"),
    (lambda: None, lambda: 1, "L['x'] == None"),
    (lambda: [1], lambda: (1,), "type(L['x']) is <class 'list'>"),
])
def test_guard_failure_reasons(capsys, first, second, reason):
    def f(x):
        return 0

    C.set_log_mask(C.LOG_RECOMPILES)
    cf = compiled(f)
    cf(first())
    cf(second())
    assert f"- 0/0: {reason}" in capsys.readouterr().err


def test_grad_mode_is_guarded(capsys):
    def f(x):
        return x + 1

    C.set_log_mask(C.LOG_RECOMPILES)
    b = Backend()
    cf = compiled(f, b)
    x = ignis.ones(2)
    cf(x)
    with ignis.no_grad():
        cf(x)
    with ignis.no_grad():
        cf(ignis.ones(3))
    assert b.compiles == 3
    first, second = capsys.readouterr().err.split("Recompiling")[1:]
    assert "- 0/0: GLOBAL_STATE changed: grad_mode" in first
    # grad mode is checked before the tensors, so the grad-enabled entry
    # reports it although its size guard fails too
    assert "- 0/1: tensor 'L['x']' size mismatch at index 0. expected 2, actual 3" in second
    assert "- 0/0: GLOBAL_STATE changed: grad_mode" in second


def test_compile_ids_count_frames_and_recompiles(capsys):
    def f(x):
        return x

    def g(x):
        return x

    C.set_log_mask(C.LOG_RECOMPILES)
    cf, cg = compiled(f), compiled(g)
    cf(1)
    cg(1)
    cg(2)
    cg(3)
    err = capsys.readouterr().err
    # g is the second code compiled (frame 1); its entries are 1/0 and 1/1.
    assert "- 1/1: L['x'] == 2" in err
    assert "- 1/0: L['x'] == 1" in err


def test_cache_size_limit_warns_once_and_runs_eagerly(capsys):
    C.set_log_mask(C.LOG_RECOMPILES)

    def f(x):
        return x + 1

    b = Backend()
    cf = compiled(f, b, limit=2)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(1, 7):
            assert cf(ignis.ones(n)).tolist() == [2.0] * n
    assert b.compiles == 2
    msgs = [str(x.message) for x in w if "cache_size_limit" in str(x.message)]
    assert len(msgs) == 1
    line = f.__code__.co_firstlineno
    assert msgs[0] == (
        "ignis.compile hit cache_size_limit (2)\n"
        f"   function: 'f' ({__file__}:{line})\n"
        "   last reason: 0/1: tensor 'L['x']' size mismatch at index 0. expected 2, actual 3\n"
        'To log all recompilation reasons, use IGNIS_LOGS="recompiles".')
    assert w[0].category is UserWarning
    # as torch: the failing call is logged as a recompile before the warning
    err = capsys.readouterr().err
    assert err.count("Recompiling function f") == 2
    assert "- 0/0: tensor 'L['x']' size mismatch at index 0. expected 1, actual 3" in err
    # the entries stay: calls matching them still run their plans
    calls = b.calls
    assert cf(ignis.ones(1)).tolist() == [2.0]
    assert b.calls == calls + 1 and b.compiles == 2
    assert C.cache_entry_count(f.__code__) == 2


def test_reset_clears_entries_and_limit_state():
    def f(x):
        return x

    b = Backend()
    cf = compiled(f, b, limit=1)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cf(1)
        cf(2)
        C.reset()
        assert C.cache_entry_count(f.__code__) == 0
        cf(1)
        cf(2)
    assert b.compiles == 2
    assert len([x for x in w if "cache_size_limit" in str(x.message)]) == 2


def test_cache_size_limit_warning_as_error_propagates():
    def f(x):
        return x

    cf = compiled(f, Backend(), limit=1)
    cf(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="cache_size_limit"):
            cf(2)
    assert not C.hook_installed()


# --- frames the hook leaves alone ---------------------------------------------------


def test_generator_frames_are_not_captured():
    def gen(n):
        for i in range(n):
            yield i

    def f(n):
        return list(gen(n))

    b = Backend(run_original=True)
    cg = compiled(gen, b)
    assert list(cg(3)) == [0, 1, 2]
    assert b.compiles == 0
    assert compiled(f, b)(3) == [0, 1, 2]
    assert b.compiles == 1  # f only
    assert C.cache_entry_count(gen.__code__) == 0


def test_inner_user_frames_are_captured_when_run_eagerly():
    def inner(x):
        return x + 1

    def outer(x):
        return inner(x) * 2

    b = Backend(run_original=True)
    assert compiled(outer, b)(1) == 4
    assert b.compiles == 2
    assert C.cache_entry_count(inner.__code__) == 1


def test_stdlib_and_ignis_frames_are_skipped():
    import json
    import posixpath

    def f(x):
        posixpath.join("a", "b")
        json.dumps([1])
        repr(x)  # ignis.Tensor.__repr__ is Python code of the ignis package
        return x.tolist()

    b = Backend(run_original=True)
    assert compiled(f, b)(ignis.ones(2)) == [1.0, 1.0]
    assert b.compiles == 1
    for code in (posixpath.join.__code__, json.dumps.__code__, ignis.Tensor.__repr__.__code__,
                 ignis.Tensor.tolist.__code__):
        assert C.cache_entry_count(code) == 0


def test_mark_skip_runs_code_eagerly():
    def f(x):
        return x + 1

    C.mark_skip(f.__code__)
    b = Backend()
    assert compiled(f, b)(ignis.ones(2)).tolist() == [2.0, 2.0]
    assert b.compiles == 0
    C.reset()
    assert C.is_skipped(f.__code__)  # a user mark survives reset


def test_tracer_skip_code_marks_the_code():
    def stub_skip_me(x):
        return x + 1

    b = Backend()
    cf = compiled(stub_skip_me, b)
    assert cf(1) == 2
    assert C.is_skipped(stub_skip_me.__code__)
    assert cf(2) == 3
    assert b.compiles == 0


def test_disabled_function_turns_capture_off():
    def inner(x):
        return x + 1

    dinner = C.DisabledFunction(inner)

    def outer(x):
        return dinner(x) * 2

    b = Backend(run_original=True)
    assert compiled(outer, b)(1) == 4
    assert b.compiles == 1
    assert C.cache_entry_count(inner.__code__) == 0
    assert dinner.__wrapped__ is inner and dinner._fn is inner
    assert dinner.__name__ == "inner"
    assert "ignis.compiler.disable" in repr(dinner)


# --- the wrapper types ---------------------------------------------------------------------


def test_compiled_function_wraps_like_functools():
    def f(x):
        """doc of f"""
        return x

    cf = compiled(f)
    assert cf.__wrapped__ is f and cf._fn is f
    assert cf.__name__ == "f" and cf.__doc__ == "doc of f"
    assert cf.__qualname__ == f.__qualname__
    cf.extra = 1
    assert cf.__dict__["extra"] == 1
    assert "ignis.compile" in repr(cf)


def test_compiled_function_as_method_decorator():
    b = Backend()

    class M:
        def __init__(self, k):
            self.k = k

        @lambda fn: C.CompiledFunction(fn, b)
        def forward(self, x):
            return x * self.k

    m = M(3)
    assert m.forward(2) == 6
    bound = m.forward
    assert bound(5) == 15
    assert M.forward(m, 1) == 3
    assert isinstance(M.__dict__["forward"], C.CompiledFunction)
    assert b.compiles >= 1


def test_compiled_function_keyword_arguments():
    def f(x, *, scale=2):
        return x * scale

    b = Backend(run_original=True)
    cf = compiled(f, b)
    assert cf(3) == 6
    assert b.inputs == [3, 2]  # the frame's arguments: keyword-only defaults bound
    assert cf(3, scale=4) == 12
    assert b.inputs == [3, 4]


def test_disabled_function_as_method():
    class M:
        @C.DisabledFunction
        def f(self, x):
            return x + 1

    assert M().f(1) == 2


# --- errors and references --------------------------------------------------------------


def test_exception_in_plan_propagates():
    def f(x):
        if x.sum().item() > 100:
            raise RuntimeError("too big")
        return x

    cf = compiled(f, Backend())
    small, big = ignis.ones(2), ignis.ones(2) * 1000
    cf(small)
    with pytest.raises(RuntimeError, match="too big"):
        cf(big)  # same guards: the plan (graph) raises
    assert cf(small).tolist() == [1.0, 1.0]
    assert not C.hook_installed()


def test_backend_exception_propagates():
    def bad_backend(fn, inputs):
        raise TypeError("backend failed")

    def f(x):
        return x

    with pytest.raises(TypeError, match="backend failed"):
        C.CompiledFunction(f, bad_backend)(1)
    assert not C.hook_installed()


@pytest.mark.parametrize("run_original", [False, True])
def test_no_reference_leaks(run_original):
    def f(x, y):
        return x

    cf = compiled(f, Backend(run_original=run_original))
    x, y = ignis.ones(3), object()
    cf(x, y)
    gc.collect()
    before = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(f))
    for _ in range(1000):
        cf(x, y)
    gc.collect()
    assert (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(f)) == before


def test_no_leaks_when_the_plan_raises():
    def f(x, y):
        raise KeyError("k")

    class G:
        pass

    cf = compiled(f, Backend())
    x, y = G(), ignis.ones(1)
    with pytest.raises(KeyError):
        cf(x, y)
    before = (sys.getrefcount(x), sys.getrefcount(y))
    for _ in range(200):
        with pytest.raises(KeyError):
            cf(x, y)
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before


def test_recursion_through_the_hook():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    b = Backend(run_original=True)
    assert compiled(fact, b)(6) == 720
    # every n is a distinct value guard: one entry per call depth
    assert C.cache_entry_count(fact.__code__) == 6


def test_event_sink_and_log_mask_roundtrip():
    sink = []
    C.set_event_sink(sink)
    assert C.event_sink() is sink
    C.set_event_sink(None)
    assert C.event_sink() is None
    C.set_log_mask(C.LOG_GUARDS | C.LOG_GRAPH_BREAKS)
    assert C.log_mask() == C.LOG_GUARDS | C.LOG_GRAPH_BREAKS


def test_unevaluated_frames_at_data_stack_chunk_boundaries():
    # Called at every stack depth up to a few data-stack chunks (16 KiB each),
    # the frame the hook releases without evaluating it (3.12: by hand) is
    # sometimes the first frame of a fresh chunk.
    def f(x, pad0=None, pad1=None, pad2=None, pad3=None, pad4=None, pad5=None):
        return x

    b = Backend()
    cf = compiled(f, b)
    x = ignis.ones(1)

    def rec(n):
        if n == 0:
            return cf(x)
        return rec(n - 1)

    rec(0)
    before = sys.getrefcount(x)
    for depth in range(600):
        assert rec(depth) is x
    assert b.compiles == 1 and b.calls == 601
    assert sys.getrefcount(x) == before


# --- plan exits (the stub builds the plan that fn._stub_plan spells out) ----------


class StackBackend(Backend):
    """For a function with a _stub_plan, the "graph" is the function itself:
    it returns the tuple of graph outputs. Other functions (resume functions,
    functions called in the break) get RunOriginal entries."""

    def __init__(self):
        super().__init__(run_original=True)

    def __call__(self, fn, inputs):
        if not hasattr(fn, "_stub_plan"):
            return super().__call__(fn, inputs)
        self.compiles += 1

        def graph(*args):
            self.calls += 1
            return fn(*args)

        return graph


def with_plan(**plan):
    def deco(fn):
        fn._stub_plan = plan
        return fn
    return deco


def test_exit_call_with_null_slot_passes_stack_result_and_locals():
    def add(a, b):
        return a + b

    def resume(below, result, local):
        return ("resumed", below, result, local)

    @with_plan(layout=[0, None, 1, 2, 3, 4], exit="call", stack_below=1, num_locals=1,
               nargs=2, resume=resume)
    def f(x):
        return ("below", add, x, 10, "local")

    assert compiled(f, StackBackend())(1) == ("resumed", "below", 11, "local")


def test_exit_call_with_self_slot_and_kwnames():
    class Acc:
        def __init__(self):
            self.items = []

        def push(self, a, *, tag):
            self.items.append((a, tag))
            return len(self.items)

    acc = Acc()

    def resume(result):
        return result * 100

    @with_plan(layout=[0, 1, 2, 3], exit="call", nargs=2, kwnames=("tag",), resume=resume)
    def f(x):
        return (Acc.push, acc, x, "t")

    assert compiled(f, StackBackend())(7) == 100
    assert acc.items == [(7, "t")]


def test_exit_call_null_slots_below_are_not_passed():
    def resume(*args):
        return args

    @with_plan(layout=[None, 0, None, 1, 2], exit="call", stack_below=2, nargs=1,
               resume=resume)
    def f(x):
        return ("kept", abs, x)

    assert compiled(f, StackBackend())(-3) == ("kept", 3)


def test_exit_call_ex():
    def g(*args, **kwargs):
        return (args, kwargs)

    def resume(result, local):
        return (result, local)

    @with_plan(layout=[None, 0, 1, 2, 3], exit="callex", has_kwargs=1, num_locals=1,
               resume=resume)
    def f(x):
        return (g, [x, 2], {"k": 3}, "loc")

    assert compiled(f, StackBackend())(1) == (((1, 2), {"k": 3}), "loc")


@pytest.mark.parametrize("jump_if,cond,taken", [
    ("true", 1, True), ("true", 0, False), ("false", [], True), ("false", [1], False),
    ("none", None, True), ("none", 0, False), ("not_none", 0, True), ("not_none", None, False),
])
def test_exit_jump(jump_if, cond, taken):
    @with_plan(layout=[0, 1, 2], exit="jump", stack_below=1, num_locals=1, jump_if=jump_if,
               resume=lambda b, loc: ("fall", b, loc),
               resume_jump=lambda b, loc: ("jump", b, loc))
    def f(c):
        return ("b", c, "loc")

    assert compiled(f, StackBackend())(cond) == ("jump" if taken else "fall", "b", "loc")


def test_exit_jump_truthiness_error_propagates():
    class Bad:
        def __bool__(self):
            raise ValueError("no truth")

    @with_plan(layout=[0], exit="jump", resume=lambda: 1, resume_jump=lambda: 2)
    def f(c):
        return (c,)

    with pytest.raises(ValueError, match="no truth"):
        compiled(f, StackBackend())(Bad())


def test_exit_store_attr_and_store_subscr():
    class Obj:
        pass

    o, d = Obj(), {}

    @with_plan(layout=[0, 1], exit="store_attr", name="attr", resume=lambda: "done")
    def f(v):
        return (v, o)

    @with_plan(layout=[0, 1, 2], exit="store_subscr", resume=lambda: "done")
    def g(v):
        return (v, d, "key")

    assert compiled(f, StackBackend())(5) == "done" and o.attr == 5
    assert compiled(g, StackBackend())(6) == "done" and d == {"key": 6}


def test_break_instruction_errors_propagate():
    def boom(x):
        raise LookupError("in the break")

    @with_plan(layout=[None, 0, 1], exit="call", nargs=1, resume=lambda r: r)
    def f(x):
        return (boom, x)

    with pytest.raises(LookupError, match="in the break"):
        compiled(f, StackBackend())(1)
    assert not C.hook_installed()


def test_capture_stays_on_in_break_and_resume():
    def called_in_break(x):
        return x + 1

    def called_in_resume(x):
        return x * 2

    def resume(r):
        return called_in_resume(r)

    @with_plan(layout=[None, 0, 1], exit="call", nargs=1, resume=resume)
    def f(x):
        return (called_in_break, x)

    b = StackBackend()
    assert C.CompiledFunction(f, b)(1) == 4
    # f, called_in_break, resume and called_in_resume were all compiled
    assert b.compiles == 4
    for fn in (called_in_break, resume, called_in_resume):
        assert C.cache_entry_count(fn.__code__) == 1


def test_graph_runs_with_capture_off():
    def helper(x):
        return x

    @with_plan(layout=[0], exit="return")
    def f(x):
        return (helper(x),)

    b = StackBackend()
    compiled(f, b)(1)
    assert b.compiles == 1
    assert C.cache_entry_count(helper.__code__) == 0


def test_exit_plans_do_not_leak():
    def resume(below, result, local):
        return result

    @with_plan(layout=[0, None, 1, 2, 3], exit="call", stack_below=1, num_locals=1, nargs=1,
               resume=resume)
    def f(x, y):
        return (y, id, x, y)

    cf = compiled(f, StackBackend())
    x, y = object(), object()
    cf(x, y)
    before = (sys.getrefcount(x), sys.getrefcount(y))
    for _ in range(500):
        cf(x, y)
    assert (sys.getrefcount(x), sys.getrefcount(y)) == before


def test_describe_cache_lists_guards_most_recent_first():
    def f(x, n, s, o):
        return x

    cf = compiled(f)
    cf(ignis.ones(2, 3), 3, "a", [1])
    cf(ignis.ones(2), 3, "a", [1])
    entries = C.describe_cache(f.__code__)
    assert [cid for cid, _ in entries] == ["0/1", "0/0"]
    lines = entries[1][1]
    assert lines.pop(0) == "GLOBAL_STATE: grad_mode=True"  # global state first
    assert lines[0] == ("TENSOR_MATCH: L['x'] (ignis.Tensor, float32, cpu, size=[2, 3], "
                        "stride=[3, 1], requires_grad=False)")
    assert lines[1:] == ["EQUALS_MATCH: L['n'] == 3", "EQUALS_MATCH: L['s'] == 'a'",
                         "TYPE_MATCH: type(L['o']) is <class 'list'>"]


# --- guard programs (extra guards from fn._stub_guards) -----------------------------


SCALE = 2
CONFIG = {"mode": "fast", "sizes": [1, 2]}


class Holder:
    def __init__(self):
        self.child = None
        self.items = (1, "two")

    def key(self):
        return "k1"


def with_guards(*guards):
    def deco(fn):
        fn._stub_guards = list(guards)
        return fn
    return deco


def recompile_reasons(capsys):
    err = capsys.readouterr().err
    return [line.strip()[2:] for line in err.splitlines() if line.strip().startswith("- ")]


def test_registers_are_deduplicated():
    @with_guards(("global", "SCALE"), ("global", "SCALE"), ("local", 0, "h"), ("attr", 1, "items"),
                 ("attr", 1, "items"), ("item", 2, 1), ("item", 2, 1), ("call_method0", 1, "key"),
                 ("call_method0", 1, "key"), ("dict_item", 0, "x"))
    def f(h):
        return h

    compiled(f, Backend(run_original=True))(Holder())
    # the stub's own L['h'] is register 0
    assert f._stub_regs == [1, 1, 0, 2, 2, 3, 3, 4, 4, 5]


def test_global_guards():
    @with_guards(("global", "SCALE"), ("equals", 1, 2), ("global", "len"), ("id", 2, len))
    def f(x):
        return x * SCALE

    global SCALE
    b = Backend()
    cf = compiled(f, b)
    assert cf(1) == 2 and cf(1) == 2
    assert b.compiles == 1
    try:
        SCALE = 3
        assert cf(1) == 3
        assert b.compiles == 2
    finally:
        SCALE = 2


def test_global_guard_reason(capsys):
    @with_guards(("global", "SCALE"), ("equals", 1, 2))
    def f(x):
        return x

    global SCALE
    C.set_log_mask(C.LOG_RECOMPILES)
    cf = compiled(f)
    cf(1)
    try:
        SCALE = 5
        cf(1)
    finally:
        SCALE = 2
    assert recompile_reasons(capsys) == ["0/0: G['SCALE'] == 2"]


def test_builtins_are_found_through_globals():
    @with_guards(("global", "abs"), ("id", 1, abs))
    def f(x):
        return x

    b = Backend()
    cf = compiled(f, b)
    cf(1)
    cf(1)
    assert b.compiles == 1


def test_id_guard_reason(capsys):
    o1, o2 = object(), object()

    @with_guards(("attr", 0, "child"), ("id", 1, o1))
    def f(h):
        return h

    C.set_log_mask(C.LOG_RECOMPILES)
    cf = compiled(f)
    h = Holder()
    h.child = o1
    cf(h)
    h.child = o2
    cf(h)
    assert recompile_reasons(capsys) == [f"0/0: ___check_obj_id(L['h'].child, {id(o1)})"]


def test_nested_loads_and_checks(capsys):
    @with_guards(("global", "CONFIG"), ("dict_item", 1, "mode"), ("equals", 2, "fast"),
                 ("dict_item", 1, "sizes"), ("len", 3, 2), ("item", 3, -1), ("equals", 4, 2),
                 ("local", 0, "h"), ("attr", 0, "items"), ("item", 5, 1), ("equals", 6, "two"),
                 ("call_method0", 0, "key"), ("equals", 7, "k1"), ("attr", 0, "child"),
                 ("none", 8, True))
    def f(h):
        return h

    C.set_log_mask(C.LOG_RECOMPILES)
    b = Backend(run_original=True)
    cf = compiled(f, b)
    h = Holder()
    cf(h)
    cf(h)
    assert b.compiles == 1
    CONFIG["sizes"].append(3)
    try:
        cf(h)
    finally:
        CONFIG["sizes"].pop()
    h.child = 1
    cf(h)
    h.child = None
    h.key = lambda: "other"
    cf(h)
    assert recompile_reasons(capsys) == [
        "0/0: len(G['CONFIG']['sizes']) == 2",
        "0/1: L['h'].child is None", "0/0: L['h'].child is None",
        "0/2: L['h'].key() == 'k1'", "0/1: L['h'].key() == 'k1'", "0/0: L['h'].key() == 'k1'",
    ]


def test_missing_values_fail_without_raising(capsys):
    @with_guards(("attr", 0, "child"), ("none", 1, True))
    def f(h):
        return h

    C.set_log_mask(C.LOG_RECOMPILES)
    b = Backend(run_original=True)
    cf = compiled(f, b)
    cf(Holder())

    class Raising:
        def __getattr__(self, name):
            raise RuntimeError("no attrs here")

    assert isinstance(cf(Raising()), Raising)
    assert b.compiles == 2
    assert recompile_reasons(capsys) == ["0/0: type(L['h']) is <class 'test_capture_hook.Holder'>"]


def test_missing_value_reason(capsys):
    @with_guards(("attr", 0, "maybe"), ("none", 1, False))
    def f(h):
        return h

    class A:
        pass

    C.set_log_mask(C.LOG_RECOMPILES)
    cf = compiled(f, Backend(run_original=True))
    a = A()
    a.maybe = 1
    cf(a)
    del a.maybe
    cf(a)
    assert recompile_reasons(capsys) == ["0/0: missing value for L['h'].maybe"]


def test_closure_guard():
    k = 3

    @with_guards(("closure", 0, "k"), ("equals", 1, 3))
    def f(x):
        return x + k

    b = Backend()
    cf = compiled(f, b)
    assert cf(1) == 4
    k = 5
    assert cf(1) == 6
    assert b.compiles == 2


def test_default_dtype_guard():
    @with_guards(("default_dtype", 8))  # ScalarType Float32
    def f(x):
        return x

    b = Backend(run_original=True)
    cf = compiled(f, b)
    cf(1)
    old = ignis.get_default_dtype()
    try:
        ignis.set_default_dtype(ignis.float64)
        cf(1)
    finally:
        ignis.set_default_dtype(old)
    cf(1)
    assert b.compiles == 2


def test_equals_guard_values():
    b = Backend(run_original=True)

    def f(x):
        return x

    cf = compiled(f, b, limit=20)
    values = [0, 1, True, False, 1.5, float("nan"), "s", None, 2**80, -(2**80)]
    for v in values:
        cf(v)
    n = b.compiles
    assert n == len(values)
    for v in values:  # all hit, including nan and big ints
        cf(v)
    assert b.compiles == n


# --- environment and threads ---------------------------------------------------------


@pytest.mark.parametrize("value,names", [
    ("recompiles", ["LOG_RECOMPILES"]),
    ("graph_breaks,+guards", ["LOG_GRAPH_BREAKS", "LOG_GUARDS"]),
    (" bytecode , graph_code ,output_code", ["LOG_BYTECODE", "LOG_GRAPH_CODE", "LOG_OUTPUT_CODE"]),
    ("all", ["LOG_GRAPH_BREAKS", "LOG_GUARDS", "LOG_RECOMPILES", "LOG_GRAPH_CODE", "LOG_BYTECODE",
             "LOG_OUTPUT_CODE"]),
    ("+all", ["LOG_GRAPH_BREAKS", "LOG_GUARDS", "LOG_RECOMPILES", "LOG_GRAPH_CODE", "LOG_BYTECODE",
              "LOG_OUTPUT_CODE"]),
    ("", []),
    ("nonsense", []),
])
def test_ignis_logs_environment_variable(value, names):
    import os
    import subprocess

    env = dict(os.environ, IGNIS_LOGS=value, PYTHONPATH=str(_checkout.PYTHON_DIR))
    out = subprocess.run([sys.executable, "-c",
                          "from ignis._C import _capture as C; print(C.log_mask())"],
                         env=env, capture_output=True, text=True, check=True)
    want = 0
    for n in names:
        want |= getattr(C, n)
    assert int(out.stdout) == want


def test_compiled_calls_from_threads():
    import threading

    def f(x):
        return x + 1

    b = Backend()
    cf = compiled(f, b)
    errors = []

    def work():
        try:
            for _ in range(300):
                assert cf(ignis.ones(2)).tolist() == [2.0, 2.0]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert b.compiles == 1 and b.calls == 1200
    assert not C.hook_installed()


def test_config_is_per_thread():
    import threading

    started, release = threading.Event(), threading.Event()

    def f(x):
        started.set()
        release.wait(10)
        return x

    def plain(x):
        return x * 2

    b = Backend(run_original=True)
    t = threading.Thread(target=lambda: compiled(f, b)(1))
    t.start()
    started.wait(10)
    assert C.hook_installed()
    assert plain(2) == 4  # runs under the hook, but this thread has no config
    release.set()
    t.join()
    assert C.cache_entry_count(plain.__code__) == 0
    assert not C.hook_installed()


def test_guard_python_that_resets_the_caches():
    class P:
        reads = 0

        @property
        def v(self):
            P.reads += 1
            if P.reads == 3:
                C.reset()  # while the hook is checking this very entry
            return 1

    @with_guards(("attr", 0, "v"), ("equals", 1, 1))
    def f(p):
        return p

    b = Backend()
    cf = compiled(f, b)
    p = P()
    for _ in range(6):
        assert cf(p) is p
    assert b.compiles == 2


def test_compiled_callable_object():
    class Mul:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k

    m = Mul(4)
    b = Backend(run_original=True)
    cf = C.CompiledFunction(m, b)
    assert cf.__wrapped__ is m
    assert "k" not in cf.__dict__  # an object's state is not copied
    assert cf(2) == 8
    assert C.cache_entry_count(Mul.__call__.__code__) == 1


def test_reference_cycles_through_the_backend_are_collected():
    import weakref

    class CyclicBackend(Backend):
        pass

    def make():
        def f(x):
            return x

        b = CyclicBackend(run_original=True)
        cf = C.CompiledFunction(f, b)
        b.owner = cf  # backend -> CompiledFunction -> config -> backend
        cf(1)
        return weakref.ref(b)

    ref = make()
    C.reset()  # cache entries hold the config too
    gc.collect()
    assert ref() is None
