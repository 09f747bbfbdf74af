"""amax/amin/max.dim with a zero-size result of rank >= 2 (x: [2, 0, 4],
reduced over dim 2): AOT's joint trace fails in the op's backward with
"tracing: a fake tensor of shape [2, 0] was not produced by this trace", so
the graph falls back to eager (RuntimeWarning) instead of compiling. Eager's
backward works; [0, 4] over dim 1 (a [0] result) traces fine.
Run from tests/python: python compiler_repros/amin_zero_size_backward.py"""
import warnings

import _checkout  # noqa: F401
import ignis

warnings.simplefilter("error")  # the fallback is a RuntimeWarning
x = ignis.randn(2, 0, 4, dtype=ignis.float64, requires_grad=True)
ignis.ops.amin(x, [2]).sum().backward()  # eager: fine
print("eager grad", tuple(x.grad.shape))
y = ignis.randn(2, 0, 4, dtype=ignis.float64, requires_grad=True)
ignis.compile(lambda t: ignis.ops.amin(t, [2]), backend="inductor")(y)  # RuntimeWarning
