"""Capture basics: straight-line tensor code, the seed's three examples,
arithmetic and comparisons with constant folding, tensor methods and
properties read as constants, ignis functions and nn.functional, globals,
attributes, indexing and index assignment, no_grad."""
import re

import pytest

from capture_util import fresh_caches  # noqa: F401  (autouse: empty caches per test)
from capture_util import (check_case, close, counting_backend, registry, requires_capture, tensor,
                          x23, xy_grad)

import ignis

pytestmark = requires_capture
CASES, case = registry()

SCALE = 3.0
OFFSET = 2


# --- the seed's examples -------------------------------------------------------------------------
@case(grad=True, inputs=xy_grad)
def case_seed_straight_line(T):
    def func(x, y):
        z = x + y
        return T.relu(z) * 2
    return func


@case(grad=True, inputs=xy_grad)
def case_seed_loop(T):
    def func(x, y):
        z = x + y
        for _ in range(3):
            z += x + y
        return T.relu(z) * 2
    return func


@case()
def case_seed_data_dependent(T):
    def func(x, y):
        z = x + y
        if z.sum() > 0:
            return z
        return T.relu(z) * 2
    return func


# --- arithmetic -----------------------------------------------------------------------------------
@case(grad=True, inputs=xy_grad)
def case_add_sub_mul_div(T):
    def f(x, y):
        return (x + y) * (x - y) / (y * y + 1)
    return f


@case(grad=True, inputs=xy_grad)
def case_scalar_ops(T):
    def f(x, y):
        return 2 * x + y / 4 - 1.5 + (3 - x) ** 2
    return f


@case()
def case_unary_ops(T):
    def f(x, y):
        return -x, abs(y), +x
    return f


@case()
def case_comparisons(T):
    def f(x, y):
        return x < y, x <= y, x > 0.5, x >= y, x == y, x != y
    return f


@case()
def case_floordiv_mod(T):
    def f(x, y):
        return x // 0.75, x % 0.5
    return f


@case()
def case_matmul_operator(T):
    def f(x, y):
        return (x.view(2, 2) @ y.view(2, 2)).sum()
    return f


@case()
def case_python_constant_folding(T):
    def f(x, y):
        a = 3
        b = a * 4 + 1
        c = b // 2 - a ** 2
        return x * b + c
    return f


@case()
def case_float_int_mixed_folding(T):
    def f(x, y):
        k = 2.5 * 4
        n = int(k) + 1
        return x * k + n, n, k
    return f


@case()
def case_bool_folding(T):
    def f(x, y):
        flag = 3 > 2 and not (1 == 2)
        return x + 1 if flag else x - 1
    return f


@case()
def case_inplace_ops_on_locals(T):
    def f(x, y):
        z = x * 1
        z += y
        z *= 2
        z -= x
        return z
    return f


@case()
def case_inplace_methods(T):
    def f(x, y):
        z = x.clone()
        z.add_(y)
        z.mul_(0.5)
        return z
    return f


@case()
def case_bitwise_bool_tensors(T):
    def f(x, y):
        a = x > 0
        b = y > 0
        return a & b, a | b, a ^ b, ~a
    return f


@case()
def case_pow_and_rpow(T):
    def f(x, y):
        return x.abs() ** 0.5, 2 ** x
    return f


# --- tensor properties and methods ---------------------------------------------------------------
@case(inputs=x23)
def case_shape_constant(T):
    def f(x):
        n, m = x.shape
        return x.reshape(m, n) * n + m
    return f


@case(inputs=x23)
def case_size_dim_ndim(T):
    def f(x):
        return x * x.size(0) + x.size()[1] + x.dim() + x.ndim
    return f


@case(inputs=x23)
def case_numel_constant(T):
    def f(x):
        return x.view(x.numel()) * x.numel()
    return f


@case(inputs=x23)
def case_dtype_property(T):
    def f(x):
        if x.dtype == T.float32:
            return x + 1
        return x - 1
    return f


@case(inputs=x23)
def case_device_property(T):
    def f(x):
        return T.zeros(3, device=x.device, dtype=x.dtype) + x.sum()
    return f


@case(inputs=x23)
def case_is_floating_point(T):
    def f(x):
        return x * 2 if x.is_floating_point() else x
    return f


@case(inputs=x23)
def case_requires_grad_property(T):
    def f(x):
        return x + (1 if x.requires_grad else 2)
    return f


@case(inputs=x23)
def case_view_reshape_permute(T):
    def f(x):
        return x.view(3, 2).t().reshape(-1).unsqueeze(0).permute(1, 0).squeeze(1)
    return f


@case(inputs=x23)
def case_transpose_contiguous(T):
    def f(x):
        return x.transpose(0, 1).contiguous().flatten()
    return f


@case(inputs=x23, grad=True)
def case_reductions(T):
    def f(x):
        return x.sum(), x.mean(dim=1), x.amax(dim=0), x.sum(dim=-1, keepdim=True)
    return f


@case(inputs=x23)
def case_max_with_dim(T):
    def f(x):
        values, indices = x.max(dim=1)
        return values, indices
    return f


@case(inputs=x23)
def case_argmax_softmax(T):
    def f(x):
        return x.argmax(dim=-1), x.softmax(dim=-1)
    return f


@case(inputs=x23, grad=True)
def case_elementwise_methods(T):
    def f(x):
        return x.exp() + x.sin() * x.cos() - x.tanh() + x.sigmoid()
    return f


@case(inputs=x23)
def case_clamp_where(T):
    def f(x):
        return T.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5)
    return f


@case(inputs=x23)
def case_expand_repeat(T):
    def f(x):
        return x[:, :1].expand(2, 3) + x.repeat(1, 1)
    return f


@case(inputs=x23)
def case_to_dtype(T):
    def f(x):
        return x.to(T.float64) * 2, x.double(), x.long()
    return f


@case(inputs=x23)
def case_new_tensors_like(T):
    def f(x):
        return T.zeros_like(x) + T.ones_like(x) * x + T.full_like(x, 2.0)
    return f


@case(inputs=x23)
def case_split_chunk(T):
    def f(x):
        a, b, c = x.split(1, dim=1)
        d, e = x.chunk(2, dim=0)
        return a + b + c, d * e
    return f


# --- ignis functions, factories and nn.functional -------------------------------------------------
@case(grad=True, inputs=xy_grad)
def case_torch_functions(T):
    def f(x, y):
        return T.add(x, y), T.mul(x, 2), T.exp(T.neg(y)), T.maximum(x, y)
    return f


@case()
def case_cat_stack(T):
    def f(x, y):
        return T.cat([x, y]), T.stack((x, y), dim=1)
    return f


@case()
def case_factories(T):
    def f(x, y):
        return x + T.ones(4) + T.arange(4) * 0.5 + T.zeros(4, dtype=T.float32)
    return f


@case()
def case_full_and_eye(T):
    def f(x, y):
        return T.full((2, 2), 3.0) @ T.eye(2) + x.view(2, 2)
    return f


@case(grad=True, inputs=xy_grad)
def case_functional_activations(T):
    F = T.nn.functional

    def f(x, y):
        return F.relu(x) + F.gelu(y) + F.silu(x) + F.leaky_relu(y, 0.2)
    return f


@case(grad=True, inputs=xy_grad)
def case_functional_softmax_family(T):
    F = T.nn.functional

    def f(x, y):
        return F.softmax(x, dim=0), F.log_softmax(y, dim=-1)
    return f


@case(grad=True, inputs=lambda T: (tensor(T, 2, 3, requires_grad=True),
                                   tensor(T, 4, 3, seed=1, requires_grad=True)))
def case_functional_linear(T):
    F = T.nn.functional

    def f(x, w):
        return F.linear(x, w)
    return f


@case(inputs=lambda T: (tensor(T, 2, 4), tensor(T, 4, seed=1), tensor(T, 4, seed=2)))
def case_functional_layer_norm(T):
    F = T.nn.functional

    def f(x, w, b):
        return F.layer_norm(x, (4,), w, b)
    return f


@case(inputs=lambda T: (tensor(T, 3, 5), T.tensor([0, 4, 2])))
def case_functional_cross_entropy(T):
    F = T.nn.functional

    def f(logits, target):
        return F.cross_entropy(logits, target)
    return f


@case()
def case_functional_mse(T):
    F = T.nn.functional

    def f(x, y):
        return F.mse_loss(x, y)
    return f


@case(inputs=lambda T: (tensor(T, 1, 2, 4, 3), tensor(T, 1, 2, 4, 3, seed=1),
                        tensor(T, 1, 2, 4, 3, seed=2)))
def case_functional_sdpa(T):
    F = T.nn.functional

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return f


# --- globals and attributes -----------------------------------------------------------------------
@case()
def case_global_constants(T):
    def f(x, y):
        return x * SCALE + OFFSET
    return f


@case()
def case_global_module_attribute(T):
    def f(x, y):
        return T.nn.functional.relu(x) + T.float32.is_floating_point
    return f


class Holder:
    def __init__(self, k):
        self.k = k
        self.inner = {"a": 2}


HOLDER = Holder(1.5)


@case()
def case_object_attribute_read(T):
    def f(x, y):
        return x * HOLDER.k + HOLDER.inner["a"]
    return f


@case()
def case_closure_object_attribute(T):
    h = Holder(0.25)

    def f(x, y):
        return x * h.k - y
    return f


# --- indexing -------------------------------------------------------------------------------------
@case(inputs=lambda T: (tensor(T, 4, 5),), grad=True)
def case_basic_indexing(T):
    def f(x):
        return x[0], x[1:3], x[:, 2], x[..., -1], x[::2, 1::2]
    return f


@case(inputs=lambda T: (tensor(T, 4, 5),))
def case_none_indexing(T):
    def f(x):
        return x[None, :, 1], x[:, None]
    return f


@case(inputs=lambda T: (tensor(T, 4, 5),))
def case_tensor_index(T):
    def f(x):
        idx = T.tensor([2, 0])
        return x[idx], x[:, idx]
    return f


@case(inputs=lambda T: (tensor(T, 4, 5),))
def case_bool_mask_index_assign(T):
    def f(x):
        y = x.clone()
        y[y < 0] = 0.0
        return y
    return f


@case(inputs=lambda T: (tensor(T, 4, 5),))
def case_index_assignment(T):
    def f(x):
        y = x.clone()
        y[0] = 1.0
        y[1:3, 2] = y[1:3, 2] * 10
        y[:, -1] += 5
        return y
    return f


@case(inputs=lambda T: (tensor(T, 4, 5),))
def case_index_with_python_values(T):
    def f(x):
        i = 1
        j = i + 2
        return x[i:j, j - 1]
    return f


# --- grad mode ------------------------------------------------------------------------------------
@case(inputs=xy_grad)
def case_no_grad_block(T):
    def f(x, y):
        with T.no_grad():
            z = x * 2
        return z + y
    return f


@case(inputs=xy_grad)
def case_enable_grad_inside_no_grad(T):
    def f(x, y):
        with T.no_grad():
            a = x + 1
            with T.enable_grad():
                b = y * 3
        return a, b
    return f


@case(inputs=xy_grad)
def case_detach(T):
    def f(x, y):
        return x.detach() * y
    return f


@case(inputs=xy_grad)
def case_is_grad_enabled(T):
    def f(x, y):
        if T.is_grad_enabled():
            return x + y
        return x - y
    return f


# Dynamo's counts (torch 2.13, a counting backend, dynamic=False): (graphs, graph breaks).
EXPECTED = {
    "seed_straight_line": (1, 0),
    "seed_loop": (1, 0),
    "seed_data_dependent": (2, 1),
    "add_sub_mul_div": (1, 0),
    "scalar_ops": (1, 0),
    "unary_ops": (1, 0),
    "comparisons": (1, 0),
    "floordiv_mod": (1, 0),
    "matmul_operator": (1, 0),
    "python_constant_folding": (1, 0),
    "float_int_mixed_folding": (1, 0),
    "bool_folding": (1, 0),
    "inplace_ops_on_locals": (1, 0),
    "inplace_methods": (1, 0),
    "bitwise_bool_tensors": (1, 0),
    "pow_and_rpow": (1, 0),
    "shape_constant": (1, 0),
    "size_dim_ndim": (1, 0),
    "numel_constant": (1, 0),
    "dtype_property": (1, 0),
    "device_property": (1, 0),
    "is_floating_point": (1, 0),
    "requires_grad_property": (1, 0),
    "view_reshape_permute": (1, 0),
    "transpose_contiguous": (1, 0),
    "reductions": (1, 0),
    "max_with_dim": (1, 0),
    "argmax_softmax": (1, 0),
    "elementwise_methods": (1, 0),
    "clamp_where": (1, 0),
    "expand_repeat": (1, 0),
    "to_dtype": (1, 0),
    "new_tensors_like": (1, 0),
    "split_chunk": (1, 0),
    "torch_functions": (1, 0),
    "cat_stack": (1, 0),
    "factories": (1, 0),
    "full_and_eye": (1, 0),
    "functional_activations": (1, 0),
    "functional_softmax_family": (1, 0),
    "functional_linear": (1, 0),
    "functional_layer_norm": (1, 0),
    "functional_cross_entropy": (1, 0),
    "functional_mse": (1, 0),
    "functional_sdpa": (1, 0),
    "global_constants": (1, 0),
    "global_module_attribute": (1, 0),
    "object_attribute_read": (1, 0),
    "closure_object_attribute": (1, 0),
    "basic_indexing": (1, 0),
    "none_indexing": (1, 0),
    "tensor_index": (1, 0),
    "bool_mask_index_assign": (1, 0),
    "index_assignment": (1, 0),
    "index_with_python_values": (1, 0),
    "no_grad_block": (1, 0),
    "enable_grad_inside_no_grad": (1, 0),
    "detach": (1, 0),
    "is_grad_enabled": (1, 0),
}


@pytest.mark.parametrize("c", CASES, ids=repr)
def test_case(c):
    check_case(c, EXPECTED)


# --- the seed's printed graphs --------------------------------------------------------------------
def _capture_print_tabular(gm):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        gm.graph.print_tabular()
    return buf.getvalue()


SEED_STRAIGHT_TABLE = """\
opcode         name    target                                                   args          kwargs
-------------  ------  -------------------------------------------------------  ------------  --------
placeholder    l_x_    L_x_                                                     ()            {}
placeholder    l_y_    L_y_                                                     ()            {}
call_function  z       <built-in function add>                                  (l_x_, l_y_)  {}
call_function  relu    <built-in method relu of type object at 0xADDR>  (z,)          {}
call_function  mul     <built-in function mul>                                  (relu, 2)     {}
output         output  output                                                   ((mul,),)     {}"""

SEED_STRAIGHT_CODE = """\
def forward(self, L_x_ : ignis.Tensor, L_y_ : ignis.Tensor):
    l_x_ = L_x_
    l_y_ = L_y_
    z = l_x_ + l_y_;  l_x_ = l_y_ = None
    relu = ignis.relu(z);  z = None
    mul = relu * 2;  relu = None
    return (mul,)"""


def _norm_table(text):
    """Cells of each row (column widths depend on the printed address)."""
    text = re.sub(r"0x[0-9a-f]+", "0xADDR", text)
    return [re.split(r"  +", line.rstrip()) for line in text.strip("\n").splitlines()
            if not re.fullmatch(r"[- ]+", line)]


def test_seed_straight_line_graph_text():
    graphs = []

    @ignis.compile(backend=counting_backend(graphs))
    def func(x, y):
        z = x + y
        return ignis.relu(z) * 2

    func(ignis.randn(4), ignis.randn(4))
    func(ignis.randn(4), ignis.randn(4))
    assert len(graphs) == 1
    gm = graphs[0]
    assert _norm_table(_capture_print_tabular(gm)) == _norm_table(SEED_STRAIGHT_TABLE)
    assert gm.code.strip() == SEED_STRAIGHT_CODE
    ignis.compiler.reset()


def test_seed_loop_graph_names():
    graphs = []

    @ignis.compile(backend=counting_backend(graphs))
    def func(x, y):
        z = x + y
        for _ in range(3):
            z += x + y
        return ignis.relu(z) * 2

    x, y = ignis.randn(4), ignis.randn(4)
    out = func(x, y)
    ref = ignis.relu((x + y) * 4) * 2
    assert close(out, ref)
    assert len(graphs) == 1
    names = [n.name for n in graphs[0].graph.nodes]
    assert names == ["l_x_", "l_y_", "z", "add_1", "z_1", "add_2", "z_2", "add_3", "z_3",
                     "relu", "mul", "output"]
    targets = [str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"]
    assert targets[:3] == ["<built-in function add>", "<built-in function add>",
                           "<built-in function iadd>"]
    ignis.compiler.reset()


def test_seed_data_dependent_two_graphs():
    graphs = []

    @ignis.compile(backend=counting_backend(graphs))
    def func(x, y):
        z = x + y
        if z.sum() > 0:
            return z
        return ignis.relu(z) * 2

    x = -ignis.ones(4)
    y = -ignis.ones(4)
    out = func(x, y)
    assert close(out, ignis.relu(x + y) * 2)
    assert len(graphs) == 2  # the backend is called twice
    first = [(n.op, n.name) for n in graphs[0].graph.nodes]
    assert first == [("placeholder", "l_x_"), ("placeholder", "l_y_"), ("call_function", "z"),
                     ("call_method", "sum_1"), ("call_function", "gt"), ("output", "output")]
    out_node = list(graphs[0].graph.nodes)[-1]
    assert [a.name for a in out_node.args[0]] == ["gt", "z"]
    second = [(n.op, n.name) for n in graphs[1].graph.nodes]
    assert second == [("placeholder", "l_z_"), ("call_function", "relu"),
                      ("call_function", "mul"), ("output", "output")]
    # The other branch: the resume function for the jump target has no graph
    # of tensor ops (it returns z), so no third backend call.
    out2 = func(ignis.ones(4), ignis.ones(4))
    assert close(out2, ignis.ones(4) * 2)
    assert len(graphs) == 2
    ignis.compiler.reset()
