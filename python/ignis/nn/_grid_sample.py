"""F.affine_grid and F.grid_sample, as formulas over gathers.

affine_grid is a base grid of normalised coordinates times each theta (one
batched matmul). grid_sample turns each grid point into a source coordinate
per spatial dim (unnormalised, then padded: clamped at the border or
reflected), and sums taps of the input: the 2^d corners around it
(bilinear), the nearest element, or the 4 x 4 neighbours (bicubic, 4-D),
each gathered from the flattened input and weighted by a product of 1-D
weights. Taps outside the input count 0. The weights are formulas of the
grid, so autograd gives gradients for both input and grid (the index is a
floor, whose gradient is 0, as in torch's kernels); the formulas follow
ATen's GridSampler.h (unnormalize, clip_coordinates, reflect_coordinates,
the cubic convolution with A = -0.75).
"""
import itertools
import warnings

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")


def _linspace_from_neg_one(n, align_corners, like):
    import ignis
    if n <= 1:
        return ignis.zeros(1, dtype=like.dtype, device=like.device)
    r = ignis.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) that the affine
    maps theta (N, 2, 3) (or (N, 3, 4)) give for an output of `size`
    (torch.nn.functional.affine_grid)."""
    import ignis
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta of batch size {size[0]} (size[0]), but "
                           f"got theta of shape {list(theta.shape)}")
    nd = len(spatial)
    # base[..., k]: coordinate k (x along the last dim, then y, z), and a 1
    axes = []
    for k in range(nd):
        d = nd - 1 - k  # the spatial dim coordinate k runs along
        line = _linspace_from_neg_one(spatial[d], align_corners, theta)
        shape = [1] * nd
        shape[d] = line.shape[0]
        axes.append(line.reshape(shape).expand(*spatial))
    axes.append(ignis.ones(spatial, dtype=theta.dtype, device=theta.device))
    base = ignis.stack(axes, -1).reshape(1, -1, nd + 1)
    grid = base.expand(size[0], -1, -1).bmm(theta.transpose(1, 2))
    return grid.reshape(size[0], *spatial, nd)


# ---- grid_sample ----------------------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    """x reflected into [twice_low / 2, twice_high / 2] (reflect_coordinates)."""
    import ignis
    if twice_low == twice_high:
        return ignis.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    d = (x - low).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    odd = flips.remainder(2) == 1
    return ignis.where(odd, span - extra + low, extra + low)


def _pad_coordinates(x, size, padding_mode, align_corners):
    """compute_coordinates: x clamped (border) or reflected (reflection) into
    the input."""
    if padding_mode == "border":
        x = x.clamp(0, size - 1)
    elif padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        x = x.clamp(0, size - 1)
    return x


def _to_index(pos):
    """A tap's position as an index; non-finite or huge positions become
    -100, out of bounds (torch's safe_downgrade_to_int_range). Their weights
    stay NaN, so the output is NaN there, as torch's."""
    import ignis
    ok = pos.isfinite() & (pos.abs() < 2.0 ** 31 - 2)
    return ignis.where(ok, pos, ignis.full_like(pos, -100.0)).to(ignis.int64)


def _cubic_weights(t):
    """The 4 taps' weights at fraction t (get_cubic_upsample_coefficients)."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coord, size, mode, padding_mode, align_corners):
    """[(index, weight)] along one dim: the float positions (integers) read
    and their weights."""
    x = _unnormalize(coord, size, align_corners)
    if mode == "bicubic":
        lo = x.floor()
        ws = _cubic_weights(x - lo)
        return [(_pad_coordinates(lo + (k - 1), size, padding_mode, align_corners), w)
                for k, w in enumerate(ws)]
    x = _pad_coordinates(x, size, padding_mode, align_corners)
    if mode == "nearest":
        # no gradient reaches the grid, but a zero one (as torch's)
        return [(x.round(), x * 0 + 1)]
    lo = x.floor()
    frac = x - lo
    return [(lo, 1 - frac), (lo + 1, frac)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """input (N, C, H, W) (or (N, C, D, H, W)) sampled at grid (N, Ho, Wo, 2)
    (or (N, Do, Ho, Wo, 3)) of normalised (x, y[, z]) in [-1, 1]
    (torch.nn.functional.grid_sample)."""
    import ignis
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' "
                         f"or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    _check_grid_sampler(input, grid, mode)
    n, c = input.shape[0], input.shape[1]
    sizes = list(input.shape[2:])
    nd = len(sizes)
    out_shape = list(grid.shape[1:-1])
    g = grid.reshape(n, -1, nd)
    # taps[d]: along input dim 2 + d, read from grid coordinate nd - 1 - d
    taps = [_taps(g[..., nd - 1 - d], sizes[d], mode, padding_mode, align_corners)
            for d in range(nd)]
    flat = input.reshape(n, c, -1)
    out = None
    for combo in itertools.product(*taps):
        index, weight, inside = None, None, None
        for d, (pos, w) in enumerate(combo):
            i = _to_index(pos)
            ok = (i >= 0) & (i < sizes[d])
            i = i.clamp(0, sizes[d] - 1)
            index = i if index is None else index * sizes[d] + i
            weight = w if weight is None else weight * w
            inside = ok if inside is None else inside & ok
        weight = weight * inside.to(weight.dtype)
        vals = flat.gather(2, index.unsqueeze(1).expand(n, c, index.shape[1]))
        term = vals * weight.unsqueeze(1)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_shape)


def _check_grid_sampler(input, grid, mode):
    if input.dim() not in (4, 5) or input.dim() != grid.dim() or \
            input.shape[0] != grid.shape[0]:
        if input.dim() != grid.dim() or input.shape[0] != grid.shape[0]:
            raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, "
                               f"but got input with sizes {list(input.shape)} and grid with sizes "
                               f"{list(grid.shape)}")
        raise RuntimeError("grid_sampler(): expected 4D or 5D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    for d in range(2, input.dim()):
        if input.shape[d] <= 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    if mode == "bicubic" and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        raise NotImplementedError(f"grid_sampler(): not implemented for {input.dtype} input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype} but found {grid.dtype}")
    if input.device != grid.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
