"""ignis.Tensor: the Python face of the C++ tensor.

Operators declared in C++ are attached to this class by ignis._ops; what is
here is Python protocol glue (operators, conversions, printing, NumPy).
"""
import numpy as np

from . import _C


# Filled by ignis._ops.install: op name -> op object.
_OPS = {}

_DUNDER_OPS = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_",
    "__sub__": "sub", "__rsub__": "rsub", "__isub__": "sub_",
    "__mul__": "mul", "__rmul__": "mul", "__imul__": "mul_",
    "__truediv__": "div", "__itruediv__": "div_",
    "__floordiv__": "floor_divide", "__ifloordiv__": "floor_divide_",
    "__mod__": "remainder", "__imod__": "remainder_",
    "__pow__": "pow", "__ipow__": "pow_", "__matmul__": "matmul",
    "__neg__": "neg", "__abs__": "abs",
    "__and__": "bitwise_and", "__rand__": "bitwise_and", "__iand__": "bitwise_and_",
    "__or__": "bitwise_or", "__ror__": "bitwise_or", "__ior__": "bitwise_or_",
    "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor", "__ixor__": "bitwise_xor_",
    "__lshift__": "bitwise_left_shift", "__ilshift__": "bitwise_left_shift_",
    "__rshift__": "bitwise_right_shift", "__irshift__": "bitwise_right_shift_",
    "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
}


class Tensor(_C.TensorBase):
    def __new__(cls, *args, **kwargs):
        # Tensor(data) and Tensor(): torch's legacy constructor of the default
        # dtype's tensor (Tensor() has shape (0,)); Tensor(*sizes) and
        # Tensor(t) are the C++ constructor's.
        if cls is Tensor and not (len(args) == 1 and isinstance(args[0], _C.TensorBase)) \
                and not (args and all(isinstance(a, int) and not isinstance(a, bool)
                                      for a in args)):
            from ._legacy_types import legacy_new
            return legacy_new(_C.get_default_dtype(), args, **kwargs)
        return super().__new__(cls, *args, **kwargs)

    # --- printing -----------------------------------------------------------------
    def __repr__(self):
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # --- Python number protocol -----------------------------------------------------
    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {'no' if self.numel() == 0 else 'more than one'} "
                "values is ambiguous")
        return bool(self.item())

    def _scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self._scalar())

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element):
        return bool((self == element).any().item())

    __hash__ = _C.TensorBase.__hash__

    # Arithmetic and comparison operators are the op objects themselves
    # (bound in _ops.install from _DUNDER_OPS below): `a + b` reaches the C++
    # op with no Python frame in between. Reflected forms of non-commutative
    # ops wrap the Python number first so it promotes like a scalar.
    def __rtruediv__(self, other): return _OPS["div"](_C._wrap_number(other), self)
    def __rfloordiv__(self, other): return _OPS["floor_divide"](_C._wrap_number(other), self)
    def __rmod__(self, other): return _OPS["remainder"](_C._wrap_number(other), self)
    def __rpow__(self, other): return _OPS["pow"](_C._wrap_number(other), self)
    def __rlshift__(self, other): return _OPS["bitwise_left_shift"](_C._wrap_number(other), self)
    def __rrshift__(self, other): return _OPS["bitwise_right_shift"](_C._wrap_number(other), self)
    def __rmatmul__(self, other): return _OPS["matmul"](other, self)
    def __pos__(self):
        if self.dtype is _C.bool:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    def __eq__(self, other):
        return _OPS["eq"](self, other) if _comparable(other) else NotImplemented

    def __ne__(self, other):
        return _OPS["ne"](self, other) if _comparable(other) else NotImplemented

    def __invert__(self):
        if self.dtype.is_floating_point:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                            "tensors")
        return _OPS["bitwise_not"](self)

    def nonzero(self, *, as_tuple=False):
        return _OPS["where"](self) if as_tuple else _OPS["nonzero"](self)

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        from . import unique
        return unique(self, sorted, return_inverse, return_counts, dim)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        from . import unique_consecutive
        return unique_consecutive(self, return_inverse, return_counts, dim)

    def where(self, condition, other):
        """self where condition holds, other elsewhere (torch.where(condition, self, other))."""
        return _OPS["where"](condition, self, other)

    # --- indexing ----------------------------------------------------------------------
    def __getitem__(self, index):
        return _C._getitem(self, index)

    def __setitem__(self, index, value):
        _C._setitem(self, index, value)

    # --- properties and conversions -------------------------------------------------------
    # Devices and layouts ignis does not have: no tensor is ever on or in one.
    is_xpu = property(lambda self: False, doc="False: ignis has no XPU device")
    is_mps = property(lambda self: False, doc="False: ignis has no MPS device")
    is_sparse = property(lambda self: False, doc="False: ignis tensors are strided")
    is_quantized = property(lambda self: False, doc="False: ignis has no quantized dtypes")
    is_mkldnn = property(lambda self: False, doc="False: ignis has no MKL-DNN layout")
    is_nested = property(lambda self: False, doc="False: ignis has no nested tensors")
    is_xla = property(lambda self: False, doc="False: ignis has no XLA device")
    is_ipu = property(lambda self: False, doc="False: ignis has no IPU device")
    is_vulkan = property(lambda self: False, doc="False: ignis has no Vulkan device")
    is_mtia = property(lambda self: False, doc="False: ignis has no MTIA device")
    is_maia = property(lambda self: False, doc="False: ignis has no MAIA device")

    def to_dense(self, dtype=None, *, masked_grad=None):
        """self (or self in dtype): ignis tensors are already strided (dense)."""
        return self if dtype is None else self.to(dtype)

    def const_data_ptr(self):
        """The address of the first element, as data_ptr (read-only in torch's contract)."""
        return self.data_ptr()

    def dim_order(self, *, ambiguity_check=False):
        """The dims from outermost to innermost in memory: sorted by stride,
        largest first, ties in dim order (torch.Tensor.dim_order)."""
        if not isinstance(ambiguity_check, (bool, list)):
            raise TypeError("ambiguity_check must be bool or a list of memory formats")
        strides = self.stride()
        return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))

    def new(self, *args, device=None):
        """The legacy constructor: new() is empty of this dtype; new(*sizes)
        or new(Size) uninitialized of that shape; new(sequence) the data in
        this dtype; new(tensor) that tensor (its dtype must be this one)."""
        import ignis
        device = self.device if device is None else device
        if not args:
            return ignis.empty((0,), dtype=self.dtype, device=device)
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != self.dtype:
                raise TypeError(f"expected dtype {self.dtype} (got {args[0].dtype})")
            return args[0].detach()
        from ._size import Size
        if len(args) == 1 and isinstance(args[0], Size):
            return ignis.empty(tuple(args[0]), dtype=self.dtype, device=device)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return ignis.empty(args, dtype=self.dtype, device=device)
        if len(args) == 1:
            return ignis.tensor(args[0], dtype=self.dtype, device=device)
        raise TypeError(f"new() received an invalid combination of arguments: "
                        f"{tuple(type(a).__name__ for a in args)}")

    def nonzero_static(self, *, size, fill_value=-1):
        """ignis.nonzero_static(self, size=, fill_value=)."""
        from ._torch_extras import nonzero_static
        return nonzero_static(self, size=size, fill_value=fill_value)

    def apply_(self, callable):
        """Applies a Python function to every element, in place (CPU tensors only)."""
        if self.device.type != "cpu":
            raise TypeError("apply_ is only implemented on CPU tensors")
        flat = self.reshape(-1).tolist()
        values = [callable(v) for v in flat]
        import ignis
        return self.copy_(ignis.tensor(values, dtype=self.dtype).reshape(self.shape))

    def map_(self, tensor, callable):
        """self[i] = callable(self[i], tensor[i]), tensor broadcast to self (CPU only)."""
        if self.device.type != "cpu" or tensor.device.type != "cpu":
            raise TypeError("map_ is only implemented on CPU tensors")
        flat = self.reshape(-1).tolist()
        other = tensor.expand(self.shape).reshape(-1).tolist()
        values = [callable(a, b) for a, b in zip(flat, other)]
        import ignis
        return self.copy_(ignis.tensor(values, dtype=self.dtype).reshape(self.shape))

    @property
    def T(self):
        return self.permute(tuple(reversed(range(self.dim()))))

    @property
    def mT(self):
        if self.dim() < 2:
            _matrix_check(self, "mT")
            return self.view(())  # 0-D: itself, as torch's
        return self.transpose(-2, -1)

    @property
    def mH(self):
        if self.dim() < 2:
            _matrix_check(self, "mH")
            return self.view(())  # 0-D: itself, as torch's
        return self.transpose(-2, -1).conj()

    @property
    def H(self):
        if self.dim() == 0:
            import warnings
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                          stacklevel=2)
            return self.conj()
        if self.dim() != 2:
            hint = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.dim()}-D tensor.{hint}")
        return self.transpose(0, 1).conj()

    @property
    def data(self):
        return _C._make_subclass(Tensor, self)

    @data.setter
    def data(self, value):
        # torch's set_data: the storage, shape and dtype of `value`, this tensor's
        # autograd identity (a Parameter stays the module's, with its hooks)
        _C._set_data(self, value)

    def set_(self, source=None, storage_offset=0, size=None, stride=None):
        """torch's set_: this tensor takes `source`'s memory -- a tensor's (its
        storage, sizes and strides), or a storage's (from storage_offset, with
        size and stride) -- or none (an empty tensor), keeping its own
        identity (a Parameter stays its module's). An in-place change: it
        counts as a write for autograd's saved-tensor checks."""
        import ignis
        from ._storage import TypedStorage, UntypedStorage
        if ignis.is_grad_enabled() and self.requires_grad and self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if source is None:
            src = ignis.empty(0, dtype=self.dtype, device=self.device)
        elif isinstance(source, (UntypedStorage, TypedStorage)):
            untyped = source.untyped() if isinstance(source, TypedStorage) else source
            whole = untyped._elements(self.dtype)
            if size is None:
                size = (whole.numel() - storage_offset,)
            if stride is None:
                stride = ignis.empty(size).stride() if len(size) else ()
            src = whole.as_strided(size, stride, storage_offset)
        elif isinstance(source, _C.TensorBase):
            src = source if size is None else source.as_strided(
                size, stride if stride is not None else ignis.empty(size).stride(), storage_offset)
        else:
            raise TypeError(f"set_(): expected a Tensor or a storage as source, got "
                            f"{type(source).__name__}")
        if src.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {src.dtype} to a tensor of type "
                               f"{self.dtype}")
        if src.device != self.device:
            raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                               f"\"{self.device}\" to a storage on different device \"{src.device}\"")
        _C._set_data(self, src.detach())
        _C._bump_version(self)
        return self

    def size(self, dim=None):
        return _C.TensorBase.size(self, dim)

    def float(self): return self.to(_C.float32)
    def double(self): return self.to(_C.float64)
    def cfloat(self): return self.to(_C.complex64)
    def cdouble(self): return self.to(_C.complex128)
    def half(self): return self.to(_C.float16)
    def bfloat16(self): return self.to(_C.bfloat16)
    def long(self): return self.to(_C.int64)
    def int(self): return self.to(_C.int32)
    def short(self): return self.to(_C.int16)
    def char(self): return self.to(_C.int8)
    def byte(self): return self.to(_C.uint8)
    def bool(self): return self.to(_C.bool)
    def cpu(self): return self.to("cpu")
    def cuda(self, device=None, non_blocking=False):
        if isinstance(device, int):
            device = f"cuda:{device}"
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def pin_memory(self):
        """A copy in page-locked host memory (self when already pinned), so that copies
        to and from the GPU can be non_blocking."""
        return _C._cuda_pin_memory(self)

    def is_pinned(self):
        return _C._cuda_is_pinned(self)

    def record_stream(self, stream):
        """Marks this CUDA tensor's memory as used on `stream` too: when freed, it is not
        reused before the work queued there by then has finished."""
        _C._cuda_record_stream(self, stream.device_index, stream.cuda_stream)
    def type(self, dtype=None, non_blocking=False, **kwargs):
        from . import _legacy_types
        if dtype is None:
            return _legacy_types.type_name(self.dtype)
        if isinstance(dtype, str):  # "torch.FloatTensor", "ignis.LongTensor"
            name = dtype
            dtype = _legacy_types.dtype_of(name)
            if dtype is None:
                raise ValueError(f"invalid type: '{name}'")
        elif isinstance(dtype, _legacy_types.tensortype):  # ignis.FloatTensor
            dtype = dtype.dtype
        return self.to(dtype, non_blocking=non_blocking)

    def swapaxes_(self, axis0, axis1):
        return self.transpose_(axis0, axis1)

    swapdims_ = swapaxes_

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def get_device(self):
        """The CUDA device index, -1 on the CPU."""
        return self.device.index if self.device.type == "cuda" else -1

    def sum_to_size(self, *size):
        """The sum of self down to `size`, which must expand to self's shape (the
        dims it broadcasts are summed)."""
        size = list(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) \
            else list(size)
        shape = list(self.shape)
        lead = len(shape) - len(size)
        if lead < 0 or any(s != d and s != 1 for s, d in zip(size, shape[lead:])):
            raise RuntimeError(f"size {{{size}}} is not expandable to size {{{shape}}}.")
        r = self.sum(tuple(range(lead))) if lead else self
        dims = tuple(i for i, (s, d) in enumerate(zip(size, shape[lead:])) if s == 1 and d != 1)
        return r.sum(dims, keepdim=True) if dims else r

    def fill_diagonal_(self, fill_value, wrap=False):
        """Fills the main diagonal in place (torch.Tensor.fill_diagonal_): of a
        matrix, or of a tensor whose dims are all equal; wrap=True restarts it
        every cols + 1 rows of a tall matrix."""
        if self.dim() < 2:
            raise RuntimeError("dimensions must larger than 1")
        if self.dim() > 2 and len(set(self.shape)) != 1:
            raise RuntimeError("all dimensions of input must be of equal length")
        if self.dim() > 2:
            n = self.shape[0]
            self.as_strided((n,), (sum(self.stride()),), self.storage_offset()).fill_(fill_value)
            return self
        rows, cols = self.shape
        step = cols + 1 if wrap and rows > cols else max(rows, 1)
        for start in range(0, rows, step):
            self[start:start + cols].diagonal().fill_(fill_value)
        return self

    @property
    def layout(self):
        """ignis.strided: the one layout ignis stores."""
        from . import _C
        return _C.strided

    def numpy(self, *, force=False):
        # force=True: whatever it takes (a detached copy on the host), as torch's.
        if force:
            return np.asarray(self.detach().cpu())
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        # A tensor that requires grad is read too (torch refuses it): harmless, and
        # code written for torch never relies on the refusal.
        return np.asarray(self)

    # --- DLPack (ignis.utils.dlpack) ---------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .utils.dlpack import _export
        return _export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        from .utils.dlpack import _device
        return _device(self)

    def __array__(self, dtype=None, copy=None):
        a = np.asarray(_ArrayView(self))
        return a if dtype is None else a.astype(dtype)

    def tolist(self):
        if self.dtype is _C.bfloat16:
            return self.float().tolist()
        if self.dim() == 0:
            return self.item()
        return np.asarray(self.cpu()).tolist()  # numpy() refuses a tensor that requires grad

    # --- pickling and copying ---------------------------------------------------------
    # By value: elements, dtype, shape, requires_grad (DataLoader workers send
    # batches this way). ignis.save writes PyTorch's checkpoint format instead.
    def __reduce_ex__(self, proto):
        from ._tensor_bytes import reduce_tensor
        return reduce_tensor(self)

    def __deepcopy__(self, memo):
        """A copy sharing nothing with self. Tensors that share storage within
        one deepcopy (views of one base) share one copied storage, with the
        same offsets and strides, as in torch."""
        if id(self) in memo:
            return memo[id(self)]
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.")
        import copy
        result = _copy_storage(self, memo).as_strided(
            self.shape, self.stride(), self.storage_offset()).detach()
        if type(self) is not Tensor:
            result = _C._make_subclass(type(self), result)
        if self.requires_grad:
            result.requires_grad_(True)
        memo[id(self)] = result
        if getattr(self, "__dict__", None):
            result.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return result

    # The factories take requires_grad=, layout= and pin_memory= as torch's do.
    def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None,
                   pin_memory=False):
        from ._creation import tensor
        from . import _C
        if layout is not None and layout is not _C.strided:
            raise NotImplementedError(f"new_tensor(): layout={layout} is not supported: ignis "
                                      "stores strided tensors only")
        out = tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)
        return out.pin_memory() if pin_memory else out

    def new_zeros(self, *size, dtype=None, device=None, **factory_kwargs):
        from . import zeros
        return zeros(*size, dtype=dtype or self.dtype, device=device or self.device,
                     **factory_kwargs)

    def new_ones(self, *size, dtype=None, device=None, **factory_kwargs):
        from . import ones
        return ones(*size, dtype=dtype or self.dtype, device=device or self.device,
                    **factory_kwargs)

    def new_full(self, size, fill_value, dtype=None, device=None, **factory_kwargs):
        from . import full
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    **factory_kwargs)

    def new_empty(self, *size, dtype=None, device=None, **factory_kwargs):
        from . import empty
        return empty(*size, dtype=dtype or self.dtype, device=device or self.device,
                     **factory_kwargs)

def _copy_storage(t, memo):
    """A tensor owning a copy of all of t's storage (as elements of t's dtype),
    made once per storage and dtype in one deepcopy (`memo`)."""
    key = ("ignis.storage", t._storage_ptr(), t.dtype, t.device)
    if t.numel() == 0 or t._storage_ptr() == 0:
        key = None
    copied = memo.get(key) if key is not None else None
    if copied is None:
        n = t._storage_nbytes() // t.element_size()
        copied = t.detach().as_strided([n], [1], 0).clone()
        if key is not None:
            memo[key] = copied
            # deepcopy keeps the objects it memoizes alive through memo[id(memo)].
            memo.setdefault(id(memo), []).append(copied)
    return copied


def _matrix_check(t, what):
    """torch's transposes of the last two dims take 0-D tensors as they are and refuse 1-D ones."""
    if t.dim() == 1:
        raise RuntimeError(f"tensor.{what} is only supported on matrices or batches of matrices. "
                           f"Got 1-D tensor.")


class _ArrayView:
    """Holds the tensor alive while NumPy views its memory."""

    def __init__(self, t):
        self._t = t
        self.__array_interface__ = t.__array_interface__


def _comparable(other):
    import numbers
    return isinstance(other, (_C.TensorBase, numbers.Number, np.generic))


# Tensor methods of torch's top-level functions made of ops (ignis/_functions.py):
# x.median(dim) is ignis.median(x, dim).
_FUNCTION_METHODS = (
    "repeat_interleave", "argwhere", "diff", "nan_to_num", "logaddexp", "logaddexp2", "xlogy",
    "diag", "diag_embed", "diagflat", "trace", "kron", "cross", "tensor_split", "ravel", "rot90",
    "adjoint",
    "median", "nanmedian", "nanmean", "quantile", "nanquantile", "kthvalue", "bincount", "inner",
    "vdot", "dist", "addmv", "addr", "addbmm", "sinc", "logit", "deg2rad", "rad2deg", "heaviside",
    "fmax", "fmin", "float_power", "positive", "sgn", "msort", "aminmax", "hsplit", "vsplit",
    "dsplit", "cov", "corrcoef", "histc", "isreal", "renorm", "matrix_power", "narrow_copy",
    "resolve_conj", "resolve_neg", "select_scatter", "slice_scatter", "diagonal_scatter",
    "masked_scatter", "ldexp", "cummax", "cummin", "logcumsumexp", "det", "logdet", "slogdet",
    "inverse", "cholesky", "cholesky_solve", "cholesky_inverse", "svd", "qr", "pinverse",
    "triangular_solve", "matrix_exp", "lu_solve", "mvlgamma", "equal", "allclose", "isclose")


def _function_method(name):
    def method(self, *args, **kwargs):
        from . import _functions
        return getattr(_functions, name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


for _name in _FUNCTION_METHODS:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _function_method(_name))


def _overlaps(t):
    """Whether two indices of t reach one element (by its sizes and strides)."""
    dims = sorted((st, n) for n, st in zip(t.shape, t.stride()) if n > 1)
    reach = 0  # the largest offset the inner dims reach
    for st, n in dims:
        if st <= reach:
            return True
        reach += st * (n - 1)
    return False


def _unfold(self, dimension, size, step):
    """Every window of `size` elements along `dimension`, `step` apart, as a
    new last dim: a view of self's storage (torch's Tensor.unfold; overlapping
    windows share elements, and gradients add up over them, as_strided's)."""
    nd = self.dim()
    if not -max(nd, 1) <= dimension < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {dimension})")
    d = dimension % max(nd, 1)
    length = self.shape[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is "
                           f"{size}")
    if nd == 0:
        return self.as_strided([size], [1], self.storage_offset())
    if _overlaps(self):
        # as_strided's backward takes its input's own geometry: through a
        # view whose elements repeat (an unfold's windows), gradients would
        # add up twice. Such an input is unfolded from a copy.
        self = self.contiguous()
    sizes, strides = list(self.shape), list(self.stride())
    sizes[d] = (length - size) // step + 1
    strides[d] = strides[d] * step
    return self.as_strided(sizes + [size], strides + [self.stride(d)], self.storage_offset())


Tensor.unfold = _unfold


def _nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    from . import _functions
    return _functions.nan_to_num(self, nan, posinf, neginf, out=self)


Tensor.nan_to_num_ = _nan_to_num_


def _in_place(name):
    """self.<name>_(...): the function ignis.<name>'s result written into self
    (its shape must be self's, and its dtype castable to self's, as torch's
    in-place forms)."""
    def method(self, *args, **kwargs):
        import ignis
        r = getattr(ignis, name)(self, *args, **kwargs)
        if tuple(r.shape) != tuple(self.shape):
            raise RuntimeError(f"{name}_: the result's shape {list(r.shape)} does not match "
                               f"self's {list(self.shape)} (the other arguments must broadcast "
                               "to self)")
        if name == "float_power" and self.dtype != r.dtype:
            raise RuntimeError(f"the base given to float_power_ has dtype "
                               f"{_legacy_name(self.dtype)} but the operation's result requires "
                               f"dtype {_legacy_name(r.dtype)}")
        if not _C.can_cast(r.dtype, self.dtype):
            raise RuntimeError(f"result type {_legacy_name(r.dtype)} can't be cast to the "
                               f"desired output type {_legacy_name(self.dtype)}")
        return self.copy_(r)
    method.__name__ = method.__qualname__ = name + "_"
    return method


def _legacy_name(dtype):
    """torch's scalar-type name of a dtype in messages: Float, Long, ..."""
    from ._legacy_types import type_name
    return type_name(dtype)[len("ignis."):-len("Tensor")]


# In-place forms of functions made of ops (and of ops without an in-place op).
for _name in ("renorm", "masked_scatter", "ldexp", "addmm", "addbmm", "addmv", "addr", "baddbmm",
              "deg2rad", "rad2deg", "heaviside", "logit", "sinc", "sgn", "xlogy", "mvlgamma",
              "float_power", "igamma", "igammac"):
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _in_place(_name))


# Tensor methods of the functions in ignis/_more_functions.py and
# ignis/_nn_top_level.py: x.gcd(y) is ignis.gcd(x, y).
_MORE_FUNCTION_METHODS = {
    "_more_functions": (
        "angle", "conj", "conj_physical", "conj_physical_", "frexp", "gcd", "gcd_", "lcm", "lcm_",
        "histogram", "i0", "i0_", "index_reduce", "is_complex", "is_conj", "is_neg",
        "is_nonzero", "is_same_size", "is_signed", "mode", "nextafter", "put",
        "split_with_sizes", "unsafe_chunk", "unsafe_split", "igamma", "igammac", "orgqr"),
    "_nn_top_level": ("hardshrink",),
}


def _module_method(module_name, name, function_name=None):
    def method(self, *args, **kwargs):
        import importlib
        module = importlib.import_module("ignis." + module_name)
        return getattr(module, function_name or name)(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    return method


for _module_name, _names in _MORE_FUNCTION_METHODS.items():
    for _name in _names:
        if not hasattr(Tensor, _name):
            setattr(Tensor, _name, _module_method(_module_name, _name))
Tensor.put_ = _module_method("_more_functions", "put_", "_tensor_put_")
Tensor.index_reduce_ = _module_method("_more_functions", "index_reduce_", "_tensor_index_reduce_")


def _nextafter_(self, other):
    """Tensor.nextafter_: nextafter written into self."""
    from . import _more_functions
    return self.copy_(_more_functions.nextafter(self, other).expand_as(self))


Tensor.nextafter_ = _nextafter_


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                       layout=None, pin_memory=False):
    """Tensor.new_empty_strided: an uninitialized tensor of the given size
    and strides, with self's dtype and device unless given."""
    import ignis
    t = ignis.empty_strided(size, stride, dtype=dtype if dtype is not None else self.dtype,
                            device=device if device is not None else self.device)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _resize_as_(self, the_template, *, memory_format=None):
    """Tensor.resize_as_: self resized to the template's shape."""
    return self.resize_(the_template.shape)


Tensor.new_empty_strided = _new_empty_strided
Tensor.resize_as_ = _resize_as_


def _complex_part(name):
    def get(self):
        from . import _more_functions
        return getattr(_more_functions, name)(self)

    def set(self, value):  # x.real = v writes v into the real parts (torch)
        part = get(self)
        part.copy_(value) if isinstance(value, Tensor) else part.fill_(value)
    return property(get, set, doc=f"torch.{name}: a view of the {name} parts of a complex "
                                  "tensor; a real tensor is its own real part")


Tensor.real = _complex_part("real")
Tensor.imag = _complex_part("imag")

_C._set_tensor_class(Tensor)
