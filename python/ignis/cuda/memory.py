"""The CUDA caching allocator's counters and controls (torch.cuda's memory API).

Byte counts are of whole blocks (requests rounded up to 512 bytes), as in
PyTorch; ``requested_bytes`` counts what tensors asked for. With no GPU the
counters read 0 and empty_cache does nothing, as torch.cuda does before CUDA
is initialised.
"""
import collections

from .. import _C


def _device(device):
    from . import _index
    return _index(device)


def memory_stats(device=None):
    """The allocator's counters for a device, sorted by name (torch.cuda.memory_stats):
    ``allocated_bytes.all.{current,peak}``, ``requested_bytes.all.{current,peak}``,
    ``reserved_bytes.all.{current,peak}``, ``active.all.current`` (live blocks),
    ``segment.all.current`` (cuMemAlloc'ed segments), ``inactive_split_bytes.all.current``,
    ``num_device_alloc``, ``num_device_free``, ``num_alloc_retries``, ``num_ooms``,
    ``num_stream_migrations`` (free segments handed to another stream).
    """
    if not _C._cuda_is_available():
        return collections.OrderedDict()
    return collections.OrderedDict(sorted(_C._cuda_memory_stats(_device(device)).items()))


def _stat(name, device):
    return memory_stats(device).get(name, 0)


def memory_allocated(device=None):
    """Bytes of device memory held by tensors now."""
    return _stat("allocated_bytes.all.current", device)


def max_memory_allocated(device=None):
    """The peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return _stat("allocated_bytes.all.peak", device)


def memory_reserved(device=None):
    """Bytes taken from the device by the allocator: held by tensors plus cached."""
    return _stat("reserved_bytes.all.current", device)


def max_memory_reserved(device=None):
    return _stat("reserved_bytes.all.peak", device)


def reset_peak_memory_stats(device=None):
    """Restarts the peaks from the current values."""
    if _C._cuda_is_available():
        _C._cuda_reset_peak_memory_stats(_device(device))


def reset_max_memory_allocated(device=None):
    reset_peak_memory_stats(device)


def empty_cache():
    """Returns every wholly free cached segment to the device (and the pinned host cache)."""
    _C._cuda_empty_cache()


def memory_summary(device=None, abbreviated=False):
    """The counters as text, one per line."""
    stats = memory_stats(device)
    if not stats:
        return "CUDA is not available: " + _C._cuda_unavailable_reason()
    return "\n".join(f"{k:40s} {v}" for k, v in stats.items())
