// Softmax, layer norm and cross-entropy on CUDA tensors: one kernel reads each row (the
// softmax dim, the normalized dims) with a warp when it is short and several
// warps of a block when it is long, several rows to a block, keeping the
// row (16-byte vectors) and its statistics in registers and reducing them by
// warp shuffles and shared memory (Note [Row kernels keep the row in
// registers] in row_kernels.cpp). The functions take what
// kernels/cpu/softmax.h and kernels/cpu/norm.h take.
#pragma once

#include <string>
#include <vector>

#include "ignis/core/tensor.h"
#include "ignis/cuda/kernel_cache.h"
#include "ignis/kernels/cpu/softmax.h"

namespace ignis::cuda {

// out = softmax / log_softmax / safe softmax of the contiguous `in` along
// `dim`; same shape and floating dtype. A softmax dim that is not the last
// (inner > 1) runs a thread per column instead, reading along it.
void softmax_into(const Tensor& out, const Tensor& in, int64_t dim, cpu::SoftmaxKind kind);

// grad_in = the derivative of softmax / log_softmax / safe softmax along the
// last dim, from its result `out` and the incoming gradient `grad_out`: all
// three contiguous, of one floating dtype and shape. softmax:
// out * (grad_out - sum(grad_out * out)); log_softmax:
// grad_out - exp(out) * sum(grad_out); computed in op-math, rounded once.
void softmax_backward_into(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out,
                           cpu::SoftmaxKind kind);

// As cpu::layer_norm_into: rows of n elements of the contiguous `in`;
// weight/bias contiguous, both in `in`'s dtype or both in the op-math
// dtype, or undefined; mean/rstd one per row, in `in`'s dtype or op-math.
void layer_norm_into(const Tensor& out, const Tensor& mean, const Tensor& rstd, const Tensor& in,
                     const Tensor& weight, const Tensor& bias, int64_t n, double eps);

// native_layer_norm_backward over M rows of N: grad_input (dtype of x) and,
// when defined, grad_weight and grad_bias (written through op-math
// temporaries). g, x contiguous in x's dtype; mean, rstd (both) and weight
// contiguous in x's dtype or the op-math dtype (weight may be undefined).
void layer_norm_backward(const Tensor& dx, const Tensor& dw, const Tensor& db, const Tensor& g,
                         const Tensor& x, const Tensor& mean, const Tensor& rstd,
                         const Tensor& weight, int64_t M, int64_t N);

// Cross-entropy with class indices (the fused CUDA kernel of cross_entropy):
// logits [N, C] or [C], contiguous; target [N] (or one element) int64 or
// uint8, contiguous; weight [C] in the op-math dtype or undefined.
struct CrossEntropyRows {
  Tensor logits, target, weight;
  int64_t ignore_index = -100;
  double label_smoothing = 0;
};
// One pass over each row (max, sum of exp, the picked logit and, with label
// smoothing, the weighted sum of logits, reduced as softmax's statistics
// are): loss [N] and picked_weight [N] (w[target], 0 where ignored) in the
// op-math dtype. With weights_only, only picked_weight is written (loss may
// be undefined) and the logits are not read.
void cross_entropy_rows(const Tensor& loss, const Tensor& picked_weight, const CrossEntropyRows& a,
                        bool weights_only = false);
// grad_logits (logits' shape and dtype) = the derivative of each row's loss
// times grad_loss: [N] (reduction 'none') or one element (sum and mean),
// divided by `total` (one element, the mean's summed weight) when defined.
// The row statistics are recomputed from the logits (Note [Cross-entropy
// backward recomputes its statistics] in ops/nn.cpp).
void cross_entropy_rows_backward(const Tensor& grad_logits, const Tensor& grad_loss,
                                 const Tensor& total, const CrossEntropyRows& a);

// The kernels above for dtype `t` (kernel names: the functions in
// row_kernels.cpp's kTemplates), for tests that compile them without a GPU.
std::vector<KernelRequest> row_kernel_requests(ScalarType t);

}  // namespace ignis::cuda
