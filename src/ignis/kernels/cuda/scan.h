// Cumulative sums and products along one dim on a CUDA device (eager kernels).
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cuda {

// out = cumsum (cumprod) of in along dim, in converted to out's dtype first
// and accumulated as the CPU's scans (cpu::cumsum_out, cpu::cumprod_out: the
// same bits). out and in have the same shape, any strides; out may not
// overlap in.
void cumsum_out(const Tensor& out, const Tensor& in, int64_t dim);
void cumprod_out(const Tensor& out, const Tensor& in, int64_t dim);

}  // namespace ignis::cuda
