"""nn.Transformer, its encoder/decoder stacks and layers, and
nn.MultiheadAttention against torch: parameter names (so state_dicts
transfer), outputs and gradients with torch's weights for every option
(norm_first, activation as a string or a callable, batch_first, bias,
unbatched input, masks bool and float, key padding masks, is_causal and
causal-mask detection, the nested-tensor path's zeros), errors, and
ignis.compile of a TransformerEncoder model giving eager's values and
gradients."""
import copy
import itertools
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.nn.functional as F

torch = pytest.importorskip("torch")
tF = torch.nn.functional

pytestmark = pytest.mark.filterwarnings("ignore")


def from_torch(t):
    return ignis.from_numpy(t.detach().numpy().copy())


def close(a, b, rtol=1e-5, atol=1e-5, msg=""):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg=msg)


def load(im, tm):
    sd = tm.state_dict()
    assert list(sd) == list(im.state_dict())
    im.load_state_dict(OrderedDict((k, from_torch(v)) for k, v in sd.items()))
    return im, tm


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def both(a, grad=False):
    return (ignis.from_numpy(a.copy()).requires_grad_(grad),
            torch.from_numpy(a.copy()).requires_grad_(grad))


def masks(kind, L, S, N=2, H=2):
    """(ignis, torch) attention masks of a kind."""
    rng = np.random.default_rng(7)
    if kind is None:
        return None, None
    if kind == "causal":
        t = torch.nn.Transformer.generate_square_subsequent_mask(L)
    elif kind == "bool":
        b = rng.random((L, S)) > 0.7
        b[:, 0] = False  # no fully masked rows
        t = torch.from_numpy(b)
    elif kind == "float":
        t = torch.from_numpy(rng.standard_normal((L, S)).astype(np.float32))
    elif kind == "bool3":
        b = rng.random((N * H, L, S)) > 0.7
        b[..., 0] = False
        t = torch.from_numpy(b)
    return from_torch(t), t


def kp_masks(kind, N, S):
    if kind is None:
        return None, None
    b = np.zeros((N, S), bool)
    b[1, S - 2:] = True
    t = torch.from_numpy(b)
    if kind == "float":
        t = torch.zeros(N, S).masked_fill(t, float("-inf"))
    return from_torch(t), t


def backward_check(im, tm, oi, ot, ins):
    (oi * oi).sum().backward()
    (ot * ot).sum().backward()
    for a, b in ins:
        close(a.grad, b.grad, 1e-4, 1e-5, "input grad")
    for (n, p), (_, q) in zip(im.named_parameters(), tm.named_parameters()):
        if q.grad is None:
            assert p.grad is None or not p.grad.detach().numpy().any(), n
        else:
            close(p.grad, q.grad, 1e-4, 1e-5, n)


# ---- names and initialisation -------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(bias=False), dict(norm_first=True, batch_first=True)])
def test_transformer_state_dict_names_and_shapes(kw):
    tm = torch.nn.Transformer(16, 4, 2, 3, 32, **kw)
    im = nn.Transformer(16, 4, 2, 3, 32, **kw)
    assert [(k, tuple(v.shape)) for k, v in im.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert (im.d_model, im.nhead, im.batch_first) == (tm.d_model, tm.nhead, tm.batch_first)
    # xavier-uniform for every matrix, LayerNorm ones/zeros, MHA's biases zero
    for n, p in im.named_parameters():
        a = p.detach().numpy()
        if a.ndim > 1:
            bound = math.sqrt(6.0 / (a.shape[0] + a.shape[1]))
            assert np.abs(a).max() <= bound + 1e-6, n
            assert a.std() > 0.4 * bound, n


def test_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.num_layers == 3
    assert all(a is not layer for a in enc.layers)
    with ignis.no_grad():
        enc.layers[0].linear1.weight.fill_(1.0)
    assert not np.all(enc.layers[1].linear1.weight.detach().numpy() == 1.0)
    np.testing.assert_array_equal(enc.layers[1].linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())


def test_generate_square_subsequent_mask():
    for sz in (1, 4):
        close(nn.Transformer.generate_square_subsequent_mask(sz),
              torch.nn.Transformer.generate_square_subsequent_mask(sz), 0, 0)
    m = nn.Transformer.generate_square_subsequent_mask(3, dtype=ignis.float64)
    assert m.dtype == ignis.float64


# ---- encoder layer ------------------------------------------------------------------------------
ENC_OPTIONS = [
    {}, dict(norm_first=True), dict(activation="gelu"), dict(activation=F.gelu),
    dict(activation=lambda x: x.tanh(), torch_activation=lambda x: x.tanh()),
    dict(activation=nn.GELU(), torch_activation=torch.nn.GELU()),
    dict(batch_first=True), dict(bias=False), dict(layer_norm_eps=1e-3, norm_first=True),
]


def _split(kw):
    ikw, tkw = dict(kw), dict(kw)
    if "torch_activation" in kw:
        ikw.pop("torch_activation")
        tkw["activation"] = tkw.pop("torch_activation")
    elif kw.get("activation") is F.gelu:
        tkw["activation"] = tF.gelu
    return ikw, tkw


@pytest.mark.parametrize("kw", ENC_OPTIONS)
@pytest.mark.parametrize("mask,kpm", [(None, None), ("causal", None), ("bool", None),
                                      ("float", None), (None, "bool"), (None, "float"),
                                      ("bool", "bool"), ("float", "float"), ("bool3", None)])
def test_encoder_layer_matches_torch(kw, mask, kpm):
    ikw, tkw = _split(kw)
    torch.manual_seed(0)
    im, tm = load(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **ikw),
                  torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **tkw))
    bf = kw.get("batch_first", False)
    xi, xt = both(randn(*((2, 5, 8) if bf else (5, 2, 8))), grad=True)
    mi, mt = masks(mask, 5, 5)
    ki, kt = kp_masks(kpm, 2, 5)
    oi = im(xi, src_mask=mi, src_key_padding_mask=ki)
    ot = tm(xt, src_mask=mt, src_key_padding_mask=kt)
    close(oi, ot)
    backward_check(im, tm, oi, ot, [(xi, xt)])


@pytest.mark.parametrize("kw", [{}, dict(norm_first=True)])
def test_encoder_layer_unbatched_and_is_causal(kw):
    im, tm = load(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw),
                  torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw))
    xi, xt = both(randn(5, 8))
    close(im(xi), tm(xt))
    mi, mt = masks("causal", 5, 5)
    close(im(xi, src_mask=mi, is_causal=True), tm(xt, src_mask=mt, is_causal=True))
    with pytest.raises(RuntimeError):
        tm(xt, is_causal=True)
    with pytest.raises(RuntimeError):
        im(xi, is_causal=True)


def test_activation_string_errors_like_torch():
    with pytest.raises(RuntimeError, match="relu/gelu"):
        torch.nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerDecoderLayer(8, 2, activation="swish")


def test_dropout_in_training_and_eval():
    im, tm = load(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5),
                  torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5))
    xi, xt = both(randn(5, 2, 8))
    ignis.manual_seed(0)
    a, b = im(xi), im(xi)
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    im.eval()
    tm.eval()
    close(im(xi), tm(xt))


# ---- encoder stack ------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(batch_first=True), dict(norm_first=True),
                                dict(batch_first=True, activation="gelu")])
@pytest.mark.parametrize("with_norm", [False, True])
def test_encoder_matches_torch(kw, with_norm):
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw)
    tm = torch.nn.TransformerEncoder(tl, 3, norm=torch.nn.LayerNorm(8) if with_norm else None)
    im = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **kw), 3,
                               norm=nn.LayerNorm(8) if with_norm else None)
    load(im, tm)
    bf = kw.get("batch_first", False)
    xi, xt = both(randn(*((2, 5, 8) if bf else (5, 2, 8))), grad=True)
    ki, kt = kp_masks("bool", 2, 5)
    mi, mt = masks("causal", 5, 5)
    close(im(xi, mask=mi), tm(xt, mask=mt))
    close(im(xi, mask=mi, is_causal=True), tm(xt, mask=mt, is_causal=True))
    oi = im(xi, src_key_padding_mask=ki)
    ot = tm(xt, src_key_padding_mask=kt)
    close(oi, ot)
    backward_check(im, tm, oi, ot, [(xi, xt)])
    # eval without gradients: torch's nested-tensor path (zeros at the padding
    # positions, when its conditions hold), and the same values otherwise
    im.eval()
    tm.eval()
    with torch.no_grad(), ignis.no_grad():
        close(im(xi, src_key_padding_mask=ki), tm(xt, src_key_padding_mask=kt))
        assert im.use_nested_tensor == tm.use_nested_tensor


def test_causal_mask_detection():
    from ignis.nn.modules.transformer import _detect_is_causal_mask
    from torch.nn.modules.transformer import _detect_is_causal_mask as t_detect
    for kind in ("causal", "float", "bool"):
        mi, mt = masks(kind, 4, 4)
        if kind == "bool":
            continue
        assert _detect_is_causal_mask(mi) == t_detect(mt)
        assert _detect_is_causal_mask(mi, False) == t_detect(mt, False)
    assert _detect_is_causal_mask(None, True) is True
    mi, mt = masks("causal", 4, 4)
    assert _detect_is_causal_mask(mi, None, 5) == t_detect(mt, None, 5) is False


# ---- decoder ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(norm_first=True), dict(batch_first=True),
                                dict(activation="gelu", bias=False)])
@pytest.mark.parametrize("tgt_mask,mem_mask,tgt_kpm,mem_kpm", [
    (None, None, None, None), ("causal", None, None, None), ("causal", None, "bool", "bool"),
    ("bool", "bool", None, "bool"), ("float", "float", "float", "float")])
def test_decoder_layer_matches_torch(kw, tgt_mask, mem_mask, tgt_kpm, mem_kpm):
    torch.manual_seed(0)
    im, tm = load(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw),
                  torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw))
    bf = kw.get("batch_first", False)
    ti, tt = both(randn(*((2, 4, 8) if bf else (4, 2, 8)), seed=1), grad=True)
    mi_, mt_ = both(randn(*((2, 5, 8) if bf else (5, 2, 8)), seed=2), grad=True)
    a = masks(tgt_mask, 4, 4)
    b = masks(mem_mask, 4, 5)
    c = kp_masks(tgt_kpm, 2, 4)
    d = kp_masks(mem_kpm, 2, 5)
    oi = im(ti, mi_, tgt_mask=a[0], memory_mask=b[0], tgt_key_padding_mask=c[0],
            memory_key_padding_mask=d[0], tgt_is_causal=tgt_mask == "causal" and c[0] is None)
    ot = tm(tt, mt_, tgt_mask=a[1], memory_mask=b[1], tgt_key_padding_mask=c[1],
            memory_key_padding_mask=d[1], tgt_is_causal=tgt_mask == "causal" and c[1] is None)
    close(oi, ot)
    backward_check(im, tm, oi, ot, [(ti, tt), (mi_, mt_)])


@pytest.mark.parametrize("kw", [{}, dict(batch_first=True, norm_first=True)])
def test_decoder_matches_torch(kw):
    torch.manual_seed(0)
    tm = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw), 2,
        norm=torch.nn.LayerNorm(8))
    im = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **kw), 2,
                               norm=nn.LayerNorm(8))
    load(im, tm)
    bf = kw.get("batch_first", False)
    ti, tt = both(randn(*((2, 4, 8) if bf else (4, 2, 8)), seed=1), grad=True)
    mi_, mt_ = both(randn(*((2, 5, 8) if bf else (5, 2, 8)), seed=2), grad=True)
    a = masks("causal", 4, 4)
    oi = im(ti, mi_, tgt_mask=a[0])
    ot = tm(tt, mt_, tgt_mask=a[1])
    close(oi, ot)
    backward_check(im, tm, oi, ot, [(ti, tt), (mi_, mt_)])
    # unbatched
    close(im(ti[0] if bf else ti[:, 0], mi_[0] if bf else mi_[:, 0], tgt_mask=a[0]),
          tm(tt[0] if bf else tt[:, 0], mt_[0] if bf else mt_[:, 0], tgt_mask=a[1]))


# ---- the whole model ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw", [{}, dict(batch_first=True), dict(norm_first=True),
                                dict(activation="gelu", bias=False)])
def test_transformer_matches_torch(kw):
    torch.manual_seed(0)
    tm = torch.nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, **kw)
    im = nn.Transformer(8, 2, 2, 2, 16, dropout=0.0, **kw)
    load(im, tm)
    bf = kw.get("batch_first", False)
    si, st = both(randn(*((2, 5, 8) if bf else (5, 2, 8)), seed=1), grad=True)
    ti, tt = both(randn(*((2, 4, 8) if bf else (4, 2, 8)), seed=2), grad=True)
    tmask_i = im.generate_square_subsequent_mask(4)
    tmask_t = tm.generate_square_subsequent_mask(4)
    ki, kt = kp_masks("bool", 2, 5)
    oi = im(si, ti, tgt_mask=tmask_i, src_key_padding_mask=ki, memory_key_padding_mask=ki)
    ot = tm(st, tt, tgt_mask=tmask_t, src_key_padding_mask=kt, memory_key_padding_mask=kt)
    close(oi, ot)
    backward_check(im, tm, oi, ot, [(si, st), (ti, tt)])


def test_transformer_errors_like_torch():
    im, tm = nn.Transformer(8, 2, 1, 1, 16), torch.nn.Transformer(8, 2, 1, 1, 16)
    for s, t in (((5, 2, 8), (4, 3, 8)), ((5, 2, 8), (4, 2, 6))):
        with pytest.raises(RuntimeError) as et:
            tm(torch.zeros(*s), torch.zeros(*t))
        with pytest.raises(RuntimeError, match=str(et.value)):
            im(ignis.zeros(*s), ignis.zeros(*t))


def test_custom_encoder_decoder():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16), 1)
    m = nn.Transformer(8, 2, custom_encoder=enc, custom_decoder=dec)
    assert m.encoder is enc and m.decoder is dec
    assert tuple(m(ignis.zeros(3, 1, 8), ignis.zeros(2, 1, 8)).shape) == (2, 1, 8)


def test_nested_tensor_warning_like_torch():
    with warnings.catch_warnings(record=True) as wi:
        warnings.simplefilter("always")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)
    with warnings.catch_warnings(record=True) as wt:
        warnings.simplefilter("always")
        torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2), 1)
    assert [str(w.message) for w in wi] == [str(w.message) for w in wt]


# ---- MultiheadAttention parity --------------------------------------------------------------------
@pytest.mark.parametrize("bf,kv,bkv,zero", list(itertools.product([False, True], repeat=4)))
def test_multihead_attention_options_match_torch(bf, kv, bkv, zero):
    E, H, L, S, N = 8, 2, 3, 5, 2
    kw = dict(batch_first=bf, add_bias_kv=bkv, add_zero_attn=zero)
    if kv:
        kw.update(kdim=6, vdim=4)
    torch.manual_seed(0)
    im, tm = load(nn.MultiheadAttention(E, H, **kw), torch.nn.MultiheadAttention(E, H, **kw))
    for nw, avg, mk, kk, batched in itertools.product([True, False], [True, False],
                                                      [None, "bool", "float", "bool3"],
                                                      [None, "bool", "float"], [True, False]):
        if mk and kk and (mk.startswith("bool")) != (kk == "bool"):
            continue  # mixed mask types: deprecated in torch
        if mk == "bool3" and not batched:
            continue

        def shp(n, d, seed):
            s = ((N, n, d) if bf else (n, N, d)) if batched else (n, d)
            return both(randn(*s, seed=seed), grad=True)
        qi, qt = shp(L, E, 1)
        ki_, kt_ = shp(S, kw.get("kdim", E), 2)
        vi, vt = shp(S, kw.get("vdim", E), 3)
        ami, amt = masks(mk, L, S, N, H)
        kpi, kpt = kp_masks(kk, N, S)
        if kpi is not None and not batched:
            kpi, kpt = kpi[0], kpt[0]
        oi, wi = im(qi, ki_, vi, key_padding_mask=kpi, attn_mask=ami, need_weights=nw,
                    average_attn_weights=avg)
        ot, wt = tm(qt, kt_, vt, key_padding_mask=kpt, attn_mask=amt, need_weights=nw,
                    average_attn_weights=avg)
        close(oi, ot, msg=str((nw, avg, mk, kk, batched)))
        assert (wi is None) == (wt is None)
        if wt is not None:
            assert tuple(wi.shape) == tuple(wt.shape)
            close(wi, wt)
        im.zero_grad()
        tm.zero_grad()
        backward_check(im, tm, oi, ot, [(qi, qt), (ki_, kt_), (vi, vt)])


def test_multihead_attention_is_causal():
    im, tm = load(nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2))
    xi, xt = both(randn(4, 2, 8))
    mi, mt = masks("causal", 4, 4)
    for nw in (True, False):
        oi, _ = im(xi, xi, xi, attn_mask=mi, is_causal=True, need_weights=nw)
        ot, _ = tm(xt, xt, xt, attn_mask=mt, is_causal=True, need_weights=nw)
        close(oi, ot)


# ---- compile ----------------------------------------------------------------------------------
def test_compiled_transformer_encoder_matches_eager():
    """A small TransformerEncoder model compiled: eager's values and
    gradients, in one graph."""
    ignis.manual_seed(0)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(13, 16)
            layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 2)
            self.head = nn.Linear(16, 13)

        def forward(self, tokens, mask):
            return self.head(self.enc(self.emb(tokens), mask=mask, is_causal=True))

    me = Model()
    mc = copy.deepcopy(me)
    tokens = ignis.from_numpy(np.random.default_rng(0).integers(0, 13, (2, 7)))
    mask = nn.Transformer.generate_square_subsequent_mask(7)

    def loss(m):
        return lambda t, msk: F.cross_entropy(m(t, msk).reshape(-1, 13), t.reshape(-1))

    ex = ignis.compiler.explain(loss(mc), tokens, mask)
    assert ex.graph_break_count == 0, ex.break_reasons
    want = loss(me)(tokens, mask)
    got = ignis.compile(loss(mc), fullgraph=True)(tokens, mask)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    want.backward()
    got.backward()
    for (n, a), (_, b) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=1e-6,
                                   err_msg=n)


# ---- programs ---------------------------------------------------------------------------------
def _transformer_lm(lib):
    nn_ = lib.nn

    class TransformerModel(nn_.Module):
        """pytorch/examples' word language model, Transformer variant."""

        def __init__(self, ntoken=40, ninp=16, nhead=2, nhid=32, nlayers=2):
            super().__init__()
            layer = nn_.TransformerEncoderLayer(ninp, nhead, nhid, 0.0)
            self.transformer_encoder = nn_.TransformerEncoder(layer, nlayers)
            self.encoder = nn_.Embedding(ntoken, ninp)
            self.decoder = nn_.Linear(ninp, ntoken)
            self.ninp = ninp

        def forward(self, src):
            mask = nn_.Transformer.generate_square_subsequent_mask(len(src))
            src = self.encoder(src) * math.sqrt(self.ninp)
            out = self.transformer_encoder(src, mask)
            return lib.nn.functional.log_softmax(self.decoder(out), dim=-1)

    return TransformerModel()


def test_transformer_language_model_training_matches_torch():
    torch.manual_seed(0)
    tm, im = _transformer_lm(torch), _transformer_lm(ignis)
    load(im, tm)
    data = np.random.default_rng(0).integers(0, 40, (3 * 6 + 1, 4))

    def train(lib, m):
        # SGD: the key bias's gradient is zero up to rounding (softmax ignores a
        # shift), which Adam would scale up to full steps in either direction
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        losses = []
        for i in range(3):
            x = lib.from_numpy(data[i * 6:(i + 1) * 6].copy())
            y = lib.from_numpy(data[i * 6 + 1:(i + 1) * 6 + 1].copy())
            loss = lib.nn.functional.nll_loss(m(x).reshape(-1, 40), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            lib.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step()
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(train(ignis, im), train(torch, tm), rtol=1e-5)
    for (n, p), (_, q) in zip(im.named_parameters(), tm.named_parameters()):
        close(p, q, 1e-4, 1e-5, n)


def test_seq2seq_transformer_training_matches_torch():
    """nn.Transformer as a seq2seq model: masks for the target and the
    padding, two SGD steps, torch's losses."""
    torch.manual_seed(0)
    tm = torch.nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=True)
    im = nn.Transformer(16, 4, 2, 2, 32, dropout=0.0, batch_first=True)
    load(im, tm)
    rng = np.random.default_rng(1)
    src, tgt = rng.standard_normal((3, 7, 16)), rng.standard_normal((3, 5, 16))
    pad = np.zeros((3, 7), bool)
    pad[0, 5:] = True

    def train(lib, m):
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        s = lib.from_numpy(src.astype(np.float32))
        t = lib.from_numpy(tgt.astype(np.float32))
        kpm = lib.from_numpy(pad.copy())
        mask = m.generate_square_subsequent_mask(5)
        losses = []
        for _ in range(2):
            out = m(s, t, tgt_mask=mask, src_key_padding_mask=kpm,
                    memory_key_padding_mask=kpm, tgt_is_causal=True)
            loss = (out - t).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    np.testing.assert_allclose(train(ignis, im), train(torch, tm), rtol=1e-5)
