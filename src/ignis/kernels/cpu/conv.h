// Convolution on the CPU (1-, 2- and 3-D, grouped, strided, dilated, plain
// and transposed), through im2col and the project's GEMM.
//
// Both kinds of convolution are one geometry seen from two sides. The
// "image" is the tensor the kernel window slides over (the input of a
// convolution, the output of a transposed one); the "columns" side has one
// position per window (the output of a convolution, the input of a
// transposed one). The weight is always [col_channels, image_channels /
// groups, *kernel]. Three products cover forward and backward of both:
//   gather:  cols   = W @ im2col(image)       (conv forward, conv_T grad_input)
//   scatter: image  = col2im(W^T @ cols)      (conv grad_input, conv_T forward)
//   weight:  dW    += cols @ im2col(image)^T  (the weight gradient of both)
// A 1x1 window with stride 1 and no padding needs no im2col: the image is
// its own column matrix.
#pragma once

#include <array>
#include <vector>

#include "ignis/core/tensor.h"

namespace ignis::cpu {

struct ConvParams {
  std::vector<int64_t> stride, padding, dilation, output_padding;  // one per spatial dim
  bool transposed = false;
  int64_t groups = 1;
};

// The geometry padded to three spatial dims (leading dims of size 1), so one
// loop nest serves 1-, 2- and 3-D convolutions; the CUDA kernels
// (kernels/cuda/conv.h) take it too.
struct ConvGeom {
  int64_t batch = 0, groups = 1;
  int64_t img_ch = 0, col_ch = 0;  // per group
  std::array<int64_t, 3> img{1, 1, 1}, col{1, 1, 1}, k{1, 1, 1}, s{1, 1, 1}, p{0, 0, 0},
      d{1, 1, 1};
  int64_t img_len() const { return img[0] * img[1] * img[2]; }
  int64_t col_len() const { return col[0] * col[1] * col[2]; }
  int64_t k_len() const { return k[0] * k[1] * k[2]; }
  // The image is its own column matrix.
  bool identity() const {
    for (int i = 0; i < 3; ++i)
      if (k[i] != 1 || s[i] != 1 || p[i] != 0 || img[i] != col[i]) return false;
    return true;
  }
};

// The geometry of a convolution whose image side (the input of a
// convolution, the output of a transposed one) is `image` and whose columns
// side is `cols`.
ConvGeom conv_geom(const Tensor& image, const Tensor& cols, const Tensor& weight,
                   const ConvParams& p);

// out = convolution(input, weight) + bias: input, weight (and bias, when
// defined) contiguous float32/float64 of out's dtype; out contiguous with
// the size the meta rule computed.
void convolution_into(const Tensor& out, const Tensor& input, const Tensor& weight,
                      const Tensor& bias, const ConvParams& p);

// The gradients of convolution_into's input, weight and bias for the
// contiguous grad_out; an undefined output is not computed.
void convolution_backward_into(const Tensor& grad_input, const Tensor& grad_weight,
                               const Tensor& grad_bias, const Tensor& grad_out,
                               const Tensor& input, const Tensor& weight, const ConvParams& p);

}  // namespace ignis::cpu
