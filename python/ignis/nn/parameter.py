"""ignis.nn.Parameter: a tensor that a Module registers as a learnable weight."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one as a Module attribute
    registers it, and it requires grad by default. Shares `data`'s memory."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from .. import empty
            data = empty(0)
        if not isinstance(data, _C.TensorBase):
            raise TypeError(f"Parameter(): data must be a Tensor, not {type(data).__name__}")
        return _C._make_subclass(cls, data).requires_grad_(requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(Tensor.clone(self).detach(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        from .._tensor_bytes import reduce_tensor
        return reduce_tensor(self)
