// Device and pinned host memory for tensors: the per-device caching
// allocators behind allocate_storage for cuda, and the pinned host memory
// behind Tensor.pin_memory().
#pragma once

#include <cstddef>

#include "ignis/core/storage.h"
#include "ignis/cuda/caching_allocator.h"
#include "ignis/cuda/stream.h"

namespace ignis::cuda {

// Registers allocate_storage's CUDA allocator (core/storage.h). Called once
// when the ops are registered; allocating still fails with a clear error
// where CUDA is not available.
void install_allocator();

// The caching allocator of a device (created on first use).
CachingAllocator& device_allocator(int device);
// Storage of `nbytes` on `device`, allocated for its current stream.
Storage allocate_device_storage(size_t nbytes, Device device);
// Tensor.record_stream: storage `s` (cuda) is also used on `stream`.
void record_stream(const Storage& s, const Stream& stream);

// Page-locked host memory (cuMemHostAlloc), cached by power-of-two size:
// a CPU storage that DMA reads and writes directly, so copies from and to
// it can be asynchronous.
Storage allocate_pinned_storage(size_t nbytes);
bool is_pinned(const void* ptr);
// A copy on `stream` reads or writes the pinned block at `ptr`: the block is
// not reused until that work is done.
void record_pinned_use(const void* ptr, const Stream& stream);
void empty_pinned_cache();

}  // namespace ignis::cuda
