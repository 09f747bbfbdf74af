"""ignis.jit: the torch.jit names that model code uses to annotate itself
for TorchScript, so that such code runs unchanged on ignis.

ignis has no TorchScript. Code that asks "am I being scripted?" is told no
(is_scripting() and is_tracing() are False), the annotations are identities
(annotate, ignore, unused, export, interface, Final), and script / trace
return what they are given, which then runs eagerly: for a compiled model
use ignis.compile. fork runs its function at once and wraps the result in a
future. save / load raise NotImplementedError: save a state_dict with
ignis.save and load it into the model instead.
"""
import typing
import warnings

__all__ = ["is_scripting", "is_tracing", "annotate", "ignore", "unused", "export",
           "interface", "Final", "script", "trace", "trace_module", "fork", "wait",
           "Future", "save", "load", "isinstance"]

# torch.jit.Final marks module constants; typing.Final says the same to type checkers.
Final = typing.Final

_builtin_isinstance = isinstance


def is_scripting():
    """torch.jit.is_scripting: always False (nothing in ignis is scripted)."""
    return False


def is_tracing():
    """torch.jit.is_tracing: always False (ignis.jit.trace does not record)."""
    return False


def annotate(the_type, the_value):
    """torch.jit.annotate(the_type, the_value): a type hint for the script
    compiler; eagerly, the value itself."""
    return the_value


def ignore(drop=False, **kwargs):
    """torch.jit.ignore: leaves a function to Python. Usable as @ignore and
    as @ignore(drop=True); either way the function is returned unchanged."""
    if callable(drop):  # used bare: @ignore
        return drop

    def decorator(fn):
        return fn
    return decorator


def unused(fn):
    """torch.jit.unused: the function is returned unchanged (eager code may
    still call it)."""
    return fn


def export(fn):
    """torch.jit.export: the method is returned unchanged."""
    return fn


def interface(obj):
    """torch.jit.interface: the class is returned unchanged."""
    return obj


def isinstance(obj, target_type):
    """torch.jit.isinstance: isinstance that also accepts typing containers
    (List[int], Dict[str, Tensor], Optional[...], Tuple[...])."""
    origin = typing.get_origin(target_type)
    if origin is None:
        return _builtin_isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if not _builtin_isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(o, args[0]) for o in obj)
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(o, args[0]) for o in obj)
        return len(obj) == len(args) and all(isinstance(o, a) for o, a in zip(obj, args))
    return True


_warned = set()


def _warn_once(api):
    if api in _warned:
        return
    _warned.add(api)
    warnings.warn(f"ignis.jit.{api}: ignis has no TorchScript; the module or function is "
                  f"returned as it is and runs eagerly (use ignis.compile to compile it)",
                  UserWarning, stacklevel=3)


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """torch.jit.script: returns obj itself, which runs eagerly (warns once)."""
    _warn_once("script")
    return obj


def _as_args(example_inputs):
    if example_inputs is None:
        return ()
    return tuple(example_inputs) if _builtin_isinstance(example_inputs, tuple) \
        else (example_inputs,)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False,
          _module_class=None, _compilation_unit=None, example_kwarg_inputs=None,
          _store_inputs=True):
    """torch.jit.trace: runs func on the example inputs (so that an input it
    cannot take fails here, as tracing would) and returns func itself, which
    runs eagerly (warns once)."""
    _warn_once("trace")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("example_kwarg_inputs or example_inputs should be provided")
    import ignis
    with ignis.no_grad():
        func(*_as_args(example_inputs), **(example_kwarg_inputs or {}))
    return func


def trace_module(mod, inputs, **kwargs):
    """torch.jit.trace_module: runs each named method on its example inputs
    and returns the module itself."""
    _warn_once("trace_module")
    import ignis
    with ignis.no_grad():
        for name, args in inputs.items():
            getattr(mod, name)(*_as_args(args))
    return mod


class Future:
    """What fork returns: the result, already computed; wait() gives it
    (torch.jit.Future's wait / value / done)."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """torch.jit.fork: runs func(*args, **kwargs) now (eagerly, on this
    thread) and returns a Future holding the result."""
    return Future(func(*args, **kwargs))


def wait(future):
    """torch.jit.wait: the result of a fork."""
    return future.wait()


def save(m, f, _extra_files=None):
    raise NotImplementedError("ignis.jit.save: ignis has no TorchScript archives; save the "
                              "model's weights with ignis.save(model.state_dict(), f) and load "
                              "them with model.load_state_dict(ignis.load(f))")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    raise NotImplementedError("ignis.jit.load: ignis has no TorchScript archives; build the "
                              "model in Python and load weights saved with ignis.save: "
                              "model.load_state_dict(ignis.load(f))")

