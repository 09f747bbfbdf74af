"""Adagrad and Adadelta: PyTorch's single-tensor updates."""
import ignis
from .optimizer import Optimizer, _use_grad, _params_with_grad


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        for name, v in (("learning rate", lr), ("lr_decay value", lr_decay),
                        ("weight_decay value", weight_decay),
                        ("initial_accumulator_value value", initial_accumulator_value),
                        ("epsilon value", eps)):
            if not 0.0 <= v:
                raise ValueError(f"Invalid {name}: {v}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        # Adagrad's state exists from the start (torch creates it here too).
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                state["sum"] = ignis.full_like(p, group["initial_accumulator_value"])

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], \
                group["weight_decay"]
            for p in _params_with_grad(group):
                state = self.state[p]
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                clr = lr / (1 + (step - 1) * lr_decay)
                state["sum"].addcmul_(grad, grad, value=1)
                std = state["sum"].sqrt().add_(eps)
                p.addcdiv_(grad, std, value=-clr)
        return loss


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    state["square_avg"] = ignis.zeros_like(p)
                    state["acc_delta"] = ignis.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                p.add_(delta, alpha=-lr)
        return loss
