"""The compiler (TorchInductor's role): AOT's core-op graphs become fused C++
kernels plus extern calls through the dispatcher (see docs/compiler.md).

compile_fx(gm, example_inputs) is the forward/backward compiler that the
"inductor" backend hands to aot_autograd."""
from . import config, metrics
from .compile_fx import compile_fx

__all__ = ["compile_fx", "config", "metrics"]
