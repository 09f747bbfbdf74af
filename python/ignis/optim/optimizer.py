"""ignis.optim.Optimizer: parameter groups, per-parameter state, and
state_dict / load_state_dict in PyTorch's format."""
import copy
import functools
from collections import defaultdict
from itertools import chain

from .. import _C
from ..autograd import enable_grad, no_grad
from ..autograd import profiler as _profiler_state
from ..autograd.profiler import record_function
from ..nn.modules.module import _as_ignis_tensor, _zero_grad


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _use_grad(step):
    """Runs an optimizer step with autograd recording off (updates are in place)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)
    return wrapper


def _profiled(method, label):
    """Wraps an optimizer method in a profiler range named as torch names
    it ("Optimizer.step#AdamW.step"). The check reads a Python counter, so
    capture traces through the wrapper when no profiler runs."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if not _profiler_state.sessions:
            return method(self, *args, **kwargs)
        with record_function(f"Optimizer.{label}#{type(self).__name__}.{label}"):
            return method(self, *args, **kwargs)
    wrapper._ignis_profiled = True
    return wrapper


class Optimizer:
    """Base class: subclasses pass their defaults and implement step()."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for label in ("step", "zero_grad"):
            m = cls.__dict__.get(label)
            if m is not None and not getattr(m, "_ignis_profiled", False):
                setattr(cls, label, _profiled(m, label))

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, _C.TensorBase):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.TensorBase):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for p in param_group["params"]:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names

        for p in tensors:
            if not isinstance(p, _C.TensorBase):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and \
                    not getattr(p, "is_leaf", True):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)

        ids = {id(p) for p in tensors}
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                txt = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {txt} to the optimizer")
            if any(id(p) in ids for p in group["params"]):
                raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    def step(self, closure=None):
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # --- state_dict ---------------------------------------------------------------------
    def state_dict(self):
        """{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}:
        parameters are numbered in group order; state tensors are not copied."""
        mapping = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {(mapping[id(k)] if isinstance(k, _C.TensorBase) else k): v
                        for k, v in self.state.items()}
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Restores state saved by state_dict() (of this or PyTorch's optimizer,
        whose tensors are converted through NumPy). State tensors are copied and
        cast to their parameter's dtype, except "step"."""
        state_dict = dict(state_dict)
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            t = _as_ignis_tensor(value) if not isinstance(value, (dict, str, int, float)) \
                else None
            if t is not None:
                if key != "step" and param.is_floating_point():
                    return t.to(dtype=param.dtype, device=param.device).clone()
                return t.to(device=param.device).clone()
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        self.__setstate__({"state": state,
                           "param_groups": [update_group(g, ng)
                                            for g, ng in zip(groups, saved_groups)]})



Optimizer.zero_grad = _profiled(Optimizer.zero_grad, "zero_grad")

def _typename(obj):
    if isinstance(obj, _C.TensorBase):
        return "ignis." + type(obj).__name__
    mod = type(obj).__module__
    return type(obj).__qualname__ if mod == "builtins" else mod + "." + type(obj).__qualname__


def _params_with_grad(group):
    return [p for p in group["params"] if getattr(p, "grad", None) is not None]


def _implementation(group, params, name):
    """Which step implementation a group takes: "fused", "foreach" or
    "for-loop". Explicit flags decide as in torch. With foreach=None and
    fused=None: the foreach ops when every parameter is a CUDA tensor (their
    one-op-per-list calls and host-side step counts keep the GPU busy
    without a host sync), as torch; the fused kernel when every parameter is
    a float32 or float64 CPU tensor, where torch takes its for-loop (Note
    [The fused step by default on the CPU]); else the for-loop."""
    foreach, fused = group.get("foreach"), group.get("fused")
    if fused:
        for p in params:
            if not p.is_floating_point():
                raise RuntimeError(f"`fused=True` requires all the params to be floating point "
                                   f"Tensors, but {name} got one of dtype {p.dtype}")
        return "fused"
    differentiable = group.get("differentiable", False)
    if foreach is None and fused is None and not differentiable and params and all(
            p.device.type == "cpu" and p.dtype in _CPU_FUSED_DTYPES for p in params):
        return "fused"
    if foreach is None:
        foreach = not differentiable and len(params) > 0 and \
            all(p.device.type == "cuda" for p in params)
    return "foreach" if foreach else "for-loop"


# Note [The fused step by default on the CPU]
# torch's CPU optimizers default to the for-loop: ten or so ops per
# parameter, each a dispatch of a few microseconds on a small tensor, so the
# example GPT's AdamW step (28 parameters) took 1.1 ms of a 5 ms training
# step on 16 cores, and more with its OpenMP team waking for each op. The
# fused kernel (kernels/cpu/fused_optimizer.cpp: one parallel region over
# every parameter) does the step in one call. It computes each element with
# torch's fused formula in the parameter's precision, so parameters agree
# with the for-loop's to rounding (tests/python/test_optim_foreach.py), not
# bit for bit. Float16 and bfloat16 parameters keep the for-loop: there the
# for-loop rounds every op to the 16-bit type (eps=1e-8 becomes 0) and the
# fused step, in float, would change results by more than rounding.
# foreach=False (or True) and fused=False choose as torch does.
_CPU_FUSED_DTYPES = (_C.float32, _C.float64)


def _check_fused_flags(foreach, fused, differentiable):
    """torch's constructor checks of the fused flag."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _by_device(params):
    """Indices of params grouped by device, in first-seen order (a fused op
    takes tensors of one device)."""
    groups = {}
    for i, p in enumerate(params):
        groups.setdefault(str(p.device), []).append(i)
    return list(groups.values())


def _host_float(value):
    """A learning rate given as a tensor, as a Python float (the for-loop and
    foreach paths take numbers; the fused ops take the tensor itself)."""
    return float(value) if isinstance(value, _C.TensorBase) else value
