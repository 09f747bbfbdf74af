// Discrete Fourier transforms on the CPU: the kernels of _fft_c2c, _fft_r2c and
// _fft_c2r (ops/fft.cpp), which ignis.fft's functions are written over, as
// torch's are over ATen's. Note [FFT kernels] in fft.cpp says how.
#pragma once

#include <cstdint>
#include <vector>

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// out (complex, in's sizes) = the transform of complex `in` over `dims`,
// forward (exp(-2 pi i jk/n)) or backward (exp(+2 pi i jk/n)), times scale.
void fft_c2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool forward,
             double scale);
// out (complex) = the forward transform of real `in` over `dims`, times scale;
// onesided: only the first n/2 + 1 entries of the last of dims (the rest are
// their conjugates' mirror).
void fft_r2c(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, bool onesided,
             double scale);
// out (real) = the backward transform over `dims` of the Hermitian signal
// whose first n/2 + 1 entries along the last of dims `in` holds (n: out's size
// there), times scale.
void fft_c2r(const Tensor& out, const Tensor& in, const std::vector<int64_t>& dims, double scale);

// The plan cache's state, summed over its kinds (complex and real, float and
// double): plans held, their tables' bytes, and lookups that found a plan or
// built one since the last clear. For tests.
struct FftPlanCacheStats {
  int64_t plans = 0, bytes = 0, hits = 0, misses = 0;
};
FftPlanCacheStats fft_plan_cache_stats();
void fft_plan_cache_clear();

}  // namespace ignis::cpu
