"""Seeing what capture did: IGNIS_LOGS / ignis._logging.set_logs artifacts
(graph_breaks, guards, recompiles, graph_code, bytecode), written to
sys.stderr as "[artifact] ..."; and ignis.compiler.explain."""
import operator
import os
import subprocess
import sys
import textwrap

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import requires_capture, tensor

import ignis
from ignis import _logging

pytestmark = requires_capture

HERE = os.path.basename(__file__)
PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")


@pytest.fixture(autouse=True)
def logs_off():
    ignis.compiler.reset()
    yield
    _logging.set_logs()
    ignis.compiler.reset()


def seed_func(x, y):
    z = x + y
    if z.sum() > 0:
        return z
    return ignis.relu(z) * 2


SEED_IF_LINE = seed_func.__code__.co_firstlineno + 2


def printing(x):
    y = x * 2
    print("hello")
    return y + 1


PRINT_LINE = printing.__code__.co_firstlineno + 2


# --- set_logs and IGNIS_LOGS parsing --------------------------------------------------------------
def test_set_logs_sets_mask():
    from ignis._C import _capture
    _logging.set_logs(graph_breaks=True, recompiles=True)
    assert _capture.log_mask() == _capture.LOG_GRAPH_BREAKS | _capture.LOG_RECOMPILES
    assert _logging.get_logs() == ["graph_breaks", "recompiles"]
    _logging.set_logs()
    assert _capture.log_mask() == 0


def test_set_logs_rejects_non_bool():
    with pytest.raises(TypeError):
        _logging.set_logs(guards="yes")


def test_parse_logs_setting():
    from ignis._C import _capture
    assert _logging.parse_logs_setting("") == 0
    assert _logging.parse_logs_setting("graph_breaks,+guards") == \
        _capture.LOG_GRAPH_BREAKS | _capture.LOG_GUARDS
    assert _logging.parse_logs_setting(" graph_code , bytecode,output_code") == \
        _capture.LOG_GRAPH_CODE | _capture.LOG_BYTECODE | _capture.LOG_OUTPUT_CODE


def test_parse_logs_unknown_name_lists_valid_ones():
    with pytest.raises(ValueError) as info:
        _logging.parse_logs_setting("graph_breaks,dynamo_everything")
    msg = str(info.value)
    assert "dynamo_everything" in msg
    for name in _logging.ARTIFACTS:
        assert name in msg


# --- artifacts ------------------------------------------------------------------------------------
def test_graph_breaks_log_names_file_line_and_reason(capsys):
    _logging.set_logs(graph_breaks=True)
    ignis.compile(printing)(tensor(ignis, 4))
    err = capsys.readouterr().err
    lines = err.splitlines()
    heads = [i for i, ln in enumerate(lines) if ln.startswith("[graph_breaks]")]
    assert heads, err
    head = lines[heads[0]]
    assert f"{HERE}:{PRINT_LINE}" in head or f"line {PRINT_LINE}" in head, err
    assert "Graph break" in head
    assert any("Reason:" in ln and "print" in ln for ln in lines[heads[0]:heads[0] + 3]), err


def test_graph_breaks_log_data_dependent(capsys):
    _logging.set_logs(graph_breaks=True)
    ignis.compile(seed_func)(tensor(ignis, 4), tensor(ignis, 4))
    err = capsys.readouterr().err
    assert "[graph_breaks]" in err
    assert f"{HERE}:{SEED_IF_LINE}" in err or f"line {SEED_IF_LINE}" in err, err


def test_no_output_when_logs_off(capsys):
    ignis.compile(printing)(tensor(ignis, 4))
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out == "hello\n"


def test_guards_log(capsys):
    _logging.set_logs(guards=True)

    def f(x, n):
        return x * n

    ignis.compile(f)(tensor(ignis, 4), 3)
    err = capsys.readouterr().err
    assert "[guards]" in err
    assert "TENSOR_MATCH" in err and "L['x']" in err, err
    assert "L['n']" in err, err


def test_recompiles_log_names_failed_guard(capsys):
    _logging.set_logs(recompiles=True)

    def f(x):
        return x + 1

    cf = ignis.compile(f)
    cf(tensor(ignis, 4))
    assert "[recompiles]" not in capsys.readouterr().err
    cf(tensor(ignis, 8))
    err = capsys.readouterr().err
    assert "[recompiles]" in err
    assert "L['x']" in err and "size" in err, err


def test_recompiles_log_dtype(capsys):
    _logging.set_logs(recompiles=True)

    def f(x):
        return x + 1

    cf = ignis.compile(f)
    cf(tensor(ignis, 4))
    cf(tensor(ignis, 4).double())
    err = capsys.readouterr().err
    assert "[recompiles]" in err and "dtype" in err, err


def test_graph_code_log(capsys):
    _logging.set_logs(graph_code=True)

    def func(x, y):
        z = x + y
        return ignis.relu(z) * 2

    ignis.compile(func)(tensor(ignis, 4), tensor(ignis, 4))
    err = capsys.readouterr().err
    assert "[graph_code]" in err
    assert "def forward(self, L_x_ : ignis.Tensor, L_y_ : ignis.Tensor):" in err, err
    assert "relu = ignis.relu(z)" in err
    assert "placeholder" in err and "l_x_" in err  # the table too


def test_bytecode_log(capsys):
    _logging.set_logs(bytecode=True)
    ignis.compile(printing)(tensor(ignis, 4))
    err = capsys.readouterr().err
    assert "[bytecode]" in err
    assert "LOAD_FAST" in err or "LOAD_GLOBAL" in err, err


def test_ignis_logs_env_in_subprocess():
    script = textwrap.dedent(f"""
        import ignis

        def f(x):
            y = x + 1
            print("in f")
            return y * 2

        out = ignis.compile(f)(ignis.ones(3))
        assert out.tolist() == [4.0, 4.0, 4.0]
    """)
    env = dict(os.environ, IGNIS_LOGS="graph_breaks", PYTHONPATH=os.path.abspath(PYTHON_DIR))
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120, cwd="/")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "in f\n"
    assert "[graph_breaks]" in r.stderr
    assert "<string>" in r.stderr and "print" in r.stderr, r.stderr


def test_ignis_logs_env_unknown_name_fails_import():
    env = dict(os.environ, IGNIS_LOGS="graph_breaks,nonsense",
               PYTHONPATH=os.path.abspath(PYTHON_DIR))
    r = subprocess.run([sys.executable, "-c", "import ignis"], env=env, capture_output=True,
                       text=True, timeout=120, cwd="/")
    assert r.returncode != 0
    assert "ValueError" in r.stderr and "nonsense" in r.stderr and "graph_breaks" in r.stderr


# --- explain --------------------------------------------------------------------------------------
def test_explain_seed_data_dependent():
    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    ex = ignis.compiler.explain(seed_func)(x, y)
    assert ex.graph_count == 2
    assert ex.graph_break_count == 1
    assert len(ex.graphs) == 2
    assert len(ex.break_reasons) == 1
    br = ex.break_reasons[0]
    assert br.lineno == SEED_IF_LINE and os.path.basename(br.filename) == HERE
    assert br.user_stack[0].lineno == SEED_IF_LINE
    # As Dynamo: op lists hold call_function targets (the seed's sum is a method).
    assert ex.ops_per_graph[0] == [operator.add, operator.gt]
    assert ex.ops_per_graph[1] == [ignis.relu, operator.mul]
    assert ex.op_count == 4


def test_explain_str_format():
    ex = ignis.compiler.explain(seed_func)(tensor(ignis, 4), tensor(ignis, 4, seed=1))
    text = str(ex)
    head = (f"Graph Count: 2\nGraph Break Count: 1\nOp Count: 4\nBreak Reasons:\n"
            f"  Break Reason 1:\n    Reason: ")
    assert text.startswith(head), text
    frame = f"      <FrameSummary file {seed_func.__code__.co_filename}, line {SEED_IF_LINE} " \
            f"in seed_func>\n"
    assert "    User Stack:\n" + frame in text, text
    assert "Ops per Graph:\n  Ops 1:\n    <built-in function add>\n    <built-in function gt>\n" \
        "  Ops 2:\n" in text, text


def test_explain_no_breaks():
    def f(x):
        return (x.sin() + 1) * 2

    ex = ignis.compiler.explain(f)(tensor(ignis, 4))
    assert (ex.graph_count, ex.graph_break_count, ex.break_reasons) == (1, 0, [])
    assert ex.op_count == 2  # add, mul (sin is a method call)
    assert "Break Reasons:\nOps per Graph:\n  Ops 1:\n" in str(ex)


def test_explain_two_prints():
    def f(x):
        a = x + 1
        print("one")
        b = a * 2
        print("two")
        return b - 1

    ex = ignis.compiler.explain(f)(tensor(ignis, 4))
    assert ex.graph_count == 3
    assert ex.graph_break_count == 2
    first = f.__code__.co_firstlineno
    assert [b.lineno for b in ex.break_reasons] == [first + 2, first + 4]
    assert all("print" in b.reason for b in ex.break_reasons)


def test_explain_nested_break_location():
    def f(x):
        return printing(x) - 1

    ex = ignis.compiler.explain(f)(tensor(ignis, 4))
    assert PRINT_LINE in [b.lineno for b in ex.break_reasons]


def test_explain_guards_and_times():
    def f(x, k):
        return x * k

    ex = ignis.compiler.explain(f)(tensor(ignis, 4), 2)
    assert any("L['x']" in g for g in ex.out_guards)
    assert isinstance(ex.compile_times, str)


def test_explain_kwargs_and_deprecated_form():
    def f(x, *, scale=1.0):
        return x * scale

    ex = ignis.compiler.explain(f)(tensor(ignis, 4), scale=3.0)
    assert ex.graph_count == 1
    ex2 = ignis.compiler.explain(f, tensor(ignis, 4), scale=3.0)
    assert ex2.graph_count == 1


def test_explain_leaves_caches_and_sink_clean():
    graphs = []

    def f(x):
        return x.exp() + 1

    ignis.compiler.explain(f)(tensor(ignis, 4))
    from capture_util import counting_backend
    ignis.compile(f, backend=counting_backend(graphs))(tensor(ignis, 4))
    assert len(graphs) == 1  # explain's entries were dropped


def test_compile_times_name_each_phase_with_each_run():
    """ignis._dynamo.utils.compile_times(), torch's: the backend's compile of
    each graph, AOT's traces, the compiler's phases (timed in C++), the
    symbolic AOT graphs made once and instantiated at a later size."""
    from ignis._dynamo import utils
    utils.reset_compile_times()

    def f(x, w):
        return (x @ w).relu().softmax(-1).sum(0) * 2.0

    from ignis._inductor import config
    g = ignis.compile(f)
    w = ignis.randn(8, 8)
    with config.patch(fx_graph_cache=False):  # (else an earlier test's graphs skip lowering)
        for n in (4, 5, 6, 6, 7, 7):  # 5 makes the batch symbolic; 6 and 7 compile on call 2
            g(ignis.randn(n, 8), w)
    times = utils.compilation_time_metrics
    for phase in ("backend compile of a captured graph", "AOT trace", "inductor lowering",
                  "inductor code generation",
                  "AOT symbolic graphs (traces at two more sizes, lined up)",
                  "AOT graphs instantiated at a size", "a size of a dynamic graph compiled"):
        assert phase in times and all(t >= 0 for t in times[phase]), (phase, times)
    assert len(times["backend compile of a captured graph"]) == 2  # static, then dynamic
    assert len(times["AOT graphs instantiated at a size"]) == 2  # sizes 6 and 7
    text = utils.compile_times()
    assert text.startswith("TorchDynamo compilation metrics:\nFunction"), text
    assert "inductor lowering" in text
    names, values = utils.compile_times(repr="csv", aggregate=True)
    assert names == list(times) and len(values) == len(names)
    lowering = values[names.index("inductor lowering")]
    assert abs(float(lowering) - sum(times["inductor lowering"])) < 1e-5
    with pytest.raises(ValueError, match="repr must be"):
        utils.compile_times(repr="json")
    utils.reset_compile_times()
    assert utils.compile_times(repr="csv") == ([], [])
