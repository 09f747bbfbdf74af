"""Double backward through convolutions (Note [The convolution's double
backward], ops/conv.cpp): convolution_backward's own derivative, checked
numerically (gradgradcheck, float64: the gradients of the input, weight and
the upstream gradient) over 1-, 2- and 3-D, strided, dilated, grouped and
transposed convolutions; WGAN-GP's gradient penalty on a small conv net
against torch (the parameters' gradients after the penalty's backward), a
third derivative against torch, and the same penalty on the GPU where there
is one.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis
import ignis.nn.functional as IF

# (fn, input shape, weight shape, kwargs): small, so that the numerical
# Jacobians of gradgradcheck stay cheap
CASES = [
    ("conv2d", (2, 2, 5, 5), (3, 2, 3, 3), {"padding": 1}),
    ("conv2d", (1, 4, 6, 5), (4, 2, 3, 2), {"stride": 2, "padding": (1, 0), "groups": 2}),
    ("conv2d", (1, 2, 7, 7), (2, 2, 3, 3), {"stride": (2, 1), "dilation": 2, "padding": 2}),
    ("conv2d", (2, 3, 4, 4), (2, 3, 1, 1), {}),
    ("conv1d", (2, 2, 9), (3, 2, 3), {"stride": 2, "padding": 1}),
    ("conv3d", (1, 2, 3, 4, 3), (2, 2, 2, 2, 2), {"padding": 1}),
    ("conv_transpose2d", (1, 3, 3, 3), (3, 2, 3, 3), {"stride": 2, "padding": 1,
                                                      "output_padding": 1}),
    ("conv_transpose2d", (1, 4, 3, 4), (4, 1, 2, 2), {"stride": 2, "groups": 2}),
    ("conv_transpose1d", (2, 2, 5), (2, 3, 3), {"stride": 3, "dilation": 2}),
]


def _rand(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    return ignis.from_numpy(a).requires_grad_()


def _bias_size(fn, w_shape, kw):
    return w_shape[1] * kw.get("groups", 1) if "transpose" in fn else w_shape[0]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}")
def test_gradgradcheck(case):
    fn, xs, ws, kw = case
    x, w = _rand(xs, 1), _rand(ws, 2)
    b = _rand((_bias_size(fn, ws, kw),), 3)
    conv = getattr(IF, fn)
    # a nonlinearity after the convolution, so that the second derivative
    # reaches the input and the weight through convolution_backward
    assert ignis.autograd.gradgradcheck(lambda x, w, b: conv(x, w, b, **kw).tanh(), (x, w, b))
    # and the bare convolution: its second derivative mixes gO with x and w only
    assert ignis.autograd.gradgradcheck(lambda x, w: conv(x, w, None, **kw), (x, w))


@pytest.mark.parametrize("which", ["input", "weight"])
def test_only_one_argument_needs_gradients(which):
    """convolution_backward runs with a partial output mask: its derivative
    sees None for the gradients it did not compute."""
    x, w = _rand((2, 2, 5, 5), 4), _rand((3, 2, 3, 3), 5)
    (x if which == "weight" else w).requires_grad_(False)
    assert ignis.autograd.gradgradcheck(
        lambda x, w: IF.conv2d(x, w, padding=1, stride=2).sin(), (x, w))


def test_a_penalty_through_a_convolution_reaches_its_weight():
    """The penalty's backward through a convolution no longer raises the
    missing-derivative error it raised before."""
    x, w = _rand((1, 2, 5, 5), 6), _rand((2, 2, 3, 3), 7)
    (g,) = ignis.autograd.grad(IF.conv2d(x, w).pow(2).sum(), x, create_graph=True)
    g.pow(2).sum().backward()
    # d/dw of sum(g^2) where g = conv_transpose(2*conv(x, w), w): nonzero
    assert float(w.grad.abs().sum()) > 0


def _penalty_net(mod, seed, device="cpu"):
    """A WGAN-GP critic's weights, drawn by NumPy, as `mod` tensors."""
    rng = np.random.default_rng(seed)
    shapes = {"w1": (4, 3, 3, 3), "b1": (4,), "w2": (4, 2, 4, 4), "b2": (2,),
              "w3": (5, 2, 3, 3), "b3": (5,), "w4": (1, 5 * 4 * 4), "b4": (1,)}
    return {k: mod.tensor(rng.standard_normal(s) * 0.3, dtype=mod.float32,
                          device=device).requires_grad_() for k, s in shapes.items()}


def _critic(F, p, x):
    h = F.leaky_relu(F.conv2d(x, p["w1"], p["b1"], stride=2, padding=1), 0.2)
    # one smooth activation: a piecewise-linear critic's input gradient is
    # locally constant, and the penalty would not reach the samples
    h = F.elu(F.conv_transpose2d(h, p["w2"], p["b2"], stride=2, padding=1))
    h = F.leaky_relu(F.conv2d(h, p["w3"], p["b3"], stride=2, padding=1, groups=1), 0.2)
    return F.linear(h.flatten(1), p["w4"], p["b4"])


def _gradient_penalty(mod, F, device="cpu"):
    """WGAN-GP: the critic's gradient at points between real and fake
    samples, penalized towards norm 1; returns its value and the parameters'
    and the samples' gradients after its backward."""
    rng = np.random.default_rng(11)
    real = mod.tensor(rng.standard_normal((3, 3, 8, 8)), dtype=mod.float32, device=device)
    fake = mod.tensor(rng.standard_normal((3, 3, 8, 8)), dtype=mod.float32,
                      device=device).requires_grad_()
    alpha = mod.tensor(rng.uniform(size=(3, 1, 1, 1)), dtype=mod.float32, device=device)
    p = _penalty_net(mod, 12, device)
    mixed = alpha * real + (1 - alpha) * fake
    score = _critic(F, p, mixed)
    (g,) = mod.autograd.grad(score.sum(), mixed, create_graph=True)
    penalty = ((g.flatten(1).norm(dim=1) - 1) ** 2).mean()
    penalty.backward()
    # A parameter the penalty reaches only through leaky_relu's mask (b3):
    # torch's derivative formula gives it zeros, ignis's none.
    return [penalty, fake.grad] + [p[k].grad if p[k].grad is not None else
                                   mod.zeros_like(p[k]) for k in sorted(p)]


def _np(t):
    return t.detach().cpu().double().numpy()


def test_wgan_gp_penalty_matches_torch():
    torch = pytest.importorskip("torch")
    got = _gradient_penalty(ignis, IF)
    want = _gradient_penalty(torch, torch.nn.functional)
    assert float(got[1].abs().sum()) > 0  # the samples' gradient, through the penalty
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), _np(b), rtol=2e-4, atol=2e-5)


def test_third_derivative_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(21)
    xa, wa = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((2, 2, 3, 3))
    outs = []
    for mod, F in ((ignis, IF), (torch, torch.nn.functional)):
        x, w = mod.tensor(xa).requires_grad_(), mod.tensor(wa).requires_grad_()
        y = F.conv2d(x, w, padding=1).tanh().sum()
        (g1,) = mod.autograd.grad(y, x, create_graph=True)
        (g2,) = mod.autograd.grad(g1.pow(2).sum(), w, create_graph=True)
        (g3,) = mod.autograd.grad(g2.sin().sum(), x)
        outs.append((g1, g2, g3))
    for a, b in zip(*outs):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-10)


@pytest.mark.skipif(not ignis.cuda.is_available(),
                    reason="needs a CUDA GPU (ignis.cuda.is_available() is False here)")
def test_wgan_gp_penalty_on_the_gpu_matches_the_cpu():
    got = _gradient_penalty(ignis, IF, "cuda")
    want = _gradient_penalty(ignis, IF)
    for a, b in zip(got, want):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-3, atol=1e-4)
