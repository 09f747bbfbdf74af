// Fused loss kernels (CPU): each computes the per-element losses and their
// reduction in one pass, accumulating in double.
#pragma once

#include "ignis/core/tensor.h"

namespace ignis::cpu {

enum class Reduction : uint8_t { None, Mean, Sum };

// Class-index losses. input is contiguous [N, C, inner] (any float dtype),
// target contiguous [N, inner] of int64 or uint8 whose values (other than
// ignore_index) have been checked to lie in [0, C), weight undefined or
// contiguous [C] of input's dtype. With `logits`, log_softmax over C is
// applied first and label smoothing may be used (cross_entropy); without,
// input holds log-probabilities (nll_loss). out has target's shape for
// Reduction::None, else is 0-dim. Mean divides by the summed weight of the
// non-ignored targets, as PyTorch does.
void class_loss_into(const Tensor& out, const Tensor& input, const Tensor& target,
                     const Tensor& weight, Reduction red, int64_t ignore_index, bool logits,
                     double label_smoothing, int64_t N, int64_t C, int64_t inner);

// Cross entropy against class probabilities: target has input's shape and
// dtype. Mean divides by N * inner.
void prob_cross_entropy_into(const Tensor& out, const Tensor& input, const Tensor& target,
                             const Tensor& weight, Reduction red, double label_smoothing,
                             int64_t N, int64_t C, int64_t inner);

enum class PointLoss : uint8_t {
  MSE, L1, SmoothL1, Huber,
  BCE,            // binary_cross_entropy on probabilities (logs clamped at -100)
  BCEWithLogits,  // the same on logits, computed stably; optional pos_weight
  KLDiv,          // target * (log(target) - input), 0 where target is 0
  KLDivLogTarget, // exp(target) * (target - input)
};

// Elementwise losses of contiguous input/target (and optional weight and
// pos_weight) of one shape and float dtype. `param` is SmoothL1's beta or
// Huber's delta. The per-element loss is multiplied by the weight; Mean
// divides the sum by `mean_count`, or, when it is negative, by the weight
// sum over -mean_count (torch.nn.functional's weighted mse/l1 divide by the
// sum of the weight before broadcasting; -mean_count says how many times
// broadcasting repeats each weight).
void pointwise_loss_into(const Tensor& out, const Tensor& input, const Tensor& target,
                         const Tensor& weight, const Tensor& pos_weight, PointLoss kind,
                         double param, Reduction red, double mean_count);

}  // namespace ignis::cpu
