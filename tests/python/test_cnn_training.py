"""A small CNN (conv, batch norm, ReLU, max pool, dropout, linear) trained in
ignis and in torch from the same weights: the losses, the parameters and
the batch norm's running statistics after several SGD steps agree; the
same model compiled with ignis.compile gives eager's values and gradients
and is captured whole (no graph break); the eval-mode model too.
"""
import numpy as np
import pytest

import _checkout  # noqa: F401  (must precede `import ignis`)
import ignis

torch = pytest.importorskip("torch")


def build(nn):
    class Flatten(nn.Module):  # (nn.Flatten is not part of this slice)
        def forward(self, x):
            return x.flatten(1)

    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.0), Flatten(), nn.Linear(16 * 7 * 7, 10),
    )


def make_models():
    """The model in ignis and in torch, torch's with ignis's initial weights."""
    ignis.manual_seed(0)
    mi, mt = build(ignis.nn), build(torch.nn)
    with torch.no_grad():
        for (n, pi), (_, pt) in zip(mi.state_dict().items(), mt.state_dict().items()):
            pt.copy_(torch.from_numpy(pi.detach().numpy().copy()))
    return mi, mt


def data(step):
    rng = np.random.default_rng(step)
    return (rng.standard_normal((16, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, 16))


def train(model, mod, steps, step_fn=None):
    opt = mod.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for s in range(steps):
        x, y = data(s)
        opt.zero_grad()
        out = (step_fn or model)(mod.from_numpy(x))
        loss = mod.nn.functional.cross_entropy(out, mod.from_numpy(y))
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def _state(m):
    return {k: v.detach().numpy().astype(np.float64) for k, v in m.state_dict().items()}


def test_cnn_trains_like_torch():
    mi, mt = make_models()
    li, lt = train(mi, ignis, 5), train(mt, torch, 5)
    np.testing.assert_allclose(li, lt, rtol=2e-4, atol=2e-5)
    si, st = _state(mi), _state(mt)
    assert si.keys() == st.keys()
    for k in si:
        np.testing.assert_allclose(si[k], st[k], rtol=2e-3, atol=2e-4, err_msg=k)
    # and evaluates alike with the running statistics
    mi.eval()
    mt.eval()
    x, _ = data(99)
    np.testing.assert_allclose(mi(ignis.from_numpy(x)).detach().numpy(),
                               mt(torch.from_numpy(x)).detach().numpy(), rtol=1e-3, atol=1e-4)


def _grads(model):
    return [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("train_mode", [True, False])
def test_compiled_cnn_matches_eager_without_graph_breaks(train_mode):
    mi, _ = make_models()
    mc, _ = make_models()
    mi.train(train_mode)
    mc.train(train_mode)
    x, y = data(0)

    def step(model):
        def f(x, y):
            return ignis.nn.functional.cross_entropy(model(x), y)
        return f

    explanation = ignis.compiler.explain(step(mc), ignis.from_numpy(x), ignis.from_numpy(y))
    assert explanation.graph_break_count == 0, explanation.break_reasons
    mc.load_state_dict(mi.state_dict())  # explain ran the model (and its running stats)

    compiled = ignis.compile(step(mc), fullgraph=True)
    want = step(mi)(ignis.from_numpy(x), ignis.from_numpy(y))
    got = compiled(ignis.from_numpy(x), ignis.from_numpy(y))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)
    want.backward()
    got.backward()
    for gi, gc in zip(_grads(mi), _grads(mc)):
        np.testing.assert_allclose(gc, gi, rtol=1e-4, atol=1e-5)
    for k, v in mi.state_dict().items():  # the running statistics were updated alike
        np.testing.assert_allclose(mc.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=k)


def test_compiled_unet_style_layers_match_eager():
    """Reflect padding, GroupNorm, strided and transposed convolutions,
    bilinear upsampling, pixel shuffle, average and adaptive pooling: one
    graph, eager's values, gradients and running statistics."""
    nn = ignis.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=1, padding_mode="reflect")
            self.gn = nn.GroupNorm(2, 8)
            self.down = nn.Conv2d(8, 16, 4, stride=2, padding=1)
            self.bn = nn.BatchNorm2d(16)
            self.up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
            self.ups = nn.Upsample(scale_factor=2, mode="bilinear")
            self.ps = nn.PixelShuffle(2)
            self.head = nn.Conv2d(8, 4, 1)
            self.pool = nn.AdaptiveAvgPool2d(1)

        def forward(self, x):
            a = ignis.relu(self.gn(self.c1(x)))
            b = ignis.relu(self.bn(self.down(a)))
            c = self.up(b) + a
            d = self.ps(self.head(self.ups(c)))
            return self.pool(nn.functional.avg_pool2d(d, 2)).flatten(1).sum(1)

    ignis.manual_seed(0)
    me, mc = Net(), Net()
    x = ignis.randn(2, 3, 16, 16)
    explanation = ignis.compiler.explain(lambda x: mc(x).sum(), x)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    mc.load_state_dict(me.state_dict())  # explain ran it (and its running stats)
    ye = me(x).sum()
    yc = ignis.compile(lambda x: mc(x).sum(), fullgraph=True)(x)
    np.testing.assert_allclose(float(yc), float(ye), rtol=1e-5)
    ye.backward()
    yc.backward()
    for (n, a), (_, b) in zip(me.named_parameters(), mc.named_parameters()):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=n)
    for (n, a), (_, b) in zip(me.named_buffers(), mc.named_buffers()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
