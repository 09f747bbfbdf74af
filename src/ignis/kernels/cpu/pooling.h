// 2-D pooling on the CPU: max (with the argmax indices), average and their
// adaptive forms, forward and backward, over contiguous [planes, H, W]
// float32/float64 tensors (planes = batch x channels).
//
// Every 2-D pooling window is a product of one run of rows and one run of
// columns, so each axis is described once (PoolAxis: for each output
// position, the input positions it reads and the size its average divides
// by) and one kernel serves fixed windows (kernel, stride, padding,
// dilation, ceil_mode) and adaptive ones.
#pragma once

#include <vector>

#include "ignis/core/tensor.h"

namespace ignis::cpu {

struct PoolAxis {
  int64_t in = 0;                         // input size along the axis
  std::vector<std::vector<int64_t>> taps;  // per output position: input positions read
  std::vector<int64_t> span;              // per output position: count_include_pad's size
  // A fixed window's parameters (kernel 0: adaptive): output o reads
  // o * stride - pad + k * dilation for k < kernel, those inside [0, in).
  int64_t kernel = 0, stride = 1, pad = 0, dilation = 1;
};

// A fixed window along one axis (the caller computed `out` and checked it).
PoolAxis fixed_axis(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t pad,
                    int64_t dilation);
// torch's adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)).
PoolAxis adaptive_axis(int64_t in, int64_t out);

// out = the window max; indices (int64) = its flat position h * W + w in
// the plane; NaN wins, as in torch.
void max_pool2d_into(const Tensor& out, const Tensor& indices, const Tensor& in,
                     const PoolAxis& h, const PoolAxis& w);
// grad_in = grad_out summed into the positions `indices` name.
void max_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out,
                              const Tensor& indices);
// out = sum over the window / divisor: divisor_override when > 0, else the
// window's size counting the padding (count_include_pad) or not.
void avg_pool2d_into(const Tensor& out, const Tensor& in, const PoolAxis& h, const PoolAxis& w,
                     bool count_include_pad, int64_t divisor_override);
void avg_pool2d_backward_into(const Tensor& grad_in, const Tensor& grad_out, const PoolAxis& h,
                              const PoolAxis& w, bool count_include_pad,
                              int64_t divisor_override);

}  // namespace ignis::cpu
