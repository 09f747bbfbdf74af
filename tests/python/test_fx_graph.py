"""ignis.fx: graph building, printing (against torch.fx), interpreting,
passes, structural hashing, symbolic_trace and the backend registry."""
import math
import operator
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ignis
import ignis.fx as ifx
from ignis.compiler import list_backends, lookup_backend, register_backend

try:
    import torch
    import torch.fx as tfx
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def normalise(text):
    """Same text modulo library name and object addresses. An address's length
    changes a table's column widths, so table rows are compared cell by cell
    (column alignment is checked against tabulate_simple on real output)."""
    text = re.sub(r"0x[0-9a-f]+", "0xADDR", text).replace("torch.", "ignis.")
    lines = []
    for line in text.split("\n"):
        if re.fullmatch(r"[- ]+", line) and "--" in line:
            line = "<rule>"
        elif "  " in line and not line.startswith(" "):
            line = "|".join(re.split(r"  +", line.rstrip()))
        lines.append(line)
    return "\n".join(lines)


def tabulate_simple(rows, headers):
    """An independent implementation of tabulate's "simple" format (what
    torch.fx's print_tabular uses; tabulate itself is not installed here)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max([len(h) + 2] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(items):
        return "  ".join(s.ljust(w) for s, w in zip(items, widths)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in cells])


def torch_tabular(g):
    return tabulate_simple([[n.op, n.name, n.target, n.args, n.kwargs] for n in g.nodes],
                           ["opcode", "name", "target", "args", "kwargs"])


# --- the seed example ------------------------------------------------------------------------
SEED_TABLE = """\
opcode         name    target                                                   args          kwargs
-------------  ------  -------------------------------------------------------  ------------  --------
placeholder    l_x_    L_x_                                                     ()            {}
placeholder    l_y_    L_y_                                                     ()            {}
call_function  z       <built-in function add>                                  (l_x_, l_y_)  {}
call_function  relu    <built-in method relu of type object at 0x7f8b4ed8b4a0>  (z,)          {}
call_function  mul     <built-in function mul>                                  (relu, 2)     {}
output         output  output                                                   ((mul,),)     {}"""

SEED_CODE = """\



def forward(self, L_x_ : torch.Tensor, L_y_ : torch.Tensor):
    l_x_ = L_x_
    l_y_ = L_y_
    z = l_x_ + l_y_;  l_x_ = l_y_ = None
    relu = torch.relu(z);  z = None
    mul = relu * 2;  relu = None
    return (mul,)
    """


def build_seed(fx, lib):
    g = fx.Graph()
    x = g.create_node("placeholder", "L_x_", name="l_x_", type_expr=lib.Tensor)
    y = g.create_node("placeholder", "L_y_", name="l_y_", type_expr=lib.Tensor)
    z = g.call_function(operator.add, (x, y))
    z.name = "z"
    r = g.call_function(lib.relu, (z,))
    m = g.call_function(operator.mul, (r, 2))
    g.output((m,))
    return g


def test_seed_table_and_code(capsys):
    g = build_seed(ifx, ignis)
    g.print_tabular()
    printed = capsys.readouterr().out
    assert normalise(printed) == normalise(SEED_TABLE) + "\n"
    gm = ifx.GraphModule(None, g)
    assert normalise(gm.code) == normalise(SEED_CODE)
    # The alias the caller imports ignis under is used verbatim.
    assert g.python_code(module_alias="torch").src == SEED_CODE


@needs_torch
def test_seed_matches_torch_fx():
    tg, ig = build_seed(tfx, torch), build_seed(ifx, ignis)
    assert normalise(ig._tabular()) == normalise(torch_tabular(tg))
    assert normalise(ig.python_code().src) == normalise(tg.python_code("self").src)
    assert normalise(str(ig)) == normalise(str(tg))


def test_seed_runs():
    g = build_seed(ifx, ignis)
    gm = ifx.GraphModule(None, g)
    a, b = np.random.randn(4).astype(np.float32), np.random.randn(4).astype(np.float32)
    expect = np.maximum(a + b, 0) * 2
    x, y = ignis.from_numpy(a), ignis.from_numpy(b)
    for out in (gm(x, y), ifx.Interpreter(gm).run(x, y), g._interpret([x, y])):
        assert isinstance(out, tuple) and len(out) == 1
        np.testing.assert_allclose(out[0].numpy(), expect, rtol=1e-6)


# --- printing: more graphs against torch.fx -------------------------------------------------------
def build_mixed(fx, lib):
    """Shadowed builtins, defaults, unused inputs, kwargs, constants of every
    kind, slices, in-place operators, getattr, attribute paths, non-ignis
    functions, a dict/list/tuple output."""
    g = fx.Graph()
    a = g.placeholder("sum")
    b = g.placeholder("x", default_value=3)
    g.placeholder("unused")
    s = g.call_method("sum", (a,), {"dim": 1, "keepdim": True})
    c = g.call_function(lib.full_like, (s, 2), {"dtype": lib.float64})
    d = g.call_function(operator.getitem, (c, (slice(None, 2), Ellipsis, None)))
    e = g.call_function(operator.iadd, (d, 1.5))
    f = g.get_attr("w.0.x")
    h = g.call_function(getattr, (a, "shape"))
    i = g.call_function(math.sqrt, (b,))
    j = g.call_method("view", (a, 2, -1))
    k = g.call_function(operator.neg, (j,))
    k2 = g.call_function(lib.add, (k, "a'b", None, True, -0.0, 1e-5, 1e16, float("inf")))
    k3 = g.call_function(lib.add, (k2, 0.1, 123456.789, -2.5e-7, [1, (2,)], {"q": "\n"}))
    k4 = g.call_method("to", (k3,), {"device": lib.device("cpu")})
    g.output({"a": [e, f], "b": (s,), "c": h, "d": i, "e": k4})
    return g


def build_multi_output(fx, lib):
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    a = g.call_function(operator.add, (x, y))
    b = g.call_function(operator.sub, (x, 1))
    b2 = g.call_function(operator.truediv, (2.0, b))
    c = g.call_method("relu", (a,))
    c2 = g.call_function(lib.exp, (c,))
    g.output([c2, (b2, a), None, 7])
    return g


def build_names(fx, lib):
    g = fx.Graph()
    x = g.placeholder("input")
    y = g.placeholder("Tensor_1")
    a = g.call_function(lib.add, (x, y))
    a1 = g.call_function(lib.add, (a, y))
    a1.name = "add_1"
    a2 = g.call_function(lib.add, (a1, y))
    a3 = g.create_node("call_function", lib.add, (a2, 1), name="123 bad-name")
    a4 = g.create_node("call_method", "__matmul__", (a3, a3))
    a5 = g.create_node("call_function", lib.mul, (a4, 2), name="add_1")
    a6 = g.create_node("call_function", lib.mul, (a5, 2), name="camelCaseName")
    g.output(a6)
    return g


@needs_torch
@pytest.mark.parametrize("builder", [build_mixed, build_multi_output, build_names])
def test_printing_matches_torch_fx(builder):
    tg, ig = builder(tfx, torch), builder(ifx, ignis)
    assert [n.name for n in ig.nodes] == [n.name for n in tg.nodes]
    assert normalise(ig._tabular()) == normalise(torch_tabular(tg))
    assert normalise(ig.python_code().src) == normalise(tg.python_code("self").src)
    assert normalise(str(ig)) == normalise(str(tg))


def test_code_of_mixed_graph_runs():
    g = build_multi_output(ifx, ignis)
    gm = ifx.GraphModule(None, g)
    xa = np.random.rand(2, 3).astype(np.float32) + 2
    ya = np.random.rand(2, 3).astype(np.float32)
    x, y = ignis.from_numpy(xa), ignis.from_numpy(ya)
    for out in (gm(x, y), ifx.Interpreter(gm).run(x, y), g._interpret([x, y])):
        assert isinstance(out, list) and len(out) == 4 and out[2] is None and out[3] == 7
        np.testing.assert_allclose(out[0].numpy(), np.exp(np.maximum(xa + ya, 0)), rtol=1e-5)
        np.testing.assert_allclose(out[1][0].numpy(), 2.0 / (xa - 1), rtol=1e-5)
        np.testing.assert_allclose(out[1][1].numpy(), xa + ya, rtol=1e-6)


# --- node API -------------------------------------------------------------------------------------
def test_node_api():
    g = ifx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ignis.exp, (x,))
    b = g.call_method("add", (a, x), {"alpha": 2})
    out = g.output(b)
    assert x.op == "placeholder" and a.op == "call_function" and out.op == "output"
    assert a.target is ignis.exp and b.target == "add" and x.target == "x"
    assert b.args == (a, x) and b.kwargs == {"alpha": 2}
    assert b.args[0] is a                      # one wrapper per node
    assert list(x.users) == [a, b] and list(a.users) == [b]
    assert b.all_input_nodes == [a, x]
    assert x.next is a and a.prev is x and x.prev is None and out.next is None
    assert a.graph is g and repr(a) == "exp"
    b.args = (x, x)
    assert list(a.users) == [] and list(x.users) == [a, b]
    b.update_arg(0, a)
    b.update_kwarg("alpha", 3)
    assert b.args == (a, x) and b.kwargs == {"alpha": 3}
    with g.inserting_before(b):
        c = g.call_function(ignis.neg, (a,))
    assert [n.name for n in g.nodes] == ["x", "exp", "neg", "add", "output"]
    b.replace_input_with(a, c)
    assert b.args == (c, x)
    with g.inserting_after(c):
        d = g.call_function(ignis.sin, (c,))
    users = c.replace_all_uses_with(d)
    assert users == [b, d] or set(users) == {b, d}
    d.update_arg(0, c)  # replace_all_uses_with also rewired d itself
    assert [n.name for n in g.nodes] == ["x", "exp", "neg", "sin", "add", "output"]
    g.lint()
    with pytest.raises(RuntimeError, match="still had 1 users"):
        g.erase_node(a)


def test_graph_copy_and_format_node():
    src = build_seed(ifx, ignis)
    dst = ifx.Graph()
    a = dst.placeholder("a")
    b = dst.placeholder("b")
    nodes = src.nodes
    val_map = {nodes[0]: a, nodes[1]: b}
    out = dst.graph_copy(src, val_map)
    dst.output(out)
    dst.lint()
    assert [n.name for n in dst.nodes] == ["a", "b", "z", "relu", "mul", "output"]
    assert val_map[nodes[2]].args == (a, b)
    assert dst.nodes[2].format_node() == (
        "%z : [num_users=1] = call_function[target=operator.add](args = (%a, %b), kwargs = {})")
    assert dst.nodes[-1].format_node() == "return (mul,)"
    np.testing.assert_allclose(ifx.GraphModule(None, dst)(ignis.ones(2), ignis.ones(2))[0].numpy(),
                               [4.0, 4.0])
    # The C++ copy (whole graph, placeholders included).
    whole = ifx.Graph()
    whole.output(whole._copy_from(src))
    assert normalise(whole.python_code().src) == normalise(src.python_code().src)


def test_create_node_errors():
    g = ifx.Graph()
    x = g.placeholder("x")
    with pytest.raises(TypeError, match="must be callable"):
        g.call_function("relu", (x,))
    with pytest.raises(TypeError, match="must be a string"):
        g.call_method(ignis.relu, (x,))
    with pytest.raises(ValueError, match="unknown opcode"):
        g.create_node("call_lambda", "f")


def test_meta():
    g = ifx.Graph()
    x = g.placeholder("x")
    t = ignis.zeros(2, 3).t()
    assert dict(x.meta) == {}
    x.meta["val"] = t
    tm = x.meta["tensor_meta"]
    assert tuple(tm.shape) == (3, 2) and tm.stride == (1, 3) and tm.dtype is ignis.float32
    assert str(tm.device) == "cpu"
    x.meta["source_loc"] = "model.py:12"
    x.meta["stack_trace"] = "File model.py, line 12"
    x.meta["custom"] = [1, 2]
    assert x.meta["source_loc"] == "model.py:12" and x.stack_trace == "File model.py, line 12"
    assert set(x.meta) == {"tensor_meta", "source_loc", "stack_trace", "val", "custom"}
    del x.meta["tensor_meta"]
    assert "tensor_meta" not in x.meta and x.meta["custom"] == [1, 2]
    y = g.call_function(ignis.unbind, (x,))
    y.meta["tensor_meta"] = tuple(ignis.zeros(2).unbind(0))
    assert len(y.meta["tensor_meta"]) == 2


# --- interpreting ---------------------------------------------------------------------------------
class Doubler:
    def __init__(self):
        self.w = ignis.ones(3)

    def forward(self, x):
        return x * 2 + self.w

    def __call__(self, x):
        return self.forward(x)


def test_interpreters_agree_with_eager():
    g = ifx.Graph()
    x = g.placeholder("x")
    y = g.placeholder("y")
    g.placeholder("unused")
    w = g.get_attr("w")
    sub = g.call_module("sub", (x,))
    a = g.call_method("add", (sub, y), {"alpha": 2})
    b = g.call_function(operator.mul, (a, w))
    c = g.call_method("view", (b, 3, 1))
    cond = g.get_attr("cond")
    d = g.call_function(ignis.where, (cond, c, 0.0))
    parts = g.call_function(ignis.unbind, (d,), {"dim": 1})
    e = g.call_function(operator.getitem, (parts, 0))
    f = g.call_function(ignis.add, (e, 1))
    g.output((f, [e, {"k": w}], 3.5))
    root = type("Root", (), {})()
    root.w = ignis.tensor([1.0, 2.0, 3.0])
    root.sub = Doubler()
    root.cond = ignis.tensor([True])
    gm = ifx.GraphModule(root, g)
    xa = np.array([1.0, -2.0, 3.0], np.float32)
    ya = np.array([0.5, 0.25, -1.0], np.float32)
    x_, y_ = ignis.from_numpy(xa), ignis.from_numpy(ya)
    e_ref = ((xa * 2 + 1 + 2 * ya) * np.array([1, 2, 3], np.float32))
    for out in (gm(x_, y_, None), ifx.Interpreter(gm).run(x_, y_, None),
                g._interpret([x_, y_, None], gm)):
        np.testing.assert_allclose(out[0].numpy(), e_ref + 1, rtol=1e-6)
        np.testing.assert_allclose(out[1][0].numpy(), e_ref, rtol=1e-6)
        assert out[1][1]["k"] is gm.w and out[2] == 3.5


def test_interpreter_overrides_and_errors():
    class Counting(ifx.Interpreter):
        def __init__(self, gm):
            super().__init__(gm)
            self.calls = []

        def call_function(self, target, args, kwargs):
            self.calls.append(target)
            return super().call_function(target, args, kwargs)

    gm = ifx.GraphModule(None, build_seed(ifx, ignis))
    it = Counting(gm)
    it.run(ignis.ones(2), ignis.ones(2))
    assert it.calls == [operator.add, ignis.relu, operator.mul]
    with pytest.raises(RuntimeError, match="Expected positional argument"):
        ifx.Interpreter(gm).run(ignis.ones(2))
    with pytest.raises(TypeError, match="inputs given"):
        gm.graph._interpret([ignis.ones(2)])


def test_errors_propagate_through_the_cpp_interpreter():
    def boom(t):
        raise ValueError("boom from Python")

    g = ifx.Graph()
    x = g.placeholder("x")
    y = g.call_function(boom, (x,))
    g.output(y)
    with pytest.raises(ValueError, match="boom from Python"):
        g._interpret([ignis.ones(1)])
    g2 = ifx.Graph()
    a = g2.placeholder("a")
    g2.output(g2.call_method("add", (a, ignis.ones(3))))
    with pytest.raises(RuntimeError):
        g2._interpret([ignis.ones(2)])          # shape mismatch inside the op
    with pytest.raises(AttributeError, match="'str' object has no attribute 'add'"):
        g2._interpret(["not a tensor"])         # not a tensor: runs as a Python method call
    with pytest.raises(TypeError, match="add"):
        g2._interpret([ignis.ones(3)], None)    # fine
        g2.nodes[1].kwargs = {"alpha": "x"}
        g2._interpret([ignis.ones(3)])          # no overload fits the kwargs


def test_op_overload_targets():
    """Targets that are dispatcher ops (what AOT tracing produces) run in C++."""
    add = ignis._C._op_overload("add")
    assert repr(add) == "ignis.ops.add" and "Tensor other" in add.schema
    g = ifx.Graph()
    x = g.placeholder("x")
    a = g.call_function(add, (x, x), {"alpha": 3})
    g.output(a)
    assert a.name == "add" and a.target == add
    out = g._interpret([ignis.ones(2)])
    np.testing.assert_array_equal(out.numpy(), [4.0, 4.0])
    gm = ifx.GraphModule(None, g)
    assert "add = ignis.ops.add.default(x, x, alpha = 3)" in gm.code
    assert ignis.ops.add.default == add and ignis.ops.sum.dim_IntList.schema.startswith("sum.dim")
    np.testing.assert_array_equal(gm(ignis.ones(2)).numpy(), [4.0, 4.0])
    with pytest.raises(TypeError, match="add"):
        add(ignis.ones(2), "x")


# --- passes ---------------------------------------------------------------------------------------
def test_dead_code_elimination():
    g = ifx.Graph()
    x = g.placeholder("x")
    g.placeholder("unused")
    a = g.call_function(ignis.exp, (x,))
    g.call_function(ignis.neg, (a,))            # dead chain: neg <- exp? exp is used below
    dead = g.call_function(ignis.sin, (x,))
    g.call_function(ignis.cos, (dead,))          # dead chain sin -> cos
    g.call_method("add_", (x, 1))                # in-place: kept
    g.call_function(operator.setitem, (x, 0, 1.0))  # side effect: kept
    g.output(a)
    assert g.eliminate_dead_code()
    assert [n.name for n in g.nodes] == ["x", "unused", "exp", "add_", "setitem", "output"]
    assert not g.eliminate_dead_code()
    g.lint()


def test_common_subexpression_elimination():
    g = ifx.Graph()
    x = g.placeholder("x")
    a1 = g.call_function(operator.add, (x, 1))
    a2 = g.call_function(operator.add, (x, 1))
    b1 = g.call_function(ignis.exp, (a1,))
    b2 = g.call_function(ignis.exp, (a2,))          # equal once a2 -> a1
    c = g.call_function(operator.add, (x, 1.0))     # 1.0 is not 1
    m1 = g.call_method("view", (b1, -1))
    m2 = g.call_method("view", (b2, -1))
    r1 = g.call_function(ignis.randn_like, (x,))
    r2 = g.call_function(ignis.randn_like, (x,))    # random: never merged
    i1 = g.call_method("add_", (x, 1))
    i2 = g.call_method("add_", (x, 1))              # in-place: never merged
    g.output((m1, m2, c, r1, r2, i1, i2))
    assert g.eliminate_common_subexpressions() == 3
    assert [n.name for n in g.nodes] == ["x", "add", "exp", "add_2", "view", "randn_like",
                                         "randn_like_1", "add_", "add__1", "output"]
    assert g.nodes[-1].args[0][:2] == (g.nodes[4], g.nodes[4])
    g.lint()
    x_ = ignis.zeros(3)
    out = ifx.GraphModule(None, g)(x_)
    np.testing.assert_allclose(out[0].numpy(), np.full(3, math.e), rtol=1e-6)


def test_lint_reports_the_bad_node():
    g = ifx.Graph()
    x = g.placeholder("x")
    a = g.call_function(ignis.exp, (x,))
    b = g.call_function(ignis.neg, (a,))
    g.output(b)
    g.lint()
    x.prepend(b)  # b now runs before the node it uses
    with pytest.raises(RuntimeError, match="Argument 'a'|Argument 'x'|'exp' of Node 'neg'"):
        g.lint()
    with pytest.raises(RuntimeError, match="used before it is defined"):
        g._interpret([ignis.ones(1)])

    g2 = ifx.Graph()
    y = g2.placeholder("y")
    g2.output(y)
    other = ifx.Graph()
    z = other.placeholder("z")
    o = other.call_function(ignis.exp, (z,))
    other.output(o)
    o.args = (y,)
    with pytest.raises(RuntimeError, match="Argument 'y' of Node 'exp' does not belong"):
        other.lint()

    g3 = ifx.Graph()
    w = g3.placeholder("w")
    g3.output(w)
    g3.call_function(ignis.exp, (w,))
    with pytest.raises(RuntimeError, match="Node 'exp' comes after the output node"):
        g3.lint()

    g4 = ifx.Graph()
    g4.placeholder("w")
    with pytest.raises(RuntimeError, match="no output node"):
        g4.lint()


def build_for_hash(names, const=2.0, op=ignis.mul, dtype=ignis.float32, order_swap=False):
    g = ifx.Graph()
    x = g.placeholder(names[0])
    y = g.placeholder(names[1])
    x.meta["val"] = ignis.zeros(2, 3, dtype=dtype)
    y.meta["val"] = ignis.zeros(2, 3)
    a = g.call_function(op, (x, const))
    b = g.call_method("add", (a, y), {"alpha": 1}) if not order_swap else \
        g.call_method("add", (y, a), {"alpha": 1})
    b.name = names[2]
    b.meta["source_loc"] = f"{names[0]}.py:1"
    g.output((b, [a, None], {"k": slice(1, None)}))
    return g


def test_structural_hash():
    h = build_for_hash(["x", "y", "b"]).structural_hash()
    assert re.fullmatch(r"[0-9a-f]{32}", h)
    assert build_for_hash(["p", "q", "renamed"]).structural_hash() == h   # names don't count
    assert build_for_hash(["x", "y", "b"], const=3.0).structural_hash() != h
    assert build_for_hash(["x", "y", "b"], const=2).structural_hash() != h  # int vs float
    assert build_for_hash(["x", "y", "b"], op=ignis.add).structural_hash() != h
    assert build_for_hash(["x", "y", "b"], op=operator.mul).structural_hash() != h
    assert build_for_hash(["x", "y", "b"], dtype=ignis.float64).structural_hash() != h
    assert build_for_hash(["x", "y", "b"], order_swap=True).structural_hash() != h
    g = build_for_hash(["x", "y", "b"])
    g.nodes[0].meta["val"] = ignis.zeros(2, 3).t().contiguous().t()  # same shape, other strides
    assert g.structural_hash() != h
    # Stable across processes (no addresses, no per-process hashing).
    code = textwrap.dedent("""
        import sys; sys.path[:0] = %r
        from test_fx_graph import build_for_hash
        print(build_for_hash(["x", "y", "b"]).structural_hash())
    """ % ([sys.path[0]] + [p for p in sys.path if p.endswith("python")],))
    import os
    env = dict(os.environ, PYTHONHASHSEED="123")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(__file__))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == h


def test_hash_tells_python_functions_apart():
    def graph_with(fn):
        g = ifx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(fn, (x,)))
        return g.structural_hash()
    f1, f2, f3 = (lambda t: t + 1), (lambda t: t + 2), (lambda t: t + 1)
    assert graph_with(f1) != graph_with(f2)
    assert graph_with(f1) == graph_with(f3)
    assert graph_with(operator.neg) != graph_with(operator.pos)
    assert graph_with(ignis.exp) != graph_with(ignis.sin)


def test_hash_of_tensor_constants():
    def graph_with(t):
        g = ifx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(ignis.add, (x, t)))
        return g
    a = graph_with(ignis.tensor([1.0, 2.0])).structural_hash()
    assert graph_with(ignis.tensor([1.0, 2.0])).structural_hash() == a
    assert graph_with(ignis.tensor([1.0, 3.0])).structural_hash() != a
    assert graph_with(ignis.tensor([[1.0, 2.0]])).structural_hash() != a


# --- symbolic_trace -------------------------------------------------------------------------------
def traced_fn(x, y):
    z = x + y
    return ignis.relu(z) * 2


class Block:
    def __init__(self):
        self.weight = ignis.tensor([1.0, 2.0, 3.0])
        self.scale = 0.5

    def forward(self, x):
        h = x.mul(self.weight).exp() - 1
        return {"out": self.helper(h).narrow(0, 0, 2), "shape": h.shape}

    def helper(self, h):
        return ignis.neg(h) / self.scale


def test_symbolic_trace_function():
    gm = ifx.symbolic_trace(traced_fn)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "placeholder", "call_function",
                                             "call_function", "call_function", "output"]
    assert "relu = ignis.relu(add);  add = None" in gm.code
    x, y = ignis.tensor([1.0, -3.0]), ignis.tensor([0.5, 0.5])
    np.testing.assert_allclose(gm(x, y).numpy(), traced_fn(x, y).numpy())
    assert ignis.relu is ignis.ops.relu   # patches are undone


TRACE_SOURCES = [
    """
def f(x, y):
    z = x + y
    w = lib.relu(z) * 2
    v = w.view(-1).exp()
    return (v[0], w - 1.5)
""",
    """
def f(x, y, unused, scale: float = 2.0):
    a = lib.add(x, y, alpha=2)
    b = a.transpose(0, 1).contiguous()
    c = lib.where(b > 0, b, -b) * scale
    d = lib.clamp(c, min=0.5)
    e = (d @ x) // 3 % 2 ** a
    return {"c": c, "s": [a.shape, b.size(0)], "e": (e, d.unsqueeze(-1).view(-1))}
""",
]


@needs_torch
@pytest.mark.parametrize("src", TRACE_SOURCES)
def test_symbolic_trace_matches_torch_fx(src):
    fns = {}
    for name, lib in (("torch", torch), ("ignis", ignis)):
        ns = {"lib": lib}
        exec(src, ns)
        fns[name] = ns["f"]
    tg = tfx.symbolic_trace(fns["torch"])
    ig = ifx.symbolic_trace(fns["ignis"])
    assert normalise(ig.code) == normalise(tg.code)
    assert normalise(ig.graph._tabular()) == normalise(torch_tabular(tg.graph))
    assert normalise(str(ig.graph)) == normalise(str(tg.graph))


def test_symbolic_trace_object():
    blk = Block()
    gm = ifx.symbolic_trace(blk)
    ops = [(n.op, n.target if isinstance(n.target, str) else n.target.__name__)
           for n in gm.graph.nodes]
    assert ("get_attr", "weight") in ops and ("call_method", "mul") in ops
    assert ("call_function", "getattr") in ops
    x = ignis.tensor([0.0, 1.0, 2.0])
    out, ref = gm(x), blk.forward(x)
    np.testing.assert_allclose(out["out"].numpy(), ref["out"].numpy(), rtol=1e-6)
    assert tuple(out["shape"]) == (3,)
    assert gm.weight is blk.weight


def test_symbolic_trace_records_source_locations():
    gm = ifx.symbolic_trace(traced_fn)
    relu = [n for n in gm.graph.nodes if n.name == "relu"][0]
    file, line = relu.meta["source_loc"].rsplit(":", 1)
    assert file == __file__
    assert "ignis.relu(z)" in open(file).read().splitlines()[int(line) - 1]


def test_record_tensor_meta():
    g = build_seed(ifx, ignis)
    x = ignis.zeros(2, 3).t()
    g._interpret([x, ignis.ones(3, 2)], None, True)
    tm = {n.name: n.meta.get("tensor_meta") for n in g.nodes}
    assert tm["l_x_"].stride == (1, 3) and tuple(tm["l_x_"].shape) == (3, 2)
    assert tm["relu"].dtype is ignis.float32 and tuple(tm["mul"].shape) == (3, 2)
    assert isinstance(tm["output"], tuple) and len(tm["output"]) == 1
    h = g.structural_hash()
    g._interpret([ignis.zeros(3, 2), ignis.ones(3, 2)], None, True)
    assert g.structural_hash() != h  # placeholder strides changed


def test_symbolic_trace_constants_and_errors():
    c = ignis.tensor([10.0, 20.0])

    def f(x):
        return x + c

    gm = ifx.symbolic_trace(f)
    assert gm._tensor_constant0 is c
    assert "_tensor_constant0 = self._tensor_constant0" in gm.code
    np.testing.assert_allclose(gm(ignis.ones(2)).numpy(), [11.0, 21.0])

    def branchy(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(ifx.TraceError, match="control flow"):
        ifx.symbolic_trace(branchy)


# --- backends -------------------------------------------------------------------------------------
def test_backend_registry():
    assert "eager" in list_backends()
    assert "eager_interpreter" not in list_backends()           # debug tag
    assert "eager_interpreter" in list_backends(exclude_tags=())
    seen = []

    @register_backend
    def my_test_backend(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward

    @register_backend(name="my_named_backend")
    def other(gm, example_inputs):
        return gm

    assert "my_test_backend" in list_backends() and "my_named_backend" in list_backends()
    assert lookup_backend("my_test_backend") is my_test_backend
    assert lookup_backend(other) is other
    with pytest.raises(RuntimeError, match="Invalid backend"):
        lookup_backend("no_such_backend")
    with pytest.raises(RuntimeError, match="duplicate name"):
        register_backend(lambda gm, ex: gm, name="eager")

    gm = ifx.symbolic_trace(traced_fn)
    x, y = ignis.tensor([1.0, -3.0]), ignis.tensor([0.5, 0.5])
    for name in ("eager", "eager_interpreter", "my_test_backend"):
        compiled = lookup_backend(name)(gm, [x, y])
        np.testing.assert_allclose(compiled(x, y).numpy(), traced_fn(x, y).numpy())
    assert seen and seen[0][0] is gm


def test_generated_source_leaves_linecache_with_its_module():
    # The generated forward's source is registered with linecache (so
    # tracebacks show it) only while its GraphModule lives: repeated compiles
    # do not grow linecache.
    import gc
    import linecache
    g = ignis.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(ignis.relu, (x,)))
    gm = ignis.fx.GraphModule({}, g)
    name = gm.forward.__code__.co_filename
    assert name in linecache.cache
    del gm, g, x  # the graph refers to its owning module
    gc.collect()
    assert name not in linecache.cache
