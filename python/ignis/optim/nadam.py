"""NAdam (torch.optim.NAdam): Adam with Nesterov momentum and Dozat's
momentum-decay schedule mu_t = beta1 (1 - 0.5 * 0.96^(t * momentum_decay));
L2 or decoupled (AdamW-style) weight decay. The for-loop step."""
import ignis
from ._checks import check_betas, check_non_negative
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_non_negative(learning_rate=lr, epsilon_value=eps, weight_decay_value=weight_decay,
                           momentum_decay=momentum_decay)
        check_betas(betas)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
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
            psi = group["momentum_decay"]
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    # The running product of the mu_t, a float32 scalar as torch keeps it.
                    state["mu_product"] = ignis.tensor(1.0, dtype=ignis.float32)
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
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                mu_product = state["mu_product"]
                mu_product *= mu
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(1 - beta2 ** step).sqrt().add_(eps)
                # The product is read back from its float32 tensor, as torch reads it.
                prod = mu_product.item()
                p.addcdiv_(grad, denom, value=-lr * (1.0 - mu) / (1.0 - prod))
                p.addcdiv_(exp_avg, denom, value=-lr * mu_next / (1.0 - prod * mu_next))
        return loss
