"""ignis.autocast: mixed precision regions, torch.autocast's interface.

Inside ``with ignis.autocast("cpu", dtype=ignis.bfloat16):`` the ops that
gain from lower precision (matrix products, convolutions, attention) run in
``dtype`` and the ones that need range or accuracy (losses, and on CUDA
exp/log/softmax/sums, ...) in float32, as torch's lists say. The casting is
done in C++ by the autocast dispatch layer (src/ignis/autocast/); the
policy of each op is one table, src/ignis/ops/autocast_policy.cpp. This
module only switches the thread's state: enabled, dtype and cache flag per
device type, and the nesting depth whose return to 0 clears the weight-cast
cache.
"""
import functools
import threading
import warnings

from .. import _C

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_available"]

is_autocast_available = _C.is_autocast_available


def _supported_dtypes():
    from .. import bfloat16, float16
    return (bfloat16, float16)


class autocast:
    """Context manager and decorator: ops inside run under autocast for
    ``device_type`` ("cpu" or "cuda"). ``dtype`` defaults to the device
    type's autocast dtype (bfloat16 on the CPU, float16 on CUDA); ``enabled=
    False`` turns autocast off inside (also inside an enclosing region);
    ``cache_enabled`` (default: the current setting, on) keeps the casts of
    parameters for the length of the outermost region."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not _C.is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = _C.get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = (_C.is_autocast_cache_enabled() if cache_enabled is None
                               else bool(cache_enabled))
        if enabled:
            enabled = self._check_dtype()
        self._enabled = bool(enabled)

    def _check_dtype(self):
        """Whether autocast can run as asked: warns (and disables it) where
        torch does, raises where torch raises."""
        if self.device == "cuda":
            from .. import cuda, bfloat16
            if not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                              stacklevel=3)
                return False
            if self.fast_dtype == bfloat16 and not cuda.is_bf16_supported():
                raise RuntimeError("Current CUDA Device does not support bfloat16. "
                                   "Please switch dtype to float16.")
            return True
        supported = _supported_dtypes()
        if self.fast_dtype not in supported:
            name = self.device.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling "
                          f"autocast.\n{name} Autocast only supports dtypes of "
                          + ", ".join(str(d) for d in supported) + " currently.", stacklevel=3)
            return False
        return True

    def __enter__(self):
        self._prev = (_C.is_autocast_enabled(self.device), _C.get_autocast_dtype(self.device),
                      _C.is_autocast_cache_enabled())
        _C.set_autocast_enabled(self.device, self._enabled)
        _C.set_autocast_dtype(self.device, self.fast_dtype)
        _C.autocast_increment_nesting()
        _C.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        # Leaving the outermost region drops the cached weight casts.
        if _C.autocast_decrement_nesting() == 0:
            _C.clear_autocast_cache()
        enabled, dtype, cache = self._prev
        _C.set_autocast_enabled(self.device, enabled)
        _C.set_autocast_dtype(self.device, dtype)
        _C.set_autocast_cache_enabled(cache)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(
                f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you "
                "mean to use autocast as a context manager? For example:\n"
                "    with torch.autocast(device_type=...):\n"
                "        output = model(input)")
        # Each call enters a fresh region made from these constants, so that
        # recursive and concurrent calls each restore the state they found,
        # and capture traces the call's `with` as any other autocast block.
        settings = (self.device, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(func)
        def run_under_autocast(*args, **kwargs):
            with autocast(*settings):
                return func(*args, **kwargs)
        return run_under_autocast

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled}, cache_enabled={self._cache_enabled})")


_open_regions = threading.local()


def _enter_autocast(device_type, dtype=None, enabled=True, cache_enabled=None):
    """Enters an autocast region with no ``with`` statement: what a captured
    graph calls where the traced code entered ``ignis.autocast(...)``.
    Returns None (graphs pass no Python objects between nodes); the region
    is kept on a per-thread stack for :func:`_exit_autocast`."""
    ctx = autocast(device_type, dtype, enabled, cache_enabled)
    ctx.__enter__()
    stack = getattr(_open_regions, "stack", None)
    if stack is None:
        stack = _open_regions.stack = []
    stack.append(ctx)


def _exit_autocast(ctx=None):
    """Leaves `ctx`, or the innermost region _enter_autocast opened."""
    if ctx is None:
        ctx = _open_regions.stack.pop()
    ctx.__exit__(None, None, None)


def _leaving_regions_on_error(run_graph):
    """`run_graph` (a backend's callable for a captured graph that opens
    autocast regions), made to exit the regions its run opened if it raises
    between an _enter_autocast and its _exit_autocast, so that autocast is
    left as the call found it."""
    def run(*args, **kwargs):
        stack = getattr(_open_regions, "stack", None)
        if stack is None:
            stack = _open_regions.stack = []
        depth = len(stack)
        try:
            return run_graph(*args, **kwargs)
        except BaseException:
            while len(stack) > depth:
                stack.pop().__exit__(None, None, None)
            raise
    return run


# Captured graphs keep these calls though nothing uses their results.
_enter_autocast._ignis_impure = True
_exit_autocast._ignis_impure = True


def _cast(value, device_type, dtype):
    """Floating tensors on `device_type` (not float64) in `value`, possibly
    nested in lists, tuples and dicts, cast to dtype."""
    from .._tensor import Tensor
    from .. import float64
    if isinstance(value, Tensor):
        eligible = (value.is_floating_point() and value.device.type == device_type
                    and value.dtype != float64)
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [_cast(v, device_type, dtype) for v in value]
        return type(value)(items) if isinstance(value, list) or type(value) is tuple \
            else type(value)(*items)
    return value


def _check_device_type(device_type):
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for the ``forward`` of an ``autograd.Function``. With
    ``cast_inputs`` set and autocast on for ``device_type``, forward runs
    with autocast off on its floating inputs cast to ``cast_inputs``;
    otherwise it runs in the current autocast state. Records that state for
    :func:`custom_bwd`."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def forward_under_policy(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = _C.get_autocast_dtype(device_type)
        on = _C.is_autocast_enabled(device_type)
        if cast_inputs is None or not on:
            ctx._fwd_used_autocast = on and cast_inputs is None
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        with autocast(device_type=device_type, enabled=False):
            return fwd(*_cast(args, device_type, cast_inputs),
                       **_cast(kwargs, device_type, cast_inputs))
    return forward_under_policy


def custom_bwd(bwd=None, *, device_type):
    """Decorator for the ``backward`` of an ``autograd.Function`` whose
    forward is decorated with :func:`custom_fwd`: backward runs in the
    autocast state forward ran in."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def backward_under_policy(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return backward_under_policy


# -- the thread's autocast state, torch's top-level functions -----------------
def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` on this thread (no argument:
    CUDA, torch's legacy meaning)."""
    return _C.is_autocast_enabled("cuda" if device_type is None else device_type)


def set_autocast_enabled(device_type, enabled=None):
    """set_autocast_enabled(device_type, enabled), or the legacy
    set_autocast_enabled(enabled) for CUDA."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _C.set_autocast_enabled(device_type, bool(enabled))


get_autocast_dtype = _C.get_autocast_dtype
set_autocast_dtype = _C.set_autocast_dtype
is_autocast_cache_enabled = _C.is_autocast_cache_enabled
set_autocast_cache_enabled = _C.set_autocast_cache_enabled
clear_autocast_cache = _C.clear_autocast_cache
autocast_increment_nesting = _C.autocast_increment_nesting
autocast_decrement_nesting = _C.autocast_decrement_nesting


def is_autocast_cpu_enabled():
    return _C.is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    _C.set_autocast_enabled("cpu", bool(enabled))


def get_autocast_cpu_dtype():
    return _C.get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    _C.set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    return _C.get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    _C.set_autocast_dtype("cuda", dtype)

