"""ignis.jit: the TorchScript annotations model code uses, as eager no-ops,
compared with what torch.jit gives the same code."""
import typing
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")


def make_model(lib):
    class Block(lib.nn.Module):
        scale: lib.jit.Final[float]

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)
            self.scale = 2.0

        @lib.jit.ignore
        def debug(self, x):
            return x

        @lib.jit.ignore(drop=True)
        def dropped(self, x):
            return x + 1

        @lib.jit.unused
        def unused_path(self, x):
            return x * 0

        @lib.jit.export
        def exported(self, x):
            return self.lin(x)

        def forward(self, x):
            if lib.jit.is_scripting() or lib.jit.is_tracing():
                return x
            out = lib.jit.annotate(typing.List[lib.Tensor], [])
            out.append(self.lin(x) * self.scale)
            fut = lib.jit.fork(self.exported, x)
            return out[0] + lib.jit.wait(fut) + self.dropped(x)[..., :2] * 0

    return Block()


def test_model_code_runs_like_torch_eager():
    a = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    mi, mt = make_model(ignis), make_model(torch)
    mi.load_state_dict({k: ignis.tensor(v.detach().numpy()) for k, v in mt.state_dict().items()})
    got = mi(ignis.tensor(a))
    want = mt(torch.tensor(a))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)


def test_flags_and_identities():
    assert ignis.jit.is_scripting() is torch.jit.is_scripting() is False
    assert ignis.jit.is_tracing() is torch.jit.is_tracing() is False
    value = [1, 2]
    assert ignis.jit.annotate(typing.List[int], value) is value
    f = lambda x: x  # noqa: E731
    for deco in (ignis.jit.ignore, ignis.jit.unused, ignis.jit.export, ignis.jit.interface,
                 ignis.jit.ignore(drop=True), ignis.jit.ignore()):
        assert deco(f) is f
    assert ignis.jit.Final is typing.Final
    assert ignis.jit.isinstance([1, 2], typing.List[int]) == torch.jit.isinstance([1, 2], typing.List[int])
    assert ignis.jit.isinstance({"a": 1}, typing.Dict[str, int])
    assert not ignis.jit.isinstance([1, "a"], typing.List[int])


def test_script_and_trace_return_the_eager_object_with_one_warning():
    model = make_model(ignis)
    ignis.jit._warned.clear()
    with pytest.warns(UserWarning, match="ignis.compile"):
        assert ignis.jit.script(model) is model
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ignis.jit.script(model) is model  # warned once only
    x = ignis.randn(2, 3)
    with pytest.warns(UserWarning, match="ignis.compile"):
        traced = ignis.jit.trace(model, x)
    assert traced is model
    np.testing.assert_allclose(traced(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(Exception):
        ignis.jit.trace(model, ignis.randn(2, 5))  # the example input must run


def test_fork_wait_and_save_load():
    fut = ignis.jit.fork(lambda a, b=1: a + b, 2, b=3)
    assert fut.wait() == 5 and ignis.jit.wait(fut) == 5 and fut.done()
    with pytest.raises(NotImplementedError, match="ignis.save"):
        ignis.jit.save(make_model(ignis), "/tmp/never_written.pt")
    with pytest.raises(NotImplementedError, match="ignis.load"):
        ignis.jit.load("/tmp/never_written.pt")


def test_jit_is_reachable_from_ignis():
    import importlib
    assert importlib.import_module("ignis").jit.is_scripting() is False
