"""ignis.distributions against torch.distributions: shapes, log_prob,
entropy, moments, cdf, sampling statistics, rsample gradients and argument
validation."""
import math

import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.distributions as D

torch = pytest.importorskip("torch")
TD = torch.distributions
RNG = np.random.default_rng(0)


def _close(a, b, tol=1e-6):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def _both(make, *arrays):
    return make(D, *[ignis.tensor(a) for a in arrays]), make(TD, *[torch.tensor(a) for a in arrays])


def _check_common(di, dt, value, props=("mean", "variance", "stddev", "mode")):
    assert tuple(di.batch_shape) == tuple(dt.batch_shape)
    assert tuple(di.event_shape) == tuple(dt.event_shape)
    _close(di.log_prob(ignis.tensor(value)), dt.log_prob(torch.tensor(value)))
    _close(di.entropy(), dt.entropy())
    for p in props:
        a, b = getattr(di, p), getattr(dt, p)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, equal_nan=True)
    s = di.sample((5, 2))
    assert tuple(s.shape) == tuple(dt.sample((5, 2)).shape)
    assert s.dtype == getattr(ignis, str(dt.sample().dtype).split(".")[-1])
    assert tuple(di.sample().shape) == tuple(dt.sample().shape)


def test_normal():
    loc, scale = RNG.standard_normal((3, 1)), RNG.random(4) + 0.5
    di, dt = _both(lambda m, a, b: m.Normal(a, b), loc, scale)
    v = RNG.standard_normal((2, 3, 4))
    _check_common(di, dt, v)
    _close(di.cdf(ignis.tensor(v)), dt.cdf(torch.tensor(v)))
    assert di.has_rsample and repr(di) == repr(dt).replace("torch.", "ignis.")
    # Scalars make an empty batch shape; numbers take the default dtype.
    assert D.Normal(0.0, 1.0).batch_shape == ignis.Size([])
    assert D.Normal(0.0, 1.0).sample().dtype == ignis.float32
    ignis.manual_seed(0)
    s = D.Normal(ignis.tensor([2.0]), ignis.tensor([3.0])).sample((20000,))
    assert abs(s.mean().item() - 2.0) < 0.1 and abs(s.std().item() - 3.0) < 0.1


def test_normal_rsample_differentiates():
    loc = ignis.tensor([0.5, -1.0], requires_grad=True)
    scale = ignis.tensor([2.0, 0.5], requires_grad=True)
    ignis.manual_seed(1)
    x = D.Normal(loc, scale).rsample((3,))
    x.sum().backward()
    assert loc.grad.tolist() == [3.0, 3.0]
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5)


def test_uniform():
    lo, hi = RNG.standard_normal(4), RNG.standard_normal(4) + 3
    di, dt = _both(lambda m, a, b: m.Uniform(a, b), lo, hi)
    v = lo + (hi - lo) * RNG.random((3, 4))
    _check_common(di, dt, v, props=("mean", "variance", "stddev"))
    _close(di.cdf(ignis.tensor(v)), dt.cdf(torch.tensor(v)))
    _close(di.icdf(ignis.tensor(v * 0 + 0.3)), dt.icdf(torch.tensor(v * 0 + 0.3)))
    s = di.sample((1000,))
    assert bool((s >= ignis.tensor(lo)).all()) and bool((s < ignis.tensor(hi)).all())


@pytest.mark.parametrize("by", ["probs", "logits"])
def test_bernoulli(by):
    p = RNG.random((2, 3)) * 0.8 + 0.1
    arg = p if by == "probs" else np.log(p / (1 - p))
    di, dt = _both(lambda m, a: m.Bernoulli(**{by: a}), arg)
    v = (RNG.random((4, 2, 3)) > 0.5).astype(np.float64)
    _check_common(di, dt, v)
    _close(di.probs, dt.probs)
    _close(di.logits, dt.logits)
    ignis.manual_seed(2)
    s = D.Bernoulli(ignis.tensor([0.2, 0.9])).sample((20000,))
    np.testing.assert_allclose(s.mean(0).numpy(), [0.2, 0.9], atol=0.02)
    _close(di.enumerate_support(), dt.enumerate_support())


@pytest.mark.parametrize("by", ["probs", "logits"])
def test_categorical(by):
    p = RNG.random((2, 5)) + 0.1
    arg = p if by == "probs" else np.log(p) + 1.5
    di, dt = _both(lambda m, a: m.Categorical(**{by: a}), arg)
    v = RNG.integers(0, 5, (3, 2))
    _check_common(di, dt, v)
    _close(di.probs, dt.probs)
    _close(di.logits, dt.logits)
    assert di.sample().dtype == ignis.int64
    ignis.manual_seed(3)
    s = D.Categorical(ignis.tensor([0.1, 0.0, 0.6, 0.3])).sample((20000,))
    freq = np.bincount(s.numpy(), minlength=4) / 20000
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    _close(di.enumerate_support(), dt.enumerate_support())


def test_categorical_log_prob_gradient_matches_torch():
    logits = RNG.standard_normal((3, 4))
    li = ignis.tensor(logits, requires_grad=True)
    lt = torch.tensor(logits, requires_grad=True)
    a = ignis.tensor([0, 3, 1])
    (D.Categorical(logits=li).log_prob(a) * 2 + D.Categorical(logits=li).entropy()).sum().backward()
    (TD.Categorical(logits=lt).log_prob(torch.tensor([0, 3, 1])) * 2
     + TD.Categorical(logits=lt).entropy()).sum().backward()
    _close(li.grad, lt.grad)


def test_validation_raises_like_torch():
    cases = [
        lambda m, t: m.Normal(t([0.0]), t([-1.0])),
        lambda m, t: m.Bernoulli(t([1.5])),
        lambda m, t: m.Bernoulli(probs=t([0.5]), logits=t([0.0])),
        lambda m, t: m.Categorical(probs=t([[-0.1, 1.1]])),
        lambda m, t: m.Categorical(),
        lambda m, t: m.Uniform(t([1.0]), t([0.0])),
        lambda m, t: m.Normal(t([0.0, 1.0]), t([1.0, 1.0])).log_prob(t([1.0, 2.0, 3.0])),
        lambda m, t: m.Bernoulli(t([0.5])).log_prob(t([0.5])),
        lambda m, t: m.Categorical(t([0.5, 0.5])).log_prob(t([2])),
        lambda m, t: m.Uniform(t([0.0]), t([1.0])).log_prob(t([1.5])),
    ]
    # Validation is a process-wide default in both libraries (torch's follows
    # __debug__, and other tests in the same process may turn it off).
    import ignis.distributions.distribution as ignis_distribution
    saved = (TD.Distribution._validate_args, ignis_distribution._VALIDATE_ARGS)
    TD.Distribution.set_default_validate_args(True)
    D.Distribution.set_default_validate_args(True)
    try:
        for case in cases:
            with pytest.raises(Exception) as te:
                case(TD, torch.tensor)
            with pytest.raises(type(te.value)):
                case(D, ignis.tensor)
    finally:
        TD.Distribution.set_default_validate_args(saved[0])
        D.Distribution.set_default_validate_args(saved[1])
    # Without validation the same calls go through.
    D.Normal(ignis.tensor([0.0]), ignis.tensor([-1.0]), validate_args=False)


def test_constraints_repr_as_torch():
    for name in ("real", "positive", "unit_interval", "boolean", "simplex"):
        assert repr(getattr(D.constraints, name)) == repr(getattr(TD.constraints, name))
    assert math.isnan(D.Uniform(0.0, 1.0).mode.item())


def test_reached_as_an_attribute_of_ignis_without_an_import():
    # `import torch` then `torch.distributions.X`, as scripts write it; in a
    # fresh process, so that no other test's import has loaded it.
    code = ("import sys; sys.path.insert(0, {tests!r}); import _checkout, ignis as torch\n"
            "assert 'ignis.distributions' not in sys.modules\n"
            "d = torch.distributions.Categorical(logits=torch.zeros(4))\n"
            "print(type(d).__name__, torch.distributions is sys.modules['ignis.distributions'])\n"
            "try:\n    torch.no_such_module\nexcept AttributeError as e:\n    print(e)")
    import pathlib
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c",
                        code.format(tests=str(pathlib.Path(__file__).resolve().parent))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["Categorical True",
                                     "module 'ignis' has no attribute 'no_such_module'"]
