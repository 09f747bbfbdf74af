"""DLPack: tensors shared with NumPy, torch, CuPy, JAX, ... without a copy (torch.utils.dlpack).

``ignis.from_dlpack(x)`` takes any object with ``__dlpack__``/``__dlpack_device__`` or a
raw capsule; ``Tensor.__dlpack__`` exports. CPU and CUDA memory are shared, never copied
(unless ``copy=True`` or a ``dl_device`` other than the tensor's asks for it). DLPack 1.0
(``DLManagedTensorVersioned``, asked for by ``max_version``) and the legacy capsule are both
produced and read. For CUDA the array API's stream handshake is kept both ways: the
consumer names the stream it will use, and the producer makes that stream wait (on an
event) for the work queued on its own current stream. The capsule's deleter keeps the
producer's memory alive for as long as any tensor shares it.
"""
import enum

from .. import _C

__all__ = ["DLDeviceType", "to_dlpack", "from_dlpack"]


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3


def _device(t):
    """Tensor.__dlpack_device__: (DLDeviceType, index)."""
    d = t.device
    if d.type == "cuda":
        return (DLDeviceType.kDLCUDA, d.index if d.index is not None else 0)
    if d.type == "cpu":
        return (DLDeviceType.kDLCPU, 0)
    raise BufferError(f"a {d.type} tensor has no memory to share through DLPack")


def _export(t, stream=None, max_version=None, dl_device=None, copy=None):
    """Tensor.__dlpack__ (the array API's signature)."""
    if t.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    here = tuple(int(v) for v in _device(t))
    if dl_device is not None and tuple(int(v) for v in dl_device) != here:
        if copy is False:
            raise BufferError(f"__dlpack__: exporting to device {tuple(dl_device)} needs a copy, "
                              "and copy=False")
        kind, index = int(dl_device[0]), int(dl_device[1])
        if kind in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
            t = t.cpu()
        elif kind == DLDeviceType.kDLCUDA:
            t = t.to(f"cuda:{index}")
        else:
            raise BufferError(f"__dlpack__: unsupported dl_device {tuple(dl_device)}")
        stream = -1 if t.device.type == "cpu" else stream  # the copy waited already
    elif copy:
        t = t.clone()
    if t.device.type == "cpu":
        stream = None
    elif stream is None:
        stream = 1  # the legacy default stream, as the array API says for None
    versioned = max_version is not None and int(max_version[0]) >= 1
    return _C._to_dlpack(t, versioned, stream)


def _consumer_stream(device_index):
    """The stream ignis will read a CUDA producer's data on, as the array API numbers it."""
    _, handle = _C._cuda_current_stream(device_index)
    return 1 if handle == 0 else handle


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with `ext_tensor`: an object with ``__dlpack__`` (a NumPy
    array, torch or CuPy tensor, ...) or a DLPack capsule (consumed: it can be read once).
    As torch's: ``copy=True`` asks for a copy, ``copy=False`` forbids one, and `device` moves
    the result there (a copy when it is not ext_tensor's device)."""
    if not hasattr(ext_tensor, "__dlpack__"):
        t = _C._from_dlpack_capsule(ext_tensor)
        t = t.clone() if copy else t
        return t if device is None else t.to(device)
    kind, index = ext_tensor.__dlpack_device__()
    target = None if device is None else _C.device(device) if isinstance(device, str) else device
    source = ("cuda", int(index)) if int(kind) == DLDeviceType.kDLCUDA else ("cpu", 0)
    moves = target is not None and (target.type, target.index or 0) != source
    if moves and copy is False:
        raise ValueError(f"cannot move DLPack tensor from device {(int(kind), int(index))} to "
                         f"{target} without copying. Set copy=None or copy=True.")
    kwargs = {"max_version": (1, 0)}
    if copy is not None and not moves:
        kwargs["copy"] = copy
    if int(kind) == DLDeviceType.kDLCUDA:
        kwargs["stream"] = _consumer_stream(int(index))
    # Producers older than DLPack 1.0 (or than the array API's copy) reject the new keywords.
    capsule = None
    for drop in ((), ("max_version",), ("max_version", "copy")):
        try:
            capsule = ext_tensor.__dlpack__(**{k: v for k, v in kwargs.items() if k not in drop})
            break
        except TypeError:
            if drop == ("max_version", "copy"):
                raise
    t = _C._from_dlpack_capsule(capsule)
    if copy and "copy" not in kwargs and not moves:
        t = t.clone()
    return t.to(target) if moves else t


def to_dlpack(tensor):
    """A legacy DLPack capsule ("dltensor") of `tensor` (torch.utils.dlpack.to_dlpack)."""
    return _export(tensor)
