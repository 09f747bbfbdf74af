"""Names of torch's top-level namespace that programs use and that are
formulas over ignis's ops: the math constants (torch.pi, torch.inf, ...),
the *_copy forms of the view ops (a view's values in new memory, as
functionalization writes them), the single-step recurrent cells
(torch.lstm_cell, ...), the randomized low-rank SVD and PCA, and small
helpers (norm_except_dim, frobenius_norm, nuclear_norm, constant_pad_nd,
empty_permuted, max_pool1d_with_indices, the deterministic debug mode,
is_storage)."""
import math

__all__ = ["pi", "e", "inf", "nan", "newaxis",
           "alias_copy", "detach_copy", "diagonal_copy", "expand_copy", "permute_copy",
           "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy", "squeeze_copy",
           "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy",
           "view_copy", "view_as_real_copy", "view_as_complex_copy", "as_strided_copy",
           "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
           "svd_lowrank", "pca_lowrank",
           "norm_except_dim", "frobenius_norm", "nuclear_norm", "constant_pad_nd",
           "empty_permuted", "max_pool1d_with_indices", "get_deterministic_debug_mode",
           "set_deterministic_debug_mode", "is_storage", "nonzero_static"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None  # x[:, torch.newaxis] adds a dim, as numpy's


def _ig():
    import ignis
    return ignis


# ---- *_copy: a view op's result in its own (contiguous) memory ----------------------------------
def _fresh(value, out):
    ig = _ig()
    if isinstance(value, (tuple, list)):
        copies = [v.clone(memory_format=ig.contiguous_format) for v in value]
        if out is not None:
            for o, c in zip(out, copies):
                o.copy_(c)
            return out
        return tuple(copies)
    copy = value.clone(memory_format=ig.contiguous_format)
    if out is not None:
        out.resize_(copy.shape)
        return out.copy_(copy)
    return copy


def _copy_of(name, view):
    def fn(input, *args, out=None, **kwargs):
        return _fresh(view(input, *args, **kwargs), out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"torch.{name}: the result of {name[:-5]} in new memory (contiguous), "
                  "differentiable as the view is.")
    return fn


alias_copy = _copy_of("alias_copy", lambda x: x)
detach_copy = _copy_of("detach_copy", lambda x: x.detach())
diagonal_copy = _copy_of("diagonal_copy",
                         lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2))
expand_copy = _copy_of("expand_copy", lambda x, size, *, implicit=False: x.expand(size))
permute_copy = _copy_of("permute_copy", lambda x, dims: x.permute(dims))
select_copy = _copy_of("select_copy", lambda x, dim, index: x.select(dim, index))
split_copy = _copy_of("split_copy", lambda x, split_size, dim=0: x.split(split_size, dim))
split_with_sizes_copy = _copy_of("split_with_sizes_copy",
                                 lambda x, split_sizes, dim=0: x.split(list(split_sizes), dim))
squeeze_copy = _copy_of("squeeze_copy",
                        lambda x, dim=None: x.squeeze() if dim is None else x.squeeze(dim))
t_copy = _copy_of("t_copy", lambda x: x.t())
transpose_copy = _copy_of("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1))
unbind_copy = _copy_of("unbind_copy", lambda x, dim=0: x.unbind(dim))
unfold_copy = _copy_of("unfold_copy", lambda x, dimension, size, step: x.unfold(dimension, size,
                                                                              step))
unsqueeze_copy = _copy_of("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim))
view_copy = _copy_of("view_copy", lambda x, size_or_dtype: x.view(size_or_dtype))
view_as_real_copy = _copy_of("view_as_real_copy", lambda x: _ig().view_as_real(x))
view_as_complex_copy = _copy_of("view_as_complex_copy", lambda x: _ig().view_as_complex(x))
as_strided_copy = _copy_of("as_strided_copy",
                           lambda x, size, stride, storage_offset=None:
                           x.as_strided(size, stride, storage_offset))


def slice_copy(input, dim=0, start=None, end=None, step=1, *, out=None):
    """torch.slice_copy: input[start:end:step] along dim, in new memory."""
    index = [slice(None)] * input.dim()
    index[dim] = slice(start, end, step)
    return _fresh(input[tuple(index)], out)


# ---- single recurrent steps ------------------------------------------------------------------
def _affine(x, weight, bias):
    y = x @ weight.t()
    return y if bias is None else y + bias


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: one LSTM step, hx = (h, c); gates in torch's order
    input, forget, cell, output. Returns (h', c')."""
    h, c = hx
    gates = _affine(input, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c_next = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c_next.tanh(), c_next


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: one GRU step, gates reset, update, new; the reset gate
    scales the hidden projection including its bias (torch's, cuDNN's form)."""
    x_r, x_z, x_n = _affine(input, w_ih, b_ih).chunk(3, -1)
    h_r, h_z, h_n = _affine(hx, w_hh, b_hh).chunk(3, -1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return (1 - z) * n + z * hx


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(W_ih x + b_ih + W_hh h + b_hh)."""
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(W_ih x + b_ih + W_hh h + b_hh)."""
    return (_affine(input, w_ih, b_ih) + _affine(hx, w_hh, b_hh)).relu()


# ---- randomized low-rank SVD and PCA ----------------------------------------------------------
def _orthonormal_range(matmul_a, matmul_a_h, n, q, niter, like):
    """An orthonormal basis Q (m x q) of A's dominant range: Q from A G, G
    Gaussian n x q, refined by niter subspace (power) iterations
    Q <- orth(A orth(A^H Q)) (Halko, Martinsson & Tropp 2011, Alg. 4.4)."""
    ig = _ig()
    shape = tuple(like.shape[:-2]) + (n, q)
    gaussian = ig.randn(shape, dtype=like.dtype, device=like.device)
    basis = ig.linalg.qr(matmul_a(gaussian)).Q
    for _ in range(niter):
        basis = ig.linalg.qr(matmul_a_h(basis)).Q
        basis = ig.linalg.qr(matmul_a(basis)).Q
    return basis


def svd_lowrank(A, q=6, niter=2, M=None):
    """torch.svd_lowrank: an approximate rank-q SVD (U, S, V) of A - M
    (M broadcast to A; None for 0), A ~ U diag(S) V^H, by a randomized range
    finder with niter power iterations; exact (to rounding) when A - M has
    rank <= q. q defaults to 6, clipped to min(m, n)."""
    ig = _ig()
    if not isinstance(A, ig.Tensor):
        raise TypeError(f"svd_lowrank(): argument 'A' must be Tensor, not {type(A).__name__}")
    m, n = A.shape[-2], A.shape[-1]
    q = min(6 if q is None else q, m, n)
    niter = 2 if niter is None else niter
    if M is not None:
        M = M.broadcast_to(A.shape)

    def matmul_a(x):
        return A @ x if M is None else A @ x - M @ x

    def matmul_a_h(x):
        return A.mH @ x if M is None else A.mH @ x - M.mH @ x

    if m < n:
        # work with A^H (n x m), so that the basis is of the longer side's range
        basis = _orthonormal_range(matmul_a_h, matmul_a, m, q, niter, A)
        projected = matmul_a(basis).mH            # q x m: B = Q^H A^H
        u_b, s, vh_b = ig.linalg.svd(projected, full_matrices=False)
        return vh_b.mH, s, basis @ u_b
    basis = _orthonormal_range(matmul_a, matmul_a_h, n, q, niter, A)
    projected = matmul_a_h(basis).mH              # q x n: B = Q^H A
    u_b, s, vh_b = ig.linalg.svd(projected, full_matrices=False)
    return basis @ u_b, s, vh_b.mH


def pca_lowrank(A, q=None, center=True, niter=2):
    """torch.pca_lowrank: (U, S, V) of the (column-)centered A by
    svd_lowrank; V's columns are the principal directions. q defaults to
    min(6, m, n)."""
    ig = _ig()
    if not isinstance(A, ig.Tensor):
        raise TypeError(f"pca_lowrank(): argument 'A' must be Tensor, not {type(A).__name__}")
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A, q, niter=niter, M=A.mean(-2, keepdim=True))


# ---- norms, padding, layouts ------------------------------------------------------------------
def norm_except_dim(v, pow=2, dim=0):
    """torch.norm_except_dim (weight_norm's): the pow-norm over every dim but
    `dim`, kept as size-1 dims; dim = -1 gives the norm of the whole tensor."""
    ig = _ig()
    if dim == -1:
        return ig.linalg.vector_norm(v, pow)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return ig.linalg.vector_norm(v, pow, dim=others, keepdim=True)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """torch.frobenius_norm: the 2-norm of the elements over `dim`."""
    r = _ig().linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)
    return r if out is None else out.copy_(r)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """torch.nuclear_norm: the sum of singular values over the matrix dims
    `dim` (the last two when not given)."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    dim = (-2, -1) if dim is None else tuple(dim)
    r = _ig().linalg.matrix_norm(input, "nuc", dim=dim, keepdim=keepdim)
    return r if out is None else out.copy_(r)


def constant_pad_nd(input, pad, value=0):
    """torch.constant_pad_nd: F.pad in constant mode (negative pads crop)."""
    from .nn import functional as F
    return F.pad(input, list(pad), mode="constant", value=value)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """torch.empty_permuted: an uninitialized tensor of logical shape `size`
    whose memory runs in the order of physical_layout (outermost first), e.g.
    (0, 2, 3, 1) for channels-last of an NCHW shape."""
    ig = _ig()
    size, physical_layout = tuple(size), tuple(physical_layout)
    if sorted(physical_layout) != list(range(len(size))):
        raise RuntimeError(f"physical_layout {list(physical_layout)} is not a permutation of "
                           f"the {len(size)} dims")
    physical = ig.empty([size[d] for d in physical_layout], dtype=dtype, device=device,
                        pin_memory=pin_memory)
    inverse = [0] * len(size)
    for position, d in enumerate(physical_layout):
        inverse[d] = position
    result = physical.permute(inverse)
    return result.requires_grad_() if requires_grad else result


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """torch.max_pool1d_with_indices: (values, indices); stride () is kernel_size."""
    from .nn import functional as F
    stride = None if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else stride
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode,
                        return_indices=True)


# ---- the deterministic debug mode ----------------------------------------------------------
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """torch.set_deterministic_debug_mode: 0 / "default" turns deterministic
    algorithms off, 1 / "warn" on in warn-only mode, 2 / "error" on."""
    ig = _ig()
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                               f"{debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    ig.use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """torch.get_deterministic_debug_mode: 0 (off), 1 (warn) or 2 (error)."""
    ig = _ig()
    if not ig.are_deterministic_algorithms_enabled():
        return 0
    return 1 if ig.is_deterministic_algorithms_warn_only_enabled() else 2


def is_storage(obj):
    """torch.is_storage: whether obj is an UntypedStorage or TypedStorage."""
    ig = _ig()
    return isinstance(obj, (ig.UntypedStorage, ig.TypedStorage))


def nonzero_static(input, *, size, fill_value=-1):
    """torch.nonzero_static: nonzero()'s (n, ndim) indices at a fixed number
    of rows, `size`: the first `size` of them, or all padded with rows of
    fill_value (an output shape that does not depend on the data)."""
    ig = _ig()
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    found = input.nonzero()
    if found.shape[0] >= size:
        return found[:size]
    padding = ig.full((size - found.shape[0], found.shape[1]), fill_value, dtype=found.dtype,
                      device=found.device)
    return ig.cat([found, padding])
