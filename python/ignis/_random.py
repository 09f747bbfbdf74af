"""Random functions built over the random operators, each taking `generator=`.

ignis.normal and ignis.bernoulli (PyTorch's overloads), ignis.poisson, and
the in-place samplers Tensor.exponential_, geometric_, cauchy_, log_normal_
and Tensor.bernoulli (out of place, probability tensor or float). Each
transforms uniform or normal draws of the random operators (uniform_,
normal_, bernoulli_, which take the generator), so a seeded generator makes
them reproducible. As in PyTorch, they give no gradient to their parameters.
"""
import math

import numpy as np

from . import _C
from ._generator import numpy_rng

__all__ = ["normal", "bernoulli", "poisson", "binomial"]


def _ignis():
    import ignis
    return ignis


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, device=None,
           requires_grad=False):
    """Normal draws: elementwise N(mean, std) for tensor mean and/or std
    (broadcast), or a tensor of `size` for float mean and std."""
    ig = _ignis()
    with ig.no_grad():
        if _is_tensor(mean) or _is_tensor(std):
            if _is_tensor(std) and bool((std < 0).any()):
                raise RuntimeError("normal expects all elements of std >= 0.0")
            if not _is_tensor(std) and std < 0:
                raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
            like = mean if _is_tensor(mean) else std
            shape = ig.broadcast_shapes(tuple(mean.shape) if _is_tensor(mean) else (),
                                        tuple(std.shape) if _is_tensor(std) else ())
            if size is not None:
                raise RuntimeError("normal: size is only taken with float mean and std")
            z = ig.empty(shape, dtype=like.dtype, device=like.device)
            z.normal_(0.0, 1.0, generator=generator)
            r = z * std + mean
        else:
            if size is None:
                raise TypeError("normal() missing the size argument for float mean and std")
            if isinstance(size, int):
                size = (size,)
            r = ig.empty(tuple(size), dtype=dtype, device=device)
            r.normal_(float(mean), float(std), generator=generator)
    if out is not None:
        with ig.no_grad():
            out.copy_(r)
        return out
    return r.requires_grad_() if requires_grad else r


def bernoulli(input, p=None, *, generator=None, out=None):
    """0/1 draws: with probability input (a tensor of probabilities), or p."""
    ig = _ignis()
    with ig.no_grad():
        if p is not None:
            r = ig.empty_like(input).bernoulli_(float(p), generator=generator)
        else:
            if bool(((input < 0) | (input > 1)).any()):
                raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
            u = ig.empty(tuple(input.shape), dtype=input.dtype if input.is_floating_point()
                         else ig.float32, device=input.device)
            u.uniform_(0.0, 1.0, generator=generator)
            r = (u < input).to(input.dtype)
    if out is not None:
        with ig.no_grad():
            out.copy_(r)
        return out
    return r


def poisson(input, generator=None):
    """Poisson draws with rates `input` (NumPy's sampler, seeded from the generator)."""
    ig = _ignis()
    if bool((input < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    rates = input.detach().to(ig.float64).numpy()
    draws = numpy_rng(generator).poisson(rates).astype(rates.dtype)
    return ig.from_numpy(draws).to(input.dtype)


def binomial(count, prob, generator=None):
    """Binomial draws: successes in `count` trials of probability `prob`
    (broadcast together; NumPy's sampler, seeded from the generator). As
    torch's: count must be floating point; a count <= 0 gives 0 and a
    probability above 1 counts every trial."""
    ig = _ignis()
    if not count.is_floating_point():
        from ._tensor import _legacy_name
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_legacy_name(count.dtype)}")
    count, prob = ig.broadcast_tensors(count, prob)
    n = count.detach().to(ig.float64).numpy()
    p = prob.detach().to(ig.float64).numpy()
    bad = np.isnan(n) | np.isnan(p)
    trials = np.where(bad, 0, np.floor(np.clip(n, 0, None))).astype(np.int64)
    draws = numpy_rng(generator).binomial(trials, np.where(bad, 0.0, np.clip(p, 0.0, 1.0)))
    draws = np.where(bad, np.nan, draws)
    return ig.from_numpy(draws).to(count.dtype)


# ---- in-place samplers as Tensor methods ----------------------------------------------------
def _uniform(self, generator):
    return self.uniform_(0.0, 1.0, generator=generator)


def exponential_(self, lambd=1.0, *, generator=None):
    """Exponential(lambd) draws, in place."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    ig = _ignis()
    with ig.no_grad():
        u = _uniform(ig.empty_like(self, dtype=ig.float64), generator)
        self.copy_(-ig.log1p(-u) / lambd)
    return self


def geometric_(self, p, *, generator=None):
    """Geometric(p) draws (number of trials to the first success), in place."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    ig = _ignis()
    with ig.no_grad():
        u = _uniform(ig.empty_like(self, dtype=ig.float64), generator)
        self.copy_(ig.ceil(ig.log1p(-u) / math.log1p(-p)).clamp(min=1))
    return self


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Cauchy(median, sigma) draws, in place."""
    ig = _ignis()
    with ig.no_grad():
        u = _uniform(ig.empty_like(self, dtype=ig.float64), generator)
        self.copy_(median + sigma * ig.tan(math.pi * (u - 0.5)))
    return self


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of Normal(mean, std) draws, in place."""
    ig = _ignis()
    with ig.no_grad():
        self.normal_(mean, std, generator=generator).exp_()
    return self


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


def install(tensor_cls):
    for f in (exponential_, geometric_, cauchy_, log_normal_):
        setattr(tensor_cls, f.__name__, f)
    tensor_cls.bernoulli = _bernoulli_method
