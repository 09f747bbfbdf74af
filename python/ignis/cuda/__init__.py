"""ignis.cuda: NVIDIA GPUs, with torch.cuda's names.

The driver (libcuda.so.1) and NVRTC are loaded when first needed, so this
module imports everywhere; on a machine with no GPU or driver,
``is_available()`` is False and every call that needs a GPU raises a
RuntimeError saying why. Devices, the current device (per thread), streams and
events follow torch.cuda; memory comes from a caching, stream-ordered
allocator (``memory_stats``; see docs/cuda.md).
"""
import atexit as _atexit
import glob as _glob
import os as _os
import sys as _sys

from .. import _C
from .streams import Stream, Event, stream, current_stream, default_stream, set_stream
from .memory import (
    memory_stats, memory_allocated, max_memory_allocated, memory_reserved,
    max_memory_reserved, reset_peak_memory_stats, reset_max_memory_allocated, empty_cache,
    memory_summary,
)
from . import amp  # noqa: F401  (torch.cuda.amp: deprecated aliases)
from .random import (
    manual_seed, manual_seed_all, seed, seed_all, initial_seed,
)
from .graphs import (
    CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables,
)

OutOfMemoryError = _C.OutOfMemoryError


def _find_nvrtc_wheel():
    """Points the NVRTC loader (src/ignis/cuda/nvrtc.h) at the nvidia-cuda-nvrtc wheel
    when no toolkit provides libnvrtc (pip-installed CUDA, as torch's wheels bring)."""
    if "IGNIS_NVRTC_LIBRARY" in _os.environ:
        return
    for root in (_os.environ.get("CUDA_HOME"), _os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and _glob.glob(_os.path.join(root, "lib64", "libnvrtc.so*")):
            return
    for p in _sys.path:
        hits = sorted(_glob.glob(_os.path.join(p or ".", "nvidia", "*", "lib", "libnvrtc.so.*")))
        hits = [h for h in hits if "builtins" not in h and "alt" not in _os.path.basename(h)]
        if hits:
            _os.environ["IGNIS_NVRTC_LIBRARY"] = hits[-1]
            return


def _find_cublaslt_wheel():
    """Points the cuBLASLt loader (src/ignis/cuda/cublaslt.h) at a pip nvidia-cublas wheel
    (nvidia/cu13/lib or nvidia/cublas/lib, as torch's CUDA wheels bring) when no toolkit
    has libcublasLt."""
    if "IGNIS_CUBLASLT_LIBRARY" in _os.environ:
        return
    for root in (_os.environ.get("CUDA_HOME"), _os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and _glob.glob(_os.path.join(root, "lib64", "libcublasLt.so*")):
            return
    for p in _sys.path:
        hits = sorted(_glob.glob(_os.path.join(p or ".", "nvidia", "*", "lib", "libcublasLt.so.*")))
        if hits:
            _os.environ["IGNIS_CUBLASLT_LIBRARY"] = hits[-1]
            return


_find_nvrtc_wheel()
_find_cublaslt_wheel()
# A device's first context starts a thread that warms cuBLASLt up (Note
# [cuBLASLt warmed in the background], src/ignis/cuda/blas.cpp); it is joined
# here, before the interpreter and the C++ statics are torn down.
_atexit.register(_C._cuda_gemm_prewarm_join)

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of",
    "synchronize", "get_device_name", "get_device_capability", "get_device_properties",
    "Stream", "Event", "stream", "current_stream", "default_stream", "set_stream",
    "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "reset_max_memory_allocated",
    "empty_cache", "memory_summary", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "initial_seed", "is_initialized", "init", "OutOfMemoryError", "is_bf16_supported", "amp",
    "CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing",
    "make_graphed_callables",
]


def is_available():
    """True when a CUDA driver is loaded and sees at least one GPU. Never raises."""
    return _C._cuda_is_available()


def device_count():
    """The number of GPUs (0 when there is no driver or GPU)."""
    return _C._cuda_device_count()


def is_initialized():
    return is_available()


def init():
    """Raises a RuntimeError saying why when CUDA cannot be used."""
    _require()


def _require():
    if not _C._cuda_is_available():
        raise RuntimeError(_C._cuda_unavailable_reason())


def _index(device=None, optional=True):
    """The device index of a cuda device, "cuda:N", int or None (the current one)."""
    if device is None:
        _require()
        return _C._cuda_current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    if isinstance(device, _C.device):
        if device.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {device}")
        if device.index is None:
            _require()
            return _C._cuda_current_device()
        return device.index
    raise TypeError(f"Expected a cuda device, got {type(device).__name__}")


def current_device():
    """The index of this thread's current device."""
    _require()
    return _C._cuda_current_device()


def set_device(device):
    """Makes `device` this thread's current device."""
    _C._cuda_set_device(_index(device))


class device:
    """Context manager that makes a device current and restores the previous one."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = _C._cuda_current_device()
            if self.prev_idx != self.idx:
                _C._cuda_set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev_idx != self.idx:
            _C._cuda_set_device(self.prev_idx)
        return False


class device_of(device):
    """device(tensor.device) for a cuda tensor; does nothing for a CPU tensor."""

    def __init__(self, obj):
        super().__init__(obj.device.index if obj.is_cuda else None)


def synchronize(device=None):
    """Waits for all work queued on the device."""
    _C._cuda_synchronize(_index(device))


class _CudaDeviceProperties:
    __slots__ = ("name", "total_memory", "multi_processor_count", "major", "minor")

    def __init__(self, name, total_memory, multi_processor_count, major, minor):
        self.name = name
        self.total_memory = total_memory
        self.multi_processor_count = multi_processor_count
        self.major = major
        self.minor = minor

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None):
    return _CudaDeviceProperties(*_C._cuda_device_properties(_index(device)))


def get_device_name(device=None):
    return get_device_properties(device).name


def get_device_capability(device=None):
    p = get_device_properties(device)
    return (p.major, p.minor)


def is_bf16_supported(including_emulation=True):
    """True when the current GPU computes in bfloat16 (compute capability 8.0
    and later: ignis's kernels and cuBLASLt need it natively)."""
    return is_available() and get_device_capability() >= (8, 0)
