"""The functional poolings (F.max_pool1d/2d, avg_pool1d/2d, adaptive_*,
lp_pool1d/2d).

The ops are 2-D (src/ignis/ops/pooling.cpp); a 1-D pooling is the 2-D one
over a height of 1, and its indices are then positions along the length,
as torch's are.
"""
from .. import _ops

_max_pool2d = _ops.get("max_pool2d_with_indices")
_avg_pool2d = _ops.get("avg_pool2d")
_adaptive_avg = _ops.get("_adaptive_avg_pool2d")
_adaptive_max = _ops.get("adaptive_max_pool2d")


def _list(v):
    if v is None:
        return []
    return [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]


def _one(v, name, fn):
    """A 1-D parameter as the [1, v] of the 2-D op (height 1)."""
    v = _list(v)
    if len(v) > 1:
        raise RuntimeError(f"{fn}: {name} must be a single int, or a tuple of one int")
    return v


def _check_1d(input, fn):
    if input.dim() not in (2, 3):
        raise RuntimeError(f"{fn}: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           f"batch size for input, but got: {list(input.shape)}")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool2d(input, _list(kernel_size), _list(stride), _list(padding), _list(dilation),
                       ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    out, idx = _max_pool2d(input, _list(kernel_size), _list(stride), _list(padding),
                           _list(dilation), ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _check_1d(input, "max_pool1d")
    k = _one(kernel_size, "kernel_size", "max_pool1d")
    s = _one(stride, "stride", "max_pool1d")
    out, idx = _max_pool2d(input.unsqueeze(-2), [1] + k, [1] + s if s else [],
                           [0] + _one(padding, "padding", "max_pool1d"),
                           [1] + _one(dilation, "dilation", "max_pool1d"), ceil_mode)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool2d(input, _list(kernel_size), _list(stride), _list(padding), ceil_mode,
                       count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    _check_1d(input, "avg_pool1d")
    k = _one(kernel_size, "kernel_size", "avg_pool1d")
    s = _one(stride, "stride", "avg_pool1d")
    out = _avg_pool2d(input.unsqueeze(-2), [1] + k, [1] + s if s else [],
                      [0] + _one(padding, "padding", "avg_pool1d"), ceil_mode,
                      count_include_pad, None)
    return out.squeeze(-2)


def _adaptive_size(input, output_size, nd):
    """output_size as a list of nd ints; None keeps the input's size."""
    if not isinstance(output_size, (list, tuple)):
        output_size = [output_size] * nd
    if len(output_size) != nd:
        raise RuntimeError(f"adaptive pooling: output_size must have {nd} elements, got "
                           f"{list(output_size)}")
    return [input.shape[input.dim() - nd + i] if v is None else int(v)
            for i, v in enumerate(output_size)]


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(input, _adaptive_size(input, output_size, 2))


def adaptive_avg_pool1d(input, output_size):
    _check_1d(input, "adaptive_avg_pool1d")
    size = _adaptive_size(input, output_size, 1)
    return _adaptive_avg(input.unsqueeze(-2), [1] + size).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(input, _adaptive_size(input, output_size, 2))
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    _check_1d(input, "adaptive_max_pool1d")
    size = _adaptive_size(input, output_size, 1)
    out, idx = _adaptive_max(input.unsqueeze(-2), [1] + size)
    out, idx = out.squeeze(-2), idx.squeeze(-2)
    return (out, idx) if return_indices else out


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    """(sum over each window of x ** p) ** (1 / p): the average pooling of
    x ** p times the window's size (torch's formula: a negative average, from
    odd p, is clamped to 0); p = +-inf is the max pooling of |x| (of -|x|)."""
    max_pool, avg_pool = (max_pool1d, avg_pool1d) if nd == 1 else (max_pool2d, avg_pool2d)
    if norm_type == float("inf"):
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    k = _list(kernel_size)
    count = 1
    for v in k * nd if len(k) == 1 else k:
        count *= v
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu()).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)
