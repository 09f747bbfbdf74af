"""torch's `_check` family: assertions about values and sizes that raise a
chosen exception type, written the way library code states what it expects
(`torch._check(x.size(0) > 0, lambda: "empty batch")`). Under
`ignis.compile` a condition on sizes is a guard like any branch on them; one
on a data-dependent count (`x[mask].shape[0] > 0`) is a runtime check in the
graph (`_runtime_check`, as torch's runtime asserts) that also narrows the
count's range for what follows; another relation of counts (`u0 != 2`,
`u0 <= u1`) is a runtime check of the relation (`_runtime_check_relation`)
that narrows nothing; anything else capture cannot decide breaks the graph
there, and the check runs eagerly.
"""
import ast
import builtins
import functools
import operator

from ._size import SymInt

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to ignis.)")


def _check_with(error_type, cond, message=None):
    """Raises error_type(message()) unless cond is True. cond: a bool (a
    Python bool or a comparison of sizes); message: None or a callable whose
    result's str() is the message (not a string: the message is built only
    when the check fails)."""
    if not isinstance(cond, builtins.bool):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if not (isinstance(error_type, type) and issubclass(error_type, Exception)) or \
            issubclass(error_type, Warning):
        raise TypeError(f"error_type must be an Exception type (not a Warning), got {error_type!r}")
    if cond:
        return
    if message is None:
        text = _DEFAULT_MESSAGE
    elif not callable(message):
        raise TypeError("message must be a callable")
    else:
        text = str(message())
    raise error_type(text)


# The exception each check raises; capture reads it too, to record a check
# on a data-dependent count (Tracer::call_check, tracer_calls.cpp).
_ERRORS = {"_check": RuntimeError, "_check_index": IndexError, "_check_value": ValueError,
           "_check_type": TypeError, "_check_not_implemented": NotImplementedError}


def _check(cond, message=None):
    """RuntimeError unless cond (see _check_with)."""
    _check_with(_ERRORS["_check"], cond, message)


def _check_index(cond, message=None):
    """IndexError unless cond."""
    _check_with(_ERRORS["_check_index"], cond, message)


def _check_value(cond, message=None):
    """ValueError unless cond."""
    _check_with(_ERRORS["_check_value"], cond, message)


def _check_type(cond, message=None):
    """TypeError unless cond."""
    _check_with(_ERRORS["_check_type"], cond, message)


def _check_not_implemented(cond, message=None):
    """NotImplementedError unless cond."""
    _check_with(_ERRORS["_check_not_implemented"], cond, message)


def _check_tensor_all(cond, message=None):
    """RuntimeError unless every element of the bool tensor cond is True."""
    import ignis
    if not isinstance(cond, ignis.Tensor):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype != ignis.bool:
        raise TypeError(f"cond tensor must have dtype ignis.bool, but got {cond.dtype}")
    _check(builtins.bool(cond.all().item()), message)


def _check_is_size(i, message=None, *, max=None):  # noqa: A002  (torch's name)
    """RuntimeError unless i is a valid size: at least 0 (and at most max)."""
    if not isinstance(i, (builtins.int, SymInt)) or isinstance(i, builtins.bool):
        raise TypeError(f"i must be an int, but got {type(i)}")
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _runtime_check(x, dim, low, high, error, text):
    """What capture records for a check on a data-dependent count: x's size
    along dim (x itself where dim is None: a value Tensor.item() read) must
    lie in [low, high] (None: no bound on that side), else
    builtins.<error>(text)."""
    n = x if dim is None else x.shape[dim]
    if (low is not None and n < low) or (high is not None and n > high):
        raise getattr(builtins, error)(text)


_runtime_check._ignis_impure = True  # kept by dead-code elimination (graph/passes/dce.h)


def _runtime_check_relation(xs, dims, names, relation, error, text):
    """What capture records for another relation of data-dependent counts
    (`Ne(u0, 2)`, `u0 <= u1`, `Ne(s0, u0)`: the symbolic spelling): each
    name of the comma-separated `names` is xs[i]'s size along dims[i], or
    xs[i] itself where dims[i] is None (an input's symbolic size); the
    relation must hold, else builtins.<error>(text)."""
    values = {n: x if d is None else x.shape[d] for n, x, d in zip(names.split(","), xs, dims)}
    if not _relation_code(relation)(values):
        raise getattr(builtins, error)(text)


_runtime_check_relation._ignis_impure = True

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLS = {"Mod": operator.mod, "Min": min, "Max": max, "Eq": operator.eq, "Ne": operator.ne}


@functools.lru_cache(maxsize=256)
def _relation_code(relation):
    """A function of {symbol: int} computing `relation`, an expression as
    sym::str prints it (sums, products, `//`, `**`, Mod/Min/Max/Eq/Ne,
    comparisons); nothing else parses, so no text beyond that arithmetic
    runs."""
    def build(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            v = node.value
            return lambda env: v
        if isinstance(node, ast.Name):
            name = node.id
            return lambda env: env[name]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = build(node.operand)
            return lambda env: -a(env)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            f, a, b = _BINARY[type(node.op)], build(node.left), build(node.right)
            return lambda env: f(a(env), b(env))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            f, a, b = _COMPARE[type(node.ops[0])], build(node.left), build(node.comparators[0])
            return lambda env: f(a(env), b(env))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and
                node.func.id in _CALLS and not node.keywords and len(node.args) == 2):
            f, a, b = _CALLS[node.func.id], build(node.args[0]), build(node.args[1])
            return lambda env: f(a(env), b(env))
        raise ValueError(f"not a relation of sizes: {relation!r}")
    return build(ast.parse(relation, mode="eval").body)
