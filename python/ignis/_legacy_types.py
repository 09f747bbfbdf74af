"""torch's legacy tensor types: ignis.FloatTensor, ignis.LongTensor, ... (a
torch.tensortype each). Calling one makes a CPU tensor of its dtype, as
torch's legacy constructors do: FloatTensor(2, 3) or FloatTensor(size) an
uninitialised one, FloatTensor([1, 2]) one of the data, FloatTensor() an
empty one, FloatTensor(t) t itself (of that dtype); ignis.Tensor(data) is
the default dtype's. isinstance(t, ignis.FloatTensor) checks t's dtype, and
Tensor.type() takes the types and their names."""
from . import _C

# torch's type names (Tensor.type()): name -> dtype name.
_NAMES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
          "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
          "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}
_BY_DTYPE = {v: k for k, v in _NAMES.items()}


def type_name(dtype):
    """The legacy type name of a dtype: ignis.FloatTensor for float32."""
    return "ignis." + _BY_DTYPE[str(dtype).split(".")[-1]] + "Tensor"


def dtype_of(name):
    """The dtype of a legacy type name ("torch.FloatTensor", "ignis.LongTensor",
    "FloatTensor"), None for a name that is not one."""
    if not isinstance(name, str) or not name.endswith("Tensor"):
        return None
    short = name.rsplit(".", 1)[-1][:-len("Tensor")]
    return getattr(_C, _NAMES[short]) if short in _NAMES else None


def legacy_new(dtype, args, device=None):
    """What torch's legacy constructors make of their arguments."""
    from ._creation import tensor
    from ._size import Size
    from ._tensor import Tensor
    import numbers
    import ignis
    if device is not None and ignis.device(device).type != "cpu":
        raise RuntimeError("legacy constructor expects device type: cpu but device type: "
                           f"{ignis.device(device).type} was passed")
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t.dtype != dtype:
            raise TypeError(f"expected {dtype} (got {t.dtype})")
        return Tensor(t)  # an alias, as torch's
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args) or \
            (len(args) == 1 and isinstance(args[0], Size)):
        sizes = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args
        return ignis.empty(sizes if sizes else (0,), dtype=dtype)
    if len(args) == 1:
        from ._creation import _is_sequence
        import numpy as np
        data = args[0]
        if _is_sequence(data) or isinstance(data, np.ndarray):
            return tensor(data, dtype=dtype)
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    raise TypeError(f"new() received an invalid combination of arguments - got "
                    f"({', '.join(type(a).__name__ for a in args)})")


class tensortype(type):
    """The type of ignis.FloatTensor and its kin (torch.tensortype)."""

    def __instancecheck__(cls, obj):
        from ._tensor import Tensor
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        return legacy_new(cls.dtype, args, device)


def install(namespace):
    for short, name in _NAMES.items():
        cls = tensortype(short + "Tensor", (), {"dtype": getattr(_C, name), "is_cuda": False,
                                                 "is_sparse": False, "__module__": "ignis"})
        namespace[cls.__name__] = cls
