"""ignis._dynamo: torch._dynamo's user-facing names for capture.

Dynamic shapes (docs/dynamic_shapes.md): `mark_dynamic(t, dim)` makes a
dim of `t` symbolic from the first trace, `maybe_mark_dynamic` too (torch
lets it specialize silently; here both are a hint the trace follows),
`mark_static` keeps it static even under automatic dynamic or
`dynamic=True`. They set torch's attributes on the tensor
(`_dynamo_dynamic_indices`, `_dynamo_weak_dynamic_indices`,
`_dynamo_static_indices`; mark_dynamic's min=/max= go to
`_dynamo_dynamic_range` as {dim: (min, max)}), which the tracer reads.
"""
from .. import compiler as _compiler
from . import utils  # noqa: F401  (torch._dynamo.utils.counters)

__all__ = ["mark_dynamic", "maybe_mark_dynamic", "mark_static", "reset", "explain", "config"]


def _dims(t, index):
    from .._tensor import Tensor
    if not isinstance(t, Tensor):
        raise TypeError(f"mark_dynamic expects a Tensor, got {type(t).__name__}")
    dims = list(index) if isinstance(index, (list, tuple, set)) else [index]
    out = []
    for d in dims:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"mark_dynamic: a dim must be an int, got {d!r}")
        if not -t.dim() <= d < t.dim():
            raise IndexError(f"mark_dynamic: dim {d} is out of range for a {t.dim()}-d tensor")
        out.append(d % t.dim())
    return out


def _add(t, attr, dims):
    s = set(getattr(t, attr, ()))
    s.update(dims)
    setattr(t, attr, s)


def mark_dynamic(t, index, *, min=None, max=None):  # noqa: A002
    """Marks dim(s) `index` of `t` dynamic: symbolic from the first compile
    (torch._dynamo.mark_dynamic). Sizes 0 and 1 still specialize. `min` and
    `max` bound the size: the compiled code is guarded to the range (a size
    outside it recompiles) and relies on it (a branch its bounds decide adds
    no guard); a traced size outside its range raises ValueError."""
    for name, v in (("min", min), ("max", max)):
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise TypeError(f"mark_dynamic: {name} must be a non-negative int, got {v!r}")
    if min is not None and max is not None and min > max:
        raise ValueError(f"mark_dynamic: min={min} is greater than max={max}")
    dims = _dims(t, index)
    _add(t, "_dynamo_dynamic_indices", dims)
    if min is not None or max is not None:
        ranges = dict(getattr(t, "_dynamo_dynamic_range", {}))
        ranges.update({d: (min, max) for d in dims})
        t._dynamo_dynamic_range = ranges


def maybe_mark_dynamic(t, index):
    """Like mark_dynamic, as a hint (torch._dynamo.maybe_mark_dynamic)."""
    _add(t, "_dynamo_weak_dynamic_indices", _dims(t, index))


def mark_static(t, index=None):
    """Keeps dim(s) `index` of `t` static (all dims when None) under automatic
    dynamic and dynamic=True (torch._dynamo.mark_static)."""
    dims = list(range(t.dim())) if index is None else _dims(t, index)
    _add(t, "_dynamo_static_indices", dims)


def reset():
    """Drops every capture cache entry (torch._dynamo.reset())."""
    _compiler.reset()


def explain(fn, *args, **kwargs):
    """torch._dynamo.explain: see ignis.compiler.explain."""
    return _compiler.explain(fn, *args, **kwargs)


config = _compiler.config
