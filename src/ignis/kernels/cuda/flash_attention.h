// Flash attention on CUDA tensors: _scaled_dot_product_attention's forward
// and backward as fused kernels (FlashAttention-2's scheme) that never hold
// the L x S scores in global memory. float16 and bfloat16 run on the tensor
// cores (mma.sync m16n8k16, float accumulation; on compute capability 9.0
// the unmasked forward uses wgmma: flash_attention_sm90.h); the formulas
// and the saved row log-sum-exp are the CPU kernel's
// (kernels/cpu/attention.h).
// flash_attention.cpp's top comment explains the tiling, the online softmax
// and the backward's passes.
#pragma once

#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

// Largest head dim the kernels take (they are built for 64 and 128; smaller
// dims pad with zeros up to the next of those).
inline constexpr int64_t kFlashMaxHeadDim = 128;

// Why the flash kernels cannot run this call, or nullptr when they can:
// q [B..., L, E], k [B..., S, E], v [B..., S, E] of one 16-bit float dtype on
// a GPU of compute capability 8.0 or newer, an optional attn_mask, bool or
// of q's dtype (causal too), E == Ev <= kFlashMaxHeadDim, S > 0, at most 4
// batch dims (the mask's included). `check_device`
// off skips the GPU's capability (for the host emulation and fake tensors).
const char* flash_attention_unsupported(const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& mask, bool check_device = true);

// out [B..., L, E] (q's dtype, contiguous) and lse [B..., L] (float32,
// contiguous) from q, k, v already broadcast to the batch dims (any batch
// strides; rows with unit stride, as ops/attention.cpp's rows_as gives).
// `mask`, when defined, is [B..., L, S] with any strides (a broadcast view):
// bool (True takes part) or q's dtype (added to the scores).
void flash_attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                             double scale);

// dq, dk, dv (contiguous, q's dtype) from grad_out, q, k, v, out (broadcast
// to the batch, unit row strides) and lse (float32). dq is accumulated in a
// float32 workspace by atomic adds and rounded once at the end.
// `mask` as the forward's (its gradient is not computed here).
void flash_attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& grad_out, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& out, const Tensor& lse,
                              const Tensor& mask, bool causal, double scale);

// Every flash kernel (forward and backward, float16 and bfloat16, head dims
// 64 and 128, and the backward's row-dot kernel), for tests that compile
// them without a GPU.
std::vector<KernelRequest> flash_attention_kernel_requests();

}  // namespace ignis::cuda
