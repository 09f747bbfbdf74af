"""Python-level functions that are not operators of their own."""
from . import _C

__all__ = ["manual_seed", "get_rng_state", "set_rng_state", "seed", "isclose", "allclose", "equal",
           "broadcast_tensors", "broadcast_shapes",
           # torch's top-level functions made of ops (below)
           "repeat_interleave",
           "polygamma",
           "mvlgamma",
           "argwhere",
           "diff",
           "isin",
           "nan_to_num",
           "logaddexp",
           "logaddexp2",
           "xlogy",
           "diag",
           "diag_embed",
           "diagflat",
           "trace",
           "kron",
           "cross",
           "tensor_split",
           "ravel",
           "rot90",
           "median",
           "nanmedian",
           "nanmean",
           "quantile",
           "nanquantile",
           "kthvalue",
           "bincount",
           "searchsorted",
           "bucketize",
           "tril_indices",
           "triu_indices",
           "combinations",
           "inner",
           "vdot",
           "dist",
           "pdist",
           "addmv",
           "addr",
           "addbmm",
           "sinc",
           "logit",
           "deg2rad",
           "rad2deg",
           "heaviside",
           "fmax",
           "fmin",
           "float_power",
           "positive",
           "sgn",
           "msort"]


def manual_seed(seed):
    """Seeds the global generator; returns it (ignis.default_generator)."""
    _C.manual_seed(seed)
    return _C.default_generator


def get_rng_state():
    """The global generator's state, a uint8 tensor (default_generator.get_state())."""
    return _C.default_generator.get_state()


def set_rng_state(state):
    """Restores get_rng_state()'s tensor (or the older (seed, offset) pair)."""
    if isinstance(state, tuple):
        _C.set_rng_state(*state)
    else:
        _C.default_generator.set_state(state)


def seed():
    import random
    s = random.getrandbits(63)
    _C.manual_seed(s)
    return s


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise |input - other| <= atol + rtol * |other| (torch.isclose)."""
    from . import _C as C  # noqa: F401
    import ignis
    if input.dtype != other.dtype:
        raise TypeError(f"isclose: input dtype {input.dtype} and other dtype {other.dtype} differ")
    if input.dtype == ignis.bool or not input.is_floating_point():
        return input == other
    a, b = input, other
    close = (a == b) | ((a - b).abs() <= atol + rtol * b.abs())
    if equal_nan:
        close = close | (a.isnan() & b.isnan())
    return close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close (torch.allclose)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True when both tensors have the same size and elements (torch.equal)."""
    if input.shape != other.shape:
        return False
    return bool((input == other).all())


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape, as views (the op
    broadcast_tensors takes them as one list; torch's function takes them
    one by one)."""
    from . import _ops
    return tuple(_ops.get("broadcast_tensors")(list(tensors)))


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to."""
    from . import _ops, empty
    views = [empty([s] if isinstance(s, int) else list(s), device="meta") for s in shapes]
    out = _ops.get("broadcast_tensors")(views)
    from ._size import Size
    return Size(out[0].shape) if out else Size([])


# --- torch's top-level functions made of ops (no op of their own) ------------------------------
# Each takes torch's arguments and gives torch's results; Tensor methods of
# the same names (ignis/_tensor.py) call these. Capture records a call of one
# as a single node; autograd and AOT see the ops they are made of.
_int = type(0)


def _ig():
    import ignis
    return ignis


def _dim(d, n):
    if not -max(n, 1) <= d < max(n, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, "
                         f"{max(n, 1) - 1}], but got {d})")
    return d % max(n, 1)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (or slice along `dim`) repeated `repeats` times in place
    (torch.repeat_interleave). An int repeats is a view expanded and
    reshaped; a tensor of repeats gives a size only its values decide (one
    host read of their sum, unless output_size says it). repeat_interleave(r)
    alone repeats each index i r[i] times."""
    ig = _ig()
    if repeats is None:  # repeat_interleave(repeats): indices
        r = input
        return repeat_interleave(ig.arange(r.shape[0], device=r.device), r, 0, output_size=output_size)
    if dim is None:
        input, dim = input.reshape(-1), 0
    dim = _dim(dim, input.dim())
    if input.dim() == 0:
        input = input.reshape(1)
    n = input.shape[dim]
    if isinstance(repeats, ig.Tensor) and repeats.numel() == 1 and repeats.dim() <= 1:
        repeats = _int(repeats.reshape(-1)[0].item())
    if isinstance(repeats, _int):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        shape = list(input.shape)
        e = input.unsqueeze(dim + 1).expand(*shape[:dim + 1], repeats, *shape[dim + 1:])
        return e.reshape(*shape[:dim], n * repeats, *shape[dim + 1:])
    if repeats.dim() != 1 or repeats.shape[0] != n:
        raise RuntimeError("repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {repeats.shape[0] if repeats.dim() else 1} and "
                           f"input.size({dim}) = {n}")
    if repeats.is_floating_point():
        raise RuntimeError("repeats has to be Long or Int tensor")
    repeats = repeats.to(ig.int64)
    if bool((repeats < 0).any()):
        raise RuntimeError("Repeats must be non-negative")
    total = _int(repeats.sum().item()) if output_size is None else output_size
    # Index i from each boundary cumsum(repeats)[i - 1] on: ones at the
    # boundaries (repeated ones for zero repeats), summed.
    ends = repeats.cumsum(0)
    marks = ig.zeros(total + 1, dtype=ig.int64, device=repeats.device)
    marks.index_add_(0, ends.clamp(max=total), ig.ones_like(ends))
    idx = marks[:total].cumsum(0)
    return input.index_select(dim, idx)


def argwhere(input):
    """The coordinates of input's nonzero elements, one row each (torch.argwhere)."""
    return input.nonzero()


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim, after prepend/append (torch.diff)."""
    ig = _ig()
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    dim = _dim(dim, input.dim())
    parts = [t if t.dim() else t.expand(*input.shape[:dim], 1, *input.shape[dim + 1:])
             for t in (prepend, input, append) if t is not None]
    x = ig.cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[dim]
        if m == 0:
            break
        a, b = x.narrow(dim, 1, m - 1), x.narrow(dim, 0, m - 1)
        x = (a != b) if x.dtype == ig.bool else a - b
    return x


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is among test_elements (torch.isin): a sort of the
    test elements and a binary search (searchsorted) for each element."""
    ig = _ig()
    e = elements if isinstance(elements, ig.Tensor) else ig.tensor(elements)
    t = test_elements if isinstance(test_elements, ig.Tensor) else ig.tensor(test_elements, device=e.device)
    dtype = ig.promote_types(e.dtype, t.dtype)
    flat_t = t.reshape(-1).to(dtype).sort()[0]
    ev = e.to(dtype)
    if flat_t.numel() == 0:
        hit = ig.zeros(e.shape, dtype=ig.bool, device=e.device)
    else:
        pos = searchsorted(flat_t, ev.reshape(-1)).clamp(max=flat_t.numel() - 1)
        hit = (flat_t[pos] == ev.reshape(-1)).reshape(e.shape)
    return ~hit if invert else hit


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """NaN, +inf and -inf replaced by nan, posinf and neginf (by default the
    dtype's largest and lowest values) (torch.nan_to_num)."""
    ig = _ig()
    if not input.is_floating_point():
        r = input.clone()
    else:
        fi = ig.finfo(input.dtype)
        hi = fi.max if posinf is None else posinf
        lo = fi.min if neginf is None else neginf
        r = ig.where(input.isnan(), ig.full_like(input, nan), input)
        r = ig.where(r == float("inf"), ig.full_like(input, hi), r)
        r = ig.where(r == float("-inf"), ig.full_like(input, lo), r)
    if out is not None:
        out.copy_(r)
        return out
    return r


def logaddexp(input, other):
    """log(exp(input) + exp(other)), without overflow (torch.logaddexp)."""
    ig = _ig()
    m = ig.maximum(input, other)
    d = -(input - other).abs()
    # equal infinities: m itself (the difference would be NaN)
    return ig.where(input == other, input + 0.6931471805599453,
                    m + ig.log1p(ig.exp(d)))


def logaddexp2(input, other):
    """log2(2**input + 2**other) (torch.logaddexp2)."""
    ig = _ig()
    m = ig.maximum(input, other)
    d = -(input - other).abs()
    return ig.where(input == other, input + 1.0, m + ig.log1p(ig.exp2(d)) / 0.6931471805599453)


def xlogy(input, other):
    """input * log(other), 0 where input is 0 (unless other is NaN) (torch.xlogy)."""
    ig = _ig()
    if not isinstance(input, ig.Tensor):
        input = ig.tensor(input, dtype=other.dtype if other.is_floating_point() else ig.float32,
                          device=other.device)
    if not isinstance(other, ig.Tensor):
        other = ig.tensor(other, dtype=input.dtype if input.is_floating_point() else ig.float32,
                          device=input.device)
    if not input.is_floating_point() and not other.is_floating_point():
        input = input.to(ig.get_default_dtype())
    r = input * ig.log(other)
    return ig.where((input == 0) & ~other.isnan(), ig.zeros_like(r), r)


def diag(input, diagonal=0):
    """A vector's diagonal matrix, or a matrix's diagonal as a vector (torch.diag)."""
    if input.dim() == 1:
        return diag_embed(input, diagonal)
    if input.dim() == 2:
        return input.diagonal(diagonal).clone()
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.dim()}D")


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """Matrices with input's last dim on their `offset` diagonal, in dims dim1
    and dim2 of the result (torch.diag_embed)."""
    ig = _ig()
    n = input.shape[-1] + abs(offset)
    rank = input.dim() + 1
    d1, d2 = _dim(dim1, rank), _dim(dim2, rank)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = ig.zeros(*input.shape[:-1], n, n, dtype=input.dtype, device=input.device)
    # place in the last two dims, then move them to d1, d2
    idx = ig.arange(input.shape[-1], device=input.device)
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    if input.shape[-1]:
        out[..., rows, cols] = input
    order = [i for i in range(rank) if i not in (d1, d2)]
    src = list(range(rank - 2))
    perm = [0] * rank
    for s, o in zip(src, order):
        perm[o] = s
    perm[d1], perm[d2] = rank - 2, rank - 1
    return out.permute(*perm)


def diagflat(input, offset=0):
    """The flattened input on a matrix's `offset` diagonal (torch.diagflat)."""
    return diag_embed(input.reshape(-1), offset)


def trace(input):
    """The sum of a matrix's diagonal (torch.trace)."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    return input.diagonal().sum()


def kron(input, other):
    """The Kronecker product (torch.kron)."""
    n = max(input.dim(), other.dim())
    a = input.reshape(*([1] * (n - input.dim())), *input.shape)
    b = other.reshape(*([1] * (n - other.dim())), *other.shape)
    ax = a.reshape(*[s for d in range(n) for s in (a.shape[d], 1)])
    bx = b.reshape(*[s for d in range(n) for s in (1, b.shape[d])])
    return (ax * bx).reshape(*[a.shape[d] * b.shape[d] for d in range(n)])


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (the first of size 3 when not
    given, as torch.cross) (torch.cross / torch.linalg.cross with dim=-1)."""
    ig = _ig()
    a, b = ig.broadcast_tensors(input, other)
    if dim is None:
        dim = next((d for d in range(a.dim()) if a.shape[d] == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    dim = _dim(dim, a.dim())
    if a.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[dim]} and {b.shape[dim]}")
    a0, a1, a2 = a.unbind(dim)
    b0, b1, b2 = b.unbind(dim)
    return ig.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def tensor_split(input, indices_or_sections, dim=0):
    """Views split into n near-equal parts (the first n % size one longer) or
    at the given indices (torch.tensor_split)."""
    ig = _ig()
    dim = _dim(dim, input.dim())
    size = input.shape[dim]
    if isinstance(indices_or_sections, ig.Tensor):
        if indices_or_sections.dim() == 0:
            indices_or_sections = _int(indices_or_sections.item())
        else:
            indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, _int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds, at = [], 0
        for i in range(n - 1):
            at += q + (1 if i < r else 0)
            bounds.append(at)
    else:
        bounds = list(indices_or_sections)
    out, start = [], 0
    for b in bounds + [size]:
        b = max(min(b, size), 0) if b >= 0 else max(size + b, 0)
        stop = max(b, start)
        out.append(input.narrow(dim, start, stop - start))
        start = stop
    return tuple(out)


def ravel(input):
    """input flattened to one dim (a view when contiguous) (torch.ravel)."""
    return input.reshape(-1)


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times, from dims[0] towards dims[1] (torch.rot90)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _dim(dims[0], input.dim()), _dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


_RETURN_TYPES = {}


def _values_indices(values, indices, name):
    """(values, indices) as torch.return_types.<name> gives them: a named tuple."""
    import collections
    t = _RETURN_TYPES.get(name)
    if t is None:
        t = collections.namedtuple(name, ["values", "indices"])
        t.__module__ = "ignis.return_types"
        _RETURN_TYPES[name] = t
    return t(values, indices)


def _sorted_along(input, dim, what):
    if dim is None:
        x, dim = input.reshape(-1), 0
    else:
        x, dim = input, _dim(dim, input.dim())
    if x.dim() == 0:
        x, dim = x.reshape(1), 0
    if x.shape[dim] == 0:
        raise IndexError(f"{what}(): Expected reduction dim {dim} to have non-zero size.")
    return x, dim


def median(input, dim=None, keepdim=False):
    """The lower median (of all elements, or along dim with its index), NaN
    when there is one (torch.median)."""
    return _median(input, dim, keepdim, ignore_nan=False, what="median")


def nanmedian(input, dim=None, keepdim=False):
    """median over the non-NaN elements (torch.nanmedian)."""
    return _median(input, dim, keepdim, ignore_nan=True, what="nanmedian")


def _median(input, dim, keepdim, ignore_nan, what):
    ig = _ig()
    x, d = _sorted_along(input, dim, what)
    vals, idx = x.sort(d)  # NaN last
    n = x.shape[d]
    if x.is_floating_point():
        nans = x.isnan().sum(d, keepdim=True)
    else:
        nans = ig.zeros_like(x.narrow(d, 0, 1), dtype=ig.int64)
    if ignore_nan:
        k = ((n - nans - 1).clamp(min=0)) // 2  # the lower median of the rest (NaN when all are)
    else:
        k = ig.where(nans > 0, ig.full_like(nans, n - 1), ig.full_like(nans, (n - 1) // 2))
    v, i = vals.gather(d, k), idx.gather(d, k)
    if dim is None:
        return v.reshape(())
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return _values_indices(v, i, what)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the non-NaN elements (torch.nanmean)."""
    ig = _ig()
    if not input.is_floating_point():
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {input.dtype}")
    keep = ~input.isnan()
    s = ig.where(keep, input, ig.zeros_like(input))
    if dim is None:
        return s.sum(dtype=dtype) / keep.sum()
    return s.sum(dim, keepdim=keepdim, dtype=dtype) / keep.sum(dim, keepdim=keepdim)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles, interpolated as `interpolation` says (linear,
    lower, higher, midpoint, nearest); NaN where a NaN is (torch.quantile)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False, what="quantile")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile over the non-NaN elements (torch.nanquantile)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True, what="nanquantile")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan, what):
    ig = _ig()
    if not input.is_floating_point():
        raise RuntimeError(f"{what}() input tensor must be either float or double dtype")
    if interpolation not in ("linear", "lower", "higher", "midpoint", "nearest"):
        raise ValueError(f"{what}() interpolation must be one of linear, lower, higher, midpoint "
                         f"or nearest. Got {interpolation}")
    scalar_q = not isinstance(q, ig.Tensor)
    qt = ig.tensor(q, dtype=input.dtype, device=input.device) if scalar_q else q.to(input.dtype)
    if qt.dim() > 1:
        raise RuntimeError(f"{what}() q must be a scalar or 1D tensor")
    if bool(((qt < 0) | (qt > 1)).any()):
        shown = q if scalar_q else "values"
        raise RuntimeError(f"{what}() q must be in the range [0, 1] but got {shown}")
    x, d = _sorted_along(input, dim, what)
    vals = x.sort(d)[0].movedim(d, -1)  # NaN last
    n = vals.shape[-1]
    nans = vals.isnan().sum(-1, keepdim=True)
    valid = (n - nans) if ignore_nan else ig.full_like(nans, n)
    qv = qt.reshape(-1)
    rank = qv * (valid - 1).clamp(min=0).to(input.dtype)  # [..., len(q)]
    lo_i = rank.floor().to(ig.int64)
    hi_i = rank.ceil().to(ig.int64)
    lo, hi = vals.gather(-1, lo_i), vals.gather(-1, hi_i)
    frac = rank - lo_i.to(input.dtype)
    if interpolation == "linear":
        r = lo + (hi - lo) * frac
    elif interpolation == "lower":
        r = lo
    elif interpolation == "higher":
        r = hi
    elif interpolation == "midpoint":
        r = (lo + hi) * 0.5
    else:  # nearest, ties to even as torch (round half to even of the rank)
        r = vals.gather(-1, rank.round().to(ig.int64))
    bad = (nans > 0) if not ignore_nan else (valid == 0)
    r = ig.where(bad.expand_as(r), ig.full_like(r, float("nan")), r)
    r = r.movedim(-1, 0)  # [len(q), ...]
    if dim is not None and keepdim:
        r = r.unsqueeze(d + 1)
    elif dim is None and keepdim:
        r = r.reshape(r.shape[0], *([1] * input.dim()))
    return r[0] if scalar_q or qt.dim() == 0 else r


def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest element along dim and its index (torch.kthvalue)."""
    x, d = _sorted_along(input, dim, "kthvalue")
    n = x.shape[d]
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    vals, idx = x.sort(d)
    v, i = vals.narrow(d, k - 1, 1), idx.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    if input.dim() == 0:
        v, i = v.reshape(()), i.reshape(())
    return _values_indices(v, i, "kthvalue")


def bincount(input, weights=None, minlength=0):
    """How often each value 0..max occurs in a 1-D non-negative int tensor
    (weighted sums with weights) (torch.bincount): one host read of the max."""
    ig = _ig()
    if input.dim() != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if input.is_floating_point() or input.dtype == ig.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.numel() and bool((input < 0).any()):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    n = max(_int(input.max().item()) + 1 if input.numel() else 0, minlength)
    idx = input.to(ig.int64)
    if weights is None:
        return ig.zeros(n, dtype=ig.int64, device=input.device).index_add_(0, idx, ig.ones_like(idx))
    if weights.shape != input.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = ig.float64 if not weights.is_floating_point() or weights.dtype == ig.float64 else weights.dtype
    return ig.zeros(n, dtype=dtype, device=input.device).index_add_(0, idx, weights.to(dtype))


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None,
                 out=None):
    """Where each value would go in the sorted innermost rows of
    sorted_sequence to keep them sorted (torch.searchsorted): the count of
    elements below it (or not above it, with right / side="right"),
    compared in blocks that bound the memory to 2^24 pairs."""
    ig = _ig()
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("side and right can't be set to opposites, got side of left while "
                               "right was True")
        right = side == "right"
    seq = sorted_sequence
    if sorter is not None:
        seq = seq.gather(-1, sorter)
    scalar = not isinstance(input, ig.Tensor)
    v = ig.tensor(input, dtype=seq.dtype, device=seq.device) if scalar else input
    if seq.dim() > 1 and (v.dim() != seq.dim() or tuple(v.shape[:-1]) != tuple(seq.shape[:-1])):
        raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                           "first N-1 dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {list(seq.shape)} and input value "
                           f"tensor {list(v.shape)}")
    dtype = ig.promote_types(seq.dtype, v.dtype)
    s, x = seq.to(dtype), v.to(dtype)
    m = s.shape[-1]
    if s.dim() == 1:
        flat = x.reshape(-1)
        step = max(1, (1 << 24) // max(m, 1))
        parts = []
        for i in range(0, flat.numel(), step):
            blk = flat[i:i + step].unsqueeze(-1)
            parts.append(((s <= blk) if right else (s < blk)).sum(-1))
        r = ig.cat(parts) if parts else ig.zeros(0, dtype=ig.int64, device=x.device)
        r = r.reshape(x.shape)
    else:
        cmp = (s.unsqueeze(-2) <= x.unsqueeze(-1)) if right else (s.unsqueeze(-2) < x.unsqueeze(-1))
        r = cmp.sum(-1)
    r = r.to(ig.int32 if out_int32 else ig.int64)
    if scalar:
        r = r.reshape(())
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value among 1-D sorted boundaries (torch.bucketize)."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, n] coordinates of a row x col matrix's lower triangle, row by row
    (torch.tril_indices)."""
    ig = _ig()
    r = ig.arange(row, device=device).unsqueeze(1).expand(row, col)
    c = ig.arange(col, device=device).unsqueeze(0).expand(row, col)
    keep = c - r <= offset
    return ig.stack([r[keep], c[keep]]).to(dtype or ig.int64)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The [2, n] coordinates of a row x col matrix's upper triangle, row by row
    (torch.triu_indices)."""
    ig = _ig()
    r = ig.arange(row, device=device).unsqueeze(1).expand(row, col)
    c = ig.arange(col, device=device).unsqueeze(0).expand(row, col)
    keep = c - r >= offset
    return ig.stack([r[keep], c[keep]]).to(dtype or ig.int64)


def combinations(input, r=2, with_replacement=False):
    """The r-length combinations of a 1-D tensor's elements, one per row (torch.combinations)."""
    import itertools
    ig = _ig()
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return ig.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return ig.empty(0, r, dtype=input.dtype, device=input.device)
    idx = ig.tensor(rows, dtype=ig.int64, device=input.device)
    return input[idx]


def inner(input, other):
    """Sums over the last dims of both (torch.inner); a scalar scales."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return _ig().tensordot(input, other, dims=([-1], [-1]))


def vdot(input, other):
    """The dot product of two 1-D tensors (torch.vdot; real dtypes)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return (input * other).sum()


def dist(input, other, p=2):
    """The p-norm of input - other (torch.dist)."""
    d = (input - other).abs().reshape(-1)
    if p == 0:
        return (d != 0).to(d.dtype).sum()
    if p == float("inf"):
        return d.amax()
    if p == float("-inf"):
        return d.amin()
    return d.pow(p).sum().pow(1.0 / p)


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) input, for each pair
    i < j in row-major order: N * (N - 1) / 2 of them (torch.pdist)."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = _pairs(input.shape[0], input.device)
    return _ig().norm(input[i] - input[j], p, 1)


def _pairs(n, device):
    """The (i, j), i < j, of n rows in row-major order, from the pair's number
    k alone (no boolean mask, so capture traces it): row i starts at
    s(i) = i (2n - i - 1) / 2, and i is the floor of the smaller root of
    s(i) = k. In float64 the root is exact at each row's start (a perfect
    square) and at least 1 / (4n) below the next row's elsewhere."""
    ig = _ig()
    k = ig.arange(n * (n - 1) // 2, dtype=ig.float64, device=device)
    b = 2.0 * n - 1
    i = ((b - (b * b - 8 * k).sqrt()) / 2).floor()
    j = k - i * (b - i) / 2 + i + 1
    return i.to(ig.int64), j.to(ig.int64)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec) (torch.addmv)."""
    return _scaled_sum(input, mat @ vec, beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2) (torch.addr)."""
    return _scaled_sum(input, vec1.unsqueeze(1) * vec2.unsqueeze(0), beta, alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (the sum of batch1[i] @ batch2[i]) (torch.addbmm)."""
    return _scaled_sum(input, (batch1 @ batch2).sum(0), beta, alpha)


def _scaled_sum(input, prod, beta, alpha):
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return p.expand(*_ig().broadcast_shapes(input.shape, p.shape)).clone()
    return (input if beta == 1 else input * beta) + p


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (torch.sinc)."""
    ig = _ig()
    x = input if input.is_floating_point() else input.to(ig.get_default_dtype())
    px = x * 3.141592653589793
    safe = ig.where(x == 0, ig.ones_like(px), px)
    return ig.where(x == 0, ig.ones_like(px), safe.sin() / safe)


def logit(input, eps=None):
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given (torch.logit)."""
    x = input if eps is None else input.clamp(eps, 1 - eps)
    return (x / (1 - x)).log()


def deg2rad(input):
    """Degrees to radians (torch.deg2rad)."""
    return input * (3.141592653589793 / 180.0)


def rad2deg(input):
    """Radians to degrees (torch.rad2deg)."""
    return input * (180.0 / 3.141592653589793)


def heaviside(input, values):
    """0 below 0, 1 above, `values` at 0 (torch.heaviside)."""
    ig = _ig()
    if input.dtype != values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes "
                           f"({input.dtype} and {values.dtype})")
    return ig.where(input == 0, values, (input > 0).to(input.dtype))


def fmax(input, other):
    """The elementwise maximum, taking the other operand where one is NaN (torch.fmax)."""
    ig = _ig()
    return ig.where(input.isnan(), other, ig.where(other.isnan(), input, ig.maximum(input, other)))


def fmin(input, other):
    """The elementwise minimum, taking the other operand where one is NaN (torch.fmin)."""
    ig = _ig()
    return ig.where(input.isnan(), other, ig.where(other.isnan(), input, ig.minimum(input, other)))


def float_power(input, exponent):
    """input ** exponent in float64 (torch.float_power)."""
    ig = _ig()
    x = input.to(ig.float64) if isinstance(input, ig.Tensor) else input
    e = exponent.to(ig.float64) if isinstance(exponent, ig.Tensor) else float(exponent)
    return ig.pow(x, e) if isinstance(x, ig.Tensor) else ig.pow(ig.tensor(float(x), dtype=ig.float64), e)


def positive(input):
    """input itself (torch.positive; an error on bool, as torch's)."""
    if input.dtype == _ig().bool:
        raise TypeError("The `+` operator, on a bool tensor is not supported.")
    return input


def sgn(input):
    """The sign (torch.sgn: sign, for real dtypes)."""
    return input.sign()


def msort(input):
    """input sorted along its first dim (torch.msort)."""
    return input.sort(0)[0]


def polygamma(n, input, *, out=None):
    """The n-th derivative of digamma at input (torch.polygamma: n first; the
    op is the method input.polygamma(n))."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    r = input.polygamma(n)
    if out is not None:
        return out.copy_(r)
    return r


def mvlgamma(input, p):
    """The log of the multivariate gamma function of dimension p:
    p (p - 1) / 4 log(pi) + sum_i lgamma(input - i / 2), i = 0..p-1; every
    element must exceed (p - 1) / 2 (torch.mvlgamma)."""
    import math
    ig = _ig()
    if not isinstance(p, int) or p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if not input.is_floating_point():
        input = input.to(ig.get_default_dtype())
    if not bool((input > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 (= {(p - 1) / 2})")
    steps = ig.arange(p, dtype=input.dtype, device=input.device) * -0.5
    return ig.lgamma(input.unsqueeze(-1) + steps).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
