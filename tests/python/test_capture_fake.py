"""Capture computes metadata on ignis's fake tensors (src/ignis/aot/fake.h):
each node of a captured graph carries the tensor_meta of its fake, whose
device is the one the real value would live on, so a move to another device
traces without that device (no GPU is needed to trace `.to("cuda")`)."""
import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import requires_capture, tensor

import ignis

pytestmark = requires_capture


def metas_of(fn, *args):
    """(op, name, shape, dtype, device) of each node of the one graph `fn`
    captures; the backend never runs it (its result stands in)."""
    seen = []

    def backend(gm, example_inputs):
        for n in gm.graph.nodes:
            if n.op == "output":
                continue
            m = n.meta.get("tensor_meta")
            m = m[0] if type(m) is tuple else m  # a tuple-returning node: its first
            seen.append((n.op, n.name, tuple(m.shape), m.dtype, str(m.device)))
        n_out = len(next(n for n in gm.graph.nodes if n.op == "output").args[0])
        return lambda *a: tuple(a[0] for _ in range(n_out))

    ignis.compile(fn, backend=backend)(*args)
    return seen


def test_nodes_carry_the_metadata_of_their_fakes():
    def f(x, w):
        h = ignis.relu(x @ w)
        a, b = h.split(2, dim=1)
        return a.sum(0) + b.T.sum(1)

    x, w = tensor(ignis, 3, 5), tensor(ignis, 5, 4, seed=1)
    metas = metas_of(f, x, w)
    by_name = {name: (op, shape, dtype, dev) for op, name, shape, dtype, dev in metas}
    assert by_name["l_x_"] == ("placeholder", (3, 5), ignis.float32, "cpu")
    assert by_name["l_w_"] == ("placeholder", (5, 4), ignis.float32, "cpu")
    assert by_name["h"] == ("call_function", (3, 4), ignis.float32, "cpu")
    shapes = [shape for _, _, shape, _, _ in metas]
    assert (3, 2) in shapes and (2, 3) in shapes  # the split's items, b.T
    assert all(dev == "cpu" for *_, dev in metas)


def test_fakes_follow_a_move_to_another_device():
    def f(x):
        y = x.to("cuda")
        z = ignis.ones(3, device=y.device)  # the fake's device, read while tracing
        if y.is_cuda:
            return y * 2 + z
        return y * 3

    metas = metas_of(f, tensor(ignis, 3))
    devices = {name: dev for _, name, _, _, dev in metas}
    assert devices.pop("l_x_") == "cpu"
    assert len(devices) == 4 and set(devices.values()) == {"cuda"}, devices


def test_cuda_and_cpu_methods_and_factories_on_fakes():
    def f(x):
        return x.cuda() + ignis.zeros(3, device="cuda"), x.cuda().cpu() * 2

    metas = metas_of(f, tensor(ignis, 3))
    ops = [(name, dev) for _, name, _, _, dev in metas]
    assert ops[0] == ("l_x_", "cpu")
    assert dict(ops)["zeros"] == "cuda"
    assert ops[-1][1] == "cpu"  # x.cuda().cpu() * 2
    assert sum(dev == "cuda" for _, dev in ops) >= 3


@pytest.mark.parametrize("fn,reason", [
    (lambda x: x.nonzero().sum(),
     "nonzero(): the output's shape is the number of nonzero elements (data-dependent)"),
    (lambda x: x.sum().item() + 1, "Tensor.item() reads a tensor's value into Python"),
    (lambda x: x * 2 if x.sum() > 0 else x, "data-dependent control flow"),
], ids=["nonzero", "item", "branch"])
def test_data_dependent_ops_still_break(fn, reason, monkeypatch):
    # What only the data decides breaks the graph, with the declared reasons
    # (nonzero() only when its size is not captured as unbacked:
    # test_dynamic_unbacked.py).
    monkeypatch.setattr(ignis.compiler.config, "capture_dynamic_output_shape_ops", False)
    explanation = ignis.compiler.explain(fn)(tensor(ignis, 4))
    reasons = [b.reason for b in explanation.break_reasons]
    assert len(reasons) == 1 and reasons[0].startswith(reason), reasons


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.parametrize("target", ["leaf", "view_of_leaf", "no_grad_view"])
def test_a_masked_assignment_autograd_refuses_raises_after_the_side_effects(backend, target):
    # Fakes cannot run x[mask] = v (the count of True is unknown to them), but
    # autograd's in-place check needs no count: capture makes it, so the graph
    # breaks there and the assignment raises eagerly after the log's append
    # (fuzz seed 92969). Torch raises the same error at the same point.
    def f(a, log):
        log.append(1)
        if target == "leaf":
            v = a
        elif target == "view_of_leaf":
            v = a.t()
        else:
            h = a * 1
            with ignis.no_grad():
                v = h[:, :]
        v[v > 0.5] = 0.5
        return v

    messages = {"leaf": "a leaf Variable that requires grad",
                "view_of_leaf": "a view of a leaf Variable that requires grad",
                "no_grad_view": "A view was created in no_grad mode"}
    for fn in (f, ignis.compile(f, backend=backend)):
        log = []
        with pytest.raises(RuntimeError, match=messages[target]):
            fn(ignis.randn(3, 3, requires_grad=True), log)
        assert log == [1]
        # Under no_grad, or with nothing requiring grad, the write is allowed.
        a = ignis.randn(3, 3)
        with ignis.no_grad():
            out = fn(a.clone().requires_grad_(), [])
        expect = f(a.clone(), [])
        assert ignis.equal(out, expect)


def test_a_masked_assignment_of_a_value_requiring_grad_keeps_eagers_gradient():
    # The check runs only where eager records the write: a target that does
    # not require grad taking a value that does is allowed, and differentiable.
    def f(a, b):
        x = a * 1
        x[x > 0] = b.sum()
        return x * 2

    a = ignis.randn(4, 3)
    b1 = ignis.randn(3, requires_grad=True)
    b2 = b1.detach().clone().requires_grad_()
    f(a, b1).sum().backward()
    ignis.compile(f, backend="aot_eager")(a, b2).sum().backward()
    assert ignis.allclose(b1.grad, b2.grad)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("used", [True, False])
def test_a_view_first_read_after_its_base_was_written_is_stale_on_its_fake(backend, used):
    # Fuzz seed 410368. The second graph (after the print's break) first reads
    # w, a no-grad view of a's storage, after tracing a write into t, another
    # view of it: the fake made for w then must be stale, as the real one will
    # be when the graph runs (fakes of one version counter share one, starting
    # at the real one's value). Eager and torch.compile raise at w * 2, also
    # when the product is unused (torch while tracing it); the graph breaks
    # there and the multiply raises eagerly, after the log's append.
    def f(a, log):
        with ignis.no_grad():
            t = a.reshape(a.shape[1], a.shape[0])
        w = t.narrow(1, 0, 1)
        print(end="")
        with ignis.no_grad():
            t[:, 0].zero_()
        log.append(1)
        u = w * 2.0 + 1
        return u if used else None

    for fn in (f, ignis.compile(f, backend=backend)):
        log = []
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
            fn(ignis.randn(3, 6, requires_grad=True), log)
        assert log == [1]
    # Without the write between, the view is not stale: no error, eager's values.
    def g(a):
        with ignis.no_grad():
            t = a.reshape(a.shape[1], a.shape[0])
        w = t.narrow(1, 0, 1)
        print(end="")
        return w * 2.0 + 1
    a = ignis.randn(3, 6, requires_grad=True)
    assert ignis.equal(ignis.compile(g, backend=backend)(a), g(a))


if __name__ == "__main__":
    raise SystemExit(pytest.main([__file__, "-q"]))
