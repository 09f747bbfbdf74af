"""A view (reshape) of a zero-size tensor whose zero is an inner dim ([3, 0]
-> [0, 3]) fused into a kernel: lowering the index remapping divides by the
size-0 dim, sym raises "ValueError: sym: division by zero in floordiv", and
AOT falls back to eager (RuntimeWarning). In test_compiler_ops it shows in
the backward of view(x[0, 3, 4], [2, -1]) and expand(x[0, 3, 4], [5, -1, -1, -1])
returned beside x + 1 (the view's gradient [2, 0] -> [0, 3, 4] is added to
the other). Run from tests/python: python compiler_repros/view_of_inner_zero_size.py"""
import warnings

import _checkout  # noqa: F401
import ignis

warnings.simplefilter("error")  # the fallback is a RuntimeWarning
g, h = ignis.randn(3, 0), ignis.randn(0, 3)
print(ignis.ops.add(ignis.ops.view(g, [0, 3]), h).shape)  # eager: [0, 3]
ignis.compile(lambda a, b: ignis.ops.add(ignis.ops.view(a, [0, 3]), b), backend="inductor")(g, h)
