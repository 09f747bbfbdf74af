"""Two fixes: fx.symbolic_trace of a module whose submodules are attributes
(call_module targets come from the root), and compiled functions returning
namedtuples (rebuilt as their class builds them)."""
import collections

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn as nn


class _WithSubmodules(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 2)
        self.seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())

    def forward(self, x):
        return self.seq(self.l(x)) + self.l.weight.sum()


def test_symbolic_trace_of_submodule_attributes():
    m = _WithSubmodules()
    gm = ignis.fx.symbolic_trace(m)
    ops = [(n.op, n.target) for n in gm.graph.nodes]
    assert ("call_module", "l") in ops and ("call_module", "seq") in ops
    assert gm.l is m.l and gm.seq is m.seq
    x = ignis.randn(4, 3)
    assert gm(x).tolist() == m(x).tolist()


_Pair = collections.namedtuple("_Pair", ["a", "b"])


def test_compiled_function_returning_a_namedtuple():
    def f(x):
        return _Pair(x + 1, b=x * 2)

    x = ignis.ones(2)
    for backend in ("eager", "aot_eager"):
        ignis.compiler.reset()
        r = ignis.compile(f, backend=backend, fullgraph=True)(x)
        assert type(r) is _Pair and r.a.tolist() == [2.0, 2.0] and r.b.tolist() == [2.0, 2.0]
    ignis.compiler.reset()
    # Ops' named results (sort's values/indices) come back as they are.
    r = ignis.compile(lambda t: t.sort(), backend="eager")(ignis.tensor([3.0, 1.0]))
    assert r.values.tolist() == [1.0, 3.0] and r.indices.tolist() == [1, 0]
    ignis.compiler.reset()
