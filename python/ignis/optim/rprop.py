"""Rprop (torch.optim.Rprop): per-element step sizes grown by etaplus while
the gradient keeps its sign and shrunk by etaminus when it flips (that
step then skips the element and forgets its gradient). The for-loop step."""
import ignis
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in _params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
                    state["prev"] = ignis.zeros_like(p)
                    state["step_size"] = ignis.full_like(p, _host_float(group["lr"]))
                grad = -p.grad if group["maximize"] else p.grad
                state["step"] += 1
                prev, step_size = state["prev"], state["step_size"]
                agreement = grad.mul(prev).sign()
                factor = ignis.where(agreement > 0, ignis.full_like(grad, etaplus),
                                     ignis.where(agreement < 0, ignis.full_like(grad, etaminus),
                                                 ignis.ones_like(grad)))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                # Where the sign flipped the step skips the element and the
                # stored gradient is zeroed, so the next step grows nothing.
                grad = ignis.where(agreement < 0, ignis.zeros_like(grad), grad)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
