"""The optimizers' foreach and fused steps (ops/foreach.cpp,
kernels/cpu/fused_optimizer.cpp) on the CPU: the `_foreach_` ops against
torch's, and Adam/AdamW/SGD with foreach=True and fused=True against the
for-loop step and against torch's optimizers, for several steps with weight
decay, amsgrad, maximize, momentum and Nesterov. The same steps on CUDA are
in test_cuda_train.py."""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as nn
import ignis.optim as optim

torch = pytest.importorskip("torch")

SHAPES = [(4, 3), (5,), (), (70000,)]  # the last spans two of the CUDA kernel's chunks


def arrays(seed, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def run(make, impl, steps=5, dtype="float32", lr_tensor=False, torch_impl=None):
    """Parameters after `steps` steps of ignis's optimizer `make` with the
    implementation `impl` ({} for-loop, foreach, fused), and of torch's
    (`torch_impl`, by default its for-loop)."""
    params = [nn.Parameter(ignis.from_numpy(a.copy()).to(getattr(ignis, dtype)))
              for a in arrays(0)]
    tparams = [torch.nn.Parameter(torch.from_numpy(a.copy()).to(getattr(torch, dtype)))
               for a in arrays(0)]
    name, kwargs = make
    kw = dict(kwargs)
    if lr_tensor:
        kw["lr"] = ignis.tensor(kw["lr"])
    opt = getattr(optim, name)(params, **kw, **impl)
    topt = getattr(torch.optim, name)(tparams, **kwargs, **(torch_impl or {"foreach": False}))
    for step in range(steps):
        for p, tp, g in zip(params, tparams, arrays(100 + step)):
            p.grad = ignis.from_numpy(g.copy()).to(p.dtype)
            tp.grad = torch.from_numpy(g).to(tp.dtype)
        opt.step()
        topt.step()
    return params, tparams, opt


def as_np(t):
    """An ignis or torch tensor as a NumPy array (16-bit floats as float32)."""
    t = t.detach()
    if str(t.dtype).split(".")[-1] in ("bfloat16", "float16"):
        t = t.float()
    return t.numpy()


CONFIGS = [
    ("Adam", {"lr": 1e-2}),
    ("Adam", {"lr": 1e-2, "weight_decay": 0.1}),
    ("Adam", {"lr": 1e-2, "amsgrad": True, "weight_decay": 0.05}),
    ("Adam", {"lr": 1e-2, "maximize": True, "betas": (0.8, 0.9)}),
    ("AdamW", {"lr": 1e-2, "weight_decay": 0.1, "betas": (0.9, 0.95)}),
    ("AdamW", {"lr": 1e-2, "amsgrad": True, "maximize": True}),
    ("SGD", {"lr": 1e-1}),
    ("SGD", {"lr": 1e-2, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("SGD", {"lr": 1e-2, "momentum": 0.9, "dampening": 0.2, "maximize": True}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]


@pytest.mark.parametrize("make", CONFIGS, ids=IDS)
@pytest.mark.parametrize("impl", [{"foreach": True}, {"fused": True}], ids=["foreach", "fused"])
def test_foreach_and_fused_steps_match_the_for_loop_and_torch(make, impl):
    loop, tparams, _ = run(make, {"foreach": False})
    got, _, _ = run(make, impl)
    for a, b, t in zip(got, loop, tparams):
        if "foreach" in impl:  # the same ops on lists: the same bits
            np.testing.assert_array_equal(as_np(a), as_np(b))
        else:  # one formula in float: within rounding of the ops' order
            np.testing.assert_allclose(as_np(a), as_np(b), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(as_np(a), as_np(t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [CONFIGS[2], CONFIGS[4], CONFIGS[7]], ids=[IDS[2], IDS[4], IDS[7]])
def test_fused_steps_with_a_tensor_learning_rate(make):
    got, tparams, _ = run(make, {"fused": True}, lr_tensor=True)
    for a, t in zip(got, tparams):
        np.testing.assert_allclose(as_np(a), as_np(t), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float64"])
def test_fused_adamw_in_other_dtypes_matches_torch(dtype):
    """Against torch's fused step, which also computes in float (its for-loop
    step rounds each op to float16, where eps=1e-8 is 0)."""
    got, tparams, _ = run(CONFIGS[4], {"fused": True}, dtype=dtype, steps=3,
                          torch_impl={"fused": True})
    tol = {"bfloat16": 2e-2, "float16": 2e-3, "float64": 1e-12}[dtype]
    for a, t in zip(got, tparams):
        assert a.dtype == getattr(ignis, dtype)
        np.testing.assert_allclose(as_np(a), as_np(t), rtol=tol, atol=tol)


def test_state_and_step_counts():
    _, _, opt = run(CONFIGS[2], {"fused": True}, steps=3)
    _, _, loop = run(CONFIGS[2], {"foreach": False}, steps=3)
    for (p, s), (_, s2) in zip(opt.state.items(), loop.state.items()):
        assert s["step"].item() == s2["step"].item() == 3.0
        assert s["step"].dtype == ignis.float32
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            np.testing.assert_allclose(as_np(s[key]), as_np(s2[key]), rtol=1e-5, atol=1e-7)


def test_default_implementation_on_the_cpu_is_the_fused_step_in_float32_and_float64():
    # Note [The fused step by default on the CPU]
    def how(dtype, **group):
        p = nn.Parameter(ignis.ones(3, dtype=dtype))
        return optim.optimizer._implementation(group, [p], "Adam")
    assert how(ignis.float32) == how(ignis.float64) == "fused"
    assert how(ignis.float16) == how(ignis.bfloat16) == "for-loop"
    assert how(ignis.float32, foreach=False) == "for-loop"
    assert how(ignis.float32, fused=False) == "for-loop"
    assert how(ignis.float32, differentiable=True) == "for-loop"
    assert how(ignis.float32, foreach=True) == "foreach"
    assert how(ignis.float16, fused=True) == "fused"
    # And it is what a default optimizer runs: its parameters match the
    # explicit fused step's bit for bit, and the for-loop's to rounding.
    for make in (CONFIGS[4], CONFIGS[-2]):  # AdamW with weight decay; SGD with Nesterov
        default, _, _ = run(make, {})
        fused, _, _ = run(make, {"fused": True})
        loop, _, _ = run(make, {"foreach": False})
        for a, b, c in zip(default, fused, loop):
            np.testing.assert_array_equal(as_np(a), as_np(b))
            np.testing.assert_allclose(as_np(a), as_np(c), rtol=1e-5, atol=1e-6)


def test_flag_errors_match_torch():
    p = [nn.Parameter(ignis.ones(2))]
    for name in ("Adam", "AdamW", "SGD"):
        with pytest.raises(RuntimeError, match="cannot be `True` together"):
            getattr(optim, name)(p, lr=0.1, foreach=True, fused=True)
        with pytest.raises(RuntimeError, match="does not support `differentiable`"):
            getattr(optim, name)(p, lr=0.1, fused=True, differentiable=True)


# ---- the _foreach_ ops ------------------------------------------------------------------

def lists(seed, n=3, kind="any"):
    arrs = arrays(seed, [(4, 3), (5,), ()][:n])
    if kind == "pos":
        arrs = [np.asarray(np.abs(a) + 0.1, dtype=np.float32) for a in arrs]
    return [ignis.from_numpy(a.copy()) for a in arrs], [torch.from_numpy(a.copy()) for a in arrs]


def assert_lists_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call", [
    ("_foreach_add", lambda a, b, c: (a, 2.5), {}),
    ("_foreach_add", lambda a, b, c: (a, b), {"alpha": -0.5}),
    ("_foreach_add", lambda a, b, c: (a, [1.0, 2.0, 3.0]), {}),
    ("_foreach_sub", lambda a, b, c: (a, b), {"alpha": 2}),
    ("_foreach_mul", lambda a, b, c: (a, 0.9), {}),
    ("_foreach_mul", lambda a, b, c: (a, b), {}),
    ("_foreach_div", lambda a, b, c: (a, [2.0, 4.0, 0.5]), {}),
    ("_foreach_maximum", lambda a, b, c: (a, b), {}),
    ("_foreach_lerp", lambda a, b, c: (a, b, 0.1), {}),
    ("_foreach_addcmul", lambda a, b, c: (a, b, c), {"value": 0.3}),
    ("_foreach_addcdiv", lambda a, b, c: (a, b, c, [0.5, -1.0, 2.0]), {}),
    ("_foreach_sqrt", lambda a, b, c: (a,), {}),
    ("_foreach_neg", lambda a, b, c: (a,), {}),
], ids=lambda c: c[0] if isinstance(c, str) else None)
def test_foreach_ops_match_torch_functional_and_in_place(call):
    name, args_of, kw = call
    (ia, ta), (ib, tb), (ic, tc) = lists(1, kind="pos"), lists(2), lists(3, kind="pos")
    iargs, targs = args_of(ia, ib, ic), args_of(ta, tb, tc)
    got = getattr(ignis, name)(*iargs, **kw)
    want = getattr(torch, name)(*targs, **kw)
    assert_lists_equal(got, want)
    assert all(x is not y for x, y in zip(got, ia))  # functional: new tensors
    before = [t._version for t in ia]
    assert getattr(ignis, name + "_")(*iargs, **kw) is ia  # the same list, as torch returns
    assert getattr(torch, name + "_")(*targs, **kw) is ta
    assert_lists_equal(ia, ta)
    assert all(t._version > v for t, v in zip(ia, before))


def test_foreach_zero_and_copy():
    (ia, _), (ib, tb) = lists(4), lists(5)
    ignis._foreach_copy_(ia, ib)
    assert_lists_equal(ia, tb)
    ignis._foreach_zero_(ia)
    assert all((t == 0).all().item() for t in ia)


def test_foreach_ops_record_gradients_through_their_parts():
    xs = [ignis.ones(2, requires_grad=True), ignis.ones(3, requires_grad=True)]
    ys = ignis._foreach_mul(xs, [2.0, 3.0])
    (ys[0].sum() + ys[1].sum()).backward()
    assert xs[0].grad.tolist() == [2.0, 2.0] and xs[1].grad.tolist() == [3.0, 3.0, 3.0]


def test_foreach_and_fused_errors():
    (ia, _), (ib, _) = lists(6), lists(7, n=2)
    with pytest.raises(RuntimeError, match="same number of tensors, got 3 and 2"):
        ignis._foreach_add(ia, ib)
    with pytest.raises(RuntimeError, match="same number of elements as scalar list"):
        ignis._foreach_mul_(ia, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="scalar tensor expected to be 0 dim"):
        ignis.ops._foreach_mul.Tensor(ia, ignis.ones(1))
    np.testing.assert_allclose(ignis._foreach_mul(ia, ignis.tensor(2.0))[0].numpy(),
                               2 * ia[0].numpy())
    p = [ignis.ones(3)]
    g = [ignis.ones(4)]
    z = [ignis.zeros(3)]
    st = [ignis.tensor(1.0)]
    kw = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0, eps=1e-8, amsgrad=False,
              maximize=False)
    with pytest.raises(RuntimeError, match=r"grads\[0\] must be a tensor of its parameter.s shape"):
        ignis._fused_adam_(p, g, z, z, [], st, **kw)
    with pytest.raises(RuntimeError, match="expected as many state_steps as parameters"):
        ignis._fused_adamw_(p, [ignis.ones(3)], z, [ignis.zeros(3)], [], [], **kw)
    with pytest.raises(RuntimeError, match="one-element float32"):
        ignis._fused_adam_(p, [ignis.ones(3)], z, [ignis.zeros(3)], [], [ignis.tensor(1)], **kw)
    with pytest.raises(RuntimeError, match="floating point parameters"):
        ignis._fused_sgd_([ignis.ones(3, dtype=ignis.int64)], [ignis.ones(3, dtype=ignis.int64)],
                          [], weight_decay=0.0, momentum=0.0, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)


def test_fused_step_with_a_gradient_scaler():
    """grad_scale divides the gradients (stored back unscaled, as torch's
    kernel stores them); found_inf != 0 skips the step."""
    for opt_name in ("_fused_adam_", "_fused_sgd_"):
        res = {}
        for lib in (ignis, torch):
            p = [lib.ones(4) * 0.5]
            g = [lib.full((4,), 8.0)]
            if opt_name == "_fused_adam_":
                m, v = [lib.zeros(4)], [lib.zeros(4)]
                args = (p, g, m, v, [], [lib.tensor(1.0)])
                kw = dict(lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.01, eps=1e-8,
                          amsgrad=False, maximize=False)
            else:
                args = (p, g, [lib.zeros(4)])
                kw = dict(weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=True)
            getattr(lib, opt_name)(*args, **kw, grad_scale=lib.tensor(4.0))
            before = p[0].clone()
            getattr(lib, opt_name)(*args, **kw, grad_scale=lib.tensor(4.0),
                                   found_inf=lib.tensor(1.0))
            assert (p[0] == before).all().item()
            res[lib.__name__] = (p[0].numpy().copy(), g[0].numpy().copy())
        np.testing.assert_allclose(res["ignis"][0], res["torch"][0], rtol=1e-6)
        np.testing.assert_allclose(res["ignis"][1], res["torch"][1], rtol=1e-6)
