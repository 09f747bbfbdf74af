"""Activation and loss modules (and the functionals written for them):
values, gradients and reprs against torch, every reduction mode."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn as inn
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)

ACTIVATIONS = [
    ("LeakyReLU", (0.2,)), ("ELU", (0.7,)), ("CELU", (0.7,)), ("SELU", ()), ("ReLU6", ()),
    ("Hardswish", ()), ("Hardsigmoid", ()), ("Mish", ()), ("Hardtanh", (-0.5, 0.5)),
    ("Softplus", (2.0, 1.0)), ("Softsign", ()), ("Tanhshrink", ()), ("LogSigmoid", ()),
    ("Threshold", (0.1, -3.0)), ("LogSoftmax", (1,)), ("Softmin", (1,)), ("Softmax", (2,)),
    ("PReLU", ()), ("PReLU", (3, 0.1)), ("Tanh", ()), ("Sigmoid", ()), ("GELU", ("tanh",)),
    ("SiLU", ()), ("ReLU", ()),
]


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name,args", ACTIVATIONS, ids=[f"{n}{a}" for n, a in ACTIVATIONS])
def test_activation_module_matches_torch(name, args):
    # Values away from the kinks (0, +-3), where one-sided derivatives differ by convention.
    x = RNG.uniform(-5, 5, (4, 3, 5))
    x[np.abs(x) < 0.05] += 0.2
    x[np.abs(np.abs(x) - 3) < 0.05] += 0.2
    for dtype in (np.float32, np.float64):
        xi = ignis.tensor(x.astype(dtype), requires_grad=True)
        xt = torch.tensor(x.astype(dtype), requires_grad=True)
        mi, mt = getattr(inn, name)(*args), getattr(torch.nn, name)(*args)
        if dtype == np.float64:
            mi, mt = mi.double(), mt.double()
        yi, yt = mi(xi), mt(xt)
        assert yi.dtype == getattr(ignis, str(yt.dtype).split(".")[-1])
        _close(yi, yt)
        g = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
        yi.backward(ignis.tensor(g))
        yt.backward(torch.tensor(g))
        _close(xi.grad, xt.grad)
        assert repr(mi) == repr(mt)
        if name == "PReLU":
            _close(mi.weight.grad, mt.weight.grad)


@pytest.mark.parametrize("name,args", [("LeakyReLU", (0.1, True)), ("ELU", (1.0, True)),
                                       ("CELU", (2.0, True)), ("SELU", (True,)),
                                       ("Hardswish", (True,)), ("Hardsigmoid", (True,)),
                                       ("ReLU6", (True,)), ("Threshold", (0.5, 9.0, True)),
                                       ("Hardtanh", (-1.0, 1.0, True)), ("Mish", (True,))])
def test_inplace_activations_write_their_input(name, args):
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 4
    xi, xt = ignis.tensor(x), torch.tensor(x)
    yi, yt = getattr(inn, name)(*args)(xi), getattr(torch.nn, name)(*args)(xt)
    _close(yi, yt)
    _close(xi, xt)


def test_functional_activations_and_errors():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    xi, xt = ignis.tensor(x), torch.tensor(x)
    TF = torch.nn.functional
    for f in ("selu", "softsign", "hardswish", "hardsigmoid", "tanhshrink"):
        _close(getattr(IF, f)(xi), getattr(TF, f)(xt))
    _close(IF.celu(xi, 0.5), TF.celu(xt, 0.5))
    _close(IF.threshold(xi, 0.2, 5.0), TF.threshold(xt, 0.2, 5.0))
    _close(IF.softshrink(xi, 0.3), TF.softshrink(xt, 0.3))
    _close(IF.hardshrink(xi, 0.3), TF.hardshrink(xt, 0.3))
    w = RNG.standard_normal(3).astype(np.float32)
    _close(IF.prelu(xi, ignis.tensor(w)), TF.prelu(xt, torch.tensor(w)))
    for bad in (np.ones(4, np.float32), np.ones((3, 1), np.float32)):
        with pytest.raises(RuntimeError):
            TF.prelu(xt, torch.tensor(bad))
        with pytest.raises(RuntimeError):
            IF.prelu(xi, ignis.tensor(bad))


def _loss_inputs(name):
    x = RNG.standard_normal((4, 5))
    if name in ("NLLLoss", "CrossEntropyLoss"):
        t = RNG.integers(0, 5, (4,))
        if name == "NLLLoss":
            x = x - np.log(np.exp(x).sum(1, keepdims=True))
        return x, t
    if name == "BCELoss":
        return 1 / (1 + np.exp(-x)), RNG.random((4, 5))
    if name == "KLDivLoss":
        return x - np.log(np.exp(x).sum(1, keepdims=True)), RNG.dirichlet(np.ones(5), 4)
    return x, RNG.standard_normal((4, 5))


LOSSES = [
    ("L1Loss", {}), ("MSELoss", {}), ("SmoothL1Loss", {"beta": 0.5}), ("HuberLoss", {"delta": 0.7}),
    ("KLDivLoss", {}), ("KLDivLoss", {"log_target": True}), ("NLLLoss", {}),
    ("NLLLoss", {"ignore_index": 2}), ("CrossEntropyLoss", {"label_smoothing": 0.1}),
    ("BCELoss", {}), ("BCEWithLogitsLoss", {}), ("NLLLoss", {"weight": "w5"}),
    ("BCELoss", {"weight": "w5"}), ("BCEWithLogitsLoss", {"pos_weight": "w5"}),
    ("BCEWithLogitsLoss", {"weight": "w5", "pos_weight": "w5"}),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"] + ["batchmean"])
@pytest.mark.parametrize("name,kw", LOSSES, ids=[f"{n}-{k}" for n, k in LOSSES])
def test_loss_module_matches_torch(name, kw, reduction):
    if reduction == "batchmean" and name != "KLDivLoss":
        pytest.skip("batchmean is KLDivLoss's")
    if name == "KLDivLoss" and kw.get("log_target"):
        x, t = _loss_inputs(name)
        t = np.log(t)
    else:
        x, t = _loss_inputs(name)
    w = RNG.random(5) + 0.5
    ki = {k: ignis.tensor(w) if v == "w5" else v for k, v in kw.items()}
    kt = {k: torch.tensor(w) if v == "w5" else v for k, v in kw.items()}
    mi = getattr(inn, name)(reduction=reduction, **ki)
    mt = getattr(torch.nn, name)(reduction=reduction, **kt)
    xi, xt = ignis.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    li, lt = mi(xi, ignis.tensor(t)), mt(xt, torch.tensor(t))
    _close(li, lt, 1e-10)
    li.sum().backward()
    lt.sum().backward()
    _close(xi.grad, xt.grad, 1e-10)
    assert repr(mi) == repr(mt)
    assert sorted(dict(mi.named_buffers())) == sorted(dict(mt.named_buffers()))


def test_legacy_loss_flags():
    x, t = RNG.standard_normal(6), RNG.standard_normal(6)
    for kw in ({"size_average": False}, {"reduce": False}, {"size_average": True, "reduce": True}):
        li = inn.L1Loss(**kw)(ignis.tensor(x), ignis.tensor(t))
        lt = torch.nn.L1Loss(**kw)(torch.tensor(x), torch.tensor(t))
        _close(li, lt, 1e-12)
