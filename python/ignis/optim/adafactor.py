"""Adafactor (torch.optim.Adafactor, torch's variant of Shazeer & Stern):
the second moment of a matrix-shaped gradient kept as row and column
factors (over the last two dims), relative step sizes, update clipping by
d, decoupled weight decay, and no first moment. The for-loop step."""
import ignis
from .optimizer import Optimizer, _use_grad, _params_with_grad, _host_float


class Adafactor(Optimizer):
    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _state_for(self, p):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = ignis.tensor(0.0, dtype=ignis.float32)
            shape = list(p.grad.shape)
            if p.grad.dim() > 1:
                # The factors: the gradient's shape with the last (rows) or
                # second-to-last (columns) dim reduced to 1.
                state["row_var"] = p.grad.new_zeros(shape[:-1] + [1])
                state["col_var"] = p.grad.new_zeros(shape[:-2] + [1, shape[-1]])
            else:
                state["variance"] = ignis.zeros_like(p.grad)
        return state

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd, d = _host_float(group["lr"]), group["weight_decay"], group["d"]
            eps1, eps2 = group["eps"]
            for p in _params_with_grad(group):
                state = self._state_for(p)
                grad = -p.grad if group["maximize"] else p.grad
                # torch takes eps1's default from the first parameter's dtype and
                # keeps it for the rest of the group.
                if eps1 is None:
                    eps1 = ignis.finfo(p.dtype).eps
                state["step"] += 1
                step = state["step"].item()
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_(ignis.norm(grad, dim=-1, keepdim=True).square_()
                                  .div_(grad.size(-1)), one_minus_beta2)
                    col_var.lerp_(ignis.norm(grad, dim=-2, keepdim=True).square_()
                                  .div_(grad.size(-2)), one_minus_beta2)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
