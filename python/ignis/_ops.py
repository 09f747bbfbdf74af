"""Attaches the C++ op declarations to the Python API.

Each declared op is one `ignis._C.Op` object: the function `ignis.<name>`
and, for ops declared with the method variant, `ignis.Tensor.<name>` (the
same object; it binds like a method). `ignis.ops.<name>` lists them all.
"""
import types

from . import _C

ops = types.SimpleNamespace()
_table = _C._op_table()


def install(namespace, tensor_cls):
    for name, (op, is_function, is_method) in _table.items():
        setattr(ops, name, op)
        if is_function and not name.startswith("_"):
            namespace[name] = op
        if is_method and name not in tensor_cls.__dict__:
            setattr(tensor_cls, name, op)
    namespace["ops"] = ops


def get(name):
    return _table[name][0]
