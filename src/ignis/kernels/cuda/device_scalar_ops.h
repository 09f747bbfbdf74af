// kernels/scalar_ops.h for NVRTC: the CPU's scalar functions, compiled into
// the CUDA kernels unchanged.
//
// The header's own text is built into the library (CMake turns it into a
// string) and follows a shim that gives it what it names from the standard
// library and vec_math.h, which NVRTC lacks: std's traits, numeric_limits and
// <cmath> overloads over the device math library, and vec_math.h's
// functions (cpu::vexp, ..., vpow) as the device's expf, ..., powf (one list
// in the .cpp). Kernels are compiled with -default-device so that the
// header's unannotated functions are device functions. One
// declaration of each formula therefore serves the CPU loops, the compiler's
// generated C++ and the GPU (Note [CUDA kernels derive from scalar_ops.h] in
// the .cpp).
#pragma once

#include <string>

namespace ignis::cuda {

// The shim followed by scalar_ops.h's text (its #include lines dropped).
const std::string& device_scalar_ops_source();

// The C++ struct of the scalar function named `fn` (scalar_ops::Exp for
// "exp"); raises for an unknown name.
const char* scalar_ops_struct(const std::string& fn);

}  // namespace ignis::cuda
