"""Capture of nn.Modules: modules called from compiled functions (inlined
__call__/forward; parameters and buffers become graph inputs), modules
compiled directly (OptimizedModule), containers (Sequential, ModuleList,
ModuleDict), custom modules with branches on attributes and on the training
flag, hooks, gradients of parameters; plus Module.compile and the
OptimizedModule wrapper's attribute, state_dict and repr behaviour."""
import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (check_case, close, counting_backend, deterministic, registry,
                          requires_capture, tensor)

import ignis

pytestmark = requires_capture
CASES, case = registry()


def x_in(T):
    return (tensor(T, 2, 4, seed=7),)


def x_in_grad(T):
    return (tensor(T, 2, 4, seed=7, requires_grad=True),)


def tokens(T):
    return (T.tensor([[1, 3, 0], [2, 2, 4]]),)


def build(T):
    """Module classes written once against T."""
    nn = T.nn
    F = T.nn.functional

    class MLP(nn.Module):
        def __init__(self, hidden=8, act="relu"):
            super().__init__()
            self.fc1 = nn.Linear(4, hidden)
            self.fc2 = nn.Linear(hidden, 4)
            self.act = act

        def forward(self, x):
            h = self.fc1(x)
            h = F.relu(h) if self.act == "relu" else T.tanh(h)
            return self.fc2(h)

    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.register_buffer("shift", T.ones(4))
            self.scale = 0.5

        def forward(self, x):
            return self.lin(x) * self.scale + self.shift

    class TrainingBranch(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            if self.training:
                return self.lin(x) * 2
            return self.lin(x)

    class Stack(nn.Module):
        def __init__(self, n=3):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])
            self.norm = nn.LayerNorm(4)

        def forward(self, x):
            for layer in self.layers:
                x = x + T.tanh(layer(x))
            return self.norm(x)

    class Indexed(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

        def forward(self, x):
            for i in range(len(self.layers)):
                x = self.layers[i](x)
            return self.layers[-1](x) + x

    class Routed(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

        def forward(self, x):
            return {k: head(x) for k, head in self.heads.items()}

    class Nested(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = MLP()
            self.out = nn.Linear(4, 1)

        def forward(self, x):
            return self.out(self.block(x) + x).squeeze(-1)

    class WithParameter(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(T.ones(4))

        def forward(self, x):
            return x * self.w

    class Printing(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            x = self.a(x)
            print("between layers")
            return self.b(x)

    class CallsMethod(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def helper(self, x):
            return self.lin(x).sigmoid()

        def forward(self, x):
            return self.helper(x) * self.helper(-x)

    class TinyLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(5, 4)
            self.ln = nn.LayerNorm(4)
            self.head = nn.Linear(4, 5, bias=False)

        def forward(self, idx):
            return self.head(self.ln(self.emb(idx)))

    return dict(MLP=MLP, WithBuffer=WithBuffer, TrainingBranch=TrainingBranch, Stack=Stack,
                Indexed=Indexed, Routed=Routed, Nested=Nested, WithParameter=WithParameter,
                Printing=Printing, CallsMethod=CallsMethod, TinyLM=TinyLM)


# --- modules called from a compiled function (closure-held) ---------------------------------------
@case(inputs=x_in_grad, grad=True)
def case_call_linear(T):
    lin = deterministic(T, T.nn.Linear(4, 3))

    def f(x):
        return lin(x)
    return f


@case(inputs=x_in_grad, grad=True)
def case_call_sequential(T):
    seq = deterministic(T, T.nn.Sequential(T.nn.Linear(4, 6), T.nn.GELU(), T.nn.Linear(6, 2)))

    def f(x):
        return seq(x)
    return f


@case(inputs=x_in)
def case_iterate_sequential(T):
    seq = deterministic(T, T.nn.Sequential(T.nn.Linear(4, 4), T.nn.ReLU(), T.nn.Linear(4, 4)))

    def f(x):
        for m in seq:
            x = m(x)
        return x
    return f


@case(inputs=x_in)
def case_index_sequential(T):
    seq = deterministic(T, T.nn.Sequential(T.nn.Linear(4, 4), T.nn.Tanh()))

    def f(x):
        return seq[1](seq[0](x)) + len(seq)
    return f


@case(inputs=x_in)
def case_activations_modules(T):
    acts = [T.nn.ReLU(), T.nn.GELU(), T.nn.SiLU(), T.nn.Sigmoid(), T.nn.Softmax(dim=-1)]

    def f(x):
        return [a(x) for a in acts]
    return f


@case(inputs=x_in)
def case_layernorm_and_dropout_eval(T):
    ln = deterministic(T, T.nn.LayerNorm(4))
    drop = T.nn.Dropout(0.5).eval()

    def f(x):
        return drop(ln(x))
    return f


@case(inputs=x_in)
def case_loss_modules(T):
    mse = T.nn.MSELoss()

    def f(x):
        return mse(x, x * 0.5)
    return f


@case(inputs=x_in)
def case_module_attribute_outside_forward(T):
    lin = deterministic(T, T.nn.Linear(4, 2))

    def f(x):
        return x @ lin.weight.t() + lin.bias
    return f


# --- modules compiled directly (ignis.compile(module)) --------------------------------------------
def module_case(name, inputs=x_in, grad=False, train=True):
    def make(T):
        mod = deterministic(T, build(T)[name]())
        return mod.train(train)
    make.__name__ = f"case_module_{name}" + ("" if train else "_eval")
    return case(inputs=inputs, grad=grad)(make)


module_case("MLP", inputs=x_in_grad, grad=True)
module_case("WithBuffer", inputs=x_in_grad, grad=True)
module_case("TrainingBranch")
module_case("TrainingBranch", train=False)
module_case("Stack", inputs=x_in_grad, grad=True)
module_case("Indexed")
module_case("Routed")
module_case("Nested", inputs=x_in_grad, grad=True)
module_case("WithParameter", inputs=x_in_grad, grad=True)
module_case("Printing")
module_case("CallsMethod")
module_case("TinyLM", inputs=tokens)


@case(inputs=x_in_grad, grad=True)
def case_compile_nn_linear_directly(T):
    return deterministic(T, T.nn.Linear(4, 2))


@case(inputs=x_in)
def case_compile_nn_sequential_directly(T):
    return deterministic(T, T.nn.Sequential(T.nn.Linear(4, 4), T.nn.ReLU()))


@case(inputs=x_in)
def case_module_with_forward_hook(T):
    mod = deterministic(T, build(T)["MLP"]())
    mod.register_forward_hook(lambda m, args, out: out * 2)
    return mod


@case(inputs=x_in)
def case_module_with_pre_hook(T):
    mod = deterministic(T, build(T)["WithParameter"]())
    mod.register_forward_pre_hook(lambda m, args: (args[0] + 1,))
    return mod


def hooked_parent(T):
    """A parent whose children get hooks: called from the compiled forward,
    their hooks are traced into its graph (Note [Module hooks inlined])."""
    nn = T.nn

    class Scaled(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)
            self.s = Scaled()

        def forward(self, x):
            return self.s(self.b(T.relu(self.a(x))), scale=3.0)

    return deterministic(T, Parent())


@case(inputs=x_in_grad, grad=True)
def case_submodule_hooks(T):
    mod = hooked_parent(T)
    mod.a.register_forward_pre_hook(lambda m, args: args[0] + 1)  # one tensor: a 1-tuple
    mod.a.register_forward_hook(lambda m, args, out: out * 2)
    mod.b.register_forward_hook(lambda m, args, out: out - args[0])
    mod.b.register_forward_hook(lambda m, args, out: out.tanh(), prepend=True)  # runs first
    mod.b.register_forward_hook(lambda m, args, out: None)  # keeps the output
    return mod


@case(inputs=x_in_grad, grad=True)
def case_submodule_hooks_with_kwargs(T):
    mod = hooked_parent(T)

    def pre(m, args, kwargs):
        return (args[0] + 1,), {"scale": kwargs["scale"] * 2}

    def post(m, args, kwargs, out):
        return out + args[0] * kwargs["scale"]

    mod.s.register_forward_pre_hook(pre, with_kwargs=True)
    mod.s.register_forward_hook(post, with_kwargs=True)
    mod.s.register_forward_pre_hook(lambda m, args: None)
    return mod


# Dynamo's counts (torch 2.13, a counting backend, dynamic=False): (graphs, graph breaks).
EXPECTED = {
    "call_linear": (1, 0),
    "call_sequential": (1, 0),
    "iterate_sequential": (1, 0),
    "index_sequential": (1, 0),
    "activations_modules": (1, 0),
    "layernorm_and_dropout_eval": (1, 0),
    "loss_modules": (1, 0),
    "module_attribute_outside_forward": (1, 0),
    "module_MLP": (1, 0),
    "module_WithBuffer": (1, 0),
    "module_TrainingBranch": (1, 0),
    "module_TrainingBranch_eval": (1, 0),
    "module_Stack": (1, 0),
    "module_Indexed": (1, 0),
    "module_Routed": (1, 0),
    "module_Nested": (1, 0),
    "module_WithParameter": (1, 0),
    "module_Printing": (2, 1),
    "module_CallsMethod": (1, 0),
    "module_TinyLM": (1, 0),
    "compile_nn_linear_directly": (1, 0),
    "compile_nn_sequential_directly": (1, 0),
    "module_with_forward_hook": (2, 0),
    "module_with_pre_hook": (2, 0),
    "submodule_hooks": (1, 0),
    "submodule_hooks_with_kwargs": (1, 0),
}


@pytest.mark.parametrize("c", CASES, ids=repr)
def test_case(c):
    check_case(c, EXPECTED)


# --- OptimizedModule and Module.compile -----------------------------------------------------------
def _mlp():
    return deterministic(ignis, build(ignis)["MLP"]())


def test_optimized_module_wraps_original():
    mod = _mlp()
    opt = ignis.compile(mod)
    assert isinstance(opt, ignis.nn.Module)
    assert type(opt).__name__ == "OptimizedModule"
    assert opt._orig_mod is mod
    assert opt.fc1 is mod.fc1  # attribute reads go to the original
    assert opt.act == "relu"
    opt.act = "tanh"  # and writes
    assert mod.act == "tanh"
    assert [id(p) for p in opt.parameters()] == [id(p) for p in mod.parameters()]
    ignis.compiler.reset()


def test_optimized_module_state_dict_and_repr():
    mod = _mlp()
    opt = ignis.compile(mod)
    # As torch: the original is the submodule _orig_mod.
    assert list(opt.state_dict()) == ["_orig_mod." + k for k in mod.state_dict()]
    assert repr(opt) == "OptimizedModule(\n  (_orig_mod): " + \
        repr(mod).replace("\n", "\n  ") + "\n)"
    sd = {k: v * 0 for k, v in mod.state_dict().items()}
    mod.load_state_dict(sd)
    out = opt(tensor(ignis, 2, 4))
    assert close(out, ignis.zeros(2, 4))
    ignis.compiler.reset()


def test_optimized_module_train_eval_forwarded():
    mod = _mlp()
    opt = ignis.compile(mod)
    opt.eval()
    assert mod.training is False and opt.training is False
    opt.train()
    assert mod.training is True
    ignis.compiler.reset()


def test_optimized_module_training_flag_recompiles():
    T = ignis
    graphs = []
    mod = deterministic(T, build(T)["TrainingBranch"]())
    opt = ignis.compile(mod, backend=counting_backend(graphs))
    x = tensor(T, 2, 4)
    assert close(opt(x), mod.lin(x) * 2)
    opt.eval()
    assert close(opt(x), mod.lin(x))
    assert len(graphs) == 2  # the training flag is guarded
    opt.train()
    opt(x)
    assert len(graphs) == 2  # both entries are cached
    ignis.compiler.reset()


def test_module_compile_in_place():
    graphs = []
    mod = _mlp()
    x = tensor(ignis, 2, 4)
    want = mod(x)
    assert mod.compile(backend=counting_backend(graphs)) is None
    assert type(mod).__name__ == "MLP"  # compiled in place, same type
    assert mod._compiled_call_impl is not None
    got = mod(x)
    assert close(got, want)
    assert len(graphs) == 1
    assert list(mod.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    ignis.compiler.reset()


def test_module_compile_runs_hooks_once():
    graphs = []
    mod = _mlp()
    calls = []
    mod.register_forward_hook(lambda m, a, o: calls.append(1))
    mod.compile(backend=counting_backend(graphs))
    mod(tensor(ignis, 2, 4))
    assert calls == [1]
    ignis.compiler.reset()


def test_module_compile_of_ignis_layer_matches_torch():
    # torch.nn.Linear(...).compile() captures nothing: the layer's own frames
    # belong to the library; Dynamo runs them eagerly. ignis does the same.
    graphs = []
    lin = deterministic(ignis, ignis.nn.Linear(4, 2))
    x = tensor(ignis, 2, 4)
    want = lin(x)
    lin.compile(backend=counting_backend(graphs))
    assert close(lin(x), want)
    assert len(graphs) == 0
    ignis.compiler.reset()


def test_compiled_module_gradients_match_eager():
    T = ignis
    eager = deterministic(T, build(T)["Stack"]())
    compiled_mod = deterministic(T, build(T)["Stack"]())
    opt = ignis.compile(compiled_mod)
    for _ in range(2):  # second step: a cache hit, gradients accumulate
        eager(tensor(T, 2, 4)).sum().backward()
        opt(tensor(T, 2, 4)).sum().backward()
    for (n, a), b in zip(eager.named_parameters(), compiled_mod.parameters()):
        assert close(a.grad, b.grad, atol=1e-6), n
    ignis.compiler.reset()


def test_compiled_method_on_class():
    graphs = []
    T = ignis

    class Model(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = T.nn.Linear(4, 4)

        @ignis.compile(backend=counting_backend(graphs))
        def forward(self, x):
            return T.relu(self.lin(x))

    m = deterministic(T, Model())
    x = tensor(T, 2, 4)
    out = m(x)
    assert close(out, T.relu(m.lin(x)))
    assert len(graphs) == 1
    ignis.compiler.reset()


def test_instances_of_one_class_share_a_cache_entry():
    # Modules are guarded by type and by what the trace reads (as Dynamo with
    # inlined nn modules), so a layer run eagerly between breaks compiles once
    # for all its instances; a different constant attribute recompiles.
    class Scale(ignis.nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = k
            self.lin = ignis.nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x) * self.k

    def body(mod, x):
        return mod(x) + 1

    graphs = []
    cf = ignis.compile(body, backend=counting_backend(graphs))
    a, b, c = Scale(2.0), Scale(2.0), Scale(3.0)
    x = tensor(ignis, 2, 4)
    for m in (a, b):
        assert ignis.allclose(cf(m, x), body(m, x))
    assert len(graphs) == 1  # b reuses a's entry: its own parameters are read at run time
    assert ignis.allclose(cf(c, x), body(c, x))
    assert len(graphs) == 2  # k differs: L['mod'].k == 2.0 failed
    ignis.compiler.reset()


def test_module_list_length_is_guarded():
    def run(layers, x):
        for layer in layers:
            x = layer(x)
        return x

    graphs = []
    cf = ignis.compile(run, backend=counting_backend(graphs))
    x = tensor(ignis, 2, 4)
    two = ignis.nn.ModuleList([ignis.nn.Linear(4, 4) for _ in range(2)])
    three = ignis.nn.ModuleList([ignis.nn.Linear(4, 4) for _ in range(3)])
    assert ignis.allclose(cf(two, x), run(two, x))
    assert ignis.allclose(cf(three, x), run(three, x))
    assert len(graphs) == 2
    two.append(ignis.nn.Linear(4, 4))
    assert ignis.allclose(cf(two, x), run(two, x))  # now three long: matches `three`'s entry
    assert len(graphs) == 2
    ignis.compiler.reset()


class _Base(ignis.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = ignis.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x).relu()


class _Child(_Base):
    def forward(self, x):
        return super().forward(x) * 2 + super(_Child, self).forward(x)


class _Shifted(ignis.nn.Linear):
    def forward(self, x):
        return super().forward(x) + 1


@pytest.mark.parametrize("make", [_Child, lambda: _Shifted(4, 3)], ids=["child", "layer_subclass"])
def test_super_forward_is_inlined(make):
    # Zero- and two-argument super() (3.11: a call of the builtin; 3.12:
    # LOAD_SUPER_ATTR) resolve in the trace: one graph, no break.
    mod = deterministic(ignis, make())
    x = tensor(ignis, 2, 4)
    graphs = []
    got = ignis.compile(mod, backend=counting_backend(graphs))(x)
    assert close(got, mod(x))
    assert len(graphs) == 1
    ex = ignis.compiler.explain(mod)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)


def test_frame_reading_calls_run_the_frame_eagerly():
    # locals() needs the real frame: no graph break there (a plan cannot
    # stand in for the frame), the frame runs as Python; values stay right.
    def f(x, y):
        z = x + y
        names = sorted(locals())
        return z * len(names)

    graphs = []
    x, y = tensor(ignis, 4), tensor(ignis, 4, seed=1)
    got = ignis.compile(f, backend=counting_backend(graphs))(x, y)
    assert close(got, f(x, y))
    assert len(graphs) == 0


def test_negative_module_index_follows_the_length():
    def last(layers, x):
        return layers[-1](x)

    graphs = []
    cf = ignis.compile(last, backend=counting_backend(graphs))
    x = tensor(ignis, 2, 4)
    two = ignis.nn.ModuleList([ignis.nn.Linear(4, 4) for _ in range(2)])
    three = ignis.nn.ModuleList([ignis.nn.Linear(4, 4) for _ in range(3)])
    assert close(cf(two, x), last(two, x))
    assert close(cf(three, x), last(three, x))  # layers[-1] is '2' now, not '1'
    assert len(graphs) == 2


def test_forward_replaced_on_an_instance_is_not_the_cached_one():
    def run(mod, x):
        return mod(x) + 1

    graphs = []
    cf = ignis.compile(run, backend=counting_backend(graphs))
    x = tensor(ignis, 2, 4)
    a, b = ignis.nn.Linear(4, 4), ignis.nn.Linear(4, 4)
    assert close(cf(a, x), run(a, x))
    b.forward = lambda t: t * 0  # shadows Linear.forward on this instance only
    assert close(cf(b, x), run(b, x))  # the guard on b.__dict__ fails: no reuse of a's graph


def test_gpt_training_through_compile_matches_eager():
    # examples/gpt.py trained for 3 AdamW steps, once eagerly and once through
    # ignis.compile (one graph per mode), from the same weights and batches:
    # losses and final parameters agree.
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    from gpt import GPTConfig, build_gpt, configure_optimizer

    cfg = GPTConfig(vocab_size=32, block_size=16, n_layer=2, n_head=2, n_embd=32, dropout=0.1)
    runs = []
    for compiled in (False, True):
        ignis.manual_seed(0)
        model = build_gpt(ignis)(cfg)
        opt = configure_optimizer(ignis, model)
        graphs = []
        fwd = ignis.compile(model, backend=counting_backend(graphs)) if compiled else model
        losses = []
        for step in range(3):
            ignis.manual_seed(100 + step)  # same batch and dropout masks in both runs
            x = ignis.randint(0, 32, (4, 16))
            y = ignis.randint(0, 32, (4, 16))
            _, loss = fwd(x, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        runs.append((losses, [p.detach().clone() for p in model.parameters()], len(graphs)))
    (eager_losses, eager_params, _), (comp_losses, comp_params, n_graphs) = runs
    assert n_graphs == 1
    assert eager_losses == pytest.approx(comp_losses, rel=1e-6, abs=1e-6)
    for a, b in zip(eager_params, comp_params):
        assert close(a, b)


def test_hasattr_false_is_guarded_across_instances():
    class Maybe(ignis.nn.Module):
        def forward(self, x):
            if hasattr(self, "extra"):
                return x + self.extra
            return x * 2

    def run(mod, x):
        return mod(x)

    graphs = []
    cf = ignis.compile(run, backend=counting_backend(graphs))
    x = tensor(ignis, 4)
    a, b = Maybe(), Maybe()
    b.extra = 5.0
    assert close(cf(a, x), x * 2)
    assert close(cf(b, x), x + 5.0)  # b has `extra`: a's entry must not be reused
    assert len(graphs) == 2


# --- hooks of modules called inside a compiled frame (Note [Module hooks inlined]) ---------------
def test_submodule_hooks_recompile_when_added_or_removed():
    graphs = []
    mod = hooked_parent(ignis)
    opt = ignis.compile(mod, backend=counting_backend(graphs))
    x = tensor(ignis, 2, 4)
    assert close(opt(x), mod(x))
    h = mod.a.register_forward_hook(lambda m, args, out: out * 5)
    assert close(opt(x), mod(x))
    assert close(opt(x), mod.s(mod.b(ignis.relu(mod.a.forward(x) * 5)), scale=3.0))
    assert len(graphs) == 2  # the hook dict is guarded
    h.remove()
    assert close(opt(x), mod.s(mod.b(ignis.relu(mod.a.forward(x))), scale=3.0))
    assert len(graphs) == 2  # the hookless entry is cached
    ignis.compiler.reset()


def test_a_feature_hook_stays_in_the_graph():
    """A hook that stores a detached output (feature extraction): one graph,
    the dict written at every call, compiled or cached."""
    graphs = []
    mod = hooked_parent(ignis)
    feats = {}

    def save(m, args, out):
        feats["a"] = out.detach()

    mod.a.register_forward_hook(save)
    opt = ignis.compile(mod, backend=counting_backend(graphs))
    for seed in (1, 2):
        x = tensor(ignis, 2, 4, seed=seed)
        feats.clear()
        opt(x)
        assert close(feats["a"], mod.a.forward(x))
    assert len(graphs) == 1
    ex = ignis.compiler.explain(mod)(x)
    assert ex.graph_break_count == 0, ex
    ignis.compiler.reset()


def test_a_with_kwargs_pre_hook_must_return_args_and_kwargs():
    mod = hooked_parent(ignis)
    mod.s.register_forward_pre_hook(lambda m, args, kwargs: args, with_kwargs=True)
    x = tensor(ignis, 2, 4)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        mod(x)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        ignis.compile(mod)(x)
    ignis.compiler.reset()
