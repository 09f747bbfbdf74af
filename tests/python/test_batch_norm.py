"""Batch, group and instance normalisation (ops/normalization.cpp,
kernels/cpu/batch_norm, nn/_normalization.py, nn/modules/normalization.py)
against torch: F.batch_norm in training (batch statistics, biased variance
for the output, unbiased for the running variance, momentum, cumulative
average with momentum=None, num_batches_tracked) and evaluation (running
statistics), with and without affine parameters and running statistics;
values, running statistics and the gradients of input, weight and bias.
GroupNorm, InstanceNorm1d/2d likewise. Bad input raises torch's type.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")

TOL = {"float32": (2e-5, 2e-5), "float64": (1e-10, 1e-11)}


def _t(mod, a, dtype, grad=False):
    t = mod.from_numpy(np.array(a, copy=True)).to(getattr(mod, dtype))
    if grad:
        t.requires_grad_()
    return t


def _np(t):
    if isinstance(t, ignis.Tensor):
        return t.detach().to(ignis.float64).numpy()
    return t.detach().to(torch.float64).numpy()


def _close(a, b, dtype, what):
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, err_msg=what)


def _copy(mi, mt):
    for (n, pi), (_, pt) in zip(mi.named_parameters(), mt.named_parameters()):
        with torch.no_grad():
            pt.copy_(torch.from_numpy(pi.detach().numpy().copy()))
    for (n, bi), (_, bt) in zip(mi.named_buffers(), mt.named_buffers()):
        with torch.no_grad():
            bt.copy_(torch.from_numpy(bi.detach().numpy().copy()))


def _run_module(name, args, kw, shape, dtype, steps=3, train=True):
    mi = getattr(ignis.nn, name)(*args, **kw).to(getattr(ignis, dtype))
    mt = getattr(torch.nn, name)(*args, **kw).to(getattr(torch, dtype))
    assert repr(mi) == repr(mt)
    rng = np.random.default_rng(0)
    if mi.weight is not None:  # not the default ones/zeros, so that they matter
        with ignis.no_grad():
            mi.weight.copy_(ignis.from_numpy(rng.uniform(0.5, 1.5, mi.weight.shape)))
            mi.bias.copy_(ignis.from_numpy(rng.standard_normal(mi.bias.shape)))
    _copy(mi, mt)
    mi.train(train)
    mt.train(train)
    for step in range(steps):
        a = rng.standard_normal(shape) * 2 + 0.5
        xi, xt = _t(ignis, a, dtype, True), _t(torch, a, dtype, True)
        yi, yt = mi(xi), mt(xt)
        _close(yi, yt, dtype, f"forward, step {step}")
        g = rng.standard_normal(shape)
        yi.backward(_t(ignis, g, dtype))
        yt.backward(_t(torch, g, dtype))
        _close(xi.grad, xt.grad, dtype, f"grad of input, step {step}")
        for (n, pi), (_, pt) in zip(mi.named_parameters(), mt.named_parameters()):
            _close(pi.grad, pt.grad, dtype, f"grad of {n}, step {step}")
        for (n, bi), (_, bt) in zip(mi.named_buffers(), mt.named_buffers()):
            if bi.dtype == ignis.int64:
                assert int(bi) == int(bt), n
            else:
                _close(bi, bt, dtype, f"buffer {n}, step {step}")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", [{}, {"momentum": None}, {"momentum": 0.3, "affine": False},
                                {"track_running_stats": False}, {"eps": 1e-3}], ids=str)
def test_batch_norm2d_training(kw, dtype):
    _run_module("BatchNorm2d", (3,), kw, (4, 3, 5, 6), dtype)


@pytest.mark.parametrize("shape", [(8, 5), (4, 5, 7)], ids=str)
def test_batch_norm1d_training_and_eval(shape):
    _run_module("BatchNorm1d", (5,), {}, shape, "float64")
    _run_module("BatchNorm1d", (5,), {}, shape, "float64", train=False)


def test_batch_norm2d_eval_uses_running_stats():
    _run_module("BatchNorm2d", (3,), {}, (4, 3, 5, 6), "float64", train=False)


def test_batch_norm_train_then_eval_matches_torch():
    mi, mt = ignis.nn.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    rng = np.random.default_rng(5)
    for _ in range(4):
        a = rng.standard_normal((3, 4, 5, 5)).astype(np.float32) * 3 + 1
        mi(ignis.from_numpy(a))
        mt(torch.from_numpy(a))
    mi.eval()
    mt.eval()
    a = rng.standard_normal((3, 4, 5, 5)).astype(np.float32)
    _close(mi(ignis.from_numpy(a)), mt(torch.from_numpy(a)), "float32", "eval")
    assert int(mi.num_batches_tracked) == 4


def test_sync_batch_norm_without_a_process_group_and_its_conversion():
    # Without torch.distributed initialized, torch's SyncBatchNorm is batch norm
    # over the local batch (any rank >= 2); convert_sync_batchnorm swaps the
    # BatchNorm layers, sharing their parameters and statistics.
    a = np.random.default_rng(0).standard_normal((4, 3, 5))
    outs = []
    for lib in (ignis, torch):
        lib.manual_seed(0)
        net = lib.nn.Sequential(lib.nn.Linear(5, 5), lib.nn.BatchNorm1d(3),
                                lib.nn.Sequential(lib.nn.BatchNorm1d(3, affine=False)))
        conv = lib.nn.SyncBatchNorm.convert_sync_batchnorm(net)
        assert isinstance(conv[1], lib.nn.SyncBatchNorm) and conv[1].weight is net[1].weight
        assert isinstance(conv[2][0], lib.nn.SyncBatchNorm) and conv[2][0].weight is None
        with pytest.raises(ValueError, match="expected at least 2D input"):
            conv[1](lib.ones(3))
        m = lib.nn.SyncBatchNorm(3, momentum=None)
        x = _t(lib, a, "float32", grad=True)
        y = m(x)
        (y * y).sum().backward()
        outs.append((repr(conv), list(conv.state_dict()), _np(y), _np(x.grad), _np(m.running_var)))
    assert outs[0][:2] == outs[1][:2]
    for i, t in zip(outs[0][2:], outs[1][2:]):
        np.testing.assert_allclose(i, t, rtol=2e-5, atol=2e-5)


def test_functional_batch_norm_without_running_stats():
    a = np.random.default_rng(1).standard_normal((4, 3, 5))
    yi = IF.batch_norm(ignis.from_numpy(a), None, None, training=True)
    yt = torch.nn.functional.batch_norm(torch.from_numpy(a), None, None, training=True)
    _close(yi, yt, "float64", "forward")


def test_batch_norm_double_backward_matches_torch():
    a = np.random.default_rng(2).standard_normal((4, 3, 5))
    w = np.random.default_rng(3).uniform(0.5, 1.5, 3)
    outs = []
    for mod in (ignis, torch):
        x = _t(mod, a, "float64", True)
        wt = _t(mod, w, "float64", True)
        F = IF if mod is ignis else torch.nn.functional
        y = F.batch_norm(x, None, None, wt, None, training=True)
        (g,) = mod.autograd.grad((y * y * y).sum(), x, create_graph=True)
        g.sum().backward()
        outs.append((g, x.grad, wt.grad))
    for a_, b_ in zip(*outs):
        _close(a_, b_, "float64", "double backward")


@pytest.mark.parametrize("fn", [
    lambda F, m: F.batch_norm(m.zeros(1, 3), None, None, training=True),
    lambda F, m: F.batch_norm(m.zeros(4, 3), m.zeros(4), m.ones(4)),
    lambda F, m: F.batch_norm(m.zeros(4, 3, 2), m.zeros(3), m.ones(3), m.ones(2)),
    lambda F, m: m.nn.BatchNorm2d(3)(m.zeros(4, 3, 2)),
    lambda F, m: m.nn.BatchNorm1d(3)(m.zeros(4, 3, 2, 2)),
    lambda F, m: F.group_norm(m.zeros(4, 6, 2), 4),
    lambda F, m: m.nn.GroupNorm(4, 6),
])
def test_norm_bad_input_raises_like_torch(fn):
    with pytest.raises(Exception) as et:
        fn(torch.nn.functional, torch)
    with pytest.raises(Exception) as ei:
        fn(IF, ignis)
    assert type(ei.value).__name__ == type(et.value).__name__, (ei.value, et.value)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("args,shape", [((2, 6), (3, 6, 4, 5)), ((3, 6), (2, 6, 7)),
                                        ((1, 4), (2, 4, 3, 3)), ((4, 4), (2, 4, 5))], ids=str)
def test_group_norm(args, shape, dtype):
    _run_module("GroupNorm", args, {}, shape, dtype, steps=1)


@pytest.mark.parametrize("name,kw,shape", [
    ("InstanceNorm2d", {}, (2, 3, 5, 6)),
    ("InstanceNorm2d", {"affine": True}, (2, 3, 5, 6)),
    ("InstanceNorm2d", {"track_running_stats": True}, (2, 3, 5, 6)),
    ("InstanceNorm1d", {"affine": True, "track_running_stats": True}, (2, 3, 7)),
    ("InstanceNorm2d", {}, (3, 5, 6)),
], ids=str)
def test_instance_norm(name, kw, shape):
    _run_module(name, (3,), kw, shape, "float64", steps=2)
