"""ignis.nn.Module: the base class of layers, with PyTorch's registration,
traversal, state_dict, mode, conversion and hook semantics."""
import itertools
import weakref
from collections import OrderedDict, namedtuple

from ... import _C
from ..._tensor import Tensor
from ..parameter import Buffer, Parameter, UninitializedParameter
from ...autograd.function import Function
from ._grad import no_grad


_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class RemovableHandle:
    """Returned by register_*_hook: `handle.remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks_dict, *extra_dicts):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        self.extra_dict_refs = [weakref.ref(d) for d in extra_dicts]

    def remove(self):
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_refs:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    # Copied or pickled with the module that stores it, the handle refers to
    # the copy's hook dicts (the dicts themselves are its state, so deepcopy's
    # memo maps them to the copies; a weakref would be copied as is and
    # remove the original's hook), as torch's handle does.
    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id, tuple(r() for r in self.extra_dict_refs))

    def __setstate__(self, state):
        hooks_dict, self.id, extra = state
        self.hooks_dict_ref = weakref.ref(hooks_dict if hooks_dict is not None else OrderedDict())
        self.extra_dict_refs = [weakref.ref(d if d is not None else OrderedDict()) for d in extra]

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(s, num_spaces):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


def _typename(value):
    if isinstance(value, Tensor):  # torch.typename's: ignis.FloatTensor
        from ..._legacy_types import type_name
        return type_name(value.dtype)
    return type(value).__module__ + "." + type(value).__qualname__ \
        if type(value).__module__ != "builtins" else type(value).__qualname__


def _as_ignis_tensor(value):
    """A checkpoint entry as an ignis tensor: ignis tensors as they are, NumPy
    arrays and other array-likes (e.g. CPU torch tensors) through NumPy."""
    if isinstance(value, _C.TensorBase):
        return value
    if hasattr(value, "__array__") and hasattr(value, "shape"):
        import numpy as np
        from ..._creation import from_numpy
        return from_numpy(np.ascontiguousarray(np.asarray(value)))
    return None


class Module:
    """Base class for all neural-network modules (PyTorch's nn.Module)."""

    dump_patches = False
    _version = 1
    training: bool
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = {}
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = OrderedDict()
        d["_forward_hooks_always_called"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = OrderedDict()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- registration ----------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.TensorBase):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(ignis Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(ignis.nn.Parameter or None required)")
        if param is not None and getattr(param, "grad_fn", None) is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        self._parameters[name] = param

    def add_module(self, name, module):
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    def register_module(self, name, module):
        self.add_module(name, module)

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        module_path, _, name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        def remove_from(*dicts_or_sets):
            for d in dicts_or_sets:
                if name in d:
                    if isinstance(d, dict):
                        del d[name]
                    else:
                        d.discard(name)

        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(self.__dict__, self._buffers, self._modules,
                        self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(ignis.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = self.__dict__.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(self.__dict__, self._parameters, self._buffers,
                            self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{_typename(value)}' as child module "
                                    f"'{name}' (ignis.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = self.__dict__.get("_buffers")
                if isinstance(value, Buffer):  # registered, persistent as it says
                    self.register_buffer(name, value, value.persistent)
                elif buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, _C.TensorBase):
                        raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                        "(ignis.nn.Buffer, ignis.Tensor or None expected)")
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._modules) \
            + list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)
        # Modules pickled before backward hooks existed.
        self.__dict__.setdefault("_backward_hooks", OrderedDict())
        self.__dict__.setdefault("_backward_pre_hooks", OrderedDict())

    def __deepcopy__(self, memo):
        """copy.deepcopy(module): buffers are cloned here (parameters clone
        themselves), so that tensor attributes need no pickling support."""
        import copy
        for buf in self._buffers.values():
            if buf is not None and id(buf) not in memo:
                memo[id(buf)] = _detached(buf).clone()
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    # --- traversal ---------------------------------------------------------------------
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = (self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
                   if recurse else [(prefix, self)])
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield module_prefix + ("." if module_prefix else "") + k, v

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                   recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                   recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_children(self):
        memo = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub_prefix, remove_duplicate)

    # --- modes ---------------------------------------------------------------------------
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            _zero_grad(p, set_to_none)

    # --- conversions ---------------------------------------------------------------------
    def _apply(self, fn, recurse=True):
        return self._apply_shared(fn, recurse, {})

    def _apply_shared(self, fn, recurse, memo):
        """_apply with `memo` (id of old parameter -> its replacement) shared by
        the whole tree, so a parameter tied between modules stays one object."""
        if recurse:
            for module in self.children():
                module._apply_shared(fn, True, memo)
        for key, param in self._parameters.items():
            if param is None:
                continue
            if id(param) in memo:
                self._parameters[key] = memo[id(param)]
                continue
            with no_grad():
                applied = fn(param)
            if applied is not param and not _same_tensor(applied, param):
                memo[id(param)] = self._parameters[key] = _replace_parameter(param, applied, fn)
            else:
                grad = getattr(param, "grad", None)
                if grad is not None:
                    with no_grad():
                        g = fn(grad)
                    if g is not grad and not _same_tensor(g, grad):
                        param.grad = g
        for key, buf in self._buffers.items():
            if buf is not None:
                self._buffers[key] = fn(buf)
        return self

    def apply(self, fn):
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        device, dtype, memory_format = _parse_to(*args, **kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            kwargs = {}
            if device is not None and t.device != device:
                kwargs["device"] = device
            if dtype is not None and t.is_floating_point() and t.dtype != dtype:
                kwargs["dtype"] = dtype
            # As torch: a memory format applies to the 4-D and 5-D tensors
            # (convolution weights), which it can lay out.
            if memory_format is not None and t.dim() in (4, 5):
                kwargs["memory_format"] = memory_format
            return t.to(**kwargs) if kwargs else t
        return self._apply(convert)

    def to_empty(self, *, device, recurse=True):
        """Parameters and buffers replaced by uninitialized tensors of their
        shapes and dtypes on `device` (torch's Module.to_empty: for modules
        built on the meta device, then materialized)."""
        import ignis
        return self._apply(lambda t: ignis.empty_like(t, device=device), recurse=recurse)

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def float(self):
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # --- state_dict ------------------------------------------------------------------------
    def get_extra_state(self):
        """State beyond parameters and buffers, saved under `_extra_state` when a
        subclass defines it (with set_extra_state to load it)."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never "
                           "be called.")

    def set_extra_state(self, state):
        """Loads what get_extra_state returned (a subclass defines both)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never "
                           "be called.")

    def _has_extra_state(self, which):
        return getattr(type(self), which, None) is not getattr(Module, which)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else _detached(param)
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else _detached(buf)
        if self._has_extra_state("get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        if args:  # PyTorch's deprecated positional form (destination, prefix, keep_vars)
            if len(args) > 3:
                raise TypeError(f"state_dict() takes at most 3 positional arguments "
                                f"({len(args)} given)")
            destination = args[0]
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        persistent_buffers = {k: v for k, v in self._buffers.items()
                              if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(),
                                                        persistent_buffers.items())
                       if v is not None}
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            input_param = _as_ignis_tensor(state_dict[key])
            if input_param is None:
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected ignis.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(state_dict[key])}")
                continue
            if len(param.shape) == 0 and len(input_param.shape) == 1 and \
                    input_param.shape[0] == 1:
                input_param = input_param[0]  # PyTorch's 0-dim backward compatibility
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                    f"from checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                if assign:
                    if isinstance(param, Parameter):
                        new = input_param if isinstance(input_param, Parameter) else Parameter(
                            input_param, getattr(param, "requires_grad", True))
                        setattr(self, name, new)
                    else:
                        setattr(self, name, input_param)
                else:
                    with no_grad():
                        param.copy_(input_param)
            except Exception as ex:  # noqa: BLE001 -- reported like PyTorch, with the key
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {param.shape} and whose dimensions in the checkpoint are "
                    f"{input_param.shape}, an exception occurred : {ex.args}.")
        extra_state_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if self._has_extra_state("set_extra_state"):
            if extra_state_key in state_dict:
                self.set_extra_state(state_dict[extra_state_key])
            elif strict:
                missing_keys.append(extra_state_key)
        elif strict and extra_state_key in state_dict:
            unexpected_keys.append(extra_state_key)
        if strict:
            for key in state_dict.keys():
                if key.startswith(prefix) and key != extra_state_key:
                    input_name = key[len(prefix):].split(".", 1)[0]
                    if input_name not in self._modules and input_name not in local_state:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True,
                                         missing_keys, unexpected_keys, error_msgs, assign)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    child_state = {k: v for k, v in local_state_dict.items()
                                   if k.startswith(child_prefix)}
                    load(child, child_state, child_prefix)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # --- hooks and calling ---------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        handle = RemovableHandle(self._forward_pre_hooks,
                                 self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        handle = RemovableHandle(self._forward_hooks, self._forward_hooks_with_kwargs,
                                 self._forward_hooks_always_called)
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) -> None or new grad_output: runs when the
        gradients of the module's outputs are computed, before its inputs'."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """hook(module, grad_input, grad_output) -> None or new grad_input: runs
        when the gradients of the module's positional tensor inputs are computed
        (grad_input has one entry per positional argument, None where no
        gradient is)."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks or self._backward_hooks
                or self._backward_pre_hooks):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        bw_hook = None
        if self._backward_hooks or self._backward_pre_hooks:
            # As torch's: the inputs' hook takes the pre-hooks' arguments, the
            # outputs' hook the forward hooks' result.
            bw_hook = _BackwardHook(self, list(self._backward_hooks.values()),
                                    list(self._backward_pre_hooks.values()))
            args = bw_hook.setup_input_hook(args)
        try:
            output = self.forward(*args, **kwargs)
        except Exception:
            # always_call hooks run even when forward raises (their result is dropped).
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    if hook_id in self._forward_hooks_with_kwargs:
                        hook(self, args, kwargs, None)
                    else:
                        hook(self, args, None)
            raise
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        if bw_hook is not None:
            output = bw_hook.setup_output_hook(output)
        return output

    # Set by Module.compile(): the compiled _call_impl that __call__ runs instead.
    _compiled_call_impl = None

    def _wrapped_call_impl(self, *args, **kwargs):
        if self._compiled_call_impl is not None:
            return self._compiled_call_impl(*args, **kwargs)
        return self._call_impl(*args, **kwargs)

    __call__ = _wrapped_call_impl

    def compile(self, *args, **kwargs):
        """Compiles this module's call in place (torch's nn.Module.compile): takes
        ignis.compile's arguments; later calls of the module run the compiled
        call, hooks included. The module keeps its type and state_dict keys."""
        from ..._compile import compile as _compile
        # As torch does: _call_impl's own frame (ignis code) runs eagerly and
        # the frames it calls (a user forward) are captured; an ignis layer
        # compiled this way alone captures nothing, as torch.nn's layers.
        self._compiled_call_impl = _compile(self._call_impl, *args, **kwargs)

    # --- printing ------------------------------------------------------------------------
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        return ""

    def __repr__(self):
        extra_lines = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"


class _BackwardHookFunction(Function):
    """Identity on a module's input or output tensors; its backward, which
    sees all their gradients at once, runs the module's backward hooks."""

    @staticmethod
    def forward(ctx, on_grads, materialize, *tensors):
        ctx.on_grads = on_grads
        ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, None) + tuple(ctx.on_grads(grads))


class _BackwardHook:
    """One call's full backward hooks (torch.utils.hooks.BackwardHook): the
    positional tensor inputs and the outputs pass through
    _BackwardHookFunction; the outputs' backward runs the pre-hooks on
    grad_output, the inputs' backward the hooks on (grad_input, grad_output).
    As torch's: a grad_output entry is None where that output got no gradient,
    a grad_input entry zeros where a tensor input got none."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_tensors_index = self.output_tensors_index = None

    @staticmethod
    def _pack_with_none(indices, values, size):
        res = [None] * size
        for idx, val in zip(indices, values):
            res[idx] = val
        return tuple(res)

    @staticmethod
    def _apply_on_tensors(on_grads, args, materialize):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (_C.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return args, None
        new = _BackwardHookFunction.apply(on_grads, materialize, *tensors)
        res = list(args)
        for i, t in zip(idx, new):
            res[i] = t
        return tuple(res), idx

    def setup_input_hook(self, args):
        def on_grads(grad_inputs):
            if self.grad_outputs is None:  # the inputs' gradient without the outputs'
                return grad_inputs
            res = self._pack_with_none(self.input_tensors_index, grad_inputs, self.n_inputs)
            for hook in self.user_hooks:
                out = hook(self.module, res, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(res):
                    raise RuntimeError(f"Backward hook returned an invalid number of "
                                       f"grad_input, got {len(out)}, but expected {len(res)}")
                res = out
            self.grad_outputs = None
            return tuple(res[i] for i in self.input_tensors_index)

        self.n_inputs = len(args)
        args, self.input_tensors_index = self._apply_on_tensors(on_grads, args, True)
        return args

    def setup_output_hook(self, result):
        def on_grads(grad_outputs):
            self.grad_outputs = self._pack_with_none(self.output_tensors_index, grad_outputs,
                                                     self.n_outputs)
            for hook in self.user_pre_hooks:
                out = hook(self.module, self.grad_outputs)
                if out is None:
                    continue
                if len(out) != len(self.grad_outputs):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of "
                                       f"grad_output, got {len(out)}, but expected "
                                       f"{len(self.grad_outputs)}")
                self.grad_outputs = out
            local_grad_outputs = self.grad_outputs
            if self.input_tensors_index is None:  # no input needs a gradient: hooks run here
                grad_inputs = self._pack_with_none([], [], self.n_inputs)
                for hook in self.user_hooks:
                    res = hook(self.module, grad_inputs, self.grad_outputs)
                    if res is not None and not (isinstance(res, tuple) and
                                                all(r is None for r in res)):
                        raise RuntimeError("Backward hook for Modules where no input requires "
                                           "gradient should always return None or None for all "
                                           "gradients.")
                self.grad_outputs = None
            return tuple(local_grad_outputs[i] for i in self.output_tensors_index)

        if not isinstance(result, (Tensor, tuple)):
            import warnings
            warnings.warn("For backward hooks to be called, module output should be a Tensor or "
                          f"a tuple of Tensors but received {type(result)}", stacklevel=3)
            return result
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        self.n_outputs = len(outs)
        outs, self.output_tensors_index = self._apply_on_tensors(on_grads, outs, False)
        return outs[0] if single else outs


def _zero_grad(p, set_to_none):
    grad = getattr(p, "grad", None)
    if grad is None:
        return
    if set_to_none:
        p.grad = None
    else:
        if getattr(grad, "grad_fn", None) is not None:
            grad.detach_()
        elif getattr(grad, "requires_grad", False):
            grad.requires_grad_(False)
        grad.zero_()


def _detached(t):
    return t.detach()


def _same_tensor(a, b):
    return (a.dtype == b.dtype and a.device == b.device and a.data_ptr() == b.data_ptr()
            and tuple(a.shape) == tuple(b.shape) and tuple(a.stride()) == tuple(b.stride()))


def _replace_parameter(param, applied, fn):
    """A converted parameter: PyTorch swaps `param.data` in place; where the
    tensor type offers no data setter a new Parameter takes its place."""
    data_prop = getattr(type(param), "data", None)
    if isinstance(data_prop, property) and data_prop.fset is not None:
        param.data = applied
        new = param
    elif isinstance(param, UninitializedParameter):  # a lazy module's: converted, still lazy
        new = UninitializedParameter(param.requires_grad, applied.device, applied.dtype)
    else:
        new = Parameter(applied, getattr(param, "requires_grad", True))
    grad = getattr(param, "grad", None)
    if grad is not None:
        with no_grad():
            new.grad = fn(grad)
    return new


def _parse_to(*args, **kwargs):
    """(device, dtype, memory_format) from Module.to's forms: to(device),
    to(dtype), to(device, dtype), to(tensor), keywords device= / dtype= /
    memory_format=."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if memory_format is not None and not isinstance(memory_format, _C.memory_format):
        raise TypeError("to(): argument 'memory_format' must be ignis.memory_format, not "
                        f"{type(memory_format).__name__}")
    tensor = kwargs.pop("tensor", None)
    if kwargs:
        raise TypeError(f"to() received an invalid combination of arguments: {sorted(kwargs)}")
    for a in args:
        if isinstance(a, _C.dtype):
            dtype = a
        elif isinstance(a, (str, _C.device, int)) and not isinstance(a, bool):
            device = _C.device(a) if not isinstance(a, _C.device) else a
        elif isinstance(a, _C.TensorBase):
            tensor = a
        elif isinstance(a, bool):
            continue  # non_blocking
        else:
            raise TypeError(f"to() received an invalid argument of type {type(a).__name__}")
    if tensor is not None:
        device, dtype = tensor.device, tensor.dtype
    if isinstance(device, str):
        device = _C.device(device)
    return device, dtype, memory_format
