"""A bool tensor compared with a Python int: eager promotes to int64
(True < 3 is True), the compiled kernel converts the constant to the
tensor's dtype (`tmp1: bool = constant 3`, i.e. True) and compares bools.
aot_eager gives eager's answer; only the inductor lowering is wrong.
Affects eq/ne/lt/le/gt/ge (gt and le agree by coincidence for 3).
Run from tests/python: python compiler_repros/bool_compare_int_scalar.py"""
import _checkout  # noqa: F401
import ignis

b = ignis.tensor([True, False])
for name in ["eq", "ne", "lt", "le", "gt", "ge"]:
    op = getattr(ignis.ops, name)
    ignis.compiler.reset()
    got = ignis.compile(lambda t: op(t, 3), backend="inductor")(b).tolist()
    want = op(b, 3).tolist()
    print(name, "eager", want, "compiled", got, "" if got == want else "<-- WRONG")
