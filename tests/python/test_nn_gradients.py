"""Derivatives of the fused nn ops (src/ignis/ops/nn.cpp) against torch's, in
float64: cosine_similarity with broadcast inputs; nll_loss and cross_entropy
over every reduction, with ignore_index, label smoothing, class weights,
int64 and uint8 targets and class probabilities; the elementwise losses with
weights and broadcast targets. For the same inputs and upstream gradient,
first and second derivatives must equal torch's, and ignis's must pass a
finite-difference gradcheck. An argument torch does not differentiate (the
class weight of nll_loss and of cross_entropy with class indices, bce's
weights) must raise at the call when it requires grad, as in torch.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

# torch's warnings about broadcast loss targets
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

REDUCTIONS = ["none", "mean", "sum"]


def _make(mod, arrays, diff):
    out = []
    for k, a in enumerate(arrays):
        t = mod.from_numpy(np.array(a, copy=True)) if isinstance(a, np.ndarray) else a
        if k in diff:
            t.requires_grad_()
        out.append(t)
    return out


def _np(t, like):
    if t is None:
        return np.zeros(like)
    # (torch gives a zero second derivative, e.g. abs's, as a ZeroTensor)
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy()


def compare(ifn, tfn, arrays, diff, *, second=True, gradcheck=True, seed=1):
    """ifn(*ignis tensors) and tfn(*torch tensors) on `arrays` (NumPy arrays
    become float64/int tensors; anything else passes as it is); those at the
    indices in `diff` require grad. Values, gradients for a random upstream
    gradient and (second) the gradients of <gradients, random v> must equal
    torch's; ignis's gradients must pass gradcheck."""
    rng = np.random.default_rng(seed)
    ins, tins = _make(ignis, arrays, diff), _make(torch, arrays, diff)
    out, tout = ifn(*ins), tfn(*tins)
    assert tuple(out.shape) == tuple(tout.shape)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    go = np.array(rng.uniform(-1, 1, tuple(tout.shape)))
    leaves, tleaves = [ins[k] for k in diff], [tins[k] for k in diff]
    gs = ignis.autograd.grad(out, leaves, ignis.from_numpy(go.copy()), create_graph=second)
    tgs = torch.autograd.grad(tout, tleaves, torch.from_numpy(go.copy()), create_graph=second)
    for k, g, tg in zip(diff, gs, tgs):
        assert g is not None, f"no gradient for input {k}"
        assert tuple(g.shape) == tuple(tg.shape) and g.dtype == ignis.float64
        np.testing.assert_allclose(g.detach().numpy(), tg.detach().numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=f"gradient of input {k}")
    if second:
        vs = [rng.uniform(-1, 1, tuple(g.shape)) for g in tgs]
        s = sum((g * ignis.from_numpy(v.copy())).sum() for g, v in zip(gs, vs))
        ts = sum((g * torch.from_numpy(v.copy())).sum() for g, v in zip(tgs, vs))
        # (None where the gradient does not depend on the inputs: nll_loss's.)
        gg = ignis.autograd.grad(s, leaves, allow_unused=True) if s.requires_grad else \
            [None] * len(leaves)
        tgg = torch.autograd.grad(ts, tleaves, allow_unused=True) if ts.requires_grad else \
            [None] * len(tleaves)
        for k, g, tg, a in zip(diff, gg, tgg, tleaves):
            np.testing.assert_allclose(_np(g, a.shape), _np(tg, a.shape), rtol=1e-8, atol=1e-10,
                                       err_msg=f"second derivative, input {k}")
    if gradcheck:
        assert ignis.autograd.gradcheck(ifn, _make(ignis, arrays, diff))


def uniform(rng, shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape)


# ---- cosine_similarity ---------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,dim", [
    ((3, 4), (3, 4), 1), ((3, 4), (4,), 1), ((4,), (3, 4), -1), ((2, 3, 4), (1, 3, 4), 0),
    ((2, 1, 4), (3, 1), 1), ((3, 1), (1, 4), 0), ((5,), (5,), 0)])
def test_cosine_similarity_broadcast(sa, sb, dim):
    rng = np.random.default_rng(0)
    compare(lambda a, b: IF.cosine_similarity(a, b, dim),
            lambda a, b: TF.cosine_similarity(a, b, dim),
            [uniform(rng, sa), uniform(rng, sb)], [0, 1])


def test_cosine_similarity_norms_below_eps():
    # torch raises a norm below eps to eps outside autograd, so the gradient
    # still flows through the norm (a zero vector's norm has gradient 0).
    a = np.array([[0.0, 0, 0, 0], [1, 2, 3, 4], [1e-9, 0, 0, 0], [3e-9, -4e-9, 0, 0]])
    b = np.array([1.0, -2, 0.5, 3])
    ia, ib = ignis.from_numpy(a.copy()).requires_grad_(), ignis.from_numpy(b.copy())
    ta, tb = torch.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(b.copy())
    go = np.array([1.0, -0.5, 2, 1])
    (g,) = ignis.autograd.grad(IF.cosine_similarity(ia, ib), [ia], ignis.from_numpy(go.copy()))
    (tg,) = torch.autograd.grad(TF.cosine_similarity(ta, tb), [ta], torch.from_numpy(go.copy()))
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-12)


# ---- nll_loss / cross_entropy with class indices -------------------------------------------------
def class_case(rng, shape, tdtype, ignore):
    """Input log-probabilities/logits, targets and ignore_index kwargs. With
    ignore="present" class 3 is ignored and appears among the targets; with
    "default" (int64 only) one target is -100."""
    x = uniform(rng, shape)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, C, tshape)
    if len(shape) > 1:
        t.flat[0] = 3
        if ignore == "default" and tdtype == "int64":
            t.flat[-1] = -100
    kw = {"ignore_index": 3} if ignore == "present" and len(shape) > 1 else {}
    return x, np.asarray(t).astype(tdtype), kw


# torch takes uint8 targets for 1-D and 2-D inputs only.
CLASS_SHAPES = [((4, 5), "int64"), ((4, 5), "uint8"), ((5,), "int64"), ((5,), "uint8"),
                ((2, 5, 3), "int64")]


@pytest.mark.parametrize("shape,tdtype", CLASS_SHAPES)
@pytest.mark.parametrize("ignore", ["default", "present"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_gradients(shape, tdtype, ignore, weighted, reduction):
    rng = np.random.default_rng(1)
    x, t, kw = class_case(rng, shape, tdtype, ignore)
    w = uniform(rng, (shape[0 if len(shape) == 1 else 1],), 0.1, 2.0) if weighted else None
    compare(lambda a, b, c: IF.nll_loss(a, b, c, reduction=reduction, **kw),
            lambda a, b, c: TF.nll_loss(a, b, c, reduction=reduction, **kw), [x, t, w], [0])


@pytest.mark.parametrize("shape,tdtype", CLASS_SHAPES)
@pytest.mark.parametrize("ignore", ["default", "present"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_index_gradients(shape, tdtype, ignore, weighted, smoothing, reduction):
    rng = np.random.default_rng(2)
    x, t, kw = class_case(rng, shape, tdtype, ignore)
    w = uniform(rng, (shape[0 if len(shape) == 1 else 1],), 0.1, 2.0) if weighted else None
    kw.update(reduction=reduction, label_smoothing=smoothing)
    if tdtype == "uint8" and weighted and smoothing and reduction == "mean":
        # torch gathers the class weights with the uint8 targets as indices
        # there, which gather refuses: so does ignis, in forward.
        with pytest.raises(RuntimeError, match="int32/int64 for index"):
            TF.cross_entropy(torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(w), **kw)
        with pytest.raises(RuntimeError, match="int32/int64 for index"):
            IF.cross_entropy(ignis.from_numpy(x), ignis.from_numpy(t), ignis.from_numpy(w), **kw)
        return
    compare(lambda a, b, c: IF.cross_entropy(a, b, c, **kw),
            lambda a, b, c: TF.cross_entropy(a, b, c, **kw), [x, t, w], [0])


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("size_average,reduce", [(False, None), (None, False), (True, True)])
def test_class_loss_legacy_flags_gradients(fn, size_average, reduce):
    rng = np.random.default_rng(3)
    x, t, _ = class_case(rng, (4, 5), "int64", "default")
    kw = {"size_average": size_average, "reduce": reduce}
    compare(lambda a, b: getattr(IF, fn)(a, b, **kw), lambda a, b: getattr(TF, fn)(a, b, **kw),
            [x, t], [0])


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("weighted", [False, True])
def test_class_loss_mean_with_every_target_ignored(fn, weighted):
    # The mean divides by a total weight of 0: the loss is NaN but, as in
    # torch, the ignored targets get a zero gradient rather than 0 * inf.
    x = np.random.default_rng(4).standard_normal((3, 4))
    w = np.array([1.0, 2, 3, 4]) if weighted else None
    ix = ignis.from_numpy(x.copy()).requires_grad_()
    tx = torch.from_numpy(x.copy()).requires_grad_()
    iw, tw = (None, None) if w is None else (ignis.from_numpy(w), torch.from_numpy(w))
    il = getattr(IF, fn)(ix, ignis.tensor([1, 1, 1]), iw, ignore_index=1)
    tl = getattr(TF, fn)(tx, torch.tensor([1, 1, 1]), tw, ignore_index=1)
    assert np.isnan(il.item()) and np.isnan(tl.item())
    (g,) = ignis.autograd.grad(il, [ix])
    (tg,) = torch.autograd.grad(tl, [tx])
    np.testing.assert_array_equal(g.numpy(), tg.numpy())
    assert not np.any(g.numpy())


@pytest.mark.parametrize("fn,kw", [("nll_loss", {}), ("cross_entropy", {}),
                                   ("cross_entropy", {"label_smoothing": 0.1})])
@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 5, 3, 2), (0, 5, 3)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_uint8_targets_of_inputs_beyond_2d(fn, kw, shape, reduction):
    # torch's nll_loss2d path wants int64 targets, except for an empty input
    # reduced to a scalar, which it does not reach: ignis raises in forward
    # where torch does (and then cannot fail in backward).
    x = np.random.default_rng(12).standard_normal(shape)
    t = np.zeros((shape[0],) + shape[2:], np.uint8)
    kw = dict(kw, reduction=reduction)
    ix = ignis.from_numpy(x.copy()).requires_grad_()
    tx = torch.from_numpy(x.copy()).requires_grad_()
    try:
        want = getattr(TF, fn)(tx, torch.from_numpy(t), **kw)
    except RuntimeError as e:
        assert "Long but found Byte" in str(e)
        with pytest.raises(RuntimeError, match="expected scalar type Long but found Byte"):
            getattr(IF, fn)(ix, ignis.from_numpy(t), **kw)
        return
    got = getattr(IF, fn)(ix, ignis.from_numpy(t), **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), equal_nan=True)
    # (torch's backward then fails, in nll_loss2d's; ignis gives the empty
    # gradient.)
    (g,) = ignis.autograd.grad(got, [ix])
    assert tuple(g.shape) == shape


def test_uint8_targets_equal_int64_targets():
    rng = np.random.default_rng(5)
    x = uniform(rng, (6, 5))
    t = np.array([0, 4, 2, 2, 1, 3])
    for fn, kw in [("nll_loss", {}), ("cross_entropy", {"label_smoothing": 0.1})]:
        grads = []
        for dt in (ignis.int64, ignis.uint8):
            ix = ignis.from_numpy(x.copy()).requires_grad_()
            loss = getattr(IF, fn)(ix, ignis.from_numpy(t).to(dt), ignore_index=2, **kw)
            grads.append(ignis.autograd.grad(loss, [ix])[0].numpy())
        np.testing.assert_array_equal(grads[0], grads[1])


# ---- cross_entropy with class probabilities: the weight is differentiable ----------------------
@pytest.mark.parametrize("shape", [(4, 5), (2, 5, 3), (5,)])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_gradients(shape, weighted, smoothing, reduction):
    rng = np.random.default_rng(6)
    C = shape[0] if len(shape) == 1 else shape[1]
    x, q = uniform(rng, shape), uniform(rng, shape, 0.05, 0.95)
    arrays, diff = [x, q], [0, 1]
    if weighted:
        arrays.append(uniform(rng, (C,), 0.1, 2.0))
        diff.append(2)
    kw = {"reduction": reduction, "label_smoothing": smoothing}
    compare(lambda *a: IF.cross_entropy(*a, **kw), lambda *a: TF.cross_entropy(*a, **kw),
            arrays, diff)


# ---- arguments that are not differentiable -------------------------------------------------------
def _nondiff_calls(mod):
    F = mod.nn.functional
    f64 = mod.float64

    def t(*vals):
        return mod.tensor(list(vals), dtype=f64)

    x = mod.tensor([[0.2, -1.0, 0.5], [1.5, 0.3, -0.7]], dtype=f64)
    p = mod.tensor([[0.2, 0.9, 0.5], [0.6, 0.3, 0.7]], dtype=f64)
    idx = mod.tensor([2, 0])
    return {
        "nll_loss": lambda w: F.nll_loss(x, idx, w),
        "cross_entropy": lambda w: F.cross_entropy(x, idx, w),
        "cross_entropy_smoothing": lambda w: F.cross_entropy(x, idx, w, label_smoothing=0.1),
        "cross_entropy_uint8": lambda w: F.cross_entropy(x, idx.to(mod.uint8), w),
        "bce": lambda w: F.binary_cross_entropy(p, p, w),
        "bce_logits_weight": lambda w: F.binary_cross_entropy_with_logits(x, p, w),
        "bce_logits_pos_weight": lambda w: F.binary_cross_entropy_with_logits(x, p,
                                                                              pos_weight=w),
    }, t(1.0, 2.0, 0.5)


@pytest.mark.parametrize("case", list(_nondiff_calls(ignis)[0]))
def test_nondifferentiable_weight_raises_at_the_call(case):
    calls, w = _nondiff_calls(ignis)
    tcalls, tw = _nondiff_calls(torch)
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
        tcalls[case](tw.requires_grad_())
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument"):
        calls[case](w.requires_grad_())
    # Not an error without grad mode, or for a weight that does not require grad.
    with ignis.no_grad():
        calls[case](w)
    np.testing.assert_allclose(calls[case](w.detach()).numpy(),
                               tcalls[case](tw.detach()).numpy(), rtol=1e-12)


# ---- elementwise losses ---------------------------------------------------------------------
# (input shape, target shape): the target broadcasts against the input, or
# the input against the target; a weight has the input's shape (torch).
POINT_SHAPES = [((3, 4), (3, 4)), ((3, 4), (4,)), ((4,), (3, 4)), ((1, 4), (3, 1))]


@pytest.mark.parametrize("fn,kw", [("mse_loss", {}), ("l1_loss", {}), ("huber_loss", {}),
                                   ("huber_loss", {"delta": 0.4})])
@pytest.mark.parametrize("shapes", POINT_SHAPES)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_pointwise_loss_gradients(fn, kw, shapes, weighted, reduction):
    rng = np.random.default_rng(7)
    arrays = [uniform(rng, shapes[0]), uniform(rng, shapes[1])]
    if weighted:
        arrays.append(uniform(rng, shapes[0], 0.1, 2.0))
    kw = dict(kw, reduction=reduction)

    def call(F):
        return lambda x, y, w=None: getattr(F, fn)(x, y, weight=w, **kw)
    # |d| has no finite-difference derivative at the kinks; the draws avoid them.
    compare(call(IF), call(TF), arrays, list(range(len(arrays))))


UNWEIGHTED = [(fn, kw, r) for fn, kw in [("smooth_l1_loss", {"beta": 0.5}),
                                          ("smooth_l1_loss", {"beta": 0.0}),
                                          ("kl_div", {}), ("kl_div", {"log_target": True})]
              for r in REDUCTIONS + (["batchmean"] if fn == "kl_div" else [])]


@pytest.mark.parametrize("fn,kw,reduction", UNWEIGHTED)
@pytest.mark.parametrize("shapes", POINT_SHAPES)
def test_unweighted_pointwise_loss_gradients(fn, kw, reduction, shapes):
    # (kl_div's batchmean divides by input's first dim, also where the
    # target broadcasts the loss to more rows.)
    rng = np.random.default_rng(8)
    lo = 0.05 if fn == "kl_div" and not kw else -2.0
    arrays = [uniform(rng, shapes[0]), uniform(rng, shapes[1], lo, 2.0)]
    kw = dict(kw, reduction=reduction)
    compare(lambda x, y: getattr(IF, fn)(x, y, **kw), lambda x, y: getattr(TF, fn)(x, y, **kw),
            arrays, [0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 4), (3, 1)])
def test_bce_gradients_with_constant_weights(reduction, weight_shape):
    rng = np.random.default_rng(9)
    x, y = uniform(rng, (3, 4), 0.05, 0.95), uniform(rng, (3, 4), 0.05, 0.95)
    w = None if weight_shape is None else uniform(rng, weight_shape, 0.1, 2.0)
    compare(lambda a, b, c: IF.binary_cross_entropy(a, b, c, reduction=reduction),
            lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction),
            [x, y, w], [0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape,pos_shape", [(None, None), ((4,), None), (None, (4,)),
                                                    ((3, 1), (4,))])
def test_bce_with_logits_gradients_with_constant_weights(reduction, weight_shape, pos_shape):
    rng = np.random.default_rng(10)
    x, y = uniform(rng, (3, 4)), uniform(rng, (3, 4), 0.05, 0.95)
    w = None if weight_shape is None else uniform(rng, weight_shape, 0.1, 2.0)
    pw = None if pos_shape is None else uniform(rng, pos_shape, 0.1, 2.0)
    compare(lambda a, b, c, d: IF.binary_cross_entropy_with_logits(a, b, c, reduction=reduction,
                                                                    pos_weight=d),
            lambda a, b, c, d: TF.binary_cross_entropy_with_logits(a, b, c, reduction=reduction,
                                                                    pos_weight=d),
            [x, y, w, pw], [0, 1])


@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_gradients_at_zero_and_extreme_logits(pos_weight):
    """Logits exactly 0 (a zero-initialised output layer) and far out: softplus(-x) was
    written with relu(-x) and |x|, whose slopes at 0 are 0, so the gradient at 0 lost its
    -1/2 (found by the parity helper: [1, .8, 0] against torch's [.5, .3, -.5])."""
    x = np.array([[0.0, 0.0, 0.0, 0.0], [30.0, -30.0, 1e-9, -1e-9], [0.0, 2.0, -3.0, 0.0]])
    y = np.array([[0.0, 0.2, 1.0, 0.5], [0.0, 1.0, 0.3, 0.7], [1.0, 0.5, 1.0, 0.0]])
    pw = np.array([2.0, 0.5, 1.0, 3.0]) if pos_weight else None
    compare(lambda a, b, d: IF.binary_cross_entropy_with_logits(a, b, pos_weight=d),
            lambda a, b, d: TF.binary_cross_entropy_with_logits(a, b, pos_weight=d),
            [x, y, pw], [0, 1])
    # The compiled loss too (the decomposition the compiler lowers).
    xi = ignis.from_numpy(x[0].copy()).requires_grad_(True)
    loss = ignis.compile(lambda a, b: IF.binary_cross_entropy_with_logits(a, b, reduction="sum"),
                         backend="inductor")
    loss(xi, ignis.from_numpy(y[0].copy())).backward()
    np.testing.assert_allclose(xi.grad.numpy(), 0.5 - y[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn", ["mse_loss", "l1_loss"])
def test_weighted_mean_divides_by_the_weight_itself(fn):
    # The input (and so the weight) broadcasts against a larger target: torch
    # divides by the weight's own sum, not the broadcast weight's.
    rng = np.random.default_rng(11)
    x, y, w = uniform(rng, (4,)), uniform(rng, (3, 4)), uniform(rng, (4,), 0.1, 2.0)
    got = getattr(IF, fn)(ignis.from_numpy(x), ignis.from_numpy(y), weight=ignis.from_numpy(w))
    want = getattr(TF, fn)(torch.from_numpy(x), torch.from_numpy(y), weight=torch.from_numpy(w))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
