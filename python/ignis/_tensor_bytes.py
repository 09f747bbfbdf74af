"""Raw bytes in and out of tensors, and pickling by value.

Every dtype goes through here, bfloat16 included (NumPy has no bfloat16, so
bytes are copied through a uint8 buffer that a tensor of the right dtype
views). Pickling a tensor stores its elements, dtype, shape and
requires_grad: what DataLoader workers send to the main process and what
`pickle.dumps(tensor)` and `copy.deepcopy` use. ignis.save writes PyTorch's
checkpoint format instead (ignis/serialization.py).
"""
import numpy as np

from . import _C


def dtype_name(dtype):
    """'float32' for ignis.float32."""
    return str(dtype).split(".")[-1]


def to_bytes(t):
    """The elements of `t` in row-major order as a uint8 NumPy array."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    isz = t.element_size()
    buf = np.empty(t.numel() * isz, np.uint8)
    if t.numel():
        shape = tuple(t.shape)
        strides, step = [], isz
        for s in reversed(shape):
            strides.append(step)
            step *= max(s, 1)
        dst = _C._from_buffer(buf, buf.ctypes.data, shape, tuple(reversed(strides)), t.dtype)
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            dst.copy_(t)
        finally:
            _C._set_grad_enabled(prev)
    return buf


def from_bytes(data, dtype, shape):
    """A new contiguous tensor (owning its memory) of `dtype` and `shape`
    whose elements are the bytes `data` (bytes, bytearray, memoryview or a
    NumPy array) in row-major order."""
    import ignis
    shape = tuple(int(s) for s in shape)
    numel = 1
    for s in shape:
        numel *= s
    isz = _itemsize(dtype)
    arr = np.frombuffer(data, np.uint8) if not isinstance(data, np.ndarray) else data.view(np.uint8)
    if arr.size != numel * isz:
        raise RuntimeError(f"expected {numel * isz} bytes for a {dtype_name(dtype)} tensor of "
                           f"shape {list(shape)}, got {arr.size}")
    if numel == 0:
        return ignis.empty(shape, dtype=dtype)
    arr = np.ascontiguousarray(arr)
    flat = _C._from_buffer(arr, arr.ctypes.data, (numel,), (isz,), dtype)
    return flat.clone().view(shape)


_ITEMSIZE = {"bool": 1, "uint8": 1, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
             "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


def _itemsize(dtype):
    return _ITEMSIZE[dtype_name(dtype)]


# --- pickling by value ------------------------------------------------------------------

def reduce_tensor(t):
    """__reduce_ex__ of ignis.Tensor and its subclasses."""
    state = dict(getattr(t, "__dict__", None) or {})
    return (_rebuild_tensor, (type(t), to_bytes(t).tobytes(), dtype_name(t.dtype), tuple(t.shape),
                              t.requires_grad, state or None))


def _rebuild_tensor(cls, data, dtype, shape, requires_grad, state=None):
    from ._tensor import Tensor
    t = from_bytes(data, getattr(_C, dtype), shape)
    if cls is not Tensor:
        from .nn.parameter import Parameter
        if issubclass(cls, Parameter):
            t = cls(t, requires_grad)
        else:
            t = _C._make_subclass(cls, t)
    if requires_grad and not t.requires_grad:
        t.requires_grad_(True)
    if state:
        t.__dict__.update(state)
    return t
