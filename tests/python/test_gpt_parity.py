"""The proof test: the same GPT (examples/gpt.py) in ignis and in PyTorch,
with PyTorch's weights copied into ignis through NumPy, gives the same
logits, loss and gradient of every parameter, and the same parameters after
several AdamW steps (with a learning-rate schedule and gradient zeroing as in
a real training loop)."""
import functools
import pathlib
import sys

import numpy as np
import pytest

import _checkout  # noqa: F401
import ignis

torch = pytest.importorskip("torch")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
from gpt import GPTConfig, build_gpt, configure_optimizer  # noqa: E402

pytestmark = pytest.mark.skipif(
    not hasattr(ignis.Tensor, "backward"),
    reason="needs eager autograd (ignis.Tensor.backward), which has not landed in this tree")



def xfail_on_missing_derivative(test):
    """While eager autograd lands op by op, a missing derivative formula
    (NotImplementedError from backward) marks the test xfail, naming the op;
    any numerical mismatch still fails."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        try:
            return test(*args, **kwargs)
        except NotImplementedError as e:
            if "derivative" not in str(e):
                raise
            pytest.xfail(f"autograd incomplete: {e}")
    return wrapper


TOL = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}


def to_np(t):
    return t.detach().numpy()


def make_pair(cfg, dtype):
    torch.manual_seed(0)
    tmodel = build_gpt(torch)(cfg).to(getattr(torch, dtype))
    imodel = build_gpt(ignis)(cfg).to(getattr(ignis, dtype))
    imodel.load_state_dict({k: ignis.from_numpy(v.detach().numpy().copy())
                            for k, v in tmodel.state_dict().items()})
    return imodel, tmodel


def make_batch(cfg, seed, batch=3):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size))
    y = rng.integers(0, cfg.vocab_size, size=(batch, cfg.block_size))
    return (ignis.from_numpy(x), ignis.from_numpy(y)), (torch.from_numpy(x), torch.from_numpy(y))


def assert_close(a, b, what, tol):
    np.testing.assert_allclose(to_np(a), to_np(b), err_msg=what, **tol)


def assert_params_close(name, ip, tp, what, tol, dtype, lr, steps):
    """Parameters after AdamW steps. One slice needs care in float32: the bias
    of the key projection has an exactly zero true gradient (adding a constant
    to every key shifts each query's scores by a constant, which softmax
    ignores), so both libraries' gradients there are rounding noise, which
    Adam's g / sqrt(v) turns into steps of up to +-lr. That slice is held to
    the Adam step bound; everything else (and everything in float64) to the
    dtype's tolerance."""
    a, b = to_np(ip), to_np(tp)
    if dtype == "float32" and name.endswith(("c_attn.bias", "in_proj_bias")):
        E = a.shape[0] // 3
        np.testing.assert_allclose(a[E:2 * E], b[E:2 * E], atol=2 * lr * steps, rtol=0,
                                   err_msg=what + " (key bias)")
        a, b = np.concatenate([a[:E], a[2 * E:]]), np.concatenate([b[:E], b[2 * E:]])
    np.testing.assert_allclose(a, b, err_msg=what, **tol)


CONFIGS = {
    "sdpa": GPTConfig(vocab_size=23, block_size=8, n_layer=2, n_head=2, n_embd=16),
    "mha": GPTConfig(vocab_size=23, block_size=8, n_layer=2, n_head=2, n_embd=16, use_mha=True),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("attn", ["sdpa", "mha"])
@xfail_on_missing_derivative
def test_gpt_forward_backward_and_adamw_match_torch(attn, dtype):
    cfg, tol = CONFIGS[attn], TOL[dtype]
    imodel, tmodel = make_pair(cfg, dtype)
    inames = [n for n, _ in imodel.named_parameters()]
    assert inames == [n for n, _ in tmodel.named_parameters()]
    assert "transformer.wte.weight" in inames and "lm_head.weight" not in inames  # tied
    assert imodel.lm_head.weight is imodel.transformer.wte.weight

    (ix, iy), (tx, ty) = make_batch(cfg, 1)
    ilogits, iloss = imodel(ix, iy)
    tlogits, tloss = tmodel(tx, ty)
    assert ilogits.dtype == getattr(ignis, dtype)
    assert_close(ilogits, tlogits, "logits", tol)
    assert_close(iloss, tloss, "loss", tol)
    iloss.backward()
    tloss.backward()
    for (name, ip), (_, tp) in zip(imodel.named_parameters(), tmodel.named_parameters()):
        assert ip.grad is not None, f"no gradient for {name}"
        assert ip.grad.shape == ip.shape
        assert_close(ip.grad, tp.grad, f"grad of {name}", tol)

    iopt = configure_optimizer(ignis, imodel, lr=1e-2)
    topt = configure_optimizer(torch, tmodel, lr=1e-2)
    isched = ignis.optim.lr_scheduler.StepLR(iopt, step_size=2, gamma=0.5)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    for step in range(5):
        if step:
            (ix, iy), (tx, ty) = make_batch(cfg, 10 + step)
            iopt.zero_grad()
            topt.zero_grad()
            _, iloss = imodel(ix, iy)
            _, tloss = tmodel(tx, ty)
            assert_close(iloss, tloss, f"loss at step {step}", tol)
            iloss.backward()
            tloss.backward()
        iopt.step()
        topt.step()
        isched.step()
        tsched.step()
        for (name, ip), (_, tp) in zip(imodel.named_parameters(), tmodel.named_parameters()):
            assert_params_close(name, ip, tp, f"{name} after AdamW step {step}", tol, dtype,
                                lr=1e-2, steps=step + 1)
    assert isched.get_last_lr() == tsched.get_last_lr()


@xfail_on_missing_derivative
def test_gpt_trains():
    """A few dozen AdamW steps on one repeated batch drive the loss down."""
    cfg = CONFIGS["sdpa"]
    ignis.manual_seed(0)
    model = build_gpt(ignis)(cfg)
    opt = configure_optimizer(ignis, model, lr=1e-2)
    (x, y), _ = make_batch(cfg, 3, batch=4)
    losses = []
    for _ in range(40):
        _, loss = model(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
