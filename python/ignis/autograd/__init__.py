"""ignis.autograd: reverse-mode automatic differentiation.

The graph is recorded in C++ by the dispatcher's Autograd kernel (see
src/ignis/autograd); this package is the PyTorch-shaped front end:
backward(), grad(), gradcheck() and the grad-mode context managers.
"""
from .. import _C
from .grad_mode import (  # noqa: F401
    no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
    is_inference_mode_enabled,
)
from .gradcheck import gradcheck, gradgradcheck  # noqa: F401
from .function import Function, FunctionCtx, once_differentiable  # noqa: F401
from . import graph, profiler  # noqa: E402,F401
from .anomaly_mode import (  # noqa: E402,F401
    detect_anomaly, set_detect_anomaly, is_anomaly_enabled, is_anomaly_check_nan_enabled,
    set_anomaly_enabled, _LeafChecks,
)

__all__ = ["backward", "grad", "gradcheck", "gradgradcheck", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode", "Function", "detect_anomaly",
           "set_detect_anomaly", "functional"]

Node = _C._FunctionBase


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,)


def _grads_for(outputs, grad_outputs):
    grads = _as_tuple(grad_outputs)
    if not grads:
        return [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs: got "
                           f"{len(grads)} gradients for {len(outputs)} outputs")
    out = []
    for g, o in zip(grads, outputs):
        if g is not None and not isinstance(g, _C.TensorBase):
            from .. import tensor as _tensor
            g = _tensor(g, dtype=o.dtype)
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the sum of gradients of `tensors` w.r.t. the graph leaves,
    accumulating them into each leaf's .grad."""
    if inputs is not None:
        raise NotImplementedError("ignis.autograd.backward(inputs=...) is not supported; "
                                  "use ignis.autograd.grad")
    tensors = _as_tuple(tensors)
    if retain_graph is None:
        retain_graph = create_graph
    with _LeafChecks(tensors):  # anomaly detection's NaN checks, when it is on
        _C._run_backward(tensors, _grads_for(tensors, grad_tensors), bool(retain_graph),
                         bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Returns the gradients of `outputs` w.r.t. `inputs` (a tuple), without
    touching any .grad."""
    if is_grads_batched:
        raise NotImplementedError("ignis.autograd.grad(is_grads_batched=True) is not supported")
    single = not isinstance(inputs, (tuple, list))
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    checks = _LeafChecks(outputs, inputs)  # anomaly detection's NaN checks, when it is on
    res = _C._run_grad(outputs, _grads_for(outputs, grad_outputs), inputs, bool(retain_graph),
                       bool(create_graph), bool(allow_unused))
    checks.check_results(inputs, res)
    if materialize_grads:
        from .. import zeros_like
        res = tuple(zeros_like(i) if r is None else r for r, i in zip(res, inputs))
    return res


def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Computes the gradient of this tensor w.r.t. the graph leaves."""
    backward(self, gradient, retain_graph, create_graph, inputs)


class RemovableHandle:
    """Returned by Tensor.register_hook; remove() unregisters the hook."""

    def __init__(self, tensor, hook_id):
        self._tensor, self._id = tensor, hook_id

    def remove(self):
        if self._tensor is not None:
            self._tensor._remove_hook(self._id)
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _tensor_register_hook(self, hook):
    """hook(grad) -> Tensor or None runs each time this tensor's gradient is
    computed; a returned tensor replaces the gradient."""
    return RemovableHandle(self, self._register_hook(hook))


def _tensor_register_post_accumulate_grad_hook(self, hook):
    """hook(tensor) -> None runs each time a gradient has been accumulated into
    this leaf's .grad (an optimizer step per parameter during backward)."""
    return RemovableHandle(self, self._register_post_accumulate_grad_hook(hook))


def _install(namespace, tensor_cls):
    """Adds Tensor.backward (factories take `requires_grad=` in C++)."""
    tensor_cls.backward = _tensor_backward
    tensor_cls.register_hook = _tensor_register_hook
    tensor_cls.register_post_accumulate_grad_hook = _tensor_register_post_accumulate_grad_hook


from . import functional  # noqa: E402,F401  (uses grad, defined above)
