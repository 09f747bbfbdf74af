"""torch.linalg: the norms and products composed of ignis ops, and the
factorizations and solvers, which are core ops on LAPACK (src/ignis/ops/linalg.cpp,
Note [Linear algebra ops]): cholesky, solve, solve_triangular, lu_factor, inv,
det, slogdet, eigh, svd, qr, and what they make (pinv, matrix_rank, cond, lstsq,
the spectral norms). float32 and float64 on the CPU, batched; each has torch's
gradient. Not here (no complex dtype in ignis): eig, eigvals, and the rest of
torch.linalg, so code that uses them fails at the attribute, naming it."""
import collections
import math

from ._C import LinAlgError

__all__ = ["vector_norm", "matrix_norm", "norm", "cross", "vecdot", "matmul", "multi_dot",
           "diagonal", "vander", "matrix_power", "LinAlgError", "cholesky", "cholesky_ex",
           "solve", "solve_ex", "solve_triangular", "lu_factor", "lu_factor_ex", "inv", "inv_ex",
           "det", "slogdet", "eigh", "eigvalsh", "svd", "svdvals", "qr", "pinv", "matrix_rank",
           "cond", "lstsq", "tensorinv", "tensorsolve", "matrix_exp", "lu", "lu_solve",
           "householder_product"]

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
    "nuc", 2 and -2 (the sum, largest and smallest of its singular values)."""
    if A.dim() < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 "
                           f"dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = (d % A.dim() for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        perm = [d for d in range(A.dim()) if d not in (d0, d1)] + [d0, d1]
        sv = svdvals(A.permute(*perm))
        r = sv.sum(-1) if ord == "nuc" else sv.amax(-1) if ord == 2 else sv.amin(-1)
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return r
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


# ---- factorizations and solvers (core ops on LAPACK) ---------------------------------

def _ops():
    return _ig().ops


_TYPES = {}


def _named(name, fields, values):
    """values as torch.return_types.<name> gives them: a named tuple."""
    t = _TYPES.get(name)
    if t is None:
        t = collections.namedtuple(name, fields)
        t.__module__ = "ignis.return_types"
        _TYPES[name] = t
    return t(*values)


def _out(result, out):
    if out is None:
        return result
    if isinstance(out, (tuple, list)):
        for o, r in zip(out, result):
            o.resize_(r.shape).copy_(r)
        return out
    out.resize_(result.shape).copy_(result)
    return out


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """(L, info): the Cholesky factor of each symmetric positive-definite matrix
    and LAPACK's info (0, or the order of the leading minor that is not
    positive-definite) (torch.linalg.cholesky_ex)."""
    return _out(_ops().linalg_cholesky_ex(A, upper=upper, check_errors=check_errors), out)


def cholesky(A, *, upper=False, out=None):
    """L with A = L L^H (lower; upper=True: U with A = U^H U); raises
    LinAlgError when A is not positive-definite (torch.linalg.cholesky)."""
    return _out(_ops().linalg_cholesky_ex(A, upper=upper, check_errors=True)[0], out)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """(result, info) of solve (torch.linalg.solve_ex)."""
    return _out(_ops().linalg_solve_ex(A, B, left=left, check_errors=check_errors), out)


def solve(A, B, *, left=True, out=None):
    """X with A X = B (left=False: X A = B), A square, batches broadcast; B a
    vector (or a batch of them) where torch takes it as one. Raises
    LinAlgError for a singular A (torch.linalg.solve)."""
    return _out(_ops().linalg_solve_ex(A, B, left=left, check_errors=True)[0], out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (left=False: X A = B) for triangular A, reading only
    A's upper or lower triangle (torch.linalg.solve_triangular)."""
    return _out(_ops().linalg_solve_triangular(A, B, upper=upper, left=left,
                                               unitriangular=unitriangular), out)


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """(LU, pivots, info): LAPACK's packed LU factors with partial pivoting
    and 1-based int32 pivots (torch.linalg.lu_factor_ex)."""
    return _out(_ops().linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors), out)


def lu_factor(A, *, pivot=True, out=None):
    """(LU, pivots) (torch.linalg.lu_factor); raises for a singular A."""
    LU, piv, _ = _ops().linalg_lu_factor_ex(A, pivot=pivot, check_errors=True)
    return _out(_named("linalg_lu_factor", ["LU", "pivots"], (LU, piv)), out)


def inv_ex(A, *, check_errors=False, out=None):
    """(inverse, info) (torch.linalg.inv_ex)."""
    return _out(_ops().linalg_inv_ex(A, check_errors=check_errors), out)


def inv(A, *, out=None):
    """The inverse of each square matrix; LinAlgError when one is singular
    (torch.linalg.inv)."""
    return _out(_ops().linalg_inv_ex(A, check_errors=True)[0], out)


def det(A, *, out=None):
    """The determinant of each square matrix (torch.linalg.det); its gradient
    is finite for singular matrices too."""
    return _out(_ops().linalg_det(A), out)


def slogdet(A, *, out=None):
    """(sign, logabsdet) of each square matrix's determinant (torch.linalg.slogdet)."""
    return _out(_ops().linalg_slogdet(A), out)


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of each symmetric
    matrix, reading its lower (UPLO="L") or upper triangle (torch.linalg.eigh)."""
    return _out(_ops().linalg_eigh(A, UPLO), out)


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues of each symmetric matrix, ascending (torch.linalg.eigvalsh)."""
    return _out(_ops().linalg_eigh(A, UPLO)[0], out)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (torch.linalg.svd)."""
    return _out(_ops().linalg_svd(A, full_matrices, driver=driver), out)


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix, descending (torch.linalg.svdvals)."""
    return _out(_ops().linalg_svd(A, False, driver=driver)[1], out)


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R: mode "reduced" (Q m x k), "complete" (Q m x m) or
    "r" (R only, Q empty) (torch.linalg.qr)."""
    return _out(_ops().linalg_qr(A, mode), out)


def _tolerance(S, A, atol, rtol):
    """The cutoff of pinv and matrix_rank: max(atol, rtol * largest singular
    value), rtol defaulting to eps * max(m, n) when neither is given (torch's)."""
    ig = _ig()
    smax = S.amax(-1, keepdim=True) if S.numel() else S.sum(-1, keepdim=True)
    if rtol is None:
        rtol = ig.finfo(A.dtype).eps * max(A.shape[-2], A.shape[-1]) if atol is None or \
            (not isinstance(atol, ig.Tensor) and atol <= 0) else 0.0
    tol = smax * rtol
    if atol is not None:
        atol_t = atol.unsqueeze(-1) if isinstance(atol, ig.Tensor) else atol
        tol = ig.maximum(tol, ig.as_tensor(atol_t, dtype=S.dtype).expand_as(tol)) \
            if isinstance(atol_t, ig.Tensor) else tol.clamp(min=atol_t)
    return tol


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse through the SVD (or, hermitian=True,
    the eigendecomposition), singular values at or below the tolerance
    dropped (torch.linalg.pinv)."""
    ig = _ig()
    if hermitian:
        L, V = eigh(A)
        tol = _tolerance(L.abs(), A, atol, rtol)
        keep = L.abs() > tol
        Linv = ig.where(keep, 1.0 / ig.where(keep, L, ig.ones_like(L)), ig.zeros_like(L))
        return _out((V * Linv.unsqueeze(-2)) @ V.mT, out)
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance(S, A, atol, rtol)
    keep = S > tol
    Sinv = ig.where(keep, 1.0 / ig.where(keep, S, ig.ones_like(S)), ig.zeros_like(S))
    return _out((Vh.mT * Sinv.unsqueeze(-2)) @ U.mT, out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values above the tolerance (torch.linalg.matrix_rank)."""
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    tol = _tolerance(S, A, atol, rtol)
    return _out((S > tol).sum(-1), out)


def cond(A, p=None, *, out=None):
    """The condition number in norm p (None or 2: largest over smallest
    singular value; -2 its inverse; "fro", "nuc", inf, -inf, 1, -1:
    norm(A) * norm(inv(A))) (torch.linalg.cond)."""
    if p is None or p in (2, -2):
        S = svdvals(A)
        r = S[..., 0] / S[..., -1] if p != -2 else S[..., -1] / S[..., 0]
        return _out(r, out)
    return _out(matrix_norm(A, p) * matrix_norm(inv(A), p), out)


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """(solution, residuals, rank, singular_values) of min ||A X - B||
    (torch.linalg.lstsq). The solution is pinv(A) B (the minimum-norm one,
    what torch's default CPU driver "gelsy" gives for full-rank A); rank is
    matrix_rank's; residuals and singular_values are empty, as "gelsy" leaves
    them."""
    ig = _ig()
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss)")
    vec = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vec else B
    rtol = rcond if rcond is not None and rcond > 0 else None
    X = pinv(A, rtol=rtol) @ Bm
    if vec:
        X = X.squeeze(-1)
    empty = ig.empty(0, dtype=A.dtype)
    rank = matrix_rank(A, rtol=rtol) if driver != "gels" else ig.empty(0, dtype=ig.int64)
    return _out(_named("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"],
                       (X, empty, rank, empty)), out)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A as a map from its last dims to its first `ind`
    (torch.linalg.tensorinv)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = A.shape[:ind], A.shape[ind:]
    rows = math.prod(out_shape)
    if rows != math.prod(in_shape):
        raise RuntimeError("Expected self to satisfy the requirement "
                           "prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{math.prod(in_shape)} != {rows}")
    return _out(inv(A.reshape(rows, -1)).reshape(*in_shape, *out_shape), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.dim()) = B (torch.linalg.tensorsolve)."""
    if dims is not None:
        nd = A.dim()
        dims = [d % nd for d in dims]
        A = A.permute(*([d for d in range(nd) if d not in dims] + dims))
    x_shape = A.shape[B.dim():]
    n = math.prod(B.shape)
    return _out(solve(A.reshape(n, -1), B.reshape(n)).reshape(*x_shape), out)


def matrix_exp(A):
    """exp(A) for square matrices: scaling and squaring over a degree-18
    Taylor polynomial evaluated at A / 2^s with ||A / 2^s||_1 <= 1/2 (error
    far below float64's eps there), then s squarings (torch.linalg.matrix_exp
    picks Pade-type degrees by the norm; the values agree to rounding)."""
    ig = _ig()
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices")
    n = A.shape[-1]
    norm1 = A.abs().sum(-2).amax(-1) if A.numel() else ig.zeros(A.shape[:-2], dtype=A.dtype)
    s = int(max(0, math.ceil(math.log2(max(float(norm1.max()) if norm1.numel() else 0.0,
                                            1e-300) * 2)))) if A.numel() else 0
    X = A / (2 ** s)
    eye = ig.eye(n, dtype=A.dtype).expand_as(A)
    term, total = eye, eye
    for k in range(1, 19):
        term = term @ X / k
        total = total + term
    for _ in range(s):
        total = total @ total
    return total


def _permutation(pivots, m):
    """The row order LAPACK's 1-based sequential row swaps give, per matrix:
    A[perm] = L U (an int64 tensor [..., m]); read on the host."""
    ig = _ig()
    batch = tuple(pivots.shape[:-1])
    flat = pivots.reshape(-1, pivots.shape[-1]).tolist() if pivots.numel() else \
        [[] for _ in range(math.prod(batch))]
    perms = []
    for piv in flat:
        perm = list(range(m))
        for i, p in enumerate(piv):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        perms.append(perm)
    return ig.tensor(perms, dtype=ig.int64, device=pivots.device).reshape(*batch, m)


def _unpack(LU, pivots, unpack_data=True, unpack_pivots=True):
    ig = _ig()
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    P = L = U = None
    if unpack_pivots:
        perm = _permutation(pivots, m)
        eye = ig.eye(m, dtype=LU.dtype, device=LU.device)
        # A = P L U with P[perm[i], i] = 1
        P = eye[perm].mT
    if unpack_data:
        L = LU[..., :, :k].tril(-1) + ig.eye(m, k, dtype=LU.dtype, device=LU.device)
        U = LU[..., :k, :].triu()
    return P, L, U


def lu(A, *, pivot=True, out=None):
    """(P, L, U) with A = P L U (torch.linalg.lu): P a permutation matrix, L
    unit lower triangular, U upper triangular."""
    LU, piv, _ = _ops().linalg_lu_factor_ex(A, pivot=pivot, check_errors=False)
    P, L, U = _unpack(LU, piv)
    return _out(_named("linalg_lu", ["P", "L", "U"], (P, L, U)), out)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B (left=False: X A = B; adjoint: A^H in A's place) from
    lu_factor's (LU, pivots) (torch.linalg.lu_solve)."""
    ig = _ig()
    m = LU.shape[-1]
    perm = _permutation(pivots, m)
    L = LU.tril(-1) + ig.eye(m, dtype=LU.dtype, device=LU.device)
    U = LU.triu()
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return _out(lu_solve(LU, pivots, B.mT, left=True, adjoint=not adjoint).mT, out)
    inv_perm = perm.argsort(-1)
    if not adjoint:  # P L U X = B: L U X = P^T B = B[perm]
        Bp = B.gather(-2, perm.unsqueeze(-1).expand(*perm.shape, B.shape[-1]))
        y = solve_triangular(L, Bp, upper=False, unitriangular=True)
        return _out(solve_triangular(U, y, upper=True), out)
    # U^H L^H P^T X = B: X = P (L^H)^{-1} (U^H)^{-1} B
    y = solve_triangular(U.mT, B, upper=False)
    z = solve_triangular(L.mT, y, upper=True, unitriangular=True)
    return _out(z.gather(-2, inv_perm.unsqueeze(-1).expand(*inv_perm.shape, B.shape[-1])), out)


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 H_2 ... H_k (torch.linalg.householder_product,
    LAPACK's orgqr): H_i = I - tau_i v_i v_i^H, v_i being column i of A below
    the diagonal with a 1 on it (as geqrf stores a QR's reflectors). Built
    by applying the reflectors, last first, to the identity's first n
    columns; differentiable in A and tau."""
    ig = _ig()
    name = "torch.linalg.householder_product"
    if A.dim() < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.dim()} and input.ndim is equal to "
                           f"{A.dim()}")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        from ._tensor import _legacy_name
        raise RuntimeError(f"{name}: tau dtype {_legacy_name(tau.dtype)} does not match input "
                           f"dtype {_legacy_name(A.dtype)}")
    batch = tuple(A.shape[:-2])
    rows = ig.arange(m, device=A.device).unsqueeze(-1)
    Q = ig.eye(m, n, dtype=A.dtype, device=A.device).expand(batch + (m, n))
    for i in reversed(range(k)):
        # v_i: zeros above row i, 1 at row i, A's column i below.
        column = A[..., :, i:i + 1]
        v = ig.where(rows > i, column, (rows == i).to(A.dtype))
        v_h = v.conj().transpose(-2, -1) if A.is_complex() else v.transpose(-2, -1)
        Q = Q - tau[..., i, None, None] * (v @ (v_h @ Q))
    if k == 0:
        # No reflector: the identity's columns, connected to the (empty) tau
        # as torch's result is (A gets no gradient).
        Q = Q + tau.sum(-1)[..., None, None]
    return _out(Q, out)
