"""Folding an eval-mode BatchNorm into the preceding convolution or linear
layer (torch.nn.utils.fusion): the fused layer computes bn(layer(x)) with
the BatchNorm's running statistics."""
import copy

import ignis
from ..parameter import Parameter


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of `conv` (eval mode, as `bn`) with `bn` folded into its weight
    and bias; transpose=True for a ConvTranspose (out channels on dim 1)."""
    assert not (conv.training or bn.training), "Fusion only for eval!"
    fused_conv = copy.deepcopy(conv)
    assert bn.running_mean is not None and bn.running_var is not None
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(
        fused_conv.weight, fused_conv.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias, transpose)
    return fused_conv


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of the convolution followed by the BatchNorm
    with these statistics and affine parameters (None: identity). The
    results keep the conv's dtypes and requires_grad flags."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    if conv_b is None:
        conv_b = ignis.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ignis.ones_like(bn_rm)
    if bn_b is None:
        bn_b = ignis.zeros_like(bn_rm)
    inv_std = ignis.rsqrt(bn_rv + bn_eps)
    # The per-channel scale broadcast over the weight's output-channel dim.
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    fused_w = (conv_w * (bn_w * inv_std).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * inv_std * bn_w + bn_b).to(dtype=b_dtype)
    return (Parameter(fused_w.detach(), conv_w.requires_grad),
            Parameter(fused_b.detach(), conv_b.requires_grad))


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` (eval mode, as `bn`) with `bn` folded in; bn's
    num_features must equal linear.out_features or be 1 (broadcast)."""
    assert not (linear.training or bn.training), "Fusion only for eval!"
    fused_linear = copy.deepcopy(linear)
    assert linear.out_features == bn.num_features or bn.num_features == 1, \
        "To fuse, linear.out_features == bn.num_features or bn.num_features == 1"
    assert bn.running_mean is not None and bn.running_var is not None
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps,
        bn.weight, bn.bias)
    return fused_linear


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of the linear layer followed by the BatchNorm."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    if linear_b is None:
        linear_b = ignis.zeros_like(bn_rm)
    bn_scale = bn_w * ignis.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=w_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=b_dtype)
    return (Parameter(fused_w.detach(), linear_w.requires_grad),
            Parameter(fused_b.detach(), linear_b.requires_grad))
