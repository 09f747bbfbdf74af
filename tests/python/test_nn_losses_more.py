"""The losses and layers ignis writes over other ops (nn/_losses.py, the
alpha dropouts, gumbel_softmax, bilinear, local_response_norm, lp_pool,
channel_shuffle, pdist, LazyLinear): values and input gradients against
torch from the same NumPy inputs (every reduction, batched and unbatched
shapes, the options), module reprs, torch's exceptions for bad input, the
random layers' statistics, and a few under ignis.compile against eager."""
import copy
import math
import pickle
import warnings

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


# ---- layers -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,lambd", [("Hardshrink", 0.5), ("Hardshrink", 1.2),
                                        ("Softshrink", 0.5), ("Softshrink", 0.3)])
def test_shrink_modules(name, lambd):
    x = RNG.uniform(-3, 3, (4, 5))
    x[np.abs(np.abs(x) - lambd) < 0.05] += 0.2  # off the kinks
    mi, mt = getattr(inn, name)(lambd), getattr(torch.nn, name)(lambd)
    _compare(mi, mt, [Arg(x, grad=True)])
    assert repr(mi) == repr(mt)
    assert repr(getattr(inn, name)()) == repr(getattr(torch.nn, name)())


@pytest.mark.parametrize("shapes", [((4, 3), (4, 5)), ((3,), (5,)), ((2, 3, 3), (2, 3, 5))],
                         ids=["batch", "unbatched", "two-batch-dims"])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(shapes, bias):
    (s1, s2), out = shapes, 4
    args = [G(*s1), G(*s2), G(out, s1[-1], s2[-1]), G(out) if bias else None]
    _compare(IF.bilinear, TF.bilinear, args)
    mi = inn.Bilinear(s1[-1], s2[-1], out, bias=bias).double()
    mt = torch.nn.Bilinear(s1[-1], s2[-1], out, bias=bias).double()
    with ignis.no_grad():
        mi.weight.copy_(ignis.tensor(mt.weight.detach().numpy()))
        if bias:
            mi.bias.copy_(ignis.tensor(mt.bias.detach().numpy()))
    x1, x2 = RNG.standard_normal(s1), RNG.standard_normal(s2)
    _compare(mi, mt, [Arg(x1, grad=True), Arg(x2, grad=True)])
    for a, b in zip(mi.parameters(), mt.parameters()):
        _close(a.grad, b.grad)
    assert repr(mi) == repr(mt)
    assert [n for n, _ in mi.named_parameters()] == [n for n, _ in mt.named_parameters()]


def test_bilinear_init_and_errors():
    m = inn.Bilinear(50, 7, 30)
    bound = 1 / math.sqrt(50)
    w = m.weight.detach().numpy()
    assert m.weight.shape == (30, 50, 7) and m.bias.shape == (30,)
    assert np.abs(w).max() <= bound and np.abs(m.bias.detach().numpy()).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound  # U(-b, b)
    assert abs(w.mean()) < 0.05 * bound
    for lib, F in ((torch, TF), (ignis, IF)):
        w3 = lib.ones(5, 3, 4)
        for a, b, w, bias, msg in (
                ((2, 3), (4,), w3, None, "input dimensions do not match"),
                ((2, 3), (3, 4), w3, None, "batch dimensions do not match"),
                ((2, 2), (2, 4), w3, None, "input1 size does not match weight size"),
                ((2, 3), (2, 3), w3, None, "input2 size does not match weight size"),
                ((2, 3), (2, 4), w3, lib.ones(4), "bias size does not match weight size")):
            with pytest.raises(RuntimeError, match=msg):
                F.bilinear(lib.ones(*a), lib.ones(*b), w, bias)


@pytest.mark.parametrize("shape,size", [((2, 6, 5), 3), ((2, 6, 5), 2), ((1, 5, 3, 4), 5),
                                        ((2, 4, 2, 3, 3), 3), ((3, 4, 5), 1)])
def test_local_response_norm_matches_torch(shape, size):
    args = [G(*shape)]
    _compare(lambda x: IF.local_response_norm(x, size, 1e-2, 0.6, 1.5),
             lambda x: TF.local_response_norm(x, size, 1e-2, 0.6, 1.5), args)
    _compare(inn.LocalResponseNorm(size), torch.nn.LocalResponseNorm(size), args)
    assert repr(inn.LocalResponseNorm(size, 0.1, 0.5, 2.0)) == \
        repr(torch.nn.LocalResponseNorm(size, 0.1, 0.5, 2.0))


def test_local_response_norm_errors_and_empty_input():
    for lib, F in ((torch, TF), (ignis, IF)):
        with pytest.raises(ValueError, match="Expected 3D or higher dimensionality"):
            F.local_response_norm(lib.ones(2, 3), 2)
        e = lib.ones(0, 3, 4)
        assert F.local_response_norm(e, 2) is e


LP_POOLS = [
    ("lp_pool1d", (2, 3, 9), 2.0, 3, None, False),
    ("lp_pool1d", (3, 9), 3.0, 2, 1, False),
    ("lp_pool1d", (2, 3, 8), 1.5, 3, 2, True),
    ("lp_pool1d", (2, 3, 8), float("inf"), 3, None, False),
    ("lp_pool1d", (2, 3, 8), 1.0, (3,), None, False),
    ("lp_pool2d", (2, 3, 6, 6), 2.0, 2, None, False),
    ("lp_pool2d", (3, 7, 7), 3.0, (3, 2), (2, 1), True),
    ("lp_pool2d", (1, 2, 5, 6), 1.0, 3, 1, False),
    ("lp_pool2d", (1, 2, 6, 6), float("inf"), (2, 3), None, False),
]


@pytest.mark.parametrize("name,shape,p,kernel,stride,ceil", LP_POOLS)
def test_lp_pool_matches_torch(name, shape, p, kernel, stride, ceil):
    # positive inputs: x ** p of a negative x is nan for fractional p (in both)
    x = Arg(RNG.uniform(0.1, 2.0, shape), grad=True)
    if name == "lp_pool1d" and isinstance(kernel, tuple):  # torch multiplies by the tuple
        with pytest.raises(TypeError):
            TF.lp_pool1d(torch.ones(shape), p, kernel)
        _compare(lambda t: IF.lp_pool1d(t, p, kernel), lambda t: TF.lp_pool1d(t, p, kernel[0]),
                 [x])
        return
    _compare(lambda t: getattr(IF, name)(t, p, kernel, stride, ceil),
             lambda t: getattr(TF, name)(t, p, kernel, stride, ceil), [x])
    mod = "LPPool1d" if name == "lp_pool1d" else "LPPool2d"
    mi, mt = getattr(inn, mod)(p, kernel, stride, ceil), getattr(torch.nn, mod)(p, kernel,
                                                                              stride, ceil)
    _compare(mi, mt, [x])
    assert repr(mi) == repr(mt)


def test_lp_pool_odd_power_of_negative_values_as_torch():
    # torch clamps a negative window average (odd p) to 0 before the root
    x = Arg(RNG.standard_normal((2, 3, 8)))
    _compare(lambda t: IF.lp_pool1d(t, 3, 2), lambda t: TF.lp_pool1d(t, 3, 2), [x])
    _compare(lambda t: IF.lp_pool1d(t, float("-inf"), 2),
             lambda t: TF.lp_pool1d(t, float("-inf"), 2), [x])


@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((1, 4, 2, 2), 2), ((2, 6, 2, 1, 2), 2),
                                          ((2, 6, 3), 1), ((3, 6, 2), 6)])
def test_channel_shuffle_matches_torch(shape, groups):
    x = Arg(RNG.standard_normal(shape), grad=True)
    _compare(lambda t: IF.channel_shuffle(t, groups), lambda t: TF.channel_shuffle(t, groups), [x])
    mi, mt = inn.ChannelShuffle(groups), torch.nn.ChannelShuffle(groups)
    _compare(mi, mt, [x])
    assert repr(mi) == repr(mt)


def test_channel_shuffle_errors():
    for lib, F in ((torch, TF), (ignis, IF)):
        for shape, g, msg in (((2, 4), 2, "expects input with > 2 dims"),
                              ((2, 4, 3), 0, "must be positive"),
                              ((2, 4, 3), 3, "must be divisible by groups")):
            with pytest.raises(RuntimeError, match=msg):
                F.channel_shuffle(lib.ones(*shape), g)


@pytest.mark.parametrize("shape", [(6, 3), (2, 5), (1, 4), (0, 3)])
@pytest.mark.parametrize("p", [2, 1.0, 3.0, 0.5, 0, float("inf")])
def test_pdist_matches_torch(shape, p):
    # fewer than two rows: no distances (torch 2.13's pdist backward then crashes, so
    # only ignis's gradient is checked: zeros)
    empty = shape[0] < 2
    x = Arg(RNG.standard_normal(shape), grad=not empty)
    _compare(lambda t: IF.pdist(t, p), lambda t: torch.pdist(t, p), [x])
    _compare(lambda t: ignis.pdist(t, p=p), lambda t: TF.pdist(t, p=p), [x])
    if empty:
        xi = ignis.tensor(x.array, requires_grad=True)
        ignis.pdist(xi, p).sum().backward()
        assert xi.grad.shape == shape and not xi.grad.numpy().any()


def test_pdist_errors():
    for lib in (torch, ignis):
        with pytest.raises(RuntimeError, match="only supports 2D tensors"):
            lib.pdist(lib.ones(2, 3, 4))
        with pytest.raises(RuntimeError, match="floating-point"):
            lib.pdist(lib.ones(3, 4, dtype=lib.int64))
        with pytest.raises(RuntimeError, match="non-negative p"):
            lib.pdist(lib.ones(3, 4), -1)


# ---- random layers ------------------------------------------------------------------------
_ALPHA = 1.7580993408473766


def _alpha_affine(p):
    a = 1 / math.sqrt((_ALPHA ** 2 * p + 1) * (1 - p))
    return a, _ALPHA * a * p, -_ALPHA * a * (1 - p)   # a, kept's offset, a dropped unit's value


@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_statistics(p):
    ignis.manual_seed(0)
    x = ignis.randn(400, 500, dtype=ignis.float64).requires_grad_()
    y = IF.alpha_dropout(x, p, training=True)
    a, offset, dropped_value = _alpha_affine(p)
    yv, xv = y.detach().numpy(), x.detach().numpy()
    dropped = np.isclose(yv, dropped_value, rtol=0, atol=1e-12)
    assert abs(dropped.mean() - p) < 0.01
    np.testing.assert_allclose(yv[~dropped], a * xv[~dropped] + offset, rtol=1e-12, atol=1e-12)
    # the point of alpha dropout: mean 0 and variance 1 are kept
    assert abs(yv.mean()) < 0.02 and abs(yv.std() - 1) < 0.02
    y.sum().backward()
    g = x.grad.numpy()
    assert np.allclose(g[~dropped], a) and np.all(g[dropped] == 0)


def test_feature_alpha_dropout_drops_whole_channels():
    ignis.manual_seed(1)
    p = 0.4
    x = ignis.randn(64, 50, 3, 4, dtype=ignis.float64)
    y = IF.feature_alpha_dropout(x, p, training=True).numpy()
    a, offset, dropped_value = _alpha_affine(p)
    dropped = np.isclose(y, dropped_value, rtol=0, atol=1e-12).reshape(64, 50, 12)
    per_channel = dropped.all(-1)
    assert np.array_equal(per_channel, dropped.any(-1))  # a channel is all dropped or all kept
    assert abs(per_channel.mean() - p) < 0.03
    kept = ~per_channel
    np.testing.assert_allclose(y.reshape(64, 50, 12)[kept],
                               a * x.numpy().reshape(64, 50, 12)[kept] + offset, rtol=1e-12)
    # torch does the same
    yt = TF.feature_alpha_dropout(torch.randn(64, 50, 3, 4, dtype=torch.float64), p, True)
    dt = np.isclose(yt.numpy(), dropped_value, rtol=0, atol=1e-12).reshape(64, 50, 12)
    assert np.array_equal(dt.all(-1), dt.any(-1)) and abs(dt.all(-1).mean() - p) < 0.03


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropouts_when_not_training_and_at_the_ends(name):
    fi, ft = getattr(IF, name), getattr(TF, name)
    x = RNG.standard_normal((4, 3, 5))
    for lib, f in ((ignis, fi), (torch, ft)):
        t = lib.tensor(x)
        assert f(t, 0.5) is t                      # training defaults to False
        assert f(t, 0.5, False, True) is t
        assert f(t, 0.0, True) is t
        _close(f(t, 1.0, True), np.zeros_like(x))
        with pytest.raises(ValueError, match="between 0 and 1"):
            f(t, 1.5, True)
        with pytest.raises(ValueError, match="between 0 and 1"):
            f(t, -0.1)
        u = lib.tensor(x)
        assert f(u, 0.3, True, True) is u          # written in place
        assert not np.allclose(_np(u), x)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        IF.feature_alpha_dropout(ignis.ones(3), 0.5, True)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        TF.feature_alpha_dropout(torch.ones(3), 0.5, True)


@pytest.mark.parametrize("name", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_modules(name):
    x = RNG.standard_normal((8, 6, 5))
    for lib, nn in ((ignis, inn), (torch, torch.nn)):
        m = getattr(nn, name)(0.3, inplace=True)
        t = lib.tensor(x)
        y = m(t)
        assert not np.allclose(_np(y), x)          # training: drops
        _close(t, x)                                # `inplace` is not passed on (torch's module)
        m.eval()
        assert m(t) is t
    assert repr(getattr(inn, name)(0.3, True)) == repr(getattr(torch.nn, name)(0.3, True))
    with pytest.raises(ValueError):
        getattr(inn, name)(1.5)


def test_gumbel_softmax_samples_the_softmax():
    ignis.manual_seed(3)
    logits = np.log(np.array([0.6, 0.3, 0.1]))
    n = 20000
    lg = ignis.tensor(np.tile(logits, (n, 1)))
    y = IF.gumbel_softmax(lg, tau=0.5)
    yv = y.numpy()
    assert np.all(yv >= 0) and np.allclose(yv.sum(1), 1)
    freq = np.bincount(yv.argmax(1), minlength=3) / n
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.015)
    h = IF.gumbel_softmax(lg, hard=True).numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(1) == 1)
    np.testing.assert_allclose(h.mean(0), [0.6, 0.3, 0.1], atol=0.015)
    # a low temperature gives nearly one-hot soft samples, a high one nearly uniform
    assert IF.gumbel_softmax(lg[:500], tau=0.01).numpy().max(1).mean() > 0.99
    assert IF.gumbel_softmax(lg[:500], tau=100.0).numpy().max(1).mean() < 0.36


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient(dim):
    x = RNG.standard_normal((5, 4, 3))
    g = ignis.tensor(RNG.standard_normal((5, 4, 3)))
    li, ls = ignis.tensor(x, requires_grad=True), ignis.tensor(x, requires_grad=True)
    ignis.manual_seed(11)
    hard = IF.gumbel_softmax(li, tau=0.7, hard=True, dim=dim)
    ignis.manual_seed(11)
    soft = IF.gumbel_softmax(ls, tau=0.7, dim=dim)
    hv, sv = hard.detach().numpy(), soft.detach().numpy()
    assert np.all(hv.sum(dim) == 1) and set(np.unique(hv)) <= {0.0, 1.0}
    expected = np.expand_dims(sv.argmax(dim), dim) == np.arange(x.shape[dim]).reshape(
        [-1 if d == dim % 3 else 1 for d in range(3)])
    assert np.array_equal(hv == 1, expected)
    (hard * g).sum().backward()
    (soft * g).sum().backward()
    _close(li.grad, ls.grad, 1e-12)


def test_gumbel_softmax_eps_is_deprecated_as_in_torch():
    for F, lib in ((IF, ignis), (TF, torch)):
        with pytest.warns(UserWarning, match="deprecated"):
            F.gumbel_softmax(lib.ones(2, 3), eps=1e-5)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            F.gumbel_softmax(lib.ones(2, 3))


# ---- LazyLinear ---------------------------------------------------------------------------
def test_lazy_linear_before_and_after_its_first_call_as_torch():
    for lib, nn in ((ignis, inn), (torch, torch.nn)):
        m = nn.LazyLinear(3)
        assert repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
        assert [type(p).__name__ for p in m.parameters()] == ["UninitializedParameter"] * 2
        sd = m.state_dict()
        assert list(sd) == ["weight", "bias"]
        assert all(type(v).__name__ == "UninitializedParameter" for v in sd.values())
        assert m.has_uninitialized_params()
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            m.weight.shape
        assert repr(m.weight) == "<UninitializedParameter>"
        y = m(lib.ones(2, 4, 5))
        assert type(m) is nn.Linear and not isinstance(m.weight, nn.UninitializedParameter)
        assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
        assert tuple(m.weight.shape) == (3, 5) and tuple(m.bias.shape) == (3,)
        assert tuple(y.shape) == (2, 4, 3) and m.weight.requires_grad
        assert list(m.state_dict()) == ["weight", "bias"]
        m2 = nn.LazyLinear(2, bias=False)
        assert list(m2.state_dict()) == ["weight"] and m2.bias is None
        m2(lib.ones(3))
        assert repr(m2) == "Linear(in_features=3, out_features=2, bias=False)"


def test_lazy_linear_initializes_as_linear_and_trains():
    ignis.manual_seed(0)
    m = inn.LazyLinear(200)
    x = ignis.randn(8, 300)
    opt_params = list(m.parameters())
    y = m(x)
    # Linear's init: kaiming-uniform(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)), same bias bound
    bound = 1 / math.sqrt(300)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    _close(y, x.numpy() @ w.T + m.bias.detach().numpy(), 1e-5)
    # the parameters were materialized in place: the objects from before the call train
    assert opt_params[0] is m.weight and opt_params[1] is m.bias
    opt = ignis.optim.SGD(opt_params, lr=0.1)
    before = w.copy()
    m(x).pow(2).mean().backward()
    opt.step()
    assert not np.allclose(m.weight.detach().numpy(), before)


def test_lazy_linear_state_dict_copy_and_conversion():
    src = inn.Linear(5, 3)
    m = inn.LazyLinear(3)
    m.load_state_dict(src.state_dict())      # materializes from the loaded shapes
    assert type(m) is inn.LazyLinear and not m.has_uninitialized_params()
    _close(m.weight, src.weight)
    x = ignis.randn(2, 5)
    _close(m(x), src(x))
    assert repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
    # an uninitialized state_dict loads into a lazy module, not into a Linear
    lazy = inn.LazyLinear(3)
    lazy.load_state_dict(inn.LazyLinear(3).state_dict())
    assert lazy.has_uninitialized_params()
    with pytest.raises(RuntimeError, match="uninitialized parameter"):
        inn.Linear(5, 3).load_state_dict(inn.LazyLinear(3).state_dict())
    # copies and conversions stay lazy, and initialize on their own
    c = copy.deepcopy(lazy)
    assert c(ignis.randn(2, 7)).shape == (2, 3) and type(c) is inn.Linear
    assert type(lazy) is inn.LazyLinear and lazy.has_uninitialized_params()
    d = inn.LazyLinear(3).double()
    assert type(d.weight).__name__ == "UninitializedParameter"
    d(ignis.randn(2, 4, dtype=ignis.float64))
    assert d.weight.dtype == ignis.float64
    p = pickle.loads(pickle.dumps(inn.LazyLinear(3)))
    assert p.has_uninitialized_params() and p(ignis.randn(1, 2)).shape == (1, 3)


def test_uninitialized_parameter_materializes_in_place():
    p = inn.UninitializedParameter(dtype=ignis.float64)
    assert inn.parameter.is_lazy(p) and p.requires_grad
    with pytest.raises(NotImplementedError, match="in place"):
        p.materialize((2, 3), dtype=ignis.float32)
    same = p
    p.materialize((2, 3))
    assert p is same and type(p) is inn.Parameter and not inn.parameter.is_lazy(p)
    assert p.shape == (2, 3) and p.dtype == ignis.float64 and p.requires_grad and p.is_leaf


def test_lazy_linear_under_compile():
    m = inn.Sequential(inn.LazyLinear(3), inn.ReLU(), inn.LazyLinear(2))
    x = ignis.randn(4, 5)
    y = ignis.compile(m, backend="inductor")(x)   # the first call materializes them
    assert [type(c).__name__ for c in m] == ["Linear", "ReLU", "Linear"]
    _close(y, m(x), 1e-6)
    _close(ignis.compile(m, backend="inductor", fullgraph=True)(x), m(x), 1e-6)
    ignis.compiler.reset()


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


def _layers(x, w, b, y):
    return (IF.local_response_norm(x, 3),
            IF.lp_pool2d(x.abs() + 0.1, 2.0, 2),
            IF.channel_shuffle(x, 2),
            IF.bilinear(y, y, w, b),
            ignis.pdist(y, 2))


def _compiled_inputs(fn):
    if fn is _losses_a:
        return [G(5), G(5), G(5, 4), G(5, 4), G(5, 4), G(5, 5), PM(5)]
    if fn is _losses_b:
        return [G(6, 5), CLS(5, (6,)), LBL(6, 5), G(6, 5), CNT(6, 5)]
    if fn is _gaussian:
        return [G(4, 3), G(4, 3), POS(4, 1)]
    return [G(2, 4, 4, 4), G(3, 6, 6), G(3), G(5, 6)]


@pytest.mark.parametrize("fn", [_losses_a, _losses_b, _layers, _gaussian])
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


# ---- CTC --------------------------------------------------------------------------------------
def _ctc_case(seed):
    rng = np.random.default_rng(seed)
    T, N, C, S = int(rng.integers(3, 9)), int(rng.integers(1, 4)), int(rng.integers(3, 6)), 4
    logits = rng.standard_normal((T, N, C))
    il = [T] + [int(rng.integers(1, T + 1)) for _ in range(N - 1)]
    tl = [int(rng.integers(0, min(S, T // 2) + 1)) for _ in range(N)]
    targets = rng.integers(1, C, (N, S))
    if seed % 3 == 0:
        targets[:, 1] = targets[:, 0]  # a repeated label needs a blank between
    return logits, targets, il, tl


def _ctc(lib, logits, targets, il, tl, concat=False, **kw):
    x = lib.from_numpy(logits.copy()).requires_grad_()
    tg = lib.from_numpy(targets.copy())
    if concat:
        tg = lib.cat([tg[b, :n] for b, n in enumerate(tl)])
    loss = lib.nn.functional.ctc_loss(x.log_softmax(-1), tg, lib.tensor(il), lib.tensor(tl), **kw)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kw", [{"reduction": "none"}, {"reduction": "mean"},
                                {"reduction": "sum", "zero_infinity": True},
                                {"reduction": "mean", "concat": True}], ids=str)
def test_ctc_loss_matches_torch(seed, kw):
    # values and the logits' gradients (through log_softmax) in float64
    case = _ctc_case(seed)
    (li, gi), (lt, gt) = _ctc(ignis, *case, **kw), _ctc(torch, *case, **kw)
    np.testing.assert_allclose(li, lt, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gi, gt, rtol=1e-9, atol=1e-12)


def test_ctc_loss_module_unbatched_blank_and_infeasible_targets():
    rng = np.random.default_rng(0)
    lp = rng.standard_normal((6, 4))
    for blank in (0, 3):
        tg = np.array([1, 2, 2]) if blank == 0 else np.array([0, 2, 2])
        got = inn.CTCLoss(blank=blank, reduction="none")(
            ignis.from_numpy(lp).log_softmax(-1), ignis.from_numpy(tg), (6,), (3,))
        want = torch.nn.CTCLoss(blank=blank, reduction="none")(
            torch.from_numpy(lp).log_softmax(-1), torch.from_numpy(tg), (6,), (3,))
        assert tuple(got.shape) == tuple(want.shape) == ()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
    # 2 frames cannot emit "1 1" (a blank must separate the repeats): the loss is infinite
    x = rng.standard_normal((2, 1, 3))
    for zero in (False, True):
        li, gi = _ctc(ignis, x, np.array([[1, 1]]), [2], [2], reduction="sum", zero_infinity=zero)
        lt, _ = _ctc(torch, x, np.array([[1, 1]]), [2], [2], reduction="sum", zero_infinity=zero)
        assert li == lt == (0.0 if zero else math.inf)
        assert np.all(gi == 0)  # torch's are NaN without zero_infinity
