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


# ---- distributions.Wishart ------------------------------------------------------------------------
def _spd(shape, rng=RNG):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_matches_torch(param):
    V = _spd((2, 3, 3))
    matrix = np.linalg.cholesky(V) if param == "scale_tril" else V
    df = np.array([4.5, 7.0])
    X = _spd((5, 2, 3, 3))
    wi = ignis.distributions.Wishart(ignis.tensor(df), **{param: ignis.tensor(matrix)})
    wt = torch.distributions.Wishart(torch.tensor(df), **{param: torch.tensor(matrix)})
    assert tuple(wi.batch_shape) == (2,) and tuple(wi.event_shape) == (3, 3)
    for attr in ("mean", "variance", "mode", "covariance_matrix", "precision_matrix",
                 "scale_tril"):
        np.testing.assert_allclose(_np(getattr(wi, attr)), getattr(wt, attr).numpy(),
                                   rtol=1e-10, atol=1e-12, err_msg=attr)
    np.testing.assert_allclose(_np(wi.log_prob(ignis.tensor(X))),
                               wt.log_prob(torch.tensor(X)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(_np(wi.entropy()), wt.entropy().numpy(), rtol=1e-10)
    # the exponential-family form of the entropy agrees with the closed form
    generic = ignis.distributions.ExponentialFamily.entropy(wi)
    np.testing.assert_allclose(_np(generic), _np(wi.entropy()), rtol=1e-9)


def test_wishart_scalar_df_mode_nan_and_expand():
    wi = ignis.distributions.Wishart(4.0, covariance_matrix=ignis.eye(3, dtype=ignis.float64))
    wt = torch.distributions.Wishart(4.0, covariance_matrix=torch.eye(3, dtype=torch.float64))
    assert wi.df.dtype == ignis.float64 and tuple(wi.batch_shape) == ()
    assert np.isnan(_np(wi.mode)).all() and np.isnan(wt.mode.numpy()).all()  # df <= p + 1
    assert wi.arg_constraints["df"].lower_bound == 2
    e = wi.expand((4, 2))
    assert tuple(e.batch_shape) == (4, 2) and tuple(e.sample().shape) == (4, 2, 3, 3)
    X = ignis.tensor(_spd((3, 3)))
    np.testing.assert_allclose(_np(e.log_prob(X)),
                               np.full((4, 2), wt.log_prob(torch.tensor(_np(X))).item()),
                               rtol=1e-12)


def test_wishart_log_prob_gradients_match_torch():
    V, X = _spd((3, 3)), _spd((3, 3))
    df_i = ignis.tensor(5.5, dtype=ignis.float64, requires_grad=True)
    L_i = ignis.tensor(np.linalg.cholesky(V), requires_grad=True)
    X_i = ignis.tensor(X, requires_grad=True)
    df_t = torch.tensor(5.5, dtype=torch.float64, requires_grad=True)
    L_t = torch.tensor(np.linalg.cholesky(V), requires_grad=True)
    X_t = torch.tensor(X, requires_grad=True)
    ignis.distributions.Wishart(df_i, scale_tril=L_i).log_prob(X_i).backward()
    torch.distributions.Wishart(df_t, scale_tril=L_t).log_prob(X_t).backward()
    # scale_tril's gradient is compared below the diagonal only: torch's
    # cholesky_solve backward also writes the (unread) upper triangle, ignis's not.
    L_i.grad, L_t.grad = L_i.grad.tril(), L_t.grad.tril()
    for a, b in ((df_i, df_t), (L_i, L_t), (X_i, X_t)):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12)
    df_i.grad = None
    ignis.distributions.Wishart(df_i, scale_tril=L_i).entropy().backward()
    df_t.grad = None
    torch.distributions.Wishart(df_t, scale_tril=L_t).entropy().backward()
    np.testing.assert_allclose(_np(df_i.grad), df_t.grad.numpy(), rtol=1e-9)


def test_wishart_sampling_statistics_and_rsample_gradient():
    ignis.manual_seed(0)
    V = _spd((3, 3))
    df = ignis.tensor([4.0, 9.0], dtype=ignis.float64, requires_grad=True)
    L = ignis.tensor(np.linalg.cholesky(V), requires_grad=True)
    w = ignis.distributions.Wishart(df, scale_tril=L)
    samples = w.rsample((40000,))
    assert tuple(samples.shape) == (40000, 2, 3, 3)
    s = _np(samples)
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2))  # symmetric
    assert (np.linalg.eigvalsh(s[:200]) > 0).all()  # positive definite
    mean, var = _np(w.mean), _np(w.variance)
    assert np.abs(s.mean(0) - mean).max() < 0.05 * np.abs(mean).max()
    np.testing.assert_allclose(s.var(0), var, rtol=0.1)
    # d E[X] / d df = V: the sample mean's gradient estimates it
    samples[:, :, 0, 0].mean(0).sum().backward()
    np.testing.assert_allclose(_np(df.grad), [V[0, 0], V[0, 0]], rtol=0.08)
    assert np.isfinite(_np(L.grad)).all() and np.abs(_np(L.grad)).sum() > 0
    assert not w.sample().requires_grad


def test_wishart_bad_arguments():
    W = ignis.distributions.Wishart
    eye = ignis.eye(3, dtype=ignis.float64)
    with pytest.raises(ValueError, match="greater than ndim - 1 = 2"):
        W(1.5, covariance_matrix=eye)
    with pytest.raises(AssertionError, match="Exactly one"):
        W(4.0, covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(AssertionError, match="Exactly one"):
        W(4.0)
    with pytest.raises(ValueError, match="at least two-dimensional"):
        W(4.0, covariance_matrix=ignis.ones(3))
    with pytest.raises(ValueError, match="covariance_matrix"):
        W(4.0, covariance_matrix=-eye, validate_args=True)
    with pytest.raises(ValueError, match="support"):
        W(4.0, covariance_matrix=eye, validate_args=True).log_prob(-eye)
    with pytest.warns(UserWarning, match="Low df"):
        W(2.5, covariance_matrix=eye)


# ---- nn.CrossMapLRN2d, nn.LocalResponseNorm ---------------------------------------------------------
@pytest.mark.parametrize("channels,size", [(7, 5), (7, 4), (3, 5), (6, 2), (10, 3), (2, 7),
                                           (1, 3), (9, 6)])
def test_cross_map_lrn2d_matches_torch(channels, size):
    """Values and gradients as torch's legacy function computes them (its
    windows include channel 0 throughout, and its backward has its own window)."""
    x = RNG.standard_normal((2, channels, 3, 4))
    g = RNG.standard_normal((2, channels, 3, 4))
    xi = ignis.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    mi = ignis.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.7, k=1.5)
    mt = torch.nn.CrossMapLRN2d(size, alpha=0.3, beta=0.7, k=1.5)
    yi, yt = mi(xi), mt(xt)
    np.testing.assert_allclose(_np(yi), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    yi.backward(ignis.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(_np(xi.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert repr(mi) == repr(mt)


def test_cross_map_lrn2d_defaults_and_errors():
    m = ignis.nn.CrossMapLRN2d(3)
    assert (m.size, m.alpha, m.beta, m.k) == (3, 1e-4, 0.75, 1)
    x = RNG.standard_normal((1, 4, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(_np(m(ignis.tensor(x))),
                               torch.nn.CrossMapLRN2d(3)(torch.tensor(x)).numpy(), rtol=1e-6)
    assert m(ignis.tensor(x)).dtype == ignis.float32
    assert tuple(m(ignis.zeros(0, 3, 2, 2)).shape) == (0, 3, 2, 2)
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        m(ignis.zeros(2, 3, 4))


@pytest.mark.parametrize("size", [1, 2, 5])
def test_local_response_norm_matches_torch(size):
    x = RNG.standard_normal((2, 6, 5))
    xi, xt = ignis.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yi = ignis.nn.LocalResponseNorm(size, alpha=0.2, beta=0.6, k=2.0)(xi)
    yt = torch.nn.LocalResponseNorm(size, alpha=0.2, beta=0.6, k=2.0)(xt)
    np.testing.assert_allclose(_np(yi), yt.detach().numpy(), rtol=1e-12)
    yi.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(_np(xi.grad), xt.grad.numpy(), rtol=1e-10)


# ---- the aten-style top-level losses (integer reduction) ---------------------------------------------
def _loss_cases():
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    sign = np.where(RNG.standard_normal((4, 5)) > 0, 1.0, -1.0)
    row_sign = np.array([1.0, -1.0, 1.0, -1.0])
    logp = a - np.log(np.exp(a).sum(-1, keepdims=True))
    prob = np.exp(b) / np.exp(b).sum(-1, keepdims=True)
    unit = RNG.uniform(0.05, 0.95, (4, 5))
    w, pw = RNG.uniform(0.5, 2, (5,)), RNG.uniform(0.5, 2, (5,))
    c = RNG.standard_normal((4, 5))
    return [
        ("kl_div", (logp, prob), {}),
        ("kl_div", (logp, np.log(prob)), {"log_target": True}),
        ("binary_cross_entropy_with_logits", (a, unit, w, pw), {}),
        ("binary_cross_entropy_with_logits", (a, unit), {}),
        ("margin_ranking_loss", (a, b, sign, 0.3), {}),
        ("hinge_embedding_loss", (a, sign, 0.7), {}),
        ("cosine_embedding_loss", (a, b, row_sign, 0.1), {}),
        ("triplet_margin_loss", (a, b, c, 1.0, 2.0, 1e-6, True), {}),
        ("triplet_margin_loss", (a, b, c, 0.5, 1.0), {}),
        ("poisson_nll_loss", (a, unit * 3, True, True, 1e-8), {}),
        ("poisson_nll_loss", (np.abs(a), unit * 3, False, False, 1e-8), {}),
    ]


@pytest.mark.parametrize("case", range(11))
@pytest.mark.parametrize("reduction", [None, 0, 1, 2, 3, -1])
def test_top_level_losses_integer_reduction(case, reduction):
    """Values and gradients as torch's top-level (ATen) losses, including the
    binding's default (no reduction) and any unknown int meaning none."""
    name, args, kwargs = _loss_cases()[case]
    if name == "poisson_nll_loss" and reduction is None:
        return  # every argument required
    ia = [ignis.tensor(x, requires_grad=(i == 0)) if isinstance(x, np.ndarray) else x
          for i, x in enumerate(args)]
    ta = [torch.tensor(x, requires_grad=(i == 0)) if isinstance(x, np.ndarray) else x
          for i, x in enumerate(args)]
    extra = () if reduction is None else (reduction,)
    if name == "triplet_margin_loss" and reduction is not None:
        full = list(args) + [1.0, 2.0, 1e-6, False][len(args) - 3:]
        ia = ia + full[len(args):]
        ta = ta + full[len(args):]
    if name == "binary_cross_entropy_with_logits" and len(args) == 2 and extra:
        ia, ta = ia + [None, None], ta + [None, None]
    got = getattr(ignis, name)(*ia, *extra, **kwargs)
    want = getattr(torch, name)(*ta, *extra, **kwargs)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(_np(ia[0].grad), ta[0].grad.numpy(), rtol=1e-9, atol=1e-12)


def test_top_level_losses_bad_arguments():
    x = ignis.randn(3, 4)
    for name in ("kl_div", "margin_ranking_loss", "hinge_embedding_loss"):
        args = {"kl_div": (x, x), "margin_ranking_loss": (x, x, x, 0.0),
                "hinge_embedding_loss": (x, x, 1.0)}[name]
        with pytest.raises(TypeError, match="reduction"):
            getattr(ignis, name)(*args, "mean")
    with pytest.raises(TypeError):
        ignis.kl_div(x, x, 2, True)  # log_target is keyword-only, as torch's
    with pytest.raises(TypeError):
        ignis.poisson_nll_loss(x, x)  # every argument required
    with pytest.raises(RuntimeError):
        ignis.margin_ranking_loss(x, x, ignis.ones(2, 4), 0.0, 1)


def test_top_level_ctc_loss():
    """Values, and gradients in the logits under log_softmax (torch's CTC
    backward returns exp(log_probs) - posterior, the logits' gradient, as
    the gradient of log_probs: the two agree only through log_softmax)."""
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((6, 2, 5))
    targets = rng.integers(1, 5, (2, 3))
    for reduction in (None, 0, 1, 2):
        extra = () if reduction is None else (0, reduction)
        li = ignis.tensor(logits, requires_grad=True)
        lt = torch.tensor(logits, requires_grad=True)
        got = ignis.ctc_loss(li.log_softmax(-1), ignis.tensor(targets), [6, 6], [3, 2], *extra)
        want = torch.ctc_loss(lt.log_softmax(-1), torch.tensor(targets), [6, 6], [3, 2], *extra)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=1e-9)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(_np(li.grad), lt.grad.numpy(), rtol=1e-7, atol=1e-10)


# ---- top-level names programs use: constants, *_copy, cells, low-rank SVD, helpers -----------------
def test_math_constants():
    for name in ("pi", "e", "inf", "nan", "newaxis"):
        a, b = getattr(ignis, name), getattr(torch, name)
        assert (a is None and b is None) or (a == b or (a != a and b != b)), name
    x = ignis.arange(3)
    assert tuple(x[:, ignis.newaxis].shape) == (3, 1)


COPY_CASES = [
    ("alias_copy", (), {}), ("detach_copy", (), {}), ("diagonal_copy", (1, 0, 2), {}),
    ("permute_copy", ((2, 0, 1),), {}), ("select_copy", (1, 2), {}),
    ("slice_copy", (2, 1, 4, 2), {}), ("split_copy", (2, 1), {}),
    ("split_with_sizes_copy", ([1, 2], 1), {}), ("squeeze_copy", (), {}),
    ("transpose_copy", (0, 2), {}), ("unbind_copy", (1,), {}), ("unfold_copy", (2, 2, 1), {}),
    ("unsqueeze_copy", (1,), {}), ("view_copy", ((4, 3, 2),), {}),
    ("as_strided_copy", ((2, 2), (1, 2)), {}),
]


@pytest.mark.parametrize("name,args,kwargs", COPY_CASES)
def test_view_copy_functions(name, args, kwargs):
    """The *_copy forms: torch's values and gradients, in memory of their own."""
    x = RNG.standard_normal((2, 3, 4))
    xi, xt = ignis.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = getattr(ignis, name)(xi, *args, **kwargs)
    want = getattr(torch, name)(xt, *args, **kwargs)
    got_list = list(got) if isinstance(got, tuple) else [got]
    want_list = list(want) if isinstance(want, tuple) else [want]
    assert len(got_list) == len(want_list)
    for g, w in zip(got_list, want_list):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(_np(g), w.detach().numpy())
        assert g.is_contiguous()
    if name == "detach_copy":
        # torch's result claims requires_grad but its backward raises "derivative
        # for aten::detach_copy is not implemented"; ignis's is plainly detached.
        assert not got.requires_grad
    else:
        sum((g * (k + 1)).sum() for k, g in enumerate(got_list)).backward()
        sum((w * (k + 1)).sum() for k, w in enumerate(want_list)).backward()
        np.testing.assert_allclose(_np(xi.grad), xt.grad.numpy())
    # a copy: writing to it leaves the input alone
    with ignis.no_grad():
        got_list[0].fill_(123.0)
    np.testing.assert_array_equal(_np(xi), x)


def test_copy_functions_more():
    x = ignis.tensor(RNG.standard_normal((3, 1)))
    e = ignis.expand_copy(x, (3, 4))
    assert tuple(e.shape) == (3, 4) and e.stride() == (4, 1)
    assert ignis.t_copy(ignis.ones(2, 3)).is_contiguous()
    assert ignis.view_copy(ignis.ones(2, 2), ignis.int32).dtype == ignis.int32
    assert tuple(ignis.squeeze_copy(ignis.ones(1, 3, 1), (0, 2)).shape) == (3,)
    c = RNG.standard_normal((3, 2))
    np.testing.assert_array_equal(_np(ignis.view_as_complex_copy(ignis.tensor(c))),
                                  torch.view_as_complex_copy(torch.tensor(c)).numpy())
    out = ignis.empty(4, 3, dtype=ignis.float64)
    r = ignis.t_copy(ignis.tensor(RNG.standard_normal((3, 4))), out=out)
    assert r is out


@pytest.mark.parametrize("cell", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_recurrent_cells_match_torch(cell, bias):
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(cell, 1)
    shapes = [(2, 3), (2, 5), (gates * 5, 3), (gates * 5, 5)] + \
        ([(gates * 5,), (gates * 5,)] if bias else [])
    arrays = [RNG.standard_normal(s) for s in shapes]
    if cell == "lstm_cell":
        arrays.insert(2, RNG.standard_normal((2, 5)))
    ia = [ignis.tensor(a, requires_grad=True) for a in arrays]
    ta = [torch.tensor(a, requires_grad=True) for a in arrays]
    if cell == "lstm_cell":
        ia = [ia[0], (ia[1], ia[2])] + ia[3:]
        ta = [ta[0], (ta[1], ta[2])] + ta[3:]
    got = getattr(ignis, cell)(*ia)
    want = getattr(torch, cell)(*ta)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), w.detach().numpy(), rtol=1e-12, atol=1e-12)
    sum(g.sum() * (k + 2) for k, g in enumerate(got)).backward()
    sum(w.sum() * (k + 2) for k, w in enumerate(want)).backward()
    flat_i = [ia[0], *ia[1], *ia[2:]] if cell == "lstm_cell" else ia
    flat_t = [ta[0], *ta[1], *ta[2:]] if cell == "lstm_cell" else ta
    for a, b in zip(flat_i, flat_t):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(20, 15), (15, 20), (2, 12, 9)])
def test_svd_lowrank_exact_on_low_rank(shape):
    """A rank-3 matrix is recovered exactly with q >= 3; the singular values
    are torch's (and numpy's); U and V have orthonormal columns."""
    rank = 3
    left = RNG.standard_normal(shape[:-1] + (rank,))
    right = RNG.standard_normal(shape[:-2] + (rank, shape[-1]))
    A = left @ right
    ignis.manual_seed(0)
    U, S, V = ignis.svd_lowrank(ignis.tensor(A), q=4)
    q = 4
    assert tuple(U.shape) == shape[:-1] + (q,) and tuple(V.shape) == shape[:-2] + (shape[-1], q)
    recon = _np(U) @ (_np(S)[..., :, None] * np.swapaxes(_np(V), -1, -2))
    np.testing.assert_allclose(recon, A, atol=1e-10)
    np.testing.assert_allclose(_np(S)[..., :rank], np.linalg.svd(A, compute_uv=False)[..., :rank],
                               rtol=1e-10)
    _, St, _ = torch.svd_lowrank(torch.tensor(A), q=4)
    np.testing.assert_allclose(_np(S)[..., :rank], St.numpy()[..., :rank], rtol=1e-10)
    eye = np.eye(q)
    np.testing.assert_allclose(np.swapaxes(_np(U), -1, -2) @ _np(U),
                               np.broadcast_to(eye, tuple(U.shape[:-2]) + (q, q)), atol=1e-10)


def test_pca_lowrank_matches_torch_and_errors():
    X = RNG.standard_normal((30, 2)) @ RNG.standard_normal((2, 6)) + RNG.standard_normal(6)
    _, S, V = ignis.pca_lowrank(ignis.tensor(X), q=2)
    _, St, Vt = torch.pca_lowrank(torch.tensor(X), q=2)
    np.testing.assert_allclose(_np(S), St.numpy(), rtol=1e-10)
    np.testing.assert_allclose(np.abs(_np(V).T @ Vt.numpy()), np.eye(2), atol=1e-8)
    with pytest.raises(ValueError, match="q"):
        ignis.pca_lowrank(ignis.tensor(X), q=7)
    with pytest.raises(TypeError):
        ignis.svd_lowrank(X)


def test_norm_pad_layout_helpers():
    x = RNG.standard_normal((2, 3, 4))
    xi, xt = ignis.tensor(x), torch.tensor(x)
    for p, d in ((2, 0), (2, 1), (3, 2), (2, -1)):
        np.testing.assert_allclose(_np(ignis.norm_except_dim(xi, p, d)),
                                   torch.norm_except_dim(xt, p, d).numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(ignis.frobenius_norm(xi, [1, 2], True)),
                               torch.frobenius_norm(xt, [1, 2], True).numpy(), rtol=1e-12)
    np.testing.assert_allclose(_np(ignis.nuclear_norm(xi, [1, 2])),
                               torch.nuclear_norm(xt, [1, 2]).numpy(), rtol=1e-10)
    np.testing.assert_allclose(_np(ignis.nuclear_norm(xi[0])), torch.nuclear_norm(xt[0]).numpy(),
                               rtol=1e-10)
    with pytest.raises(TypeError):
        ignis.frobenius_norm(xi)
    np.testing.assert_array_equal(_np(ignis.constant_pad_nd(xi, [1, -1, 2, 0], 2.5)),
                                  torch.constant_pad_nd(xt, [1, -1, 2, 0], 2.5).numpy())
    e = ignis.empty_permuted((2, 3, 4), (0, 2, 1))
    assert tuple(e.shape) == (2, 3, 4)
    assert e.stride() == torch.empty_permuted((2, 3, 4), (0, 2, 1)).stride()
    v = RNG.standard_normal((1, 2, 7))
    gv, gi = ignis.max_pool1d_with_indices(ignis.tensor(v), 2)
    tv, ti = torch.max_pool1d_with_indices(torch.tensor(v), 2)
    np.testing.assert_array_equal(_np(gv), tv.numpy())
    np.testing.assert_array_equal(_np(gi), ti.numpy())


def test_deterministic_debug_mode_and_is_storage():
    try:
        for mode, expected in (("warn", 1), ("error", 2), (1, 1), ("default", 0), (2, 2)):
            ignis.set_deterministic_debug_mode(mode)
            assert ignis.get_deterministic_debug_mode() == expected
        assert ignis.are_deterministic_algorithms_enabled()
        with pytest.raises(RuntimeError, match="expected one of"):
            ignis.set_deterministic_debug_mode("x")
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
            ignis.set_deterministic_debug_mode(3)
    finally:
        ignis.set_deterministic_debug_mode(0)
    assert ignis.get_deterministic_debug_mode() == 0
    x = ignis.ones(2)
    assert ignis.is_storage(x.untyped_storage()) and not ignis.is_storage(x)


def test_tensor_methods_new_and_friends():
    t = ignis.randn(2, 3)
    assert tuple(t.new(2, 3).shape) == (2, 3) and t.new(2, 3).dtype == ignis.float32
    assert tuple(t.new().shape) == (0,)
    assert tuple(t.new(ignis.Size([4])).shape) == (4,)
    np.testing.assert_array_equal(_np(t.new((2, 3))), torch.randn(1).new((2, 3)).numpy())
    assert t.new([1, 2]).dtype == ignis.float32
    with pytest.raises(TypeError):
        t.new(ignis.tensor([1, 2]))
    assert t.cfloat().dtype == ignis.complex64 and t.cdouble().dtype == ignis.complex128
    assert t.to_dense() is t and not t.is_nested and not t.is_xla
    assert t.dim_order() == (0, 1) and t.permute(1, 0).dim_order() == (1, 0)
    nchw = torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)
    ig_nchw = ignis.randn(2, 3, 4, 5).to(memory_format=ignis.channels_last)
    assert ig_nchw.dim_order() == nchw.dim_order()
    assert t.const_data_ptr() == t.data_ptr()
    u = ignis.arange(6.0).reshape(2, 3)
    ut = torch.arange(6.0).reshape(2, 3)
    u.apply_(lambda v: v * v + 1)
    ut.apply_(lambda v: v * v + 1)
    np.testing.assert_array_equal(_np(u), ut.numpy())
    u.map_(ignis.tensor([1.0, 2.0, 3.0]), lambda a, b: a - b)
    ut.map_(torch.tensor([1.0, 2.0, 3.0]), lambda a, b: a - b)
    np.testing.assert_array_equal(_np(u), ut.numpy())


# ---- F.linear_cross_entropy, nn.LinearCrossEntropyLoss ------------------------------------------------
@pytest.mark.parametrize("out_features", [(), (4, 3)])
@pytest.mark.parametrize("probabilities", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_linear_cross_entropy_matches_torch(out_features, probabilities, reduction):
    n, d, c = 6, 5, 7
    x = RNG.standard_normal((n, d))
    w = RNG.standard_normal((c, *out_features, d))
    b = RNG.standard_normal((c, *out_features))
    class_weight = RNG.uniform(0.5, 2.0, c)
    if probabilities:
        logits = RNG.standard_normal((n, c, *out_features))
        target = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    else:
        target = RNG.integers(0, c, (n, *out_features))
        target.reshape(-1)[:2] = -100  # ignored (the default ignore_index None means -100)
    ii = [ignis.tensor(a, requires_grad=True) for a in (x, w, b)]
    tt = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    kwargs = dict(reduction=reduction, label_smoothing=0.1)
    got = ignis.nn.functional.linear_cross_entropy(
        ii[0], ii[1], ignis.tensor(target), linear_bias=ii[2],
        weight=ignis.tensor(class_weight), **kwargs)
    want = torch.nn.functional.linear_cross_entropy(
        tt[0], tt[1], torch.tensor(target), linear_bias=tt[2],
        weight=torch.tensor(class_weight), **kwargs)
    np.testing.assert_allclose(_np(got), want.detach().numpy(), rtol=1e-10, atol=1e-12)
    got.sum().backward()
    want.sum().backward()
    for a, t in zip(ii, tt):
        np.testing.assert_allclose(_np(a.grad), t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_linear_cross_entropy_loss_module():
    ignis.manual_seed(0)
    mi = ignis.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True,
                                         options=ignis.nn.LinearCrossEntropyOptions())
    mt = torch.nn.LinearCrossEntropyLoss(5, 10, out_features=(4, 3), bias=True,
                                         options=torch.nn.LinearCrossEntropyOptions())
    assert tuple(mi.linear.weight.shape) == tuple(mt.linear.weight.shape) == (120, 5)
    assert sorted(n for n, _ in mi.named_parameters()) == sorted(n for n, _ in mt.named_parameters())
    mt.load_state_dict({k: torch.tensor(_np(v)) for k, v in mi.state_dict().items()})
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    target = RNG.integers(0, 10, (2, 4, 3))
    np.testing.assert_allclose(_np(mi(ignis.tensor(x), ignis.tensor(target))),
                               mt(torch.tensor(x), torch.tensor(target)).detach().numpy(),
                               rtol=1e-5)
    assert "num_classes=10" in repr(mi) and "out_features=(4, 3)" in repr(mi)
    with pytest.raises(RuntimeError, match="weight shape"):
        ignis.nn.LinearCrossEntropyLoss(5, 10, weight=ignis.ones(3))
    with pytest.raises(RuntimeError, match="label_smoothing"):
        ignis.nn.LinearCrossEntropyLoss(5, 10, label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="in_features"):
        ignis.nn.functional.linear_cross_entropy(ignis.ones(2, 4), ignis.ones(3, 5),
                                                 ignis.zeros(2, dtype=ignis.int64))


# ---- optim.Muon -------------------------------------------------------------------------------------
@pytest.mark.parametrize("nesterov", [True, False])
@pytest.mark.parametrize("adjust_lr_fn", [None, "match_rms_adamw"])
def test_muon_steps_match_torch(nesterov, adjust_lr_fn):
    """Three steps on a tall and a wide matrix; the orthogonalization runs in
    bfloat16 in both, so agreement is to bfloat16's rounding of the update."""
    shapes = [(6, 4), (3, 5)]
    init = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [[RNG.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(3)]
    pi = [ignis.nn.Parameter(ignis.tensor(a)) for a in init]
    pt = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    kwargs = dict(lr=0.02, weight_decay=0.1, momentum=0.9, nesterov=nesterov,
                  adjust_lr_fn=adjust_lr_fn)
    oi, ot = ignis.optim.Muon(pi, **kwargs), torch.optim.Muon(pt, **kwargs)
    for step_grads in grads:
        for p, q, g in zip(pi, pt, step_grads):
            p.grad, q.grad = ignis.tensor(g), torch.tensor(g)
        oi.step()
        ot.step()
    for p, q, a in zip(pi, pt, init):
        moved = np.abs(q.detach().numpy() - a).max()
        assert moved > 0.01
        np.testing.assert_allclose(_np(p), q.detach().numpy(), atol=0.02 * moved)
        np.testing.assert_allclose(_np(oi.state[p]["momentum_buffer"]),
                                   ot.state[q]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6)
    assert oi.state_dict()["param_groups"][0]["nesterov"] == nesterov


def test_muon_orthogonalizes_and_rejects_bad_input():
    from ignis.optim.muon import _orthogonalize
    g = ignis.tensor(RNG.standard_normal((8, 5)).astype(np.float32))
    s = np.linalg.svd(_np(_orthogonalize(g, (3.4445, -4.7750, 2.0315), 5, 1e-7).float()),
                      compute_uv=False)
    assert s.min() > 0.4 and s.max() < 1.6  # singular values pushed towards 1
    w = ignis.nn.Parameter(ignis.ones(3, 3))
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        ignis.optim.Muon([w, ignis.nn.Parameter(ignis.ones(3))])
    with pytest.raises(ValueError, match="Learning rate"):
        ignis.optim.Muon([w], lr=-1.0)
    with pytest.raises(ValueError, match="momentum"):
        ignis.optim.Muon([w], momentum=-0.5)
    with pytest.raises(ValueError, match="not supported"):
        ignis.optim.Muon([w], adjust_lr_fn="other")


def test_nonzero_static_matches_torch():
    x = np.array([[0, 1], [2, 0], [3, 4]])
    for size, fill in ((2, -1), (6, -7), (0, -1), (4, 9)):
        got = ignis.nonzero_static(ignis.tensor(x), size=size, fill_value=fill)
        want = torch.nonzero_static(torch.tensor(x), size=size, fill_value=fill)
        assert got.dtype == ignis.int64
        np.testing.assert_array_equal(_np(got), want.numpy())
    np.testing.assert_array_equal(_np(ignis.tensor([1.0, 0.0, 2.0]).nonzero_static(size=3)),
                                  torch.tensor([1.0, 0.0, 2.0]).nonzero_static(size=3).numpy())
    assert tuple(ignis.nonzero_static(ignis.tensor(5), size=2).shape) == (2, 0)
    with pytest.raises(RuntimeError, match="non-negative"):
        ignis.nonzero_static(ignis.tensor(x), size=-1)
