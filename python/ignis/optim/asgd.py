"""ASGD (torch.optim.ASGD): SGD with a decaying step size
eta_t = lr / (1 + lambd * lr * t)^alpha and a running average `ax` of the
iterates that starts averaging after t0 steps. The for-loop step."""
import ignis
from ._checks import check_non_negative
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_non_negative(learning_rate=lr, weight_decay_value=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = _host_float(group["lr"])
            lambd, alpha, t0, wd = group["lambd"], group["alpha"], group["t0"], \
                group["weight_decay"]
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    # eta and mu are float32 scalars as in torch: their values are
                    # read back rounded to float32.
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    state["eta"] = ignis.tensor(lr, dtype=ignis.float32)
                    state["mu"] = ignis.tensor(1.0, dtype=ignis.float32)
                    state["ax"] = ignis.zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                eta = state["eta"].item()
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                ax, mu = state["ax"], state["mu"].item()
                if mu != 1:
                    ax.add_(p.sub(ax).mul_(mu))
                else:
                    ax.copy_(p)
                step = state["step"].item()
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return loss
