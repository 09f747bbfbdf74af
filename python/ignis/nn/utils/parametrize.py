"""torch.nn.utils.parametrize: a parameter or buffer `name` of a module
replaced by a function of other tensors, computed on every access.

register_parametrization() moves the tensor to
`module.parametrizations[name].original` (or original0, original1, ...
when the parametrization's right_inverse returns several tensors) and
swaps the module's class for a generated subclass,
`Parametrized<Class>`, holding a property `name`: reading it runs the
chain of parametrizations (cached inside `with cached():`), assigning to it
runs their right_inverse chain and stores the result in the originals.
"""
import contextlib
from collections.abc import Sequence

import ignis
from ..._C import TensorBase
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, on
    first access, and reused (for a forward that reads a weight many times)."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _assign(dest, src):
    """dest's values replaced by src's; returns the tensor that now holds them.

    torch calls dest.set_(src) (dest aliases src). ignis tensors have no
    set_, so values of the same shape and dtype are copied into dest, which
    keeps dest's identity (an optimizer holding it stays valid); otherwise
    a new tensor of dest's kind (Parameter or plain) wraps src."""
    with ignis.no_grad():
        if dest.shape == src.shape and dest.dtype == src.dtype and dest.device == src.device:
            if dest is not src:
                dest.copy_(src)
            return dest
        if isinstance(dest, Parameter):
            return Parameter(src.detach(), dest.requires_grad)
        return src.detach()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and its
    original(s): `original` when the right_inverse chain gives one tensor,
    `original0`, `original1`, ... when it gives a sequence."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        # The originals are what the right inverses make of the tensor
        # (parametrizations without one act as the identity here).
        with ignis.no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, TensorBase) and not isinstance(new, Sequence):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, TensorBase)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change "
                                 "the dtype.\n"
                                 f"original.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            _register_parameter_or_buffer(self, "original", _assign(original, new))
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, TensorBase):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the "
                                     f"sequence with type {type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                else:
                    originali = originali.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            # The parametrization must give back a tensor like the one it replaces.
            Z = self()
            if not isinstance(Z, TensorBase):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless `unsafe` flag is enabled.\n"
                                 f"unparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {Z.shape}")

    def right_inverse(self, value):
        """Stores `value` through the right_inverse chain (assignment to the tensor)."""
        with ignis.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
            if self.is_tensor:
                if not isinstance(value, TensorBase):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                new = _assign(self.original, value)
                if new is not self.original:
                    _register_parameter_or_buffer(self, "original", new)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError("'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, TensorBase):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                         f"Got element {i} of type {type(tensor).__name__}")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{tensor.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    new = _assign(original_i, tensor)
                    if new is not original_i:
                        _register_parameter_or_buffer(self, f"original{i}", new)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    """Gives `module` its own subclass (Parametrized<Class>) to hold the properties."""
    cls = module.__class__

    def getstate(self):
        raise RuntimeError(
            "Serialization of parametrized modules is only supported through state_dict(). "
            "See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html"
            "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module, tensor_name):
    assert not hasattr(module, tensor_name)

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(module), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrizes `module.<tensor_name>` (a parameter, buffer, or an
    already parametrized tensor, whose chain it extends) by the module
    `parametrization`. Unless `unsafe`, the parametrization must keep the
    tensor's shape and dtype. Returns the module."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, TensorBase):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError("Registering a parametrization may not change the dtype of "
                                 "the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.dtype: {Y.dtype}\n"
                                 f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
            if X.shape != Y.shape:
                raise ValueError("Registering a parametrization may not change the shape of "
                                 "the tensor, unless the `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}.shape: {Y.shape}\n"
                                 f"parametrization(module.{tensor_name}).shape: {X.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, TensorBase):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype:
                        raise ValueError("The tensor returned by parametrization.right_inverse "
                                         "must have the same dtype as "
                                         f"module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                                         f"returned dtype: {Z.dtype}")
                    if Z.shape != Y.shape:
                        raise ValueError("The tensor returned by parametrization.right_inverse "
                                         "must have the same shape as "
                                         f"module.{tensor_name}, unless the `unsafe` flag is "
                                         f"enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                                         f"returned shape: {Z.shape}")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether `module` has any parametrization (or one on `tensor_name`)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Removes the parametrizations of `tensor_name`: it becomes a plain
    parameter/buffer again, holding the current parametrized value
    (leave_parametrized=True, into the original tensor object when shapes
    allow) or the original. The module gets its class back once it has no
    parametrization left."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with ignis.no_grad():
                t = getattr(module, tensor_name)
            original = _assign(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before parametrizations were registered on it."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Registers `from_module`'s parametrizations (all, or those of
    `tensor_name`) on `to_module` and copies their originals' values;
    to_module gets a parameter of that name first if it has none."""
    if is_parametrized(from_module):
        names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
            for fn in from_module.parametrizations[name]:
                register_parametrization(to_module, name, fn)
            source, target = from_module.parametrizations[name], to_module.parametrizations[name]
            keys = ["original"] if hasattr(source, "original") else \
                [f"original{i}" for i in range(source.ntensors)]
            for key in keys:
                new = _assign(getattr(target, key), getattr(source, key))
                if new is not getattr(target, key):
                    _register_parameter_or_buffer(target, key, new)
    return to_module
