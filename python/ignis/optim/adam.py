"""Adam and AdamW: PyTorch's update rule, bias correction included, with
amsgrad and maximize, in torch's three implementations: the for-loop
(single-tensor) step, the foreach step (one _foreach_ op per list) and the
fused step (_fused_adam_/_fused_adamw_)."""
import ignis
from .optimizer import (Optimizer, _use_grad, _params_with_grad, _implementation,
                        _check_fused_flags, _by_device, _host_float)


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        _check_fused_flags(foreach, fused, differentiable)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", isinstance(self, AdamW))

    def _state_for(self, p, amsgrad, step_device=None):
        """p's state, created on first use; the step count is a float32
        tensor on the CPU (for-loop and foreach: read on the host without
        waiting for the GPU) or on `step_device` (fused: read by the kernel)."""
        state = self.state[p]
        if len(state) == 0:
            state["step"] = ignis.tensor(0.0, dtype=ignis.float32, device=step_device)
            state["exp_avg"] = ignis.zeros_like(p)
            state["exp_avg_sq"] = ignis.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = ignis.zeros_like(p)
        want = ignis.device(step_device if step_device is not None else "cpu")
        if state["step"].device != want:  # a loaded state, or another implementation's: once
            state["step"] = state["step"].to(device=want, dtype=ignis.float32)
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = ignis.zeros_like(p)
        return state

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = _params_with_grad(group)
            how = _implementation(group, params, type(self).__name__)
            if how == "fused":
                self._fused_step(group, params)
            elif how == "foreach":
                self._foreach_step(group, params)
            else:
                self._single_tensor_step(group, params)
        return loss

    def _single_tensor_step(self, group, params):
        beta1, beta2 = group["betas"]
        lr, eps, wd = _host_float(group["lr"]), group["eps"], group["weight_decay"]
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        for p in params:
            state = self._state_for(p, amsgrad)
            grad = -p.grad if maximize else p.grad
            step_t = state["step"]
            step_t += 1
            if wd != 0:
                if decoupled:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(grad, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
            step = step_t.item()
            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                max_sq.copy_(ignis.maximum(max_sq, exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)

    def _foreach_step(self, group, params):
        """The for-loop step's ops, each applied to whole lists: the same
        values, a handful of calls per group instead of per parameter."""
        if not params:
            return
        beta1, beta2 = group["betas"]
        lr, eps, wd = _host_float(group["lr"]), group["eps"], group["weight_decay"]
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        states = [self._state_for(p, amsgrad) for p in params]
        grads = [p.grad for p in params]
        exp_avgs = [s["exp_avg"] for s in states]
        exp_avg_sqs = [s["exp_avg_sq"] for s in states]
        steps = [s["step"] for s in states]
        ignis._foreach_add_(steps, 1)
        if maximize:
            grads = ignis._foreach_neg(grads)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                ignis._foreach_mul_(params, 1 - lr * wd)
            else:
                grads = ignis._foreach_add(grads, params, alpha=wd)
        ignis._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        ignis._foreach_mul_(exp_avg_sqs, beta2)
        ignis._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        counts = [s.item() for s in steps]  # CPU tensors: no wait for the GPU
        step_sizes = [-(lr / (1 - beta1 ** n)) for n in counts]
        bias_correction2_sqrt = [(1 - beta2 ** n) ** 0.5 for n in counts]
        if amsgrad:
            max_sqs = [s["max_exp_avg_sq"] for s in states]
            ignis._foreach_maximum_(max_sqs, exp_avg_sqs)
            denom = ignis._foreach_sqrt(max_sqs)
        else:
            denom = ignis._foreach_sqrt(exp_avg_sqs)
        ignis._foreach_div_(denom, bias_correction2_sqrt)
        ignis._foreach_add_(denom, eps)
        ignis._foreach_addcdiv_(params, exp_avgs, denom, step_sizes)

    def _fused_step(self, group, params):
        """One _fused_adam(w)_ call per device: the step counts live on the
        parameters' device and are read there, so nothing waits for the GPU."""
        beta1, beta2 = group["betas"]
        amsgrad = group["amsgrad"]
        fused = ignis._fused_adamw_ if group["decoupled_weight_decay"] else ignis._fused_adam_
        for indices in _by_device(params):
            ps = [params[i] for i in indices]
            states = [self._state_for(p, amsgrad, step_device=p.device) for p in ps]
            steps = [s["step"] for s in states]
            ignis._foreach_add_(steps, 1)
            fused(ps, [p.grad for p in ps], [s["exp_avg"] for s in states],
                  [s["exp_avg_sq"] for s in states],
                  [s["max_exp_avg_sq"] for s in states] if amsgrad else [], steps,
                  lr=group["lr"], beta1=beta1, beta2=beta2, weight_decay=group["weight_decay"],
                  eps=group["eps"], amsgrad=amsgrad, maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (PyTorch's defaults: weight_decay=1e-2)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
