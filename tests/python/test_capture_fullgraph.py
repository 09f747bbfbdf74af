"""fullgraph=True: one graph or an error at the first graph break, naming
the reason and the user's file:line (Dynamo raises Unsupported, a
RuntimeError, whose message ends with the user frames, innermost last)."""
import inspect
import os

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (assert_same_value, close, counting_backend, deterministic,
                          requires_capture, tensor)

import ignis

pytestmark = requires_capture

HERE = os.path.basename(__file__)


def line_of(fn, text):
    """Line number of the first source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def helper_prints(t):
    t = t + 1
    print("helper")
    return t


def helper_ok(t):
    return t.tanh() * 2


def fullgraph_error(fn, *args):
    cf = ignis.compile(fn, fullgraph=True)
    with pytest.raises(RuntimeError) as info:
        cf(*args)
    ignis.compiler.reset()
    return str(info.value)


def assert_names_location(msg, fn, text):
    line = line_of(fn, text)
    assert HERE in msg, msg
    assert f"{HERE}:{line}" in msg or f'{HERE}", line {line}' in msg, \
        f"expected {HERE}:{line} in:\n{msg}"


def test_fullgraph_without_breaks_gives_one_graph():
    graphs = []

    def f(x, y):
        for i in range(3):
            x = x + helper_ok(y) * i
        return [x, {"k": y}]

    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    got = ignis.compile(f, fullgraph=True, backend=counting_backend(graphs))(x, y)
    assert_same_value(got, f(x, y))
    assert len(graphs) == 1
    ignis.compiler.reset()


def test_fullgraph_print_names_reason_and_line():
    def f(x):
        y = x + 1
        print("hi")
        return y

    msg = fullgraph_error(f, tensor(ignis, 4))
    assert "print" in msg
    assert_names_location(msg, f, 'print("hi")')


def test_fullgraph_item_names_reason_and_line():
    def f(x):
        return x.sum().item() + 1

    msg = fullgraph_error(f, tensor(ignis, 4))
    assert "item" in msg
    assert_names_location(msg, f, "item()")


def test_fullgraph_data_dependent_branch():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    msg = fullgraph_error(f, tensor(ignis, 4))
    assert "data-dependent" in msg.lower() or "jump" in msg.lower()
    assert_names_location(msg, f, "if x.sum() > 0")


def test_fullgraph_unsupported_call():
    def f(x):
        return x * os.getpid()

    msg = fullgraph_error(f, tensor(ignis, 4))
    assert "getpid" in msg
    assert_names_location(msg, f, "os.getpid()")


def test_fullgraph_nested_break_names_inner_line():
    def f(x):
        return helper_prints(x) * 2

    msg = fullgraph_error(f, tensor(ignis, 4))
    # Both frames, as Dynamo's "from user code" stack: the call and the print.
    assert_names_location(msg, f, "helper_prints(x)")
    assert_names_location(msg, helper_prints, 'print("helper")')


def test_fullgraph_module():
    class M(ignis.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = ignis.nn.Linear(4, 4)

        def forward(self, x):
            x = self.lin(x)
            print("in forward")
            return x

    m = deterministic(ignis, M())
    with pytest.raises(RuntimeError) as info:
        ignis.compile(m, fullgraph=True)(tensor(ignis, 2, 4))
    assert_names_location(str(info.value), M.forward, 'print("in forward")')
    ignis.compiler.reset()


def test_fullgraph_error_leaves_no_partial_state():
    def f(x):
        y = x * 3
        print("side")
        return y

    x = tensor(ignis, 4)
    with pytest.raises(RuntimeError):
        ignis.compile(f, fullgraph=True)(x)
    graphs = []
    got = ignis.compile(f, backend=counting_backend(graphs))(x)
    assert close(got, x * 3)
    assert len(graphs) == 1  # Dynamo: the graph before the print, none after
    ignis.compiler.reset()


def test_fullgraph_raises_on_every_call():
    def f(x):
        print("p")
        return x

    cf = ignis.compile(f, fullgraph=True)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            cf(tensor(ignis, 4))
    ignis.compiler.reset()


def test_fullgraph_error_is_compiler_unsupported():
    def f(x):
        print("no")
        return x

    with pytest.raises(ignis.compiler.Unsupported, match="call to print"):
        ignis.compile(f, fullgraph=True)(tensor(ignis, 4))
    assert issubclass(ignis.compiler.Unsupported, RuntimeError)
    ignis.compiler.reset()
