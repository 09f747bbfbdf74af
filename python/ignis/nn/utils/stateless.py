"""torch.nn.utils.stateless: functional_call, the module run with other
tensors in place of its parameters and buffers (ignis.func.functional_call;
torch keeps this older spelling, deprecated there, with the same semantics)."""
import warnings


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True,
                    strict=False):
    """module(*args, **kwargs) with the given tensors in place of its
    parameters and buffers (torch.nn.utils.stateless.functional_call)."""
    warnings.warn("This API is deprecated as of PyTorch 2.0 and will be removed in a future "
                  "version of PyTorch. Please use torch.func.functional_call instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    from ...func import functional_call as call
    return call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights,
                strict=strict)
