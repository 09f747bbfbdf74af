// Constant fills of CUDA tensors (eager kernels).
#pragma once

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"

namespace ignis::cuda {

// Every element of `t` (a CUDA tensor of any layout) = v, converted to t's
// dtype as the CPU converts it.
void fill(const Tensor& t, const Scalar& v);

}  // namespace ignis::cuda
