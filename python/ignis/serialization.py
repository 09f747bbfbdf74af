"""ignis.save / ignis.load in PyTorch's checkpoint format, without torch.

The format (torch.save since 1.6) is a zip archive of uncompressed records
under one folder (`archive/` here; torch names it after the file):

  data.pkl        the object, pickled (protocol 2); each storage is a persistent
                  id ('storage', torch.<Dtype>Storage, key, location, numel)
  data/<key>      the storage's bytes, little-endian, 64-byte aligned in the file
  byteorder       'little'
  version         '3'

A tensor pickles as torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, OrderedDict()) and a Parameter as
torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict()). Saving
writes those torch names as pickle GLOBALs (a pure-Python pickler that emits
them verbatim, since torch is not imported); loading maps them to ignis
functions. Tensors that share a storage (views) share one record and load as
views of one ignis storage. With weights_only=True (the default, as in
torch >= 2.6) only tensors, Parameters, dtypes, Size, device, OrderedDict and
plain Python data are allowed.
"""
import collections
import io
import os
import pickle
import struct
import sys
import zipfile

import numpy as np

from . import _C
from ._tensor import Tensor
from ._tensor_bytes import dtype_name, from_bytes, to_bytes, _itemsize

__all__ = ["save", "load"]

_STORAGE_OF_DTYPE = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage",
}
_DTYPE_OF_STORAGE = {v: k for k, v in _STORAGE_OF_DTYPE.items()}
_DTYPE_OF_STORAGE["UntypedStorage"] = "uint8"
# torch.<name> dtype globals (torch.float is torch.float32 and pickles as such).
_TORCH_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64",
    "float16": "float16", "half": "float16", "bfloat16": "bfloat16", "int64": "int64",
    "long": "int64", "int32": "int32", "int": "int32", "int16": "int16", "short": "int16",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}
_ALIGNMENT = 64
_MAGIC_LEGACY = 0x1950a86a20f9469cfc6c  # the first pickle of the pre-1.6 format


# --- saving ----------------------------------------------------------------------------

class _TorchGlobal:
    """A name in torch's namespace, pickled as GLOBAL 'module name'."""
    _interned = {}

    def __new__(cls, module, name):
        key = (module, name)
        if key not in cls._interned:
            obj = super().__new__(cls)
            obj.module, obj.name = module, name
            cls._interned[key] = obj
        return cls._interned[key]

    def __call__(self, *args):  # pickle's save_reduce requires a callable
        raise TypeError(f"{self.module}.{self.name} is a name for torch.load, not callable")


class _StorageRef:
    """Stands in a tensor's storage in the pickle; becomes a persistent id."""

    def __init__(self, entry):
        self.entry = entry


class _StorageTable:
    """The storages an object's tensors use: one per (storage, dtype), with
    the number of elements that covers every saved view of it."""

    def __init__(self):
        self.entries = {}  # identity -> [key, dtype name, numel, a tensor on it]

    def entry(self, t):
        if t.device.type == "meta":
            raise RuntimeError("ignis.save: cannot save a meta tensor (it has no data)")
        ptr = t._storage_ptr()
        ident = (ptr, dtype_name(t.dtype))  # all empty storages (ptr 0) of a dtype: one record
        if t.numel() == 0:
            extent = 0
        else:
            span = sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
            extent = t.storage_offset() + span + 1
        e = self.entries.get(ident)
        if e is None:
            e = self.entries[ident] = [str(len(self.entries)), dtype_name(t.dtype), extent, t]
        elif extent > e[2]:
            e[2], e[3] = extent, t
        return e


class _Pickler(pickle._Pickler):
    """Pickles ignis objects under torch's names (protocol 2, as torch.save)."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, storages):
        super().__init__(file, protocol=2)
        self._storages = storages

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            key, dt, numel, t = obj.entry
            location = "cpu" if t.device.type == "cpu" else str(t.device)
            return ("storage", _TorchGlobal("torch", _STORAGE_OF_DTYPE[dt]), key, location, numel)
        return None

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (_TorchGlobal("torch._utils", "_rebuild_parameter"),
                    (obj.detach(), obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, Tensor):
            ref = _StorageRef(self._storages.entry(obj))
            return (_TorchGlobal("torch._utils", "_rebuild_tensor_v2"),
                    (ref, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()),
                     obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, _C.device):
            return (_TorchGlobal("torch", "device"), (str(obj),))
        if type(obj).__name__ == "Size" and type(obj).__module__ == "ignis._size":
            return (_TorchGlobal("torch", "Size"), (tuple(obj),))
        return NotImplemented

    def save_global(self, obj, name=None):
        if isinstance(obj, _TorchGlobal):
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
            self.memoize(obj)
            return
        if isinstance(obj, _C.dtype):
            return self.save_global(_TorchGlobal("torch", dtype_name(obj)))
        super().save_global(obj, name)

    dispatch[_TorchGlobal] = save_global
    dispatch[_C.dtype] = save_global


def _pickle(obj, storages):
    buf = io.BytesIO()
    _Pickler(buf, storages).dump(obj)
    return buf.getvalue()


def _aligned_extra(offset, name, size):
    """A zip extra field that puts the record's data on a 64-byte boundary."""
    header = offset + 30 + len(name.encode()) + (20 if size > zipfile.ZIP64_LIMIT else 0)
    if header % _ALIGNMENT == 0:
        return b""
    pad = (-(header + 4)) % _ALIGNMENT
    return struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # 'FB', as torch pads


def _write_archive(f, records):
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, data in records:
            name = "archive/" + name
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            size = len(data)
            info.extra = _aligned_extra(z.fp.tell(), name, size)
            z.writestr(info, data)


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves `obj` (tensors, state_dicts, containers of them, ...) to `f` (a
    path or a binary file-like object) in PyTorch's format: torch.load reads it."""
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("ignis.save writes only the zip format "
                                  "(_use_new_zipfile_serialization=True)")
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("ignis.save: only the standard pickle module is supported")
    # Pass 1 sizes every storage from all of its views; pass 2 writes the pickle.
    storages = _StorageTable()
    _pickle(obj, storages)
    data_pkl = _pickle(obj, storages)
    records = [("data.pkl", data_pkl)]
    if not _disable_byteorder_record:
        records.append(("byteorder", sys.byteorder.encode()))
    for key, dt, numel, t in storages.entries.values():
        if numel:
            flat = t.detach().as_strided((numel,), (1,), 0)
            records.append((f"data/{key}", memoryview(to_bytes(flat))))
        else:
            records.append((f"data/{key}", b""))
    records += [("version", b"3\n"), (".format_version", b"1"),
                (".storage_alignment", str(_ALIGNMENT).encode())]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            _write_archive(fh, records)
    else:
        _write_archive(f, records)


# --- loading ---------------------------------------------------------------------------

class _StorageType:
    """What torch.<Dtype>Storage names in a checkpoint: the storage's dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


class _LoadedStorage:
    """A storage read from a checkpoint: a 1-d tensor of its elements. This is
    what a map_location function receives (and must return): it has cpu(),
    to(device), device and dtype like a torch storage."""

    def __init__(self, data):
        self._data = data

    @property
    def device(self):
        return self._data.device

    @property
    def dtype(self):
        return self._data.dtype

    def size(self):
        return self._data.numel()

    def nbytes(self):
        return self._data.numel() * self._data.element_size()

    def to(self, device):
        return _LoadedStorage(self._data.to(device))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def _view(self, offset, size, stride):
        if any(s == 0 for s in size):
            from . import empty_strided
            return empty_strided(tuple(size), tuple(stride), dtype=self._data.dtype,
                                 device=self._data.device)
        return self._data.as_strided(tuple(size), tuple(stride), offset)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    t = storage._view(storage_offset, size, stride)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return storage._view(storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter
    return Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _rebuild_parameter(data, requires_grad)
    _set_state(p, state)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if isinstance(new_type, type) and issubclass(new_type, Tensor) and type(ret) is not new_type:
        from .nn.parameter import Parameter
        if issubclass(new_type, Parameter):
            ret = new_type(ret, ret.requires_grad)
        else:
            ret = _C._make_subclass(new_type, ret)
    _set_state(ret, state)
    return ret


def _set_state(obj, state):
    if not state:
        return
    if isinstance(state, tuple):  # (dict state, slots state)
        state = {k: v for s in state if s for k, v in s.items()}
    for k, v in state.items():
        setattr(obj, k, v)


def _weights_only_globals():
    """(module, name) -> object: what a weights_only load may reference."""
    from . import _size
    from .nn.parameter import Parameter
    import _codecs
    g = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch.nn.parameter", "Parameter"): Parameter,
        ("torch", "Tensor"): Tensor,
        ("torch", "Size"): _size.Size,
        ("torch", "device"): _C.device,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("_codecs", "encode"): _codecs.encode,  # bytes, in protocol 2
    }
    # Protocol 2 writes builtins under their Python 2 module name.
    for b in (set, frozenset, bytearray, complex, slice, range):
        g[("builtins", b.__name__)] = g[("__builtin__", b.__name__)] = b
    g[("__builtin__", "xrange")] = range
    for name, dt in _TORCH_DTYPES.items():
        g[("torch", name)] = getattr(_C, dt)
    for name, dt in _DTYPE_OF_STORAGE.items():
        g[("torch", name)] = _StorageType(getattr(_C, dt))
    return g


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, load_storage, weights_only, **kwargs):
        super().__init__(file, **kwargs)
        self._load_storage = load_storage
        self._weights_only = weights_only
        self._globals = _weights_only_globals()

    def find_class(self, module, name):
        obj = self._globals.get((module, name))
        if obj is not None:
            return obj
        if self._weights_only:
            raise pickle.UnpicklingError(
                f"Weights only load failed: unsupported global GLOBAL {module}.{name}. "
                "weights_only=True allows only tensors, Parameters, dtypes, Size, device, "
                "OrderedDict and plain Python data; pass weights_only=False to load it "
                "(only if you trust the checkpoint: unpickling can run arbitrary code).")
        if module == "torch" or module.startswith("torch."):
            ignis_module = "ignis" + module[len("torch"):]
            try:
                return super().find_class(ignis_module, name)
            except (ImportError, AttributeError):
                raise pickle.UnpicklingError(
                    f"ignis.load: the checkpoint references {module}.{name}, which ignis does "
                    f"not have (looked for {ignis_module}.{name})") from None
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage" or len(pid) != 5:
            raise pickle.UnpicklingError(f"ignis.load: unknown persistent id {pid!r} (expected "
                                         "('storage', type, key, location, numel))")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"ignis.load: unsupported storage type {storage_type!r}")
        return self._load_storage(storage_type.dtype, str(key), location, int(numel))


def _restore_location(storage, location, map_location):
    """Puts a CPU-read storage where map_location says (torch's rules)."""
    if map_location is None:
        target = location
    elif isinstance(map_location, (str, _C.device)):
        target = str(map_location)
    elif isinstance(map_location, dict):
        target = str(map_location.get(location, location))
    elif callable(map_location):
        result = map_location(storage, location)
        if result is None:
            return _restore_location(storage, location, None)
        if not isinstance(result, _LoadedStorage):
            raise TypeError("ignis.load: a map_location function must return the storage it "
                            f"was given (or storage.to(device)), got {type(result).__name__}")
        return result
    else:
        raise TypeError(f"ignis.load: map_location should be None, a string, a device, a dict or "
                        f"a function, not {type(map_location).__name__}")
    if target == "cpu":
        return storage
    try:
        return storage.to(target)
    except RuntimeError as e:
        raise RuntimeError(f"ignis.load: a storage was saved on '{location}' and cannot be "
                           f"restored to '{target}' ({e}); pass map_location='cpu'") from None


def _open_archive(f, name):
    """The zip archive of a checkpoint, with clear errors for what is not one."""
    head = f.read(4)
    f.seek(-len(head), io.SEEK_CUR)
    if head[:2] != b"PK":
        if head[:1] == b"\x80":
            try:
                magic = pickle.load(f)
            except Exception:
                magic = None
            if magic == _MAGIC_LEGACY:
                raise RuntimeError(f"ignis.load: {name} is in PyTorch's legacy (pre-1.6) format, "
                                   "which ignis does not read; re-save it with a recent "
                                   "torch.save")
        raise RuntimeError(f"ignis.load: {name} is not a PyTorch checkpoint (expected a zip "
                           "archive as written by torch.save or ignis.save)")
    try:
        return zipfile.ZipFile(f)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise RuntimeError(f"ignis.load: {name} is not a valid checkpoint: the zip archive is "
                           f"truncated or corrupt ({e})") from None


def _load(z, name, map_location, weights_only, pickle_load_args):
    names = z.namelist()
    if not names:
        raise RuntimeError(f"ignis.load: {name} is an empty zip archive, not a checkpoint")
    prefix = names[0].split("/", 1)[0] + "/" if "/" in names[0] else ""
    if prefix + "data.pkl" not in names:
        raise RuntimeError(f"ignis.load: {name} is a zip archive without {prefix}data.pkl: "
                           "not a PyTorch checkpoint")
    big_endian = (prefix + "byteorder" in names
                  and z.read(prefix + "byteorder").strip() == b"big")
    loaded = {}

    def read(path):
        try:
            return z.read(path)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
            raise RuntimeError(f"ignis.load: {name}: cannot read {path}; the archive is "
                               f"truncated or corrupt ({e})") from None

    def load_storage(dtype, key, location, numel):
        if key not in loaded:
            path = f"{prefix}data/{key}"
            if path not in names:
                raise RuntimeError(f"ignis.load: {name} has no record {path}")
            data = read(path)
            isz = _itemsize(dtype)
            if len(data) < numel * isz:
                raise RuntimeError(f"ignis.load: {path} holds {len(data)} bytes, expected "
                                   f"{numel * isz}")
            arr = np.frombuffer(data, np.uint8, count=numel * isz)
            if big_endian and isz > 1:
                arr = arr.view(f">u{isz}").astype(f"<u{isz}").view(np.uint8)
            storage = _LoadedStorage(from_bytes(arr, dtype, (numel,)))
            loaded[key] = _restore_location(storage, location, map_location)
        return loaded[key]

    unpickler = _Unpickler(io.BytesIO(read(prefix + "data.pkl")), load_storage, weights_only,
                           **pickle_load_args)
    try:
        return unpickler.load()
    except pickle.UnpicklingError:
        raise
    except (EOFError, ValueError, struct.error) as e:
        raise RuntimeError(f"ignis.load: {name}: {prefix}data.pkl is corrupt ({e})") from None


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Loads an object saved by ignis.save or torch.save from `f` (a path or a
    binary file-like object). map_location: 'cpu', a device, a dict from
    saved location to location, or a function (storage, location) -> storage.
    weights_only (default True) refuses anything but tensors and plain data."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("ignis.load: only the standard pickle module is supported")
    if weights_only is None:
        weights_only = True
    pickle_load_args.setdefault("encoding", "utf-8")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return _load_file(fh, os.fspath(f), map_location, weights_only, pickle_load_args)
    name = getattr(f, "name", None) or type(f).__name__
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _load_file(f, str(name), map_location, weights_only, pickle_load_args)


def _load_file(fh, name, map_location, weights_only, pickle_load_args):
    with _open_archive(fh, name) as z:
        return _load(z, name, map_location, weights_only, pickle_load_args)
