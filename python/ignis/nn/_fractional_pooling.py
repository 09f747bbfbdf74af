"""Fractional max pooling (Graham, 2014): max pooling whose windows start at
pseudo-random, increasing offsets, so that the output size may be any
fraction of the input's. torch.nn.functional.fractional_max_pool2d / 3d.

For each (batch, channel) plane and each pooled dim, one uniform sample u
in [0, 1) fixes the window starts: with alpha = (in - k) / (out - 1),
start_i = floor((i + u) alpha) - floor(u alpha) for i < out - 1, and the last
window ends at the input's end (start = in - k). The samples are drawn
with ignis.rand unless _random_samples (N, C, dims) gives them, in the
order (w, h) for 2-D and (t, h, w) for 3-D, as torch's.

The windows are gathered from the flattened plane and reduced with max,
so gradients flow to the selected input elements (ties: the first in
window order, as torch's kernel)."""
import ignis


def _window_starts(samples, in_size, out_size, kernel):
    """(N, C) samples -> (N, C, out_size) int64 window starts."""
    samples = samples.double()
    i = ignis.arange(out_size - 1, dtype=ignis.float64, device=samples.device)
    if out_size > 1:
        alpha = (in_size - kernel) / (out_size - 1)
        starts = ((i + samples.unsqueeze(-1)) * alpha).floor() \
            - (samples.unsqueeze(-1) * alpha).floor()
    else:
        starts = samples.unsqueeze(-1)[..., :0]
    last = ignis.full(tuple(samples.shape) + (1,), float(in_size - kernel),
                      dtype=ignis.float64, device=samples.device)
    return ignis.cat([starts, last], -1).long()


def _as_tuple(v, n, name, fn):
    if isinstance(v, (list, tuple)):
        if len(v) != n:
            raise ValueError(f"{fn}: {name} must be a number or a tuple of {n}, got {v}")
        return tuple(v)
    return (v,) * n


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, random_samples, nd,
                         fn):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn} requires specifying either an output_size or an output_ratio")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    kernel = tuple(int(k) for k in _as_tuple(kernel_size, nd, "kernel_size", fn))
    spatial = tuple(input.shape[-nd:])
    if output_size is None:
        ratio = _as_tuple(output_ratio, nd, "output_ratio", fn)
        output_size = tuple(int(s * r) for s, r in zip(spatial, ratio))
    out = tuple(int(o) for o in _as_tuple(output_size, nd, "output_size", fn))
    names = ("time", "height", "width")[3 - nd:]
    for k, o, s, name in zip(kernel, out, spatial, names):
        if k <= 0:
            raise RuntimeError(f"{fn}(): kernel_size must be greater than zero, but got "
                               f"{kernel}")
        if o <= 0:
            raise RuntimeError(f"{fn}(): output_size must be greater than zero, but got {out}")
        if o + k - 1 > s:
            raise RuntimeError(f"{fn}(): pool {name} {k} too large relative to input "
                               f"{name} {s}")
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    N, C = x.shape[0], x.shape[1]
    if random_samples is None:
        random_samples = ignis.rand((N, C, nd), dtype=x.dtype, device=x.device)
    else:
        if random_samples.dim() != 3:
            raise RuntimeError(f"Expect _random_samples to be 3D tensor, got: "
                               f"{random_samples.dim()}D")
        if random_samples.shape[0] != N:
            raise RuntimeError(f"Expect _random_samples.size(0) equals to input batch size, "
                               f"got {random_samples.shape[0]} vs {N}.")
        if random_samples.shape[1] != C:
            raise RuntimeError(f"Expect _random_samples.size(1) equals to input channel size, "
                               f"got {random_samples.shape[1]} vs {C}.")
        if random_samples.shape[2] != nd:
            raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                               f"{random_samples.shape[2]}.")
    # torch's sample order: (w, h) in 2-D, (t, h, w) in 3-D.
    order = (1, 0) if nd == 2 else (0, 1, 2)
    # Per pooled dim: the input positions of every window element, (N, C, out, k).
    positions = []
    for d in range(nd):
        starts = _window_starts(random_samples[..., order[d]], spatial[d], out[d], kernel[d])
        offsets = ignis.arange(kernel[d], dtype=ignis.int64, device=x.device)
        positions.append(starts.unsqueeze(-1) + offsets)
    # Flat index into the plane of each (output position, window element):
    # shape (N, C, out_0, ..., out_{nd-1}, k_0, ..., k_{nd-1}).
    flat = None
    for d in range(nd):
        shape = [N, C] + [1] * nd + [1] * nd
        shape[2 + d] = out[d]
        shape[2 + nd + d] = kernel[d]
        stride = 1
        for s in spatial[d + 1:]:
            stride *= s
        term = positions[d].reshape(shape) * stride
        flat = term if flat is None else flat + term
    flat = flat.expand([N, C] + list(out) + list(kernel))
    window_numel = 1
    for k in kernel:
        window_numel *= k
    flat = flat.reshape(N, C, -1)
    values = x.reshape(N, C, -1).gather(2, flat)
    values = values.reshape([N, C] + list(out) + [window_numel])
    flat = flat.reshape([N, C] + list(out) + [window_numel])
    result, which = values.max(-1)
    indices = flat.gather(-1, which.unsqueeze(-1)).squeeze(-1)
    if not batched:
        result, indices = result.squeeze(0), indices.squeeze(0)
    return result, indices


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples,
                                2, "fractional_max_pool2d")


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, indices = fractional_max_pool2d_with_indices(input, kernel_size, output_size,
                                                      output_ratio, True, _random_samples)
    return (out, indices) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples,
                                3, "fractional_max_pool3d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    out, indices = fractional_max_pool3d_with_indices(input, kernel_size, output_size,
                                                      output_ratio, True, _random_samples)
    return (out, indices) if return_indices else out
