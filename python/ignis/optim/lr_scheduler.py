"""Learning-rate schedulers with PyTorch's (chainable) formulas, get_last_lr
and state_dict: LambdaLR, MultiplicativeLR, StepLR, MultiStepLR,
ExponentialLR, LinearLR, ConstantLR, CosineAnnealingLR,
CosineAnnealingWarmRestarts, OneCycleLR, CyclicLR, PolynomialLR,
SequentialLR, ChainedScheduler and ReduceLROnPlateau."""
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0.")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def get_lr(self):
        raise NotImplementedError

    def _initial_step(self):
        """The step a scheduler takes when it is built (SequentialLR replays it)."""
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_last_lr(self):
        return self._last_lr

    def step(self, epoch=None):
        self._step_count += 1
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated.",
                          UserWarning, stacklevel=2)
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), one lambda per group or one for all."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got "
                                 f"{len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base_lr * lmbda(self.last_epoch)
                for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        """Lambdas are saved only when they are callable objects (their __dict__)."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                            for fn in self.lr_lambdas]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for idx, fn in enumerate(lr_lambdas):
            if fn is not None:
                self.lr_lambdas[idx].__dict__.update(fn)


class StepLR(LRScheduler):
    """Multiplies each group's lr by gamma every step_size epochs."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from the initial lr to eta_min over T_max epochs
    (PyTorch's recursive form, which continues past T_max)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min)
                    * (1 + math.cos(self.last_epoch * math.pi / self.T_max)) / 2
                    for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min)
                    * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max))
                * (group["lr"] - self.eta_min) + self.eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


class MultiplicativeLR(LRScheduler):
    """Multiplies each group's lr by lr_lambda(epoch) every epoch after the first."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        n = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) \
            else [lr_lambda] * n
        if len(self.lr_lambdas) != n:
            raise ValueError(f"Expected {n} lr_lambdas, but got {len(self.lr_lambdas)}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups)]
        return [g["lr"] for g in groups]


class MultiStepLR(LRScheduler):
    """Multiplies each group's lr by gamma at each milestone epoch."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies each group's lr by gamma every epoch."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr * factor until total_iters, then lr."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in groups]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in groups]
        return [g["lr"] * (1.0 / self.factor) for g in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """lr scaled linearly from start_factor to end_factor over total_iters."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in groups]
        if self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        d = self.end_factor - self.start_factor
        return [g["lr"] * (1.0 + d / (self.total_iters * self.start_factor
                                      + (self.last_epoch - 1) * d)) for g in groups]

    def _get_closed_form_lr(self):
        d = self.end_factor - self.start_factor
        return [base_lr * (self.start_factor + d * min(self.total_iters, self.last_epoch)
                           / self.total_iters) for base_lr in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine decay to eta_min over T_i epochs, restarting with T_i *= T_mult."""

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base_lr in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._step_count += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class OneCycleLR(LRScheduler):
    """The 1cycle policy: warm up from max_lr / div_factor to max_lr, then anneal
    to initial_lr / final_div_factor (cos or linear), cycling momentum (or
    Adam's beta1) inversely."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError("Expected positive integer steps_per_epoch, but got "
                                 f"{steps_per_epoch}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal = self._cos if anneal_strategy == "cos" else self._linear
        s = float(pct_start * self.total_steps)
        if three_phase:
            self._phases = [(s - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (2 * s - 2, "max_lr", "initial_lr", "base_momentum",
                             "max_momentum"),
                            (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(s - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (self.total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        groups = optimizer.param_groups
        max_lrs = self._per_group(max_lr, "max_lr")
        if last_epoch == -1:
            for lr, g in zip(max_lrs, groups):
                g["initial_lr"] = lr / div_factor
                g["max_lr"] = lr
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_ms = self._per_group(max_momentum, "max_momentum")
            base_ms = self._per_group(base_momentum, "base_momentum")
            if last_epoch == -1:
                for m_mom, b_mom, g in zip(max_ms, base_ms, groups):
                    if self.use_beta1:
                        g["betas"] = (m_mom, *g["betas"][1:])
                    else:
                        g["momentum"] = m_mom
                    g["max_momentum"] = m_mom
                    g["base_momentum"] = b_mom
        super().__init__(optimizer, last_epoch)

    def _per_group(self, v, name):
        n = len(self.optimizer.param_groups)
        if isinstance(v, (list, tuple)):
            if len(v) != n:
                raise ValueError(f"expected {n} values for {name}, got {len(v)}")
            return list(v)
        return [v] * n

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        lrs = []
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        for g in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end_step or i == len(self._phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[m0], g[m1], pct)
                    break
                start_step = end_step
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    g["betas"] = (mom, *g["betas"][1:])
                else:
                    g["momentum"] = mom
        return lrs


class SequentialLR(LRScheduler):
    """Runs the schedulers one after another, switching at the milestones."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler, but got "
                             "no scheduler.")
        for i, sch in enumerate(schedulers):
            if getattr(sch, "optimizer", None) is not optimizer:
                raise ValueError(f"{self.__class__.__name__} expects all schedulers to belong to "
                                 f"the same optimizer, but got scheduler at index {i} to be "
                                 "different than the optimizer passed in.")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             f"one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the steps the later schedulers took when they were built, and
        # restart the first one, as torch does.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        for sch in self._schedulers:
            sch.last_epoch -= 1
        self._schedulers[0]._initial_step()
        self._last_lr = schedulers[0].get_last_lr()

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler.step(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)


class ReduceLROnPlateau:
    """Reduces each group's lr by `factor` when the metric passed to step()
    has not improved for `patience` epochs."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.patience, self.cooldown, self.eps = patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.cooldown_counter = 0
        self.last_epoch = 0
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.best = self.mode_worse
        self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]

    def get_last_lr(self):
        return self._last_lr

    def is_better(self, a, best):
        rel, up = self.threshold_mode == "rel", self.mode == "max"
        if not up:
            return a < (best * (1.0 - self.threshold) if rel else best - self.threshold)
        return a > (best * (self.threshold + 1.0) if rel else best + self.threshold)

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def step(self, metrics, epoch=None):
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn("The epoch parameter in `scheduler.step()` is deprecated.",
                          UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for i, group in enumerate(self.optimizer.param_groups):
                old_lr = float(group["lr"])
                new_lr = max(old_lr * self.factor, self.min_lrs[i])
                if old_lr - new_lr > self.eps:
                    group["lr"] = new_lr
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


# torch keeps the old name as an alias that code still subclasses.
_LRScheduler = LRScheduler


def _per_group_values(optimizer, name, value):
    """One value per parameter group: a list/tuple as given (its length
    checked), else the value repeated."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"optimizer.param_groups has {n} values, {name} has {len(value)}.")
        return list(value)
    return [value] * n


class PolynomialLR(LRScheduler):
    """torch.optim.lr_scheduler.PolynomialLR: lr = base_lr * (1 - t / total_iters)^power
    up to total_iters (as a chainable ratio of successive factors), then constant."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self._is_initial or self.last_epoch > self.total_iters:
            return [g["lr"] for g in groups]
        factor = ((1.0 - self.last_epoch / self.total_iters)
                  / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * factor for g in groups]

    def _get_closed_form_lr(self):
        return [base_lr * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base_lr in self.base_lrs]


class CyclicLR(LRScheduler):
    """torch.optim.lr_scheduler.CyclicLR: the lr goes linearly from base_lr up
    to max_lr over step_size_up steps and back over step_size_down, the
    amplitude scaled per cycle ("triangular": 1, "triangular2": halved each
    cycle) or per iteration ("exp_range": gamma**iteration), or by a custom
    scale_fn. With cycle_momentum the momentum (or Adam's beta1) cycles the
    other way between max_momentum and base_momentum. Stepped every batch."""

    _MODES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}

    def __init__(self, optimizer, base_lr, max_lr, step_size_up=2000, step_size_down=None,
                 mode="triangular", gamma=1.0, scale_fn=None, scale_mode="cycle",
                 cycle_momentum=True, base_momentum=0.8, max_momentum=0.9, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        base_lrs = _per_group_values(optimizer, "base_lr", base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = _per_group_values(optimizer, "max_lr", max_lr)
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in self._MODES and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        # A custom scale_fn keeps the scale_mode given; a named mode sets its own.
        self.scale_mode = scale_mode if scale_fn is not None else self._MODES[mode]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group_values(optimizer, "base_momentum", base_momentum)
            self.max_momentums = _per_group_values(optimizer, "max_momentum", max_momentum)
            if last_epoch == -1:
                for m_mom, b_mom, group in zip(self.max_momentums, self.base_momentums,
                                               optimizer.param_groups):
                    self._set_momentum(group, m_mom)
                    group["max_momentum"] = m_mom
                    group["base_momentum"] = b_mom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def scale_fn(self, x):
        """The amplitude's scale at cycle (or iteration) x."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma ** x

    def get_lr(self):
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # position within the cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base_lr + (max_lr - base_lr) * scale_factor * scale
               for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, b_mom, m_mom in zip(self.optimizer.param_groups, self.base_momentums,
                                           self.max_momentums):
                self._set_momentum(group, m_mom - (m_mom - b_mom) * scale_factor * scale)
        return lrs

    def state_dict(self):
        """A custom scale_fn is saved only as a callable object's __dict__ (as torch)."""
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer",
                                                                  "_scale_fn_custom")}
        fn = self._scale_fn_custom
        sd["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) \
            else fn.__dict__.copy()
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom", None)
        self.__dict__.update(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)


class ChainedScheduler(LRScheduler):
    """torch.optim.lr_scheduler.ChainedScheduler: steps every scheduler of
    the list on each step(), so their (chainable) changes compose."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) < 1:
            raise ValueError(f"{self.__class__.__name__} expects at least one scheduler to be "
                             "chained, but got no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        for idx, sch in enumerate(schedulers):
            if not hasattr(sch, "optimizer"):
                raise TypeError(f"{self.__class__.__name__} at index {idx} should have "
                                "`optimizer` as its attribute.")
            if isinstance(sch, ReduceLROnPlateau):
                raise ValueError(f"{self.__class__.__name__} does not support "
                                 "`ReduceLROnPlateau` scheduler as it requires additional "
                                 "kwargs to be specified when calling `step`, but got one at "
                                 f"index {idx} in the given schedulers sequence.")
            if sch.optimizer is not optimizer:
                raise ValueError(f"{self.__class__.__name__} expects all schedulers to belong "
                                 "to the same optimizer, but got scheduler "
                                 f"{sch.__class__.__name__} at index {idx} has "
                                 f"{sch.optimizer}, which is different from "
                                 f"{optimizer.__class__.__name__}.")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

    def step(self):
        for sch in self._schedulers:
            sch.step()
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

    def state_dict(self):
        sd = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        sd["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return sd

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for s, sd in zip(self._schedulers, saved):
            s.load_state_dict(sd)
