"""The hook-based spectral normalization (torch.nn.utils.spectral_norm):
the weight divided by its largest singular value sigma, estimated by power
iteration on buffers `<name>_u` and `<name>_v` (updated in training mode),
from the parameter `<name>_orig`."""
import ignis
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter, UninitializedParameter


class SpectralNorm:
    """The forward pre-hook that recomputes `name` = name_orig / sigma."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """`dim` first, the rest flattened: (weight.size(dim), -1)."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # The buffers are updated in place (as torch's out= normalize); sigma
            # then uses clones, so autograd sees no in-place change of its inputs.
            with ignis.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ignis.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ignis.mv(weight_mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = ignis.dot(u, ignis.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with ignis.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        with ignis.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            # Random unit starting vectors, as torch's (normal_, then normalized).
            u = F.normalize(ignis.randn(h, dtype=weight.dtype, device=weight.device), dim=0,
                            eps=fn.eps)
            v = F.normalize(ignis.randn(w, dtype=weight.dtype, device=weight.device), dim=0,
                            eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectrally normalizes parameter `name`; dim (the output dim) defaults
    to 1 for ConvTranspose modules and 0 otherwise. Returns the module."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Replaces the hook's `name_orig`/`name_u`/`name_v` by a plain parameter
    `name` holding the current normalized weight."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
