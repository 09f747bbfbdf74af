"""LazyModuleMixin: modules whose parameters take their shapes from the first input.

As torch.nn.modules.lazy: a lazy module holds UninitializedParameters; a
forward pre-hook calls initialize_parameters(*input) on the first call,
then removes itself and turns the module into `cls_to_become` (LazyLinear
becomes a Linear). state_dict() holds the uninitialized parameters as they
are; load_state_dict() materializes them with the shapes it loads.
"""
import itertools

from ..parameter import is_lazy


class LazyModuleMixin:
    # The class a fully initialized module turns into (None: it keeps its own).
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The hook's id, not its handle: a deepcopy of the module copies its hook
        # table with the same ids, and a handle would remove the original's.
        self._initialize_hook_id = self.register_forward_pre_hook(self._infer_parameters).id

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                lazy = is_lazy(param)
                destination[prefix + name] = param if lazy or keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, assign=False):
        # An uninitialized parameter takes the loaded one's shape; one loaded from
        # an uninitialized state_dict stays uninitialized (nothing to copy).
        both_lazy = set()
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None and is_lazy(param):
                if is_lazy(state_dict[key]):
                    both_lazy.add(key)
                else:
                    param.materialize(tuple(state_dict[key].shape))
        rest = {k: v for k, v in state_dict.items() if k not in both_lazy}
        super()._load_from_state_dict(rest, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, assign)
        missing_keys[:] = [k for k in missing_keys if k not in both_lazy]

    def initialize_parameters(self, *args, **kwargs):
        """Materializes the parameters from the first call's arguments."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}")

    def has_uninitialized_params(self):
        """Whether a parameter or buffer of this module is still uninitialized."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                       self._buffers.values()))

    def _infer_parameters(self, module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._forward_pre_hooks.pop(module._initialize_hook_id, None)
        del module._initialize_hook_id
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
