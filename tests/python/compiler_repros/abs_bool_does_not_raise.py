"""abs on a bool tensor: eager raises NotImplementedError ("abs" not
implemented for 'Bool'), but abs's meta rule accepts bool, so capture and
AOT trace it and the compiled graph returns the input unchanged.
Run from tests/python: python compiler_repros/abs_bool_does_not_raise.py"""
import _checkout  # noqa: F401
import ignis

b = ignis.tensor([True, False])
print(ignis.ops.abs(b.to("meta")))  # meta: no error (the root cause)
try:
    ignis.ops.abs(b)
except NotImplementedError as e:
    print("eager raises:", e)
out = ignis.compile(lambda t: ignis.ops.abs(t), backend="inductor")(b)
print("compiled returns", out)  # expected: NotImplementedError
