"""nn.utils additions against torch: parameters_to_vector and back, conv/linear
+ BatchNorm fusion, the hook-based weight_norm / spectral_norm, parametrize
and parametrizations (weight_norm, spectral_norm, orthogonal): the same
NumPy-made weights in both libraries, forward outputs and gradients compared,
and the remove_* functions giving back plain parameters."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:`torch.nn.utils.weight_norm` is deprecated")

LIBS = (torch, ignis)


def _fill(lib, module, seed, scale=1.0):
    """Sets every parameter (and float buffer) of `module` from a NumPy rng."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, t in sorted(module.state_dict(keep_vars=True).items()):
            if t.is_floating_point():
                vals = rng.standard_normal(tuple(t.shape)) * scale
                if "running_var" in _:
                    vals = np.abs(vals) + 0.5
                t.copy_(lib.tensor(vals.astype(np.float64 if t.dtype == lib.float64
                                               else np.float32)))


def _np(t):
    return t.detach().numpy().copy()


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(_np(a) if not isinstance(a, np.ndarray) else a,
                               _np(b) if not isinstance(b, np.ndarray) else b,
                               rtol=tol, atol=tol)


# --- parameters_to_vector / vector_to_parameters -----------------------------------------

def test_parameters_to_vector_and_back():
    out = []
    for lib in LIBS:
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Linear(4, 2))
        _fill(lib, m, 0)
        vec = lib.nn.utils.parameters_to_vector(m.parameters())
        (vec * lib.arange(vec.numel(), dtype=vec.dtype)).sum().backward()
        grads = [_np(p.grad) for p in m.parameters()]
        new = lib.tensor(np.linspace(-1, 1, vec.numel()).astype(np.float32))
        lib.nn.utils.vector_to_parameters(new, m.parameters())
        out.append((_np(vec), grads, [_np(p) for p in m.parameters()]))
    (tv, tg, tp), (iv, ig, ip) = out
    _close(iv, tv, 0)
    for a, b in zip(ig + ip, tg + tp):
        _close(a, b, 0)
    with pytest.raises(TypeError):
        ignis.nn.utils.vector_to_parameters([1.0], [ignis.nn.Parameter(ignis.zeros(1))])


# --- fusion ---------------------------------------------------------------------------------

FUSIONS = {
    "conv2d": lambda nn: (nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), False, (2, 3, 6, 6)),
    "conv1d_nobias": lambda nn: (nn.Conv1d(3, 4, 2, bias=False), nn.BatchNorm1d(4), False,
                                 (2, 3, 7)),
    "conv_transpose2d": lambda nn: (nn.ConvTranspose2d(3, 4, 3, stride=2), nn.BatchNorm2d(4),
                                    True, (2, 3, 4, 4)),
    "conv3d_no_affine": lambda nn: (nn.Conv3d(2, 3, 2), nn.BatchNorm3d(3, affine=False), False,
                                    (1, 2, 4, 4, 4)),
    "linear": lambda nn: (nn.Linear(5, 4), nn.BatchNorm1d(4), None, (6, 5)),
    "linear_bn1": lambda nn: (nn.Linear(5, 4, bias=False), nn.BatchNorm1d(1), None, (6, 5)),
}


@pytest.mark.parametrize("name", list(FUSIONS))
def test_fusion_matches_torch(name):
    out = []
    for lib in LIBS:
        layer, bn, transpose, shape = FUSIONS[name](lib.nn)
        _fill(lib, layer, 1)
        _fill(lib, bn, 2)
        layer.eval()
        bn.eval()
        U = lib.nn.utils
        fused = U.fuse_linear_bn_eval(layer, bn) if transpose is None else \
            U.fusion.fuse_conv_bn_eval(layer, bn, transpose=transpose)
        x = lib.tensor(np.random.default_rng(3).standard_normal(shape).astype(np.float32))
        if name == "linear_bn1":  # bn over one feature: a (N, 1, 4) input
            want = bn(layer(x).unsqueeze(1)).squeeze(1)
        else:
            want = bn(layer(x))
        out.append((_np(fused.weight), _np(fused.bias), _np(fused(x)), _np(want),
                    type(fused.weight).__name__, fused.weight.requires_grad, fused is layer))
    (tw, tb, ty, twant, *tmeta), (iw, ib, iy, iwant, *imeta) = out
    _close(iw, tw)
    _close(ib, tb)
    _close(iy, ty, 1e-4)
    _close(iy, iwant, 1e-4)  # the fused layer computes bn(layer(x))
    assert imeta == tmeta == ["Parameter", True, False]


def test_fusion_requires_eval_and_matching_features():
    nn = ignis.nn
    with pytest.raises(AssertionError, match="eval"):
        nn.utils.fuse_conv_bn_eval(nn.Conv2d(1, 2, 1), nn.BatchNorm2d(2).eval())
    with pytest.raises(AssertionError, match="out_features"):
        nn.utils.fuse_linear_bn_eval(nn.Linear(2, 3).eval(), nn.BatchNorm1d(2).eval())


def test_fuse_weights_functions_match_torch():
    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((4, 3, 2, 2)), rng.standard_normal(4)
    rm, rv = rng.standard_normal(4), np.abs(rng.standard_normal(4)) + 0.1
    bw, bb = rng.standard_normal(4), rng.standard_normal(4)
    out = []
    for lib in LIBS:
        t = [lib.tensor(a) for a in (w, b, rm, rv, bw, bb)]
        cw, cb = lib.nn.utils.fuse_conv_bn_weights(t[0], None, t[2], t[3], 1e-3, None, t[5])
        lw, lb = lib.nn.utils.fuse_linear_bn_weights(t[0].reshape(4, 12), t[1], t[2], t[3],
                                                     1e-5, t[4], t[5])
        out.append([_np(cw), _np(cb), _np(lw), _np(lb), cw.requires_grad, lb.requires_grad])
    for a, b in zip(out[1][:4], out[0][:4]):
        _close(a, b, 1e-12)
    assert out[1][4:] == out[0][4:]


# --- the hook-based weight_norm and spectral_norm -------------------------------------------

def _train_steps(lib, module, x, steps=3, name="weight"):
    """Forward/backward passes with an SGD step on the module's parameters;
    returns the outputs and the final gradients."""
    opt = lib.optim.SGD(module.parameters(), lr=0.1)
    outs = []
    for _ in range(steps):
        opt.zero_grad()
        y = module(x)
        (y * y).sum().backward()
        opt.step()
        outs.append(_np(y))
    return outs, {k: _np(p.grad) for k, p in module.named_parameters()}


@pytest.mark.parametrize("make,dim,shape", [
    (lambda nn: nn.Linear(4, 3), 0, (5, 4)), (lambda nn: nn.Linear(4, 3), 1, (5, 4)),
    (lambda nn: nn.Linear(4, 3), None, (5, 4)), (lambda nn: nn.Conv2d(2, 3, 2), 0, (1, 2, 4, 4)),
    (lambda nn: nn.Conv1d(2, 3, 2), -1, (1, 2, 5))])
def test_weight_norm_hook_matches_torch(make, dim, shape):
    res = []
    for lib in LIBS:
        m = make(lib.nn)
        _fill(lib, m, 7)
        lib.nn.utils.weight_norm(m, dim=dim)
        names = sorted(n for n, _ in m.named_parameters())
        g_shape = tuple(m.weight_g.shape)
        x = lib.tensor(np.random.default_rng(8).standard_normal(shape).astype(np.float32))
        outs, grads = _train_steps(lib, m, x)
        lib.nn.utils.remove_weight_norm(m)
        res.append((names, g_shape, outs, grads, sorted(n for n, _ in m.named_parameters()),
                    _np(m.weight), type(m.weight).__name__))
    (tn, tg, to, tgr, tn2, tw, tt), (in_, ig, io, igr, in2, iw, it) = res
    assert (in_, ig, in2, it) == (tn, tg, tn2, tt)
    assert in_ == ["bias", "weight_g", "weight_v"] and in2 == ["bias", "weight"]
    for a, b in zip(io, to):
        _close(a, b, 1e-4)
    for k in tgr:
        _close(igr[k], tgr[k], 1e-4)
    _close(iw, tw, 1e-5)


def test_weight_norm_hook_errors():
    m = ignis.nn.utils.weight_norm(ignis.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="two weight_norm"):
        ignis.nn.utils.weight_norm(m)
    with pytest.raises(ValueError, match="not found"):
        ignis.nn.utils.remove_weight_norm(m, "bias")


@pytest.mark.parametrize("make,shape,kw", [
    (lambda nn: nn.Linear(5, 4), (3, 5), {}),
    (lambda nn: nn.Linear(5, 4), (3, 5), {"n_power_iterations": 3, "eps": 1e-6}),
    (lambda nn: nn.ConvTranspose2d(3, 2, 2), (1, 3, 3, 3), {}),
    (lambda nn: nn.Conv2d(3, 4, 2), (1, 3, 3, 3), {"dim": 1})])
def test_spectral_norm_hook_matches_torch(make, shape, kw):
    res, start = [], None
    for lib in LIBS:
        m = make(lib.nn)
        _fill(lib, m, 9)
        lib.nn.utils.spectral_norm(m, **kw)
        if start is None:  # the random starting vectors: torch's, in both
            start = (_np(m.weight_u), _np(m.weight_v))
        else:
            with lib.no_grad():
                m.weight_u.copy_(lib.tensor(start[0]))
                m.weight_v.copy_(lib.tensor(start[1]))
        keys = list(m.state_dict())
        x = lib.tensor(np.random.default_rng(10).standard_normal(shape).astype(np.float32))
        outs, grads = _train_steps(lib, m, x)
        u_train = _np(m.weight_u)
        m.eval()
        y_eval = _np(m(x))
        assert np.array_equal(_np(m.weight_u), u_train)  # no power iteration in eval mode
        lib.nn.utils.remove_spectral_norm(m)
        res.append((keys, outs, grads, u_train, y_eval, list(m.state_dict()), _np(m.weight)))
    (tk, to, tg, tu, ty, tk2, tw), (ik, io, ig, iu, iy, ik2, iw) = res
    assert ik == tk and ik2 == tk2
    for a, b in zip(io, to):
        _close(a, b, 1e-4)
    for k in tg:
        _close(ig[k], tg[k], 1e-4)
    _close(iu, tu)
    _close(iy, ty, 1e-4)
    _close(iw, tw)


# --- parametrize ------------------------------------------------------------------------------

def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        calls = 0

        def forward(self, X):
            type(self).calls += 1
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def _scale(lib):
    class Scale(lib.nn.Module):  # no right_inverse
        def forward(self, X):
            return X * 2.0
    return Scale


def test_register_parametrization_matches_torch():
    res = []
    for lib in LIBS:
        P = lib.nn.utils.parametrize
        m = lib.nn.Linear(4, 4)
        _fill(lib, m, 11)
        weight_before = m.weight
        P.register_parametrization(m, "weight", _symmetric(lib)())
        P.register_parametrization(m, "weight", _scale(lib)())  # chained
        assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
        assert not P.is_parametrized(m, "bias")
        assert type(m).__name__ == "ParametrizedLinear"
        assert P.type_before_parametrizations(m) is lib.nn.Linear
        assert isinstance(m, lib.nn.Linear)
        # The original keeps the parameter's identity (an optimizer holding it stays valid).
        assert m.parametrizations.weight.original is weight_before
        x = lib.tensor(np.random.default_rng(12).standard_normal((3, 4)).astype(np.float32))
        outs, grads = _train_steps(lib, m, x)
        res.append((list(m.state_dict()), sorted(n for n, _ in m.named_parameters()), outs,
                    grads, _np(m.weight)))
    (tk, tn, to, tg, tw), (ik, in_, io, ig, iw) = res
    assert ik == tk and in_ == tn
    assert "parametrizations.weight.original" in ik
    for a, b in zip(io, to):
        _close(a, b, 1e-4)
    for k in tg:
        _close(ig[k], tg[k], 1e-4)
    _close(iw, tw)
    assert np.allclose(iw, iw.T)


def test_parametrization_assignment_cache_and_removal():
    res = []
    for lib in LIBS:
        P = lib.nn.utils.parametrize
        Sym = _symmetric(lib)
        m = lib.nn.Linear(3, 3)
        _fill(lib, m, 13)
        P.register_parametrization(m, "weight", Sym())
        A = lib.tensor(np.arange(9.0, dtype=np.float32).reshape(3, 3))
        m.weight = A  # through right_inverse: original = triu(A)
        orig = _np(m.parametrizations.weight.original)
        Sym.calls = 0
        with P.cached():
            w1, w2 = m.weight, m.weight
        cached_calls, same = Sym.calls, w1 is w2
        Sym.calls = 0
        m.weight
        m.weight
        uncached_calls = Sym.calls
        original = m.parametrizations.weight.original
        P.remove_parametrizations(m, "weight")  # leave_parametrized=True
        kept = (type(m).__name__, type(m.weight).__name__, _np(m.weight), m.weight is original,
                hasattr(m, "parametrizations"))
        P.register_parametrization(m, "weight", Sym())
        m.weight = A
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
        res.append((orig, cached_calls, same, uncached_calls, kept, _np(m.weight)))
    t, i = res
    _close(i[0], t[0], 0)
    assert i[1:4] == t[1:4] == (1, True, 2)
    assert i[4][0] == t[4][0] == "Linear" and i[4][1] == t[4][1] == "Parameter"
    assert i[4][3:] == t[4][3:]
    _close(i[4][2], t[4][2], 0)
    _close(i[5], t[5], 0)


def test_parametrization_checks_and_unsafe():
    P, nn = ignis.nn.utils.parametrize, ignis.nn

    class Reshape(nn.Module):
        def forward(self, X):
            return X.reshape(-1)

    class ToDouble(nn.Module):
        def forward(self, X):
            return X.double()

    for bad in (Reshape, ToDouble):
        with pytest.raises(ValueError, match="may not change"):
            P.register_parametrization(nn.Linear(2, 2), "weight", bad())
    m = P.register_parametrization(nn.Linear(2, 3), "weight", Reshape(), unsafe=True)
    assert tuple(m.weight.shape) == (6,)
    with pytest.raises(ValueError, match="does not have a parameter"):
        P.register_parametrization(nn.Linear(2, 2), "nope", Reshape())
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(nn.Linear(2, 2), "weight")
    # Assignment needs every parametrization to have a right_inverse.
    m = P.register_parametrization(nn.Linear(2, 2), "weight", _scale(ignis)())
    with pytest.raises(RuntimeError, match="right_inverse"):
        m.weight = ignis.zeros(2, 2)


def test_parametrized_buffer_and_sequence_originals():
    """A buffer stays a buffer; a right_inverse returning two tensors gives
    original0/original1 (as parametrizations.weight_norm)."""
    res = []
    for lib in LIBS:
        P = lib.nn.utils.parametrize
        m = lib.nn.BatchNorm1d(3)
        _fill(lib, m, 14)
        P.register_parametrization(m, "running_var", _scale(lib)())

        class Split(lib.nn.Module):
            def forward(self, a, b):
                return a + b

            def right_inverse(self, X):
                return X * 0.25, X * 0.75

        P.register_parametrization(m, "weight", Split())
        keys = list(m.state_dict())
        params = sorted(n for n, _ in m.named_parameters())
        res.append((keys, params, _np(m.running_var), _np(m.weight),
                    _np(m.parametrizations.weight.original1)))
        with pytest.raises(ValueError, match="sequence of tensors"):
            P.remove_parametrizations(m, "weight", leave_parametrized=False)
    t, i = res
    assert i[0] == t[0] and i[1] == t[1]
    for a, b in zip(i[2:], t[2:]):
        _close(a, b, 0)


def test_transfer_parametrizations_and_params():
    P, nn = ignis.nn.utils.parametrize, ignis.nn
    src = nn.Linear(3, 3)
    P.register_parametrization(src, "weight", _symmetric(ignis)())
    dst = P.transfer_parametrizations_and_params(src, nn.Linear(3, 3))
    assert P.is_parametrized(dst, "weight")
    _close(dst.weight, src.weight, 0)


# --- parametrizations -------------------------------------------------------------------------

@pytest.mark.parametrize("make,dim,shape", [
    (lambda nn: nn.Linear(4, 3), 0, (5, 4)), (lambda nn: nn.Linear(4, 3), None, (5, 4)),
    (lambda nn: nn.Conv2d(2, 3, 2), 1, (1, 2, 4, 4))])
def test_parametrizations_weight_norm_matches_torch(make, dim, shape):
    res = []
    for lib in LIBS:
        m = make(lib.nn)
        _fill(lib, m, 15)
        lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
        sd = {k: _np(v) for k, v in m.state_dict().items()}
        x = lib.tensor(np.random.default_rng(16).standard_normal(shape).astype(np.float32))
        outs, grads = _train_steps(lib, m, x)
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        res.append((sd, outs, grads, _np(m.weight), list(m.state_dict())))
    (ts, to, tg, tw, tk), (is_, io, ig, iw, ik) = res
    assert list(is_) == list(ts) and ik == tk
    for k in ts:
        _close(is_[k], ts[k])
    for a, b in zip(io, to):
        _close(a, b, 1e-4)
    for k in tg:
        _close(ig[k], tg[k], 1e-4)
    _close(iw, tw, 1e-5)


@pytest.mark.parametrize("make,shape,kw", [
    (lambda nn: nn.Linear(5, 4), (3, 5), {}),
    (lambda nn: nn.ConvTranspose1d(3, 2, 2), (1, 3, 4), {"n_power_iterations": 2}),
    (lambda nn: nn.Conv2d(3, 4, 2), (1, 3, 3, 3), {"dim": -1, "eps": 1e-4})])
def test_parametrizations_spectral_norm_matches_torch(make, shape, kw):
    res, start = [], None
    for lib in LIBS:
        m = make(lib.nn)
        _fill(lib, m, 17)
        lib.nn.utils.parametrizations.spectral_norm(m, **kw)
        sn = m.parametrizations.weight[0]
        if start is None:
            start = (_np(sn._u), _np(sn._v))
        else:
            with lib.no_grad():
                sn._u.copy_(lib.tensor(start[0]))
                sn._v.copy_(lib.tensor(start[1]))
        x = lib.tensor(np.random.default_rng(18).standard_normal(shape).astype(np.float32))
        outs, grads = _train_steps(lib, m, x)
        m.eval()
        res.append((list(m.state_dict()), outs, grads, _np(sn._u), _np(m(x))))
    (tk, to, tg, tu, ty), (ik, io, ig, iu, iy) = res
    assert ik == tk
    for a, b in zip(io, to):
        _close(a, b, 1e-4)
    for k in tg:
        _close(ig[k], tg[k], 1e-4)
    _close(iu, tu, 1e-4)
    _close(iy, ty, 1e-4)


def test_parametrizations_spectral_norm_converges_and_1d():
    m = ignis.nn.utils.parametrizations.spectral_norm(ignis.nn.Linear(6, 5))
    for _ in range(30):
        w = m.weight
    sigma = np.linalg.svd(_np(w), compute_uv=False)[0]
    assert abs(sigma - 1) < 1e-3  # the 15 initial iterations and 30 more converge
    b = ignis.nn.utils.parametrizations.spectral_norm(ignis.nn.Linear(3, 4), name="bias")
    _close(b.bias, b.parametrizations.bias.original / b.parametrizations.bias.original.norm())
    with pytest.raises(IndexError):
        ignis.nn.utils.parametrizations.spectral_norm(ignis.nn.Linear(3, 4), dim=2)


ORTHO = [((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True),
         ((4, 4), "cayley", True), ((5, 3), "matrix_exp", True), ((2, 4, 3), "householder", True),
         ((5, 3), "householder", False), ((3, 3), "householder", False),
         ((4, 4), "matrix_exp", False), ((3, 4), "cayley", False)]


@pytest.mark.parametrize("shape,omap,triv", ORTHO, ids=[f"{s}-{o}-{t}" for s, o, t in ORTHO])
def test_orthogonal_matches_torch(shape, omap, triv):
    rng = np.random.default_rng(19)
    w0 = rng.standard_normal(shape)
    x0 = rng.standard_normal(shape) * 0.3
    k = min(shape[-2:])
    # The householder map reads the diagonal as +-1 (torch truncates it to ints).
    x0[..., range(k), range(k)] = np.where(np.arange(k) % 2, 1.0, -1.0)
    res, base = [], None
    for lib in LIBS:
        m = lib.nn.Module()
        m.weight = lib.nn.Parameter(lib.tensor(w0))
        lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=omap,
                                                 use_trivialization=triv)
        orth = m.parametrizations.weight[0]
        w_init = _np(m.weight)
        if triv:  # base's completion columns are random: torch's, in both
            if base is None:
                base = _np(orth.base)
            else:
                with lib.no_grad():
                    orth.base.copy_(lib.tensor(base))
        original = m.parametrizations.weight.original
        orig_init = _np(original)
        with lib.no_grad():
            original.copy_(lib.tensor(x0))
        w = m.weight
        (w * lib.tensor(np.linspace(-1, 1, w.numel()).reshape(shape))).sum().backward()
        res.append((orth.orthogonal_map.name, w_init, orig_init, _np(w), _np(original.grad),
                    list(m.state_dict())))
    (tm, twi, toi, tw, tg, tk), (im, iwi, ioi, iw, ig, ik) = res
    assert im == tm and ik == tk
    _close(iwi, twi, 1e-9)
    _close(ioi, toi, 1e-9)
    _close(iw, tw, 1e-9)
    _close(ig, tg, 1e-8)
    q = iw if shape[-2] >= shape[-1] else np.swapaxes(iw, -1, -2)
    np.testing.assert_allclose(np.swapaxes(q, -1, -2) @ q, np.broadcast_to(
        np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), atol=1e-9)


def test_orthogonal_assignment_and_errors():
    P = ignis.nn.utils.parametrizations
    m = P.orthogonal(ignis.nn.Linear(3, 5))
    q = np.linalg.qr(np.random.default_rng(20).standard_normal((5, 3)))[0]
    m.weight = ignis.tensor(q.astype(np.float32))
    _close(m.weight, q, 1e-5)
    with pytest.raises(ValueError, match="matrix"):
        P.orthogonal(ignis.nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map"):
        P.orthogonal(ignis.nn.Linear(3, 3), orthogonal_map="qr")
    m = P.orthogonal(ignis.nn.Linear(3, 3), use_trivialization=False)
    with pytest.raises(NotImplementedError):
        m.weight = ignis.eye(3)


# --- lazy modules -----------------------------------------------------------------------------

LAZY = [("LazyConv1d", (4, 3), {"stride": 2}, (2, 3, 9)),
        ("LazyConv2d", (4, 3), {"padding": 1, "groups": 2}, (2, 6, 5, 5)),
        ("LazyConv3d", (2, 2), {"bias": False}, (1, 3, 4, 4, 4)),
        ("LazyConv2d", (4, 2), {}, (3, 5, 5)),  # unbatched: in_channels from dim 0
        ("LazyConvTranspose1d", (4, 2), {"groups": 2}, (2, 6, 5)),
        ("LazyConvTranspose2d", (3, 3), {"stride": 2, "output_padding": 1}, (1, 2, 4, 4)),
        ("LazyConvTranspose3d", (2, 2), {}, (1, 3, 3, 3, 3)),
        ("LazyBatchNorm1d", (), {}, (4, 3, 5)), ("LazyBatchNorm2d", (), {"momentum": 0.3},
                                                 (4, 3, 2, 2)),
        ("LazyBatchNorm3d", (), {"affine": False}, (2, 2, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
        ("LazyInstanceNorm2d", (), {"affine": True, "track_running_stats": True}, (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), {"affine": True}, (1, 2, 3, 3, 3))]


@pytest.mark.parametrize("name,args,kw,shape", LAZY, ids=[f"{n}-{s}" for n, _, _, s in LAZY])
def test_lazy_module_matches_torch(name, args, kw, shape):
    x = np.random.default_rng(21).standard_normal(shape).astype(np.float32)
    res, weights = [], None
    for lib in LIBS:
        m = getattr(lib.nn, name)(*args, **kw)
        before = (list(m.state_dict()), m.has_uninitialized_params())
        m(lib.tensor(x))  # materializes and initializes, becomes the eager class
        after = (type(m).__name__, {k: tuple(v.shape) for k, v in m.state_dict().items()},
                 m.has_uninitialized_params() if hasattr(m, "has_uninitialized_params")
                 else None)
        if weights is None:  # torch's random initialization, copied into ignis
            weights = {k: _np(v) for k, v in m.state_dict().items()}
        else:
            m.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        y = m(lib.tensor(x))
        # A fresh lazy module takes its shapes from a loaded state_dict (torch's
        # InstanceNorm then refuses inputs: its num_features stays 0).
        fresh = getattr(lib.nn, name)(*args, **kw)
        fresh.load_state_dict({k: lib.tensor(v) for k, v in weights.items()})
        y_fresh = y if "Instance" in name else fresh(lib.tensor(x))
        res.append((before, after, _np(y), _np(y_fresh),
                    {k: _np(v) for k, v in m.state_dict().items()}))
    (tb, ta, ty, tf, ts), (ib, ia, iy, if_, is_) = res
    assert ib == tb and ia == ta
    _close(iy, ty, 1e-4)
    _close(if_, tf, 1e-4)
    for k in ts:
        _close(is_[k], ts[k], 1e-5)


def test_lazy_conv_errors():
    with pytest.raises(ValueError, match="divisible"):
        ignis.nn.LazyConv2d(4, 3, groups=2)(ignis.zeros(1, 3, 5, 5))
    with pytest.raises(RuntimeError, match="Expected 3D"):
        ignis.nn.LazyConv2d(4, 3)(ignis.zeros(5, 5))
