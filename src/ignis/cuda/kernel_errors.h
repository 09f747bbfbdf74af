// Errors a kernel finds in the data it reads (an index out of range),
// recorded for the host to raise at its next synchronization.
//
// Note [Index errors on the GPU]
// Checking index values on the host cost a synchronizing copy of the index
// per call (the embedding's, the cross-entropy's gather, the embedding
// backward's index_put: the GPU drains and the host waits each time), and a
// copy to the host cannot be captured in a CUDA graph, so a model with an
// embedding never ran under mode="reduce-overhead". So the index kernels
// (kernels/cuda/index_kernels.h, DeviceIndex) read CUDA indices on the
// device and check them there: a value out of range moves nothing, and the
// kernel writes what it found into a small record in pinned host memory
// mapped into the device's address space. The host reads that record after
// each synchronization -- ignis.cuda.synchronize, a stream's or an event's,
// so every copy to the host, .item(), printing -- and raises the error
// there, with the op's words (IndexError: index 50304 is out of bounds for
// dimension 0 with size 50304), saying it was found by a kernel launched
// earlier. torch reports a device-side assert the same way, at a later
// call, but its context is lost; here the process stays usable.
// IGNIS_CUDA_SYNC_INDEX_CHECKS=1 synchronizes after each checking launch, so
// the error is raised by the call itself (for debugging).
#pragma once

#include <cstdint>

namespace ignis::cuda {

// What a kernel found: which message, the value, the size it exceeds and
// the dim (must match IgKernelError in kernels/cuda/index_kernels.cpp).
enum class KernelErrorKind : int32_t {
  None = 0,
  IndexOutOfRangeInSelf = 1,  // index_select, embedding: "index out of range in self"
  IndexOutOfBounds = 2,       // IndexError: "index v is out of bounds for dimension d with size n"
  IndexOutOfBoundsRuntime = 3,  // the same words as a RuntimeError (gather, scatter, index_add_)
  TargetOutOfBounds = 4,        // cross_entropy's class index: IndexError "Target v is out of bounds."
};
struct KernelErrorRecord {
  volatile int32_t ready;  // the kernel's last write; the host clears it
  int32_t kind;
  int64_t value, bound, dim;
};

// The record `device`'s kernels write (mapped pinned memory, allocated on
// first use). A kernel given it may have found an error: the host checks at
// its next synchronization with the device. nullptr where the device cannot
// read mapped host memory at the host's address (no unified addressing, or
// the allocation failed): callers then check their indices on the host.
KernelErrorRecord* kernel_error_record(int device);

// Raises (and clears) the error a kernel recorded on `device`, if any;
// called after every synchronization. Costs a load when none was recorded.
void raise_kernel_errors(int device);

// After a checking launch on `device`: with IGNIS_CUDA_SYNC_INDEX_CHECKS=1,
// synchronizes the stream and raises what the launch found.
void check_after_launch(int device);

}  // namespace ignis::cuda
