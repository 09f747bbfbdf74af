"""RMSprop, Adagrad, Adadelta, LBFGS and the schedulers added beside
StepLR/LambdaLR/CosineAnnealingLR: trajectories against torch from the same
parameters and gradients, state_dict keys, and resuming from torch's state."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")


def _problem(lib):
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((3, 4)), rng.standard_normal(4)
    X, Y = rng.standard_normal((8, 3)), rng.standard_normal((8, 4))
    w = lib.tensor(w0, requires_grad=True)
    b = lib.tensor(b0, requires_grad=True)
    X, Y = lib.tensor(X), lib.tensor(Y)

    def loss():
        return ((lib.tanh(X @ w + b) - Y) ** 2).mean()
    return [w, b], loss


def _run(lib, make, steps, closure, opt=None, params=None):
    p, loss = _problem(lib)
    if params is not None:
        p = params
    opt = opt or make(p)
    traj = []
    for _ in range(steps):
        def c():
            opt.zero_grad()
            v = loss()
            v.backward()
            return v
        if closure:
            opt.step(c)
        else:
            c()
            opt.step()
        traj.append(p[0].detach().numpy().copy())
    return opt, p, traj


OPTIMIZERS = [
    ("RMSprop", {}), ("RMSprop", {"centered": True, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"maximize": True, "alpha": 0.9, "lr": 1e-3}), ("Adagrad", {}),
    ("Adagrad", {"lr_decay": 0.1, "weight_decay": 0.1, "initial_accumulator_value": 0.3}),
    ("Adadelta", {}), ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("LBFGS", {}), ("LBFGS", {"lr": 0.5, "max_iter": 5, "history_size": 3}),
    ("LBFGS", {"line_search_fn": "strong_wolfe"}),
    ("LBFGS", {"line_search_fn": "strong_wolfe", "lr": 0.8, "history_size": 4}),
]


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=[f"{n}-{k}" for n, k in OPTIMIZERS])
def test_trajectory_and_state_match_torch(name, kw):
    closure = name == "LBFGS"
    # Each LBFGS step is up to 20 iterations on a problem whose weights grow
    # large: rounding differences (an ulp in a sum) grow with every step, so
    # two steps are compared, closely.
    steps = 2 if closure else 8
    tol = 1e-7 if closure else 1e-12
    to, _, tt = _run(torch, lambda p: getattr(torch.optim, name)(p, **kw), steps, closure)
    io, ip, it = _run(ignis, lambda p: getattr(ignis.optim, name)(p, **kw), steps, closure)
    for a, b in zip(it, tt):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    if closure:
        assert to.state[to.param_groups[0]["params"][0]]["func_evals"] == \
            io.state[ip[0]]["func_evals"]
    st, si = to.state_dict(), io.state_dict()
    assert st["param_groups"][0].keys() == si["param_groups"][0].keys()
    assert st["state"].keys() == si["state"].keys()
    for k in st["state"]:
        assert st["state"][k].keys() == si["state"][k].keys()
    if closure:
        return
    # torch's state loads into a fresh ignis optimizer, which then continues as torch does.
    fresh, fp, _ = _run(ignis, lambda p: getattr(ignis.optim, name)(p, **kw), 0, False)
    with ignis.no_grad():
        for q, v in zip(fp, ip):
            q.copy_(v)
    fresh.load_state_dict(st)
    _, _, more_i = _run(ignis, None, 3, False, opt=fresh, params=fp)
    _, _, more_t = _run(torch, None, 3, False, opt=to, params=to.param_groups[0]["params"])
    for a, b in zip(more_i, more_t):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_optimizer_argument_errors():
    p = [ignis.zeros(2, requires_grad=True)]
    for cls, kw in [("RMSprop", {"lr": -1}), ("RMSprop", {"alpha": -1}), ("Adagrad", {"eps": -1}),
                    ("Adadelta", {"rho": 1.5}), ("LBFGS", {"lr": -1})]:
        with pytest.raises(ValueError):
            getattr(ignis.optim, cls)(p, **kw)
    with pytest.raises(TypeError):
        ignis.optim.LBFGS(p).step()  # the closure is required, as in torch
    with pytest.raises(RuntimeError, match="strong_wolfe"):
        ignis.optim.LBFGS(p, line_search_fn="backtracking")


def _lr_trajectory(lib, make, n=25, metrics=None, opt="SGD", okw=None):
    okw = okw or {"lr": 0.1, "momentum": 0.9}
    p = lib.zeros(2, requires_grad=True)
    o = getattr(lib.optim, opt)([p], **okw)
    s = make(lib.optim.lr_scheduler, o)
    out = []
    for e in range(n):
        o.step()
        s.step(metrics[e]) if metrics is not None else s.step()
        g = o.param_groups[0]
        out.append((s.get_last_lr()[0], g.get("momentum"), g.get("betas")))
    return out, s


SCHEDULERS = {
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, [3, 7, 7, 12], 0.5),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, 0.9),
    "LinearLR": lambda m, o: m.LinearLR(o, 0.2, 0.9, 6),
    "ConstantLR": lambda m, o: m.ConstantLR(o, 0.5, 4),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.95),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, 2, 0.01),
    "CosineAnnealingWarmRestarts-1": lambda m, o: m.CosineAnnealingWarmRestarts(o, 4),
    "OneCycleLR": lambda m, o: m.OneCycleLR(o, 1.0, total_steps=30),
    "OneCycleLR-3phase": lambda m, o: m.OneCycleLR(o, [1.0], epochs=3, steps_per_epoch=10,
                                                   three_phase=True, anneal_strategy="linear"),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, 0.1, 1.0, 4), m.ExponentialLR(o, 0.8)], [5]),
    "SequentialLR-3": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, 0.5, 3), m.StepLR(o, 2, 0.5), m.CosineAnnealingLR(o, 5)], [4, 9]),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, 7, 2.0),
    "PolynomialLR-default": lambda m, o: m.PolynomialLR(o),
    "CyclicLR": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, 0.01, [0.1], 3, 5, "triangular2",
                                                    base_momentum=0.7, max_momentum=0.95),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, 0.01, 0.1, 3, mode="exp_range",
                                                  gamma=0.9),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(o, 0.01, 0.1, 2, 4, scale_fn=lambda x: 0.8 ** x,
                                                 scale_mode="iterations", cycle_momentum=False),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, 0.3, 4), m.ExponentialLR(o, 0.9), m.PolynomialLR(o, 12, 0.5)]),
    "ChainedScheduler-optimizer": lambda m, o: m.ChainedScheduler(
        [m.MultiStepLR(o, [2, 5], 0.5), m.LinearLR(o, 0.5, 1.0, 6)], optimizer=o),
    "SequentialLR-polynomial": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, 0.1, 1.0, 3), m.PolynomialLR(o, 10, 1.5)], [4]),
}


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_scheduler_matches_torch(name):
    got, _ = _lr_trajectory(ignis, SCHEDULERS[name])
    want, _ = _lr_trajectory(torch, SCHEDULERS[name])
    for g, w in zip(got, want):
        assert g[0] == pytest.approx(w[0], rel=1e-12, abs=1e-15)
        assert g[1] == pytest.approx(w[1], rel=1e-12)


def test_one_cycle_cycles_adam_beta1():
    make = lambda m, o: m.OneCycleLR(o, 0.01, total_steps=30)  # noqa: E731
    got, _ = _lr_trajectory(ignis, make, opt="Adam", okw={"lr": 0.1})
    want, _ = _lr_trajectory(torch, make, opt="Adam", okw={"lr": 0.1})
    for g, w in zip(got, want):
        assert g[0] == pytest.approx(w[0]) and g[2] == pytest.approx(w[2])


@pytest.mark.parametrize("kw", [{}, {"mode": "max", "factor": 0.5, "patience": 2, "cooldown": 1,
                                      "threshold_mode": "abs", "min_lr": 0.02},
                                {"patience": 1, "threshold": 0.1}])
def test_reduce_lr_on_plateau_matches_torch(kw):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.94, 0.96, 0.97, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6] * 2
    make = lambda m, o: m.ReduceLROnPlateau(o, **kw)  # noqa: E731
    got, si = _lr_trajectory(ignis, make, 30, metrics)
    want, st = _lr_trajectory(torch, make, 30, metrics)
    assert [g[0] for g in got] == [w[0] for w in want]
    assert {k: v for k, v in si.state_dict().items() if k != "_last_lr"}.keys() <= \
        st.state_dict().keys()


def test_scheduler_argument_errors():
    o = ignis.optim.SGD([ignis.zeros(1, requires_grad=True)], lr=0.1)
    S = ignis.optim.lr_scheduler
    for bad in (lambda: S.OneCycleLR(o, 1.0), lambda: S.CosineAnnealingWarmRestarts(o, 0),
                lambda: S.ReduceLROnPlateau(o, factor=1.5), lambda: S.LinearLR(o, 0.0),
                lambda: S.SequentialLR(o, [S.ExponentialLR(o, 0.9)], [3])):
        with pytest.raises(ValueError):
            bad()


# --- Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor ------------------------------------------

NEW_OPTIMIZERS = [
    ("Adamax", {}), ("Adamax", {"lr": 0.05, "betas": (0.8, 0.9), "weight_decay": 0.1,
                                "maximize": True}),
    ("NAdam", {}), ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True,
               "maximize": True}),
    ("RAdam", {}), ("RAdam", {"lr": 0.05, "betas": (0.9, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.6), "weight_decay": 0.1,
               "decoupled_weight_decay": True}),
    ("Rprop", {}), ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08),
                              "maximize": True}),
    ("ASGD", {}), ("ASGD", {"lr": 0.1, "lambd": 0.1, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
    ("Adafactor", {}), ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-3, 1e-2),
                                      "d": 1.5, "weight_decay": 0.1, "maximize": True}),
]

# Steps long enough to cross RAdam's rho_t > 5 switch (step 6 with beta2=0.9)
# and ASGD's t0 (averaging starts), with Rprop's signs flipping.
NEW_STEPS = 8


def _state_layout(opt):
    sd = opt.state_dict()
    return ({k: v for k, v in sd["param_groups"][0].items()},
            {i: {k: tuple(v.shape) for k, v in s.items()} for i, s in sd["state"].items()})


@pytest.mark.parametrize("name,kw", NEW_OPTIMIZERS, ids=[f"{n}-{k}" for n, k in NEW_OPTIMIZERS])
def test_new_optimizer_matches_torch(name, kw):
    to, tp, tt = _run(torch, lambda p: getattr(torch.optim, name)(p, **kw), NEW_STEPS, False)
    io, ip, it = _run(ignis, lambda p: getattr(ignis.optim, name)(p, **kw), NEW_STEPS, False)
    for a, b in zip(it, tt):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(ip[1].detach().numpy(), tp[1].detach().numpy(), rtol=1e-9,
                               atol=1e-10)
    # Same group hyperparameters and the same state entries with the same shapes.
    (tg, ts), (ig, is_) = _state_layout(to), _state_layout(io)
    assert tg == ig
    assert ts == is_
    for k, s in to.state_dict()["state"].items():
        for key, v in s.items():
            np.testing.assert_allclose(io.state_dict()["state"][k][key].numpy(),
                                       v.detach().numpy(), rtol=1e-6, atol=1e-9)

    # ignis's state_dict (deep-copied, as after a save and load) and torch's,
    # each loaded into a fresh ignis optimizer, continue as torch does.
    import copy
    resumed = []
    for saved in (copy.deepcopy(io.state_dict()), to.state_dict()):
        fresh, fp, _ = _run(ignis, lambda p: getattr(ignis.optim, name)(p, **kw), 0, False)
        with ignis.no_grad():
            for q, v in zip(fp, ip):
                q.copy_(v)
        fresh.load_state_dict(saved)
        resumed.append(_run(ignis, None, 3, False, opt=fresh, params=fp)[2])
    _, _, more_t = _run(torch, None, 3, False, opt=to, params=tp)
    for more_i in resumed:
        for a, b in zip(more_i, more_t):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", ["Adamax", "NAdam", "RAdam", "Adafactor"])
def test_new_optimizer_float32_and_3d(name):
    """float32 parameters (Adafactor's default eps1 is the dtype's eps) and a
    3-d parameter (Adafactor factors over the last two dims)."""
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((2, 3, 4)).astype(np.float32)
    grads = [rng.standard_normal((2, 3, 4)).astype(np.float32) for _ in range(5)]
    out = []
    for lib in (torch, ignis):
        w = lib.tensor(w0, requires_grad=True)
        opt = getattr(lib.optim, name)([w], lr=0.05)
        for g in grads:
            w.grad = lib.tensor(g)
            opt.step()
        out.append((w.detach().numpy(),
                    {k: tuple(v.shape) for k, v in opt.state_dict()["state"][0].items()}))
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=1e-5, atol=1e-6)
    assert out[1][1] == out[0][1]


def test_new_optimizer_argument_errors():
    p = [ignis.zeros(2, requires_grad=True)]
    for cls, kw in [("Adamax", {"lr": -1}), ("Adamax", {"betas": (1.0, 0.9)}),
                    ("NAdam", {"momentum_decay": -1}), ("RAdam", {"eps": -1}),
                    ("Rprop", {"etas": (1.5, 1.2)}), ("ASGD", {"weight_decay": -1}),
                    ("Adafactor", {"beta2_decay": 0.5}), ("Adafactor", {"d": 0.5})]:
        with pytest.raises(ValueError):
            getattr(ignis.optim, cls)(p, **kw)
        with pytest.raises(ValueError):
            getattr(torch.optim, cls)([torch.zeros(2, requires_grad=True)], **kw)



@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr_cycles_adam_beta1_and_resumes(mode):
    make = lambda m, o: m.CyclicLR(o, [0.001], 0.01, 3, 2, mode, gamma=0.95,  # noqa: E731
                                   base_momentum=0.85, max_momentum=0.95)
    got, si = _lr_trajectory(ignis, make, opt="Adam", okw={"lr": 0.1})
    want, st = _lr_trajectory(torch, make, opt="Adam", okw={"lr": 0.1})
    for g, w in zip(got, want):
        assert g[0] == pytest.approx(w[0], rel=1e-12) and g[2] == pytest.approx(w[2], rel=1e-12)
    # The saved state resumes in a fresh scheduler (the groups keep their own lr/betas).
    sd = si.state_dict()
    assert sd.keys() <= st.state_dict().keys() | {"_is_initial"}
    o2 = si.optimizer
    s2 = make(ignis.optim.lr_scheduler, o2)
    s2.load_state_dict(sd)
    for g in o2.param_groups:
        g["lr"], g["betas"] = si.get_last_lr()[0], got[-1][2]
    st_opt = st.optimizer
    for _ in range(7):
        s2.step()
        st.step()
        assert s2.get_last_lr()[0] == pytest.approx(st.get_last_lr()[0], rel=1e-12)
        assert o2.param_groups[0]["betas"] == pytest.approx(st_opt.param_groups[0]["betas"])


def test_new_scheduler_argument_errors():
    o = ignis.optim.SGD([ignis.zeros(1, requires_grad=True)], lr=0.1)
    S = ignis.optim.lr_scheduler
    with pytest.raises(ValueError, match="mode is invalid"):
        S.CyclicLR(o, 0.1, 1.0, mode="square")
    with pytest.raises(ValueError, match="momentum"):
        S.CyclicLR(ignis.optim.Adagrad([ignis.zeros(1, requires_grad=True)]), 0.1, 1.0)
    with pytest.raises(ValueError, match="length"):
        S.CyclicLR(o, [0.1, 0.2], 1.0)
    with pytest.raises(ValueError, match="at least one"):
        S.ChainedScheduler([])
    with pytest.raises(ValueError, match="ReduceLROnPlateau"):
        S.ChainedScheduler([S.ExponentialLR(o, 0.9), S.ReduceLROnPlateau(o)])
    other = ignis.optim.SGD([ignis.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="same optimizer"):
        S.ChainedScheduler([S.ExponentialLR(o, 0.9), S.ExponentialLR(other, 0.9)])


def test_every_torch_scheduler_exists():
    S = torch.optim.lr_scheduler
    names = {n for n in dir(S) if isinstance(getattr(S, n), type)
             and issubclass(getattr(S, n), S.LRScheduler) or n == "ReduceLROnPlateau"}
    assert "CyclicLR" in names and "ReduceLROnPlateau" in names
    assert names - set(dir(ignis.optim.lr_scheduler)) == set()


# --- swa_utils ----------------------------------------------------------------------------

def _bn_model(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def _set_params(lib, model, rng):
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))


AVERAGINGS = {
    "swa": lambda su: {},
    "ema_avg_fn": lambda su: {"avg_fn": su.get_ema_avg_fn(0.9)},
    "swa_avg_fn": lambda su: {"avg_fn": su.get_swa_avg_fn()},
    "ema_multi": lambda su: {"multi_avg_fn": su.get_ema_multi_avg_fn(0.8)},
    "swa_multi": lambda su: {"multi_avg_fn": su.get_swa_multi_avg_fn()},
    "ema_multi_buffers": lambda su: {"multi_avg_fn": su.get_ema_multi_avg_fn(0.8),
                                     "use_buffers": True},
    "swa_buffers": lambda su: {"use_buffers": True},
}


@pytest.mark.parametrize("how", list(AVERAGINGS))
def test_averaged_model_matches_torch(how):
    results = []
    for lib in (torch, ignis):
        rng = np.random.default_rng(3)
        model = _bn_model(lib)
        _set_params(lib, model, rng)
        avg = lib.optim.swa_utils.AveragedModel(model, **AVERAGINGS[how](lib.optim.swa_utils))
        for _ in range(4):
            _set_params(lib, model, rng)
            model.train()
            model(lib.tensor(rng.standard_normal((6, 3)).astype(np.float32)))  # moves BN stats
            avg.update_parameters(model)
        x = lib.tensor(rng.standard_normal((5, 3)).astype(np.float32))
        avg.eval()
        results.append(({k: v.detach().numpy().copy() for k, v in avg.state_dict().items()},
                        avg(x).detach().numpy()))
    (ts, ty), (is_, iy) = results
    assert list(ts) == list(is_)  # n_averaged and module.* in torch's order
    for k in ts:
        np.testing.assert_allclose(is_[k], ts[k], rtol=1e-6, atol=1e-6, err_msg=k)
    np.testing.assert_allclose(iy, ty, rtol=1e-5, atol=1e-6)


def test_averaged_model_rejects_both_fns():
    su = ignis.optim.swa_utils
    with pytest.raises(AssertionError):
        su.AveragedModel(ignis.nn.Linear(2, 2), avg_fn=su.get_swa_avg_fn(),
                         multi_avg_fn=su.get_swa_multi_avg_fn())


def test_update_bn_matches_torch():
    out = []
    for lib in (torch, ignis):
        rng = np.random.default_rng(4)
        model = _bn_model(lib)
        _set_params(lib, model, rng)
        model.eval()
        xs = [lib.tensor(rng.standard_normal((7, 3)).astype(np.float32)) for _ in range(3)]
        loader = [xs[0], (xs[1], lib.zeros(7)), [xs[2], lib.zeros(7)]]
        lib.optim.swa_utils.update_bn(loader, model)
        bn = model[1]
        out.append((bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                    int(bn.num_batches_tracked), bn.momentum, model.training))
    for a, b in zip(out[1][:2], out[0][:2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert out[1][2:] == out[0][2:]


@pytest.mark.parametrize("kw", [{"swa_lr": 0.05}, {"swa_lr": [0.5], "anneal_epochs": 4,
                                                  "anneal_strategy": "linear"},
                                {"swa_lr": 0.02, "anneal_epochs": 0}])
def test_swalr_matches_torch(kw):
    seqs = []
    for lib in (torch, ignis):
        p = lib.zeros(2, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.3)
        sched = lib.optim.swa_utils.SWALR(opt, **kw)
        seq = [sched.get_last_lr()[0]]
        for _ in range(14):
            opt.step()
            sched.step()
            seq.append(sched.get_last_lr()[0])
        seqs.append(seq)
    assert seqs[1] == pytest.approx(seqs[0], rel=1e-12, abs=1e-15)
    with pytest.raises(ValueError):
        ignis.optim.swa_utils.SWALR(ignis.optim.SGD([ignis.zeros(1, requires_grad=True)]), 0.1,
                                    anneal_strategy="exp")
