"""Building tensors from Python data and NumPy arrays."""
import collections.abc
import numbers

import numpy as np

from . import _C
from ._tensor import Tensor

_NP_TO_IGNIS = {
    np.dtype("bool"): _C.bool, np.dtype("uint8"): _C.uint8, np.dtype("int8"): _C.int8,
    np.dtype("int16"): _C.int16, np.dtype("int32"): _C.int32, np.dtype("int64"): _C.int64,
    np.dtype("float16"): _C.float16, np.dtype("float32"): _C.float32,
    np.dtype("float64"): _C.float64, np.dtype("complex64"): _C.complex64,
    np.dtype("complex128"): _C.complex128,
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
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. "
                         "Conversion between byte orders is currently not supported.")
    dt = _NP_TO_IGNIS.get(arr.dtype)
    if dt is None:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool.")
    addr = arr.__array_interface__["data"][0]
    return _C._from_buffer(arr, addr, arr.shape, arr.strides, dt)


def _is_sequence(x):
    """What torch.tensor descends into: any Python sequence but a string
    (lists, tuples, deques, ranges), and arrays or tensors with dimensions
    (a 0-dim array or tensor is a number)."""
    if isinstance(x, (list, tuple)):
        return True
    if isinstance(x, (np.ndarray, Tensor)):
        return x.ndim > 0
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes, bytearray))


def _shape(data):
    """The shape torch.tensor reads off the first element at each level."""
    sizes = []
    x = data
    while _is_sequence(x) or isinstance(x, str):
        if isinstance(x, str):
            raise ValueError("too many dimensions 'str'")
        if isinstance(x, (np.ndarray, Tensor)):
            return sizes + list(x.shape)
        sizes.append(len(x))
        if not sizes[-1]:
            break
        x = x[0]
    return sizes


def _leaf_dtype(x):
    """The dtype PyTorch gives one number: bool, int64, the default float, or
    the dtype of a NumPy scalar or 0-dim tensor/array."""
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, (np.ndarray, np.generic)):
        dt = _NP_TO_IGNIS.get(x.dtype)
        if dt is None:
            raise TypeError(f"can't convert np.ndarray of type numpy.{x.dtype}")
        return dt
    if isinstance(x, bool):
        return _C.bool
    if isinstance(x, numbers.Integral):
        return _C.int64
    if isinstance(x, numbers.Real):
        return _C.get_default_dtype()
    if isinstance(x, numbers.Complex):  # the default dtype's complex type (complex64)
        return _C.get_default_dtype().to_complex()
    if isinstance(x, str):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _flatten(x, sizes, dim, out):
    """Appends the numbers of `x` (at depth `dim`) to `out`, checking that it
    is rectangular with the given sizes."""
    if dim == len(sizes):
        if _is_sequence(x):
            raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as a number")
        out.append(x)
        return
    if not _is_sequence(x):
        raise TypeError("not a sequence")
    if len(x) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
    if isinstance(x, (np.ndarray, Tensor)):
        # Whole arrays and tensors: their elements, already rectangular.
        if list(x.shape) != sizes[dim:]:
            raise ValueError(f"expected an array of shape {sizes[dim:]} at dim {dim} "
                             f"(got {list(x.shape)})")
        out.extend(x.reshape(-1).tolist())
        return
    for item in x:
        _flatten(item, sizes, dim + 1, out)


def _infer(data):
    """dtype PyTorch infers for nested Python data: the promotion of every
    number's own dtype; the default float dtype when there are none."""
    result = None
    stack = [data]
    while stack:
        x = stack.pop()
        if _is_sequence(x):
            if isinstance(x, Tensor):
                d = x.dtype
            elif isinstance(x, np.ndarray):
                d = _leaf_dtype(x)
            else:
                stack.extend(x)
                continue
        else:
            d = _leaf_dtype(x)
        result = d if result is None else _C.promote_types(result, d)
    return _C.get_default_dtype() if result is None else result


_INT_RANGES = {_C.uint8: (-255, 255), _C.int8: (-128, 127), _C.int16: (-2 ** 15, 2 ** 15 - 1),
               _C.int32: (-2 ** 31, 2 ** 31 - 1), _C.int64: (-2 ** 63, 2 ** 63 - 1)}


def _check_fits(values, dtype):
    """Python numbers stored into an integer dtype must fit it (unsigned ones
    wrap negative values down to -max), as in torch.tensor."""
    rng = _INT_RANGES.get(dtype)
    if rng is None or not len(values):
        return
    lo, hi = rng
    if values.dtype.kind == "f":
        lo = max(lo, 0) if dtype is _C.uint8 else lo
        ok = np.isfinite(values) & (values >= lo) & (values <= hi)
    else:
        ok = (values >= lo) & (values <= hi)
    if not ok.all():
        name = str(dtype).split(".")[-1]
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def _from_python(data, dtype):
    """A tensor from nested sequences of numbers (and 0-dim tensors/arrays)."""
    sizes = _shape(data)
    inferred = _infer(data)
    target = dtype if dtype is not None else inferred
    flat = []
    _flatten(data, sizes, 0, flat)
    flat = [x.item() if isinstance(x, (Tensor, np.ndarray, np.generic)) else x for x in flat]
    np_dt = (np.bool_ if inferred is _C.bool else np.complex128 if inferred.is_complex
             else np.float64 if inferred.is_floating_point else np.int64)
    try:
        arr = np.array(flat, dtype=np_dt).reshape(sizes)
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    _check_fits(arr.reshape(-1), target)
    return from_numpy(arr).to(target, copy=True)


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays)."""
    if isinstance(data, Tensor):
        out = data.detach().clone() if hasattr(data, "detach") else data.clone()
        if dtype is not None or device is not None:
            out = out.to(dtype=dtype, device=device)
    elif isinstance(data, (np.ndarray, np.generic)):
        out = from_numpy(np.asarray(data, order="C")).clone()
        if dtype is not None:
            out = out.to(dtype)
    else:
        out = _from_python(data, dtype)
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
