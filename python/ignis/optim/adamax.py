"""Adamax (torch.optim.Adamax): Adam with the infinity norm in place of the
second moment; the for-loop step of torch's algorithm."""
import ignis
from ._checks import check_betas, check_non_negative
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_non_negative(learning_rate=lr, epsilon_value=eps, weight_decay_value=weight_decay)
        check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, wd = _host_float(group["lr"]), group["eps"], group["weight_decay"]
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    state["exp_avg"] = ignis.zeros_like(p)
                    state["exp_inf"] = ignis.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                # u_t = max(beta2 * u_{t-1}, |g_t| + eps), elementwise.
                exp_inf.copy_(ignis.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                step_size = lr / (1 - beta1 ** state["step"].item())
                p.addcdiv_(exp_avg, exp_inf, value=-step_size)
        return loss
