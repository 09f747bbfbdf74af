"""ignis.optim.swa_utils, as torch.optim.swa_utils: Stochastic Weight
Averaging and exponential moving averages of a model (AveragedModel with
its averaging functions), the SWALR schedule, and update_bn, which
recomputes BatchNorm statistics for averaged weights."""
import copy
import itertools
import math

import ignis
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _per_group_values


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA over lists: ema <- decay * ema + (1 - decay) * current."""
    @ignis.no_grad()
    def ema_update(ema_param_list, current_param_list, _num_averaged):
        if ema_param_list[0].is_floating_point():
            ignis._foreach_lerp_(ema_param_list, current_param_list, 1 - decay)
        else:  # integer buffers: the same blend, rounded by copy_
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean over lists: avg <- avg + (current - avg) / (n + 1)."""
    @ignis.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if averaged_param_list[0].is_floating_point():
            # torch computes the weight 1 / (n + 1) as a tensor when n is one
            # (float32): the weight is read back from it.
            weight = 1 / (num_averaged + 1)
            if isinstance(weight, ignis.Tensor):
                weight = weight.item()
            ignis._foreach_lerp_(averaged_param_list, current_param_list, weight)
        else:
            n = float(num_averaged)
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                p_avg.add_((p_model - p_avg) / (n + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The EMA of one tensor, returned (not in place)."""
    @ignis.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor, returned (not in place)."""
    @ignis.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """torch.optim.swa_utils.AveragedModel: a deep copy of `model` (in
    `.module`) whose parameters (and, with use_buffers, buffers) hold an
    average of the values passed to update_parameters(): the equal-weight
    SWA mean by default, or `avg_fn(averaged, current, n_averaged)`
    (returning the new value) or `multi_avg_fn(averaged_list, current_list,
    n_averaged)` (in place). The first update copies the model; without
    use_buffers the buffers follow the model's. `n_averaged` is a long
    buffer counting the updates."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", ignis.tensor(0, dtype=ignis.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged_tensors(self, model):
        if self.use_buffers:
            return (list(itertools.chain(self.module.parameters(), self.module.buffers())),
                    list(itertools.chain(model.parameters(), model.buffers())))
        return list(self.module.parameters()), list(model.parameters())

    @ignis.no_grad()
    def update_parameters(self, model):
        mine, theirs = self._averaged_tensors(model)
        averaged = [p.detach() for p in mine]
        current = [q.detach().to(p.device) for p, q in zip(mine, theirs)]
        first = int(self.n_averaged.item()) == 0
        if first:
            for p, q in zip(averaged, current):
                p.copy_(q)
        else:
            if self.multi_avg_fn is not None:
                # One call per (device, dtype) group, as torch groups them.
                groups = {}
                for p, q in zip(averaged, current):
                    key = (str(p.device), str(p.dtype))
                    groups.setdefault(key, ([], []))
                    groups[key][0].append(p)
                    groups[key][1].append(q)
                for ps, qs in groups.values():
                    self.multi_avg_fn(ps, qs, self.n_averaged.to(ps[0].device))
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for p, q in zip(averaged, current):
                    p.copy_(avg_fn(p, q, self.n_averaged.to(p.device)))
        if not self.use_buffers:
            # Buffers are not averaged: they follow the source model.
            for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


@ignis.no_grad()
def update_bn(loader, model, device=None):
    """torch.optim.swa_utils.update_bn: one pass over `loader` (its items, or
    their first element when they are lists/tuples) in training mode with
    every BatchNorm's statistics reset and momentum=None (a cumulative
    average), then each momentum and the training flag are restored."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """torch.optim.swa_utils.SWALR: anneals each group's lr to its swa_lr
    over anneal_epochs ("cos" or "linear"), then holds it. Each step blends
    toward swa_lr from the lr the previous step's blend implies, so it
    composes with an lr changed in between, as torch's does."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        for lr, group in zip(_per_group_values(optimizer, "swa_lr", swa_lr),
                             optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self.anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t):
        if self.anneal_strategy == "linear":
            return t
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        # The lr that blending with weight alpha turned into `lr`.
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        groups = self.optimizer.param_groups
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
