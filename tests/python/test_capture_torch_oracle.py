"""The expected numbers of the capture tests are Dynamo's: this file re-checks
them against torch.compile itself (torch 2.13, a counting backend,
dynamic=False) when torch is installed. Entries a table marks None (where
ignis may differ on purpose, see the comments there) are not compared."""
import logging

import pytest

from capture_util import counting_backend, torch_counts

import test_capture_basics
import test_capture_breaks
import test_capture_builtins
import test_capture_control
import test_capture_functions
import test_capture_guards
import test_capture_libraries
import test_capture_modules

TABLES = [test_capture_basics, test_capture_control, test_capture_builtins,
          test_capture_functions, test_capture_modules, test_capture_breaks,
          test_capture_libraries]
ALL_CASES = [(m, c) for m in TABLES for c in m.CASES]


@pytest.fixture(autouse=True)
def quiet_dynamo():
    logging.disable(logging.WARNING)  # Dynamo logs recompiles and limits
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("mod,c", ALL_CASES,
                         ids=[f"{m.__name__[13:]}-{c.name}" for m, c in ALL_CASES])
def test_dynamo_counts_agree(mod, c, capsys):
    pytest.importorskip("torch")
    want_graphs, want_breaks = mod.EXPECTED[c.name]
    graphs, breaks, repeat_ok = torch_counts(c)
    if want_graphs is not None:
        assert graphs == want_graphs
    if want_breaks is not None:
        assert breaks == want_breaks
    assert repeat_ok, "Dynamo recompiled on a repeated call"


@pytest.mark.parametrize("make", test_capture_guards.SCENARIOS, ids=lambda m: m.__name__)
def test_dynamo_recompile_counts_agree(make):
    torch = pytest.importorskip("torch")

    def compile_fn(fn, backend):
        return torch.compile(fn, backend=backend, dynamic=False)
    torch._dynamo.reset()
    try:
        n = test_capture_guards.run_scenario(torch, make, compile_fn)
    finally:
        torch._dynamo.reset()
    assert n == test_capture_guards.EXPECTED_GRAPHS[make.__name__]


def test_dynamo_cache_limit_agrees():
    torch = pytest.importorskip("torch")
    graphs = []

    def f(x):
        return x * 2 + 1

    torch._dynamo.reset()
    try:
        cf = torch.compile(f, backend=counting_backend(graphs), dynamic=False)
        for n in range(1, 11):
            cf(torch.ones(n))
    finally:
        torch._dynamo.reset()
    assert len(graphs) == 8  # Dynamo's recompile_limit default, as our cache_size_limit


def test_dynamo_fullgraph_message_names_file_and_line():
    torch = pytest.importorskip("torch")
    import os

    def f(x):
        y = x + 1
        print("hi")
        return y

    torch._dynamo.reset()
    with pytest.raises(RuntimeError) as info:
        torch.compile(f, fullgraph=True, backend="eager")(torch.ones(3))
    msg = str(info.value)
    line = f.__code__.co_firstlineno + 2
    assert "print" in msg
    assert f'{os.path.basename(__file__)}", line {line}' in msg
    torch._dynamo.reset()
