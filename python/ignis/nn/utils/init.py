"""skip_init: a module built without running its parameter initialization."""
import inspect


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with uninitialized parameters and buffers:
    built on the meta device (no memory, no init kernels), then given empty
    tensors on `device` (default cpu). The class must take a `device` argument."""
    from ..modules.module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
