// The fused optimizer steps (_fused_adam_, _fused_adamw_, _fused_sgd_):
// what one step does to each element of a parameter and its state, applied
// to whole lists of tensors in one call. The CPU loops here and the CUDA
// multi-tensor kernel (kernels/cuda/multi_tensor.h) take the same
// arguments and compute the same thing in the same order, in op-math
// precision (float for float16/bfloat16 tensors, as the for-loop optimizer's
// ops do).
#pragma once

#include <vector>

#include "ignis/core/tensor.h"

namespace ignis {

// Adam or AdamW, as torch's fused kernels (Note [Fused Adam step] in the .cpp).
// lr is `lr`, unless `lr_tensor` is defined (one float32 element on the
// parameters' device). grad_scale and found_inf are the optional one-element
// float32 tensors of a gradient scaler: grads are divided by grad_scale (and
// stored back unscaled), and found_inf != 0 leaves everything unchanged.
struct AdamStep {
  double lr = 0, beta1 = 0, beta2 = 0, weight_decay = 0, eps = 0;
  bool amsgrad = false, maximize = false;
  bool decoupled = false;  // AdamW: weight decay scales the parameter
  Tensor lr_tensor, grad_scale, found_inf;
};

// The tensors one fused step updates: lists of equal length, each tensor
// contiguous, of its parameter's shape and dtype. max_exp_avg_sqs is empty
// unless amsgrad; steps are one-element float32 tensors, already incremented
// for this step (as torch's optimizers call the fused ops).
struct AdamLists {
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
};

struct SgdStep {
  double lr = 0, weight_decay = 0, momentum = 0, dampening = 0;
  bool nesterov = false, maximize = false;
  bool first_step = false;  // momentum buffers hold garbage: they become the gradient
  Tensor lr_tensor, grad_scale, found_inf;
};

// params, grads, and momentum buffers (empty when momentum == 0).
struct SgdLists {
  std::vector<Tensor> params, grads, momentum_buffers;
};

namespace cpu {
void fused_adam(const AdamLists& t, const AdamStep& h);
void fused_sgd(const SgdLists& t, const SgdStep& h);
}  // namespace cpu

}  // namespace ignis
