"""ignis.nn.functional: the functional forms of neural-network layers.

Each name here is an op declared in C++ (so it is traceable like any other
op); this module only gathers them under PyTorch's names.
"""
from .. import _ops

_NAMES = [
    "relu", "gelu", "silu", "sigmoid", "tanh", "mish", "softmax", "log_softmax", "layer_norm",
    "rms_norm", "dropout", "linear", "cross_entropy", "nll_loss", "mse_loss",
    "scaled_dot_product_attention", "pad", "softplus", "leaky_relu", "elu", "hardtanh",
    "relu6", "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "normalize",
    "one_hot", "logsigmoid", "glu", "smooth_l1_loss", "huber_loss", "kl_div", "cosine_similarity",
]

for _n in _NAMES:
    if _n in _ops._table:
        globals()[_n] = _ops.get(_n)


from ._conv import (  # noqa: E402,F401
    conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
)
from ._pooling import (  # noqa: E402,F401
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
    avg_pool1d, avg_pool2d, max_pool1d, max_pool2d, max_pool2d_with_indices,
)
from ._normalization import batch_norm, group_norm, instance_norm  # noqa: E402,F401
from ._upsampling import (  # noqa: E402,F401
    interpolate, pixel_shuffle, pixel_unshuffle, upsample,
)

# The layers written in Python (nn/_conv.py, ...) are this module's functions:
# capture records a call to ignis.nn.functional as one graph call, as it
# does for the ops above.
for _f in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d,
           adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d, adaptive_max_pool2d,
           avg_pool1d, avg_pool2d, max_pool1d, max_pool2d, max_pool2d_with_indices, batch_norm,
           group_norm, instance_norm, interpolate, pixel_shuffle, pixel_unshuffle, upsample):
    _f.__module__ = __name__


def relu_(x):
    return x.relu_()


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
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _inplace(input, result, inplace):
    return input.copy_(result) if inplace else result


def selu(input, inplace=False):
    """scale * elu(input, alpha) with SELU's fixed constants."""
    return _inplace(input, _ops.get("elu")(input, _SELU_ALPHA, _SELU_SCALE), inplace)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _inplace(input, _ops.get("elu")(input, alpha, 1.0, 1.0 / alpha), inplace)


def softsign(input):
    return input / (input.abs() + 1)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6."""
    return _inplace(input, (input + 3).clamp(0, 6) / 6, inplace)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6."""
    return _inplace(input, input * (input + 3).clamp(0, 6) / 6, inplace)


def threshold(input, threshold, value, inplace=False):
    """input where input > threshold, else value."""
    import ignis
    return _inplace(input, ignis.where(input > threshold, input, value), inplace)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or one."""
    if weight.dim() != 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
                           f"{weight.dim()}")
    n = weight.numel()
    if n != 1:
        channels = input.shape[1] if input.dim() >= 2 else 1
        if input.dim() == 0 or channels != n:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape([n] + [1] * (input.dim() - 2))
    import ignis
    return ignis.where(input > 0, input, weight * input)


def tanhshrink(input):
    return input - input.tanh()


def softshrink(input, lambd=0.5):
    import ignis
    return ignis.where(input > lambd, input - lambd,
                       ignis.where(input < -lambd, input + lambd, input * 0))


def hardshrink(input, lambd=0.5):
    import ignis
    return ignis.where((input > lambd).logical_or(input < -lambd), input, input * 0)
