"""F.interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), F.pixel_shuffle / F.pixel_unshuffle and F.channel_shuffle, written with
other ops.

Interpolation is separable: along each spatial dim the output gathers
input rows (index_select) at source positions computed as torch's CPU
kernels compute them (in float32 for float32 inputs, so floors agree), the
linear modes blend two neighbours and bicubic four (Keys' cubic, A = -0.75,
the taps clamped to the edge). Gradients come from index_select's.
Pixel (un)shuffle and channel shuffle are a reshape, a permute and a reshape.
"""
import math

import ignis
from ._grid_sample import _cubic_weights  # the same taps as grid_sample's bicubic

_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _source_scale(in_size, out_size, scale, align_corners):
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    if scale is not None and scale > 0:
        return 1.0 / scale
    return in_size / out_size


def _nearest(x, dim, out_size, scale, exact):
    in_size = x.shape[dim]
    s = _source_scale(in_size, out_size, scale, False)
    pos = ignis.arange(out_size, dtype=ignis.float32)
    if exact:
        pos = pos + 0.5
    idx = (pos * ignis.tensor(s, dtype=ignis.float32)).floor().long().clamp(max=in_size - 1)
    return x.index_select(dim, idx)


def _source_positions(x, dim, out_size, scale, align_corners, clamp_at_zero):
    """Each output position's source coordinate along `dim` (ATen's
    area_pixel_compute_source_index), in float64 for float64 inputs."""
    in_size = x.shape[dim]
    dt = ignis.float64 if x.dtype == ignis.float64 else ignis.float32
    s = _source_scale(in_size, out_size, scale, align_corners)
    pos = ignis.arange(out_size, dtype=dt)
    if align_corners:
        return pos * ignis.tensor(s, dtype=dt), dt
    src = (pos + 0.5) * ignis.tensor(s, dtype=dt) - 0.5
    return (src.clamp(min=0) if clamp_at_zero else src), dt


def _linear(x, dim, out_size, scale, align_corners):
    in_size = x.shape[dim]
    src, dt = _source_positions(x, dim, out_size, scale, align_corners, True)
    i0 = src.long()  # truncation: src >= 0
    lam1 = (src - i0.to(dt)).clamp(0, 1)
    i1 = (i0 + 1).clamp(max=in_size - 1)
    shape = [1] * x.dim()
    shape[dim] = out_size
    lam1 = lam1.to(x.dtype).reshape(shape)
    lam0 = 1 - lam1
    return x.index_select(dim, i0) * lam0 + x.index_select(dim, i1) * lam1


def _cubic(x, dim, out_size, scale, align_corners):
    in_size = x.shape[dim]
    src, dt = _source_positions(x, dim, out_size, scale, align_corners, False)  # (as torch's)
    i0 = src.floor().clamp(max=in_size - 1)
    t = (src - i0).clamp(0, 1)
    i0 = i0.long()
    shape = [1] * x.dim()
    shape[dim] = out_size
    out = None
    for j, w in enumerate(_cubic_weights(t)):
        tap = x.index_select(dim, (i0 + (j - 1)).clamp(0, in_size - 1)) * w.to(x.dtype).reshape(shape)
        out = tap if out is None else out + tap
    return out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    nd = input.dim() - 2
    if nd < 1:
        raise ValueError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                         f"{input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | "
                         f"trilinear | area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * nd
        if len(sizes) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, "
                             f"but got input with spatial dimensions of {list(input.shape[2:])} "
                             f"and output size of {sizes}. Please provide input tensor in "
                             f"(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             f"format.")
        scales = [None] * nd
    else:
        scales = (list(scale_factor) if isinstance(scale_factor, (list, tuple))
                  else [scale_factor] * nd)
        if len(scales) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(input.shape[2:])} and scale_factor of shape {scales}.")
        sizes = [int(math.floor(float(input.shape[i + 2] * scales[i]))) for i in range(nd)]
        if recompute_scale_factor:
            scales = [None] * nd
    if mode in _LINEAR and _LINEAR[mode] != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{_LINEAR[mode] + 2}D input")
    if mode == "bicubic" and nd != 2:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | area | nearest-exact (got {mode})")
    if mode == "area":
        from . import functional as F
        pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d}.get(nd)
        if pool is None:
            raise NotImplementedError("interpolate: mode='area' supports 3D and 4D inputs")
        return pool(input, sizes if nd > 1 else sizes[0])
    out = input
    for i in range(nd):
        dim = 2 + i
        if mode in ("nearest", "nearest-exact"):
            out = _nearest(out, dim, sizes[i], scales[i], mode == "nearest-exact")
        elif mode in _LINEAR:
            out = _linear(out, dim, sizes[i], scales[i], align_corners)
        elif mode == "bicubic":
            out = _cubic(out, dim, sizes[i], scales[i], align_corners)
        else:
            raise NotImplementedError(f"interpolate: mode '{mode}' is not supported (nearest, "
                                      f"nearest-exact, linear, bilinear, bicubic, trilinear and "
                                      f"area are)")
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated in torch: interpolate(mode="nearest")."""
    import warnings
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated in torch: interpolate(mode="bilinear", align_corners=True)."""
    import warnings
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    b = len(batch)
    oc = c // (r * r)
    x = input.reshape(*batch, oc, r, r, h, w)
    perm = list(range(b)) + [b, b + 3, b + 1, b + 4, b + 2]
    return x.permute(*perm).reshape(*batch, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0 or w % r != 0:
        which, n = ("height", h) if h % r != 0 else ("width", w)
        raise RuntimeError(f"pixel_unshuffle expects {which} to be divisible by "
                           f"downscale_factor, but input.size({-2 if which == 'height' else -1})"
                           f"={n} is not divisible by {r}")
    b = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    perm = list(range(b)) + [b, b + 2, b + 4, b + 1, b + 3]
    return x.permute(*perm).reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """Dim 1's channels as `groups` groups, interleaved: channel g * (C / groups) + i
    goes to i * groups + g (torch.nn.functional.channel_shuffle)."""
    if input.dim() <= 2:
        raise RuntimeError("channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError("Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c, *rest = input.shape
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and "
                           f"{groups} groups.")
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(input.shape)
