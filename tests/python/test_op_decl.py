"""What an op's declaration tells Python: aliases are names of one op,
randomness and data-dependent shapes come from the declaration."""
import numpy as np

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

ALIASES = {"negative": "neg", "absolute": "abs", "fix": "trunc", "subtract": "sub",
           "multiply": "mul", "divide": "div", "true_divide": "div", "less": "lt",
           "less_equal": "le", "greater": "gt", "greater_equal": "ge", "not_equal": "ne",
           "clip": "clamp", "concat": "cat", "concatenate": "cat", "ger": "outer"}


def test_an_alias_calls_the_op_itself():
    for alias, op in ALIASES.items():
        a, o = getattr(ignis.ops, alias), getattr(ignis.ops, op)
        assert a.alias_of == op and o.alias_of is None
        assert a.__name__ == alias  # prints as the name the user wrote, as torch.multiply does
        assert a.schemas == o.schemas and a.category == o.category
        assert a.__doc__.startswith(f"alias of {op}\n")
        assert getattr(ignis, alias) is a
        # The dispatcher resolves the name to the op's own handle.
        assert ignis._C._op_overload(alias) == ignis._C._op_overload(op)
    assert ignis.Tensor.multiply is ignis.multiply
    assert ignis.ops.multiply_.alias_of == "mul_"
    assert ignis._C._op_overload("multiply_") == ignis._C._op_overload("mul_")


def test_aliases_keep_pytorch_semantics():
    a, b = ignis.tensor([7, -7, 5]), ignis.tensor([2, 2, -3])
    assert ignis.divide(a, b, rounding_mode="floor").tolist() == [3, -4, -2]
    assert a.divide(b, rounding_mode="trunc").tolist() == [3, -3, -1]
    assert ignis.true_divide(a, b).tolist() == [3.5, -3.5, np.float32(-5 / 3)]
    assert ignis.subtract(a, b, alpha=2).tolist() == [3, -11, 11]
    x = ignis.ones(3)
    assert x.multiply_(3) is x and x.tolist() == [3.0] * 3
    assert ignis.clip(a, -1, 1).tolist() == [1, -1, 1]
    assert ignis.concat([a, b]).tolist() == [7, -7, 5, 2, 2, -3]
    y = ignis.ones(2, requires_grad=True)
    assert type(y.multiply(2).grad_fn).__name__ == "MulBackward0"  # torch's name too
    try:
        ignis.multiply(1, "a")
    except TypeError as e:
        assert str(e).startswith("multiply() received an invalid combination of arguments")
    else:
        raise AssertionError("expected a TypeError")


def test_captured_graph_with_an_alias_method_evaluates():
    codes = []

    def backend(gm, example_inputs):
        codes.append(gm.code)
        return gm.forward

    def f(x, y):
        return x.multiply(y) + ignis.multiply(x, 2)

    x = ignis.from_numpy(np.arange(4, dtype=np.float32))
    y = ignis.from_numpy(np.arange(4, dtype=np.float32) + 1)
    ignis.compiler.reset()
    out = ignis.compile(f, backend=backend)(x, y)
    assert out.tolist() == f(x, y).tolist()
    # As Dynamo records them: the method by name, the function as written.
    assert "l_x_.multiply(l_y_)" in codes[0] and "ignis.multiply(l_x_, 2)" in codes[0]
    ignis.compiler.reset()


def test_randomness_is_read_from_the_declaration():
    assert ignis.ops.randn_like.determinism == "random"
    assert ignis.ops.dropout.determinism == "random"
    assert ignis.ops.empty.determinism == "uninitialized"
    assert ignis.ops.normalize.determinism == "deterministic"  # not normal_


def test_data_dependent_op_breaks_the_graph_with_its_declared_reason(monkeypatch):
    # (With capture_dynamic_output_shape_ops, ignis's default, the two stay in
    # the graph: test_dynamic_unbacked.py.)
    monkeypatch.setattr(ignis.compiler.config, "capture_dynamic_output_shape_ops", False)

    def f(x):
        return (x * 2).nonzero().sum() + ignis.masked_select(x, x > 0).sum()

    ignis.compiler.reset()
    ex = ignis.compiler.explain(f)(ignis.randn(5))
    reasons = [str(b.reason) for b in ex.break_reasons]
    assert ex.graph_break_count == 2
    assert reasons[0].startswith("nonzero(): the output's shape is the number of nonzero")
    assert reasons[1].startswith("masked_select(): the output's shape")
    ignis.compiler.reset()


def test_pointwise_ops_name_their_scalar_function():
    assert ignis.ops.exp.scalar_name == "exp" and ignis.ops.exp_.scalar_name == "exp"
    assert ignis.ops.multiply.scalar_name == "mul"
    assert ignis.ops.floor_divide.scalar_name == "div_floor"
    assert ignis.ops.softplus.scalar_name == "softplus"
    assert ignis.ops.mm.scalar_name is None
    pointwise = [n for n in dir(ignis.ops) if not n.startswith("__")
                 and getattr(ignis.ops, n).category == "pointwise"]
    assert [n for n in pointwise if getattr(ignis.ops, n).scalar_name is None] == []
