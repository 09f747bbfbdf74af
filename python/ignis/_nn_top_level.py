"""torch's top-level forms of neural-network functions (torch.conv2d,
torch.max_pool2d, torch.batch_norm, ...), written over ignis.nn.functional.

Most are F's functions under a second name; where torch's top-level
signature differs from F's (the poolings' empty stride, the normalizations'
argument orders, the dropouts' positional `train`), the function here maps
torch's arguments onto F's.
"""

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle",
           "channel_shuffle", "selu", "selu_", "celu", "celu_", "threshold", "threshold_",
           "rrelu", "rrelu_", "hardshrink", "alpha_dropout", "alpha_dropout_",
           "feature_alpha_dropout", "feature_alpha_dropout_", "feature_dropout",
           "feature_dropout_", "bilinear", "pairwise_distance", "batch_norm", "group_norm",
           "instance_norm", "kl_div", "binary_cross_entropy_with_logits", "margin_ranking_loss",
           "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
           "poisson_nll_loss", "ctc_loss"]


def _F():
    from .nn import functional
    return functional


def _same_as_functional(name):
    """torch.<name>, which is torch.nn.functional.<name> (same signature)."""
    def fn(*args, **kwargs):
        return getattr(_F(), name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.{name}: ignis.nn.functional.{name} under torch's top-level name."
    return fn


(conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, pixel_shuffle,
 pixel_unshuffle, channel_shuffle, hardshrink, bilinear, pairwise_distance,
 adaptive_avg_pool1d) = (
    _same_as_functional(n) for n in (
        "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
        "hardshrink", "bilinear", "pairwise_distance", "adaptive_avg_pool1d"))


def _stride(stride):
    # torch's top-level poolings take stride=[] (an empty list) for "the
    # kernel size", which F spells None.
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return None
    return stride


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool1d: F.max_pool1d without return_indices; stride=() means kernel_size."""
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool2d: F.max_pool2d without return_indices; stride=() means kernel_size."""
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """torch.max_pool3d: F.max_pool3d without return_indices; stride=() means kernel_size."""
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """torch.avg_pool1d (F.avg_pool1d; stride=() or None means kernel_size)."""
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """torch.adaptive_max_pool1d: always (values, indices), a plain tuple as torch's."""
    values, indices = _F().adaptive_max_pool1d(input, output_size, return_indices=True)
    return values, indices


def _into(input, result):
    """The in-place forms: result written into input, which is returned."""
    return input.copy_(result)


def selu(input):
    """torch.selu."""
    return _F().selu(input)


def selu_(input):
    """torch.selu_: selu written into input."""
    return _into(input, _F().selu(input))


def celu(input, alpha=1.0):
    """torch.celu."""
    return _F().celu(input, alpha)


def celu_(input, alpha=1.0):
    """torch.celu_: celu written into input."""
    return _into(input, _F().celu(input, alpha))


def threshold(input, threshold, value):
    """torch.threshold: value where input <= threshold, input elsewhere."""
    return _F().threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """torch.threshold_: threshold written into input."""
    return _into(input, _F().threshold(input, threshold, value))


def rrelu(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """torch.rrelu (evaluation mode: leaky_relu with slope (lower + upper) / 2;
    training: a random slope per negative element). `generator` is not
    supported: pass None."""
    if generator is not None:
        raise NotImplementedError("ignis.rrelu: a generator argument is not supported")
    return _F().rrelu(input, lower, upper, training)


def rrelu_(input, lower=0.125, upper=1.0 / 3.0, training=False, generator=None):
    """torch.rrelu_: rrelu written into input."""
    return _into(input, rrelu(input, lower, upper, training, generator))


def alpha_dropout(input, p, train):
    """torch.alpha_dropout(input, p, train): F.alpha_dropout with training=train."""
    return _F().alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """torch.alpha_dropout_: alpha_dropout written into input."""
    return _into(input, alpha_dropout(input, p, train)) if train else input


def feature_alpha_dropout(input, p, train):
    """torch.feature_alpha_dropout(input, p, train): whole channels set to
    SELU's negative saturation value (F.feature_alpha_dropout)."""
    return _F().feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """torch.feature_alpha_dropout_: feature_alpha_dropout written into input."""
    return _into(input, feature_alpha_dropout(input, p, train)) if train else input


def feature_dropout(input, p, train):
    """torch.feature_dropout(input, p, train): each feature map (every
    element of one (sample, channel) pair: dims 2 onward) zeroed with
    probability p, the kept ones scaled by 1 / (1 - p)."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0 or input.numel() == 0:
        return input if not train else input.clone()
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    import ignis
    if p == 1:
        return input * ignis.zeros((), dtype=input.dtype)
    mask_shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    keep = ignis.empty(mask_shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
    return input * keep / (1 - p)


def feature_dropout_(input, p, train):
    """torch.feature_dropout_: feature_dropout written into input."""
    return _into(input, feature_dropout(input, p, train)) if train else input


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    """torch.batch_norm, in torch's top-level argument order (weight and bias
    first); F.batch_norm computes it. cudnn_enabled has no effect."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """torch.group_norm (F.group_norm; cudnn_enabled has no effect)."""
    return _F().group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    """torch.instance_norm, in torch's top-level argument order; F.instance_norm
    computes it. cudnn_enabled has no effect."""
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


# ---- the aten-style losses: an integer reduction -------------------------------------------------
# torch.<loss> is ATen's function, whose reduction is an int (at::Reduction:
# 1 mean, 2 sum, any other value none; a string is a TypeError). The schema's
# default is Mean, but torch's Python binding cannot read that default
# ("at::Reduction::Mean") and passes 0: called without a reduction, these
# return the unreduced loss. Both are followed here.
_NO_REDUCTION = 0


def _reduction_name(reduction, name):
    if isinstance(reduction, bool) or not isinstance(reduction, int):
        raise TypeError(f"{name}(): argument 'reduction' must be int, not "
                        f"{type(reduction).__name__}")
    return {1: "mean", 2: "sum"}.get(reduction, "none")


def _reduced(loss, reduction, name):
    how = _reduction_name(reduction, name)
    return loss.mean() if how == "mean" else loss.sum() if how == "sum" else loss


def kl_div(input, target, reduction=_NO_REDUCTION, *, log_target=False):
    """torch.kl_div: pointwise target * (log target - input) (input a log
    probability; target one too with log_target); reduction 1 is the mean
    over every element (F's 'mean', not 'batchmean')."""
    name = "kl_div"
    _reduction_name(reduction, name)
    loss = _F().kl_div(input, target, reduction="none", log_target=log_target)
    return _reduced(loss, reduction, name)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=_NO_REDUCTION):
    name = "binary_cross_entropy_with_logits"
    _reduction_name(reduction, name)
    loss = _F().binary_cross_entropy_with_logits(input, target, weight, reduction="none",
                                                 pos_weight=pos_weight)
    return _reduced(loss, reduction, name)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=_NO_REDUCTION):
    how = _reduction_name(reduction, "margin_ranking_loss")
    return _F().margin_ranking_loss(input1, input2, target, margin, reduction=how)


def hinge_embedding_loss(input, target, margin=1.0, reduction=_NO_REDUCTION):
    how = _reduction_name(reduction, "hinge_embedding_loss")
    return _F().hinge_embedding_loss(input, target, margin, reduction=how)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=_NO_REDUCTION):
    how = _reduction_name(reduction, "cosine_embedding_loss")
    return _F().cosine_embedding_loss(input1, input2, target, margin, reduction=how)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=_NO_REDUCTION):
    how = _reduction_name(reduction, "triplet_margin_loss")
    return _F().triplet_margin_loss(anchor, positive, negative, margin=margin, p=p, eps=eps,
                                    swap=swap, reduction=how)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """torch.poisson_nll_loss: every argument required, as in ATen's schema."""
    how = _reduction_name(reduction, "poisson_nll_loss")
    return _F().poisson_nll_loss(input, target, log_input=log_input, full=full, eps=eps,
                                 reduction=how)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0,
             reduction=_NO_REDUCTION, zero_infinity=False):
    """torch.ctc_loss: reduction 1 divides each sequence's loss by its
    target length, then averages (F's 'mean')."""
    how = _reduction_name(reduction, "ctc_loss")
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank,
                         reduction=how, zero_infinity=zero_infinity)
