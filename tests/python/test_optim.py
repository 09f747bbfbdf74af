"""ignis.optim against torch.optim: the same parameters and the same
gradients (set by hand) for several steps, for every option; state_dict
format and round trips (including torch's state through NumPy); parameter
group rules; learning-rate schedulers."""
import math

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.optim as optim

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (5,), ()]


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ip = [nn.Parameter(ignis.from_numpy(a.copy())) for a in arrays]
    tp = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in arrays]
    return ip, tp


def set_grads(ip, tp, rng, skip=()):
    for i, (a, b) in enumerate(zip(ip, tp)):
        if i in skip:
            a.grad, b.grad = None, None
            continue
        g = rng.standard_normal(tuple(b.shape)).astype(np.float32)
        a.grad = ignis.from_numpy(g.copy())
        b.grad = torch.from_numpy(g)


def assert_params_close(ip, tp, rtol=1e-5, atol=1e-6):
    for a, b in zip(ip, tp):
        np.testing.assert_allclose(a.detach().numpy() if hasattr(a, "detach") else a.numpy(),
                                   b.detach().numpy(), rtol=rtol, atol=atol)


def run_both(name, kwargs, steps=6, groups=False, skip=()):
    ip, tp = make_params()
    if groups:
        iargs = [{"params": ip[:2]}, {"params": ip[2:], "lr": 0.05}]
        targs = [{"params": tp[:2]}, {"params": tp[2:], "lr": 0.05}]
    else:
        iargs, targs = ip, tp
    iopt = getattr(optim, name)(iargs, **kwargs)
    topt = getattr(torch.optim, name)(targs, **kwargs)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        set_grads(ip, tp, rng, skip)
        iopt.step()
        topt.step()
        assert_params_close(ip, tp)
    return iopt, topt, ip, tp


SGD_CONFIGS = [
    {"lr": 0.1}, {"lr": 0.1, "momentum": 0.9}, {"lr": 0.1, "momentum": 0.9, "dampening": 0.3},
    {"lr": 0.1, "momentum": 0.9, "nesterov": True}, {"lr": 0.1, "weight_decay": 0.1},
    {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.01, "nesterov": True, "maximize": True},
    {"lr": 0.1, "maximize": True},
]


@pytest.mark.parametrize("kwargs", SGD_CONFIGS)
def test_sgd_matches_torch(kwargs):
    run_both("SGD", kwargs)


ADAM_CONFIGS = [
    {}, {"lr": 0.01}, {"lr": 0.01, "betas": (0.8, 0.99), "eps": 1e-6},
    {"lr": 0.01, "weight_decay": 0.1}, {"lr": 0.01, "amsgrad": True},
    {"lr": 0.01, "maximize": True}, {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05,
                                     "maximize": True},
]


@pytest.mark.parametrize("kwargs", ADAM_CONFIGS)
@pytest.mark.parametrize("name", ["AdamW", "Adam"])
def test_adam_family_matches_torch(name, kwargs):
    run_both(name, kwargs, steps=8)


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("AdamW", {"lr": 0.01})])
def test_param_groups_and_missing_grads(name, kwargs):
    iopt, topt, ip, tp = run_both(name, kwargs, groups=True, skip=(1,))
    assert [g["lr"] for g in iopt.param_groups] == [g["lr"] for g in topt.param_groups]
    assert ip[1] not in iopt.state and len(iopt.state) == len(topt.state) == 2


def test_defaults_match_torch():
    ip, tp = make_params()
    for name in ["SGD", "Adam", "AdamW"]:
        assert getattr(optim, name)(ip).defaults == getattr(torch.optim, name)(tp).defaults
        sd = getattr(optim, name)(ip).state_dict()
        assert sd == getattr(torch.optim, name)(tp).state_dict()


def test_state_dict_format_matches_torch():
    iopt, topt, ip, tp = run_both("AdamW", {"lr": 0.01, "amsgrad": True}, steps=3,
                                  groups=True)
    isd, tsd = iopt.state_dict(), topt.state_dict()
    assert isd["param_groups"] == tsd["param_groups"]
    assert sorted(isd["state"]) == sorted(tsd["state"]) == [0, 1, 2]
    for k in tsd["state"]:
        assert list(isd["state"][k]) == list(tsd["state"][k])
        for key, tv in tsd["state"][k].items():
            iv = isd["state"][k][key]
            assert isinstance(iv, ignis.Tensor) and iv.dtype == ignis.float32
            np.testing.assert_allclose(iv.numpy(), tv.numpy(), rtol=1e-5, atol=1e-7)
    assert isd["state"][0]["step"].item() == 3.0 and isd["state"][0]["step"].dim() == 0
    sopt, sref, _, _ = run_both("SGD", {"lr": 0.1, "momentum": 0.9}, steps=2)
    assert list(sopt.state_dict()["state"][0]) == list(sref.state_dict()["state"][0])


@pytest.mark.parametrize("name,kwargs", [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                         ("AdamW", {"lr": 0.01, "amsgrad": True})])
def test_load_state_dict_round_trip_and_from_torch(name, kwargs):
    iopt, topt, ip, tp = run_both(name, kwargs, steps=3)
    sd = iopt.state_dict()
    # A fresh ignis optimizer over copies of the parameters, loaded from ignis state...
    ip2 = [nn.Parameter(p.detach().clone()) for p in ip]
    iopt2 = getattr(optim, name)(ip2, lr=123.0)
    iopt2.load_state_dict(sd)
    assert iopt2.param_groups[0]["lr"] == kwargs["lr"]
    # ...and another loaded from torch's state (tensors converted through NumPy).
    tsd = topt.state_dict()
    conv = {"param_groups": tsd["param_groups"],
            "state": {k: {n: ignis.from_numpy(v.numpy().copy()) for n, v in s.items()}
                      for k, s in tsd["state"].items()}}
    ip3 = [nn.Parameter(p.detach().clone()) for p in ip]
    iopt3 = getattr(optim, name)(ip3)
    iopt3.load_state_dict(conv)
    # State is copied, not shared with the source.
    key = "momentum_buffer" if name == "SGD" else "exp_avg"
    assert iopt2.state[ip2[0]][key].data_ptr() != iopt.state[ip[0]][key].data_ptr()
    rng = np.random.default_rng(7)
    for _ in range(3):
        set_grads(ip, tp, rng)
        for other in (ip2, ip3):
            for a, b in zip(other, ip):
                a.grad = b.grad.clone()
        for o in (iopt, iopt2, iopt3, topt):
            o.step()
    assert_params_close(ip, tp)
    assert_params_close(ip2, tp)
    assert_params_close(ip3, tp)


def test_load_state_dict_errors():
    ip, _ = make_params()
    opt = optim.AdamW(ip)
    sd = opt.state_dict()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.AdamW([{"params": ip[:1]}, {"params": ip[1:]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.AdamW(ip[:2]).load_state_dict(sd)


def test_zero_grad():
    ip, tp = make_params()
    opt = optim.SGD(ip, lr=0.1)
    set_grads(ip, tp, np.random.default_rng(0))
    opt.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in ip)
    opt.zero_grad()
    assert all(p.grad is None for p in ip)
    opt.step()  # no grads: nothing happens
    assert_params_close(ip, tp)


def test_constructor_errors_match_torch():
    ip, tp = make_params()
    cases = [
        ("SGD", {"lr": -1.0}), ("SGD", {"momentum": -0.1}), ("SGD", {"weight_decay": -1.0}),
        ("SGD", {"nesterov": True}), ("SGD", {"nesterov": True, "momentum": 0.9,
                                              "dampening": 0.1}),
        ("AdamW", {"lr": -1.0}), ("AdamW", {"eps": -1.0}), ("AdamW", {"betas": (1.0, 0.9)}),
        ("AdamW", {"betas": (0.9, 1.5)}), ("Adam", {"weight_decay": -0.5}),
    ]
    for name, kwargs in cases:
        with pytest.raises(ValueError) as te:
            getattr(torch.optim, name)(tp, **kwargs)
        with pytest.raises(ValueError) as ie:
            getattr(optim, name)(ip, **kwargs)
        assert str(ie.value) == str(te.value), (name, kwargs)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(ip[0], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": ip}, {"params": ip[:1]}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)


def test_add_param_group_and_named_params():
    ip, _ = make_params()
    opt = optim.AdamW(ip[:2], lr=0.5)
    opt.add_param_group({"params": ip[2], "weight_decay": 0.0})
    g = opt.param_groups[1]
    assert g["lr"] == 0.5 and g["weight_decay"] == 0.0 and g["params"] == [ip[2]]
    named = optim.SGD([("a", ip[0]), ("b", ip[1])])
    assert named.param_groups[0]["param_names"] == ["a", "b"]
    assert "Parameter Group 0" in repr(opt) and "lr: 0.5" in repr(opt)


def test_closure():
    ip, tp = make_params()
    opt = optim.SGD(ip, lr=0.1)
    set_grads(ip, tp, np.random.default_rng(0))
    assert opt.step(lambda: 42.0) == 42.0


# ---- schedulers -----------------------------------------------------------------------------

SCHEDULERS = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}),
    ("LambdaLR", {"lr_lambda": lambda e: 0.95 ** e}),
    ("CosineAnnealingLR", {"T_max": 7, "eta_min": 0.001}),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULERS)
def test_schedulers_match_torch(name, kwargs):
    ip, tp = make_params()
    iopt = optim.SGD([{"params": ip[:1]}, {"params": ip[1:], "lr": 0.3}], lr=0.1)
    topt = torch.optim.SGD([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.3}], lr=0.1)
    isch = getattr(optim.lr_scheduler, name)(iopt, **kwargs)
    tsch = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    for _ in range(20):
        np.testing.assert_allclose(isch.get_last_lr(), tsch.get_last_lr(), rtol=1e-12)
        assert [g["lr"] for g in iopt.param_groups] == pytest.approx(
            [g["lr"] for g in topt.param_groups], rel=1e-12)
        iopt.step()
        topt.step()
        isch.step()
        tsch.step()
    isd = isch.state_dict()
    assert isd["last_epoch"] == tsch.state_dict()["last_epoch"] == 20
    assert isd["base_lrs"] == tsch.state_dict()["base_lrs"]
    # Resume into a fresh scheduler: same schedule afterwards.
    iopt2 = optim.SGD([{"params": ip[:1]}, {"params": ip[1:], "lr": 0.3}], lr=0.1)
    isch2 = getattr(optim.lr_scheduler, name)(iopt2, **kwargs)
    iopt2.load_state_dict(iopt.state_dict())
    isch2.load_state_dict(isd)
    for _ in range(5):
        isch.step()
        isch2.step()
        tsch.step()
    np.testing.assert_allclose(isch2.get_last_lr(), tsch.get_last_lr(), rtol=1e-12)


def test_lambda_scheduler_state_dict_keeps_callable_objects():
    class Warmup:
        def __init__(self):
            self.n = 4

        def __call__(self, e):
            return min(1.0, (e + 1) / self.n)

    ip, _ = make_params()
    opt = optim.SGD(ip, lr=1.0)
    sch = optim.lr_scheduler.LambdaLR(opt, [Warmup()])
    sd = sch.state_dict()
    assert sd["lr_lambdas"] == [{"n": 4}]
    assert optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0).state_dict()["lr_lambdas"] == [None]
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.StepLR(object(), 3)
    assert math.isclose(sch.get_last_lr()[0], 0.25)


# ---- with autograd: a real training loop ----------------------------------------------------

needs_autograd = pytest.mark.skipif(not hasattr(ignis.Tensor, "backward"),
                                    reason="needs eager autograd (ignis.Tensor.backward)")


@needs_autograd
@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
    ("AdamW", {"lr": 1e-2}), ("Adam", {"lr": 1e-2, "amsgrad": True, "weight_decay": 1e-3}),
])
def test_mlp_training_loop_matches_torch(name, kwargs):
    """An MLP trained with backward() + optimizer.step() + zero_grad() follows
    torch's trajectory (weights copied, same batches)."""
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.GELU(), torch.nn.Linear(16, 16),
                             torch.nn.Tanh(), torch.nn.Linear(16, 2))
    im = nn.Sequential(nn.Linear(5, 16), nn.GELU(), nn.Linear(16, 16), nn.Tanh(),
                       nn.Linear(16, 2))
    im.load_state_dict({k: ignis.from_numpy(v.numpy().copy()) for k, v in
                        tm.state_dict().items()})
    iopt = getattr(optim, name)(im.parameters(), **kwargs)
    topt = getattr(torch.optim, name)(tm.parameters(), **kwargs)
    x = np.random.default_rng(0).standard_normal((16, 5)).astype(np.float32)
    y = np.stack([x[:, 0] * x[:, 1], np.sin(x[:, 2])], 1).astype(np.float32)
    losses = []
    for _ in range(10):
        iloss = ((im(ignis.from_numpy(x)) - ignis.from_numpy(y)) ** 2).mean()
        tloss = ((tm(torch.from_numpy(x)) - torch.from_numpy(y)) ** 2).mean()
        np.testing.assert_allclose(iloss.item(), tloss.item(), rtol=1e-4)
        iopt.zero_grad()
        topt.zero_grad()
        iloss.backward()
        tloss.backward()
        for (n, ip), tp in zip(im.named_parameters(), tm.parameters()):
            np.testing.assert_allclose(ip.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6,
                                       err_msg=n)
        iopt.step()
        topt.step()
        losses.append(iloss.item())
    assert_params_close(list(im.parameters()), list(tm.parameters()), rtol=1e-4, atol=1e-5)
    # Updates ran without recording history: parameters are still leaves.
    assert all(p.is_leaf and p.grad_fn is None and p.requires_grad for p in im.parameters())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    ip, tp = make_params()
    set_grads(ip, tp, np.random.default_rng(3))
    inorm = nn.utils.clip_grad_norm_(ip, max_norm, norm_type)
    tnorm = torch.nn.utils.clip_grad_norm_(tp, max_norm, norm_type)
    np.testing.assert_allclose(inorm.item(), tnorm.item(), rtol=1e-5)
    for a, b in zip(ip, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
    nn.utils.clip_grad_value_(ip, 0.1)
    torch.nn.utils.clip_grad_value_(tp, 0.1)
    for a, b in zip(ip, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_get_total_norm_and_clip_grads_with_norm_match_torch(norm_type):
    # torch >= 2.6 splits clip_grad_norm_ into these two.
    ip, tp = make_params()
    set_grads(ip, tp, np.random.default_rng(4))
    inorm = nn.utils.get_total_norm([p.grad for p in ip], norm_type)
    tnorm = torch.nn.utils.get_total_norm([p.grad for p in tp], norm_type)
    np.testing.assert_allclose(inorm.item(), tnorm.item(), rtol=1e-5)
    nn.utils.clip_grads_with_norm_(iter(ip), 0.3, inorm)
    torch.nn.utils.clip_grads_with_norm_(iter(tp), 0.3, tnorm)
    for a, b in zip(ip, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert nn.utils.get_total_norm([]).item() == 0.0
    # A generator of parameters is read once: the gradients are still clipped.
    np.testing.assert_allclose(nn.utils.clip_grad_norm_((p for p in ip), 0.01).item(),
                               torch.nn.utils.clip_grad_norm_((p for p in tp), 0.01).item(),
                               rtol=1e-5)
    for a, b in zip(ip, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)
