"""torch.fft: discrete Fourier transforms, written as torch's are over three core ops
(src/ignis/ops/fft.cpp, Note [FFT kernels] in src/ignis/kernels/cpu/fft.cpp):
_fft_c2c, _fft_r2c and _fft_c2r. Each function here picks the dims and signal
sizes (`n`, `s`: the input cut or padded with zeros to them), the normalization
(`norm`: "backward", the default, scales the inverse transforms by 1/n;
"forward" the forward ones; "ortho" both by 1/sqrt(n)) and the primitive.
Real inputs of fft/fftn are promoted to complex, integer ones to the default
float dtype first. Every function is differentiable (the primitives' derivatives
are transforms too) and runs under ignis.compile (extern calls of the
compiler). CUDA tensors are transformed on the host."""
import math

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "forward", "ortho")


def _ig():
    import ignis
    return ignis


def _norm_code(norm, forward):
    """torch's normalization code for a transform in this direction: 0 none,
    1 by 1/sqrt(n), 2 by 1/n."""
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f"Invalid normalization mode: {norm}")
    if norm == "ortho":
        return 1
    return 2 if (norm == "forward") == forward else 0


def _swap(norm):
    """The mode naming the same scale for the transform the other way (hfft is
    irfft of the conjugate, so its "backward" is irfft's "forward")."""
    return {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]


def _float_input(x, complex_out):
    ig = _ig()
    if not isinstance(x, ig.Tensor):
        raise TypeError(f"fft: expected a Tensor as input, but got {type(x).__name__}")
    if x.dtype.is_complex:
        return x
    if not x.dtype.is_floating_point:
        x = x.to(ig.get_default_dtype())
    elif x.dtype in (ig.float16, ig.bfloat16):
        if not ig.is_autocast_enabled(x.device.type):
            raise RuntimeError(f"Unsupported dtype {x.dtype} (ignis transforms float32 and "
                               "float64)")
        x = x.float()  # autocast runs the transforms in float32, as torch's lists say
    return x.to(x.dtype.to_complex()) if complex_out else x


def _resize(x, dims, sizes):
    """x cut or padded with zeros (at the end) to sizes[i] along dims[i]."""
    ig = _ig()
    for d, n in zip(dims, sizes):
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        have = x.shape[d]
        if n < have:
            x = x.narrow(d, 0, n)
        elif n > have:
            pad = list(x.shape)
            pad[d] = n - have
            x = ig.cat([x, ig.zeros(pad, dtype=x.dtype, device=x.device)], d)
    return x


def _one_dim(x, n, dim):
    if not isinstance(dim, int):
        raise TypeError(f"fft: dim must be an int, got {type(dim).__name__}")
    nd = max(x.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")
    return dim % nd, n


def _dims_and_sizes(x, s, dim, default_all=True):
    """torch's rules: dim None and s None: every dim; s given and dim None: the
    last len(s) dims; an entry -1 of s keeps that dim's size."""
    nd = x.dim()
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [d % nd if -nd <= d < nd else _out_of_range(d, nd) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               "dimensions.")
        dims = list(range(nd - len(s), nd))
    else:
        dims = list(range(nd))
    sizes = [x.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]
    return dims, sizes


def _out_of_range(d, nd):
    raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but "
                     f"got {d})")


# ---- complex to complex -------------------------------------------------------------------------
def fftn(input, s=None, dim=None, norm=None):
    """The n-dimensional discrete Fourier transform over dim (every dim by default)."""
    x = _float_input(input, True)
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        return x.clone()
    x = _resize(x, dims, sizes)
    return _ig().ops._fft_c2c(x, dims, _norm_code(norm, True), True)


def ifftn(input, s=None, dim=None, norm=None):
    """The inverse of fftn."""
    x = _float_input(input, True)
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        return x.clone()
    x = _resize(x, dims, sizes)
    return _ig().ops._fft_c2c(x, dims, _norm_code(norm, False), False)


def fft(input, n=None, dim=-1, norm=None):
    """The one-dimensional discrete Fourier transform along dim."""
    d, n = _one_dim(_float_input(input, True), n, dim)
    return fftn(input, None if n is None else [n], [d], norm)


def ifft(input, n=None, dim=-1, norm=None):
    """The inverse of fft."""
    d, n = _one_dim(_float_input(input, True), n, dim)
    return ifftn(input, None if n is None else [n], [d], norm)


def fft2(input, s=None, dim=(-2, -1), norm=None):
    return fftn(input, s, dim, norm)


def ifft2(input, s=None, dim=(-2, -1), norm=None):
    return ifftn(input, s, dim, norm)


# ---- real to complex and back -----------------------------------------------------------------------
def rfftn(input, s=None, dim=None, norm=None):
    """fftn of a real input, keeping the last dim's first n/2 + 1 frequencies
    (the rest are their mirror images' conjugates)."""
    x = _float_input(input, False)
    if x.dtype.is_complex:
        raise RuntimeError(f"rfftn expects a real input tensor, but got {x.dtype}")
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(x, dims, sizes)
    return _ig().ops._fft_r2c(x, dims, _norm_code(norm, True), True)


def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of rfftn: a real signal whose last dim has s[-1] entries
    (by default 2 * (input's - 1))."""
    x = _float_input(input, True)
    dims, sizes = _dims_and_sizes(x, s, dim)
    if not dims:
        raise RuntimeError("irfftn must transform at least one axis")
    last = dims[-1]
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (x.shape[last] - 1)
    n = sizes[-1]
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    x = _resize(x, dims, sizes[:-1] + [n // 2 + 1])
    return _ig().ops._fft_c2r(x, dims, _norm_code(norm, False), n)


def rfft(input, n=None, dim=-1, norm=None):
    """fft of a real input, its first n/2 + 1 frequencies."""
    d, n = _one_dim(input, n, dim)
    return rfftn(input, None if n is None else [n], [d], norm)


def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of rfft: n real points (by default 2 * (input.size(dim) - 1))."""
    d, n = _one_dim(input, n, dim)
    return irfftn(input, None if n is None else [n], [d], norm)


def rfft2(input, s=None, dim=(-2, -1), norm=None):
    return rfftn(input, s, dim, norm)


def irfft2(input, s=None, dim=(-2, -1), norm=None):
    return irfftn(input, s, dim, norm)


# ---- Hermitian -------------------------------------------------------------------------------------
def hfftn(input, s=None, dim=None, norm=None):
    """The forward transform of a Hermitian signal given by its first half: a
    real tensor (irfftn of the conjugate, the other way normalized)."""
    return irfftn(_float_input(input, True).conj(), s, dim, _swap(norm))


def ihfftn(input, s=None, dim=None, norm=None):
    """The inverse of hfftn: the first half of a real signal's inverse transform."""
    return rfftn(input, s, dim, _swap(norm)).conj()


def hfft(input, n=None, dim=-1, norm=None):
    d, n = _one_dim(input, n, dim)
    return hfftn(input, None if n is None else [n], [d], norm)


def ihfft(input, n=None, dim=-1, norm=None):
    d, n = _one_dim(input, n, dim)
    return ihfftn(input, None if n is None else [n], [d], norm)


def hfft2(input, s=None, dim=(-2, -1), norm=None):
    return hfftn(input, s, dim, norm)


def ihfft2(input, s=None, dim=(-2, -1), norm=None):
    return ihfftn(input, s, dim, norm)


# ---- helpers ---------------------------------------------------------------------------------------
def fftfreq(n, d=1.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The sample frequencies of an n-point transform with sample spacing d:
    0, 1, ..., (n - 1) // 2, -(n // 2), ..., -1, over d * n."""
    ig = _ig()
    dtype = dtype or ig.get_default_dtype()
    k = ig.cat([ig.arange(0, (n - 1) // 2 + 1, dtype=dtype), ig.arange(-(n // 2), 0, dtype=dtype)])
    out = k / (d * n)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, layout=None, requires_grad=False):
    """The sample frequencies rfft's output holds: 0, 1, ..., n // 2, over d * n."""
    ig = _ig()
    out = ig.arange(0, n // 2 + 1, dtype=dtype or ig.get_default_dtype()) / (d * n)
    if device is not None:
        out = out.to(device)
    return out.requires_grad_(requires_grad)


def _shift(x, dim, sign):
    dims = list(range(x.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if not dims:
        return x.clone()
    shifts = [sign * (x.shape[d] // 2) for d in dims]
    return x.roll(shifts, dims)


def fftshift(input, dim=None):
    """The zero frequency moved to the middle of each dim (all by default)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """The inverse of fftshift."""
    return _shift(input, dim, -1)


del math
