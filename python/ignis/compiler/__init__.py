"""ignis.compiler: the backend interface.

A backend is any callable `backend(graph_module, example_inputs)` returning
a callable that computes the graph's outputs from its inputs. Named
backends live in a registry (`register_backend`, `lookup_backend`,
`list_backends`, as torch._dynamo names them); "eager" runs the
GraphModule's generated forward unchanged.
"""

_BACKENDS = {}
_TAGS = {}


class InvalidBackend(RuntimeError):
    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `ignis.compiler.list_backends()` for "
                         "available backends.")


def register_backend(compiler_fn=None, name=None, tags=()):
    """Registers a backend under `name` (default: the function's name).

    Usable as @register_backend, @register_backend(name="x") or
    register_backend(fn, name="x"). Re-registering a name raises.
    """
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    if not callable(compiler_fn):
        raise TypeError(f"register_backend expects a callable, got {type(compiler_fn).__name__}")
    name = name or compiler_fn.__name__
    if name in _BACKENDS and _BACKENDS[name] is not compiler_fn:
        raise RuntimeError(f"duplicate name: {name}")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


def lookup_backend(compiler_fn):
    """A backend by name, or the callable itself."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise InvalidBackend(compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise InvalidBackend(compiler_fn)
    return compiler_fn


def list_backends(exclude_tags=("debug", "experimental")):
    """Sorted names of the registered backends, minus those with excluded tags."""
    excluded = set(exclude_tags or ())
    return sorted(n for n in _BACKENDS if not excluded & set(_TAGS[n]))


@register_backend(name="eager")
def eager(gm, example_inputs, **kwargs):
    """Runs the graph as captured: the GraphModule's generated forward."""
    if kwargs:
        raise TypeError(f"eager backend takes no options, got {sorted(kwargs)}")
    return gm.forward


@register_backend(name="eager_interpreter", tags=("debug",))
def eager_interpreter(gm, example_inputs):
    """Runs the graph node by node through ignis.fx.Interpreter (debugging)."""
    from ..fx import Interpreter

    def run(*args):
        return Interpreter(gm).run(*args)
    return run


__all__ = ["register_backend", "lookup_backend", "list_backends", "InvalidBackend"]
