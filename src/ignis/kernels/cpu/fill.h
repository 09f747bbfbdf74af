// Kernels that write values not computed from inputs: constant fills,
// ranges, identity matrices and random numbers (CPU).
#pragma once

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/random.h"

namespace ignis::cpu {

void fill(const Tensor& t, const Scalar& v);                  // any layout
// PyTorch's checked conversion of a Python number stored into a tensor of
// dtype t (fill_, full, masked_fill): RuntimeError when it overflows t.
void check_scalar_fits(const Scalar& v, ScalarType t);
// The dtype kernels compute a dtype in (float for float16 and bfloat16): a
// scalar operand (alpha, value) must fit this one.
inline ScalarType opmath_type(ScalarType t) {
  return t == ScalarType::Float16 || t == ScalarType::BFloat16 ? ScalarType::Float32 : t;
}
void fill_affine(const Tensor& t, double start, double step);  // 1-D contiguous
void fill_affine_int(const Tensor& t, int64_t start, int64_t step);
void fill_linspace(const Tensor& t, double start, double end);
void fill_eye(const Tensor& t);                                 // 2-D contiguous
// Random fills: element i depends only on (seed, offset + i). Any layout.
void fill_uniform(const Tensor& t, double from, double to, Generator& g);
void fill_normal(const Tensor& t, double mean, double std, Generator& g);
void fill_randint(const Tensor& t, int64_t low, int64_t high, Generator& g);
void fill_bernoulli(const Tensor& t, double p, Generator& g);

}  // namespace ignis::cpu
