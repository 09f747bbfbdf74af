"""Not a compiler bug (eager's): prod.dim_int's backward over a zero-size dim
raises "narrow(): length must be non-negative." (prod_others narrows the
cumprod to n - 1 = -1 elements); torch returns an empty gradient. The
compiled call raises the same (AOT falls back to eager), so
test_compiler_ops only checks that both raise.
Run from tests/python: python compiler_repros/prod_zero_size_backward_eager.py"""
import _checkout  # noqa: F401
import ignis

x = ignis.randn(2, 0, 4, dtype=ignis.float64, requires_grad=True)
ignis.ops.prod(x, 1).sum().backward()  # RuntimeError: narrow(): length must be non-negative.
