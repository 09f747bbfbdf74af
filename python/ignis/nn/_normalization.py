"""F.batch_norm, F.group_norm, F.instance_norm and F.local_response_norm.

batch_norm calls the fused op `_native_batch_norm_legit_functional`
(src/ignis/ops/normalization.cpp), which returns the updated running
statistics rather than writing them; they are copied into the buffers here.
group_norm is layer_norm over each (sample, group), then the per-channel
affine; instance_norm is batch_norm over a batch of one whose channels are
every (sample, channel) pair, as torch computes it. local_response_norm
averages the squares over a window of channels with avg_pool2d, as torch's
does (its avg_pool3d over (size, 1, 1) windows is that pooling over the
flattened spatial dims).
"""
import ignis
from .. import _ops

_batch_norm = _ops.get("_native_batch_norm_legit_functional")


def _verify_batch_size(size):
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{list(size)}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    if training:
        _verify_batch_size(input.shape)
    if momentum is None:
        momentum = 0.0
    out, _, _, new_mean, new_var = _batch_norm(input, weight, bias, running_mean, running_var,
                                               training, momentum, eps)
    if training and running_mean is not None:
        running_mean.copy_(new_mean.detach())
        running_var.copy_(new_var.detach())
    return out


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and (p.dim() != 1 or p.shape[0] != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(p.shape)} and "
                               f"input of shape {list(input.shape)}")
    x = input.reshape(n, num_groups, -1)
    y = ignis.nn.functional.layer_norm(x, [x.shape[-1]], None, None, eps).reshape(input.shape)
    shape = [1, c] + [1] * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    if use_input_stats:
        n = 1
        for s in input.shape[2:]:
            n *= s
        if n == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    x = input.reshape([1, n * c] + list(input.shape[2:]))
    rm = running_mean.repeat(n) if running_mean is not None else None
    rv = running_var.repeat(n) if running_var is not None else None
    w = weight.repeat(n) if weight is not None else None
    b = bias.repeat(n) if bias is not None else None
    out, _, _, new_mean, new_var = _batch_norm(x, w, b, rm, rv, use_input_stats, momentum, eps)
    if use_input_stats and running_mean is not None:
        running_mean.copy_(new_mean.detach().reshape(n, c).mean(0))
        running_var.copy_(new_var.detach().reshape(n, c).mean(0))
    return out.reshape(input.shape)


def local_response_norm(input, size, alpha=0.0001, beta=0.75, k=1.0):
    """input / (k + alpha * mean of x ** 2 over `size` neighbouring channels) ** beta,
    the window zero-padded at the ends of dim 1 (size // 2 before, (size - 1) // 2
    after)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    n, c = input.shape[0], input.shape[1]
    div = (input * input).reshape(n, 1, c, -1)
    div = ignis.nn.functional.pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = ignis.nn.functional.avg_pool2d(div, (size, 1), stride=1).reshape(input.shape)
    return input / div.mul(alpha).add(k).pow(beta)
