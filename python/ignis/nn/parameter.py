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


class _BufferMeta(type):
    # isinstance(t, Buffer) holds for the tensors Buffer() made (torch's _BufferMeta).
    def __instancecheck__(cls, instance):
        if cls is Buffer:
            return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a Module registers as a buffer when assigned as an
    attribute (torch.nn.Buffer): `self.running = nn.Buffer(t, persistent=False)`.
    It is a plain tensor (t detached, keeping its requires_grad) marked so."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from .. import empty
            data = empty(0)
        t = data.detach().requires_grad_(data.requires_grad)
        t.persistent = persistent
        t._is_buffer = True
        return t


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (torch.nn.UninitializedParameter):
    a lazy module (nn.LazyLinear) makes one, and materializes it on its first
    call, when the input tells the shape. Until then it holds no values: its
    `shape` raises, its repr is `<UninitializedParameter>`.

    materialize() turns this very object into a Parameter (resized in place,
    so an optimizer that already holds it keeps the real one); ignis tensors
    have no `data` setter, so it keeps its own dtype and device."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        from .. import empty
        return _C._make_subclass(cls, empty(0, device=device, dtype=dtype)) \
            .requires_grad_(requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass

    def materialize(self, shape, device=None, dtype=None):
        """Gives this parameter `shape` (uninitialized values) and makes it a Parameter."""
        from .. import empty, no_grad
        want = empty(0, device=device or self.device, dtype=dtype or self.dtype)
        if want.device != self.device or want.dtype != self.dtype:
            raise NotImplementedError(
                f"UninitializedParameter.materialize: the parameter is {self.dtype} on "
                f"{self.device}; ignis cannot make it {want.dtype} on {want.device} in place "
                "(convert the module before its first call instead)")
        requires_grad = self.requires_grad
        with no_grad():
            self.requires_grad_(False)  # resize_ refuses a tensor that requires grad
            self.resize_(tuple(shape))
        self.requires_grad_(requires_grad)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing their "
            "attributes.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, proto):
        return (type(self), (self.requires_grad, str(self.device), self.dtype))


class UninitializedBuffer(Tensor):
    """A buffer whose shape is not known yet (torch.nn.UninitializedBuffer):
    a lazy norm module's running statistics until its first call, which
    materializes it (in place, as UninitializedParameter) into a Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        from .. import empty
        return _C._make_subclass(cls, empty(0, device=device, dtype=dtype)) \
            .requires_grad_(requires_grad)

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass

    materialize = UninitializedParameter.materialize
    shape = UninitializedParameter.shape
    __repr__ = UninitializedParameter.__repr__
    __str__ = __repr__
    __deepcopy__ = UninitializedParameter.__deepcopy__
    __reduce_ex__ = UninitializedParameter.__reduce_ex__


def is_lazy(param):
    """Whether `param` is an UninitializedParameter or UninitializedBuffer
    (torch.nn.parameter.is_lazy)."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
