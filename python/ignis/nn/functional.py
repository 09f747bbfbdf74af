"""ignis.nn.functional: the functional forms of neural-network layers.

Every function has torch.nn.functional's signature (parameter names, order
and defaults). Those that one op computes are generated from the table
below; the others are written out further down (or in nn/_conv.py, ...).
"""
import ast

from .. import _ops

# ---- functionals that are one op call ---------------------------------------------------
# torch.nn.functional's signature of each, and the op call that computes it
# (None: the op of the same name, given the parameters in order). With an
# `inplace` parameter, inplace=True calls the op's in-place form instead (the
# call's op name + "_", same arguments), which writes into `input` and returns
# it, as torch's functionals do. The op call names a declared op and may use
# the parameters and this module's globals.
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946

_ONE_OP = [
    # activations
    ("relu(input, inplace=False)", None),
    ("relu_(input)", None),
    ("relu6(input, inplace=False)", None),
    ("elu(input, alpha=1.0, inplace=False)", None),
    ("elu_(input, alpha=1.0)", None),
    ("selu(input, inplace=False)", "elu(input, _SELU_ALPHA, _SELU_SCALE)"),
    ("leaky_relu(input, negative_slope=0.01, inplace=False)", None),
    ("leaky_relu_(input, negative_slope=0.01)", None),
    ("hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False)", None),
    ("hardtanh_(input, min_val=-1.0, max_val=1.0)", None),
    ("silu(input, inplace=False)", None),
    ("mish(input, inplace=False)", None),
    ("gelu(input, approximate='none')", "gelu(input, approximate=approximate)"),
    ("softplus(input, beta=1.0, threshold=20.0)", None),
    ("sigmoid(input)", None),
    ("tanh(input)", None),
    ("logsigmoid(input)", None),
    ("glu(input, dim=-1)", None),
    ("softmax(input, dim=None, _stacklevel=3, dtype=None)", None),
    ("log_softmax(input, dim=None, _stacklevel=3, dtype=None)", None),
    ("softmin(input, dim=None, _stacklevel=3, dtype=None)",
     "softmax(-input, dim, _stacklevel, dtype)"),
    ("dropout(input, p=0.5, training=True, inplace=False)", None),
    # layers
    ("linear(input, weight, bias=None)", None),
    ("layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05)", None),
    ("rms_norm(input, normalized_shape, weight=None, eps=None)", None),
    ("normalize(input, p=2.0, dim=1, eps=1e-12, out=None)",
     "normalize(input, p, dim, eps, out=out)"),
    ("cosine_similarity(x1, x2, dim=1, eps=1e-08)", None),
    ("one_hot(input, num_classes=-1)", None),
    ("pad(input, pad, mode='constant', value=None)", None),
    ("scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, "
     "is_causal=False, scale=None, enable_gqa=False)",
     "scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, "
     "scale=scale, enable_gqa=enable_gqa)"),
    # losses
    ("cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, "
     "reduce=None, reduction='mean', label_smoothing=0.0)", None),
    ("nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, "
     "reduce=None, reduction='mean')", None),
    ("mse_loss(input, target, size_average=None, reduce=None, reduction='mean', weight=None)",
     None),
    ("l1_loss(input, target, size_average=None, reduce=None, reduction='mean', weight=None)",
     None),
    ("smooth_l1_loss(input, target, size_average=None, reduce=None, reduction='mean', "
     "beta=1.0)", None),
    ("huber_loss(input, target, reduction='mean', delta=1.0, weight=None)", None),
    ("binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, "
     "reduction='mean')", None),
    ("binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, "
     "reduce=None, reduction='mean', pos_weight=None)", None),
    ("kl_div(input, target, size_average=None, reduce=None, reduction='mean', "
     "log_target=False)", None),
]


def _define(signature, call):
    """Defines the function `signature` in this module, computing `call`."""
    fn = ast.parse(f"def {signature}: pass").body[0]
    params = [a.arg for a in fn.args.args + fn.args.kwonlyargs]
    if call is None:
        call = f"{fn.name}({', '.join(p for p in params if p != 'inplace')})"
    op, rest = call.split("(", 1)
    body = f"return _op_{op}({rest}"
    if "inplace" in params:
        body = f"if inplace:\n        return _op_{op}_({rest}\n    {body}"
    for name in (op, op + "_") if "inplace" in params else (op,):
        globals()["_op_" + name] = _ops.get(name)
    # compiled as this file's code: capture's frame hook skips ignis's own files
    exec(compile(f"def {signature}:\n    {body}\n", __file__, "exec"), globals())
    globals()[fn.name].__doc__ = f"torch.nn.functional.{signature}: ignis.ops.{call}" + \
        (", in place: the op's in-place form" if "inplace" in params else "")


for _sig, _call in _ONE_OP:
    _define(_sig, _call)
del _sig, _call


from ._conv import (  # noqa: E402,F401
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, unfold,
)
from ._pooling import (  # noqa: E402,F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
    adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices, adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices, adaptive_avg_pool3d, avg_pool1d, avg_pool2d, avg_pool3d,
    lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d,
    max_pool1d_with_indices, max_pool2d, max_pool2d_with_indices, max_pool3d,
    max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d,
)
from ._embedding_bag import embedding_bag  # noqa: E402,F401
from ._attention import multi_head_attention_forward  # noqa: E402,F401
from ._fractional_pooling import (  # noqa: E402,F401
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from ._grid_sample import affine_grid, grid_sample  # noqa: E402,F401
from ._normalization import (  # noqa: E402,F401
    batch_norm, group_norm, instance_norm, local_response_norm,
)
from ._upsampling import (  # noqa: E402,F401
    channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle, upsample, upsample_bilinear,
    upsample_nearest,
)
from ._losses import (  # noqa: E402,F401
    ctc_loss, cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss,
    multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss,
    soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
    linear_cross_entropy,
)
from .._functions import pdist  # noqa: E402,F401  (torch.pdist, which F re-exports)

# The layers written in Python (nn/_conv.py, ...) are this module's functions:
# capture records a call to ignis.nn.functional as one graph call, as it
# does for the ops above.
for _f in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold,
           unfold, adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
           adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
           adaptive_max_pool3d, adaptive_max_pool3d_with_indices, avg_pool1d, avg_pool2d,
           lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool1d_with_indices, max_pool2d,
           max_pool2d_with_indices, adaptive_avg_pool3d, avg_pool3d, max_pool3d,
           max_pool3d_with_indices, max_unpool1d, max_unpool2d, max_unpool3d, embedding_bag,
           affine_grid, grid_sample, batch_norm, group_norm, instance_norm, local_response_norm,
           channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle, upsample,
           upsample_bilinear, upsample_nearest, cosine_embedding_loss, gaussian_nll_loss,
           hinge_embedding_loss, margin_ranking_loss, multi_margin_loss, multilabel_margin_loss,
           multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
           triplet_margin_with_distance_loss, multi_head_attention_forward,
           fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d,
           fractional_max_pool3d_with_indices):
    _f.__module__ = __name__


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `input` (PyTorch's F.embedding argument order; the
    op takes weight first). max_norm renormalises the looked-up rows in place."""
    if padding_idx is None:
        padding_idx = -1
    elif padding_idx < 0:
        if padding_idx < -weight.size(0):
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx += weight.size(0)
    elif padding_idx >= weight.size(0):
        raise AssertionError("Padding_idx must be within num_embeddings")
    if max_norm is not None:
        from .modules.sparse import _renorm_rows
        _renorm_rows(weight, input, max_norm, norm_type)
    return _ops.get("embedding")(weight, input, padding_idx, scale_grad_by_freq, sparse)


# ---- activations written with other ops ------------------------------------------------
# Each is a formula over declared ops, so autograd, capture and the compiler
# see those ops; the `inplace=True` forms write the result back into input.
def _inplace(input, formula, inplace):
    """formula(input), or that written into input. The formula reads a copy of
    input, so that autograd's saved values are not the tensor overwritten."""
    if not inplace:
        return formula(input)
    return input.copy_(formula(input.clone()))


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return (_op_elu_ if inplace else _op_elu)(input, alpha, 1.0, 1.0 / alpha)


def celu_(input, alpha=1.0):
    """celu written into input (torch.nn.functional.celu_)."""
    return celu(input, alpha, inplace=True)


def selu_(input):
    """selu written into input (torch.nn.functional.selu_)."""
    return selu(input, inplace=True)


def softsign(input):
    return input / (input.abs() + 1)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return _inplace(input, lambda x: (x + 3).clamp(0, 6) / 6, inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return _inplace(input, lambda x: x * (x + 3).clamp(0, 6) / 6, inplace)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """leaky_relu with slope (lower + upper) / 2; in training, each element's
    slope drawn from U(lower, upper) where input <= 0."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    import ignis

    def formula(x):
        slope = ignis.empty_like(x).uniform_(lower, upper)
        return ignis.where(x > 0, x, x * slope)
    return _inplace(input, formula, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else value."""
    import ignis
    return _inplace(input, lambda x: ignis.where(x > threshold, x, value), inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one: the
    op ``prelu`` (one op, so that autocast runs it in its lower precision)."""
    import ignis
    return ignis.ops.prelu(input, weight)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    import ignis
    return ignis.where(input > lambd, input - lambd,
                       ignis.where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    import ignis
    return ignis.where((input > lambd).logical_or(input < -lambd), input, input * 0)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) over dim, g drawn from Gumbel(0, 1); hard=True
    gives the one-hot of each row's argmax, whose gradient is the soft
    sample's (straight-through: y_hard - y_soft.detach() + y_soft)."""
    if eps != 1e-10:
        import warnings
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    import ignis
    gumbels = -ignis.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = ignis.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---- channel dropout and distances ------------------------------------------------------

def _feature_dropout(input, p, training, inplace, name, spatial):
    """Zeroes whole channels (all `spatial` trailing dims of one (sample,
    channel)) with probability p and scales the rest by 1 / (1 - p): torch's
    dropout1d/2d/3d. Inputs have a channel dim, `spatial` dims and an
    optional batch dim."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(
            f"{name}: Expected {spatial + 1}D or {spatial + 2}D input, but received a "
            f"{input.dim()}D input. Note that {name} exists to provide channel-wise dropout on "
            f"inputs with {spatial} spatial dimension{'s' if spatial > 1 else ''}, a channel "
            f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D "
            "inputs).")
    if not training or p == 0.0:
        return input
    mask_shape = tuple(input.shape[:input.dim() - spatial]) + (1,) * spatial
    if p == 1.0:
        mask = _ops.get("zeros")(mask_shape, dtype=input.dtype, device=input.device)
    else:
        keep = _ops.get("empty")(mask_shape, dtype=input.dtype, device=input.device)
        mask = keep.bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, L) or (C, L) inputs."""
    return _feature_dropout(input, p, training, inplace, "dropout1d", 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) or (C, H, W) inputs."""
    return _feature_dropout(input, p, training, inplace, "dropout2d", 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs."""
    return _feature_dropout(input, p, training, inplace, "dropout3d", 3)


# -selu(-inf) = SELU's scale * alpha: the value alpha dropout gives a dropped unit
# before its affine correction.
_SELU_NEG_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature):
    """Alpha dropout (Klambauer et al., 2017): dropped units (channels, when
    `feature`) take SELU's negative saturation, then an affine map a * x + b
    restores the input's mean and variance (ATen's `_dropout_impl`)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        return input.mul_(0) if inplace else input * 0
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    keep = _ops.get("empty")(shape, dtype=input.dtype, device=input.device).bernoulli_(1.0 - p)
    alpha = _SELU_NEG_SATURATION
    a = 1.0 / ((alpha * alpha * p + 1) * (1 - p)) ** 0.5
    b = (keep - 1) * (alpha * a) + alpha * a * p
    noise = keep * a
    return input.mul_(noise).add_(b) if inplace else input * noise + b


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps a SELU network's activations at mean 0, variance 1."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1) of an (N, C, ...) input."""
    return _alpha_dropout(input, p, training, inplace, True)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim (torch's definition,
    eps added to the difference)."""
    diff = x1 - x2 + eps
    return _ops.get("norm")(diff, p, -1, keepdim)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum over i, j of input1[..., i] * weight[o, i, j] * input2[..., j]
    (+ bias[o]), the inputs' leading dims matching."""
    import ignis
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and "
                           f"{input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got "
                           f"{list(weight.shape)}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{list(bias.shape)} but expected [{weight.shape[0]}]")
    out = ignis.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
