// The CUDA C++ of the eager kernels, as text for NVRTC (cuda/kernel_cache.h).
//
// One prelude holds what every kernel needs (fixed-width integers, float16
// and bfloat16 with the CPU's rounding, dtype conversions, strided
// geometry); each kernel is a template in it, and a request instantiates one
// template for one dtype combination under an extern "C" name. Small
// translation units keep NVRTC's first-use latency low, and only the
// combinations a program uses are ever compiled (docs/cuda.md has figures).
#pragma once

#include <string>

#include "ignis/core/dtype.h"
#include "ignis/cuda/kernel_cache.h"

namespace ignis::cuda {

// Most dims a strided kernel handles (more raise a RuntimeError).
inline constexpr int kMaxKernelDims = 16;

// The strided geometry passed by value to kernels; element strides. Must
// match `Geometry` in the prelude.
struct KernelGeometry {
  int64_t sizes[kMaxKernelDims];
  int64_t dst_strides[kMaxKernelDims];
  int64_t src_strides[kMaxKernelDims];
  int32_t ndim;
};

// The prelude's type name for `t` ("float", "ig_half", ...).
const char* device_type_name(ScalarType t);

// A request for `kernel<Types...>` from the prelude, named
// "<kernel>_<dtype>_..." (e.g. copy_strided_float32_float16).
KernelRequest eager_kernel(const std::string& kernel, std::initializer_list<ScalarType> types);

// The function of eager_kernel(kernel, types) on `device`, looked up by
// name after the first call (the source is not rebuilt and hashed per launch).
CUfunction eager_function(int device, const char* kernel, std::initializer_list<ScalarType> types);

}  // namespace ignis::cuda
