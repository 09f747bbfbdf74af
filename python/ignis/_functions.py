"""Python-level functions that are not operators of their own."""
from . import _C

__all__ = ["manual_seed", "get_rng_state", "set_rng_state", "seed", "isclose", "allclose", "equal",
           "broadcast_tensors", "broadcast_shapes",
           # torch's top-level functions made of ops (below)
           "repeat_interleave",
           "polygamma",
           "mvlgamma",
           "cummax",
           "cummin",
           "logcumsumexp",
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
           "adjoint",
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
           "msort",
           "aminmax",
           "hsplit",
           "vsplit",
           "dsplit",
           "logspace",
           "vander",
           "trapezoid",
           "trapz",
           "cumulative_trapezoid",
           "cov",
           "corrcoef",
           "histc",
           "isreal",
           "renorm",
           "matrix_power",
           "det",
           "logdet",
           "slogdet",
           "inverse",
           "cholesky",
           "cholesky_solve",
           "cholesky_inverse",
           "svd",
           "qr",
           "pinverse",
           "triangular_solve",
           "matrix_exp",
           "lu_unpack",
           "lu_solve",
           "narrow_copy",
           "resolve_conj",
           "resolve_neg",
           "select_scatter",
           "slice_scatter",
           "diagonal_scatter",
           "masked_scatter",
           "ldexp"]


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


def adjoint(input):
    """The conjugate transpose of the last two dims, a view (torch.adjoint)."""
    if input.dim() < 2:
        from ._tensor import _matrix_check
        _matrix_check(input, "adjoint()")
        return input.view(())  # 0-D: itself, as torch's
    return input.transpose(-2, -1).conj()


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
    vals, idx = x.sort(dim=d, stable=True)  # NaN last, in their order
    n = x.shape[d]
    if x.is_floating_point():
        nans = x.isnan().sum(d, keepdim=True)
    else:
        nans = ig.zeros_like(x.narrow(d, 0, 1), dtype=ig.int64)
    if ignore_nan:
        k = ((n - nans - 1).clamp(min=0)) // 2  # the lower median of the rest (NaN when all are)
    else:  # with NaN: the first NaN (its index as torch's)
        k = ig.where(nans > 0, n - nans, ig.full_like(nans, (n - 1) // 2))
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


# --- more of torch's functions made of ops ----------------------------------------------------
def _holds_data(t):
    """False for the fake (and meta) tensors capture traces a call with:
    checks that read values (torch's kernel checks) run on real tensors
    only, so the traced graph has none of them rather than a graph break."""
    from ._subclasses import is_fake
    return not is_fake(t) and t.device.type != "meta"


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) of all elements or along dim, as torch.return_types.aminmax (torch.aminmax)."""
    import collections
    t = _RETURN_TYPES.get("aminmax")
    if t is None:
        t = collections.namedtuple("aminmax", ["min", "max"])
        t.__module__ = "ignis.return_types"
        _RETURN_TYPES["aminmax"] = t
    empty = input.numel() == 0 if dim is None else \
        (input.dim() > 0 and input.shape[_dim(dim, input.dim())] == 0)
    if empty:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    if dim is None:
        dims = tuple(range(input.dim()))
        if not dims:
            return t(input.clone(), input.clone())
        return t(input.amin(dims, keepdim=keepdim), input.amax(dims, keepdim=keepdim))
    return t(input.amin(dim, keepdim=keepdim), input.amax(dim, keepdim=keepdim))


def _split_at(input, indices_or_sections, dim, what):
    if isinstance(indices_or_sections, _int):
        size = input.shape[dim]
        if indices_or_sections == 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{what} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{indices_or_sections}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """input split along dim 1 (dim 0 of a 1-D input) into equal parts or at
    indices (torch.hsplit)."""
    if input.dim() < 1:
        raise RuntimeError(f"torch.hsplit requires a tensor with at least 1 dimension, but got a "
                           f"tensor with {input.dim()} dimensions!")
    return _split_at(input, indices_or_sections, 1 if input.dim() > 1 else 0, "hsplit")


def vsplit(input, indices_or_sections):
    """input split along dim 0 (torch.vsplit)."""
    if input.dim() < 2:
        raise RuntimeError(f"torch.vsplit requires a tensor with at least 2 dimension, but got a "
                           f"tensor with {input.dim()} dimensions!")
    return _split_at(input, indices_or_sections, 0, "vsplit")


def dsplit(input, indices_or_sections):
    """input split along dim 2 (torch.dsplit)."""
    if input.dim() < 3:
        raise RuntimeError(f"torch.dsplit requires a tensor with at least 3 dimension, but got a "
                           f"tensor with {input.dim()} dimensions!")
    return _split_at(input, indices_or_sections, 2, "dsplit")


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """steps values base ** e, e evenly spaced from start to end (torch.logspace):
    computed in float64 from both ends towards the middle, as torch's kernel."""
    ig = _ig()
    if isinstance(start, ig.Tensor):
        start = start.item()
    if isinstance(end, ig.Tensor):
        end = end.item()
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = dtype or ig.get_default_dtype()
    i = ig.arange(steps, dtype=ig.float64, device=device)
    if steps > 1:
        step = (end - start) / (steps - 1)
        e = ig.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    else:
        e = ig.full_like(i, float(start))
    r = ig.pow(ig.full_like(e, float(base)), e).to(dtype)
    if out is not None:
        return out.copy_(r)
    return r.requires_grad_() if requires_grad else r


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D x: columns x ** (N - 1) .. x ** 0 (or
    increasing), as cumulative products (torch.vander)."""
    ig = _ig()
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = ig.promote_types(x.dtype, ig.int64)
    v = x.to(dtype)
    cols = [ig.ones(x.shape[0], 1, dtype=dtype, device=x.device)][:n]
    if n > 1:
        cols.append(v.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    r = ig.cat(cols, 1) if cols else ig.empty(x.shape[0], 0, dtype=dtype, device=x.device)
    return r if increasing else r.flip(1)


def _trapezoid_args(y, x, dx, dim, what):
    ig = _ig()
    if x is not None and dx is not None:
        raise TypeError(f"{what}() received an invalid combination of arguments: x and dx are "
                        "both given")
    d = _dim(dim, y.dim())
    if y.dtype == ig.bool or (x is not None and x.dtype == ig.bool):
        kind = "`x` or `y`" if x is not None else "`y`"
        raise RuntimeError(f"{what}: received a bool input for {kind}, but bool is not supported")
    if x is None:
        return d, 1.0 if dx is None else dx
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{what}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        x = x.reshape(shape)
    elif x.dim() < y.dim():
        x = x.reshape([1] * (y.dim() - x.dim()) + list(x.shape))
    n = x.shape[d]
    return d, x.narrow(d, 1, max(n - 1, 0)) - x.narrow(d, 0, max(n - 1, 0))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoid rule's integral of y along dim, at sample points x or
    spacing dx (torch.trapezoid)."""
    ig = _ig()
    d, step = _trapezoid_args(y, x, dx, dim, "trapezoid")
    n = y.shape[d]
    if n == 0:
        shape = list(y.shape[:d]) + list(y.shape[d + 1:])
        return ig.zeros(shape, dtype=y.dtype, device=y.device)
    if not isinstance(step, ig.Tensor):
        return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * step
    return ((y.narrow(d, 0, n - 1) + y.narrow(d, 1, n - 1)) * step).sum(d) / 2.0


def trapz(y, x=None, *, dx=None, dim=-1):
    """torch.trapz: trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoid-rule integral of y along dim, one element
    shorter than y there (torch.cumulative_trapezoid)."""
    d, step = _trapezoid_args(y, x, dx, dim, "cumulative_trapezoid")
    n = y.shape[d]
    left, right = y.narrow(d, 0, max(n - 1, 0)), y.narrow(d, 1, max(n - 1, 0))
    if not isinstance(step, _ig().Tensor):
        return (step / 2.0 * (left + right)).cumsum(d)
    return ((left + right) * step).cumsum(d) / 2.0


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of input's rows (variables) over its columns
    (observations), weighted by fweights (counts) and aweights (torch.cov,
    ATen's Correlation.cpp)."""
    import warnings
    ig = _ig()
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if input.dtype == ig.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.dim() < 2 else input
    n = x.shape[1]
    w = None
    for name, wt, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                               f"{name} with {wt.dim()} dimensions")
        if integral != (not wt.is_floating_point() and wt.dtype != ig.bool):
            want = "integral" if integral else "floating point"
            raise RuntimeError(f"cov(): expected {name} to have {want} dtype but got {name} with "
                               f"{wt.dtype} dtype")
        if wt.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n}")
        if n and _holds_data(wt) and bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is None:
        w_sum = float(n)
        avg = x.sum(1) / w_sum
        norm = float(n - correction)
    else:
        w_sum = w.sum()
        if _holds_data(w_sum) and bool(w_sum == 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        elif fweights is None and n == 1 and correction == 1:
            norm = 0.0
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if isinstance(norm, ig.Tensor):
        if _holds_data(norm) and bool(norm <= 0):
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                          "than the number of observations.", stacklevel=2)
        norm = ig.where(norm <= 0, ig.zeros_like(norm), norm)
    elif norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the number of observations.", stacklevel=2)
        norm = 0.0
    if n == 1 and (fweights is None) != (aweights is None):
        x = ig.zeros_like(x, dtype=x.dtype if x.is_floating_point() else ig.float32)
    else:
        x = x - avg.unsqueeze(1)
    c = x @ (x * w if w is not None else x).t()
    return (c / norm).squeeze()


def corrcoef(input):
    """Pearson's correlation coefficients of input's rows, clipped to [-1, 1]
    (torch.corrcoef)."""
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = c.diagonal().sqrt()
    c = c / std.reshape(-1, 1)
    c = c / std.reshape(1, -1)
    return c.clamp(-1, 1)


def histc(input, bins=100, min=0, max=0, *, out=None):
    """A histogram of bins equal bins from min to max (the data's own range
    when min == max), elements outside left out (torch.histc): each element's
    bin is (x - min) * bins / (max - min), computed in input's dtype as
    torch's kernel, then counted with index_add (no host read of the data)."""
    ig = _ig()
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                                  f"'{str(input.dtype).split('.')[-1]}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    import math
    if not (math.isfinite(min) and math.isfinite(max)):
        raise RuntimeError(f"torch.histc: range of [{min}, {max}] is not finite")
    x = input.detach().reshape(-1)
    lo = ig.tensor(float(min), dtype=x.dtype, device=x.device)
    hi = ig.tensor(float(max), dtype=x.dtype, device=x.device)
    if min == max and x.numel():
        lo, hi = x.amin(), x.amax()
        if _holds_data(x) and not (math.isfinite(lo.item()) and math.isfinite(hi.item())):
            raise RuntimeError(f"torch.histc: range of [{lo.item()}, {hi.item()}] is not finite")
    same = lo == hi
    lo, hi = ig.where(same, lo - 1, lo), ig.where(same, hi + 1, hi)
    pos = ((x - lo) * bins / (hi - lo)).floor().clamp(0, bins).to(ig.int64)
    pos = ig.where(pos == bins, ig.full_like(pos, bins - 1), pos)
    outside = (x < lo) | (x > hi) | x.isnan()
    pos = ig.where(outside, ig.full_like(pos, bins), pos)
    r = ig.zeros(bins + 1, dtype=x.dtype, device=x.device).index_add(
        0, pos, ig.ones_like(x))[:bins]
    if out is not None:
        return out.copy_(r)
    return r


def isreal(input):
    """True where an element's imaginary part is zero; every element of a real tensor
    (torch.isreal)."""
    if input.dtype.is_complex:
        return _ig().view_as_real(input).select(-1, 1) == 0
    return _ig().ones_like(input, dtype=_ig().bool)


def renorm(input, p, dim, maxnorm):
    """input with each slice along dim whose p-norm exceeds maxnorm scaled to
    norm maxnorm (maxnorm / (norm + 1e-7), as torch) (torch.renorm)."""
    ig = _ig()
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = _dim(dim, input.dim())
    others = [i for i in range(input.dim()) if i != d]
    norm = ig.linalg.vector_norm(input, p, others, keepdim=True) if others else input.abs()
    factor = ig.where(norm > maxnorm, maxnorm / (norm + 1e-7), ig.ones_like(norm))
    return input * factor


def matrix_power(input, n):
    """The n-th power of square matrices (the batch's last two dims) by
    repeated squaring, as torch's order of products (torch.matrix_power;
    n < 0: the power of the inverse)."""
    ig = _ig()
    if input.dim() < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {input.shape[-2]} by {input.shape[-1]} matrices")
    if n < 0:
        return matrix_power(ig.linalg.inv(input), -n)
    if n == 0:
        # as torch: the identity written into a copy, so the result has A's
        # graph (a zero gradient) rather than none
        eye = ig.eye(input.shape[-1], dtype=input.dtype, device=input.device)
        return input.clone().copy_(eye.expand(input.shape))
    if n == 1:
        return input.clone()
    if n == 2:
        return input @ input
    if n == 3:
        return (input @ input) @ input
    z = r = None
    while n > 0:
        bit, n = n % 2, n // 2
        z = input if z is None else z @ z
        if bit:
            r = z if r is None else r @ z
    return r


def narrow_copy(input, dim, start, length):
    """A copy of input.narrow(dim, start, length) (torch.narrow_copy)."""
    return input.narrow(dim, start, length).clone()


def resolve_conj(input):
    """input itself: ignis has no conjugate bit (torch.resolve_conj)."""
    return input


def resolve_neg(input):
    """input itself: ignis has no negative bit (torch.resolve_neg)."""
    return input


def _check_src_shape(src, want):
    if tuple(src.shape) != tuple(want):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(want)}")


def _along(mask, dim, ndim):
    """A 1-D mask shaped to broadcast along dim of an ndim tensor."""
    shape = [1] * ndim
    shape[dim] = mask.shape[0]
    return mask.reshape(shape)


def select_scatter(input, src, dim, index):
    """input with src at index along dim (torch.select_scatter): a where over
    a mask, so autograd and capture see a pure function of both."""
    ig = _ig()
    d = _dim(dim, input.dim())
    _check_src_shape(src, input.select(d, index).shape)
    index = index % input.shape[d]
    mask = ig.arange(input.shape[d], device=input.device) == index
    return ig.where(_along(mask, d, input.dim()), src.unsqueeze(d).to(input.dtype), input)


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """input with src at input[start:end:step] along dim (torch.slice_scatter)."""
    ig = _ig()
    d = _dim(dim, input.dim())
    n = input.shape[d]
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    sl = [slice(None)] * d + [slice(start, end, step)]
    _check_src_shape(src, input[tuple(sl)].shape)
    first, stop, _ = slice(start, end, step).indices(n)
    pos = ig.arange(n, device=input.device)
    inside = (pos >= first) & (pos < stop) & ((pos - first) % step == 0)
    if src.shape[d] == 0:
        return input.clone()
    k = ((pos - first) // step).clamp(0, src.shape[d] - 1)
    full = src.to(input.dtype).index_select(d, k)
    return ig.where(_along(inside, d, input.dim()), full, input)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """input with src on its offset diagonal of dims dim1, dim2
    (torch.diagonal_scatter)."""
    ig = _ig()
    _check_src_shape(src, input.diagonal(offset, dim1, dim2).shape)
    d1, d2 = _dim(dim1, input.dim()), _dim(dim2, input.dim())
    if src.shape[-1] == 0:
        return input.clone()
    x = input.movedim((d1, d2), (-2, -1))
    rows = ig.arange(x.shape[-2], device=input.device).unsqueeze(1)
    cols = ig.arange(x.shape[-1], device=input.device).unsqueeze(0)
    on = cols - rows == offset
    k = (rows if offset >= 0 else cols).expand(x.shape[-2], x.shape[-1])
    k = k.clamp(0, src.shape[-1] - 1).reshape(-1)
    full = src.to(input.dtype).index_select(-1, k).reshape(x.shape)
    return ig.where(on, full, x).movedim((-2, -1), (d1, d2))


def masked_scatter(input, mask, source):
    """input with source's leading elements, in order, where mask holds
    (input and mask broadcast) (torch.masked_scatter): element i of the
    result reads source[(the number of true mask elements before it)]."""
    ig = _ig()
    if mask.dtype != ig.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{str(mask.dtype).split('.')[-1].capitalize()}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {input.dtype} and {source.dtype}")
    x, m = ig.broadcast_tensors(input, mask)
    flat = m.reshape(-1)
    src = source.reshape(-1)
    if _holds_data(flat) and flat.numel() and int(flat.sum().item()) > src.numel():
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if src.numel() == 0:
        return x.clone()
    k = (flat.to(ig.int64).cumsum(0) - 1).clamp(0, src.numel() - 1)
    return ig.where(m, src.index_select(0, k).reshape(x.shape), x)


def ldexp(input, other, *, out=None):
    """input * 2 ** other (torch.ldexp)."""
    ig = _ig()
    if not isinstance(other, ig.Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    r = input * (2.0 ** other)
    if out is not None:
        return out.copy_(r)
    return r


# ---- scans by doubling -----------------------------------------------------------------------
# Note [Scans by doubling]
# cummax, cummin and logcumsumexp are inclusive scans with an associative
# combine. Written over ops, each is log2(n) steps of "combine every element
# with the one 2^k before it" (Hillis and Steele): n log n work, but every
# step is one pointwise op over shifted views, which autograd, capture (a
# static length unrolls into the graph) and the compiler (fused pointwise
# kernels) all see, on every device. The running max and min pick their
# index by the later-wins rule torch uses (>= for max, <= for min; the last
# NaN wins over everything), and their values are gathered at those indices, so the
# gradient goes to the elements picked, as torch's backward scatters it.
def _shifted(t, dim, k, fill):
    """t moved k places along dim (the first k filled with `fill`)."""
    head = t.narrow(dim, 0, t.shape[dim] - k)
    pad = list(t.shape)
    pad[dim] = k
    return _ig().cat([_ig().full(pad, fill, dtype=t.dtype, device=t.device), head], dim)


def _cumulative_extreme(input, dim, is_max, name):
    ig = _ig()
    if input.dim() == 0:
        return _values_indices(input.clone(), ig.zeros((), dtype=ig.int64, device=input.device),
                               name)
    d = _dim(dim, input.dim())
    n = input.shape[d]
    shape = [1] * input.dim()
    shape[d] = n
    idx = ig.arange(n, device=input.device).view(shape).expand(input.shape).contiguous()
    best = input.detach()
    floating = best.is_floating_point()
    k = 1
    while k < n:
        prev = _shifted(best, d, k, 0)
        prev_idx = _shifted(idx, d, k, -1)
        later = (best >= prev) if is_max else (best <= prev)
        if floating:  # the last NaN wins (a comparison with an earlier NaN is False)
            later = later | best.isnan()
        take = later | (prev_idx < 0)
        best = ig.where(take, best, prev)
        idx = ig.where(take, idx, prev_idx)
        k *= 2
    return _values_indices(input.gather(d, idx), idx, name)


def cummax(input, dim):
    """(values, indices): the running maximum along dim and where it was
    found, the later on ties; a NaN propagates (torch.cummax). Note [Scans by
    doubling]."""
    return _cumulative_extreme(input, dim, True, "cummax")


def cummin(input, dim):
    """(values, indices): the running minimum along dim and where it was
    found, the later on ties; a NaN propagates (torch.cummin)."""
    return _cumulative_extreme(input, dim, False, "cummin")


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, each step a logaddexp, so no
    element overflows or vanishes (torch.logcumsumexp). Note [Scans by
    doubling]."""
    ig = _ig()
    if not input.is_floating_point():
        input = input.to(ig.get_default_dtype())
    if input.dim() == 0:
        return input.clone()
    d = _dim(dim, input.dim())
    out = input
    k, n = 1, input.shape[d]
    while k < n:
        out = ig.logaddexp(out, _shifted(out, d, k, float("-inf")))
        k *= 2
    return out if out is not input else input.clone()


# ---- torch's top-level linear algebra (ignis.linalg's core ops) ----------------------

def det(input):
    """torch.det: linalg.det."""
    return _ig().linalg.det(input)


def logdet(input):
    """log(det(A)): NaN for a negative determinant, -inf for a singular A (torch.logdet)."""
    ig = _ig()
    sign, logabs = ig.linalg.slogdet(input)
    return ig.where(sign < 0, ig.full_like(logabs, float("nan")), logabs)


def slogdet(input):
    """(sign, logabsdet) as torch.return_types.slogdet (torch.slogdet)."""
    from .linalg import _named
    return _named("slogdet", ["sign", "logabsdet"], tuple(_ig().linalg.slogdet(input)))


def inverse(input):
    """torch.inverse: linalg.inv."""
    return _ig().linalg.inv(input)


def cholesky(input, upper=False):
    """torch.cholesky (deprecated in torch for linalg.cholesky): the lower
    factor, or the upper one with upper=True."""
    return _ig().linalg.cholesky(input, upper=upper)


def cholesky_solve(input, input2, upper=False):
    """X with A X = B from A's Cholesky factor `input2` (torch.cholesky_solve(B, L))."""
    la = _ig().linalg
    if upper:
        y = la.solve_triangular(input2.mT, input, upper=False)
        return la.solve_triangular(input2, y, upper=True)
    y = la.solve_triangular(input2, input, upper=False)
    return la.solve_triangular(input2.mT, y, upper=True)


def cholesky_inverse(input, upper=False):
    """A^{-1} from A's Cholesky factor (torch.cholesky_inverse)."""
    ig = _ig()
    n = input.shape[-1]
    eye = ig.eye(n, dtype=input.dtype, device=input.device).expand_as(input)
    return cholesky_solve(eye, input, upper)


def svd(input, some=True, compute_uv=True):
    """(U, S, V) as torch.svd gives them: V, not V^H; some=False the full
    bases; compute_uv=False zero U and V."""
    from .linalg import _named
    ig = _ig()
    U, S, Vh = ig.linalg.svd(input, full_matrices=not some)
    V = Vh.mT
    if not compute_uv:
        U, V = ig.zeros_like(U), ig.zeros_like(V)
    return _named("svd", ["U", "S", "V"], (U, S, V))


def qr(input, some=True):
    """(Q, R) as torch.return_types.qr (torch.qr: some=False the complete Q)."""
    from .linalg import _named
    Q, R = _ig().linalg.qr(input, "reduced" if some else "complete")
    return _named("qr", ["Q", "R"], (Q, R))


def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with a relative tolerance."""
    return _ig().linalg.pinv(input, rtol=rcond)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient) of A X = b (A^T X = b with transpose)
    (torch.triangular_solve, deprecated there for linalg.solve_triangular)."""
    from .linalg import _named
    la = _ig().linalg
    X = la.solve_triangular(A.mT if transpose else A, b, upper=upper != transpose,
                            unitriangular=unitriangular)
    return _named("triangular_solve", ["solution", "cloned_coefficient"], (X, A.clone()))


def matrix_exp(input):
    """torch.matrix_exp: linalg.matrix_exp."""
    return _ig().linalg.matrix_exp(input)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from lu_factor's results (torch.lu_unpack); the parts not
    unpacked are empty tensors."""
    from .linalg import _named, _unpack
    ig = _ig()
    P, L, U = _unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    empty = ig.empty(0, dtype=LU_data.dtype, device=LU_data.device)
    return _named("lu_unpack", ["P", "L", "U"],
                  (P if P is not None else empty, L if L is not None else empty,
                   U if U is not None else empty))


def lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve(b, LU, pivots): linalg.lu_solve(LU, pivots, b)."""
    return _ig().linalg.lu_solve(LU_data, LU_pivots, b)
