"""The losses ignis writes over other ops (nn/_losses.py): values and input
gradients against torch from the same NumPy inputs (every reduction,
batched and unbatched shapes, the options), module reprs, torch's
exceptions for bad input, and a few under ignis.compile against eager."""

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn as inn
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(7)
REDUCTIONS = ["none", "mean", "sum"]


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-10):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _dtype_name(t):
    return str(t.dtype).split(".")[-1]


# ---- arguments made alike for both libraries ------------------------------------------------
class Arg:
    """A tensor argument: the same array in both libraries; `grad`: a leaf
    whose gradient is compared."""

    def __init__(self, array, grad=False):
        self.array, self.grad = np.asarray(array), grad

    def make(self, lib, dtype=None):
        a = self.array if dtype is None or self.array.dtype.kind != "f" else \
            self.array.astype(dtype)
        t = lib.tensor(a)
        return t.requires_grad_() if self.grad else t


class Fn:
    """A function argument (a distance) built from each library's F."""

    def __init__(self, build):
        self.build = build

    def make(self, lib, dtype=None):
        return self.build(lib.nn.functional)


def G(*shape):
    """Normal values, a leaf whose gradient is compared."""
    return Arg(RNG.standard_normal(shape), grad=True)


def POS(*shape, lo=0.2, hi=2.0):
    """Positive values, a leaf (variances, poisson rates)."""
    return Arg(RNG.uniform(lo, hi, shape), grad=True)


def PM(*shape):
    """+1 / -1 targets."""
    return Arg(RNG.choice([-1.0, 1.0], shape))


def B(*shape):
    """0 / 1 targets."""
    return Arg(RNG.integers(0, 2, shape).astype(np.float64))


def W(n):
    """Positive per-class weights."""
    return Arg(RNG.uniform(0.5, 1.5, n))


def CNT(*shape):
    """Poisson counts (0, 1 and larger: Stirling's term applies above 1)."""
    return Arg(RNG.poisson(2.0, shape).astype(np.float64))


def CLS(classes, shape):
    return Arg(RNG.integers(0, classes, shape).astype(np.int64))


def LBL(n, classes):
    """multilabel_margin_loss targets: each row some class indices, a -1, then
    anything in [-1, classes) (ignored)."""
    rows = []
    for _ in range(1 if n is None else n):
        k = int(RNG.integers(0, classes))
        row = list(RNG.permutation(classes)[:k]) + [-1]
        row += list(RNG.integers(-1, classes, classes - len(row)))
        rows.append(row[:classes])
    a = np.array(rows, dtype=np.int64)
    return Arg(a[0] if n is None else a)


COSINE = Fn(lambda F: lambda a, b: 1.0 - F.cosine_similarity(a, b, dim=-1))
L1 = Fn(lambda F: lambda a, b: (a - b).abs().sum(-1))


def _made(lib, items, dtype=None):
    return [a.make(lib, dtype) if hasattr(a, "make") else a for a in items]


def _compare(fi, ft, args, kwargs=None, tol=1e-10, dtype=None):
    """fi and ft on each library's copies of args/kwargs: the same shape,
    dtype and values, and the same gradients of every leaf under a random
    cotangent."""
    kwargs = kwargs or {}
    ai, at = _made(ignis, args, dtype), _made(torch, args, dtype)
    ki = dict(zip(kwargs, _made(ignis, kwargs.values(), dtype)))
    kt = dict(zip(kwargs, _made(torch, kwargs.values(), dtype)))
    ri, rt = fi(*ai, **ki), ft(*at, **kt)
    assert tuple(ri.shape) == tuple(rt.shape)
    assert _dtype_name(ri) == _dtype_name(rt)
    _close(ri, rt, tol)
    leaves_i = [t for t in ai + list(ki.values()) if getattr(t, "requires_grad", False)]
    leaves_t = [t for t in at + list(kt.values()) if getattr(t, "requires_grad", False)]
    if not leaves_t:
        return ri, rt
    g = RNG.standard_normal(tuple(rt.shape))
    (ri * ignis.tensor(g.astype(_np(ri).dtype))).sum().backward()
    (rt * torch.tensor(g.astype(_np(rt).dtype))).sum().backward()
    for a, b in zip(leaves_i, leaves_t):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            _close(a.grad, b.grad, tol)
    return ri, rt


# ---- losses: functional and module, every reduction -----------------------------------------
MODULE = {
    "margin_ranking_loss": "MarginRankingLoss", "hinge_embedding_loss": "HingeEmbeddingLoss",
    "soft_margin_loss": "SoftMarginLoss", "cosine_embedding_loss": "CosineEmbeddingLoss",
    "multilabel_soft_margin_loss": "MultiLabelSoftMarginLoss",
    "multi_margin_loss": "MultiMarginLoss", "multilabel_margin_loss": "MultiLabelMarginLoss",
    "triplet_margin_loss": "TripletMarginLoss",
    "triplet_margin_with_distance_loss": "TripletMarginWithDistanceLoss",
    "gaussian_nll_loss": "GaussianNLLLoss", "poisson_nll_loss": "PoissonNLLLoss",
}

# (functional, inputs in torch's order, options): the shapes torch accepts,
# batched and not, and the options that change the formula.
LOSSES = [
    ("margin_ranking_loss", lambda: [G(6), G(6), PM(6)], {}),
    ("margin_ranking_loss", lambda: [G(3, 4), G(1, 4), PM(3, 1)], {"margin": 0.5}),
    ("margin_ranking_loss", lambda: [G(), G(), PM()], {"margin": 0.2}),
    ("hinge_embedding_loss", lambda: [G(3, 4), PM(3, 4)], {}),
    ("hinge_embedding_loss", lambda: [G(7), PM(7)], {"margin": 0.3}),
    ("hinge_embedding_loss", lambda: [G(), PM()], {"margin": 2.0}),
    ("soft_margin_loss", lambda: [G(3, 4), PM(3, 4)], {}),
    ("soft_margin_loss", lambda: [G(5), PM(5)], {}),
    ("cosine_embedding_loss", lambda: [G(5, 4), G(5, 4), PM(5)], {}),
    ("cosine_embedding_loss", lambda: [G(5, 4), G(5, 4), PM(5)], {"margin": 0.3}),
    ("cosine_embedding_loss", lambda: [G(4), G(4), PM()], {"margin": -0.2}),
    ("multilabel_soft_margin_loss", lambda: [G(4, 5), B(4, 5)], {}),
    ("multilabel_soft_margin_loss", lambda: [G(4, 5), B(4, 5)], {"weight": W(5)}),
    ("multilabel_soft_margin_loss", lambda: [G(5), B(5)], {"weight": W(5)}),
    ("multilabel_soft_margin_loss", lambda: [G(2, 3, 5), B(2, 3, 5)], {}),
    ("multi_margin_loss", lambda: [G(4, 5), CLS(5, (4,))], {}),
    ("multi_margin_loss", lambda: [G(4, 5), CLS(5, (4,))], {"p": 2, "margin": 0.5}),
    ("multi_margin_loss", lambda: [G(4, 5), CLS(5, (4,))], {"weight": W(5)}),
    ("multi_margin_loss", lambda: [G(6, 5), CLS(5, (6,))], {"p": 2, "margin": 1.5,
                                                             "weight": W(5)}),
    ("multi_margin_loss", lambda: [G(5), CLS(5, ())], {"p": 2}),
    ("multi_margin_loss", lambda: [G(5), CLS(5, (1,))], {"weight": W(5)}),
    ("multi_margin_loss", lambda: [G(), CLS(1, ())], {}),
    ("multilabel_margin_loss", lambda: [G(6, 5), LBL(6, 5)], {}),
    ("multilabel_margin_loss", lambda: [G(5), LBL(None, 5)], {}),
    ("triplet_margin_loss", lambda: [G(5, 4), G(5, 4), G(5, 4)], {}),
    ("triplet_margin_loss", lambda: [G(5, 4), G(5, 4), G(5, 4)], {"p": 1, "swap": True,
                                                                   "margin": 0.5}),
    ("triplet_margin_loss", lambda: [G(4), G(4), G(4)], {"p": 3, "eps": 1e-3}),
    ("triplet_margin_loss", lambda: [G(2, 3, 4), G(2, 3, 4), G(2, 3, 4)], {"swap": True}),
    ("triplet_margin_with_distance_loss", lambda: [G(5, 4), G(5, 4), G(5, 4)], {}),
    ("triplet_margin_with_distance_loss", lambda: [G(5, 4), G(5, 4), G(5, 4)],
     {"distance_function": COSINE, "margin": 0.4, "swap": True}),
    ("triplet_margin_with_distance_loss", lambda: [G(4), G(4), G(4)],
     {"distance_function": L1, "margin": 2.0}),
    ("gaussian_nll_loss", lambda: [G(4, 3), G(4, 3), POS(4, 3)], {}),
    ("gaussian_nll_loss", lambda: [G(4, 3), G(4, 3), POS(4)], {"full": True}),
    ("gaussian_nll_loss", lambda: [G(4, 3), G(4, 3), POS(4, 1, lo=0.05, hi=1.0)], {"eps": 0.5}),
    ("gaussian_nll_loss", lambda: [G(2, 4, 3), G(2, 4, 3), POS(2, 1, 3)], {}),
    ("gaussian_nll_loss", lambda: [G(4, 3), G(4, 3), 0.7], {"full": True}),
    ("gaussian_nll_loss", lambda: [G(5), G(5), POS(5)], {}),
    ("poisson_nll_loss", lambda: [G(4, 3), CNT(4, 3)], {}),
    ("poisson_nll_loss", lambda: [G(4, 3), CNT(4, 3)], {"full": True}),
    ("poisson_nll_loss", lambda: [POS(4, 3), CNT(4, 3)], {"log_input": False}),
    ("poisson_nll_loss", lambda: [POS(4, 3), CNT(4, 3)], {"log_input": False, "full": True,
                                                          "eps": 1e-3}),
    ("poisson_nll_loss", lambda: [G(6), CNT(6)], {"full": True}),
]
LOSS_IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(LOSSES)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,inputs,options", LOSSES, ids=LOSS_IDS)
def test_loss_matches_torch(name, inputs, options, reduction):
    args = inputs()
    _compare(getattr(IF, name), getattr(TF, name), args, dict(options, reduction=reduction))
    # the module: options at construction, the same inputs to forward
    mi = getattr(inn, MODULE[name])(**dict(zip(options, _made(ignis, options.values()))),
                                    reduction=reduction)
    mt = getattr(torch.nn, MODULE[name])(**dict(zip(options, _made(torch, options.values()))),
                                         reduction=reduction)
    _compare(mi, mt, args)
    assert repr(mi) == repr(mt)
    assert sorted(dict(mi.named_buffers())) == sorted(dict(mt.named_buffers()))


@pytest.mark.parametrize("name,inputs,options", LOSSES[::3], ids=LOSS_IDS[::3])
def test_loss_in_float32_matches_torch(name, inputs, options):
    _compare(getattr(IF, name), getattr(TF, name), inputs(), dict(options, reduction="none"),
             tol=1e-5, dtype=np.float32)


LEGACY = [n for n in MODULE if "size_average" in IF.__dict__[n].__code__.co_varnames]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_flags_choose_the_reduction_as_torch(name):
    assert len(LEGACY) == 9
    args = next(inputs for n, inputs, _ in LOSSES if n == name)()
    for flags in ({"size_average": False}, {"reduce": False}, {"size_average": True},
                  {"size_average": False, "reduce": True}):
        # the flags win over `reduction`, as in torch
        _compare(getattr(IF, name), getattr(TF, name), args, dict(flags, reduction="mean"))
        mi = getattr(inn, MODULE[name])(**flags)
        mt = getattr(torch.nn, MODULE[name])(**flags)
        assert mi.reduction == mt.reduction


def test_gaussian_nll_var_gradient_passes_the_clamp():
    # torch clamps var at eps without blocking its gradient: the clamped
    # entries' gradient is that of var itself.
    var = np.array([1e-4, 0.3, 2.0])
    x, t = RNG.standard_normal(3), RNG.standard_normal(3)
    vi, vt = ignis.tensor(var, requires_grad=True), torch.tensor(var, requires_grad=True)
    li = IF.gaussian_nll_loss(ignis.tensor(x), ignis.tensor(t), vi, eps=0.1, reduction="sum")
    lt = TF.gaussian_nll_loss(torch.tensor(x), torch.tensor(t), vt, eps=0.1, reduction="sum")
    _close(li, lt)
    li.backward()
    lt.backward()
    _close(vi.grad, vt.grad)
    assert vi.grad[0].item() != 0


def test_multilabel_margin_loss_reads_targets_up_to_the_first_minus_one():
    x = RNG.standard_normal((1, 4))
    for row in ([1, -1, 3, 0], [1, -1, 0, 0], [1, 1, -1, 0], [-1, 1, 2, 0], [3, 2, 1, 0]):
        li = IF.multilabel_margin_loss(ignis.tensor(x), ignis.tensor([row]), reduction="none")
        lt = TF.multilabel_margin_loss(torch.tensor(x), torch.tensor([row]), reduction="none")
        _close(li, lt)
    # entries after the -1 do not count
    a = IF.multilabel_margin_loss(ignis.tensor(x), ignis.tensor([[2, -1, 0, 1]]))
    b = IF.multilabel_margin_loss(ignis.tensor(x), ignis.tensor([[2, -1, 3, 3]]))
    assert a.item() == b.item()


# ---- bad input: torch's exception type, and a message that says what is wrong ---------------
def _x(lib, *shape):
    return lib.ones(shape)


def _ints(lib, values):
    return lib.tensor(values)


BAD_LOSS_CALLS = [
    ("margin_ranking_loss dims", RuntimeError, "same dimension",
     lambda F, L: F.margin_ranking_loss(_x(L, 3, 4), _x(L, 4), _x(L, 4))),
    ("margin_ranking_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.margin_ranking_loss(_x(L, 3), _x(L, 3), _x(L, 3), reduction="avg")),
    ("hinge_embedding_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.hinge_embedding_loss(_x(L, 3), _x(L, 3), reduction="batchmean")),
    ("soft_margin_loss shapes", RuntimeError, "must match",
     lambda F, L: F.soft_margin_loss(_x(L, 3, 4), _x(L, 2, 4))),
    ("soft_margin_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.soft_margin_loss(_x(L, 3), _x(L, 3), reduction="Sum")),
    ("cosine_embedding_loss 2-d target", RuntimeError, "0D or 1D target tensor expected",
     lambda F, L: F.cosine_embedding_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3, 1))),
    ("cosine_embedding_loss 1-d target, 1-d inputs", RuntimeError,
     "1D target tensor expects 2D input",
     lambda F, L: F.cosine_embedding_loss(_x(L, 4), _x(L, 4), _x(L, 3))),
    ("cosine_embedding_loss 0-d target, 2-d inputs", RuntimeError,
     "0D target tensor expects 1D input",
     lambda F, L: F.cosine_embedding_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L))),
    ("cosine_embedding_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.cosine_embedding_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3), reduction="x")),
    ("multilabel_soft_margin_loss reduction", ValueError, "not (a )?valid",
     lambda F, L: F.multilabel_soft_margin_loss(_x(L, 3, 4), _x(L, 3, 4), reduction="x")),
    ("multi_margin_loss p", ValueError, "only p == 1 and p == 2 supported",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, 1, 2]), p=3)),
    ("multi_margin_loss 2-d weight", ValueError, "weight must be one-dimensional",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, 1, 2]), weight=_x(L, 2, 2))),
    ("multi_margin_loss weight size", RuntimeError, "inconsistent weight size",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, 1, 2]), weight=_x(L, 3))),
    ("multi_margin_loss target size", RuntimeError, "Expected target size \\[3\\]",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, 1]))),
    ("multi_margin_loss 3-d input", RuntimeError, "Expected non-empty vector or matrix",
     lambda F, L: F.multi_margin_loss(_x(L, 2, 3, 4), _ints(L, [0, 1]))),
    ("multi_margin_loss float target", RuntimeError, "Long",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _x(L, 3))),
    ("multi_margin_loss target out of range", RuntimeError, "(out of range|out of bounds)",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, 1, 4]))),
    ("multi_margin_loss negative target", RuntimeError, "(out of range|out of bounds)",
     lambda F, L: F.multi_margin_loss(_x(L, 3, 4), _ints(L, [0, -1, 2]))),
    ("multilabel_margin_loss target size", RuntimeError, "inconsistent target size",
     lambda F, L: F.multilabel_margin_loss(_x(L, 3, 4), _ints(L, [[1, 2, -1]] * 3))),
    ("multilabel_margin_loss 3-d input", RuntimeError, "Expected non-empty vector or matrix",
     lambda F, L: F.multilabel_margin_loss(_x(L, 2, 3, 4), _ints(L, [[[0] * 4] * 3] * 2))),
    ("multilabel_margin_loss float target", RuntimeError, "Long",
     lambda F, L: F.multilabel_margin_loss(_x(L, 3, 4), _x(L, 3, 4))),
    ("multilabel_margin_loss target out of range", RuntimeError, "(out of range|out of bounds)",
     lambda F, L: F.multilabel_margin_loss(_x(L, 1, 4), _ints(L, [[1, 4, -1, 0]]))),
    ("multilabel_margin_loss target below -1", RuntimeError, "(out of range|out of bounds)",
     lambda F, L: F.multilabel_margin_loss(_x(L, 1, 4), _ints(L, [[1, -2, -1, 0]]))),
    ("multilabel_margin_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.multilabel_margin_loss(_x(L, 1, 4), _ints(L, [[1, -1, 0, 0]]),
                                           reduction="x")),
    ("triplet_margin_loss dims", RuntimeError, "same number of dimensions",
     lambda F, L: F.triplet_margin_loss(_x(L, 3, 4), _x(L, 4), _x(L, 3, 4))),
    ("triplet_margin_loss margin", ValueError, "margin must be greater than 0",
     lambda F, L: F.triplet_margin_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3, 4), margin=0)),
    ("triplet_margin_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.triplet_margin_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3, 4),
                                        reduction="bad")),
    ("triplet_margin_with_distance_loss margin", ValueError, "margin must be greater than 0",
     lambda F, L: F.triplet_margin_with_distance_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3, 4),
                                                      margin=-1.0)),
    ("triplet_margin_with_distance_loss dims", RuntimeError, "same number of dimensions",
     lambda F, L: F.triplet_margin_with_distance_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 4))),
    ("triplet_margin_with_distance_loss reduction", ValueError, "not a valid value",
     lambda F, L: F.triplet_margin_with_distance_loss(_x(L, 4), _x(L, 4), _x(L, 4),
                                                      reduction="bad")),
    ("gaussian_nll_loss negative var", ValueError, "var has negative entry",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), -_x(L, 3, 4))),
    ("gaussian_nll_loss negative float var", ValueError, "var has negative entry",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), -1.0)),
    ("gaussian_nll_loss var of the last dim", ValueError, "var is of incorrect size",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 4))),
    ("gaussian_nll_loss var mismatched twice", ValueError, "var is of incorrect size",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 1, 1))),
    ("gaussian_nll_loss var 2x2", ValueError, "var is of incorrect size",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 2, 2))),
    ("gaussian_nll_loss reduction", ValueError, "not (a )?valid",
     lambda F, L: F.gaussian_nll_loss(_x(L, 3, 4), _x(L, 3, 4), _x(L, 3, 4), reduction="x")),
    ("poisson_nll_loss reduction", ValueError, "not a valid value for reduction",
     lambda F, L: F.poisson_nll_loss(_x(L, 3, 4), _x(L, 3, 4), reduction="x")),
]


@pytest.mark.parametrize("case", BAD_LOSS_CALLS, ids=[c[0] for c in BAD_LOSS_CALLS])
def test_bad_loss_input_raises_like_torch(case):
    _, exc, message, call = case
    with pytest.raises(exc, match=message):
        call(TF, torch)
    with pytest.raises(exc, match=message):
        call(IF, ignis)


BAD_MODULES = [
    ("MultiMarginLoss", {"p": 3}, "only p == 1 and p == 2"),
    ("MultiMarginLoss", {"weight": "2x2"}, "expected weight to be None or 1D tensor"),
    ("TripletMarginLoss", {"margin": 0.0}, "expected margin to be greater than 0"),
    ("TripletMarginWithDistanceLoss", {"margin": -0.5}, "expected margin to be greater than 0"),
]


@pytest.mark.parametrize("name,kwargs,message", BAD_MODULES)
def test_bad_loss_module_arguments_raise_like_torch(name, kwargs, message):
    for lib, nn in ((torch, torch.nn), (ignis, inn)):
        kw = {k: lib.ones(2, 2) if v == "2x2" else v for k, v in kwargs.items()}
        with pytest.raises(ValueError, match=message):
            getattr(nn, name)(**kw)


# ---- compiled --------------------------------------------------------------------------------
def _losses_a(x1, x2, a, pos, neg, logits, target):
    return (IF.margin_ranking_loss(x1, x2, target, margin=0.1),
            IF.triplet_margin_loss(a, pos, neg, swap=True, reduction="sum"),
            IF.soft_margin_loss(x1, x2.sign(), reduction="none"),
            IF.cosine_embedding_loss(a, pos, target, margin=0.2),
            IF.multilabel_soft_margin_loss(logits, (logits > 0).double(), reduction="sum"),
            IF.hinge_embedding_loss(x1, x2.sign(), margin=0.5))


def _losses_b(logits, classes, labels, rate, counts):
    w = ignis.arange(1, 6, dtype=ignis.float64) / 5
    return (IF.multi_margin_loss(logits, classes, p=2, weight=w),
            IF.multilabel_margin_loss(logits, labels, reduction="none"),
            IF.poisson_nll_loss(rate, counts, full=True),
            IF.triplet_margin_with_distance_loss(logits, rate, counts, margin=0.5,
                                                 reduction="none"))


def _gaussian(input, target, var):
    # var's sign check reads its values: capture breaks the graph there (as
    # Dynamo does on torch's), so this one is compiled without fullgraph
    return (IF.gaussian_nll_loss(input, target, var, full=True, reduction="none") * 2,)


def _compiled_inputs(fn):
    if fn is _losses_a:
        return [G(5), G(5), G(5, 4), G(5, 4), G(5, 4), G(5, 5), PM(5)]
    if fn is _losses_b:
        return [G(6, 5), CLS(5, (6,)), LBL(6, 5), G(6, 5), CNT(6, 5)]
    return [G(4, 3), G(4, 3), POS(4, 1)]


@pytest.mark.parametrize("fn", [_losses_a, _losses_b, _gaussian])
def test_compiled_matches_eager(fn):
    from ignis._inductor import metrics
    ignis.compiler.reset()
    metrics.reset()
    args = _compiled_inputs(fn)
    eager, compiled = _made(ignis, args), _made(ignis, args)
    want = fn(*eager)
    got = ignis.compile(fn, backend="inductor", fullgraph=fn is not _gaussian)(*compiled)
    assert metrics.generated_kernel_count > 0
    cot = [ignis.tensor(RNG.standard_normal(tuple(w.shape))) for w in want]
    sum((w * c).sum() for w, c in zip(want, cot)).backward()
    sum((g * c).sum() for g, c in zip(got, cot)).backward()
    for g, w in zip(got, want):
        _close(g, w, 1e-9)
    for a, b in zip(compiled, eager):
        if getattr(b, "grad", None) is not None:
            _close(a.grad, b.grad, 1e-9)
    ignis.compiler.reset()
