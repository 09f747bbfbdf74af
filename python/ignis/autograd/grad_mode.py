"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a function decorator, as in PyTorch. The state
is thread-local and lives in C++ (the dispatcher's Autograd kernel reads it).
"""
import functools
import inspect
import sys

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


def _wrap_generator(ctx_factory, fn):
    """A generator function whose body runs in the mode at each resume (as
    torch's decorators do): the mode is entered around every send, throw and
    close, and the caller's mode holds between them."""
    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException:
                    with ctx_factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """A context manager that also decorates without parentheses:
    `@no_grad` as `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Ops inside do not record history (outputs have requires_grad=False)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Turns recording back on inside a no_grad region."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """set_grad_enabled(mode): takes effect at once (as a function call) and
    restores the previous mode when used as a context manager."""

    def __init__(self, mode):
        self._prev = _C.is_grad_enabled()
        self.mode = bool(mode)
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like no_grad (ignis does not model inference tensors separately)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # @inference_mode without parentheses: mode is the function

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = (_C.is_grad_enabled(), _C.is_inference_mode_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
            _C._set_inference_mode(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev[0])
        _C._set_inference_mode(self._prev[1])
        return False

    def clone(self):
        return self.__class__(self.mode)


def _set_grad_enabled(mode):
    """Sets grad mode. Captured graphs call this where a traced function
    entered or left a no_grad / enable_grad / set_grad_enabled block."""
    _C._set_grad_enabled(mode)


_set_grad_enabled._ignis_impure = True  # DCE keeps it: it changes global state


def _grad_exit(prev, *exc):
    """The __exit__ a resume function receives for a grad-mode `with` block a
    graph break interrupted: restores the mode from before the block."""
    _C._set_grad_enabled(prev)
    return False
