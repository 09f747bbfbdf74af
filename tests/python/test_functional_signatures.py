"""ignis.nn.functional is torch.nn.functional: for every function both modules
expose (the list comes from their shared names), the same parameters (names,
order, defaults), and the same values and gradients when called with torch's
signature positionally and by keyword, including inplace=True (the input is
written and returned) and the in-place forms (elu_, ...). Also: a Python bool
never binds silently to a number where an op takes it as a bool (issue #16:
F.elu(x, 1.0, False) returned zeros), and the activation modules pass
`inplace` through. Skipped without torch."""
import ast
import inspect
import re
import warnings

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis
import ignis.nn as inn
import ignis.nn.functional as IF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _functions(module):
    return {n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))
            and not inspect.isclass(getattr(module, n))}


SHARED = sorted(_functions(IF) & _functions(TF))


# ---- signatures ---------------------------------------------------------------------------
def torch_parameters(name):
    """[(name, default)] of torch's function: from inspect, else (builtins and
    boolean-dispatch wrappers) from the signature its docstring begins with;
    None when neither gives one."""
    fn = getattr(TF, name)
    try:
        ps = list(inspect.signature(fn).parameters.values())
        if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in ps):
            return [(p.name, p.default) for p in ps]
    except (TypeError, ValueError):
        pass
    m = re.match(r"\s*(\w+)\(([^)]*)\)", fn.__doc__ or "")
    if not m or m.group(1) != name:
        return None
    args = ast.parse(f"def f({m.group(2)}): pass").body[0].args
    names = [a.arg for a in args.args + args.kwonlyargs]
    defaults = [inspect.Parameter.empty] * (len(args.args) - len(args.defaults)) + [
        eval(compile(ast.Expression(d), "<doc>", "eval")) for d in args.defaults] + [
        inspect.Parameter.empty if d is None else eval(compile(ast.Expression(d), "<doc>", "eval"))
        for d in args.kw_defaults]
    return list(zip(names, defaults))


def ignis_parameters(fn):
    return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]


# Shared names whose signatures differ from torch's, and why. Empty: every
# shared function has torch's parameter names and defaults.
SIGNATURE_DIFFERS = {
    # torch's docstring says one_hot(tensor, ...); its argument parser takes
    # `input` (F.one_hot(tensor=x) is a TypeError), and so does ignis
    "one_hot": "torch documents `tensor`, accepts `input`",
}
# Shared names whose torch signature neither inspect nor the docstring gives.
TORCH_SIGNATURE_UNKNOWN = set()


def test_shared_names_have_torchs_signature():
    unknown, differ = set(), {}
    for name in SHARED:
        want = torch_parameters(name)
        if want is None:
            unknown.add(name)
            continue
        got = ignis_parameters(getattr(IF, name))
        if got != want:
            differ[name] = (got, want)
    assert unknown == TORCH_SIGNATURE_UNKNOWN
    assert set(differ) == set(SIGNATURE_DIFFERS), differ


# ---- sample calls -------------------------------------------------------------------------
RNG = np.random.default_rng(16)


class T:
    """A tensor argument: the same numbers for both libraries; `grad`: a leaf
    whose gradient is compared."""

    def __init__(self, array, grad=False):
        self.array, self.grad = array, grad

    def make(self, lib):
        t = lib.tensor(self.array)
        return t.requires_grad_() if self.grad else t


def X(*shape, lo=-3.0, hi=3.0, grad=True):
    return T(RNG.uniform(lo, hi, shape).astype(np.float32), grad)


def C(*shape, lo=0.05, hi=0.95):
    return X(*shape, lo=lo, hi=hi, grad=False)


def L(values):
    return T(np.array(values, dtype=np.int64))


def PM(*shape):
    """+1 / -1 targets."""
    return T(RNG.choice([-1.0, 1.0], shape).astype(np.float32))


def K(*shape):
    """Poisson counts."""
    return T(RNG.poisson(2.0, shape).astype(np.float32))


# Logits whose classes lie 100 apart: gumbel_softmax's noise cannot change a
# row's argmax, so its draws do not show in values or gradients.
GAPPED = T(np.array([[0.0, 100.0, 200.0, 300.0], [300.0, 0.0, 200.0, 100.0],
                     [100.0, 300.0, 0.0, 200.0]], dtype=np.float32), grad=True)


# name -> [(positional args in torch's order, keyword args)]; the first tensor
# is `input`. Random functionals are sampled where they draw nothing.
SAMPLES = {
    "adaptive_avg_pool1d": [([X(2, 3, 8), 4], {})],
    "adaptive_avg_pool2d": [([X(2, 3, 8, 8), (4, 3)], {})],
    "adaptive_avg_pool3d": [([X(2, 3, 6, 5, 4), (3, 2, 4)], {})],
    "affine_grid": [([X(2, 2, 3), [2, 3, 4, 5], False], {}), ([X(1, 3, 4), [1, 2, 3, 2, 4], True],
                                                                {})],
    "adaptive_max_pool1d": [([X(2, 3, 8), 4, False], {}), ([X(2, 3, 8), 3, True], {})],
    "adaptive_max_pool2d": [([X(2, 3, 8, 8), 3, False], {}), ([X(1, 2, 6, 6), 2, True], {})],
    "adaptive_max_pool1d_with_indices": [([X(2, 3, 9), 4, False], {})],
    "adaptive_max_pool2d_with_indices": [([X(2, 3, 8, 8), 3, False], {})],
    "adaptive_max_pool3d": [([X(2, 3, 5, 6, 7), (2, 3, 4), False], {}),
                            ([X(1, 2, 4, 4, 4), 2, True], {})],
    "adaptive_max_pool3d_with_indices": [([X(1, 2, 4, 5, 6), 3, False], {})],
    "alpha_dropout": [([X(3, 4), 0.5, False, False], {}), ([X(3, 4), 0.0, True, False], {}),
                      ([X(3, 4), 1.0, True, False], {})],
    "avg_pool1d": [([X(2, 3, 9), 3, 2, 1, False, True], {})],
    "avg_pool2d": [([X(2, 3, 9, 9), 3, 2, 1, True, False, None], {})],
    "avg_pool3d": [([X(2, 3, 5, 6, 7), 3, 2, 1, True, False, None], {}),
                   ([X(3, 4, 4, 4), 2, None, 0, False, True, 3], {})],
    "batch_norm": [([X(4, 3, 5), C(3), C(3), X(3), X(3), True, 0.2, 1e-4], {}),
                   ([X(4, 3, 5), C(3), C(3), X(3), X(3), False, 0.1, 1e-5], {})],
    "bilinear": [([X(4, 3), X(4, 5), X(2, 3, 5), X(2)], {}), ([X(3), X(5), X(2, 3, 5), None], {})],
    "binary_cross_entropy": [([C(3, 4), C(3, 4), C(3, 4), None, None, "sum"], {})],
    "binary_cross_entropy_with_logits": [([X(3, 4), C(3, 4), None, None, None, "mean",
                                           C(4, lo=0.5, hi=2.0)], {})],
    "celu": [([X(3, 4), 0.7, False], {})],
    "celu_": [([X(3, 4), 0.7], {})],
    "selu_": [([X(3, 4)], {})],
    "fractional_max_pool2d": [([X(2, 3, 7, 8), 2, (3, 4), None, False, C(2, 3, 2)], {}),
                              ([X(3, 9, 9), (2, 3), None, (0.5, 0.6), True, C(1, 3, 2)], {})],
    "fractional_max_pool2d_with_indices": [([X(2, 3, 7, 8), 3, 4, None, False, C(2, 3, 2)],
                                            {})],
    "fractional_max_pool3d": [([X(2, 2, 5, 6, 7), 2, (2, 3, 4), None, True, C(2, 2, 3)], {})],
    "fractional_max_pool3d_with_indices": [([X(2, 5, 6, 7), 2, 3, None, False, C(1, 2, 3)],
                                            {})],
    "multi_head_attention_forward": [
        ([X(3, 2, 8), X(5, 2, 8), X(5, 2, 8), 8, 2, X(24, 8, lo=-0.5, hi=0.5),
          X(24, lo=-0.5, hi=0.5), None, None, False, 0.0, X(8, 8, lo=-0.5, hi=0.5),
          X(8, lo=-0.5, hi=0.5)], {}),
        ([X(3, 8), X(4, 8), X(4, 8), 8, 4, X(24, 8, lo=-0.5, hi=0.5), None,
          X(1, 1, 8), X(1, 1, 8), True, 0.0, X(8, 8, lo=-0.5, hi=0.5), None],
         {"key_padding_mask": T(np.array([False, False, True, False])),
          "average_attn_weights": False})],
    "channel_shuffle": [([X(2, 6, 3), 3], {}), ([X(1, 4, 2, 2), 2], {})],
    "conv1d": [([X(2, 3, 10), X(4, 3, 3), X(4), 2, 1, 1, 1], {})],
    "conv2d": [([X(2, 4, 6, 6), X(6, 2, 3, 3), X(6), 1, 1, 1, 2], {})],
    "conv3d": [([X(1, 2, 5, 5, 5), X(3, 2, 3, 3, 3), X(3), 1, 0, 1, 1], {})],
    "conv_transpose1d": [([X(2, 3, 5), X(3, 4, 3), X(4), 2, 1, 1, 1, 1], {})],
    "conv_transpose2d": [([X(1, 3, 4, 4), X(3, 2, 3, 3), X(2), 2, 1, 1, 1, 1], {})],
    "conv_transpose3d": [([X(1, 2, 3, 3, 3), X(2, 2, 3, 3, 3), X(2), 1, 0, 0, 1, 1], {})],
    "cosine_embedding_loss": [([X(4, 5), X(4, 5), PM(4), 0.2, None, None, "mean"], {})],
    "cosine_similarity": [([X(3, 5), X(3, 5), 1, 1e-8], {})],
    "feature_alpha_dropout": [([X(2, 3, 4), 0.5, False, False], {}),
                              ([X(2, 3, 4), 1.0, True, False], {})],
    "fold": [([X(2, 12, 9), (4, 4), 2, 1, 0, 1], {}), ([X(12, 9), (4, 5), (2, 3), 1, 1, 2], {})],
    "gaussian_nll_loss": [([X(3, 4), X(3, 4), X(3, 4, lo=0.1, hi=2.0), False, 1e-6, "mean"], {}),
                          ([X(3, 4), X(3, 4), X(3, lo=0.1, hi=2.0), True, 0.3, "sum"], {})],
    "gumbel_softmax": [([GAPPED, 1, True, 1e-10, -1], {}), ([GAPPED, 0.5, False, 1e-10, -1], {})],
    "hinge_embedding_loss": [([X(3, 4), PM(3, 4), 0.5, None, None, "sum"], {})],
    "local_response_norm": [([X(2, 5, 4), 3, 1e-3, 0.75, 2.0], {}), ([X(1, 4, 3, 3), 2], {})],
    "lp_pool1d": [([X(2, 3, 8, lo=0.1), 2.0, 3, 2, False], {})],
    "lp_pool2d": [([X(1, 2, 7, 7, lo=0.1), 3.0, (3, 2), (2, 1), True], {})],
    "lp_pool3d": [([X(1, 2, 5, 6, 7, lo=0.1), 2.0, (3, 2, 2), (2, 1, 2), True], {})],
    "margin_ranking_loss": [([X(5), X(5), PM(5), 0.3, None, None, "mean"], {})],
    "multi_margin_loss": [([X(4, 5), L([0, 4, 2, 1]), 2, 0.7, C(5), None, None, "mean"], {})],
    "multilabel_margin_loss": [([X(3, 4), L([[3, 0, -1, 1], [1, 2, 3, -1], [-1, 0, 0, 0]]), None,
                                None, "mean"], {})],
    "multilabel_soft_margin_loss": [([X(3, 4), C(3, 4), C(4), None, None, "mean"], {})],
    "pdist": [([X(5, 3), 2], {}), ([X(4, 3), 1.0], {})],
    "poisson_nll_loss": [([X(3, 4), K(3, 4), True, True, None, 1e-8, None, "mean"], {}),
                         ([X(3, 4, lo=0.1), K(3, 4), False, False, None, 1e-8, None, "sum"], {})],
    "soft_margin_loss": [([X(3, 4), PM(3, 4), None, None, "mean"], {})],
    "triplet_margin_loss": [([X(4, 5), X(4, 5), X(4, 5), 0.5, 2, 1e-6, True, None, None, "mean"],
                             {})],
    "triplet_margin_with_distance_loss": [([X(4, 5), X(4, 5), X(4, 5)], {"margin": 0.5,
                                                                          "swap": True})],
    "unfold": [([X(2, 3, 5, 5), 2, 1, 0, 1], {}), ([X(3, 7, 6), (2, 3), (1, 2), 1, (2, 1)], {})],
    "dropout1d": [([X(2, 3, 4), 0.0, True, False], {}), ([X(3, 4), 1.0, True, False], {})],
    "dropout2d": [([X(2, 3, 4, 4), 1.0, True, False], {}), ([X(3, 4, 4), 0.5, False, False], {})],
    "dropout3d": [([X(1, 2, 3, 3, 3), 0.0, True, False], {})],
    "pairwise_distance": [([X(3, 5), X(3, 5), 2.0, 1e-6, False], {}),
                          ([X(4, 2, 5), X(4, 2, 5), 1.0, 1e-3, True], {})],
    "cross_entropy": [([X(4, 5), L([0, 4, 2, 1]), C(5), None, -100, None, "mean", 0.1], {})],
    # no gradient compared: torch's with respect to log_probs is not the true one (_losses.py)
    "ctc_loss": [([X(6, 2, 4, hi=0.0, grad=False), L([[1, 2, 2], [3, 1, 0]]), L([6, 5]),
                   L([3, 2]), 0, "sum", False], {})],
    "dropout": [([X(3, 4), 0.0, True, False], {}), ([X(3, 4), 1.0, True, False], {}),
                ([X(3, 4), 0.5, False, False], {})],
    "elu": [([X(3, 4), 0.7, False], {})],
    "elu_": [([X(3, 4), 0.7], {})],
    "embedding": [([L([[1, 2, 3], [4, 0, 9]]), X(10, 4), 2, None, 2.0, False, False], {})],
    "embedding_bag": [([L([1, 2, 4, 5, 4, 3]), X(10, 4), L([0, 2, 2]), None, 2, False, "max", False,
                        None, False, 4], {}),
                      ([L([[1, 2, 4], [5, 4, 3]]), X(10, 4), None, None, 2, False, "sum", False,
                        X(2, 3), False, None], {})],
    "gelu": [([X(3, 4)], {"approximate": "tanh"}), ([X(3, 4)], {})],
    "glu": [([X(4, 3), 0], {})],
    "grid_sample": [([X(2, 3, 4, 5), X(2, 3, 6, 2, lo=-1.2, hi=1.2), "bilinear", "border", False],
                     {}),
                    ([X(1, 2, 3, 4, 5), X(1, 2, 2, 3, 3, lo=-1.2, hi=1.2), "nearest", "zeros",
                      True], {})],
    "group_norm": [([X(2, 4, 3), 2, X(4), X(4), 1e-4], {})],
    "hardshrink": [([X(3, 4), 0.7], {})],
    "hardsigmoid": [([X(3, 4, lo=-5, hi=5), False], {})],
    "hardswish": [([X(3, 4, lo=-5, hi=5), False], {})],
    "hardtanh": [([X(3, 4), -0.5, 1.5, False], {})],
    "hardtanh_": [([X(3, 4), -0.5, 1.5], {})],
    "huber_loss": [([X(3, 4), C(3, 4), "mean", 0.5, None], {})],
    "instance_norm": [([X(2, 3, 5), None, None, X(3), X(3), True, 0.1, 1e-5], {})],
    "interpolate": [([X(1, 2, 4, 4), None, 2.0, "bilinear", False, None, False], {}),
                    ([X(1, 2, 3, 3), (5, 4), None, "nearest", None, None, False], {})],
    "kl_div": [([X(3, 4), C(3, 4), None, None, "batchmean", False], {})],
    "l1_loss": [([X(3, 4), C(3, 4), None, None, "mean", None], {})],
    "layer_norm": [([X(2, 3, 4), (3, 4), X(3, 4), X(3, 4), 1e-4], {})],
    "leaky_relu": [([X(3, 4), 0.2, False], {})],
    "leaky_relu_": [([X(3, 4), 0.2], {})],
    "linear": [([X(3, 4), X(5, 4), X(5)], {})],
    "linear_cross_entropy": [([X(3, 4), X(5, 4), L([0, 4, 2])],
                              {"linear_bias": X(5), "label_smoothing": 0.1})],
    "log_softmax": [([X(3, 4), 1, 3, None], {})],
    "logsigmoid": [([X(3, 4)], {})],
    "max_pool1d": [([X(2, 3, 9), 3, 2, 1, 1, False, False], {})],
    "max_pool1d_with_indices": [([X(2, 3, 9), 3, 2, 1, 1, False, False], {})],
    "max_pool3d_with_indices": [([X(2, 3, 5, 6, 7), 3, 2, 1, 1, True, False], {})],
    "max_pool2d": [([X(2, 3, 8, 8), 3, 2, 1, 1, True, False], {}),
                   ([X(1, 2, 6, 6), 2, None, 0, 1, False, True], {})],
    "max_pool2d_with_indices": [([X(2, 3, 8, 8), 2, None, 0, 1, False, False], {})],
    "max_pool3d": [([X(2, 3, 5, 6, 7), 3, 2, 1, 1, True, False], {}),
                   ([X(2, 4, 4, 6), 2, None, 0, 1, False, True], {})],
    "max_unpool1d": [([X(2, 3, 4), L(np.arange(24).reshape(2, 3, 4) % 4 * 2 + 1), 2, None, 0,
                       None], {})],
    "max_unpool2d": [([X(1, 2, 2, 3), L([[[[0, 3, 5], [13, 14, 23]], [[6, 9, 4], [19, 20, 17]]]]),
                       2, None, 0, (4, 6)], {})],
    "max_unpool3d": [([X(1, 1, 1, 2, 2), L([[[[[0, 3], [13, 14]]]]]), 2, None, 0, None], {})],
    "mish": [([X(3, 4), False], {})],
    "mse_loss": [([X(3, 4), C(3, 4), None, None, "sum", None], {})],
    "nll_loss": [([X(4, 5), L([0, 4, 2, 1]), C(5), None, 2, None, "mean"], {})],
    "normalize": [([X(3, 4), 3.0, 0, 1e-6, None], {})],
    "one_hot": [([L([0, 2, 1, 3]), 5], {})],
    "pad": [([X(2, 3), (1, 2), "constant", 0.5], {}), ([X(1, 2, 5), (2, 1), "reflect", None], {})],
    "pixel_shuffle": [([X(1, 8, 2, 2), 2], {})],
    "pixel_unshuffle": [([X(1, 2, 4, 4), 2], {})],
    "prelu": [([X(2, 3, 4), X(3)], {})],
    "relu": [([X(3, 4), False], {})],
    "relu_": [([X(3, 4)], {})],
    "relu6": [([X(3, 4, lo=-9, hi=9), False], {})],
    "rms_norm": [([X(2, 3, 4), (4,), X(4), 1e-6], {})],
    "rrelu": [([X(3, 4), 0.1, 0.3, False, False], {})],
    "rrelu_": [([X(3, 4), 0.1, 0.3, False], {})],
    "scaled_dot_product_attention": [([X(2, 3, 5, 4), X(2, 3, 6, 4), X(2, 3, 6, 4), None, 0.0,
                                       False], {"scale": 0.3}),
                                      ([X(1, 2, 4, 4), X(1, 2, 4, 4), X(1, 2, 4, 4), None, 0.0,
                                        True], {})],
    "selu": [([X(3, 4), False], {})],
    "sigmoid": [([X(3, 4)], {})],
    "silu": [([X(3, 4), False], {})],
    "smooth_l1_loss": [([X(3, 4), C(3, 4), None, None, "mean", 0.5], {})],
    "softmax": [([X(3, 4), 0, 3, None], {})],
    "softmin": [([X(3, 4), 1, 3, None], {})],
    "softplus": [([X(3, 4), 2.0, 1.0], {})],
    "softshrink": [([X(3, 4), 0.7], {})],
    "softsign": [([X(3, 4)], {})],
    "tanh": [([X(3, 4)], {})],
    "tanhshrink": [([X(3, 4)], {})],
    "threshold": [([X(3, 4), 0.1, 20.0, False], {})],
    "threshold_": [([X(3, 4), 0.1, 20.0], {})],
    "upsample": [([X(1, 2, 3, 3), None, 2, "nearest", None], {})],
    "upsample_bilinear": [([X(1, 2, 3, 3), None, 2], {})],
    "upsample_nearest": [([X(1, 2, 3, 3), (5, 4), None], {})],
}


def test_every_shared_name_has_samples():
    assert sorted(SAMPLES) == SHARED


def _param_names(name):
    # ignis's names, which the signature test holds to torch's
    return [n for n, _ in ignis_parameters(getattr(IF, name))]


def _numpy(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b):
    np.testing.assert_allclose(_numpy(a), _numpy(b), rtol=2e-4, atol=2e-5)


def _outputs(r):
    return list(r) if isinstance(r, tuple) else [r]


def _run(lib, name, args, kwargs, by_keyword, inplace):
    """Calls fn on this library's copies of the arguments: positionally, or
    every argument by its name. inplace=True passes inplace (and the input is
    a non-leaf copy of its leaf). Returns (result, input, leaves)."""
    fn = getattr(IF if lib is ignis else TF, name)
    made = [a.make(lib) if isinstance(a, T) else a for a in args]
    kw = {k: (v.make(lib) if isinstance(v, T) else v) for k, v in kwargs.items()}
    leaves = [m for m in list(made) + list(kw.values())
              if hasattr(m, "requires_grad") and m.requires_grad]
    if inplace or name.endswith("_"):
        made[0] = made[0].clone()
    input = made[0]
    if inplace:
        kw["inplace"] = True
    if by_keyword:
        kw.update(zip(_param_names(name), made))
        made = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*made, **kw), input, leaves


def _compare(name, args, kwargs, by_keyword, inplace=False):
    ri, xi, li = _run(ignis, name, args, kwargs, by_keyword, inplace)
    rt, xt, lt = _run(torch, name, args, kwargs, by_keyword, inplace)
    oi, ot = _outputs(ri), _outputs(rt)
    assert len(oi) == len(ot)
    for a, b in zip(oi, ot):
        _close(a, b)
    if inplace or name.endswith("_"):
        assert ri is xi and rt is xt
    if not lt:
        return
    g = RNG.standard_normal(tuple(ot[0].shape)).astype(np.float32)
    oi[0].backward(ignis.tensor(g))
    ot[0].backward(torch.tensor(g))
    for a, b in zip(li, lt):
        assert (a.grad is None) == (b.grad is None)
        if b.grad is not None:
            _close(a.grad, b.grad)


CASES = [(n, i) for n in sorted(SAMPLES) for i in range(len(SAMPLES[n]))]


@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
@pytest.mark.parametrize("name,i", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_values_and_gradients_match_torch(name, i, by_keyword):
    args, kwargs = SAMPLES[name][i]
    _compare(name, args, kwargs, by_keyword)


INPLACE = [(n, i) for n, i in CASES if "inplace" in _param_names(n)]


@pytest.mark.parametrize("by_keyword", [False, True], ids=["positional", "keyword"])
@pytest.mark.parametrize("name,i", INPLACE, ids=[f"{n}-{i}" for n, i in INPLACE])
def test_inplace_true_writes_input_like_torch(name, i, by_keyword):
    _compare(name, _before_inplace(name, SAMPLES[name][i][0]), SAMPLES[name][i][1], by_keyword,
             inplace=True)


def _before_inplace(name, args):
    """The positional arguments before `inplace` (defaults filling a gap)."""
    params = _param_names(name)
    defaults = dict(ignis_parameters(getattr(IF, name)))
    args = list(args) + [defaults[p] for p in params[len(args):params.index("inplace")]]
    return args[:params.index("inplace")]


@pytest.mark.parametrize("name", sorted({n for n, _ in INPLACE} |
                                        {n for n in SHARED if n.endswith("_")}))
def test_inplace_on_a_leaf_that_requires_grad_raises_like_torch(name):
    extra = {} if name.endswith("_") else {"inplace": True}
    for args, kwargs in SAMPLES[name]:
        if extra:
            args = _before_inplace(name, args)
        raised = []
        for lib, fn in ((ignis, getattr(IF, name)), (torch, getattr(TF, name))):
            made = [a.make(lib) if isinstance(a, T) else a for a in args]
            try:
                fn(*made, **kwargs, **extra)
                raised.append(None)
            except RuntimeError as e:
                raised.append("leaf Variable that requires grad" in str(e))
        assert raised[0] == raised[1]


def test_random_functionals_in_place():
    x = ignis.randn(50, 40)
    before = x.clone()
    y = IF.dropout(x, 0.5, True, True)
    assert y is x
    kept = x != 0
    _close(x[kept], before[kept] * 2)
    x = ignis.randn(50, 40)
    before = x.clone()
    assert IF.rrelu(x, 0.1, 0.3, True, True) is x
    slope = (x / before)[before < 0]
    assert bool((slope >= 0.1).all()) and bool((slope <= 0.3).all())
    _close(x[before > 0], before[before > 0])


# ---- compiled: an in-place call whose result is unused keeps its write ----------------------
def _writes_unused(x):
    y = x * 2
    IF.elu(y, 0.5, True)
    IF.relu(y, inplace=True)
    ignis.ops.leaky_relu(x, 0.2, True)  # the op's inplace= overload, on an input
    return y + 1


def _module_writes_unused(x):
    y = x + 0
    _ACT(y)
    return y * 3


_ACT = inn.SiLU(inplace=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("fn", [_writes_unused, _module_writes_unused])
def test_compiled_inplace_call_with_unused_result_keeps_its_write(fn, backend):
    ignis.compiler.reset()
    x = ignis.tensor(RNG.standard_normal((4, 5)).astype(np.float32))
    xe, xc = x.clone(), x.clone()
    want = fn(xe)
    got = ignis.compile(fn, backend=backend)(xc)
    _close(got, want)
    _close(xc, xe)
    ignis.compiler.reset()


# ---- a bool is not a number where a bool is meant -----------------------------------------
def test_positional_bool_is_not_elus_scale():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    want = TF.elu(torch.tensor(x), 1.0, False)
    _close(IF.elu(ignis.tensor(x), 1.0, False), want)
    # the op itself: elu(self, alpha, scale, input_scale) and
    # elu.functional(input, alpha, inplace): the bool goes to `inplace`
    xi = ignis.tensor(x)
    r = ignis.ops.elu(xi, 1.0, False)
    _close(r, want)
    assert r is not xi
    r = ignis.ops.elu(xi, 1.0, True)
    assert r is xi
    _close(xi, want)


def test_a_bool_goes_to_the_overload_that_takes_a_bool():
    """For every op: a positional bool where one overload takes a bool and
    another a number (or a tensor) runs the bool overload, whatever their
    declaration order (Note [Overload resolution] in py_op.cpp)."""
    checked = []
    for name in sorted(vars(ignis.ops)):
        op = getattr(ignis.ops, name)
        if not isinstance(op, ignis._C.Op) or op.alias_of or len(op.schemas) < 2:
            continue
        overloads = [(s, _schema_params(s)) for s in op.schemas]
        for s, params in overloads:
            for at, (ty, _, kwonly) in enumerate(params):
                if ty not in ("bool", "bool?") or kwonly or not any(
                        o is not params and len(o) > at and not o[at][2] and
                        o[at][0] not in ("bool", "bool?") for _, o in overloads):
                    continue
                overload = getattr(op, s[:s.index("(")].partition(".")[2] or "default")
                try:
                    ignis.manual_seed(0)
                    want = overload(*_sample_args(params[:at]), False)
                except (TypeError, RuntimeError, ValueError, IndexError):
                    continue
                ignis.manual_seed(0)
                got = op(*_sample_args(params[:at]), False)
                for a, b in zip(_outputs(got), _outputs(want)):
                    _close(a, b)
                checked.append(s.split("(")[0])
    assert "elu.functional" in checked


def _schema_params(schema):
    """[(type, name, keyword-only)] of a schema string."""
    body = schema[schema.index("(") + 1:schema.rindex(") ->")]
    out, kwonly = [], False
    for part in [p.strip() for p in body.split(",") if p.strip()]:
        if part == "*":
            kwonly = True
            continue
        ty, name = part.split("=")[0].split()[:2]
        out.append((ty.split("(")[0], name, kwonly))
    return out


def _sample_args(params):
    rng = np.random.default_rng(0)
    args = []
    for ty, _, _ in params:
        if ty.startswith("Tensor"):
            args.append(ignis.tensor(rng.standard_normal((3, 4)).astype(np.float32)))
        elif ty.startswith(("Scalar", "float")):
            args.append(0.5)
        elif ty.startswith("int"):
            args.append(1)
        else:
            args.append(None)
    return args


def test_bool_still_converts_to_a_scalar_where_torch_accepts_it():
    assert ignis.full((2,), True).dtype == ignis.bool
    x = ignis.zeros(3)
    x.fill_(True)
    assert x.tolist() == [1.0, 1.0, 1.0]
    assert ignis.where(ignis.tensor([True, False]), ignis.tensor([1.0, 2.0]), False).tolist() \
        == [1.0, 0.0]


BOOL_FOR_FLOAT = [
    ("dropout p=True", lambda F, x: F.dropout(x, True)),
    ("dropout p=False", lambda F, x: F.dropout(x, False)),
    ("dropout training=True p=True", lambda F, x: F.dropout(x, p=True, training=True)),
    ("leaky_relu slope=True", lambda F, x: F.leaky_relu(x, True)),
    ("leaky_relu negative_slope=True", lambda F, x: F.leaky_relu(x, negative_slope=True)),
    ("clamp min=True", lambda F, x: x.clamp(min=True)),
    ("clamp max=False", lambda F, x: x.clamp(max=False)),
    ("hardtanh min_val=True", lambda F, x: F.hardtanh(x, True, 2.0)),
    ("elu alpha=True", lambda F, x: F.elu(x, True)),
    ("softplus beta=True threshold=True", lambda F, x: F.softplus(x, True, True)),
    ("celu alpha=True", lambda F, x: F.celu(x, True)),
]


@pytest.mark.parametrize("call", [c for _, c in BOOL_FOR_FLOAT], ids=[i for i, _ in BOOL_FOR_FLOAT])
def test_bool_binds_to_a_float_parameter_as_torch_does(call):
    """torch's argument parser takes a bool for a float parameter (as 0.0 or
    1.0; bool is an int subclass): F.dropout(x, True) zeroes everything."""
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    xi, xt = ignis.tensor(x).requires_grad_(), torch.tensor(x).requires_grad_()
    yi, yt = call(IF, xi), call(TF, xt)
    _close(yi, yt)
    g = RNG.standard_normal((3, 4)).astype(np.float32)
    yi.backward(ignis.tensor(g))
    yt.backward(torch.tensor(g))
    _close(xi.grad, xt.grad)


BOOL_FOR_INT = [
    ("cumsum dim", lambda T, x: T.cumsum(x, True)),
    ("zeros size", lambda T, x: T.zeros(True)),
    ("zeros size in a tuple", lambda T, x: T.zeros((True, 2))),
    ("sum dim", lambda T, x: x.sum(dim=True)),
    ("sum dim in a tuple", lambda T, x: x.sum(dim=(True,))),
    ("amax dim", lambda T, x: x.amax(True)),
    ("view sizes", lambda T, x: x.view(True, 6)),
    ("reshape sizes", lambda T, x: x.reshape(True, 6)),
    ("permute dims", lambda T, x: x.permute(True, 0)),
    ("flip dims", lambda T, x: x.flip(True)),
    ("repeat sizes", lambda T, x: x.repeat(True, 1)),
    ("expand sizes", lambda T, x: x.expand(True, 2, 3)),
    ("squeeze dim", lambda T, x: x.squeeze(True)),
    ("pad widths", lambda T, x: T.nn.functional.pad(x, (True, 0))),
]


@pytest.mark.parametrize("call", [c for _, c in BOOL_FOR_INT], ids=[i for i, _ in BOOL_FOR_INT])
def test_bool_is_refused_for_an_int_parameter_as_torch_does(call):
    """torch's parser takes no bool for an int or int[] parameter (bool is an
    int subclass, but not an int there): a TypeError in both."""
    with pytest.raises(TypeError):
        call(torch, torch.zeros(2, 3))
    with pytest.raises(TypeError):
        call(ignis, ignis.zeros(2, 3))


def test_an_overload_taking_the_bool_as_a_bool_still_wins():
    xi = ignis.tensor([-1.0, 2.0])
    assert ignis.ops.elu(xi, 1.0, True) is xi


# ---- modules pass inplace through -----------------------------------------------------------
MODULES = [("ReLU", (True,)), ("SiLU", (True,)), ("Mish", (True,)), ("ELU", (0.5, True)),
           ("CELU", (0.5, True)), ("SELU", (True,)), ("LeakyReLU", (0.2, True)),
           ("ReLU6", (True,)), ("Hardswish", (True,)), ("Hardsigmoid", (True,)),
           ("Hardtanh", (-0.5, 0.5, True)), ("Threshold", (0.1, 5.0, True)),
           ("RReLU", (0.1, 0.3, True)), ("Dropout", (0.0, True))]


@pytest.mark.parametrize("name,args", MODULES, ids=[m for m, _ in MODULES])
def test_modules_pass_inplace_through(name, args):
    x = RNG.standard_normal((3, 4)).astype(np.float32) * 3
    mi, mt = getattr(inn, name)(*args), getattr(torch.nn, name)(*args)
    mi.eval()
    mt.eval()
    li, lt = ignis.tensor(x).requires_grad_(), torch.tensor(x).requires_grad_()
    xi, xt = li.clone(), lt.clone()
    yi, yt = mi(xi), mt(xt)
    assert yi is xi and yt is xt
    _close(yi, yt)
    g = RNG.standard_normal((3, 4)).astype(np.float32)
    yi.backward(ignis.tensor(g))
    yt.backward(torch.tensor(g))
    _close(li.grad, lt.grad)
    assert repr(mi) == repr(mt)
