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
