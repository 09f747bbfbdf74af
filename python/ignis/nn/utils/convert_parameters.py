"""parameters_to_vector / vector_to_parameters (torch.nn.utils.convert_parameters)."""
import ignis
from ..._C import TensorBase


def _check_param_device(param, old_device):
    """All parameters must live on one device (torch's rule and message)."""
    if old_device is None:
        return param.device
    if param.device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return old_device


def parameters_to_vector(parameters):
    """The parameters flattened and concatenated into one 1-d tensor (a new
    tensor, in the autograd graph of the parameters)."""
    device, flat = None, []
    for param in parameters:
        device = _check_param_device(param, device)
        flat.append(param.reshape(-1))
    return ignis.cat(flat)


def vector_to_parameters(vec, parameters):
    """Copies consecutive slices of the 1-d `vec` into the parameters.

    torch rebinds each parameter's .data to a view of `vec`; ignis tensors
    have no .data setter, so the values are copied in place instead (the
    parameters keep their identity and stop aliasing `vec`)."""
    if not isinstance(vec, TensorBase):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    with ignis.no_grad():
        for param in parameters:
            device = _check_param_device(param, device)
            n = param.numel()
            param.copy_(vec[pointer:pointer + n].view_as(param))
            pointer += n
