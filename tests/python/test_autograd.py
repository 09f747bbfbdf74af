"""Eager autograd: derivatives of every differentiable op, checked by a float64
finite-difference gradcheck and against torch's gradients on the same inputs,
and the engine's behaviours (accumulation, retain_graph, create_graph,
autograd.grad, grad modes, detach, in-place rules, errors).
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

F_I = ignis.nn.functional


def _inputs(shapes, rng, positive):
    arrs = []
    for s in shapes:
        a = rng.standard_normal(s)
        if positive:
            a = np.abs(a) + 0.5
        arrs.append(np.asarray(a, dtype=np.float64))
    return arrs


def check(fn, shapes, *, positive=False, gradcheck=True, seed=0, torch_fn=None):
    """fn(module, *tensors) is run on ignis and torch: the gradients of every
    input must agree, and ignis's must pass a finite-difference gradcheck."""
    rng = np.random.default_rng(seed)
    arrs = _inputs(shapes, rng, positive)
    xi = [ignis.from_numpy(a.copy()).requires_grad_() for a in arrs]
    out = fn(ignis, *xi)
    go = np.asarray(rng.standard_normal(tuple(out.shape)))
    out.backward(ignis.from_numpy(go.copy()))
    if torch is not None:
        xt = [torch.from_numpy(a.copy()).requires_grad_() for a in arrs]
        ot = (torch_fn or fn)(torch, *xt)
        assert tuple(ot.shape) == tuple(out.shape)
        np.testing.assert_allclose(out.detach().numpy(), ot.detach().numpy(), rtol=1e-6,
                                   atol=1e-8)
        ot.backward(torch.from_numpy(go.copy()))
        for i, (a, b) in enumerate(zip(xi, xt)):
            if b.grad is None:
                assert a.grad is None or not np.any(a.grad.numpy()), f"input {i}"
                continue
            assert a.grad is not None, f"input {i} got no gradient"
            assert a.grad.dtype == ignis.float64
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-8,
                                       err_msg=f"gradient of input {i}")
    if gradcheck:
        fresh = [ignis.from_numpy(a.copy()).requires_grad_() for a in arrs]
        assert ignis.autograd.gradcheck(lambda *t: fn(ignis, *t), fresh)


def T(m, arr):
    return m.from_numpy(np.asarray(arr))


# ---- pointwise --------------------------------------------------------------------------
UNARY = ["neg", "abs", "exp", "exp2", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh",
         "tanh", "asinh", "sigmoid", "relu", "erf", "erfc", "reciprocal", "square", "frac"]
UNARY_POS = ["log", "log2", "log10", "log1p", "sqrt", "rsqrt", "lgamma", "digamma"]
UNARY_UNIT = ["asin", "acos", "atanh", "erfinv"]
UNARY_ZERO = ["floor", "ceil", "round", "trunc", "sign"]


@pytest.mark.parametrize("name", UNARY + UNARY_POS)
def test_unary(name):
    check(lambda m, x: getattr(m, name)(x), [(2, 3)], positive=name in UNARY_POS)


@pytest.mark.parametrize("name", UNARY_UNIT)
def test_unary_unit_domain(name):
    check(lambda m, x: getattr(m, name)(x * 0.3), [(2, 3)])


def test_acosh_above_one():
    check(lambda m, x: m.acosh(x + 1.5), [(2, 3)], positive=True)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_polygamma(n):
    check(lambda m, x: m.polygamma(n, x), [(2, 3)], positive=True)


@pytest.mark.parametrize("name", UNARY_ZERO)
def test_unary_piecewise_constant(name):
    check(lambda m, x: getattr(m, name)(x * 3), [(2, 3)], gradcheck=False)


@pytest.mark.parametrize("name", ["silu", "mish", "gelu", "softplus", "logsigmoid", "elu",
                                  "leaky_relu", "relu6", "hardtanh"])
def test_activations(name):
    check(lambda m, x: getattr(m.nn.functional, name)(x * 2), [(2, 3)])


def test_gelu_tanh():
    check(lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), [(2, 3)])


BINARY = {
    "add": lambda m, a, b: m.add(a, b, alpha=2),
    "sub": lambda m, a, b: m.sub(a, b, alpha=0.5),
    "rsub": lambda m, a, b: 2.0 - a + m.rsub(a, b, alpha=2),
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / (b.abs() + 1),
    "pow": lambda m, a, b: (a.abs() + 0.5) ** b,
    "pow_scalar": lambda m, a, b: a ** 2 + 2 ** b + (a.abs() + 1) ** 0.5,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "minimum": lambda m, a, b: m.minimum(a, b),
    "max_other": lambda m, a, b: m.max(a, b) + m.min(a, b),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "fmod": lambda m, a, b: m.fmod(a, b.abs() + 1),
    "remainder": lambda m, a, b: m.remainder(a, b.abs() + 1),
    "copysign": lambda m, a, b: m.copysign(a, b),
}


@pytest.mark.parametrize("name", list(BINARY))
@pytest.mark.parametrize("shapes", [[(2, 3), (2, 3)], [(2, 3), (3,)], [(2, 1), (1, 3)],
                                    [(2, 3), ()]])
def test_binary_broadcast(name, shapes):
    check(BINARY[name], shapes, gradcheck=name not in ("fmod", "remainder"))


def test_binary_with_python_number_and_int_tensor():
    check(lambda m, a: a * 3 + 1 - 2 / a + a * m.tensor([1, 2, 3]), [(2, 3)])


def test_noncontiguous_inputs():
    check(lambda m, a, b: a.t() * b, [(3, 2), (2, 3)])
    check(lambda m, a: a[:, ::2].exp(), [(2, 5)])


def test_zero_dim_and_empty():
    check(lambda m, a, b: a * b + a.exp(), [(), ()])
    xi = ignis.zeros(0, 3, dtype=ignis.float64, requires_grad=True)
    (xi.exp() * 2).sum().backward()
    assert tuple(xi.grad.shape) == (0, 3)


TERNARY = {
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "clamp": lambda m, a, b: a.clamp(-0.5, 0.5) + a.clamp(min=b) + a.clamp(max=0.3),
    "clamp_min_max": lambda m, a, b: m.clamp_min(a, 0.1) + m.clamp_max(a, b),
    "lerp": lambda m, a, b: m.lerp(a, b, m.sigmoid(b)),
    "addcmul": lambda m, a, b: m.addcmul(a, a, b, value=0.5),
    "addcdiv": lambda m, a, b: m.addcdiv(a, a, b.abs() + 1, value=2),
    "masked_fill": lambda m, a, b: a.masked_fill(b > 0, 2.0),
}


@pytest.mark.parametrize("name", list(TERNARY))
def test_ternary(name):
    check(TERNARY[name], [(2, 3), (3,)])


# ---- views and conversions -------------------------------------------------------------
VIEWS = {
    "view": lambda m, a: a.view(3, 2) * 1,
    "reshape": lambda m, a: a.t().reshape(-1),
    "permute": lambda m, a: a.permute(1, 0).unsqueeze(0).expand(2, 3, 2),
    "transpose": lambda m, a: a.transpose(0, 1).contiguous(),
    "squeeze": lambda m, a: a.unsqueeze(1).squeeze(1).squeeze(),
    "select_slice": lambda m, a: a[1] * 2 + a[0, ::2].sum(),
    "negative_index": lambda m, a: a[-1, 1:],
    "narrow": lambda m, a: a.narrow(1, 1, 2),
    "split": lambda m, a: a.split([1, 2], dim=1)[1] * 3,
    "chunk": lambda m, a: a.chunk(3, dim=1)[2],
    "unbind": lambda m, a: a.unbind(1)[2],
    "diagonal": lambda m, a: a.diagonal(),
    "as_strided": lambda m, a: a.as_strided((2, 2), (1, 2), 1),  # overlapping reads
    "as_strided_t": lambda m, a: a.t().as_strided((3, 2), (1, 3)),
    "flatten": lambda m, a: a.flatten().unflatten(0, (3, 2)).movedim(0, 1),
    "expand_as": lambda m, a: a[:1].expand_as(a) * a,
    "to_float32": lambda m, a: a.to(m.float32).double() * 1,
    "clone": lambda m, a: a.clone() * 2,
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views(name):
    check(VIEWS[name], [(2, 3)], gradcheck=name != "to_float32")


def test_inplace_view_ops_on_non_leaf():
    check(lambda m, a: (a * 1).t_() * 2, [(2, 3)])
    check(lambda m, a: (a * 1).unsqueeze_(0).squeeze_(0), [(2, 3)])


def test_copy_fill_zero_inplace():
    def f(m, a, b):
        c = a * 1
        c.copy_(b)
        d = a * 2
        d.zero_()
        return c + d + a
    check(f, [(2, 3), (3,)])


# ---- reductions ------------------------------------------------------------------------
REDUCTIONS = {
    "sum": lambda m, a: a.sum(),
    "sum_dim": lambda m, a: a.sum(1),
    "sum_dims_keep": lambda m, a: a.sum((0, 1), keepdim=True),
    "mean": lambda m, a: a.mean(),
    "mean_dim": lambda m, a: a.mean(-1, keepdim=True),
    "prod": lambda m, a: a.prod(),
    "prod_dim": lambda m, a: a.prod(1),
    "amax": lambda m, a: a.amax(1) + a.amin(0).sum(),
    "max_min": lambda m, a: a.max() + a.min(),
    "max_dim": lambda m, a: a.max(1)[0] + a.min(0, keepdim=True)[0].sum(),
    "var": lambda m, a: a.var() + a.var(1).sum() + a.var(1, correction=0, keepdim=True).sum(),
    "std": lambda m, a: a.std() + a.std(0).sum(),
    "var_mean": lambda m, a: m.var_mean(a, 1)[0] * 2 + m.var_mean(a, 1)[1],
    "std_mean": lambda m, a: m.std_mean(a)[0] + m.std_mean(a)[1],
    "logsumexp": lambda m, a: a.logsumexp(1),
    "norm": lambda m, a: a.norm() + a.norm(1, dim=1).sum() + a.norm(3, dim=0).sum(),
    "norm_inf": lambda m, a: a.norm(float("inf")),
    "cumsum": lambda m, a: a.cumsum(1),
    "cumprod": lambda m, a: a.cumprod(0),
    "nansum": lambda m, a: a.nansum(),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name):
    check(REDUCTIONS[name], [(2, 3)])


def test_cumprod_with_zero():
    def f(m, a):
        return (a * m.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]], dtype=m.float64)).cumprod(1)
    check(f, [(2, 3)])


def test_prod_with_zero():
    def f(m, a):
        return (a * m.tensor([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]], dtype=m.float64)).prod(1)
    check(f, [(2, 3)])


# ---- indexing, joining, padding --------------------------------------------------------
INDEX = {
    "cat": lambda m, a, b: m.cat([a, b], 0),
    "stack": lambda m, a, b: m.stack([a, b], 1),
    "hstack": lambda m, a, b: m.hstack([a, b]),
    "repeat": lambda m, a, b: a.repeat(2, 1, 2).sum(0)[:, 1:4] + b,
    "tile": lambda m, a, b: a.tile((2, 1)),
    "index_select": lambda m, a, b: a.index_select(1, T(m, [2, 0, 2])),
    "gather": lambda m, a, b: a.gather(1, T(m, [[0, 2], [1, 1]])),
    "scatter": lambda m, a, b: a.scatter(1, T(m, [[0, 1, 2], [2, 1, 0]]), b),
    "scatter_add": lambda m, a, b: a.scatter_add(1, T(m, [[0, 0, 2], [2, 2, 0]]), b),
    "index_add": lambda m, a, b: a.index_add(0, T(m, [1, 1]), b, alpha=2),
    "index_copy": lambda m, a, b: a.index_copy(0, T(m, [1, 0]), b),
    "tril_triu": lambda m, a, b: a.tril() + b.triu(1),
    "flip_roll": lambda m, a, b: a.flip(0).roll(1, 1) + b.roll(2),
    "pad": lambda m, a, b: m.nn.functional.pad(a, (1, 2, 0, 1)) * 1,
    "pad_crop": lambda m, a, b: m.nn.functional.pad(a, (-1, 0)),
    "advanced_index": lambda m, a, b: a[T(m, [1, 0, 1])] + b[:, [2, 0]].sum(),
    "bool_mask": lambda m, a, b: a[b > 0],
    "take": lambda m, a, b: m.take(a, T(m, [0, 5, 5])),
    "take_along_dim": lambda m, a, b: m.take_along_dim(a, T(m, [[0], [2]]), 1),
    "index_put": lambda m, a, b: a.index_put((T(m, [0, 1]),), b[0]),
    "index_put_acc": lambda m, a, b: a.index_put((T(m, [1, 1]),), b[0], accumulate=True),
    "scatter_reduce_sum": lambda m, a, b: a.scatter_reduce(1, T(m, [[0, 0, 2], [1, 1, 1]]), b,
                                                           "sum", include_self=False),
    "scatter_reduce_mean": lambda m, a, b: a.scatter_reduce(1, T(m, [[0, 0, 2], [1, 1, 1]]), b,
                                                            "mean"),
    "scatter_reduce_amax": lambda m, a, b: a.scatter_reduce(1, T(m, [[0, 0, 2], [1, 1, 1]]), b,
                                                            "amax"),
    "scatter_reduce_amin": lambda m, a, b: a.scatter_reduce(1, T(m, [[0, 0, 2], [1, 1, 1]]), b,
                                                            "amin", include_self=False),
}


@pytest.mark.parametrize("name", list(INDEX))
def test_index(name):
    check(INDEX[name], [(2, 3), (2, 3)])


# ---- matrix ------------------------------------------------------------------------------
MATRIX = {
    "mm": (lambda m, a, b: m.mm(a, b), [(2, 3), (3, 4)]),
    "bmm": (lambda m, a, b: m.bmm(a, b), [(2, 2, 3), (2, 3, 2)]),
    "addmm": (lambda m, s, a, b: m.addmm(s, a, b, beta=0.5, alpha=2), [(4,), (2, 3), (3, 4)]),
    "baddbmm": (lambda m, s, a, b: m.baddbmm(s, a, b, beta=2, alpha=0.5),
                [(2, 4), (2, 2, 3), (2, 3, 4)]),
    "dot": (lambda m, a, b: m.dot(a, b), [(3,), (3,)]),
    "mv": (lambda m, a, b: m.mv(a, b), [(2, 3), (3,)]),
    "matmul_3d_1d": (lambda m, a, b: m.matmul(a, b), [(2, 2, 3), (3,)]),
    "matmul_1d_3d": (lambda m, a, b: m.matmul(a, b), [(2,), (2, 2, 3)]),
    "matmul_bcast": (lambda m, a, b: a @ b, [(2, 1, 2, 3), (2, 3, 2)]),
    "outer": (lambda m, a, b: m.outer(a, b), [(3,), (2,)]),
    "linear": (lambda m, x, w, b: m.nn.functional.linear(x, w, b), [(2, 3), (4, 3), (4,)]),
}


@pytest.mark.parametrize("name", list(MATRIX))
def test_matrix(name):
    fn, shapes = MATRIX[name]
    check(fn, shapes)


# ---- nn --------------------------------------------------------------------------------
TGT = [1, 0, 3, 3]
TGT_IGN = [1, -100, 3, 0]
NN = {
    "softmax": (lambda m, a: m.nn.functional.softmax(a, 1), [(2, 4)]),
    "log_softmax": (lambda m, a: m.nn.functional.log_softmax(a, -1), [(2, 4)]),
    "layer_norm": (lambda m, a, w, b: m.nn.functional.layer_norm(a, (4,), w, b),
                   [(2, 4), (4,), (4,)]),
    "layer_norm_2d": (lambda m, a: m.nn.functional.layer_norm(a, (2, 3)), [(2, 2, 3)]),
    "rms_norm": (lambda m, a, w: m.nn.functional.rms_norm(a, (4,), w), [(2, 4), (4,)]),
    "normalize": (lambda m, a: m.nn.functional.normalize(a), [(2, 4)]),
    "cosine_similarity": (lambda m, a, b: m.nn.functional.cosine_similarity(a, b),
                          [(2, 4), (2, 4)]),
    "glu": (lambda m, a: m.nn.functional.glu(a, 1), [(2, 4)]),
    "cross_entropy": (lambda m, a: m.nn.functional.cross_entropy(a, T(m, TGT)), [(4, 5)]),
    "cross_entropy_weight_sum": (
        lambda m, a: m.nn.functional.cross_entropy(
            a, T(m, TGT_IGN), weight=m.arange(1.0, 6.0, dtype=m.float64), reduction="sum"),
        [(4, 5)]),
    "cross_entropy_smoothing": (
        lambda m, a: m.nn.functional.cross_entropy(
            a, T(m, TGT_IGN), weight=m.arange(1.0, 6.0, dtype=m.float64),
            label_smoothing=0.1), [(4, 5)]),
    "cross_entropy_none": (
        lambda m, a: m.nn.functional.cross_entropy(a, T(m, TGT_IGN), label_smoothing=0.2,
                                                   reduction="none"), [(4, 5)]),
    "cross_entropy_probs": (
        lambda m, a, b: m.nn.functional.cross_entropy(a, m.nn.functional.softmax(b, 1)),
        [(4, 5), (4, 5)]),
    "cross_entropy_3d": (
        lambda m, a: m.nn.functional.cross_entropy(a, T(m, [[0, 2], [1, 1]])), [(2, 3, 2)]),
    "nll_loss": (lambda m, a: m.nn.functional.nll_loss(a, T(m, TGT_IGN)), [(4, 5)]),
    "mse_loss": (lambda m, a, b: m.nn.functional.mse_loss(a, b), [(2, 3), (2, 3)]),
    "l1_loss": (lambda m, a, b: m.nn.functional.l1_loss(a, b, reduction="sum"),
                [(2, 3), (2, 3)]),
    "smooth_l1_loss": (lambda m, a, b: m.nn.functional.smooth_l1_loss(a, b, beta=0.5),
                       [(2, 3), (2, 3)]),
    "huber_loss": (lambda m, a, b: m.nn.functional.huber_loss(a, b, delta=0.5),
                   [(2, 3), (2, 3)]),
    "bce": (lambda m, a, b: m.nn.functional.binary_cross_entropy(m.sigmoid(a), m.sigmoid(b)),
            [(2, 3), (2, 3)]),
    "bce_logits": (lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(
        a, m.sigmoid(b), pos_weight=m.tensor([1.0, 2.0, 3.0], dtype=m.float64)),
        [(2, 3), (2, 3)]),
    "kl_div": (lambda m, a, b: m.nn.functional.kl_div(
        m.nn.functional.log_softmax(a, 1), m.nn.functional.softmax(b, 1),
        reduction="batchmean"), [(2, 3), (2, 3)]),
    "embedding": (lambda m, w: m.nn.functional.embedding(T(m, [[0, 2], [2, 2]]), w),
                  [(3, 4)]),
    "embedding_padding": (lambda m, w: m.nn.functional.embedding(T(m, [[0, 2], [2, 1]]), w,
                                                                 padding_idx=1), [(3, 4)]),
    "sdpa_causal": (lambda m, q, k, v: m.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), [(1, 3, 2), (1, 3, 2), (1, 3, 2)]),
}


@pytest.mark.parametrize("name", list(NN))
def test_nn(name):
    fn, shapes = NN[name]
    # The padding row is read by the forward but gets no gradient (by design).
    check(fn, shapes, gradcheck=name != "embedding_padding")


def test_dropout_gradient_is_mask_scaled():
    ignis.manual_seed(0)
    x = ignis.ones(50, dtype=ignis.float64, requires_grad=True)
    y = ignis.nn.functional.dropout(x, 0.4, training=True)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.6, 0.0))


# ---- engine behaviours -------------------------------------------------------------------
def leaf(vals=(1.0, 2.0, 3.0)):
    return ignis.tensor(list(vals), dtype=ignis.float64, requires_grad=True)


def test_requires_grad_flags_and_repr():
    x = leaf()
    assert x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    y = x * 2 + 1
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "AddBackward0" and type(y.grad_fn).__name__ == "AddBackward0"
    assert "grad_fn=<AddBackward0>" in repr(y)
    assert "requires_grad=True" in repr(x)
    nxt = y.grad_fn.next_functions
    assert nxt[0][0].name() == "MulBackward0"
    acc = nxt[0][0].next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    assert ignis.zeros(2, requires_grad=True).requires_grad
    assert ignis.tensor([1.0], requires_grad=True).requires_grad
    assert not ignis.ones(2).requires_grad


def test_non_float_outputs_never_require_grad():
    x = leaf()
    assert not (x > 1).requires_grad
    assert not x.argmax().requires_grad
    assert not x.max(0)[1].requires_grad
    assert not (ignis.tensor([1, 2]) * 2).requires_grad
    assert not ignis.zeros_like(x).requires_grad


def test_accumulation_across_backward_calls():
    x = leaf()
    (x * x).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1, 2, 3.0]) + 3)
    x.grad = None
    (x + x).sum().backward()  # the same gradient reaches x twice
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


def test_shared_gradient_is_not_aliased():
    a, b = leaf(), leaf()
    (a + b).sum().backward()
    a.grad.mul_(10)
    np.testing.assert_allclose(b.grad.numpy(), [1, 1, 1])


def test_retain_graph_and_freed_graph_error():
    x = leaf()
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.array([1, 2, 3.0]))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x + 1).sum()  # nothing saved: a second backward is fine, as in torch
    z.backward()
    z.backward()


def test_backward_errors():
    x = leaf()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        ignis.tensor([1.0]).backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype"):
        ignis.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ignis.ones(2, dtype=ignis.float64))
    (x * 2).backward(ignis.ones(3, dtype=ignis.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


def test_create_graph_double_backward():
    x = leaf()
    y = (x ** 3).sum()
    (g,) = ignis.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([1, 4, 9.0]))
    assert g.requires_grad
    (g2,) = ignis.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g2.numpy(), 6 * np.array([1, 2, 3.0]))
    # backward(create_graph=True) leaves a differentiable .grad
    x2 = leaf()
    (x2.sin() * x2).sum().backward(create_graph=True)
    gg = x2.grad
    assert gg.requires_grad
    (h,) = ignis.autograd.grad(gg.sum(), x2)
    xn = np.array([1, 2, 3.0])
    np.testing.assert_allclose(h.numpy(), 2 * np.cos(xn) - xn * np.sin(xn))


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "softmax", "layer_norm", "mm", "div",
                                  "cross_entropy"])
def test_gradgradcheck(name):
    fns = {
        "tanh": (lambda x: x.tanh(), [(3,)]),
        "sigmoid": (lambda x: x.sigmoid() * x, [(3,)]),
        "softmax": (lambda x: F_I.softmax(x, 0), [(3,)]),
        "layer_norm": (lambda x, w: F_I.layer_norm(x, (3,), w), [(2, 3), (3,)]),
        "mm": (lambda a, b: a @ b, [(2, 2), (2, 2)]),
        "div": (lambda a, b: a / (b * b + 1), [(3,), (3,)]),
        "cross_entropy": (lambda a: F_I.cross_entropy(a, ignis.tensor([1, 0])), [(2, 3)]),
    }
    fn, shapes = fns[name]
    rng = np.random.default_rng(1)
    xs = [ignis.from_numpy(rng.standard_normal(s)).requires_grad_() for s in shapes]
    assert ignis.autograd.gradgradcheck(fn, xs)


def test_autograd_grad_allow_unused_and_no_accumulation():
    x, w = leaf(), leaf()
    gx, gw = ignis.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2, 2, 2])
    assert gw is None and x.grad is None
    with pytest.raises(RuntimeError, match="not have been used in the graph"):
        ignis.autograd.grad((x * 2).sum(), [x, w])
    # a non-leaf input, and grad_outputs
    h = x * x
    (gh,) = ignis.autograd.grad(h * 3, h, grad_outputs=ignis.ones(3, dtype=ignis.float64))
    np.testing.assert_allclose(gh.numpy(), [3, 3, 3])


def test_retain_grad_on_non_leaf():
    x = leaf()
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 2 * h.detach().numpy())
    assert h.retains_grad


def test_grad_modes():
    x = leaf()
    with ignis.no_grad():
        assert not (x * 2).requires_grad
        assert not ignis.is_grad_enabled()
        with ignis.enable_grad():
            assert (x * 2).requires_grad
    assert ignis.is_grad_enabled()

    @ignis.no_grad()
    def f():
        return x * 2
    assert not f().requires_grad
    with ignis.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    ignis.set_grad_enabled(False)
    assert not ignis.is_grad_enabled()
    ignis.set_grad_enabled(True)
    with ignis.inference_mode():
        assert not (x * 2).requires_grad and ignis.is_inference_mode_enabled()
    assert not ignis.is_inference_mode_enabled()
    with ignis.no_grad():
        x.add_(1)  # in-place on a leaf is allowed without grad mode
    np.testing.assert_allclose(x.detach().numpy(), [2, 3, 4])


@pytest.mark.parametrize("libname", ["ignis", "torch"])
def test_grad_mode_decorators_bare_and_on_generators(libname):
    # @no_grad / @enable_grad / @inference_mode decorate without parentheses,
    # and a decorated generator runs its body in the mode at every resume.
    if libname == "torch" and torch is None:
        pytest.skip("torch not installed")
    lib = ignis if libname == "ignis" else torch
    x = lib.ones(2, requires_grad=True)

    @lib.no_grad
    def bare(t):
        return t * 2

    @lib.inference_mode
    def bare_inf(t):
        return t * 2

    @lib.enable_grad
    def bare_enable(t):
        return t * 2

    @lib.no_grad()
    def gen(t):
        for _ in range(2):
            yield (t * 2).requires_grad, lib.is_grad_enabled()

    assert not bare(x).requires_grad and bare.__name__ == "bare"
    assert not bare_inf(x).requires_grad
    with lib.no_grad():
        assert bare_enable(x).requires_grad
    it = gen(x)
    assert next(it) == (False, False)
    assert lib.is_grad_enabled()  # the caller's mode between resumes
    assert list(it) == [(False, False)]
    assert isinstance(lib.no_grad(), lib.no_grad)
    assert isinstance(lib.inference_mode(False), lib.inference_mode)


def test_detach():
    x = leaf()
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d.add_(1)  # shares data (and version counter) with y
    np.testing.assert_allclose(y.detach().numpy(), [3, 5, 7])
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None


def test_requires_grad_setter():
    x = ignis.ones(2, dtype=ignis.float64)
    x.requires_grad = True
    assert x.requires_grad
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad = False


def test_inplace_rules():
    x = leaf()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad is being used in "
                                           "an in-place operation"):
        x.add_(1)
    a = x * 1
    b = a.sin()  # saves a
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*SinBackward0"):
        b.sum().backward()
    a = x * 1
    c = a + 1  # saves nothing: an in-place change of a is fine
    e = a.exp()  # saves its result, not a
    a.mul_(2)
    (c.sum() + e.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 + np.exp([1, 2, 3.0]))


def test_inplace_history_is_rebased():
    x = leaf()
    y = x * 1
    y.mul_(x).add_(1).exp_()
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    xn = np.array([1, 2, 3.0])
    np.testing.assert_allclose(x.grad.numpy(), np.exp(xn * xn + 1) * 2 * xn)


def _setitem_row(m, a, b):
    c = a * 1
    c[0] = b[1]
    return c


def _mul_view(m, a, b):
    c = a * 2
    v = c[:, 1:]
    v.mul_(b[:, :2])
    return c * v.sum()


def _into_buffer(m, a, b):
    buf = m.zeros(2, 3, dtype=m.float64)  # requires no grad until written into
    buf[1] = a[0] * 3
    buf[:, 0].add_(b[:, 1])
    return buf.exp()


@pytest.mark.parametrize("fn", [_setitem_row, _mul_view, _into_buffer])
def test_inplace_on_views_copy_slices(fn):
    check(fn, [(2, 3), (2, 3)])


def test_inplace_on_view_errors():
    x = leaf()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].mul_(2)
    c = x.clone()
    c[1:].exp_()  # saves its result ...
    c[:1].mul_(2)  # ... which shares the version counter of c's storage
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


@pytest.mark.parametrize("libname", ["ignis", "torch"])
def test_ops_without_a_derivative_read_no_history_of_a_stale_no_grad_view(libname):
    # A no-grad view whose base was written: reading its history raises
    # (sign, add), but comparisons, isnan, argmax, all() and equal() have no
    # derivative and leave its history unread, as torch's do.
    if libname == "torch" and torch is None:
        pytest.skip("torch is not installed")
    m = ignis if libname == "ignis" else torch
    a = m.randn(3, 3).requires_grad_()
    with m.no_grad():
        v = a.t()
        v[v > 0.5] = 0.5
    assert v.requires_grad
    assert not (v == v).requires_grad and bool((v == v).all())
    assert m.equal(v, v) and not bool(v.isnan().any())
    assert v.argmax().dtype == m.int64 and (v > 0).dtype == m.bool
    for use in (lambda: v.sign(), lambda: v + 1, lambda: v.grad_fn):
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
            use()


# (name, fn(m, a, w)): `a` requires grad, `w` does not. Torch saves an input
# only for the gradients whose formulas read it, so writing it afterwards is
# an error only then (mul: `a` is saved for w's gradient, which none needs).
_SAVED_FOR_NEEDED = [
    ("mul", lambda m, a, w: a * w), ("mul_int", lambda m, a, w: a * 3),
    ("div", lambda m, a, w: a / w), ("rdiv", lambda m, a, w: w / a),
    ("mm", lambda m, a, w: a @ w.t()), ("matmul", lambda m, a, w: m.matmul(a, w.t())),
    ("addcmul", lambda m, a, w: m.addcmul(w, a, w)), ("maximum", lambda m, a, w: m.maximum(a, w)),
    ("pow", lambda m, a, w: a.pow(w)), ("rpow", lambda m, a, w: w.pow(a)),
    ("where", lambda m, a, w: m.where(w > 3, a, w)), ("atan2", lambda m, a, w: m.atan2(a, w)),
    ("lerp", lambda m, a, w: m.lerp(a, w, 0.3)), ("sub", lambda m, a, w: a - w),
    ("hypot", lambda m, a, w: m.hypot(a, w)), ("copysign", lambda m, a, w: m.copysign(a, w)),
    ("cat", lambda m, a, w: m.cat([a, w]) * 1),
    ("mul_inplace", lambda m, a, w: w.clone().mul_(a)),
]


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("written", ["a", "w"])
@pytest.mark.parametrize("name,fn", _SAVED_FOR_NEEDED, ids=[n for n, _ in _SAVED_FOR_NEEDED])
def test_a_written_input_raises_at_backward_only_when_a_needed_gradient_reads_it(
        name, fn, written):
    def outcome(m):
        a = m.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4), requires_grad=True)
        w = m.tensor(np.linspace(3.5, 5.0, 12).reshape(3, 4))
        out = fn(m, a, w)
        with m.no_grad():
            (a if written == "a" else w).mul_(2)
        try:
            out.sum().backward()
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e)
            return "raised"
        return "ran"

    assert outcome(ignis) == outcome(torch)


_RESULT_WRITTEN = [
    ("prod", lambda a: a.prod()), ("prod_dim", lambda a: a.prod(dim=1)),
    ("exp", lambda a: a.exp()), ("tanh", lambda a: a.tanh()), ("sin", lambda a: a.sin()),
    ("sum", lambda a: a.sum(1)), ("amax", lambda a: a.amax(1)),
]


@pytest.mark.skipif(torch is None, reason="needs torch")
@pytest.mark.parametrize("name,fn", _RESULT_WRITTEN, ids=[n for n, _ in _RESULT_WRITTEN])
def test_a_result_written_in_place_raises_at_backward_as_in_torch(name, fn):
    # Fuzz seed 72214: prod's formula did not read its result, so `t.neg_()`
    # on it before backward was no error (torch's prod_backward reads it).
    def outcome(m):
        a = m.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4), requires_grad=True)
        out = fn(a)
        out.neg_()
        try:
            out.sum().backward()
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e)
            return "raised"
        return "ran"

    assert outcome(ignis) == outcome(torch)


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_as_strided_reads_only_its_inputs_geometry_at_backward():
    # Fuzz seed 74448: as_strided's formula read its saved input with a version
    # check, so writing the input after the view was made raised at backward;
    # torch saves only the geometry (the AOT runtime remakes views with as_strided).
    def outcome(m):
        a = m.tensor(np.linspace(0.5, 2.0, 12).reshape(3, 4), requires_grad=True)
        x = a * 1.0
        v = x.as_strided((2, 4), (4, 1), 4)
        y = v * m.tensor(np.arange(8.0).reshape(2, 4))
        x.mul_(3)  # after y read v through as_strided's node
        y.sum().backward()
        return a.grad.numpy().copy()

    np.testing.assert_allclose(outcome(ignis), outcome(torch), rtol=1e-6)


def _no_grad_view_cases(m):
    """What a view made under no_grad does afterwards, as comparable data."""
    out = {}
    b = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with m.no_grad():
        v = b[1:]
        d = b.detach()
    out["requires_grad"] = (v.requires_grad, v.is_leaf, v.grad_fn is None, d.requires_grad)
    try:  # an in-place op on it with grad mode on
        v.mul_(2)
        out["inplace"] = "ran"
    except RuntimeError as e:
        out["inplace"] = "no_grad mode" in str(e)
    (v * 2).sum().backward()  # a leaf of its own: the gradient stays in v.grad
    out["grads"] = (b.grad is None, v.grad is not None and v.grad.tolist())
    buf = m.tensor([1.0, 2.0, 3.0])
    with m.no_grad():
        w = buf[1:]
    out["before_write"] = w.requires_grad
    buf.add_(b)  # the base gets history: reading the view's history raises
    out["after_write"] = w.requires_grad
    try:
        w.grad_fn
        out["grad_fn"] = "ran"
    except RuntimeError as e:
        out["grad_fn"] = "no_grad mode" in str(e)
    return out


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_a_view_made_under_no_grad_behaves_as_torchs():
    # Fuzz (--backend torch): `with no_grad(): t = b.view(...)` with b requiring
    # grad gave t requires_grad False, and an in-place op on such a view with
    # grad mode on ran, where torch's view requires grad and the op raises.
    assert _no_grad_view_cases(ignis) == _no_grad_view_cases(torch)


def test_not_implemented_derivative_raises_at_backward():
    x = leaf()
    y = x.floor_divide(2)  # not differentiable in torch either
    with pytest.raises(NotImplementedError, match="floor_divide"):
        y.sum().backward()


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(mode):
    check(lambda m, a: m.nn.functional.pad(a, (2, 1), mode=mode), [(1, 2, 4)])


def test_gradient_dtype_matches_input():
    x = ignis.ones(3, dtype=ignis.float32, requires_grad=True)
    (x.double() * 2).sum().backward()
    assert x.grad.dtype == ignis.float32
    h = ignis.ones(3, dtype=ignis.float16, requires_grad=True)
    (h * 2).float().sum().backward()
    assert h.grad.dtype == ignis.float16


def test_parameter_training_step():
    lin = ignis.nn.Linear(3, 2) if hasattr(ignis.nn, "Linear") else None
    if lin is None:
        pytest.skip("ignis.nn.Linear not available")
    x = ignis.randn(4, 3)
    lin(x).pow(2).mean().backward()
    assert lin.weight.grad is not None and tuple(lin.weight.grad.shape) == (2, 3)


def test_tensor_hooks():
    x = leaf()
    seen = []
    hx = x.register_hook(lambda g: seen.append(g.clone()) or g * 2)
    y = x * 3
    hy = y.register_hook(lambda g: g + 1)  # non-leaf: runs before y's grad_fn
    (y * y).sum().backward()
    xn = np.array([1, 2, 3.0])
    np.testing.assert_allclose(seen[0].numpy(), 3 * (2 * 3 * xn + 1))
    np.testing.assert_allclose(x.grad.numpy(), 2 * 3 * (2 * 3 * xn + 1))
    hx.remove()
    hy.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3, 3, 3])

    def bad(g):
        raise ValueError("boom")
    z = x * 1
    z.register_hook(bad)
    with pytest.raises(ValueError, match="boom"):
        z.sum().backward()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ignis.ones(2).register_hook(lambda g: g)


def test_fused_layer_norm_backward_float32_matches_torch():
    if torch is None:
        pytest.skip("torch not installed")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5, 8)).astype(np.float32)
    w = rng.standard_normal(8).astype(np.float32)
    go = rng.standard_normal((4, 5, 8)).astype(np.float32)
    res = []
    for m in (ignis, torch):
        x = m.from_numpy(a.copy()).requires_grad_()
        wt = m.from_numpy(w.copy()).requires_grad_()
        b = m.zeros(8, requires_grad=True)
        m.nn.functional.layer_norm(x, (8,), wt, b).backward(m.from_numpy(go.copy()))
        res.append([t.grad.numpy() for t in (x, wt, b)])
    for gi, gt in zip(*res):
        np.testing.assert_allclose(gi, gt, rtol=1e-4, atol=1e-5)


def test_long_chain_backward_and_free_do_not_overflow_the_stack():
    x = leaf((1.0,))
    y = x
    for _ in range(100000):
        y = y * 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0])
    y = x
    for _ in range(100000):
        y = y + 1
    del y  # frees 100000 nodes iteratively


def _stale_views(m, a, b):
    y = a * 1
    v = y[0]
    w = y[1:]
    y.mul_(b)  # v and w now read the modified y: their history follows it
    w.mul_(a[1:])
    return v * 2 + w.sum()


def _view_before_write(m, a, b):
    buf = m.zeros(2, 3, dtype=m.float64)
    v0 = buf[1]  # made before buf requires grad
    buf[1] = a[0] * b[1]
    return v0 * 2


@pytest.mark.parametrize("fn", [_stale_views, _view_before_write])
def test_views_see_in_place_writes_to_their_base(fn):
    check(fn, [(2, 3), (2, 3)] if fn is _view_before_write else [(3,), (3,)])


class _ScaledExp(ignis.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        y = x.exp() * k
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y, None


class _Pair(ignis.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b, a + b

    @staticmethod
    def backward(ctx, ga, gb):  # gb arrives as zeros when the output is unused
        return ga + gb, ga * 2 + gb


def test_custom_function():
    x = leaf((0.0, 1.0))
    y = _ScaledExp.apply(x, 2.0)
    assert y.grad_fn.name() == "_ScaledExpBackward"
    (y * x).sum().backward()
    xn = np.array([0.0, 1.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(xn) * (1 + xn))
    assert not _ScaledExp.apply(ignis.ones(2), 2.0).requires_grad
    a, b = leaf(), leaf()
    p, _ = _Pair.apply(a, b)
    p.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [1, 1, 1])
    np.testing.assert_allclose(b.grad.numpy(), [2, 2, 2])
    assert ignis.autograd.gradcheck(lambda t: _ScaledExp.apply(t, 3.0),
                                    (ignis.from_numpy(np.array([0.1, -0.2])).requires_grad_(),))


@pytest.mark.parametrize("libname", ["ignis", "torch"])
def test_custom_function_non_differentiable_mark_on_a_returned_input(libname):
    # An input returned as an output and marked non-differentiable gives an
    # output without grad (the mark followed the input, not the output).
    if libname == "torch" and torch is None:
        pytest.skip("torch not installed")
    lib = ignis if libname == "ignis" else torch

    class PassB(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_non_differentiable(b)
            return a * 2, b

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2, gb

    a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
    x, y = PassB.apply(a, b)
    assert x.requires_grad and not y.requires_grad and y.grad_fn is None
    assert b.requires_grad  # the input keeps its flag
    x.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2, 2])
    np.testing.assert_array_equal(b.grad.numpy(), [0, 0])  # its unused gradient: zeros


class _MaybeNone(ignis.autograd.Function):
    @staticmethod
    def forward(ctx, x, none):
        return x.exp(), none  # a None output, beside a None input

    @staticmethod
    def backward(ctx, g, g_none):
        assert g_none is None
        return g, None


def test_custom_function_outputs_dropped_without_backward_are_freed():
    # The node must not hold its outputs (they hold the node): a graph
    # dropped without backward would never be freed.
    x = ignis.randn(256, 1024, requires_grad=True)  # 1 MiB outputs
    stats = ignis._C._cpu_memory_stats

    for fn in (lambda: _ScaledExp.apply(x, 2.0), lambda: _Pair.apply(x, x)):
        fn()
        before = stats()["allocated_bytes.all.current"]
        for _ in range(4):
            fn()
        assert stats()["allocated_bytes.all.current"] == before
    y, none = _MaybeNone.apply(x, None)
    assert none is None
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((256, 1024), np.float32))


def _in_place_on_views(mod, linear_loss):
    """Writes into views of an intermediate (CopySlices) and an as_strided
    view of it, then a gradient with create_graph and its own gradient.
    linear_loss: the loss is a plain sum, so the gradient reaching the
    writes has no history of its own (their formulas give it one)."""
    x = mod.tensor(np.arange(12.0).reshape(3, 4) / 7, requires_grad=True)
    y = x * x
    y[1:].mul_(2)
    y[1].mul_(x[0].sin())
    y[:, 2].add_(x[:, 1] ** 2)
    z = y.as_strided((2, 2), (4, 1), 1)
    loss = z.sum() + y.sum() if linear_loss else z.exp().sum() + (y * y).tanh().sum()
    (g,) = mod.autograd.grad(loss, x, create_graph=True)
    (h,) = mod.autograd.grad((g ** 2).sum(), x)
    return g.detach().numpy(), h.numpy()


def test_double_backward_through_writes_into_views():
    """CopySlices and AsStridedBackward record their writes into the fresh
    gradient under create_graph (through an autograd view of it), so a
    second derivative follows them (it raised NotImplementedError before)."""
    x = ignis.tensor(np.arange(6.0).reshape(2, 3) / 5, requires_grad=True)

    def f(x):
        y = x * x
        y[1:].mul_(x[0].sin())
        return y.as_strided((2, 2), (3, 1), 1).exp()
    assert ignis.autograd.gradgradcheck(f, (x,))
    try:
        import torch
    except ImportError:
        return
    for linear_loss in (False, True):
        for a, b in zip(_in_place_on_views(ignis, linear_loss),
                        _in_place_on_views(torch, linear_loss)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


class _NumpyCube(ignis.autograd.Function):
    """x**3 whose backward computes through NumPy: not differentiable again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    @ignis.autograd.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert not ignis.is_grad_enabled()  # run without recording
        return ignis.from_numpy(3 * x.numpy() ** 2 * g.numpy())


def test_once_differentiable_refuses_a_second_derivative():
    x = ignis.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y = _NumpyCube.apply(x).sum()
    (g,) = ignis.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0, 0.75])
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked "
                                           "with @once_differentiable"):
        g.sum().backward()
    # without create_graph the gradient is a plain value
    (h,) = ignis.autograd.grad(_NumpyCube.apply(x).sum(), x)
    assert not h.requires_grad and h.grad_fn is None
    # a first backward is unaffected
    _NumpyCube.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0, 0.75])
