"""torch.linalg's norms and products, composed of ignis ops.

The factorizations (inv, solve, det, cholesky, qr, svd, eig, ...) need LAPACK
kernels that ignis does not have yet: they are not defined here, so code that
uses them fails at the attribute, naming it."""
import math

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "multi_dot",
           "diagonal", "vander", "matrix_power"]

_INF = float("inf")


def _ig():
    import ignis
    return ignis


def _dims(dim, x):
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ord-norm of x's elements (over `dim`, or all) (torch.linalg.vector_norm):
    ord inf / -inf the largest / smallest |x|, 0 the count of nonzeros, else
    (sum |x|^ord)^(1/ord)."""
    ig = _ig()
    if not x.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {str(x.dtype).split('.')[-1].capitalize()}")
    if dtype is not None:
        x = x.to(dtype)
    dims = _dims(dim, x)
    a = x.abs()
    kw = {"keepdim": keepdim}
    if dims is not None:
        kw["dim"] = dims
    if ord == _INF:
        return a.amax(**kw) if dims is not None else (a.amax() if not keepdim else a.amax(tuple(range(x.dim())), keepdim=True))
    if ord == -_INF:
        return a.amin(**kw) if dims is not None else (a.amin() if not keepdim else a.amin(tuple(range(x.dim())), keepdim=True))
    if dims is None:
        dims = tuple(range(x.dim()))
    if ord == 0:
        return (a != 0).to(x.dtype).sum(dims, keepdim=keepdim)
    if ord == 1:
        return a.sum(dims, keepdim=keepdim)
    if ord == 2:
        return (a * a).sum(dims, keepdim=keepdim).sqrt()
    return a.pow(ord).sum(dims, keepdim=keepdim).pow(1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm over dims `dim` (torch.linalg.matrix_norm): "fro", or
    1 / -1 (largest / smallest column sum of |A|), inf / -inf (of row sums).
    "nuc", 2 and -2 need singular values, which ignis cannot compute yet."""
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 "
                           f"dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (d % A.dim() for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"linalg.matrix_norm(ord={ord!r}) needs singular values "
                                  "(an SVD), which ignis does not compute yet")
    if ord in (1, -1, _INF, -_INF):
        sum_dim, red_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        r = s.amax(red_dim, keepdim=True) if ord > 0 else s.amin(red_dim, keepdim=True)
        return r if keepdim else r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """torch.linalg.norm: a vector norm for one dim (or all of a 1-D input, or
    ord None over all), a matrix norm for two."""
    dims = _dims(dim, A)
    if ord is None:
        return vector_norm(A, 2, dims, keepdim, dtype=dtype) if dims is None or len(dims) == 1 \
            else matrix_norm(A, "fro", dims, keepdim, dtype=dtype)
    if isinstance(ord, str) or (dims is not None and len(dims) == 2) or (dims is None and A.dim() == 2):
        return matrix_norm(A, ord, dims or (-2, -1), keepdim, dtype=dtype)
    if dims is None and A.dim() != 1:
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    return vector_norm(A, ord, dims, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1):
    """The cross product along dim (torch.linalg.cross; dim defaults to -1)."""
    return _ig().cross(input, other, dim=dim)


def vecdot(x, y, *, dim=-1):
    """The dot product along dim, broadcast (torch.linalg.vecdot; real dtypes)."""
    return (x * y).sum(dim)


def matmul(input, other):
    return input @ other


def multi_dot(tensors):
    """The product of the matrices, in the order that costs fewest
    multiplications (torch.linalg.multi_dot); the first may be 1-D (a row),
    the last 1-D (a column)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    first_1d, last_1d = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(1)
    for i, t in enumerate(ts):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    n = len(ts)
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    # the textbook matrix-chain order
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def prod(i, j):
        if i == j:
            return ts[i]
        k = split[i][j]
        return prod(i, k) @ prod(k + 1, j)
    r = prod(0, n - 1)
    if first_1d:
        r = r.squeeze(0)
    if last_1d:
        r = r.squeeze(-1)
    return r


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


def vander(x, *, N=None):
    """[..., n, N] powers x^0, x^1, ... x^(N-1) of the last dim (torch.linalg.vander)."""
    ig = _ig()
    n = x.shape[-1] if N is None else N
    if n <= 1:
        if n < 1:
            raise RuntimeError("N must be greater than 1.")
        return ig.ones_like(x).unsqueeze(-1)
    p = ig.arange(n, device=x.device)
    return x.unsqueeze(-1) ** p.to(x.dtype if x.is_floating_point() else ig.int64)


def matrix_power(A, n):
    """A to the n-th power (torch.linalg.matrix_power; n >= 0: a negative
    power needs inv, which ignis lacks)."""
    return _ig().matrix_power(A, n)
