// Matrix products of CUDA tensors, through cuBLASLt (cuda/blas.h).
#pragma once

#include "ignis/core/scalar.h"
#include "ignis/core/tensor.h"
#include "ignis/cuda/blas.h"

namespace ignis::cuda {

// out[i] = beta * out[i] + alpha * (a[i] @ b[i]) (+ bias) for a [B, m, k],
// b [B, k, n] and a contiguous out [B, m, n] on one GPU, all float32,
// float64, float16 or bfloat16 (float accumulation; TF32 for float32 when
// allow_tf32() is set). As cpu::bmm_into: a and b may have any strides (a
// transposed matrix reaches cuBLASLt as a transpose flag, other layouts are
// copied contiguous), and beta == 0 only writes out. `bias`, when defined,
// is a 1-D tensor of n elements added to every row by cuBLASLt's BIAS
// epilogue, after alpha scales the product; it is only passed with beta ==
// 0 (out = alpha * a @ b + bias, as linear's addmm). Raises
// NotImplementedError for another dtype.
void bmm_into(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& beta,
              const Scalar& alpha, const Tensor& bias = Tensor());

// out = act(alpha * a @ b + bias) for [B, m, k] and [B, k, n] (bias as
// bmm_into's, or undefined), with the activation in cuBLASLt's epilogue,
// applied to the float result before it is rounded to out's dtype. Returns
// false, having written nothing, when cuBLASLt has no algorithm with that
// epilogue for these operands (the caller then runs the product and the
// activation apart); raises as bmm_into otherwise.
bool bmm_activation_into(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                         const Tensor& bias, GemmActivation activation);

// Whether bmm_into can take `bias` (a 1-D tensor meant to broadcast over
// the rows of the [m, n] result) through the epilogue: n elements of out's
// dtype, contiguous and 16-byte aligned.
bool bias_epilogue_applies(const Tensor& bias, const Tensor& out);

}  // namespace ignis::cuda
