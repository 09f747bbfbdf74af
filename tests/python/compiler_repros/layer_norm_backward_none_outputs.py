"""native_layer_norm_backward without weight/bias returns (grad_input, None,
None): capture graph-breaks on it ("a tensor operation returned a tuple"),
so the op cannot be compiled with fullgraph=True (without fullgraph it runs
eagerly). Run from tests/python: python compiler_repros/layer_norm_backward_none_outputs.py"""
import _checkout  # noqa: F401
import ignis

x = ignis.randn(2, 3, 4)
g = ignis.randn(2, 3, 4)
_, mean, rstd = ignis.ops.native_layer_norm(x, [3, 4], None, None, 1e-5)
print(ignis.ops.native_layer_norm_backward(g, x, [3, 4], mean, rstd, None, None))  # eager: fine
f = ignis.compile(lambda *a: ignis.ops.native_layer_norm_backward(*a), backend="inductor",
                  fullgraph=True)
f(g, x, [3, 4], mean, rstd, None, None)  # Unsupported: a tensor operation returned a tuple
