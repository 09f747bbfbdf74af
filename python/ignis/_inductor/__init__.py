"""The compiler (TorchInductor's role): AOT's core-op graphs become fused C++
kernels plus extern calls through the dispatcher (see docs/compiler.md).

compile_fx(gm, example_inputs) is the forward/backward compiler that the
"inductor" backend hands to aot_autograd."""
from . import config, metrics
from .compile_fx import compile_fx


def wait_for_background_compiles():
    """Blocks until the compiler's background work in this process (the
    precompiled header a cold cache builds after the first compile) has
    ended. Compiled code is usable at once; this is for measuring it on a
    quiet machine right after a cold compile (bench/compiled.py)."""
    from .. import _C
    _C._wait_for_background_compiles()


__all__ = ["compile_fx", "config", "metrics", "wait_for_background_compiles"]
