"""torch's `_check` family: assertions about values and sizes that raise a
chosen exception type, written the way library code states what it expects
(`torch._check(x.size(0) > 0, lambda: "empty batch")`). Under
`ignis.compile` a condition on sizes is a guard like any branch on them; one
on a data-dependent count (`x[mask].shape[0] > 0`) is a runtime check in the
graph (`_runtime_check`, as torch's runtime asserts) that also narrows the
count's range for what follows; anything else capture cannot decide breaks
the graph there, and the check runs eagerly.
"""
import builtins

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
    along dim must lie in [low, high] (high < 0: no bound), else
    builtins.<error>(text)."""
    n = x.shape[dim]
    if n < low or (high >= 0 and n > high):
        raise getattr(builtins, error)(text)


_runtime_check._ignis_impure = True  # kept by dead-code elimination (graph/passes/dce.h)
