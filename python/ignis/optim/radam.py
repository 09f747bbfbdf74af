"""RAdam (torch.optim.RAdam): Adam whose adaptive step is switched on, with
the variance rectification term, once the approximated SMA length rho_t
exceeds 5; plain bias-corrected momentum before. L2 or decoupled weight
decay. The for-loop step."""
import math

import ignis
from ._checks import check_betas, check_non_negative
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_non_negative(learning_rate=lr, epsilon_value=eps, weight_decay_value=weight_decay)
        check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("decoupled_weight_decay", False)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _host_float(group["lr"]), group["eps"], group["weight_decay"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    state["exp_avg"] = ignis.zeros_like(p)
                    state["exp_avg_sq"] = ignis.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                step = state["step"].item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                corrected = exp_avg / bias_correction1
                rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive = math.sqrt(bias_correction2) / exp_avg_sq.sqrt().add_(eps)
                    p.sub_(corrected * lr * adaptive * rect)
                else:
                    p.sub_(corrected * lr)
        return loss
