"""ignis.profiler / ignis.autograd.profiler: torch's API over the C++
profiler (docs/profiler.md). Events are checked for what they must hold
(names, nesting, shapes, counts per schedule step), never for timings."""

import json
import os

import pytest

import ignis
import ignis.nn as nn
from ignis import _C
from ignis.profiler import ProfilerAction, profile, record_function, schedule

try:
    import torch
except ImportError:  # the oracle is optional
    torch = None


def _model_step(lib, m, x):
    y = m(x).relu().sum()
    y.backward()
    return y


def _keys(events):
    return {e.key for e in events}


def test_ops_and_backward_nodes_are_recorded():
    m = nn.Linear(16, 8)
    x = ignis.randn(4, 16, requires_grad=True)
    with profile() as prof:
        _model_step(ignis, m, x)
    keys = _keys(prof.events())
    assert {"aten::linear", "aten::relu", "aten::sum"} <= keys
    backward = {k for k in keys if k.startswith("autograd::engine::evaluate_function: ")}
    assert any("Relu" in k for k in backward) and any("Sum" in k for k in backward)
    assert not _C._profiler_active()


@pytest.mark.skipif(torch is None, reason="torch (the oracle) is not installed")
def test_top_level_forward_ops_match_torch():
    def run(lib, prof_mod):
        lib.manual_seed(0)
        m = lib.nn.Linear(16, 8)
        x = lib.randn(4, 16)
        with prof_mod.profile() as prof:
            m(x).relu().sum()
        return {e.key for e in prof.events() if e.cpu_parent is None and e.key.startswith("aten::")}
    assert run(ignis, ignis.profiler) == run(torch, torch.profiler)


def test_nesting_and_self_time():
    m = nn.Linear(16, 8)
    x = ignis.randn(4, 16)
    with profile() as prof:
        m(x)
    events = prof.events()
    linear = next(e for e in events if e.key == "aten::linear")
    assert linear.cpu_children, "linear's parts nest inside it"
    for e in events:
        assert e.time_range.start <= e.time_range.end
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        for c in e.cpu_children:
            assert c.cpu_parent is e
            assert e.time_range.start <= c.time_range.start <= c.time_range.end <= e.time_range.end
    top = [e for e in events if e.cpu_parent is None]
    assert prof.events().self_cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in top))


def test_record_function_ranges_and_decorator():
    x = ignis.randn(8, 8)

    @record_function("decorated")
    def f(t):
        return t.exp()

    with profile() as prof:
        with record_function("outer"):
            x.sin()
            with record_function("inner"):
                x.cos()
        f(x)
    ev = prof.events()
    outer = next(e for e in ev if e.key == "outer")
    inner = next(e for e in ev if e.key == "inner")
    assert inner.cpu_parent is outer
    assert {c.key for c in outer.cpu_children} == {"aten::sin", "inner"}
    assert [c.key for c in inner.cpu_children] == ["aten::cos"]
    dec = next(e for e in ev if e.key == "decorated")
    assert [c.key for c in dec.cpu_children] == ["aten::exp"]
    # Outside a profile a range costs a call and records nothing.
    with record_function("nobody listens"):
        x.sin()
    with pytest.raises(TypeError, match="str name"):
        record_function(3)


def test_record_shapes_and_grouping():
    a = ignis.randn(4, 6)
    b = ignis.randn(2, 3)
    with profile(record_shapes=True) as prof:
        a.relu()
        a.relu()
        b.relu()
    groups = prof.key_averages(group_by_input_shape=True)
    relu = {str(g.input_shapes): g.count for g in groups if g.key == "aten::relu"}
    assert relu == {"[[4, 6]]": 2, "[[2, 3]]": 1}
    flat = prof.key_averages()
    (r,) = [g for g in flat if g.key == "aten::relu"]
    assert r.count == 3 and r.input_shapes is None
    table = groups.table(sort_by="count", row_limit=5)
    assert "Input Shapes" in table and "[[4, 6]]" in table


def test_table_text():
    with profile() as prof:
        ignis.randn(64, 64).softmax(-1)
    t = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=3)
    lines = t.splitlines()
    assert "Self CPU %" in lines[1] and "# of Calls" in lines[1]
    assert lines[-1].startswith("Self CPU time total: ")
    assert sum(1 for ln in lines if "aten::" in ln) <= 3
    with pytest.raises(ValueError, match="no such attribute"):
        prof.key_averages().table(sort_by="bogus")


def test_an_op_that_raises_closes_its_event():
    with profile() as prof:
        with pytest.raises(RuntimeError):
            ignis.randn(2, 3) @ ignis.randn(4, 5)
        ignis.randn(3).exp()
    ev = prof.events()
    mm = [e for e in ev if e.key in ("aten::matmul", "aten::mm")]
    assert mm and all(e.time_range.end >= e.time_range.start for e in mm)
    exp = next(e for e in ev if e.key == "aten::exp")
    assert exp.cpu_parent is None, "the failed op's event was closed"


def test_profilers_do_not_nest_and_stop_on_exception():
    with pytest.raises(ValueError):
        with profile():
            raise ValueError("boom")
    assert not _C._profiler_active()
    with profile():
        with pytest.raises(RuntimeError, match="already running"):
            with profile():
                pass
    assert not _C._profiler_active()


def test_schedule_and_on_trace_ready(tmp_path):
    sch = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [sch(i) for i in range(6)] == [
        ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
        ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE, ProfilerAction.NONE]
    x = ignis.randn(8)
    saved = []
    with profile(schedule=sch, on_trace_ready=lambda p: saved.append(p.events())) as prof:
        for _ in range(6):
            x.exp()
            prof.step()
    assert len(saved) == 1
    assert sum(1 for e in saved[0] if e.key == "aten::exp") == 2


def test_chrome_trace_and_tensorboard_handler(tmp_path):
    with profile(record_shapes=True) as prof:
        with record_function("block"):
            ignis.randn(5, 5).tanh()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = {e["name"] for e in trace["traceEvents"]}
    assert {"block", "aten::tanh"} <= names
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace["traceEvents"])
    tanh = next(e for e in trace["traceEvents"] if e["name"] == "aten::tanh")
    assert tanh["args"]["Input Dims"] == [[5, 5]]

    out = tmp_path / "tb"
    handler = ignis.profiler.tensorboard_trace_handler(str(out), worker_name="w")
    with profile(on_trace_ready=handler):
        ignis.randn(3).exp()
    files = os.listdir(out)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")


def test_legacy_autograd_profiler():
    x = ignis.randn(4, 4, requires_grad=True)
    with ignis.autograd.profiler.profile(record_shapes=True) as prof:
        (x * 2).sum().backward()
    assert {"aten::mul", "aten::sum"} <= _keys(prof.function_events)
    assert "Self CPU time total" in prof.key_averages().table()
    with ignis.autograd.profiler.profile(enabled=False) as off:
        x.exp()
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()


def test_unrecorded_options_warn():
    with pytest.warns(UserWarning, match="profile_memory"):
        with profile(profile_memory=True):
            pass


def test_compiled_graph_and_kernels_are_events():
    def f(x):
        return (x.sin() + 1).relu().sum(-1)

    g = ignis.compile(f)
    x = ignis.randn(32, 32)
    g(x)  # compile outside the profile
    with profile() as prof:
        out = g(x)
    assert ignis.allclose(out, f(x))
    ev = prof.events()
    graph = [e for e in ev if e.key == "CompiledGraph"]
    assert len(graph) == 1
    kernels = [c for c in graph[0].cpu_children if c.key.startswith("kernel_")]
    assert kernels, [c.key for c in graph[0].cpu_children]


def test_optimizer_steps_are_named_ranges():
    m = nn.Linear(4, 4)
    opt = ignis.optim.AdamW(m.parameters(), lr=0.1)
    with profile() as prof:
        m(ignis.randn(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
    keys = _keys(prof.events())
    assert {"Optimizer.step#AdamW.step", "Optimizer.zero_grad#AdamW.zero_grad"} <= keys
    step = next(e for e in prof.events() if e.key == "Optimizer.step#AdamW.step")
    assert step.cpu_children, "the step's ops nest inside it"
