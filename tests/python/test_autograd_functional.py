"""ignis.autograd.functional (vjp, jvp, jacobian, hessian, hvp, vhp) and
anomaly detection, against torch.autograd."""
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.autograd.functional as AF

torch = pytest.importorskip("torch")
TF = torch.autograd.functional
RNG = np.random.default_rng(0)


def _pair(*shape):
    a = RNG.standard_normal(shape)
    return ignis.tensor(a), torch.tensor(a)


def _close(a, b, tol=1e-10):
    if isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y, tol)
        return
    assert isinstance(a, ignis.Tensor), type(a)
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def f_one(lib):
    return lambda x: (x.sin() * x ** 2).cumsum(0)


def f_many_in(lib):
    return lambda x, y: (x.exp() @ y).tanh()


def f_many_out(lib):
    return lambda x: (x * 2, x.sum() ** 2, x[:2].cos())


def f_many_both(lib):
    return lambda x, y: (x @ y, x.sum() * y, y.exp())


def test_jacobian_single_input_output():
    xi, xt = _pair(4)
    _close(AF.jacobian(f_one(ignis), xi), TF.jacobian(f_one(torch), xt))


def test_jacobian_tuple_inputs():
    (xi, xt), (yi, yt) = _pair(2, 3), _pair(3, 2)
    _close(AF.jacobian(f_many_in(ignis), (xi, yi)), TF.jacobian(f_many_in(torch), (xt, yt)))


def test_jacobian_tuple_outputs():
    xi, xt = _pair(3)
    _close(AF.jacobian(f_many_out(ignis), xi), TF.jacobian(f_many_out(torch), xt))


def test_jacobian_tuple_both_and_forward_mode():
    (xi, xt), (yi, yt) = _pair(2, 3), _pair(3)
    want = TF.jacobian(f_many_both(torch), (xt, yt))
    _close(AF.jacobian(f_many_both(ignis), (xi, yi)), want)
    got = AF.jacobian(f_many_both(ignis), (xi, yi), vectorize=True, strategy="forward-mode")
    _close(got, TF.jacobian(f_many_both(torch), (xt, yt), vectorize=True,
                            strategy="forward-mode"))


def test_jacobian_unused_input_and_strict():
    (xi, xt), (yi, yt) = _pair(3), _pair(2)
    _close(AF.jacobian(lambda x, y: x * 3, (xi, yi)), TF.jacobian(lambda x, y: x * 3, (xt, yt)))
    with pytest.raises(RuntimeError):
        TF.jacobian(lambda x, y: x * 3, (xt, yt), strict=True)
    with pytest.raises(RuntimeError):
        AF.jacobian(lambda x, y: x * 3, (xi, yi), strict=True)


def test_jacobian_create_graph_and_detached():
    xi, xt = _pair(3)
    assert not AF.jacobian(f_one(ignis), xi).requires_grad
    xi.requires_grad_(True)
    xt.requires_grad_(True)
    ji = AF.jacobian(f_one(ignis), xi, create_graph=True)
    jt = TF.jacobian(f_one(torch), xt, create_graph=True)
    assert ji.requires_grad and jt.requires_grad
    (gi,) = ignis.autograd.grad(ji.sum(), xi)
    (gt,) = torch.autograd.grad(jt.sum(), xt)
    _close(gi, gt)


def test_jacobian_argument_errors():
    xi, xt = _pair(3)
    for lib, mod in ((ignis, AF), (torch, TF)):
        x = xi if lib is ignis else xt
        with pytest.raises(NotImplementedError):
            mod.jacobian(lambda a: a * 2, x, strategy="forward-mode")
        with pytest.raises(AssertionError):
            mod.jacobian(lambda a: a * 2, x, strategy="sideways")
        with pytest.raises(TypeError):
            mod.jacobian(lambda a: a * 2, [x])
        with pytest.raises(TypeError):
            mod.jacobian(lambda a: 3, x)


def test_hessian_one_and_several_inputs():
    xi, xt = _pair(3)
    f = lambda x: (x ** 3).sum() + x.prod()  # noqa: E731
    _close(AF.hessian(f, xi), TF.hessian(f, xt))
    (xi, xt), (yi, yt) = _pair(2), _pair(2)
    g = lambda x, y: (x.exp() * y ** 2).sum() + (x * y.sin()).sum()  # noqa: E731
    _close(AF.hessian(g, (xi, yi)), TF.hessian(g, (xt, yt)))
    with pytest.raises(RuntimeError):
        AF.hessian(lambda x: x ** 2, xi)


def test_vjp_jvp():
    (xi, xt), (vi, vt) = _pair(4), _pair(4)
    _close(AF.vjp(f_one(ignis), xi, vi), TF.vjp(f_one(torch), xt, vt))
    _close(AF.jvp(f_one(ignis), xi, vi), TF.jvp(f_one(torch), xt, vt))
    (xi, xt), (yi, yt) = _pair(2, 3), _pair(3, 2)
    (ui, ut), (wi, wt) = _pair(2, 3), _pair(3, 2)
    _close(AF.jvp(f_many_in(ignis), (xi, yi), (ui, wi)),
           TF.jvp(f_many_in(torch), (xt, yt), (ut, wt)))
    (oi, ot) = _pair(2, 2)
    _close(AF.vjp(f_many_in(ignis), (xi, yi), oi), TF.vjp(f_many_in(torch), (xt, yt), ot))
    si, st = _pair(1)
    _close(AF.vjp(lambda x: x.exp(), si), TF.vjp(lambda x: x.exp(), st))
    with pytest.raises(RuntimeError):  # v=None needs a one-element output
        AF.vjp(f_one(ignis), xi[0])
    with pytest.raises(RuntimeError):
        AF.jvp(f_many_in(ignis), (xi, yi))


def test_hvp_vhp():
    (xi, xt), (vi, vt) = _pair(3), _pair(3)
    f = lambda x: (x.sin() * x ** 3).sum()  # noqa: E731
    _close(AF.hvp(f, xi, vi), TF.hvp(f, xt, vt))
    _close(AF.vhp(f, xi, vi), TF.vhp(f, xt, vt))
    (yi, yt), (wi, wt) = _pair(2), _pair(2)
    g = lambda x, y: (x[:2] * y.exp()).sum() ** 2  # noqa: E731
    _close(AF.hvp(g, (xi, yi), (vi, wi)), TF.hvp(g, (xt, yt), (vt, wt)))
    _close(AF.vhp(g, (xi, yi), (vi, wi)), TF.vhp(g, (xt, yt), (vt, wt)))


# --- anomaly detection ------------------------------------------------------------


def _nan_message(lib, fn):
    x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                fn(lib, x).backward()
    return str(info.value)


def test_anomaly_names_the_node_like_torch():
    fn = lambda lib, x: (x.sqrt() * 0).sum()  # noqa: E731  (0 * inf = nan in SqrtBackward0)
    want = _nan_message(torch, fn)
    assert "SqrtBackward0" in want
    assert _nan_message(ignis, fn) in want


def test_anomaly_in_python_function():
    def make(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * float("nan")
        return Bad

    fn = lambda lib, x: make(lib).apply(x).sum()  # noqa: E731
    want = _nan_message(torch, fn)
    assert _nan_message(ignis, fn) in want


def test_anomaly_off_lets_nan_through_and_state_functions():
    x = ignis.tensor([0.0], requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert bool(x.grad.isnan().all())
    assert not ignis.is_anomaly_enabled()
    with ignis.autograd.set_detect_anomaly(True, check_nan=False):
        assert ignis.autograd.is_anomaly_enabled() == torch.is_anomaly_enabled() is False \
            or ignis.is_anomaly_enabled()
        assert not ignis.is_anomaly_check_nan_enabled()
        y = ignis.tensor([0.0], requires_grad=True)
        (y.sqrt() * 0).sum().backward()  # check_nan=False: no error
    assert not ignis.is_anomaly_enabled() and ignis.is_anomaly_check_nan_enabled()
    ignis.set_anomaly_enabled(True)
    try:
        assert ignis.is_anomaly_enabled()
    finally:
        ignis.set_anomaly_enabled(False)


def test_detect_anomaly_decorator_and_warning():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        deco = ignis.autograd.detect_anomaly()

    @deco
    def inside():
        return ignis.is_anomaly_enabled()

    assert inside() and not ignis.is_anomaly_enabled()
    z = ignis.tensor([0.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="returned nan values"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with ignis.autograd.detect_anomaly():
                ignis.autograd.grad((z.sqrt() * 0).sum(), z)
    # a clean backward under anomaly mode gives the ordinary gradient
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ignis.autograd.detect_anomaly():
            (g,) = ignis.autograd.grad((z ** 2).sum(), z)
    np.testing.assert_allclose(g.numpy(), [0.0, 4.0])
