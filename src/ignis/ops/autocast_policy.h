// The autocast policy of each op, per device type: how the autocast layer
// (autocast/autocast_kernel.h) treats the op's floating-point arguments
// inside `ignis.autocast(...)`.
//
// The policies are data, one table (autocast_policy.cpp) that mirrors the
// lists torch 2.x keeps for its AutocastCPU and AutocastCUDA keys, so that a
// reader can compare the two side by side. An op absent from the table runs
// as it is (its key falls through); a composite op that is absent is not
// cast itself, but the ops it calls are, as in torch.
#pragma once

#include <cstdint>
#include <vector>

namespace ignis {

enum class CastPolicy : uint8_t {
  None,             // not autocast on this device type
  LowerPrecisionFp, // floating arguments cast to the autocast dtype (matmuls, convolutions)
  Fp32,             // floating arguments cast to float32 (losses, exp/log, ...)
  Fp32SetOptDtype,  // run with dtype=float32 unless the caller gave a dtype (sum, softmax, ...)
  Promote,          // floating arguments cast to their widest type (cat, stack, addcmul, ...)
  Banned,           // raises: unsafe under autocast (binary_cross_entropy on CUDA)
};
const char* cast_policy_name(CastPolicy p);

// One op (a full name "pow.Tensor_Scalar", or a base name for all of its
// overloads) and its policy on each device type.
struct AutocastRule {
  const char* op;
  CastPolicy cpu;
  CastPolicy cuda;
};
const std::vector<AutocastRule>& autocast_rules();

}  // namespace ignis
