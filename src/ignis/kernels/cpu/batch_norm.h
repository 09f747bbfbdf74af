// Batch normalisation on the CPU: statistics per channel over the batch and
// spatial positions of a contiguous [N, C, L] float32/float64 tensor, summed
// in double (torch's CPU accumulation type for float).
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

// Training: mean and biased variance of the batch normalise `in`; save_mean
// and save_invstd ([C]) get the mean and 1/sqrt(var + eps) used (in
// evaluation, the running ones); new_mean/new_var (when defined) get
// (1 - momentum) * running + momentum * batch statistic, the variance
// unbiased. Evaluation: the running statistics normalise `in`.
// weight, bias, running_mean, running_var: undefined or [C], in's dtype.
void batch_norm_into(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                     const Tensor& new_mean, const Tensor& new_var, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool training, double momentum, double eps);

// The gradients of batch_norm_into's out with respect to in, weight and
// bias (those defined), from save_mean/save_invstd when defined, else from
// the running statistics.
void batch_norm_backward_into(const Tensor& grad_in, const Tensor& grad_weight,
                              const Tensor& grad_bias, const Tensor& grad_out, const Tensor& in,
                              const Tensor& weight, const Tensor& running_mean,
                              const Tensor& running_var, const Tensor& save_mean,
                              const Tensor& save_invstd, bool training, double eps);

}  // namespace ignis::cpu
