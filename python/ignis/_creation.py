"""Building tensors from Python data and NumPy arrays."""
import numbers

import numpy as np

from . import _C
from ._tensor import Tensor

_NP_TO_IGNIS = {
    np.dtype("bool"): _C.bool, np.dtype("uint8"): _C.uint8, np.dtype("int8"): _C.int8,
    np.dtype("int16"): _C.int16, np.dtype("int32"): _C.int32, np.dtype("int64"): _C.int64,
    np.dtype("float16"): _C.float16, np.dtype("float32"): _C.float32,
    np.dtype("float64"): _C.float64,
}


def _np_dtype_of(d):
    for k, v in _NP_TO_IGNIS.items():
        if v is d:
            return k
    raise TypeError(f"{d} has no NumPy equivalent")


def from_numpy(arr):
    """A tensor sharing memory with the NumPy array `arr` (no copy)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dt = _NP_TO_IGNIS.get(arr.dtype)
    if dt is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order")
    addr = arr.__array_interface__["data"][0]
    return _C._from_buffer(arr, addr, arr.shape, arr.strides, dt)


def _infer(data):
    """dtype PyTorch infers for nested Python data: bool < int < float."""
    kind = 0
    stack = [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, Tensor):
            kind = max(kind, 2 if x.dtype.is_floating_point else (0 if x.dtype is _C.bool else 1))
        elif isinstance(x, bool) or isinstance(x, np.bool_):
            pass
        elif isinstance(x, numbers.Integral):
            kind = max(kind, 1)
        elif isinstance(x, numbers.Real):
            kind = 2
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    return [_C.bool, _C.int64, _C.get_default_dtype()][kind]


def _to_nested(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_to_nested(x) for x in data]
    return data


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays)."""
    if isinstance(data, Tensor):
        out = data.detach().clone() if hasattr(data, "detach") else data.clone()
        if dtype is not None or device is not None:
            out = out.to(dtype=dtype, device=device)
    elif isinstance(data, np.ndarray):
        out = from_numpy(np.ascontiguousarray(data)).clone()
        if dtype is not None:
            out = out.to(dtype)
    elif isinstance(data, np.generic):
        return tensor(np.asarray(data), dtype=dtype, device=device, requires_grad=requires_grad)
    else:
        inferred = _infer(data)
        target = dtype if dtype is not None else inferred
        nested = _to_nested(data)
        np_dt = {_C.bool: np.bool_, _C.int64: np.int64}.get(inferred, np.float64)
        try:
            arr = np.array(nested, dtype=np_dt)
        except ValueError as e:
            raise ValueError(f"expected sequence of equal-length lists to build a tensor: {e}") from None
        if arr.dtype == object:
            raise ValueError("expected a rectangular nested sequence of numbers")
        out = from_numpy(arr).to(target, copy=True)
    if device is not None:
        out = out.to(device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or data.dtype is dtype) and device is None:
        return data
    if isinstance(data, np.ndarray) and dtype is None and device is None and data.dtype in _NP_TO_IGNIS:
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def scalar_tensor(value, *, dtype=None, device=None):
    return tensor(value, dtype=dtype if dtype is not None else _C.get_default_dtype(), device=device)
