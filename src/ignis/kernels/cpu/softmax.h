// Fused softmax / log_softmax along one dimension (CPU).
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

enum class SoftmaxKind : uint8_t {
  Softmax,
  LogSoftmax,
  // Softmax whose fully masked (all -inf) slices give 0 instead of NaN, as
  // attention needs.
  SafeSoftmax,
};

// out = softmax(in) along `dim` (already wrapped). `in` and `out` are
// contiguous, of the same shape and floating dtype. Each slice is read once
// from memory: a max pass, an exp-and-sum pass and a scaling pass, the
// latter two on cache-resident data; slices are split across threads.
void softmax_into(const Tensor& out, const Tensor& in, int64_t dim, SoftmaxKind kind);

}  // namespace ignis::cpu
