"""ignis.fft and stft/istft (python/ignis/fft.py, python/ignis/_spectral.py) over the core ops
_fft_c2c/_fft_r2c/_fft_c2r (src/ignis/ops/fft.cpp; Note [FFT kernels] in
src/ignis/kernels/cpu/fft.cpp): values against torch (NumPy where torch is not installed) for
lengths that take every path of the kernels (powers of two, mixed radices, primes through
Bluestein), every norm, n-dimensional transforms with s and dim, gradients, errors, and the same
under ignis.compile on every backend."""
import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")

# 1: nothing to do; 8, 16, 1024: radix 4 and 2; 12, 60: 2, 3, 5; 7, 13: the generic
# butterflies; 17, 97, 1031: Bluestein (primes); 34: Bluestein of an even length.
LENGTHS = [1, 2, 3, 5, 7, 8, 12, 13, 16, 17, 34, 60, 97, 1024, 1031]
NORMS = [None, "backward", "ortho", "forward"]


def crandn(rng, *shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check(got, want, tol):
    got = got.detach().numpy()
    if torch is not None and isinstance(want, torch.Tensor):
        want = want.detach().resolve_conj().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    scale = max(np.abs(want).max(), 1e-30)
    assert np.abs(got - want).max() <= tol * scale


@pytest.mark.parametrize("n", LENGTHS)
def test_one_dim_transforms_match_numpy_at_every_length(n):
    rng = np.random.default_rng(n)
    z = crandn(rng, 3, n)
    x = rng.standard_normal((2, n))
    check(ignis.fft.fft(ignis.from_numpy(z)), np.fft.fft(z), 1e-13)
    check(ignis.fft.ifft(ignis.from_numpy(z)), np.fft.ifft(z), 1e-13)
    check(ignis.fft.rfft(ignis.from_numpy(x)), np.fft.rfft(x), 1e-13)
    spec = np.fft.rfft(x)
    check(ignis.fft.irfft(ignis.from_numpy(spec), n=n), np.fft.irfft(spec, n=n), 1e-13)
    # float32 in, complex64 out (transformed in float, within float's rounding; its error
    # against torch's: test_float_transforms_are_as_accurate_as_torchs).
    x32 = x.astype(np.float32)
    got = ignis.fft.rfft(ignis.from_numpy(x32))
    assert got.dtype == ignis.complex64
    check(got, np.fft.rfft(x32.astype(np.float64)).astype(np.complex64), 1e-6)


# The kernels' paths (Note [FFT kernels]): lines are transformed L at a time as vectors (L = 16
# floats or 8 doubles with AVX-512, 8 or 4 with AVX2), a short group padded, and one line alone
# as scalars, so batches of 1, 3 and 19 lines take every way through. Lengths: powers of two
# (radix 8 with a 4, 4 x 4 or 2), 3^5, 2^4 5^2 (400), 2^3 3 5^3 (3000), 3 5 7 11 (1155), 13^3,
# 17^2 and 17 2^6 (the loop for primes past 13), and primes through Bluestein (97, 3001, and
# 2 x 1031, whose rfft is a complex transform of 1031). From 1024 points a line transformed
# alone goes by the four-step (32 x 32, 17 x 64 with the loop for 17, 33 x 35 and 3^8 as
# 81 x 81 in groups short of a vector's lanes, 10^4 as 100 x 100 and its rfft's 5000 as
# 40 x 125; 3001's Bluestein convolution of 6048), as do fewer lines than lanes.
KERNEL_LENGTHS = [1, 2, 3, 4, 5, 7, 8, 12, 16, 60, 97, 128, 243, 289, 400, 1000, 1024, 1088,
                  1155, 2062, 2197, 3000, 3001, 4096, 6561, 10000]
TOLS = {np.complex128: 1e-12, np.complex64: 1e-5}


def real_of(ctype):
    return np.float64 if ctype == np.complex128 else np.float32


@pytest.mark.parametrize("n", KERNEL_LENGTHS)
def test_kernel_lengths_and_batches_match_numpy(n):
    rng = np.random.default_rng(100 + n)
    for ctype, tol in TOLS.items():
        for batch in (1, 3, 19):
            z = crandn(rng, batch, n).astype(ctype)
            x = rng.standard_normal((batch, n)).astype(real_of(ctype))
            zi, xi = ignis.from_numpy(z), ignis.from_numpy(x)
            z64, x64 = z.astype(np.complex128), x.astype(np.float64)
            check(ignis.fft.fft(zi), np.fft.fft(z64).astype(ctype), tol)
            check(ignis.fft.ifft(zi), np.fft.ifft(z64).astype(ctype), tol)
            check(ignis.fft.rfft(xi), np.fft.rfft(x64).astype(ctype), tol)
            spec = np.fft.rfft(x64).astype(ctype)
            check(ignis.fft.irfft(ignis.from_numpy(spec), n=n),
                  np.fft.irfft(spec.astype(np.complex128), n=n).astype(real_of(ctype)), tol)


@pytest.mark.parametrize("n", [1, 2, 5, 16, 97, 400, 1031, 4096])
@pytest.mark.parametrize("norm", NORMS)
def test_round_trips_return_the_input(n, norm):
    rng = np.random.default_rng(200 + n)
    for ctype, tol in TOLS.items():
        for batch in (1, 19):
            z = crandn(rng, batch, n).astype(ctype)
            x = rng.standard_normal((batch, n)).astype(real_of(ctype))
            back = ignis.fft.ifft(ignis.fft.fft(ignis.from_numpy(z), norm=norm), norm=norm)
            check(back, z, tol)
            back = ignis.fft.irfft(ignis.fft.rfft(ignis.from_numpy(x), norm=norm), n=n, norm=norm)
            check(back, x, tol)


@pytest.mark.parametrize("n", [12, 97, 1000])
def test_every_layout_of_lines_matches_numpy(n):
    """Lines whose consecutive lanes are adjacent (a transform along dim 0: gathered as vectors
    and de-interleaved), lines of contiguous entries (along the last dim: transposed in
    registers), and strided ones (lane by lane), read and written, real and complex."""
    rng = np.random.default_rng(300 + n)
    for ctype, tol in TOLS.items():
        rtype = real_of(ctype)
        z = crandn(rng, n, 19).astype(ctype)  # dim 0: 19 adjacent lines
        x = rng.standard_normal((n, 19)).astype(rtype)
        z64, x64 = z.astype(np.complex128), x.astype(np.float64)
        zi, xi = ignis.from_numpy(z), ignis.from_numpy(x)
        check(ignis.fft.fft(zi, dim=0), np.fft.fft(z64, axis=0).astype(ctype), tol)
        check(ignis.fft.fft(zi.t(), dim=1), np.fft.fft(z64.T, axis=1).astype(ctype), tol)
        check(ignis.fft.fft(zi.t().contiguous(), dim=1), np.fft.fft(z64.T, axis=1).astype(ctype),
              tol)
        check(ignis.fft.fft(zi[::2], dim=0), np.fft.fft(z64[::2], axis=0).astype(ctype), tol)
        check(ignis.fft.fft(zi[:, 1:18:2], dim=0), np.fft.fft(z64[:, 1:18:2], axis=0).astype(ctype),
              tol)
        check(ignis.fft.rfft(xi, dim=0), np.fft.rfft(x64, axis=0).astype(ctype), tol)
        check(ignis.fft.rfft(xi.t(), dim=1), np.fft.rfft(x64.T, axis=1).astype(ctype), tol)
        check(ignis.fft.rfft(xi.t().contiguous()[:, 1:], dim=1),
              np.fft.rfft(x64.T[:, 1:], axis=1).astype(ctype), tol)
        spec = np.fft.rfft(x64, axis=0).astype(ctype)
        si = ignis.from_numpy(spec)
        check(ignis.fft.irfft(si, n=n, dim=0),
              np.fft.irfft(spec.astype(np.complex128), n=n, axis=0).astype(rtype), tol)
        check(ignis.fft.irfft(si.t(), n=n, dim=1),
              np.fft.irfft(spec.T.astype(np.complex128), n=n, axis=1).astype(rtype), tol)
        # Both halves of a real signal's spectrum (r2c not one-sided).
        full = ignis.ops._fft_r2c(xi.t().contiguous(), [1], 0, False)
        check(full, np.fft.fft(x64.T, axis=1).astype(ctype), tol)
        # Several dims, out of order, of a non-contiguous tensor.
        w = crandn(rng, 5, 19, n).astype(ctype)[:, ::2]
        check(ignis.fft.fftn(ignis.from_numpy(w), dim=(2, 0)),
              np.fft.fftn(w.astype(np.complex128), axes=(2, 0)).astype(ctype), tol)
        v = rng.standard_normal((4, 3, n)).astype(rtype)
        check(ignis.fft.rfftn(ignis.from_numpy(v), dim=(0, 2)),
              np.fft.rfftn(v.astype(np.float64), axes=(0, 2)).astype(ctype), tol)
        sv = np.fft.rfftn(v.astype(np.float64), axes=(0, 2))
        check(ignis.fft.irfftn(ignis.from_numpy(sv.astype(ctype)), s=(4, n), dim=(0, 2)),
              np.fft.irfftn(sv, s=(4, n), axes=(0, 2)).astype(rtype), tol)


@needs_torch
@pytest.mark.parametrize("n", [2, 7, 8, 97, 400, 401])
def test_c2r_ignores_what_torchs_ignores(n):
    """irfft reads the first n/2 + 1 entries only and drops the imaginary parts of the zero and
    (even n) the n/2 frequencies, as torch's does: junk there changes nothing."""
    rng = np.random.default_rng(400 + n)
    for ctype, tol in TOLS.items():
        for batch in (1, 19):
            spec = crandn(rng, batch, n // 2 + 3).astype(ctype)
            got = ignis.fft.irfft(ignis.from_numpy(spec), n=n)
            check(got, torch.fft.irfft(torch.from_numpy(spec), n=n), tol)
            got = ignis.fft.hfft(ignis.from_numpy(spec), n=n)
            check(got, torch.fft.hfft(torch.from_numpy(spec), n=n), tol)


def test_empty_tensors_transform_to_empty_tensors():
    for shape in [(0, 8), (3, 0, 8)]:
        z = np.zeros(shape, np.complex64)
        x = np.zeros(shape, np.float64)
        assert tuple(ignis.fft.fft(ignis.from_numpy(z)).shape) == shape
        assert tuple(ignis.fft.rfft(ignis.from_numpy(x)).shape) == shape[:-1] + (5,)
        assert tuple(ignis.fft.irfft(ignis.from_numpy(z), n=14).shape) == shape[:-1] + (14,)
    z = np.zeros((3, 0, 8), np.complex128)
    assert tuple(ignis.fft.fftn(ignis.from_numpy(z), dim=(0, 2)).shape) == (3, 0, 8)


def _rel_errors(got, want):
    """The largest and the root-mean-square error of got, relative to want's largest and rms."""
    d = np.abs(got.detach().numpy().astype(want.dtype) - want)
    return d.max() / np.abs(want).max(), np.sqrt((d ** 2).mean() / (np.abs(want) ** 2).mean())


@needs_torch
@pytest.mark.parametrize("n", [7, 17, 60, 97, 1000, 1031, 3001, 4096, 6561, 65536])
def test_float_transforms_are_as_accurate_as_torchs(n):
    """complex64/float32 are transformed in float, as torch's pocketfft does: against NumPy in
    float64 on the same (float) inputs, ignis's largest error (relative to the largest output)
    is at most twice torch's and its rms error at most 1.25 times, for direct lengths (7, 17
    through the loop for large primes, 3^8, 2^16), Bluestein's (97, 1031, 3001) and real
    transforms, forward and backward. (16384 values a case: one element's error is noisy.)"""
    rng = np.random.default_rng(500 + n)
    batch = max(1, 16384 // n)
    z = crandn(rng, batch, n).astype(np.complex64)
    x = rng.standard_normal((batch, n)).astype(np.float32)
    spec = np.fft.rfft(x.astype(np.float64)).astype(np.complex64)
    cases = [("fft", z, {}, np.fft.fft), ("ifft", z, {}, np.fft.ifft),
             ("rfft", x, {}, np.fft.rfft), ("irfft", spec, {"n": n}, np.fft.irfft)]
    for name, a, kw, ref_fn in cases:
        ref = ref_fn(a.astype(np.complex128 if a.dtype == np.complex64 else np.float64), **kw)
        mine = _rel_errors(getattr(ignis.fft, name)(ignis.from_numpy(a), **kw), ref)
        theirs = _rel_errors(getattr(torch.fft, name)(torch.from_numpy(a), **kw), ref)
        assert mine[0] <= 2 * theirs[0] and mine[1] <= 1.25 * theirs[1], (name, mine, theirs)


def test_transforms_from_several_threads_agree_with_serial_ones():
    """Python threads transforming at once share the plan cache (more lengths than it holds, so
    plans are evicted while others are in use): the same results, bit for bit."""
    import threading
    lengths = [5, 12, 17, 60, 97, 128, 243, 289, 400, 1000, 1031, 1155, 2062, 3000, 3001, 4096,
               6, 10, 14, 22, 26]
    rng = np.random.default_rng(600)
    inputs = [(crandn(rng, 3, n).astype(np.complex64), rng.standard_normal((19, n)))
              for n in lengths]

    def run(z, x):
        zi, xi = ignis.from_numpy(z), ignis.from_numpy(x)
        return [ignis.fft.fft(zi).numpy(), ignis.fft.ifft(zi).numpy(), ignis.fft.rfft(xi).numpy(),
                ignis.fft.irfft(ignis.fft.rfft(xi), n=x.shape[-1]).numpy()]

    want = [run(z, x) for z, x in inputs]
    got = [[None] * len(inputs) for _ in range(4)]
    errors = []

    def worker(t):
        try:
            for k in range(len(inputs)):
                i = (k * 5 + t) % len(inputs)
                got[t][i] = run(*inputs[i])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for t in range(4):
        for i in range(len(inputs)):
            for g, w in zip(got[t][i], want[i]):
                assert np.array_equal(g, w)


@needs_torch
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2",
                                "fftn", "ifftn", "rfftn", "hfftn", "ihfftn"])
def test_every_function_and_norm_matches_torch(fn, norm):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 10))
    real_in = fn in ("rfft", "rfft2", "rfftn", "ihfft", "ihfftn")
    a = x if real_in else x + 1j * rng.standard_normal(x.shape)
    check(getattr(ignis.fft, fn)(ignis.from_numpy(a), norm=norm),
          getattr(torch.fft, fn)(torch.from_numpy(a), norm=norm), 1e-12)


@needs_torch
def test_sizes_and_dims_are_torchs():
    rng = np.random.default_rng(4)
    z, x = crandn(rng, 4, 6, 10), rng.standard_normal((4, 6, 10))
    zi, zt, xi, xt = (ignis.from_numpy(z), torch.from_numpy(z), ignis.from_numpy(x),
                      torch.from_numpy(x))
    check(ignis.fft.fft(zi, n=13, dim=1), torch.fft.fft(zt, n=13, dim=1), 1e-12)
    check(ignis.fft.fft(zi, n=3, dim=0), torch.fft.fft(zt, n=3, dim=0), 1e-12)
    check(ignis.fft.fftn(zi, s=(5, 12)), torch.fft.fftn(zt, s=(5, 12)), 1e-12)
    check(ignis.fft.fftn(zi, s=(-1, 7), dim=(0, 2)), torch.fft.fftn(zt, s=(-1, 7), dim=(0, 2)),
          1e-12)
    check(ignis.fft.rfftn(xi, dim=(2, 0)), torch.fft.rfftn(xt, dim=(2, 0)), 1e-12)
    spec = torch.fft.rfftn(xt)
    si = ignis.from_numpy(spec.numpy())
    check(ignis.fft.irfftn(si), torch.fft.irfftn(spec), 1e-12)
    check(ignis.fft.irfftn(si, s=(3, 5, 9)), torch.fft.irfftn(spec, s=(3, 5, 9)), 1e-12)
    check(ignis.fft.irfft(si, n=7, dim=-1), torch.fft.irfft(spec, n=7, dim=-1), 1e-12)
    # Integers are transformed as the default float dtype; a real input of fft as complex.
    ii = ignis.arange(8)
    check(ignis.fft.fft(ii), torch.fft.fft(torch.arange(8)), 1e-6)
    check(ignis.fft.fft(xi), torch.fft.fft(xt), 1e-12)
    # Non-contiguous inputs.
    check(ignis.fft.fft(zi.transpose(0, 2)), torch.fft.fft(zt.transpose(0, 2)), 1e-12)
    check(ignis.fft.rfft(xi[:, ::2]), torch.fft.rfft(xt[:, ::2]), 1e-12)


@needs_torch
def test_helpers_match_torch():
    check(ignis.fft.fftfreq(7, 0.5), torch.fft.fftfreq(7, 0.5), 1e-7)
    check(ignis.fft.fftfreq(8), torch.fft.fftfreq(8), 1e-7)
    check(ignis.fft.rfftfreq(9, 2.0, dtype=ignis.float64),
          torch.fft.rfftfreq(9, 2.0, dtype=torch.float64), 1e-15)
    x = np.arange(30.0).reshape(5, 6)
    for dim in (None, 0, (1,), (0, 1)):
        check(ignis.fft.fftshift(ignis.from_numpy(x), dim), torch.fft.fftshift(torch.from_numpy(x), dim), 0)
        check(ignis.fft.ifftshift(ignis.from_numpy(x), dim),
              torch.fft.ifftshift(torch.from_numpy(x), dim), 0)


def test_bad_arguments_raise_clearly():
    x = ignis.randn(4, 6)
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        ignis.fft.fft(x, norm="sideways")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ignis.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        ignis.fft.fftn(x, dim=(0, -2))
    with pytest.raises(IndexError, match="Dimension out of range"):
        ignis.fft.fft(x, dim=2)
    with pytest.raises(RuntimeError, match="rfftn expects a real input"):
        ignis.fft.rfft(ignis.fft.fft(x))
    with pytest.raises(TypeError, match="expects a complex input"):
        ignis.ops._fft_c2c(x, [0], 0, True)
    with pytest.raises(RuntimeError, match="needs 4 input entries"):
        ignis.ops._fft_c2r(ignis.fft.fft(x)[:, :2], [1], 0, 6)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        ignis.fft.fft(x.half())


@needs_torch
@pytest.mark.parametrize("fn,n", [("fft", None), ("ifft", None), ("rfft", None), ("rfft", 7),
                                  ("fftn", None), ("rfftn", None), ("hfft", None),
                                  ("ihfft", None), ("irfft", 10), ("irfft", 11),
                                  ("rfft2", None), ("irfftn", None)])
def test_gradients_match_torch(fn, n):
    """Gradients of a real loss through each function (complex outputs are weighted by a
    complex tensor through view_as_real), against torch, first and second order."""
    rng = np.random.default_rng(5)
    complex_in = fn in ("fft", "ifft", "fftn", "hfft", "irfft", "irfftn")
    a = crandn(rng, 3, 6) if complex_in else rng.standard_normal((3, 6))
    kw = {} if n is None else {"n": n}

    def loss(lib, t):
        y = getattr(lib.fft, fn)(t, **kw)
        w = lib.from_numpy(np.cos(np.arange(np.prod(y.shape))).reshape(tuple(y.shape)) * 0.5)
        if y.dtype.is_complex:
            y = lib.view_as_real(y.resolve_conj() if lib is torch else y)
            w = lib.stack([w, w * 0.3], -1)
        return (y * w).pow(2).sum()

    ti = ignis.from_numpy(a).requires_grad_(True)
    tt = torch.from_numpy(a).requires_grad_(True)
    (gi,) = ignis.autograd.grad(loss(ignis, ti), [ti], create_graph=True)
    (gt,) = torch.autograd.grad(loss(torch, tt), [tt], create_graph=True)
    check(gi, gt, 1e-12)
    vi = ignis.view_as_real(gi).sum() if gi.dtype.is_complex else gi.sum()
    vt = torch.view_as_real(gt.resolve_conj()).sum() if gt.is_complex() else gt.sum()
    (hi,), (ht,) = ignis.autograd.grad(vi, [ti]), torch.autograd.grad(vt, [tt])
    check(hi, ht, 1e-12)


@needs_torch
def test_stft_and_istft_match_torch():
    rng = np.random.default_rng(6)
    sig = rng.standard_normal((2, 400)).astype(np.float32)
    win = torch.hann_window(64)
    si, st = ignis.from_numpy(sig), torch.from_numpy(sig)
    wi = ignis.from_numpy(win.numpy())
    for kw in [dict(), dict(center=False), dict(normalized=True), dict(win_length=48),
               dict(onesided=False), dict(pad_mode="constant")]:
        w_i = wi[:kw["win_length"]] if "win_length" in kw else wi
        w_t = win[:kw["win_length"]] if "win_length" in kw else win
        got = ignis.stft(si, 64, 16, window=w_i, return_complex=True, **kw)
        want = torch.stft(st, 64, 16, window=w_t, return_complex=True, **kw)
        check(got, want, 1e-5)
    spec = torch.stft(st, 64, 16, window=win, return_complex=True)
    spi = ignis.from_numpy(spec.numpy())
    check(ignis.istft(spi, 64, 16, window=wi), torch.istft(spec, 64, 16, window=win), 1e-5)
    check(ignis.istft(spi, 64, 16, window=wi, length=390),
          torch.istft(spec, 64, 16, window=win, length=390), 1e-5)
    # Round trip, one signal, the Tensor methods.
    one = si[0]
    back = one.stft(64, 16, window=wi, return_complex=True).istft(64, 16, window=wi, length=400)
    np.testing.assert_allclose(back.numpy(), sig[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="return_complex"):
        ignis.stft(si, 64)


@needs_torch
def test_autocast_runs_transforms_in_float32_as_torch():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    xi, xt = ignis.from_numpy(x).bfloat16(), torch.from_numpy(x).bfloat16()
    with ignis.autocast("cpu", dtype=ignis.bfloat16):
        got, prim = ignis.fft.rfft(xi), ignis.ops._fft_r2c(xi, [1], 0, True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = torch.fft.rfft(xt)
    assert got.dtype == prim.dtype == ignis.complex64
    check(got, want, 1e-6)
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        ignis.fft.rfft(xi)  # outside autocast, as torch's CPU transforms


def _spectral_filter(x, w):
    X = ignis.fft.rfft(x * 2, dim=-1)
    y = ignis.fft.irfft(X * w, n=x.shape[-1])
    return y.relu().sum(), ignis.fft.fft(x).abs(), ignis.fft.fftn(x, dim=(0, 1)).real


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
def test_compiled_transforms_match_eager_with_gradients(backend):
    ignis._dynamo.reset()
    x = ignis.randn(4, 64, requires_grad=True)
    w = ignis.randn(33, requires_grad=True)
    want = _spectral_filter(x, w)
    (want[0] + want[1].sum() + want[2].sum()).backward()
    gx, gw = x.grad, w.grad
    x.grad = w.grad = None
    got = ignis.compile(_spectral_filter, backend=backend, fullgraph=True)(x, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-4)
    (got[0] + got[1].sum() + got[2].sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(w.grad.numpy(), gw.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_a_compiled_graph_of_a_complex_input_keeps_its_gradient(backend):
    """A graph whose input is a complex tensor that requires grad (rfft's output made before
    it): its outputs require grad too (the AOT stage had taken complex tensors as not
    differentiable, and the compiled output had no grad_fn)."""
    ignis._dynamo.reset()
    x = ignis.randn(4, 16, requires_grad=True)
    w = ignis.randn(9)
    spec = ignis.fft.rfft(x)
    got = ignis.compile(lambda s, w: s * w, backend=backend)(spec, w)
    want = spec * w
    assert got.requires_grad and got.grad_fn is not None
    (gx,) = ignis.autograd.grad(ignis.view_as_real(got).sum(), [x])
    (ex,) = ignis.autograd.grad(ignis.view_as_real(want).sum(), [x])
    np.testing.assert_allclose(gx.numpy(), ex.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(not ignis.cuda.is_available(),
                    reason=f"no usable CUDA GPU here: {ignis._C._cuda_unavailable_reason()}")
def test_cuda_tensors_are_transformed_on_the_host():
    rng = np.random.default_rng(7)
    z = crandn(rng, 3, 12).astype(np.complex64)
    got = ignis.fft.fft(ignis.from_numpy(z).cuda())
    assert got.device.type == "cuda"
    check(got.cpu(), np.fft.fft(z).astype(np.complex64), 1e-5)
    x = ignis.randn(2, 10, device="cuda", requires_grad=True)
    ignis.fft.irfft(ignis.fft.rfft(x), n=10).sum().backward()
    assert x.grad.device.type == "cuda"
