// Batch normalisation on a CUDA device (eager kernels), with
// kernels/cpu/batch_norm.h's contract: a block per channel sums over the
// batch and spatial positions in double, as the CPU does (the order of the
// sums differs: the results agree to rounding, not bit for bit).
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

// cpu::batch_norm_into and cpu::batch_norm_backward_into on the GPU: every
// tensor contiguous float32/float64 on one GPU.
void batch_norm_into(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                     const Tensor& new_mean, const Tensor& new_var, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool training, double momentum, double eps);
void batch_norm_backward_into(const Tensor& grad_in, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                              const Tensor& weight, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& save_mean,
                              const Tensor& save_invstd, bool training, double eps);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> batch_norm_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
