"""The functional convolutions (F.conv1d ... F.conv_transpose3d).

All of them call the one core op `convolution` (src/ignis/ops/conv.cpp).
What is here is what torch's at::conv2d etc. add before that op: an
unbatched input gets a batch dim of 1, and padding="same"/"valid" become
numbers (an odd total "same" padding pads the input's far end by one more,
as torch does).
"""
from .. import _ops

_convolution = _ops.get("convolution")


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(v)] * n


def _batched(input, nd, name):
    """The input with a batch dim, and whether one was added."""
    if input.dim() == nd + 2:
        return input, False
    if input.dim() == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {name}, "
                       f"but got input of size: {list(input.shape)}")


def _same_padding(input, weight, stride, dilation, nd):
    """The symmetric padding of padding="same", and the input padded at the
    far end where the total is odd."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    left, extra = [], []
    for i in range(nd):
        total = dilation[i] * (weight.shape[2 + i] - 1)
        left.append(total // 2)
        extra.append(total - 2 * (total // 2))
    if any(extra):
        pad = []
        for e in reversed(extra):
            pad += [0, e]
        from . import functional as F
        input = F.pad(input, pad)
    return input, left


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, name):
    x, added = _batched(input, nd, name)
    stride, dilation = _tuple(stride, nd), _tuple(dilation, nd)
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * nd
        elif padding == "same":
            x, padding = _same_padding(x, weight, stride, dilation, nd)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, nd)
    out = _convolution(x, weight, bias, stride, padding, dilation, False, [0] * nd, groups)
    return out.squeeze(0) if added else out


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                    nd, name):
    if isinstance(padding, str):
        raise RuntimeError(f"{name}: padding must be an int or a tuple of ints, not a string")
    x, added = _batched(input, nd, name)
    out = _convolution(x, weight, bias, _tuple(stride, nd), _tuple(padding, nd),
                       _tuple(dilation, nd), True, _tuple(output_padding, nd), groups)
    return out.squeeze(0) if added else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")
