"""The fused recurrent cells (src/ignis/ops/rnn.cpp, kernels/cpu/rnn_cell):
`_thnn_fused_lstm_cell`, `_thnn_fused_gru_cell` and their backward ops
against the unfused formulas run by torch (torch has these ops for CUDA
only): values, workspaces and gradients, with and without biases, float32,
float64 and 16-bit floats, missing output gradients, double backward, the
threaded path, bad input; that the layers run one fused cell per step, and
match torch at sizes that take the threaded path; compiled cells equal
eager. test_rnn.py covers every layer option against torch, and
test_decompositions.py the cells' decompositions."""
from collections import OrderedDict

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn

torch = pytest.importorskip("torch")

OPS = ignis.ops
LSTM_CELL = OPS._thnn_fused_lstm_cell
GRU_CELL = OPS._thnn_fused_gru_cell


def rand(rng, *shape, dtype=np.float32):
    return rng.uniform(-2, 2, shape).astype(dtype)


def both(arrays, grad=True):
    """Each array as a leaf in both libraries (None stays None)."""
    i = [None if a is None else ignis.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    t = [None if a is None else torch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    return i, t


def close(a, b, rtol=1e-5, atol=1e-6, msg=""):
    a = a.detach().numpy() if hasattr(a, "detach") else a
    b = b.detach().numpy() if hasattr(b, "detach") else b
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=msg)


# ---- the unfused formulas, in torch -------------------------------------------------------
def torch_lstm_cell(ig, hg, cx, ib=None, hb=None):
    gates = ig + hg
    if ib is not None:
        gates = gates + ib + hb
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx + i * g
    return o * cy.tanh(), cy, torch.cat([i, f, g, o], 1)


def torch_gru_cell(ig, hg, hx, ib=None, hb=None):
    if ib is not None:
        ig, hg = ig + ib, hg + hb
    ir, iz, inn = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return (1 - z) * n + z * hx, torch.cat([r, z, n, hx, hn], 1)


def cell_args(kind, B, H, bias, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    G = 4 if kind == "lstm" else 3
    args = [rand(rng, B, G * H, dtype=dtype), rand(rng, B, G * H, dtype=dtype),
            rand(rng, B, H, dtype=dtype)]
    args += [rand(rng, G * H, dtype=dtype), rand(rng, G * H, dtype=dtype)] if bias else [None,
                                                                                        None]
    return args


def check_cell(kind, B, H, bias, dtype, rtol, atol):
    ins_i, ins_t = both(cell_args(kind, B, H, bias, dtype))
    fused, ref = (LSTM_CELL, torch_lstm_cell) if kind == "lstm" else (GRU_CELL, torch_gru_cell)
    out_i, out_t = fused(*ins_i), ref(*ins_t)
    assert len(out_i) == len(out_t)
    for k, (a, b) in enumerate(zip(out_i, out_t)):
        assert tuple(a.shape) == tuple(b.shape) and a.dtype == getattr(ignis, str(b.dtype)[6:])
        close(a, b, rtol, atol, f"output {k}")
    # The gradient of a weighted sum of the differentiable outputs (not the workspace).
    rng = np.random.default_rng(1)
    ws = [rand(rng, *o.shape, dtype=dtype) for o in out_t[:-1]]
    sum(((o * ignis.from_numpy(w)).sum() for o, w in zip(out_i[:-1], ws))).backward()
    sum(((o * torch.from_numpy(w)).sum() for o, w in zip(out_t[:-1], ws))).backward()
    for k, (a, b) in enumerate(zip(ins_i, ins_t)):
        if a is not None:
            close(a.grad, b.grad, rtol, atol, f"gradient of input {k}")


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype,rtol,atol", [(np.float32, 1e-5, 2e-6),
                                             (np.float64, 1e-12, 1e-13)])
def test_cell_matches_the_formula_in_torch(kind, bias, dtype, rtol, atol):
    check_cell(kind, 5, 7, bias, dtype, rtol, atol)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_threaded_rows_match_one_thread_and_the_formula(kind):
    # 400 rows of 4 * 64 gates: above the grain, so the rows are split.
    threads = ignis.get_num_threads()
    try:
        outs = []
        for n in (1, 2):
            ignis.set_num_threads(n)
            args = [None if a is None else ignis.from_numpy(a)
                    for a in cell_args(kind, 400, 64, True)]
            outs.append([t.numpy() for t in (LSTM_CELL if kind == "lstm" else GRU_CELL)(*args)])
    finally:
        ignis.set_num_threads(threads)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    check_cell(kind, 400, 64, True, np.float32, 1e-5, 2e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16bit_floats_compute_in_float32(kind, dtype):
    args = [None if a is None else ignis.from_numpy(a).to(getattr(ignis, dtype))
            for a in cell_args(kind, 4, 6, True)]
    fused = LSTM_CELL if kind == "lstm" else GRU_CELL
    got = fused(*args)
    want = fused(*[None if a is None else a.float() for a in args])
    for a, b in zip(got, want):
        assert a.dtype == getattr(ignis, dtype)
        close(a.float(), b.to(getattr(ignis, dtype)).float(), 0, 0)  # rounded once


def test_lstm_backward_with_a_missing_gradient():
    """grad_hy or grad_cy None is zero; has_bias=False gives no bias gradient."""
    ig, hg, cx, _, _ = [ignis.from_numpy(a) if a is not None else None
                        for a in cell_args("lstm", 3, 4, False, np.float64)]
    _, cy, ws = LSTM_CELL(ig, hg, cx)
    rng = np.random.default_rng(2)
    g = ignis.from_numpy(rand(rng, 3, 4, dtype=np.float64))
    zero = ignis.zeros(3, 4, dtype=ignis.float64)
    backward = OPS._thnn_fused_lstm_cell_backward_impl
    for gh, gc in ((None, g), (g, None), (None, None)):
        got = backward(gh, gc, cx, cy, ws, False)
        want = backward(zero if gh is None else gh, zero if gc is None else gc, cx, cy, ws, True)
        assert got[2] is None and tuple(want[2].shape) == (16,)
        close(got[0], want[0], 0, 0)
        close(got[1], want[1], 0, 0)
        close(want[2], want[0].sum(0), 1e-12, 1e-13)


def test_gru_backward_without_bias():
    ig, hg, hx, _, _ = [ignis.from_numpy(a) if a is not None else None
                        for a in cell_args("gru", 3, 4, False, np.float64)]
    _, ws = GRU_CELL(ig, hg, hx)
    g = ignis.from_numpy(rand(np.random.default_rng(3), 3, 4, dtype=np.float64))
    gi, gh, ghx, gib, ghb = OPS._thnn_fused_gru_cell_backward(g, ws, False)
    assert gib is None and ghb is None
    _, _, _, gib, ghb = OPS._thnn_fused_gru_cell_backward(g, ws, True)
    close(gib, gi.sum(0), 1e-12, 1e-13)
    close(ghb, gh.sum(0), 1e-12, 1e-13)
    # The input and hidden sides differ in the n gate only (hidden's is times r).
    H = 4
    close(gi[:, :2 * H], gh[:, :2 * H], 0, 0)
    close(gh[:, 2 * H:], gi[:, 2 * H:] * ws[:, :H], 1e-12, 1e-13)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_double_backward(kind):
    args = [ignis.from_numpy(a).requires_grad_() for a in cell_args(kind, 2, 3, True, np.float64)]
    fused = LSTM_CELL if kind == "lstm" else GRU_CELL
    n = 2 if kind == "lstm" else 1

    def f(*a):
        return tuple(fused(*a)[:n])

    assert ignis.autograd.gradcheck(f, args)
    assert ignis.autograd.gradgradcheck(f, args)


def test_bad_input_raises_torch_error_types():
    rng = np.random.default_rng(0)
    t = lambda *s: ignis.from_numpy(rand(rng, *s))  # noqa: E731
    with pytest.raises(RuntimeError, match="hidden_gates"):
        LSTM_CELL(t(3, 16), t(3, 12), t(3, 4))
    with pytest.raises(RuntimeError, match="input_gates"):
        LSTM_CELL(t(3, 12), t(3, 12), t(3, 4))  # 12 != 4 * 4
    with pytest.raises(RuntimeError, match="input_gates"):
        GRU_CELL(t(2, 12), t(2, 12), t(3, 4))  # batch 2 against 3
    with pytest.raises(RuntimeError, match="both"):
        LSTM_CELL(t(3, 16), t(3, 16), t(3, 4), t(16))
    with pytest.raises(RuntimeError, match="bias"):
        GRU_CELL(t(3, 12), t(3, 12), t(3, 4), t(12), t(9))
    with pytest.raises(RuntimeError, match="dtype"):
        LSTM_CELL(t(3, 16), t(3, 16).double(), t(3, 4))
    with pytest.raises(NotImplementedError):
        LSTM_CELL(*(ignis.zeros(3, n, dtype=ignis.int64) for n in (16, 16, 4)))
    with pytest.raises(RuntimeError, match="workspace"):
        OPS._thnn_fused_gru_cell_backward(t(3, 4), t(3, 16), True)
    # The layers check their input first, with torch's messages and types.
    for lib in (ignis, torch):
        with pytest.raises(RuntimeError, match="sequence length"):
            lib.nn.GRU(3, 4)(lib.zeros(0, 2, 3))
        out, _ = lib.nn.LSTM(3, 4)(lib.zeros(5, 0, 3, requires_grad=True))  # batch 0 is fine
        assert tuple(out.shape) == (5, 0, 4)
        with pytest.raises(RuntimeError):
            lib.nn.LSTMCell(5, 4)(lib.zeros(3, 6))
        with pytest.raises(RuntimeError):
            lib.nn.GRU(5, 4)(lib.zeros(2, 3, 5), lib.zeros(1, 2, 4))


# ---- the layers -------------------------------------------------------------------------------
def traced_op_names(fn):
    return [name.split(".")[0] for name in ignis._C._dispatch_trace(fn)]


@pytest.mark.parametrize("name,cell", [("LSTM", "_thnn_fused_lstm_cell"),
                                       ("GRU", "_thnn_fused_gru_cell")])
def test_layers_run_one_fused_cell_per_step(name, cell):
    m = getattr(nn, name)(5, 8, num_layers=2, bidirectional=True)
    x = ignis.randn(6, 3, 5)
    names = traced_op_names(lambda: m(x))
    assert names.count(cell) == 6 * 2 * 2
    assert "sigmoid" not in names and "tanh" not in names


def pair(name, *args, **kwargs):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    im = getattr(nn, name)(*args, **kwargs)
    im.load_state_dict(OrderedDict((k, ignis.from_numpy(v.detach().numpy().copy()))
                                   for k, v in tm.state_dict().items()))
    return im, tm


@pytest.mark.parametrize("name,kw", [("LSTM", dict(num_layers=2, proj_size=16)),
                                     ("LSTM", dict(bidirectional=True, batch_first=True)),
                                     ("GRU", dict(num_layers=2, bias=False))])
def test_layers_at_threaded_sizes_match_torch(name, kw):
    im, tm = pair(name, 24, 64, **kw)
    shape = (300, 5, 24) if kw.get("batch_first") else (5, 300, 24)
    (xi,), (xt,) = both([np.random.default_rng(4).standard_normal(shape).astype(np.float32)])
    (oi, si), (ot, st) = im(xi), tm(xt)
    close(oi, ot, 1e-4, 1e-5)
    si, st = (si if isinstance(si, tuple) else (si,)), (st if isinstance(st, tuple) else (st,))
    for a, b in zip(si, st):
        close(a, b, 1e-4, 1e-5)
    (oi.square().mean() + sum(s.sum() for s in si)).backward()
    (ot.square().mean() + sum(s.sum() for s in st)).backward()
    close(xi.grad, xt.grad, 1e-4, 1e-5)
    for (n, p), (_, q) in zip(im.named_parameters(), tm.named_parameters()):
        close(p.grad, q.grad, 1e-4, 2e-5, n)


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_compiled_cell_loop_matches_eager(name):
    """A loop over a cell with biases (the fused op's bias path), compiled:
    eager's values and gradients."""
    ignis.manual_seed(0)
    me, mc = getattr(nn, name)(4, 6), getattr(nn, name)(4, 6)
    mc.load_state_dict(me.state_dict())
    x = ignis.randn(5, 3, 4)

    def run(m):
        def f(x):
            h = ignis.zeros(3, 6)
            state = (h, h) if name == "LSTMCell" else h
            total = 0
            for t in range(x.shape[0]):
                state = m(x[t], state)
                total = total + (state[0] if name == "LSTMCell" else state).square().sum()
            return total
        return f

    want = run(me)(x)
    got = ignis.compile(run(mc), fullgraph=True)(x)
    close(got, want, 1e-5, 1e-6)
    want.backward()
    got.backward()
    for p, q in zip(mc.parameters(), me.parameters()):
        close(p.grad, q.grad, 1e-4, 1e-6)


# ---- eager training: one autograd node per direction (Note [Recurrence as one autograd node]) ----
def graph_node_names(t):
    seen, names, todo = set(), [], [t.grad_fn]
    while todo:
        f = todo.pop()
        if f is None or f in seen:  # wrappers are made per access; they compare by node
            continue
        seen.add(f)
        names.append(f.name())
        todo.extend(g for g, _ in f.next_functions)
    return names


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_eager_training_records_one_node_per_direction(name):
    m = getattr(nn, name)(3, 4, num_layers=2, bidirectional=True)
    names = graph_node_names(m(ignis.randn(5, 2, 3))[0])
    assert sum("_Recurrence" in n for n in names) == 4, names
    assert not any("fused" in n.lower() for n in names), names
    # A packed input (its batch shrinks) keeps the per-step form: a cell each step.
    packed = nn.utils.rnn.pack_padded_sequence(ignis.randn(5, 2, 3), [5, 3])
    names = graph_node_names(m(packed)[0].data)
    assert not any("_Recurrence" in n for n in names)
    assert sum("fused" in n.lower() for n in names) == 2 * 2 * 5, names  # layers, directions, steps


@pytest.mark.parametrize("name,kw", [("LSTM", dict(bidirectional=True)),
                                     ("GRU", dict(num_layers=2)),
                                     ("GRU", dict(bias=False))])
def test_layer_double_backward(name, kw):
    """create_graph through the one-node recurrence differentiates the
    recorded steps, so second derivatives are right (gradgradcheck)."""
    ignis.manual_seed(0)
    m = getattr(nn, name)(2, 3, **kw).double()
    x = ignis.randn(3, 2, 2, dtype=ignis.float64, requires_grad=True)
    D = 2 if kw.get("bidirectional") else 1
    h0 = ignis.randn(kw.get("num_layers", 1) * D, 2, 3, dtype=ignis.float64,
                     requires_grad=True)
    state = (h0, h0 * 0.5) if name == "LSTM" else h0

    def f(x, h0):
        out, hn = m(x, (h0, h0 * 0.5) if name == "LSTM" else h0)
        return out, (hn[0] if name == "LSTM" else hn)

    assert m(x, state)[0].grad_fn is not None
    assert ignis.autograd.gradcheck(f, (x, h0))
    assert ignis.autograd.gradgradcheck(f, (x, h0))
    # and the weights' second derivatives, against the per-step (packed) form
    out, _ = m(x, state)
    g = ignis.autograd.grad(out.square().sum(), m.weight_hh_l0, create_graph=True)[0]
    gg = ignis.autograd.grad(g.square().sum(), x)[0]
    lengths = [3, 3]
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths)
    out_p, _ = m(packed, state)
    g_p = ignis.autograd.grad(out_p.data.square().sum(), m.weight_hh_l0, create_graph=True)[0]
    gg_p = ignis.autograd.grad(g_p.square().sum(), x)[0]
    close(g, g_p, 1e-10, 1e-12)
    close(gg, gg_p, 1e-10, 1e-12)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_outputs_dropped_without_backward_free_their_steps(name):
    # ctx keeps every step's state and workspace; none of them may be an
    # output, or the output -> node -> ctx -> output cycle would keep them all.
    m = getattr(nn, name)(16, 64)
    x = ignis.randn(50, 32, 16, requires_grad=True)
    stats = ignis._C._cpu_memory_stats
    m(x)
    before = stats()["allocated_bytes.all.current"]
    for _ in range(3):
        out, state = m(x)
    del out, state
    assert stats()["allocated_bytes.all.current"] == before
