"""torch.functional's Python-level functions, composed of ignis ops: einsum,
unique, meshgrid, tensordot, cdist, atleast_*d, block_diag, cartesian_prod,
chain_matmul, unravel_index. Capture records each call as one node (the
module is among those the tracer keeps whole); AOT and autograd see the ops
they are made of."""
import math

from . import _C  # noqa: F401  (ops are registered)

__all__ = ["einsum", "unique", "unique_consecutive", "meshgrid", "tensordot", "cdist",
           "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "cartesian_prod",
           "chain_matmul", "unravel_index"]

_builtin_int = type(0)


def _ops():
    from . import ops
    return ops


def _bool():
    from . import bool as b
    return b


# --- einsum ----------------------------------------------------------------------------------
def _sublist_letters(sub):
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    out = []
    for e in sub:
        if e is Ellipsis:
            out.append("...")
        elif type(e) is _builtin_int and 0 <= e < 52:
            out.append(letters[e])
        else:
            raise ValueError("einsum(): subscript in subscript list is not within the valid range "
                             f"[0, 52), got {e!r}")
    return "".join(out)


def einsum(*args):
    """Einstein summation (torch.einsum): `einsum("bij,bjk->bik", a, b)`, the
    operands also as one list, or the sublist form `einsum(a, [0, 1], b, [1, 2], [0, 2])`."""
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        return _ops().einsum(equation, list(operands))
    operands, terms = list(args[0::2]), [_sublist_letters(s) for s in args[1::2]]
    out = None
    if len(args) % 2 == 1:  # a trailing output sublist
        operands, out = operands[:-1], _sublist_letters(args[-1])
    equation = ",".join(terms) + ("" if out is None else "->" + out)
    return _ops().einsum(equation, operands)


# --- unique ----------------------------------------------------------------------------------
def _unique_result(values, inverse, counts, return_inverse, return_counts):
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return out[0] if len(out) == 1 else out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements of input (or its distinct slices along `dim`), sorted;
    with return_inverse, each element's index among them (input's shape); with
    return_counts, how often each occurs (torch.unique). NaNs are each distinct."""
    if dim is None:
        r = _ops()._unique2(input, sorted, return_inverse, return_counts)
    else:
        r = _ops().unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _unique_result(*r, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first element of each run of equal consecutive elements (or slices
    along `dim`), with each element's run and the runs' lengths on request
    (torch.unique_consecutive)."""
    r = _ops().unique_consecutive(input, return_inverse, return_counts, dim)
    return _unique_result(*r, return_inverse, return_counts)


# --- grids and products ----------------------------------------------------------------------
def _tensors(args, what):
    from ._tensor import Tensor
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for t in args:
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}(): expected Tensors, got {type(t).__name__}")
    return args


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors (torch.meshgrid): views of the inputs,
    expanded. indexing "ij" (the default, as torch's, which warns about it) or "xy"."""
    tensors = _tensors(tensors, "meshgrid")
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               f"got: {t.dim()}D")
    for a, b in zip(tensors, tensors[1:]):
        if a.dtype != b.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a.device != b.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    if not tensors:
        return ()
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = tuple(t.shape[0] for t in flat)
    n = len(flat)
    grids = [t.view(*[-1 if i == k else 1 for i in range(n)]).expand(*shape) for k, t in enumerate(flat)]
    if swap:  # "xy": the grids of the first two inputs, swapped, back in the inputs' order
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def tensordot(a, b, dims=2, out=None):
    """Sums the products over `dims` (an int: a's last and b's first `dims`
    dims; or two lists of dims), as one matrix product (torch.tensordot)."""
    if isinstance(dims, _builtin_int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if hasattr(dims, "tolist"):
            dims = dims.tolist()
        da, db = dims
        da = [da] if isinstance(da, _builtin_int) else list(da)
        db = [db] if isinstance(db, _builtin_int) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    da = [d % a.dim() for d in da] if a.dim() else da
    db = [d % b.dim() for d in db] if b.dim() else db
    for x, y in zip(da, db):
        if a.shape[x] != b.shape[y]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[x]} in dim {x} and second has size {b.shape[y]} in dim {y}")
    fa = [d for d in range(a.dim()) if d not in da]
    fb = [d for d in range(b.dim()) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    m = math.prod(a.shape[d] for d in fa)
    n = math.prod(b.shape[d] for d in fb)
    am = a.permute(*(fa + da)).reshape(m, k)
    bm = b.permute(*(db + fb)).reshape(k, n)
    r = (am @ bm).reshape(tuple(a.shape[d] for d in fa) + tuple(b.shape[d] for d in fb))
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between each row of x1 and each row of x2, batched over
    leading dims (torch.cdist). p = 2 takes the matrix-product form
    (|a|^2 + |b|^2 - 2 a.b, clamped at 0) for more than 25 rows, as torch's
    default mode; other p the direct |a - b| reduction."""
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
                           f"X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and
        (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if use_mm:
        a2 = (x1 * x1).sum(-1, keepdim=True)
        b2 = (x2 * x2).sum(-1, keepdim=True)
        d2 = a2 - 2 * (x1 @ x2.transpose(-1, -2)) + b2.transpose(-1, -2)
        return d2.clamp(min=0).sqrt()
    diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (diff != 0).to(x1.dtype).sum(-1)
    if p == float("inf"):
        return diff.amax(-1)
    if p == 1:
        return diff.sum(-1)
    if p == 2:
        return (diff * diff).sum(-1).sqrt()
    return diff.pow(p).sum(-1).pow(1.0 / p)


def _atleast(args, rank, name):
    from . import Tensor
    single = len(args) == 1 and isinstance(args[0], Tensor)
    ts = (args[0],) if single else _tensors(args, name)
    out = []
    for t in ts:
        if t.dim() == 0:
            t = t.reshape((1,) * rank)
        elif t.dim() == 1 and rank >= 2:
            t = t.unsqueeze(0)
            if rank == 3:
                t = t.unsqueeze(-1)
        elif t.dim() == 2 and rank == 3:
            t = t.unsqueeze(-1)
        out.append(t)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Views with at least one dim (torch.atleast_1d)."""
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """Views with at least two dims: a vector becomes a row (torch.atleast_2d)."""
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """Views with at least three dims: [n] -> [1, n, 1], [m, n] -> [m, n, 1] (torch.atleast_3d)."""
    return _atleast(tensors, 3, "atleast_3d")


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of one matrix (torch.block_diag)."""
    from . import zeros, promote_types
    ts = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
        ts.append(t.reshape(1, -1) if t.dim() < 2 else t)
    if not ts:
        return zeros(1, 0)
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = promote_types(dtype, t.dtype)
    rows, cols = sum(t.shape[0] for t in ts), sum(t.shape[1] for t in ts)
    out = zeros(rows, cols, dtype=dtype, device=ts[0].device)
    r = c = 0
    for t in ts:
        out[r:r + t.shape[0], c:c + t.shape[1]] = t
        r, c = r + t.shape[0], c + t.shape[1]
    return out


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, one per row (torch.cartesian_prod)."""
    ts = _tensors(tensors, "cartesian_prod")
    if len(ts) == 1:
        return ts[0]
    from . import stack
    return stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], dim=1)


def chain_matmul(*matrices, out=None):
    """The product of the matrices in order (torch.chain_matmul)."""
    ms = _tensors(matrices, "chain_matmul")
    if not ms:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    r = ms[0]
    for m in ms[1:]:
        r = r @ m
    if out is not None:
        out.resize_(r.shape).copy_(r)
        return out
    return r.clone() if len(ms) == 1 else r


def unravel_index(indices, shape):
    """Flat indices as coordinates in `shape`, one tensor per dim (torch.unravel_index)."""
    from . import Tensor, tensor
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices.is_floating_point() or indices.dtype == _bool():
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, _builtin_int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    total = math.prod(shape)
    if ((indices < -total) | (indices >= total)).any():
        raise ValueError(f"'indices' must be in range [-{total}, {total - 1}]")
    flat = indices % total if total else indices
    coords = []
    for s in reversed(shape):
        coords.append(flat % s if s else flat)
        flat = flat // s if s else flat
    return tuple(reversed(coords))

