"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode.

Each is a context manager and a function decorator, as in PyTorch. The state
is thread-local and lives in C++ (the dispatcher's Autograd kernel reads it).
"""
import functools

from .. import _C

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]

is_grad_enabled = _C.is_grad_enabled
is_inference_mode_enabled = _C.is_inference_mode_enabled


class _DecoratorContextManager:
    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Ops inside do not record history (outputs have requires_grad=False)."""

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False


class enable_grad(_DecoratorContextManager):
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
