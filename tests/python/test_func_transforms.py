"""ignis.func's transforms (functional_call, grad, grad_and_value, vjp, jvp,
jacrev, jacfwd, hessian, vmap) against torch.func on the same NumPy inputs:
values, pytree structures, composition (per-sample gradients, Hessians) and
torch's exception types."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.func as ifunc

torch = pytest.importorskip("torch")
tfunc = torch.func

RNG = np.random.default_rng(3)


def _np(t):
    return t.detach().numpy()


def same(i, t, rtol=1e-10, atol=1e-12):
    """Two pytrees of the same structure with the same tensors."""
    if isinstance(t, torch.Tensor):
        assert isinstance(i, ignis.Tensor), type(i)
        assert str(i.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        assert tuple(i.shape) == tuple(t.shape), (i.shape, t.shape)
        np.testing.assert_allclose(_np(i), _np(t), rtol=rtol, atol=atol)
    elif isinstance(t, dict):
        assert isinstance(i, dict) and list(i) == list(t)
        for k in t:
            same(i[k], t[k], rtol, atol)
    elif isinstance(t, (tuple, list)):
        assert type(i) is type(t) and len(i) == len(t), (type(i), type(t))
        for a, b in zip(i, t):
            same(a, b, rtol, atol)
    else:
        assert i == t


def both(*shape):
    a = RNG.standard_normal(shape)
    return ignis.tensor(a), torch.tensor(a)


def f_scalar(lib):
    def f(x, y):
        return (lib.sin(x) * y).sum() + (x * x).sum() * y.sum()
    return f


def f_vector(lib):
    def f(x, y):
        return lib.tanh(x) * y.sum() + x ** 3
    return f


# ---- grad, grad_and_value -----------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1])
def test_grad_argnums(argnums):
    (xi, xt), (yi, yt) = both(4), both(4)
    gi = ifunc.grad(f_scalar(ignis), argnums)(xi, yi)
    gt = tfunc.grad(f_scalar(torch), argnums)(xt, yt)
    same(gi, gt)
    gvi = ifunc.grad_and_value(f_scalar(ignis), argnums)(xi, yi)
    gvt = tfunc.grad_and_value(f_scalar(torch), argnums)(xt, yt)
    same(gvi, gvt)
    grads = gvi[0] if isinstance(gvi[0], tuple) else (gvi[0],)
    assert not any(t.requires_grad for t in grads + (gvi[1],))


def test_grad_pytree_input_has_aux_and_unused_input():
    (xi, xt), (yi, yt), (zi, zt) = both(3), both(2, 3), both(3)

    def f(lib):
        def fn(params, z):
            out = (params["w"] @ params["b"][0]).sum() + params["b"][1].exp().sum()
            return out, {"norm": out * 2}
        return fn

    pi = {"w": yi, "b": (xi, zi)}
    pt = {"w": yt, "b": (xt, zt)}
    gi, auxi = ifunc.grad(f(ignis), has_aux=True)(pi, zi)
    gt, auxt = tfunc.grad(f(torch), has_aux=True)(pt, zt)
    same(gi, gt)
    same(auxi, auxt)
    # an argument the output does not depend on: a zero gradient
    same(ifunc.grad(lambda a, b: (a * 2).sum(), 1)(xi, zi),
         tfunc.grad(lambda a, b: (a * 2).sum(), 1)(xt, zt))


def test_grad_errors():
    xi, xt = both(3)
    for lib, fn in ((ignis, ifunc), (torch, tfunc)):
        x = xi if lib is ignis else xt
        with pytest.raises(RuntimeError):
            fn.grad(lambda a: a * 2)(x)  # not a scalar
        with pytest.raises(RuntimeError):
            fn.grad(lambda a: a.sum(), argnums=3)(x)
        with pytest.raises(RuntimeError):
            fn.grad(lambda a: a.sum(), has_aux=True)(x)
        with pytest.raises(RuntimeError):
            fn.grad(lambda a: 3.0)(x)


def test_hessian_and_grad_of_grad():
    xi, xt = both(4)

    def f(lib):
        return lambda x: (lib.sin(x) * x.sum() + x ** 4).sum()

    same(ifunc.hessian(f(ignis))(xi), tfunc.hessian(f(torch))(xt))
    same(ifunc.grad(lambda x: ifunc.grad(f(ignis))(x).sum())(xi),
         tfunc.grad(lambda x: tfunc.grad(f(torch))(x).sum())(xt))
    same(ifunc.jacrev(ifunc.jacrev(f(ignis)))(xi), tfunc.jacrev(tfunc.jacrev(f(torch)))(xt))
    (ai, at), (bi, bt) = both(2, 2), both(3)
    g = lambda lib: lambda a, b: (a.sum() * b ** 2).sum() + (a * a).sum()  # noqa: E731
    same(ifunc.hessian(g(ignis), argnums=(0, 1))(ai, bi),
         tfunc.hessian(g(torch), argnums=(0, 1))(at, bt))


def test_grad_through_outer_autograd():
    """A gradient that is itself differentiated by ordinary autograd."""
    a = RNG.standard_normal(3)
    xi, xt = ignis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    gi = ifunc.grad(lambda x: (x ** 3).sum())(xi)
    gt = tfunc.grad(lambda x: (x ** 3).sum())(xt)
    same(gi, gt)
    gi.sum().backward()
    gt.sum().backward()
    same(xi.grad, xt.grad)


# ---- vjp, jvp ------------------------------------------------------------------------------------
def test_vjp():
    (xi, xt), (yi, yt) = both(3), both(3)
    oi, fi = ifunc.vjp(f_vector(ignis), xi, yi)
    ot, ft = tfunc.vjp(f_vector(torch), xt, yt)
    same(oi, ot)
    ci, ct = both(3)
    same(fi(ci), ft(ct))
    same(fi(ci * 2), ft(ct * 2))  # vjp_fn can be called again

    def g(lib):
        return lambda x: ({"a": x.sum(), "b": (x * 2, x.exp())}, x.mean())

    oi, fi, auxi = ifunc.vjp(g(ignis), xi, has_aux=True)
    ot, ft, auxt = tfunc.vjp(g(torch), xt, has_aux=True)
    same((oi, auxi), (ot, auxt))
    cots = {"a": np.array(1.5), "b": (RNG.standard_normal(3), RNG.standard_normal(3))}
    same(fi({"a": ignis.tensor(cots["a"]), "b": tuple(ignis.tensor(c) for c in cots["b"])}),
         ft({"a": torch.tensor(cots["a"]), "b": tuple(torch.tensor(c) for c in cots["b"])}))
    with pytest.raises(RuntimeError):
        ft({"a": torch.tensor(1.0, dtype=torch.float64)})
    with pytest.raises(RuntimeError):
        fi({"a": ignis.tensor(1.0, dtype=ignis.float64)})


def test_jvp():
    (xi, xt), (yi, yt), (ui, ut), (vi, vt) = both(3), both(3), both(3), both(3)
    same(ifunc.jvp(f_vector(ignis), (xi, yi), (ui, vi)),
         tfunc.jvp(f_vector(torch), (xt, yt), (ut, vt)))

    def g(lib):
        return lambda x: ((x.sin(), (x * x).sum()), x.sum())

    same(ifunc.jvp(g(ignis), (xi,), (ui,), has_aux=True),
         tfunc.jvp(g(torch), (xt,), (ut,), has_aux=True))
    # an output the inputs do not reach: a zero tangent
    same(ifunc.jvp(lambda x: x * 0 + 1, (xi,), (ui,)),
         tfunc.jvp(lambda x: x * 0 + 1, (xt,), (ut,)))
    for lib, fn, x, u in ((ignis, ifunc, xi, ui), (torch, tfunc, xt, ut)):
        with pytest.raises(RuntimeError):
            fn.jvp(lambda a: a, x, (u,))  # primals not a tuple
        with pytest.raises(RuntimeError):
            fn.jvp(lambda a: a, (x,), (u[:2],))


# ---- jacrev, jacfwd -------------------------------------------------------------------------------
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians(transform, argnums):
    (xi, xt), (yi, yt) = both(3), both(2)
    ji = getattr(ifunc, transform)(f_vector(ignis), argnums)(xi, yi)
    jt = getattr(tfunc, transform)(f_vector(torch), argnums)(xt, yt)
    same(ji, jt)

    def g(lib):
        return lambda x, y: {"m": x[:, None] * y[None, :], "s": (x.sum() * y).sum()}

    (xi, xt), (yi, yt) = both(3), both(2)
    same(getattr(ifunc, transform)(g(ignis), argnums)(xi, yi),
         getattr(tfunc, transform)(g(torch), argnums)(xt, yt))
    ji, auxi = getattr(ifunc, transform)(lambda x: (x.exp(), x.sum()), has_aux=True)(xi)
    jt, auxt = getattr(tfunc, transform)(lambda x: (x.exp(), x.sum()), has_aux=True)(xt)
    same((ji, auxi), (jt, auxt))


def test_jacobian_of_matrix_input_and_empty_output():
    mi, mt = both(2, 3)
    same(ifunc.jacrev(lambda m: m @ m.T)(mi), tfunc.jacrev(lambda m: m @ m.T)(mt))
    same(ifunc.jacrev(lambda m: m[:0])(mi), tfunc.jacrev(lambda m: m[:0])(mt))


# ---- vmap ----------------------------------------------------------------------------------------------
def test_vmap_in_dims_and_out_dims():
    (ai, at), (bi, bt) = both(5, 3), both(3, 5)
    f = lambda x, y: x * y.sum() + y  # noqa: E731
    same(ifunc.vmap(f, in_dims=(0, 1))(ai, bi), tfunc.vmap(f, in_dims=(0, 1))(at, bt))
    same(ifunc.vmap(f, in_dims=(0, 1), out_dims=1)(ai, bi),
         tfunc.vmap(f, in_dims=(0, 1), out_dims=1)(at, bt))
    (ci, ct) = both(3)
    same(ifunc.vmap(f, in_dims=(0, None))(ai, ci), tfunc.vmap(f, in_dims=(0, None))(at, ct))
    same(ignis.vmap(ignis.dot)(ai, bi.T), torch.vmap(torch.dot)(at, bt.T))
    same(ifunc.vmap(lambda x: x.sum(), in_dims=-1)(ai), tfunc.vmap(lambda x: x.sum(), in_dims=-1)(at))


def test_vmap_pytrees_nesting_and_kwargs():
    (ai, at), (bi, bt), (ci, ct) = both(4, 2), both(4, 3), both(2, 4)

    def f(lib):
        def fn(d, c, scale=1.0):
            return {"p": d["a"].sum() * d["b"] * scale, "q": (d["a"], c.exp())}
        return fn

    in_dims = ({"a": 0, "b": 0}, 1)
    same(ifunc.vmap(f(ignis), in_dims=in_dims, out_dims={"p": 1, "q": (0, 0)})(
        {"a": ai, "b": bi}, ci, scale=2.0),
        tfunc.vmap(f(torch), in_dims=in_dims, out_dims={"p": 1, "q": (0, 0)})(
        {"a": at, "b": bt}, ct, scale=2.0))
    di, dt = both(2, 3, 4)
    same(ifunc.vmap(ifunc.vmap(lambda x: x.max()))(di), tfunc.vmap(tfunc.vmap(lambda x: x.max()))(dt))
    same(ifunc.vmap(ifunc.vmap(lambda x, y: x * y, (0, None)), (None, 0))(ai[0], bi[:, :2]),
         tfunc.vmap(tfunc.vmap(lambda x, y: x * y, (0, None)), (None, 0))(at[0], bt[:, :2]))


def test_vmap_errors():
    (ai, at), (bi, bt) = both(4, 2), both(3, 2)
    for fn, a, b in ((ifunc, ai, bi), (tfunc, at, bt)):
        with pytest.raises(ValueError):
            fn.vmap(lambda x, y: x + y)(a, b)  # mapped sizes 4 and 3
        with pytest.raises(ValueError):
            fn.vmap(lambda x: x, in_dims=(0, 0))(a)
        with pytest.raises(ValueError):
            fn.vmap(lambda x: x, in_dims=2)(a)
        with pytest.raises(ValueError):
            fn.vmap(lambda x: x, in_dims=None)(a)
        with pytest.raises(ValueError):
            fn.vmap(lambda x: 3)(a)
        with pytest.raises(ValueError):
            fn.vmap(lambda x, n: x, in_dims=(0, 0))(a, 3)
        with pytest.raises(ValueError):
            fn.vmap(lambda x: x, out_dims=(0, 0))(a)


def test_per_sample_gradients_with_functional_call():
    """torch.func's per-sample-gradient recipe: vmap(grad(loss through
    functional_call)) over a batch, the parameters held fixed."""
    torch.manual_seed(0)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    tmodel = tmodel.double()
    imodel = ignis.nn.Sequential(ignis.nn.Linear(4, 5), ignis.nn.Tanh(), ignis.nn.Linear(5, 2))
    imodel = imodel.double()
    with ignis.no_grad():
        for (n, pi), (_, pt) in zip(imodel.named_parameters(), tmodel.named_parameters()):
            pi.copy_(ignis.tensor(pt.detach().numpy()))
    xs, ys = RNG.standard_normal((6, 4)), RNG.integers(0, 2, 6)

    def loss(lib, model, fcall):
        def fn(params, x, y):
            out = fcall(model, params, (x[None],))
            return lib.nn.functional.cross_entropy(out, y[None])
        return fn

    pi = {k: v.detach() for k, v in imodel.named_parameters()}
    pt = {k: v.detach() for k, v in tmodel.named_parameters()}
    gi = ifunc.vmap(ifunc.grad(loss(ignis, imodel, ifunc.functional_call)), (None, 0, 0))(
        pi, ignis.tensor(xs), ignis.tensor(ys))
    gt = tfunc.vmap(tfunc.grad(loss(torch, tmodel, tfunc.functional_call)), (None, 0, 0))(
        pt, torch.tensor(xs), torch.tensor(ys))
    same(gi, gt, 1e-9, 1e-11)


# ---- functional_call -------------------------------------------------------------------------------
class _Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(3, 3, bias=False)
        self.b = torch.nn.Linear(3, 3, bias=False)
        self.b.weight = self.a.weight  # tied: one parameter, two names
        self.register_buffer("offset", torch.zeros(3))

    def forward(self, x):
        return self.b(self.a(x)) + self.offset


def _ignis_tied():
    class Tied(ignis.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = ignis.nn.Linear(3, 3, bias=False)
            self.b = ignis.nn.Linear(3, 3, bias=False)
            self.b.weight = self.a.weight
            self.register_buffer("offset", ignis.zeros(3))

        def forward(self, x):
            return self.b(self.a(x)) + self.offset
    return Tied()


def test_functional_call_swaps_and_restores():
    tm, im = _Tied(), _ignis_tied()
    with ignis.no_grad():
        im.a.weight.copy_(ignis.tensor(tm.a.weight.detach().numpy()))
    w, off, x = RNG.standard_normal((3, 3)), RNG.standard_normal(3), RNG.standard_normal((2, 3))
    wi, wt = ignis.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    params_i = {"a.weight": wi.float(), "offset": ignis.tensor(off).float()}
    params_t = {"a.weight": wt.float(), "offset": torch.tensor(off).float()}
    oi = ifunc.functional_call(im, params_i, ignis.tensor(x).float())
    ot = tfunc.functional_call(tm, params_t, torch.tensor(x).float())
    same(oi, ot, 1e-5, 1e-6)
    oi.sum().backward()
    ot.sum().backward()
    same(wi.grad, wt.grad, 1e-5, 1e-6)
    # the module's own tensors are back
    assert isinstance(im.a.weight, ignis.nn.Parameter) and im.b.weight is im.a.weight
    same(im(ignis.tensor(x).float()), tm(torch.tensor(x).float()), 1e-5, 1e-6)
    # without tying, b keeps its own (the module's) weight
    oi = ifunc.functional_call(im, params_i, (ignis.tensor(x).float(),), tie_weights=False)
    ot = tfunc.functional_call(tm, params_t, (torch.tensor(x).float(),), tie_weights=False)
    same(oi, ot, 1e-5, 1e-6)
    # several dicts, kwargs
    oi = ifunc.functional_call(im, ({"a.weight": params_i["a.weight"]}, {"offset": params_i["offset"]}),
                               (), {"x": ignis.tensor(x).float()})
    ot = tfunc.functional_call(tm, ({"a.weight": params_t["a.weight"]}, {"offset": params_t["offset"]}),
                               (), {"x": torch.tensor(x).float()})
    same(oi, ot, 1e-5, 1e-6)


def test_functional_call_errors_restore_the_module():
    tm, im = _Tied(), _ignis_tied()
    before = im.a.weight
    for fn, m, lib in ((ifunc, im, ignis), (tfunc, tm, torch)):
        w = lib.zeros(3, 3)
        with pytest.raises(RuntimeError):
            fn.functional_call(m, {"a.weight": w}, (lib.zeros(2, 3),), strict=True)  # no offset
        with pytest.raises(ValueError):
            fn.functional_call(m, ({"a.weight": w}, {"a.weight": w}), (lib.zeros(2, 3),))
        with pytest.raises(ValueError):
            fn.functional_call(m, {"a.weight": w, "b.weight": lib.ones(3, 3)},
                               (lib.zeros(2, 3),))
        with pytest.raises(RuntimeError):
            fn.functional_call(m, {"a.weight": lib.zeros(4, 4)}, (lib.zeros(2, 3),))
    assert im.a.weight is before and im.b.weight is before
    assert isinstance(im._buffers["offset"], ignis.Tensor)


def test_functional_call_restores_a_submodule_held_under_two_names():
    """One Linear reachable as m.a and m.b: its weight is back afterwards.
    (torch 2.13 leaves the given tensor in place in this case, with
    tie_weights=True; ignis restores the module's own Parameter.)"""
    m = ignis.nn.Sequential()
    m.a = ignis.nn.Linear(3, 3, bias=False)
    m.b = m.a
    before = m.a.weight
    x = ignis.tensor(RNG.standard_normal((2, 3))).float()
    expected = m.b(m.a(x)).detach()
    out = ifunc.functional_call(m, {"a.weight": ignis.eye(3)}, (x,))
    np.testing.assert_allclose(_np(out), _np(x), rtol=1e-6)
    assert m.a.weight is before and m.b.weight is before
    np.testing.assert_allclose(_np(m.b(m.a(x))), _np(expected), rtol=1e-6)


def test_nn_utils_stateless_functional_call_is_func_functional_call():
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(3).standard_normal((3, 2))
    for lib in (ignis, torch):
        m = lib.nn.Linear(2, 3)
        x = lib.ones(4, 2)
        new = {"weight": lib.tensor(w, dtype=lib.float32), "bias": lib.zeros(3)}
        with pytest.warns(FutureWarning):
            out = lib.nn.utils.stateless.functional_call(m, new, (x,))
        np.testing.assert_allclose(out.detach().numpy(), (np.ones((4, 2)) @ w.T), rtol=1e-6)
        assert not bool((m.weight == new["weight"]).all())  # restored
