// Multi-tensor kernels: one launch updates many tensors, as torch's
// multi_tensor_apply does, for the fused optimizer steps (_fused_adam_,
// _fused_adamw_, _fused_sgd_) and the _foreach_ ops. The lists' tensors are cut into chunks of
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

// The formulas of the _foreach_ ops' kernel (the values are IgMTParams'
// `formula` in the kernel's switch), each a scalar_ops.h struct.
enum class ForeachFormula : int32_t {
  Add, Sub, Mul, Div, Maximum, Minimum, Lerp, Addcmul, Addcdiv,
  Sqrt, Neg, Abs, Exp, Log, Reciprocal, Sigmoid
};

// out[i] = formula(self[i], y, z) elementwise, for every i, in one launch per
// 40 tensors: y is b[i] (when b is not empty), else the 0-dim `operand`
// (a CUDA tensor of self's dtype, when defined), else scalars[i]; z is c[i]
// (when c is not empty), else scalars[i] (lerp's weight, addcmul's and
// addcdiv's value take scalars[i] as their number). alpha: add's and sub's.
// All tensors contiguous, on one CUDA device, each of self[i]'s shape and
// dtype (out may be self).
struct ForeachCall {
  ForeachFormula formula = ForeachFormula::Add;
  std::vector<Tensor> out, self, b, c;
  std::vector<double> scalars;
  Tensor operand;
  double alpha = 1;
};
void foreach_apply(const ForeachCall& a);

// The kernels for dtype `t`, for tests that compile them without a GPU.
std::vector<KernelRequest> multi_tensor_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
