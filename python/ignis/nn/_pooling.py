"""The functional poolings (F.max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_*,
lp_pool1d/2d, max_unpool1d/2d/3d).

The ops are 2-D (src/ignis/ops/pooling.cpp); a 1-D pooling is the 2-D one
over a height of 1, and its indices are then positions along the length,
as torch's are. The 3-D poolings and the unpoolings are formulas over other
ops (below).
"""
from .. import _ops
from .._functions import _holds_data

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


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


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


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    """(sum over each window of x ** p) ** (1 / p): the average pooling of
    x ** p times the window's size (torch's formula: a negative average, from
    odd p, is clamped to 0); p = +-inf is the max pooling of |x| (of -|x|)."""
    max_pool, avg_pool = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d),
                          3: (max_pool3d, avg_pool3d)}[nd]
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


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


# ---- 3-D pooling: formulas over windows gathered with index_select ---------------------------
# No op pools 3-D: each window's elements are gathered, one spatial dim at a
# time, into a trailing dim (index_select, whose gradient adds into the
# elements each window read), then reduced. Max pooling reads each window's
# maximum at its argmax (the first one, as torch's kernels), so the gradient
# goes to that element alone; its index is that position in the input.
def _triple(v, name, fn, default=None):
    if v is None:
        v = default
    v = _list(v)
    if len(v) == 1:
        v = v * 3
    if len(v) != 3:
        raise RuntimeError(f"{fn}: {name} must either be a single int, or a tuple of three ints")
    return v


def _pool3d_args(input, kernel_size, stride, padding, dilation, ceil_mode, fn):
    """(input as 5-D, unbatched, kernel, stride, padding, dilation, output size)
    with torch's checks (pool3d_shape_check)."""
    if input.dim() not in (4, 5) or input.numel() == 0:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    k = _triple(kernel_size, "kernel_size", fn)
    s = _triple(stride if stride not in (None, [], ()) else None, "stride", fn, default=k)
    p = _triple(padding, "padding", fn)
    d = _triple(dilation, "dilation", fn)
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} kH: "
                           f"{k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError("stride should not be zero")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} "
                           f"dilationH: {d[1]} dilationW: {d[2]}")
    for i in range(3):
        if p[i] < 0 or p[i] > ((k[i] - 1) * d[i] + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    size = list(x.shape[2:])
    out = []
    for i in range(3):
        o = (size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil_mode else 0)) // s[i] + 1
        if ceil_mode and (o - 1) * s[i] >= size[i] + p[i]:
            o -= 1
        out.append(o)
    if min(out) < 1:
        shown = "x".join(str(v) for v in [x.shape[1]] + size)
        raise RuntimeError(f"Given input size: ({shown}). Calculated output size: "
                           f"({'x'.join(str(v) for v in [x.shape[1]] + out)}). Output size is "
                           "too small")
    return x, unbatched, k, s, p, d, out


def _windows3d(x, k, s, p, d, out, fill):
    """x (N, C, D, H, W) padded with `fill` -> (N, C, oD, oH, oW, kD * kH * kW)."""
    import ignis
    pads = []
    for i in (2, 1, 0):  # F.pad lists the last dim first
        right = max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 - (x.shape[2 + i] + p[i]))
        pads += [p[i], p[i] + right]
    if any(pads):
        x = ignis.nn.functional.pad(x, pads, value=fill)
    for i in range(3):
        dim = 2 + 2 * i  # each gathered dim becomes (out, kernel)
        idx = (ignis.arange(out[i], device=x.device) * s[i]).unsqueeze(1) + \
            (ignis.arange(k[i], device=x.device) * d[i]).unsqueeze(0)
        x = x.index_select(dim, idx.reshape(-1))
        x = x.reshape(*x.shape[:dim], out[i], k[i], *x.shape[dim + 1:])
    # (N, C, oD, kD, oH, kH, oW, kW) -> (N, C, oD, oH, oW, kD * kH * kW)
    x = x.permute(0, 1, 2, 4, 6, 3, 5, 7)
    return x.reshape(*x.shape[:5], k[0] * k[1] * k[2])


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each window (torch.nn.functional.max_pool3d); with
    return_indices, also its position in the flattened D * H * W input."""
    import ignis
    x, unbatched, k, s, p, d, out = _pool3d_args(input, kernel_size, stride, padding, dilation,
                                                 ceil_mode, "max_pool3d")
    win = _windows3d(x, k, s, p, d, out, float("-inf") if x.is_floating_point() else
                     ignis.iinfo(x.dtype).min)
    arg = win.argmax(-1, keepdim=True)
    val = win.gather(-1, arg).squeeze(-1)
    if unbatched:
        val = val.squeeze(0)
    if not return_indices:
        return val
    # the window's element (a, b, c) -> its input coordinates
    arg = arg.squeeze(-1)
    a, rest = arg // (k[1] * k[2]), arg % (k[1] * k[2])
    b, c = rest // k[2], rest % k[2]
    coords = []
    for i, off in enumerate((a, b, c)):
        shape = [1, 1, 1, 1, 1]
        shape[2 + i] = out[i]
        start = (ignis.arange(out[i], device=x.device) * s[i] - p[i]).reshape(shape)
        coords.append(start + off * d[i])
    size = x.shape[2:]
    idx = (coords[0] * size[1] + coords[1]) * size[2] + coords[2]
    return val, (idx.squeeze(0) if unbatched else idx)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_counts(n, k, s, p, o, count_include_pad):
    """How many elements each of the o windows along one dim divides by."""
    counts = []
    for i in range(o):
        start = i * s - p
        end = min(start + k, n + p)
        if count_include_pad:
            counts.append(end - start)
        else:
            counts.append(min(end, n) - max(start, 0))
    return counts


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each window (torch.nn.functional.avg_pool3d): its sum over
    the window's size, the padding counted or not, or divisor_override."""
    import ignis
    x, unbatched, k, s, p, d, out = _pool3d_args(input, kernel_size, stride, padding, 1,
                                                 ceil_mode, "avg_pool3d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    total = _windows3d(x, k, s, p, d, out, 0.0).sum(-1)
    if divisor_override is not None:
        r = total / divisor_override
    else:
        size = x.shape[2:]
        div = None
        for i in range(3):
            shape = [1, 1, 1, 1, 1]
            shape[2 + i] = out[i]
            c = ignis.tensor(_avg_counts(size[i], k[i], s[i], p[i], out[i], count_include_pad),
                             dtype=x.dtype, device=x.device).reshape(shape)
            div = c if div is None else div * c
        r = total / div
    return r.squeeze(0) if unbatched else r


def _adaptive_matrix(n, o, like):
    """(o, n): row i averages input elements floor(i n / o) .. ceil((i + 1) n / o) - 1."""
    import ignis
    rows = []
    for i in range(o):
        start, end = (i * n) // o, -((-(i + 1) * n) // o)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(n)])
    return ignis.tensor(rows, dtype=like.dtype, device=like.device).reshape(o, n)


def _adaptive_size_3d(input, output_size, name, wrong_length):
    """An adaptive 3-D pooling's checks (torch's messages) and its output size."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got {list(input.shape)}")
    if isinstance(output_size, (list, tuple)) and len(output_size) != 3:
        raise RuntimeError(f"{name}: {wrong_length}")
    return _adaptive_size(input, output_size, 3)


def adaptive_avg_pool3d(input, output_size):
    """The mean over each adaptive window (torch.nn.functional.adaptive_avg_pool3d):
    the windows along each dim are a matrix of 1 / size, applied one dim at a time."""
    size = _adaptive_size_3d(input, output_size, "adaptive_avg_pool3d",
                             "output_size must be 3")
    if min(size) < 0:
        raise RuntimeError(f"adaptive_avg_pool3d: elements of output_size must be greater than or "
                           f"equal to 0 but received {size}")
    x = input
    for i in range(3):
        dim = x.dim() - 3 + i
        m = _adaptive_matrix(x.shape[dim], size[i], x)
        x = (x.movedim(dim, -1) @ m.t()).movedim(-1, dim)
    return x


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over each adaptive window (torch.nn.functional.adaptive_max_pool3d):
    window i along a dim of n elements spans floor(i n / o) .. ceil((i + 1) n / o) - 1;
    each window's elements are gathered (the shorter ones repeat their last element,
    which leaves their first maximum where it is) and reduced as max_pool3d's. With
    return_indices, also the maximum's position in the flattened D * H * W input."""
    import ignis
    size = _adaptive_size_3d(input, output_size, "adaptive_max_pool3d",
                             "internal error: output_size.size() must be 3")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    if min(x.shape[2:]) <= 0:
        raise RuntimeError(f"adaptive_max_pool3d(): Expected input to have non-zero size for "
                           f"non-batch dimensions, but input has sizes {list(input.shape)}")
    if min(size) < 0:
        raise RuntimeError(f"adaptive_max_pool3d: elements of output_size must be greater than "
                           f"or equal to 0 but received {size}")
    n = list(x.shape[2:])
    tables = []
    for i in range(3):
        starts = [(j * n[i]) // size[i] for j in range(size[i])]
        ends = [-((-(j + 1) * n[i]) // size[i]) for j in range(size[i])]
        k = max(e - b for b, e in zip(starts, ends))
        tab = ignis.tensor([[min(b + a, e - 1) for a in range(k)] for b, e in zip(starts, ends)],
                           dtype=ignis.int64, device=x.device)
        tables.append(tab)
        dim = 2 + 2 * i  # each gathered dim becomes (out, kernel)
        x = x.index_select(dim, tab.reshape(-1))
        x = x.reshape(*x.shape[:dim], size[i], k, *x.shape[dim + 1:])
    x = x.permute(0, 1, 2, 4, 6, 3, 5, 7)
    win = x.reshape(*x.shape[:5], -1)
    arg = win.argmax(-1, keepdim=True)
    val = win.gather(-1, arg).squeeze(-1)
    if unbatched:
        val = val.squeeze(0)
    if not return_indices:
        return val
    t0, t1, t2 = tables
    flat = ((t0[:, None, None, :, None, None] * n[1] + t1[None, :, None, None, :, None]) * n[2]
            + t2[None, None, :, None, None, :]).reshape(*size, -1)
    idx = flat.expand(*win.shape).gather(-1, arg).squeeze(-1)
    return val, (idx.squeeze(0) if unbatched else idx)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


# ---- max_unpool: the max poolings' inverse ---------------------------------------------------
def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    default = [(input.shape[input.dim() - len(kernel_size) + d] - 1) * stride[d] +
               kernel_size[d] - 2 * padding[d] for d in range(len(kernel_size))]
    if output_size is None:
        return default
    output_size = [int(v) for v in output_size]
    if len(output_size) == len(kernel_size) + 2:
        output_size = output_size[2:]
    if len(output_size) != len(kernel_size):
        raise ValueError(f"output_size should be a sequence containing {len(kernel_size)} or "
                         f"{len(kernel_size) + 2} elements, but it has a length of "
                         f"'{len(output_size)}'")
    for d in range(len(kernel_size)):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{tuple(output_size)}" (dim {d} must be between '
                             f"{lo} and {hi})")
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, fn):
    """Each element of input written at its index in a zero (..., *size)."""
    import ignis
    if indices.dtype != ignis.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: "
                           f"{str(indices.dtype).split('.')[-1].capitalize()}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Input to {fn} should be a {nd + 1}d or {nd + 2}d Tensor, but got a "
                           f"tensor with {input.dim()} dimensions.")
    k = _list(kernel_size)
    k = k * nd if len(k) == 1 else k
    s = _list(stride) if stride is not None else k
    s = s * nd if len(s) == 1 else s
    p = _list(padding)
    p = p * nd if len(p) == 1 else p
    size = _unpool_output_size(input, k, s, p, output_size)
    volume = 1
    for v in size:
        volume *= v
    lead = list(input.shape[:input.dim() - nd])
    x = input.reshape(*lead, -1)
    idx = indices.reshape(*lead, -1)
    if _holds_data(idx) and idx.numel():
        bad = (idx < 0) | (idx >= volume)
        if bool(bad.any()):
            v = int(idx[bad].reshape(-1)[0].item())
            raise RuntimeError(f"Found an invalid max index: {v} (output volumes are of size "
                               f"{'x'.join(str(t) for t in size)}")
    out = ignis.zeros(*lead, volume, dtype=input.dtype, device=input.device)
    out = out.scatter(-1, idx, x)
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool1d's inverse: input's elements at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpooling1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool2d's inverse: input's elements at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpooling2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """max_pool3d's inverse: input's elements at their indices, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpooling3d")
