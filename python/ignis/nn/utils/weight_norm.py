"""The hook-based weight normalization (torch.nn.utils.weight_norm, which
torch deprecates for nn.utils.parametrizations.weight_norm):
w = g * v / ||v||, the norm taken over every dim but `dim`, with g and v
the module's parameters `<name>_g` and `<name>_v` and w recomputed by a
forward pre-hook."""
import warnings

from ..parameter import Parameter, UninitializedParameter


def norm_except_dim(v, pow=2, dim=0):
    """||v||_pow over every dim but `dim`, kept as size-1 dims (torch's
    norm_except_dim); dim=-1 means the norm of the whole tensor (0-dim)."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    if not others:
        return v.abs() if pow != 0 else (v != 0).to(v.dtype)
    return v.norm(pow, dim=others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """v * (g / ||v||), the norm as norm_except_dim's (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes `name` from `name_g` and `name_v`."""

    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return _weight_norm(v, g, self.dim)

    @staticmethod
    def apply(module, name, dim):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Replaces parameter `name` by `name_g` (magnitude, shaped as
    norm_except_dim's result) and `name_v` (direction); dim=None normalizes
    the whole tensor. Returns the module."""
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Folds `name_g` and `name_v` back into a plain parameter `name`."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
