"""The distributions beyond Normal/Bernoulli/Categorical/Uniform, their
transforms and kl_divergence, against torch.distributions on the same
parameters and values (float64): shapes, log_prob, entropy, moments,
cdf/icdf, expand, sampling statistics, rsample gradients (the implicit
gamma gradient against torch's and a high-precision reference) and
argument validation."""
import math

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions
RNG = np.random.default_rng(0)
BATCH = (2, 3)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, tol=1e-6):
    assert tuple(a.shape) == tuple(b.shape), (tuple(a.shape), tuple(b.shape))
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def _pos(*shape, low=0.5, high=3.0):
    return RNG.uniform(low, high, shape)


def _real(*shape):
    return RNG.standard_normal(shape)


def _simplex(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(-1, keepdims=True)


def _spd(n, batch=()):
    a = RNG.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tril(n, batch=()):
    return np.linalg.cholesky(_spd(n, batch))


def _t(lib, a):
    return lib.tensor(a, dtype=lib.float64)


# name -> (builder(lib, params), params as numpy)
CASES = {
    "Exponential": (lambda L, P: L.distributions.Exponential(_t(L, P[0])), [_pos(*BATCH)]),
    "Laplace": (lambda L, P: L.distributions.Laplace(_t(L, P[0]), _t(L, P[1])),
                [_real(*BATCH), _pos(*BATCH)]),
    "Cauchy": (lambda L, P: L.distributions.Cauchy(_t(L, P[0]), _t(L, P[1])),
               [_real(*BATCH), _pos(*BATCH)]),
    "LogNormal": (lambda L, P: L.distributions.LogNormal(_t(L, P[0]), _t(L, P[1])),
                  [_real(*BATCH), _pos(*BATCH)]),
    "HalfNormal": (lambda L, P: L.distributions.HalfNormal(_t(L, P[0])), [_pos(*BATCH)]),
    "LogNormalNarrow": (lambda L, P: L.distributions.LogNormal(_t(L, P[0]), _t(L, P[1])),
                        [_real(*BATCH), _pos(*BATCH, low=0.1, high=0.4)]),
    "Gamma": (lambda L, P: L.distributions.Gamma(_t(L, P[0]), _t(L, P[1])),
              [_pos(*BATCH, low=0.3, high=5.0), _pos(*BATCH)]),
    "Beta": (lambda L, P: L.distributions.Beta(_t(L, P[0]), _t(L, P[1])),
             [_pos(*BATCH, low=0.4), _pos(*BATCH, low=0.4)]),
    "Dirichlet": (lambda L, P: L.distributions.Dirichlet(_t(L, P[0])),
                  [_pos(*BATCH, 4, low=0.4)]),
    "Poisson": (lambda L, P: L.distributions.Poisson(_t(L, P[0])), [_pos(*BATCH, high=8.0)]),
    "Binomial": (lambda L, P: L.distributions.Binomial(10, _t(L, P[0])),
                 [RNG.uniform(0.05, 0.95, BATCH)]),
    "BinomialLogits": (lambda L, P: L.distributions.Binomial(_t(L, P[1]), logits=_t(L, P[0])),
                       [_real(*BATCH), RNG.integers(3, 9, BATCH).astype(float)]),
    "Geometric": (lambda L, P: L.distributions.Geometric(_t(L, P[0])),
                  [RNG.uniform(0.1, 0.9, BATCH)]),
    "GeometricLogits": (lambda L, P: L.distributions.Geometric(logits=_t(L, P[0])),
                        [_real(*BATCH)]),
    "OneHotCategorical": (lambda L, P: L.distributions.OneHotCategorical(_t(L, P[0])),
                          [_simplex(*BATCH, 4)]),
    "RelaxedOneHotCategorical": (
        lambda L, P: L.distributions.RelaxedOneHotCategorical(_t(L, P[1]), logits=_t(L, P[0])),
        [_real(*BATCH, 4), np.array(0.7)]),
    "RelaxedBernoulli": (lambda L, P: L.distributions.RelaxedBernoulli(_t(L, P[1]),
                                                                       _t(L, P[0])),
                         [RNG.uniform(0.1, 0.9, BATCH), np.array(0.5)]),
    "StudentT": (lambda L, P: L.distributions.StudentT(_t(L, P[0]), _t(L, P[1]), _t(L, P[2])),
                 [np.array([[0.8, 1.5, 2.0], [3.0, 4.5, 30.0]]), _real(*BATCH),
                  _pos(*BATCH)]),
    "MVNCov": (lambda L, P: L.distributions.MultivariateNormal(
        _t(L, P[0]), covariance_matrix=_t(L, P[1])), [_real(*BATCH, 3), _spd(3, BATCH)]),
    "MVNPrecision": (lambda L, P: L.distributions.MultivariateNormal(
        _t(L, P[0]), precision_matrix=_t(L, P[1])), [_real(3, 3), _spd(3, (2, 1))]),
    "MVNTril": (lambda L, P: L.distributions.MultivariateNormal(
        _t(L, P[0]), scale_tril=_t(L, P[1])), [_real(3), _tril(3, BATCH)]),
    "Independent": (lambda L, P: L.distributions.Independent(
        L.distributions.Normal(_t(L, P[0]), _t(L, P[1])), 1), [_real(*BATCH), _pos(*BATCH)]),
    "TransformedAffineExp": (lambda L, P: L.distributions.TransformedDistribution(
        L.distributions.Normal(_t(L, P[0]), _t(L, P[1])),
        [L.distributions.transforms.AffineTransform(_t(L, P[2]), _t(L, P[1])),
         L.distributions.transforms.ExpTransform()]),
        [_real(*BATCH), _pos(*BATCH), _real(*BATCH)]),
    "TransformedNegAffine": (lambda L, P: L.distributions.TransformedDistribution(
        L.distributions.Normal(_t(L, P[0]), _t(L, P[1])),
        [L.distributions.transforms.AffineTransform(1.5, -2.0)]), [_real(*BATCH), _pos(*BATCH)]),
    "TransformedSigmoidTanh": (lambda L, P: L.distributions.TransformedDistribution(
        L.distributions.Normal(_t(L, P[0]), _t(L, P[1])),
        L.distributions.transforms.ComposeTransform(
            [L.distributions.transforms.TanhTransform(),
             L.distributions.transforms.AffineTransform(0.0, 0.5),
             L.distributions.transforms.SigmoidTransform()])), [_real(*BATCH), _pos(*BATCH)]),
    "TransformedStickBreaking": (lambda L, P: L.distributions.TransformedDistribution(
        L.distributions.Normal(_t(L, P[0]), _t(L, P[1])),
        L.distributions.transforms.StickBreakingTransform()), [_real(*BATCH), _pos(*BATCH)]),
    "TransformedPower": (lambda L, P: L.distributions.TransformedDistribution(
        L.distributions.Gamma(_t(L, P[0]), _t(L, P[1])),
        L.distributions.transforms.PowerTransform(_t(L, P[2]))),
        [_pos(*BATCH), _pos(*BATCH), _pos(3, low=0.5, high=2.0)]),
    "MixtureSameFamily": (lambda L, P: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(_t(L, P[0])),
        L.distributions.Normal(_t(L, P[1]), _t(L, P[2]))),
        [_simplex(2, 4), _real(2, 4), _pos(2, 4)]),
    "MixtureMVN": (lambda L, P: L.distributions.MixtureSameFamily(
        L.distributions.Categorical(logits=_t(L, P[0])),
        L.distributions.Independent(L.distributions.Normal(_t(L, P[1]), _t(L, P[2])), 1)),
        [_real(4), _real(4, 2), _pos(4, 2)]),
}


def _pair(name):
    build, params = CASES[name]
    return build(ignis, params), build(torch, params)


def _torch_or_none(fn):
    try:
        return fn()
    except NotImplementedError:
        return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_torch(name):
    torch.manual_seed(0)
    di, dt = _pair(name)
    assert tuple(di.batch_shape) == tuple(dt.batch_shape)
    assert tuple(di.event_shape) == tuple(dt.event_shape)
    assert di.has_rsample == dt.has_rsample
    values = dt.sample((5,))
    vi = ignis.tensor(values.numpy())
    assert bool(dt.support.check(values).all())
    assert bool(di.support.check(vi).all())
    _close(di.log_prob(vi), dt.log_prob(values))
    for attr in ("mean", "variance", "stddev", "mode"):
        want = _torch_or_none(lambda: getattr(dt, attr))
        if want is not None:
            _close(getattr(di, attr), want)
    want = _torch_or_none(dt.entropy)
    if want is not None:
        _close(di.entropy(), want)
    want = _torch_or_none(lambda: dt.cdf(values))
    if want is not None:
        _close(di.cdf(vi), want)
        probs = torch.tensor(RNG.uniform(0.05, 0.95, tuple(want.shape)))
        want_icdf = _torch_or_none(lambda: dt.icdf(probs))
        if want_icdf is not None:
            _close(di.icdf(ignis.tensor(probs.numpy())), want_icdf)
    # sampling shapes, rsample where torch has it
    shape = (4, 2) + tuple(dt.batch_shape) + tuple(dt.event_shape)
    assert tuple(di.sample((4, 2)).shape) == shape
    if dt.has_rsample:
        assert tuple(di.rsample((4, 2)).shape) == shape
    # expand: a new leading batch dim
    new_batch = (5,) + tuple(dt.batch_shape)
    ei, et = di.expand(new_batch), dt.expand(new_batch)
    assert tuple(ei.batch_shape) == tuple(et.batch_shape)
    assert tuple(ei.sample().shape) == tuple(et.sample().shape)
    _close(ei.log_prob(vi[0]), et.log_prob(values[0]))


def _moments_check(dist_i, mean, var, n=40000, k=5.0):
    """Sample mean within k standard errors; sample variance within k of its
    standard error (estimated from the fourth moment)."""
    x = _np(dist_i.sample((n,))).astype(np.float64)
    mean, var = _np(mean), _np(var)
    se_mean = np.sqrt(var / n)
    assert np.all(np.abs(x.mean(0) - mean) < k * se_mean + 1e-12), (x.mean(0), mean)
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    se_var = np.sqrt(np.maximum(m4 - var ** 2, 0) / n)
    assert np.all(np.abs(x.var(0) - var) < k * se_var + 1e-12), (x.var(0), var)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet", "Poisson", "Binomial",
                                  "Geometric", "Exponential", "Laplace", "LogNormalNarrow",
                                  "HalfNormal", "MVNCov", "MixtureSameFamily"])
def test_sample_moments(name):
    ignis.manual_seed(1)
    di, dt = _pair(name)
    _moments_check(di, dt.mean, dt.variance)


def test_gamma_sampler_small_and_large_concentration():
    ignis.manual_seed(2)
    conc = ignis.tensor([0.05, 0.3, 0.9, 1.0, 4.0, 150.0], dtype=ignis.float64)
    d = D.Gamma(conc, ignis.tensor(2.0, dtype=ignis.float64))
    _moments_check(d, d.mean, d.variance, n=60000)
    # Kolmogorov-Smirnov distance of the draws against the exact cdf
    x = d.sample((4000,))
    u = np.sort(_np(d.cdf(x)), axis=0)
    grid = (np.arange(1, 4001) / 4000.0)[:, None]
    assert np.abs(u - grid).max() < 1.8 / math.sqrt(4000)  # ~0.3% false alarm


def test_gamma_cdf_and_gradient_against_torch():
    a = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 40.0, 300.0, 2.0, 2.0])
    x = np.array([0.01, 0.5, 1.0, 1.0, 12.0, 38.0, 330.0, 1e-5, 30.0])
    ai, xi = _t(ignis, a), _t(ignis, x)
    # torch's gammainc is good to about 1e-9 here (ours to 1e-14: see below)
    _close(D.Gamma(ai, 1.0).cdf(xi), torch.special.gammainc(torch.tensor(a), torch.tensor(x)),
           tol=1e-8)
    from ignis.distributions._gamma import standard_gamma_grad
    mine = _np(standard_gamma_grad(ai, xi))
    # torch's gradient is an approximation accurate to about 1e-3
    theirs = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(mine, theirs, rtol=2e-3)


def test_gamma_gradient_against_high_precision_reference():
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    from ignis.distributions._gamma import standard_gamma_grad
    for a, x in [(2.0, 30.0), (7.0, 12.0), (0.3, 0.5), (0.05, 1e-4), (300.0, 330.0)]:
        d_cdf = mp.diff(lambda s: mp.gammainc(s, 0, x, regularized=True), a)
        pdf = mp.e ** (-x) * mp.mpf(x) ** (a - 1) / mp.gamma(a)
        want = float(-d_cdf / pdf)
        got = standard_gamma_grad(_t(ignis, [a]), _t(ignis, [x])).item()
        assert abs(got / want - 1) < 1e-7, (a, x, got, want)
        cdf = D.Gamma(_t(ignis, [a]), 1.0).cdf(_t(ignis, [x])).item()
        assert abs(cdf - float(mp.gammainc(a, 0, x, regularized=True))) < 1e-13


def test_gamma_rsample_gradients():
    ignis.manual_seed(3)
    conc = _t(ignis, [0.5, 2.0, 9.0]).requires_grad_(True)
    rate = _t(ignis, [1.5, 0.5, 3.0]).requires_grad_(True)
    x = D.Gamma(conc, rate).rsample((2,))
    x.sum().backward()
    # d(x)/d(rate) = -x / rate; d(x)/d(conc) = standard_gamma_grad(conc, x * rate) / rate
    xs = x.detach()
    np.testing.assert_allclose(_np(rate.grad), _np((-xs / rate.detach()).sum(0)), rtol=1e-10)
    std = xs * rate.detach()
    want = torch._standard_gamma_grad(torch.tensor(_np(conc)).expand(2, 3),
                                      torch.tensor(_np(std))) / torch.tensor(_np(rate))
    np.testing.assert_allclose(_np(conc.grad), want.sum(0).numpy(), rtol=2e-3)


@pytest.mark.parametrize("kind", ["Beta", "Dirichlet", "StudentT"])
def test_reparameterized_gradients_in_expectation(kind):
    """d/dtheta E[f(x)] estimated by the mean of rsample gradients, against
    the closed-form derivative of a moment (autograd through torch's formula)."""
    ignis.manual_seed(4)
    n = 40000
    if kind == "Beta":
        p = np.array([0.7, 2.0])
        build = lambda L, c: L.distributions.Beta(c[0], c[1])  # noqa: E731
        moment = lambda d: d.mean  # noqa: E731
        f = lambda x: x  # noqa: E731
    elif kind == "Dirichlet":
        p = np.array([0.6, 1.5, 3.0])
        build = lambda L, c: L.distributions.Dirichlet(c)  # noqa: E731
        moment = lambda d: (d.variance + d.mean ** 2)[..., 0]  # noqa: E731
        f = lambda x: x[..., 0] ** 2  # noqa: E731
    else:
        p = np.array([5.0, 0.3, 1.2])
        build = lambda L, c: L.distributions.StudentT(c[0], c[1], c[2])  # noqa: E731
        moment = lambda d: d.variance + d.mean ** 2  # noqa: E731
        f = lambda x: x ** 2  # noqa: E731
    ct = torch.tensor(p, requires_grad=True)
    moment(build(torch, ct)).backward()
    # The estimate is the mean over chunks; its standard error comes from
    # the chunks' spread (5 standard errors: ~0.2% false alarms at 7 dof).
    chunks = 8
    grads = []
    for k in range(chunks):
        ck = _t(ignis, p).requires_grad_(True)
        f(build(ignis, ck).rsample((n // chunks,))).mean().backward()
        grads.append(_np(ck.grad))
    grads = np.array(grads)
    se = grads.std(0, ddof=1) / math.sqrt(chunks)
    np.testing.assert_array_less(np.abs(grads.mean(0) - ct.grad.numpy()), 5 * se + 1e-6)


def test_rsample_gradients_of_location_scale_families_match_torch_formula():
    """For a fixed draw, d sample / d loc = 1 and d sample / d scale = (x - loc) / scale."""
    for cls in ("Laplace", "Cauchy", "Normal"):
        loc = _t(ignis, [0.3, -1.0]).requires_grad_(True)
        scale = _t(ignis, [2.0, 0.5]).requires_grad_(True)
        x = getattr(D, cls)(loc, scale).rsample((3,))
        x.sum().backward()
        np.testing.assert_allclose(_np(loc.grad), [3.0, 3.0])
        np.testing.assert_allclose(_np(scale.grad),
                                   _np(((x.detach() - loc.detach()) / scale.detach()).sum(0)))


# --- kl_divergence ------------------------------------------------------------------

KL_PAIRS = {
    "Normal": lambda L, a, b, c, d: (L.distributions.Normal(a, b), L.distributions.Normal(c, d)),
    "Laplace": lambda L, a, b, c, d: (L.distributions.Laplace(a, b),
                                      L.distributions.Laplace(c, d)),
    "Cauchy": lambda L, a, b, c, d: (L.distributions.Cauchy(a, b), L.distributions.Cauchy(c, d)),
    "Exponential": lambda L, a, b, c, d: (L.distributions.Exponential(b),
                                          L.distributions.Exponential(d)),
    "Gamma": lambda L, a, b, c, d: (L.distributions.Gamma(b, d), L.distributions.Gamma(d, b)),
    "Beta": lambda L, a, b, c, d: (L.distributions.Beta(b, d), L.distributions.Beta(d, b + 1)),
    "Poisson": lambda L, a, b, c, d: (L.distributions.Poisson(b), L.distributions.Poisson(d)),
    "Uniform": lambda L, a, b, c, d: (L.distributions.Uniform(a, a + b),
                                      L.distributions.Uniform(a - d, a + b + c.abs())),
    "UniformInf": lambda L, a, b, c, d: (L.distributions.Uniform(a, a + b),
                                         L.distributions.Uniform(c, c + d)),
    "Bernoulli": lambda L, a, b, c, d: (L.distributions.Bernoulli(logits=a),
                                        L.distributions.Bernoulli(logits=c)),
    "Geometric": lambda L, a, b, c, d: (L.distributions.Geometric(logits=a),
                                        L.distributions.Geometric(logits=c)),
    "Binomial": lambda L, a, b, c, d: (L.distributions.Binomial(7, logits=a),
                                       L.distributions.Binomial(7, logits=c)),
    "Independent": lambda L, a, b, c, d: (
        L.distributions.Independent(L.distributions.Normal(a, b), 1),
        L.distributions.Independent(L.distributions.Normal(c, d), 1)),
    "LogNormal": lambda L, a, b, c, d: (L.distributions.LogNormal(a, b),
                                        L.distributions.LogNormal(c, d)),
    "HalfNormal": lambda L, a, b, c, d: (L.distributions.HalfNormal(b),
                                         L.distributions.HalfNormal(d)),
    "ExponentialGamma": lambda L, a, b, c, d: (L.distributions.Exponential(b),
                                               L.distributions.Gamma(d, b)),
    "NormalLaplace": lambda L, a, b, c, d: (L.distributions.Normal(a, b),
                                            L.distributions.Laplace(c, d)),
}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_against_torch(name):
    arrays = [_real(*BATCH), _pos(*BATCH), _real(*BATCH), _pos(*BATCH)]
    pi, qi = KL_PAIRS[name](ignis, *[_t(ignis, a) for a in arrays])
    pt, qt = KL_PAIRS[name](torch, *[torch.tensor(a) for a in arrays])
    got, want = D.kl_divergence(pi, qi), TD.kl_divergence(pt, qt)
    _close(got, want)


def test_kl_of_vector_distributions():
    for build, params in [
        (lambda L, P: (L.distributions.Categorical(_t(L, P[0])),
                       L.distributions.Categorical(logits=_t(L, P[1]))),
         [_simplex(*BATCH, 4), _real(*BATCH, 4)]),
        (lambda L, P: (L.distributions.OneHotCategorical(_t(L, P[0])),
                       L.distributions.OneHotCategorical(logits=_t(L, P[1]))),
         [_simplex(*BATCH, 4), _real(*BATCH, 4)]),
        (lambda L, P: (L.distributions.Dirichlet(_t(L, P[0])),
                       L.distributions.Dirichlet(_t(L, P[1]))),
         [_pos(*BATCH, 4), _pos(*BATCH, 4)]),
        (lambda L, P: (L.distributions.MultivariateNormal(_t(L, P[0]), _t(L, P[1])),
                       L.distributions.MultivariateNormal(_t(L, P[2]), scale_tril=_t(L, P[3]))),
         [_real(*BATCH, 3), _spd(3, BATCH), _real(3), _tril(3, (3,))]),
    ]:
        (pi, qi), (pt, qt) = build(ignis, params), build(torch, params)
        _close(D.kl_divergence(pi, qi), TD.kl_divergence(pt, qt))


def test_register_kl_and_missing_pair():
    class MyNormal(D.Normal):
        pass

    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Poisson(ignis.tensor([1.0])), D.Normal(0.0, 1.0))
    # a subclass uses its parent's registration until it has its own
    p, q = MyNormal(0.0, 1.0), MyNormal(1.0, 2.0)
    base = D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 2.0))
    assert D.kl_divergence(p, q).item() == base.item()

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return ignis.tensor(42.0)

    assert D.kl_divergence(p, q).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), q).item() == base.item()
    with pytest.raises(TypeError):
        D.register_kl(int, MyNormal)


# --- transforms -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ExpTransform", "SigmoidTransform", "TanhTransform",
                                  "AffineTransform", "PowerTransform", "SoftmaxTransform",
                                  "StickBreakingTransform", "ComposeTransform"])
def test_transforms_against_torch(name):
    def make(L):
        T = L.distributions.transforms
        if name == "AffineTransform":
            return T.AffineTransform(_t(L, [0.5, -1.0, 2.0]), _t(L, [2.0, -0.5, 3.0]))
        if name == "PowerTransform":
            return T.PowerTransform(_t(L, 1.7))
        if name == "ComposeTransform":
            return T.ComposeTransform([T.AffineTransform(0.3, 2.0), T.ExpTransform(),
                                       T.PowerTransform(_t(L, 0.5))])
        return getattr(T, name)()
    ti, tt = make(ignis), make(torch)
    a = _real(4, 3) if name != "PowerTransform" else _pos(4, 3)
    xi, xt = _t(ignis, a), torch.tensor(a)
    yi, yt = ti(xi), tt(xt)
    _close(yi, yt, tol=1e-10)
    _close(ti.inv(yi), tt.inv(yt), tol=1e-8)
    assert ti.domain.event_dim == tt.domain.event_dim
    assert ti.codomain.event_dim == tt.codomain.event_dim
    assert tuple(ti.forward_shape((4, 3))) == tuple(tt.forward_shape((4, 3)))
    if name != "SoftmaxTransform":
        _close(ti.log_abs_det_jacobian(xi, yi), tt.log_abs_det_jacobian(xt, yt), tol=1e-10)
        _close(ti.inv.log_abs_det_jacobian(yi, xi), tt.inv.log_abs_det_jacobian(yt, xt),
               tol=1e-10)


def test_lognormal_rsample_gradient_and_relaxed_rsample_shapes():
    loc = _t(ignis, [0.1, 0.4]).requires_grad_(True)
    scale = _t(ignis, [0.3, 1.2]).requires_grad_(True)
    y = D.LogNormal(loc, scale).rsample((5,))
    y.sum().backward()
    np.testing.assert_allclose(_np(loc.grad), _np(y.detach().sum(0)), rtol=1e-10)
    logits = _t(ignis, _real(2, 4)).requires_grad_(True)
    s = D.RelaxedOneHotCategorical(ignis.tensor(0.5, dtype=ignis.float64),
                                   logits=logits).rsample((3,))
    assert tuple(s.shape) == (3, 2, 4)
    np.testing.assert_allclose(_np(s.sum(-1)), np.ones((3, 2)), atol=1e-12)
    (s[..., 0]).sum().backward()
    assert logits.grad is not None and bool((logits.grad != 0).any())


def test_validate_args_errors_like_torch():
    bad = [
        lambda L: L.distributions.Exponential(L.tensor([-1.0])),
        lambda L: L.distributions.Gamma(L.tensor([1.0]), L.tensor([0.0])),
        lambda L: L.distributions.Beta(L.tensor([-0.5]), L.tensor([1.0])),
        lambda L: L.distributions.Dirichlet(L.tensor([1.0, -1.0])),
        lambda L: L.distributions.Poisson(L.tensor([-2.0])),
        lambda L: L.distributions.Geometric(L.tensor([0.0])),
        lambda L: L.distributions.Laplace(L.tensor([0.0]), L.tensor([-1.0])),
        lambda L: L.distributions.StudentT(L.tensor([-1.0])),
        lambda L: L.distributions.HalfNormal(L.tensor([-1.0])),
        lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0],
                                                                         [2.0, 1.0]])),
        lambda L: L.distributions.MultivariateNormal(L.zeros(2), L.eye(2), scale_tril=L.eye(2)),
        lambda L: L.distributions.Exponential(L.tensor([1.0])).log_prob(L.tensor([-1.0])),
        lambda L: L.distributions.Poisson(L.tensor([1.0])).log_prob(L.tensor([1.5])),
        lambda L: L.distributions.Binomial(5, L.tensor([0.5])).log_prob(L.tensor([6.0])),
        lambda L: L.distributions.Dirichlet(L.ones(3)).log_prob(L.tensor([0.5, 0.6, 0.1])),
        lambda L: L.distributions.OneHotCategorical(L.ones(3) / 3).log_prob(L.tensor([1., 1, 0])),
    ]
    # Validation is a process-wide default in both libraries, and torch's is
    # off after other tests in the same process (torch.compile's imports):
    # on for this test, restored after.
    import ignis.distributions.distribution as ignis_distribution
    saved = (torch.distributions.Distribution._validate_args, ignis_distribution._VALIDATE_ARGS)
    torch.distributions.Distribution.set_default_validate_args(True)
    D.Distribution.set_default_validate_args(True)
    try:
        for make in bad:
            with pytest.raises(ValueError):
                make(torch)
            with pytest.raises(ValueError):
                make(ignis)
    finally:
        torch.distributions.Distribution.set_default_validate_args(saved[0])
        D.Distribution.set_default_validate_args(saved[1])
    # validate_args=False lets them through
    D.Exponential(ignis.tensor([-1.0]), validate_args=False)


def test_binomial_enumerate_support_and_entropy():
    di, dt = _pair("Binomial")
    _close(di.enumerate_support(), dt.enumerate_support())
    _close(di.entropy(), dt.entropy())
    with pytest.raises(NotImplementedError):
        D.Binomial(ignis.tensor([2.0, 3.0]), ignis.tensor([0.5, 0.5])).entropy()
    oi, ot = _pair("OneHotCategorical")
    _close(oi.enumerate_support(), ot.enumerate_support())
