// Fused normalisation kernels (CPU): layer_norm, rms_norm, and the p-norm
// scaling of F.normalize.
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// Over each of the rows of length n of the contiguous `in`:
//   out = (x - mean) * rstd * weight + bias,  rstd = 1 / sqrt(var + eps)
// (biased variance), storing mean and rstd per row (contiguous, `in`'s
// dtype). weight/bias are undefined or contiguous with n elements of the
// op-math type of `in` (float for 16-bit inputs). Statistics accumulate in
// the op-math type, in two passes over the cache-resident row.
void layer_norm_into(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, int64_t n, double eps);

// out = x / sqrt(mean(x^2) + eps) * weight over rows of length n.
void rms_norm_into(const Tensor& out, const Tensor& in, const Tensor& weight, int64_t n,
                   double eps);

// out = x / max(||x||_p, eps) along `dim` of the contiguous `in`.
void normalize_into(const Tensor& out, const Tensor& in, double p, int64_t dim, double eps);

// out = sum(a * b) / (max(||a||, eps) * max(||b||, eps)) along `dim` of the
// contiguous a and b (one shape and dtype); out has that shape without dim.
void cosine_similarity_into(const Tensor& out, const Tensor& a, const Tensor& b, int64_t dim,
                            double eps);

}  // namespace ignis::cpu
