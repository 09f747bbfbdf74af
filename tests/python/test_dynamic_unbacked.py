"""Data-dependent sizes inside one graph (docs/dynamic_shapes.md "Data-dependent
sizes"; Note [Unbacked symbols], Note [Splitting at data-dependent sizes]).

x[mask], masked_select, nonzero and where(cond) join the captured graph with
an unbacked size u0 (torch breaks the graph there unless
capture_dynamic_output_shape_ops is set; ignis sets it by default). Every
backend gives eager's values and gradients over random data (so random
counts, zero included); a decision on u0 breaks the graph at its line with
the reason; the concrete backends run the graph in stages.
"""
import numpy as np
import pytest

import ignis
from _size_compiles import record_size_compiles
from ignis._dynamo.utils import counters

BACKENDS = ["eager", "aot_eager", "inductor"]


def _close(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            _close(g, w)
        return
    if isinstance(want, ignis.Tensor):
        assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
        assert got.dtype == want.dtype
        assert got.device.type == want.device.type
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(), rtol=1e-5,
                                   atol=1e-6)
    else:
        assert got == want, (got, want)


def _run(fn, make_args, backend, calls=6, grad_of=()):
    """Calls fn compiled and eagerly on `calls` argument sets; compares values
    and the gradients of the arguments at `grad_of`. Returns the explain()
    of the first argument set."""
    ignis.compiler.reset()
    cf = ignis.compile(fn, backend=backend)
    for i in range(calls):
        args = make_args(i)
        got = cf(*args)
        if grad_of:
            _total(got).backward()
            got_grads = [args[j].grad.cpu().clone() for j in grad_of]
            for j in grad_of:
                args[j].grad = None
        want = fn(*args)
        _close(got, want)
        if grad_of:
            _total(want).backward()
            for g, j in zip(got_grads, grad_of):
                np.testing.assert_allclose(g.numpy(), args[j].grad.cpu().numpy(), rtol=1e-5, atol=1e-6)
    ex = ignis.compiler.explain(fn)(*make_args(0))
    ignis.compiler.reset()
    return ex


def _total(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return sum(o.float().sum() for o in outs if isinstance(o, ignis.Tensor) and o.requires_grad)


def _seeded(make):
    def args(i):
        ignis.manual_seed(100 + i)
        return make(i)
    return args


def mask_rows(x, w):
    m = x[:, 0] > 0.3
    s = x[m] @ w
    return s.relu().sum(0) / max(s.shape[0], 1)


def masked_sum(x, y):
    h = ignis.tanh(x * y)
    m = h > 0.1
    return (h[m] * 2 + 1).sum() / (m.sum() + 1)


def nonzero_coords(x):
    idx = (x > 0.5).nonzero()
    return idx * 2 + 1, idx.shape[0]


def argwhere_both_forms(x):
    return ignis.argwhere(x > 0.5).sum(0) + (x < 0.2).argwhere().shape[0]


def masked_columns(x, m, m2):
    # x[:, mask] and x[:, :, mask2]: full slices, then the mask
    s = x[:, m]
    return s * 2, s.shape[1], (x.transpose(0, 1)[:, :, m2].exp() + 1).sum(1)


def nonzero_tuple(x):
    r, c = ignis.nonzero(x > 0, as_tuple=True)
    return x[r, c] * 2 + x[r].sum(1)


def where_one_arg(x):
    (i,) = ignis.where(x > 0.5)
    return x[i].exp().sum() + i.float().mean()


def masked_select_both_forms(x, m):
    return ignis.masked_select(x, m).sum() + x.masked_select(m).square().sum()


def count_returned(x):
    s = x[x > 0]
    n = s.shape[0]
    return s.view(n, 1) * ignis.ones(1, 3, device=x.device), n


def mask_among_basic(x, m, m2):
    # a mask among ints, slices, None and Ellipsis: torch applies the basic
    # part first, then the mask where it stands
    return (x[0, m] * 2).sum() + x[m2[:, 0], 1:].exp().sum(), x[..., m2[0]] + 1, x[None, 1, :, m2[0]]


CASES = {
    "mask_rows": (mask_rows, lambda i: (ignis.randn(7, 4, requires_grad=True), ignis.randn(4, 3)),
                  (0,)),
    "masked_sum": (masked_sum, lambda i: (ignis.randn(8, 5, requires_grad=True), ignis.randn(8, 5)),
                   (0,)),
    "nonzero_coords": (nonzero_coords, lambda i: (ignis.rand(5, 3),), ()),
    "argwhere": (argwhere_both_forms, lambda i: (ignis.rand(5, 3),), ()),
    "masked_columns": (masked_columns, lambda i: (ignis.randn(3, 6, 2, requires_grad=True),
                                                   ignis.rand(6) < 0.5, ignis.rand(2) < 0.5), (0,)),
    "nonzero_tuple": (nonzero_tuple, lambda i: (ignis.randn(6, 4, requires_grad=True),), (0,)),
    "where_one_arg": (where_one_arg, lambda i: (ignis.rand(10, requires_grad=True),), (0,)),
    "masked_select": (masked_select_both_forms,
                      lambda i: (ignis.randn(4, 5, requires_grad=True), ignis.randn(5) > 0), (0,)),
    "count_returned": (count_returned, lambda i: (ignis.randn(6, 4),), ()),
    "mask_among_basic": (mask_among_basic, lambda i: (ignis.randn(3, 5, 4, requires_grad=True),
                                                      ignis.rand(5, 4) < 0.5, ignis.rand(3, 4) < 0.5),
                         (0,)),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_data_dependent_ops_stay_in_one_graph_with_eagers_values(name, backend):
    fn, make, grad_of = CASES[name]
    ex = _run(fn, _seeded(make), backend, grad_of=grad_of)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)


@pytest.mark.parametrize("backend", BACKENDS)
def test_counts_of_zero_and_of_every_element(backend):
    # u0's range is [0, numel]: both ends run through the same graph.
    def f(x):
        return (x[x > 0] + 1).sum() * 2
    cf = ignis.compile(f, backend=backend)
    for x in (-ignis.rand(4, 3) - 0.1, ignis.rand(4, 3) + 0.1, ignis.randn(4, 3)):
        _close(cf(x), f(x))
    ignis.compiler.reset()


def test_the_graph_carries_unbacked_sizes_as_torch_prints_them():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    cf = ignis.compile(mask_rows, backend=backend)
    cf(ignis.randn(7, 4), ignis.randn(4, 3))
    text = graphs[0].print_readable(print_output=False)
    # torch 2.13 with capture_dynamic_output_shape_ops prints these the same way
    assert 'getitem_1: "f32[u0, 4]" = l_x_[m]' in text, text
    assert 's: "f32[u0, 3]" = getitem_1 @ l_w_' in text, text
    assert '"Sym(Max(1, u0))" = max(size, 1)' in text, text
    ignis.compiler.reset()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_on_a_count_breaks_there_and_names_it(backend):
    def f(x):
        s = x[x > 0]
        if s.shape[0] > 3:
            return s.sum()
        return s.mean()
    ex = _run(f, lambda i: (ignis.randn(2 + 3 * i, 2),), backend)  # counts on both sides of 3
    assert ex.graph_break_count == 1
    reason = ex.break_reasons[0].reason
    assert reason.startswith("Could not guard on data-dependent expression u0 > 3 (u0 is the count "
                             "of True elements of a boolean mask index at "), reason
    assert "test_dynamic_unbacked.py" in reason


def test_a_count_used_as_a_python_int_breaks_with_the_reason():
    def f(x):
        s = x[x > 0]
        return s.sum() * float(s.shape[0])
    ex = _run(f, lambda i: (ignis.randn(5, 3),), "aot_eager")
    reasons = [b.reason for b in ex.break_reasons]
    assert any("data-dependent expression u0" in r for r in reasons), reasons


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_slice_bounded_by_a_count_breaks_there_and_the_resume_reads_the_count(backend):
    """`y[:n]`, n a mask's count: the slice's clamp against y's size is a
    decision on u0, so the graph breaks at the subscript; the slice object on
    the stack is rebuilt at run time from the count the graph returns (it
    raised "Could not specialize ... u0" to the user before), so every count
    (below y's length and at it) gives eager's values."""
    def f(x, m, y):
        s = x[m]
        n = s.shape[0]
        return y[:n] * 2 + s

    counts = [3, 1, 5, 2, 4, 5]

    def args(i):
        m = ignis.zeros(6, dtype=ignis.bool)
        m[:counts[i]] = True
        return ignis.arange(6.0), m, ignis.arange(5.0) * 10
    ex = _run(f, args, backend)
    assert ex.graph_break_count == 1
    reason = ex.break_reasons[0].reason
    assert "data-dependent expression u0" in reason and "boolean mask index" in reason, reason
    with pytest.raises(ignis.compiler.Unsupported, match="data-dependent expression u0"):
        ignis.compile(f, fullgraph=True)(*args(0))
    ignis.compiler.reset()


def test_fullgraph_keeps_a_masked_function_whole():
    cf = ignis.compile(masked_sum, fullgraph=True)
    x, y = ignis.randn(8, 5), ignis.randn(8, 5)
    _close(cf(x, y), masked_sum(x, y))

    def branchy(x):
        s = x[x > 0]
        return s.sum() if s.shape[0] > 2 else s.mean()
    with pytest.raises(Exception, match="data-dependent expression u0 > 2"):
        ignis.compile(branchy, fullgraph=True)(ignis.randn(4, 3))
    ignis.compiler.reset()


def test_the_setting_off_breaks_as_dynamo_does(monkeypatch):
    monkeypatch.setattr(ignis.compiler.config, "capture_dynamic_output_shape_ops", False)
    ex = _run(masked_sum, _seeded(CASES["masked_sum"][1]), "aot_eager", calls=2, grad_of=(0,))
    assert ex.graph_count == 2 and ex.graph_break_count == 1
    assert ex.break_reasons[0].reason.startswith("indexing with a boolean mask")
    with pytest.raises(ValueError, match="must be a bool"):
        ignis.compiler.config.capture_dynamic_output_shape_ops = 1


def test_in_place_writes_keep_their_order_around_the_split():
    # The mask selects from y before y is written: the stages keep program order.
    def f(x):
        y = x * 2
        s = y[y > 0]
        y.add_(1)
        return s.sum() + y.sum(), s
    ex = _run(f, _seeded(lambda i: (ignis.randn(5, 4),)), "inductor")
    assert ex.graph_count == 1


def test_a_graph_that_switches_grad_mode_runs_as_captured():
    def f(x):
        with ignis.no_grad():
            t = x * 2
        s = x[t > 0]
        return s.sum() + t.sum()
    _run(f, _seeded(lambda i: (ignis.randn(5, 4, requires_grad=True),)), "aot_eager", grad_of=(0,))


def test_stages_compile_per_size_and_a_count_that_recurs_compiles(monkeypatch):
    """The stage after the mask is keyed by the count: a count seen again
    compiles on its second call (Note [Compiling a size on its second
    call]); one seen once runs that stage eagerly."""
    import ignis._compile as comp
    keys = []
    real = comp.SizeCache.compile

    def counting(self, key, args):
        keys.append(key)
        return real(self, key, args)
    monkeypatch.setattr(comp.SizeCache, "compile", counting)

    def f(x, m):
        return (x[m] * 3).sum(1)  # (not over the rows: no fold, the stages)
    cf = ignis.compile(f, backend="aot_eager")
    x = ignis.randn(6, 2)
    m1 = ignis.tensor([True, False, True, True, False, False])
    m2 = ignis.tensor([True, True, True, True, True, False])
    for m in (m1, m1, m2, m1):
        _close(cf(x, m), f(x, m))
    # stage 0 is empty; the stage after the mask compiles for 3 rows (second call) only
    assert keys == [(((3, 2), (2, 1)),)], keys
    ignis.compiler.reset()


def test_unique_graphs_counter_counts_one_graph():
    before = counters["stats"]["unique_graphs"]
    cf = ignis.compile(masked_sum)
    for i in range(3):
        cf(ignis.randn(8, 5), ignis.randn(8, 5))
    assert counters["stats"]["unique_graphs"] - before == 1
    ignis.compiler.reset()


def test_masks_among_basic_indices_match_torch():
    # x[0, m], x[m, 1:], x[..., m], x[None, 1, :, m]: ignis's values are
    # torch's (basic indexing first, then the mask), in one graph.
    torch = pytest.importorskip("torch")
    ignis.manual_seed(0)
    x, m, m2 = ignis.randn(3, 5, 4), ignis.rand(5, 4) < 0.5, ignis.rand(3, 4) < 0.5
    got = ignis.compile(mask_among_basic, backend="inductor")(x, m, m2)
    want = mask_among_basic(*[torch.from_numpy(a.numpy()) for a in (x, m, m2)])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    ignis.compiler.reset()


def test_unique_slices_match_torch():
    torch = pytest.importorskip("torch")
    x = ignis.randint(0, 2, (7, 3))
    got = ignis.compile(lambda x: ignis.unique(x, dim=0, return_inverse=True, return_counts=True),
                        backend="inductor")(x)
    want = torch.unique(torch.from_numpy(x.numpy()), dim=0, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    ignis.compiler.reset()


def test_torch_breaks_where_ignis_does_not():
    # The peer, on the same function: Dynamo's default gives two graphs.
    torch = pytest.importorskip("torch")
    import torch._dynamo
    from capture_util import counting_backend
    torch._dynamo.reset()
    graphs = []
    x, y = torch.randn(8, 5), torch.randn(8, 5)

    def tf(x, y):  # masked_sum, in torch
        h = torch.tanh(x * y)
        m = h > 0.1
        return (h[m] * 2 + 1).sum() / (m.sum() + 1)
    torch.compile(tf, backend=counting_backend(graphs))(x, y)
    assert len(graphs) == 2
    torch._dynamo.reset()


def unique_all(x):
    v, inv, c = ignis.unique(x, return_inverse=True, return_counts=True)
    return v * 2, inv + 1, c.float().mean(), x.unique().sum()


def unique_consecutive_runs(x):
    return x.unique_consecutive(return_counts=True)[1].sum() + (x > 1).nonzero().shape[0]


def unique_slices(x):
    # unique rows and columns: u0 along the dim, the inverse over that dim
    v, inv, c = ignis.unique(x > 2, dim=0, return_inverse=True, return_counts=True)
    cols = ignis.unique_consecutive(x, dim=-1)
    return v.float() * 2, inv + 1, c, cols.sum(0), cols.shape[1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [unique_all, unique_consecutive_runs, unique_slices],
                         ids=lambda f: f.__name__)
def test_unique_stays_in_the_graph(fn, backend):
    ex = _run(fn, _seeded(lambda i: (ignis.randint(0, 5, (3, 4)),)), backend)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    # NumPy's view of the same call
    x = ignis.tensor([[4, 1], [1, 3]])
    v, inv, c = ignis.compile(unique_all, backend=backend)(x)[:2] + (None,)
    nv, ninv = np.unique(x.numpy(), return_inverse=True)
    np.testing.assert_array_equal(v.numpy(), nv * 2)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(2, 2) + 1)
    ignis.compiler.reset()


# --- Note [Masked reductions without a count] ----------------------------------------------
def masked_losses(pred, tgt, keep):
    d = (pred - tgt)[keep]
    return (d * d).mean() + (pred[pred > 0.5].sin() * 2 + 1).sum() + \
        ignis.masked_select(pred, pred < 0).neg().sqrt().sum()


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_masked_reductions_compile_without_their_count(backend, monkeypatch):
    # No stages: the concrete backends get one graph with no data-dependent op,
    # so a new count every call costs nothing; values and gradients are
    # eager's, with no NaN from sqrt'(0) at the unselected positions.
    import ignis._unbacked as ub

    def no_stages(*a, **k):
        raise AssertionError("a masked reduction went to the stages")
    monkeypatch.setattr(ub, "StagedGraph", no_stages)
    ex = _run(masked_losses, _seeded(lambda i: (ignis.randn(8, 5, requires_grad=True), ignis.randn(8, 5),
                                                ignis.rand(8, 5) < 0.5)), backend, grad_of=(0,))
    assert ex.graph_count == 1 and ex.graph_break_count == 0


def test_masked_reductions_that_need_the_count_keep_the_stages():
    # Two masked tensors combined, a count used, an integer mean (eager's error
    # stays eager's): none of these is folded, and each still matches eager.
    def two(x, y, m):
        return (x[m] * y[m]).sum()

    def counted(x):
        s = x[x > 0]
        return s.sum() / s.shape[0]
    _run(two, _seeded(lambda i: (ignis.randn(5, 4, requires_grad=True), ignis.randn(5, 4),
                                 ignis.rand(5, 4) < 0.5)), "inductor", grad_of=(0,))
    _run(counted, _seeded(lambda i: (ignis.randn(5, 4) + 0.5,)), "inductor")
    cf = ignis.compile(lambda x: x[x > 0].mean(), backend="inductor")
    with pytest.raises(RuntimeError):
        cf(ignis.tensor([1, -2, 3]))
    ignis.compiler.reset()


def masked_pooling(h, valid):
    # masked mean pooling over the valid tokens, and sums over the selected rows
    return h[valid].mean(0), (h[valid] * 2).sum(0), ignis.sum(h[valid].tanh()), h[valid].sum(dim=0)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_row_masked_reductions_compile_without_their_count(backend, monkeypatch):
    # A row mask (of h's first dims) folds too: where over the broadcast
    # mask, summed over the mask's dims (and over all for a full sum).
    import ignis._unbacked as ub

    def no_stages(*a, **k):
        raise AssertionError("a masked reduction went to the stages")
    monkeypatch.setattr(ub, "StagedGraph", no_stages)
    ex = _run(masked_pooling, _seeded(lambda i: (ignis.randn(4, 7, 5, requires_grad=True),
                                                 ignis.rand(4, 7) < 0.5)), backend, grad_of=(0,))
    assert ex.graph_count == 1 and ex.graph_break_count == 0


# --- on the GPU -------------------------------------------------------------------------------
CUDA_REASON = "" if ignis.cuda.is_available() else ignis._C._cuda_unavailable_reason()


def _on_cuda(make):
    """The same argument sets with every tensor moved to the GPU (leaves stay
    leaves, so their gradients land on them)."""
    def args(i):
        return tuple(a.detach().cuda().requires_grad_(a.requires_grad) if isinstance(a, ignis.Tensor)
                     else a for a in make(i))
    return args


@pytest.mark.skipif(bool(CUDA_REASON), reason=f"no usable CUDA GPU here: {CUDA_REASON}")
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
@pytest.mark.parametrize("name", list(CASES) + ["masked_losses", "masked_pooling"])
def test_data_dependent_graphs_run_on_cuda_with_eagers_values(name, backend):
    # The stages (and the folded masked reductions) on CUDA tensors: values and
    # gradients equal eager CUDA's, and the graph stays one.
    if name == "masked_losses":
        fn, make, grad_of = masked_losses, lambda i: (ignis.randn(8, 5, requires_grad=True), ignis.randn(8, 5),
                                                      ignis.rand(8, 5) < 0.5), (0,)
    elif name == "masked_pooling":
        fn, make, grad_of = masked_pooling, lambda i: (ignis.randn(4, 7, 5, requires_grad=True),
                                                       ignis.rand(4, 7) < 0.5), (0,)
    else:
        fn, make, grad_of = CASES[name]
    ex = _run(fn, _on_cuda(_seeded(make)), backend, calls=4, grad_of=grad_of)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, str(ex)
    ignis.compiler.reset()


# ---- Tensor.item() of an integer tensor (Note [Tensor.item() as an unbacked int]) ----

def item_scaled(x, k):
    n = k.sum().item()
    return x * n + 1, n - 2


def item_bounded_slice(x, k):
    n = k.max().item()
    ignis._check(n >= 0)
    ignis._check(n <= x.shape[0])
    return x[:n].sum() * 2, n


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [item_scaled, item_bounded_slice])
def test_an_integer_item_is_an_unbacked_int_in_one_graph(fn, backend):
    """k.sum().item() joins the graph as u0 (torch breaks there unless
    capture_scalar_outputs is set): arithmetic, an op argument, a slice bound
    after ignis._check, and the value returned (a Python int, read from the
    graph's output) give eager's values for every value, 0 and negatives
    included; the concrete backends run item() between stages."""
    values = [[1, 2], [0, 0], [3, 5], [-4, 1], [1, 2], [8, 0]]

    def args(i):
        k = ignis.tensor(values[i])
        if fn is item_bounded_slice:
            k = k.abs().clamp(max=8)
        return ignis.randn(8), k
    ex = _run(fn, args, backend)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex.break_reasons
    assert ".item()" in ex.graphs[0].code
    got = ignis.compile(fn, backend=backend)(*args(2))[1]
    assert type(got) is int and got == fn(*args(2))[1]
    ignis.compiler.reset()


def test_a_check_on_an_item_value_raises_at_run_time():
    f = ignis.compile(item_bounded_slice, backend="inductor")
    x = ignis.randn(8)
    _close(f(x, ignis.tensor([3, 1])), item_bounded_slice(x, ignis.tensor([3, 1])))
    with pytest.raises(RuntimeError, match=r"ignis._check\(\) at .*: expected u0 <= 8, where u0 is "
                                           r"the value of Tensor.item\(\) at "):
        f(x, ignis.tensor([9, 1]))
    with pytest.raises(RuntimeError, match=r"expected u0 >= 0|expected 0 <= u0"):
        f(x, ignis.tensor([-9, -1]))
    ignis.compiler.reset()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_on_an_item_value_breaks_there_unless_its_dtype_decides(backend):
    def f(x, k):
        n = k.sum().item()
        if n > 3:
            return x + n
        return x - n

    def g(x, k):  # an int8's value is below 200 whatever the data: no break
        n = k[0].item()
        if n < 200:
            return x + n
        return x

    ex = _run(f, lambda i: (ignis.randn(4), ignis.tensor([i, 1])), backend)
    assert ex.graph_break_count == 1
    reason = ex.break_reasons[0].reason
    assert reason.startswith("Could not guard on data-dependent expression u0 > 3 (u0 is the value "
                             "of Tensor.item() at "), reason
    ex = _run(g, lambda i: (ignis.randn(4), ignis.tensor([i - 3, 1], dtype=ignis.int8)), backend)
    assert ex.graph_break_count == 0 and ex.graph_count == 1


def test_float_and_bool_items_and_the_setting_off_break_as_dynamo_does(monkeypatch):
    def f(x):
        return x * x.abs().max().item()

    def g(x):
        return x + int((x > 0).any().item())
    for fn in (f, g):
        ex = _run(fn, lambda i: (ignis.randn(4),), "aot_eager", calls=2)
        assert ex.graph_break_count == 1 and "Tensor.item()" in ex.break_reasons[0].reason
    monkeypatch.setattr(ignis.compiler.config, "capture_scalar_outputs", False)
    ex = _run(item_scaled, lambda i: (ignis.randn(4), ignis.tensor([i, 2])), "aot_eager", calls=2)
    assert ex.graph_count == 2 and ex.graph_break_count == 1
    assert "Tensor.item()" in ex.break_reasons[0].reason
    with pytest.raises(ValueError, match="capture_scalar_outputs must be a bool"):
        ignis.compiler.config.capture_scalar_outputs = 1


# ---- an item as a tensor operand (Note [An item as a tensor operand]) ----

@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_an_item_used_only_as_a_tensor_operand_compiles_once(monkeypatch, backend):
    """A count used only in tensor arithmetic (either side, true division
    too) is read as its 0-dim tensor: the graph loses its stage boundary and
    compiles once, not once per count, and every count (0 included) gives
    eager's values and dtypes."""
    import ignis._compile as comp
    monkeypatch.setattr(comp, "PER_SIZE_COMPILE_AFTER", 1)
    stages = record_size_compiles(monkeypatch)

    def f(x, m):
        n = m.sum().item()
        return (x * n + 1).sum() / n, x - n, n * x

    g = ignis.compile(f, backend=backend)
    before = counters["stats"]["unique_graphs"]
    for i in range(6):
        x, m = ignis.randn(6, 3), ignis.rand(6, 3) < 0.15 * i
        got, want = g(x, m), f(x, m)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert stages == [] and counters["stats"]["unique_graphs"] - before == 1
    ignis.compiler.reset()


@pytest.mark.parametrize("case", ["int32", "bool", "uint8", "int16_floordiv", "float16",
                                  "int32_truediv", "zero_dim_int32"])
def test_an_item_operand_keeps_the_dtype_a_python_int_gives(case):
    """Type promotion with the 0-dim int64 tensor in the int's place is the
    int's: x's dtype within its category, int64 for bool, the default float
    for true division; a 0-dim int32 x would promote to int64 with a tensor,
    so that use keeps the int (the stage after the item). Values and dtypes
    are eager's."""
    x = {"int32": ignis.tensor([[3, -4], [5, 6]], dtype=ignis.int32),
         "bool": ignis.tensor([True, False, True]),
         "uint8": ignis.tensor([1, 200, 7], dtype=ignis.uint8),
         "int16_floordiv": ignis.tensor([-7, 9, 12], dtype=ignis.int16),
         "float16": ignis.tensor([0.5, -1.5], dtype=ignis.float16),
         "int32_truediv": ignis.tensor([3, -4, 9], dtype=ignis.int32),
         "zero_dim_int32": ignis.tensor(7, dtype=ignis.int32)}[case]
    op = {"int16_floordiv": lambda a, n: a // n, "int32_truediv": lambda a, n: a / n}.get(
        case, lambda a, n: a * n + a)

    def f(x, k):
        return op(x, k.sum().item())
    g = ignis.compile(f, backend="aot_eager")
    for v in ([2, 1], [-3, 1], [40, 2]):
        k = ignis.tensor(v)
        got, want = g(x, k), f(x, k)
        assert got.dtype == want.dtype, (case, got.dtype, want.dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    ignis.compiler.reset()


def test_an_item_operand_reads_the_value_taken_not_a_later_write():
    """The tensor the item's uses read is copied where the item was taken: an
    in-place write to its source afterwards does not reach them."""
    def f(x, k):
        s = k.sum()
        n = s.item()
        s.add_(100)
        return x * n, s
    g = ignis.compile(f, backend="aot_eager")
    x, k = ignis.randn(4), ignis.tensor([2, 3])
    for a, b in zip(g(x, k), f(x, k)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    ignis.compiler.reset()
