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


# ---- unfold / fold: sliding blocks as columns, and back -----------------------------------------

def _pair(v):
    return tuple(_tuple(v, 2))


def _blocks(size, k, d, p, s):
    """The number of sliding blocks along each of two dims."""
    return tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of a (N, C, H, W) or (C, H, W) input as columns: (N,
    C * kh * kw, L), channel-major then the kernel's rows and columns, L the
    blocks in row-major order (torch's im2col). A strided view of the padded
    input, copied once by the reshape, so gradients flow through the view."""
    if input.dim() not in (3, 4):
        raise NotImplementedError("Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.dim()}D)")
    k, d, p, s = _pair(kernel_size), _pair(dilation), _pair(padding), _pair(stride)
    x = input.unsqueeze(0) if input.dim() == 3 else input
    n, c, h, w = x.shape
    blocks = _blocks((h, w), k, d, p, s)
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
    if p[0] or p[1]:
        from .functional import pad
        x = pad(x, (p[1], p[1], p[0], p[0]))
    x = x.contiguous()
    st = x.stride()
    view = x.as_strided((n, c, k[0], k[1], blocks[0], blocks[1]),
                        (st[0], st[1], d[0] * st[2], d[1] * st[3], s[0] * st[2], s[1] * st[3]),
                        x.storage_offset())
    out = view.reshape(n, c * k[0] * k[1], blocks[0] * blocks[1])
    return out[0] if input.dim() == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """unfold's adjoint: columns (N, C * kh * kw, L) or (C * kh * kw, L) summed
    back into a (N, C, H, W) image, overlapping blocks adding up (an
    index_add into the padded image, in the kernel's tap order as torch's
    col2im, then the padding cropped)."""
    if input.dim() not in (2, 3):
        raise NotImplementedError("Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.dim()}D)")
    size, k, d, p, s = (_pair(output_size), _pair(kernel_size), _pair(dilation), _pair(padding),
                        _pair(stride))
    x = input.unsqueeze(0) if input.dim() == 2 else input
    n, ck, L = x.shape
    taps = k[0] * k[1]
    if ck % taps:
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and kernel_size={k}.")
    blocks = _blocks(size, k, d, p, s)
    if blocks[0] * blocks[1] != L or blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={L}.")
    from .. import arange, zeros
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    dev = x.device
    rows = (arange(k[0], device=dev) * d[0]).reshape(k[0], 1, 1, 1) + \
        (arange(blocks[0], device=dev) * s[0]).reshape(1, 1, blocks[0], 1)
    cols = (arange(k[1], device=dev) * d[1]).reshape(1, k[1], 1, 1) + \
        (arange(blocks[1], device=dev) * s[1]).reshape(1, 1, 1, blocks[1])
    index = (rows * wp + cols).reshape(-1)
    c = ck // taps
    out = zeros(n, c, hp * wp, dtype=x.dtype, device=dev).index_add(
        2, index, x.reshape(n, c, taps * L))
    out = out.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]].contiguous()
    return out[0] if input.dim() == 2 else out
