"""Attaches the C++ op declarations to the Python API.

Each declared op is one `ignis._C.Op` object: the function `ignis.<name>`
and, for ops declared with the method variant, `ignis.Tensor.<name>` (the
same object; it binds like a method). `ignis.ops.<name>` lists them all.
"""
import copyreg
import types

from . import _C

ops = types.SimpleNamespace()
_table = _C._op_table()
# Ops whose names start with "_" stay in ignis.ops, except the families torch
# itself calls by their private names (torch._foreach_add_, torch._fused_adamw_).
_PUBLIC_PRIVATE = ("_foreach_", "_fused_")


def install(namespace, tensor_cls):
    for name, (op, is_function, is_method) in _table.items():
        setattr(ops, name, op)
        if is_function and (not name.startswith("_") or name.startswith(_PUBLIC_PRIVATE)):
            namespace[name] = op
        if is_method and name not in tensor_cls.__dict__:
            setattr(tensor_cls, name, op)
    namespace["ops"] = ops
    from . import _tensor
    _tensor._OPS.update({n: e[0] for n, e in _table.items()})
    for dunder, name in _tensor._DUNDER_OPS.items():
        if name in _table:
            setattr(tensor_cls, dunder, _table[name][0])


def get(name):
    return _table[name][0]


def _reduce_op(op):
    # By name, as functions pickle: an op object is one per name and holds
    # nothing else, so a copy (pickle, deepcopy of a module holding one) is
    # the same op.
    return get, (op.__name__,)


copyreg.pickle(_C.Op, _reduce_op)
