// Every eager CUDA kernel of the pointwise ops, reductions, softmax, layer
// norm, cross-entropy, the multi-tensor optimizer steps, indexing and random
// numbers, as NVRTC translation units: for tests that compile them all
// without a GPU (tests/python/test_cuda_ops.py), so that a syntax or type
// error in generated source is caught where no GPU runs.
//
// The variants follow the declarations: every (scalar function, dtype) a
// pointwise op declares (cuda::declared_pointwise(), recorded as ops
// register), in each layout and with a CPU-scalar operand, each reduction
// over every dtype it accepts (cuda::reduce_variants()), the row kernels
// per floating dtype, the indexing and random-number kernels per dtype, and
// the flash-attention kernels (kernels/cuda/flash_attention.h).
// Kernels that share a prelude are grouped into one unit (each in its own
// namespace), so the test pays NVRTC's fixed cost per group rather than per
// kernel.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

struct KernelUnit {
  KernelRequest request;  // the whole unit; `symbol` names its first kernel
  int kernels = 0;        // how many extern "C" kernels it holds
};

std::vector<KernelUnit> eager_kernel_units();

// The same kernels one request each, as the ops ask for them, with the
// name of their unit: what cuda::precompile warms the disk cache with.
std::vector<std::pair<std::string, KernelRequest>> eager_kernel_variants();

}  // namespace ignis::cuda
