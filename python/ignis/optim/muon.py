"""Muon (torch.optim.Muon): momentum SGD for 2-D weight matrices whose
update is the momentum (Nesterov by default) orthogonalized by a few
Newton-Schulz iterations, with decoupled weight decay and a learning rate
scaled by the matrix's shape."""
import math

import ignis
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float

_EPS = 1e-7
_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
_NS_STEPS = 5


def _orthogonalize(update, coefficients, steps, eps):
    """An approximate U V^T of update = U S V^T by the quintic Newton-Schulz
    map X <- a X + (b X X^T + c (X X^T)^2) X on X = update / |update|_F,
    iterated in bfloat16 as torch does (its coefficients push the singular
    values towards [0.5, 1.5] quickly rather than to exactly 1). Wide form:
    a tall matrix is iterated transposed, so X X^T is the smaller Gram."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = update.shape[0] > update.shape[1]
    x = update.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.T
        # addmm: one rounding to bfloat16 for each of the two sums, as torch's
        polynomial = ignis.addmm(gram, gram, gram, beta=b, alpha=c)
        x = ignis.addmm(x, polynomial, x, beta=a)
    return x.T if tall else x


def _shape_lr(lr, adjust_lr_fn, shape):
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))      # Keller Jordan's scaling
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))    # Moonshot's: AdamW's update RMS
    return lr


class Muon(Optimizer):
    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=_NS_COEFFICIENTS, eps=_EPS, ns_steps=_NS_STEPS,
                 adjust_lr_fn=None):
        if isinstance(lr, ignis.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, momentum = _host_float(group["lr"]), group["momentum"]
            for p in _params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                grad = p.grad
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = ignis.zeros_like(grad)
                buffer = state["momentum_buffer"]
                buffer.lerp_(grad, 1 - momentum)
                update = grad.lerp(buffer, momentum) if group["nesterov"] else buffer
                update = _orthogonalize(update, group["ns_coefficients"], group["ns_steps"],
                                        group["eps"])
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update.to(p.dtype), alpha=-_shape_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss
