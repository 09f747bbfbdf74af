// Kernels that write values not computed from inputs: constant fills,
// ranges, identity matrices and random numbers (CPU).
#pragma once

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/kernels/cpu/random.h"

namespace ignis::cpu {

void fill(const Tensor& t, const Scalar& v);                  // any layout
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
