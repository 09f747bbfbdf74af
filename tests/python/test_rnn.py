"""Recurrent layers (nn.RNN/LSTM/GRU and their cells) and nn.utils.rnn
against torch: parameter names, shapes and order, initialisation, outputs
and gradients with torch's weights for every option (layers, directions,
batch_first, bias, proj_size, h0, unbatched input, dropout between layers),
packed and padded sequences, error types, reprs, and ignis.compile of an
LSTM and a GRU giving eager's values and gradients."""
import math
from collections import OrderedDict

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
from ignis.nn.utils import rnn as irnn

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn


def from_torch(t):
    return ignis.from_numpy(t.detach().numpy().copy())


def to_np(t):
    return t.detach().numpy()


def close(a, b, rtol=1e-5, atol=1e-5, msg=""):
    np.testing.assert_allclose(to_np(a), to_np(b), rtol=rtol, atol=atol, err_msg=msg)


def pair(name, *args, **kwargs):
    """The same layer in both libraries, ignis loaded from torch's state_dict
    (tensor by tensor)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(*args, **kwargs)
    im = getattr(nn, name)(*args, **kwargs)
    sd = tm.state_dict()
    assert list(sd) == list(im.state_dict())
    im.load_state_dict(OrderedDict((k, from_torch(v)) for k, v in sd.items()))
    return im, tm


def randn(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def both(a, grad=True):
    t = torch.from_numpy(a.copy()).requires_grad_(grad)
    i = ignis.from_numpy(a.copy()).requires_grad_(grad)
    return i, t


def flat(state):
    return list(state) if isinstance(state, tuple) else [state]


def check_backward(im, tm, i_outs, t_outs, i_ins, t_ins, rtol=1e-4, atol=1e-5):
    """Backward of a weighted sum of all outputs: input and parameter grads."""
    il = sum((o * (k + 1)).sum() for k, o in enumerate(i_outs))
    tl = sum((o * (k + 1)).sum() for k, o in enumerate(t_outs))
    il.backward()
    tl.backward()
    for a, b in zip(i_ins, t_ins):
        close(a.grad, b.grad, rtol, atol, "input grad")
    for (n, p), (_, q) in zip(im.named_parameters(), tm.named_parameters()):
        close(p.grad, q.grad, rtol, atol, n)


# ---- parameters -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [
    ("RNN", {}), ("RNN", dict(num_layers=3, bidirectional=True, bias=False)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, proj_size=3, bidirectional=True)),
    ("LSTM", dict(proj_size=2, bias=False)),
    ("GRU", dict(num_layers=2)), ("GRU", dict(bidirectional=True, bias=False)),
])
def test_parameter_names_shapes_and_order(name, kw):
    tm = getattr(torch.nn, name)(5, 7, **kw)
    im = getattr(nn, name)(5, 7, **kw)
    t = [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    i = [(n, tuple(p.shape)) for n, p in im.named_parameters()]
    assert i == t
    assert im._flat_weights_names == tm._flat_weights_names
    assert [[tuple(w.shape) for w in ws] for ws in im.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in tm.all_weights]
    assert repr(im) == repr(tm)
    im.flatten_parameters()  # a no-op, as on the CPU in torch


@pytest.mark.parametrize("name,chunks", [("RNNCell", 1), ("LSTMCell", 4), ("GRUCell", 3)])
def test_cell_parameters(name, chunks):
    for bias in (True, False):
        tm = getattr(torch.nn, name)(5, 7, bias=bias)
        im = getattr(nn, name)(5, 7, bias=bias)
        assert [(n, tuple(p.shape)) for n, p in im.named_parameters()] == \
            [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
        assert repr(im) == repr(tm)
    assert repr(nn.RNNCell(3, 4, nonlinearity="relu")) == \
        repr(torch.nn.RNNCell(3, 4, nonlinearity="relu"))


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"])
def test_initialisation_is_uniform_over_hidden_size(name):
    ignis.manual_seed(0)
    hidden = 64
    m = getattr(nn, name)(32, hidden)
    bound = 1 / math.sqrt(hidden)
    for n, p in m.named_parameters():
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound, n
        if a.size > 1000:
            assert abs(a.std() - bound / math.sqrt(3)) < 0.05 * bound, n
            assert abs(a.mean()) < 0.05 * bound, n
    ignis.manual_seed(1)
    m2 = getattr(nn, name)(32, hidden)
    assert not np.array_equal(m2.weight_hh_l0.detach().numpy() if hasattr(m2, "weight_hh_l0")
                              else m2.weight_hh.detach().numpy(),
                              m.weight_hh_l0.detach().numpy() if hasattr(m, "weight_hh_l0")
                              else m.weight_hh.detach().numpy())


# ---- forward and backward against torch ----------------------------------------------------------
CONFIGS = [
    ("RNN", {}),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("RNN", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", {}),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(num_layers=2, batch_first=True, bias=False)),
    ("LSTM", dict(proj_size=3)),
    ("LSTM", dict(proj_size=4, num_layers=3, bidirectional=True, batch_first=True)),
    ("GRU", {}),
    ("GRU", dict(num_layers=3, bidirectional=True, bias=False)),
    ("GRU", dict(num_layers=2, batch_first=True)),
]


def _h0(name, kw, batch, seed=5):
    D = 2 if kw.get("bidirectional") else 1
    L = kw.get("num_layers", 1)
    h_size = kw.get("proj_size") or 7
    shape = (L * D,) + ((batch,) if batch else ())
    h = both(randn(*shape, h_size, seed=seed))
    if name != "LSTM":
        return h
    c = both(randn(*shape, 7, seed=seed + 1))
    return (h[0], c[0]), (h[1], c[1])


@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("name,kw", CONFIGS)
def test_forward_backward_match_torch(name, kw, with_h0):
    im, tm = pair(name, 5, 7, **kw)
    shape = (4, 6, 5) if kw.get("batch_first") else (6, 4, 5)
    xi, xt = both(randn(*shape))
    ins_i, ins_t = [xi], [xt]
    if with_h0:
        hi, ht = _h0(name, kw, 4)
        ins_i += flat(hi)
        ins_t += flat(ht)
        oi, si = im(xi, hi)
        ot, st = tm(xt, ht)
    else:
        oi, si = im(xi)
        ot, st = tm(xt)
    assert tuple(oi.shape) == tuple(ot.shape)
    close(oi, ot)
    for a, b in zip(flat(si), flat(st)):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b)
    check_backward(im, tm, [oi] + flat(si), [ot] + flat(st), ins_i, ins_t)


@pytest.mark.parametrize("name,kw", [CONFIGS[2], CONFIGS[4], CONFIGS[7], CONFIGS[9]])
def test_unbatched_input(name, kw):
    im, tm = pair(name, 5, 7, **kw)
    xi, xt = both(randn(6, 5))
    oi, si = im(xi)
    ot, st = tm(xt)
    assert tuple(oi.shape) == tuple(ot.shape)
    close(oi, ot)
    hi, ht = _h0(name, kw, None)
    oi, si = im(xi, hi)
    ot, st = tm(xt, ht)
    close(oi, ot)
    for a, b in zip(flat(si), flat(st)):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b)
    check_backward(im, tm, [oi] + flat(si), [ot] + flat(st), [xi] + flat(hi), [xt] + flat(ht))


def test_float64():
    im, tm = pair("GRU", 3, 7, num_layers=2, bidirectional=True)
    im.double()
    tm.double()
    xi, xt = both(randn(5, 2, 3, dtype=np.float64))
    oi, hi = im(xi)
    ot, ht = tm(xt)
    assert oi.dtype == ignis.float64 and hi.dtype == ignis.float64
    close(oi, ot, 1e-12, 1e-12)


def test_dropout_between_layers():
    # p = 1 zeroes the input of the second layer in both libraries: same outputs.
    im, tm = pair("LSTM", 5, 7, num_layers=2, dropout=1.0)
    xi, xt = both(randn(6, 3, 5))
    close(im(xi)[0], tm(xt)[0])
    # 0 < p < 1: training draws masks (outputs differ from eval), eval matches torch.
    im, tm = pair("GRU", 5, 7, num_layers=3, dropout=0.5)
    ignis.manual_seed(0)
    a = im(xi)[0]
    b = im(xi)[0]
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    im.eval()
    tm.eval()
    close(im(xi)[0], tm(xt)[0])
    e = im(xi)[0]
    close(e, im(xi)[0], 0, 0)
    assert tm.dropout == im.dropout == 0.5


# ---- cells -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu")),
                                     ("RNNCell", dict(bias=False)), ("LSTMCell", {}),
                                     ("LSTMCell", dict(bias=False)), ("GRUCell", {}),
                                     ("GRUCell", dict(bias=False))])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_h0", [True, False])
def test_cells_match_torch(name, kw, batched, with_h0):
    im, tm = pair(name, 5, 7, **kw)
    bs = (3,) if batched else ()
    xi, xt = both(randn(*bs, 5))
    ins_i, ins_t = [xi], [xt]
    args_i, args_t = (xi,), (xt,)
    if with_h0:
        hi, ht = both(randn(*bs, 7, seed=1))
        if name == "LSTMCell":
            ci, ct = both(randn(*bs, 7, seed=2))
            hi, ht = (hi, ci), (ht, ct)
        ins_i += flat(hi)
        ins_t += flat(ht)
        args_i, args_t = (xi, hi), (xt, ht)
    oi, ot = im(*args_i), tm(*args_t)
    for a, b in zip(flat(oi), flat(ot)):
        assert tuple(a.shape) == tuple(b.shape)
        close(a, b)
    check_backward(im, tm, flat(oi), flat(ot), ins_i, ins_t)


def test_lstmcell_time_loop_matches_lstm():
    """The time-sequence-prediction pattern: a loop over LSTMCells gives
    what torch's loop gives, step by step, with gradients."""
    im1, tm1 = pair("LSTMCell", 1, 8)
    im2, tm2 = pair("LSTMCell", 8, 8)
    xi, xt = both(randn(2, 10))

    def run(lib, c1, c2, x):
        h = c = h2 = c2_ = lib.zeros(2, 8)
        outs = []
        for step in x.split(1, dim=1):
            h, c = c1(step, (h, c))
            h2, c2_ = c2(h, (h2, c2_))
            outs.append(h2.sum(1, keepdim=True))
        return lib.cat(outs, 1)

    oi, ot = run(ignis, im1, im2, xi), run(torch, tm1, tm2, xt)
    close(oi, ot)
    oi.sum().backward()
    ot.sum().backward()
    close(xi.grad, xt.grad, 1e-4, 1e-5)
    close(im1.weight_hh.grad, tm1.weight_hh.grad, 1e-4, 1e-5)


# ---- packed sequences --------------------------------------------------------------------------
@pytest.mark.parametrize("name,kw", CONFIGS)
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_input_matches_torch(name, kw, enforce_sorted):
    im, tm = pair(name, 5, 7, **kw)
    bf = kw.get("batch_first", False)
    lengths = [6, 5, 3, 1] if enforce_sorted else [3, 6, 1, 5]
    xi, xt = both(randn(*((4, 6, 5) if bf else (6, 4, 5))))
    pi = irnn.pack_padded_sequence(xi, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    pt = trnn.pack_padded_sequence(xt, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    assert isinstance(pi, irnn.PackedSequence)
    close(pi.data, pt.data, 0, 0)
    assert pi.batch_sizes.tolist() == pt.batch_sizes.tolist()
    assert pi.batch_sizes.dtype == ignis.int64
    if not enforce_sorted:
        assert pi.sorted_indices.tolist() == pt.sorted_indices.tolist()
        assert pi.unsorted_indices.tolist() == pt.unsorted_indices.tolist()
    hi, ht = _h0(name, kw, 4)
    oi, si = im(pi, hi)
    ot, st = tm(pt, ht)
    assert isinstance(oi, irnn.PackedSequence)
    close(oi.data, ot.data)
    for a, b in zip(flat(si), flat(st)):
        close(a, b)
    padi, li = irnn.pad_packed_sequence(oi, batch_first=bf, padding_value=-1.0, total_length=8)
    padt, lt = trnn.pad_packed_sequence(ot, batch_first=bf, padding_value=-1.0, total_length=8)
    assert tuple(padi.shape) == tuple(padt.shape)
    close(padi, padt)
    assert li.tolist() == lt.tolist() == lengths
    check_backward(im, tm, [padi] + flat(si), [padt] + flat(st), [xi] + flat(hi),
                   [xt] + flat(ht))


def test_packed_without_h0_and_pack_sequence():
    im, tm = pair("LSTM", 5, 7, bidirectional=True)
    seqs = [randn(n, 5, seed=n) for n in (2, 6, 4)]
    pi = irnn.pack_sequence([ignis.from_numpy(s) for s in seqs], enforce_sorted=False)
    pt = trnn.pack_sequence([torch.from_numpy(s) for s in seqs], enforce_sorted=False)
    oi, (hi, ci) = im(pi)
    ot, (ht, ct) = tm(pt)
    close(oi.data, ot.data)
    close(hi, ht)
    close(ci, ct)
    for a, b in zip(irnn.unpack_sequence(oi), trnn.unpack_sequence(ot)):
        close(a, b)


def test_pad_sequence():
    seqs = [randn(n, 3, seed=n) for n in (2, 5, 4)]
    si = [ignis.from_numpy(s) for s in seqs]
    st = [torch.from_numpy(s) for s in seqs]
    for kw in ({}, dict(batch_first=True), dict(padding_value=2.5),
               dict(batch_first=True, padding_side="left")):
        close(irnn.pad_sequence(si, **kw), trnn.pad_sequence(st, **kw), 0, 0)
    lengths = [2, 5, 4]
    padded = irnn.pad_sequence(si, batch_first=True)
    for a, b in zip(irnn.unpad_sequence(padded, ignis.tensor(lengths), batch_first=True), seqs):
        np.testing.assert_array_equal(a.numpy(), b)
    with pytest.raises(ValueError):
        irnn.pad_sequence(si, padding_side="middle")


def test_pad_sequence_gradient():
    a = ignis.ones(2, 3, requires_grad=True)
    b = ignis.ones(4, 3, requires_grad=True)
    (irnn.pad_sequence([a, b]) * 2).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 3), 2.0))


def test_packing_errors_match_torch():
    x = randn(4, 3, 2)
    for lib, mod in ((ignis, irnn), (torch, trnn)):
        t = lib.from_numpy(x.copy())
        with pytest.raises(RuntimeError, match="sorted in decreasing order"):
            mod.pack_padded_sequence(t, [1, 3, 2])
        with pytest.raises(RuntimeError):
            mod.pack_padded_sequence(t, [3, 2, 0])
        p = mod.pack_padded_sequence(t, [4, 2, 1])
        with pytest.raises(ValueError, match="total_length"):
            mod.pad_packed_sequence(p, total_length=2)


def test_packed_sequence_is_a_namedtuple_with_to():
    p = irnn.pack_sequence([ignis.ones(3, 2), ignis.ones(1, 2)])
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert batch_sizes.tolist() == [2, 1, 1]
    assert sorted_indices is None and unsorted_indices is None
    assert p.double().data.dtype == ignis.float64
    assert p.to(ignis.float64).batch_sizes.tolist() == [2, 1, 1]
    assert irnn.invert_permutation(ignis.tensor([2, 0, 1])).tolist() == [1, 2, 0]


# ---- errors ------------------------------------------------------------------------------------
def _same_error(fn_i, fn_t):
    with pytest.raises(Exception) as et:
        fn_t()
    with pytest.raises(type(et.value)):
        fn_i()


def test_errors_match_torch():
    im, tm = pair("LSTM", 5, 7, num_layers=2)
    _same_error(lambda: im(ignis.zeros(2, 3, 4)), lambda: tm(torch.zeros(2, 3, 4)))
    _same_error(lambda: im(ignis.zeros(2, 3, 4, 5)), lambda: tm(torch.zeros(2, 3, 4, 5)))
    _same_error(lambda: im(ignis.zeros(2, 3, 5), (ignis.zeros(2, 3, 6), ignis.zeros(2, 3, 7))),
                lambda: tm(torch.zeros(2, 3, 5), (torch.zeros(2, 3, 6), torch.zeros(2, 3, 7))))
    _same_error(lambda: im(ignis.zeros(2, 3, 5), (ignis.zeros(2, 3, 7), ignis.zeros(1, 3, 7))),
                lambda: tm(torch.zeros(2, 3, 5), (torch.zeros(2, 3, 7), torch.zeros(1, 3, 7))))
    gi, gt = pair("GRU", 5, 7)
    _same_error(lambda: gi(ignis.zeros(2, 3, 5), ignis.zeros(1, 2, 7)),
                lambda: gt(torch.zeros(2, 3, 5), torch.zeros(1, 2, 7)))
    for kw in (dict(proj_size=2), dict(dropout=2.0), dict(num_layers=0), dict(proj_size=9)):
        lib_kw = dict(kw)
        _same_error(lambda: nn.GRU(5, 7, **lib_kw), lambda: torch.nn.GRU(5, 7, **lib_kw))
    _same_error(lambda: nn.RNN(5, 7, nonlinearity="sigmoid"),
                lambda: torch.nn.RNN(5, 7, nonlinearity="sigmoid"))
    ci, ct = pair("GRUCell", 5, 7)
    _same_error(lambda: ci(ignis.zeros(3, 4)), lambda: ct(torch.zeros(3, 4)))
    _same_error(lambda: ci(ignis.zeros(3, 5), ignis.zeros(2, 7)),
                lambda: ct(torch.zeros(3, 5), torch.zeros(2, 7)))


def test_positional_constructor_arguments():
    for name, args in (("RNN", (5, 7, 2, "relu", False, True, 0.0, True)),
                       ("LSTM", (5, 7, 2, True, True, 0.0, True, 3)),
                       ("GRU", (5, 7, 2, False, True))):
        a = getattr(nn, name)(*args)
        b = getattr(torch.nn, name)(*args)
        assert repr(a) == repr(b)
        assert [n for n, _ in a.named_parameters()] == [n for n, _ in b.named_parameters()]


# ---- compile -----------------------------------------------------------------------------------
def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


@pytest.mark.parametrize("name,kw", [("LSTM", dict(num_layers=2, batch_first=True)),
                                     ("GRU", dict(bidirectional=True))])
def test_compiled_matches_eager(name, kw):
    """A small sequence model compiled: eager's values and gradients, in one
    graph."""
    ignis.manual_seed(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 5)
            self.rnn = getattr(nn, name)(5, 8, **kw)
            self.head = nn.Linear(8 * (2 if kw.get("bidirectional") else 1), 11)

        def forward(self, tokens):
            out, _ = self.rnn(self.emb(tokens))
            return self.head(out)

    me, mc = Model(), Model()
    mc.load_state_dict(me.state_dict())
    tokens = ignis.from_numpy(np.random.default_rng(0).integers(0, 11, (3, 6)))
    f = lambda m: (lambda t: m(t).square().mean())  # noqa: E731
    ex = ignis.compiler.explain(f(mc), tokens)
    assert ex.graph_break_count == 0, ex.break_reasons
    want = f(me)(tokens)
    got = ignis.compile(f(mc), fullgraph=True)(tokens)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    want.backward()
    got.backward()
    for a, b in zip(_grads(me), _grads(mc)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name,kw", [("LSTM", dict(num_layers=2)),
                                     ("GRU", dict(bidirectional=True))])
def test_compiled_layers_record_the_recurrence_whole(name, kw):
    """Under compile each direction of each layer is one _rnn_recurrence in
    the forward graph and one _rnn_recurrence_backward in the backward (Note
    [A recurrence as one op]), not T steps of products and cells; the
    gradients are eager's, and a layer's final state is returned as well."""
    ignis.manual_seed(0)
    me = getattr(nn, name)(5, 8, **kw)
    mc = getattr(nn, name)(5, 8, **kw)
    mc.load_state_dict(me.state_dict())
    x = ignis.randn(7, 3, 5)
    codes = []

    def keep(gm, example_inputs):
        codes.append(gm.code)
        return gm

    backend = ignis.compiler.aot_autograd(fw_compiler=keep, bw_compiler=keep)

    def f(m):
        def run(x):
            out, state = m(x)
            h = state[0] if name == "LSTM" else state
            return out.square().mean() + h.sum()
        return run

    want = f(me)(x)
    got = ignis.compile(f(mc), backend=backend, fullgraph=True)(x)
    want.backward()
    got.backward()
    fw, bw = codes
    n = 2  # two layers, or two directions
    assert fw.count("_rnn_recurrence.default(") == n, fw
    assert bw.count("_rnn_recurrence_backward.default(") == n, bw
    # no per-step cells or products (T = 7): only the input projections' gradients
    assert "_thnn_fused" not in fw + bw and bw.count("mm.default(") <= 3 * n, bw
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    for a, b in zip(_grads(me), _grads(mc)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


# ---- programs -------------------------------------------------------------------------------
def _lm(lib, kind):
    nn_ = lib.nn

    class LM(nn_.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn_.Embedding(50, 16)
            self.rnn = getattr(nn_, kind)(16, 16, 2, dropout=0.0)
            self.decoder = nn_.Linear(16, 50)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.encoder(x), hidden)
            return self.decoder(out), hidden

    return LM()


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_word_language_model_training_matches_torch(kind):
    """pytorch/examples' word language model, small: truncated BPTT with the
    hidden state carried (detached) between batches, SGD and
    clip_grad_norm_; the same losses and weights as torch after 4 steps."""
    torch.manual_seed(0)
    tm = _lm(torch, kind)
    im = _lm(ignis, kind)
    im.load_state_dict(OrderedDict((k, from_torch(v)) for k, v in tm.state_dict().items()))
    data = np.random.default_rng(0).integers(0, 50, (4 * 7 + 1, 3))

    def train(lib, m):
        opt = lib.optim.SGD(m.parameters(), lr=1.0)
        hidden = None
        losses = []
        for i in range(4):
            x = lib.from_numpy(data[i * 7:(i + 1) * 7].copy())
            y = lib.from_numpy(data[i * 7 + 1:(i + 1) * 7 + 1].copy())
            if hidden is not None:
                hidden = tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) \
                    else hidden.detach()
            out, hidden = m(x, hidden)
            loss = lib.nn.functional.cross_entropy(out.reshape(-1, 50), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.25)
            opt.step()
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(train(ignis, im), train(torch, tm), rtol=1e-5)
    for (n, p), (_, q) in zip(im.named_parameters(), tm.named_parameters()):
        close(p, q, 1e-4, 1e-5, n)


def test_time_sequence_prediction_with_lbfgs_matches_torch():
    """pytorch/examples' time-sequence prediction: two LSTMCells unrolled
    over sine waves, trained with LBFGS (closure), then a future
    prediction; torch's losses and predictions."""
    def make(lib):
        nn_ = lib.nn

        class Sequence(nn_.Module):
            def __init__(self):
                super().__init__()
                self.lstm1 = nn_.LSTMCell(1, 12)
                self.lstm2 = nn_.LSTMCell(12, 12)
                self.linear = nn_.Linear(12, 1)

            def forward(self, input, future=0):
                outputs = []
                n = input.size(0)
                h_t = lib.zeros(n, 12, dtype=lib.double)
                c_t = lib.zeros(n, 12, dtype=lib.double)
                h_t2 = lib.zeros(n, 12, dtype=lib.double)
                c_t2 = lib.zeros(n, 12, dtype=lib.double)
                for input_t in input.split(1, dim=1):
                    h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                    h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                    output = self.linear(h_t2)
                    outputs += [output]
                for _ in range(future):
                    h_t, c_t = self.lstm1(output, (h_t, c_t))
                    h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                    output = self.linear(h_t2)
                    outputs += [output]
                return lib.cat(outputs, dim=1)

        return Sequence().double()

    torch.manual_seed(0)
    tm, im = make(torch), make(ignis)
    im.load_state_dict(OrderedDict((k, from_torch(v)) for k, v in tm.state_dict().items()))
    t = np.arange(21) + np.random.default_rng(0).integers(-4, 4, (3, 1))
    wave = np.sin(t / 20.0 * 2 * np.pi)

    def train(lib, m):
        x = lib.from_numpy(wave[:, :-1].copy())
        y = lib.from_numpy(wave[:, 1:].copy())
        crit = lib.nn.MSELoss()
        opt = lib.optim.LBFGS(m.parameters(), lr=0.8, max_iter=5)
        losses = []

        def closure():
            opt.zero_grad()
            loss = crit(m(x), y)
            losses.append(loss.item())
            loss.backward()
            return loss

        for _ in range(2):
            opt.step(closure)
        with lib.no_grad():
            pred = m(x, future=5)
        return losses, pred.numpy()

    (li, pi), (lt, pt) = train(ignis, im), train(torch, tm)
    np.testing.assert_allclose(li, lt, rtol=1e-7)
    np.testing.assert_allclose(pi, pt, rtol=1e-7, atol=1e-9)
