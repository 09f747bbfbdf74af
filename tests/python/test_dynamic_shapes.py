"""Dynamic shapes in capture (docs/dynamic_shapes.md).

Automatic dynamic (a size that changes between traces becomes a symbol),
dynamic=True/False, mark_dynamic/mark_static, torch's specialization rules
(0 and 1; a branch on a size is a guard on a relation), symbolic ints in
graphs, the op rules (and the fallback that specializes), the backends run
per size, and the GPT example trained over varying sequence lengths. Each
compiled result is compared with eager ignis (and torch's printed graph
where torch 2.13 is installed)."""
import contextlib
import io
import logging
import os
import sys

import numpy as np
import pytest

import ignis
from _size_compiles import record_size_compiles
from ignis._C import _capture


def counting_backend(graphs):
    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend


@pytest.fixture(autouse=True)
def fresh_caches():
    ignis.compiler.reset()
    yield
    ignis.compiler.reset()
    ignis._logging.set_logs()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), np.asarray(b.detach().numpy()),
                               rtol=tol, atol=tol)


def rand(*shape):
    return ignis.randn(*shape)


def guard_lines(fn):
    return [lines for _, lines in _capture.describe_cache(fn.__code__)]


def batch_fn(x):
    return (x * 2).sum(0) + x.size(0)


def test_three_batch_sizes_give_two_graphs():
    graphs = []
    cf = ignis.compile(batch_fn, backend=counting_backend(graphs))
    for n in (3, 4, 5):
        x = rand(n, 3)
        close(cf(x), batch_fn(x))
    assert len(graphs) == 2  # static first, then dynamic (as Dynamo)
    assert _capture.cache_entry_count(batch_fn.__code__) == 2
    code = graphs[1].code
    assert "def forward(self, s77 : ignis.SymInt, L_x_ : ignis.Tensor):" in code
    assert "add = sum_1 + s77" in code
    newest = guard_lines(batch_fn)[0]
    assert "LAMBDA_GUARD: 2 <= L['x'].size()[0]" in newest
    assert any(g.startswith("TENSOR_MATCH: L['x']") and "size=[s77, 3]" in g and "stride=[3, 1]" in g
               for g in newest)


def attention_like(x, w):
    B, T, C = x.shape
    q = (x @ w).view(B, T, 2, C // 2).transpose(1, 2)
    att = (q @ q.transpose(-2, -1)) / (C // 2) ** 0.5
    mask = ignis.ones(T, T).tril()
    att = att.masked_fill(mask == 0, float("-inf")).softmax(-1)
    y = (att @ q).transpose(1, 2).reshape(B, T, C)
    return y.mean(dim=1) + y[:, -1] + y[:, : T // 2].sum(1)


def test_sequence_length_loop_is_one_dynamic_graph():
    graphs = []
    cf = ignis.compile(attention_like, backend=counting_backend(graphs))
    w = rand(8, 8)
    for t in range(3, 23):  # 20 lengths
        x = rand(2, t, 8)
        close(cf(x, w), attention_like(x, w), tol=1e-4)
    assert len(graphs) == 2


def test_rank_and_dtype_changes_still_recompile(capsys):
    def f(x):
        return x + 1

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    cf(rand(3, 2))
    cf(rand(4, 2))
    cf(rand(5, 2))
    assert len(graphs) == 2
    ignis._logging.set_logs(recompiles=True)
    cf(rand(4, 2, 2))
    assert len(graphs) == 3
    cf(rand(6, 2).double())
    assert len(graphs) == 4
    err = capsys.readouterr().err
    assert "rank mismatch" in err and "dtype mismatch" in err


def test_mark_dynamic_from_the_first_call():
    graphs = []
    cf = ignis.compile(batch_fn, backend=counting_backend(graphs))
    x = rand(4, 3)
    ignis._dynamo.mark_dynamic(x, 0)
    close(cf(x), batch_fn(x))
    assert "s77 : ignis.SymInt" in graphs[0].code
    for n in (6, 9):
        y = rand(n, 3)
        close(cf(y), batch_fn(y))
    assert len(graphs) == 1
    with pytest.raises(IndexError):
        ignis._dynamo.mark_dynamic(x, 2)


def far_branch(x):
    if x.size(0) > 100:
        return x * 2
    return x + x.size(0)


def test_mark_dynamic_with_a_range(capsys):
    # min=/max= bound the symbol: the range is the guard, a branch its bounds
    # decide adds none, a size outside it recompiles (naming the range), and
    # a traced size outside its mark raises.
    graphs = []
    cf = ignis.compile(far_branch, backend=counting_backend(graphs))
    x = rand(8, 3)
    ignis._dynamo.mark_dynamic(x, 0, min=2, max=64)
    close(cf(x), far_branch(x))
    lines = guard_lines(far_branch)[0]
    assert "LAMBDA_GUARD: 2 <= L['x'].size()[0] <= 64" in lines
    assert not any("100" in line for line in lines)  # x.size(0) > 100 was known false
    for n in (2, 33, 64):
        y = rand(n, 3)
        close(cf(y), far_branch(y))
    assert len(graphs) == 1
    ignis._logging.set_logs(recompiles=True)
    y = rand(65, 3)
    close(cf(y), far_branch(y))
    assert "- 0/0: 2 <= L['x'].size()[0] <= 64" in capsys.readouterr().err
    assert len(graphs) == 2
    ignis.compiler.reset()
    z = rand(80, 3)
    ignis._dynamo.mark_dynamic(z, 0, min=4, max=64)
    with pytest.raises(ValueError, match=r"L\['x'\].size\(\)\[0\] is 80, outside the range "
                                         r"it was marked with, \[4, 64\]"):
        cf(z)
    w = rand(5, 3)
    ignis._dynamo.mark_dynamic(w, 0, min=4)  # no upper bound: the branch guards one
    close(cf(w), far_branch(w))
    assert "LAMBDA_GUARD: 4 <= L['x'].size()[0] <= 100" in guard_lines(far_branch)[0]
    with pytest.raises(ValueError, match="min=5 is greater than max=4"):
        ignis._dynamo.mark_dynamic(w, 0, min=5, max=4)
    with pytest.raises(TypeError, match="max must be a non-negative int"):
        ignis._dynamo.mark_dynamic(w, 0, max=2.5)


def test_mark_static_keeps_a_dim_static():
    graphs = []
    cf = ignis.compile(batch_fn, backend=counting_backend(graphs), dynamic=True)
    for n in (3, 4):
        x = rand(n, 3)
        ignis._dynamo.mark_static(x, 0)
        close(cf(x), batch_fn(x))
    assert len(graphs) == 2


def test_dynamic_true_is_one_graph_with_every_size_symbolic():
    def f(x, y):
        return (x @ y).relu().sum(-1)

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs), dynamic=True)
    for n, k, m in ((3, 4, 5), (6, 2, 7), (2, 9, 3)):
        x, y = rand(n, k), rand(k, m)
        close(cf(x, y), f(x, y))
    assert len(graphs) == 1
    assert graphs[0].code.count("ignis.SymInt") == 3


def test_dynamic_false_recompiles_per_size_then_hits_the_limit(monkeypatch):
    monkeypatch.setattr(ignis.compiler.config, "cache_size_limit", 3)
    graphs = []
    cf = ignis.compile(batch_fn, backend=counting_backend(graphs), dynamic=False)
    for n in (3, 4, 5):
        x = rand(n, 3)
        close(cf(x), batch_fn(x))
    assert len(graphs) == 3
    assert all("SymInt" not in g.code for g in graphs)
    x = rand(6, 3)
    with pytest.warns(UserWarning, match="cache_size_limit"):
        close(cf(x), batch_fn(x))  # eager from now on
    assert len(graphs) == 3


def test_sizes_zero_and_one_are_specialized():
    graphs = []
    cf = ignis.compile(batch_fn, backend=counting_backend(graphs), dynamic=True)
    for n in (1, 1):
        x = rand(n, 3)
        close(cf(x), batch_fn(x))
    assert len(graphs) == 1
    assert "size=[1, s" in " ".join(guard_lines(batch_fn)[0])
    x = rand(5, 3)
    close(cf(x), batch_fn(x))  # 1 was specialized: a new graph
    assert len(graphs) == 2
    x = rand(0, 3)
    close(cf(x), batch_fn(x))
    assert len(graphs) == 3


def branchy(x):
    if x.size(0) > 8:
        return x + 1
    return x - 1


def test_a_branch_on_a_size_is_a_relation_guard(capsys):
    graphs = []
    cf = ignis.compile(branchy, backend=counting_backend(graphs))
    for n in (3, 4, 6):
        x = rand(n, 2)
        close(cf(x), branchy(x))
    assert len(graphs) == 2
    assert "LAMBDA_GUARD: 2 <= L['x'].size()[0] <= 8" in guard_lines(branchy)[0]
    ignis._logging.set_logs(recompiles=True, dynamic=True)
    x = rand(9, 2)
    close(cf(x), branchy(x))
    err = capsys.readouterr().err
    assert "2 <= L['x'].size()[0] <= 8" in err  # the recompile reason names the relation
    assert "eval s77 > 8 [guard added]" in err  # torch's words
    assert len(graphs) == 3
    for n in (12, 20):
        x = rand(n, 2)
        close(cf(x), branchy(x))
    assert len(graphs) == 3
    assert "LAMBDA_GUARD: 9 <= L['x'].size()[0]" in guard_lines(branchy)[0]


def view_fn(x):
    return x.view(x.size(0) * 2, -1)


def test_view_with_computed_sizes():
    graphs = []
    cf = ignis.compile(view_fn, backend=counting_backend(graphs))
    for n in (4, 6, 10):
        x = rand(n, 6)
        close(cf(x), view_fn(x))
    assert len(graphs) == 2
    code = graphs[1].code
    assert "mul = s77 * 2" in code and "view = l_x_.view(mul, -1)" in code


def test_broadcast_of_two_dynamic_dims_guards_their_equality():
    def f(x, y):
        return x + y

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs), dynamic=True)
    x, y = rand(4, 3), rand(4, 3)
    close(cf(x, y), f(x, y))
    lines = guard_lines(f)[0]
    assert "LAMBDA_GUARD: L['y'].size()[0] == L['x'].size()[0]" in lines
    assert "LAMBDA_GUARD: L['y'].size()[1] == L['x'].size()[1]" in lines
    x, y = rand(5, 7), rand(5, 7)
    close(cf(x, y), f(x, y))
    assert len(graphs) == 1
    x, y = rand(5, 7), rand(1, 7)  # 1 is not the symbol: another graph
    close(cf(x, y), f(x, y))
    assert len(graphs) == 2


def test_separate_symbols_broadcast_with_an_eq_guard():
    def f(x, y):
        return x + y

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    cf(rand(3), rand(3))
    x, y = rand(4), rand(4)
    close(cf(x, y), f(x, y))  # both dims changed: one symbol (duck sizing)
    x, y = rand(6), rand(6)
    close(cf(x, y), f(x, y))
    assert len(graphs) == 2


def test_an_op_without_a_rule_specializes_and_stays_correct(capsys):
    def f(x):
        return x.repeat(2, 1) + 1

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    ignis._logging.set_logs(dynamic=True)
    for n in (3, 4, 5):
        x = rand(n, 3)
        close(cf(x), f(x))
    err = capsys.readouterr().err
    assert "no symbolic shape rule for Tensor.repeat" in err
    assert len(graphs) == 3
    assert "LAMBDA_GUARD: L['x'].size()[0] == 5" in guard_lines(f)[0]


def test_size_arithmetic_and_factories():
    def f(x):
        n = x.shape[0]
        z = ignis.zeros(n, 2) + x.new_ones(n * 2, 1).view(n, 2)
        r = ignis.arange(n - 1)
        return z.sum(1)[1:] * r + x.numel() + len(x)

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (3, 5, 8, 11):
        x = rand(n, 2)
        close(cf(x), f(x))
    assert len(graphs) == 2


def test_a_size_used_as_a_python_int_specializes():
    def f(x):
        out = x
        for _ in range(x.size(0)):  # range() needs a real int
            out = out + 1
        return out

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (2, 3, 3, 4):
        x = rand(n, 2)
        close(cf(x), f(x))
    assert len(graphs) == 3
    assert "LAMBDA_GUARD: L['x'].size()[0] == 3" in " ".join(guard_lines(f)[-2] + guard_lines(f)[0])


def test_sizes_returned_to_python_are_computed_not_specialized():
    def f(x):
        return x * 2, x.shape, x.size(0) * 3 + 1, x.numel() // 2, (x.size(0) - 1) % 4

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (3, 4, 6, 9):
        x = rand(n, 2)
        got, want = cf(x), f(x)
        close(got[0], want[0])
        assert got[1:] == want[1:] and type(got[1]) is ignis.Size
    assert len(graphs) == 2


def test_a_size_live_across_a_graph_break():
    def f(x):
        n = x.size(0) * 2
        print("", end="")  # a graph break: n reaches the resume function as an int
        return x.sum(0) + n

    cf = ignis.compile(f, backend=counting_backend([]))
    for k in (3, 4, 6):
        x = rand(k, 2)
        close(cf(x), f(x))


def test_an_int_argument_that_varies_becomes_a_symbol():
    def f(x, n):
        return x * n + ignis.ones(n).sum()

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    x = rand(3)
    for n in (2, 3, 5, 8):
        close(cf(x, n), f(x, n))
    assert len(graphs) == 2
    assert "def forward(self, L_x_ : ignis.Tensor, L_n_ : ignis.SymInt):" in graphs[1].code
    assert "LAMBDA_GUARD: 2 <= L['n']" in guard_lines(f)[0]
    close(cf(x, 1), f(x, 1))  # 1 specializes: another graph
    assert len(graphs) == 3


def test_ints_computed_on_the_fakes_pin_the_sizes():
    def f(x):
        return x * x.size(dim=0) + ignis.numel(x) + x.stride(0)

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (3, 4, 6):
        x = rand(n, 2)
        close(cf(x), f(x))  # each size its own graph, with the right values
    assert len(graphs) == 3


def test_pad_has_a_rule():
    def f(x):
        return ignis.nn.functional.pad(x, (1, 2, 0, 3)) * 2

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (3, 4, 6):
        x = rand(n, 2)
        close(cf(x), f(x))
    assert len(graphs) == 2


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_backends_give_eagers_values_for_every_size(backend):
    def f(x, w):
        h = (x @ w).relu()
        return h.softmax(-1) * h.size(0) + h.mean(0)

    cf = ignis.compile(f, backend=backend)
    w = rand(4, 5)
    for n in (3, 4, 6, 4):
        x = rand(n, 4)
        close(cf(x, w), f(x, w), tol=1e-4)


def test_aot_eager_gradients_for_every_size():
    def f(x, w):
        return (x @ w).tanh().sum(0)

    cf = ignis.compile(f, backend="aot_eager")
    for n in (2, 3, 5):
        w1 = rand(3, 4).requires_grad_()
        w2 = w1.detach().clone().requires_grad_()
        x = rand(n, 3)
        cf(x, w1).sum().backward()
        f(x, w2).sum().backward()
        close(w1.grad, w2.grad, tol=1e-5)


def test_printed_graph_matches_torch():
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13"):
        pytest.skip("the graphs are torch 2.13's")
    codes = {}
    for lib in (ignis, torch):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm.code)
            return gm.forward

        def f(x):
            return (x * 2).sum(0) + x.size(0)

        def h(x):
            return x.view(x.size(0) * 2, -1)

        def g(x, n):
            return x * n + lib.ones(n).sum()

        if lib is torch:
            torch._dynamo.reset()
        logging.disable(logging.WARNING)
        try:
            cf, ch = lib.compile(f, backend=backend), lib.compile(h, backend=backend)
            for n in (3, 4, 5):
                cf(lib.randn(n, 3))
                ch(lib.randn(n, 6))
            cg = lib.compile(g, backend=backend)
            for n in (2, 3, 5):
                cg(lib.randn(3), n)
        finally:
            logging.disable(logging.NOTSET)
            if lib is torch:
                torch._dynamo.reset()
        codes[lib] = [c.replace("torch.", "ignis.") for c in graphs]
    assert codes[ignis] == codes[torch]


def _readable_lines(text):
    # The forward's lines: torch's "# File:" comments and class line aside.
    return [ln.strip() for ln in text.splitlines()
            if ln.strip() and not ln.strip().startswith(("#", "class "))]


def test_print_readable_annotates_symbolic_sizes_as_torch():
    graphs = []
    cf = ignis.compile(view_fn, backend=counting_backend(graphs))
    for n in (4, 6):
        cf(rand(n, 6))
    text = graphs[1].print_readable(print_output=False)
    assert 'def forward(self, s77: "Sym(s77)", L_x_: "f32[s77, 6]"):' in text
    assert 'mul: "Sym(2*s77)" = s77 * 2' in text
    assert 'view: "f32[2*s77, 3]" = l_x_.view(mul, -1)' in text
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13"):
        return
    texts = []

    def backend(gm, example_inputs):
        texts.append(gm.print_readable(print_output=False))
        return gm.forward

    torch._dynamo.reset()
    logging.disable(logging.WARNING)
    try:
        ct = torch.compile(view_fn, backend=backend)
        for n in (4, 6):
            ct(torch.randn(n, 6))
    finally:
        logging.disable(logging.NOTSET)
        torch._dynamo.reset()
    want = [ln.replace("torch.", "ignis.") for ln in _readable_lines(texts[1])]
    assert _readable_lines(text) == want


def test_gpt_with_varying_sequence_lengths_trains_as_eager():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from gpt import GPTConfig, build_gpt, configure_optimizer

    cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=1, n_head=2, n_embd=16, dropout=0.0)
    lengths = (8, 12, 16, 10, 12)
    runs = []
    for compiled in (False, True):
        ignis.manual_seed(0)
        model = build_gpt(ignis)(cfg)
        opt = configure_optimizer(ignis, model)
        graphs = []
        fwd = ignis.compile(model, backend=counting_backend(graphs)) if compiled else model
        losses = []
        for step, t in enumerate(lengths):
            ignis.manual_seed(100 + step)
            x = ignis.randint(0, 32, (2, t))
            y = ignis.randint(0, 32, (2, t))
            _, loss = fwd(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, len(graphs)))
    (eager_losses, _), (comp_losses, n_graphs) = runs
    assert n_graphs == 2  # the first length, then one graph for every other
    assert eager_losses == pytest.approx(comp_losses, rel=1e-5, abs=1e-5)


def test_the_per_size_compiles_of_a_dynamic_graph_are_bounded(monkeypatch):
    """aot_eager/inductor compile a dynamic graph once per size and keep the
    PER_SIZE_CACHE_LIMIT most recently used sizes: an evicted size compiles
    again, a kept one does not; every result is eager's."""
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_CACHE_LIMIT", 3)
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)  # every size at first sight
    sizes_compiled = record_size_compiles(monkeypatch)

    def f(x):
        return (x * 2).sum(0) + x.size(0)

    g = ignis.compile(f, backend="aot_eager")
    for n in (4, 5, 6, 7, 8, 5, 8):
        x = ignis.randn(n, 3)
        np.testing.assert_allclose(g(x).numpy(), f(x).numpy(), rtol=1e-6)
    # 4: the static first trace; 5-8 the dynamic graph's sizes; 5 again was
    # evicted (the limit keeps 6, 7, 8), 8 was kept.
    assert sizes_compiled == [(5,), (6,), (7,), (8,), (5,)], sizes_compiled


def test_a_size_compiles_on_its_second_call_and_churning_sizes_run_eagerly(monkeypatch):
    """Note [Compiling a size on its second call] (ignis/_compile.py): a
    dynamic graph's new size runs the captured graph eagerly on its first
    call and compiles on its second; after PER_SIZE_CHURN_COMPILES compiles
    that are seldom reused, a new size compiles only on its
    PER_SIZE_CHURN_COMPILE_AFTER-th call, and compiled ones keep running
    compiled. Values and gradients are eager's on every path."""
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_CHURN_COMPILES", 3)
    sizes_compiled = record_size_compiles(monkeypatch)

    def f(x, w):
        return (ignis.tanh(x * w) * 2).sum(0) + x.size(0)

    g = ignis.compile(f, backend="aot_eager")
    w = ignis.randn(3, requires_grad=True)

    def check(n):
        x = ignis.randn(n, 3, requires_grad=True)
        got = g(x, w)
        got.sum().backward()
        gx, gw = x.grad.clone(), w.grad.clone()
        x.grad = None
        w.grad = None
        want = f(x, w)
        want.sum().backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(gx.numpy(), x.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(gw.numpy(), w.grad.numpy(), rtol=1e-6)
        w.grad = None

    # 4: the static trace; 5: the dynamic graph's own size (compiled at once);
    # 6 eager, then compiled on its second call; 7 eager once; 6 a hit.
    for n in (4, 5, 6, 6, 7, 6):
        check(n)
    assert sizes_compiled == [(5,), (6,)], sizes_compiled
    # 7 and 8 compile on their second calls (3 compiles, 1 hit: churning);
    # 9 then runs eagerly until its PER_SIZE_CHURN_COMPILE_AFTER-th call
    # (4 here), which compiles it; 6 still runs compiled.
    monkeypatch.setattr(comp, "PER_SIZE_CHURN_COMPILE_AFTER", 4)
    for n in (7, 8, 8, 9, 9, 9, 6):
        check(n)
    assert sizes_compiled == [(5,), (6,), (7,), (8,)], sizes_compiled
    check(9)
    assert sizes_compiled == [(5,), (6,), (7,), (8,), (9,)], sizes_compiled


def test_unique_graphs_counter_counts_as_torchs():
    # torch._dynamo.utils.counters["stats"]["unique_graphs"]: a graph per trace
    # handed to the backend, recompiles included, cache hits not.
    from ignis._dynamo.utils import counters
    before = counters["stats"]["unique_graphs"]
    cf = ignis.compile(batch_fn, backend="inductor")
    for n in (3, 4, 5, 5, 6):
        cf(rand(n, 3))
    ours = counters["stats"]["unique_graphs"] - before
    assert ours == 2  # static, then dynamic
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters as torch_counters
    torch._dynamo.reset()
    before = torch_counters["stats"]["unique_graphs"]

    def torch_batch_fn(x):
        return (x * 2).sum(0) + x.size(0)
    tf = torch.compile(torch_batch_fn, backend="eager")
    for n in (3, 4, 5, 5, 6):
        tf(torch.rand(n, 3))
    assert torch_counters["stats"]["unique_graphs"] - before == ours


# --- stride symbols (Note [Stride symbols], src/ignis/capture/tracer_dynamic.cpp) ---

def last_token_logits(ids, w):
    return (w[ids] * ids.float().mean()).sum(1)


def test_a_generation_loops_growing_stride_is_one_symbol(capsys):
    # ids[:, -1:] of a [2, L] sequence is [2, 1] with stride [L, 1]: the stride
    # changes every step. Like Dynamo: one recompile, then a stride symbol
    # (s25, torch's number for this source) and one graph for every L.
    graphs = []
    cf = ignis.compile(last_token_logits, backend=counting_backend(graphs))
    w = rand(7, 5)
    ids = ignis.tensor([[1], [2]])
    ignis._logging.set_logs(recompiles=True, dynamic=True)
    for step in range(12):
        x = ids[:, -1:]
        out = cf(x, w)
        close(out, last_token_logits(x, w))
        ids = ignis.cat([ids, (out[:, :1].abs() * 10).long().remainder(7)], 1)
    assert len(graphs) == 2
    assert _capture.cache_entry_count(last_token_logits.__code__) == 2
    err = capsys.readouterr().err
    assert "stride mismatch at index 0. expected 1, actual 2" in err
    assert "automatic dynamic L['ids'] stride(0) 1 != 2" in err
    assert "create_symbol s25 = 2 for L['ids'].stride()[0] [2, int_oo]" in err
    # placeholders in first use, the symbol before its tensor (as Dynamo)
    assert "def forward(self, L_w_ : ignis.Tensor, s25 : ignis.SymInt, L_ids_ : ignis.Tensor):" \
        in graphs[1].code
    newest = guard_lines(last_token_logits)[0]
    assert any(g.startswith("TENSOR_MATCH: L['ids']") and "size=[2, 1]" in g and
               "stride=[s25, 1]" in g for g in newest)
    assert "LAMBDA_GUARD: 2 <= L['ids'].stride()[0]" in newest


def test_generation_loop_graph_matches_dynamos():
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13"):
        pytest.skip("the graphs are torch 2.13's")
    codes = {}
    for lib in (ignis, torch):
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm.code)
            return gm.forward

        def f(ids, w):
            return (w[ids] * 2).sum(1)

        if lib is torch:
            torch._dynamo.reset()
        logging.disable(logging.WARNING)
        try:
            cf = lib.compile(f, backend=backend)
            ids, w = lib.zeros(2, 1, dtype=lib.long), lib.randn(7, 5)
            for _ in range(5):
                cf(ids[:, -1:], w)
                ids = lib.cat([ids, ids[:, -1:] + 1], 1)
        finally:
            logging.disable(logging.NOTSET)
            if lib is torch:
                torch._dynamo.reset()
        codes[lib] = [c.replace("torch.", "ignis.") for c in graphs]
    assert codes[ignis] == codes[torch]


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_stride_symbols_give_eagers_values_and_gradients(backend, monkeypatch):
    # Each compiled (COMPILE_EVERY_SIZE), the AOT graphs one symbolic trace.
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)

    def f(a, w):
        return (a.sin() @ w).relu().sum(0) * a.size(1)

    cf = ignis.compile(f, backend=backend)
    w = rand(3, 4)
    for length in (5, 6, 9, 7, 12, 6):
        # a transposed [L, 3] (strides [1, L]: its sizes vary, its strides
        # are products of them), and a row slice [4, 3] of a growing [4, L]
        # (stride [L, 1]: a stride symbol)
        for a in (rand(3, length).t(), rand(4, length)[:, :3]):
            w1, w2 = w.clone().requires_grad_(), w.clone().requires_grad_()
            a1, a2 = a.detach().requires_grad_(), a.detach().requires_grad_()
            out = cf(a1, w1)
            ref = f(a2, w2)
            close(out, ref, tol=1e-4)
            out.sum().backward()
            ref.sum().backward()
            close(w1.grad, w2.grad, tol=1e-4)
            close(a1.grad, a2.grad, tol=1e-4)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_contiguous_of_a_stride_symbol_aliases_where_eagers_does(backend, monkeypatch):
    # x = big[:, :3] of a growing [4, L] has stride [L, 1], a stride symbol. At
    # L = 3 x is contiguous, eager's x.contiguous() is x itself and mutating
    # the result writes big; compiled, the same (each size's AOT graph is
    # traced at that size's layout, so no copy is assumed).
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)

    def f(x):
        y = x.contiguous()
        y.mul_(2)
        return y + 1

    cf = ignis.compile(f, backend=backend)
    for length in (5, 6, 7, 3, 3, 8, 3):
        big_e = rand(4, length)
        big_c = big_e.clone()
        close(cf(big_c[:, :3]), f(big_e[:, :3]))
        close(big_c, big_e)


def test_strides_after_a_stride_symbol_are_guarded_products(capsys):
    # big[:, :, 0] of [B, 3, L] is [B, 3] with strides [3*L, L]: L becomes a
    # stride symbol and stride 0 its product with 3, checked by a shape guard;
    # a layout whose stride 0 is not 3*L recompiles (and is right).
    def f(x):
        return x * 2 + x[:, :1]

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for length in (4, 5, 8):
        x = rand(2, 3, length)[:, :, 0]
        close(cf(x), f(x))
    assert len(graphs) == 2
    newest = guard_lines(f)[0]
    assert any("stride=[3*s" in g and g.startswith("TENSOR_MATCH: L['x']") for g in newest), newest
    assert any(g.startswith("LAMBDA_GUARD: L['x'].stride()[0] == 3*L['x'].stride()[1]")
               for g in newest), newest
    ignis._logging.set_logs(recompiles=True)
    x = rand(2, 4, 6)[:, :3, 0]  # strides [24, 6]: not 3 * 6
    close(cf(x), f(x))
    assert len(graphs) == 3
    assert "L['x'].stride()[0] == 3*L['x'].stride()[1]" in capsys.readouterr().err


def test_reading_a_stride_pins_the_stride_symbols():
    # x.stride(0) is a Python int computed at the trace's layout: with a
    # stride symbol it becomes the symbol's value (a guard), never a stale one.
    def f(x):
        return x * x.stride(0)

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for length in (4, 5, 7, 9):
        x = rand(3, length)[:, :2]
        close(cf(x), f(x))
    assert len(graphs) == 4


def test_the_stride_of_a_size_1_dim_is_not_guarded():
    # Note [Strides of size-1 dims]: nanoGPT's generation loop feeds
    # idx[:, -4:] of a growing [1, L] sequence: [1, 4] with stride [L, 1]. Only
    # index 0 of dim 0 is read, so one graph serves every L (torch recompiles).
    def f(idx, w):
        return w[idx].sum(1) * 2

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    w = rand(9, 3)
    idx = ignis.tensor([[1, 2, 3, 4]])
    for step in range(6):
        x = idx[:, -4:]
        close(cf(x, w), f(x, w))
        idx = ignis.cat([idx, ignis.tensor([[step % 9]])], 1)
    assert len(graphs) == 1


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_size_1_dims_stride_changes_nothing_compiled(backend, monkeypatch):
    # The same, compiled: the size-1 dim's stride does not enter the
    # symbolic AOT graphs' numbers (a fourth trace at another stride fits).
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)

    def f(x):
        return (x.exp() * 2).sum(-1) + x.size(1)

    cf = ignis.compile(f, backend=backend)
    for length in (3, 4, 6, 9, 11, 14, 20):
        seq = rand(1, length + 5)
        for x in (seq[:, -length:], seq[:, :length]):  # strides [L+5, 1]
            close(cf(x), f(x), tol=1e-5)


def test_reading_the_stride_of_a_size_1_dim_guards_it():
    def f(x):
        return x * x.stride(0)

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for length in (4, 5, 7, 5):
        x = rand(1, length)[:, :3]  # [1, 3] with stride [L, 1]
        close(cf(x), f(x))
    assert len(graphs) == 3
    entries = guard_lines(f)  # most recently hit first: the last call's, L = 5
    assert "LAMBDA_GUARD: L['x'].stride()[0] == 5" in entries[0]
    assert any("LAMBDA_GUARD: L['x'].stride()[0] == 7" in e for e in entries)


def test_the_first_traces_sizes_compile_on_their_first_call_to_the_dynamic_graph(monkeypatch):
    # Note [The sizes before a graph went dynamic]: after 4, 6 the dynamic
    # graph serves 4 too (the newest entry is tried first); 4 was called
    # before, so it compiles at once rather than running eagerly once more.
    compiled = record_size_compiles(monkeypatch)

    def f(x, n):
        return (x * 2).sum(0) + n

    cf = ignis.compile(f, backend="aot_eager")
    for rows, n in ((4, 2), (6, 5), (4, 2)):
        x = rand(rows, 3)
        close(cf(x, n), f(x, n))
    assert compiled == [(6, 5), (4, 2)]  # (rows, n): the Sym inputs, (4, 2) at its first call
    for rows, n in ((4, 2), (6, 5), (7, 3)):
        x = rand(rows, 3)
        close(cf(x, n), f(x, n))
    assert compiled == [(6, 5), (4, 2)]  # 7 is new: eagerly, once


def test_size_objects_built_in_the_frame_are_traced():
    # ignis.Size(...) of symbolic and constant ints: no graph break, the
    # results are Sizes (constant ones as constants).
    def f(x):
        s = ignis.Size([x.shape[0], -1])
        return x.view(s) * 2, ignis.Size((2, 3)), ignis.Size()

    graphs = []
    cf = ignis.compile(f, backend=counting_backend(graphs))
    for n in (4, 5, 6):
        x = rand(n, 3, 2)
        got, want = cf(x), f(x)
        close(got[0], want[0])
        assert got[1] == want[1] and type(got[1]) is ignis.Size and got[2] == ignis.Size()
    assert len(graphs) == 2
