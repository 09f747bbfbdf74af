"""ignis.amp.GradScaler: loss scaling for float16 (and bfloat16) training,
torch.amp.GradScaler's interface and behaviour.

A float16 gradient underflows where a float32 one would not; multiplying
the loss by a large factor (the scale) before backward keeps the gradients
representable, and dividing them by it before the optimizer step restores
them. When some gradient overflowed (inf or NaN), the step is skipped and
the scale shrinks (``backoff_factor``); after ``growth_interval`` clean steps
it grows (``growth_factor``). The scale and the count of clean steps live in
tensors on the gradients' device and are updated by two ops,
``_amp_foreach_non_finite_check_and_unscale_`` and ``_amp_update_scale_``
(src/ignis/ops/amp.cpp), so a step reads nothing back from the device
except whether to call ``optimizer.step()``.
"""
import enum
import warnings
from collections import abc, defaultdict

from .. import _ops

__all__ = ["GradScaler", "OptState"]


class OptState(enum.Enum):
    READY = 0      # no unscale_ or step since the last update
    UNSCALED = 1   # unscale_ ran (called by the user, or by step)
    STEPPED = 2    # step ran


def _fresh_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class _PerDevice:
    """One tensor (the scale, or a found_inf flag) copied once to each device
    that asks for it."""

    def __init__(self, master):
        self.master = master
        self._copies = {}

    def get(self, device):
        t = self._copies.get(device)
        if t is None:
            t = self.master.to(device=device, non_blocking=True, copy=True)
            self._copies[device] = t
        return t


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            from .. import cuda
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available. "
                              " Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None            # made on first use, on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- state tensors ------------------------------------------------------
    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) earlier "
               "in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, device):
        from .. import full, float32, int32
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=float32, device=device)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=int32, device=device)

    # -- the training step --------------------------------------------------
    def scale(self, outputs):
        """``outputs`` (a tensor, or lists/tuples/iterables of them) times the
        current scale; returned unchanged when the scaler is disabled."""
        from .._tensor import Tensor
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        scales = []

        def apply_scale(val):
            if isinstance(val, Tensor):
                if not scales:
                    if self._scale is None:
                        self._lazy_init_scale_growth_tracker(val.device)
                    scales.append(_PerDevice(self._scale))
                return val * scales[0].get(val.device)
            if isinstance(val, abc.Iterable):
                items = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(items)
                return items
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        """Unscales the optimizer's gradients in place, one op call per
        (device, dtype) group; returns {device: found_inf flag}."""
        from .. import no_grad, float16
        inv_scales = _PerDevice(inv_scale)
        found_infs = _PerDevice(found_inf)
        groups = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    groups[param.grad.device][param.grad.dtype].append(param.grad)
            for device, by_dtype in groups.items():
                for grads in by_dtype.values():
                    _ops.ops._amp_foreach_non_finite_check_and_unscale_(
                        grads, found_infs.get(device), inv_scales.get(device))
        return dict(found_infs._copies)

    def unscale_(self, optimizer):
        """Divides the optimizer's gradients by the scale (in place), e.g.
        before clipping them; step() then does not unscale again."""
        from .. import full, float32
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # The reciprocal in double, then float32, as torch computes it.
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscales the gradients (unless unscale_ did) and runs
        ``optimizer.step(*args, **kwargs)`` unless some gradient is inf or NaN;
        returns what it returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None):
        """Updates the scale for the next iteration: shrinks it if any step
        since the last update saw an inf/NaN, grows it after growth_interval
        clean steps; or sets it to ``new_scale`` (a float or a one-element
        tensor)."""
        from .._tensor import Tensor
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not (isinstance(new_scale, Tensor) and new_scale.device.type == self._device
                        and new_scale.numel() == 1 and not new_scale.requires_grad):
                    raise AssertionError(reason)
                scale.copy_(new_scale)
        else:
            found_infs = [f.to(device=scale.device, non_blocking=True)
                          for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if not found_infs:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _ops.ops._amp_update_scale_(scale, tracker, combined, self._growth_factor,
                                  self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_fresh_optimizer_state)

    # -- reading and setting the state ---------------------------------------
    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return (self._init_growth_tracker if self._growth_tracker is None
                else int(self._growth_tracker.item()))

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and
        _growth_tracker as Python numbers ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning "
                                     "of an iteration, or at the end after scaler.update().")
            # The tensors are not pickled: their values go in as the initial ones.
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_fresh_optimizer_state)
