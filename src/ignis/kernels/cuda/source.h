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
// The type arithmetic on `t` runs in, as opmath_t says on the CPU ("float"
// for ig_half and ig_bf16).
const char* device_opmath_name(ScalarType t);

// Generated sources put this line between their shared text (prelude and
// templates) and the kernels they instantiate, so that a test can group
// kernels into one translation unit (kernel_catalog.h).
inline constexpr const char* kKernelBodyMarker = "\n// ---- kernels ----\n";

// The prelude itself: the start of every eager kernel's translation unit
// (pointwise.cpp, reduce.cpp and softmax.cpp add their templates after it).
const char* eager_prelude();

// A request for one kernel of a family whose templates follow the prelude:
// `extern "C" __global__ void <kernel>_<dtype>(<params> p) { ig_<kernel><T>(p); }`
// after eager_prelude() and `templates` (with __launch_bounds__ when
// `launch_bounds` > 0). The conv, pooling and batch-norm kernels are such.
KernelRequest family_kernel(const char* templates, const char* kernel, ScalarType t,
                            const char* params, int launch_bounds = 0);

// Raises the CPU's NotImplementedError unless t is float32 or float64 (the
// dtypes the nn kernels compute in; ops convert others before them).
void require_float_or_double(ScalarType t, const char* op);

// A request for `kernel<Types...>` from the prelude, named
// "<kernel>_<dtype>_..." (e.g. copy_strided_float32_float16).
KernelRequest eager_kernel(const std::string& kernel, std::initializer_list<ScalarType> types);

// The function of eager_kernel(kernel, types) on `device`, looked up by
// name after the first call (the source is not rebuilt and hashed per launch).
CUfunction eager_function(int device, const char* kernel, std::initializer_list<ScalarType> types);

}  // namespace ignis::cuda
