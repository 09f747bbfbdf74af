"""Saved-tensor hooks (ignis.autograd.graph; Note [Saved-tensor hooks] in
src/ignis/autograd/node.h) and activation checkpointing built on them
(ignis.utils.checkpoint): gradients equal those of the plain program and of
torch's checkpoint from the same weights, the random state is replayed,
memory is not kept, and under ignis.compile a checkpoint is traced as its
function (Note [Checkpoints traced as their function])."""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
from ignis.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks
from ignis.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential


def rand(*shape, seed=0, grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ignis.tensor(a, requires_grad=grad)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def mlp(seed=0, dropout=0.0):
    ignis.manual_seed(seed)
    nn = ignis.nn
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 8),
                         nn.GELU(), nn.Linear(8, 4))


def grads_of(model, loss_fn):
    model.zero_grad(set_to_none=True)
    loss = loss_fn()
    loss.backward()
    return loss, [p.grad.clone() for p in model.parameters()]


# --- saved-tensor hooks ---------------------------------------------------------------------
def test_saved_tensors_hooks_see_every_saved_tensor_and_give_them_back():
    x, w = rand(3, 4, grad=True), rand(4, 5, seed=1, grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(tuple(t.shape))
        return ("box", t.clone())

    def unpack(box):
        unpacked.append(box[0])
        return box[1]

    with saved_tensors_hooks(pack, unpack):
        y = (x @ w).tanh().sum()
    assert (3, 4) in packed and (4, 5) in packed and (3, 5) in packed  # mm's inputs, tanh's output
    y.backward()
    assert len(unpacked) == len(packed)
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad = w.grad = None
    (x @ w).tanh().sum().backward()
    close(gx, x.grad)
    close(gw, w.grad)


def test_saved_tensors_hooks_apply_only_inside_their_block():
    x = rand(4, grad=True)
    count = []
    with saved_tensors_hooks(lambda t: count.append(1) or t, lambda t: t):
        a = x.sin()
    n = len(count)
    assert n >= 1
    b = x.cos()  # outside: kept as usual
    assert len(count) == n
    (a + b).sum().backward()
    close(x.grad, x.cos() - x.sin())


def test_a_packed_graph_is_freed_by_its_backward():
    x = rand(4, grad=True)
    with saved_tensors_hooks(lambda t: t * 1, lambda t: t):
        y = x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


def test_save_on_cpu_gives_the_same_gradients():
    model = mlp()
    x = rand(5, 8, seed=2)
    _, want = grads_of(model, lambda: model(x).square().mean())
    with save_on_cpu():
        loss = model(x).square().mean()
    model.zero_grad(set_to_none=True)
    loss.backward()
    for p, g in zip(model.parameters(), want):
        close(p.grad, g)


def test_disable_saved_tensors_hooks_refuses_to_save():
    x = rand(4, grad=True)
    with pytest.raises(RuntimeError, match="no saving in here"):
        with disable_saved_tensors_hooks("no saving in here"):
            x.sin()
    with disable_saved_tensors_hooks("no saving in here"):
        x.detach().sin()  # records nothing, saves nothing


def test_a_bad_unpack_hook_is_a_clear_error():
    x = rand(4, grad=True)
    with saved_tensors_hooks(lambda t: 1, lambda p: "not a tensor"):
        y = x.sin().sum()
    with pytest.raises(TypeError, match="unpack hook must return a Tensor, got str"):
        y.backward()
    with pytest.raises(TypeError, match="must be callable"):
        with saved_tensors_hooks(1, 2):
            pass


def test_a_compiled_call_inside_hooks_matches_eager():
    """The AOT trace's own autograd does not reach the caller's hooks (they
    would be handed fake tensors)."""
    def f(x, w):
        return (x @ w).relu().sum()

    x, w = rand(4, 6, grad=True), rand(6, 3, seed=1, grad=True)
    f(x, w).backward()
    want = w.grad.clone()
    w.grad = None
    seen = []

    def pack(t):
        assert type(t).__name__ == "Tensor" and t.numpy() is not None  # a real tensor
        seen.append(tuple(t.shape))
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        loss = ignis.compile(f, backend="aot_eager")(x, w)
    loss.backward()
    close(w.grad, want)
    ignis.compiler.reset()


# --- checkpoint -----------------------------------------------------------------------------
@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gradients_equal_the_plain_model(reentrant):
    model = mlp()
    x = rand(6, 8, seed=3, grad=True)
    want_loss, want = grads_of(model, lambda: model(x).square().mean())
    want_x = x.grad.clone()
    x.grad = None
    got_loss, got = grads_of(
        model, lambda: checkpoint(model, x, use_reentrant=reentrant).square().mean())
    close(got_loss, want_loss)
    for g, w in zip(got, want):
        close(g, w)
    close(x.grad, want_x)


def test_checkpoint_replays_the_random_state():
    """Dropout inside draws the same mask when recomputed: gradients equal
    the plain run's from the same seed."""
    model = mlp(dropout=0.5)
    x = rand(6, 8, seed=4)
    ignis.manual_seed(7)
    _, want = grads_of(model, lambda: model(x).sum())
    ignis.manual_seed(7)
    _, got = grads_of(model, lambda: checkpoint(model, x, use_reentrant=False).sum())
    for g, w in zip(got, want):
        close(g, w)
    # without preserve_rng_state the second run draws other masks
    ignis.manual_seed(7)
    _, other = grads_of(model, lambda: checkpoint(model, x, use_reentrant=False,
                                                  preserve_rng_state=False).sum())
    assert any(not np.allclose(g.numpy(), w.numpy()) for g, w in zip(other, want))


def test_checkpoint_keeps_no_activations():
    """A chain of 8 tanh over 1M floats keeps 8 outputs (32 MiB) without a
    checkpoint; with one it keeps none of them until the backward."""
    x = rand(1 << 20, grad=True)

    def chain(t):
        for _ in range(8):
            t = t.tanh()
        return t

    def kept(run):
        base = ignis.cpu.memory_allocated()
        y = run().sum()
        held = ignis.cpu.memory_allocated() - base
        y.backward()
        return held

    plain = kept(lambda: chain(x))
    g_plain = x.grad.clone()
    x.grad = None
    checked = kept(lambda: checkpoint(chain, x, use_reentrant=False))
    close(x.grad, g_plain)
    assert plain >= 8 * (4 << 20)
    assert checked < 3 * (4 << 20), (plain, checked)


def test_non_reentrant_checkpoint_of_inputs_without_grad_and_with_keywords():
    model = mlp()
    x = rand(6, 8, seed=5)  # no grad: only the parameters get gradients

    def scaled(t, scale=1.0):
        return model(t) * scale

    _, want = grads_of(model, lambda: scaled(x, scale=3.0).sum())
    _, got = grads_of(model, lambda: checkpoint(scaled, x, scale=3.0, use_reentrant=False).sum())
    for g, w in zip(got, want):
        close(g, w)


def test_non_reentrant_checkpoint_with_autograd_grad_and_a_retained_graph():
    model = mlp()
    x = rand(6, 8, seed=6, grad=True)
    params = list(model.parameters())
    want = ignis.autograd.grad(model(x).square().sum(), [x] + params)
    y = checkpoint(model, x, use_reentrant=False).square().sum()
    first = ignis.autograd.grad(y, [x] + params, retain_graph=True)
    second = ignis.autograd.grad(y, [x] + params)  # recomputes again
    for a, b, w in zip(first, second, want):
        close(a, w)
        close(b, w)


def test_reentrant_checkpoint_rules():
    model = mlp()
    x = rand(6, 8, seed=7, grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(model, x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda t, scale: t * scale, x, scale=2.0, use_reentrant=True)
    with pytest.raises(ValueError, match="context_fn"):
        checkpoint(model, x, use_reentrant=True, debug=True)


def test_a_function_that_saves_differently_when_rerun_is_an_error():
    calls = []

    def moody(t):
        calls.append(1)
        return t.sin() if len(calls) == 1 else t.sin().exp()

    x = rand(4, grad=True)
    y = checkpoint(moody, x, use_reentrant=False).sum()
    with pytest.raises(CheckpointError, match="different metadata"):
        y.backward()


def test_checkpoint_sequential_equals_the_sequential():
    model = mlp()
    x = rand(6, 8, seed=8, grad=True)
    want_loss, want = grads_of(model, lambda: model(x).sum())
    for reentrant in (False, True):
        got_loss, got = grads_of(
            model, lambda: checkpoint_sequential(model, 3, x, use_reentrant=reentrant).sum())
        close(got_loss, want_loss)
        for g, w in zip(got, want):
            close(g, w)


def test_checkpoint_matches_torch():
    torch = pytest.importorskip("torch")
    import torch.utils.checkpoint as tcp
    model = mlp()
    tmodel = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Dropout(0.0),
                                 torch.nn.Linear(16, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
    with torch.no_grad():
        for p, q in zip(model.parameters(), tmodel.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy().copy()))
    a = np.random.default_rng(9).standard_normal((6, 8)).astype(np.float32)
    x, tx = ignis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    checkpoint(model, x, use_reentrant=False).square().mean().backward()
    tcp.checkpoint(tmodel, tx, use_reentrant=False).square().mean().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


# --- under ignis.compile --------------------------------------------------------------------
def counting():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm
    return graphs, backend


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_checkpoint_in_a_compiled_model_is_traced_as_its_function(backend):
    nn = ignis.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh())
                                         for _ in range(3)])

        def forward(self, x):
            for b in self.blocks:
                x = checkpoint(b, x, use_reentrant=False)
            return x.sum()

    ignis.manual_seed(0)
    net = Net()
    x = rand(4, 8, seed=10, grad=True)
    loss = net(x)
    loss.backward()
    want = [p.grad.clone() for p in net.parameters()] + [x.grad.clone()]
    net.zero_grad(set_to_none=True)
    x.grad = None
    ex = ignis.compiler.explain(net)(x)
    assert ex.graph_count == 1 and ex.graph_break_count == 0, ex
    got_loss = ignis.compile(net, backend=backend)(x)
    got_loss.backward()
    close(got_loss, loss)
    for g, w in zip([p.grad for p in net.parameters()] + [x.grad], want):
        close(g, w)
    ignis.compiler.reset()


def test_a_reentrant_checkpoint_of_inputs_without_grad_runs_eagerly():
    """Eager's reentrant checkpoint gives the parameters inside no gradient
    when no input requires grad; capture must not trace it as fn (which
    would)."""
    model = mlp()
    x = rand(6, 8, seed=11)

    def f(t):
        return checkpoint(model, t, use_reentrant=True).sum()

    graphs, backend = counting()
    out = ignis.compile(f, backend=backend)(x)
    close(out, model(x).sum())
    assert not out.requires_grad
    assert all(p.grad is None for p in model.parameters())
    ex = ignis.compiler.explain(f)(x)
    assert any("do not require grad" in str(b.reason) for b in ex.break_reasons), ex
    ignis.compiler.reset()
