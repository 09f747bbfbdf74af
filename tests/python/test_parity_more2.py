"""More torch parity: the Bessel functions of torch.special (J, Y, K, Ai),
distributions.Wishart, nn.CrossMapLRN2d, and the aten-style top-level losses,
each against torch (and scipy where it has the function)."""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(11)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# ---- torch.special Bessel functions -------------------------------------------------------------
BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
          "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
          "airy_ai"]

# arguments across every method's range: series, recurrence, quadrature, asymptotics
ARGS = np.concatenate([np.linspace(-60, 60, 2401), np.logspace(-10, 2.5, 400),
                       -np.logspace(-10, 2.5, 400), [1.0, 2.0, 2.0000001, 25.0, 24.999, 12.0,
                                                     -12.0, -2.0, 1e-300, 1e300]])


def _reference(name, x):
    """scipy's value (float64) where scipy has the function, else torch's."""
    sp = pytest.importorskip("scipy.special")
    with np.errstate(all="ignore"):
        return {"bessel_j0": sp.j0, "bessel_j1": sp.j1, "bessel_y0": sp.y0,
                "bessel_y1": sp.y1, "modified_bessel_k0": sp.k0, "modified_bessel_k1": sp.k1,
                "scaled_modified_bessel_k0": sp.k0e, "scaled_modified_bessel_k1": sp.k1e,
                "airy_ai": lambda v: sp.airy(v)[0]}[name](x)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_float64_values(name):
    """float64 values to ~1e-12 relative (or absolute, where the function is
    near a zero or the argument's rounding dominates) against scipy, and the
    same NaN / inf pattern as torch."""
    got = _np(getattr(ignis.special, name)(ignis.tensor(ARGS)))
    want = _reference(name, ARGS)
    torch_value = getattr(torch.special, name)(torch.tensor(ARGS)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(torch_value))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(torch_value))
    finite = np.isfinite(want) & (np.abs(ARGS) < 1e4)
    # the oscillating functions are compared relative to their envelope
    scale = np.abs(want[finite])
    if name.startswith("bessel") or name == "airy_ai":
        scale = np.maximum(scale, 1e-3)
    err = np.abs(got[finite] - want[finite]) / np.maximum(scale, 1e-300)
    assert err.max() < 1e-11, (err.max(), ARGS[finite][err.argmax()])


def test_bessel_against_mpmath_spot_values():
    mpmath = pytest.importorskip("mpmath")
    xs = [0.3, 3.7, 17.5, 31.0, 250.0]
    funcs = {"bessel_j0": lambda v: mpmath.besselj(0, v), "bessel_y1": lambda v: mpmath.bessely(1, v),
             "modified_bessel_k1": lambda v: mpmath.besselk(1, v),
             "scaled_modified_bessel_k0": lambda v: mpmath.besselk(0, v) * mpmath.exp(v)}
    for name, f in funcs.items():
        got = _np(getattr(ignis.special, name)(ignis.tensor(xs, dtype=ignis.float64)))
        want = np.array([float(f(v)) for v in xs])
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=0, err_msg=name)
    xs = [-30.0, -7.0, -1.5, 0.5, 4.0, 40.0]
    got = _np(ignis.special.airy_ai(ignis.tensor(xs, dtype=ignis.float64)))
    np.testing.assert_allclose(got, [float(mpmath.airyai(v)) for v in xs], rtol=1e-12)


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_edges_match_torch(name):
    """0, -0, negatives, +-inf and NaN give torch's values (including J's NaN at
    infinity, Y's -inf at 0 and NaN below, K's inf at 0 and 0 at inf)."""
    edges = [0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-300, 700.0, 800.0]
    got = _np(getattr(ignis.special, name)(ignis.tensor(edges, dtype=ignis.float64)))
    want = getattr(torch.special, name)(torch.tensor(edges, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300, equal_nan=True)
    numbers = ~np.isnan(want)  # the sign of zeros and infinities (a NaN's sign means nothing)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_dtypes_and_no_grad(name):
    """float32 in, float32 out (to float32 precision); integers and bool give
    the default dtype; half and complex are refused as torch refuses them; the
    result never requires grad (torch has no derivatives for these)."""
    fn, tfn = getattr(ignis.special, name), getattr(torch.special, name)
    x = (RNG.standard_normal(200) * 15).astype(np.float32)
    got = fn(ignis.tensor(x))
    want = _reference(name, x.astype(np.float64))
    assert got.dtype == ignis.float32
    ok = np.isfinite(want)
    np.testing.assert_allclose(_np(got)[ok], want[ok].astype(np.float32), rtol=2e-6,
                               atol=1e-6 * np.maximum(1, np.abs(want[ok])).max())
    ints = fn(ignis.tensor([1, 2, 3]))
    assert ints.dtype == ignis.float32
    np.testing.assert_allclose(_np(ints), tfn(torch.tensor([1, 2, 3])).numpy(), rtol=1e-5)
    assert fn(ignis.tensor([True, False])).dtype == ignis.float32
    for bad in (ignis.float16, ignis.complex64):
        with pytest.raises(NotImplementedError):
            fn(ignis.ones(2, dtype=bad))
    with pytest.raises(NotImplementedError):
        tfn(torch.ones(2, dtype=torch.float16))
    with pytest.raises(TypeError):
        fn(1.5)
    leaf = ignis.tensor([0.5, 3.0], requires_grad=True)
    assert not fn(leaf).requires_grad
    assert not tfn(torch.tensor([0.5, 3.0], requires_grad=True)).requires_grad


def test_bessel_out_and_shapes():
    x = ignis.tensor(RNG.uniform(0.1, 30, (3, 4)))
    out = ignis.empty(3, 4, dtype=ignis.float64)
    r = ignis.special.bessel_y0(x, out=out)
    assert r is out
    np.testing.assert_allclose(_np(out), torch.special.bessel_y0(torch.tensor(_np(x))).numpy(),
                               rtol=1e-6, atol=1e-6)
    assert ignis.special.airy_ai(ignis.empty(0, 5)).shape == (0, 5)
    assert ignis.special.modified_bessel_k0(ignis.tensor(2.0)).shape == ()
