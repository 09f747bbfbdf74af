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
    # float32 in, complex64 out (transformed in double: as accurate as NumPy's float64).
    x32 = x.astype(np.float32)
    got = ignis.fft.rfft(ignis.from_numpy(x32))
    assert got.dtype == ignis.complex64
    check(got, np.fft.rfft(x32.astype(np.float64)).astype(np.complex64), 1e-6)


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
