"""Symbolic AOT graphs (Note [Symbolic AOT graphs], _functorch/symbolic_aot.py;
Note [Symbolizing traced graphs], src/ignis/aot/symbolize.h): a dynamic
captured graph is traced by AOT three times, at its first size and two more
hints, and every later size instantiates the first trace. Checked: the
instantiated graphs equal a fresh trace at that size (code and metadata),
results and gradients equal eager's on the AOT backends, the trace count,
the printed symbolic graphs, and the fallback to a trace per size."""
import numpy as np
import pytest

import ignis
import ignis.nn.functional as F
from ignis._functorch import aot_autograd as aot
from ignis._functorch.symbolic_aot import SymbolicAot, _hints


@pytest.fixture(autouse=True)
def fresh_caches(monkeypatch):
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)  # compile every size at once
    ignis.compiler.reset()
    yield
    ignis.compiler.reset()
    ignis._logging.set_logs()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=tol,
                               atol=tol)


def count_traces(monkeypatch):
    """A list that gets one entry per AOT trace (trace_joint call)."""
    seen = []
    trace_joint = aot.trace_joint

    def counting(gm, example_inputs, **kw):
        seen.append([tuple(t.shape) for t in example_inputs if hasattr(t, "shape")])
        return trace_joint(gm, example_inputs, **kw)
    monkeypatch.setattr(aot, "trace_joint", counting)
    return seen


def attention_like(x, w):
    b, t, c = x.shape
    h = (x @ w).view(b * t, -1)
    mask = ignis.ones(t, t, device=x.device).tril()
    s = (x @ x.transpose(1, 2)).masked_fill(mask == 0, float("-inf")) / c ** 0.5
    return (F.softmax(h, -1).sum(0) / t + h.mean()).sum() + F.softmax(s, -1).var(-1).sum()


def standardize(x, b):
    n, d = x.shape
    y = (x - x.mean(0)) / (x.var(0) + 1e-5).sqrt()
    return F.layer_norm(y + b, (d,)).view(n * d)[: n * d - 3].sum() + n


CASES = {
    # one symbol (the sequence length): views of b*t, a mask of t*t, a mean's count
    "attention_like": (attention_like, lambda t: (ignis.randn(3, t, 16), ignis.randn(16, 8)),
                       [5, 7, 9, 12, 7, 20]),
    # two symbols once both change: a product, an end of n*d - 3, a reciprocal (var's 1/(n-1))
    "standardize": (standardize, lambda n: (ignis.randn(n, 6 + n % 3), ignis.randn(6 + n % 3)),
                    [4, 6, 8, 10, 13, 6]),
}


CUDA = ignis.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not CUDA, reason="no usable CUDA GPU here (the fake driver runs these too)"))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("backend", ["aot_eager", "aot_eager_decomp_partition", "inductor"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_size_is_eagers_with_four_traces(monkeypatch, backend, case, device):
    """Forward and gradients equal eager's at every size, and AOT traced the
    dynamic graph three times (its first size and two hints) and once more at
    the first later size (Note [A fourth trace checks the fit]), plus once for
    the first, static graph: no trace for the sizes after."""
    fn, make, sizes = CASES[case]
    traces = count_traces(monkeypatch)
    cf = ignis.compile(fn, backend=backend)
    for n in sizes:
        x, w = (t.to(device) for t in make(n))
        x.requires_grad_(), w.requires_grad_()
        out = cf(x, w)
        out.backward()
        x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
        ref = fn(x2, w2)
        ref.backward()
        close(out, ref, 1e-4)
        close(x.grad, x2.grad, 1e-4)
        close(w.grad, w2.grad, 1e-4)
    distinct = len({tuple(tuple(s) for s in t) for t in traces})
    # the static first graph, then the dynamic one at its size, two hints and
    # the next size (standardize's d changes too: its second dynamic graph is
    # traced 3 times more, its sizes after the hints all ones traced before)
    assert len(traces) == (5 if case == "attention_like" else 8), traces
    assert distinct == len(traces)


def logits_and_loss(x, w):
    """A model's two outputs, logits and a loss: the loss alone gets a
    gradient, so the backward runs without the logits' tangent."""
    logits = (x @ w).tanh()
    return logits, (logits * logits).mean() + logits.var(-1).sum() / x.shape[1]


def test_a_backward_without_tangents_is_rewritten_once(monkeypatch):
    """The backward that takes only the loss's tangent (Note [Tangents that
    do not arrive]) comes, at every size after the first, from a template of
    its own: _without_tangents rewrites the three traces' backward once, not
    each size's; values and gradients equal eager's at every size, the probes
    too are the rewritten graphs."""
    calls = []
    without = aot._without_tangents

    def counting(bw, num_saved, missing):
        calls.append(missing)
        return without(bw, num_saved, missing)
    monkeypatch.setattr(aot, "_without_tangents", counting)
    cf = ignis.compile(logits_and_loss)
    for t in [5, 7, 9, 12, 16, 7, 21]:
        x = ignis.randn(3, t, 16, requires_grad=True)
        w = ignis.randn(16, 8, requires_grad=True)
        logits, loss = cf(x, w)
        loss.backward()
        x2, w2 = x.detach().requires_grad_(), w.detach().requires_grad_()
        ref_logits, ref = logits_and_loss(x2, w2)
        ref.backward()
        close(logits, ref_logits, 1e-5)
        close(loss, ref, 1e-5)
        close(x.grad, x2.grad, 1e-4)
        close(w.grad, w2.grad, 1e-4)
    # the static first graph's backward once; the dynamic graph's three
    # traces once each (the template) and the fourth, checking one; then no
    # size rewrites its own
    assert len(calls) == 5, calls
    assert all(m == calls[0] for m in calls)


def check_writes_as_eager(fn, cf, sizes):
    """cf(a, buf) at each (R, C) returns fn's result and leaves buf as fn does."""
    for r, c in sizes:
        a, buf = ignis.randn(r, c), ignis.randn(r, c)
        ref_buf = buf.clone()
        close(cf(a, buf), fn(a, ref_buf))
        close(buf, ref_buf)


def last_row_written(a, buf):
    buf[-1, :] = (a + 1)[-1, :]
    return buf.sum()


def test_a_fourth_trace_catches_a_number_that_fit_three_by_chance(capsys):
    """The offset of the last row, (R - 1) * C, is 42, 64 and 108 at the
    hints (8, 6), (9, 8), (10, 12), as 11 * C - 24 is: the three traces
    alone took that form, and at (5, 5) wrote at 31 instead of 20 (fuzz seed
    4529646). The trace at (5, 5) does not fit it: the graph is traced per
    size from then on, every size equal to eager's, and the log says why."""
    ignis._logging.set_logs(dynamic=True)
    check_writes_as_eager(last_row_written, ignis.compile(last_row_written),
                          [(7, 5), (7, 7), (8, 6), (5, 5), (6, 9), (11, 4)])
    err = capsys.readouterr().err
    assert "AOT traces each size of this graph: the trace at" in err, err
    assert "does not fit the three before it" in err


def scaled_last_row_written(b, buf):
    buf.mul_(0.9)
    buf[-1].copy_(b[0])
    return buf + 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_fourth_trace_may_repeat_a_hints_value(capsys, backend):
    """(R - 1) * C again, at hints (4, 6), (5, 8), (6, 12): the next size,
    (2, 8), repeats the second hint's C. The check took it (later traces only
    check the forms, whatever their values) and found that 7 * C - 24 does not
    fit; before, lining up the four raised, that size ran eagerly and the
    unchecked template served the next ones: a wrong row at (5, 4), and at
    (6, 2) a negative offset whose write corrupted the heap (fuzz seed
    4530720)."""
    ignis._logging.set_logs(dynamic=True)
    check_writes_as_eager(scaled_last_row_written,
                          ignis.compile(scaled_last_row_written, backend=backend),
                          [(5, 2), (4, 6), (2, 8), (5, 4), (6, 2), (9, 2)])
    err = capsys.readouterr().err
    assert "the trace at {'s5': 2, 's12': 8} does not fit the three before it" in err, err


def last_row_and_loss(a, buf):
    out = buf.clone()
    out[-1, :] = (a * 2)[-1, :]
    return out, (out * a).sum()


def test_after_a_failed_fourth_trace_backwards_without_tangents_are_eagers():
    """The same offset in a training graph whose backward runs without the
    first output's tangent: once the fourth trace does not fit, that
    backward is rewritten from each size's own trace (no template), and the
    gradients equal eager's at every size."""
    cf = ignis.compile(last_row_and_loss)
    for r, c in [(7, 5), (7, 7), (8, 6), (5, 5), (6, 9), (11, 4)]:
        a = ignis.randn(r, c, requires_grad=True)
        buf = ignis.randn(r, c)
        out, loss = cf(a, buf)
        loss.backward()
        a2 = a.detach().requires_grad_()
        ref_out, ref = last_row_and_loss(a2, buf)
        ref.backward()
        close(out, ref_out)
        close(loss, ref)
        close(a.grad, a2.grad)


def dynamic_graph(fn, inputs_at, sizes):
    """The dynamic graph capture hands the backend, with its example inputs."""
    got = []

    def backend(gm, example_inputs):
        if any(type(x) is int for x in example_inputs):
            got.append((gm, list(example_inputs)))
        return gm.forward
    cf = ignis.compile(fn, backend=backend)
    for n in sizes:
        cf(*inputs_at(n))
    return got[-1]


def aot_backend():
    return ignis.compiler.aot_autograd(partition_fn=aot.min_cut_rematerialization_partition)


def test_an_instantiated_graph_is_the_trace_at_that_size():
    """At sizes other than the hints, the instantiated inference graph prints
    the same code and carries the same tensor metadata as a trace at that
    size. (A training graph's partition is the first trace's: the min cut at
    another size may save other values, equally correct -- the gradient
    tests above check those.)"""
    def make(t):
        return ignis.randn(3, t, 16), ignis.randn(16, 8)
    gm, ex = dynamic_graph(attention_like, make, [5, 6])
    sym_at = [i for i, x in enumerate(ex) if type(x) is int]
    be = aot_backend()
    sa = SymbolicAot(gm, ex, sym_at, be._ignis_trace, None)
    assert sa.templates is not None, sa.why
    assert len(sa.templates) == 1
    from ignis._compile import _with_sizes
    for t in (7, 8, 2, 11, 40, 257):  # the two hints after 6 first
        tensors = list(make(t))
        want = be._ignis_trace(_with_sizes(gm, sym_at, (t,)), tensors)
        got = sa.parts_at((t,))
        assert len(got.graphs) == len(want.graphs)
        for g, w in zip(got.graphs, want.graphs):
            assert g.code == w.code
            metas = [n.meta.get("tensor_meta") for n in g.graph.nodes]
            assert metas == [n.meta.get("tensor_meta") for n in w.graph.nodes]


def test_hints_move_every_symbol_differently():
    a, b, c = _hints([4, 4, 9])
    assert len({(x, y, z) for x, y, z in zip(a, b, c)}) == 3
    steps = [(y - x, z - y) for x, y, z in zip(a, b, c)]
    assert len({s2 / s1 for s1, s2 in steps}) == 3


def test_the_symbolic_graphs_print_as_torchs(capsys):
    """IGNIS_LOGS=aot_graphs prints the symbolic forward and backward once:
    Sym placeholders, sizes as expressions of them ("f32[3*s..., 8]") and
    size arithmetic as Sym nodes in the arguments."""
    ignis._logging.set_logs(aot_graphs=True)
    cf = ignis.compile(attention_like, backend="aot_eager_decomp_partition")
    for t in (5, 7, 9):
        cf(ignis.randn(3, t, 16, requires_grad=True), ignis.randn(16, 8))
    err = capsys.readouterr().err
    assert err.count("forward graph (symbolic in s") == 1
    assert err.count("backward graph (symbolic in s") == 1
    fw = err[err.index("forward graph (symbolic"):err.index("backward graph (symbolic")]
    sym = fw[fw.index("in s") + 3:fw.index(")")]
    assert f'{sym}: "Sym({sym})"' in fw
    assert f'"f32[3, {sym}, 16]"' in fw
    assert f'"Sym(3*{sym})" = 3 * {sym}' in fw
    assert f"ignis.ops.view.default(primals_1, [mul" in fw
    # the later sizes printed nothing more
    assert "specializing" not in err


def test_a_graph_that_does_not_fit_is_traced_per_size(monkeypatch, capsys):
    """A size of n*n + n (two monomials) fits no single k*monomial + d: each
    size gets its own trace (the dynamic log says why), every result still
    eager's."""
    def f(x):
        n = x.shape[0]
        return x.new_ones(n * n + n).cumsum(0)[-1] + x.sum()

    traces = count_traces(monkeypatch)
    ignis._logging.set_logs(dynamic=True)
    cf = ignis.compile(f, backend="aot_eager")
    for n in [6, 8, 10, 12, 14]:
        x = ignis.randn(n, 3)
        close(cf(x), f(x))
    err = capsys.readouterr().err
    assert "AOT traces each size of this graph: a number of node" in err
    assert "fits no single k*monomial + d of the sizes" in err
    # static 6; dynamic 8 and two hints; then 10, 12, 14 each traced
    assert len(traces) == 1 + 3 + 3, traces


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_size_arithmetic_beyond_sums_and_products_is_traced_per_size(monkeypatch, capsys,
                                                                     backend):
    """t // 16 is 0 at the first size and both hints, and 2 at 40: a fit
    would take it for the constant 0. Capture's floor division marks the
    graph, which is then traced at each size (and 40 gives eager's sum)."""
    def f(x):
        t = x.shape[0]
        return x[: t // 16].sum(0) * 3 + x.sum(0)

    traces = count_traces(monkeypatch)
    ignis._logging.set_logs(dynamic=True)
    cf = ignis.compile(f, backend=backend)
    for n in [4, 5, 7, 40, 33]:
        x = ignis.randn(n, 3)
        close(cf(x), f(x))
    err = capsys.readouterr().err
    assert "size arithmetic beyond sums and products" in err
    # static 4; the dynamic graph's 5, then 7, 40, 33 traced each (no hints)
    assert len(traces) == 5, traces


def test_the_setting_off_traces_each_size(monkeypatch):
    """ignis.compiler.config.symbolic_aot = False: every size is traced."""
    monkeypatch.setattr(ignis.compiler.config, "symbolic_aot", False)
    traces = count_traces(monkeypatch)
    cf = ignis.compile(attention_like, backend="aot_eager")
    for t in (5, 7, 9, 12):
        x, w = ignis.randn(3, t, 16), ignis.randn(16, 8)
        close(cf(x, w), attention_like(x, w))
    assert len(traces) == 4, traces
    with pytest.raises(ValueError, match="symbolic_aot must be a bool"):
        ignis.compiler.config.symbolic_aot = 1
