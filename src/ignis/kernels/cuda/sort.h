// Sorting along one dim on a CUDA device (eager kernels): sort, argsort and
// topk, with kernels/cpu/sort.h's contract and results.
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

// cpu::sort_out on the GPU: the first `k` elements of every slice of `in`
// along `dim` in order (descending when `descending`; NaN above every
// number; equal elements in their input order) and their positions, into
// `values` and `indices` (sized like `in` with `k` at `dim`, any strides).
// The order is a total one on (value, position), so both devices return the
// same elements in the same order, bit for bit. Slices of up to 2^31 - 1.
void sort_out(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim,
              int64_t k, bool descending);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> sort_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
