// Copies to, from and between CUDA devices (eager kernels).
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

// dst[...] = src[...], src broadcast to dst's shape and converted to dst's
// dtype, where dst or src (or both) is on a CUDA device. Contiguous data
// moves with one cuMemcpy*Async on the current stream of the CUDA side;
// other layouts are made contiguous first (on the GPU by the strided copy
// kernel, on the CPU by the CPU copy). Unless `non_blocking`, the call
// returns once the copy is done; with it, a copy between pinned host memory
// and the GPU is queued and the pinned block kept until it has run.
void copy(const Tensor& dst, const Tensor& src, bool non_blocking = false);

// Every variant of the row copy (Note [Row copies] in copy.cpp), for the
// NVRTC catalog.
std::vector<KernelRequest> row_copy_kernel_requests();

// Geometry for a strided kernel over dst's shape (src broadcast to it).
struct KernelGeometry;
KernelGeometry geometry_for(const Tensor& dst, const Tensor* src);

}  // namespace ignis::cuda
