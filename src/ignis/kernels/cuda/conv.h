// Convolution on a CUDA device (1-, 2- and 3-D, grouped, strided, dilated,
// plain and transposed), with kernels/cpu/conv.h's contract and geometry:
// im2col / col2im kernels and cuBLASLt's batched products (cuda/gemm.h).
//
// The batch runs in chunks whose column matrices stay within a fixed budget.
// A chunk's columns are laid out [groups, K, chunk x positions], so one
// product per chunk covers every group (batched over groups) and every
// sample (the samples are the product's columns); small pack/unpack
// kernels move the columns side between that layout and the tensor's
// [N, channels, positions] (adding the bias on the way out).
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/kernels/cpu/conv.h"

namespace ignis::cuda {

// cpu::convolution_into and cpu::convolution_backward_into on the GPU:
// contiguous float32/float64 tensors on one GPU.
void convolution_into(const Tensor& out, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const cpu::ConvParams& p);
void convolution_backward_into(const Tensor& grad_input, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out,
                               const Tensor& input, const Tensor& weight,
                               const cpu::ConvParams& p);

// The kernels above for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> conv_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
