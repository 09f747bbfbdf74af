"""ignis.cpu: the CPU caching allocator's counters and controls (torch.cpu's
place; the memory functions are named after torch.cuda's).

CPU tensors of 1 MiB and more take their memory from a cache of freed blocks
(src/ignis/core/cpu_allocator.h), so that steady-state steps do not fault
fresh pages in. Environment, read when ignis first allocates:
IGNIS_CPU_ALLOCATOR=malloc turns the cache off (for sanitizers);
IGNIS_CPU_CACHE_LIMIT_MB=N bounds the cached bytes (default: 1/8 of RAM).
"""
import collections

from .. import _C
from . import amp  # noqa: E402,F401  (torch.cpu.amp: deprecated aliases)

__all__ = [
    "memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "empty_cache",
]


def memory_stats():
    """The allocator's counters, sorted by name, as torch.cuda.memory_stats:

    ``allocated_bytes.all.{current,peak}`` (blocks held by tensors),
    ``reserved_bytes.all.{current,peak}`` (allocated plus cached),
    ``cached_bytes.all.current``, ``cached_blocks.all.current``,
    ``num_cache_hits``, ``num_cache_misses`` (requests of 1 MiB and more),
    ``num_cache_evictions`` (freed blocks released to keep the limit),
    ``num_alloc_retries`` (failed allocations retried after emptying the cache),
    ``num_ooms``.
    """
    return collections.OrderedDict(sorted(_C._cpu_memory_stats().items()))


def memory_allocated():
    """Bytes of CPU memory held by tensors now (whole blocks)."""
    return _C._cpu_memory_stats()["allocated_bytes.all.current"]


def max_memory_allocated():
    """The peak of memory_allocated() since start or reset_peak_memory_stats()."""
    return _C._cpu_memory_stats()["allocated_bytes.all.peak"]


def memory_reserved():
    """Bytes taken from the system: held by tensors plus cached."""
    return _C._cpu_memory_stats()["reserved_bytes.all.current"]


def max_memory_reserved():
    """The peak of memory_reserved() since start or reset_peak_memory_stats()."""
    return _C._cpu_memory_stats()["reserved_bytes.all.peak"]


def reset_peak_memory_stats():
    """Restarts the peaks from the current values."""
    _C._cpu_reset_peak_memory_stats()


def empty_cache():
    """Returns every cached block to the system (blocks held by tensors stay)."""
    _C._cpu_empty_cache()
