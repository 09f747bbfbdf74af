"""SGD with momentum, dampening, Nesterov, weight decay and maximize, in
torch's three implementations: the for-loop step, the foreach step and the
fused step (_fused_sgd_)."""
import ignis
from .optimizer import (Optimizer, _use_grad, _params_with_grad, _implementation,
                        _check_fused_flags, _by_device, _host_float)


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_fused_flags(foreach, fused, differentiable)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    @_use_grad
    def step(self, closure=None):
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params = _params_with_grad(group)
            how = _implementation(group, params, "SGD")
            if how == "fused":
                self._fused_step(group, params)
            elif how == "foreach":
                self._foreach_step(group, params)
            else:
                self._single_tensor_step(group, params)
        return loss

    def _single_tensor_step(self, group, params):
        """PyTorch's single-tensor SGD update, in place on each parameter."""
        lr, momentum = _host_float(group["lr"]), group["momentum"]
        dampening, wd = group["dampening"], group["weight_decay"]
        nesterov, maximize = group["nesterov"], group["maximize"]
        for p in params:
            grad = -p.grad if maximize else p.grad
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = grad.clone()
                    state["momentum_buffer"] = buf
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)

    def _foreach_step(self, group, params):
        """The for-loop step's ops on whole lists (the same values)."""
        if not params:
            return
        lr, momentum = _host_float(group["lr"]), group["momentum"]
        dampening, wd = group["dampening"], group["weight_decay"]
        grads = [p.grad for p in params]
        if group["maximize"]:
            grads = ignis._foreach_neg(grads)
        if wd != 0:
            grads = ignis._foreach_add(grads, params, alpha=wd)
        if momentum != 0:
            states = [self.state[p] for p in params]
            bufs = [s.get("momentum_buffer") for s in states]
            if all(b is not None for b in bufs):
                ignis._foreach_mul_(bufs, momentum)
                ignis._foreach_add_(bufs, grads, alpha=1 - dampening)
            else:
                for i, (s, b) in enumerate(zip(states, bufs)):
                    if b is None:
                        bufs[i] = s["momentum_buffer"] = grads[i].clone()
                    else:
                        b.mul_(momentum).add_(grads[i], alpha=1 - dampening)
            grads = ignis._foreach_add(grads, bufs, alpha=momentum) if group["nesterov"] \
                else bufs
        ignis._foreach_add_(params, grads, alpha=-lr)

    def _fused_step(self, group, params):
        """One _fused_sgd_ call per device and kind of buffer: parameters
        whose momentum buffer does not exist yet take a first step (the
        buffer becomes the gradient), the others the momentum update."""
        momentum = group["momentum"]
        for indices in _by_device(params):
            ps = [params[i] for i in indices]
            if momentum == 0:
                parts = [(ps, [], False)]
            else:
                fresh = [p for p in ps if self.state[p].get("momentum_buffer") is None]
                for p in fresh:
                    self.state[p]["momentum_buffer"] = ignis.empty_like(p)
                fresh_ids = {id(p) for p in fresh}
                old = [p for p in ps if id(p) not in fresh_ids]
                parts = [(fresh, [self.state[p]["momentum_buffer"] for p in fresh], True),
                         (old, [self.state[p]["momentum_buffer"] for p in old], False)]
            for part, bufs, first in parts:
                if not part:
                    continue
                ignis._fused_sgd_(part, [p.grad for p in part], bufs,
                                  weight_decay=group["weight_decay"], momentum=momentum,
                                  lr=group["lr"], dampening=group["dampening"],
                                  nesterov=group["nesterov"], maximize=group["maximize"],
                                  is_first_step=first)
