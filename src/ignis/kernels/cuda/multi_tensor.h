// Multi-tensor kernels: one launch updates many tensors, as torch's
// multi_tensor_apply does, for the fused optimizer steps (_fused_adam_,
// _fused_adamw_, _fused_sgd_). The lists' tensors are cut into chunks of
// kMultiTensorChunk elements; a launch carries up to kMultiTensorsPerLaunch
// tensors' pointers, sizes and step pointers in its kernel argument (so no
// host-to-device copy, which would wait for the stream), and its blocks walk
// the chunks of all of them. Takes what kernels/cpu/fused_optimizer.h takes.
#pragma once

#include <string>
#include <vector>

#include "ignis/cuda/kernel_cache.h"
#include "ignis/kernels/cpu/fused_optimizer.h"

namespace ignis::cuda {

inline constexpr int kMultiTensorsPerLaunch = 40;
inline constexpr int64_t kMultiTensorChunk = 65536;

// All tensors on one CUDA device; steps there too (float32).
void fused_adam(const AdamLists& t, const AdamStep& h);
void fused_sgd(const SgdLists& t, const SgdStep& h);

// The kernels for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> multi_tensor_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
